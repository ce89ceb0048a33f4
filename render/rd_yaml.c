/*
 * rd_yaml.c - YAML text <-> cJSON trees; the only file that calls libyaml.
 *
 * Loading walks libyaml's event stream (yaml_parser_parse) and builds one cJSON tree per
 * document, recording the source position of every node in a pointer -> position table.
 * It does not use libyaml's document API, so anchors, aliases and merge keys are expanded
 * here, against the node, depth and byte budgets, before anything is copied: a "billion
 * laughs" document is refused at the first alias that would cross a limit.
 *
 * Plain scalars are typed as go-yaml v2 does (the library behind sigs.k8s.io/yaml and so
 * kubectl):
 *   - null:  "" (empty), ~, null, Null, NULL
 *   - bool:  true/True/TRUE, false/False/FALSE, and the YAML 1.1 words y/Y/yes/Yes/YES,
 *            n/N/no/No/NO, on/On/ON, off/Off/OFF (kubectl reads `enabled: yes` as true)
 *   - int:   after removing '_': [+-] decimal, 0x hex, 0o or leading-0 octal, 0b binary,
 *            within int64 (or uint64); stored as a double, plus the exact decimal text for
 *            an int64 beyond 2^53 (see "Number text")
 *   - float: [+-](.d+|d+(.d*)?)([eE][+-]?d+)? that fits a double; .inf/.Inf/.INF with an
 *            optional sign, .nan/.NaN/.NAN (refused as values: kubectl refuses them)
 *   - everything else, timestamps included, is a string.
 * Quoted and block scalars are always strings. Tags: !!str makes a string of anything;
 * !!int, !!float, !!bool, !!null demand a value of that type; other tags are ignored.
 * Mapping keys are turned into strings as sigs.k8s.io/yaml does (see key_text); a mapping or
 * sequence used as a key is an error. Merge keys (<<) follow the YAML merge spec: keys written in
 * the mapping win over merged ones wherever they appear; among merged mappings the first wins.
 * Scalars containing a NUL character are refused (cJSON strings end at NUL).
 *
 * Emitting is a small hand-written printer (not libyaml's emitter) for exact control of
 * the canonical form: block style, 2-space indentation, sequences inside mappings at the
 * mapping's indentation (as kubectl prints them), double-quoted strings where a plain one
 * would read back as something else, literal block scalars for multi-line text.
 */
#include "rd_yaml.h"

#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "rc_hash.h"
#include "rc_mem.h"
#include "rc_banned.h"

/* ==== Pointer -> position table (open addressing) ==== */

struct pos_ent {
    const void *key;
    struct rd_pos pos;
};

struct pos_map {
    struct pos_ent *v;
    size_t n, cap; /* cap: 0 or a power of two */
};

static size_t ptr_hash(const void *p)
{
    uint64_t x = (uint64_t)(uintptr_t)p;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return (size_t)x;
}

static void pos_map_put(struct pos_map *m, const void *key, struct rd_pos pos);

/* The table is allocated as the trees are (cJSON's allocator): inside an arena span of
 * rd_jarena.h it lives and goes with them. */
static void pos_map_resize(struct pos_map *m, size_t cap)
{
    struct pos_ent *old = m->v;
    size_t oldcap = m->cap;

    m->cap = cap;
    if (cap > SIZE_MAX / sizeof(*m->v) || !(m->v = cJSON_malloc(cap * sizeof(*m->v))))
        rc_xmalloc(SIZE_MAX); /* out of memory: abort through the policy of rc_mem.h */
    memset(m->v, 0, cap * sizeof(*m->v));
    m->n = 0;
    for (size_t i = 0; i < oldcap; i++)
        if (old[i].key)
            pos_map_put(m, old[i].key, old[i].pos);
    cJSON_free(old);
}

static void pos_map_grow(struct pos_map *m)
{
    pos_map_resize(m, m->cap ? m->cap * 2 : 64);
}

/* Room for the nodes of `len` bytes of YAML, as manifests run (about one node in 24 bytes),
 * so that a file's table is not grown and copied four or five times as it fills; at most
 * 32,768 entries ahead (512 KiB), whatever the input. */
static void pos_map_reserve(struct pos_map *m, size_t len)
{
    size_t want = len / 24 * 4 / 3, cap = 64;

    while (cap < want && cap < ((size_t)1 << 15))
        cap *= 2;
    if (cap > m->cap)
        pos_map_resize(m, cap);
}

static void pos_map_put(struct pos_map *m, const void *key, struct rd_pos pos)
{
    size_t i;

    if ((m->n + 1) * 4 > m->cap * 3)
        pos_map_grow(m);
    for (i = ptr_hash(key) & (m->cap - 1); m->v[i].key; i = (i + 1) & (m->cap - 1)) {
        if (m->v[i].key == key) {
            m->v[i].pos = pos;
            return;
        }
    }
    m->v[i].key = key;
    m->v[i].pos = pos;
    m->n++;
}

static struct rd_pos pos_map_get(const struct pos_map *m, const void *key)
{
    struct rd_pos none = {0, 0};

    if (!m->cap || !key)
        return none;
    for (size_t i = ptr_hash(key) & (m->cap - 1); m->v[i].key; i = (i + 1) & (m->cap - 1))
        if (m->v[i].key == key)
            return m->v[i].pos;
    return none;
}

/* ==== String -> pointer table, for anchors and the keys of one mapping ==== */

struct str_ent {
    const char *key; /* borrowed */
    void *val;
};

struct str_map {
    struct str_ent *v;
    size_t n, cap;
};

static size_t str_hash(const char *s)
{
    return (size_t)rc_fnv1a(RC_FNV_INIT, s, strlen(s));
}

static void str_map_put(struct str_map *m, const char *key, void *val);

static void str_map_grow(struct str_map *m)
{
    struct str_ent *old = m->v;
    size_t oldcap = m->cap;

    m->cap = oldcap ? oldcap * 2 : 16;
    m->v = rc_xcalloc(m->cap, sizeof(*m->v));
    m->n = 0;
    for (size_t i = 0; i < oldcap; i++)
        if (old[i].key)
            str_map_put(m, old[i].key, old[i].val);
    free(old);
}

/* Insert or overwrite. */
static void str_map_put(struct str_map *m, const char *key, void *val)
{
    size_t i;

    if ((m->n + 1) * 4 > m->cap * 3)
        str_map_grow(m);
    for (i = str_hash(key) & (m->cap - 1); m->v[i].key; i = (i + 1) & (m->cap - 1)) {
        if (strcmp(m->v[i].key, key) == 0) {
            m->v[i].key = key;
            m->v[i].val = val;
            return;
        }
    }
    m->v[i].key = key;
    m->v[i].val = val;
    m->n++;
}

static void *str_map_get(const struct str_map *m, const char *key)
{
    if (!m->cap)
        return NULL;
    for (size_t i = str_hash(key) & (m->cap - 1); m->v[i].key; i = (i + 1) & (m->cap - 1))
        if (strcmp(m->v[i].key, key) == 0)
            return m->v[i].val;
    return NULL;
}

static void str_map_release(struct str_map *m)
{
    free(m->v);
    m->v = NULL;
    m->n = m->cap = 0;
}

/* ==== The document set ==== */

struct rd_docs {
    char *file;
    cJSON **docs;
    size_t n, cap;
    struct pos_map pos;
    cJSON *graveyard; /* nodes dropped while loading (overridden keys, merge sources): kept
                         alive so that no address in the position table is ever reused */
    size_t bytes;     /* memory held, approximately (see rd_docs_bytes) */
};

void rd_docs_free(struct rd_docs *docs)
{
    if (!docs)
        return;
    for (size_t i = 0; i < docs->n; i++)
        cJSON_Delete(docs->docs[i]);
    free(docs->docs);
    cJSON_Delete(docs->graveyard);
    cJSON_free(docs->pos.v);
    free(docs->file);
    free(docs);
}

size_t rd_docs_count(const struct rd_docs *docs)
{
    return docs ? docs->n : 0;
}

cJSON *rd_docs_get(const struct rd_docs *docs, size_t i)
{
    return docs && i < docs->n ? docs->docs[i] : NULL;
}

cJSON *rd_docs_take(struct rd_docs *docs, size_t i)
{
    cJSON *d;

    if (!docs || i >= docs->n)
        return NULL;
    d = docs->docs[i];
    docs->docs[i] = NULL;
    return d;
}

struct rd_pos rd_docs_pos(const struct rd_docs *docs, const cJSON *node)
{
    struct rd_pos none = {0, 0};

    return docs ? pos_map_get(&docs->pos, node) : none;
}

const char *rd_docs_file(const struct rd_docs *docs)
{
    return docs ? docs->file : NULL;
}

static void docs_push(struct rd_docs *d, cJSON *root);

/* Put positions on the first *left nodes of the tree under n, in pre-order. */
static void pos_preorder(struct pos_map *m, const cJSON *n, const struct rd_pos **pos, size_t *left)
{
    for (; n && *left; n = n->next) {
        pos_map_put(m, n, **pos);
        (*pos)++;
        (*left)--;
        if (n->child)
            pos_preorder(m, n->child, pos, left);
    }
}

void rd_docs_from_trees(struct rd_docs **out, const char *file, cJSON **roots, size_t n,
                        const struct rd_pos *const *pos, const size_t *npos)
{
    struct rd_docs *d = rc_xcalloc(1, sizeof(*d));

    d->file = rc_xstrdup(file);
    for (size_t i = 0; i < n; i++) {
        docs_push(d, roots[i]);
        if (pos && pos[i] && npos && npos[i]) {
            const struct rd_pos *p = pos[i];
            size_t left = npos[i];
            /* the root alone: its siblings (->next) are other documents' business */
            pos_map_put(&d->pos, roots[i], *p++);
            left--;
            if (left && roots[i]->child)
                pos_preorder(&d->pos, roots[i]->child, &p, &left);
        }
    }
    *out = d;
}

const char *rd_yaml_version(void)
{
    return yaml_get_version_string();
}

/* ==== Scalar typing ==== */

enum scalar_kind { SK_STR, SK_NULL, SK_TRUE, SK_FALSE, SK_NUM, SK_MERGE };

static int in_list(const char *s, const char *const *list)
{
    for (; *list; list++)
        if (strcmp(s, *list) == 0)
            return 1;
    return 0;
}

static int is_digit(int c)
{
    return c >= '0' && c <= '9';
}

/* [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)? : go-yaml v2's yamlStyleFloat */
static int float_syntax(const char *s)
{
    if (*s == '+' || *s == '-')
        s++;
    if (*s == '.') {
        s++;
        if (!is_digit(*s))
            return 0;
        while (is_digit(*s))
            s++;
    } else {
        if (!is_digit(*s))
            return 0;
        while (is_digit(*s))
            s++;
        if (*s == '.') {
            s++;
            while (is_digit(*s))
                s++;
        }
    }
    if (*s == 'e' || *s == 'E') {
        s++;
        if (*s == '+' || *s == '-')
            s++;
        if (!is_digit(*s))
            return 0;
        while (is_digit(*s))
            s++;
    }
    return *s == '\0';
}

