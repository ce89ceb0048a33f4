/*
 * rc_sort.h - qsort for arrays that are often sorted already.
 *
 * A pass sorts the same lists every time (objects, units, paths, decisions), and most of them
 * arrive in order: built from sorted inputs, or sorted by the pass before. rc_sort checks
 * first (n - 1 comparisons, stopping at the first pair out of order) and leaves a sorted array
 * as it is, which is what glibc's qsort (a stable merge sort) gives for it too; anything else
 * is qsort's. So results are qsort's byte for byte, at a fraction of the comparisons for
 * sorted input.
 */
#ifndef RC_SORT_H
#define RC_SORT_H

#include <stddef.h>

void rc_sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *));

#endif
