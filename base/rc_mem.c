/*
 * rc_mem.c - aborting allocators (see rc_mem.h for the policy).
 */
#include "rc_mem.h"

#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void oom(size_t n)
{
    fprintf(stderr, "rightplace: fatal: out of memory allocating %zu bytes\n", n);
    abort();
}

void *rc_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);

    if (!p)
        oom(n);
    return p;
}

void *rc_xcalloc(size_t count, size_t n)
{
    void *p = calloc(count ? count : 1, n ? n : 1);

    if (!p)
        oom(count * n);
    return p;
}

void *rc_xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);

    if (!q)
        oom(n);
    return q;
}

void *rc_xgrow(void *p, size_t *cap, size_t need, size_t elem)
{
    size_t ncap = *cap ? *cap : 8;

    if (need <= *cap)
        return p;
    while (ncap < need) {
        if (ncap > SIZE_MAX / 2)
            oom(SIZE_MAX);
        ncap *= 2;
    }
    if (elem && ncap > SIZE_MAX / elem)
        oom(SIZE_MAX);
    p = rc_xrealloc(p, ncap * elem);
    *cap = ncap;
    return p;
}

char *rc_xstrdup(const char *s)
{
    return rc_xstrndup(s, strlen(s));
}

char *rc_xstrndup(const char *s, size_t n)
{
    char *p = rc_xmalloc(n + 1);

    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

void rc_mem_tune(void)
{
#ifdef M_TOP_PAD
    const char *t = getenv("GLIBC_TUNABLES");

    if (!getenv("MALLOC_TOP_PAD_") && !(t && strstr(t, "malloc.top_pad")))
        mallopt(M_TOP_PAD, RC_MEM_TOP_PAD);
#endif
}

void rc_mem_tune_arenas(long ncpu)
{
#ifdef M_ARENA_MAX
    const char *t = getenv("GLIBC_TUNABLES");

    if (ncpu < 1)
        ncpu = 1;
    if (!getenv("MALLOC_ARENA_MAX") && !(t && strstr(t, "malloc.arena_max")))
        mallopt(M_ARENA_MAX, (int)(ncpu + 2));
#else
    (void)ncpu;
#endif
}

size_t rc_mem_resident(void)
{
    long size = 0, resident = 0, page = sysconf(_SC_PAGESIZE);
    size_t bytes = 0;
    FILE *f = fopen("/proc/self/statm", "r");

    if (!f)
        return 0;
    if (fscanf(f, "%ld %ld", &size, &resident) == 2 && resident > 0 && page > 0)
        bytes = (size_t)resident * (size_t)page;
    fclose(f);
    return bytes;
}
