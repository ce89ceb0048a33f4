/*
 * rc_http.c - HTTPS requests over libcurl (the only file that calls it), with TLS setup,
 * connection reuse, bounded bodies and the retry schedule documented in rc_http.h.
 * It knows nothing about Kubernetes: paths, Status objects and credentials are rc_kube's.
 */
#include "rc_http.h"
#include "rc_mem.h"

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <dlfcn.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sys/socket.h>

#include <curl/curl.h>

#include "rc_banned.h"

/*
 * libcurl is loaded when the first connection context is made, not linked. A process that
 * talks to no API server (a pass over a fleet of simulated clusters, explain, replay, a
 * command that fails before it observes) never sends a request, and loading libcurl with
 * what it links (TLS, Kerberos, LDAP, HTTP/2, IDN, ...) took 8 ms of every process's start, a
 * quarter of such a pass with nothing to do (bench/RESULTS.md, note 67). A pass that
 * observes live clusters pays the same 8 ms at its first connection instead. Each function
 * is typed from curl.h, so a call is checked as a linked call would be (but for curl's
 * GCC-only setopt type check, which needs the linked name). The soname is the ABI that
 * curl.h describes: libcurl's 4.
 */
#define CURL_SONAME "libcurl.so.4"

/* The same, for packagers: an ELF note naming the library the program loads with dlopen, in
 * the freedesktop.org "ELF dlopen metadata" format (section .note.dlopen, owner "FDO", a
 * JSON array), which tests/install/container.sh reads as ldd reads the linked ones. */
#define CURL_NOTE_JSON                                                                             \
    "[{\"feature\":\"http\",\"description\":\"requests to the clusters' API servers\","            \
    "\"priority\":\"required\",\"soname\":[\"" CURL_SONAME "\"]}]"
__attribute__((used, section(".note.dlopen"))) _Alignas(4) static const struct {
    struct {
        uint32_t n_namesz, n_descsz, n_type;
    } nhdr;
    char name[sizeof("FDO")];
    _Alignas(4) char json[sizeof(CURL_NOTE_JSON)];
} curl_note = {{sizeof("FDO"), sizeof(CURL_NOTE_JSON), 0x407c0c0a}, "FDO", CURL_NOTE_JSON};

#define CURL_FUNCTIONS(X)                                                                          \
    X(global_init)                                                                                 \
    X(global_cleanup)                                                                              \
    X(easy_init)                                                                                   \
    X(easy_cleanup)                                                                                \
    X(easy_setopt)                                                                                 \
    X(easy_getinfo)                                                                                \
    X(easy_perform)                                                                                \
    X(easy_strerror)                                                                               \
    X(free)                                                                                        \
    X(multi_init)                                                                                  \
    X(multi_cleanup)                                                                               \
    X(multi_setopt)                                                                                \
    X(multi_add_handle)                                                                            \
    X(multi_remove_handle)                                                                         \
    X(multi_perform)                                                                               \
    X(multi_poll)                                                                                  \
    X(multi_timeout)                                                                               \
    X(multi_info_read)                                                                             \
    X(slist_append)                                                                                \
    X(slist_free_all)                                                                              \
    X(url)                                                                                         \
    X(url_cleanup)                                                                                 \
    X(url_get)                                                                                     \
    X(url_set)

static struct {
#define CURL_MEMBER(f) __typeof__(curl_##f) *f;
    CURL_FUNCTIONS(CURL_MEMBER)
#undef CURL_MEMBER
} curl;

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static int curl_ready;         /* set once, inside curl_once */
static char curl_problem[256]; /* why it is not, for every caller */

