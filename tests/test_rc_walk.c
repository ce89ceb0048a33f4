/*
 * test_rc_walk.c - a seeded random walk over source histories, in-process through rc_pass_run.
 *
 * Each step makes one commit on a copy of examples/repo with the git CLI, chosen at random:
 * add a file (from a pool: lone ConfigMaps, Namespaces, Deployments, Jobs and RayJobs in
 * namespaces the example's policies govern and in ones none governs, a file of several
 * documents, a Divide policy), modify one (an object's name, a label, a request), delete it,
 * rename it (git mv), break it (invalid YAML, or a copy of another file's object), fix it, or
 * change a policy or a Cluster. Then a pass runs, as loop mode runs it (the same rc_cache) or
 * as a new process does (a fresh rc_cache on the state directory, which takes the parsed
 * files from the parse cache file), and what must hold whatever the history is checked
 * against a model of the source files:
 *
 *  - the pass succeeds, or refuses with one of its documented errors ("nothing is moved or
 *    removed" while a broken file has no earlier version; a kept version that clashes), and
 *    only when the model says it may; never a crash (ASan and UBSan runs find the rest);
 *  - the files reported as not loaded are the broken ones: invalid YAML, and both sides of
 *    a duplicate object;
 *  - the record lists, once each, the objects of the files that loaded and of the last good
 *    versions of the broken ones, and no other (a deleted file's objects are gone);
 *  - the deploy tree holds exactly the files of the placed units' objects, under one cluster
 *    directory each unless the unit spreads or follows, the Namespaces they use, and a
 *    kustomization.yaml listing every file of its directory;
 *  - a file that breaks keeps its objects' deploy files byte for byte (blob ids); while a
 *    broken file has no earlier version, nothing leaves the deploy tree;
 *  - a second pass with nothing changed commits nothing (and fails as the first did);
 *  - `kubectl kustomize` builds every cluster directory (every few steps; skipped without
 *    kubectl on PATH).
 *
 * The model knows what the pass does with broken files (rc_pass.c load_source): files are
 * claimed in path order and both sides of a duplicate refused; a broken file's last good
 * version is its newest that loads alone at or before the source commit the deploy head was
 * made from, walking back while the file exists; kept versions that clash stop the pass. It
 * does not place: where units go is read from the record, then checked against the tree.
 *
 * Three seeds of 40 steps by default. RIGHTPLACE_WALK_SEED=n runs seed n alone and
 * RIGHTPLACE_WALK_STEPS=n takes n steps per seed (for long runs by hand). The steps are
 * printed as they are taken (a crash ends the test at its step); commit times are fixed, so a
 * seed replays to the same commits.
 */
#include "th.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "rc_arena.h"
#include "rc_buf.h"
#include "rc_cache.h"
#include "rc_git.h"
#include "rc_pass.h"
#include "rd_output.h"
#include "rd_source.h"
#include "th_git.h"
#include "th_rp.h"

#include "rc_banned.h"

/* ==== The files a walk writes ==== */

enum ekind {
    E_FIXED,   /* a file of examples/repo, as it is */
    E_POLICY,  /* a policy of examples/repo; variants rewrite it */
    E_CLUSTER, /* a Cluster of examples/repo; variants rewrite it */
    E_POOL     /* a file of the walk's own, not in examples/repo */
};

/* Entries: each is one file of the source at most, at its path or under moved/. */
enum {
    FX_RJ1,
    FX_RJ2,
    FX_EXP,
    FX_RSDEV,
    FX_RSPROD,
    FX_NS_DEV,
    FX_NS_EXP,
    FX_NS_PROD,
    FX_NS_RJ1,
    FX_NS_RJ2,
    FX_NS_RJ3,
    PO_RJ1,
    PO_RJ2,
    PO_RJ3,
    PO_STATIC,
    PO_DEV,
    PO_PROD,
    PO_NS,
    CL_STATIC,
    CL_DYN,
    P_CM_LONE,
    P_CM_DEV,
    P_NS_FREE,
    P_NS_SPLIT,
    P_DEP_DEV,
    P_DEP_PROD,
    P_JOB_RJ1,
    P_RAYJOB_RJ3,
    P_MULTI,
    P_DEP_EXP,
    P_DEP_DEFAULT,
    P_ROLE,
    P_SPLIT_POLICY,
    P_DEP_SPLIT,
    NENTRIES
};

#define NVAR 3 /* variant dimensions: an object's name, a label, a request */
#define MAX_KEYS 6
#define KEY_MAX 96
#define NSLOTS (NENTRIES * 2) /* an entry at its path, or under moved/ */
#define MAX_HISTORY 64        /* rc_pass.c MAX_HISTORY_WALK */

struct entry {
    const char *path;
    enum ekind kind;
    int nvar[NVAR];             /* values each variant takes (1: none) */
    const char *keys[MAX_KEYS]; /* E_FIXED: its objects, in document order */
};

static const struct entry entries[NENTRIES] = {
    [FX_RJ1] = {"fill-and-spill/rayjob-rayjob1.yaml",
                E_FIXED,
                {1, 1, 1},
                {"rayjob1/RayJob/rayjob-train", "rayjob1/ConfigMap/ray-job-code-train"}},
    [FX_RJ2] = {"fill-and-spill/rayjob-rayjob2.yaml",
                E_FIXED,
                {1, 1, 1},
                {"rayjob2/RayJob/rayjob-train", "rayjob2/ConfigMap/ray-job-code-train"}},
    [FX_EXP] = {"fill-no-spill/rayjob-experiments.yaml",
                E_FIXED,
                {1, 1, 1},
                {"experiments/RayJob/rayjob-train", "experiments/ConfigMap/ray-job-code-train"}},
    [FX_RSDEV] = {"right-cluster/rayservice-development.yaml",
                  E_FIXED,
                  {1, 1, 1},
                  {"development/RayService/text-summarizer"}},
    [FX_RSPROD] = {"right-cluster/rayservice-production.yaml",
                   E_FIXED,
                   {1, 1, 1},
                   {"production/RayService/text-summarizer"}},
    [FX_NS_DEV] = {"infra/namespace-development.yaml",
                   E_FIXED,
                   {1, 1, 1},
                   {"Namespace/development"}},
    [FX_NS_EXP] = {"infra/namespace-experiments.yaml",
                   E_FIXED,
                   {1, 1, 1},
                   {"Namespace/experiments"}},
    [FX_NS_PROD] = {"infra/namespace-production.yaml",
                    E_FIXED,
                    {1, 1, 1},
                    {"Namespace/production"}},
    [FX_NS_RJ1] = {"infra/namespace-rayjob1.yaml", E_FIXED, {1, 1, 1}, {"Namespace/rayjob1"}},
    [FX_NS_RJ2] = {"infra/namespace-rayjob2.yaml", E_FIXED, {1, 1, 1}, {"Namespace/rayjob2"}},
    [FX_NS_RJ3] = {"infra/namespace-rayjob3.yaml", E_FIXED, {1, 1, 1}, {"Namespace/rayjob3"}},
    [PO_RJ1] = {"fill-and-spill/policy-rayjob1.yaml", E_POLICY, {1, 1, 1}, {NULL}},
    [PO_RJ2] = {"fill-and-spill/policy-rayjob2.yaml", E_POLICY, {1, 1, 1}, {NULL}},
    [PO_RJ3] = {"fill-and-spill/policy-rayjob3.yaml", E_POLICY, {1, 2, 1}, {NULL}},
    [PO_STATIC] = {"fill-no-spill/policy.yaml", E_POLICY, {1, 1, 1}, {NULL}},
    [PO_DEV] = {"right-cluster/policy-development.yaml", E_POLICY, {1, 3, 1}, {NULL}},
    [PO_PROD] = {"right-cluster/policy-production.yaml", E_POLICY, {1, 2, 1}, {NULL}},
    [PO_NS] = {"infra/ns-policy.yaml", E_POLICY, {1, 2, 1}, {NULL}},
    [CL_STATIC] = {"fleet/static-cluster.yaml", E_CLUSTER, {1, 2, 3}, {NULL}},
    [CL_DYN] = {"fleet/dynamic-cluster.yaml", E_CLUSTER, {1, 2, 2}, {NULL}},
    [P_CM_LONE] = {"walk/cm-lone.yaml", E_POOL, {3, 2, 2}, {NULL}},
    [P_CM_DEV] = {"walk/cm-dev.yaml", E_POOL, {2, 2, 2}, {NULL}},
    [P_NS_FREE] = {"walk/ns-free.yml", E_POOL, {1, 2, 1}, {NULL}},
    [P_NS_SPLIT] = {"walk/ns-split.yaml", E_POOL, {1, 2, 1}, {NULL}},
    [P_DEP_DEV] = {"walk/dep-dev.yaml", E_POOL, {2, 2, 4}, {NULL}},
    [P_DEP_PROD] = {"walk/dep-prod.yaml", E_POOL, {2, 2, 4}, {NULL}},
    [P_JOB_RJ1] = {"walk/job-rayjob1.yaml", E_POOL, {2, 2, 3}, {NULL}},
    [P_RAYJOB_RJ3] = {"walk/rayjob-rayjob3.yaml", E_POOL, {2, 2, 4}, {NULL}},
    [P_MULTI] = {"walk/multi.yaml", E_POOL, {2, 2, 2}, {NULL}},
    [P_DEP_EXP] = {"walk/dep-experiments.yaml", E_POOL, {2, 1, 3}, {NULL}},
    [P_DEP_DEFAULT] = {"walk/dep-default.yaml", E_POOL, {2, 2, 1}, {NULL}},
    [P_ROLE] = {"walk/role.yaml", E_POOL, {2, 2, 2}, {NULL}},
    [P_SPLIT_POLICY] = {"walk/policy-split.yaml", E_POOL, {1, 2, 3}, {NULL}},
    [P_DEP_SPLIT] = {"walk/dep-split.yaml", E_POOL, {2, 2, 4}, {NULL}},
};

