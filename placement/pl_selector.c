/*
 * pl_selector.c - label selectors (match, validate, parse, format), taints and tolerations.
 *
 * Semantics are Kubernetes': labels.Requirement.Matches for matching, labels.Parse for the
 * string syntax (its lexer: identifiers are runs of anything but whitespace and "!=(),<>"),
 * metav1 validation for keys (IsQualifiedName) and values (IsValidLabelValue), and the
 * scheduler's TaintToleration filter. Not here: matchLabels/matchExpressions in YAML
 * (render/ turns those into struct pl_selector), namespaces, fields (matchFields).
 */
#include "rc_sort.h"
#include "pl_selector.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pl_basics.h"
#include "rc_arena.h"
#include "rc_buf.h"
#include "rc_err.h"
#include "rc_banned.h"

/* ==== Small checks ==== */

static int is_alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

static int is_lower_alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

/* strconv.ParseInt(s, 10, 64): [+-]digits, in range, nothing else. */
static int parse_int64(int64_t *out, const char *s)
{
    const char *p = s;
    uint64_t v = 0, lim;
    int neg = 0;

    if (*p == '+' || *p == '-')
        neg = *p++ == '-';
    if (!*p)
        return 0;
    lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    for (; *p; p++) {
        if (*p < '0' || *p > '9')
            return 0;
        if (v > (lim - (uint64_t)(*p - '0')) / 10)
            return 0;
        v = v * 10 + (uint64_t)(*p - '0');
    }
    if (neg)
        *out = v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v;
    else
        *out = (int64_t)v;
    return 1;
}

/* The name part of a qualified name: 1..63 of [A-Za-z0-9-_.], alphanumeric at both ends.
 * Returns NULL or what is wrong. */
