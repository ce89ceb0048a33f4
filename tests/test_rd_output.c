/*
 * test_rd_output.c - the deploy tree, the decision record, the capacity snapshot and the
 * commit message, from a hand-built engine result.
 *
 * The fixture: clusters alpha (static), beta (luna), gamma (empty); units
 *   rayjob-policy/rayjob3/rayjob   placed on beta: RayJob rayjob3/rayjob-train + ConfigMap
 *   dup-policy/web/frontend        Duplicate on alpha and beta: Deployment + ClusterRole
 *   divide-policy/serve/api        Divide 30/70 of 10 replicas: alpha 3, beta 7
 *   ns-policy/_cluster/serve       the Namespace serve, placed on alpha by a policy
 *   rayjob-policy/rayjob4/rayjob   pending
 *   misc/ConfigMap/orphan          unplaced (no policy)
 *   Namespace/web                  unplaced, but followed to the clusters running web objects
 *
 * Golden files live in tests/data/output/; set RD_UPDATE_GOLDEN=1 to rewrite them.
 */
#include "th.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pl_basics.h"
#include "pl_engine.h"
#include "pl_quantity.h"
#include "rc_arena.h"
#include "rc_buf.h"
#include "rd_object.h"
#include "rd_output.h"
#include "rd_source.h"
#include "rd_demand.h"
#include "rd_yaml.h"

#define GOLDEN_DIR RP_SOURCE_DIR "/tests/data/output"

/* ==== Fixture ==== */

struct fx {
    struct rc_arena a;
    struct pl_resnames res;
    struct pl_input in;
    struct pl_result result;
    struct pl_object objects[16];
    size_t nobjects;
    struct pl_cluster clusters[3];
    struct rd_file_error ferr[1];
};

static const char *const rayjob_json =
    "{\"apiVersion\":\"ray.io/v1\",\"kind\":\"RayJob\",\"metadata\":{\"name\":\"rayjob-train\","
    "\"labels\":{\"app\":\"train\"},\"uid\":\"1234\",\"resourceVersion\":\"9\","
    "\"creationTimestamp\":\"2024-01-01T00:00:00Z\"},"
    "\"spec\":{\"entrypoint\":\"python train.py\",\"rayClusterSpec\":{"
    "\"headGroupSpec\":{\"rayStartParams\":{},\"template\":{\"spec\":{\"containers\":[{"
    "\"name\":\"head\",\"image\":\"rayproject/ray:2.9.0\"}]}}},"
    "\"workerGroupSpecs\":[{\"groupName\":\"gpu\",\"replicas\":2,\"rayStartParams\":{},"
    "\"template\":{\"metadata\":{\"labels\":{\"role\":\"worker\"}},\"spec\":{\"containers\":[{"
    "\"name\":\"worker\",\"image\":\"rayproject/ray:2.9.0\",\"resources\":{\"limits\":{"
    "\"nvidia.com/gpu\":\"1\"}}}]}}}]},"
    "\"submitterPodTemplate\":{\"spec\":{\"restartPolicy\":\"Never\",\"containers\":[{"
    "\"name\":\"submit\",\"image\":\"rayproject/ray:2.9.0\"}]}}},"
    "\"status\":{\"jobStatus\":\"RUNNING\"}}";

static const char *const configmap_json =
    "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"code\","
    "\"namespace\":\"rayjob3\"},\"data\":{\"train.py\":\"print(1)\\nprint(2)\\n\"}}";

static const char *const frontend_json =
    "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"frontend\"},"
    "\"spec\":{\"selector\":{\"matchLabels\":{\"app\":\"frontend\"}},\"template\":{"
    "\"metadata\":{\"labels\":{\"app\":\"frontend\"}},\"spec\":{\"containers\":[{\"name\":"
    "\"web\",\"image\":\"nginx:1.25\"}]}}}}";

static const char *const clusterrole_json =
    "{\"apiVersion\":\"rbac.authorization.k8s.io/v1\",\"kind\":\"ClusterRole\",\"metadata\":{"
    "\"name\":\"web-reader\",\"namespace\":\"stray\"},\"rules\":[{\"apiGroups\":[\"\"],"
    "\"resources\":[\"pods\"],"
    "\"verbs\":[\"get\",\"list\"]}]}";

static const char *const api_json =
    "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"api\","
    "\"namespace\":\"serve\",\"managedFields\":[{\"manager\":\"kubectl\"}],\"generation\":3},"
    "\"spec\":{\"replicas\":10,\"selector\":{\"matchLabels\":{\"app\":\"api\"}},\"template\":{"
    "\"spec\":{\"containers\":[{\"name\":\"api\",\"image\":\"api:1\"}]}}}}";

static const char *const ns_serve_json =
    "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"serve\","
    "\"labels\":{\"tier\":\"serving\"}}}";

static const char *const ns_web_json =
    "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"web\","
    "\"labels\":{\"team\":\"web\"}}}";

static const char *const rayjob4_json =
    "{\"apiVersion\":\"ray.io/v1\",\"kind\":\"RayJob\",\"metadata\":{\"name\":\"rayjob-big\","
    "\"namespace\":\"rayjob4\"},\"spec\":{\"entrypoint\":\"python big.py\"}}";

static const char *const orphan_json =
    "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"orphan\","
    "\"namespace\":\"misc\"},\"data\":{\"a\":\"b\"}}";

static struct pl_object *add_object(struct fx *f, const char *json, const char *api,
                                    const char *kind, const char *ns, const char *name,
                                    int64_t replicas, uint32_t pods)
{
    struct pl_object *o = &f->objects[f->nobjects++];
    struct rd_object *ro = rc_arena_calloc(&f->a, 1, sizeof(*ro));

    ro->root = cJSON_Parse(json);
    assert_non_null(ro->root);
    ro->kind = kind;
    ro->ns = ns;
    ro->name = name;
    ro->api_version = api;
    o->key = ns ? rc_arena_printf(&f->a, "%s/%s/%s", ns, kind, name)
                : rc_arena_printf(&f->a, "%s/%s", kind, name);
    ro->key = o->key;
    o->api_version = api;
    o->kind = kind;
    o->ns = ns;
    o->name = name;
    o->replicas = replicas;
    if (pods) {
        o->npods = 1;
        o->pods = rc_arena_calloc(&f->a, 1, sizeof(*o->pods));
        o->pods[0].role = "pod";
        o->pods[0].count = pods;
    }
    o->payload = ro;
    return o;
}

static struct pl_labels labels(struct rc_arena *a, const char *k1, const char *v1, const char *k2,
                               const char *v2)
{
    struct pl_labels l = {0, NULL};

    if (k1)
        pl_labels_set(&l, a, k1, v1);
    if (k2)
        pl_labels_set(&l, a, k2, v2);
    return l;
}

static int64_t q(const char *s)
{
    int64_t v = 0;
    struct rc_err err = RC_ERR_INIT;

    assert_int_equal(pl_quantity_parse(&v, s, &err), 0);
    return v;
}

static void fill_node(struct fx *f, struct pl_node *n, const char *name, const char *cpu,
                      const char *mem, int gpu)
{
    n->name = name;
    n->allocatable.v[PL_RES_CPU] = q(cpu);
    n->allocatable.v[PL_RES_MEMORY] = q(mem);
    n->allocatable.v[PL_RES_PODS] = q("110");
    if (gpu) {
        n->allocatable.v[3] = q("1");
        n->ntaints = 1;
        n->taints = rc_arena_calloc(&f->a, 1, sizeof(*n->taints));
        n->taints[0].key = "nvidia.com/gpu";
        n->taints[0].value = "true";
        n->taints[0].effect = "NoSchedule";
        n->labels = labels(&f->a, "node.kubernetes.io/instance-type", "g4dn", NULL, NULL);
    } else {
        n->labels = labels(&f->a, "kubernetes.io/hostname", name, "kubernetes.io/os", "linux");
    }
}

static void build_fleet(struct fx *f)
{
    struct pl_cluster *c = f->clusters;
    struct pl_node *n;

    pl_resnames_init(&f->res);
    assert_int_equal(pl_resnames_intern(&f->res, &f->a, "nvidia.com/gpu"), 3);

    c[0].name = "alpha";
    c[0].labels = labels(&f->a, "cluster.class", "production", PL_LABEL_CLUSTER_NAME, "alpha");
    c[0].reachable = 1;
    c[0].cost_micro = 1500000;
    c[0].nnodes = 4;
    c[0].nodes = n = rc_arena_calloc(&f->a, 4, sizeof(*n));
    fill_node(f, &n[0], "cpu-0", "8", "32Gi", 0);
    fill_node(f, &n[1], "cpu-1", "8", "32Gi", 0);
    fill_node(f, &n[2], "cpu-2", "8", "32Gi", 0);
    fill_node(f, &n[3], "gpu-0", "8", "32Gi", 1);
    n[2].requested.v[PL_RES_CPU] = q("2500m");
    n[2].requested.v[PL_RES_MEMORY] = q("200Mi");
    n[3].unschedulable = 1;
    c[0].npresent = 1;
    c[0].present = rc_arena_calloc(&f->a, 1, sizeof(char *));
    c[0].present[0] = "0123456789abcdef";
    c[0].live = 1;

    c[1].name = "beta";
    c[1].labels = labels(&f->a, "cluster.class", "development", PL_LABEL_CLUSTER_NAME, "beta");
    c[1].reachable = 1;
    c[1].autoscaler = PL_AUTOSCALER_LUNA;
    c[1].nshapes = 1;
    c[1].shapes = rc_arena_calloc(&f->a, 1, sizeof(*c[1].shapes));
    c[1].shapes[0].name = "g4dn.xlarge";
    c[1].shapes[0].max = 10;
    c[1].shapes[0].cost_micro = 526000;
    c[1].shapes[0].allocatable.v[PL_RES_CPU] = q("4");
    c[1].shapes[0].allocatable.v[PL_RES_MEMORY] = q("16Gi");
    c[1].shapes[0].allocatable.v[PL_RES_PODS] = q("110");
    c[1].shapes[0].allocatable.v[3] = q("1");
    c[1].nnodes = 1;
    c[1].nodes = n = rc_arena_calloc(&f->a, 1, sizeof(*n));
    fill_node(f, &n[0], "beta-cpu", "4", "16Gi", 0);
    n[0].shape = "g4dn.xlarge";
    n[0].not_ready = 1;

    c[2].name = "gamma";
    c[2].labels = labels(&f->a, PL_LABEL_CLUSTER_NAME, "gamma", NULL, NULL);
    c[2].reachable = 0;
    c[2].autoscaler = PL_AUTOSCALER_CLUSTER_AUTOSCALER;
    c[2].any_shape = 1;
}

static struct pl_target *targets(struct rc_arena *a, const char *c1, int64_t p1, const char *c2,
                                 int64_t p2, size_t *n)
{
    struct pl_target *t = rc_arena_calloc(a, 2, sizeof(*t));

    t[0].cluster = c1;
    t[0].percent = p1;
    *n = 1;
    if (c2) {
        t[1].cluster = c2;
        t[1].percent = p2;
        *n = 2;
    }
    return t;
}

static void set_objects(struct fx *f, struct pl_decision *d, struct pl_object *o1,
                        struct pl_object *o2)
{
    d->nobjects = o2 ? 2 : 1;
    d->objects = rc_arena_calloc(&f->a, 2, sizeof(*d->objects));
    d->object_keys = rc_arena_calloc(&f->a, 2, sizeof(*d->object_keys));
    d->objects[0] = o1;
    d->object_keys[0] = o1->key;
    if (o2) {
        /* sorted by key */
        if (strcmp(o2->key, o1->key) < 0) {
            d->objects[0] = o2;
            d->objects[1] = o1;
        } else {
            d->objects[1] = o2;
        }
        d->object_keys[0] = d->objects[0]->key;
        d->object_keys[1] = d->objects[1]->key;
    }
}

