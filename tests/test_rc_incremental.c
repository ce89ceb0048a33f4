/*
 * test_rc_incremental.c - loop mode does work proportional to the change: a pass after a
 * one-file change, in the rc_cache of the passes before it, reads nothing of the record it
 * wrote, renders that file's unit, and commits exactly the tree a from-scratch pass (a fresh
 * cache, or none: `--once`) makes from the same source and deploy head.
 *
 * Real git repositories in temp dirs; the pass as loop mode runs it (one rc_cache).
 */
#include "th.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rc_cache.h"
#include "rc_git.h"
#include "rc_pass.h"
#include "rd_output.h"
#include "th_git.h"
#include "th_record.h"
#include "th_rp.h"

#include "rc_banned.h"

#define NJOBS 6

static char *home;

static const char *const policy =
    "apiVersion: policy.elotl.co/v1alpha1\n"
    "kind: SchedulePolicy\n"
    "metadata: {name: capacity}\n"
    "spec:\n"
    "  namespaceSelector:\n"
    "    matchLabels: {kubernetes.io/metadata.name: team}\n"
    "  resourceSelectors:\n"
    "    labelSelectors:\n"
    "    - matchExpressions: [{key: app.kubernetes.io/instance, operator: Exists}]\n"
    "  groupBy: {labelKey: app.kubernetes.io/instance}\n";

static void write_job(const char *repo, int i, const char *cpu)
{
    char path[64], text[512];

    snprintf(path, sizeof(path), "jobs/job-%d.yaml", i);
    snprintf(text, sizeof(text),
             "apiVersion: batch/v1\n"
             "kind: Job\n"
             "metadata: {name: job-%d, namespace: team, labels: {app.kubernetes.io/instance: "
             "job-%d}}\n"
             "spec:\n"
             "  template:\n"
             "    spec:\n"
             "      restartPolicy: Never\n"
             "      containers:\n"
             "      - {name: c, image: busybox:1, resources: {requests: {cpu: \"%s\"}}}\n",
             i, i, cpu);
    th_write_file(repo, path, text, (size_t)-1);
}

static char *make_repo(void)
{
    char *repo = th_git_init("incremental", 0);

    th_write_file(repo, "policy.yaml", policy, (size_t)-1);
    for (int c = 0; c < 3; c++) {
        char path[64], text[256];
        snprintf(path, sizeof(path), "fleet/c%d.yaml", c);
        snprintf(text, sizeof(text),
                 "apiVersion: rightplace.dev/v1alpha1\nkind: Cluster\nmetadata: {name: c%d}\n"
                 "spec:\n  nodes:\n  - {name: node, count: 4, allocatable: {cpu: \"8\", "
                 "memory: 16Gi, pods: \"110\"}}\n",
                 c);
        th_write_file(repo, path, text, (size_t)-1);
    }
    for (int i = 0; i < NJOBS; i++)
        write_job(repo, i, "1");
    free(th_git_ok(repo, "add", "-A", NULL));
    free(th_git_ok(repo, "commit", "-q", "-m", "fleet", NULL));
    return repo;
}

/* One pass of `rightplace reconcile --no-apply` with `cache` (NULL: --once without a state
 * directory); *tree gets the deploy head's tree id after it. once: as `reconcile --once` sets
 * the options (the last pass of the process, bounded verdicts). */
/* ... and the source listings it made (rc_git_listings) */
static size_t listings;
/* the log of the passes run_pass_as runs (NULL: none) */
static const struct rc_log *pass_log;

static void run_pass_as(struct rc_pass_result *res, char tree[41], const char *repo,
                        struct rc_cache *cache, int once, struct rc_arena *a)
{
    struct rc_pass_options o = RC_PASS_OPTIONS_INIT;
    struct rc_err err = RC_ERR_INIT;
    struct rc_git *g = NULL;

    o.apply = 0;
    o.cache = cache;
    o.last_pass = once;
    o.bounded_verdicts = once;
    o.log = pass_log;
    assert_int_equal(rc_git_open(&g, repo, NULL, &err), RC_OK);
    if (rc_pass_run(res, g, &o, a, &err) != RC_OK)
        fail_msg("pass: %s", err.msg);
    if (rc_git_commit_tree_id(tree, g, "refs/heads/deploy", &err) != RC_OK)
        fail_msg("deploy tree: %s", err.msg);
    listings = rc_git_listings(g);
    rc_git_free(g);
}

static void run_pass(struct rc_pass_result *res, char tree[41], const char *repo,
                     struct rc_cache *cache, struct rc_arena *a)
{
    run_pass_as(res, tree, repo, cache, 0, a);
}

/* A pass from scratch (no deploy branch, no cache) commits `tree`. */
static void assert_scratch_commits(const char *tree, const char *repo, struct rc_arena *a)
{
    struct rc_pass_result res;
    char again[41];

    free(th_git_ok(repo, "update-ref", "-d", "refs/heads/deploy", NULL));
    run_pass(&res, again, repo, NULL, a);
    assert_string_equal(again, tree);
}

/* A pass with a log (memstream): what it logged, in *text (the caller frees). */
static void run_pass_logged_as(struct rc_pass_result *res, const char *repo, struct rc_cache *cache,
                               int once, char **text, struct rc_arena *a)
{
    struct rc_log log = {0};
    size_t len = 0;
    char tree[41];

    log.level = RC_LOG_INFO;
    log.out = open_memstream(text, &len);
    pass_log = &log;
    run_pass_as(res, tree, repo, cache, once, a);
    pass_log = NULL;
    fclose(log.out);
}

static void run_pass_logged(struct rc_pass_result *res, const char *repo, struct rc_cache *cache,
                            char **text, struct rc_arena *a)
{
    run_pass_logged_as(res, repo, cache, 0, text, a);
}

/* Loop mode warns of a file's problem in the pass that finds it, not in every pass after it
 * (with live clusters every pass loads and places, every few seconds): a warning the last
 * record of the process listed is counted at info level instead. A new one is warned of. */
