/*
 * fuzz_pl_place.c - pl_place on fleets, policies, units and previous records built from the
 * fuzzer's bytes. Checks that it never crashes, never commits more than a cluster without an
 * autoscaler has free, and decides the same twice.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pl_basics.h"
#include "pl_engine.h"
#include "rc_arena.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct src {
    const uint8_t *p;
    size_t n;
};

static unsigned take(struct src *s, unsigned mod)
{
    unsigned v = 0;
    if (s->n) {
        v = *s->p++;
        s->n--;
    }
    return mod ? v % mod : v;
}

static const char *names[] = {"a", "b", "c", "d"};
static const char *apps[] = {"x", "y", "z"};
static struct pl_taint taint = {"gpu", "true", "NoSchedule"};
static struct pl_toleration tol = {"gpu", 1, "", ""};

static void build(struct pl_input *in, struct src *s, struct rc_arena *a, struct pl_resnames *res)
{
    size_t ncl = take(s, 4) + 1, npol = take(s, 3) + 1, nobj = take(s, 12), nprev = take(s, 4);
    struct pl_cluster *cl = rc_arena_calloc(a, ncl, sizeof(*cl));
    struct pl_policy *pol = rc_arena_calloc(a, npol, sizeof(*pol));
    struct pl_object *obj = rc_arena_calloc(a, nobj + 1, sizeof(*obj));
    struct pl_prev_unit *pv = rc_arena_calloc(a, nprev + 1, sizeof(*pv));

    pl_resnames_init(res);
    pl_resnames_intern(res, a, "gpu");
    for (size_t i = 0; i < ncl; i++) {
        struct pl_cluster *c = &cl[i];
        c->name = names[i];
        c->reachable = take(s, 5) != 0;
        pl_labels_set(&c->labels, a, PL_LABEL_CLUSTER_NAME, c->name);
        pl_labels_set(&c->labels, a, "k", apps[take(s, 3)]);
        c->cost_micro = take(s, 3);
        c->nnodes = take(s, 5);
        c->nodes = rc_arena_calloc(a, c->nnodes + 1, sizeof(*c->nodes));
        for (size_t k = 0; k < c->nnodes; k++) {
            struct pl_node *n = &c->nodes[k];
            n->name = rc_arena_printf(a, "n%zu", (k * 7) % c->nnodes + k * 100);
            n->allocatable.v[0] = take(s, 9) * 1000;
            n->allocatable.v[1] = take(s, 9) * 1000;
            n->allocatable.v[2] = take(s, 4) * 1000;
            n->allocatable.v[3] = take(s, 2) * 1000;
            n->requested.v[0] = take(s, 3) * 500;
            n->unschedulable = take(s, 6) == 0;
            if (take(s, 3) == 0) {
                n->ntaints = 1;
                n->taints = &taint;
            }
            if (take(s, 2))
                pl_labels_set(&n->labels, a, "disk", "ssd");
        }
        if (take(s, 3) == 0) {
            c->autoscaler = PL_AUTOSCALER_LUNA;
            c->nshapes = take(s, 3);
            c->any_shape = c->nshapes == 0;
            c->shapes = rc_arena_calloc(a, c->nshapes + 1, sizeof(*c->shapes));
            for (size_t k = 0; k < c->nshapes; k++) {
                c->shapes[k].name = names[k];
                c->shapes[k].max = (int64_t)take(s, 4) - 1;
                c->shapes[k].cost_micro = take(s, 3);
                c->shapes[k].allocatable.v[0] = take(s, 9) * 1000;
                c->shapes[k].allocatable.v[1] = take(s, 9) * 1000;
                if (take(s, 2)) {
                    c->shapes[k].ntaints = 1;
                    c->shapes[k].taints = &taint;
                }
            }
            if (c->nnodes && c->nshapes)
                c->nodes[0].shape = c->shapes[0].name;
        }
    }
    for (size_t i = 0; i < npol; i++) {
        struct pl_policy *p = &pol[i];
        p->name = rc_arena_printf(a, "p%zu", i);
        p->digest = take(s, 2) ? "1" : "2";
        p->nresource_selectors = 1;
        p->resource_selectors = rc_arena_calloc(a, 1, sizeof(*p->resource_selectors));
        p->resource_selectors[0].n = 1;
        p->resource_selectors[0].req = rc_arena_calloc(a, 1, sizeof(struct pl_requirement));
        p->resource_selectors[0].req[0].key = "app";
        p->resource_selectors[0].req[0].op = PL_OP_IN;
        p->resource_selectors[0].req[0].nvalues = 1;
        p->resource_selectors[0].req[0].values = &apps[take(s, 3)];
        if (take(s, 2)) {
            p->has_cluster_selector = 1;
            p->cluster_selector.n = 1;
            p->cluster_selector.req = rc_arena_calloc(a, 1, sizeof(struct pl_requirement));
            p->cluster_selector.req[0].key = "k";
            p->cluster_selector.req[0].op = PL_OP_IN;
            p->cluster_selector.req[0].nvalues = 2;
            p->cluster_selector.req[0].values = &apps[take(s, 2)];
        }
        if (take(s, 2)) {
            p->has_ordered = 1;
            p->ordered.n = 1;
            p->ordered.req = rc_arena_calloc(a, 1, sizeof(struct pl_requirement));
            p->ordered.req[0].key = PL_LABEL_CLUSTER_NAME;
            p->ordered.req[0].op = PL_OP_IN;
            p->ordered.req[0].nvalues = 3;
            p->ordered.req[0].values = &names[take(s, 2)];
        }
        if (take(s, 2))
            p->group_by = "g";
        p->spread = (enum pl_spread)take(s, 3);
        if (p->spread == PL_SPREAD_DIVIDE && take(s, 2)) {
            p->nsplits = 2;
            p->splits = rc_arena_calloc(a, 2, sizeof(*p->splits));
            p->splits[0].value = names[take(s, 4)];
            p->splits[0].percent = take(s, 101);
            p->splits[1].value = names[take(s, 4)];
            p->splits[1].percent = take(s, 101);
        }
    }
    for (size_t i = 0; i < nobj; i++) {
        struct pl_object *o = &obj[i];
        o->ns = take(s, 4) ? (take(s, 2) ? "ns1" : "ns2") : NULL;
        o->kind = "Pod";
        o->name = rc_arena_printf(a, "o%zu", i);
        o->key = o->ns ? rc_arena_printf(a, "%s/Pod/%s", o->ns, o->name)
                       : rc_arena_printf(a, "Pod/%s", o->name);
        o->replicas = (int64_t)take(s, 6) - 1;
        pl_labels_set(&o->labels, a, "app", apps[take(s, 3)]);
        if (take(s, 2))
            pl_labels_set(&o->labels, a, "g", take(s, 2) ? "g1" : "g2");
        o->npods = take(s, 3);
        o->pods = rc_arena_calloc(a, o->npods + 1, sizeof(*o->pods));
        for (size_t k = 0; k < o->npods; k++) {
            struct pl_pod *p = &o->pods[k];
            p->role = take(s, 2) ? "head" : "worker";
            p->count = take(s, 5);
            p->req.v[0] = take(s, 6) * 500;
            p->req.v[1] = take(s, 6) * 500;
            p->req.v[3] = take(s, 3) == 0 ? 1000 : 0;
            if (take(s, 2)) {
                p->ntolerations = 1;
                p->tolerations = &tol;
            }
            if (take(s, 4) == 0)
                pl_labels_set(&p->node_selector, a, "disk", "ssd");
        }
    }
    for (size_t i = 0; i < nprev; i++) {
        struct pl_prev_unit *u = &pv[i];
        u->unit = nobj ? obj[take(s, (unsigned)nobj)].key : "gone/Pod/x";
        u->policy = pol[take(s, (unsigned)npol)].name;
        u->policy_digest = take(s, 2) ? "1" : NULL;
        u->state = (enum pl_state)take(s, 3);
        u->nclusters = take(s, 3);
        u->clusters = rc_arena_calloc(a, u->nclusters + 1, sizeof(char *));
        for (size_t k = 0; k < u->nclusters; k++)
            u->clusters[k] = names[take(s, 4)];
        u->nobjects = 1;
        u->objects = &u->unit;
    }
    /* some units observed where they were */
    for (size_t i = 0; i < nprev && i < ncl; i++) {
        if (take(s, 2) && pv[i].nclusters) {
            char *label = rc_arena_alloc(a, 17);
            pl_unit_label(pv[i].unit, label);
            cl[i].npresent = 1;
            cl[i].present = rc_arena_calloc(a, 1, sizeof(char *));
            cl[i].present[0] = label;
        }
    }
    memset(in, 0, sizeof(*in));
    in->res = res;
    in->nclusters = ncl;
    in->clusters = cl;
    in->npolicies = npol;
    in->policies = pol;
    in->nobjects = nobj;
    in->objects = obj;
    in->nprev = nprev;
    in->prev = pv;
}

