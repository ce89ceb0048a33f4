/*
 * rd_source.c - the Load step over a whole source tree (see rd_source.h).
 *
 * Files are processed in path order. Each file's results are staged and either committed
 * whole or dropped whole, so that the outcome for one file depends only on its content and
 * on the files before it (for duplicates): the same tree always loads to the same inputs.
 */
#include "rd_source.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pl_basics.h"
#include "rc_arena.h"
#include "rc_hash.h"
#include "rc_mem.h"
#include "rd_demand.h"
#include "rd_object.h"
#include "rd_policy.h"
#include "rd_yaml.h"

/* ==== A set of object keys -> where they were first seen ==== */

struct keyent {
    const char *key;
    const char *path;
    int line;
};

struct keyset {
    size_t n, cap; /* cap: power of two, 0 when empty */
    struct keyent *v;
};

static struct keyent *keyset_find(const struct keyset *s, const char *key)
{
    size_t i;

    if (!s->cap)
        return NULL;
    for (i = rc_fnv1a_str(RC_FNV_INIT, key) & (s->cap - 1); s->v[i].key;
         i = (i + 1) & (s->cap - 1)) {
        if (!strcmp(s->v[i].key, key))
            return &s->v[i];
    }
    return NULL;
}

static void keyset_add(struct keyset *s, const char *key, const char *path, int line)
{
    size_t i;

    if (2 * (s->n + 1) > s->cap) {
        struct keyset bigger = {0, s->cap ? 2 * s->cap : 64, NULL};
        bigger.v = rc_xcalloc(bigger.cap, sizeof(*bigger.v));
        for (i = 0; i < s->cap; i++) {
            if (s->v[i].key)
                keyset_add(&bigger, s->v[i].key, s->v[i].path, s->v[i].line);
        }
        free(s->v);
        *s = bigger;
    }
    for (i = rc_fnv1a_str(RC_FNV_INIT, key) & (s->cap - 1); s->v[i].key; i = (i + 1) & (s->cap - 1))
        ;
    s->v[i].key = key;
    s->v[i].path = path;
    s->v[i].line = line;
    s->n++;
}

/* ==== Growable arrays (malloc'd while loading, copied into the arena at the end) ==== */

#define VEC(T)                                                                                     \
    struct {                                                                                       \
        size_t n, cap;                                                                             \
        T *v;                                                                                      \
    }

#define VEC_PUSH(vec)                                                                              \
    ((vec).v = rc_xgrow((vec).v, &(vec).cap, (vec).n + 1, sizeof(*(vec).v)),                       \
     memset(&(vec).v[(vec).n], 0, sizeof(*(vec).v)), &(vec).v[(vec).n++])

struct nsent {
    const char *name;
    const struct pl_labels *labels; /* NULL: no Namespace object */
};

struct cluster_ent {
    struct pl_cluster c;
    struct rd_cluster_conn conn;
    const char *file;
};

/* A later file that defined an object an accepted file already had. */
struct collision {
    const char *first; /* the accepted file */
    const char *later; /* the file refused for it */
    const char *key;
};

struct stage {
    VEC(struct pl_object) objects;
    VEC(struct pl_policy) policies;
    VEC(struct cluster_ent) clusters;
    VEC(const char *) warnings;
    VEC(struct keyent) keys;
};

struct loader {
    struct rc_arena *a;
    struct rd_source *out;
    struct keyset seen;
    struct stage all;  /* accepted */
    struct stage file; /* the file being read */
    VEC(struct rd_docs *) docs;
    VEC(struct rd_file_error) errors;
    VEC(struct collision) collisions;
};

static void stage_reset(struct stage *s)
{
    s->objects.n = s->policies.n = s->clusters.n = s->warnings.n = s->keys.n = 0;
}

static void stage_free(struct stage *s)
{
    free(s->objects.v);
    free(s->policies.v);
    free(s->clusters.v);
    free(s->warnings.v);
    free(s->keys.v);
}