static const char *check_name(const char *s, size_t n)
{
    if (n == 0)
        return "name part must not be empty";
    if (n > 63)
        return "name part must be at most 63 characters";
    if (!is_alnum(s[0]) || !is_alnum(s[n - 1]))
        return "name part must start and end with an alphanumeric character";
    for (size_t i = 0; i < n; i++) {
        if (!is_alnum(s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.')
            return "name part must consist of alphanumeric characters, '-', '_' or '.'";
    }
    return NULL;
}

/* A DNS-1123 subdomain: at most 253, dot-separated labels of [a-z0-9-], each non-empty and
 * lowercase alphanumeric at both ends. */
static const char *check_subdomain(const char *s, size_t n)
{
    size_t start = 0;

    if (n == 0)
        return "prefix part must not be empty";
    if (n > 253)
        return "prefix part must be at most 253 characters";
    for (size_t i = 0; i <= n; i++) {
        if (i < n && s[i] != '.') {
            if (!is_lower_alnum(s[i]) && s[i] != '-')
                return "prefix part must be a DNS-1123 subdomain (lowercase alphanumeric "
                       "characters, '-' and '.')";
            continue;
        }
        if (i == start || !is_lower_alnum(s[start]) || !is_lower_alnum(s[i - 1]))
            return "prefix part must be a DNS-1123 subdomain (each part starting and ending "
                   "with a lowercase alphanumeric character)";
        start = i + 1;
    }
    return NULL;
}

/* A label key ([prefix/]name). Returns NULL or what is wrong. */
static const char *check_label_key(const char *key)
{
    const char *slash = strchr(key, '/');
    const char *why;

    if (!slash)
        return check_name(key, strlen(key));
    if (strchr(slash + 1, '/'))
        return "a label key has at most one '/'";
    why = check_subdomain(key, (size_t)(slash - key));
    return why ? why : check_name(slash + 1, strlen(slash + 1));
}

/* A label value: empty, or at most 63 of [A-Za-z0-9-_.] alphanumeric at both ends. */
static const char *check_label_value(const char *v)
{
    size_t n = strlen(v);

    if (n == 0 || !check_name(v, n))
        return NULL;
    return "at most 63 characters of [A-Za-z0-9-_.], starting and ending with an alphanumeric";
}

static const char *op_name(enum pl_op op)
{
    switch (op) {
    case PL_OP_IN:
        return "In";
    case PL_OP_NOTIN:
        return "NotIn";
    case PL_OP_EXISTS:
        return "Exists";
    case PL_OP_DOESNOTEXIST:
        return "DoesNotExist";
    case PL_OP_GT:
        return "Gt";
    case PL_OP_LT:
        return "Lt";
    }
    return "?";
}

static const char *str(const char *s)
{
    return s ? s : "";
}

/* ==== Matching ==== */

static int has_value(const struct pl_requirement *r, const char *v)
{
    for (size_t i = 0; i < r->nvalues; i++) {
        if (!strcmp(str(r->values[i]), v))
            return 1;
    }
    return 0;
}

static int requirement_matches(const struct pl_requirement *r, const struct pl_labels *labels)
{
    const char *v = labels ? pl_labels_get(labels, str(r->key)) : NULL;
    int64_t have, want;

    switch (r->op) {
    case PL_OP_IN:
        return v && has_value(r, v);
    case PL_OP_NOTIN:
        return !v || !has_value(r, v);
    case PL_OP_EXISTS:
        return v != NULL;
    case PL_OP_DOESNOTEXIST:
        return v == NULL;
    case PL_OP_GT:
    case PL_OP_LT:
        if (!v || r->nvalues != 1 || !parse_int64(&have, v) ||
            !parse_int64(&want, str(r->values[0])))
            return 0;
        return r->op == PL_OP_GT ? have > want : have < want;
    }
    return 0;
}

int pl_selector_matches(const struct pl_selector *sel, const struct pl_labels *labels)
{
    for (size_t i = 0; i < sel->n; i++) {
        if (!requirement_matches(&sel->req[i], labels))
            return 0;
    }
    return 1;
}

/* ==== Validation ==== */

int pl_selector_validate(const struct pl_selector *sel, int allow_gt_lt, struct rc_err *err)
{
    for (size_t i = 0; i < sel->n; i++) {
        const struct pl_requirement *r = &sel->req[i];
        const char *key = str(r->key), *why = check_label_key(key);
        const char *dots = strlen(key) > 64 ? "..." : "";
        int64_t x;

        if (why)
            return rc_err_set(err, RC_EINVALID, "invalid label key '%.64s%s': %s", key, dots, why);
        switch (r->op) {
        case PL_OP_IN:
        case PL_OP_NOTIN:
            if (r->nvalues == 0)
                return rc_err_set(err, RC_EINVALID,
                                  "operator '%s' on key '%.64s%s' needs at least one value",
                                  op_name(r->op), key, dots);
            break;
        case PL_OP_EXISTS:
        case PL_OP_DOESNOTEXIST:
            if (r->nvalues != 0)
                return rc_err_set(err, RC_EINVALID,
                                  "operator '%s' on key '%.64s%s' takes no values", op_name(r->op),
                                  key, dots);
            break;
        case PL_OP_GT:
        case PL_OP_LT:
            if (!allow_gt_lt)
                return rc_err_set(err, RC_EINVALID,
                                  "operator '%s' on key '%.64s%s' is only allowed in node "
                                  "affinity",
                                  op_name(r->op), key, dots);
            if (r->nvalues != 1)
                return rc_err_set(err, RC_EINVALID,
                                  "operator '%s' on key '%.64s%s' needs exactly one value",
                                  op_name(r->op), key, dots);
            if (!parse_int64(&x, str(r->values[0])))
                return rc_err_set(err, RC_EINVALID,
                                  "value '%.64s' of operator '%s' on key '%.64s%s' is not an "
                                  "integer",
                                  str(r->values[0]), op_name(r->op), key, dots);
            break;
        default:
            return rc_err_set(err, RC_EINVALID, "unknown operator %d on key '%.64s%s'", (int)r->op,
                              key, dots);
        }
    }
    return RC_OK;
}

/* ==== Parsing kubectl's syntax ==== */

enum tok {
    T_END,
    T_IDENT,
    T_IN,    /* "in" */
    T_NOTIN, /* "notin" */
    T_NOT,   /* ! */
    T_EQ,    /* = */
    T_DEQ,   /* == */
    T_NEQ,   /* != */
    T_GT,    /* > */
    T_LT,    /* < */
    T_OPEN,  /* ( */
    T_CLOSE, /* ) */
    T_COMMA
};

struct parser {
    const char *text;
    size_t pos;   /* after the current token */
    enum tok tok; /* current token */
    size_t start; /* its offset */
    size_t len;   /* its length */
    struct rc_arena *a;
    struct rc_err *err;
};

static int is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static int is_special(char c)
{
    return c == '!' || c == '=' || c == '(' || c == ')' || c == ',' || c == '<' || c == '>';
}

/* Read the next token into p->tok. In a value position "in" and "notin" are identifiers. */
static void next(struct parser *p, int value_position)
{
    const char *s = p->text;
    size_t i = p->pos;

    while (is_space(s[i]))
        i++;
    p->start = i;
    p->len = 1;
    switch (s[i]) {
    case '\0':
        p->tok = T_END;
        p->len = 0;
        break;
    case '!':
        p->tok = s[i + 1] == '=' ? T_NEQ : T_NOT;
        p->len = s[i + 1] == '=' ? 2 : 1;
        break;
    case '=':
        p->tok = s[i + 1] == '=' ? T_DEQ : T_EQ;
        p->len = s[i + 1] == '=' ? 2 : 1;
        break;
    case '>':
        p->tok = T_GT;
        break;
    case '<':
        p->tok = T_LT;
        break;
    case '(':
        p->tok = T_OPEN;
        break;
    case ')':
        p->tok = T_CLOSE;
        break;
    case ',':
        p->tok = T_COMMA;
        break;
    default:
        while (s[i + p->len] && !is_space(s[i + p->len]) && !is_special(s[i + p->len]))
            p->len++;
        p->tok = T_IDENT;
        if (!value_position && p->len == 2 && !memcmp(s + i, "in", 2))
            p->tok = T_IN;
        else if (!value_position && p->len == 5 && !memcmp(s + i, "notin", 5))
            p->tok = T_NOTIN;
        break;
    }
    p->pos = i + p->len;
}

static int fail(struct parser *p, const char *what)
{
    size_t n = strlen(p->text);

    return rc_err_set(p->err, RC_EINVALID, "invalid selector '%.80s%s': %s at column %zu", p->text,
                      n > 80 ? "..." : "", what, p->start + 1);
}

static char *ident(struct parser *p)
{
    return rc_arena_strndup(p->a, p->text + p->start, p->len);
}

/* Append to an arena array, doubling its capacity. */
static void *push(struct rc_arena *a, void *arr, size_t *cap, size_t n, size_t elem)
{
    void *grown;

    if (n < *cap)
        return arr;
    *cap = *cap ? *cap * 2 : 4;
    grown = rc_arena_calloc(a, *cap, elem);
    if (n)
        memcpy(grown, arr, n * elem);
    return grown;
}

static int cmp_str(const void *x, const void *y)
{
    return strcmp(*(const char *const *)x, *(const char *const *)y);
}

struct keyed {
    struct pl_requirement r;
    size_t i;
};

static int cmp_keyed(const void *x, const void *y)
{
    const struct keyed *a = x, *b = y;
    int c = strcmp(a->r.key, b->r.key);

    if (c)
        return c;
    return a->i < b->i ? -1 : a->i > b->i;
}

/* Refuse a value that is not a valid label value, pointing at its column. */
static int check_value(struct parser *p, const char *v, size_t at)
{
    const char *why = check_label_value(v);
    char msg[160];

    if (!why)
        return RC_OK;
    p->start = at;
    snprintf(msg, sizeof(msg), "invalid label value '%.40s%s' (%s)", v, strlen(v) > 40 ? "..." : "",
             why);
    return fail(p, msg);
}

/* After the key: the operator and its values. p->tok is the token after the key. */
static int parse_values(struct parser *p, struct pl_requirement *r)
{
    size_t cap = 0, vstart;
    int error;

    switch (p->tok) {
    case T_EQ:
    case T_DEQ:
    case T_NEQ:
    case T_GT:
    case T_LT:
        r->op = p->tok == T_NEQ  ? PL_OP_NOTIN
                : p->tok == T_GT ? PL_OP_GT
                : p->tok == T_LT ? PL_OP_LT
                                 : PL_OP_IN;
        next(p, 1);
        r->values = rc_arena_calloc(p->a, 1, sizeof(*r->values));
        r->nvalues = 1;
        vstart = p->start;
        if (p->tok == T_IDENT) {
            r->values[0] = ident(p);
            next(p, 0);
        } else if (p->tok == T_END || p->tok == T_COMMA) {
            r->values[0] = "";
        } else {
            return fail(p, "expected a value");
        }
        if (r->op == PL_OP_GT || r->op == PL_OP_LT) {
            int64_t x;
            if (!parse_int64(&x, r->values[0])) {
                p->start = vstart;
                return fail(p, "expected an integer");
            }
        }
        return check_value(p, r->values[0], vstart);
    case T_IN:
    case T_NOTIN:
        r->op = p->tok == T_IN ? PL_OP_IN : PL_OP_NOTIN;
        next(p, 1);
        if (p->tok != T_OPEN)
            return fail(p, "expected '('");
        /* item ("," item)* ")", an item being a value or nothing (the empty value) */
        for (;;) {
            const char *v = "";
            next(p, 1);
            vstart = p->start;
            if (p->tok == T_IDENT) {
                v = ident(p);
                next(p, 1);
            }
            if (p->tok != T_COMMA && p->tok != T_CLOSE)
                return fail(p, vstart == p->start ? "expected a value, ',' or ')'"
                                                  : "expected ',' or ')'");
            if ((error = check_value(p, v, vstart)) < 0)
                return error;
            r->values = push(p->a, r->values, &cap, r->nvalues, sizeof(*r->values));
            r->values[r->nvalues++] = v;
            if (p->tok == T_CLOSE)
                break;
        }
        next(p, 0);
        /* a set: sorted, unique */
        rc_sort(r->values, r->nvalues, sizeof(*r->values), cmp_str);
        {
            size_t w = 0;
            for (size_t i = 0; i < r->nvalues; i++) {
                if (w == 0 || strcmp(r->values[w - 1], r->values[i]))
                    r->values[w++] = r->values[i];
            }
            r->nvalues = w;
        }
        return RC_OK;
    default:
        return fail(p, "expected '=', '==', '!=', '>', '<', 'in', 'notin', ',' or the end");
    }
}

int pl_selector_parse(struct pl_selector *out, const char *text, struct rc_arena *a,
                      struct rc_err *err)
{
    struct parser p = {text ? text : "", 0, T_END, 0, 0, a, err};
    struct pl_selector sel = {0, NULL};
    size_t cap = 0;
    int error;

    next(&p, 1);
    if (p.tok == T_END)
        goto done;
    for (;;) {
        struct pl_requirement *r;
        const char *why;
        int neg = 0;

        if (p.tok == T_NOT) {
            neg = 1;
            next(&p, 1);
        }
        if (p.tok != T_IDENT)
            return fail(&p, neg ? "expected a label key" : "expected a label key or '!'");
        sel.req = push(a, sel.req, &cap, sel.n, sizeof(*sel.req));
        r = &sel.req[sel.n++];
        r->key = ident(&p);
        if ((why = check_label_key(r->key)) != NULL) {
            char msg[RC_ERR_MSG_MAX];
            snprintf(msg, sizeof(msg), "invalid label key (%s)", why);
            return fail(&p, msg);
        }
        next(&p, 0);
        if (neg) {
            r->op = PL_OP_DOESNOTEXIST;
        } else if (p.tok == T_END || p.tok == T_COMMA) {
            r->op = PL_OP_EXISTS;
        } else if ((error = parse_values(&p, r)) < 0) {
            return error;
        }
        if (p.tok == T_END)
            break;
        if (p.tok != T_COMMA)
            return fail(&p, "expected ',' or the end");
        next(&p, 1);
    }
done:
    if (sel.n > 1) {
        struct keyed *k = rc_arena_calloc(a, sel.n, sizeof(*k));
        for (size_t i = 0; i < sel.n; i++) {
            k[i].r = sel.req[i];
            k[i].i = i;
        }
        rc_sort(k, sel.n, sizeof(*k), cmp_keyed);
        for (size_t i = 0; i < sel.n; i++)
            sel.req[i] = k[i].r;
    }
    *out = sel;
    return RC_OK;
}

/* ==== Formatting ==== */

static int put_values(struct rc_buf *out, const struct pl_requirement *r, struct rc_err *err)
{
    int error = rc_buf_putc(out, '(', err);

    for (size_t i = 0; error == RC_OK && i < r->nvalues; i++) {
        if (i)
            error = rc_buf_putc(out, ',', err);
        if (error == RC_OK)
            error = rc_buf_puts(out, str(r->values[i]), err);
    }
    return error < 0 ? error : rc_buf_putc(out, ')', err);
}

int pl_selector_format(struct rc_buf *out, const struct pl_selector *sel, struct rc_err *err)
{
    int error = RC_OK;

    for (size_t i = 0; error == RC_OK && i < sel->n; i++) {
        const struct pl_requirement *r = &sel->req[i];
        const char *key = str(r->key);
        const char *one = r->nvalues == 1 ? str(r->values[0]) : NULL;

        if (i && (error = rc_buf_putc(out, ',', err)) < 0)
            break;
        switch (r->op) {
        case PL_OP_IN:
            if (one)
                error = rc_buf_printf(out, err, "%s=%s", key, one);
            else if ((error = rc_buf_printf(out, err, "%s in ", key)) == RC_OK)
                error = put_values(out, r, err);
            break;
        case PL_OP_NOTIN:
            if (one)
                error = rc_buf_printf(out, err, "%s!=%s", key, one);
            else if ((error = rc_buf_printf(out, err, "%s notin ", key)) == RC_OK)
                error = put_values(out, r, err);
            break;
        case PL_OP_EXISTS:
            error = rc_buf_puts(out, key, err);
            break;
        case PL_OP_DOESNOTEXIST:
            error = rc_buf_printf(out, err, "!%s", key);
            break;
        case PL_OP_GT:
        case PL_OP_LT:
            error = rc_buf_printf(out, err, "%s%c%s", key, r->op == PL_OP_GT ? '>' : '<',
                                  one ? one : "");
            break;
        default:
            error = rc_buf_printf(out, err, "%s ?%d", key, (int)r->op);
            break;
        }
    }
    return error;
}

/* ==== Taints and tolerations ==== */

static int tolerates_one(const struct pl_toleration *t, const struct pl_taint *taint)
{
    if (str(t->effect)[0] && strcmp(str(t->effect), str(taint->effect)))
        return 0;
    if (str(t->key)[0] && strcmp(str(t->key), str(taint->key)))
        return 0;
    return t->exists || !strcmp(str(t->value), str(taint->value));
}

int pl_tolerates(const struct pl_toleration *tol, size_t ntol, const struct pl_taint *taint)
{
    for (size_t i = 0; i < ntol; i++) {
        if (tolerates_one(&tol[i], taint))
            return 1;
    }
    return 0;
}

int pl_tolerates_all(const struct pl_toleration *tol, size_t ntol, const struct pl_taint *taints,
                     size_t ntaints)
{
    for (size_t i = 0; i < ntaints; i++) {
        const char *effect = str(taints[i].effect);
        if (strcmp(effect, "NoSchedule") && strcmp(effect, "NoExecute"))
            continue;
        if (!pl_tolerates(tol, ntol, &taints[i]))
            return 0;
    }
    return 1;
}

int pl_pod_node_labels_ok(const struct pl_pod *pod, const struct pl_labels *node_labels)
{
    for (size_t i = 0; i < pod->node_selector.n; i++) {
        const struct pl_label *l = &pod->node_selector.v[i];
        const char *v = node_labels ? pl_labels_get(node_labels, l->key) : NULL;
        if (!v || strcmp(v, str(l->value)))
            return 0;
    }
    if (pod->naffinity == 0)
        return 1;
    for (size_t i = 0; i < pod->naffinity; i++) {
        if (pod->affinity[i].n > 0 && pl_selector_matches(&pod->affinity[i], node_labels))
            return 1;
    }
    return 0;
}
