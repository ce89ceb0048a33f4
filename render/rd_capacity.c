/*
 * rd_capacity.c - .rightplace/capacity.yaml: the fleet a pass's decisions were made against,
 * written so that replay can rebuild exactly the same pl_cluster inputs.
 *
 *   apiVersion: rightplace.dev/v1alpha1
 *   kind: CapacitySnapshot
 *   source: <source commit id>     # only in the older form (rd_render_options.capacity_source)
 *   clusters:                      # in input order (sorted by name)
 *   - name: static-cluster
 *     labels: {cluster.class: production, kubernetes.io/metadata.name: static-cluster}
 *     live: false
 *     reachable: true
 *     unreachableFor: 720          # seconds the pass saw it unreachable (absent: reachable or
 *                                  #   unknown); replay feeds it to the engine as it was
 *     autoscaler: none             # none | cluster-autoscaler | luna
 *     anyShape: false
 *     costPerHour: "0.526"         # exact decimal, absent when unknown (0)
 *     shapes:                      # what the autoscaler can add
 *     - {name, max (absent: no limit), costPerHour, allocatable, labels, taints}
 *     nodes:                       # consecutive nodes alike but for the name share an entry
 *     - names: [gpu-0, gpu-1]      # or name: gpu-0
 *       shape: g4dn.xlarge         # absent: none
 *       allocatable: {cpu: "8", memory: 32Gi, nvidia.com/gpu: "1", pods: "110"}
 *       requested: {...}           # absent: nothing
 *       labels: {...}              # without kubernetes.io/hostname when it is the name:
 *       hostnameLabel: true        #   each node has kubernetes.io/hostname = its name
 *       taints: [{key, value, effect}]
 *       unschedulable: true        # absent: false
 *       notReady: true             # absent: false
 *     present: [<unit label>, ...] # units observed on the cluster
 *     usage:                       # for people; the parser ignores it
 *       allocatable: {...}
 *       requested: {...}
 *       committed: {...}
 *       nodesToAdd: 2
 *
 * Amounts are quantity strings (pl_quantity_format, exact), keyed by resource name in name
 * order, zero amounts left out.
 */
#include "rc_sort.h"
#include "rd_output.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pl_basics.h"
#include "pl_quantity.h"
#include "rc_arena.h"
#include "rc_mem.h"
#include "rd_output_internal.h"
#include "rd_yaml.h"

#define CAPACITY_FILE ".rightplace/capacity.yaml"

static const char *const autoscaler_names[] = {"none", "cluster-autoscaler", "luna"};

/* ==== Writing ==== */

static int is_memory_resource(const char *name)
{
    return !strcmp(name, "memory") || !strcmp(name, "ephemeral-storage") ||
           !strncmp(name, "hugepages-", 10);
}

static int cmp_index_by_name(const void *x, const void *y, const struct pl_resnames *res)
{
    return strcmp(res->name[*(const int *)x], res->name[*(const int *)y]);
}

/* Resource indices in name order (insertion sort: at most PL_RES_MAX). */
static int sorted_resources(int idx[PL_RES_MAX], const struct pl_resnames *res)
{
    int n = res->n < PL_RES_MAX ? res->n : PL_RES_MAX;

    for (int i = 0; i < n; i++) {
        int j = i;
        idx[i] = i;
        while (j > 0 && cmp_index_by_name(&idx[j - 1], &idx[j], res) > 0) {
            int t = idx[j];
            idx[j] = idx[j - 1];
            idx[j - 1] = t;
            j--;
        }
    }
    return n;
}

static cJSON *res_json(const struct pl_res *r, const struct pl_resnames *res)
{
    cJSON *o = cJSON_CreateObject();
    int idx[PL_RES_MAX], n = sorted_resources(idx, res);

    for (int i = 0; i < n; i++) {
        char q[PL_QUANTITY_STR];
        if (r->v[idx[i]] == 0)
            continue;
        pl_quantity_format(q, r->v[idx[i]], is_memory_resource(res->name[idx[i]]));
        rd_out_add_str(o, res->name[idx[i]], q);
    }
    return o;
}

