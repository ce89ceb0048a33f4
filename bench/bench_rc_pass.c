/*
 * bench_rc_pass.c - whole passes in one process, as loop mode runs them: the first pass, a
 * pass with nothing changed, a pass after a commit touching only a README, and a pass after
 * a commit changing one YAML file. Prints each pass's time, files parsed and the process's
 * peak RSS so far; asserts nothing. BENCH_PHASES=1 logs each pass's phases (debug log).
 * BENCH_PERF_CTL=FIFO writes "enable" to FIFO before the one-change pass and "disable" after
 * it, so that `perf record --control=fifo:FIFO -D -1` profiles that pass alone. Under
 * `valgrind --tool=callgrind --collect-atstart=no` the instructions counted are that pass's
 * alone (where the build found valgrind's headers): a count the host's noise does not move.
 *
 * usage: bench_rc_pass REPO CHANGED_PATH NEW_CONTENT_FILE [STATE_DIR [ADDED_PATH ADDED_FILE]]
 *   REPO: a local repository whose branch main holds the source (bench/gen_fleet.py makes
 *   one); the change commits NEW_CONTENT_FILE's bytes at CHANGED_PATH on main. Writes the
 *   deploy branch of REPO.
 *   STATE_DIR: an existing directory for the parse and record cache files, which reconcile
 *   writes beside every pass (--state-dir); without it the caches live in memory only.
 *   ADDED_PATH ADDED_FILE: then a pass after a commit that adds ADDED_FILE's bytes at
 *   ADDED_PATH (a new workload: its unit, and so the record, changes), labelled "new-file".
 *   BENCH_PROFILE=new-file profiles that pass instead of the one-change pass.
 *   BENCH_SOAK=N: then N more passes, each after a commit that edits CHANGED_PATH again (a
 *   comment line that differs each time: the file is parsed again and its unit rendered),
 *   as a long-running loop sees them; every tenth prints the heap in use, RSS and what
 *   libgit2's object cache holds, and the last the passes' median and slowest times: memory
 *   that grows with the number of passes, not with the fleet, shows there.
 *   BENCH_SOAK_UNITS=1: each of those commits also gives the workload another unit label
 *   (soak-00000, soak-00001, ...): a unit goes and one comes, so every pass changes the
 *   record, and loop mode's kept record is made over the one before (rc_cache.h).
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#if defined(__has_include)
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#define HAVE_CALLGRIND 1
#endif
#endif

#include "rc_arena.h"
#include "rc_buf.h"
#include "rc_cache.h"
#include "rc_err.h"
#include "rc_git.h"
#include "rc_log.h"
#include "rc_mem.h"
#include "rc_pass.h"

#include "rc_banned.h"

static double now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* CPU time of the process's threads so far, and its page faults: less moved by a busy
 * machine than the wall time */
static double cpu_ms(long *faults)
{
    struct rusage ru;

    getrusage(RUSAGE_SELF, &ru);
    *faults = ru.ru_minflt + ru.ru_majflt;
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
}

static long peak_rss_mb(void)
{
    struct rusage ru;

    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss / 1024;
}

static void perf_ctl(const char *cmd)
{
    const char *path = getenv("BENCH_PERF_CTL");
    FILE *f;

#ifdef HAVE_CALLGRIND
    /* under valgrind --tool=callgrind --collect-atstart=no: the one-change pass alone */
    CALLGRIND_TOGGLE_COLLECT;
#endif
    if (path == NULL || (f = fopen(path, "w")) == NULL)
        return;
    fprintf(f, "%s\n", cmd);
    fclose(f);
}

static int one_pass(const char *label, struct rc_git *g, struct rc_cache *cache)
{
    struct rc_pass_options o = RC_PASS_OPTIONS_INIT;
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_pass_result res;
    struct rc_err err = RC_ERR_INIT;
    long f0, f1;
    double t0 = now_ms(), c0 = cpu_ms(&f0), c1;
    const char *profiled = getenv("BENCH_PROFILE") ? getenv("BENCH_PROFILE") : "one-change";
    int rc;

    static struct rc_log log = RC_LOG_INIT;

    log.level = getenv("BENCH_PHASES") ? RC_LOG_DEBUG : RC_LOG_ERROR;
    /* as reconcile in loop mode runs them (main.c): no apply, bounded verdicts, and a next
     * pass that reads what this one keeps */
    o.apply = 0;
    o.bounded_verdicts = 1;
    o.cache = cache;
    o.log = &log;
    if (strcmp(label, profiled) == 0)
        perf_ctl("enable");
    rc = rc_pass_run(&res, g, &o, &a, &err);
    if (strcmp(label, profiled) == 0)
        perf_ctl("disable");
    if (rc < 0) {
        fprintf(stderr, "%s: %s\n", label, err.msg);
        rc_arena_release(&a);
        return rc;
    }
    c1 = cpu_ms(&f1);
    if (strcmp(label, "soak") != 0) /* soak() prints its own summary */
        printf(
            "%-12s %9.1f ms  parsed %6zu  skipped %d  committed %d  placed %zu  peak RSS %ld MB  "
            "parse cache %zu MB  cpu %.0f ms  faults %ld\n",
            label, now_ms() - t0, res.nparsed, res.skipped, res.committed, res.placed,
            peak_rss_mb(), rd_cache_bytes(rc_cache_parsed(cache)) >> 20, c1 - c0, f1 - f0);
    rc_arena_release(&a);
    return 0;
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;

    return (a > b) - (a < b);
}

static int commit_file(struct rc_git *g, const char *path, const char *data, size_t len);

