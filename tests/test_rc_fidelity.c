/*
 * test_rc_fidelity.c - what a user wrote reaches the cluster with the meaning kubectl gives
 * it, in both delivery modes.
 *
 * The corpus tests/data/fidelity/repo/traps.yaml holds YAML traps (strings that look like
 * dates, bools or numbers, integers beyond 2^53, YAML 1.1 bool keys, tags, duplicates). The
 * ground truth is the real kubectl reading that file (`kubectl label --local -o json -f`,
 * which decodes like `kubectl apply -f` without needing a server). rightplace reconciles a
 * repository holding the corpus against tests/fakekube, and then:
 *   push mode: the body of every server-side apply it sent,
 *   pull mode: `kubectl kustomize` of the cluster's folder on the deploy branch (what Flux
 *              and Argo CD apply), read back by kubectl,
 * must hold every object of the corpus with every value identical to the ground truth
 * (tests/data/fidelity/compare.py: integers exact, an integer never equal to a float).
 */
#include "th.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "th_git.h"
#include "th_kube.h"
#include "th_rp.h"

#include "rc_banned.h"

#define TOKEN "fidelity-token"
#define DATA RP_SOURCE_DIR "/tests/data/fidelity"

static struct th_certs certs;

static const char *node_state =
    "{\"objects\": ["
    "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"n1\",\"labels\":"
    "{\"kubernetes.io/hostname\":\"n1\"}},\"status\":{\"allocatable\":{\"cpu\":\"8\","
    "\"memory\":\"32Gi\",\"pods\":\"110\"},\"conditions\":[{\"type\":\"Ready\",\"status\":"
    "\"True\"}]}},"
    "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"default\"}}"
    "]}";

struct env {
    struct th_kube kube;
    char *dir;  /* scratch: kubeconfig, JSON files */
    char *repo; /* the source repository */
};

static void env_start(struct env *e)
{
    struct th_kube_opts o = {node_state, TOKEN "\n", 0, 0, 0};
    char kc[TH_PATH + 32], ca[TH_PATH], extra[TH_PATH + 64];

    assert_int_equal(th_kube_start(&e->kube, &certs, &o), 0);
    e->dir = th_tmpdir("fidelity");
    /* the operator's kubeconfig directory, from which the Cluster selects its file by name;
     * the binary inherits it */
    snprintf(kc, sizeof(kc), "%s/kubeconfigs/fake.kubeconfig", e->dir);
    th_write_file(e->dir, "kubeconfigs/fake.kubeconfig", "", 0);
    snprintf(extra, sizeof(extra), "    certificate-authority: %s\n",
             th_certs_path(ca, &certs, "ca.crt"));
    th_kube_kubeconfig(kc, &e->kube, extra, "    token: " TOKEN "\n");
    *strrchr(kc, '/') = '\0';
    setenv("RIGHTPLACE_KUBECONFIG_DIR", kc, 1);
    e->repo = th_git_repo_from_dir("fidelity-src", DATA "/repo", "YAML traps");
    free(th_git_commit_files(e->repo, "the cluster", "fleet/fake.yaml",
                             "apiVersion: rightplace.dev/v1alpha1\nkind: Cluster\nmetadata:\n"
                             "  name: fake\nspec:\n"
                             "  kubeconfig: {name: fake.kubeconfig, context: test}\n"
                             "  autoscaler: {type: none}\n",
                             NULL));
}

static void env_stop(struct env *e)
{
    unsetenv("RIGHTPLACE_KUBECONFIG_DIR");
    th_kube_stop(&e->kube);
    th_rm_rf(e->repo);
    free(e->repo);
    th_rm_rf(e->dir);
    free(e->dir);
}

/* Run argv; fail the test unless it exits 0. Returns stdout (malloc'd). */
static char *run_ok(const char *const *argv)
{
    char *out = NULL, *err = NULL;

    if (th_run(NULL, &out, &err, argv) != 0)
        fail_msg("%s %s failed: %s", argv[0], argv[1], err ? err : "");
    free(err);
    return out;
}

