/*
 * test_rc_pull.c - pull mode (docs/pull-mode.md): the deploy branch as Flux or Argo CD read
 * it. `rightplace reconcile --mode pull` on the example repository and on a generated fleet
 * of 20 clusters and 2,000 workloads; every clusters/<name> directory of the deploy branch is
 * built with the real `kubectl kustomize`, and the objects it prints must be exactly the
 * files of the directory (count and identity), without rightplace's managed-by label, with
 * Namespaces protected from pruning, and with the records outside the applied paths.
 */
#include "th.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rd_output.h"
#include "rd_yaml.h"
#include "th_git.h"
#include "th_rp.h"

#include "rc_banned.h"

static char *home;

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Split s (modified) into lines; *n lines, array malloc'd (pointers into s). */
static char **lines(char *s, size_t *n)
{
    size_t cap = 16;
    char **v = malloc(cap * sizeof(*v));

    *n = 0;
    for (char *p = s; p && *p;) {
        char *nl = strchr(p, '\n');
        if (nl)
            *nl = '\0';
        if (*p) {
            if (*n == cap)
                v = realloc(v, (cap *= 2) * sizeof(*v));
            v[(*n)++] = p;
        }
        p = nl ? nl + 1 : NULL;
    }
    return v;
}

static const char *str_at(const cJSON *o, const char *a, const char *b)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, a);

    if (b)
        v = cJSON_GetObjectItemCaseSensitive(v, b);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

struct built {
    size_t nobjects;
    size_t nkind; /* objects of the kind asked for */
};

/*
 * Build clusters/<cluster> of the checked-out deploy tree `wt` with kubectl kustomize and
 * check that the objects printed are exactly the directory's files (from `git ls-tree` of
 * rev in repo): one object per file, at the path rightplace names it by. Count objects of
 * `kind`. In pull mode no object carries app.kubernetes.io/managed-by and every Namespace
 * carries the prune-disabled annotations.
 */
static struct built build_cluster(const char *repo, const char *wt, const char *cluster,
                                  const char *kind, int pull)
{
    char dir[8192], prefix[1024];
    char *out = NULL, *errout = NULL, *ls;
    const char *argv[] = {"kubectl", "kustomize", dir, NULL};
    struct rd_docs *docs = NULL;
    struct rc_err err = RC_ERR_INIT;
    struct rd_yaml_limits lim = RD_YAML_LIMITS_INIT;
    struct built b = {0, 0};
    char **files, **objs;
    size_t nfiles, nobjs = 0;

    snprintf(dir, sizeof(dir), "%s/clusters/%s", wt, cluster);
    snprintf(prefix, sizeof(prefix), "clusters/%s/", cluster);
    if (th_run(NULL, &out, &errout, argv) != 0)
        fail_msg("kubectl kustomize %s: %s", dir, errout);
    lim.max_bytes = 256u << 20;
    lim.max_nodes = 50u * 1000 * 1000;
    if (rd_yaml_load(&docs, dir, out, strlen(out), &lim, NULL, &err) < 0)
        fail_msg("kustomize output of %s does not load: %s", cluster, err.msg);

    /* the directory's files, less its kustomization.yaml */
    ls = th_git_ok(repo, "ls-tree", "-r", "--name-only", "deploy", prefix, NULL);
    files = lines(ls, &nfiles);
    for (size_t i = 0; i < nfiles; i++) {
        if (!strcmp(files[i] + strlen(prefix), "kustomization.yaml")) {
            files[i] = files[--nfiles];
            break;
        }
    }
    objs = calloc(rd_docs_count(docs) + 1, sizeof(*objs));
    for (size_t i = 0; i < rd_docs_count(docs); i++) {
        const cJSON *o = rd_docs_get(docs, i);
        const char *k = str_at(o, "kind", NULL), *name = str_at(o, "metadata", "name");
        const char *ns = str_at(o, "metadata", "namespace");
        const cJSON *labels = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(o, "metadata"), "labels");
        char path[2048], lower[256];
        size_t j;

        assert_non_null(k);
        assert_non_null(name);
        for (j = 0; k[j] && j < sizeof(lower) - 1; j++)
            lower[j] = (char)(k[j] >= 'A' && k[j] <= 'Z' ? k[j] - 'A' + 'a' : k[j]);
        lower[j] = '\0';
        snprintf(path, sizeof(path), "%s%s/%s.%s.yaml", prefix, ns ? ns : "_cluster", lower, name);
        objs[nobjs++] = strdup(path);
        if (!strcmp(k, kind))
            b.nkind++;
        if (pull && cJSON_GetObjectItemCaseSensitive(labels, "app.kubernetes.io/managed-by"))
            fail_msg("%s carries app.kubernetes.io/managed-by in pull mode", path);
        if (!pull && !cJSON_GetObjectItemCaseSensitive(labels, "app.kubernetes.io/managed-by"))
            fail_msg("%s lacks app.kubernetes.io/managed-by in push mode", path);
        if (pull && !strcmp(k, "Namespace")) {
            const char *flux = str_at(cJSON_GetObjectItemCaseSensitive(o, "metadata"),
                                      "annotations", "kustomize.toolkit.fluxcd.io/prune");
            const char *argo = str_at(cJSON_GetObjectItemCaseSensitive(o, "metadata"),
                                      "annotations", "argocd.argoproj.io/sync-options");
            if (!flux || strcmp(flux, "disabled") || !argo || !strstr(argo, "Prune=false"))
                fail_msg("Namespace %s on %s may be pruned", name, cluster);
        }
    }
    if (pull && strstr(out, "managed-by: rightplace"))
        fail_msg("kustomize output of %s names managed-by: rightplace", cluster);
    b.nobjects = nobjs;
    if (nobjs != nfiles)
        fail_msg("%s: kustomize printed %zu objects for %zu files", cluster, nobjs, nfiles);
    if (nfiles) {
        qsort(files, nfiles, sizeof(*files), cmp_str);
        qsort(objs, nobjs, sizeof(*objs), cmp_str);
    }
    for (size_t i = 0; i < nfiles; i++)
        if (strcmp(files[i], objs[i]))
            fail_msg("%s: kustomize printed %s where the directory has %s", cluster, objs[i],
                     files[i]);
    for (size_t i = 0; i < nobjs; i++)
        free(objs[i]);
    free(objs);
    free(files);
    free(ls);
    rd_docs_free(docs);
    free(out);
    free(errout);
    return b;
}

