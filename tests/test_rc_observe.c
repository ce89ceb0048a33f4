/*
 * test_rc_observe.c - rc_observe_fleet against fake API servers: capacity from node and pod
 * lists read page by page, autoscaler detection, simulated clusters untouched, unreachable
 * clusters (stopped server, wrong CA) marked and reported without an error, no token in logs.
 */
#include "th.h"
#include "th_git.h"
#include "th_kube.h"
#include "th_rp.h"

#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/resource.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pl_basics.h"
#include "rc_buf.h"
#include "rc_http.h"
#include "rc_kube.h"
#include "rc_observe.h"
#include "rc_watch.h"

#define TOKEN "0bs3rve-t0ken-42aa"

static struct th_certs certs;

static void no_sleep(void *payload, long ms)
{
    (void)payload;
    (void)ms;
}

#define NODE(name, cpu, extra)                                                                     \
    "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"" name "\"},"               \
    "\"spec\":{" extra "},\"status\":{\"allocatable\":{\"cpu\":\"" cpu "\",\"memory\":\"8Gi\","    \
    "\"pods\":\"110\"},\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}"
#define POD(name, node, phase, unit)                                                               \
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"" name "\","                 \
    "\"namespace\":\"w\",\"labels\":{\"rightplace.dev/unit\":\"" unit "\"}},"                      \
    "\"spec\":{\"nodeName\":\"" node "\",\"containers\":[{\"name\":\"c\",\"resources\":"           \
    "{\"requests\":{\"cpu\":\"1\",\"memory\":\"1Gi\"}}}]},\"status\":{\"phase\":\"" phase "\"}}"

/* clang-format off */
static const char STATE[] = "{\"objects\":["
    "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"w\"}},"
    "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"kube-system\"}},"
    NODE("a", "4", "") ","
    NODE("b", "4", "\"unschedulable\":true") ","
    NODE("c", "8", "") ","
    POD("p1", "a", "Running", "u1") ","
    POD("p2", "a", "Running", "u2") ","
    POD("p3", "c", "Pending", "u1") ","
    POD("p4", "c", "Succeeded", "u3") ","
    POD("p5", "c", "Running", "u4") ","
    "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":"
    "\"cluster-autoscaler\",\"namespace\":\"kube-system\"},\"spec\":{\"replicas\":1}},"
    "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":"
    "\"web\",\"namespace\":\"w\"},\"spec\":{\"replicas\":3}}"
    "]}";
/* clang-format on */

struct fixture {
    struct th_kube live, wrong;
    char kc_live[TH_PATH], kc_wrong[TH_PATH], kc_down[TH_PATH];
    struct rc_kube_options ko;
    char *logbuf;
    size_t loglen;
    FILE *logf;
    struct rc_log log;
    struct rc_kubeconfig_sources sources; /* the operator's kubeconfigs */
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    struct rc_kube_options ko = RC_KUBE_OPTIONS_INIT;
    struct th_kube_opts o = {STATE, TOKEN "\n", 0, 0, 0};
    struct th_kube_opts ow = {NULL, TOKEN "\n", 1, 0, 0};
    char ca[TH_PATH], extra[TH_PATH + 64];

    if (th_kube_start(&f->live, &certs, &o) != 0 || th_kube_start(&f->wrong, &certs, &ow) != 0)
        return -1;
    th_certs_path(ca, &certs, "ca.crt");
    snprintf(extra, sizeof(extra), "    certificate-authority: %s\n", ca);
    th_kube_path(f->kc_live, &f->live, "kubeconfig");
    th_kube_kubeconfig(f->kc_live, &f->live, extra, "    token: " TOKEN "\n");
    th_kube_path(f->kc_wrong, &f->wrong, "kubeconfig");
    th_kube_kubeconfig(f->kc_wrong, &f->wrong, extra, "    token: " TOKEN "\n");
    snprintf(f->kc_down, sizeof(f->kc_down), "%s/kubeconfig-down", f->live.dir);
    {
        /* a server that is not there: a port the live server's folder reserves nothing on */
        struct th_kube gone = f->live;
        snprintf(gone.url, sizeof(gone.url), "https://127.0.0.1:1");
        th_kube_kubeconfig(f->kc_down, &gone, extra, "    token: " TOKEN "\n");
    }
    ko.http.max_attempts = 2;
    ko.http.timeout_ms = 5000;
    ko.http.connect_timeout_ms = 2000;
    ko.http.sleep_ms = no_sleep;
    ko.page_size = 2;
    f->ko = ko;
    rc_kubeconfig_sources_add_file(&f->sources, f->kc_live);
    rc_kubeconfig_sources_add_file(&f->sources, f->kc_wrong);
    rc_kubeconfig_sources_add_file(&f->sources, f->kc_down);
    /* an operator's file that has gone missing: a configuration error, not an outage */
    rc_kubeconfig_sources_add_file(&f->sources, "/nonexistent/kubeconfig");
    f->ko.sources = &f->sources;
    f->logf = open_memstream(&f->logbuf, &f->loglen);
    f->log.level = RC_LOG_DEBUG;
    f->log.out = f->logf;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;

    th_kube_stop(&f->live);
    th_kube_stop(&f->wrong);
    rc_kubeconfig_sources_release(&f->sources);
    fclose(f->logf);
    free(f->logbuf);
    free(f);
    return 0;
}

static int group_setup(void **state)
{
    (void)state;
    if (rc_http_global_init(NULL) < 0)
        return -1;
    return th_certs_make(&certs);
}

static int group_teardown(void **state)
{
    (void)state;
    th_kube_rmtree(certs.dir);
    rc_http_global_cleanup();
    return 0;
}

/* A source with a simulated cluster "sim" and the live ones given. */
static void make_source(struct rd_source *src, struct rc_arena *a, const char *const *names,
                        const char *const *kubeconfigs, size_t n)
{
    struct pl_shape *shape = rc_arena_calloc(a, 1, sizeof(*shape));
    struct pl_node *node = rc_arena_calloc(a, 1, sizeof(*node));

    memset(src, 0, sizeof(*src));
    pl_resnames_init(&src->res);
    src->nclusters = n + 1;
    src->clusters = rc_arena_calloc(a, n + 1, sizeof(*src->clusters));
    src->conns = rc_arena_calloc(a, n + 1, sizeof(*src->conns));
    node->name = "declared";
    node->allocatable.v[PL_RES_CPU] = 16000;
    src->clusters[0].name = "sim";
    src->clusters[0].nnodes = 1;
    src->clusters[0].nodes = node;
    src->clusters[0].reachable = 1;
    src->conns[0].name = "sim";
    shape->name = "m5.large";
    for (size_t i = 0; i < n; i++) {
        src->clusters[i + 1].name = names[i];
        src->clusters[i + 1].cost_micro = 526000;
        src->clusters[i + 1].nshapes = 1;
        src->clusters[i + 1].shapes = shape;
        src->conns[i + 1].name = names[i];
        src->conns[i + 1].live = 1;
        /* the older spec.kubeconfig.path form: honoured for the operator's files only */
        src->conns[i + 1].path = kubeconfigs[i];
        src->conns[i + 1].detect_autoscaler = 1;
    }
}

