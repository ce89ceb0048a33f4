/*
 * test_pl_engine.c - the placement engine on inputs built in C: fit, verdicts, choices,
 * stickiness, spread, changes, determinism.
 */
#include "th.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pl_basics.h"
#include "pl_engine.h"
#include "rc_arena.h"
#include "rc_buf.h"

#define GPU 3
#define CPU(x) ((int64_t)(x)*1000)
#define GI(x) ((int64_t)(x)*1073741824000LL)

struct fx {
    struct rc_arena a;
    struct pl_resnames res;
    size_t ncl, nobj, npol, nns, nprev;
    struct pl_cluster cl[64];
    struct pl_object obj[256];
    struct pl_policy pol[16];
    struct pl_namespace ns[16];
    struct pl_prev_unit prev[64];
    struct pl_input in;
    struct pl_result out;
};

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));
    pl_resnames_init(&f->res);
    assert_int_equal(pl_resnames_intern(&f->res, &f->a, "nvidia.com/gpu"), GPU);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    rc_arena_release(&f->a);
    free(f);
    return 0;
}

/* ---- builders ---- */

static struct pl_cluster *cluster(struct fx *f, const char *name)
{
    struct pl_cluster *c = &f->cl[f->ncl++];
    memset(c, 0, sizeof(*c));
    c->name = name;
    c->reachable = 1;
    pl_labels_set(&c->labels, &f->a, PL_LABEL_CLUSTER_NAME, name);
    return c;
}

static void clabel(struct fx *f, struct pl_cluster *c, const char *k, const char *v)
{
    pl_labels_set(&c->labels, &f->a, k, v);
}

static struct pl_taint *gpu_taint(struct fx *f)
{
    struct pl_taint *t = rc_arena_calloc(&f->a, 1, sizeof(*t));
    t->key = "nvidia.com/gpu";
    t->value = "true";
    t->effect = "NoSchedule";
    return t;
}

/* count nodes of cpu/mem(Gi)/gpu; gpu nodes are tainted */
static void nodes(struct fx *f, struct pl_cluster *c, const char *prefix, int count, int cpu,
                  int mem, int gpu)
{
    struct pl_node *n = rc_arena_calloc(&f->a, c->nnodes + (size_t)count, sizeof(*n));
    if (c->nnodes)
        memcpy(n, c->nodes, c->nnodes * sizeof(*n));
    for (int i = 0; i < count; i++) {
        struct pl_node *x = &n[c->nnodes + (size_t)i];
        x->name = rc_arena_printf(&f->a, "%s-%d", prefix, i);
        x->allocatable.v[0] = CPU(cpu);
        x->allocatable.v[1] = GI(mem);
        x->allocatable.v[2] = CPU(110);
        x->allocatable.v[GPU] = CPU(gpu);
        if (gpu) {
            x->ntaints = 1;
            x->taints = gpu_taint(f);
        }
    }
    c->nodes = n;
    c->nnodes += (size_t)count;
}

static struct pl_shape *shape(struct fx *f, struct pl_cluster *c, const char *name, int64_t max,
                              int cpu, int mem, int gpu, int64_t cost)
{
    struct pl_shape *s = rc_arena_calloc(&f->a, c->nshapes + 1, sizeof(*s));
    if (c->nshapes)
        memcpy(s, c->shapes, c->nshapes * sizeof(*s));
    c->shapes = s;
    s = &s[c->nshapes++];
    s->name = name;
    s->max = max;
    s->cost_micro = cost;
    s->allocatable.v[0] = CPU(cpu);
    s->allocatable.v[1] = GI(mem);
    s->allocatable.v[2] = CPU(110);
    s->allocatable.v[GPU] = CPU(gpu);
    if (gpu) {
        s->ntaints = 1;
        s->taints = gpu_taint(f);
    }
    if (!c->autoscaler)
        c->autoscaler = PL_AUTOSCALER_LUNA;
    return s;
}

static struct pl_selector *sel1(struct fx *f, const char *k, enum pl_op op, const char *v1,
                                const char *v2)
{
    struct pl_selector *s = rc_arena_calloc(&f->a, 1, sizeof(*s));
    s->n = 1;
    s->req = rc_arena_calloc(&f->a, 1, sizeof(*s->req));
    s->req[0].key = k;
    s->req[0].op = op;
    s->req[0].values = rc_arena_calloc(&f->a, 2, sizeof(char *));
    if (v1)
        s->req[0].values[s->req[0].nvalues++] = v1;
    if (v2)
        s->req[0].values[s->req[0].nvalues++] = v2;
    return s;
}

/* a policy selecting objects labelled app=<app> in every namespace */
static struct pl_policy *policy(struct fx *f, const char *name, const char *app)
{
    struct pl_policy *p = &f->pol[f->npol++];
    memset(p, 0, sizeof(*p));
    p->name = name;
    p->digest = "d1";
    p->nresource_selectors = 1;
    p->resource_selectors = sel1(f, "app", PL_OP_IN, app, NULL);
    return p;
}

static void cluster_selector(struct fx *f, struct pl_policy *p, const char *k, const char *v)
{
    p->has_cluster_selector = 1;
    p->cluster_selector = *sel1(f, k, PL_OP_IN, v, NULL);
}

static struct pl_object *object(struct fx *f, const char *ns, const char *kind, const char *name,
                                const char *app)
{
    struct pl_object *o = &f->obj[f->nobj++];
    memset(o, 0, sizeof(*o));
    o->ns = ns;
    o->kind = kind;
    o->name = name;
    o->key = ns ? rc_arena_printf(&f->a, "%s/%s/%s", ns, kind, name)
                : rc_arena_printf(&f->a, "%s/%s", kind, name);
    o->replicas = -1;
    if (app)
        pl_labels_set(&o->labels, &f->a, "app", app);
    return o;
}

static struct pl_pod *pod(struct fx *f, struct pl_object *o, const char *role, uint32_t count,
                          int cpu_milli, int mem_gi, int gpu)
{
    struct pl_pod *p = rc_arena_calloc(&f->a, o->npods + 1, sizeof(*p));
    if (o->npods)
        memcpy(p, o->pods, o->npods * sizeof(*p));
    o->pods = p;
    p = &p[o->npods++];
    p->role = role;
    p->count = count;
    p->req.v[0] = cpu_milli;
    p->req.v[1] = GI(mem_gi);
    p->req.v[GPU] = CPU(gpu);
    if (gpu) {
        p->ntolerations = 1;
        p->tolerations = rc_arena_calloc(&f->a, 1, sizeof(*p->tolerations));
        p->tolerations[0].key = "nvidia.com/gpu";
        p->tolerations[0].exists = 1;
        p->tolerations[0].value = "";
        p->tolerations[0].effect = "NoSchedule";
    }
    return p;
}

static struct pl_prev_unit *prev(struct fx *f, const char *unit, const char *pol,
                                 const char *cluster)
{
    struct pl_prev_unit *p = &f->prev[f->nprev++];
    memset(p, 0, sizeof(*p));
    p->unit = unit;
    p->policy = pol;
    p->policy_digest = "d1";
    p->state = cluster ? PL_STATE_PLACED : PL_STATE_PENDING;
    p->nobjects = 1;
    p->objects = rc_arena_calloc(&f->a, 1, sizeof(char *));
    p->objects[0] = unit;
    if (cluster) {
        p->nclusters = 1;
        p->clusters = rc_arena_calloc(&f->a, 1, sizeof(char *));
        p->clusters[0] = cluster;
    }
    return p;
}

static void run(struct fx *f)
{
    struct rc_err err = RC_ERR_INIT;
    f->in.res = &f->res;
    f->in.nobjects = f->nobj;
    f->in.objects = f->obj;
    f->in.nclusters = f->ncl;
    f->in.clusters = f->cl;
    f->in.npolicies = f->npol;
    f->in.policies = f->pol;
    f->in.nnamespaces = f->nns;
    f->in.namespaces = f->ns;
    f->in.nprev = f->nprev;
    f->in.prev = f->prev;
    if (pl_place(&f->out, &f->in, &f->a, &err) != 0)
        fail_msg("pl_place: %s", err.msg);
}

static const struct pl_decision *dec(struct fx *f, const char *unit)
{
    for (size_t i = 0; i < f->out.ndecisions; i++) {
        if (!strcmp(f->out.decisions[i].unit, unit))
            return &f->out.decisions[i];
    }
    fail_msg("no decision for '%s'", unit);
    return NULL;
}

