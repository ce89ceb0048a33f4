/*
 * test_rc_partial.c - a `--once` pass over the clusters a change touches (rc_pass.c,
 * partial_pass) commits what a full pass commits.
 *
 * A seeded random walk of commits to a source of workloads kept in place by a capacity policy
 * on eight simulated clusters (one with an autoscaler), mostly the changes a partial pass
 * takes (a workload's demand, its image; two files at once; files that hold two units), and
 * between them the ones it leaves to the full pass (workloads added and removed, a cluster
 * resized, the policy changed, a file whose lines move). After each commit a `--once` pass on
 * the walk's state directory and a pass without one start from the same deploy head and must
 * leave the same commit id (tree, message and parents), report the same changed paths, and
 * every commit must replay to itself. Demand grows past what the clusters' nodes hold, so that
 * the autoscaler's cluster adds nodes and the snapshot's usage of the clusters a partial pass
 * renders changes with it.
 */
#include "th.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rc_buf.h"
#include "rc_cache.h"
#include "rc_git.h"
#include "rc_hash.h"
#include "rc_pass.h"
#include "th_git.h"
#include "th_rp.h"

#include "rc_banned.h"

#define NCLUSTERS 8
#define MAXW 64
#define STEPS 40

struct work {
    int live;
    int cpu, reps, image;
    int configmap;
    int file;    /* the file it is in: its own (file == id), or a pair's first one's */
    int comment; /* lines of comment before it: moves its document */
    int shared;  /* references the ConfigMap no policy places (it follows its users) */
};

struct world {
    char *repo, *state;
    struct rc_arena a;
    uint64_t rng;
    struct work w[MAXW];
    int nw;
    int nodes[NCLUSTERS];
    int policy; /* the policy's version */
};

static int pick(struct world *x, int n)
{
    x->rng ^= x->rng << 13;
    x->rng ^= x->rng >> 7;
    x->rng ^= x->rng << 17;
    return (int)(x->rng % (uint64_t)n);
}

static void put_cluster(struct world *x, int c)
{
    char path[64], text[1024];
    const char *scale = c == NCLUSTERS - 1 ? "  autoscaler:\n"
                                             "    type: luna\n"
                                             "    nodeShapes:\n"
                                             "    - {name: big, max: 3, allocatable: {cpu: \"8\", "
                                             "memory: 64Gi, pods: \"110\"}}\n"
                                           : "  autoscaler: {type: none}\n";

    snprintf(path, sizeof(path), "fleet/c%d.yaml", c);
    snprintf(
        text, sizeof(text),
        "apiVersion: rightplace.dev/v1alpha1\n"
        "kind: Cluster\n"
        "metadata: {name: c%d}\n"
        "spec:\n"
        "%s"
        "  nodes:\n"
        "  - {name: node, count: %d, allocatable: {cpu: \"8\", memory: 64Gi, pods: \"110\"}}\n",
        c, scale, x->nodes[c]);
    th_write_file(x->repo, path, text, (size_t)-1);
}

static void put_policy(struct world *x)
{
    char text[1024];

    snprintf(text, sizeof(text),
             "apiVersion: policy.elotl.co/v1alpha1\n"
             "kind: SchedulePolicy\n"
             "metadata: {name: capacity, annotations: {version: \"%d\"}}\n"
             "spec:\n"
             "  namespaceSelector:\n"
             "    matchExpressions: [{key: kubernetes.io/metadata.name, operator: Exists}]\n"
             "  resourceSelectors:\n"
             "    labelSelectors:\n"
             "    - matchExpressions: [{key: app.kubernetes.io/instance, operator: Exists}]\n"
             "  groupBy: {labelKey: app.kubernetes.io/instance}\n",
             x->policy);
    th_write_file(x->repo, "policies/capacity.yaml", text, (size_t)-1);
}

