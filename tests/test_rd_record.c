/*
 * test_rd_record.c - rightplace reads back the records it writes, at the largest scale the
 * bench runs (20,000 workloads on 100 clusters of 100 nodes), and the decision record's size
 * does not depend on the size of the fleet.
 *
 * The records are written and read by the real writer and reader (rd_record_emit /
 * rd_record_parse, rd_capacity_emit / rd_capacity_parse) from engine results built in
 * memory, which is what a pass at that scale hands them.
 */
#include "th.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pl_basics.h"
#include "pl_engine.h"
#include "rc_arena.h"
#include "rc_buf.h"
#include "rd_output.h"
#include "rd_source.h"
#include "rc_git.h"
#include "rd_yaml.h"
#include "th_record.h"
#include "th_rp.h"

#define BENCH_UNITS 20000
#define BENCH_CLUSTERS 100
#define BENCH_NODES 100

static const char *cluster_name(struct rc_arena *a, size_t c)
{
    return rc_arena_printf(a, "cluster-%03zu", c);
}

/* One RayJob + ConfigMap gang per unit, in 50 namespaces, as the bench's fleet. Each unit
 * has a verdict for every cluster (preference order = cluster order): the first `skip`
 * clusters have no room, the chosen one fits now, the rest vary. */
static void make_result(struct pl_result *res, size_t nunits, size_t nclusters, struct rc_arena *a)
{
    const char **names = rc_arena_calloc(a, nclusters, sizeof(*names));

    for (size_t c = 0; c < nclusters; c++)
        names[c] = cluster_name(a, c);
    memset(res, 0, sizeof(*res));
    res->ndecisions = nunits;
    res->decisions = rc_arena_calloc(a, nunits, sizeof(*res->decisions));
    for (size_t i = 0; i < nunits; i++) {
        struct pl_decision *d = &res->decisions[i];
        size_t ns = i * 50 / nunits, chosen = (i * 7) % nclusters;

        d->unit = rc_arena_printf(a, "skyray-capacity/team-%02zu/job-%06zu", ns, i);
        d->policy = "skyray-capacity";
        d->policy_digest = "5f0c1d2e3a4b5c6d";
        d->nobjects = 2;
        d->object_keys = rc_arena_calloc(a, 2, sizeof(*d->object_keys));
        d->object_keys[0] = rc_arena_printf(a, "team-%02zu/ConfigMap/job-%06zu-code", ns, i);
        d->object_keys[1] = rc_arena_printf(a, "team-%02zu/RayJob/job-%06zu", ns, i);
        d->objects = rc_arena_calloc(a, 2, sizeof(*d->objects));
        d->state = PL_STATE_PLACED;
        d->ntargets = 1;
        d->targets = rc_arena_calloc(a, 1, sizeof(*d->targets));
        d->targets[0].cluster = names[chosen];
        d->targets[0].percent = 100;
        d->reason = rc_arena_printf(a, "fits now on %s", names[chosen]);
        d->nverdicts = nclusters;
        d->verdicts = rc_arena_calloc(a, nclusters, sizeof(*d->verdicts));
        for (size_t c = 0; c < nclusters; c++) {
            struct pl_verdict *v = &d->verdicts[c];
            v->cluster = names[c];
            if (c < chosen) {
                v->kind = PL_VERDICT_DOES_NOT_FIT;
                v->detail = "worker needs nvidia.com/gpu 8; best node has 0 (20 GPU nodes full)";
            } else if (c == chosen || c % 3 == 0) {
                v->kind = PL_VERDICT_FITS_NOW;
                v->detail = "head on cpu-3, 4 workers on gpu-1..gpu-4";
            } else if (c % 5 == 0) {
                v->kind = PL_VERDICT_FITS_AFTER_SCALE_UP;
                v->detail = "luna adds 2 nodes of p4d.24xlarge";
                v->nodes_added = 2;
            } else {
                v->kind = PL_VERDICT_DOES_NOT_FIT;
                v->detail = "worker needs nvidia.com/gpu 8; best node has 0";
            }
        }
    }
}

/* What rd_record_parse read of `one` (written from res with opts) is all a pass needs to
 * keep every entry: written again from it (each unit's verdicts and tally as read), the
 * record is the same bytes. */
static void assert_written_again_alike(const struct rc_buf *one, const struct pl_result *res,
                                       const struct rd_record *rec, struct rd_render_options opts,
                                       struct rc_arena *a)
{
    struct rc_err err = RC_ERR_INIT;
    struct rc_buf two = RC_BUF_INIT;
    struct pl_result again = *res;
    const struct rd_verdict_tally **tallies;

    again.decisions = rc_arena_calloc(a, res->ndecisions, sizeof(*again.decisions));
    tallies = rc_arena_calloc(a, res->ndecisions, sizeof(*tallies));
    for (size_t i = 0; i < res->ndecisions; i++) {
        again.decisions[i] = res->decisions[i];
        again.decisions[i].nverdicts = rec->units[i].nverdicts;
        again.decisions[i].verdicts = rec->units[i].verdicts;
        tallies[i] = &rec->tallies[i];
    }
    opts.tallies = tallies;
    assert_int_equal(rd_record_emit(&two, &again, &opts, &err), 0);
    assert_int_equal(one->len, two.len);
    assert_memory_equal(one->ptr, two.ptr, one->len);
    rc_buf_release(&two);
}

/* ==== placements.yaml ==== */

static void test_rd_record__bench_scale_reads_back(void **state)
{
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_err err = RC_ERR_INIT;
    struct rc_buf one = RC_BUF_INIT;
    struct pl_result res;
    struct rd_record rec;
    struct rd_render_options opts = RD_RENDER_OPTIONS_INIT;

    (void)state;
    make_result(&res, BENCH_UNITS, BENCH_CLUSTERS, &a);
    assert_int_equal(rd_record_emit(&one, &res, NULL, &err), 0);
    if (rd_record_parse(&rec, one.ptr, one.len, &a, &err) < 0)
        fail_msg("%s", err.msg);
    assert_int_equal(rec.nunits, BENCH_UNITS);
    assert_string_equal(rec.source, ""); /* named by RD_SOURCE_FILE, not the record */
    for (size_t i = 0; i < rec.nunits; i++) {
        const struct pl_prev_unit *u = &rec.units[i];
        const struct pl_decision *d = &res.decisions[i];
        size_t total = 0, chosen = (i * 7) % BENCH_CLUSTERS;

        assert_string_equal(u->unit, d->unit);
        assert_int_equal(u->state, PL_STATE_PLACED);
        assert_int_equal(u->nclusters, 1);
        assert_string_equal(u->clusters[0], d->targets[0].cluster);
        assert_int_equal(u->nobjects, 2);
        /* the chosen cluster and at most three preferred ones passed over */
        assert_true(u->nverdicts <= RD_RECORD_CHOSEN_VERDICTS + RD_RECORD_PASSED_VERDICTS);
        assert_int_equal(u->nverdicts, 1 + (chosen < 3 ? chosen : 3));
        assert_string_equal(u->verdicts[u->nverdicts - 1].cluster, d->targets[0].cluster);
        assert_int_equal(u->verdicts[u->nverdicts - 1].kind, PL_VERDICT_FITS_NOW);
        for (size_t k = 0; k + 1 < u->nverdicts; k++) {
            assert_string_equal(u->verdicts[k].cluster, d->verdicts[k].cluster);
            assert_int_equal(u->verdicts[k].kind, PL_VERDICT_DOES_NOT_FIT);
        }
        for (int k = 0; k < 4; k++)
            total += rec.tallies[i].count[k];
        assert_int_equal(total, BENCH_CLUSTERS);
        assert_int_equal(rec.tallies[i].omitted, BENCH_CLUSTERS - u->nverdicts);
    }

    /* The next pass keeps every entry (nothing changed): the record is written again from
     * what was read, byte for byte. */
    assert_written_again_alike(&one, &res, &rec, opts, &a);
    rc_buf_release(&one);
    rc_arena_release(&a);
}

/* The same units on fleets of 10, 100 and 1,000 clusters: the record grows with the units,
 * not with units x clusters (only the counts' digits differ). */
static void test_rd_record__size_independent_of_fleet(void **state)
{
    static const size_t fleets[] = {10, 100, 1000};
    size_t len[3];

    (void)state;
    for (size_t f = 0; f < 3; f++) {
        struct rc_arena a = RC_ARENA_INIT;
        struct rc_err err = RC_ERR_INIT;
        struct rc_buf b = RC_BUF_INIT;
        struct pl_result res;

        make_result(&res, 200, fleets[f], &a);
        /* the same choice whatever the fleet: the 6th cluster */
        for (size_t i = 0; i < res.ndecisions; i++) {
            struct pl_decision *d = &res.decisions[i];
            d->targets[0].cluster = d->verdicts[5].cluster;
            d->reason = "fits now on cluster-005";
            for (size_t c = 0; c < d->nverdicts; c++) {
                d->verdicts[c].kind = c < 5 ? PL_VERDICT_DOES_NOT_FIT : PL_VERDICT_FITS_NOW;
                d->verdicts[c].detail = c < 5 ? "no room" : "fits";
                d->verdicts[c].nodes_added = 0;
            }
        }
        assert_int_equal(rd_record_emit(&b, &res, NULL, &err), 0);
        len[f] = b.len;
        rc_buf_release(&b);
        rc_arena_release(&a);
    }
    /* a few digits per unit, never a verdict per cluster */
    assert_true(len[1] <= len[0] + 200 * 4);
    assert_true(len[2] <= len[0] + 200 * 8);
}

/* Units that are pending list the most preferred candidates; Duplicate lists a bounded few
 * of its targets. */
static void test_rd_record__bounded_for_pending_and_duplicate(void **state)
{
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_err err = RC_ERR_INIT;
    struct rc_buf b = RC_BUF_INIT;
    struct pl_result res;
    struct rd_record rec;

    (void)state;
    make_result(&res, 2, 50, &a);
    res.decisions[0].state = PL_STATE_PENDING;
    res.decisions[0].ntargets = 0;
    res.decisions[0].reason = "no cluster fits now or after scale-up (50 candidates)";
    res.decisions[1].ntargets = 50;
    res.decisions[1].targets = rc_arena_calloc(&a, 50, sizeof(*res.decisions[1].targets));
    for (size_t c = 0; c < 50; c++) {
        res.decisions[1].targets[c].cluster = res.decisions[1].verdicts[c].cluster;
        res.decisions[1].targets[c].percent = 100;
    }
    assert_int_equal(rd_record_emit(&b, &res, NULL, &err), 0);
    if (rd_record_parse(&rec, b.ptr, b.len, &a, &err) < 0)
        fail_msg("%s", err.msg);
    assert_int_equal(rec.nunits, 2);
    assert_int_equal(rec.units[0].nverdicts, RD_RECORD_PASSED_VERDICTS);
    assert_string_equal(rec.units[0].verdicts[0].cluster, "cluster-000");
    assert_int_equal(rec.tallies[0].omitted, 50 - RD_RECORD_PASSED_VERDICTS);
    assert_int_equal(rec.units[1].nclusters, 50);
    assert_int_equal(rec.units[1].nverdicts, RD_RECORD_CHOSEN_VERDICTS);
    assert_int_equal(rec.tallies[1].omitted, 50 - RD_RECORD_CHOSEN_VERDICTS);
    assert_non_null(strstr(b.ptr, "verdictsOmitted: 47\n"));
    rc_buf_release(&b);
    rc_arena_release(&a);
}

/* ==== The record a result makes, without the round trip (loop mode) ==== */

/* Every kind of entry: placed, pending, unplaced without a policy, Divide shares, kept
 * tallies, verdicts without detail, strings YAML has to quote or write as blocks, a removed
 * unit; and warnings. */
