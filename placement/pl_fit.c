/*
 * pl_fit.c - per-node gang fit: first-fit-decreasing of every pod of a unit onto the free
 * capacity of a cluster's schedulable nodes, then onto nodes its autoscaler can add.
 *
 * Cost model (10,000 units x 100 clusters x 100 nodes must take well under a second):
 *   - pod shapes (role, requests, node selector, tolerations, affinity) are interned once; a
 *     unit's demand is a signature: a sorted list of (shape, count);
 *   - which nodes a shape may use is computed once per (shape, cluster), evaluating selectors
 *     and taints once per node class (identical labels + taints), never per pod;
 *   - packing places `count` identical pods per node visit (a division per resource), not one
 *     pod at a time, and changes are undone from a log instead of copying node tables;
 *   - verdicts are cached per (signature, cluster) and stay valid until capacity is committed
 *     on that cluster (its version changes), so only one cluster per placed unit is repacked.
 *
 * Does not decide anything about policies or choices; see pl_engine.c.
 */
#include "rc_sort.h"
#include "pl_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pl_basics.h"
#include "pl_quantity.h"
#include "pl_selector.h"
#include "rc_arena.h"
#include "rc_hash.h"
#include "rc_mem.h"

#define POD_MILLI 1000                   /* one pod, in milli-pods */
#define UNLIMITED (INT64_MAX / 4)        /* pods on a node that declares no limit */
#define MAX_NEW_NODES (INT64_C(1) << 20) /* virtual nodes per cluster: a bound, not a policy */

/* ==== Tables ==== */

struct nstate {
    int64_t free[PL_RES_MAX];
    int vshape;     /* -1: a real node; else index into cstate.shapes (a virtual node) */
    uint32_t stamp; /* the pack that last placed pods here (pl_fit.pack_serial) */
};

struct cstate {
    const struct pl_cluster *c;
    size_t nreal; /* real nodes, sorted by name, at nodes[0..nreal) */
    size_t nnodes, cap;
    struct nstate *nodes;
    const struct pl_node **real;
    /* Node classes: schedulable nodes with the same labels and taints (node_class), or the
     * same taints only (taint_class, for pods without node selector or affinity: real
     * nodes carry unique hostname labels). UINT32_MAX: not schedulable. */
    uint32_t *node_class;
    size_t nclass;
    uint32_t *class_rep; /* a node of each class */
    uint32_t *taint_class;
    size_t nsched; /* schedulable real nodes */
    size_t ntclass;
    uint32_t *tclass_rep;
    size_t nshapes;
    const struct pl_shape **shapes; /* in preference order */
    int64_t *shape_used;            /* nodes of each shape: existing + virtual */
    struct nstate *shape_free;      /* an empty node of each shape */
    uint64_t version;               /* starts at 1; +1 per commit */
    /* Per pod shape (by index): how many of the shape's eligible nodes, from the first, no
     * pod of it fits on as committed. Commits only take capacity (a pack that does not commit
     * gives back exactly what it took), so a node found full for a shape stays full for the
     * rest of the decisions, and first fit starts past those nodes (first_fit_eligible). */
    uint32_t *full_for;
    size_t nfull_for;
    int64_t committed[PL_RES_MAX];
    int64_t nodes_added;
};

struct elig {
    size_t n;
    uint32_t *nodes;         /* schedulable real nodes the pods may use, in node order */
    unsigned char *shape_ok; /* per autoscaler shape: labels and taints accepted */
};

/* Placement constraints (node selector, tolerations, affinity) shared by pod shapes that
 * differ only in requests or role: where pods may go is computed once per class. */
struct cclass {
    const struct pl_pod *pod; /* representative */
    uint64_t hash;
    struct elig **elig; /* per cluster, lazily */
};

struct podshape {
    const struct pl_pod *pod;
    uint64_t hash;
    int64_t req[PL_RES_MAX]; /* with the pod itself (+1 pods) */
    int nnz;
    unsigned char nz[PL_RES_MAX]; /* resources with req > 0, in index order */
    uint32_t cc;                  /* constraint class */
};

struct vcache {
    uint64_t version; /* 0: empty */
    enum pl_verdict_kind kind;
    const char *detail;
    int64_t nodes_added;
};

struct sig {
    uint64_t hash;
    size_t n;
    uint32_t *shape; /* in FFD order */
    int64_t *count;
    int64_t npods;
    struct vcache *cache; /* per cluster, lazily */
    /* "N pods fit on existing nodes", the detail of every fits-now verdict, made once (in
     * fits_now_in) */
    const char *fits_now;
    const struct rc_arena *fits_now_in;
};

struct htab {
    uint32_t *slot; /* index + 1; 0: empty */
    size_t cap;     /* power of two */
    size_t n;
};

struct undo {
    uint32_t node;
    uint32_t shape;
    int64_t count;
};

struct pl_fit {
    const struct pl_resnames *res;
    int nres;
    size_t nclusters;
    struct cstate *cl;
    struct rc_arena scratch;
    size_t nshapes, capshapes;
    struct podshape *shapes;
    struct htab shape_tab;
    size_t ncc, capcc;
    struct cclass *cc;
    struct htab cc_tab;
    size_t nsigs, capsigs;
    struct sig *sigs;
    struct htab sig_tab;
    size_t nundo, capundo;
    struct undo *undo;
    uint32_t pack_serial; /* +1 per pack */
    /* scratch for building signatures */
    size_t captmp;
    struct pl_demand_item *tmp;
    uint32_t *tmp_shape;
    int64_t *rem;
    size_t caprem;
};

/* ==== Hashing and equality of pod shapes ==== */

static uint64_t hash_str(uint64_t h, const char *s)
{
    h = rc_fnv1a_str(h, s ? s : "");
    return rc_fnv1a(h, "", 1);
}

static uint64_t hash_i64(uint64_t h, int64_t v)
{
    return rc_fnv1a(h, &v, sizeof(v));
}

static uint64_t hash_selector(uint64_t h, const struct pl_selector *s)
{
    h = hash_i64(h, (int64_t)s->n);
    for (size_t i = 0; i < s->n; i++) {
        h = hash_str(h, s->req[i].key);
        h = hash_i64(h, s->req[i].op);
        h = hash_i64(h, (int64_t)s->req[i].nvalues);
        for (size_t j = 0; j < s->req[i].nvalues; j++)
            h = hash_str(h, s->req[i].values[j]);
    }
    return h;
}

