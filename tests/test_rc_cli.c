/*
 * test_rc_cli.c - the rightplace command line as an operator meets it: the command table,
 * `COMMAND --help`, suggestions for unknown commands and flags, durations with units, flags
 * and arguments that do not apply, short flags, exit statuses (2 configuration, 1 outage,
 * 3 bad input) for every command, the lock, and configuration mistakes refused before
 * anything is written.
 */
#include "th.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "th_git.h"
#include "th_rp.h"

#include "rc_banned.h"

static char *home;

static int lines(const char *s)
{
    return th_count(s, "\n");
}

static void test_rc_cli__unknown_command_suggests(void **state)
{
    char *out = NULL, *err = NULL;
    (void)state;

    /* kubectl's habit: the nearest command by meaning */
    assert_int_equal(th_rp(&out, &err, "get", NULL), 2);
    th_assert_contains(err, "unknown command 'get'; did you mean 'status'?");
    assert_true(lines(err) <= 3);
    assert_null(strstr(err, RP_BINARY)); /* no full path of the binary */
    free(out);
    free(err);
    /* a typo: the nearest command by spelling */
    assert_int_equal(th_rp(NULL, &err, "reconcle", "--repo", "/nonexistent", NULL), 2);
    th_assert_contains(err, "unknown command 'reconcle'; did you mean 'reconcile'?");
    assert_null(strstr(err, "--repo is required"));
    assert_true(lines(err) <= 3);
    free(err);
    assert_int_equal(th_rp(NULL, &err, "frobnicate", NULL), 2);
    th_assert_contains(err, "unknown command 'frobnicate'\n");
    free(err);
    assert_int_equal(th_rp(NULL, &err, NULL), 2);
    th_assert_contains(err, "no command given");
    assert_true(lines(err) <= 3);
    free(err);
}

static void test_rc_cli__version(void **state)
{
    char *out = NULL;
    (void)state;

    assert_int_equal(th_rp(&out, NULL, "version", NULL), 0);
    assert_true(!strncmp(out, "rightplace ", 11));
    free(out);
    assert_int_equal(th_rp(&out, NULL, "version", "-o", "json", NULL), 0);
    th_assert_contains(out, "\"version\":");
    free(out);
    assert_int_equal(th_rp(&out, NULL, "--version", NULL), 0);
    assert_true(!strncmp(out, "rightplace ", 11));
    free(out);
}

static void test_rc_cli__every_command_has_help(void **state)
{
    const char *cmds[] = {"reconcile", "plan", "explain", "replay", "status", "version", "help"};
    char *out = NULL;
    (void)state;

    for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
        char want[64];
        snprintf(want, sizeof(want), "usage: rightplace %s", cmds[i]);
        assert_int_equal(th_rp(&out, NULL, cmds[i], "--help", NULL), 0);
        assert_true(!strncmp(out, want, strlen(want)));
        free(out);
        assert_int_equal(th_rp(&out, NULL, "help", cmds[i], NULL), 0);
        assert_true(!strncmp(out, want, strlen(want)));
        free(out);
        assert_int_equal(th_rp(&out, NULL, cmds[i], "-h", NULL), 0);
        assert_true(!strncmp(out, want, strlen(want)));
        free(out);
    }
    /* per-command flags only */
    assert_int_equal(th_rp(&out, NULL, "reconcile", "--help", NULL), 0);
    th_assert_contains(out, "--interval DURATION");
    assert_null(strstr(out, "--source REV"));
    free(out);
    assert_int_equal(th_rp(&out, NULL, "plan", "--help", NULL), 0);
    th_assert_contains(out, "--source REV");
    th_assert_contains(out, "-o, --output FORMAT");
    assert_null(strstr(out, "--interval"));
    free(out);
    assert_int_equal(th_rp(&out, NULL, "--help", NULL), 0);
    for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
        th_assert_contains(out, cmds[i]);
    free(out);
}