static void write_scratch(char *path, size_t size, const struct env *e, const char *name,
                          const char *text)
{
    snprintf(path, size, "%s/%s", e->dir, name);
    th_write_file(e->dir, name, text, (size_t)-1);
}

/* How kubectl reads a YAML file: the objects as JSON, one after another. */
static char *kubectl_reads(const char *yaml_path)
{
    const char *argv[] = {"kubectl", "label",   "--local",          "-o", "json",
                          "-f",      yaml_path, "fidelity-check=1", NULL};

    return run_ok(argv);
}

/* The bodies of every server-side apply into the namespace "fidelity", one after another. */
static char *applied_bodies(const struct env *e, int *count)
{
    cJSON *reqs = th_kube_requests(&e->kube);
    const cJSON *r;
    size_t size = 1, len = 0;
    char *all = malloc(1);

    assert_non_null(all);
    *count = 0;
    cJSON_ArrayForEach(r, reqs)
    {
        const char *method = cJSON_GetStringValue(cJSON_GetObjectItem(r, "method"));
        const char *path = cJSON_GetStringValue(cJSON_GetObjectItem(r, "path"));
        const char *body = cJSON_GetStringValue(cJSON_GetObjectItem(r, "body"));
        size_t n;
        if (!method || strcmp(method, "PATCH") || !path || !strstr(path, "/namespaces/fidelity/") ||
            !body)
            continue;
        n = strlen(body);
        all = realloc(all, size + n + 1);
        assert_non_null(all);
        memcpy(all + len, body, n);
        all[len + n] = '\n';
        len += n + 1;
        size += n + 1;
        (*count)++;
    }
    all[len] = '\0';
    cJSON_Delete(reqs);
    return all;
}

/* kubectl kustomize of the cluster's folder on the deploy branch, as kubectl reads it. */
static char *pulled_objects(const struct env *e)
{
    char wt[TH_PATH], cdir[TH_PATH + 32], yaml[TH_PATH];
    char *built = NULL, *err = NULL, *json;
    const char *argv[] = {"kubectl", "kustomize", cdir, NULL};

    snprintf(wt, sizeof(wt), "%s/deploy-tree", e->dir);
    free(th_git_ok(e->repo, "worktree", "add", "--detach", wt, "deploy", NULL));
    snprintf(cdir, sizeof(cdir), "%s/clusters/fake", wt);
    if (th_run(NULL, &built, &err, argv) != 0) {
        fprintf(stderr, "kubectl kustomize: %s\n", err);
        json = NULL;
    } else {
        write_scratch(yaml, sizeof(yaml), e, "pulled.yaml", built);
        json = kubectl_reads(yaml);
    }
    free(th_git_ok(e->repo, "worktree", "remove", "--force", wt, NULL));
    free(built);
    free(err);
    return json;
}

/* Compare the ground truth with one candidate; NULL when identical, else the report. */
static char *differences(const struct env *e, const char *truth_path, const char *name,
                         const char *json)
{
    char path[TH_PATH], *report = NULL, *rerr = NULL;
    const char *cmp[] = {"python3", DATA "/compare.py", truth_path, path, NULL};
    int st;

    write_scratch(path, sizeof(path), e, name, json);
    st = th_run(NULL, &report, &rerr, cmp);
    if (st == 0 && strstr(report, "6 objects, 1 candidates, 0 differences")) {
        free(report);
        free(rerr);
        return NULL;
    }
    fprintf(stderr, "%s:\n%s%s\n", name, report ? report : "", rerr ? rerr : "");
    free(rerr);
    return report ? report : strdup("compare.py failed");
}

static int env_setup(void **state)
{
    struct env *e = calloc(1, sizeof(*e));

    if (!e)
        return -1;
    env_start(e);
    *state = e;
    return 0;
}

static int env_teardown(void **state)
{
    env_stop(*state);
    free(*state);
    return 0;
}

