/*
 * test_rc_kubeconfig.c - kubeconfig variants against the fake API server: token, tokenFile
 * (rotating), client certificates (data and files), CA (data and file), several files in
 * $KUBECONFIG, named contexts, exec plugins (cache, re-run on 401, expiry), the insecure flag,
 * the wrong CA, in-cluster config, and no credentials in logs or errors.
 */
#include "th.h"
#include "th_kube.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rc_kube.h"
#include "rc_kubeconfig.h"
#include "rd_cluster.h"

static struct th_certs certs;

struct fixture {
    struct th_kube kube;
    char dir[TH_DIR]; /* scratch for kubeconfigs, scripts, tokens */
    char *logtext;
    size_t loglen;
    struct rc_log log;
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));

    if (th_kube_start(&f->kube, &certs, NULL) != 0 || th_kube_mkdtemp(f->dir) != 0)
        return -1;
    f->log.level = RC_LOG_DEBUG;
    f->log.out = open_memstream(&f->logtext, &f->loglen);
    unsetenv("KUBECONFIG");
    unsetenv("KUBERNETES_SERVICE_HOST");
    unsetenv("KUBERNETES_SERVICE_PORT");
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;

    th_kube_stop(&f->kube);
    th_kube_rmtree(f->dir);
    fclose(f->log.out);
    free(f->logtext);
    free(f);
    unsetenv("KUBECONFIG");
    return 0;
}

static int group_setup(void **state)
{
    (void)state;
    if (rc_http_global_init(NULL) < 0)
        return -1;
    return th_certs_make(&certs);
}

static int group_teardown(void **state)
{
    (void)state;
    th_kube_rmtree(certs.dir);
    rc_http_global_cleanup();
    return 0;
}

static const char *fpath(char *out, const struct fixture *f, const char *name)
{
    snprintf(out, TH_PATH, "%s/%s", f->dir, name);
    return out;
}

/* "    certificate-authority: <certs>/ca.crt\n" */
static const char *ca_line(char *out, size_t n)
{
    char p[TH_PATH];

    snprintf(out, n, "    certificate-authority: %s\n", th_certs_path(p, &certs, "ca.crt"));
    return out;
}

/* Open a client on kubeconfig path and GET /api; returns the rc code, err filled. */
static int probe(struct fixture *f, const char *kubeconfig, const char *context, struct rc_err *err)
{
    struct rc_kube *k = NULL;
    struct rc_http_response resp = RC_HTTP_RESPONSE_INIT;
    struct rc_kube_options o = RC_KUBE_OPTIONS_INIT;
    int error;

    o.kubeconfig = kubeconfig;
    o.context = context;
    o.log = &f->log;
    o.http.max_attempts = 1;
    error = rc_kube_open_opts(&k, &o, err);
    if (error < 0)
        return error;
    error = rc_kube_request(k, "GET", "/api", NULL, NULL, 0, &resp, err);
    rc_http_response_release(&resp);
    rc_kube_free(k);
    return error;
}

static const char *last_auth(struct fixture *f, char *out, size_t n)
{
    cJSON *reqs = th_kube_requests(&f->kube);
    const cJSON *r = cJSON_GetArrayItem(reqs, cJSON_GetArraySize(reqs) - 1);

    snprintf(out, n, "%s", r ? cJSON_GetObjectItem(r, "auth")->valuestring : "");
    cJSON_Delete(reqs);
    return out;
}

static void assert_no_secret(struct fixture *f, const char *secret, const struct rc_err *err)
{
    fflush(f->log.out);
    assert_null(strstr(f->logtext ? f->logtext : "", secret));
    assert_null(strstr(err->msg, secret));
}

static void test_rc_kubeconfig__token(void **state)
{
    struct fixture *f = *state;
    struct rc_err err = RC_ERR_INIT;
    char kc[TH_PATH], ca[TH_PATH + 64], auth[16];
    struct rc_kubeconfig *cfg = NULL;

    th_kube_kubeconfig(fpath(kc, f, "config"), &f->kube, ca_line(ca, sizeof(ca)),
                       "    token: test-token-1\n");
    assert_int_equal(rc_kubeconfig_load(&cfg, kc, NULL, NULL, &err), RC_OK);
    assert_string_equal(cfg->context, "test");
    assert_string_equal(cfg->server, f->kube.url);
    assert_string_equal(cfg->ns, "default");
    assert_string_equal(cfg->token, "test-token-1");
    assert_int_equal(cfg->insecure, 0);
    rc_kubeconfig_free(cfg);
    assert_int_equal(probe(f, kc, NULL, &err), RC_OK);
    assert_string_equal(last_auth(f, auth, sizeof(auth)), "bearer");

    /* a wrong token: 401 with the server's message, and the token nowhere */
    th_kube_kubeconfig(kc, &f->kube, ca, "    token: wrong-secret-token\n");
    assert_int_equal(probe(f, kc, NULL, &err), RC_EHTTP);
    assert_non_null(strstr(err.msg, "Unauthorized"));
    assert_no_secret(f, "wrong-secret-token", &err);
}

