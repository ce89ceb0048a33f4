/*
 * rc_buf.h - a growable, capped string buffer.
 *
 * Invariants: after RC_BUF_INIT or rc_buf_init, `ptr` is never NULL and always
 * NUL-terminated; `len` excludes the NUL. `max` (0 = unlimited) caps `len`: an append past it
 * fails with RC_ERROR and a message, and leaves the buffer as it was, so a response body or a
 * file read can be bounded without a check at every call site.
 */
#ifndef RC_BUF_H
#define RC_BUF_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "rc_err.h"

struct rc_buf {
    char *ptr;
    size_t len;
    size_t cap; /* 0 while ptr points at the shared empty string */
    size_t max; /* 0 = no limit */
};

extern char rc_buf__empty[];
#define RC_BUF_INIT                                                                                \
    {                                                                                              \
        rc_buf__empty, 0, 0, 0                                                                     \
    }

void rc_buf_init(struct rc_buf *b, size_t max);
/* Free the contents; the buffer is back to RC_BUF_INIT (max kept). */
void rc_buf_release(struct rc_buf *b);
/* Hand the malloc'd string to the caller (never NULL); the buffer is reset. */
char *rc_buf_detach(struct rc_buf *b, size_t *len);
void rc_buf_reset(struct rc_buf *b);

/* Room for n more bytes, so that adding them does not grow the buffer again (within max). */
int rc_buf_reserve(struct rc_buf *b, size_t n, struct rc_err *err);
int rc_buf_add(struct rc_buf *b, const void *data, size_t n, struct rc_err *err);
int rc_buf_puts(struct rc_buf *b, const char *s, struct rc_err *err);
int rc_buf_putc(struct rc_buf *b, char c, struct rc_err *err);
int rc_buf_printf(struct rc_buf *b, struct rc_err *err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int rc_buf_vprintf(struct rc_buf *b, struct rc_err *err, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));

/* Read a whole regular file into b (appending), refusing files larger than b->max (if set)
 * before reading them. Anything else (a FIFO, a device, a directory) is RC_EINVALID without a
 * read: the open never blocks. Symbolic links are followed (Kubernetes mounts secrets through
 * them); callers read only paths the operator gave (docs/security.md). */
int rc_buf_read_file(struct rc_buf *b, const char *path, struct rc_err *err);
/* Read exactly n bytes of fd at offset off (pread, again after EINTR): 0, or -1 on an error
 * or when the file ends first. */
int rc_file_read_at(int fd, void *buf, size_t n, uint64_t off);
/* Write all n bytes of data to fd (again after EINTR): 0, or -1 with errno set. */
int rc_file_write_all(int fd, const void *data, size_t n);
/* Write data to path atomically (temp file in the same folder, fsync, rename); mode 0600. */
int rc_file_write_atomic(const char *path, const void *data, size_t n, struct rc_err *err);

/* Make directory `path` (and missing parents, 0700) private to this user: it must be a
 * directory owned by the effective user (root may use any), and group and other lose every
 * access bit. Returns
 * 1 when it had to be tightened, 0 when it was private already, < 0 on error. */
int rc_dir_make_private(const char *path, struct rc_err *err);

#endif
