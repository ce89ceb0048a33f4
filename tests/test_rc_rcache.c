/*
 * test_rc_rcache.c - the record cache file in the state directory: a `--once` pass whose
 * deploy head still has the placements.yaml the last run committed (or parsed) takes the
 * record from the file, reads and parses no record, and commits exactly the tree a run
 * without the file commits; what the file holds is, field by field, what rd_record_parse
 * gives for the blob; a damaged, truncated, foreign or stale file costs a parse and a warning,
 * and is rewritten.
 *
 * Each `--once` run is a fresh rc_cache on the same state directory (a new process); passes
 * run with force, so that the memo never skips the work being counted.
 */
#include "th.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rc_cache.h"
#include "rc_git.h"
#include "rc_pass.h"
#include "rc_rcache.h"
#include "th_git.h"
#include "th_record.h"
#include "th_rp.h"

#include "rc_banned.h"

/* A workload of its own: a new unit, so that the record changes beyond its source line. */
static const char new_unit[] = "apiVersion: v1\n"
                               "kind: ConfigMap\n"
                               "metadata:\n"
                               "  name: solo\n"
                               "  namespace: rayjob3\n"
                               "  labels: {app.kubernetes.io/instance: solo}\n"
                               "data: {k: v}\n";

struct fx {
    char *repo;
    char *state;
    char *path; /* the record cache file */
    struct rc_arena a;
};

static void fx_open(struct fx *f)
{
    memset(f, 0, sizeof(*f));
    f->repo = th_example_repo();
    f->state = th_tmpdir("rcache-state");
    f->path = malloc(strlen(f->state) + 32);
    snprintf(f->path, strlen(f->state) + 32, "%s/%s", f->state, RC_RCACHE_FILE);
}

static void fx_close(struct fx *f)
{
    rc_arena_release(&f->a);
    th_rm_rf(f->repo);
    th_rm_rf(f->state);
    free(f->repo);
    free(f->state);
    free(f->path);
}

enum mode { WITH_STATE, NO_STATE, NO_PARSE_CACHE };

/* One `rightplace reconcile --once --no-apply --force` run; log (may be NULL) gets its log.
 * tree: the deploy tree after it. */
static size_t inline_max; /* rd_render_options.record_inline_max of the runs (0: default) */

static void run_once(struct rc_pass_result *res, char tree[41], struct fx *f, enum mode m,
                     FILE *log)
{
    struct rc_pass_options o = RC_PASS_OPTIONS_INIT;
    struct rc_log lg = RC_LOG_INIT;
    struct rc_err err = RC_ERR_INIT;
    struct rc_cache *cache = NULL;
    struct rc_git *g = NULL;

    lg.out = log;
    lg.level = RC_LOG_DEBUG;
    o.apply = 0;
    o.force = 1;
    o.last_pass = 1;
    o.bounded_verdicts = 1;
    o.render.record_inline_max = inline_max;
    o.log = log ? &lg : NULL;
    assert_int_equal(rc_cache_new(&cache, m == NO_STATE ? NULL : f->state, &err), RC_OK);
    if (m == NO_PARSE_CACHE)
        rc_cache_no_parse_file(cache);
    o.cache = cache;
    assert_int_equal(rc_git_open(&g, f->repo, NULL, &err), RC_OK);
    if (rc_pass_run(res, g, &o, &f->a, &err) != RC_OK)
        fail_msg("pass: %s", err.msg);
    if (rc_git_commit_tree_id(tree, g, "refs/heads/deploy", &err) != RC_OK)
        fail_msg("deploy tree: %s", err.msg);
    res->result = NULL;
    res->input = NULL;
    res->warnings = NULL;
    res->file_errors = NULL;
    rc_git_free(g);
    rc_cache_free(cache);
}

static void set_deploy(const struct fx *f, const char *commit)
{
    free(th_git_ok(f->repo, "update-ref", "refs/heads/deploy", commit, NULL));
}

static int fetch_blob(void *payload, const char *id, size_t max, const char **text, size_t *len,
                      struct rc_arena *a, struct rc_err *err)
{
    char *t = NULL;
    int error = rc_git_read_blob(&t, len, payload, id, max, a, err);

    *text = t;
    return error;
}

/* What the file holds for the deploy head's placements.yaml is what a reader reads from that
 * blob (and the shards it names), field by field; the head's record is in shards or not, as
 * the fixture's runs write it. */
