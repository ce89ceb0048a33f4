/*
 * fuzz_cache_import.c - the parse cache's bytes: what a file loads to, exported, imports to
 * an entry that exports the same bytes again (every field read back as written), and the
 * same bytes with any one byte changed or cut short import or are refused, never crash or
 * leak (rd_cache_export, rd_cache_import).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rc_buf.h"
#include "rd_source.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define ID "0123456789abcdef0123456789abcdef01234567"
#define PATH "fuzz.yaml"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct rd_file f = {PATH, (const char *)data, size};
    const char *ids[1] = {ID};
    struct rd_cache *c = NULL, *d = NULL;
    struct rc_buf one = RC_BUF_INIT, two = RC_BUF_INIT;
    size_t parsed = 0;

    if (rd_cache_new(&c) < 0 || rd_cache_new(&d) < 0)
        abort();
    (void)rd_cache_prime(c, &f, ids, 1, 1, &parsed);
    if (rd_cache_export(c, ID, PATH, &one) == RC_OK) {
        unsigned char *bytes = malloc(one.len + 1);
        uint32_t h = 2166136261u;
        if (rd_cache_import(d, ID, PATH, one.ptr, one.len) != RC_OK ||
            rd_cache_export(d, ID, PATH, &two) != RC_OK || two.len != one.len ||
            memcmp(two.ptr, one.ptr, one.len) != 0)
            abort(); /* what was written is not what is read */
        for (size_t i = 0; i < size; i++)
            h = (h ^ data[i]) * 16777619u;
        memcpy(bytes, one.ptr, one.len);
        bytes[h % one.len] ^= (unsigned char)(1u << (h >> 29));
        rd_cache_free(d);
        if (rd_cache_new(&d) < 0)
            abort();
        (void)rd_cache_import(d, ID, PATH, bytes, one.len);
        rd_cache_free(d);
        if (rd_cache_new(&d) < 0)
            abort();
        (void)rd_cache_import(d, ID, PATH, bytes, h % one.len);
        free(bytes);
    }
    rc_buf_release(&one);
    rc_buf_release(&two);
    rd_cache_free(c);
    rd_cache_free(d);
    return 0;
}
