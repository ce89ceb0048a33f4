/*
 * rc_buf.c - capped string buffer and whole-file helpers.
 */
#include "rc_buf.h"
#include "rc_mem.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

char rc_buf__empty[1];

void rc_buf_init(struct rc_buf *b, size_t max)
{
    b->ptr = rc_buf__empty;
    b->len = 0;
    b->cap = 0;
    b->max = max;
}

void rc_buf_release(struct rc_buf *b)
{
    if (b->cap)
        free(b->ptr);
    rc_buf_init(b, b->max);
}

void rc_buf_reset(struct rc_buf *b)
{
    b->len = 0;
    if (b->cap)
        b->ptr[0] = '\0';
}

char *rc_buf_detach(struct rc_buf *b, size_t *len)
{
    char *p = b->cap ? b->ptr : rc_xstrdup("");

    if (len)
        *len = b->len;
    rc_buf_init(b, b->max);
    return p;
}

static int grow(struct rc_buf *b, size_t extra, struct rc_err *err)
{
    size_t need = b->len + extra + 1;

    if (extra > (size_t)-1 / 2 - b->len)
        return rc_err_set(err, RC_ERROR, "buffer size overflow");
    if (b->max && b->len + extra > b->max)
        return rc_err_set(err, RC_ERROR, "data exceeds the limit of %zu bytes", b->max);
    if (need <= b->cap)
        return RC_OK;
    if (b->cap == 0) {
        size_t cap = 0;
        char *p = rc_xgrow(NULL, &cap, need, 1);
        p[0] = '\0';
        b->ptr = p;
        b->cap = cap;
        return RC_OK;
    }
    b->ptr = rc_xgrow(b->ptr, &b->cap, need, 1);
    return RC_OK;
}

int rc_buf_reserve(struct rc_buf *b, size_t n, struct rc_err *err)
{
    if (b->max && n > b->max - b->len)
        n = b->max - b->len;
    return grow(b, n, err);
}

int rc_buf_add(struct rc_buf *b, const void *data, size_t n, struct rc_err *err)
{
    /* room for n and the NUL, within the limit: no call (the emitter adds a few bytes at a
     * time) */
    if (n >= b->cap - b->len || (b->max && b->len + n > b->max)) {
        int error = grow(b, n, err);
        if (error < 0)
            return error;
    }
    if (n)
        memcpy(b->ptr + b->len, data, n);
    b->len += n;
    b->ptr[b->len] = '\0';
    return RC_OK;
}

int rc_buf_puts(struct rc_buf *b, const char *s, struct rc_err *err)
{
    return rc_buf_add(b, s, strlen(s), err);
}

int rc_buf_putc(struct rc_buf *b, char c, struct rc_err *err)
{
    if (b->len + 1 < b->cap && (!b->max || b->len < b->max)) {
        b->ptr[b->len++] = c;
        b->ptr[b->len] = '\0';
        return RC_OK;
    }
    return rc_buf_add(b, &c, 1, err);
}

int rc_buf_vprintf(struct rc_buf *b, struct rc_err *err, const char *fmt, va_list ap)
{
    va_list cp;
    int n;
    int error;

    va_copy(cp, ap);
    n = vsnprintf(NULL, 0, fmt, cp);
    va_end(cp);
    if (n < 0)
        return rc_err_set(err, RC_ERROR, "bad format string");
    error = grow(b, (size_t)n, err);
    if (error < 0)
        return error;
    vsnprintf(b->ptr + b->len, (size_t)n + 1, fmt, ap);
    b->len += (size_t)n;
    return RC_OK;
}

int rc_buf_printf(struct rc_buf *b, struct rc_err *err, const char *fmt, ...)
{
    va_list ap;
    int error;

    va_start(ap, fmt);
    error = rc_buf_vprintf(b, err, fmt, ap);
    va_end(ap);
    return error;
}

/* What a failed open says of the path: not there (RC_ENOTFOUND), not usable as given, which
 * is the caller's input to fix (RC_EINVALID), or the system's trouble, which may pass: out of
 * descriptors or memory, an I/O error (RC_ERROR). */
static int open_code(int e)
{
    switch (e) {
    case ENOENT:
    case ENOTDIR:
        return RC_ENOTFOUND;
    case EACCES:
    case EPERM:
    case ELOOP:
    case EISDIR:
    case ENAMETOOLONG:
    case ENXIO:
        return RC_EINVALID;
    default:
        return RC_ERROR;
    }
}