static void test_rc_observe__live_capacity_paged(void **state)
{
    struct fixture *f = *state;
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_err err = RC_ERR_INIT;
    const char *names[] = {"live"};
    const char *kcs[] = {f->kc_live};
    struct rd_source src;
    struct pl_cluster *fleet = NULL;
    size_t n = 0;
    cJSON *reqs;
    const struct pl_cluster *c;

    (void)state;
    make_source(&src, &a, names, kcs, 1);
    assert_int_equal(rc_observe_any_live(&src), 1);
    assert_int_equal(rc_observe_fleet_opts(&fleet, &n, &src, &f->ko, &f->log, &a, &err), RC_OK);
    assert_int_equal(n, 2);
    /* simulated: as declared */
    assert_string_equal(fleet[0].name, "sim");
    assert_int_equal(fleet[0].live, 0);
    assert_int_equal(fleet[0].nnodes, 1);
    assert_string_equal(fleet[0].nodes[0].name, "declared");

    c = &fleet[1];
    assert_string_equal(c->name, "live");
    assert_int_equal(c->live, 1);
    assert_int_equal(c->reachable, 1);
    assert_int_equal(c->cost_micro, 526000); /* declared data kept */
    assert_int_equal(c->nshapes, 1);
    assert_int_equal(c->autoscaler, PL_AUTOSCALER_CLUSTER_AUTOSCALER);
    assert_int_equal(c->any_shape, 0);
    assert_int_equal(c->nnodes, 3);
    assert_string_equal(c->nodes[0].name, "a");
    assert_int_equal(c->nodes[0].allocatable.v[PL_RES_CPU], 4000);
    assert_int_equal(c->nodes[0].requested.v[PL_RES_CPU], 2000);
    assert_int_equal(c->nodes[0].requested.v[PL_RES_PODS], 2000);
    assert_int_equal(c->nodes[1].unschedulable, 1);
    assert_int_equal(c->nodes[1].requested.v[PL_RES_CPU], 0);
    assert_int_equal(c->nodes[2].requested.v[PL_RES_CPU], 2000); /* p3 pending + p5 */
    assert_int_equal(c->npresent, 3);
    assert_string_equal(c->present[0], "u1");
    assert_string_equal(c->present[1], "u2");
    assert_string_equal(c->present[2], "u4");

    /* lists were read in pages of 2 */
    reqs = th_kube_requests(&f->live);
    /* the four pods that can count (the server leaves out p4, Succeeded) */
    assert_int_equal(th_kube_count(reqs, "GET", "/api/v1/pods"), 2);
    assert_true(th_kube_count(reqs, "GET", "/api/v1/nodes") >= 2);
    /* autoscaler detection reads the Deployments that can be one, not all: namespace elotl,
     * three names by label, one by name (the server holds a Deployment "web" besides) */
    assert_int_equal(th_kube_count(reqs, "GET", "/apis/apps/v1/deployments"), 2);
    assert_int_equal(th_kube_count(reqs, "GET", "/apis/apps/v1/namespaces/elotl/deployments"), 1);
    {
        const cJSON *r;
        cJSON_ArrayForEach(r, reqs)
        {
            const cJSON *q = cJSON_GetObjectItem(r, "query");
            if (strcmp(cJSON_GetObjectItem(r, "path")->valuestring, "/apis/apps/v1/deployments"))
                continue;
            assert_true(cJSON_GetObjectItem(q, "labelSelector") ||
                        cJSON_GetObjectItem(q, "fieldSelector"));
        }
    }
    cJSON_Delete(reqs);
    fflush(f->logf);
    assert_null(strstr(f->logbuf, TOKEN));
    rc_arena_release(&a);
}

/* One Deployment applied (replicas given) with the labels JSON given ("{}": none). */
static void apply_deployment(struct rc_kube *k, const char *ns, const char *name,
                             const char *labels, int replicas)
{
    struct rc_err err = RC_ERR_INIT;
    char json[1024];
    cJSON *obj;

    snprintf(json, sizeof(json),
             "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"%s\","
             "\"namespace\":\"%s\",\"labels\":%s},\"spec\":{\"replicas\":%d}}",
             name, ns, labels, replicas);
    obj = cJSON_Parse(json);
    assert_int_equal(rc_kube_apply(k, obj, "test", 1, NULL, &err), RC_OK);
    cJSON_Delete(obj);
}

static enum pl_autoscaler detected(struct fixture *f, struct rd_source *src, struct rc_arena *a)
{
    struct rc_err err = RC_ERR_INIT;
    struct pl_cluster *fleet = NULL;
    size_t n = 0;

    assert_int_equal(rc_observe_fleet_opts(&fleet, &n, src, &f->ko, &f->log, a, &err), RC_OK);
    assert_int_equal(fleet[1].reachable, 1);
    return fleet[1].autoscaler;
}

/* Each rule that finds an autoscaler among the Deployments, through the selected lists:
 * cluster-autoscaler by name and by label, Luna by name in namespace elotl and by label in
 * another, and one scaled to zero that is none. */
static void test_rc_observe__autoscaler_found_by_each_rule(void **state)
{
    struct fixture *f = *state;
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_err err = RC_ERR_INIT;
    const char *names[] = {"live"};
    const char *kcs[] = {f->kc_live};
    struct rc_kube *k = NULL;
    struct rd_source src;
    cJSON *ns;

    make_source(&src, &a, names, kcs, 1);
    assert_int_equal(rc_kube_open(&k, f->kc_live, NULL, NULL, &err), RC_OK);
    for (const char *const *n = (const char *const[]){"ops", "elotl", "x", NULL}; *n; n++) {
        char json[256];
        snprintf(json, sizeof(json),
                 "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"%s\"}}",
                 *n);
        ns = cJSON_Parse(json);
        assert_int_equal(rc_kube_apply(k, ns, "test", 1, NULL, &err), RC_OK);
        cJSON_Delete(ns);
    }
    assert_int_equal(detected(f, &src, &a), PL_AUTOSCALER_CLUSTER_AUTOSCALER); /* by name */
    assert_int_equal(
        rc_kube_delete(k, "apps/v1", "Deployment", "kube-system", "cluster-autoscaler", NULL, &err),
        RC_OK);
    assert_int_equal(detected(f, &src, &a), PL_AUTOSCALER_NONE);
    apply_deployment(k, "ops", "scaler", "{\"app.kubernetes.io/name\":\"cluster-autoscaler\"}", 1);
    assert_int_equal(detected(f, &src, &a), PL_AUTOSCALER_CLUSTER_AUTOSCALER); /* by label */
    apply_deployment(k, "ops", "scaler", "{\"app.kubernetes.io/name\":\"cluster-autoscaler\"}", 0);
    assert_int_equal(detected(f, &src, &a), PL_AUTOSCALER_NONE); /* scaled to zero */
    apply_deployment(k, "elotl", "elotl-luna-manager", "{}", 1);
    assert_int_equal(detected(f, &src, &a), PL_AUTOSCALER_LUNA); /* by name, in elotl */
    assert_int_equal(
        rc_kube_delete(k, "apps/v1", "Deployment", "elotl", "elotl-luna-manager", NULL, &err),
        RC_OK);
    apply_deployment(k, "x", "lm", "{\"app.kubernetes.io/name\":\"luna-manager\"}", 1);
    assert_int_equal(detected(f, &src, &a), PL_AUTOSCALER_LUNA); /* by label, elsewhere */
    rc_kube_free(k);
    rc_arena_release(&a);
}

static void test_rc_observe__no_detection_keeps_declared_autoscaler(void **state)
{
    struct fixture *f = *state;
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_err err = RC_ERR_INIT;
    const char *names[] = {"live"};
    const char *kcs[] = {f->kc_live};
    struct rd_source src;
    struct pl_cluster *fleet = NULL;
    size_t n = 0;
    cJSON *reqs;

    make_source(&src, &a, names, kcs, 1);
    src.conns[1].detect_autoscaler = 0;
    src.clusters[1].autoscaler = PL_AUTOSCALER_LUNA;
    assert_int_equal(rc_observe_fleet_opts(&fleet, &n, &src, &f->ko, &f->log, &a, &err), RC_OK);
    assert_int_equal(fleet[1].autoscaler, PL_AUTOSCALER_LUNA);
    reqs = th_kube_requests(&f->live);
    assert_int_equal(th_kube_count(reqs, "GET", "deployments"), 0);
    cJSON_Delete(reqs);
    rc_arena_release(&a);
}

