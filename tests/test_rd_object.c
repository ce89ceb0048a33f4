/*
 * test_rd_object.c - the object model (identity, keys, scope, validation of names and
 * labels) and the bad-input corpus in tests/data/bad/, each file of which must be refused
 * with the message and line its first line announces ("# expect: <line>: <substring>").
 */
#include "th.h"

#include "th_inputs.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pl_basics.h"
#include "rc_arena.h"
#include "rc_buf.h"
#include "rc_mem.h"
#include "rd_object.h"
#include "rd_yaml.h"

/* Load one document and describe it; returns the rc of rd_object_init (load must work). */
static int object_from(struct rd_object *o, struct rd_docs **docs, const char *text,
                       struct rc_arena *a, struct rc_err *err)
{
    struct rc_err lerr = RC_ERR_INIT;
    int rc = rd_yaml_load(docs, "o.yaml", text, strlen(text), NULL, NULL, &lerr);

    if (rc != RC_OK)
        print_error("load: %s\n", lerr.msg);
    assert_int_equal(rc, RC_OK);
    assert_int_equal(rd_docs_count(*docs), 1);
    return rd_object_init(o, rd_docs_get(*docs, 0), "o.yaml", (struct rd_pos){0, 0}, *docs, a, err);
}

static void test_rd_object__namespaced_object(void **state)
{
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_err err = RC_ERR_INIT;
    struct rd_docs *d = NULL;
    struct rd_object o;

    (void)state;
    assert_int_equal(object_from(&o, &d,
                                 "# comment\n"
                                 "apiVersion: ray.io/v1\n"
                                 "kind: RayJob\n"
                                 "metadata:\n"
                                 "  name: rayjob-train\n"
                                 "  namespace: rayjob3\n"
                                 "  labels: {z: \"1\", a.example.com/x: \"\", app: train}\n",
                                 &a, &err),
                     RC_OK);
    assert_string_equal(o.api_version, "ray.io/v1");
    assert_string_equal(o.group, "ray.io");
    assert_string_equal(o.version, "v1");
    assert_string_equal(o.kind, "RayJob");
    assert_string_equal(o.ns, "rayjob3");
    assert_string_equal(o.name, "rayjob-train");
    assert_string_equal(o.key, "rayjob3/RayJob/rayjob-train");
    assert_string_equal(o.file, "o.yaml");
    assert_int_equal(o.pos.line, 2);
    assert_int_equal(o.pos.col, 1);
    assert_ptr_equal(o.root, rd_docs_get(d, 0));
    assert_int_equal(o.labels.n, 3);
    assert_string_equal(o.labels.v[0].key, "a.example.com/x"); /* sorted */
    assert_string_equal(o.labels.v[0].value, "");
    assert_string_equal(o.labels.v[1].key, "app");
    assert_string_equal(pl_labels_get(&o.labels, "z"), "1");
    rd_docs_free(d);
    rc_arena_release(&a);
}

