/*
 * test_rc_failover.c - re-placement off an unreachable cluster, end to end: the rightplace
 * binary, two fake API servers (tests/fakekube) for the live clusters a and b, a real git
 * repository. A unit on a stays while a's outage is shorter than the grace, and moves to b once
 * the outage (kept in the state directory's `unreachable` file) is longer, with the cause in
 * the commit message and placements.yaml; a policy without the annotation moves only under
 * --replace-unreachable-after; replay recomputes both commits.
 */
#include "th.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "rc_arena.h"
#include "rc_outage.h"
#include "th_git.h"
#include "th_kube.h"
#include "th_rp.h"

#include "rc_banned.h"

#define TOKEN "failover-test-token"

static struct th_certs certs;
static char *home;

static const char *nodes =
    "{\"objects\": ["
    "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"n1\",\"labels\":"
    "{\"kubernetes.io/hostname\":\"n1\"}},\"status\":{\"allocatable\":{\"cpu\":\"8\","
    "\"memory\":\"32Gi\",\"pods\":\"110\"},\"conditions\":[{\"type\":\"Ready\",\"status\":"
    "\"True\"}]}}"
    "]}";

#define CLUSTER(n)                                                                                 \
    "apiVersion: rightplace.dev/v1alpha1\nkind: Cluster\nmetadata:\n  name: " n "\n"               \
    "  labels: {pool: p}\nspec:\n  kubeconfig: {name: " n ".kubeconfig, context: test}\n"          \
    "  autoscaler: {type: none}\n"

/* a policy for namespace ns whose units are app=ns, on cluster `first` if it fits */
#define POLICY(ns, ann)                                                                            \
    "apiVersion: policy.elotl.co/v1alpha1\nkind: SchedulePolicy\nmetadata:\n  name: " ns "\n" ann  \
    "spec:\n  clusterSelector:\n    matchLabels: {pool: p}\n"                                      \
    "  namespaceSelector:\n    matchLabels: {kubernetes.io/metadata.name: " ns "}\n"               \
    "  resourceSelectors:\n    labelSelectors:\n    - matchLabels: {app: " ns "}\n"

#define DEPLOY(ns)                                                                                 \
    "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: " ns "\n"         \
    "  labels: {app: " ns "}\nspec:\n  replicas: 1\n  selector:\n    matchLabels: {app: " ns       \
    "}\n  template:\n    metadata:\n      labels: {app: " ns "}\n    spec:\n      containers:\n"   \
    "      - name: pause\n        image: registry.k8s.io/pause:3.9\n        resources:\n"          \
    "          requests: {cpu: 100m, memory: 16Mi}\n"

/* the cluster a unit is placed on, from placements.yaml at deploy ("" when none) */
static char *placed_on(const char *repo, const char *unit)
{
    char *rec = th_git_show(repo, "deploy", "placements.yaml");
    char *p, *q, *res;

    assert_non_null(rec);
    p = strstr(rec, unit);
    if (!p)
        fail_msg("unit %s not in placements.yaml:\n%s", unit, rec);
    p = strstr(p, "  clusters:\n  - ");
    if (!p)
        fail_msg("unit %s has no clusters in placements.yaml:\n%s", unit, rec);
    p += strlen("  clusters:\n  - ");
    q = strchr(p, '\n');
    assert_non_null(q);
    res = strndup(p, (size_t)(q - p));
    free(rec);
    return res;
}

/* Fake API servers k[0..n), one per cluster named "a", "b", ... (a node of 8 CPUs each), and a
 * kubeconfig directory dir with <name>.kubeconfig for each, which the passes read */
static void start_clusters(struct th_kube *k, size_t n, char dir[TH_DIR])
{
    struct th_kube_opts o = {NULL, TOKEN "\n", 0, 0, 0};
    char kc[TH_PATH], ca[TH_PATH], extra[TH_PATH + 64];

    o.state_json = nodes;
    assert_int_equal(th_kube_mkdtemp(dir), 0);
    snprintf(extra, sizeof(extra), "    certificate-authority: %s\n",
             th_certs_path(ca, &certs, "ca.crt"));
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(th_kube_start(&k[i], &certs, &o), 0);
        snprintf(kc, sizeof(kc), "%s/%c.kubeconfig", dir, (char)('a' + i));
        th_kube_kubeconfig(kc, &k[i], extra, "    token: " TOKEN "\n");
    }
    setenv("RIGHTPLACE_KUBECONFIG_DIR", dir, 1);
}