static int res_is_zero(const struct pl_res *r)
{
    for (int i = 0; i < PL_RES_MAX; i++) {
        if (r->v[i])
            return 0;
    }
    return 1;
}

static cJSON *labels_json(const struct pl_labels *l)
{
    cJSON *o = cJSON_CreateObject();

    for (size_t i = 0; i < l->n; i++)
        rd_out_add_str(o, l->v[i].key, l->v[i].value);
    return o;
}

static cJSON *taints_json(const struct pl_taint *t, size_t n)
{
    cJSON *arr = cJSON_CreateArray();

    for (size_t i = 0; i < n; i++) {
        cJSON *o = rd_out_push(arr, cJSON_CreateObject());
        rd_out_add_str(o, "key", t[i].key);
        if (t[i].value && *t[i].value)
            rd_out_add_str(o, "value", t[i].value);
        rd_out_add_str(o, "effect", t[i].effect);
    }
    return arr;
}

/* Cost per hour in millionths -> "0.526" (exact). */
static void format_micro(char out[32], int64_t micro)
{
    uint64_t m = micro < 0 ? (uint64_t)0 - (uint64_t)micro : (uint64_t)micro;
    char frac[8];
    int len;

    snprintf(frac, sizeof(frac), "%06u", (unsigned)(m % 1000000u));
    len = 6;
    while (len > 0 && frac[len - 1] == '0')
        len--;
    snprintf(out, 32, "%s%llu%s%.*s", micro < 0 ? "-" : "", (unsigned long long)(m / 1000000u),
             len ? "." : "", len, frac);
}

static int str_eq(const char *a, const char *b)
{
    return a == b || (a && b && !strcmp(a, b));
}

static int taints_eq(const struct pl_taint *a, size_t na, const struct pl_taint *b, size_t nb)
{
    if (na != nb)
        return 0;
    for (size_t i = 0; i < na; i++) {
        if (!str_eq(a[i].key, b[i].key) || !str_eq(a[i].value, b[i].value) ||
            !str_eq(a[i].effect, b[i].effect))
            return 0;
    }
    return 1;
}

#define LABEL_HOSTNAME "kubernetes.io/hostname"

/* Does the node carry kubernetes.io/hostname = its name (as nodes usually do)? Such nodes
 * are written with `hostnameLabel: true` instead of the label, so that they can share an
 * entry. */
static int host_is_name(const struct pl_node *n)
{
    const char *h = pl_labels_get(&n->labels, LABEL_HOSTNAME);
    return h && !strcmp(h, n->name);
}

/* Labels equal, leaving out the hostname label where skip_* says so. */
static int labels_eq_skip(const struct pl_labels *a, int skip_a, const struct pl_labels *b,
                          int skip_b)
{
    size_t i = 0, j = 0;

    for (;;) {
        if (skip_a && i < a->n && !strcmp(a->v[i].key, LABEL_HOSTNAME))
            i++;
        if (skip_b && j < b->n && !strcmp(b->v[j].key, LABEL_HOSTNAME))
            j++;
        if (i == a->n || j == b->n)
            return i == a->n && j == b->n;
        if (strcmp(a->v[i].key, b->v[j].key) || strcmp(a->v[i].value, b->v[j].value))
            return 0;
        i++;
        j++;
    }
}

/* Alike but for the name. */
static int nodes_alike(const struct pl_node *a, const struct pl_node *b)
{
    int ha = host_is_name(a), hb = host_is_name(b);

    return ha == hb && str_eq(a->shape, b->shape) &&
           !memcmp(&a->allocatable, &b->allocatable, sizeof(a->allocatable)) &&
           !memcmp(&a->requested, &b->requested, sizeof(a->requested)) &&
           labels_eq_skip(&a->labels, ha, &b->labels, hb) &&
           taints_eq(a->taints, a->ntaints, b->taints, b->ntaints) &&
           !a->unschedulable == !b->unschedulable && !a->not_ready == !b->not_ready;
}

