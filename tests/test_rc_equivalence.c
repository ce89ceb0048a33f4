/*
 * test_rc_equivalence.c - the caches change how much work a pass does, never what it
 * decides, and plan says what the pass will do. A seeded random walk of commits to one
 * source repository (workloads edited, their images bumped, added, removed, moved, broken
 * and mended; object collisions; clusters resized and relabelled; policies narrowed and
 * widened; commits that touch no YAML; several at once) runs after each commit a plan and
 * three passes from the same deploy head:
 *
 *   plan  `rightplace plan` first: a dry run on the state directory `once` uses;
 *   cold  a pass without a state directory: no parse cache, no record cache, no memo, and
 *         one thread to parse;
 *   once  `reconcile --once`: a new rc_cache on a state directory the earlier `--once`
 *         passes of the walk filled (the parse cache, the record cache, the memo);
 *   loop  `reconcile --interval`: one rc_cache and one repository handle for the whole walk.
 *
 * The three passes must leave the deploy branch at the same commit id (the same tree,
 * message and parents), and, when they ran in full, report the same units, file errors,
 * warnings and changed paths, which plan must have reported too; a pass that refuses (a
 * broken file whose objects would go) must refuse in all four. The changed paths are the ones
 * the commit changes (git diff), and every commit the walk makes must replay (rc_replay) to
 * itself.
 *
 * One workload in three shares its namespace's group (its instance label is g-<namespace>), so
 * that units of several files are edited, broken, moved and taken away one file at a time
 * (render keeps the unchanged files' objects of such a unit). The prod policy's units spread
 * by turns: onto every prod cluster with overrides, or divided evenly or by percentage, while
 * clusters join and leave prod (render keeps the files of such units too).
 *
 * test_rc_walk checks each pass against a model of the files but does not place; this test
 * has no model and checks placement itself: a take-up that reads one pod too many passes
 * test_rc_walk and fails here. RP_EQ_TRACE=1 prints the walk step by step.
 */
#include "th.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rc_cache.h"
#include "rc_git.h"
#include "rc_pass.h"
#include "th_git.h"
#include "th_rp.h"

#include "rc_banned.h"

#define NCLUSTERS 4
#define NNS 3
#define MAXW 40
#define STEPS 24

static const char *const nss[NNS] = {"team-a", "team-b", "team-c"};

/* The source the walk writes: each workload a file of a Deployment (and sometimes a
 * ConfigMap), one gang by its instance label. */
struct work {
    int live;      /* in the source */
    int broken;    /* its file holds YAML that does not parse */
    int ns, id;    /* namespace index; name "w<id>" */
    int cpu, reps; /* each replica's CPU request, replicas */
    int image;     /* its image's tag, less one: changes the manifest, not the demand */
    int configmap; /* a ConfigMap of the same instance in the same file */
    int dir;       /* which folder the file is in (moves change it) */
    int collides;  /* a second file holds a copy of this workload's Deployment */
};

struct world {
    char *repo, *state_once, *state_loop;
    struct rc_cache *loop;
    struct rc_git *loop_git;
    struct rc_arena a;
    uint64_t seed, rng;
    struct work w[MAXW];
    int nw;
    int nodes[NCLUSTERS], prod[NCLUSTERS];
    int ns_in_any[NNS]; /* namespaces the "any" policy selects */
    int spread;         /* the prod policy's spreadConstraints (spreads[]) */
    int readme;
    /* 0, or a record of more units than this is written in shards: every other walk, so
     * that its fleet (12 workloads at first, up to 40) crosses from one file to shards and back */
    size_t inline_max;
};

static uint64_t next(struct world *x)
{
    /* xorshift64*: the same walk for the same seed on every machine */
    x->rng ^= x->rng >> 12;
    x->rng ^= x->rng << 25;
    x->rng ^= x->rng >> 27;
    return x->rng * 2685821657736338717ULL;
}

