/*
 * rc_log.c - leveled logging to stderr (text or JSON lines).
 */
#include "rc_log.h"

#include <string.h>

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

void rc_log_vmsg(const struct rc_log *log, enum rc_log_level level, const char *fmt, va_list ap)
{
    FILE *out = (log && log->out) ? log->out : stderr;
    char msg[2048];

    if (log && level > log->level)
        return;
    vsnprintf(msg, sizeof(msg), fmt, ap);
    for (char *p = msg; *p; p++) {
        if (*p == '\n' || *p == '\r')
            *p = ' ';
    }
    flockfile(out); /* one whole line at a time: observe and apply log from several threads */
    if (log && log->json) {
        fputs("{\"level\":", out);
        json_string(out, names[level]);
        fputs(",\"msg\":", out);
        json_string(out, msg);
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
