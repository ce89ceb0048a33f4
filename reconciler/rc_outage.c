/*
 * rc_outage.c - since when each live cluster has been unreachable (see rc_outage.h).
 */
#include "rc_outage.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rc_banned.h"
#include "rc_buf.h"
#include "rc_sort.h"

struct seen {
    char *name;
    int64_t since;
};

/* Names the file holds: Kubernetes object names (DNS subdomains). */
static int valid_name(const char *p, size_t n)
{
    if (n == 0 || n > 253)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = p[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.'))
            return 0;
    }
    return 1;
}

static void seen_free(struct seen *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(s[i].name);
    free(s);
}

/* Read the whole file (at most RC_OUTAGE_FILE_MAX bytes) into *out (NUL-terminated, freed by
 * the caller). 1: read; 0: there is none; -1: not usable (reason in why). */
static int slurp(char **out, size_t *len, const char *path, const char **why)
{
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    struct stat st;
    char *buf = NULL;
    size_t n = 0;
    int ret = -1;

    *out = NULL;
    if (fd < 0) {
        *why = strerror(errno);
        return errno == ENOENT ? 0 : -1;
    }
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        *why = "not a regular file";
        goto done;
    }
    if ((size_t)st.st_size > RC_OUTAGE_FILE_MAX) {
        *why = "larger than 64 MiB";
        goto done;
    }
    /* room for the file as it is, and a byte to see it grew */
    buf = malloc((size_t)st.st_size + 2);
    if (!buf) {
        *why = "out of memory";
        goto done;
    }
    for (;;) {
        ssize_t r = read(fd, buf + n, (size_t)st.st_size + 1 - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            *why = strerror(errno);
            goto done;
        }
        if (r == 0)
            break;
        n += (size_t)r;
        if (n > (size_t)st.st_size) {
            *why = "changed while it was read";
            goto done;
        }
    }
    buf[n] = '\0';
    *out = buf;
    *len = n;
    buf = NULL;
    ret = 1;
done:
    free(buf);
    close(fd);
    return ret;
}

static int cmp_seen(const void *a, const void *b)
{
    return strcmp(((const struct seen *)a)->name, ((const struct seen *)b)->name);
}

/* "<name> <seconds>\n" lines, sorted by name; -1 (with the line number) when one is
 * malformed. */
static int parse(struct seen **out, size_t *nout, char *text, size_t len, size_t *bad_line)
{
    struct seen *s = NULL;
    size_t n = 0, cap = 0, line = 0;
    char *p = text, *end = text + len;

    *out = NULL;
    *nout = 0;
    while (p < end) {
        char *nl = memchr(p, '\n', (size_t)(end - p)), *sp, *e;
        long long v;

        line++;
        if (!nl)
            goto bad; /* every line ends with a newline: a cut file is not trusted */
        *nl = '\0';
        sp = strchr(p, ' ');
        if (!sp || !valid_name(p, (size_t)(sp - p)))
            goto bad;
        *sp = '\0';
        errno = 0;
        v = strtoll(sp + 1, &e, 10);
        if (errno || e == sp + 1 || *e || v < 0)
            goto bad;
        if (n == cap) {
            struct seen *ns = realloc(s, (cap ? 2 * cap : 16) * sizeof(*s));
            if (!ns)
                goto bad;
            s = ns;
            cap = cap ? 2 * cap : 16;
        }
        s[n].name = strdup(p);
        if (!s[n].name)
            goto bad;
        s[n].since = (int64_t)v;
        n++;
        p = nl + 1;
    }
    /* by name, for find (a name listed twice: either line, as before) */
    rc_sort(s, n, sizeof(*s), cmp_seen);
    *out = s;
    *nout = n;
    return 0;
bad:
    seen_free(s, n);
    *bad_line = line;
    return -1;
}

static int cmp_name_seen(const void *name, const void *x)
{
    return strcmp(name, ((const struct seen *)x)->name);
}