static int pick(struct world *x, int n)
{
    return (int)(next(x) % (uint64_t)n);
}

/* One workload in three is in its namespace's group, and asks a tenth of the CPU, so that a
 * group of several fits where it can be placed. */
static int grouped(const struct work *w)
{
    return w->id % 3 == 1;
}

/* The instance label, which makes the unit: its own, or its namespace's group's. */
static const char *instance_of(char *out, size_t n, const struct work *w)
{
    if (grouped(w))
        snprintf(out, n, "g-%s", nss[w->ns]);
    else
        snprintf(out, n, "w%d", w->id);
    return out;
}

static void work_path(char *out, size_t n, const struct work *w)
{
    snprintf(out, n, "apps/d%d/%s/w%d.yaml", w->dir, nss[w->ns], w->id);
}

static void put_work(struct world *x, const struct work *w)
{
    char path[128], text[1024], inst[32];
    int len;

    work_path(path, sizeof(path), w);
    if (w->broken) {
        /* a tab where YAML wants spaces: an error with a line, and nothing of the file read */
        th_write_file(x->repo, path,
                      "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n\tname: x\n", (size_t)-1);
        return;
    }
    len = snprintf(text, sizeof(text),
                   "apiVersion: apps/v1\n"
                   "kind: Deployment\n"
                   "metadata:\n"
                   "  name: w%d\n"
                   "  namespace: %s\n"
                   "  labels: {app.kubernetes.io/instance: %s}\n"
                   "spec:\n"
                   "  replicas: %d\n"
                   "  selector: {matchLabels: {app: w%d}}\n"
                   "  template:\n"
                   "    metadata: {labels: {app: w%d}}\n"
                   "    spec:\n"
                   "      containers:\n"
                   "      - name: c\n"
                   "        image: busybox:%d\n"
                   "        resources: {requests: {cpu: %dm, memory: 1Gi}}\n",
                   w->id, nss[w->ns], instance_of(inst, sizeof(inst), w), w->reps, w->id, w->id,
                   1 + w->image, grouped(w) ? 100 * w->cpu : 1000 * w->cpu);
    if (w->configmap)
        snprintf(text + len, sizeof(text) - (size_t)len,
                 "---\n"
                 "apiVersion: v1\n"
                 "kind: ConfigMap\n"
                 "metadata:\n"
                 "  name: w%d-config\n"
                 "  namespace: %s\n"
                 "  labels: {app.kubernetes.io/instance: %s}\n"
                 "data: {cpu: \"%d\"}\n",
                 w->id, nss[w->ns], inst, w->cpu);
    th_write_file(x->repo, path, text, (size_t)-1);
}

/* The copy of w's Deployment that collides with it (same kind, namespace and name). */
static void put_collision(struct world *x, const struct work *w)
{
    char path[128], text[512], inst[32];

    snprintf(path, sizeof(path), "apps/copies/w%d.yaml", w->id);
    snprintf(text, sizeof(text),
             "apiVersion: apps/v1\nkind: Deployment\n"
             "metadata: {name: w%d, namespace: %s, labels: {app.kubernetes.io/instance: %s}}\n"
             "spec:\n  replicas: 1\n  selector: {matchLabels: {app: w%d}}\n"
             "  template:\n    metadata: {labels: {app: w%d}}\n"
             "    spec: {containers: [{name: c, image: busybox:1}]}\n",
             w->id, nss[w->ns], instance_of(inst, sizeof(inst), w), w->id, w->id);
    th_write_file(x->repo, path, text, (size_t)-1);
}

static void rm_file(struct world *x, const char *path)
{
    free(th_git_ok(x->repo, "rm", "-q", "--cached", "--ignore-unmatch", path, NULL));
    {
        char full[4096];
        snprintf(full, sizeof(full), "%s/%s", x->repo, path);
        remove(full);
    }
}

