/*
 * test_rc_e2e.c - the rightplace binary end to end on real git repositories made from
 * examples/repo: the three scenarios, jobs pushed one commit at a time, no commit when
 * nothing changed, broken files, pending units placed later, replay, remotes, the lock,
 * and two reconcilers racing on one remote.
 */
#include "th.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rd_yaml.h"
#include "th_git.h"
#include "th_inputs.h"
#include "th_rp.h"

#include "rc_banned.h"

static char *home;

/* "placed:static-cluster", "pending:", ... for a unit of the record at rev, or NULL. */
static char *unit_state(const char *repo, const char *rev, const char *unit)
{
    char *text = th_git_show(repo, rev, "placements.yaml");
    struct rd_docs *docs = NULL;
    struct rc_err err = RC_ERR_INIT;
    struct rd_yaml_limits lim = RD_YAML_LIMITS_INIT;
    char *res = NULL;
    cJSON *units, *u;

    if (!text)
        return NULL;
    assert_int_equal(rd_yaml_load(&docs, "placements.yaml", text, strlen(text), &lim, NULL, &err),
                     RC_OK);
    units = cJSON_GetObjectItemCaseSensitive(rd_docs_get(docs, 0), "units");
    cJSON_ArrayForEach(u, units)
    {
        cJSON *id = cJSON_GetObjectItemCaseSensitive(u, "unit");
        cJSON *state = cJSON_GetObjectItemCaseSensitive(u, "state");
        cJSON *clusters = cJSON_GetObjectItemCaseSensitive(u, "clusters");
        cJSON *c;
        char buf[1024];
        size_t n;
        if (!cJSON_IsString(id) || strcmp(id->valuestring, unit))
            continue;
        n = (size_t)snprintf(buf, sizeof(buf), "%s:", cJSON_GetStringValue(state));
        cJSON_ArrayForEach(c, clusters)
        {
            n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s%s", c == clusters->child ? "" : ",",
                                  cJSON_GetStringValue(c));
        }
        res = strdup(buf);
    }
    rd_docs_free(docs);
    free(text);
    return res;
}

static void assert_unit(const char *repo, const char *rev, const char *unit, const char *want)
{
    char *got = unit_state(repo, rev, unit);

    if (!got || strcmp(got, want))
        fail_msg("unit '%s' at %s: want '%s', got '%s'", unit, rev, want, got ? got : "(absent)");
    free(got);
}

static char *rev(const char *repo, const char *r)
{
    return th_git_ok(repo, "rev-parse", r, NULL);
}

static void reconcile_ok(const char *repo, int want_status)
{
    char *out = NULL, *err = NULL;
    int st = th_rp(&out, &err, "reconcile", "--repo", repo, "--once", "--no-apply", NULL);

    if (st != want_status)
        fail_msg("reconcile exited %d, want %d\nstdout: %s\nstderr: %s", st, want_status, out, err);
    free(out);
    free(err);
}

/* Check out the deploy tree into a temp dir and build every cluster dir with kubectl. */
static void kustomize_all(const char *repo)
{
    char *dir = th_tmpdir("kustomize");
    char *wt;
    char path[4096];
    const char *clusters[] = {"static-cluster", "dynamic-cluster"};

    snprintf(path, sizeof(path), "%s/tree", dir);
    free(th_git_ok(repo, "worktree", "add", "--detach", path, "deploy", NULL));
    wt = path;
    for (size_t i = 0; i < 2; i++) {
        char cdir[8192];
        char *out = NULL, *err = NULL;
        const char *argv[] = {"kubectl", "kustomize", cdir, NULL};
        snprintf(cdir, sizeof(cdir), "%s/clusters/%s", wt, clusters[i]);
        if (th_run(NULL, &out, &err, argv) != 0)
            fail_msg("kubectl kustomize %s: %s", cdir, err);
        assert_true(th_count(out, "kind: Namespace") >= 1);
        free(out);
        free(err);
    }
    free(th_git_ok(repo, "worktree", "remove", "--force", path, NULL));
    th_rm_rf(dir);
    free(dir);
}

