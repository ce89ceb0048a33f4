/*
 * bench_rd_record.c - how fast a decision record comes back, by each form it can be kept in:
 * placements.yaml parsed (rd_record_parse), the binary form of the record cache file
 * (rd_record_pack / rd_record_unpack, and by shard as it keeps a record in shards:
 * rd_record_pack_shard / rd_record_unpack_shards), and, for comparison, the record's YAML held as
 * packed cJSON documents (rd_pack / rd_unpack: the tree back, before any field is read out of it).
 * Usage: bench_rd_record PLACEMENTS_YAML [REPEATS]
 * (e.g. `git -C /tmp/rp-e2e/10000x100/src show deploy:placements.yaml > /tmp/rec.yaml`)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rc_arena.h"
#include "rc_buf.h"
#include "rc_hash.h"
#include "rd_output.h"
#include "rd_pack.h"
#include "rd_yaml.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    struct rc_buf text = RC_BUF_INIT, bin = RC_BUF_INIT;
    struct rc_err err = RC_ERR_INIT;
    struct rc_arena a = RC_ARENA_INIT;
    struct rd_record rec, back;
    int reps = argc > 2 ? atoi(argv[2]) : 3;
    double best[5] = {1e9, 1e9, 1e9, 1e9, 1e9};

    if (argc < 2 || rc_buf_read_file(&text, argv[1], &err) < 0) {
        fprintf(stderr, "usage: bench_rd_record PLACEMENTS_YAML [REPEATS] (%s)\n", err.msg);
        return 2;
    }
    if (reps < 1)
        reps = 1;
    for (int r = 0; r < reps; r++) {
        struct rc_arena tmp = RC_ARENA_INIT;
        double t0 = now(), t1, t2, t3;
        uint64_t h;
        if (rd_record_parse(&rec, text.ptr, text.len, &a, &err) < 0) {
            fprintf(stderr, "parse: %s\n", err.msg);
            return 1;
        }
        t1 = now();
        rc_buf_reset(&bin);
        rd_record_pack(&bin, &rec);
        t2 = now();
        h = rc_fnv1a(RC_FNV_INIT, bin.ptr, bin.len);
        t3 = now();
        if (rd_record_unpack(&back, (const unsigned char *)bin.ptr, bin.len, &tmp, &err) < 0) {
            fprintf(stderr, "unpack: %s\n", err.msg);
            return 1;
        }
        best[0] = t1 - t0 < best[0] ? t1 - t0 : best[0];
        best[1] = t2 - t1 < best[1] ? t2 - t1 : best[1];
        best[2] = t3 - t2 < best[2] ? t3 - t2 : best[2];
        best[3] = now() - t3 < best[3] ? now() - t3 : best[3];
        (void)h;
        rc_arena_release(&tmp);
        rc_arena_release(&a);
    }
    /* by shard, as the record cache file keeps a record in shards (rc_rcache.c): each
     * shard packed, one shard packed (what a pass that changes one unit packs), and the
     * parts joined back */
    {
        size_t nsh = rd_record_shards_for(rec.nunits, 0), *count, *start, *which, *index;
        struct rc_buf *parts, head = RC_BUF_INIT, order = RC_BUF_INIT;
        const unsigned char **pp;
        size_t *lens, nparts = 0, bytes = 0;
        double bs[3] = {1e9, 1e9, 1e9};
        if (rd_record_parse(&rec, text.ptr, text.len, &a, &err) < 0)
            return 1;
        count = calloc(nsh + 1, sizeof(*count));
        start = calloc(nsh + 1, sizeof(*start));
        which = calloc(rec.nunits + 1, sizeof(*which));
        index = calloc(nsh + 1, sizeof(*index));
        lens = calloc(nsh + 1, sizeof(*lens));
        pp = calloc(nsh + 1, sizeof(*pp));
        parts = calloc(nsh + 1, sizeof(*parts));
        for (size_t i = 0; i < rec.nunits; i++)
            count[rd_record_shard_of(rec.units[i].unit, nsh)]++;
        for (size_t k = 1; k <= nsh; k++)
            start[k] = start[k - 1] + count[k - 1];
        {
            size_t *at = calloc(nsh + 1, sizeof(*at));
            for (size_t i = 0; i < rec.nunits; i++) {
                size_t k = rd_record_shard_of(rec.units[i].unit, nsh);
                which[start[k] + at[k]++] = i;
            }
            free(at);
        }
        for (int r = 0; r < reps; r++) {
            struct rc_arena tmp = RC_ARENA_INIT;
            double t0 = now(), t1, t2;
            nparts = 0;
            bytes = 0;
            for (size_t k = 0; k < nsh; k++) {
                if (!count[k])
                    continue;
                rc_buf_release(&parts[nparts]);
                rc_buf_init(&parts[nparts], 0);
                rd_record_pack_shard(&parts[nparts], &rec, NULL, which + start[k], count[k]);
                index[nparts] = k;
                nparts++;
            }
            rc_buf_reset(&head);
            rd_record_pack_head(&head, &rec, NULL);
            rc_buf_reset(&order);
            rd_record_pack_order(&order, &rec, nsh);
            t1 = now();
            for (size_t k = 0; k < nparts; k++) {
                pp[k] = (const unsigned char *)parts[k].ptr;
                lens[k] = parts[k].len;
                bytes += lens[k];
            }
            if (rd_record_unpack_shards(
                    &back, NULL, NULL, (const unsigned char *)head.ptr, head.len, pp, lens, index,
                    nparts, nsh, (const unsigned char *)order.ptr, rec.nunits, &tmp, &err) < 0) {
                fprintf(stderr, "unpack by shard: %s\n", err.msg);
                return 1;
            }
            t2 = now();
            {
                struct rc_buf one = RC_BUF_INIT;
                double t3 = now();
                rd_record_pack_shard(&one, &rec, NULL, which + start[index[0]], count[index[0]]);
                bs[2] = now() - t3 < bs[2] ? now() - t3 : bs[2];
                rc_buf_release(&one);
            }
            bs[0] = t1 - t0 < bs[0] ? t1 - t0 : bs[0];
            bs[1] = t2 - t1 < bs[1] ? t2 - t1 : bs[1];
            rc_arena_release(&tmp);
        }
        printf("by shard: %zu shards, %zu bytes; best of %d: pack all %.1f ms, pack one %.2f ms, "
               "join %.1f ms\n",
               nparts, bytes + head.len + order.len, reps, bs[0] * 1e3, bs[2] * 1e3, bs[1] * 1e3);
        for (size_t k = 0; k <= nsh; k++)
            rc_buf_release(&parts[k]);
        rc_buf_release(&head);
        rc_buf_release(&order);
        free(parts);
        free(pp);
        free(lens);
        free(index);
        free(which);
        free(start);
        free(count);
        rc_arena_release(&a);
    }
    /* the alternative: the whole record as packed cJSON documents, expanded again */
    {
        struct rd_yaml_limits lim = RD_YAML_LIMITS_INIT;
        struct rd_docs *docs = NULL;
        const unsigned char *packed;
        size_t plen;
        lim.max_bytes = RD_RECORD_MAX_BYTES;
        lim.max_nodes = (size_t)1 << 30;
        if (rd_yaml_load(&docs, "placements.yaml", text.ptr, text.len, &lim, NULL, &err) < 0 ||
            rd_pack(&packed, &plen, rd_docs_get(docs, 0), &a, &err) < 0) {
            fprintf(stderr, "pack: %s\n", err.msg);
            return 1;
        }
        for (int r = 0; r < reps; r++) {
            cJSON *tree = NULL;
            double t0 = now();
            if (rd_unpack(&tree, packed, plen, &err) < 0)
                return 1;
            best[4] = now() - t0 < best[4] ? now() - t0 : best[4];
            cJSON_Delete(tree);
        }
        printf("packed cJSON docs: %zu bytes\n", plen);
        rd_docs_free(docs);
    }
    printf("record: %zu bytes of YAML, %zu units; binary form %zu bytes\n", text.len, rec.nunits,
           bin.len);
    printf("best of %d: parse %.1f ms, pack %.1f ms, checksum %.1f ms, unpack %.1f ms; "
           "packed cJSON docs expanded (no fields read yet) %.1f ms\n",
           reps, best[0] * 1e3, best[1] * 1e3, best[2] * 1e3, best[3] * 1e3, best[4] * 1e3);
    rc_buf_release(&text);
    rc_buf_release(&bin);
    rc_arena_release(&a);
    return 0;
}
