/*
 * pl_basics.h - small helpers over pl_types.h: resource names, label sets, unit labels.
 */
#ifndef PL_BASICS_H
#define PL_BASICS_H

#include "pl_types.h"

/* Set up with cpu, memory, pods at indices 0, 1, 2. */
void pl_resnames_init(struct pl_resnames *t);
/* Index of `name`, adding it when new (the string is copied into the arena).
 * Returns -1 when the table is full (PL_RES_MAX names). */
int pl_resnames_intern(struct pl_resnames *t, struct rc_arena *a, const char *name);
/* Index of `name`, or -1. */
int pl_resnames_find(const struct pl_resnames *t, const char *name);

/* Value of `key` or NULL (binary search: labels are sorted). */
const char *pl_labels_get(const struct pl_labels *l, const char *key);
/* Set key=value, keeping the set sorted; an existing key gets the new value.
 * Strings are borrowed (must outlive the set); the array grows in the arena. */
void pl_labels_set(struct pl_labels *l, struct rc_arena *a, const char *key, const char *value);
/* Sort an unsorted array in place; later duplicates win. */
void pl_labels_sort(struct pl_labels *l);

/* The value rightplace puts in the rightplace.dev/unit label of pod templates of a unit:
 * 16 hex digits of FNV-1a over the unit id (label values are limited to 63 characters). */
void pl_unit_label(const char *unit, char out[17]);

#define PL_LABEL_UNIT "rightplace.dev/unit"
#define PL_LABEL_MANAGED "app.kubernetes.io/managed-by"
#define PL_LABEL_MANAGED_VALUE "rightplace"
#define PL_LABEL_CLUSTER_NAME "kubernetes.io/metadata.name"
/* Nova's placement annotations (annotation-based scheduling): the object goes to the named
 * cluster, or is divided evenly over the comma-separated clusters, whatever policy matches. */
#define PL_ANNOTATION_CLUSTER "nova.elotl.co/cluster"
#define PL_ANNOTATION_SPREAD_ONTO "nova.elotl.co/spread-onto"

#endif