static void assert_file_holds_head_record(struct fx *f)
{
    struct rc_err err = RC_ERR_INIT;
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_git *g = NULL;
    struct rc_rcache *rc = NULL;
    struct rc_rcache_line line;
    struct rd_record read, loaded;
    struct rd_record_layout layout;
    char blob[41], *text = NULL;
    size_t len = 0;

    assert_int_equal(rc_git_open(&g, f->repo, NULL, &err), RC_OK);
    assert_int_equal(rc_git_file_id(blob, g, "refs/heads/deploy", "placements.yaml", &err), RC_OK);
    assert_int_equal(
        rc_git_read_file(&text, &len, g, "refs/heads/deploy", "placements.yaml", &a, &err), RC_OK);
    if (rd_record_read(&read, text, len, fetch_blob, g, &layout, &a, &err) < 0)
        fail_msg("%s", err.msg);
    assert_true(read.nunits > 0);
    assert_true(inline_max ? layout.shards > 1 : layout.shards == 1);
    rc_rcache_new(&rc, f->path);
    assert_int_equal(rc_rcache_load(rc, &loaded, &line, NULL, NULL, blob, &a, NULL), 1);
    th_assert_records_equal(&loaded, &read);
    /* and the blob's source line: none (RD_SOURCE_FILE names the source commit) */
    assert_false(line.have);
    assert_null(strstr(text, "\nsource: "));
    rc_rcache_free(rc);
    rc_git_free(g);
    rc_arena_release(&a);
}

/* A commit that labels the production Namespace tier=<tier>: a change to a placed object,
 * not to any decision. Returns the source commit (free it). */
static char *label_production(struct fx *f, const char *tier)
{
    char text[256];

    snprintf(text, sizeof(text),
             "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: production\n  labels:\n"
             "    app: rayclustersetup\n    tier: %s\n",
             tier);
    return th_git_commit_files(f->repo, "a label", "infra/namespace-production.yaml", text, NULL);
}

/* The run after a commit takes the record that commit wrote from the file: no record read
 * nor parsed, not even to compare the new one with it, and the tree of a run without the
 * file. A commit that changes no decision (a README) makes no deploy commit, told without
 * reading the record either, and leaves the file as it is. */
