/*
 * rc_apply.h - applies the deploy branch to live clusters: for each cluster with a
 * connection whose directory changed since refs/rightplace/applied/<cluster>, server-side
 * apply of added and changed objects (Namespaces and CRDs first), deletion of objects that
 * left the directory and carry rightplace's labels, then the applied ref moves. Results go
 * into a git note on the deploy commit.
 */
#ifndef RC_APPLY_H
#define RC_APPLY_H

#include <stddef.h>

#include "rc_arena.h"
#include "rc_err.h"
#include "rc_log.h"
#include "rd_source.h"

struct rc_git;

/* Apply deploy commit `deploy` to every live cluster among conns. *incomplete is set when a
 * cluster was unreachable or an object failed; that is not an error of the call. */
int rc_apply_deploy(int *incomplete, struct rc_git *g, const char *deploy,
                    const struct rd_cluster_conn *conns, size_t nconns, int resync,
                    const struct rc_log *log, struct rc_arena *a, struct rc_err *err);

#endif