static void test_rc_e2e__three_scenarios_and_spill(void **state)
{
    char *repo = th_example_repo();
    char *d1, *d2, *d3, *msg, *trailers, *fsck;
    char *out = NULL;
    (void)state;

    reconcile_ok(repo, 0);
    d1 = rev(repo, "deploy");
    fsck = th_git_ok(repo, "fsck", "--strict", NULL);
    free(fsck);
    /* fill and spill: the first two jobs on the static cluster */
    assert_unit(repo, "deploy", "rayjob-capacity-policy-rayjob1/rayjob1/rayjob",
                "placed:static-cluster");
    assert_unit(repo, "deploy", "rayjob-capacity-policy-rayjob2/rayjob2/rayjob",
                "placed:static-cluster");
    /* fill, no spill: on the named cluster although no GPU is left */
    assert_unit(repo, "deploy", "rayjob-static-policy/experiments/rayjob", "placed:static-cluster");
    /* select the right cluster */
    assert_unit(repo, "deploy", "production/RayService/text-summarizer", "placed:dynamic-cluster");
    assert_unit(repo, "deploy", "development/RayService/text-summarizer", "placed:static-cluster");
    kustomize_all(repo);

    /* trailers a program can read */
    msg = th_git_ok(repo, "log", "-1", "--format=%B", "deploy", NULL);
    {
        char *tf = th_tmpdir("msg");
        char path[4096];
        const char *argv[] = {"git", "interpret-trailers", "--parse", path, NULL};
        snprintf(path, sizeof(path), "%s/msg", tf);
        th_write_file(tf, "msg", msg, (size_t)-1);
        assert_int_equal(th_run(NULL, &trailers, NULL, argv), 0);
        th_rm_rf(tf);
        free(tf);
    }
    assert_non_null(strstr(trailers, "Rightplace-Source: "));
    assert_non_null(strstr(trailers, "Rightplace-Placed: "));
    assert_non_null(strstr(trailers, "Rightplace-Pending: 0"));
    free(trailers);
    free(msg);

    /* nothing changed: no commit */
    reconcile_ok(repo, 0);
    d2 = rev(repo, "deploy");
    assert_string_equal(d1, d2);

    /* push rayjob3: it spills to the autoscaled cluster; the others stay */
    {
        char *data = th_inputs_read("examples/rayjob3.yaml", NULL);
        free(th_git_commit_files(repo, "train rayjob3", "fill-and-spill/rayjob-rayjob3.yaml", data,
                                 NULL));
        free(data);
    }
    reconcile_ok(repo, 0);
    d3 = rev(repo, "deploy");
    assert_string_not_equal(d2, d3);
    assert_unit(repo, "deploy", "rayjob-capacity-policy-rayjob3/rayjob3/rayjob",
                "placed:dynamic-cluster");
    assert_unit(repo, "deploy", "rayjob-capacity-policy-rayjob1/rayjob1/rayjob",
                "placed:static-cluster");
    msg = th_git_ok(repo, "log", "-1", "--format=%s", "deploy", NULL);
    assert_non_null(strstr(msg, "rayjob3"));
    assert_non_null(strstr(msg, "dynamic-cluster"));
    free(msg);
    out = th_git_ok(repo, "rev-list", "--count", "deploy", NULL);
    assert_string_equal(out, "2");
    free(out);

    /* explain says why */
    {
        char *eout = NULL;
        assert_int_equal(
            th_rp(&eout, NULL, "explain", "--repo", repo, "rayjob3/rayjob-train", NULL), 0);
        assert_non_null(strstr(eout, "dynamic-cluster"));
        assert_non_null(strstr(eout, "fits-after-scale-up"));
        assert_non_null(strstr(eout, "does-not-fit"));
        free(eout);
    }

    /* replay matches every commit */
    {
        const char *commits[] = {d1, d3};
        for (size_t i = 0; i < 2; i++) {
            char *rout = NULL, *rerr = NULL;
            int st = th_rp(&rout, &rerr, "replay", "--repo", repo, commits[i], NULL);
            if (st != 0)
                fail_msg("replay %s: %d\n%s\n%s", commits[i], st, rout, rerr);
            assert_non_null(strstr(rout, "match"));
            free(rout);
            free(rerr);
        }
    }
    free(d1);
    free(d2);
    free(d3);
    th_rm_rf(repo);
    free(repo);
}