static void test_rc_rcache__once_takes_the_record_it_committed(void **state)
{
    struct fx f;
    struct rc_pass_result res, plain;
    char tree[41], want[41];
    char *base, *srccommit;
    struct stat st1, st2;
    (void)state;

    fx_open(&f);
    run_once(&res, tree, &f, WITH_STATE, NULL);
    assert_int_equal(res.committed, 1);
    assert_int_equal(res.record_cached, 0);
    assert_true(res.nrecord_cache_written > 0);
    assert_file_holds_head_record(&f);

    /* a new unit: the record changes, and grows, which the head blob's size tells without
     * hashing the new one to compare it (the write hashes it, once) */
    free(th_git_commit_files(f.repo, "a new unit", "zz/solo.yaml", new_unit, NULL));
    base = th_git_rev(f.repo, "refs/heads/deploy");
    run_once(&res, tree, &f, WITH_STATE, NULL);
    assert_int_equal(res.record_cached, 1);
    assert_int_equal(res.nrecord_read, 0);
    assert_int_equal(res.nrecord_bytes_read, 0);
    assert_int_equal(res.nrecord_compared, 1);
    assert_int_equal(res.nrecord_bytes_hashed, 0);
    assert_int_equal(res.committed, 1);
    assert_true(res.nrecord_cache_written > 0);
    assert_file_holds_head_record(&f);
    set_deploy(&f, base);
    run_once(&plain, want, &f, NO_STATE, NULL);
    assert_int_equal(plain.record_cached, 0);
    assert_true(plain.nrecord_read > 0);
    assert_int_equal(plain.committed, 1);
    assert_string_equal(tree, want);
    free(base);

    /* the file holds the record of the head the plain run left (the same bytes as the cached
     * run's): a README commit changes no decision, and nothing is committed or written */
    base = th_git_rev(f.repo, "refs/heads/deploy");
    run_once(&res, tree, &f, WITH_STATE, NULL); /* the file: the plain run's head */
    free(th_git_commit_files(f.repo, "docs", "README.md", "notes\n", NULL));
    assert_int_equal(stat(f.path, &st1), 0);
    run_once(&res, tree, &f, WITH_STATE, NULL);
    assert_int_equal(res.record_cached, 1);
    assert_int_equal(res.committed, 0);
    assert_int_equal(res.nrecord_bytes_read, 0);
    assert_int_equal(res.record_kept, 1); /* the memo beside it: not written nor compared */
    assert_int_equal(res.nrecord_compared, 0);
    assert_int_equal(res.nrecord_cache_written, 0);
    assert_int_equal(stat(f.path, &st2), 0);
    assert_int_equal(st1.st_ino, st2.st_ino);
    run_once(&plain, want, &f, NO_STATE, NULL);
    assert_int_equal(plain.committed, 0);
    assert_true(plain.nrecord_bytes_read > 0);
    assert_string_equal(tree, want);
    {
        char *head = th_git_rev(f.repo, "refs/heads/deploy");
        assert_string_equal(head, base);
        free(head);
    }
    free(base);

    /* a change to a placed object and not to the record: the pass commits for the object;
     * placements.yaml, which names no source commit, is found by the writer's memo kept
     * beside the record to be the deploy head's blob (neither written nor hashed), which the
     * new commit keeps */
    base = th_git_rev(f.repo, "refs/heads/deploy");
    srccommit = label_production(&f, "gold");
    run_once(&res, tree, &f, WITH_STATE, NULL);
    assert_int_equal(res.record_cached, 1);
    assert_int_equal(res.committed, 1);
    assert_int_equal(res.nrecord_bytes_read, 0);
    assert_int_equal(res.record_kept, 1);
    assert_int_equal(res.nrecord_compared, 0);
    assert_file_holds_head_record(&f);
    {
        char *before = th_git_ok(f.repo, "rev-parse", "refs/heads/deploy~1:placements.yaml", NULL);
        char *after = th_git_ok(f.repo, "rev-parse", "refs/heads/deploy:placements.yaml", NULL);
        char *src = th_git_ok(f.repo, "show", "refs/heads/deploy:.rightplace/source", NULL);
        assert_string_equal(after, before);
        assert_string_equal(src, srccommit); /* the new source commit, a line of its own */
        free(before);
        free(after);
        free(src);
        free(srccommit);
    }
    set_deploy(&f, base);
    run_once(&plain, want, &f, NO_STATE, NULL);
    assert_int_equal(plain.committed, 1);
    assert_string_equal(tree, want);
    free(base);

    /* --no-parse-cache: neither read nor written */
    unlink(f.path);
    run_once(&res, tree, &f, NO_PARSE_CACHE, NULL);
    assert_int_equal(res.record_cached, 0);
    assert_true(res.nrecord_read > 0);
    assert_int_equal(res.nrecord_cache_written, 0);
    assert_int_equal(access(f.path, F_OK), -1);
    fx_close(&f);
}

/* A pass that parses the head's record (another writer made it, or the state directory was
 * new: the first pass after an upgrade or a lost state directory) and writes that same blob
 * without committing keeps it with its writer's memo: the pass after it keeps the record
 * without writing or hashing it. (It was kept without the memo, so the next pass wrote the
 * whole record again and compared it by its id: 0.45 s against 0.31 s at 10,000 units.) */
static void test_rc_rcache__memo_joins_the_record_it_lacked(void **state)
{
    struct fx f;
    struct rc_pass_result res;
    char tree[41];
    (void)state;

    fx_open(&f);
    run_once(&res, tree, &f, NO_STATE, NULL); /* the head, made by another writer */
    assert_int_equal(res.committed, 1);
    run_once(&res, tree, &f, WITH_STATE, NULL); /* parses it, writes the same blob */
    assert_int_equal(res.committed, 0);
    assert_int_equal(res.record_cached, 0);
    assert_true(res.nrecord_cache_written > 0);

    free(label_production(&f, "gold"));
    run_once(&res, tree, &f, WITH_STATE, NULL);
    assert_int_equal(res.record_cached, 1);
    assert_int_equal(res.committed, 1);
    assert_int_equal(res.record_kept, 1); /* the memo beside it: not written nor compared */
    assert_int_equal(res.nrecord_compared, 0);
    assert_int_equal(res.nrecord_cache_written, 0); /* it holds that record and memo */

    free(label_production(&f, "silver"));
    run_once(&res, tree, &f, WITH_STATE, NULL);
    assert_int_equal(res.record_cached, 1);
    assert_int_equal(res.committed, 1);
    assert_int_equal(res.record_kept, 1);
    assert_int_equal(res.nrecord_compared, 0);
    assert_int_equal(res.nrecord_cache_written, 0);
    fx_close(&f);
}

