/*
 * rc_err.c - formatting of struct rc_err messages. Never allocates.
 */
#include "rc_err.h"
#include "rc_esc.h"

#include <stdio.h>
#include <string.h>

/* A message cut to fit ends in "...", at a character boundary, so that a reader knows the end
 * is missing (a path cut short is not a path). */
static void mark_cut(char *s)
{
    size_t at = strlen(s);

    if (at > RC_ERR_MSG_MAX - 4)
        at = RC_ERR_MSG_MAX - 4;
    while (at > 0 && ((unsigned char)s[at] & 0xC0) == 0x80)
        at--; /* to the first byte of the character that goes */
    memcpy(s + at, "...", 4);
}

/* One line, every other control character escaped (rc_esc.h): messages name files and
 * values that come from pushers, and end up in logs, commits and notes. `cut`: the text was
 * cut to fit already. */
static void one_line(char *s, int cut)
{
    char tmp[RC_ERR_MSG_MAX], wide[4 * RC_ERR_MSG_MAX];

    for (char *p = s; *p; p++) {
        if (*p == '\n' || *p == '\r' || *p == '\t')
            *p = ' ';
    }
    if (rc_esc_needed(s)) {
        memcpy(tmp, s, sizeof(tmp));
        tmp[sizeof(tmp) - 1] = '\0';
        if (rc_esc(wide, sizeof(wide), tmp) >= RC_ERR_MSG_MAX)
            cut = 1;
        rc_esc(s, RC_ERR_MSG_MAX, tmp);
    }
    if (cut)
        mark_cut(s);
}

int rc_err_setv(struct rc_err *err, int code, const char *fmt, va_list ap)
{
    if (!err)
        return code;
    err->code = code;
    one_line(err->msg, vsnprintf(err->msg, sizeof(err->msg), fmt, ap) >= (int)sizeof(err->msg));
    return code;
}

int rc_err_set(struct rc_err *err, int code, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    rc_err_setv(err, code, fmt, ap);
    va_end(ap);
    return code;
}

int rc_err_prefix(struct rc_err *err, const char *fmt, ...)
{
    char prefix[RC_ERR_MSG_MAX];
    char old[RC_ERR_MSG_MAX];
    size_t plen;
    int cut;
    va_list ap;

    if (!err)
        return RC_ERROR;
    va_start(ap, fmt);
    cut = vsnprintf(prefix, sizeof(prefix), fmt, ap) >= (int)sizeof(prefix);
    va_end(ap);
    memcpy(old, err->msg, sizeof(old));
    plen = strlen(prefix);
    memcpy(err->msg, prefix, plen + 1);
    if (plen < sizeof(err->msg) - 1) {
        size_t room = sizeof(err->msg) - 1 - plen;
        size_t olen = strnlen(old, sizeof(old) - 1);
        if (olen > room) {
            olen = room;
            cut = 1;
        }
        memcpy(err->msg + plen, old, olen);
        err->msg[plen + olen] = '\0';
    } else if (old[0]) {
        cut = 1;
    }
    one_line(err->msg, cut);
    return err->code;
}

void rc_err_clear(struct rc_err *err)
{
    if (!err)
        return;
    err->code = RC_OK;
    err->msg[0] = '\0';
}
