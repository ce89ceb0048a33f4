/*
 * rd_jarena.c - cJSON trees built in a bump arena (see rd_jarena.h).
 */
#include "rd_jarena.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include <cjson/cJSON.h>

#include "rc_mem.h"

#include "rc_banned.h"

#define FIRST_CHUNK ((size_t)32 << 10)
#define MAX_CHUNK ((size_t)256 << 10)
#define ALIGN 16

struct rd_jchunk {
    struct rd_jchunk *next;
    size_t size, used;
    _Alignas(16) unsigned char data[];
};

/* The innermost open span of this thread, and the chunk the last free found its pointer in
 * (frees come mostly in the order of allocation: a tree is deleted in the order it was
 * built, so the next one is most often in the same chunk). */
static _Thread_local struct rd_jarena *cur;
static _Thread_local const struct rd_jchunk *last_hit;

static int in_chunk(const struct rd_jchunk *c, const void *p)
{
    uintptr_t x = (uintptr_t)p, lo = (uintptr_t)c->data;

    return x >= lo && x < lo + c->size;
}

int rd_jarena_owns(const void *p)
{
    if (last_hit && in_chunk(last_hit, p))
        return 1;
    for (const struct rd_jarena *a = cur; a; a = a->outer) {
        for (const struct rd_jchunk *c = a->head; c; c = c->next) {
            if (in_chunk(c, p)) {
                last_hit = c;
                return 1;
            }
        }
    }
    return 0;
}

/* Chunks of the standard sizes kept by this thread between spans, up to SPARE_MAX bytes:
 * the next span fills memory already touched instead of faulting in fresh pages. Freed when
 * the thread ends (spare_key's destructor) or, for the main thread, left to the exit. */
#define SPARE_MAX ((size_t)1 << 20)
static _Thread_local struct rd_jchunk *spare;
static _Thread_local size_t spare_bytes;
static pthread_key_t spare_key;
static pthread_once_t spare_once = PTHREAD_ONCE_INIT;

static void spare_free(void *unused)
{
    (void)unused;
    while (spare) {
        struct rd_jchunk *next = spare->next;
        free(spare);
        spare = next;
    }
    spare_bytes = 0;
}

static void spare_key_init(void)
{
    if (pthread_key_create(&spare_key, spare_free) != 0)
        abort();
}

static struct rd_jchunk *new_chunk(size_t size)
{
    struct rd_jchunk *c;

    for (struct rd_jchunk **at = &spare; *at; at = &(*at)->next) {
        if ((*at)->size == size) {
            c = *at;
            *at = c->next;
            spare_bytes -= size;
            c->next = NULL;
            c->used = 0;
            return c;
        }
    }
    c = rc_xmalloc(sizeof(*c) + size);

    c->next = NULL;
    c->size = size;
    c->used = 0;
    return c;
}

static void *arena_alloc(struct rd_jarena *a, size_t n)
{
    size_t need = (n + ALIGN - 1) & ~(size_t)(ALIGN - 1);
    struct rd_jchunk *c = a->head;

    if (need < n)
        return NULL; /* overflow: cJSON reports it as out of memory */
    if (!c || c->size - c->used < need) {
        size_t size = c ? c->size * 2 : FIRST_CHUNK;
        if (size > MAX_CHUNK)
            size = MAX_CHUNK;
        if (need > size / 4) {
            /* a chunk of its own, behind the head, which stays the one being filled */
            struct rd_jchunk *big = new_chunk(need);
            big->used = need;
            a->bytes += need;
            if (c) {
                big->next = c->next;
                c->next = big;
            } else {
                a->head = big;
            }
            return big->data;
        }
        c = new_chunk(size);
        c->next = a->head;
        a->head = c;
        a->bytes += size;
    }
    c->used += need;
    return c->data + c->used - need;
}

static void *hook_malloc(size_t n)
{
    return cur ? arena_alloc(cur, n) : malloc(n);
}

static void hook_free(void *p)
{
    if (!p)
        return;
    if (cur && rd_jarena_owns(p))
        return; /* freed with its span */
    free(p);
}

__attribute__((constructor)) static void install_hooks(void)
{
    cJSON_Hooks h = {hook_malloc, hook_free};

    cJSON_InitHooks(&h);
}

void rd_jarena_begin(struct rd_jarena *a)
{
    a->head = NULL;
    a->bytes = 0;
    a->outer = cur;
    cur = a;
}

void rd_jarena_end(struct rd_jarena *a)
{
    struct rd_jchunk *c = a->head, *next;

    if (cur != a)
        abort(); /* spans end in the reverse order they began */
    cur = a->outer;
    last_hit = NULL;
    for (; c; c = next) {
        next = c->next;
        if (c->size <= MAX_CHUNK && spare_bytes + c->size <= SPARE_MAX) {
            if (!spare) {
                pthread_once(&spare_once, spare_key_init);
                pthread_setspecific(spare_key, &spare); /* non-NULL: the destructor runs */
            }
            c->next = spare;
            spare = c;
            spare_bytes += c->size;
        } else {
            free(c);
        }
    }
    a->head = NULL;
    a->bytes = 0;
}
