/*
 * rc_http.c - HTTPS requests over libcurl (the only file that calls it), with TLS setup,
 * connection reuse, bounded bodies and the retry schedule documented in rc_http.h.
 * It knows nothing about Kubernetes: paths, Status objects and credentials are rc_kube's.
 */
#include "rc_http.h"
#include "rc_mem.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <curl/curl.h>

#include "rc_banned.h"

struct rc_http {
    CURL *curl;
    struct rc_http_options o;
    const struct rc_log *log;
    char *cert;
    size_t cert_len;
    char *key;
    size_t key_len;
    char *ca;
    size_t ca_len;
    char *server_name;
    char errbuf[CURL_ERROR_SIZE];
};

/* State for one attempt's callbacks. */
struct attempt {
    struct rc_http_response *resp;
    int too_big;
    struct rc_err body_err;
};

int rc_http_global_init(struct rc_err *err)
{
    CURLcode rc = curl_global_init(CURL_GLOBAL_DEFAULT);

    /* CURLOPT_NOSIGNAL (needed with threads) leaves SIGPIPE to us: a server that drops the
     * connection must not kill the process */
    signal(SIGPIPE, SIG_IGN);
    if (rc != CURLE_OK)
        return rc_err_set(err, RC_ERROR, "cannot initialise libcurl: %s", curl_easy_strerror(rc));
    return RC_OK;
}

void rc_http_global_cleanup(void)
{
    curl_global_cleanup();
}

static char *dupmem(const char *p, size_t n)
{
    char *d = rc_xmalloc(n + 1);

    memcpy(d, p, n);
    d[n] = '\0';
    return d;
}

/* Debug lines only when a logger was given: a library call without one stays quiet. */
#define debug(h, ...)                                                                              \
    do {                                                                                           \
        if ((h)->log)                                                                              \
            rc_log_debug((h)->log, __VA_ARGS__);                                                   \
    } while (0)

