/*
 * test_rc_pass.c - the load path of a pass: work proportional to the change (the quick exit
 * from git object ids, counted in files parsed) and per-file isolation of limits.
 */
#include "th.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "rc_cache.h"
#include "rc_git.h"
#include "rc_http.h"
#include "rc_pass.h"
#include "th_git.h"
#include "th_rp.h"

#include "rc_banned.h"

static char *home;

/* Files *.yaml under examples/repo: what a full pass parses. */
#define EXAMPLE_FILES 20

struct fx {
    char *repo;
    struct rc_git *g;
    struct rc_cache *cache;
    struct rc_arena a;
};

static void fx_open(struct fx *f, const char *state_dir)
{
    struct rc_err err = RC_ERR_INIT;

    memset(f, 0, sizeof(*f));
    f->repo = th_example_repo();
    assert_int_equal(rc_git_open(&f->g, f->repo, NULL, &err), RC_OK);
    assert_int_equal(rc_cache_new(&f->cache, state_dir, &err), RC_OK);
}

/* A new process: nothing of the earlier passes in memory. */
static void fx_new_cache(struct fx *f)
{
    struct rc_err err = RC_ERR_INIT;

    rc_cache_free(f->cache);
    assert_int_equal(rc_cache_new(&f->cache, NULL, &err), RC_OK);
}

static void fx_close(struct fx *f)
{
    rc_cache_free(f->cache);
    rc_git_free(f->g);
    rc_arena_release(&f->a);
    th_rm_rf(f->repo);
    free(f->repo);
}

static void pass(struct fx *f, struct rc_pass_result *res)
{
    struct rc_pass_options o = RC_PASS_OPTIONS_INIT;
    struct rc_err err = RC_ERR_INIT;
    int rc;

    o.apply = 0;
    o.cache = f->cache;
    rc = rc_pass_run(res, f->g, &o, &f->a, &err);
    if (rc != RC_OK)
        fail_msg("pass: %s", err.msg);
}

static void test_rc_pass__noop_parses_no_manifest(void **state)
{
    struct fx f;
    struct rc_pass_result res;
    char deploy[41];
    (void)state;

    fx_open(&f, NULL);
    pass(&f, &res);
    assert_int_equal(res.committed, 1);
    assert_int_equal(res.skipped, 0);
    assert_int_equal(res.nparsed, EXAMPLE_FILES);
    memcpy(deploy, res.deploy_new, 41);

    /* nothing changed */
    pass(&f, &res);
    assert_int_equal(res.skipped, 1);
    assert_int_equal(res.nparsed, 0);
    assert_int_equal(res.committed, 0);
    assert_string_equal(res.deploy_new, deploy);

    /* a commit that touches no YAML file under the source paths */
    free(th_git_commit_files(f.repo, "docs", "README.md", "new words\n", "notes.txt", "x\n", NULL));
    pass(&f, &res);
    assert_int_equal(res.skipped, 1);
    assert_int_equal(res.nparsed, 0);
    assert_string_equal(res.deploy_new, deploy);

    /* a YAML change is a pass that parses */
    free(th_git_commit_files(f.repo, "label", "infra/namespace-development.yaml",
                             "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: development\n"
                             "  labels: {env: development, team: web}\n",
                             NULL));
    pass(&f, &res);
    assert_int_equal(res.skipped, 0);
    assert_true(res.nparsed > 0);
    fx_close(&f);
}

/* A pass that sends no request (no live cluster, nothing applied) does not load libcurl,
 * which rightplace does not link (rc_http.c loads it for the first connection). */
static void test_rc_pass__no_request_loads_no_libcurl(void **state)
{
    struct fx f;
    struct rc_pass_result res;
    (void)state;

    fx_open(&f, NULL);
    pass(&f, &res);
    assert_int_equal(res.committed, 1);
    pass(&f, &res);
    assert_int_equal(res.skipped, 1);
    assert_false(rc_http_loaded());
    assert_null(dlopen("libcurl.so.4", RTLD_NOLOAD | RTLD_LAZY));
    fx_close(&f);
}

/* Units pending on a simulated fleet are decided again from the same declared capacity, to
 * the same result: they do not keep every later pass from the quick exit. */
static void test_rc_pass__noop_with_pending_on_simulated_fleet(void **state)
{
    struct fx f;
    struct rc_pass_result res;
    (void)state;

    fx_open(&f, NULL);
    free(th_git_commit_files(
        f.repo, "a workload no cluster can take", "waits/waits.yaml",
        "apiVersion: policy.elotl.co/v1alpha1\nkind: SchedulePolicy\nmetadata: {name: waits}\n"
        "spec:\n  clusterSelector:\n    matchLabels: {no-such-label: x}\n"
        "  resourceSelectors:\n    labelSelectors:\n    - matchLabels: {app: waits}\n---\n"
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: w, namespace: waits, labels: "
        "{app: waits}}\nspec:\n  replicas: 1\n  selector: {matchLabels: {run: w}}\n"
        "  template:\n    metadata: {labels: {run: w}}\n    spec:\n      containers:\n"
        "      - {name: c, image: busybox}\n",
        NULL));
    pass(&f, &res);
    assert_int_equal(res.skipped, 0);
    assert_true(res.pending > 0);
    pass(&f, &res);
    assert_int_equal(res.skipped, 1);
    assert_int_equal(res.nparsed, 0);
    assert_int_equal(res.committed, 0);
    fx_close(&f);
}

/* The memo outlives the process (--once runs) and a damaged memo file costs only work. */
static void test_rc_pass__noop_memo_in_state_dir(void **state)
{
    char *dir = th_tmpdir("state");
    char path[4096];
    struct fx f;
    struct rc_pass_result res;
    struct rc_err err = RC_ERR_INIT;
    struct stat st;
    (void)state;

    fx_open(&f, dir);
    pass(&f, &res);
    assert_int_equal(res.nparsed, EXAMPLE_FILES);
    snprintf(path, sizeof(path), "%s/pass-state", dir);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);

    /* a new process: the memo comes from the file */
    rc_cache_free(f.cache);
    assert_int_equal(rc_cache_new(&f.cache, dir, &err), RC_OK);
    pass(&f, &res);
    assert_int_equal(res.skipped, 1);
    assert_int_equal(res.nparsed, 0);

    /* damaged or hostile memo files: ignored, the pass does its work */
    {
        static const char *bad[] = {
            "",
            "garbage\n",
            "rightplace-pass-state 1\nkey 0\n",
            "rightplace-pass-state 1\nkey aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\ncommit "
            "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\nsource "
            "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\ndeploy -\nquiet 1\nerrors 99999999\n",
            "rightplace-pass-state 1\nkey aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\ncommit "
            "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\nsource "
            "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\ndeploy -\nquiet 1\nerrors 1\na%0 b\nkept "
            "0\nend\n",
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
            th_write_file(dir, "pass-state", bad[i], (size_t)-1);
            rc_cache_free(f.cache);
            assert_int_equal(rc_cache_new(&f.cache, dir, &err), RC_OK);
            assert_string_equal(rc_cache_memo(f.cache)->key, "");
        }
    }
    pass(&f, &res);
    /* the work done again: the files' parses come from the parse cache file, which is not
     * the memo */
    assert_int_equal(res.nparsed, 0);
    assert_int_equal(res.nparse_cached, EXAMPLE_FILES);
    fx_close(&f);
    th_rm_rf(dir);
    free(dir);
}

/* The memo of a pass with 120,000 broken files, each kept at its last good version (a 10 MB
 * file, more errors than the memo once read back), is read back whole by the next process:
 * its quick exit does not depend on how many files are broken. */