/* Replace `path` in the deploy commit with `data`, as a new commit on top (plumbing only). */
static char *tamper(const char *repo, const char *path, const char *from, const char *to)
{
    char *text = th_git_show(repo, "deploy", path);
    char *p;
    char *dir = th_tmpdir("tamper");
    char wt[4096];
    char *id;

    assert_non_null(text);
    p = strstr(text, from);
    assert_non_null(p);
    {
        size_t n = strlen(text) - strlen(from) + strlen(to) + 1;
        char *nt = malloc(n);
        size_t pre = (size_t)(p - text);
        memcpy(nt, text, pre);
        memcpy(nt + pre, to, strlen(to));
        memcpy(nt + pre + strlen(to), p + strlen(from), strlen(p + strlen(from)) + 1);
        free(text);
        text = nt;
    }
    snprintf(wt, sizeof(wt), "%s/wt", dir);
    free(th_git_ok(repo, "worktree", "add", "-q", "--detach", wt, "deploy", NULL));
    th_write_file(wt, path, text, (size_t)-1);
    free(th_git_ok(wt, "commit", "-q", "-am", "tampered", NULL));
    id = th_git_ok(wt, "rev-parse", "HEAD", NULL);
    free(th_git_ok(repo, "worktree", "remove", "--force", wt, NULL));
    th_rm_rf(dir);
    free(dir);
    free(text);
    return id;
}

static void test_rc_e2e__replay_reports_altered_input(void **state)
{
    char *repo = th_example_repo();
    char *bad;
    char *out = NULL;
    (void)state;

    reconcile_ok(repo, 0);
    /* the recorded capacity said the static cluster had 5 GPU nodes; pretend it had none */
    bad = tamper(repo, ".rightplace/capacity.yaml", "nvidia.com/gpu", "example.com/gpu");
    assert_int_equal(th_rp(&out, NULL, "replay", "--repo", repo, bad, NULL), 1);
    assert_non_null(strstr(out, "mismatch"));
    free(out);
    free(bad);
    th_rm_rf(repo);
    free(repo);
}

static void test_rc_e2e__broken_file_keeps_placements(void **state)
{
    char *repo = th_example_repo();
    char *before, *after, *err = NULL, *out = NULL;
    char *f1, *f2;
    const char *job1 = "clusters/static-cluster/rayjob1/rayjob.rayjob-train.yaml";
    (void)state;

    reconcile_ok(repo, 0);
    before = th_git_show(repo, "deploy", job1);
    assert_non_null(before);
    /* break rayjob1's file (a tab in indentation) and add a new Deployment elsewhere */
    free(th_git_commit_files(repo, "oops", "fill-and-spill/rayjob-rayjob1.yaml",
                             "apiVersion: ray.io/v1\nkind: RayJob\nmetadata:\n\tname: x\n",
                             "right-cluster/web.yaml",
                             "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n"
                             "  namespace: development\n  labels:\n"
                             "    app.kubernetes.io/instance: rayservice\nspec:\n  replicas: 1\n"
                             "  template:\n    spec:\n      containers:\n      - name: w\n"
                             "        image: nginx\n        resources:\n"
                             "          requests: {cpu: 100m, memory: 64Mi}\n",
                             NULL));
    assert_int_equal(th_rp(&out, &err, "reconcile", "--repo", repo, "--once", "--no-apply", NULL),
                     3);
    assert_non_null(strstr(err, "fill-and-spill/rayjob-rayjob1.yaml:4"));
    after = th_git_show(repo, "deploy", job1);
    assert_non_null(after);
    assert_string_equal(before, after);
    assert_unit(repo, "deploy", "rayjob-capacity-policy-rayjob1/rayjob1/rayjob",
                "placed:static-cluster");
    assert_unit(repo, "deploy", "development/Deployment/web", "placed:static-cluster");
    f1 = th_git_ok(repo, "log", "-1", "--format=%B", "deploy", NULL);
    assert_non_null(strstr(f1, "rayjob-rayjob1.yaml"));
    /* a second pass with the file still broken keeps it too */
    assert_int_equal(
        th_rp(NULL, NULL, "reconcile", "--repo", repo, "--once", "--no-apply", "--force", NULL), 3);
    f2 = th_git_show(repo, "deploy", job1);
    assert_string_equal(before, f2);
    free(f1);
    free(f2);
    free(before);
    free(after);
    free(out);
    free(err);
    th_rm_rf(repo);
    free(repo);
}

