/*
 * pl_internal.h - shared inside placement/ only (nothing outside the folder includes it).
 *
 * pl_fit: the capacity model and per-node packing behind pl_place(). It keeps, per cluster,
 * the free amount of every schedulable node (plus virtual nodes an autoscaler is expected to
 * add), interns pod shapes and unit demands ("signatures"), and caches verdicts per
 * (signature, cluster, cluster version): a cluster's version changes only when capacity is
 * committed on it, so units with the same demand reuse verdicts on untouched clusters.
 */
#ifndef PL_INTERNAL_H
#define PL_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "pl_types.h"

struct rc_arena;
struct pl_fit;

/* Pods of one demand: `count` pods like `pod` (count may differ from pod->count, for Divide). */
struct pl_demand_item {
    const struct pl_pod *pod;
    int64_t count;
};

/* clusters: sorted by name; borrowed for the life of the fit. */
struct pl_fit *pl_fit_new(const struct pl_resnames *res, const struct pl_cluster *const *clusters,
                          size_t nclusters);
void pl_fit_free(struct pl_fit *f);

/* Intern a demand (items need not be sorted or merged); returns its id. */
uint32_t pl_fit_sig(struct pl_fit *f, const struct pl_demand_item *items, size_t n);

/* The verdict of demand `sig` on cluster `ci` against the current free capacity (nothing is
 * deducted). out->cluster is left alone; out->detail is allocated in `a` (and may be shared
 * by several verdicts). Never PL_VERDICT_UNREACHABLE: callers handle reachability. */
void pl_fit_verdict(struct pl_fit *f, uint32_t sig, size_t ci, struct pl_verdict *out,
                    struct rc_arena *a);

/* Deduct demand `sig` from cluster `ci`: pack it as the verdict would (scale-up included),
 * keeping whatever fits (a unit that does not fit keeps its partial packing: its pods will
 * take that room while they wait). Returns the packing's verdict kind. */
enum pl_verdict_kind pl_fit_commit(struct pl_fit *f, uint32_t sig, size_t ci);

/* pl_fit_verdict, then pl_fit_commit on the same cluster, with one packing where the two
 * would pack alike (the verdict is read from the packing before it is kept): the same verdict
 * and the same capacity left. */
void pl_fit_verdict_commit(struct pl_fit *f, uint32_t sig, size_t ci, struct pl_verdict *out,
                           struct rc_arena *a);

/* Fill allocatable/requested (schedulable nodes), committed, nodes_to_add for cluster ci. */
void pl_fit_usage(const struct pl_fit *f, size_t ci, struct pl_usage *u);

#endif