static void verdict(struct fx *f, struct pl_decision *d, const char *cluster,
                    enum pl_verdict_kind k, const char *detail, int64_t added)
{
    struct pl_verdict *v = rc_arena_calloc(&f->a, d->nverdicts + 1, sizeof(*v));

    if (d->nverdicts)
        memcpy(v, d->verdicts, d->nverdicts * sizeof(*v));
    v[d->nverdicts].cluster = cluster;
    v[d->nverdicts].kind = k;
    v[d->nverdicts].detail = detail;
    v[d->nverdicts].nodes_added = added;
    d->verdicts = v;
    d->nverdicts++;
}

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));
    struct pl_object *rayjob, *cm, *front, *role, *api, *nsserve, *nsweb, *rj4, *orphan;
    struct pl_decision *d;

    build_fleet(f);
    /* objects, sorted by key as rd_source gives them */
    role = add_object(f, clusterrole_json, "rbac.authorization.k8s.io/v1", "ClusterRole", NULL,
                      "web-reader", -1, 0);
    nsserve = add_object(f, ns_serve_json, "v1", "Namespace", NULL, "serve", -1, 0);
    nsweb = add_object(f, ns_web_json, "v1", "Namespace", NULL, "web", -1, 0);
    orphan = add_object(f, orphan_json, "v1", "ConfigMap", "misc", "orphan", -1, 0);
    cm = add_object(f, configmap_json, "v1", "ConfigMap", "rayjob3", "code", -1, 0);
    rayjob = add_object(f, rayjob_json, "ray.io/v1", "RayJob", "rayjob3", "rayjob-train", -1, 4);
    rj4 = add_object(f, rayjob4_json, "ray.io/v1", "RayJob", "rayjob4", "rayjob-big", -1, 9);
    api = add_object(f, api_json, "apps/v1", "Deployment", "serve", "api", 10, 10);
    front = add_object(f, frontend_json, "apps/v1", "Deployment", "web", "frontend", 1, 1);

    f->in.res = &f->res;
    f->in.nobjects = f->nobjects;
    f->in.objects = f->objects;
    f->in.nclusters = 3;
    f->in.clusters = f->clusters;

    f->result.ndecisions = 7;
    f->result.decisions = d = rc_arena_calloc(&f->a, 7, sizeof(*d));
    /* deliberately not in unit order: the writers sort */
    d[0].unit = "rayjob-policy/rayjob3/rayjob";
    d[0].policy = "rayjob-policy";
    d[0].policy_digest = "d1";
    set_objects(f, &d[0], rayjob, cm);
    d[0].state = PL_STATE_PLACED;
    d[0].targets = targets(&f->a, "beta", 100, NULL, 0, &d[0].ntargets);
    d[0].reason = "no cluster fits now; beta's autoscaler (luna) can add 2 nodes";
    verdict(f, &d[0], "alpha", PL_VERDICT_DOES_NOT_FIT,
            "worker needs nvidia.com/gpu 1; best node has 0", 0);
    verdict(f, &d[0], "beta", PL_VERDICT_FITS_AFTER_SCALE_UP,
            "2 x g4dn.xlarge for 2 workers (nvidia.com/gpu 1 each)", 2);
    d[0].change = PL_CHANGE_NEW;

    d[1].unit = "dup-policy/web/frontend";
    d[1].policy = "dup-policy";
    d[1].policy_digest = "d2";
    set_objects(f, &d[1], front, role);
    d[1].state = PL_STATE_PLACED;
    d[1].targets = targets(&f->a, "alpha", 100, "beta", 100, &d[1].ntargets);
    d[1].reason = "Duplicate: a copy on every selected cluster";
    verdict(f, &d[1], "alpha", PL_VERDICT_FITS_NOW, "1 pod fits", 0);
    verdict(f, &d[1], "beta", PL_VERDICT_FITS_NOW, "1 pod fits", 0);
    d[1].change = PL_CHANGE_NEW;

    d[2].unit = "divide-policy/serve/api";
    d[2].policy = "divide-policy";
    d[2].policy_digest = "d3";
    set_objects(f, &d[2], api, NULL);
    d[2].state = PL_STATE_PLACED;
    d[2].targets = targets(&f->a, "alpha", 30, "beta", 70, &d[2].ntargets);
    d[2].reason = "Divide: alpha 30%, beta 70%";
    verdict(f, &d[2], "alpha", PL_VERDICT_FITS_NOW, "3 pods fit", 0);
    verdict(f, &d[2], "beta", PL_VERDICT_FITS_NOW, "7 pods fit", 0);
    d[2].change = PL_CHANGE_NEW;

    d[3].unit = "ns-policy/_cluster/serve";
    d[3].policy = "ns-policy";
    d[3].policy_digest = "d4";
    set_objects(f, &d[3], nsserve, NULL);
    d[3].state = PL_STATE_PLACED;
    d[3].targets = targets(&f->a, "alpha", 100, NULL, 0, &d[3].ntargets);
    d[3].reason = "fits now on alpha";
    verdict(f, &d[3], "alpha", PL_VERDICT_FITS_NOW, "no pods", 0);
    d[3].change = PL_CHANGE_NEW;

    d[4].unit = "rayjob-policy/rayjob4/rayjob";
    d[4].policy = "rayjob-policy";
    d[4].policy_digest = "d1";
    set_objects(f, &d[4], rj4, NULL);
    d[4].state = PL_STATE_PENDING;
    d[4].reason = "no cluster fits now or after scale-up";
    verdict(f, &d[4], "alpha", PL_VERDICT_DOES_NOT_FIT, "needs 9 pods of cpu 8; free 0", 0);
    verdict(f, &d[4], "beta", PL_VERDICT_DOES_NOT_FIT, "shape g4dn.xlarge max 10 reached", 0);
    verdict(f, &d[4], "gamma", PL_VERDICT_UNREACHABLE, "connection refused", 0);
    d[4].change = PL_CHANGE_NEW;

    d[5].unit = orphan->key;
    set_objects(f, &d[5], orphan, NULL);
    d[5].state = PL_STATE_UNPLACED;
    d[5].reason = "no SchedulePolicy matches";
    d[5].change = PL_CHANGE_NEW;

    d[6].unit = nsweb->key;
    set_objects(f, &d[6], nsweb, NULL);
    d[6].state = PL_STATE_UNPLACED;
    d[6].reason = "no SchedulePolicy matches";
    d[6].change = PL_CHANGE_NONE;

    f->result.nwarnings = 1;
    f->result.warnings = rc_arena_calloc(&f->a, 1, sizeof(char *));
    f->result.warnings[0] = "object 'web/Deployment/frontend' matches policies 'dup-policy' "
                            "and 'other'; 'dup-policy' wins";
    f->result.nusage = 1;
    f->result.usage = rc_arena_calloc(&f->a, 1, sizeof(*f->result.usage));
    f->result.usage[0].cluster = "beta";
    f->result.usage[0].allocatable.v[PL_RES_CPU] = q("4");
    f->result.usage[0].committed.v[3] = q("2");
    f->result.usage[0].nodes_to_add = 2;

    f->ferr[0].path = "apps/broken.yaml";
    f->ferr[0].msg = "apps/broken.yaml:3:7: found a tab character that violates indentation";
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;

    for (size_t i = 0; i < f->nobjects; i++)
        cJSON_Delete(((struct rd_object *)f->objects[i].payload)->root);
    rc_arena_release(&f->a);
    free(f);
    return 0;
}

/* ==== Helpers ==== */

#define SOURCE "0123456789abcdef0123456789abcdef01234567"

static void render(struct fx *f, struct rd_tree *t)
{
    struct rc_err err = RC_ERR_INIT;
    struct rd_render_options o = RD_RENDER_OPTIONS_INIT;

    o.nfile_errors = 1;
    o.file_errors = f->ferr;
    if (rd_render_tree(t, &f->result, &f->in, SOURCE, &o, &f->a, &err) < 0)
        fail_msg("rd_render_tree: %s", err.msg);
}

static const struct rd_tree_file *find(const struct rd_tree *t, const char *path)
{
    for (size_t i = 0; i < t->nfiles; i++) {
        if (!strcmp(t->files[i].path, path))
            return &t->files[i];
    }
    fail_msg("no file '%s' in the tree", path);
    return NULL;
}

static cJSON *load(const struct rd_tree_file *file)
{
    struct rd_docs *docs = NULL;
    struct rc_err err = RC_ERR_INIT;
    struct rd_yaml_limits limits = RD_YAML_LIMITS_INIT;
    cJSON *root;

    if (rd_yaml_load(&docs, file->path, file->data, file->len, &limits, NULL, &err) < 0)
        fail_msg("load %s: %s", file->path, err.msg);
    root = rd_docs_take(docs, 0);
    rd_docs_free(docs);
    return root;
}

static const char *str_at(const cJSON *root, const char *const *path)
{
    const cJSON *n = root;

    for (; *path; path++)
        n = cJSON_GetObjectItemCaseSensitive(n, *path);
    return cJSON_GetStringValue(n);
}

static void mkdirs(const char *path)
{
    char buf[4096];

    snprintf(buf, sizeof(buf), "%s", path);
    for (char *p = buf + 1; *p; p++) {
        if (*p == '/') {
            *p = 0;
            if (mkdir(buf, 0755) < 0 && errno != EEXIST)
                fail_msg("mkdir %s: %s", buf, strerror(errno));
            *p = '/';
        }
    }
}

static void write_file(const char *path, const char *data, size_t len)
{
    FILE *fp;

    mkdirs(path);
    fp = fopen(path, "wb");
    assert_non_null(fp);
    assert_int_equal(fwrite(data, 1, len, fp), len);
    assert_int_equal(fclose(fp), 0);
}

static char *read_file(const char *path, size_t *len)
{
    struct rc_buf b = RC_BUF_INIT;
    struct rc_err err = RC_ERR_INIT;

    if (rc_buf_read_file(&b, path, &err) < 0)
        return NULL;
    return rc_buf_detach(&b, len);
}

static int update_golden(void)
{
    const char *e = getenv("RD_UPDATE_GOLDEN");
    return e && *e == '1';
}

static void check_golden(const char *name, const char *data, size_t len)
{
    char path[4096];
    char *want;
    size_t wlen = 0;

    snprintf(path, sizeof(path), "%s/%s", GOLDEN_DIR, name);
    if (update_golden()) {
        write_file(path, data, len);
        return;
    }
    want = read_file(path, &wlen);
    if (!want)
        fail_msg("missing golden file %s (RD_UPDATE_GOLDEN=1 writes it)", path);
    if (wlen != len || memcmp(want, data, len)) {
        print_error("--- golden %s\n%s\n--- got\n%.*s\n", path, want, (int)len, data);
        free(want);
        fail_msg("%s differs from its golden file", name);
    }
    free(want);
}

/* Run a shell command with `in` on stdin, return its stdout (malloc'd) and exit status. */
static char *run(const char *cmd, const char *in, int *status)
{
    char tmpl[] = "/tmp/rd_output_XXXXXX", full[8192];
    int fd = mkstemp(tmpl);
    FILE *p;
    char *out;
    size_t len = 0;

    assert_true(fd >= 0);
    close(fd);
    snprintf(full, sizeof(full), "%s > %s", cmd, tmpl);
    p = popen(full, "w");
    assert_non_null(p);
    if (in)
        fputs(in, p);
    *status = pclose(p);
    out = read_file(tmpl, &len);
    unlink(tmpl);
    assert_non_null(out);
    return out;
}

/* ==== Tests: the tree ==== */

