/*
 * test_rc_trust.c - the trust boundary between pushers and the operator (docs/security.md),
 * through the rightplace binary: a kubeconfig committed to the source repository never runs
 * its exec plugin nor gives its credentials, whatever a Cluster object names; a Cluster
 * selecting a context of the operator's kubeconfig works end to end against the fake API
 * server (tests/fakekube); non-regular files given as kubeconfigs are refused without a wait.
 */
#include "th.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "th_git.h"
#include "th_kube.h"
#include "th_rp.h"

#include "rc_banned.h"

#define TOKEN "trust-token-do-not-print"

static struct th_certs certs;
static char *home;
static struct th_kube kube; /* one fake API server for the program, stopped however it ends */

#define NODES                                                                                      \
    "{\"objects\": ["                                                                              \
    "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"n1\",\"labels\":"           \
    "{\"kubernetes.io/hostname\":\"n1\"}},\"status\":{\"allocatable\":{\"cpu\":\"8\","             \
    "\"memory\":\"32Gi\",\"pods\":\"110\"},\"conditions\":[{\"type\":\"Ready\",\"status\":"        \
    "\"True\"}]}},"                                                                                \
    "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"default\"}}"           \
    "]}"

static const char POLICY[] =
    "apiVersion: policy.elotl.co/v1alpha1\nkind: SchedulePolicy\nmetadata:\n  name: web\n"
    "spec:\n  clusterSelector:\n    matchLabels: {tier: web}\n"
    "  namespaceSelector:\n    matchLabels: {kubernetes.io/metadata.name: team}\n"
    "  resourceSelectors:\n    labelSelectors:\n    - matchLabels: {app: web}\n";

static const char DEPLOY[] =
    "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: team\n"
    "  labels: {app: web}\nspec:\n  replicas: 1\n  selector:\n    matchLabels: {app: web}\n"
    "  template:\n    metadata:\n      labels: {app: web}\n    spec:\n      containers:\n"
    "      - name: web\n        image: nginx\n        resources:\n"
    "          requests: {cpu: \"1\"}\n";

/* A simulated cluster the workload can go to whatever happens to the others. */
static const char SIM[] =
    "apiVersion: rightplace.dev/v1alpha1\nkind: Cluster\nmetadata:\n  name: sim\n"
    "  labels: {tier: web}\nspec:\n  autoscaler: {type: none}\n"
    "  nodes: [{name: node, count: 1, allocatable: {cpu: \"4\", memory: 16Gi}}]\n";

static int exists(const char *path)
{
    struct stat st;

    return stat(path, &st) == 0;
}

/* An exec user that would leave `marker` behind and hand out TOKEN. */
static void exec_user(char *out, size_t n, const char *marker)
{
    snprintf(out, n,
             "    exec:\n"
             "      apiVersion: client.authentication.k8s.io/v1\n"
             "      command: /bin/sh\n"
             "      args:\n"
             "      - -c\n"
             "      - \"touch %s; printf '{\\\"apiVersion\\\":\\\"client.authentication.k8s.io/v1"
             "\\\",\\\"kind\\\":\\\"ExecCredential\\\",\\\"status\\\":{\\\"token\\\":\\\"" TOKEN
             "\\\"}}'\"\n"
             "      interactiveMode: Never\n",
             marker);
}

static int run_in(const char *dir, char **out, char **err, const char *const *args)
{
    const char *argv[32];
    size_t n = 0;

    argv[n++] = RP_BINARY;
    while (*args && n < 31)
        argv[n++] = *args++;
    argv[n] = NULL;
    return th_run(dir, out, err, argv);
}

/* A pusher commits a kubeconfig whose user is an exec plugin, and Clusters naming it by
 * absolute and by relative path: no command of rightplace runs the plugin, the Clusters get a
 * configuration error naming them, and the rest of the fleet is placed. */