static void test_rc_kubeconfig__token_file_rotates(void **state)
{
    struct fixture *f = *state;
    struct rc_err err = RC_ERR_INIT;
    char kc[TH_PATH], tok[TH_PATH], ca[TH_PATH + 64];
    struct rc_kube *k = NULL;
    struct rc_http_response resp = RC_HTTP_RESPONSE_INIT;

    th_kube_write(fpath(tok, f, "token"), "test-token-1\n");
    /* relative to the kubeconfig's folder */
    th_kube_kubeconfig(fpath(kc, f, "config"), &f->kube, ca_line(ca, sizeof(ca)),
                       "    tokenFile: token\n");
    assert_int_equal(rc_kube_open(&k, kc, NULL, &f->log, &err), RC_OK);
    assert_int_equal(rc_kube_request(k, "GET", "/api", NULL, NULL, 0, &resp, &err), RC_OK);
    /* the token rotates: the server accepts only the new one, the file has it */
    th_kube_tokens(&f->kube, "rotated-token-2\n");
    th_kube_write(tok, "rotated-token-2\n");
    assert_int_equal(rc_kube_request(k, "GET", "/api", NULL, NULL, 0, &resp, &err), RC_OK);
    assert_int_equal(resp.status, 200);
    rc_http_response_release(&resp);
    rc_kube_free(k);
    assert_no_secret(f, "rotated-token-2", &err);

    th_kube_write(tok, "\n");
    assert_int_equal(probe(f, kc, NULL, &err), RC_EINVALID);
    assert_non_null(strstr(err.msg, "is empty"));
}

static void test_rc_kubeconfig__client_cert_data(void **state)
{
    struct fixture *f = *state;
    struct rc_err err = RC_ERR_INIT;
    char kc[TH_PATH], p[TH_PATH], auth[16];
    char *ca = th_kube_base64_file(th_certs_path(p, &certs, "ca.crt"));
    char *crt = th_kube_base64_file(th_certs_path(p, &certs, "client.crt"));
    char *key = th_kube_base64_file(th_certs_path(p, &certs, "client.key"));
    char cl[8192], user[8192];

    snprintf(cl, sizeof(cl), "    certificate-authority-data: %s\n", ca);
    snprintf(user, sizeof(user), "    client-certificate-data: %s\n    client-key-data: %s\n", crt,
             key);
    th_kube_kubeconfig(fpath(kc, f, "config"), &f->kube, cl, user);
    assert_int_equal(probe(f, kc, NULL, &err), RC_OK);
    assert_string_equal(last_auth(f, auth, sizeof(auth)), "cert");
    fflush(f->log.out);
    assert_null(strstr(f->logtext ? f->logtext : "", "PRIVATE KEY"));
    assert_null(strstr(f->logtext ? f->logtext : "", key));
    free(ca);
    free(crt);
    free(key);
}

static void test_rc_kubeconfig__client_cert_files(void **state)
{
    struct fixture *f = *state;
    struct rc_err err = RC_ERR_INIT;
    char kc[TH_PATH], p1[TH_PATH], p2[TH_PATH], auth[16], ca[TH_PATH + 64];
    char user[3 * TH_PATH];

    snprintf(user, sizeof(user), "    client-certificate: %s\n    client-key: %s\n",
             th_certs_path(p1, &certs, "client.crt"), th_certs_path(p2, &certs, "client.key"));
    th_kube_kubeconfig(fpath(kc, f, "config"), &f->kube, ca_line(ca, sizeof(ca)), user);
    assert_int_equal(probe(f, kc, NULL, &err), RC_OK);
    assert_string_equal(last_auth(f, auth, sizeof(auth)), "cert");

    /* a certificate without its key is refused while loading */
    snprintf(user, sizeof(user), "    client-certificate: %s\n", p1);
    th_kube_kubeconfig(kc, &f->kube, ca, user);
    assert_int_equal(probe(f, kc, NULL, &err), RC_EINVALID);
    assert_non_null(strstr(err.msg, "needs both a client certificate and a key"));
}

static void test_rc_kubeconfig__ca_file_relative(void **state)
{
    struct fixture *f = *state;
    struct rc_err err = RC_ERR_INIT;
    char kc[TH_PATH], p[TH_PATH], copy[TH_PATH];
    char *ca = th_kube_read(th_certs_path(p, &certs, "ca.crt"));

    th_kube_write(fpath(copy, f, "cluster-ca.pem"), ca);
    free(ca);
    th_kube_kubeconfig(fpath(kc, f, "config"), &f->kube,
                       "    certificate-authority: cluster-ca.pem\n", "    token: test-token-1\n");
    assert_int_equal(probe(f, kc, NULL, &err), RC_OK);
}

static void test_rc_kubeconfig__wrong_ca_refused(void **state)
{
    struct fixture *f = *state;
    struct rc_err err = RC_ERR_INIT;
    struct th_kube other;
    struct th_kube_opts o = {NULL, NULL, 1, 0, 0};
    char kc[TH_PATH], ca[TH_PATH + 64];

    /* a server whose certificate comes from another CA */
    assert_int_equal(th_kube_start(&other, &certs, &o), 0);
    th_kube_kubeconfig(fpath(kc, f, "config"), &other, ca_line(ca, sizeof(ca)),
                       "    token: test-token-1\n");
    assert_int_equal(probe(f, kc, NULL, &err), RC_ETRANSPORT);
    assert_non_null(strstr(err.msg, "tls with 'https://127.0.0.1:"));
    assert_non_null(strstr(err.msg, "refused"));
    th_kube_stop(&other);
}

