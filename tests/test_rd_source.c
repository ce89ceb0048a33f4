/*
 * test_rd_source.c - the Load step over a set of in-memory files: classification, sorting,
 * namespaces, all-or-nothing files, duplicates, warnings, determinism.
 */
#include "th.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pl_basics.h"
#include "rc_arena.h"
#include "rd_object.h"
#include "rc_buf.h"
#include "rd_source.h"
#include "th_inputs.h"

#define F(p, text)                                                                                 \
    {                                                                                              \
        p, text, sizeof(text) - 1                                                                  \
    }

static const char fleet[] =
    "apiVersion: rightplace.dev/v1alpha1\n"
    "kind: Cluster\n"
    "metadata: {name: static-cluster, labels: {cluster.class: dev}}\n"
    "spec:\n"
    "  nodes: [{name: node, count: 2, allocatable: {cpu: 8, memory: 32Gi}}]\n"
    "---\n"
    "apiVersion: rightplace.dev/v1alpha1\n"
    "kind: Cluster\n"
    "metadata: {name: dynamic-cluster}\n"
    "spec:\n"
    "  kubeconfig: {context: dyn}\n"
    "  autoscaler: {type: luna}\n";

static const char policies[] =
    "apiVersion: policy.elotl.co/v1alpha1\n"
    "kind: SchedulePolicy\n"
    "metadata: {name: zeta}\n"
    "spec:\n"
    "  namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: rayjob1}}\n"
    "  resourceSelectors: {labelSelectors: [{matchLabels: {app.kubernetes.io/instance: "
    "rayjob}}]}\n"
    "  groupBy: {labelKey: app.kubernetes.io/instance}\n"
    "---\n"
    "apiVersion: policy.elotl.co/v1alpha1\n"
    "kind: SchedulePolicy\n"
    "metadata: {name: alpha}\n"
    "spec:\n"
    "  namespaceSelector: {matchExpressions: [{key: kubernetes.io/metadata.name, operator: "
    "Exists}]}\n"
    "  resourceSelectors: {labelSelectors: [{matchLabels: {app: rayclustersetup}}]}\n"
    "  spreadConstraints: {spreadMode: Duplicate, clusterAffinity: []}\n";

static const char ns[] = "apiVersion: v1\n"
                         "kind: Namespace\n"
                         "metadata: {name: rayjob1, labels: {app: rayclustersetup}}\n";

static const char web[] = "apiVersion: apps/v1\n"
                          "kind: Deployment\n"
                          "metadata: {name: web, namespace: web}\n"
                          "spec:\n"
                          "  replicas: 2\n"
                          "  template: {spec: {containers: [{name: c, resources: {requests: "
                          "{cpu: 250m}}}]}}\n";

static const char web_again[] = "apiVersion: v1\n"
                                "kind: ConfigMap\n"
                                "metadata: {name: other, namespace: web}\n"
                                "---\n"
                                "apiVersion: apps/v1\n"
                                "kind: Deployment\n"
                                "metadata: {name: web, namespace: web}\n"
                                "spec: {template: {spec: {containers: [{name: c}]}}}\n";

static const char broken[] = "apiVersion: v1\n"
                             "kind: ConfigMap\n"
                             "metadata: {name: fine, namespace: web}\n"
                             "---\n"
                             "apiVersion: v1\n"
                             "kind: Pod\n"
                             "metadata: {name: bad, namespace: web}\n"
                             "spec:\n"
                             "  containers:\n"
                             "  - name: c\n"
                             "    resources: {limits: {cpu: 10Qi}}\n";

static const char bad_yaml[] = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x\n";

static const char bad_cluster[] = "apiVersion: rightplace.dev/v1alpha1\n"
                                  "kind: Cluster\n"
                                  "metadata: {name: broken-cluster}\n"
                                  "spec:\n"
                                  "  autoscaler: {type: sometimes}\n";

static const char bad_policy[] = "apiVersion: policy.elotl.co/v1alpha1\n"
                                 "kind: SchedulePolicy\n"
                                 "metadata: {name: broken-policy}\n"
                                 "spec:\n"
                                 "  resourceSelectors: {labelSelectors: []}\n";

static const char dup_cluster[] = "apiVersion: rightplace.dev/v1alpha1\n"
                                  "kind: Cluster\n"
                                  "metadata: {name: static-cluster}\n";

static const char dupkey[] = "apiVersion: v1\n"
                             "kind: ConfigMap\n"
                             "metadata: {name: twice, namespace: web}\n"
                             "data: {a: '1', a: '2'}\n";

static const char same_file_dup[] = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: s}\n"
                                    "---\n"
                                    "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: s}\n";

struct fx {
    struct rc_arena a;
    struct rd_source src;
    char *train;
    size_t ntrain;
    struct rd_file files[16];
    size_t nfiles;
};

static int setup(void **state)
{
    static const char *const vars[] = {"AWS_ACCESS_KEY_ID=x", "AWS_SECRET_ACCESS_KEY=y", NULL};
    struct fx *f = calloc(1, sizeof(*f));
    char *raw = th_inputs_read("tests/data/skyray/deploy-scripts/ray-job.train.yaml", NULL);
    const struct rd_file files[] = {
        F("clusters/fleet.yaml", fleet),
        F("policies/p.yaml", policies),
        F("apps/ns.yaml", ns),
        {"apps/train.yaml", NULL, 0},
        F("apps/a-web.yaml", web),
        F("apps/web.yaml", web_again),
        F("apps/broken.yaml", broken),
        F("apps/bad-yaml.yml", bad_yaml),
        F("clusters/bad.yaml", bad_cluster),
        F("policies/bad.yaml", bad_policy),
        F("clusters/zz-dup.yaml", dup_cluster),
        F("apps/dupkey.yaml", dupkey),
        F("apps/same.yaml", same_file_dup),
    };

    f->train = th_inputs_subst(raw, vars);
    free(raw);
    f->nfiles = sizeof(files) / sizeof(files[0]);
    memcpy(f->files, files, sizeof(files));
    f->files[3].data = f->train;
    f->files[3].len = strlen(f->train);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    rd_source_release(&f->src);
    rc_arena_release(&f->a);
    free(f->train);
    free(f);
    return 0;
}

static const struct pl_object *object(const struct rd_source *s, const char *key)
{
    for (size_t i = 0; i < s->nobjects; i++) {
        if (!strcmp(s->objects[i].key, key))
            return &s->objects[i];
    }
    return NULL;
}

static const char *error_of(const struct rd_source *s, const char *path)
{
    for (size_t i = 0; i < s->nerrors; i++) {
        if (!strcmp(s->errors[i].path, path))
            return s->errors[i].msg;
    }
    return NULL;
}

static void test_rd_source__loads_a_tree(void **state)
{
    struct fx *f = *state;
    struct rc_err err = RC_ERR_INIT;
    const struct rd_source *s = &f->src;
    const struct pl_object *o;
    const struct rd_object *ro;

    struct rd_file clean[16];
    size_t n = 0;

    /* without the files that duplicate objects (a duplicate breaks both sides) */
    for (size_t i = 0; i < f->nfiles; i++) {
        if (strcmp(f->files[i].path, "apps/web.yaml") &&
            strcmp(f->files[i].path, "clusters/zz-dup.yaml"))
            clean[n++] = f->files[i];
    }
    assert_int_equal(rd_source_load(&f->src, clean, n, &f->a, &err), RC_OK);
    /* clusters, sorted by name, with their connections */
    assert_int_equal(s->nclusters, 2);
    assert_string_equal(s->clusters[0].name, "dynamic-cluster");
    assert_string_equal(s->conns[0].name, "dynamic-cluster");
    assert_int_equal(s->conns[0].live, 1);
    assert_string_equal(s->conns[0].context, "dyn");
    assert_int_equal(s->clusters[0].autoscaler, PL_AUTOSCALER_LUNA);
    assert_string_equal(s->clusters[1].name, "static-cluster");
    assert_int_equal(s->conns[1].live, 0);
    assert_int_equal(s->clusters[1].nnodes, 2);
    /* policies, sorted by name */
    assert_int_equal(s->npolicies, 2);
    assert_string_equal(s->policies[0].name, "alpha");
    assert_string_equal(s->policies[1].name, "zeta");
    assert_string_equal(s->policies[1].file, "policies/p.yaml");
    assert_int_equal(s->policies[1].line, 1);
    assert_int_equal(s->policies[0].line, 9);
    /* workloads sorted by key: Namespace objects are workloads too */
    assert_int_equal(s->nobjects, 5);
    assert_string_equal(s->objects[0].key, "Namespace/rayjob1");
    assert_string_equal(s->objects[1].key, "default/ConfigMap/ray-job-code-train");
    assert_string_equal(s->objects[2].key, "default/RayJob/rayjob-train");
    assert_string_equal(s->objects[3].key, "web/ConfigMap/twice");
    assert_string_equal(s->objects[4].key, "web/Deployment/web");
    for (size_t i = 1; i < s->nobjects; i++)
        assert_true(strcmp(s->objects[i - 1].key, s->objects[i].key) < 0);
    o = object(s, "default/RayJob/rayjob-train");
    assert_non_null(o);
    assert_int_equal(o->npods, 3);
    assert_string_equal(o->file, "apps/train.yaml");
    ro = o->payload;
    assert_non_null(ro);
    /* held packed, not as the loaded tree (rd_pack.h): expanded on demand, whole */
    assert_null(ro->root);
    assert_non_null(ro->packed);
    {
        cJSON *t = NULL;
        assert_int_equal(rd_object_tree(&t, ro, &err), RC_OK);
        assert_string_equal(cJSON_GetObjectItemCaseSensitive(t, "kind")->valuestring, "RayJob");
        assert_non_null(cJSON_GetObjectItemCaseSensitive(t, "spec"));
        cJSON_Delete(t);
    }
    assert_string_equal(ro->kind, "RayJob");
    assert_string_equal(pl_labels_get(&o->labels, "app.kubernetes.io/instance"), "rayjob");
    o = object(s, "web/Deployment/web");
    assert_int_equal(o->replicas, 2);
    assert_string_equal(o->file, "apps/a-web.yaml");
    /* namespaces: named by objects, or Namespace objects with their labels */
    assert_int_equal(s->nnamespaces, 3);
    assert_string_equal(s->namespaces[0].name, "default");
    assert_int_equal(s->namespaces[0].labels.n, 1);
    assert_string_equal(pl_labels_get(&s->namespaces[0].labels, "kubernetes.io/metadata.name"),
                        "default");
    assert_string_equal(s->namespaces[1].name, "rayjob1");
    assert_string_equal(pl_labels_get(&s->namespaces[1].labels, "app"), "rayclustersetup");
    assert_string_equal(pl_labels_get(&s->namespaces[1].labels, "kubernetes.io/metadata.name"),
                        "rayjob1");
    assert_string_equal(s->namespaces[2].name, "web");
}