static void test_rc_incremental__warnings_once_in_loop_mode(void **state)
{
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_pass_result res;
    struct rc_cache *loop = NULL;
    struct rc_err err = RC_ERR_INIT;
    char *repo = make_repo(), *log = NULL;
    static const char dup[] = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: d, namespace: "
                              "team, labels: {app.kubernetes.io/instance: job-0}}\n"
                              "data:\n  k: one\n  k: two\n";

    (void)state;
    assert_int_equal(rc_git_global_init(&err), RC_OK);
    assert_int_equal(rc_cache_new(&loop, NULL, &err), RC_OK);
    th_write_file(repo, "jobs/dup-a.yaml", dup, (size_t)-1);
    free(th_git_ok(repo, "add", "-A", NULL));
    free(th_git_ok(repo, "commit", "-q", "-m", "a duplicate key", NULL));
    run_pass_logged(&res, repo, loop, &log, &a);
    assert_int_equal(res.committed, 1);
    assert_int_equal(res.nwarnings, 1);
    th_assert_contains(log, "dup-a.yaml:6:3: duplicate key 'k'");
    assert_null(strstr(log, "reported by an earlier pass"));
    free(log);

    /* the next change: the same warning, counted */
    write_job(repo, 3, "2");
    free(th_git_ok(repo, "commit", "-q", "-a", "-m", "job-3 cpu", NULL));
    run_pass_logged(&res, repo, loop, &log, &a);
    assert_int_equal(res.committed, 1);
    assert_int_equal(res.nwarnings, 1); /* the record still lists it */
    assert_null(strstr(log, "duplicate key"));
    th_assert_contains(log, "1 warning as reported by an earlier pass");
    free(log);

    /* a new one is warned of, the old one counted */
    {
        char other[sizeof(dup)];
        memcpy(other, dup, sizeof(dup));
        other[strstr(other, "name: d,") - other + 6] = 'e'; /* another ConfigMap */
        th_write_file(repo, "jobs/dup-b.yaml", other, (size_t)-1);
    }
    free(th_git_ok(repo, "add", "-A", NULL));
    free(th_git_ok(repo, "commit", "-q", "-m", "another", NULL));
    run_pass_logged(&res, repo, loop, &log, &a);
    assert_int_equal(res.nwarnings, 2);
    th_assert_contains(log, "dup-b.yaml:6:3: duplicate key 'k'");
    assert_null(strstr(log, "dup-a.yaml"));
    th_assert_contains(log, "1 warning as reported by an earlier pass");
    free(log);

    /* a process of its own (`--once`, no state) warns of both */
    write_job(repo, 4, "2");
    free(th_git_ok(repo, "commit", "-q", "-a", "-m", "job-4 cpu", NULL));
    run_pass_logged(&res, repo, NULL, &log, &a);
    th_assert_contains(log, "dup-a.yaml:6:3: duplicate key 'k'");
    th_assert_contains(log, "dup-b.yaml:6:3: duplicate key 'k'");
    free(log);

    rc_cache_free(loop);
    th_rm_rf(repo);
    free(repo);
    rc_arena_release(&a);
}

/* The same for a broken file: loop mode warns of its error in the pass that finds it, and the
 * passes after it (the source already placed, or a change elsewhere) count it at info level;
 * a file broken later is warned of. */
static void test_rc_incremental__file_errors_once_in_loop_mode(void **state)
{
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_pass_result res;
    struct rc_cache *loop = NULL;
    struct rc_err err = RC_ERR_INIT;
    char *repo = make_repo(), *log = NULL;

    (void)state;
    assert_int_equal(rc_git_global_init(&err), RC_OK);
    assert_int_equal(rc_cache_new(&loop, NULL, &err), RC_OK);
    th_write_file(repo, "jobs/broken-a.yaml", "kind: [\n", (size_t)-1);
    free(th_git_ok(repo, "add", "-A", NULL));
    free(th_git_ok(repo, "commit", "-q", "-m", "a broken file", NULL));
    run_pass_logged(&res, repo, loop, &log, &a);
    assert_int_equal(res.nfile_errors, 1);
    th_assert_contains(log, "warning: jobs/broken-a.yaml");
    free(log);

    /* the same source again: nothing to place, the error counted */
    run_pass_logged(&res, repo, loop, &log, &a);
    assert_int_equal(res.nfile_errors, 1);
    assert_null(strstr(log, "broken-a.yaml"));
    th_assert_contains(log, "1 file error as reported by an earlier pass");
    free(log);

    /* a change elsewhere: placed again, the error still counted */
    write_job(repo, 3, "2");
    free(th_git_ok(repo, "commit", "-q", "-a", "-m", "job-3 cpu", NULL));
    run_pass_logged(&res, repo, loop, &log, &a);
    assert_int_equal(res.committed, 1);
    assert_null(strstr(log, "broken-a.yaml"));
    th_assert_contains(log, "1 file error as reported by an earlier pass");
    free(log);

    /* another file broken: warned of, the first one counted */
    th_write_file(repo, "jobs/broken-b.yaml", "kind: [\n", (size_t)-1);
    free(th_git_ok(repo, "add", "-A", NULL));
    free(th_git_ok(repo, "commit", "-q", "-m", "another", NULL));
    run_pass_logged(&res, repo, loop, &log, &a);
    assert_int_equal(res.nfile_errors, 2);
    th_assert_contains(log, "warning: jobs/broken-b.yaml");
    assert_null(strstr(log, "broken-a.yaml"));
    th_assert_contains(log, "1 file error as reported by an earlier pass");
    free(log);

    /* a process of its own without a state directory warns of both */
    run_pass_logged(&res, repo, NULL, &log, &a);
    th_assert_contains(log, "warning: jobs/broken-a.yaml");
    th_assert_contains(log, "warning: jobs/broken-b.yaml");
    free(log);

    rc_cache_free(loop);
    th_rm_rf(repo);
    free(repo);
    rc_arena_release(&a);
}

/* So does a cron tick: each `--once` process with the state directory knows from the record
 * cache file which warnings and file errors the record it wrote lists (the file's memo keeps
 * their digests). A process without the file warns of all of them. */