/* Never 0, and kept in the pod (pl_pod.constraints_hash: a memo, hence the cast) */
static uint64_t hash_constraints(const struct pl_pod *p)
{
    uint64_t h = RC_FNV_INIT;

    if (p->constraints_hash)
        return p->constraints_hash;

    h = hash_i64(h, (int64_t)p->node_selector.n);
    for (size_t i = 0; i < p->node_selector.n; i++) {
        h = hash_str(h, p->node_selector.v[i].key);
        h = hash_str(h, p->node_selector.v[i].value);
    }
    h = hash_i64(h, (int64_t)p->ntolerations);
    for (size_t i = 0; i < p->ntolerations; i++) {
        h = hash_str(h, p->tolerations[i].key);
        h = hash_i64(h, p->tolerations[i].exists);
        h = hash_str(h, p->tolerations[i].value);
        h = hash_str(h, p->tolerations[i].effect);
    }
    h = hash_i64(h, (int64_t)p->naffinity);
    for (size_t i = 0; i < p->naffinity; i++)
        h = hash_selector(h, &p->affinity[i]);
    h |= 1;
    ((struct pl_pod *)p)->constraints_hash = h;
    return h;
}

static uint64_t hash_pod(const struct pl_pod *p, int nres)
{
    uint64_t h = hash_constraints(p);

    h = hash_str(h, p->role);
    for (int r = 0; r < nres; r++)
        h = hash_i64(h, p->req.v[r]);
    return h;
}

static int str_eq(const char *a, const char *b)
{
    return !strcmp(a ? a : "", b ? b : "");
}

static int selector_eq(const struct pl_selector *a, const struct pl_selector *b)
{
    if (a->n != b->n)
        return 0;
    for (size_t i = 0; i < a->n; i++) {
        const struct pl_requirement *x = &a->req[i], *y = &b->req[i];
        if (x->op != y->op || x->nvalues != y->nvalues || !str_eq(x->key, y->key))
            return 0;
        for (size_t j = 0; j < x->nvalues; j++) {
            if (!str_eq(x->values[j], y->values[j]))
                return 0;
        }
    }
    return 1;
}

static int constraints_eq(const struct pl_pod *a, const struct pl_pod *b)
{
    if (a == b)
        return 1;
    if (a->node_selector.n != b->node_selector.n || a->ntolerations != b->ntolerations ||
        a->naffinity != b->naffinity)
        return 0;
    for (size_t i = 0; i < a->node_selector.n; i++) {
        if (!str_eq(a->node_selector.v[i].key, b->node_selector.v[i].key) ||
            !str_eq(a->node_selector.v[i].value, b->node_selector.v[i].value))
            return 0;
    }
    for (size_t i = 0; i < a->ntolerations; i++) {
        const struct pl_toleration *x = &a->tolerations[i], *y = &b->tolerations[i];
        if (x->exists != y->exists || !str_eq(x->key, y->key) || !str_eq(x->value, y->value) ||
            !str_eq(x->effect, y->effect))
            return 0;
    }
    for (size_t i = 0; i < a->naffinity; i++) {
        if (!selector_eq(&a->affinity[i], &b->affinity[i]))
            return 0;
    }
    return 1;
}

static int pod_eq(const struct pl_pod *a, const struct pl_pod *b, int nres)
{
    if (a == b)
        return 1;
    if (!str_eq(a->role, b->role))
        return 0;
    for (int r = 0; r < nres; r++) {
        if (a->req.v[r] != b->req.v[r])
            return 0;
    }
    return constraints_eq(a, b);
}

/* ==== Open-addressing table of indices ==== */

typedef int (*htab_eq_fn)(const struct pl_fit *f, uint32_t idx, const void *key);
typedef uint64_t (*htab_hash_fn)(const struct pl_fit *f, uint32_t idx);

/* Slot for `key` with hash h: holds idx+1 when found, else 0 (the insertion slot). */
static uint32_t *htab_find(const struct pl_fit *f, struct htab *t, uint64_t h, const void *key,
                           htab_eq_fn eq)
{
    size_t mask = t->cap - 1;

    for (size_t i = (size_t)h & mask;; i = (i + 1) & mask) {
        uint32_t *s = &t->slot[i];
        if (*s == 0 || eq(f, *s - 1, key))
            return s;
    }
}

static void htab_grow(const struct pl_fit *f, struct htab *t, htab_hash_fn hash)
{
    struct htab n = {NULL, t->cap ? t->cap * 2 : 64, t->n};

    n.slot = rc_xcalloc(n.cap, sizeof(*n.slot));
    for (size_t i = 0; i < t->cap; i++) {
        if (t->slot[i]) {
            size_t mask = n.cap - 1, j = (size_t)hash(f, t->slot[i] - 1) & mask;
            while (n.slot[j])
                j = (j + 1) & mask;
            n.slot[j] = t->slot[i];
        }
    }
    free(t->slot);
    *t = n;
}

/* ==== Setup ==== */

static int node_cmp(const void *a, const void *b)
{
    const struct pl_node *x = *(const struct pl_node *const *)a;
    const struct pl_node *y = *(const struct pl_node *const *)b;
    return strcmp(x->name, y->name);
}

static int64_t shape_cost_key(const struct pl_shape *s)
{
    return s->cost_micro > 0 ? s->cost_micro : INT64_MAX; /* unknown cost last */
}

static int shape_cmp(const void *a, const void *b)
{
    const struct pl_shape *x = *(const struct pl_shape *const *)a;
    const struct pl_shape *y = *(const struct pl_shape *const *)b;
    int64_t cx = shape_cost_key(x), cy = shape_cost_key(y);

    if (cx != cy)
        return cx < cy ? -1 : 1;
    for (int r = PL_RES_CPU; r <= PL_RES_MEMORY; r++) {
        if (x->allocatable.v[r] != y->allocatable.v[r])
            return x->allocatable.v[r] < y->allocatable.v[r] ? -1 : 1;
    }
    return strcmp(x->name, y->name);
}

