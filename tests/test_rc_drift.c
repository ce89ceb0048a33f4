/*
 * test_rc_drift.c - operator mistakes and drift on the deploy branch: a stale ref lock left by
 * a git process that died, in the repository or in a file:// remote (recognised, explained,
 * cleared when provably stale), and commits
 * someone made by hand on the deploy branch (reported by plan and reconcile, named in the
 * next commit, and repaired by it, never kept silently).
 */
#include "th.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "th_git.h"
#include "th_rp.h"

#include "rc_mem.h"

#include "rc_banned.h"

static char *home;

/* A lock file at `path` (made if absent) last written age_seconds ago. */
static void age_lock(const char *path, long age_seconds)
{
    struct timeval tv[2];
    int fd;

    fd = open(path, O_WRONLY | O_CREAT, 0644);
    assert_true(fd >= 0);
    close(fd);
    gettimeofday(&tv[0], NULL);
    tv[0].tv_sec -= age_seconds;
    tv[1] = tv[0];
    assert_int_equal(utimes(path, tv), 0);
}

static void write_lock(const char *repo, long age_seconds, char *path, size_t n)
{
    snprintf(path, n, "%s/.git/refs/heads/deploy.lock", repo);
    age_lock(path, age_seconds);
}

/* A lock that may be live stops the pass, named by its whole path: under a short path with
 * what to do, under a long one (a state directory's mirror, a deep work tree) at least the
 * path whole, never cut short. `at_least`: the repository is moved under directories of 40
 * characters until the lock's path is that long (0: where the test's TMPDIR puts it). */
static void fresh_lock_explained(size_t at_least)
{
    static const char tail[] = "/repo/.git/refs/heads/deploy.lock";
    char *repo = th_example_repo(), *top = NULL, *err = NULL;
    char lock[4096], want[8192];
    size_t len;
    struct stat st;

    if (at_least) {
        char at[4096];
        size_t n;
        top = th_tmpdir("lockdepth");
        n = (size_t)snprintf(at, sizeof(at), "%s", top);
        while (n + strlen(tail) < at_least) {
            n += (size_t)snprintf(at + n, sizeof(at) - n, "/%s",
                                  "a123456789b123456789c123456789d123456789");
            assert_int_equal(mkdir(at, 0755), 0);
        }
        snprintf(at + n, sizeof(at) - n, "/repo");
        assert_int_equal(rename(repo, at), 0);
        free(repo);
        repo = rc_xstrdup(at);
    }
    assert_int_equal(th_rp(NULL, NULL, "reconcile", "--repo", repo, "--no-apply", NULL), 0);
    free(th_git_commit_files(repo, "more", "extra/cm.yaml",
                             "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\n"
                             "  namespace: development\ndata: {a: b}\n",
                             NULL));
    write_lock(repo, 5, lock, sizeof(lock));
    len = strlen(lock);
    assert_int_equal(th_rp(NULL, &err, "reconcile", "--repo", repo, "--no-apply", NULL), 4);
    snprintf(want, sizeof(want), "cannot update 'refs/heads/deploy': '%s' exists", lock);
    if (len <= 200) { /* the whole path fits beside the subject, whatever else does not */
        th_assert_contains(err, want);
        assert_null(strstr(err, "...")); /* nothing cut */
    }
    if (len < 80) /* room for what to do */
        th_assert_contains(err, "(a git process is updating it, or one died; if none runs on "
                                "this repository, remove it; rightplace does once it is 10 "
                                "minutes old)\n");
    else if (len > 100 && len <= 160) /* room for why */
        th_assert_contains(err, "exists (a git process is updating it, or one died)\n");
    assert_null(strstr(err, "moved under us"));  /* not mistaken for a race, not retried */
    assert_null(strstr(err, "for writing: \n")); /* no empty reason */
    assert_int_equal(stat(lock, &st), 0);        /* a lock that may be live is left alone */
    free(err);
    th_rm_rf(top ? top : repo);
    free(top);
    free(repo);
}

static void test_rc_drift__fresh_ref_lock_is_explained(void **state)
{
    (void)state;
    fresh_lock_explained(0);
    fresh_lock_explained(130);
    fresh_lock_explained(170);
}