static void curl_load(void)
{
    void *lib = dlopen(CURL_SONAME, RTLD_NOW | RTLD_LOCAL);
    CURLcode rc;

    if (!lib) {
        const char *why = dlerror();
        snprintf(curl_problem, sizeof(curl_problem), "cannot load %s: %s", CURL_SONAME,
                 why ? why : "unknown error");
        return;
    }
#define CURL_RESOLVE(f)                                                                            \
    if (!(*(void **)&curl.f = dlsym(lib, "curl_" #f))) {                                           \
        snprintf(curl_problem, sizeof(curl_problem), "%s lacks curl_%s", CURL_SONAME, #f);         \
        return;                                                                                    \
    }
    CURL_FUNCTIONS(CURL_RESOLVE)
#undef CURL_RESOLVE
    /* libcurl is never unloaded: what it initialises (OpenSSL) stays for the process */
    if ((rc = curl.global_init(CURL_GLOBAL_DEFAULT)) != CURLE_OK) {
        snprintf(curl_problem, sizeof(curl_problem), "cannot initialise libcurl: %s",
                 curl.easy_strerror(rc));
        return;
    }
    curl_ready = 1;
}

int rc_http_load(struct rc_err *err)
{
    if (pthread_once(&curl_once, curl_load) != 0)
        return rc_err_set(err, RC_ERROR, "cannot load libcurl");
    if (!curl_ready)
        return rc_err_set(err, RC_ERROR,
                          "%s; rightplace needs it to reach the clusters' API servers (Debian: "
                          "the libcurl4 package)",
                          curl_problem);
    return RC_OK;
}

int rc_http_loaded(void)
{
    return curl_ready;
}

struct slot; /* one transfer of rc_http_do_many */

struct rc_http {
    CURL *curl;
    CURLM *multi;        /* rc_http_do_many: its connection cache is shared by the slots */
    struct slot **slots; /* easy handles kept between calls (their TLS sessions too); each
                            allocated on its own: libcurl keeps pointers into it */
    size_t nslots;
    unsigned cert_gen; /* bumped when the client certificate changes */
    struct rc_http_options o;
    const struct rc_log *log;
    char *cert;
    size_t cert_len;
    char *key;
    size_t key_len;
    char *ca;
    size_t ca_len;
    char *server_name;
    char *ca_file, *cert_file, *key_file;
    int insecure;
    char errbuf[CURL_ERROR_SIZE];
    const struct rc_http_request *req; /* in flight on `curl` (rc_http_do) */
};

/* State for one attempt's callbacks. */
struct attempt {
    struct rc_http_response *resp;
    int too_big;
    struct rc_err body_err;
    CURL *c;
    const struct rc_http_request *req; /* its on_data and stop */
    int ended;                         /* on_data or stop ended the transfer */
};

int rc_http_global_init(struct rc_err *err)
{
    (void)err;
    /* CURLOPT_NOSIGNAL (needed with threads) leaves SIGPIPE to us: a server that drops the
     * connection must not kill the process */
    signal(SIGPIPE, SIG_IGN);
    return RC_OK;
}

void rc_http_global_cleanup(void)
{
    if (curl_ready)
        curl.global_cleanup();
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

    if (at->req && at->req->on_data) {
        long status = 0;

        curl.easy_getinfo(at->c, CURLINFO_RESPONSE_CODE, &status);
        if (status >= 200 && status < 300) {
            if (at->req->on_data(at->req->data_payload, ptr, n)) {
                at->ended = 1;
                return 0;
            }
            return n;
        }
    }
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

/* Called by libcurl at least once a second while a transfer lasts, even when nothing
 * arrives: how a caller's stop flag ends a stream that is waiting for its next event. */
static int on_progress(void *userdata, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                       curl_off_t ulnow)
{
    struct attempt *at = userdata;

    (void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
    if (at->req && at->req->stop && *at->req->stop) {
        at->ended = 1;
        return 1; /* CURLE_ABORTED_BY_CALLBACK */
    }
    return 0;
}

static void set_blob(CURL *c, CURLoption opt, const char *data, size_t len)
{
    struct curl_blob blob;

    blob.data = (void *)data;
    blob.len = len;
    blob.flags = CURL_BLOB_COPY;
    curl.easy_setopt(c, opt, &blob);
}

static void apply_client_cert(struct rc_http *h, CURL *c)
{
    if (h->cert) {
        set_blob(c, CURLOPT_SSLCERT_BLOB, h->cert, h->cert_len);
        curl.easy_setopt(c, CURLOPT_SSLCERTTYPE, "PEM");
    } else if (h->cert_file) {
        curl.easy_setopt(c, CURLOPT_SSLCERT, h->cert_file);
        curl.easy_setopt(c, CURLOPT_SSLCERTTYPE, "PEM");
    }
    if (h->key) {
        set_blob(c, CURLOPT_SSLKEY_BLOB, h->key, h->key_len);
        curl.easy_setopt(c, CURLOPT_SSLKEYTYPE, "PEM");
    } else if (h->key_file) {
        curl.easy_setopt(c, CURLOPT_SSLKEY, h->key_file);
        curl.easy_setopt(c, CURLOPT_SSLKEYTYPE, "PEM");
    }
}

void rc_http_tune_socket(int fd, unsigned int unacked)
{
    int on = 1, idle = RC_HTTP_KEEPIDLE_S, intvl = RC_HTTP_KEEPINTVL_S, cnt = RC_HTTP_KEEPCNT;

    setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof(on));
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
    setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &unacked, sizeof(unacked));
}

/* Each new connection to an API server, before it connects. */
static int on_socket(void *payload, curl_socket_t fd, curlsocktype purpose)
{
    (void)payload;
    if (purpose == CURLSOCKTYPE_IPCXN)
        rc_http_tune_socket(fd, RC_HTTP_USER_TIMEOUT_MS);
    return CURL_SOCKOPT_OK;
}

/* Everything an easy handle of h needs besides the request itself. */
static void configure(struct rc_http *h, CURL *c, char *errbuf)
{
    curl.easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl.easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
    curl.easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, h->o.connect_timeout_ms);
    curl.easy_setopt(c, CURLOPT_TIMEOUT_MS, h->o.timeout_ms);
    curl.easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
    curl.easy_setopt(c, CURLOPT_SOCKOPTFUNCTION, on_socket);
    curl.easy_setopt(c, CURLOPT_PROTOCOLS_STR, "https,http");
    curl.easy_setopt(c, CURLOPT_USERAGENT, "rightplace/" RP_VERSION);
    /* HTTP/2 when the server offers it in the TLS handshake (ALPN), else HTTP/1.1 keep-alive */
    curl.easy_setopt(c, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
    curl.easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 1L);
    curl.easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 2L);
    curl.easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl.easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    if (h->ca)
        set_blob(c, CURLOPT_CAINFO_BLOB, h->ca, h->ca_len);
    else if (h->ca_file)
        curl.easy_setopt(c, CURLOPT_CAINFO, h->ca_file);
    /* a cluster CA replaces the system store entirely, as in kubectl: no CA directory */
    if (h->ca || h->ca_file)
        curl.easy_setopt(c, CURLOPT_CAPATH, NULL);
    apply_client_cert(h, c);
    if (h->insecure) {
        curl.easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
        curl.easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
    }
}

int rc_http_new(struct rc_http **out, const struct rc_http_tls *tls,
                const struct rc_http_options *o, const struct rc_log *log, struct rc_err *err)
{
    struct rc_http_options def = RC_HTTP_OPTIONS_INIT;
    struct rc_http *h;

    *out = NULL;
    if (rc_http_load(err) < 0)
        return RC_ERROR;
    h = rc_xcalloc(1, sizeof(*h));
    h->o = o ? *o : def;
    if (h->o.max_attempts < 1)
        h->o.max_attempts = 1;
    if (!h->o.sleep_ms)
        h->o.sleep_ms = default_sleep;
    h->log = log;
    h->curl = curl.easy_init();
    if (!h->curl) {
        free(h);
        return rc_err_set(err, RC_ERROR, "cannot create a libcurl handle");
    }
    if (tls) {
        if (tls->ca_data) {
            h->ca = dupmem(tls->ca_data, tls->ca_len);
            h->ca_len = tls->ca_len;
        } else if (tls->ca_file) {
            h->ca_file = rc_xstrdup(tls->ca_file);
        }
        if (tls->cert_data) {
            h->cert = dupmem(tls->cert_data, tls->cert_len);
            h->cert_len = tls->cert_len;
        } else if (tls->cert_file) {
            h->cert_file = rc_xstrdup(tls->cert_file);
        }
        if (tls->key_data) {
            h->key = dupmem(tls->key_data, tls->key_len);
            h->key_len = tls->key_len;
        } else if (tls->key_file) {
            h->key_file = rc_xstrdup(tls->key_file);
        }
        h->insecure = tls->insecure;
        if (tls->server_name && *tls->server_name)
            h->server_name = rc_xstrdup(tls->server_name);
    }
    configure(h, h->curl, h->errbuf);
    *out = h;
    return RC_OK;
}

static void wipe(char **p, size_t *len)
{
    if (*p) {
        memset(*p, 0, *len);
        free(*p);
    }
    *p = NULL;
    *len = 0;
}

void rc_http_set_client_cert(struct rc_http *h, const char *cert, size_t cert_len, const char *key,
                             size_t key_len)
{
    wipe(&h->cert, &h->cert_len);
    wipe(&h->key, &h->key_len);
    h->cert = cert ? dupmem(cert, cert_len) : NULL;
    h->cert_len = cert ? cert_len : 0;
    h->key = key ? dupmem(key, key_len) : NULL;
    h->key_len = key ? key_len : 0;
    apply_client_cert(h, h->curl);
    /* new credentials: do not reuse a connection authenticated with the old ones */
    curl.easy_setopt(h->curl, CURLOPT_FRESH_CONNECT, 1L);
    h->cert_gen++;
}

static void slots_free(struct rc_http *h);

void rc_http_free(struct rc_http *h)
{
    if (!h)
        return;
    slots_free(h);
    curl.easy_cleanup(h->curl);
    wipe(&h->cert, &h->cert_len);
    wipe(&h->key, &h->key_len);
    free(h->ca);
    free(h->ca_file);
    free(h->cert_file);
    free(h->key_file);
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

void rc_http_without_query(char *out, size_t n, const char *url)
{
    size_t len = strcspn(url, "?");

    if (len >= n)
        len = n - 1;
    memcpy(out, url, len);
    out[len] = '\0';
}

static void reset_response(struct rc_http_response *resp)
{
    rc_buf_reset(&resp->body);
    resp->status = 0;
    resp->too_large = 0;
    resp->content_type[0] = '\0';
    resp->retry_after = -1;
}

/* The outcome of one attempt on easy handle c (curl's result rc). Returns RC_OK with resp
 * filled, or an error with e set; *fatal says that trying again cannot help (TLS refused,
 * body too large). */
static int finish_attempt(CURL *c, const char *errbuf, CURLcode rc, const struct attempt *at,
                          const char *where, struct rc_http_response *resp, int *fatal,
                          struct rc_err *e)
{
    *fatal = 0;
    curl.easy_setopt(c, CURLOPT_FRESH_CONNECT, 0L);
    if (at->ended) {
        /* the caller ended it: an answer when a status had come, else nothing to retry */
        *fatal = 1;
        curl.easy_getinfo(c, CURLINFO_RESPONSE_CODE, &resp->status);
        if (resp->status)
            return RC_OK;
        return rc_err_set(e, RC_ETRANSPORT, "request to '%s' stopped before an answer", where);
    }
    if (at->too_big) {
        *fatal = 1;
        resp->too_large = 1;
        return rc_err_set(e, RC_ERROR, "response from '%s' is too large: %s", where,
                          at->body_err.msg);
    }
    if (rc != CURLE_OK) {
        const char *why = errbuf[0] ? errbuf : curl.easy_strerror(rc);

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
    curl.easy_getinfo(c, CURLINFO_RESPONSE_CODE, &resp->status);
    return RC_OK;
}

/* One attempt on the single handle. */
static int attempt_once(struct rc_http *h, const char *where, struct rc_http_response *resp,
                        int *fatal, struct rc_err *e)
{
    struct attempt at;
    CURLcode rc;

    memset(&at, 0, sizeof(at));
    at.resp = resp;
    at.c = h->curl;
    at.req = h->req;
    reset_response(resp);
    h->errbuf[0] = '\0';
    curl.easy_setopt(h->curl, CURLOPT_WRITEDATA, &at);
    curl.easy_setopt(h->curl, CURLOPT_HEADERDATA, &at);
    curl.easy_setopt(h->curl, CURLOPT_XFERINFODATA, &at);
    rc = curl.easy_perform(h->curl);
    return finish_attempt(h->curl, h->errbuf, rc, &at, where, resp, fatal, e);
}

/* After attempt n of max: the wait before the next one, or -1 when there is none (success,
 * a final status, a fatal error, attempts exhausted). */
static long retry_wait(struct rc_http *h, const struct rc_http_request *req, const char *where,
                       int error, int fatal, const struct rc_http_response *resp,
                       const struct rc_err *e, int n, int max)
{
    long wait;

    if (error == RC_OK) {
        debug(h, "%s %s: %ld", req->method, where, resp->status);
        if (!retryable_status(resp->status) || n == max)
            return -1;
        wait = rc_http_backoff_ms(&h->o, n + 1);
        if (resp->status == 429 && resp->retry_after >= 0) {
            wait = resp->retry_after * 1000;
            if (wait > h->o.retry_after_max_ms)
                wait = h->o.retry_after_max_ms;
        }
        debug(h, "retrying %s %s in %ld ms after status %ld", req->method, where, wait,
              resp->status);
        return wait;
    }
    if (fatal || n == max)
        return -1;
    wait = rc_http_backoff_ms(&h->o, n + 1);
    debug(h, "retrying %s in %ld ms: %s", req->method, wait, e->msg);
    return wait;
}

/* tls-server-name: send SNI and check the certificate for that name, while connecting to
 * the URL's host. curl 7.88 has no option for it, so the URL names server_name and
 * CURLOPT_CONNECT_TO maps it to the real host. */
static int url_with_server_name(char **url_out, struct curl_slist **connect_to, const char *url,
                                const char *server_name, struct rc_err *err)
{
    CURLU *u = curl.url();
    char *host = NULL, *port = NULL, *out = NULL;
    struct rc_buf line = RC_BUF_INIT;
    int error = RC_OK;

    if (!u)
        return rc_err_set(err, RC_ERROR, "cannot parse url");
    if (curl.url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK ||
        curl.url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK ||
        curl.url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) != CURLUE_OK ||
        curl.url_set(u, CURLUPART_HOST, server_name, 0) != CURLUE_OK ||
        curl.url_get(u, CURLUPART_URL, &out, 0) != CURLUE_OK) {
        error = rc_err_set(err, RC_EINVALID, "cannot use tls-server-name '%s'", server_name);
        goto done;
    }
    rc_buf_printf(&line, NULL, "%s:%s:%s:%s", server_name, port, host, port);
    *connect_to = curl.slist_append(NULL, line.ptr);
    *url_out = rc_xstrdup(out);
done:
    rc_buf_release(&line);
    curl.free(host);
    curl.free(port);
    curl.free(out);
    curl.url_cleanup(u);
    return error;
}

/* A request made ready for libcurl: headers, URL (tls-server-name), the URL for messages. */
struct prepared {
    struct curl_slist *headers, *connect_to;
    char *url;
    char where[512];
};

static void prepared_release(struct prepared *p)
{
    curl.slist_free_all(p->headers);
    curl.slist_free_all(p->connect_to);
    free(p->url);
    memset(p, 0, sizeof(*p));
}

static int prepare(struct rc_http *h, const struct rc_http_request *req, struct prepared *p,
                   struct rc_err *err)
{
    struct rc_buf line = RC_BUF_INIT;
    int error;

    memset(p, 0, sizeof(*p));
    rc_http_without_query(p->where, sizeof(p->where), req->url);
    if (h->server_name) {
        error = url_with_server_name(&p->url, &p->connect_to, req->url, h->server_name, err);
        if (error < 0)
            return error;
    }
    rc_buf_printf(&line, NULL, "Accept: %s", req->accept ? req->accept : "application/json");
    p->headers = curl.slist_append(p->headers, line.ptr);
    if (req->content_type) {
        rc_buf_reset(&line);
        rc_buf_printf(&line, NULL, "Content-Type: %s", req->content_type);
        p->headers = curl.slist_append(p->headers, line.ptr);
    }
    if (req->bearer) {
        rc_buf_reset(&line);
        rc_buf_printf(&line, NULL, "Authorization: Bearer %s", req->bearer);
        p->headers = curl.slist_append(p->headers, line.ptr);
        memset(line.ptr, 0, line.len);
    }
    p->headers = curl.slist_append(p->headers, "Expect:");
    rc_buf_release(&line);
    return RC_OK;
}

static void set_request(CURL *c, const struct rc_http_request *req, const struct prepared *p)
{
    curl.easy_setopt(c, CURLOPT_URL, p->url ? p->url : req->url);
    curl.easy_setopt(c, CURLOPT_CONNECT_TO, p->connect_to);
    curl.easy_setopt(c, CURLOPT_HTTPGET, 1L);
    if (req->body) {
        curl.easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)req->body_len);
        curl.easy_setopt(c, CURLOPT_POSTFIELDS, req->body);
    }
    curl.easy_setopt(c, CURLOPT_CUSTOMREQUEST, req->method);
    curl.easy_setopt(c, CURLOPT_HTTPHEADER, p->headers);
}

