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

static void test_rc_drift__fresh_ref_lock_is_explained(void **state)
{
    char *repo = th_example_repo();
    char *err = NULL;
    char lock[4096], want[8192];
    struct stat st;
    (void)state;

    assert_int_equal(th_rp(NULL, NULL, "reconcile", "--repo", repo, "--no-apply", NULL), 0);
    free(th_git_commit_files(repo, "more", "extra/cm.yaml",
                             "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\n"
                             "  namespace: development\ndata: {a: b}\n",
                             NULL));
    write_lock(repo, 5, lock, sizeof(lock));
    assert_int_equal(th_rp(NULL, &err, "reconcile", "--repo", repo, "--no-apply", NULL), 4);
    snprintf(want, sizeof(want), "'%s' exists", lock);
    th_assert_contains(err, want);
    snprintf(want, sizeof(want), "remove it: rm '%s'", lock);
    th_assert_contains(err, want);
    assert_null(strstr(err, "moved under us"));  /* not mistaken for a race, not retried */
    assert_null(strstr(err, "for writing: \n")); /* no empty reason */
    assert_int_equal(stat(lock, &st), 0);        /* a lock that may be live is left alone */
    free(err);
    th_rm_rf(repo);
    free(repo);
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rc_drift__fresh_ref_lock_is_explained),
        cmocka_unit_test(test_rc_drift__stale_ref_lock_is_cleared),
        cmocka_unit_test(test_rc_drift__remote_ref_lock_left_by_a_killed_push),
        cmocka_unit_test(test_rc_drift__hand_edit_is_reported_and_repaired),
    };
    int rc;

    home = th_git_env_setup();
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    th_rm_rf(home);
    free(home);
    return rc;
}
