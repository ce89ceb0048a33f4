/*
 * rc_log.h - leveled logging to stderr.
 *
 * A struct rc_log is built by main and passed down (no global logger). Lines look like
 * "rightplace: warning: <message>" (text) or one JSON object per line (json):
 * {"time":"2026-01-02T03:04:05.678Z","level":"warning","msg":"...","cluster":"gpu-east"}. Never
 * pass credentials to a log call: tokens, keys and kubeconfig contents are not logged anywhere.
 */
#ifndef RC_LOG_H
#define RC_LOG_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

enum rc_log_level { RC_LOG_ERROR = 0, RC_LOG_WARN = 1, RC_LOG_INFO = 2, RC_LOG_DEBUG = 3 };

struct rc_log {
    enum rc_log_level level; /* messages above this level are dropped */
    int json;                /* 1: one JSON object per line */
    FILE *out;               /* NULL: stderr */
};

#define RC_LOG_INIT                                                                                \
    {                                                                                              \
        RC_LOG_INFO, 0, NULL                                                                       \
    }

void rc_log_msg(const struct rc_log *log, enum rc_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void rc_log_vmsg(const struct rc_log *log, enum rc_log_level level, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));

#define rc_log_error(log, ...) rc_log_msg((log), RC_LOG_ERROR, __VA_ARGS__)
#define rc_log_warn(log, ...) rc_log_msg((log), RC_LOG_WARN, __VA_ARGS__)
#define rc_log_info(log, ...) rc_log_msg((log), RC_LOG_INFO, __VA_ARGS__)
#define rc_log_debug(log, ...) rc_log_msg((log), RC_LOG_DEBUG, __VA_ARGS__)

/* A structured field of a log line. In JSON mode each becomes a member of the line's object
 * beside "time" (RFC 3339, UTC, milliseconds), "level" and "msg"; text mode prints the message
 * only (it names the same things in words). Stable names, documented in docs/formats.md:
 * cluster, unit, object, file, commit, deploy, duration_ms, status. */
struct rc_log_field {
    const char *key;
    const char *str; /* NULL: the field is the number num */
    long long num;
};

#define RC_LOG_STR(k, v)                                                                           \
    {                                                                                              \
        (k), (v) ? (v) : "", 0                                                                     \
    }
#define RC_LOG_NUM(k, n)                                                                           \
    {                                                                                              \
        (k), NULL, (long long)(n)                                                                  \
    }

/* Log with fields (nfields entries of fields; fields may be NULL when nfields is 0). */
void rc_log_kv(const struct rc_log *log, enum rc_log_level level, const struct rc_log_field *fields,
               size_t nfields, const char *fmt, ...) __attribute__((format(printf, 5, 6)));
void rc_log_vkv(const struct rc_log *log, enum rc_log_level level,
                const struct rc_log_field *fields, size_t nfields, const char *fmt, va_list ap)
    __attribute__((format(printf, 5, 0)));

/* Is a message at `level` written? (to skip building fields for a dropped line) */
int rc_log_enabled(const struct rc_log *log, enum rc_log_level level);

/* Parse "error|warn|info|debug"; returns -1 when unknown. */
int rc_log_level_parse(const char *s);

#endif
