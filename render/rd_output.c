/*
 * rd_output.c - the deploy tree: per-cluster directories with rightplace's labels, Namespaces
 * following their objects, a kustomization.yaml per cluster; plus helpers shared by the
 * record, capacity and message writers (rd_output_internal.h).
 *
 * What it does not do: decide anything (placement/), read or write git (reconciler/), or
 * parse YAML text (rd_yaml). The decision record is rd_record.c, the capacity snapshot
 * rd_capacity.c, the commit message rd_message.c.
 */
#include "rc_sort.h"
#include "rd_output.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pl_basics.h"
#include "pl_engine.h"
#include "rc_arena.h"
#include "rc_hash.h"
#include "rc_mem.h"
#include "rc_thread.h"
#include "rd_demand.h"
#include "rd_object.h"
#include "rd_jarena.h"
#include "rd_output_internal.h"
#include "rd_policy.h"
#include "rd_yaml.h"

/* ==== Shared helpers ==== */

static int cmp_decision(const void *x, const void *y)
{
    const struct pl_decision *const *a = x;
    const struct pl_decision *const *b = y;
    return strcmp((*a)->unit, (*b)->unit);
}

const struct pl_decision **rd_out_sorted_decisions(const struct pl_result *res, size_t *n,
                                                   struct rc_arena *a)
{
    const struct pl_decision **v = rc_arena_calloc(a, res->ndecisions + 1, sizeof(*v));
    size_t k = 0;

    for (size_t i = 0; i < res->ndecisions; i++) {
        if (res->decisions[i].change != PL_CHANGE_REMOVED)
            v[k++] = &res->decisions[i];
    }
    rc_sort(v, k, sizeof(*v), cmp_decision);
    *n = k;
    return v;
}

int rd_out_emit(const char **data, size_t *len, const cJSON *root, struct rc_arena *a,
                struct rc_err *err)
{
    struct rc_buf b = RC_BUF_INIT;
    int error = rd_yaml_emit(&b, root, err);

    if (error == 0) {
        *data = rc_arena_strndup(a, b.ptr, b.len);
        *len = b.len;
    }
    rc_buf_release(&b);
    return error;
}

static void *oom(void *p)
{
    if (!p)
        abort(); /* out of memory: see rc_mem.h */
    return p;
}

cJSON *rd_out_add(cJSON *obj, const char *key, cJSON *item)
{
    oom(item);
    if (!cJSON_AddItemToObject(obj, key, item))
        abort();
    return item;
}

cJSON *rd_out_str(const char *s)
{
    return oom(cJSON_CreateString(s));
}

cJSON *rd_out_add_str(cJSON *obj, const char *key, const char *s)
{
    return rd_out_add(obj, key, rd_out_str(s));
}

cJSON *rd_out_add_int(cJSON *obj, const char *key, int64_t v)
{
    return rd_out_add(obj, key, cJSON_CreateNumber((double)v));
}

cJSON *rd_out_add_bool(cJSON *obj, const char *key, int v)
{
    return rd_out_add(obj, key, cJSON_CreateBool(v ? 1 : 0));
}

cJSON *rd_out_push(cJSON *arr, cJSON *item)
{
    oom(item);
    if (!cJSON_AddItemToArray(arr, item))
        abort();
    return item;
}

cJSON *rd_out_str_array(const char *const *v, size_t n)
{
    cJSON *arr = oom(cJSON_CreateArray());

    for (size_t i = 0; i < n; i++)
        rd_out_push(arr, rd_out_str(v[i]));
    return arr;
}

int rd_out_err_at(struct rc_err *err, const struct rd_docs *docs, const char *file,
                  const cJSON *node, const char *fmt, ...)
{
    struct rd_pos pos = {0, 0};
    char msg[RC_ERR_MSG_MAX];
    va_list ap;

    if (docs && node)
        pos = rd_docs_pos(docs, node);
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (pos.line > 0)
        return rc_err_set(err, RC_EINVALID, "%s:%d:%d: %s", file, pos.line, pos.col, msg);
    return rc_err_set(err, RC_EINVALID, "%s: %s", file, msg);
}

int rd_out_get_str(const char **out, const cJSON *obj, const char *key, int required,
                   const struct rd_docs *docs, const char *file, struct rc_arena *a,
                   struct rc_err *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

    *out = NULL;
    if (!v || cJSON_IsNull(v)) {
        if (required)
            return rd_out_err_at(err, docs, file, obj, "missing field '%s'", key);
        return 0;
    }
    if (!cJSON_IsString(v))
        return rd_out_err_at(err, docs, file, v, "field '%s' is not a string", key);
    *out = rc_arena_strdup(a, v->valuestring);
    return 0;
}

int rd_out_get_strs(const char ***out, size_t *n, const cJSON *obj, const char *key,
                    const struct rd_docs *docs, const char *file, struct rc_arena *a,
                    struct rc_err *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    const cJSON *it;
    size_t k = 0;

    *out = NULL;
    *n = 0;
    if (!v || cJSON_IsNull(v))
        return 0;
    if (!cJSON_IsArray(v))
        return rd_out_err_at(err, docs, file, v, "field '%s' is not a list", key);
    *out = rc_arena_calloc(a, (size_t)cJSON_GetArraySize(v) + 1, sizeof(**out));
    cJSON_ArrayForEach(it, v)
    {
        if (!cJSON_IsString(it))
            return rd_out_err_at(err, docs, file, it, "'%s' entry is not a string", key);
        (*out)[k++] = rc_arena_strdup(a, it->valuestring);
    }
    *n = k;
    return 0;
}

int rd_out_each_str(void *payload, const cJSON *item, const struct rd_docs *docs,
                    struct rc_err *err)
{
    struct rd_out_strs *l = payload;

    if (!cJSON_IsString(item))
        return rd_out_err_at(err, docs, l->file, item, "'%s' entry is not a string", l->key);
    l->v = rc_xgrow(l->v, &l->cap, l->n + 1, sizeof(*l->v));
    l->v[l->n++] = rc_arena_strdup(l->a, item->valuestring);
    return 0;
}

int rd_out_take_strs(const char ***out, size_t *n, const cJSON *obj, struct rd_out_strs *l,
                     const struct rd_docs *docs, struct rc_err *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, l->key);
    size_t k = l->n;

    l->n = 0;
    *out = NULL;
    *n = 0;
    if (!v || cJSON_IsNull(v))
        return 0;
    if (!cJSON_IsArray(v))
        return rd_out_err_at(err, docs, l->file, v, "field '%s' is not a list", l->key);
    *out = rc_arena_calloc(l->a, k + 1, sizeof(**out));
    if (k)
        memcpy(*out, l->v, k * sizeof(**out));
    *n = k;
    return 0;
}

