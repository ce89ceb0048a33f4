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

static int has_raw_control(const char *s)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f)
            return 1;
    }
    return 0;
}

/* A pushed file whose name holds terminal escapes (ESC, BEL) breaks: the name reaches stderr
 * and the placement commit's message escaped, never raw. */
static void test_rc_trust__escapes_in_file_names_are_escaped(void **state)
{
    const char *evil = "team/evil\x1b]0;owned\x07\x1b[31m.yaml";
    const char *shown = "team/evil\\e]0;owned\\a\\e[31m.yaml";
    char *repo, *out = NULL, *err = NULL, *msg;
    int st;
    (void)state;

    repo = th_git_init("trust-esc", 0);
    free(th_git_commit_files(repo, "a fleet", "fleet/sim.yaml", SIM, "team/policy.yaml", POLICY,
                             "team/web.yaml", DEPLOY, evil,
                             "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: evil\n"
                             "  namespace: team\n  labels: {app: web}\ndata: {a: b}\n",
                             NULL));
    assert_int_equal(th_rp(NULL, NULL, "reconcile", "--repo", repo, "--once", NULL), 0);
    /* the file breaks, and something else changes so that a commit is made */
    free(th_git_commit_files(repo, "break it", evil, "apiVersion: v1\nkind: [\n", "team/web.yaml",
                             "# two replicas now\n", NULL));
    free(th_git_commit_files(repo,
                             "web back \xe2\x80\xae"
                             "gnp.exe \x1b[2J",
                             "team/web.yaml", DEPLOY, "team/more.yaml",
                             "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: more\n"
                             "  namespace: team\n  labels: {app: web}\ndata: {a: b}\n",
                             NULL));
    st = th_rp(&out, &err, "reconcile", "--repo", repo, "--once", NULL);
    assert_int_equal(st, 3);
    if (!strstr(err, shown))
        fail_msg("escaped name not in stderr:\n%s", err);
    assert_false(has_raw_control(err));
    assert_false(has_raw_control(out));
    free(out);
    free(err);
    msg = th_git_ok(repo, "log", "-1", "--format=%B", "deploy", NULL);
    if (!strstr(msg, shown))
        fail_msg("escaped name not in the commit message:\n%s", msg);
    assert_false(has_raw_control(msg));
    /* the source commit's subject, as a trailer: no bidirectional override either */
    assert_non_null(strstr(msg, "Rightplace-Source-Subject: web back \\u{202e}gnp.exe"));
    assert_null(strstr(msg, "\xe2\x80\xae"));
    free(msg);

    /* someone adds a file with such a name on the deploy branch: plan reports the hand edit
     * escaped, in text and in JSON (which stays valid UTF-8) */
    free(th_git_ok(repo, "checkout", "-q", "deploy", NULL));
    free(th_git_commit_files(repo, "by hand", "clusters/sim/x\x1b[2J\xff.yaml", "a: b\n", NULL));
    free(th_git_ok(repo, "checkout", "-q", "main", NULL));
    th_rp(&out, &err, "plan", "--repo", repo, NULL);
    if (!strstr(out, "clusters/sim/x\\e[2J\\xff.yaml"))
        fail_msg("hand edit not shown escaped:\n%s\n%s", out, err);
    if (has_raw_control(out))
        fail_msg("raw control character in plan's output:\n%s", out);
    assert_false(has_raw_control(err));
    free(out);
    free(err);
    th_rp(&out, &err, "plan", "--repo", repo, "-o", "json", NULL);
    {
        cJSON *j = cJSON_Parse(out);
        if (!j)
            fail_msg("plan -o json is not JSON:\n%s", out);
        assert_null(strstr(out, "\xff"));
        assert_non_null(strstr(out, "x\\\\e[2J\\\\xff.yaml"));
        cJSON_Delete(j);
    }
    free(out);
    free(err);
    th_rm_rf(repo);
    free(repo);
}

/* Every entry under dir (not following links): no access for group or other. */
static void assert_private_tree(const char *dir)
{
    char *out = NULL;
    const char *argv[] = {"find", dir, "-perm", "/077", "!", "-type", "l", NULL};

    assert_int_equal(th_run(NULL, &out, NULL, argv), 0);
    if (out[0])
        fail_msg("open to group or other under %s:\n%s", dir, out);
    free(out);
}

/* The state directory is private (an existing one is tightened), and so is the mirror
 * libgit2 writes into it. */
