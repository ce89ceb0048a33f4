/*
 * rd_pack.c - cJSON trees <-> packed bytes (format: rd_pack.h). Packing measures first and
 * writes into one arena allocation; unpacking builds the tree node by node, linking children
 * in order (no per-child walk to the end of a list).
 */
#include "rd_pack.h"

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rc_banned.h"

enum {
    T_NULL = 'n',
    T_FALSE = 'f',
    T_TRUE = 't',
    T_NUM = 'd',
    T_NUM_TEXT = 'D',
    T_STR = 's',
    T_ARR = '[',
    T_OBJ = '{',
};

static size_t varint_size(size_t v)
{
    size_t n = 1;

    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

unsigned char *rd_varint_put(unsigned char *p, size_t v)
{
    while (v >= 0x80) {
        *p++ = (unsigned char)(v | 0x80);
        v >>= 7;
    }
    *p++ = (unsigned char)v;
    return p;
}

/* Bytes node packs to; 0 for what cannot be packed. */
static size_t measure(const cJSON *n, int depth)
{
    size_t total, len;

    if (depth > RD_PACK_MAX_DEPTH)
        return 0;
    switch (n->type & 0xFF) {
    case cJSON_NULL:
    case cJSON_False:
    case cJSON_True:
        return 1;
    case cJSON_Number:
        if (!n->valuestring)
            return 1 + 8;
        len = strlen(n->valuestring);
        return 1 + 8 + varint_size(len) + len;
    case cJSON_String:
        len = strlen(n->valuestring ? n->valuestring : "");
        return 1 + varint_size(len) + len;
    case cJSON_Array:
    case cJSON_Object: {
        size_t count = 0;
        total = 1;
        for (const cJSON *c = n->child; c; c = c->next) {
            size_t sub = measure(c, depth + 1);
            if (!sub)
                return 0;
            if ((n->type & 0xFF) == cJSON_Object) {
                if (!c->string)
                    return 0;
                len = strlen(c->string);
                total += varint_size(len) + len;
            }
            total += sub;
            count++;
        }
        return total + varint_size(count);
    }
    default:
        return 0; /* raw JSON, invalid */
    }
}

static unsigned char *put_bytes(unsigned char *p, const char *s)
{
    size_t len = strlen(s);

    p = rd_varint_put(p, len);
    memcpy(p, s, len);
    return p + len;
}

static unsigned char *put_node(unsigned char *p, const cJSON *n)
{
    size_t count = 0;

    switch (n->type & 0xFF) {
    case cJSON_NULL:
        *p++ = T_NULL;
        return p;
    case cJSON_False:
        *p++ = T_FALSE;
        return p;
    case cJSON_True:
        *p++ = T_TRUE;
        return p;
    case cJSON_Number:
        *p++ = n->valuestring ? T_NUM_TEXT : T_NUM;
        memcpy(p, &n->valuedouble, 8);
        p += 8;
        return n->valuestring ? put_bytes(p, n->valuestring) : p;
    case cJSON_String:
        *p++ = T_STR;
        return put_bytes(p, n->valuestring ? n->valuestring : "");
    default: /* array or object: measure() vetted the rest */
        *p++ = (n->type & 0xFF) == cJSON_Object ? T_OBJ : T_ARR;
        for (const cJSON *c = n->child; c; c = c->next)
            count++;
        p = rd_varint_put(p, count);
        for (const cJSON *c = n->child; c; c = c->next) {
            if ((n->type & 0xFF) == cJSON_Object)
                p = put_bytes(p, c->string);
            p = put_node(p, c);
        }
        return p;
    }
}

size_t rd_pack_size(const cJSON *root)
{
    return root ? measure(root, 0) : 0;
}

unsigned char *rd_pack_write(unsigned char *dst, const cJSON *root)
{
    return put_node(dst, root);
}

int rd_pack(const unsigned char **out, size_t *len, const cJSON *root, struct rc_arena *a,
            struct rc_err *err)
{
    size_t n = rd_pack_size(root);
    unsigned char *buf;

    *out = NULL;
    *len = 0;
    if (!n)
        return rc_err_set(err, RC_EINVALID, "cannot pack this tree (raw JSON or too deep)");
    buf = rc_arena_alloc(a, n);
    rd_pack_write(buf, root);
    *out = buf;
    *len = n;
    return RC_OK;
}

/* ==== Unpacking ==== */

struct rd {
    const unsigned char *p, *end;
};

int rd_varint_get(const unsigned char **p, const unsigned char *end, size_t *out)
{
    size_t v = 0;
    unsigned shift = 0;

    for (;;) {
        unsigned char b;
        if (*p >= end || shift > 56)
            return -1;
        b = *(*p)++;
        v |= (size_t)(b & 0x7F) << shift;
        if (!(b & 0x80))
            break;
        shift += 7;
    }
    *out = v;
    return 0;
}

static int get_varint(struct rd *r, size_t *out)
{
    return rd_varint_get(&r->p, r->end, out);
}

/* A NUL-terminated copy from cJSON's allocator (cJSON_Delete frees it); NULL when the bytes
 * run past the input or hold a NUL. */
static char *get_text(struct rd *r)
{
    size_t len;
    char *s;

    if (get_varint(r, &len) < 0 || len > (size_t)(r->end - r->p) || memchr(r->p, 0, len))
        return NULL;
    s = cJSON_malloc(len + 1);
    if (!s)
        abort(); /* out of memory, as rc_mem */
    memcpy(s, r->p, len);
    s[len] = 0;
    r->p += len;
    return s;
}

static cJSON *must(cJSON *n)
{
    if (!n)
        abort(); /* out of memory, as rc_mem */
    return n;
}

static cJSON *new_number(double d)
{
    cJSON *n = must(cJSON_CreateNumber(0));

    /* as rd_yaml's loader sets them (cJSON converts to int without checking for NaN) */
    n->valuedouble = d;
    n->valueint = isnan(d) ? 0 : d >= INT_MAX ? INT_MAX : d <= INT_MIN ? INT_MIN : (int)d;
    return n;
}

static cJSON *get_node(struct rd *r, int depth)
{
    cJSON *n, *last = NULL;
    size_t count;
    double d;
    int tag;

    if (r->p >= r->end || depth > RD_PACK_MAX_DEPTH)
        return NULL;
    tag = *r->p++;
    switch (tag) {
    case T_NULL:
        return must(cJSON_CreateNull());
    case T_FALSE:
        return must(cJSON_CreateFalse());
    case T_TRUE:
        return must(cJSON_CreateTrue());
    case T_NUM:
    case T_NUM_TEXT:
        if (r->end - r->p < 8)
            return NULL;
        memcpy(&d, r->p, 8);
        r->p += 8;
        n = new_number(d);
        if (tag == T_NUM_TEXT && !(n->valuestring = get_text(r))) {
            cJSON_Delete(n);
            return NULL;
        }
        return n;
    case T_STR:
        n = must(cJSON_CreateNull());
        n->type = cJSON_String;
        if (!(n->valuestring = get_text(r))) {
            cJSON_Delete(n);
            return NULL;
        }
        return n;
    case T_ARR:
    case T_OBJ:
        /* each element takes at least one byte (two in an object): a count past the input is
         * corrupt, found before anything is built */
        if (get_varint(r, &count) < 0 || count > (size_t)(r->end - r->p))
            return NULL;
        n = must(tag == T_OBJ ? cJSON_CreateObject() : cJSON_CreateArray());
        for (size_t i = 0; i < count; i++) {
            char *key = NULL;
            cJSON *c;
            if (tag == T_OBJ && !(key = get_text(r))) {
                cJSON_Delete(n);
                return NULL;
            }
            if (!(c = get_node(r, depth + 1))) {
                cJSON_free(key);
                cJSON_Delete(n);
                return NULL;
            }
            c->string = key;
            /* cJSON's list: next/prev, and the first child's prev is the last */
            if (!last) {
                n->child = c;
            } else {
                last->next = c;
                c->prev = last;
            }
            n->child->prev = c;
            last = c;
        }
        return n;
    default:
        return NULL;
    }
}

int rd_unpack(cJSON **out, const unsigned char *data, size_t len, struct rc_err *err)
{
    struct rd r = {data, data + len};
    cJSON *n = data ? get_node(&r, 0) : NULL;

    *out = NULL;
    if (!n || r.p != r.end) {
        cJSON_Delete(n);
        return rc_err_set(err, RC_EINVALID, "corrupt packed manifest");
    }
    *out = n;
    return RC_OK;
}
