/*
 * test_rd_cluster.c - Cluster manifests -> pl_cluster + rd_cluster_conn.
 */
#include "th.h"

#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "pl_basics.h"
#include "rc_arena.h"
#include "rd_cluster.h"
#include "rd_object.h"
#include "rd_yaml.h"

#define MI INT64_C(1048576000)

struct fx {
    struct rc_arena a;
    struct rd_docs *docs;
    struct rd_object obj;
    struct pl_resnames res;
    struct pl_cluster c;
    struct rd_cluster_conn conn;
    struct rc_err err;
};

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));
    pl_resnames_init(&f->res);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    rd_docs_free(f->docs);
    rc_arena_release(&f->a);
    free(f);
    return 0;
}

static int parse(struct fx *f, const char *text)
{
    const struct rd_yaml_limits lim = RD_YAML_LIMITS_INIT;
    cJSON *root;

    rd_docs_free(f->docs);
    f->docs = NULL;
    rc_err_clear(&f->err);
    assert_int_equal(rd_yaml_load(&f->docs, "c.yaml", text, strlen(text), &lim, NULL, &f->err),
                     RC_OK);
    root = rd_docs_get(f->docs, 0);
    assert_int_equal(rd_object_init(&f->obj, root, "c.yaml", rd_docs_pos(f->docs, root), f->docs,
                                    &f->a, &f->err),
                     RC_OK);
    assert_true(rd_is_cluster(&f->obj));
    return rd_cluster_parse(&f->c, &f->conn, &f->obj, f->docs, &f->res, &f->a, &f->err);
}

static int64_t amount(struct fx *f, const struct pl_res *r, const char *name)
{
    int i = pl_resnames_find(&f->res, name);
    return i < 0 ? 0 : r->v[i];
}

#define HEAD "apiVersion: rightplace.dev/v1alpha1\nkind: Cluster\nmetadata: {name: c1}\n"

/* The example of docs/formats.md and the README, made simulated (no kubeconfig). */
static const char design_example[] =
    "apiVersion: rightplace.dev/v1alpha1\n"
    "kind: Cluster\n"
    "metadata:\n"
    "  name: static-cluster\n"
    "  labels: {cluster.class: production}\n"
    "spec:\n"
    "  autoscaler:\n"
    "    type: auto\n"
    "    nodeShapes:\n"
    "    - {name: g4dn.xlarge, max: 10, costPerHour: 0.526,\n"
    "       allocatable: {cpu: \"4\", memory: 16Gi, nvidia.com/gpu: \"1\", pods: \"110\"},\n"
    "       labels: {}, taints: [{key: nvidia.com/gpu, value: \"true\", effect: NoSchedule}]}\n"
    "  costPerHour: 0\n"
    "  nodes:\n"
    "  - {name: gpu, count: 4, allocatable: {cpu: \"8\", memory: 32Gi, nvidia.com/gpu: \"1\", "
    "pods: \"110\"},\n"
    "     labels: {}, taints: [{key: nvidia.com/gpu, value: \"true\", effect: NoSchedule}]}\n"
    "  - {name: cpu, allocatable: {cpu: 16, memory: 64Gi}, labels: {pool: general}, "
    "unschedulable: true}\n";