static uint64_t node_class_hash(const struct pl_node *n, int with_labels)
{
    uint64_t h = RC_FNV_INIT;

    for (size_t i = 0; with_labels && i < n->labels.n; i++) {
        h = hash_str(h, n->labels.v[i].key);
        h = hash_str(h, n->labels.v[i].value);
    }
    h = hash_i64(h, -1);
    for (size_t i = 0; i < n->ntaints; i++) {
        h = hash_str(h, n->taints[i].key);
        h = hash_str(h, n->taints[i].value);
        h = hash_str(h, n->taints[i].effect);
    }
    return h;
}

static int node_class_eq(const struct pl_node *a, const struct pl_node *b, int with_labels)
{
    if ((with_labels && a->labels.n != b->labels.n) || a->ntaints != b->ntaints)
        return 0;
    for (size_t i = 0; with_labels && i < a->labels.n; i++) {
        if (!str_eq(a->labels.v[i].key, b->labels.v[i].key) ||
            !str_eq(a->labels.v[i].value, b->labels.v[i].value))
            return 0;
    }
    for (size_t i = 0; i < a->ntaints; i++) {
        if (!str_eq(a->taints[i].key, b->taints[i].key) ||
            !str_eq(a->taints[i].value, b->taints[i].value) ||
            !str_eq(a->taints[i].effect, b->taints[i].effect))
            return 0;
    }
    return 1;
}

/* The class of node i among classes[0..*n) (by hash, then content), adding one when new.
 * Classes are few; a linear scan over them is fine. */
static uint32_t classify(const struct pl_node *const *nodes, size_t i, uint64_t h, int with_labels,
                         uint64_t *hashes, uint32_t *rep, size_t *n)
{
    size_t k;

    for (k = 0; k < *n; k++) {
        if (hashes[k] == h && node_class_eq(nodes[rep[k]], nodes[i], with_labels))
            return (uint32_t)k;
    }
    hashes[k] = h;
    rep[k] = (uint32_t)i;
    (*n)++;
    return (uint32_t)k;
}

static void node_free_init(struct nstate *ns, const struct pl_res *alloc,
                           const struct pl_res *requested, int nres)
{
    for (int r = 0; r < nres; r++)
        ns->free[r] = alloc->v[r] - (requested ? requested->v[r] : 0);
    if (alloc->v[PL_RES_PODS] <= 0)
        ns->free[PL_RES_PODS] = UNLIMITED; /* no declared pod limit */
}

static void cstate_init(struct pl_fit *f, struct cstate *cs, const struct pl_cluster *c)
{
    struct rc_arena *sa = &f->scratch;
    uint64_t *chash, *thash;

    cs->c = c;
    cs->version = 1;
    cs->nreal = c->nnodes;
    cs->real = rc_arena_calloc(sa, c->nnodes ? c->nnodes : 1, sizeof(*cs->real));
    for (size_t i = 0; i < c->nnodes; i++)
        cs->real[i] = &c->nodes[i];
    if (c->nnodes > 1)
        rc_sort(cs->real, c->nnodes, sizeof(*cs->real), node_cmp);
    cs->cap = c->nnodes + 16;
    cs->nodes = rc_xcalloc(cs->cap, sizeof(*cs->nodes));
    cs->nnodes = c->nnodes;
    cs->node_class = rc_arena_calloc(sa, c->nnodes ? c->nnodes : 1, sizeof(*cs->node_class));
    cs->class_rep = rc_arena_calloc(sa, c->nnodes ? c->nnodes : 1, sizeof(*cs->class_rep));
    chash = rc_arena_calloc(sa, c->nnodes ? c->nnodes : 1, sizeof(*chash));
    cs->taint_class = rc_arena_calloc(sa, c->nnodes ? c->nnodes : 1, sizeof(*cs->taint_class));
    cs->tclass_rep = rc_arena_calloc(sa, c->nnodes ? c->nnodes : 1, sizeof(*cs->tclass_rep));
    thash = rc_arena_calloc(sa, c->nnodes ? c->nnodes : 1, sizeof(*thash));
    for (size_t i = 0; i < c->nnodes; i++) {
        const struct pl_node *n = cs->real[i];

        node_free_init(&cs->nodes[i], &n->allocatable, &n->requested, f->nres);
        cs->nodes[i].vshape = -1;
        if (n->unschedulable || n->not_ready) {
            cs->node_class[i] = cs->taint_class[i] = UINT32_MAX;
            continue;
        }
        cs->nsched++;
        cs->node_class[i] =
            classify(cs->real, i, node_class_hash(n, 1), 1, chash, cs->class_rep, &cs->nclass);
        cs->taint_class[i] =
            classify(cs->real, i, node_class_hash(n, 0), 0, thash, cs->tclass_rep, &cs->ntclass);
    }
    cs->nshapes = c->nshapes;
    cs->shapes = rc_arena_calloc(sa, c->nshapes ? c->nshapes : 1, sizeof(*cs->shapes));
    cs->shape_used = rc_arena_calloc(sa, c->nshapes ? c->nshapes : 1, sizeof(*cs->shape_used));
    for (size_t i = 0; i < c->nshapes; i++)
        cs->shapes[i] = &c->shapes[i];
    if (c->nshapes > 1)
        rc_sort(cs->shapes, c->nshapes, sizeof(*cs->shapes), shape_cmp);
    cs->shape_free = rc_arena_calloc(sa, c->nshapes ? c->nshapes : 1, sizeof(*cs->shape_free));
    for (size_t i = 0; i < c->nshapes; i++)
        node_free_init(&cs->shape_free[i], &cs->shapes[i]->allocatable, NULL, f->nres);
    for (size_t i = 0; i < c->nnodes; i++) {
        if (!c->nodes[i].shape)
            continue;
        for (size_t s = 0; s < cs->nshapes; s++) {
            if (!strcmp(cs->shapes[s]->name, c->nodes[i].shape)) {
                cs->shape_used[s]++;
                break;
            }
        }
    }
}

struct pl_fit *pl_fit_new(const struct pl_resnames *res, const struct pl_cluster *const *clusters,
                          size_t nclusters)
{
    struct pl_fit *f = rc_xcalloc(1, sizeof(*f));

    f->res = res;
    f->nres = res->n;
    f->nclusters = nclusters;
    f->cl = rc_xcalloc(nclusters ? nclusters : 1, sizeof(*f->cl));
    for (size_t i = 0; i < nclusters; i++)
        cstate_init(f, &f->cl[i], clusters[i]);
    return f;
}