static void on_warn(void *payload, const char *file, struct rd_pos pos, const char *msg)
{
    struct loader *l = payload;
    const char *w = pos.line > 0
                        ? rc_arena_printf(l->a, "%s:%d:%d: %s", file, pos.line, pos.col, msg)
                        : rc_arena_printf(l->a, "%s: %s", file, msg);
    *VEC_PUSH(l->file.warnings) = w;
}

/* Claim `key` for the file being read; a duplicate makes the file broken. */
static int claim(struct loader *l, const char *key, const struct rd_object *o,
                 const struct rd_docs *docs, struct rc_err *err)
{
    const struct keyent *prev = keyset_find(&l->seen, key);

    if (prev) {
        struct collision *c = VEC_PUSH(l->collisions);
        c->first = prev->path;
        c->later = o->file;
        c->key = key;
    }
    if (prev)
        return rd_err_at(err, RC_EINVALID, docs, o->root,
                         "duplicate object '%s' (already in '%s' at line %d)", key, prev->path,
                         prev->line);
    for (size_t i = 0; i < l->file.keys.n; i++) {
        if (!strcmp(l->file.keys.v[i].key, key))
            return rd_err_at(err, RC_EINVALID, docs, o->root,
                             "duplicate object '%s' (already at line %d)", key,
                             l->file.keys.v[i].line);
    }
    {
        struct keyent *k = VEC_PUSH(l->file.keys);
        k->key = key;
        k->path = o->file;
        k->line = o->pos.line;
    }
    return RC_OK;
}

static int is_core(const struct rd_object *o, const char *kind)
{
    return o->group && !*o->group && !strcmp(o->kind, kind);
}

static int load_doc(struct loader *l, struct rd_docs *docs, size_t i, const char *path,
                    struct rc_err *err)
{
    cJSON *root = rd_docs_get(docs, i);
    struct rd_object *o = rc_arena_calloc(l->a, 1, sizeof(*o));
    int rc;

    if ((rc = rd_object_init(o, root, path, rd_docs_pos(docs, root), docs, l->a, err)) < 0)
        return rc;
    if (is_core(o, "List"))
        return rd_err_at(err, RC_EINVALID, docs, root,
                         "kind 'List' is not supported: write one object per document");
    if ((!strcmp(o->group, "rightplace.dev") || !strcmp(o->group, "policy.elotl.co")) &&
        !rd_is_cluster(o) && !rd_is_policy(o))
        /* a typo here would silently turn a cluster or a policy into a workload */
        return rd_err_at(err, RC_EINVALID, docs, root, "unknown kind '%s' in %s (expected %s)",
                         o->kind, o->api_version,
                         !strcmp(o->group, "rightplace.dev") ? "Cluster or SchedulePolicy"
                                                             : "SchedulePolicy");
    if (rd_is_cluster(o)) {
        struct cluster_ent *c = VEC_PUSH(l->file.clusters);
        c->file = path;
        if ((rc = rd_cluster_parse(&c->c, &c->conn, o, docs, &l->out->res, l->a, err)) < 0)
            return rc;
        return claim(l, rc_arena_printf(l->a, "Cluster/%s", o->name), o, docs, err);
    }
    if (rd_is_policy(o)) {
        struct pl_policy *p = VEC_PUSH(l->file.policies);
        size_t nw = 0;
        const char **w = NULL;
        if ((rc = rd_policy_parse_ex(p, o, docs, &nw, &w, l->a, err)) < 0)
            return rc;
        for (size_t k = 0; k < nw; k++)
            *VEC_PUSH(l->file.warnings) = w[k];
        return claim(l, rc_arena_printf(l->a, "SchedulePolicy/%s", o->name), o, docs, err);
    }
    {
        struct pl_object *obj = VEC_PUSH(l->file.objects);
        obj->key = o->key;
        obj->api_version = o->api_version;
        obj->kind = o->kind;
        obj->ns = o->ns;
        obj->name = o->name;
        obj->labels = o->labels;
        obj->file = o->file;
        obj->line = o->pos.line;
        obj->payload = o;
        if ((rc = rd_demand_extract(obj, root, docs, &l->out->res, l->a, err)) < 0)
            return rc;
        return claim(l, o->key, o, docs, err);
    }
}