static const struct pl_verdict *verdict(const struct pl_decision *d, const char *cluster)
{
    for (size_t i = 0; i < d->nverdicts; i++) {
        if (!strcmp(d->verdicts[i].cluster, cluster))
            return &d->verdicts[i];
    }
    fail_msg("no verdict for '%s' in '%s'", cluster, d->unit);
    return NULL;
}

static void assert_contains(const char *s, const char *sub)
{
    if (!s || !strstr(s, sub))
        fail_msg("'%s' does not contain '%s'", s ? s : "(null)", sub);
}

static void assert_on(const struct pl_decision *d, const char *cluster)
{
    assert_int_equal(d->state, PL_STATE_PLACED);
    assert_int_equal(d->ntargets, 1);
    assert_string_equal(d->targets[0].cluster, cluster);
}

/* Every decision as text, for comparing runs. */
static char *dump(const struct pl_result *r)
{
    struct rc_buf b = RC_BUF_INIT;
    for (size_t i = 0; i < r->ndecisions; i++) {
        const struct pl_decision *d = &r->decisions[i];
        rc_buf_printf(&b, NULL, "%s %s %s ch=%d [", d->unit, pl_state_name(d->state),
                      d->reason ? d->reason : "", (int)d->change);
        for (size_t k = 0; k < d->nobjects; k++)
            rc_buf_printf(&b, NULL, "%s ", d->object_keys[k]);
        rc_buf_printf(&b, NULL, "] ->");
        for (size_t k = 0; k < d->ntargets; k++)
            rc_buf_printf(&b, NULL, " %s:%" PRId64, d->targets[k].cluster, d->targets[k].percent);
        for (size_t k = 0; k < d->nverdicts; k++)
            rc_buf_printf(&b, NULL, " {%s %s %s %" PRId64 "}", d->verdicts[k].cluster,
                          pl_verdict_name(d->verdicts[k].kind), d->verdicts[k].detail,
                          d->verdicts[k].nodes_added);
        rc_buf_printf(&b, NULL, "\n");
    }
    for (size_t i = 0; i < r->nwarnings; i++)
        rc_buf_printf(&b, NULL, "W %s\n", r->warnings[i]);
    for (size_t i = 0; i < r->nusage; i++)
        rc_buf_printf(&b, NULL, "U %s %" PRId64 " %" PRId64 " %" PRId64 "\n", r->usage[i].cluster,
                      r->usage[i].committed.v[0], r->usage[i].allocatable.v[0],
                      r->usage[i].nodes_to_add);
    return rc_buf_detach(&b, NULL);
}

/* ---- tests ---- */

static void test_pl_engine__names_and_divide(void **state)
{
    enum pl_state s;
    enum pl_verdict_kind k;
    (void)state;
    assert_string_equal(pl_state_name(PL_STATE_PENDING), "pending");
    assert_int_equal(pl_state_parse(&s, "unplaced"), 0);
    assert_int_equal(s, PL_STATE_UNPLACED);
    assert_int_equal(pl_state_parse(&s, "Placed"), RC_EINVALID);
    assert_string_equal(pl_verdict_name(PL_VERDICT_FITS_AFTER_SCALE_UP), "fits-after-scale-up");
    assert_int_equal(pl_verdict_parse(&k, "unreachable"), 0);
    assert_int_equal(k, PL_VERDICT_UNREACHABLE);
    assert_int_equal(pl_verdict_parse(&k, "fits"), RC_EINVALID);
    assert_int_equal(pl_divide_replicas(5, 70), 3);
    assert_int_equal(pl_divide_replicas(5, 30), 1);
    assert_int_equal(pl_divide_replicas(10, 50), 5);
    assert_int_equal(pl_divide_replicas(0, 50), 0);
    assert_int_equal(pl_divide_replicas(7, 100), 7);
    assert_int_equal(pl_divide_replicas(INT64_MAX, 100), INT64_MAX);
}

static void test_pl_engine__fragmentation_does_not_fit(void **state)
{
    struct fx *f = *state;
    struct pl_cluster *a = cluster(f, "a"), *b = cluster(f, "b");
    const struct pl_decision *d;

    nodes(f, a, "n", 4, 2, 8, 0); /* 8 cpu in sum, no node with 4 */
    nodes(f, b, "n", 4, 2, 8, 0);
    policy(f, "p", "job");
    pod(f, object(f, "ns1", "Pod", "big", "job"), "head", 1, 4000, 1, 0);
    run(f);
    d = dec(f, "ns1/Pod/big");
    assert_int_equal(d->state, PL_STATE_PENDING);
    assert_int_equal(verdict(d, "a")->kind, PL_VERDICT_DOES_NOT_FIT);
    assert_contains(verdict(d, "a")->detail, "head needs cpu 4; best node has 2");
    assert_contains(d->reason, "retried every pass");
    assert_int_equal(d->change, PL_CHANGE_NEW);
}

static void test_pl_engine__partial_gang_counts(void **state)
{
    struct fx *f = *state;
    struct pl_cluster *a = cluster(f, "a"), *b = cluster(f, "b");
    struct pl_object *o;
    const struct pl_decision *d;

    nodes(f, a, "n", 3, 4, 16, 0);
    nodes(f, b, "n", 1, 2, 16, 0);
    policy(f, "p", "job");
    o = object(f, "ns1", "RayCluster", "rc", "job");
    pod(f, o, "worker", 3, 4000, 1, 0);
    pod(f, o, "head", 1, 4000, 1, 0);
    run(f);
    d = dec(f, "ns1/RayCluster/rc");
    assert_int_equal(d->state, PL_STATE_PENDING);
    assert_contains(verdict(d, "a")->detail, "3 of 4 pods fit; ");
    assert_contains(verdict(d, "a")->detail, "needs cpu 4; best node has 0");
    assert_contains(verdict(d, "b")->detail, "needs cpu 4; best node has 2");
}

static void test_pl_engine__gpu_taint(void **state)
{
    struct fx *f = *state;
    struct pl_cluster *cpu = cluster(f, "cpu-only"), *gpu = cluster(f, "gpu");
    struct pl_object *o;
    const struct pl_decision *d;

    nodes(f, cpu, "c", 4, 16, 64, 0);
    nodes(f, gpu, "g", 2, 8, 32, 1);
    policy(f, "p", "job");
    o = object(f, "ns1", "RayJob", "train", "job");
    pod(f, o, "head", 1, 4000, 12, 0);
    pod(f, o, "worker small-group", 2, 4000, 12, 1);
    o = object(f, "ns1", "Deployment", "web", "job");
    pod(f, o, "pod", 1, 1000, 1, 0);
    run(f);
    d = dec(f, "ns1/RayJob/train");
    /* the head (no toleration) cannot use the tainted gpu nodes, the workers need a gpu */
    assert_int_equal(verdict(d, "cpu-only")->kind, PL_VERDICT_DOES_NOT_FIT);
    assert_contains(verdict(d, "cpu-only")->detail,
                    "worker small-group needs nvidia.com/gpu 1; best node has 0");
    assert_int_equal(verdict(d, "gpu")->kind, PL_VERDICT_DOES_NOT_FIT);
    assert_contains(verdict(d, "gpu")->detail,
                    "head: no schedulable node matches its node selector, affinity and "
                    "tolerations");
    /* untainted pods go to cpu nodes */
    assert_on(dec(f, "ns1/Deployment/web"), "cpu-only");
}

static void test_pl_engine__gpu_taint_fits(void **state)
{
    struct fx *f = *state;
    struct pl_cluster *mixed = cluster(f, "mixed");
    struct pl_object *o;
    const struct pl_decision *d;

    cluster(f, "other");
    nodes(f, mixed, "c", 1, 8, 32, 0);
    nodes(f, mixed, "g", 2, 8, 32, 1);
    policy(f, "p", "job");
    o = object(f, "ns1", "RayJob", "train", "job");
    pod(f, o, "head", 1, 4000, 12, 0);
    pod(f, o, "worker small-group", 2, 4000, 12, 1);
    run(f);
    d = dec(f, "ns1/RayJob/train");
    assert_on(d, "mixed");
    assert_int_equal(verdict(d, "mixed")->kind, PL_VERDICT_FITS_NOW);
    assert_contains(verdict(d, "other")->detail, "no schedulable nodes");
    assert_string_equal(d->reason, "fits now on mixed");
}