static void test_rd_output__file_list(void **state)
{
    static const char *const want[] = {
        ".rightplace/capacity.yaml",
        ".rightplace/source",
        "clusters/alpha/_cluster/clusterrole.web-reader.yaml",
        "clusters/alpha/_cluster/namespace.serve.yaml",
        "clusters/alpha/_cluster/namespace.web.yaml",
        "clusters/alpha/kustomization.yaml",
        "clusters/alpha/serve/deployment.api.yaml",
        "clusters/alpha/web/deployment.frontend.yaml",
        "clusters/beta/_cluster/clusterrole.web-reader.yaml",
        "clusters/beta/_cluster/namespace.rayjob3.yaml",
        "clusters/beta/_cluster/namespace.serve.yaml",
        "clusters/beta/_cluster/namespace.web.yaml",
        "clusters/beta/kustomization.yaml",
        "clusters/beta/rayjob3/configmap.code.yaml",
        "clusters/beta/rayjob3/rayjob.rayjob-train.yaml",
        "clusters/beta/serve/deployment.api.yaml",
        "clusters/beta/web/deployment.frontend.yaml",
        "clusters/gamma/kustomization.yaml",
        "placements.yaml",
    };
    struct fx *f = *state;
    struct rd_tree t;

    render(f, &t);
    for (size_t i = 0; i < t.nfiles && i < sizeof(want) / sizeof(want[0]); i++)
        assert_string_equal(t.files[i].path, want[i]);
    assert_int_equal(t.nfiles, sizeof(want) / sizeof(want[0]));
}

/* Each kustomization.yaml is the YAML emitter's document for its directory's files (it is
 * written without building one when the names need no quoting). */
static void test_rd_output__kustomization_is_the_emitters(void **state)
{
    struct fx *f = *state;
    struct rd_tree t;
    size_t checked = 0;

    render(f, &t);
    for (size_t i = 0; i < t.nfiles; i++) {
        const char *p = t.files[i].path, *k = strstr(p, "/kustomization.yaml");
        cJSON *root, *list;
        struct rc_buf want = RC_BUF_INIT;
        struct rc_err err = RC_ERR_INIT;
        size_t plen;
        if (strncmp(p, "clusters/", 9) || !k || k[strlen("/kustomization.yaml")])
            continue;
        plen = (size_t)(k - p) + 1;
        root = cJSON_CreateObject();
        cJSON_AddStringToObject(root, "apiVersion", "kustomize.config.k8s.io/v1beta1");
        cJSON_AddStringToObject(root, "kind", "Kustomization");
        list = cJSON_AddArrayToObject(root, "resources");
        for (size_t j = 0; j < t.nfiles; j++) {
            if (j != i && !strncmp(t.files[j].path, p, plen))
                cJSON_AddItemToArray(list, cJSON_CreateString(t.files[j].path + plen));
        }
        assert_int_equal(rd_yaml_emit(&want, root, &err), 0);
        assert_int_equal(t.files[i].len, want.len);
        assert_memory_equal(t.files[i].data, want.ptr, want.len);
        cJSON_Delete(root);
        rc_buf_release(&want);
        checked++;
    }
    assert_int_equal(checked, 3); /* alpha, beta and gamma (empty) */
}

static void test_rd_output__golden_tree(void **state)
{
    struct fx *f = *state;
    struct rd_tree t;
    char name[4096];

    render(f, &t);
    for (size_t i = 0; i < t.nfiles; i++) {
        snprintf(name, sizeof(name), "tree/%s", t.files[i].path);
        check_golden(name, t.files[i].data, t.files[i].len);
    }
}

static void assert_our_labels(const cJSON *obj, const char *unit_label, int luna)
{
    const cJSON *l = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(obj, "metadata"), "labels");

    assert_non_null(l);
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(l, PL_LABEL_MANAGED)),
                        "rightplace");
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(l, PL_LABEL_UNIT)),
                        unit_label);
    if (luna)
        assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(l, "elotl-luna")),
                            "true");
    else
        assert_null(cJSON_GetObjectItemCaseSensitive(l, "elotl-luna"));
}

static void test_rd_output__labels_on_pod_templates(void **state)
{
    static const char *const ns_path[] = {"metadata", "namespace", NULL};
    static const char *const app_path[] = {"metadata", "labels", "app", NULL};
    struct fx *f = *state;
    struct rd_tree t;
    char unit[17];
    cJSON *rj, *spec, *dep, *w;

    render(f, &t);
    rj = load(find(&t, "clusters/beta/rayjob3/rayjob.rayjob-train.yaml"));
    pl_unit_label("rayjob-policy/rayjob3/rayjob", unit);
    assert_our_labels(rj, unit, 0);
    assert_string_equal(str_at(rj, app_path), "train"); /* own labels kept */
    assert_string_equal(str_at(rj, ns_path), "rayjob3");
    assert_null(cJSON_GetObjectItemCaseSensitive(rj, "status"));
    assert_null(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(rj, "metadata"), "uid"));
    assert_null(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(rj, "metadata"),
                                                 "creationTimestamp"));
    spec = cJSON_GetObjectItemCaseSensitive(rj, "spec");
    assert_our_labels(
        cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(
                cJSON_GetObjectItemCaseSensitive(spec, "rayClusterSpec"), "headGroupSpec"),
            "template"),
        unit, 1);
    w = cJSON_GetArrayItem(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(spec, "rayClusterSpec"),
                                         "workerGroupSpecs"),
        0);
    assert_our_labels(cJSON_GetObjectItemCaseSensitive(w, "template"), unit, 1);
    {
        static const char *const role[] = {"template", "metadata", "labels", "role", NULL};
        assert_string_equal(str_at(w, role), "worker");
    }
    assert_our_labels(cJSON_GetObjectItemCaseSensitive(spec, "submitterPodTemplate"), unit, 1);
    cJSON_Delete(rj);

    pl_unit_label("dup-policy/web/frontend", unit);
    dep = load(find(&t, "clusters/alpha/web/deployment.frontend.yaml"));
    assert_our_labels(dep, unit, 0);
    assert_string_equal(str_at(dep, ns_path), "web");
    assert_our_labels(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(dep, "spec"), "template"),
        unit, 1);
    /* a Duplicate copy is the same on both clusters */
    assert_int_equal(find(&t, "clusters/beta/web/deployment.frontend.yaml")->len,
                     find(&t, "clusters/alpha/web/deployment.frontend.yaml")->len);
    cJSON_Delete(dep);
}

static void test_rd_output__luna_label_configurable(void **state)
{
    struct fx *f = *state;
    struct rd_tree t;
    struct rc_err err = RC_ERR_INIT;
    struct rd_render_options o = RD_RENDER_OPTIONS_INIT;
    cJSON *dep;
    const cJSON *l;

    o.luna_key = NULL;
    o.luna_value = NULL;
    assert_int_equal(rd_render_tree(&t, &f->result, &f->in, SOURCE, &o, &f->a, &err), 0);
    dep = load(find(&t, "clusters/alpha/web/deployment.frontend.yaml"));
    l = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(dep, "spec"),
                                             "template"),
            "metadata"),
        "labels");
    assert_null(cJSON_GetObjectItemCaseSensitive(l, "elotl-luna"));
    assert_non_null(cJSON_GetObjectItemCaseSensitive(l, PL_LABEL_MANAGED));
    cJSON_Delete(dep);

    o.luna_key = "node.elotl.co/luna";
    o.luna_value = "yes";
    assert_int_equal(rd_render_tree(&t, &f->result, &f->in, SOURCE, &o, &f->a, &err), 0);
    dep = load(find(&t, "clusters/alpha/web/deployment.frontend.yaml"));
    l = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(dep, "spec"),
                                             "template"),
            "metadata"),
        "labels");
    assert_string_equal(
        cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(l, "node.elotl.co/luna")), "yes");
    cJSON_Delete(dep);
}

static void test_rd_output__divide_replicas(void **state)
{
    struct fx *f = *state;
    struct rd_tree t;
    cJSON *a, *b;

    render(f, &t);
    a = load(find(&t, "clusters/alpha/serve/deployment.api.yaml"));
    b = load(find(&t, "clusters/beta/serve/deployment.api.yaml"));
    assert_int_equal(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(a, "spec"), "replicas")
            ->valueint,
        3);
    assert_int_equal(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(b, "spec"), "replicas")
            ->valueint,
        7);
    assert_null(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(a, "metadata"),
                                                 "managedFields"));
    assert_null(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(a, "metadata"),
                                                 "generation"));
    cJSON_Delete(a);
    cJSON_Delete(b);
}

static void test_rd_output__namespaces_follow(void **state)
{
    static const char *const team[] = {"metadata", "labels", "team", NULL};
    static const char *const tier[] = {"metadata", "labels", "tier", NULL};
    static const char *const managed[] = {"metadata", "labels", PL_LABEL_MANAGED, NULL};
    static const char *const unitl[] = {"metadata", "labels", PL_LABEL_UNIT, NULL};
    static const char *const name[] = {"metadata", "name", NULL};
    struct fx *f = *state;
    struct rd_tree t;
    char unit[17];
    cJSON *n;

    render(f, &t);
    /* the repo's Namespace object, with our label added */
    n = load(find(&t, "clusters/beta/_cluster/namespace.web.yaml"));
    assert_string_equal(str_at(n, team), "web");
    assert_string_equal(str_at(n, managed), "rightplace");
    assert_null(str_at(n, unitl));
    cJSON_Delete(n);
    /* no Namespace object in the repo: a minimal one */
    n = load(find(&t, "clusters/beta/_cluster/namespace.rayjob3.yaml"));
    assert_string_equal(str_at(n, name), "rayjob3");
    assert_string_equal(str_at(n, managed), "rightplace");
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(n, "kind")),
                        "Namespace");
    cJSON_Delete(n);
    /* placed by a policy on alpha: written once, as the placed object */
    pl_unit_label("ns-policy/_cluster/serve", unit);
    n = load(find(&t, "clusters/alpha/_cluster/namespace.serve.yaml"));
    assert_string_equal(str_at(n, unitl), unit);
    assert_string_equal(str_at(n, tier), "serving");
    cJSON_Delete(n);
    /* followed to beta, without the unit label */
    n = load(find(&t, "clusters/beta/_cluster/namespace.serve.yaml"));
    assert_null(str_at(n, unitl));
    assert_string_equal(str_at(n, tier), "serving");
    cJSON_Delete(n);
}

static void test_rd_output__system_namespaces_not_followed(void **state)
{
    struct fx *f = *state;
    struct rd_tree t;

    for (size_t i = 0; i < f->nobjects; i++) {
        if (!strcmp(f->objects[i].name, "frontend")) {
            f->objects[i].ns = "default";
            f->objects[i].key = "default/Deployment/frontend";
        }
    }
    render(f, &t);
    find(&t, "clusters/alpha/default/deployment.frontend.yaml");
    for (size_t i = 0; i < t.nfiles; i++) {
        assert_null(strstr(t.files[i].path, "namespace.default"));
        assert_null(strstr(t.files[i].path, "namespace.web"));
    }
}