static void make_varied(struct pl_result *res, struct rd_render_options *opts, struct rc_arena *a)
{
    static const char *const odd[] = {
        "yes",       "0x1F",       " leading", "trailing: ", "two\nlines\n", "quote \" and \\",
        "tab\there", "ünï cödé ✓", "",         "~",          "- dash",       "2024-01-01",
        "a #b",      "null"};
    static struct rd_verdict_tally kept = {7, {1, 2, 3, 4}}, bare = {0, {5, 0, 0, 0}};
    static const char *const warnings[] = {"a.yaml:3: one", "two\nlines", "yes"};
    const size_t nodd = sizeof(odd) / sizeof(odd[0]);
    const struct rd_verdict_tally **tallies;

    make_result(res, 60, 12, a);
    tallies = rc_arena_calloc(a, res->ndecisions, sizeof(*tallies));
    for (size_t i = 0; i < res->ndecisions; i++) {
        struct pl_decision *d = &res->decisions[i];
        const char *s = odd[i % nodd];
        switch (i % 6) {
        case 0: /* pending, odd reason, a cause */
            d->state = PL_STATE_PENDING;
            d->reason = s;
            d->cause = odd[(i + 3) % nodd];
            break;
        case 1: /* unplaced, no policy, no digest, no verdicts */
            d->state = PL_STATE_UNPLACED;
            d->policy = NULL;
            d->policy_digest = NULL;
            d->nverdicts = 0;
            d->reason = NULL;
            break;
        case 2: /* Divide over three clusters */
            d->ntargets = 3;
            d->targets = rc_arena_calloc(a, 3, sizeof(*d->targets));
            for (size_t t = 0; t < 3; t++) {
                d->targets[t].cluster = d->verdicts[t * 2].cluster;
                d->targets[t].percent = t == 0 ? 50 : 25;
            }
            break;
        case 3: /* a kept entry: its verdicts all listed, its tally as recorded */
            d->nverdicts = 2;
            tallies[i] = &kept;
            break;
        case 4: /* a kept tally that omits nothing is counted again */
            tallies[i] = &bare;
            d->verdicts[0].detail = NULL;
            d->verdicts[1].nodes_added = 5;
            d->verdicts[1].kind = PL_VERDICT_FITS_AFTER_SCALE_UP;
            break;
        default: /* odd strings everywhere */
            d->object_keys[1] = s;
            d->verdicts[0].detail = s;
            d->cause = s;
            break;
        }
    }
    res->decisions[7].change = PL_CHANGE_REMOVED; /* not written */
    res->nwarnings = 1;
    res->warnings = rc_arena_calloc(a, 1, sizeof(*res->warnings));
    res->warnings[0] = "object 'a/RayJob/x' matches policies 'p1' and 'p2'; 'p1' wins";
    opts->tallies = tallies;
    opts->pull = 1;
    opts->nwarnings = 3;
    opts->warnings = warnings;
}

/* rd_record_of_result gives what rd_record_parse reads from rd_record_emit's bytes, for every
 * kind of entry (make_varied). */
static void test_rd_record__of_result_is_what_parse_reads(void **state)
{
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_err err = RC_ERR_INIT;
    struct rc_buf b = RC_BUF_INIT;
    struct pl_result res;
    struct rd_record read, made;
    struct rd_render_options opts = RD_RENDER_OPTIONS_INIT;

    (void)state;
    make_varied(&res, &opts, &a);
    assert_int_equal(rd_record_emit(&b, &res, &opts, &err), 0);
    if (rd_record_parse(&read, b.ptr, b.len, &a, &err) < 0)
        fail_msg("%s", err.msg);
    assert_int_equal(rd_record_of_result(&made, &res, &opts, &a), 0);
    assert_int_equal(made.nunits, res.ndecisions - 1);
    th_assert_records_equal(&made, &read);
    /* the view is the same record, and packs to the same bytes */
    {
        struct rc_arena other = RC_ARENA_INIT;
        struct rc_buf pm = RC_BUF_INIT, pv = RC_BUF_INIT;
        struct rd_record view;
        rd_record_view_of_result(&view, &res, &opts, &other);
        th_assert_records_equal(&view, &read);
        rd_record_pack(&pm, &made);
        rd_record_pack(&pv, &view);
        assert_int_equal(pm.len, pv.len);
        assert_memory_equal(pm.ptr, pv.ptr, pm.len);
        rc_buf_release(&pm);
        rc_buf_release(&pv);
        rc_arena_release(&other);
    }
    /* a copy is the same record */
    {
        struct rc_arena other = RC_ARENA_INIT;
        struct rd_record copy;
        rd_record_copy(&copy, &made, &other);
        th_assert_records_equal(&copy, &read);
        rc_arena_release(&other);
    }
    rc_buf_release(&b);
    rc_arena_release(&a);
}

/* A result whose decisions the engine bounded (pl_options.verdicts_chosen as the record's
 * bounds: what reconcile hands the writer) writes the same bytes, and makes the same record,
 * as the result with every verdict. */
static void bound_as_the_engine(struct pl_result *res, struct rc_arena *a)
{
    for (size_t i = 0; i < res->ndecisions; i++) {
        struct pl_decision *d = &res->decisions[i];
        unsigned char *keep = rc_arena_calloc(a, d->nverdicts + 1, 1);
        struct pl_verdict *v = rc_arena_calloc(a, d->nverdicts + 1, sizeof(*v));
        size_t n = 0;

        d->verdicts_omitted = pl_verdicts_select(
            keep, d->verdict_counts, d, RD_RECORD_CHOSEN_VERDICTS, RD_RECORD_PASSED_VERDICTS);
        if (!d->verdicts_omitted) {
            memset(d->verdict_counts, 0, sizeof(d->verdict_counts));
            continue;
        }
        for (size_t k = 0; k < d->nverdicts; k++) {
            if (keep[k])
                v[n++] = d->verdicts[k];
        }
        d->verdicts = v;
        d->nverdicts = n;
    }
}

static void test_rd_record__bounded_result_same_record(void **state)
{
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_err err = RC_ERR_INIT;
    struct rc_buf one = RC_BUF_INIT, two = RC_BUF_INIT;
    struct pl_result res;
    struct rd_record made_whole, made_bounded;
    struct rd_render_options opts = RD_RENDER_OPTIONS_INIT;
    size_t nbounded = 0;

    (void)state;
    make_varied(&res, &opts, &a);
    assert_int_equal(rd_record_emit(&one, &res, &opts, &err), 0);
    assert_int_equal(rd_record_of_result(&made_whole, &res, &opts, &a), 0);
    bound_as_the_engine(&res, &a);
    for (size_t i = 0; i < res.ndecisions; i++)
        nbounded += res.decisions[i].verdicts_omitted != 0;
    assert_true(nbounded > 0);
    assert_int_equal(rd_record_emit(&two, &res, &opts, &err), 0);
    assert_int_equal(two.len, one.len);
    assert_memory_equal(two.ptr, one.ptr, one.len);
    assert_int_equal(rd_record_of_result(&made_bounded, &res, &opts, &a), 0);
    th_assert_records_equal(&made_bounded, &made_whole);
    rc_buf_release(&one);
    rc_buf_release(&two);
    rc_arena_release(&a);
}

/* Entries are written on several threads when there are many: the bytes, the memo's work
 * and a failure are those of one thread. */
static void test_rd_record__threads_write_the_same_bytes(void **state)
{
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_err err = RC_ERR_INIT, err1 = RC_ERR_INIT;
    struct rc_buf one = RC_BUF_INIT, two = RC_BUF_INIT;
    struct pl_result res;
    struct rd_render_options opts = RD_RENDER_OPTIONS_INIT;
    struct rd_record_memo *memo = NULL;
    struct rd_record_stats st;
    enum { N = 5000 };

    (void)state;
    make_result(&res, N, 10, &a);
    opts.threads = 1;
    assert_int_equal(rd_record_emit(&one, &res, &opts, &err), 0);
    for (int t = 2; t <= 4; t++) {
        opts.threads = t;
        rc_buf_reset(&two);
        assert_int_equal(rd_record_emit(&two, &res, &opts, &err), 0);
        assert_int_equal(two.len, one.len);
        assert_memory_equal(two.ptr, one.ptr, one.len);
    }

    /* a memo, written on 4 threads; then three changed entries far apart: those alone */
    rd_record_memo_new(&memo);
    opts.record_memo = memo;
    rc_buf_reset(&two);
    assert_int_equal(rd_record_emit(&two, &res, &opts, &err), 0);
    assert_memory_equal(two.ptr, one.ptr, one.len);
    res.decisions[3].reason = "moved";
    res.decisions[2600].reason = "moved too";
    res.decisions[N - 1].targets[0].cluster = "cluster-009";
    rc_buf_reset(&two);
    assert_int_equal(rd_record_emit(&two, &res, &opts, &err), 0);
    st = rd_record_memo_stats(memo);
    assert_int_equal(st.units_written, 3);
    assert_int_equal(st.units_kept, N - 3);
    opts.record_memo = NULL;
    opts.threads = 1;
    rc_buf_reset(&one);
    assert_int_equal(rd_record_emit(&one, &res, &opts, &err), 0);
    assert_int_equal(two.len, one.len);
    assert_memory_equal(two.ptr, one.ptr, one.len);

    /* an entry that cannot be written, in the last share: the error of one thread, and
     * nothing written */
    res.decisions[N - 2].reason = "not \xff UTF-8";
    rc_buf_reset(&one);
    assert_true(rd_record_emit(&one, &res, &opts, &err1) < 0);
    opts.threads = 4;
    rc_buf_reset(&two);
    assert_int_equal(rd_record_emit(&two, &res, &opts, &err), err1.code);
    assert_string_equal(err.msg, err1.msg);
    assert_int_equal(two.len, 0);

    rd_record_memo_free(memo);
    rc_buf_release(&one);
    rc_buf_release(&two);
    rc_arena_release(&a);
}

/* The record, written member by member and unit by unit, is the canonical text of the whole
 * document (load + emit gives it back). With a memo, a record in which one decision changed
 * writes that one entry and copies the others, and has the bytes written without a memo. */
static void test_rd_record__memo_writes_only_changed_entries(void **state)
{
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_err err = RC_ERR_INIT;
    struct rc_buf one = RC_BUF_INIT, two = RC_BUF_INIT, whole = RC_BUF_INIT;
    struct pl_result res;
    struct rd_render_options opts = RD_RENDER_OPTIONS_INIT;
    struct rd_record_memo *memo = NULL;
    struct rd_record_stats st;
    struct rd_docs *docs = NULL;
    struct rd_yaml_limits lim = RD_YAML_LIMITS_INIT;

    (void)state;
    make_varied(&res, &opts, &a);
    assert_int_equal(rd_record_emit(&one, &res, &opts, &err), 0);
    if (rd_yaml_load(&docs, "placements.yaml", one.ptr, one.len, &lim, NULL, &err) < 0)
        fail_msg("%s", err.msg);
    assert_int_equal(rd_yaml_emit(&whole, rd_docs_get(docs, 0), &err), 0);
    rd_docs_free(docs);
    assert_int_equal(whole.len, one.len);
    assert_memory_equal(whole.ptr, one.ptr, one.len);

    rd_record_memo_new(&memo);
    opts.record_memo = memo;
    rc_buf_reset(&two);
    assert_int_equal(rd_record_emit(&two, &res, &opts, &err), 0);
    st = rd_record_memo_stats(memo);
    assert_int_equal(st.units_written, res.ndecisions - 1);
    assert_int_equal(st.units_kept, 0);
    assert_int_equal(st.warnings_written, 4);
    assert_int_equal(two.len, one.len);
    assert_memory_equal(two.ptr, one.ptr, one.len);

    /* again: everything copied, the same bytes */
    rc_buf_reset(&two);
    assert_int_equal(rd_record_emit(&two, &res, &opts, &err), 0);
    st = rd_record_memo_stats(memo);
    assert_int_equal(st.units_written, 0);
    assert_int_equal(st.units_kept, res.ndecisions - 1);
    assert_int_equal(st.warnings_written, 0);
    assert_int_equal(st.warnings_kept, 4);
    assert_memory_equal(two.ptr, one.ptr, one.len);

    /* one decision moves, one verdict's detail changes, a warning changes: those are written */
    res.decisions[10].targets[0].cluster = "cluster-011";
    res.decisions[11].verdicts[0].detail = "changed";
    res.decisions[11].nverdicts = 12;
    opts.warnings = (const char *const[]){"a.yaml:3: one", "two\nlines", "no"};
    rc_buf_reset(&two);
    assert_int_equal(rd_record_emit(&two, &res, &opts, &err), 0);
    st = rd_record_memo_stats(memo);
    assert_int_equal(st.units_written, 2);
    assert_int_equal(st.warnings_written, 1);
    opts.record_memo = NULL;
    rc_buf_reset(&one);
    assert_int_equal(rd_record_emit(&one, &res, &opts, &err), 0);
    assert_int_equal(two.len, one.len);
    assert_memory_equal(two.ptr, one.ptr, one.len);

    /* a warning added before the others (a new file's) is the one written: the rest are
     * found by their text where they moved; then one removed writes none */
    opts.record_memo = memo;
    opts.warnings = (const char *const[]){"0.yaml:1: first", "a.yaml:3: one", "two\nlines", "no"};
    opts.nwarnings = 4;
    rc_buf_reset(&two);
    assert_int_equal(rd_record_emit(&two, &res, &opts, &err), 0);
    st = rd_record_memo_stats(memo);
    assert_int_equal(st.warnings_written, 1);
    assert_int_equal(st.warnings_kept, 4);
    opts.warnings = (const char *const[]){"0.yaml:1: first", "two\nlines", "no"};
    opts.nwarnings = 3;
    rc_buf_reset(&two);
    assert_int_equal(rd_record_emit(&two, &res, &opts, &err), 0);
    st = rd_record_memo_stats(memo);
    assert_int_equal(st.warnings_written, 0);
    assert_int_equal(st.warnings_kept, 4);
    opts.record_memo = NULL;
    rc_buf_reset(&one);
    assert_int_equal(rd_record_emit(&one, &res, &opts, &err), 0);
    assert_int_equal(two.len, one.len);
    assert_memory_equal(two.ptr, one.ptr, one.len);

    rd_record_memo_free(memo);
    rc_buf_release(&one);
    rc_buf_release(&two);
    rc_buf_release(&whole);
    rc_arena_release(&a);
}