static void test_rc_kubeconfig__insecure_only_when_set(void **state)
{
    struct fixture *f = *state;
    struct rc_err err = RC_ERR_INIT;
    char kc[TH_PATH], ca[TH_PATH + 64];
    struct rc_kubeconfig *cfg = NULL;

    /* no CA, no flag: the fake CA is unknown, refused */
    th_kube_kubeconfig(fpath(kc, f, "config"), &f->kube, NULL, "    token: test-token-1\n");
    assert_int_equal(probe(f, kc, NULL, &err), RC_ETRANSPORT);
    fflush(f->log.out);
    assert_null(strstr(f->logtext ? f->logtext : "", "tls verification is off"));

    th_kube_kubeconfig(kc, &f->kube, "    insecure-skip-tls-verify: true\n",
                       "    token: test-token-1\n");
    assert_int_equal(rc_kubeconfig_load(&cfg, kc, NULL, NULL, &err), RC_OK);
    assert_int_equal(cfg->insecure, 1);
    rc_kubeconfig_free(cfg);
    assert_int_equal(probe(f, kc, NULL, &err), RC_OK);
    fflush(f->log.out);
    assert_non_null(strstr(f->logtext, "warning: tls verification is off for cluster 'fake'"));

    /* false means false */
    th_kube_kubeconfig(kc, &f->kube, "    insecure-skip-tls-verify: false\n",
                       "    token: test-token-1\n");
    assert_int_equal(probe(f, kc, NULL, &err), RC_ETRANSPORT);

    /* kubectl refuses a CA together with the flag */
    snprintf(ca + strlen(ca_line(ca, sizeof(ca))), 64, "    insecure-skip-tls-verify: true\n");
    th_kube_kubeconfig(kc, &f->kube, ca, "    token: test-token-1\n");
    assert_int_equal(probe(f, kc, NULL, &err), RC_EINVALID);
}

static void test_rc_kubeconfig__several_files_first_wins(void **state)
{
    struct fixture *f = *state;
    struct rc_err err = RC_ERR_INIT;
    char a[TH_PATH], b[TH_PATH], missing[TH_PATH], env[4 * TH_PATH], p[TH_PATH];
    char text[4096];
    struct rc_kubeconfig *cfg = NULL;

    /* a: current-context and the cluster; b: a different current-context (ignored), the
     * user, a second definition of cluster "fake" (ignored) and another context */
    snprintf(text, sizeof(text),
             "apiVersion: v1\nkind: Config\ncurrent-context: one\n"
             "clusters:\n- name: fake\n  cluster:\n    server: %s\n"
             "    certificate-authority: %s\n"
             "contexts:\n- name: one\n  context: {cluster: fake, user: u, namespace: team-a}\n",
             f->kube.url, th_certs_path(p, &certs, "ca.crt"));
    th_kube_write(fpath(a, f, "a.yaml"), text);
    th_kube_write(fpath(b, f, "b.yaml"),
                  "apiVersion: v1\nkind: Config\ncurrent-context: two\n"
                  "clusters:\n- name: fake\n  cluster:\n    server: https://127.0.0.1:1\n"
                  "contexts:\n- name: one\n  context: {cluster: nowhere, user: nobody}\n"
                  "- name: two\n  context: {cluster: fake, user: u}\n"
                  "users:\n- name: u\n  user:\n    token: test-token-1\n");
    fpath(missing, f, "missing.yaml");
    snprintf(env, sizeof(env), "%s::%s:%s", missing, a, b);
    setenv("KUBECONFIG", env, 1);
    assert_int_equal(rc_kubeconfig_load(&cfg, NULL, NULL, NULL, &err), RC_OK);
    assert_string_equal(cfg->context, "one");
    assert_string_equal(cfg->ns, "team-a");
    assert_string_equal(cfg->server, f->kube.url);
    assert_string_equal(cfg->token, "test-token-1");
    rc_kubeconfig_free(cfg);
    assert_int_equal(probe(f, NULL, NULL, &err), RC_OK);

    /* a named context */
    assert_int_equal(rc_kubeconfig_load(&cfg, NULL, "two", NULL, &err), RC_OK);
    assert_string_equal(cfg->context, "two");
    assert_string_equal(cfg->ns, "default");
    rc_kubeconfig_free(cfg);
    assert_int_equal(probe(f, NULL, "two", &err), RC_OK);
    assert_int_equal(rc_kubeconfig_load(&cfg, NULL, "three", NULL, &err), RC_ENOTFOUND);
    assert_non_null(strstr(err.msg, "context 'three' not found"));
}

