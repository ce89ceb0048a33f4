/*
 * rc_observe.h - the fleet as placement sees it: declared capacity for simulated clusters,
 * observed capacity (nodes, pods, autoscaler) for clusters with a kubeconfig.
 *
 * A live cluster is read through the Kubernetes API (rc_kube): every node, every pod, and,
 * when its Cluster object says `autoscaler.type: auto`, every Deployment (to find a
 * cluster-autoscaler or Elotl Luna). Live clusters are read in parallel on at most
 * RC_OBSERVE_MAX_THREADS threads (the calling thread among them), each taking the next cluster
 * as soon as it is done with one, so that a cluster that answers only at its timeout holds
 * one thread, not a round of them; the threads only fetch, the model is built afterwards on
 * the calling thread. A cluster that cannot be read (no kubeconfig file, connect, TLS,
 * authentication, 5xx after retries) is marked unreachable and reported as a warning: that is
 * not an error of the pass.
 *
 * In loop mode (options.watches) the pods and nodes a pass listed are kept by watchers
 * (rc_watch.h) and taken from them by the next pass. Nothing but nodes, pods and Deployments
 * is read.
 */
#ifndef RC_OBSERVE_H
#define RC_OBSERVE_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "pl_types.h"
#include "rc_arena.h"
#include "rc_err.h"
#include "rc_log.h"
#include "rd_source.h"

#define RC_OBSERVE_MAX_THREADS 8

struct rc_kube_options;

/* Does the source declare any cluster with a connection (a kubeconfig)? */
int rc_observe_any_live(const struct rd_source *src);

/* Build the fleet: one pl_cluster per Cluster object of src, in the same order. Simulated
 * clusters are copied as declared. Live clusters are observed (see rc_observe_build: the
 * servers' lists are read page by page, each item reduced to what that reads of it as its page
 * arrives, and pods that ended are not asked for), at most RC_OBSERVE_MAX_THREADS at once; one
 * that cannot be read gets reachable = 0 (reported through log with the reason), which is not
 * an error of the call. Resource names are looked up in src->res (a resource no workload asks
 * for does not matter to placement and is left out). Everything is allocated in `a`. */
int rc_observe_fleet(struct pl_cluster **out, size_t *n, struct rd_source *src,
                     const struct rc_log *log, struct rc_arena *a, struct rc_err *err);

/* The same with client options (timeouts, retries, page size; kubeconfig and context come
 * from each conn). ko NULL: RC_KUBE_OPTIONS_INIT. */
int rc_observe_fleet_opts(struct pl_cluster **out, size_t *n, struct rd_source *src,
                          const struct rc_kube_options *ko, const struct rc_log *log,
                          struct rc_arena *a, struct rc_err *err);

/* Why live clusters could not be read. A kubeconfig that cannot be loaded (missing file,
 * unknown context, unreadable certificate) is the operator's configuration, not an outage:
 * callers report it apart (exit status 2). */
struct rc_observe_report {
    size_t nunreachable;             /* live clusters not read: outage or configuration */
    size_t nconfig;                  /* of those, the ones whose kubeconfig could not be loaded */
    char config_msg[RC_ERR_MSG_MAX]; /* the first of those, naming the Cluster */
    size_t nwatched;       /* live clusters read whose pods came from their watch (loop mode) */
    size_t nwatched_nodes; /* live clusters read whose nodes came from their watch */
};

/* rc_observe_fleet_opts, also filling *rep (may be NULL). */
int rc_observe_fleet_report(struct pl_cluster **out, size_t *n, struct rd_source *src,
                            const struct rc_kube_options *ko, const struct rc_log *log,
                            struct rc_observe_report *rep, struct rc_arena *a, struct rc_err *err);

/*
 * The pure part of observing one cluster: turn the API server's items into the cluster
 * model. *c comes in with the declared data (name, labels, cost, shapes, autoscaler) and
 * keeps it; this sets live = 1, reachable = 1, and fills:
 * - nodes[] from `nodes` (an array of Node objects), sorted by name: status.allocatable
 *   (names known in res only), metadata.labels, spec.taints, spec.unschedulable, not_ready
 *   when the Ready condition is not "True"; shape = the node's
 *   node.kubernetes.io/instance-type label when a declared shape has that name;
 * - nodes[].requested from `pods` (an array of Pod objects): pods in phase Pending or Running
 *   bound to a node (spec.nodeName) add their effective requests (the scheduler's rule, as
 *   rd_demand computes it) plus one "pods" (a pod rd_demand cannot read adds only the one
 *   "pods": the server accepted it, and one odd pod must not take the cluster out);
 * - present[]: the sorted, unique values of the rightplace.dev/unit label of those pods
 *   (bound or not);
 * - when `deployments` is not NULL (autoscaler detection asked for): autoscaler =
 *   PL_AUTOSCALER_LUNA for a Deployment named "*luna*" in namespace elotl or labelled
 *   app.kubernetes.io/name=luna-manager|elotl-luna, else PL_AUTOSCALER_CLUSTER_AUTOSCALER for
 *   one named cluster-autoscaler or labelled app.kubernetes.io/name=cluster-autoscaler, else
 *   PL_AUTOSCALER_NONE; deployments scaled to 0 replicas do not count. A detected autoscaler
 *   without declared shapes can add any shape (any_shape = 1).
 * Malformed nodes (no name, a bad allocatable quantity) are RC_EINVALID naming the node.
 */
int rc_observe_build(struct pl_cluster *c, const cJSON *nodes, const cJSON *pods,
                     const cJSON *deployments, struct pl_resnames *res, struct rc_arena *a,
                     struct rc_err *err);

#endif
