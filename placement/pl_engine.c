/*
 * pl_engine.c - pl_place(): policies, units, candidates, choices, stickiness, changes.
 *
 * The order of work (each step deterministic, inputs sorted by key/name first):
 *   1. the governing policy of every object (the one that governed it before keeps it; else
 *      the smallest matching policy name; overlaps warned);
 *   2. placement units: groupBy gangs per policy + namespace, else objects alone;
 *   3. per policy, the candidate clusters in preference order (orderedClusterSelector order,
 *      else clusters without an autoscaler first, then lower cost, then name);
 *   4. units whose previous placement still holds (cluster exists, still selected, policy
 *      digest unchanged) are kept first, in unit-id order, deducting their demand unless their
 *      pods were observed on the cluster;
 *   5. every other unit, in unit-id order: a verdict per candidate (pl_fit.c), then the
 *      choice rule (fits now > fits after scale-up > the single selected cluster > pending),
 *      deducting what it takes;
 *   6. changes against the previous record, removed units, usage per cluster.
 *
 * What it does not do: packing itself (pl_fit.c), any I/O.
 */
#include "rc_sort.h"
#include "pl_engine.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pl_basics.h"
#include "pl_internal.h"
#include "pl_selector.h"
#include "rc_arena.h"
#include "rc_mem.h"

/* ==== Small public functions ==== */

int64_t pl_divide_replicas(int64_t total, int64_t percent)
{
    if (total <= 0 || percent <= 0)
        return 0;
    if (percent > 100)
        percent = 100;
    /* total * percent may overflow for absurd totals: divide first, then the remainder */
    return (total / 100) * percent + ((total % 100) * percent) / 100;
}

static const char *target_name(const struct pl_target *t)
{
    return t->domain ? t->domain : t->cluster ? t->cluster : "";
}

/* Does target x come before target y when remainders tie? Larger percent, then name. */
static int tie_before(const struct pl_target *x, const struct pl_target *y)
{
    int c;

    if (x->percent != y->percent)
        return x->percent > y->percent;
    c = strcmp(target_name(x), target_name(y));
    return c < 0;
}

int64_t pl_divide_part(int64_t total, const struct pl_target *targets, size_t n, size_t t)
{
    int64_t sum = 0, given = 0, rem_t, base_t;
    size_t before = 0;

    if (total <= 0 || t >= n || targets[t].percent <= 0)
        return 0;
    for (size_t i = 0; i < n; i++)
        sum += targets[i].percent > 0 ? targets[i].percent : 0;
    /* total * percent / sum without overflow: (total / sum) * p + (total % sum) * p / sum */
    for (size_t i = 0; i < n; i++) {
        int64_t p = targets[i].percent;
        if (p > 0)
            given += (total / sum) * p + ((total % sum) * p) / sum;
    }
    base_t = (total / sum) * targets[t].percent + ((total % sum) * targets[t].percent) / sum;
    rem_t = ((total % sum) * targets[t].percent) % sum;
    for (size_t i = 0; i < n; i++) {
        int64_t p = targets[i].percent, rem;
        if (i == t || p <= 0)
            continue;
        rem = ((total % sum) * p) % sum;
        if (rem > rem_t || (rem == rem_t && tie_before(&targets[i], &targets[t])))
            before++;
    }
    return base_t + ((int64_t)before < total - given ? 1 : 0);
}

enum pl_split_kind pl_split_of(const struct pl_object *o)
{
    if (o->split != PL_SPLIT_COPY)
        return o->split;
    if (o->replicas >= 0)
        return PL_SPLIT_REPLICAS;
    return o->npods ? PL_SPLIT_WHOLE : PL_SPLIT_COPY;
}

void pl_divide_object(struct pl_share *out, const struct pl_object *o,
                      const struct pl_target *targets, size_t n, size_t t)
{
    memset(out, 0, sizeof(*out));
    out->replicas = o->replicas;
    out->parallelism = o->parallelism;
    out->completions = o->completions;
    switch (pl_split_of(o)) {
    case PL_SPLIT_COPY:
        out->present = 1;
        break;
    case PL_SPLIT_REPLICAS:
        out->present = 1;
        out->replicas = pl_divide_part(o->replicas, targets, n, t);
        break;
    case PL_SPLIT_JOB:
        out->parallelism = pl_divide_part(o->parallelism, targets, n, t);
        if (o->completions >= 0) {
            out->completions = pl_divide_part(o->completions, targets, n, t);
            if (out->completions > 0 && out->parallelism < 1)
                out->parallelism = 1;
            if (out->parallelism > out->completions)
                out->parallelism = out->completions;
            out->present = out->completions > 0;
        } else {
            out->present = out->parallelism > 0;
        }
        break;
    case PL_SPLIT_WHOLE: {
        size_t best = 0;
        for (size_t i = 1; i < n; i++) {
            if (tie_before(&targets[i], &targets[best]))
                best = i;
        }
        out->present = t == best;
        break;
    }
    }
}

int pl_decision_divides(const struct pl_decision *d)
{
    for (size_t i = 0; i < d->ntargets; i++) {
        if (d->targets[i].percent < 100)
            return 1;
    }
    return 0;
}

static const char *const state_names[] = {"placed", "pending", "unplaced"};
static const char *const verdict_names[] = {"fits-now", "fits-after-scale-up", "does-not-fit",
                                            "unreachable"};
static const char *const change_names[] = {"none", "new", "moved", "state", "removed"};

const char *pl_state_name(enum pl_state s)
{
    return (unsigned)s < 3 ? state_names[s] : "unknown";
}

int pl_state_parse(enum pl_state *out, const char *s)
{
    for (int i = 0; i < 3; i++) {
        if (s && !strcmp(s, state_names[i])) {
            *out = (enum pl_state)i;
            return 0;
        }
    }
    return RC_EINVALID;
}

const char *pl_verdict_name(enum pl_verdict_kind k)
{
    return (unsigned)k < 4 ? verdict_names[k] : "unknown";
}

int pl_verdict_parse(enum pl_verdict_kind *out, const char *s)
{
    for (int i = 0; i < 4; i++) {
        if (s && !strcmp(s, verdict_names[i])) {
            *out = (enum pl_verdict_kind)i;
            return 0;
        }
    }
    return RC_EINVALID;
}

const char *pl_change_name(enum pl_change c)
{
    return (unsigned)c < 5 ? change_names[c] : "unknown";
}

/* ==== Working state ==== */

struct ens {
    const char *name;
    const struct pl_labels *labels;
};

struct epol {
    const struct pl_policy *p;
    unsigned char *ns_ok; /* per namespace */
    unsigned char *sel;   /* per cluster: 1 selected; 0 not */
    unsigned char *why;   /* per cluster, when not selected: 1 clusterSelector, 2 ordered */
    size_t ncand;
    uint32_t *cand;    /* cluster indices, preference order */
    const char *annot; /* NULL: a SchedulePolicy; else the Nova annotation it stands for */
};

struct eunit {
    const char *id;
    int pol; /* -1: none */
    size_t nobj;
    const struct pl_object **objs;
    uint32_t sig;
    const struct pl_prev_unit *prev;
    const char *cause; /* why a previous placement no longer holds */
    int keep;          /* phase 1: previous placement kept */
    char label[17];
    struct pl_decision *d;
};

struct engine {
    const struct pl_input *in;
    struct rc_arena *a;      /* output */
    struct rc_arena s;       /* scratch */
    int bounded;             /* the output keeps a bounded few verdicts of each decision */
    struct pl_verdict *vbuf; /* then: a decision's whole list, reused unit after unit */
    size_t vcap;
    size_t ncl;
    const struct pl_cluster **cl;
    struct pl_labels *clabels;
    size_t npol;
    struct epol *pol;
    size_t nns;
    struct ens *ns;
    size_t nobj;
    const struct pl_object **obj; /* in->objects, sorted by key */
    uint32_t *objidx;             /* objidx[o - in->objects]: o's index in obj */
    int *objpol;
    size_t nunits;
    struct eunit *units;
    size_t nprev;
    const struct pl_prev_unit **prev;
    unsigned char *prev_used;
    struct pl_fit *fit;
    const char **kept_reason; /* per cluster: "kept on <name> (sticky)", made once */
    size_t nwarn, capwarn;
    const char **warn;
    /* scratch for demand items */
    size_t capitems;
    struct pl_demand_item *items;
};

/* ==== Sorting helpers ==== */

static int cmp_cluster(const void *a, const void *b)
{
    return strcmp((*(const struct pl_cluster *const *)a)->name,
                  (*(const struct pl_cluster *const *)b)->name);
}

static int cmp_policy(const void *a, const void *b)
{
    return strcmp(((const struct epol *)a)->p->name, ((const struct epol *)b)->p->name);
}

static int cmp_object(const void *a, const void *b)
{
    return strcmp((*(const struct pl_object *const *)a)->key,
                  (*(const struct pl_object *const *)b)->key);
}

static int cmp_opt_str(const char *a, const char *b)
{
    return strcmp(a ? a : "", b ? b : "");
}

/* By unit; a record listing a unit twice (not ours) still sorts the same whatever its order. */
static int cmp_prev(const void *a, const void *b)
{
    const struct pl_prev_unit *x = *(const struct pl_prev_unit *const *)a;
    const struct pl_prev_unit *y = *(const struct pl_prev_unit *const *)b;
    int c = strcmp(x->unit, y->unit);

    if (c)
        return c;
    if ((c = cmp_opt_str(x->policy, y->policy)) ||
        (c = cmp_opt_str(x->policy_digest, y->policy_digest)))
        return c;
    if (x->state != y->state)
        return x->state < y->state ? -1 : 1;
    if (x->nclusters != y->nclusters)
        return x->nclusters < y->nclusters ? -1 : 1;
    for (size_t i = 0; i < x->nclusters; i++) {
        if ((c = strcmp(x->clusters[i], y->clusters[i])))
            return c;
    }
    return 0;
}

