/*
 * test_rc_apply.c - rc_apply_deploy against fake API servers (tests/fakekube) and a real git
 * repository: what is applied and how, what is deleted and what is not, applied refs, the
 * note, and the fault matrix over three clusters.
 */
#include "th.h"
#include "th_kube.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "rc_apply.h"
#include "rc_git.h"
#include "rc_http.h"
#include "rc_kube.h"
#include "rc_pass.h"
#include "th_git.h"

#ifndef RC_APPLY_MAX_SERVER_ERRORS
#define RC_APPLY_MAX_SERVER_ERRORS 5
#endif
#define TOKEN "s3cr3t-Tok3n-7f1e9a"
#define NCL 3

static struct th_certs certs;

static void no_sleep(void *payload, long ms)
{
    (void)payload;
    (void)ms;
}

struct fixture {
    struct th_kube kube[NCL];
    char kubeconfig[NCL][TH_PATH]; /* <kcdir>/c1 ...: the operator's kubeconfig directory */
    char kcdir[TH_DIR];
    struct rc_kubeconfig_sources sources;
    char names[NCL][8];
    struct rd_cluster_conn conns[NCL];
    char repo[TH_DIR];
    struct rc_git *g;
    struct rc_kube_options ko;
    char *logbuf;
    size_t loglen;
    FILE *logf;
    struct rc_log log;
    char parent[41];
    struct th_kube extra; /* servers of one case's own, stopped by teardown */
    struct th_kube extra2;
};

static void write_kubeconfig(struct fixture *f, int i, const char *ca_name)
{
    char ca[TH_PATH], extra[TH_PATH + 64];

    th_certs_path(ca, &certs, ca_name);
    snprintf(extra, sizeof(extra), "    certificate-authority: %s\n", ca);
    th_kube_kubeconfig(f->kubeconfig[i], &f->kube[i], extra, "    token: " TOKEN "\n");
}

/* The three servers live for the whole program (starting one costs seconds on a loaded
 * machine); each case gets a fresh repository, so nothing has been applied from its view, and
 * faults, kubeconfigs and request logs are reset. */
static struct th_kube servers[NCL];

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    struct rc_kube_options ko = RC_KUBE_OPTIONS_INIT;
    struct rc_err err = RC_ERR_INIT;

    if (th_kube_mkdtemp(f->repo) < 0)
        return -1;
    {
        const char *argv[] = {"git", "init", "-q", "--bare", f->repo, NULL};
        if (th_kube_run(argv) != 0)
            return -1;
    }
    if (rc_git_open(&f->g, f->repo, NULL, &err) < 0)
        return -1;
    if (th_kube_mkdtemp(f->kcdir) < 0)
        return -1;
    rc_kubeconfig_sources_set_dir(&f->sources, f->kcdir);
    for (int i = 0; i < NCL; i++) {
        f->kube[i] = servers[i];
        snprintf(f->names[i], sizeof(f->names[i]), "c%d", i + 1);
        snprintf(f->kubeconfig[i], sizeof(f->kubeconfig[i]), "%s/%s", f->kcdir, f->names[i]);
        write_kubeconfig(f, i, "ca.crt");
        th_kube_faults(&f->kube[i], "[]");
        th_kube_clear_requests(&f->kube[i]);
        f->conns[i].name = f->names[i];
        f->conns[i].live = 1;
        f->conns[i].file = f->names[i]; /* spec.kubeconfig.name */
    }
    ko.http.max_attempts = 3;
    ko.http.timeout_ms = 1500;
    ko.http.connect_timeout_ms = 1500;
    ko.http.sleep_ms = no_sleep;
    ko.poll_interval_ms = 10;
    f->ko = ko;
    f->ko.sources = &f->sources;
    f->logf = open_memstream(&f->logbuf, &f->loglen);
    f->log.level = RC_LOG_DEBUG;
    f->log.out = f->logf;
    *state = f;
    return 0;
}

/* Every request the servers recorded, kept across cases for the RBAC check (last case). */
static char rbac_log[TH_PATH];

static void keep_requests(const struct th_kube *k)
{
    char p[TH_PATH];
    char *text = th_kube_read(th_kube_path(p, k, "log.jsonl"));
    FILE *out = rbac_log[0] ? fopen(rbac_log, "a") : NULL;

    if (out && text)
        fputs(text, out);
    if (out)
        fclose(out);
    free(text);
}

static int teardown(void **state)
{
    struct fixture *f = *state;

    for (int i = 0; i < NCL; i++)
        keep_requests(&f->kube[i]);
    if (f->extra.pid > 0)
        keep_requests(&f->extra);
    if (f->extra2.pid > 0)
        keep_requests(&f->extra2);

    for (int i = 0; i < NCL; i++)
        th_kube_faults(&f->kube[i], "[]");
    if (f->extra.pid > 0)
        th_kube_stop(&f->extra);
    if (f->extra2.pid > 0)
        th_kube_stop(&f->extra2);
    rc_git_free(f->g);
    th_kube_rmtree(f->repo);
    th_kube_rmtree(f->kcdir);
    rc_kubeconfig_sources_release(&f->sources);
    fclose(f->logf);
    free(f->logbuf);
    free(f);
    return 0;
}

static int group_setup(void **state)
{
    struct th_kube_opts o = {NULL, TOKEN "\n", 0, 0, 0};

    (void)state;
    if (rc_http_global_init(NULL) < 0 || rc_git_global_init(NULL) < 0)
        return -1;
    if (th_certs_make(&certs) != 0)
        return -1;
    snprintf(rbac_log, sizeof(rbac_log), "%s/rbac-requests.jsonl", certs.dir);
    for (int i = 0; i < NCL; i++) {
        if (th_kube_start(&servers[i], &certs, &o) != 0)
            return -1;
    }
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    for (int i = 0; i < NCL; i++)
        th_kube_stop(&servers[i]);
    th_kube_rmtree(certs.dir);
    rc_git_global_shutdown();
    rc_http_global_cleanup();
    return 0;
}

/* ==== Deploy trees ==== */

#define NS_TEAM                                                                                    \
    "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team\n  labels:\n"                        \
    "    app.kubernetes.io/managed-by: rightplace\n"
#define CM(name, value, labels)                                                                    \
    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " name "\n  namespace: team\n"            \
    "  labels:\n" labels "data:\n  k: " value "\n"
#define MANAGED "    app.kubernetes.io/managed-by: rightplace\n"
#define UNMANAGED "    app: other\n"
#define RAYJOB                                                                                     \
    "apiVersion: ray.io/v1\nkind: RayJob\nmetadata:\n  name: train\n  namespace: team\n"           \
    "  labels:\n" MANAGED "spec:\n  entrypoint: python train.py\n  shutdownAfterJobFinishes: "     \
    "true\n"
#define KUST "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: []\n"

struct tf {
    const char *rel; /* under clusters/<c>/ */
    const char *data;
};

/* Commit a deploy tree holding the same files for every cluster (plus placements.yaml with
 * `record` when not NULL); returns the id in out. */
static void commit_record(struct fixture *f, char out[41], const struct tf *files, size_t n,
                          const char *record)
{
    struct rc_git_file *gf = calloc(NCL * n + 1, sizeof(*gf));
    char(*paths)[128] = calloc(NCL * n + 1, sizeof(*paths));
    struct rc_err err = RC_ERR_INIT;
    char tree[41];
    size_t k = 0;

    for (int c = 0; c < NCL; c++) {
        for (size_t i = 0; i < n; i++, k++) {
            snprintf(paths[k], sizeof(paths[k]), "clusters/%s/%s", f->names[c], files[i].rel);
            gf[k].path = paths[k];
            gf[k].data = files[i].data;
            gf[k].len = strlen(files[i].data);
        }
    }
    if (record) {
        gf[k].path = "placements.yaml";
        gf[k].data = record;
        gf[k].len = strlen(record);
        k++;
    }
    assert_int_equal(rc_git_build_tree(tree, f->g, f->parent[0] ? f->parent : NULL, gf, k, &err),
                     RC_OK);
    assert_int_equal(
        rc_git_commit(out, f->g, tree, f->parent[0] ? f->parent : NULL, "deploy", 1700000000, &err),
        RC_OK);
    memcpy(f->parent, out, 41);
    free(gf);
    free(paths);
}

/* n ConfigMaps m00, m01, ... in namespace team, managed by rightplace, as deploy files t[0..n)
 * (their text in names and bodies) */
static void managed_configmaps(struct tf *t, char (*names)[64], char (*bodies)[256], int n)
{
    for (int i = 0; i < n; i++) {
        snprintf(names[i], sizeof(names[i]), "team/configmap.m%02d.yaml", i);
        snprintf(bodies[i], sizeof(bodies[i]),
                 "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: m%02d\n  namespace: team\n"
                 "  labels:\n" MANAGED "data:\n  k: v\n",
                 i);
        t[i].rel = names[i];
        t[i].data = bodies[i];
    }
}

static void commit(struct fixture *f, char out[41], const struct tf *files, size_t n)
{
    commit_record(f, out, files, n, NULL);
}

static const struct tf TREE1[] = {
    {"_cluster/namespace.team.yaml", NS_TEAM},
    {"kustomization.yaml", KUST},
    {"team/configmap.cfg.yaml", CM("cfg", "one", MANAGED)},
    {"team/configmap.theirs.yaml", CM("theirs", "x", UNMANAGED)},
    {"team/configmap.old.yaml", CM("old", "x", MANAGED)},
    {"team/rayjob.train.yaml", RAYJOB},
};
/* cfg changed; old and theirs removed; the RayJob unchanged */
static const struct tf TREE2[] = {
    {"_cluster/namespace.team.yaml", NS_TEAM},
    {"kustomization.yaml", "resources: [changed]\n"},
    {"team/configmap.cfg.yaml", CM("cfg", "two", MANAGED)},
    {"team/rayjob.train.yaml", RAYJOB},
};

static int apply(struct fixture *f, const char *deploy, size_t nconns, int resync)
{
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_err err = RC_ERR_INIT;
    int incomplete = -1;

    assert_int_equal(rc_apply_deploy_opts(&incomplete, f->g, deploy, f->conns, nconns, resync,
                                          &f->ko, &f->log, &a, &err),
                     RC_OK);
    rc_arena_release(&a);
    return incomplete;
}

static void applied_ref(struct fixture *f, int c, char out[41])
{
    struct rc_err err = RC_ERR_INIT;
    char ref[64];

    snprintf(ref, sizeof(ref), "refs/rightplace/applied/%s", f->names[c]);
    if (rc_git_resolve(out, f->g, ref, &err) < 0)
        out[0] = 0;
}

