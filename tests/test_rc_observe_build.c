/*
 * test_rc_observe_build.c - turning node, pod and deployment items into the cluster model
 * (rc_observe_build), without a server.
 */
#include "th.h"

#include <string.h>

#include "pl_basics.h"
#include "rc_observe.h"

static const char NODES[] =
    "["
    "{\"metadata\":{\"name\":\"n2\",\"labels\":{\"node.kubernetes.io/instance-type\":\"g4dn\","
    "\"zone\":\"a\"}},"
    " \"spec\":{\"taints\":[{\"key\":\"nvidia.com/"
    "gpu\",\"value\":\"true\",\"effect\":\"NoSchedule\"}]},"
    " \"status\":{\"allocatable\":{\"cpu\":\"3920m\",\"memory\":\"15Gi\",\"pods\":\"110\","
    "\"nvidia.com/gpu\":\"1\",\"ephemeral-storage\":\"100Gi\",\"hugepages-2Mi\":\"0\"},"
    " \"conditions\":[{\"type\":\"MemoryPressure\",\"status\":\"False\"},"
    "{\"type\":\"Ready\",\"status\":\"True\"}]}},"
    "{\"metadata\":{\"name\":\"n1\"},\"spec\":{\"unschedulable\":true},"
    " \"status\":{\"allocatable\":{\"cpu\":\"4\",\"memory\":\"16Gi\",\"pods\":\"110\"},"
    " \"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}},"
    "{\"metadata\":{\"name\":\"n3\"},"
    " \"status\":{\"allocatable\":{\"cpu\":\"2\",\"memory\":\"8Gi\",\"pods\":\"110\"},"
    " \"conditions\":[{\"type\":\"Ready\",\"status\":\"Unknown\"}]}}"
    "]";

#define POD(name, node, phase, labels, cpu, mem)                                                   \
    "{\"metadata\":{\"name\":\"" name "\",\"namespace\":\"ns\",\"labels\":{" labels "}},"          \
    "\"spec\":{\"nodeName\":\"" node "\",\"containers\":[{\"name\":\"c\",\"resources\":"           \
    "{\"requests\":{\"cpu\":\"" cpu "\",\"memory\":\"" mem "\"}}}]},"                              \
    "\"status\":{\"phase\":\"" phase "\"}}"

/* clang-format off */
static const char PODS[] = "["
    POD("p1", "n2", "Running", "\"rightplace.dev/unit\":\"bbbb\"", "1", "1Gi") ","
    POD("p2", "n2", "Running", "\"rightplace.dev/unit\":\"aaaa\"", "500m", "512Mi") ","
    POD("p3", "n2", "Succeeded", "\"rightplace.dev/unit\":\"cccc\"", "2", "2Gi") ","
    POD("p4", "n2", "Failed", "", "2", "2Gi") ","
    POD("p5", "", "Pending", "\"rightplace.dev/unit\":\"aaaa\"", "1", "1Gi") ","
    POD("p6", "n3", "Pending", "\"app\":\"x\"", "250m", "1Gi") ","
    /* a GPU pod: limits only (requests default to limits), and an init container bigger
     * than the app container */
    "{\"metadata\":{\"name\":\"g\",\"namespace\":\"ns\"},\"spec\":{\"nodeName\":\"n2\","
    "\"initContainers\":[{\"name\":\"i\",\"resources\":{\"requests\":{\"cpu\":\"2\"}}}],"
    "\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\","
    "\"cpu\":\"1\"}}}]},\"status\":{\"phase\":\"Running\"}},"
    POD("gone", "n9", "Running", "", "1", "1Gi") ","
    /* rd_demand cannot read this one: it counts as a pod, with no requests */
    POD("odd", "n3", "Running", "", "lots", "1Gi")
    "]";
/* clang-format on */

static void setup_res(struct pl_resnames *res, struct rc_arena *a)
{
    pl_resnames_init(res);
    pl_resnames_intern(res, a, "nvidia.com/gpu");
}

