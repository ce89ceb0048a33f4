/*
 * rc_sort.h - qsort for arrays that are often sorted already.
 *
 * A pass sorts the same lists every time (objects, units, paths, decisions), and most of them
 * arrive in order, or nearly: built from sorted inputs, or sorted by the pass before. rc_sort
 * counts the ascending runs first (stopping once there are too many): one run is left as it
 * is, a few are merged (n comparisons per merge level), and anything else goes to qsort.
 * Every way is stable, as glibc's qsort (a merge sort) is, so results are qsort's byte for
 * byte.
 */
#ifndef RC_SORT_H
#define RC_SORT_H

#include <stddef.h>
#include <stdint.h>

void rc_sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *));

/* Digests (64-bit hashes) kept as sets: a comparator for rc_sort and bsearch, and v[0..n)
 * sorted with each value once, returning how many are left. */
int rc_cmp_u64(const void *x, const void *y);
size_t rc_sort_u64_unique(uint64_t *v, size_t n);

#endif