static void test_rd_source__broken_files_contribute_nothing(void **state)
{
    struct fx *f = *state;
    struct rc_err err = RC_ERR_INIT;
    const struct rd_source *s = &f->src;
    const char *m;

    assert_int_equal(rd_source_load(&f->src, f->files, f->nfiles, &f->a, &err), RC_OK);
    assert_int_equal(s->nerrors, 9);
    /* a duplicate object breaks both files that define it: which one is right cannot be
     * told from the tree, and a new file must not take over an object placed long ago */
    m = error_of(s, "apps/a-web.yaml");
    assert_non_null(m);
    assert_non_null(strstr(m, "duplicate object 'web/Deployment/web' (also in 'apps/web.yaml')"));
    assert_null(object(s, "web/Deployment/web"));
    m = error_of(s, "clusters/fleet.yaml");
    assert_non_null(m);
    assert_non_null(strstr(m, "duplicate object"));
    for (size_t i = 1; i < s->nerrors; i++)
        assert_true(strcmp(s->errors[i - 1].path, s->errors[i].path) < 0);
    /* a bad quantity in the second document: the first (a fine ConfigMap) is dropped too */
    m = error_of(s, "apps/broken.yaml");
    assert_non_null(m);
    assert_non_null(strstr(m, "apps/broken.yaml:11:"));
    assert_non_null(strstr(m, "10Qi"));
    assert_null(object(s, "web/ConfigMap/fine"));
    assert_null(object(s, "web/Pod/bad"));
    m = error_of(s, "apps/bad-yaml.yml");
    assert_non_null(m);
    assert_true(!strncmp(m, "apps/bad-yaml.yml:", 18));
    /* duplicates: the later path is the broken one, and all of it is dropped */
    m = error_of(s, "apps/web.yaml");
    assert_non_null(m);
    assert_non_null(strstr(m, "apps/web.yaml:5:"));
    assert_non_null(strstr(m, "duplicate object 'web/Deployment/web'"));
    assert_non_null(strstr(m, "apps/a-web.yaml"));
    assert_null(object(s, "web/ConfigMap/other"));
    m = error_of(s, "apps/same.yaml");
    assert_non_null(strstr(m, "apps/same.yaml:5:"));
    assert_null(object(s, "default/ConfigMap/s"));
    m = error_of(s, "clusters/zz-dup.yaml");
    assert_non_null(strstr(m, "duplicate object 'Cluster/static-cluster'"));
    /* Cluster and SchedulePolicy errors */
    m = error_of(s, "clusters/bad.yaml");
    assert_non_null(strstr(m, "clusters/bad.yaml:5:"));
    assert_non_null(strstr(m, "'sometimes'"));
    m = error_of(s, "policies/bad.yaml");
    assert_non_null(strstr(m, "policies/bad.yaml:"));
    assert_non_null(strstr(m, "labelSelectors"));
    for (size_t i = 0; i < s->nclusters; i++)
        assert_string_not_equal(s->clusters[i].name, "broken-cluster");
}

static void test_rd_source__warnings(void **state)
{
    struct fx *f = *state;
    struct rc_err err = RC_ERR_INIT;
    const struct rd_source *s = &f->src;
    int ndup = 0, overrides = 0, rayjob = 0;

    assert_int_equal(rd_source_load(&f->src, f->files, f->nfiles, &f->a, &err), RC_OK);
    for (size_t i = 0; i < s->nwarnings; i++) {
        if (!strncmp(s->warnings[i], "apps/dupkey.yaml:4:", 19))
            ndup++;
        if (!strncmp(s->warnings[i], "policies/p.yaml:15:", 19) &&
            strstr(s->warnings[i], "clusterAffinity"))
            overrides++;
        if (!strncmp(s->warnings[i], "apps/train.yaml:", 16)) /* skyray's duplicate key */
            rayjob++;
    }
    assert_int_equal(ndup, 1);
    assert_int_equal(overrides, 1);
    assert_int_equal(rayjob, 1);
    assert_int_equal(s->nwarnings, 3);
}

/* Same files in another order: the same result. */
static void test_rd_source__order_does_not_matter(void **state)
{
    struct fx *f = *state;
    struct rc_err err = RC_ERR_INIT;
    struct rd_source other;
    struct rd_file rev[16];

    for (size_t i = 0; i < f->nfiles; i++)
        rev[i] = f->files[f->nfiles - 1 - i];
    assert_int_equal(rd_source_load(&f->src, f->files, f->nfiles, &f->a, &err), RC_OK);
    assert_int_equal(rd_source_load(&other, rev, f->nfiles, &f->a, &err), RC_OK);
    assert_int_equal(other.nobjects, f->src.nobjects);
    for (size_t i = 0; i < other.nobjects; i++)
        assert_string_equal(other.objects[i].key, f->src.objects[i].key);
    assert_int_equal(other.nerrors, f->src.nerrors);
    for (size_t i = 0; i < other.nerrors; i++)
        assert_string_equal(other.errors[i].msg, f->src.errors[i].msg);
    assert_int_equal(other.nwarnings, f->src.nwarnings);
    for (size_t i = 0; i < other.nwarnings; i++)
        assert_string_equal(other.warnings[i], f->src.warnings[i]);
    assert_int_equal(other.res.n, f->src.res.n);
    for (int i = 0; i < other.res.n; i++)
        assert_string_equal(other.res.name[i], f->src.res.name[i]);
    rd_source_release(&other);
}

static void test_rd_source__contract_violations(void **state)
{
    struct fx *f = *state;
    struct rc_err err = RC_ERR_INIT;
    const struct rd_file twice[] = {F("a.yaml", ns), F("a.yaml", ns)};
    const struct rd_file nopath[] = {{NULL, "x", 1}};

    assert_int_equal(rd_source_load(&f->src, twice, 2, &f->a, &err), RC_EINVALID);
    assert_non_null(strstr(err.msg, "'a.yaml'"));
    rd_source_release(&f->src);
    assert_int_equal(rd_source_load(&f->src, nopath, 1, &f->a, &err), RC_EINVALID);
    rd_source_release(&f->src);
    /* nothing at all is fine */
    assert_int_equal(rd_source_load(&f->src, NULL, 0, &f->a, &err), RC_OK);
    assert_int_equal(f->src.nobjects + f->src.nclusters + f->src.npolicies + f->src.nerrors, 0);
    assert_int_equal(f->src.res.n, 3);
}