/* rd_record_emit_unless_same writes nothing for the memo's last record, byte for byte, and
 * writes whole (the bytes rd_record_emit gives) what differs from it anywhere: an entry, a
 * warning, a file error, the render options, a unit fewer. */
static void test_rd_record__unless_same_skips_the_memos_record(void **state)
{
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_err err = RC_ERR_INIT;
    struct rc_buf one = RC_BUF_INIT, two = RC_BUF_INIT;
    struct pl_result res;
    struct rd_render_options opts = RD_RENDER_OPTIONS_INIT, plain;
    struct rd_record_memo *memo = NULL;
    struct rd_file_error fe = {"broken.yaml", "broken.yaml:1:1: bad"};
    int same = -1;

    (void)state;
    make_varied(&res, &opts, &a);
    rd_record_memo_new(&memo);
    opts.record_memo = memo;
    plain = opts;
    plain.record_memo = NULL;
    /* a fresh memo has no last record: written */
    assert_int_equal(rd_record_emit_unless_same(&two, &same, &res, &opts, &err), 0);
    assert_int_equal(same, 0);
    assert_int_equal(rd_record_emit(&one, &res, &plain, &err), 0);
    assert_int_equal(two.len, one.len);
    assert_memory_equal(two.ptr, one.ptr, one.len);
    /* the same record: nothing written */
    rc_buf_reset(&two);
    assert_int_equal(rd_record_emit_unless_same(&two, &same, &res, &opts, &err), 0);
    assert_int_equal(same, 1);
    assert_int_equal(two.len, 0);

#define CHANGED_WRITES_WHOLE()                                                                     \
    do {                                                                                           \
        rc_buf_reset(&one);                                                                        \
        rc_buf_reset(&two);                                                                        \
        assert_int_equal(rd_record_emit_unless_same(&two, &same, &res, &opts, &err), 0);           \
        assert_int_equal(same, 0);                                                                 \
        assert_int_equal(rd_record_emit(&one, &res, &plain, &err), 0);                             \
        assert_int_equal(two.len, one.len);                                                        \
        assert_memory_equal(two.ptr, one.ptr, one.len);                                            \
        assert_int_equal(rd_record_emit_unless_same(&two, &same, &res, &opts, &err), 0);           \
        assert_int_equal(same, 1);                                                                 \
    } while (0)

    res.decisions[11].verdicts[0].detail = "changed"; /* an entry */
    CHANGED_WRITES_WHOLE();
    opts.warnings = plain.warnings = (const char *const[]){"a.yaml:3: one", "x", "no", "w"};
    CHANGED_WRITES_WHOLE(); /* a warning */
    opts.nfile_errors = plain.nfile_errors = 1;
    opts.file_errors = plain.file_errors = &fe;
    CHANGED_WRITES_WHOLE(); /* a file error */
    opts.pull = plain.pull = !opts.pull;
    CHANGED_WRITES_WHOLE(); /* the render digest */
    res.ndecisions--;
    CHANGED_WRITES_WHOLE(); /* a unit fewer */
#undef CHANGED_WRITES_WHOLE

    rd_record_memo_free(memo);
    rc_buf_release(&one);
    rc_buf_release(&two);
    rc_arena_release(&a);
}

/* The memo as the record cache file keeps it (digests, no bytes), read back in another
 * process: the record it was written with is told the same without being written; a changed
 * record is written whole, byte for byte as without a memo, and the memo then tells that one.
 * A memo keeping digests alone does the same in memory. Bytes cut short are refused. */
static void test_rd_record__memo_read_back_tells_the_same(void **state)
{
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_err err = RC_ERR_INIT;
    struct rc_buf one = RC_BUF_INIT, two = RC_BUF_INIT, bytes = RC_BUF_INIT;
    struct pl_result res;
    struct rd_render_options opts = RD_RENDER_OPTIONS_INIT, plain, back_opts;
    struct rd_record_memo *memo = NULL, *back = NULL, *lean = NULL;
    int same = -1;

    (void)state;
    make_varied(&res, &opts, &a);
    rd_record_memo_new(&memo);
    rd_record_memo_new(&back);
    opts.record_memo = memo;
    plain = opts;
    plain.record_memo = NULL;
    back_opts = opts;
    back_opts.record_memo = back;
    assert_int_equal(rd_record_emit_unless_same(&two, &same, &res, &opts, &err), 0);
    assert_int_equal(same, 0);
    rd_record_memo_export(memo, &bytes);
    for (size_t cut = 0; cut < bytes.len; cut++)
        assert_int_equal(rd_record_memo_import(back, bytes.ptr, cut), RC_EINVALID);
    assert_int_equal(rd_record_memo_import(back, bytes.ptr, bytes.len), RC_OK);
    rc_buf_reset(&two);
    assert_int_equal(rd_record_emit_unless_same(&two, &same, &res, &back_opts, &err), 0);
    assert_int_equal(same, 1);
    assert_int_equal(two.len, 0);

    /* one entry changed: the whole record, as without a memo */
    res.decisions[11].verdicts[0].detail = "changed";
    assert_int_equal(rd_record_emit_unless_same(&two, &same, &res, &back_opts, &err), 0);
    assert_int_equal(same, 0);
    assert_int_equal(rd_record_emit(&one, &res, &plain, &err), 0);
    assert_int_equal(two.len, one.len);
    assert_memory_equal(two.ptr, one.ptr, one.len);
    /* and the memo read back, now that record's, is read back again */
    rc_buf_reset(&bytes);
    rd_record_memo_export(back, &bytes);
    rd_record_memo_free(back);
    rd_record_memo_new(&back);
    back_opts.record_memo = back;
    assert_int_equal(rd_record_memo_import(back, bytes.ptr, bytes.len), RC_OK);
    rc_buf_reset(&two);
    assert_int_equal(rd_record_emit_unless_same(&two, &same, &res, &back_opts, &err), 0);
    assert_int_equal(same, 1);
    /* but not for the old record */
    res.decisions[11].verdicts[0].detail = "changed again";
    assert_int_equal(rd_record_emit_unless_same(&two, &same, &res, &back_opts, &err), 0);
    assert_int_equal(same, 0);

    /* digests alone, in memory */
    rd_record_memo_new(&lean);
    rd_record_memo_keep_bytes(lean, 0);
    back_opts.record_memo = lean;
    rc_buf_reset(&one);
    rc_buf_reset(&two);
    assert_int_equal(rd_record_emit_unless_same(&two, &same, &res, &back_opts, &err), 0);
    assert_int_equal(same, 0);
    assert_int_equal(rd_record_emit(&one, &res, &plain, &err), 0);
    assert_int_equal(two.len, one.len);
    assert_memory_equal(two.ptr, one.ptr, one.len);
    assert_int_equal(rd_record_emit_unless_same(&two, &same, &res, &back_opts, &err), 0);
    assert_int_equal(same, 1);

    rd_record_memo_free(memo);
    rd_record_memo_free(back);
    rd_record_memo_free(lean);
    rc_buf_release(&one);
    rc_buf_release(&two);
    rc_buf_release(&bytes);
    rc_arena_release(&a);
}

/* ==== .rightplace/capacity.yaml ==== */

/* 100 live clusters of 100 nodes, none alike (each node has its own requests, as observed
 * nodes do), and 20,000 units observed across them. */
static void test_rd_record__capacity_bench_scale_reads_back(void **state)
{
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_err err = RC_ERR_INIT;
    struct rc_buf one = RC_BUF_INIT, two = RC_BUF_INIT;
    struct pl_resnames res, res2;
    struct pl_cluster *cl = rc_arena_calloc(&a, BENCH_CLUSTERS, sizeof(*cl)), *back = NULL;
    size_t nback = 0, unit = 0;
    int gpu;

    (void)state;
    pl_resnames_init(&res);
    gpu = pl_resnames_intern(&res, &a, "nvidia.com/gpu");
    for (size_t c = 0; c < BENCH_CLUSTERS; c++) {
        struct pl_cluster *k = &cl[c];
        k->name = cluster_name(&a, c);
        pl_labels_set(&k->labels, &a, "kubernetes.io/metadata.name", k->name);
        pl_labels_set(&k->labels, &a, "region", c % 2 ? "east" : "west");
        k->live = 1;
        k->reachable = 1;
        k->autoscaler = c % 5 == 0 ? PL_AUTOSCALER_LUNA : PL_AUTOSCALER_NONE;
        k->any_shape = c % 5 == 0;
        k->nnodes = BENCH_NODES;
        k->nodes = rc_arena_calloc(&a, BENCH_NODES, sizeof(*k->nodes));
        for (size_t n = 0; n < BENCH_NODES; n++) {
            struct pl_node *nd = &k->nodes[n];
            int is_gpu = n >= 80;
            nd->name = rc_arena_printf(&a, "%s-node-%03zu", k->name, n);
            nd->allocatable.v[PL_RES_CPU] = is_gpu ? 96000 : 32000;
            nd->allocatable.v[PL_RES_MEMORY] = (int64_t)128 << 40;
            nd->allocatable.v[PL_RES_PODS] = 110000;
            if (is_gpu)
                nd->allocatable.v[gpu] = 8000;
            nd->requested.v[PL_RES_CPU] = (int64_t)(100 + n * 10 + c);
            nd->requested.v[PL_RES_MEMORY] = (int64_t)(n + 1) << 30;
            nd->requested.v[PL_RES_PODS] = (int64_t)(1 + n % 7) * 1000;
            pl_labels_set(&nd->labels, &a, "kubernetes.io/hostname", nd->name);
            pl_labels_set(&nd->labels, &a, "node.kubernetes.io/instance-type",
                          is_gpu ? "p4d.24xlarge" : "m5.8xlarge");
            pl_labels_set(&nd->labels, &a, "topology.kubernetes.io/zone",
                          n % 3 ? "zone-a" : "zone-b");
        }
        k->npresent = BENCH_UNITS / BENCH_CLUSTERS;
        k->present = rc_arena_calloc(&a, k->npresent, sizeof(*k->present));
        for (size_t p = 0; p < k->npresent; p++) {
            char label[17];
            pl_unit_label(rc_arena_printf(&a, "unit-%zu", unit++), label);
            k->present[p] = rc_arena_strdup(&a, label);
        }
        qsort(k->present, k->npresent, sizeof(*k->present),
              (int (*)(const void *, const void *))strcmp);
    }
    assert_int_equal(rd_capacity_emit(&one, cl, BENCH_CLUSTERS, &res, NULL, 0, "x", &err), 0);
    pl_resnames_init(&res2);
    if (rd_capacity_parse(&back, &nback, &res2, one.ptr, one.len, &a, &err) < 0)
        fail_msg("%s", err.msg);
    assert_int_equal(nback, BENCH_CLUSTERS);
    assert_int_equal(back[99].nnodes, BENCH_NODES);
    assert_int_equal(back[99].npresent, BENCH_UNITS / BENCH_CLUSTERS);
    assert_int_equal(rd_capacity_emit(&two, back, nback, &res2, NULL, 0, "x", &err), 0);
    assert_int_equal(one.len, two.len);
    assert_memory_equal(one.ptr, two.ptr, one.len);
    rc_buf_release(&one);
    rc_buf_release(&two);
    rc_arena_release(&a);
}

/* ==== The item reader's own limits ==== */

struct count {
    size_t items;
};

static int count_item(void *payload, const cJSON *item, const struct rd_docs *docs,
                      struct rc_err *err)
{
    struct count *c = payload;

    (void)item;
    (void)docs;
    (void)err;
    c->items++;
    return 0;
}