static void test_rc_kubeconfig__bad_files(void **state)
{
    struct fixture *f = *state;
    struct rc_err err = RC_ERR_INIT;
    char kc[TH_PATH];
    struct rc_kubeconfig *cfg = NULL;

    th_kube_write(fpath(kc, f, "config"), "apiVersion: v1\nclusters: [\n");
    assert_int_equal(rc_kubeconfig_load(&cfg, kc, NULL, NULL, &err), RC_EINVALID);
    assert_non_null(strstr(err.msg, "config:"));
    th_kube_write(kc, "apiVersion: v1\nkind: Config\n");
    assert_int_equal(rc_kubeconfig_load(&cfg, kc, NULL, NULL, &err), RC_EINVALID);
    assert_non_null(strstr(err.msg, "no current-context"));
    th_kube_kubeconfig(kc, &f->kube, NULL, "    auth-provider: {name: gcp}\n");
    assert_int_equal(rc_kubeconfig_load(&cfg, kc, NULL, NULL, &err), RC_EINVALID);
    assert_non_null(strstr(err.msg, "'auth-provider' of user 'u' is not supported"));
    th_kube_kubeconfig(kc, &f->kube, NULL,
                       "    exec: {apiVersion: client.authentication.k8s.io/v1, command: login, "
                       "interactiveMode: Always}\n");
    assert_int_equal(rc_kubeconfig_load(&cfg, kc, NULL, NULL, &err), RC_EINVALID);
    assert_non_null(strstr(err.msg, "exec plugin 'login' needs a terminal"));
    th_kube_kubeconfig(kc, &f->kube, NULL,
                       "    exec: {apiVersion: client.authentication.k8s.io/v1alpha1, "
                       "command: x}\n");
    assert_int_equal(rc_kubeconfig_load(&cfg, kc, NULL, NULL, &err), RC_EINVALID);
    assert_non_null(strstr(err.msg, "v1alpha1' is not supported"));
    th_kube_kubeconfig(kc, &f->kube, "    certificate-authority-data: '!!notbase64'\n", NULL);
    assert_int_equal(rc_kubeconfig_load(&cfg, kc, NULL, NULL, &err), RC_EINVALID);
    assert_non_null(strstr(err.msg, "invalid base64 in 'certificate-authority-data'"));
    assert_int_equal(rc_kubeconfig_load(&cfg, "/nonexistent/kubeconfig", NULL, NULL, &err),
                     RC_ENOTFOUND);
    th_kube_kubeconfig(kc, &f->kube, "    certificate-authority: no-such-ca.pem\n", NULL);
    assert_int_equal(rc_kubeconfig_load(&cfg, kc, NULL, NULL, &err), RC_ENOTFOUND);
    assert_non_null(strstr(err.msg, "certificate-authority file '"));
    assert_non_null(strstr(err.msg, "/no-such-ca.pem' of context 'test' is not readable"));
    assert_null(cfg);
}

static void test_rc_kubeconfig__base64(void **state)
{
    struct rc_err err = RC_ERR_INIT;
    char *out = NULL;
    size_t len = 0;

    (void)state;
    assert_int_equal(rc_base64_decode(&out, &len, "aGVsbG8=\n", &err), RC_OK);
    assert_int_equal(len, 5);
    assert_string_equal(out, "hello");
    free(out);
    assert_int_equal(rc_base64_decode(&out, &len, "aGVs bG8h", &err), RC_OK);
    assert_string_equal(out, "hello!");
    free(out);
    assert_int_equal(rc_base64_decode(&out, &len, "aGVsbG8=x", &err), RC_EINVALID);
    assert_int_equal(rc_base64_decode(&out, &len, "a", &err), RC_EINVALID);
    assert_null(out);
}

/* A plugin script: counts its runs, records its args and KUBERNETES_EXEC_INFO, prints the
 * token in $STATE/plugin-token with the expiry in $STATE/expiry. */
static void write_plugin(struct fixture *f, char *kc, const char *extra_exec)
{
    char script[TH_PATH], p[TH_PATH], ca[TH_PATH + 64], user[4096];

    fpath(script, f, "plugin.sh");
    th_kube_write(script, "#!/bin/sh\n"
                          "n=$(cat \"$STATE/runs\" 2>/dev/null || echo 0)\n"
                          "echo $((n+1)) > \"$STATE/runs\"\n"
                          "printf '%s' \"$KUBERNETES_EXEC_INFO\" > \"$STATE/info\"\n"
                          "printf '%s ' \"$@\" > \"$STATE/args\"\n"
                          "[ -f \"$STATE/fail\" ] && exit 3\n"
                          "printf '{\"apiVersion\":\"client.authentication.k8s.io/v1\","
                          "\"kind\":\"ExecCredential\",\"status\":{\"token\":\"%s\","
                          "\"expirationTimestamp\":\"%s\"}}' \"$(cat \"$STATE/plugin-token\")\" "
                          "\"$(cat \"$STATE/expiry\")\"\n");
    assert_int_equal(chmod(script, 0755), 0);
    th_kube_write(fpath(p, f, "plugin-token"), "exec-token-A");
    th_kube_write(fpath(p, f, "expiry"), "2999-01-01T00:00:00Z");
    snprintf(user, sizeof(user),
             "    exec:\n"
             "      apiVersion: client.authentication.k8s.io/v1\n"
             "      command: ./plugin.sh\n"
             "      args: [get-token, --cluster, fake]\n"
             "      env:\n"
             "      - {name: STATE, value: %s}\n"
             "      interactiveMode: Never\n"
             "%s",
             f->dir, extra_exec ? extra_exec : "");
    th_kube_kubeconfig(fpath(kc, f, "config"), &f->kube, ca_line(ca, sizeof(ca)), user);
}

static int plugin_runs(struct fixture *f)
{
    char p[TH_PATH];
    char *t = th_kube_read(fpath(p, f, "runs"));
    int n = t ? (int)strtol(t, NULL, 10) : 0;

    free(t);
    return n;
}