int rc_buf_read_file(struct rc_buf *b, const char *path, struct rc_err *err)
{
    char chunk[65536];
    struct stat st;
    int fd;
    int error = RC_OK;

    /* O_NONBLOCK: opening a FIFO without a writer (or a device) must not wait; what is not a
     * regular file is refused before anything is read from it. */
    fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0)
        return rc_err_set(err, open_code(errno), "cannot open '%s': %s", path, strerror(errno));
    if (fstat(fd, &st) < 0) {
        error = rc_err_set(err, RC_ERROR, "cannot stat '%s': %s", path, strerror(errno));
        goto done;
    }
    if (!S_ISREG(st.st_mode)) {
        error = rc_err_set(err, RC_EINVALID, "'%s' is not a regular file", path);
        goto done;
    }
    if (b->max && (uint64_t)st.st_size > (uint64_t)(b->max - b->len)) {
        error = rc_err_set(err, RC_ERROR, "'%s' is larger than %zu bytes", path, b->max);
        goto done;
    }
    for (;;) {
        ssize_t n = read(fd, chunk, sizeof(chunk));
        if (n < 0) {
            if (errno == EINTR)
                continue;
            error = rc_err_set(err, RC_ERROR, "cannot read '%s': %s", path, strerror(errno));
            break;
        }
        if (n == 0)
            break;
        error = rc_buf_add(b, chunk, (size_t)n, err);
        if (error < 0) {
            rc_err_prefix(err, "'%s': ", path);
            break;
        }
    }
done:
    close(fd);
    return error;
}

int rc_file_read_at(int fd, void *buf, size_t n, uint64_t off)
{
    size_t got = 0;

    while (got < n) {
        ssize_t r = pread(fd, (char *)buf + got, n - got, (off_t)(off + got));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        got += (size_t)r;
    }
    return 0;
}

int rc_file_write_all(int fd, const void *data, size_t n)
{
    const char *p = data;

    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            if (w == 0)
                errno = EIO;
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

int rc_file_write_atomic(const char *path, const void *data, size_t n, struct rc_err *err)
{
    struct rc_buf tmp = RC_BUF_INIT;
    int fd = -1;
    int error;

    error = rc_buf_printf(&tmp, err, "%s.tmp.%ld", path, (long)getpid());
    if (error < 0)
        goto done;
    fd = open(tmp.ptr, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        error = rc_err_set(err, RC_ERROR, "cannot create '%s': %s", tmp.ptr, strerror(errno));
        goto done;
    }
    if (rc_file_write_all(fd, data, n) < 0) {
        error = rc_err_set(err, RC_ERROR, "cannot write '%s': %s", tmp.ptr, strerror(errno));
        goto done;
    }
    if (fsync(fd) < 0 || close(fd) < 0) {
        fd = -1;
        error = rc_err_set(err, RC_ERROR, "cannot write '%s': %s", tmp.ptr, strerror(errno));
        goto done;
    }
    fd = -1;
    if (rename(tmp.ptr, path) < 0) {
        error = rc_err_set(err, RC_ERROR, "cannot rename to '%s': %s", path, strerror(errno));
        goto done;
    }
done:
    if (fd >= 0)
        close(fd);
    if (error < 0 && tmp.len)
        unlink(tmp.ptr);
    rc_buf_release(&tmp);
    return error;
}

int rc_dir_make_private(const char *path, struct rc_err *err)
{
    struct rc_buf b = RC_BUF_INIT;
    struct stat st;
    int error = RC_OK, tightened = 0;

    if (!*path)
        return rc_err_set(err, RC_EINVALID, "empty directory name");
    rc_buf_puts(&b, path, NULL);
    /* the missing folders, each made 0700; existing parents are left as they are */
    for (char *p = b.ptr + 1;; p++) {
        if (*p == '/' || *p == '\0') {
            char c = *p;

            *p = '\0';
            if (mkdir(b.ptr, 0700) < 0 && errno != EEXIST) {
                error = rc_err_set(err, RC_ERROR, "cannot create '%s': %s", b.ptr, strerror(errno));
                goto done;
            }
            *p = c;
            if (!c)
                break;
        }
    }
    if (stat(path, &st) < 0) {
        error = rc_err_set(err, RC_ERROR, "cannot stat '%s': %s", path, strerror(errno));
        goto done;
    }
    if (!S_ISDIR(st.st_mode)) {
        error = rc_err_set(err, RC_EINVALID, "'%s' is not a directory", path);
        goto done;
    }
    if (st.st_uid != geteuid() && geteuid() != 0) {
        error = rc_err_set(err, RC_EINVALID, "'%s' belongs to another user (uid %ld)", path,
                           (long)st.st_uid);
        goto done;
    }
    if (st.st_mode & 077) {
        if (chmod(path, 0700) < 0) {
            error =
                rc_err_set(err, RC_ERROR, "cannot make '%s' private: %s", path, strerror(errno));
            goto done;
        }
        tightened = 1;
    }
done:
    rc_buf_release(&b);
    return error < 0 ? error : tightened;
}
