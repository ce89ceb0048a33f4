/*
 * test_rc_http.c - rc_http against the fake API server: TLS (CA file and data, wrong CA,
 * tls-server-name, client certificates), retries (429 + Retry-After, 5xx, dropped
 * connections), timeouts, body caps, and no credentials in logs.
 */
#include "th.h"
#include "th_kube.h"
#include <arpa/inet.h>
#include <dlfcn.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "rc_http.h"

static struct th_certs certs;

struct sleeps {
    long ms[16];
    int n;
};

static void record_sleep(void *payload, long ms)
{
    struct sleeps *s = payload;

    if (s->n < 16)
        s->ms[s->n++] = ms;
}

struct fixture {
    struct th_kube kube;
    struct sleeps sleeps;
    struct rc_http_options o;
    char ca[TH_PATH];
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    struct rc_http_options def = RC_HTTP_OPTIONS_INIT;

    if (th_kube_start(&f->kube, &certs, NULL) != 0)
        return -1;
    f->o = def;
    f->o.sleep_ms = record_sleep;
    f->o.sleep_payload = &f->sleeps;
    f->o.timeout_ms = 10000;
    th_certs_path(f->ca, &certs, "ca.crt");
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;

    th_kube_stop(&f->kube);
    free(f);
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

static int get(struct fixture *f, struct rc_http *h, const char *path, const char *bearer,
               struct rc_http_response *resp, struct rc_err *err)
{
    char url[256];
    struct rc_http_request req = {.method = "GET", .url = url, .bearer = bearer};

    snprintf(url, sizeof(url), "%s%s", f->kube.url, path);
    return rc_http_do(h, &req, resp, err);
}

static struct rc_http *open_ca_file(struct fixture *f)
{
    struct rc_http_tls tls = RC_HTTP_TLS_INIT;
    struct rc_http *h = NULL;

    tls.ca_file = f->ca;
    assert_int_equal(rc_http_new(&h, &tls, &f->o, NULL, NULL), RC_OK);
    return h;
}

/* libcurl is not linked: the first connection context loads it (first in the group, so
 * that nothing has made one yet). */
static void test_rc_http__libcurl_loaded_by_the_first_context(void **state)
{
    struct fixture *f = *state;
    struct rc_http *h;
    void *lib;

    assert_false(rc_http_loaded());
    assert_null(dlopen("libcurl.so.4", RTLD_NOLOAD | RTLD_LAZY));
    h = open_ca_file(f);
    assert_true(rc_http_loaded());
    lib = dlopen("libcurl.so.4", RTLD_NOLOAD | RTLD_LAZY);
    assert_non_null(lib);
    dlclose(lib); /* the reference NOLOAD took */
    rc_http_free(h);
}

static void test_rc_http__token_and_ca_file(void **state)
{
    struct fixture *f = *state;
    struct rc_http *h = open_ca_file(f);
    struct rc_http_response resp = RC_HTTP_RESPONSE_INIT;
    struct rc_err err = RC_ERR_INIT;
    cJSON *reqs;

    assert_int_equal(get(f, h, "/api/v1", "test-token-1", &resp, &err), RC_OK);
    assert_int_equal(resp.status, 200);
    assert_string_equal(resp.content_type, "application/json");
    assert_non_null(strstr(resp.body.ptr, "APIResourceList"));
    assert_int_equal(resp.attempts, 1);
    rc_http_response_release(&resp);
    /* no token: the server answers 401 and rc_http reports the status, not an error */
    assert_int_equal(get(f, h, "/api/v1", NULL, &resp, &err), RC_OK);
    assert_int_equal(resp.status, 401);
    rc_http_response_release(&resp);
    rc_http_free(h);

    reqs = th_kube_requests(&f->kube);
    assert_int_equal(cJSON_GetArraySize(reqs), 2);
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(reqs, 0), "auth")->valuestring,
                        "bearer");
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(reqs, 0), "accept")->valuestring,
                        "application/json");
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(reqs, 1), "auth")->valuestring,
                        "none");
    cJSON_Delete(reqs);
}

