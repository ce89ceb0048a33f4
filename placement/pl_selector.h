/*
 * pl_selector.h - TEMPORARY stand-in (engine branch) for vocab's header: only the
 * declarations the engine uses, exactly as in CONTRACTS.md. Replaced by main's on merge.
 */
#ifndef PL_SELECTOR_H
#define PL_SELECTOR_H

#include "pl_types.h"

int pl_selector_matches(const struct pl_selector *sel, const struct pl_labels *labels);
int pl_tolerates(const struct pl_toleration *tol, size_t ntol, const struct pl_taint *taint);
int pl_tolerates_all(const struct pl_toleration *tol, size_t ntol, const struct pl_taint *taints,
                     size_t ntaints);
int pl_pod_node_labels_ok(const struct pl_pod *pod, const struct pl_labels *node_labels);

#endif