static int same(const struct pl_result *x, const struct pl_result *y)
{
    if (x->ndecisions != y->ndecisions || x->nwarnings != y->nwarnings)
        return 0;
    for (size_t i = 0; i < x->ndecisions; i++) {
        const struct pl_decision *a = &x->decisions[i], *b = &y->decisions[i];
        if (strcmp(a->unit, b->unit) || a->state != b->state || a->change != b->change ||
            a->ntargets != b->ntargets || a->nverdicts != b->nverdicts ||
            strcmp(a->reason, b->reason))
            return 0;
        for (size_t k = 0; k < a->ntargets; k++) {
            if (strcmp(a->targets[k].cluster, b->targets[k].cluster) ||
                a->targets[k].percent != b->targets[k].percent)
                return 0;
        }
        for (size_t k = 0; k < a->nverdicts; k++) {
            if (a->verdicts[k].kind != b->verdicts[k].kind ||
                strcmp(a->verdicts[k].detail, b->verdicts[k].detail))
                return 0;
        }
    }
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct rc_arena a = RC_ARENA_INIT;
    struct pl_resnames res;
    struct pl_input in;
    struct pl_result one, two;
    struct rc_err err = RC_ERR_INIT;
    struct src s = {data, size};
    int dup_names = 0;

    build(&in, &s, &a, &res);
    for (size_t i = 0; i < in.nobjects; i++)
        for (size_t k = i + 1; k < in.nobjects; k++)
            dup_names |= !strcmp(in.objects[i].key, in.objects[k].key);
    if (pl_place(&one, &in, &a, &err) < 0) {
        if (!dup_names)
            abort(); /* only contract violations are errors */
        goto done;
    }
    for (size_t i = 0; i < one.nusage; i++) {
        const struct pl_usage *u = &one.usage[i];
        const struct pl_cluster *c = NULL;
        for (size_t k = 0; k < in.nclusters; k++)
            if (!strcmp(in.clusters[k].name, u->cluster))
                c = &in.clusters[k];
        if (!c)
            abort();
        if (c->autoscaler != PL_AUTOSCALER_NONE)
            continue;
        for (int r = 0; r < res.n; r++) {
            int64_t room = 0;
            for (size_t k = 0; k < c->nnodes; k++) {
                const struct pl_node *n = &c->nodes[k];
                int64_t f = n->allocatable.v[r] - n->requested.v[r];
                if (!n->unschedulable && !n->not_ready && f > 0)
                    room += f;
            }
            if (r != PL_RES_PODS && u->committed.v[r] > room)
                abort(); /* overcommitted */
        }
    }
    if (pl_place(&two, &in, &a, &err) < 0 || !same(&one, &two))
        abort();
done:
    rc_arena_release(&a);
    return 0;
}
