/*
 * rc_hash.h - FNV-1a 64-bit, for stable short identifiers, and XXH64, a checksum for the
 * state files; neither is for security.
 */
#ifndef RC_HASH_H
#define RC_HASH_H

#include <stddef.h>
#include <stdint.h>

#define RC_FNV_INIT UINT64_C(0xcbf29ce484222325)

uint64_t rc_fnv1a(uint64_t h, const void *data, size_t n);
uint64_t rc_fnv1a_str(uint64_t h, const char *s);
/* XXH64 (seed 0) of data: the same value as `xxhsum -H64`. Eight bytes a step, so a checksum
 * of tens of megabytes (the parse cache) costs milliseconds, where FNV-1a's byte a step
 * costs tens. */
uint64_t rc_xxh64(const void *data, size_t n);
/* XXH64 with a seed (`xxhsum -H64` gives seed 0 only). */
uint64_t rc_xxh64_seeded(const void *data, size_t n, uint64_t seed);
/* A hash of the pair of strings (a, b) for tables held in memory: XXH64 of b seeded with
 * XXH64 of a (never written anywhere: the value may change with the build). */
uint64_t rc_xxh64_pair(const char *a, const char *b);
/* Write the hash as 16 lower-case hex digits plus NUL into out[17]; read back from s[0..16)
 * (exactly 16 lower-case hex digits, else -1 and *h untouched). */
void rc_hash_hex(uint64_t h, char out[17]);
int rc_hash_unhex(const char *s, uint64_t *h);
/* Whether s[0..n) is a git object id as rightplace writes one: exactly 40 lower-case hex
 * digits (n counts bytes; s need not be NUL-terminated). */
int rc_is_object_id(const char *s, size_t n);

#endif