/* What a number literal was. */
struct num_info {
    int is_int;   /* an integer literal (Go's ParseInt or ParseUint took it) */
    int in_int64; /* ... within int64: i is exact */
    int64_t i;
};

/* Go's strconv.ParseInt(s, 0, 64) / ParseUint: prefixes 0x 0o 0b, leading 0 = octal.
 * Returns 1 and sets *out (and *ni, may be NULL) when s is such an integer within int64 or
 * uint64. */
static int parse_go_int(const char *s, double *out, struct num_info *ni)
{
    int neg = 0, base = 10;
    const char *p = s;
    uint64_t v = 0, lim;

    if (*p == '+' || *p == '-')
        neg = *p++ == '-';
    if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
        base = 16;
        p += 2;
    } else if (p[0] == '0' && (p[1] == 'o' || p[1] == 'O')) {
        base = 8;
        p += 2;
    } else if (p[0] == '0' && (p[1] == 'b' || p[1] == 'B')) {
        base = 2;
        p += 2;
    } else if (p[0] == '0' && p[1]) {
        base = 8;
        p += 1;
    }
    if (!*p)
        return 0;
    lim = neg ? (uint64_t)INT64_MAX + 1 : (*s == '+' ? (uint64_t)INT64_MAX : UINT64_MAX);
    for (; *p; p++) {
        int d;
        if (is_digit(*p))
            d = *p - '0';
        else if (*p >= 'a' && *p <= 'f')
            d = *p - 'a' + 10;
        else if (*p >= 'A' && *p <= 'F')
            d = *p - 'A' + 10;
        else
            return 0;
        if (d >= base)
            return 0;
        if (v > (lim - (uint64_t)d) / (uint64_t)base)
            return 0;
        v = v * (uint64_t)base + (uint64_t)d;
    }
    if (neg)
        *out = v == (uint64_t)INT64_MAX + 1 ? (double)INT64_MIN : -(double)(int64_t)v;
    else
        *out = (double)v;
    if (ni) {
        ni->is_int = 1;
        ni->in_int64 = neg || v <= (uint64_t)INT64_MAX;
        ni->i = !ni->in_int64 ? 0
                : neg         ? (v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v)
                              : (int64_t)v;
    }
    return 1;
}

/* A whole number (without libm's floor) */
static int is_integral(double d)
{
    if (!isfinite(d))
        return 0;
    if (d >= 9007199254740992.0 || d <= -9007199254740992.0)
        return 1; /* doubles this large have no fraction bits */
    return d == (double)(int64_t)d;
}

/* How go-yaml v2 reads a plain scalar (see the top comment). */
static enum scalar_kind resolve_plain(const char *s, double *num, struct num_info *ni)
{
    static const char *const nulls[] = {"", "~", "null", "Null", "NULL", NULL};
    static const char *const trues[] = {"true", "True", "TRUE", "y",  "Y",  "yes",
                                        "Yes",  "YES",  "on",   "On", "ON", NULL};
    static const char *const falses[] = {"false", "False", "FALSE", "n",   "N",   "no",
                                         "No",    "NO",    "off",   "Off", "OFF", NULL};
    static const char *const nans[] = {".nan", ".NaN", ".NAN", NULL};
    static const char *const pinfs[] = {".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", NULL};
    static const char *const ninfs[] = {"-.inf", "-.Inf", "-.INF", NULL};
    char tmp[128], *t;
    size_t len = strlen(s), j = 0;
    enum scalar_kind kind = SK_STR;

    if (ni)
        memset(ni, 0, sizeof(*ni));
    /* every word of the lists is at most 6 bytes and starts with one of these (or is "") */
    if (len <= 6 && strchr("~nNtTyYfFoO.+-", s[0])) {
        if (in_list(s, nulls))
            return SK_NULL;
        if (in_list(s, trues))
            return SK_TRUE;
        if (in_list(s, falses))
            return SK_FALSE;
        if (in_list(s, nans)) {
            *num = NAN;
            return SK_NUM;
        }
        if (in_list(s, pinfs)) {
            *num = INFINITY;
            return SK_NUM;
        }
        if (in_list(s, ninfs)) {
            *num = -INFINITY;
            return SK_NUM;
        }
    }
    if (strcmp(s, "<<") == 0)
        return SK_MERGE;
    if (s[0] == '.') {
        if (float_syntax(s)) {
            double d = strtod(s, NULL);
            if (isfinite(d)) {
                *num = d;
                return SK_NUM;
            }
        }
        return SK_STR;
    }
    if (!is_digit(s[0]) && s[0] != '+' && s[0] != '-')
        return SK_STR;
    /* long numerals are numbers too: kubectl reads 1 and 200 zeros as 1e+200 */
    t = len < sizeof(tmp) ? tmp : rc_xmalloc(len + 1);
    for (size_t i = 0; i < len; i++)
        if (s[i] != '_')
            t[j++] = s[i];
    t[j] = '\0';
    if (parse_go_int(t, num, ni)) {
        kind = SK_NUM;
    } else if (float_syntax(t)) {
        double d = strtod(t, NULL); /* underflow gives 0, as Go's ParseFloat does */
        if (isfinite(d)) {
            *num = d;
            kind = SK_NUM;
        }
    }
    if (t != tmp)
        free(t);
    return kind;
}

/* ==== Number text ==== */

/*
 * A number node keeps a double (cJSON has nothing else). An integer literal beyond 2^53 but
 * within int64 also keeps its exact decimal text in valuestring (cJSON_Delete and
 * cJSON_Duplicate handle valuestring for any type; cJSON's printer ignores it, so JSON for
 * the API server is printed by rd_json_print). The text is used only while it still reads
 * as the node's double, so code that changes valuedouble does not print a stale text.
 */
#define NUM_TEXT_MAX 64

static int int64_fits(double d)
{
    return d >= -9223372036854775808.0 && d < 9223372036854775808.0;
}

/* The integer a number node holds, as canonical decimal text, when it is an integer within
 * int64 (exact text when the node carries one); NULL otherwise. */
static const char *int_text(const cJSON *n, char buf[NUM_TEXT_MAX])
{
    double d = n->valuedouble;

    if (n->valuestring && strtod(n->valuestring, NULL) == d)
        return n->valuestring;
    if (!is_integral(d) || !int64_fits(d))
        return NULL;
    snprintf(buf, NUM_TEXT_MAX, "%lld", (long long)(int64_t)d);
    return buf;
}

/* Shortest decimal digits that read back as x (finite, > 0) as a double (or, as_float, as
 * a float): digits without a dot in dig, x = 0.dig x 10^dp (Go's decimal digits/dp). */
static void shortest_digits(double x, int as_float, char dig[24], int *dp)
{
    char tmp[40];
    const char *p;
    size_t n = 0;

    for (int prec = 1; prec <= 17; prec++) {
        double back;
        snprintf(tmp, sizeof(tmp), "%.*e", prec - 1, x);
        back = strtod(tmp, NULL);
        if (as_float && back > 3.4028234663852886e38)
            continue; /* rounded past FLT_MAX: more digits needed */
        if (as_float ? (float)back == (float)x : back == x)
            break;
    }
    for (p = tmp; *p && *p != 'e'; p++)
        if (is_digit(*p))
            dig[n++] = *p;
    while (n > 1 && dig[n - 1] == '0')
        n--;
    dig[n] = '\0';
    *dp = (int)strtol(p + 1, NULL, 10) + 1;
}

