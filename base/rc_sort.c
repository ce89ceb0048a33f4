/*
 * rc_sort.c - see rc_sort.h.
 */
#include "rc_sort.h"

#include <stdlib.h>
#include <string.h>

#include "rc_mem.h"

#include "rc_banned.h"

/* An array of at most this many ascending runs is merged; more go to qsort. */
#define RUNS_MAX 16

/* Merge the ascending runs [0, mid) and [mid, n) of a (elements of size bytes) through tmp,
 * taking the left run's element on ties: stable. */
static void merge(char *a, size_t mid, size_t n, size_t size, char *tmp,
                  int (*cmp)(const void *, const void *))
{
    size_t i = 0, j = mid, w = 0;

    while (i < mid && j < n) {
        if (cmp(a + j * size, a + i * size) < 0)
            memcpy(tmp + w++ * size, a + j++ * size, size);
        else
            memcpy(tmp + w++ * size, a + i++ * size, size);
    }
    if (i < mid)
        memcpy(tmp + w * size, a + i * size, (mid - i) * size);
    else
        memcpy(tmp + w * size, a + j * size, (n - j) * size);
    memcpy(a, tmp, n * size);
}

void rc_sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
    char *p = base, *tmp;
    size_t start[RUNS_MAX + 1], runs = 1;

    start[0] = 0;
    for (size_t i = 1; i < n; i++) {
        if (cmp(p + (i - 1) * size, p + i * size) <= 0)
            continue;
        if (runs == RUNS_MAX) {
            qsort(base, n, size, cmp);
            return;
        }
        start[runs++] = i;
    }
    if (runs == 1)
        return;
    /* merge neighbouring runs until one is left */
    tmp = rc_xmalloc(n * size);
    start[runs] = n;
    while (runs > 1) {
        size_t w = 0;
        for (size_t r = 0; r < runs; r += 2) {
            if (r + 1 < runs)
                merge(p + start[r] * size, start[r + 1] - start[r], start[r + 2] - start[r], size,
                      tmp, cmp);
            start[w++] = start[r];
        }
        start[w] = n;
        runs = w;
    }
    free(tmp);
}

int rc_cmp_u64(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

    return a < b ? -1 : a > b;
}

size_t rc_sort_u64_unique(uint64_t *v, size_t n)
{
    size_t w = 0;

    rc_sort(v, n, sizeof(*v), rc_cmp_u64);
    for (size_t i = 0; i < n; i++) {
        if (!w || v[w - 1] != v[i])
            v[w++] = v[i];
    }
    return w;
}