static void test_rc_drift__stale_ref_lock_is_cleared(void **state)
{
    char *repo = th_example_repo();
    char *err = NULL, *before, *after;
    char lock[4096];
    struct stat st;
    (void)state;

    assert_int_equal(th_rp(NULL, NULL, "reconcile", "--repo", repo, "--no-apply", NULL), 0);
    before = th_git_ok(repo, "rev-parse", "deploy", NULL);
    free(th_git_commit_files(repo, "more", "extra/cm.yaml",
                             "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\n"
                             "  namespace: development\ndata: {a: b}\n",
                             NULL));
    write_lock(repo, 3600, lock, sizeof(lock));
    assert_int_equal(th_rp(NULL, &err, "reconcile", "--repo", repo, "--no-apply", NULL), 0);
    th_assert_contains(err, "removed the stale lock file");
    th_assert_contains(err, lock);
    assert_true(stat(lock, &st) < 0);
    after = th_git_ok(repo, "rev-parse", "deploy", NULL);
    assert_string_not_equal(before, after);
    free(before);
    free(after);
    free(err);
    th_rm_rf(repo);
    free(repo);
}

/* The same over a file:// remote, whose refs rightplace moves itself under the remote's ref
 * locks: a pass killed while it held one leaves it there, and every later push was refused
 * (a race, redone until the pass gave up) with libgit2's bare "failed to lock file". A fresh
 * lock is named and left alone; a stale one is removed. */
static void test_rc_drift__remote_ref_lock_left_by_a_killed_push(void **state)
{
    char *repo = th_example_repo();
    char *dir = th_tmpdir("remotelock"), *err = NULL, *before, *after;
    char remote[4096], url[4200], statedir[4096], lock[4200], want[8192];
    struct stat st;
    (void)state;

    snprintf(remote, sizeof(remote), "%s/remote.git", dir);
    snprintf(url, sizeof(url), "file://%s", remote);
    snprintf(statedir, sizeof(statedir), "%s/state", dir);
    snprintf(lock, sizeof(lock), "%s/refs/heads/deploy.lock", remote);
    free(th_git_ok(dir, "clone", "-q", "--bare", repo, remote, NULL));
    assert_int_equal(th_rp(NULL, NULL, "reconcile", "--once", "--no-apply", "--repo", url,
                           "--state-dir", statedir, NULL),
                     0);
    before = th_git_ok(remote, "rev-parse", "deploy", NULL);
    free(th_git_commit_files(repo, "more", "extra/cm.yaml",
                             "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\n"
                             "  namespace: development\ndata: {a: b}\n",
                             NULL));
    free(th_git_ok(repo, "push", "-q", remote, "HEAD:main", NULL));

    age_lock(lock, 5);
    assert_int_equal(th_rp(NULL, &err, "reconcile", "--once", "--no-apply", "--repo", url,
                           "--state-dir", statedir, NULL),
                     4);
    snprintf(want, sizeof(want), "'%s' exists (a git process is updating it, or one died", lock);
    th_assert_contains(err, want);
    assert_int_equal(stat(lock, &st), 0); /* it may be live: left alone */
    after = th_git_ok(remote, "rev-parse", "deploy", NULL);
    assert_string_equal(before, after);
    free(after);
    free(err);

    age_lock(lock, 3600);
    assert_int_equal(th_rp(NULL, &err, "reconcile", "--once", "--no-apply", "--repo", url,
                           "--state-dir", statedir, NULL),
                     0);
    th_assert_contains(err, "removed the stale lock file");
    th_assert_contains(err, lock);
    assert_true(stat(lock, &st) < 0);
    after = th_git_ok(remote, "rev-parse", "deploy", NULL);
    assert_string_not_equal(before, after);
    free(th_git_ok(remote, "fsck", "--strict", "--no-dangling", NULL));
    free(before);
    free(after);
    free(err);
    th_rm_rf(dir);
    free(dir);
    th_rm_rf(repo);
    free(repo);
}

/* A person commits to the deploy branch: plan reports it, reconcile repairs it in a commit
 * that says so, and the repaired file is what rightplace rendered */