/* Out of file descriptors when a live cluster's kubeconfig is read: this pass's outage (the
 * cluster unreachable, retried next pass), not a kubeconfig to fix (exit 2, "fix the file"),
 * which is what a loop over some 170 live clusters met under systemd's soft limit of 1024. */
static void test_rc_observe__out_of_descriptors_is_an_outage(void **state)
{
    struct fixture *f = *state;
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_err err = RC_ERR_INIT;
    const char *names[] = {"live"};
    const char *kcs[] = {f->kc_live};
    struct rc_observe_report rep;
    struct rd_source src;
    struct pl_cluster *fleet = NULL;
    struct rlimit old, low;
    size_t n = 0;
    int rc, fds = 0, probe;

    make_source(&src, &a, names, kcs, 1);
    assert_int_equal(rc_http_load(&err), RC_OK); /* libcurl loaded while files can be opened */
    /* the lowest free descriptor is as high as the soft limit may be set: every open fails */
    probe = dup(0);
    assert_true(probe >= 0);
    fds = probe;
    close(probe);
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
    low = old;
    low.rlim_cur = (rlim_t)fds;
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
    rc = rc_observe_fleet_report(&fleet, &n, &src, &f->ko, &f->log, &rep, &a, &err);
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
    assert_int_equal(rc, RC_OK);
    assert_int_equal(rep.nconfig, 0);
    assert_int_equal(rep.nunreachable, 1);
    assert_int_equal(fleet[1].reachable, 0);
    fflush(f->logf);
    assert_non_null(strstr(f->logbuf, "warning: cluster 'live': unreachable: "));
    assert_non_null(strstr(f->logbuf, "Too many open files"));
    assert_null(strstr(f->logbuf, "fix the file"));
    /* said before, with what to do */
    assert_non_null(strstr(f->logbuf, "warning: 1 live cluster may need about 72 open files"));
    assert_non_null(strstr(f->logbuf, "LimitNOFILE="));

    /* with descriptors again, the same cluster is reached */
    assert_int_equal(rc_observe_fleet_report(&fleet, &n, &src, &f->ko, &f->log, &rep, &a, &err),
                     RC_OK);
    assert_int_equal(rep.nunreachable, 0);
    assert_int_equal(fleet[1].reachable, 1);
    rc_arena_release(&a);
}

static void test_rc_observe__unreachable_clusters(void **state)
{
    struct fixture *f = *state;
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_err err = RC_ERR_INIT;
    const char *names[] = {"down", "live", "wrongca", "nofile"};
    const char *kcs[] = {f->kc_down, f->kc_live, f->kc_wrong, "/nonexistent/kubeconfig"};
    struct rc_observe_report rep;
    struct rd_source src;
    struct pl_cluster *fleet = NULL;
    size_t n = 0;

    make_source(&src, &a, names, kcs, 4);
    assert_int_equal(rc_observe_fleet_report(&fleet, &n, &src, &f->ko, &f->log, &rep, &a, &err),
                     RC_OK);
    assert_int_equal(n, 5);
    /* a kubeconfig that does not exist is configuration, not an outage: named apart */
    assert_int_equal(rep.nunreachable, 3);
    assert_int_equal(rep.nconfig, 1);
    assert_non_null(strstr(rep.config_msg, "cluster 'nofile': cannot load its kubeconfig: "));
    assert_non_null(strstr(rep.config_msg, "/nonexistent/kubeconfig"));
    assert_string_equal(fleet[1].name, "down");
    assert_int_equal(fleet[1].live, 1);
    assert_int_equal(fleet[1].reachable, 0);
    assert_int_equal(fleet[1].nnodes, 0);
    assert_string_equal(fleet[2].name, "live");
    assert_int_equal(fleet[2].reachable, 1);
    assert_int_equal(fleet[2].nnodes, 3);
    assert_string_equal(fleet[3].name, "wrongca");
    assert_int_equal(fleet[3].reachable, 0);
    assert_string_equal(fleet[4].name, "nofile");
    assert_int_equal(fleet[4].reachable, 0);
    fflush(f->logf);
    assert_non_null(strstr(f->logbuf, "warning: cluster 'down': unreachable: "));
    assert_non_null(strstr(f->logbuf, "warning: cluster 'wrongca': unreachable: "));
    assert_non_null(strstr(f->logbuf, "error: cluster 'nofile': cannot load its kubeconfig: "
                                      "cannot open '/nonexistent/kubeconfig'"));
    assert_null(strstr(f->logbuf, "cluster 'nofile': unreachable"));
    assert_null(strstr(f->logbuf, "cluster 'live': unreachable"));
    assert_null(strstr(f->logbuf, TOKEN));

    /* the server goes away: the next observation marks it */
    th_kube_stop(&f->live);
    assert_int_equal(rc_observe_fleet_opts(&fleet, &n, &src, &f->ko, &f->log, &a, &err), RC_OK);
    assert_int_equal(fleet[2].reachable, 0);
    rc_arena_release(&a);
}

/* Nine live clusters, eight threads: the first nodes LIST any cluster sends is answered only
 * after 2 s. Its thread stays with that cluster; the other threads read every other cluster
 * meanwhile, the ninth included (rounds of eight would start it only after the slow
 * answer), so that after the slow answer the server hears from the slow cluster alone (one
 * connection per cluster). */
static void test_rc_observe__slow_cluster_holds_one_thread(void **state)
{
    struct fixture *f = *state;
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_err err = RC_ERR_INIT;
    const char *names[9] = {"c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8", "c9"};
    const char *kcs[9];
    struct rd_source src;
    struct pl_cluster *fleet = NULL;
    size_t n = 0, nreq;
    long max_inflight = 0;
    size_t after = 0;
    cJSON *reqs;
    const cJSON *slow = NULL;

    assert_true(RC_OBSERVE_MAX_THREADS < 9);
    for (size_t i = 0; i < 9; i++)
        kcs[i] = f->kc_live;
    make_source(&src, &a, names, kcs, 9);
    th_kube_faults(&f->live, "[{\"path\": \"^/api/v1/nodes$\", \"method\": \"GET\", "
                             "\"delay\": 2, \"count\": 1}]");
    assert_int_equal(rc_observe_fleet_opts(&fleet, &n, &src, &f->ko, &f->log, &a, &err), RC_OK);
    assert_int_equal(n, 10);
    for (size_t i = 1; i < n; i++) {
        assert_int_equal(fleet[i].reachable, 1);
        assert_int_equal(fleet[i].nnodes, 3);
    }
    reqs = th_kube_requests(&f->live);
    nreq = (size_t)cJSON_GetArraySize(reqs);
    /* every cluster: discovery aside, its nodes (2 pages), pods (3) and deployments */
    assert_true(th_kube_count(reqs, "GET", "/api/v1/nodes") >= 9 * 2);
    /* after the slow answer, only the slow cluster's own requests (its connection) */
    for (size_t i = 0; i < nreq && !slow; i++) {
        const cJSON *r = cJSON_GetArrayItem(reqs, (int)i);
        if (cJSON_IsTrue(cJSON_GetObjectItem(r, "fault"))) {
            slow = r;
            after = i + 1;
        }
    }
    assert_non_null(slow);
    for (size_t i = after; i < nreq; i++) {
        const cJSON *r = cJSON_GetArrayItem(reqs, (int)i);
        if (cJSON_GetNumberValue(cJSON_GetObjectItem(r, "conn")) !=
            cJSON_GetNumberValue(cJSON_GetObjectItem(slow, "conn")))
            fail_msg("request %zu of %zu (%s) came from another cluster after the slow answer", i,
                     nreq, cJSON_GetStringValue(cJSON_GetObjectItem(r, "path")));
    }
    assert_true(nreq - after <= 6); /* the slow cluster's own: the rest of its reads */
    for (size_t i = 0; i < nreq; i++) {
        long in = (long)cJSON_GetNumberValue(
            cJSON_GetObjectItem(cJSON_GetArrayItem(reqs, (int)i), "inflight"));
        max_inflight = in > max_inflight ? in : max_inflight;
    }
    assert_true(max_inflight <= RC_OBSERVE_MAX_THREADS);
    cJSON_Delete(reqs);
    rc_arena_release(&a);
}