static void test_rc_pass__memo_of_many_broken_files_reads_back(void **state)
{
    enum { N = 120000 };
    char *dir = th_tmpdir("state");
    struct rc_cache *c = NULL;
    struct rc_err err = RC_ERR_INIT;
    struct rc_memo m;
    const struct rc_memo *back;
    struct rd_file_error *errors = calloc(N, sizeof(*errors));
    struct rc_memo_kept *kept = calloc(N, sizeof(*kept));
    char(*paths)[32] = calloc(N, sizeof(*paths));
    char(*msgs)[96] = calloc(N, sizeof(*msgs));
    (void)state;

    assert_non_null(errors);
    assert_non_null(kept);
    assert_non_null(paths);
    assert_non_null(msgs);
    memset(&m, 0, sizeof(m));
    memset(m.key, 'a', 40);
    memset(m.commit, 'b', 40);
    memset(m.source, 'c', 40);
    memset(m.deploy, 'd', 40);
    m.quiet = 1;
    for (size_t i = 0; i < N; i++) {
        snprintf(paths[i], sizeof(paths[i]), "cms/b%06zu.yaml", i);
        snprintf(msgs[i], sizeof(msgs[i]),
                 "%s:4:1: found a tab character that violates indentation", paths[i]);
        errors[i].path = paths[i];
        errors[i].msg = msgs[i];
        kept[i].path = paths[i];
        memset(kept[i].id, '0' + (int)(i % 10), 40);
    }
    m.nerrors = N;
    m.errors = errors;
    m.nkept = N;
    m.kept = kept;
    assert_int_equal(rc_cache_new(&c, dir, &err), RC_OK);
    assert_int_equal(rc_cache_set_memo(c, &m, &err), RC_OK);
    rc_cache_free(c);
    assert_int_equal(rc_cache_new(&c, dir, &err), RC_OK);
    back = rc_cache_memo(c);
    assert_string_equal(back->key, m.key);
    assert_int_equal(back->quiet, 1);
    assert_int_equal(back->nerrors, N);
    assert_int_equal(back->nkept, N);
    for (size_t i = 0; i < N; i++) {
        assert_string_equal(back->errors[i].path, paths[i]);
        assert_string_equal(back->errors[i].msg, msgs[i]);
        assert_string_equal(back->kept[i].path, paths[i]);
        assert_memory_equal(back->kept[i].id, kept[i].id, 41);
    }
    rc_cache_free(c);
    free(errors);
    free(kept);
    free(paths);
    free(msgs);
    th_rm_rf(dir);
    free(dir);
}

/* A broken file is reported by every pass, the skipped ones too. */
static void test_rc_pass__noop_reports_broken_files(void **state)
{
    struct fx f;
    struct rc_pass_result res;
    (void)state;

    fx_open(&f, NULL);
    pass(&f, &res);
    free(th_git_commit_files(f.repo, "oops", "fill-and-spill/rayjob-rayjob1.yaml",
                             "apiVersion: ray.io/v1\nkind: RayJob\nmetadata:\n\tname: x\n", NULL));
    pass(&f, &res);
    assert_int_equal(res.nfile_errors, 1);
    pass(&f, &res);
    assert_int_equal(res.skipped, 1);
    assert_int_equal(res.nparsed, 0);
    assert_int_equal(res.nfile_errors, 1);
    assert_string_equal(res.file_errors[0].path, "fill-and-spill/rayjob-rayjob1.yaml");
    assert_non_null(strstr(res.file_errors[0].msg, "rayjob-rayjob1.yaml:4"));
    fx_close(&f);
}

/* A file over the per-file limit is refused alone, named, without being read; the source as a
 * whole has no fixed cap (100 MB here, over the old 64 MiB). */
static void test_rc_pass__huge_file_refused_alone(void **state)
{
    struct fx f;
    struct rc_pass_result res;
    size_t big = 100u << 20;
    char *data = malloc(big + 1);
    (void)state;

    assert_non_null(data);
    for (size_t i = 0; i < big; i += 64)
        memcpy(data + i, "# padding padding padding padding padding padding padding paddi\n", 64);
    data[big] = '\0';
    fx_open(&f, NULL);
    th_write_file(f.repo, "zz/huge.yaml", data, big);
    free(data);
    free(th_git_ok(f.repo, "add", "-A", NULL));
    free(th_git_ok(f.repo, "commit", "-q", "-m", "huge", NULL));
    pass(&f, &res);
    assert_int_equal(res.committed, 1);
    assert_true(res.placed > 0);
    assert_int_equal(res.nfile_errors, 1);
    assert_string_equal(res.file_errors[0].path, "zz/huge.yaml");
    assert_non_null(strstr(res.file_errors[0].msg, "zz/huge.yaml: file of 104857600 bytes"));
    assert_int_equal(res.nparsed, EXAMPLE_FILES);
    fx_close(&f);
}

/* The state of the unit holding object `key`; -1 when no decision names it. */
static int state_of(const struct rc_pass_result *res, const char *key)
{
    for (size_t i = 0; i < res->result->ndecisions; i++) {
        const struct pl_decision *d = &res->result->decisions[i];
        for (size_t k = 0; k < d->nobjects; k++) {
            if (!strcmp(d->object_keys[k], key))
                return (int)d->state;
        }
    }
    return -1;
}

static const char *error_for(const struct rc_pass_result *res, const char *path)
{
    for (size_t i = 0; i < res->nfile_errors; i++) {
        if (!strcmp(res->file_errors[i].path, path))
            return res->file_errors[i].msg;
    }
    return NULL;
}

/* A workload the example fleet places (rayservice-development-policy -> static-cluster). */
static char *dev_workload(const char *api, const char *kind, const char *name, const char *extra)
{
    char buf[4096];

    snprintf(buf, sizeof(buf),
             "apiVersion: %s\nkind: %s\nmetadata:\n  name: %s\n  namespace: development\n"
             "  labels: {app.kubernetes.io/instance: rayservice}\n%s",
             api, kind, name, extra);
    return strdup(buf);
}

#define DEPLOY_SPEC(requests)                                                                      \
    "spec:\n  replicas: 1\n  template:\n    spec:\n      containers:\n      - name: w\n"           \
    "        image: nginx\n        resources:\n          requests: " requests "\n"

/* A commit that changes one file parses that file only: the rest comes from the cache. */
static void test_rc_pass__one_change_parses_one_file(void **state)
{
    struct fx f;
    struct rc_pass_result res;
    char *web = dev_workload("apps/v1", "Deployment", "web", DEPLOY_SPEC("{cpu: 100m}"));
    (void)state;

    fx_open(&f, NULL);
    pass(&f, &res);
    assert_int_equal(res.nparsed, EXAMPLE_FILES);
    free(th_git_commit_files(f.repo, "web", "right-cluster/web.yaml", web, NULL));
    pass(&f, &res);
    assert_int_equal(res.skipped, 0);
    assert_int_equal(res.nparsed, 1);
    assert_int_equal(res.committed, 1);
    assert_int_equal(state_of(&res, "development/Deployment/web"), PL_STATE_PLACED);
    /* an edit of one existing file */
    free(th_git_commit_files(f.repo, "ns label", "infra/namespace-development.yaml",
                             "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: development\n"
                             "  labels: {team: web}\n",
                             NULL));
    pass(&f, &res);
    assert_int_equal(res.nparsed, 1);
    assert_int_equal(state_of(&res, "development/Deployment/web"), PL_STATE_PLACED);
    free(web);
    fx_close(&f);
}

/* A new process after a commit that breaks several files parses their broken versions and no
 * other: the versions it keeps in their place were parsed by an earlier process and are taken
 * from the state directory's parse cache (not counted against the budget), in the first pass
 * after the break and in the ones after it, which take the broken versions from it too (as
 * their errors). */