static void test_pl_engine__node_selector_by_hostname(void **state)
{
    struct fx *f = *state;
    struct pl_cluster *a = cluster(f, "a");
    struct pl_pod *p;
    const struct pl_decision *d;

    nodes(f, a, "n", 3, 4, 16, 0);
    for (size_t i = 0; i < a->nnodes; i++)
        pl_labels_set(&a->nodes[i].labels, &f->a, "kubernetes.io/hostname", a->nodes[i].name);
    a->nodes[1].requested.v[0] = CPU(3);
    policy(f, "p", "job");
    /* pinned to n-1, which has 1 cpu left: does not fit although n-0 and n-2 are empty */
    p = pod(f, object(f, "ns", "Pod", "pinned", "job"), "pod", 1, 2000, 1, 0);
    pl_labels_set(&p->node_selector, &f->a, "kubernetes.io/hostname", "n-1");
    pod(f, object(f, "ns", "Pod", "free", "job"), "pod", 1, 2000, 1, 0);
    run(f);
    d = dec(f, "ns/Pod/pinned");
    assert_int_equal(verdict(d, "a")->kind, PL_VERDICT_DOES_NOT_FIT);
    assert_contains(verdict(d, "a")->detail, "pod needs cpu 2; best node has 1");
    assert_on(dec(f, "ns/Pod/free"), "a");
}

static void test_pl_engine__ordered_selector_spill(void **state)
{
    struct fx *f = *state;
    struct pl_cluster *c1 = cluster(f, "c1"), *c2 = cluster(f, "c2"), *c3 = cluster(f, "c3");
    struct pl_policy *p;
    const struct pl_decision *d;

    nodes(f, c1, "n", 2, 4, 16, 0);
    nodes(f, c2, "n", 1, 4, 16, 0);
    nodes(f, c3, "n", 8, 4, 16, 0);
    p = policy(f, "p", "web");
    p->has_ordered = 1;
    p->ordered = *sel1(f, PL_LABEL_CLUSTER_NAME, PL_OP_IN, "c2", "c1");
    for (int i = 0; i < 4; i++)
        pod(f, object(f, "ns", "Deployment", rc_arena_printf(&f->a, "w%d", i), "web"), "pod", 1,
            4000, 1, 0);
    run(f);
    d = dec(f, "ns/Deployment/w0");
    assert_on(d, "c2");
    assert_int_equal(d->nverdicts, 2); /* c3 is not in the ordered list */
    assert_string_equal(d->verdicts[0].cluster, "c2");
    assert_string_equal(d->verdicts[1].cluster, "c1");
    assert_on(dec(f, "ns/Deployment/w1"), "c1");
    assert_on(dec(f, "ns/Deployment/w2"), "c1");
    d = dec(f, "ns/Deployment/w3");
    assert_int_equal(d->state, PL_STATE_PENDING);
}

static void test_pl_engine__scale_up(void **state)
{
    struct fx *f = *state;
    struct pl_cluster *st = cluster(f, "static-cluster"), *dy = cluster(f, "dynamic-cluster");
    struct pl_object *o;
    const struct pl_decision *d;
    const struct pl_verdict *v;

    nodes(f, st, "g", 1, 8, 32, 1);
    nodes(f, dy, "c", 1, 8, 32, 0);
    shape(f, dy, "g4dn.xlarge", 10, 4, 16, 1, 526000);
    shape(f, dy, "g4dn.2xlarge", 10, 8, 32, 1, 752000);
    policy(f, "p", "job");
    o = object(f, "ns", "RayJob", "train", "job");
    pod(f, o, "head", 1, 4000, 12, 0);
    pod(f, o, "worker small-group", 2, 4000, 12, 1);
    run(f);
    d = dec(f, "ns/RayJob/train");
    /* clusters without an autoscaler come first */
    assert_string_equal(d->verdicts[0].cluster, "static-cluster");
    assert_int_equal(d->verdicts[0].kind, PL_VERDICT_DOES_NOT_FIT);
    v = verdict(d, "dynamic-cluster");
    assert_int_equal(v->kind, PL_VERDICT_FITS_AFTER_SCALE_UP);
    /* the head fits the cpu node; each g4dn.xlarge (4 cpu) holds one worker */
    assert_int_equal(v->nodes_added, 2);
    assert_contains(v->detail, "1 of 3 pods fit now; autoscaler adds 2 nodes (g4dn.xlarge)");
    assert_on(d, "dynamic-cluster");
    assert_contains(d->reason, "no cluster fits now; dynamic-cluster's autoscaler (luna) can add");
    assert_int_equal(f->out.usage[0].nodes_to_add, v->nodes_added);
    assert_string_equal(f->out.usage[0].cluster, "dynamic-cluster");
}

static void test_pl_engine__shape_too_small(void **state)
{
    struct fx *f = *state;
    struct pl_cluster *dy = cluster(f, "dyn");
    const struct pl_decision *d;

    cluster(f, "other");
    shape(f, dy, "small", -1, 2, 8, 0, 100);
    policy(f, "p", "job");
    pod(f, object(f, "ns", "Pod", "big", "job"), "pod", 1, 4000, 1, 0);
    run(f);
    d = dec(f, "ns/Pod/big");
    assert_int_equal(d->state, PL_STATE_PENDING);
    assert_int_equal(verdict(d, "dyn")->kind, PL_VERDICT_DOES_NOT_FIT);
    assert_contains(verdict(d, "dyn")->detail,
                    "autoscaler: node shapes too small for pod (small has cpu 2, needs 4)");
}

static void test_pl_engine__max_nodes_reached(void **state)
{
    struct fx *f = *state;
    struct pl_cluster *dy = cluster(f, "dyn");
    struct pl_object *o;
    const struct pl_decision *d;

    cluster(f, "other");
    shape(f, dy, "m4", 2, 4, 16, 0, 100);
    nodes(f, dy, "existing", 1, 4, 16, 0);
    dy->nodes[0].shape = "m4";
    dy->nodes[0].requested.v[0] = CPU(4); /* full */
    policy(f, "p", "job");
    o = object(f, "ns", "Deployment", "three", "job");
    pod(f, o, "pod", 2, 4000, 1, 0);
    run(f);
    d = dec(f, "ns/Deployment/three");
    assert_int_equal(d->state, PL_STATE_PENDING);
    assert_contains(verdict(d, "dyn")->detail, "node shape 'm4' at its max of 2 nodes");
}

static void test_pl_engine__virtual_nodes_shared(void **state)
{
    struct fx *f = *state;
    struct pl_cluster *dy = cluster(f, "dyn");
    const struct pl_decision *d;

    cluster(f, "other");
    shape(f, dy, "m8", 1, 8, 32, 0, 100);
    policy(f, "p", "job");
    for (int i = 0; i < 3; i++)
        pod(f, object(f, "ns", "Pod", rc_arena_printf(&f->a, "p%d", i), "job"), "pod", 1, 4000, 1,
            0);
    run(f);
    d = dec(f, "ns/Pod/p0");
    assert_int_equal(verdict(d, "dyn")->nodes_added, 1);
    assert_on(d, "dyn");
    d = dec(f, "ns/Pod/p1");
    assert_on(d, "dyn");
    assert_int_equal(verdict(d, "dyn")->kind, PL_VERDICT_FITS_AFTER_SCALE_UP);
    assert_int_equal(verdict(d, "dyn")->nodes_added, 0);
    d = dec(f, "ns/Pod/p2");
    assert_int_equal(d->state, PL_STATE_PENDING);
    assert_int_equal(f->out.usage[0].nodes_to_add, 1);
}

static void test_pl_engine__burst_never_overcommits(void **state)
{
    struct fx *f = *state;
    struct pl_cluster *a = cluster(f, "a"), *b = cluster(f, "b");
    size_t placed = 0;

    nodes(f, a, "n", 5, 8, 32, 0);
    nodes(f, b, "n", 5, 8, 32, 0);
    b->nodes[0].requested.v[0] = CPU(8); /* one node already full */
    policy(f, "p", "job");
    for (int i = 0; i < 20; i++) {
        struct pl_object *o =
            object(f, "ns", "RayCluster", rc_arena_printf(&f->a, "r%02d", i), "job");
        pod(f, o, "head", 1, 2000, 1, 0);
        pod(f, o, "worker", 1, 2000, 1, 0);
    }
    run(f);
    for (size_t i = 0; i < f->out.ndecisions; i++)
        placed += f->out.decisions[i].state == PL_STATE_PLACED;
    /* a: 40 cpu = 10 units; b: 32 cpu free = 8 units */
    assert_int_equal(placed, 18);
    for (size_t i = 0; i < f->out.nusage; i++) {
        const struct pl_usage *u = &f->out.usage[i];
        assert_true(u->committed.v[0] + u->requested.v[0] <= u->allocatable.v[0]);
    }
    assert_int_equal(f->out.usage[0].committed.v[0], CPU(40));
    assert_int_equal(f->out.usage[1].committed.v[0], CPU(32));
    assert_on(dec(f, "ns/RayCluster/r09"), "a");
    assert_on(dec(f, "ns/RayCluster/r10"), "b");
    assert_int_equal(dec(f, "ns/RayCluster/r19")->state, PL_STATE_PENDING);
}