/* cJSON's memory, counted (cJSON_InitHooks): what observe holds of the lists it reads. */
static _Atomic long json_bytes, json_peak;

static void *json_alloc(size_t n)
{
    void *p = malloc(n);
    long now = json_bytes += (long)malloc_usable_size(p), peak = json_peak;

    while (now > peak && !atomic_compare_exchange_weak(&json_peak, &peak, now))
        ;
    return p;
}

static void json_free(void *p)
{
    json_bytes -= (long)malloc_usable_size(p);
    free(p);
}

/* A fleet's lists are not held whole until every cluster is read: each item is reduced to
 * what placement reads as its page arrives, so observe holds the pages in flight and what it
 * kept, however big the items are. Six clusters on one server of 100 pods, each with 16 KB
 * of annotations as real pods carry (managedFields, env, status), read in pages of 10: the
 * lists are 9.6 MB of JSON, more as trees; held whole, cJSON's memory peaked above that. */
static void test_rc_observe__lists_not_held_whole(void **state)
{
    struct fixture *f = *state;
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_err err = RC_ERR_INIT;
    const char *names[6] = {"l1", "l2", "l3", "l4", "l5", "l6"};
    const char *kcs[6];
    struct rc_kube_options ko = f->ko;
    struct th_kube big;
    struct th_kube_opts o = {NULL, TOKEN "\n", 0, 0, 0};
    struct rc_buf st = RC_BUF_INIT;
    char kc[TH_PATH], ca[TH_PATH], extra[TH_PATH + 64], *pad = malloc(16 * 1024 + 1);
    struct rd_source src;
    struct pl_cluster *fleet = NULL;
    size_t n = 0;
    long base;
    cJSON *reqs;

    memset(pad, 'x', 16 * 1024);
    pad[16 * 1024] = '\0';
    rc_buf_puts(&st,
                "{\"objects\":[{\"apiVersion\":\"v1\",\"kind\":\"Namespace\","
                "\"metadata\":{\"name\":\"w\"}}",
                NULL);
    for (int i = 0; i < 4; i++)
        rc_buf_printf(&st, NULL,
                      ",{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"n%d\","
                      "\"annotations\":{\"pad\":\"%s\"}},\"status\":{\"allocatable\":{\"cpu\":"
                      "\"64\",\"pods\":\"110\"},\"conditions\":[{\"type\":\"Ready\",\"status\":"
                      "\"True\"}],\"images\":[{\"names\":[\"%s\"]}]}}",
                      i, pad, pad);
    for (int i = 0; i < 100; i++)
        rc_buf_printf(&st, NULL,
                      ",{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p%d\","
                      "\"namespace\":\"w\",\"labels\":{\"rightplace.dev/unit\":\"u%d\"},"
                      "\"annotations\":{\"pad\":\"%s\"}},\"spec\":{\"nodeName\":\"n%d\","
                      "\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":"
                      "\"100m\"}}}]},\"status\":{\"phase\":\"%s\"}}",
                      i, i % 7, pad, i % 4, i % 10 == 9 ? "Succeeded" : "Running");
    rc_buf_puts(&st, "]}", NULL);
    o.state_json = st.ptr;
    assert_int_equal(th_kube_start(&big, &certs, &o), 0);
    th_certs_path(ca, &certs, "ca.crt");
    snprintf(extra, sizeof(extra), "    certificate-authority: %s\n", ca);
    th_kube_path(kc, &big, "kubeconfig");
    th_kube_kubeconfig(kc, &big, extra, "    token: " TOKEN "\n");
    for (size_t i = 0; i < 6; i++)
        kcs[i] = kc;
    make_source(&src, &a, names, kcs, 6);
    ko.page_size = 10;
    rc_kubeconfig_sources_add_file(&f->sources, kc);

    cJSON_Hooks hooks = {json_alloc, json_free};
    cJSON_InitHooks(&hooks);
    base = json_bytes;
    json_peak = base;
    assert_int_equal(rc_observe_fleet_opts(&fleet, &n, &src, &ko, &f->log, &a, &err), RC_OK);
    cJSON_InitHooks(NULL);
    assert_int_equal(n, 7);
    for (size_t i = 1; i < n; i++) {
        assert_int_equal(fleet[i].reachable, 1);
        assert_int_equal(fleet[i].nnodes, 4);
        /* 25 pods a node, the Succeeded ones (every tenth, five on n1) not counted */
        assert_int_equal(fleet[i].nodes[0].requested.v[PL_RES_CPU], 2500);
        assert_int_equal(fleet[i].nodes[0].requested.v[PL_RES_PODS], 25000);
        assert_int_equal(fleet[i].nodes[1].requested.v[PL_RES_CPU], 2000);
        assert_int_equal(fleet[i].nodes[1].requested.v[PL_RES_PODS], 20000);
        assert_int_equal(fleet[i].npresent, 7);
    }
    reqs = th_kube_requests(&big);
    /* the 90 pods that count, in pages of 10: the server leaves out the ten that ended */
    assert_int_equal(th_kube_count(reqs, "GET", "/api/v1/pods"), 6 * 9);
    cJSON_Delete(reqs);
    /* the pages in flight (at most six of 10 pods, 160 KB of annotations each), not the
     * lists (9.6 MB) */
    print_message("observe held at most %ld bytes of JSON\n", json_peak - base);
    if (json_peak - base > 3L * 1024 * 1024)
        fail_msg("observe held %ld bytes of JSON at its peak", json_peak - base);
    th_kube_stop(&big);
    rc_buf_release(&st);
    free(pad);
    rc_arena_release(&a);
}

/* A cluster the last pass found unreachable gets one attempt per request (its timeout once,
 * not once per attempt); the others keep their retries. Counted in requests the server saw:
 * every nodes LIST fails with 503. Only the pass that finds a cluster down warns. */