static void test_rd_output__kustomize_builds(void **state)
{
    struct fx *f = *state;
    struct rd_tree t;
    char dir[] = "/tmp/rd_output_tree_XXXXXX", path[4096], cmd[8192];
    const char *clusters[] = {"alpha", "beta", "gamma"};
    int status;
    char *out;

    render(f, &t);
    out = run("command -v kubectl", NULL, &status);
    free(out);
    if (status != 0)
        skip();
    assert_non_null(mkdtemp(dir));
    for (size_t i = 0; i < t.nfiles; i++) {
        snprintf(path, sizeof(path), "%s/%s", dir, t.files[i].path);
        write_file(path, t.files[i].data, t.files[i].len);
    }
    for (size_t i = 0; i < 3; i++) {
        snprintf(cmd, sizeof(cmd), "kubectl kustomize %s/clusters/%s 2>&1", dir, clusters[i]);
        out = run(cmd, NULL, &status);
        if (status != 0)
            fail_msg("kubectl kustomize %s: %s", clusters[i], out);
        if (i == 0) {
            assert_non_null(strstr(out, "kind: Deployment"));
            assert_non_null(strstr(out, "name: web-reader"));
            assert_non_null(strstr(out, "replicas: 3"));
        }
        if (i == 1) {
            assert_non_null(strstr(out, "kind: RayJob"));
            assert_non_null(strstr(out, "replicas: 7"));
        }
        free(out);
    }
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

/* Real manifests through rd_source_load: each object its own unit on cluster c1. */
/* Everything src loaded placed whole on one cluster "c1" (c1 and the input are the caller's). */
static void place_all_on_c1(struct fx *f, const struct rd_source *src, struct pl_cluster *c1,
                            struct pl_input *in, struct pl_result *res)
{
    memset(c1, 0, sizeof(*c1));
    c1->name = "c1";
    c1->reachable = 1;
    memset(in, 0, sizeof(*in));
    in->res = &src->res;
    in->nobjects = src->nobjects;
    in->objects = src->objects;
    in->nclusters = 1;
    in->clusters = c1;
    memset(res, 0, sizeof(*res));
    res->ndecisions = src->nobjects;
    res->decisions = rc_arena_calloc(&f->a, src->nobjects, sizeof(*res->decisions));
    for (size_t i = 0; i < src->nobjects; i++) {
        struct pl_decision *d = &res->decisions[i];
        d->unit = src->objects[i].key;
        d->policy = "p";
        d->nobjects = 1;
        d->objects = rc_arena_calloc(&f->a, 1, sizeof(*d->objects));
        d->objects[0] = &src->objects[i];
        d->object_keys = &src->objects[i].key;
        d->state = PL_STATE_PLACED;
        d->targets = targets(&f->a, "c1", 100, NULL, 0, &d->ntargets);
        d->change = PL_CHANGE_NEW;
    }
}

static void test_rd_output__renders_loaded_source(void **state)
{
    static const char *const paths[] = {"tests/data/skyray/deploy-scripts/ray-job.train.yaml",
                                        "tests/data/skyray/deploy-scripts/ray-service.sample.yaml"};
    struct fx *f = *state;
    struct rd_source src = RD_SOURCE_INIT;
    struct rd_file files[2];
    char *data[2];
    struct rc_err err = RC_ERR_INIT;
    struct pl_cluster c1;
    struct pl_input in;
    struct pl_result res;
    struct rd_tree t;
    char path[4096], dir[] = "/tmp/rd_output_src_XXXXXX", cmd[8192], *out;
    size_t templates = 0, labelled = 0;
    int status;

    for (size_t i = 0; i < 2; i++) {
        snprintf(path, sizeof(path), "%s/%s", RP_SOURCE_DIR, paths[i]);
        data[i] = read_file(path, &files[i].len);
        assert_non_null(data[i]);
        files[i].path = paths[i];
        files[i].data = data[i];
    }
    if (rd_source_load(&src, files, 2, &f->a, &err) < 0)
        fail_msg("%s", err.msg);
    assert_int_equal(src.nerrors, 0);
    assert_true(src.nobjects >= 3);

    place_all_on_c1(f, &src, &c1, &in, &res);
    for (size_t i = 0; i < src.nobjects; i++) {
        cJSON *tmpl[32], *tree = NULL;
        assert_int_equal(rd_object_tree(&tree, src.objects[i].payload, &err), RC_OK);
        templates += rd_pod_templates(tree, tmpl, 32);
        cJSON_Delete(tree);
    }
    if (rd_render_tree(&t, &res, &in, SOURCE, NULL, &f->a, &err) < 0)
        fail_msg("%s", err.msg);
    for (size_t i = 0; i < t.nfiles; i++) {
        const char *p = t.files[i].data;
        assert_null(strstr(t.files[i].path, "namespace.default")); /* never followed */
        if (!strncmp(t.files[i].path, "clusters/c1/default/", 20)) {
            assert_non_null(strstr(p, "namespace: default"));
            while ((p = strstr(p, "elotl-luna: \"true\"")) != NULL) {
                labelled++;
                p++;
            }
        }
    }
    assert_true(templates >= 4); /* RayJob head + worker(s), RayService head + worker(s) */
    assert_int_equal(labelled, templates);

    assert_non_null(mkdtemp(dir));
    for (size_t i = 0; i < t.nfiles; i++) {
        snprintf(path, sizeof(path), "%s/%s", dir, t.files[i].path);
        write_file(path, t.files[i].data, t.files[i].len);
    }
    snprintf(cmd, sizeof(cmd), "kubectl kustomize %s/clusters/c1 2>&1", dir);
    out = run(cmd, NULL, &status);
    if (status != 0)
        fail_msg("kubectl kustomize: %s", out);
    assert_non_null(strstr(out, "kind: RayService"));
    assert_non_null(strstr(out, "kind: RayJob"));
    free(out);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
    rd_source_release(&src);
    free(data[0]);
    free(data[1]);
}

/* A KServe InferenceService has no pod template: its controller copies each component's
 * `labels` to the component's pods, so that is where rightplace's pod labels go (Luna's among
 * them: without it Luna never scales a cluster up for the predictor). */
static const char *const isvc_yaml =
    "apiVersion: serving.kserve.io/v1beta1\n"
    "kind: InferenceService\n"
    "metadata: {name: llm, namespace: serve, labels: {app: llm}}\n"
    "spec:\n"
    "  predictor:\n"
    "    labels: {team: ml}\n"
    "    model: {modelFormat: {name: huggingface}, resources: {limits: {nvidia.com/gpu: 1}}}\n"
    "  transformer:\n"
    "    containers: [{name: t, image: t:1}]\n"
    "---\n"
    "apiVersion: serving.kserve.io/v1beta1\n"
    "kind: InferenceService\n"
    "metadata:\n"
    "  name: declared\n"
    "  namespace: serve\n"
    "  annotations: {rightplace.dev/pod-templates: spec.predictor.podTemplate=1}\n"
    "spec:\n"
    "  predictor:\n"
    "    labels: {team: ml}\n"
    "    podTemplate: {metadata: {}, spec: {containers: [{name: p, image: p:1}]}}\n";

static const cJSON *labels_at(const cJSON *root, const char *component)
{
    return cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(root, "spec"), component),
        "labels");
}

static void assert_label(const cJSON *labels, const char *key, const char *want)
{
    const char *v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(labels, key));

    if (!v || strcmp(v, want))
        fail_msg("label %s: '%s', want '%s'", key, v ? v : "(none)", want);
}

static void test_rd_output__labels_on_kserve_components(void **state)
{
    struct fx *f = *state;
    struct rd_source src = RD_SOURCE_INIT;
    struct rd_file file = {"serve/llm.yaml", isvc_yaml, strlen(isvc_yaml)};
    struct rc_err err = RC_ERR_INIT;
    struct rd_render_options pull = RD_RENDER_OPTIONS_INIT;
    struct pl_cluster c1;
    struct pl_input in;
    struct pl_result res;
    struct rd_tree t;
    char unit[17];
    cJSON *isvc, *tree = NULL, *comp[RD_POD_COMPONENTS_MAX];
    const cJSON *l;

    if (rd_source_load(&src, &file, 1, &f->a, &err) < 0)
        fail_msg("%s", err.msg);
    assert_int_equal(src.nerrors, 0);
    assert_int_equal(src.nobjects, 2);
    for (size_t i = 0; i < 2; i++) { /* declared: none; llm: predictor and transformer */
        int llm = !strcmp(src.objects[i].name, "llm");
        assert_int_equal(rd_object_tree(&tree, src.objects[i].payload, &err), RC_OK);
        assert_int_equal(rd_pod_components(tree, comp, RD_POD_COMPONENTS_MAX), llm ? 2 : 0);
        if (llm)
            assert_non_null(cJSON_GetObjectItemCaseSensitive(comp[1], "containers"));
        cJSON_Delete(tree);
    }
    place_all_on_c1(f, &src, &c1, &in, &res);
    pl_unit_label("serve/InferenceService/llm", unit); /* the unit is the object (see above) */

    if (rd_render_tree(&t, &res, &in, SOURCE, NULL, &f->a, &err) < 0)
        fail_msg("%s", err.msg);
    isvc = load(find(&t, "clusters/c1/serve/inferenceservice.llm.yaml"));
    for (const char *const *c = (const char *const[]){"predictor", "transformer", NULL}; *c; c++) {
        l = labels_at(isvc, *c);
        assert_non_null(l);
        assert_label(l, PL_LABEL_MANAGED, "rightplace");
        assert_label(l, PL_LABEL_UNIT, unit);
        assert_label(l, "elotl-luna", "true");
    }
    assert_label(labels_at(isvc, "predictor"), "team", "ml"); /* its own kept */
    assert_null(labels_at(isvc, "explainer"));                /* none made up */
    assert_null(cJSON_GetObjectItemCaseSensitive(isvc, "explainer"));
    assert_our_labels(isvc, unit, 0); /* the object's own labels: no Luna label */
    cJSON_Delete(isvc);
    /* declared pod templates win: the component map is left as written */
    isvc = load(find(&t, "clusters/c1/serve/inferenceservice.declared.yaml"));
    l = labels_at(isvc, "predictor");
    assert_int_equal(cJSON_GetArraySize(l), 1);
    assert_label(l, "team", "ml");
    cJSON_Delete(isvc);

    /* pull mode: no managed-by, the rest as in push mode */
    pull.pull = 1;
    if (rd_render_tree(&t, &res, &in, SOURCE, &pull, &f->a, &err) < 0)
        fail_msg("%s", err.msg);
    isvc = load(find(&t, "clusters/c1/serve/inferenceservice.llm.yaml"));
    l = labels_at(isvc, "predictor");
    assert_null(cJSON_GetObjectItemCaseSensitive(l, PL_LABEL_MANAGED));
    assert_label(l, PL_LABEL_UNIT, unit);
    assert_label(l, "elotl-luna", "true");
    cJSON_Delete(isvc);
    rd_source_release(&src);
}

/* ==== Tests: placements.yaml ==== */

static void test_rd_output__record_round_trip(void **state)
{
    struct fx *f = *state;
    struct rd_tree t;
    struct rd_record r;
    struct rc_err err = RC_ERR_INIT;
    const struct rd_tree_file *file;
    const struct pl_prev_unit *u;

    render(f, &t);
    file = find(&t, "placements.yaml");
    if (rd_record_parse(&r, file->data, file->len, &f->a, &err) < 0)
        fail_msg("%s", err.msg);
    /* the record names no source commit: its bytes depend on the decisions alone */
    assert_string_equal(r.source, "");
    assert_null(memmem(file->data, file->len, SOURCE, strlen(SOURCE)));
    {
        const struct rd_tree_file *sf = find(&t, RD_SOURCE_FILE);
        assert_non_null(sf);
        assert_int_equal(sf->len, 41);
        assert_memory_equal(sf->data, SOURCE "\n", 41);
    }
    assert_int_equal(r.nunits, 7);
    /* sorted by unit id */
    for (size_t i = 1; i < r.nunits; i++)
        assert_true(strcmp(r.units[i - 1].unit, r.units[i].unit) < 0);
    assert_string_equal(r.units[0].unit, "Namespace/web"); /* strcmp order */
    u = &r.units[1];
    assert_string_equal(u->unit, "divide-policy/serve/api");
    assert_string_equal(u->policy, "divide-policy");
    assert_string_equal(u->policy_digest, "d3");
    assert_int_equal(u->state, PL_STATE_PLACED);
    assert_int_equal(u->nclusters, 2);
    assert_string_equal(u->clusters[0], "alpha");
    assert_string_equal(u->clusters[1], "beta");
    assert_int_equal(u->nobjects, 1);
    assert_string_equal(u->objects[0], "serve/Deployment/api");
    u = &r.units[3];
    assert_string_equal(u->unit, "misc/ConfigMap/orphan");
    assert_null(u->policy);
    assert_null(u->policy_digest);
    assert_int_equal(u->state, PL_STATE_UNPLACED);
    assert_int_equal(u->nclusters, 0);
    u = &r.units[5];
    assert_string_equal(u->unit, "rayjob-policy/rayjob3/rayjob");
    assert_int_equal(u->nobjects, 2);
    assert_string_equal(u->objects[0], "rayjob3/ConfigMap/code");
    assert_string_equal(u->objects[1], "rayjob3/RayJob/rayjob-train");
    assert_string_equal(u->reason, "no cluster fits now; beta's autoscaler (luna) can add 2 nodes");
    assert_int_equal(u->nverdicts, 2);
    assert_string_equal(u->verdicts[1].cluster, "beta");
    assert_int_equal(u->verdicts[1].kind, PL_VERDICT_FITS_AFTER_SCALE_UP);
    assert_int_equal(u->verdicts[1].nodes_added, 2);
    assert_string_equal(u->verdicts[0].detail, "worker needs nvidia.com/gpu 1; best node has 0");
    assert_int_equal(r.units[6].state, PL_STATE_PENDING);
    assert_int_equal(r.units[6].nverdicts, 3);
    assert_int_equal(r.units[6].verdicts[2].kind, PL_VERDICT_UNREACHABLE);
    /* what we write has the docs/formats.md fields and our extensions */
    assert_non_null(strstr(file->data, "kind: PlacementRecord"));
    assert_non_null(strstr(file->data, "verdict: fits-after-scale-up"));
    assert_non_null(strstr(file->data, "shares:"));
    assert_non_null(strstr(file->data, "apps/broken.yaml"));
}