static void test_rc_incremental__warnings_once_with_a_state_directory(void **state)
{
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_pass_result res;
    struct rc_cache *tick = NULL;
    struct rc_err err = RC_ERR_INIT;
    char *repo = make_repo(), *dir = th_tmpdir("incremental-state"), *log = NULL;
    static const char dup[] = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: d, namespace: "
                              "team, labels: {app.kubernetes.io/instance: job-0}}\n"
                              "data:\n  k: one\n  k: two\n";
    char other[sizeof(dup)];

    (void)state;
    assert_int_equal(rc_git_global_init(&err), RC_OK);
    th_write_file(repo, "jobs/dup-a.yaml", dup, (size_t)-1);
    th_write_file(repo, "jobs/broken.yaml", "kind: [\n", (size_t)-1);
    free(th_git_ok(repo, "add", "-A", NULL));
    free(th_git_ok(repo, "commit", "-q", "-m", "a duplicate key, a broken file", NULL));
    assert_int_equal(rc_cache_new(&tick, dir, &err), RC_OK);
    run_pass_logged_as(&res, repo, tick, 1, &log, &a);
    rc_cache_free(tick);
    assert_int_equal(res.committed, 1);
    th_assert_contains(log, "dup-a.yaml:6:3: duplicate key 'k'");
    th_assert_contains(log, "warning: jobs/broken.yaml");
    free(log);

    /* the next tick, after a change and with a new file's warning */
    write_job(repo, 3, "2");
    memcpy(other, dup, sizeof(dup));
    other[strstr(other, "name: d,") - other + 6] = 'e';
    th_write_file(repo, "jobs/dup-b.yaml", other, (size_t)-1);
    free(th_git_ok(repo, "add", "-A", NULL));
    free(th_git_ok(repo, "commit", "-q", "-m", "job-3 cpu, another", NULL));
    assert_int_equal(rc_cache_new(&tick, dir, &err), RC_OK);
    run_pass_logged_as(&res, repo, tick, 1, &log, &a);
    rc_cache_free(tick);
    assert_int_equal(res.committed, 1);
    assert_int_equal(res.nwarnings, 2); /* the record lists both */
    th_assert_contains(log, "dup-b.yaml:6:3: duplicate key 'k'");
    assert_null(strstr(log, "dup-a.yaml"));
    th_assert_contains(log, "1 warning as reported by an earlier pass");
    assert_null(strstr(log, "broken.yaml"));
    th_assert_contains(log, "1 file error as reported by an earlier pass");
    free(log);

    /* a tick with no new warning: both counted */
    write_job(repo, 4, "2");
    free(th_git_ok(repo, "commit", "-q", "-a", "-m", "job-4 cpu", NULL));
    assert_int_equal(rc_cache_new(&tick, dir, &err), RC_OK);
    run_pass_logged_as(&res, repo, tick, 1, &log, &a);
    rc_cache_free(tick);
    assert_null(strstr(log, "duplicate key"));
    th_assert_contains(log, "2 warnings as reported by an earlier pass");
    free(log);

    /* the state directory emptied (or another host's): both warned of again */
    th_rm_rf(dir);
    free(dir);
    dir = th_tmpdir("incremental-state");
    write_job(repo, 5, "2");
    free(th_git_ok(repo, "commit", "-q", "-a", "-m", "job-5 cpu", NULL));
    assert_int_equal(rc_cache_new(&tick, dir, &err), RC_OK);
    run_pass_logged_as(&res, repo, tick, 1, &log, &a);
    rc_cache_free(tick);
    th_assert_contains(log, "dup-a.yaml:6:3: duplicate key 'k'");
    th_assert_contains(log, "dup-b.yaml:6:3: duplicate key 'k'");
    th_assert_contains(log, "warning: jobs/broken.yaml");
    assert_null(strstr(log, "reported by an earlier pass"));
    free(log);

    th_rm_rf(dir);
    free(dir);
    th_rm_rf(repo);
    free(repo);
    rc_arena_release(&a);
}

/* The pass after a one-file change keeps the record the pass before wrote (0 units read),
 * renders one unit, and commits the tree a from-scratch pass commits. */