static void test_rc_trust__state_dir_is_private(void **state)
{
    char *remote = th_git_init("trust-remote", 1);
    char *work = th_example_repo();
    char *tmp = th_tmpdir("trust-state");
    char url[4096], statedir[4096];
    char *out = NULL, *err = NULL;
    struct stat st;
    int rc;
    (void)state;

    snprintf(url, sizeof(url), "file://%s", remote);
    free(th_git_ok(work, "push", "-q", url, "main", NULL));
    snprintf(statedir, sizeof(statedir), "%s/state", tmp);
    assert_int_equal(mkdir(statedir, 0755), 0);
    assert_int_equal(chmod(statedir, 0755), 0);
    rc = th_rp(&out, &err, "reconcile", "--repo", url, "--state-dir", statedir, "--once",
               "--no-apply", NULL);
    if (rc != 0)
        fail_msg("reconcile exited %d\n%s\n%s", rc, out, err);
    assert_non_null(strstr(err, "made private"));
    free(out);
    free(err);
    assert_int_equal(stat(statedir, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700);
    assert_private_tree(statedir);
    th_rm_rf(tmp);
    free(tmp);
    th_rm_rf(work);
    free(work);
    th_rm_rf(remote);
    free(remote);
}

/* A token in an https --repo URL is not written to the mirror's config (nor logged); a
 * mirror an older version made with it is cleaned. No https server is needed: the mirror is
 * configured before the first fetch, which fails here (nothing listens on port 1). */
static void test_rc_trust__url_token_not_stored(void **state)
{
    char *tmp = th_tmpdir("trust-token");
    const char *url = "https://alice:s3cr3t-t0ken@127.0.0.1:1/fleet.git";
    char statedir[2048], config[4096];
    char *out = NULL, *err = NULL, *text;
    (void)state;

    snprintf(statedir, sizeof(statedir), "%s/state", tmp);
    snprintf(config, sizeof(config), "%s/repo.git/config", statedir);
    assert_int_equal(th_rp(&out, &err, "plan", "--repo", url, "--state-dir", statedir, NULL), 4);
    assert_null(strstr(out, "s3cr3t"));
    assert_null(strstr(err, "s3cr3t"));
    free(out);
    free(err);
    text = th_kube_read(config);
    assert_non_null(text);
    assert_non_null(strstr(text, "https://127.0.0.1:1/fleet.git"));
    assert_null(strstr(text, "s3cr3t"));
    assert_null(strstr(text, "alice"));
    free(text);
    assert_private_tree(statedir);

    /* a rotated token is the same remote */
    assert_int_equal(th_rp(NULL, &err, "plan", "--repo",
                           "https://alice:n3w-t0ken@127.0.0.1:1/fleet.git", "--state-dir", statedir,
                           NULL),
                     4);
    assert_null(strstr(err, "is of"));
    free(err);

    /* a mirror recorded with the token (older versions) loses it */
    free(th_git_ok(statedir, "--git-dir", "repo.git", "config", "remote.origin.url", url, NULL));
    assert_int_equal(th_rp(NULL, NULL, "plan", "--repo", url, "--state-dir", statedir, NULL), 4);
    text = th_kube_read(config);
    assert_null(strstr(text, "s3cr3t"));
    assert_non_null(strstr(text, "https://127.0.0.1:1/fleet.git"));
    free(text);
    th_rm_rf(tmp);
    free(tmp);
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

/* The operator's personal kubeconfig ($KUBECONFIG, ~/.kube/config) is not handed to
 * rightplace: a pushed Cluster selecting one of its contexts (here the admin context a
 * developer's machine holds) is a configuration error naming the cluster, and nothing reaches
 * the API server it points at. */
static void test_rc_trust__personal_kubeconfig_is_not_selectable(void **state)
{
    char ca[TH_PATH], extra[TH_PATH + 64], kc[TH_PATH + 16], dir[TH_PATH];
    char tmp[TH_DIR];
    char *repo, *out = NULL, *err = NULL, *saved = strdup(getenv("HOME"));
    cJSON *reqs;
    int st;
    (void)state;

    th_kube_clear_requests(&kube);
    assert_int_equal(th_kube_mkdtemp(tmp), 0);
    th_certs_path(ca, &certs, "ca.crt");
    snprintf(extra, sizeof(extra), "    certificate-authority: %s\n", ca);
    snprintf(dir, sizeof(dir), "%s/.kube", tmp);
    assert_int_equal(mkdir(dir, 0700), 0);
    snprintf(kc, sizeof(kc), "%s/config", dir);
    th_kube_kubeconfig(kc, &kube, extra, "    token: " TOKEN "\n");

    repo = th_git_init("trust", 0);
    free(th_git_commit_files(
        repo, "a cluster selecting the admin context", "fleet/live.yaml",
        "apiVersion: rightplace.dev/v1alpha1\nkind: Cluster\nmetadata:\n  name: prod-admin\n"
        "  labels: {tier: web}\nspec:\n  kubeconfig: {context: test}\n"
        "  autoscaler: {type: none}\n",
        "team/policy.yaml", POLICY, "team/web.yaml", DEPLOY, NULL));

    setenv("HOME", tmp, 1);
    for (int i = 0; i < 2; i++) {
        /* ~/.kube/config alone, then also named by $KUBECONFIG */
        if (i == 1)
            setenv("KUBECONFIG", kc, 1);
        st = th_rp(&out, &err, "reconcile", "--repo", repo, "--once", NULL);
        if (st != 2)
            fail_msg("reconcile exited %d\n%s\n%s", st, out, err);
        assert_non_null(strstr(err, "cluster 'prod-admin'"));
        assert_non_null(strstr(err, "--kubeconfig FILE"));
        assert_non_null(strstr(err, "RIGHTPLACE_KUBECONFIG"));
        assert_null(strstr(err, TOKEN));
        free(out);
        free(err);
    }
    unsetenv("KUBECONFIG");
    setenv("HOME", saved, 1);
    free(saved);
    reqs = th_kube_requests(&kube);
    assert_int_equal(cJSON_GetArraySize(reqs), 0);
    cJSON_Delete(reqs);

    th_kube_rmtree(tmp);
    th_rm_rf(repo);
    free(repo);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rc_trust__pushed_exec_kubeconfig_never_runs),
        cmocka_unit_test(test_rc_trust__operator_context_end_to_end),
        cmocka_unit_test(test_rc_trust__personal_kubeconfig_is_not_selectable),
        cmocka_unit_test(test_rc_trust__fifo_kubeconfig_is_refused_without_a_wait),
        cmocka_unit_test(test_rc_trust__escapes_in_file_names_are_escaped),
        cmocka_unit_test(test_rc_trust__state_dir_is_private),
        cmocka_unit_test(test_rc_trust__url_token_not_stored),
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