/* First fit starts past the nodes the committed units have filled for a pod shape; a node
 * that only a unit's trial filled, and that the trial gave back, is not among them. x (tried
 * on a and b, fits neither): its head fills a's n-0, so its workers find n-0 full; then y0
 * and y1, pods like x's workers, take n-0 and n-1. Were n-0 taken as full for them, y1 would
 * wait. */
static void test_pl_engine__first_fit_after_a_trial(void **state)
{
    struct fx *f = *state;
    struct pl_cluster *a = cluster(f, "a"), *b = cluster(f, "b");
    struct pl_object *x;

    nodes(f, a, "n", 2, 8, 32, 0);
    nodes(f, b, "n", 1, 1, 32, 0);
    policy(f, "p", "job");
    x = object(f, "ns", "RayCluster", "a-x", "job");
    pod(f, x, "head", 1, 8000, 1, 0);
    pod(f, x, "worker", 2, 6000, 1, 0);
    for (int i = 0; i < 3; i++)
        pod(f, object(f, "ns", "RayCluster", rc_arena_printf(&f->a, "b-y%d", i), "job"), "worker",
            1, 6000, 1, 0);
    run(f);
    assert_int_equal(dec(f, "ns/RayCluster/a-x")->state, PL_STATE_PENDING);
    assert_on(dec(f, "ns/RayCluster/b-y0"), "a");
    assert_on(dec(f, "ns/RayCluster/b-y1"), "a");
    assert_int_equal(dec(f, "ns/RayCluster/b-y2")->state, PL_STATE_PENDING);
    assert_int_equal(f->out.usage[0].committed.v[0], CPU(12));
}

static void test_pl_engine__sticky_after_capacity_frees(void **state)
{
    struct fx *f = *state;
    struct pl_cluster *a = cluster(f, "a"), *b = cluster(f, "b");
    const struct pl_decision *d;

    nodes(f, a, "n", 2, 8, 32, 0); /* a has room now (it did not before) */
    nodes(f, b, "n", 2, 8, 32, 0);
    policy(f, "p", "job");
    pod(f, object(f, "ns", "Pod", "x", "job"), "pod", 1, 4000, 1, 0);
    prev(f, "ns/Pod/x", "p", "b");
    run(f);
    d = dec(f, "ns/Pod/x");
    assert_on(d, "b");
    assert_string_equal(d->reason, "kept on b (sticky)");
    assert_int_equal(d->change, PL_CHANGE_NONE);
    assert_null(d->cause);
    assert_int_equal(d->nverdicts, 1);
    assert_int_equal(d->verdicts[0].kind, PL_VERDICT_FITS_NOW);
    /* not observed on b yet: deducted */
    assert_int_equal(f->out.usage[1].committed.v[0], CPU(4));
}

static void test_pl_engine__committed_present_not_deducted(void **state)
{
    struct fx *f = *state;
    struct pl_cluster *a = cluster(f, "a");
    char label[17];
    const struct pl_decision *d;

    nodes(f, a, "n", 1, 4, 32, 0);
    a->nodes[0].requested.v[0] = CPU(4); /* x's pods, observed */
    pl_unit_label("ns/Pod/x", label);
    a->npresent = 1;
    a->present = rc_arena_calloc(&f->a, 1, sizeof(char *));
    a->present[0] = rc_arena_strdup(&f->a, label);
    cluster(f, "b");
    policy(f, "p", "job");
    pod(f, object(f, "ns", "Pod", "x", "job"), "pod", 1, 4000, 1, 0);
    prev(f, "ns/Pod/x", "p", "a");
    run(f);
    d = dec(f, "ns/Pod/x");
    assert_on(d, "a");
    assert_string_equal(d->verdicts[0].detail, "pods observed on the cluster");
    assert_int_equal(f->out.usage[0].committed.v[0], 0);
}

static void test_pl_engine__committed_first(void **state)
{
    struct fx *f = *state;
    struct pl_cluster *a = cluster(f, "a");

    cluster(f, "b");
    nodes(f, a, "n", 1, 4, 32, 0);
    policy(f, "p", "job");
    /* "zz" was committed to a but its pods are not there yet; "aa" is new and sorts first */
    pod(f, object(f, "ns", "Pod", "aa", "job"), "pod", 1, 4000, 1, 0);
    pod(f, object(f, "ns", "Pod", "zz", "job"), "pod", 1, 4000, 1, 0);
    prev(f, "ns/Pod/zz", "p", "a");
    run(f);
    assert_on(dec(f, "ns/Pod/zz"), "a");
    assert_int_equal(dec(f, "ns/Pod/aa")->state, PL_STATE_PENDING);
    assert_int_equal(verdict(dec(f, "ns/Pod/aa"), "a")->kind, PL_VERDICT_DOES_NOT_FIT);
}

static void test_pl_engine__move_after_label_change(void **state)
{
    struct fx *f = *state;
    struct pl_cluster *a = cluster(f, "a"), *b = cluster(f, "b");
    struct pl_policy *p;
    const struct pl_decision *d;

    clabel(f, a, "cluster.class", "production");
    clabel(f, b, "cluster.class", "development"); /* was production */
    nodes(f, a, "n", 2, 8, 32, 0);
    nodes(f, b, "n", 2, 8, 32, 0);
    p = policy(f, "prod", "svc");
    cluster_selector(f, p, "cluster.class", "production");
    pod(f, object(f, "production", "RayService", "s", "svc"), "head", 1, 2000, 8, 0);
    prev(f, "production/RayService/s", "prod", "b");
    run(f);
    d = dec(f, "production/RayService/s");
    assert_on(d, "a");
    assert_int_equal(d->change, PL_CHANGE_MOVED);
    assert_string_equal(d->cause, "cluster 'b' no longer matches the policy's clusterSelector");
}

static void test_pl_engine__move_when_cluster_removed_or_policy_changed(void **state)
{
    struct fx *f = *state;
    struct pl_cluster *a = cluster(f, "a");
    const struct pl_decision *d;

    cluster(f, "b");
    nodes(f, a, "n", 2, 8, 32, 0);
    policy(f, "p", "job");
    policy(f, "q", "web")->digest = "d2";
    pod(f, object(f, "ns", "Pod", "x", "job"), "pod", 1, 1000, 1, 0);
    pod(f, object(f, "ns", "Pod", "y", "web"), "pod", 1, 1000, 1, 0);
    prev(f, "ns/Pod/x", "p", "gone");
    prev(f, "ns/Pod/y", "q", "b");
    prev(f, "ns/Pod/old", "p", "a");
    run(f);
    d = dec(f, "ns/Pod/x");
    assert_on(d, "a");
    assert_int_equal(d->change, PL_CHANGE_MOVED);
    assert_string_equal(d->cause, "cluster 'gone' was removed");
    d = dec(f, "ns/Pod/y");
    assert_on(d, "a");
    assert_int_equal(d->change, PL_CHANGE_MOVED);
    assert_string_equal(d->cause, "policy 'q' changed");
    d = dec(f, "ns/Pod/old");
    assert_int_equal(d->change, PL_CHANGE_REMOVED);
    assert_int_equal(d->nobjects, 1);
    assert_null(d->objects);
    assert_string_equal(d->object_keys[0], "ns/Pod/old");
    assert_int_equal(f->out.ndecisions, 3);
    /* sorted by unit */
    assert_string_equal(f->out.decisions[0].unit, "ns/Pod/old");
}