static void test_rc_incremental__one_change_reads_no_record(void **state)
{
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_pass_result res;
    struct rc_cache *loop = NULL, *fresh = NULL;
    struct rc_err err = RC_ERR_INIT;
    char *repo = make_repo(), *first;
    char tree[41], again[41];

    (void)state;
    assert_int_equal(rc_git_global_init(&err), RC_OK);
    assert_int_equal(rc_cache_new(&loop, NULL, &err), RC_OK);
    run_pass(&res, tree, repo, loop, &a);
    assert_int_equal(res.committed, 1);
    assert_int_equal(res.nrecord_read, 0); /* no deploy branch yet */
    assert_int_equal(res.nrecord_written, NJOBS);
    first = th_git_rev(repo, "refs/heads/deploy");

    write_job(repo, 3, "2");
    free(th_git_ok(repo, "commit", "-q", "-a", "-m", "job-3 cpu", NULL));
    run_pass(&res, tree, repo, loop, &a);
    assert_int_equal(res.committed, 1);
    assert_int_equal(res.nrecord_read, 0); /* the record the first pass wrote, kept */
    assert_int_equal(res.nrendered, 1);
    assert_int_equal(res.nrecord_written, 0); /* its decision and entry are as they were */
    /* nor is the old record read back: the memo tells it is the head's, byte for byte, and
     * the head's blob stays */
    assert_int_equal(res.nrecord_bytes_read, 0);
    assert_int_equal(res.record_kept, 1);
    assert_int_equal(res.nrecord_compared, 0);
    {
        char *before = th_git_rev(repo, "refs/heads/deploy~1:placements.yaml");
        char *after = th_git_rev(repo, "refs/heads/deploy:placements.yaml");
        assert_string_equal(after, before);
        free(before);
        free(after);
    }

    /* from scratch, from the same deploy head and source: a fresh cache reads the record and
     * commits the same tree; so does a pass without a cache */
    free(th_git_ok(repo, "update-ref", "refs/heads/deploy", first, NULL));
    assert_int_equal(rc_cache_new(&fresh, NULL, &err), RC_OK);
    run_pass(&res, again, repo, fresh, &a);
    assert_int_equal(res.committed, 1);
    assert_int_equal(res.nrecord_read, NJOBS);
    assert_true(res.nrecord_bytes_read > 0);
    assert_int_equal(res.record_kept, 0); /* its memo has written nothing yet */
    assert_string_equal(again, tree);
    free(th_git_ok(repo, "update-ref", "refs/heads/deploy", first, NULL));
    run_pass(&res, again, repo, NULL, &a);
    assert_int_equal(res.nrecord_read, NJOBS);
    assert_true(res.nrecord_bytes_read > 0);
    assert_string_equal(again, tree);

    /* a pass after the loop's own commit again reads nothing */
    write_job(repo, 4, "2");
    free(th_git_ok(repo, "commit", "-q", "-a", "-m", "job-4 cpu", NULL));
    run_pass(&res, tree, repo, fresh, &a);
    assert_int_equal(res.committed, 1);
    assert_int_equal(res.nrecord_read, 0);
    free(first);
    first = th_git_rev(repo, "refs/heads/deploy");

    /* a new unit: its record entry is the one written; the tree is the one a pass without a
     * cache commits */
    write_job(repo, NJOBS, "1");
    free(th_git_ok(repo, "add", "-A", NULL));
    free(th_git_ok(repo, "commit", "-q", "-m", "one more job", NULL));
    run_pass(&res, tree, repo, fresh, &a);
    assert_int_equal(res.committed, 1);
    assert_int_equal(res.placed, NJOBS + 1);
    assert_int_equal(res.nrecord_read, 0);
    assert_int_equal(res.nrendered, 1);
    assert_int_equal(res.nrecord_written, 1);
    assert_int_equal(res.record_kept, 0);
    free(th_git_ok(repo, "update-ref", "refs/heads/deploy", first, NULL));
    run_pass(&res, again, repo, NULL, &a);
    assert_string_equal(again, tree);

    /* the deploy head is not the memo's last record (the head went back, and then someone
     * edited placements.yaml there): the record is written whole, the edit repaired */
    {
        char *wt = th_tmpdir("incremental-wt"), *edited, *rec, *want;
        th_rm_rf(wt);
        free(th_git_ok(repo, "worktree", "add", "-q", "--detach", wt, "refs/heads/deploy", NULL));
        want = th_git_show(repo, "refs/heads/deploy", "placements.yaml");
        assert_non_null(want);
        edited = malloc(strlen(want) + 16);
        assert_non_null(edited);
        snprintf(edited, strlen(want) + 16, "%s# edited\n", want);
        th_write_file(wt, "placements.yaml", edited, (size_t)-1);
        free(th_git_ok(wt, "commit", "-q", "-a", "-m", "a hand edit", NULL));
        free(th_git_ok(wt, "push", "-q", "-f", ".", "HEAD:refs/heads/deploy", NULL));
        write_job(repo, 5, "2");
        free(th_git_ok(repo, "commit", "-q", "-a", "-m", "job-5 cpu", NULL));
        run_pass(&res, tree, repo, fresh, &a);
        assert_int_equal(res.committed, 1);
        assert_int_equal(res.record_kept, 0);
        rec = th_git_show(repo, "refs/heads/deploy", "placements.yaml");
        assert_non_null(rec);
        assert_null(strstr(rec, "# edited"));
        free(rec);
        free(edited);
        free(want);
        free(th_git_ok(repo, "worktree", "remove", "--force", wt, NULL));
        free(wt);
    }

    rc_cache_free(loop);
    rc_cache_free(fresh);
    free(first);
    rc_git_global_shutdown();
    rc_arena_release(&a);
    th_rm_rf(repo);
    free(repo);
}

/* The entries of a record in one file ("- unit: <name>" and its indented lines), for a count
 * independent of the writer's memo: how many units of `old` have the same entry in `now`. */
static size_t entries_alike(const char *old, const char *now)
{
    size_t n = 0;
    const char *p = strstr(old, "\nunits:\n");

    for (p = p ? strstr(p, "\n- unit: ") : NULL; p; p = strstr(p + 1, "\n- unit: ")) {
        const char *end = p + 1, *name = p + 9, *found;
        size_t len, nlen = strcspn(name, "\n");
        while ((end = strchr(end, '\n')) != NULL && !strncmp(end + 1, "  ", 2))
            end++;
        len = end ? (size_t)(end - p) : strlen(p);
        for (found = strstr(now, "\n- unit: "); found; found = strstr(found + 1, "\n- unit: ")) {
            if (!strncmp(found + 9, name, nlen) && found[9 + nlen] == '\n')
                break;
        }
        if (found && !strncmp(found, p, len) && (found[len] == '\n' || !found[len]) &&
            strncmp(found + len, "\n  ", 3))
            n++;
    }
    return n;
}

/* Loop mode keeps the record it committed for the next pass. A record that changes by a few
 * units is made over the one before it, sharing the entries that did not change, which is the
 * change's work and not the fleet's; it is the record a parse of the committed file gives, pass
 * after pass, while units come and go. The chain of records sharing memory is cut (the next
 * record made whole) once units no record uses pile up: memory stays what the record needs. */