/* Go's strconv 'e' form of shortest digits: d.ddde+XX (at least two exponent digits). */
static void fmt_e(char out[NUM_TEXT_MAX], int neg, const char *dig, int dp)
{
    int exp = dp - 1;

    snprintf(out, NUM_TEXT_MAX, "%s%c%s%se%c%02d", neg ? "-" : "", dig[0], dig[1] ? "." : "",
             dig + 1, exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
}

/* Go's strconv 'f' form of shortest digits: no exponent, no trailing zeros. */
static void fmt_f(char out[NUM_TEXT_MAX], int neg, const char *dig, int dp)
{
    int nd = (int)strlen(dig), k = 0;

    if (neg)
        out[k++] = '-';
    if (dp <= 0) {
        out[k++] = '0';
    } else {
        for (int i = 0; i < dp && k < NUM_TEXT_MAX - 2; i++)
            out[k++] = i < nd ? dig[i] : '0';
    }
    if (nd > dp) {
        out[k++] = '.';
        for (int i = dp; i < nd && k < NUM_TEXT_MAX - 1; i++)
            out[k++] = i < 0 ? '0' : dig[i];
    }
    out[k] = '\0';
}

/* How Go's encoding/json writes a float64 (what kubectl sends): 'f' form for 1e-6 <= |d| <
 * 1e21, else 'e' form with "e-07" shortened to "e-7". d is finite. */
static void json_float_text(double d, char out[NUM_TEXT_MAX])
{
    double a = fabs(d);
    char dig[24];
    int dp;

    if (d == 0) {
        snprintf(out, NUM_TEXT_MAX, "0"); /* -0 too: kubectl reads "-0" as the integer 0 */
        return;
    }
    shortest_digits(a, 0, dig, &dp);
    if (a < 1e-6 || a >= 1e21) {
        size_t n;
        fmt_e(out, d < 0, dig, dp);
        n = strlen(out);
        if (n >= 4 && out[n - 4] == 'e' && out[n - 3] == '-' && out[n - 2] == '0') {
            out[n - 2] = out[n - 1];
            out[n - 1] = '\0';
        }
    } else {
        fmt_f(out, d < 0, dig, dp);
    }
}

/* JSON text of a finite number node: the exact integer, else Go's float64 form. */
static void json_number_text(const cJSON *n, char out[NUM_TEXT_MAX])
{
    char buf[NUM_TEXT_MAX];
    const char *t = int_text(n, buf);

    if (t)
        snprintf(out, NUM_TEXT_MAX, "%s", t);
    else
        json_float_text(n->valuedouble, out);
}

/* The JSON key sigs.k8s.io/yaml makes of a float key: strconv.FormatFloat(f, 'g', -1, 32)
 * (so at float32 precision: 3.14159265358979 is "3.1415927", 1e6 is "1e+06"), with +Inf,
 * -Inf, NaN spelled .inf, -.inf, .nan. */
static void key_float_text(double d, char out[NUM_TEXT_MAX])
{
    const double flt_round_up = 340282356779733661637539395458142568448.0; /* 2^128 - 2^103 */
    char dig[24];
    double a = fabs(d);
    int dp;
    float f;

    if (isnan(d)) {
        snprintf(out, NUM_TEXT_MAX, ".nan");
        return;
    }
    if (a >= flt_round_up) { /* float32(d) is infinite (half-way rounds to even: up) */
        snprintf(out, NUM_TEXT_MAX, "%s", d < 0 ? "-.inf" : ".inf");
        return;
    }
    f = a > 3.4028234663852886e38 ? 3.4028234663852886e38f : (float)a;
    if (f == 0) {
        snprintf(out, NUM_TEXT_MAX, "%s0", signbit(d) ? "-" : "");
        return;
    }
    shortest_digits((double)f, 1, dig, &dp);
    if (dp - 1 < -4 || dp - 1 >= 6)
        fmt_e(out, d < 0, dig, dp);
    else
        fmt_f(out, d < 0, dig, dp);
}

/* ==== Loading ==== */

struct anchor {
    char *name;
    cJSON *node;  /* in a document or the graveyard */
    size_t count; /* nodes in the subtree */
    size_t bytes; /* string bytes in the subtree */
    int height;   /* nesting levels of collections in the subtree */
    struct anchor *next;
};

struct built {
    cJSON *node;
    size_t count, bytes;
    int height;
};

struct ld {
    yaml_parser_t parser;
    const char *file;
    const char *text;
    size_t len;
    struct rd_yaml_limits lim;
    const struct rd_diag *diag;
    struct rc_err *err;
    struct rd_docs *docs;
    size_t nodes;       /* materialized so far, all documents */
    size_t bytes;       /* string bytes materialized so far */
    size_t bytes_max;   /* budget for bytes: 4 x max_bytes + 1 MiB */
    size_t doc_nodes0;  /* nodes before the current document */
    size_t alias_nodes; /* nodes of the current document made by aliases */
    struct str_map anchors;
    struct anchor *anchor_list;
};

static struct rd_pos mark_pos(yaml_mark_t m)
{
    struct rd_pos p;

    p.line = m.line >= (size_t)INT_MAX ? INT_MAX : (int)m.line + 1;
    p.col = m.column >= (size_t)INT_MAX ? INT_MAX : (int)m.column + 1;
    return p;
}

static int ld_fail(struct ld *l, struct rd_pos pos, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int ld_fail(struct ld *l, struct rd_pos pos, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    rc_err_setv(l->err, RC_EINVALID, fmt, ap);
    va_end(ap);
    rc_err_prefix(l->err, "%s:%d:%d: ", l->file, pos.line, pos.col);
    return RC_EINVALID;
}

static void ld_warn(struct ld *l, struct rd_pos pos, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void ld_warn(struct ld *l, struct rd_pos pos, const char *fmt, ...)
{
    char msg[RC_ERR_MSG_MAX];
    va_list ap;

    if (!l->diag || !l->diag->warn)
        return;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    l->diag->warn(l->diag->payload, l->file, pos, msg);
}

/* Is the character at (line, col) of the input (1-based) a tab? Used to explain libyaml's
 * "cannot start any token", which is what a tab used for indentation produces. */
static int tab_at(const struct ld *l, struct rd_pos pos)
{
    size_t i = 0;
    int line = 1, col = 1;

    while (i < l->len && line < pos.line) {
        if (l->text[i++] == '\n')
            line++;
    }
    while (i < l->len && col < pos.col && l->text[i] != '\n') {
        i++;
        while (i < l->len && ((unsigned char)l->text[i] & 0xC0) == 0x80)
            i++;
        col++;
    }
    return i < l->len && l->text[i] == '\t';
}

static int ld_parser_error(struct ld *l)
{
    yaml_parser_t *p = &l->parser;
    const char *problem = p->problem ? p->problem : "invalid YAML";
    struct rd_pos pos = mark_pos(p->problem_mark);

    if (p->error == YAML_READER_ERROR) {
        /* reader errors carry a byte offset, not a mark */
        size_t off = p->problem_offset < l->len ? p->problem_offset : l->len;
        pos.line = 1;
        pos.col = 1;
        for (size_t i = 0; i < off; i++) {
            if (l->text[i] == '\n') {
                pos.line++;
                pos.col = 1;
            } else if (((unsigned char)l->text[i] & 0xC0) != 0x80) {
                pos.col++;
            }
        }
        return ld_fail(l, pos, "%s", problem);
    }
    if (p->error == YAML_MEMORY_ERROR)
        abort(); /* out of memory: see rc_mem.h */
    if (strstr(problem, "cannot start any token") && tab_at(l, pos))
        return ld_fail(l, pos,
                       "found a tab character where indentation is expected "
                       "(YAML allows only spaces there)");
    if (p->context && strstr(problem, "end of stream")) {
        /* an unclosed quote or bracket: where it opened is what the reader needs */
        struct rd_pos c = mark_pos(p->context_mark);
        return ld_fail(l, c, "%s %s that starts here (the input ends at line %d)", problem,
                       p->context, pos.line);
    }
    if (p->context) {
        struct rd_pos c = mark_pos(p->context_mark);
        return ld_fail(l, pos, "%s %s at line %d column %d", problem, p->context, c.line, c.col);
    }
    return ld_fail(l, pos, "%s", problem);
}

static int ld_next(struct ld *l, yaml_event_t *ev)
{
    if (!yaml_parser_parse(&l->parser, ev))
        return ld_parser_error(l);
    return RC_OK;
}

static cJSON *must(cJSON *node)
{
    if (!node)
        abort(); /* cJSON allocation failed: out of memory */
    return node;
}

static cJSON *new_number(double d)
{
    cJSON *n = must(cJSON_CreateNumber(0));

    /* set by hand: cJSON converts to int without checking for NaN */
    n->valuedouble = d;
    n->valueint = isnan(d) ? 0 : d >= INT_MAX ? INT_MAX : d <= INT_MIN ? INT_MIN : (int)d;
    return n;
}

/* A number that also keeps the exact text of an int64 beyond 2^53 (see "Number text"). */
static cJSON *new_number_exact(double d, const struct num_info *ni)
{
    cJSON *n;
    char text[NUM_TEXT_MAX];

    if (!ni || !ni->is_int || !ni->in_int64 || (ni->i <= (1LL << 53) && ni->i >= -(1LL << 53)))
        return new_number(d);
    snprintf(text, sizeof(text), "%lld", (long long)ni->i);
    n = must(cJSON_CreateRaw(text)); /* valuestring from cJSON's allocator */
    n->type = cJSON_Number;
    n->valuedouble = d;
    n->valueint = d >= INT_MAX ? INT_MAX : d <= INT_MIN ? INT_MIN : (int)d;
    return n;
}

static void note_pos(struct ld *l, const cJSON *node, struct rd_pos pos)
{
    pos_map_put(&l->docs->pos, node, pos);
}

static void bury(struct ld *l, cJSON *node)
{
    if (!l->docs->graveyard)
        l->docs->graveyard = must(cJSON_CreateArray());
    cJSON_AddItemToArray(l->docs->graveyard, node);
}

static int count_node(struct ld *l, struct rd_pos pos, size_t n)
{
    if (n > l->lim.max_nodes || l->nodes > l->lim.max_nodes - n)
        return ld_fail(l, pos, "input has more than %zu nodes (aliases expanded)",
                       l->lim.max_nodes);
    l->nodes += n;
    return RC_OK;
}

static int count_bytes(struct ld *l, struct rd_pos pos, size_t n)
{
    if (n > l->bytes_max || l->bytes > l->bytes_max - n)
        return ld_fail(l, pos, "aliases expand to more than %zu bytes of text", l->bytes_max);
    l->bytes += n;
    return RC_OK;
}

static void anchor_add(struct ld *l, const char *name, const struct built *b)
{
    struct anchor *a = rc_xcalloc(1, sizeof(*a));

    a->name = rc_xstrdup(name);
    a->node = b->node;
    a->count = b->count;
    a->bytes = b->bytes;
    a->height = b->height;
    a->next = l->anchor_list;
    l->anchor_list = a;
    str_map_put(&l->anchors, a->name, a);
}

static void anchors_clear(struct ld *l)
{
    struct anchor *a = l->anchor_list;

    while (a) {
        struct anchor *next = a->next;
        free(a->name);
        free(a);
        a = next;
    }
    l->anchor_list = NULL;
    str_map_release(&l->anchors);
}

/* Copy a subtree (an alias's target), giving each copy its original's position. The root
 * gets `pos` (where the alias is). Budgets were checked by the caller. */
static cJSON *dup_tree(struct ld *l, const cJSON *src, struct rd_pos pos)
{
    cJSON *out;

    if (cJSON_IsObject(src) || cJSON_IsArray(src)) {
        out = must(cJSON_IsObject(src) ? cJSON_CreateObject() : cJSON_CreateArray());
        for (const cJSON *c = src->child; c; c = c->next) {
            cJSON *d = dup_tree(l, c, rd_docs_pos(l->docs, c));
            if (cJSON_IsObject(src))
                cJSON_AddItemToObject(out, c->string, d);
            else
                cJSON_AddItemToArray(out, d);
        }
    } else if (cJSON_IsString(src)) {
        out = must(cJSON_CreateString(src->valuestring));
    } else if (cJSON_IsNumber(src)) {
        out = new_number(src->valuedouble);
        if (src->valuestring) { /* the exact text (see "Number text") */
            cJSON *raw = must(cJSON_CreateRaw(src->valuestring));
            out->valuestring = raw->valuestring;
            raw->valuestring = NULL;
            cJSON_Delete(raw);
        }
    } else if (cJSON_IsBool(src)) {
        out = must(cJSON_CreateBool(cJSON_IsTrue(src)));
    } else {
        out = must(cJSON_CreateNull());
    }
    note_pos(l, out, pos);
    return out;
}

/* Where a mapping is: identity keys (apiVersion, kind, metadata.name, ...) live in the
 * document's root mapping and in its metadata mapping. */
enum map_role { ROLE_OTHER, ROLE_ROOT, ROLE_METADATA };

static int ld_node(struct ld *l, yaml_event_t *ev, int depth, enum map_role role,
                   struct built *out);

/*
 * The key kubectl makes of a scalar mapping key. sigs.k8s.io/yaml decodes YAML with go-yaml
 * v2 into map[interface{}]interface{}, keys typed like any plain scalar, then turns each key
 * into a JSON string: bool -> "true"/"false" (so `on:` and `yes:` are the key "true", `n:`
 * is "false"), int -> decimal (0x10 -> "16", 010 -> "8", 1_0 -> "10"), float ->
 * strconv.FormatFloat(f, 'g', -1, 32) (1.0 -> "1", 1e6 -> "1e+06", .inf -> ".inf"). A null
 * key or an integer beyond int64 is refused ("unsupported map key"). Checked with kubectl
 * 1.32 (`kubectl label --local -o json -f`). raw: the scalar's text, NULL for an alias (an
 * integral number is then taken as an integer); float_tag: tagged !!float.
 */
static int key_text(struct ld *l, const cJSON *n, const char *raw, int float_tag, struct rd_pos pos,
                    char buf[NUM_TEXT_MAX], const char **out)
{
    *out = NULL;
    if (cJSON_IsString(n)) {
        *out = n->valuestring;
    } else if (cJSON_IsBool(n)) {
        *out = cJSON_IsTrue(n) ? "true" : "false";
    } else if (cJSON_IsNull(n)) {
        return ld_fail(l, pos,
                       "mapping key is null, which kubectl refuses (quote it to mean "
                       "the text)");
    } else if (cJSON_IsNumber(n)) {
        struct num_info ni = {0};
        double d;
        if (raw && !float_tag) {
            resolve_plain(raw, &d, &ni);
        } else if (!raw && (*out = int_text(n, buf)) != NULL) {
            return RC_OK; /* buf, or the node's exact text (the node is kept until freed) */
        }
        if (ni.is_int && !ni.in_int64)
            return ld_fail(l, pos,
                           "mapping key %.64s is an integer beyond int64, which kubectl "
                           "refuses (quote it to mean the text)",
                           raw);
        if (ni.is_int)
            snprintf(buf, NUM_TEXT_MAX, "%lld", (long long)ni.i);
        else
            key_float_text(n->valuedouble, buf);
        *out = buf;
    } else {
        return ld_fail(l, pos, "mapping key is a collection; only scalar keys are supported");
    }
    return RC_OK;
}

/* kubectl cannot turn .inf or .nan into JSON and refuses the file ("json: unsupported
 * value: +Inf"); so does the loader, rather than send something else. */
static int check_finite(struct ld *l, const cJSON *n, struct rd_pos pos)
{
    if (!cJSON_IsNumber(n) || isfinite(n->valuedouble))
        return RC_OK;
    return ld_fail(l, pos, "%s has no JSON form and kubectl refuses it (quote it to mean the text)",
                   isnan(n->valuedouble) ? ".nan"
                   : n->valuedouble > 0  ? ".inf"
                                         : "-.inf");
}

static int is_tag(const yaml_char_t *tag, const char *suffix)
{
    static const char prefix[] = "tag:yaml.org,2002:";

    return tag && strncmp((const char *)tag, prefix, sizeof(prefix) - 1) == 0 &&
           strcmp((const char *)tag + sizeof(prefix) - 1, suffix) == 0;
}

static size_t utf8_next(const unsigned char *s, size_t len, size_t i, uint32_t *cp);

/* Decode a !!binary scalar as Go's base64.StdEncoding does (line breaks skipped, padding
 * required) into *out (malloc'd). The bytes must be UTF-8 text without NUL: anything else
 * would not reach the cluster as written (kubectl's JSON replaces invalid bytes). */
static int decode_binary(struct ld *l, const char *v, struct rd_pos pos, char **out)
{
    static const char alphabet[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t len = strlen(v), m = 0, n = 0;
    char *t = rc_xmalloc(len + 1);
    unsigned char *buf = rc_xmalloc(len / 4 * 3 + 4);
    int ok = 1;

    *out = NULL;
    for (size_t i = 0; i < len; i++)
        if (v[i] != '\n' && v[i] != '\r')
            t[m++] = v[i];
    t[m] = '\0';
    ok = m % 4 == 0;
    for (size_t q = 0; ok && q < m; q += 4) {
        int d[4], last = q + 4 == m;
        for (int j = 0; j < 4; j++) {
            const char *c = t[q + j] ? strchr(alphabet, t[q + j]) : NULL;
            d[j] = c ? (int)(c - alphabet) : t[q + j] == '=' && j >= 2 && last ? -1 : -2;
        }
        if (d[0] < 0 || d[1] < 0 || d[2] == -2 || d[3] == -2 || (d[2] == -1 && d[3] != -1)) {
            ok = 0;
            break;
        }
        buf[n++] = (unsigned char)(d[0] << 2 | d[1] >> 4);
        if (d[2] >= 0)
            buf[n++] = (unsigned char)((d[1] & 15) << 4 | d[2] >> 2);
        if (d[3] >= 0)
            buf[n++] = (unsigned char)((d[2] & 3) << 6 | d[3]);
    }
    free(t);
    if (!ok) {
        free(buf);
        return ld_fail(l, pos, "!!binary value contains invalid base64 data");
    }
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        size_t k = buf[i] ? utf8_next(buf, n, i, &cp) : 0;
        if (!k) {
            free(buf);
            return ld_fail(l, pos,
                           "!!binary value is not UTF-8 text without NUL characters, "
                           "which JSON cannot carry as written");
        }
        i += k;
    }
    buf[n] = '\0';
    *out = (char *)buf;
    return RC_OK;
}

/* Build the node of a scalar event. */
static int ld_scalar(struct ld *l, yaml_event_t *ev, struct rd_pos pos, struct built *out)
{
    const char *v = (const char *)ev->data.scalar.value;
    size_t len = ev->data.scalar.length;
    const yaml_char_t *tag = ev->data.scalar.tag;
    int plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
    enum scalar_kind k = SK_STR;
    struct num_info ni = {0};
    char *binary = NULL;
    double num = 0;
    int error;

    if (strlen(v) != len)
        return ld_fail(l, pos, "string contains a NUL character");
    if (is_tag(tag, "binary")) {
        /* go-yaml v2 decodes it: the value is the text the base64 holds */
        error = decode_binary(l, v, pos, &binary);
        if (error < 0)
            return error;
        v = binary;
        k = SK_STR;
    } else if (is_tag(tag, "str") || is_tag(tag, "timestamp") ||
               (tag && strcmp((const char *)tag, "!") == 0)) {
        k = SK_STR;
    } else if (is_tag(tag, "int") || is_tag(tag, "float") || is_tag(tag, "bool") ||
               is_tag(tag, "null")) {
        const char *want = (const char *)tag + strlen("tag:yaml.org,2002:");
        k = resolve_plain(v, &num, &ni);
        if (strcmp(want, "float") == 0)
            ni.is_int = 0; /* go-yaml makes a float64 of it */
        if ((strcmp(want, "int") == 0 && (k != SK_NUM || !ni.is_int)) ||
            (strcmp(want, "float") == 0 && k != SK_NUM) ||
            (strcmp(want, "bool") == 0 && k != SK_TRUE && k != SK_FALSE) ||
            (strcmp(want, "null") == 0 && k != SK_NULL))
            return ld_fail(l, pos, "cannot read '%.64s' as !!%s", v, want);
    } else if (tag) {
        k = SK_STR; /* any other tag (!custom 12): go-yaml v2 makes a string of the scalar */
    } else if (plain) {
        k = resolve_plain(v, &num, &ni);
        if (k == SK_MERGE)
            k = SK_STR;
    }
    error = count_node(l, pos, 1);
    if (error == RC_OK)
        error = count_bytes(l, pos, len);
    if (error < 0) {
        free(binary);
        return error;
    }
    switch (k) {
    case SK_NULL:
        out->node = must(cJSON_CreateNull());
        break;
    case SK_TRUE:
    case SK_FALSE:
        out->node = must(cJSON_CreateBool(k == SK_TRUE));
        break;
    case SK_NUM:
        out->node = new_number_exact(num, &ni);
        break;
    default:
        out->node = must(cJSON_CreateString(v));
        break;
    }
    free(binary);
    out->count = 1;
    out->bytes = len;
    out->height = 0;
    note_pos(l, out->node, pos);
    return RC_OK;
}

/*
 * kubectl reads YAML with go-yaml, which refuses a document whose nodes come mostly from
 * aliases ("document contains excessive aliasing"): past 100 nodes made by aliases and 1,000
 * nodes in all, at most 99% may come from aliases up to 400,000 nodes, falling linearly to
 * 10% at 4,000,000. The same rule here: a small file cannot expand into a big tree.
 */
static int alias_ratio_ok(size_t alias, size_t total)
{
    double allowed;

    if (alias <= 100 || total <= 1000)
        return 1;
    if (total <= 400000)
        allowed = 0.99;
    else if (total >= 4000000)
        allowed = 0.10;
    else
        allowed = 0.99 - 0.89 * ((double)(total - 400000) / 3600000.0);
    return (double)alias / (double)total <= allowed;
}

static int ld_alias(struct ld *l, yaml_event_t *ev, int depth, struct rd_pos pos, struct built *out)
{
    const char *name = (const char *)ev->data.alias.anchor;
    struct anchor *a = str_map_get(&l->anchors, name);
    int error;

    if (!a)
        return ld_fail(l, pos, "unknown anchor '%.64s'", name);
    if (a->height > 0 && depth + a->height > l->lim.max_depth)
        return ld_fail(l, pos, "nesting deeper than %d levels (through alias '%.64s')",
                       l->lim.max_depth, name);
    error = count_node(l, pos, a->count);
    if (error < 0)
        return error;
    l->alias_nodes += a->count;
    if (!alias_ratio_ok(l->alias_nodes, l->nodes - l->doc_nodes0))
        return ld_fail(l, pos,
                       "document contains excessive aliasing: %zu of its %zu nodes come from "
                       "aliases (through alias '%.64s'), which kubectl refuses too",
                       l->alias_nodes, l->nodes - l->doc_nodes0, name);
    error = count_bytes(l, pos, a->bytes);
    if (error < 0)
        return error;
    out->node = dup_tree(l, a->node, pos);
    out->count = a->count;
    out->bytes = a->bytes;
    out->height = a->height;
    return RC_OK;
}

/* One key of a mapping being built. */
struct mkey {
    cJSON *item;
    int merged;        /* came from a << merge: a written key replaces it silently */
    struct rd_pos pos; /* of the key */
};

/* A mapping being built. Small mappings find keys by a linear scan; from MB_HASH_AT keys
 * on, a hash table (key -> index + 1) keeps big mappings linear in time. */
#define MB_HASH_AT 12

struct mbuild {
    cJSON *obj;
    struct mkey *keys;
    size_t n, cap;
    struct str_map index;
};

static void mb_release(struct mbuild *mb)
{
    free(mb->keys);
    str_map_release(&mb->index);
}

static struct mkey *mb_find(const struct mbuild *mb, const char *key)
{
    if (mb->n >= MB_HASH_AT) {
        uintptr_t i = (uintptr_t)str_map_get(&mb->index, key);
        return i ? &mb->keys[i - 1] : NULL;
    }
    for (size_t i = 0; i < mb->n; i++)
        if (strcmp(mb->keys[i].item->string, key) == 0)
            return &mb->keys[i];
    return NULL;
}

/* Does a second `key` in a mapping of this role change which object the document is? */
static int is_identity_key(enum map_role role, const char *key)
{
    if (role == ROLE_ROOT)
        return !strcmp(key, "apiVersion") || !strcmp(key, "kind") || !strcmp(key, "metadata");
    if (role == ROLE_METADATA)
        return !strcmp(key, "name") || !strcmp(key, "namespace");
    return 0;
}

/* Add key: value to the mapping. `merged`: from a merge key (never replaces). A written key
 * given twice: the last value wins (as kubectl does) with a warning, except for the keys
 * that decide the object's identity, which refuse the file (value is then buried). */
static int mb_set(struct ld *l, struct mbuild *mb, enum map_role role, const char *key,
                  cJSON *value, int merged, struct rd_pos keypos)
{
    struct mkey *k = mb_find(mb, key);

    if (k) {
        if (merged) {
            bury(l, value);
            return RC_OK;
        }
        if (!k->merged && is_identity_key(role, key)) {
            bury(l, value);
            return ld_fail(l, keypos,
                           "duplicate key '%s%.64s' (also at line %d): it decides which object "
                           "this is, so the file is refused",
                           role == ROLE_METADATA ? "metadata." : "", key, k->pos.line);
        }
        if (!k->merged)
            ld_warn(l, keypos, "duplicate key '%.64s' (also at line %d): the last value wins", key,
                    k->pos.line);
        bury(l, cJSON_DetachItemViaPointer(mb->obj, k->item));
    } else {
        mb->keys = rc_xgrow(mb->keys, &mb->cap, mb->n + 1, sizeof(*mb->keys));
        k = &mb->keys[mb->n++];
        if (mb->n == MB_HASH_AT) {
            for (size_t i = 0; i + 1 < mb->n; i++)
                str_map_put(&mb->index, mb->keys[i].item->string, (void *)(uintptr_t)(i + 1));
        }
    }
    cJSON_AddItemToObject(mb->obj, key, value);
    if (!value->string)
        abort();
    k->item = value;
    k->merged = merged;
    k->pos = keypos;
    if (mb->n >= MB_HASH_AT)
        str_map_put(&mb->index, value->string, (void *)(uintptr_t)(k - mb->keys + 1));
    return RC_OK;
}

/* Nodes and string bytes of a subtree (depth is bounded by max_depth). */
static void tree_size(const cJSON *n, size_t *nodes, size_t *bytes)
{
    (*nodes)++;
    if (cJSON_IsString(n))
        *bytes += strlen(n->valuestring);
    for (const cJSON *c = n->child; c; c = c->next)
        tree_size(c, nodes, bytes);
}

/* Merge one mapping's keys into the mapping being built; written keys and earlier merges
 * win. The copies count against the budgets like any other node. */
static int mb_merge_one(struct ld *l, struct mbuild *mb, const cJSON *m, struct rd_pos pos)
{
    for (const cJSON *c = m->child; c; c = c->next) {
        size_t nodes = 0, bytes = 0;
        int error;
        if (mb_find(mb, c->string))
            continue;
        tree_size(c, &nodes, &bytes);
        error = count_node(l, pos, nodes);
        if (error == RC_OK)
            error = count_bytes(l, pos, bytes);
        if (error < 0)
            return error;
        mb_set(l, mb, ROLE_OTHER, c->string, dup_tree(l, c, rd_docs_pos(l->docs, c)), 1, pos);
    }
    return RC_OK;
}

/* Apply `<<: src` to the mapping. src is a mapping or a sequence of mappings. */
static int mb_merge(struct ld *l, struct mbuild *mb, const cJSON *src, struct rd_pos pos)
{
    if (cJSON_IsObject(src))
        return mb_merge_one(l, mb, src, pos);
    if (cJSON_IsArray(src)) {
        for (const cJSON *m = src->child; m; m = m->next)
            if (!cJSON_IsObject(m))
                return ld_fail(l, pos, "merge key '<<' needs a mapping or a list of mappings");
        for (const cJSON *m = src->child; m; m = m->next) {
            int error = mb_merge_one(l, mb, m, pos);
            if (error < 0)
                return error;
        }
        return RC_OK;
    }
    return ld_fail(l, pos, "merge key '<<' needs a mapping or a list of mappings");
}

static int ld_mapping(struct ld *l, int depth, enum map_role role, struct rd_pos pos,
                      struct built *out)
{
    struct mbuild mb = {0};
    yaml_event_t ev;
    char *keytext = NULL;
    int error = RC_OK;

    mb.obj = must(cJSON_CreateObject());
    note_pos(l, mb.obj, pos);
    out->node = mb.obj;
    out->count = 1;
    out->bytes = 0;
    out->height = 1;
    for (;;) {
        struct built kb = {0}, vb = {0};
        struct rd_pos kpos;
        char numbuf[NUM_TEXT_MAX];
        const char *key = NULL;
        int is_merge = 0, float_tag = 0;

        error = ld_next(l, &ev);
        if (error < 0)
            goto done;
        if (ev.type == YAML_MAPPING_END_EVENT) {
            yaml_event_delete(&ev);
            break;
        }
        kpos = mark_pos(ev.start_mark);
        if (ev.type == YAML_MAPPING_START_EVENT || ev.type == YAML_SEQUENCE_START_EVENT) {
            const char *what = ev.type == YAML_MAPPING_START_EVENT ? "mapping" : "sequence";
            yaml_event_delete(&ev);
            error = ld_fail(l, kpos, "mapping key is a %s; only scalar keys are supported", what);
            goto done;
        }
        if (ev.type == YAML_SCALAR_EVENT && ev.data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
            strcmp((const char *)ev.data.scalar.value, "<<") == 0 &&
            (!ev.data.scalar.tag || is_tag(ev.data.scalar.tag, "merge")))
            is_merge = 1;
        if (ev.type == YAML_SCALAR_EVENT) {
            keytext = rc_xstrdup((const char *)ev.data.scalar.value);
            float_tag = is_tag(ev.data.scalar.tag, "float");
        }
        error = ld_node(l, &ev, depth, ROLE_OTHER, &kb);
        if (error < 0)
            goto done;
        bury(l, kb.node);
        if (!is_merge) {
            error = key_text(l, kb.node, keytext, float_tag, kpos, numbuf, &key);
            if (error < 0)
                goto done;
        }
        error = ld_next(l, &ev);
        if (error < 0)
            goto done;
        error = ld_node(l, &ev, depth,
                        role == ROLE_ROOT && !is_merge && !strcmp(key, "metadata") ? ROLE_METADATA
                                                                                   : ROLE_OTHER,
                        &vb);
        if (error < 0)
            goto done;
        if (!is_merge && (error = check_finite(l, vb.node, rd_docs_pos(l->docs, vb.node))) < 0) {
            bury(l, vb.node);
            goto done;
        }
        if (vb.height + 1 > out->height)
            out->height = vb.height + 1;
        out->count += kb.count + vb.count;
        out->bytes += kb.bytes + vb.bytes;
        if (is_merge) {
            struct rd_pos vpos = rd_docs_pos(l->docs, vb.node);
            bury(l, vb.node);
            error = mb_merge(l, &mb, vb.node, vpos);
            if (error < 0)
                goto done;
        } else {
            error = mb_set(l, &mb, role, key, vb.node, 0, kpos);
            if (error < 0)
                goto done;
        }
        free(keytext);
        keytext = NULL;
    }
done:
    free(keytext);
    mb_release(&mb);
    if (error < 0) {
        cJSON_Delete(mb.obj);
        out->node = NULL;
    }
    return error;
}

static int ld_sequence(struct ld *l, int depth, struct rd_pos pos, struct built *out)
{
    cJSON *arr = must(cJSON_CreateArray());
    yaml_event_t ev;
    int error = RC_OK;

    note_pos(l, arr, pos);
    out->node = arr;
    out->count = 1;
    out->bytes = 0;
    out->height = 1;
    for (;;) {
        struct built b = {0};

        error = ld_next(l, &ev);
        if (error < 0)
            break;
        if (ev.type == YAML_SEQUENCE_END_EVENT) {
            yaml_event_delete(&ev);
            break;
        }
        error = ld_node(l, &ev, depth, ROLE_OTHER, &b);
        if (error < 0)
            break;
        cJSON_AddItemToArray(arr, b.node);
        error = check_finite(l, b.node, rd_docs_pos(l->docs, b.node));
        if (error < 0)
            break;
        out->count += b.count;
        out->bytes += b.bytes;
        if (b.height + 1 > out->height)
            out->height = b.height + 1;
    }
    if (error < 0) {
        cJSON_Delete(arr);
        out->node = NULL;
    }
    return error;
}

/* Build the node that starts with event *ev (consumed). `depth`: collections around it. */
static int ld_node(struct ld *l, yaml_event_t *ev, int depth, enum map_role role, struct built *out)
{
    struct rd_pos pos = mark_pos(ev->start_mark);
    char *anchor = NULL;
    int error;

    switch (ev->type) {
    case YAML_ALIAS_EVENT:
        error = ld_alias(l, ev, depth, pos, out);
        yaml_event_delete(ev);
        return error;
    case YAML_SCALAR_EVENT:
        if (ev->data.scalar.anchor)
            anchor = rc_xstrdup((const char *)ev->data.scalar.anchor);
        error = ld_scalar(l, ev, pos, out);
        yaml_event_delete(ev);
        break;
    case YAML_SEQUENCE_START_EVENT:
    case YAML_MAPPING_START_EVENT: {
        int is_map = ev->type == YAML_MAPPING_START_EVENT;
        const yaml_char_t *a =
            is_map ? ev->data.mapping_start.anchor : ev->data.sequence_start.anchor;
        if (a)
            anchor = rc_xstrdup((const char *)a);
        yaml_event_delete(ev);
        if (depth + 1 > l->lim.max_depth) {
            free(anchor);
            return ld_fail(l, pos, "nesting deeper than %d levels", l->lim.max_depth);
        }
        error = count_node(l, pos, 1);
        if (error < 0)
            break;
        error =
            is_map ? ld_mapping(l, depth + 1, role, pos, out) : ld_sequence(l, depth + 1, pos, out);
        break;
    }
    default:
        yaml_event_delete(ev);
        return ld_fail(l, pos, "unexpected YAML event");
    }
    if (error == RC_OK && anchor)
        anchor_add(l, anchor, out);
    free(anchor);
    return error;
}

static void docs_push(struct rd_docs *d, cJSON *root)
{
    d->docs = rc_xgrow(d->docs, &d->cap, d->n + 1, sizeof(*d->docs));
    d->docs[d->n++] = root;
}

static int ld_stream(struct ld *l)
{
    yaml_event_t ev;
    size_t ndocs = 0;
    int error;

    for (;;) {
        struct built b = {0};
        struct rd_pos pos;

        error = ld_next(l, &ev);
        if (error < 0)
            return error;
        pos = mark_pos(ev.start_mark);
        if (ev.type == YAML_STREAM_END_EVENT) {
            yaml_event_delete(&ev);
            return RC_OK;
        }
        if (ev.type == YAML_STREAM_START_EVENT) {
            yaml_event_delete(&ev);
            continue;
        }
        if (ev.type != YAML_DOCUMENT_START_EVENT) {
            yaml_event_delete(&ev);
            return ld_fail(l, pos, "unexpected YAML event");
        }
        yaml_event_delete(&ev);
        if (++ndocs > l->lim.max_documents)
            return ld_fail(l, pos, "more than %zu documents in one file", l->lim.max_documents);
        anchors_clear(l);
        l->doc_nodes0 = l->nodes;
        l->alias_nodes = 0;
        error = ld_next(l, &ev);
        if (error < 0)
            return error;
        error = ld_node(l, &ev, 0, ROLE_ROOT, &b);
        if (error < 0)
            return error;
        error = check_finite(l, b.node, rd_docs_pos(l->docs, b.node));
        if (error < 0) {
            cJSON_Delete(b.node);
            return error;
        }
        error = ld_next(l, &ev);
        if (error < 0) {
            cJSON_Delete(b.node);
            return error;
        }
        yaml_event_delete(&ev); /* DOCUMENT-END */
        if (cJSON_IsNull(b.node))
            bury(l, b.node); /* empty document (or a bare null): skipped, as kubectl does */
        else
            docs_push(l->docs, b.node);
    }
}

/* Set up a loader over `text`: limits (the defaults when NULL), the byte budget of the trees
 * it builds, an empty document list and the libyaml parser. Refuses input over the size limit
 * before reading it. */
static int ld_open(struct ld *l, const char *file, const char *text, size_t len,
                   const struct rd_yaml_limits *limits, struct rc_err *err)
{
    static const struct rd_yaml_limits defaults = RD_YAML_LIMITS_INIT;
    struct rd_pos start = {1, 1};

    memset(l, 0, sizeof(*l));
    l->file = file ? file : "<input>";
    l->text = text;
    l->len = len;
    l->lim = limits ? *limits : defaults;
    l->err = err;
    l->bytes_max = l->lim.max_bytes > (SIZE_MAX - (1u << 20)) / 4
                       ? SIZE_MAX
                       : l->lim.max_bytes * 4 + (1u << 20);
    if (len > l->lim.max_bytes)
        return ld_fail(l, start, "input of %zu bytes is larger than the limit of %zu bytes", len,
                       l->lim.max_bytes);
    l->docs = rc_xcalloc(1, sizeof(*l->docs));
    l->docs->file = rc_xstrdup(l->file);
    pos_map_reserve(&l->docs->pos, len);
    if (!yaml_parser_initialize(&l->parser))
        abort();
    yaml_parser_set_input_string(&l->parser, (const unsigned char *)(text ? text : ""), len);
    return RC_OK;
}

int rd_yaml_load(struct rd_docs **out, const char *file, const char *text, size_t len,
                 const struct rd_yaml_limits *limits, const struct rd_diag *diag,
                 struct rc_err *err)
{
    struct ld l;
    int error;

    assert(out && (text || !len));
    *out = NULL;
    error = ld_open(&l, file, text, len, limits, err);
    if (error < 0)
        return error;
    l.diag = diag;
    error = ld_stream(&l);
    yaml_parser_delete(&l.parser);
    anchors_clear(&l);
    if (error < 0) {
        rd_docs_free(l.docs);
        return error;
    }
    l.docs->bytes = sizeof(*l.docs) + l.nodes * (sizeof(cJSON) + sizeof(struct rd_pos) + 16) +
                    l.bytes + l.docs->cap * sizeof(cJSON *);
    *out = l.docs;
    return RC_OK;
}

size_t rd_docs_bytes(const struct rd_docs *docs)
{
    return docs ? docs->bytes : 0;
}

/* ==== Streaming the elements of sequences ==== */

/* Forget what the last streamed element left in d (its tree, its positions), keeping the
 * allocations for the next one; a position table an element made large is freed. */
static void docs_clear(struct rd_docs *d)
{
    for (size_t i = 0; i < d->n; i++)
        cJSON_Delete(d->docs[i]);
    d->n = 0;
    cJSON_Delete(d->graveyard);
    d->graveyard = NULL;
    if (d->pos.cap > 256) {
        cJSON_free(d->pos.v);
        d->pos.v = NULL;
        d->pos.cap = 0;
    } else if (d->pos.n) {
        memset(d->pos.v, 0, d->pos.cap * sizeof(*d->pos.v));
    }
    d->pos.n = 0;
    d->bytes = 0;
}

static int ld_stream_map(struct ld *l, struct rd_pos pos, int depth, enum map_role role,
                         const struct rd_yaml_items *items, size_t nitems, struct built *out);

/* Build one element of a streamed sequence (its first event *ev, consumed) in edocs, with
 * budgets and anchors of its own, and hand it to it->each. `depth`: collections around it. */
static int ld_stream_elem(struct ld *l, yaml_event_t *ev, int depth, const struct rd_yaml_items *it,
                          struct rd_docs *edocs)
{
    struct rd_docs *outer = l->docs;
    size_t nodes = l->nodes, bytes = l->bytes, alias_nodes = l->alias_nodes;
    struct built b = {0};
    int error;

    l->docs = edocs;
    l->nodes = 0;
    l->bytes = 0;
    l->alias_nodes = 0;
    anchors_clear(l); /* anchors do not reach into or out of an element */
    if (it->ninner && ev->type == YAML_MAPPING_START_EVENT) {
        struct rd_pos mpos = mark_pos(ev->start_mark);

        yaml_event_delete(ev);
        error = depth + 1 > l->lim.max_depth
                    ? ld_fail(l, mpos, "nesting deeper than %d levels", l->lim.max_depth)
                    : ld_stream_map(l, mpos, depth + 1, ROLE_OTHER, it->inner, it->ninner, &b);
    } else {
        error = ld_node(l, ev, depth, ROLE_OTHER, &b);
    }
    if (error == RC_OK) {
        docs_push(edocs, b.node);
        error = check_finite(l, b.node, rd_docs_pos(edocs, b.node));
    }
    if (error == RC_OK && it->each) {
        error = it->each(it->payload, b.node, edocs, l->err);
        if (error > 0)
            error = RC_OK;
    }
    anchors_clear(l);
    docs_clear(edocs);
    l->docs = outer;
    l->nodes = nodes;
    l->bytes = bytes;
    l->alias_nodes = alias_nodes;
    return error;
}

/* The elements of a streamed sequence (its start event consumed; spos: where it starts),
 * each built at `depth` collections deep. */
static int ld_stream_seq(struct ld *l, struct rd_pos spos, int depth,
                         const struct rd_yaml_items *it)
{
    struct rd_docs *edocs;
    yaml_event_t ev;
    int error;

    error = count_node(l, spos, 1);
    if (error < 0)
        return error;
    edocs = rc_xcalloc(1, sizeof(*edocs));
    edocs->file = rc_xstrdup(l->file);
    for (;;) {
        error = ld_next(l, &ev);
        if (error < 0)
            break;
        if (ev.type == YAML_SEQUENCE_END_EVENT) {
            yaml_event_delete(&ev);
            break;
        }
        error = ld_stream_elem(l, &ev, depth, it, edocs);
        if (error < 0)
            break;
    }
    rd_docs_free(edocs);
    return error;
}

/* A mapping (its start event consumed; `depth` collections around its values) whose
 * sequences under items[i].key are streamed; each such key keeps an empty sequence. */
static int ld_stream_map(struct ld *l, struct rd_pos pos, int depth, enum map_role role,
                         const struct rd_yaml_items *items, size_t nitems, struct built *out)
{
    const char *where = role == ROLE_ROOT ? "at the top of this file" : "in this item";
    struct mbuild mb = {0};
    yaml_event_t ev;
    char *keytext = NULL;
    unsigned streamed = 0;
    int error;

    assert(nitems <= sizeof(streamed) * CHAR_BIT);
    error = count_node(l, pos, 1);
    if (error < 0)
        return error;
    mb.obj = must(cJSON_CreateObject());
    note_pos(l, mb.obj, pos);
    out->node = mb.obj;
    out->count = 1;
    out->height = 1;
    for (;;) {
        struct built kb = {0}, vb = {0};
        struct rd_pos kpos;
        char numbuf[NUM_TEXT_MAX];
        const char *key = NULL;
        size_t which = nitems;
        int float_tag;

        error = ld_next(l, &ev);
        if (error < 0)
            goto done;
        if (ev.type == YAML_MAPPING_END_EVENT) {
            yaml_event_delete(&ev);
            break;
        }
        kpos = mark_pos(ev.start_mark);
        if (ev.type != YAML_SCALAR_EVENT) {
            yaml_event_delete(&ev);
            error = ld_fail(l, kpos, "only scalar keys are supported %s", where);
            goto done;
        }
        keytext = rc_xstrdup((const char *)ev.data.scalar.value);
        float_tag = is_tag(ev.data.scalar.tag, "float");
        if (ev.data.scalar.style == YAML_PLAIN_SCALAR_STYLE && !strcmp(keytext, "<<")) {
            yaml_event_delete(&ev);
            error = ld_fail(l, kpos, "merge keys are not supported %s", where);
            goto done;
        }
        error = ld_node(l, &ev, depth, ROLE_OTHER, &kb);
        if (error < 0)
            goto done;
        bury(l, kb.node);
        error = key_text(l, kb.node, keytext, float_tag, kpos, numbuf, &key);
        if (error < 0)
            goto done;
        for (size_t i = 0; i < nitems && which == nitems; i++)
            if (!strcmp(key, items[i].key))
                which = i;
        error = ld_next(l, &ev);
        if (error < 0)
            goto done;
        if (which < nitems && (streamed >> which & 1u)) {
            yaml_event_delete(&ev);
            error = ld_fail(l, kpos, "key '%.64s' appears twice", key);
            goto done;
        }
        if (which < nitems)
            streamed |= 1u << which;
        if (which < nitems && ev.type == YAML_SEQUENCE_START_EVENT) {
            struct rd_pos spos = mark_pos(ev.start_mark);
            cJSON *empty;

            yaml_event_delete(&ev);
            error = depth + 1 > l->lim.max_depth
                        ? ld_fail(l, spos, "nesting deeper than %d levels", l->lim.max_depth)
                        : ld_stream_seq(l, spos, depth + 1, &items[which]);
            if (error < 0)
                goto done;
            /* the key stays, with an empty sequence where the elements were */
            empty = must(cJSON_CreateArray());
            note_pos(l, empty, spos);
            error = mb_set(l, &mb, role, key, empty, 0, kpos);
            if (error < 0)
                goto done;
        } else {
            error = ld_node(l, &ev, depth, ROLE_OTHER, &vb);
            if (error < 0)
                goto done;
            error = check_finite(l, vb.node, rd_docs_pos(l->docs, vb.node));
            if (error < 0) {
                bury(l, vb.node);
                goto done;
            }
            if (vb.height + 1 > out->height)
                out->height = vb.height + 1;
            error = mb_set(l, &mb, role, key, vb.node, 0, kpos);
            if (error < 0)
                goto done;
        }
        free(keytext);
        keytext = NULL;
    }
done:
    free(keytext);
    mb_release(&mb);
    if (error < 0) {
        cJSON_Delete(mb.obj);
        out->node = NULL;
    }
    return error;
}

int rd_yaml_load_items(struct rd_docs **out, const char *file, const char *text, size_t len,
                       const struct rd_yaml_limits *limits, const struct rd_yaml_items *items,
                       size_t nitems, struct rc_err *err)
{
    struct ld l;
    yaml_event_t ev;
    int ndocs = 0;
    int error;

    assert(out && (text || !len) && items && nitems);
    *out = NULL;
    error = ld_open(&l, file, text, len, limits, err);
    if (error < 0)
        return error;
    for (;;) {
        struct built b = {0};
        struct rd_pos pos;

        error = ld_next(&l, &ev);
        if (error < 0)
            break;
        pos = mark_pos(ev.start_mark);
        if (ev.type == YAML_STREAM_START_EVENT) {
            yaml_event_delete(&ev);
            continue;
        }
        if (ev.type == YAML_STREAM_END_EVENT) {
            yaml_event_delete(&ev);
            break;
        }
        if (ev.type != YAML_DOCUMENT_START_EVENT) {
            yaml_event_delete(&ev);
            error = ld_fail(&l, pos, "unexpected YAML event");
            break;
        }
        yaml_event_delete(&ev);
        if (++ndocs > 1) {
            error = ld_fail(&l, pos, "expected one document, found more");
            break;
        }
        error = ld_next(&l, &ev);
        if (error < 0)
            break;
        if (ev.type == YAML_MAPPING_START_EVENT) {
            struct rd_pos mpos = mark_pos(ev.start_mark);
            yaml_event_delete(&ev);
            error = ld_stream_map(&l, mpos, 1, ROLE_ROOT, items, nitems, &b);
        } else {
            error = ld_node(&l, &ev, 0, ROLE_ROOT, &b);
        }
        if (error < 0)
            break;
        error = ld_next(&l, &ev);
        if (error < 0) {
            cJSON_Delete(b.node);
            break;
        }
        yaml_event_delete(&ev); /* DOCUMENT-END */
        if (cJSON_IsNull(b.node))
            bury(&l, b.node);
        else
            docs_push(l.docs, b.node);
    }
    yaml_parser_delete(&l.parser);
    anchors_clear(&l);
    if (error < 0) {
        rd_docs_free(l.docs);
        return error;
    }
    *out = l.docs;
    return RC_OK;
}

/* ==== Comparing ==== */

int rd_yaml_equal(const cJSON *a, const cJSON *b)
{
    if (!a || !b)
        return a == b;
    if ((a->type & 0xFF) != (b->type & 0xFF))
        return 0;
    if (cJSON_IsNumber(a)) {
        char ba[NUM_TEXT_MAX], bb[NUM_TEXT_MAX];
        const char *ia = int_text(a, ba), *ib = int_text(b, bb);
        if (ia || ib) /* integers compare exactly */
            return ia && ib && strcmp(ia, ib) == 0;
        return a->valuedouble == b->valuedouble || (isnan(a->valuedouble) && isnan(b->valuedouble));
    }
    if (cJSON_IsString(a))
        return strcmp(a->valuestring, b->valuestring) == 0;
    if (cJSON_IsArray(a) || cJSON_IsObject(a)) {
        const cJSON *x = a->child, *y = b->child;
        for (; x && y; x = x->next, y = y->next) {
            if (cJSON_IsObject(a) && strcmp(x->string, y->string) != 0)
                return 0;
            if (!rd_yaml_equal(x, y))
                return 0;
        }
        return !x && !y;
    }
    return 1; /* null, true, false */
}

/* ==== Emitting ==== */

/* Decode one UTF-8 code point at s[i..len); returns its length or 0 if invalid. */
static size_t utf8_next(const unsigned char *s, size_t len, size_t i, uint32_t *cp)
{
    unsigned char c = s[i];
    size_t n, k;
    uint32_t v, min;

    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    if ((c & 0xE0) == 0xC0) {
        n = 2;
        v = c & 0x1F;
        min = 0x80;
    } else if ((c & 0xF0) == 0xE0) {
        n = 3;
        v = c & 0x0F;
        min = 0x800;
    } else if ((c & 0xF8) == 0xF0) {
        n = 4;
        v = c & 0x07;
        min = 0x10000;
    } else {
        return 0;
    }
    if (i + n > len)
        return 0;
    for (k = 1; k < n; k++) {
        if ((s[i + k] & 0xC0) != 0x80)
            return 0;
        v = (v << 6) | (s[i + k] & 0x3F);
    }
    if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF))
        return 0;
    *cp = v;
    return n;
}

/* Printable in YAML and not a line break, tab or BOM: may appear as is in a scalar. */
static int cp_plain_ok(uint32_t c)
{
    return (c >= 0x20 && c <= 0x7E) || (c >= 0xA0 && c <= 0xD7FF && c != 0x2028 && c != 0x2029) ||
           (c >= 0xE000 && c <= 0xFFFD && c != 0xFEFF) || (c >= 0x10000 && c <= 0x10FFFF);
}

struct str_info {
    int valid;      /* valid UTF-8 */
    int all_plain;  /* every code point cp_plain_ok */
    int literal_ok; /* may be a literal block scalar */
    int has_newline;
};

static void str_scan(const char *s, struct str_info *info)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0, len;
    int line_start = 1, only_breaks = 1;

    info->valid = 1;
    info->all_plain = 1;
    info->literal_ok = 1;
    info->has_newline = 0;
    /* printable ASCII, what nearly every string of a manifest is, without decoding */
    while (u[i] >= 0x20 && u[i] <= 0x7E)
        i++;
    if (i) {
        line_start = 0;
        only_breaks = 0;
    }
    if (!u[i]) {
        if (!i) /* "": only line breaks, as below */
            info->literal_ok = 0;
        return;
    }
    len = i + strlen(s + i);
    while (i < len) {
        uint32_t cp;
        size_t n = utf8_next(u, len, i, &cp);
        if (!n) {
            info->valid = 0;
            return;
        }
        if (cp == '\n') {
            info->has_newline = 1;
            info->all_plain = 0;
            line_start = 1;
            i += n;
            continue;
        }
        only_breaks = 0;
        if (!cp_plain_ok(cp)) {
            info->all_plain = 0;
            if (cp != '\t' || line_start)
                info->literal_ok = 0;
        }
        line_start = 0;
        i += n;
    }
    /* a string of only line breaks reads back as "" under clip chomping: quote it */
    if (only_breaks)
        info->literal_ok = 0;
}