static void put_cluster(struct world *x, int c)
{
    char path[64], text[1024];
    const char *scale = c == NCLUSTERS - 1 ? "  autoscaler:\n"
                                             "    type: luna\n"
                                             "    nodeShapes:\n"
                                             "    - {name: big, max: 4, allocatable: {cpu: \"16\", "
                                             "memory: 64Gi, pods: \"110\"}}\n"
                                           : "  autoscaler: {type: none}\n";

    snprintf(path, sizeof(path), "fleet/c%d.yaml", c);
    snprintf(
        text, sizeof(text),
        "apiVersion: rightplace.dev/v1alpha1\n"
        "kind: Cluster\n"
        "metadata:\n"
        "  name: c%d\n"
        "  labels: {tier: %s}\n"
        "spec:\n"
        "%s"
        "  nodes:\n"
        "  - {name: node, count: %d, allocatable: {cpu: \"8\", memory: 32Gi, pods: \"110\"}}\n",
        c, x->prod[c] ? "prod" : "dev", scale, x->nodes[c]);
    th_write_file(x->repo, path, text, (size_t)-1);
}

/* The prod policy's spreads: none (one cluster), every prod cluster with overrides that name
 * two Deployments (one of them on a path it lacks: a warning), and Divide evenly or by
 * percentage (the prod clusters change as clusters are relabelled) */
static const char *const spreads[] = {
    "",
    "  spreadConstraints:\n"
    "    spreadMode: Duplicate\n"
    "    topologyKey: kubernetes.io/metadata.name\n"
    "    overrides:\n"
    "    - topologyValue: c0\n"
    "      resources:\n"
    "      - {kind: Deployment, name: w1, namespace: team-a, override: [{fieldPath: "
    "spec.template.spec.containers[0].image, value: {staticValue: \"busybox:c0\"}}]}\n"
    "    - topologyValue: c1\n"
    "      resources:\n"
    "      - {kind: Deployment, name: w4, override: [{fieldPath: "
    "spec.template.spec.volumes[3].name, "
    "value: {staticValue: x}}]}\n",
    "  spreadConstraints:\n"
    "    spreadMode: Divide\n"
    "    topologyKey: kubernetes.io/metadata.name\n",
    "  spreadConstraints:\n"
    "    spreadMode: Divide\n"
    "    topologyKey: kubernetes.io/metadata.name\n"
    "    percentageSplit:\n"
    "    - {topologyValue: c0, percentage: 70}\n"
    "    - {topologyValue: c1, percentage: 30}\n",
};

static void put_policies(struct world *x)
{
    char text[2048], list[128] = "";
    size_t at = 0;

    snprintf(text, sizeof(text),
             "apiVersion: policy.elotl.co/v1alpha1\n"
             "kind: SchedulePolicy\n"
             "metadata: {name: prod}\n"
             "spec:\n"
             "  clusterSelector: {matchLabels: {tier: prod}}\n"
             "  namespaceSelector:\n"
             "    matchLabels: {kubernetes.io/metadata.name: team-a}\n"
             "  resourceSelectors:\n"
             "    labelSelectors:\n"
             "    - matchExpressions: [{key: app.kubernetes.io/instance, operator: Exists}]\n"
             "  groupBy: {labelKey: app.kubernetes.io/instance}\n"
             "%s",
             spreads[x->spread]);
    th_write_file(x->repo, "policies/prod.yaml", text, (size_t)-1);
    for (int i = 1; i < NNS; i++)
        if (x->ns_in_any[i])
            at += (size_t)snprintf(list + at, sizeof(list) - at, "%s%s", at ? ", " : "", nss[i]);
    snprintf(text, sizeof(text),
             "apiVersion: policy.elotl.co/v1alpha1\n"
             "kind: SchedulePolicy\n"
             "metadata: {name: any}\n"
             "spec:\n"
             "  namespaceSelector:\n"
             "    matchExpressions:\n"
             "    - {key: kubernetes.io/metadata.name, operator: In, values: [%s]}\n"
             "  resourceSelectors:\n"
             "    labelSelectors:\n"
             "    - matchExpressions: [{key: app.kubernetes.io/instance, operator: Exists}]\n"
             "  groupBy: {labelKey: app.kubernetes.io/instance}\n",
             list);
    th_write_file(x->repo, "policies/any.yaml", text, (size_t)-1);
}