static void test_rc_pass__kept_versions_come_from_the_parse_cache(void **state)
{
    static const char bad[] = "kind: RayJob\nmetadata:\n\tname: x\n";
    char *dir = th_tmpdir("rc-pass-state");
    struct rc_err err = RC_ERR_INIT;
    struct fx f;
    struct rc_pass_result res;
    (void)state;

    fx_open(&f, dir);
    pass(&f, &res);
    assert_int_equal(res.nparsed, EXAMPLE_FILES);
    free(th_git_commit_files(f.repo, "break three", "fill-and-spill/rayjob-rayjob1.yaml", bad,
                             "fill-and-spill/rayjob-rayjob2.yaml", bad,
                             "right-cluster/rayservice-production.yaml", bad, NULL));
    rc_cache_free(f.cache);
    assert_int_equal(rc_cache_new(&f.cache, dir, &err), RC_OK);
    pass(&f, &res);
    assert_int_equal(res.nfile_errors, 3);
    assert_int_equal(res.nparsed, 3);
    assert_int_equal(state_of(&res, "rayjob1/RayJob/rayjob-train"), PL_STATE_PLACED);
    /* and in every new process while they stay broken, though the state directory was made
     * after the break: the pass saves the versions it kept, not only its own files */
    th_rm_rf(dir);
    assert_int_equal(mkdir(dir, 0700), 0);
    free(th_git_commit_files(f.repo, "y", "c/y.yaml",
                             "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cy, namespace: "
                             "development}\n",
                             NULL));
    rc_cache_free(f.cache);
    assert_int_equal(rc_cache_new(&f.cache, dir, &err), RC_OK);
    pass(&f, &res);
    assert_int_equal(res.nfile_errors, 3);
    free(th_git_commit_files(f.repo, "z", "c/z.yaml",
                             "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cz, namespace: "
                             "development}\n",
                             NULL));
    rc_cache_free(f.cache);
    assert_int_equal(rc_cache_new(&f.cache, dir, &err), RC_OK);
    pass(&f, &res);
    assert_int_equal(res.nfile_errors, 3);
    assert_int_equal(res.nparsed, 1); /* c/z.yaml: the broken ones are taken as their errors */
    assert_int_equal(state_of(&res, "rayjob1/RayJob/rayjob-train"), PL_STATE_PLACED);
    fx_close(&f);
    th_rm_rf(dir);
    free(dir);
}

/* Two objects written to one output path (clusters/<c>/development/configmap.shared.yaml):
 * the one placed first keeps it, the newcomer is refused naming both files, and nothing else
 * is held up. */
static void test_rc_pass__colliding_output_paths_block_only_those_objects(void **state)
{
    struct fx f;
    struct rc_pass_result res;
    char *cm = dev_workload("v1", "ConfigMap", "shared", "data: {a: '1'}\n");
    char *evil = dev_workload("evil.example.com/v1", "Configmap", "shared", "data: {a: '2'}\n");
    char *web = dev_workload("apps/v1", "Deployment", "web", DEPLOY_SPEC("{cpu: 100m}"));
    const char *m;
    (void)state;

    fx_open(&f, NULL);
    free(th_git_commit_files(f.repo, "cm", "right-cluster/shared.yaml", cm, NULL));
    pass(&f, &res);
    assert_int_equal(res.nfile_errors, 0);
    assert_int_equal(state_of(&res, "development/ConfigMap/shared"), PL_STATE_PLACED);
    free(th_git_commit_files(f.repo, "evil", "aaa/evil.yaml", evil, "right-cluster/web.yaml", web,
                             NULL));
    pass(&f, &res);
    assert_int_equal(res.committed, 1);
    assert_int_equal(res.nfile_errors, 1);
    m = error_for(&res, "aaa/evil.yaml");
    assert_non_null(m);
    assert_non_null(strstr(m, "right-cluster/shared.yaml"));
    assert_non_null(strstr(m, "development/configmap.shared"));
    assert_int_equal(state_of(&res, "development/ConfigMap/shared"), PL_STATE_PLACED);
    assert_int_equal(state_of(&res, "development/Configmap/shared"), -1);
    assert_int_equal(state_of(&res, "development/Deployment/web"), PL_STATE_PLACED);
    free(cm);
    free(evil);
    free(web);
    fx_close(&f);
}

/* A file naming 13 made-up extended resources fails alone; files that use a real one (and
 * read after it) still load. */
static void test_rc_pass__resource_names_limited_per_file(void **state)
{
    struct fx f;
    struct rc_pass_result res;
    char *greedy = dev_workload(
        "apps/v1", "Deployment", "greedy",
        DEPLOY_SPEC("{a.example/r1: 1, a.example/r2: 1, a.example/r3: 1, a.example/r4: 1, "
                    "a.example/r5: 1, a.example/r6: 1, a.example/r7: 1, a.example/r8: 1, "
                    "a.example/r9: 1, a.example/r10: 1, a.example/r11: 1, a.example/r12: 1, "
                    "a.example/r13: 1}"));
    char *gpu = dev_workload("apps/v1", "Deployment", "gpu",
                             DEPLOY_SPEC("{cpu: 100m, example.com/fpga: 1}"));
    const char *m;
    (void)state;

    fx_open(&f, NULL);
    pass(&f, &res);
    free(th_git_commit_files(f.repo, "greedy", "aaa/greedy.yaml", greedy, "zzz/gpu.yaml", gpu,
                             NULL));
    pass(&f, &res);
    assert_int_equal(res.nfile_errors, 1);
    m = error_for(&res, "aaa/greedy.yaml");
    assert_non_null(m);
    assert_non_null(strstr(m, "extended resources"));
    assert_int_equal(state_of(&res, "development/Deployment/greedy"), -1);
    /* the other file loads (no cluster offers an fpga: it is a decision, not an error) */
    assert_true(state_of(&res, "development/Deployment/gpu") >= 0);
    assert_int_equal(state_of(&res, "rayjob1/RayJob/rayjob-train"), PL_STATE_PLACED);
    free(greedy);
    free(gpu);
    fx_close(&f);
}

/* Files whose aliases would expand to a big tree fail alone, with a message, before the
 * tree is built; the rest is placed. */
static void test_rc_pass__alias_bombs_fail_alone(void **state)
{
    static const char bomb[] = "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
                               "b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
                               "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\n"
                               "d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
                               "e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\n"
                               "f: &f [*e, *e, *e, *e, *e, *e]\n";
    struct fx f;
    struct rc_pass_result res;
    char *web = dev_workload("apps/v1", "Deployment", "web", DEPLOY_SPEC("{cpu: 100m}"));
    (void)state;

    fx_open(&f, NULL);
    for (int i = 0; i < 8; i++) {
        char name[64];
        snprintf(name, sizeof(name), "bombs/b%d.yaml", i);
        th_write_file(f.repo, name, bomb, (size_t)-1);
    }
    th_write_file(f.repo, "right-cluster/web.yaml", web, (size_t)-1);
    free(th_git_ok(f.repo, "add", "-A", NULL));
    free(th_git_ok(f.repo, "commit", "-q", "-m", "bombs", NULL));
    pass(&f, &res);
    assert_int_equal(res.nfile_errors, 8);
    for (size_t i = 0; i < res.nfile_errors; i++)
        assert_non_null(strstr(res.file_errors[i].msg, "excessive aliasing"));
    assert_int_equal(state_of(&res, "development/Deployment/web"), PL_STATE_PLACED);
    free(web);
    fx_close(&f);
}

/* A commit on the deploy branch that rightplace did not make: the head's tree with the file at
 * `path` holding `data`, or removed when data is NULL (its id in *commit when commit is not
 * NULL). */