static void test_rc_cli__unknown_flag_suggests(void **state)
{
    char *err = NULL;
    (void)state;

    assert_int_equal(th_rp(NULL, &err, "reconcile", "--repp", "/x", NULL), 2);
    th_assert_contains(err, "unknown flag '--repp' for reconcile; did you mean '--repo'?");
    th_assert_contains(err, "rightplace reconcile --help");
    assert_true(lines(err) <= 3);
    assert_null(strstr(err, RP_BINARY));
    free(err);
    assert_int_equal(th_rp(NULL, &err, "status", "--repo", "/x", "--outptu=json", NULL), 2);
    th_assert_contains(err, "unknown flag '--outptu' for status; did you mean '--output'?");
    free(err);
    assert_int_equal(th_rp(NULL, &err, "plan", "-x", NULL), 2);
    th_assert_contains(err, "unknown flag '-x' for plan");
    free(err);
}

static void test_rc_cli__flags_and_arguments_that_do_not_apply(void **state)
{
    char *err = NULL;
    (void)state;

    assert_int_equal(th_rp(NULL, &err, "reconcile", "--repo", "/x", "--source", "HEAD", NULL), 2);
    th_assert_contains(err, "flag '--source' does not apply to reconcile; it is for plan, explain "
                            "and status");
    free(err);
    assert_int_equal(th_rp(NULL, &err, "status", "--repo", "/x", "--interval", "30s", NULL), 2);
    th_assert_contains(err, "flag '--interval' does not apply to status; it is for reconcile");
    free(err);
    assert_int_equal(th_rp(NULL, &err, "reconcile", "--repo", "/x", "extra", NULL), 2);
    th_assert_contains(err, "reconcile takes no arguments; got 'extra'");
    free(err);
    assert_int_equal(th_rp(NULL, &err, "explain", "--repo", "/x", "a", "b", NULL), 2);
    th_assert_contains(err, "explain takes one WORKLOAD; got also 'b'");
    free(err);
    assert_int_equal(th_rp(NULL, &err, "replay", "--repo", "/x", NULL), 2);
    th_assert_contains(err, "replay wants COMMIT");
    free(err);
    assert_int_equal(th_rp(NULL, &err, "status", NULL), 2);
    th_assert_contains(err, "status needs --repo");
    free(err);
    assert_int_equal(th_rp(NULL, &err, "reconcile", "--repo", "/x", "--once=yes", NULL), 2);
    th_assert_contains(err, "flag '--once' takes no value");
    free(err);
    assert_int_equal(th_rp(NULL, &err, "reconcile", "--repo", NULL), 2);
    th_assert_contains(err, "flag '--repo' wants a value");
    free(err);
}

static void test_rc_cli__interval_takes_units(void **state)
{
    char *err = NULL;
    (void)state;

    /* accepted: the parse gets as far as the next check */
    const char *ok[] = {"30s", "5m", "1h", "1h30m", "45"};
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        assert_int_equal(
            th_rp(NULL, &err, "reconcile", "--repo", "/x", "--interval", ok[i], "--once", NULL), 2);
        th_assert_contains(err, "--once and --interval exclude each other");
        free(err);
    }
    const char *bad[] = {"30x", "0s", "s", "1.5m", "-5", "8d", "999999h"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char want[128];
        snprintf(want, sizeof(want),
                 "invalid --interval '%s': give a duration with a unit s, m "
                 "or h",
                 bad[i]);
        assert_int_equal(th_rp(NULL, &err, "reconcile", "--repo", "/x", "--interval", bad[i], NULL),
                         2);
        th_assert_contains(err, want);
        free(err);
    }
}

static void test_rc_cli__short_output_flag(void **state)
{
    char *repo = th_example_repo();
    char *out = NULL;
    (void)state;

    assert_int_equal(th_rp(&out, NULL, "status", "--repo", repo, "-o", "json", NULL), 0);
    assert_true(out[0] == '{');
    free(out);
    assert_int_equal(th_rp(&out, NULL, "plan", "-ojson", "--repo", repo, NULL), 1);
    assert_true(out[0] == '{');
    free(out);
    th_rm_rf(repo);
    free(repo);
}