static void test_rc_incremental__kept_record_made_over_the_last(void **state)
{
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_pass_result res;
    struct rc_cache *loop = NULL;
    struct rc_err err = RC_ERR_INIT;
    char *repo = make_repo();
    char tree[41];
    size_t units = NJOBS, nshared = 0, nwhole = 0;

    (void)state;
    assert_int_equal(rc_git_global_init(&err), RC_OK);
    assert_int_equal(rc_cache_new(&loop, NULL, &err), RC_OK);
    run_pass(&res, tree, repo, loop, &a);
    assert_int_equal(res.committed, 1);
    assert_int_equal(res.nrecord_shared, 0); /* nothing before it */
    for (int i = 0; i < 24; i++) {
        int removed = i % 3 == 2;
        struct rc_arena pa = RC_ARENA_INIT;
        struct rd_record parsed;
        const struct rd_record *kept;
        char *blob, *text, *before = th_git_show(repo, "refs/heads/deploy", "placements.yaml");
        char cm[256];

        write_job(repo, NJOBS + i, "1"); /* a unit comes, and a ConfigMap moves to another */
        snprintf(cm, sizeof(cm),
                 "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: extra, namespace: team, "
                 "labels: {app.kubernetes.io/instance: job-%d}}\ndata: {a: b}\n",
                 i % NJOBS);
        th_write_file(repo, "jobs/extra.yaml", cm, (size_t)-1);
        if (removed) /* and one goes */
            unlink(rc_arena_printf(&a, "%s/jobs/job-%d.yaml", repo, NJOBS + i - 2));
        free(th_git_ok(repo, "add", "-A", NULL));
        free(th_git_ok(repo, "commit", "-q", "-m", "a job more", NULL));
        run_pass(&res, tree, repo, loop, &pa);
        assert_int_equal(res.committed, 1);
        assert_int_equal(res.nrecord_read, 0);
        text = th_git_show(repo, "refs/heads/deploy", "placements.yaml");
        /* shared: every unit the last record had, as it had it; or none (made whole) */
        if (res.nrecord_shared) {
            assert_int_equal(res.nrecord_shared, entries_alike(before, text));
            nshared++;
        } else {
            nwhole++;
        }
        units += 1 - (size_t)removed;
        blob = th_git_rev(repo, "refs/heads/deploy:placements.yaml");
        kept = rc_cache_record(loop, blob);
        assert_non_null(kept);
        if (rd_record_parse(&parsed, text, strlen(text), &pa, &err) < 0)
            fail_msg("%s", err.msg);
        th_assert_records_equal(kept, &parsed);
        free(text);
        free(before);
        free(blob);
        rc_arena_release(&pa);
    }
    /* most records were made over the last; the units that went cut the chain at least once */
    assert_true(nshared >= 16);
    assert_true(nwhole >= 1);
    assert_scratch_commits(tree, repo, &a);

    rc_cache_free(loop);
    rc_git_global_shutdown();
    rc_arena_release(&a);
    th_rm_rf(repo);
    free(repo);
}

/* The cache's chain of records made over the last (rc_cache_take_record_over): a record may be
 * made over the current one until the chain holds 64 records, or until units no record uses
 * pass a quarter of the record's; then it is made whole, and the chain goes two records later.
 * The record before the current one stays readable until the next record is taken (a pass's
 * result may point into it); the sanitizers see every buffer freed once, none twice. */
static const char *blob_of(int i)
{
    static char b[41];
    snprintf(b, sizeof(b), "%040d", i);
    return b;
}

static void take_next(struct rc_cache *c, int i, size_t dropped, size_t *nshared, size_t *nwhole)
{
    const struct rd_record *cur = rc_cache_record(c, blob_of(i - 1));
    const struct rd_record *base = rc_cache_record_to_share(c, blob_of(i - 1));
    struct rc_arena fresh = RC_ARENA_INIT;
    struct rd_record next;

    assert_non_null(cur);
    if (base && dropped != (size_t)-1) { /* the units shared, the arrays its own */
        assert_ptr_equal(base, cur);
        next = *base;
        next.units = rc_arena_take(&fresh, calloc(base->nunits + 1, sizeof(*next.units)),
                                   (base->nunits + 1) * sizeof(*next.units));
        next.tallies = rc_arena_take(&fresh, calloc(base->nunits + 1, sizeof(*next.tallies)),
                                     (base->nunits + 1) * sizeof(*next.tallies));
        memcpy(next.units, base->units, base->nunits * sizeof(*next.units));
        memcpy(next.tallies, base->tallies, base->nunits * sizeof(*next.tallies));
        rc_cache_take_record_over(c, blob_of(i), &next, &fresh, rc_arena_strdup(&fresh, "text"), 4,
                                  dropped);
        (*nshared)++;
    } else {
        rd_record_copy(&next, cur, &fresh);
        rc_cache_take_record(c, blob_of(i), &next, &fresh, NULL, 0);
        (*nwhole)++;
    }
}

static void test_rc_incremental__kept_record_chain_is_cut(void **state)
{
    struct rc_cache *c = NULL;
    struct rc_err err = RC_ERR_INIT;
    struct rc_arena fresh = RC_ARENA_INIT;
    struct pl_prev_unit units[8];
    struct rd_verdict_tally tallies[8];
    struct rd_record first = {"", NULL, 8, units, tallies}, r, before = first;
    size_t nshared = 0, nwhole = 0;
    char names[8][8];

    (void)state;
    memset(units, 0, sizeof(units));
    memset(tallies, 0, sizeof(tallies));
    for (int u = 0; u < 8; u++) {
        snprintf(names[u], sizeof(names[u]), "u%d", u);
        units[u].unit = names[u];
        units[u].state = PL_STATE_PLACED;
    }
    assert_int_equal(rc_cache_new(&c, NULL, &err), RC_OK);
    rd_record_copy(&r, &first, &fresh);
    rc_cache_take_record(c, blob_of(0), &r, &fresh, NULL, 0);
    for (int i = 1; i <= 70; i++) {
        /* the pass's copy of the current record (prev_record_blob copies it so) */
        struct rd_record now = *rc_cache_record(c, blob_of(i - 1));
        /* the record before it, copied a take ago, is still there */
        for (int u = 0; i > 1 && u < 8; u++)
            assert_string_equal(before.units[u].unit, names[u]);
        take_next(c, i, 0, &nshared, &nwhole);
        /* the whole record comes after 63 made over the last, and the chain starts again */
        assert_int_equal(nwhole, i >= 64 ? 1 : 0);
        assert_int_equal(nshared, (size_t)(i >= 64 ? i - 1 : i));
        /* a pass's result may point into the record it started from: still there */
        for (int u = 0; u < 8; u++)
            assert_string_equal(now.units[u].unit, names[u]);
        before = now;
    }
    /* units no record uses pile up: 3 of 8 dropped is past a quarter, so the next is whole */
    take_next(c, 71, 3, &nshared, &nwhole);
    assert_int_equal(nshared, 70 - 1 + 1);
    assert_null(rc_cache_record_to_share(c, blob_of(71)));
    take_next(c, 72, 0, &nshared, &nwhole);
    assert_int_equal(nwhole, 2);
    assert_non_null(rc_cache_record_to_share(c, blob_of(72)));
    rc_cache_free(c);
}