/* More nodes in all than the per-file limit: fine, item by item. One item over it, an alias
 * to another item's anchor, or a billion laughs inside one item: refused. */
static void test_rd_record__items_budget_is_per_item(void **state)
{
    struct rc_err err = RC_ERR_INIT;
    struct rc_buf b = RC_BUF_INIT;
    struct rd_yaml_limits lim = RD_YAML_LIMITS_INIT;
    struct count c = {0};
    struct rd_yaml_items items = {"units", count_item, &c, NULL, 0};
    struct rd_docs *docs = NULL;
    const char *cross = "kind: X\nunits:\n- &a {x: 1}\n- *a\n";
    const char *laughs = "units:\n- a: &a [x, x, x, x, x, x, x, x, x, x]\n"
                         "  b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
                         "  c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\n"
                         "  d: [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n";

    (void)state;
    lim.max_nodes = 1000;
    lim.max_bytes = 64u << 20;
    assert_int_equal(rc_buf_printf(&b, &err, "apiVersion: v1\nunits:\n"), 0);
    for (int i = 0; i < 2000; i++)
        assert_int_equal(rc_buf_printf(&b, &err, "- {a: %d, b: [1, 2, 3]}\n", i), 0);
    assert_int_equal(rc_buf_printf(&b, &err, "kind: After\n"), 0);
    if (rd_yaml_load_items(&docs, "r.yaml", b.ptr, b.len, &lim, &items, 1, &err) < 0)
        fail_msg("%s", err.msg);
    assert_int_equal(c.items, 2000);
    assert_string_equal(cJSON_GetObjectItem(rd_docs_get(docs, 0), "kind")->valuestring, "After");
    assert_true(cJSON_IsArray(cJSON_GetObjectItem(rd_docs_get(docs, 0), "units")));
    rd_docs_free(docs);

    /* the plain loader refuses the same input: its budget is for the whole file */
    assert_int_equal(rd_yaml_load(&docs, "r.yaml", b.ptr, b.len, &lim, NULL, &err), RC_EINVALID);
    assert_non_null(strstr(err.msg, "more than 1000 nodes"));

    assert_int_equal(
        rd_yaml_load_items(&docs, "r.yaml", cross, strlen(cross), &lim, &items, 1, &err),
        RC_EINVALID);
    assert_non_null(strstr(err.msg, "r.yaml:4:3: unknown anchor 'a'"));
    assert_int_equal(
        rd_yaml_load_items(&docs, "r.yaml", laughs, strlen(laughs), &lim, &items, 1, &err),
        RC_EINVALID);
    assert_non_null(strstr(err.msg, "more than 1000 nodes"));
    rc_buf_release(&b);
}

/* ==== What grows inside one item ==== */

#define BIG_OBJECTS 1100000
#define WIDE_COPIES 1050000
#define WIDE_SHARES 200000
#define MANY_ERRORS 250000
/* The record lists RD_RECORD_WARNINGS warnings and counts the rest: a fleet whose every file
 * warns (10,000 copies of skyray's manifest and its duplicate key) made a header of 1.1 MB,
 * written again by every commit that changed a shard. The memo copies the listed ones as
 * before, and the record reads back. */
static void test_rd_record__warnings_listed_are_bounded(void **state)
{
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_err err = RC_ERR_INIT;
    struct rc_buf one = RC_BUF_INIT, two = RC_BUF_INIT, more = RC_BUF_INIT;
    struct rd_render_options opts = RD_RENDER_OPTIONS_INIT;
    struct rd_record_memo *memo = NULL;
    struct rd_record_stats st;
    struct pl_result res;
    struct rd_record rec;
    size_t n = 10000;
    const char **warn = rc_arena_calloc(&a, n, sizeof(*warn));
    char want[64];

    (void)state;
    make_result(&res, 4, 10, &a);
    for (size_t i = 0; i < n; i++)
        warn[i] = rc_arena_printf(&a,
                                  "jobs/job-%05zu.yaml:12:3: duplicate key 'env' (the last "
                                  "one is used, as kubectl does)",
                                  i);
    opts.warnings = warn;
    opts.nwarnings = 250;
    assert_int_equal(rd_record_emit(&one, &res, &opts, &err), 0);
    assert_int_equal(th_count(one.ptr, "duplicate key"), RD_RECORD_WARNINGS);
    snprintf(want, sizeof(want), "job-%05d.yaml:12:3", RD_RECORD_WARNINGS - 1);
    th_assert_contains(one.ptr, want);
    snprintf(want, sizeof(want), "job-%05d.yaml:12:3", RD_RECORD_WARNINGS);
    assert_null(strstr(one.ptr, want));
    snprintf(want, sizeof(want), "\nwarningsOmitted: %d\n", 250 - RD_RECORD_WARNINGS);
    th_assert_contains(one.ptr, want);
    if (rd_record_parse(&rec, one.ptr, one.len, &a, &err) < 0)
        fail_msg("%s", err.msg);
    assert_int_equal(rec.nunits, 4);

    /* 10,000: the same size but for the count */
    opts.nwarnings = n;
    assert_int_equal(rd_record_emit(&more, &res, &opts, &err), 0);
    assert_int_equal(more.len, one.len + 1); /* "150" -> "9900" */

    /* with a memo: the listed ones written once, then copied; the same bytes as without */
    rd_record_memo_new(&memo);
    opts.record_memo = memo;
    assert_int_equal(rd_record_emit(&two, &res, &opts, &err), 0);
    st = rd_record_memo_stats(memo);
    assert_int_equal(st.warnings_written, RD_RECORD_WARNINGS);
    rc_buf_reset(&two);
    assert_int_equal(rd_record_emit(&two, &res, &opts, &err), 0);
    st = rd_record_memo_stats(memo);
    assert_int_equal(st.warnings_written, 0);
    assert_int_equal(st.warnings_kept, RD_RECORD_WARNINGS);
    assert_int_equal(two.len, more.len);
    assert_memory_equal(two.ptr, more.ptr, more.len);
    /* what was reported is every warning, listed or not (the log's "as reported") */
    {
        size_t nd = 0;
        uint64_t *d = rd_record_memo_reported_digests(memo, &nd, &a);
        assert_int_equal(nd, n);
        assert_true(rd_record_warning_listed(d, nd, warn[n - 1]));
    }

    rd_record_memo_free(memo);
    rc_buf_release(&one);
    rc_buf_release(&two);
    rc_buf_release(&more);
    rc_arena_release(&a);
}

#define MANY_WARNINGS 1050000

/* Each list of a record that grows with the source or the fleet, past what one item or the
 * rest of the file may hold (1,000,000 nodes): a unit of 1,100,000 objects, one copied to
 * 1,050,000 clusters, one divided over 200,000 (a share is five nodes), and a header listing
 * 250,000 broken files (five nodes each) and 1,050,000 warnings. The record reads back
 * whole, its long lists streamed one element at a time. */
static void test_rd_record__entries_past_the_node_limit_read_back(void **state)
{
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_err err = RC_ERR_INIT;
    struct rc_buf one = RC_BUF_INIT;
    struct rd_render_options opts = RD_RENDER_OPTIONS_INIT;
    struct pl_result res;
    struct rd_record rec;
    struct pl_decision *big, *wide, *divided;
    struct rd_file_error *fe = rc_arena_calloc(&a, MANY_ERRORS, sizeof(*fe));
    const char **warn = rc_arena_calloc(&a, MANY_WARNINGS, sizeof(*warn));

    (void)state;
    make_result(&res, 4, 10, &a);
    big = &res.decisions[0];
    big->nobjects = BIG_OBJECTS;
    big->object_keys = rc_arena_calloc(&a, BIG_OBJECTS, sizeof(*big->object_keys));
    big->objects = rc_arena_calloc(&a, BIG_OBJECTS, sizeof(*big->objects));
    for (size_t i = 0; i < BIG_OBJECTS; i++)
        big->object_keys[i] = rc_arena_printf(&a, "team-00/ConfigMap/code-%07zu", i);
    wide = &res.decisions[1];
    wide->ntargets = WIDE_COPIES;
    wide->targets = rc_arena_calloc(&a, WIDE_COPIES, sizeof(*wide->targets));
    for (size_t i = 0; i < WIDE_COPIES; i++) {
        wide->targets[i].cluster = rc_arena_printf(&a, "edge-%07zu", i);
        wide->targets[i].percent = 100;
    }
    divided = &res.decisions[2];
    divided->ntargets = WIDE_SHARES;
    divided->targets = rc_arena_calloc(&a, WIDE_SHARES, sizeof(*divided->targets));
    for (size_t i = 0; i < WIDE_SHARES; i++) {
        divided->targets[i].cluster = wide->targets[i].cluster;
        divided->targets[i].percent = i < 100 ? 1 : 0;
    }
    for (size_t i = 0; i < MANY_ERRORS; i++) {
        fe[i].path = rc_arena_printf(&a, "jobs/job-%06zu.yaml", i);
        fe[i].msg = rc_arena_printf(&a, "%s:3:1: found a tab character", fe[i].path);
    }
    for (size_t i = 0; i < MANY_WARNINGS; i++)
        warn[i] = rc_arena_printf(&a, "w%07zu", i);
    opts.nfile_errors = MANY_ERRORS;
    opts.file_errors = fe;
    opts.nwarnings = MANY_WARNINGS;
    opts.warnings = warn;
    assert_int_equal(rd_record_emit(&one, &res, &opts, &err), 0);
    if (rd_record_parse(&rec, one.ptr, one.len, &a, &err) < 0)
        fail_msg("%s", err.msg);
    assert_int_equal(rec.nunits, 4);
    assert_int_equal(rec.units[0].nobjects, BIG_OBJECTS);
    for (size_t i = 0; i < BIG_OBJECTS; i++)
        assert_string_equal(rec.units[0].objects[i], big->object_keys[i]);
    assert_int_equal(rec.units[1].nclusters, WIDE_COPIES);
    for (size_t i = 0; i < WIDE_COPIES; i++)
        assert_string_equal(rec.units[1].clusters[i], wide->targets[i].cluster);
    assert_int_equal(rec.units[2].nclusters, WIDE_SHARES);
    assert_int_equal(rec.units[3].nobjects, 2);
    assert_int_equal(rec.units[3].nclusters, 1);
    assert_string_equal(rec.units[3].clusters[0], res.decisions[3].targets[0].cluster);

    /* what was read is what was written: written again from it, the same bytes */
    assert_written_again_alike(&one, &res, &rec, opts, &a);
    rc_buf_release(&one);
    rc_arena_release(&a);
}

#define BIG_NODES 40000
#define BIG_PRESENT 1050000
#define MANY_SHAPES 100000

/* One live cluster of 40,000 nodes, none alike, on which 1,050,000 units were observed, and
 * one whose autoscaler offers 100,000 shapes: each of those lists holds more nodes than a
 * cluster's entry may (1,000,000), and the snapshot reads back, byte for byte. */