static void test_rc_observe_build__nodes_pods_present(void **state)
{
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_err err = RC_ERR_INIT;
    struct pl_resnames res;
    struct pl_shape shape = {0};
    struct pl_cluster c = {0};
    cJSON *nodes = cJSON_Parse(NODES), *pods = cJSON_Parse(PODS);
    int gpu;

    (void)state;
    assert_non_null(nodes);
    assert_non_null(pods);
    setup_res(&res, &a);
    gpu = pl_resnames_find(&res, "nvidia.com/gpu");
    shape.name = "g4dn";
    c.name = "live";
    c.nshapes = 1;
    c.shapes = &shape;
    c.autoscaler = PL_AUTOSCALER_LUNA; /* declared: kept when not detecting */
    assert_int_equal(rc_observe_build(&c, nodes, pods, NULL, &res, &a, &err), RC_OK);
    assert_int_equal(c.live, 1);
    assert_int_equal(c.reachable, 1);
    assert_int_equal(c.autoscaler, PL_AUTOSCALER_LUNA);
    assert_int_equal(c.nnodes, 3);
    /* sorted by name */
    assert_string_equal(c.nodes[0].name, "n1");
    assert_int_equal(c.nodes[0].unschedulable, 1);
    assert_int_equal(c.nodes[0].not_ready, 0);
    assert_null(c.nodes[0].shape);
    assert_int_equal(c.nodes[0].allocatable.v[PL_RES_CPU], 4000);
    assert_int_equal(c.nodes[0].allocatable.v[PL_RES_MEMORY], 16LL * 1073741824000LL);

    assert_string_equal(c.nodes[1].name, "n2");
    assert_int_equal(c.nodes[1].unschedulable, 0);
    assert_int_equal(c.nodes[1].not_ready, 0);
    assert_string_equal(c.nodes[1].shape, "g4dn");
    assert_int_equal(c.nodes[1].allocatable.v[PL_RES_CPU], 3920);
    assert_int_equal(c.nodes[1].allocatable.v[PL_RES_PODS], 110000);
    assert_int_equal(c.nodes[1].allocatable.v[gpu], 1000);
    assert_int_equal(res.n, 4); /* ephemeral-storage, hugepages not added */
    assert_int_equal(c.nodes[1].ntaints, 1);
    assert_string_equal(c.nodes[1].taints[0].key, "nvidia.com/gpu");
    assert_string_equal(c.nodes[1].taints[0].value, "true");
    assert_string_equal(c.nodes[1].taints[0].effect, "NoSchedule");
    assert_string_equal(pl_labels_get(&c.nodes[1].labels, "zone"), "a");
    /* p1 + p2 + g (init 2 cpu > 1) ; p3/p4 terminal, p5 unbound */
    assert_int_equal(c.nodes[1].requested.v[PL_RES_CPU], 1000 + 500 + 2000);
    assert_int_equal(c.nodes[1].requested.v[PL_RES_MEMORY], 1073741824000LL + 536870912000LL);
    assert_int_equal(c.nodes[1].requested.v[gpu], 1000);
    assert_int_equal(c.nodes[1].requested.v[PL_RES_PODS], 3000);

    assert_string_equal(c.nodes[2].name, "n3");
    assert_int_equal(c.nodes[2].not_ready, 1);
    assert_int_equal(c.nodes[2].requested.v[PL_RES_CPU], 250);
    assert_int_equal(c.nodes[2].requested.v[PL_RES_PODS], 2000); /* p6 and "odd" */

    /* present: sorted unique, terminal pods excluded, unbound pending included */
    assert_int_equal(c.npresent, 2);
    assert_string_equal(c.present[0], "aaaa");
    assert_string_equal(c.present[1], "bbbb");
    cJSON_Delete(nodes);
    cJSON_Delete(pods);
    rc_arena_release(&a);
}

/* Only the first Ready condition decides whether a node is ready, whatever comes around it
 * (observe keeps that condition alone of a node, rc_observe.c's prune_node). */
static void test_rc_observe_build__ready_condition(void **state)
{
    static const char nodes_json[] =
        "[{\"metadata\":{\"name\":\"r1\"},\"status\":{\"conditions\":["
        "{\"type\":\"MemoryPressure\",\"status\":\"False\",\"message\":\"ok\"},"
        "{\"type\":\"Ready\",\"status\":\"True\",\"reason\":\"KubeletReady\","
        "\"lastHeartbeatTime\":\"2026-12-05T00:00:00Z\"},{\"type\":\"Ready\",\"status\":\"False\"}]"
        "}},"
        "{\"metadata\":{\"name\":\"r2\"},\"status\":{\"conditions\":["
        "{\"type\":\"DiskPressure\",\"status\":\"False\"}]}},"
        "{\"metadata\":{\"name\":\"r3\"},\"status\":{\"conditions\":["
        "{\"type\":\"Ready\",\"status\":5}]}},"
        "{\"metadata\":{\"name\":\"r4\"},\"status\":{\"conditions\":["
        "\"Ready\",{\"status\":\"True\"},{\"type\":\"Ready\",\"status\":\"False\"}]}},"
        "{\"metadata\":{\"name\":\"r5\"},\"status\":{\"conditions\":{\"c\":"
        "{\"type\":\"Ready\",\"status\":\"True\"}}}}]";
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_err err = RC_ERR_INIT;
    struct pl_resnames res;
    struct pl_cluster c;
    cJSON *nodes = cJSON_Parse(nodes_json);

    (void)state;
    assert_non_null(nodes);
    pl_resnames_init(&res);
    memset(&c, 0, sizeof(c));
    c.name = "x";
    assert_int_equal(rc_observe_build(&c, nodes, NULL, NULL, &res, &a, &err), RC_OK);
    assert_int_equal(c.nnodes, 5);
    assert_int_equal(c.nodes[0].not_ready, 0); /* the first Ready */
    assert_int_equal(c.nodes[1].not_ready, 1); /* none */
    assert_int_equal(c.nodes[2].not_ready, 1); /* a status that is not a string */
    assert_int_equal(c.nodes[3].not_ready, 1); /* items that are not conditions skipped */
    assert_int_equal(c.nodes[4].not_ready, 0); /* read as cJSON iterates an object */
    cJSON_Delete(nodes);
    rc_arena_release(&a);
}