/* A pass lists the source's files once: a changed source commit is listed for the no-op
 * check (did any YAML change?), and the load takes that listing rather than walking the
 * tree again; a commit that changes no YAML is skipped after that one listing. */
static void test_rc_incremental__source_listed_once(void **state)
{
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_pass_result res;
    struct rc_cache *loop = NULL;
    struct rc_err err = RC_ERR_INIT;
    char *repo = make_repo();
    char tree[41], again[41];

    (void)state;
    assert_int_equal(rc_git_global_init(&err), RC_OK);
    assert_int_equal(rc_cache_new(&loop, NULL, &err), RC_OK);
    run_pass(&res, tree, repo, loop, &a);
    assert_int_equal(res.committed, 1);
    assert_int_equal(listings, 1);

    write_job(repo, 2, "3");
    free(th_git_ok(repo, "commit", "-q", "-a", "-m", "job-2 cpu", NULL));
    run_pass(&res, tree, repo, loop, &a);
    assert_int_equal(res.committed, 1);
    assert_int_equal(res.nparsed, 1);
    assert_int_equal(listings, 1);

    th_write_file(repo, "README.md", "notes\n", (size_t)-1);
    free(th_git_ok(repo, "add", "-A", NULL));
    free(th_git_ok(repo, "commit", "-q", "-m", "readme", NULL));
    run_pass(&res, again, repo, loop, &a);
    assert_int_equal(res.skipped, 1);
    assert_int_equal(listings, 1);

    /* and what the listing fed is what a pass without a cache makes */
    write_job(repo, 4, "2");
    free(th_git_ok(repo, "commit", "-q", "-a", "-m", "job-4 cpu", NULL));
    run_pass(&res, tree, repo, loop, &a);
    assert_int_equal(listings, 1);
    assert_scratch_commits(tree, repo, &a);

    rc_cache_free(loop);
    rc_git_global_shutdown();
    rc_arena_release(&a);
    th_rm_rf(repo);
    free(repo);
}

/* Loop mode keeps one repository handle: a pass lists the deploy head it diffs against from
 * what the handle kept of the tree the pass before wrote (built whole, then updated), walking
 * no tree, and commits what a pass without any of that commits. */
static void test_rc_incremental__deploy_tree_listed_from_memory(void **state)
{
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_pass_result res;
    struct rc_pass_options o = RC_PASS_OPTIONS_INIT;
    struct rc_cache *loop = NULL;
    struct rc_git *g = NULL;
    struct rc_err err = RC_ERR_INIT;
    char *repo = make_repo();
    char tree[41];

    (void)state;
    assert_int_equal(rc_git_global_init(&err), RC_OK);
    assert_int_equal(rc_cache_new(&loop, NULL, &err), RC_OK);
    assert_int_equal(rc_git_open(&g, repo, NULL, &err), RC_OK);
    o.apply = 0;
    o.cache = loop;
    for (int i = 0; i < 4; i++) {
        if (i) {
            write_job(repo, i, i % 2 ? "2" : "3");
            if (i == 3)
                unlink(rc_arena_printf(&a, "%s/jobs/job-0.yaml", repo)); /* a file goes */
            free(th_git_ok(repo, "add", "-A", NULL));
            free(th_git_ok(repo, "commit", "-q", "-m", "change", NULL));
        }
        if (rc_pass_run(&res, g, &o, &a, &err) != RC_OK)
            fail_msg("pass %d: %s", i, err.msg);
        assert_int_equal(res.committed, 1);
        assert_int_equal(rc_git_tree_walks(g), 0);
    }
    assert_int_equal(rc_git_commit_tree_id(tree, g, "refs/heads/deploy", &err), RC_OK);
    assert_scratch_commits(tree, repo, &a);

    rc_git_free(g);
    rc_cache_free(loop);
    rc_git_global_shutdown();
    rc_arena_release(&a);
    th_rm_rf(repo);
    free(repo);
}

/* A pass of a new process (`--once`) has no listing of the deploy head kept: it walks the head
 * on another core while it loads the source (rc_git_list_ahead), and the diff takes that
 * listing instead of walking the head again. It commits what a pass from scratch commits. */
static void test_rc_incremental__deploy_head_listed_ahead(void **state)
{
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_pass_result res;
    struct rc_pass_options o = RC_PASS_OPTIONS_INIT;
    struct rc_git *g = NULL;
    struct rc_err err = RC_ERR_INIT;
    char *repo = make_repo();
    char tree[41];

    (void)state;
    assert_int_equal(rc_git_global_init(&err), RC_OK);
    o.apply = 0;
    o.last_pass = 1;
    o.bounded_verdicts = 1;
    run_pass(&res, tree, repo, NULL, &a);
    assert_int_equal(res.committed, 1);
    for (int i = 1; i <= 2; i++) {
        write_job(repo, i, i == 1 ? "2" : "3");
        free(th_git_ok(repo, "commit", "-q", "-a", "-m", "change", NULL));
        assert_int_equal(rc_git_open(&g, repo, NULL, &err), RC_OK);
        if (rc_pass_run(&res, g, &o, &a, &err) != RC_OK)
            fail_msg("pass %d: %s", i, err.msg);
        assert_int_equal(res.committed, 1);
        assert_int_equal(rc_git_tree_walks_ahead(g), 1);
        assert_int_equal(rc_git_tree_walks(g), 1);
        assert_int_equal(rc_git_commit_tree_id(tree, g, "refs/heads/deploy", &err), RC_OK);
        rc_git_free(g);
        g = NULL;
    }
    assert_scratch_commits(tree, repo, &a);

    rc_git_global_shutdown();
    rc_arena_release(&a);
    th_rm_rf(repo);
    free(repo);
}