static size_t put_doc(char *out, size_t n, const struct work *w, int id)
{
    size_t at = 0;

    for (int k = 0; k < w->comment; k++)
        at += (size_t)snprintf(out + at, n - at, "# note %d\n", k);
    at += (size_t)snprintf(out + at, n - at,
                           "apiVersion: apps/v1\n"
                           "kind: Deployment\n"
                           "metadata:\n"
                           "  name: w%d\n"
                           "  namespace: team-%d\n"
                           "  labels: {app.kubernetes.io/instance: w%d}\n"
                           "spec:\n"
                           "  replicas: %d\n"
                           "  selector: {matchLabels: {app: w%d}}\n"
                           "  template:\n"
                           "    metadata: {labels: {app: w%d}}\n"
                           "    spec:\n"
                           "      containers:\n"
                           "      - name: c\n"
                           "        image: busybox:%d\n"
                           "        resources: {requests: {cpu: %dm, memory: 1Gi}}\n"
                           "%s",
                           id, id % 3, id, w->reps, id, id, 1 + w->image, 500 * w->cpu,
                           w->shared ? "        envFrom: [{configMapRef: {name: shared}}]\n" : "");
    if (w->configmap)
        at += (size_t)snprintf(out + at, n - at,
                               "---\n"
                               "apiVersion: v1\n"
                               "kind: ConfigMap\n"
                               "metadata:\n"
                               "  name: w%d-config\n"
                               "  namespace: team-%d\n"
                               "  labels: {app.kubernetes.io/instance: w%d}\n"
                               "data: {image: \"%d\"}\n",
                               id, id % 3, id, w->image);
    return at;
}

/* The file of workload i, with every live workload in it. */
static void put_file(struct world *x, int file)
{
    char path[64], text[8192];
    size_t at = 0;

    snprintf(path, sizeof(path), "apps/w%d.yaml", file);
    for (int i = 0; i < x->nw; i++) {
        if (!x->w[i].live || x->w[i].file != file)
            continue;
        if (at)
            at += (size_t)snprintf(text + at, sizeof(text) - at, "---\n");
        at += put_doc(text + at, sizeof(text) - at, &x->w[i], i);
    }
    if (at) {
        th_write_file(x->repo, path, text, at);
        return;
    }
    free(th_git_ok(x->repo, "rm", "-q", "--cached", "--ignore-unmatch", path, NULL));
    {
        char full[4096];
        snprintf(full, sizeof(full), "%s/%s", x->repo, path);
        remove(full);
    }
}

static struct work *add_work(struct world *x)
{
    struct work *w = &x->w[x->nw];
    int i = x->nw++;

    memset(w, 0, sizeof(*w));
    w->live = 1;
    w->cpu = 1 + pick(x, 3);
    w->reps = 1 + pick(x, 2);
    w->configmap = pick(x, 2);
    /* one in four shares the file of the one before it: two units in one file */
    w->file = i > 0 && x->w[i - 1].live && pick(x, 4) == 0 ? x->w[i - 1].file : i;
    put_file(x, w->file);
    return w;
}

static struct work *any_live(struct world *x)
{
    for (int tries = 0; tries < 1000; tries++) {
        struct work *w = &x->w[pick(x, x->nw)];
        if (w->live)
            return w;
    }
    return NULL;
}