static const char *small_fleet =
    "apiVersion: rightplace.dev/v1alpha1\nkind: Cluster\nmetadata:\n  name: a\nspec:\n"
    "  autoscaler: {type: none}\n  nodes:\n  - {name: node, count: 1, allocatable: {cpu: \"2\", "
    "memory: 4Gi, pods: \"110\"}}\n"
    "---\napiVersion: rightplace.dev/v1alpha1\nkind: Cluster\nmetadata:\n  name: b\nspec:\n"
    "  autoscaler: {type: none}\n  nodes:\n  - {name: node, count: 1, allocatable: {cpu: \"2\", "
    "memory: 4Gi, pods: \"110\"}}\n";

static const char *any_policy =
    "apiVersion: policy.elotl.co/v1alpha1\nkind: SchedulePolicy\nmetadata:\n  name: any\n"
    "spec:\n  namespaceSelector:\n    matchExpressions:\n    - {key: kubernetes.io/metadata.name, "
    "operator: Exists}\n  resourceSelectors:\n    labelSelectors:\n    - matchLabels: {team: ml}\n";

static const char *big_job =
    "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: big\n  namespace: ml\n  labels: {team: "
    "ml}\nspec:\n  template:\n    spec:\n      restartPolicy: Never\n      containers:\n"
    "      - name: c\n        image: busybox\n        resources:\n          requests: {cpu: "
    "\"3\"}\n";

static void test_rc_e2e__pending_until_capacity_appears(void **state)
{
    char *repo = th_git_init("pending", 0);
    char *out = NULL;
    (void)state;

    free(th_git_commit_files(repo, "fleet", "fleet.yaml", small_fleet, "policy.yaml", any_policy,
                             "job.yaml", big_job, NULL));
    reconcile_ok(repo, 0);
    assert_unit(repo, "deploy", "ml/Job/big", "pending:");
    out = th_git_ok(repo, "log", "-1", "--format=%B", "deploy", NULL);
    assert_non_null(strstr(out, "Rightplace-Pending: 1"));
    free(out);
    /* pending units are retried even when the source did not move */
    reconcile_ok(repo, 0);
    assert_unit(repo, "deploy", "ml/Job/big", "pending:");
    /* cluster b grows a bigger node */
    {
        char *fleet2 = strdup(small_fleet);
        char *p = strrchr(fleet2, '2');
        *p = '4';
        free(th_git_commit_files(repo, "grow b", "fleet.yaml", fleet2, NULL));
        free(fleet2);
    }
    reconcile_ok(repo, 0);
    assert_unit(repo, "deploy", "ml/Job/big", "placed:b");
    th_rm_rf(repo);
    free(repo);
}