/* A pass that writes thousands of files hashes them on several threads: every object the
 * deploy branch holds is stored under the id of its bytes (git fsck --strict checks each),
 * and the tree is the one git computes from a checkout of it. */
static void test_rc_incremental__many_files_hash_as_git_does(void **state)
{
    enum { MANY = 4500 };
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_pass_result res;
    struct rc_err err = RC_ERR_INIT;
    char *repo = th_git_init("manyfiles", 0), *fsck, *count, *again, *work, tree[41];

    (void)state;
    assert_int_equal(rc_git_global_init(&err), RC_OK);
    th_write_file(repo, "policy.yaml", policy, (size_t)-1);
    th_write_file(repo, "fleet/c0.yaml",
                  "apiVersion: rightplace.dev/v1alpha1\nkind: Cluster\nmetadata: {name: c0}\n"
                  "spec:\n  nodes:\n  - {name: node, count: 8, allocatable: {cpu: \"64\", "
                  "memory: 256Gi, pods: \"1000\"}}\n",
                  (size_t)-1);
    for (int i = 0; i < MANY; i++)
        write_job(repo, i, "10m");
    free(th_git_ok(repo, "add", "-A", NULL));
    free(th_git_ok(repo, "commit", "-q", "-m", "many", NULL));
    run_pass_as(&res, tree, repo, NULL, 1, &a);
    assert_int_equal(res.committed, 1);
    assert_int_equal(res.placed, MANY);
    fsck = th_git_ok(repo, "fsck", "--strict", "--no-dangling", NULL);
    free(fsck);
    count = th_git_ok(repo, "ls-tree", "-r", "--name-only", "deploy", NULL);
    assert_true(th_count(count, "\n") > MANY);
    free(count);
    /* the same tree from the files alone, through git */
    work = th_tmpdir("manyfiles-work");
    free(th_git_ok(repo, "worktree", "add", "-q", work, "deploy", NULL));
    free(th_git_ok(work, "add", "-A", NULL));
    again = th_git_ok(work, "write-tree", NULL);
    again[strcspn(again, "\n")] = '\0';
    assert_string_equal(again, tree);
    free(again);
    th_rm_rf(work);
    free(work);
    th_rm_rf(repo);
    free(repo);
    rc_arena_release(&a);
}

/* The last pass of a process (reconcile --once) keeps nothing in memory for a next one: it
 * writes no record memo (0 entries counted as written) and leaves no record in the cache, so
 * a pass after it on the same cache reads the record; the trees are those of loop passes. */
static void test_rc_incremental__last_pass_keeps_nothing(void **state)
{
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_pass_result res;
    struct rc_cache *once = NULL, *loop = NULL;
    struct rc_err err = RC_ERR_INIT;
    char *repo = make_repo(), *first, *last, *prev_blob, *prev_size;
    char tree[41], again[41];

    (void)state;
    assert_int_equal(rc_git_global_init(&err), RC_OK);
    assert_int_equal(rc_cache_new(&once, NULL, &err), RC_OK);
    run_pass_as(&res, tree, repo, once, 1, &a);
    assert_int_equal(res.committed, 1);
    assert_int_equal(res.placed, NJOBS);
    assert_int_equal(res.nrecord_written, 0);
    assert_int_equal(rd_record_memo_stats(rc_cache_record_memo(once)).units_written, 0);
    first = th_git_rev(repo, "refs/heads/main");

    write_job(repo, 3, "2");
    free(th_git_ok(repo, "commit", "-q", "-a", "-m", "job-3 cpu", NULL));
    last = th_git_rev(repo, "refs/heads/main");
    run_pass_as(&res, tree, repo, once, 1, &a);
    assert_int_equal(res.committed, 1);
    assert_int_equal(res.nrecord_read, NJOBS); /* nothing was kept: read back */
    /* the record it read is not copied into the cache either, and it was read once: the new
     * record is compared with the bytes read, not with a second read of the blob */
    prev_blob = th_git_rev(repo, "refs/heads/deploy~1:placements.yaml");
    assert_null(rc_cache_record(once, prev_blob));
    prev_size = th_git_ok(repo, "cat-file", "-s", prev_blob, NULL);
    assert_int_equal(res.nrecord_bytes_read, strtoul(prev_size, NULL, 10));

    /* loop passes from the same start commit the same trees */
    free(th_git_ok(repo, "update-ref", "-d", "refs/heads/deploy", NULL));
    free(th_git_ok(repo, "update-ref", "refs/heads/main", first, NULL));
    assert_int_equal(rc_cache_new(&loop, NULL, &err), RC_OK);
    run_pass(&res, again, repo, loop, &a);
    assert_int_equal(res.nrecord_written, NJOBS);
    free(th_git_ok(repo, "update-ref", "refs/heads/main", last, NULL));
    run_pass(&res, again, repo, loop, &a);
    assert_int_equal(res.nrecord_read, 0);
    assert_string_equal(again, tree);

    rc_cache_free(once);
    rc_cache_free(loop);
    free(first);
    free(last);
    free(prev_blob);
    free(prev_size);
    rc_git_global_shutdown();
    rc_arena_release(&a);
    th_rm_rf(repo);
    free(repo);
}

/* Someone else's commit on the deploy branch changes placements.yaml: the edit is not taken
 * (rc_pass.c, record_commit). The pass starts from the record of rightplace's last commit,
 * which it keeps, so it reads nothing, and its commit restores the file. */