static void test_rc_trust__pushed_exec_kubeconfig_never_runs(void **state)
{
    char ca[TH_PATH], extra[TH_PATH + 64], user[2048], marker[TH_PATH];
    char abs_path[TH_PATH], clusters[4096], kc[8192], tmp[TH_DIR];
    char *repo, *out = NULL, *err = NULL;
    int st;
    (void)state;

    th_kube_clear_requests(&kube);
    assert_int_equal(th_kube_mkdtemp(tmp), 0);
    snprintf(marker, sizeof(marker), "%s/pwned", tmp);
    th_certs_path(ca, &certs, "ca.crt");
    snprintf(extra, sizeof(extra), "    certificate-authority: %s\n", ca);
    exec_user(user, sizeof(user), marker);
    {
        char path[TH_PATH];
        char *text;

        /* the pusher's kubeconfig, made with the helper and then committed */
        snprintf(path, sizeof(path), "%s/kubeconfig", tmp);
        th_kube_kubeconfig(path, &kube, extra, user);
        text = th_kube_read(path);
        snprintf(kc, sizeof(kc), "%s", text);
        free(text);
    }
    repo = th_git_init("trust", 0);
    snprintf(abs_path, sizeof(abs_path), "%s/evil/kubeconfig", repo);
    snprintf(clusters, sizeof(clusters),
             "apiVersion: rightplace.dev/v1alpha1\nkind: Cluster\nmetadata:\n  name: evil-abs\n"
             "  labels: {tier: web}\nspec:\n  kubeconfig: {path: %s, context: test}\n"
             "---\n"
             "apiVersion: rightplace.dev/v1alpha1\nkind: Cluster\nmetadata:\n  name: evil-rel\n"
             "  labels: {tier: web}\nspec:\n  kubeconfig: {path: evil/kubeconfig}\n",
             abs_path);
    free(th_git_commit_files(repo, "a pusher's kubeconfig", "evil/kubeconfig", kc,
                             "fleet/evil.yaml", clusters, "fleet/sim.yaml", SIM, "team/policy.yaml",
                             POLICY, "team/web.yaml", DEPLOY, NULL));

    {
        const char *args[] = {"reconcile", "--repo", repo, "--once", "--no-apply", NULL};
        st = run_in(repo, &out, &err, args);
    }
    assert_false(exists(marker));
    /* the Clusters are not connectable: a configuration error (2); the rest is placed */
    if (st != 2)
        fail_msg("exit %d\n%s\n%s", st, out, err);
    assert_non_null(strstr(err, "cluster 'evil-abs'"));
    assert_non_null(strstr(err, "cluster 'evil-rel'"));
    assert_non_null(strstr(err, "is not one of the operator's kubeconfigs"));
    assert_null(strstr(err, TOKEN));
    free(out);
    free(err);
    {
        /* the workload is placed on the simulated cluster */
        char *placed = th_git_show(repo, "deploy", "clusters/sim/team/deployment.web.yaml");
        if (!placed) {
            char *tree = th_git_ok(repo, "ls-tree", "-r", "--name-only", "deploy", NULL);
            fail_msg("web not placed on sim; deploy tree:\n%s", tree);
        }
        free(placed);
    }

    /* plan, and reconcile with apply, do not run it either */
    {
        const char *args[] = {"plan", "--repo", repo, NULL};
        run_in(repo, NULL, NULL, args);
    }
    assert_false(exists(marker));
    {
        const char *args[] = {"reconcile", "--repo", repo, "--once", "--force", NULL};
        st = run_in(repo, NULL, &err, args);
    }
    assert_false(exists(marker));
    assert_int_equal(st, 2);
    assert_non_null(strstr(err, "cluster 'evil-abs'"));
    free(err);
    {
        /* nothing reached the API server the pushed kubeconfig points at */
        cJSON *reqs = th_kube_requests(&kube);
        assert_int_equal(cJSON_GetArraySize(reqs), 0);
        cJSON_Delete(reqs);
    }
    th_kube_rmtree(tmp);
    th_rm_rf(repo);
    free(repo);
}

/* The operator gives a kubeconfig (with an exec user: the operator's choice); a Cluster
 * selects its context by name: observed, placed and applied against the fake API server. */