/* Policies whose units may be on several clusters (Duplicate or Divide). */
static const char *const spread_policies[] = {"ns-policy", "walk-split-policy"};

enum broken { B_NONE, B_SYNTAX, B_DUP };

/* One distinct content of a file (interned by its bytes: one blob id each). */
struct version {
    char *text;
    char id[41]; /* its blob id */
    int good;    /* loads alone */
    int nkeys;
    char keys[MAX_KEYS + 1][KEY_MAX];
};

/* An entry's file as the walk left it. */
struct mfile {
    int present;
    int moved; /* at "moved/<path>" */
    int var[NVAR];
    enum broken broken;
    char *dup_doc; /* B_DUP: the document copied from another file */
    char dup_key[KEY_MAX];
    int ver; /* its version now */
};

/* ==== Small helpers ==== */

struct sset {
    size_t n, cap;
    char **v;
};

static void sset_add(struct sset *s, const char *x)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 16;
        s->v = realloc(s->v, s->cap * sizeof(*s->v));
        assert_non_null(s->v);
    }
    s->v[s->n] = strdup(x);
    assert_non_null(s->v[s->n]);
    s->n++;
}

static int sset_find(const struct sset *s, const char *x)
{
    for (size_t i = 0; i < s->n; i++) {
        if (!strcmp(s->v[i], x))
            return (int)i;
    }
    return -1;
}

static void sset_free(struct sset *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->v[i]);
    free(s->v);
    memset(s, 0, sizeof(*s));
}

static void bprintf(struct rc_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void bprintf(struct rc_buf *b, const char *fmt, ...)
{
    struct rc_err err = RC_ERR_INIT;
    va_list ap;
    int rc;

    va_start(ap, fmt);
    rc = rc_buf_vprintf(b, &err, fmt, ap);
    va_end(ap);
    assert_int_equal(rc, RC_OK);
}

static int is_spread_policy(const char *p)
{
    for (size_t i = 0; p && i < sizeof(spread_policies) / sizeof(spread_policies[0]); i++) {
        if (!strcmp(p, spread_policies[i]))
            return 1;
    }
    return 0;
}

static int is_namespace_key(const char *k)
{
    return !strncmp(k, "Namespace/", 10);
}

/* The path of object `key` under a cluster directory (rd_output.h): "<ns>/<kind>.<name>.yaml",
 * cluster-scoped "_cluster/<kind>.<name>.yaml", the kind in lower case. */
static void key_rel(char *out, size_t n, const char *key)
{
    const char *p1 = strchr(key, '/');
    const char *p2 = p1 ? strchr(p1 + 1, '/') : NULL;
    const char *ns = "_cluster", *kind = key, *name;
    size_t nslen = 8, kindlen;
    char lower[64];

    assert_non_null(p1);
    if (p2) {
        ns = key;
        nslen = (size_t)(p1 - key);
        kind = p1 + 1;
        kindlen = (size_t)(p2 - kind);
        name = p2 + 1;
    } else {
        kindlen = (size_t)(p1 - key);
        name = p1 + 1;
    }
    assert_true(kindlen < sizeof(lower));
    for (size_t i = 0; i < kindlen; i++)
        lower[i] = (char)(kind[i] >= 'A' && kind[i] <= 'Z' ? kind[i] - 'A' + 'a' : kind[i]);
    lower[kindlen] = '\0';
    snprintf(out, n, "%.*s/%s.%s.yaml", (int)nslen, ns, lower, name);
}

static void mkdirs(const char *repo, const char *rel)
{
    char path[4096];
    size_t base;

    snprintf(path, sizeof(path), "%s/%s", repo, rel);
    base = strlen(repo) + 1;
    for (char *p = path + base; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(path, 0755) < 0 && errno != EEXIST)
            fail_msg("mkdir %s: %s", path, strerror(errno));
        *p = '/';
    }
}

/* ==== The deploy branch as the git CLI lists it ==== */

struct tree {
    char head[41]; /* "": no deploy branch */
    struct sset path, id;
};

static void tree_free(struct tree *t)
{
    sset_free(&t->path);
    sset_free(&t->id);
    t->head[0] = '\0';
}

/* The deploy branch's files; `same`: a listing already read, of the head it had then. */
static void tree_read(struct tree *t, const struct tree *same, struct rc_git *g, const char *repo)
{
    struct rc_err err = RC_ERR_INIT;
    char *out;

    tree_free(t);
    if (rc_git_resolve(t->head, g, "refs/heads/deploy", &err) != RC_OK) {
        t->head[0] = '\0';
        return;
    }
    if (same && same->head[0] && !strcmp(same->head, t->head)) {
        /* the head did not move: its listing */
        for (size_t i = 0; i < same->path.n; i++) {
            sset_add(&t->path, same->path.v[i]);
            sset_add(&t->id, same->id.v[i]);
        }
        return;
    }
    out = th_git_ok(repo, "ls-tree", "-r", "--full-tree", "deploy", NULL);
    for (char *line = out; line && *line;) {
        char *nl = strchr(line, '\n');
        char *tab = strchr(line, '\t');
        if (nl)
            *nl = '\0';
        assert_non_null(tab);
        /* "<mode> blob <id>\t<path>" */
        assert_true(tab - line > 41);
        tab[0] = '\0';
        sset_add(&t->id, tab - 40);
        sset_add(&t->path, tab + 1);
        line = nl ? nl + 1 : NULL;
    }
    free(out);
}

/* The cluster directory a deploy path is under: "clusters/<c>/<rest>"; 0 otherwise. */
static int split_cluster_path(const char *path, char *cluster, size_t n, const char **rest)
{
    const char *c, *slash;

    if (strncmp(path, "clusters/", 9))
        return 0;
    c = path + 9;
    slash = strchr(c, '/');
    if (!slash || (size_t)(slash - c) >= n)
        return 0;
    memcpy(cluster, c, (size_t)(slash - c));
    cluster[slash - c] = '\0';
    *rest = slash + 1;
    return 1;
}

/* The bytes of file `path` of tree t (by the blob id git listed), NUL-terminated, in a; NULL
 * when t has no such file. */
static char *tree_blob(struct rc_git *g, const struct tree *t, const char *path, struct rc_arena *a)
{
    struct rc_err err = RC_ERR_INIT;
    int i = sset_find(&t->path, path);
    char *data = NULL;
    size_t len = 0;

    if (i < 0)
        return NULL;
    if (rc_git_read_blob(&data, &len, g, t->id.v[i], (size_t)1 << 30, a, &err) != RC_OK)
        fail_msg("blob %s of %s: %s", t->id.v[i], path, err.msg);
    return data;
}

/* ==== The walk ==== */

enum action {
    A_ADD,
    A_MODIFY,
    A_DELETE,
    A_RENAME,
    A_BREAK,
    A_DUP,
    A_FIX,
    A_POLICY,
    A_CLUSTER,
    A_N
};

static const int action_weights[A_N] = {5, 4, 3, 2, 2, 2, 3, 1, 1};

enum pass_mode { M_LOOP, M_ONCE };

struct walk {
    uint64_t rng;
    unsigned seed;
    char *repo, *state;
    struct rc_git *g;
    struct rc_cache *cache;
    int cache_spent; /* the last pass ran as --once does: the next one is a new process */
    char *orig[NENTRIES];
    char paths[NSLOTS][160];
    int order[NSLOTS]; /* slots in path order, as the pass reads the files */
    struct mfile f[NENTRIES];
    struct version *ver;
    size_t nver, capver;
    int *snap;          /* per commit, NSLOTS version ids (-1: absent) */
    char (*commit)[41]; /* per commit */
    int ncommits;
    int prev_ok;               /* the last pass succeeded */
    int prev_loaded[NSLOTS];   /* the version it loaded as is (-1: none) */
    struct tree before, after; /* the deploy tree before and after this step's pass */
    struct sset recorded;      /* the objects the record names before this step's pass */
    int step;
    int kubectl;
    int count[A_N];
    int nok, nrefused_unresolved, nrefused_clash, ncommitted, nskipped, nerrored_files;
    int nrefused_after_commit; /* second passes refused after a first that committed */
    int nbroke_checked, ndeleted_checked, nunresolved_checked, nkustomized; /* checks made */
};

