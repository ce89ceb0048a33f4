/*
 * test_rc_loop.c - the reconcile loop as a service: the Prometheus metrics file (parsed
 * line by line), the /metrics and /healthz listener (scraped over a socket), SIGHUP and
 * SIGUSR1 starting a pass now (passes counted through the metrics, not the clock), and the
 * suspend switch stopping apply (requests seen by a fake API server) but not placement.
 */
#include "th.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rc_git.h"
#include "rc_metrics.h"
#include "th_git.h"
#include "th_kube.h"
#include "th_rp.h"

#include "rc_banned.h"

#define TOKEN "loop-test-token"

static struct th_certs certs;
static char *home;

/* Check the Prometheus text format: "# HELP name text", "# TYPE name counter|gauge" before
 * a family's samples, samples "name{l=\"v\",...} value" with a number for value. */
static void assert_prometheus(const char *text)
{
    char typed[64][96];
    size_t ntyped = 0;
    const char *p = text;

    assert_non_null(text);
    assert_true(strlen(text) > 0 && text[strlen(text) - 1] == '\n');
    while (*p) {
        const char *nl = strchr(p, '\n');
        size_t n = (size_t)(nl - p);
        char line[1024];
        assert_true(n < sizeof(line));
        memcpy(line, p, n);
        line[n] = '\0';
        p = nl + 1;
        if (!strncmp(line, "# HELP ", 7))
            continue;
        if (!strncmp(line, "# TYPE ", 7)) {
            char name[96], type[32];
            assert_int_equal(sscanf(line + 7, "%95s %31s", name, type), 2);
            assert_true(!strcmp(type, "counter") || !strcmp(type, "gauge"));
            assert_true(ntyped < 64);
            snprintf(typed[ntyped++], sizeof(typed[0]), "%s", name);
            continue;
        }
        assert_true(line[0] != '#' && line[0] != '\0');
        {
            size_t nl2 = strcspn(line, "{ ");
            char name[96];
            const char *rest = line + nl2;
            char *end;
            int found = 0;
            assert_true(nl2 > 0 && nl2 < sizeof(name));
            memcpy(name, line, nl2);
            name[nl2] = '\0';
            for (size_t i = 0; i < ntyped; i++)
                found |= !strcmp(typed[i], name);
            if (!found)
                fail_msg("sample before its TYPE: %s", line);
            for (const char *c = name; *c; c++)
                assert_true((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '_');
            if (*rest == '{') {
                const char *close = strchr(rest, '}');
                assert_non_null(close);
                /* label="value" pairs */
                for (const char *q = rest + 1; q < close;) {
                    const char *eq = strchr(q, '=');
                    assert_true(eq && eq < close && eq[1] == '"');
                    q = eq + 2;
                    while (*q && *q != '"')
                        q += *q == '\\' ? 2 : 1;
                    assert_true(*q == '"');
                    q++;
                    if (*q == ',')
                        q++;
                }
                rest = close + 1;
            }
            assert_true(*rest == ' ');
            errno = 0;
            (void)strtod(rest + 1, &end);
            if (errno || *end)
                fail_msg("not a number: %s", line);
        }
    }
}

/* The value of the sample whose name and labels are exactly `series`, or -1. */
static double sample(const char *text, const char *series)
{
    size_t n = strlen(series);

    for (const char *p = text; p && *p;) {
        if (!strncmp(p, series, n) && p[n] == ' ')
            return strtod(p + n + 1, NULL);
        p = strchr(p, '\n');
        p = p ? p + 1 : NULL;
    }
    return -1;
}

static void test_rc_loop__metrics_file(void **state)
{
    char *repo = th_example_repo();
    char *dir = th_tmpdir("metrics");
    char path[4096], *text;
    (void)state;

    snprintf(path, sizeof(path), "%s/rightplace.prom", dir);
    assert_int_equal(
        th_rp(NULL, NULL, "reconcile", "--repo", repo, "--no-apply", "--metrics-file", path, NULL),
        0);
    text = th_kube_read(path);
    assert_prometheus(text);
    assert_true(sample(text, "rightplace_units{state=\"placed\"}") == 6);
    assert_true(sample(text, "rightplace_units{state=\"pending\"}") == 0);
    assert_true(sample(text, "rightplace_pending_units") == 0);
    assert_true(sample(text, "rightplace_last_pass_status") == 0);
    assert_true(sample(text, "rightplace_passes_total{status=\"0\"}") == 1);
    assert_true(sample(text, "rightplace_last_success_timestamp_seconds") > 0);
    assert_true(sample(text, "rightplace_pass_duration_seconds{phase=\"total\"}") >= 0);
    assert_true(sample(text, "rightplace_pass_duration_seconds{phase=\"load\"}") >= 0);
    assert_true(sample(text, "rightplace_pass_duration_seconds{phase=\"place\"}") >= 0);
    assert_true(sample(text, "rightplace_pass_duration_seconds{phase=\"apply\"}") >= 0);
    /* the process's memory, and libgit2's cache under the bound the pass set */
    assert_true(sample(text, "rightplace_resident_memory_bytes") > 1 << 20);
    assert_true(sample(text, "rightplace_peak_resident_memory_bytes") >=
                sample(text, "rightplace_resident_memory_bytes"));
    assert_true(sample(text, "rightplace_git_cache_bytes") > 0);
    assert_true(sample(text, "rightplace_git_cache_bound_bytes") > (double)RC_GIT_CACHE_BASE);
    assert_true(sample(text, "rightplace_git_cache_bound_bytes") <
                (double)rc_git_cache_bound(1000));
    assert_true(sample(text, "rightplace_git_cache_bytes") <=
                sample(text, "rightplace_git_cache_bound_bytes"));
    free(text);
    /* a broken file: status 3 and the file counted; rewritten in place, no temp files left */
    free(th_git_commit_files(repo, "broken", "broken.yaml",
                             "apiVersion: v1\nkind: ConfigMap\nmetadata:\n\tname: x\n", NULL));
    assert_int_equal(
        th_rp(NULL, NULL, "reconcile", "--repo", repo, "--no-apply", "--metrics-file", path, NULL),
        3);
    text = th_kube_read(path);
    assert_prometheus(text);
    assert_true(sample(text, "rightplace_last_pass_status") == 3);
    assert_true(sample(text, "rightplace_file_errors") == 1);
    free(text);
    {
        const char *argv[] = {"ls", "-A", dir, NULL};
        char *out = NULL;
        assert_int_equal(th_run(NULL, &out, NULL, argv), 0);
        assert_string_equal(out, "rightplace.prom\n");
        free(out);
    }
    th_rm_rf(dir);
    free(dir);
    th_rm_rf(repo);
    free(repo);
}

/* GET path from 127.0.0.1:port; returns the whole response (malloc'd) or NULL. */
static char *http_get(int port, const char *path)
{
    struct sockaddr_in sa;
    char req[256], *buf = NULL;
    size_t len = 0, cap = 0;
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_port = htons((unsigned short)port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", path);
    assert_true(write(fd, req, strlen(req)) == (ssize_t)strlen(req));
    for (;;) {
        ssize_t r;
        if (len + 4096 + 1 > cap) {
            cap = cap ? cap * 2 : 8192;
            buf = realloc(buf, cap);
        }
        r = read(fd, buf + len, cap - len - 1);
        if (r <= 0)
            break;
        len += (size_t)r;
    }
    close(fd);
    if (!buf)
        return NULL;
    buf[len] = '\0';
    return buf;
}

/* The port from "serving metrics on http://127.0.0.1:PORT/metrics" in the log file. */
static int wait_port(const char *log)
{
    for (int i = 0; i < 3000; i++) {
        char *t = th_kube_read(log);
        const char *p = t ? strstr(t, "http://127.0.0.1:") : NULL;
        int port = p ? (int)strtol(p + 17, NULL, 10) : 0;
        free(t);
        if (port > 0)
            return port;
        usleep(20000);
    }
    fail_msg("no listener in %s", log);
    return 0;
}

/* Passes counted by the listener's metrics (all statuses). */
static int passes(int port)
{
    char *r = http_get(port, "/metrics");
    char *body = r ? strstr(r, "\r\n\r\n") : NULL;
    int n = 0;

    if (body) {
        for (int s = 0; s < 8; s++) {
            char series[64];
            double v;
            snprintf(series, sizeof(series), "rightplace_passes_total{status=\"%d\"}", s);
            v = sample(body + 4, series);
            if (v > 0)
                n += (int)v;
        }
    }
    free(r);
    return n;
}

static void wait_passes(int port, int want)
{
    for (int i = 0; i < 3000; i++) {
        int n = passes(port);
        if (n == want)
            return;
        assert_true(n < want);
        usleep(20000);
    }
    fail_msg("never saw %d passes", want);
}

/* `rightplace reconcile --interval 1h` on repo with a listener, its stderr to the file log:
 * its pid in *pid, the listener's port returned. Passes after the first come from signals. */
static int start_loop(pid_t *pid, const char *repo, const char *log)
{
    *pid = fork();
    assert_true(*pid >= 0);
    if (*pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(fd, 2);
        execl(RP_BINARY, RP_BINARY, "reconcile", "--repo", repo, "--no-apply", "--interval", "1h",
              "--listen", "127.0.0.1:0", (char *)NULL);
        _exit(127);
    }
    return wait_port(log);
}

/* A problem that stays (a broken file) ends every pass with the same status: a warning in the
 * first pass that ends so, info lines after it, and one when a pass succeeds again. */
static void test_rc_loop__same_status_warned_once(void **state)
{
    char *repo = th_example_repo();
    char *dir = th_tmpdir("loop");
    char log[4096];
    char *r;
    pid_t pid;
    int port, status = 0;
    (void)state;

    th_write_file(repo, "broken.yaml", "kind: [\n", (size_t)-1);
    free(th_git_ok(repo, "add", "-A", NULL));
    free(th_git_ok(repo, "commit", "-q", "-m", "a broken file", NULL));
    snprintf(log, sizeof(log), "%s/stderr", dir);
    port = start_loop(&pid, repo, log);
    wait_passes(port, 1);
    for (int k = 2; k <= 3; k++) {
        assert_int_equal(kill(pid, SIGHUP), 0);
        wait_passes(port, k);
    }
    free(th_git_ok(repo, "rm", "-q", "broken.yaml", NULL));
    free(th_git_ok(repo, "commit", "-q", "-m", "fixed", NULL));
    assert_int_equal(kill(pid, SIGHUP), 0);
    wait_passes(port, 4);
    assert_int_equal(kill(pid, SIGTERM), 0);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    r = th_kube_read(log);
    assert_int_equal(th_count(r, "warning: broken.yaml"), 1);
    assert_int_equal(th_count(r, "warning: pass ended with status 3; next pass in 3600 s"), 1);
    assert_int_equal(th_count(r, "pass ended with status 3, as the pass before"), 2);
    assert_int_equal(th_count(r, "pass ended with status 0, after passes that ended with 3"), 1);
    assert_int_equal(th_count(r, "warning:"), 2);
    free(r);
    th_rm_rf(dir);
    free(dir);
    th_rm_rf(repo);
    free(repo);
}

/* SIGHUP and SIGUSR1 start a pass now and do not stop the loop; the listener serves the
 * metrics (in the text format) and /healthz; SIGTERM stops it with status 0 */
static void test_rc_loop__signals_and_listener(void **state)
{
    char *repo = th_example_repo();
    char *dir = th_tmpdir("loop");
    char log[4096];
    char *r, *body;
    pid_t pid;
    int port, status = 0;
    (void)state;

    snprintf(log, sizeof(log), "%s/stderr", dir);
    port = start_loop(&pid, repo, log);
    wait_passes(port, 1);
    /* the interval is an hour: only a signal can start the next passes */
    assert_int_equal(kill(pid, SIGHUP), 0);
    wait_passes(port, 2);
    assert_int_equal(kill(pid, SIGUSR1), 0);
    wait_passes(port, 3);
    assert_int_equal(waitpid(pid, &status, WNOHANG), 0); /* still running */

    r = http_get(port, "/metrics");
    assert_non_null(r);
    assert_true(!strncmp(r, "HTTP/1.1 200 ", 13));
    th_assert_contains(r, "Content-Type: text/plain; version=0.0.4");
    body = strstr(r, "\r\n\r\n");
    assert_non_null(body);
    assert_prometheus(body + 4);
    assert_true(sample(body + 4, "rightplace_units{state=\"placed\"}") == 6);
    free(r);
    r = http_get(port, "/healthz");
    assert_true(r && !strncmp(r, "HTTP/1.1 200 ", 13));
    free(r);
    r = http_get(port, "/nope");
    assert_true(r && !strncmp(r, "HTTP/1.1 404 ", 13));
    free(r);

    assert_int_equal(kill(pid, SIGTERM), 0);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    r = th_kube_read(log);
    assert_int_equal(th_count(r, "signal: starting a pass now"), 2);
    free(r);
    th_rm_rf(dir);
    free(dir);
    th_rm_rf(repo);
    free(repo);
}

static void test_rc_loop__listen_needs_a_loop(void **state)
{
    char *err = NULL;
    (void)state;

    assert_int_equal(th_rp(NULL, &err, "reconcile", "--repo", "/x", "--listen", ":9090", NULL), 2);
    th_assert_contains(err, "--listen serves metrics while a loop runs");
    free(err);
}

#define ONE_NODE                                                                                   \
    "{\"objects\": [{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"n1\","       \
    "\"labels\":{\"kubernetes.io/hostname\":\"n1\"}},\"status\":{\"allocatable\":{\"cpu\":"        \
    "\"64\",\"memory\":\"256Gi\",\"nvidia.com/gpu\":\"8\",\"pods\":\"110\"},\"conditions\":"       \
    "[{\"type\":\"Ready\",\"status\":\"True\"}]}}]}"

/* While suspended, passes place and commit but apply nothing; resume applies */
/* A fakekube with one node started in *k, and the example repository (returned) whose
 * static-cluster reads it through the file `kubeconfig` of the new directory dir. */
static char *live_example(struct th_kube *k, char dir[TH_DIR])
{
    struct th_kube_opts o = {ONE_NODE, TOKEN "\n", 0, 0, 0};
    char kc[TH_PATH], ca[TH_PATH], extra[TH_PATH + 64], cl[2048];
    char *repo;

    assert_int_equal(th_kube_start(k, &certs, &o), 0);
    assert_int_equal(th_kube_mkdtemp(dir), 0);
    snprintf(kc, TH_PATH, "%s/kubeconfig", dir);
    snprintf(extra, sizeof(extra), "    certificate-authority: %s\n",
             th_certs_path(ca, &certs, "ca.crt"));
    th_kube_kubeconfig(kc, k, extra, "    token: " TOKEN "\n");
    repo = th_example_repo();
    snprintf(cl, sizeof(cl),
             "apiVersion: rightplace.dev/v1alpha1\nkind: Cluster\nmetadata:\n"
             "  name: static-cluster\n  labels: {cluster.class: development}\nspec:\n"
             "  kubeconfig: {name: kubeconfig, context: test}\n  autoscaler: {type: none}\n");
    free(th_git_commit_files(repo, "live", "fleet/static-cluster.yaml", cl, NULL));
    return repo;
}

static void test_rc_loop__suspend_stops_apply_not_placement(void **state)
{
    struct th_kube k;
    char dir[TH_DIR], mpath[TH_PATH];
    char *repo, *err = NULL, *deploy, *text;
    cJSON *reqs;
    (void)state;

    repo = live_example(&k, dir);
    snprintf(mpath, sizeof(mpath), "%s/m.prom", dir);

    assert_int_equal(th_rp(NULL, &err, "suspend", "--repo", repo, NULL), 0);
    th_assert_contains(err, "suspended");
    free(err);
    assert_int_equal(th_rp(NULL, &err, "reconcile", "--repo", repo, "--kubeconfig-dir", dir,
                           "--metrics-file", mpath, NULL),
                     0);
    th_assert_contains(err, "suspended");
    free(err);
    deploy = th_git_ok(repo, "rev-parse", "deploy", NULL); /* placed and committed */
    assert_int_equal(strlen(deploy), 40);
    free(deploy);
    reqs = th_kube_requests(&k);
    assert_int_equal(th_kube_count(reqs, "PATCH", "/"), 0);        /* nothing applied */
    assert_true(th_kube_count(reqs, "GET", "/api/v1/nodes") >= 1); /* but observed */
    cJSON_Delete(reqs);
    text = th_kube_read(mpath);
    assert_prometheus(text);
    assert_true(sample(text, "rightplace_cluster_reachable{cluster=\"static-cluster\"}") == 1);
    free(text);

    assert_int_equal(th_rp(NULL, &err, "resume", "--repo", repo, NULL), 0);
    free(err);
    assert_int_equal(th_rp(NULL, &err, "reconcile", "--repo", repo, "--kubeconfig-dir", dir,
                           "--metrics-file", mpath, NULL),
                     0);
    assert_null(strstr(err, "suspended"));
    free(err);
    reqs = th_kube_requests(&k);
    assert_true(th_kube_count(reqs, "PATCH", "/apis/ray.io/v1/namespaces/rayjob1/rayjobs/") >= 1);
    cJSON_Delete(reqs);
    text = th_kube_read(mpath);
    assert_prometheus(text);
    assert_true(sample(text, "rightplace_cluster_apply_result{cluster=\"static-cluster\","
                             "result=\"applied\"}") == 1);
    assert_true(sample(text, "rightplace_apply_results_total{cluster=\"static-cluster\","
                             "result=\"applied\"}") == 1);
    free(text);
    th_kube_stop(&k);
    th_kube_rmtree(dir);
    th_rm_rf(repo);
    free(repo);
}

/* Loop mode lists a live cluster's pods and nodes in its first pass and follows them by
 * watches after it: three passes, one list of each (rc_watch.h). A `--once` run lists them
 * every time and watches nothing. */
static void test_rc_loop__pods_listed_once_then_watched(void **state)
{
    struct th_kube k;
    char dir[TH_DIR], log[TH_PATH];
    char *repo, *err = NULL, *text;
    size_t lists, watches;
    pid_t pid;
    int port, status = 0;
    cJSON *reqs;
    (void)state;

    repo = live_example(&k, dir);
    snprintf(log, sizeof(log), "%s/stderr", dir);

    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(fd, 2);
        execl(RP_BINARY, RP_BINARY, "reconcile", "--repo", repo, "--no-apply", "--interval", "1h",
              "--listen", "127.0.0.1:0", "--kubeconfig-dir", dir, "--log-level", "debug",
              (char *)NULL);
        _exit(127);
    }
    port = wait_port(log);
    wait_passes(port, 1);
    for (int n = 2; n <= 3; n++) {
        assert_int_equal(kill(pid, SIGHUP), 0);
        wait_passes(port, n);
    }
    text = http_get(port, "/metrics");
    assert_non_null(text);
    assert_true(sample(strstr(text, "\r\n\r\n") + 4, "rightplace_pod_watches") == 1);
    assert_true(sample(strstr(text, "\r\n\r\n") + 4, "rightplace_pod_watch_events_total") == 0);
    assert_true(sample(strstr(text, "\r\n\r\n") + 4, "rightplace_node_watches") == 1);
    assert_true(sample(strstr(text, "\r\n\r\n") + 4, "rightplace_node_watch_events_total") == 0);
    free(text);
    assert_int_equal(kill(pid, SIGTERM), 0);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    reqs = th_kube_requests(&k);
    lists = th_kube_lists(reqs, "/api/v1/pods", &watches);
    assert_int_equal(lists, 1);
    assert_true(watches >= 1);
    lists = th_kube_lists(reqs, "/api/v1/nodes", &watches);
    assert_true(watches >= 1);
    /* one list; the two passes after it send a probe of one node each, as the cluster has
     * nothing else listed (no autoscaler detection) */
    assert_int_equal(lists, 3);
    assert_int_equal(th_kube_gets_with(reqs, "/api/v1/nodes", "limit", "1"), 2);
    cJSON_Delete(reqs);
    text = th_kube_read(log);
    assert_int_equal(th_count(text, "units present (nodes and pods from their watches)"), 2);
    free(text);

    th_kube_clear_requests(&k);
    for (int n = 0; n < 2; n++) {
        assert_int_equal(th_rp(NULL, &err, "reconcile", "--repo", repo, "--no-apply",
                               "--kubeconfig-dir", dir, "--force", NULL),
                         0);
        free(err);
    }
    reqs = th_kube_requests(&k);
    lists = th_kube_lists(reqs, "/api/v1/pods", &watches);
    assert_int_equal(lists, 2);
    assert_int_equal(watches, 0);
    lists = th_kube_lists(reqs, "/api/v1/nodes", &watches);
    assert_int_equal(lists, 2);
    assert_int_equal(watches, 0);
    cJSON_Delete(reqs);
    th_kube_stop(&k);
    th_kube_rmtree(dir);
    th_rm_rf(repo);
    free(repo);
}

static int connect_to(int port)
{
    struct sockaddr_in sa;
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    assert_true(fd >= 0);
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_port = htons((unsigned short)port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    return fd;
}

/* A client that sends its request a byte every 100 ms, for 20 s at most. */
struct trickle {
    int fd;
    atomic_int done;   /* it stopped */
    atomic_int closed; /* because the listener closed the connection */
};

static void *trickle_run(void *arg)
{
    struct trickle *t = arg;

    for (int i = 0; i < 200; i++) {
        if (send(t->fd, "x", 1, MSG_NOSIGNAL) < 0) {
            atomic_store(&t->closed, 1);
            break;
        }
        usleep(100 * 1000);
    }
    atomic_store(&t->done, 1);
    return NULL;
}

/* The answer to a raw request on a new connection (read until the listener closes it). */
static char *raw_request(int port, const char *req)
{
    int fd = connect_to(port);
    char *buf = calloc(1, 65536);
    size_t len = 0;
    ssize_t r;

    assert_non_null(buf);
    assert_true(write(fd, req, strlen(req)) == (ssize_t)strlen(req));
    while (len < 65535 && (r = read(fd, buf + len, 65535 - len)) > 0)
        len += (size_t)r;
    close(fd);
    return buf;
}

/* A client that trickles its request, and one that connects and says nothing, each hold the
 * listener for at most two seconds, and never the kubelet's /healthz: it is answered while
 * the trickling client is still at it, and the listener then closes both. (Before, the one
 * thread waited on the first client for as long as it kept sending, and the probes failed
 * behind it until the pod was restarted.) */
static void test_rc_loop__listener_not_held_by_slow_clients(void **state)
{
    struct rc_metrics *m = rc_metrics_new("test");
    struct rc_err err = RC_ERR_INIT;
    struct trickle t;
    struct timeval tv = {10, 0};
    pthread_t th;
    int port, silent, running;
    char *r, byte;
    (void)state;

    assert_int_equal(rc_metrics_listen(m, "127.0.0.1:0", 3600, NULL, &err), RC_OK);
    port = rc_metrics_port(m);
    assert_true(port > 0);
    memset(&t, 0, sizeof(t));
    t.fd = connect_to(port);
    assert_true(write(t.fd, "GET /hea", 8) == 8);
    assert_int_equal(pthread_create(&th, NULL, trickle_run, &t), 0);
    silent = connect_to(port);

    r = raw_request(port, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
    running = !atomic_load(&t.done);
    th_assert_contains(r, "HTTP/1.1 200 OK\r\n");
    th_assert_contains(r, "\r\n\r\nok\n");
    free(r);
    assert_true(running); /* answered beside the trickling client, not after it */

    /* HEAD: the headers alone */
    r = raw_request(port, "HEAD /healthz HTTP/1.1\r\n\r\n");
    th_assert_contains(r, "Content-Length: 3\r\n");
    assert_int_equal(strlen(strstr(r, "\r\n\r\n")), 4);
    free(r);

    /* both slow clients are closed by the listener, whose time for them ran out */
    pthread_join(th, NULL);
    assert_true(atomic_load(&t.closed));
    setsockopt(silent, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    assert_int_equal(recv(silent, &byte, 1, 0), 0);
    close(silent);
    close(t.fd);
    rc_metrics_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rc_loop__metrics_file),
        cmocka_unit_test(test_rc_loop__signals_and_listener),
        cmocka_unit_test(test_rc_loop__same_status_warned_once),
        cmocka_unit_test(test_rc_loop__listen_needs_a_loop),
        cmocka_unit_test(test_rc_loop__listener_not_held_by_slow_clients),
        cmocka_unit_test(test_rc_loop__suspend_stops_apply_not_placement),
        cmocka_unit_test(test_rc_loop__pods_listed_once_then_watched),
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
