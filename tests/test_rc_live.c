/*
 * test_rc_live.c - rightplace end to end against live clusters: two fake API servers
 * (tests/fakekube) stand in for static-cluster and dynamic-cluster. The binary observes their
 * nodes, places the example workloads, commits, applies with server-side apply, records the
 * results as a git note, prunes a removed workload, applies only what changed, survives a
 * faulty cluster, and never prints a token.
 *
 * With RIGHTPLACE_ONLINE_KUBECONFIG set (and RIGHTPLACE_ONLINE_CONTEXT, default: the current
 * context), the program instead runs the online case against that real cluster: a small
 * Deployment is placed, applied, checked with GET, removed from the source and checked gone.
 * ctest registers it as rc_live_online (label "online") when configured with
 * -DRC_ONLINE_TESTS=ON; README.md has the steps.
 */
#include "th.h"

#include <stdio.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "th_git.h"
#include "th_kube.h"
#include "th_rp.h"

#include "rc_kube.h"

#include "rc_banned.h"

#define TOKEN "s3cr3t-token-do-not-print"

static struct th_certs certs;
static char *home;

struct fleet {
    struct th_kube stat, dyn;
    char dir[TH_DIR];
    char kc_static[TH_PATH], kc_dynamic[TH_PATH];
};

#define STATIC_NODES                                                                               \
    "{\"objects\": ["                                                                              \
    "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"cpu-1\",\"labels\":"        \
    "{\"kubernetes.io/hostname\":\"cpu-1\"}},\"status\":{\"allocatable\":{\"cpu\":\"8\","          \
    "\"memory\":\"32Gi\",\"pods\":\"110\"},\"conditions\":[{\"type\":\"Ready\",\"status\":"        \
    "\"True\"}]}},"                                                                                \
    "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"cpu-2\",\"labels\":"        \
    "{\"kubernetes.io/hostname\":\"cpu-2\"}},\"status\":{\"allocatable\":{\"cpu\":\"8\","          \
    "\"memory\":\"32Gi\",\"pods\":\"110\"},\"conditions\":[{\"type\":\"Ready\",\"status\":"        \
    "\"True\"}]}},"                                                                                \
    "%s"                                                                                           \
    "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"default\"}}"           \
    "]}"

#define GPU_NODE                                                                                   \
    "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"gpu-%d\",\"labels\":"       \
    "{\"kubernetes.io/hostname\":\"gpu-%d\"}},\"spec\":{\"taints\":[{\"key\":\"nvidia.com/gpu\","  \
    "\"value\":\"true\",\"effect\":\"NoSchedule\"}]},\"status\":{\"allocatable\":{\"cpu\":\"8\","  \
    "\"memory\":\"32Gi\",\"nvidia.com/gpu\":\"1\",\"pods\":\"110\"},\"conditions\":[{\"type\":"    \
    "\"Ready\",\"status\":\"True\"}]}},"

static const char *dynamic_nodes =
    "{\"objects\": ["
    "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"system-1\",\"labels\":"
    "{\"kubernetes.io/hostname\":\"system-1\"}},\"status\":{\"allocatable\":{\"cpu\":\"2\","
    "\"memory\":\"8Gi\",\"pods\":\"110\"},\"conditions\":[{\"type\":\"Ready\",\"status\":"
    "\"True\"}]}},"
    "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"elotl\"}},"
    "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"elotl-luna-"
    "manager\",\"namespace\":\"elotl\",\"labels\":{\"app.kubernetes.io/name\":\"elotl-luna\"}},"
    "\"spec\":{\"replicas\":1}}"
    "]}";

static void fleet_start(struct fleet *f)
{
    char state[8192], gpus[4096];
    size_t n = 0;
    struct th_kube_opts o = {NULL, TOKEN "\n", 0, 0, 0};
    char ca[TH_PATH];
    char extra[TH_PATH + 64];

    for (int i = 1; i <= 5; i++)
        n += (size_t)snprintf(gpus + n, sizeof(gpus) - n, GPU_NODE, i, i);
    snprintf(state, sizeof(state), STATIC_NODES, gpus);
    o.state_json = state;
    assert_int_equal(th_kube_start(&f->stat, &certs, &o), 0);
    o.state_json = dynamic_nodes;
    assert_int_equal(th_kube_start(&f->dyn, &certs, &o), 0);
    assert_int_equal(th_kube_mkdtemp(f->dir), 0);
    snprintf(f->kc_static, sizeof(f->kc_static), "%s/static.kubeconfig", f->dir);
    snprintf(f->kc_dynamic, sizeof(f->kc_dynamic), "%s/dynamic.kubeconfig", f->dir);
    snprintf(extra, sizeof(extra), "    certificate-authority: %s\n",
             th_certs_path(ca, &certs, "ca.crt"));
    th_kube_kubeconfig(f->kc_static, &f->stat, extra, "    token: " TOKEN "\n");
    th_kube_kubeconfig(f->kc_dynamic, &f->dyn, extra, "    token: " TOKEN "\n");
    /* the operator's kubeconfig directory, which the Cluster objects select from by name;
     * the binary inherits it */
    setenv("RIGHTPLACE_KUBECONFIG_DIR", f->dir, 1);
}