#define APPEND(dst, src)                                                                           \
    do {                                                                                           \
        for (size_t k_ = 0; k_ < (src).n; k_++)                                                    \
            *VEC_PUSH(dst) = (src).v[k_];                                                          \
    } while (0)

static void load_file(struct loader *l, const struct rd_file *f, const char *refused)
{
    const struct rd_yaml_limits limits = RD_YAML_LIMITS_INIT;
    const struct rd_diag diag = {on_warn, l};
    struct rc_err ferr = RC_ERR_INIT;
    struct rd_docs *docs = NULL;
    const char *path = rc_arena_strdup(l->a, f->path);
    int rc;

    stage_reset(&l->file);
    if (refused) {
        struct rd_file_error *e = VEC_PUSH(l->errors);
        e->path = path;
        e->msg = rc_arena_printf(l->a, "%s: %s", path, refused);
        return;
    }
    l->out->nparsed++;
    rc = rd_yaml_load(&docs, path, f->data ? f->data : "", f->len, &limits, &diag, &ferr);
    for (size_t i = 0; rc >= 0 && i < rd_docs_count(docs); i++)
        rc = load_doc(l, docs, i, path, &ferr);
    if (rc < 0) {
        struct rd_file_error *e = VEC_PUSH(l->errors);
        e->path = path;
        e->msg = rc_arena_strdup(l->a, ferr.msg[0] ? ferr.msg : "unreadable file");
        rd_docs_free(docs);
        return;
    }
    APPEND(l->all.objects, l->file.objects);
    APPEND(l->all.policies, l->file.policies);
    APPEND(l->all.clusters, l->file.clusters);
    APPEND(l->all.warnings, l->file.warnings);
    for (size_t i = 0; i < l->file.keys.n; i++)
        keyset_add(&l->seen, l->file.keys.v[i].key, l->file.keys.v[i].path, l->file.keys.v[i].line);
    *VEC_PUSH(l->docs) = docs;
}

/* ==== Duplicates break every file that defines the object ==== */

static int is_broken(const struct loader *l, const char *path)
{
    for (size_t i = 0; i < l->errors.n; i++) {
        if (!strcmp(l->errors.v[i].path, path))
            return 1;
    }
    return 0;
}

static int cmp_error(const void *x, const void *y)
{
    return strcmp(((const struct rd_file_error *)x)->path, ((const struct rd_file_error *)y)->path);
}

/*
 * Files are read in path order, so the later of two files defining one object is refused
 * first. Which of them is right cannot be told from the tree alone (a new file sorting first
 * would otherwise take over an object placed long ago), so the earlier file is refused too,
 * and the caller keeps both files' objects as they were.
 */