static void test_rd_cluster__simulated_design_example(void **state)
{
    struct fx *f = *state;
    const struct pl_node *n;

    assert_int_equal(parse(f, design_example), RC_OK);
    assert_string_equal(f->c.name, "static-cluster");
    assert_string_equal(pl_labels_get(&f->c.labels, "cluster.class"), "production");
    assert_string_equal(pl_labels_get(&f->c.labels, "kubernetes.io/metadata.name"),
                        "static-cluster");
    assert_int_equal(f->c.live, 0);
    assert_int_equal(f->c.reachable, 1);
    assert_int_equal(f->conn.live, 0);
    assert_null(f->conn.path);
    assert_string_equal(f->conn.name, "static-cluster");
    assert_int_equal(f->conn.detect_autoscaler, 0);
    /* auto on a simulated cluster with shapes: a generic cluster autoscaler */
    assert_int_equal(f->c.autoscaler, PL_AUTOSCALER_CLUSTER_AUTOSCALER);
    assert_int_equal(f->c.any_shape, 0);
    assert_int_equal(f->c.nshapes, 1);
    assert_string_equal(f->c.shapes[0].name, "g4dn.xlarge");
    assert_int_equal(f->c.shapes[0].max, 10);
    assert_int_equal(f->c.shapes[0].cost_micro, 526000);
    assert_int_equal(amount(f, &f->c.shapes[0].allocatable, "memory"), 16384 * MI);
    assert_int_equal(amount(f, &f->c.shapes[0].allocatable, "nvidia.com/gpu"), 1000);
    assert_int_equal(f->c.shapes[0].ntaints, 1);
    assert_string_equal(f->c.shapes[0].taints[0].value, "true");
    assert_int_equal(f->c.cost_micro, 0);
    /* 4 gpu nodes + 1 cpu node, sorted by name */
    assert_int_equal(f->c.nnodes, 5);
    n = &f->c.nodes[0];
    assert_string_equal(n->name, "cpu-1");
    assert_true(n->unschedulable);
    assert_int_equal(amount(f, &n->allocatable, "cpu"), 16000);
    assert_int_equal(amount(f, &n->allocatable, "pods"), 110000); /* kubelet default */
    assert_string_equal(pl_labels_get(&n->labels, "pool"), "general");
    assert_string_equal(pl_labels_get(&n->labels, "kubernetes.io/hostname"), "cpu-1");
    n = &f->c.nodes[4];
    assert_string_equal(n->name, "gpu-4");
    assert_false(n->unschedulable);
    assert_int_equal(amount(f, &n->allocatable, "nvidia.com/gpu"), 1000);
    assert_int_equal(n->ntaints, 1);
    assert_string_equal(n->taints[0].effect, "NoSchedule");
    assert_string_equal(pl_labels_get(&n->labels, "kubernetes.io/hostname"), "gpu-4");
    assert_string_equal(pl_labels_get(&f->c.nodes[1].labels, "kubernetes.io/hostname"), "gpu-1");
    assert_null(n->shape);
}

static void test_rd_cluster__live_cluster(void **state)
{
    struct fx *f = *state;

    assert_int_equal(parse(f, HEAD "spec:\n  kubeconfig: {context: prod}\n"), RC_OK);
    assert_int_equal(f->c.live, 1);
    assert_int_equal(f->c.reachable, 1);
    assert_int_equal(f->conn.live, 1);
    assert_null(f->conn.path);
    assert_null(f->conn.file);
    assert_int_equal(f->conn.in_cluster, 0);
    assert_string_equal(f->conn.context, "prod");
    assert_int_equal(f->conn.detect_autoscaler, 1); /* no autoscaler block: auto */
    assert_int_equal(f->c.autoscaler, PL_AUTOSCALER_NONE);
    assert_int_equal(f->c.any_shape, 1);
    assert_int_equal(f->c.nnodes, 0);
    assert_int_equal(parse(f, HEAD "spec:\n  kubeconfig: {name: k}\n  autoscaler: {type: luna}\n"),
                     RC_OK);
    assert_string_equal(f->conn.file, "k");
    assert_null(f->conn.context);
    assert_int_equal(f->conn.detect_autoscaler, 0);
    assert_int_equal(f->c.autoscaler, PL_AUTOSCALER_LUNA);
    assert_int_equal(f->c.any_shape, 1);
    /* live clusters' nodes are observed, not declared */
    assert_int_equal(parse(f, HEAD "spec:\n  kubeconfig: {context: k}\n  nodes: [{name: a}]\n"),
                     RC_EINVALID);
    assert_non_null(strstr(f->err.msg, "c.yaml:6:"));
    /* a kubeconfig is named, never embedded */
    assert_int_equal(parse(f, HEAD "spec:\n  kubeconfig: {context: k, token: abc}\n"), RC_EINVALID);
    assert_non_null(strstr(f->err.msg, "never embedded"));
    assert_null(strstr(f->err.msg, "abc"));
    assert_int_equal(parse(f, HEAD "spec:\n  kubeconfig: {}\n"), RC_EINVALID);
    assert_non_null(strstr(f->err.msg, "needs a context"));
}

/* spec.kubeconfig selects among the operator's credentials: a name is a plain file name, the
 * pod's service account takes nothing else, the older path form is kept as a request. */
