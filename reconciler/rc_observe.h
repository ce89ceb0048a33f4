/*
 * rc_observe.h - the fleet as placement sees it: declared capacity for simulated clusters,
 * observed capacity (nodes, pods, autoscaler) for clusters with a kubeconfig.
 */
#ifndef RC_OBSERVE_H
#define RC_OBSERVE_H

#include <stddef.h>

#include "pl_types.h"
#include "rc_arena.h"
#include "rc_err.h"
#include "rc_log.h"
#include "rd_source.h"

/* Does the source declare any cluster with a connection? */
int rc_observe_any_live(const struct rd_source *src);

/* Build the fleet: one pl_cluster per Cluster object of src, in the same order. Simulated
 * clusters are copied as declared. Live clusters are observed; one that cannot be read is
 * marked unreachable (reported through log), which is not an error of the pass. Resource
 * names are interned in src->res. Everything is allocated in `a`. */
int rc_observe_fleet(struct pl_cluster **out, size_t *n, struct rd_source *src,
                     const struct rc_log *log, struct rc_arena *a, struct rc_err *err);

#endif