static const char *mutate(struct world *x)
{
    struct work *w = any_live(x), *v;
    int r = pick(x, 20);

    if (r < 7) {
        w->cpu = 1 + pick(x, 8);
        w->reps = 1 + pick(x, 3);
        put_file(x, w->file);
        return "a workload's demand";
    }
    if (r < 12) {
        w->image++;
        put_file(x, w->file);
        return "a workload's image";
    }
    if (r < 14) {
        v = any_live(x);
        w->image++;
        v->cpu = 1 + pick(x, 4);
        put_file(x, w->file);
        put_file(x, v->file);
        return "two workloads at once";
    }
    if (r == 14 && x->nw < MAXW) {
        add_work(x);
        return "a workload added";
    }
    if (r == 15) {
        w->live = 0;
        put_file(x, w->file);
        return "a workload removed";
    }
    if (r == 16) {
        int c = pick(x, NCLUSTERS);
        x->nodes[c] = 1 + pick(x, 3);
        put_cluster(x, c);
        return "a cluster resized";
    }
    if (r == 17) {
        x->policy++;
        put_policy(x);
        return "the policy changed";
    }
    if (r == 18) {
        w->comment = !w->comment;
        put_file(x, w->file);
        return "a workload's lines moved";
    }
    if (r == 19 && pick(x, 2)) {
        for (int tries = 0; tries < 100 && (!w->live || (w - x->w) % 3); tries++)
            w = any_live(x);
        if ((w - x->w) % 3 == 0) {
            w->shared = !w->shared;
            put_file(x, w->file);
            return w->shared ? "a workload uses the shared ConfigMap"
                             : "a workload stops using the shared ConfigMap";
        }
    }
    th_write_file(x->repo, "README.md", x->rng & 1 ? "fleet\n" : "the fleet\n", (size_t)-1);
    return "a file that is not YAML";
}

static void head_of(char out[41], struct world *x)
{
    th_git_ref(out, x->repo, "refs/heads/deploy");
}

static void set_head(struct world *x, const char *head)
{
    th_git_set_ref(x->repo, "refs/heads/deploy", head);
}

struct outcome {
    char deploy[41];
    int partial, skipped;
    size_t nparsed, nparse_cached;
    double load_s, place_s; /* its phases' times, as the metrics report them */
    char *changes;          /* "<op>\t<path>\n" each */
};

static void pass(struct outcome *out, struct world *x, int with_state)
{
    struct rc_pass_options o = RC_PASS_OPTIONS_INIT;
    struct rc_pass_result res;
    struct rc_err err = RC_ERR_INIT;
    struct rc_cache *cache = NULL;
    struct rc_git *g = NULL;
    size_t cap = 1;

    o.apply = 0;
    o.bounded_verdicts = 1;
    o.last_pass = 1;
    o.parse_threads = with_state ? 0 : 1;
    assert_int_equal(rc_cache_new(&cache, with_state ? x->state : NULL, &err), RC_OK);
    assert_int_equal(rc_git_open(&g, x->repo, NULL, &err), RC_OK);
    o.cache = with_state ? cache : NULL;
    if (getenv("RP_PARTIAL_TRACE") && with_state) {
        static struct rc_log log = RC_LOG_INIT;
        log.level = RC_LOG_DEBUG;
        o.log = &log;
    }
    memset(&res, 0, sizeof(res));
    if (rc_pass_run(&res, g, &o, &x->a, &err) != RC_OK)
        fail_msg("pass (%s): %s", with_state ? "--once" : "no state", err.msg);
    out->partial = res.partial;
    out->skipped = res.skipped;
    out->nparsed = res.nparsed;
    out->nparse_cached = res.nparse_cached;
    out->load_s = res.phase_seconds[RC_PHASE_LOAD];
    out->place_s = res.phase_seconds[RC_PHASE_PLACE];
    for (size_t i = 0; i < res.npaths_changed; i++)
        cap += strlen(res.paths_changed[i].path) + 3;
    out->changes = calloc(1, cap);
    assert_non_null(out->changes);
    for (size_t i = 0, at = 0; i < res.npaths_changed; i++)
        at += (size_t)snprintf(out->changes + at, cap - at, "%c\t%s\n", res.paths_changed[i].op,
                               res.paths_changed[i].path);
    rc_git_free(g);
    rc_cache_free(cache);
    head_of(out->deploy, x);
}