/* Broken YAML is bad input (3) for plan as for reconcile; pending changes stay 1. */
static void test_rc_cli__plan_bad_input_is_3(void **state)
{
    char *repo = th_example_repo();
    char *out = NULL, *err = NULL;
    (void)state;

    if (th_rp(NULL, &err, "plan", "--repo", repo, NULL) != 1)
        fail_msg("plan: %s", err);
    free(err);
    free(th_git_commit_files(repo, "broken", "broken.yaml",
                             "apiVersion: v1\nkind: ConfigMap\nmetadata:\n\tname: x\n", NULL));
    assert_int_equal(th_rp(&out, &err, "plan", "--repo", repo, NULL), 3);
    th_assert_contains(err, "broken.yaml:4");
    assert_int_equal(th_count(err, "broken.yaml:4"), 1);
    free(out);
    free(err);
    assert_int_equal(th_rp(&out, &err, "status", "--repo", repo, NULL), 3);
    free(out);
    free(err);
    th_rm_rf(repo);
    free(repo);
}

/* A broken file's warning names the version of it whose objects stay placed: the one the
 * deploy branch was made from. */
static void test_rc_cli__broken_file_names_the_version_kept(void **state)
{
    static const char path[] = "fill-and-spill/rayjob-rayjob1.yaml";
    char *repo = th_example_repo(), *id, want[160];
    char *out = NULL, *err = NULL;
    (void)state;

    if (th_rp(NULL, &err, "reconcile", "--repo", repo, "--once", "--no-apply", NULL) != 0)
        fail_msg("reconcile: %s", err);
    free(err);
    id = th_git_ok(repo, "rev-parse", "HEAD:fill-and-spill/rayjob-rayjob1.yaml", NULL);
    free(th_git_commit_files(repo, "broken", path, "kind: RayJob\nmetadata:\n\tname: x\n", NULL));
    assert_int_equal(th_rp(&out, &err, "status", "--repo", repo, NULL), 3);
    snprintf(want, sizeof(want),
             "(placements of its objects are kept, from version %.12s of the file)", id);
    th_assert_contains(err, want);
    free(out);
    free(err);
    free(id);
    th_rm_rf(repo);
    free(repo);
}

static char *cksum_of(const char *path)
{
    const char *argv[] = {"cksum", path, NULL};
    char *out = NULL;

    assert_int_equal(th_run(NULL, &out, NULL, argv), 0);
    return out;
}

/* plan, explain and status take parsed files from the state directory's parse cache, which
 * reconcile wrote, and write nothing there: the cache, and what the last pass saw, stay as
 * reconcile left them (the next reconcile still does its work). */
static void test_rc_cli__plan_reads_the_parse_cache(void **state)
{
    char *repo = th_example_repo();
    char *statedir = th_tmpdir("cliplan");
    char *out = NULL, *err = NULL, *cached = NULL, *before, *after, *state_before, *state_after;
    char pcache[4096], pstate[4096];
    (void)state;

    snprintf(pcache, sizeof(pcache), "%s/parse-cache", statedir);
    snprintf(pstate, sizeof(pstate), "%s/pass-state", statedir);
    if (th_rp(NULL, &err, "reconcile", "--once", "--no-apply", "--repo", repo, "--state-dir",
              statedir, NULL) != 0)
        fail_msg("reconcile: %s", err);
    free(err);
    free(th_git_commit_files(
        repo, "one more", "fill-and-spill/extra.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: extra, namespace: default}\n", NULL));
    before = cksum_of(pcache);
    state_before = cksum_of(pstate);

    assert_int_equal(th_rp(&cached, &err, "plan", "--repo", repo, "--state-dir", statedir,
                           "--log-level", "debug", NULL),
                     1);
    th_assert_contains(err, "load: 1 files parsed");
    free(err);
    assert_int_equal(th_rp(&out, &err, "status", "--repo", repo, "--state-dir", statedir,
                           "--log-level", "debug", NULL),
                     0);
    th_assert_contains(err, "load: 1 files parsed");
    free(out);
    free(err);
    after = cksum_of(pcache);
    state_after = cksum_of(pstate);
    assert_string_equal(after, before);
    assert_string_equal(state_after, state_before);

    /* the same plan without the cache */
    assert_int_equal(th_rp(&out, &err, "plan", "--repo", repo, "--state-dir", statedir,
                           "--no-parse-cache", "--log-level", "debug", NULL),
                     1);
    assert_null(strstr(err, "load: 1 files parsed"));
    assert_string_equal(out, cached);
    free(out);
    free(err);

    /* the next reconcile commits the change: plan left what it saw to it */
    assert_int_equal(th_rp(&out, &err, "reconcile", "--once", "--no-apply", "--repo", repo,
                           "--state-dir", statedir, "--log-level", "debug", NULL),
                     0);
    th_assert_contains(err, "load: 1 files parsed");
    free(out);
    free(err);
    free(th_git_ok(repo, "cat-file", "-e", "deploy:clusters", NULL));
    {
        char *log = th_git_ok(repo, "log", "--format=%s", "deploy", NULL);
        assert_int_equal(th_count(log, "\n"), 1); /* two placement commits */
        free(log);
    }

    free(cached);
    free(before);
    free(after);
    free(state_before);
    free(state_after);
    th_rm_rf(statedir);
    free(statedir);
    th_rm_rf(repo);
    free(repo);
}