static void test_rc_observe__known_down_tried_once(void **state)
{
    struct fixture *f = *state;
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_err err = RC_ERR_INIT;
    const char *names[] = {"up", "down"};
    const char *kcs[] = {f->kc_live, f->kc_live};
    const char *const known[] = {"down", "gone"}; /* sorted, as rc_outage_names gives them */
    struct rc_kube_options ko = f->ko;
    struct rd_source src;
    struct pl_cluster *fleet = NULL;
    size_t n = 0;
    cJSON *reqs;

    assert_int_equal(ko.http.max_attempts, 2);
    make_source(&src, &a, names, kcs, 2);
    th_kube_faults(&f->live, "[{\"path\": \"^/api/v1/nodes$\", \"method\": \"GET\", "
                             "\"status\": 503}]");
    ko.known_down = known;
    ko.nknown_down = 2;
    assert_int_equal(rc_observe_fleet_opts(&fleet, &n, &src, &ko, &f->log, &a, &err), RC_OK);
    assert_int_equal(fleet[1].reachable, 0);
    assert_int_equal(fleet[2].reachable, 0);
    reqs = th_kube_requests(&f->live);
    /* up: 2 attempts; down: 1 */
    assert_int_equal(th_kube_count(reqs, "GET", "/api/v1/nodes"), 3);
    cJSON_Delete(reqs);
    fflush(f->logf);
    assert_non_null(strstr(f->logbuf, "cluster 'down': unreachable at the last pass: one attempt"));
    assert_null(strstr(f->logbuf, "cluster 'up': unreachable at the last pass"));
    /* the outage's first pass warns, the passes after it say it at info level */
    assert_non_null(strstr(f->logbuf, "warning: cluster 'up': unreachable: "));
    assert_non_null(strstr(f->logbuf, "rightplace: cluster 'down': still unreachable: "));
    assert_null(strstr(f->logbuf, "warning: cluster 'down'"));

    /* it answers again: said once, at info level */
    th_kube_faults(&f->live, "[]");
    assert_int_equal(rc_observe_fleet_opts(&fleet, &n, &src, &ko, &f->log, &a, &err), RC_OK);
    assert_int_equal(fleet[1].reachable, 1);
    assert_int_equal(fleet[2].reachable, 1);
    fflush(f->logf);
    assert_non_null(strstr(f->logbuf, "rightplace: cluster 'down': reachable again"));
    assert_null(strstr(f->logbuf, "cluster 'up': reachable again"));
    rc_arena_release(&a);
}

static void test_rc_observe__simulated_only(void **state)
{
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_err err = RC_ERR_INIT;
    struct rd_source src;
    struct pl_cluster *fleet = NULL;
    size_t n = 0;

    (void)state;
    make_source(&src, &a, NULL, NULL, 0);
    assert_int_equal(rc_observe_any_live(&src), 0);
    assert_int_equal(rc_observe_fleet(&fleet, &n, &src, NULL, &a, &err), RC_OK);
    assert_int_equal(n, 1);
    assert_int_equal(fleet[0].reachable, 1);
    assert_int_equal(fleet[0].nodes[0].allocatable.v[PL_RES_CPU], 16000);
    rc_arena_release(&a);
}

/* ==== Loop mode: the pods kept by a watch (rc_watch.h) ==== */

/* Wait (at most 20 s) until the set's watchers of `kind` have applied `events` events in all. */
static void wait_events(struct rc_watch_set *ws, enum rc_watch_kind kind, size_t events)
{
    size_t got = 0;

    for (int i = 0; i < 400; i++) {
        rc_watch_counts(ws, kind, NULL, &got);
        if (got >= events)
            return;
        usleep(50 * 1000);
    }
    fail_msg("the watch applied %zu events, not %zu", got, events);
}

/* Wait (at most 20 s) until `running` watchers of `kind` run. */
static void wait_running(struct rc_watch_set *ws, enum rc_watch_kind kind, size_t running)
{
    size_t got = 0;

    for (int i = 0; i < 400; i++) {
        rc_watch_counts(ws, kind, &got, NULL);
        if (got == running)
            return;
        usleep(50 * 1000);
    }
    fail_msg("%zu watchers run, not %zu", got, running);
}

static void apply_pod(struct rc_kube *k, const char *name, const char *node, const char *unit)
{
    struct rc_err err = RC_ERR_INIT;
    char json[1024];
    cJSON *obj;

    snprintf(json, sizeof(json),
             "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\","
             "\"namespace\":\"w\",\"labels\":{\"rightplace.dev/unit\":\"%s\"}},"
             "\"spec\":{\"nodeName\":\"%s\",\"containers\":[{\"name\":\"c\",\"resources\":"
             "{\"requests\":{\"cpu\":\"1\",\"memory\":\"1Gi\"}}}]}}",
             name, unit, node);
    obj = cJSON_Parse(json);
    assert_int_equal(rc_kube_apply(k, obj, "test", 1, NULL, &err), RC_OK);
    cJSON_Delete(obj);
}

/* A server-side apply of body to a status subresource at path, as a kubelet writes it. */
static void kubelet_patch(struct rc_kube *k, const char *path, const char *body)
{
    struct rc_http_response resp = RC_HTTP_RESPONSE_INIT;
    struct rc_err err = RC_ERR_INIT;

    assert_int_equal(rc_kube_request(k, "PATCH", path, "application/apply-patch+yaml", body,
                                     strlen(body), &resp, &err),
                     RC_OK);
    rc_http_response_release(&resp);
}

/* The kubelet's part: a pod's phase, through the status subresource. */
static void set_phase(struct rc_kube *k, const char *name, const char *phase)
{
    char path[256], body[256];

    snprintf(path, sizeof(path), "/api/v1/namespaces/w/pods/%s/status?fieldManager=kubelet", name);
    snprintf(body, sizeof(body),
             "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\","
             "\"namespace\":\"w\"},\"status\":{\"phase\":\"%s\"}}",
             name, phase);
    kubelet_patch(k, path, body);
}

/* What observe made of the live cluster, as text: the nodes' requests and the units present. */
static void capacity_text(char *out, size_t n, const struct pl_cluster *c)
{
    size_t len = 0;

    out[0] = '\0';
    for (size_t i = 0; i < c->nnodes && len < n; i++)
        len +=
            (size_t)snprintf(out + len, n - len, "%s cpu=%lld mem=%lldGi pods=%lld; ",
                             c->nodes[i].name, (long long)c->nodes[i].requested.v[PL_RES_CPU],
                             (long long)(c->nodes[i].requested.v[PL_RES_MEMORY] / (1000LL << 30)),
                             (long long)c->nodes[i].requested.v[PL_RES_PODS]);
    for (size_t i = 0; i < c->npresent && len < n; i++)
        len += (size_t)snprintf(out + len, n - len, "%s ", c->present[i]);
}

/* deploy/rbac/member-cluster.yaml allows every request k's server recorded. */
static void rbac_allows(struct th_kube *k)
{
    char log[TH_PATH], *out = NULL, *errout = NULL;
    const char *argv[] = {"python3",
                          RP_SOURCE_DIR "/tests/rbac/check.py",
                          "--allowed-only",
                          RP_SOURCE_DIR "/deploy/rbac/member-cluster.yaml",
                          th_kube_path(log, k, "log.jsonl"),
                          NULL};
    int st = th_run(NULL, &out, &errout, argv);

    if (st != 0)
        fail_msg("rbac check failed (%d):\n%s%s", st, out ? out : "", errout ? errout : "");
    free(out);
    free(errout);
}

/* Loop mode's observe of one live cluster ("live", on f->live): a watch set kept from pass to
 * pass, as rc_pass gives observe one when another pass follows. */
struct loop_obs {
    struct fixture *f;
    struct rc_arena a;
    const char *names[1], *kcs[1];
    struct rd_source src;
    struct rc_kube_options ko;
    struct rc_watch_set *ws;
    struct rc_observe_report rep;
    struct pl_cluster *fleet; /* fleet[1] is the live cluster */
    size_t n;
};

/* timeout_s: how long the server holds each watch (0: RC_WATCH_TIMEOUT_S). */
static void loop_obs_init(struct loop_obs *o, struct fixture *f, long timeout_s)
{
    memset(o, 0, sizeof(*o));
    o->f = f;
    o->names[0] = "live";
    o->kcs[0] = f->kc_live;
    o->ko = f->ko;
    o->ws = rc_watch_set_new();
    if (timeout_s)
        rc_watch_set_timeout(o->ws, timeout_s);
    o->ko.watches = o->ws;
    make_source(&o->src, &o->a, o->names, o->kcs, 1);
}