void pl_fit_free(struct pl_fit *f)
{
    if (!f)
        return;
    for (size_t i = 0; i < f->nclusters; i++) {
        free(f->cl[i].nodes);
        free(f->cl[i].full_for);
    }
    free(f->cl);
    for (size_t i = 0; i < f->nsigs; i++) {
        free(f->sigs[i].shape);
        free(f->sigs[i].count);
    }
    free(f->sigs);
    free(f->shapes);
    free(f->shape_tab.slot);
    free(f->cc);
    free(f->cc_tab.slot);
    free(f->sig_tab.slot);
    free(f->undo);
    free(f->tmp);
    free(f->tmp_shape);
    free(f->rem);
    rc_arena_release(&f->scratch);
    free(f);
}

/* ==== Interning ==== */

static int shape_key_eq(const struct pl_fit *f, uint32_t idx, const void *key)
{
    const struct pl_pod *p = key;
    return pod_eq(f->shapes[idx].pod, p, f->nres);
}

static uint64_t shape_hash_at(const struct pl_fit *f, uint32_t idx)
{
    return f->shapes[idx].hash;
}

static int cc_key_eq(const struct pl_fit *f, uint32_t idx, const void *key)
{
    return constraints_eq(f->cc[idx].pod, key);
}

static uint64_t cc_hash_at(const struct pl_fit *f, uint32_t idx)
{
    return f->cc[idx].hash;
}

static uint32_t intern_cc(struct pl_fit *f, const struct pl_pod *p)
{
    uint64_t h = hash_constraints(p);
    uint32_t *slot;

    if (f->cc_tab.cap == 0 || (f->cc_tab.n + 1) * 2 > f->cc_tab.cap)
        htab_grow(f, &f->cc_tab, cc_hash_at);
    slot = htab_find(f, &f->cc_tab, h, p, cc_key_eq);
    if (*slot)
        return *slot - 1;
    f->cc = rc_xgrow(f->cc, &f->capcc, f->ncc + 1, sizeof(*f->cc));
    f->cc[f->ncc].pod = p;
    f->cc[f->ncc].hash = h;
    f->cc[f->ncc].elig =
        rc_arena_calloc(&f->scratch, f->nclusters ? f->nclusters : 1, sizeof(struct elig *));
    *slot = (uint32_t)f->ncc + 1;
    f->cc_tab.n++;
    return (uint32_t)f->ncc++;
}

static uint32_t intern_shape(struct pl_fit *f, const struct pl_pod *p)
{
    uint64_t h = hash_pod(p, f->nres);
    uint32_t *slot;
    struct podshape *s;

    if (f->shape_tab.cap == 0 || (f->shape_tab.n + 1) * 2 > f->shape_tab.cap)
        htab_grow(f, &f->shape_tab, shape_hash_at);
    slot = htab_find(f, &f->shape_tab, h, p, shape_key_eq);
    if (*slot)
        return *slot - 1;
    f->shapes = rc_xgrow(f->shapes, &f->capshapes, f->nshapes + 1, sizeof(*f->shapes));
    s = &f->shapes[f->nshapes];
    memset(s, 0, sizeof(*s));
    s->pod = p;
    s->hash = h;
    s->cc = intern_cc(f, p);
    for (int r = 0; r < f->nres; r++) {
        int64_t v = p->req.v[r];
        if (r == PL_RES_PODS)
            v += POD_MILLI;
        s->req[r] = v > 0 ? v : 0;
        if (s->req[r] > 0)
            s->nz[s->nnz++] = (unsigned char)r;
    }
    *slot = (uint32_t)f->nshapes + 1;
    f->shape_tab.n++;
    return (uint32_t)f->nshapes++;
}

struct sigkey {
    size_t n;
    const uint32_t *shape;
    const int64_t *count;
};

static int sig_key_eq(const struct pl_fit *f, uint32_t idx, const void *key)
{
    const struct sigkey *k = key;
    const struct sig *s = &f->sigs[idx];

    if (s->n != k->n)
        return 0;
    /* the stored order is FFD; the key is sorted by shape id: compare as sets */
    for (size_t i = 0; i < k->n; i++) {
        size_t j;
        for (j = 0; j < s->n; j++) {
            if (s->shape[j] == k->shape[i])
                break;
        }
        if (j == s->n || s->count[j] != k->count[i])
            return 0;
    }
    return 1;
}

static uint64_t sig_hash_at(const struct pl_fit *f, uint32_t idx)
{
    return f->sigs[idx].hash;
}

