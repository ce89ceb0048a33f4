/*
 * pl_engine.h - the placement engine: objects + policies + fleet + previous record -> decisions.
 *
 * pl_place() is a pure function (no I/O, no clock, no globals): the same input gives the same
 * decisions in the same order whatever the order of the input arrays. It decides, for every
 * workload object:
 *   - the governing SchedulePolicy (several match: the lexicographically smallest name wins and
 *     a warning names the others; none: the object is a unit alone, state unplaced), unless
 *     the object carries Nova's nova.elotl.co/cluster or nova.elotl.co/spread-onto
 *     annotation: then it is a unit alone under a policy standing for the annotation (named
 *     "<annotation>=<value>", clusterSelector In the named clusters; spread-onto divides);
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

/* floor(total * percent / 100): what Nova gives a Divide target. Negative total or percent
 * give 0; percent above 100 is taken as 100. rightplace shares with pl_divide_part instead,
 * which loses nothing. */
int64_t pl_divide_replicas(int64_t total, int64_t percent);

/*
 * The part of `total` (replicas, parallelism, ...) that targets[t] of a Divide gets. The
 * targets' percents are weights (targets with percent <= 0 get nothing), so the parts add up
 * to `total` exactly, whatever the percents add up to. The rule (largest remainder):
 * each target first gets floor(total * percent / sum of percents); the few left over go one
 * each to the targets with the largest remainders, ties to the larger percent, then to the
 * smaller domain (the cluster name when domain is NULL). 10 over three equal targets is
 * 4/3/3 with the 4 on the first by name; 5 at 70/30 is 4/1. The same targets give the same
 * parts every pass, whatever their order.
 */
int64_t pl_divide_part(int64_t total, const struct pl_target *targets, size_t n, size_t t);

/* What one target of a Divide gets of one object. */
struct pl_share {
    int present;         /* 0: the object is not written to this target at all */
    int64_t replicas;    /* PL_SPLIT_REPLICAS: its spec.replicas there */
    int64_t parallelism; /* PL_SPLIT_JOB: its spec.parallelism there */
    int64_t completions; /* PL_SPLIT_JOB: its spec.completions there; -1: not set */
};

/* How Divide shares o (enum pl_split_kind, with the defaults documented at pl_object.split). */
enum pl_split_kind pl_split_of(const struct pl_object *o);

/*
 * What targets[t] of a Divide gets of object o:
 *   PL_SPLIT_COPY      every target gets the object as it is (Nova: "percentage split is
 *                      ignored" for objects that are not pod controllers);
 *   PL_SPLIT_REPLICAS  spec.replicas = pl_divide_part(replicas);
 *   PL_SPLIT_JOB       completions (when set) and parallelism shared with pl_divide_part;
 *                      parallelism is at least 1 where completions are left, at most the
 *                      completions; a target left with no work (no completions, or no
 *                      parallelism for a work queue) gets no copy;
 *   PL_SPLIT_WHOLE     only the target with the largest percent (ties: smaller domain or
 *                      cluster name) gets it, whole: running it on every target would
 *                      multiply its work.
 */
void pl_divide_object(struct pl_share *out, const struct pl_object *o,
                      const struct pl_target *targets, size_t n, size_t t);

/* Does decision d divide (spreadMode Divide with more than one target, i.e. some target's
 * percent is below 100)? Duplicate and single placements give every target 100. */
int pl_decision_divides(const struct pl_decision *d);

/* Does override o name object x (its kind, name, and its apiVersion and namespace where o
 * gives them)? On the targets of o's topology value, render applies it to x. */
int pl_override_names(const struct pl_override *o, const struct pl_object *x);

/*
 * Which of d's verdicts a bounded list keeps (keep[i] for d->verdicts[i], which are in
 * preference order): those of the first `chosen` targets, and of the first `passed` other
 * candidates preferred over the last target (any candidate, when d is not placed).
 * counts[k]: d's verdicts of kind k. Returns how many are not kept. keep: d->nverdicts bytes.
 */
size_t pl_verdicts_select(unsigned char *keep, size_t counts[4], const struct pl_decision *d,
                          size_t chosen, size_t passed);

const char *pl_state_name(enum pl_state s);            /* "placed" | "pending" | "unplaced" */
int pl_state_parse(enum pl_state *out, const char *s); /* 0, or RC_EINVALID */
/* "fits-now" | "fits-after-scale-up" | "does-not-fit" | "unreachable" */
const char *pl_verdict_name(enum pl_verdict_kind k);
int pl_verdict_parse(enum pl_verdict_kind *out, const char *s); /* 0, or RC_EINVALID */
/* "none" | "new" | "moved" | "state" | "removed" */
const char *pl_change_name(enum pl_change c);

#endif
