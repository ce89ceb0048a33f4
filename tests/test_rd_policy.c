/*
 * test_rd_policy.c - SchedulePolicy manifests -> pl_policy: the skyray policies, required
 * fields, selectors, spread, warnings, digest.
 */
#include "th.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pl_basics.h"
#include "rc_arena.h"
#include "rd_object.h"
#include "rd_policy.h"
#include "rd_yaml.h"
#include "th_inputs.h"

struct fx {
    struct rc_arena a;
    struct rd_docs *docs;
    struct rd_object obj;
    struct pl_policy pol;
    struct rc_err err;
    size_t nw;
    const char **w;
};

static int setup(void **state)
{
    *state = calloc(1, sizeof(struct fx));
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

/* Load one YAML document as an object and parse it as a policy. */
static int parse(struct fx *f, const char *file, const char *text)
{
    const struct rd_yaml_limits lim = RD_YAML_LIMITS_INIT;
    cJSON *root;

    rd_docs_free(f->docs);
    f->docs = NULL;
    rc_err_clear(&f->err);
    f->nw = 0;
    f->w = NULL;
    assert_int_equal(rd_yaml_load(&f->docs, file, text, strlen(text), &lim, NULL, &f->err), RC_OK);
    assert_int_equal(rd_docs_count(f->docs), 1);
    root = rd_docs_get(f->docs, 0);
    assert_int_equal(
        rd_object_init(&f->obj, root, file, rd_docs_pos(f->docs, root), f->docs, &f->a, &f->err),
        RC_OK);
    assert_true(rd_is_policy(&f->obj));
    return rd_policy_parse_ex(&f->pol, &f->obj, f->docs, &f->nw, &f->w, &f->a, &f->err);
}

#define HEAD                                                                                       \
    "apiVersion: policy.elotl.co/v1alpha1\nkind: SchedulePolicy\nmetadata: {name: p}\nspec:\n"
#define NSALL                                                                                      \
    "  namespaceSelector: {matchExpressions: [{key: kubernetes.io/metadata.name, "                 \
    "operator: Exists}]}\n"
#define RSALL "  resourceSelectors: {labelSelectors: [{matchExpressions: []}]}\n"

static const char *const skyray_vars[] = {"RAYCLUSTER_NAMESPACE=rayjob1",
                                          "WORKLOAD_NAMESPACE=ns1",
                                          "WORKLOAD_LABELKEY=app.kubernetes.io/instance",
                                          "WORKLOAD_LABELVAL=rayservice",
                                          "SORTED_CLUSTER_LIST=a, b",
                                          NULL};

static int parse_skyray(struct fx *f, const char *name)
{
    char rel[512];
    char *raw, *text;
    int rc;

    snprintf(rel, sizeof(rel), "tests/data/skyray/policies/%s", name);
    raw = th_inputs_read(rel, NULL);
    text = th_inputs_subst(raw, skyray_vars);
    rc = parse(f, rc_arena_strdup(&f->a, rel), text);
    free(raw);
    free(text);
    return rc;
}

static void test_rd_policy__every_skyray_policy_loads(void **state)
{
    struct fx *f = *state;
    char dir[4096];
    struct dirent *de;
    DIR *d;
    int n = 0;

    snprintf(dir, sizeof(dir), "%s/tests/data/skyray/policies", RP_SOURCE_DIR);
    d = opendir(dir);
    assert_non_null(d);
    while ((de = readdir(d)) != NULL) {
        if (!strstr(de->d_name, ".yaml"))
            continue;
        if (parse_skyray(f, de->d_name) != RC_OK)
            fail_msg("%s: %s", de->d_name, f->err.msg);
        assert_int_equal(f->nw, 0);
        assert_int_equal(strlen(f->pol.digest), 16);
        assert_true(f->pol.nresource_selectors >= 1);
        n++;
    }
    closedir(d);
    assert_int_equal(n, 20);
}

static void test_rd_policy__skyray_semantics(void **state)
{
    struct fx *f = *state;
    const struct pl_requirement *r;

    assert_int_equal(parse_skyray(f, "rayjobcapacitypolicy.yaml"), RC_OK);
    assert_string_equal(f->pol.name, "rayjob-capacity-policy-rayjob1");
    assert_int_equal(f->pol.namespace_selector.n, 1);
    r = &f->pol.namespace_selector.req[0];
    assert_string_equal(r->key, "kubernetes.io/metadata.name");
    assert_int_equal(r->op, PL_OP_IN);
    assert_string_equal(r->values[0], "rayjob1");
    assert_false(f->pol.has_cluster_selector);
    assert_false(f->pol.has_ordered);
    assert_string_equal(f->pol.group_by, "app.kubernetes.io/instance");
    assert_int_equal(f->pol.spread, PL_SPREAD_NONE);
    assert_string_equal(f->pol.resource_selectors[0].req[0].values[0], "rayjob");
    assert_int_equal(f->pol.line, 1);
    assert_non_null(strstr(f->pol.file, "rayjobcapacitypolicy.yaml"));

    assert_int_equal(parse_skyray(f, "rayjobstaticpolicy.yaml"), RC_OK);
    assert_true(f->pol.has_cluster_selector);
    assert_string_equal(f->pol.cluster_selector.req[0].values[0], "static-cluster");
    assert_int_equal(f->pol.namespace_selector.req[0].op, PL_OP_EXISTS);

    assert_int_equal(parse_skyray(f, "nspolicy.yaml"), RC_OK);
    assert_int_equal(f->pol.spread, PL_SPREAD_DUPLICATE);
    assert_string_equal(f->pol.topology_key, "kubernetes.io/metadata.name");
    assert_string_equal(f->pol.group_by, "app");

    assert_int_equal(parse_skyray(f, "rayservicensprioritypolicy.yaml"), RC_OK);
    assert_true(f->pol.has_ordered);
    r = &f->pol.ordered.req[0];
    assert_string_equal(r->key, "nova.elotl.co/cluster.provider");
    assert_int_equal(r->nvalues, 3);
    assert_string_equal(r->values[0], "openstack"); /* priority order kept */
    assert_string_equal(r->values[1], "gce");
    assert_string_equal(r->values[2], "aws");

    assert_int_equal(parse_skyray(f, "clusterprioritypolicy.yaml"), RC_OK);
    r = &f->pol.ordered.req[0];
    assert_int_equal(r->nvalues, 2);
    assert_string_equal(r->values[0], "a");
    assert_string_equal(r->values[1], "b");
    assert_string_equal(f->pol.resource_selectors[0].req[0].key, "app.kubernetes.io/instance");
}

static void test_rd_policy__required_fields(void **state)
{
    struct fx *f = *state;

    /* namespaceSelector is optional (Nova 1.5): every namespace */
    assert_int_equal(parse(f, "p.yaml", HEAD RSALL), RC_OK);
    assert_int_equal(f->pol.namespace_selector.n, 0);
    assert_int_equal(parse(f, "p.yaml", HEAD NSALL "  resourceSelectors: {}\n"), RC_EINVALID);
    assert_non_null(strstr(f->err.msg, "labelSelectors"));
    assert_int_equal(parse(f, "p.yaml", HEAD NSALL), RC_EINVALID);
    assert_non_null(strstr(f->err.msg, "labelSelectors"));
    assert_int_equal(parse(f, "p.yaml", HEAD NSALL "  resourceSelectors: {labelSelectors: []}\n"),
                     RC_EINVALID);
    assert_non_null(strstr(f->err.msg, "p.yaml:6:"));
    assert_int_equal(parse(f, "p.yaml",
                           "apiVersion: policy.elotl.co/v1alpha1\nkind: SchedulePolicy\n"
                           "metadata: {name: p}\n"),
                     RC_EINVALID);
    assert_non_null(strstr(f->err.msg, "no spec"));
    assert_int_equal(parse(f, "p.yaml",
                           "apiVersion: policy.elotl.co/v2\nkind: SchedulePolicy\n"
                           "metadata: {name: p}\nspec: {}\n"),
                     RC_EINVALID);
    assert_non_null(strstr(f->err.msg, "unsupported apiVersion"));
}

static void test_rd_policy__selectors(void **state)
{
    struct fx *f = *state;

    /* `- matchExpressions: []` matches every object; several labelSelectors are ORed */
    assert_int_equal(parse(f, "p.yaml",
                           HEAD NSALL "  resourceSelectors:\n    labelSelectors:\n"
                                      "    - matchExpressions: []\n"
                                      "    - matchLabels: {app: x, tier: web}\n"
                                      "      matchExpressions: [{key: env, operator: NotIn, "
                                      "values: [dev]}]\n"),
                     RC_OK);
    assert_int_equal(f->pol.nresource_selectors, 2);
    assert_int_equal(f->pol.resource_selectors[0].n, 0);
    assert_int_equal(f->pol.resource_selectors[1].n, 3);
    assert_int_equal(f->pol.resource_selectors[1].req[2].op, PL_OP_NOTIN);
    /* a typo must not widen a selector to everything */
    assert_int_equal(parse(f, "p.yaml",
                           HEAD NSALL "  resourceSelectors: {labelSelectors: [{matchLabel: "
                                      "{app: x}}]}\n"),
                     RC_EINVALID);
    assert_non_null(strstr(f->err.msg, "'matchLabel'"));
    assert_int_equal(parse(f, "p.yaml",
                           HEAD NSALL RSALL "  clusterSelector: {matchExpressions: [{key: a, "
                                            "operator: Gt, values: ['1']}]}\n"),
                     RC_EINVALID);
    assert_non_null(strstr(f->err.msg, "'Gt'"));
    assert_int_equal(parse(f, "p.yaml",
                           HEAD NSALL RSALL "  clusterSelector: {matchExpressions: [{key: a, "
                                            "operator: In}]}\n"),
                     RC_EINVALID);
    assert_non_null(strstr(f->err.msg, "p.yaml:7:"));
    assert_int_equal(
        parse(f, "p.yaml", HEAD NSALL RSALL "  clusterSelector: {matchLabels: {a: 1}}\n"),
        RC_EINVALID);
    /* orderedClusterSelector needs an In requirement */
    assert_int_equal(parse(f, "p.yaml",
                           HEAD NSALL RSALL "  orderedClusterSelector: {matchExpressions: [{key: "
                                            "a, operator: Exists}]}\n"),
                     RC_EINVALID);
    assert_non_null(strstr(f->err.msg, "operator In"));
    assert_int_equal(parse(f, "p.yaml", HEAD NSALL RSALL "  groupBy: {}\n"), RC_EINVALID);
    assert_non_null(strstr(f->err.msg, "labelKey"));
}

static void test_rd_policy__spread(void **state)
{
    struct fx *f = *state;

    assert_int_equal(parse(f, "p.yaml",
                           HEAD NSALL RSALL "  groupBy: {labelKey: app}\n"
                                            "  spreadConstraints:\n    spreadMode: Divide\n"
                                            "    percentageSplit:\n"
                                            "    - {topologyValue: wlc-1, percentage: 20}\n"
                                            "    - {topologyValue: wlc-2, percentage: 80}\n"),
                     RC_OK);
    assert_int_equal(f->pol.spread, PL_SPREAD_DIVIDE);
    assert_null(f->pol.topology_key); /* default kubernetes.io/metadata.name */
    assert_int_equal(f->pol.nsplits, 2);
    assert_string_equal(f->pol.splits[1].value, "wlc-2");
    assert_int_equal(f->pol.splits[1].percent, 80);
    /* the map form of the v1.5 docs */
    assert_int_equal(parse(f, "p.yaml",
                           HEAD NSALL RSALL "  spreadConstraints:\n    spreadMode: Divide\n"
                                            "    topologyKey: region\n"
                                            "    percentageSplit: {us: 30, eu: 70}\n"),
                     RC_OK);
    assert_int_equal(f->pol.nsplits, 2);
    assert_string_equal(f->pol.splits[0].value, "us");
    assert_int_equal(f->pol.splits[0].percent, 30);
    assert_string_equal(f->pol.topology_key, "region");
    assert_int_equal(parse(f, "p.yaml",
                           HEAD NSALL RSALL "  spreadConstraints:\n    spreadMode: Divide\n"
                                            "    percentageSplit: {us: 30, eu: 71}\n"),
                     RC_EINVALID);
    assert_non_null(strstr(f->err.msg, "101%"));
    /* below 100 would leave replicas nowhere: refused */
    assert_int_equal(parse(f, "p.yaml",
                           HEAD NSALL RSALL "  spreadConstraints:\n    spreadMode: Divide\n"
                                            "    percentageSplit: {us: 30, eu: 50}\n"),
                     RC_EINVALID);
    assert_non_null(strstr(f->err.msg, "adds up to 80%, not 100%"));
    assert_int_equal(parse(f, "p.yaml",
                           HEAD NSALL RSALL "  spreadConstraints:\n    spreadMode: Divide\n"
                                            "    percentageSplit: [{topologyValue: a, "
                                            "percentage: 120}]\n"),
                     RC_EINVALID);
    assert_int_equal(parse(f, "p.yaml",
                           HEAD NSALL RSALL "  spreadConstraints:\n    spreadMode: Divide\n"
                                            "    percentageSplit: [{topologyValue: a, "
                                            "percentage: 10}, {topologyValue: a, percentage: "
                                            "10}]\n"),
                     RC_EINVALID);
    assert_non_null(strstr(f->err.msg, "twice"));
    assert_int_equal(
        parse(f, "p.yaml", HEAD NSALL RSALL "  spreadConstraints: {spreadMode: Copy}\n"),
        RC_EINVALID);
    assert_non_null(strstr(f->err.msg, "'Copy'"));
    /* Duplicate may exceed 100 in total: split ignored, with a warning */
    assert_int_equal(parse(f, "p.yaml",
                           HEAD NSALL RSALL "  spreadConstraints:\n    spreadMode: Duplicate\n"
                                            "    percentageSplit: {a: 80, b: 80}\n"),
                     RC_OK);
    assert_int_equal(f->nw, 1);
    assert_non_null(strstr(f->w[0], "p.yaml:9:"));
}

static void test_rd_policy__overrides_and_unknown_fields_warn(void **state)
{
    struct fx *f = *state;

    assert_int_equal(parse(f, "p.yaml",
                           HEAD NSALL RSALL "  clusterSelectr: {}\n"
                                            "  spreadConstraints:\n"
                                            "    spreadMode: Duplicate\n"
                                            "    overrides:\n"
                                            "    - topologyValue: a\n"
                                            "      resources: []\n"),
                     RC_OK);
    assert_int_equal(f->nw, 1);
    assert_non_null(strstr(f->w[0], "p.yaml:7:19: "));
    assert_non_null(strstr(f->w[0], "clusterSelectr"));
    /* rd_policy_parse drops warnings */
    assert_int_equal(rd_policy_parse(&f->pol, &f->obj, f->docs, &f->a, &f->err), RC_OK);
}

static void test_rd_policy__overrides(void **state)
{
    struct fx *f = *state;
    struct rc_err err = RC_ERR_INIT;
    cJSON *o;
    char *text;

    assert_int_equal(parse(f, "p.yaml",
                           HEAD NSALL RSALL
                           "  spreadConstraints:\n"
                           "    spreadMode: Duplicate\n"
                           "    overrides:\n"
                           "    - topologyValue: a\n"
                           "      resources:\n"
                           "      - kind: Namespace\n"
                           "        name: istio-system\n"
                           "        colour: red\n"
                           "        override:\n"
                           "        - fieldPath: metadata.labels['topology.istio.io/network']\n"
                           "          value: {staticValue: west-network}\n"
                           "        - fieldPath: spec.replicas\n"
                           "          value: {staticValue: 3, fromSecret: x}\n"),
                     RC_OK);
    assert_int_equal(f->pol.noverrides, 2);
    assert_string_equal(f->pol.overrides[0].topology_value, "a");
    assert_string_equal(f->pol.overrides[0].kind, "Namespace");
    assert_null(f->pol.overrides[0].ns);
    assert_null(f->pol.overrides[0].api_version);
    assert_string_equal(f->pol.overrides[0].value_json, "\"west-network\"");
    assert_string_equal(f->pol.overrides[1].value_json, "3");
    assert_int_equal(f->nw, 2); /* colour, fromSecret */
    assert_non_null(strstr(f->w[0], "colour"));
    assert_non_null(strstr(f->w[1], "fromSecret"));
    /* a bad fieldPath is an error at its line */
    assert_int_equal(parse(f, "p.yaml",
                           HEAD NSALL RSALL "  spreadConstraints:\n"
                                            "    overrides:\n"
                                            "    - topologyValue: a\n"
                                            "      resources:\n"
                                            "      - kind: Namespace\n"
                                            "        name: x\n"
                                            "        override:\n"
                                            "        - fieldPath: spec..x\n"
                                            "          value: {staticValue: 1}\n"),
                     RC_EINVALID);
    assert_non_null(strstr(f->err.msg, "p.yaml:14:"));
    /* applying: missing mappings are made, list items must exist, nothing half-done */
    o = cJSON_Parse(
        "{\"metadata\":{\"name\":\"n\"},\"spec\":{\"c\":[{\"env\":[{\"value\":\"a\"}]}]}}");
    assert_int_equal(rd_override_apply(o, "metadata.labels['a.b/c']", "\"v\"", &err), RC_OK);
    assert_int_equal(rd_override_apply(o, "spec.c[0].env[0].value", "\"b\"", &err), RC_OK);
    assert_int_equal(rd_override_apply(o, "spec.c[1].image", "\"x\"", &err), RC_EINVALID);
    assert_non_null(strstr(err.msg, "no item [1]"));
    assert_int_equal(rd_override_apply(o, "spec.new.deeper[0]", "1", &err), RC_EINVALID);
    assert_int_equal(rd_override_apply(o, "metadata.name.x", "1", &err), RC_EINVALID);
    text = cJSON_PrintUnformatted(o);
    assert_string_equal(text, "{\"metadata\":{\"name\":\"n\",\"labels\":{\"a.b/c\":\"v\"}},"
                              "\"spec\":{\"c\":[{\"env\":[{\"value\":\"b\"}]}]}}");
    free(text);
    cJSON_Delete(o);
    assert_int_equal(rd_override_check_path("a[\"k\"].b[2]", &err), RC_OK);
    assert_int_equal(rd_override_check_path("a[x]", &err), RC_EINVALID);
    assert_int_equal(rd_override_check_path("a.", &err), RC_EINVALID);
    assert_int_equal(rd_override_check_path("", &err), RC_EINVALID);
}

#define HEAD_ANN(ann)                                                                              \
    "apiVersion: policy.elotl.co/v1alpha1\nkind: SchedulePolicy\nmetadata:\n  name: p\n"           \
    "  annotations: {" ann "}\nspec:\n"

static void test_rd_policy__replacement_annotations(void **state)
{
    struct fx *f = *state;

    assert_int_equal(parse(f, "p.yaml", HEAD NSALL RSALL), RC_OK);
    assert_int_equal(f->pol.replace_when_full, 0);
    assert_int_equal(f->pol.replace_unreachable_after, 0);
    assert_int_equal(parse(f, "p.yaml",
                           HEAD_ANN("rightplace.dev/replace-when-full: 'true', "
                                    "rightplace.dev/replace-unreachable-after: 5m, "
                                    "rightplace.dev/replce: x, other.io/x: z") NSALL RSALL),
                     RC_OK);
    assert_int_equal(f->pol.replace_when_full, 1);
    assert_int_equal(f->pol.replace_unreachable_after, 300);
    assert_int_equal(f->nw, 1); /* the typo */
    assert_non_null(strstr(f->w[0], "rightplace.dev/replce"));
    assert_int_equal(
        parse(f, "p.yaml", HEAD_ANN("rightplace.dev/replace-when-full: 'yes'") NSALL RSALL),
        RC_EINVALID);
    assert_int_equal(
        parse(f, "p.yaml", HEAD_ANN("rightplace.dev/replace-unreachable-after: 0s") NSALL RSALL),
        RC_EINVALID);
    assert_int_equal(
        parse(f, "p.yaml", HEAD_ANN("rightplace.dev/replace-unreachable-after: 5d") NSALL RSALL),
        RC_EINVALID);
    assert_non_null(strstr(f->err.msg, "p.yaml:5:"));
}

static void test_rd_policy__digest_follows_the_spec(void **state)
{
    struct fx *f = *state;
    const char *d1, *d2, *d3;

    assert_int_equal(parse(f, "p.yaml", HEAD NSALL RSALL "  groupBy: {labelKey: app}\n"), RC_OK);
    d1 = f->pol.digest;
    /* same spec, keys in another order, comments: same digest */
    assert_int_equal(parse(f, "q.yaml",
                           "apiVersion: policy.elotl.co/v1alpha1\nkind: SchedulePolicy\n"
                           "metadata: {name: p, labels: {x: z}}\nspec:\n"
                           "  groupBy: {labelKey: app} # grouped\n" RSALL NSALL),
                     RC_OK);
    d2 = f->pol.digest;
    assert_string_equal(d1, d2);
    assert_int_equal(parse(f, "p.yaml", HEAD NSALL RSALL "  groupBy: {labelKey: tier}\n"), RC_OK);
    d3 = f->pol.digest;
    assert_string_not_equal(d1, d3);
}

static void test_rd_policy__is_policy(void **state)
{
    struct fx *f = *state;

    assert_int_equal(parse(f, "p.yaml",
                           "apiVersion: rightplace.dev/v1alpha1\nkind: SchedulePolicy\n"
                           "metadata: {name: ours}\nspec:\n" NSALL RSALL),
                     RC_OK);
    assert_string_equal(f->pol.name, "ours");
    f->obj.group = "example.com";
    assert_false(rd_is_policy(&f->obj));
    f->obj.group = "policy.elotl.co";
    f->obj.kind = "ScheduleGroup";
    assert_false(rd_is_policy(&f->obj));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(name) cmocka_unit_test_setup_teardown(test_rd_policy__##name, setup, teardown)
        T(every_skyray_policy_loads),
        T(skyray_semantics),
        T(required_fields),
        T(selectors),
        T(spread),
        T(overrides_and_unknown_fields_warn),
        T(overrides),
        T(replacement_annotations),
        T(digest_follows_the_spec),
        T(is_policy),
#undef T
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