/* Every *.yaml under dir (relative to the skyray folder), placeholders filled, appended. */
static void collect(struct rd_file *files, char **texts, size_t *n, size_t max, const char *rel)
{
    static const char *const vars[] = {"RAYCLUSTER_NAMESPACE=rayjob1",
                                       "WORKLOAD_NAMESPACE=ns1",
                                       "WORKLOAD_LABELKEY=app.kubernetes.io/instance",
                                       "WORKLOAD_LABELVAL=rayservice",
                                       "SORTED_CLUSTER_LIST=a, b",
                                       "AWS_ACCESS_KEY_ID=x",
                                       "AWS_SECRET_ACCESS_KEY=y",
                                       "RAY_HEAD_CPU_COUNT=2",
                                       "RAY_HEAD_MEMORY_SIZE=8Gi",
                                       "NUM_REPLICAS=2",
                                       "MIN_REPLICAS=1",
                                       "MAX_REPLICAS=4",
                                       "RAY_WORKER_CPU_COUNT=2",
                                       "RAY_WORKER_MEMORY_SIZE=4Gi",
                                       NULL};
    char dir[4096], sub[1024], data[2048];
    struct dirent *de;
    DIR *d;

    snprintf(dir, sizeof(dir), "%s/tests/data/skyray%s%s", RP_SOURCE_DIR, *rel ? "/" : "", rel);
    d = opendir(dir);
    assert_non_null(d);
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        snprintf(sub, sizeof(sub), "%s%s%s", rel, *rel ? "/" : "", de->d_name);
        if (de->d_type == DT_DIR) {
            collect(files, texts, n, max, sub);
        } else if (strstr(de->d_name, ".yaml")) {
            char *raw;
            assert_true(*n < max);
            snprintf(data, sizeof(data), "tests/data/skyray/%s", sub);
            raw = th_inputs_read(data, NULL);
            texts[*n] = th_inputs_subst(raw, vars);
            free(raw);
            files[*n].path = strdup(sub);
            files[*n].data = texts[*n];
            files[*n].len = strlen(texts[*n]);
            (*n)++;
        }
    }
    closedir(d);
}

static void test_rd_source__every_skyray_file_loads(void **state)
{
    struct fx *f = *state;
    struct rc_err err = RC_ERR_INIT;
    struct rd_file files[64];
    char *texts[64];
    size_t n = 0;
    const struct rd_source *s = &f->src;
    const struct pl_object *o;

    collect(files, texts, &n, 64, "");
    assert_int_equal(n, 26);
    assert_int_equal(rd_source_load(&f->src, files, n, &f->a, &err), RC_OK);
    /* skyray reuses names: the same RayService in two folders, and policies named
     * rayservice-spread-upgrade-policy-<ns> (three files) and rayservice-policy-<ns> (two).
     * A duplicate breaks every file that defines the object. */
    assert_int_equal(s->nerrors, 7);
    assert_string_equal(s->errors[0].path, "deploy-scripts/ray-service.text-summarizer.yaml");
    assert_string_equal(s->errors[1].path,
                        "luna-hot-node-mitigation/ray-service.text-summarizer.cpu.guar.yaml");
    assert_string_equal(s->errors[2].path, "policies/rayservicecapacitypolicy.yaml");
    assert_string_equal(s->errors[3].path, "policies/rayservicensclusterpolicy.yaml");
    assert_string_equal(s->errors[4].path, "policies/rayservicensprioritypolicy.yaml");
    assert_string_equal(s->errors[5].path, "policies/rayservicespreadallpolicy.yaml");
    assert_string_equal(s->errors[6].path, "policies/rayservicespreadpolicy.yaml");
    for (size_t i = 0; i < s->nerrors; i++)
        assert_non_null(strstr(s->errors[i].msg, "duplicate object"));
    assert_int_equal(s->npolicies, 20 - 5);
    assert_int_equal(s->nclusters, 0);
    /* RayJob + ConfigMap, Namespace, the sample RayService, a RayCluster */
    assert_int_equal(s->nobjects, 5);
    o = object(s, "default/RayJob/rayjob-train");
    assert_non_null(o);
    assert_int_equal(o->npods, 3);
    o = object(s, "default/RayCluster/text-summarizer-cluster");
    assert_non_null(o);
    assert_int_equal(o->npods, 2);
    assert_int_equal(o->pods[1].count, 2);
    assert_non_null(object(s, "Namespace/rayjob1"));
    assert_int_equal(s->nnamespaces, 2);
    assert_string_equal(pl_labels_get(&s->namespaces[1].labels, "app"), "rayclustersetup");
    for (size_t i = 0; i < n; i++) {
        free((char *)files[i].path);
        free(texts[i]);
    }
}

/* Memory grows with what placement needs: a parsed file holds its objects packed (about the
 * size of its YAML) and what placement reads, not the loaded trees and their positions. skyray's
 * RayJob file, 7 KB, parsed into a cache. */
static void test_rd_source__holds_about_its_size(void **state)
{
    struct fx *f = *state;
    struct rd_cache *cache = NULL;
    struct rd_load_options lo;
    const char *ids[1] = {"0123456789012345678901234567890123456789"};
    struct rc_err err = RC_ERR_INIT;
    struct rd_source src = RD_SOURCE_INIT;
    size_t len = f->files[3].len;

    memset(&lo, 0, sizeof(lo));
    assert_int_equal(rd_cache_new(&cache), RC_OK);
    lo.ids = ids;
    lo.cache = cache;
    assert_int_equal(rd_source_load_ex(&src, &f->files[3], 1, &lo, &f->a, &err), RC_OK);
    assert_int_equal(src.nerrors, 0);
    assert_int_equal(src.nobjects, 2); /* the RayJob and its ConfigMap */
    assert_int_equal(rd_cache_count(cache), 1);
    /* 0.8 times; 3.7 times by this measure (more in malloc's overhead) with the trees kept */
    assert_true(rd_cache_bytes(cache) < 2 * len);
    /* and the file's arena holds little more than it uses: its objects packed in one buffer
     * of their size, the rest in blocks grown to fit (a reservation by the file's size left
     * a third of it unused) */
    assert_true(rd_cache_held(cache) < rd_cache_bytes(cache) * 5 / 4);
    rd_source_release(&src);
    rd_cache_free(cache);
}

/* A made-up content id for each of n files (at most 16): "000...1", "000...2", ... */
static void fake_ids(const char *ids[16], char idbuf[16][41], size_t n)
{
    for (size_t i = 0; i < n; i++) {
        snprintf(idbuf[i], sizeof(idbuf[i]), "%040zu", i + 1);
        ids[i] = idbuf[i];
    }
}

/* A sweep frees what the loads since the last sweep did not use, and keeps the rest: after a
 * load of every file nothing goes; after a load of one file, the others go. */
static void test_rd_source__sweep_frees_what_was_not_used(void **state)
{
    struct fx *f = *state;
    struct rd_cache *cache = NULL;
    struct rd_load_options lo;
    const char *ids[16];
    char idbuf[16][41];
    struct rc_err err = RC_ERR_INIT;
    struct rd_source out = RD_SOURCE_INIT;

    assert_true(f->nfiles >= 2);
    fake_ids(ids, idbuf, f->nfiles);
    assert_int_equal(rd_cache_new(&cache), RC_OK);
    memset(&lo, 0, sizeof(lo));
    lo.ids = ids;
    lo.cache = cache;
    for (int round = 0; round < 2; round++) {
        assert_int_equal(rd_source_load_ex(&out, f->files, f->nfiles, &lo, &f->a, &err), RC_OK);
        rd_source_release(&out);
        rd_cache_sweep(cache);
        assert_int_equal(rd_cache_count(cache), f->nfiles);
    }
    assert_int_equal(rd_source_load_ex(&out, f->files, 1, &lo, &f->a, &err), RC_OK);
    rd_source_release(&out);
    rd_cache_sweep(cache);
    assert_int_equal(rd_cache_count(cache), 1);
    assert_true(rd_cache_has(cache, ids[0], f->files[0].path, NULL));
    assert_false(rd_cache_has(cache, ids[1], f->files[1].path, NULL));
    /* nothing loaded since: the next sweep frees the last one */
    rd_cache_sweep(cache);
    assert_int_equal(rd_cache_count(cache), 0);
    rd_cache_free(cache);
}

/* rd_cache_prime parses on several threads what the load would parse (and so does
 * rd_cache_prime_start/finish in the background), and the load then parses nothing and gives
 * exactly what a load without priming gives. */
