/*
 * pl_basics.c - resource-name table, sorted label sets, unit label values.
 */
#include "pl_basics.h"

#include <string.h>

#include "rc_arena.h"
#include "rc_hash.h"

void pl_resnames_init(struct pl_resnames *t)
{
    memset(t, 0, sizeof(*t));
    t->name[PL_RES_CPU] = "cpu";
    t->name[PL_RES_MEMORY] = "memory";
    t->name[PL_RES_PODS] = "pods";
    t->n = PL_RES_FIRST_EXTENDED;
}

int pl_resnames_find(const struct pl_resnames *t, const char *name)
{
    for (int i = 0; i < t->n; i++) {
        if (!strcmp(t->name[i], name))
            return i;
    }
    return -1;
}

int pl_resnames_intern(struct pl_resnames *t, struct rc_arena *a, const char *name)
{
    int i = pl_resnames_find(t, name);

    if (i >= 0)
        return i;
    if (t->n >= PL_RES_MAX)
        return -1;
    t->name[t->n] = rc_arena_strdup(a, name);
    return t->n++;
}

const char *pl_labels_get(const struct pl_labels *l, const char *key)
{
    size_t lo = 0, hi = l->n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(l->v[mid].key, key);
        if (c == 0)
            return l->v[mid].value;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

void pl_labels_set(struct pl_labels *l, struct rc_arena *a, const char *key, const char *value)
{
    size_t lo = 0, hi = l->n;
    struct pl_label *v;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(l->v[mid].key, key);
        if (c == 0) {
            l->v[mid].value = value;
            return;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    v = rc_arena_calloc(a, l->n + 1, sizeof(*v));
    if (lo)
        memcpy(v, l->v, lo * sizeof(*v));
    v[lo].key = key;
    v[lo].value = value;
    if (l->n > lo)
        memcpy(v + lo + 1, l->v + lo, (l->n - lo) * sizeof(*v));
    l->v = v;
    l->n++;
}

void pl_labels_sort(struct pl_labels *l)
{
    size_t w = 0;

    /* insertion sort: label sets are small, and it is stable, so that of two equal keys
     * the later one (which wins) stays later */
    for (size_t i = 1; i < l->n; i++) {
        struct pl_label x = l->v[i];
        size_t j = i;
        while (j > 0 && strcmp(l->v[j - 1].key, x.key) > 0) {
            l->v[j] = l->v[j - 1];
            j--;
        }
        l->v[j] = x;
    }
    for (size_t r = 0; r < l->n; r++) {
        if (w > 0 && !strcmp(l->v[w - 1].key, l->v[r].key))
            l->v[w - 1] = l->v[r]; /* later duplicate wins */
        else
            l->v[w++] = l->v[r];
    }
    l->n = w;
}

void pl_unit_label(const char *unit, char out[17])
{
    rc_hash_hex(rc_fnv1a_str(RC_FNV_INIT, unit), out);
}
