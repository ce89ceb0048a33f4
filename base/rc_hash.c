/*
 * rc_hash.c - FNV-1a 64-bit.
 */
#include "rc_hash.h"

#include <string.h>

uint64_t rc_fnv1a(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;

    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= UINT64_C(0x100000001b3);
    }
    return h;
}

uint64_t rc_fnv1a_str(uint64_t h, const char *s)
{
    /* include the terminator so that ("ab","c") and ("a","bc") differ */
    return rc_fnv1a(h, s, strlen(s) + 1);
}

void rc_hash_hex(uint64_t h, char out[17])
{
    static const char digits[] = "0123456789abcdef";

    for (int i = 15; i >= 0; i--) {
        out[i] = digits[h & 0xf];
        h >>= 4;
    }
    out[16] = '\0';
}
