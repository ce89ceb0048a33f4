/*
 * rc_observe.c - builds the fleet for a pass (see rc_observe.h).
 *
 * Live clusters are fetched in threads (one rc_kube connection each, no libgit2), each item
 * reduced as its page arrives into memory of the fetch's own (struct seen); what was kept is
 * turned into pl_cluster on the calling thread, so the pass's arena is only touched by one
 * thread, and the resource-name table is only read while the threads run.
 */
#include "rc_sort.h"
#include "rc_observe.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "pl_basics.h"
#include "pl_quantity.h"
#include "rc_http.h"
#include "rc_kube.h"
#include "rc_mem.h"
#include "rc_thread.h"
#include "rc_watch.h"
#include "rd_demand.h"

#include "rc_banned.h"

int rc_observe_any_live(const struct rd_source *src)
{
    for (size_t i = 0; i < src->nclusters; i++) {
        if (src->conns[i].live)
            return 1;
    }
    return 0;
}

/* ==== Reading items ==== */

static const cJSON *field(const cJSON *o, const char *name)
{
    return cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, name) : NULL;
}

static const char *field_str(const cJSON *o, const char *name)
{
    const cJSON *v = field(o, name);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static const char *item_name(const cJSON *item)
{
    return field_str(field(item, "metadata"), "name");
}

/* metadata.labels into a sorted label set (strings copied into a). */
static void read_labels(struct pl_labels *out, const cJSON *item, struct rc_arena *a)
{
    const cJSON *labels = field(field(item, "metadata"), "labels"), *l;
    size_t n = 0;

    out->n = 0;
    out->v = NULL;
    if (!cJSON_IsObject(labels))
        return;
    cJSON_ArrayForEach(l, labels) n++;
    out->v = rc_arena_calloc(a, n + 1, sizeof(*out->v));
    cJSON_ArrayForEach(l, labels)
    {
        if (!l->string || !cJSON_IsString(l))
            continue;
        out->v[out->n].key = rc_arena_strdup(a, l->string);
        out->v[out->n].value = rc_arena_strdup(a, l->valuestring);
        out->n++;
    }
    pl_labels_sort(out);
}

static int read_taints(struct pl_node *node, const cJSON *item, struct rc_arena *a,
                       struct rc_err *err)
{
    const cJSON *taints = field(field(item, "spec"), "taints"), *t;
    size_t n;

    if (!cJSON_IsArray(taints))
        return RC_OK;
    n = (size_t)cJSON_GetArraySize(taints);
    node->taints = rc_arena_calloc(a, n + 1, sizeof(*node->taints));
    cJSON_ArrayForEach(t, taints)
    {
        const char *key = field_str(t, "key"), *value = field_str(t, "value");
        const char *effect = field_str(t, "effect");
        struct pl_taint *out = &node->taints[node->ntaints];

        if (!key || !effect)
            return rc_err_set(err, RC_EINVALID, "node '%s' has a taint without key or effect",
                              node->name);
        out->key = rc_arena_strdup(a, key);
        out->value = rc_arena_strdup(a, value ? value : "");
        out->effect = rc_arena_strdup(a, effect);
        node->ntaints++;
    }
    return RC_OK;
}

static int node_not_ready(const cJSON *item)
{
    const cJSON *conds = field(field(item, "status"), "conditions"), *c;

    cJSON_ArrayForEach(c, conds)
    {
        const char *type = field_str(c, "type"), *status = field_str(c, "status");
        if (type && !strcmp(type, "Ready"))
            return !(status && !strcmp(status, "True"));
    }
    return 1; /* no Ready condition: the node controller has not seen it ready */
}

static int read_node(struct pl_node *node, const cJSON *item, const struct pl_cluster *c,
                     const struct pl_resnames *res, struct rc_arena *a, struct rc_err *err)
{
    const char *name = item_name(item);
    const cJSON *alloc = field(field(item, "status"), "allocatable"), *q;
    const cJSON *unsched = field(field(item, "spec"), "unschedulable");
    const char *itype;

    if (!name || !*name)
        return rc_err_set(err, RC_EINVALID, "node without metadata.name");
    node->name = rc_arena_strdup(a, name);
    read_labels(&node->labels, item, a);
    cJSON_ArrayForEach(q, alloc)
    {
        int idx = q->string ? pl_resnames_find(res, q->string) : -1;
        int64_t milli;
        int rc;

        if (idx < 0)
            continue;
        if (!cJSON_IsString(q))
            return rc_err_set(err, RC_EINVALID, "node '%s': allocatable '%s' is not a quantity",
                              name, q->string);
        if ((rc = pl_quantity_parse(&milli, q->valuestring, err)) < 0)
            return rc_err_prefix(err, "node '%s': allocatable '%s': ", name, q->string);
        node->allocatable.v[idx] = milli;
    }
    if (read_taints(node, item, a, err) < 0)
        return err->code;
    node->unschedulable = cJSON_IsTrue(unsched);
    node->not_ready = node_not_ready(item);
    itype = pl_labels_get(&node->labels, "node.kubernetes.io/instance-type");
    for (size_t i = 0; itype && i < c->nshapes; i++) {
        if (!strcmp(c->shapes[i].name, itype))
            node->shape = c->shapes[i].name;
    }
    return RC_OK;
}

static int cmp_node(const void *x, const void *y)
{
    return strcmp(((const struct pl_node *)x)->name, ((const struct pl_node *)y)->name);
}

static int cmp_str(const void *x, const void *y)
{
    return strcmp(*(const char *const *)x, *(const char *const *)y);
}

static struct pl_node *find_node(struct pl_cluster *c, const char *name)
{
    struct pl_node key = {0};

    key.name = name;
    return c->nnodes ? bsearch(&key, c->nodes, c->nnodes, sizeof(*c->nodes), cmp_node) : NULL;
}

/* The effective request of one pod, as rd_demand computes it for a Pod manifest. Resource
 * names nobody asks for are dropped; pods whose spec rd_demand refuses add nothing. */
static int pod_request(struct pl_res *out, const cJSON *item, const struct pl_resnames *res,
                       struct rc_arena *a, struct rc_err *err)
{
    struct pl_resnames scratch = *res;
    struct pl_object obj;
    cJSON *root = cJSON_CreateObject();
    int rc;

    memset(out, 0, sizeof(*out));
    memset(&obj, 0, sizeof(obj));
    cJSON_AddStringToObject(root, "apiVersion", "v1");
    cJSON_AddStringToObject(root, "kind", "Pod");
    if (field(item, "metadata"))
        cJSON_AddItemToObject(root, "metadata",
                              cJSON_CreateObjectReference(field(item, "metadata")->child));
    if (field(item, "spec"))
        cJSON_AddItemToObject(root, "spec",
                              cJSON_CreateObjectReference(field(item, "spec")->child));
    rc = rd_demand_extract(&obj, root, NULL, &scratch, a, err);
    cJSON_Delete(root);
    if (rc < 0)
        return rc;
    for (size_t p = 0; p < obj.npods; p++) {
        for (int i = 0; i < scratch.n; i++) {
            int idx = pl_resnames_find(res, scratch.name[i]);
            if (idx >= 0 && idx != PL_RES_PODS)
                out->v[idx] += obj.pods[p].req.v[i] * (int64_t)obj.pods[p].count;
        }
    }
    return RC_OK;
}

static int pod_counts(const cJSON *item)
{
    const char *phase = field_str(field(item, "status"), "phase");
    return phase && (!strcmp(phase, "Pending") || !strcmp(phase, "Running"));
}

static int deployment_replicas(const cJSON *d)
{
    const cJSON *r = field(field(d, "spec"), "replicas");
    return !cJSON_IsNumber(r) || r->valuedouble > 0;
}

/* ==== What observe keeps of a cluster's lists ==== */

/*
 * The API server's lists are read a page at a time, and each item is reduced, on the thread
 * that fetched it, to what rc_observe_build reads of it: a node to the fields read_node
 * reads, a pod to its unit, its node and its request (or nothing, when its phase does not
 * count), the Deployments to what they say of an autoscaler. An EKS node is about 10 KB of
 * JSON and a pod 5 KB, each about three times that as a tree, so a fleet's lists held whole
 * until every cluster was read took gigabytes (bench/RESULTS.md, note 92); what is kept
 * is what placement needs.
 */
struct seen_pod {
    const char *unit; /* NULL: no rightplace.dev/unit label */
    const char *node; /* NULL: not bound to a node */
    struct pl_res req;
};

struct seen {
    const struct pl_resnames *res; /* read only: shared by the fetching threads */
    cJSON *nodes;                  /* the nodes, pruned (prune_node); NULL: none yet */
    struct seen_pod *pods;         /* the pods that count (pod_counts), in list order */
    size_t npods, cap;
    int deployments;     /* the Deployments were listed (autoscaler detection asked for) */
    int luna, ca;        /* one of them is Luna's, one the cluster-autoscaler */
    struct rc_arena a;   /* the pods' strings */
    struct rc_arena tmp; /* one pod's demand, released after it */
};

/* Allocates nothing: a seen that no fetch filled needs no release. */
static void seen_init(struct seen *s, const struct pl_resnames *res)
{
    memset(s, 0, sizeof(*s));
    s->res = res;
}

static void seen_release(struct seen *s)
{
    cJSON_Delete(s->nodes);
    free(s->pods);
    rc_arena_release(&s->a);
    rc_arena_release(&s->tmp);
    memset(s, 0, sizeof(*s));
}

/* A copy of `from`'s member `name` into `to` (nothing when it is absent). */
static void copy_member(cJSON *to, const cJSON *from, const char *name)
{
    const cJSON *v = field(from, name);

    if (v)
        cJSON_AddItemToObject(to, name, cJSON_Duplicate(v, 1));
}

/* The condition node_not_ready reads (the first of type Ready), as its type and status
 * alone, into the array conds; nothing when there is none. The others, and the Ready
 * condition's message, reason and times, are most of a pruned node's bytes (about 800 of
 * 1,900 on the bench's EKS-shaped nodes) and mean nothing to placement. */
static void prune_conditions(cJSON *status, const cJSON *conds)
{
    const cJSON *c;

    cJSON_ArrayForEach(c, conds)
    {
        const char *type = field_str(c, "type");
        if (type && !strcmp(type, "Ready")) {
            cJSON *kept = cJSON_CreateObject();
            copy_member(kept, c, "type");
            copy_member(kept, c, "status");
            cJSON_AddItemToArray(cJSON_AddArrayToObject(status, "conditions"), kept);
            return;
        }
    }
}

/* The members of a Node that read_node reads, and nothing else: metadata.name and .labels,
 * spec.taints and .unschedulable, status.allocatable and the Ready condition. A member that
 * is not an object (metadata, spec, status) is left out, as field() reads it as absent. */
static cJSON *prune_node(const cJSON *item)
{
    cJSON *n = cJSON_CreateObject();
    const cJSON *md = field(item, "metadata"), *spec = field(item, "spec");
    const cJSON *st = field(item, "status");

    if (cJSON_IsObject(md)) {
        cJSON *o = cJSON_AddObjectToObject(n, "metadata");
        copy_member(o, md, "name");
        copy_member(o, md, "labels");
    }
    if (cJSON_IsObject(spec)) {
        cJSON *o = cJSON_AddObjectToObject(n, "spec");
        copy_member(o, spec, "taints");
        copy_member(o, spec, "unschedulable");
    }
    if (cJSON_IsObject(st)) {
        cJSON *o = cJSON_AddObjectToObject(n, "status");
        copy_member(o, st, "allocatable");
        prune_conditions(o, field(st, "conditions"));
    }
    return n;
}

static void seen_node(struct seen *s, const cJSON *item)
{
    if (!s->nodes)
        s->nodes = cJSON_CreateArray();
    cJSON_AddItemToArray(s->nodes, prune_node(item));
}

/*
 * What is kept of a pod that counts (pod_counts), its strings borrowed from item: 1, or 0 when
 * it does not count. tmp is scratch for its demand, released here.
 */
static int pod_kept(const cJSON *item, const struct pl_resnames *res, struct rc_arena *tmp,
                    struct seen_pod *out)
{
    const char *node_name = field_str(field(item, "spec"), "nodeName");
    const char *unit = field_str(field(field(item, "metadata"), "labels"), PL_LABEL_UNIT);

    if (!pod_counts(item))
        return 0;
    memset(out, 0, sizeof(*out));
    out->unit = unit && *unit ? unit : NULL;
    out->node = node_name && *node_name ? node_name : NULL;
    if (out->node) {
        struct rc_err perr = RC_ERR_INIT;
        /* the API server validated it; what rd_demand cannot read counts as a pod only,
         * rather than taking the whole cluster out of placement */
        if (pod_request(&out->req, item, res, tmp, &perr) < 0)
            memset(&out->req, 0, sizeof(out->req));
        rc_arena_release(tmp);
    }
    return 1;
}

/* A pod kept (from a list, or by a watcher), its strings copied into s's arena. */
static void seen_kept(struct seen *s, const struct seen_pod *k)
{
    struct seen_pod *p;

    if (s->npods == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 64;
        s->pods = rc_xrealloc(s->pods, s->cap * sizeof(*s->pods));
    }
    p = &s->pods[s->npods++];
    p->unit = k->unit ? rc_arena_strdup(&s->a, k->unit) : NULL;
    p->node = k->node ? rc_arena_strdup(&s->a, k->node) : NULL;
    p->req = k->req;
}

static void seen_pod(struct seen *s, const cJSON *item)
{
    struct seen_pod k;

    if (pod_kept(item, s->res, &s->tmp, &k))
        seen_kept(s, &k);
}

/*
 * pod_kept for rc_watch (on a watcher's thread, or while listing for one), as the bytes a
 * watcher's table holds: the number of request values up to the last that is not 0 (one
 * byte; a pod not bound to a node has none), those values, then the unit and the node, each
 * NUL-terminated ("" for none).
 */
static int reduce_pod(const cJSON *item, const struct pl_resnames *res, struct rc_buf *out)
{
    struct rc_arena tmp = RC_ARENA_INIT;
    struct rc_err err = RC_ERR_INIT;
    struct seen_pod k;
    unsigned char nreq = 0;

    if (!pod_kept(item, res, &tmp, &k))
        return 0;
    for (int i = 0; i < res->n && i < PL_RES_MAX; i++) {
        if (k.req.v[i])
            nreq = (unsigned char)(i + 1);
    }
    if (rc_buf_add(out, &nreq, 1, &err) < 0 ||
        rc_buf_add(out, k.req.v, nreq * sizeof(int64_t), &err) < 0 ||
        rc_buf_add(out, k.unit ? k.unit : "", k.unit ? strlen(k.unit) + 1 : 1, &err) < 0 ||
        rc_buf_add(out, k.node ? k.node : "", k.node ? strlen(k.node) + 1 : 1, &err) < 0)
        return 0;
    return 1;
}

/* A pod as reduce_pod kept it, into the fetch's seen (rc_watch_each_fn). */
static void seen_pod_kept(void *payload, const char *key, const void *value, size_t len)
{
    const unsigned char *v = value;
    struct seen_pod k;
    const char *unit, *node;
    size_t nreq;

    (void)key;
    memset(&k, 0, sizeof(k));
    if (len < 3 || (nreq = v[0]) > PL_RES_MAX || len < 1 + nreq * sizeof(int64_t) + 2 ||
        v[len - 1] != '\0')
        return; /* not reduce_pod's: cannot happen */
    memcpy(k.req.v, v + 1, nreq * sizeof(int64_t));
    unit = (const char *)v + 1 + nreq * sizeof(int64_t);
    node = unit + strlen(unit) + 1;
    if (node >= (const char *)v + len)
        return;
    k.unit = *unit ? unit : NULL;
    k.node = *node ? node : NULL;
    seen_kept(payload, &k);
}

/* A node for rc_watch: prune_node's members, as JSON. */
static int reduce_node(const cJSON *item, const struct pl_resnames *res, struct rc_buf *out)
{
    struct rc_err err = RC_ERR_INIT;
    cJSON *n = prune_node(item);
    char *text = cJSON_PrintUnformatted(n);
    int kept = text && rc_buf_puts(out, text, &err) == RC_OK;

    (void)res;
    cJSON_free(text);
    cJSON_Delete(n);
    return kept;
}

/* A node as reduce_node kept it, into the fetch's seen (rc_watch_each_fn). */
static void seen_node_kept(void *payload, const char *key, const void *value, size_t len)
{
    struct seen *s = payload;
    cJSON *n = cJSON_ParseWithLength(value, len);

    (void)key;
    if (!n)
        return; /* not reduce_node's: cannot happen */
    if (!s->nodes)
        s->nodes = cJSON_CreateArray();
    cJSON_AddItemToArray(s->nodes, n);
}

static void seen_deployment(struct seen *s, const cJSON *d)
{
    const cJSON *md = field(d, "metadata");
    const char *name = field_str(md, "name"), *ns = field_str(md, "namespace");
    const char *app = field_str(field(md, "labels"), "app.kubernetes.io/name");

    if (!name || !deployment_replicas(d))
        return;
    if ((ns && !strcmp(ns, "elotl") && strstr(name, "luna")) ||
        (app && (!strcmp(app, "luna-manager") || !strcmp(app, "elotl-luna"))))
        s->luna = 1;
    if (!strcmp(name, "cluster-autoscaler") || (app && !strcmp(app, "cluster-autoscaler")))
        s->ca = 1;
}

static enum pl_autoscaler seen_autoscaler(const struct seen *s)
{
    return s->luna ? PL_AUTOSCALER_LUNA
           : s->ca ? PL_AUTOSCALER_CLUSTER_AUTOSCALER
                   : PL_AUTOSCALER_NONE;
}

/* rc_observe_build from what was kept of the lists. */
static int build_seen(struct pl_cluster *c, const struct seen *s, struct rc_arena *a,
                      struct rc_err *err)
{
    const cJSON *item;
    size_t n = (size_t)cJSON_GetArraySize(s->nodes);
    int rc;

    c->live = 1;
    c->reachable = 1;
    c->nnodes = 0;
    c->nodes = rc_arena_calloc(a, n + 1, sizeof(*c->nodes));
    c->npresent = 0;
    c->present = rc_arena_calloc(a, s->npods + 1, sizeof(*c->present));
    cJSON_ArrayForEach(item, s->nodes)
    {
        if ((rc = read_node(&c->nodes[c->nnodes], item, c, s->res, a, err)) < 0)
            return rc_err_prefix(err, "cluster '%s': ", c->name);
        c->nnodes++;
    }
    rc_sort(c->nodes, c->nnodes, sizeof(*c->nodes), cmp_node);
    for (size_t i = 1; i < c->nnodes; i++) {
        if (!strcmp(c->nodes[i - 1].name, c->nodes[i].name))
            return rc_err_set(err, RC_EINVALID, "cluster '%s': node '%s' listed twice", c->name,
                              c->nodes[i].name);
    }
    for (size_t k = 0; k < s->npods; k++) {
        const struct seen_pod *p = &s->pods[k];
        struct pl_node *node;

        if (p->unit)
            c->present[c->npresent++] = rc_arena_strdup(a, p->unit);
        if (!p->node || !(node = find_node(c, p->node)))
            continue;
        for (int i = 0; i < s->res->n; i++)
            node->requested.v[i] += p->req.v[i];
        node->requested.v[PL_RES_PODS] += 1000;
    }
    rc_sort(c->present, c->npresent, sizeof(*c->present), cmp_str);
    if (c->npresent) {
        size_t w = 1;
        for (size_t i = 1; i < c->npresent; i++) {
            if (strcmp(c->present[i], c->present[w - 1]))
                c->present[w++] = c->present[i];
        }
        c->npresent = w;
    }
    if (s->deployments) {
        c->autoscaler = seen_autoscaler(s);
        c->any_shape = c->autoscaler != PL_AUTOSCALER_NONE && c->nshapes == 0;
    }
    return RC_OK;
}

int rc_observe_build(struct pl_cluster *c, const cJSON *nodes, const cJSON *pods,
                     const cJSON *deployments, struct pl_resnames *res, struct rc_arena *a,
                     struct rc_err *err)
{
    struct seen s;
    const cJSON *item;
    int rc;

    c->live = 1;
    c->reachable = 1;
    c->nnodes = 0;
    c->nodes = NULL;
    c->npresent = 0;
    c->present = NULL;
    if (nodes && !cJSON_IsArray(nodes))
        return rc_err_set(err, RC_EINVALID, "cluster '%s': node list is not an array", c->name);
    if (pods && !cJSON_IsArray(pods))
        return rc_err_set(err, RC_EINVALID, "cluster '%s': pod list is not an array", c->name);
    seen_init(&s, res);
    cJSON_ArrayForEach(item, nodes) seen_node(&s, item);
    cJSON_ArrayForEach(item, pods) seen_pod(&s, item);
    s.deployments = deployments != NULL;
    cJSON_ArrayForEach(item, deployments) seen_deployment(&s, item);
    rc = build_seen(c, &s, a, err);
    seen_release(&s);
    return rc;
}

/* ==== Fetching (worker threads) ==== */

struct fetch {
    const struct rd_cluster_conn *conn;
    const struct rc_kube_options *ko;
    const struct rc_log *log;
    struct seen seen; /* what was kept of the lists */
    int ok;
    int config;                      /* the kubeconfig could not be loaded */
    struct rc_err err;               /* why it could not be read */
    int once;                        /* unreachable at the last pass: one attempt per request */
    int watched[RC_WATCH_NKINDS];    /* the pods, the nodes came from the cluster's watcher */
    char why[RC_WATCH_NKINDS][256];  /* a watcher that ended, and why ("": none) */
    size_t refused[RC_WATCH_NKINDS]; /* it ended refused (403): the how manyth time; 0: not */
    int no_thread[RC_WATCH_NKINDS];  /* no thread could be started to watch it: the error */
};

static int collect_node(void *payload, const cJSON *item, struct rc_err *err)
{
    (void)err;
    seen_node(payload, item);
    return RC_OK;
}

static int collect_pod(void *payload, const cJSON *item, struct rc_err *err)
{
    (void)err;
    seen_pod(payload, item);
    return RC_OK;
}

static int collect_deployment(void *payload, const cJSON *item, struct rc_err *err)
{
    (void)err;
    seen_deployment(payload, item);
    return RC_OK;
}

/* The pods that can count (pod_counts): the server leaves out the ones that ended, which in a
 * fleet of batch jobs are many, as cluster-autoscaler asks for them ("status.phase!=
 * Succeeded,status.phase!=Failed"). */
#define PODS_THAT_COUNT                                                                            \
    "/api/v1/pods?fieldSelector=status.phase%21%3DSucceeded%2Cstatus.phase%21%3DFailed"

/* A collection a watcher can keep between passes (rc_watch.h). */
struct watched {
    const char *what;          /* for messages: "pod", "node" */
    const char *path;          /* the list's path and query, which the watch follows */
    rc_kube_item_fn collect;   /* an item of a list kept by no watcher */
    rc_watch_reduce_fn reduce; /* an item as a watcher keeps it */
    rc_watch_each_fn take;     /* what a watcher kept, into the fetch's seen */
};

static const struct watched watched[RC_WATCH_NKINDS] = {
    [RC_WATCH_PODS] = {"pod", PODS_THAT_COUNT, collect_pod, reduce_pod, seen_pod_kept},
    [RC_WATCH_NODES] = {"node", "/api/v1/nodes", collect_node, reduce_node, seen_node_kept},
};

struct table_fill {
    struct rc_watch_table *t;
    const struct pl_resnames *res;
    rc_watch_reduce_fn reduce;
};

static int collect_table(void *payload, const cJSON *item, struct rc_err *err)
{
    struct table_fill *tf = payload;

    (void)err;
    rc_watch_table_put(tf->t, item, tf->res, tf->reduce);
    return RC_OK;
}

/* The pods that count, or the nodes: from the cluster's watcher when it holds them, else a
 * list, after which (in loop mode) a watcher keeps them for the next pass. */
static int fetch_watched(struct fetch *f, struct rc_kube *k, enum rc_watch_kind kind)
{
    const struct watched *wd = &watched[kind];
    struct rc_watch_set *ws = f->ko->watches;
    struct table_fill tf;
    uint64_t ident;
    char rv[128];
    int error;

    if (!ws)
        return rc_kube_list(k, wd->path, NULL, wd->collect, &f->seen, &f->err);
    ident = rc_watch_ident(f->conn, rc_kube_server(k), f->seen.res);
    if (rc_watch_take(ws, f->conn->name, kind, ident, wd->take, &f->seen, f->why[kind],
                      sizeof(f->why[kind]), &f->refused[kind])) {
        f->watched[kind] = 1;
        return RC_OK;
    }
    tf.t = rc_watch_table_new();
    tf.res = f->seen.res;
    tf.reduce = wd->reduce;
    error = rc_kube_list_rv(k, wd->path, NULL, collect_table, &tf, rv, sizeof(rv), &f->err);
    if (error < 0) {
        rc_watch_table_free(tf.t);
        return error;
    }
    rc_watch_table_each(tf.t, wd->take, &f->seen);
    f->no_thread[kind] = rc_watch_start(ws, f->conn->name, kind, ident, f->conn, f->ko, wd->path,
                                        rv, tf.t, f->seen.res, wd->reduce);
    return RC_OK;
}

/*
 * A pass that took a cluster's nodes and pods from its watchers, and lists nothing else,
 * still asks the API server something: a cluster is reachable exactly when a request of this
 * pass is answered, whatever its watchers hold (a watch can hold on a connection the server
 * has stopped answering new requests on, or after the role lost `list`). One node, under the
 * same authorization as the list it stands for; the answer is not read.
 */
#define PROBE "/api/v1/nodes?limit=1"

static int probe(struct fetch *f, struct rc_kube *k)
{
    struct rc_http_response resp = RC_HTTP_RESPONSE_INIT;
    int error;

    error = rc_kube_request(k, "GET", PROBE, NULL, NULL, 0, &resp, &f->err);
    rc_http_response_release(&resp);
    return error;
}

/*
 * The Deployments seen_deployment can take for an autoscaler, and no others: a cluster's
 * Deployments are thousands on a large shared cluster, and all of them were read every pass to
 * find one. Three small lists instead: namespace elotl (Luna's, by name), the three
 * app.kubernetes.io/name values, and the name cluster-autoscaler. A Deployment in two of them
 * is seen twice, which changes nothing (seen_deployment only sets flags).
 */
#define DEPLOYMENTS "/apis/apps/v1/deployments"
static const char *const autoscaler_lists[] = {
    "/apis/apps/v1/namespaces/elotl/deployments",
    DEPLOYMENTS "?labelSelector=app.kubernetes.io%2Fname%20in%20%28luna-manager%2Celotl-luna%2C"
                "cluster-autoscaler%29",
    DEPLOYMENTS "?fieldSelector=metadata.name%3Dcluster-autoscaler",
};

static int fetch_autoscalers(struct fetch *f, struct rc_kube *k)
{
    for (size_t i = 0; i < sizeof(autoscaler_lists) / sizeof(autoscaler_lists[0]); i++) {
        if (rc_kube_list(k, autoscaler_lists[i], NULL, collect_deployment, &f->seen, &f->err) < 0)
            return RC_ERROR;
    }
    return RC_OK;
}

/* Descriptors a live cluster may hold at once in loop mode: the pass's connection and two
 * watches, each with libcurl's wake-up pair (measured: 605 for 100 clusters), and room. */
#define FDS_PER_CLUSTER 8

/* Once a process: a soft limit on open files too low for the live fleet (rc_proc.h raised it
 * as far as the hard limit allows) is said before the clusters past it fail one by one with
 * "Too many open files". */
static void warn_open_files(size_t nlive, const struct rc_log *log)
{
    static atomic_int warned;
    struct rlimit rl;

    if (!log || !nlive || getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY ||
        (rlim_t)nlive * FDS_PER_CLUSTER + 64 <= rl.rlim_cur || atomic_exchange(&warned, 1))
        return;
    rc_log_warn(log,
                "%zu live cluster%s may need about %zu open files, and this process may open "
                "%llu: raise its limit (systemd: LimitNOFILE=; a shell: ulimit -n)",
                nlive, nlive == 1 ? "" : "s", nlive * FDS_PER_CLUSTER + 64,
                (unsigned long long)rl.rlim_cur);
}

static void *run_fetch(void *arg)
{
    struct fetch *f = arg;
    struct rc_kube_options ko = *f->ko;
    struct rc_kube *k = NULL;
    int rc;

    ko.log = f->log;
    if (f->once) {
        ko.http.max_attempts = 1;
        if (f->log)
            rc_log_debug(f->log, "cluster '%s': unreachable at the last pass: one attempt",
                         f->conn->name);
    }
    if ((rc = rc_kube_open_conn(&k, f->conn, &ko, &f->err)) < 0) {
        /* a kubeconfig, file or context that is missing or wrong is configuration; what the
         * system ran short of (descriptors, memory) or an I/O error is this pass's outage */
        f->config = rc == RC_ENOTFOUND || rc == RC_EINVALID;
        return NULL;
    }
    f->seen.deployments = f->conn->detect_autoscaler;
    if (fetch_watched(f, k, RC_WATCH_NODES) < 0 || fetch_watched(f, k, RC_WATCH_PODS) < 0 ||
        (f->conn->detect_autoscaler && fetch_autoscalers(f, k) < 0))
        goto done;
    if (f->watched[RC_WATCH_NODES] && f->watched[RC_WATCH_PODS] && !f->conn->detect_autoscaler &&
        probe(f, k) < 0)
        goto done;
    f->ok = 1;
done:
    rc_kube_free(k);
    return NULL;
}

static void fetch_one(void *arg, size_t i)
{
    run_fetch(&((struct fetch *)arg)[i]);
}

/* Every live cluster read, RC_OBSERVE_MAX_THREADS at once, a thread taking the next cluster as
 * soon as it is done with one: one cluster that answers only at its timeout holds one thread,
 * not a round of them (rc_threads_each). */
static void fetch_all(struct fetch *fs, size_t n)
{
    rc_threads_each(fetch_one, fs, n, RC_OBSERVE_MAX_THREADS);
}

/* Two names (bsearch in rc_kube_options.known_down, sorted by name). */
static int cmp_name(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int rc_observe_fleet_report(struct pl_cluster **out, size_t *n, struct rd_source *src,
                            const struct rc_kube_options *ko, const struct rc_log *log,
                            struct rc_observe_report *rep, struct rc_arena *a, struct rc_err *err)
{
    struct rc_kube_options defaults = RC_KUBE_OPTIONS_INIT;
    struct pl_cluster *fleet = rc_arena_calloc(a, src->nclusters + 1, sizeof(*fleet));
    struct fetch *fs = rc_xcalloc(src->nclusters + 1, sizeof(*fs));
    size_t nlive = 0;

    if (rep)
        memset(rep, 0, sizeof(*rep));
    for (size_t i = 0; i < src->nclusters; i++) {
        fleet[i] = src->clusters[i];
        if (!src->conns[i].live)
            continue;
        fs[nlive].conn = &src->conns[i];
        fs[nlive].ko = ko ? ko : &defaults;
        fs[nlive].log = log;
        seen_init(&fs[nlive].seen, &src->res);
        if (ko && ko->nknown_down && src->conns[i].name &&
            bsearch(&src->conns[i].name, ko->known_down, ko->nknown_down, sizeof(*ko->known_down),
                    cmp_name))
            fs[nlive].once = 1;
        nlive++;
    }
    /* without libcurl no cluster can be reached: a broken installation, not an outage of
     * the clusters nor a mistake in their kubeconfigs */
    if (nlive && rc_http_load(err) < 0) {
        free(fs);
        return RC_ERROR;
    }
    warn_open_files(nlive, log);
    fetch_all(fs, nlive);
    if (ko && ko->watches) {
        /* the watchers of clusters this pass did not read (removed, or simulated now) */
        const char **names = rc_xcalloc(nlive + 1, sizeof(*names));
        for (size_t f = 0; f < nlive; f++)
            names[f] = fs[f].conn->name;
        rc_watch_keep_only(ko->watches, names, nlive);
        free(names);
    }
    for (size_t i = 0, f = 0; i < src->nclusters; i++) {
        struct pl_cluster *c = &fleet[i];
        struct fetch *fe;
        struct rc_err berr = RC_ERR_INIT;

        if (!src->conns[i].live)
            continue;
        fe = &fs[f++];
        if (fe->ok && build_seen(c, &fe->seen, a, &berr) < 0) {
            fe->ok = 0;
            fe->err = berr;
        }
        if (!fe->ok) {
            *c = src->clusters[i];
            c->live = 1;
            c->reachable = 0;
            if (rep)
                rep->nunreachable++;
            if (fe->config) {
                if (rep && !rep->nconfig++) {
                    struct rc_err m = RC_ERR_INIT;
                    rc_err_set(&m, RC_EINVALID, "cluster '%s': cannot load its kubeconfig: %s",
                               c->name, fe->err.msg);
                    memcpy(rep->config_msg, m.msg, sizeof(rep->config_msg));
                }
                if (log) {
                    struct rc_log_field lf[] = {RC_LOG_STR("cluster", c->name)};
                    rc_log_kv(log, RC_LOG_ERROR, lf, 1,
                              "cluster '%s': cannot load its kubeconfig: %s; fix the file or "
                              "the Cluster's spec.kubeconfig (it takes no new work until then)",
                              c->name, fe->err.msg);
                }
            } else if (log) {
                /* the pass that finds it down warns; the passes after it say so at info
                 * level (the exit status and rightplace_cluster_reachable still count it),
                 * so that an outage of days is not a warning every pass */
                struct rc_log_field lf[] = {RC_LOG_STR("cluster", c->name)};
                rc_log_kv(log, fe->once ? RC_LOG_INFO : RC_LOG_WARN, lf, 1,
                          "cluster '%s': %s: %s; it takes no new work", c->name,
                          fe->once ? "still unreachable" : "unreachable", fe->err.msg);
            }
        } else if (rep) {
            rep->nwatched += fe->watched[RC_WATCH_PODS];
            rep->nwatched_nodes += fe->watched[RC_WATCH_NODES];
        }
        if (fe->ok && log) {
            if (fe->once) {
                struct rc_log_field lf[] = {RC_LOG_STR("cluster", c->name)};
                rc_log_kv(log, RC_LOG_INFO, lf, 1, "cluster '%s': reachable again", c->name);
            }
            for (int kind = 0; kind < RC_WATCH_NKINDS; kind++) {
                struct rc_log_field lf[] = {RC_LOG_STR("cluster", c->name)};
                const char *what = watched[kind].what;
                if (fe->refused[kind])
                    /* a role bound before it granted `watch` (an upgrade): listed every pass,
                     * as without watches, and asked again after RC_WATCH_REFUSED_S; a
                     * warning the first time, so that the fix is seen once, not every pass */
                    rc_log_kv(log, fe->refused[kind] == 1 ? RC_LOG_WARN : RC_LOG_INFO, lf, 1,
                              "cluster '%s': may not watch %ss (%s); they are listed every pass "
                              "instead, and the watch is asked for again in %d minutes: grant "
                              "`watch` on %ss (deploy/rbac/member-cluster.yaml)",
                              c->name, what, fe->why[kind], RC_WATCH_REFUSED_S / 60, what);
                else if (fe->why[kind][0])
                    rc_log_kv(log, RC_LOG_INFO, lf, 1,
                              "cluster '%s': its %s watch ended (%s); %ss listed again", c->name,
                              what, fe->why[kind], what);
                /* a tasks or pids limit (systemd's TasksMax, a container's pids limit): a
                 * watch is one thread; said once until a watcher starts again */
                if (fe->no_thread[kind])
                    rc_log_kv(log, rc_watch_say_no_thread(ko->watches) ? RC_LOG_WARN : RC_LOG_DEBUG,
                              lf, 1,
                              "cluster '%s': cannot start a thread to watch its %ss (%s); they "
                              "are listed every pass instead: a loop holds two threads per live "
                              "cluster, raise the tasks or pids limit it runs under",
                              c->name, what, strerror(fe->no_thread[kind]));
            }
            rc_log_debug(log, "cluster '%s': %zu nodes, %zu units present%s", c->name, c->nnodes,
                         c->npresent,
                         fe->watched[RC_WATCH_NODES] && fe->watched[RC_WATCH_PODS]
                             ? " (nodes and pods from their watches)"
                         : fe->watched[RC_WATCH_NODES] ? " (nodes from their watch)"
                         : fe->watched[RC_WATCH_PODS]  ? " (pods from their watch)"
                                                       : "");
        }
        seen_release(&fe->seen);
    }
    free(fs);
    *out = fleet;
    *n = src->nclusters;
    return RC_OK;
}

int rc_observe_fleet_opts(struct pl_cluster **out, size_t *n, struct rd_source *src,
                          const struct rc_kube_options *ko, const struct rc_log *log,
                          struct rc_arena *a, struct rc_err *err)
{
    return rc_observe_fleet_report(out, n, src, ko, log, NULL, a, err);
}

int rc_observe_fleet(struct pl_cluster **out, size_t *n, struct rd_source *src,
                     const struct rc_log *log, struct rc_arena *a, struct rc_err *err)
{
    return rc_observe_fleet_opts(out, n, src, NULL, log, a, err);
}
