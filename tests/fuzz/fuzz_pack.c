/*
 * fuzz_pack.c - rd_unpack never crashes or reads past its input on any bytes, and a tree it
 * accepts packs again to bytes that expand to the same tree (rd_pack.h).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rc_arena.h"
#include "rc_err.h"
#include "rc_mem.h"
#include "rd_pack.h"
#include "rd_yaml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* a copy of exactly size bytes, so that ASan sees any read past the end */
    unsigned char *in = rc_xmalloc(size ? size : 1);
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_err err = RC_ERR_INIT;
    const unsigned char *packed = NULL;
    size_t len = 0;
    cJSON *t = NULL, *back = NULL;

    memcpy(in, data, size);
    if (rd_unpack(&t, in, size, &err) != RC_OK) {
        if (t || err.code != RC_EINVALID)
            abort();
        free(in);
        return 0;
    }
    if (rd_pack(&packed, &len, t, &a, &err) != RC_OK ||
        rd_unpack(&back, packed, len, &err) != RC_OK || !rd_yaml_equal(t, back))
        abort();
    cJSON_Delete(t);
    cJSON_Delete(back);
    rc_arena_release(&a);
    free(in);
    return 0;
}
