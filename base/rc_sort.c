/*
 * rc_sort.c - see rc_sort.h.
 */
#include "rc_sort.h"

#include <stdlib.h>

#include "rc_banned.h"

void rc_sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
    const char *p = base;

    for (size_t i = 1; i < n; i++) {
        if (cmp(p + (i - 1) * size, p + i * size) > 0) {
            qsort(base, n, size, cmp);
            return;
        }
    }
}