static void fleet_stop(struct fleet *f)
{
    th_kube_stop(&f->stat);
    th_kube_stop(&f->dyn);
    th_kube_rmtree(f->dir);
    unsetenv("RIGHTPLACE_KUBECONFIG_DIR");
}

/* The example repository with its two clusters made live (kubeconfig, no declared nodes): each
 * selects its file of the operator's kubeconfig directory by name. */
static char *live_repo(const struct fleet *f)
{
    char *repo = th_example_repo();
    char st[2048], dy[2048];

    (void)f;
    snprintf(st, sizeof(st),
             "apiVersion: rightplace.dev/v1alpha1\nkind: Cluster\nmetadata:\n"
             "  name: static-cluster\n  labels: {cluster.class: development}\nspec:\n"
             "  kubeconfig: {name: static.kubeconfig, context: test}\n"
             "  autoscaler: {type: none}\n");
    snprintf(dy, sizeof(dy),
             "apiVersion: rightplace.dev/v1alpha1\nkind: Cluster\nmetadata:\n"
             "  name: dynamic-cluster\n  labels: {cluster.class: production}\nspec:\n"
             "  kubeconfig: {name: dynamic.kubeconfig, context: test}\n"
             "  autoscaler:\n    type: auto\n"
             "    nodeShapes:\n    - {name: m5.2xlarge, max: 10, allocatable: {cpu: \"8\", "
             "memory: 32Gi, pods: \"110\"}}\n"
             "    - name: g4dn.xlarge\n      max: 8\n      allocatable: {cpu: \"4\", memory: "
             "16Gi, nvidia.com/gpu: \"1\", pods: \"29\"}\n      taints: [{key: nvidia.com/gpu, "
             "value: \"true\", effect: NoSchedule}]\n");
    free(th_git_commit_files(repo, "make the fleet live", "fleet/static-cluster.yaml", st,
                             "fleet/dynamic-cluster.yaml", dy, NULL));
    return repo;
}

static int reconcile(const char *repo, char **out, char **err)
{
    return th_rp(out, err, "reconcile", "--repo", repo, "--once", NULL);
}

static int count_where(const cJSON *reqs, const char *method, const char *path_part)
{
    return (int)th_kube_count(reqs, method, path_part);
}

