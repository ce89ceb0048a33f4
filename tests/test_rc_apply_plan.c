/*
 * test_rc_apply_plan.c - the pure parts of apply: the directory diff, the apply and delete
 * order, and the note.
 */
#include "th.h"

#include <string.h>

#include "rc_apply.h"

#define F(p, d)                                                                                    \
    {                                                                                              \
        p, d, sizeof(d) - 1                                                                        \
    }

static const char NS_A[] = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: a\n";
static const char NS_B[] = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: b\n";
static const char CRD[] = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n"
                          "metadata:\n  name: rayjobs.ray.io\n";
static const char CM1[] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n"
                          "  namespace: a\ndata:\n  k: v1\n";
static const char CM2[] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n"
                          "  namespace: a\ndata:\n  k: v2\n";
static const char JOB[] = "apiVersion: ray.io/v1\nkind: RayJob\nmetadata:\n  name: j\n"
                          "  namespace: b\nspec: {}\n";
static const char KUST[] = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
                           "resources: []\n";

static void test_rc_apply_plan__new_cluster_orders_namespaces_and_crds_first(void **state)
{
    struct rc_apply_file nf[] = {
        F("clusters/x/_cluster/customresourcedefinition.rayjobs.ray.io.yaml", CRD),
        F("clusters/x/_cluster/namespace.a.yaml", NS_A),
        F("clusters/x/_cluster/namespace.b.yaml", NS_B),
        F("clusters/x/a/configmap.c.yaml", CM1),
        F("clusters/x/b/rayjob.j.yaml", JOB),
        F("clusters/x/kustomization.yaml", KUST),
    };
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_err err = RC_ERR_INIT;
    struct rc_apply_plan p;

    (void)state;
    assert_int_equal(rc_apply_plan_make(&p, NULL, 0, nf, 6, 0, &a, &err), RC_OK);
    assert_int_equal(p.napply, 5);
    assert_int_equal(p.ndelete, 0);
    assert_string_equal(p.apply[0].key, "Namespace/a");
    assert_int_equal(p.apply[0].stage, RC_APPLY_STAGE_NAMESPACE);
    assert_string_equal(p.apply[1].key, "Namespace/b");
    assert_string_equal(p.apply[2].key, "CustomResourceDefinition/rayjobs.ray.io");
    assert_int_equal(p.apply[2].stage, RC_APPLY_STAGE_CRD);
    assert_string_equal(p.apply[3].key, "a/ConfigMap/c");
    assert_string_equal(p.apply[4].key, "b/RayJob/j");
    assert_string_equal(p.apply[4].api_version, "ray.io/v1");
    assert_non_null(p.apply[4].obj);
    assert_null(p.apply[0].ns);
    rc_apply_plan_release(&p);
    rc_arena_release(&a);
}

static void test_rc_apply_plan__only_changes_and_removals(void **state)
{
    struct rc_apply_file of[] = {
        F("clusters/x/_cluster/namespace.a.yaml", NS_A),
        F("clusters/x/_cluster/namespace.b.yaml", NS_B),
        F("clusters/x/a/configmap.c.yaml", CM1),
        F("clusters/x/b/rayjob.j.yaml", JOB),
        F("clusters/x/kustomization.yaml", KUST),
    };
    struct rc_apply_file nf[] = {
        F("clusters/x/_cluster/namespace.a.yaml", NS_A),
        F("clusters/x/a/configmap.c.yaml", CM2),
        F("clusters/x/kustomization.yaml", "resources: [a]\n"),
    };
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_err err = RC_ERR_INIT;
    struct rc_apply_plan p;

    (void)state;
    assert_int_equal(rc_apply_plan_make(&p, of, 5, nf, 3, 0, &a, &err), RC_OK);
    assert_int_equal(p.napply, 1);
    assert_string_equal(p.apply[0].key, "a/ConfigMap/c");
    /* deletions: the rest before Namespaces; kustomization.yaml never */
    assert_int_equal(p.ndelete, 2);
    assert_string_equal(p.del[0].key, "b/RayJob/j");
    assert_null(p.del[0].obj);
    assert_string_equal(p.del[1].key, "Namespace/b");
    rc_apply_plan_release(&p);

    /* the same trees: nothing */
    assert_int_equal(rc_apply_plan_make(&p, of, 5, of, 5, 0, &a, &err), RC_OK);
    assert_int_equal(p.napply, 0);
    assert_int_equal(p.ndelete, 0);
    rc_apply_plan_release(&p);

    /* resync: every object again, removals still deleted */
    assert_int_equal(rc_apply_plan_make(&p, of, 5, nf, 3, 1, &a, &err), RC_OK);
    assert_int_equal(p.napply, 2);
    assert_string_equal(p.apply[0].key, "Namespace/a");
    assert_int_equal(p.ndelete, 2);
    rc_apply_plan_release(&p);
    rc_arena_release(&a);
}

