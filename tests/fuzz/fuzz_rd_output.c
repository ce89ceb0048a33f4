/*
 * fuzz_rd_output.c - the deploy branch's parsers on arbitrary input: rd_record_parse,
 * rd_capacity_parse and rd_kept_parse must never crash, and a snapshot or a list of kept
 * versions that parses must write back to text that parses to the same again (emit -> parse
 * -> emit is stable; the kept versions read back entry for entry).
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