static void world_open(struct world *x, uint64_t seed)
{
    memset(x, 0, sizeof(*x));
    x->rng = seed;
    x->repo = th_git_init("partial", 0);
    x->state = th_tmpdir("partial-state");
    for (int c = 0; c < NCLUSTERS; c++) {
        x->nodes[c] = 1 + pick(x, 2);
        put_cluster(x, c);
    }
    put_policy(x);
    th_write_file(x->repo, "apps/shared.yaml",
                  "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: shared, namespace: team-0}\n"
                  "data: {a: b}\n",
                  (size_t)-1);
    for (int i = 0; i < 36; i++)
        add_work(x);
    free(th_git_ok(x->repo, "add", "-A", NULL));
    free(th_git_ok(x->repo, "commit", "-q", "-m", "fleet", NULL));
}

static void world_close(struct world *x)
{
    rc_arena_release(&x->a);
    th_rm_rf(x->repo);
    th_rm_rf(x->state);
    free(x->repo);
    free(x->state);
}

static void commit_step(struct world *x, const char *what)
{
    free(th_git_ok(x->repo, "add", "-A", NULL));
    free(th_git_ok(x->repo, "commit", "-q", "--allow-empty", "-m", what, NULL));
}

static void walk(uint64_t seed, int steps, int *npartial, int *nfull, int *nusage)
{
    struct world x;

    world_open(&x, seed);
    for (int step = 0; step <= steps; step++) {
        const char *what = step ? mutate(&x) : "the first commit";
        struct outcome once, cold;
        char before[41], msg[200];

        snprintf(msg, sizeof(msg), "seed %llx step %d: %s", (unsigned long long)seed, step, what);
        if (step)
            commit_step(&x, msg);
        head_of(before, &x);
        pass(&once, &x, 1);
        set_head(&x, before);
        pass(&cold, &x, 0);
        if (strcmp(once.deploy, cold.deploy)) {
            char *diff = NULL, *err = NULL;
            if (once.deploy[0] && cold.deploy[0])
                th_git(x.repo, &diff, &err, "diff", cold.deploy, once.deploy, NULL);
            fail_msg("%s: the --once pass (partial %d) left deploy at %.12s, a pass without a "
                     "state directory at %.12s\n%s",
                     msg, once.partial, once.deploy, cold.deploy, diff ? diff : "");
        }
        if (!once.skipped && strcmp(once.changes, cold.changes))
            fail_msg("%s: the --once pass (partial %d) reported the changes\n%s\nwithout a "
                     "state directory\n%s",
                     msg, once.partial, once.changes, cold.changes);
        if (strcmp(cold.deploy, before))
            th_expect_replay(x.repo, cold.deploy, msg);
        /* a partial pass parses what changed and takes up its clusters' files, not all */
        if (once.partial && once.nparsed + once.nparse_cached >= (size_t)x.nw)
            fail_msg("%s: the partial pass read %zu files of %d", msg,
                     once.nparsed + once.nparse_cached, x.nw);
        *npartial += once.partial;
        *nusage += once.partial && strstr(once.changes, "\t.rightplace/capacity.yaml\n") != NULL;
        *nfull += !once.partial && !once.skipped;
        if (getenv("RP_PARTIAL_TRACE"))
            fprintf(stderr, "%s: %.12s -> %.12s, partial %d, skipped %d, read %zu+%zu\n", msg,
                    before, cold.deploy, once.partial, once.skipped, once.nparsed,
                    once.nparse_cached);
        free(once.changes);
        free(cold.changes);
    }
    world_close(&x);
}

static void test_rc_partial__commits_what_a_full_pass_commits(void **state)
{
    /* RP_PARTIAL_SEEDS=N RP_PARTIAL_STEPS=M walk longer */
    const char *ns = getenv("RP_PARTIAL_SEEDS"), *ms = getenv("RP_PARTIAL_STEPS");
    int seeds = ns ? (int)strtol(ns, NULL, 10) : 3, steps = ms ? (int)strtol(ms, NULL, 10) : STEPS;
    int npartial = 0, nfull = 0, nusage = 0;

    (void)state;
    for (uint64_t seed = 1; seed <= (uint64_t)seeds; seed++)
        walk(seed * 0x9E3779B97F4A7C15ULL, steps, &npartial, &nfull, &nusage);
    /* the walks did what they are for: partial passes, some of them changing the snapshot's
     * usage, and full ones between them */
    assert_true(npartial >= seeds * steps / 4);
    assert_true(nusage > 0);
    assert_true(nfull > seeds);
}