/* A pass: the report in o->rep, the clusters in o->fleet. */
static void loop_pass(struct loop_obs *o)
{
    struct rc_err err = RC_ERR_INIT;

    assert_int_equal(rc_observe_fleet_report(&o->fleet, &o->n, &o->src, &o->ko, &o->f->log, &o->rep,
                                             &o->a, &err),
                     RC_OK);
}

/* What a pass without watches makes of the live cluster. */
static const struct pl_cluster *listed_pass(struct loop_obs *o)
{
    struct rc_err err = RC_ERR_INIT;
    struct pl_cluster *fleet = NULL;
    size_t n = 0;

    assert_int_equal(rc_observe_fleet_opts(&fleet, &n, &o->src, &o->f->ko, &o->f->log, &o->a, &err),
                     RC_OK);
    return &fleet[1];
}

static void loop_obs_release(struct loop_obs *o)
{
    rc_watch_set_free(o->ws);
    rc_arena_release(&o->a);
}

/*
 * Loop mode: the first pass lists the pods and starts a watch; the cluster's changes (a pod
 * made and started, one deleted, one that ended, one relabelled) reach the next pass through
 * the watch, which lists no pod and sees what a list would. A watch that fails (410 Expired
 * on the next watch) makes the pass after it list again, and a cluster no pass asks for has
 * its watcher stopped.
 */
static void test_rc_observe__watch_follows_the_pods(void **state)
{
    struct fixture *f = *state;
    struct rc_err err = RC_ERR_INIT;
    struct loop_obs o;
    struct rc_kube *k = NULL;
    const struct pl_cluster *listed = NULL;
    size_t watches = 0, events = 0;
    char got[1024], want[1024];
    cJSON *reqs;

    loop_obs_init(&o, f, 1);
    loop_pass(&o);
    assert_int_equal(o.fleet[1].reachable, 1);
    assert_int_equal(o.fleet[1].nodes[0].requested.v[PL_RES_CPU], 2000);
    reqs = th_kube_requests(&f->live);
    assert_int_equal(th_kube_lists(reqs, "/api/v1/pods", NULL), 2); /* pages of 2 */
    cJSON_Delete(reqs);
    wait_running(o.ws, RC_WATCH_PODS, 1);
    /* the server ends each watch after a second; the watcher starts the next from where the
     * last ended, and misses nothing of what follows */
    usleep(2500 * 1000);
    reqs = th_kube_requests(&f->live);
    th_kube_lists(reqs, "/api/v1/pods", &watches);
    assert_true(watches >= 2);
    cJSON_Delete(reqs);
    wait_running(o.ws, RC_WATCH_PODS, 1);

    assert_int_equal(rc_kube_open(&k, f->kc_live, NULL, NULL, &err), RC_OK);
    apply_pod(k, "p6", "a", "u5"); /* ADDED (no phase yet: it does not count) */
    set_phase(k, "p6", "Running"); /* MODIFIED: counts */
    assert_int_equal(rc_kube_delete(k, "v1", "Pod", "w", "p2", NULL, &err), RC_OK); /* DELETED */
    set_phase(k, "p3", "Succeeded"); /* leaves the field selector: DELETED */
    apply_pod(k, "p5", "c", "u6");   /* MODIFIED: another unit */
    wait_events(o.ws, RC_WATCH_PODS, 5);

    th_kube_clear_requests(&f->live);
    loop_pass(&o);
    assert_int_equal(o.rep.nwatched, 1);
    assert_int_equal(o.rep.nwatched_nodes, 1);
    reqs = th_kube_requests(&f->live);
    assert_int_equal(th_kube_lists(reqs, "/api/v1/pods", NULL), 0);
    /* the nodes come from their watch too; the Deployments' lists say the cluster answers,
     * so no probe is sent */
    assert_int_equal(th_kube_lists(reqs, "/api/v1/nodes", NULL), 0);
    cJSON_Delete(reqs);
    capacity_text(got, sizeof(got), &o.fleet[1]);
    /* a: p1 and p6; c: p5 alone; units u1 (p1), u5 (p6), u6 (p5) */
    assert_string_equal(
        got, "a cpu=2000 mem=2Gi pods=2000; b cpu=0 mem=0Gi pods=0; c cpu=1000 mem=1Gi pods=1000; "
             "u1 u5 u6 ");
    /* what a list says */
    listed = listed_pass(&o);
    capacity_text(want, sizeof(want), listed);
    assert_string_equal(got, want);
    fflush(f->logf);
    assert_non_null(strstr(f->logbuf, "cluster 'live': 3 nodes, 3 units present (nodes and pods "
                                      "from their watches)"));

    /* the server no longer has the watch's resourceVersion: the next watch ends in 410 and
     * the pass after it lists again */
    th_kube_faults(&f->live, "[{\"path\": \"^/api/v1/pods$\", \"query\": \"watch\", "
                             "\"gone\": true}]");
    wait_running(o.ws, RC_WATCH_PODS, 0);
    th_kube_faults(&f->live, "[]");
    rc_watch_counts(o.ws, RC_WATCH_PODS, NULL, &events);
    th_kube_clear_requests(&f->live);
    loop_pass(&o);
    assert_int_equal(o.rep.nwatched, 0); /* listed: its watch had ended */
    capacity_text(got, sizeof(got), &o.fleet[1]);
    assert_string_equal(got, want);
    reqs = th_kube_requests(&f->live);
    assert_int_equal(th_kube_lists(reqs, "/api/v1/pods", NULL), 2);
    cJSON_Delete(reqs);
    fflush(f->logf);
    assert_non_null(strstr(f->logbuf, "its pod watch ended (too old resource version"));
    wait_running(o.ws, RC_WATCH_PODS, 1); /* watched again from the new list */
    apply_pod(k, "p7", "c", "u7");
    set_phase(k, "p7", "Pending");
    wait_events(o.ws, RC_WATCH_PODS, events + 2);
    loop_pass(&o);
    capacity_text(got, sizeof(got), &o.fleet[1]);
    assert_string_equal(
        got, "a cpu=2000 mem=2Gi pods=2000; b cpu=0 mem=0Gi pods=0; c cpu=2000 mem=2Gi pods=2000; "
             "u1 u5 u6 u7 ");

    /* a pass without the cluster stops its watcher */
    o.src.nclusters = 1;
    loop_pass(&o);
    wait_running(o.ws, RC_WATCH_PODS, 0);
    wait_running(o.ws, RC_WATCH_NODES, 0);
    reqs = th_kube_requests(&f->live);
    th_kube_lists(reqs, "/api/v1/pods", &watches);
    assert_true(watches >= 1);
    cJSON_Delete(reqs);
    rbac_allows(&f->live); /* the watches */
    rc_kube_free(k);
    loop_obs_release(&o);
}

/* A node as the kubelet and an operator shape it: spec and labels by apply, status through
 * nodes/status. */
static void apply_node(struct rc_kube *k, const char *name, const char *labels, const char *spec)
{
    struct rc_err err = RC_ERR_INIT;
    char json[1024];
    cJSON *obj;

    snprintf(json, sizeof(json),
             "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"%s\","
             "\"labels\":{%s}},\"spec\":{%s}}",
             name, labels, spec);
    obj = cJSON_Parse(json);
    assert_non_null(obj);
    assert_int_equal(rc_kube_apply(k, obj, "test", 1, NULL, &err), RC_OK);
    cJSON_Delete(obj);
}

