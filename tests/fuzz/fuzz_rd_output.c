/*
 * fuzz_rd_output.c - the deploy branch's parsers on arbitrary input: rd_record_parse (and
 * rd_record_read of a record in shards), rd_capacity_parse and rd_kept_parse must never
 * crash, and a snapshot or a list of kept versions that parses must write back to text that
 * parses to the same again (emit -> parse -> emit is stable; the kept versions read back
 * entry for entry).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pl_basics.h"
#include "rc_arena.h"
#include "rc_buf.h"
#include "rd_output.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void kept_round_trip(const uint8_t *data, size_t size, struct rc_arena *a)
{
    struct rc_err err = RC_ERR_INIT;
    struct rd_kept *k = NULL, *k2 = NULL;
    size_t n = 0, n2 = 0;
    struct rc_buf one = RC_BUF_INIT, two = RC_BUF_INIT;

    if (rd_kept_parse(&k, &n, (const char *)data, size, a, &err) != 0)
        return;
    rd_kept_emit(&one, k, n);
    if (rd_kept_parse(&k2, &n2, one.ptr, one.len, a, &err) != 0 || n2 != n)
        abort();
    for (size_t i = 0; i < n; i++) {
        if (strcmp(k[i].path, k2[i].path) || strcmp(k[i].id, k2[i].id) ||
            rd_kept_find(k2, n2, k[i].path) != &k2[i])
            abort();
    }
    rd_kept_emit(&two, k2, n2);
    if (one.len != two.len || memcmp(one.ptr, two.ptr, one.len))
        abort();
    rc_buf_release(&one);
    rc_buf_release(&two);
}

/* A record in shards, from one input: the header, then each shard the header names, in the
 * order they are read, each part after a line "--- 8< ---". Whatever the blob id asked for,
 * the next part is the answer. */
#define CUT "\n--- 8< ---\n"
struct parts {
    const char *at, *end;
};

static int next_part(void *payload, const char *id, size_t max, const char **text, size_t *len,
                     struct rc_arena *a, struct rc_err *err)
{
    struct parts *p = payload;
    const char *cut;

    (void)id;
    (void)a;
    (void)max;
    if (p->at >= p->end)
        return rc_err_set(err, RC_ENOTFOUND, "no more parts");
    cut = memmem(p->at, (size_t)(p->end - p->at), CUT, strlen(CUT));
    *text = p->at;
    *len = (size_t)((cut ? cut : p->end) - p->at);
    p->at = cut ? cut + strlen(CUT) : p->end;
    return 0;
}

static void sharded(const uint8_t *data, size_t size, struct rc_arena *a)
{
    struct rc_err err = RC_ERR_INIT;
    const char *s = (const char *)data, *cut = memmem(s, size, CUT, strlen(CUT));
    struct parts p;
    struct rd_record r;
    struct rd_record_layout layout;

    if (!cut)
        return;
    p.at = cut + strlen(CUT);
    p.end = s + size;
    if (rd_record_read(&r, s, (size_t)(cut - s), next_part, &p, &layout, a, &err) != 0)
        return;
    if (layout.shards < 1 || (layout.shards & (layout.shards - 1)) || layout.nfiles > layout.shards)
        abort();
    /* what reads from shards is sorted by unit, each once (a record in one file keeps the
     * order its file has: rd_record_parse) */
    for (size_t i = 1; layout.shards > 1 && i < r.nunits; i++) {
        if (strcmp(r.units[i - 1].unit, r.units[i].unit) >= 0)
            abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_err err = RC_ERR_INIT;
    struct rd_record r;
    struct pl_resnames res, res2;
    struct pl_cluster *c = NULL, *c2 = NULL;
    size_t n = 0, n2 = 0;
    struct rc_buf one = RC_BUF_INIT, two = RC_BUF_INIT;

    (void)rd_record_parse(&r, (const char *)data, size, &a, &err);
    sharded(data, size, &a);
    kept_round_trip(data, size, &a);
    pl_resnames_init(&res);
    if (rd_capacity_parse(&c, &n, &res, (const char *)data, size, &a, &err) == 0 &&
        rd_capacity_emit(&one, c, n, &res, NULL, 0, "x", &err) == 0) {
        pl_resnames_init(&res2);
        if (rd_capacity_parse(&c2, &n2, &res2, one.ptr, one.len, &a, &err) != 0)
            abort();
        if (rd_capacity_emit(&two, c2, n2, &res2, NULL, 0, "x", &err) != 0)
            abort();
        if (one.len != two.len || memcmp(one.ptr, two.ptr, one.len))
            abort();
    }
    rc_buf_release(&one);
    rc_buf_release(&two);
    rc_arena_release(&a);
    return 0;
}