static void test_rd_cluster__kubeconfig_selection(void **state)
{
    struct fx *f = *state;
    static const char *const bad_names[] = {"../etc/passwd", "a/b",        ".hidden", "..",
                                            "/abs",          "\"a\\x1bb\""};

    assert_int_equal(parse(f, HEAD "spec:\n  kubeconfig: {name: gpu-east, context: e}\n"), RC_OK);
    assert_string_equal(f->conn.file, "gpu-east");
    assert_string_equal(f->conn.context, "e");
    for (size_t i = 0; i < sizeof(bad_names) / sizeof(bad_names[0]); i++) {
        char text[256];
        snprintf(text, sizeof(text), HEAD "spec:\n  kubeconfig: {name: %s}\n", bad_names[i]);
        assert_int_equal(parse(f, text), RC_EINVALID);
        assert_non_null(strstr(f->err.msg, "plain file name"));
        assert_non_null(strstr(f->err.msg, "c.yaml:"));
    }
    assert_int_equal(parse(f, HEAD "spec:\n  kubeconfig: {inCluster: true}\n"), RC_OK);
    assert_int_equal(f->conn.in_cluster, 1);
    assert_int_equal(f->conn.live, 1);
    assert_int_equal(f->c.live, 1);
    assert_int_equal(parse(f, HEAD "spec:\n  kubeconfig: {inCluster: true, context: x}\n"),
                     RC_EINVALID);
    assert_non_null(strstr(f->err.msg, "inCluster takes no"));
    assert_int_equal(parse(f, HEAD "spec:\n  kubeconfig: {inCluster: false}\n"), RC_EINVALID);
    assert_int_equal(parse(f, HEAD "spec:\n  kubeconfig: {name: a, path: /b}\n"), RC_EINVALID);
    /* the older form parses; whether it is honoured is the operator's (rc_kubeconfig_select) */
    assert_int_equal(parse(f, HEAD "spec:\n  kubeconfig: {path: /etc/rp/kc, context: prod}\n"),
                     RC_OK);
    assert_string_equal(f->conn.path, "/etc/rp/kc");
    assert_int_equal(f->conn.live, 1);
}

static void test_rd_cluster__autoscaler_types(void **state)
{
    struct fx *f = *state;

    assert_int_equal(parse(f, HEAD), RC_OK); /* no spec at all: empty simulated cluster */
    assert_int_equal(f->c.autoscaler, PL_AUTOSCALER_NONE);
    assert_int_equal(f->c.any_shape, 0);
    assert_int_equal(f->c.nnodes, 0);
    assert_int_equal(parse(f, HEAD "spec:\n  autoscaler: {type: cluster-autoscaler}\n"), RC_OK);
    assert_int_equal(f->c.autoscaler, PL_AUTOSCALER_CLUSTER_AUTOSCALER);
    assert_int_equal(f->c.any_shape, 1);
    assert_int_equal(parse(f, HEAD "spec:\n  autoscaler: {}\n"), RC_OK);
    assert_int_equal(f->c.autoscaler, PL_AUTOSCALER_NONE); /* auto, nothing to detect */
    assert_int_equal(f->c.any_shape, 0);
    assert_int_equal(parse(f, HEAD "spec:\n  autoscaler: {type: none}\n"), RC_OK);
    assert_int_equal(f->c.autoscaler, PL_AUTOSCALER_NONE);
    assert_int_equal(parse(f, HEAD "spec:\n  autoscaler: {type: karpenter}\n"), RC_EINVALID);
    assert_non_null(strstr(f->err.msg, "'karpenter'"));
    assert_int_equal(parse(f, HEAD "spec:\n  autoscaler:\n    type: none\n    nodeShapes: "
                                   "[{name: a}]\n"),
                     RC_EINVALID);
    assert_int_equal(parse(f, HEAD "spec:\n  autoscaler:\n    type: luna\n    nodeShapes: "
                                   "[{name: a}, {name: a}]\n"),
                     RC_EINVALID);
    assert_non_null(strstr(f->err.msg, "twice"));
    assert_int_equal(parse(f, HEAD "spec:\n  autoscaler:\n    type: luna\n    nodeShapes: "
                                   "[{name: a, costPerHour: \"1.25\"}]\n"),
                     RC_OK);
    assert_int_equal(f->c.shapes[0].max, -1); /* no limit */
    assert_int_equal(f->c.shapes[0].cost_micro, 1250000);
}