static void set_node_status(struct rc_kube *k, const char *name, const char *cpu, const char *ready)
{
    char path[256], body[512];

    snprintf(path, sizeof(path), "/api/v1/nodes/%s/status?fieldManager=kubelet", name);
    snprintf(body, sizeof(body),
             "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"%s\"},"
             "\"status\":{\"allocatable\":{\"cpu\":\"%s\",\"memory\":\"8Gi\",\"pods\":\"110\"},"
             "\"conditions\":[{\"type\":\"Ready\",\"status\":\"%s\"}]}}",
             name, cpu, ready);
    kubelet_patch(k, path, body);
}

/* What observe made of the live cluster's nodes, as text: each node's allocatable cpu,
 * cordon, readiness, labels and taints, and what its pods request. */
static void nodes_text(char *out, size_t n, const struct pl_cluster *c)
{
    size_t len = 0;

    out[0] = '\0';
    for (size_t i = 0; i < c->nnodes && len < n; i++) {
        const struct pl_node *node = &c->nodes[i];
        len += (size_t)snprintf(
            out + len, n - len, "%s cpu=%lld/%lld%s%s", node->name,
            (long long)node->requested.v[PL_RES_CPU], (long long)node->allocatable.v[PL_RES_CPU],
            node->unschedulable ? " cordoned" : "", node->not_ready ? " not-ready" : "");
        for (size_t l = 0; l < node->labels.n && len < n; l++) {
            if (strcmp(node->labels.v[l].key, "kubernetes.io/hostname"))
                len += (size_t)snprintf(out + len, n - len, " %s=%s", node->labels.v[l].key,
                                        node->labels.v[l].value);
        }
        for (size_t t = 0; t < node->ntaints && len < n; t++)
            len += (size_t)snprintf(out + len, n - len, " taint %s:%s", node->taints[t].key,
                                    node->taints[t].effect);
        if (len < n)
            len += (size_t)snprintf(out + len, n - len, "; ");
    }
}

/* The probes among reqs: GETs of one node, which stand for a list. */
static size_t probes(const cJSON *reqs)
{
    return th_kube_gets_with(reqs, "/api/v1/nodes", "limit", "1");
}

/*
 * Loop mode: the nodes are watched as the pods are. A node made (and then made ready by its
 * kubelet), one cordoned, one gone not-ready, relabelled and tainted, one deleted: the next
 * pass sends no list of nodes or pods, only a probe of one node, and sees what a list sees. A
 * probe that fails makes the cluster unreachable though both watches hold, and a pass whose
 * probe is answered again takes the watches' state.
 */
static void test_rc_observe__watch_follows_the_nodes(void **state)
{
    struct fixture *f = *state;
    struct rc_err err = RC_ERR_INIT;
    struct loop_obs o;
    struct rc_kube *k = NULL;
    const struct pl_cluster *listed = NULL;
    size_t running = 0;
    char got[2048], want[2048];
    cJSON *reqs;

    loop_obs_init(&o, f, 1);
    o.src.conns[1].detect_autoscaler = 0; /* no Deployments listed: nothing but the probe */
    loop_pass(&o);
    assert_int_equal(o.rep.nwatched_nodes, 0); /* the first pass lists */
    reqs = th_kube_requests(&f->live);
    assert_true(th_kube_lists(reqs, "/api/v1/nodes", NULL) >= 1);
    assert_int_equal(probes(reqs), 0);
    cJSON_Delete(reqs);
    wait_running(o.ws, RC_WATCH_NODES, 1);
    wait_running(o.ws, RC_WATCH_PODS, 1);

    assert_int_equal(rc_kube_open(&k, f->kc_live, NULL, NULL, &err), RC_OK);
    apply_node(k, "d", "\"zone\":\"z2\"", "");        /* ADDED, no status yet */
    set_node_status(k, "d", "2", "True");             /* MODIFIED: its capacity */
    apply_node(k, "a", "", "\"unschedulable\":true"); /* cordoned */
    set_node_status(k, "c", "8", "False");            /* not ready */
    apply_node(k, "c", "\"zone\":\"z1\"",             /* relabelled and tainted */
               "\"taints\":[{\"key\":\"gpu\",\"effect\":\"NoSchedule\"}]");
    assert_int_equal(rc_kube_delete(k, "v1", "Node", NULL, "b", NULL, &err), RC_OK);
    wait_events(o.ws, RC_WATCH_NODES, 6);

    th_kube_clear_requests(&f->live);
    loop_pass(&o);
    assert_int_equal(o.fleet[1].reachable, 1);
    assert_int_equal(o.rep.nwatched_nodes, 1);
    assert_int_equal(o.rep.nwatched, 1);
    reqs = th_kube_requests(&f->live);
    assert_int_equal(th_kube_lists(reqs, "/api/v1/pods", NULL), 0);
    assert_int_equal(th_kube_lists(reqs, "/api/v1/nodes", NULL), 1); /* the probe alone */
    assert_int_equal(probes(reqs), 1);
    cJSON_Delete(reqs);
    nodes_text(got, sizeof(got), &o.fleet[1]);
    assert_string_equal(got, "a cpu=2000/4000 cordoned; c cpu=2000/8000 not-ready zone=z1 taint "
                             "gpu:NoSchedule; d cpu=0/2000 zone=z2; ");
    listed = listed_pass(&o);
    nodes_text(want, sizeof(want), listed);
    assert_string_equal(got, want);
    fflush(f->logf);
    assert_non_null(strstr(f->logbuf, "cluster 'live': 3 nodes, 3 units present (nodes and pods "
                                      "from their watches)"));

    /* the server stops answering lists; the watches hold, but the cluster is unreachable */
    th_kube_faults(&f->live, "[{\"path\": \"^/api/v1/nodes$\", \"query\": \"^limit=1$\", "
                             "\"status\": 403}]");
    loop_pass(&o);
    assert_int_equal(o.fleet[1].reachable, 0);
    assert_int_equal(o.rep.nunreachable, 1);
    assert_int_equal(o.rep.nwatched_nodes, 0);
    rc_watch_counts(o.ws, RC_WATCH_NODES, &running, NULL);
    assert_int_equal(running, 1);
    th_kube_faults(&f->live, "[]");
    loop_pass(&o);
    assert_int_equal(o.fleet[1].reachable, 1);
    assert_int_equal(o.rep.nwatched_nodes, 1);
    nodes_text(got, sizeof(got), &o.fleet[1]);
    assert_string_equal(got, want);

    /* a watch of nodes that fails is listed again, and the pods' watch is left alone */
    th_kube_faults(&f->live, "[{\"path\": \"^/api/v1/nodes$\", \"query\": \"watch\", "
                             "\"gone\": true}]");
    wait_running(o.ws, RC_WATCH_NODES, 0);
    th_kube_faults(&f->live, "[]");
    th_kube_clear_requests(&f->live);
    loop_pass(&o);
    assert_int_equal(o.rep.nwatched_nodes, 0);
    assert_int_equal(o.rep.nwatched, 1);
    nodes_text(got, sizeof(got), &o.fleet[1]);
    assert_string_equal(got, want);
    reqs = th_kube_requests(&f->live);
    assert_true(th_kube_lists(reqs, "/api/v1/nodes", NULL) >= 1);
    assert_int_equal(probes(reqs), 0); /* the list says the cluster answers */
    cJSON_Delete(reqs);
    fflush(f->logf);
    assert_non_null(strstr(f->logbuf, "its node watch ended (too old resource version"));
    wait_running(o.ws, RC_WATCH_NODES, 1);

    o.src.nclusters = 1;
    loop_pass(&o);
    wait_running(o.ws, RC_WATCH_NODES, 0);
    wait_running(o.ws, RC_WATCH_PODS, 0);
    rbac_allows(&f->live); /* the watches and the probe */
    rc_kube_free(k);
    loop_obs_release(&o);
}

