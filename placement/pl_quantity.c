/*
 * pl_quantity.c - Kubernetes resource quantities as exact int64 milli-units.
 *
 * Parsing follows resource.Quantity's scanner (parseQuantityString) for what it accepts and
 * its suffix table for what the suffix means, but computes the value exactly on the decimal
 * digits instead of with big decimals: the digits are multiplied by the binary suffix in
 * base 10, and the decimal exponent only moves the decimal point. Rounding to milli-units is
 * away from zero, as MilliValue() does. No floating point anywhere.
 *
 * Not here: which resources may be negative or fractional (callers decide), and canonical
 * Kubernetes output (pl_quantity_format aims at people, not at kubectl's exact strings).
 */
#include "pl_quantity.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rc_err.h"
#include "rc_mem.h"
#include "rc_banned.h"

/* ==== Parsing ==== */

struct suffix {
    const char *s;
    int e10; /* value = number * 10^e10 * 2^e2 */
    int e2;
};

static const struct suffix suffixes[] = {
    {"n", -9, 0},  {"u", -6, 0},  {"m", -3, 0},  {"", 0, 0},    {"k", 3, 0},   {"M", 6, 0},
    {"G", 9, 0},   {"T", 12, 0},  {"P", 15, 0},  {"E", 18, 0},  {"Ki", 0, 10}, {"Mi", 0, 20},
    {"Gi", 0, 30}, {"Ti", 0, 40}, {"Pi", 0, 50}, {"Ei", 0, 60},
};

/* Exponents beyond this are saturated: any exponent past it is out of range (positive) or
 * rounds to the smallest unit (negative), for any number shorter than 10^14 digits. */
#define EXP_CAP INT64_C(1000000000000000)

/* Digits of 2^60 (the largest binary suffix), the most a multiplication adds. */
#define MUL_HEADROOM 24

static int is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static int invalid(struct rc_err *err, const char *text, const char *why)
{
    size_t n = strlen(text);

    return rc_err_set(err, RC_EINVALID, "invalid quantity '%.64s%s': %s", text, n > 64 ? "..." : "",
                      why);
}

static int out_of_range(struct rc_err *err, const char *text)
{
    size_t n = strlen(text);

    return rc_err_set(err, RC_EINVALID, "quantity '%.64s%s' is out of range", text,
                      n > 64 ? "..." : "");
}

/* strconv.ParseInt(s, 10, 64) on "[+-]digits" to the end of s, as Kubernetes reads an
 * exponent, then saturated at +-EXP_CAP. 0: not an integer, or outside int64. */
static int parse_exponent(int64_t *out, const char *s)
{
    int neg = 0;
    uint64_t v = 0, lim;

    if (*s == '+' || *s == '-')
        neg = *s++ == '-';
    if (!is_digit(*s))
        return 0;
    lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    for (; is_digit(*s); s++) {
        if (v > (lim - (uint64_t)(*s - '0')) / 10)
            return 0;
        v = v * 10 + (uint64_t)(*s - '0');
    }
    if (*s)
        return 0;
    if (v > (uint64_t)EXP_CAP)
        v = (uint64_t)EXP_CAP;
    *out = neg ? -(int64_t)v : (int64_t)v;
    return 1;
}

/* Interpret the suffix: decimal or binary SI, or an exponent. 0: unknown. */
static int interpret_suffix(int64_t *e10, int *e2, const char *s)
{
    for (size_t i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++) {
        if (!strcmp(s, suffixes[i].s)) {
            *e10 = suffixes[i].e10;
            *e2 = suffixes[i].e2;
            return 1;
        }
    }
    if ((s[0] == 'e' || s[0] == 'E') && s[1]) {
        *e2 = 0;
        return parse_exponent(e10, s + 1);
    }
    return 0;
}

/* digits[0..n) as an unsigned integer; 0 on overflow. */
static int digits_value(uint64_t *out, const unsigned char *d, size_t n)
{
    uint64_t v = 0;

    for (size_t i = 0; i < n; i++) {
        if (v > (UINT64_MAX - d[i]) / 10)
            return 0;
        v = v * 10 + d[i];
    }
    *out = v;
    return 1;
}

/* |value| in milli-units of the significant digits d[0..n) (no leading or trailing zeros,
 * n >= 1) times 2^e2 times 10^e, rounded away from zero. 0: does not fit in int64. */
static int magnitude(uint64_t *out, unsigned char *buf, size_t n, int e2, int64_t e)
{
    size_t start = MUL_HEADROOM, end = MUL_HEADROOM + n, m;
    uint64_t v;

    /* value >= 10^(n-1+e) >= 10^19 */
    if ((int64_t)n + e >= 20)
        return 0;
    /* value < 10^(n+e) * 2^60 < 10^(n+e+19) <= 10^-1: rounds up to the smallest unit */
    if ((int64_t)n + e <= -20) {
        *out = 1;
        return 1;
    }
    for (int i = 0; i < e2 / 10; i++) {
        unsigned carry = 0;
        for (size_t j = end; j > start; j--) {
            unsigned x = buf[j - 1] * 1024u + carry;
            buf[j - 1] = (unsigned char)(x % 10);
            carry = x / 10;
        }
        while (carry) {
            buf[--start] = (unsigned char)(carry % 10);
            carry /= 10;
        }
    }
    m = end - start;
    if (e >= 0) {
        if (!digits_value(&v, buf + start, m))
            return 0;
        for (int64_t i = 0; i < e; i++) {
            if (v > UINT64_MAX / 10)
                return 0;
            v *= 10;
        }
    } else {
        size_t k = (size_t)-e, ip = m > k ? m - k : 0;
        int rest = 0;
        if (!digits_value(&v, buf + start, ip))
            return 0;
        for (size_t j = start + ip; j < end; j++)
            rest |= buf[j] != 0;
        if (rest) {
            if (v == UINT64_MAX)
                return 0;
            v++;
        }
    }
    if (v > (uint64_t)INT64_MAX)
        return 0;
    *out = v;
    return 1;
}