static void test_rc_kubeconfig__exec_plugin(void **state)
{
    struct fixture *f = *state;
    struct rc_err err = RC_ERR_INIT;
    char kc[TH_PATH], p[TH_PATH];
    struct rc_kube *k = NULL;
    struct rc_http_response resp = RC_HTTP_RESPONSE_INIT;
    char *text;

    th_kube_tokens(&f->kube, "exec-token-A\n");
    write_plugin(f, kc, "      provideClusterInfo: true\n");
    assert_int_equal(rc_kube_open(&k, kc, NULL, &f->log, &err), RC_OK);
    assert_int_equal(plugin_runs(f), 0); /* run on first use */
    assert_int_equal(rc_kube_request(k, "GET", "/api", NULL, NULL, 0, &resp, &err), RC_OK);
    assert_int_equal(rc_kube_request(k, "GET", "/apis", NULL, NULL, 0, &resp, &err), RC_OK);
    assert_int_equal(plugin_runs(f), 1); /* cached until expiry */
    text = th_kube_read(fpath(p, f, "args"));
    assert_string_equal(text, "get-token --cluster fake ");
    free(text);
    text = th_kube_read(fpath(p, f, "info"));
    assert_non_null(strstr(text, "\"kind\":\"ExecCredential\""));
    assert_non_null(strstr(text, "\"apiVersion\":\"client.authentication.k8s.io/v1\""));
    assert_non_null(strstr(text, f->kube.url));
    assert_non_null(strstr(text, "\"interactive\":false"));
    free(text);

    /* the server stops accepting the cached token: 401 → run again → retried */
    th_kube_tokens(&f->kube, "exec-token-B\n");
    th_kube_write(fpath(p, f, "plugin-token"), "exec-token-B");
    assert_int_equal(rc_kube_request(k, "GET", "/api/v1", NULL, NULL, 0, &resp, &err), RC_OK);
    assert_int_equal(resp.status, 200);
    assert_int_equal(plugin_runs(f), 2);

    /* an expired credential is not reused: the next credential comes with a past expiry */
    th_kube_write(fpath(p, f, "expiry"), "2001-01-01T00:00:00Z");
    th_kube_tokens(&f->kube, "exec-token-C\n");
    th_kube_write(fpath(p, f, "plugin-token"), "exec-token-C");
    assert_int_equal(rc_kube_request(k, "GET", "/api", NULL, NULL, 0, &resp, &err), RC_OK);
    assert_int_equal(plugin_runs(f), 3);
    assert_int_equal(rc_kube_request(k, "GET", "/api", NULL, NULL, 0, &resp, &err), RC_OK);
    assert_int_equal(plugin_runs(f), 4);
    assert_int_equal(rc_kube_request(k, "GET", "/api", NULL, NULL, 0, &resp, &err), RC_OK);
    assert_int_equal(plugin_runs(f), 5);

    /* a failing plugin: a clear error, no output in it */
    th_kube_write(fpath(p, f, "fail"), "");
    assert_int_equal(rc_kube_request(k, "GET", "/api", NULL, NULL, 0, &resp, &err), RC_ERROR);
    assert_non_null(strstr(err.msg, "credential plugin"));
    assert_non_null(strstr(err.msg, "plugin.sh' exited with status 3"));
    rc_http_response_release(&resp);
    rc_kube_free(k);
    assert_no_secret(f, "exec-token-A", &err);
    assert_no_secret(f, "exec-token-B", &err);
    assert_no_secret(f, "exec-token-C", &err);
}

/* A credential is kept by the process, not by one connection: loop mode opens every cluster
 * again each pass (observe, then apply), and each open ran the plugin again. Now a new
 * connection takes the kept credential while it has not expired; a connection refused with
 * the old one takes the one another connection got since, without a run; a plugin run
 * another way (here without provideClusterInfo) has a credential of its own. */
static void test_rc_kubeconfig__exec_credential_kept_by_the_process(void **state)
{
    struct fixture *f = *state;
    struct rc_err err = RC_ERR_INIT;
    char kc[TH_PATH], kc2[TH_PATH], p[TH_PATH];
    struct rc_kube *k = NULL, *k3 = NULL, *k4 = NULL;
    struct rc_http_response resp = RC_HTTP_RESPONSE_INIT;
    char *text;

    rc_kubeconfig_exec_cache_clear();
    th_kube_tokens(&f->kube, "exec-token-A\n");
    write_plugin(f, kc, "      provideClusterInfo: true\n");
    /* two passes, one connection each */
    for (int pass = 0; pass < 2; pass++) {
        assert_int_equal(rc_kube_open(&k, kc, NULL, &f->log, &err), RC_OK);
        assert_int_equal(rc_kube_request(k, "GET", "/api", NULL, NULL, 0, &resp, &err), RC_OK);
        assert_int_equal(resp.status, 200);
        rc_kube_free(k);
        k = NULL;
    }
    assert_int_equal(plugin_runs(f), 1);

    /* the server rotates: the first connection refused runs the plugin, the second takes
     * what it got */
    assert_int_equal(rc_kube_open(&k3, kc, NULL, &f->log, &err), RC_OK);
    assert_int_equal(rc_kube_open(&k4, kc, NULL, &f->log, &err), RC_OK);
    assert_int_equal(rc_kube_request(k3, "GET", "/api", NULL, NULL, 0, &resp, &err), RC_OK);
    assert_int_equal(rc_kube_request(k4, "GET", "/api", NULL, NULL, 0, &resp, &err), RC_OK);
    assert_int_equal(plugin_runs(f), 1);
    th_kube_tokens(&f->kube, "exec-token-B\n");
    th_kube_write(fpath(p, f, "plugin-token"), "exec-token-B");
    assert_int_equal(rc_kube_request(k3, "GET", "/api", NULL, NULL, 0, &resp, &err), RC_OK);
    assert_int_equal(resp.status, 200);
    assert_int_equal(plugin_runs(f), 2);
    assert_int_equal(rc_kube_request(k4, "GET", "/api", NULL, NULL, 0, &resp, &err), RC_OK);
    assert_int_equal(resp.status, 200);
    assert_int_equal(plugin_runs(f), 2);
    rc_kube_free(k3);
    rc_kube_free(k4);
    assert_int_equal(rc_kubeconfig_exec_cache_count(), 1);

    /* the same plugin given other input (no cluster in KUBERNETES_EXEC_INFO): its own run */
    text = th_kube_read(kc);
    snprintf(kc2, sizeof(kc2), "%s/config-no-info", f->dir);
    {
        char *at = strstr(text, "      provideClusterInfo: true\n");
        assert_non_null(at);
        memmove(at, at + 31, strlen(at + 31) + 1);
    }
    th_kube_write(kc2, text);
    free(text);
    assert_int_equal(rc_kube_open(&k, kc2, NULL, &f->log, &err), RC_OK);
    assert_int_equal(rc_kube_request(k, "GET", "/api", NULL, NULL, 0, &resp, &err), RC_OK);
    assert_int_equal(resp.status, 200);
    assert_int_equal(plugin_runs(f), 3);
    rc_kube_free(k);
    assert_int_equal(rc_kubeconfig_exec_cache_count(), 2);

    rc_http_response_release(&resp);
    rc_kubeconfig_exec_cache_clear();
    assert_int_equal(rc_kubeconfig_exec_cache_count(), 0);
    assert_no_secret(f, "exec-token-A", &err);
    assert_no_secret(f, "exec-token-B", &err);
}

