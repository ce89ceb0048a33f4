/*
 * test_rc_pcache.c - the parse cache file in the state directory: a `--once` pass after a
 * one-file change parses that one file, and a pass with the cache commits exactly the tree a
 * pass without it commits (warnings, their file:line, a broken file's error included); a
 * damaged, truncated or foreign cache file costs work only, with a warning; the reader takes
 * any bytes without crashing.
 *
 * Each `--once` run is a fresh rc_cache on the same state directory (a new process); passes
 * run with force, so that the memo never skips the work being counted.
 */
#include "th.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rc_cache.h"
#include "rc_git.h"
#include "rc_pass.h"
#include "rc_pcache.h"
#include "rd_source.h"
#include "th_git.h"
#include "th_inputs.h"
#include "th_rp.h"

#include "rc_banned.h"

#define EXAMPLE_FILES 20

/* A policy with warnings (unknown fields) and an override whose path does not exist (a
 * warning with the override's line, which a cached load must restore). */
#define WARNED_POLICY "tests/data/warnings/overlap-policy.yaml"

/* A workload with a duplicate key: a warning only the YAML reader sees. */
static const char dup_key[] = "apiVersion: v1\n"
                              "kind: ConfigMap\n"
                              "metadata:\n"
                              "  name: extra\n"
                              "  namespace: rayjob3\n"
                              "  labels: {app.kubernetes.io/instance: rayjob}\n"
                              "data: {k: v}\n"
                              "data: {k: w}\n";

static const char broken[] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n\tname: x\n";

struct fx {
    char *repo;
    char *state;
    struct rc_arena a;
};

static void fx_open(struct fx *f)
{
    char *policy;

    memset(f, 0, sizeof(*f));
    f->repo = th_example_repo();
    f->state = th_tmpdir("pcache-state");
    policy = th_inputs_read(WARNED_POLICY, NULL);
    free(th_git_commit_files(f->repo, "warnings and a broken file", "policies/overlap.yaml", policy,
                             "fill-and-spill/extra.yaml", dup_key, "zz/broken.yaml", broken, NULL));
    free(policy);
}

static void fx_close(struct fx *f)
{
    rc_arena_release(&f->a);
    th_rm_rf(f->repo);
    th_rm_rf(f->state);
    free(f->repo);
    free(f->state);
}

/* One `rightplace reconcile --once --no-apply --force` run: state NULL is a run without a
 * state directory (no parse cache); log (may be NULL) gets its log. *tree: the deploy tree. */
static void run_with(struct rc_pass_result *res, char tree[41], struct fx *f, const char *state,
                     FILE *log, const struct rc_pass_options *with);

static void run_once(struct rc_pass_result *res, char tree[41], struct fx *f, const char *state,
                     FILE *log)
{
    run_with(res, tree, f, state, log, NULL);
}

/* The same with the options `with` (NULL: the defaults) */
static void run_with(struct rc_pass_result *res, char tree[41], struct fx *f, const char *state,
                     FILE *log, const struct rc_pass_options *with)
{
    static const struct rc_pass_options defaults = RC_PASS_OPTIONS_INIT;
    struct rc_pass_options o = with ? *with : defaults;
    struct rc_log lg = RC_LOG_INIT;
    struct rc_err err = RC_ERR_INIT;
    struct rc_cache *cache = NULL;
    struct rc_git *g = NULL;

    lg.out = log;
    lg.level = RC_LOG_DEBUG;
    o.apply = 0;
    o.force = 1;
    o.log = log ? &lg : NULL;
    assert_int_equal(rc_cache_new(&cache, state, &err), RC_OK);
    o.cache = cache;
    assert_int_equal(rc_git_open(&g, f->repo, NULL, &err), RC_OK);
    if (rc_pass_run(res, g, &o, &f->a, &err) != RC_OK)
        fail_msg("pass: %s", err.msg);
    if (rc_git_commit_tree_id(tree, g, "refs/heads/deploy", &err) != RC_OK)
        fail_msg("deploy tree: %s", err.msg);
    /* what the checks below read, copied out of the cache's memory before it goes */
    {
        const char **w = rc_arena_calloc(&f->a, res->nwarnings + 1, sizeof(*w));
        struct rd_file_error *e = rc_arena_calloc(&f->a, res->nfile_errors + 1, sizeof(*e));
        for (size_t i = 0; i < res->nwarnings; i++)
            w[i] = rc_arena_strdup(&f->a, res->warnings[i]);
        for (size_t i = 0; i < res->nfile_errors; i++) {
            e[i].path = rc_arena_strdup(&f->a, res->file_errors[i].path);
            e[i].msg = rc_arena_strdup(&f->a, res->file_errors[i].msg);
        }
        res->warnings = w;
        res->file_errors = e;
        res->result = NULL;
        res->input = NULL;
    }
    rc_git_free(g);
    rc_cache_free(cache);
}