static void wfail(struct walk *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void wfail(struct walk *w, const char *fmt, ...)
{
    char msg[2048];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    fail_msg("seed %u step %d: %s (repo %s)", w->seed, w->step, msg, w->repo);
}

/* The walk's steps go to stdout as they are taken (ctest shows them when the test fails), so
 * that a crash, which ends the test without a word, is found at its step. */
static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void say(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    fflush(stdout);
}

/* splitmix64 */
static uint64_t rnd64(struct walk *w)
{
    uint64_t z = (w->rng += 0x9e3779b97f4a7c15ull);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static int rnd(struct walk *w, int n)
{
    return (int)(rnd64(w) % (uint64_t)n);
}

static int slot_of(const struct walk *w, int e)
{
    return e * 2 + w->f[e].moved;
}

static int cmp_slot_path(const void *x, const void *y, void *arg)
{
    const struct walk *w = arg;

    return strcmp(w->paths[*(const int *)x], w->paths[*(const int *)y]);
}

/* ---- generated files ---- */

static const char *const cpu_values[] = {"100m", "1", "6", "64"};

static void deployment(struct rc_buf *b, const char *name, const char *ns, const char *labels,
                       int replicas, const char *cpu, const char *volume)
{
    bprintf(b, "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: %s\n", name);
    if (ns)
        bprintf(b, "  namespace: %s\n", ns);
    bprintf(b,
            "  labels: {%s}\nspec:\n  replicas: %d\n  selector: {matchLabels: {run: %s}}\n"
            "  template:\n    metadata: {labels: {run: %s}}\n    spec:\n      containers:\n"
            "      - name: c\n        image: nginx:1.27\n"
            "        resources: {requests: {cpu: \"%s\", memory: 64Mi}}\n",
            labels, replicas, name, name, cpu);
    if (volume)
        bprintf(b,
                "        volumeMounts: [{name: conf, mountPath: /conf}]\n      volumes:\n"
                "      - name: conf\n        configMap: {name: %s}\n",
                volume);
}

static void policy(struct rc_buf *b, const char *name, const char *cluster_class, const char *ns,
                   const char *label, const char *group_by)
{
    bprintf(b,
            "apiVersion: policy.elotl.co/v1alpha1\nkind: SchedulePolicy\nmetadata:\n"
            "  name: %s\nspec:\n",
            name);
    if (cluster_class)
        bprintf(b, "  clusterSelector:\n    matchLabels:\n      cluster.class: %s\n",
                cluster_class);
    bprintf(b,
            "  namespaceSelector:\n    matchLabels:\n      kubernetes.io/metadata.name: %s\n"
            "  resourceSelectors:\n    labelSelectors:\n    - matchLabels:\n        %s\n",
            ns, label);
    if (group_by)
        bprintf(b, "  groupBy:\n    labelKey: %s\n", group_by);
}

/* The text of entry e with variants var, and its objects' keys in document order. */
static void gen_text(struct walk *w, struct rc_buf *b, struct version *v, int e, const int *var)
{
    const struct entry *en = &entries[e];
    char name[64], key[KEY_MAX], conf[64];
    int nv = var[0], lv = var[1], rv = var[2];

    v->nkeys = 0;
#define KEY(...)                                                                                   \
    do {                                                                                           \
        snprintf(key, sizeof(key), __VA_ARGS__);                                                   \
        snprintf(v->keys[v->nkeys++], KEY_MAX, "%s", key);                                         \
    } while (0)
    if (en->kind == E_FIXED ||
        ((en->kind == E_POLICY || en->kind == E_CLUSTER) && !nv && !lv && !rv)) {
        bprintf(b, "%s", w->orig[e]);
        for (int i = 0; i < MAX_KEYS && en->keys[i]; i++)
            KEY("%s", en->keys[i]);
        return;
    }
    switch (e) {
    case PO_RJ3:
        policy(b, "rayjob-capacity-policy-rayjob3", "production", "rayjob3",
               "app.kubernetes.io/instance: rayjob", "app.kubernetes.io/instance");
        break;
    case PO_DEV:
        policy(b, "rayservice-development-policy",
               lv == 1   ? "production"
               : lv == 2 ? NULL
                         : "development",
               "development", "app.kubernetes.io/instance: rayservice", NULL);
        break;
    case PO_PROD:
        policy(b, "rayservice-production-policy", lv ? "development" : "production", "production",
               "app.kubernetes.io/instance: rayservice", NULL);
        break;
    case PO_NS:
        bprintf(b, "apiVersion: policy.elotl.co/v1alpha1\nkind: SchedulePolicy\nmetadata:\n"
                   "  name: ns-policy\nspec:\n  spreadConstraints:\n    spreadMode: Duplicate\n"
                   "    topologyKey: kubernetes.io/metadata.name\n  resourceSelectors:\n"
                   "    labelSelectors:\n    - matchLabels:\n        app: rayclustersetup-off\n"
                   "  namespaceSelector:\n    matchExpressions:\n"
                   "    - key: kubernetes.io/metadata.name\n      operator: Exists\n"
                   "  groupBy:\n    labelKey: app\n");
        break;
    case CL_STATIC:
        bprintf(
            b,
            "apiVersion: rightplace.dev/v1alpha1\nkind: Cluster\nmetadata:\n"
            "  name: static-cluster\n  labels:\n    cluster.class: %s\n"
            "    nova.elotl.co/cluster.provider: onprem\nspec:\n  autoscaler:\n"
            "    type: none\n  nodes:\n  - name: cpu\n    count: 2\n"
            "    allocatable: {cpu: \"8\", memory: 32Gi, pods: \"110\"}\n  - name: gpu\n"
            "    count: %d\n"
            "    allocatable: {cpu: \"8\", memory: 32Gi, nvidia.com/gpu: \"1\", pods: \"110\"}\n"
            "    labels: {node.kubernetes.io/instance-type: g4dn.2xlarge}\n    taints:\n"
            "    - {key: nvidia.com/gpu, value: \"true\", effect: NoSchedule}\n",
            lv ? "production" : "development",
            rv == 0   ? 5
            : rv == 1 ? 1
                      : 8);
        break;
    case CL_DYN:
        bprintf(
            b,
            "apiVersion: rightplace.dev/v1alpha1\nkind: Cluster\nmetadata:\n"
            "  name: dynamic-cluster\n  labels:\n    cluster.class: %s\n"
            "    nova.elotl.co/cluster.provider: aws\nspec:\n  autoscaler:\n    type: luna\n"
            "    nodeShapes:\n    - name: m5.2xlarge\n      max: 10\n      costPerHour: 0.384\n"
            "      allocatable: {cpu: \"8\", memory: 32Gi, pods: \"110\"}\n"
            "    - name: g4dn.xlarge\n      max: 8\n      costPerHour: 0.526\n"
            "      allocatable: {cpu: \"4\", memory: 16Gi, nvidia.com/gpu: \"1\", pods: \"29\"}\n"
            "      taints:\n      - {key: nvidia.com/gpu, value: \"true\", effect: NoSchedule}\n"
            "  nodes:\n  - name: system\n    count: %d\n"
            "    allocatable: {cpu: \"8\", memory: 32Gi, pods: \"110\"}\n",
            lv ? "development" : "production", rv ? 3 : 1);
        break;
    case P_CM_LONE:
        snprintf(name, sizeof(name), "lone-%d", nv);
        bprintf(b,
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: walk-free\n"
                "  labels: {team: t%d}\ndata:\n  value: \"%d\"\n",
                name, lv, rv);
        KEY("walk-free/ConfigMap/%s", name);
        break;
    case P_CM_DEV:
        snprintf(name, sizeof(name), "settings-%d", nv);
        bprintf(b,
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n"
                "  namespace: development\n  labels: {app.kubernetes.io/instance: %s}\n"
                "data:\n  level: \"%d\"\n",
                name, lv ? "other" : "rayservice", rv);
        KEY("development/ConfigMap/%s", name);
        break;
    case P_NS_FREE:
    case P_NS_SPLIT: {
        const char *ns = e == P_NS_FREE ? "walk-free" : "walk-split";
        bprintf(b, "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: %s\n  labels: {%s}\n", ns,
                lv ? "team: walk" : "app: rayclustersetup");
        KEY("Namespace/%s", ns);
        break;
    }
    case P_DEP_DEV:
    case P_DEP_PROD: {
        const char *ns = e == P_DEP_DEV ? "development" : "production";
        snprintf(name, sizeof(name), "web-%d", nv);
        deployment(b, name, ns,
                   lv ? "app.kubernetes.io/instance: other"
                      : "app.kubernetes.io/instance: rayservice",
                   1, cpu_values[rv], NULL);
        KEY("%s/Deployment/%s", ns, name);
        break;
    }
    case P_JOB_RJ1:
        snprintf(name, sizeof(name), "batch-%d", nv);
        bprintf(b,
                "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: %s\n  namespace: rayjob1\n"
                "  labels: {app.kubernetes.io/instance: %s}\nspec:\n  parallelism: 1\n"
                "  template:\n    spec:\n      restartPolicy: Never\n      containers:\n"
                "      - name: c\n        image: busybox:1.36\n"
                "        resources: {requests: {cpu: \"%s\"}}\n",
                name, lv ? "batch" : "rayjob", cpu_values[rv]);
        KEY("rayjob1/Job/%s", name);
        break;
    case P_RAYJOB_RJ3:
        snprintf(name, sizeof(name), "small-%d", nv);
        bprintf(b,
                "apiVersion: ray.io/v1\nkind: RayJob\nmetadata:\n  name: %s\n"
                "  namespace: rayjob3\n  labels: {app.kubernetes.io/instance: %s}\nspec:\n"
                "  entrypoint: python -c 'print(1)'\n  rayClusterSpec:\n    headGroupSpec:\n"
                "      rayStartParams: {}\n      template:\n        spec:\n"
                "          containers:\n          - name: head\n"
                "            image: rayproject/ray:2.9.0\n"
                "            resources: {requests: {cpu: \"1\", memory: 2Gi}}\n"
                "    workerGroupSpecs:\n    - groupName: gpu\n      replicas: %d\n"
                "      minReplicas: 0\n      maxReplicas: 10\n      rayStartParams: {}\n"
                "      template:\n        spec:\n          tolerations:\n"
                "          - {key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}\n"
                "          containers:\n          - name: worker\n"
                "            image: rayproject/ray:2.9.0\n"
                "            resources: {requests: {cpu: \"2\", memory: 4Gi, nvidia.com/gpu: 1}}\n",
                name, lv ? "solo" : "rayjob",
                rv == 0   ? 1
                : rv == 1 ? 2
                : rv == 2 ? 4
                          : 9);
        KEY("rayjob3/RayJob/%s", name);
        break;
    case P_MULTI:
        snprintf(name, sizeof(name), "app-%d", nv);
        snprintf(conf, sizeof(conf), "app-conf-%d", nv);
        deployment(b, name, "development",
                   lv ? "app.kubernetes.io/instance: other"
                      : "app.kubernetes.io/instance: rayservice",
                   1, "100m", conf);
        bprintf(b,
                "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n"
                "  namespace: development\ndata:\n  mode: \"%d\"\n",
                conf, rv);
        bprintf(b,
                "---\napiVersion: v1\nkind: Service\nmetadata:\n  name: %s\n"
                "  namespace: development\nspec:\n  selector: {run: %s}\n  ports: [{port: 80}]\n",
                name, name);
        KEY("development/Deployment/%s", name);
        KEY("development/ConfigMap/%s", conf);
        KEY("development/Service/%s", name);
        break;
    case P_DEP_EXP:
        snprintf(name, sizeof(name), "trial-%d", nv);
        deployment(b, name, "experiments", "app.kubernetes.io/instance: rayjob", 1, cpu_values[rv],
                   NULL);
        KEY("experiments/Deployment/%s", name);
        break;
    case P_DEP_DEFAULT:
        snprintf(name, sizeof(name), "plain-%d", nv);
        deployment(b, name, NULL, lv ? "app.kubernetes.io/instance: rayservice" : "app: plain", 1,
                   "100m", NULL);
        KEY("default/Deployment/%s", name);
        break;
    case P_ROLE:
        snprintf(name, sizeof(name), "walk-reader-%d", nv);
        bprintf(b,
                "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n"
                "  name: %s\n  labels: {%s}\nrules:\n- apiGroups: [\"\"]\n"
                "  resources: [configmaps]\n  verbs: [%s]\n",
                name, lv ? "team: walk" : "app: rayclustersetup", rv ? "get, list" : "get");
        KEY("ClusterRole/%s", name);
        break;
    case P_SPLIT_POLICY:
        bprintf(b,
                "apiVersion: policy.elotl.co/v1alpha1\nkind: SchedulePolicy\nmetadata:\n"
                "  name: walk-split-policy\nspec:\n  namespaceSelector:\n    matchLabels:\n"
                "      kubernetes.io/metadata.name: walk-split\n  resourceSelectors:\n"
                "    labelSelectors:\n    - matchLabels: {app: split}\n"
                "  spreadConstraints:\n    spreadMode: %s\n"
                "    topologyKey: kubernetes.io/metadata.name\n    percentageSplit:\n"
                "    - {topologyValue: static-cluster, percentage: %d}\n"
                "    - {topologyValue: dynamic-cluster, percentage: %d}\n",
                lv ? "Duplicate" : "Divide",
                rv == 0   ? 50
                : rv == 1 ? 30
                          : 100,
                rv == 0   ? 50
                : rv == 1 ? 70
                          : 0);
        break;
    case P_DEP_SPLIT:
        snprintf(name, sizeof(name), "split-%d", nv);
        deployment(b, name, "walk-split", lv ? "app: nosplit" : "app: split",
                   rv == 0   ? 2
                   : rv == 1 ? 4
                   : rv == 2 ? 7
                             : 10,
                   "100m", NULL);
        KEY("walk-split/Deployment/%s", name);
        break;
    default:
        fail_msg("entry %d has no generator", e);
    }
#undef KEY
}

/* The first document of a text (for a copy of its object in another file). */
static char *first_doc(const char *text)
{
    const char *end = strstr(text, "\n---\n");
    size_t n = end ? (size_t)(end - text) + 1 : strlen(text);
    char *d = malloc(n + 1);

    assert_non_null(d);
    memcpy(d, text, n);
    d[n] = '\0';
    return d;
}

/* The version entry e's file has now (its text, broken or not), interned. */
static int make_version(struct walk *w, int e)
{
    const struct mfile *m = &w->f[e];
    struct rc_buf b = RC_BUF_INIT;
    struct version v;
    size_t len;

    memset(&v, 0, sizeof(v));
    gen_text(w, &b, &v, e, m->var);
    v.good = m->broken != B_SYNTAX;
    if (m->broken == B_SYNTAX)
        bprintf(&b, "%swalk-broken: [unclosed\n", b.len && b.ptr[b.len - 1] == '\n' ? "" : "\n");
    if (m->broken == B_DUP) {
        bprintf(&b, "%s---\n%s", b.len && b.ptr[b.len - 1] == '\n' ? "" : "\n", m->dup_doc);
        snprintf(v.keys[v.nkeys++], KEY_MAX, "%s", m->dup_key);
    }
    v.text = rc_buf_detach(&b, &len);
    for (size_t i = 0; i < w->nver; i++) {
        if (!strcmp(w->ver[i].text, v.text)) {
            free(v.text);
            return (int)i;
        }
    }
    {
        struct rc_err err = RC_ERR_INIT;
        assert_int_equal(rc_git_digest(v.id, v.text, len, &err), RC_OK);
    }
    if (w->nver == w->capver) {
        w->capver = w->capver ? 2 * w->capver : 64;
        w->ver = realloc(w->ver, w->capver * sizeof(*w->ver));
        assert_non_null(w->ver);
    }
    w->ver[w->nver] = v;
    return (int)w->nver++;
}

static void snapshot(struct walk *w)
{
    struct rc_err err = RC_ERR_INIT;
    int c = w->ncommits++;

    w->snap = realloc(w->snap, (size_t)w->ncommits * NSLOTS * sizeof(*w->snap));
    w->commit = realloc(w->commit, (size_t)w->ncommits * sizeof(*w->commit));
    assert_non_null(w->snap);
    assert_non_null(w->commit);
    for (int s = 0; s < NSLOTS; s++)
        w->snap[c * NSLOTS + s] = -1;
    for (int e = 0; e < NENTRIES; e++) {
        if (w->f[e].present)
            w->snap[c * NSLOTS + slot_of(w, e)] = w->f[e].ver;
    }
    if (rc_git_resolve(w->commit[c], w->g, "refs/heads/main", &err) != RC_OK)
        fail_msg("main: %s", err.msg);
}

static void set_commit_date(struct walk *w)
{
    char date[64];

    snprintf(date, sizeof(date), "%lld +0000",
             1700000000LL + (long long)w->seed * 100000 + (long long)w->ncommits * 60);
    setenv("GIT_AUTHOR_DATE", date, 1);
    setenv("GIT_COMMITTER_DATE", date, 1);
}

static void write_entry(struct walk *w, int e)
{
    w->f[e].ver = make_version(w, e);
    th_write_file(w->repo, w->paths[slot_of(w, e)], w->ver[w->f[e].ver].text, (size_t)-1);
}

/* Commit the work tree: every change to a tracked file, and new_path (NULL: none). */
static void commit(struct walk *w, const char *what, const char *new_path)
{
    char msg[512];

    snprintf(msg, sizeof(msg), "step %d: %s", w->step, what);
    set_commit_date(w);
    if (new_path)
        free(th_git_ok(w->repo, "add", "--", new_path, NULL));
    free(th_git_ok(w->repo, "-c", "gc.auto=0", "-c", "maintenance.auto=false", "commit", "-q", "-a",
                   "--allow-empty", "-m", msg, NULL));
    snapshot(w);
}

/* ---- choosing a step ---- */

static int pick(struct walk *w, int (*ok)(const struct walk *, int))
{
    int cand[NENTRIES], n = 0;

    for (int e = 0; e < NENTRIES; e++) {
        if (ok(w, e))
            cand[n++] = e;
    }
    return n ? cand[rnd(w, n)] : -1;
}

static int can_add(const struct walk *w, int e)
{
    return !w->f[e].present && entries[e].kind != E_CLUSTER;
}

static int can_modify(const struct walk *w, int e)
{
    const struct entry *en = &entries[e];
    return w->f[e].present && en->kind == E_POOL &&
           (en->nvar[0] > 1 || en->nvar[1] > 1 || en->nvar[2] > 1);
}

static int can_delete(const struct walk *w, int e)
{
    return w->f[e].present && entries[e].kind != E_CLUSTER;
}

static int can_rename(const struct walk *w, int e)
{
    return w->f[e].present;
}

static int can_break(const struct walk *w, int e)
{
    return w->f[e].present && w->f[e].broken == B_NONE;
}

/* a file whose first document another file may copy */
static int can_be_copied(const struct walk *w, int e)
{
    return w->f[e].present && w->f[e].broken == B_NONE &&
           (entries[e].kind == E_FIXED || entries[e].kind == E_POOL) &&
           w->ver[w->f[e].ver].nkeys > 0;
}

static int can_take_copy(const struct walk *w, int e)
{
    return can_break(w, e) && (entries[e].kind == E_FIXED || entries[e].kind == E_POOL);
}

static int can_fix(const struct walk *w, int e)
{
    return w->f[e].present && w->f[e].broken != B_NONE;
}

static int can_policy(const struct walk *w, int e)
{
    return w->f[e].present && entries[e].kind == E_POLICY && entries[e].nvar[1] > 1;
}

static int can_cluster(const struct walk *w, int e)
{
    return w->f[e].present && entries[e].kind == E_CLUSTER;
}

/* Change one variant of entry e that has more than one value. */
static void change_variant(struct walk *w, int e, char *what, size_t n)
{
    static const char *const dims[NVAR] = {"name", "label", "request"};
    int d, v;

    do
        d = rnd(w, NVAR);
    while (entries[e].nvar[d] < 2);
    v = (w->f[e].var[d] + 1 + rnd(w, entries[e].nvar[d] - 1)) % entries[e].nvar[d];
    w->f[e].var[d] = v;
    snprintf(what, n, "%s of %s to %d", dims[d], w->paths[slot_of(w, e)], v);
}

/* Make one random change to the work tree (*entry: the entry changed); returns the action. */
static enum action take_step(struct walk *w, char *what, size_t n, int *entry)
{
    for (;;) {
        int total = 0, r, e = -1;
        enum action a = A_FIX;

        for (int i = 0; i < A_N; i++)
            total += action_weights[i];
        r = rnd(w, total);
        /* a refusing pass holds everything back: fix more often then, or the walk stalls */
        if (!w->prev_ok && rnd(w, 2) == 0)
            r = total;
        for (int i = 0; i < A_N && r < total; i++) {
            if (r < action_weights[i]) {
                a = (enum action)i;
                break;
            }
            r -= action_weights[i];
        }
        switch (a) {
        case A_ADD:
            if ((e = pick(w, can_add)) < 0)
                continue;
            w->f[e].present = 1;
            w->f[e].moved = rnd(w, 4) == 0;
            /* a new file pushed broken has no earlier version */
            w->f[e].broken = rnd(w, 6) == 0 ? B_SYNTAX : B_NONE;
            for (int d = 0; d < NVAR; d++)
                w->f[e].var[d] = rnd(w, entries[e].nvar[d]);
            write_entry(w, e);
            snprintf(what, n, "add %s%s", w->paths[slot_of(w, e)],
                     w->f[e].broken ? " (invalid YAML)" : "");
            break;
        case A_MODIFY:
        case A_POLICY:
        case A_CLUSTER:
            if ((e = pick(w, a == A_MODIFY   ? can_modify
                             : a == A_POLICY ? can_policy
                                             : can_cluster)) < 0)
                continue;
            change_variant(w, e, what, n);
            write_entry(w, e);
            break;
        case A_DELETE:
            if ((e = pick(w, can_delete)) < 0)
                continue;
            free(th_git_ok(w->repo, "rm", "-q", w->paths[slot_of(w, e)], NULL));
            w->f[e].present = 0;
            snprintf(what, n, "delete %s", w->paths[slot_of(w, e)]);
            break;
        case A_RENAME: {
            int from;
            if ((e = pick(w, can_rename)) < 0)
                continue;
            from = slot_of(w, e);
            w->f[e].moved = !w->f[e].moved;
            mkdirs(w->repo, w->paths[slot_of(w, e)]);
            free(th_git_ok(w->repo, "mv", w->paths[from], w->paths[slot_of(w, e)], NULL));
            snprintf(what, n, "rename %s to %s", w->paths[from], w->paths[slot_of(w, e)]);
            break;
        }
        case A_BREAK:
            if ((e = pick(w, can_break)) < 0)
                continue;
            w->f[e].broken = B_SYNTAX;
            write_entry(w, e);
            snprintf(what, n, "break %s (invalid YAML)", w->paths[slot_of(w, e)]);
            break;
        case A_DUP: {
            int src, cand[NENTRIES], nc = 0;
            for (int i = 0; i < NENTRIES; i++) {
                if (can_be_copied(w, i))
                    cand[nc++] = i;
            }
            if (!nc)
                continue;
            src = cand[rnd(w, nc)];
            nc = 0;
            for (int i = 0; i < NENTRIES; i++) {
                if (i != src && can_take_copy(w, i))
                    cand[nc++] = i;
            }
            if (!nc)
                continue;
            e = cand[rnd(w, nc)];
            w->f[e].broken = B_DUP;
            free(w->f[e].dup_doc);
            w->f[e].dup_doc = first_doc(w->ver[w->f[src].ver].text);
            snprintf(w->f[e].dup_key, KEY_MAX, "%s", w->ver[w->f[src].ver].keys[0]);
            write_entry(w, e);
            snprintf(what, n, "copy %s of %s into %s", w->f[e].dup_key, w->paths[slot_of(w, src)],
                     w->paths[slot_of(w, e)]);
            break;
        }
        case A_FIX:
            if ((e = pick(w, can_fix)) < 0)
                continue;
            w->f[e].broken = B_NONE;
            write_entry(w, e);
            snprintf(what, n, "fix %s", w->paths[slot_of(w, e)]);
            break;
        default:
            continue;
        }
        w->count[a]++;
        *entry = e;
        return a;
    }
}

/* ==== What the model says a pass does ==== */

struct expect {
    int err[NSLOTS];      /* 1: reported as not loaded */
    int kept[NSLOTS];     /* for those, the version kept in its place (-1: none) */
    int left_out[NSLOTS]; /* kept, refused again, holding nothing recorded: not loaded */
    int unresolved;       /* a broken file without an earlier version */
    int clash;            /* a kept version collides with another file: the pass refuses */
    int uncertain;        /* a history longer than the pass walks */
    struct sset keys;     /* the objects loaded (files that loaded, kept versions) */
};

/* Files are claimed in path order: a file naming an object an earlier file named is refused,
 * then so is that earlier file (rd_source.c claim_file, refuse_both_sides). vers: the files'
 * versions in path order; errs gets 1 for each one refused. */
static void claim(const struct walk *w, const int *vers, size_t n, int *errs)
{
    struct sset seen = {0, 0, NULL};
    int owner[NSLOTS * (MAX_KEYS + 1)];

    for (size_t i = 0; i < n; i++) {
        const struct version *v = &w->ver[vers[i]];
        int hit = -1;
        errs[i] = !v->good;
        if (errs[i])
            continue;
        for (int k = 0; k < v->nkeys && hit < 0; k++) {
            int at = sset_find(&seen, v->keys[k]);
            if (at >= 0)
                hit = owner[at];
        }
        if (hit >= 0) {
            errs[i] = 1;
            errs[hit] = 1;
            continue;
        }
        for (int k = 0; k < v->nkeys; k++) {
            if (sset_find(&seen, v->keys[k]) < 0) {
                owner[seen.n] = (int)i;
                sset_add(&seen, v->keys[k]);
            }
        }
    }
    sset_free(&seen);
}

/* The newest version of `slot` at or before commit `from` that loads alone, walking back while
 * the file exists (rc_pass.c last_good_version); -1: none. */
static int kept_version(const struct walk *w, int slot, int from, int *uncertain)
{
    int tested = -1, versions = 0;

    for (int c = from; c >= 0; c--) {
        int v = w->snap[c * NSLOTS + slot];
        if (v < 0)
            return -1;
        if (v == tested)
            continue;
        if (++versions > MAX_HISTORY) {
            *uncertain = 1;
            return -1;
        }
        if (w->ver[v].good)
            return v;
        tested = v;
    }
    return -1;
}

/* What the deploy tree t says of the broken files it was made from (RD_KEPT_FILE): listed[s]
 * 1 for each slot it names, ver[s] the version kept (-1: none). Returns 0 when t has no such
 * file. A version the walk never wrote, or a path of no slot, fails. */
static int tree_kept(struct walk *w, const struct tree *t, int *listed, int *ver)
{
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_err err = RC_ERR_INIT;
    char *text = t->head[0] ? tree_blob(w->g, t, RD_KEPT_FILE, &a) : NULL;
    struct rd_kept *kept = NULL;
    size_t n = 0;

    for (int s = 0; s < NSLOTS; s++) {
        listed[s] = 0;
        ver[s] = -1;
    }
    if (!text) {
        rc_arena_release(&a);
        return 0;
    }
    if (rd_kept_parse(&kept, &n, text, strlen(text), &a, &err) != RC_OK)
        wfail(w, "%s does not read: %s", RD_KEPT_FILE, err.msg);
    for (size_t i = 0; i < n; i++) {
        int slot = -1;
        for (int s = 0; s < NSLOTS && slot < 0; s++)
            if (!strcmp(w->paths[s], kept[i].path))
                slot = s;
        if (slot < 0)
            wfail(w, "%s names %s, a file the walk never made", RD_KEPT_FILE, kept[i].path);
        listed[slot] = 1;
        for (size_t v = 0; kept[i].id[0] && v < w->nver && ver[slot] < 0; v++)
            if (!strcmp(w->ver[v].id, kept[i].id))
                ver[slot] = (int)v;
        if (kept[i].id[0] && ver[slot] < 0)
            wfail(w, "%s keeps %s at %s, a version the walk never wrote", RD_KEPT_FILE,
                  kept[i].path, kept[i].id);
    }
    rc_arena_release(&a);
    return 1;
}

/* The commit (index) the deploy tree t was made from; -1: no deploy branch. */
static int deploy_source(struct walk *w, const struct tree *t)
{
    struct rc_arena a = RC_ARENA_INIT;
    char *src = tree_blob(w->g, t, RD_SOURCE_FILE, &a);
    int found = -1;

    for (int c = 0; src && c < w->ncommits && found < 0; c++) {
        if (!strncmp(src, w->commit[c], 40))
            found = c;
    }
    if (src && found < 0)
        wfail(w, "the deploy head names source %.40s, which the walk did not commit", src);
    rc_arena_release(&a);
    return found;
}

/* What a pass on the deploy tree t (the deploy head) may do with the source as it is. */
static void expect_compute(struct walk *w, const struct tree *t, struct expect *x)
{
    int slots[NSLOTS], vers[NSLOTS], errs[NSLOTS], listed[NSLOTS], lver[NSLOTS];
    size_t n = 0;
    int from = deploy_source(w, t);
    int have = tree_kept(w, t, listed, lver);

    memset(x, 0, sizeof(*x));
    for (int s = 0; s < NSLOTS; s++)
        x->kept[s] = -1;
    for (int i = 0; i < NSLOTS; i++) {
        int s = w->order[i], e = s / 2;
        if (w->f[e].present && slot_of(w, e) == s) {
            slots[n] = s;
            vers[n++] = w->f[e].ver;
        }
    }
    claim(w, vers, n, errs);
    for (size_t i = 0; i < n; i++) {
        x->err[slots[i]] = errs[i];
        if (!errs[i])
            continue;
        /* the version the deploy tree was made from: the one it lists, or (not broken then)
         * the one at its source commit, walking back from there (another version's trees) */
        if (have && listed[slots[i]])
            x->kept[slots[i]] = lver[slots[i]];
        else
            x->kept[slots[i]] = from < 0 ? -1 : kept_version(w, slots[i], from, &x->uncertain);
        if (x->kept[slots[i]] < 0)
            x->unresolved = 1;
    }
    /* the files that loaded, and kept versions in place of the broken ones */
    {
        int rs[NSLOTS] = {0}, rv[NSLOTS] = {0}, rerr[NSLOTS] = {0};
        size_t m = 0;
        for (size_t i = 0; i < n; i++) {
            if (!x->err[slots[i]]) {
                rs[m] = slots[i];
                rv[m++] = vers[i];
            } else if (x->kept[slots[i]] >= 0) {
                rs[m] = slots[i];
                rv[m++] = x->kept[slots[i]];
            }
        }
        claim(w, rv, m, rerr);
        for (size_t i = 0; i < m; i++) {
            const struct version *v = &w->ver[rv[i]];
            /* refused now: a file that loaded, or a kept version the deploy branch holds
             * something of (either side dropping would remove it, or change a Namespace):
             * the pass stops */
            if (rerr[i] && !x->err[rs[i]])
                x->clash = 1;
            int held = 0;
            for (int k = 0; rerr[i] && k < v->nkeys; k++) {
                if (sset_find(&w->recorded, v->keys[k]) >= 0 || is_namespace_key(v->keys[k]))
                    held = x->clash = 1;
            }
            if (rerr[i] && x->err[rs[i]] && !held)
                x->left_out[rs[i]] = 1;
            for (int k = 0; !rerr[i] && k < v->nkeys; k++)
                sset_add(&x->keys, v->keys[k]);
        }
    }
}

/* ==== Checks ==== */

/* The deploy tree against its own record: every object of a placed unit on each of its
 * clusters, one cluster unless the unit spreads or follows; no other object file; the
 * Namespaces the objects use; each kustomization.yaml lists its directory. */
static void check_deploy(struct walk *w, const struct tree *t, const struct rd_record *rec)
{
    struct sset want = {0, 0, NULL}, keys = {0, 0, NULL}, clusters = {0, 0, NULL};
    struct rc_arena ka = RC_ARENA_INIT;
    char rel[256], path[512], c[128];
    const char *rest;

    for (size_t u = 0; u < rec->nunits; u++) {
        const struct pl_prev_unit *p = &rec->units[u];
        for (size_t k = 0; k < p->nobjects; k++) {
            if (sset_find(&keys, p->objects[k]) >= 0)
                wfail(w, "object %s is in two units of the record", p->objects[k]);
            sset_add(&keys, p->objects[k]);
        }
        if (p->state != PL_STATE_PLACED)
            continue;
        if (p->nclusters == 0)
            wfail(w, "unit %s is placed on no cluster", p->unit);
        if (p->nclusters > 1 && p->policy && !is_spread_policy(p->policy))
            wfail(w, "unit %s of policy %s (no spread) is on %zu clusters", p->unit, p->policy,
                  p->nclusters);
        for (size_t ci = 0; ci < p->nclusters; ci++) {
            for (size_t k = 0; k < p->nobjects; k++) {
                key_rel(rel, sizeof(rel), p->objects[k]);
                snprintf(path, sizeof(path), "clusters/%s/%s", p->clusters[ci], rel);
                if (sset_find(&t->path, path) < 0)
                    wfail(w, "unit %s is placed on %s but %s is not in the deploy tree", p->unit,
                          p->clusters[ci], path);
                sset_add(&want, path);
            }
        }
    }
    for (size_t i = 0; i < t->path.n; i++) {
        const char *p = t->path.v[i];
        if (!split_cluster_path(p, c, sizeof(c), &rest))
            continue;
        if (sset_find(&clusters, c) < 0)
            sset_add(&clusters, c);
        if (!strcmp(rest, "kustomization.yaml") || sset_find(&want, p) >= 0)
            continue;
        if (!strncmp(rest, "_cluster/namespace.", 19)) {
            /* a Namespace no unit places: one that an object on the cluster uses */
            int used = 0;
            char dir[512];
            size_t nlen = strlen(rest + 19);
            assert_true(nlen > 5);
            snprintf(dir, sizeof(dir), "clusters/%s/%.*s/", c, (int)(nlen - 5), rest + 19);
            for (size_t j = 0; j < t->path.n && !used; j++)
                used = !strncmp(t->path.v[j], dir, strlen(dir));
            if (used)
                continue;
        }
        wfail(w, "%s is in the deploy tree but no placed unit of the record has it", p);
    }
    for (size_t i = 0; i < t->path.n; i++) {
        const char *p = t->path.v[i], *slash;
        if (!split_cluster_path(p, c, sizeof(c), &rest) || !(slash = strchr(rest, '/')) ||
            !strncmp(rest, "_cluster/", 9))
            continue;
        snprintf(path, sizeof(path), "clusters/%s/_cluster/namespace.%.*s.yaml", c,
                 (int)(slash - rest), rest);
        if (strncmp(rest, "default/", 8) && strncmp(rest, "kube-", 5) &&
            sset_find(&t->path, path) < 0)
            wfail(w, "%s is in the deploy tree without its namespace (%s)", p, path);
    }
    for (size_t i = 0; i < clusters.n; i++) {
        char *k;
        struct sset listed = {0, 0, NULL};
        size_t nfiles = 0;
        int in_resources = 0;
        snprintf(path, sizeof(path), "clusters/%s/kustomization.yaml", clusters.v[i]);
        k = tree_blob(w->g, t, path, &ka);
        if (!k)
            wfail(w, "%s is missing", path);
        for (char *line = k, *nl; line && *line; line = nl ? nl + 1 : NULL) {
            nl = strchr(line, '\n');
            if (nl)
                *nl = '\0';
            if (!strcmp(line, "resources:"))
                in_resources = 1;
            else if (in_resources && !strncmp(line, "- ", 2)) {
                snprintf(path, sizeof(path), "clusters/%s/%s", clusters.v[i], line + 2);
                sset_add(&listed, path);
                if (sset_find(&t->path, path) < 0)
                    wfail(w, "kustomization of %s lists %s, which is not in the tree",
                          clusters.v[i], line + 2);
            } else {
                in_resources = 0;
            }
        }
        for (size_t j = 0; j < t->path.n; j++) {
            if (split_cluster_path(t->path.v[j], c, sizeof(c), &rest) &&
                !strcmp(c, clusters.v[i]) && strcmp(rest, "kustomization.yaml")) {
                nfiles++;
                if (sset_find(&listed, t->path.v[j]) < 0)
                    wfail(w, "kustomization of %s does not list %s", clusters.v[i], rest);
            }
        }
        assert_int_equal(nfiles, listed.n);
        sset_free(&listed);
    }
    sset_free(&want);
    sset_free(&keys);
    sset_free(&clusters);
    rc_arena_release(&ka);
}

/* Deploy files of object `key`, on any cluster, with their blob ids ("path id" lines). */
static void object_files(const struct tree *t, const char *key, struct sset *out)
{
    char rel[256], c[128], line[600];
    const char *rest;

    key_rel(rel, sizeof(rel), key);
    for (size_t i = 0; i < t->path.n; i++) {
        if (split_cluster_path(t->path.v[i], c, sizeof(c), &rest) && !strcmp(rest, rel)) {
            snprintf(line, sizeof(line), "%s %s", t->path.v[i], t->id.v[i]);
            sset_add(out, line);
        }
    }
}

static void same_object_files(struct walk *w, const char *key, const char *why)
{
    struct sset b = {0, 0, NULL}, a = {0, 0, NULL};

    object_files(&w->before, key, &b);
    object_files(&w->after, key, &a);
    for (size_t i = 0; i < b.n; i++) {
        if (sset_find(&a, b.v[i]) < 0)
            wfail(w, "%s: deploy file of %s changed or went: %s", why, key, b.v[i]);
    }
    for (size_t i = 0; i < a.n; i++) {
        if (sset_find(&b, a.v[i]) < 0)
            wfail(w, "%s: deploy file of %s changed or came: %s", why, key, a.v[i]);
    }
    sset_free(&a);
    sset_free(&b);
}

static void read_record(struct walk *w, const struct tree *t, struct rd_record *rec,
                        struct rc_arena *a)
{
    struct rc_err err = RC_ERR_INIT;
    char *text = tree_blob(w->g, t, "placements.yaml", a);

    memset(rec, 0, sizeof(*rec));
    if (!text)
        wfail(w, "the deploy branch has no placements.yaml");
    if (rd_record_parse(rec, text, strlen(text), a, &err) != RC_OK)
        wfail(w, "placements.yaml does not parse: %s", err.msg);
}

/* After a pass that succeeded: what it reported and recorded against the model. */
static void check_loaded(struct walk *w, const struct expect *x, const struct rc_pass_result *res,
                         const struct rd_record *rec)
{
    struct sset recorded = {0, 0, NULL};

    for (int s = 0; s < NSLOTS; s++) {
        int reported = 0;
        for (size_t i = 0; i < res->nfile_errors; i++)
            reported |= !strcmp(res->file_errors[i].path, w->paths[s]);
        if (reported != x->err[s])
            wfail(w, "%s %s reported as not loaded", w->paths[s], reported ? "is" : "is not");
    }
    for (size_t i = 0; i < res->nfile_errors; i++) {
        int known = 0;
        for (int s = 0; s < NSLOTS; s++)
            known |= x->err[s] && !strcmp(res->file_errors[i].path, w->paths[s]);
        if (!known)
            wfail(w, "unexpected error: %s", res->file_errors[i].msg);
    }
    for (size_t u = 0; u < rec->nunits; u++) {
        for (size_t k = 0; k < rec->units[u].nobjects; k++) {
            const char *key = rec->units[u].objects[k];
            sset_add(&recorded, key);
            if (sset_find(&x->keys, key) < 0)
                wfail(w, "the record lists %s (unit %s), which no loaded file defines", key,
                      rec->units[u].unit);
        }
    }
    /* a broken file's objects keep their entries: a parse error removes nothing (a Namespace
     * no policy places any more leaves the record whatever its file) */
    for (int s = 0; s < NSLOTS; s++) {
        const struct version *v = x->kept[s] >= 0 ? &w->ver[x->kept[s]] : NULL;
        for (int k = 0; v && k < v->nkeys; k++) {
            if (!is_namespace_key(v->keys[k]) && sset_find(&w->recorded, v->keys[k]) >= 0 &&
                sset_find(&recorded, v->keys[k]) < 0)
                wfail(w, "%s of %s, which did not load, left the record", v->keys[k], w->paths[s]);
        }
    }
    for (size_t i = 0; i < x->keys.n; i++) {
        /* a Namespace no policy places is no unit: it goes with the objects in it */
        if (!is_namespace_key(x->keys.v[i]) && sset_find(&recorded, x->keys.v[i]) < 0)
            wfail(w, "%s is loaded but the record does not list it", x->keys.v[i]);
    }
    sset_free(&recorded);
}

/* After a pass that went on: the deploy tree lists exactly the broken files, each with the
 * version it was made from (none for one left out). */
static void check_kept(struct walk *w, const struct expect *x)
{
    int listed[NSLOTS], ver[NSLOTS], any = 0;
    int have = tree_kept(w, &w->after, listed, ver);

    for (int s = 0; s < NSLOTS; s++) {
        int want = x->left_out[s] ? -1 : x->kept[s];
        any |= x->err[s];
        if (listed[s] != x->err[s])
            wfail(w, "%s %s %s", RD_KEPT_FILE, listed[s] ? "lists" : "does not list", w->paths[s]);
        if (listed[s] && ver[s] != want)
            wfail(w, "%s keeps version %d of %s, the model %d", RD_KEPT_FILE, ver[s], w->paths[s],
                  want);
    }
    if (have != any)
        wfail(w, "the deploy tree %s %s", have ? "has" : "has no", RD_KEPT_FILE);
}

/* kubectl kustomize of every cluster directory of a checkout of the deploy branch. */
static void check_kustomize(struct walk *w)
{
    char *dir, path[4096];

    if (!w->kubectl || !w->after.head[0])
        return;
    w->nkustomized++;
    dir = th_tmpdir("walk-kustomize");
    snprintf(path, sizeof(path), "%s/tree", dir);
    free(th_git_ok(w->repo, "worktree", "add", "-q", "--detach", path, "deploy", NULL));
    for (size_t i = 0; i < w->after.path.n; i++) {
        char c[128], cdir[8192];
        const char *rest;
        char *out = NULL, *err = NULL;
        const char *argv[] = {"kubectl", "kustomize", cdir, NULL};
        if (!split_cluster_path(w->after.path.v[i], c, sizeof(c), &rest) ||
            strcmp(rest, "kustomization.yaml"))
            continue;
        snprintf(cdir, sizeof(cdir), "%s/clusters/%s", path, c);
        if (th_run(NULL, &out, &err, argv) != 0)
            wfail(w, "kubectl kustomize clusters/%s: %s", c, err);
        free(out);
        free(err);
    }
    free(th_git_ok(w->repo, "worktree", "remove", "--force", path, NULL));
    th_rm_rf(dir);
    free(dir);
}

/* ==== Passes ==== */

static int run_pass(struct walk *w, enum pass_mode mode, int force, int no_cache,
                    struct rc_pass_result *res, struct rc_arena *a, struct rc_err *err)
{
    struct rc_pass_options o = RC_PASS_OPTIONS_INIT;
    struct rc_err e = RC_ERR_INIT;

    if (!no_cache && (mode == M_ONCE || w->cache_spent || !w->cache)) {
        /* a new process: its own git handle, the caches from the state directory */
        rc_cache_free(w->cache);
        rc_git_free(w->g);
        w->cache = NULL;
        w->g = NULL;
        assert_int_equal(rc_git_open(&w->g, w->repo, NULL, &e), RC_OK);
        assert_int_equal(rc_cache_new(&w->cache, w->state, &e), RC_OK);
    }
    o.apply = 0;
    o.force = force;
    o.cache = no_cache ? NULL : w->cache;
    o.bounded_verdicts = 1; /* as reconcile runs */
    o.last_pass = no_cache || mode == M_ONCE;
    o.parse_threads = rnd(w, 3);
    if (!no_cache)
        w->cache_spent = mode == M_ONCE;
    return rc_pass_run(res, w->g, &o, a, err);
}

/* Whether the model allows a pass's outcome: the documented refusals only when it says they
 * may come, never another error. Returns 0 (went on), 1 (refused: a broken file without an
 * earlier version) or 2 (refused: a kept version clashes). */
static int judge(struct walk *w, const struct expect *x, int rc, const char *msg, int skipped,
                 const char *which)
{
    if (rc != RC_OK) {
        int unresolved = rc == RC_EINVALID && strstr(msg, "nothing is moved or removed");
        int clash = rc == RC_EINVALID && strstr(msg, "while keeping the last good version");
        if (unresolved && ((x->unresolved && !x->clash) || x->uncertain))
            return 1;
        if (clash && (x->clash || x->uncertain))
            return 2;
        wfail(w, "%s failed (%d): %s", which, rc, msg);
    }
    if (x->clash && !x->uncertain && !skipped)
        wfail(w, "%s went on, yet a kept version collides with another file", which);
    return 0;
}

/* A pass right after, with nothing changed: it commits nothing. When the first refused it
 * refuses the same way; when the first committed, the deploy head names a newer source
 * commit, whose versions of the broken files are their last good ones now, and the model
 * says again what may happen. */
static void check_noop(struct walk *w, int rc1, const char *msg1, size_t nerr1)
{
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_pass_result res;
    struct rc_err err = RC_ERR_INIT;
    struct expect x;
    int no_cache = rnd(w, 2);
    const char *which = no_cache ? "a second pass (no cache, forced)" : "a second pass";
    int rc;

    expect_compute(w, &w->after, &x);
    /* without a cache every file is parsed and the record read from the deploy head */
    rc = run_pass(w, M_LOOP, no_cache, no_cache, &res, &a, &err);
    say("    %s: %s%s\n", which, rc == RC_OK ? "ok" : "refused: ", rc == RC_OK ? "" : err.msg);
    if (rc1 != RC_OK) {
        if (rc != rc1 || strcmp(err.msg, msg1))
            wfail(w, "%s returned %d (%s), the first %d (%s)", which, rc, err.msg, rc1, msg1);
    } else if (judge(w, &x, rc, err.msg, rc == RC_OK && res.skipped, which)) {
        w->nrefused_after_commit++;
    }
    if (rc == RC_OK) {
        if (res.committed || strcmp(res.deploy_new, w->after.head))
            wfail(w, "%s with nothing changed committed %s", which, res.deploy_new);
        if (!res.skipped && res.nfile_errors != nerr1)
            wfail(w, "%s reports %zu files not loaded, the first %zu", which, res.nfile_errors,
                  nerr1);
    }
    sset_free(&x.keys);
    rc_arena_release(&a);
}

/* One pass after a step, and everything checked. */
static void pass_and_check(struct walk *w, enum action act, int deleted_ver, int settle)
{
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_pass_result res;
    struct rc_err err = RC_ERR_INIT;
    struct rd_record rec = {NULL, NULL, 0, NULL, NULL};
    struct expect x;
    enum pass_mode mode = settle || rnd(w, 3) == 0 ? M_ONCE : M_LOOP;
    int rc;

    expect_compute(w, &w->before, &x);
    rc = run_pass(w, mode, 0, 0, &res, &a, &err);
    say("    pass (%s): %s%s%s\n", mode == M_ONCE ? "new process, --once" : "loop",
        rc == RC_OK ? "ok" : "refused: ", rc == RC_OK ? "" : err.msg,
        rc == RC_OK && res.committed ? ", committed" : "");
    tree_read(&w->after, &w->before, w->g, w->repo);

    /* the outcome */
    switch (judge(w, &x, rc, err.msg, rc == RC_OK && res.skipped, "the pass")) {
    case 1:
        w->nrefused_unresolved++;
        break;
    case 2:
        w->nrefused_clash++;
        break;
    default:
        w->nok++;
        w->ncommitted += res.committed;
        w->nskipped += res.skipped;
        w->nerrored_files += res.nfile_errors > 0;
        if (strcmp(res.deploy_new, w->after.head))
            wfail(w, "the pass says the deploy head is %s, git says %s", res.deploy_new,
                  w->after.head);
    }
    if (rc != RC_OK && strcmp(w->before.head, w->after.head))
        wfail(w, "a pass that failed moved the deploy branch");

    /* the deploy tree is its record's, whatever happened */
    if (w->after.head[0]) {
        read_record(w, &w->after, &rec, &a);
        check_deploy(w, &w->after, &rec);
        /* a quick exit (the YAML files as the last pass that went on saw them) did nothing */
        if (rc == RC_OK && !x.uncertain && !res.skipped) {
            check_loaded(w, &x, &res, &rec);
            check_kept(w, &x);
        }
    } else if (rc == RC_OK) {
        wfail(w, "no deploy branch after a pass that succeeded");
    }

    if (rc == RC_OK && res.skipped && strcmp(w->before.head, w->after.head))
        wfail(w, "a pass that exited quickly moved the deploy branch");
    if (rc == RC_OK && !x.uncertain && !res.skipped) {
        /* a file that broke keeps its objects' deploy files as they were */
        if ((act == A_BREAK || act == A_DUP) && w->prev_ok) {
            for (int s = 0; s < NSLOTS; s++) {
                const struct version *v;
                if (!x.err[s] || w->prev_loaded[s] < 0)
                    continue;
                v = &w->ver[w->prev_loaded[s]];
                for (int k = 0; k < v->nkeys; k++)
                    same_object_files(w, v->keys[k], "a file that broke");
                w->nbroke_checked++;
            }
        }
        /* a deleted file's objects leave the deploy tree */
        if (act == A_DELETE && deleted_ver >= 0) {
            const struct version *v = &w->ver[deleted_ver];
            for (int k = 0; k < v->nkeys; k++) {
                struct sset files = {0, 0, NULL};
                if (is_namespace_key(v->keys[k]) || sset_find(&x.keys, v->keys[k]) >= 0)
                    continue;
                object_files(&w->after, v->keys[k], &files);
                w->ndeleted_checked++;
                if (files.n)
                    wfail(w, "%s of the deleted file is still deployed: %s", v->keys[k],
                          files.v[0]);
                sset_free(&files);
            }
        }
        /* while a broken file has no earlier version, nothing leaves the deploy tree */
        if (x.unresolved) {
            w->nunresolved_checked++;
            for (size_t i = 0; i < w->before.path.n; i++) {
                char c[128];
                const char *rest;
                if (split_cluster_path(w->before.path.v[i], c, sizeof(c), &rest) &&
                    strcmp(rest, "kustomization.yaml") &&
                    sset_find(&w->after.path, w->before.path.v[i]) < 0)
                    wfail(w, "%s left the deploy tree while a broken file had no earlier version",
                          w->before.path.v[i]);
            }
        }
    }

    w->prev_ok = rc == RC_OK;
    for (int s = 0; s < NSLOTS; s++) {
        int e = s / 2;
        w->prev_loaded[s] =
            rc == RC_OK && w->f[e].present && slot_of(w, e) == s && !x.err[s] ? w->f[e].ver : -1;
    }
    sset_free(&x.keys);
    /* what the next passes start from: this record */
    sset_free(&w->recorded);
    if (w->after.head[0]) {
        for (size_t u = 0; u < rec.nunits; u++) {
            for (size_t k = 0; k < rec.units[u].nobjects; k++)
                sset_add(&w->recorded, rec.units[u].objects[k]);
        }
    }
    check_noop(w, rc, err.msg, rc == RC_OK ? res.nfile_errors : 0);
    if (settle || (w->step && w->step % 16 == 0))
        check_kustomize(w);
    rc_arena_release(&a);
    tree_free(&w->before);
    w->before = w->after;
    memset(&w->after, 0, sizeof(w->after));
}

/* ==== The walk ==== */

static void walk_init(struct walk *w, unsigned seed)
{
    char src[4096];

    memset(w, 0, sizeof(*w));
    w->seed = seed;
    w->rng = 0x5eed0000ull + seed;
    for (int e = 0; e < NENTRIES; e++) {
        snprintf(w->paths[e * 2], sizeof(w->paths[0]), "%s", entries[e].path);
        snprintf(w->paths[e * 2 + 1], sizeof(w->paths[0]), "moved/%s", entries[e].path);
        if (entries[e].kind != E_POOL) {
            size_t len;
            snprintf(src, sizeof(src), "%s/examples/repo/%s", RP_SOURCE_DIR, entries[e].path);
            w->orig[e] = th_read_all(src, &len);
            w->f[e].present = 1;
        }
    }
    for (int s = 0; s < NSLOTS; s++)
        w->order[s] = s;
    qsort_r(w->order, NSLOTS, sizeof(w->order[0]), cmp_slot_path, w);
    w->ncommits = 0;
    set_commit_date(w);
    w->repo = th_example_repo();
    w->state = th_tmpdir("walk-state");
    {
        struct rc_err err = RC_ERR_INIT;
        assert_int_equal(rc_git_open(&w->g, w->repo, NULL, &err), RC_OK);
    }
    for (int e = 0; e < NENTRIES; e++) {
        if (w->f[e].present)
            w->f[e].ver = make_version(w, e);
    }
    snapshot(w);
    for (int s = 0; s < NSLOTS; s++)
        w->prev_loaded[s] = -1;
    {
        char *out = NULL;
        const char *argv[] = {"kubectl", "version", "--client", NULL};
        w->kubectl = th_run(NULL, &out, NULL, argv) == 0;
        free(out);
    }
}

static void walk_free(struct walk *w)
{
    rc_cache_free(w->cache);
    rc_git_free(w->g);
    for (int e = 0; e < NENTRIES; e++) {
        free(w->orig[e]);
        free(w->f[e].dup_doc);
    }
    for (size_t i = 0; i < w->nver; i++)
        free(w->ver[i].text);
    free(w->ver);
    free(w->snap);
    free(w->commit);
    tree_free(&w->before);
    tree_free(&w->after);
    sset_free(&w->recorded);
    th_rm_rf(w->repo);
    th_rm_rf(w->state);
    free(w->repo);
    free(w->state);
}

static int env_int(const char *name, int def)
{
    const char *s = getenv(name);
    char *end;
    long v;

    if (!s || !*s)
        return def;
    v = strtol(s, &end, 10);
    if (*end || v < 0 || v > 1000000)
        fail_msg("%s: '%s' is not a number", name, s);
    return (int)v;
}

static void walk_run(unsigned seed, int steps)
{
    struct walk w;
    char what[512];

    walk_init(&w, seed);
    say("walk seed %u, %d steps (RIGHTPLACE_WALK_SEED=%u RIGHTPLACE_WALK_STEPS=%d replays it)\n",
        seed, steps, seed, steps);
    say("  step 0: the example repository\n");
    pass_and_check(&w, A_N, -1, 0);
    for (w.step = 1; w.step <= steps; w.step++) {
        int e = -1;
        enum action act = take_step(&w, what, sizeof(what), &e);
        /* the version a delete removed, for the check that its objects go */
        int deleted_ver = act == A_DELETE ? w.f[e].ver : -1;
        say("  step %d: %s\n", w.step, what);
        commit(&w, what, act == A_ADD ? w.paths[slot_of(&w, e)] : NULL);
        pass_and_check(&w, act, deleted_ver, 0);
    }
    /* settle: every broken file fixed, one commit, a new process */
    {
        int nfixed = 0;
        for (int e = 0; e < NENTRIES; e++) {
            if (w.f[e].present && w.f[e].broken != B_NONE) {
                w.f[e].broken = B_NONE;
                write_entry(&w, e);
                nfixed++;
            }
        }
        snprintf(what, sizeof(what), "fix every broken file (%d)", nfixed);
        say("  step %d: %s\n", w.step, what);
        commit(&w, what, NULL);
        pass_and_check(&w, A_FIX, -1, 1);
    }
    print_message("walk seed %u: %d steps (add %d, modify %d, delete %d, rename %d, break %d, "
                  "dup %d, fix %d, policy %d, cluster %d); passes: %d ok (%d committed, %d "
                  "skipped, %d with files not loaded), %d refused (no earlier version), %d "
                  "refused (kept version clashes), %d second passes refused; checked: %d files "
                  "that broke, %d objects of deleted files, %d passes with a broken file of no "
                  "earlier version, %d kustomize builds\n",
                  seed, steps, w.count[A_ADD], w.count[A_MODIFY], w.count[A_DELETE],
                  w.count[A_RENAME], w.count[A_BREAK], w.count[A_DUP], w.count[A_FIX],
                  w.count[A_POLICY], w.count[A_CLUSTER], w.nok, w.ncommitted, w.nskipped,
                  w.nerrored_files, w.nrefused_unresolved, w.nrefused_clash,
                  w.nrefused_after_commit, w.nbroke_checked, w.ndeleted_checked,
                  w.nunresolved_checked, w.nkustomized);
    walk_free(&w);
}

static void test_rc_walk__random_histories(void **state)
{
    int steps = env_int("RIGHTPLACE_WALK_STEPS", 40);
    int seed = env_int("RIGHTPLACE_WALK_SEED", -1);
    (void)state;

    if (seed >= 0) {
        walk_run((unsigned)seed, steps);
        return;
    }
    for (unsigned s = 1; s <= 3; s++)
        walk_run(s, steps);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rc_walk__random_histories),
    };
    struct rc_err err = RC_ERR_INIT;
    char *home;
    int rc;

    home = th_git_env_setup();
    assert_int_equal(rc_git_global_init(&err), RC_OK);
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    rc_git_global_shutdown();
    unsetenv("GIT_AUTHOR_DATE");
    unsetenv("GIT_COMMITTER_DATE");
    th_rm_rf(home);
    free(home);
    return rc;
}