static int item_shape_cmp(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* First-fit-decreasing order: pods that need scarce (extended) resources first, then larger
 * cpu, then larger memory; shape id last, for determinism. */
static int ffd_before(const struct pl_fit *f, uint32_t a, uint32_t b)
{
    const struct podshape *x = &f->shapes[a], *y = &f->shapes[b];
    int xe = 0, ye = 0;

    for (int r = PL_RES_FIRST_EXTENDED; r < f->nres; r++) {
        xe |= x->req[r] > 0;
        ye |= y->req[r] > 0;
    }
    if (xe != ye)
        return xe > ye;
    if (x->req[PL_RES_CPU] != y->req[PL_RES_CPU])
        return x->req[PL_RES_CPU] > y->req[PL_RES_CPU];
    if (x->req[PL_RES_MEMORY] != y->req[PL_RES_MEMORY])
        return x->req[PL_RES_MEMORY] > y->req[PL_RES_MEMORY];
    return a < b;
}

uint32_t pl_fit_sig(struct pl_fit *f, const struct pl_demand_item *items, size_t n)
{
    size_t m = 0;
    uint64_t h = RC_FNV_INIT;
    int64_t *cnt;
    uint32_t *slot;
    struct sig *s;
    struct sigkey key;
    uint32_t *ids; /* each item's shape, interned once */

    f->tmp_shape = rc_xgrow(f->tmp_shape, &f->captmp, 2 * (n + 1), sizeof(*f->tmp_shape));
    ids = f->tmp_shape + n + 1;
    for (size_t i = 0; i < n; i++) {
        if (items[i].count <= 0)
            continue;
        ids[i] = intern_shape(f, items[i].pod);
        f->tmp_shape[m++] = ids[i];
    }
    /* sort unique shape ids, then sum counts per shape */
    if (m > 1)
        rc_sort(f->tmp_shape, m, sizeof(*f->tmp_shape), item_shape_cmp);
    {
        size_t w = 0;
        for (size_t i = 0; i < m; i++) {
            if (w == 0 || f->tmp_shape[w - 1] != f->tmp_shape[i])
                f->tmp_shape[w++] = f->tmp_shape[i];
        }
        m = w;
    }
    cnt = rc_xcalloc(m ? m : 1, sizeof(*cnt));
    for (size_t i = 0; i < n; i++) {
        uint32_t id;
        size_t lo = 0, hi = m;
        if (items[i].count <= 0)
            continue;
        id = ids[i];
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (f->tmp_shape[mid] < id)
                lo = mid + 1;
            else
                hi = mid;
        }
        cnt[lo] += items[i].count;
    }
    for (size_t i = 0; i < m; i++) {
        h = hash_i64(h, f->tmp_shape[i]);
        h = hash_i64(h, cnt[i]);
    }
    key.n = m;
    key.shape = f->tmp_shape;
    key.count = cnt;
    if (f->sig_tab.cap == 0 || (f->sig_tab.n + 1) * 2 > f->sig_tab.cap)
        htab_grow(f, &f->sig_tab, sig_hash_at);
    slot = htab_find(f, &f->sig_tab, h, &key, sig_key_eq);
    if (*slot) {
        free(cnt);
        return *slot - 1;
    }
    f->sigs = rc_xgrow(f->sigs, &f->capsigs, f->nsigs + 1, sizeof(*f->sigs));
    s = &f->sigs[f->nsigs];
    memset(s, 0, sizeof(*s));
    s->hash = h;
    s->n = m;
    s->shape = rc_xcalloc(m ? m : 1, sizeof(*s->shape));
    s->count = rc_xcalloc(m ? m : 1, sizeof(*s->count));
    memcpy(s->shape, f->tmp_shape, m * sizeof(*s->shape));
    for (size_t i = 1; i < m; i++) { /* insertion sort: signatures are short */
        uint32_t x = s->shape[i];
        size_t j = i;
        while (j > 0 && ffd_before(f, x, s->shape[j - 1])) {
            s->shape[j] = s->shape[j - 1];
            j--;
        }
        s->shape[j] = x;
    }
    for (size_t i = 0; i < m; i++) {
        for (size_t j = 0; j < m; j++) {
            if (f->tmp_shape[j] == s->shape[i])
                s->count[i] = cnt[j];
        }
        s->npods += s->count[i];
    }
    free(cnt);
    *slot = (uint32_t)f->nsigs + 1;
    f->sig_tab.n++;
    return (uint32_t)f->nsigs++;
}

/* ==== Eligibility ==== */

static int64_t fit_count(const int64_t *free_, const struct podshape *s, int64_t want)
{
    int64_t k = want;

    for (int j = 0; j < s->nnz; j++) {
        int r = s->nz[j];
        int64_t q;
        if (free_[r] < s->req[r])
            return 0;
        if (k > 1) {
            q = free_[r] / s->req[r];
            if (q < k)
                k = q;
        }
    }
    return k;
}

static struct elig *get_elig(struct pl_fit *f, struct podshape *s, size_t ci)
{
    struct cstate *cs = &f->cl[ci];
    struct cclass *cc = &f->cc[s->cc];
    const struct pl_pod *p = cc->pod;
    struct elig *e;
    unsigned char *ok;
    const uint32_t *cls, *rep;
    size_t ncls;

    if (cc->elig[ci])
        return cc->elig[ci];
    e = rc_arena_calloc(&f->scratch, 1, sizeof(*e));
    if (p->node_selector.n == 0 && p->naffinity == 0) {
        cls = cs->taint_class; /* node labels do not matter to this pod */
        rep = cs->tclass_rep;
        ncls = cs->ntclass;
    } else {
        cls = cs->node_class;
        rep = cs->class_rep;
        ncls = cs->nclass;
    }
    ok = rc_arena_calloc(&f->scratch, ncls ? ncls : 1, 1);
    for (size_t k = 0; k < ncls; k++) {
        const struct pl_node *n = cs->real[rep[k]];
        ok[k] = pl_pod_node_labels_ok(p, &n->labels) &&
                pl_tolerates_all(p->tolerations, p->ntolerations, n->taints, n->ntaints);
    }
    e->nodes = rc_arena_calloc(&f->scratch, cs->nreal ? cs->nreal : 1, sizeof(*e->nodes));
    for (size_t i = 0; i < cs->nreal; i++) {
        if (cls[i] != UINT32_MAX && ok[cls[i]])
            e->nodes[e->n++] = (uint32_t)i;
    }
    e->shape_ok = rc_arena_calloc(&f->scratch, cs->nshapes ? cs->nshapes : 1, 1);
    for (size_t k = 0; k < cs->nshapes; k++) {
        const struct pl_shape *sh = cs->shapes[k];
        e->shape_ok[k] = pl_pod_node_labels_ok(p, &sh->labels) &&
                         pl_tolerates_all(p->tolerations, p->ntolerations, sh->taints, sh->ntaints);
    }
    cc->elig[ci] = e;
    return e;
}

/* ==== Packing ==== */

static void place(struct pl_fit *f, struct cstate *cs, uint32_t node, uint32_t shape, int64_t count)
{
    const struct podshape *s = &f->shapes[shape];
    struct nstate *ns = &cs->nodes[node];

    for (int j = 0; j < s->nnz; j++)
        ns->free[s->nz[j]] -= count * s->req[s->nz[j]];
    ns->stamp = f->pack_serial;
    f->undo = rc_xgrow(f->undo, &f->capundo, f->nundo + 1, sizeof(*f->undo));
    f->undo[f->nundo].node = node;
    f->undo[f->nundo].shape = shape;
    f->undo[f->nundo].count = count;
    f->nundo++;
}

static void undo_to(struct pl_fit *f, struct cstate *cs, size_t mark)
{
    while (f->nundo > mark) {
        const struct undo *u = &f->undo[--f->nundo];
        const struct podshape *s = &f->shapes[u->shape];
        struct nstate *ns = &cs->nodes[u->node];
        for (int j = 0; j < s->nnz; j++)
            ns->free[s->nz[j]] += u->count * s->req[s->nz[j]];
    }
}