static char *note(struct fixture *f, const char *commit, struct rc_arena *a)
{
    struct rc_err err = RC_ERR_INIT;
    char *text = NULL;

    if (rc_git_note_read(&text, f->g, commit, a, &err) < 0)
        return NULL;
    return text;
}

static const char *qv(const cJSON *req, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItem(req, "query"), name);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static const char *sv(const cJSON *req, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(req, name);
    return cJSON_IsString(v) ? v->valuestring : "";
}

/* A live object on cluster c, or NULL. */
static cJSON *live(struct fixture *f, int c, const char *av, const char *kind, const char *ns,
                   const char *name)
{
    struct rc_kube *k = NULL;
    struct rc_err err = RC_ERR_INIT;
    cJSON *out = NULL;

    assert_int_equal(rc_kube_open(&k, f->kubeconfig[c], NULL, NULL, &err), RC_OK);
    if (rc_kube_get(k, av, kind, ns, name, &out, &err) < 0)
        out = NULL;
    rc_kube_free(k);
    return out;
}

static int exists(struct fixture *f, int c, const char *av, const char *kind, const char *name)
{
    cJSON *o = live(f, c, av, kind, "team", name);
    cJSON_Delete(o);
    return o != NULL;
}

static void assert_no_token(struct fixture *f, const char *text)
{
    fflush(f->logf);
    assert_null(strstr(f->logbuf ? f->logbuf : "", TOKEN));
    if (text)
        assert_null(strstr(text, TOKEN));
}

/* ==== Cases ==== */

/* The apply's note that cannot be written (a full disk) leaves the applied ref where it was,
 * so that the next pass applies again and writes it; with the ref moved first, that apply's
 * note was lost for good (the next pass found the cluster up to date). A file size limit of 64
 * bytes stands for the disk: the ref's file (41 bytes) could be written, a note's objects not. */
static void test_rc_apply__note_not_written_keeps_the_ref(void **state)
{
    struct fixture *f = *state;
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_err err = RC_ERR_INIT;
    struct rlimit old, low;
    char c1[41], c2[41], ref[41];
    int incomplete = -1, rc;
    char *text;

    commit(f, c1, TREE1, sizeof(TREE1) / sizeof(TREE1[0]));
    assert_int_equal(apply(f, c1, 1, 0), 0);
    commit(f, c2, TREE2, sizeof(TREE2) / sizeof(TREE2[0]));
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
    low = old;
    low.rlim_cur = 64;
    signal(SIGXFSZ, SIG_IGN);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &low), 0);
    rc = rc_apply_deploy_opts(&incomplete, f->g, c2, f->conns, 1, 0, &f->ko, &f->log, &a, &err);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
    signal(SIGXFSZ, SIG_DFL);
    assert_true(rc < 0);
    assert_non_null(strstr(err.msg, "cannot write note on '"));
    applied_ref(f, 0, ref);
    assert_string_equal(ref, c1); /* not marked applied: the next pass applies it again */
    assert_null(note(f, c2, &a));

    /* with room: applied again, the ref moved and the note written */
    assert_int_equal(apply(f, c2, 1, 0), 0);
    applied_ref(f, 0, ref);
    assert_string_equal(ref, c2);
    text = note(f, c2, &a);
    assert_non_null(text);
    assert_non_null(strstr(text, "cluster c1: applied"));
    rc_arena_release(&a);
}

static void test_rc_apply__creates_objects_with_ssa_namespaces_first(void **state)
{
    struct fixture *f = *state;
    struct rc_arena a = RC_ARENA_INIT;
    char c1[41], c1b[41], ref[41];
    cJSON *reqs, *item;
    const cJSON *first = NULL;
    size_t npatch = 0;
    char *text;

    commit(f, c1, TREE1, sizeof(TREE1) / sizeof(TREE1[0]));
    assert_int_equal(apply(f, c1, 1, 0), 0);

    reqs = th_kube_requests(&f->kube[0]);
    cJSON_ArrayForEach(item, reqs)
    {
        if (strcmp(sv(item, "method"), "PATCH"))
            continue;
        if (!first)
            first = item;
        npatch++;
        assert_string_equal(sv(item, "content_type"), "application/apply-patch+yaml");
        assert_string_equal(qv(item, "fieldManager"), "rightplace");
        assert_string_equal(qv(item, "force"), "true");
        assert_string_equal(sv(item, "auth"), "bearer");
        assert_null(strstr(sv(item, "path"), "kustomization"));
    }
    assert_int_equal(npatch, 5);
    assert_string_equal(sv(first, "path"), "/api/v1/namespaces/team");
    assert_non_null(th_kube_find(reqs, "PATCH", "/apis/ray.io/v1/namespaces/team/rayjobs/train"));
    assert_non_null(th_kube_find(reqs, "PATCH", "/api/v1/namespaces/team/configmaps/cfg"));
    assert_int_equal(th_kube_count(reqs, "DELETE", ""), 0);
    cJSON_Delete(reqs);
    assert_true(exists(f, 0, "ray.io/v1", "RayJob", "train"));

    applied_ref(f, 0, ref);
    assert_string_equal(ref, c1);
    text = note(f, c1, &a);
    assert_non_null(text);
    assert_non_null(strstr(text, "cluster c1: applied 5, deleted 0"));
    assert_no_token(f, text);

    /* the same commit again: not a single request, the note stays */
    th_kube_clear_requests(&f->kube[0]);
    assert_int_equal(apply(f, c1, 1, 0), 0);
    reqs = th_kube_requests(&f->kube[0]);
    assert_int_equal(cJSON_GetArraySize(reqs), 0);
    cJSON_Delete(reqs);
    assert_non_null(strstr(note(f, c1, &a), "applied 5"));

    /* a new deploy commit that leaves the cluster's directory alone: the ref moves, nothing
     * is sent, no note */
    commit_record(f, c1b, TREE1, sizeof(TREE1) / sizeof(TREE1[0]), "units: []\n");
    assert_int_equal(apply(f, c1b, 1, 0), 0);
    reqs = th_kube_requests(&f->kube[0]);
    assert_int_equal(cJSON_GetArraySize(reqs), 0);
    cJSON_Delete(reqs);
    applied_ref(f, 0, ref);
    assert_string_equal(ref, c1b);
    assert_null(note(f, c1b, &a));

    /* resync: everything again */
    assert_int_equal(apply(f, c1, 1, 1), 0);
    reqs = th_kube_requests(&f->kube[0]);
    assert_int_equal(th_kube_count(reqs, "PATCH", ""), 5);
    cJSON_Delete(reqs);
    rc_arena_release(&a);
}

static void test_rc_apply__changes_only_and_guarded_deletes(void **state)
{
    struct fixture *f = *state;
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_kube *k = NULL;
    struct rc_err err = RC_ERR_INIT;
    char c1[41], c2[41], ref[41];
    cJSON *reqs, *cm;
    const cJSON *del;
    char *text;

    commit(f, c1, TREE1, sizeof(TREE1) / sizeof(TREE1[0]));
    assert_int_equal(apply(f, c1, 1, 0), 0);

    /* KubeRay deletes the finished RayJob (shutdownAfterJobFinishes / DeleteSelf) */
    assert_int_equal(rc_kube_open(&k, f->kubeconfig[0], NULL, NULL, &err), RC_OK);
    assert_int_equal(rc_kube_delete(k, "ray.io/v1", "RayJob", "team", "train", NULL, &err), RC_OK);
    rc_kube_free(k);

    th_kube_clear_requests(&f->kube[0]);
    commit(f, c2, TREE2, sizeof(TREE2) / sizeof(TREE2[0]));
    assert_int_equal(apply(f, c2, 1, 0), 0);
    reqs = th_kube_requests(&f->kube[0]);
    /* one changed object, one PATCH */
    assert_int_equal(th_kube_count(reqs, "PATCH", ""), 1);
    assert_non_null(th_kube_find(reqs, "PATCH", "/api/v1/namespaces/team/configmaps/cfg"));
    /* the finished RayJob is not re-created */
    assert_int_equal(th_kube_count(reqs, "PATCH", "rayjobs"), 0);
    assert_false(exists(f, 0, "ray.io/v1", "RayJob", "train"));
    /* the labelled object is deleted with a uid precondition; the unlabelled one is not */
    assert_int_equal(th_kube_count(reqs, "DELETE", ""), 1);
    del = th_kube_find(reqs, "DELETE", "/api/v1/namespaces/team/configmaps/old");
    assert_non_null(del);
    assert_non_null(strstr(sv(del, "body"), "\"uid\""));
    assert_non_null(strstr(sv(del, "body"), "preconditions"));
    assert_string_equal(sv(del, "content_type"), "application/json");
    assert_false(exists(f, 0, "v1", "ConfigMap", "old"));
    assert_true(exists(f, 0, "v1", "ConfigMap", "theirs"));
    cm = live(f, 0, "v1", "ConfigMap", "team", "cfg");
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(cm, "data"), "k")->valuestring,
                        "two");
    cJSON_Delete(cm);
    cJSON_Delete(reqs);

    applied_ref(f, 0, ref);
    assert_string_equal(ref, c2);
    text = note(f, c2, &a);
    assert_non_null(text);
    assert_non_null(
        strstr(text, "cluster c1: applied 1, deleted 1, kept 1 not managed by rightplace"));
    assert_no_token(f, text);
    rc_arena_release(&a);
}

static void test_rc_apply__object_refused_is_reported_nothing_deleted(void **state)
{
    struct fixture *f = *state;
    struct rc_arena a = RC_ARENA_INIT;
    char c1[41], c2[41], ref[41];
    cJSON *reqs;
    char *text;

    commit(f, c1, TREE1, sizeof(TREE1) / sizeof(TREE1[0]));
    assert_int_equal(apply(f, c1, 1, 0), 0);
    commit(f, c2, TREE2, sizeof(TREE2) / sizeof(TREE2[0]));
    th_kube_faults(&f->kube[0],
                   "[{\"path\": \"configmaps/cfg$\", \"method\": \"PATCH\", \"status\": 422}]");
    th_kube_clear_requests(&f->kube[0]);
    assert_int_equal(apply(f, c2, 1, 0), 1);
    reqs = th_kube_requests(&f->kube[0]);
    assert_int_equal(th_kube_count(reqs, "DELETE", ""), 0);
    cJSON_Delete(reqs);
    applied_ref(f, 0, ref);
    assert_string_equal(ref, c1);
    text = note(f, c2, &a);
    assert_non_null(text);
    assert_non_null(strstr(text, "cluster c1: incomplete: applied 0, failed 1, deleted 0\n"
                                 "  failed: apply team/ConfigMap/cfg: "));
    assert_non_null(strstr(text, "injected fault"));

    /* fixed: the next call applies it and deletes */
    th_kube_faults(&f->kube[0], "[]");
    assert_int_equal(apply(f, c2, 1, 0), 0);
    applied_ref(f, 0, ref);
    assert_string_equal(ref, c2);
    assert_false(exists(f, 0, "v1", "ConfigMap", "old"));
    assert_no_token(f, note(f, c2, &a));
    rc_arena_release(&a);
}