static void deploy_hand_edit(struct fx *f, const char *path, const char *data, char *commit)
{
    struct rc_err err = RC_ERR_INIT;
    struct rc_git_blob *b = NULL;
    struct rc_git_file *files;
    size_t n = 0, k = 0;
    char head[41], tree[41], id[41];

    assert_int_equal(rc_git_resolve(head, f->g, "refs/heads/deploy", &err), RC_OK);
    assert_int_equal(rc_git_read_tree(&b, &n, f->g, head, "", &f->a, &err), RC_OK);
    files = rc_arena_calloc(&f->a, n + 1, sizeof(*files));
    for (size_t i = 0; i < n; i++) {
        if (!strcmp(b[i].path, path))
            continue;
        files[k].path = b[i].path;
        files[k].data = b[i].data;
        files[k++].len = b[i].len;
    }
    if (data) {
        files[k].path = path;
        files[k].data = data;
        files[k++].len = strlen(data);
    }
    assert_int_equal(rc_git_build_tree(tree, f->g, head, files, k, &err), RC_OK);
    assert_int_equal(rc_git_commit(id, f->g, tree, head, "by hand", 1700000000, &err), RC_OK);
    assert_int_equal(rc_git_update_ref(f->g, "refs/heads/deploy", id, head, NULL, &err), RC_OK);
    if (commit)
        memcpy(commit, id, 41);
}

/* Rewrite the deploy head's .rightplace/source to name `source` as the commit it was made from
 * (what many passes committing while a file stayed broken would have left). */
static void record_source_is(struct fx *f, const char *source)
{
    char text[42];

    snprintf(text, sizeof(text), "%s\n", source);
    deploy_hand_edit(f, RD_SOURCE_FILE, text, NULL);
}

/* A file broken for 1,001 of its own versions: the deploy tree names the version it keeps, so a
 * new process with no state keeps it too. Without that list (a tree an older rightplace
 * wrote), the walk for its last good version stops after 64 and takes the version the last
 * pass kept. Everything else is placed either way. */
static void test_rc_pass__long_broken_history_blocks_nothing(void **state)
{
    struct fx f;
    struct rc_pass_result res;
    struct rc_err err = RC_ERR_INIT;
    const char *path = "fill-and-spill/rayjob-rayjob1.yaml";
    char tip[41], broken_tip[41] = "";
    char *web = dev_workload("apps/v1", "Deployment", "web", DEPLOY_SPEC("{cpu: 100m}"));
    char *web2 = dev_workload("apps/v1", "Deployment", "web2", DEPLOY_SPEC("{cpu: 100m}"));
    (void)state;

    fx_open(&f, NULL);
    pass(&f, &res);
    free(th_git_commit_files(f.repo, "oops", path, "kind: RayJob\nmetadata:\n\tname: x\n", NULL));
    pass(&f, &res);
    assert_int_equal(res.nfile_errors, 1);
    assert_int_equal(state_of(&res, "rayjob1/RayJob/rayjob-train"), PL_STATE_PLACED);

    /* 1,001 more broken versions, then a new workload elsewhere */
    assert_int_equal(rc_git_resolve(tip, f.g, "main", &err), RC_OK);
    for (int i = 0; i <= 1001; i++) {
        char text[128], tree[41], commit[41];
        struct rc_git_file file;
        memset(&file, 0, sizeof(file));
        snprintf(text, sizeof(text), "kind: RayJob\nmetadata:\n\tname: x%d\n", i);
        file.path = i == 1001 ? "right-cluster/web.yaml" : path;
        file.data = i == 1001 ? web : text;
        file.len = strlen(file.data);
        assert_int_equal(rc_git_build_tree(tree, f.g, tip, &file, 1, &err), RC_OK);
        assert_int_equal(rc_git_commit(commit, f.g, tree, tip, "still broken", 1700000000, &err),
                         RC_OK);
        memcpy(tip, commit, 41);
        if (i == 1000)
            memcpy(broken_tip, commit, 41);
    }
    assert_int_equal(rc_git_update_ref(f.g, "refs/heads/main", tip, NULL, NULL, &err) == RC_OK ||
                         err.code == RC_ECONFLICT,
                     1);
    {
        char cur[41];
        struct rc_err e2 = RC_ERR_INIT;
        assert_int_equal(rc_git_resolve(cur, f.g, "main", &e2), RC_OK);
        if (strcmp(cur, tip))
            assert_int_equal(rc_git_update_ref(f.g, "refs/heads/main", tip, cur, NULL, &e2), RC_OK);
    }
    record_source_is(&f, broken_tip);
    fx_new_cache(&f);
    pass(&f, &res);
    assert_int_equal(res.nfile_errors, 1);
    assert_string_equal(res.file_errors[0].path, path);
    assert_int_equal(state_of(&res, "rayjob1/RayJob/rayjob-train"), PL_STATE_PLACED);
    assert_int_equal(state_of(&res, "development/Deployment/web"), PL_STATE_PLACED);

    deploy_hand_edit(&f, RD_KEPT_FILE, NULL, NULL);
    free(th_git_commit_files(f.repo, "web2", "right-cluster/web2.yaml", web2, NULL));
    pass(&f, &res);
    assert_int_equal(res.nfile_errors, 1);
    assert_int_equal(state_of(&res, "rayjob1/RayJob/rayjob-train"), PL_STATE_PLACED);
    assert_int_equal(state_of(&res, "development/Deployment/web2"), PL_STATE_PLACED);
    free(web);
    free(web2);
    fx_close(&f);
}

/* The memory one pass may hold is the operator's to raise: a file past it is refused alone,
 * with an error that names the flag and the variable; the rest is placed. */
static void test_rc_pass__source_budget_refuses_the_file_past_it(void **state)
{
    struct fx f;
    struct rc_pass_options o = RC_PASS_OPTIONS_INIT;
    struct rc_pass_result res;
    struct rc_err err = RC_ERR_INIT;
    size_t n = 2u << 20;
    char *big = malloc(n + 200);
    const char *m;
    (void)state;

    assert_non_null(big);
    snprintf(big, 200,
             "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: big\n"
             "  namespace: development\ndata:\n  blob: ");
    {
        size_t k = strlen(big);
        memset(big + k, 'x', n);
        big[k + n] = '\n';
        big[k + n + 1] = '\0';
    }
    fx_open(&f, NULL);
    th_write_file(f.repo, "zz/big.yaml", big, (size_t)-1);
    free(big);
    free(th_git_ok(f.repo, "add", "-A", NULL));
    free(th_git_ok(f.repo, "commit", "-q", "-m", "big", NULL));
    o.apply = 0;
    o.cache = f.cache;
    o.max_source_bytes = 1u << 20;
    assert_int_equal(rc_pass_run(&res, f.g, &o, &f.a, &err), RC_OK);
    assert_int_equal(res.nfile_errors, 1);
    m = error_for(&res, "zz/big.yaml");
    assert_non_null(m);
    assert_non_null(strstr(m, "--max-source-mib"));
    assert_non_null(strstr(m, "RIGHTPLACE_MAX_SOURCE_MIB"));
    assert_int_equal(state_of(&res, "rayjob1/RayJob/rayjob-train"), PL_STATE_PLACED);
    /* raised: it loads */
    o.max_source_bytes = 64u << 20;
    o.force = 1;
    assert_int_equal(rc_pass_run(&res, f.g, &o, &f.a, &err), RC_OK);
    assert_int_equal(res.nfile_errors, 0);
    assert_true(state_of(&res, "development/ConfigMap/big") >= 0);
    fx_close(&f);
}

/* Past the budget, the files that take most memory parsed are refused, not the files that come
 * last by path: a big file early in path order cannot push the rest of the fleet out. Which
 * files go is decided by the files alone: a new process, which takes them from the parse
 * cache file, refuses the same one. */