static void test_rd_source__primed_on_threads_loads_the_same(void **state)
{
    struct fx *f = *state;
    struct rd_cache *cache = NULL;
    struct rd_load_options lo;
    const char *ids[16];
    char idbuf[16][41];
    struct rc_err err = RC_ERR_INIT;
    struct rd_source primed = RD_SOURCE_INIT, plain = RD_SOURCE_INIT;
    size_t np = 0;

    fake_ids(ids, idbuf, f->nfiles);
    assert_int_equal(rd_cache_new(&cache), RC_OK);
    {
        /* the first half in the background, while the cache takes the second half */
        size_t h = f->nfiles / 2;
        struct rd_prime_job *job = rd_cache_prime_start(cache, f->files, ids, h, 3);
        assert_int_equal(rd_cache_prime(cache, f->files + h, ids + h, f->nfiles - h, 4, &np),
                         RC_OK);
        assert_true(h > 0);
        assert_false(rd_cache_has(cache, ids[0], f->files[0].path, NULL)); /* not yet */
        rd_cache_prime_finish(cache, job, &np);
    }
    assert_int_equal(np, f->nfiles);
    assert_int_equal(rd_cache_count(cache), f->nfiles);
    np = 0;
    assert_int_equal(rd_cache_prime(cache, f->files, ids, f->nfiles, 4, &np), RC_OK);
    assert_int_equal(np, 0); /* cached: not parsed again */

    memset(&lo, 0, sizeof(lo));
    lo.ids = ids;
    lo.cache = cache;
    assert_int_equal(rd_source_load_ex(&primed, f->files, f->nfiles, &lo, &f->a, &err), RC_OK);
    assert_int_equal(primed.nparsed, 0);
    assert_int_equal(rd_source_load(&plain, f->files, f->nfiles, &f->a, &err), RC_OK);
    assert_int_equal(plain.nparsed, f->nfiles);

    assert_int_equal(primed.nobjects, plain.nobjects);
    for (size_t i = 0; i < plain.nobjects; i++) {
        const struct rd_object *a = primed.objects[i].payload, *b = plain.objects[i].payload;
        assert_string_equal(primed.objects[i].key, plain.objects[i].key);
        assert_int_equal(primed.objects[i].npods, plain.objects[i].npods);
        assert_int_equal(a->packed_len, b->packed_len);
        assert_memory_equal(a->packed, b->packed, a->packed_len);
    }
    assert_int_equal(primed.nerrors, plain.nerrors);
    for (size_t i = 0; i < plain.nerrors; i++)
        assert_string_equal(primed.errors[i].msg, plain.errors[i].msg);
    assert_int_equal(primed.nwarnings, plain.nwarnings);
    for (size_t i = 0; i < plain.nwarnings; i++)
        assert_string_equal(primed.warnings[i], plain.warnings[i]);
    assert_int_equal(primed.npolicies, plain.npolicies);
    assert_int_equal(primed.nclusters, plain.nclusters);
    rd_source_release(&primed);
    rd_source_release(&plain);
    rd_cache_free(cache);
}

static void assert_same_labels(const struct pl_labels *a, const struct pl_labels *b)
{
    assert_int_equal(a->n, b->n);
    for (size_t i = 0; i < a->n; i++) {
        assert_string_equal(a->v[i].key, b->v[i].key);
        assert_string_equal(a->v[i].value, b->v[i].value);
    }
}

static void assert_same_opt(const char *a, const char *b)
{
    assert_int_equal(a == NULL, b == NULL);
    if (a)
        assert_string_equal(a, b);
}

/* Every field of a loaded workload that placement or render reads, the resource amounts by
 * name (each file numbers its own names). */
static void assert_same_object(const struct pl_object *x, const struct rd_source *xs,
                               const struct pl_object *y, const struct rd_source *ys)
{
    const struct rd_object *a = x->payload, *b = y->payload;

    assert_string_equal(x->key, y->key);
    assert_string_equal(x->api_version, y->api_version);
    assert_string_equal(x->kind, y->kind);
    assert_same_opt(x->ns, y->ns);
    assert_string_equal(x->name, y->name);
    assert_same_labels(&x->labels, &y->labels);
    assert_string_equal(x->file, y->file);
    assert_int_equal(x->line, y->line);
    assert_int_equal(x->replicas, y->replicas);
    assert_int_equal(x->split, y->split);
    assert_int_equal(x->parallelism, y->parallelism);
    assert_int_equal(x->completions, y->completions);
    assert_same_opt(x->warning, y->warning);
    assert_same_opt(x->nova_cluster, y->nova_cluster);
    assert_same_opt(x->nova_spread_onto, y->nova_spread_onto);
    assert_int_equal(x->nrefs, y->nrefs);
    for (size_t i = 0; i < x->nrefs; i++) {
        assert_string_equal(x->refs[i].key, y->refs[i].key);
        assert_int_equal(x->refs[i].optional, y->refs[i].optional);
    }
    assert_int_equal(x->npods, y->npods);
    for (size_t i = 0; i < x->npods; i++) {
        const struct pl_pod *p = &x->pods[i], *q = &y->pods[i];
        assert_string_equal(p->role, q->role);
        assert_int_equal(p->count, q->count);
        for (int r = 0; r < PL_RES_MAX; r++) {
            if (p->req.v[r]) {
                int k = pl_resnames_find(&ys->res, xs->res.name[r]);
                assert_true(k >= 0);
                assert_int_equal(p->req.v[r], q->req.v[k]);
            }
        }
        assert_same_labels(&p->node_selector, &q->node_selector);
        assert_int_equal(p->ntolerations, q->ntolerations);
        for (size_t t = 0; t < p->ntolerations; t++) {
            assert_string_equal(p->tolerations[t].key, q->tolerations[t].key);
            assert_int_equal(p->tolerations[t].exists, q->tolerations[t].exists);
            assert_string_equal(p->tolerations[t].value, q->tolerations[t].value);
            assert_string_equal(p->tolerations[t].effect, q->tolerations[t].effect);
        }
        assert_int_equal(p->naffinity, q->naffinity);
        for (size_t t = 0; t < p->naffinity; t++) {
            assert_int_equal(p->affinity[t].n, q->affinity[t].n);
            for (size_t k = 0; k < p->affinity[t].n; k++) {
                const struct pl_requirement *u = &p->affinity[t].req[k],
                                            *v = &q->affinity[t].req[k];
                assert_string_equal(u->key, v->key);
                assert_int_equal(u->op, v->op);
                assert_int_equal(u->nvalues, v->nvalues);
                for (size_t m = 0; m < u->nvalues; m++)
                    assert_string_equal(u->values[m], v->values[m]);
            }
        }
    }
    assert_null(a->root);
    assert_null(b->root);
    assert_string_equal(a->api_version, b->api_version);
    assert_string_equal(a->group, b->group);
    assert_string_equal(a->version, b->version);
    assert_string_equal(a->kind, b->kind);
    assert_same_opt(a->ns, b->ns);
    assert_string_equal(a->name, b->name);
    assert_string_equal(a->key, b->key);
    assert_same_labels(&a->labels, &b->labels);
    assert_string_equal(a->file, b->file);
    assert_int_equal(a->pos.line, b->pos.line);
    assert_int_equal(a->pos.col, b->pos.col);
    assert_int_equal(a->packed_len, b->packed_len);
    assert_memory_equal(a->packed, b->packed, a->packed_len);
}

/* Workloads with every kind of demand, constraint and reference, each file alone and one
 * beside a Cluster (which is loaded from its tree again). */
static const char rich_gpu[] =
    "apiVersion: apps/v1\n"
    "kind: Deployment\n"
    "metadata:\n"
    "  name: gpu\n"
    "  namespace: ml\n"
    "  labels: {team: a, tier: \"1\"}\n"
    "  annotations: {nova.elotl.co/cluster: gpu-east}\n"
    "spec:\n"
    "  replicas: 3\n"
    "  template:\n"
    "    spec:\n"
    "      nodeSelector: {accel: h100, zone: b}\n"
    "      tolerations:\n"
    "      - {key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}\n"
    "      - {key: dedicated, operator: Equal, value: ml}\n"
    "      - {operator: Exists}\n"
    "      affinity:\n"
    "        nodeAffinity:\n"
    "          requiredDuringSchedulingIgnoredDuringExecution:\n"
    "            nodeSelectorTerms:\n"
    "            - matchExpressions:\n"
    "              - {key: zone, operator: In, values: [a, b]}\n"
    "              - {key: spot, operator: DoesNotExist}\n"
    "              - {key: gen, operator: Gt, values: [\"3\"]}\n"
    "            - matchExpressions: [{key: pool, operator: NotIn, values: [old]}]\n"
    "      initContainers:\n"
    "      - {name: i, resources: {requests: {cpu: \"4\", example.com/fpga: \"1\"}}}\n"
    "      containers:\n"
    "      - name: c\n"
    "        envFrom: [{configMapRef: {name: env}}, {secretRef: {name: token, optional: true}}]\n"
    "        resources:\n"
    "          requests: {cpu: 500m, memory: 2Gi}\n"
    "          limits: {nvidia.com/gpu: \"2\", ephemeral-storage: 1Gi}\n"
    "      volumes:\n"
    "      - {name: d, persistentVolumeClaim: {claimName: data}}\n"
    "      - {name: s, secret: {secretName: certs}}\n";
static const char rich_jobs[] =
    "apiVersion: batch/v1\n"
    "kind: Job\n"
    "metadata: {name: sweep, namespace: ml, annotations: {nova.elotl.co/spread-onto: \"a,b\"}}\n"
    "spec:\n"
    "  parallelism: 4\n"
    "  completions: 10\n"
    "  template: {spec: {containers: [{name: c, resources: {requests: {cpu: 1}}}]}}\n"
    "---\n"
    "apiVersion: example.com/v1\n"
    "kind: Trainer\n"
    "metadata: {name: odd, namespace: ml}\n"
    "spec: {template: {spec: {containers: [{name: c}]}}}\n"
    "---\n"
    "apiVersion: rbac.authorization.k8s.io/v1\n"
    "kind: ClusterRole\n"
    "metadata: {name: reader}\n"
    "rules: []\n";