static void test_rd_output__record_removed_units_dropped(void **state)
{
    struct fx *f = *state;
    struct rc_buf b = RC_BUF_INIT;
    struct rc_err err = RC_ERR_INIT;
    struct rd_record r;

    f->result.decisions[5].change = PL_CHANGE_REMOVED;
    assert_int_equal(rd_record_emit(&b, &f->result, NULL, &err), 0);
    assert_int_equal(rd_record_parse(&r, b.ptr, b.len, &f->a, &err), 0);
    assert_int_equal(r.nunits, 6);
    assert_null(strstr(b.ptr, "orphan"));
    rc_buf_release(&b);
}

static void expect_record_error(struct fx *f, const char *text, const char *msg_part)
{
    struct rd_record r;
    struct rc_err err = RC_ERR_INIT;

    assert_int_equal(rd_record_parse(&r, text, strlen(text), &f->a, &err), RC_EINVALID);
    if (!strstr(err.msg, msg_part))
        fail_msg("error '%s' does not say '%s'", err.msg, msg_part);
    assert_non_null(strstr(err.msg, "placements.yaml"));
}

static void test_rd_output__record_parse_errors(void **state)
{
    struct fx *f = *state;
    struct rd_record r;
    struct rc_err err = RC_ERR_INIT;
    const char *ok = "{\"apiVersion\":\"rightplace.dev/v1alpha1\",\"kind\":\"PlacementRecord\","
                     "\"source\":\"abc\",\"future\":{\"x\":1},\"units\":[{\"unit\":\"u\","
                     "\"state\":\"placed\",\"clusters\":[\"c\"],\"newField\":[1,2]}]}";

    const char *later = "{\"apiVersion\":\"rightplace.dev/v1alpha1\",\"kind\":\"PlacementRecord\","
                        "\"units\":[{\"unit\":\"u\",\"state\":\"pending\",\"verdicts\":["
                        "{\"cluster\":\"a\",\"verdict\":\"fits-someday\"},"
                        "{\"cluster\":\"b\",\"verdict\":\"fits-now\",\"detail\":\"ok\"}]}]}";

    /* unknown fields are fine */
    assert_int_equal(rd_record_parse(&r, ok, strlen(ok), &f->a, &err), 0);
    assert_int_equal(r.nunits, 1);
    assert_string_equal(r.units[0].clusters[0], "c");
    /* and so are verdicts of a later version: skipped */
    assert_int_equal(rd_record_parse(&r, later, strlen(later), &f->a, &err), 0);
    assert_int_equal(r.units[0].nverdicts, 1);
    assert_string_equal(r.units[0].verdicts[0].cluster, "b");

    expect_record_error(f, "{\"apiVersion\":\"v1\",\"kind\":\"PlacementRecord\"}", "apiVersion");
    expect_record_error(f, "{\"apiVersion\":\"rightplace.dev/v1alpha1\",\"kind\":\"Other\"}",
                        "PlacementRecord");
    expect_record_error(f,
                        "{\"apiVersion\":\"rightplace.dev/v1alpha1\",\"kind\":\"PlacementRecord\","
                        "\"units\":[{\"state\":\"placed\"}]}",
                        "missing field 'unit'");
    expect_record_error(f,
                        "{\"apiVersion\":\"rightplace.dev/v1alpha1\",\"kind\":\"PlacementRecord\","
                        "\"units\":[{\"unit\":\"u\",\"state\":\"gone\"}]}",
                        "unknown state 'gone'");
    expect_record_error(f,
                        "{\"apiVersion\":\"rightplace.dev/v1alpha1\",\"kind\":\"PlacementRecord\","
                        "\"units\":[{\"unit\":\"u\",\"state\":\"placed\",\"clusters\":\"c\"}]}",
                        "not a list");
    expect_record_error(f,
                        "{\"apiVersion\":\"rightplace.dev/v1alpha1\",\"kind\":\"PlacementRecord\","
                        "\"units\":[{\"unit\":\"u\",\"state\":\"pending\"},"
                        "{\"unit\":\"u\",\"state\":\"pending\"}]}",
                        "listed twice");
    expect_record_error(f, "[1, 2]", "not a mapping");
}

/* ==== Tests: capacity.yaml ==== */

static void test_rd_output__capacity_round_trip(void **state)
{
    struct fx *f = *state;
    struct rc_buf one = RC_BUF_INIT, two = RC_BUF_INIT;
    struct rc_err err = RC_ERR_INIT;
    struct pl_resnames res;
    struct pl_cluster *c = NULL;
    size_t n = 0;
    int gpu;

    assert_int_equal(rd_capacity_emit(&one, f->clusters, 3, &f->res, f->result.usage,
                                      f->result.nusage, SOURCE, &err),
                     0);
    pl_resnames_init(&res);
    if (rd_capacity_parse(&c, &n, &res, one.ptr, one.len, &f->a, &err) < 0)
        fail_msg("%s", err.msg);
    assert_int_equal(n, 3);
    assert_int_equal(
        rd_capacity_emit(&two, c, n, &res, f->result.usage, f->result.nusage, SOURCE, &err), 0);
    assert_int_equal(one.len, two.len);
    assert_memory_equal(one.ptr, two.ptr, one.len);

    /* and the parsed clusters are the ones written */
    gpu = pl_resnames_find(&res, "nvidia.com/gpu");
    assert_true(gpu >= 0);
    for (size_t i = 0; i < 3; i++) {
        const struct pl_cluster *a = &f->clusters[i], *b = &c[i];
        assert_string_equal(a->name, b->name);
        assert_int_equal(a->labels.n, b->labels.n);
        assert_int_equal(a->live, b->live);
        assert_int_equal(a->reachable, b->reachable);
        assert_int_equal(a->autoscaler, b->autoscaler);
        assert_int_equal(a->any_shape, b->any_shape);
        assert_int_equal(a->cost_micro, b->cost_micro);
        assert_int_equal(a->nshapes, b->nshapes);
        assert_int_equal(a->nnodes, b->nnodes);
        assert_int_equal(a->npresent, b->npresent);
        for (size_t k = 0; k < a->nnodes; k++) {
            assert_string_equal(a->nodes[k].name, b->nodes[k].name);
            for (int r = 0; r < 3; r++) {
                assert_int_equal(a->nodes[k].allocatable.v[r], b->nodes[k].allocatable.v[r]);
                assert_int_equal(a->nodes[k].requested.v[r], b->nodes[k].requested.v[r]);
            }
            assert_int_equal(a->nodes[k].allocatable.v[3], b->nodes[k].allocatable.v[gpu]);
            assert_int_equal(a->nodes[k].ntaints, b->nodes[k].ntaints);
            assert_int_equal(a->nodes[k].unschedulable, b->nodes[k].unschedulable);
            assert_int_equal(a->nodes[k].not_ready, b->nodes[k].not_ready);
            assert_int_equal(!a->nodes[k].shape, !b->nodes[k].shape);
        }
        for (size_t k = 0; k < a->nshapes; k++) {
            assert_string_equal(a->shapes[k].name, b->shapes[k].name);
            assert_int_equal(a->shapes[k].max, b->shapes[k].max);
            assert_int_equal(a->shapes[k].cost_micro, b->shapes[k].cost_micro);
            assert_int_equal(a->shapes[k].allocatable.v[3], b->shapes[k].allocatable.v[gpu]);
        }
    }
    assert_string_equal(c[0].present[0], "0123456789abcdef");
    assert_string_equal(c[1].nodes[0].shape, "g4dn.xlarge");
    rc_buf_release(&one);
    rc_buf_release(&two);
}

static void test_rd_output__capacity_groups_alike_nodes(void **state)
{
    struct fx *f = *state;
    struct rc_buf b = RC_BUF_INIT;
    struct rc_err err = RC_ERR_INIT;

    assert_int_equal(rd_capacity_emit(&b, f->clusters, 3, &f->res, NULL, 0, SOURCE, &err), 0);
    /* cpu-0 and cpu-1 are alike; cpu-2 has requests, gpu-0 differs */
    assert_non_null(strstr(b.ptr, "cpu-0"));
    assert_non_null(strstr(b.ptr, "names"));
    assert_non_null(strstr(b.ptr, "1.5")); /* alpha's cost */
    assert_non_null(strstr(b.ptr, "0.526"));
    assert_null(strstr(b.ptr, "usage"));
    check_golden("capacity-nousage.yaml", b.ptr, b.len);
    /* the older form names the source; this version's does not */
    assert_int_equal(rd_capacity_names_source(b.ptr, b.len), 1);
    rc_buf_reset(&b);
    assert_int_equal(rd_capacity_emit(&b, f->clusters, 3, &f->res, NULL, 0, NULL, &err), 0);
    assert_null(strstr(b.ptr, "source"));
    assert_int_equal(rd_capacity_names_source(b.ptr, b.len), 0);
    rc_buf_release(&b);
}

