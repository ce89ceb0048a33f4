/*
 * test_rc_render_reuse.c - a pass renders only the units whose output changed and keeps the
 * deploy head's files for the rest: a one-file change renders that file's objects, the
 * commit is what a full render gives (replay matches), and anything the rendered files
 * depend on besides the manifests (the render options) renders everything again.
 *
 * Real git repositories in temp dirs, the pass as the binary runs it.
 */
#include "th.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rc_git.h"
#include "rc_pass.h"
#include "th_git.h"
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

static void write_job(const char *repo, int i, const char *image)
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
             "      - {name: c, image: %s, resources: {requests: {cpu: \"1\"}}}\n",
             i, i, image);
    th_write_file(repo, path, text, (size_t)-1);
}

static char *make_repo(void)
{
    char *repo = th_git_init("reuse", 0);

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
        write_job(repo, i, "busybox:1");
    free(th_git_ok(repo, "add", "-A", NULL));
    free(th_git_ok(repo, "commit", "-q", "-m", "fleet", NULL));
    return repo;
}

static void run_pass(struct rc_pass_result *res, const char *repo, int pull, struct rc_arena *a)
{
    struct rc_pass_options o = RC_PASS_OPTIONS_INIT;
    struct rc_err err = RC_ERR_INIT;
    struct rc_git *g = NULL;

    o.apply = 0;
    o.render.pull = pull;
    assert_int_equal(rc_git_open(&g, repo, NULL, &err), RC_OK);
    if (rc_pass_run(res, g, &o, a, &err) != RC_OK)
        fail_msg("pass: %s", err.msg);
    rc_git_free(g);
}

static void test_rc_render_reuse__one_change_renders_one_unit(void **state)
{
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_pass_result res;
    char *repo = make_repo();
    char *out = NULL, *err = NULL, *file;

    (void)state;
    assert_int_equal(rc_git_global_init(&(struct rc_err)RC_ERR_INIT), RC_OK);
    run_pass(&res, repo, 0, &a);
    assert_int_equal(res.committed, 1);
    assert_int_equal(res.nrendered, NJOBS);

    /* one workload changes: only its object is rendered; the others are kept */
    write_job(repo, 3, "busybox:2");
    free(th_git_ok(repo, "commit", "-q", "-a", "-m", "job-3 image", NULL));
    run_pass(&res, repo, 0, &a);
    assert_int_equal(res.committed, 1);
    assert_int_equal(res.nrendered, 1);
    file = th_git_show(repo, "deploy", "clusters/c0/team/job.job-3.yaml");
    assert_non_null(file);
    assert_non_null(strstr(file, "image: busybox:2"));
    free(file);
    /* the commit is exactly what a full render gives */
    assert_int_equal(th_rp(&out, &err, "replay", "--repo", repo, "deploy", NULL), 0);
    free(out);
    free(err);

    /* the render options change what every file holds: everything is rendered again */
    run_pass(&res, repo, 1, &a);
    assert_int_equal(res.nrendered, NJOBS);
    file = th_git_show(repo, "deploy", "clusters/c0/team/job.job-1.yaml");
    assert_non_null(file);
    assert_null(strstr(file, "app.kubernetes.io/managed-by"));
    free(file);

    rc_git_global_shutdown();
    rc_arena_release(&a);
    th_rm_rf(repo);
    free(repo);
}

/* A file to keep that someone removed from the deploy branch is rendered again. */
static void test_rc_render_reuse__missing_file_is_rendered(void **state)
{
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_pass_result res;
    char *repo = make_repo();
    char *file, *wt;

    (void)state;
    assert_int_equal(rc_git_global_init(&(struct rc_err)RC_ERR_INIT), RC_OK);
    run_pass(&res, repo, 0, &a);
    assert_int_equal(res.committed, 1);
    /* a hand edit on the deploy branch, made with rightplace's own identity so that it is
     * not told apart: the file is gone */
    wt = th_tmpdir("reuse-wt");
    th_rm_rf(wt);
    free(th_git_ok(repo, "worktree", "add", "-q", wt, "deploy", NULL));
    free(th_git_ok(wt, "rm", "-q", "clusters/c0/team/job.job-2.yaml", NULL));
    free(th_git_ok(wt, "-c", "user.name=rightplace", "-c", "user.email=rightplace@localhost",
                   "commit", "-q", "-m", "remove a file", NULL));
    write_job(repo, 4, "busybox:3");
    free(th_git_ok(repo, "commit", "-q", "-a", "-m", "job-4 image", NULL));
    run_pass(&res, repo, 0, &a);
    assert_int_equal(res.committed, 1);
    file = th_git_show(repo, "deploy", "clusters/c0/team/job.job-2.yaml");
    assert_non_null(file);
    free(file);
    free(th_git_ok(repo, "worktree", "remove", "--force", wt, NULL));
    free(wt);

    rc_git_global_shutdown();
    rc_arena_release(&a);
    th_rm_rf(repo);
    free(repo);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rc_render_reuse__one_change_renders_one_unit),
        cmocka_unit_test(test_rc_render_reuse__missing_file_is_rendered),
    };
    int rc;

    home = th_git_env_setup();
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    th_rm_rf(home);
    free(home);
    return rc;
}