/* Do not keep pointers to the caller's strings in the handle. */
static void clear_request(CURL *c)
{
    curl.easy_setopt(c, CURLOPT_HTTPHEADER, NULL);
    curl.easy_setopt(c, CURLOPT_CONNECT_TO, NULL);
    curl.easy_setopt(c, CURLOPT_POSTFIELDS, NULL);
    curl.easy_setopt(c, CURLOPT_HTTPGET, 1L);
}

int rc_http_do(struct rc_http *h, const struct rc_http_request *req, struct rc_http_response *resp,
               struct rc_err *err)
{
    struct prepared p;
    struct rc_err e = RC_ERR_INIT;
    int error = RC_OK;
    int max = req->no_retry ? 1 : h->o.max_attempts;

    rc_buf_init(&resp->body, h->o.max_body);
    resp->attempts = 0;
    resp->status = 0;
    if ((error = prepare(h, req, &p, err)) < 0)
        return error;
    set_request(h->curl, req, &p);
    h->req = req;
    if (req->stop) {
        curl.easy_setopt(h->curl, CURLOPT_NOPROGRESS, 0L);
        curl.easy_setopt(h->curl, CURLOPT_XFERINFOFUNCTION, on_progress);
    }
    if (req->timeout_ms > 0)
        curl.easy_setopt(h->curl, CURLOPT_TIMEOUT_MS, req->timeout_ms);
    for (int n = 1; n <= max; n++) {
        long wait;
        int fatal = 0;

        resp->attempts = n;
        error = attempt_once(h, p.where, resp, &fatal, &e);
        wait = retry_wait(h, req, p.where, error, fatal, resp, &e, n, max);
        if (wait < 0)
            break;
        if (error < 0) /* a connection that failed must not be reused */
            curl.easy_setopt(h->curl, CURLOPT_FRESH_CONNECT, 1L);
        h->o.sleep_ms(h->o.sleep_payload, wait);
    }
    if (error < 0)
        rc_err_set(err, e.code, "%s", e.msg);
    if (req->stop)
        curl.easy_setopt(h->curl, CURLOPT_NOPROGRESS, 1L);
    if (req->timeout_ms > 0)
        curl.easy_setopt(h->curl, CURLOPT_TIMEOUT_MS, h->o.timeout_ms);
    h->req = NULL;
    clear_request(h->curl);
    prepared_release(&p);
    return error;
}