static void test_rc_live__scenarios_applied_then_pruned(void **state)
{
    struct fleet f;
    char *repo, *out = NULL, *err = NULL, *note, *applied;
    cJSON *reqs;
    const cJSON *patch, *q;
    (void)state;

    fleet_start(&f);
    repo = live_repo(&f);
    if (reconcile(repo, &out, &err) != 0)
        fail_msg("reconcile: %s\n%s", out, err);
    assert_null(strstr(err, TOKEN));

    /* static-cluster got rayjob1 and rayjob2 by server-side apply, namespaces first */
    reqs = th_kube_requests(&f.stat);
    patch = th_kube_find(reqs, "PATCH", "/apis/ray.io/v1/namespaces/rayjob1/rayjobs/rayjob-train");
    assert_non_null(patch);
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(patch, "content_type")),
                        "application/apply-patch+yaml");
    q = cJSON_GetObjectItem(patch, "query");
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(q, "fieldManager")), "rightplace");
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(q, "force")), "true");
    assert_non_null(th_kube_find(reqs, "PATCH", "/apis/ray.io/v1/namespaces/rayjob2/rayjobs/"));
    assert_non_null(th_kube_find(reqs, "PATCH", "/api/v1/namespaces/rayjob1"));
    /* the production RayService is not on the development cluster */
    assert_null(th_kube_find(reqs, "PATCH", "/namespaces/production/rayservices/"));
    cJSON_Delete(reqs);
    reqs = th_kube_requests(&f.dyn);
    assert_non_null(th_kube_find(reqs, "PATCH", "/namespaces/production/rayservices/"));
    cJSON_Delete(reqs);

    /* applied refs and the note */
    applied = th_git_ok(repo, "rev-parse", "refs/rightplace/applied/static-cluster", NULL);
    out = (free(out), th_git_ok(repo, "rev-parse", "deploy", NULL));
    assert_string_equal(applied, out);
    free(applied);
    note = th_git_ok(repo, "notes", "--ref=rightplace", "show", "deploy", NULL);
    assert_non_null(strstr(note, "static-cluster"));
    assert_null(strstr(note, TOKEN));
    free(note);
    free(out);
    free(err);

    /* nothing changed: nothing applied again */
    th_kube_clear_requests(&f.stat);
    assert_int_equal(reconcile(repo, NULL, NULL), 0);
    reqs = th_kube_requests(&f.stat);
    assert_int_equal(count_where(reqs, "PATCH", "/"), 0);
    cJSON_Delete(reqs);

    /* remove rayjob2: pruned from static-cluster with a uid precondition */
    free(th_git_ok(repo, "rm", "-q", "fill-and-spill/rayjob-rayjob2.yaml", NULL));
    free(th_git_ok(repo, "commit", "-q", "-m", "rayjob2 is done", NULL));
    th_kube_clear_requests(&f.stat);
    err = NULL;
    if (reconcile(repo, &out, &err) != 0)
        fail_msg("reconcile after removal: %s", err);
    free(out);
    free(err);
    reqs = th_kube_requests(&f.stat);
    {
        const cJSON *del =
            th_kube_find(reqs, "DELETE", "/apis/ray.io/v1/namespaces/rayjob2/rayjobs/rayjob-train");
        const char *body;
        assert_non_null(del);
        body = cJSON_GetStringValue(cJSON_GetObjectItem(del, "body"));
        assert_non_null(body);
        assert_non_null(strstr(body, "\"uid\""));
    }
    /* and nothing else was touched */
    assert_int_equal(count_where(reqs, "PATCH", "/"), 0);
    assert_null(th_kube_find(reqs, "DELETE", "/namespaces/rayjob1/"));
    cJSON_Delete(reqs);

    th_rm_rf(repo);
    free(repo);
    fleet_stop(&f);
}

static void test_rc_live__one_change_applies_one_object(void **state)
{
    struct fleet f;
    char *repo, *text, *changed;
    cJSON *reqs;
    (void)state;

    fleet_start(&f);
    repo = live_repo(&f);
    assert_int_equal(reconcile(repo, NULL, NULL), 0);
    /* a new driver script for rayjob1's ConfigMap */
    text = th_git_show(repo, "HEAD", "fill-and-spill/rayjob-rayjob1.yaml");
    assert_non_null(text);
    changed = strstr(text, "import time");
    assert_non_null(changed);
    memcpy(changed, "import math", 11);
    free(th_git_commit_files(repo, "tweak the driver", "fill-and-spill/rayjob-rayjob1.yaml", text,
                             NULL));
    free(text);
    th_kube_clear_requests(&f.stat);
    th_kube_clear_requests(&f.dyn);
    assert_int_equal(reconcile(repo, NULL, NULL), 0);
    reqs = th_kube_requests(&f.stat);
    assert_int_equal(count_where(reqs, "PATCH", "/"), 1);
    assert_non_null(
        th_kube_find(reqs, "PATCH", "/api/v1/namespaces/rayjob1/configmaps/ray-job-code-train"));
    cJSON_Delete(reqs);
    reqs = th_kube_requests(&f.dyn);
    assert_int_equal(count_where(reqs, "PATCH", "/"), 0);
    cJSON_Delete(reqs);
    th_rm_rf(repo);
    free(repo);
    fleet_stop(&f);
}

/* A cluster whose kubeconfig runs a credential plugin: one pass reads it (observe) and
 * applies to it, and the plugin runs once for both: the process keeps the credential
 * (rc_kubeconfig.h). Each opened connection ran it again before, so a fleet of `aws eks
 * get-token` clusters ran it twice a cluster a pass. */