/* Kinds whose objects create pods, for picking a unit's main workload by key. */
static int kind_creates_pods(const char *kind)
{
    static const char *const kinds[] = {
        "Pod",        "Deployment",      "ReplicaSet",       "StatefulSet", "Job",
        "CronJob",    "DaemonSet",       "RayCluster",       "RayJob",      "RayService",
        "PyTorchJob", "LeaderWorkerSet", "InferenceService", "TFJob",       "MPIJob",
        "XGBoostJob", "PaddleJob",       "JAXJob",           "TrainJob"};
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
        if (!strcmp(kind, kinds[i]))
            return 1;
    }
    return 0;
}

/* "<ns>/<Kind>/<name>" -> "<ns>/<name>"; "<Kind>/<name>" -> "<name>"; sets *kind. */
static const char *title_from_key(const char *key, const char **kind, struct rc_arena *a)
{
    const char *s1 = strchr(key, '/');
    const char *s2 = s1 ? strchr(s1 + 1, '/') : NULL;

    if (s2) {
        *kind = rc_arena_strndup(a, s1 + 1, (size_t)(s2 - s1 - 1));
        return rc_arena_printf(a, "%.*s/%s", (int)(s1 - key), key, s2 + 1);
    }
    if (s1) {
        *kind = rc_arena_strndup(a, key, (size_t)(s1 - key));
        return s1 + 1;
    }
    *kind = "";
    return key;
}

const char *rd_out_unit_title(const struct pl_decision *d, struct rc_arena *a)
{
    const char *best = NULL;
    int best_rank = -1;

    for (size_t i = 0; i < d->nobjects; i++) {
        const struct pl_object *o = d->objects ? d->objects[i] : NULL;
        const char *title, *kind;
        int rank;

        if (o) {
            title = o->ns ? rc_arena_printf(a, "%s/%s", o->ns, o->name) : o->name;
            rank = o->npods > 0 ? 2 : kind_creates_pods(o->kind) ? 1 : 0;
        } else if (d->object_keys && d->object_keys[i]) {
            title = title_from_key(d->object_keys[i], &kind, a);
            rank = kind_creates_pods(kind) ? 1 : 0;
        } else {
            continue;
        }
        if (rank > best_rank) {
            best_rank = rank;
            best = title;
        }
    }
    if (best)
        return best;
    if (!d->policy) {
        const char *kind;
        return title_from_key(d->unit, &kind, a); /* the unit is the object's key */
    }
    return d->unit;
}

/* ==== The per-cluster tree ==== */

struct files {
    size_t n, cap;
    struct rd_tree_file *v;
};

static void files_add(struct files *f, const char *path, const char *data, size_t len)
{
    f->v = rc_xgrow(f->v, &f->cap, f->n + 1, sizeof(*f->v));
    f->v[f->n].path = path;
    f->v[f->n].data = data;
    f->v[f->n].len = len;
    f->v[f->n].keep = 0;
    f->v[f->n].id = NULL;
    f->n++;
}

/* A file the base deploy tree has as it should be. */
static void files_keep(struct files *f, const char *path)
{
    files_add(f, path, NULL, 0);
    f->v[f->n - 1].keep = 1;
}

void rd_render_digest(char out[17], const struct rd_render_options *opts)
{
    static const struct rd_render_options defaults = RD_RENDER_OPTIONS_INIT;
    uint64_t h = RC_FNV_INIT;

    if (!opts)
        opts = &defaults;
    /* "render N": bumped whenever the same input renders differently (2: KServe components'
     * pod labels), so that a tree made before is rendered again, not reused */
    h = rc_fnv1a_str(h, "rightplace " RP_VERSION " render 2\n");
    h = rc_fnv1a_str(h, opts->luna_key ? opts->luna_key : "");
    h = rc_fnv1a(h, "=", 1);
    h = rc_fnv1a_str(h, opts->luna_value ? opts->luna_value : "");
    h = rc_fnv1a(h, opts->luna_key ? "1" : "0", 1);
    h = rc_fnv1a(h, opts->pull ? "p" : "-", 1);
    rc_hash_hex(h, out);
}

/* A Namespace needed on a cluster, or one placed there as an object. */
struct nsneed {
    const char *cluster;
    const char *ns;
};

/* Each (cluster, namespace) once: 20,000 objects of 10,000 units on 100 clusters need at most
 * 100 x 50 of them, and the pairs are sorted every pass. slot k: an index + 1 into v, 0
 * empty; nslot a power of two, at least twice n. */
struct nsset {
    size_t n, cap;
    struct nsneed *v;
    size_t nslot;
    size_t *slot;
};

static uint64_t nsneed_hash(const char *cluster, const char *ns)
{
    return rc_xxh64_pair(cluster, ns);
}

static void nsset_add(struct nsset *s, const char *cluster, const char *ns)
{
    size_t k;

    if (2 * (s->n + 1) > s->nslot) {
        size_t nslot = s->nslot ? 2 * s->nslot : 64;
        free(s->slot);
        s->slot = rc_xcalloc(nslot, sizeof(*s->slot));
        s->nslot = nslot;
        for (size_t i = 0; i < s->n; i++) {
            k = (size_t)nsneed_hash(s->v[i].cluster, s->v[i].ns) & (nslot - 1);
            while (s->slot[k])
                k = (k + 1) & (nslot - 1);
            s->slot[k] = i + 1;
        }
    }
    for (k = (size_t)nsneed_hash(cluster, ns) & (s->nslot - 1); s->slot[k];
         k = (k + 1) & (s->nslot - 1)) {
        const struct nsneed *had = &s->v[s->slot[k] - 1];
        if (!strcmp(had->cluster, cluster) && !strcmp(had->ns, ns))
            return;
    }
    s->v = rc_xgrow(s->v, &s->cap, s->n + 1, sizeof(*s->v));
    s->v[s->n].cluster = cluster;
    s->v[s->n].ns = ns;
    s->slot[k] = ++s->n;
}

static int cmp_nsneed(const void *x, const void *y)
{
    const struct nsneed *a = x, *b = y;
    int c = strcmp(a->cluster, b->cluster);
    return c ? c : strcmp(a->ns, b->ns);
}

static int cmp_file(const void *x, const void *y)
{
    const struct rd_tree_file *a = x, *b = y;
    return strcmp(a->path, b->path);
}