static void test_pl_engine__replaced_unit_not_counted_twice(void **state)
{
    struct fx *f = *state;
    struct pl_cluster *a = cluster(f, "a"), *b = cluster(f, "b");
    char label[17];
    const struct pl_decision *d;

    /* b is full with x's own pods; x's policy changed: x is placed afresh and must not see
     * its own pods as someone else's (a has no room) */
    nodes(f, a, "n", 1, 2, 32, 0);
    nodes(f, b, "n", 1, 4, 32, 0);
    b->nodes[0].requested.v[0] = CPU(4);
    pl_unit_label("ns/Pod/x", label);
    b->npresent = 1;
    b->present = rc_arena_calloc(&f->a, 1, sizeof(char *));
    b->present[0] = rc_arena_strdup(&f->a, label);
    policy(f, "p", "job")->digest = "d2";
    pod(f, object(f, "ns", "Pod", "x", "job"), "pod", 1, 4000, 1, 0);
    prev(f, "ns/Pod/x", "p", "b");
    run(f);
    d = dec(f, "ns/Pod/x");
    assert_on(d, "b");
    assert_string_equal(verdict(d, "b")->detail, "pods observed on the cluster");
    assert_int_equal(d->change, PL_CHANGE_NONE);
    assert_int_equal(f->out.usage[1].committed.v[0], 0);
}

static void test_pl_engine__duplicate_sticky_and_cluster_removed(void **state)
{
    struct fx *f = *state;
    struct pl_cluster *a = cluster(f, "a"), *b = cluster(f, "b");
    struct pl_prev_unit *pv;
    const struct pl_decision *d;

    nodes(f, a, "n", 1, 4, 32, 0);
    nodes(f, b, "n", 1, 4, 32, 0);
    b->reachable = 0;
    policy(f, "kr", "op")->spread = PL_SPREAD_DUPLICATE;
    object(f, NULL, "ClusterRole", "op", "op");
    pv = prev(f, "ClusterRole/op", "kr", "b");
    pv->nclusters = 2;
    pv->clusters = rc_arena_calloc(&f->a, 2, sizeof(char *));
    pv->clusters[0] = "gone";
    pv->clusters[1] = "b";
    run(f);
    d = dec(f, "ClusterRole/op");
    /* b is unreachable but keeps its copy; gone is dropped; a is new */
    assert_int_equal(d->ntargets, 2);
    assert_string_equal(d->targets[0].cluster, "a");
    assert_string_equal(d->targets[1].cluster, "b");
    assert_int_equal(d->change, PL_CHANGE_MOVED);
    assert_string_equal(d->cause, "cluster 'gone' was removed");
}

static void test_pl_engine__divide_keeps_previous_cluster_in_domain(void **state)
{
    struct fx *f = *state;
    struct pl_policy *p;
    struct pl_object *o;
    const struct pl_decision *d;
    const char *names[] = {"eu-1", "eu-2", "us-1"};

    for (int i = 0; i < 3; i++) {
        struct pl_cluster *c = cluster(f, names[i]);
        clabel(f, c, "region", i < 2 ? "eu" : "us");
        nodes(f, c, "n", 2, 8, 32, 0);
    }
    p = policy(f, "split", "web");
    p->spread = PL_SPREAD_DIVIDE;
    p->topology_key = "region";
    o = object(f, "ns", "Deployment", "web", "web");
    o->replicas = 4;
    pod(f, o, "pod", 4, 1000, 1, 0);
    prev(f, "ns/Deployment/web", "split", "eu-2"); /* eu-1 is preferred but eu-2 had it */
    run(f);
    d = dec(f, "ns/Deployment/web");
    assert_int_equal(d->ntargets, 2);
    assert_string_equal(d->targets[0].cluster, "eu-2");
    assert_int_equal(d->targets[0].percent, 50);
    assert_string_equal(d->targets[1].cluster, "us-1");
    assert_int_equal(d->change, PL_CHANGE_MOVED);
    assert_string_equal(d->cause, "cluster 'us-1' is newly selected by the policy");
    /* 2 replicas of 1 cpu per region */
    assert_int_equal(f->out.usage[1].committed.v[0], CPU(2));
    assert_int_equal(f->out.usage[2].committed.v[0], CPU(2));
}

static void test_pl_engine__now_governed_by_other_policy(void **state)
{
    struct fx *f = *state;
    struct pl_cluster *a = cluster(f, "a");
    const struct pl_decision *d;

    nodes(f, a, "n", 1, 4, 32, 0);
    nodes(f, cluster(f, "b"), "n", 1, 4, 32, 0);
    policy(f, "new", "job");
    pod(f, object(f, "ns", "Pod", "x", "job"), "pod", 1, 1000, 1, 0);
    prev(f, "ns/Pod/x", "old", "b");
    run(f);
    d = dec(f, "ns/Pod/x");
    assert_on(d, "a");
    assert_int_equal(d->change, PL_CHANGE_MOVED);
    assert_string_equal(d->cause, "now governed by policy 'new' instead of 'old'");
}

static void test_pl_engine__pending_to_placed_is_state_change(void **state)
{
    struct fx *f = *state;
    struct pl_cluster *a = cluster(f, "a");
    const struct pl_decision *d;

    cluster(f, "b");
    nodes(f, a, "n", 1, 8, 32, 0);
    policy(f, "p", "job");
    pod(f, object(f, "ns", "Pod", "x", "job"), "pod", 1, 1000, 1, 0);
    prev(f, "ns/Pod/x", "p", NULL);
    run(f);
    d = dec(f, "ns/Pod/x");
    assert_on(d, "a");
    assert_int_equal(d->change, PL_CHANGE_STATE);
}

static void test_pl_engine__fill_no_spill(void **state)
{
    struct fx *f = *state;
    struct pl_cluster *st = cluster(f, "static-cluster"), *dy = cluster(f, "dynamic-cluster");
    struct pl_policy *p;
    const struct pl_decision *d;

    nodes(f, st, "n", 1, 8, 32, 0);
    shape(f, dy, "big", -1, 64, 256, 0, 1);
    p = policy(f, "static", "job");
    cluster_selector(f, p, PL_LABEL_CLUSTER_NAME, "static-cluster");
    for (int i = 0; i < 3; i++)
        pod(f, object(f, rc_arena_printf(&f->a, "rayjob%d", i + 1), "RayJob", "train", "job"),
            "head", 1, 4000, 1, 0);
    run(f);
    assert_on(dec(f, "rayjob1/RayJob/train"), "static-cluster");
    assert_on(dec(f, "rayjob2/RayJob/train"), "static-cluster");
    d = dec(f, "rayjob3/RayJob/train");
    assert_on(d, "static-cluster");
    assert_int_equal(d->nverdicts, 1);
    assert_int_equal(d->verdicts[0].kind, PL_VERDICT_DOES_NOT_FIT);
    assert_contains(d->reason, "fill, no spill");
}

static void test_pl_engine__groupby_gang(void **state)
{
    struct fx *f = *state;
    struct pl_cluster *a = cluster(f, "a"), *b = cluster(f, "b");
    struct pl_policy *p;
    struct pl_object *o1, *o2, *o3;
    const struct pl_decision *d;

    nodes(f, a, "n", 1, 4, 32, 0);
    nodes(f, b, "n", 2, 4, 32, 0);
    p = policy(f, "p", "job");
    p->group_by = "group";
    o1 = object(f, "ns", "RayJob", "j", "job");
    pl_labels_set(&o1->labels, &f->a, "group", "g1");
    pod(f, o1, "head", 1, 4000, 1, 0);
    o2 = object(f, "ns", "Deployment", "d", "job");
    pl_labels_set(&o2->labels, &f->a, "group", "g1");
    pod(f, o2, "pod", 1, 4000, 1, 0);
    o3 = object(f, "ns", "ConfigMap", "alone", "job"); /* no group label: alone */
    (void)o3;
    run(f);
    d = dec(f, "p/ns/g1");
    assert_int_equal(d->nobjects, 2);
    assert_string_equal(d->object_keys[0], "ns/Deployment/d");
    assert_string_equal(d->object_keys[1], "ns/RayJob/j");
    assert_on(d, "b"); /* the gang does not fit a's single node */
    assert_contains(verdict(d, "a")->detail, "1 of 2 pods fit");
    d = dec(f, "ns/ConfigMap/alone");
    assert_on(d, "a");
    assert_string_equal(d->verdicts[0].detail, "no pods to place");
}