static void test_rc_drift__hand_edit_is_reported_and_repaired(void **state)
{
    char *repo = th_example_repo();
    char *dir = th_tmpdir("handedit");
    const char *file = "clusters/static-cluster/rayjob1/rayjob.rayjob-train.yaml";
    char wt[4096], path[8192];
    char *out = NULL, *err = NULL, *rendered, *edited, *repaired, *subject, *msg;
    FILE *f;
    (void)state;

    assert_int_equal(th_rp(NULL, NULL, "reconcile", "--repo", repo, "--no-apply", NULL), 0);
    rendered = th_git_show(repo, "deploy", file);
    assert_non_null(rendered);
    /* the hand edit, in a work tree of the deploy branch */
    snprintf(wt, sizeof(wt), "%s/wt", dir);
    free(th_git_ok(repo, "worktree", "add", wt, "deploy", NULL));
    snprintf(path, sizeof(path), "%s/%s", wt, file);
    f = fopen(path, "a");
    assert_non_null(f);
    fputs("# edited by hand\n", f);
    fclose(f);
    free(th_git_ok(wt, "commit", "-qam", "hotfix on the cluster", NULL));
    edited = th_git_show(repo, "deploy", file);
    assert_string_not_equal(edited, rendered);

    /* plan reports it: a change pending, the file named */
    assert_int_equal(th_rp(&out, &err, "plan", "--repo", repo, NULL), 1);
    th_assert_contains(out, "files changed by hand on the deploy branch");
    th_assert_contains(out, file);
    th_assert_contains(err, "changed by hand");
    free(out);
    free(err);
    assert_int_equal(th_rp(&out, NULL, "plan", "--repo", repo, "-o", "json", NULL), 1);
    th_assert_contains(out, "\"handEdits\":");
    free(out);

    /* reconcile acts: it does not say "nothing to do" and leave it */
    assert_int_equal(th_rp(NULL, &err, "reconcile", "--repo", repo, "--no-apply", NULL), 0);
    th_assert_contains(err, "changed by hand");
    th_assert_contains(err, "this pass restored");
    assert_null(strstr(err, "nothing to do"));
    free(err);
    repaired = th_git_show(repo, "deploy", file);
    assert_string_equal(repaired, rendered);
    subject = th_git_ok(repo, "log", "-1", "--format=%s", "deploy", NULL);
    assert_string_equal(subject, "repair 1 hand-edited file on the deploy branch");
    msg = th_git_ok(repo, "log", "-1", "--format=%B", "deploy", NULL);
    th_assert_contains(msg, file);
    /* the repair is rightplace's: the next pass is quiet */
    assert_int_equal(th_rp(NULL, &err, "reconcile", "--repo", repo, "--no-apply", NULL), 0);
    assert_string_equal(err, "");
    free(err);
    free(th_git_ok(repo, "worktree", "remove", "--force", wt, NULL));
    free(rendered);
    free(edited);
    free(repaired);
    free(subject);
    free(msg);
    th_rm_rf(dir);
    free(dir);
    th_rm_rf(repo);
    free(repo);
}

/* Someone edits placements.yaml on the deploy branch: one edit "moves" a unit to another
 * cluster, one breaks the file, one removes it. None is taken as a decision: each is reported
 * and restored, no workload's files move, no pass fails, and the repair replays (replay
 * starts from the record the pass started from). */