static void test_rc_http__ca_data_and_client_cert_data(void **state)
{
    struct fixture *f = *state;
    struct rc_http_tls tls = RC_HTTP_TLS_INIT;
    struct rc_http *h = NULL;
    struct rc_http_response resp = RC_HTTP_RESPONSE_INIT;
    struct rc_err err = RC_ERR_INIT;
    char p[TH_PATH];
    char *ca = th_kube_read(f->ca);
    char *cert = th_kube_read(th_certs_path(p, &certs, "client.crt"));
    char *key = th_kube_read(th_certs_path(p, &certs, "client.key"));
    cJSON *reqs;

    tls.ca_data = ca;
    tls.ca_len = strlen(ca);
    tls.cert_data = cert;
    tls.cert_len = strlen(cert);
    tls.key_data = key;
    tls.key_len = strlen(key);
    assert_int_equal(rc_http_new(&h, &tls, &f->o, NULL, &err), RC_OK);
    free(ca);
    free(cert);
    free(key);
    assert_int_equal(get(f, h, "/apis", NULL, &resp, &err), RC_OK);
    assert_int_equal(resp.status, 200);
    rc_http_response_release(&resp);
    rc_http_free(h);
    reqs = th_kube_requests(&f->kube);
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(reqs, 0), "auth")->valuestring,
                        "cert");
    cJSON_Delete(reqs);
}

static void test_rc_http__client_cert_files(void **state)
{
    struct fixture *f = *state;
    struct rc_http_tls tls = RC_HTTP_TLS_INIT;
    struct rc_http *h = NULL;
    struct rc_http_response resp = RC_HTTP_RESPONSE_INIT;
    struct rc_err err = RC_ERR_INIT;
    char crt[TH_PATH], key[TH_PATH];

    tls.ca_file = f->ca;
    tls.cert_file = th_certs_path(crt, &certs, "client.crt");
    tls.key_file = th_certs_path(key, &certs, "client.key");
    assert_int_equal(rc_http_new(&h, &tls, &f->o, NULL, &err), RC_OK);
    assert_int_equal(get(f, h, "/api", NULL, &resp, &err), RC_OK);
    assert_int_equal(resp.status, 200);
    rc_http_response_release(&resp);
    rc_http_free(h);
}

static void test_rc_http__wrong_ca_refused(void **state)
{
    struct fixture *f = *state;
    struct rc_http_tls tls = RC_HTTP_TLS_INIT;
    struct rc_http *h = NULL;
    struct rc_http_response resp = RC_HTTP_RESPONSE_INIT;
    struct rc_err err = RC_ERR_INIT;
    char ca2[TH_PATH];

    tls.ca_file = th_certs_path(ca2, &certs, "ca2.crt");
    assert_int_equal(rc_http_new(&h, &tls, &f->o, NULL, &err), RC_OK);
    assert_int_equal(get(f, h, "/api", "test-token-1", &resp, &err), RC_ETRANSPORT);
    assert_non_null(strstr(err.msg, "tls with 'https://127.0.0.1:"));
    assert_int_equal(resp.attempts, 1); /* not retried */
    assert_int_equal(f->sleeps.n, 0);
    rc_http_response_release(&resp);
    rc_http_free(h);
}

static void test_rc_http__insecure_only_when_asked(void **state)
{
    struct fixture *f = *state;
    struct rc_http_tls tls = RC_HTTP_TLS_INIT;
    struct rc_http *h = NULL;
    struct rc_http_response resp = RC_HTTP_RESPONSE_INIT;
    struct rc_err err = RC_ERR_INIT;

    /* no CA at all: the system store does not know the fake CA */
    assert_int_equal(rc_http_new(&h, &tls, &f->o, NULL, &err), RC_OK);
    assert_int_equal(get(f, h, "/api", "test-token-1", &resp, &err), RC_ETRANSPORT);
    rc_http_response_release(&resp);
    rc_http_free(h);
    tls.insecure = 1;
    assert_int_equal(rc_http_new(&h, &tls, &f->o, NULL, &err), RC_OK);
    assert_int_equal(get(f, h, "/api", "test-token-1", &resp, &err), RC_OK);
    assert_int_equal(resp.status, 200);
    rc_http_response_release(&resp);
    rc_http_free(h);
}