/* A pass killed while it wrote a state file leaves the temporary file it would have renamed
 * (its pid in the name: no later pass writes it again). The next command that takes the lock
 * removes such files, and nothing else. */
static void test_rc_cli__state_dir_swept_of_what_a_killed_pass_left(void **state)
{
    char *repo = th_example_repo();
    char *statedir = th_tmpdir("clisweep");
    char *out = NULL, *err = NULL, path[4096];
    static const char *const left[] = {"parse-cache.tmp.4242", "record-cache.tmp.17",
                                       "pass-state.tmp.99999", "unreachable.tmp"};
    static const char *const kept[] = {"parse-cache.tmp.", "parse-cache.tmp.12x",
                                       "parse-cache.tmpx", "notes.tmp.12", "suspend.tmp"};
    struct stat st;
    (void)state;

    for (size_t i = 0; i < sizeof(left) / sizeof(*left); i++)
        th_write_file(statedir, left[i], "a partial file\n", (size_t)-1);
    for (size_t i = 0; i < sizeof(kept) / sizeof(*kept); i++)
        th_write_file(statedir, kept[i], "not ours to remove\n", (size_t)-1);
    assert_int_equal(th_rp(&out, &err, "reconcile", "--once", "--no-apply", "--repo", repo,
                           "--state-dir", statedir, NULL),
                     0);
    th_assert_contains(err, "removed 4 temporary files (60 bytes) that a killed pass left in");
    for (size_t i = 0; i < sizeof(left) / sizeof(*left); i++) {
        snprintf(path, sizeof(path), "%s/%s", statedir, left[i]);
        if (lstat(path, &st) == 0)
            fail_msg("'%s' left in the state directory", left[i]);
    }
    for (size_t i = 0; i < sizeof(kept) / sizeof(*kept); i++) {
        snprintf(path, sizeof(path), "%s/%s", statedir, kept[i]);
        assert_int_equal(lstat(path, &st), 0);
    }
    /* the pass's own files are there, and a second pass finds nothing to remove */
    snprintf(path, sizeof(path), "%s/pass-state", statedir);
    assert_int_equal(lstat(path, &st), 0);
    free(out);
    free(err);
    assert_int_equal(th_rp(&out, &err, "status", "--repo", repo, "--state-dir", statedir, NULL), 0);
    assert_null(strstr(err, "removed"));
    free(out);
    free(err);
    th_rm_rf(statedir);
    free(statedir);
    th_rm_rf(repo);
    free(repo);
}

/* status while a pass holds the lock says that it waits, and gives up after its timeout */
static void test_rc_cli__status_waits_for_the_lock_and_says_so(void **state)
{
    char *repo = th_example_repo();
    char *statedir = th_tmpdir("clilock");
    char *err = NULL, *out = NULL;
    int fd;
    (void)state;

    fd = th_rp_hold_lock(statedir);
    assert_int_equal(th_rp(&out, &err, "status", "--repo", repo, "--state-dir", statedir,
                           "--lock-timeout", "1s", NULL),
                     5);
    th_assert_contains(err, "waiting up to 1 s for the rightplace pass holding the lock");
    th_assert_contains(err, "still holds the lock");
    th_assert_contains(err, "--lock-timeout");
    free(out);
    free(err);
    assert_int_equal(th_rp(&out, &err, "plan", "--repo", repo, "--state-dir", statedir,
                           "--lock-timeout", "0", NULL),
                     5);
    th_assert_contains(err, "holds the lock");
    free(out);
    free(err);
    close(fd);
    assert_int_equal(th_rp(NULL, NULL, "status", "--repo", repo, "--state-dir", statedir, NULL), 0);
    th_rm_rf(repo);
    th_rm_rf(statedir);
    free(repo);
    free(statedir);
}

