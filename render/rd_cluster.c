/*
 * rd_cluster.c - Cluster manifests -> struct pl_cluster (see rd_cluster.h).
 *
 * Does not open, read or check any kubeconfig file: that is reconciler/'s job (against the
 * operator's kubeconfigs, docs/security.md), and no credential passes through here.
 */
#include "rc_sort.h"
#include "rd_cluster.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pl_basics.h"
#include "rc_arena.h"
#include "rd_field.h"
#include "rd_object.h"

#define MAX_NODES 10000  /* declared nodes per simulated cluster, after expansion */
#define DEFAULT_PODS 110 /* the kubelet's default maxPods */
#define HOSTNAME_LABEL "kubernetes.io/hostname"

struct cctx {
    const struct rd_docs *docs;
    struct pl_resnames *res;
    struct rc_arena *a;
    struct rc_err *err;
};

int rd_is_cluster(const struct rd_object *o)
{
    return o->kind && o->group && !strcmp(o->kind, "Cluster") &&
           !strcmp(o->group, "rightplace.dev");
}

/* Every member of obj is one of `known` (NULL-terminated), or an error naming `where`. */
static int only_known(struct cctx *c, const cJSON *obj, const char *const *known, const char *where)
{
    const cJSON *it;

    cJSON_ArrayForEach(it, obj)
    {
        const char *const *k;
        for (k = known; *k && strcmp(*k, it->string); k++)
            ;
        if (!*k)
            return rd_err_at(c->err, RC_EINVALID, c->docs, it, "unknown field '%s' in %s",
                             it->string, where);
    }
    return RC_OK;
}

static int cost(struct cctx *c, int64_t *out, const cJSON *obj)
{
    const cJSON *n = rd_field_get(obj, "costPerHour");
    double d;
    char *end = NULL;

    *out = 0;
    if (!n)
        return RC_OK;
    if (cJSON_IsNumber(n))
        d = n->valuedouble;
    else if (cJSON_IsString(n) && *n->valuestring)
        d = strtod(n->valuestring, &end);
    else
        d = -1;
    if ((end && *end) || !isfinite(d) || d < 0 || d > 1e12)
        return rd_err_at(c->err, RC_EINVALID, c->docs, n,
                         "costPerHour must be a number from 0 to 1e12");
    *out = (int64_t)(d * 1e6 + 0.5); /* d >= 0: round half up, without libm */
    return RC_OK;
}

static int allocatable(struct cctx *c, struct pl_res *out, const cJSON *obj)
{
    const cJSON *map, *it;
    int rc, i, have_pods = 0;

    memset(out, 0, sizeof(*out));
    if ((rc = rd_field_obj(&map, obj, "allocatable", 0, c->docs, c->err)) < 0)
        return rc;
    cJSON_ArrayForEach(it, map)
    {
        if (!*it->string)
            return rd_err_at(c->err, RC_EINVALID, c->docs, it, "empty resource name");
        i = pl_resnames_intern(c->res, c->a, it->string);
        if (i < 0)
            return rd_err_at(c->err, RC_EINVALID, c->docs, it,
                             "too many distinct resource names (at most %d in all): '%s'",
                             PL_RES_MAX, it->string);
        if ((rc = rd_field_quantity(&out->v[i], it, it->string, c->docs, c->err)) < 0)
            return rc;
        if (i == PL_RES_PODS)
            have_pods = 1;
    }
    if (!have_pods)
        out->v[PL_RES_PODS] = DEFAULT_PODS * 1000;
    return RC_OK;
}

static int taints(struct cctx *c, size_t *n, struct pl_taint **out, const cJSON *obj)
{
    const cJSON *list, *it;
    int rc;

    *n = 0;
    *out = NULL;
    if ((rc = rd_field_list(&list, obj, "taints", 0, c->docs, c->err)) < 0)
        return rc;
    if (!cJSON_GetArraySize(list))
        return RC_OK;
    *out = rc_arena_calloc(c->a, (size_t)cJSON_GetArraySize(list), sizeof(**out));
    cJSON_ArrayForEach(it, list)
    {
        if ((rc = rd_field_taint(&(*out)[*n], it, c->docs, c->a, c->err)) < 0)
            return rc;
        (*n)++;
    }
    return RC_OK;
}

