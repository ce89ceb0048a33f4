/*
 * rc_hash.c - FNV-1a 64-bit, and XXH64 (Yann Collet's algorithm, as its specification
 * describes it; seed 0).
 */
#include "rc_hash.h"

#include "rc_bytes.h"

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

#define XP1 UINT64_C(0x9E3779B185EBCA87)
#define XP2 UINT64_C(0xC2B2AE3D27D4EB4F)
#define XP3 UINT64_C(0x165667B19E3779F9)
#define XP4 UINT64_C(0x85EBCA77C2B2AE63)
#define XP5 UINT64_C(0x27D4EB2F165667C5)

static uint64_t rotl(uint64_t x, int r)
{
    return (x << r) | (x >> (64 - r));
}

static uint64_t xround(uint64_t acc, uint64_t in)
{
    return rotl(acc + in * XP2, 31) * XP1;
}

static uint64_t xmerge(uint64_t h, uint64_t v)
{
    return (h ^ xround(0, v)) * XP1 + XP4;
}

uint64_t rc_xxh64(const void *data, size_t n)
{
    return rc_xxh64_seeded(data, n, 0);
}

uint64_t rc_xxh64_seeded(const void *data, size_t n, uint64_t seed)
{
    const unsigned char *p = data, *end = p + n;
    uint64_t h;

    if (n >= 32) {
        uint64_t v1 = seed + XP1 + XP2, v2 = seed + XP2, v3 = seed, v4 = seed - XP1;
        for (; end - p >= 32; p += 32) {
            v1 = xround(v1, rc_le64_get(p));
            v2 = xround(v2, rc_le64_get(p + 8));
            v3 = xround(v3, rc_le64_get(p + 16));
            v4 = xround(v4, rc_le64_get(p + 24));
        }
        h = rotl(v1, 1) + rotl(v2, 7) + rotl(v3, 12) + rotl(v4, 18);
        h = xmerge(xmerge(xmerge(xmerge(h, v1), v2), v3), v4);
    } else {
        h = seed + XP5;
    }
    h += (uint64_t)n;
    for (; end - p >= 8; p += 8)
        h = rotl(h ^ xround(0, rc_le64_get(p)), 27) * XP1 + XP4;
    if (end - p >= 4) {
        h = rotl(h ^ (uint64_t)rc_le32_get(p) * XP1, 23) * XP2 + XP3;
        p += 4;
    }
    for (; p < end; p++)
        h = rotl(h ^ *p * XP5, 11) * XP1;
    h ^= h >> 33;
    h *= XP2;
    h ^= h >> 29;
    h *= XP3;
    h ^= h >> 32;
    return h;
}

uint64_t rc_xxh64_pair(const char *a, const char *b)
{
    return rc_xxh64_seeded(b, strlen(b), rc_xxh64(a, strlen(a)));
}

uint64_t rc_fnv1a_str(uint64_t h, const char *s)
{
    /* include the terminator so that ("ab","c") and ("a","bc") differ */
    return rc_fnv1a(h, s, strlen(s) + 1);
}

int rc_is_object_id(const char *s, size_t n)
{
    if (n != 40)
        return 0;
    for (size_t i = 0; i < n; i++) {
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return 0;
    }
    return 1;
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

int rc_hash_unhex(const char *s, uint64_t *h)
{
    uint64_t v = 0;

    for (int i = 0; i < 16; i++) {
        int d = s[i] >= '0' && s[i] <= '9'   ? s[i] - '0'
                : s[i] >= 'a' && s[i] <= 'f' ? s[i] - 'a' + 10
                                             : -1;
        if (d < 0)
            return -1;
        v = v << 4 | (uint64_t)d;
    }
    *h = v;
    return 0;
}
