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
#include <sys/stat.h>
#include <unistd.h>

#include "rc_git.h"
#include "rc_pass.h"
#include "rd_output.h"
#include "th_git.h"
#include "th_rp.h"

#include "rc_banned.h"

#define NJOBS 6

static char *home;

/* One unit per instance label in namespace team (the tests' spread policies add to it) */
#define POLICY                                                                                     \
    "apiVersion: policy.elotl.co/v1alpha1\n"                                                       \
    "kind: SchedulePolicy\n"                                                                       \
    "metadata: {name: capacity}\n"                                                                 \
    "spec:\n"                                                                                      \
    "  namespaceSelector:\n"                                                                       \
    "    matchLabels: {kubernetes.io/metadata.name: team}\n"                                       \
    "  resourceSelectors:\n"                                                                       \
    "    labelSelectors:\n"                                                                        \
    "    - matchExpressions: [{key: app.kubernetes.io/instance, operator: Exists}]\n"              \
    "  groupBy: {labelKey: app.kubernetes.io/instance}\n"

static const char *const policy = POLICY;

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

/* Cluster c<c> of 4 nodes of 8 CPUs, with these labels (a YAML flow mapping) */
static void write_cluster(const char *repo, int c, const char *labels)
{
    char path[64], text[256];

    snprintf(path, sizeof(path), "fleet/c%d.yaml", c);
    snprintf(text, sizeof(text),
             "apiVersion: rightplace.dev/v1alpha1\nkind: Cluster\n"
             "metadata: {name: c%d, labels: %s}\n"
             "spec:\n  nodes:\n  - {name: node, count: 4, allocatable: {cpu: \"8\", "
             "memory: 16Gi, pods: \"110\"}}\n",
             c, labels);
    th_write_file(repo, path, text, (size_t)-1);
}