/* Add item as the first member of obj (metadata reads best before spec). */
static cJSON *add_first(cJSON *obj, const char *key, cJSON *item)
{
    cJSON *rest = obj->child, *last;

    obj->child = NULL;
    rd_out_add(obj, key, item);
    if (rest) {
        last = rest->prev;
        item->next = rest;
        rest->prev = item;
        item->prev = last;
    }
    return item;
}

static cJSON *ensure_object(cJSON *parent, const char *key)
{
    cJSON *v = cJSON_GetObjectItemCaseSensitive(parent, key);

    if (cJSON_IsObject(v))
        return v;
    if (v)
        cJSON_DeleteItemFromObjectCaseSensitive(parent, key);
    if (!strcmp(key, "metadata"))
        return add_first(parent, key, oom(cJSON_CreateObject()));
    return rd_out_add(parent, key, cJSON_CreateObject());
}

static void set_str(cJSON *obj, const char *key, const char *value)
{
    cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

    if (v) {
        if (!cJSON_ReplaceItemInObjectCaseSensitive(obj, key, rd_out_str(value)))
            abort();
        return;
    }
    rd_out_add_str(obj, key, value);
}

/* Into obj's labels map `key` (NULL: metadata.labels). managed: add
 * app.kubernetes.io/managed-by (not in pull mode). Adds no empty labels map. */
static void put_labels(cJSON *obj, const char *key, int managed, const char *unit_label,
                       const char *luna_key, const char *luna_value)
{
    cJSON *labels;

    if (!managed && !unit_label && !luna_key)
        return;
    labels =
        key ? ensure_object(obj, key) : ensure_object(ensure_object(obj, "metadata"), "labels");
    if (managed)
        set_str(labels, PL_LABEL_MANAGED, PL_LABEL_MANAGED_VALUE);
    if (unit_label)
        set_str(labels, PL_LABEL_UNIT, unit_label);
    if (luna_key)
        set_str(labels, luna_key, luna_value ? luna_value : "true");
}

static void set_labels(cJSON *obj, int managed, const char *unit_label, const char *luna_key,
                       const char *luna_value)
{
    put_labels(obj, NULL, managed, unit_label, luna_key, luna_value);
}

/* Pull mode: neither Flux nor Argo CD may prune a Namespace (deleting it deletes everything
 * in it, placed by rightplace or not). Sync options the manifest already has are kept. */
static void keep_namespace(cJSON *ns)
{
    cJSON *ann = ensure_object(ensure_object(ns, "metadata"), "annotations");
    const cJSON *cur = cJSON_GetObjectItemCaseSensitive(ann, "argocd.argoproj.io/sync-options");

    set_str(ann, "kustomize.toolkit.fluxcd.io/prune", "disabled");
    if (cJSON_IsString(cur) && cur->valuestring[0] && !strstr(cur->valuestring, "Prune=false")) {
        size_t n = strlen(cur->valuestring) + sizeof(",Prune=false");
        char *v = rc_xmalloc(n);

        snprintf(v, n, "%s,Prune=false", cur->valuestring);
        set_str(ann, "argocd.argoproj.io/sync-options", v);
        free(v);
    } else if (!cJSON_IsString(cur) || !cur->valuestring[0]) {
        set_str(ann, "argocd.argoproj.io/sync-options", "Prune=false");
    }
}

/* Fields the API server fills in: never part of a desired manifest. */
static void strip_server_fields(cJSON *root)
{
    static const char *const meta[] = {
        "uid", "resourceVersion", "generation", "creationTimestamp", "managedFields", "selfLink"};
    cJSON *md = cJSON_GetObjectItemCaseSensitive(root, "metadata");

    for (size_t i = 0; cJSON_IsObject(md) && i < sizeof(meta) / sizeof(meta[0]); i++)
        cJSON_DeleteItemFromObjectCaseSensitive(md, meta[i]);
    cJSON_DeleteItemFromObjectCaseSensitive(root, "status");
}

/* metadata.namespace = ns, right after metadata.name when it is new. */
static void set_namespace(cJSON *root, const char *ns)
{
    cJSON *md = ensure_object(root, "metadata");
    cJSON *cur = cJSON_GetObjectItemCaseSensitive(md, "namespace");
    cJSON *fresh, *item;

    if (cur) {
        if (!cJSON_ReplaceItemInObjectCaseSensitive(md, "namespace", rd_out_str(ns)))
            abort();
        return;
    }
    /* rebuild metadata in order, with namespace after name */
    fresh = oom(cJSON_CreateObject());
    while ((item = md->child) != NULL) {
        char *key = rc_xstrdup(item->string);
        int is_name = !strcmp(key, "name");
        cJSON_DetachItemViaPointer(md, item);
        rd_out_add(fresh, key, item);
        free(key);
        if (is_name)
            rd_out_add_str(fresh, "namespace", ns);
    }
    if (!cJSON_GetObjectItemCaseSensitive(fresh, "namespace"))
        rd_out_add_str(fresh, "namespace", ns);
    if (!cJSON_ReplaceItemInObjectCaseSensitive(root, "metadata", fresh))
        abort();
}

/* spec.<key> = n */
static void set_spec_int(cJSON *root, const char *key, int64_t n)
{
    cJSON *spec = ensure_object(root, "spec");
    cJSON *cur = cJSON_GetObjectItemCaseSensitive(spec, key);
    cJSON *num = oom(cJSON_CreateNumber((double)n));

    if (cur) {
        if (!cJSON_ReplaceItemInObjectCaseSensitive(spec, key, num))
            abort();
        return;
    }
    rd_out_add(spec, key, num);
}

/* A file name part must not walk out of its folder. */
static int path_part_ok(const char *s)
{
    return s && *s && !strchr(s, '/') && strcmp(s, ".") && strcmp(s, "..");
}

/* "clusters/<cluster>/<ns or _cluster>/<kind, lower case>.<name>.yaml", put together by
 * hand: every kept object's path is made again each pass (20,000 at 10,000 units), where
 * a printf costs several times the copies. */
static const char *object_path(const char *cluster, const char *ns, const char *kind,
                               const char *name, struct rc_arena *a)
{
    const char *dir = ns ? ns : "_cluster";
    size_t lc = strlen(cluster), ld = strlen(dir), lk = strlen(kind), ln = strlen(name);
    char *s = rc_arena_alloc(a, 9 + lc + 1 + ld + 1 + lk + 1 + ln + 5 + 1), *p = s;

    memcpy(p, "clusters/", 9);
    p += 9;
    memcpy(p, cluster, lc);
    p += lc;
    *p++ = '/';
    memcpy(p, dir, ld);
    p += ld;
    *p++ = '/';
    for (size_t i = 0; i < lk; i++)
        *p++ = (char)tolower((unsigned char)kind[i]);
    *p++ = '.';
    memcpy(p, name, ln);
    p += ln;
    memcpy(p, ".yaml", 6);
    return s;
}