static void test_rc_cli__repo_that_is_not_a_repository(void **state)
{
    char *dir = th_tmpdir("notrepo");
    char *err = NULL;
    char path[4096];
    struct stat st;
    (void)state;

    th_write_file(dir, "notes.txt", "hello\n", (size_t)-1);
    assert_int_equal(th_rp(NULL, &err, "status", "--repo", dir, NULL), 2);
    th_assert_contains(err, "is not a git repository");
    free(err);
    assert_int_equal(th_rp(NULL, &err, "reconcile", "--repo", dir, NULL), 2);
    free(err);
    snprintf(path, sizeof(path), "%s/rightplace", dir);
    assert_true(stat(path, &st) < 0); /* nothing written into it */
    snprintf(path, sizeof(path), "%s/nope", dir);
    assert_int_equal(th_rp(NULL, &err, "status", "--repo", path, NULL), 2);
    th_assert_contains(err, "No such file or directory");
    free(err);
    th_rm_rf(dir);
    free(dir);
}

static void test_rc_cli__deploy_branch_equal_to_source_refused(void **state)
{
    char *repo = th_example_repo();
    char *err = NULL;
    char *refs;
    (void)state;

    assert_int_equal(th_rp(NULL, &err, "reconcile", "--repo", repo, "--deploy-branch", "main",
                           "--no-apply", NULL),
                     2);
    th_assert_contains(err, "--deploy-branch 'main' is the source branch");
    free(err);
    assert_int_equal(th_rp(NULL, &err, "plan", "--repo", repo, "--source-branch", "work",
                           "--deploy-branch", "work", NULL),
                     2);
    free(err);
    refs = th_git_ok(repo, "log", "--oneline", "main", NULL);
    assert_int_equal(th_count(refs, "\n"), 0); /* still the one commit */
    free(refs);
    th_rm_rf(repo);
    free(repo);
}

/* A Cluster live-east whose kubeconfig is the file live-east of --kubeconfig-dir. */
static void commit_live_cluster(const char *repo)
{
    free(th_git_commit_files(repo, "a live cluster", "fleet/live.yaml",
                             "apiVersion: rightplace.dev/v1alpha1\nkind: Cluster\n"
                             "metadata:\n  name: live-east\nspec:\n"
                             "  kubeconfig: {name: live-east}\n"
                             "  autoscaler: {type: none}\n",
                             NULL));
}

/* A Cluster whose kubeconfig file does not exist in the operator's kubeconfig directory: a
 * configuration error (2) naming the Cluster and the path, not an outage (1) */
static void test_rc_cli__missing_kubeconfig_is_configuration(void **state)
{
    char *repo = th_example_repo();
    char *kcdir = th_tmpdir("kubeconfigs");
    char *err = NULL;
    (void)state;

    commit_live_cluster(repo);
    assert_int_equal(th_rp(NULL, &err, "reconcile", "--repo", repo, "--no-apply",
                           "--kubeconfig-dir", kcdir, NULL),
                     2);
    th_assert_contains(err, "cluster 'live-east': cannot load its kubeconfig");
    th_assert_contains(err, "/live-east'");
    free(err);
    assert_int_equal(th_rp(NULL, &err, "status", "--repo", repo, "--kubeconfig-dir", kcdir, NULL),
                     2);
    th_assert_contains(err, "cluster 'live-east': cannot load its kubeconfig");
    free(err);
    th_rm_rf(kcdir);
    free(kcdir);
    th_rm_rf(repo);
    free(repo);
}

/* libcurl is loaded when a pass first needs it (rc_http.c): one that cannot be loaded is a
 * broken installation, reported as such (status 4) before anything is written, not blamed
 * on the clusters or their kubeconfigs. A file that is no library stands in for it. */