static cJSON *node_labels_json(const struct pl_node *n, int skip_host)
{
    cJSON *o = cJSON_CreateObject();

    for (size_t i = 0; i < n->labels.n; i++) {
        if (skip_host && !strcmp(n->labels.v[i].key, LABEL_HOSTNAME))
            continue;
        rd_out_add_str(o, n->labels.v[i].key, n->labels.v[i].value);
    }
    return o;
}

static cJSON *nodes_json(const struct pl_node *nodes, size_t n, const struct pl_resnames *res)
{
    cJSON *arr = cJSON_CreateArray();

    for (size_t i = 0; i < n;) {
        const struct pl_node *nd = &nodes[i];
        size_t j = i + 1;
        cJSON *o = rd_out_push(arr, cJSON_CreateObject());

        while (j < n && nodes_alike(nd, &nodes[j]))
            j++;
        if (j - i == 1) {
            rd_out_add_str(o, "name", nd->name);
        } else {
            cJSON *names = rd_out_add(o, "names", cJSON_CreateArray());
            for (size_t k = i; k < j; k++)
                rd_out_push(names, rd_out_str(nodes[k].name));
        }
        if (nd->shape)
            rd_out_add_str(o, "shape", nd->shape);
        rd_out_add(o, "allocatable", res_json(&nd->allocatable, res));
        if (!res_is_zero(&nd->requested))
            rd_out_add(o, "requested", res_json(&nd->requested, res));
        if (nd->labels.n > (size_t)host_is_name(nd))
            rd_out_add(o, "labels", node_labels_json(nd, host_is_name(nd)));
        if (host_is_name(nd))
            rd_out_add_bool(o, "hostnameLabel", 1);
        if (nd->ntaints)
            rd_out_add(o, "taints", taints_json(nd->taints, nd->ntaints));
        if (nd->unschedulable)
            rd_out_add_bool(o, "unschedulable", 1);
        if (nd->not_ready)
            rd_out_add_bool(o, "notReady", 1);
        i = j;
    }
    return arr;
}

static cJSON *cluster_json(const struct pl_cluster *c, const struct pl_resnames *res,
                           const struct pl_usage *usage)
{
    cJSON *o = cJSON_CreateObject();
    char cost[32];

    rd_out_add_str(o, "name", c->name);
    rd_out_add(o, "labels", labels_json(&c->labels));
    rd_out_add_bool(o, "live", c->live);
    rd_out_add_bool(o, "reachable", c->reachable);
    if (!c->reachable && c->unreachable_for > 0)
        rd_out_add_int(o, "unreachableFor", c->unreachable_for);
    rd_out_add_str(o, "autoscaler",
                   (unsigned)c->autoscaler < 3 ? autoscaler_names[c->autoscaler] : "none");
    rd_out_add_bool(o, "anyShape", c->any_shape);
    if (c->cost_micro) {
        format_micro(cost, c->cost_micro);
        rd_out_add_str(o, "costPerHour", cost);
    }
    if (c->nshapes) {
        cJSON *arr = rd_out_add(o, "shapes", cJSON_CreateArray());
        for (size_t i = 0; i < c->nshapes; i++) {
            const struct pl_shape *s = &c->shapes[i];
            cJSON *j = rd_out_push(arr, cJSON_CreateObject());
            rd_out_add_str(j, "name", s->name);
            if (s->max >= 0)
                rd_out_add_int(j, "max", s->max);
            if (s->cost_micro) {
                format_micro(cost, s->cost_micro);
                rd_out_add_str(j, "costPerHour", cost);
            }
            rd_out_add(j, "allocatable", res_json(&s->allocatable, res));
            if (s->labels.n)
                rd_out_add(j, "labels", labels_json(&s->labels));
            if (s->ntaints)
                rd_out_add(j, "taints", taints_json(s->taints, s->ntaints));
        }
    }
    rd_out_add(o, "nodes", nodes_json(c->nodes, c->nnodes, res));
    if (c->npresent)
        rd_out_add(o, "present", rd_out_str_array(c->present, c->npresent));
    if (usage) {
        cJSON *u = rd_out_add(o, "usage", cJSON_CreateObject());
        rd_out_add(u, "allocatable", res_json(&usage->allocatable, res));
        rd_out_add(u, "requested", res_json(&usage->requested, res));
        rd_out_add(u, "committed", res_json(&usage->committed, res));
        rd_out_add_int(u, "nodesToAdd", usage->nodes_to_add);
    }
    return o;
}

