/*
 * rc_err.h - error codes and the caller-owned error struct shared by every module.
 *
 * Every fallible function returns int: RC_OK (0) on success, a negative RC_E* code on
 * failure, and fills the struct rc_err passed in last with a one-line message. Messages are
 * lowercase, without a full stop, the problem first and the subject in quotes:
 * "unknown cluster 'prod-eu'". The lowest layer states the fact; callers do not wrap it in
 * "failed to ...". Codes are never renumbered; add one only when a caller branches on it.
 */
#ifndef RC_ERR_H
#define RC_ERR_H

#include <stdarg.h>

enum rc_code {
    RC_OK = 0,
    RC_ERROR = -1,     /* anything else: system, library, out of range */
    RC_ENOTFOUND = -2, /* a thing looked up does not exist */
    RC_EINVALID = -3,  /* bad input: YAML, manifest, policy, flag */
    RC_ECONFLICT = -4, /* someone else moved a ref first; a lock is held */
    RC_EHTTP = -5,     /* the API server answered with an error status */
    RC_ETRANSPORT = -6 /* no answer: connect, TLS, timeout, dropped connection */
};

#define RC_ERR_MSG_MAX 256

struct rc_err {
    int code;
    char msg[RC_ERR_MSG_MAX];
};

#define RC_ERR_INIT {0, {0}}

/* Set err (may be NULL) to code and a printf-style message; returns code, so that
 * `return rc_err_set(err, RC_EINVALID, "bad '%s'", x);` takes one line. The message is
 * truncated to fit and CR/LF are turned into spaces so that it stays one line. */
int rc_err_set(struct rc_err *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int rc_err_setv(struct rc_err *err, int code, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));

/* Prefix an existing message with context: "file.yaml:3:5: " + old message. Keeps the code. */
int rc_err_prefix(struct rc_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Reset to RC_OK and an empty message. */
void rc_err_clear(struct rc_err *err);

#endif
