/*
 * rd_cluster.h - rightplace.dev/v1alpha1 Cluster manifests -> struct pl_cluster.
 *
 * The fleet is declared in the source repository (docs/formats.md): labels (plus
 * kubernetes.io/metadata.name = name, as Nova sets it), how to reach the cluster, its
 * autoscaler and the node shapes it can add, and costs. How to reach it is a *selection*
 * among the credentials the operator gave (docs/security.md): a context of the operator's
 * kubeconfigs, a file name in the operator's kubeconfig directory, or the pod's service
 * account; absent: a simulated cluster whose capacity is the declared nodes. This module only
 * translates and checks; it never reads a kubeconfig or any other file.
 */
#ifndef RD_CLUSTER_H
#define RD_CLUSTER_H

#include <cjson/cJSON.h>

#include "pl_types.h"
#include "rc_err.h"
#include "rd_object.h"
#include "rd_yaml.h"

struct rc_arena;

/* How reconciler/ reaches a cluster: what the Cluster object selects (spec.kubeconfig). These
 * are requests from the source repository, never trusted as paths: rc_kubeconfig_select
 * resolves them against the operator's kubeconfigs. Strings live in the arena given to
 * rd_cluster_parse. */
struct rd_cluster_conn {
    const char *name;
    int live;              /* spec.kubeconfig given; 0: simulated cluster (declared capacity) */
    const char *context;   /* a context of the operator's kubeconfigs; NULL: current-context */
    const char *file;      /* spec.kubeconfig.name: a plain file name (no '/', no leading '.')
                              in the operator's kubeconfig directory */
    const char *path;      /* spec.kubeconfig.path (older form): used only when it names one
                              of the operator's kubeconfig files */
    int in_cluster;        /* spec.kubeconfig.inCluster: the pod's service account */
    int detect_autoscaler; /* spec.autoscaler.type: auto -> observe decides */
};

/* Is s a plain file name of the operator's kubeconfig directory: one path component of 1 to
 * 255 bytes, not hidden (no leading '.'), no control characters? The one rule for
 * spec.kubeconfig.name, checked here and again where the reconciler opens the file. */
int rd_cluster_file_name_ok(const char *s);

/* Is o a Cluster of rightplace.dev (any version)? */
int rd_is_cluster(const struct rd_object *o);

/*
 * Translate one Cluster. spec.kubeconfig is one of {context: C}, {name: F[, context: C]},
 * {inCluster: true} or the older {path: P[, context: C]}; F is checked to be a plain file
 * name. Simulated (no kubeconfig): live = 0, reachable = 1, nodes are the
 * declared ones (entry {name, count} becomes count nodes "<name>-1" .. "<name>-<count>",
 * each labelled kubernetes.io/hostname=<node> unless the entry sets it; allocatable "pods"
 * defaults to 110 as the kubelet's does). Live: live = 1, reachable = 1, no nodes (observe
 * fills them); declaring nodes is an error.
 * Autoscaler (spec.autoscaler.type, default auto): none | cluster-autoscaler | luna as
 * given; auto on a live cluster sets conn->detect_autoscaler and leaves PL_AUTOSCALER_NONE
 * for observe to replace; auto on a simulated cluster is cluster-autoscaler when nodeShapes
 * are declared and none otherwise (there is nothing to detect). An autoscaler without
 * nodeShapes can add any shape (any_shape = 1). costPerHour -> cost_micro (millionths).
 * Unknown fields are errors: this is rightplace's own format. Errors "file:line:col: ...".
 */
int rd_cluster_parse(struct pl_cluster *out, struct rd_cluster_conn *conn,
                     const struct rd_object *o, const struct rd_docs *docs, struct pl_resnames *res,
                     struct rc_arena *a, struct rc_err *err);

#endif