static void test_rd_record__capacity_cluster_past_the_node_limit_reads_back(void **state)
{
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_err err = RC_ERR_INIT;
    struct rc_buf one = RC_BUF_INIT, two = RC_BUF_INIT;
    struct pl_resnames res, res2;
    struct pl_cluster *cl = rc_arena_calloc(&a, 2, sizeof(*cl)), *back = NULL;
    size_t nback = 0;

    (void)state;
    pl_resnames_init(&res);
    for (size_t c = 0; c < 2; c++) {
        struct pl_cluster *k = &cl[c];
        size_t nnodes = c ? 3 : BIG_NODES;

        k->name = cluster_name(&a, c);
        k->live = 1;
        k->reachable = 1;
        k->autoscaler = PL_AUTOSCALER_CLUSTER_AUTOSCALER;
        k->nshapes = c ? MANY_SHAPES : 2;
        k->shapes = rc_arena_calloc(&a, k->nshapes, sizeof(*k->shapes));
        for (size_t s = 0; s < k->nshapes; s++) {
            k->shapes[s].name = rc_arena_printf(&a, "shape-%06zu", s);
            k->shapes[s].max = 10;
            k->shapes[s].allocatable.v[PL_RES_CPU] = 32000;
            k->shapes[s].allocatable.v[PL_RES_PODS] = 110000;
        }
        k->nnodes = nnodes;
        k->nodes = rc_arena_calloc(&a, nnodes, sizeof(*k->nodes));
        for (size_t n = 0; n < nnodes; n++) {
            struct pl_node *nd = &k->nodes[n];
            nd->name = rc_arena_printf(&a, "%s-node-%05zu", k->name, n);
            nd->allocatable.v[PL_RES_CPU] = 32000;
            nd->allocatable.v[PL_RES_MEMORY] = (int64_t)128 << 30;
            nd->allocatable.v[PL_RES_PODS] = 110000;
            nd->requested.v[PL_RES_CPU] = (int64_t)(100 + n);
            nd->requested.v[PL_RES_MEMORY] = (int64_t)(n % 64 + 1) << 30;
            nd->requested.v[PL_RES_PODS] = (int64_t)(1 + n % 7) * 1000;
            pl_labels_set(&nd->labels, &a, "kubernetes.io/hostname", nd->name);
            pl_labels_set(&nd->labels, &a, "topology.kubernetes.io/zone",
                          n % 3 ? "zone-a" : "zone-b");
        }
        k->npresent = c ? 1 : BIG_PRESENT;
        k->present = rc_arena_calloc(&a, k->npresent, sizeof(*k->present));
        for (size_t p = 0; p < k->npresent; p++)
            k->present[p] = rc_arena_printf(&a, "%016zx", p);
    }
    assert_int_equal(rd_capacity_emit(&one, cl, 2, &res, NULL, 0, "x", &err), 0);
    pl_resnames_init(&res2);
    if (rd_capacity_parse(&back, &nback, &res2, one.ptr, one.len, &a, &err) < 0)
        fail_msg("%s", err.msg);
    assert_int_equal(nback, 2);
    assert_int_equal(back[0].nnodes, BIG_NODES);
    assert_int_equal(back[0].nshapes, 2);
    assert_int_equal(back[0].npresent, BIG_PRESENT);
    assert_string_equal(back[0].present[BIG_PRESENT - 1], cl[0].present[BIG_PRESENT - 1]);
    assert_int_equal(back[1].nnodes, 3);
    assert_int_equal(back[1].nshapes, MANY_SHAPES);
    assert_string_equal(back[1].shapes[MANY_SHAPES - 1].name, cl[1].shapes[MANY_SHAPES - 1].name);
    assert_int_equal(back[1].npresent, 1);
    assert_int_equal(rd_capacity_emit(&two, back, nback, &res2, NULL, 0, "x", &err), 0);
    assert_int_equal(one.len, two.len);
    assert_memory_equal(one.ptr, two.ptr, one.len);
    rc_buf_release(&one);
    rc_buf_release(&two);
    rc_arena_release(&a);
}

struct lists_seen {
    size_t items, strs, empty_lists;
    char last[32];
};

static int seen_str(void *payload, const cJSON *elem, const struct rd_docs *docs,
                    struct rc_err *err)
{
    struct lists_seen *s = payload;

    if (!cJSON_IsString(elem)) {
        struct rd_pos p = rd_docs_pos(docs, elem);
        return rc_err_set(err, RC_EINVALID, "r.yaml:%d:%d: not a string", p.line, p.col);
    }
    s->strs++;
    snprintf(s->last, sizeof(s->last), "%s", elem->valuestring);
    return 0;
}

static int seen_item(void *payload, const cJSON *item, const struct rd_docs *docs,
                     struct rc_err *err)
{
    struct lists_seen *s = payload;
    const cJSON *objs = cJSON_GetObjectItem(item, "objects");

    (void)docs;
    (void)err;
    s->items++;
    s->empty_lists += cJSON_IsArray(objs) && cJSON_GetArraySize(objs) == 0;
    return 0;
}

/* The lists inside an item are streamed with budgets of their own: an item whose list holds
 * more nodes than the limit loads, an element over it does not; an element that is not what
 * its reader wants is reported at its line; anchors do not reach into or out of an element;
 * a merge key or a repeated streamed key in such an item is refused; a list nobody reads
 * (each NULL) is read past within the same budgets. */
static void test_rd_record__lists_budget_is_per_element(void **state)
{
    struct rc_err err = RC_ERR_INIT;
    struct rc_buf b = RC_BUF_INIT;
    struct rd_yaml_limits lim = RD_YAML_LIMITS_INIT;
    struct lists_seen s = {0};
    struct rd_yaml_items inner[] = {{"objects", seen_str, &s, NULL, 0},
                                    {"shares", NULL, NULL, NULL, 0}};
    struct rd_yaml_items items = {"units", seen_item, &s, inner, 2};
    struct rd_docs *docs = NULL;
    static const struct {
        const char *text, *msg;
    } bad[] = {
        {"units:\n- unit: a\n  objects: [x, {k: v}]\n", "r.yaml:3:16: not a string"},
        {"units:\n- unit: &u a\n  objects: [*u]\n", "r.yaml:3:13: unknown anchor 'u'"},
        {"units:\n- objects: [&o x]\n  unit: *o\n", "r.yaml:3:9: unknown anchor 'o'"},
        {"units:\n- <<: {unit: a}\n  objects: []\n", "merge keys are not supported in this item"},
        {"units:\n- objects: [a]\n  objects: [b]\n", "r.yaml:3:3: key 'objects' appears twice"},
        {"units:\n- shares: [[&a [x, x, x, x, x, x, x, x, x, x], [*a, *a, *a, *a, *a, *a, *a, *a, "
         "*a, *a, *a], [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a, *a]]]\n",
         "more than 100 nodes"},
    };

    (void)state;
    lim.max_nodes = 100;
    lim.max_bytes = 64u << 20;
    assert_int_equal(rc_buf_printf(&b, &err, "units:\n- unit: a\n  objects:\n"), 0);
    for (int i = 0; i < 1000; i++)
        assert_int_equal(rc_buf_printf(&b, &err, "  - o-%04d\n", i), 0);
    assert_int_equal(rc_buf_printf(&b, &err, "  shares:\n"), 0);
    for (int i = 0; i < 1000; i++)
        assert_int_equal(rc_buf_printf(&b, &err, "  - {cluster: c-%04d, percent: 1}\n", i), 0);
    assert_int_equal(rc_buf_printf(&b, &err, "  state: placed\n- unit: b\n  objects: [p]\n"), 0);
    if (rd_yaml_load_items(&docs, "r.yaml", b.ptr, b.len, &lim, &items, 1, &err) < 0)
        fail_msg("%s", err.msg);
    assert_int_equal(s.items, 2);
    assert_int_equal(s.strs, 1001);
    assert_int_equal(s.empty_lists, 2);
    assert_string_equal(s.last, "p");
    rd_docs_free(docs);
    /* without the inner lists, the first item alone is over the limit */
    items.ninner = 0;
    assert_int_equal(rd_yaml_load_items(&docs, "r.yaml", b.ptr, b.len, &lim, &items, 1, &err),
                     RC_EINVALID);
    assert_non_null(strstr(err.msg, "more than 100 nodes"));
    items.ninner = 2;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(rd_yaml_load_items(&docs, "r.yaml", bad[i].text, strlen(bad[i].text), &lim,
                                            &items, 1, &err),
                         RC_EINVALID);
        if (!strstr(err.msg, bad[i].msg))
            fail_msg("case %zu: '%s' does not say '%s'", i, err.msg, bad[i].msg);
    }
    rc_buf_release(&b);
}

/* `shares` is read back as each cluster's percent, in the order of `clusters`; shares that do
 * not read, or do not name each cluster once, leave the unit without percents (rendered
 * again) and the record readable. */
static void test_rd_record__shares_read_back(void **state)
{
    static const struct {
        const char *shares;
        int64_t a, b; /* -1: no percents */
    } cases[] = {
        {"[{cluster: a, percent: 30}, {cluster: b, percent: 70}]", 30, 70},
        {"[{cluster: b, percent: 70}, {cluster: a, percent: 30}]", 30, 70},
        {"[{cluster: a, percent: 0}, {cluster: b, percent: 100}]", 0, 100},
        {"[{cluster: a, percent: 30}]", -1, -1},
        {"[{cluster: a, percent: 30}, {cluster: c, percent: 70}]", -1, -1},
        {"[{cluster: a, percent: 30}, {cluster: a, percent: 70}]", -1, -1},
        {"[{cluster: a, percent: 30.5}, {cluster: b, percent: 69.5}]", -1, -1},
        {"[{cluster: a, percent: '30'}, {cluster: b, percent: 70}]", -1, -1},
        {"[{cluster: a, percent: 130}, {cluster: b, percent: 70}]", -1, -1},
        {"[[a, 30], [b, 70]]", -1, -1},
        {"[]", -1, -1},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct rc_arena a = RC_ARENA_INIT;
        struct rc_err err = RC_ERR_INIT;
        struct rc_buf b = RC_BUF_INIT;
        struct rd_record rec;

        assert_int_equal(rc_buf_printf(&b, &err,
                                       "apiVersion: rightplace.dev/v1alpha1\n"
                                       "kind: PlacementRecord\nunits:\n"
                                       "- unit: p/ns/g\n  policy: p\n  objects: [ns/Deployment/d]\n"
                                       "  state: placed\n  clusters: [a, b]\n  shares: %s\n"
                                       "- unit: p/ns/h\n  policy: p\n  objects: [ns/Deployment/e]\n"
                                       "  state: placed\n  clusters: [a]\n",
                                       cases[i].shares),
                         0);
        if (rd_record_parse(&rec, b.ptr, b.len, &a, &err) < 0)
            fail_msg("case %zu: %s", i, err.msg);
        assert_int_equal(rec.nunits, 2);
        if (cases[i].a < 0) {
            assert_null(rec.units[0].percents);
        } else {
            assert_non_null(rec.units[0].percents);
            assert_int_equal(rec.units[0].percents[0], cases[i].a);
            assert_int_equal(rec.units[0].percents[1], cases[i].b);
        }
        assert_null(rec.units[1].percents); /* one entry's shares are not the next one's */
        rc_buf_release(&b);
        rc_arena_release(&a);
    }
}

/* The binary form of the record cache file gives back, field by field, what rd_record_parse
 * reads from the YAML: for every kind of entry (make_varied) and at the bench's largest scale
 * (20,000 units with bounded verdicts and tallies); packing what was unpacked gives the same
 * bytes. */
static void test_rd_record__unpack_is_what_parse_reads(void **state)
{
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_err err = RC_ERR_INIT;
    struct pl_result res;
    struct rd_render_options varied = RD_RENDER_OPTIONS_INIT;

    (void)state;
    for (int big = 0; big < 2; big++) {
        struct rc_buf yaml = RC_BUF_INIT, bin = RC_BUF_INIT, again = RC_BUF_INIT;
        struct rd_record read, back;
        const struct rd_render_options *opts = NULL;
        if (big) {
            make_result(&res, BENCH_UNITS, BENCH_CLUSTERS, &a);
        } else {
            make_varied(&res, &varied, &a);
            opts = &varied;
        }
        assert_int_equal(rd_record_emit(&yaml, &res, opts, &err), 0);
        if (rd_record_parse(&read, yaml.ptr, yaml.len, &a, &err) < 0)
            fail_msg("%s", err.msg);
        rd_record_pack(&bin, &read);
        assert_true(bin.len < yaml.len);
        if (rd_record_unpack(&back, (const unsigned char *)bin.ptr, bin.len, &a, &err) < 0)
            fail_msg("%s", err.msg);
        assert_int_equal(back.nunits, big ? BENCH_UNITS : res.ndecisions - 1);
        th_assert_records_equal(&back, &read);
        rd_record_pack(&again, &back);
        assert_int_equal(again.len, bin.len);
        assert_memory_equal(again.ptr, bin.ptr, bin.len);
        rc_buf_release(&yaml);
        rc_buf_release(&bin);
        rc_buf_release(&again);
    }
    rc_arena_release(&a);
}

/* rd_record_unpack on every prefix of a packed record and every single-byte change of it:
 * never a crash (the ASan build runs this), and what it accepts is a record rd_record_parse
 * could give. Records the parser refuses are refused: a unit listed twice, a placed unit
 * without clusters, an unknown state or verdict kind. */
static void assert_parser_could_give(const struct rd_record *r)
{
    for (size_t i = 0; i < r->nunits; i++) {
        const struct pl_prev_unit *u = &r->units[i];
        assert_non_null(u->unit);
        assert_true(u->state <= PL_STATE_UNPLACED);
        assert_true(u->state != PL_STATE_PLACED || u->nclusters > 0);
        for (size_t k = 0; k < u->nverdicts; k++) {
            assert_non_null(u->verdicts[k].cluster);
            assert_true(u->verdicts[k].kind <= PL_VERDICT_UNREACHABLE);
        }
    }
}