/* First fit of `*rem` pods of shape `sh` onto nodes[idx...]: updates *rem. */
static void first_fit(struct pl_fit *f, struct cstate *cs, uint32_t sh, const uint32_t *idx,
                      size_t nidx, int64_t *rem)
{
    const struct podshape *s = &f->shapes[sh];

    for (size_t i = 0; i<nidx && * rem> 0; i++) {
        int64_t k = fit_count(cs->nodes[idx[i]].free, s, *rem);
        if (k > 0) {
            place(f, cs, idx[i], sh, k);
            *rem -= k;
        }
    }
}

/* first_fit over the nodes eligible for shape sh, from the first that may still take a pod
 * of it: the same placements, without trying again, decision after decision, the nodes the
 * committed ones have filled (cstate.full_for). A node this pack has placed pods on holds
 * less than it has as committed, so it does not tell. */
static void first_fit_eligible(struct pl_fit *f, struct cstate *cs, uint32_t sh,
                               const struct elig *e, int64_t *rem)
{
    const struct podshape *s = &f->shapes[sh];
    uint32_t *full;
    int ahead = 1; /* every node tried so far is full for sh as committed */

    if (sh >= cs->nfull_for) {
        size_t old = cs->nfull_for;
        cs->full_for =
            rc_xgrow(cs->full_for, &cs->nfull_for, (size_t)sh + 1, sizeof(*cs->full_for));
        memset(cs->full_for + old, 0, (cs->nfull_for - old) * sizeof(*cs->full_for));
    }
    full = &cs->full_for[sh];
    for (size_t i = *full; *rem > 0 && i < e->n; i++) {
        struct nstate *ns = &cs->nodes[e->nodes[i]];
        int64_t k = fit_count(ns->free, s, *rem);
        if (k > 0) {
            place(f, cs, e->nodes[i], sh, k);
            *rem -= k;
            ahead = 0;
        } else if (ahead && ns->stamp != f->pack_serial) {
            *full = (uint32_t)(i + 1);
        } else {
            ahead = 0;
        }
    }
}

enum why2 {
    WHY2_NONE = 0,
    WHY2_NO_AUTOSCALER,
    WHY2_NO_SHAPE_ACCEPTS,
    WHY2_TOO_SMALL,
    WHY2_AT_MAX,
    WHY2_LIMIT
};

struct packinfo {
    enum pl_verdict_kind kind;
    int64_t placed_now; /* pods on real nodes */
    int64_t nodes_added;
    int fail1; /* index in sig of the first group not fitting real nodes; -1 */
    int fail2; /* ...not fitting after scale-up either; -1 */
    enum why2 why2;
    const struct pl_shape
        *why2_shape; /* TOO_SMALL: the cheapest accepting shape; AT_MAX: a full one */
    const struct pl_shape *first_shape; /* first shape a node was added of */
    /* best real node for fail1's pods, computed when want_detail */
    int best_r; /* -1: no eligible node */
    int64_t best_have;
    size_t nsched; /* schedulable real nodes */
};

static void best_node(struct pl_fit *f, struct cstate *cs, const struct podshape *s,
                      const struct elig *e, struct packinfo *pi)
{
    int best_short = PL_RES_MAX + 1;
    double best_ratio = -1;

    pi->best_r = -1;
    pi->best_have = 0;
    for (size_t i = 0; i < e->n; i++) {
        const int64_t *fr = cs->nodes[e->nodes[i]].free;
        int nshort = 0, r0 = -1;
        double ratio;
        for (int j = 0; j < s->nnz; j++) {
            int r = s->nz[j];
            if (fr[r] < s->req[r]) {
                nshort++;
                if (r0 < 0)
                    r0 = r;
            }
        }
        if (r0 < 0)
            continue; /* cannot happen after first fit; be safe */
        ratio = (double)(fr[r0] > 0 ? fr[r0] : 0) / (double)s->req[r0];
        if (nshort < best_short || (nshort == best_short && ratio > best_ratio)) {
            best_short = nshort;
            best_ratio = ratio;
            pi->best_r = r0;
            pi->best_have = fr[r0] > 0 ? fr[r0] : 0;
        }
    }
}

static void add_virtual(struct cstate *cs, size_t shape_idx, int nres)
{
    struct nstate *ns;

    cs->nodes = rc_xgrow(cs->nodes, &cs->cap, cs->nnodes + 1, sizeof(*cs->nodes));
    ns = &cs->nodes[cs->nnodes++];
    node_free_init(ns, &cs->shapes[shape_idx]->allocatable, NULL, nres);
    ns->vshape = (int)shape_idx;
}

/* Scale-up for `*rem` pods of group sh: existing virtual nodes, then new ones. */
static void scale_up(struct pl_fit *f, struct cstate *cs, uint32_t sh, struct elig *e, int64_t *rem,
                     struct packinfo *pi)
{
    const struct pl_cluster *c = cs->c;
    const struct pl_shape *small = NULL, *full = NULL;
    int accepted = 0, big = 0;

    for (size_t i = cs->nreal; i<cs->nnodes && * rem> 0; i++) {
        uint32_t idx = (uint32_t)i;
        if (e->shape_ok[cs->nodes[i].vshape])
            first_fit(f, cs, sh, &idx, 1, rem);
    }
    if (*rem == 0)
        return;
    if (c->any_shape && c->nshapes == 0) {
        pi->nodes_added += *rem; /* a node made to measure per pod */
        *rem = 0;
        return;
    }
    for (size_t k = 0; k<cs->nshapes && * rem> 0; k++) {
        const struct pl_shape *shp = cs->shapes[k];
        int64_t avail, per, want;
        if (!e->shape_ok[k])
            continue;
        accepted = 1;
        per = fit_count(cs->shape_free[k].free, &f->shapes[sh], INT64_MAX);
        if (per <= 0) {
            if (!small)
                small = shp;
            continue;
        }
        big = 1;
        avail = shp->max < 0 ? MAX_NEW_NODES : shp->max - cs->shape_used[k];
        if (cs->nnodes - cs->nreal >= (size_t)MAX_NEW_NODES)
            avail = 0;
        if (avail <= 0) {
            if (!full)
                full = shp;
            continue;
        }
        want = (*rem + per - 1) / per;
        if (want > avail)
            want = avail;
        for (int64_t n = 0; n < want; n++) {
            uint32_t idx = (uint32_t)cs->nnodes;
            add_virtual(cs, k, f->nres);
            cs->shape_used[k]++;
            pi->nodes_added++;
            if (!pi->first_shape)
                pi->first_shape = shp;
            first_fit(f, cs, sh, &idx, 1, rem);
        }
        if (*rem > 0 && !full)
            full = shp; /* it ran out of nodes of this shape */
    }
    if (*rem > 0 && pi->fail2 < 0) {
        if (!accepted) {
            pi->why2 = WHY2_NO_SHAPE_ACCEPTS;
        } else if (!big) {
            pi->why2 = WHY2_TOO_SMALL;
            pi->why2_shape = small;
        } else {
            pi->why2 = full ? WHY2_AT_MAX : WHY2_LIMIT;
            pi->why2_shape = full;
        }
    }
}