/* Same warnings and file errors, in the same order, byte for byte. */
static void assert_same_report(const struct rc_pass_result *x, const struct rc_pass_result *y)
{
    assert_int_equal(x->nwarnings, y->nwarnings);
    for (size_t i = 0; i < x->nwarnings; i++)
        assert_string_equal(x->warnings[i], y->warnings[i]);
    assert_int_equal(x->nfile_errors, y->nfile_errors);
    for (size_t i = 0; i < x->nfile_errors; i++) {
        assert_string_equal(x->file_errors[i].path, y->file_errors[i].path);
        assert_string_equal(x->file_errors[i].msg, y->file_errors[i].msg);
    }
}

/* The second `--once` run after a one-file commit parses that file alone, takes the rest
 * from the cache (the broken file as its error), and commits the tree of a run without it,
 * with the same warnings (a policy's, with an override's line; a duplicate key's) and the
 * same error for the broken file. */
static void test_rc_pcache__once_after_one_change_parses_one_file(void **state)
{
    struct fx f;
    struct rc_pass_result first, cached, plain;
    char tree[41], want[41];
    char *base;
    (void)state;

    fx_open(&f);
    run_once(&first, tree, &f, f.state, NULL);
    assert_int_equal(first.nparsed, EXAMPLE_FILES + 3);
    assert_int_equal(first.nparse_cached, 0);
    assert_true(first.nwarnings > 0);
    assert_int_equal(first.nfile_errors, 1);
    assert_non_null(strstr(first.file_errors[0].msg, "zz/broken.yaml:4:1: "));
    base = th_git_rev(f.repo, "refs/heads/deploy");

    free(th_git_commit_files(f.repo, "one change", "fill-and-spill/extra.yaml",
                             "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\n"
                             "  namespace: rayjob3\n"
                             "  labels: {app.kubernetes.io/instance: rayjob}\ndata: {k: x}\n",
                             NULL));
    run_once(&cached, tree, &f, f.state, NULL);
    assert_int_equal(cached.nparsed, 1); /* the changed file */
    assert_int_equal(cached.nparse_cached, EXAMPLE_FILES + 2);
    assert_int_equal(cached.committed, 1);

    /* the same from the same deploy head without a state directory */
    free(th_git_ok(f.repo, "update-ref", "refs/heads/deploy", base, NULL));
    run_once(&plain, want, &f, NULL, NULL);
    assert_int_equal(plain.nparse_cached, 0);
    assert_int_equal(plain.nparsed, EXAMPLE_FILES + 3);
    assert_string_equal(tree, want);
    assert_same_report(&cached, &plain);

    /* and the first commit's tree, its warnings (the duplicate key's too) from the cache */
    free(th_git_ok(f.repo, "update-ref", "refs/heads/deploy", base, NULL));
    free(th_git_ok(f.repo, "reset", "-q", "--hard", "HEAD~1", NULL));
    run_once(&cached, tree, &f, f.state, NULL);
    assert_int_equal(cached.nparsed, 0); /* the broken file too is taken, as its error */
    assert_int_equal(cached.nparse_cached, EXAMPLE_FILES + 3);
    free(th_git_ok(f.repo, "update-ref", "refs/heads/deploy", base, NULL));
    run_once(&plain, want, &f, NULL, NULL);
    assert_string_equal(tree, want);
    assert_same_report(&cached, &plain);
    assert_same_report(&cached, &first);
    {
        int dup = 0, line = 0;
        for (size_t i = 0; i < cached.nwarnings; i++) {
            dup |=
                strstr(cached.warnings[i], "fill-and-spill/extra.yaml:8:1: duplicate key") != NULL;
            line |= strstr(cached.warnings[i], "policies/overlap.yaml:") != NULL;
        }
        assert_true(dup);
        assert_true(line);
    }

    /* --no-parse-cache: neither read nor written */
    {
        struct rc_pass_options o = RC_PASS_OPTIONS_INIT;
        struct rc_err err = RC_ERR_INIT;
        struct rc_cache *cache = NULL;
        struct rc_git *g = NULL;
        struct rc_pass_result res;
        o.apply = 0;
        o.force = 1;
        assert_int_equal(rc_cache_new(&cache, f.state, &err), RC_OK);
        rc_cache_no_parse_file(cache);
        o.cache = cache;
        assert_int_equal(rc_git_open(&g, f.repo, NULL, &err), RC_OK);
        assert_int_equal(rc_pass_run(&res, g, &o, &f.a, &err), RC_OK);
        assert_int_equal(res.nparse_cached, 0);
        assert_int_equal(res.nparsed, EXAMPLE_FILES + 3);
        rc_git_free(g);
        rc_cache_free(cache);
    }
    free(base);
    fx_close(&f);
}

