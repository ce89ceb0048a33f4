/*
 * rc_git_net.c - the TCP connections libgit2 opens to git remotes (git://, http://, https://
 * through its TLS stream, ssh:// through libssh2), made by us so that they give up.
 *
 * libgit2 1.5 connects and reads with blocking calls and no timeout: a remote that stops
 * answering in the middle of a fetch or a push held the pass, and a loop, for good (TCP keeps
 * an idle connection open for ever; a server whose process hangs keeps acknowledging). Its
 * socket stream is replaceable (git_stream_register, GIT_STREAM_STANDARD): every transport
 * asks the registry for its TCP connection, and its TLS stream wraps the one it gets. Ours
 * connects, reads and writes with poll(2) and gives up after rc_git_set_timeout's seconds in
 * which nothing could be sent or received, with an error that says so; the pass fails as on
 * any git error (exit 4) and the next one tries again.
 *
 * ssh is different: libgit2's ssh transport hands the socket itself to libssh2 (it reads the
 * descriptor out of libgit2's own git_socket_stream, whose layout struct net_stream therefore
 * begins with), and libssh2 reads and writes it with no timeout of its own, never through us.
 * A connection that nobody reads or writes through us is watched instead: a thread (running
 * while any connection is open) asks the kernel every quarter of the timeout, at most every
 * second, how many bytes the peer has sent and acknowledged (TCP_INFO), and a connection on
 * which neither moved for the timeout is shut down, which wakes libssh2 with an error; the
 * failure says why (rc_git_net_failure). The
 * kernel's counts leave keepalive probes out, so a server that is up and silent is cut, and
 * one that is receiving a push, or sending keepalives while its hooks run, is not.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <linux/tcp.h> /* struct tcp_info with the byte counts (Linux 4.2) */
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <git2.h>
#include <git2/sys/stream.h>

#include "rc_clock.h"
#include "rc_git.h"
#include "rc_http.h"
#include "rc_mem.h"

/* libgit2 1.5's git_socket_stream (src/libgit2/streams/socket.h): its ssh transport reads `s`
 * through that struct from whatever stream the registry made. Ours follow. */
struct net_stream {
    git_stream parent;
    char *host;
    char *port;
    int s;
    atomic_int driven;        /* read or written through us: transfer() times it */
    char *failure;            /* last_failure of the thread that made it */
    struct net_stream *next;  /* in `watched`, while connected */
    uint64_t acked, received; /* the kernel's counts when they last moved, */
    double moved;             /* at this time (rc_mono_seconds) */
    int cut;                  /* shut down by the watcher */
};

/* read by the watcher's thread too */
static atomic_long timeout_s = RC_GIT_TIMEOUT_DEFAULT_S;

void rc_git_set_timeout(long seconds)
{
    atomic_store(&timeout_s, seconds > 0 ? seconds : RC_GIT_TIMEOUT_DEFAULT_S);
}

long rc_git_timeout(void)
{
    return atomic_load(&timeout_s);
}

static int timeout_ms(void)
{
    long s = rc_git_timeout();

    return s > 2000000 ? 2000000000 : (int)(s * 1000);
}

/* The last failure of a connection on this thread: libgit2's TLS stream reports a read of ours
 * that failed as its own "SSL error", and libssh2 a connection the watcher shut down as its
 * own, so rc_git.c adds ours to it (rc_git_net_failure). The watcher writes it from its own
 * thread: under watch_mu, as every access. */
#define FAILURE_MAX 256
static __thread char last_failure[FAILURE_MAX];
static __thread char failure_read[FAILURE_MAX];

/* The connections nobody reads or writes through us, and the thread that watches them. */
static pthread_mutex_t watch_mu = PTHREAD_MUTEX_INITIALIZER;
static struct net_stream *watched;
static int watcher_running;

void rc_git_net_forget(void)
{
    pthread_mutex_lock(&watch_mu);
    last_failure[0] = '\0';
    pthread_mutex_unlock(&watch_mu);
}

const char *rc_git_net_failure(void)
{
    pthread_mutex_lock(&watch_mu);
    memcpy(failure_read, last_failure, sizeof(failure_read));
    pthread_mutex_unlock(&watch_mu);
    return failure_read;
}

