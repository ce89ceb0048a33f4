/*
 * fuzz_record_shards.c - a record in shards joined back from the record cache file's entries
 * (rd_record_unpack_shards: bytes from the state directory, read as untrusted) never crashes,
 * leaks or reads past its input; a record it accepts has its units in order, each once and
 * in the shard its part names, and packs again to parts that join to as many units.
 *
 * Input: one byte, the base-2 logarithm of the shard count; then pieces separated by
 * "\n--8<--\n": the head (rd_record_pack_head), the order (rd_record_pack_order), and each
 * part, its shard index first (two bytes, little-endian), then what rd_record_pack_shard
 * wrote.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rc_arena.h"
#include "rc_buf.h"
#include "rc_err.h"
#include "rc_mem.h"
#include "rd_output.h"

#define CUT "\n--8<--\n"
#define MAX_PIECES 66

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The pieces of in[0..len): *n of them, each copied to exactly its size (ASan). */
static size_t split(unsigned char **piece, size_t *plen, const unsigned char *in, size_t len)
{
    size_t n = 0, from = 0, cut = strlen(CUT);

    while (n < MAX_PIECES) {
        size_t at = from;
        while (at + cut <= len && memcmp(in + at, CUT, cut))
            at++;
        if (at + cut > len)
            at = len;
        plen[n] = at - from;
        piece[n] = rc_xmalloc(plen[n] ? plen[n] : 1);
        memcpy(piece[n], in + from, plen[n]);
        n++;
        if (at == len)
            break;
        from = at + cut;
    }
    return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    unsigned char *piece[MAX_PIECES];
    size_t plen[MAX_PIECES], index[MAX_PIECES], lens[MAX_PIECES], n, nparts = 0, nshards;
    const unsigned char *parts[MAX_PIECES];
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_err err = RC_ERR_INIT;
    struct rd_record_memo *memo = NULL;
    struct rd_record r;
    int memo_read = 0;

    if (size < 1)
        return 0;
    nshards = (size_t)1 << (data[0] % 13);
    n = split(piece, plen, data + 1, size - 1);
    for (size_t k = 2; k < n; k++) {
        if (plen[k] < 2)
            goto done;
        index[nparts] = (size_t)piece[k][0] | (size_t)piece[k][1] << 8;
        parts[nparts] = piece[k] + 2;
        lens[nparts] = plen[k] - 2;
        nparts++;
    }
    if (n < 2)
        goto done;
    rd_record_memo_new(&memo);
    if (rd_record_unpack_shards(&r, memo, &memo_read, piece[0], plen[0], parts, lens, index, nparts,
                                nshards, piece[1], plen[1] / 2, &a, &err) != 0) {
        if (err.code != RC_EINVALID || memo_read)
            abort();
        goto done;
    }
    /* accepted: in order, each unit in a shard its part names, and it packs again */
    for (size_t i = 0; i < r.nunits; i++) {
        size_t sh = rd_record_shard_of(r.units[i].unit, nshards), k = 0;
        if (i && strcmp(r.units[i - 1].unit, r.units[i].unit) >= 0)
            abort();
        while (k < nparts && index[k] != sh)
            k++;
        if (k == nparts)
            abort();
    }
    {
        struct rc_buf head = RC_BUF_INIT, order = RC_BUF_INIT, *again;
        const unsigned char *pp[MAX_PIECES];
        size_t *which = rc_xcalloc(r.nunits + 1, sizeof(*which)), ll[MAX_PIECES], m = 0;
        struct rd_record back;
        again = rc_xcalloc(nparts + 1, sizeof(*again));
        for (size_t k = 0; k < nparts; k++) {
            size_t w = 0;
            for (size_t i = 0; i < r.nunits; i++) {
                if (rd_record_shard_of(r.units[i].unit, nshards) == index[k])
                    which[w++] = i;
            }
            rc_buf_init(&again[k], 0);
            rd_record_pack_shard(&again[k], &r, NULL, which, w);
            pp[k] = (const unsigned char *)again[k].ptr;
            ll[k] = again[k].len;
            m += w;
        }
        rd_record_pack_head(&head, &r, NULL);
        rd_record_pack_order(&order, &r, nshards);
        if (m != r.nunits ||
            rd_record_unpack_shards(&back, NULL, NULL, (const unsigned char *)head.ptr, head.len,
                                    pp, ll, index, nparts, nshards,
                                    (const unsigned char *)order.ptr, r.nunits, &a, &err) != 0 ||
            back.nunits != r.nunits)
            abort();
        for (size_t k = 0; k < nparts; k++)
            rc_buf_release(&again[k]);
        free(again);
        free(which);
        rc_buf_release(&head);
        rc_buf_release(&order);
    }
done:
    rd_record_memo_free(memo);
    for (size_t k = 0; k < n; k++)
        free(piece[k]);
    rc_arena_release(&a);
    return 0;
}