static void test_rc_kubeconfig__exec_plugin_wrong_api_version(void **state)
{
    struct fixture *f = *state;
    struct rc_err err = RC_ERR_INIT;
    char kc[TH_PATH];

    write_plugin(f, kc, NULL);
    /* asks for v1beta1, the script answers v1 */
    {
        char *text = th_kube_read(kc);
        char *at = strstr(text, "k8s.io/v1\n");
        char *fixed = calloc(1, strlen(text) + 16);

        memcpy(fixed, text, (size_t)(at - text));
        memcpy(fixed + (at - text), "k8s.io/v1beta1\n", 15);
        memcpy(fixed + (at - text) + 15, at + 10, strlen(at + 10) + 1);
        th_kube_write(kc, fixed);
        free(text);
        free(fixed);
    }
    th_kube_tokens(&f->kube, "exec-token-A\n");
    assert_int_equal(probe(f, kc, NULL, &err), RC_EINVALID);
    assert_non_null(strstr(err.msg, "answered apiVersion 'client.authentication.k8s.io/v1'"));
}

static void test_rc_kubeconfig__exec_plugin_client_cert(void **state)
{
    struct fixture *f = *state;
    struct rc_err err = RC_ERR_INIT;
    char kc[TH_PATH], p[TH_PATH], script[TH_PATH], ca[TH_PATH + 64], user[1024], auth[16];
    char *crt = th_kube_read(th_certs_path(p, &certs, "client.crt"));
    char *key = th_kube_read(th_certs_path(p, &certs, "client.key"));
    cJSON *cred = cJSON_CreateObject();
    cJSON *st;
    char *text;

    /* the plugin prints a prepared ExecCredential with a client certificate and key */
    cJSON_AddStringToObject(cred, "apiVersion", "client.authentication.k8s.io/v1beta1");
    cJSON_AddStringToObject(cred, "kind", "ExecCredential");
    st = cJSON_AddObjectToObject(cred, "status");
    cJSON_AddStringToObject(st, "clientCertificateData", crt);
    cJSON_AddStringToObject(st, "clientKeyData", key);
    text = cJSON_PrintUnformatted(cred);
    th_kube_write(fpath(p, f, "cred.json"), text);
    free(text);
    cJSON_Delete(cred);
    snprintf(script, sizeof(script), "%s/cert-plugin.sh", f->dir);
    th_kube_write(script, "#!/bin/sh\ncat \"$(dirname \"$0\")/cred.json\"\n");
    assert_int_equal(chmod(script, 0755), 0);
    snprintf(user, sizeof(user),
             "    exec:\n"
             "      apiVersion: client.authentication.k8s.io/v1beta1\n"
             "      command: %s\n",
             script);
    th_kube_kubeconfig(fpath(kc, f, "config"), &f->kube, ca_line(ca, sizeof(ca)), user);
    assert_int_equal(probe(f, kc, NULL, &err), RC_OK);
    assert_string_equal(last_auth(f, auth, sizeof(auth)), "cert");
    fflush(f->log.out);
    assert_null(strstr(f->logtext ? f->logtext : "", "PRIVATE KEY"));
    free(crt);
    free(key);
}