int rd_capacity_emit(struct rc_buf *out, const struct pl_cluster *clusters, size_t nclusters,
                     const struct pl_resnames *res, const struct pl_usage *usage, size_t nusage,
                     const char *source_commit, struct rc_err *err)
{
    cJSON *root = cJSON_CreateObject(), *arr;
    int error;

    rd_out_add_str(root, "apiVersion", RD_API_VERSION);
    rd_out_add_str(root, "kind", "CapacitySnapshot");
    if (source_commit)
        rd_out_add_str(root, "source", source_commit);
    arr = rd_out_add(root, "clusters", cJSON_CreateArray());
    for (size_t i = 0; i < nclusters; i++) {
        const struct pl_usage *u = NULL;
        for (size_t k = 0; usage && k < nusage; k++) {
            if (!strcmp(usage[k].cluster, clusters[i].name))
                u = &usage[k];
        }
        rd_out_push(arr, cluster_json(&clusters[i], res, u));
    }
    error = rd_yaml_emit(out, root, err);
    cJSON_Delete(root);
    return error;
}

/* ==== Reading ==== */

int rd_capacity_names_source(const char *text, size_t len)
{
    const char *p = text, *end = text + len;

    /* the top-level keys before the list of clusters, in rd_capacity_emit's order */
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        if (n >= 7 && !memcmp(p, "source:", 7))
            return 1;
        if (n >= 9 && !memcmp(p, "clusters:", 9))
            return 0;
        if (!nl)
            break;
        p = nl + 1;
    }
    return 0;
}

struct ctx {
    const struct rd_docs *docs;
    struct pl_resnames *res;
    struct rc_arena *a;
    struct rc_err *err;
};

#define FAIL(c, node, ...) rd_out_err_at((c)->err, (c)->docs, CAPACITY_FILE, (node), __VA_ARGS__)

static const cJSON *field(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNull(v) ? NULL : v;
}

static int get_bool(int *out, const cJSON *o, const char *key, int dflt, struct ctx *c)
{
    const cJSON *v = field(o, key);

    *out = dflt;
    if (!v)
        return 0;
    if (!cJSON_IsBool(v))
        return FAIL(c, v, "field '%s' is not true or false", key);
    *out = cJSON_IsTrue(v) ? 1 : 0;
    return 0;
}

static int get_int(int64_t *out, const cJSON *o, const char *key, int64_t dflt, struct ctx *c)
{
    const cJSON *v = field(o, key);

    *out = dflt;
    if (!v)
        return 0;
    if (!cJSON_IsNumber(v) || v->valuedouble > 9007199254740992.0 ||
        v->valuedouble < -9007199254740992.0 || (double)(int64_t)v->valuedouble != v->valuedouble)
        return FAIL(c, v, "field '%s' is not an integer", key);
    *out = (int64_t)v->valuedouble;
    return 0;
}