/* Build every clusters/<name> of the deploy branch; returns the number of directories, and
 * the totals of objects and of objects of `kind` in *total / *nkind. per_cluster_kind (may be
 * NULL) gets each directory's count of `kind`, in name order. */
static size_t build_all(const char *repo, const char *kind, int pull, size_t *total, size_t *nkind,
                        size_t *per_cluster_kind)
{
    char *tmp = th_tmpdir("pull-wt");
    char wt[4096];
    char *ls, **names;
    size_t n;

    snprintf(wt, sizeof(wt), "%s/tree", tmp);
    free(th_git_ok(repo, "worktree", "add", "--detach", wt, "deploy", NULL));
    ls = th_git_ok(repo, "ls-tree", "--name-only", "deploy", "clusters/", NULL);
    names = lines(ls, &n);
    *total = *nkind = 0;
    for (size_t i = 0; i < n; i++) {
        struct built b = build_cluster(repo, wt, names[i] + strlen("clusters/"), kind, pull);
        *total += b.nobjects;
        *nkind += b.nkind;
        if (per_cluster_kind)
            per_cluster_kind[i] = b.nkind;
    }
    free(th_git_ok(repo, "worktree", "remove", "--force", wt, NULL));
    free(names);
    free(ls);
    th_rm_rf(tmp);
    free(tmp);
    return n;
}

/* Nothing but clusters/ holds objects: the records are outside every applied path. */
static void assert_records_outside(const char *repo)
{
    char *ls = th_git_ok(repo, "ls-tree", "-r", "--name-only", "deploy", NULL);
    size_t n;
    char **v = lines(ls, &n);

    for (size_t i = 0; i < n; i++) {
        if (!strncmp(v[i], "clusters/", 9)) {
            const char *rest = strchr(v[i] + 9, '/');
            assert_non_null(rest);
            if (strstr(rest, "placements") || strstr(rest, ".rightplace"))
                fail_msg("record inside an applied path: %s", v[i]);
            continue;
        }
        if (strcmp(v[i], "placements.yaml") && strncmp(v[i], ".rightplace/", 12) &&
            strncmp(v[i], RD_RECORD_SHARD_DIR, strlen(RD_RECORD_SHARD_DIR)))
            fail_msg("unexpected file on the deploy branch: %s", v[i]);
    }
    free(v);
    free(ls);
}