static const char rich_mixed[] =
    "apiVersion: v1\n"
    "kind: ConfigMap\n"
    "metadata: {name: env, namespace: ml}\n"
    "data: {a: b}\n"
    "---\n"
    "apiVersion: rightplace.dev/v1alpha1\n"
    "kind: Cluster\n"
    "metadata: {name: gpu-east}\n"
    "spec:\n"
    "  nodes: [{name: n, count: 2, allocatable: {cpu: 8, memory: 32Gi, example.com/fpga: 2}}]\n";

static const char with_policy[] = "apiVersion: v1\n"
                                  "kind: ConfigMap\n"
                                  "metadata: {name: beside, namespace: ml}\n"
                                  "data: {a: b}\n"
                                  "---\n"
                                  "apiVersion: policy.elotl.co/v1alpha1\n"
                                  "kind: SchedulePolicy\n"
                                  "metadata: {name: beside}\n"
                                  "spec:\n"
                                  "  namespaceSelector: {matchLabels: {team: a}}\n"
                                  "  resourceSelectors: {labelSelectors: [{matchLabels: "
                                  "{app: x}}]}\n";

/* The skyray files and the rich ones above (with_policy too when asked), their ids, a cache
 * that parsed them all and an empty one. */
struct rich {
    struct rd_file files[64];
    char *texts[64];
    const char *ids[64];
    char idbuf[64][41];
    size_t n, ncollected;
    struct rd_cache *cache, *other;
};

static void rich_open(struct rich *r, int with_policy_file)
{
    size_t np = 0;

    memset(r, 0, sizeof(*r));
    collect(r->files, r->texts, &r->n, 60, "");
    r->ncollected = r->n;
    r->files[r->n++] = (struct rd_file)F("rich/gpu.yaml", rich_gpu);
    r->files[r->n++] = (struct rd_file)F("rich/jobs.yaml", rich_jobs);
    r->files[r->n++] = (struct rd_file)F("rich/mixed.yaml", rich_mixed);
    if (with_policy_file)
        r->files[r->n++] = (struct rd_file)F("rich/with-policy.yaml", with_policy);
    fake_ids(r->ids, r->idbuf, r->n);
    assert_int_equal(rd_cache_new(&r->cache), RC_OK);
    assert_int_equal(rd_cache_new(&r->other), RC_OK);
    assert_int_equal(rd_cache_prime(r->cache, r->files, r->ids, r->n, 1, &np), RC_OK);
}

/* imported: r's files loaded through r->other, which holds all but n - exported of them;
 * plain: the same files parsed. Both have the same objects. */
static void load_both(struct rich *r, size_t exported, struct rd_source *imported,
                      struct rd_source *plain, struct rc_arena *a)
{
    struct rd_load_options lo;
    struct rc_err err = RC_ERR_INIT;

    memset(&lo, 0, sizeof(lo));
    lo.ids = r->ids;
    lo.cache = r->other;
    assert_int_equal(rd_source_load_ex(imported, r->files, r->n, &lo, a, &err), RC_OK);
    assert_int_equal(imported->nparsed, r->n - exported);
    assert_int_equal(rd_source_load(plain, r->files, r->n, a, &err), RC_OK);
    assert_int_equal(imported->nobjects, plain->nobjects);
}

static void rich_close(struct rich *r)
{
    rd_cache_free(r->cache);
    rd_cache_free(r->other);
    for (size_t i = 0; i < r->ncollected; i++) {
        free((char *)r->files[i].path);
        free(r->texts[i]);
    }
}

/* A file of workloads alone is taken up from what its parse derived, without its trees: every
 * field of every object is the parse's (the skyray files and the rich ones above). */
static void test_rd_source__import_takes_what_the_parse_derived(void **state)
{
    struct fx *f = *state;
    struct rich r;
    size_t exported = 0;
    struct rd_source imported = RD_SOURCE_INIT, plain = RD_SOURCE_INIT;

    rich_open(&r, 0);
    const struct rd_file *files = r.files;
    const char **ids = r.ids;
    size_t n = r.n;
    struct rd_cache *cache = r.cache, *other = r.other;
    for (size_t i = 0; i < n; i++) {
        struct rc_buf b = RC_BUF_INIT;
        if (rd_cache_export(cache, ids[i], files[i].path, &b) == RC_OK) {
            exported++;
            assert_int_equal(rd_cache_import(other, ids[i], files[i].path, b.ptr, b.len), RC_OK);
        }
        rc_buf_release(&b);
    }
    assert_true(exported > 12);
    /* each entry's arena is one block, exactly as big as what the take-up allocated (the
     * export says how much): nothing held for nothing */
    assert_int_equal(rd_cache_unused(other), 0);
    /* that size is a hint: too small, absurd or missing, the entry loads all the same */
    {
        static const unsigned char hint[][10] = {
            {1, 0}, {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01}, {0}};
        struct rc_buf b = RC_BUF_INIT, alt = RC_BUF_INIT;
        size_t skip = 1; /* the entry's kind: 0, a file that loaded */
        assert_int_equal(rd_cache_export(cache, ids[0], files[0].path, &b), RC_OK);
        assert_int_equal(b.ptr[0], 0);
        while (b.ptr[skip] & 0x80) /* the next number: the take-up's size */
            skip++;
        skip++;
        for (size_t h = 0; h < sizeof(hint) / sizeof(hint[0]); h++) {
            struct rd_cache *scratch = NULL;
            size_t hl = 1;
            while (hint[h][hl - 1] & 0x80)
                hl++;
            rc_buf_reset(&alt);
            rc_buf_add(&alt, b.ptr, 1, NULL);
            rc_buf_add(&alt, hint[h], hl, NULL);
            rc_buf_add(&alt, b.ptr + skip, b.len - skip, NULL);
            assert_int_equal(rd_cache_new(&scratch), RC_OK);
            assert_int_equal(rd_cache_import(scratch, ids[0], files[0].path, alt.ptr, alt.len),
                             RC_OK);
            assert_int_equal(rd_cache_count(scratch), 1);
            if (h < 2) /* a block too small for it, or the default one: room left over */
                assert_true(rd_cache_unused(scratch) > 0);
            rd_cache_free(scratch);
        }
        rc_buf_release(&alt);
        rc_buf_release(&b);
    }
    /* bytes that name what a parse refuses are refused, though they decode: the name that
     * becomes a path, here "a/b" in place of "gpu" in what was derived */
    {
        struct rc_buf b = RC_BUF_INIT;
        struct rd_cache *scratch = NULL;
        unsigned char *at = NULL;
        assert_int_equal(rd_cache_export(cache, ids[n - 3], files[n - 3].path, &b), RC_OK);
        for (size_t k = 0; k + 4 <= b.len; k++) {
            if (!memcmp(b.ptr + k, "\003gpu", 4))
                at = (unsigned char *)b.ptr + k; /* the last one: the derived name */
        }
        assert_non_null(at);
        assert_int_equal(rd_cache_new(&scratch), RC_OK);
        assert_int_equal(rd_cache_import(scratch, ids[n - 3], files[n - 3].path, b.ptr, b.len),
                         RC_OK);
        rd_cache_free(scratch);
        memcpy(at + 1, "a/b", 3);
        assert_int_equal(rd_cache_new(&scratch), RC_OK);
        assert_int_equal(rd_cache_import(scratch, ids[n - 3], files[n - 3].path, b.ptr, b.len),
                         RC_EINVALID);
        rd_cache_free(scratch);
        rc_buf_release(&b);
    }
    load_both(&r, exported, &imported, &plain, &f->a);
    assert_true(plain.nobjects >= 9);
    for (size_t i = 0; i < plain.nobjects; i++)
        assert_same_object(&imported.objects[i], &imported, &plain.objects[i], &plain);
    /* what the rich files hold is there to compare */
    {
        const struct pl_object *o = object(&plain, "ml/Deployment/gpu");
        assert_non_null(o);
        assert_int_equal(o->pods[0].ntolerations, 3);
        assert_int_equal(o->pods[0].naffinity, 2);
        assert_true(o->nrefs >= 4);
        assert_non_null(o->nova_cluster);
        assert_non_null(object(&plain, "ml/Trainer/odd")->warning);
        assert_int_equal(object(&plain, "ml/Job/sweep")->completions, 10);
    }
    assert_int_equal(imported.nwarnings, plain.nwarnings);
    for (size_t i = 0; i < plain.nwarnings; i++)
        assert_string_equal(imported.warnings[i], plain.warnings[i]);
    assert_int_equal(imported.nclusters, plain.nclusters);
    assert_int_equal(imported.nerrors, plain.nerrors);
    rd_source_release(&imported);
    rd_source_release(&plain);
    rich_close(&r);
}