static int parse_micro(int64_t *out, const cJSON *o, const char *key, struct ctx *c)
{
    const cJSON *v = field(o, key);
    const char *s, *p;
    int64_t whole = 0, frac = 0;
    int neg = 0, digits = 0;

    *out = 0;
    if (!v)
        return 0;
    if (!cJSON_IsString(v))
        return FAIL(c, v, "field '%s' is not a decimal string", key);
    s = p = v->valuestring;
    if (*p == '-') {
        neg = 1;
        p++;
    }
    if (*p < '0' || *p > '9')
        return FAIL(c, v, "bad cost '%s'", s);
    while (*p >= '0' && *p <= '9') {
        if (whole > INT64_MAX / 10000000)
            return FAIL(c, v, "cost '%s' is too large", s);
        whole = whole * 10 + (*p++ - '0');
    }
    if (*p == '.') {
        p++;
        while (*p >= '0' && *p <= '9' && digits < 6) {
            frac = frac * 10 + (*p++ - '0');
            digits++;
        }
        if (digits == 0)
            return FAIL(c, v, "bad cost '%s'", s);
        for (; digits < 6; digits++)
            frac *= 10;
    }
    if (*p)
        return FAIL(c, v, "bad cost '%s' (at most 6 decimals)", s);
    *out = (whole * 1000000 + frac) * (neg ? -1 : 1);
    return 0;
}

static int get_string(const char **out, const cJSON *o, const char *key, int required,
                      struct ctx *c)
{
    return rd_out_get_str(out, o, key, required, c->docs, CAPACITY_FILE, c->a, c->err);
}

static int parse_res(struct pl_res *r, const cJSON *o, const char *key, struct ctx *c)
{
    const cJSON *m = field(o, key), *it;

    memset(r, 0, sizeof(*r));
    if (!m)
        return 0;
    if (!cJSON_IsObject(m))
        return FAIL(c, m, "field '%s' is not a mapping", key);
    cJSON_ArrayForEach(it, m)
    {
        int idx;
        struct rc_err qerr = RC_ERR_INIT;
        if (!cJSON_IsString(it))
            return FAIL(c, it, "amount of '%s' is not a quantity string", it->string);
        idx = pl_resnames_intern(c->res, c->a, it->string);
        if (idx < 0)
            return FAIL(c, it, "too many resource names (at most %d)", PL_RES_MAX);
        if (pl_quantity_parse(&r->v[idx], it->valuestring, &qerr) < 0)
            return FAIL(c, it, "%s", qerr.msg);
    }
    return 0;
}

static int parse_labels(struct pl_labels *l, const cJSON *o, const char *key, struct ctx *c)
{
    const cJSON *m = field(o, key), *it;
    size_t k = 0;

    l->n = 0;
    l->v = NULL;
    if (!m)
        return 0;
    if (!cJSON_IsObject(m))
        return FAIL(c, m, "field '%s' is not a mapping", key);
    l->v = rc_arena_calloc(c->a, (size_t)cJSON_GetArraySize(m) + 1, sizeof(*l->v));
    cJSON_ArrayForEach(it, m)
    {
        if (!cJSON_IsString(it))
            return FAIL(c, it, "label '%s' is not a string", it->string);
        l->v[k].key = rc_arena_strdup(c->a, it->string);
        l->v[k].value = rc_arena_strdup(c->a, it->valuestring);
        k++;
    }
    l->n = k;
    pl_labels_sort(l);
    return 0;
}

static int parse_taints(struct pl_taint **out, size_t *n, const cJSON *o, struct ctx *c)
{
    const cJSON *arr = field(o, "taints"), *it;
    size_t k = 0;
    int error;

    *out = NULL;
    *n = 0;
    if (!arr)
        return 0;
    if (!cJSON_IsArray(arr))
        return FAIL(c, arr, "field 'taints' is not a list");
    *out = rc_arena_calloc(c->a, (size_t)cJSON_GetArraySize(arr) + 1, sizeof(**out));
    cJSON_ArrayForEach(it, arr)
    {
        struct pl_taint *t = &(*out)[k++];
        if (!cJSON_IsObject(it))
            return FAIL(c, it, "taint is not a mapping");
        if ((error = get_string(&t->key, it, "key", 1, c)) < 0 ||
            (error = get_string(&t->value, it, "value", 0, c)) < 0 ||
            (error = get_string(&t->effect, it, "effect", 1, c)) < 0)
            return error;
        if (!t->value)
            t->value = "";
    }
    *n = k;
    return 0;
}

