/*
 * fuzz_quantity.c - pl_quantity_parse never crashes, and whatever it accepts formats (as cpu
 * and as memory) to text that parses back to the same value.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pl_quantity.h"
#include "rc_err.h"
#include "rc_mem.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = rc_xmalloc(size + 1);
    struct rc_err err = RC_ERR_INIT;
    int64_t v = 0;

    memcpy(text, data, size);
    text[size] = '\0';
    if (pl_quantity_parse(&v, text, &err) != RC_OK) {
        if (err.code != RC_EINVALID || !err.msg[0])
            abort();
        free(text);
        return 0;
    }
    for (int mem = 0; mem <= 1; mem++) {
        char out[PL_QUANTITY_STR];
        int64_t back = 0;
        struct rc_err err2 = RC_ERR_INIT;
        pl_quantity_format(out, v, mem);
        if (strlen(out) >= PL_QUANTITY_STR)
            abort();
        /* every format is exact: it must read back to the same value */
        if (pl_quantity_parse(&back, out, &err2) != RC_OK || back != v)
            abort();
    }
    free(text);
    return 0;
}