static void test_rc_e2e__bare_remote_over_file_url(void **state)
{
    char *remote = th_git_init("remote", 1);
    char *work = th_example_repo();
    char *statedir = th_tmpdir("state");
    char url[4096];
    char *out = NULL, *err = NULL;
    char *remote_deploy, *msg;
    (void)state;

    snprintf(url, sizeof(url), "file://%s", remote);
    free(th_git_ok(work, "push", "-q", url, "main", NULL));
    if (th_rp(&out, &err, "reconcile", "--repo", url, "--state-dir", statedir, "--once",
              "--no-apply", NULL) != 0)
        fail_msg("reconcile on %s: %s %s", url, out, err);
    remote_deploy = th_git_ok(remote, "rev-parse", "deploy", NULL);
    assert_int_equal(strlen(remote_deploy), 40);
    msg = th_git_ok(remote, "log", "-1", "--format=%s", "deploy", NULL);
    assert_true(strlen(msg) > 0);
    assert_unit(remote, "deploy", "rayjob-capacity-policy-rayjob1/rayjob1/rayjob",
                "placed:static-cluster");
    free(msg);
    free(remote_deploy);
    free(out);
    free(err);
    th_rm_rf(remote);
    th_rm_rf(work);
    th_rm_rf(statedir);
    free(remote);
    free(work);
    free(statedir);
}

static void test_rc_e2e__lock_refuses_a_second_pass(void **state)
{
    char *repo = th_example_repo();
    char *statedir = th_tmpdir("lockstate");
    char *err = NULL;
    int fd;
    (void)state;

    fd = th_rp_hold_lock(statedir);
    assert_int_equal(th_rp(NULL, &err, "reconcile", "--repo", repo, "--state-dir", statedir,
                           "--once", "--no-apply", NULL),
                     5);
    assert_non_null(strstr(err, "lock"));
    close(fd);
    free(err);
    assert_int_equal(th_rp(NULL, NULL, "reconcile", "--repo", repo, "--state-dir", statedir,
                           "--once", "--no-apply", NULL),
                     0);
    th_rm_rf(repo);
    th_rm_rf(statedir);
    free(repo);
    free(statedir);
}

static void test_rc_e2e__plan_writes_nothing(void **state)
{
    char *repo = th_example_repo();
    char *out = NULL;
    char *refs;
    (void)state;

    assert_int_equal(th_rp(&out, NULL, "plan", "--repo", repo, NULL), 1);
    assert_non_null(strstr(out, "clusters/static-cluster/rayjob1/rayjob.rayjob-train.yaml"));
    free(out);
    refs = th_git_ok(repo, "for-each-ref", "--format=%(refname)", NULL);
    assert_null(strstr(refs, "refs/heads/deploy"));
    free(refs);
    reconcile_ok(repo, 0);
    assert_int_equal(th_rp(&out, NULL, "plan", "--repo", repo, NULL), 0);
    assert_non_null(strstr(out, "no change"));
    free(out);
    th_rm_rf(repo);
    free(repo);
}

static void test_rc_e2e__loop_stops_on_sigterm(void **state)
{
    char *repo = th_example_repo();
    pid_t pid;
    int status = 0;
    char *d;
    (void)state;

    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int devnull = open("/dev/null", O_WRONLY);
        dup2(devnull, 2);
        execl(RP_BINARY, RP_BINARY, "reconcile", "--repo", repo, "--interval", "1", "--no-apply",
              (char *)NULL);
        _exit(127);
    }
    /* wait until the first pass has committed */
    for (int i = 0; i < 600; i++) {
        char *out = NULL;
        if (th_git(repo, &out, NULL, "rev-parse", "--verify", "-q", "deploy", NULL) == 0) {
            free(out);
            break;
        }
        free(out);
        usleep(100000);
    }
    kill(pid, SIGTERM);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    d = th_git_ok(repo, "rev-parse", "deploy", NULL);
    assert_int_equal(strlen(d), 40);
    free(d);
    th_rm_rf(repo);
    free(repo);
}

