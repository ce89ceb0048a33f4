/*
 * rc_metrics.c - Prometheus metrics: what passes report, the text exposition format, an
 * atomic text file, and a one-thread HTTP listener on plain sockets (see rc_metrics.h).
 */
#include "rc_metrics.h"

#include <errno.h>
#include <fcntl.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "pl_types.h"
#include "rc_clock.h"
#include "rc_git.h"
#include "rc_mem.h"

#include "rc_banned.h"

enum result { R_UP_TO_DATE, R_APPLIED, R_INCOMPLETE, R_UNREACHABLE, R_STOPPED, R_COUNT };

static const char *const result_names[R_COUNT] = {"up_to_date", "applied", "incomplete",
                                                  "unreachable", "stopped"};

#define STATUS_MAX 8 /* exit statuses 0..7 counted apart */

struct cluster {
    char *name;
    int reachable;   /* -1: not observed (simulated, or a skipped pass) */
    int last_result; /* -1: nothing applied yet */
    unsigned long long results[R_COUNT];
};

struct rc_metrics {
    pthread_mutex_t mu;
    char *version;
    unsigned long long passes[STATUS_MAX];
    int have_pass;
    int last_status;
    double last_time, last_success;
    double phase[RC_PHASE_COUNT], total;
    int have_units;
    size_t placed, pending, unplaced;
    size_t file_errors, hand_edits;
    /* the process at the end of the last pass: a loop's memory must not grow with its passes
     * (docs/architecture.md, "Memory: the arena") */
    size_t rss, peak_rss, git_cache, git_cache_bound;
    /* loop mode's watches (rc_watch.h): clusters the last pass read from one, events; of
     * pods, then of nodes */
    int have_watches;
    size_t watches[2], watch_events[2];
    size_t nclusters, cap;
    struct cluster *clusters;
    /* the listener */
    int fd;
    int stop;
    int started;
    int port; /* bound */
    pthread_t thread;
    long healthy_for;
    double listen_since;
};

struct rc_metrics *rc_metrics_new(const char *version)
{
    struct rc_metrics *m = rc_xcalloc(1, sizeof(*m));

    pthread_mutex_init(&m->mu, NULL);
    m->version = rc_xstrdup(version ? version : "");
    m->fd = -1;
    return m;
}

void rc_metrics_free(struct rc_metrics *m)
{
    if (!m)
        return;
    if (m->started) {
        pthread_mutex_lock(&m->mu);
        m->stop = 1;
        pthread_mutex_unlock(&m->mu);
        pthread_join(m->thread, NULL);
    }
    if (m->fd >= 0)
        close(m->fd);
    for (size_t i = 0; i < m->nclusters; i++)
        free(m->clusters[i].name);
    free(m->clusters);
    free(m->version);
    pthread_mutex_destroy(&m->mu);
    free(m);
}

static struct cluster *cluster_get(struct rc_metrics *m, const char *name, size_t len)
{
    struct cluster *c;

    for (size_t i = 0; i < m->nclusters; i++) {
        if (strlen(m->clusters[i].name) == len && !strncmp(m->clusters[i].name, name, len))
            return &m->clusters[i];
    }
    if (m->nclusters == m->cap) {
        m->cap = m->cap ? m->cap * 2 : 8;
        m->clusters = rc_xrealloc(m->clusters, m->cap * sizeof(*m->clusters));
    }
    c = &m->clusters[m->nclusters++];
    memset(c, 0, sizeof(*c));
    c->name = rc_xstrndup(name, len);
    c->reachable = -1;
    c->last_result = -1;
    return c;
}