/* A number under YAML 1.1's own regular expressions (yaml.org/type/int.html, float.html),
 * read generously: [-+]? then 0b[01_]+ | 0x[0-9a-fA-F_]+ | [0-9][0-9_]* |
 * [0-9][0-9_]*(:[0-9]{1,2})+(\.[0-9_]*)? (base 60) | ([0-9][0-9_]*)?\.[0-9._]*([eE][-+]?[0-9]+)?
 * (which also takes "1.2.3" and ".") | .inf | .nan. go-yaml does not read most of these as
 * numbers, but PyYAML and other YAML 1.1 readers do. */
static int yaml11_number(const char *s)
{
    const char *p = s;
    size_t n;

    if (*p == '+' || *p == '-')
        p++;
    if (p[0] == '0' && (p[1] == 'b' || p[1] == 'x')) {
        const char *set = p[1] == 'b' ? "01_" : "0123456789abcdefABCDEF_";
        p += 2;
        return *p && strspn(p, set) == strlen(p);
    }
    if (*p == '.' && (!strcmp(p, ".inf") || !strcmp(p, ".Inf") || !strcmp(p, ".INF") ||
                      !strcmp(p, ".nan") || !strcmp(p, ".NaN") || !strcmp(p, ".NAN")))
        return 1;
    n = strspn(p, "0123456789_");
    if (n && !is_digit(p[0]))
        return 0;
    if (n && !p[n])
        return 1;
    if (n && p[n] == ':') {
        const char *q = p + n;
        while (*q == ':') {
            size_t m = strspn(++q, "0123456789");
            if (m < 1 || m > 2)
                return 0;
            q += m;
        }
        if (*q == '.')
            q += 1 + strspn(q + 1, "0123456789_");
        return !*q;
    }
    if (p[n] == '.') {
        const char *q = p + n + 1;
        q += strspn(q, "0123456789._");
        if (*q == 'e' || *q == 'E') {
            size_t m;
            q++;
            if (*q == '+' || *q == '-')
                q++;
            m = strspn(q, "0123456789");
            if (!m)
                return 0;
            q += m;
        }
        return !*q;
    }
    return 0;
}