/* A plugin that runs `body` (sh), with the given exec timeout. */
static int run_plugin_body(struct fixture *f, const char *body, long timeout_ms, struct rc_err *err)
{
    char kc[TH_PATH], script[TH_PATH + 16], ca[TH_PATH + 64], user[1024];
    struct rc_kube *k = NULL;
    struct rc_kube_options o = RC_KUBE_OPTIONS_INIT;
    struct rc_http_response resp = RC_HTTP_RESPONSE_INIT;
    int error;

    snprintf(script, sizeof(script), "%s/body-plugin.sh", f->dir);
    th_kube_write(script, body);
    assert_int_equal(chmod(script, 0755), 0);
    snprintf(user, sizeof(user),
             "    exec:\n"
             "      apiVersion: client.authentication.k8s.io/v1\n"
             "      command: %s\n",
             script);
    th_kube_kubeconfig(fpath(kc, f, "config"), &f->kube, ca_line(ca, sizeof(ca)), user);
    o.kubeconfig = kc;
    o.exec_timeout_ms = timeout_ms;
    assert_int_equal(rc_kube_open_opts(&k, &o, err), RC_OK);
    error = rc_kube_request(k, "GET", "/api", NULL, NULL, 0, &resp, err);
    rc_http_response_release(&resp);
    rc_kube_free(k);
    return error;
}

static void test_rc_kubeconfig__exec_plugin_bounded(void **state)
{
    struct fixture *f = *state;
    struct rc_err err = RC_ERR_INIT;

    assert_int_equal(run_plugin_body(f, "#!/bin/sh\nexec sleep 30\n", 300, &err), RC_ERROR);
    assert_non_null(strstr(err.msg, "body-plugin.sh' timed out after 300 ms"));
    assert_int_equal(run_plugin_body(f, "#!/bin/sh\nexec yes\n", 30000, &err), RC_ERROR);
    assert_non_null(strstr(err.msg, "wrote more than 1048576 bytes"));
    assert_int_equal(run_plugin_body(f, "#!/bin/sh\necho not json\n", 30000, &err), RC_EINVALID);
    assert_non_null(strstr(err.msg, "did not print an ExecCredential"));
    assert_null(strstr(err.msg, "not json"));
}

static void test_rc_kubeconfig__in_cluster(void **state)
{
    struct fixture *f = *state;
    struct rc_err err = RC_ERR_INIT;
    char sa[TH_DIR + 8], p[TH_PATH], port[16];
    struct rc_kube *k = NULL;
    struct rc_kube_options o = RC_KUBE_OPTIONS_INIT;
    struct rc_http_response resp = RC_HTTP_RESPONSE_INIT;
    char *ca = th_kube_read(th_certs_path(p, &certs, "ca.crt"));

    snprintf(sa, sizeof(sa), "%s/sa", f->dir);
    assert_int_equal(mkdir(sa, 0700), 0);
    snprintf(p, sizeof(p), "%s/ca.crt", sa);
    th_kube_write(p, ca);
    free(ca);
    snprintf(p, sizeof(p), "%s/token", sa);
    th_kube_write(p, "sa-token-1\n");
    snprintf(p, sizeof(p), "%s/namespace", sa);
    th_kube_write(p, "rightplace-system\n");
    th_kube_tokens(&f->kube, "sa-token-1\n");

    o.sa_dir = sa;
    o.log = &f->log;
    {
        /* no environment: ~/.kube/config, absent here */
        char *home = getenv("HOME") ? strdup(getenv("HOME")) : NULL;

        setenv("HOME", f->dir, 1);
        assert_int_equal(rc_kube_open_opts(&k, &o, &err), RC_ENOTFOUND);
        assert_non_null(strstr(err.msg, ".kube/config"));
        if (home)
            setenv("HOME", home, 1);
        free(home);
    }
    snprintf(port, sizeof(port), "%d", f->kube.port);
    setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1", 1);
    setenv("KUBERNETES_SERVICE_PORT", port, 1);
    assert_int_equal(rc_kube_open_opts(&k, &o, &err), RC_OK);
    assert_string_equal(rc_kube_server(k), f->kube.url);
    assert_string_equal(rc_kube_namespace(k), "rightplace-system");
    assert_int_equal(rc_kube_request(k, "GET", "/api", NULL, NULL, 0, &resp, &err), RC_OK);
    /* the projected token rotates */
    snprintf(p, sizeof(p), "%s/token", sa);
    th_kube_write(p, "sa-token-2\n");
    th_kube_tokens(&f->kube, "sa-token-2\n");
    assert_int_equal(rc_kube_request(k, "GET", "/api", NULL, NULL, 0, &resp, &err), RC_OK);
    rc_http_response_release(&resp);
    rc_kube_free(k);
    unsetenv("KUBERNETES_SERVICE_HOST");
    unsetenv("KUBERNETES_SERVICE_PORT");
    assert_no_secret(f, "sa-token", &err);
}

/* A service account folder as Kubernetes mounts it: token, ca.crt, namespace. */
static void make_sa(struct fixture *f, char *sa, size_t n)
{
    char p[TH_PATH];
    char *ca = th_kube_read(th_certs_path(p, &certs, "ca.crt"));

    snprintf(sa, n, "%s/sa", f->dir);
    assert_int_equal(mkdir(sa, 0700), 0);
    snprintf(p, sizeof(p), "%s/ca.crt", sa);
    th_kube_write(p, ca);
    free(ca);
    snprintf(p, sizeof(p), "%s/token", sa);
    th_kube_write(p, "sa-token-1\n");
    snprintf(p, sizeof(p), "%s/namespace", sa);
    th_kube_write(p, "rightplace-system\n");
    th_kube_tokens(&f->kube, "sa-token-1\n");
}

/* A Cluster object selects the pod's service account ({inCluster: true}); the files come from
 * the operator's side (sources.sa_dir, the mount), never from the Cluster. */
