/*
 * test_rc_propose.c - the review gate (reconcile --propose BRANCH) on real git repositories,
 * checked with the git CLI: decisions go to the proposal branch on top of the deploy head,
 * the deploy branch moves only when a person promotes the proposal (a fast-forward), a
 * newer proposal replaces an older one (a forced push to a remote), nothing to propose
 * leaves the proposal at the deploy head, the committer identity comes from flags or the
 * environment, and a live cluster gets only what was promoted.
 */
#include "th.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "th_git.h"
#include "th_kube.h"
#include "th_rp.h"

#include "rc_banned.h"

static char *home;

static char *rev(const char *repo, const char *r)
{
    return th_git_ok(repo, "rev-parse", "--verify", "-q", r, NULL);
}

static int has_ref(const char *repo, const char *r)
{
    char *out = NULL;
    int st = th_git(repo, &out, NULL, "rev-parse", "--verify", "-q", r, NULL);
    free(out);
    return st == 0;
}

static void propose(const char *repo, const char *branch, int want)
{
    char *out = NULL, *err = NULL;
    int st = th_rp(&out, &err, "reconcile", "--repo", repo, "--once", "--propose", branch,
                   "--committer-name", "Fleet Bot", "--committer-email", "bot@example.com", NULL);

    if (st != want)
        fail_msg("reconcile --propose %s exited %d, want %d: %s", branch, st, want, err);
    free(out);
    free(err);
}

static void assert_same(const char *repo, const char *a, const char *b)
{
    char *x = rev(repo, a), *y = rev(repo, b);

    if (strcmp(x, y))
        fail_msg("%s (%s) and %s (%s) differ", a, x, b, y);
    free(x);
    free(y);
}

/* The whole cycle on a local repository: propose, promote, propose again, replace, withdraw. */
static void test_rc_propose__promote_cycle(void **state)
{
    char *repo = th_example_repo();
    char *p1, *p2, *p3, *d1, *parent, *who, *text;
    char path[4096];
    (void)state;

    /* 1. the first pass proposes; there is no deploy branch yet */
    propose(repo, "review", 0);
    assert_true(has_ref(repo, "review"));
    assert_false(has_ref(repo, "deploy"));
    p1 = rev(repo, "review");
    who = th_git_ok(repo, "log", "-1", "--format=%an <%ae>|%cn <%ce>", "review", NULL);
    assert_string_equal(who, "Fleet Bot <bot@example.com>|Fleet Bot <bot@example.com>");
    free(who);
    text = th_git_show(repo, "review", "placements.yaml");
    assert_non_null(strstr(text, "state: placed"));
    free(text);
    free(th_git_ok(repo, "fsck", "--strict", NULL));

    /* 2. the same inputs propose the same commit: the branch does not move */
    propose(repo, "review", 0);
    assert_same(repo, "review", p1);

    /* 3. a person promotes it (a fast-forward); the next pass has nothing to propose */
    free(th_git_ok(repo, "push", "-q", ".", "review:deploy", NULL));
    propose(repo, "review", 0);
    assert_same(repo, "deploy", p1);
    assert_same(repo, "review", "deploy");
    d1 = rev(repo, "deploy");

    /* 4. a new job: proposed on top of deploy; deploy stays */
    snprintf(path, sizeof(path), "%s/examples/rayjob3.yaml", RP_SOURCE_DIR);
    {
        char *job = th_kube_read(path);
        assert_non_null(job);
        free(th_git_commit_files(repo, "rayjob3", "fill-and-spill/rayjob-rayjob3.yaml", job, NULL));
        free(job);
    }
    propose(repo, "review", 0);
    assert_same(repo, "deploy", d1);
    p2 = rev(repo, "review");
    assert_string_not_equal(p2, d1);
    parent = rev(repo, "review^");
    assert_string_equal(parent, d1);
    free(parent);
    text = th_git_show(repo, "review", "placements.yaml");
    assert_non_null(strstr(text, "rayjob3"));
    free(text);
    /* what CI runs before promoting: the proposal recomputes to the same bytes */
    {
        char *o = NULL, *e = NULL;
        int st = th_rp(&o, &e, "replay", "--repo", repo, "review", NULL);
        if (st != 0)
            fail_msg("replay review exited %d: %s%s", st, o, e);
        free(o);
        free(e);
    }

    /* 5. another change before the review: the proposal is replaced, still on deploy */
    free(th_git_ok(repo, "rm", "-q", "fill-and-spill/rayjob-rayjob2.yaml", NULL));
    free(th_git_ok(repo, "commit", "-q", "-m", "drop rayjob2", NULL));
    propose(repo, "review", 0);
    p3 = rev(repo, "review");
    assert_string_not_equal(p3, p2);
    parent = rev(repo, "review^");
    assert_string_equal(parent, d1);
    free(parent);
    assert_same(repo, "deploy", d1);

    /* 6. the source goes back to what deploy holds: nothing to propose, review = deploy */
    free(th_git_ok(repo, "revert", "--no-edit", "HEAD", "HEAD~1", NULL));
    propose(repo, "review", 0);
    assert_same(repo, "review", "deploy");
    assert_same(repo, "deploy", d1);

    free(p1);
    free(p2);
    free(p3);
    free(d1);
    th_rm_rf(repo);
    free(repo);
}