static void reconcile(const char *repo, const char *mode, int want)
{
    char *out = NULL, *errout = NULL;
    int st = th_rp(&out, &errout, "reconcile", "--repo", repo, "--once", "--mode", mode, NULL);

    if (st != want)
        fail_msg("reconcile --mode %s exited %d, want %d: %s", mode, st, want, errout);
    free(out);
    free(errout);
}

static void test_rc_pull__example_every_cluster_builds(void **state)
{
    char *repo = th_example_repo();
    size_t total, nrayjobs, nclusters;
    (void)state;

    reconcile(repo, "pull", 0);
    assert_records_outside(repo);
    nclusters = build_all(repo, "RayJob", 1, &total, &nrayjobs, NULL);
    assert_int_equal(nclusters, 2);
    assert_int_equal(nrayjobs, 3); /* rayjob1, rayjob2 and the experiments job */
    assert_true(total >= 15);

    /* the same source in push mode: the label is back (rightplace deletes only what has it) */
    {
        char *p = th_git_ok(repo, "rev-parse", "deploy", NULL);
        size_t total2, n2;
        free(th_git_ok(repo, "branch", "-D", "deploy", NULL));
        reconcile(repo, "push", 0);
        assert_int_equal(build_all(repo, "RayJob", 0, &total2, &n2, NULL), 2);
        assert_int_equal(total2, total);
        assert_int_equal(n2, nrayjobs);
        free(p);
    }
    th_rm_rf(repo);
    free(repo);
}

/* replay recomputes a pull-mode commit in the mode it was made in, read from the record's
 * render digest, whatever --mode says (the mode changes the rendered bytes) */
static void test_rc_pull__replay_reads_the_mode(void **state)
{
    char *repo = th_example_repo();
    char *out = NULL, *errout = NULL;
    (void)state;

    reconcile(repo, "pull", 0);
    assert_int_equal(
        th_rp(&out, &errout, "replay", "--repo", repo, "--mode", "pull", "deploy", NULL), 0);
    assert_non_null(strstr(out, "match"));
    free(out);
    free(errout);
    assert_int_equal(th_rp(&out, &errout, "replay", "--repo", repo, "deploy", NULL), 0);
    assert_non_null(strstr(out, "match"));
    assert_null(strstr(out, "mismatch"));
    free(out);
    free(errout);
    th_rm_rf(repo);
    free(repo);
}

/* A Namespace of the repository keeps its own Argo CD sync options; Prune=false is added. */
static void test_rc_pull__namespace_sync_options_kept(void **state)
{
    char *repo = th_git_init("pull-ns", 0);
    char *ns;
    (void)state;

    free(th_git_commit_files(
        repo, "one namespace with sync options", "fleet.yaml",
        "apiVersion: rightplace.dev/v1alpha1\nkind: Cluster\nmetadata: {name: a}\nspec:\n"
        "  nodes: [{name: pool, count: 1, allocatable: {cpu: \"4\", memory: 8Gi, pods: \"10\"}}]\n",
        "ns.yaml",
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team\n  annotations:\n"
        "    argocd.argoproj.io/sync-options: ServerSideApply=true\n",
        "policy.yaml",
        "apiVersion: policy.elotl.co/v1alpha1\nkind: SchedulePolicy\nmetadata: {name: p}\n"
        "spec:\n  clusterSelector: {}\n  namespaceSelector: {}\n  resourceSelectors:\n"
        "    labelSelectors: [{matchLabels: {app: web}}]\n",
        "web.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web, namespace: team, labels: {app: "
        "web}}\ndata: {a: b}\n",
        NULL));
    reconcile(repo, "pull", 0);
    ns = th_git_show(repo, "deploy", "clusters/a/_cluster/namespace.team.yaml");
    assert_non_null(ns);
    if (!strstr(ns, "argocd.argoproj.io/sync-options: ServerSideApply=true,Prune=false"))
        fail_msg("sync options not kept: %s", ns);
    assert_non_null(strstr(ns, "kustomize.toolkit.fluxcd.io/prune: disabled"));
    assert_null(strstr(ns, "managed-by"));
    free(ns);
    th_rm_rf(repo);
    free(repo);
}

#define FLEET_CLUSTERS 20
#define FLEET_NAMESPACES 50
#define FLEET_WORKLOADS 2000

/* 20 simulated clusters with room for exactly 100 workloads each (2 nodes x 5 cpu, 100m per
 * pod), 50 namespaces and 2,000 one-pod Deployments under one policy: every cluster fills. */