static void test_rc_live__exec_plugin_once_a_pass(void **state)
{
    struct fleet f;
    char *repo, *runs, script[TH_PATH], count[TH_PATH], extra[TH_PATH + 64], ca[TH_PATH];
    char user[TH_PATH * 2 + 256];
    cJSON *reqs;
    (void)state;

    fleet_start(&f);
    snprintf(script, sizeof(script), "%s/plugin.sh", f.dir);
    snprintf(count, sizeof(count), "%s/runs", f.dir);
    snprintf(user, sizeof(user),
             "#!/bin/sh\necho run >> '%s'\n"
             "printf '{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":"
             "\"ExecCredential\",\"status\":{\"token\":\"%s\",\"expirationTimestamp\":"
             "\"2999-01-01T00:00:00Z\"}}'\n",
             count, TOKEN);
    th_kube_write(script, user);
    assert_int_equal(chmod(script, 0755), 0);
    snprintf(extra, sizeof(extra), "    certificate-authority: %s\n",
             th_certs_path(ca, &certs, "ca.crt"));
    snprintf(user, sizeof(user),
             "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n"
             "      command: %s\n      interactiveMode: Never\n",
             script);
    th_kube_kubeconfig(f.kc_static, &f.stat, extra, user);
    repo = live_repo(&f);
    assert_int_equal(reconcile(repo, NULL, NULL), 0);
    reqs = th_kube_requests(&f.stat);
    assert_true(count_where(reqs, "GET", "/api/v1/nodes") >= 1); /* observed */
    assert_true(count_where(reqs, "PATCH", "/") >= 1);           /* applied */
    cJSON_Delete(reqs);
    runs = th_kube_read(count);
    assert_non_null(runs);
    assert_string_equal(runs, "run\n");
    free(runs);
    th_rm_rf(repo);
    free(repo);
    fleet_stop(&f);
}

static void test_rc_live__finished_rayjob_is_not_recreated(void **state)
{
    struct fleet f;
    char *repo;
    cJSON *reqs;
    (void)state;

    fleet_start(&f);
    repo = live_repo(&f);
    assert_int_equal(reconcile(repo, NULL, NULL), 0);
    /* KubeRay deletes a finished RayJob (shutdownAfterJobFinishes + TTL); here by hand */
    {
        struct rc_kube *k = NULL;
        struct rc_err e = RC_ERR_INIT;
        assert_int_equal(rc_kube_open(&k, f.kc_static, "test", NULL, &e), RC_OK);
        assert_int_equal(
            rc_kube_delete(k, "ray.io/v1", "RayJob", "rayjob1", "rayjob-train", NULL, &e), RC_OK);
        rc_kube_free(k);
    }
    th_kube_clear_requests(&f.stat);
    assert_int_equal(th_rp(NULL, NULL, "reconcile", "--repo", repo, "--once", "--force", NULL), 0);
    reqs = th_kube_requests(&f.stat);
    assert_null(th_kube_find(reqs, "PATCH", "/rayjobs/"));
    cJSON_Delete(reqs);
    th_rm_rf(repo);
    free(repo);
    fleet_stop(&f);
}

static void test_rc_live__faulty_cluster_keeps_its_objects(void **state)
{
    struct fleet f;
    char *repo, *out = NULL, *err = NULL;
    char *applied_before, *applied_after;
    cJSON *reqs;
    (void)state;

    fleet_start(&f);
    repo = live_repo(&f);
    assert_int_equal(reconcile(repo, NULL, NULL), 0);
    applied_before = th_git_ok(repo, "rev-parse", "refs/rightplace/applied/dynamic-cluster", NULL);
    /* dynamic-cluster answers 500 to everything; rayjob2 (on static-cluster) leaves and the
     * production RayService (on dynamic-cluster) changes, in one commit */
    th_kube_faults(&f.dyn, "[{\"path\": \".*\", \"status\": 500}]");
    {
        char *svc = th_git_show(repo, "HEAD", "right-cluster/rayservice-production.yaml");
        char *p = strstr(svc, "rayVersion: '2.9.0'");
        assert_non_null(p);
        memcpy(p, "rayVersion: '2.9.1'", 19);
        free(th_git_commit_files(repo, "upgrade ray", "right-cluster/rayservice-production.yaml",
                                 svc, NULL));
        free(svc);
    }
    free(th_git_ok(repo, "rm", "-q", "fill-and-spill/rayjob-rayjob2.yaml", NULL));
    free(th_git_ok(repo, "commit", "-q", "-m", "rayjob2 is done", NULL));
    th_kube_clear_requests(&f.stat);
    assert_int_equal(reconcile(repo, &out, &err), 1);
    assert_non_null(strstr(err, "dynamic-cluster"));
    assert_null(strstr(err, TOKEN));
    /* the healthy cluster was pruned; the faulty one was not touched and keeps its ref */
    reqs = th_kube_requests(&f.stat);
    assert_non_null(th_kube_find(reqs, "DELETE", "/namespaces/rayjob2/rayjobs/rayjob-train"));
    cJSON_Delete(reqs);
    reqs = th_kube_requests(&f.dyn);
    assert_int_equal(count_where(reqs, "DELETE", "/"), 0);
    cJSON_Delete(reqs);
    applied_after = th_git_ok(repo, "rev-parse", "refs/rightplace/applied/dynamic-cluster", NULL);
    assert_string_equal(applied_before, applied_after);
    free(out);
    free(err);
    /* the fault clears: the next pass catches up */
    th_kube_faults(&f.dyn, "[]");
    assert_int_equal(th_rp(NULL, NULL, "reconcile", "--repo", repo, "--once", "--force", NULL), 0);
    free(applied_after);
    applied_after = th_git_ok(repo, "rev-parse", "refs/rightplace/applied/dynamic-cluster", NULL);
    out = th_git_ok(repo, "rev-parse", "deploy", NULL);
    assert_string_equal(applied_after, out);
    free(out);
    free(applied_before);
    free(applied_after);
    th_rm_rf(repo);
    free(repo);
    fleet_stop(&f);
}