/* Pack sig onto cluster ci. commit == 0: undo everything afterwards. */
static void pack(struct pl_fit *f, uint32_t sig, size_t ci, int commit, int want_detail,
                 struct packinfo *pi)
{
    struct cstate *cs = &f->cl[ci];
    struct sig *s = &f->sigs[sig];
    size_t mark = f->nundo, mark_nodes = cs->nnodes;
    int64_t *saved_used = NULL;
    int need_scale = 0;

    memset(pi, 0, sizeof(*pi));
    pi->fail1 = pi->fail2 = -1;
    pi->best_r = -1;
    f->pack_serial++;
    f->rem = rc_xgrow(f->rem, &f->caprem, s->n + 1, sizeof(*f->rem));
    for (size_t g = 0; g < s->n; g++) {
        struct elig *e = get_elig(f, &f->shapes[s->shape[g]], ci);
        f->rem[g] = s->count[g];
        first_fit_eligible(f, cs, s->shape[g], e, &f->rem[g]);
        pi->placed_now += s->count[g] - f->rem[g];
        if (f->rem[g] > 0) {
            need_scale = 1;
            if (pi->fail1 < 0)
                pi->fail1 = (int)g;
        }
    }
    if (want_detail && pi->fail1 >= 0) {
        const struct podshape *ps = &f->shapes[s->shape[pi->fail1]];
        best_node(f, cs, ps, get_elig(f, &f->shapes[s->shape[pi->fail1]], ci), pi);
        pi->nsched = cs->nsched;
    }
    if (!need_scale) {
        pi->kind = PL_VERDICT_FITS_NOW;
    } else if (cs->c->autoscaler == PL_AUTOSCALER_NONE) {
        pi->kind = PL_VERDICT_DOES_NOT_FIT;
        pi->why2 = WHY2_NO_AUTOSCALER;
    } else {
        if (!commit && cs->nshapes) {
            saved_used = rc_xcalloc(cs->nshapes, sizeof(*saved_used));
            memcpy(saved_used, cs->shape_used, cs->nshapes * sizeof(*saved_used));
        }
        for (size_t g = 0; g < s->n; g++) {
            if (f->rem[g] == 0)
                continue;
            scale_up(f, cs, s->shape[g], get_elig(f, &f->shapes[s->shape[g]], ci), &f->rem[g], pi);
            if (f->rem[g] > 0 && pi->fail2 < 0)
                pi->fail2 = (int)g;
        }
        pi->kind = pi->fail2 < 0 ? PL_VERDICT_FITS_AFTER_SCALE_UP : PL_VERDICT_DOES_NOT_FIT;
    }
    if (!commit) {
        undo_to(f, cs, mark);
        cs->nnodes = mark_nodes;
        if (saved_used) {
            memcpy(cs->shape_used, saved_used, cs->nshapes * sizeof(*saved_used));
            free(saved_used);
        }
    } else {
        for (size_t i = mark; i < f->nundo; i++) {
            const struct podshape *ps = &f->shapes[f->undo[i].shape];
            for (int j = 0; j < ps->nnz; j++)
                cs->committed[ps->nz[j]] += f->undo[i].count * ps->req[ps->nz[j]];
        }
        cs->nodes_added += pi->nodes_added;
        f->nundo = mark;
        cs->version++;
    }
}

/* ==== Verdicts ==== */

static int is_bytes(const struct pl_fit *f, int r)
{
    return r == PL_RES_MEMORY || !strcmp(f->res->name[r], "ephemeral-storage");
}

static const char *role_of(const struct podshape *s)
{
    return s->pod->role && s->pod->role[0] ? s->pod->role : "pod";
}

static const char *detail_for(struct pl_fit *f, uint32_t sig, size_t ci, const struct packinfo *pi,
                              struct rc_arena *a)
{
    const struct sig *s = &f->sigs[sig];
    const struct cstate *cs = &f->cl[ci];
    char head[160] = "", tail[200] = "", need[PL_QUANTITY_STR], have[PL_QUANTITY_STR];