/* A fleet declared in Cluster objects, loaded by rd_source_load, round trips exactly. */
static void test_rd_output__capacity_of_loaded_clusters(void **state)
{
    static const char yaml[] =
        "apiVersion: rightplace.dev/v1alpha1\nkind: Cluster\nmetadata:\n  name: static\n"
        "  labels: {cluster.class: production}\nspec:\n  autoscaler: {type: none}\n"
        "  costPerHour: 2.25\n  nodes:\n"
        "  - {name: cpu, count: 3, allocatable: {cpu: \"16\", memory: 64Gi}}\n"
        "  - {name: gpu, count: 4, allocatable: {cpu: \"8\", memory: 32Gi, nvidia.com/gpu: "
        "\"1\"},\n     labels: {gpu: t4}, taints: [{key: nvidia.com/gpu, value: \"true\", "
        "effect: NoSchedule}]}\n"
        "---\napiVersion: rightplace.dev/v1alpha1\nkind: Cluster\nmetadata:\n  name: dyn\n"
        "spec:\n  autoscaler:\n    type: luna\n    nodeShapes:\n"
        "    - {name: g4dn.xlarge, max: 10, costPerHour: 0.526, allocatable: {cpu: \"4\", "
        "memory: 16Gi, nvidia.com/gpu: \"1\"},\n       taints: [{key: nvidia.com/gpu, effect: "
        "NoSchedule}]}\n";
    struct fx *f = *state;
    struct rd_source src = RD_SOURCE_INIT;
    struct rd_file file = {"fleet.yaml", yaml, sizeof(yaml) - 1};
    struct rc_err err = RC_ERR_INIT;
    struct rc_buf one = RC_BUF_INIT, two = RC_BUF_INIT;
    struct pl_resnames res;
    struct pl_cluster *c = NULL;
    size_t n = 0;

    if (rd_source_load(&src, &file, 1, &f->a, &err) < 0)
        fail_msg("%s", err.msg);
    if (src.nerrors)
        fail_msg("%s", src.errors[0].msg);
    assert_int_equal(src.nclusters, 2);
    assert_int_equal(rd_capacity_emit(&one, src.clusters, 2, &src.res, NULL, 0, SOURCE, &err), 0);
    /* 3 cpu nodes share an entry, and so do 4 gpu nodes */
    assert_non_null(strstr(one.ptr, "names:"));
    assert_non_null(strstr(one.ptr, "hostnameLabel: true"));
    pl_resnames_init(&res);
    if (rd_capacity_parse(&c, &n, &res, one.ptr, one.len, &f->a, &err) < 0)
        fail_msg("%s", err.msg);
    assert_int_equal(n, 2);
    assert_int_equal(rd_capacity_emit(&two, c, n, &res, NULL, 0, SOURCE, &err), 0);
    assert_int_equal(one.len, two.len);
    assert_memory_equal(one.ptr, two.ptr, one.len);
    for (size_t i = 0; i < n; i++) {
        const struct pl_cluster *a = &src.clusters[i], *b = &c[i];
        assert_string_equal(a->name, b->name);
        assert_int_equal(a->cost_micro, b->cost_micro);
        assert_int_equal(a->autoscaler, b->autoscaler);
        assert_int_equal(a->nnodes, b->nnodes);
        assert_int_equal(a->labels.n, b->labels.n);
        for (size_t k = 0; k < a->nnodes; k++) {
            assert_string_equal(a->nodes[k].name, b->nodes[k].name);
            assert_int_equal(a->nodes[k].labels.n, b->nodes[k].labels.n);
            for (size_t l = 0; l < a->nodes[k].labels.n; l++) {
                assert_string_equal(a->nodes[k].labels.v[l].key, b->nodes[k].labels.v[l].key);
                assert_string_equal(a->nodes[k].labels.v[l].value, b->nodes[k].labels.v[l].value);
            }
            assert_int_equal(a->nodes[k].ntaints, b->nodes[k].ntaints);
            for (int r = 0; r < src.res.n; r++) {
                int br = pl_resnames_find(&res, src.res.name[r]);
                assert_int_equal(a->nodes[k].allocatable.v[r],
                                 br < 0 ? 0 : b->nodes[k].allocatable.v[br]);
            }
        }
        for (size_t k = 0; k < a->nshapes; k++) {
            assert_string_equal(a->shapes[k].name, b->shapes[k].name);
            assert_int_equal(a->shapes[k].cost_micro, b->shapes[k].cost_micro);
            assert_int_equal(a->shapes[k].max, b->shapes[k].max);
            assert_int_equal(a->shapes[k].ntaints, b->shapes[k].ntaints);
        }
    }
    rc_buf_release(&one);
    rc_buf_release(&two);
    rd_source_release(&src);
}

static void test_rd_output__capacity_parse_errors(void **state)
{
    struct fx *f = *state;
    struct pl_resnames res;
    struct pl_cluster *c = NULL;
    size_t n = 0;
    struct rc_err err = RC_ERR_INIT;
    const char *bad[] = {
        "{\"apiVersion\":\"rightplace.dev/v1alpha1\",\"kind\":\"PlacementRecord\"}",
        "{\"apiVersion\":\"rightplace.dev/v1alpha1\",\"kind\":\"CapacitySnapshot\","
        "\"clusters\":[{\"name\":\"a\",\"autoscaler\":\"karpenter\"}]}",
        "{\"apiVersion\":\"rightplace.dev/v1alpha1\",\"kind\":\"CapacitySnapshot\","
        "\"clusters\":[{\"name\":\"a\",\"nodes\":[{\"name\":\"n\",\"allocatable\":{\"cpu\":"
        "\"lots\"}}]}]}",
        "{\"apiVersion\":\"rightplace.dev/v1alpha1\",\"kind\":\"CapacitySnapshot\","
        "\"clusters\":[{\"name\":\"a\",\"nodes\":[{\"allocatable\":{}}]}]}",
        "{\"apiVersion\":\"rightplace.dev/v1alpha1\",\"kind\":\"CapacitySnapshot\","
        "\"clusters\":[{\"name\":\"a\",\"costPerHour\":\"0.1234567\"}]}",
        "{\"apiVersion\":\"rightplace.dev/v1alpha1\",\"kind\":\"CapacitySnapshot\","
        "\"clusters\":[{\"name\":\"a\"},{\"name\":\"a\"}]}",
    };

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        pl_resnames_init(&res);
        if (rd_capacity_parse(&c, &n, &res, bad[i], strlen(bad[i]), &f->a, &err) != RC_EINVALID)
            fail_msg("case %zu parsed", i);
        assert_non_null(strstr(err.msg, ".rightplace/capacity.yaml"));
    }
}

/* ==== Tests: the commit message ==== */

static char *message(struct fx *f, const struct pl_prev_unit *prev, size_t nprev, size_t nferr)
{
    struct rc_buf b = RC_BUF_INIT;
    struct rc_err err = RC_ERR_INIT;

    if (rd_commit_message_prev(&b, &f->result, prev, nprev, SOURCE, nferr, f->ferr, &err) < 0)
        fail_msg("%s", err.msg);
    return rc_buf_detach(&b, NULL);
}

static void only_change(struct fx *f, size_t keep)
{
    for (size_t i = 0; i < f->result.ndecisions; i++) {
        if (i != keep)
            f->result.decisions[i].change = PL_CHANGE_NONE;
        else if (f->result.decisions[i].change == PL_CHANGE_NONE)
            f->result.decisions[i].change = PL_CHANGE_NEW;
    }
}

static void test_rd_output__message_single_place(void **state)
{
    struct fx *f = *state;
    char *m;

    only_change(f, 0);
    m = message(f, NULL, 0, 0);
    assert_true(!strncmp(m, "place rayjob3/rayjob-train on beta\n\n", 36));
    assert_non_null(strstr(m, "alpha: does-not-fit: worker needs nvidia.com/gpu 1"));
    assert_non_null(strstr(m, "(2 nodes to add)"));
    free(m);
}

static void test_rd_output__message_move_pending_remove(void **state)
{
    struct fx *f = *state;
    struct pl_prev_unit prev = {0};
    const char *from[] = {"alpha"};
    char *m;

    only_change(f, 0);
    f->result.decisions[0].change = PL_CHANGE_MOVED;
    f->result.decisions[0].cause = "cluster 'alpha' no longer matches policy 'rayjob-policy'";
    prev.unit = "rayjob-policy/rayjob3/rayjob";
    prev.nclusters = 1;
    prev.clusters = from;
    m = message(f, &prev, 1, 0);
    assert_true(!strncmp(m, "move rayjob3/rayjob-train from alpha to beta\n", 45));
    assert_non_null(strstr(m, "cause: cluster 'alpha' no longer matches"));
    free(m);
    m = message(f, NULL, 0, 0);
    assert_true(!strncmp(m, "move rayjob3/rayjob-train to beta\n", 34));
    free(m);

    only_change(f, 4);
    m = message(f, NULL, 0, 0);
    if (strncmp(m, "pending rayjob4/rayjob-big\n", 27))
        fail_msg("%s", m);
    free(m);

    /* removed: only keys are left */
    only_change(f, 2);
    f->result.decisions[2].change = PL_CHANGE_REMOVED;
    f->result.decisions[2].objects = NULL;
    m = message(f, NULL, 0, 0);
    assert_true(!strncmp(m, "remove serve/api\n", 17));
    assert_non_null(strstr(m, "Rightplace-Placed: 3\n")); /* the removed unit is not counted */
    free(m);
}

static void test_rd_output__message_summary(void **state)
{
    struct fx *f = *state;
    char *m = message(f, NULL, 0, 1);
    char *nl = strchr(m, '\n');

    assert_non_null(nl);
    *nl = 0;
    assert_string_equal(m, "place 4 units, 1 pending, 1 unplaced");
    *nl = '\n';
    assert_non_null(strstr(m, "not loaded, placements kept: apps/broken.yaml:3:7: found a tab"));
    check_golden("message.txt", m, strlen(m));
    free(m);
}

static void test_rd_output__message_subject_fits(void **state)
{
    struct fx *f = *state;
    struct pl_target *t;
    char *m;

    /* a single change whose sentence would be too long falls back to counts */
    only_change(f, 1);
    t = rc_arena_calloc(&f->a, 2, sizeof(*t));
    t[0].cluster = "a-cluster-with-a-really-long-name-in-region-one";
    t[0].percent = 100;
    t[1].cluster = "another-cluster-with-a-really-long-name-in-region-two";
    t[1].percent = 100;
    f->result.decisions[1].targets = t;
    m = message(f, NULL, 0, 0);
    assert_true(!strncmp(m, "place 1 unit\n\nplace web/frontend on a-cluster", 45));
    free(m);

    /* nothing changed: the record is refreshed, and says why when files failed */
    for (size_t i = 0; i < f->result.ndecisions; i++)
        f->result.decisions[i].change = PL_CHANGE_NONE;
    m = message(f, NULL, 0, 1);
    assert_true(!strncmp(m, "update placement record (1 source file not loaded)\n\n", 52));
    free(m);
}

static void test_rd_output__message_bounded(void **state)
{
    struct fx *f = *state;
    struct pl_decision *d = rc_arena_calloc(&f->a, 150, sizeof(*d));
    char *m, *out;
    int status;

    for (size_t i = 0; i < 150; i++) {
        d[i] = f->result.decisions[0];
        d[i].unit = rc_arena_printf(&f->a, "p/ns/unit-%03zu", i);
        d[i].change = PL_CHANGE_NEW;
    }
    f->result.decisions = d;
    f->result.ndecisions = 150;
    m = message(f, NULL, 0, 0);
    /* the subject says where they went when that fits */
    assert_true(!strncmp(m, "place 150 units on ", 19));
    assert_true(strchr(m, '\n') - m <= 72);
    assert_non_null(strstr(m, "unit: p/ns/unit-099"));
    assert_null(strstr(m, "unit: p/ns/unit-100"));
    assert_non_null(strstr(m, "... and 50 more changed units: see placements.yaml\n"));
    out = run("git interpret-trailers --parse", m, &status);
    assert_non_null(strstr(out, "Rightplace-Placed: 150\n"));
    free(out);
    free(m);
}

/* A paragraph lists the verdicts the record lists (the chosen clusters, the preferred ones
 * passed over) and counts the rest by kind: its size does not depend on the fleet's. The
 * engine's bounded list (reconcile) and the whole one (plan) give the same bytes. */