/* The note's "cluster <name>: <outcome>..." lines (docs/formats.md, "Refs and notes"). */
static void record_note(struct rc_metrics *m, const char *note)
{
    static const struct {
        const char *prefix;
        enum result r;
    } outcomes[] = {
        {"up to date", R_UP_TO_DATE},   {"applied", R_APPLIED}, {"incomplete", R_INCOMPLETE},
        {"unreachable", R_UNREACHABLE}, {"stopped", R_STOPPED},
    };

    for (const char *p = note; p && *p;) {
        const char *nl = strchr(p, '\n');
        const char *end = nl ? nl : p + strlen(p);
        const char *colon;
        if (!strncmp(p, "cluster ", 8) && (colon = memchr(p + 8, ':', (size_t)(end - p - 8)))) {
            const char *rest = colon + 1;
            while (rest < end && *rest == ' ')
                rest++;
            for (size_t k = 0; k < sizeof(outcomes) / sizeof(outcomes[0]); k++) {
                size_t n = strlen(outcomes[k].prefix);
                if ((size_t)(end - rest) >= n && !strncmp(rest, outcomes[k].prefix, n)) {
                    struct cluster *c = cluster_get(m, p + 8, (size_t)(colon - p - 8));
                    c->last_result = (int)outcomes[k].r;
                    c->results[outcomes[k].r]++;
                    break;
                }
            }
        }
        p = nl ? nl + 1 : NULL;
    }
}