/* Promotion by a merge commit (`git merge --no-ff -S`, how a reviewer signs what they
 * promote): the next pass takes the merge commit as the deploy head and proposes on top. */
static void test_rc_propose__promote_by_merge_commit(void **state)
{
    char *repo = th_example_repo();
    char *wt = th_tmpdir("propose-merge");
    char path[4096], jobpath[4096];
    char *merge, *parent, *job, *n;
    (void)state;

    propose(repo, "review", 0);
    /* deploy starts with a commit a person made (an empty tree), so promoting is a merge */
    {
        char *root = th_git_ok(repo, "commit-tree", "-m", "start",
                               "4b825dc642cb6eb9a060e54bf8d69288fbee4904", NULL);
        free(th_git_ok(repo, "branch", "deploy", root, NULL));
        free(root);
    }
    propose(repo, "review", 0); /* on top of the new deploy head */
    snprintf(path, sizeof(path), "%s/deploy", wt);
    free(th_git_ok(repo, "worktree", "add", "-q", path, "deploy", NULL));
    free(th_git_ok(path, "merge", "-q", "--no-ff", "-m", "promote the reviewed placements",
                   "review", NULL));
    merge = rev(repo, "deploy");
    n = th_git_ok(repo, "rev-list", "--count", "--merges", "-1", "deploy", NULL);
    assert_string_equal(n, "1");
    free(n);
    propose(repo, "review", 0);
    assert_same(repo, "review", "deploy"); /* the merge holds the decisions: nothing to do */

    snprintf(jobpath, sizeof(jobpath), "%s/examples/rayjob3.yaml", RP_SOURCE_DIR);
    job = th_kube_read(jobpath);
    free(th_git_commit_files(repo, "rayjob3", "fill-and-spill/rayjob-rayjob3.yaml", job, NULL));
    free(job);
    propose(repo, "review", 0);
    parent = rev(repo, "review^");
    assert_string_equal(parent, merge);
    free(parent);
    free(merge);
    free(th_git_ok(repo, "worktree", "remove", "--force", path, NULL));
    th_rm_rf(wt);
    free(wt);
    th_rm_rf(repo);
    free(repo);
}

static void test_rc_propose__identity_and_usage(void **state)
{
    char *repo = th_example_repo();
    char *out = NULL, *err = NULL, *who;
    (void)state;

    /* the environment names the committer when no flag does */
    setenv("RIGHTPLACE_COMMITTER_NAME", "Env Bot", 1);
    setenv("RIGHTPLACE_COMMITTER_EMAIL", "env@example.com", 1);
    assert_int_equal(th_rp(&out, &err, "reconcile", "--repo", repo, "--no-apply", NULL), 0);
    unsetenv("RIGHTPLACE_COMMITTER_NAME");
    unsetenv("RIGHTPLACE_COMMITTER_EMAIL");
    who = th_git_ok(repo, "log", "-1", "--format=%an <%ae>|%cn <%ce>", "deploy", NULL);
    assert_string_equal(who, "Env Bot <env@example.com>|Env Bot <env@example.com>");
    free(who);
    free(out);
    free(err);

    /* a name that would forge a header is refused */
    assert_int_equal(
        th_rp(&out, &err, "reconcile", "--repo", repo, "--committer-name", "a <b@c> x", NULL), 2);
    free(out);
    free(err);
    /* the proposal branch cannot be the deploy or the source branch */
    assert_int_equal(th_rp(&out, &err, "reconcile", "--repo", repo, "--propose", "deploy", NULL),
                     2);
    assert_non_null(strstr(err, "must differ"));
    free(out);
    free(err);
    assert_int_equal(th_rp(&out, &err, "reconcile", "--repo", repo, "--propose", "main", NULL), 2);
    free(out);
    free(err);
    th_rm_rf(repo);
    free(repo);
}