static void refuse_both_sides(struct loader *l)
{
    size_t w;

    for (size_t c = 0; c < l->collisions.n; c++) {
        const struct collision *col = &l->collisions.v[c];
        struct rd_file_error *e;
        if (is_broken(l, col->first))
            continue;
        e = VEC_PUSH(l->errors);
        e->path = col->first;
        e->msg = rc_arena_printf(l->a, "%s: duplicate object '%s' (also in '%s')", col->first,
                                 col->key, col->later);
    }
    if (!l->collisions.n)
        return;
    qsort(l->errors.v, l->errors.n, sizeof(*l->errors.v), cmp_error);
    w = 0;
    for (size_t r = 0; r < l->all.objects.n; r++) {
        if (!is_broken(l, l->all.objects.v[r].file))
            l->all.objects.v[w++] = l->all.objects.v[r];
    }
    l->all.objects.n = w;
    w = 0;
    for (size_t r = 0; r < l->all.policies.n; r++) {
        if (!is_broken(l, l->all.policies.v[r].file))
            l->all.policies.v[w++] = l->all.policies.v[r];
    }
    l->all.policies.n = w;
    w = 0;
    for (size_t r = 0; r < l->all.clusters.n; r++) {
        if (!is_broken(l, l->all.clusters.v[r].file))
            l->all.clusters.v[w++] = l->all.clusters.v[r];
    }
    l->all.clusters.n = w;
    w = 0;
    for (size_t r = 0; r < l->all.warnings.n; r++) {
        const char *warn = l->all.warnings.v[r];
        int drop = 0;
        for (size_t i = 0; i < l->errors.n && !drop; i++) {
            size_t n = strlen(l->errors.v[i].path);
            drop = !strncmp(warn, l->errors.v[i].path, n) && warn[n] == ':';
        }
        if (!drop)
            l->all.warnings.v[w++] = warn;
    }
    l->all.warnings.n = w;
}

/* ==== Sorting and namespaces ==== */

static int cmp_file(const void *x, const void *y)
{
    return strcmp((*(const struct rd_file *const *)x)->path,
                  (*(const struct rd_file *const *)y)->path);
}

static int cmp_object(const void *x, const void *y)
{
    return strcmp(((const struct pl_object *)x)->key, ((const struct pl_object *)y)->key);
}

static int cmp_policy(const void *x, const void *y)
{
    return strcmp(((const struct pl_policy *)x)->name, ((const struct pl_policy *)y)->name);
}

static int cmp_cluster(const void *x, const void *y)
{
    return strcmp(((const struct cluster_ent *)x)->c.name, ((const struct cluster_ent *)y)->c.name);
}

static int cmp_ns(const void *x, const void *y)
{
    const struct nsent *a = x, *b = y;
    int c = strcmp(a->name, b->name);
    /* entries with a Namespace object first, so that the dedup below keeps them */
    return c ? c : (a->labels ? 0 : 1) - (b->labels ? 0 : 1);
}

static void namespaces(struct loader *l)
{
    VEC(struct nsent) ns = {0, 0, NULL};
    struct rd_source *out = l->out;

    for (size_t i = 0; i < l->all.objects.n; i++) {
        const struct pl_object *o = &l->all.objects.v[i];
        const struct rd_object *ro = o->payload;
        if (o->ns) {
            struct nsent *e = VEC_PUSH(ns);
            e->name = o->ns;
        }
        if (!o->ns && is_core(ro, "Namespace")) {
            struct nsent *e = VEC_PUSH(ns);
            e->name = o->name;
            e->labels = &o->labels;
        }
    }
    if (ns.n)
        qsort(ns.v, ns.n, sizeof(*ns.v), cmp_ns);
    out->namespaces = rc_arena_calloc(l->a, ns.n + 1, sizeof(*out->namespaces));
    for (size_t i = 0; i < ns.n; i++) {
        struct pl_namespace *n;
        if (i && !strcmp(ns.v[i].name, ns.v[i - 1].name))
            continue;
        n = &out->namespaces[out->nnamespaces++];
        n->name = ns.v[i].name;
        if (ns.v[i].labels) {
            for (size_t k = 0; k < ns.v[i].labels->n; k++)
                pl_labels_set(&n->labels, l->a, ns.v[i].labels->v[k].key,
                              ns.v[i].labels->v[k].value);
        }
        pl_labels_set(&n->labels, l->a, PL_LABEL_CLUSTER_NAME, n->name);
    }
    free(ns.v);
}