static void test_rc_http__tls_server_name(void **state)
{
    struct fixture *f = *state;
    struct rc_http_tls tls = RC_HTTP_TLS_INIT;
    struct rc_http *h = NULL;
    struct rc_http_response resp = RC_HTTP_RESPONSE_INIT;
    struct rc_err err = RC_ERR_INIT;

    tls.ca_file = f->ca;
    tls.server_name = "kube.test"; /* in the certificate's names */
    assert_int_equal(rc_http_new(&h, &tls, &f->o, NULL, &err), RC_OK);
    assert_int_equal(get(f, h, "/api", "test-token-1", &resp, &err), RC_OK);
    assert_int_equal(resp.status, 200);
    rc_http_response_release(&resp);
    rc_http_free(h);
    tls.server_name = "not-in-cert.test";
    assert_int_equal(rc_http_new(&h, &tls, &f->o, NULL, &err), RC_OK);
    assert_int_equal(get(f, h, "/api", "test-token-1", &resp, &err), RC_ETRANSPORT);
    assert_non_null(strstr(err.msg, "tls with"));
    rc_http_response_release(&resp);
    rc_http_free(h);
}

static void test_rc_http__429_honours_retry_after(void **state)
{
    struct fixture *f = *state;
    struct rc_http *h = open_ca_file(f);
    struct rc_http_response resp = RC_HTTP_RESPONSE_INIT;
    struct rc_err err = RC_ERR_INIT;
    cJSON *reqs;

    th_kube_faults(&f->kube, "[{\"path\": \"^/api/v1$\", \"status\": 429, \"retry_after\": 3, "
                             "\"count\": 2}]");
    assert_int_equal(get(f, h, "/api/v1", "test-token-1", &resp, &err), RC_OK);
    assert_int_equal(resp.status, 200);
    assert_int_equal(resp.attempts, 3);
    assert_int_equal(f->sleeps.n, 2);
    assert_int_equal(f->sleeps.ms[0], 3000);
    assert_int_equal(f->sleeps.ms[1], 3000);
    rc_http_response_release(&resp);
    reqs = th_kube_requests(&f->kube);
    assert_int_equal(th_kube_count(reqs, "GET", "/api/v1"), 3);
    cJSON_Delete(reqs);

    /* a Retry-After beyond the cap is capped */
    f->sleeps.n = 0;
    rc_http_free(h);
    f->o.retry_after_max_ms = 1500;
    h = open_ca_file(f);
    th_kube_faults(&f->kube, "[{\"path\": \"^/api$\", \"status\": 429, \"retry_after\": 60, "
                             "\"count\": 1}]");
    assert_int_equal(get(f, h, "/api", "test-token-1", &resp, &err), RC_OK);
    assert_int_equal(resp.status, 200);
    assert_int_equal(f->sleeps.ms[0], 1500);
    rc_http_response_release(&resp);
    rc_http_free(h);
}

