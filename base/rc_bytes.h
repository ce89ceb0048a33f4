/*
 * rc_bytes.h - little-endian integers in byte buffers: the state files' fixed fields and the
 * hash's input words, the same on every machine (one load or store where the machine is
 * little-endian).
 */
#ifndef RC_BYTES_H
#define RC_BYTES_H

#include <stdint.h>
#include <string.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define RC_LE32(v) __builtin_bswap32(v)
#define RC_LE64(v) __builtin_bswap64(v)
#else
#define RC_LE32(v) (v)
#define RC_LE64(v) (v)
#endif

static inline void rc_le32_put(unsigned char *p, uint32_t v)
{
    v = RC_LE32(v);
    memcpy(p, &v, 4);
}

static inline void rc_le64_put(unsigned char *p, uint64_t v)
{
    v = RC_LE64(v);
    memcpy(p, &v, 8);
}

static inline uint32_t rc_le32_get(const unsigned char *p)
{
    uint32_t v;

    memcpy(&v, p, 4);
    return RC_LE32(v);
}

static inline uint64_t rc_le64_get(const unsigned char *p)
{
    uint64_t v;

    memcpy(&v, p, 8);
    return RC_LE64(v);
}

#endif