static int parse_shape(struct pl_shape *s, const cJSON *j, struct ctx *c)
{
    int error;

    if (!cJSON_IsObject(j))
        return FAIL(c, j, "shape is not a mapping");
    if ((error = get_string(&s->name, j, "name", 1, c)) < 0 ||
        (error = get_int(&s->max, j, "max", -1, c)) < 0 ||
        (error = parse_micro(&s->cost_micro, j, "costPerHour", c)) < 0 ||
        (error = parse_res(&s->allocatable, j, "allocatable", c)) < 0 ||
        (error = parse_labels(&s->labels, j, "labels", c)) < 0 ||
        (error = parse_taints(&s->taints, &s->ntaints, j, c)) < 0)
        return error;
    return 0;
}

/* One entry of `nodes` (possibly several nodes) appended to *v. */
static int parse_node_entry(struct pl_node **v, size_t *n, size_t *cap, const cJSON *j,
                            struct ctx *c)
{
    struct pl_node nd;
    const char **names = NULL;
    size_t nnames = 0;
    const char *name = NULL;
    int error, b, host;

    memset(&nd, 0, sizeof(nd));
    if (!cJSON_IsObject(j))
        return FAIL(c, j, "node is not a mapping");
    if ((error = get_string(&name, j, "name", 0, c)) < 0 ||
        (error = rd_out_get_strs(&names, &nnames, j, "names", c->docs, CAPACITY_FILE, c->a,
                                 c->err)) < 0)
        return error;
    if (!name == !nnames)
        return FAIL(c, j, "node needs either 'name' or a non-empty 'names'");
    if ((error = get_string(&nd.shape, j, "shape", 0, c)) < 0 ||
        (error = parse_res(&nd.allocatable, j, "allocatable", c)) < 0 ||
        (error = parse_res(&nd.requested, j, "requested", c)) < 0 ||
        (error = parse_labels(&nd.labels, j, "labels", c)) < 0 ||
        (error = parse_taints(&nd.taints, &nd.ntaints, j, c)) < 0 ||
        (error = get_bool(&nd.unschedulable, j, "unschedulable", 0, c)) < 0 ||
        (error = get_bool(&b, j, "notReady", 0, c)) < 0 ||
        (error = get_bool(&host, j, "hostnameLabel", 0, c)) < 0)
        return error;
    nd.not_ready = b;
    if (name) {
        names = &name;
        nnames = 1;
    }
    for (size_t i = 0; i < nnames; i++) {
        if (*n == *cap) {
            size_t ncap = *cap ? *cap * 2 : 16;
            struct pl_node *nv = rc_arena_calloc(c->a, ncap, sizeof(*nv));
            if (*n)
                memcpy(nv, *v, *n * sizeof(*nv));
            *v = nv;
            *cap = ncap;
        }
        (*v)[*n] = nd;
        (*v)[*n].name = names[i];
        if (host) {
            /* own copy: the entry's label array is shared by its nodes */
            struct pl_labels *l = &(*v)[*n].labels;
            struct pl_label *copy = rc_arena_calloc(c->a, l->n + 1, sizeof(*copy));
            if (l->n)
                memcpy(copy, l->v, l->n * sizeof(*copy));
            l->v = copy;
            pl_labels_set(l, c->a, LABEL_HOSTNAME, names[i]);
        }
        (*n)++;
    }
    return 0;
}

/* A cluster's lists that grow with its size, as they stream in (rd_yaml.h): its shapes,
 * nodes and present units, taken by parse_cluster. c is the context of the element being
 * read. */
struct cluster_lists {
    struct ctx c;
    struct pl_shape *shapes;
    size_t nshapes, scap;
    struct pl_node *nodes; /* in the arena, grown by parse_node_entry */
    size_t nnodes, ncap;
    struct rd_out_strs present;
};

static int each_shape(void *payload, const cJSON *item, const struct rd_docs *docs,
                      struct rc_err *err)
{
    struct cluster_lists *p = payload;
    int error;