    if (pi->kind == PL_VERDICT_FITS_NOW) {
        struct sig *ms = &f->sigs[sig];
        if (s->npods == 0)
            return "no pods to place";
        if (ms->fits_now_in != a) {
            ms->fits_now = rc_arena_printf(a, "%" PRId64 " pod%s fit%s on existing nodes", s->npods,
                                           s->npods == 1 ? "" : "s", s->npods == 1 ? "s" : "");
            ms->fits_now_in = a;
        }
        return ms->fits_now;
    }
    if (pi->kind == PL_VERDICT_FITS_AFTER_SCALE_UP) {
        if (pi->nodes_added == 0)
            return rc_arena_printf(a,
                                   "%" PRId64 " of %" PRId64 " pods fit now; the rest fit on "
                                   "nodes the autoscaler adds for earlier units",
                                   pi->placed_now, s->npods);
        return rc_arena_printf(
            a, "%" PRId64 " of %" PRId64 " pods fit now; autoscaler adds %" PRId64 " node%s (%s)",
            pi->placed_now, s->npods, pi->nodes_added, pi->nodes_added == 1 ? "" : "s",
            pi->first_shape ? pi->first_shape->name : "any shape");
    }
    /* does not fit: the numbers for the first pod group that did not fit existing nodes */
    if (pi->fail1 >= 0) {
        const struct podshape *ps = &f->shapes[s->shape[pi->fail1]];
        int n = 0;
        if (pi->placed_now > 0)
            n = snprintf(head, sizeof(head), "%" PRId64 " of %" PRId64 " pods fit; ",
                         pi->placed_now, s->npods);
        if (n < 0 || (size_t)n >= sizeof(head))
            n = 0;
        if (pi->nsched == 0) {
            snprintf(head + n, sizeof(head) - (size_t)n, "%s: no schedulable nodes", role_of(ps));
        } else if (pi->best_r < 0) {
            snprintf(head + n, sizeof(head) - (size_t)n,
                     "%s: no schedulable node matches its node selector, affinity and "
                     "tolerations",
                     role_of(ps));
        } else {
            int r = pi->best_r;
            int64_t nd = ps->req[r];
            pl_quantity_format(need, nd, is_bytes(f, r));
            pl_quantity_format(have, pi->best_have, is_bytes(f, r));
            snprintf(head + n, sizeof(head) - (size_t)n, "%s needs %s %s; best node has %s",
                     role_of(ps), f->res->name[r], need, have);
        }
    }
    if (cs->c->autoscaler != PL_AUTOSCALER_NONE && pi->fail2 >= 0) {
        const struct podshape *ps = &f->shapes[s->shape[pi->fail2]];
        switch (pi->why2) {
        case WHY2_NO_SHAPE_ACCEPTS:
            snprintf(tail, sizeof(tail),
                     "; autoscaler: no node shape accepts %s's node selector and tolerations",
                     role_of(ps));
            break;
        case WHY2_TOO_SMALL: {
            const struct pl_shape *shp = pi->why2_shape;
            int r = -1;
            for (int j = 0; shp && j < ps->nnz; j++) {
                int64_t al = shp->allocatable.v[ps->nz[j]];
                if (ps->nz[j] == PL_RES_PODS && al <= 0)
                    continue;
                if (al < ps->req[ps->nz[j]]) {
                    r = ps->nz[j];
                    break;
                }
            }
            if (r >= 0) {
                pl_quantity_format(need, ps->req[r], is_bytes(f, r));
                pl_quantity_format(have, shp->allocatable.v[r], is_bytes(f, r));
                snprintf(tail, sizeof(tail),
                         "; autoscaler: node shapes too small for %s (%s has %s %s, needs %s)",
                         role_of(ps), shp->name, f->res->name[r], have, need);
            } else {
                snprintf(tail, sizeof(tail), "; autoscaler: node shapes too small for %s",
                         role_of(ps));
            }
            break;
        }
        case WHY2_AT_MAX:
            snprintf(tail, sizeof(tail),
                     "; autoscaler: node shape '%s' at its max of %" PRId64 " nodes",
                     pi->why2_shape ? pi->why2_shape->name : "?",
                     pi->why2_shape ? pi->why2_shape->max : 0);
            break;
        default:
            snprintf(tail, sizeof(tail), "; autoscaler cannot add nodes for %s", role_of(ps));
            break;
        }
    }
    return rc_arena_printf(a, "%s%s", head, tail);
}

void pl_fit_verdict(struct pl_fit *f, uint32_t sig, size_t ci, struct pl_verdict *out,
                    struct rc_arena *a)
{
    struct sig *s = &f->sigs[sig];
    struct cstate *cs = &f->cl[ci];
    struct vcache *vc;
    struct packinfo pi;

    if (!s->cache)
        s->cache = rc_arena_calloc(&f->scratch, f->nclusters ? f->nclusters : 1, sizeof(*s->cache));
    vc = &s->cache[ci];
    if (vc->version != cs->version) {
        pack(f, sig, ci, 0, 1, &pi);
        vc->version = cs->version;
        vc->kind = pi.kind;
        vc->nodes_added = pi.kind == PL_VERDICT_FITS_AFTER_SCALE_UP ? pi.nodes_added : 0;
        vc->detail = detail_for(f, sig, ci, &pi, a);
    }
    out->kind = vc->kind;
    out->detail = vc->detail;
    out->nodes_added = vc->nodes_added;
}

enum pl_verdict_kind pl_fit_commit(struct pl_fit *f, uint32_t sig, size_t ci)
{
    struct packinfo pi;

    if (f->sigs[sig].npods == 0)
        return PL_VERDICT_FITS_NOW; /* nothing to deduct: keep the cluster's cache */
    pack(f, sig, ci, 1, 0, &pi);
    return pi.kind;
}

void pl_fit_verdict_commit(struct pl_fit *f, uint32_t sig, size_t ci, struct pl_verdict *out,
                           struct rc_arena *a)
{
    struct sig *s = &f->sigs[sig];
    struct packinfo pi;

    /* a verdict known for this capacity, or nothing to deduct: as the two calls do */
    if (s->npods == 0 || (s->cache && s->cache[ci].version == f->cl[ci].version)) {
        pl_fit_verdict(f, sig, ci, out, a);
        pl_fit_commit(f, sig, ci);
        return;
    }
    /* the packing a verdict makes is the one a commit keeps, and a detail is read from the
     * packing alone (detail_for) */
    pack(f, sig, ci, 1, 1, &pi);
    out->kind = pi.kind;
    out->nodes_added = pi.kind == PL_VERDICT_FITS_AFTER_SCALE_UP ? pi.nodes_added : 0;
    out->detail = detail_for(f, sig, ci, &pi, a);
}

void pl_fit_usage(const struct pl_fit *f, size_t ci, struct pl_usage *u)
{
    const struct cstate *cs = &f->cl[ci];

    memset(&u->allocatable, 0, sizeof(u->allocatable));
    memset(&u->requested, 0, sizeof(u->requested));
    memset(&u->committed, 0, sizeof(u->committed));
    for (size_t i = 0; i < cs->nreal; i++) {
        const struct pl_node *n = cs->real[i];
        if (cs->node_class[i] == UINT32_MAX)
            continue;
        for (int r = 0; r < f->nres; r++) {
            u->allocatable.v[r] += n->allocatable.v[r];
            u->requested.v[r] += n->requested.v[r];
        }
    }
    for (int r = 0; r < f->nres; r++)
        u->committed.v[r] = cs->committed[r];
    u->nodes_to_add = cs->nodes_added;
}