/* ==== Online: a real cluster through a kubeconfig ==== */

static void test_rc_live__online(void **state)
{
    const char *kc = getenv("RIGHTPLACE_ONLINE_KUBECONFIG");
    const char *ctx = getenv("RIGHTPLACE_ONLINE_CONTEXT");
    char cluster[4096];
    char *repo, *out = NULL, *err = NULL;
    struct rc_kube *k = NULL;
    struct rc_err e = RC_ERR_INIT;
    cJSON *obj = NULL;
    const char *ns = "rightplace-online-test";
    int st;
    (void)state;

    /* the operator gives the kubeconfig's folder; the Cluster selects the file by name */
    {
        char dir[4096];
        const char *slash = strrchr(kc, '/');
        const char *name = slash ? slash + 1 : kc;

        if (slash)
            snprintf(dir, sizeof(dir), "%.*s", (int)(slash - kc), kc);
        else
            snprintf(dir, sizeof(dir), ".");
        setenv("RIGHTPLACE_KUBECONFIG_DIR", dir[0] ? dir : "/", 1);
        snprintf(cluster, sizeof(cluster),
                 "apiVersion: rightplace.dev/v1alpha1\nkind: Cluster\nmetadata:\n  name: online\n"
                 "spec:\n  kubeconfig: {name: %s%s%s}\n",
                 name, ctx ? ", context: " : "", ctx ? ctx : "");
    }
    repo = th_git_init("online", 0);
    free(th_git_commit_files(
        repo, "online test", "cluster.yaml", cluster, "policy.yaml",
        "apiVersion: policy.elotl.co/v1alpha1\nkind: SchedulePolicy\nmetadata:\n  name: online\n"
        "spec:\n  clusterSelector:\n    matchLabels: {kubernetes.io/metadata.name: online}\n"
        "  namespaceSelector:\n    matchLabels: {kubernetes.io/metadata.name: "
        "rightplace-online-test}\n  resourceSelectors:\n    labelSelectors:\n"
        "    - matchLabels: {app: rightplace-online-test}\n",
        "web.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n"
        "  namespace: rightplace-online-test\n  labels: {app: rightplace-online-test}\nspec:\n"
        "  replicas: 1\n  selector:\n    matchLabels: {app: rightplace-online-test}\n"
        "  template:\n    metadata:\n      labels: {app: rightplace-online-test}\n    spec:\n"
        "      containers:\n      - name: pause\n        image: registry.k8s.io/pause:3.9\n"
        "        resources:\n          requests: {cpu: 10m, memory: 16Mi}\n",
        NULL));
    st = th_rp(&out, &err, "reconcile", "--repo", repo, "--once", "--no-luna-label", NULL);
    if (st != 0)
        fail_msg("reconcile against the real cluster exited %d\n%s\n%s", st, out, err);
    free(out);
    free(err);
    assert_int_equal(rc_kube_open(&k, kc, ctx, NULL, &e), RC_OK);
    assert_int_equal(rc_kube_get(k, "apps/v1", "Deployment", ns, "web", &obj, &e), RC_OK);
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(
                            cJSON_GetObjectItem(cJSON_GetObjectItem(obj, "metadata"), "labels"),
                            "app.kubernetes.io/managed-by")),
                        "rightplace");
    cJSON_Delete(obj);
    /* remove it from the source: pruned */
    free(th_git_ok(repo, "rm", "-q", "web.yaml", NULL));
    free(th_git_ok(repo, "commit", "-q", "-m", "done", NULL));
    assert_int_equal(th_rp(NULL, NULL, "reconcile", "--repo", repo, "--once", NULL), 0);
    obj = NULL;
    assert_int_equal(rc_kube_get(k, "apps/v1", "Deployment", ns, "web", &obj, &e), RC_ENOTFOUND);
    cJSON_Delete(obj);
    rc_kube_free(k);
    th_rm_rf(repo);
    free(repo);
}