/* A pass that is its process's last (`--once`) leaves the packed manifests of what it takes
 * from the cache in the file, and reads those of the units it renders: here all of them, as
 * another Luna label makes no file of the base tree fit to reuse. The tree is the one a pass
 * without a state directory makes. */
static void test_rc_pcache__last_pass_reads_manifests_from_the_file(void **state)
{
    struct fx f;
    struct rc_pass_options o = RC_PASS_OPTIONS_INIT;
    struct rc_pass_result first, cached, plain;
    char tree[41], want[41], *base;
    size_t reads;
    (void)state;

    fx_open(&f);
    o.last_pass = 1;
    run_with(&first, tree, &f, f.state, NULL, &o);
    assert_int_equal(first.nparse_cached, 0);
    base = th_git_rev(f.repo, "refs/heads/deploy");

    o.render.luna_key = "example.com/scale-me";
    o.render.luna_value = "yes";
    reads = rd_payload_reads();
    run_with(&cached, tree, &f, f.state, NULL, &o);
    assert_int_equal(cached.nparse_cached, EXAMPLE_FILES + 3);
    assert_int_equal(cached.committed, 1);
    assert_true(rd_payload_reads() - reads >= EXAMPLE_FILES / 2); /* rendered from the file */
    {
        char *text = th_git_ok(f.repo, "grep", "-c", "example.com/scale-me", "refs/heads/deploy",
                               "--", "clusters", NULL);
        assert_non_null(strstr(text, ":"));
        free(text);
    }

    free(th_git_ok(f.repo, "update-ref", "refs/heads/deploy", base, NULL));
    reads = rd_payload_reads();
    run_with(&plain, want, &f, NULL, NULL, &o);
    assert_int_equal(plain.nparse_cached, 0);
    assert_int_equal(rd_payload_reads(), reads);
    assert_string_equal(tree, want);
    assert_same_report(&cached, &plain);
    free(base);
    fx_close(&f);
}

static char *cache_path(const struct fx *f)
{
    char *p = malloc(strlen(f->state) + 32);

    snprintf(p, strlen(f->state) + 32, "%s/%s", f->state, RC_PCACHE_FILE);
    return p;
}

/* A pass whose files all load writes the cache file on a thread of its own, beside place and
 * render: when the pass returns the file is whole (the next process takes every file from
 * it) and the pass has said so once; a file that cannot be written is a warning that costs
 * the next process work, never the pass. */