static void test_rc_pass__source_budget_refuses_the_heaviest_not_the_last(void **state)
{
    char *dir = th_tmpdir("state");
    struct fx f;
    struct rc_pass_options o = RC_PASS_OPTIONS_INIT;
    struct rc_pass_result res;
    struct rc_err err = RC_ERR_INIT;
    size_t n = 256u << 10, all;
    char *big = malloc(n + 200), *tree;
    const char *m;
    (void)state;

    assert_non_null(big);
    snprintf(big, 200,
             "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: big\n"
             "  namespace: development\n"
             "  labels: {app.kubernetes.io/instance: rayservice}\ndata:\n  blob: ");
    {
        size_t k = strlen(big);
        memset(big + k, 'x', n);
        big[k + n] = '\n';
        big[k + n + 1] = '\0';
    }
    fx_open(&f, dir);
    th_write_file(f.repo, "aa/big.yaml", big, (size_t)-1);
    free(big);
    free(th_git_ok(f.repo, "add", "-A", NULL));
    free(th_git_ok(f.repo, "commit", "-q", "-m", "big", NULL));
    o.apply = 0;
    o.cache = f.cache;
    assert_int_equal(rc_pass_run(&res, f.g, &o, &f.a, &err), RC_OK);
    assert_int_equal(res.nfile_errors, 0);
    assert_int_equal(state_of(&res, "development/ConfigMap/big"), PL_STATE_PLACED);
    /* what the whole source takes parsed, less one byte: one file must go */
    all = rd_cache_bytes(rc_cache_parsed(f.cache));
    for (int proc = 0; proc < 2; proc++) {
        if (proc == 1) { /* a new process: the files come from the parse cache file */
            rc_cache_free(f.cache);
            assert_int_equal(rc_cache_new(&f.cache, dir, &err), RC_OK);
            o.cache = f.cache;
        }
        o.max_source_bytes = all - 1;
        o.force = 1;
        if (rc_pass_run(&res, f.g, &o, &f.a, &err) != RC_OK)
            fail_msg("pass %d: %s", proc, err.msg);
        if (proc == 1)
            assert_true(res.nparse_cached > 0);
        assert_int_equal(res.nfile_errors, 1);
        m = error_for(&res, "aa/big.yaml");
        assert_non_null(m);
        assert_non_null(strstr(m, "among its largest"));
        assert_non_null(strstr(m, "--max-source-mib"));
        /* the rest of the fleet, the last file by path included, is placed */
        assert_int_equal(state_of(&res, "production/RayService/text-summarizer"), PL_STATE_PLACED);
        assert_int_equal(state_of(&res, "rayjob1/RayJob/rayjob-train"), PL_STATE_PLACED);
        /* the refused file's last good version is itself: loaded apart from the budget,
         * its objects keep their placements */
        assert_int_equal(state_of(&res, "development/ConfigMap/big"), PL_STATE_PLACED);
        tree = th_git_ok(f.repo, "ls-tree", "-r", "--name-only", "deploy", NULL);
        assert_non_null(strstr(tree, "/configmap.big.yaml"));
        free(tree);
        /* replay, under the same budget, refuses the same file: it loads as a pass does,
         * whatever cache the caller has (none here, as the replay command) */
        {
            struct rc_pass_options ro = RC_PASS_OPTIONS_INIT;
            struct rc_replay_result rr;
            ro.apply = 0;
            ro.bounded_verdicts = 1;
            ro.last_pass = 1;
            ro.max_source_bytes = o.max_source_bytes;
            if (rc_replay(&rr, f.g, "refs/heads/deploy", &ro, &f.a, &err) != RC_OK)
                fail_msg("replay %d: %s", proc, err.msg);
            if (!rr.match)
                fail_msg("replay %d differs at %zu paths, first %s", proc, rr.nmismatch,
                         rr.nmismatch ? rr.mismatch[0].path : "");
        }
    }
    /* removed from the source: its unit (one object, no policy) is removed */
    free(th_git_ok(f.repo, "rm", "-q", "aa/big.yaml", NULL));
    free(th_git_ok(f.repo, "add", "-A", NULL));
    free(th_git_ok(f.repo, "commit", "-q", "-m", "no big", NULL));
    o.max_source_bytes = 0;
    assert_int_equal(rc_pass_run(&res, f.g, &o, &f.a, &err), RC_OK);
    assert_int_equal(res.nfile_errors, 0);
    fx_close(&f);
    th_rm_rf(dir);
    free(dir);
}

/* A unit of one object that no policy governs (a ConfigMap of its own) whose file is removed:
 * the removal is a decision with no live objects, not one to read them from. */
static void test_rc_pass__lone_object_removed(void **state)
{
    struct fx f;
    struct rc_pass_result res;
    (void)state;

    fx_open(&f, NULL);
    th_write_file(f.repo, "extra/cm.yaml",
                  "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: lone\n"
                  "  namespace: development\ndata:\n  a: b\n",
                  (size_t)-1);
    free(th_git_ok(f.repo, "add", "-A", NULL));
    free(th_git_ok(f.repo, "commit", "-q", "-m", "lone", NULL));
    pass(&f, &res);
    assert_true(state_of(&res, "development/ConfigMap/lone") >= 0);
    free(th_git_ok(f.repo, "rm", "-q", "extra/cm.yaml", NULL));
    free(th_git_ok(f.repo, "commit", "-q", "-m", "no lone", NULL));
    pass(&f, &res);
    assert_int_equal(res.nfile_errors, 0);
    {
        int removed = 0;
        for (size_t i = 0; i < res.result->ndecisions; i++) {
            const struct pl_decision *d = &res.result->decisions[i];
            removed |= d->nobjects == 1 &&
                       !strcmp(d->object_keys[0], "development/ConfigMap/lone") &&
                       d->change == PL_CHANGE_REMOVED;
        }
        assert_true(removed);
    }
    assert_int_equal(state_of(&res, "rayjob1/RayJob/rayjob-train"), PL_STATE_PLACED);
    fx_close(&f);
}

/* A pass that refuses (RC_EINVALID, its message naming `why`) and leaves the deploy head at
 * `head`. */
static void pass_refused(struct fx *f, const char *why, const char *head)
{
    struct rc_pass_options o = RC_PASS_OPTIONS_INIT;
    struct rc_pass_result res;
    struct rc_err err = RC_ERR_INIT;
    char *now;

    o.apply = 0;
    o.cache = f->cache;
    assert_int_equal(rc_pass_run(&res, f->g, &o, &f->a, &err), RC_EINVALID);
    th_assert_contains(err.msg, why);
    now = th_git_rev(f->repo, "deploy");
    assert_string_equal(now, head);
    free(now);
}

/* a/x.yaml holds `text` (ConfigMap x), placed by a pass; then b/y.yaml copies it, and the
 * pass after refuses both files and commits that. */
static void place_then_copy(struct fx *f, const char *text)
{
    struct rc_pass_result res;

    free(th_git_commit_files(f->repo, "x", "a/x.yaml", text, NULL));
    pass(f, &res);
    assert_int_equal(state_of(&res, "development/ConfigMap/x"), PL_STATE_PLACED);
    free(th_git_commit_files(f->repo, "a copy of x", "b/y.yaml", text, NULL));
    pass(f, &res);
    assert_int_equal(res.nfile_errors, 2);
    assert_int_equal(res.committed, 1);
    assert_int_equal(state_of(&res, "development/ConfigMap/x"), PL_STATE_PLACED);
}

/* A file that copies an object another file holds: both files are refused and the object
 * keeps its placement, in the pass that commits that and in every later one. Once the copy
 * has been committed it loads alone at that commit, yet nothing of it was loaded there: the
 * deploy tree's RD_KEPT_FILE says so, and later passes keep the original alone. Before it,
 * a later pass kept both versions and had to stop (found by test_rc_walk). */