/* `rightplace diff` from the command line: after an apply, nothing (exit 0, no output); after a
 * person changes a ConfigMap on its cluster (kubectl, another field manager), exactly that
 * object's unified diff, live against what an apply would make of it (exit 1). */
static void test_rc_live__diff_shows_what_a_person_changed(void **state)
{
    struct fleet f;
    char *repo, *out = NULL, *err = NULL;
    char edit[TH_PATH + 16];
    (void)state;

    fleet_start(&f);
    repo = live_repo(&f);
    assert_int_equal(reconcile(repo, NULL, NULL), 0);
    if (th_rp(&out, &err, "diff", "--repo", repo, NULL) != 0)
        fail_msg("diff after an apply: %s%s", out, err);
    assert_string_equal(out, "");
    free(out);
    free(err);

    snprintf(edit, sizeof(edit), "%s/edit.yaml", f.dir);
    th_kube_write(edit, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ray-job-code-train\n"
                        "  namespace: rayjob1\ndata:\n  train_code.py: edited by hand\n");
    {
        const char *argv[] = {"kubectl",
                              "--kubeconfig",
                              f.kc_static,
                              "--context",
                              "test",
                              "apply",
                              "--server-side",
                              "--force-conflicts",
                              "--field-manager",
                              "kubectl-edit",
                              "--validate=false",
                              "-f",
                              edit,
                              NULL};
        if (th_kube_run(argv) != 0)
            fail_msg("kubectl apply of the hand edit failed");
    }
    assert_int_equal(th_rp(&out, &err, "diff", "--repo", repo, NULL), 1);
    th_assert_contains(out, "--- live/static-cluster/v1.ConfigMap.rayjob1.ray-job-code-train\n"
                            "+++ merged/static-cluster/v1.ConfigMap.rayjob1.ray-job-code-train\n");
    th_assert_contains(out, "-  train_code.py: edited by hand\n");
    th_assert_contains(out, "+  train_code.py: |\n");
    assert_null(strstr(out, "managedFields"));
    assert_int_equal(th_count(out, "--- live/"), 1); /* nothing else drifted */
    free(out);
    free(err);
    th_rm_rf(repo);
    free(repo);
    fleet_stop(&f);
}

int main(void)
{
    const struct CMUnitTest online[] = {
        cmocka_unit_test(test_rc_live__online),
    };

    if (getenv("RIGHTPLACE_ONLINE_KUBECONFIG")) {
        int orc;
        home = th_git_env_setup();
        orc = cmocka_run_group_tests(online, NULL, NULL);
        th_rm_rf(home);
        free(home);
        return orc;
    }
    {
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_rc_live__scenarios_applied_then_pruned),
            cmocka_unit_test(test_rc_live__one_change_applies_one_object),
            cmocka_unit_test(test_rc_live__exec_plugin_once_a_pass),
            cmocka_unit_test(test_rc_live__diff_shows_what_a_person_changed),
            cmocka_unit_test(test_rc_live__finished_rayjob_is_not_recreated),
            cmocka_unit_test(test_rc_live__faulty_cluster_keeps_its_objects),
        };
        int rc;

        home = th_git_env_setup();
        if (th_certs_make(&certs) != 0) {
            fprintf(stderr, "cannot make test certificates\n");
            return 1;
        }
        rc = cmocka_run_group_tests(tests, NULL, NULL);
        th_kube_rmtree(certs.dir);
        th_rm_rf(home);
        free(home);
        return rc;
    }
}