    (void)err; /* p->c.err */
    p->c.docs = docs;
    p->shapes = rc_xgrow(p->shapes, &p->scap, p->nshapes + 1, sizeof(*p->shapes));
    memset(&p->shapes[p->nshapes], 0, sizeof(p->shapes[p->nshapes]));
    error = parse_shape(&p->shapes[p->nshapes], item, &p->c);
    if (error < 0)
        return error;
    p->nshapes++;
    return 0;
}

static int each_node(void *payload, const cJSON *item, const struct rd_docs *docs,
                     struct rc_err *err)
{
    struct cluster_lists *p = payload;

    (void)err; /* p->c.err */
    p->c.docs = docs;
    return parse_node_entry(&p->nodes, &p->nnodes, &p->ncap, item, &p->c);
}

static int parse_cluster(struct pl_cluster *cl, const cJSON *j, struct cluster_lists *p,
                         struct ctx *c)
{
    const cJSON *arr;
    const char *as = NULL;
    int error;

    if (!cJSON_IsObject(j))
        return FAIL(c, j, "cluster is not a mapping");
    if ((error = get_string(&cl->name, j, "name", 1, c)) < 0 ||
        (error = parse_labels(&cl->labels, j, "labels", c)) < 0 ||
        (error = get_bool(&cl->live, j, "live", 0, c)) < 0 ||
        (error = get_bool(&cl->reachable, j, "reachable", 1, c)) < 0 ||
        (error = get_int(&cl->unreachable_for, j, "unreachableFor", 0, c)) < 0 ||
        (error = get_string(&as, j, "autoscaler", 0, c)) < 0 ||
        (error = get_bool(&cl->any_shape, j, "anyShape", 0, c)) < 0 ||
        (error = parse_micro(&cl->cost_micro, j, "costPerHour", c)) < 0)
        return error;
    cl->autoscaler = PL_AUTOSCALER_NONE;
    if (as) {
        int found = 0;
        for (int i = 0; i < 3; i++) {
            if (!strcmp(as, autoscaler_names[i])) {
                cl->autoscaler = (enum pl_autoscaler)i;
                found = 1;
            }
        }
        if (!found)
            return FAIL(c, field(j, "autoscaler"), "unknown autoscaler '%s'", as);
    }
    arr = field(j, "shapes");
    if (arr && !cJSON_IsArray(arr))
        return FAIL(c, arr, "field 'shapes' is not a list");
    cl->shapes = rc_arena_calloc(c->a, p->nshapes + 1, sizeof(*cl->shapes));
    if (p->nshapes)
        memcpy(cl->shapes, p->shapes, p->nshapes * sizeof(*cl->shapes));
    cl->nshapes = p->nshapes;
    p->nshapes = 0;
    arr = field(j, "nodes");
    if (arr && !cJSON_IsArray(arr))
        return FAIL(c, arr, "field 'nodes' is not a list");
    cl->nodes = p->nodes;
    cl->nnodes = p->nnodes;
    p->nodes = NULL;
    p->nnodes = p->ncap = 0;
    return rd_out_take_strs(&cl->present, &cl->npresent, j, &p->present, c->docs, c->err);
}

/* Clusters as they stream in (rd_yaml_load_items). */
struct clusters_in {
    struct ctx c;
    struct pl_cluster *v;
    size_t n, cap;
    struct cluster_lists lists; /* of the cluster being read */
};

static int cmp_cluster_name(const void *x, const void *y)
{
    return strcmp(((const struct pl_cluster *)x)->name, ((const struct pl_cluster *)y)->name);
}

static int each_cluster(void *payload, const cJSON *item, const struct rd_docs *docs,
                        struct rc_err *err)
{
    struct clusters_in *in = payload;
    int error;

    (void)err; /* in->c.err */
    in->c.docs = docs;
    in->v = rc_xgrow(in->v, &in->cap, in->n + 1, sizeof(*in->v));
    memset(&in->v[in->n], 0, sizeof(in->v[in->n]));
    error = parse_cluster(&in->v[in->n], item, &in->lists, &in->c);
    in->c.docs = NULL;
    if (error < 0)
        return error;
    in->n++;
    return 0;
}