static void test_rc_fidelity__traps_reach_the_cluster_as_kubectl_reads_them(void **state)
{
    struct env *e = *state;
    char truth_path[TH_PATH], src[TH_PATH + 32];
    char *out = NULL, *err = NULL, *truth, *push, *pull, *record, *dpush, *dpull;
    int napplied = 0, st;

    st = th_rp(&out, &err, "reconcile", "--repo", e->repo, "--once", NULL);
    if (st != 0)
        fail_msg("reconcile exited %d\nstdout: %s\nstderr: %s", st, out, err);

    snprintf(src, sizeof(src), "%s/traps.yaml", e->repo);
    truth = kubectl_reads(src);
    write_scratch(truth_path, sizeof(truth_path), e, "truth.json", truth);
    /* push mode: the server-side apply bodies */
    push = applied_bodies(e, &napplied);
    assert_int_equal(napplied, 6); /* the trap objects */
    dpush = differences(e, truth_path, "push.json", push);
    /* pull mode: kubectl kustomize of the deploy branch */
    pull = pulled_objects(e);
    dpull = pull ? differences(e, truth_path, "pull.json", pull) : strdup("kustomize failed");
    if (dpush || dpull)
        fail_msg("what rightplace delivered differs from what kubectl reads (push: %s, pull: %s)",
                 dpush ? "differs" : "same", dpull ? "differs" : "same");

    /* the duplicates that do not decide identity are warned about, with both lines, on
     * stderr and in the placement record */
    if (!strstr(err, "traps.yaml:205:3: duplicate key 'a' (also at line 203)"))
        fail_msg("stderr lacks the duplicate key's warning:\n%s", err);
    record = th_git_show(e->repo, "deploy", "placements.yaml");
    assert_non_null(record);
    if (!strstr(record, "traps.yaml:205:3: duplicate key 'a' (also at line 203)") ||
        !strstr(record, "traps.yaml:208:5: duplicate key 'x' (also at line 207)"))
        fail_msg("the record lacks the duplicate keys' warnings:\n%s", record);
    free(record);
    free(truth);
    free(push);
    free(pull);
    free(out);
    free(err);
}

/* A duplicate metadata.name would silently rename the object (kubectl keeps the last one):
 * rightplace refuses that file, naming both lines, and applies nothing from it. */
static void test_rc_fidelity__identity_duplicate_refuses_the_file(void **state)
{
    struct env *e = *state;
    char *out = NULL, *err = NULL;
    cJSON *reqs;
    int st;

    free(th_git_commit_files(e->repo, "a renamed object", "renamed.yaml",
                             "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: first\n"
                             "  namespace: fidelity\n  labels: {app: fidelity}\n  name: second\n"
                             "data: {a: b}\n",
                             NULL));
    st = th_rp(&out, &err, "reconcile", "--repo", e->repo, "--once", NULL);
    assert_int_not_equal(st, 0);
    if (!strstr(err, "renamed.yaml:7:3: duplicate key 'metadata.name' (also at line 4)"))
        fail_msg("stderr lacks the duplicate: %s", err);
    reqs = th_kube_requests(&e->kube);
    assert_null(th_kube_find(reqs, "PATCH", "/configmaps/first"));
    assert_null(th_kube_find(reqs, "PATCH", "/configmaps/second"));
    /* the other files were applied */
    assert_non_null(th_kube_find(reqs, "PATCH", "/configmaps/quoted"));
    cJSON_Delete(reqs);
    free(out);
    free(err);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(
            test_rc_fidelity__traps_reach_the_cluster_as_kubectl_reads_them, env_setup,
            env_teardown),
        cmocka_unit_test_setup_teardown(test_rc_fidelity__identity_duplicate_refuses_the_file,
                                        env_setup, env_teardown),
    };
    char *home = th_git_env_setup();
    int rc;

    if (th_certs_make(&certs) != 0) {
        fprintf(stderr, "cannot make test certificates\n");
        return 1;
    }
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    th_kube_rmtree(certs.dir);
    th_rm_rf(home);
    free(home);
    return rc;
}