static void test_rc_http__500_retried_with_backoff(void **state)
{
    struct fixture *f = *state;
    struct rc_http *h = open_ca_file(f);
    struct rc_http_response resp = RC_HTTP_RESPONSE_INIT;
    struct rc_err err = RC_ERR_INIT;

    th_kube_faults(&f->kube, "[{\"path\": \"^/apis$\", \"status\": 500, \"count\": 2}]");
    assert_int_equal(get(f, h, "/apis", "test-token-1", &resp, &err), RC_OK);
    assert_int_equal(resp.status, 200);
    assert_int_equal(resp.attempts, 3);
    assert_int_equal(f->sleeps.n, 2);
    assert_int_equal(f->sleeps.ms[0], 250);
    assert_int_equal(f->sleeps.ms[1], 500);
    rc_http_response_release(&resp);

    /* attempts run out: the last 500 is handed back */
    f->sleeps.n = 0;
    th_kube_faults(&f->kube, "[{\"path\": \"^/apis$\", \"status\": 500}]");
    assert_int_equal(get(f, h, "/apis", "test-token-1", &resp, &err), RC_OK);
    assert_int_equal(resp.status, 500);
    assert_int_equal(resp.attempts, 4);
    assert_int_equal(f->sleeps.n, 3);
    assert_int_equal(f->sleeps.ms[2], 1000);
    assert_non_null(strstr(resp.body.ptr, "InternalError"));
    rc_http_response_release(&resp);
    rc_http_free(h);
}

static void test_rc_http__dropped_connection_retried(void **state)
{
    struct fixture *f = *state;
    struct rc_http *h = open_ca_file(f);
    struct rc_http_response resp = RC_HTTP_RESPONSE_INIT;
    struct rc_err err = RC_ERR_INIT;

    th_kube_faults(&f->kube, "[{\"path\": \"^/api/v1$\", \"drop\": true, \"count\": 1}]");
    assert_int_equal(get(f, h, "/api/v1", "test-token-1", &resp, &err), RC_OK);
    assert_int_equal(resp.status, 200);
    assert_int_equal(resp.attempts, 2);
    rc_http_response_release(&resp);

    th_kube_faults(&f->kube, "[{\"path\": \"^/api/v1$\", \"drop\": true}]");
    assert_int_equal(get(f, h, "/api/v1", "test-token-1", &resp, &err), RC_ETRANSPORT);
    assert_non_null(strstr(err.msg, "no answer from 'https://127.0.0.1:"));
    assert_int_equal(resp.attempts, 4);
    rc_http_response_release(&resp);
    rc_http_free(h);
}

static void test_rc_http__slow_response_times_out(void **state)
{
    struct fixture *f = *state;
    struct rc_http *h;
    struct rc_http_response resp = RC_HTTP_RESPONSE_INIT;
    struct rc_err err = RC_ERR_INIT;

    f->o.timeout_ms = 300;
    f->o.max_attempts = 2;
    h = open_ca_file(f);
    th_kube_faults(&f->kube, "[{\"path\": \"^/api$\", \"delay\": 3}]");
    assert_int_equal(get(f, h, "/api", "test-token-1", &resp, &err), RC_ETRANSPORT);
    assert_non_null(strstr(err.msg, "timed out"));
    assert_int_equal(resp.attempts, 2);
    rc_http_response_release(&resp);
    rc_http_free(h);
}

static void test_rc_http__body_is_capped(void **state)
{
    struct fixture *f = *state;
    struct rc_http *h;
    struct rc_http_response resp = RC_HTTP_RESPONSE_INIT;
    struct rc_err err = RC_ERR_INIT;

    f->o.max_body = 64;
    h = open_ca_file(f);
    assert_int_equal(get(f, h, "/api/v1", "test-token-1", &resp, &err), RC_ERROR);
    assert_non_null(strstr(err.msg, "too large"));
    assert_true(resp.body.len <= 64);
    assert_int_equal(resp.attempts, 1);
    rc_http_response_release(&resp);
    rc_http_free(h);
}

/* The fd of this process's TCP connection to 127.0.0.1:port, or -1. */
static int connection_to(int port)
{
    int found = -1;

    for (int fd = 3; fd < 1024 && found < 0; fd++) {
        struct sockaddr_in peer;
        socklen_t len = sizeof(peer);
        int type = 0;
        socklen_t tlen = sizeof(type);
        if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tlen) < 0 || type != SOCK_STREAM ||
            getpeername(fd, (struct sockaddr *)&peer, &len) < 0 || peer.sin_family != AF_INET)
            continue;
        if (ntohs(peer.sin_port) == port)
            found = fd;
    }
    return found;
}