#define TO_ARENA(dst, vec)                                                                         \
    do {                                                                                           \
        (dst) = rc_arena_calloc(l.a, (vec).n + 1, sizeof(*(vec).v));                               \
        if ((vec).n)                                                                               \
            memcpy((dst), (vec).v, (vec).n * sizeof(*(vec).v));                                    \
    } while (0)

int rd_source_load(struct rd_source *out, const struct rd_file *files, size_t nfiles,
                   struct rc_arena *a, struct rc_err *err)
{
    return rd_source_load_ex(out, files, NULL, nfiles, a, err);
}

int rd_source_load_ex(struct rd_source *out, const struct rd_file *files,
                      const char *const *refused, size_t nfiles, struct rc_arena *a,
                      struct rc_err *err)
{
    struct loader l;
    const struct rd_file **order = NULL;
    int rc = RC_OK;

    memset(out, 0, sizeof(*out));
    pl_resnames_init(&out->res);
    if (nfiles && !files)
        return rc_err_set(err, RC_EINVALID, "no files given");
    for (size_t i = 0; i < nfiles; i++) {
        if (!files[i].path || (files[i].len && !files[i].data && !(refused && refused[i])))
            return rc_err_set(err, RC_EINVALID, "file %zu has no path or no data", i);
    }
    memset(&l, 0, sizeof(l));
    l.a = a;
    l.out = out;
    order = rc_xcalloc(nfiles + 1, sizeof(*order));
    for (size_t i = 0; i < nfiles; i++)
        order[i] = &files[i];
    qsort(order, nfiles, sizeof(*order), cmp_file);
    for (size_t i = 1; i < nfiles; i++) {
        if (!strcmp(order[i - 1]->path, order[i]->path)) {
            rc = rc_err_set(err, RC_EINVALID, "file '%s' given twice", order[i]->path);
            goto done;
        }
    }
    for (size_t i = 0; i < nfiles; i++)
        load_file(&l, order[i], refused ? refused[order[i] - files] : NULL);
    refuse_both_sides(&l);

    if (l.all.objects.n)
        qsort(l.all.objects.v, l.all.objects.n, sizeof(*l.all.objects.v), cmp_object);
    if (l.all.policies.n)
        qsort(l.all.policies.v, l.all.policies.n, sizeof(*l.all.policies.v), cmp_policy);
    if (l.all.clusters.n)
        qsort(l.all.clusters.v, l.all.clusters.n, sizeof(*l.all.clusters.v), cmp_cluster);
    out->nobjects = l.all.objects.n;
    TO_ARENA(out->objects, l.all.objects);
    out->npolicies = l.all.policies.n;
    TO_ARENA(out->policies, l.all.policies);
    out->nclusters = l.all.clusters.n;
    out->clusters = rc_arena_calloc(a, l.all.clusters.n + 1, sizeof(*out->clusters));
    out->conns = rc_arena_calloc(a, l.all.clusters.n + 1, sizeof(*out->conns));
    for (size_t i = 0; i < l.all.clusters.n; i++) {
        out->clusters[i] = l.all.clusters.v[i].c;
        out->conns[i] = l.all.clusters.v[i].conn;
    }
    out->nwarnings = l.all.warnings.n;
    TO_ARENA(out->warnings, l.all.warnings);
    out->nerrors = l.errors.n; /* already in path order */
    TO_ARENA(out->errors, l.errors);
    namespaces(&l);
    out->ndocs = l.docs.n;
    out->docs = l.docs.v; /* malloc'd: rd_source_release frees it */
    l.docs.v = NULL;

done:
    free(l.docs.v);
    free(l.errors.v);
    free(l.collisions.v);
    free(l.seen.v);
    stage_free(&l.all);
    stage_free(&l.file);
    free(order);
    return rc;
}

void rd_source_release(struct rd_source *src)
{
    if (!src)
        return;
    for (size_t i = 0; i < src->ndocs; i++)
        rd_docs_free(src->docs[i]);
    free(src->docs);
    src->docs = NULL;
    src->ndocs = 0;
}