static void test_rc_pcache__written_beside_the_pass(void **state)
{
    struct fx f;
    struct rc_pass_result res;
    char tree[41], want[41];
    char *path, *tmp, *text, *at;
    FILE *log = tmpfile();
    (void)state;

    memset(&f, 0, sizeof(f));
    f.repo = th_example_repo();
    f.state = th_tmpdir("pcache-state");
    run_once(&res, tree, &f, f.state, log);
    assert_int_equal(res.nparsed, EXAMPLE_FILES);
    assert_int_equal(res.nfile_errors, 0);
    text = th_slurp(log);
    at = strstr(text, " bytes written to it (");
    assert_non_null(at);
    assert_null(strstr(at + 1, " bytes written to it ("));
    assert_null(strstr(text, "parse cache:"));
    free(text);
    fclose(log);
    run_once(&res, want, &f, f.state, NULL);
    assert_int_equal(res.nparsed, 0);
    assert_int_equal(res.nparse_cached, EXAMPLE_FILES);
    assert_string_equal(tree, want);

    /* the file is rewritten through <file>.tmp.<pid>: a directory there refuses it */
    path = cache_path(&f);
    unlink(path);
    tmp = malloc(strlen(path) + 32);
    snprintf(tmp, strlen(path) + 32, "%s.tmp.%ld", path, (long)getpid());
    assert_int_equal(mkdir(tmp, 0700), 0);
    log = tmpfile();
    run_once(&res, want, &f, f.state, log);
    assert_int_equal(res.nparsed, EXAMPLE_FILES);
    assert_string_equal(tree, want);
    text = th_slurp(log);
    if (!strstr(text, "parse cache: cannot write '"))
        fail_msg("no warning in:\n%s", text);
    free(text);
    fclose(log);
    assert_int_equal(access(path, F_OK), -1);
    run_once(&res, want, &f, f.state, NULL); /* the next process parses again, and writes */
    assert_int_equal(res.nparsed, EXAMPLE_FILES);
    assert_int_equal(rmdir(tmp), 0);
    run_once(&res, want, &f, f.state, NULL);
    assert_int_equal(res.nparsed, EXAMPLE_FILES);
    run_once(&res, want, &f, f.state, NULL);
    assert_int_equal(res.nparse_cached, EXAMPLE_FILES);
    free(tmp);
    free(path);
    fx_close(&f);
}

/* A damaged, truncated or foreign cache file: a warning, the right tree, and the file
 * rewritten whole (the run after it takes everything from the cache again). */
static void test_rc_pcache__damaged_file_costs_work_only(void **state)
{
    struct fx f;
    struct rc_pass_result res, plain;
    char tree[41], want[41];
    char *path, *good, *base;
    size_t len;
    (void)state;

    fx_open(&f);
    run_once(&res, tree, &f, f.state, NULL);
    base = th_git_rev(f.repo, "refs/heads/deploy");
    run_once(&plain, want, &f, NULL, NULL);
    path = cache_path(&f);
    good = th_read_all(path, &len);
    assert_true(len > 200);
    for (int kind = 0; kind < 5; kind++) {
        char *bad = malloc(len);
        size_t blen = len;
        FILE *log = tmpfile();
        char *text;
        memcpy(bad, good, len);
        switch (kind) {
        case 0: /* another build's */
            bad[strlen("rightplace-parse-cache 1\nrightplace ")] ^= 1;
            break;
        case 1: /* truncated in the middle of an entry */
            blen = len / 2;
            break;
        case 2: /* a byte flipped in an entry's payload */
            bad[len - 10] ^= 0x20;
            break;
        case 3: /* garbage */
            memset(bad, 'x', len);
            break;
        case 4: /* an entry's length beyond the file */
            blen = len;
            {
                size_t hdr = (size_t)(strchr(strchr(bad, '\n') + 1, '\n') + 1 - bad);
                bad[hdr + 3] = 0x7f;
            }
            break;
        }
        th_write_all(path, bad, blen);
        free(th_git_ok(f.repo, "update-ref", "refs/heads/deploy", base, NULL));
        run_once(&res, tree, &f, f.state, log);
        text = th_slurp(log);
        if (!strstr(text, "parse cache '") || !strstr(text, "ignored (its files are parsed again)"))
            fail_msg("case %d: no warning in:\n%s", kind, text);
        assert_string_equal(tree, want);
        assert_same_report(&res, &plain);
        assert_int_equal(res.nparsed + res.nparse_cached, EXAMPLE_FILES + 3);
        if (kind == 0 || kind == 3 || kind == 4)
            assert_int_equal(res.nparsed, EXAMPLE_FILES + 3); /* nothing usable */
        else /* the damaged entries, the broken file's among them (the last) */
            assert_true(res.nparsed >= 1 && res.nparse_cached > 0);
        free(text);
        fclose(log);

        /* rewritten: the next run parses nothing, and warns of nothing */
        log = tmpfile();
        free(th_git_ok(f.repo, "update-ref", "refs/heads/deploy", base, NULL));
        run_once(&res, tree, &f, f.state, log);
        text = th_slurp(log);
        assert_null(strstr(text, "parse cache '"));
        assert_int_equal(res.nparsed, 0);
        assert_string_equal(tree, want);
        free(text);
        fclose(log);
        free(bad);
    }
    /* not a regular file: ignored the same way, and left alone */
    unlink(path);
    assert_int_equal(mkdir(path, 0700), 0);
    free(th_git_ok(f.repo, "update-ref", "refs/heads/deploy", base, NULL));
    run_once(&res, tree, &f, f.state, NULL);
    assert_string_equal(tree, want);
    assert_int_equal(res.nparsed, EXAMPLE_FILES + 3);
    free(path);
    free(good);
    free(base);
    fx_close(&f);
}