/* By name; a namespace declared twice: the one with fewer, then smaller, labels first. */
static int cmp_ns(const void *a, const void *b)
{
    const struct ens *x = a, *y = b;
    int c = strcmp(x->name, y->name);

    if (c)
        return c;
    if (x->labels->n != y->labels->n)
        return x->labels->n < y->labels->n ? -1 : 1;
    for (size_t i = 0; i < x->labels->n; i++) {
        if ((c = strcmp(x->labels->v[i].key, y->labels->v[i].key)) ||
            (c = strcmp(x->labels->v[i].value, y->labels->v[i].value)))
            return c;
    }
    return 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* "file:line: " for messages about something from the source, "" when it has no file. */
static const char *at(struct engine *e, const char *file, int line)
{
    return file ? rc_arena_printf(e->a, "%s:%d: ", file, line) : "";
}

static void add_warning(struct engine *e, const char *w)
{
    e->warn = rc_xgrow(e->warn, &e->capwarn, e->nwarn + 1, sizeof(*e->warn));
    e->warn[e->nwarn++] = w;
}

static long find_cluster(const struct engine *e, const char *name)
{
    size_t lo = 0, hi = e->ncl;

    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = strcmp(e->cl[mid]->name, name);
        if (c == 0)
            return (long)mid;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

static long find_ns(const struct engine *e, const char *name)
{
    size_t lo = 0, hi = e->nns;

    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = strcmp(e->ns[mid].name, name);
        if (c == 0)
            return (long)mid;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

/* find_ns over objects in key order, where one namespace's objects are adjacent: the last
 * answer is asked for again, and one comparison gives it. */
struct ns_memo {
    const char *name;
    long idx;
};

static long find_ns_memo(const struct engine *e, struct ns_memo *m, const char *name)
{
    if (!m->name || (m->name != name && strcmp(m->name, name))) {
        m->name = name;
        m->idx = find_ns(e, name);
    }
    return m->idx;
}

static const struct pl_prev_unit *find_prev(struct engine *e, const char *unit)
{
    size_t lo = 0, hi = e->nprev;

    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = strcmp(e->prev[mid]->unit, unit);
        if (c == 0) {
            e->prev_used[mid] = 1;
            return e->prev[mid];
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

static int is_present(const struct pl_cluster *c, const char *label)
{
    size_t lo = 0, hi = c->npresent;

    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int r = strcmp(c->present[mid], label);
        if (r == 0)
            return 1;
        if (r < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return 0;
}

/* Labels with kubernetes.io/metadata.name = name ensured (copied only when missing). */
static const struct pl_labels *with_name_label(struct rc_arena *a, const struct pl_labels *l,
                                               const char *name, struct pl_labels *slot)
{
    if (pl_labels_get(l, PL_LABEL_CLUSTER_NAME))
        return l;
    slot->n = l->n;
    slot->v = rc_arena_calloc(a, l->n + 1, sizeof(*slot->v));
    if (l->n)
        memcpy(slot->v, l->v, l->n * sizeof(*l->v));
    pl_labels_set(slot, a, PL_LABEL_CLUSTER_NAME, name);
    return slot;
}

/* ==== Setup ==== */

static int setup_clusters(struct engine *e, struct rc_err *err)
{
    const struct pl_input *in = e->in;

    e->ncl = in->nclusters;
    e->cl = rc_arena_calloc(&e->s, e->ncl + 1, sizeof(*e->cl));
    for (size_t i = 0; i < e->ncl; i++)
        e->cl[i] = &in->clusters[i];
    rc_sort(e->cl, e->ncl, sizeof(*e->cl), cmp_cluster);
    e->clabels = rc_arena_calloc(&e->s, e->ncl + 1, sizeof(*e->clabels));
    for (size_t i = 0; i < e->ncl; i++) {
        if (i > 0 && !strcmp(e->cl[i - 1]->name, e->cl[i]->name))
            return rc_err_set(err, RC_EINVALID, "duplicate cluster '%s'", e->cl[i]->name);
        e->clabels[i] = *with_name_label(&e->s, &e->cl[i]->labels, e->cl[i]->name, &e->clabels[i]);
    }
    return 0;
}

static int setup_namespaces_and_objects(struct engine *e, struct rc_err *err)
{
    const struct pl_input *in = e->in;
    size_t n = 0, cap = in->nnamespaces + in->nobjects + 1;
    struct ens *all = rc_arena_calloc(&e->s, cap, sizeof(*all));
    struct ns_memo memo = {NULL, -1};

    e->nobj = in->nobjects;
    e->obj = rc_arena_calloc(&e->s, e->nobj + 1, sizeof(*e->obj));
    for (size_t i = 0; i < e->nobj; i++)
        e->obj[i] = &in->objects[i];
    rc_sort(e->obj, e->nobj, sizeof(*e->obj), cmp_object);
    e->objidx = rc_arena_calloc(&e->s, e->nobj + 1, sizeof(*e->objidx));
    for (size_t i = 0; i < e->nobj; i++)
        e->objidx[e->obj[i] - in->objects] = (uint32_t)i;
    for (size_t i = 1; i < e->nobj; i++) {
        if (!strcmp(e->obj[i - 1]->key, e->obj[i]->key))
            return rc_err_set(err, RC_EINVALID, "duplicate object '%s'", e->obj[i]->key);
    }
    for (size_t i = 0; i < e->nobj; i++) {
        const struct pl_object *o = e->obj[i];
        if (o->warning)
            add_warning(e, rc_arena_printf(e->a, "%s%s", at(e, o->file, o->line), o->warning));
    }
    /* declared namespaces first (sorted), then names only objects mention */
    for (size_t i = 0; i < in->nnamespaces; i++) {
        struct pl_labels *slot = rc_arena_calloc(&e->s, 1, sizeof(*slot));
        all[n].name = in->namespaces[i].name;
        all[n].labels = with_name_label(&e->s, &in->namespaces[i].labels, all[n].name, slot);
        n++;
    }
    rc_sort(all, n, sizeof(*all), cmp_ns);
    {
        size_t w = 0;
        for (size_t i = 0; i < n; i++) {
            if (w == 0 || strcmp(all[w - 1].name, all[i].name))
                all[w++] = all[i]; /* a repeated Namespace: the first by name order */
        }
        n = w;
    }
    e->ns = all;
    e->nns = n; /* find_ns looks at the declared ones only while undeclared ones are added */
    for (size_t i = 0; i < e->nobj; i++) {
        const char *ns = e->obj[i]->ns;
        /* objects are sorted by key, so one namespace's objects are adjacent */
        if (ns && find_ns_memo(e, &memo, ns) < 0 && (n == e->nns || strcmp(all[n - 1].name, ns))) {
            struct pl_labels *l = rc_arena_calloc(&e->s, 1, sizeof(*l));
            pl_labels_set(l, &e->s, PL_LABEL_CLUSTER_NAME, ns);
            all[n].name = ns;
            all[n].labels = l;
            n++;
        }
    }
    /* undeclared names are unique and distinct from declared ones: one sort merges them */
    rc_sort(all, n, sizeof(*all), cmp_ns);
    e->nns = n;
    return 0;
}

static int ordered_priority(const struct pl_policy *p, const struct pl_labels *l)
{
    for (size_t i = 0; i < p->ordered.n; i++) {
        const struct pl_requirement *r = &p->ordered.req[i];
        const char *v;
        if (r->op != PL_OP_IN)
            continue;
        v = pl_labels_get(l, r->key);
        for (size_t j = 0; v && j < r->nvalues; j++) {
            if (!strcmp(r->values[j], v))
                return (int)j;
        }
        return INT32_MAX;
    }
    return 0;
}

struct candkey {
    uint32_t idx;
    int prio;
};

static int cand_before(const struct engine *e, const struct candkey *x, const struct candkey *y)
{
    const struct pl_cluster *a = e->cl[x->idx], *b = e->cl[y->idx];
    int as = a->autoscaler != PL_AUTOSCALER_NONE, bs = b->autoscaler != PL_AUTOSCALER_NONE;

    if (x->prio != y->prio)
        return x->prio < y->prio;
    if (as != bs)
        return as < bs;
    if (a->cost_micro != b->cost_micro)
        return a->cost_micro < b->cost_micro;
    return x->idx < y->idx; /* clusters are sorted by name */
}

/* A percentageSplit value that no selected cluster has would lose its share: it goes to the
 * other values instead (decide_divide), and the policy is warned about once per pass. */
static void warn_split_values(struct engine *e, const struct epol *ep)
{
    const struct pl_policy *p = ep->p;
    const char *tk = p->topology_key ? p->topology_key : PL_LABEL_CLUSTER_NAME;

    for (size_t s = 0; p->spread == PL_SPREAD_DIVIDE && s < p->nsplits; s++) {
        int found = 0;
        for (size_t x = 0; x < ep->ncand && !found; x++) {
            const char *v = pl_labels_get(&e->clabels[ep->cand[x]], tk);
            found = v && !strcmp(v, p->splits[s].value);
        }
        if (found || p->splits[s].percent <= 0)
            continue;
        add_warning(e, rc_arena_printf(e->a,
                                       "%spolicy '%s': percentageSplit gives %" PRId64
                                       "%% to %s '%s', which no cluster the policy selects "
                                       "has; that share goes to the other values",
                                       at(e, p->file, p->line), p->name, p->splits[s].percent, tk,
                                       p->splits[s].value));
    }
}

struct uentry {
    const char *id;
    uint32_t obj;
};

static int cmp_uentry(const void *a, const void *b)
{
    const struct uentry *x = a, *y = b;
    int c = strcmp(x->id, y->id);
    if (c)
        return c;
    return x->obj < y->obj ? -1 : x->obj > y->obj;
}

/* The annotation that places o (nova.elotl.co/cluster wins over spread-onto), or NULL. */
static const char *annotation_of(const struct pl_object *o, const char **value)
{
    if (o->nova_cluster) {
        *value = o->nova_cluster;
        return PL_ANNOTATION_CLUSTER;
    }
    if (o->nova_spread_onto) {
        *value = o->nova_spread_onto;
        return PL_ANNOTATION_SPREAD_ONTO;
    }
    return NULL;
}

/* "<annotation>=<value>": the name of the policy standing for an annotation. */
static const char *annotation_policy_name(struct engine *e, const struct pl_object *o)
{
    const char *v = NULL, *k = annotation_of(o, &v);
    return k ? rc_arena_printf(e->a, "%s=%s", k, v) : NULL; /* decisions point to it */
}

/* A policy standing for a Nova placement annotation: clusterSelector In the named clusters
 * (comma-separated for spread-onto, which divides evenly over them, as Nova does). */
static struct pl_policy *annotation_policy(struct engine *e, const struct pl_object *o,
                                           const char *name)
{
    struct pl_policy *p = rc_arena_calloc(&e->s, 1, sizeof(*p));
    const char *v = NULL, *k = annotation_of(o, &v);
    struct pl_requirement *r = rc_arena_calloc(&e->s, 1, sizeof(*r));
    size_t n = 1, len = strlen(v);
    const char **vals;

    for (size_t i = 0; i < len; i++)
        n += v[i] == ',';
    vals = rc_arena_calloc(&e->s, n, sizeof(*vals));
    n = 0;
    if (!strcmp(k, PL_ANNOTATION_CLUSTER)) {
        vals[n++] = v; /* one cluster name, exactly as written */
    } else {
        for (size_t i = 0; i <= len; i++) {
            size_t j = i, b, t;
            while (j < len && v[j] != ',')
                j++;
            for (b = i; b < j && v[b] == ' '; b++)
                ;
            for (t = j; t > b && v[t - 1] == ' '; t--)
                ;
            if (t > b)
                vals[n++] = rc_arena_strndup(&e->s, v + b, t - b);
            i = j;
        }
    }
    p->name = name;
    p->has_cluster_selector = 1;
    p->cluster_selector.n = 1;
    p->cluster_selector.req = r;
    r->key = PL_LABEL_CLUSTER_NAME;
    r->op = PL_OP_IN;
    r->nvalues = n;
    r->values = vals;
    p->spread = strcmp(k, PL_ANNOTATION_SPREAD_ONTO) ? PL_SPREAD_NONE : PL_SPREAD_DIVIDE;
    p->file = o->file;
    p->line = o->line;
    return p;
}

static void setup_policies(struct engine *e)
{
    const struct pl_input *in = e->in;
    struct candkey *ck = rc_arena_calloc(&e->s, e->ncl + 1, sizeof(*ck));
    size_t nsyn = 0, nann = 0;
    struct uentry *ann = rc_arena_calloc(&e->s, e->nobj + 1, sizeof(*ann));
    const char **names = rc_arena_calloc(&e->s, e->nobj + 1, sizeof(*names));
    const struct pl_object **first = rc_arena_calloc(&e->s, e->nobj + 1, sizeof(*first));

    /* one policy per distinct annotation and value, made from its first object by key */
    for (size_t i = 0; i < e->nobj; i++) {
        const char *name = annotation_policy_name(e, e->obj[i]);
        if (name) {
            ann[nann].id = name;
            ann[nann++].obj = (uint32_t)i;
        }
    }
    rc_sort(ann, nann, sizeof(*ann), cmp_uentry);
    for (size_t i = 0; i < nann; i++) {
        if (nsyn && !strcmp(names[nsyn - 1], ann[i].id))
            continue;
        names[nsyn] = ann[i].id;
        first[nsyn++] = e->obj[ann[i].obj];
    }
    e->npol = in->npolicies + nsyn;
    e->pol = rc_arena_calloc(&e->s, e->npol + 1, sizeof(*e->pol));
    for (size_t i = 0; i < in->npolicies; i++)
        e->pol[i].p = &in->policies[i];
    for (size_t k = 0; k < nsyn; k++) {
        struct epol *ep = &e->pol[in->npolicies + k];
        const char *v = NULL;
        ep->p = annotation_policy(e, first[k], names[k]);
        ep->annot = annotation_of(first[k], &v);
    }
    rc_sort(e->pol, e->npol, sizeof(*e->pol), cmp_policy);
    for (size_t i = 0; i < e->npol; i++) {
        struct epol *ep = &e->pol[i];
        const struct pl_policy *p = ep->p;
        size_t n = 0;

        ep->ns_ok = rc_arena_calloc(&e->s, e->nns + 1, 1);
        for (size_t k = 0; k < e->nns; k++)
            ep->ns_ok[k] =
                (unsigned char)pl_selector_matches(&p->namespace_selector, e->ns[k].labels);
        ep->sel = rc_arena_calloc(&e->s, e->ncl + 1, 1);
        ep->why = rc_arena_calloc(&e->s, e->ncl + 1, 1);
        for (size_t c = 0; c < e->ncl; c++) {
            const struct pl_labels *l = &e->clabels[c];
            if (p->has_cluster_selector && !pl_selector_matches(&p->cluster_selector, l)) {
                ep->why[c] = 1;
                continue;
            }
            if (p->has_ordered && !pl_selector_matches(&p->ordered, l)) {
                ep->why[c] = 2;
                continue;
            }
            ep->sel[c] = 1;
            ck[n].idx = (uint32_t)c;
            ck[n].prio = p->has_ordered ? ordered_priority(p, l) : 0;
            n++;
        }
        /* insertion sort: deterministic and fine for fleet sizes */
        for (size_t x = 1; x < n; x++) {
            struct candkey v = ck[x];
            size_t y = x;
            while (y > 0 && cand_before(e, &v, &ck[y - 1])) {
                ck[y] = ck[y - 1];
                y--;
            }
            ck[y] = v;
        }
        ep->ncand = n;
        ep->cand = rc_arena_calloc(&e->s, n + 1, sizeof(*ep->cand));
        for (size_t x = 0; x < n; x++)
            ep->cand[x] = ck[x].idx;
        warn_split_values(e, ep);
    }
}

static int labels_match_any(const struct pl_policy *p, const struct pl_labels *l)
{
    for (size_t i = 0; i < p->nresource_selectors; i++) {
        if (pl_selector_matches(&p->resource_selectors[i], l))
            return 1;
    }
    return 0;
}

/* Object i is placed by its annotation's policy; `policy` (may be NULL) is the first
 * SchedulePolicy that also matches it, which the annotation overrides. */
static void assign_annotation(struct engine *e, size_t i, const char *policy)
{
    const struct pl_object *o = e->obj[i];
    const char *name = annotation_policy_name(e, o), *value = NULL;
    const char *key = annotation_of(o, &value);
    size_t lo = 0, hi = e->npol;
    const struct epol *ep = NULL;

    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = strcmp(e->pol[mid].p->name, name);
        if (c == 0) {
            ep = &e->pol[mid];
            e->objpol[i] = (int)mid;
            break;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (o->nova_cluster && o->nova_spread_onto)
        add_warning(e, rc_arena_printf(e->a, "%sobject '%s' has both %s and %s; %s wins",
                                       at(e, o->file, o->line), o->key, PL_ANNOTATION_CLUSTER,
                                       PL_ANNOTATION_SPREAD_ONTO, PL_ANNOTATION_CLUSTER));
    if (policy)
        add_warning(e, rc_arena_printf(e->a,
                                       "%sobject '%s' matches policy '%s', but its "
                                       "annotation %s places it instead",
                                       at(e, o->file, o->line), o->key, policy, key));
    for (size_t r = 0; ep && r < ep->p->cluster_selector.req[0].nvalues; r++) {
        const char *c = ep->p->cluster_selector.req[0].values[r];
        if (find_cluster(e, c) < 0)
            add_warning(e, rc_arena_printf(e->a,
                                           "%sobject '%s': annotation %s names cluster "
                                           "'%s', which is not in the fleet",
                                           at(e, o->file, o->line), o->key, key, c));
    }
}

/* The policy that governed each object in the previous record, by object key. */
struct incumbent {
    const char *key;
    const char *policy;
};

static int cmp_incumbent(const void *a, const void *b)
{
    return strcmp(((const struct incumbent *)a)->key, ((const struct incumbent *)b)->key);
}

static struct incumbent *incumbents(struct engine *e, size_t *n)
{
    size_t total = 0, w = 0;
    struct incumbent *v;

    for (size_t u = 0; u < e->in->nprev; u++) {
        if (e->in->prev[u].policy)
            total += e->in->prev[u].nobjects;
    }
    v = rc_arena_calloc(&e->s, total + 1, sizeof(*v));
    for (size_t u = 0; u < e->in->nprev; u++) {
        const struct pl_prev_unit *p = &e->in->prev[u];
        for (size_t k = 0; p->policy && k < p->nobjects; k++) {
            v[w].key = p->objects[k];
            v[w++].policy = p->policy;
        }
    }
    rc_sort(v, w, sizeof(*v), cmp_incumbent);
    *n = w;
    return v;
}

static const char *incumbent_of(const struct incumbent *v, size_t n, const char *key)
{
    size_t lo = 0, hi = n;

    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = strcmp(v[mid].key, key);
        if (c == 0)
            return v[mid].policy;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* The governing policy of every object. Nova documents no rule for an object several
 * policies match. Ours: the policy that governed it in the previous record keeps it while it
 * still matches (a newly pushed, overlapping policy never takes other teams' objects over);
 * otherwise the smallest name. Either way the overlap is warned. */
/* Whether policy k may govern object o (in namespace ns, -1: cluster-scoped), the
 * annotation aside. */
static int policy_matches(const struct engine *e, size_t k, long ns, const struct pl_object *o)
{
    const struct epol *ep = &e->pol[k];

    if (ep->annot)
        return 0;
    if (ns >= 0 && !ep->ns_ok[ns])
        return 0; /* cluster-scoped objects match any namespaceSelector */
    return labels_match_any(ep->p, &o->labels);
}

static void assign_policies(struct engine *e)
{
    size_t ninc = 0;
    const struct incumbent *inc = NULL; /* built when an object first matches two policies */
    struct ns_memo memo = {NULL, -1};

    e->objpol = rc_arena_calloc(&e->s, e->nobj + 1, sizeof(*e->objpol));
    for (size_t i = 0; i < e->nobj; i++) {
        const struct pl_object *o = e->obj[i];
        long ns = o->ns ? find_ns_memo(e, &memo, o->ns) : -1;
        int first = -1, kept = -1, nmatch = 0;
        const char *names[3] = {NULL, NULL, NULL}, *avalue = NULL;

        for (size_t k = 0; k < e->npol; k++) {
            if (!policy_matches(e, k, ns, o))
                continue;
            if (first < 0)
                first = (int)k;
            if (nmatch < 3)
                names[nmatch] = e->pol[k].p->name;
            nmatch++;
        }
        if (nmatch >= 2) {
            /* the policy that governed it before, when it still matches */
            const char *was;
            if (!inc)
                inc = incumbents(e, &ninc);
            was = incumbent_of(inc, ninc, o->key);
            for (size_t k = 0; was && k < e->npol && kept < 0; k++) {
                if (policy_matches(e, k, ns, o) && !strcmp(e->pol[k].p->name, was))
                    kept = (int)k;
            }
        }
        if (annotation_of(o, &avalue)) {
            assign_annotation(e, i, nmatch ? names[0] : NULL);
            continue;
        }
        if (nmatch >= 2 && kept >= 0 && kept != first) {
            e->objpol[i] = kept;
            add_warning(e,
                        rc_arena_printf(e->a,
                                        "%sobject '%s' matches %d policies ('%s', '%s'%s); "
                                        "'%s' keeps it (it governed the object before; a "
                                        "newly matching policy does not take it over)",
                                        at(e, o->file, o->line), o->key, nmatch, names[0], names[1],
                                        nmatch > 2 ? ", ..." : "", e->pol[kept].p->name));
            continue;
        }
        e->objpol[i] = first;
        if (nmatch == 2)
            add_warning(e, rc_arena_printf(e->a,
                                           "%sobject '%s' matches policies '%s' and '%s'; "
                                           "'%s' wins (the smallest name)",
                                           at(e, o->file, o->line), o->key, names[0], names[1],
                                           names[0]));
        else if (nmatch > 2)
            add_warning(e, rc_arena_printf(e->a,
                                           "%sobject '%s' matches %d policies ('%s', '%s', "
                                           "...); '%s' wins (the smallest name)",
                                           at(e, o->file, o->line), o->key, nmatch, names[0],
                                           names[1], names[0]));
    }
}

static void build_units(struct engine *e)
{
    struct uentry *ue = rc_arena_calloc(&e->s, e->nobj + 1, sizeof(*ue));
    size_t nu = 0;

    for (size_t i = 0; i < e->nobj; i++) {
        const struct pl_object *o = e->obj[i];
        int p = e->objpol[i];
        const char *gb = p >= 0 ? e->pol[p].p->group_by : NULL;
        const char *v = gb ? pl_labels_get(&o->labels, gb) : NULL;

        ue[i].obj = (uint32_t)i;
        if (v) {
            const char *parts[3] = {e->pol[p].p->name, o->ns ? o->ns : "_cluster", v};
            ue[i].id = rc_arena_join(e->a, '/', parts, 3);
        } else
            ue[i].id = o->key;
    }
    rc_sort(ue, e->nobj, sizeof(*ue), cmp_uentry);
    e->units = rc_arena_calloc(&e->s, e->nobj + 1, sizeof(*e->units));
    for (size_t i = 0; i < e->nobj;) {
        size_t j = i;
        struct eunit *u = &e->units[nu++];
        while (j < e->nobj && !strcmp(ue[j].id, ue[i].id))
            j++;
        u->id = ue[i].id;
        u->pol = e->objpol[ue[i].obj];
        u->nobj = j - i;
        u->objs = rc_arena_calloc(e->a, u->nobj, sizeof(*u->objs));
        for (size_t k = i; k < j; k++)
            u->objs[k - i] = e->obj[ue[k].obj];
        pl_unit_label(u->id, u->label);
        i = j;
    }
    e->nunits = nu;
}

/* The pods target t of a Divide runs of a pod entry of o (count: all of the entry's pods). */
static int64_t divided_count(const struct pl_object *o, int64_t count,
                             const struct pl_target *targets, size_t n, size_t t)
{
    struct pl_share sh;

    pl_divide_object(&sh, o, targets, n, t);
    if (!sh.present)
        return 0;
    switch (pl_split_of(o)) {
    case PL_SPLIT_REPLICAS:
        return o->replicas > 0 ? count * sh.replicas / o->replicas : 0;
    case PL_SPLIT_JOB:
        if (count == 0)
            return 0; /* suspended */
        return sh.completions >= 0 && sh.completions < sh.parallelism ? sh.completions
                                                                      : sh.parallelism;
    default:
        return count;
    }
}

/* Demand of a unit; Divide passes its targets and the one (t) to take the share of
 * (targets NULL: all of it). */
static uint32_t unit_sig(struct engine *e, const struct eunit *u, const struct pl_target *targets,
                         size_t ntargets, size_t t)
{
    size_t n = 0;

    for (size_t i = 0; i < u->nobj; i++)
        n += u->objs[i]->npods;
    e->items = rc_xgrow(e->items, &e->capitems, n + 1, sizeof(*e->items));
    n = 0;
    for (size_t i = 0; i < u->nobj; i++) {
        const struct pl_object *o = u->objs[i];
        for (size_t k = 0; k < o->npods; k++) {
            int64_t c = o->pods[k].count;
            if (targets)
                c = divided_count(o, c, targets, ntargets, t);
            e->items[n].pod = &o->pods[k];
            e->items[n].count = c;
            n++;
        }
    }
    return pl_fit_sig(e->fit, e->items, n);
}

/* ==== Decisions ==== */

static const char *autoscaler_name(enum pl_autoscaler a)
{
    switch (a) {
    case PL_AUTOSCALER_CLUSTER_AUTOSCALER:
        return "cluster-autoscaler";
    case PL_AUTOSCALER_LUNA:
        return "luna";
    default:
        return "none";
    }
}

/* Why cluster `name` can no longer hold a unit of policy ep (NULL: it still can). */
static const char *cluster_cause(struct engine *e, const struct epol *ep, const char *name)
{
    long c = find_cluster(e, name);

    if (c < 0)
        return rc_arena_printf(e->a, "cluster '%s' was removed", name);
    if (!ep->sel[c])
        return rc_arena_printf(e->a, "cluster '%s' no longer matches the policy's %s", name,
                               ep->why[c] == 2 ? "orderedClusterSelector" : "clusterSelector");
    return NULL;
}

/* Seconds as people write them: "45s", "12m", "1h5m", "2h0m30s". */
static const char *span(struct rc_arena *a, int64_t s)
{
    int64_t h = s / 3600, m = s % 3600 / 60, sec = s % 60;

    if (h && sec)
        return rc_arena_printf(a, "%" PRId64 "h%" PRId64 "m%" PRId64 "s", h, m, sec);
    if (h && m)
        return rc_arena_printf(a, "%" PRId64 "h%" PRId64 "m", h, m);
    if (h)
        return rc_arena_printf(a, "%" PRId64 "h", h);
    if (m && sec)
        return rc_arena_printf(a, "%" PRId64 "m%" PRId64 "s", m, sec);
    if (m)
        return rc_arena_printf(a, "%" PRId64 "m", m);
    return rc_arena_printf(a, "%" PRId64 "s", sec);
}

/* Re-placement the policy opted into: why the unit should leave cluster `name` (NULL: it
 * stays). Never while its pods are observed there; the room is judged by the observed
 * numbers (allocatable minus what runs), before anything is committed this pass. */
static const char *replacement_cause(struct engine *e, const struct eunit *u,
                                     const struct pl_policy *p, const char *name)
{
    long ci = find_cluster(e, name);
    const struct pl_cluster *cl;
    struct pl_verdict v;

    if (ci < 0)
        return NULL;
    cl = e->cl[ci];
    if (!cl->reachable) {
        if (p->replace_unreachable_after <= 0 ||
            cl->unreachable_for <= p->replace_unreachable_after)
            return NULL;
        return rc_arena_printf(e->a,
                               "cluster '%s' unreachable for %s (grace %s, policy '%s'; "
                               "rightplace.dev/replace-unreachable-after)",
                               name, span(e->a, cl->unreachable_for),
                               span(e->a, p->replace_unreachable_after), p->name);
    }
    if (!p->replace_when_full || is_present(cl, u->label))
        return NULL;
    memset(&v, 0, sizeof(v));
    pl_fit_verdict(e->fit, u->sig, (size_t)ci, &v, e->a);
    if (v.kind != PL_VERDICT_DOES_NOT_FIT)
        return NULL;
    return rc_arena_printf(e->a,
                           "cluster '%s' no longer has room for it (%s) and its pods are not "
                           "running there; policy '%s' allows re-placement "
                           "(rightplace.dev/replace-when-full)",
                           name, v.detail ? v.detail : "does not fit", p->name);
}

/* Does the previous placement still hold? Sets u->cause when not. */
static void sticky_check(struct engine *e, struct eunit *u)
{
    const struct pl_prev_unit *pv = u->prev;
    const struct epol *ep = &e->pol[u->pol];
    const struct pl_policy *p = ep->p;

    if (!pv || pv->state != PL_STATE_PLACED || pv->nclusters == 0)
        return;
    if (pv->policy && strcmp(pv->policy, p->name)) {
        u->cause = rc_arena_printf(e->a, "now governed by policy '%s' instead of '%s'", p->name,
                                   pv->policy);
        return;
    }
    if (pv->policy_digest && p->digest && strcmp(pv->policy_digest, p->digest)) {
        u->cause = rc_arena_printf(e->a, "policy '%s' changed", p->name);
        return;
    }
    if (p->spread != PL_SPREAD_NONE) {
        u->keep = 1; /* targets are recomputed; the previous ones are preferred */
        return;
    }
    if (pv->nclusters != 1) {
        u->cause = rc_arena_printf(e->a, "policy '%s' places a unit on one cluster", p->name);
        return;
    }
    u->cause = cluster_cause(e, ep, pv->clusters[0]);
    if (!u->cause)
        u->cause = replacement_cause(e, u, p, pv->clusters[0]);
    u->keep = u->cause == NULL;
}

static int prev_has(const struct pl_prev_unit *pv, const char *cluster)
{
    for (size_t i = 0; pv && i < pv->nclusters; i++) {
        if (!strcmp(pv->clusters[i], cluster))
            return 1;
    }
    return 0;
}

static void verdict_at(struct engine *e, const struct eunit *u, uint32_t sig, size_t c,
                       struct pl_verdict *v)
{
    const struct pl_cluster *cl = e->cl[c];

    memset(v, 0, sizeof(*v));
    v->cluster = cl->name;
    if (!cl->reachable) {
        v->kind = PL_VERDICT_UNREACHABLE;
        v->detail = "cluster could not be observed";
        return;
    }
    /* Its pods run there already (in the nodes' requests): it fits as it is. Also when the
     * unit is being placed afresh, so that its own pods do not count against it. */
    if (prev_has(u->prev, cl->name) && is_present(cl, u->label)) {
        v->kind = PL_VERDICT_FITS_NOW;
        v->detail = "pods observed on the cluster";
        return;
    }
    pl_fit_verdict(e->fit, sig, c, v, e->a);
}

static void take(struct engine *e, const struct eunit *u, uint32_t sig, size_t c)
{
    const struct pl_cluster *cl = e->cl[c];

    if (!cl->reachable || is_present(cl, u->label))
        return;
    pl_fit_commit(e->fit, sig, c);
}

static int cmp_target(const void *a, const void *b)
{
    return strcmp(((const struct pl_target *)a)->cluster, ((const struct pl_target *)b)->cluster);
}

/* Room for n verdicts, zeroed. When the output keeps every verdict (pl_options without
 * bounds), in the output arena; else in the engine's one buffer, from which settle_verdicts
 * keeps a few (or keep_whole all) once the unit is decided. So a pass holds one unit's
 * verdicts at a time, not the units times the clusters (a million verdicts at 10,000 units
 * on 100 clusters). */
static struct pl_verdict *verdict_room(struct engine *e, size_t n)
{
    if (!e->bounded)
        return rc_arena_calloc(e->a, n + 1, sizeof(struct pl_verdict));
    e->vbuf = rc_xgrow(e->vbuf, &e->vcap, n + 1, sizeof(*e->vbuf));
    memset(e->vbuf, 0, (n + 1) * sizeof(*e->vbuf));
    return e->vbuf;
}

static void decide_kept(struct engine *e, struct eunit *u)
{
    struct pl_decision *d = u->d;
    const char *c0 = u->prev->clusters[0];
    long ci = find_cluster(e, c0); /* sticky_check made sure it exists */

    d->state = PL_STATE_PLACED;
    d->ntargets = 1;
    d->targets = rc_arena_calloc(e->a, 1, sizeof(*d->targets));
    d->targets[0].cluster = e->cl[ci]->name;
    d->targets[0].percent = 100;
    d->nverdicts = 1;
    d->verdicts = verdict_room(e, 1);
    if (!e->cl[ci]->reachable || is_present(e->cl[ci], u->label)) {
        verdict_at(e, u, u->sig, (size_t)ci, &d->verdicts[0]);
        take(e, u, u->sig, (size_t)ci);
    } else {
        /* verdict_at and take in one packing */
        d->verdicts[0].cluster = e->cl[ci]->name;
        pl_fit_verdict_commit(e->fit, u->sig, (size_t)ci, &d->verdicts[0], e->a);
    }
    /* the same words for every unit kept on the cluster: one string */
    if (!e->kept_reason)
        e->kept_reason = rc_arena_calloc(&e->s, e->ncl + 1, sizeof(*e->kept_reason));
    if (!e->kept_reason[ci])
        e->kept_reason[ci] = rc_arena_printf(e->a, "kept on %s (sticky)", c0);
    d->reason = e->kept_reason[ci];
}

static const char *no_candidate_reason(struct engine *e, const struct epol *ep)
{
    if (e->ncl == 0)
        return "no clusters in the fleet";
    if (ep->annot)
        return rc_arena_printf(e->a, "annotation %s names no cluster of the fleet", ep->annot);
    return rc_arena_printf(e->a, "no cluster matches the policy's %s",
                           ep->p->has_ordered && !ep->p->has_cluster_selector
                               ? "orderedClusterSelector"
                               : "clusterSelector");
}

static void decide_single(struct engine *e, struct eunit *u)
{
    struct pl_decision *d = u->d;
    const struct epol *ep = &e->pol[u->pol];
    long fn = -1, su = -1;
    size_t nreach = 0;

    d->nverdicts = ep->ncand;
    d->verdicts = verdict_room(e, ep->ncand);
    for (size_t i = 0; i < ep->ncand; i++) {
        struct pl_verdict *v = &d->verdicts[i];
        verdict_at(e, u, u->sig, ep->cand[i], v);
        if (v->kind == PL_VERDICT_FITS_NOW && fn < 0)
            fn = (long)i;
        if (v->kind == PL_VERDICT_FITS_AFTER_SCALE_UP && su < 0)
            su = (long)i;
        nreach += v->kind != PL_VERDICT_UNREACHABLE;
    }
    if (ep->ncand == 0) {
        d->state = PL_STATE_PENDING;
        d->reason = rc_arena_printf(e->a, "%s; retried every pass", no_candidate_reason(e, ep));
        return;
    }
    if (fn >= 0 || su >= 0 || (ep->ncand == 1 && nreach == 1)) {
        long pick = fn >= 0 ? fn : su >= 0 ? su : 0;
        const struct pl_cluster *cl = e->cl[ep->cand[pick]];
        d->state = PL_STATE_PLACED;
        d->ntargets = 1;
        d->targets = rc_arena_calloc(e->a, 1, sizeof(*d->targets));
        d->targets[0].cluster = cl->name;
        d->targets[0].percent = 100;
        if (fn >= 0)
            d->reason = rc_arena_printf(e->a, "fits now on %s", cl->name);
        else if (su >= 0 && d->verdicts[su].nodes_added > 0)
            d->reason = rc_arena_printf(e->a,
                                        "no cluster fits now; %s's autoscaler (%s) can add "
                                        "%" PRId64 " node%s",
                                        cl->name, autoscaler_name(cl->autoscaler),
                                        d->verdicts[su].nodes_added,
                                        d->verdicts[su].nodes_added == 1 ? "" : "s");
        else if (su >= 0)
            d->reason = rc_arena_printf(e->a,
                                        "no cluster fits now; fits on nodes %s's autoscaler (%s) "
                                        "is adding for earlier units",
                                        cl->name, autoscaler_name(cl->autoscaler));
        else
            d->reason = rc_arena_printf(e->a,
                                        "%s is the only cluster the policy selects; it has no "
                                        "room now, so pods will wait there (fill, no spill)",
                                        cl->name);
        take(e, u, u->sig, ep->cand[pick]);
        return;
    }
    d->state = PL_STATE_PENDING;
    if (nreach == 0 && ep->ncand == 1)
        d->reason = rc_arena_printf(e->a,
                                    "%s, the only cluster the policy selects, is unreachable; "
                                    "retried every pass",
                                    e->cl[ep->cand[0]]->name);
    else if (nreach == 0)
        d->reason = "every candidate cluster is unreachable; retried every pass";
    else
        d->reason = rc_arena_printf(e->a,
                                    "no cluster fits now or after scale-up (%zu candidate%s); "
                                    "retried every pass",
                                    ep->ncand, ep->ncand == 1 ? "" : "s");
}

static void decide_duplicate(struct engine *e, struct eunit *u)
{
    struct pl_decision *d = u->d;
    const struct epol *ep = &e->pol[u->pol];
    size_t nt = 0, nroom = 0;

    d->nverdicts = ep->ncand;
    d->verdicts = verdict_room(e, ep->ncand);
    d->targets = rc_arena_calloc(e->a, ep->ncand + 1, sizeof(*d->targets));
    for (size_t i = 0; i < ep->ncand; i++) {
        const struct pl_cluster *cl = e->cl[ep->cand[i]];
        struct pl_verdict *v = &d->verdicts[i];
        verdict_at(e, u, u->sig, ep->cand[i], v);
        if (cl->reachable || (u->keep && prev_has(u->prev, cl->name))) {
            d->targets[nt].cluster = cl->name;
            d->targets[nt].percent = 100;
            nt++;
            if (v->kind == PL_VERDICT_DOES_NOT_FIT)
                nroom++;
        }
    }
    for (size_t i = 0; i < ep->ncand; i++)
        take(e, u, u->sig, ep->cand[i]);
    rc_sort(d->targets, nt, sizeof(*d->targets), cmp_target);
    d->ntargets = nt;
    if (nt == 0) {
        d->state = PL_STATE_PENDING;
        d->reason =
            ep->ncand ? "every selected cluster is unreachable; retried every pass"
                      : rc_arena_printf(e->a, "%s; retried every pass", no_candidate_reason(e, ep));
        return;
    }
    d->state = PL_STATE_PLACED;
    d->reason = rc_arena_printf(
        e->a, "duplicated to %zu cluster%s (spreadMode Duplicate)%s", nt, nt == 1 ? "" : "s",
        nroom ? rc_arena_printf(e->a, "; %zu of them have no room now", nroom) : "");
}

struct domain {
    const char *value;
    int64_t percent;
};

static int cmp_domain(const void *a, const void *b)
{
    return strcmp(((const struct domain *)a)->value, ((const struct domain *)b)->value);
}

static void decide_divide(struct engine *e, struct eunit *u)
{
    struct pl_decision *d = u->d;
    const struct epol *ep = &e->pol[u->pol];
    const struct pl_policy *p = ep->p;
    const char *tk = p->topology_key ? p->topology_key : PL_LABEL_CLUSTER_NAME;
    size_t nd = 0, nt = 0, ndt = 0;
    struct domain *dom = rc_arena_calloc(&e->s, p->nsplits + ep->ncand + 1, sizeof(*dom));
    long *cdom = rc_arena_calloc(&e->s, ep->ncand + 1, sizeof(*cdom));
    long *dk;
    struct pl_target *dt;
    uint32_t *dsig;
    char missing[200] = "";

    if (p->nsplits) {
        for (size_t i = 0; i < p->nsplits; i++) {
            dom[nd].value = p->splits[i].value;
            dom[nd].percent = p->splits[i].percent;
            nd++;
        }
    } else {
        for (size_t i = 0; i < ep->ncand; i++) {
            const char *v = pl_labels_get(&e->clabels[ep->cand[i]], tk);
            if (v)
                dom[nd++].value = v;
        }
    }
    rc_sort(dom, nd, sizeof(*dom), cmp_domain);
    {
        size_t w = 0;
        for (size_t i = 0; i < nd; i++) {
            if (w == 0 || strcmp(dom[w - 1].value, dom[i].value))
                dom[w++] = dom[i];
        }
        nd = w;
    }
    if (!p->nsplits) { /* an even split: 34/33/33, the extra points to the first values */
        for (size_t i = 0; i < nd; i++)
            dom[i].percent = 100 / (int64_t)nd + ((int64_t)i < 100 % (int64_t)nd ? 1 : 0);
    }
    for (size_t i = 0; i < ep->ncand; i++) {
        const char *v = pl_labels_get(&e->clabels[ep->cand[i]], tk);
        cdom[i] = -1;
        for (size_t k = 0; v && k < nd; k++) {
            if (!strcmp(dom[k].value, v))
                cdom[i] = (long)k;
        }
    }
    /* The domains that will get a target: a positive percent and a cluster that is reachable
     * or keeps the unit. Their percents are the weights the replicas are shared by, so a
     * value without a cluster passes its share to the others instead of losing it. */
    dk = rc_arena_calloc(&e->s, nd + 1, sizeof(*dk));
    dt = rc_arena_calloc(&e->s, nd + 1, sizeof(*dt));
    for (size_t k = 0; k < nd; k++) {
        dk[k] = -1;
        for (size_t i = 0; dom[k].percent > 0 && i < ep->ncand && dk[k] < 0; i++) {
            const struct pl_cluster *cl = e->cl[ep->cand[i]];
            if (cdom[i] == (long)k && (cl->reachable || (u->keep && prev_has(u->prev, cl->name)))) {
                dk[k] = (long)ndt;
                dt[ndt].domain = dom[k].value;
                dt[ndt].percent = dom[k].percent;
                ndt++;
            }
        }
    }
    dsig = rc_arena_calloc(&e->s, nd + 1, sizeof(*dsig));
    for (size_t k = 0; k < nd; k++) {
        if (dk[k] >= 0)
            dsig[k] = unit_sig(e, u, dt, ndt, (size_t)dk[k]);
    }
    d->verdicts = verdict_room(e, ep->ncand);
    for (size_t i = 0; i < ep->ncand; i++) {
        if (cdom[i] < 0 || dom[cdom[i]].percent <= 0)
            continue;
        /* a domain with no target has only unreachable clusters: the sig is not read */
        verdict_at(e, u, dsig[cdom[i]], ep->cand[i], &d->verdicts[d->nverdicts++]);
    }
    d->targets = rc_arena_calloc(e->a, nd + 1, sizeof(*d->targets));
    for (size_t k = 0; k < nd; k++) {
        long pick = -1, fn = -1, su = -1, first = -1;
        size_t vi = 0;
        if (dom[k].percent <= 0)
            continue;
        for (size_t i = 0; i < ep->ncand; i++) {
            const struct pl_cluster *cl = e->cl[ep->cand[i]];
            const struct pl_verdict *v;
            if (cdom[i] < 0 || dom[cdom[i]].percent <= 0)
                continue;
            v = &d->verdicts[vi++];
            if (cdom[i] != (long)k)
                continue;
            if (u->keep && prev_has(u->prev, cl->name) && pick < 0)
                pick = (long)i;
            if (!cl->reachable)
                continue;
            if (first < 0)
                first = (long)i;
            if (fn < 0 && v->kind == PL_VERDICT_FITS_NOW)
                fn = (long)i;
            if (su < 0 && v->kind == PL_VERDICT_FITS_AFTER_SCALE_UP)
                su = (long)i;
        }
        if (pick < 0)
            pick = fn >= 0 ? fn : su >= 0 ? su : first;
        if (pick < 0) {
            size_t len = strlen(missing);
            snprintf(missing + len, sizeof(missing) - len, "%s'%s'", len ? ", " : "", dom[k].value);
            continue;
        }
        d->targets[nt].cluster = e->cl[ep->cand[pick]]->name;
        d->targets[nt].percent = dom[k].percent;
        d->targets[nt].domain = dom[k].value;
        nt++;
        take(e, u, dsig[k], ep->cand[pick]);
    }
    rc_sort(d->targets, nt, sizeof(*d->targets), cmp_target);
    d->ntargets = nt;
    if (nt == 0) {
        d->state = PL_STATE_PENDING;
        d->reason =
            ep->ncand ? rc_arena_printf(e->a,
                                        "no reachable cluster for any topology value of "
                                        "'%s'; retried every pass",
                                        tk)
                      : rc_arena_printf(e->a, "%s; retried every pass", no_candidate_reason(e, ep));
        return;
    }
    d->state = PL_STATE_PLACED;
    {
        char buf[400];
        size_t len = 0;
        for (size_t i = 0; i < nt && len < sizeof(buf); i++) {
            int n = snprintf(buf + len, sizeof(buf) - len, "%s%s %" PRId64 "%%", i ? ", " : "",
                             d->targets[i].cluster, d->targets[i].percent);
            if (n < 0)
                break;
            len += (size_t)n;
        }
        if (len >= sizeof(buf))
            len = sizeof(buf) - 1;
        buf[len] = 0;
        d->reason = rc_arena_printf(e->a, "divided by percentage (largest remainder): %s%s%s%s",
                                    buf, missing[0] ? "; no reachable cluster for " : "", missing,
                                    missing[0] ? ", so its share goes to the others" : "");
    }
    /* objects that make pods but have nothing to share run on one target only: say so */
    for (size_t k = 0; nt > 1 && k < u->nobj; k++) {
        const struct pl_object *o = u->objs[k];
        struct pl_share sh;
        if (pl_split_of(o) != PL_SPLIT_WHOLE)
            continue;
        for (size_t t = 0; t < nt; t++) {
            pl_divide_object(&sh, o, d->targets, nt, t);
            if (!sh.present)
                continue;
            add_warning(e, rc_arena_printf(e->a,
                                           "%s%s '%s' has no replica count to divide; "
                                           "it runs whole on %s only, not on every cluster "
                                           "(spreadMode Divide of policy '%s')",
                                           at(e, o->file, o->line), o->kind, o->key,
                                           d->targets[t].cluster, p->name));
        }
    }
}

/* ==== Dependencies follow ==== */

struct edge {
    uint32_t follower; /* object index */
    uint32_t unit;     /* index of a unit referencing it */
};

static int cmp_edge(const void *x, const void *y)
{
    const struct edge *a = x, *b = y;
    if (a->follower != b->follower)
        return a->follower < b->follower ? -1 : 1;
    return a->unit < b->unit ? -1 : a->unit > b->unit;
}

static long find_object(const struct engine *e, const char *key)
{
    size_t lo = 0, hi = e->nobj;

    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = strcmp(e->obj[mid]->key, key);
        if (c == 0)
            return (long)mid;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

/* Objects every namespace has without anyone writing them. */
static int made_by_kubernetes(const char *key)
{
    const char *slash = strchr(key, '/');
    return slash && (!strcmp(slash, "/ConfigMap/kube-root-ca.crt") ||
                     !strcmp(slash, "/ServiceAccount/default"));
}

static int cmp_cstr(const void *x, const void *y)
{
    return strcmp(*(const char *const *)x, *(const char *const *)y);
}

/* An object no policy places that a placed unit's pod templates reference (its ConfigMaps,
 * Secrets, ServiceAccount, PVCs) goes to every cluster those units go to; references to
 * objects that are not in the source are warned about (optional ones, the namespace's
 * default ServiceAccount and kube-root-ca.crt are not). */
static void follow_dependencies(struct engine *e)
{
    uint32_t *objunit = rc_arena_calloc(&e->s, e->nobj + 1, sizeof(*objunit));
    struct edge *edges = NULL;
    size_t nedges = 0, capedges = 0;

    for (size_t i = 0; i < e->nunits; i++) {
        for (size_t k = 0; k < e->units[i].nobj; k++)
            objunit[e->objidx[e->units[i].objs[k] - e->in->objects]] = (uint32_t)i;
    }
    for (size_t i = 0; i < e->nunits; i++) {
        const struct eunit *u = &e->units[i];
        if (u->pol < 0)
            continue;
        for (size_t k = 0; k < u->nobj; k++) {
            const struct pl_object *o = u->objs[k];
            for (size_t r = 0; r < o->nrefs; r++) {
                long ri = find_object(e, o->refs[r].key);
                if (ri < 0) {
                    if (!o->refs[r].optional && !made_by_kubernetes(o->refs[r].key))
                        add_warning(e, rc_arena_printf(e->a,
                                                       "%sobject '%s' references '%s', which is "
                                                       "not in the source",
                                                       at(e, o->file, o->line), o->key,
                                                       o->refs[r].key));
                    continue;
                }
                if (e->objpol[ri] >= 0)
                    continue; /* a policy places it itself */
                edges = rc_xgrow(edges, &capedges, nedges + 1, sizeof(*edges));
                edges[nedges].follower = (uint32_t)ri;
                edges[nedges].unit = (uint32_t)i;
                nedges++;
            }
        }
    }
    if (nedges)
        rc_sort(edges, nedges, sizeof(*edges), cmp_edge);
    for (size_t i = 0; i < nedges;) {
        size_t j = i, nc = 0, npending = 0;
        struct eunit *fu = &e->units[objunit[edges[i].follower]];
        struct pl_decision *d = fu->d;
        const char **cl;
        char by[300] = "";
        size_t len = 0, nby = 0;

        while (j < nedges && edges[j].follower == edges[i].follower)
            j++;
        for (size_t k = i; k < j; k++)
            nc += e->units[edges[k].unit].d->ntargets;
        cl = rc_arena_calloc(&e->s, nc + 1, sizeof(*cl));
        nc = 0;
        for (size_t k = i; k < j; k++) {
            const struct pl_decision *rd = e->units[edges[k].unit].d;
            if (k > i && edges[k].unit == edges[k - 1].unit)
                continue;
            if (rd->state == PL_STATE_PENDING)
                npending++;
            for (size_t t = 0; rd->state == PL_STATE_PLACED && t < rd->ntargets; t++)
                cl[nc++] = rd->targets[t].cluster;
            if (nby++ < 3 && len < sizeof(by)) {
                int w = snprintf(by + len, sizeof(by) - len, "%s%s", len ? ", " : "", rd->unit);
                len += w > 0 ? (size_t)w : 0;
            }
        }
        if (nby > 3 && len < sizeof(by))
            snprintf(by + len, sizeof(by) - len, " and %zu more", nby - 3);
        if (nc)
            rc_sort(cl, nc, sizeof(*cl), cmp_cstr);
        d->ntargets = 0;
        d->targets = rc_arena_calloc(e->a, nc + 1, sizeof(*d->targets));
        for (size_t k = 0; k < nc; k++) {
            if (k && !strcmp(cl[k], cl[k - 1]))
                continue;
            d->targets[d->ntargets].cluster = cl[k];
            d->targets[d->ntargets].percent = 100;
            d->ntargets++;
        }
        if (d->ntargets) {
            d->state = PL_STATE_PLACED;
            d->reason = rc_arena_printf(e->a, "follows %s (its pod templates reference it)", by);
        } else if (npending) {
            d->state = PL_STATE_PENDING;
            d->reason = rc_arena_printf(e->a, "follows %s, which is not placed yet", by);
        }
        i = j;
    }
    free(edges);
}

/* ==== Changes ==== */

static int same_clusters(const struct pl_decision *d, const struct pl_prev_unit *pv)
{
    const char **pc;
    int same = 1;

    if (d->ntargets != pv->nclusters)
        return 0;
    if (d->ntargets == 0)
        return 1;
    pc = rc_xcalloc(pv->nclusters, sizeof(*pc));
    memcpy(pc, pv->clusters, pv->nclusters * sizeof(*pc));
    rc_sort(pc, pv->nclusters, sizeof(*pc), cmp_str);
    for (size_t i = 0; i < d->ntargets; i++) {
        if (strcmp(pc[i], d->targets[i].cluster)) {
            same = 0;
            break;
        }
    }
    free(pc);
    return same;
}

static const char *derive_cause(struct engine *e, const struct eunit *u)
{
    const struct pl_decision *d = u->d;
    const struct pl_prev_unit *pv = u->prev;
    const struct epol *ep = u->pol >= 0 ? &e->pol[u->pol] : NULL;

    for (size_t i = 0; i < pv->nclusters; i++) {
        int found = 0;
        for (size_t k = 0; k < d->ntargets; k++)
            found |= !strcmp(d->targets[k].cluster, pv->clusters[i]);
        if (!found) {
            const char *c = ep ? cluster_cause(e, ep, pv->clusters[i]) : NULL;
            return c ? c
                     : rc_arena_printf(e->a, "cluster '%s' is no longer a target", pv->clusters[i]);
        }
    }
    for (size_t k = 0; k < d->ntargets; k++) {
        if (!prev_has(pv, d->targets[k].cluster))
            return rc_arena_printf(e->a, "cluster '%s' is newly selected by the policy",
                                   d->targets[k].cluster);
    }
    return NULL;
}

static void set_change(struct engine *e, struct eunit *u)
{
    struct pl_decision *d = u->d;
    const struct pl_prev_unit *pv = u->prev;
    int same;

    if (!pv) {
        d->change = PL_CHANGE_NEW;
        return;
    }
    same = same_clusters(d, pv);
    if (d->state == pv->state && same) {
        d->change = PL_CHANGE_NONE;
        return;
    }
    if (d->state == PL_STATE_PLACED && pv->state == PL_STATE_PLACED) {
        d->change = PL_CHANGE_MOVED;
        d->cause = u->cause ? u->cause : derive_cause(e, u);
        if (!d->cause)
            d->cause = "placement recomputed";
        return;
    }
    d->change = PL_CHANGE_STATE;
    d->cause = u->cause;
    if (!d->cause && pv->state == PL_STATE_PLACED && u->pol < 0)
        d->cause = "no SchedulePolicy matches it any more";
}

/* ==== pl_place ==== */

int pl_override_names(const struct pl_override *o, const struct pl_object *x)
{
    return !strcmp(o->kind, x->kind) && !strcmp(o->name, x->name) &&
           (!o->api_version || !strcmp(o->api_version, x->api_version)) &&
           (!o->ns || (x->ns && !strcmp(o->ns, x->ns)));
}

/* The overrides of the unit's policy that apply to its objects on its targets (render applies
 * the same ones: rd_output.c). */
static void list_overrides(struct engine *e, struct eunit *u)
{
    struct pl_decision *d = u->d;
    const struct pl_policy *p = e->pol[u->pol].p;
    const char *tk = p->topology_key ? p->topology_key : PL_LABEL_CLUSTER_NAME;
    size_t n = 0, cap = 0;
    const char **v = NULL;

    for (size_t t = 0; t < d->ntargets; t++) {
        long ci = find_cluster(e, d->targets[t].cluster);
        const char *tv = d->targets[t].domain;
        if (!tv && ci >= 0)
            tv = pl_labels_get(&e->clabels[ci], tk);
        for (size_t k = 0; tv && k < p->noverrides; k++) {
            const struct pl_override *o = &p->overrides[k];
            if (strcmp(o->topology_value, tv))
                continue;
            for (size_t j = 0; j < u->nobj; j++) {
                if (!pl_override_names(o, u->objs[j]))
                    continue;
                if (n == cap) {
                    const char **nv = rc_arena_calloc(e->a, cap ? cap * 2 : 4, sizeof(*nv));
                    if (n)
                        memcpy(nv, v, n * sizeof(*v));
                    v = nv;
                    cap = cap ? cap * 2 : 4;
                }
                v[n++] = rc_arena_printf(e->a, "%s: %s %s = %s", d->targets[t].cluster,
                                         u->objs[j]->key, o->field_path, o->value_json);
            }
        }
    }
    d->noverrides = n;
    d->overrides = v;
}

static void decide(struct engine *e, struct eunit *u)
{
    const struct epol *ep = &e->pol[u->pol];
    const struct pl_policy *p = ep->p;

    if (u->keep && p->spread == PL_SPREAD_NONE)
        decide_kept(e, u);
    else if (p->spread == PL_SPREAD_DUPLICATE)
        decide_duplicate(e, u);
    else if (p->spread == PL_SPREAD_DIVIDE)
        decide_divide(e, u);
    else
        decide_single(e, u);
    if (p->noverrides && u->d->state == PL_STATE_PLACED)
        list_overrides(e, u);
    if (ep->annot && strncmp(u->d->reason, "annotation ", 11)) /* no SchedulePolicy did */
        u->d->reason = rc_arena_printf(e->a, "annotation %s: %s", ep->annot, u->d->reason);
}

/* ==== Bounded verdicts ==== */

static int cmp_target_name(const void *key, const void *t)
{
    return strcmp(key, ((const struct pl_target *)t)->cluster);
}

static int is_target(const struct pl_decision *d, const char *cluster)
{
    if (d->state != PL_STATE_PLACED)
        return 0;
    return bsearch(cluster, d->targets, d->ntargets, sizeof(*d->targets), cmp_target_name) != NULL;
}

size_t pl_verdicts_select(unsigned char *keep, size_t counts[4], const struct pl_decision *d,
                          size_t chosen, size_t passed)
{
    size_t nchosen = 0, npassed = 0, last_target = 0, omitted = 0;
    int placed = 0;

    memset(counts, 0, 4 * sizeof(*counts));
    for (size_t i = 0; i < d->nverdicts; i++) {
        keep[i] = (unsigned char)is_target(d, d->verdicts[i].cluster); /* for the loop below */
        if (keep[i]) {
            last_target = i;
            placed = 1;
        }
    }
    for (size_t i = 0; i < d->nverdicts; i++) {
        const struct pl_verdict *v = &d->verdicts[i];
        int target = keep[i];

        keep[i] = 0;
        if ((unsigned)v->kind < 4)
            counts[v->kind]++;
        if (target && nchosen < chosen) {
            keep[i] = 1;
            nchosen++;
        } else if (!target && (!placed || i < last_target) && npassed < passed) {
            keep[i] = 1;
            npassed++;
        }
        omitted += !keep[i];
    }
    return omitted;
}

/* d's verdicts (in the engine's buffer, verdict_room) into the output arena: those
 * pl_verdicts_select keeps, with the counts. Nothing after decide changes what the selection
 * reads of a decided unit (its state and targets: follow_dependencies sets those of units no
 * policy governs, which have no verdicts), nor what set_change reads. */
static void settle_verdicts(struct engine *e, struct pl_decision *d)
{
    const struct pl_options *o = &e->in->opts;
    struct pl_verdict *v = d->verdicts;
    unsigned char small[128], *keep = small;
    size_t n = 0;

    if (!v)
        return;
    if (d->nverdicts > sizeof(small))
        keep = rc_xcalloc(d->nverdicts, 1);
    d->verdicts_omitted =
        pl_verdicts_select(keep, d->verdict_counts, d, o->verdicts_chosen, o->verdicts_passed);
    d->verdicts = rc_arena_calloc(e->a, d->nverdicts - d->verdicts_omitted + 1, sizeof(*v));
    for (size_t i = 0; i < d->nverdicts; i++) {
        if (!d->verdicts_omitted || keep[i])
            d->verdicts[n++] = v[i];
    }
    d->nverdicts = n;
    if (!d->verdicts_omitted)
        memset(d->verdict_counts, 0, sizeof(d->verdict_counts));
    if (keep != small)
        free(keep);
}

/* d's whole list (in the engine's buffer) into the output arena. */
static void keep_whole(struct engine *e, struct pl_decision *d)
{
    struct pl_verdict *v = rc_arena_calloc(e->a, d->nverdicts + 1, sizeof(*v));

    if (d->nverdicts)
        memcpy(v, d->verdicts, d->nverdicts * sizeof(*v));
    d->verdicts = v;
}

int pl_place(struct pl_result *out, const struct pl_input *in, struct rc_arena *a,
             struct rc_err *err)
{
    struct engine e;
    int error = 0;
    size_t nremoved = 0, nd = 0;

    memset(out, 0, sizeof(*out));
    memset(&e, 0, sizeof(e));
    e.in = in;
    e.a = a;
    e.bounded = in->opts.verdicts_chosen || in->opts.verdicts_passed;
    if (!in->res || in->res->n < PL_RES_FIRST_EXTENDED || in->res->n > PL_RES_MAX)
        return rc_err_set(err, RC_EINVALID, "resource table must hold 3 to %d names", PL_RES_MAX);
    if ((error = setup_clusters(&e, err)) < 0)
        goto done;
    if ((error = setup_namespaces_and_objects(&e, err)) < 0)
        goto done;
    setup_policies(&e);
    for (size_t i = 1; i < e.npol; i++) {
        if (!strcmp(e.pol[i - 1].p->name, e.pol[i].p->name)) {
            error = rc_err_set(err, RC_EINVALID, "duplicate policy '%s'", e.pol[i].p->name);
            goto done;
        }
    }
    assign_policies(&e);
    build_units(&e);

    e.nprev = in->nprev;
    e.prev = rc_arena_calloc(&e.s, e.nprev + 1, sizeof(*e.prev));
    e.prev_used = rc_arena_calloc(&e.s, e.nprev + 1, 1);
    for (size_t i = 0; i < e.nprev; i++)
        e.prev[i] = &in->prev[i];
    rc_sort(e.prev, e.nprev, sizeof(*e.prev), cmp_prev);

    e.fit = pl_fit_new(in->res, e.cl, e.ncl);
    for (size_t i = 0; i < e.nunits; i++) {
        struct eunit *u = &e.units[i];
        struct pl_decision *d = rc_arena_calloc(a, 1, sizeof(*d));
        u->d = d;
        d->unit = u->id;
        d->nobjects = u->nobj;
        d->objects = u->objs;
        d->object_keys = rc_arena_calloc(a, u->nobj, sizeof(*d->object_keys));
        for (size_t k = 0; k < u->nobj; k++)
            d->object_keys[k] = u->objs[k]->key;
        u->prev = find_prev(&e, u->id);
        if (u->pol < 0) {
            d->state = PL_STATE_UNPLACED;
            d->reason = "no SchedulePolicy matches";
            continue;
        }
        d->policy = e.pol[u->pol].p->name;
        d->policy_digest = e.pol[u->pol].p->digest;
        u->sig = unit_sig(&e, u, NULL, 0, 0);
        sticky_check(&e, u);
    }
    /* committed placements first, then everything else; each in unit-id order */
    for (int phase = 1; phase <= 2; phase++) {
        for (size_t i = 0; i < e.nunits; i++) {
            struct eunit *u = &e.units[i];
            if (u->pol < 0 || (phase == 1) != (u->keep != 0))
                continue;
            decide(&e, u);
            /* nothing later changes what set_change and the selection read of this unit */
            set_change(&e, u);
            if (e.bounded && in->opts.verdicts_whole_if_changed && u->d->change != PL_CHANGE_NONE)
                keep_whole(&e, u->d);
            else if (e.bounded)
                settle_verdicts(&e, u->d);
        }
    }
    follow_dependencies(&e);
    for (size_t i = 0; i < e.nunits; i++) {
        if (e.units[i].pol < 0) /* decided by follow_dependencies, or unplaced */
            set_change(&e, &e.units[i]);
    }

    for (size_t i = 0; i < e.nprev; i++)
        nremoved += !e.prev_used[i];
    out->decisions = rc_arena_calloc(a, e.nunits + nremoved + 1, sizeof(*out->decisions));
    {
        size_t ui = 0, pi = 0;
        while (ui < e.nunits || pi < e.nprev) {
            while (pi < e.nprev && e.prev_used[pi])
                pi++;
            if (pi < e.nprev && (ui == e.nunits || strcmp(e.prev[pi]->unit, e.units[ui].id) < 0)) {
                const struct pl_prev_unit *pv = e.prev[pi++];
                struct pl_decision *d = &out->decisions[nd++];
                d->unit = pv->unit;
                d->policy = pv->policy;
                d->policy_digest = pv->policy_digest;
                /* no live objects: objects is NULL, object_keys holds the old keys */
                d->nobjects = pv->nobjects;
                d->objects = NULL;
                d->object_keys = pv->objects;
                d->state = pv->state;
                d->reason = "its objects are no longer in the source";
                d->change = PL_CHANGE_REMOVED;
                continue;
            }
            if (ui < e.nunits)
                out->decisions[nd++] = *e.units[ui++].d;
        }
    }
    out->ndecisions = nd;

    out->nwarnings = e.nwarn;
    out->warnings = rc_arena_calloc(a, e.nwarn + 1, sizeof(*out->warnings));
    if (e.nwarn)
        memcpy(out->warnings, e.warn, e.nwarn * sizeof(*e.warn));
    out->nusage = e.ncl;
    out->usage = rc_arena_calloc(a, e.ncl + 1, sizeof(*out->usage));
    for (size_t i = 0; i < e.ncl; i++) {
        out->usage[i].cluster = e.cl[i]->name;
        pl_fit_usage(e.fit, i, &out->usage[i]);
    }

done:
    out->scratch_held = rc_arena_held(&e.s) + e.vcap * sizeof(*e.vbuf);
    pl_fit_free(e.fit);
    free(e.vbuf);
    free(e.warn);
    free(e.items);
    rc_arena_release(&e.s);
    if (error < 0)
        memset(out, 0, sizeof(*out));
    return error;
}