/* The watch requests of path among reqs. */
static size_t watch_requests(struct th_kube *k, const char *path)
{
    cJSON *reqs = th_kube_requests(k);
    size_t watches = 0;

    th_kube_lists(reqs, path, &watches);
    cJSON_Delete(reqs);
    return watches;
}

/*
 * A member cluster whose role was bound before it granted `watch` on nodes (an upgrade): the
 * watch gets 403. The pass after it warns once, naming the fix, and lists the nodes; the
 * passes after that list them without asking for a watch until the backoff ends, and a
 * refusal after that is said at info level. The pods' watch is not touched.
 */
static void test_rc_observe__watch_refused_backs_off(void **state)
{
    struct fixture *f = *state;
    struct loop_obs o;
    cJSON *reqs;

    loop_obs_init(&o, f, 0);
    th_kube_faults(&f->live, "[{\"path\": \"^/api/v1/nodes$\", \"query\": \"watch\", "
                             "\"status\": 403}]");
    loop_pass(&o);
    wait_running(o.ws, RC_WATCH_PODS, 1);
    wait_running(o.ws, RC_WATCH_NODES, 0); /* refused */
    assert_int_equal(watch_requests(&f->live, "/api/v1/nodes"), 1);

    for (int pass = 0; pass < 3; pass++) {
        th_kube_clear_requests(&f->live);
        loop_pass(&o);
        assert_int_equal(o.fleet[1].reachable, 1);
        assert_int_equal(o.fleet[1].nnodes, 3);
        assert_int_equal(o.rep.nwatched, 1);
        assert_int_equal(o.rep.nwatched_nodes, 0);
        reqs = th_kube_requests(&f->live);
        assert_true(th_kube_lists(reqs, "/api/v1/nodes", NULL) >= 1);
        cJSON_Delete(reqs);
        /* no watch asked for while the backoff lasts */
        assert_int_equal(watch_requests(&f->live, "/api/v1/nodes"), 0);
    }
    assert_int_equal(rc_watch_refusals(o.ws, "live", RC_WATCH_NODES), 1);
    assert_int_equal(rc_watch_refusals(o.ws, "live", RC_WATCH_PODS), 0);
    fflush(f->logf);
    assert_int_equal(th_count(f->logbuf, "may not watch nodes"), 1);
    assert_non_null(strstr(f->logbuf, "warning: cluster 'live': may not watch nodes ("));
    assert_non_null(strstr(f->logbuf, "grant `watch` on nodes (deploy/rbac/member-cluster.yaml)"));

    /* the backoff over: asked again, refused again, said at info level */
    rc_watch_set_refused_backoff(o.ws, 0);
    loop_pass(&o);
    for (int i = 0; i < 400 && watch_requests(&f->live, "/api/v1/nodes") < 1; i++)
        usleep(50 * 1000); /* the watcher's first request */
    assert_int_equal(watch_requests(&f->live, "/api/v1/nodes"), 1);
    wait_running(o.ws, RC_WATCH_NODES, 0); /* refused again */
    loop_pass(&o);
    assert_int_equal(rc_watch_refusals(o.ws, "live", RC_WATCH_NODES), 2);
    fflush(f->logf);
    assert_int_equal(th_count(f->logbuf, "may not watch nodes"), 2);
    assert_int_equal(th_count(f->logbuf, "warning: cluster 'live': may not watch nodes"), 1);
    assert_int_equal(th_count(f->logbuf, "rightplace: cluster 'live': may not watch nodes"), 1);
    /* that pass asked again (the backoff is 0 now): wait for its refusal, or a watch still
     * in flight could be refused after the next pass took it */
    wait_running(o.ws, RC_WATCH_NODES, 0);

    /* granted: the watch is asked for and holds */
    th_kube_faults(&f->live, "[]");
    loop_pass(&o);
    wait_running(o.ws, RC_WATCH_NODES, 1);
    loop_pass(&o);
    assert_int_equal(o.rep.nwatched_nodes, 1);
    loop_obs_release(&o);
}

/* A loop whose tasks limit leaves no thread for a watch (systemd's TasksMax, a container's pids
 * limit): the cluster is listed every pass, as without watches, and the first pass says so once
 * with what to raise; once threads can be started again the watches start, and a later
 * shortage is said again. No thread is made here by asking for stacks larger than the address
 * space. Before, the shortage was silent. */
static void test_rc_observe__watch_without_a_thread_says_so(void **state)
{
    struct fixture *f = *state;
    struct loop_obs o;
    pthread_attr_t saved, huge;

    assert_int_equal(pthread_getattr_default_np(&saved), 0);
    assert_int_equal(pthread_attr_init(&huge), 0);
    assert_int_equal(pthread_attr_setstacksize(&huge, (size_t)1 << 48), 0);
    loop_obs_init(&o, f, 0);
    assert_int_equal(pthread_setattr_default_np(&huge), 0);
    for (int pass = 0; pass < 2; pass++) {
        th_kube_clear_requests(&f->live);
        loop_pass(&o);
        assert_int_equal(o.fleet[1].reachable, 1);
        assert_int_equal(o.fleet[1].nnodes, 3); /* listed */
        assert_int_equal(o.rep.nwatched, 0);
        assert_int_equal(o.rep.nwatched_nodes, 0);
        wait_running(o.ws, RC_WATCH_PODS, 0);
        wait_running(o.ws, RC_WATCH_NODES, 0);
        assert_int_equal(watch_requests(&f->live, "/api/v1/nodes"), 0);
    }
    assert_int_equal(pthread_setattr_default_np(&saved), 0);
    fflush(f->logf);
    assert_int_equal(th_count(f->logbuf, "warning: cluster 'live': cannot start a thread to watch"),
                     1);
    assert_non_null(strstr(f->logbuf, "cluster 'live': cannot start a thread to watch its pods ("));
    assert_non_null(strstr(f->logbuf, "raise the tasks or pids limit"));

    /* threads again: the watches start and hold */
    loop_pass(&o);
    wait_running(o.ws, RC_WATCH_PODS, 1);
    wait_running(o.ws, RC_WATCH_NODES, 1);
    loop_pass(&o);
    assert_int_equal(o.rep.nwatched, 1);
    assert_int_equal(o.rep.nwatched_nodes, 1);

    /* short again: said again, once */
    rc_watch_keep_only(o.ws, NULL, 0);
    assert_int_equal(pthread_setattr_default_np(&huge), 0);
    loop_pass(&o);
    loop_pass(&o);
    assert_int_equal(pthread_setattr_default_np(&saved), 0);
    fflush(f->logf);
    assert_int_equal(th_count(f->logbuf, "warning: cluster 'live': cannot start a thread to watch"),
                     2);
    pthread_attr_destroy(&huge);
    pthread_attr_destroy(&saved);
    loop_obs_release(&o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_rc_observe__live_capacity_paged, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rc_observe__no_detection_keeps_declared_autoscaler,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_rc_observe__out_of_descriptors_is_an_outage, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_rc_observe__unreachable_clusters, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rc_observe__slow_cluster_holds_one_thread, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_rc_observe__known_down_tried_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rc_observe__lists_not_held_whole, setup, teardown),
        cmocka_unit_test(test_rc_observe__simulated_only),
        cmocka_unit_test_setup_teardown(test_rc_observe__autoscaler_found_by_each_rule, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_rc_observe__watch_follows_the_nodes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rc_observe__watch_refused_backs_off, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rc_observe__watch_without_a_thread_says_so, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_rc_observe__watch_follows_the_pods, setup, teardown),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