static void test_rd_record__unpack_takes_any_bytes(void **state)
{
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_err err = RC_ERR_INIT;
    struct rc_buf yaml = RC_BUF_INIT, bin = RC_BUF_INIT;
    struct pl_result res;
    struct rd_render_options opts = RD_RENDER_OPTIONS_INIT;
    struct rd_record read, back;
    unsigned char *damaged;
    size_t accepted = 0;

    (void)state;
    make_varied(&res, &opts, &a);
    assert_int_equal(rd_record_emit(&yaml, &res, &opts, &err), 0);
    assert_int_equal(rd_record_parse(&read, yaml.ptr, yaml.len, &a, &err), 0);
    rd_record_pack(&bin, &read);
    damaged = malloc(bin.len);
    for (size_t cut = 0; cut <= bin.len; cut++) {
        for (int flip = 0; flip < 3; flip++) {
            struct rc_arena tmp = RC_ARENA_INIT;
            size_t n = flip ? bin.len : cut;
            int rc;
            if (flip && cut == bin.len)
                break;
            memcpy(damaged, bin.ptr, bin.len);
            if (flip)
                damaged[cut] ^= flip == 1 ? 0x01 : 0x80;
            /* an exact-size copy: any read past the end is an ASan error */
            {
                unsigned char *exact = malloc(n ? n : 1);
                memcpy(exact, damaged, n);
                rc = rd_record_unpack(&back, exact, n, &tmp, &err);
                free(exact);
            }
            if (rc == 0) {
                assert_parser_could_give(&back);
                accepted++;
            } else {
                assert_int_equal(rc, RC_EINVALID);
            }
            rc_arena_release(&tmp);
        }
    }
    assert_true(accepted > 0); /* the whole input at least */

    /* what the parser refuses (or, for shares, never gives) */
    for (int kind = 0; kind < 5; kind++) {
        static const int64_t percents[] = {50};
        struct rd_record bad = read;
        struct rc_buf b = RC_BUF_INIT;
        struct pl_prev_unit *u = rc_arena_calloc(&a, read.nunits + 1, sizeof(*u));
        struct pl_verdict *v;
        memcpy(u, read.units, read.nunits * sizeof(*u));
        bad.units = u;
        switch (kind) {
        case 0:
            u[1].unit = u[0].unit;
            break;
        case 1:
            u[2].state = PL_STATE_PLACED;
            u[2].nclusters = 0;
            break;
        case 2:
            u[2].state = (enum pl_state)7;
            break;
        case 3: /* shares for a unit on no cluster */
            u[2].state = PL_STATE_PENDING;
            u[2].nclusters = 0;
            u[2].percents = percents;
            break;
        default:
            assert_true(u[2].nverdicts > 0);
            v = rc_arena_calloc(&a, u[2].nverdicts, sizeof(*v));
            memcpy(v, u[2].verdicts, u[2].nverdicts * sizeof(*v));
            v[0].kind = (enum pl_verdict_kind)9;
            u[2].verdicts = v;
            break;
        }
        rd_record_pack(&b, &bad);
        assert_int_equal(rd_record_unpack(&back, (const unsigned char *)b.ptr, b.len, &a, &err),
                         RC_EINVALID);
        rc_buf_release(&b);
    }
    free(damaged);
    rc_buf_release(&yaml);
    rc_buf_release(&bin);
    rc_arena_release(&a);
}

/* ==== A record in shards ==== */

/* The blobs the tests "commit": each shard written, by its id (a repository's object store). */
struct store {
    size_t n;
    struct {
        char id[41];
        const char *text;
        size_t len;
    } v[4096];
};

static int blob_id(char out[41], const void *data, size_t len)
{
    struct rc_err err = RC_ERR_INIT;

    return rc_git_digest(out, data, len, &err);
}

static int store_fetch(void *payload, const char *id, size_t max, const char **text, size_t *len,
                       struct rc_arena *a, struct rc_err *err)
{
    struct store *st = payload;

    (void)a;
    for (size_t i = 0; i < st->n; i++) {
        if (!strcmp(st->v[i].id, id)) {
            if (st->v[i].len > max)
                return rc_err_set(err, RC_EINVALID, "blob %s: more than %zu bytes", id, max);
            *text = st->v[i].text;
            *len = st->v[i].len;
            return 0;
        }
    }
    return rc_err_set(err, RC_ENOTFOUND, "no blob %s", id);
}

/* The shards written (text), into the store (kept ones must be there already); returns how
 * many were written. The ids are checked against the bytes. */
static size_t store_put(struct store *st, const struct rd_record_files *f, struct rc_arena *a)
{
    size_t written = 0;

    for (size_t i = 0; i < f->nshards; i++) {
        const struct rd_record_shard *sh = &f->shards[i];
        const char *t;
        size_t len;
        if (!sh->text) { /* kept: the store has it */
            assert_int_equal(
                store_fetch(st, sh->id, (size_t)-1, &t, &len, a, &(struct rc_err)RC_ERR_INIT), 0);
            continue;
        }
        {
            char id[41];
            assert_int_equal(blob_id(id, sh->text, sh->len), 0);
            assert_string_equal(id, sh->id);
        }
        assert_true(st->n < sizeof(st->v) / sizeof(st->v[0]));
        memcpy(st->v[st->n].id, sh->id, 41);
        st->v[st->n].text = rc_arena_strndup(a, sh->text, sh->len);
        st->v[st->n].len = sh->len;
        st->n++;
        written++;
    }
    return written;
}

static void read_sharded(struct rd_record *rec, const struct rc_buf *head, struct store *st,
                         struct rc_arena *a)
{
    struct rc_err err = RC_ERR_INIT;

    if (rd_record_read(rec, head->ptr, head->len, store_fetch, st, NULL, a, &err) < 0)
        fail_msg("%s", err.msg);
}

/* Beyond the inline size the record is a header and shards: each unit in the shard its id
 * hashes to, each shard named in the header by its blob id and unit count; read back it is
 * the record in one file, and the one a result makes. The header refuses to be read as one
 * file, and old readers refuse its apiVersion. */
static void test_rd_record__shards_read_back_as_one_file(void **state)
{
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_err err = RC_ERR_INIT;
    struct rc_buf head = RC_BUF_INIT, whole = RC_BUF_INIT;
    struct pl_result res;
    struct rd_record sharded, inline_rec, made;
    struct rd_render_options opts = RD_RENDER_OPTIONS_INIT;
    struct rd_record_files f;
    struct rd_record_layout layout;
    struct store *st = calloc(1, sizeof(*st));
    int same = -1;

    (void)state;
    make_varied(&res, &opts, &a);
    opts.blob_id = blob_id;
    opts.record_inline_max = 16; /* 59 units, about 2 a shard: 32 shards */
    assert_int_equal(rd_record_shards_for(59, 16), 32);
    assert_int_equal(rd_record_shards_for(16, 16), 1);
    assert_int_equal(rd_record_shards_for(10000, 0), 128);
    assert_int_equal(rd_record_shards_for(1024, 0), 1);
    assert_int_equal(rd_record_emit_files(&head, &f, 0, &same, &res, &opts, &a, &err), 0);
    assert_int_equal(same, 0);
    assert_true(f.nshards > 16 && f.nshards <= 32);
    assert_int_equal(store_put(st, &f, &a), f.nshards);
    th_assert_contains(head.ptr, "apiVersion: rightplace.dev/v1alpha2\nkind: PlacementRecord\n");
    th_assert_contains(head.ptr, "\nshards: 32\nshardFiles:\n- file: placements/");
    assert_null(strstr(head.ptr, "\nunits:"));
    th_assert_contains(head.ptr, "warnings:\n"); /* the rest of the record stays in the header */
    for (size_t i = 0; i < f.nshards; i++) {
        char want[32];
        size_t k = (size_t)strtoul(f.shards[i].path + strlen("placements/"), NULL, 16);
        snprintf(want, sizeof(want), "placements/%03zx.yaml", k);
        assert_string_equal(f.shards[i].path, want);
        assert_true(i == 0 || strcmp(f.shards[i - 1].path, f.shards[i].path) < 0);
        th_assert_contains(f.shards[i].text, "apiVersion: rightplace.dev/v1alpha2\nkind: "
                                             "PlacementRecordShard\nunits:\n- unit: ");
        assert_int_equal(th_count(f.shards[i].text, "\n- unit: "), (int)f.shards[i].nunits);
    }

    if (rd_record_read(&sharded, head.ptr, head.len, store_fetch, st, &layout, &a, &err) < 0)
        fail_msg("%s", err.msg);
    assert_int_equal(layout.shards, 32);
    assert_int_equal(layout.nfiles, f.nshards);
    assert_string_equal(layout.files[0].id, f.shards[0].id);
    for (size_t i = 1; i < sharded.nunits; i++)
        assert_true(strcmp(sharded.units[i - 1].unit, sharded.units[i].unit) < 0);
    assert_int_equal(rd_record_emit(&whole, &res, &opts, &err), 0); /* one file */
    if (rd_record_parse(&inline_rec, whole.ptr, whole.len, &a, &err) < 0)
        fail_msg("%s", err.msg);
    th_assert_records_equal(&sharded, &inline_rec);
    assert_int_equal(rd_record_of_result(&made, &res, &opts, &a), 0);
    th_assert_records_equal(&made, &sharded);

    /* with the base's memo: a unit alone in its shard removed empties the shard, whose file
     * goes; that is a change of the header, not the same record */
    {
        struct rd_record_memo *memo = NULL;
        struct rd_record_files g;
        size_t alone = f.nshards, before = f.nshards;
        rd_record_memo_new(&memo);
        opts.record_memo = memo;
        rc_buf_reset(&head);
        assert_int_equal(rd_record_emit_files(&head, &f, 0, &same, &res, &opts, &a, &err), 0);
        opts.record_base_is_memo = 1;
        for (size_t i = 0; i < f.nshards && alone == f.nshards; i++)
            alone = f.shards[i].nunits == 1 ? i : alone;
        assert_true(alone < f.nshards);
        for (size_t i = 0; i < res.ndecisions; i++) {
            if (res.decisions[i].change != PL_CHANGE_REMOVED &&
                rd_record_shard_of(res.decisions[i].unit, 32) ==
                    (size_t)strtoul(f.shards[alone].path + 11, NULL, 16))
                res.decisions[i].change = PL_CHANGE_REMOVED;
        }
        rc_buf_reset(&head);
        assert_int_equal(rd_record_emit_files(&head, &g, 1, &same, &res, &opts, &a, &err), 0);
        assert_int_equal(same, 0);
        assert_int_equal(g.nshards, before - 1);
        assert_null(strstr(head.ptr, f.shards[alone].path));
        assert_int_equal(store_put(st, &g, &a), 0); /* the others are kept */
        opts.record_memo = NULL;
        opts.record_base_is_memo = 0;
        rd_record_memo_free(memo);
    }

    /* read as one file (no shards reader), or by a reader of the first apiVersion: refused */
    assert_int_equal(rd_record_parse(&inline_rec, head.ptr, head.len, &a, &err), RC_EINVALID);
    th_assert_contains(err.msg, "in shards");

    /* without a blob id function a record in shards cannot be written */
    opts.blob_id = NULL;
    rc_buf_reset(&head);
    assert_int_equal(rd_record_emit_files(&head, &f, 0, &same, &res, &opts, &a, &err), RC_EINVALID);
    th_assert_contains(err.msg, "no blob id function");
    free(st);
    rc_buf_release(&head);
    rc_buf_release(&whole);
    rc_arena_release(&a);
}

/* A record made over the base's (rd_record_of_result_over), right after the writer's memo wrote
 * the next record over the base's: the same record rd_record_of_result makes, for every kind
 * of entry, in one file and in shards, sharing the base's units whose entries did not change
 * (their strings are the base's) and making the others. Without a memo whose last record was
 * the base's, or with one of another record, it is refused (then the caller makes it whole). */