/* Taken up for a pass that is its process's last, a file of workloads leaves its objects'
 * packed manifests in the parse cache's file: read (and checked) when a tree is asked for,
 * and for an export; bytes changed under the pass are an error, never another manifest. */
static void test_rd_source__import_leaves_manifests_in_the_file(void **state)
{
    struct fx *f = *state;
    struct rich r;
    char path[] = "/tmp/rd_payloads_XXXXXX";
    size_t off[64], len[64], lazy = 0, reads, exported = 0;
    struct rd_import v[64];
    struct rc_buf all = RC_BUF_INIT;
    struct rc_err err = RC_ERR_INIT;
    struct rd_source imported = RD_SOURCE_INIT, plain = RD_SOURCE_INIT;
    const struct rd_object *first = NULL;
    struct rd_payload_file *pf;
    int fd;

    rich_open(&r, 1);
    const struct rd_file *files = r.files;
    const char **ids = r.ids;
    size_t n = r.n;
    struct rd_cache *cache = r.cache, *other = r.other;
    /* every export one after another in one file, behind bytes of something else */
    rc_buf_add(&all, "not an entry ", 13, NULL);
    for (size_t i = 0; i < n; i++) { /* a broken file has nothing to export */
        off[i] = all.len;
        if (rd_cache_export(cache, ids[i], files[i].path, &all) == RC_OK)
            exported++;
        len[i] = all.len - off[i];
    }
    assert_true(exported > 12);
    fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, all.ptr, all.len), (ssize_t)all.len);
    unlink(path); /* as a rewrite renames another file over it: the descriptor still reads */
    pf = rd_payload_file_new(fd);
    memset(v, 0, sizeof(v));
    for (size_t i = 0; i < n; i++) {
        v[i].id = ids[i];
        v[i].path = files[i].path;
        v[i].data = len[i] ? all.ptr + off[i] : NULL; /* NULL: skipped */
        v[i].len = len[i];
        v[i].payloads = pf;
        v[i].off = off[i];
    }
    assert_int_equal(rd_cache_import_many(other, v, n, 2), exported);
    assert_int_equal(rd_cache_unused(other), 0); /* each arena one block, full */
    rd_payload_file_unref(pf);                   /* the entries hold theirs */
    memset(all.ptr, 0, all.len); /* nothing is read from the bytes taken up but the file */

    load_both(&r, exported, &imported, &plain, &f->a);
    reads = rd_payload_reads();
    for (size_t i = 0; i < plain.nobjects; i++) {
        const struct rd_object *ro = imported.objects[i].payload;
        cJSON *x = NULL, *y = NULL;
        assert_true(rd_object_has_manifest(ro));
        if (ro->lazy) { /* workloads' files: nothing of the manifest in memory */
            assert_null(ro->packed);
            lazy++;
            first = first ? first : ro;
        }
        assert_int_equal(rd_object_tree(&x, ro, &err), RC_OK);
        assert_int_equal(rd_object_tree(&y, plain.objects[i].payload, &err), RC_OK);
        assert_true(cJSON_Compare(x, y, 1));
        cJSON_Delete(x);
        cJSON_Delete(y);
    }
    /* the ConfigMap beside a SchedulePolicy is loaded from trees: its manifest in memory */
    assert_true(lazy >= 9 && lazy == plain.nobjects - 1);
    assert_non_null(
        ((const struct rd_object *)object(&imported, "ml/ConfigMap/beside")->payload)->packed);
    assert_int_equal(rd_payload_reads() - reads, lazy);
    /* exported again, each is the bytes it was taken from */
    for (size_t i = 0; i < n; i++) {
        struct rc_buf b = RC_BUF_INIT;
        struct rc_buf want = RC_BUF_INIT;
        if (!len[i])
            continue;
        assert_int_equal(rd_cache_export(other, ids[i], files[i].path, &b), RC_OK);
        assert_int_equal(rd_cache_export(cache, ids[i], files[i].path, &want), RC_OK);
        assert_int_equal(b.len, want.len);
        assert_memory_equal(b.ptr, want.ptr, b.len);
        rc_buf_release(&b);
        rc_buf_release(&want);
    }
    /* one byte of a manifest changed in the file: refused, by name */
    {
        unsigned char c;
        cJSON *x = NULL;
        struct rc_buf b = RC_BUF_INIT;
        size_t before = 0;
        assert_non_null(first);
        assert_int_equal(pread(fd, &c, 1, (off_t)first->lazy_off + 1), 1);
        c ^= 0x20;
        assert_int_equal(pwrite(fd, &c, 1, (off_t)first->lazy_off + 1), 1);
        assert_int_equal(rd_object_tree(&x, first, &err), RC_ERROR);
        assert_null(x);
        assert_non_null(strstr(err.msg, "parse cache changed under the pass"));
        assert_non_null(strstr(err.msg, first->key));
        for (size_t i = 0; i < n; i++) { /* its file's export fails, the others' do not */
            rc_buf_reset(&b);
            if (len[i] && rd_cache_export(other, ids[i], files[i].path, &b) < 0)
                before++;
        }
        assert_int_equal(before, 1);
        rc_buf_release(&b);
    }
    rd_source_release(&imported);
    rd_source_release(&plain);
    rich_close(&r); /* the last entry closes the file */
    assert_int_equal(fcntl(fd, F_GETFD), -1);
    rc_buf_release(&all);
}

/* What a file parsed to, exported and imported into another cache, loads exactly as the
 * parse did (objects, their lines and packed trees, warnings, policies, clusters; a broken
 * file's error); any prefix of the bytes, and any byte changed, is refused or loads, never
 * crashes (the ASan build runs this). */
static void test_rd_source__export_import_loads_the_same(void **state)
{
    struct fx *f = *state;
    struct rd_cache *cache = NULL, *other = NULL;
    struct rd_load_options lo;
    const char *ids[16];
    char idbuf[16][41];
    struct rc_err err = RC_ERR_INIT;
    struct rd_source imported = RD_SOURCE_INIT, plain = RD_SOURCE_INIT;
    size_t np = 0, exported = 0;

    fake_ids(ids, idbuf, f->nfiles);
    assert_int_equal(rd_cache_new(&cache), RC_OK);
    assert_int_equal(rd_cache_new(&other), RC_OK);
    assert_int_equal(rd_cache_prime(cache, f->files, ids, f->nfiles, 1, &np), RC_OK);
    for (size_t i = 0; i < f->nfiles; i++) {
        struct rc_buf b = RC_BUF_INIT;
        if (rd_cache_export(cache, ids[i], f->files[i].path, &b) == RC_OK) {
            struct rd_cache *scratch = NULL;
            unsigned char *bytes = malloc(b.len + 1);
            exported++;
            assert_int_equal(rd_cache_import(other, ids[i], f->files[i].path, b.ptr, b.len), RC_OK);
            /* what an untrusted copy of the bytes may be */
            assert_int_equal(rd_cache_new(&scratch), RC_OK);
            for (size_t cut = 0; cut < b.len; cut++) {
                memcpy(bytes, b.ptr, cut);
                assert_int_equal(rd_cache_import(scratch, ids[i], f->files[i].path, bytes, cut),
                                 RC_EINVALID);
            }
            for (size_t at = 0; at < b.len; at += 1 + at / 64) {
                memcpy(bytes, b.ptr, b.len);
                bytes[at] ^= 0x5a;
                (void)rd_cache_import(scratch, ids[i], f->files[i].path, bytes, b.len);
            }
            rd_cache_free(scratch);
            free(bytes);
        }
        rc_buf_release(&b);
    }
    /* broken files too: as their error (the fixture has some) */
    assert_int_equal(exported, f->nfiles);

    memset(&lo, 0, sizeof(lo));
    lo.ids = ids;
    lo.cache = other;
    assert_int_equal(rd_source_load_ex(&imported, f->files, f->nfiles, &lo, &f->a, &err), RC_OK);
    assert_int_equal(imported.nparsed, f->nfiles - exported);
    assert_int_equal(rd_source_load(&plain, f->files, f->nfiles, &f->a, &err), RC_OK);
    assert_int_equal(imported.nobjects, plain.nobjects);
    for (size_t i = 0; i < plain.nobjects; i++) {
        const struct rd_object *a = imported.objects[i].payload, *b = plain.objects[i].payload;
        assert_string_equal(imported.objects[i].key, plain.objects[i].key);
        assert_int_equal(imported.objects[i].line, plain.objects[i].line);
        assert_int_equal(imported.objects[i].npods, plain.objects[i].npods);
        assert_int_equal(a->packed_len, b->packed_len);
        assert_memory_equal(a->packed, b->packed, a->packed_len);
    }
    assert_int_equal(imported.nerrors, plain.nerrors);
    for (size_t i = 0; i < plain.nerrors; i++)
        assert_string_equal(imported.errors[i].msg, plain.errors[i].msg);
    assert_int_equal(imported.nwarnings, plain.nwarnings);
    for (size_t i = 0; i < plain.nwarnings; i++)
        assert_string_equal(imported.warnings[i], plain.warnings[i]);
    assert_int_equal(imported.npolicies, plain.npolicies);
    for (size_t i = 0; i < plain.npolicies; i++) {
        assert_string_equal(imported.policies[i].name, plain.policies[i].name);
        assert_int_equal(imported.policies[i].line, plain.policies[i].line);
    }
    assert_int_equal(imported.nclusters, plain.nclusters);
    rd_source_release(&imported);
    rd_source_release(&plain);
    rd_cache_free(cache);
    rd_cache_free(other);
}

