/*
 * rd_demand.h - workload demand: the pods a manifest will create, with their requests.
 *
 * For each kind that makes pods, the pods as the kube-scheduler will see them: effective
 * requests (containers summed, init containers by max, restartable init containers and
 * overhead added, limits where requests are absent), nodeSelector, tolerations and required
 * node affinity. KubeRay kinds follow docs/architecture.md "Placement":
 * head, worker groups x clamp(replicas, min, max) x numOfHosts, CRD defaults applied by hand,
 * the autoscaler sidecar, the RayJob submitter. Nothing here reads Ray-level settings
 * (rayStartParams, group `resources`): they never reach the Kubernetes scheduler.
 */
#ifndef RD_DEMAND_H
#define RD_DEMAND_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "pl_types.h"
#include "rc_err.h"
#include "rd_yaml.h"

struct rc_arena;

/*
 * Fill obj->pods / obj->npods / obj->replicas from the manifest root. Kinds: Pod (1 pod),
 * Deployment, ReplicaSet, StatefulSet, ReplicationController (spec.replicas, default 1; also
 * obj->replicas), Job (parallelism, capped by completions), CronJob (one job's worth),
 * DaemonSet (zero: its pods follow the nodes of whatever cluster it lands on, one per node,
 * so they are not a fixed demand a cluster must have room for), RayCluster, RayJob,
 * RayService, LeaderWorkerSet (replicas x (leader + size-1 workers)), KServe
 * InferenceService (predictor, transformer, explainer: minReplicas, at least 1, of the
 * component's containers plus its model container), Kubeflow PyTorchJob, TFJob, MPIJob,
 * XGBoostJob, PaddleJob, JAXJob (every <x>ReplicaSpecs entry: replicas x template;
 * runPolicy.suspend: none) and TrainJob (trainer.numNodes x trainer.resourcesPerNode).
 * Any object may declare its pods with the annotation rightplace.dev/pod-templates:
 * "<template path>[=<replicas path or number>], ..." (paths like spec.workers[0].template;
 * a template is a PodTemplateSpec or a PodSpec; a replicas path that is absent reads 1),
 * which wins over the rules above. Every other kind has zero demand; when one holds a pod
 * spec somewhere, obj->warning says where. obj->replicas is -1 for kinds without
 * spec.replicas; obj->split, parallelism, completions say how Divide shares the object. Pod roles:
 * "pod", "head", "worker <group>", "submitter". Groups with zero pods are left out. Resource names
 * are interned in res (at most PL_RES_MAX names in all). docs (may be NULL) gives positions: errors
 * read "file:line:col: ...". Everything is allocated in a; nothing points into root afterwards.
 */
int rd_demand_extract(struct pl_object *obj, const cJSON *root, const struct rd_docs *docs,
                      struct pl_resnames *res, struct rc_arena *a, struct rc_err *err);

/*
 * The pod templates (objects with metadata + spec of the pods a workload creates), so that
 * labels can be added to them: Pod -> root; Deployment & co (also DaemonSet, Job) ->
 * spec.template; CronJob -> spec.jobTemplate.spec.template; RayCluster -> head + every
 * worker template; RayJob -> those under spec.rayClusterSpec + spec.submitterPodTemplate
 * (if present); RayService -> spec.rayClusterConfig's; LeaderWorkerSet -> leader and worker
 * templates; Kubeflow training jobs -> every replica spec's template; declared kinds -> the
 * declared paths that are PodTemplateSpecs. Only mappings are returned, in that order. Returns the
 * number found (at most max written to out; borrowed from root).
 */
size_t rd_pod_templates(cJSON *root, cJSON **out, size_t max);

/*
 * The components whose `labels` map a workload's controller copies onto the pods it makes,
 * for kinds that have no pod template: KServe InferenceService -> predictor, transformer and
 * explainer, those present ("Labels that will be added to the component pod"). Labels for
 * the pods go in <component>.labels, not in metadata.labels. None for a kind whose pod
 * templates are declared (the annotation wins, as in rd_pod_templates). Only mappings are
 * returned, in that order; returns the number found (at most max written; borrowed from root).
 */
#define RD_POD_COMPONENTS_MAX 3
size_t rd_pod_components(cJSON *root, cJSON **out, size_t max);

#endif