/* BENCH_SOAK: n passes after n commits of `path`, each `content` and a comment of its own. */
#define UNIT_LABEL "app.kubernetes.io/instance: "
static int soak(struct rc_git *g, struct rc_git *pusher, struct rc_cache *cache, const char *path,
                const struct rc_buf *content, long n)
{
    double *ms = rc_xcalloc((size_t)n + 1, sizeof(*ms));
    int rc = 0, units = getenv("BENCH_SOAK_UNITS") != NULL;

    for (long i = 0; i < n && rc == 0; i++) {
        struct rc_buf c = RC_BUF_INIT;
        struct rc_err err = RC_ERR_INIT;
        double t0;

        const char *label = units ? strstr(content->ptr, UNIT_LABEL) : NULL;
        size_t head = label ? (size_t)(label - content->ptr) + strlen(UNIT_LABEL) : content->len;
        size_t tail = label ? head + strcspn(content->ptr + head, "\n") : content->len;

        /* BENCH_SOAK_UNITS: the workload's unit label is another each pass (a unit goes, one
         * comes: the record changes) */
        if (rc_buf_add(&c, content->ptr, head, &err) < 0 ||
            (label && rc_buf_printf(&c, &err, "soak-%05ld", i) < 0) ||
            rc_buf_add(&c, content->ptr + tail, content->len - tail, &err) < 0 ||
            rc_buf_printf(&c, &err, "\n# soak %ld\n", i) < 0 ||
            commit_file(pusher, path, c.ptr, c.len) < 0) {
            rc_buf_release(&c);
            rc = -1;
            break;
        }
        rc_buf_release(&c);
        t0 = now_ms();
        rc = one_pass("soak", g, cache);
        ms[i] = now_ms() - t0;
        if (i % 10 == 9 || i == n - 1) {
            struct mallinfo2 mi = mallinfo2();
            size_t used, limit;

            rc_git_cache_usage(&used, &limit);
            printf("soak %5ld passes: heap in use %zu MB, RSS %zu MB, libgit2 cache %zu KB "
                   "(bound %zu MB)\n",
                   i + 1, mi.uordblks >> 20, rc_mem_resident() >> 20, used >> 10, limit >> 20);
        }
    }
    if (rc == 0 && n > 0) {
        qsort(ms, (size_t)n, sizeof(*ms), cmp_double);
        printf("soak: %ld passes, median %.1f ms, slowest %.1f ms\n", n, ms[n / 2], ms[n - 1]);
    }
    free(ms);
    return rc;
}

/* Commit `data` at `path` on main (rc_git writes the objects; no work tree is touched), through
 * a handle of its own, as a push would come from elsewhere: the passes' handle keeps the index
 * of the deploy tree it built last. */
static int commit_file(struct rc_git *g, const char *path, const char *data, size_t len)
{
    struct rc_err err = RC_ERR_INIT;
    struct rc_git_file f = {path, data, len, 0, "", 0};
    char head[41], tree[41], commit[41];

    if (rc_git_resolve(head, g, "main", &err) < 0 ||
        rc_git_build_tree(tree, g, head, &f, 1, &err) < 0 ||
        rc_git_commit(commit, g, tree, head, "bench change", rc_git_commit_time(g, head) + 1,
                      &err) < 0 ||
        rc_git_update_ref(g, "refs/heads/main", commit, head, NULL, &err) < 0) {
        fprintf(stderr, "commit: %s\n", err.msg);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    struct rc_err err = RC_ERR_INIT;
    struct rc_git *g = NULL, *pusher = NULL;
    struct rc_cache *cache = NULL;
    struct rc_buf content = RC_BUF_INIT, added = RC_BUF_INIT;
    int rc = 1;

    rc_mem_tune(); /* as rightplace's main */
    if (argc != 4 && argc != 5 && argc != 7) {
        fprintf(stderr, "usage: bench_rc_pass REPO CHANGED_PATH NEW_CONTENT_FILE "
                        "[STATE_DIR [ADDED_PATH ADDED_FILE]]\n");
        return 2;
    }
    if (rc_buf_read_file(&content, argv[3], &err) < 0 ||
        (argc == 7 && rc_buf_read_file(&added, argv[6], &err) < 0) ||
        rc_git_global_init(&err) < 0 || rc_git_open(&g, argv[1], NULL, &err) < 0 ||
        rc_git_open(&pusher, argv[1], NULL, &err) < 0 ||
        rc_cache_new(&cache, argc >= 5 ? argv[4] : NULL, &err) < 0) {
        fprintf(stderr, "%s\n", err.msg);
        goto done;
    }
    if (one_pass("first", g, cache) < 0 || one_pass("no-op", g, cache) < 0 ||
        commit_file(pusher, "README.md", "bench\n", 6) < 0 ||
        one_pass("readme-only", g, cache) < 0 ||
        commit_file(pusher, argv[2], content.ptr, content.len) < 0 ||
        one_pass("one-change", g, cache) < 0 || one_pass("no-op", g, cache) < 0)
        goto done;
    if (argc == 7 && (commit_file(pusher, argv[5], added.ptr, added.len) < 0 ||
                      one_pass("new-file", g, cache) < 0))
        goto done;
    if (getenv("BENCH_SOAK") &&
        soak(g, pusher, cache, argv[2], &content, strtol(getenv("BENCH_SOAK"), NULL, 10)) < 0)
        goto done;
    rc = 0;
done:
    rc_cache_free(cache);
    rc_git_free(g);
    rc_git_free(pusher);
    rc_buf_release(&content);
    rc_buf_release(&added);
    rc_git_global_shutdown();
    return rc;
}