static void test_rd_record__of_result_over_shares_unchanged(void **state)
{
    (void)state;
    for (int sharded = 0; sharded < 2; sharded++) {
        struct rc_arena a = RC_ARENA_INIT, ba = RC_ARENA_INIT, oa = RC_ARENA_INIT;
        struct rc_err err = RC_ERR_INIT;
        struct rc_buf out = RC_BUF_INIT;
        struct rd_record_files f;
        struct pl_result res;
        struct rd_record base, over, whole;
        struct rd_render_options opts = RD_RENDER_OPTIONS_INIT;
        struct rd_record_memo *memo = NULL;
        size_t shared = 99, nsame = 0;
        int same;

        make_varied(&res, &opts, &a);
        if (sharded) {
            opts.blob_id = blob_id;
            opts.record_inline_max = 16;
        }
        rd_record_memo_new(&memo);
        opts.record_memo = memo;
        assert_int_equal(rd_record_emit_files(&out, &f, 0, &same, &res, &opts, &a, &err), 0);
        assert_int_equal(f.nshards != 0, sharded);
        assert_int_equal(rd_record_of_result(&base, &res, &opts, &ba), 0);
        /* no memo of the base yet: refused */
        assert_int_equal(rd_record_of_result_over(&over, &shared, &res, &opts, &base, &oa), -1);
        assert_int_equal(shared, 0);

        /* two entries change, a unit goes */
        res.decisions[10].targets[0].cluster = "cluster-011";
        res.decisions[11].verdicts[0].detail = "changed";
        res.decisions[20].change = PL_CHANGE_REMOVED;
        opts.record_base_is_memo = 1;
        rc_buf_reset(&out);
        assert_int_equal(rd_record_emit_files(&out, &f, 1, &same, &res, &opts, &a, &err), 0);
        assert_int_equal(same, 0);
        assert_int_equal(rd_record_of_result_over(&over, &shared, &res, &opts, &base, &oa), 0);
        assert_int_equal(rd_record_of_result(&whole, &res, &opts, &a), 0);
        th_assert_records_equal(&over, &whole);
        assert_int_equal(over.nunits, base.nunits - 1);
        assert_int_equal(shared, base.nunits - 3);
        for (size_t i = 0, j = 0; i < over.nunits; i++) {
            while (strcmp(base.units[j].unit, over.units[i].unit) < 0)
                j++;
            assert_string_equal(base.units[j].unit, over.units[i].unit);
            if (over.units[i].unit == base.units[j].unit) { /* shared, not copied */
                assert_ptr_equal(over.units[i].verdicts, base.units[j].verdicts);
                nsame++;
            } else {
                assert_true(!strcmp(over.units[i].unit, res.decisions[10].unit) ||
                            !strcmp(over.units[i].unit, res.decisions[11].unit));
            }
        }
        assert_int_equal(nsame, shared);
        /* the base may go once the record made over it is made whole (the cache's job) */
        rc_arena_release(&oa);

        /* the memo's last record is not the base's: refused */
        opts.record_base_is_memo = 0;
        assert_int_equal(rd_record_of_result_over(&over, &shared, &res, &opts, &base, &oa), -1);
        /* a memo of another record (a unit fewer): refused */
        opts.record_base_is_memo = 1;
        res.decisions[30].change = PL_CHANGE_REMOVED;
        rc_buf_reset(&out);
        assert_int_equal(rd_record_emit_files(&out, &f, 1, &same, &res, &opts, &a, &err), 0);
        res.decisions[30].change = PL_CHANGE_NONE;
        assert_int_equal(rd_record_of_result_over(&over, &shared, &res, &opts, &base, &oa), -1);

        rd_record_memo_free(memo);
        rc_buf_release(&out);
        rc_arena_release(&oa);
        rc_arena_release(&ba);
        rc_arena_release(&a);
    }
}

/* A record in shards packed by shard (the record cache file keeps it so): the head and the
 * shards' parts join into the record the writer wrote and the memo it wrote it with (their
 * exports the same bytes). A part under another index, parts out of order, two units swapped
 * in the order, an order naming a part that is not there and a shard count that is not a
 * power of two are refused; every cut or flipped byte of a part is refused or gives a record
 * the parser could give, never a crash. */
static void test_rd_record__packed_by_shard_joins_back(void **state)
{
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_err err = RC_ERR_INIT;
    struct rc_buf head = RC_BUF_INIT, packed_head = RC_BUF_INIT, want = RC_BUF_INIT;
    struct rc_buf got = RC_BUF_INIT, order = RC_BUF_INIT;
    struct pl_result res;
    struct rd_record made, back;
    struct rd_render_options opts = RD_RENDER_OPTIONS_INIT;
    struct rd_record_files f;
    struct rd_record_memo *memo = NULL, *read = NULL;
    size_t nsh, nparts = 0, *count, *index;
    struct rc_buf *parts;
    const unsigned char **pp;
    size_t *lens;
    int same = -1, memo_read = 0;

    (void)state;
    make_varied(&res, &opts, &a);
    opts.blob_id = blob_id;
    opts.record_inline_max = 16;
    rd_record_memo_new(&memo);
    rd_record_memo_keep_bytes(memo, 0);
    opts.record_memo = memo;
    assert_int_equal(rd_record_emit_files(&head, &f, 0, &same, &res, &opts, &a, &err), 0);
    assert_int_equal(rd_record_of_result(&made, &res, &opts, &a), 0);
    nsh = rd_record_memo_shards(memo);
    assert_int_equal(nsh, 32);
    count = calloc(nsh, sizeof(*count));
    index = calloc(nsh, sizeof(*index));
    lens = calloc(nsh, sizeof(*lens));
    pp = calloc(nsh, sizeof(*pp));
    parts = calloc(nsh, sizeof(*parts));
    for (size_t k = 0; k < nsh; k++) {
        size_t *which = calloc(made.nunits + 1, sizeof(*which)), n = 0;
        for (size_t i = 0; i < made.nunits; i++) {
            if (rd_record_shard_of(made.units[i].unit, nsh) == k)
                which[n++] = i;
        }
        assert_int_equal(n != 0, rd_record_memo_shard_id(memo, k)[0] != '\0');
        if (n) {
            rc_buf_init(&parts[nparts], 0);
            rd_record_pack_shard(&parts[nparts], &made, memo, which, n);
            index[nparts] = k;
            count[nparts] = n;
            pp[nparts] = (const unsigned char *)parts[nparts].ptr;
            lens[nparts] = parts[nparts].len;
            nparts++;
        }
        free(which);
    }
    rd_record_pack_head(&packed_head, &made, memo);
    rd_record_pack_order(&order, &made, nsh);
    assert_int_equal(order.len, 2 * made.nunits);
#define JOIN(m, p, l, ix, n, ns, ord, a)                                                           \
    rd_record_unpack_shards(&back, m, NULL, (const unsigned char *)packed_head.ptr,                \
                            packed_head.len, p, l, ix, n, ns, (const unsigned char *)(ord),        \
                            made.nunits, a, &err)
    rd_record_memo_new(&read);
    assert_int_equal(
        rd_record_unpack_shards(&back, read, &memo_read, (const unsigned char *)packed_head.ptr,
                                packed_head.len, pp, lens, index, nparts, nsh,
                                (const unsigned char *)order.ptr, made.nunits, &a, &err),
        0);
    th_assert_records_equal(&back, &made);
    assert_int_equal(memo_read, 1);
    rd_record_memo_export(memo, &want);
    rd_record_memo_export(read, &got);
    assert_int_equal(got.len, want.len);
    assert_memory_equal(got.ptr, want.ptr, want.len);

    /* what does not join */
    {
        char *bad_order = malloc(order.len);
        size_t j = 1;
        /* a part under another index: its units are not in that shard */
        index[0] ^= 1;
        assert_int_equal(JOIN(NULL, pp, lens, index, nparts, nsh, order.ptr, &a), RC_EINVALID);
        index[0] ^= 1;
        /* parts out of order, each under its own index */
        {
            const unsigned char *tp = pp[0];
            size_t tl = lens[0], ti = index[0];
            pp[0] = pp[1], lens[0] = lens[1], index[0] = index[1];
            pp[1] = tp, lens[1] = tl, index[1] = ti;
            assert_int_equal(JOIN(NULL, pp, lens, index, nparts, nsh, order.ptr, &a), RC_EINVALID);
            pp[1] = pp[0], lens[1] = lens[0], index[1] = index[0];
            pp[0] = tp, lens[0] = tl, index[0] = ti;
        }
        /* two units of different parts in each other's places: not in order */
        memcpy(bad_order, order.ptr, order.len);
        while (j < made.nunits && !memcmp(bad_order + 2 * j, bad_order, 2))
            j++;
        assert_true(j < made.nunits);
        bad_order[0] = order.ptr[2 * j];
        bad_order[1] = order.ptr[2 * j + 1];
        bad_order[2 * j] = order.ptr[0];
        bad_order[2 * j + 1] = order.ptr[1];
        assert_int_equal(JOIN(NULL, pp, lens, index, nparts, nsh, bad_order, &a), RC_EINVALID);
        /* an order naming a part there is not */
        bad_order[0] = (char)0xff;
        assert_int_equal(JOIN(NULL, pp, lens, index, nparts, nsh, bad_order, &a), RC_EINVALID);
        free(bad_order);
        /* a shard count that is not a power of two */
        assert_int_equal(JOIN(NULL, pp, lens, index, nparts, 33, order.ptr, &a), RC_EINVALID);
    }
    /* every cut and flipped byte of the first part, in an exact-size copy (ASan) */
    for (size_t cut = 0; cut <= lens[0]; cut++) {
        for (int flip = 0; flip < 2; flip++) {
            struct rc_arena tmp = RC_ARENA_INIT;
            size_t n = flip ? lens[0] : cut;
            unsigned char *exact;
            const unsigned char *saved = pp[0];
            size_t saved_len = lens[0];
            int rc;
            if (flip && cut == lens[0])
                break;
            exact = malloc(n ? n : 1);
            memcpy(exact, saved, n);
            if (flip)
                exact[cut] ^= 0x41;
            pp[0] = exact;
            lens[0] = n;
            rc = JOIN(read, pp, lens, index, nparts, nsh, order.ptr, &tmp);
            if (rc == 0)
                assert_parser_could_give(&back);
            else
                assert_int_equal(rc, RC_EINVALID);
            pp[0] = saved;
            lens[0] = saved_len;
            free(exact);
            rc_arena_release(&tmp);
        }
    }
    for (size_t k = 0; k < nparts; k++)
        rc_buf_release(&parts[k]);
    free(parts);
    free(pp);
    free(lens);
    free(index);
    free(count);
    rd_record_memo_free(memo);
    rd_record_memo_free(read);
    rc_buf_release(&head);
    rc_buf_release(&packed_head);
    rc_buf_release(&order);
    rc_buf_release(&want);
#undef JOIN
    rc_buf_release(&got);
    rc_arena_release(&a);
}

/* With the memo of the base's record, a pass writes the shards whose units changed and keeps
 * the others (their files are the base's): one decision that changes writes one shard and the
 * header; a unit added or removed, its shard; nothing changed, nothing. The memo read back
 * from the record cache file (digests alone: a `--once` process) keeps the same shards. What
 * it writes is what a writer without a memo writes. */