static void test_rd_output__message_verdicts_bounded(void **state)
{
    struct fx *f = *state;
    struct pl_decision *d = &f->result.decisions[0];
    struct pl_verdict *v = rc_arena_calloc(&f->a, 100, sizeof(*v));
    struct pl_target *t = rc_arena_calloc(&f->a, 1, sizeof(*t));
    unsigned char keep[100];
    size_t counts[4], omitted, n = 0, lines = 0;
    char *whole, *bounded, *p;

    only_change(f, 0);
    for (size_t i = 0; i < 100; i++) {
        v[i].cluster = rc_arena_printf(&f->a, "c-%03zu", i);
        v[i].kind = i < 20        ? PL_VERDICT_DOES_NOT_FIT
                    : i % 10 == 0 ? PL_VERDICT_FITS_AFTER_SCALE_UP
                                  : PL_VERDICT_FITS_NOW;
        v[i].detail = "the numbers";
    }
    t->cluster = "c-021";
    t->percent = 100;
    d->targets = t;
    d->ntargets = 1;
    d->verdicts = v;
    d->nverdicts = 100;
    d->verdicts_omitted = 0;
    whole = message(f, NULL, 0, 0);
    /* the 3 preferred over c-021 that were passed over, c-021, and a count of the other 96 */
    for (p = whole; (p = strstr(p, "\n  c-")) != NULL; p++)
        lines++;
    assert_int_equal(lines, 4);
    assert_non_null(strstr(whole, "\n  c-000: does-not-fit: the numbers\n"));
    assert_non_null(strstr(whole, "\n  c-021: fits-now: the numbers\n"));
    assert_null(strstr(whole, "c-003:"));
    assert_non_null(strstr(whole, "\n  ... and 96 more: 71 fits-now, 8 fits-after-scale-up, "
                                  "17 does-not-fit\n    (rightplace explain lists each)\n"));

    omitted =
        pl_verdicts_select(keep, counts, d, RD_RECORD_CHOSEN_VERDICTS, RD_RECORD_PASSED_VERDICTS);
    assert_int_equal(omitted, 96);
    d->verdicts = rc_arena_calloc(&f->a, 100, sizeof(*v));
    for (size_t i = 0; i < 100; i++) {
        if (keep[i])
            d->verdicts[n++] = v[i];
    }
    d->nverdicts = n;
    d->verdicts_omitted = omitted;
    memcpy(d->verdict_counts, counts, sizeof(counts));
    bounded = message(f, NULL, 0, 0);
    assert_string_equal(bounded, whole);
    free(bounded);
    free(whole);
}

static void test_rd_output__message_wraps_at_72(void **state)
{
    struct fx *f = *state;
    char *m, *line;

    f->result.decisions[0].reason =
        "no cluster fits now; a very long explanation that goes on and on about why nothing "
        "fits, with numbers 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 and more words";
    m = message(f, NULL, 0, 1);
    line = m;
    while (*line) {
        char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line) : strlen(line);
        if (len > 72 && memchr(line + 4, ' ', len - 4))
            fail_msg("line longer than 72: %.*s", (int)len, line);
        line += len + (nl ? 1 : 0);
    }
    free(m);
}

static void test_rd_output__message_trailers_parse(void **state)
{
    struct fx *f = *state;
    char *m = message(f, NULL, 0, 1), *out;
    int status;

    out = run("git interpret-trailers --parse", m, &status);
    assert_int_equal(status, 0);
    assert_string_equal(out, "Rightplace-Source: " SOURCE "\n"
                             "Rightplace-Placed: 4\n"
                             "Rightplace-Pending: 1\n"
                             "Rightplace-Unplaced: 2\n");
    free(out);
    free(m);

    /* also with a single change and no file errors */
    only_change(f, 4);
    m = message(f, NULL, 0, 0);
    out = run("git interpret-trailers --parse", m, &status);
    assert_int_equal(status, 0);
    assert_non_null(strstr(out, "Rightplace-Pending: 1\n"));
    free(out);
    free(m);
}

/* ==== Tests: with the engine (replay and stickiness) ==== */

static const char fleet_src[] =
    "apiVersion: rightplace.dev/v1alpha1\nkind: Cluster\nmetadata: {name: static-cluster, "
    "labels: {cluster.class: production}}\nspec:\n  autoscaler: {type: none}\n  nodes:\n"
    "  - {name: cpu, count: 2, allocatable: {cpu: \"8\", memory: 32Gi}}\n"
    "  - {name: gpu, count: 2, allocatable: {cpu: \"8\", memory: 32Gi, nvidia.com/gpu: \"1\"},"
    " taints: [{key: nvidia.com/gpu, value: \"true\", effect: NoSchedule}]}\n"
    "---\napiVersion: rightplace.dev/v1alpha1\nkind: Cluster\nmetadata: {name: dynamic-cluster, "
    "labels: {cluster.class: production}}\nspec:\n  autoscaler:\n    type: luna\n"
    "    nodeShapes:\n    - {name: g4dn.xlarge, max: 10, costPerHour: 0.526, allocatable: "
    "{cpu: \"4\", memory: 16Gi, nvidia.com/gpu: \"1\"}, taints: [{key: nvidia.com/gpu, value: "
    "\"true\", effect: NoSchedule}]}\n  nodes:\n  - {name: cpu, count: 1, allocatable: "
    "{cpu: \"4\", memory: 16Gi}}\n"
    "---\napiVersion: policy.elotl.co/v1alpha1\nkind: SchedulePolicy\nmetadata: {name: "
    "rayjob-capacity-policy}\nspec:\n  namespaceSelector: {matchExpressions: [{key: "
    "kubernetes.io/metadata.name, operator: Exists}]}\n  resourceSelectors: {labelSelectors: "
    "[{matchLabels: {app.kubernetes.io/instance: rayjob}}]}\n  groupBy: {labelKey: "
    "app.kubernetes.io/instance}\n";

static const char job_fmt[] =
    "apiVersion: ray.io/v1\nkind: RayJob\nmetadata: {name: rayjob-train, namespace: rayjob%d, "
    "labels: {app.kubernetes.io/instance: rayjob}}\nspec:\n  entrypoint: python train.py\n"
    "  rayClusterSpec:\n    headGroupSpec:\n      rayStartParams: {}\n      template:\n"
    "        spec:\n          containers:\n          - name: head\n            image: ray\n"
    "            resources: {requests: {cpu: \"1\", memory: 2Gi}}\n"
    "    workerGroupSpecs:\n    - groupName: gpu\n      replicas: 2\n      rayStartParams: {}\n"
    "      template:\n        spec:\n          tolerations: [{key: nvidia.com/gpu, operator: "
    "Exists, effect: NoSchedule}]\n          containers:\n          - name: worker\n"
    "            image: ray\n            resources: {requests: {cpu: \"2\", memory: 8Gi, "
    "nvidia.com/gpu: \"1\"}, limits: {nvidia.com/gpu: \"1\"}}\n"
    "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: code, namespace: rayjob%d, "
    "labels: {app.kubernetes.io/instance: rayjob}}\ndata: {train.py: print(1)}\n";

static void load_fleet_source(struct fx *f, struct rd_source *src, int njobs)
{
    struct rd_file files[4];
    struct rc_err err = RC_ERR_INIT;

    files[0].path = "fleet.yaml";
    files[0].data = fleet_src;
    files[0].len = sizeof(fleet_src) - 1;
    for (int i = 1; i <= njobs; i++) {
        files[i].path = rc_arena_printf(&f->a, "jobs/rayjob%d.yaml", i);
        files[i].data = rc_arena_printf(&f->a, job_fmt, i, i);
        files[i].len = strlen(files[i].data);
    }
    if (rd_source_load(src, files, (size_t)njobs + 1, &f->a, &err) < 0)
        fail_msg("%s", err.msg);
    if (src->nerrors)
        fail_msg("%s", src->errors[0].msg);
}

static void input_from(struct pl_input *in, const struct rd_source *src,
                       const struct pl_resnames *res, const struct pl_cluster *clusters,
                       size_t nclusters, const struct rd_record *prev)
{
    memset(in, 0, sizeof(*in));
    in->res = res;
    in->nobjects = src->nobjects;
    in->objects = src->objects;
    in->nnamespaces = src->nnamespaces;
    in->namespaces = src->namespaces;
    in->npolicies = src->npolicies;
    in->policies = src->policies;
    in->nclusters = nclusters;
    in->clusters = clusters;
    if (prev) {
        in->nprev = prev->nunits;
        in->prev = prev->units;
    }
}

static void place_render(struct fx *f, struct rd_tree *t, struct pl_result *res,
                         const struct pl_input *in)
{
    struct rc_err err = RC_ERR_INIT;

    if (pl_place(res, in, &f->a, &err) < 0)
        fail_msg("pl_place: %s", err.msg);
    if (rd_render_tree(t, res, in, SOURCE, NULL, &f->a, &err) < 0)
        fail_msg("rd_render_tree: %s", err.msg);
}

static void assert_same_tree(const struct rd_tree *a, const struct rd_tree *b)
{
    assert_int_equal(a->nfiles, b->nfiles);
    for (size_t i = 0; i < a->nfiles; i++) {
        assert_string_equal(a->files[i].path, b->files[i].path);
        if (a->files[i].len != b->files[i].len ||
            memcmp(a->files[i].data, b->files[i].data, a->files[i].len))
            fail_msg("%s differs:\n%s\n---\n%s", a->files[i].path, a->files[i].data,
                     b->files[i].data);
    }
}

/* Replay: the decisions recomputed from the recorded capacity are the recorded ones; and the
 * next pass with the record as previous placements changes nothing (stickiness). */
static void test_rd_output__replay_and_stickiness(void **state)
{
    struct fx *f = *state;
    struct rd_source src = RD_SOURCE_INIT;
    struct pl_input in;
    struct pl_result r1, r2, r3;
    struct rd_tree t1, t2, t3;
    struct rd_record rec;
    struct pl_resnames res;
    struct pl_cluster *cap = NULL;
    size_t ncap = 0;
    struct rc_err err = RC_ERR_INIT;
    const struct rd_tree_file *file;
    struct rc_buf msg = RC_BUF_INIT;

    load_fleet_source(f, &src, 3);
    input_from(&in, &src, &src.res, src.clusters, src.nclusters, NULL);
    place_render(f, &t1, &r1, &in);
    file = find(&t1, "placements.yaml");
    assert_non_null(strstr(file->data, "clusters:\n  - static-cluster"));
    assert_non_null(strstr(file->data, "clusters:\n  - dynamic-cluster"));

    /* replay from the snapshot */
    file = find(&t1, ".rightplace/capacity.yaml");
    res = src.res; /* intern into the source's table, so that demand indices agree */
    if (rd_capacity_parse(&cap, &ncap, &res, file->data, file->len, &f->a, &err) < 0)
        fail_msg("%s", err.msg);
    assert_int_equal(res.n, src.res.n);
    input_from(&in, &src, &res, cap, ncap, NULL);
    place_render(f, &t2, &r2, &in);
    assert_same_tree(&t1, &t2);

    /* the next pass, with the record as previous placements: nothing changes */
    file = find(&t1, "placements.yaml");
    if (rd_record_parse(&rec, file->data, file->len, &f->a, &err) < 0)
        fail_msg("%s", err.msg);
    assert_string_equal(rec.source, ""); /* RD_SOURCE_FILE names it */
    input_from(&in, &src, &src.res, src.clusters, src.nclusters, &rec);
    place_render(f, &t3, &r3, &in);
    for (size_t i = 0; i < r3.ndecisions; i++)
        assert_int_equal(r3.decisions[i].change, PL_CHANGE_NONE);
    assert_int_equal(rd_commit_message(&msg, &r3, SOURCE, 0, NULL, &err), 0);
    assert_true(!strncmp(msg.ptr, "update placement record\n", 24));
    rc_buf_release(&msg);
    /* the first pass's message names what it placed */
    assert_int_equal(rd_commit_message(&msg, &r1, SOURCE, 0, NULL, &err), 0);
    assert_true(!strncmp(msg.ptr, "place 3 units", 13));
    rc_buf_release(&msg);
    rd_source_release(&src);
}

/* ==== Tests: determinism and errors ==== */

static void test_rd_output__deterministic(void **state)
{
    struct fx *f = *state;
    struct rd_tree t1, t2;
    struct pl_decision tmp;

    render(f, &t1);
    /* other input order, same result */
    tmp = f->result.decisions[0];
    f->result.decisions[0] = f->result.decisions[6];
    f->result.decisions[6] = tmp;
    render(f, &t2);
    assert_int_equal(t1.nfiles, t2.nfiles);
    for (size_t i = 0; i < t1.nfiles; i++) {
        assert_string_equal(t1.files[i].path, t2.files[i].path);
        assert_int_equal(t1.files[i].len, t2.files[i].len);
        assert_memory_equal(t1.files[i].data, t2.files[i].data, t1.files[i].len);
    }
}