/* Two reconcilers, each with its own clone, race on one remote for 20 rounds. */
static void test_rc_e2e__two_reconcilers_race(void **state)
{
    char *remote = th_git_init("race", 1);
    char *work = th_git_init("racework", 0);
    char *s1 = th_tmpdir("race1"), *s2 = th_tmpdir("race2");
    char url[4096];
    const int rounds = 20;
    char *count, *merges, *rec;
    (void)state;

    snprintf(url, sizeof(url), "file://%s", remote);
    /* two clusters of 6 one-CPU slots each: 12 slots for 20 jobs, the rest pending */
    free(th_git_commit_files(
        work, "fleet", "fleet.yaml",
        "apiVersion: rightplace.dev/v1alpha1\nkind: Cluster\nmetadata:\n  name: a\nspec:\n"
        "  nodes:\n  - {name: node, count: 6, allocatable: {cpu: \"1\", memory: 4Gi}}\n"
        "---\napiVersion: rightplace.dev/v1alpha1\nkind: Cluster\nmetadata:\n  name: b\nspec:\n"
        "  nodes:\n  - {name: node, count: 6, allocatable: {cpu: \"1\", memory: 4Gi}}\n",
        "policy.yaml", any_policy, NULL));
    free(th_git_ok(work, "push", "-q", url, "main", NULL));
    for (int r = 0; r < rounds; r++) {
        char path[64], body[1024];
        pid_t p1, p2;
        int st1, st2;
        snprintf(path, sizeof(path), "jobs/job%02d.yaml", r);
        snprintf(body, sizeof(body),
                 "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: job%02d\n  namespace: ml\n"
                 "  labels: {team: ml}\nspec:\n  template:\n    spec:\n      containers:\n"
                 "      - name: c\n        image: busybox\n        resources:\n"
                 "          requests: {cpu: 800m}\n",
                 r);
        free(th_git_commit_files(work, "job", path, body, NULL));
        free(th_git_ok(work, "push", "-q", url, "main", NULL));
        p1 = fork();
        if (p1 == 0) {
            int dn = open("/dev/null", O_WRONLY);
            dup2(dn, 1);
            dup2(dn, 2);
            execl(RP_BINARY, RP_BINARY, "reconcile", "--repo", url, "--state-dir", s1, "--once",
                  "--no-apply", (char *)NULL);
            _exit(127);
        }
        p2 = fork();
        if (p2 == 0) {
            int dn = open("/dev/null", O_WRONLY);
            dup2(dn, 1);
            dup2(dn, 2);
            execl(RP_BINARY, RP_BINARY, "reconcile", "--repo", url, "--state-dir", s2, "--once",
                  "--no-apply", (char *)NULL);
            _exit(127);
        }
        waitpid(p1, &st1, 0);
        waitpid(p2, &st2, 0);
        assert_true(WIFEXITED(st1) && WEXITSTATUS(st1) == 0);
        assert_true(WIFEXITED(st2) && WEXITSTATUS(st2) == 0);
    }
    /* one commit per round, linear history */
    count = th_git_ok(remote, "rev-list", "--count", "deploy", NULL);
    assert_string_equal(count, "20");
    merges = th_git_ok(remote, "rev-list", "--merges", "deploy", NULL);
    assert_string_equal(merges, "");
    /* 12 placed (6 per cluster, never more), 8 pending */
    rec = th_git_show(remote, "deploy", "placements.yaml");
    assert_int_equal(th_count(rec, "state: placed"), 12);
    assert_int_equal(th_count(rec, "state: pending"), 8);
    {
        int on_a = 0, on_b = 0;
        for (int r = 0; r < rounds; r++) {
            char unit[64];
            char *s;
            snprintf(unit, sizeof(unit), "ml/Job/job%02d", r);
            s = unit_state(remote, "deploy", unit);
            assert_non_null(s);
            on_a += !strcmp(s, "placed:a");
            on_b += !strcmp(s, "placed:b");
            free(s);
        }
        assert_int_equal(on_a, 6);
        assert_int_equal(on_b, 6);
    }
    free(rec);
    free(count);
    free(merges);
    th_rm_rf(remote);
    th_rm_rf(work);
    th_rm_rf(s1);
    th_rm_rf(s2);
    free(remote);
    free(work);
    free(s1);
    free(s2);
}

/* ==== Bad input loses nothing (regressions found by probing) ==== */

static char *example_placed(void)
{
    char *repo = th_example_repo();

    reconcile_ok(repo, 0);
    return repo;
}