/* Files for the budget: a ConfigMap of `kib` KiB of data under each path. */
#define BUDGET_FILES 5
static void budget_files(struct rd_file *files, struct rc_arena *a)
{
    static const char *const paths[BUDGET_FILES] = {"a/big.yaml", "b/mid.yaml", "c/one.yaml",
                                                    "d/two.yaml", "e/three.yaml"};
    static const size_t kib[BUDGET_FILES] = {64, 16, 1, 1, 1};

    for (size_t i = 0; i < BUDGET_FILES; i++) {
        size_t n = kib[i] << 10;
        char *head = rc_arena_printf(a,
                                     "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm%zu\n"
                                     "  namespace: ns\ndata:\n  blob: ",
                                     i);
        size_t h = strlen(head);
        char *d = rc_arena_alloc(a, h + n + 2);
        memcpy(d, head, h);
        memset(d + h, 'x', n);
        d[h + n] = '\n';
        d[h + n + 1] = '\0';
        files[i].path = paths[i];
        files[i].data = d;
        files[i].len = h + n + 1;
    }
}

/* The load of a pass under a budget of `limit`, its cache prepared as `how` says: 0 nothing
 * cached; 1 primed in reverse path order on two threads; 2 every file cached by an earlier
 * pass without a budget; 3 taken up (rd_cache_import_many) in reverse order from another
 * process's export. Returns the files refused, one bit each, and checks what the cache holds. */
static unsigned budget_load(const struct rd_file *files, const char *const *ids, size_t limit,
                            int how, struct rc_arena *a)
{
    struct rd_cache *c = NULL;
    struct rd_load_options lo;
    struct rd_source src = RD_SOURCE_INIT;
    struct rc_err err = RC_ERR_INIT;
    struct rd_file rev[BUDGET_FILES];
    const char *rids[BUDGET_FILES];
    unsigned refused = 0;
    size_t np = 0;

    for (size_t i = 0; i < BUDGET_FILES; i++) {
        rev[i] = files[BUDGET_FILES - 1 - i];
        rids[i] = ids[BUDGET_FILES - 1 - i];
    }
    assert_int_equal(rd_cache_new(&c), RC_OK);
    memset(&lo, 0, sizeof(lo));
    lo.ids = ids;
    lo.cache = c;
    if (how == 2) {
        assert_int_equal(rd_source_load_ex(&src, files, BUDGET_FILES, &lo, a, &err), RC_OK);
        assert_int_equal(src.nerrors, 0);
        rd_source_release(&src);
        rd_cache_sweep(c);
    }
    rd_cache_limit(c, limit, "over the budget");
    if (how == 1)
        assert_int_equal(rd_cache_prime(c, rev, rids, BUDGET_FILES, 2, &np), RC_OK);
    if (how == 3) {
        struct rd_cache *other = NULL;
        struct rd_import v[BUDGET_FILES];
        struct rc_buf b[BUDGET_FILES];
        assert_int_equal(rd_cache_new(&other), RC_OK);
        assert_int_equal(rd_cache_prime(other, files, ids, BUDGET_FILES, 1, &np), RC_OK);
        for (size_t i = 0; i < BUDGET_FILES; i++) {
            b[i] = (struct rc_buf)RC_BUF_INIT;
            assert_int_equal(rd_cache_export(other, rids[i], rev[i].path, &b[i]), RC_OK);
            memset(&v[i], 0, sizeof(v[i]));
            v[i].id = rids[i];
            v[i].path = rev[i].path;
            v[i].data = b[i].ptr;
            v[i].len = b[i].len;
        }
        rd_cache_free(other);
        assert_int_equal(rd_cache_import_many(c, v, BUDGET_FILES, 2), BUDGET_FILES);
        for (size_t i = 0; i < BUDGET_FILES; i++)
            rc_buf_release(&b[i]);
    }
    lo.max_bytes = limit;
    lo.over_budget = "over the budget";
    assert_int_equal(rd_source_load_ex(&src, files, BUDGET_FILES, &lo, a, &err), RC_OK);
    for (size_t e = 0; e < src.nerrors; e++) {
        for (size_t i = 0; i < BUDGET_FILES; i++) {
            if (!strcmp(src.errors[e].path, files[i].path))
                refused |= 1u << i;
        }
        assert_non_null(strstr(src.errors[e].msg, "over the budget (this file takes "));
    }
    assert_int_equal(src.nobjects + src.nerrors, BUDGET_FILES);
    /* held: at most the budget, and a small refusal for each file refused */
    assert_true(rd_cache_bytes(c) <= limit + 4096 * src.nerrors);
    rd_source_release(&src);
    /* the refusals last one pass: without the budget, everything loads */
    rd_cache_sweep(c);
    rd_cache_limit(c, 0, NULL);
    lo.max_bytes = 0;
    assert_int_equal(rd_source_load_ex(&src, files, BUDGET_FILES, &lo, a, &err), RC_OK);
    assert_int_equal(src.nerrors, 0);
    assert_int_equal(src.nobjects, BUDGET_FILES);
    rd_source_release(&src);
    rd_cache_free(c);
    return refused;
}

/* Past the budget, the files that take most memory parsed are refused, not the files that
 * come last: which ones is decided by the files alone, whatever order they are parsed or taken
 * up in and whatever the cache held. */
static void test_rd_source__budget_refuses_the_heaviest_whatever_the_order(void **state)
{
    struct fx *f = *state;
    struct rd_file files[BUDGET_FILES];
    const char *ids[16];
    char idbuf[16][41];
    size_t each[BUDGET_FILES], all = 0;

    budget_files(files, &f->a);
    fake_ids(ids, idbuf, BUDGET_FILES);
    for (size_t i = 0; i < BUDGET_FILES; i++) {
        struct rd_cache *c = NULL;
        size_t np = 0;
        assert_int_equal(rd_cache_new(&c), RC_OK);
        assert_int_equal(rd_cache_prime(c, &files[i], &ids[i], 1, 1, &np), RC_OK);
        each[i] = rd_cache_bytes(c);
        all += each[i];
        rd_cache_free(c);
    }
    assert_true(each[0] > each[1] && each[1] > each[2]);
    for (int how = 0; how < 4; how++) {
        /* one byte short: the biggest goes, though it comes first by path */
        assert_int_equal(budget_load(files, ids, all - 1, how, &f->a), 1u << 0);
        /* short of the biggest and a byte: the next biggest goes too */
        assert_int_equal(budget_load(files, ids, all - each[0] - 1, how, &f->a), 3u << 0);
        /* short of the biggest alone: it goes, and the rest fit */
        assert_int_equal(budget_load(files, ids, all - each[0], how, &f->a), 1u << 0);
        /* room for all */
        assert_int_equal(budget_load(files, ids, all, how, &f->a), 0);
    }
}

/* A file of 5,000 objects (the load looks up its keys in a set past the first few): it loads
 * whole, from the parse and from the parse cache; an object named twice, the second time at
 * its end, breaks it with both lines; and cache bytes that name an object twice are refused
 * as the parse would refuse the file. */