static void test_rc_drift__hand_edited_record_is_not_taken(void **state)
{
    char *repo = th_example_repo();
    char *dir = th_tmpdir("handedit-record");
    static const char *const edits[] = {"move", "break", "remove"};
    char wt[4096], path[8192];
    char *err = NULL, *out = NULL, *rendered, *first, *subject, *moved, *repaired;
    (void)state;

    assert_int_equal(th_rp(NULL, NULL, "reconcile", "--repo", repo, "--no-apply", NULL), 0);
    rendered = th_git_show(repo, "deploy", "placements.yaml");
    assert_non_null(rendered);
    first = th_git_ok(repo, "rev-parse", "deploy", NULL);
    first[40] = '\0';
    snprintf(wt, sizeof(wt), "%s/wt", dir);
    free(th_git_ok(repo, "worktree", "add", wt, "deploy", NULL));
    snprintf(path, sizeof(path), "%s/placements.yaml", wt);
    for (size_t e = 0; e < sizeof(edits) / sizeof(edits[0]); e++) {
        free(th_git_ok(wt, "reset", "-q", "--hard", NULL)); /* to the deploy head */
        if (!strcmp(edits[e], "move")) {
            /* rayjob1 "on" dynamic-cluster: its unit's clusters line, and nothing else */
            static const char was[] = "  clusters:\n  - static-cluster\n";
            const char *u = strstr(rendered, "- unit: rayjob-capacity-policy-rayjob1/");
            const char *c = u ? strstr(u, was) : NULL;
            FILE *f;
            assert_non_null(c);
            f = fopen(path, "w");
            assert_non_null(f);
            fprintf(f, "%.*s  clusters:\n  - dynamic-cluster\n%s", (int)(c - rendered), rendered,
                    c + strlen(was));
            fclose(f);
            free(th_git_ok(wt, "commit", "-qam", "move rayjob1 by hand", NULL));
        } else if (!strcmp(edits[e], "break")) {
            FILE *f = fopen(path, "a");
            assert_non_null(f);
            fputs("units: [\n", f);
            fclose(f);
            free(th_git_ok(wt, "commit", "-qam", "break the record", NULL));
        } else {
            free(th_git_ok(wt, "rm", "-q", "placements.yaml", NULL));
            free(th_git_ok(wt, "commit", "-qm", "remove the record", NULL));
        }
        assert_int_equal(th_rp(NULL, &err, "reconcile", "--repo", repo, "--no-apply", NULL), 0);
        th_assert_contains(err, "changed by hand");
        th_assert_contains(err, "this pass restored");
        free(err);
        subject = th_git_ok(repo, "log", "-1", "--format=%s", "deploy", NULL);
        assert_string_equal(subject, "repair 1 hand-edited file on the deploy branch");
        repaired = th_git_show(repo, "deploy", "placements.yaml");
        assert_non_null(repaired);
        assert_string_equal(repaired, rendered);
        /* no workload moved: the clusters' files are those of the first commit */
        moved = th_git_ok(repo, "diff", "--name-only", first, "deploy", "--", "clusters/", NULL);
        assert_string_equal(moved, "");
        assert_int_equal(th_rp(&out, NULL, "replay", "--repo", repo, "deploy", NULL), 0);
        th_assert_contains(out, "match");
        free(out);
        free(subject);
        free(repaired);
        free(moved);
    }
    free(th_git_ok(repo, "worktree", "remove", "--force", wt, NULL));
    free(rendered);
    free(first);
    th_rm_rf(dir);
    free(dir);
    th_rm_rf(repo);
    free(repo);
}

/* A record in shards (more units than one file holds) whose shard someone edits by hand: the
 * edit is reported and repaired like any other, and it never becomes the record the next pass
 * starts from (the header names the shard as rightplace wrote it, by blob id): here it claims
 * the units of the shard run on the other cluster, and nothing moves. */