/* ==== Many requests at once (curl multi) ==== */

struct slot {
    CURL *c;
    char errbuf[CURL_ERROR_SIZE];
    unsigned cert_gen;
    int busy;    /* a request is assigned */
    int waiting; /* between attempts, until wake */
    long long wake;
    size_t idx;
    int attempt;
    struct attempt at;
    struct prepared p;
};

#define RC_HTTP_POLL_MAX_MS 5

static long long now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void slots_free(struct rc_http *h)
{
    for (size_t i = 0; i < h->nslots; i++) {
        if (h->slots[i]->busy && !h->slots[i]->waiting)
            curl.multi_remove_handle(h->multi, h->slots[i]->c);
        prepared_release(&h->slots[i]->p);
        curl.easy_cleanup(h->slots[i]->c);
        free(h->slots[i]);
    }
    free(h->slots);
    h->slots = NULL;
    h->nslots = 0;
    if (h->multi)
        curl.multi_cleanup(h->multi);
    h->multi = NULL;
}

static int slots_make(struct rc_http *h, size_t want, struct rc_err *err)
{
    if (!h->multi) {
        h->multi = curl.multi_init();
        if (!h->multi)
            return rc_err_set(err, RC_ERROR, "cannot create a libcurl multi handle");
        curl.multi_setopt(h->multi, CURLMOPT_PIPELINING, (long)CURLPIPE_MULTIPLEX);
    }
    if (want <= h->nslots)
        return RC_OK;
    h->slots = rc_xrealloc(h->slots, want * sizeof(*h->slots));
    for (size_t i = h->nslots; i < want; i++) {
        struct slot *s = rc_xcalloc(1, sizeof(*s));

        s->c = curl.easy_init();
        if (!s->c) {
            free(s);
            return rc_err_set(err, RC_ERROR, "cannot create a libcurl handle");
        }
        h->slots[i] = s;
        h->nslots = i + 1;
        configure(h, s->c, s->errbuf);
        /* wait for a connection that may multiplex (h2) rather than open one per transfer:
         * without it, transfers started together each open a connection, h2 or not */
        curl.easy_setopt(s->c, CURLOPT_PIPEWAIT, 1L);
        s->cert_gen = h->cert_gen;
    }
    curl.multi_setopt(h->multi, CURLMOPT_MAX_HOST_CONNECTIONS, (long)want);
    curl.multi_setopt(h->multi, CURLMOPT_MAXCONNECTS, (long)want);
    return RC_OK;
}