int pl_quantity_parse(int64_t *out_milli, const char *text, struct rc_err *err)
{
    const char *p = text, *int_start, *frac_start = NULL, *suffix, *q;
    size_t nint, nfrac = 0, n, lead, trail;
    unsigned char stackbuf[128], *buf = stackbuf;
    int neg = 0, e2 = 0, error;
    int64_t e10 = 0, e;
    uint64_t mag = 0;
    char why[64];

    if (!text || !*text)
        return rc_err_set(err, RC_EINVALID, "invalid quantity '': empty");
    if (*p == '+' || *p == '-')
        neg = *p++ == '-';
    int_start = p;
    while (is_digit(*p))
        p++;
    nint = (size_t)(p - int_start);
    if (*p == '.') {
        frac_start = ++p;
        while (is_digit(*p))
            p++;
        nfrac = (size_t)(p - frac_start);
    }
    if (nint + nfrac == 0)
        return invalid(err, text, "expected a number");

    /* The scanner's shape for the rest: [eEinumkKMGTP]* [+-]? [0-9]* and nothing else. */
    suffix = q = p;
    while (*q && strchr("eEinumkKMGTP", *q))
        q++;
    if (*q == '+' || *q == '-')
        q++;
    while (is_digit(*q))
        q++;
    if (*q) {
        snprintf(why, sizeof(why), "unexpected character at column %zu", (size_t)(q - text) + 1);
        return invalid(err, text, why);
    }
    if (!interpret_suffix(&e10, &e2, suffix)) {
        snprintf(why, sizeof(why), "unknown suffix '%.16s'", suffix);
        return invalid(err, text, why);
    }

    /* The digits without the point, as values 0..9, right of room for the multiplication. */
    n = nint + nfrac;
    if (n + MUL_HEADROOM > sizeof(stackbuf))
        buf = rc_xmalloc(n + MUL_HEADROOM);
    for (size_t i = 0; i < nint; i++)
        buf[MUL_HEADROOM + i] = (unsigned char)(int_start[i] - '0');
    for (size_t i = 0; i < nfrac; i++)
        buf[MUL_HEADROOM + nint + i] = (unsigned char)(frac_start[i] - '0');
    for (lead = 0; lead < n && buf[MUL_HEADROOM + lead] == 0; lead++)
        ;
    if (lead == n) {
        *out_milli = 0;
        error = RC_OK;
        goto done;
    }
    for (trail = 0; buf[MUL_HEADROOM + n - 1 - trail] == 0; trail++)
        ;
    if (lead)
        memmove(buf + MUL_HEADROOM, buf + MUL_HEADROOM + lead, n - lead);
    n -= lead + trail;
    /* |e10| <= EXP_CAP and nfrac, trail < SIZE_MAX / 2: no overflow in int64 */
    e = e10 + 3 - (int64_t)nfrac + (int64_t)trail;
    if (!magnitude(&mag, buf, n, e2, e)) {
        error = out_of_range(err, text);
        goto done;
    }
    *out_milli = neg ? -(int64_t)mag : (int64_t)mag;
    error = RC_OK;
done:
    if (buf != stackbuf)
        free(buf);
    return error;
}

/* ==== Formatting ==== */

static int ndigits(uint64_t v)
{
    int n = 1;

    while (v >= 10) {
        v /= 10;
        n++;
    }
    return n;
}

void pl_quantity_format(char out[PL_QUANTITY_STR], int64_t milli, int is_memory)
{
    static const char *const dec[] = {"", "k", "M", "G", "T", "P", "E"};
    static const char *const bin[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
    const char *sign = milli < 0 ? "-" : "";
    uint64_t mag = milli < 0 ? (uint64_t)0 - (uint64_t)milli : (uint64_t)milli;
    uint64_t units, md, mb;
    int id = 0, ib = 0;

    if (mag % 1000) {
        snprintf(out, PL_QUANTITY_STR, "%s%" PRIu64 "m", sign, mag);
        return;
    }
    units = mag / 1000;
    if (!is_memory || units == 0) {
        snprintf(out, PL_QUANTITY_STR, "%s%" PRIu64, sign, units);
        return;
    }
    for (md = units; id < 6 && md % 1000 == 0; id++)
        md /= 1000;
    for (mb = units; ib < 6 && mb % 1024 == 0; ib++)
        mb /= 1024;
    if (ib > 0 && mb < 10000 && ndigits(mb) + 2 <= ndigits(md) + (int)strlen(dec[id]))
        snprintf(out, PL_QUANTITY_STR, "%s%" PRIu64 "%s", sign, mb, bin[ib]);
    else
        snprintf(out, PL_QUANTITY_STR, "%s%" PRIu64 "%s", sign, md, dec[id]);
}
