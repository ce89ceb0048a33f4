/*
 * pl_shim_vocab.c - TEMPORARY minimal implementations of vocab's selector
 * functions so that the engine links before vocab's modules land on main. Deleted on merge.
 */
#include "pl_basics.h"
#include "pl_selector.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int req_matches(const struct pl_requirement *r, const struct pl_labels *l)
{
    const char *v = pl_labels_get(l, r->key);
    size_t i;

    switch (r->op) {
    case PL_OP_IN:
    case PL_OP_NOTIN:
        if (!v)
            return r->op == PL_OP_NOTIN;
        for (i = 0; i < r->nvalues; i++) {
            if (!strcmp(r->values[i], v))
                return r->op == PL_OP_IN;
        }
        return r->op == PL_OP_NOTIN;
    case PL_OP_EXISTS:
        return v != NULL;
    case PL_OP_DOESNOTEXIST:
        return v == NULL;
    case PL_OP_GT:
    case PL_OP_LT:
        if (!v || r->nvalues != 1)
            return 0;
        {
            long long a = strtoll(v, NULL, 10), b = strtoll(r->values[0], NULL, 10);
            return r->op == PL_OP_GT ? a > b : a < b;
        }
    }
    return 0;
}

int pl_selector_matches(const struct pl_selector *sel, const struct pl_labels *labels)
{
    for (size_t i = 0; i < sel->n; i++) {
        if (!req_matches(&sel->req[i], labels))
            return 0;
    }
    return 1;
}

int pl_tolerates(const struct pl_toleration *tol, size_t ntol, const struct pl_taint *taint)
{
    for (size_t i = 0; i < ntol; i++) {
        const struct pl_toleration *t = &tol[i];
        if (t->effect[0] && strcmp(t->effect, taint->effect))
            continue;
        if (t->key[0] == 0 && t->exists)
            return 1;
        if (strcmp(t->key, taint->key))
            continue;
        if (t->exists || !strcmp(t->value, taint->value))
            return 1;
    }
    return 0;
}

int pl_tolerates_all(const struct pl_toleration *tol, size_t ntol, const struct pl_taint *taints,
                     size_t ntaints)
{
    for (size_t i = 0; i < ntaints; i++) {
        if (!strcmp(taints[i].effect, "PreferNoSchedule"))
            continue;
        if (!pl_tolerates(tol, ntol, &taints[i]))
            return 0;
    }
    return 1;
}

int pl_pod_node_labels_ok(const struct pl_pod *pod, const struct pl_labels *node_labels)
{
    for (size_t i = 0; i < pod->node_selector.n; i++) {
        const char *v = pl_labels_get(node_labels, pod->node_selector.v[i].key);
        if (!v || strcmp(v, pod->node_selector.v[i].value))
            return 0;
    }
    if (pod->naffinity == 0)
        return 1;
    for (size_t i = 0; i < pod->naffinity; i++) {
        if (pl_selector_matches(&pod->affinity[i], node_labels))
            return 1;
    }
    return 0;
}