/* Loop mode's apply, with the process's memory of the last one: what the log says of the
 * call, from byte *from (updated). */
static const char *apply_mem(struct fixture *f, const char *deploy, struct rc_apply_memory *mem,
                             int incomplete_expected, size_t *from)
{
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_err err = RC_ERR_INIT;
    int incomplete = -1;
    size_t at = *from;

    assert_int_equal(rc_apply_deploy_ex(&incomplete, f->g, deploy, f->conns, 1, 0, &f->ko, mem,
                                        &f->log, &a, &err),
                     RC_OK);
    assert_int_equal(incomplete, incomplete_expected);
    rc_arena_release(&a);
    fflush(f->logf);
    *from = f->loglen;
    return f->logbuf + at;
}

/* An object the server keeps refusing, or a cluster that stays unreachable, is a warning in
 * the apply that meets it and an info line in the applies after it (loop mode: every few
 * seconds, for as long as it lasts); without the memory, every apply warns. */
static void test_rc_apply__problems_that_stay_are_warned_once(void **state)
{
    struct fixture *f = *state;
    struct rc_apply_memory *mem = NULL;
    char c1[41], c2[41];
    size_t from;
    const char *log;

    commit(f, c1, TREE1, sizeof(TREE1) / sizeof(TREE1[0]));
    assert_int_equal(apply(f, c1, 1, 0), 0);
    commit(f, c2, TREE2, sizeof(TREE2) / sizeof(TREE2[0]));
    th_kube_faults(&f->kube[0],
                   "[{\"path\": \"configmaps/cfg$\", \"method\": \"PATCH\", \"status\": 422}]");
    rc_apply_memory_new(&mem);
    fflush(f->logf);
    from = f->loglen;
    log = apply_mem(f, c2, mem, 1, &from);
    assert_non_null(strstr(log, "warning: cluster 'c1': apply 'team/ConfigMap/cfg': "));
    log = apply_mem(f, c2, mem, 1, &from);
    if (strstr(log, "warning:"))
        fail_msg("a warning again:\n%s", log);
    assert_non_null(strstr(log, "rightplace: cluster 'c1': apply 'team/ConfigMap/cfg': "));
    assert_non_null(strstr(log, "(as in the pass before)"));
    log = apply_mem(f, c2, NULL, 1, &from); /* no memory: a process of its own */
    assert_non_null(strstr(log, "warning: cluster 'c1': apply 'team/ConfigMap/cfg': "));

    /* now no answer at all: unreachable, then still unreachable */
    th_kube_faults(&f->kube[0], "[{\"path\": \".*\", \"method\": \"PATCH\", \"drop\": true}]");
    log = apply_mem(f, c2, mem, 1, &from);
    assert_non_null(strstr(log, "warning: cluster 'c1': unreachable: "));
    log = apply_mem(f, c2, mem, 1, &from);
    assert_null(strstr(log, "warning:"));
    assert_non_null(strstr(log, "rightplace: cluster 'c1': still unreachable: "));

    /* it answers again, then refuses again: a warning, as the apply before succeeded */
    th_kube_faults(&f->kube[0], "[]");
    apply_mem(f, c2, mem, 0, &from);
    commit(f, c1, TREE1, sizeof(TREE1) / sizeof(TREE1[0]));
    th_kube_faults(&f->kube[0],
                   "[{\"path\": \"configmaps/cfg$\", \"method\": \"PATCH\", \"status\": 422}]");
    log = apply_mem(f, c1, mem, 1, &from);
    assert_non_null(strstr(log, "warning: cluster 'c1': apply 'team/ConfigMap/cfg': "));
    th_kube_faults(&f->kube[0], "[]");
    rc_apply_memory_free(mem);
}

/* A cron tick is a process of its own: the memory kept in the state directory's file tells it
 * what the last tick reported. A file that does not read as written is nothing known. */
static void test_rc_apply__problems_kept_for_the_next_process(void **state)
{
    struct fixture *f = *state;
    struct rc_apply_memory *mem = NULL;
    char c1[41], c2[41], path[TH_PATH + 32];
    size_t from;
    const char *log;
    char *text;

    snprintf(path, sizeof(path), "%s/apply-reported", f->kcdir);
    commit(f, c1, TREE1, sizeof(TREE1) / sizeof(TREE1[0]));
    assert_int_equal(apply(f, c1, 1, 0), 0);
    commit(f, c2, TREE2, sizeof(TREE2) / sizeof(TREE2[0]));
    th_kube_faults(&f->kube[0],
                   "[{\"path\": \"configmaps/cfg$\", \"method\": \"PATCH\", \"status\": 422}]");
    fflush(f->logf);
    from = f->loglen;
    for (int tick = 0; tick < 2; tick++) {
        rc_apply_memory_new(&mem);
        rc_apply_memory_file(mem, path);
        log = apply_mem(f, c2, mem, 1, &from);
        rc_apply_memory_free(mem);
        if (tick == 0) {
            assert_non_null(strstr(log, "warning: cluster 'c1': apply 'team/ConfigMap/cfg': "));
        } else {
            if (strstr(log, "warning:"))
                fail_msg("a warning again:\n%s", log);
            assert_non_null(strstr(log, "(as in the pass before)"));
        }
    }
    text = th_kube_read(path);
    assert_non_null(text);
    assert_true(!strncmp(text, "rightplace-apply-reported 1\n", 28));
    assert_int_equal(strlen(text), 28 + 2 * 17); /* the object, and "failed" for c1 */
    free(text);

    /* damaged: a digit that is not hex; read as nothing known, so a warning, and rewritten */
    th_write_file(f->kcdir, "apply-reported", "rightplace-apply-reported 1\nzzzzzzzzzzzzzzzz\n",
                  (size_t)-1);
    rc_apply_memory_new(&mem);
    rc_apply_memory_file(mem, path);
    log = apply_mem(f, c2, mem, 1, &from);
    rc_apply_memory_free(mem);
    assert_non_null(strstr(log, "warning: cluster 'c1': apply 'team/ConfigMap/cfg': "));
    text = th_kube_read(path);
    assert_null(strstr(text, "zzzz"));
    free(text);
    th_kube_faults(&f->kube[0], "[]");
}

/* Removing a Namespace's file deletes it only while no pod rightplace did not place runs
 * there: deleting a Namespace deletes everything in it. */
static void test_rc_apply__namespace_with_foreign_pods_is_kept(void **state)
{
    struct fixture *f = *state;
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_err err = RC_ERR_INIT;
    struct rc_kube *k = NULL;
    static const struct tf tree_a[] = {
        {"_cluster/namespace.busy.yaml",
         "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: busy\n"
         "  labels:\n" MANAGED},
        {"_cluster/namespace.quiet.yaml",
         "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: quiet\n"
         "  labels:\n" MANAGED},
    };
    static const struct tf tree_b[] = {{"kustomization.yaml", KUST}};
    const char *pod_json = "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":"
                           "\"theirs\",\"namespace\":\"busy\"},\"spec\":{\"containers\":"
                           "[{\"name\":\"c\",\"image\":\"x\"}]}}";
    cJSON *pod = cJSON_Parse(pod_json), *reqs;
    char c1[41], c2[41], ref[41];
    char *text;

    commit(f, c1, tree_a, 2);
    assert_int_equal(apply(f, c1, 1, 0), 0);
    assert_int_equal(rc_kube_open(&k, f->kubeconfig[0], NULL, NULL, &err), RC_OK);
    assert_int_equal(rc_kube_apply(k, pod, "someone-else", 1, NULL, &err), RC_OK);
    rc_kube_free(k);
    cJSON_Delete(pod);

    commit(f, c2, tree_b, 1);
    th_kube_clear_requests(&f->kube[0]);
    assert_int_equal(apply(f, c2, 1, 0), 0);
    reqs = th_kube_requests(&f->kube[0]);
    assert_non_null(th_kube_find(reqs, "DELETE", "/api/v1/namespaces/quiet"));
    assert_null(th_kube_find(reqs, "DELETE", "/api/v1/namespaces/busy"));
    cJSON_Delete(reqs);
    applied_ref(f, 0, ref);
    assert_string_equal(ref, c2);
    text = note(f, c2, &a);
    assert_non_null(
        strstr(text, "cluster c1: applied 0, deleted 1, kept 1 not managed by rightplace"));
    rc_arena_release(&a);
}

/* One fault on cluster `bad` (0-based) of three; the note says `expect` about it
 * ("unreachable: " when no answer came, "incomplete: " when the server answered). */
static void fault_case(struct fixture *f, int bad, const char *faults, int wrong_ca,
                       const char *expect)
{
    struct rc_arena a = RC_ARENA_INIT;
    char c1[41], c2[41], ref[41];
    char *text;

    memset(f->parent, 0, sizeof(f->parent));
    commit(f, c1, TREE1, sizeof(TREE1) / sizeof(TREE1[0]));
    assert_int_equal(apply(f, c1, NCL, 0), 0);
    commit(f, c2, TREE2, sizeof(TREE2) / sizeof(TREE2[0]));
    for (int i = 0; i < NCL; i++)
        th_kube_clear_requests(&f->kube[i]);
    if (faults)
        th_kube_faults(&f->kube[bad], faults);
    if (wrong_ca)
        write_kubeconfig(f, bad, "ca2.crt");

    assert_int_equal(apply(f, c2, NCL, 0), 1);
    for (int i = 0; i < NCL; i++) {
        cJSON *reqs = th_kube_requests(&f->kube[i]);
        applied_ref(f, i, ref);
        if (i == bad) {
            assert_string_equal(ref, c1);
            assert_int_equal(th_kube_count(reqs, "DELETE", ""), 0);
        } else {
            assert_string_equal(ref, c2);
            assert_int_equal(th_kube_count(reqs, "DELETE", ""), 1);
            assert_int_equal(th_kube_count(reqs, "PATCH", ""), 1);
        }
        cJSON_Delete(reqs);
    }
    text = note(f, c2, &a);
    assert_non_null(text);
    if (getenv("TH_VERBOSE"))
        fprintf(stderr, "--- note\n%s--- log\n%.*s", text, (int)f->loglen, f->logbuf);
    {
        char line[64];
        snprintf(line, sizeof(line), "cluster %s: %s", f->names[bad], expect);
        assert_non_null(strstr(text, line));
    }
    assert_no_token(f, text);

    /* the fault goes away: the next call retries and completes */
    th_kube_faults(&f->kube[bad], "[]");
    if (wrong_ca)
        write_kubeconfig(f, bad, "ca.crt");
    for (int i = 0; i < NCL; i++)
        th_kube_clear_requests(&f->kube[i]);
    assert_int_equal(apply(f, c2, NCL, 0), 0);
    for (int i = 0; i < NCL; i++) {
        cJSON *reqs = th_kube_requests(&f->kube[i]);
        applied_ref(f, i, ref);
        assert_string_equal(ref, c2);
        /* only the faulty cluster had anything left to do */
        assert_int_equal(th_kube_count(reqs, "DELETE", ""), i == bad ? 1 : 0);
        cJSON_Delete(reqs);
    }
    assert_false(exists(f, bad, "v1", "ConfigMap", "old"));
    text = note(f, c2, &a);
    assert_non_null(strstr(text, "deleted 1"));
    assert_no_token(f, text);
    rc_arena_release(&a);
}