static void test_rc_drift__hand_edited_shard_is_not_taken(void **state)
{
    char *repo = th_git_init("handedit-shards", 0);
    char *dir = th_tmpdir("handedit-shards");
    const char *shard = "placements/000.yaml";
    char wt[4096], path[8192], spec[64];
    char *err = NULL, *rendered, *edited, *repaired, *subject, *head, *id, *moved;
    FILE *f;
    (void)state;

    /* 1,100 one-pod Deployments, each its own unit, on two clusters: cluster-00 fills first */
    for (int c = 0; c < 2; c++) {
        char text[512];
        snprintf(path, sizeof(path), "fleet/cluster-%02d.yaml", c);
        snprintf(text, sizeof(text),
                 "apiVersion: rightplace.dev/v1alpha1\nkind: Cluster\nmetadata:\n"
                 "  name: cluster-%02d\nspec:\n  autoscaler: {type: none}\n  nodes:\n"
                 "  - {name: pool, count: 2, allocatable: {cpu: \"40\", memory: 256Gi, "
                 "pods: \"1000\"}}\n",
                 c);
        th_write_file(repo, path, text, (size_t)-1);
    }
    th_write_file(repo, "policy.yaml",
                  "apiVersion: policy.elotl.co/v1alpha1\nkind: SchedulePolicy\nmetadata: {name: "
                  "gen}\nspec:\n  namespaceSelector: {}\n  resourceSelectors:\n"
                  "    labelSelectors: [{matchLabels: {app: gen}}]\n",
                  (size_t)-1);
    for (int w = 0; w < 1100; w++) {
        char text[768];
        snprintf(path, sizeof(path), "apps/w-%04d.yaml", w);
        snprintf(text, sizeof(text),
                 "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: w-%04d\n"
                 "  namespace: ns-%d\n  labels: {app: gen}\nspec:\n  replicas: 1\n"
                 "  selector: {matchLabels: {w: w-%04d}}\n  template:\n"
                 "    metadata: {labels: {w: w-%04d}}\n    spec:\n      containers:\n"
                 "      - name: c\n        image: registry.example/app:1\n"
                 "        resources: {requests: {cpu: 100m, memory: 64Mi}}\n",
                 w, w % 3, w, w);
        th_write_file(repo, path, text, (size_t)-1);
    }
    free(th_git_ok(repo, "add", "-A", NULL));
    free(th_git_ok(repo, "commit", "-q", "-m", "fleet", NULL));
    assert_int_equal(th_rp(NULL, NULL, "reconcile", "--repo", repo, "--once", "--no-apply", NULL),
                     0);
    head = th_git_show(repo, "deploy", "placements.yaml");
    th_assert_contains(head, "\nshards: ");
    rendered = th_git_show(repo, "deploy", shard);
    assert_non_null(rendered);
    assert_true(th_count(rendered, "- cluster-00\n") > 0);

    /* the hand edit: every unit of the shard "on" cluster-01 */
    snprintf(wt, sizeof(wt), "%s/wt", dir);
    free(th_git_ok(repo, "worktree", "add", wt, "deploy", NULL));
    snprintf(path, sizeof(path), "%s/%s", wt, shard);
    edited = strdup(rendered);
    assert_non_null(edited);
    for (char *p = strstr(edited, "- cluster-00\n"); p; p = strstr(p, "- cluster-00\n"))
        p[11] = '1';
    f = fopen(path, "w");
    assert_non_null(f);
    fputs(edited, f);
    fclose(f);
    free(th_git_ok(wt, "commit", "-qam", "move them by hand", NULL));

    assert_int_equal(th_rp(NULL, &err, "reconcile", "--repo", repo, "--once", "--no-apply", NULL),
                     0);
    th_assert_contains(err, "changed by hand");
    free(err);
    subject = th_git_ok(repo, "log", "-1", "--format=%s", "deploy", NULL);
    assert_string_equal(subject, "repair 1 hand-edited file on the deploy branch");
    repaired = th_git_show(repo, "deploy", shard);
    assert_string_equal(repaired, rendered); /* restored */
    /* nothing moved: the clusters' files are those of the first commit */
    moved = th_git_ok(repo, "diff", "--name-only", "deploy~2", "deploy", "--", "clusters/", NULL);
    assert_string_equal(moved, "");
    /* and the header names the shard the tree has */
    snprintf(spec, sizeof(spec), "deploy:%s", shard);
    id = th_git_ok(repo, "rev-parse", spec, NULL);
    id[40] = '\0';
    free(head);
    head = th_git_show(repo, "deploy", "placements.yaml");
    th_assert_contains(head, id);

    /* a header that names a shard the repository lacks: reported and restored, not a pass
     * that fails until someone mends it */
    free(th_git_ok(wt, "reset", "-q", "--hard", NULL)); /* to the deploy head */
    snprintf(path, sizeof(path), "%s/placements.yaml", wt);
    {
        char *p = strstr(head, id);
        FILE *hf = fopen(path, "w");
        assert_non_null(p);
        assert_non_null(hf);
        fprintf(hf, "%.*s%s%s", (int)(p - head), head, "0123456789abcdef0123456789abcdef01234567",
                p + 40);
        fclose(hf);
    }
    free(th_git_ok(wt, "commit", "-qam", "name a shard that is not there", NULL));
    assert_int_equal(th_rp(NULL, &err, "reconcile", "--repo", repo, "--once", "--no-apply", NULL),
                     0);
    th_assert_contains(err, "changed by hand");
    free(err);
    free(repaired);
    repaired = th_git_show(repo, "deploy", "placements.yaml");
    assert_string_equal(repaired, head);
    free(moved);
    moved = th_git_ok(repo, "diff", "--name-only", "deploy~4", "deploy", "--", "clusters/", NULL);
    assert_string_equal(moved, "");
    free(th_git_ok(repo, "worktree", "remove", "--force", wt, NULL));
    free(rendered);
    free(edited);
    free(repaired);
    free(subject);
    free(moved);
    free(id);
    free(head);
    th_rm_rf(dir);
    free(dir);
    th_rm_rf(repo);
    free(repo);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rc_drift__fresh_ref_lock_is_explained),
        cmocka_unit_test(test_rc_drift__stale_ref_lock_is_cleared),
        cmocka_unit_test(test_rc_drift__remote_ref_lock_left_by_a_killed_push),
        cmocka_unit_test(test_rc_drift__hand_edit_is_reported_and_repaired),
        cmocka_unit_test(test_rc_drift__hand_edited_record_is_not_taken),
        cmocka_unit_test(test_rc_drift__hand_edited_shard_is_not_taken),
    };
    int rc;

    home = th_git_env_setup();
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    th_rm_rf(home);
    free(home);
    return rc;
}
