/*
 * pl_engine.h - the placement engine: objects + policies + fleet + previous record -> decisions.
 *
 * pl_place() is a pure function (no I/O, no clock, no globals): the same input gives the same
 * decisions in the same order whatever the order of the input arrays. It decides, for every
 * workload object:
 *   - the governing SchedulePolicy (several match: the lexicographically smallest name wins and
 *     a warning names the others; none: the object is a unit alone, state unplaced);
 *   - its placement unit (groupBy.labelKey gangs; unit ids as in CONTRACTS.md);
 *   - one verdict per candidate cluster (fits-now / fits-after-scale-up / does-not-fit /
 *     unreachable) from a first-fit-decreasing per-node bin-packing of every pod of the unit,
 *     with the numbers behind it in `detail`;
 *   - the clusters it goes to (the choice rule and stickiness of docs/architecture.md), a
 *     one-line reason, and how that differs from the previous record (enum pl_change, with a
 *     cause for moves).
 *
 * Capacity model: free(node) = allocatable - requested - what this pass committed. Committed
 * placements of the previous record are deducted first (unless the unit's pods were observed
 * on the cluster, pl_cluster.present), then new units in unit-id order; capacity that an
 * autoscaler is expected to add for earlier units is kept as virtual nodes, so a burst never
 * overcommits. A node whose allocatable "pods" is 0 has not declared a pod limit: unlimited.
 * Every pod also takes one "pods" (1000 milli) on its node.
 *
 * Preference order of candidates: orderedClusterSelector priority (the index of the cluster's
 * value in the values of its first In requirement), then clusters without an autoscaler, then
 * lower cost_micro (0, unknown, counts as 0), then name.
 *
 * Autoscalers: declared node shapes (pl_shape) may be added up to `max` nodes each (existing
 * nodes whose `shape` names it count against it; -1: no limit), cheapest shape first (cost,
 * unknown cost last, then smaller cpu, memory, then name); a pod must fit an empty node of a
 * shape whose labels and taints it accepts. any_shape: one new node per pod that does not fit.
 *
 * What it does not do: parse anything, read clusters, render files.
 */
#ifndef PL_ENGINE_H
#define PL_ENGINE_H

#include <stdint.h>

#include "pl_types.h"
#include "rc_err.h"

struct rc_arena;

/* Decide every unit's placement: pure, deterministic, independent of input order.
 * Everything in *out is allocated in `a` (and may point into `in`, which must outlive it).
 * Errors only for contract violations that input validation should have caught
 * (RC_EINVALID: duplicate object keys, cluster or policy names, a resource table larger than
 * PL_RES_MAX); bad user input becomes unplaced units with reasons, never an error. */
int pl_place(struct pl_result *out, const struct pl_input *in, struct rc_arena *a,
             struct rc_err *err);

/* Replicas a Divide target gets: floor(total * percent / 100), as Nova does. Negative total
 * or percent give 0; percent above 100 is taken as 100. */
int64_t pl_divide_replicas(int64_t total, int64_t percent);

const char *pl_state_name(enum pl_state s);            /* "placed" | "pending" | "unplaced" */
int pl_state_parse(enum pl_state *out, const char *s); /* 0, or RC_EINVALID */
/* "fits-now" | "fits-after-scale-up" | "does-not-fit" | "unreachable" */
const char *pl_verdict_name(enum pl_verdict_kind k);
int pl_verdict_parse(enum pl_verdict_kind *out, const char *s); /* 0, or RC_EINVALID */
/* "none" | "new" | "moved" | "state" | "removed" */
const char *pl_change_name(enum pl_change c);

#endif