static void test_rd_record__shards_written_as_they_change(void **state)
{
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_err err = RC_ERR_INIT;
    struct rc_buf head = RC_BUF_INIT, cold = RC_BUF_INIT, exported = RC_BUF_INIT;
    struct pl_result res;
    struct rd_record rec, made;
    struct rd_render_options opts = RD_RENDER_OPTIONS_INIT, none;
    struct rd_record_files f, g;
    struct rd_record_memo *memo = NULL, *read_back = NULL;
    struct rd_record_stats stats;
    struct store *st = calloc(1, sizeof(*st));
    int same = -1;
    enum { N = 3000 };

    (void)state;
    make_result(&res, N, 10, &a);
    opts.blob_id = blob_id;
    rd_record_memo_new(&memo);
    opts.record_memo = memo;
    opts.record_inline_max = 512; /* 64 units a shard: 64 shards */
    none = opts;
    none.record_memo = NULL;
    assert_int_equal(rd_record_emit_files(&head, &f, 0, &same, &res, &opts, &a, &err), 0);
    assert_int_equal(f.nshards, 64);
    assert_int_equal(store_put(st, &f, &a), 64);
    opts.record_base_is_memo = 1; /* the base deploy tree now has this record */

    /* nothing changed: the same record, every shard kept */
    rc_buf_reset(&head);
    assert_int_equal(rd_record_emit_files(&head, &g, 1, &same, &res, &opts, &a, &err), 0);
    assert_int_equal(same, 1);
    assert_int_equal(g.nshards, 64);
    assert_int_equal(store_put(st, &g, &a), 0);

    /* one decision changes: its shard is written and the header names its new id */
    res.decisions[1234].targets[0].cluster = "cluster-009";
    res.decisions[1234].reason = "moved";
    rc_buf_reset(&head);
    assert_int_equal(rd_record_emit_files(&head, &g, 1, &same, &res, &opts, &a, &err), 0);
    assert_int_equal(same, 0);
    assert_int_equal(store_put(st, &g, &a), 1);
    stats = rd_record_memo_stats(memo);
    assert_int_equal(stats.units_written, 1);
    assert_int_equal(stats.units_kept, N - 1);
    read_sharded(&rec, &head, st, &a);
    assert_int_equal(rd_record_of_result(&made, &res, &opts, &a), 0);
    th_assert_records_equal(&made, &rec);
    assert_int_equal(rd_record_emit_files(&cold, &f, 0, NULL, &res, &none, &a, &err), 0);
    assert_int_equal(cold.len, head.len); /* the same header as a writer without a memo */
    assert_memory_equal(cold.ptr, head.ptr, head.len);

    /* a unit removed: its shard alone */
    res.decisions[17].change = PL_CHANGE_REMOVED;
    rc_buf_reset(&head);
    assert_int_equal(rd_record_emit_files(&head, &g, 1, &same, &res, &opts, &a, &err), 0);
    assert_int_equal(store_put(st, &g, &a), 1);
    read_sharded(&rec, &head, st, &a);
    assert_int_equal(rec.nunits, N - 1);

    /* the memo as the record cache file keeps it (digests alone), read back in another
     * process: the same shards kept; a unit added writes its own */
    rd_record_memo_export(memo, &exported);
    rd_record_memo_new(&read_back);
    assert_int_equal(rd_record_memo_import(read_back, exported.ptr, exported.len), 0);
    opts.record_memo = read_back;
    res.decisions[17].change = PL_CHANGE_NONE;
    rc_buf_reset(&head);
    assert_int_equal(rd_record_emit_files(&head, &g, 1, &same, &res, &opts, &a, &err), 0);
    assert_int_equal(store_put(st, &g, &a), 1);
    read_sharded(&rec, &head, st, &a);
    assert_int_equal(rec.nunits, N);
    rc_buf_reset(&cold);
    assert_int_equal(rd_record_emit_files(&cold, &f, 0, NULL, &res, &none, &a, &err), 0);
    assert_memory_equal(cold.ptr, head.ptr, head.len);

    /* a memo whose record is not the base's keeps no shard: every one written */
    opts.record_base_is_memo = 0;
    rc_buf_reset(&head);
    assert_int_equal(rd_record_emit_files(&head, &g, 1, &same, &res, &opts, &a, &err), 0);
    for (size_t i = 0; i < g.nshards; i++)
        assert_non_null(g.shards[i].text);

    /* a memo whose shard table does not add up is not read back */
    {
        struct rc_buf bad = RC_BUF_INIT;
        rd_record_memo_export(read_back, &bad);
        /* the first shard's count, after the units: one more than it holds */
        for (size_t at = 25; at + 48 < bad.len; at++) {
            if (!memcmp(bad.ptr + at + 8, g.shards[0].id, 40)) {
                bad.ptr[at]++;
                break;
            }
        }
        assert_int_equal(rd_record_memo_import(memo, bad.ptr, bad.len), RC_EINVALID);
        rc_buf_release(&bad);
    }
    rd_record_memo_free(memo);
    rd_record_memo_free(read_back);
    free(st);
    rc_buf_release(&head);
    rc_buf_release(&cold);
    rc_buf_release(&exported);
    rc_arena_release(&a);
}

/* What rightplace never writes is refused with the file and the reason: a unit in the wrong
 * shard, a count the shard does not hold, a shard the store does not have, units in the
 * header, a shard count that is not a power of two, a file name out of order. */
static void test_rd_record__shards_refused_when_wrong(void **state)
{
    static const char *const heads[] = {
        /* the unit's shard of 2 is not 1 unless it hashes there: checked below */
        "apiVersion: rightplace.dev/v1alpha2\nkind: PlacementRecord\nshards: 2\nshardFiles:\n"
        "- {file: placements/000.yaml, blob: @, units: 1}\n- {file: placements/001.yaml, "
        "blob: @, units: 1}\n",
        "apiVersion: rightplace.dev/v1alpha2\nkind: PlacementRecord\nshards: 2\nshardFiles:\n"
        "- {file: placements/000.yaml, blob: @, units: 3}\n",
        "apiVersion: rightplace.dev/v1alpha2\nkind: PlacementRecord\nshards: 2\nshardFiles:\n"
        "- {file: placements/000.yaml, blob: deadbeefdeadbeefdeadbeefdeadbeefdeadbeef, units: "
        "1}\n",
        "apiVersion: rightplace.dev/v1alpha2\nkind: PlacementRecord\nshards: 2\nunits: []\n"
        "shardFiles: []\n",
        "apiVersion: rightplace.dev/v1alpha2\nkind: PlacementRecord\nshards: 3\nshardFiles: []\n",
        "apiVersion: rightplace.dev/v1alpha2\nkind: PlacementRecord\nshards: 2\nshardFiles:\n"
        "- {file: placements/001.yaml, blob: @, units: 1}\n- {file: placements/000.yaml, "
        "blob: @, units: 1}\n",
        "apiVersion: rightplace.dev/v1alpha2\nkind: PlacementRecord\nshards: 2\nshardFiles:\n"
        "- {file: ../000.yaml, blob: @, units: 1}\n",
    };
    static const char *const why[] = {"belongs in shard", "2 units, where", "no blob",
                                      "lists its units",  "power of two",   "in order",
                                      "in order"};
    struct rc_arena a = RC_ARENA_INIT;
    struct store *st = calloc(1, sizeof(*st));
    const char *u0 = NULL, *u1 = NULL;
    char shard0[256], shard1[256];

    (void)state;
    /* two units, one of each shard of 2 */
    for (int i = 0; !u0 || !u1; i++) {
        const char *u = rc_arena_printf(&a, "p/ns/u%d", i);
        if (rd_record_shard_of(u, 2) == 0 && !u0)
            u0 = u;
        else if (rd_record_shard_of(u, 2) == 1 && !u1)
            u1 = u;
    }
    /* shard 000 holds the unit of shard 1 and one more of its own: the first header says 1 */
    snprintf(shard0, sizeof(shard0),
             "apiVersion: rightplace.dev/v1alpha2\nkind: PlacementRecordShard\nunits:\n"
             "- {unit: %s, state: pending}\n- {unit: %s, state: pending}\n",
             u1, u0);
    snprintf(shard1, sizeof(shard1),
             "apiVersion: rightplace.dev/v1alpha2\nkind: PlacementRecordShard\nunits:\n"
             "- {unit: %s, state: pending}\n",
             u1);
    assert_int_equal(blob_id(st->v[0].id, shard0, strlen(shard0)), 0);
    st->v[0].text = shard0;
    st->v[0].len = strlen(shard0);
    assert_int_equal(blob_id(st->v[1].id, shard1, strlen(shard1)), 0);
    st->v[1].text = shard1;
    st->v[1].len = strlen(shard1);
    st->n = 2;
    for (size_t k = 0; k < sizeof(heads) / sizeof(heads[0]); k++) {
        struct rc_err err = RC_ERR_INIT;
        struct rd_record rec;
        char text[1024];
        size_t at = 0;
        /* '@': a blob id. The first header names shard 1's blob as shard 000 (its unit
         * hashes to 1); the others, shard 0's */
        for (const char *p = heads[k]; *p && at + 41 < sizeof(text); p++) {
            if (*p != '@') {
                text[at++] = *p;
                continue;
            }
            memcpy(text + at, st->v[k == 0 || k == 5 ? 1 : 0].id, 40);
            at += 40;
        }
        text[at] = '\0';
        if (rd_record_read(&rec, text, strlen(text), store_fetch, st, NULL, &a, &err) !=
            (k == 2 ? RC_ENOTFOUND : RC_EINVALID))
            fail_msg("header %zu: %s", k, err.msg[0] ? err.msg : "read");
        th_assert_contains(err.msg, why[k]);
    }
    free(st);
    rc_arena_release(&a);
}

/* The budget of a record in shards is the whole record's: each shard may hold what the header
 * and the shards before it left of RD_RECORD_MAX_BYTES. */
static size_t maxes[8], nmaxes;

static int budget_fetch(void *payload, const char *id, size_t max, const char **text, size_t *len,
                        struct rc_arena *a, struct rc_err *err)
{
    if (nmaxes < 8)
        maxes[nmaxes++] = max;
    return store_fetch(payload, id, max, text, len, a, err);
}

static void test_rd_record__shards_within_one_budget(void **state)
{
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_err err = RC_ERR_INIT;
    struct rc_buf head = RC_BUF_INIT;
    struct pl_result res;
    struct rd_record rec;
    struct rd_render_options opts = RD_RENDER_OPTIONS_INIT;
    struct rd_record_files f;
    struct store *st = calloc(1, sizeof(*st));
    size_t left;

    (void)state;
    make_result(&res, 20, 4, &a);
    opts.blob_id = blob_id;
    opts.record_inline_max = 8; /* 20 units: 32 shards; at most 8 read here are checked */
    assert_int_equal(rd_record_emit_files(&head, &f, 0, NULL, &res, &opts, &a, &err), 0);
    store_put(st, &f, &a);
    nmaxes = 0;
    if (rd_record_read(&rec, head.ptr, head.len, budget_fetch, st, NULL, &a, &err) < 0)
        fail_msg("%s", err.msg);
    assert_int_equal(rec.nunits, 20);
    left = RD_RECORD_MAX_BYTES - head.len;
    for (size_t k = 0; k < nmaxes; k++) {
        assert_int_equal(maxes[k], left);
        left -= f.shards[k].len;
    }
    assert_int_equal(nmaxes, 8);
    free(st);
    rc_buf_release(&head);
    rc_arena_release(&a);
}

/* The bench's largest record (20,000 units) in shards reads back whole. */
static void test_rd_record__bench_scale_in_shards(void **state)
{
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_err err = RC_ERR_INIT;
    struct rc_buf head = RC_BUF_INIT;
    struct pl_result res;
    struct rd_record rec;
    struct rd_render_options opts = RD_RENDER_OPTIONS_INIT;
    struct rd_record_files f;
    struct store *st = calloc(1, sizeof(*st));

    (void)state;
    make_result(&res, BENCH_UNITS, BENCH_CLUSTERS, &a);
    opts.blob_id = blob_id;
    assert_int_equal(rd_record_emit_files(&head, &f, 0, NULL, &res, &opts, &a, &err), 0);
    assert_int_equal(f.nshards, 256);
    store_put(st, &f, &a);
    read_sharded(&rec, &head, st, &a);
    assert_int_equal(rec.nunits, BENCH_UNITS);
    for (size_t i = 0; i < rec.nunits; i++)
        assert_string_equal(rec.units[i].unit, res.decisions[i].unit);
    free(st);
    rc_buf_release(&head);
    rc_arena_release(&a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rd_record__bench_scale_reads_back),
        cmocka_unit_test(test_rd_record__size_independent_of_fleet),
        cmocka_unit_test(test_rd_record__bounded_for_pending_and_duplicate),
        cmocka_unit_test(test_rd_record__of_result_is_what_parse_reads),
        cmocka_unit_test(test_rd_record__bounded_result_same_record),
        cmocka_unit_test(test_rd_record__shares_read_back),
        cmocka_unit_test(test_rd_record__unpack_is_what_parse_reads),
        cmocka_unit_test(test_rd_record__unpack_takes_any_bytes),
        cmocka_unit_test(test_rd_record__memo_writes_only_changed_entries),
        cmocka_unit_test(test_rd_record__unless_same_skips_the_memos_record),
        cmocka_unit_test(test_rd_record__memo_read_back_tells_the_same),
        cmocka_unit_test(test_rd_record__threads_write_the_same_bytes),
        cmocka_unit_test(test_rd_record__capacity_bench_scale_reads_back),
        cmocka_unit_test(test_rd_record__items_budget_is_per_item),
        cmocka_unit_test(test_rd_record__warnings_listed_are_bounded),
        cmocka_unit_test(test_rd_record__entries_past_the_node_limit_read_back),
        cmocka_unit_test(test_rd_record__capacity_cluster_past_the_node_limit_reads_back),
        cmocka_unit_test(test_rd_record__lists_budget_is_per_element),
        cmocka_unit_test(test_rd_record__shards_read_back_as_one_file),
        cmocka_unit_test(test_rd_record__packed_by_shard_joins_back),
        cmocka_unit_test(test_rd_record__of_result_over_shares_unchanged),
        cmocka_unit_test(test_rd_record__shards_written_as_they_change),
        cmocka_unit_test(test_rd_record__shards_refused_when_wrong),
        cmocka_unit_test(test_rd_record__shards_within_one_budget),
        cmocka_unit_test(test_rd_record__bench_scale_in_shards),
    };
    struct rc_err err = RC_ERR_INIT;
    int rc;

    assert_int_equal(rc_git_global_init(&err), RC_OK);
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    rc_git_global_shutdown();
    return rc;
}