/* A 500 on the PATCH (after the client's retries) is a failure of that object: the server
 * answered, so the cluster is not "unreachable". */
static void test_rc_apply__fault_500(void **state)
{
    fault_case(*state, 0, "[{\"path\": \".*\", \"method\": \"PATCH\", \"status\": 500}]", 0,
               "incomplete: applied 0, failed 1, deleted 0\n  failed: apply team/ConfigMap/cfg: "
               "Internal error occurred: injected fault (PATCH ");
}

static void test_rc_apply__fault_429_retry_after(void **state)
{
    fault_case(*state, 1, "[{\"path\": \".*\", \"status\": 429, \"retry_after\": 1}]", 0,
               "stopped: Too many requests");
}

static void test_rc_apply__fault_slow(void **state)
{
    fault_case(*state, 2, "[{\"path\": \".*\", \"delay\": 3}]", 0, "unreachable: ");
}

static void test_rc_apply__fault_dropped_connection(void **state)
{
    fault_case(*state, 0, "[{\"path\": \"configmaps\", \"method\": \"PATCH\", \"drop\": true}]", 0,
               "unreachable: ");
}

static void test_rc_apply__fault_wrong_certificate(void **state)
{
    fault_case(*state, 1, NULL, 1, "unreachable: tls ");
}

/* Three ConfigMaps change; one PATCH gets 500 every time: that object fails, the two others
 * are applied, the cluster is reported incomplete (not unreachable) and nothing is deleted. */
static void test_rc_apply__500_on_one_patch_fails_that_object_only(void **state)
{
    struct fixture *f = *state;
    struct rc_arena a = RC_ARENA_INIT;
    static const struct tf t1[] = {
        {"_cluster/namespace.team.yaml", NS_TEAM},
        {"team/configmap.a.yaml", CM("a", "one", MANAGED)},
        {"team/configmap.b.yaml", CM("b", "one", MANAGED)},
        {"team/configmap.c.yaml", CM("c", "one", MANAGED)},
        {"team/configmap.old.yaml", CM("old", "x", MANAGED)},
    };
    static const struct tf t2[] = {
        {"_cluster/namespace.team.yaml", NS_TEAM},
        {"team/configmap.a.yaml", CM("a", "two", MANAGED)},
        {"team/configmap.b.yaml", CM("b", "two", MANAGED)},
        {"team/configmap.c.yaml", CM("c", "two", MANAGED)},
    };
    char d1[41], d2[41], ref[41];
    cJSON *reqs, *o;
    char *text;

    commit(f, d1, t1, 5);
    assert_int_equal(apply(f, d1, 1, 0), 0);
    commit(f, d2, t2, 4);
    th_kube_faults(&f->kube[0],
                   "[{\"path\": \"configmaps/b$\", \"method\": \"PATCH\", \"status\": 500}]");
    th_kube_clear_requests(&f->kube[0]);
    assert_int_equal(apply(f, d2, 1, 0), 1);
    reqs = th_kube_requests(&f->kube[0]);
    assert_int_equal(th_kube_count(reqs, "DELETE", ""), 0);
    assert_int_equal(th_kube_count(reqs, "PATCH", "configmaps/b"), 3); /* the client retried */
    cJSON_Delete(reqs);
    o = live(f, 0, "v1", "ConfigMap", "team", "c");
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(o, "data"), "k")->valuestring,
                        "two");
    cJSON_Delete(o);
    applied_ref(f, 0, ref);
    assert_string_equal(ref, d1);
    text = note(f, d2, &a);
    assert_non_null(text);
    assert_non_null(strstr(text, "cluster c1: incomplete: applied 2, failed 1, deleted 0\n"
                                 "  failed: apply team/ConfigMap/b: Internal error occurred: "));
    assert_null(strstr(text, "unreachable"));
    fflush(f->logf);
    assert_null(strstr(f->logbuf, "unreachable"));
    rc_arena_release(&a);
}

/* Server errors on every PATCH: after RC_APPLY_MAX_SERVER_ERRORS in a row the cluster's work
 * stops (no hammering a broken server), reported as stopped, not unreachable. */
static void test_rc_apply__server_errors_in_a_row_stop_the_cluster(void **state)
{
    struct fixture *f = *state;
    struct rc_arena a = RC_ARENA_INIT;
    struct tf t[12];
    char names[12][64], bodies[12][256];
    char d[41];
    cJSON *reqs;
    char *text;

    t[0].rel = "_cluster/namespace.team.yaml";
    t[0].data = NS_TEAM;
    for (int i = 1; i < 12; i++) {
        snprintf(names[i], sizeof(names[i]), "team/configmap.m%02d.yaml", i);
        snprintf(bodies[i], sizeof(bodies[i]),
                 "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: m%02d\n  namespace: team\n"
                 "data:\n  k: v\n",
                 i);
        t[i].rel = names[i];
        t[i].data = bodies[i];
    }
    commit(f, d, t, 12);
    f->ko.concurrency = 1; /* one at a time: the count below is exact */
    th_kube_faults(&f->kube[0],
                   "[{\"path\": \"configmaps\", \"method\": \"PATCH\", \"status\": 503}]");
    th_kube_clear_requests(&f->kube[0]);
    assert_int_equal(apply(f, d, 1, 0), 1);
    reqs = th_kube_requests(&f->kube[0]);
    /* 5 objects tried (3 attempts each), then the cluster stopped */
    assert_int_equal(th_kube_count(reqs, "PATCH", "configmaps"), RC_APPLY_MAX_SERVER_ERRORS * 3);
    cJSON_Delete(reqs);
    text = note(f, d, &a);
    assert_non_null(strstr(text, "cluster c1: stopped: 5 server errors in a row, the last: "));
    rc_arena_release(&a);
}

/* The same rule for deletes: DELETEs answered 503 stop the cluster after
 * RC_APPLY_MAX_SERVER_ERRORS objects; the Namespace stage is never reached. */
static void test_rc_apply__server_errors_in_a_row_stop_the_deletes(void **state)
{
    struct fixture *f = *state;
    struct rc_arena a = RC_ARENA_INIT;
    struct tf t[12], empty[] = {{"kustomization.yaml", KUST}};
    char names[12][64], bodies[12][256];
    char c1[41], c2[41], ref[41];
    cJSON *reqs;
    char *text;

    t[0].rel = "_cluster/namespace.team.yaml";
    t[0].data = NS_TEAM;
    managed_configmaps(t + 1, names, bodies, 11);
    commit(f, c1, t, 12);
    assert_int_equal(apply(f, c1, 1, 0), 0);
    commit(f, c2, empty, 1);
    f->ko.concurrency = 1; /* one at a time: the count below is exact */
    th_kube_faults(&f->kube[0],
                   "[{\"path\": \"configmaps\", \"method\": \"DELETE\", \"status\": 503}]");
    th_kube_clear_requests(&f->kube[0]);
    assert_int_equal(apply(f, c2, 1, 0), 1);
    reqs = th_kube_requests(&f->kube[0]);
    /* every ConfigMap looked at, 5 deletes tried (3 attempts each), then the cluster stopped */
    assert_int_equal(th_kube_count(reqs, "GET", "/namespaces/team/configmaps/m"), 11);
    assert_int_equal(th_kube_count(reqs, "DELETE", "configmaps"), RC_APPLY_MAX_SERVER_ERRORS * 3);
    assert_int_equal(th_kube_count(reqs, "DELETE", ""), RC_APPLY_MAX_SERVER_ERRORS * 3);
    assert_int_equal(th_kube_count(reqs, "GET", "/api/v1/namespaces/team/pods"), 0);
    cJSON_Delete(reqs);
    applied_ref(f, 0, ref);
    assert_string_equal(ref, c1);
    text = note(f, c2, &a);
    assert_non_null(strstr(text, "cluster c1: stopped: 5 server errors in a row, the last: "));
    rc_arena_release(&a);
}

#define RACE_ROUNDS 6

/* One racing reconciler: its own mirror of the remote in `state`, applying each deploy
 * commit to its own cluster k. Exit status 0 when every call succeeded and was complete. */
static int racer(struct fixture *f, int k, const char *url, const char *state, char (*d)[41])
{
    struct rc_git_options o = RC_GIT_OPTIONS_INIT;
    struct rc_err err = RC_ERR_INIT;
    struct rc_git *g = NULL;

    o.state_dir = state;
    if (rc_git_open(&g, url, &o, &err) < 0 || rc_git_fetch(g, &err) < 0) {
        fprintf(stderr, "racer %d: %s\n", k, err.msg);
        return 2;
    }
    for (int i = 0; i < RACE_ROUNDS; i++) {
        struct rc_arena a = RC_ARENA_INIT;
        int incomplete = -1;
        int rc =
            rc_apply_deploy_opts(&incomplete, g, d[i], &f->conns[k], 1, 0, &f->ko, NULL, &a, &err);

        rc_arena_release(&a);
        if (rc < 0 || incomplete) {
            fprintf(stderr, "racer %d round %d: %d %d %s\n", k, i, rc, incomplete, err.msg);
            return 3;
        }
    }
    rc_git_free(g);
    return 0;
}

/* Two reconcilers apply the same deploy commits from one remote (file://), each to its own
 * cluster, at the same time: every commit ends with a note naming both clusters (read with
 * the git CLI), and both applied refs reach the last commit on the remote. */
