/*
 * fuzz_esc.c - rc_esc on any bytes: the output holds no control character, no C1 control and
 * only valid UTF-8; escaping it again changes nothing; rc_buf_add_esc gives the same text;
 * truncation never overruns the buffer.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rc_buf.h"
#include "rc_err.h"
#include "rc_esc.h"
#include "rc_mem.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *in = rc_xmalloc(size + 1);
    size_t cap = 4 * size + 1, n;
    char *out = rc_xmalloc(cap), *again = rc_xmalloc(cap), small[7];
    struct rc_buf b = RC_BUF_INIT;
    struct rc_err err = RC_ERR_INIT;

    memcpy(in, data, size);
    in[size] = '\0';
    n = rc_esc(out, cap, in);
    if (n != strlen(out) || rc_esc_needed(out))
        abort();
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)out[i];
        if (c < 0x20 || c == 0x7f || (c == 0xc2 && i + 1 < n && (unsigned char)out[i + 1] < 0xa0))
            abort();
    }
    rc_esc(again, cap, out);
    if (strcmp(again, out))
        abort();
    if (rc_buf_add_esc(&b, in, strlen(in), &err) < 0 || strcmp(b.ptr, out))
        abort();
    n = rc_esc(small, sizeof(small), in);
    if (n >= sizeof(small) || strlen(small) != n || strncmp(small, out, n))
        abort();
    rc_buf_release(&b);
    free(in);
    free(out);
    free(again);
    return 0;
}