static void test_rc_kubeconfig__in_cluster_selected_by_cluster(void **state)
{
    struct fixture *f = *state;
    struct rc_err err = RC_ERR_INIT;
    char sa[TH_DIR + 8], port[16];
    struct rc_kube *k = NULL;
    struct rc_kube_options o = RC_KUBE_OPTIONS_INIT;
    struct rc_kubeconfig_sources src = RC_KUBECONFIG_SOURCES_INIT;
    struct rd_cluster_conn conn;
    struct rc_http_response resp = RC_HTTP_RESPONSE_INIT;

    make_sa(f, sa, sizeof(sa));
    src.sa_dir = strdup(sa);
    o.sources = &src;
    o.log = &f->log;
    memset(&conn, 0, sizeof(conn));
    conn.name = "management";
    conn.live = 1;
    conn.in_cluster = 1;
    /* not in a pod: a clear error */
    assert_int_equal(rc_kube_open_conn(&k, &conn, &o, &err), RC_ENOTFOUND);
    assert_non_null(strstr(err.msg, "not in a cluster"));
    snprintf(port, sizeof(port), "%d", f->kube.port);
    setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1", 1);
    setenv("KUBERNETES_SERVICE_PORT", port, 1);
    assert_int_equal(rc_kube_open_conn(&k, &conn, &o, &err), RC_OK);
    assert_string_equal(rc_kube_server(k), f->kube.url);
    assert_string_equal(rc_kube_namespace(k), "rightplace-system");
    assert_int_equal(rc_kube_request(k, "GET", "/api", NULL, NULL, 0, &resp, &err), RC_OK);
    assert_int_equal(resp.status, 200);
    rc_http_response_release(&resp);
    rc_kube_free(k);
    unsetenv("KUBERNETES_SERVICE_HOST");
    unsetenv("KUBERNETES_SERVICE_PORT");
    rc_kubeconfig_sources_release(&src);
    assert_no_secret(f, "sa-token", &err);
}

static pid_t alarm_server; /* stopped when a hang ends the program */

static void on_alarm(int sig)
{
    (void)sig;
    if (alarm_server > 0)
        kill(alarm_server, SIGTERM);
    _exit(99); /* a hang is a failure: the program ends with a status ctest reports */
}

/* FIFOs and devices where a kubeconfig, a certificate or a token file is expected: an error at
 * once, never a wait (a FIFO without a writer blocks a plain open forever). */
static void test_rc_kubeconfig__fifo_and_devices_refused(void **state)
{
    struct fixture *f = *state;
    struct rc_err err = RC_ERR_INIT;
    struct rc_kubeconfig *cfg = NULL;
    struct rc_kube *k = NULL;
    struct rc_http_response resp = RC_HTTP_RESPONSE_INIT;
    char fifo[TH_PATH], kc[TH_PATH], line[TH_PATH + 64];

    alarm_server = f->kube.pid;
    signal(SIGALRM, on_alarm);
    alarm(60);
    assert_int_equal(mkfifo(fpath(fifo, f, "fifo"), 0600), 0);
    /* the kubeconfig itself */
    assert_int_equal(rc_kubeconfig_load(&cfg, fifo, NULL, NULL, &err), RC_EINVALID);
    assert_non_null(strstr(err.msg, "is not a regular file"));
    assert_int_not_equal(rc_kubeconfig_load(&cfg, "/dev/zero", NULL, NULL, &err), RC_OK);
    assert_int_not_equal(rc_kubeconfig_load(&cfg, f->dir, NULL, NULL, &err), RC_OK);
    assert_null(cfg);
    /* its certificate authority, read before any connection */
    snprintf(line, sizeof(line), "    certificate-authority: %s\n", fifo);
    th_kube_kubeconfig(fpath(kc, f, "config"), &f->kube, line, "    token: test-token-1\n");
    assert_int_not_equal(rc_kube_open(&k, kc, NULL, NULL, &err), RC_OK);
    assert_non_null(strstr(err.msg, "is not a regular file"));
    assert_null(k);
    /* a token file, read for every request */
    th_kube_kubeconfig(kc, &f->kube, ca_line(line, sizeof(line)), "    tokenFile: fifo\n");
    assert_int_equal(rc_kube_open(&k, kc, NULL, NULL, &err), RC_OK);
    assert_int_not_equal(rc_kube_request(k, "GET", "/api", NULL, NULL, 0, &resp, &err), RC_OK);
    assert_non_null(strstr(err.msg, "token file"));
    rc_http_response_release(&resp);
    rc_kube_free(k);
    alarm(0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_rc_kubeconfig__token, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rc_kubeconfig__token_file_rotates, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rc_kubeconfig__client_cert_data, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rc_kubeconfig__client_cert_files, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rc_kubeconfig__ca_file_relative, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rc_kubeconfig__wrong_ca_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rc_kubeconfig__insecure_only_when_set, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_rc_kubeconfig__several_files_first_wins, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_rc_kubeconfig__bad_files, setup, teardown),
        cmocka_unit_test(test_rc_kubeconfig__base64),
        cmocka_unit_test_setup_teardown(test_rc_kubeconfig__exec_plugin, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rc_kubeconfig__exec_credential_kept_by_the_process,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_rc_kubeconfig__exec_plugin_wrong_api_version, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_rc_kubeconfig__exec_plugin_client_cert, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_rc_kubeconfig__exec_plugin_bounded, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rc_kubeconfig__in_cluster, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rc_kubeconfig__in_cluster_selected_by_cluster, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_rc_kubeconfig__fifo_and_devices_refused, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