static void test_rc_apply__racing_writers_keep_both_notes(void **state)
{
    struct fixture *f = *state;
    struct rc_err err = RC_ERR_INIT;
    char d[RACE_ROUNDS][41], url[TH_DIR + 16], st[2][TH_DIR];
    pid_t pids[2];

    for (int i = 0; i < RACE_ROUNDS; i++) {
        char v[8];
        struct tf t[2] = {{"_cluster/namespace.team.yaml", NS_TEAM},
                          {"team/configmap.cfg.yaml", NULL}};
        char body[256];

        snprintf(v, sizeof(v), "v%d", i);
        snprintf(body, sizeof(body),
                 "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\n  namespace: team\n"
                 "  labels:\n" MANAGED "data:\n  k: %s\n",
                 v);
        t[1].data = body;
        commit(f, d[i], t, 2);
    }
    assert_int_equal(
        rc_git_update_ref(f->g, "refs/heads/deploy", d[RACE_ROUNDS - 1], NULL, "test", &err),
        RC_OK);
    snprintf(url, sizeof(url), "file://%s", f->repo);
    for (int k = 0; k < 2; k++) {
        assert_int_equal(th_kube_mkdtemp(st[k]), 0);
        fflush(NULL);
        pids[k] = fork();
        assert_true(pids[k] >= 0);
        if (pids[k] == 0)
            _exit(racer(f, k, url, st[k], d));
    }
    for (int k = 0; k < 2; k++) {
        int ws = 0;
        assert_int_equal(waitpid(pids[k], &ws, 0), pids[k]);
        assert_true(WIFEXITED(ws));
        assert_int_equal(WEXITSTATUS(ws), 0);
        th_kube_rmtree(st[k]);
    }
    for (int i = 0; i < RACE_ROUNDS; i++) {
        const char *argv[] = {"git",  "--git-dir", f->repo, "notes", "--ref=rightplace",
                              "show", d[i],        NULL};
        char *out = NULL;

        assert_int_equal(th_run(NULL, &out, NULL, argv), 0);
        if (getenv("TH_VERBOSE"))
            fprintf(stderr, "--- %s\n%s", d[i], out);
        assert_non_null(strstr(out, "cluster c1: applied "));
        assert_non_null(strstr(out, "cluster c2: applied "));
        free(out);
    }
    for (int k = 0; k < 2; k++) {
        char ref[64];
        char *out = NULL;
        const char *argv[] = {"git", "--git-dir", f->repo, "rev-parse", ref, NULL};

        snprintf(ref, sizeof(ref), "refs/rightplace/applied/%s", f->names[k]);
        assert_int_equal(th_run(NULL, &out, NULL, argv), 0);
        assert_int_equal(strncmp(out, d[RACE_ROUNDS - 1], 40), 0);
        free(out);
    }
}

/* A 401 names the kubeconfig file, the context and the user, never the credential. */
static void test_rc_apply__unauthorized_names_kubeconfig_context_user(void **state)
{
    struct fixture *f = *state;
    struct rc_arena a = RC_ARENA_INIT;
    char d[41], ca[TH_PATH], extra[TH_PATH + 64];
    char *text;

    th_certs_path(ca, &certs, "ca.crt");
    snprintf(extra, sizeof(extra), "    certificate-authority: %s\n", ca);
    th_kube_kubeconfig(f->kubeconfig[0], &f->kube[0], extra, "    token: wrong-" TOKEN "\n");
    commit(f, d, TREE1, sizeof(TREE1) / sizeof(TREE1[0]));
    assert_int_equal(apply(f, d, 1, 0), 1);
    text = note(f, d, &a);
    assert_non_null(text);
    if (getenv("TH_VERBOSE"))
        fprintf(stderr, "%s", text);
    assert_non_null(strstr(text, "cluster c1: stopped: unauthorized: user 'u' of context 'test'"));
    assert_non_null(strstr(text, f->kubeconfig[0]));
    assert_null(strstr(text, "unreachable"));
    assert_no_token(f, text);
    rc_arena_release(&a);
}

#define CRD_RAYJOB                                                                                 \
    "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n"             \
    "  name: rayjobs.ray.io\nspec:\n  group: ray.io\n  scope: Namespaced\n  names:\n"              \
    "    kind: RayJob\n    plural: rayjobs\n    singular: rayjob\n    listKind: RayJobList\n"      \
    "  versions:\n  - name: v1\n    served: true\n    storage: true\n"

#define CRD_WIDGET                                                                                 \
    "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n"             \
    "  name: widgets.x.io\nspec:\n  group: x.io\n  scope: Namespaced\n  names:\n"                  \
    "    kind: Widget\n    plural: widgets\n    singular: widget\n    listKind: WidgetList\n"      \
    "  versions:\n  - name: v1\n    served: true\n    storage: true\n"

/* A Widget file of the deploy tree (a kind of x.io/v1) */
#define WIDGET(n)                                                                                  \
    {                                                                                              \
        "team/widget." n ".yaml",                                                                  \
            "apiVersion: x.io/v1\nkind: Widget\nmetadata:\n  name: " n "\n  namespace: team\n"     \
            "  labels:\n" MANAGED                                                                  \
    }

/* A group/version the server lists but cannot serve (an aggregated API whose service is down,
 * as metrics.k8s.io without its metrics-server): 503 for /apis/x.io/v1. Apply discovers only
 * the group/versions its plan uses, so a pass of ConfigMaps is applied as if it were not
 * there; a pass with six Widgets fails those objects alone, asking once. Full discovery before
 * each apply stopped the cluster's whole work every pass. */
static void test_rc_apply__unavailable_api_costs_its_kinds_only(void **state)
{
    struct fixture *f = *state;
    struct rc_arena a = RC_ARENA_INIT;
    static const struct tf t1[] = {
        {"_cluster/customresourcedefinition.widgets.x.io.yaml", CRD_WIDGET},
        {"_cluster/namespace.team.yaml", NS_TEAM},
        {"team/configmap.a.yaml", CM("a", "one", MANAGED)},
    };
    static const struct tf t2[] = {
        {"_cluster/customresourcedefinition.widgets.x.io.yaml", CRD_WIDGET},
        {"_cluster/namespace.team.yaml", NS_TEAM},
        {"team/configmap.a.yaml", CM("a", "two", MANAGED)},
    };
    static const struct tf t3[] = {
        {"_cluster/customresourcedefinition.widgets.x.io.yaml", CRD_WIDGET},
        {"_cluster/namespace.team.yaml", NS_TEAM},
        {"team/configmap.a.yaml", CM("a", "three", MANAGED)},
        WIDGET("w1"),
        WIDGET("w2"),
        WIDGET("w3"),
        WIDGET("w4"),
        WIDGET("w5"),
        WIDGET("w6"),
    };
    char d1[41], d2[41], d3[41], ref[41];
    cJSON *reqs, *o;
    char *text;

    commit(f, d1, t1, 3);
    assert_int_equal(apply(f, d1, 1, 0), 0);
    th_kube_faults(&f->kube[0], "[{\"path\": \"^/apis/x\\\\.io/v1$\", \"method\": \"GET\", "
                                "\"status\": 503}]");

    commit(f, d2, t2, 3);
    th_kube_clear_requests(&f->kube[0]);
    assert_int_equal(apply(f, d2, 1, 0), 0);
    reqs = th_kube_requests(&f->kube[0]);
    assert_int_equal(th_kube_count(reqs, "GET", "/apis/x.io/v1"), 0);
    assert_int_equal(th_kube_count(reqs, "GET", "/apis"), 0); /* v1 alone was discovered */
    assert_int_equal(th_kube_count(reqs, "PATCH", "configmaps/a"), 1);
    cJSON_Delete(reqs);
    applied_ref(f, 0, ref);
    assert_string_equal(ref, d2);

    commit(f, d3, t3, 9);
    th_kube_clear_requests(&f->kube[0]);
    assert_int_equal(apply(f, d3, 1, 0), 1);
    reqs = th_kube_requests(&f->kube[0]);
    /* one fetch of the group/version (the client's attempts), not one per object */
    assert_true(th_kube_count(reqs, "GET", "/apis/x.io/v1") <= 3);
    assert_int_equal(th_kube_count(reqs, "PATCH", "widgets"), 0);
    cJSON_Delete(reqs);
    o = live(f, 0, "v1", "ConfigMap", "team", "a");
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(o, "data"), "k")->valuestring,
                        "three");
    cJSON_Delete(o);
    text = note(f, d3, &a);
    assert_non_null(text);
    /* six objects of it fail, which are not six server errors in a row: the cluster's work
     * goes on */
    assert_non_null(strstr(text, "cluster c1: incomplete: applied 1, failed 6, deleted 0\n"
                                 "  failed: apply team/Widget/w1: "));
    assert_null(strstr(text, "stopped"));
    rc_arena_release(&a);
}

/* A RayJob and its CRD in one pass, on a server where ray.io exists only once the CRD is
 * established (after a few GETs): the CRD is applied first and waited for. */
static void test_rc_apply__crd_first_and_established(void **state)
{
    struct fixture *f = *state;
    struct th_kube *gated = &f->extra;
    struct th_kube_opts o = {NULL, TOKEN "\n", 0, 1, 3};
    static const struct tf tree[] = {
        {"_cluster/customresourcedefinition.rayjobs.ray.io.yaml", CRD_RAYJOB},
        {"_cluster/namespace.team.yaml", NS_TEAM},
        {"team/rayjob.train.yaml", RAYJOB},
    };
    char c1[41], ref[41];
    cJSON *reqs, *item;
    int seen_crd_patch = 0, crd_gets_before_job = 0, order_ok = 0;

    assert_int_equal(th_kube_start(gated, &certs, &o), 0);
    f->kube[0] = *gated;
    write_kubeconfig(f, 0, "ca.crt");
    commit(f, c1, tree, sizeof(tree) / sizeof(tree[0]));
    assert_int_equal(apply(f, c1, 1, 0), 0);
    reqs = th_kube_requests(gated);
    cJSON_ArrayForEach(item, reqs)
    {
        const char *m = sv(item, "method"), *p = sv(item, "path");
        if (!strcmp(m, "PATCH") && strstr(p, "customresourcedefinitions/rayjobs.ray.io"))
            seen_crd_patch = 1;
        else if (!strcmp(m, "GET") && seen_crd_patch &&
                 strstr(p, "customresourcedefinitions/rayjobs.ray.io"))
            crd_gets_before_job++;
        else if (!strcmp(m, "PATCH") && strstr(p, "rayjobs/train"))
            order_ok = seen_crd_patch && crd_gets_before_job >= 3;
    }
    assert_true(order_ok);
    assert_int_equal(
        cJSON_GetObjectItem(th_kube_find(reqs, "PATCH", "rayjobs/train"), "status")->valueint,
        201); /* created */
    cJSON_Delete(reqs);
    applied_ref(f, 0, ref);
    assert_string_equal(ref, c1);
}

/* 30 ConfigMaps, a Namespace, a CRD and a RayJob on a server that answers ConfigMap PATCHes
 * slowly, with 4 requests at once: the server sees several requests in flight (never more
 * than 4), all over at most 4 + 1 reused connections; the Namespace and the CRD (established)
 * come before anything in them or of their kind; a ConfigMap the server refuses fails alone,
 * in the note, and the others are applied. */
