/*
 * fuzz_kubeconfig.c - kubeconfig text → rc_kubeconfig, and base64 decoding: never a crash
 * or a leak; every failure comes with a message.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rc_kubeconfig.h"
#include "rc_mem.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct rc_kubeconfig *kc = NULL;
    struct rc_err err = RC_ERR_INIT;
    char *text = rc_xstrndup((const char *)data, size);
    char *dec = NULL;
    size_t len = 0;

    if (rc_kubeconfig_parse(&kc, "/fuzz/config", (const char *)data, size, NULL, NULL, &err) ==
        RC_OK)
        rc_kubeconfig_free(kc);
    else if (err.msg[0] == '\0')
        abort();
    if (rc_base64_decode(&dec, &len, text, &err) == RC_OK && len > size)
        abort();
    free(dec);
    free(text);
    return 0;
}