static struct work *add_work(struct world *x)
{
    struct work *w = &x->w[x->nw];

    memset(w, 0, sizeof(*w));
    w->live = 1;
    w->id = x->nw++;
    w->ns = pick(x, NNS);
    w->cpu = 1 + pick(x, 4);
    w->reps = 1 + pick(x, 3);
    w->configmap = pick(x, 3) == 0;
    w->dir = pick(x, 2);
    put_work(x, w);
    return w;
}

/* A live workload at random (NULL: none). */
static struct work *any_live(struct world *x)
{
    int live[MAXW], n = 0;

    for (int i = 0; i < x->nw; i++)
        if (x->w[i].live)
            live[n++] = i;
    return n ? &x->w[live[pick(x, n)]] : NULL;
}

/* One change to the source; returns what it was, for the failure message. */
static const char *mutate(struct world *x)
{
    struct work *w = any_live(x);
    char path[128];
    int c;

    /* what a person does next about a broken file or a collision, one time in three: until
     * then every pass refuses or keeps, and the walk would test little else */
    for (int i = 0; i < x->nw; i++) {
        struct work *b = &x->w[i];
        if (!b->live || (!b->broken && !b->collides) || pick(x, 3))
            continue;
        if (b->broken) {
            b->broken = 0;
            put_work(x, b);
            return "a broken file mended";
        }
        snprintf(path, sizeof(path), "apps/copies/w%d.yaml", b->id);
        rm_file(x, path);
        b->collides = 0;
        return "a collision undone";
    }
    switch (pick(x, 13)) {
    case 0:
        if (!w)
            break;
        w->cpu = 1 + pick(x, 6);
        w->broken = 0; /* an edit mends a broken file */
        put_work(x, w);
        return "a workload's demand";
    case 1:
        if (x->nw < MAXW) {
            add_work(x);
            return "a new workload";
        }
        break;
    case 2:
        if (!w)
            break;
        work_path(path, sizeof(path), w);
        rm_file(x, path);
        w->live = 0;
        return "a workload removed";
    case 3:
        if (!w)
            break;
        work_path(path, sizeof(path), w);
        rm_file(x, path);
        w->dir = !w->dir;
        put_work(x, w);
        return "a workload moved to another folder";
    case 4:
        if (!w)
            break;
        w->broken = 1;
        put_work(x, w);
        return "a workload's file broken";
    case 5:
        if (!w || w->broken)
            break;
        snprintf(path, sizeof(path), "apps/copies/w%d.yaml", w->id);
        if (w->collides) {
            rm_file(x, path);
            w->collides = 0;
            return "a collision undone";
        }
        put_collision(x, w);
        w->collides = 1;
        return "a colliding copy of a workload";
    case 6:
        c = pick(x, NCLUSTERS);
        x->nodes[c] = 1 + pick(x, 4);
        put_cluster(x, c);
        return "a cluster resized";
    case 7:
        c = pick(x, NCLUSTERS);
        x->prod[c] = !x->prod[c];
        put_cluster(x, c);
        return "a cluster relabelled";
    case 8:
        c = 1 + pick(x, NNS - 1);
        x->ns_in_any[c] = !x->ns_in_any[c];
        put_policies(x);
        return "a policy's namespaces";
    case 10:
        if (!w || w->broken)
            break;
        w->image++;
        put_work(x, w);
        return "a workload's image";
    case 12:
        x->spread = (x->spread + 1 + pick(x, 3)) % 4;
        put_policies(x);
        return "the prod policy's spread";
    case 9: {
        char text[64];
        snprintf(text, sizeof(text), "revision %d\n", ++x->readme);
        th_write_file(x->repo, "README.md", text, (size_t)-1);
        return "a file that is not YAML";
    }
    default:
        if (!w)
            break;
        w->reps = 1 + pick(x, 3);
        w->configmap = !w->configmap;
        put_work(x, w);
        if (x->nw < MAXW)
            add_work(x);
        c = pick(x, NCLUSTERS);
        x->nodes[c] = 2 + pick(x, 3);
        put_cluster(x, c);
        return "several changes at once";
    }
    add_work(x);
    return "a new workload";
}