static void test_rc_apply__concurrent_keeps_order_and_object_failures(void **state)
{
    struct fixture *f = *state;
    struct th_kube *gated = &f->extra;
    struct th_kube_opts o = {NULL, TOKEN "\n", 0, 1, 2};
    enum { NCM = 30 };
    struct tf t[NCM + 3];
    char names[NCM][64], bodies[NCM][256];
    struct rc_arena a = RC_ARENA_INIT;
    char d[41], *text;
    cJSON *reqs, *item;
    long max_inflight = 0, max_conn = 0;
    int ns_done = 0, crd_established_seen = 0, bad_order = 0;
    size_t cm_patches = 0;

    assert_int_equal(th_kube_start(gated, &certs, &o), 0);
    f->kube[0] = *gated;
    write_kubeconfig(f, 0, "ca.crt");
    t[0].rel = "_cluster/customresourcedefinition.rayjobs.ray.io.yaml";
    t[0].data = CRD_RAYJOB;
    t[1].rel = "_cluster/namespace.team.yaml";
    t[1].data = NS_TEAM;
    t[2].rel = "team/rayjob.train.yaml";
    t[2].data = RAYJOB;
    managed_configmaps(t + 3, names, bodies, NCM);
    commit(f, d, t, NCM + 3);
    th_kube_faults(gated, "[{\"path\": \"configmaps/m07$\", \"method\": \"PATCH\", "
                          "\"status\": 422, \"count\": 100},"
                          "{\"path\": \"configmaps/\", \"method\": \"PATCH\", \"delay\": 0.2}]");
    f->ko.concurrency = 4;
    assert_int_equal(apply(f, d, 1, 0), 1);
    reqs = th_kube_requests(gated);
    cJSON_ArrayForEach(item, reqs)
    {
        const char *m = sv(item, "method"), *p = sv(item, "path");
        long inflight = (long)cJSON_GetNumberValue(cJSON_GetObjectItem(item, "inflight"));
        long conn = (long)cJSON_GetNumberValue(cJSON_GetObjectItem(item, "conn"));

        if (!strcmp(m, "PATCH") && strstr(p, "/namespaces/team") && !strstr(p, "/namespaces/team/"))
            ns_done = 1;
        if (!strcmp(m, "GET") && strstr(p, "customresourcedefinitions/rayjobs.ray.io") &&
            cJSON_GetObjectItem(item, "status")->valueint == 200)
            crd_established_seen++;
        if (!strcmp(m, "PATCH") && strstr(p, "/namespaces/team/")) {
            bad_order |= !ns_done;
            if (strstr(p, "rayjobs"))
                bad_order |= crd_established_seen < 2;
        }
        if (!strcmp(m, "PATCH") && strstr(p, "configmaps/")) {
            cm_patches++;
            if (inflight > max_inflight)
                max_inflight = inflight;
        }
        if (conn > max_conn)
            max_conn = conn;
    }
    if (getenv("TH_VERBOSE"))
        fprintf(stderr, "max inflight %ld, connections %ld\n", max_inflight, max_conn);
    assert_false(bad_order);
    assert_int_equal(cm_patches, NCM);
    assert_true(max_inflight > 1);
    assert_true(max_inflight <= 4);
    assert_true(max_conn <= 5);
    cJSON_Delete(reqs);
    text = note(f, d, &a);
    assert_non_null(text);
    assert_non_null(strstr(text, "cluster c1: incomplete: applied 32, failed 1, deleted 0\n"
                                 "  failed: apply team/ConfigMap/m07: "));
    rc_arena_release(&a);
}

/* A Namespace, 12 ConfigMaps and a RayJob in it and the RayJob's CRD leave the deploy branch,
 * on a server that answers DELETEs slowly, with 4 requests at once: the deletes overlap
 * (several DELETEs in flight, never more than 4); one GET and one DELETE per object, plus
 * one look at the Namespace's pods, and nothing else; the RayJob is deleted before its CRD,
 * and everything in the Namespace before the Namespace; the ConfigMap whose DELETE the
 * server refuses fails alone (in the note, the applied ref stays), the others are deleted. */
static void test_rc_apply__concurrent_deletes_keep_order_and_object_failures(void **state)
{
    struct fixture *f = *state;
    struct th_kube *srv = &f->extra;
    struct th_kube_opts o = {NULL, TOKEN "\n", 0, 0, 0};
    enum { NCM = 12 };
    struct tf t[NCM + 3], empty[] = {{"kustomization.yaml", KUST}};
    char names[NCM][64], bodies[NCM][256];
    struct rc_arena a = RC_ARENA_INIT;
    char c1[41], c2[41], ref[41], *text;
    cJSON *reqs, *item;
    long max_inflight = 0, n = 0, last_in_ns = -1, last_rayjob = -1, crd_at = -1, ns_at = -1;
    size_t deleted_ok = 0;

    assert_int_equal(th_kube_start(srv, &certs, &o), 0);
    f->kube[0] = *srv;
    write_kubeconfig(f, 0, "ca.crt");
    t[0].rel = "_cluster/customresourcedefinition.rayjobs.ray.io.yaml";
    t[0].data = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n"
                "  name: rayjobs.ray.io\n  labels:\n" MANAGED
                "spec:\n  group: ray.io\n  scope: Namespaced\n  names:\n"
                "    kind: RayJob\n    plural: rayjobs\n    singular: rayjob\n"
                "  versions:\n  - name: v1\n    served: true\n    storage: true\n";
    t[1].rel = "_cluster/namespace.team.yaml";
    t[1].data = NS_TEAM;
    t[2].rel = "team/rayjob.train.yaml";
    t[2].data = RAYJOB;
    managed_configmaps(t + 3, names, bodies, NCM);
    commit(f, c1, t, NCM + 3);
    assert_int_equal(apply(f, c1, 1, 0), 0);

    commit(f, c2, empty, 1);
    th_kube_clear_requests(srv);
    th_kube_faults(srv, "[{\"path\": \"configmaps/m03$\", \"method\": \"DELETE\", "
                        "\"status\": 422, \"count\": 100},"
                        "{\"path\": \"\", \"method\": \"DELETE\", \"delay\": 0.2}]");
    f->ko.concurrency = 4;
    assert_int_equal(apply(f, c2, 1, 0), 1);

    reqs = th_kube_requests(srv);
    cJSON_ArrayForEach(item, reqs)
    {
        const char *m = sv(item, "method"), *p = sv(item, "path");
        long inflight = (long)cJSON_GetNumberValue(cJSON_GetObjectItem(item, "inflight"));

        n++;
        if (strcmp(m, "DELETE"))
            continue;
        if (inflight > max_inflight)
            max_inflight = inflight;
        if (cJSON_GetObjectItem(item, "status")->valueint == 200)
            deleted_ok++;
        if (strstr(p, "/namespaces/team/"))
            last_in_ns = n;
        if (strstr(p, "/rayjobs/train"))
            last_rayjob = n;
        if (strstr(p, "/customresourcedefinitions/rayjobs.ray.io"))
            crd_at = n;
        if (!strcmp(p, "/api/v1/namespaces/team"))
            ns_at = n;
    }
    if (getenv("TH_VERBOSE"))
        fprintf(stderr, "max inflight %ld; DELETE of the rayjob %ld, crd %ld, ns %ld\n",
                max_inflight, last_rayjob, crd_at, ns_at);
    /* requests: one GET and one DELETE per object, one LIST of the Namespace's pods */
    assert_int_equal(th_kube_count(reqs, "PATCH", ""), 0);
    assert_int_equal(th_kube_count(reqs, "DELETE", ""), NCM + 3);
    assert_int_equal(th_kube_count(reqs, "GET", "/api/v1/namespaces/team/configmaps/m"), NCM);
    assert_int_equal(th_kube_count(reqs, "GET", "/namespaces/team/rayjobs/train"), 1);
    assert_int_equal(th_kube_count(reqs, "GET", "/customresourcedefinitions/rayjobs.ray.io"), 1);
    assert_int_equal(th_kube_count(reqs, "GET", "/api/v1/namespaces/team/pods"), 1);
    assert_int_equal(deleted_ok, NCM + 2);
    /* order: the objects in the Namespace, then the CRD, then the Namespace */
    assert_true(last_rayjob > 0 && crd_at > last_rayjob);
    assert_true(last_in_ns > 0 && ns_at > last_in_ns && ns_at > crd_at);
    /* concurrently, within the bound */
    assert_true(max_inflight > 1);
    assert_true(max_inflight <= 4);
    cJSON_Delete(reqs);

    applied_ref(f, 0, ref);
    assert_string_equal(ref, c1);
    text = note(f, c2, &a);
    assert_non_null(text);
    assert_non_null(strstr(text, "cluster c1: incomplete: applied 0, failed 1, deleted 14\n"
                                 "  failed: delete team/ConfigMap/m03: "));
    rc_arena_release(&a);
}

/* Concurrent deletes (4 at a time) meet a fault mid-way (every DELETE slow, so that several are
 * in flight):
 * a 401 on one of them, or every DELETE's connection dropped. The cluster's work stops at the
 * first such answer: no DELETE is sent after it (at most the ones in flight when it came), the
 * Namespace stage is never reached, the applied ref stays, the note says why; what was not
 * deleted is still there, and the next call, fault gone, finishes the job. */
