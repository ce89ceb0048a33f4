/*
 * rc_esc.c - control characters made visible (see rc_esc.h). Never allocates.
 */
#include "rc_esc.h"

#include <stdio.h>
#include <string.h>

/* The length of the valid UTF-8 sequence at s (n bytes left) and its code point, or 0. */
static size_t utf8_seq(const unsigned char *s, size_t n, unsigned *cp)
{
    size_t len;
    unsigned c, min;

    if (s[0] < 0x80) {
        *cp = s[0];
        return 1;
    }
    if ((s[0] & 0xe0) == 0xc0) {
        len = 2, c = s[0] & 0x1f, min = 0x80;
    } else if ((s[0] & 0xf0) == 0xe0) {
        len = 3, c = s[0] & 0x0f, min = 0x800;
    } else if ((s[0] & 0xf8) == 0xf0) {
        len = 4, c = s[0] & 0x07, min = 0x10000;
    } else {
        return 0;
    }
    if (len > n)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        c = (c << 6) | (s[i] & 0x3f);
    }
    if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
        return 0;
    *cp = c;
    return len;
}

static int bad_cp(unsigned c)
{
    return (c >= 0x80 && c <= 0x9f) || c == 0x061c || c == 0x200e || c == 0x200f ||
           (c >= 0x202a && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069);
}

/* The escape for the character at s (its length in *len), or "" when it is copied. */
static const char *escape_of(const unsigned char *s, size_t n, size_t *len, char tmp[16])
{
    unsigned cp = 0;
    size_t l = utf8_seq(s, n, &cp);

    if (l == 0) {
        *len = 1;
        snprintf(tmp, 16, "\\x%02x", s[0]);
        return tmp;
    }
    *len = l;
    if (l == 1) {
        static const char *const named[] = {
            ['\a'] = "\\a", ['\b'] = "\\b", ['\t'] = "\\t", ['\n'] = "\\n",
            ['\v'] = "\\v", ['\f'] = "\\f", ['\r'] = "\\r", [0x1b] = "\\e"};
        if (cp >= 0x20 && cp != 0x7f)
            return "";
        if (cp < sizeof(named) / sizeof(named[0]) && named[cp])
            return named[cp];
        snprintf(tmp, 16, "\\x%02x", cp);
        return tmp;
    }
    if (!bad_cp(cp))
        return "";
    snprintf(tmp, 16, "\\u{%04x}", cp);
    return tmp;
}

size_t rc_esc(char *out, size_t cap, const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t n = strlen(s), o = 0;

    while (n) {
        char tmp[16];
        size_t len;
        const char *e = escape_of(p, n, &len, tmp);
        const char *src = *e ? e : (const char *)p;
        size_t w = *e ? strlen(e) : len;

        if (o + w + 1 > cap)
            break;
        memcpy(out + o, src, w);
        o += w;
        p += len;
        n -= len;
    }
    if (cap)
        out[o < cap ? o : cap - 1] = '\0';
    return o;
}

int rc_buf_add_esc(struct rc_buf *b, const char *s, size_t n, struct rc_err *err)
{
    const unsigned char *p = (const unsigned char *)s;
    int error = RC_OK;

    while (n && error == RC_OK) {
        char tmp[16];
        size_t len;
        const char *e = escape_of(p, n, &len, tmp);

        error = *e ? rc_buf_puts(b, e, err) : rc_buf_add(b, p, len, err);
        p += len;
        n -= len;
    }
    return error;
}

int rc_esc_needed(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t n = strlen(s);

    while (n) {
        char tmp[16];
        size_t len;

        if (*escape_of(p, n, &len, tmp))
            return 1;
        p += len;
        n -= len;
    }
    return 0;
}