static void test_rc_apply_plan__broken_file_is_an_error(void **state)
{
    struct rc_apply_file two[] = {F("clusters/x/a/two.yaml", "apiVersion: v1\nkind: ConfigMap\n"
                                                             "metadata: {name: a}\n---\n"
                                                             "apiVersion: v1\nkind: ConfigMap\n"
                                                             "metadata: {name: b}\n")};
    struct rc_apply_file noname[] = {F("clusters/x/a/n.yaml", "apiVersion: v1\nkind: ConfigMap\n")};
    struct rc_apply_file bad[] = {F("clusters/x/a/b.yaml", "a: [\n")};
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_err err = RC_ERR_INIT;
    struct rc_apply_plan p;

    (void)state;
    assert_int_equal(rc_apply_plan_make(&p, NULL, 0, two, 1, 0, &a, &err), RC_EINVALID);
    assert_non_null(strstr(err.msg, "clusters/x/a/two.yaml: holds 2 objects"));
    assert_int_equal(rc_apply_plan_make(&p, NULL, 0, noname, 1, 0, &a, &err), RC_EINVALID);
    assert_non_null(strstr(err.msg, "metadata.name"));
    assert_int_equal(rc_apply_plan_make(&p, NULL, 0, bad, 1, 0, &a, &err), RC_EINVALID);
    assert_non_null(strstr(err.msg, "clusters/x/a/b.yaml:"));
    /* a broken removed file is skipped, not an error */
    assert_int_equal(rc_apply_plan_make(&p, bad, 1, NULL, 0, 0, &a, &err), RC_OK);
    assert_int_equal(p.ndelete, 0);
    rc_arena_release(&a);
}

static void test_rc_apply_plan__note_format(void **state)
{
    struct rc_apply_failure f[] = {{"apply b/RayJob/j", "admission webhook denied the request"}};
    struct rc_apply_result r[] = {
        {"a", RC_APPLY_DONE, 3, 1, 0, NULL, 0, NULL},
        {"b", RC_APPLY_FAILED, 2, 0, 0, NULL, 1, f},
        {"c", RC_APPLY_UNREACHABLE, 0, 0, 0, "connection refused", 0, NULL},
        {"d", RC_APPLY_UP_TO_DATE, 0, 0, 0, NULL, 0, NULL},
        {"e", RC_APPLY_DONE, 0, 0, 2, NULL, 0, NULL},
    };
    struct rc_buf b = RC_BUF_INIT;
    struct rc_err err = RC_ERR_INIT;

    (void)state;
    assert_int_equal(
        rc_apply_note_format(&b, "0123456789012345678901234567890123456789", r, 5, &err), RC_OK);
    assert_string_equal(b.ptr,
                        "rightplace apply 0123456789012345678901234567890123456789\n"
                        "\n"
                        "cluster a: applied 3, deleted 1\n"
                        "cluster b: incomplete: applied 2, failed 1, deleted 0\n"
                        "  failed: apply b/RayJob/j: admission webhook denied the request\n"
                        "cluster c: unreachable: connection refused; applied 0, deleted 0\n"
                        "cluster d: up to date\n"
                        "cluster e: applied 0, deleted 0, kept 2 not managed by rightplace\n");
    rc_buf_release(&b);
}

/* Two writers' notes on one commit: both survive, one block per cluster, whatever the
 * number of merges; an "up to date" block never replaces news. */
static void test_rc_apply_plan__note_merge(void **state)
{
    static const char head[] = "rightplace apply 0123456789012345678901234567890123456789\n\n";
    struct rc_buf b = RC_BUF_INIT, c = RC_BUF_INIT;
    struct rc_err err = RC_ERR_INIT;
    const char *a_note = "rightplace apply 0123456789012345678901234567890123456789\n\n"
                         "cluster a: applied 3, deleted 1\n"
                         "cluster b: incomplete: applied 2, failed 1, deleted 0\n"
                         "  failed: apply b/RayJob/j: denied\n"
                         "cluster c: up to date\n";
    const char *b_note = "rightplace apply 0123456789012345678901234567890123456789\n\n"
                         "cluster a: up to date\n"
                         "cluster b: applied 1, deleted 0\n"
                         "cluster c: applied 4, deleted 0\n"
                         "cluster d: unreachable: connection refused; applied 0, deleted 0\n";

    (void)state;
    assert_int_equal(rc_apply_note_merge(&b, NULL, a_note, &err), RC_OK);
    assert_string_equal(b.ptr, a_note);
    rc_buf_reset(&b);
    assert_int_equal(rc_apply_note_merge(&b, a_note, b_note, &err), RC_OK);
    assert_non_null(strstr(b.ptr, head));
    assert_ptr_equal(strstr(b.ptr, head), b.ptr);
    assert_string_equal(b.ptr + strlen(head),
                        "cluster a: applied 3, deleted 1\n"
                        "cluster b: applied 1, deleted 0\n"
                        "cluster c: applied 4, deleted 0\n"
                        "cluster d: unreachable: connection refused; applied 0, deleted 0\n");
    /* merging again changes nothing: bounded */
    assert_int_equal(rc_apply_note_merge(&c, b.ptr, b_note, &err), RC_OK);
    assert_string_equal(c.ptr, b.ptr);
    /* a note that is not rightplace's is kept above */
    rc_buf_reset(&c);
    assert_int_equal(rc_apply_note_merge(&c, "hand-written\n", a_note, &err), RC_OK);
    assert_ptr_equal(strstr(c.ptr, "hand-written\n"), c.ptr);
    assert_non_null(strstr(c.ptr, "cluster a: applied 3, deleted 1\n"));
    rc_buf_release(&b);
    rc_buf_release(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rc_apply_plan__new_cluster_orders_namespaces_and_crds_first),
        cmocka_unit_test(test_rc_apply_plan__only_changes_and_removals),
        cmocka_unit_test(test_rc_apply_plan__broken_file_is_an_error),
        cmocka_unit_test(test_rc_apply_plan__note_format),
        cmocka_unit_test(test_rc_apply_plan__note_merge),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