static int labels(struct cctx *c, struct pl_labels *out, const cJSON *obj)
{
    const cJSON *map;
    int rc;

    if ((rc = rd_field_obj(&map, obj, "labels", 0, c->docs, c->err)) < 0)
        return rc;
    return rd_field_string_map(out, map, 1, c->docs, c->a, c->err);
}

static int shapes(struct cctx *c, struct pl_cluster *out, const cJSON *list)
{
    static const char *const known[] = {"name",   "max",    "costPerHour", "allocatable",
                                        "labels", "taints", NULL};
    const cJSON *it;
    int rc;

    out->shapes = rc_arena_calloc(c->a, (size_t)cJSON_GetArraySize(list) + 1, sizeof(*out->shapes));
    cJSON_ArrayForEach(it, list)
    {
        struct pl_shape *s = &out->shapes[out->nshapes];

        if (!cJSON_IsObject(it))
            return rd_err_at(c->err, RC_EINVALID, c->docs, it, "node shape must be a mapping");
        if ((rc = only_known(c, it, known, "a node shape")) < 0 ||
            (rc = rd_field_str(&s->name, it, "name", NULL, c->docs, c->a, c->err)) < 0 ||
            (rc = rd_field_int(&s->max, it, "max", -1, 0, INT32_MAX, c->docs, c->err)) < 0 ||
            (rc = cost(c, &s->cost_micro, it)) < 0 ||
            (rc = allocatable(c, &s->allocatable, it)) < 0 ||
            (rc = labels(c, &s->labels, it)) < 0 ||
            (rc = taints(c, &s->ntaints, &s->taints, it)) < 0)
            return rc;
        if (!s->name || !*s->name)
            return rd_err_at(c->err, RC_EINVALID, c->docs, it, "node shape has no name");
        for (size_t k = 0; k < out->nshapes; k++) {
            if (!strcmp(out->shapes[k].name, s->name))
                return rd_err_at(c->err, RC_EINVALID, c->docs, it,
                                 "node shape '%s' is declared twice", s->name);
        }
        out->nshapes++;
    }
    return RC_OK;
}

static int cmp_node(const void *x, const void *y)
{
    return strcmp(((const struct pl_node *)x)->name, ((const struct pl_node *)y)->name);
}

static int nodes(struct cctx *c, struct pl_cluster *out, const cJSON *list)
{
    static const char *const known[] = {"name",   "count",         "allocatable", "labels",
                                        "taints", "unschedulable", NULL};
    const cJSON *it;
    int64_t total = 0;
    int rc;

    /* first pass: validate and count, so that the node array is allocated once */
    cJSON_ArrayForEach(it, list)
    {
        int64_t count;
        if (!cJSON_IsObject(it))
            return rd_err_at(c->err, RC_EINVALID, c->docs, it, "node must be a mapping");
        if ((rc = only_known(c, it, known, "a node")) < 0 ||
            (rc = rd_field_int(&count, it, "count", 1, 0, MAX_NODES, c->docs, c->err)) < 0)
            return rc;
        total += count;
        if (total > MAX_NODES)
            return rd_err_at(c->err, RC_EINVALID, c->docs, it,
                             "too many nodes (more than %d) in one cluster", MAX_NODES);
    }
    out->nodes = rc_arena_calloc(c->a, (size_t)total + 1, sizeof(*out->nodes));
    cJSON_ArrayForEach(it, list)
    {
        struct pl_node proto;
        struct rc_err verr = RC_ERR_INIT;
        const char *name = NULL;
        int64_t count;
        int unsched;

        memset(&proto, 0, sizeof(proto));
        if ((rc = rd_field_str(&name, it, "name", NULL, c->docs, c->a, c->err)) < 0 ||
            (rc = rd_field_int(&count, it, "count", 1, 0, MAX_NODES, c->docs, c->err)) < 0 ||
            (rc = rd_field_bool(&unsched, it, "unschedulable", 0, c->docs, c->err)) < 0 ||
            (rc = allocatable(c, &proto.allocatable, it)) < 0 ||
            (rc = labels(c, &proto.labels, it)) < 0 ||
            (rc = taints(c, &proto.ntaints, &proto.taints, it)) < 0)
            return rc;
        if (!name || !*name)
            return rd_err_at(c->err, RC_EINVALID, c->docs, it, "node has no name");
        if (rd_validate_subdomain(name, "node name", &verr) < 0)
            return rd_err_at(c->err, RC_EINVALID, c->docs, rd_field_get(it, "name"), "%s",
                             verr.msg);
        proto.unschedulable = unsched;
        for (int64_t i = 1; i <= count; i++) {
            struct pl_node *n = &out->nodes[out->nnodes++];
            *n = proto;
            n->name = rc_arena_printf(c->a, "%s-%lld", name, (long long)i);
            if (!pl_labels_get(&proto.labels, HOSTNAME_LABEL)) {
                /* each node its own copy of the label array */
                n->labels.n = 0;
                n->labels.v = NULL;
                for (size_t k = 0; k < proto.labels.n; k++)
                    pl_labels_set(&n->labels, c->a, proto.labels.v[k].key, proto.labels.v[k].value);
                pl_labels_set(&n->labels, c->a, HOSTNAME_LABEL, n->name);
            }
        }
    }
    rc_sort(out->nodes, out->nnodes, sizeof(*out->nodes), cmp_node);
    for (size_t i = 1; i < out->nnodes; i++) {
        if (!strcmp(out->nodes[i - 1].name, out->nodes[i].name))
            return rd_err_at(c->err, RC_EINVALID, c->docs, list, "node '%s' is declared twice",
                             out->nodes[i].name);
    }
    return RC_OK;
}