int rd_capacity_parse(struct pl_cluster **out, size_t *n, struct pl_resnames *res, const char *text,
                      size_t len, struct rc_arena *a, struct rc_err *err)
{
    struct rd_yaml_limits limits = RD_YAML_LIMITS_INIT;
    struct rd_yaml_items lists[] = {
        {"shapes", each_shape, NULL, NULL, 0},
        {"nodes", each_node, NULL, NULL, 0},
        {"present", rd_out_each_str, NULL, NULL, 0},
    };
    struct rd_yaml_items items = {"clusters", each_cluster, NULL, lists, 3};
    struct rd_docs *docs = NULL;
    const cJSON *root, *arr, *v;
    struct clusters_in in;
    struct pl_cluster *cl = NULL, *sorted = NULL;
    struct ctx c;
    int error;

    /* read cluster by cluster, and each cluster's shapes, nodes and present units one by
     * one: each within the usual limits, the whole snapshot within RD_RECORD_MAX_BYTES,
     * whatever the size of the fleet or of one cluster (rd_output.h) */
    memset(&in, 0, sizeof(in));
    in.c.res = res;
    in.c.a = a;
    in.c.err = err;
    in.lists.c = in.c;
    in.lists.present = (struct rd_out_strs){CAPACITY_FILE, "present", a, NULL, 0, 0};
    lists[0].payload = &in.lists;
    lists[1].payload = &in.lists;
    lists[2].payload = &in.lists.present;
    items.payload = &in;
    limits.max_bytes = RD_RECORD_MAX_BYTES;
    error = rd_yaml_load_items(&docs, CAPACITY_FILE, text, len, &limits, &items, 1, err);
    free(in.lists.shapes);
    free(in.lists.present.v);
    if (error < 0)
        goto done;
    c.docs = docs;
    c.res = res;
    c.a = a;
    c.err = err;
    if (rd_docs_count(docs) != 1) {
        error = rc_err_set(err, RC_EINVALID, "%s: expected one document, found %zu", CAPACITY_FILE,
                           rd_docs_count(docs));
        goto done;
    }
    root = rd_docs_get(docs, 0);
    if (!cJSON_IsObject(root)) {
        error = FAIL(&c, root, "snapshot is not a mapping");
        goto done;
    }
    v = field(root, "apiVersion");
    if (!cJSON_IsString(v) || strcmp(v->valuestring, RD_API_VERSION)) {
        error = FAIL(&c, v ? v : root, "apiVersion must be '%s'", RD_API_VERSION);
        goto done;
    }
    v = field(root, "kind");
    if (!cJSON_IsString(v) || strcmp(v->valuestring, "CapacitySnapshot")) {
        error = FAIL(&c, v ? v : root, "kind must be 'CapacitySnapshot'");
        goto done;
    }
    arr = field(root, "clusters");
    if (arr && !cJSON_IsArray(arr)) {
        error = FAIL(&c, arr, "field 'clusters' is not a list");
        goto done;
    }
    cl = rc_arena_calloc(a, in.n + 1, sizeof(*cl));
    if (in.n)
        memcpy(cl, in.v, in.n * sizeof(*cl));
    /* names are unique (sorted copy: linear in the fleet) */
    sorted = rc_xcalloc(in.n + 1, sizeof(*sorted));
    if (in.n)
        memcpy(sorted, in.v, in.n * sizeof(*sorted));
    rc_sort(sorted, in.n, sizeof(*sorted), cmp_cluster_name);
    for (size_t i = 1; i < in.n; i++) {
        if (!strcmp(sorted[i - 1].name, sorted[i].name)) {
            error = rc_err_set(err, RC_EINVALID, "%s: cluster '%s' listed twice", CAPACITY_FILE,
                               sorted[i].name);
            goto done;
        }
    }
    *out = cl;
    *n = in.n;
done:
    free(sorted);
    free(in.v);
    rd_docs_free(docs);
    return error;
}