/* A remote: a replaced proposal is force-pushed (it does not descend from the old one); a
 * reviewer promotes it from a clone with `git push origin review:deploy`. over_daemon: the
 * remote is served by `git daemon` (receive-pack, libgit2's smart push with "+ref:ref"),
 * else file:// (rightplace's own push). */
static void remote_cycle(int over_daemon)
{
    char *src = th_example_repo();
    char *served = th_tmpdir("propose-served");
    char *state_dir = th_tmpdir("propose-state");
    char *clone = th_tmpdir("propose-clone");
    char url[8192], path[4096], bare[4096];
    char *p1, *p2, *d, *parent, *out = NULL, *err = NULL;
    pid_t daemon = -1;
    int port = 0;

    snprintf(bare, sizeof(bare), "%s/r.git", served);
    free(th_git_ok(NULL, "init", "-q", "--bare", bare, NULL));
    free(th_git_ok(src, "push", "-q", bare, "main", NULL));
    if (over_daemon) {
        daemon = th_git_daemon_start(served, &port);
        if (daemon < 0)
            fail_msg("cannot start git daemon");
        snprintf(url, sizeof(url), "git://127.0.0.1:%d/r.git", port);
    } else {
        snprintf(url, sizeof(url), "file://%s", bare);
    }
#define PROPOSE_REMOTE()                                                                           \
    do {                                                                                           \
        int st_ = th_rp(&out, &err, "reconcile", "--repo", url, "--state-dir", state_dir,          \
                        "--propose", "review", NULL);                                              \
        if (st_ != 0)                                                                              \
            fail_msg("reconcile exited %d: %s", st_, err);                                         \
        free(out);                                                                                 \
        free(err);                                                                                 \
    } while (0)

    PROPOSE_REMOTE();
    assert_false(has_ref(bare, "refs/heads/deploy"));
    p1 = rev(bare, "refs/heads/review");

    /* the reviewer promotes from a clone */
    free(th_git_ok(clone, "clone", "-q", bare, "c", NULL));
    snprintf(path, sizeof(path), "%s/c", clone);
    free(th_git_ok(path, "push", "-q", "origin", "origin/review:refs/heads/deploy", NULL));
    PROPOSE_REMOTE();
    d = rev(bare, "refs/heads/deploy");
    assert_string_equal(d, p1);
    assert_same(bare, "refs/heads/review", "refs/heads/deploy");

    /* a change: proposed on deploy; then another: the proposal is replaced (forced) */
    {
        char jobpath[4096];
        char *job;
        snprintf(jobpath, sizeof(jobpath), "%s/examples/rayjob3.yaml", RP_SOURCE_DIR);
        job = th_kube_read(jobpath);
        free(th_git_commit_files(src, "rayjob3", "fill-and-spill/rayjob-rayjob3.yaml", job, NULL));
        free(job);
    }
    free(th_git_ok(src, "push", "-q", bare, "main", NULL));
    PROPOSE_REMOTE();
    p2 = rev(bare, "refs/heads/review");
    parent = rev(bare, "refs/heads/review^");
    assert_string_equal(parent, d);
    free(parent);
    free(th_git_ok(src, "rm", "-q", "fill-and-spill/rayjob-rayjob2.yaml", NULL));
    free(th_git_ok(src, "commit", "-q", "-m", "drop rayjob2", NULL));
    free(th_git_ok(src, "push", "-q", bare, "main", NULL));
    PROPOSE_REMOTE();
    {
        char *p3 = rev(bare, "refs/heads/review");
        char *base = NULL;
        assert_string_not_equal(p3, p2);
        /* not a fast-forward of the old proposal: the push was forced */
        assert_int_not_equal(th_git(bare, &base, NULL, "merge-base", "--is-ancestor", p2, p3, NULL),
                             0);
        free(base);
        parent = rev(bare, "refs/heads/review^");
        assert_string_equal(parent, d);
        free(parent);
        free(p3);
    }
    assert_same(bare, "refs/heads/deploy", d);
    free(th_git_ok(bare, "fsck", "--strict", NULL));
#undef PROPOSE_REMOTE
    if (daemon > 0)
        th_git_daemon_stop(daemon);
    free(p1);
    free(p2);
    free(d);
    th_rm_rf(clone);
    th_rm_rf(state_dir);
    th_rm_rf(served);
    th_rm_rf(src);
    free(clone);
    free(state_dir);
    free(served);
    free(src);
}