static enum pl_autoscaler detect(const char *deployments, size_t nshapes, int *any_shape)
{
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_err err = RC_ERR_INIT;
    struct pl_resnames res;
    struct pl_cluster c = {0};
    struct pl_shape shape = {0};
    cJSON *d = cJSON_Parse(deployments);
    enum pl_autoscaler as;

    assert_non_null(d);
    setup_res(&res, &a);
    c.name = "x";
    c.autoscaler = PL_AUTOSCALER_CLUSTER_AUTOSCALER;
    shape.name = "s";
    c.nshapes = nshapes;
    c.shapes = nshapes ? &shape : NULL;
    assert_int_equal(rc_observe_build(&c, NULL, NULL, d, &res, &a, &err), RC_OK);
    as = c.autoscaler;
    *any_shape = c.any_shape;
    cJSON_Delete(d);
    rc_arena_release(&a);
    return as;
}

static void test_rc_observe_build__autoscaler_detection(void **state)
{
    int any;

    (void)state;
    assert_int_equal(detect("[]", 0, &any), PL_AUTOSCALER_NONE);
    assert_int_equal(any, 0);
    assert_int_equal(
        detect("[{\"metadata\":{\"name\":\"web\",\"namespace\":\"default\"}}]", 0, &any),
        PL_AUTOSCALER_NONE);
    assert_int_equal(
        detect("[{\"metadata\":{\"name\":\"cluster-autoscaler\",\"namespace\":\"kube-system\"}}]",
               0, &any),
        PL_AUTOSCALER_CLUSTER_AUTOSCALER);
    assert_int_equal(any, 1);
    assert_int_equal(detect("[{\"metadata\":{\"name\":\"ca\",\"namespace\":\"x\",\"labels\":"
                            "{\"app.kubernetes.io/name\":\"cluster-autoscaler\"}}}]",
                            1, &any),
                     PL_AUTOSCALER_CLUSTER_AUTOSCALER);
    assert_int_equal(any, 0); /* declared shapes stay the limit */
    assert_int_equal(
        detect("[{\"metadata\":{\"name\":\"elotl-luna-manager\",\"namespace\":\"elotl\"}}]", 0,
               &any),
        PL_AUTOSCALER_LUNA);
    assert_int_equal(detect("[{\"metadata\":{\"name\":\"m\",\"namespace\":\"ops\",\"labels\":"
                            "{\"app.kubernetes.io/name\":\"luna-manager\"}}}]",
                            0, &any),
                     PL_AUTOSCALER_LUNA);
    /* luna outside elotl without the label is not luna */
    assert_int_equal(detect("[{\"metadata\":{\"name\":\"luna\",\"namespace\":\"ops\"}}]", 0, &any),
                     PL_AUTOSCALER_NONE);
    /* scaled to zero: not running */
    assert_int_equal(detect("[{\"metadata\":{\"name\":\"cluster-autoscaler\",\"namespace\":\"k\"},"
                            "\"spec\":{\"replicas\":0}}]",
                            0, &any),
                     PL_AUTOSCALER_NONE);
}

static void test_rc_observe_build__malformed_items(void **state)
{
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_err err = RC_ERR_INIT;
    struct pl_resnames res;
    struct pl_cluster c = {0};
    cJSON *noname = cJSON_Parse("[{\"metadata\":{}}]");
    cJSON *badq = cJSON_Parse("[{\"metadata\":{\"name\":\"n\"},\"status\":{\"allocatable\":"
                              "{\"cpu\":\"lots\"}}}]");

    (void)state;
    setup_res(&res, &a);
    c.name = "x";
    assert_int_equal(rc_observe_build(&c, noname, NULL, NULL, &res, &a, &err), RC_EINVALID);
    assert_non_null(strstr(err.msg, "cluster 'x'"));
    assert_int_equal(rc_observe_build(&c, badq, NULL, NULL, &res, &a, &err), RC_EINVALID);
    assert_non_null(strstr(err.msg, "node 'n'"));
    cJSON_Delete(noname);
    cJSON_Delete(badq);
    rc_arena_release(&a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rc_observe_build__nodes_pods_present),
        cmocka_unit_test(test_rc_observe_build__ready_condition),
        cmocka_unit_test(test_rc_observe_build__autoscaler_detection),
        cmocka_unit_test(test_rc_observe_build__malformed_items),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
