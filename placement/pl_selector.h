/*
 * pl_selector.h - label selectors, taints and tolerations, with Kubernetes' semantics.
 *
 * Matching follows k8s.io/apimachinery/pkg/labels (Requirement.Matches), the string syntax
 * follows labels.Parse (what `kubectl get -l` takes), and taints follow the kube-scheduler's
 * TaintToleration filter (core/v1 Toleration.ToleratesTaint). All functions are pure; the
 * only allocation is pl_selector_parse's, in the caller's arena.
 */
#ifndef PL_SELECTOR_H
#define PL_SELECTOR_H

#include <stddef.h>

#include "pl_types.h"

struct rc_arena;
struct rc_buf;
struct rc_err;

/* Does the selector match this label set? (empty selector: yes)
 * In: key present and its value one of the values. NotIn: key absent, or its value none of
 * the values. Exists / DoesNotExist: key present / absent. Gt / Lt: key present, its value
 * and the single requirement value both decimal integers (int64), and value > / < it.
 * Returns 1 or 0. */
int pl_selector_matches(const struct pl_selector *sel, const struct pl_labels *labels);

/* Check operators and values: In/NotIn need >= 1 value, Exists/DoesNotExist none,
 * Gt/Lt exactly one integer (and only when allow_gt_lt: node affinity allows them, label
 * selectors do not); keys are valid label keys ([prefix/]name: prefix a DNS-1123 subdomain
 * of at most 253 characters, name at most 63 of [A-Za-z0-9-_.] starting and ending
 * alphanumeric). Values of In/NotIn are not checked. RC_EINVALID with a message that names
 * the key. */
int pl_selector_validate(const struct pl_selector *sel, int allow_gt_lt, struct rc_err *err);

/* Parse kubectl's string syntax: "a=b,c!=d,e in (x,y),f notin (z),g,!h".
 * Also "a==b" (same as "a=b"), "a>5" and "a<5" (Gt, Lt), "a=" (empty value), "a in ()"
 * (the empty value). Whitespace around tokens is ignored; "" is the empty selector.
 * Keys and values are validated as label keys and values (Gt/Lt values as integers), values
 * of a set are sorted and unique, and requirements are sorted by key (stable), as
 * labels.Parse does. Everything in *out is allocated in `a`. Errors (RC_EINVALID) name the
 * 1-based column: "invalid selector 'a in (x': expected ',' or ')' at column 9". *out is
 * set only on success. */
int pl_selector_parse(struct pl_selector *out, const char *text, struct rc_arena *a,
                      struct rc_err *err);

/* Append a readable form ("cluster.class=production,tier in (a,b)") to out.
 * In with one value "k=v", several "k in (a,b)"; NotIn "k!=v" / "k notin (a,b)"; Exists
 * "k"; DoesNotExist "!k"; Gt "k>5"; Lt "k<5"; requirements joined by ",", in their order.
 * The empty selector appends nothing. Deterministic, and what pl_selector_parse produced
 * formats back to text that parses to the same selector. Errors only from out's cap. */
int pl_selector_format(struct rc_buf *out, const struct pl_selector *sel, struct rc_err *err);

/* Taints and tolerations, as the kube-scheduler's TaintToleration filter:
 * a pod may use a node when every NoSchedule/NoExecute taint is tolerated.
 * A toleration tolerates a taint when its effect is "" or the taint's, its key is "" or
 * the taint's, and it is Exists or (Equal) its value equals the taint's. So an empty key
 * with Exists tolerates everything. pl_tolerates: does any of tol[] tolerate the taint?
 * pl_tolerates_all: is every NoSchedule / NoExecute taint tolerated? (PreferNoSchedule
 * never blocks.) Both return 1 or 0. */
int pl_tolerates(const struct pl_toleration *tol, size_t ntol, const struct pl_taint *taint);
int pl_tolerates_all(const struct pl_toleration *tol, size_t ntol, const struct pl_taint *taints,
                     size_t ntaints);

/* nodeSelector (every key=value present) and required affinity (any term matches).
 * As in Kubernetes, an affinity term with no requirements matches no node (a pod whose
 * only terms are empty fits nowhere); naffinity == 0 means no affinity. Returns 1 or 0. */
int pl_pod_node_labels_ok(const struct pl_pod *pod, const struct pl_labels *node_labels);

#endif
