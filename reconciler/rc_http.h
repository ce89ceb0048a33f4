/*
 * rc_http.h - HTTPS requests for the Kubernetes client: the only module that calls libcurl.
 *
 * One struct rc_http is one connection context (one CURL easy handle, so the TLS connection
 * is reused between requests, plus a curl multi handle with a pool of easy handles for
 * rc_http_do_many) for one API server. It is not thread-safe: use one per thread (one per
 * cluster). TLS is verified against the CA given (file or PEM data) or the system
 * store; verification is off only when `insecure` is set. Client certificates come as files
 * or PEM data.
 *
 * Retries: 429 (honouring Retry-After seconds, capped), 500/502/503/504 and transport errors
 * (connect, dropped connection, timeout) are retried up to max_attempts in all, waiting
 * backoff_initial_ms * 2^(n-1) (capped at backoff_max_ms) between attempts: a fixed,
 * deterministic schedule. TLS verification failures are not retried.
 *
 * What it never does: log a header value or a body (only method, URL and status at debug
 * level), follow redirects, or read more than max_body bytes of a response.
 */
#ifndef RC_HTTP_H
#define RC_HTTP_H

#include <stdatomic.h>
#include <stddef.h>

#include "rc_buf.h"
#include "rc_err.h"
#include "rc_log.h"

struct rc_http; /* one connection context */

/*
 * Every connection to an API server is probed when it is idle (TCP keepalive after
 * RC_HTTP_KEEPIDLE_S, then every RC_HTTP_KEEPINTVL_S, given up after RC_HTTP_KEEPCNT
 * unanswered) and closed when what it sent goes unacknowledged for RC_HTTP_USER_TIMEOUT_MS:
 * a peer that died, or a NAT or load balancer that forgot the connection, is found out in
 * about half a minute, where a watch would otherwise wait for its own timeout (rc_watch.h).
 * The kernel's defaults (two hours, nine probes) never would. The probes also keep such
 * middle boxes from forgetting an idle connection.
 */
#define RC_HTTP_KEEPIDLE_S 15
#define RC_HTTP_KEEPINTVL_S 5
#define RC_HTTP_KEEPCNT 3
#define RC_HTTP_USER_TIMEOUT_MS 30000
/* Those keepalive options on TCP socket fd, and unacked_ms as its TCP_USER_TIMEOUT (the git
 * remote's connections, rc_git_net.c, take --git-timeout's). One that does not take leaves the
 * socket as it was: they shorten how long a dead peer goes unnoticed, nothing more. */
void rc_http_tune_socket(int fd, unsigned int unacked_ms);

/* TLS material. Strings are copied by rc_http_new / rc_http_set_client_cert. */
struct rc_http_tls {
    const char *ca_file; /* PEM bundle path; NULL: none */
    const char *ca_data; /* PEM text (already base64-decoded); wins over ca_file */
    size_t ca_len;
    const char *cert_file; /* client certificate (PEM) */
    const char *cert_data;
    size_t cert_len;
    const char *key_file; /* client key (PEM) */
    const char *key_data;
    size_t key_len;
    const char *server_name; /* tls-server-name: name checked in the server certificate */
    int insecure;            /* 1: do not verify the server (kubeconfig said so) */
};

#define RC_HTTP_TLS_INIT                                                                           \
    {                                                                                              \
        NULL, NULL, 0, NULL, NULL, 0, NULL, NULL, 0, NULL, 0                                       \
    }

struct rc_http_options {
    long connect_timeout_ms; /* TCP + TLS handshake */
    long timeout_ms;         /* one whole attempt */
    int max_attempts;        /* attempts in all (>= 1) */
    long backoff_initial_ms; /* wait before the 2nd attempt; doubles after */
    long backoff_max_ms;
    long retry_after_max_ms; /* cap on a server's Retry-After */
    size_t max_body;         /* response body cap in bytes */
    /* How to wait between attempts; NULL: nanosleep. Tests record the schedule here. */
    void (*sleep_ms)(void *payload, long ms);
    void *sleep_payload;
};

/* 10 s connect, 60 s per attempt, 4 attempts, 250 ms doubling to 8 s, Retry-After <= 30 s,
 * 64 MiB bodies. */
#define RC_HTTP_OPTIONS_INIT                                                                       \
    {                                                                                              \
        10000, 60000, 4, 250, 8000, 30000, (size_t)64 << 20, NULL, NULL                            \
    }

struct rc_http_request {
    const char *method;       /* "GET", "PATCH", "DELETE", ... */
    const char *url;          /* absolute https:// URL, already escaped */
    const char *content_type; /* of the body; NULL: no Content-Type */
    const char *accept;       /* NULL: "application/json" */
    const char *bearer;       /* Authorization: Bearer <bearer>; NULL: none. Never logged */
    const char *body;         /* NULL: no body */
    size_t body_len;
    int no_retry; /* 1: a single attempt whatever happens */
    /* A stream (a watch). With on_data, each piece of a 2xx body goes to on_data as it
     * arrives instead of into resp->body (any other status's body is kept as usual);
     * nonzero from on_data ends the transfer, as an answer (RC_OK). */
    int (*on_data)(void *payload, const char *p, size_t n);
    void *data_payload;
    /* read at least once a second while the transfer lasts (may be NULL): nonzero ends it,
     * as an answer when one had begun, else as RC_ETRANSPORT */
    const atomic_int *stop;
    long timeout_ms; /* this request's whole attempt; 0: options.timeout_ms */
};