static int int_opt(int fd, int level, int name)
{
    int v = -1;
    socklen_t len = sizeof(v);

    assert_int_equal(getsockopt(fd, level, name, &v, &len), 0);
    return v;
}

/* A connection to an API server finds out a dead peer in about half a minute (keepalive
 * probes, an unacknowledged-data timeout), not in the kernel's two hours: it is what a watch
 * that hears nothing relies on. Checked on the live connection the context keeps. */
static void test_rc_http__dead_peer_found_out(void **state)
{
    struct fixture *f = *state;
    struct rc_http *h = open_ca_file(f);
    struct rc_http_response resp = RC_HTTP_RESPONSE_INIT;
    struct rc_err err = RC_ERR_INIT;
    int fd;

    assert_int_equal(get(f, h, "/api/v1", "test-token-1", &resp, &err), RC_OK);
    assert_int_equal(resp.status, 200);
    rc_http_response_release(&resp);
    fd = connection_to(f->kube.port);
    assert_true(fd >= 0); /* kept open for the next request */
    assert_int_equal(int_opt(fd, SOL_SOCKET, SO_KEEPALIVE), 1);
    assert_int_equal(int_opt(fd, IPPROTO_TCP, TCP_KEEPIDLE), RC_HTTP_KEEPIDLE_S);
    assert_int_equal(int_opt(fd, IPPROTO_TCP, TCP_KEEPINTVL), RC_HTTP_KEEPINTVL_S);
    assert_int_equal(int_opt(fd, IPPROTO_TCP, TCP_KEEPCNT), RC_HTTP_KEEPCNT);
    assert_int_equal(int_opt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT), RC_HTTP_USER_TIMEOUT_MS);
    rc_http_free(h);
    assert_int_equal(connection_to(f->kube.port), -1);
}

static void test_rc_http__token_never_logged(void **state)
{
    struct fixture *f = *state;
    struct rc_log log = {RC_LOG_DEBUG, 0, NULL};
    struct rc_http *h = NULL;
    struct rc_http_tls tls = RC_HTTP_TLS_INIT;
    struct rc_http_response resp = RC_HTTP_RESPONSE_INIT;
    struct rc_err err = RC_ERR_INIT;
    char *text = NULL;
    size_t len = 0;

    log.out = open_memstream(&text, &len);
    tls.ca_file = f->ca;
    assert_int_equal(rc_http_new(&h, &tls, &f->o, &log, &err), RC_OK);
    th_kube_faults(&f->kube, "[{\"path\": \"^/api$\", \"status\": 503, \"count\": 1}]");
    assert_int_equal(get(f, h, "/api", "s3cr3t-token-value", &resp, &err), RC_OK);
    assert_int_equal(resp.status, 401);
    rc_http_response_release(&resp);
    th_kube_faults(&f->kube, "[{\"path\": \"^/api$\", \"drop\": true}]");
    assert_int_equal(get(f, h, "/api", "s3cr3t-token-value", &resp, &err), RC_ETRANSPORT);
    rc_http_response_release(&resp);
    rc_http_free(h);
    fclose(log.out);
    assert_non_null(strstr(text, "GET https://127.0.0.1:")); /* debug lines were written */
    assert_null(strstr(text, "s3cr3t"));
    assert_null(strstr(err.msg, "s3cr3t"));
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_rc_http__libcurl_loaded_by_the_first_context, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_rc_http__token_and_ca_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rc_http__ca_data_and_client_cert_data, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_rc_http__client_cert_files, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rc_http__wrong_ca_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rc_http__insecure_only_when_asked, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rc_http__tls_server_name, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rc_http__429_honours_retry_after, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rc_http__500_retried_with_backoff, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rc_http__dropped_connection_retried, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rc_http__slow_response_times_out, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rc_http__body_is_capped, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rc_http__token_never_logged, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rc_http__dead_peer_found_out, setup, teardown),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