static void test_pl_engine__duplicate(void **state)
{
    struct fx *f = *state;
    struct pl_cluster *a = cluster(f, "a"), *b = cluster(f, "b"), *c = cluster(f, "c");
    struct pl_policy *p;
    const struct pl_decision *d;

    nodes(f, a, "n", 1, 4, 32, 0);
    nodes(f, b, "n", 1, 4, 32, 0);
    c->reachable = 0;
    p = policy(f, "kr", "kuberay-operator");
    p->spread = PL_SPREAD_DUPLICATE;
    pod(f, object(f, "kuberay", "Deployment", "op", "kuberay-operator"), "pod", 1, 100, 1, 0);
    object(f, NULL, "CustomResourceDefinition", "rayjobs.ray.io", "kuberay-operator");
    run(f);
    d = dec(f, "kuberay/Deployment/op");
    assert_int_equal(d->state, PL_STATE_PLACED);
    assert_int_equal(d->ntargets, 2);
    assert_string_equal(d->targets[0].cluster, "a");
    assert_string_equal(d->targets[1].cluster, "b");
    assert_int_equal(d->targets[0].percent, 100);
    assert_int_equal(verdict(d, "c")->kind, PL_VERDICT_UNREACHABLE);
    d = dec(f, "CustomResourceDefinition/rayjobs.ray.io");
    assert_int_equal(d->ntargets, 2);
    assert_int_equal(f->out.usage[0].committed.v[0], 100);
    assert_int_equal(f->out.usage[1].committed.v[0], 100);
}

static void test_pl_engine__divide_rounding(void **state)
{
    struct fx *f = *state;
    struct pl_cluster *a = cluster(f, "wlc-1"), *b = cluster(f, "wlc-2");
    struct pl_policy *p;
    struct pl_object *o;
    const struct pl_decision *d;

    nodes(f, a, "n", 4, 8, 32, 0);
    nodes(f, b, "n", 4, 8, 32, 0);
    p = policy(f, "split", "web");
    p->spread = PL_SPREAD_DIVIDE;
    p->nsplits = 2;
    p->splits = rc_arena_calloc(&f->a, 2, sizeof(*p->splits));
    p->splits[0].value = "wlc-2";
    p->splits[0].percent = 30;
    p->splits[1].value = "wlc-1";
    p->splits[1].percent = 70;
    o = object(f, "ns", "Deployment", "web", "web");
    o->replicas = 5;
    pod(f, o, "pod", 5, 1000, 1, 0);
    run(f);
    d = dec(f, "ns/Deployment/web");
    assert_int_equal(d->state, PL_STATE_PLACED);
    assert_int_equal(d->ntargets, 2);
    assert_string_equal(d->targets[0].cluster, "wlc-1");
    assert_int_equal(d->targets[0].percent, 70);
    assert_string_equal(d->targets[1].cluster, "wlc-2");
    assert_int_equal(d->targets[1].percent, 30);
    /* 4 and 1 replicas (largest remainder: 3.5 and 1.5, the tie to the larger percent) */
    assert_int_equal(f->out.usage[0].committed.v[0], CPU(4));
    assert_int_equal(f->out.usage[1].committed.v[0], CPU(1));
    assert_contains(d->reason, "wlc-1 70%, wlc-2 30%");
}

static void test_pl_engine__divide_part_conserves(void **state)
{
    struct pl_target t[4];
    int64_t sum;

    (void)state;
    memset(t, 0, sizeof(t));
    t[0].cluster = "c";
    t[1].cluster = "a";
    t[2].cluster = "b";
    t[0].percent = t[1].percent = t[2].percent = 33;
    /* 10 over three equal targets: 4/3/3, the extra one to the first by name */
    assert_int_equal(pl_divide_part(10, t, 3, 1), 4);
    assert_int_equal(pl_divide_part(10, t, 3, 2), 3);
    assert_int_equal(pl_divide_part(10, t, 3, 0), 3);
    /* every total over any weights adds up exactly, whatever the order */
    for (int64_t total = 0; total < 300; total += 7) {
        for (int64_t p = 0; p <= 100; p += 9) {
            t[0].percent = p;
            t[1].percent = 100 - p;
            t[2].percent = 13;
            t[3].cluster = "d";
            t[3].percent = 0;
            sum = 0;
            for (size_t i = 0; i < 4; i++)
                sum += pl_divide_part(total, t, 4, i);
            assert_int_equal(sum, total);
            assert_int_equal(pl_divide_part(total, t, 4, 3), 0);
        }
    }
    /* a large total does not overflow */
    t[0].percent = 70;
    t[1].percent = 30;
    assert_int_equal(pl_divide_part(INT64_MAX, t, 2, 0) + pl_divide_part(INT64_MAX, t, 2, 1),
                     INT64_MAX);
}

static void test_pl_engine__two_policies_match(void **state)
{
    struct fx *f = *state;
    struct pl_cluster *a = cluster(f, "a");
    const struct pl_decision *d;

    nodes(f, a, "n", 1, 4, 32, 0);
    policy(f, "zeta", "job");
    policy(f, "alpha", "job");
    pod(f, object(f, "ns", "Pod", "x", "job"), "pod", 1, 1000, 1, 0);
    run(f);
    d = dec(f, "ns/Pod/x");
    assert_string_equal(d->policy, "alpha");
    assert_int_equal(f->out.nwarnings, 1);
    assert_string_equal(
        f->out.warnings[0],
        "object 'ns/Pod/x' matches policies 'alpha' and 'zeta'; 'alpha' wins (the smallest name)");
}

static void test_pl_engine__namespace_selector(void **state)
{
    struct fx *f = *state;
    struct pl_cluster *a = cluster(f, "a");
    struct pl_policy *p;

    nodes(f, a, "n", 1, 4, 32, 0);
    p = policy(f, "team", "job");
    p->namespace_selector = *sel1(f, "team", PL_OP_IN, "ml", NULL);
    f->ns[0].name = "ml-ns";
    pl_labels_set(&f->ns[0].labels, &f->a, "team", "ml");
    f->nns = 1;
    pod(f, object(f, "ml-ns", "Pod", "x", "job"), "pod", 1, 1000, 1, 0);
    pod(f, object(f, "other", "Pod", "y", "job"), "pod", 1, 1000, 1, 0);
    object(f, NULL, "Namespace", "ml-ns", "job"); /* cluster-scoped: any namespaceSelector */
    run(f);
    assert_on(dec(f, "ml-ns/Pod/x"), "a");
    assert_int_equal(dec(f, "other/Pod/y")->state, PL_STATE_UNPLACED);
    assert_on(dec(f, "Namespace/ml-ns"), "a");
}

static void test_pl_engine__no_policy(void **state)
{
    struct fx *f = *state;
    const struct pl_decision *d;

    nodes(f, cluster(f, "a"), "n", 1, 4, 32, 0);
    policy(f, "p", "job");
    pod(f, object(f, "ns", "Pod", "stray", "other"), "pod", 1, 1000, 1, 0);
    run(f);
    d = dec(f, "ns/Pod/stray");
    assert_int_equal(d->state, PL_STATE_UNPLACED);
    assert_string_equal(d->reason, "no SchedulePolicy matches");
    assert_null(d->policy);
    assert_int_equal(d->ntargets, 0);
    assert_int_equal(f->out.usage[0].committed.v[0], 0);
}

static void test_pl_engine__unreachable(void **state)
{
    struct fx *f = *state;
    struct pl_cluster *a = cluster(f, "a"), *b = cluster(f, "b");
    const struct pl_decision *d;

    nodes(f, a, "n", 4, 8, 32, 0);
    nodes(f, b, "n", 4, 8, 32, 0);
    a->reachable = 0;
    policy(f, "p", "job");
    pod(f, object(f, "ns", "Pod", "kept", "job"), "pod", 1, 1000, 1, 0);
    pod(f, object(f, "ns", "Pod", "new", "job"), "pod", 1, 1000, 1, 0);
    prev(f, "ns/Pod/kept", "p", "a");
    run(f);
    d = dec(f, "ns/Pod/kept");
    assert_on(d, "a");
    assert_int_equal(d->change, PL_CHANGE_NONE);
    assert_int_equal(d->verdicts[0].kind, PL_VERDICT_UNREACHABLE);
    d = dec(f, "ns/Pod/new");
    assert_on(d, "b");
    assert_int_equal(verdict(d, "a")->kind, PL_VERDICT_UNREACHABLE);
}