static char *make_repo(void)
{
    char *repo = th_git_init("reuse", 0);

    th_write_file(repo, "policy.yaml", policy, (size_t)-1);
    for (int c = 0; c < 3; c++)
        write_cluster(repo, c, "{}");
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
    /* hashed to compare with the head: the job, c0's Namespace, the capacity snapshot and
     * .rightplace/source; no cluster's kustomization, whose files are the head's */
    assert_int_equal(res.nfiles_hashed, 4);
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

static void replay_matches(const char *repo)
{
    char *out = NULL, *err = NULL;

    if (th_rp(&out, &err, "replay", "--repo", repo, "deploy", NULL) != 0)
        fail_msg("replay: %s%s", out, err);
    free(out);
    free(err);
}

static char *deploy_file(const char *repo, const char *path)
{
    char *text = th_git_show(repo, "deploy", path);

    assert_non_null(text);
    return text;
}

/* A cluster's kustomization.yaml is taken from the head only while the cluster's files are
 * the head's path for path: a file that comes or goes puts it in the commit, listing exactly
 * the files there, and a kustomization edited by hand is put right (the pass renders it all,
 * as for any hand edit). Each commit is what a full render gives. */
static void test_rc_render_reuse__kustomization_follows_its_files(void **state)
{
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_pass_result res;
    char *repo = make_repo(), *dir = th_tmpdir("reuse-kust");
    char *k0, *k1, *edited, wt[4096], path[8192];
    FILE *f;

    (void)state;
    assert_int_equal(rc_git_global_init(&(struct rc_err)RC_ERR_INIT), RC_OK);
    run_pass(&res, repo, 0, &a);
    k1 = deploy_file(repo, "clusters/c1/kustomization.yaml");

    /* a new job: c0's list changes, so its kustomization is made and committed again */
    write_job(repo, NJOBS, "busybox:1");
    free(th_git_ok(repo, "add", "-A", NULL));
    free(th_git_ok(repo, "commit", "-q", "-m", "one more", NULL));
    run_pass(&res, repo, 0, &a);
    assert_int_equal(res.committed, 1);
    assert_int_equal(res.nrendered, 1);
    assert_int_equal(res.nfiles_hashed,
                     5); /* the job, c0's Namespace and kustomization, .rightplace x2 */
    k0 = deploy_file(repo, "clusters/c0/kustomization.yaml");
    th_assert_contains(k0, "- team/job.job-6.yaml\n");
    free(k0);
    replay_matches(repo);

    /* a job goes: its line goes with it */
    free(th_git_ok(repo, "rm", "-q", "jobs/job-0.yaml", NULL));
    free(th_git_ok(repo, "commit", "-q", "-m", "one less", NULL));
    run_pass(&res, repo, 0, &a);
    assert_int_equal(res.committed, 1);
    k0 = deploy_file(repo, "clusters/c0/kustomization.yaml");
    assert_null(strstr(k0, "job.job-0.yaml"));
    th_assert_contains(k0, "- team/job.job-1.yaml\n");
    free(k0);
    replay_matches(repo);

    /* c1's kustomization edited by hand, then a change elsewhere: it is put right */
    snprintf(wt, sizeof(wt), "%s/wt", dir);
    free(th_git_ok(repo, "worktree", "add", "-q", wt, "deploy", NULL));
    snprintf(path, sizeof(path), "%s/clusters/c1/kustomization.yaml", wt);
    f = fopen(path, "a");
    assert_non_null(f);
    fputs("# edited by hand\n", f);
    fclose(f);
    free(th_git_ok(wt, "commit", "-qam", "by hand", NULL));
    free(th_git_ok(wt, "checkout", "-q", "--detach", NULL)); /* the pass moves deploy */
    edited = deploy_file(repo, "clusters/c1/kustomization.yaml");
    assert_string_not_equal(edited, k1);
    write_job(repo, 3, "busybox:2");
    free(th_git_ok(repo, "commit", "-q", "-a", "-m", "job-3 image", NULL));
    run_pass(&res, repo, 0, &a);
    assert_int_equal(res.committed, 1);
    free(edited);
    edited = deploy_file(repo, "clusters/c1/kustomization.yaml");
    assert_string_equal(edited, k1);
    replay_matches(repo);

    free(edited);
    free(k1);
    rc_git_global_shutdown();
    rc_arena_release(&a);
    th_rm_rf(dir);
    free(dir);
    th_rm_rf(repo);
    free(repo);
}

/* Broken files keep their objects' files without rendering them: a kept version that is the
 * one the deploy head was made from renders nothing. A file whole again renders what it says
 * now. Each commit is what a full render gives (replay matches). */
static void test_rc_render_reuse__broken_files_render_nothing(void **state)
{
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_pass_result res;
    char *repo = make_repo();
    char *job3, *file;

    (void)state;
    assert_int_equal(rc_git_global_init(&(struct rc_err)RC_ERR_INIT), RC_OK);
    run_pass(&res, repo, 0, &a);
    assert_int_equal(res.nrendered, NJOBS);

    /* job-1 does not parse; job-2's file copies job-3's object (both refused) */
    th_write_file(repo, "jobs/job-1.yaml", "kind: Job\nmetadata:\n\tname: x\n", (size_t)-1);
    job3 = th_git_show(repo, "HEAD", "jobs/job-3.yaml");
    th_write_file(repo, "jobs/job-2.yaml", job3, (size_t)-1);
    free(th_git_ok(repo, "commit", "-q", "-a", "-m", "break three", NULL));
    run_pass(&res, repo, 0, &a);
    assert_int_equal(res.nfile_errors, 3);
    assert_int_equal(res.committed, 1);
    assert_int_equal(res.nrendered, 0);
    replay_matches(repo);

    /* a later change while they stay broken: its object alone */
    write_job(repo, 4, "busybox:3");
    free(th_git_ok(repo, "commit", "-q", "-a", "-m", "job-4 image", NULL));
    run_pass(&res, repo, 0, &a);
    assert_int_equal(res.nfile_errors, 3);
    assert_int_equal(res.nrendered, 1);
    replay_matches(repo);

    /* fixed: job-1 says something new, job-2 is itself again, job-3 is whole again */
    write_job(repo, 1, "busybox:4");
    write_job(repo, 2, "busybox:1");
    free(th_git_ok(repo, "commit", "-q", "-a", "-m", "fix", NULL));
    run_pass(&res, repo, 0, &a);
    assert_int_equal(res.nfile_errors, 0);
    assert_int_equal(res.nrendered, 3);
    file = th_git_show(repo, "deploy", "clusters/c0/team/job.job-1.yaml");
    assert_non_null(file);
    assert_non_null(strstr(file, "image: busybox:4"));
    free(file);
    replay_matches(repo);

    free(job3);
    rc_git_global_shutdown();
    rc_arena_release(&a);
    th_rm_rf(repo);
    free(repo);
}

/* A unit of many objects in many files (one group): a change to one file renders that file's
 * objects alone, the unit's others are kept. An object that joins the unit from a file that
 * did not change (a ConfigMap a changed job now references: dependencies follow) is not in
 * the base's entry of the unit, so it is rendered, not kept. Each commit is what a full render
 * gives (replay matches). */
static void write_member(const char *repo, int i, const char *image, int with_config,
                         const char *tier)
{
    char path[64], text[768];

    snprintf(path, sizeof(path), "jobs/member-%d.yaml", i);
    snprintf(text, sizeof(text),
             "apiVersion: batch/v1\n"
             "kind: Job\n"
             "metadata: {name: member-%d, namespace: team, labels: {app.kubernetes.io/instance: "
             "big, tier: %s}}\n"
             "spec:\n"
             "  template:\n"
             "    spec:\n"
             "      restartPolicy: Never\n"
             "      containers:\n"
             "      - name: c\n"
             "        image: %s\n"
             "        resources: {requests: {cpu: 100m}}\n"
             "%s",
             i, tier, image,
             with_config ? "        envFrom: [{configMapRef: {name: settings}}]\n" : "");
    th_write_file(repo, path, text, (size_t)-1);
}

static const char *first_policy(const char *tier)
{
    static char text[512];

    snprintf(text, sizeof(text),
             "apiVersion: policy.elotl.co/v1alpha1\nkind: SchedulePolicy\n"
             "metadata: {name: a-first}\nspec:\n"
             "  namespaceSelector:\n    matchLabels: {kubernetes.io/metadata.name: team}\n"
             "  resourceSelectors:\n    labelSelectors:\n    - matchLabels: {tier: %s}\n"
             "  groupBy: {labelKey: app.kubernetes.io/instance}\n",
             tier);
    return text;
}

/* Commit what the work tree holds, and a pass: it commits, renders n object files, the deploy
 * file at path holds text, and the commit is what a full render gives. */
static void commit_renders(const char *repo, const char *msg, size_t n, const char *path,
                           const char *text, struct rc_arena *a)
{
    struct rc_pass_result res;
    char *file;

    free(th_git_ok(repo, "commit", "-q", "-a", "-m", msg, NULL));
    run_pass(&res, repo, 0, a);
    assert_int_equal(res.committed, 1);
    assert_int_equal(res.nrendered, n);
    file = deploy_file(repo, path);
    th_assert_contains(file, text);
    free(file);
    replay_matches(repo);
}

static void test_rc_render_reuse__one_file_of_a_unit_renders_its_objects(void **state)
{
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_pass_result res;
    char *repo = make_repo();

    (void)state;
    assert_int_equal(rc_git_global_init(&(struct rc_err)RC_ERR_INIT), RC_OK);
    for (int i = 0; i < NJOBS; i++)
        write_member(repo, i, "busybox:1", 0, "b");
    /* one more of the group, which a policy whose name sorts first takes for now */
    write_member(repo, NJOBS, "busybox:1", 0, "x");
    th_write_file(repo, "a-first.yaml", first_policy("x"), (size_t)-1);
    th_write_file(repo, "config/settings.yaml",
                  "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: team}\n"
                  "data: {level: info}\n",
                  (size_t)-1);
    free(th_git_ok(repo, "add", "-A", NULL));
    free(th_git_ok(repo, "commit", "-q", "-m", "a unit of many files", NULL));
    run_pass(&res, repo, 0, &a);
    assert_int_equal(res.committed, 1);
    assert_int_equal(res.nrendered, 2 * NJOBS + 1); /* the jobs alone, the group's members */

    /* one member changes: it alone is rendered */
    write_member(repo, 3, "busybox:2", 0, "b");
    commit_renders(repo, "member-3 image", 1, "clusters/c0/team/job.member-3.yaml",
                   "image: busybox:2", &a);

    /* another references the ConfigMap, whose file did not change: both are rendered */
    write_member(repo, 4, "busybox:1", 1, "b");
    commit_renders(repo, "member-4 reads settings", 2, "clusters/c0/team/configmap.settings.yaml",
                   "level: info", &a);

    /* the first policy lets its member go: it joins the group's unit from a file that did
     * not change, where the base has its file with the other unit's label; rendered. The
     * ConfigMap's unit, which follows the group's and has no policy, is kept */
    th_write_file(repo, "a-first.yaml", first_policy("none"), (size_t)-1);
    commit_renders(repo, "a-first takes nothing", 1, "clusters/c0/team/job.member-6.yaml",
                   "app.kubernetes.io/instance: big", &a);

    rc_git_global_shutdown();
    rc_arena_release(&a);
    th_rm_rf(repo);
    free(repo);
}

/* Every job on every cluster (Duplicate), and overrides that name two of them: job-2's image
 * on c1, and on c0 a path job-3 does not have (a warning). */
static const char *const duplicate_policy =
    POLICY "  spreadConstraints:\n"
           "    spreadMode: Duplicate\n"
           "    topologyKey: kubernetes.io/metadata.name\n"
           "    overrides:\n"
           "    - topologyValue: c1\n"
           "      resources:\n"
           "      - kind: Job\n"
           "        apiVersion: batch/v1\n"
           "        name: job-2\n"
           "        namespace: team\n"
           "        override:\n"
           "        - fieldPath: spec.template.spec.containers[0].image\n"
           "          value: {staticValue: \"busybox:c1\"}\n"
           "    - topologyValue: c0\n"
           "      resources:\n"
           "      - kind: Job\n"
           "        name: job-3\n"
           "        override:\n"
           "        - fieldPath: spec.template.spec.containers[5].image\n"
           "          value: {staticValue: \"busybox:c0\"}\n";

static int warns_of(const struct rc_pass_result *res, const char *text)
{
    for (size_t i = 0; i < res->nwarnings; i++) {
        if (strstr(res->warnings[i], text))
            return 1;
    }
    return 0;
}

/* A policy with overrides: the objects its overrides name are rendered by every pass that
 * renders (what an override makes of an object, and whether it warns, depends on the
 * target's topology value), and its units' other objects are kept like any others. */
static void test_rc_render_reuse__overrides_render_the_objects_they_name(void **state)
{
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_pass_result res;
    char *repo = make_repo();
    char *file;

    (void)state;
    assert_int_equal(rc_git_global_init(&(struct rc_err)RC_ERR_INIT), RC_OK);
    th_write_file(repo, "policy.yaml", duplicate_policy, (size_t)-1);
    free(th_git_ok(repo, "commit", "-q", "-a", "-m", "duplicate, with overrides", NULL));
    run_pass(&res, repo, 0, &a);
    assert_int_equal(res.committed, 1);
    assert_int_equal(res.nrendered, 3 * NJOBS);
    assert_true(warns_of(&res, "override of 'team/Job/job-3' on c0"));

    /* job-0 changes: its three files, and job-2's and job-3's, which overrides name */
    write_job(repo, 0, "busybox:2");
    commit_renders(repo, "job-0 image", 3 + 3 + 3, "clusters/c2/team/job.job-0.yaml",
                   "image: busybox:2", &a);
    file = deploy_file(repo, "clusters/c1/team/job.job-2.yaml");
    th_assert_contains(file, "image: busybox:c1");
    free(file);
    file = deploy_file(repo, "clusters/c0/team/job.job-2.yaml");
    th_assert_contains(file, "image: busybox:1");
    free(file);

    /* the warning stays while the override does not apply */
    write_job(repo, 1, "busybox:2");
    free(th_git_ok(repo, "commit", "-q", "-a", "-m", "job-1 image", NULL));
    run_pass(&res, repo, 0, &a);
    assert_int_equal(res.committed, 1);
    assert_int_equal(res.nrendered, 3 + 3 + 3);
    assert_true(warns_of(&res, "override of 'team/Job/job-3' on c0"));
    replay_matches(repo);

    rc_git_global_shutdown();
    rc_arena_release(&a);
    th_rm_rf(repo);
    free(repo);
}

/* Every unit divided between zones a and b */
static const char *const divide_policy = POLICY "  spreadConstraints:\n"
                                                "    spreadMode: Divide\n"
                                                "    topologyKey: zone\n"
                                                "    percentageSplit:\n"
                                                "    - {topologyValue: a, percentage: 50}\n"
                                                "    - {topologyValue: b, percentage: 50}\n";

static void write_web(const char *repo, int replicas)
{
    char text[512];

    snprintf(text, sizeof(text),
             "apiVersion: apps/v1\n"
             "kind: Deployment\n"
             "metadata: {name: web, namespace: team, labels: {app.kubernetes.io/instance: web}}\n"
             "spec:\n"
             "  replicas: %d\n"
             "  selector: {matchLabels: {app: web}}\n"
             "  template:\n"
             "    metadata: {labels: {app: web}}\n"
             "    spec:\n"
             "      containers:\n"
             "      - {name: c, image: nginx, resources: {requests: {cpu: 100m}}}\n",
             replicas);
    th_write_file(repo, "deployments/web.yaml", text, (size_t)-1);
}

/* Units that Divide keep their files while their shares are the base's (the record's
 * `shares`, read back) and their clusters' files did not change: a cluster's topology value
 * orders targets whose percents tie, so two clusters that swap zones keep their clusters and
 * percents but swap the remainders. A target a share leaves without the object has no file
 * to keep. */
static void test_rc_render_reuse__divided_units_keep_their_shares(void **state)
{
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_pass_result res;
    char *repo = make_repo();
    char *file;

    (void)state;
    assert_int_equal(rc_git_global_init(&(struct rc_err)RC_ERR_INIT), RC_OK);
    th_write_file(repo, "policy.yaml", divide_policy, (size_t)-1);
    write_cluster(repo, 0, "{zone: a}");
    write_cluster(repo, 1, "{zone: b}");
    write_cluster(repo, 2, "{zone: c}");
    write_web(repo, 5);
    free(th_git_ok(repo, "add", "-A", NULL));
    free(th_git_ok(repo, "commit", "-q", "-m", "divided", NULL));
    run_pass(&res, repo, 0, &a);
    assert_int_equal(res.committed, 1);
    /* a Job's one pod runs where the tie of 50/50 puts it (zone a: c0); the Deployment on
     * both */
    assert_int_equal(res.nrendered, NJOBS + 2);
    file = th_git_show(repo, "deploy", "clusters/c1/team/job.job-0.yaml");
    assert_null(file);

    /* one Job changes: it alone is rendered */
    write_job(repo, 0, "busybox:2");
    commit_renders(repo, "job-0 image", 1, "clusters/c0/team/job.job-0.yaml", "image: busybox:2",
                   &a);

    /* the Deployment's replicas: both its shares, the odd one to zone a */
    write_web(repo, 7);
    commit_renders(repo, "web 7 replicas", 2, "clusters/c0/team/deployment.web.yaml", "replicas: 4",
                   &a);
    file = deploy_file(repo, "clusters/c1/team/deployment.web.yaml");
    th_assert_contains(file, "replicas: 3");
    free(file);

    /* c0 and c1 swap zones (and the Jobs go): the Deployment keeps its clusters and
     * percents, but the odd replica goes to zone a, now c1; it is rendered */
    free(th_git_ok(repo, "rm", "-q", "-r", "jobs", NULL));
    write_cluster(repo, 0, "{zone: b}");
    write_cluster(repo, 1, "{zone: a}");
    commit_renders(repo, "c0 and c1 swap zones", 2, "clusters/c1/team/deployment.web.yaml",
                   "replicas: 4", &a);
    file = deploy_file(repo, "clusters/c0/team/deployment.web.yaml");
    th_assert_contains(file, "replicas: 3");
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

/* Commit everything in work tree wt as a rightplace pass does (its committer name and the
 * Rightplace-Source trailer), so that it is not told apart from one. */
static void commit_as_rightplace(const char *wt, const char *subject, const char *trailer)
{
    setenv("GIT_COMMITTER_NAME", "rightplace", 1);
    free(th_git_ok(wt, "commit", "-q", "-a", "-m", subject, "-m", trailer, NULL));
    setenv("GIT_COMMITTER_NAME", "Test Author", 1);
}

/* A deploy head with an executable file and a symlink under clusters/ that someone committed
 * as rightplace commits (so not reported as a hand edit): a one-change pass only writes what
 * changed over the head (rc_git_update_tree), but the tree it commits is still the one a
 * whole build makes, with every deploy file a plain file and the symlink gone. */
static void test_rc_render_reuse__odd_entries_of_the_head_put_right(void **state)
{
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_pass_result res;
    char *repo = make_repo();
    char *wt, *main_id, *ls, *out = NULL, *err = NULL;
    char trailer[80], link[4096];

    (void)state;
    assert_int_equal(rc_git_global_init(&(struct rc_err)RC_ERR_INIT), RC_OK);
    run_pass(&res, repo, 0, &a);
    assert_int_equal(res.committed, 1);
    main_id = th_git_rev(repo, "main");
    snprintf(trailer, sizeof(trailer), "Rightplace-Source: %s", main_id);
    wt = th_tmpdir("odd-wt");
    th_rm_rf(wt);
    free(th_git_ok(repo, "worktree", "add", "-q", wt, "deploy", NULL));
    snprintf(link, sizeof(link), "%s/clusters/c0/team/job.job-3.yaml", wt);
    assert_int_equal(chmod(link, 0755), 0);
    snprintf(link, sizeof(link), "%s/clusters/c0/team/link.yaml", wt);
    assert_int_equal(symlink("job.job-3.yaml", link), 0);
    free(th_git_ok(wt, "add", "clusters/c0/team/link.yaml", NULL));
    commit_as_rightplace(wt, "odd entries", trailer);
    ls = th_git_ok(repo, "ls-tree", "-r", "deploy", "clusters/c0/team/", NULL);
    assert_non_null(strstr(ls, "100755 blob"));
    assert_non_null(strstr(ls, "120000 blob"));
    free(ls);

    write_job(repo, 4, "busybox:2");
    free(th_git_ok(repo, "commit", "-q", "-a", "-m", "job-4 image", NULL));
    run_pass(&res, repo, 0, &a);
    assert_int_equal(res.committed, 1);
    ls = th_git_ok(repo, "ls-tree", "-r", "deploy", NULL);
    assert_null(strstr(ls, "100755 blob"));
    assert_null(strstr(ls, "120000 blob"));
    assert_non_null(strstr(ls, "clusters/c0/team/job.job-3.yaml"));
    free(ls);
    assert_int_equal(th_rp(&out, &err, "replay", "--repo", repo, "deploy", NULL), 0);
    free(out);
    free(err);

    free(th_git_ok(repo, "worktree", "remove", "--force", wt, NULL));
    free(wt);
    free(main_id);
    rc_git_global_shutdown();
    rc_arena_release(&a);
    th_rm_rf(repo);
    free(repo);
}

/* A deploy head written before .rightplace/source existed names its source commit in
 * placements.yaml: the pass reads it there (the head is not rewritten for that alone, and a
 * one-file change still renders one unit), and its next commit moves it to
 * .rightplace/source, with the record's bytes those of a record that names none. A
 * .rightplace/source that is not a commit id counts as absent: everything is rendered. */
static void test_rc_render_reuse__record_naming_its_source_is_read(void **state)
{
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_pass_result res;
    char *repo = make_repo();
    char *wt, *record, *legacy, *at, *main_id, *head, *blob, *file;
    char trailer[80];

    (void)state;
    assert_int_equal(rc_git_global_init(&(struct rc_err)RC_ERR_INIT), RC_OK);
    run_pass(&res, repo, 0, &a);
    assert_int_equal(res.committed, 1);
    main_id = th_git_rev(repo, "main");
    blob = th_git_rev(repo, "deploy:placements.yaml");
    file = th_git_show(repo, "deploy", RD_SOURCE_FILE);
    assert_non_null(file);
    assert_int_equal(strlen(file), 41);
    assert_memory_equal(file, main_id, 40);
    free(file);

    /* the older form, committed as rightplace commits (not a hand edit) */
    snprintf(trailer, sizeof(trailer), "Rightplace-Source: %s", main_id);
    wt = th_tmpdir("reuse-wt");
    th_rm_rf(wt);
    free(th_git_ok(repo, "worktree", "add", "-q", wt, "deploy", NULL));
    record = th_git_show(repo, "deploy", "placements.yaml");
    assert_non_null(record);
    at = strstr(record, "kind: PlacementRecord\n");
    assert_non_null(at);
    at += strlen("kind: PlacementRecord\n");
    legacy = malloc(strlen(record) + 64);
    assert_non_null(legacy);
    snprintf(legacy, strlen(record) + 64, "%.*ssource: %s\n%s", (int)(at - record), record, main_id,
             at);
    th_write_file(wt, "placements.yaml", legacy, (size_t)-1);
    free(th_git_ok(wt, "rm", "-q", RD_SOURCE_FILE, NULL));
    commit_as_rightplace(wt, "the older form", trailer);
    head = th_git_rev(repo, "deploy");
    /* replay takes the older form as it is: its record's source, and no .rightplace/source */
    {
        char *out = NULL, *errout = NULL;
        int rc = th_rp(&out, &errout, "replay", "--repo", repo, "deploy", NULL);
        if (rc != 0)
            fail_msg("replay of the older form: %d\n%s%s", rc, out, errout);
        free(out);
        free(errout);
    }

    /* the same source: nothing to commit */
    run_pass(&res, repo, 0, &a);
    assert_int_equal(res.committed, 0);
    {
        char *now = th_git_rev(repo, "deploy");
        assert_string_equal(now, head);
        free(now);
    }

    /* one workload changes: one unit rendered (the record's source was read), and the
     * commit writes the new form */
    write_job(repo, 3, "busybox:2");
    free(th_git_ok(repo, "commit", "-q", "-a", "-m", "job-3 image", NULL));
    free(main_id);
    main_id = th_git_rev(repo, "main");
    run_pass(&res, repo, 0, &a);
    assert_int_equal(res.committed, 1);
    assert_int_equal(res.nrendered, 1);
    file = th_git_show(repo, "deploy", RD_SOURCE_FILE);
    assert_non_null(file);
    assert_memory_equal(file, main_id, 40);
    free(file);
    {
        char *now = th_git_rev(repo, "deploy:placements.yaml");
        assert_string_equal(now, blob); /* the decisions did not change: the first bytes */
        free(now);
    }

    /* a .rightplace/source that is not a commit id: everything rendered, the file repaired */
    free(th_git_ok(wt, "checkout", "-q", "--detach", NULL));
    free(th_git_ok(wt, "reset", "-q", "--hard", "deploy", NULL));
    th_write_file(wt, RD_SOURCE_FILE, "not a commit\n", (size_t)-1);
    snprintf(trailer, sizeof(trailer), "Rightplace-Source: %s", main_id);
    commit_as_rightplace(wt, "garbage", trailer);
    free(th_git_ok(wt, "push", "-q", "-f", ".", "HEAD:refs/heads/deploy", NULL));
    write_job(repo, 4, "busybox:3");
    free(th_git_ok(repo, "commit", "-q", "-a", "-m", "job-4 image", NULL));
    free(main_id);
    main_id = th_git_rev(repo, "main");
    run_pass(&res, repo, 0, &a);
    assert_int_equal(res.committed, 1);
    assert_int_equal(res.nrendered, NJOBS);
    file = th_git_show(repo, "deploy", RD_SOURCE_FILE);
    assert_non_null(file);
    assert_memory_equal(file, main_id, 40);
    free(file);

    free(th_git_ok(repo, "worktree", "remove", "--force", wt, NULL));
    free(wt);
    free(record);
    free(legacy);
    free(head);
    free(blob);
    free(main_id);
    rc_git_global_shutdown();
    rc_arena_release(&a);
    th_rm_rf(repo);
    free(repo);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rc_render_reuse__one_change_renders_one_unit),
        cmocka_unit_test(test_rc_render_reuse__kustomization_follows_its_files),
        cmocka_unit_test(test_rc_render_reuse__one_file_of_a_unit_renders_its_objects),
        cmocka_unit_test(test_rc_render_reuse__overrides_render_the_objects_they_name),
        cmocka_unit_test(test_rc_render_reuse__divided_units_keep_their_shares),
        cmocka_unit_test(test_rc_render_reuse__missing_file_is_rendered),
        cmocka_unit_test(test_rc_render_reuse__broken_files_render_nothing),
        cmocka_unit_test(test_rc_render_reuse__record_naming_its_source_is_read),
        cmocka_unit_test(test_rc_render_reuse__odd_entries_of_the_head_put_right),
    };
    int rc;

    home = th_git_env_setup();
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    th_rm_rf(home);
    free(home);
    return rc;
}