/* A damaged, truncated or foreign file: a warning, the record parsed, the right tree, and the
 * file rewritten (the run after it takes the record from the file, silently). A file holding
 * another blob's record is a miss: the same, but no warning. */
/* The entries of a record cache file's bytes f[from..len) (reconciler/rc_rcache.c): each
 * whole, the last ending the file; counts of shard and record entries (ns, nr may be NULL),
 * and returns the offset of the last entry (the record's). */
static size_t walk_entries(const char *f, size_t len, size_t from, size_t *ns, size_t *nr)
{
    size_t off = from, last = from;

    while (off + 8 <= len) {
        const unsigned char *p = (const unsigned char *)f + off;
        size_t l = 0;
        for (int b = 7; b >= 0; b--)
            l = l << 8 | p[b];
        if (ns)
            *ns += p[16] == 'S';
        if (nr)
            *nr += p[16] == 'R';
        last = off;
        off += 8 + l;
    }
    assert_int_equal(off, len);
    return last;
}

static void damaged_file_costs_a_parse(void)
{
    static const char *const kinds[] = {"another build", "truncated", "a flipped byte",
                                        "another blob",  "garbage",   "empty"};
    struct fx f;
    struct rc_pass_result res, plain;
    char tree[41], want[41];
    char *good, *base;
    size_t len, hdr, last;

    fx_open(&f);
    run_once(&res, tree, &f, WITH_STATE, NULL);
    base = th_git_rev(f.repo, "refs/heads/deploy");
    run_once(&plain, want, &f, NO_STATE, NULL);
    assert_int_equal(plain.committed, 0);
    good = th_read_all(f.path, &len);
    hdr = (size_t)(strchr(strchr(good, '\n') + 1, '\n') + 1 - good);
    last = walk_entries(good, len, hdr, NULL, NULL);
    assert_true(len > hdr + 60 + 100);
    for (size_t kind = 0; kind < sizeof(kinds) / sizeof(kinds[0]); kind++) {
        char *bad = malloc(len);
        size_t blen = len;
        FILE *log = tmpfile();
        char *text;
        memcpy(bad, good, len);
        switch (kind) {
        case 0: /* another build's: a byte of the build line */
            bad[strlen("rightplace-record-cache 1\nrightplace ")] ^= 1;
            break;
        case 1:
            blen = hdr + (len - hdr) / 2;
            break;
        case 2: /* in the packed record */
            bad[len - 10] ^= 0x20;
            break;
        case 3: /* the record of another placements.yaml */
            bad[last + 17] = bad[last + 17] == 'a' ? 'b' : 'a';
            break;
        case 4:
            memset(bad, 'x', len);
            break;
        default:
            blen = 0;
            break;
        }
        th_write_all(f.path, bad, blen);
        set_deploy(&f, base);
        run_once(&res, tree, &f, WITH_STATE, log);
        text = th_slurp(log);
        if (kind == 3) {
            /* a miss (the deploy branch moved by other means), not damage: said at debug
             * level only */
            if (strstr(text, "warning") || !strstr(text, "holds no record of this"))
                fail_msg("%s: a warning, or no debug line, in:\n%s", kinds[kind], text);
        } else if (!strstr(text, "record cache '") ||
                   !strstr(text, "ignored (the record is parsed)")) {
            fail_msg("%s: no warning in:\n%s", kinds[kind], text);
        }
        assert_int_equal(res.record_cached, 0);
        assert_true(res.nrecord_read > 0);
        assert_string_equal(tree, want);
        assert_int_equal(res.committed, 0);
        assert_true(res.nrecord_cache_written > 0); /* rewritten */
        free(text);
        fclose(log);

        log = tmpfile();
        run_once(&res, tree, &f, WITH_STATE, log);
        text = th_slurp(log);
        assert_null(strstr(text, "record cache '"));
        assert_int_equal(res.record_cached, 1);
        assert_int_equal(res.nrecord_read, 0);
        assert_string_equal(tree, want);
        free(text);
        fclose(log);
        free(bad);
    }
    /* not a regular file: ignored the same way */
    unlink(f.path);
    assert_int_equal(mkdir(f.path, 0700), 0);
    run_once(&res, tree, &f, WITH_STATE, NULL);
    assert_int_equal(res.record_cached, 0);
    assert_string_equal(tree, want);
    free(good);
    free(base);
    fx_close(&f);
}