/* The reader on every prefix of a real cache file, and on every single-byte change of its
 * first entries: never a crash (the ASan build runs this), never an entry that was not
 * written, and what is taken up is what was written. */
static void test_rc_pcache__reader_takes_any_bytes(void **state)
{
    struct fx f;
    struct rc_pass_result res;
    char tree[41];
    char *path, *good, *damaged;
    size_t len;
    struct rc_git_blob *blobs = NULL;
    size_t nblobs = 0;
    struct rc_git *g = NULL;
    struct rc_err err = RC_ERR_INIT;
    struct rc_arena a = RC_ARENA_INIT;
    (void)state;

    fx_open(&f);
    run_once(&res, tree, &f, f.state, NULL);
    path = cache_path(&f);
    good = th_read_all(path, &len);
    damaged = malloc(len);
    assert_int_equal(rc_git_open(&g, f.repo, NULL, &err), RC_OK);
    {
        char *head = th_git_rev(f.repo, "HEAD");
        assert_int_equal(rc_git_list_yaml(&blobs, &nblobs, g, head, NULL, 0, &a, &err), RC_OK);
        free(head);
    }
    for (size_t cut = 0; cut <= len; cut += cut < 600 ? 1 : 97) {
        for (int flip = 0; flip < 2; flip++) {
            struct rc_pcache *pc = NULL;
            struct rd_cache *c = NULL;
            size_t hits = 0;
            memcpy(damaged, good, len);
            if (flip && cut < len)
                damaged[cut] ^= 0x41;
            th_write_all(path, damaged, flip ? len : cut);
            rc_pcache_new(&pc, path);
            rd_cache_new(&c);
            rc_pcache_begin(pc, NULL);
            for (size_t i = 0; i < nblobs; i++)
                hits += (size_t)rc_pcache_load(pc, c, blobs[i].id, blobs[i].path, NULL);
            assert_int_equal(hits, rd_cache_count(c));
            assert_int_equal(hits, rc_pcache_hits(pc));
            if (!flip && cut == len)
                assert_int_equal(hits, nblobs); /* the broken file too, as its error */
            rd_cache_free(c);
            rc_pcache_free(pc);
            /* in batches, on two threads: the same entries */
            {
                size_t taken;
                rc_pcache_new(&pc, path);
                rd_cache_new(&c);
                rc_pcache_begin(pc, NULL);
                taken = rc_pcache_take(pc, c, blobs, nblobs, 2, 0, NULL);
                assert_int_equal(taken, hits);
                assert_int_equal(rd_cache_count(c), hits);
                rd_cache_free(c);
                rc_pcache_free(pc);
            }
        }
    }
    rc_git_free(g);
    rc_arena_release(&a);
    free(damaged);
    free(good);
    free(path);
    fx_close(&f);
}