/* Could a reader take s for a timestamp? YAML 1.1's timestamp type and yaml.v3 (kyaml, so
 * `kubectl kustomize`, which rewrites 2024-01-01 as 2024-01-01T00:00:00Z) start with a
 * four-digit year and '-'; any such string followed by a digit is quoted. */
static int looks_like_timestamp(const char *s)
{
    return strspn(s, "0123456789") == 4 && s[4] == '-' && is_digit(s[5]);
}

/*
 * May s be written as a plain scalar (block context)? Only if every YAML reader takes it
 * back as the same string: go-yaml v2 (kubectl), yaml.v3 (kustomize's kyaml, which Flux and
 * Argo CD run on the deploy branch), YAML 1.1 and 1.2 readers. So not when it reads as null,
 * a bool in any YAML 1.1 spelling (y, n, yes, on, off, ...), a number in any base or form
 * (0x1F, 0o17, 017, 0b1, 1_000, 1e3, .5, 1:20, 1.2.3, .inf, .nan), a timestamp, the merge
 * key << or the value key =; nor when it starts with an indicator or space, ends with a
 * space or ':', or holds ": " or " #".
 */
static int plain_ok(const char *s, const struct str_info *info)
{
    double num;
    size_t len = strlen(s);

    if (!len || !info->all_plain)
        return 0;
    /* A letter first, other than those the null and bool words (all of at most 6 bytes)
     * start with: no reader takes it for anything but a string, and it is no indicator (what
     * most strings of a manifest are: the checks below would each find nothing). */
    if (!(((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z')) &&
          (len > 6 || !strchr("nNtTyYfFoO", s[0])))) {
        if (resolve_plain(s, &num, NULL) != SK_STR)
            return 0; /* would read back as null, bool, number or merge */
        if (yaml11_number(s) || looks_like_timestamp(s) || float_syntax(s))
            return 0; /* another reader would retype it (float_syntax: 1e400 is inf to some) */
        if (strchr("-?:,[]{}#&*!|>'\"%@` <=~", s[0]))
            return 0;
    }
    if (s[len - 1] == ' ' || s[len - 1] == ':')
        return 0;
    for (const char *q = s; *q; q++) { /* ": " or " #": one pass, no strstr setup twice */
        if ((q[0] == ':' && q[1] == ' ') || (q[0] == ' ' && q[1] == '#'))
            return 0;
    }
    if (strncmp(s, "...", 3) == 0)
        return 0;
    return 1;
}

static int put_quoted(struct rc_buf *b, const char *s, struct rc_err *err)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t len = strlen(s), i = 0;
    int error = rc_buf_putc(b, '"', err);

    while (error == RC_OK && i < len) {
        uint32_t cp = 0;
        size_t n = utf8_next(u, len, i, &cp);
        const char *esc = NULL;

        if (!n) /* every string was checked as it was read; this would loop forever */
            return rc_err_set(err, RC_EINVALID, "a string to write is not UTF-8");
        switch (cp) {
        case '"':
            esc = "\\\"";
            break;
        case '\\':
            esc = "\\\\";
            break;
        case '\n':
            esc = "\\n";
            break;
        case '\t':
            esc = "\\t";
            break;
        case '\r':
            esc = "\\r";
            break;
        case 0x07:
            esc = "\\a";
            break;
        case 0x08:
            esc = "\\b";
            break;
        case 0x0B:
            esc = "\\v";
            break;
        case 0x0C:
            esc = "\\f";
            break;
        case 0x1B:
            esc = "\\e";
            break;
        case 0x85:
            esc = "\\N";
            break;
        case 0x2028:
            esc = "\\L";
            break;
        case 0x2029:
            esc = "\\P";
            break;
        default:
            break;
        }
        if (esc)
            error = rc_buf_puts(b, esc, err);
        else if (cp_plain_ok(cp))
            error = rc_buf_add(b, s + i, n, err);
        else if (cp <= 0xFF)
            error = rc_buf_printf(b, err, "\\x%02X", (unsigned)cp);
        else if (cp <= 0xFFFF)
            error = rc_buf_printf(b, err, "\\u%04X", (unsigned)cp);
        else
            error = rc_buf_printf(b, err, "\\U%08X", (unsigned)cp);
        i += n;
    }
    if (error == RC_OK)
        error = rc_buf_putc(b, '"', err);
    return error;
}

static int put_indent(struct rc_buf *b, int indent, struct rc_err *err)
{
    static const char spaces[] = "                                                                ";
    const int most = (int)sizeof(spaces) - 1;
    int error = RC_OK;

    /* a line's indentation in one add, not a call a space (13 M calls in a first pass of
     * 10,000 workloads) */
    for (; indent > 0 && error == RC_OK; indent -= most)
        error = rc_buf_add(b, spaces, (size_t)(indent < most ? indent : most), err);
    return error;
}

/* A literal block scalar: header ("|", "|-", "|+", with an indentation indicator when the
 * text starts with a space or a line break), then each line at `indent` spaces. */
static int put_literal(struct rc_buf *b, const char *s, int indent, struct rc_err *err)
{
    size_t len = strlen(s), trailing = 0;
    const char *p = s, *end;
    int error;

    while (trailing < len && s[len - 1 - trailing] == '\n')
        trailing++;
    error = rc_buf_putc(b, '|', err);
    if (error == RC_OK && (s[0] == ' ' || s[0] == '\n'))
        error = rc_buf_putc(b, '2', err);
    if (error == RC_OK && trailing != 1)
        error = rc_buf_putc(b, trailing == 0 ? '-' : '+', err);
    if (error == RC_OK)
        error = rc_buf_putc(b, '\n', err);
    end = s + len - (trailing ? 1 : 0); /* the final break is written by the last line */
    while (error == RC_OK) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        if (n)
            error = put_indent(b, indent, err);
        if (error == RC_OK)
            error = rc_buf_add(b, p, n, err);
        if (error == RC_OK)
            error = rc_buf_putc(b, '\n', err);
        if (!nl)
            break;
        p = nl + 1;
    }
    return error;
}