static void test_rd_cluster__errors(void **state)
{
    struct fx *f = *state;

    assert_int_equal(parse(f, HEAD "spec:\n  nodes:\n  - {name: a, allocatable: {cpu: 4x}}\n"),
                     RC_EINVALID);
    assert_non_null(strstr(f->err.msg, "c.yaml:6:"));
    assert_non_null(strstr(f->err.msg, "4x"));
    assert_int_equal(parse(f, HEAD "spec:\n  node: []\n"), RC_EINVALID);
    assert_non_null(strstr(f->err.msg, "unknown field 'node'"));
    assert_int_equal(parse(f, HEAD "spec:\n  nodes: [{name: a, count: 2}, {name: a}]\n"),
                     RC_EINVALID);
    assert_non_null(strstr(f->err.msg, "'a-1'"));
    assert_int_equal(parse(f, HEAD "spec:\n  nodes: [{name: a, count: 20000}]\n"), RC_EINVALID);
    assert_int_equal(parse(f, HEAD "spec:\n  nodes: [{name: Big_Node}]\n"), RC_EINVALID);
    assert_non_null(strstr(f->err.msg, "c.yaml:5:18: "));
    assert_non_null(strstr(f->err.msg, "Big_Node"));
    assert_int_equal(parse(f, HEAD "spec:\n  nodes: [{count: 2}]\n"), RC_EINVALID);
    assert_non_null(strstr(f->err.msg, "no name"));
    assert_int_equal(parse(f, HEAD "spec:\n  nodes: [{name: a, taints: [{key: k, effect: "
                                   "Sometimes}]}]\n"),
                     RC_EINVALID);
    assert_non_null(strstr(f->err.msg, "'Sometimes'"));
    assert_int_equal(parse(f, HEAD "spec:\n  costPerHour: -1\n"), RC_EINVALID);
    assert_int_equal(parse(f, "apiVersion: rightplace.dev/v1alpha1\nkind: Cluster\nmetadata:\n"
                              "  name: c1\n  labels: {kubernetes.io/metadata.name: c2}\n"),
                     RC_EINVALID);
    assert_non_null(strstr(f->err.msg, "'c2'"));
    assert_int_equal(parse(f, HEAD "spec:\n  nodes: [{name: a, count: 0}]\n  costPerHour: 2.5\n"),
                     RC_OK);
    assert_int_equal(f->c.nnodes, 0);
    assert_int_equal(f->c.cost_micro, 2500000);
}

/* Nodes come out in name order (strcmp: "cpu-10" before "cpu-2"), each with its own fields:
 * its group's allocatable and labels, and its own hostname. */
static void test_rd_cluster__nodes_in_name_order(void **state)
{
    static const char *const want[] = {"b-1",   "cpu-1", "cpu-10", "cpu-11", "cpu-12",
                                       "cpu-2", "cpu-3", "cpu-4",  "cpu-5",  "cpu-6",
                                       "cpu-7", "cpu-8", "cpu-9",  "z-1"};
    struct fx *f = *state;

    int rc = parse(f, HEAD "spec:\n  nodes:\n"
                           "  - {name: cpu, count: 12, allocatable: {cpu: 2}}\n"
                           "  - {name: b, allocatable: {cpu: 3}, labels: {pool: b}}\n"
                           "  - {name: z, allocatable: {cpu: 4}, unschedulable: true}\n");

    if (rc != RC_OK)
        fail_msg("%s", f->err.msg);
    assert_int_equal(f->c.nnodes, sizeof(want) / sizeof(want[0]));
    for (size_t i = 0; i < f->c.nnodes; i++) {
        const struct pl_node *n = &f->c.nodes[i];
        int64_t cpu = n->name[0] == 'b' ? 3000 : n->name[0] == 'z' ? 4000 : 2000;
        assert_string_equal(n->name, want[i]);
        assert_int_equal(amount(f, &n->allocatable, "cpu"), cpu);
        assert_string_equal(pl_labels_get(&n->labels, "kubernetes.io/hostname"), n->name);
        assert_int_equal(n->unschedulable, n->name[0] == 'z');
        if (n->name[0] == 'b')
            assert_string_equal(pl_labels_get(&n->labels, "pool"), "b");
        else
            assert_null(pl_labels_get(&n->labels, "pool"));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(name) cmocka_unit_test_setup_teardown(test_rd_cluster__##name, setup, teardown)
        T(simulated_design_example), T(live_cluster), T(kubeconfig_selection),
        T(autoscaler_types),         T(errors),       T(nodes_in_name_order),
#undef T
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