/* s sorted by name (parse) */
static const struct seen *find(const struct seen *s, size_t n, const char *name)
{
    return n ? bsearch(name, s, n, sizeof(*s), cmp_name_seen) : NULL;
}

static int write_file(const char *path, const char *data, size_t len, struct rc_err *err)
{
    struct rc_buf tmp = RC_BUF_INIT;
    int fd = -1, error = RC_OK;
    size_t off = 0;

    rc_buf_printf(&tmp, NULL, "%s.tmp", path);
    unlink(tmp.ptr);
    fd = open(tmp.ptr, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        error = rc_err_set(err, RC_ERROR, "cannot write '%s': %s", tmp.ptr, strerror(errno));
        goto done;
    }
    while (off < len) {
        ssize_t w = write(fd, data + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0) {
            error = rc_err_set(err, RC_ERROR, "cannot write '%s': %s", tmp.ptr, strerror(errno));
            goto done;
        }
        off += (size_t)w;
    }
    if (close(fd) < 0) {
        fd = -1;
        error = rc_err_set(err, RC_ERROR, "cannot write '%s': %s", tmp.ptr, strerror(errno));
        goto done;
    }
    fd = -1;
    if (rename(tmp.ptr, path) < 0)
        error = rc_err_set(err, RC_ERROR, "cannot replace '%s': %s", path, strerror(errno));
done:
    if (fd >= 0)
        close(fd);
    if (error < 0)
        unlink(tmp.ptr);
    rc_buf_release(&tmp);
    return error;
}

int rc_outage_track(struct pl_cluster *fleet, size_t nfleet, const char *path, int64_t now,
                    int write, const struct rc_log *log, struct rc_err *err)
{
    struct seen *old = NULL;
    size_t nold = 0, bad_line = 0;
    char *text = NULL;
    size_t len = 0;
    const char *why = NULL;
    struct rc_buf next = RC_BUF_INIT;
    int r, error = RC_OK;

    r = path ? slurp(&text, &len, path, &why) : 0;
    if (r < 0) {
        rc_log_warn(log, "'%s': %s: the unreachable clusters' clocks start again", path, why);
    } else if (r > 0 && parse(&old, &nold, text, len, &bad_line) < 0) {
        rc_log_warn(log, "'%s':%zu: malformed: the unreachable clusters' clocks start again", path,
                    bad_line);
        nold = 0;
        old = NULL;
    }
    for (size_t i = 0; i < nfleet; i++) {
        struct pl_cluster *c = &fleet[i];
        const struct seen *s;
        int64_t since = now;

        c->unreachable_for = 0;
        if (!c->live || c->reachable || !c->name || !valid_name(c->name, strlen(c->name)))
            continue;
        s = find(old, nold, c->name);
        if (s && s->since <= now)
            since = s->since;
        c->unreachable_for = now - since;
        rc_buf_printf(&next, NULL, "%s %" PRId64 "\n", c->name, since);
    }
    /* the lines are in fleet order (the Cluster objects' order): the same outage, the same
     * bytes, so a pass rewrites the file only when a cluster goes down or comes back */
    if (write && path && !(r > 0 && len == next.len && !memcmp(text, next.ptr, len)) &&
        !(r == 0 && next.len == 0))
        error = write_file(path, next.ptr, next.len, err);
    rc_buf_release(&next);
    seen_free(old, nold);
    free(text);
    return error;
}

size_t rc_outage_names(const char *const **out, const char *path, struct rc_arena *a)
{
    struct seen *s = NULL;
    size_t n = 0, bad_line = 0, len = 0;
    char *text = NULL;
    const char *why = NULL, **v;

    *out = NULL;
    if (!path || slurp(&text, &len, path, &why) <= 0 || parse(&s, &n, text, len, &bad_line) < 0) {
        free(text);
        return 0;
    }
    v = rc_arena_calloc(a, n + 1, sizeof(*v));
    for (size_t i = 0; i < n; i++)
        v[i] = rc_arena_strdup(a, s[i].name);
    seen_free(s, n);
    free(text);
    *out = v;
    return n;
}