static void test_rc_propose__remote_file(void **state)
{
    (void)state;
    remote_cycle(0);
}

static void test_rc_propose__remote_git_daemon(void **state)
{
    (void)state;
    remote_cycle(1);
}

/* A live cluster gets nothing while the decision waits for review, and the promoted commit
 * on the next pass. */
static void test_rc_propose__live_cluster_gets_only_what_was_promoted(void **state)
{
    struct th_certs certs;
    struct th_kube k;
    struct th_kube_opts o = {NULL, "t0ken\n", 0, 0, 0};
    char dir[TH_DIR], kc[TH_PATH], ca[TH_PATH], extra[TH_PATH + 64], cluster[2048];
    char *repo = th_git_init("propose-live", 0);
    char *out = NULL, *err = NULL;
    cJSON *reqs;
    (void)state;

    assert_int_equal(th_certs_make(&certs), 0);
    assert_int_equal(th_kube_start(&k, &certs, &o), 0);
    assert_int_equal(th_kube_mkdtemp(dir), 0);
    snprintf(kc, sizeof(kc), "%s/kubeconfig", dir);
    snprintf(extra, sizeof(extra), "    certificate-authority: %s\n",
             th_certs_path(ca, &certs, "ca.crt"));
    th_kube_kubeconfig(kc, &k, extra, "    token: t0ken\n");
    snprintf(cluster, sizeof(cluster),
             "apiVersion: rightplace.dev/v1alpha1\nkind: Cluster\nmetadata: {name: live}\n"
             "spec:\n  kubeconfig: {context: test}\n  autoscaler: {type: none}\n");
    free(th_git_commit_files(
        repo, "one ConfigMap for a live cluster", "fleet.yaml", cluster, "policy.yaml",
        "apiVersion: policy.elotl.co/v1alpha1\nkind: SchedulePolicy\nmetadata: {name: p}\n"
        "spec:\n  clusterSelector: {}\n  namespaceSelector: {}\n  resourceSelectors:\n"
        "    labelSelectors: [{matchLabels: {app: gate}}]\n",
        "cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: gated, namespace: default, labels: "
        "{app: gate}}\ndata: {a: b}\n",
        NULL));

    assert_int_equal(th_rp(&out, &err, "reconcile", "--repo", repo, "--propose", "review",
                           "--kubeconfig", kc, NULL),
                     0);
    free(out);
    free(err);
    assert_true(has_ref(repo, "review"));
    reqs = th_kube_requests(&k);
    assert_int_equal(th_kube_count(reqs, "PATCH", "configmaps/gated"), 0);
    cJSON_Delete(reqs);

    free(th_git_ok(repo, "push", "-q", ".", "review:deploy", NULL));
    assert_int_equal(th_rp(&out, &err, "reconcile", "--repo", repo, "--propose", "review",
                           "--kubeconfig", kc, NULL),
                     0);
    free(out);
    free(err);
    reqs = th_kube_requests(&k);
    assert_int_equal(th_kube_count(reqs, "PATCH", "configmaps/gated"), 1);
    cJSON_Delete(reqs);
    assert_same(repo, "review", "deploy");

    th_kube_stop(&k);
    th_kube_rmtree(dir);
    th_kube_rmtree(certs.dir);
    th_rm_rf(repo);
    free(repo);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rc_propose__promote_cycle),
        cmocka_unit_test(test_rc_propose__promote_by_merge_commit),
        cmocka_unit_test(test_rc_propose__identity_and_usage),
        cmocka_unit_test(test_rc_propose__remote_file),
        cmocka_unit_test(test_rc_propose__remote_git_daemon),
        cmocka_unit_test(test_rc_propose__live_cluster_gets_only_what_was_promoted),
    };
    int rc;

    home = th_git_env_setup();
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    th_rm_rf(home);
    free(home);
    return rc;
}
