/*
 * rd_pack.h - a manifest held compactly between load and render.
 *
 * A loaded manifest is a cJSON tree with a source position for every node: three to four
 * times the YAML it came from, more with malloc's overhead per node. Placement reads none of
 * it (it reads what rd_object_init and rd_demand_extract copied out), and render needs the
 * tree only for the units it writes. So rd_source keeps each workload as packed bytes, about
 * the size of its YAML, and render expands a fresh tree when it writes the object.
 *
 * The packing is exact: rd_unpack(rd_pack(t)) is rd_yaml_equal to t, with the same key order,
 * the same doubles bit for bit and the exact text an integer beyond 2^53 carries
 * (rd_yaml.h, "Number text"). Format, one node:
 *   'n' null | 'f' false | 't' true
 *   'd' <8-byte IEEE double>            a number
 *   'D' <8-byte double> <len> <text>    a number with its exact integer text
 *   's' <len> <bytes>                   a string (no NUL inside)
 *   '[' <count> <node>...               an array
 *   '{' <count> (<len> <key> <node>)... an object, keys in order
 * lengths and counts are unsigned LEB128. The decoder checks every length against the input,
 * nesting against RD_PACK_MAX_DEPTH, and refuses trailing bytes, so that a corrupt or hostile
 * input (should packed bytes ever come from outside the process) is an error, never a crash.
 */
#ifndef RD_PACK_H
#define RD_PACK_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "rc_arena.h"
#include "rc_err.h"

#define RD_PACK_MAX_DEPTH 128

/* Pack `root` into memory from `a`: *out, *len. RC_EINVALID for a node type a loaded
 * manifest cannot hold (raw JSON, invalid), or nesting beyond RD_PACK_MAX_DEPTH. */
int rd_pack(const unsigned char **out, size_t *len, const cJSON *root, struct rc_arena *a,
            struct rc_err *err);

/* The two halves of rd_pack, to pack several trees into one allocation: the bytes `root`
 * packs to (0: it cannot be packed), and writing them at dst (returns dst + that size). */
size_t rd_pack_size(const cJSON *root);
unsigned char *rd_pack_write(unsigned char *dst, const cJSON *root);

/* Expand packed bytes into a new tree the caller frees with cJSON_Delete. RC_EINVALID (and
 * *out NULL) for bytes rd_pack did not write. Aborts when memory runs out, as rc_mem does. */
int rd_unpack(cJSON **out, const unsigned char *data, size_t len, struct rc_err *err);

/* The numbers of the packed form (lengths, counts), unsigned LEB128, for other binary forms
 * of render/ to use the same: write v at p (at most RD_VARINT_MAX bytes), returning the byte
 * after it; read one at *p, not past end, moving *p past it (-1: it runs past end or holds
 * more than 63 bits). */
#define RD_VARINT_MAX 10
unsigned char *rd_varint_put(unsigned char *p, size_t v);
int rd_varint_get(const unsigned char **p, const unsigned char *end, size_t *out);

#endif