/* A number: an exact integer text when the node carries one, else the double (integers up
 * to 2^53 without ".0", others in the shortest form that reads back exactly). Infinities and
 * NaN are refused: kubectl cannot send them (see check_finite). */
static int put_number(struct rc_buf *b, const cJSON *n, struct rc_err *err)
{
    double d = n->valuedouble;
    char tmp[40];

    if (!isfinite(d))
        return rc_err_set(err, RC_EINVALID, "number %s has no JSON form",
                          isnan(d) ? ".nan"
                          : d > 0  ? ".inf"
                                   : "-.inf");
    if (n->valuestring && strtod(n->valuestring, NULL) == d)
        return rc_buf_puts(b, n->valuestring, err);
    if (d == 0 && signbit(d))
        return rc_buf_puts(b, "-0.0", err);
    if (is_integral(d) && d >= -9007199254740992.0 && d <= 9007199254740992.0) {
        /* what "%.0f" writes, without printf's arbitrary-precision path */
        char *p = tmp + sizeof(tmp);
        int64_t v = (int64_t)d;
        uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;

        *--p = '\0';
        do {
            *--p = (char)('0' + u % 10);
            u /= 10;
        } while (u);
        if (v < 0)
            *--p = '-';
        return rc_buf_puts(b, p, err);
    }
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(tmp, sizeof(tmp), "%.*g", prec, d);
        if (strtod(tmp, NULL) == d)
            break;
    }
    return rc_buf_puts(b, tmp, err);
}