static void test_rc_cli__unloadable_libcurl_is_a_system_error(void **state)
{
    static const char kubeconfig[] =
        "apiVersion: v1\nkind: Config\n"
        "clusters:\n- name: c\n  cluster: {server: 'https://127.0.0.1:1'}\n"
        "users:\n- name: u\n  user: {token: abc}\n"
        "contexts:\n- name: x\n  context: {cluster: c, user: u}\n"
        "current-context: x\n";
    char *repo = th_example_repo();
    char *kcdir = th_tmpdir("kubeconfigs");
    char *libdir = th_tmpdir("libs");
    char *err = NULL, *deploy;
    (void)state;

    commit_live_cluster(repo);
    th_write_file(kcdir, "live-east", kubeconfig, sizeof(kubeconfig) - 1);
    th_write_file(libdir, "libcurl.so.4", "not a library\n", 14);
    setenv("LD_LIBRARY_PATH", libdir, 1);
    assert_int_equal(th_rp(NULL, &err, "reconcile", "--once", "--repo", repo, "--no-apply",
                           "--kubeconfig-dir", kcdir, NULL),
                     4);
    unsetenv("LD_LIBRARY_PATH");
    th_assert_contains(err, "cannot load libcurl.so.4: ");
    th_assert_contains(err, "the libcurl4 package");
    assert_null(strstr(err, "kubeconfig"));
    free(err);
    deploy = th_git_show(repo, "deploy", "placements.yaml");
    assert_null(deploy); /* nothing committed */

    /* with the real one the same pass runs: the cluster is unreachable, the rest is placed */
    assert_int_equal(th_rp(NULL, &err, "reconcile", "--once", "--repo", repo, "--no-apply",
                           "--kubeconfig-dir", kcdir, NULL),
                     1);
    th_assert_contains(err, "cluster 'live-east': unreachable");
    free(err);
    deploy = th_git_show(repo, "deploy", "placements.yaml");
    assert_non_null(deploy);
    free(deploy);
    th_rm_rf(libdir);
    free(libdir);
    th_rm_rf(kcdir);
    free(kcdir);
    th_rm_rf(repo);
    free(repo);
}

/* "2026-01-02T03:04:05.678Z" */
static int is_rfc3339_utc(const char *t)
{
    const char *shape = "dddd-dd-ddTdd:dd:dd.dddZ";

    if (strlen(t) != strlen(shape))
        return 0;
    for (size_t i = 0; shape[i]; i++) {
        if (shape[i] == 'd' ? (t[i] < '0' || t[i] > '9') : t[i] != shape[i])
            return 0;
    }
    return 1;
}

/* Every line of `err` is one JSON object with time, level and msg; returns them as an array. */
static cJSON *json_lines(const char *err)
{
    cJSON *all = cJSON_CreateArray();
    const char *p = err;

    while (p && *p) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        char *line = strndup(p, n);
        cJSON *o = cJSON_Parse(line);
        if (!cJSON_IsObject(o))
            fail_msg("not a JSON object: %s", line);
        assert_true(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(o, "time")));
        if (!is_rfc3339_utc(cJSON_GetObjectItemCaseSensitive(o, "time")->valuestring))
            fail_msg("time not RFC 3339 UTC: %s", line);
        assert_true(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(o, "level")));
        assert_true(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(o, "msg")));
        cJSON_AddItemToArray(all, o);
        free(line);
        p = nl ? nl + 1 : NULL;
    }
    return all;
}

static void test_rc_cli__log_json_has_time_and_fields_once(void **state)
{
    char *repo = th_example_repo();
    char *err = NULL;
    cJSON *lines, *o;
    int nfile = 0, nsummary = 0;
    (void)state;

    free(th_git_commit_files(repo, "broken", "broken.yaml",
                             "apiVersion: v1\nkind: ConfigMap\nmetadata:\n\tname: x\n", NULL));
    assert_int_equal(
        th_rp(NULL, &err, "reconcile", "--repo", repo, "--no-apply", "--log-json", NULL), 3);
    lines = json_lines(err);
    assert_int_equal(th_count(err, "broken.yaml:4"), 1); /* once, and as JSON */
    cJSON_ArrayForEach(o, lines)
    {
        const cJSON *file = cJSON_GetObjectItemCaseSensitive(o, "file");
        const cJSON *commit = cJSON_GetObjectItemCaseSensitive(o, "commit");
        if (cJSON_IsString(file) && !strcmp(file->valuestring, "broken.yaml"))
            nfile++;
        if (cJSON_IsString(commit)) {
            nsummary++;
            assert_int_equal(strlen(commit->valuestring), 40);
            assert_true(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(o, "duration_ms")));
            assert_int_equal(cJSON_GetObjectItemCaseSensitive(o, "status")->valueint, 3);
        }
    }
    assert_int_equal(nfile, 1);
    assert_int_equal(nsummary, 1);
    cJSON_Delete(lines);
    free(err);
    th_rm_rf(repo);
    free(repo);
}

