/*
 * rc_apply.c - applies the deploy branch to live clusters (see rc_apply.h).
 */
#include "rc_apply.h"

#include "rc_banned.h"

int rc_apply_deploy(int *incomplete, struct rc_git *g, const char *deploy,
                    const struct rd_cluster_conn *conns, size_t nconns, int resync,
                    const struct rc_log *log, struct rc_arena *a, struct rc_err *err)
{
    (void)g;
    (void)deploy;
    (void)resync;
    (void)a;
    (void)err;
    *incomplete = 0;
    for (size_t i = 0; i < nconns; i++) {
        if (conns[i].kubeconfig) {
            *incomplete = 1;
            if (log)
                rc_log_warn(log, "cluster '%s': apply to live clusters is not available yet",
                            conns[i].name);
        }
    }
    return RC_OK;
}