static int rp_reconcile(const char *repo, char **err)
{
    return th_rp(NULL, err, "reconcile", "--repo", repo, "--once", "--no-apply", NULL);
}

static void test_rc_e2e__broken_file_reported_every_pass(void **state)
{
    char *repo = example_placed();
    (void)state;

    free(th_git_commit_files(repo, "oops", "fill-and-spill/rayjob-rayjob1.yaml",
                             "apiVersion: v1\nkind: ConfigMap\nmetadata:\n\tname: x\n", NULL));
    assert_int_equal(rp_reconcile(repo, NULL), 3);
    /* the same source again: still reported, still exit 3 (cron must keep seeing it) */
    assert_int_equal(rp_reconcile(repo, NULL), 3);
    th_rm_rf(repo);
    free(repo);
}

static void test_rc_e2e__source_commit_without_decisions_makes_no_commit(void **state)
{
    char *repo = example_placed();
    char *before = rev(repo, "deploy"), *after, *out = NULL;
    (void)state;

    free(th_git_commit_files(repo, "docs", "NOTES.md", "# notes\n", NULL));
    reconcile_ok(repo, 0);
    after = rev(repo, "deploy");
    assert_string_equal(before, after);
    assert_int_equal(th_rp(&out, NULL, "plan", "--repo", repo, NULL), 0);
    free(out);
    free(before);
    free(after);
    th_rm_rf(repo);
    free(repo);
}

static void test_rc_e2e__new_duplicate_does_not_take_over(void **state)
{
    char *repo = example_placed();
    const char *path = "clusters/static-cluster/rayjob1/rayjob.rayjob-train.yaml";
    char *before = th_git_show(repo, "deploy", path), *after, *text, *p;
    (void)state;

    /* a new file, sorting first, defines rayjob1's RayJob again with another image */
    text = th_git_show(repo, "HEAD", "fill-and-spill/rayjob-rayjob1.yaml");
    p = strstr(text, "ray-ml:2.2.0-gpu");
    assert_non_null(p);
    memcpy(p, "ray-ml:2.3.0-gpu", 16);
    free(th_git_commit_files(repo, "dup", "aa-dup.yaml", text, NULL));
    free(text);
    assert_int_equal(rp_reconcile(repo, NULL), 3);
    after = th_git_show(repo, "deploy", path);
    assert_non_null(after);
    assert_string_equal(before, after);
    assert_unit(repo, "deploy", "rayjob-capacity-policy-rayjob1/rayjob1/rayjob",
                "placed:static-cluster");
    free(before);
    free(after);
    th_rm_rf(repo);
    free(repo);
}

static void test_rc_e2e__deleted_file_readded_broken_stays_deleted(void **state)
{
    char *repo = example_placed();
    char *left;
    (void)state;

    free(th_git_ok(repo, "rm", "-q", "fill-and-spill/rayjob-rayjob2.yaml", NULL));
    free(th_git_ok(repo, "commit", "-q", "-m", "rayjob2 done", NULL));
    reconcile_ok(repo, 0);
    assert_null(unit_state(repo, "deploy", "rayjob-capacity-policy-rayjob2/rayjob2/rayjob"));
    free(th_git_commit_files(repo, "again, broken", "fill-and-spill/rayjob-rayjob2.yaml",
                             "apiVersion: ray.io/v1\nkind: RayJob\nmetadata:\n\tname: x\n", NULL));
    assert_int_equal(rp_reconcile(repo, NULL), 3);
    left = unit_state(repo, "deploy", "rayjob-capacity-policy-rayjob2/rayjob2/rayjob");
    assert_null(left);
    th_rm_rf(repo);
    free(repo);
}

