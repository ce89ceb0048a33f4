/*
 * rc_arena.c - bump allocator in 64 KiB blocks (bigger requests get a block of their own).
 */
#include "rc_arena.h"
#include "rc_mem.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BLOCK_SIZE (64 * 1024)
#define FIRST_BLOCK (4 * 1024)
#define ALIGN 16

struct rc_arena_block {
    struct rc_arena_block *next;
    size_t size;
    size_t used;
    void *taken; /* rc_arena_take: a malloc'd buffer freed with the block (size 0) */
    size_t taken_len;
    _Alignas(16) unsigned char data[];
};

static struct rc_arena_block *new_block(size_t size)
{
    struct rc_arena_block *b = rc_xmalloc(sizeof(*b) + size);

    b->next = NULL;
    b->size = size;
    b->used = 0;
    b->taken = NULL;
    b->taken_len = 0;
    return b;
}

/* Blocks grow from FIRST_BLOCK, doubling up to BLOCK_SIZE: an arena holding little (one
 * parsed file of many) holds little more than it uses. */
static size_t next_block_size(const struct rc_arena_block *head, size_t need)
{
    size_t size = head && head->size ? head->size * 2 : FIRST_BLOCK; /* size 0: taken */

    if (size > BLOCK_SIZE)
        size = BLOCK_SIZE;
    while (size < need)
        size *= 2;
    return size;
}

void *rc_arena_alloc(struct rc_arena *a, size_t n)
{
    struct rc_arena_block *b = a->head;
    size_t need = (n + ALIGN - 1) & ~(size_t)(ALIGN - 1);
    void *p;

    if (need < n)
        rc_xmalloc(SIZE_MAX); /* overflow: abort through the OOM path */
    if (!b || b->size - b->used < need) {
        if (need > BLOCK_SIZE / 4 || (b && need > next_block_size(b, need) / 2)) {
            /* big (for the arena's size so far): own block of the exact size, linked behind
             * the current head so the head keeps filling */
            struct rc_arena_block *big = new_block(need);
            if (b) {
                big->next = b->next;
                b->next = big;
            } else {
                a->head = big;
            }
            big->used = need;
            a->used_total += need;
            memset(big->data, 0, need);
            return big->data;
        }
        b = new_block(next_block_size(a->head, need));
        b->next = a->head;
        a->head = b;
    }
    p = b->data + b->used;
    b->used += need;
    a->used_total += need;
    memset(p, 0, need);
    return p;
}

char *rc_arena_join(struct rc_arena *a, char sep, const char *const *parts, size_t n)
{
    size_t len[8], total = n ? n - 1 : 0;
    char *s, *p;

    if (n > sizeof(len) / sizeof(len[0]))
        rc_xmalloc(SIZE_MAX); /* a caller's mistake: abort through the OOM path */
    for (size_t i = 0; i < n; i++)
        total += (len[i] = strlen(parts[i]));
    p = s = rc_arena_alloc(a, total + 1);
    for (size_t i = 0; i < n; i++) {
        if (i)
            *p++ = sep;
        memcpy(p, parts[i], len[i]);
        p += len[i];
    }
    *p = '\0';
    return s;
}

void rc_arena_adopt(struct rc_arena *dst, struct rc_arena *src)
{
    struct rc_arena_block *last = src->head;

    if (!last)
        return;
    while (last->next)
        last = last->next;
    if (dst->head) { /* behind dst's head, which keeps filling */
        last->next = dst->head->next;
        dst->head->next = src->head;
    } else {
        dst->head = src->head;
    }
    dst->used_total += src->used_total;
    src->head = NULL;
    src->used_total = 0;
}

void *rc_arena_calloc(struct rc_arena *a, size_t count, size_t n)
{
    if (n && count > SIZE_MAX / n)
        rc_xmalloc(SIZE_MAX);
    return rc_arena_alloc(a, count * n);
}

char *rc_arena_strndup(struct rc_arena *a, const char *s, size_t n)
{
    char *p = rc_arena_alloc(a, n + 1);

    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

char *rc_arena_strdup(struct rc_arena *a, const char *s)
{
    return s ? rc_arena_strndup(a, s, strlen(s)) : NULL;
}

char *rc_arena_printf(struct rc_arena *a, const char *fmt, ...)
{
    va_list ap;
    int n;
    char *p;

    va_start(ap, fmt);
    n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return rc_arena_strdup(a, "");
    p = rc_arena_alloc(a, (size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(p, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return p;
}

/* A block of a taken buffer into a: behind the head, which keeps filling (a full block of
 * size 0 when there is none). */
static void link_taken(struct rc_arena *a, struct rc_arena_block *b)
{
    if (a->head) {
        b->next = a->head->next;
        a->head->next = b;
    } else {
        b->next = NULL;
        a->head = b;
    }
    a->used_total += b->taken_len;
}

void *rc_arena_take(struct rc_arena *a, void *p, size_t n)
{
    struct rc_arena_block *b = new_block(0);

    b->taken = p;
    b->taken_len = n;
    link_taken(a, b);
    return p;
}

int rc_arena_pass_on(struct rc_arena *from, const void *p, struct rc_arena *to)
{
    struct rc_arena_block **link = &from->head, *b;

    while ((b = *link) != NULL && !(b->size == 0 && b->taken == p && p))
        link = &b->next;
    if (!b)
        return -1;
    *link = b->next;
    from->used_total -= b->taken_len < from->used_total ? b->taken_len : from->used_total;
    link_taken(to, b);
    return 0;
}

size_t rc_arena_held(const struct rc_arena *a)
{
    size_t n = 0;

    for (const struct rc_arena_block *b = a->head; b; b = b->next)
        n += sizeof(*b) + b->size + b->taken_len;
    return n;
}

void rc_arena_first_block(struct rc_arena *a, size_t size)
{
    if (!a->head && size)
        a->head = new_block((size + ALIGN - 1) & ~(size_t)(ALIGN - 1));
}

size_t rc_arena_bumped(const struct rc_arena *a)
{
    size_t n = 0;

    for (const struct rc_arena_block *b = a->head; b; b = b->next)
        n += b->used;
    return n;
}

size_t rc_arena_unused(const struct rc_arena *a)
{
    size_t n = 0;

    for (const struct rc_arena_block *b = a->head; b; b = b->next)
        n += b->size - b->used;
    return n;
}

void rc_arena_release(struct rc_arena *a)
{
    struct rc_arena_block *b = a->head;

    while (b) {
        struct rc_arena_block *next = b->next;
        free(b->taken);
        free(b);
        b = next;
    }
    a->head = NULL;
    a->used_total = 0;
}