/* Namespaces every cluster has and nobody may delete: never written as followers. */
static int is_system_namespace(const char *ns)
{
    return !strcmp(ns, "default") || !strcmp(ns, "kube-system") || !strcmp(ns, "kube-public") ||
           !strcmp(ns, "kube-node-lease");
}

static int is_namespace_object(const struct pl_object *o)
{
    return !o->ns && !strcmp(o->kind, "Namespace") && !strcmp(o->api_version, "v1");
}

/* Object o written to cluster: the namespace it needs, or the Namespace it is. */
static void note_namespace(struct nsset *need, struct nsset *have, const struct pl_object *o,
                           const char *cluster)
{
    if (o->ns && !is_system_namespace(o->ns))
        nsset_add(need, cluster, o->ns);
    else if (is_namespace_object(o))
        nsset_add(have, cluster, o->name);
}

#define RD_MAX_TEMPLATES 32

/* Render's own warnings (overrides that could not be applied). */
struct rwarn {
    size_t n, cap;
    const char **v;
};

static void rwarn_add(struct rwarn *w, const char *msg)
{
    w->v = rc_xgrow(w->v, &w->cap, w->n + 1, sizeof(*w->v));
    w->v[w->n++] = msg;
}

/* The spreadConstraints.overrides of `pol` for topology value `tv` that name o, applied to
 * its rendered copy in policy order (pl_engine's list_overrides lists the same). */
static void apply_overrides(cJSON *copy, const struct pl_object *o, const struct pl_policy *pol,
                            const char *tv, const char *cluster, struct rwarn *w,
                            struct rc_arena *a)
{
    for (size_t k = 0; pol && tv && k < pol->noverrides; k++) {
        const struct pl_override *ov = &pol->overrides[k];
        struct rc_err e = RC_ERR_INIT;
        if (strcmp(ov->topology_value, tv) || !pl_override_names(ov, o))
            continue;
        if (rd_override_apply(copy, ov->field_path, ov->value_json, &e) < 0)
            rwarn_add(w,
                      rc_arena_printf(a, "%s:%d: override of '%s' on %s: %s",
                                      ov->file ? ov->file : "?", ov->line, o->key, cluster, e.msg));
    }
}

/* One object file to render: listed in tree order on the calling thread, rendered on any
 * thread (render_object touches nothing shared but read-only input), added to the tree in
 * list order on the calling thread again, so that the tree, the warnings and the error
 * reported are the same whatever the number of threads. */
struct rjob {
    const struct pl_object *o;
    const struct pl_decision *d;
    size_t t;
    const char *unit_label;
    const struct pl_policy *pol;
    const char *tv;
    /* results */
    const char *path, *data;
    size_t len;
    int written; /* 0: a Divide gives this target nothing of the object */
    int failed;  /* the job's error is its worker's err */
    struct rwarn w;
};

/* Render job j's object for target j->t of decision j->d (with the overrides of j->pol for
 * topology value j->tv, both may be NULL). j->written = 0 when a Divide gives that target
 * nothing of it (pl_divide_object). Allocates from a, which only this thread uses. */
static int render_object(struct rjob *j, const struct rd_render_options *opts,
                         struct rc_buf *scratch, struct rc_arena *a, struct rc_err *err)
{
    const struct pl_object *o = j->o;
    const struct pl_decision *d = j->d;
    size_t t = j->t;
    const struct rd_object *ro = o->payload;
    const char *cluster = d->targets[t].cluster;
    cJSON *copy = NULL, *small[RD_MAX_TEMPLATES], **tmpl = small, *comp[RD_POD_COMPONENTS_MAX];
    const char *data = NULL;
    struct pl_share share = {1, o->replicas, o->parallelism, o->completions};
    int divides = pl_decision_divides(d);
    size_t len = 0, nt, nc;
    struct rd_jarena ja;
    int error;

    j->written = 0;
    if (divides) {
        pl_divide_object(&share, o, d->targets, d->ntargets, t);
        if (!share.present)
            return 0;
    }
    if (!rd_object_has_manifest(ro))
        return rc_err_set(err, RC_EINVALID, "object '%s' has no manifest", o->key);
    if (!path_part_ok(o->name) || !path_part_ok(o->kind) || (o->ns && !path_part_ok(o->ns)))
        return rc_err_set(err, RC_EINVALID, "object '%s' has a name unfit for a file name", o->key);
    /* the tree lives until it is emitted: built in an arena, freed at once (rd_jarena.h) */
    rd_jarena_begin(&ja);
    if ((error = rd_object_tree(&copy, ro, err)) < 0) {
        rd_jarena_end(&ja);
        return error;
    }
    strip_server_fields(copy);
    if (o->ns)
        set_namespace(copy, o->ns);
    else /* cluster-scoped: a stray namespace would only confuse apply */
        cJSON_DeleteItemFromObjectCaseSensitive(cJSON_GetObjectItemCaseSensitive(copy, "metadata"),
                                                "namespace");
    set_labels(copy, !opts->pull, j->unit_label, NULL, NULL);
    if (opts->pull && is_namespace_object(o))
        keep_namespace(copy);
    nt = rd_pod_templates(copy, tmpl, RD_MAX_TEMPLATES);
    if (nt > RD_MAX_TEMPLATES) {
        tmpl = rc_xcalloc(nt, sizeof(*tmpl));
        nt = rd_pod_templates(copy, tmpl, nt);
    }
    for (size_t i = 0; i < nt; i++)
        set_labels(tmpl[i], !opts->pull, j->unit_label, opts->luna_key, opts->luna_value);
    if (tmpl != small)
        free(tmpl);
    /* kinds without pod templates whose controller copies a component's labels to its pods */
    nc = rd_pod_components(copy, comp, RD_POD_COMPONENTS_MAX);
    for (size_t i = 0; i < nc && i < RD_POD_COMPONENTS_MAX; i++)
        put_labels(comp[i], "labels", !opts->pull, j->unit_label, opts->luna_key, opts->luna_value);
    if (divides && pl_split_of(o) == PL_SPLIT_REPLICAS) {
        set_spec_int(copy, "replicas", share.replicas);
    } else if (divides && pl_split_of(o) == PL_SPLIT_JOB) {
        set_spec_int(copy, "parallelism", share.parallelism);
        if (share.completions >= 0)
            set_spec_int(copy, "completions", share.completions);
    }
    apply_overrides(copy, o, j->pol, j->tv, cluster, &j->w, a);
    /* emitted into the thread's scratch buffer, grown once, not one buffer per object */
    rc_buf_reset(scratch);
    error = rd_yaml_emit(scratch, copy, err);
    cJSON_Delete(copy);
    rd_jarena_end(&ja);
    if (error < 0)
        return error;
    len = scratch->len;
    data = rc_arena_strndup(a, scratch->ptr, len);
    j->path = object_path(cluster, o->ns, o->kind, o->name, a);
    j->data = data;
    j->len = len;
    j->written = 1;
    return 0;
}