static void test_pl_engine__no_candidate_pending(void **state)
{
    struct fx *f = *state;
    struct pl_policy *p;
    const struct pl_decision *d;

    nodes(f, cluster(f, "a"), "n", 1, 4, 32, 0);
    p = policy(f, "p", "job");
    cluster_selector(f, p, "cluster.class", "gpu");
    pod(f, object(f, "ns", "Pod", "x", "job"), "pod", 1, 1000, 1, 0);
    run(f);
    d = dec(f, "ns/Pod/x");
    assert_int_equal(d->state, PL_STATE_PENDING);
    assert_contains(d->reason, "no cluster matches the policy's clusterSelector");
}

static void test_pl_engine__duplicate_names_rejected(void **state)
{
    struct fx *f = *state;
    struct rc_err err = RC_ERR_INIT;

    cluster(f, "a");
    cluster(f, "a");
    f->in.res = &f->res;
    f->in.nclusters = f->ncl;
    f->in.clusters = f->cl;
    assert_int_equal(pl_place(&f->out, &f->in, &f->a, &err), RC_EINVALID);
    assert_string_equal(err.msg, "duplicate cluster 'a'");
}

/* A mixed input; then the same input with every array reversed or rotated. */
static void build_mixed(struct fx *f)
{
    struct pl_cluster *c;
    struct pl_policy *p;

    for (int i = 0; i < 6; i++) {
        c = cluster(f, rc_arena_printf(&f->a, "c%d", i));
        clabel(f, c, "cluster.class", i % 2 ? "production" : "development");
        nodes(f, c, "cpu", 2 + i % 3, 8, 32, 0);
        if (i % 3 == 0)
            nodes(f, c, "gpu", 1, 8, 32, 1);
        if (i == 5)
            shape(f, c, "g", 4, 8, 32, 1, 5);
        c->cost_micro = (i * 7) % 4;
    }
    f->cl[2].reachable = 0;
    p = policy(f, "cap", "job");
    p->group_by = "group";
    p = policy(f, "prod", "svc");
    cluster_selector(f, p, "cluster.class", "production");
    p = policy(f, "dup", "infra");
    p->spread = PL_SPREAD_DUPLICATE;
    policy(f, "cap2", "job");
    for (int i = 0; i < 40; i++) {
        struct pl_object *o =
            object(f, rc_arena_printf(&f->a, "ns%d", i % 3), i % 2 ? "RayJob" : "Deployment",
                   rc_arena_printf(&f->a, "w%d", i), i % 5 == 0 ? "svc" : "job");
        pl_labels_set(&o->labels, &f->a, "group", rc_arena_printf(&f->a, "g%d", i % 7));
        pod(f, o, "head", 1, 1000 + 500 * (i % 4), 2, 0);
        if (i % 2)
            pod(f, o, "worker", (uint32_t)(1 + i % 3), 2000, 4, i % 4 == 1);
    }
    object(f, NULL, "ClusterRole", "op", "infra");
    prev(f, "cap/ns0/g0", "cap", "c3");
    prev(f, "ns0/Deployment/w0", "prod", "c1");
    prev(f, "removed/Pod/x", "cap", "c1");
}

/* Fisher-Yates with a fixed LCG: reproducible shuffles. */
static void shuffle(void *base, size_t n, size_t size, uint64_t *seed)
{
    char tmp[4096];
    char *b = base;

    assert_true(size <= sizeof(tmp));
    for (size_t i = n; i > 1; i--) {
        size_t j;
        *seed = *seed * 6364136223846793005ULL + 1442695040888963407ULL;
        j = (size_t)((*seed >> 33) % i);
        memcpy(tmp, b + (i - 1) * size, size);
        memcpy(b + (i - 1) * size, b + j * size, size);
        memcpy(b + j * size, tmp, size);
    }
}

static void test_pl_engine__input_order_independent(void **state)
{
    struct fx *f = *state;
    char *one;
    uint64_t seed = 42;

    build_mixed(f);
    run(f);
    one = dump(&f->out);
    assert_true(f->out.ndecisions > 10);
    assert_non_null(strstr(one, " pending "));
    assert_non_null(strstr(one, "fits-after-scale-up"));
    for (int round = 0; round < 8; round++) {
        char *two;
        shuffle(f->obj, f->nobj, sizeof(f->obj[0]), &seed);
        shuffle(f->cl, f->ncl, sizeof(f->cl[0]), &seed);
        shuffle(f->pol, f->npol, sizeof(f->pol[0]), &seed);
        shuffle(f->prev, f->nprev, sizeof(f->prev[0]), &seed);
        for (size_t i = 0; i < f->ncl; i++)
            shuffle(f->cl[i].nodes, f->cl[i].nnodes, sizeof(f->cl[i].nodes[0]), &seed);
        run(f);
        two = dump(&f->out);
        assert_string_equal(one, two);
        free(two);
    }
    free(one);
}

/* Bounded verdicts: each decision keeps what pl_verdicts_select picks from the whole list
 * (and counts the rest by kind); nothing else about the decisions changes. The work kept per unit
 * is bounded by the bounds, not by the fleet. */
static void test_pl_engine__bounded_verdicts(void **state)
{
    struct fx *f = *state;
    struct pl_result whole;
    size_t nbounded = 0;

    build_mixed(f);
    run(f);
    whole = f->out;
    f->in.opts.verdicts_chosen = 1;
    f->in.opts.verdicts_passed = 1;
    run(f);
    assert_int_equal(f->out.ndecisions, whole.ndecisions);
    for (size_t i = 0; i < whole.ndecisions; i++) {
        const struct pl_decision *w = &whole.decisions[i], *b = &f->out.decisions[i];
        unsigned char keep[64];
        size_t counts[4], omitted, k = 0;

        assert_string_equal(b->unit, w->unit);
        assert_int_equal(b->state, w->state);
        assert_int_equal(b->change, w->change);
        assert_string_equal(b->reason, w->reason);
        assert_int_equal(b->ntargets, w->ntargets);
        for (size_t t = 0; t < w->ntargets; t++)
            assert_string_equal(b->targets[t].cluster, w->targets[t].cluster);
        assert_int_equal(w->verdicts_omitted, 0);
        if (w->change == PL_CHANGE_REMOVED)
            continue;
        assert_true(w->nverdicts <= sizeof(keep));
        omitted = pl_verdicts_select(keep, counts, w, 1, 1);
        assert_int_equal(b->verdicts_omitted, omitted);
        assert_int_equal(b->nverdicts + omitted, w->nverdicts);
        assert_true(!omitted || b->nverdicts <= 2);
        for (size_t v = 0; v < w->nverdicts; v++) {
            if (!keep[v])
                continue;
            assert_string_equal(b->verdicts[k].cluster, w->verdicts[v].cluster);
            assert_int_equal(b->verdicts[k].kind, w->verdicts[v].kind);
            assert_string_equal(b->verdicts[k].detail ? b->verdicts[k].detail : "",
                                w->verdicts[v].detail ? w->verdicts[v].detail : "");
            assert_int_equal(b->verdicts[k].nodes_added, w->verdicts[v].nodes_added);
            k++;
        }
        assert_int_equal(k, b->nverdicts);
        if (omitted) {
            assert_memory_equal(b->verdict_counts, counts, sizeof(counts));
            nbounded++;
        }
    }
    assert_true(nbounded >= 5);
}

/* With bounded verdicts, the engine holds one unit's whole list at a time: what it holds
 * besides its output does not grow with the units times the clusters. 256 units that fit
 * nowhere on 64 clusters: each is decided on 64 verdicts, and keeps 3. */
static void test_pl_engine__bounded_verdicts_hold_one_list(void **state)
{
    struct fx *f = *state;
    size_t whole;

    for (int i = 0; i < 64; i++)
        nodes(f, cluster(f, rc_arena_printf(&f->a, "c%02d", i)), "cpu", 1, 8, 32, 0);
    policy(f, "cap", "job");
    for (int i = 0; i < 256; i++)
        pod(f, object(f, "ns", "Deployment", rc_arena_printf(&f->a, "w%03d", i), "job"), "main", 1,
            16000, 1, 0);
    whole = f->nobj * f->ncl * sizeof(struct pl_verdict);
    f->in.opts.verdicts_chosen = 3;
    f->in.opts.verdicts_passed = 3;
    run(f);
    assert_int_equal(f->out.ndecisions, 256);
    for (size_t i = 0; i < f->out.ndecisions; i++) {
        const struct pl_decision *d = &f->out.decisions[i];
        assert_int_equal(d->state, PL_STATE_PENDING);
        assert_int_equal(d->nverdicts, 3);
        assert_int_equal(d->verdicts_omitted, 61);
        assert_int_equal(d->verdict_counts[PL_VERDICT_DOES_NOT_FIT], 64);
    }
    /* the lists would be 256 x 64 verdicts; the scratch holds the units' own state */
    assert_true(f->out.scratch_held < whole / 4);
}