/* A string on the line after "key: " or "- ": plain when every reader takes it back as the
 * same string, else double-quoted. */
static int put_string(struct rc_buf *b, const char *s, const struct str_info *info,
                      struct rc_err *err)
{
    if (!info->valid)
        return rc_err_set(err, RC_EINVALID, "string is not valid UTF-8");
    if (plain_ok(s, info))
        return rc_buf_puts(b, s, err);
    return put_quoted(b, s, err);
}

/* What fits on the line after "key: " or "- " (or stands alone as a document): a scalar, or
 * an empty mapping or sequence. s and info: what scan_string gave for n (s NULL: n is not a
 * string), so that a string is scanned once. */
static int put_inline(struct rc_buf *b, const cJSON *n, const char *s, const struct str_info *info,
                      struct rc_err *err)
{
    if (s)
        return put_string(b, s, info, err);
    if (cJSON_IsObject(n))
        return rc_buf_puts(b, "{}", err);
    if (cJSON_IsArray(n))
        return rc_buf_puts(b, "[]", err);
    if (cJSON_IsNull(n))
        return rc_buf_puts(b, "null", err);
    if (cJSON_IsTrue(n))
        return rc_buf_puts(b, "true", err);
    if (cJSON_IsFalse(n))
        return rc_buf_puts(b, "false", err);
    if (cJSON_IsNumber(n))
        return put_number(b, n, err);
    return rc_err_set(err, RC_ERROR, "cannot emit a cJSON node of type %d", n->type & 0xFF);
}