static void deletes_halt_case(struct fixture *f, const char *faults, size_t max_objects,
                              const char *expect)
{
    enum { NCM = 16, CONC = 4 };
    struct rc_arena a = RC_ARENA_INIT;
    struct tf t[NCM + 1], empty[] = {{"kustomization.yaml", KUST}};
    char names[NCM][64], bodies[NCM][256], cm[16];
    char c1[41], c2[41], ref[41];
    cJSON *reqs, *item;
    size_t deletes = 0, left = 0, distinct = 0;
    char seen[NCM] = {0};
    char *text;

    t[0].rel = "_cluster/namespace.team.yaml";
    t[0].data = NS_TEAM;
    managed_configmaps(t + 1, names, bodies, NCM);
    commit(f, c1, t, NCM + 1);
    assert_int_equal(apply(f, c1, 1, 0), 0);
    commit(f, c2, empty, 1);
    f->ko.concurrency = CONC;
    th_kube_faults(&f->kube[0], faults);
    th_kube_clear_requests(&f->kube[0]);
    assert_int_equal(apply(f, c2, 1, 0), 1);

    reqs = th_kube_requests(&f->kube[0]);
    cJSON_ArrayForEach(item, reqs)
    {
        const char *m = strstr(sv(item, "path"), "/configmaps/m");

        if (strcmp(sv(item, "method"), "DELETE"))
            continue;
        deletes++;
        if (m) {
            long k = strtol(m + 13, NULL, 10);
            if (k >= 0 && k < NCM && !seen[k]++)
                distinct++;
        }
    }
    if (getenv("TH_VERBOSE"))
        fprintf(stderr, "%zu DELETE requests, %zu objects\n", deletes, distinct);
    /* every object looked at first; then the DELETEs stopped: only the objects sent before
     * the first failing answer came, and those in flight with it (each tried at most
     * max_attempts, 3, times, and libcurl sends a request once more when the connection it
     * reused turns out dead) */
    assert_int_equal(th_kube_count(reqs, "GET", "/api/v1/namespaces/team/configmaps/m"), NCM);
    assert_true(deletes >= 1);
    assert_true(distinct <= max_objects);
    assert_true(deletes <= 2 * 3 * distinct);
    assert_int_equal(th_kube_count(reqs, "GET", "/api/v1/namespaces/team/pods"), 0);
    assert_int_equal(deletes, th_kube_count(reqs, "DELETE", "/configmaps/m"));
    cJSON_Delete(reqs);
    for (int i = 0; i < NCM; i++) {
        snprintf(cm, sizeof(cm), "m%02d", i);
        left += exists(f, 0, "v1", "ConfigMap", cm) ? 1 : 0;
    }
    assert_true(left >= NCM - distinct);
    assert_true(exists(f, 0, "v1", "Namespace", "team"));
    applied_ref(f, 0, ref);
    assert_string_equal(ref, c1);
    text = note(f, c2, &a);
    assert_non_null(text);
    if (getenv("TH_VERBOSE"))
        fprintf(stderr, "--- note\n%s", text);
    assert_non_null(strstr(text, expect));
    assert_no_token(f, text);

    /* the fault gone, the next call deletes the rest, then the Namespace */
    th_kube_faults(&f->kube[0], "[]");
    assert_int_equal(apply(f, c2, 1, 0), 0);
    for (int i = 0; i < NCM; i++) {
        snprintf(cm, sizeof(cm), "m%02d", i);
        assert_false(exists(f, 0, "v1", "ConfigMap", cm));
    }
    assert_false(exists(f, 0, "v1", "Namespace", "team"));
    applied_ref(f, 0, ref);
    assert_string_equal(ref, c2);
    rc_arena_release(&a);
}

static void test_rc_apply__concurrent_deletes_stop_at_401(void **state)
{
    deletes_halt_case(*state,
                      "[{\"path\": \"configmaps/m05$\", \"method\": \"DELETE\", \"status\": 401},"
                      "{\"path\": \"\", \"method\": \"DELETE\", \"delay\": 0.2}]",
                      6 + 3, "cluster c1: stopped: unauthorized: ");
}

static void test_rc_apply__concurrent_deletes_stop_when_connections_drop(void **state)
{
    deletes_halt_case(*state,
                      "[{\"path\": \"configmaps\", \"method\": \"DELETE\", \"drop\": true}]", 4,
                      "cluster c1: unreachable: ");
}

/* A free TCP port on 127.0.0.1 (bound and released: a tiny race, fine for a test). */
static int free_port(void)
{
    struct sockaddr_in sa;
    socklen_t len = sizeof(sa);
    int fd = socket(AF_INET, SOCK_STREAM, 0), port = -1;

    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
        getsockname(fd, (struct sockaddr *)&sa, &len) == 0)
        port = ntohs(sa.sin_port);
    if (fd >= 0)
        close(fd);
    return port;
}

static int listening(int port)
{
    struct sockaddr_in sa;
    int fd = socket(AF_INET, SOCK_STREAM, 0), ok;

    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_port = htons((unsigned short)port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ok = fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
    if (fd >= 0)
        close(fd);
    return ok;
}

/* HTTP/2: fakekube behind nghttpx (TLS, h2 offered in ALPN). 30 ConfigMaps applied 8 at a
 * time, then deleted 8 at a time, each call starting on a fresh client with many requests at
 * once: they are streams of one connection per call. Every request the proxy sees came over
 * h2, over at most four client connections (per call: the client's one-request handle, for
 * discovery, and the connection of the many). Skipped where nghttpx (Debian: nghttp2-proxy)
 * is missing. */
static void test_rc_apply__h2_requests_share_one_connection(void **state)
{
    struct fixture *f = *state;
    const char *has[] = {"sh", "-c", "command -v nghttpx >/dev/null", NULL};
    enum { NCM = 30 };
    struct tf t[NCM], empty[] = {{"kustomization.yaml", KUST}};
    char names[NCM][64], bodies[NCM][256];
    char front[64], back[64], alog[TH_PATH], elog[TH_PATH], key[TH_PATH], crt[TH_PATH];
    char alog_opt[TH_PATH + 32], elog_opt[TH_PATH + 32], ports[64][16], d[41], d2[41];
    char *text, *line, *save = NULL;
    size_t nports = 0, lines = 0, h2 = 0;
    int port = free_port(), i;
    pid_t pid;

    if (th_kube_run(has) != 0) {
        fprintf(stderr, "nghttpx not found: skipped\n");
        skip();
    }
    assert_true(port > 0);
    snprintf(front, sizeof(front), "-f127.0.0.1,%d", port);
    snprintf(back, sizeof(back), "-b127.0.0.1,%d;;tls", f->kube[0].port);
    th_kube_path(alog, &f->kube[0], "access.log");
    th_kube_path(elog, &f->kube[0], "nghttpx.log");
    snprintf(alog_opt, sizeof(alog_opt), "--accesslog-file=%s", alog);
    snprintf(elog_opt, sizeof(elog_opt), "--errorlog-file=%s", elog);
    th_certs_path(key, &certs, "server.key");
    th_certs_path(crt, &certs, "server.crt");
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        FILE *null = fopen("/dev/null", "w");
        if (null) {
            dup2(fileno(null), 1);
            dup2(fileno(null), 2);
        }
        execlp("nghttpx", "nghttpx", "--conf=/dev/null", front, back, "--insecure", "--workers=1",
               alog_opt, "--accesslog-format=$remote_port $alpn $request $status", elog_opt, key,
               crt, (char *)NULL);
        _exit(127);
    }
    for (i = 0; i < 200 && !listening(port); i++) {
        struct timespec ts = {0, 50000000L};
        nanosleep(&ts, NULL);
    }
    snprintf(f->kube[0].url, sizeof(f->kube[0].url), "https://127.0.0.1:%d", port);
    write_kubeconfig(f, 0, "ca.crt");

    for (i = 0; i < NCM; i++) { /* in "default": no Namespace first, many requests at once */
        snprintf(names[i], sizeof(names[i]), "default/configmap.h%02d.yaml", i);
        snprintf(bodies[i], sizeof(bodies[i]),
                 "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: h%02d\n"
                 "  namespace: default\n  labels:\n" MANAGED "data:\n  k: v\n",
                 i);
        t[i].rel = names[i];
        t[i].data = bodies[i];
    }
    commit(f, d, t, NCM);
    f->ko.concurrency = 8;
    assert_int_equal(apply(f, d, 1, 0), 0);
    commit(f, d2, empty, 1);
    assert_int_equal(apply(f, d2, 1, 0), 0);
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);

    text = th_kube_read(alog);
    assert_non_null(text);
    for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char rport[16] = "", alpn[16] = "";
        size_t k;

        if (sscanf(line, "%15s %15s", rport, alpn) != 2)
            continue;
        lines++;
        h2 += !strcmp(alpn, "h2");
        for (k = 0; k < nports && strcmp(ports[k], rport); k++)
            ;
        if (k == nports && nports < 64)
            snprintf(ports[nports++], sizeof(ports[0]), "%s", rport);
    }
    if (getenv("TH_VERBOSE"))
        fprintf(stderr, "%zu requests through nghttpx, %zu over h2, %zu client connections\n",
                lines, h2, nports);
    assert_true(lines >= 3 * NCM); /* a PATCH, a GET and a DELETE each */
    assert_int_equal(h2, lines);
    assert_true(nports >= 1 && nports <= 4);
    free(text);
}

/* rightplace diff: after an apply nothing drifted; then a person changes one ConfigMap and
 * deletes another on the cluster: exactly those two show as unified diffs (live vs the
 * dry-run result, without managedFields/resourceVersion/uid/...), and the dry runs stored
 * nothing. */
static void test_rc_apply__diff_shows_drift_only(void **state)
{
    struct fixture *f = *state;
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_buf out = RC_BUF_INIT;
    struct rc_err err = RC_ERR_INIT;
    char d[41];
    size_t drift = 99, failed = 99;
    cJSON *reqs, *live_old;
    struct rc_kube *k = NULL;

    commit(f, d, TREE1, sizeof(TREE1) / sizeof(TREE1[0]));
    assert_int_equal(apply(f, d, 1, 0), 0);
    assert_int_equal(
        rc_apply_diff(&out, &drift, &failed, f->g, d, f->conns, 1, &f->ko, &f->log, &a, &err),
        RC_OK);
    assert_int_equal(drift, 0);
    assert_int_equal(failed, 0);
    assert_int_equal(out.len, 0);

    /* drift: cfg edited by hand (SSA by another manager, forced), old deleted */
    assert_int_equal(rc_kube_open_conn(&k, &f->conns[0], &f->ko, &err), RC_OK);
    {
        cJSON *o = cJSON_Parse("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":"
                               "{\"name\":\"cfg\",\"namespace\":\"team\"},"
                               "\"data\":{\"k\":\"edited\"}}");
        assert_int_equal(rc_kube_apply(k, o, "kubectl-edit", 1, NULL, &err), RC_OK);
        cJSON_Delete(o);
    }
    live_old = live(f, 0, "v1", "ConfigMap", "team", "old");
    assert_int_equal(rc_kube_delete(k, "v1", "ConfigMap", "team", "old", NULL, &err), RC_OK);
    cJSON_Delete(live_old);
    rc_kube_free(k);
    th_kube_clear_requests(&f->kube[0]);
    assert_int_equal(
        rc_apply_diff(&out, &drift, &failed, f->g, d, f->conns, 1, &f->ko, &f->log, &a, &err),
        RC_OK);
    if (getenv("TH_VERBOSE"))
        fprintf(stderr, "%s", out.ptr);
    assert_int_equal(drift, 2);
    assert_int_equal(failed, 0);
    assert_non_null(strstr(out.ptr, "--- live/c1/v1.ConfigMap.team.cfg\n"
                                    "+++ merged/c1/v1.ConfigMap.team.cfg\n"));
    assert_non_null(strstr(out.ptr, "\n-  k: edited\n+  k: one\n"));
    assert_non_null(strstr(out.ptr, "+++ merged/c1/v1.ConfigMap.team.old\n@@ -0,0 +1,"));
    assert_null(strstr(out.ptr, "managedFields"));
    assert_null(strstr(out.ptr, "resourceVersion"));
    assert_null(strstr(out.ptr, "uid:"));
    assert_null(strstr(out.ptr, "theirs")); /* unchanged objects are not shown */
    /* every PATCH was a dry run, and nothing was stored */
    reqs = th_kube_requests(&f->kube[0]);
    assert_true(th_kube_count(reqs, "PATCH", "") >= 5);
    {
        const cJSON *r;
        cJSON_ArrayForEach(r, reqs)
        {
            if (!strcmp(sv(r, "method"), "PATCH"))
                assert_string_equal(qv(r, "dryRun"), "All");
        }
    }
    cJSON_Delete(reqs);
    assert_false(exists(f, 0, "v1", "ConfigMap", "old"));
    rc_buf_release(&out);
    rc_arena_release(&a);
}