/* Render threads: enough jobs for a second thread to pay, and no more threads than that. */
#define RJOBS_PER_THREAD 256
#define RD_RENDER_THREADS_MAX 4

struct rworker {
    struct rjob *jobs;
    size_t njobs;
    atomic_size_t *next; /* the next job to take, shared */
    atomic_size_t *stop; /* jobs from this index on need not run: one before it failed */
    const struct rd_render_options *opts;
    struct rc_arena own; /* a thread's arena, adopted by the caller's after the join */
    struct rc_arena *a;  /* where this worker allocates */
    struct rc_buf buf;   /* scratch for the YAML text */
    struct rc_err err;   /* the error of this worker's failed job, if any */
    size_t failed_at;    /* that job's index; njobs: none */
};

static void rworker_run(struct rworker *w)
{
    for (;;) {
        size_t i = atomic_fetch_add(w->next, 1);

        if (i >= w->njobs || i >= atomic_load(w->stop))
            break;
        if (render_object(&w->jobs[i], w->opts, &w->buf, w->a, &w->err) < 0) {
            size_t cur = atomic_load(w->stop);

            w->jobs[i].failed = 1;
            w->failed_at = i;
            /* jobs are taken in increasing order: this is the worker's first failure */
            while (i < cur && !atomic_compare_exchange_weak(w->stop, &cur, i))
                ;
            break;
        }
    }
}

static void rworker_share(void *arg, size_t k)
{
    rworker_run(&((struct rworker *)arg)[k]);
}

/* Render every job; on failure err is the error of the first failed job in list order. */
static int render_jobs(struct rjob *jobs, size_t njobs, const struct rd_render_options *opts,
                       struct rc_arena *a, struct rc_err *err)
{
    size_t nthreads = rc_threads_for(opts->threads, njobs, RJOBS_PER_THREAD, RD_RENDER_THREADS_MAX);
    size_t failed = njobs, who = 0;
    atomic_size_t next = 0, stop = njobs;
    struct rworker *w = rc_xcalloc(nthreads, sizeof(*w));

    for (size_t k = 0; k < nthreads; k++) {
        w[k].jobs = jobs;
        w[k].njobs = njobs;
        w[k].next = &next;
        w[k].stop = &stop;
        w[k].opts = opts;
        w[k].a = k ? &w[k].own : a;
        rc_buf_init(&w[k].buf, 0);
        w[k].failed_at = njobs;
    }
    /* workers take jobs until none is left: one whose thread did not start finds none */
    rc_threads_run(rworker_share, w, nthreads);
    for (size_t k = 0; k < nthreads; k++) {
        if (w[k].failed_at < failed) {
            failed = w[k].failed_at;
            who = k;
        }
        if (k)
            rc_arena_adopt(a, &w[k].own);
        rc_buf_release(&w[k].buf);
    }
    if (failed < njobs)
        *err = w[who].err;
    free(w);
    return failed < njobs ? err->code : 0;
}

/* The repo's Namespace objects, sorted by name, for following. */
struct nsobjs {
    size_t n;
    const struct pl_object **v;
};

static int cmp_obj_name(const void *x, const void *y)
{
    const struct pl_object *const *a = x;
    const struct pl_object *const *b = y;
    return strcmp((*a)->name, (*b)->name);
}

static void nsobjs_init(struct nsobjs *s, const struct pl_input *in, struct rc_arena *a)
{
    s->n = 0;
    s->v = rc_arena_calloc(a, in->nobjects + 1, sizeof(*s->v));
    for (size_t i = 0; i < in->nobjects; i++) {
        const struct pl_object *o = &in->objects[i];
        const struct rd_object *ro = o->payload;
        if (is_namespace_object(o) && rd_object_has_manifest(ro))
            s->v[s->n++] = o;
    }
    rc_sort(s->v, s->n, sizeof(*s->v), cmp_obj_name);
}