static void test_rc_pull__generated_fleet_every_cluster_builds(void **state)
{
    char *repo = th_git_init("pull-fleet", 0);
    size_t per[FLEET_CLUSTERS + 1], total, ndeploy, n;
    char path[256], *rec;
    (void)state;

    for (int c = 0; c < FLEET_CLUSTERS; c++) {
        char text[1024];
        snprintf(path, sizeof(path), "fleet/cluster-%02d.yaml", c);
        snprintf(text, sizeof(text),
                 "apiVersion: rightplace.dev/v1alpha1\nkind: Cluster\nmetadata:\n"
                 "  name: cluster-%02d\n  labels: {pool: gen}\nspec:\n  autoscaler: {type: none}\n"
                 "  nodes:\n  - {name: pool, count: 2, allocatable: {cpu: \"5\", memory: 64Gi, "
                 "pods: \"110\"}}\n",
                 c);
        th_write_file(repo, path, text, (size_t)-1);
    }
    for (int i = 0; i < FLEET_NAMESPACES; i++) {
        char text[256];
        snprintf(path, sizeof(path), "namespaces/ns-%02d.yaml", i);
        snprintf(text, sizeof(text),
                 "apiVersion: v1\nkind: Namespace\nmetadata: {name: ns-%02d, labels: {team: "
                 "t%02d}}\n",
                 i, i);
        th_write_file(repo, path, text, (size_t)-1);
    }
    th_write_file(repo, "policy.yaml",
                  "apiVersion: policy.elotl.co/v1alpha1\nkind: SchedulePolicy\nmetadata: {name: "
                  "gen}\nspec:\n  clusterSelector: {matchLabels: {pool: gen}}\n"
                  "  namespaceSelector: {}\n  resourceSelectors:\n"
                  "    labelSelectors: [{matchLabels: {app: gen}}]\n",
                  (size_t)-1);
    for (int w = 0; w < FLEET_WORKLOADS; w++) {
        char text[1024];
        int ns = w % FLEET_NAMESPACES;
        snprintf(path, sizeof(path), "workloads/ns-%02d/w-%04d.yaml", ns, w);
        snprintf(text, sizeof(text),
                 "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: w-%04d\n"
                 "  namespace: ns-%02d\n  labels: {app: gen}\nspec:\n  replicas: 1\n"
                 "  selector: {matchLabels: {w: w-%04d}}\n  template:\n"
                 "    metadata: {labels: {w: w-%04d}}\n    spec:\n      containers:\n"
                 "      - name: c\n        image: registry.example/app:1\n"
                 "        resources: {requests: {cpu: 100m, memory: 64Mi}}\n",
                 w, ns, w, w);
        th_write_file(repo, path, text, (size_t)-1);
    }
    free(th_git_ok(repo, "add", "-A", NULL));
    free(th_git_ok(repo, "commit", "-q", "-m", "generated fleet", NULL));

    reconcile(repo, "pull", 0);
    assert_records_outside(repo);
    n = build_all(repo, "Deployment", 1, &total, &ndeploy, per);
    assert_int_equal(n, FLEET_CLUSTERS);
    assert_int_equal(ndeploy, FLEET_WORKLOADS);
    for (size_t i = 0; i < n; i++) {
        if (per[i] != FLEET_WORKLOADS / FLEET_CLUSTERS)
            fail_msg("cluster %zu holds %zu Deployments, want %d", i, per[i],
                     FLEET_WORKLOADS / FLEET_CLUSTERS);
    }
    /* each Deployment once, plus one Namespace per namespace a cluster received */
    assert_true(total > ndeploy);
    assert_true(total <= ndeploy + (size_t)FLEET_CLUSTERS * FLEET_NAMESPACES);
    rec = th_git_record(repo, "deploy"); /* in shards: more units than one file holds */
    assert_non_null(strstr(rec, "shards: "));
    assert_int_equal(th_count(rec, "state: placed"), FLEET_WORKLOADS);
    free(rec);
    th_rm_rf(repo);
    free(repo);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rc_pull__example_every_cluster_builds),
        cmocka_unit_test(test_rc_pull__replay_reads_the_mode),
        cmocka_unit_test(test_rc_pull__namespace_sync_options_kept),
        cmocka_unit_test(test_rc_pull__generated_fleet_every_cluster_builds),
    };
    int rc;

    home = th_git_env_setup();
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    th_rm_rf(home);
    free(home);
    return rc;
}