/* ==== The whole pass, on two live fake clusters ==== */

#define E2E_NODE(name, cpu)                                                                        \
    "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"" name "\"},"               \
    "\"status\":{\"allocatable\":{\"cpu\":\"" cpu "\",\"memory\":\"16Gi\",\"pods\":\"110\"},"      \
    "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}"
/* cluster a: one 4-cpu node, 3.5 cpu of it used by a running pod */
/* clang-format off */
static const char E2E_STATE_A[] = "{\"objects\":["
    "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"other\"}},"
    E2E_NODE("a1", "4") ","
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"big\","
    "\"namespace\":\"other\"},\"spec\":{\"nodeName\":\"a1\",\"containers\":[{\"name\":\"c\","
    "\"resources\":{\"requests\":{\"cpu\":\"3500m\"}}}]},\"status\":{\"phase\":\"Running\"}}"
    "]}";
/* clang-format on */
/* cluster b: one free 8-cpu node */
static const char E2E_STATE_B[] = "{\"objects\":[" E2E_NODE("b1", "8") "]}";

static const char E2E_POLICY[] =
    "apiVersion: policy.elotl.co/v1alpha1\nkind: SchedulePolicy\nmetadata:\n  name: web\n"
    "spec:\n  namespaceSelector:\n    matchLabels:\n      kubernetes.io/metadata.name: team\n"
    "  resourceSelectors:\n    labelSelectors:\n    - matchLabels:\n        app: web\n";
static const char E2E_DEPLOY[] =
    "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: team\n"
    "  labels:\n    app: web\nspec:\n  replicas: 1\n  selector:\n    matchLabels:\n"
    "      app: web\n  template:\n    metadata:\n      labels:\n        app: web\n"
    "    spec:\n      containers:\n      - name: web\n        image: nginx\n"
    "        resources:\n          requests:\n            cpu: \"2\"\n";

/* A Cluster selecting kubeconfig `file` of the operator's kubeconfig directory. */
static char *e2e_cluster(const char *name, const char *file)
{
    char *out = malloc(1024);
    snprintf(out, 1024,
             "apiVersion: rightplace.dev/v1alpha1\nkind: Cluster\nmetadata:\n  name: %s\n"
             "spec:\n  kubeconfig:\n    name: %s\n  autoscaler:\n    type: auto\n",
             name, file);
    return out;
}

static void test_rc_apply__pass_end_to_end_two_clusters(void **state)
{
    struct fixture *f = *state;
    struct th_kube_opts oa = {E2E_STATE_A, TOKEN "\n", 0, 0, 0};
    struct th_kube_opts ob = {E2E_STATE_B, TOKEN "\n", 0, 0, 0};
    struct rc_pass_options po = RC_PASS_OPTIONS_INIT;
    struct rc_pass_result res;
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_err err = RC_ERR_INIT;
    struct rc_git *src = NULL;
    char ref[41], first[41];
    char *dir, *ca_yaml, *cb_yaml, *text, *commit;
    cJSON *reqs;

    assert_int_equal(th_kube_start(&f->extra, &certs, &oa), 0);
    assert_int_equal(th_kube_start(&f->extra2, &certs, &ob), 0);
    f->kube[0] = f->extra;
    f->kube[1] = f->extra2;
    write_kubeconfig(f, 0, "ca.crt");
    write_kubeconfig(f, 1, "ca.crt");
    ca_yaml = e2e_cluster("a", f->names[0]);
    cb_yaml = e2e_cluster("b", f->names[1]);

    dir = th_git_init("e2e", 0);
    commit = th_git_commit_files(dir, "fleet and a web deployment", "fleet/a.yaml", ca_yaml,
                                 "fleet/b.yaml", cb_yaml, "team/policy.yaml", E2E_POLICY,
                                 "team/web.yaml", E2E_DEPLOY, NULL);
    free(commit);
    assert_int_equal(rc_git_open(&src, dir, NULL, &err), RC_OK);
    po.apply = 1;
    po.log = &f->log;
    po.kube = &f->ko;

    /* pass 1: a is full (observed), b has room: web goes to b and is applied there */
    assert_int_equal(rc_pass_run(&res, src, &po, &a, &err), RC_OK);
    assert_int_equal(res.committed, 1);
    assert_int_equal(res.placed, 1);
    assert_int_equal(res.apply_incomplete, 0);
    memcpy(first, res.deploy_new, 41);
    reqs = th_kube_requests(&f->extra2);
    assert_non_null(th_kube_find(reqs, "PATCH", "/api/v1/namespaces/team"));
    assert_non_null(th_kube_find(reqs, "PATCH", "/apis/apps/v1/namespaces/team/deployments/web"));
    cJSON_Delete(reqs);
    reqs = th_kube_requests(&f->extra);
    assert_int_equal(th_kube_count(reqs, "PATCH", ""), 0);
    cJSON_Delete(reqs);
    {
        struct rc_err e = RC_ERR_INIT;
        assert_int_equal(rc_git_resolve(ref, src, "refs/rightplace/applied/b", &e), RC_OK);
        assert_string_equal(ref, first);
    }
    text = NULL;
    assert_int_equal(rc_git_note_read(&text, src, first, &a, &err), RC_OK);
    if (getenv("TH_VERBOSE"))
        fprintf(stderr, "--- note\n%s--- log\n%.*s", text, (int)f->loglen, f->logbuf);
    assert_non_null(strstr(text, "cluster b: applied "));

    /* pass 2: the workload leaves the source: it is pruned from b */
    th_kube_clear_requests(&f->extra2);
    free(th_git_ok(dir, "rm", "-q", "team/web.yaml", NULL));
    free(th_git_ok(dir, "commit", "-q", "-m", "remove web", NULL));
    assert_int_equal(rc_pass_run(&res, src, &po, &a, &err), RC_OK);
    assert_int_equal(res.committed, 1);
    assert_int_equal(res.apply_incomplete, 0);
    reqs = th_kube_requests(&f->extra2);
    assert_non_null(th_kube_find(reqs, "DELETE", "/apis/apps/v1/namespaces/team/deployments/web"));
    cJSON_Delete(reqs);
    assert_int_equal(rc_git_resolve(ref, src, "refs/rightplace/applied/b", &err), RC_OK);
    assert_string_equal(ref, res.deploy_new);
    assert_no_token(f, NULL);

    rc_git_free(src);
    th_rm_rf(dir);
    free(dir);
    free(ca_yaml);
    free(cb_yaml);
    rc_arena_release(&a);
}

static void test_rc_apply__simulated_clusters_ignored(void **state)
{
    struct fixture *f = *state;
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_err err = RC_ERR_INIT;
    struct rd_cluster_conn sim = {"c1", 0, NULL, NULL, NULL, 0, 0};
    char c1[41], ref[41];
    int incomplete = -1;

    commit(f, c1, TREE1, sizeof(TREE1) / sizeof(TREE1[0]));
    assert_int_equal(
        rc_apply_deploy_opts(&incomplete, f->g, c1, &sim, 1, 0, &f->ko, &f->log, &a, &err), RC_OK);
    assert_int_equal(incomplete, 0);
    applied_ref(f, 0, ref);
    assert_string_equal(ref, "");
    assert_null(note(f, c1, &a));
    rc_arena_release(&a);
}

/* deploy/rbac/member-cluster.yaml allows every request the cases above made (observe,
 * apply, prune, CRD waits, diff, faults) and has no rule none of them needed. */
static void test_rc_apply__rbac_rules_cover_every_request_and_no_more(void **state)
{
    char *out = NULL, *errout = NULL;
    const char *argv[] = {"python3", RP_SOURCE_DIR "/tests/rbac/check.py",
                          RP_SOURCE_DIR "/deploy/rbac/member-cluster.yaml", rbac_log, NULL};
    int st;

    (void)state;
    st = th_run(NULL, &out, &errout, argv);
    if (st != 0)
        fail_msg("rbac check failed (%d):\n%s%s", st, out ? out : "", errout ? errout : "");
    assert_non_null(strstr(out, " ok\n"));
    free(out);
    free(errout);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_rc_apply__note_not_written_keeps_the_ref, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_rc_apply__creates_objects_with_ssa_namespaces_first,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_rc_apply__changes_only_and_guarded_deletes, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_rc_apply__problems_that_stay_are_warned_once, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_rc_apply__problems_kept_for_the_next_process, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_rc_apply__object_refused_is_reported_nothing_deleted,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_rc_apply__namespace_with_foreign_pods_is_kept, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_rc_apply__fault_500, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rc_apply__fault_429_retry_after, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rc_apply__fault_slow, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rc_apply__fault_dropped_connection, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rc_apply__fault_wrong_certificate, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rc_apply__500_on_one_patch_fails_that_object_only,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_rc_apply__server_errors_in_a_row_stop_the_cluster,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_rc_apply__server_errors_in_a_row_stop_the_deletes,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_rc_apply__unauthorized_names_kubeconfig_context_user,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_rc_apply__racing_writers_keep_both_notes, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_rc_apply__concurrent_keeps_order_and_object_failures,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_rc_apply__concurrent_deletes_keep_order_and_object_failures, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rc_apply__concurrent_deletes_stop_at_401, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            test_rc_apply__concurrent_deletes_stop_when_connections_drop, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rc_apply__h2_requests_share_one_connection, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_rc_apply__diff_shows_drift_only, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rc_apply__crd_first_and_established, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rc_apply__unavailable_api_costs_its_kinds_only, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_rc_apply__pass_end_to_end_two_clusters, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_rc_apply__simulated_clusters_ignored, setup, teardown),
        /* last: it reads what every case above sent */
        cmocka_unit_test(test_rc_apply__rbac_rules_cover_every_request_and_no_more),
    };
    char *home = th_git_env_setup();
    int failed = cmocka_run_group_tests(tests, group_setup, group_teardown);

    th_rm_rf(home);
    free(home);
    return failed;
}