static void test_rd_object__default_namespace_and_core_group(void **state)
{
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_err err = RC_ERR_INIT;
    struct rd_docs *d = NULL;
    struct rd_object o;

    (void)state;
    assert_int_equal(
        object_from(&o, &d, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\n", &a, &err),
        RC_OK);
    assert_string_equal(o.group, "");
    assert_string_equal(o.version, "v1");
    assert_string_equal(o.ns, "default");
    assert_string_equal(o.key, "default/ConfigMap/cm");
    assert_int_equal(o.labels.n, 0);
    rd_docs_free(d);
    rc_arena_release(&a);
}

static void test_rd_object__cluster_scoped_objects(void **state)
{
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_err err = RC_ERR_INIT;
    struct rd_docs *d = NULL;
    struct rd_object o;

    (void)state;
    /* a namespace on a cluster-scoped object is ignored, as the API server does */
    assert_int_equal(object_from(&o, &d,
                                 "apiVersion: policy.elotl.co/v1alpha1\nkind: SchedulePolicy\n"
                                 "metadata: {name: p, namespace: ignored}\n",
                                 &a, &err),
                     RC_OK);
    assert_null(o.ns);
    assert_string_equal(o.key, "SchedulePolicy/p");
    rd_docs_free(d);
    assert_int_equal(object_from(&o, &d,
                                 "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\n"
                                 "metadata: {name: \"system:auth-delegator\"}\n",
                                 &a, &err),
                     RC_OK);
    assert_string_equal(o.key, "ClusterRole/system:auth-delegator");
    rd_docs_free(d);

    assert_true(rd_kind_is_cluster_scoped("", "Namespace"));
    assert_true(rd_kind_is_cluster_scoped(NULL, "Node"));
    assert_true(rd_kind_is_cluster_scoped("", "PersistentVolume"));
    assert_true(rd_kind_is_cluster_scoped("apiextensions.k8s.io", "CustomResourceDefinition"));
    assert_true(rd_kind_is_cluster_scoped("storage.k8s.io", "StorageClass"));
    assert_true(rd_kind_is_cluster_scoped("scheduling.k8s.io", "PriorityClass"));
    assert_true(rd_kind_is_cluster_scoped("networking.k8s.io", "IngressClass"));
    assert_true(rd_kind_is_cluster_scoped("node.k8s.io", "RuntimeClass"));
    assert_true(
        rd_kind_is_cluster_scoped("admissionregistration.k8s.io", "MutatingWebhookConfiguration"));
    assert_true(rd_kind_is_cluster_scoped("apiregistration.k8s.io", "APIService"));
    assert_true(rd_kind_is_cluster_scoped("storage.k8s.io", "CSIDriver"));
    assert_true(rd_kind_is_cluster_scoped("rightplace.dev", "Cluster"));
    assert_true(rd_kind_is_cluster_scoped("rightplace.dev", "SchedulePolicy"));
    assert_false(
        rd_kind_is_cluster_scoped("cluster.x-k8s.io", "Cluster")); /* Cluster API: namespaced */
    assert_false(rd_kind_is_cluster_scoped("", "Pod"));
    assert_false(rd_kind_is_cluster_scoped("ray.io", "RayCluster"));
    assert_false(rd_kind_is_cluster_scoped("", NULL));
    rc_arena_release(&a);
}

static void test_rd_object__validators(void **state)
{
    struct rc_err err = RC_ERR_INIT;
    char long63[64], long64[65], long254[255];

    (void)state;
    memset(long63, 'a', 63);
    long63[63] = '\0';
    memset(long64, 'a', 64);
    long64[64] = '\0';
    memset(long254, 'a', 254);
    long254[254] = '\0';

    assert_int_equal(rd_validate_dns_label("a", "n", &err), RC_OK);
    assert_int_equal(rd_validate_dns_label("a-1", "n", &err), RC_OK);
    assert_int_equal(rd_validate_dns_label(long63, "n", &err), RC_OK);
    assert_int_equal(rd_validate_dns_label(long64, "n", &err), RC_EINVALID);
    assert_int_equal(rd_validate_dns_label("-a", "n", &err), RC_EINVALID);
    assert_int_equal(rd_validate_dns_label("a-", "n", &err), RC_EINVALID);
    assert_int_equal(rd_validate_dns_label("A", "n", &err), RC_EINVALID);
    assert_int_equal(rd_validate_dns_label("a.b", "namespace", &err), RC_EINVALID);
    assert_non_null(strstr(err.msg, "invalid namespace 'a.b': not a DNS-1123 label"));
    assert_int_equal(rd_validate_dns_label("", "n", &err), RC_EINVALID);

    assert_int_equal(rd_validate_subdomain("a.b-c.d", "n", &err), RC_OK);
    assert_int_equal(rd_validate_subdomain(long63, "n", &err), RC_OK);
    assert_int_equal(rd_validate_subdomain(long254, "n", &err), RC_EINVALID);
    assert_int_equal(rd_validate_subdomain("a..b", "n", &err), RC_EINVALID);
    assert_int_equal(rd_validate_subdomain(".a", "n", &err), RC_EINVALID);
    assert_int_equal(rd_validate_subdomain("a.-b", "n", &err), RC_EINVALID);
    assert_int_equal(rd_validate_subdomain("a_b", "name", &err), RC_EINVALID);
    assert_non_null(strstr(err.msg, "invalid name 'a_b': not a DNS-1123 subdomain"));

    assert_int_equal(rd_validate_label_key("app", &err), RC_OK);
    assert_int_equal(rd_validate_label_key("App_1.x-y", &err), RC_OK);
    assert_int_equal(rd_validate_label_key("kubernetes.io/metadata.name", &err), RC_OK);
    assert_int_equal(rd_validate_label_key("rightplace.dev/unit", &err), RC_OK);
    assert_int_equal(rd_validate_label_key(long63, &err), RC_OK);
    assert_int_equal(rd_validate_label_key(long64, &err), RC_EINVALID);
    assert_int_equal(rd_validate_label_key("", &err), RC_EINVALID);
    assert_int_equal(rd_validate_label_key("/a", &err), RC_EINVALID);
    assert_int_equal(rd_validate_label_key("a/", &err), RC_EINVALID);
    assert_int_equal(rd_validate_label_key("a/b/c", &err), RC_EINVALID);
    assert_int_equal(rd_validate_label_key("_a", &err), RC_EINVALID);
    assert_int_equal(rd_validate_label_key("UPPER.io/a", &err), RC_EINVALID);
    assert_non_null(strstr(err.msg, "the prefix must be a DNS-1123 subdomain"));

    assert_int_equal(rd_validate_label_value("", &err), RC_OK);
    assert_int_equal(rd_validate_label_value("v1.2_3-X", &err), RC_OK);
    assert_int_equal(rd_validate_label_value(long63, &err), RC_OK);
    assert_int_equal(rd_validate_label_value(long64, &err), RC_EINVALID);
    assert_int_equal(rd_validate_label_value("a b", &err), RC_EINVALID);
    assert_int_equal(rd_validate_label_value("-a", &err), RC_EINVALID);
    assert_int_equal(rd_validate_label_value("a/b", &err), RC_EINVALID);
    assert_string_equal(err.msg, "invalid label value 'a/b': at most 63 of A-Z, a-z, 0-9, '-', "
                                 "'_', '.', alphanumeric at both ends");
}

static void test_rd_object__err_at_names_the_node(void **state)
{
    struct rc_err err = RC_ERR_INIT;
    struct rd_docs *d = NULL;
    const char *text = "a:\n  b: [1, 2]\n";
    const cJSON *b;
    cJSON *loose = cJSON_CreateObject();

    (void)state;
    assert_int_equal(rd_yaml_load(&d, "x/y.yaml", text, strlen(text), NULL, NULL, &err), RC_OK);
    b = cJSON_GetObjectItem(cJSON_GetObjectItem(rd_docs_get(d, 0), "a"), "b");
    assert_int_equal(
        rd_err_at(&err, RC_EINVALID, d, cJSON_GetArrayItem(b, 1), "bad %s '%d'", "item", 2),
        RC_EINVALID);
    assert_string_equal(err.msg, "x/y.yaml:2:10: bad item '2'");
    assert_int_equal(err.code, RC_EINVALID);
    rd_err_at(&err, RC_ERROR, d, loose, "no position");
    assert_string_equal(err.msg, "x/y.yaml: no position");
    rd_err_at(&err, RC_ERROR, NULL, loose, "no docs");
    assert_string_equal(err.msg, "no docs");
    cJSON_Delete(loose);
    rd_docs_free(d);
}

static void test_rd_object__without_docs_uses_document_position(void **state)
{
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_err err = RC_ERR_INIT;
    struct rd_object o;
    cJSON *root =
        cJSON_Parse("{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"B\"}}");

    (void)state;
    assert_int_equal(rd_object_init(&o, root, "mem.yaml", (struct rd_pos){7, 1}, NULL, &a, &err),
                     RC_EINVALID);
    assert_non_null(strstr(err.msg, "mem.yaml:7:1: invalid metadata.name 'B'"));
    assert_null(o.key); /* zeroed on error */
    cJSON_Delete(root);
    rc_arena_release(&a);
}

/* ${VAR} -> "x" (the skyray files are templates) */
static char *substitute(const char *s)
{
    static const char *const any_x[] = {"*=x", NULL};

    return th_inputs_subst(s, any_x);
}

static void objects_in_dir(const char *dir, int *n)
{
    DIR *dh = opendir(dir);
    struct dirent *de;

    assert_non_null(dh);
    while ((de = readdir(dh))) {
        char path[1024];
        size_t len = strlen(de->d_name);
        if (de->d_name[0] == '.')
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
        if (len > 5 && strcmp(de->d_name + len - 5, ".yaml") == 0) {
            struct rc_buf b = RC_BUF_INIT;
            struct rc_err err = RC_ERR_INIT;
            struct rc_arena a = RC_ARENA_INIT;
            struct rd_docs *d = NULL;
            char *text;
            assert_int_equal(rc_buf_read_file(&b, path, &err), RC_OK);
            text = substitute(b.ptr);
            assert_int_equal(rd_yaml_load(&d, path, text, strlen(text), NULL, NULL, &err), RC_OK);
            for (size_t i = 0; i < rd_docs_count(d); i++) {
                struct rd_object o;
                int rc =
                    rd_object_init(&o, rd_docs_get(d, i), path, (struct rd_pos){0, 0}, d, &a, &err);
                if (rc != RC_OK)
                    print_error("%s\n", err.msg);
                assert_int_equal(rc, RC_OK);
                assert_non_null(o.key);
                (*n)++;
            }
            rd_docs_free(d);
            free(text);
            rc_buf_release(&b);
            rc_arena_release(&a);
        } else if (!strchr(de->d_name, '.')) {
            objects_in_dir(path, n);
        }
    }
    closedir(dh);
}

static void test_rd_object__skyray_objects_are_valid(void **state)
{
    int n = 0;

    (void)state;
    objects_in_dir(RP_SOURCE_DIR "/tests/data/skyray", &n);
    assert_true(n >= 26);
}

/* ==== the bad-input corpus ==== */

/* Load + describe every document; returns the first error. */
static int load_objects(const char *name, const char *text, size_t len,
                        const struct rd_yaml_limits *lim, struct rc_err *err)
{
    struct rc_arena a = RC_ARENA_INIT;
    struct rd_docs *d = NULL;
    int rc = rd_yaml_load(&d, name, text, len, lim, NULL, err);

    for (size_t i = 0; rc == RC_OK && i < rd_docs_count(d); i++) {
        struct rd_object o;
        rc = rd_object_init(&o, rd_docs_get(d, i), name, (struct rd_pos){0, 0}, d, &a, err);
    }
    rd_docs_free(d);
    rc_arena_release(&a);
    return rc;
}

static void test_rd_object__bad_corpus_is_refused(void **state)
{
    const char *dir = RP_SOURCE_DIR "/tests/data/bad";
    DIR *dh = opendir(dir);
    struct dirent *de;
    int n = 0;

    (void)state;
    assert_non_null(dh);
    while ((de = readdir(dh))) {
        char path[1024], name[300], want_at[400];
        struct rc_buf b = RC_BUF_INIT;
        struct rc_err err = RC_ERR_INIT;
        const char *want;
        char *nl;
        long line;
        size_t len = strlen(de->d_name);

        if (len < 6 || strcmp(de->d_name + len - 5, ".yaml") != 0)
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
        snprintf(name, sizeof(name), "bad/%s", de->d_name);
        assert_int_equal(rc_buf_read_file(&b, path, &err), RC_OK);
        /* "# expect: <line>: <substring>" */
        assert_memory_equal(b.ptr, "# expect: ", 10);
        line = strtol(b.ptr + 10, &nl, 10);
        assert_true(line > 0 && nl[0] == ':' && nl[1] == ' ');
        want = nl + 2;
        nl = strchr(want, '\n');
        assert_non_null(nl);
        *nl = '\0';
        snprintf(want_at, sizeof(want_at), "%s:%ld:", name, line);
        *nl = '\n';
        assert_int_equal(load_objects(name, b.ptr, b.len, NULL, &err), RC_EINVALID);
        *nl = '\0';
        if (!strstr(err.msg, want_at) || !strstr(err.msg, want))
            print_error("%s: got '%s', want '%s' and '%s'\n", de->d_name, err.msg, want_at, want);
        assert_non_null(strstr(err.msg, want_at));
        assert_non_null(strstr(err.msg, want));
        assert_memory_equal(err.msg, want_at, strlen(want_at)); /* the place comes first */
        rc_buf_release(&b);
        n++;
    }
    closedir(dh);
    assert_true(n >= 20);
}

static void test_rd_object__deep_nesting_refused(void **state)
{
    struct rc_buf b = RC_BUF_INIT;
    struct rc_err err = RC_ERR_INIT;

    (void)state;
    rc_buf_puts(&b, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: deep}\ndata:\n  x: ", NULL);
    for (int i = 0; i < 100000; i++)
        rc_buf_putc(&b, '[', NULL);
    assert_int_equal(load_objects("deep.yaml", b.ptr, b.len, NULL, &err), RC_EINVALID);
    assert_string_equal(err.msg, "deep.yaml:5:68: nesting deeper than 64 levels");
    rc_buf_release(&b);
}

static void test_rd_object__huge_scalar_refused(void **state)
{
    size_t big = 50u << 20;
    const char *head = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: big}\ndata:\n  x: ";
    size_t hl = strlen(head);
    char *text = rc_xmalloc(hl + big + 2);
    struct rc_err err = RC_ERR_INIT;

    (void)state;
    memcpy(text, head, hl);
    memset(text + hl, 'x', big);
    memcpy(text + hl + big, "\n", 2);
    assert_int_equal(load_objects("big.yaml", text, hl + big + 1, NULL, &err), RC_EINVALID);
    assert_non_null(strstr(err.msg, "big.yaml:1:1: input of "));
    assert_non_null(strstr(err.msg, "is larger than the limit of 8388608 bytes"));
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rd_object__namespaced_object),
        cmocka_unit_test(test_rd_object__default_namespace_and_core_group),
        cmocka_unit_test(test_rd_object__cluster_scoped_objects),
        cmocka_unit_test(test_rd_object__validators),
        cmocka_unit_test(test_rd_object__err_at_names_the_node),
        cmocka_unit_test(test_rd_object__without_docs_uses_document_position),
        cmocka_unit_test(test_rd_object__skyray_objects_are_valid),
        cmocka_unit_test(test_rd_object__bad_corpus_is_refused),
        cmocka_unit_test(test_rd_object__deep_nesting_refused),
        cmocka_unit_test(test_rd_object__huge_scalar_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