static void test_rc_incremental__edited_record_is_not_taken(void **state)
{
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_pass_result res;
    struct rc_cache *loop = NULL;
    struct rc_err err = RC_ERR_INIT;
    char *repo = make_repo(), *wt, *text, *before, *after;
    char tree[41];

    (void)state;
    assert_int_equal(rc_git_global_init(&err), RC_OK);
    assert_int_equal(rc_cache_new(&loop, NULL, &err), RC_OK);
    run_pass(&res, tree, repo, loop, &a);
    assert_int_equal(res.committed, 1);
    before = th_git_show(repo, "deploy", "placements.yaml");

    wt = th_tmpdir("incremental-wt");
    th_rm_rf(wt);
    free(th_git_ok(repo, "worktree", "add", "-q", wt, "deploy", NULL));
    text = th_git_ok(wt, "show", "HEAD:placements.yaml", NULL);
    th_write_file(wt, "placements.yaml", text, strlen(text) - 1); /* one byte less */
    free(text);
    free(th_git_ok(wt, "commit", "-q", "-a", "-m", "edit the record", NULL));
    free(th_git_ok(repo, "worktree", "remove", "--force", wt, NULL));
    free(wt);

    write_job(repo, 3, "2");
    free(th_git_ok(repo, "commit", "-q", "-a", "-m", "job-3 cpu", NULL));
    run_pass(&res, tree, repo, loop, &a);
    assert_int_equal(res.nhand_edits, 1);
    assert_int_equal(res.nrecord_read, 0);
    assert_int_equal(res.committed, 1);
    after = th_git_show(repo, "deploy", "placements.yaml");
    assert_string_equal(after, before); /* job-3's cpu is no decision: the record as written */

    free(before);
    free(after);
    rc_cache_free(loop);
    rc_git_global_shutdown();
    rc_arena_release(&a);
    th_rm_rf(repo);
    free(repo);
}

/* libgit2's object cache has a bound that follows the source (rc_git_cache_bound). A loop
 * reads the trees of new commits every pass and never those of the commits before, and
 * libgit2's own bound, 256 MiB, let them pile up: about 40 KB of heap a changing pass at
 * 10,000 workloads, 0.3 MB at 100,000 (bench/RESULTS.md, note 84). A pass sets the bound for
 * the files it lists; under a small fixed bound the cache stays near it over many passes, and
 * the passes commit what a pass from scratch commits. */
#define CACHE_TEST_BOUND ((size_t)16 << 10)
#define CACHE_TEST_PASSES 40

static void test_rc_incremental__git_cache_bounded(void **state)
{
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_pass_result res;
    struct rc_pass_options o = RC_PASS_OPTIONS_INIT;
    struct rc_cache *loop = NULL;
    struct rc_git *g = NULL;
    struct rc_err err = RC_ERR_INIT;
    char *repo = make_repo();
    char tree[41];
    size_t used = 0, limit = 0, most = 0;
    const char *unbounded = getenv("RP_TEST_CACHE_UNBOUNDED"); /* shows the growth it stops */

    (void)state;
    assert_int_equal(rc_git_global_init(&err), RC_OK);
    rc_git_cache_usage(&used, &limit);
    assert_int_equal(limit, RC_GIT_CACHE_BASE);
    assert_int_equal(rc_git_cache_bound(100000), RC_GIT_CACHE_BASE + 100000 * 256);
    assert_int_equal(rc_git_cache_bound((size_t)1 << 40), RC_GIT_CACHE_MAX);

    /* a pass bounds it by the source it lists: NJOBS jobs, 3 Clusters and the policy */
    run_pass(&res, tree, repo, NULL, &a);
    rc_git_cache_usage(&used, &limit);
    assert_int_equal(limit, rc_git_cache_bound(NJOBS + 4));
    free(th_git_ok(repo, "update-ref", "-d", "refs/heads/deploy", NULL));

    rc_git_cache_limit(unbounded ? RC_GIT_CACHE_MAX : CACHE_TEST_BOUND);
    assert_int_equal(rc_cache_new(&loop, NULL, &err), RC_OK);
    assert_int_equal(rc_git_open(&g, repo, NULL, &err), RC_OK);
    o.apply = 0;
    o.cache = loop;
    for (int i = 0; i < CACHE_TEST_PASSES; i++) {
        char cpu[16];
        if (i) {
            snprintf(cpu, sizeof(cpu), "%dm", 100 + i);
            write_job(repo, i % NJOBS, cpu);
            free(th_git_ok(repo, "commit", "-q", "-a", "-m", "change", NULL));
        }
        if (rc_pass_run(&res, g, &o, &a, &err) != RC_OK)
            fail_msg("pass %d: %s", i, err.msg);
        assert_int_equal(res.committed, 1);
        rc_git_cache_usage(&used, &limit);
        if (used > most)
            most = used;
        if (unbounded)
            print_message("pass %d: libgit2 cache %zu bytes\n", i, used);
    }
    /* libgit2 evicts when a store passes the bound: a tree or two over it at most */
    assert_true(most <= 2 * CACHE_TEST_BOUND);
    assert_int_equal(rc_git_commit_tree_id(tree, g, "refs/heads/deploy", &err), RC_OK);
    assert_scratch_commits(tree, repo, &a);

    rc_git_cache_limit(0);
    rc_git_free(g);
    rc_cache_free(loop);
    rc_git_global_shutdown();
    rc_arena_release(&a);
    th_rm_rf(repo);
    free(repo);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rc_incremental__one_change_reads_no_record),
        cmocka_unit_test(test_rc_incremental__kept_record_made_over_the_last),
        cmocka_unit_test(test_rc_incremental__kept_record_chain_is_cut),
        cmocka_unit_test(test_rc_incremental__warnings_once_in_loop_mode),
        cmocka_unit_test(test_rc_incremental__warnings_once_with_a_state_directory),
        cmocka_unit_test(test_rc_incremental__file_errors_once_in_loop_mode),
        cmocka_unit_test(test_rc_incremental__source_listed_once),
        cmocka_unit_test(test_rc_incremental__deploy_tree_listed_from_memory),
        cmocka_unit_test(test_rc_incremental__deploy_head_listed_ahead),
        cmocka_unit_test(test_rc_incremental__edited_record_is_not_taken),
        cmocka_unit_test(test_rc_incremental__last_pass_keeps_nothing),
        cmocka_unit_test(test_rc_incremental__many_files_hash_as_git_does),
        cmocka_unit_test(test_rc_incremental__git_cache_bounded),
    };
    int rc;

    home = th_git_env_setup();
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    th_rm_rf(home);
    free(home);
    return rc;
}
