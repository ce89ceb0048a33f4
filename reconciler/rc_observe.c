/*
 * rc_observe.c - builds the fleet for a pass (see rc_observe.h).
 */
#include "rc_observe.h"

#include <string.h>

#include "rc_banned.h"

int rc_observe_any_live(const struct rd_source *src)
{
    for (size_t i = 0; i < src->nclusters; i++) {
        if (src->conns[i].kubeconfig)
            return 1;
    }
    return 0;
}

int rc_observe_fleet(struct pl_cluster **out, size_t *n, struct rd_source *src,
                     const struct rc_log *log, struct rc_arena *a, struct rc_err *err)
{
    struct pl_cluster *fleet = rc_arena_calloc(a, src->nclusters + 1, sizeof(*fleet));

    (void)err;
    for (size_t i = 0; i < src->nclusters; i++) {
        fleet[i] = src->clusters[i];
        if (src->conns[i].kubeconfig) {
            /* live observation lands with the Kubernetes client */
            fleet[i].reachable = 0;
            if (log)
                rc_log_warn(log, "cluster '%s': live clusters are not observed yet",
                            fleet[i].name);
        }
    }
    *out = fleet;
    *n = src->nclusters;
    return RC_OK;
}