struct rc_http_response {
    long status;            /* HTTP status of the last attempt; 0 when none */
    struct rc_buf body;     /* capped at options.max_body; owned, see _release */
    char content_type[128]; /* "" when absent */
    long retry_after;       /* seconds from Retry-After of the last response; -1 absent */
    int attempts;           /* attempts made */
    int too_large;          /* 1: the body passed options.max_body, and the transfer stopped */
};

#define RC_HTTP_RESPONSE_INIT                                                                      \
    {                                                                                              \
        0, RC_BUF_INIT, {0}, -1, 0, 0                                                              \
    }

/* Process-wide setup; main calls it once before any thread starts: it ignores SIGPIPE
 * (libcurl runs with CURLOPT_NOSIGNAL, so dropped connections are ours to survive). libcurl
 * itself is loaded (dlopen) and initialised by the first rc_http_new, on whatever thread, so
 * that a process that sends no request never loads it; rc_http_global_cleanup releases it
 * when it was. */
int rc_http_global_init(struct rc_err *err);
void rc_http_global_cleanup(void);
/* Load and initialise libcurl now, once for the process, on any thread (rc_http_new does it
 * otherwise): RC_ERROR, with the reason, when it cannot be. Whether it has been. */
int rc_http_load(struct rc_err *err);
int rc_http_loaded(void);

/* A connection context for one server. tls may be NULL (system CAs, no client cert),
 * o may be NULL (RC_HTTP_OPTIONS_INIT), log may be NULL. Free with rc_http_free. RC_ERROR
 * when libcurl cannot be loaded (err says why). */
int rc_http_new(struct rc_http **out, const struct rc_http_tls *tls,
                const struct rc_http_options *o, const struct rc_log *log, struct rc_err *err);
void rc_http_free(struct rc_http *h);

/* Replace the client certificate and key (PEM data; NULL: none), e.g. from an exec
 * credential plugin. Copies them. */
void rc_http_set_client_cert(struct rc_http *h, const char *cert, size_t cert_len, const char *key,
                             size_t key_len);

/*
 * Send a request, retrying as described above. RC_OK when the server answered (any status,
 * including the last 429/5xx when attempts ran out: look at resp->status). RC_ETRANSPORT when
 * no answer came (connect, TLS, timeout, dropped connection), with curl's reason in err;
 * RC_ERROR when the body exceeds max_body. resp must be RC_HTTP_RESPONSE_INIT or released; it
 * is filled in every case and released by the caller with rc_http_response_release.
 */
int rc_http_do(struct rc_http *h, const struct rc_http_request *req, struct rc_http_response *resp,
               struct rc_err *err);
void rc_http_response_release(struct rc_http_response *resp);

/* rc_http_do_many's code for a request it did not send (on_done asked to stop). */
#define RC_HTTP_NOT_SENT 1

/* Called as each request of rc_http_do_many finishes (i: its index); nonzero: start no more. */
typedef int (*rc_http_done_fn)(void *payload, size_t i);

/*
 * Send n requests with at most `concurrency` in flight, in index order, each retried as
 * rc_http_do retries (a request waiting for its retry does not hold the others up; with a
 * custom options.sleep_ms the wait is taken there, in line). Connections are kept in h
 * between calls: over HTTP/2 (when the server offers h2 in ALPN) the requests are streams of
 * one connection, over HTTP/1.1 at most `concurrency` keep-alive connections are opened and
 * reused. codes[i] gets what rc_http_do would have returned for request i (RC_OK when the
 * server answered, RC_ETRANSPORT, ...), or RC_HTTP_NOT_SENT; errs[i] its error; resps[i]
 * (RC_HTTP_RESPONSE_INIT or released) its response, released by the caller. on_done may be
 * NULL. Returns an error only when nothing could be sent (no libcurl handle).
 */
int rc_http_do_many(struct rc_http *h, const struct rc_http_request *reqs,
                    struct rc_http_response *resps, int *codes, struct rc_err *errs, size_t n,
                    size_t concurrency, rc_http_done_fn on_done, void *payload, struct rc_err *err);

/* url (or a path) without its query, into out (n > 0 bytes, cut to fit): what messages and
 * logs name, the endpoint and not its selectors. */
void rc_http_without_query(char *out, size_t n, const char *url);

/* The wait before attempt n (n >= 2) under options o, Retry-After aside. */
long rc_http_backoff_ms(const struct rc_http_options *o, int n);

#endif