int rd_cluster_file_name_ok(const char *s)
{
    size_t n = strlen(s);

    if (n == 0 || n > 255 || s[0] == '.')
        return 0;
    for (const char *p = s; *p; p++) {
        if (*p == '/' || (unsigned char)*p < 0x20 || *p == 0x7f)
            return 0;
    }
    return 1;
}

/* spec.kubeconfig: what the Cluster selects among the operator's credentials. */
static int connection(struct cctx *c, struct rd_cluster_conn *conn, const cJSON *kc)
{
    static const char *const known_kc[] = {"context", "name", "inCluster", "path", NULL};
    int rc, in_cluster = 0;

    if ((rc = only_known(c, kc, known_kc,
                         "kubeconfig (it selects a context, a file name or inCluster; "
                         "credentials are never embedded)")) < 0 ||
        (rc = rd_field_str(&conn->context, kc, "context", NULL, c->docs, c->a, c->err)) < 0 ||
        (rc = rd_field_str(&conn->file, kc, "name", NULL, c->docs, c->a, c->err)) < 0 ||
        (rc = rd_field_str(&conn->path, kc, "path", NULL, c->docs, c->a, c->err)) < 0 ||
        (rc = rd_field_bool(&in_cluster, kc, "inCluster", 0, c->docs, c->err)) < 0)
        return rc;
    if (conn->context && !*conn->context)
        conn->context = NULL;
    if (conn->path && !*conn->path)
        return rd_err_at(c->err, RC_EINVALID, c->docs, rd_field_get(kc, "path"),
                         "kubeconfig path is empty");
    if (conn->file && !rd_cluster_file_name_ok(conn->file))
        return rd_err_at(c->err, RC_EINVALID, c->docs, rd_field_get(kc, "name"),
                         "kubeconfig name '%s' must be a plain file name of the operator's "
                         "kubeconfig directory (no '/', not starting with '.')",
                         conn->file);
    if (conn->file && conn->path)
        return rd_err_at(c->err, RC_EINVALID, c->docs, kc,
                         "kubeconfig takes a name or a path, not both");
    if (in_cluster) {
        if (conn->file || conn->path || conn->context)
            return rd_err_at(c->err, RC_EINVALID, c->docs, kc,
                             "kubeconfig inCluster takes no context, name or path");
        conn->in_cluster = 1;
    } else if (!conn->file && !conn->path && !conn->context) {
        return rd_err_at(c->err, RC_EINVALID, c->docs, kc,
                         "kubeconfig needs a context (of the operator's kubeconfigs), a name "
                         "(a file of the operator's kubeconfig directory) or inCluster: true");
    }
    conn->live = 1;
    return RC_OK;
}