/* A pass that did nothing logs at debug level only */
static void test_rc_cli__quiet_pass_logs_at_debug(void **state)
{
    char *repo = th_example_repo();
    char *err = NULL;
    (void)state;

    assert_int_equal(th_rp(NULL, &err, "reconcile", "--repo", repo, "--no-apply", NULL), 0);
    th_assert_contains(err, "changed"); /* the pass that committed says so */
    free(err);
    assert_int_equal(th_rp(NULL, &err, "reconcile", "--repo", repo, "--no-apply", NULL), 0);
    assert_string_equal(err, "");
    free(err);
    assert_int_equal(th_rp(NULL, &err, "reconcile", "--repo", repo, "--no-apply", "--log-json",
                           "--log-level", "debug", NULL),
                     0);
    th_assert_contains(err, "\"level\":\"debug\",\"msg\":\"source ");
    th_assert_contains(err, "nothing to do");
    free(err);
    th_rm_rf(repo);
    free(repo);
}

/* s with the first `from` replaced by `to` (malloc'd) */
static char *replace1(const char *s, const char *from, const char *to)
{
    const char *p = strstr(s, from);
    size_t n = strlen(s) - strlen(from) + strlen(to) + 1;
    char *r = malloc(n);

    assert_non_null(p);
    snprintf(r, n, "%.*s%s%s", (int)(p - s), s, to, p + strlen(from));
    return r;
}

/* Content-only changes are named field by field, multi-object units by count, and the source
 * commit's subject and author ride along as trailers */
static void test_rc_cli__commit_messages_a_reviewer_wants(void **state)
{
    char *repo = th_example_repo();
    const char *job = "fill-and-spill/rayjob-rayjob1.yaml";
    char *msg, *subject, *text, *t1, *t2, *trailers;
    (void)state;

    assert_int_equal(th_rp(NULL, NULL, "reconcile", "--repo", repo, "--no-apply", NULL), 0);
    msg = th_git_ok(repo, "log", "-1", "--format=%B", "deploy", NULL);
    /* the namespaces unit holds six: the headline says so */
    th_assert_contains(msg, "place 6 Namespaces (development, experiments, production, +3) on");
    th_assert_contains(msg, "Rightplace-Source-Subject: example fleet\n");
    th_assert_contains(msg, "Rightplace-Source-Author: ");
    free(msg);

    text = th_git_show(repo, "main", job);
    t1 = replace1(text, "rayproject/ray-ml:2.2.0-gpu", "rayproject/ray-ml:2.9.0-gpu");
    t2 = replace1(t1, "- replicas: 2", "- replicas: 3");
    free(th_git_commit_files(repo, "Bump rayjob1 to Ray 2.9", job, t2, NULL));
    assert_int_equal(th_rp(NULL, NULL, "reconcile", "--repo", repo, "--no-apply", NULL), 0);
    subject = th_git_ok(repo, "log", "-1", "--format=%s", "deploy", NULL);
    assert_string_equal(subject, "update rayjob1/rayjob-train on static-cluster: image, replicas");
    msg = th_git_ok(repo, "log", "-1", "--format=%B", "deploy", NULL);
    th_assert_contains(msg, "rayjob1/RayJob/rayjob-train on static-cluster:");
    th_assert_contains(msg, "rayproject/ray-ml:2.2.0-gpu -> rayproject/ray-ml:2.9.0-gpu");
    th_assert_contains(msg, "spec.rayClusterSpec.workerGroupSpecs[0].replicas: 2 -> 3");
    /* git reads the trailers */
    {
        char path[4096];
        snprintf(path, sizeof(path), "%s/msg.txt", repo);
        th_write_file(repo, "msg.txt", msg, (size_t)-1);
        const char *argv[] = {"git", "interpret-trailers", "--parse", path, NULL};
        assert_int_equal(th_run(repo, &trailers, NULL, argv), 0);
    }
    th_assert_contains(trailers, "Rightplace-Source-Subject: Bump rayjob1 to Ray 2.9\n");
    th_assert_contains(trailers, "Rightplace-Placed: 6\n");
    /* every subject fits 72 columns */
    free(subject);
    subject = th_git_ok(repo, "log", "--format=%s", "deploy", NULL);
    for (char *p = subject; p && *p;) {
        char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        assert_true(n <= 72);
        p = nl ? nl + 1 : NULL;
    }
    free(trailers);
    free(subject);
    free(msg);
    free(text);
    free(t1);
    free(t2);
    th_rm_rf(repo);
    free(repo);
}