static double now_real(void)
{
    struct timeval tv;

    gettimeofday(&tv, NULL);
    return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

/* Resident and peak resident memory (rc_mem_resident, getrusage) and libgit2's object cache;
 * 0 where the system does not say. */
static void note_memory(struct rc_metrics *m)
{
    struct rusage ru;

    m->rss = rc_mem_resident();
    m->peak_rss = getrusage(RUSAGE_SELF, &ru) == 0 && ru.ru_maxrss > 0
                      ? (size_t)ru.ru_maxrss * 1024 /* KiB on Linux */
                      : 0;
    if (m->peak_rss < m->rss) /* the two are counted apart; the peak is at least what is held */
        m->peak_rss = m->rss;
    rc_git_cache_usage(&m->git_cache, &m->git_cache_bound);
}

void rc_metrics_watches(struct rc_metrics *m, size_t pods, size_t pod_events, size_t nodes,
                        size_t node_events)
{
    pthread_mutex_lock(&m->mu);
    m->have_watches = 1;
    m->watches[0] = pods;
    m->watch_events[0] = pod_events;
    m->watches[1] = nodes;
    m->watch_events[1] = node_events;
    pthread_mutex_unlock(&m->mu);
}

void rc_metrics_record(struct rc_metrics *m, const struct rc_pass_result *res, int status,
                       const char *apply_note, double seconds, time_t now)
{
    pthread_mutex_lock(&m->mu);
    m->passes[status >= 0 && status < STATUS_MAX ? status : STATUS_MAX - 1]++;
    m->have_pass = 1;
    m->last_status = status;
    m->last_time = (double)now;
    if (status == 0)
        m->last_success = (double)now;
    m->total = seconds;
    memset(m->phase, 0, sizeof(m->phase));
    for (size_t i = 0; i < m->nclusters; i++)
        m->clusters[i].last_result = -1;
    if (res) {
        memcpy(m->phase, res->phase_seconds, sizeof(m->phase));
        m->file_errors = res->nfile_errors;
        m->hand_edits = res->nhand_edits;
        if (!res->skipped && res->result) {
            m->have_units = 1;
            m->placed = res->placed;
            m->pending = res->pending;
            m->unplaced = res->unplaced;
        }
        if (!res->skipped && res->input) {
            for (size_t i = 0; i < res->input->nclusters; i++) {
                const struct pl_cluster *pc = &res->input->clusters[i];
                struct cluster *c;
                if (!pc->live)
                    continue;
                c = cluster_get(m, pc->name, strlen(pc->name));
                c->reachable = pc->reachable ? 1 : 0;
            }
        }
    }
    if (apply_note)
        record_note(m, apply_note);
    note_memory(m);
    pthread_mutex_unlock(&m->mu);
}

/* ==== The text format ==== */

/* A label value: backslash, double quote and newline escaped. */
static int put_label(struct rc_buf *b, const char *v, struct rc_err *err)
{
    int error = 0;

    for (; *v && !error; v++) {
        if (*v == '\\' || *v == '"')
            error = rc_buf_printf(b, err, "\\%c", *v);
        else if (*v == '\n')
            error = rc_buf_puts(b, "\\n", err);
        else
            error = rc_buf_putc(b, *v, err);
    }
    return error;
}

static int family(struct rc_buf *b, const char *name, const char *type, const char *help,
                  struct rc_err *err)
{
    return rc_buf_printf(b, err, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A family of one sample without labels. */
static int gauge_size(struct rc_buf *b, const char *name, const char *help, size_t v,
                      struct rc_err *err)
{
    int error = family(b, name, "gauge", help, err);

    return error ? error : rc_buf_printf(b, err, "%s %zu\n", name, v);
}

static int text_locked(struct rc_metrics *m, struct rc_buf *b, struct rc_err *err)
{
    int error = 0;

    error = family(b, "rightplace_build_info", "gauge", "The version of rightplace.", err);
    if (!error)
        error = rc_buf_puts(b, "rightplace_build_info{version=\"", err);
    if (!error)
        error = put_label(b, m->version, err);
    if (!error)
        error = rc_buf_puts(b, "\"} 1\n", err);
    if (!error)
        error = family(b, "rightplace_passes_total", "counter",
                       "Passes run by this process, by exit status.", err);
    for (int s = 0; s < STATUS_MAX && !error; s++) {
        if (m->passes[s] || s <= 1)
            error = rc_buf_printf(b, err, "rightplace_passes_total{status=\"%d\"} %llu\n", s,
                                  m->passes[s]);
    }
    if (!error && m->have_pass) {
        error = family(b, "rightplace_last_pass_status", "gauge",
                       "Exit status of the last pass (0 in sync, 1 outage, 2 configuration, 3 "
                       "bad input, 4 system, 5 locked).",
                       err);
        if (!error)
            error = rc_buf_printf(b, err, "rightplace_last_pass_status %d\n", m->last_status);
        if (!error)
            error = family(b, "rightplace_last_pass_timestamp_seconds", "gauge",
                           "When the last pass ended (Unix time).", err);
        if (!error)
            error = rc_buf_printf(b, err, "rightplace_last_pass_timestamp_seconds %.0f\n",
                                  m->last_time);
        if (!error)
            error = family(b, "rightplace_pass_duration_seconds", "gauge",
                           "Wall time of the last pass, in all and by phase.", err);
        if (!error)
            error = rc_buf_printf(
                b, err, "rightplace_pass_duration_seconds{phase=\"total\"} %.6f\n", m->total);
        for (int p = 0; p < RC_PHASE_COUNT && !error; p++)
            error = rc_buf_printf(b, err, "rightplace_pass_duration_seconds{phase=\"%s\"} %.6f\n",
                                  rc_pass_phase_name(p), m->phase[p]);
        if (!error)
            error =
                gauge_size(b, "rightplace_file_errors",
                           "Source files that did not load in the last pass.", m->file_errors, err);
        if (!error)
            error = gauge_size(b, "rightplace_hand_edits",
                               "Deploy branch files changed by hand, found by the last pass.",
                               m->hand_edits, err);
    }
    if (!error && m->have_pass) {
        error =
            gauge_size(b, "rightplace_resident_memory_bytes",
                       "Resident memory of the process at the end of the last pass.", m->rss, err);
        if (!error)
            error = gauge_size(b, "rightplace_peak_resident_memory_bytes",
                               "Peak resident memory of the process so far.", m->peak_rss, err);
        if (!error)
            error = gauge_size(b, "rightplace_git_cache_bytes",
                               "What libgit2's object cache held at the end of the last pass.",
                               m->git_cache, err);
        if (!error)
            error = gauge_size(b, "rightplace_git_cache_bound_bytes",
                               "The bound of libgit2's object cache, set by the source's size.",
                               m->git_cache_bound, err);
    }
    if (!error && m->have_watches) {
        error = gauge_size(b, "rightplace_pod_watches",
                           "Live clusters whose pods the last pass took from their watch.",
                           m->watches[0], err);
        if (!error)
            error = family(b, "rightplace_pod_watch_events_total", "counter",
                           "Pod changes the watches applied.", err);
        if (!error)
            error = rc_buf_printf(b, err, "rightplace_pod_watch_events_total %zu\n",
                                  m->watch_events[0]);
        if (!error)
            error = gauge_size(b, "rightplace_node_watches",
                               "Live clusters whose nodes the last pass took from their watch.",
                               m->watches[1], err);
        if (!error)
            error = family(b, "rightplace_node_watch_events_total", "counter",
                           "Node changes the watches applied.", err);
        if (!error)
            error = rc_buf_printf(b, err, "rightplace_node_watch_events_total %zu\n",
                                  m->watch_events[1]);
    }
    if (!error && m->last_success > 0) {
        error = family(b, "rightplace_last_success_timestamp_seconds", "gauge",
                       "When the last pass with exit status 0 ended (Unix time).", err);
        if (!error)
            error = rc_buf_printf(b, err, "rightplace_last_success_timestamp_seconds %.0f\n",
                                  m->last_success);
    }
    if (!error && m->have_units) {
        error = family(b, "rightplace_units", "gauge", "Placement units by state.", err);
        if (!error)
            error = rc_buf_printf(b, err,
                                  "rightplace_units{state=\"placed\"} %zu\n"
                                  "rightplace_units{state=\"pending\"} %zu\n"
                                  "rightplace_units{state=\"unplaced\"} %zu\n",
                                  m->placed, m->pending, m->unplaced);
        if (!error)
            error = gauge_size(b, "rightplace_pending_units", "Units waiting for capacity.",
                               m->pending, err);
    }
    if (!error && m->nclusters) {
        error = family(b, "rightplace_cluster_reachable", "gauge",
                       "Whether the last pass could read the live cluster.", err);
        for (size_t i = 0; i < m->nclusters && !error; i++) {
            if (m->clusters[i].reachable < 0)
                continue;
            error = rc_buf_puts(b, "rightplace_cluster_reachable{cluster=\"", err);
            if (!error)
                error = put_label(b, m->clusters[i].name, err);
            if (!error)
                error = rc_buf_printf(b, err, "\"} %d\n", m->clusters[i].reachable);
        }
        if (!error)
            error = family(b, "rightplace_cluster_apply_result", "gauge",
                           "The last pass's apply result per cluster (1 for that result).", err);
        for (size_t i = 0; i < m->nclusters && !error; i++) {
            for (int r = 0; r < R_COUNT && !error; r++) {
                if (m->clusters[i].last_result < 0)
                    break;
                error = rc_buf_puts(b, "rightplace_cluster_apply_result{cluster=\"", err);
                if (!error)
                    error = put_label(b, m->clusters[i].name, err);
                if (!error)
                    error = rc_buf_printf(b, err, "\",result=\"%s\"} %d\n", result_names[r],
                                          m->clusters[i].last_result == r);
            }
        }
        if (!error)
            error = family(b, "rightplace_apply_results_total", "counter",
                           "Apply results per cluster over the passes of this process.", err);
        for (size_t i = 0; i < m->nclusters && !error; i++) {
            for (int r = 0; r < R_COUNT && !error; r++) {
                error = rc_buf_puts(b, "rightplace_apply_results_total{cluster=\"", err);
                if (!error)
                    error = put_label(b, m->clusters[i].name, err);
                if (!error)
                    error = rc_buf_printf(b, err, "\",result=\"%s\"} %llu\n", result_names[r],
                                          m->clusters[i].results[r]);
            }
        }
    }
    return error;
}

int rc_metrics_text(struct rc_metrics *m, struct rc_buf *out, struct rc_err *err)
{
    int error;

    pthread_mutex_lock(&m->mu);
    error = text_locked(m, out, err);
    pthread_mutex_unlock(&m->mu);
    return error;
}

int rc_metrics_write_file(struct rc_metrics *m, const char *path, struct rc_err *err)
{
    struct rc_buf b = RC_BUF_INIT;
    char tmp[4096];
    size_t off = 0;
    int fd = -1, error;

    if (snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid()) >= (int)sizeof(tmp))
        return rc_err_set(err, RC_EINVALID, "metrics file path '%s' is too long", path);
    error = rc_metrics_text(m, &b, err);
    if (error < 0)
        goto done;
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0) {
        error =
            rc_err_set(err, RC_ERROR, "cannot write metrics file '%s': %s", tmp, strerror(errno));
        goto done;
    }
    while (off < b.len) {
        ssize_t w = write(fd, b.ptr + off, b.len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            error = rc_err_set(err, RC_ERROR, "cannot write metrics file '%s': %s", tmp,
                               strerror(errno));
            goto done;
        }
        off += (size_t)w;
    }
    if (fsync(fd) < 0 || close(fd) < 0) {
        fd = -1;
        error =
            rc_err_set(err, RC_ERROR, "cannot write metrics file '%s': %s", tmp, strerror(errno));
        goto done;
    }
    fd = -1;
    if (rename(tmp, path) < 0) {
        error =
            rc_err_set(err, RC_ERROR, "cannot rename '%s' to '%s': %s", tmp, path, strerror(errno));
        goto done;
    }
    error = RC_OK;
done:
    if (fd >= 0)
        close(fd);
    if (error < 0)
        unlink(tmp);
    rc_buf_release(&b);
    return error;
}

/* ==== The listener ==== */

/*
 * One thread serves every client, each connection at most CLIENT_SECONDS from accept to the
 * last byte of its answer, CLIENTS_MAX at once, with non-blocking sockets: a client that
 * trickles its request a byte at a time or never reads the answer holds one slot for two
 * seconds, not the listener. Before, one such client held it for as long as it liked, and
 * the kubelet's /healthz probes failed behind it until the pod was restarted.
 */
#define REQUEST_MAX 4096
#define CLIENTS_MAX 32
#define CLIENT_SECONDS 2.0

struct client {
    int fd; /* -1: a free slot */
    double deadline;
    size_t got;
    char req[REQUEST_MAX + 1];
    char *out; /* the answer, once the request is read */
    size_t len, sent;
};

/* The whole answer: status line, headers and (but for HEAD) the body. */
static char *answer(size_t *len, int head_only, int code, const char *reason, const char *type,
                    const char *body, size_t blen)
{
    struct rc_buf b = RC_BUF_INIT;

    rc_buf_printf(&b, NULL,
                  "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
                  "Connection: close\r\n\r\n",
                  code, reason, type, blen);
    if (!head_only)
        rc_buf_add(&b, body, blen, NULL);
    return rc_buf_detach(&b, len);
}

/* The answer to the request c holds (read whole, or as much as came). */
static char *respond(struct rc_metrics *m, struct client *c, size_t *len)
{
    char *req = c->req, *sp, *path, *end;
    int head;

    req[c->got] = '\0';
    sp = strchr(req, ' ');
    if (!sp)
        return answer(len, 0, 400, "Bad Request", "text/plain", "bad request\n", 12);
    *sp = '\0';
    path = sp + 1;
    end = strpbrk(path, " ?\r\n");
    if (end)
        *end = '\0';
    head = !strcmp(req, "HEAD");
    if (strcmp(req, "GET") && !head)
        return answer(len, 0, 405, "Method Not Allowed", "text/plain", "GET only\n", 9);
    if (!strcmp(path, "/metrics")) {
        struct rc_buf b = RC_BUF_INIT;
        struct rc_err e = RC_ERR_INIT;
        char *out;
        if (rc_metrics_text(m, &b, &e) == RC_OK)
            out = answer(len, head, 200, "OK", "text/plain; version=0.0.4; charset=utf-8",
                         b.ptr ? b.ptr : "", b.len);
        else
            out = answer(len, head, 500, "Internal Server Error", "text/plain", "error\n", 6);
        rc_buf_release(&b);
        return out;
    }
    if (!strcmp(path, "/healthz")) {
        double last;
        pthread_mutex_lock(&m->mu);
        last = m->have_pass ? m->last_time : m->listen_since;
        pthread_mutex_unlock(&m->mu);
        if (now_real() - last <= (double)m->healthy_for)
            return answer(len, head, 200, "OK", "text/plain", "ok\n", 3);
        return answer(len, head, 503, "Service Unavailable", "text/plain",
                      "no pass ended recently\n", 23);
    }
    return answer(len, head, 404, "Not Found", "text/plain", "not found\n", 10);
}

static void client_close(struct client *c)
{
    close(c->fd);
    free(c->out);
    c->fd = -1;
    c->out = NULL;
}

/* Read what came; once the request is whole (its blank line, the size limit, or the client
 * done sending) the answer is made. 0: keep the client, -1: close it. */
static int client_read(struct rc_metrics *m, struct client *c)
{
    for (;;) {
        ssize_t r = recv(c->fd, c->req + c->got, REQUEST_MAX - c->got, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
        if (r > 0) {
            c->got += (size_t)r;
            c->req[c->got] = '\0';
        }
        if (r == 0 || c->got == REQUEST_MAX || strstr(c->req, "\r\n\r\n") ||
            strstr(c->req, "\n\n")) {
            if (!c->got)
                return -1;
            c->out = respond(m, c, &c->len);
            c->sent = 0;
            return 0;
        }
    }
}

/* Send what the socket takes. 0: more to send, -1: done or failed (close it). */
static int client_write(struct client *c)
{
    while (c->sent < c->len) {
        ssize_t w = send(c->fd, c->out + c->sent, c->len - c->sent, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return 0;
        if (w <= 0)
            return -1;
        c->sent += (size_t)w;
    }
    return -1;
}

static void *serve(void *arg)
{
    struct rc_metrics *m = arg;
    struct client *cl = rc_xcalloc(CLIENTS_MAX, sizeof(*cl));
    struct pollfd p[CLIENTS_MAX + 1];
    int at[CLIENTS_MAX + 1];

    for (int i = 0; i < CLIENTS_MAX; i++)
        cl[i].fd = -1;
    for (;;) {
        int stop, np = 0, nfree = 0, timeout = 200;
        double now = rc_mono_seconds();

        pthread_mutex_lock(&m->mu);
        stop = m->stop;
        pthread_mutex_unlock(&m->mu);
        if (stop)
            break;
        for (int i = 0; i < CLIENTS_MAX; i++) {
            if (cl[i].fd < 0) {
                nfree++;
                continue;
            }
            if (now >= cl[i].deadline) { /* its time is up, answered or not */
                client_close(&cl[i]);
                nfree++;
                continue;
            }
            if ((cl[i].deadline - now) * 1000 < timeout)
                timeout = (int)((cl[i].deadline - now) * 1000) + 1;
            p[np].fd = cl[i].fd;
            p[np].events = cl[i].out ? POLLOUT : POLLIN;
            p[np].revents = 0;
            at[np++] = i;
        }
        if (nfree) { /* a full house leaves new connections in the backlog */
            p[np].fd = m->fd;
            p[np].events = POLLIN;
            p[np].revents = 0;
            at[np++] = -1;
        }
        if (poll(p, (nfds_t)np, timeout) <= 0)
            continue;
        for (int k = 0; k < np; k++) {
            struct client *c;
            int done;
            if (!p[k].revents)
                continue;
            if (at[k] < 0) {
                int fd = accept4(m->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
                for (int i = 0; fd >= 0 && i < CLIENTS_MAX; i++) {
                    if (cl[i].fd >= 0)
                        continue;
                    memset(&cl[i], 0, sizeof(cl[i]));
                    cl[i].fd = fd;
                    cl[i].deadline = rc_mono_seconds() + CLIENT_SECONDS;
                    fd = -1;
                }
                if (fd >= 0)
                    close(fd);
                continue;
            }
            c = &cl[at[k]];
            if (c->out) {
                done = client_write(c);
            } else {
                done = client_read(m, c);
                if (done == 0 && c->out) /* answered now: send what fits at once */
                    done = client_write(c);
            }
            if (done < 0)
                client_close(c);
        }
    }
    for (int i = 0; i < CLIENTS_MAX; i++) {
        if (cl[i].fd >= 0)
            client_close(&cl[i]);
    }
    free(cl);
    return NULL;
}

int rc_metrics_listen(struct rc_metrics *m, const char *addr, long healthy_for,
                      const struct rc_log *log, struct rc_err *err)
{
    char host[256], port[16], shown[300];
    const char *colon = strrchr(addr, ':');
    struct addrinfo hints, *ai = NULL;
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    int fd = -1, one = 1, e;
    size_t hl;

    if (!colon || !colon[1] || strlen(colon + 1) >= sizeof(port))
        return rc_err_set(err, RC_EINVALID, "--listen '%s': give HOST:PORT (127.0.0.1:9090)", addr);
    hl = (size_t)(colon - addr);
    if (hl >= sizeof(host))
        return rc_err_set(err, RC_EINVALID, "--listen '%s': host too long", addr);
    memcpy(host, addr, hl);
    host[hl] = '\0';
    if (hl >= 2 && host[0] == '[' && host[hl - 1] == ']') {
        memmove(host, host + 1, hl - 2);
        host[hl - 2] = '\0';
    }
    if (!host[0])
        snprintf(host, sizeof(host), "127.0.0.1");
    snprintf(port, sizeof(port), "%s", colon + 1);
    memset(&hints, 0, sizeof(hints));
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    if ((e = getaddrinfo(host, port, &hints, &ai)) != 0)
        return rc_err_set(err, RC_EINVALID, "--listen '%s': %s", addr, gai_strerror(e));
    fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
        bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, 16) < 0 ||
        getsockname(fd, (struct sockaddr *)&ss, &sl) < 0) {
        e = errno;
        if (fd >= 0)
            close(fd);
        freeaddrinfo(ai);
        return rc_err_set(err, RC_EINVALID, "--listen '%s': %s", addr, strerror(e));
    }
    freeaddrinfo(ai);
    {
        char h[NI_MAXHOST], p[NI_MAXSERV];
        if (getnameinfo((struct sockaddr *)&ss, sl, h, sizeof(h), p, sizeof(p),
                        NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
            h[0] = '?';
            h[1] = '\0';
            p[0] = '?';
            p[1] = '\0';
        }
        snprintf(shown, sizeof(shown), strchr(h, ':') ? "[%.*s]:%s" : "%.*s:%s", 200, h, p);
    }
    m->fd = fd;
    if (ss.ss_family == AF_INET)
        m->port = ntohs(((const struct sockaddr_in *)&ss)->sin_port);
    else if (ss.ss_family == AF_INET6)
        m->port = ntohs(((const struct sockaddr_in6 *)&ss)->sin6_port);
    m->healthy_for = healthy_for;
    m->listen_since = now_real();
    if (pthread_create(&m->thread, NULL, serve, m) != 0) {
        close(fd);
        m->fd = -1;
        return rc_err_set(err, RC_ERROR, "cannot start the metrics listener");
    }
    m->started = 1;
    if (log)
        rc_log_info(log, "serving metrics on http://%s/metrics and /healthz", shown);
    return RC_OK;
}

int rc_metrics_port(const struct rc_metrics *m)
{
    return m && m->started ? m->port : 0;
}