static void test_rc_pass__duplicate_keeps_placement_in_later_passes(void **state)
{
    struct fx f;
    struct rc_pass_result res;
    char *cm = dev_workload("v1", "ConfigMap", "x", "data: {a: '1'}\n");
    char *other = dev_workload("v1", "ConfigMap", "other", "data: {a: '1'}\n");
    char *x_id, *kept, *tree, want[128];
    (void)state;

    fx_open(&f, NULL);
    place_then_copy(&f, cm);
    x_id = th_git_ok(f.repo, "rev-parse", "main:a/x.yaml", NULL);
    x_id[40] = '\0';
    tree = th_git_ok(f.repo, "ls-tree", "-r", "--name-only", "deploy~1", NULL);
    assert_null(strstr(tree, RD_KEPT_FILE)); /* nothing broken: no such file */
    free(tree);
    kept = th_git_show(f.repo, "deploy", RD_KEPT_FILE);
    snprintf(want, sizeof(want), "%s a/x.yaml\n- b/y.yaml\n", x_id);
    th_assert_contains(kept, want);
    free(kept);

    /* later changes, in this process and in new ones: the original alone is kept */
    for (int round = 0; round < 3; round++) {
        char name[16], path[32], key[64], *text;
        snprintf(name, sizeof(name), "other%d", round);
        snprintf(path, sizeof(path), "c/%s.yaml", name);
        snprintf(key, sizeof(key), "development/ConfigMap/%s", name);
        text = dev_workload("v1", "ConfigMap", name, "data: {a: '1'}\n");
        if (round == 2)
            fx_new_cache(&f);
        free(th_git_commit_files(f.repo, name, path, text, NULL));
        pass(&f, &res);
        assert_int_equal(res.nfile_errors, 2);
        assert_int_equal(state_of(&res, "development/ConfigMap/x"), PL_STATE_PLACED);
        assert_int_equal(state_of(&res, key), PL_STATE_PLACED);
        kept = th_git_show(f.repo, "deploy", RD_KEPT_FILE);
        th_assert_contains(kept, want);
        free(kept);
        free(text);
    }
    tree = th_git_ok(f.repo, "ls-tree", "-r", "--name-only", "deploy", NULL);
    th_assert_contains(tree, "clusters/static-cluster/development/configmap.x.yaml");
    free(tree);

    /* the copy removed: the object is placed as before, the other one too, nothing kept */
    free(th_git_ok(f.repo, "rm", "-q", "b/y.yaml", NULL));
    free(th_git_ok(f.repo, "commit", "-q", "-m", "no copy", NULL));
    free(th_git_commit_files(f.repo, "other", "c/other.yaml", other, NULL));
    pass(&f, &res);
    assert_int_equal(res.nfile_errors, 0);
    assert_int_equal(state_of(&res, "development/ConfigMap/x"), PL_STATE_PLACED);
    assert_int_equal(state_of(&res, "development/ConfigMap/other"), PL_STATE_PLACED);
    tree = th_git_ok(f.repo, "ls-tree", "-r", "--name-only", "deploy", NULL);
    assert_null(strstr(tree, RD_KEPT_FILE));
    free(tree);
    free(x_id);
    free(cm);
    free(other);
    fx_close(&f);
}

/* A file kept at an older version while another file copies its object, changed meanwhile,
 * then whole again when the copy goes: its objects are rendered from what it says now. The
 * file itself did not change in that last commit, so a render that reused the deploy files of
 * units whose files did not change kept the old version's bytes (found by test_rc_walk). */
static void test_rc_pass__file_whole_again_renders_what_it_says_now(void **state)
{
    static const char path[] = "clusters/static-cluster/development/configmap.x.yaml";
    struct fx f;
    struct rc_pass_result res;
    char *v1 = dev_workload("v1", "ConfigMap", "x", "data: {a: 'one'}\n");
    char *v2 = dev_workload("v1", "ConfigMap", "x", "data: {a: 'two'}\n");
    char *z = dev_workload("v1", "ConfigMap", "z", "data: {a: 'z'}\n");
    char *text;
    (void)state;

    fx_open(&f, NULL);
    place_then_copy(&f, v1);
    free(th_git_commit_files(f.repo, "x changes while refused", "a/x.yaml", v2, NULL));
    pass(&f, &res);
    assert_int_equal(res.nfile_errors, 2);
    text = th_git_show(f.repo, "deploy", path);
    th_assert_contains(text, "a: one"); /* the version kept */
    free(text);
    /* a commit of the deploy branch made from a source where x is as it is now */
    free(th_git_commit_files(f.repo, "z", "c/z.yaml", z, NULL));
    pass(&f, &res);
    assert_int_equal(res.committed, 1);
    free(th_git_ok(f.repo, "rm", "-q", "b/y.yaml", NULL));
    free(th_git_ok(f.repo, "commit", "-q", "-m", "no copy", NULL));
    pass(&f, &res);
    assert_int_equal(res.nfile_errors, 0);
    assert_int_equal(res.committed, 1);
    text = th_git_show(f.repo, "deploy", path);
    th_assert_contains(text, "a: two");
    free(text);
    free(v1);
    free(v2);
    free(z);
    fx_close(&f);
}

/* The example repository with no policy placing its Namespaces (they follow their workloads,
 * written from the source with their labels), placed: ns_path, a cluster's Namespace file,
 * holds the source's label. */
static void namespaces_follow_workloads(struct fx *f, struct rc_pass_result *res,
                                        const char *ns_path)
{
    char *ns;

    fx_open(f, NULL);
    free(th_git_ok(f->repo, "rm", "-q", "infra/ns-policy.yaml", NULL));
    free(th_git_ok(f->repo, "commit", "-q", "-m", "namespaces follow their workloads", NULL));
    pass(f, res);
    ns = th_git_show(f->repo, "deploy", ns_path);
    th_assert_contains(ns, "app: rayclustersetup");
    free(ns);
}

/* A renamed file that does not load (here it copies an object of another file) may hold a
 * Namespace the deploy branch took from the source: while it has no earlier version, the
 * cluster directories do not trade that Namespace for a minimal one (its labels gone). Found
 * by test_rc_walk (seed 402). */
static void test_rc_pass__renamed_broken_file_keeps_its_namespace(void **state)
{
    static const char ns_path[] = "clusters/dynamic-cluster/_cluster/namespace.production.yaml";
    struct fx f;
    struct rc_pass_result res;
    char *ns, *head, *dev, *dup;
    (void)state;

    namespaces_follow_workloads(&f, &res, ns_path);
    head = th_git_rev(f.repo, "deploy");
    free(th_git_ok(f.repo, "mv", "infra/namespace-production.yaml", "moved.yaml", NULL));
    dev = th_git_show(f.repo, "HEAD", "infra/namespace-development.yaml");
    dup = rc_arena_printf(
        &f.a, "%s---\napiVersion: v1\nkind: Namespace\nmetadata: {name: production}\n", dev);
    free(th_git_commit_files(f.repo, "moved, and a copy of it", "infra/namespace-development.yaml",
                             dup, NULL));
    pass_refused(&f, "'clusters/dynamic-cluster/_cluster/namespace.production.yaml' would", head);
    ns = th_git_show(f.repo, "deploy", ns_path);
    th_assert_contains(ns, "app: rayclustersetup");
    free(ns);
    free(dev);
    free(head);
    fx_close(&f);
}

/* A .rightplace/kept someone else wrote is not taken: here it would keep another object's
 * YAML in place of a/x.yaml. The versions are looked for in history instead, as for a tree
 * without the file, where the committed copy clashes with the original: the pass refuses. */
static void test_rc_pass__kept_list_edited_by_hand_is_not_taken(void **state)
{
    struct fx f;
    char *cm = dev_workload("v1", "ConfigMap", "x", "data: {a: '1'}\n");
    char *evil = dev_workload("v1", "ConfigMap", "evil", "data: {a: '1'}\n");
    char *other = dev_workload("v1", "ConfigMap", "other", "data: {a: '1'}\n");
    char commit[41], list[160], *id, *now;
    (void)state;

    fx_open(&f, NULL);
    place_then_copy(&f, cm);

    /* a hand commit on the deploy branch: a/x.yaml "kept" at a blob of other YAML */
    th_write_file(f.repo, "evil.tmp", evil, strlen(evil));
    id = th_git_ok(f.repo, "hash-object", "-w", "evil.tmp", NULL);
    id[40] = '\0';
    snprintf(list, sizeof(list), "%s a/x.yaml\n- b/y.yaml\n", id);
    deploy_hand_edit(&f, RD_KEPT_FILE, list, commit);

    free(th_git_commit_files(f.repo, "other", "c/other.yaml", other, NULL));
    fx_new_cache(&f);
    pass_refused(&f, "duplicate object 'development/ConfigMap/x'", commit);
    now = th_git_ok(f.repo, "ls-tree", "-r", "--name-only", "deploy", NULL);
    assert_null(strstr(now, "configmap.evil.yaml"));
    free(now);
    free(id);
    free(cm);
    free(evil);
    free(other);
    fx_close(&f);
}