static long file_size(const char *path)
{
    struct stat st;

    return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

/* n files f00.yaml, f01.yaml, ... (names) holding texts[i], with made-up blob ids, parsed
 * into a new cache (*c) */
static void prime_files(struct rd_cache **c, size_t n, char (*names)[32], const char *const *texts,
                        struct rd_file *files, struct rc_git_blob *blobs, const char **ids)
{
    size_t np = 0;

    memset(blobs, 0, n * sizeof(*blobs));
    for (size_t i = 0; i < n; i++) {
        snprintf(names[i], 32, "f%02zu.yaml", i);
        files[i].path = names[i];
        files[i].data = texts[i];
        files[i].len = strlen(texts[i]);
        blobs[i].path = names[i];
        snprintf(blobs[i].id, sizeof(blobs[i].id), "%040zu", i + 1);
        ids[i] = blobs[i].id;
    }
    assert_int_equal(rd_cache_new(c), RC_OK);
    assert_int_equal(rd_cache_prime(*c, files, ids, n, 1, &np), RC_OK);
    assert_int_equal(np, n);
}

/* Passes append what they parsed; when the entries no file of a pass used outweigh the used
 * ones, or the file is past its bound, it is rewritten with the pass's entries only, within
 * the bound. */
static void test_rc_pcache__appends_then_compacts_within_its_bound(void **state)
{
    static const char *const texts[] = {
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {k: v}\n",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\ndata: {k: v}\n",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {k: v}\n",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: d}\ndata: {k: v}\n",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: e}\ndata: {k: v}\n",
    };
    char *dir = th_tmpdir("pcache-compact");
    char path[4096], names[5][32];
    struct rd_file files[5];
    struct rc_git_blob blobs[5];
    const char *ids[5];
    struct rd_cache *c = NULL;
    struct rc_pcache *pc = NULL;
    struct rc_err err = RC_ERR_INIT;
    long full, one;
    (void)state;

    snprintf(path, sizeof(path), "%s/%s", dir, RC_PCACHE_FILE);
    prime_files(&c, 5, names, texts, files, blobs, ids);

    /* a first pass of four files: the file is written whole */
    rc_pcache_new(&pc, path);
    rc_pcache_begin(pc, NULL);
    assert_int_equal(rc_pcache_save(pc, c, blobs, 4, 0, &err), RC_OK);
    assert_true(rc_pcache_rewritten(pc));
    rc_pcache_free(pc);
    full = file_size(path);

    /* a new process with the same four: nothing to write; then one more file: appended */
    rc_pcache_new(&pc, path);
    rc_pcache_begin(pc, NULL);
    assert_int_equal(rc_pcache_save(pc, c, blobs, 4, 0, &err), RC_OK);
    assert_int_equal(rc_pcache_written(pc), 0);
    assert_false(rc_pcache_rewritten(pc));
    assert_int_equal(file_size(path), full);
    rc_pcache_begin(pc, NULL);
    assert_int_equal(rc_pcache_save(pc, c, blobs, 5, 0, &err), RC_OK);
    assert_false(rc_pcache_rewritten(pc));
    assert_true(rc_pcache_written(pc) > 0);
    assert_int_equal(file_size(path), full + (long)rc_pcache_written(pc));
    full = file_size(path);

    /* a pass of one file: the four others are dead weight, the file is rewritten */
    rc_pcache_begin(pc, NULL);
    assert_int_equal(rc_pcache_save(pc, c, blobs + 4, 1, 0, &err), RC_OK);
    assert_true(rc_pcache_rewritten(pc));
    one = file_size(path);
    assert_true(one < full / 2);
    rc_pcache_free(pc);
    {
        struct rd_cache *fresh = NULL;
        assert_int_equal(rd_cache_new(&fresh), RC_OK);
        rc_pcache_new(&pc, path);
        rc_pcache_begin(pc, NULL);
        assert_int_equal(rc_pcache_take(pc, fresh, blobs, 5, 1, 0, NULL), 1);
        rc_pcache_free(pc);
        rd_cache_free(fresh);
    }

    /* bounded: a file that would pass the bound holds what fits, whole entries */
    rc_pcache_new(&pc, path);
    rc_pcache_begin(pc, NULL);
    assert_int_equal(rc_pcache_save(pc, c, blobs, 5, (size_t)one + 10, &err), RC_OK);
    assert_true(file_size(path) <= one + 10);
    rc_pcache_begin(pc, NULL);
    assert_int_equal(rc_pcache_save(pc, c, blobs, 5, (size_t)full, &err), RC_OK);
    assert_int_equal(file_size(path), full); /* room again: the rest appended */
    /* a bound lowered below the file's size: rewritten within it */
    rc_pcache_begin(pc, NULL);
    assert_int_equal(rc_pcache_save(pc, c, blobs, 5, (size_t)full / 2, &err), RC_OK);
    assert_true(rc_pcache_rewritten(pc));
    assert_true(file_size(path) <= full / 2);
    rc_pcache_free(pc);

    rd_cache_free(c);
    th_rm_rf(dir);
    free(dir);
}