struct outcome {
    char deploy[41]; /* the deploy head after the pass ("" none) */
    struct rc_pass_result res;
    char *report; /* counts, file errors and warnings, one per line; or the pass's error */
};

static char *report_of(const struct rc_pass_result *r)
{
    size_t cap = 256, at;
    char *s;

    for (size_t i = 0; i < r->nfile_errors; i++)
        cap += strlen(r->file_errors[i].path) + strlen(r->file_errors[i].msg) + 8;
    for (size_t i = 0; i < r->nwarnings; i++)
        cap += strlen(r->warnings[i]) + 4;
    for (size_t i = 0; i < r->npaths_changed; i++)
        cap += strlen(r->paths_changed[i].path) + 8;
    s = malloc(cap);
    assert_non_null(s);
    at = (size_t)snprintf(s, cap, "placed %zu pending %zu unplaced %zu\n", r->placed, r->pending,
                          r->unplaced);
    for (size_t i = 0; i < r->nfile_errors; i++)
        at += (size_t)snprintf(s + at, cap - at, "error %s: %s\n", r->file_errors[i].path,
                               r->file_errors[i].msg);
    for (size_t i = 0; i < r->nwarnings; i++)
        at += (size_t)snprintf(s + at, cap - at, "warning %s\n", r->warnings[i]);
    for (size_t i = 0; i < r->npaths_changed; i++)
        at += (size_t)snprintf(s + at, cap - at, "%c\t%s\n", r->paths_changed[i].op,
                               r->paths_changed[i].path);
    return s;
}

static void head_of(char out[41], struct world *x)
{
    th_git_ref(out, x->repo, "refs/heads/deploy");
}

static void set_head(struct world *x, const char *head)
{
    th_git_set_ref(x->repo, "refs/heads/deploy", head);
}

enum way { PLAN, COLD, ONCE, LOOP };

static void pass(struct outcome *out, struct world *x, enum way way)
{
    struct rc_pass_options o = RC_PASS_OPTIONS_INIT;
    struct rc_err err = RC_ERR_INIT;
    struct rc_cache *cache = NULL;
    struct rc_git *g = NULL;

    o.apply = 0;
    o.render.record_inline_max = x->inline_max;
    o.bounded_verdicts = way != PLAN; /* as reconcile runs, in both modes; plan keeps all */
    o.dry_run = way == PLAN;
    o.last_pass = way != LOOP;
    /* the result does not depend on the threads that parse: the pass without caches parses
     * on one */
    o.parse_threads = way == COLD ? 1 : 0;
    if (way == LOOP) {
        cache = x->loop;
        g = x->loop_git;
    } else {
        /* plan reads the caches a --once pass left and adds what it parses to them */
        assert_int_equal(rc_cache_new(&cache, way == COLD ? NULL : x->state_once, &err), RC_OK);
        assert_int_equal(rc_git_open(&g, x->repo, NULL, &err), RC_OK);
    }
    o.cache = cache;
    memset(&out->res, 0, sizeof(out->res));
    if (rc_pass_run(&out->res, g, &o, &x->a, &err) != RC_OK) {
        /* a refusal (a broken file whose objects would go) is an outcome too */
        size_t n = strlen(err.msg) + sizeof("refused: \n");
        out->report = malloc(n);
        assert_non_null(out->report);
        snprintf(out->report, n, "refused: %s\n", err.msg);
        out->res.skipped = 0;
    } else {
        /* read before the cache and the handle go: the report points into them */
        out->report = report_of(&out->res);
    }
    if (way != LOOP) {
        rc_git_free(g);
        rc_cache_free(cache);
    }
    head_of(out->deploy, x);
}