/* What plan, status and explain ask for: bounds, but a decision that changes keeps its whole
 * list (the same as with no bounds), while one that stands keeps the bounded few. */
static void test_pl_engine__whole_verdicts_if_changed(void **state)
{
    struct fx *f = *state;
    struct pl_result whole;
    size_t nchanged = 0, nstands = 0;

    for (int i = 0; i < 8; i++)
        nodes(f, cluster(f, rc_arena_printf(&f->a, "c%d", i)), "cpu", 1, 8, 32, 0);
    policy(f, "cap", "job");
    for (int i = 0; i < 6; i++) {
        struct pl_object *o =
            object(f, "ns", "Deployment", rc_arena_printf(&f->a, "w%d", i), "job");
        pod(f, o, "main", 1, i % 2 ? 16000 : 1000, 1, 0);
        if (i < 4) /* w0..w3 were decided before: w0 and w2 placed on c0, w1 and w3 pending */
            prev(f, o->key, "cap", i % 2 ? NULL : "c0");
    }
    run(f);
    whole = f->out;
    f->in.opts.verdicts_chosen = 1;
    f->in.opts.verdicts_passed = 1;
    f->in.opts.verdicts_whole_if_changed = 1;
    run(f);
    assert_int_equal(f->out.ndecisions, whole.ndecisions);
    for (size_t i = 0; i < whole.ndecisions; i++) {
        const struct pl_decision *w = &whole.decisions[i], *b = &f->out.decisions[i];
        assert_string_equal(b->unit, w->unit);
        assert_int_equal(b->change, w->change);
        if (b->change != PL_CHANGE_NONE) {
            assert_int_equal(b->verdicts_omitted, 0);
            assert_int_equal(b->nverdicts, w->nverdicts);
            for (size_t v = 0; v < w->nverdicts; v++) {
                assert_string_equal(b->verdicts[v].cluster, w->verdicts[v].cluster);
                assert_int_equal(b->verdicts[v].kind, w->verdicts[v].kind);
            }
            nchanged++;
        } else {
            assert_true(b->nverdicts <= 2);
            assert_int_equal(b->nverdicts + b->verdicts_omitted, w->nverdicts);
            nstands++;
        }
    }
    assert_int_equal(nchanged, 2); /* w4 and w5 are new */
    assert_true(nstands >= 2);     /* the pending ones stand, with 8 verdicts each */
    assert_true(dec(f, "ns/Deployment/w1")->verdicts_omitted > 0);
}

static int rnd(uint64_t *seed, int n)
{
    *seed = *seed * 6364136223846793005ULL + 1442695040888963407ULL;
    return (int)((*seed >> 33) % (uint64_t)n);
}

/* Random fleets and bursts (no autoscaler): whatever is decided, no cluster is committed
 * beyond its free capacity, every placed single-target unit went to a candidate with a
 * fitting verdict (or to its policy's only cluster), and the same input decides the same. */
static void test_pl_engine__random_bursts_never_overcommit(void **state)
{
    struct fx *f = *state;
    uint64_t seed = 7;
    size_t placed = 0, pending = 0;

    for (int round = 0; round < 40; round++) {
        size_t ncl, nobj;
        char *one, *two;
        rc_arena_release(&f->a);
        memset(f, 0, sizeof(*f));
        pl_resnames_init(&f->res);
        pl_resnames_intern(&f->res, &f->a, "nvidia.com/gpu");
        ncl = 1 + (size_t)rnd(&seed, 5);
        for (size_t i = 0; i < ncl; i++) {
            struct pl_cluster *c = cluster(f, rc_arena_printf(&f->a, "c%zu", i));
            clabel(f, c, "class", rnd(&seed, 2) ? "x" : "y");
            nodes(f, c, "cpu", rnd(&seed, 4), 1 + rnd(&seed, 8), 1 + rnd(&seed, 32), 0);
            nodes(f, c, "gpu", rnd(&seed, 3), 1 + rnd(&seed, 8), 1 + rnd(&seed, 32),
                  1 + rnd(&seed, 2));
            if (c->nnodes && rnd(&seed, 3) == 0)
                c->nodes[0].unschedulable = 1;
            if (c->nnodes && rnd(&seed, 2))
                c->nodes[c->nnodes - 1].requested.v[0] = CPU(rnd(&seed, 2));
        }
        policy(f, "any", "a");
        cluster_selector(f, policy(f, "only-x", "b"), "class", "x");
        policy(f, "grouped", "c")->group_by = "g";
        nobj = 1 + (size_t)rnd(&seed, 30);
        for (size_t i = 0; i < nobj; i++) {
            static const char *apps[] = {"a", "b", "c", "zzz"};
            struct pl_object *o =
                object(f, "ns", "Pod", rc_arena_printf(&f->a, "o%02zu", i), apps[rnd(&seed, 4)]);
            pl_labels_set(&o->labels, &f->a, "g", rnd(&seed, 2) ? "g1" : "g2");
            for (int k = 1 + rnd(&seed, 3); k > 0; k--)
                pod(f, o, rnd(&seed, 2) ? "head" : "worker", (uint32_t)(1 + rnd(&seed, 3)),
                    250 * (1 + rnd(&seed, 12)), rnd(&seed, 4), rnd(&seed, 4) == 0);
        }
        run(f);
        for (size_t i = 0; i < f->out.nusage; i++) {
            const struct pl_usage *u = &f->out.usage[i];
            const struct pl_cluster *c = NULL;
            for (size_t k = 0; k < f->ncl; k++)
                if (!strcmp(f->cl[k].name, u->cluster))
                    c = &f->cl[k];
            assert_non_null(c);
            for (int r = 0; r < f->res.n; r++) {
                if (r == PL_RES_PODS)
                    continue;
                if (u->committed.v[r] > u->allocatable.v[r] - u->requested.v[r])
                    fail_msg("round %d: %s overcommitted on %s: %" PRId64 " > %" PRId64, round,
                             u->cluster, f->res.name[r], u->committed.v[r],
                             u->allocatable.v[r] - u->requested.v[r]);
            }
        }
        for (size_t i = 0; i < f->out.ndecisions; i++) {
            const struct pl_decision *d = &f->out.decisions[i];
            const struct pl_verdict *v;
            pending += d->state == PL_STATE_PENDING;
            if (d->state != PL_STATE_PLACED)
                continue;
            placed++;
            assert_int_equal(d->ntargets, 1);
            v = verdict(d, d->targets[0].cluster);
            assert_true(v->kind == PL_VERDICT_FITS_NOW || d->nverdicts == 1);
        }
        one = dump(&f->out);
        run(f);
        two = dump(&f->out);
        assert_string_equal(one, two);
        free(one);
        free(two);
    }
    /* the rounds exercise both outcomes */
    assert_true(placed > 50);
    assert_true(pending > 50);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(name) cmocka_unit_test_setup_teardown(test_pl_engine__##name, setup, teardown)
        T(names_and_divide),
        T(fragmentation_does_not_fit),
        T(partial_gang_counts),
        T(gpu_taint),
        T(gpu_taint_fits),
        T(node_selector_by_hostname),
        T(ordered_selector_spill),
        T(scale_up),
        T(shape_too_small),
        T(max_nodes_reached),
        T(virtual_nodes_shared),
        T(burst_never_overcommits),
        T(first_fit_after_a_trial),
        T(sticky_after_capacity_frees),
        T(committed_present_not_deducted),
        T(committed_first),
        T(move_after_label_change),
        T(move_when_cluster_removed_or_policy_changed),
        T(replaced_unit_not_counted_twice),
        T(duplicate_sticky_and_cluster_removed),
        T(divide_keeps_previous_cluster_in_domain),
        T(now_governed_by_other_policy),
        T(pending_to_placed_is_state_change),
        T(fill_no_spill),
        T(groupby_gang),
        T(duplicate),
        T(divide_rounding),
        T(divide_part_conserves),
        T(two_policies_match),
        T(namespace_selector),
        T(no_policy),
        T(unreachable),
        T(no_candidate_pending),
        T(duplicate_names_rejected),
        T(input_order_independent),
        T(random_bursts_never_overcommit),
        T(bounded_verdicts),
        T(bounded_verdicts_hold_one_list),
        T(whole_verdicts_if_changed),
#undef T
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