static void slot_go(struct rc_http *h, struct slot *s, struct rc_http_response *resp)
{
    memset(&s->at, 0, sizeof(s->at));
    s->at.resp = resp;
    reset_response(resp);
    s->errbuf[0] = '\0';
    s->waiting = 0;
    curl.easy_setopt(s->c, CURLOPT_WRITEDATA, &s->at);
    curl.easy_setopt(s->c, CURLOPT_HEADERDATA, &s->at);
    curl.multi_add_handle(h->multi, s->c);
}

int rc_http_do_many(struct rc_http *h, const struct rc_http_request *reqs,
                    struct rc_http_response *resps, int *codes, struct rc_err *errs, size_t n,
                    size_t concurrency, rc_http_done_fn on_done, void *payload, struct rc_err *err)
{
    size_t next = 0, active = 0;
    int stop = 0, error;

    if (concurrency < 1)
        concurrency = 1;
    if (concurrency > n)
        concurrency = n ? n : 1;
    if ((error = slots_make(h, concurrency, err)) < 0)
        return error;
    for (size_t i = 0; i < n; i++) {
        rc_buf_init(&resps[i].body, h->o.max_body);
        resps[i].attempts = 0;
        resps[i].status = 0;
        codes[i] = RC_HTTP_NOT_SENT;
        rc_err_clear(&errs[i]);
    }
    for (;;) {
        long long now = now_ms();
        long timeout = 1000; /* capped below */
        int running = 0;
        CURLMsg *m;
        int left;

        /* start requests on free slots; wake slots whose wait is over */
        for (size_t k = 0; k < concurrency; k++) {
            struct slot *s = h->slots[k];

            if (s->busy && s->waiting && s->wake <= now) {
                slot_go(h, s, &resps[s->idx]);
                continue;
            }
            while (!s->busy && !stop && next < n) {
                size_t i = next++;

                if ((codes[i] = prepare(h, &reqs[i], &s->p, &errs[i])) < 0) {
                    if (on_done && on_done(payload, i))
                        stop = 1;
                    continue;
                }
                if (s->cert_gen != h->cert_gen) {
                    apply_client_cert(h, s->c);
                    curl.easy_setopt(s->c, CURLOPT_FRESH_CONNECT, 1L);
                    s->cert_gen = h->cert_gen;
                }
                set_request(s->c, &reqs[i], &s->p);
                s->busy = 1;
                s->idx = i;
                s->attempt = 1;
                resps[i].attempts = 1;
                active++;
                slot_go(h, s, &resps[i]);
            }
        }
        if (active == 0)
            break;
        curl.multi_perform(h->multi, &running);
        while ((m = curl.multi_info_read(h->multi, &left))) {
            struct slot *s = NULL;
            struct rc_err e = RC_ERR_INIT;
            int fatal = 0, max;
            long wait;
            size_t i;

            if (m->msg != CURLMSG_DONE)
                continue;
            for (size_t k = 0; k < concurrency && !s; k++)
                if (h->slots[k]->c == m->easy_handle)
                    s = h->slots[k];
            if (!s)
                continue;
            i = s->idx;
            max = reqs[i].no_retry ? 1 : h->o.max_attempts;
            error = finish_attempt(s->c, s->errbuf, m->data.result, &s->at, s->p.where, &resps[i],
                                   &fatal, &e);
            curl.multi_remove_handle(h->multi, s->c);
            wait =
                retry_wait(h, &reqs[i], s->p.where, error, fatal, &resps[i], &e, s->attempt, max);
            if (wait >= 0) {
                if (error < 0) /* a connection that failed must not be reused */
                    curl.easy_setopt(s->c, CURLOPT_FRESH_CONNECT, 1L);
                s->attempt++;
                resps[i].attempts = s->attempt;
                s->waiting = 1;
                if (h->o.sleep_ms != default_sleep) {
                    h->o.sleep_ms(h->o.sleep_payload, wait); /* tests record the schedule */
                    s->wake = 0;
                } else {
                    s->wake = now_ms() + wait;
                }
                continue;
            }
            codes[i] = error;
            if (error < 0)
                errs[i] = e;
            clear_request(s->c);
            prepared_release(&s->p);
            s->busy = 0;
            active--;
            if (on_done && on_done(payload, i))
                stop = 1;
        }
        now = now_ms();
        for (size_t k = 0; k < concurrency; k++) {
            const struct slot *s = h->slots[k];

            if (!s->busy && !stop && next < n)
                timeout = 0; /* a request to start */
            if (s->busy && s->waiting) {
                long left_ms = s->wake > now ? (long)(s->wake - now) : 0;
                if (left_ms < timeout)
                    timeout = left_ms;
            }
        }
        {
            long ct = -1;

            /* libcurl's own timers (connect phases, its resolver) */
            if (curl.multi_timeout(h->multi, &ct) == CURLM_OK && ct >= 0 && ct < timeout)
                timeout = ct;
            /* a response already read from the socket into the TLS layer wakes no poll: seen
             * with libcurl 7.88 on a connection's first response (after the server's session
             * tickets), stalling the transfer until the timeout. Look again soon. */
            if (timeout > RC_HTTP_POLL_MAX_MS)
                timeout = RC_HTTP_POLL_MAX_MS;
        }
        /* waits for socket activity or the timeout, also with no transfer running */
        if (timeout > 0)
            curl.multi_poll(h->multi, NULL, 0, (int)timeout, NULL);
    }
    return RC_OK;
}