/* A one-file change parses that file and takes up the files of its cluster alone. */
static void test_rc_partial__a_change_reads_its_cluster(void **state)
{
    struct world x;
    struct outcome o;
    struct work *w;

    (void)state;
    world_open(&x, 42);
    pass(&o, &x, 1);
    assert_int_equal(o.partial, 0); /* the first pass: no image yet */
    free(o.changes);
    w = &x.w[5];
    w->image++;
    put_file(&x, w->file);
    commit_step(&x, "an image");
    pass(&o, &x, 1);
    assert_int_equal(o.partial, 1);
    assert_int_equal(o.nparsed, 1);
    /* the policy, the cluster's file and the workloads on it: a few of 36 */
    assert_true(o.nparse_cached >= 2 && o.nparse_cached < 20);
    assert_true(o.load_s > 0 && o.place_s > 0); /* for the metrics */
    th_assert_contains(o.changes, "M\tclusters/");
    free(o.changes);
    /* the next pass starts from the image the partial one left */
    w->cpu = w->cpu % 3 + 1;
    put_file(&x, w->file);
    commit_step(&x, "a demand");
    pass(&o, &x, 1);
    assert_int_equal(o.partial, 1);
    free(o.changes);
    world_close(&x);
}

/* The image with file `path`'s clusters replaced by `clusters` (NULL: one its objects are not
 * on), its checksum made again. */
static void image_lies(struct world *x, const char *path, const char *clusters)
{
    char file[4096], *text, *line, *end, *out;
    size_t len = 0, at = 0, plen = strlen(path);

    snprintf(file, sizeof(file), "%s/%s", x->state, RC_IMAGE_FILE);
    text = th_read_all(file, &len);
    assert_non_null(text);
    out = calloc(1, len + (clusters ? strlen(clusters) : 0) + 64);
    assert_non_null(out);
    for (line = text; line < text + len; line = end + 1) {
        char *sp[3];
        end = strchr(line, '\n');
        assert_non_null(end);
        if (!strncmp(line, "end ", 4))
            break;
        /* "<id> <flags> <clusters> <path>" */
        sp[0] = memchr(line, ' ', (size_t)(end - line));
        sp[1] = sp[0] ? memchr(sp[0] + 1, ' ', (size_t)(end - sp[0] - 1)) : NULL;
        sp[2] = sp[1] ? memchr(sp[1] + 1, ' ', (size_t)(end - sp[1] - 1)) : NULL;
        if (sp[2] && (size_t)(end - sp[2] - 1) == plen && !memcmp(sp[2] + 1, path, plen)) {
            char c[2] = {'0' + NCLUSTERS - 1, '\0'};
            /* a cluster its objects are not on */
            while (memchr(sp[1] + 1, c[0], (size_t)(sp[2] - sp[1] - 1)))
                c[0]--;
            if (!clusters)
                clusters = c;
            memcpy(out + at, line, (size_t)(sp[1] + 1 - line));
            at += (size_t)(sp[1] + 1 - line);
            memcpy(out + at, clusters, strlen(clusters));
            at += strlen(clusters);
            memcpy(out + at, sp[2], (size_t)(end + 1 - sp[2]));
            at += (size_t)(end + 1 - sp[2]);
            continue;
        }
        memcpy(out + at, line, (size_t)(end + 1 - line));
        at += (size_t)(end + 1 - line);
    }
    {
        unsigned long long sum = (unsigned long long)rc_xxh64(out, at);
        at += (size_t)snprintf(out + at, 32, "end %016llx\n", sum);
    }
    th_write_all(file, out, at);
    free(out);
    free(text);
}