/* A string node's text and what str_scan says of it (valuestring NULL reads as ""); NULL for
 * any other node. Scanned once, for the choice of a block and for the scalar. */
static const char *scan_string(const cJSON *n, struct str_info *info)
{
    const char *s;

    if (!cJSON_IsString(n))
        return NULL;
    s = n->valuestring ? n->valuestring : "";
    str_scan(s, info);
    return s;
}

static int is_block(const char *s, const struct str_info *info)
{
    return s && info->valid && info->has_newline && info->literal_ok;
}

static int is_nonempty_coll(const cJSON *n)
{
    return (cJSON_IsObject(n) || cJSON_IsArray(n)) && n->child;
}

static int emit_node(struct rc_buf *b, const cJSON *n, int indent, int inline_first, int depth,
                     struct rc_err *err);

/* A value after "key:" or "- " (the cursor is right after the ':' or '-'). */
static int emit_after(struct rc_buf *b, const cJSON *v, int indent, int seq_indent, int depth,
                      int after_dash, struct rc_err *err)
{
    struct str_info info;
    const char *s = scan_string(v, &info);
    int error;

    if (is_block(s, &info)) {
        error = rc_buf_putc(b, ' ', err);
        if (error == RC_OK)
            error = put_literal(b, s, indent + 2, err);
        return error;
    }
    if (!is_nonempty_coll(v)) {
        error = rc_buf_putc(b, ' ', err);
        if (error == RC_OK)
            error = put_inline(b, v, s, &info, err);
        if (error == RC_OK)
            error = rc_buf_putc(b, '\n', err);
        return error;
    }
    if (after_dash) {
        /* "- key: v" / "- - x": the first line shares the dash's line */
        error = rc_buf_putc(b, ' ', err);
        if (error == RC_OK)
            error = emit_node(b, v, indent + 2, 1, depth + 1, err);
        return error;
    }
    error = rc_buf_putc(b, '\n', err);
    if (error == RC_OK)
        error = emit_node(b, v, cJSON_IsArray(v) ? seq_indent : indent + 2, 0, depth + 1, err);
    return error;
}

static int emit_key(struct rc_buf *b, const char *key, int *explicit_key, struct rc_err *err)
{
    struct str_info info;
    size_t start = b->len;
    int error;

    str_scan(key, &info);
    if (!info.valid)
        return rc_err_set(err, RC_EINVALID, "mapping key is not valid UTF-8");
    if (plain_ok(key, &info))
        error = rc_buf_puts(b, key, err);
    else
        error = put_quoted(b, key, err);
    /* YAML limits implicit keys to 1024 characters: longer ones use "? key" */
    *explicit_key = error == RC_OK && b->len - start > 1000;
    return error;
}

/* Emit a non-empty collection (or anything, at the root) at `indent`. inline_first: the
 * cursor is already at the indentation for the first line. */
static int emit_node(struct rc_buf *b, const cJSON *n, int indent, int inline_first, int depth,
                     struct rc_err *err)
{
    int error = RC_OK;
    int first = 1;

    if (depth > 10000)
        return rc_err_set(err, RC_ERROR, "tree nested too deeply to emit");
    if (cJSON_IsObject(n)) {
        for (const cJSON *c = n->child; c && error == RC_OK; c = c->next, first = 0) {
            int explicit_key = 0;
            size_t keystart;
            if (!(first && inline_first))
                error = put_indent(b, indent, err);
            if (error == RC_OK && !c->string)
                error = rc_err_set(err, RC_ERROR, "object member without a key");
            keystart = b->len;
            if (error == RC_OK)
                error = emit_key(b, c->string, &explicit_key, err);
            if (error == RC_OK && explicit_key) {
                /* rewrite as "? <key>\n<indent>:" */
                char *k = rc_xstrndup(b->ptr + keystart, b->len - keystart);
                b->len = keystart;
                b->ptr[b->len] = '\0';
                error = rc_buf_printf(b, err, "? %s\n", k);
                free(k);
                if (error == RC_OK)
                    error = put_indent(b, indent, err);
            }
            if (error == RC_OK)
                error = rc_buf_putc(b, ':', err);
            if (error == RC_OK)
                error = emit_after(b, c, indent, explicit_key ? indent + 2 : indent, depth, 0, err);
        }
        return error;
    }
    if (cJSON_IsArray(n)) {
        for (const cJSON *c = n->child; c && error == RC_OK; c = c->next, first = 0) {
            if (!(first && inline_first))
                error = put_indent(b, indent, err);
            if (error == RC_OK)
                error = rc_buf_putc(b, '-', err);
            if (error == RC_OK)
                error = emit_after(b, c, indent, indent + 2, depth, 1, err);
        }
        return error;
    }
    return RC_ERROR;
}

int rd_yaml_emit(struct rc_buf *out, const cJSON *root, struct rc_err *err)
{
    size_t start = out->len;
    struct str_info info;
    const char *s;
    int error;

    assert(out);
    if (!root)
        return rc_err_set(err, RC_ERROR, "no document to emit");
    s = scan_string(root, &info);
    if (is_nonempty_coll(root)) {
        error = emit_node(out, root, 0, 0, 0, err);
    } else if (is_block(s, &info)) {
        error = put_literal(out, s, 2, err);
    } else {
        error = put_inline(out, root, s, &info, err);
        if (error == RC_OK)
            error = rc_buf_putc(out, '\n', err);
    }
    if (error < 0) {
        out->len = start;
        out->ptr[start] = '\0';
    }
    return error;
}

/* ==== JSON for the API server ==== */

/* Turn every number of a copied tree into raw JSON text (see json_number_text). */
static int json_numbers(cJSON *n, struct rc_err *err)
{
    if (cJSON_IsNumber(n)) {
        char text[NUM_TEXT_MAX];
        cJSON *raw;
        char *swap;
        if (!isfinite(n->valuedouble))
            return rc_err_set(err, RC_EINVALID, "number %s has no JSON form",
                              isnan(n->valuedouble) ? ".nan"
                              : n->valuedouble > 0  ? ".inf"
                                                    : "-.inf");
        json_number_text(n, text);
        raw = must(cJSON_CreateRaw(text));
        swap = n->valuestring;
        n->valuestring = raw->valuestring;
        raw->valuestring = swap;
        cJSON_Delete(raw);
        n->type = (n->type & ~0xFF) | cJSON_Raw;
        return RC_OK;
    }
    for (cJSON *c = n->child; c; c = c->next) {
        int error = json_numbers(c, err);
        if (error < 0)
            return error;
    }
    return RC_OK;
}

char *rd_json_print(const cJSON *root, struct rc_err *err)
{
    cJSON *copy;
    char *out = NULL;

    assert(root);
    copy = must(cJSON_Duplicate(root, 1));
    if (json_numbers(copy, err) == RC_OK && !(out = cJSON_PrintUnformatted(copy)))
        abort(); /* out of memory */
    cJSON_Delete(copy);
    return out;
}