static void set_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void set_error(const char *fmt, ...)
{
    char msg[FAILURE_MAX];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&watch_mu);
    memcpy(last_failure, msg, sizeof(last_failure));
    pthread_mutex_unlock(&watch_mu);
    git_error_set_str(GIT_ERROR_NET, msg);
}

/* ==== The watcher ==== */

/* Has st moved since last asked (bytes received or acknowledged)? Shut it down when it has not
 * for the timeout. Under watch_mu. */
static void watch_one(struct net_stream *st, double now)
{
    struct tcp_info ti;
    socklen_t len = sizeof(ti);

    if (st->cut || atomic_load(&st->driven))
        return;
    memset(&ti, 0, sizeof(ti));
    /* a kernel too old to count bytes leaves the connection as libssh2 has it */
    if (getsockopt(st->s, IPPROTO_TCP, TCP_INFO, &ti, &len) < 0 ||
        len < offsetof(struct tcp_info, tcpi_bytes_received) + sizeof(ti.tcpi_bytes_received))
        return;
    if (ti.tcpi_bytes_acked != st->acked || ti.tcpi_bytes_received != st->received) {
        st->acked = ti.tcpi_bytes_acked;
        st->received = ti.tcpi_bytes_received;
        st->moved = now;
        return;
    }
    if (now - st->moved < (double)rc_git_timeout())
        return;
    snprintf(st->failure, FAILURE_MAX, "%s sent nothing for %ld s (--git-timeout)", st->host,
             rc_git_timeout());
    st->cut = 1;
    shutdown(st->s, SHUT_RDWR);
}

static void *watcher(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&watch_mu);
    while (watched) {
        struct timespec tick;
        double now = rc_mono_seconds();
        long ms = timeout_ms() / 4;
        for (struct net_stream *st = watched; st; st = st->next)
            watch_one(st, now);
        pthread_mutex_unlock(&watch_mu);
        /* a quarter of the timeout, at most a second: cut within that of it */
        ms = ms > 1000 ? 1000 : ms < 50 ? 50 : ms;
        tick.tv_sec = ms / 1000;
        tick.tv_nsec = (ms % 1000) * 1000000;
        while (nanosleep(&tick, &tick) < 0 && errno == EINTR)
            ;
        pthread_mutex_lock(&watch_mu);
    }
    watcher_running = 0;
    pthread_mutex_unlock(&watch_mu);
    return NULL;
}

/* Watch st from now (connected). Without a thread for the watcher, the connection is as
 * libgit2's own would be. */
static void watch_add(struct net_stream *st)
{
    pthread_attr_t attr;
    pthread_t t;

    pthread_mutex_lock(&watch_mu);
    st->moved = rc_mono_seconds();
    st->next = watched;
    watched = st;
    if (!watcher_running && pthread_attr_init(&attr) == 0) {
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        if (pthread_create(&t, &attr, watcher, NULL) == 0)
            watcher_running = 1;
        pthread_attr_destroy(&attr);
    }
    pthread_mutex_unlock(&watch_mu);
}

static void watch_remove(struct net_stream *st)
{
    pthread_mutex_lock(&watch_mu);
    for (struct net_stream **p = &watched; *p; p = &(*p)->next) {
        if (*p == st) {
            *p = st->next;
            break;
        }
    }
    st->next = NULL;
    pthread_mutex_unlock(&watch_mu);
}

/* Wait until fd is ready for `events`: 1, 0 on the timeout, -1 on an error (errno). */
static int wait_for(int fd, short events)
{
    struct pollfd p = {fd, events, 0};
    int r;

    do
        r = poll(&p, 1, timeout_ms());
    while (r < 0 && errno == EINTR);
    return r;
}

/* One address: 0 with *out connected, else -1 and errno (ETIMEDOUT when it did not answer). */
static int connect_one(int *out, const struct addrinfo *a)
{
    int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
    int e = 0, r;
    socklen_t len = sizeof(e);

    if (fd < 0)
        return -1;
    /* a connection that goes quiet is noticed by the kernel too, as an API server's is:
     * keepalive probes, and data unacknowledged for the timeout closes it (what libssh2
     * waits on) */
    rc_http_tune_socket(fd, (unsigned int)timeout_ms());
    if (connect(fd, a->ai_addr, a->ai_addrlen) < 0) {
        if (errno != EINPROGRESS)
            goto fail;
        if ((r = wait_for(fd, POLLOUT)) <= 0) {
            if (r == 0)
                errno = ETIMEDOUT;
            goto fail;
        }
        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &len) < 0)
            goto fail;
        if (e) {
            errno = e;
            goto fail;
        }
    }
    *out = fd;
    return 0;