/* Replay takes the parent's list of kept versions as the pass did: not when someone else wrote
 * it. Here the hand edit says a broken file kept nothing; the pass walked to its last good
 * version instead, and so must the replay of the commit it made. */
static void test_rc_pass__replay_after_a_hand_edited_list(void **state)
{
    static const char path[] = "fill-and-spill/rayjob-rayjob1.yaml";
    struct fx f;
    struct rc_pass_result res;
    struct rc_replay_result rr;
    struct rc_pass_options o = RC_PASS_OPTIONS_INIT;
    struct rc_err err = RC_ERR_INIT;
    char *z = dev_workload("v1", "ConfigMap", "z", "data: {a: 'z'}\n");
    char list[256];
    (void)state;

    fx_open(&f, NULL);
    pass(&f, &res);
    free(th_git_commit_files(f.repo, "oops", path, "kind: RayJob\nmetadata:\n\tname: x\n", NULL));
    pass(&f, &res);
    assert_int_equal(res.nfile_errors, 1);
    snprintf(list, sizeof(list), "- %s\n", path);
    deploy_hand_edit(&f, RD_KEPT_FILE, list, NULL);
    free(th_git_commit_files(f.repo, "z", "c/z.yaml", z, NULL));
    fx_new_cache(&f);
    pass(&f, &res);
    assert_int_equal(res.committed, 1);
    assert_int_equal(state_of(&res, "rayjob1/RayJob/rayjob-train"), PL_STATE_PLACED);
    o.apply = 0;
    if (rc_replay(&rr, f.g, "refs/heads/deploy", &o, &f.a, &err) != RC_OK)
        fail_msg("replay: %s", err.msg);
    if (!rr.match)
        fail_msg("replay differs at %zu paths, first %s", rr.nmismatch,
                 rr.nmismatch ? rr.mismatch[0].path : "");
    free(z);
    fx_close(&f);
}

/* A pass of a new process (nothing of the earlier passes in memory) with options o, which must
 * commit. */
static void pass_committing(struct fx *f, struct rc_pass_result *res, struct rc_pass_options *o)
{
    struct rc_err err = RC_ERR_INIT;

    fx_new_cache(f);
    o->cache = f->cache;
    if (rc_pass_run(res, f->g, o, &f->a, &err) != RC_OK)
        fail_msg("pass: %s", err.msg);
    if (res->committed != 1)
        fail_msg("pass: no commit (placed %zu, %zu paths changed)", res->placed,
                 res->npaths_changed);
}

/* Replay writes the record in the layout of the commit it replays: in shards when the commit
 * has them, whatever the size at which this build starts shards; in one file when the commit
 * has one file, as a version before shards wrote it for a fleet of any size. */
static void replay_matches(struct fx *f, size_t inline_max)
{
    struct rc_pass_options o = RC_PASS_OPTIONS_INIT;
    struct rc_replay_result rr;
    struct rc_err err = RC_ERR_INIT;

    o.apply = 0;
    o.render.record_inline_max = inline_max;
    if (rc_replay(&rr, f->g, "refs/heads/deploy", &o, &f->a, &err) != RC_OK)
        fail_msg("replay: %s", err.msg);
    if (!rr.match)
        fail_msg("replay differs at %zu paths, first %s", rr.nmismatch,
                 rr.nmismatch ? rr.mismatch[0].path : "");
}

/* The record lists RD_RECORD_WARNINGS warnings and counts the rest; a commit made before that
 * bound lists them all, and replays to itself: replay lists as many as the commit does. */
static void test_rc_pass__replay_lists_the_commits_warnings(void **state)
{
    struct fx f;
    struct rc_pass_result res;
    struct rc_pass_options o = RC_PASS_OPTIONS_INIT;
    struct rc_err err = RC_ERR_INIT;
    size_t n = RD_RECORD_WARNINGS + 20;
    char *rec, *out;
    (void)state;

    fx_open(&f, NULL);
    for (size_t i = 0; i < n; i++) {
        char name[32], rel[64], *cm;
        snprintf(name, sizeof(name), "w%03zu", i);
        snprintf(rel, sizeof(rel), "warns/%s.yaml", name);
        cm = dev_workload("v1", "ConfigMap", name, "data:\n  a: '1'\n  a: '2'\n");
        th_write_file(f.repo, rel, cm, strlen(cm));
        free(cm);
    }
    free(th_git_ok(f.repo, "add", "-A", NULL));
    free(th_git_ok(f.repo, "commit", "-q", "-m", "duplicate keys", NULL));
    o.apply = 0;
    o.cache = f.cache;
    o.render.record_warnings = SIZE_MAX; /* as a version before the bound wrote it */
    if (rc_pass_run(&res, f.g, &o, &f.a, &err) != RC_OK)
        fail_msg("pass: %s", err.msg);
    assert_true(res.nwarnings >= n);
    rec = th_git_show(f.repo, "deploy", "placements.yaml");
    assert_true(th_count(rec, "duplicate key") >= (int)n);
    assert_null(strstr(rec, "warningsOmitted"));
    free(rec);
    replay_matches(&f, 0);
    o.render.record_warnings = 0;

    /* this version's next commit: the bound, and that replays too */
    free(th_git_commit_files(f.repo, "z", "c/z.yaml",
                             "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: z, namespace: "
                             "development}\n",
                             NULL));
    pass_committing(&f, &res, &o);
    rec = th_git_show(f.repo, "deploy", "placements.yaml");
    assert_int_equal(th_count(rec, "duplicate key"), RD_RECORD_WARNINGS);
    out = strstr(rec, "\nwarningsOmitted: ");
    assert_non_null(out);
    assert_int_equal(strtol(out + 18, NULL, 10), (long)res.nwarnings - RD_RECORD_WARNINGS);
    free(rec);
    replay_matches(&f, 0);
    fx_close(&f);
}

/* A commit that changes c/extra.yaml's ConfigMap (placed with the RayService) to data a, and
 * the pass that commits it. */
static void commit_extra(struct fx *f, struct rc_pass_result *res, struct rc_pass_options *o,
                         char a)
{
    char text[256], msg[16];

    snprintf(text, sizeof(text),
             "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: extra, labels: "
             "{app.kubernetes.io/instance: rayservice}, namespace: development}\n"
             "data: {a: '%c'}\n",
             a);
    snprintf(msg, sizeof(msg), "extra %c", a);
    free(th_git_commit_files(f->repo, msg, "c/extra.yaml", text, NULL));
    pass_committing(f, res, o);
}

/* capacity.yaml names no source commit, so a commit that changes neither the fleet nor a
 * decision keeps its blob; a commit whose snapshot names it (an older version's) replays to
 * itself, and the next commit writes the snapshot without it. */