static void test_rd_source__file_of_many_objects(void **state)
{
    struct fx *f = *state;
    struct rc_err err = RC_ERR_INIT;
    struct rc_buf text = RC_BUF_INIT, dup = RC_BUF_INIT, b = RC_BUF_INIT;
    struct rd_source plain = RD_SOURCE_INIT, imported = RD_SOURCE_INIT, twice = RD_SOURCE_INIT;
    struct rd_cache *cache = NULL, *other = NULL;
    struct rd_load_options lo;
    struct rd_file file = {"many.yaml", NULL, 0};
    const char *id = "0123456789012345678901234567890123456789";
    const char *m;
    size_t np = 0, hits = 0;
    enum { N = 5000 };
    (void)state;

    for (int i = 0; i < N; i++)
        assert_int_equal(rc_buf_printf(&text, &err,
                                       "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n"
                                       "  name: c-%05d\n  namespace: web\ndata: {k: v}\n",
                                       i),
                         0);
    file.data = text.ptr;
    file.len = text.len;
    assert_int_equal(rd_source_load(&plain, &file, 1, &f->a, &err), RC_OK);
    assert_int_equal(plain.nobjects, N);
    assert_int_equal(plain.nerrors, 0);

    /* from the parse cache: the same objects */
    assert_int_equal(rd_cache_new(&cache), RC_OK);
    assert_int_equal(rd_cache_new(&other), RC_OK);
    assert_int_equal(rd_cache_prime(cache, &file, &id, 1, 1, &np), RC_OK);
    assert_int_equal(rd_cache_export(cache, id, file.path, &b), RC_OK);
    assert_int_equal(rd_cache_import(other, id, file.path, b.ptr, b.len), RC_OK);
    memset(&lo, 0, sizeof(lo));
    lo.ids = &id;
    lo.cache = other;
    assert_int_equal(rd_source_load_ex(&imported, &file, 1, &lo, &f->a, &err), RC_OK);
    assert_int_equal(imported.nparsed, 0);
    assert_int_equal(imported.nobjects, N);
    for (size_t i = 0; i < N; i++)
        assert_string_equal(imported.objects[i].key, plain.objects[i].key);

    /* the last object named twice: c-04999 becomes c-00007 in the bytes the cache holds */
    for (size_t k = 0; k + 7 <= b.len; k++) {
        if (!memcmp(b.ptr + k, "c-04999", 7)) {
            memcpy(b.ptr + k, "c-00007", 7);
            hits++;
        }
    }
    assert_true(hits > 0);
    rd_cache_free(other);
    assert_int_equal(rd_cache_new(&other), RC_OK);
    assert_int_equal(rd_cache_import(other, id, file.path, b.ptr, b.len), RC_EINVALID);

    /* and in the file: broken, naming both lines */
    assert_int_equal(rc_buf_add(&dup, text.ptr, text.len, &err), 0);
    assert_int_equal(rc_buf_printf(&dup, &err,
                                   "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n"
                                   "  name: c-00007\n  namespace: web\n"),
                     0);
    file.data = dup.ptr;
    file.len = dup.len;
    assert_int_equal(rd_source_load(&twice, &file, 1, &f->a, &err), RC_OK);
    assert_int_equal(twice.nobjects, 0);
    m = error_of(&twice, "many.yaml");
    assert_non_null(m);
    assert_non_null(strstr(m, "many.yaml:35002:"));
    assert_non_null(strstr(m, "duplicate object 'web/ConfigMap/c-00007' (already at line 51)"));
    rd_source_release(&plain);
    rd_source_release(&imported);
    rd_source_release(&twice);
    rd_cache_free(cache);
    rd_cache_free(other);
    rc_buf_release(&text);
    rc_buf_release(&dup);
    rc_buf_release(&b);
}

/* A broken file is kept as its error: exported, taken up into another cache, it loads to the
 * error its parse gave, parsing nothing (a `--once` pass then reads no blob of a file still
 * broken). What the entry says is checked: the error must name the file's path, and fit in a
 * message. What is not the file's own (a refusal by the budget) is not exported. */
static void test_rd_source__broken_file_kept_as_its_error(void **state)
{
    static const char text[] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n\tname: x\n";
    static const char *const forged[] = {"other/file.yaml:1:1: no", "team/broken.yaml",
                                         "team/broken.yaml:", ""};
    struct fx *f = *state;
    struct rd_file file = {"team/broken.yaml", text, sizeof(text) - 1};
    const char *id = "1111111111111111111111111111111111111111";
    struct rd_cache *cache = NULL, *other = NULL;
    struct rd_load_options lo;
    struct rd_source plain = RD_SOURCE_INIT, imported = RD_SOURCE_INIT;
    struct rc_err err = RC_ERR_INIT;
    struct rc_buf b = RC_BUF_INIT, alt = RC_BUF_INIT;
    size_t np = 0, len = 0;
    char longmsg[RC_ERR_MSG_MAX + 8];

    assert_int_equal(rd_source_load(&plain, &file, 1, &f->a, &err), RC_OK);
    assert_int_equal(plain.nerrors, 1);
    assert_non_null(strstr(plain.errors[0].msg, "team/broken.yaml:4:1: "));
    assert_int_equal(rd_cache_new(&cache), RC_OK);
    assert_int_equal(rd_cache_prime(cache, &file, &id, 1, 1, &np), RC_OK);
    assert_int_equal(np, 1);
    assert_int_equal(rd_cache_export(cache, id, file.path, &b), RC_OK);
    assert_int_equal(b.ptr[0], 1); /* the kind: broken */

    assert_int_equal(rd_cache_new(&other), RC_OK);
    assert_int_equal(rd_cache_import(other, id, file.path, b.ptr, b.len), RC_OK);
    assert_true(rd_cache_has(other, id, file.path, &len));
    assert_int_equal(len, file.len);
    assert_int_equal(rd_cache_unused(other), 0);
    memset(&lo, 0, sizeof(lo));
    lo.ids = &id;
    lo.cache = other;
    assert_int_equal(rd_source_load_ex(&imported, &file, 1, &lo, &f->a, &err), RC_OK);
    assert_int_equal(imported.nparsed, 0);
    assert_int_equal(imported.nerrors, 1);
    assert_string_equal(imported.errors[0].path, plain.errors[0].path);
    assert_string_equal(imported.errors[0].msg, plain.errors[0].msg);
    rd_source_release(&imported);
    rd_cache_free(other);

    /* the same bytes under another path: its error does not name it */
    assert_int_equal(rd_cache_new(&other), RC_OK);
    assert_int_equal(rd_cache_import(other, id, "team/other.yaml", b.ptr, b.len), RC_EINVALID);
    assert_int_equal(rd_cache_count(other), 0);
    /* forged messages, and one too long for a message */
    memset(longmsg, 'x', sizeof(longmsg) - 1);
    longmsg[sizeof(longmsg) - 1] = '\0';
    memcpy(longmsg, "team/broken.yaml: ", 18);
    for (size_t i = 0; i <= sizeof(forged) / sizeof(forged[0]); i++) {
        const char *m = i < sizeof(forged) / sizeof(forged[0]) ? forged[i] : longmsg;
        unsigned char head[3] = {1, (unsigned char)file.len, 0};
        size_t n = strlen(m);
        rc_buf_reset(&alt);
        rc_buf_add(&alt, head, 2, NULL);
        head[0] = (unsigned char)(n < 128 ? n : 0x80 | (n & 0x7f));
        head[1] = (unsigned char)(n >> 7);
        rc_buf_add(&alt, head, n < 128 ? 1 : 2, NULL);
        rc_buf_add(&alt, m, n, NULL);
        assert_int_equal(rd_cache_import(other, id, file.path, alt.ptr, alt.len), RC_EINVALID);
    }
    /* a kind no build writes */
    rc_buf_reset(&alt);
    rc_buf_add(&alt, b.ptr, b.len, NULL);
    alt.ptr[0] = 2;
    assert_int_equal(rd_cache_import(other, id, file.path, alt.ptr, alt.len), RC_EINVALID);
    assert_int_equal(rd_cache_count(other), 0);
    rd_cache_free(other);
    rd_cache_free(cache);

    /* a file the budget refused holds that refusal, which is the pass's, not the file's */
    {
        static const char ok[] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n"
                                 "  namespace: a\ndata: {k: v}\n";
        struct rd_file good = {"team/good.yaml", ok, sizeof(ok) - 1};
        assert_int_equal(rd_cache_new(&cache), RC_OK);
        memset(&lo, 0, sizeof(lo));
        lo.ids = &id;
        lo.cache = cache;
        lo.max_bytes = 1;
        lo.over_budget = "over the budget";
        assert_int_equal(rd_source_load_ex(&imported, &good, 1, &lo, &f->a, &err), RC_OK);
        assert_int_equal(imported.nerrors, 1);
        assert_non_null(strstr(imported.errors[0].msg, "over the budget"));
        assert_true(rd_cache_refused(cache, id, good.path));
        rc_buf_reset(&b);
        assert_int_equal(rd_cache_export(cache, id, good.path, &b), RC_ENOTFOUND);
        rd_source_release(&imported);
        rd_cache_free(cache);
    }
    rd_source_release(&plain);
    rc_buf_release(&alt);
    rc_buf_release(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(name) cmocka_unit_test_setup_teardown(test_rd_source__##name, setup, teardown)
        T(loads_a_tree),
        T(broken_files_contribute_nothing),
        T(warnings),
        T(order_does_not_matter),
        T(contract_violations),
        T(every_skyray_file_loads),
        T(holds_about_its_size),
        T(sweep_frees_what_was_not_used),
        T(primed_on_threads_loads_the_same),
        T(export_import_loads_the_same),
        T(import_takes_what_the_parse_derived),
        T(import_leaves_manifests_in_the_file),
        T(budget_refuses_the_heaviest_whatever_the_order),
        T(file_of_many_objects),
        T(broken_file_kept_as_its_error),
#undef T
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