static void test_rc_rcache__damaged_file_costs_a_parse(void **state)
{
    (void)state;
    damaged_file_costs_a_parse();
    inline_max = 1; /* and a record in shards: its 'S' and 'R' entries */
    damaged_file_costs_a_parse();
    inline_max = 0;
}

static size_t file_size(const char *path)
{
    struct stat st;

    assert_int_equal(stat(path, &st), 0);
    return (size_t)st.st_size;
}

/* A record in shards is kept by shard: a run that changes one unit appends the shard it
 * wrote and the record's entry, not the whole record, and the next run takes the record
 * from the entries old and new; the file is what a reader of the commit reads, and the trees
 * are those of runs without the file. A torn tail (a crash during an append) costs a parse
 * and a warning, and the file is written whole again. */
static void test_rc_rcache__shards_are_appended(void **state)
{
    struct fx f;
    struct rc_pass_result res, plain;
    char tree[41], want[41];
    size_t whole, after;
    char *src;
    FILE *log;
    (void)state;

    inline_max = 1; /* the example's units in shards, about one a shard */
    fx_open(&f);
    run_once(&res, tree, &f, WITH_STATE, NULL);
    assert_int_equal(res.committed, 1);
    whole = file_size(f.path);
    assert_int_equal(res.nrecord_cache_written, whole);
    assert_file_holds_head_record(&f);

    /* a new unit: one shard and the record's entry appended */
    src = th_git_commit_files(f.repo, "a new unit", "apps/solo.yaml", new_unit, NULL);
    free(src);
    run_once(&res, tree, &f, WITH_STATE, NULL);
    assert_int_equal(res.record_cached, 1);
    assert_int_equal(res.committed, 1);
    after = file_size(f.path);
    assert_int_equal(after, whole + res.nrecord_cache_written);
    assert_true(res.nrecord_cache_written < whole);
    {
        /* what was appended: an 'S' entry for each shard file the commit changed, then the
         * record's 'R' */
        char *changed = th_git_ok(f.repo, "diff", "--name-only", "deploy~1", "deploy", "--",
                                  "placements/", NULL);
        size_t flen, ns = 0, nr = 0;
        char *bytes = th_read_all(f.path, &flen);
        assert_int_equal(flen, after);
        walk_entries(bytes, flen, whole, &ns, &nr);
        assert_int_equal(nr, 1);
        assert_true(changed[0] != '\0'); /* one path a line, the last without '\n' */
        assert_int_equal(ns, (size_t)th_count(changed, "\n") + 1);
        free(changed);
        free(bytes);
    }
    assert_file_holds_head_record(&f);
    /* the next run takes it from the entries old and new, and commits what a run without
     * the file commits */
    run_once(&res, tree, &f, WITH_STATE, NULL);
    assert_int_equal(res.record_cached, 1);
    assert_int_equal(res.nrecord_read, 0);
    run_once(&plain, want, &f, NO_STATE, NULL);
    assert_string_equal(tree, want);

    /* a torn tail: the record's entry cut short */
    assert_int_equal(truncate(f.path, (off_t)after - 3), 0);
    log = tmpfile();
    run_once(&res, tree, &f, WITH_STATE, log);
    {
        char *text = th_slurp(log);
        th_assert_contains(text, "truncated or damaged; ignored (the record is parsed)");
        free(text);
    }
    fclose(log);
    assert_int_equal(res.record_cached, 0);
    assert_true(res.nrecord_read > 0);
    assert_string_equal(tree, want);
    assert_int_equal(res.nrecord_cache_written, file_size(f.path)); /* written whole */
    run_once(&res, tree, &f, WITH_STATE, NULL);
    assert_int_equal(res.record_cached, 1);
    fx_close(&f);
    inline_max = 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rc_rcache__once_takes_the_record_it_committed),
        cmocka_unit_test(test_rc_rcache__memo_joins_the_record_it_lacked),
        cmocka_unit_test(test_rc_rcache__damaged_file_costs_a_parse),
        cmocka_unit_test(test_rc_rcache__shards_are_appended),
    };
    struct rc_err err = RC_ERR_INIT;
    char *home = th_git_env_setup();
    int rc;

    assert_int_equal(rc_git_global_init(&err), RC_OK);
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    rc_git_global_shutdown();
    th_rm_rf(home);
    free(home);
    return rc;
}