static const char *const way_name[] = {"plan", "cold", "once", "loop"};

static void expect_same(struct world *x, const struct outcome *want, const struct outcome *got,
                        enum way way, int step, const char *what)
{
    if (way != PLAN && strcmp(want->deploy, got->deploy)) {
        char *diff = NULL, *err = NULL;
        if (want->deploy[0] && got->deploy[0])
            th_git(x->repo, &diff, &err, "diff", "--stat", want->deploy, got->deploy, NULL);
        fail_msg("seed %llx step %d (%s): the %s pass left deploy at %.12s, a pass without "
                 "caches at %.12s\n%s",
                 (unsigned long long)x->seed, step, what, way_name[way], got->deploy, want->deploy,
                 diff ? diff : "");
    }
    if (!got->res.skipped && strcmp(want->report, got->report))
        fail_msg("seed %llx step %d (%s): the %s pass reported\n%s\nwithout caches\n%s",
                 (unsigned long long)x->seed, step, what, way_name[way], got->report, want->report);
}

/* The paths a pass reports changed are the ones its commit changed (git diff). */
static void expect_changes(struct world *x, const char *before, const struct outcome *o, int step,
                           const char *what)
{
    char *diff = NULL, *err = NULL;
    const char *got;

    if (!before[0])
        return; /* the first commit: everything is new */
    assert_int_equal(th_git(x->repo, &diff, &err, "diff", "--name-status", "--no-renames", before,
                            o->deploy, NULL),
                     0);
    /* the report's lines after the counts, errors and warnings */
    for (got = o->report; *got; got = strchr(got, '\n') + 1) {
        if (got[1] == '\t')
            break;
    }
    if (strcmp(got, diff))
        fail_msg("seed %llx step %d (%s): the pass reported the changes\n%s\nthe commit "
                 "made\n%s",
                 (unsigned long long)x->seed, step, what, got, diff);
    free(diff);
    free(err);
}

/* Anyone can replay what the walk committed: the commit recomputed from its source, its
 * parent's record and its capacity snapshot is the commit, byte for byte. */
static void expect_replay(struct world *x, const char *commit, int step, const char *what)
{
    char msg[200];

    snprintf(msg, sizeof(msg), "seed %llx step %d (%s)", (unsigned long long)x->seed, step, what);
    th_expect_replay(x->repo, commit, msg);
}

static void world_open(struct world *x, uint64_t seed)
{
    struct rc_err err = RC_ERR_INIT;

    memset(x, 0, sizeof(*x));
    x->seed = x->rng = seed;
    x->repo = th_git_init("equivalence", 0);
    x->state_once = th_tmpdir("equivalence-once");
    x->state_loop = th_tmpdir("equivalence-loop");
    for (int c = 0; c < NCLUSTERS; c++) {
        x->nodes[c] = 2 + pick(x, 3);
        x->prod[c] = c < 2;
        put_cluster(x, c);
    }
    x->ns_in_any[1] = x->ns_in_any[2] = 1;
    x->spread = pick(x, 4);
    put_policies(x);
    for (int i = 0; i < 12; i++)
        add_work(x);
    free(th_git_ok(x->repo, "add", "-A", NULL));
    free(th_git_ok(x->repo, "commit", "-q", "-m", "fleet", NULL));
    assert_int_equal(rc_cache_new(&x->loop, x->state_loop, &err), RC_OK);
    assert_int_equal(rc_git_open(&x->loop_git, x->repo, NULL, &err), RC_OK);
}

static void world_close(struct world *x)
{
    rc_git_free(x->loop_git);
    rc_cache_free(x->loop);
    rc_arena_release(&x->a);
    th_rm_rf(x->repo);
    th_rm_rf(x->state_once);
    th_rm_rf(x->state_loop);
    free(x->repo);
    free(x->state_once);
    free(x->state_loop);
}