static int reconcile(const char *repo, const char *flag, const char *value, char **err)
{
    if (flag)
        return th_rp(NULL, err, "reconcile", "--repo", repo, "--once", "--no-apply", flag, value,
                     NULL);
    return th_rp(NULL, err, "reconcile", "--repo", repo, "--once", "--no-apply", NULL);
}

static void test_rc_failover__moves_after_grace(void **state)
{
    struct th_kube k[2], *down, *up;
    char dir[TH_DIR], file[4096];
    char *repo, *err = NULL, *fast, *slow, *msg, *text, *rec, *d1, *d2;
    const char *downname, *upname;
    struct stat st;
    (void)state;

    start_clusters(k, 2, dir);

    repo = th_git_init("failover", 0);
    free(th_git_commit_files(
        repo, "two live clusters", "a.yaml", CLUSTER("a"), "b.yaml", CLUSTER("b"), "fast.yaml",
        POLICY("fast", "  annotations: {rightplace.dev/replace-unreachable-after: 5m}\n"),
        "slow.yaml", POLICY("slow", ""), "web-fast.yaml", DEPLOY("fast"), "web-slow.yaml",
        DEPLOY("slow"), NULL));
    assert_int_equal(reconcile(repo, NULL, NULL, NULL), 0);
    fast = placed_on(repo, "fast/Deployment/web");
    slow = placed_on(repo, "slow/Deployment/web");
    assert_string_equal(fast, slow); /* both on the first cluster that fits */
    down = !strcmp(fast, "a") ? &k[0] : &k[1];
    up = down == &k[0] ? &k[1] : &k[0];
    downname = down == &k[0] ? "a" : "b";
    upname = down == &k[0] ? "b" : "a";
    snprintf(file, sizeof(file), "%s/.git/rightplace/unreachable", repo);
    assert_int_equal(access(file, F_OK), -1); /* no outage, no file */

    /* the cluster goes away: the first pass starts its clock and moves nothing */
    th_kube_stop(down);
    d1 = th_git_ok(repo, "rev-parse", "deploy", NULL);
    assert_int_equal(reconcile(repo, NULL, NULL, &err), 1);
    assert_non_null(strstr(err, "unreachable"));
    free(err);
    err = NULL;
    d2 = th_git_ok(repo, "rev-parse", "deploy", NULL);
    assert_string_equal(d1, d2); /* no move, and no commit for the capacity alone */
    free(d2);
    text = th_kube_read(file);
    assert_non_null(text);
    assert_int_equal(strncmp(text, downname, 1), 0);
    assert_int_equal(stat(file, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    /* a second pass keeps the first-seen time (the file does not change), and tries the
     * cluster the file names with one attempt per request */
    assert_int_equal(th_rp(NULL, &err, "reconcile", "--repo", repo, "--once", "--no-apply",
                           "--log-level", "debug", NULL),
                     1);
    {
        char want[128];
        snprintf(want, sizeof(want), "cluster '%s': unreachable at the last pass: one attempt",
                 downname);
        assert_non_null(strstr(err, want));
        snprintf(want, sizeof(want), "cluster '%s': unreachable at the last pass", upname);
        assert_null(strstr(err, want));
    }
    free(err);
    err = NULL;
    {
        char *again = th_kube_read(file);
        assert_string_equal(text, again);
        free(again);
    }
    free(text);

    /* the operator's clock: the outage began an hour ago */
    {
        char line[64];
        snprintf(line, sizeof(line), "%s %lld\n", downname, (long long)time(NULL) - 3600);
        th_kube_write(file, line);
    }
    assert_int_equal(reconcile(repo, NULL, NULL, NULL), 1);
    free(fast);
    fast = placed_on(repo, "fast/Deployment/web");
    assert_string_equal(fast, upname);
    free(slow);
    slow = placed_on(repo, "slow/Deployment/web");
    assert_string_equal(slow, downname); /* no annotation, no flag: it stays */
    msg = th_git_ok(repo, "log", "-1", "--format=%B", "deploy", NULL);
    {
        char want[128];
        snprintf(want, sizeof(want), "cluster '%s' unreachable for 1h", downname);
        assert_non_null(strstr(msg, want));
        assert_non_null(strstr(msg, "(grace 5m"));
        rec = th_git_show(repo, "deploy", "placements.yaml");
        assert_non_null(strstr(rec, want));
        free(rec);
    }
    free(msg);
    free(th_git_ok(repo, "branch", "-f", "move1", "deploy", NULL));

    /* the global grace moves the other unit too */
    assert_int_equal(reconcile(repo, "--replace-unreachable-after", "10m", NULL), 1);
    free(slow);
    slow = placed_on(repo, "slow/Deployment/web");
    assert_string_equal(slow, upname);
    msg = th_git_ok(repo, "log", "-1", "--format=%B", "deploy", NULL);
    assert_non_null(strstr(msg, "(grace 10m"));
    free(msg);

    /* replay recomputes both moves from what the commits recorded */
    assert_int_equal(th_rp(NULL, NULL, "replay", "--repo", repo, "move1", NULL), 0);
    assert_int_equal(th_rp(NULL, NULL, "replay", "--repo", repo, "--replace-unreachable-after",
                           "10m", "deploy", NULL),
                     0);

    /* a corrupt file only resets the clocks, with a warning */
    th_kube_write(file, "\x01garbage");
    assert_int_equal(reconcile(repo, "--replace-unreachable-after", "10m", &err), 1);
    assert_non_null(strstr(err, "malformed"));
    free(err);
    text = th_kube_read(file);
    assert_non_null(text);
    assert_int_equal(strncmp(text, downname, 1), 0);
    free(text);

    (void)up;
    th_kube_stop(up);
    free(fast);
    free(slow);
    free(d1);
    th_kube_rmtree(dir);
    unsetenv("RIGHTPLACE_KUBECONFIG_DIR");
    th_rm_rf(repo);
    free(repo);
}

/* A Divide policy's even split over every cluster of the pool, and a Deployment of 100
 * replicas of it */
static const char *const split_files[] = {
    "split.yaml",
    "apiVersion: policy.elotl.co/v1alpha1\nkind: SchedulePolicy\nmetadata:\n  name: split\n"
    "spec:\n  clusterSelector:\n    matchLabels: {pool: p}\n"
    "  namespaceSelector:\n    matchLabels: {kubernetes.io/metadata.name: split}\n"
    "  resourceSelectors:\n    labelSelectors:\n    - matchLabels: {app: split}\n"
    "  spreadConstraints:\n    spreadMode: Divide\n"
    "    topologyKey: kubernetes.io/metadata.name\n",
    "web-split.yaml",
    "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: split\n"
    "  labels: {app: split}\nspec:\n  replicas: 100\n  selector:\n    matchLabels: {app: "
    "split}\n  template:\n    metadata:\n      labels: {app: split}\n    spec:\n"
    "      containers:\n      - name: pause\n        image: registry.k8s.io/pause:3.9\n"
    "        resources:\n          requests: {cpu: 10m, memory: 1Mi}\n",
};

static void assert_replicas(const char *repo, const char *cluster, const char *want)
{
    char path[128], *text;

    snprintf(path, sizeof(path), "clusters/%s/split/deployment.web.yaml", cluster);
    text = th_git_show(repo, "deploy", path);
    assert_non_null(text);
    if (!strstr(text, want))
        fail_msg("%s holds no '%s':\n%s", path, want, text);
    free(text);
}

/* A value whose only cluster is unreachable gives its share to the others: a cluster that
 * joins the pool unreachable changes the even split's percents (50/50 -> 34/33 of what is
 * left) but not the targets, so the Divide unit's decision stands while its shares change;
 * its files are rendered again (the record's shares differ), not kept. */
static void test_rc_failover__divide_shares_follow_an_unreachable_value(void **state)
{
    struct th_kube k[3];
    char dir[TH_DIR];
    char *repo, *err = NULL;
    (void)state;

    start_clusters(k, 3, dir);
    th_kube_stop(&k[2]); /* c's server is gone: it will never answer */

    repo = th_git_init("divide-unreachable", 0);
    free(th_git_commit_files(repo, "two live clusters, one unit divided", "a.yaml", CLUSTER("a"),
                             "b.yaml", CLUSTER("b"), split_files[0], split_files[1], split_files[2],
                             split_files[3], NULL));
    assert_int_equal(reconcile(repo, NULL, NULL, NULL), 0);
    assert_replicas(repo, "a", "replicas: 50");
    assert_replicas(repo, "b", "replicas: 50");

    /* c joins unreachable: a and b stay the targets, at 34% and 33%: 51 and 49 replicas */
    free(th_git_commit_files(repo, "a third cluster, down", "c.yaml", CLUSTER("c"), NULL));
    assert_int_equal(reconcile(repo, NULL, NULL, &err), 1);
    assert_non_null(strstr(err, "unreachable"));
    free(err);
    assert_replicas(repo, "a", "replicas: 51");
    assert_replicas(repo, "b", "replicas: 49");
    assert_int_equal(th_rp(NULL, NULL, "replay", "--repo", repo, "deploy", NULL), 0);

    th_kube_stop(&k[0]);
    th_kube_stop(&k[1]);
    th_kube_rmtree(dir);
    unsetenv("RIGHTPLACE_KUBECONFIG_DIR");
    th_rm_rf(repo);
    free(repo);
}

/* The outage file of 5,000 unreachable live clusters (of 10,000) with names of 253 bytes (1.3 MB,
 * past the 1 MiB the file was once read up to): the next pass reads every clock back, so the
 * clusters' outages keep growing towards the grace instead of starting again. */
static void test_rc_failover__outage_clocks_of_many_clusters(void **state)
{
    enum { N = 10000 };
    char *dir = th_tmpdir("outage");
    char path[4096];
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_err err = RC_ERR_INIT;
    struct pl_cluster *fleet = rc_arena_calloc(&a, N, sizeof(*fleet));
    struct stat st;
    (void)state;

    snprintf(path, sizeof(path), "%s/unreachable", dir);
    for (size_t i = 0; i < N; i++) {
        char *name = rc_arena_alloc(&a, 254);
        memset(name, 'c', 253);
        snprintf(name + 240, 14, "-%012zu", N - i); /* not in name order */
        name[253] = '\0';
        fleet[i].name = name;
        fleet[i].live = 1;
        fleet[i].reachable = i % 2 == 0 ? 0 : 1;
    }
    assert_int_equal(rc_outage_track(fleet, N, path, 1000, 1, NULL, &err), RC_OK);
    assert_int_equal(stat(path, &st), 0);
    assert_true(st.st_size > (1 << 20));
    /* ten minutes on: the same outages, each 600 s long */
    assert_int_equal(rc_outage_track(fleet, N, path, 1600, 1, NULL, &err), RC_OK);
    for (size_t i = 0; i < N; i++)
        assert_int_equal(fleet[i].unreachable_for, i % 2 == 0 ? 600 : 0);
    {
        const char *const *names = NULL;
        assert_int_equal(rc_outage_names(&names, path, &a), N / 2);
        for (size_t i = 1; i < N / 2; i++) /* sorted, for observe's lookup */
            assert_true(strcmp(names[i - 1], names[i]) < 0);
    }
    rc_arena_release(&a);
    th_rm_rf(dir);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rc_failover__moves_after_grace),
        cmocka_unit_test(test_rc_failover__divide_shares_follow_an_unreachable_value),
        cmocka_unit_test(test_rc_failover__outage_clocks_of_many_clusters),
    };
    int rc;

    home = th_git_env_setup();
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