int rd_cluster_parse(struct pl_cluster *out, struct rd_cluster_conn *conn,
                     const struct rd_object *o, const struct rd_docs *docs, struct pl_resnames *res,
                     struct rc_arena *a, struct rc_err *err)
{
    static const char *const known_spec[] = {"kubeconfig", "autoscaler", "costPerHour", "nodes",
                                             NULL};
    static const char *const known_as[] = {"type", "nodeShapes", NULL};
    struct cctx c = {docs, res, a, err};
    const cJSON *spec, *kc = NULL, *as = NULL, *shp = NULL, *nl = NULL;
    const char *type = "auto", *given;
    int rc;

    memset(out, 0, sizeof(*out));
    memset(conn, 0, sizeof(*conn));
    out->name = o->name;
    conn->name = o->name;
    out->reachable = 1;
    if (strcmp(o->version, "v1alpha1"))
        return rd_err_at(err, RC_EINVALID, docs, rd_field_get(o->root, "apiVersion"),
                         "unsupported apiVersion '%s' for Cluster (want rightplace.dev/v1alpha1)",
                         o->api_version);
    /* labels, plus the name label Nova sets on every Cluster */
    given = pl_labels_get(&o->labels, PL_LABEL_CLUSTER_NAME);
    if (given && strcmp(given, o->name))
        return rd_err_at(err, RC_EINVALID, docs, rd_field_get(o->root, "metadata"),
                         "label '%s' is '%s' but must be the cluster's name '%s'",
                         PL_LABEL_CLUSTER_NAME, given, o->name);
    for (size_t i = 0; i < o->labels.n; i++)
        pl_labels_set(&out->labels, a, o->labels.v[i].key, o->labels.v[i].value);
    pl_labels_set(&out->labels, a, PL_LABEL_CLUSTER_NAME, o->name);

    if ((rc = rd_field_obj(&spec, o->root, "spec", 0, docs, err)) < 0 ||
        (rc = only_known(&c, spec, known_spec, "Cluster spec")) < 0 ||
        (rc = rd_field_obj(&kc, spec, "kubeconfig", 0, docs, err)) < 0 ||
        (rc = rd_field_obj(&as, spec, "autoscaler", 0, docs, err)) < 0 ||
        (rc = rd_field_list(&nl, spec, "nodes", 0, docs, err)) < 0 ||
        (rc = cost(&c, &out->cost_micro, spec)) < 0)
        return rc;
    if (kc && (rc = connection(&c, conn, kc)) < 0)
        return rc;
    out->live = conn->live;
    if (as) {
        if ((rc = only_known(&c, as, known_as, "autoscaler")) < 0 ||
            (rc = rd_field_str(&type, as, "type", "auto", docs, a, err)) < 0 ||
            (rc = rd_field_list(&shp, as, "nodeShapes", 0, docs, err)) < 0)
            return rc;
    }
    if (!strcmp(type, "none")) {
        out->autoscaler = PL_AUTOSCALER_NONE;
    } else if (!strcmp(type, "cluster-autoscaler")) {
        out->autoscaler = PL_AUTOSCALER_CLUSTER_AUTOSCALER;
    } else if (!strcmp(type, "luna")) {
        out->autoscaler = PL_AUTOSCALER_LUNA;
    } else if (!strcmp(type, "auto")) {
        if (out->live)
            conn->detect_autoscaler = 1;
        else if (cJSON_GetArraySize(shp) > 0)
            out->autoscaler = PL_AUTOSCALER_CLUSTER_AUTOSCALER;
    } else {
        return rd_err_at(err, RC_EINVALID, docs, rd_field_get(as, "type"),
                         "unknown autoscaler type '%s' (want auto, none, cluster-autoscaler, "
                         "luna)",
                         type);
    }
    if (shp) {
        if (!strcmp(type, "none"))
            return rd_err_at(err, RC_EINVALID, docs, shp,
                             "nodeShapes need an autoscaler (type is 'none')");
        if ((rc = shapes(&c, out, shp)) < 0)
            return rc;
    }
    if (out->autoscaler != PL_AUTOSCALER_NONE || conn->detect_autoscaler)
        out->any_shape = out->nshapes == 0;
    if (nl) {
        if (out->live)
            return rd_err_at(err, RC_EINVALID, docs, nl,
                             "nodes are declared only for simulated clusters (this one has a "
                             "kubeconfig: its nodes are observed)");
        if ((rc = nodes(&c, out, nl)) < 0)
            return rc;
    }
    return RC_OK;
}