static void test_rd_output__rejects_unwritable_objects(void **state)
{
    struct fx *f = *state;
    struct rd_tree t;
    struct rc_err err = RC_ERR_INIT;
    struct pl_object *o = (struct pl_object *)f->result.decisions[2].objects[0];
    void *payload = o->payload;

    o->payload = NULL;
    assert_int_equal(rd_render_tree(&t, &f->result, &f->in, SOURCE, NULL, &f->a, &err),
                     RC_EINVALID);
    assert_non_null(strstr(err.msg, "serve/Deployment/api"));
    o->payload = payload;
    o->name = "../x";
    assert_int_equal(rd_render_tree(&t, &f->result, &f->in, SOURCE, NULL, &f->a, &err),
                     RC_EINVALID);
    o->name = "api";
}

/* ==== Tests: render threads ==== */

static const char many_src[] =
    "apiVersion: rightplace.dev/v1alpha1\nkind: Cluster\nmetadata: {name: east}\nspec:\n"
    "  autoscaler: {type: none}\n  nodes:\n"
    "  - {name: cpu, count: 100, allocatable: {cpu: \"64\", memory: 256Gi}}\n"
    "---\napiVersion: rightplace.dev/v1alpha1\nkind: Cluster\nmetadata: {name: west}\nspec:\n"
    "  autoscaler: {type: none}\n  nodes:\n"
    "  - {name: cpu, count: 100, allocatable: {cpu: \"64\", memory: 256Gi}}\n"
    "---\napiVersion: policy.elotl.co/v1alpha1\nkind: SchedulePolicy\nmetadata: {name: "
    "spread}\nspec:\n  namespaceSelector: {matchExpressions: [{key: "
    "kubernetes.io/metadata.name, operator: Exists}]}\n  resourceSelectors: {labelSelectors: "
    "[{matchLabels: {team: ml}}]}\n  groupBy: {labelKey: app.kubernetes.io/instance}\n";

static const char many_fmt[] =
    "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web-%d, namespace: ns%d, labels: "
    "{team: ml, app.kubernetes.io/instance: job%d}}\nspec:\n  replicas: 2\n  template:\n"
    "    metadata: {labels: {app: web}}\n    spec:\n      containers:\n      - name: web\n"
    "        image: nginx\n        resources: {requests: {cpu: 100m, memory: 64Mi}}\n"
    "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: conf-%d, namespace: ns%d, labels: "
    "{team: ml, app.kubernetes.io/instance: job%d}}\ndata: {a: \"1\"}\n";

static void render_threads(struct fx *f, struct rd_tree *t, const struct pl_result *res,
                           const struct pl_input *in, int threads)
{
    struct rc_err err = RC_ERR_INIT;
    struct rd_render_options o = RD_RENDER_OPTIONS_INIT;

    o.nfile_errors = 1;
    o.file_errors = f->ferr;
    o.threads = threads;
    if (rd_render_tree(t, res, in, SOURCE, &o, &f->a, &err) < 0)
        fail_msg("rd_render_tree on %d threads: %s", threads, err.msg);
}

static void assert_same_warnings(const struct rd_tree *a, const struct rd_tree *b)
{
    assert_int_equal(a->nwarnings, b->nwarnings);
    for (size_t i = 0; i < a->nwarnings; i++)
        assert_string_equal(a->warnings[i], b->warnings[i]);
}

/* Object files rendered on several threads make the same tree, byte for byte, as on one:
 * the fixture's (Divide, namespaces, cluster-scoped objects) and a fleet of 600 jobs. */
static void test_rd_output__threads_same_tree(void **state)
{
    struct fx *f = *state;
    enum { NJOBS = 600 };
    struct rd_tree t1, tn;
    struct rd_source src = RD_SOURCE_INIT;
    struct rd_file *files = rc_arena_calloc(&f->a, NJOBS + 1, sizeof(*files));
    struct pl_input in;
    struct pl_result res;
    struct rc_err err = RC_ERR_INIT;

    render_threads(f, &t1, &f->result, &f->in, 1);
    for (int n = 2; n <= 5; n++) {
        render_threads(f, &tn, &f->result, &f->in, n);
        assert_same_tree(&t1, &tn);
        assert_same_warnings(&t1, &tn);
        assert_int_equal(t1.nrendered, tn.nrendered);
    }

    files[0].path = "fleet.yaml";
    files[0].data = many_src;
    files[0].len = sizeof(many_src) - 1;
    for (int i = 1; i <= NJOBS; i++) {
        files[i].path = rc_arena_printf(&f->a, "jobs/job%d.yaml", i);
        files[i].data = rc_arena_printf(&f->a, many_fmt, i, i % 7, i, i, i % 7, i);
        files[i].len = strlen(files[i].data);
    }
    if (rd_source_load(&src, files, NJOBS + 1, &f->a, &err) < 0)
        fail_msg("%s", err.msg);
    input_from(&in, &src, &src.res, src.clusters, src.nclusters, NULL);
    if (pl_place(&res, &in, &f->a, &err) < 0)
        fail_msg("pl_place: %s", err.msg);
    render_threads(f, &t1, &res, &in, 1);
    assert_int_equal(t1.nrendered, 2 * NJOBS); /* enough for the default to use threads */
    for (int n = 0; n <= 3; n++) {
        render_threads(f, &tn, &res, &in, n);
        assert_same_tree(&t1, &tn);
        assert_int_equal(t1.nrendered, tn.nrendered);
    }
    rd_source_release(&src);
}

/* An object that cannot be rendered fails the render with the same error on any number of
 * threads: the first such object in tree order. */
static void test_rd_output__threads_same_error(void **state)
{
    struct fx *f = *state;
    struct rd_tree t;
    struct rd_render_options o = RD_RENDER_OPTIONS_INIT;
    char first[RC_ERR_MSG_MAX];
    struct pl_object *a1 = (struct pl_object *)f->result.decisions[2].objects[0];
    const char *name = a1->name;

    a1->name = "../x";
    for (int n = 1; n <= 3; n++) {
        struct rc_err err = RC_ERR_INIT;

        o.threads = n;
        assert_int_equal(rd_render_tree(&t, &f->result, &f->in, SOURCE, &o, &f->a, &err),
                         RC_EINVALID);
        if (n == 1)
            snprintf(first, sizeof(first), "%s", err.msg);
        assert_string_equal(err.msg, first);
    }
    a1->name = name;
}

/* RD_KEPT_FILE: what rd_kept_emit writes, rd_kept_parse reads back, whatever bytes a path
 * holds (git allows any but NUL); what it did not write is refused with its line. */
static void test_rd_output__kept_round_trip(void **state)
{
    static const char id[] = "0123456789abcdef0123456789abcdef01234567";
    struct rd_kept in[6], *out = NULL;
    struct rc_buf b = RC_BUF_INIT;
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_err err = RC_ERR_INIT;
    struct rd_render_options o = RD_RENDER_OPTIONS_INIT;
    struct fx *f = *state;
    struct rd_tree t;
    size_t n = 0;
    int found = -1;
    static const struct {
        const char *text, *msg;
    } bad[] = {
        {"- a.yaml", ":1: the last line has no newline"},
        {"# c\n0123 a.yaml\n", ":2: not '<blob id or -> <path>'"},
        {"0123456789ABCDEF0123456789ABCDEF01234567 a.yaml\n", ":1: not"},
        {"-  \n- \n", ":2: not"},
        {"-a.yaml\n", ":1: not"},
        {"- b.yaml\n- a.yaml\n", ":2: 'a.yaml' is out of order or listed twice"},
        {"- a.yaml\n- a.yaml\n", ":2: 'a.yaml' is out of order or listed twice"},
        {"- a%41.yaml\n", ":1: a bad escape"},
        {"- a%00.yaml\n", ":1: a bad escape"},
        {"- a%2.yaml\n", ":1: a bad escape"},
        {"- a%\n", ":1: a bad escape"},
        {"- a\tb.yaml\n", ":1: a control byte"},
    };

    memset(in, 0, sizeof(in));
    in[0].path = "#hash.yaml";
    in[1].path = "a b/\tc%d.yaml";
    memcpy(in[1].id, id, 41);
    in[2].path = "a b/line\nbreak.yaml";
    in[3].path = "caf\xc3\xa9/\x7f\xff.yaml";
    memcpy(in[3].id, id, 41);
    in[4].path = "z.yaml";
    rd_kept_emit(&b, in, 5);
    assert_non_null(strstr(b.ptr, "\n"
                                  "0123456789abcdef0123456789abcdef01234567 a b/%09c%25d.yaml\n"));
    assert_non_null(strstr(b.ptr, "\n- a b/line%0Abreak.yaml\n"));
    assert_int_equal(rd_kept_parse(&out, &n, b.ptr, b.len, &a, &err), RC_OK);
    assert_int_equal(n, 5);
    for (size_t i = 0; i < n; i++) {
        assert_string_equal(out[i].path, in[i].path);
        assert_string_equal(out[i].id, in[i].id);
    }
    assert_ptr_equal(rd_kept_find(out, n, "caf\xc3\xa9/\x7f\xff.yaml"), &out[3]);
    assert_null(rd_kept_find(out, n, "b.yaml"));
    assert_int_equal(rd_kept_parse(&out, &n, "", 0, &a, &err), RC_OK);
    assert_int_equal(n, 0);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char want[128];
        snprintf(want, sizeof(want), "%s%s", RD_KEPT_FILE, bad[i].msg);
        assert_int_equal(rd_kept_parse(&out, &n, bad[i].text, strlen(bad[i].text), &a, &err),
                         RC_EINVALID);
        if (strncmp(err.msg, want, strlen(want)))
            fail_msg("'%s': %s, not %s", bad[i].text, err.msg, want);
    }

    /* the tree has the file exactly when a file was broken */
    render(f, &t);
    for (size_t i = 0; i < t.nfiles; i++)
        assert_string_not_equal(t.files[i].path, RD_KEPT_FILE);
    o.nkept = 2;
    o.kept = &in[3];
    assert_int_equal(rd_render_tree(&t, &f->result, &f->in, SOURCE, &o, &f->a, &err), RC_OK);
    for (size_t i = 0; i < t.nfiles; i++)
        if (!strcmp(t.files[i].path, RD_KEPT_FILE))
            found = (int)i;
    assert_true(found >= 0);
    rc_buf_reset(&b);
    rd_kept_emit(&b, &in[3], 2);
    assert_int_equal(t.files[found].len, b.len);
    assert_memory_equal(t.files[found].data, b.ptr, b.len);
    rc_buf_release(&b);
    rc_arena_release(&a);
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_rd_output__file_list),
        T(test_rd_output__kept_round_trip),
        T(test_rd_output__golden_tree),
        T(test_rd_output__kustomization_is_the_emitters),
        T(test_rd_output__labels_on_pod_templates),
        T(test_rd_output__luna_label_configurable),
        T(test_rd_output__divide_replicas),
        T(test_rd_output__namespaces_follow),
        T(test_rd_output__system_namespaces_not_followed),
        T(test_rd_output__kustomize_builds),
        T(test_rd_output__renders_loaded_source),
        T(test_rd_output__labels_on_kserve_components),
        T(test_rd_output__record_round_trip),
        T(test_rd_output__record_removed_units_dropped),
        T(test_rd_output__record_parse_errors),
        T(test_rd_output__capacity_round_trip),
        T(test_rd_output__capacity_groups_alike_nodes),
        T(test_rd_output__capacity_of_loaded_clusters),
        T(test_rd_output__capacity_parse_errors),
        T(test_rd_output__message_single_place),
        T(test_rd_output__message_move_pending_remove),
        T(test_rd_output__message_summary),
        T(test_rd_output__message_verdicts_bounded),
        T(test_rd_output__message_subject_fits),
        T(test_rd_output__message_bounded),
        T(test_rd_output__message_wraps_at_72),
        T(test_rd_output__message_trailers_parse),
        T(test_rd_output__replay_and_stickiness),
        T(test_rd_output__deterministic),
        T(test_rd_output__rejects_unwritable_objects),
        T(test_rd_output__threads_same_tree),
        T(test_rd_output__threads_same_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