static void default_sleep(void *payload, long ms)
{
    struct timespec ts;

    (void)payload;
    ts.tv_sec = ms / 1000;
    ts.tv_nsec = (ms % 1000) * 1000000L;
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

long rc_http_backoff_ms(const struct rc_http_options *o, int n)
{
    long ms = o->backoff_initial_ms;

    for (int i = 2; i < n && ms < o->backoff_max_ms; i++)
        ms *= 2;
    return ms > o->backoff_max_ms ? o->backoff_max_ms : ms;
}

static size_t on_body(char *ptr, size_t size, size_t nmemb, void *userdata)
{
    struct attempt *at = userdata;
    size_t n = size * nmemb;

    if (rc_buf_add(&at->resp->body, ptr, n, &at->body_err) < 0) {
        at->too_big = 1;
        return 0; /* aborts the transfer with CURLE_WRITE_ERROR */
    }
    return n;
}

/* Header lines: only Content-Type and Retry-After are kept. */
static size_t on_header(char *ptr, size_t size, size_t nmemb, void *userdata)
{
    struct attempt *at = userdata;
    size_t n = size * nmemb;
    size_t len = n;
    const char *v;

    while (len && (ptr[len - 1] == '\n' || ptr[len - 1] == '\r'))
        len--;
    if (len >= 5 && !strncmp(ptr, "HTTP/", 5)) {
        /* a new response (e.g. after 100 Continue): forget the previous headers */
        at->resp->content_type[0] = '\0';
        at->resp->retry_after = -1;
        return n;
    }
    if (len > 13 && !strncasecmp(ptr, "content-type:", 13)) {
        size_t vl;

        v = ptr + 13;
        while (v < ptr + len && (*v == ' ' || *v == '\t'))
            v++;
        vl = (size_t)(ptr + len - v);
        if (vl >= sizeof(at->resp->content_type))
            vl = sizeof(at->resp->content_type) - 1;
        memcpy(at->resp->content_type, v, vl);
        at->resp->content_type[vl] = '\0';
    } else if (len > 12 && !strncasecmp(ptr, "retry-after:", 12)) {
        char tmp[32];
        size_t vl;
        char *end;
        long secs;

        v = ptr + 12;
        while (v < ptr + len && (*v == ' ' || *v == '\t'))
            v++;
        vl = (size_t)(ptr + len - v);
        if (vl >= sizeof(tmp))
            return n; /* an HTTP date or junk: fall back to the backoff schedule */
        memcpy(tmp, v, vl);
        tmp[vl] = '\0';
        errno = 0;
        secs = strtol(tmp, &end, 10);
        if (!errno && end != tmp && *end == '\0' && secs >= 0)
            at->resp->retry_after = secs;
    }
    return n;
}

static void set_blob(CURL *c, CURLoption opt, const char *data, size_t len)
{
    struct curl_blob blob;

    blob.data = (void *)data;
    blob.len = len;
    blob.flags = CURL_BLOB_COPY;
    curl_easy_setopt(c, opt, &blob);
}

static void apply_client_cert(struct rc_http *h)
{
    if (h->cert) {
        set_blob(h->curl, CURLOPT_SSLCERT_BLOB, h->cert, h->cert_len);
        curl_easy_setopt(h->curl, CURLOPT_SSLCERTTYPE, "PEM");
    }
    if (h->key) {
        set_blob(h->curl, CURLOPT_SSLKEY_BLOB, h->key, h->key_len);
        curl_easy_setopt(h->curl, CURLOPT_SSLKEYTYPE, "PEM");
    }
}

int rc_http_new(struct rc_http **out, const struct rc_http_tls *tls,
                const struct rc_http_options *o, const struct rc_log *log, struct rc_err *err)
{
    struct rc_http_options def = RC_HTTP_OPTIONS_INIT;
    struct rc_http *h;

    *out = NULL;
    h = rc_xcalloc(1, sizeof(*h));
    h->o = o ? *o : def;
    if (h->o.max_attempts < 1)
        h->o.max_attempts = 1;
    if (!h->o.sleep_ms)
        h->o.sleep_ms = default_sleep;
    h->log = log;
    h->curl = curl_easy_init();
    if (!h->curl) {
        free(h);
        return rc_err_set(err, RC_ERROR, "cannot create a libcurl handle");
    }
    curl_easy_setopt(h->curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h->curl, CURLOPT_ERRORBUFFER, h->errbuf);
    curl_easy_setopt(h->curl, CURLOPT_CONNECTTIMEOUT_MS, h->o.connect_timeout_ms);
    curl_easy_setopt(h->curl, CURLOPT_TIMEOUT_MS, h->o.timeout_ms);
    curl_easy_setopt(h->curl, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(h->curl, CURLOPT_PROTOCOLS_STR, "https,http");
    curl_easy_setopt(h->curl, CURLOPT_USERAGENT, "rightplace/" RP_VERSION);
    curl_easy_setopt(h->curl, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(h->curl, CURLOPT_SSL_VERIFYHOST, 2L);
    curl_easy_setopt(h->curl, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h->curl, CURLOPT_HEADERFUNCTION, on_header);
    if (tls) {
        if (tls->ca_data) {
            h->ca = dupmem(tls->ca_data, tls->ca_len);
            h->ca_len = tls->ca_len;
            set_blob(h->curl, CURLOPT_CAINFO_BLOB, h->ca, h->ca_len);
        } else if (tls->ca_file) {
            curl_easy_setopt(h->curl, CURLOPT_CAINFO, tls->ca_file);
        }
        /* a cluster CA replaces the system store entirely, as in kubectl: no CA directory */
        if (tls->ca_data || tls->ca_file)
            curl_easy_setopt(h->curl, CURLOPT_CAPATH, NULL);
        if (tls->cert_data) {
            h->cert = dupmem(tls->cert_data, tls->cert_len);
            h->cert_len = tls->cert_len;
        } else if (tls->cert_file) {
            curl_easy_setopt(h->curl, CURLOPT_SSLCERT, tls->cert_file);
            curl_easy_setopt(h->curl, CURLOPT_SSLCERTTYPE, "PEM");
        }
        if (tls->key_data) {
            h->key = dupmem(tls->key_data, tls->key_len);
            h->key_len = tls->key_len;
        } else if (tls->key_file) {
            curl_easy_setopt(h->curl, CURLOPT_SSLKEY, tls->key_file);
            curl_easy_setopt(h->curl, CURLOPT_SSLKEYTYPE, "PEM");
        }
        apply_client_cert(h);
        if (tls->insecure) {
            curl_easy_setopt(h->curl, CURLOPT_SSL_VERIFYPEER, 0L);
            curl_easy_setopt(h->curl, CURLOPT_SSL_VERIFYHOST, 0L);
        }
        if (tls->server_name && *tls->server_name)
            h->server_name = rc_xstrdup(tls->server_name);
    }
    *out = h;
    return RC_OK;
}

void rc_http_set_client_cert(struct rc_http *h, const char *cert, size_t cert_len, const char *key,
                             size_t key_len)
{
    if (h->cert) {
        memset(h->cert, 0, h->cert_len);
        free(h->cert);
    }
    if (h->key) {
        memset(h->key, 0, h->key_len);
        free(h->key);
    }
    h->cert = cert ? dupmem(cert, cert_len) : NULL;
    h->cert_len = cert ? cert_len : 0;
    h->key = key ? dupmem(key, key_len) : NULL;
    h->key_len = key ? key_len : 0;
    apply_client_cert(h);
    /* new credentials: do not reuse a connection authenticated with the old ones */
    curl_easy_setopt(h->curl, CURLOPT_FRESH_CONNECT, 1L);
}

void rc_http_free(struct rc_http *h)
{
    if (!h)
        return;
    curl_easy_cleanup(h->curl);
    if (h->cert) {
        memset(h->cert, 0, h->cert_len);
        free(h->cert);
    }
    if (h->key) {
        memset(h->key, 0, h->key_len);
        free(h->key);
    }
    free(h->ca);
    free(h->server_name);
    free(h);
}

void rc_http_response_release(struct rc_http_response *resp)
{
    rc_buf_release(&resp->body);
    resp->status = 0;
    resp->content_type[0] = '\0';
    resp->retry_after = -1;
    resp->attempts = 0;
}

static int retryable_status(long status)
{
    return status == 429 || status == 500 || status == 502 || status == 503 || status == 504;
}

static int retryable_curl(CURLcode rc)
{
    switch (rc) {
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_GOT_NOTHING:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_PARTIAL_FILE:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
        return 1;
    default:
        return 0;
    }
}

/* The URL without its query: error messages and logs name the endpoint, not selectors. */
static void url_for_messages(char *out, size_t n, const char *url)
{
    size_t len = strcspn(url, "?");

    if (len >= n)
        len = n - 1;
    memcpy(out, url, len);
    out[len] = '\0';
}

/* One attempt. Returns RC_OK with resp filled, or an error with e set; *fatal says that
 * trying again cannot help (TLS refused, body too large). */
static int attempt_once(struct rc_http *h, const char *where, struct rc_http_response *resp,
                        int *fatal, struct rc_err *e)
{
    struct attempt at;
    CURLcode rc;

    memset(&at, 0, sizeof(at));
    at.resp = resp;
    *fatal = 0;
    rc_buf_reset(&resp->body);
    resp->status = 0;
    resp->content_type[0] = '\0';
    resp->retry_after = -1;
    h->errbuf[0] = '\0';

    curl_easy_setopt(h->curl, CURLOPT_WRITEDATA, &at);
    curl_easy_setopt(h->curl, CURLOPT_HEADERDATA, &at);
    rc = curl_easy_perform(h->curl);
    curl_easy_setopt(h->curl, CURLOPT_FRESH_CONNECT, 0L);
    if (at.too_big) {
        *fatal = 1;
        return rc_err_set(e, RC_ERROR, "response from '%s' is too large: %s", where,
                          at.body_err.msg);
    }
    if (rc != CURLE_OK) {
        const char *why = h->errbuf[0] ? h->errbuf : curl_easy_strerror(rc);

        if (!retryable_curl(rc)) {
            *fatal = 1;
            if (rc == CURLE_PEER_FAILED_VERIFICATION || rc == CURLE_SSL_CACERT_BADFILE ||
                rc == CURLE_SSL_CONNECT_ERROR || rc == CURLE_SSL_CERTPROBLEM)
                return rc_err_set(e, RC_ETRANSPORT, "tls with '%s' refused: %s", where, why);
        }
        if (rc == CURLE_OPERATION_TIMEDOUT)
            return rc_err_set(e, RC_ETRANSPORT, "request to '%s' timed out: %s", where, why);
        return rc_err_set(e, RC_ETRANSPORT, "no answer from '%s': %s", where, why);
    }
    curl_easy_getinfo(h->curl, CURLINFO_RESPONSE_CODE, &resp->status);
    return RC_OK;
}

/* tls-server-name: send SNI and check the certificate for that name, while connecting to
 * the URL's host. curl 7.88 has no option for it, so the URL names server_name and
 * CURLOPT_CONNECT_TO maps it to the real host. */
static int url_with_server_name(char **url_out, struct curl_slist **connect_to, const char *url,
                                const char *server_name, struct rc_err *err)
{
    CURLU *u = curl_url();
    char *host = NULL, *port = NULL, *out = NULL;
    struct rc_buf line = RC_BUF_INIT;
    int error = RC_OK;

    if (!u)
        return rc_err_set(err, RC_ERROR, "cannot parse url");
    if (curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) != CURLUE_OK ||
        curl_url_set(u, CURLUPART_HOST, server_name, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_URL, &out, 0) != CURLUE_OK) {
        error = rc_err_set(err, RC_EINVALID, "cannot use tls-server-name '%s'", server_name);
        goto done;
    }
    rc_buf_printf(&line, NULL, "%s:%s:%s:%s", server_name, port, host, port);
    *connect_to = curl_slist_append(NULL, line.ptr);
    *url_out = rc_xstrdup(out);
done:
    rc_buf_release(&line);
    curl_free(host);
    curl_free(port);
    curl_free(out);
    curl_url_cleanup(u);
    return error;
}

int rc_http_do(struct rc_http *h, const struct rc_http_request *req, struct rc_http_response *resp,
               struct rc_err *err)
{
    struct curl_slist *headers = NULL, *connect_to = NULL;
    struct rc_buf line = RC_BUF_INIT;
    struct rc_err e = RC_ERR_INIT;
    char *url = NULL;
    char where[512];
    int error = RC_OK;
    int max = req->no_retry ? 1 : h->o.max_attempts;

    rc_buf_init(&resp->body, h->o.max_body);
    resp->attempts = 0;
    resp->status = 0;
    url_for_messages(where, sizeof(where), req->url);

    if (h->server_name) {
        error = url_with_server_name(&url, &connect_to, req->url, h->server_name, err);
        if (error < 0)
            return error;
    }

    rc_buf_printf(&line, NULL, "Accept: %s", req->accept ? req->accept : "application/json");
    headers = curl_slist_append(headers, line.ptr);
    if (req->content_type) {
        rc_buf_reset(&line);
        rc_buf_printf(&line, NULL, "Content-Type: %s", req->content_type);
        headers = curl_slist_append(headers, line.ptr);
    }
    if (req->bearer) {
        rc_buf_reset(&line);
        rc_buf_printf(&line, NULL, "Authorization: Bearer %s", req->bearer);
        headers = curl_slist_append(headers, line.ptr);
        memset(line.ptr, 0, line.len);
    }
    headers = curl_slist_append(headers, "Expect:");
    rc_buf_release(&line);

    curl_easy_setopt(h->curl, CURLOPT_URL, url ? url : req->url);
    curl_easy_setopt(h->curl, CURLOPT_CONNECT_TO, connect_to);
    curl_easy_setopt(h->curl, CURLOPT_HTTPGET, 1L);
    if (req->body) {
        curl_easy_setopt(h->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)req->body_len);
        curl_easy_setopt(h->curl, CURLOPT_POSTFIELDS, req->body);
    }
    curl_easy_setopt(h->curl, CURLOPT_CUSTOMREQUEST, req->method);
    curl_easy_setopt(h->curl, CURLOPT_HTTPHEADER, headers);

    for (int n = 1; n <= max; n++) {
        long wait;
        int fatal = 0;

        resp->attempts = n;
        error = attempt_once(h, where, resp, &fatal, &e);
        if (error == RC_OK) {
            debug(h, "%s %s: %ld", req->method, where, resp->status);
            if (!retryable_status(resp->status) || n == max)
                break;
            wait = rc_http_backoff_ms(&h->o, n + 1);
            if (resp->status == 429 && resp->retry_after >= 0) {
                wait = resp->retry_after * 1000;
                if (wait > h->o.retry_after_max_ms)
                    wait = h->o.retry_after_max_ms;
            }
            debug(h, "retrying %s %s in %ld ms after status %ld", req->method, where, wait,
                  resp->status);
        } else {
            if (fatal || n == max)
                break;
            wait = rc_http_backoff_ms(&h->o, n + 1);
            debug(h, "retrying %s in %ld ms: %s", req->method, wait, e.msg);
            /* a connection that failed must not be reused */
            curl_easy_setopt(h->curl, CURLOPT_FRESH_CONNECT, 1L);
        }
        h->o.sleep_ms(h->o.sleep_payload, wait);
    }
    if (error < 0)
        rc_err_set(err, e.code, "%s", e.msg);
    /* do not keep pointers to the caller's strings in the handle */
    curl_easy_setopt(h->curl, CURLOPT_HTTPHEADER, NULL);
    curl_easy_setopt(h->curl, CURLOPT_CONNECT_TO, NULL);
    curl_easy_setopt(h->curl, CURLOPT_POSTFIELDS, NULL);
    curl_easy_setopt(h->curl, CURLOPT_HTTPGET, 1L);
    curl_slist_free_all(headers);
    curl_slist_free_all(connect_to);
    free(url);
    return error;
}