static void test_rc_pass__snapshot_names_no_source(void **state)
{
    struct fx f;
    struct rc_pass_result res;
    struct rc_pass_options o = RC_PASS_OPTIONS_INIT;
    char *cap, *before, *after;
    (void)state;

    fx_open(&f, NULL);
    o.apply = 0;
    o.render.capacity_source = 1; /* as a version before this one wrote it */
    commit_extra(&f, &res, &o, '1');
    cap = th_git_show(f.repo, "deploy", ".rightplace/capacity.yaml");
    assert_non_null(strstr(cap, "\nsource: "));
    free(cap);
    replay_matches(&f, 0);

    /* this version's next commit drops the line, and replays */
    o.render.capacity_source = 0;
    commit_extra(&f, &res, &o, '2');
    cap = th_git_show(f.repo, "deploy", ".rightplace/capacity.yaml");
    assert_null(strstr(cap, "source:"));
    assert_non_null(strstr(cap, "\nclusters:"));
    free(cap);
    replay_matches(&f, 0);

    /* and one after it that changes an object alone keeps the snapshot's blob */
    before = th_git_ok(f.repo, "rev-parse", "deploy:.rightplace/capacity.yaml", NULL);
    commit_extra(&f, &res, &o, '3');
    after = th_git_ok(f.repo, "rev-parse", "deploy:.rightplace/capacity.yaml", NULL);
    assert_string_equal(before, after);
    free(before);
    free(after);
    replay_matches(&f, 0);
    fx_close(&f);
}

static void test_rc_pass__replay_writes_the_commits_layout(void **state)
{
    struct fx f;
    struct rc_pass_result res;
    struct rc_pass_options o = RC_PASS_OPTIONS_INIT;
    struct rc_err err = RC_ERR_INIT;
    char *rec;
    (void)state;

    fx_open(&f, NULL);
    o.apply = 0;
    o.cache = f.cache;
    o.render.record_inline_max = 1; /* the example's units in shards */
    if (rc_pass_run(&res, f.g, &o, &f.a, &err) != RC_OK)
        fail_msg("pass: %s", err.msg);
    rec = th_git_show(f.repo, "deploy", "placements.yaml");
    th_assert_contains(rec, "\nshards: ");
    free(rec);
    replay_matches(&f, 0); /* this build would write the example's record as one file */

    /* one file with more units than the inline size: as an older version wrote it */
    free(th_git_commit_files(f.repo, "z", "c/z.yaml",
                             "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: z, namespace: "
                             "rayjob1}\ndata: {a: b}\n",
                             NULL));
    o.render.record_shards = 1;
    pass_committing(&f, &res, &o);
    rec = th_git_show(f.repo, "deploy", "placements.yaml");
    assert_null(strstr(rec, "\nshards: "));
    free(rec);
    replay_matches(&f, 1); /* this build would write shards */
    fx_close(&f);
}

/* The same for a Namespace no policy places: it is no unit of the record, but the cluster
 * directories take it from the source (labels and all). Dropping both copies would change what
 * is deployed; the original alone is kept, in later passes too. */
static void test_rc_pass__duplicate_namespace_keeps_its_labels(void **state)
{
    static const char ns_path[] = "clusters/static-cluster/_cluster/namespace.rayjob1.yaml";
    struct fx f;
    struct rc_pass_result res;
    char *ns;
    (void)state;

    namespaces_follow_workloads(&f, &res, ns_path);
    free(th_git_commit_files(f.repo, "a copy of Namespace rayjob1", "infra/copy.yaml",
                             "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: rayjob1\n",
                             NULL));
    pass(&f, &res);
    assert_int_equal(res.nfile_errors, 2);
    free(th_git_commit_files(f.repo, "later", "infra/later.yaml",
                             "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: later\n"
                             "  namespace: development\n",
                             NULL));
    pass(&f, &res);
    assert_int_equal(res.nfile_errors, 2);
    assert_int_equal(res.committed, 1);
    ns = th_git_show(f.repo, "deploy", ns_path);
    th_assert_contains(ns, "app: rayclustersetup");
    free(ns);
    fx_close(&f);
}

/* A renamed file that does not load has no earlier version: while it is so nothing leaves the
 * deploy branch, not even one object of a unit that stays (a Namespace of ns-policy's unit,
 * which the other Namespaces keep). Found by test_rc_walk. */
static void test_rc_pass__renamed_broken_file_removes_no_object(void **state)
{
    static const char ns_path[] = "clusters/static-cluster/_cluster/namespace.production.yaml";
    struct fx f;
    struct rc_pass_result res;
    char *head, *tree;
    (void)state;

    fx_open(&f, NULL);
    pass(&f, &res);
    tree = th_git_ok(f.repo, "ls-tree", "-r", "--name-only", "deploy", NULL);
    th_assert_contains(tree, ns_path);
    free(tree);
    head = th_git_rev(f.repo, "deploy");
    free(th_git_ok(f.repo, "mv", "infra/namespace-production.yaml", "infra/ns-production.yaml",
                   NULL));
    free(th_git_commit_files(f.repo, "renamed, and broken", "infra/ns-production.yaml",
                             "apiVersion: v1\nkind: Namespace\nmetadata:\n\tname: production\n",
                             NULL));
    pass_refused(&f, "nothing is moved or removed", head);
    pass_refused(&f, ns_path, head);

    /* fixed: the Namespace is placed as before */
    free(th_git_commit_files(f.repo, "fixed", "infra/ns-production.yaml",
                             "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: production\n"
                             "  labels: {app: rayclustersetup}\n",
                             NULL));
    pass(&f, &res);
    assert_int_equal(res.nfile_errors, 0);
    tree = th_git_ok(f.repo, "ls-tree", "-r", "--name-only", "deploy", NULL);
    th_assert_contains(tree, ns_path);
    free(tree);
    free(head);
    fx_close(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rc_pass__noop_parses_no_manifest),
        cmocka_unit_test(test_rc_pass__no_request_loads_no_libcurl),
        cmocka_unit_test(test_rc_pass__noop_with_pending_on_simulated_fleet),
        cmocka_unit_test(test_rc_pass__noop_memo_in_state_dir),
        cmocka_unit_test(test_rc_pass__memo_of_many_broken_files_reads_back),
        cmocka_unit_test(test_rc_pass__lone_object_removed),
        cmocka_unit_test(test_rc_pass__duplicate_keeps_placement_in_later_passes),
        cmocka_unit_test(test_rc_pass__file_whole_again_renders_what_it_says_now),
        cmocka_unit_test(test_rc_pass__kept_list_edited_by_hand_is_not_taken),
        cmocka_unit_test(test_rc_pass__replay_after_a_hand_edited_list),
        cmocka_unit_test(test_rc_pass__replay_writes_the_commits_layout),
        cmocka_unit_test(test_rc_pass__replay_lists_the_commits_warnings),
        cmocka_unit_test(test_rc_pass__snapshot_names_no_source),
        cmocka_unit_test(test_rc_pass__duplicate_namespace_keeps_its_labels),
        cmocka_unit_test(test_rc_pass__renamed_broken_file_removes_no_object),
        cmocka_unit_test(test_rc_pass__renamed_broken_file_keeps_its_namespace),
        cmocka_unit_test(test_rc_pass__source_budget_refuses_the_heaviest_not_the_last),
        cmocka_unit_test(test_rc_pass__noop_reports_broken_files),
        cmocka_unit_test(test_rc_pass__huge_file_refused_alone),
        cmocka_unit_test(test_rc_pass__one_change_parses_one_file),
        cmocka_unit_test(test_rc_pass__kept_versions_come_from_the_parse_cache),
        cmocka_unit_test(test_rc_pass__colliding_output_paths_block_only_those_objects),
        cmocka_unit_test(test_rc_pass__resource_names_limited_per_file),
        cmocka_unit_test(test_rc_pass__alias_bombs_fail_alone),
        cmocka_unit_test(test_rc_pass__long_broken_history_blocks_nothing),
        cmocka_unit_test(test_rc_pass__source_budget_refuses_the_file_past_it),
    };
    struct rc_err err = RC_ERR_INIT;
    int rc;

    home = th_git_env_setup();
    assert_int_equal(rc_git_global_init(&err), RC_OK);
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    rc_git_global_shutdown();
    th_rm_rf(home);
    free(home);
    return rc;
}