/* An image that does not say what the record says (a file's objects on another cluster), or
 * that does not read, costs the partial pass and nothing else. */
static void test_rc_partial__an_image_that_lies_runs_the_full_pass(void **state)
{
    struct world x;
    struct outcome once, cold;
    char before[41], file[4096];
    struct work *w;

    (void)state;
    world_open(&x, 7);
    pass(&once, &x, 1);
    free(once.changes);
    w = &x.w[3];
    for (int round = 0; round < 3; round++) {
        w->image++;
        put_file(&x, w->file);
        commit_step(&x, "an image");
        if (round == 0) {
            char path[64];
            snprintf(path, sizeof(path), "apps/w%d.yaml", w->file);
            image_lies(&x, path, NULL);
        } else if (round == 1) {
            FILE *f;
            snprintf(file, sizeof(file), "%s/%s", x.state, RC_IMAGE_FILE);
            f = fopen(file, "r+");
            assert_non_null(f);
            fseek(f, 200, SEEK_SET);
            fputc('#', f);
            fclose(f);
        }
        head_of(before, &x);
        pass(&once, &x, 1);
        set_head(&x, before);
        pass(&cold, &x, 0);
        assert_string_equal(once.deploy, cold.deploy);
        assert_int_equal(once.partial, round == 2);
        free(once.changes);
        free(cold.changes);
    }
    world_close(&x);
}

/* The image reads back as written, and not at all when a byte of it changed or it breaks a
 * rule of its own (files out of order, a cluster whose file declares no Clusters). */
static void test_rc_partial__the_image_reads_back(void **state)
{
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_image im, back;
    struct rc_image_file files[3];
    struct rc_image_cluster clusters[2] = {{"c 1%", 2}, {"c0", 1}};
    uint32_t on[2] = {0, 1};
    const char *listed[2] = {"a.yaml:1:1: duplicate key", "b\nc"};
    struct rc_buf text = RC_BUF_INIT, again = RC_BUF_INIT;

    (void)state;
    memset(&im, 0, sizeof(im));
    memset(files, 0, sizeof(files));
    snprintf(im.key, 41, "%040d", 1);
    snprintf(im.commit, 41, "%040d", 2);
    snprintf(im.source, 41, "%040d", 3);
    snprintf(im.deploy, 41, "%040d", 4);
    im.states[0] = 7;
    im.states[1] = 1;
    im.nwarnings = 2;
    im.nlisted = 2;
    im.listed = listed;
    im.nclusters = 2;
    im.clusters = clusters;
    im.nfiles = 3;
    im.files = files;
    files[0].path = "apps/a b.yaml";
    snprintf(files[0].id, 41, "%040d", 5);
    files[0].nclusters = 2;
    files[0].clusters = on;
    files[1].path = "fleet/c0.yaml";
    snprintf(files[1].id, 41, "%040d", 6);
    files[1].flags = RC_IMAGE_CLUSTER | RC_IMAGE_OTHER;
    files[1].nclusters = 1;
    files[1].clusters = on + 1;
    files[2].path = "fleet/c1.yaml";
    snprintf(files[2].id, 41, "%040d", 7);
    files[2].flags = RC_IMAGE_CLUSTER | RC_IMAGE_CONFIG;
    rc_cache_image_format(&text, &im);
    assert_int_equal(rc_cache_image_parse(&back, text.ptr, text.len, &a), 1);
    rc_cache_image_format(&again, &back);
    assert_int_equal(again.len, text.len);
    assert_memory_equal(again.ptr, text.ptr, text.len);
    assert_string_equal(back.listed[1], "b\nc");
    assert_string_equal(back.clusters[0].name, "c 1%");
    assert_string_equal(back.files[0].path, "apps/a b.yaml");
    assert_int_equal(back.files[0].nclusters, 2);
    assert_int_equal(back.nwarnings, 2);
    assert_int_equal(back.states[0], 7);
    for (size_t i = 0; i < text.len; i += 7) { /* any byte changed: not read */
        text.ptr[i] ^= 0x20;
        assert_int_equal(rc_cache_image_parse(&back, text.ptr, text.len, &a), 0);
        text.ptr[i] ^= 0x20;
    }
    files[1].flags = RC_IMAGE_OTHER; /* c0's file declares no Clusters */
    rc_buf_reset(&text);
    rc_cache_image_format(&text, &im);
    assert_int_equal(rc_cache_image_parse(&back, text.ptr, text.len, &a), 0);
    files[1].flags = RC_IMAGE_CLUSTER;
    files[0].path = "z.yaml"; /* out of order */
    rc_buf_reset(&text);
    rc_cache_image_format(&text, &im);
    assert_int_equal(rc_cache_image_parse(&back, text.ptr, text.len, &a), 0);
    rc_buf_release(&text);
    rc_buf_release(&again);
    rc_arena_release(&a);
}