static void test_rc_e2e__renamed_and_broken_moves_nothing(void **state)
{
    char *repo = example_placed();
    char *before = rev(repo, "deploy"), *after, *err = NULL;
    (void)state;

    free(th_git_ok(repo, "mv", "fleet/static-cluster.yaml", "fleet/static.yaml", NULL));
    th_write_file(repo, "fleet/static.yaml",
                  "apiVersion: rightplace.dev/v1alpha1\nkind: Cluster\nmetadata:\n"
                  "  name: static-cluster\nspec:\n  nodes:\n  - {name: x, count: five}\n",
                  (size_t)-1);
    free(th_git_ok(repo, "commit", "-q", "-am", "rename and break", NULL));
    assert_int_equal(rp_reconcile(repo, &err), 3);
    assert_non_null(strstr(err, "fleet/static.yaml"));
    after = rev(repo, "deploy");
    assert_string_equal(before, after);
    free(err);
    free(before);
    free(after);
    th_rm_rf(repo);
    free(repo);
}

static void test_rc_e2e__kind_typo_in_our_groups_is_an_error(void **state)
{
    char *repo = example_placed();
    char *text = th_git_show(repo, "HEAD", "fleet/static-cluster.yaml");
    char *p = strstr(text, "kind: Cluster");
    (void)state;

    memcpy(p, "kind: Clustr ", 13);
    free(th_git_commit_files(repo, "typo", "fleet/static-cluster.yaml", text, NULL));
    free(text);
    assert_int_equal(rp_reconcile(repo, NULL), 3);
    assert_unit(repo, "deploy", "rayjob-capacity-policy-rayjob1/rayjob1/rayjob",
                "placed:static-cluster");
    assert_null(unit_state(repo, "deploy", "default/Clustr/static-cluster"));
    th_rm_rf(repo);
    free(repo);
}

static void test_rc_e2e__invalid_utf8_in_a_message_blocks_nothing(void **state)
{
    char *repo = example_placed();
    char bad[256];
    (void)state;

    /* the error message quotes the name cut at 80 bytes, in the middle of a character */
    snprintf(bad, sizeof(bad),
             "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %0*d\xc3\xa9"
             "b\n  namespace: "
             "rayjob1\n",
             79, 0);
    free(th_git_commit_files(repo, "bad name", "bad.yaml", bad, NULL));
    {
        char *data = th_inputs_read("examples/rayjob3.yaml", NULL);
        free(
            th_git_commit_files(repo, "rayjob3", "fill-and-spill/rayjob-rayjob3.yaml", data, NULL));
        free(data);
    }
    assert_int_equal(rp_reconcile(repo, NULL), 3);
    assert_unit(repo, "deploy", "rayjob-capacity-policy-rayjob3/rayjob3/rayjob",
                "placed:dynamic-cluster");
    th_rm_rf(repo);
    free(repo);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rc_e2e__three_scenarios_and_spill),
        cmocka_unit_test(test_rc_e2e__replay_reports_altered_input),
        cmocka_unit_test(test_rc_e2e__broken_file_keeps_placements),
        cmocka_unit_test(test_rc_e2e__pending_until_capacity_appears),
        cmocka_unit_test(test_rc_e2e__bare_remote_over_file_url),
        cmocka_unit_test(test_rc_e2e__lock_refuses_a_second_pass),
        cmocka_unit_test(test_rc_e2e__plan_writes_nothing),
        cmocka_unit_test(test_rc_e2e__loop_stops_on_sigterm),
        cmocka_unit_test(test_rc_e2e__two_reconcilers_race),
        cmocka_unit_test(test_rc_e2e__broken_file_reported_every_pass),
        cmocka_unit_test(test_rc_e2e__source_commit_without_decisions_makes_no_commit),
        cmocka_unit_test(test_rc_e2e__new_duplicate_does_not_take_over),
        cmocka_unit_test(test_rc_e2e__deleted_file_readded_broken_stays_deleted),
        cmocka_unit_test(test_rc_e2e__renamed_and_broken_moves_nothing),
        cmocka_unit_test(test_rc_e2e__kind_typo_in_our_groups_is_an_error),
        cmocka_unit_test(test_rc_e2e__invalid_utf8_in_a_message_blocks_nothing),
    };
    int rc;

    home = th_git_env_setup();
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    th_rm_rf(home);
    free(home);
    return rc;
}