fail:
    e = errno;
    close(fd);
    errno = e;
    return -1;
}

static int net_connect(git_stream *stream)
{
    struct net_stream *st = (struct net_stream *)stream;
    struct addrinfo hints, *info = NULL;
    int r, e = 0;

    memset(&hints, 0, sizeof(hints));
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_family = AF_UNSPEC;
    if ((r = getaddrinfo(st->host, st->port, &hints, &info)) != 0) {
        set_error("failed to resolve address for %s: %s", st->host, gai_strerror(r));
        return -1;
    }
    for (const struct addrinfo *a = info; a; a = a->ai_next) {
        if (connect_one(&st->s, a) == 0)
            break;
        e = errno;
    }
    freeaddrinfo(info);
    if (st->s >= 0) {
        watch_add(st);
        return 0;
    }
    if (e == ETIMEDOUT)
        set_error("failed to connect to %s port %s: no answer in %ld s (--git-timeout)", st->host,
                  st->port, rc_git_timeout());
    else
        set_error("failed to connect to %s port %s: %s", st->host, st->port, strerror(e));
    return -1;
}

/* recv (out 0) or send (out 1) on st, waiting for the socket at most the timeout each time it
 * would block: what the call returned, or -1 with the error set. */
static ssize_t transfer(struct net_stream *st, int out, void *data, size_t len, int flags)
{
    atomic_store(&st->driven, 1);
    for (;;) {
        ssize_t n = out ? send(st->s, data, len, flags | MSG_NOSIGNAL) : recv(st->s, data, len, 0);
        int r;

        if (n >= 0)
            return n;
        if (errno == EINTR)
            continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK)
            break;
        if ((r = wait_for(st->s, out ? POLLOUT : POLLIN)) == 0) {
            set_error("%s %s nothing for %ld s (--git-timeout)", st->host, out ? "took" : "sent",
                      rc_git_timeout());
            return -1;
        }
        if (r < 0)
            break;
    }
    set_error("error %s data %s %s: %s", out ? "sending" : "receiving", out ? "to" : "from",
              st->host, strerror(errno));
    return -1;
}

static ssize_t net_read(git_stream *stream, void *data, size_t len)
{
    return transfer((struct net_stream *)stream, 0, data, len, 0);
}

static ssize_t net_write(git_stream *stream, const char *data, size_t len, int flags)
{
    return transfer((struct net_stream *)stream, 1, (void *)data, len, flags);
}

static int net_close(git_stream *stream)
{
    struct net_stream *st = (struct net_stream *)stream;
    int r = 0;

    watch_remove(st);
    if (st->s >= 0)
        r = close(st->s);
    st->s = -1;
    return r < 0 ? -1 : 0;
}

static void net_free(git_stream *stream)
{
    struct net_stream *st = (struct net_stream *)stream;

    if (!st)
        return;
    net_close(stream);
    free(st->host);
    free(st->port);
    free(st);
}

static int net_new(git_stream **out, const char *host, const char *port)
{
    struct net_stream *st = rc_xcalloc(1, sizeof(*st));

    st->parent.version = GIT_STREAM_VERSION;
    st->parent.connect = net_connect;
    st->parent.read = net_read;
    st->parent.write = net_write;
    st->parent.close = net_close;
    st->parent.free = net_free;
    st->host = rc_xstrdup(host);
    st->port = rc_xstrdup(port);
    st->s = -1;
    atomic_init(&st->driven, 0);
    st->failure = last_failure;
    *out = &st->parent;
    return 0;
}

int rc_git_net_register(void)
{
    git_stream_registration reg = {GIT_STREAM_VERSION, net_new, NULL};

    return git_stream_register(GIT_STREAM_STANDARD, &reg);
}