/* status: a table per cluster with bars, no colour when not on a terminal; JSON that
 * follows docs/status.schema.json (clusters as a list, quantities as numbers and strings) */
static void test_rc_cli__status_table_and_schema(void **state)
{
    char *repo = th_example_repo();
    char *dir = th_tmpdir("status");
    char *out = NULL, *err = NULL;
    char path[4096], schema[4096];
    (void)state;

    assert_int_equal(th_rp(&out, NULL, "status", "--repo", repo, NULL), 0);
    th_assert_contains(out, "static-cluster  simulated");
    th_assert_contains(out, "RESOURCE");
    th_assert_contains(out, "ALLOCATABLE");
    th_assert_contains(out, "nvidia.com/gpu");
    th_assert_contains(out, "] 100%"); /* static-cluster's five GPUs are all placed */
    assert_null(strchr(out, '\033'));  /* not a terminal: no colour */
    free(out);

    assert_int_equal(th_rp(&out, NULL, "status", "--repo", repo, "-o", "json", NULL), 0);
    snprintf(path, sizeof(path), "%s/status.json", dir);
    th_write_file(dir, "status.json", out, (size_t)-1);
    th_assert_contains(out, "\"clusters\":\t[");
    th_assert_contains(out, "\"reachable\":\ttrue");
    free(out);
    snprintf(schema, sizeof(schema), "%s/docs/status.schema.json", RP_SOURCE_DIR);
    {
        char script[4096];
        snprintf(script, sizeof(script), "%s/tests/helpers/json_schema_check.py", RP_SOURCE_DIR);
        const char *argv[] = {"python3", script, schema, path, NULL};
        if (th_run(NULL, &out, &err, argv) != 0)
            fail_msg("status JSON does not follow the schema:\n%s%s", out, err);
        free(out);
        free(err);
    }
    th_rm_rf(dir);
    free(dir);
    th_rm_rf(repo);
    free(repo);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rc_cli__unknown_command_suggests),
        cmocka_unit_test(test_rc_cli__version),
        cmocka_unit_test(test_rc_cli__every_command_has_help),
        cmocka_unit_test(test_rc_cli__unknown_flag_suggests),
        cmocka_unit_test(test_rc_cli__flags_and_arguments_that_do_not_apply),
        cmocka_unit_test(test_rc_cli__interval_takes_units),
        cmocka_unit_test(test_rc_cli__short_output_flag),
        cmocka_unit_test(test_rc_cli__plan_bad_input_is_3),
        cmocka_unit_test(test_rc_cli__broken_file_names_the_version_kept),
        cmocka_unit_test(test_rc_cli__plan_reads_the_parse_cache),
        cmocka_unit_test(test_rc_cli__state_dir_swept_of_what_a_killed_pass_left),
        cmocka_unit_test(test_rc_cli__status_waits_for_the_lock_and_says_so),
        cmocka_unit_test(test_rc_cli__repo_that_is_not_a_repository),
        cmocka_unit_test(test_rc_cli__deploy_branch_equal_to_source_refused),
        cmocka_unit_test(test_rc_cli__missing_kubeconfig_is_configuration),
        cmocka_unit_test(test_rc_cli__unloadable_libcurl_is_a_system_error),
        cmocka_unit_test(test_rc_cli__log_json_has_time_and_fields_once),
        cmocka_unit_test(test_rc_cli__quiet_pass_logs_at_debug),
        cmocka_unit_test(test_rc_cli__commit_messages_a_reviewer_wants),
        cmocka_unit_test(test_rc_cli__status_table_and_schema),
    };
    int rc;

    home = th_git_env_setup();
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    th_rm_rf(home);
    free(home);
    return rc;
}