static void walk(uint64_t seed, size_t inline_max, int steps, int *ncommits, int *nskipped,
                 int *nerrors, int *nsharded)
{
    struct world x;

    world_open(&x, seed);
    x.inline_max = inline_max;
    for (int step = 0; step <= steps; step++) {
        const char *what = "the first commit";
        struct outcome o[4];
        char before[41];

        if (step > 0) {
            char msg[160];
            what = mutate(&x);
            snprintf(msg, sizeof(msg), "step %d: %s", step, what);
            free(th_git_ok(x.repo, "add", "-A", NULL));
            free(th_git_ok(x.repo, "commit", "-q", "--allow-empty", "-m", msg, NULL));
        }
        head_of(before, &x);
        for (int k = PLAN; k <= LOOP; k++) {
            set_head(&x, before);
            pass(&o[k], &x, (enum way)k);
        }
        expect_same(&x, &o[COLD], &o[PLAN], PLAN, step, what);
        expect_same(&x, &o[COLD], &o[ONCE], ONCE, step, what);
        expect_same(&x, &o[COLD], &o[LOOP], LOOP, step, what);
        if (strcmp(o[COLD].deploy, before)) {
            char *rec = th_git_show(x.repo, o[COLD].deploy, "placements.yaml");
            expect_changes(&x, before, &o[COLD], step, what);
            expect_replay(&x, o[COLD].deploy, step, what);
            (*ncommits)++;
            *nsharded += rec && strstr(rec, "\nshards: ") != NULL;
            free(rec);
        }
        *nskipped += o[ONCE].res.skipped + o[LOOP].res.skipped;
        *nerrors += o[COLD].res.nfile_errors > 0 || !strncmp(o[COLD].report, "refused", 7);
        if (getenv("RP_EQ_TRACE")) /* the walk, step by step, for whoever reads a failure */
            fprintf(stderr,
                    "seed %llx step %d (%s): deploy %.12s -> %.12s, skipped %d/%d, partial %d\n%s",
                    (unsigned long long)seed, step, what, before, o[COLD].deploy,
                    o[ONCE].res.skipped, o[LOOP].res.skipped, o[ONCE].res.partial, o[COLD].report);
        for (int k = PLAN; k <= LOOP; k++)
            free(o[k].report);
    }
    world_close(&x);
}

static void test_rc_equivalence__caches_never_change_a_decision(void **state)
{
    /* RP_EQ_SEEDS=N RP_EQ_STEPS=M walk longer (the suite: 3 walks of STEPS commits) */
    const char *ns = getenv("RP_EQ_SEEDS"), *ms = getenv("RP_EQ_STEPS");
    int seeds = ns ? (int)strtol(ns, NULL, 10) : 3, steps = ms ? (int)strtol(ms, NULL, 10) : STEPS;
    int ncommits = 0, nskipped = 0, nerrors = 0, nsharded = 0;

    (void)state;

    for (uint64_t seed = 1; seed <= (uint64_t)seeds; seed++)
        walk(seed * 0x9E3779B97F4A7C15ULL, seed % 2 ? 0 : 10, steps, &ncommits, &nskipped, &nerrors,
             &nsharded);
    /* the walks did what they are for: commits, passes the memo stopped, broken files,
     * records in shards */
    assert_true(ncommits >= seeds * steps / 2);
    assert_true(nskipped > 0);
    assert_true(nerrors > 0);
    assert_true(seeds < 2 || nsharded > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rc_equivalence__caches_never_change_a_decision),
    };
    struct rc_err err = RC_ERR_INIT;
    char *home = th_git_env_setup();
    int rc;

    assert_int_equal(rc_git_global_init(&err), RC_OK);
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    rc_git_global_shutdown();
    th_rm_rf(home);
    free(home);
    return rc;
}