static const struct pl_object *find_namespace_object(const struct nsobjs *s, const char *ns)
{
    size_t lo = 0, hi = s->n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(s->v[mid]->name, ns);
        if (c == 0)
            return s->v[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* A Namespace file's text depends on the namespace only, not on the cluster: rendered once. */
struct nstext {
    const char *ns;
    const char *data; /* NULL: not rendered yet */
    size_t len;
};

static int cmp_nstext(const void *x, const void *y)
{
    return strcmp(((const struct nstext *)x)->ns, ((const struct nstext *)y)->ns);
}

/* The distinct namespaces of need, sorted, none rendered yet. */
static struct nstext *nstext_init(size_t *n, const struct nsset *need)
{
    struct nstext *v = rc_xcalloc(need->n + 1, sizeof(*v));
    size_t k = 0;

    for (size_t i = 0; i < need->n; i++)
        v[i].ns = need->v[i].ns;
    if (need->n)
        rc_sort(v, need->n, sizeof(*v), cmp_nstext);
    for (size_t i = 0; i < need->n; i++) {
        if (k == 0 || strcmp(v[k - 1].ns, v[i].ns))
            v[k++] = v[i];
    }
    *n = k;
    return v;
}

static int render_namespace(struct files *f, const struct nsobjs *nso, const char *cluster,
                            struct nstext *memo, int pull, struct rc_arena *a, struct rc_err *err)
{
    const char *ns = memo->ns;
    const struct pl_object *o;
    cJSON *root;
    const char *data = NULL;
    size_t len = 0;
    int error;

    if (!path_part_ok(ns))
        return rc_err_set(err, RC_EINVALID, "namespace '%s' is unfit for a file name", ns);
    if (memo->data) {
        files_add(f, object_path(cluster, NULL, "Namespace", ns, a), memo->data, memo->len);
        return 0;
    }
    o = find_namespace_object(nso, ns);
    if (o) {
        if ((error = rd_object_tree(&root, o->payload, err)) < 0)
            return error;
        strip_server_fields(root);
    } else {
        root = oom(cJSON_CreateObject());
        rd_out_add_str(root, "apiVersion", "v1");
        rd_out_add_str(root, "kind", "Namespace");
        rd_out_add_str(rd_out_add(root, "metadata", cJSON_CreateObject()), "name", ns);
    }
    set_labels(root, !pull, NULL, NULL, NULL);
    if (pull)
        keep_namespace(root);
    error = rd_out_emit(&data, &len, root, a, err);
    cJSON_Delete(root);
    if (error < 0)
        return error;
    memo->data = data;
    memo->len = len;
    files_add(f, object_path(cluster, NULL, "Namespace", ns, a), data, len);
    return 0;
}

/* A path the YAML emitter writes as a plain scalar, whatever it holds: a letter, digit or
 * '_' first, then only letters, digits and "._/-" (no indicator, space, colon or '#'), and
 * never a number, boolean or null (a '/' or a ".yaml" rules those out, and paths have both). */
static int plain_first(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

static int plain_path(const char *p)
{
    if (!plain_first(*p))
        return 0;
    for (; *p; p++) {
        if (!plain_first(*p) && *p != '.' && *p != '/' && *p != '-')
            return 0;
    }
    return 1;
}

static int render_kustomization(struct files *f, const char *cluster, const struct files *all,
                                struct rc_arena *a, struct rc_err *err)
{
    const char *prefix = rc_arena_printf(a, "clusters/%s/", cluster);
    size_t plen = strlen(prefix), lo = 0, hi = all->n, end;
    const char *data = NULL;
    size_t len = 0;
    int plain = 1;

    /* all is sorted, so the list is too, and the cluster's files are one run of it: found by
     * bisection, not by comparing every file of the fleet with every cluster's prefix */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(all->v[mid].path, prefix) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (end = lo; end < all->n && !strncmp(all->v[end].path, prefix, plen); end++)
        plain = plain && plain_path(all->v[end].path + plen);
    if (plain) {
        /* what the emitter writes for such names, without building the document */
        struct rc_buf b = RC_BUF_INIT;
        static const char head[] = "apiVersion: kustomize.config.k8s.io/v1beta1\n"
                                   "kind: Kustomization\n"
                                   "resources:";
        rc_buf_add(&b, head, sizeof(head) - 1, NULL);
        if (lo == end)
            rc_buf_add(&b, " []", 3, NULL);
        for (size_t i = lo; i < end; i++) {
            rc_buf_add(&b, "\n- ", 3, NULL);
            rc_buf_add(&b, all->v[i].path + plen, strlen(all->v[i].path + plen), NULL);
        }
        rc_buf_add(&b, "\n", 1, NULL);
        data = rc_arena_take(a, rc_buf_detach(&b, &len), len + 1);
    } else {
        cJSON *root = oom(cJSON_CreateObject()), *list;
        int error;
        rd_out_add_str(root, "apiVersion", "kustomize.config.k8s.io/v1beta1");
        rd_out_add_str(root, "kind", "Kustomization");
        list = rd_out_add(root, "resources", cJSON_CreateArray());
        for (size_t i = lo; i < end; i++)
            rd_out_push(list, rd_out_str(all->v[i].path + plen));
        error = rd_out_emit(&data, &len, root, a, err);
        cJSON_Delete(root);
        if (error < 0)
            return error;
    }
    files_add(f, rc_arena_printf(a, "%skustomization.yaml", prefix), data, len);
    return 0;
}

static int cmp_str(const void *x, const void *y)
{
    return strcmp(*(const char *const *)x, *(const char *const *)y);
}

/* The policy named `name` (NULL: none); policies are few, a scan is fine. */
static const struct pl_policy *find_policy(const struct pl_input *in, const char *name)
{
    for (size_t i = 0; name && i < in->npolicies; i++) {
        if (!strcmp(in->policies[i].name, name))
            return &in->policies[i];
    }
    return NULL;
}

/* A target's value of the policy's topologyKey: its domain (Divide), else the cluster's label
 * (kubernetes.io/metadata.name is the cluster's name even when its labels lack it). */
static const char *topology_value(const struct pl_input *in, const struct pl_policy *pol,
                                  const struct pl_target *t)
{
    const char *tk = pol->topology_key ? pol->topology_key : PL_LABEL_CLUSTER_NAME;

    if (t->domain)
        return t->domain;
    for (size_t i = 0; i < in->nclusters; i++) {
        if (!strcmp(in->clusters[i].name, t->cluster)) {
            const char *v = pl_labels_get(&in->clusters[i].labels, tk);
            if (v)
                return v;
            break;
        }
    }
    return !strcmp(tk, PL_LABEL_CLUSTER_NAME) ? t->cluster : NULL;
}

/* Per object of d: does an override of pol name it (on any topology value)? */
static const unsigned char *overridden_objects(const struct pl_policy *pol,
                                               const struct pl_decision *d, struct rc_arena *a)
{
    unsigned char *named = rc_arena_calloc(a, d->nobjects + 1, 1);

    for (size_t k = 0; k < d->nobjects; k++) {
        for (size_t i = 0; d->objects[k] && i < pol->noverrides && !named[k]; i++)
            named[k] = (unsigned char)pl_override_names(&pol->overrides[i], d->objects[k]);
    }
    return named;
}

int rd_render_tree(struct rd_tree *out, const struct pl_result *res, const struct pl_input *in,
                   const char *source_commit, const struct rd_render_options *opts,
                   struct rc_arena *a, struct rc_err *err)
{
    static const struct rd_render_options defaults = RD_RENDER_OPTIONS_INIT;
    struct files f = {0, 0, NULL}, kust = {0, 0, NULL};
    struct nsset need = {0, 0, NULL, 0, NULL}, have = {0, 0, NULL, 0, NULL};
    struct rwarn rw = {0, 0, NULL};
    struct rjob *jobs = NULL;
    size_t njobs = 0, jcap = 0, nnstext = 0;
    struct nstext *nstext = NULL;
    struct nsobjs nso;
    const struct pl_decision **dec;
    const char **clusters = NULL;
    size_t ndec, nclusters = 0, ccap = 0;
    struct rc_buf b = RC_BUF_INIT;
    int error = 0;

    if (!opts)
        opts = &defaults;
    out->nrendered = 0;
    dec = rd_out_sorted_decisions(res, &ndec, a);

    /* placed objects: kept files here, the others listed as jobs */
    for (size_t i = 0; i < ndec; i++) {
        const struct pl_decision *d = dec[i];
        const unsigned char *reuse =
            opts->reuse_objects ? opts->reuse_objects[d - res->decisions] : NULL;
        int divides = pl_decision_divides(d);
        const struct pl_policy *pol;
        const unsigned char *named; /* the objects overrides name, when any are kept */
        char unit_label[17];
        const char *label;

        if (d->state != PL_STATE_PLACED)
            continue;
        pl_unit_label(d->unit, unit_label);
        label = rc_arena_strdup(a, unit_label);
        pol = find_policy(in, d->policy);
        named = reuse && pol && pol->noverrides ? overridden_objects(pol, d, a) : NULL;
        for (size_t t = 0; t < d->ntargets; t++) {
            const char *cluster = d->targets[t].cluster;
            if (!path_part_ok(cluster)) {
                error =
                    rc_err_set(err, RC_EINVALID, "cluster name '%s' is unfit for a path", cluster);
                goto done;
            }
            const char *tv =
                pol && pol->noverrides ? topology_value(in, pol, &d->targets[t]) : NULL;
            for (size_t k = 0; k < d->nobjects; k++) {
                const struct pl_object *o = d->objects[k];
                struct rjob *j;
                /* an object an override names is always rendered: what the override makes of
                 * it, and whether it warns, depends on the target's topology value too */
                if (reuse && reuse[k] && !(named && named[k]) && path_part_ok(o->name) &&
                    path_part_ok(o->kind) && (!o->ns || path_part_ok(o->ns))) {
                    struct pl_share share;
                    if (divides) { /* as render_object: a target without a share has no file */
                        pl_divide_object(&share, o, d->targets, d->ntargets, t);
                        if (!share.present)
                            continue;
                    }
                    files_keep(&f, object_path(cluster, o->ns, o->kind, o->name, a));
                    note_namespace(&need, &have, o, cluster);
                    continue;
                }
                jobs = rc_xgrow(jobs, &jcap, njobs + 1, sizeof(*jobs));
                j = &jobs[njobs++];
                memset(j, 0, sizeof(*j));
                j->o = o;
                j->d = d;
                j->t = t;
                j->unit_label = label;
                j->pol = pol;
                j->tv = tv;
            }
        }
    }
    error = render_jobs(jobs, njobs, opts, a, err);
    for (size_t i = 0; i < njobs && error == 0; i++) {
        const struct rjob *j = &jobs[i];

        for (size_t k = 0; k < j->w.n; k++)
            rwarn_add(&rw, j->w.v[k]);
        if (!j->written)
            continue;
        files_add(&f, j->path, j->data, j->len);
        out->nrendered++;
        note_namespace(&need, &have, j->o, j->d->targets[j->t].cluster);
    }
    if (error < 0)
        goto done;

    /* namespaces follow their objects, once per cluster */
    nsobjs_init(&nso, in, a);
    if (need.n)
        rc_sort(need.v, need.n, sizeof(*need.v), cmp_nsneed);
    if (have.n)
        rc_sort(have.v, have.n, sizeof(*have.v), cmp_nsneed);
    nstext = nstext_init(&nnstext, &need);
    for (size_t i = 0; i < need.n; i++) {
        struct nstext key = {need.v[i].ns, NULL, 0}, *memo;

        if (i > 0 && !cmp_nsneed(&need.v[i - 1], &need.v[i]))
            continue;
        if (have.n && bsearch(&need.v[i], have.v, have.n, sizeof(*have.v), cmp_nsneed))
            continue;
        memo = bsearch(&key, nstext, nnstext, sizeof(*nstext), cmp_nstext);
        error = render_namespace(&f, &nso, need.v[i].cluster, memo, opts->pull, a, err);
        if (error < 0)
            goto done;
    }

    if (f.n)
        rc_sort(f.v, f.n, sizeof(*f.v), cmp_file);
    for (size_t i = 1; i < f.n; i++) {
        if (!strcmp(f.v[i - 1].path, f.v[i].path)) {
            error =
                rc_err_set(err, RC_EINVALID, "two objects would be written to '%s'", f.v[i].path);
            goto done;
        }
    }

    /* a kustomization for every cluster of the fleet and every target */
    for (size_t i = 0; i < in->nclusters; i++) {
        clusters = rc_xgrow(clusters, &ccap, nclusters + 1, sizeof(*clusters));
        clusters[nclusters++] = in->clusters[i].name;
    }
    for (size_t i = 0; i < ndec; i++) {
        for (size_t t = 0; dec[i]->state == PL_STATE_PLACED && t < dec[i]->ntargets; t++) {
            clusters = rc_xgrow(clusters, &ccap, nclusters + 1, sizeof(*clusters));
            clusters[nclusters++] = dec[i]->targets[t].cluster;
        }
    }
    if (nclusters)
        rc_sort(clusters, nclusters, sizeof(*clusters), cmp_str);
    for (size_t i = 0; i < nclusters; i++) {
        if (i > 0 && !strcmp(clusters[i - 1], clusters[i]))
            continue;
        if (!path_part_ok(clusters[i])) {
            error =
                rc_err_set(err, RC_EINVALID, "cluster name '%s' is unfit for a path", clusters[i]);
            goto done;
        }
        error = render_kustomization(&kust, clusters[i], &f, a, err);
        if (error < 0)
            goto done;
    }
    for (size_t i = 0; i < kust.n; i++)
        files_add(&f, kust.v[i].path, kust.v[i].data, kust.v[i].len);

    /* the record and the capacity snapshot */
    {
        struct rd_render_options ro = *opts;
        struct rd_record_files rf;
        int same = 0;
        if (rw.n) { /* render's warnings join the record's */
            const char **all = rc_arena_calloc(a, opts->nwarnings + rw.n + 1, sizeof(*all));
            for (size_t i = 0; i < opts->nwarnings; i++)
                all[i] = opts->warnings[i];
            for (size_t i = 0; i < rw.n; i++)
                all[opts->nwarnings + i] = rw.v[i];
            ro.nwarnings = opts->nwarnings + rw.n;
            ro.warnings = all;
        }
        error = rd_record_emit_files(&b, &rf, opts->record_base_is_memo, &same, res, &ro, a, err);
        if (error < 0)
            goto done;
        /* a record in shards: those that did not change are the base's (the memo's, whose
         * record the base has); the header names each by its blob id */
        for (size_t i = 0; i < rf.nshards; i++) { /* rf's shards live in a */
            const struct rd_record_shard *sh = &rf.shards[i];
            if (sh->text)
                files_add(&f, sh->path, sh->text, sh->len);
            else
                files_keep(&f, sh->path);
            f.v[f.n - 1].id = sh->id;
        }
        if (same) {
            files_keep(&f, "placements.yaml"); /* the base's, byte for byte */
        } else {
            /* the record is the largest file (10 MB at 10,000 units): its buffer, cut to
             * size, becomes the file instead of being copied */
            size_t len;
            char *text = rc_buf_detach(&b, &len);
            text = rc_arena_take(a, rc_xrealloc(text, len + 1), len + 1);
            files_add(&f, "placements.yaml", text, len);
        }
    }
    error = rd_capacity_emit(&b, in->clusters, in->nclusters, in->res, res->usage, res->nusage,
                             opts->capacity_source ? source_commit : NULL, err);
    if (error < 0)
        goto done;
    files_add(&f, ".rightplace/capacity.yaml", rc_arena_strndup(a, b.ptr, b.len), b.len);
    /* the source commit has a file of its own: the record's bytes depend on the decisions
     * alone, so a pass that changes none keeps the record's blob (docs/formats.md) */
    {
        const char *src = rc_arena_printf(a, "%s\n", source_commit ? source_commit : "");
        files_add(&f, RD_SOURCE_FILE, src, strlen(src));
    }
    if (opts->nkept) {
        rc_buf_reset(&b);
        rd_kept_emit(&b, opts->kept, opts->nkept);
        files_add(&f, RD_KEPT_FILE, rc_arena_strndup(a, b.ptr, b.len), b.len);
    }

    rc_sort(f.v, f.n, sizeof(*f.v), cmp_file);
    out->nfiles = f.n;
    out->files = rc_arena_calloc(a, f.n + 1, sizeof(*out->files));
    if (f.n)
        memcpy(out->files, f.v, f.n * sizeof(*f.v));
    out->nwarnings = rw.n;
    out->warnings = rc_arena_calloc(a, rw.n + 1, sizeof(*out->warnings));
    if (rw.n)
        memcpy(out->warnings, rw.v, rw.n * sizeof(*rw.v));
done:
    for (size_t i = 0; i < njobs; i++)
        free(jobs[i].w.v);
    free(jobs);
    free(nstext);
    free(rw.v);
    rc_buf_release(&b);
    free(f.v);
    free(kust.v);
    free(need.v);
    free(need.slot);
    free(have.v);
    free(have.slot);
    free(clusters);
    return error;
}

/* ==== .rightplace/kept ==== */

static int kept_escaped(unsigned char c)
{
    return c < 0x20 || c == 0x7f || c == '%';
}

void rd_kept_emit(struct rc_buf *out, const struct rd_kept *kept, size_t n)
{
    static const char hex[] = "0123456789ABCDEF";

    rc_buf_puts(out,
                "# The source files that were broken when this tree was made, and the version\n"
                "# of each it was made from (-: none). docs/formats.md\n",
                NULL);
    for (size_t i = 0; i < n; i++) {
        const unsigned char *p = (const unsigned char *)kept[i].path;
        rc_buf_puts(out, kept[i].id[0] ? kept[i].id : "-", NULL);
        rc_buf_putc(out, ' ', NULL);
        for (; *p; p++) {
            if (kept_escaped(*p)) {
                char e[3] = {'%', hex[*p >> 4], hex[*p & 15]};
                rc_buf_add(out, e, 3, NULL);
            } else {
                rc_buf_putc(out, (char)*p, NULL);
            }
        }
        rc_buf_putc(out, '\n', NULL);
    }
}

static int hex_value(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

int rd_kept_parse(struct rd_kept **out, size_t *n, const char *text, size_t len, struct rc_arena *a,
                  struct rc_err *err)
{
    size_t lines = 0, k = 0, line = 0;
    struct rd_kept *v;

    for (size_t i = 0; i < len; i++)
        lines += text[i] == '\n';
    v = rc_arena_calloc(a, lines + 1, sizeof(*v));
    for (size_t i = 0; i < len;) {
        const char *s = text + i, *nl = memchr(s, '\n', len - i);
        size_t m = nl ? (size_t)(nl - s) : len - i, idlen;
        char *path, *w;

        i += m + 1;
        line++;
        if (!nl)
            return rc_err_set(err, RC_EINVALID, "%s:%zu: the last line has no newline",
                              RD_KEPT_FILE, line);
        if (m && s[0] == '#')
            continue;
        idlen = s[0] == '-' ? 1 : 40;
        if (m < idlen + 2 || s[idlen] != ' ' || (idlen == 40 && !rc_is_object_id(s, 40)))
            return rc_err_set(err, RC_EINVALID, "%s:%zu: not '<blob id or -> <path>'", RD_KEPT_FILE,
                              line);
        if (idlen == 40)
            memcpy(v[k].id, s, 40);
        w = path = rc_arena_alloc(a, m - idlen);
        for (size_t j = idlen + 1; j < m; j++) {
            unsigned char c = (unsigned char)s[j];
            if (c == '%') {
                int hi = j + 2 < m ? hex_value(s[j + 1]) : -1;
                int lo = hi >= 0 ? hex_value(s[j + 2]) : -1;
                if (lo < 0 || !kept_escaped((unsigned char)(hi << 4 | lo)) || !(hi | lo))
                    return rc_err_set(err, RC_EINVALID, "%s:%zu: a bad escape in the path",
                                      RD_KEPT_FILE, line);
                *w++ = (char)(hi << 4 | lo);
                j += 2;
                continue;
            }
            if (kept_escaped(c))
                return rc_err_set(err, RC_EINVALID, "%s:%zu: a control byte in the path",
                                  RD_KEPT_FILE, line);
            *w++ = (char)c;
        }
        *w = '\0';
        if (k && strcmp(v[k - 1].path, path) >= 0)
            return rc_err_set(err, RC_EINVALID, "%s:%zu: '%s' is out of order or listed twice",
                              RD_KEPT_FILE, line, path);
        v[k++].path = path;
    }
    *out = v;
    *n = k;
    return RC_OK;
}

static int cmp_kept_path(const void *key, const void *x)
{
    return strcmp(key, ((const struct rd_kept *)x)->path);
}

const struct rd_kept *rd_kept_find(const struct rd_kept *kept, size_t n, const char *path)
{
    return n ? bsearch(path, kept, n, sizeof(*kept), cmp_kept_path) : NULL;
}