static void test_rc_trust__operator_context_end_to_end(void **state)
{
    char ca[TH_PATH], extra[TH_PATH + 64], user[2048], marker[TH_PATH], kc[TH_PATH];
    char tmp[TH_DIR];
    char *repo, *out = NULL, *err = NULL;
    cJSON *reqs;
    int st;
    (void)state;

    th_kube_clear_requests(&kube);
    assert_int_equal(th_kube_mkdtemp(tmp), 0);
    snprintf(marker, sizeof(marker), "%s/plugin-ran", tmp);
    th_certs_path(ca, &certs, "ca.crt");
    snprintf(extra, sizeof(extra), "    certificate-authority: %s\n", ca);
    exec_user(user, sizeof(user), marker);
    snprintf(kc, sizeof(kc), "%s/operator.kubeconfig", tmp);
    th_kube_kubeconfig(kc, &kube, extra, user);

    repo = th_git_init("trust", 0);
    free(th_git_commit_files(
        repo, "a live cluster by context", "fleet/live.yaml",
        "apiVersion: rightplace.dev/v1alpha1\nkind: Cluster\nmetadata:\n  name: live\n"
        "  labels: {tier: web}\nspec:\n  kubeconfig: {context: test}\n"
        "  autoscaler: {type: none}\n",
        "team/policy.yaml", POLICY, "team/web.yaml", DEPLOY, NULL));

    /* no operator kubeconfig: a configuration error for that cluster, nothing runs */
    unsetenv("KUBECONFIG");
    unsetenv("RIGHTPLACE_KUBECONFIG");
    st = th_rp(&out, &err, "reconcile", "--repo", repo, "--once", NULL);
    assert_int_equal(st, 2);
    assert_non_null(strstr(err, "cluster 'live'"));
    assert_non_null(strstr(err, "the operator gave no kubeconfig"));
    assert_false(exists(marker));
    free(out);
    free(err);

    st = th_rp(&out, &err, "reconcile", "--repo", repo, "--once", "--kubeconfig", kc, NULL);
    if (st != 0)
        fail_msg("reconcile exited %d\n%s\n%s", st, out, err);
    assert_true(exists(marker));
    assert_null(strstr(err, TOKEN));
    free(out);
    free(err);
    reqs = th_kube_requests(&kube);
    assert_non_null(th_kube_find(reqs, "GET", "/api/v1/nodes"));
    assert_non_null(th_kube_find(reqs, "PATCH", "/apis/apps/v1/namespaces/team/deployments/web"));
    cJSON_Delete(reqs);

    /* the same kubeconfig from the environment */
    setenv("RIGHTPLACE_KUBECONFIG", kc, 1);
    st = th_rp(&out, &err, "plan", "--repo", repo, NULL);
    unsetenv("RIGHTPLACE_KUBECONFIG");
    if (st != 0)
        fail_msg("plan exited %d\n%s\n%s", st, out, err);
    assert_null(strstr(err, "configuration error"));
    free(out);
    free(err);

    th_kube_rmtree(tmp);
    th_rm_rf(repo);
    free(repo);
}

static void on_alarm(int sig)
{
    (void)sig;
    _exit(99); /* a hang is a failure: the test program ends with a status ctest reports */
}

/* A FIFO (or a device) given where a kubeconfig is expected is refused at once. */
static void test_rc_trust__fifo_kubeconfig_is_refused_without_a_wait(void **state)
{
    char tmp[TH_DIR], fifo[TH_PATH];
    char *repo, *out = NULL, *err = NULL;
    int st;
    (void)state;

    assert_int_equal(th_kube_mkdtemp(tmp), 0);
    snprintf(fifo, sizeof(fifo), "%s/fifo", tmp);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    repo = th_example_repo();
    signal(SIGALRM, on_alarm);
    alarm(60);
    st = th_rp(&out, &err, "plan", "--repo", repo, "--kubeconfig", fifo, NULL);
    assert_int_equal(st, 2);
    assert_non_null(strstr(err, "is not a regular file"));
    free(out);
    free(err);
    st = th_rp(&out, &err, "plan", "--repo", repo, "--kubeconfig", "/dev/zero", NULL);
    assert_int_equal(st, 2);
    free(out);
    free(err);
    alarm(0);
    th_kube_rmtree(tmp);
    th_rm_rf(repo);
    free(repo);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rc_trust__pushed_exec_kubeconfig_never_runs),
        cmocka_unit_test(test_rc_trust__operator_context_end_to_end),
        cmocka_unit_test(test_rc_trust__fifo_kubeconfig_is_refused_without_a_wait),
    };
    struct th_kube_opts o = {NODES, TOKEN "\n", 0, 0, 0};
    int rc;

    home = th_git_env_setup();
    unsetenv("KUBECONFIG");
    unsetenv("RIGHTPLACE_KUBECONFIG");
    unsetenv("RIGHTPLACE_KUBECONFIG_DIR");
    if (th_certs_make(&certs) != 0) {
        fprintf(stderr, "cannot make test certificates\n");
        return 1;
    }
    if (th_kube_start(&kube, &certs, &o) != 0) {
        fprintf(stderr, "cannot start the fake API server\n");
        return 1;
    }
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    th_kube_stop(&kube);
    th_kube_rmtree(certs.dir);
    th_rm_rf(home);
    free(home);
    return rc;
}
