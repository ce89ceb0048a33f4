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
 * ssh is the exception: libgit2's ssh transport hands the socket itself to libssh2 (it reads
 * the descriptor out of libgit2's own git_socket_stream, whose layout struct net_stream
 * therefore repeats), and libssh2 waits on it with no timeout of its own. There the kernel's
 * keepalive and TCP_USER_TIMEOUT, set on every connection, notice a peer that is gone (about
 * a minute) but not a server that is up and silent.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <git2.h>
#include <git2/sys/stream.h>

#include "rc_git.h"
#include "rc_http.h"
#include "rc_mem.h"

/* libgit2 1.5's git_socket_stream (src/libgit2/streams/socket.h): its ssh transport reads `s`
 * through that struct from whatever stream the registry made. */
struct net_stream {
    git_stream parent;
    char *host;
    char *port;
    int s;
};

static long timeout_s = RC_GIT_TIMEOUT_DEFAULT_S;

void rc_git_set_timeout(long seconds)
{
    timeout_s = seconds > 0 ? seconds : RC_GIT_TIMEOUT_DEFAULT_S;
}

long rc_git_timeout(void)
{
    return timeout_s;
}

static int timeout_ms(void)
{
    return timeout_s > 2000000 ? 2000000000 : (int)(timeout_s * 1000);
}

/* The last failure of a connection on this thread: libgit2's TLS stream reports a read of ours
 * that failed as its own "SSL error", so rc_git.c adds ours to it (rc_git_net_failure). */
static __thread char last_failure[256];

void rc_git_net_forget(void)
{
    last_failure[0] = '\0';
}

const char *rc_git_net_failure(void)
{
    return last_failure;
}

static void set_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void set_error(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(last_failure, sizeof(last_failure), fmt, ap);
    va_end(ap);
    git_error_set_str(GIT_ERROR_NET, last_failure);
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
    if (st->s >= 0)
        return 0;
    if (e == ETIMEDOUT)
        set_error("failed to connect to %s port %s: no answer in %ld s (--git-timeout)", st->host,
                  st->port, timeout_s);
    else
        set_error("failed to connect to %s port %s: %s", st->host, st->port, strerror(e));
    return -1;
}

/* recv (out 0) or send (out 1) on st, waiting for the socket at most the timeout each time it
 * would block: what the call returned, or -1 with the error set. */
static ssize_t transfer(struct net_stream *st, int out, void *data, size_t len, int flags)
{
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
                      timeout_s);
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
    *out = &st->parent;
    return 0;
}

int rc_git_net_register(void)
{
    git_stream_registration reg = {GIT_STREAM_VERSION, net_new, NULL};

    return git_stream_register(GIT_STREAM_STANDARD, &reg);
}