/* A write that fails part way (here the file size limit, as a full disk fails it) is an
 * error that leaves no file, and the pass's debug line counts no bytes written: the buffered
 * entries never reached a file that stays. */
static void test_rc_pcache__failed_write_counts_nothing(void **state)
{
    char *dir = th_tmpdir("pcache-full");
    char path[4096], names[40][32], text[40][96];
    const char *texts[40];
    struct rd_file files[40];
    struct rc_git_blob blobs[40];
    const char *ids[40];
    struct rd_cache *c = NULL;
    pid_t pid;
    int st = 0;
    (void)state;

    snprintf(path, sizeof(path), "%s/%s", dir, RC_PCACHE_FILE);
    for (int i = 0; i < 40; i++) {
        snprintf(text[i], sizeof(text[i]),
                 "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c%d}\ndata: {k: v}\n", i);
        texts[i] = text[i];
    }
    prime_files(&c, 40, names, texts, files, blobs, ids);
    fflush(NULL);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        struct rlimit lim = {4096, 4096};
        struct rc_pcache *pc = NULL;
        struct rc_err err = RC_ERR_INIT;
        int bad = 0;
        signal(SIGXFSZ, SIG_IGN);
        if (setrlimit(RLIMIT_FSIZE, &lim) < 0)
            _exit(9);
        rc_pcache_new(&pc, path);
        rc_pcache_begin(pc, NULL);
        bad |= rc_pcache_save(pc, c, blobs, 40, 0, &err) != RC_ERROR;
        bad |= (strstr(err.msg, "cannot write") == NULL) << 1;
        bad |= (rc_pcache_written(pc) != 0) << 2;
        bad |= (access(path, F_OK) == 0) << 3;
        rc_pcache_free(pc);
        _exit(bad);
    }
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    /* and the same entries do fit without the limit (more than the limit's bytes) */
    {
        struct rc_pcache *pc = NULL;
        struct rc_err err = RC_ERR_INIT;
        rc_pcache_new(&pc, path);
        rc_pcache_begin(pc, NULL);
        assert_int_equal(rc_pcache_save(pc, c, blobs, 40, 0, &err), RC_OK);
        assert_true(rc_pcache_written(pc) > 4096);
        rc_pcache_free(pc);
    }
    rd_cache_free(c);
    th_rm_rf(dir);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rc_pcache__once_after_one_change_parses_one_file),
        cmocka_unit_test(test_rc_pcache__last_pass_reads_manifests_from_the_file),
        cmocka_unit_test(test_rc_pcache__written_beside_the_pass),
        cmocka_unit_test(test_rc_pcache__damaged_file_costs_work_only),
        cmocka_unit_test(test_rc_pcache__reader_takes_any_bytes),
        cmocka_unit_test(test_rc_pcache__appends_then_compacts_within_its_bound),
        cmocka_unit_test(test_rc_pcache__failed_write_counts_nothing),
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