/* A Namespace that a policy places on one cluster is written, from the repository's object,
 * to every cluster a unit of its namespace is on: a pass over another cluster must load it
 * (and, deciding it, runs the whole pass), or it writes a Namespace without the object's
 * labels there. */
static void test_rc_partial__a_namespace_placed_elsewhere_is_loaded(void **state)
{
    struct world x;
    struct outcome once, cold;
    char before[41];
    char *listing;
    int chosen = -1;

    (void)state;
    world_open(&x, 11);
    th_write_file(x.repo, "infra/team-1.yaml",
                  "apiVersion: v1\nkind: Namespace\n"
                  "metadata: {name: team-1, labels: {app: nsone, owner: ml}}\n",
                  (size_t)-1);
    th_write_file(x.repo, "infra/policy.yaml",
                  "apiVersion: policy.elotl.co/v1alpha1\nkind: SchedulePolicy\n"
                  "metadata: {name: ns-one}\n"
                  "spec:\n"
                  "  clusterSelector: {matchLabels: {kubernetes.io/metadata.name: c7}}\n"
                  "  resourceSelectors: {labelSelectors: [{matchLabels: {app: nsone}}]}\n"
                  "  namespaceSelector:\n"
                  "    matchExpressions: [{key: kubernetes.io/metadata.name, operator: Exists}]\n",
                  (size_t)-1);
    commit_step(&x, "a Namespace placed on c7");
    pass(&once, &x, 1);
    free(once.changes);
    /* a workload of team-1 on another cluster, where the Namespace is written as needed */
    listing = th_git_ok(x.repo, "ls-tree", "-r", "--name-only", "deploy", "clusters/", NULL);
    th_assert_contains(listing, "clusters/c7/_cluster/namespace.team-1.yaml");
    for (int i = 1; i < x.nw && chosen < 0; i += 3) {
        char name[64];
        const char *at;
        snprintf(name, sizeof(name), "/team-1/deployment.w%d.yaml", i);
        at = strstr(listing, name);
        if (at && x.w[i].live && strncmp(at - 2, "c7", 2))
            chosen = i;
    }
    free(listing);
    assert_true(chosen >= 0);
    x.w[chosen].image++;
    put_file(&x, x.w[chosen].file);
    commit_step(&x, "an image in team-1");
    head_of(before, &x);
    pass(&once, &x, 1);
    set_head(&x, before);
    pass(&cold, &x, 0);
    assert_string_equal(once.deploy, cold.deploy);
    assert_int_equal(once.partial, 0);
    free(once.changes);
    free(cold.changes);
    world_close(&x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rc_partial__the_image_reads_back),
        cmocka_unit_test(test_rc_partial__a_change_reads_its_cluster),
        cmocka_unit_test(test_rc_partial__an_image_that_lies_runs_the_full_pass),
        cmocka_unit_test(test_rc_partial__a_namespace_placed_elsewhere_is_loaded),
        cmocka_unit_test(test_rc_partial__commits_what_a_full_pass_commits),
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
