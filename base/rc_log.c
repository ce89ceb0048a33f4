/*
 * rc_log.c - leveled logging to stderr (text or JSON lines).
 */
#include "rc_log.h"
#include "rc_esc.h"

#include <string.h>
#include <time.h>

static const char *const names[] = {"error", "warning", "info", "debug"};

static void json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

/* "2026-01-02T03:04:05.678Z" */
static void timestamp(char *out, size_t n)
{
    struct timespec ts;
    struct tm tm;
    char base[32];

    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out, n, "%s.%03ldZ", base, ts.tv_nsec / 1000000L);
}

int rc_log_enabled(const struct rc_log *log, enum rc_log_level level)
{
    return !log || level <= log->level;
}

void rc_log_vmsg(const struct rc_log *log, enum rc_log_level level, const char *fmt, va_list ap)
{
    rc_log_vkv(log, level, NULL, 0, fmt, ap);
}

void rc_log_kv(const struct rc_log *log, enum rc_log_level level, const struct rc_log_field *fields,
               size_t nfields, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    rc_log_vkv(log, level, fields, nfields, fmt, ap);
    va_end(ap);
}

void rc_log_vkv(const struct rc_log *log, enum rc_log_level level,
                const struct rc_log_field *fields, size_t nfields, const char *fmt, va_list ap)
{
    FILE *out = (log && log->out) ? log->out : stderr;
    char raw[2048], msg[4096];

    if (log && level > log->level)
        return;
    vsnprintf(raw, sizeof(raw), fmt, ap);
    /* file names and values come from pushers: no escape, CR/LF or invalid UTF-8 reaches
     * the terminal or the log collector raw (rc_esc.h) */
    rc_esc(msg, sizeof(msg), raw);
    flockfile(out); /* one whole line at a time: observe and apply log from several threads */
    if (log && log->json) {
        char ts[48];
        timestamp(ts, sizeof(ts));
        fputs("{\"time\":", out);
        json_string(out, ts);
        fputs(",\"level\":", out);
        json_string(out, names[level]);
        fputs(",\"msg\":", out);
        json_string(out, msg);
        for (size_t i = 0; i < nfields; i++) {
            fputc(',', out);
            json_string(out, fields[i].key);
            fputc(':', out);
            if (fields[i].str) {
                char v[1024];
                rc_esc(v, sizeof(v), fields[i].str);
                json_string(out, v);
            } else
                fprintf(out, "%lld", fields[i].num);
        }
        fputs("}\n", out);
    } else {
        fprintf(out, "rightplace: %s%s%s\n", level == RC_LOG_INFO ? "" : names[level],
                level == RC_LOG_INFO ? "" : ": ", msg);
    }
    fflush(out);
    funlockfile(out);
}

void rc_log_msg(const struct rc_log *log, enum rc_log_level level, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    rc_log_vmsg(log, level, fmt, ap);
    va_end(ap);
}

int rc_log_level_parse(const char *s)
{
    if (!strcmp(s, "error"))
        return RC_LOG_ERROR;
    if (!strcmp(s, "warn") || !strcmp(s, "warning"))
        return RC_LOG_WARN;
    if (!strcmp(s, "info"))
        return RC_LOG_INFO;
    if (!strcmp(s, "debug"))
        return RC_LOG_DEBUG;
    return -1;
}
