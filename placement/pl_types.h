/*
 * pl_types.h - the placement vocabulary: every input and output of the placement engine.
 *
 * These are plain data structs, filled by render/ (objects, policies, Cluster objects) and
 * reconciler/ (observed capacity, previous placements), and read by pl_place(). Everything
 * reachable from them is allocated in one struct rc_arena per pass and freed with it: no
 * struct here has a _free. Strings are NUL-terminated UTF-8 and never NULL unless a field
 * says "NULL: ...". Arrays are (n, pointer) pairs; n == 0 allows a NULL pointer.
 *
 * Resource amounts are int64 milli-units ("1" cpu = 1000, "1Gi" memory = 1073741824000,
 * one nvidia.com/gpu = 1000), so every resource is exact and compared the same way.
 */
#ifndef PL_TYPES_H
#define PL_TYPES_H

#include <stddef.h>
#include <stdint.h>

struct rc_arena;

/* ==== Resources ==== */

#define PL_RES_MAX 16 /* distinct resource names one pass may use */

enum { PL_RES_CPU = 0, PL_RES_MEMORY = 1, PL_RES_PODS = 2, PL_RES_FIRST_EXTENDED = 3 };

/* The names behind the indices of struct pl_res; cpu, memory, pods are always 0, 1, 2. */
struct pl_resnames {
    int n;
    const char *name[PL_RES_MAX];
};

/* A vector of amounts in milli-units, indexed through struct pl_resnames. */
struct pl_res {
    int64_t v[PL_RES_MAX];
};

/* ==== Labels, taints, tolerations ==== */

struct pl_label {
    const char *key;
    const char *value;
};

/* Sorted by key (strcmp), keys unique. */
struct pl_labels {
    size_t n;
    struct pl_label *v;
};

struct pl_taint {
    const char *key;
    const char *value;  /* "" when absent */
    const char *effect; /* NoSchedule | PreferNoSchedule | NoExecute */
};

struct pl_toleration {
    const char *key;    /* "" with exists = 1: tolerates every taint */
    int exists;         /* operator Exists (value ignored); else Equal */
    const char *value;  /* "" when absent */
    const char *effect; /* "": every effect */
};

/* ==== Label selectors (Kubernetes metav1.LabelSelector / NodeSelectorTerm) ==== */

enum pl_op { PL_OP_IN, PL_OP_NOTIN, PL_OP_EXISTS, PL_OP_DOESNOTEXIST, PL_OP_GT, PL_OP_LT };

struct pl_requirement {
    const char *key;
    enum pl_op op;
    size_t nvalues; /* In/NotIn: >= 1; Exists/DoesNotExist: 0; Gt/Lt: 1 integer */
    const char **values;
};

/* Requirements ANDed; matchLabels entries become In requirements with one value.
 * n == 0 matches everything, as an empty LabelSelector does in Kubernetes. */
struct pl_selector {
    size_t n;
    struct pl_requirement *req;
};

/* ==== Workload demand ==== */

/* `count` identical pods. `req` is the pod's effective request as the scheduler computes it
 * (containers summed, init containers by max, limits where requests are absent, overhead);
 * it does not include the pod itself: the engine adds one "pods" per pod. */
struct pl_pod {
    const char *role; /* for reasons: "head", "worker small-group", "submitter", "pod" */
    uint32_t count;
    struct pl_res req;
    struct pl_labels node_selector;
    size_t ntolerations;
    struct pl_toleration *tolerations;
    size_t naffinity; /* required node affinity: terms ORed; 0 = none */
    struct pl_selector *affinity;
    /* 0, or a digest of the constraints above (node selector, tolerations, affinity), which
     * placement fills the first time it hashes the pod: a memo that lives as long as the pod
     * (the parse cache keeps pods from pass to pass), valid because nothing changes a pod's
     * constraints once it is loaded (a copy may change its requests, which it leaves out). */
    uint64_t constraints_hash;
};

/* An object a pod template names: its ConfigMaps, Secrets, ServiceAccount, PVCs. */
struct pl_ref {
    const char *key; /* "<namespace>/ConfigMap/<name>", .../Secret/..., .../ServiceAccount/...,
                        .../PersistentVolumeClaim/... */
    int optional;    /* every mention says optional: true (a missing one is no warning) */
};

/* How spreadMode Divide shares an object among its targets (pl_divide_object). */
enum pl_split_kind {
    PL_SPLIT_COPY = 0,     /* makes no pods of its own: every target gets a copy (ConfigMap, ...) */
    PL_SPLIT_REPLICAS = 1, /* spec.replicas is shared out (Deployment, StatefulSet, ...) */
    PL_SPLIT_JOB = 2,      /* batch Job: parallelism (and completions) shared out */
    PL_SPLIT_WHOLE = 3     /* makes pods but has nothing to share: one target runs it whole */
};

/* A workload object as placement sees it. */
struct pl_object {
    const char *key;         /* "<namespace>/<Kind>/<name>", cluster-scoped "<Kind>/<name>" */
    const char *api_version; /* "ray.io/v1" */
    const char *kind;        /* "RayJob" */
    const char *ns;          /* NULL: cluster-scoped */
    const char *name;
    struct pl_labels labels;
    size_t npods;
    struct pl_pod *pods;
    int64_t replicas; /* the field Divide splits (spec.replicas); -1: the kind has none */
    /* How Divide shares it. PL_SPLIT_COPY with replicas >= 0 reads as PL_SPLIT_REPLICAS, and
     * PL_SPLIT_COPY with pods as PL_SPLIT_WHOLE (see pl_split_of). */
    enum pl_split_kind split;
    int64_t parallelism; /* PL_SPLIT_JOB: spec.parallelism (default 1) */
    int64_t completions; /* PL_SPLIT_JOB: spec.completions; -1: not set (a work queue) */
    const char *file;    /* source file and line, for messages */
    int line;
    /* Something the pass should warn about the object (e.g. a kind with a pod template whose
     * pods rightplace cannot count); pl_place lists it among the warnings with file:line.
     * NULL: none. */
    const char *warning;
    /* Nova's placement annotations (PL_ANNOTATION_CLUSTER, PL_ANNOTATION_SPREAD_ONTO): the
     * values as written, NULL when absent. Either makes the object a unit alone, placed
     * as the annotation says instead of by a SchedulePolicy. */
    const char *nova_cluster;
    const char *nova_spread_onto;
    /* What its pod templates reference, sorted by key, unique. An object no policy places
     * that is referenced goes wherever the units referencing it go ("dependencies follow"). */
    size_t nrefs;
    const struct pl_ref *refs;
    void *payload; /* render's object (its cJSON tree); placement never reads it */
};

/* A namespace's labels: from its Namespace object in the repo, plus
 * kubernetes.io/metadata.name. Namespaces not in the repo have only that label. */
struct pl_namespace {
    const char *name;
    struct pl_labels labels;
};

/* ==== The fleet ==== */

enum pl_autoscaler {
    PL_AUTOSCALER_NONE = 0,
    PL_AUTOSCALER_CLUSTER_AUTOSCALER = 1,
    PL_AUTOSCALER_LUNA = 2
};

struct pl_node {
    const char *name;
    const char *shape; /* the autoscaler node shape it was made from; NULL: none/unknown */
    struct pl_res allocatable;
    struct pl_res requested; /* by pods already on the node (live clusters; 0 when simulated) */
    struct pl_labels labels;
    size_t ntaints;
    struct pl_taint *taints;
    int unschedulable; /* cordoned */
    int not_ready;     /* Ready condition false or unknown */
};

/* A kind of node the autoscaler can add. */
struct pl_shape {
    const char *name;
    int64_t max;        /* most nodes of this shape, existing ones included; -1: no limit */
    int64_t cost_micro; /* cost per hour in millionths of a currency unit; 0: unknown */
    struct pl_res allocatable;
    struct pl_labels labels; /* labels a new node of this shape gets */
    size_t ntaints;
    struct pl_taint *taints;
};

struct pl_cluster {
    const char *name;
    struct pl_labels labels; /* includes kubernetes.io/metadata.name = name */
    int live;                /* has a connection (kubeconfig); 0: simulated */
    int reachable;           /* 0: could not be observed: takes no new units, keeps its own */
    int64_t unreachable_for; /* seconds it has been unreachable, as far as known (0: unknown) */
    enum pl_autoscaler autoscaler;
    int any_shape; /* autoscaler with no declared shapes: it can add a node for any pod */
    size_t nshapes;
    struct pl_shape *shapes;
    int64_t cost_micro; /* cost per hour of its existing capacity; 0: unknown */
    size_t nnodes;
    struct pl_node *nodes;
    /* Units whose pods were observed on this cluster (values of the rightplace.dev/unit pod
     * label, see pl_unit_label), sorted. Their requests are already in nodes[].requested, so
     * the engine deducts only committed units that are not present. Empty when simulated. */
    size_t npresent;
    const char **present;
};

/* ==== Policies (Nova SchedulePolicy) ==== */

enum pl_spread { PL_SPREAD_NONE = 0, PL_SPREAD_DUPLICATE = 1, PL_SPREAD_DIVIDE = 2 };

struct pl_split {
    const char *value; /* topology value (a cluster label value) */
    int64_t percent;   /* 0..100 */
};

/* One spreadConstraints.overrides entry: on targets whose topology value is
 * `topology_value`, the object (kind, name; apiVersion and namespace when given) gets
 * field_path set to value_json. Placement only lists them per decision; render applies them. */
struct pl_override {
    const char *topology_value;
    const char *api_version; /* NULL: any */
    const char *kind;
    const char *name;
    const char *ns;         /* NULL: any (cluster-scoped objects have none) */
    const char *field_path; /* "spec.template.spec.containers[0].env[0].value",
                               "metadata.labels['topology.istio.io/network']" */
    const char *value_json; /* value.staticValue, as JSON text */
    const char *file;
    int line;
};

struct pl_policy {
    const char *name;
    const char *digest; /* changes whenever the policy's spec changes */
    struct pl_selector namespace_selector;
    size_t nresource_selectors; /* ORed */
    struct pl_selector *resource_selectors;
    int has_cluster_selector; /* 0: every cluster */
    struct pl_selector cluster_selector;
    int has_ordered; /* orderedClusterSelector: priority = order of its In values */
    struct pl_selector ordered;
    const char *group_by; /* groupBy.labelKey; NULL: each object is a unit alone */
    enum pl_spread spread;
    const char *topology_key; /* NULL: kubernetes.io/metadata.name */
    size_t nsplits;
    struct pl_split *splits;
    size_t noverrides;
    struct pl_override *overrides;
    /* Re-placement (opt-in, from the policy's rightplace.dev/ annotations): a unit kept on a
     * cluster may move when that cluster has no room for it by the observed numbers and its
     * pods are not there (replace_when_full), or when the cluster has been unreachable for
     * more than replace_unreachable_after seconds (0: never). */
    int replace_when_full;
    int64_t replace_unreachable_after;
    const char *file;
    int line;
};

/* ==== Previous placements (the deploy branch's placements.yaml) ==== */

struct pl_verdict;

enum pl_state { PL_STATE_PLACED = 0, PL_STATE_PENDING = 1, PL_STATE_UNPLACED = 2 };

struct pl_prev_unit {
    const char *unit;
    const char *policy;        /* NULL for unplaced units without a policy */
    const char *policy_digest; /* NULL: unknown */
    size_t nobjects;
    const char **objects; /* object keys */
    enum pl_state state;
    size_t nclusters;
    const char **clusters;
    /* Divide: each cluster's percent, aligned with clusters (the record's `shares`); NULL:
     * none recorded (100 each, or a record whose shares do not read) */
    const int64_t *percents;
    const char *reason; /* as recorded; NULL: none */
    const char *cause;  /* as recorded; NULL: none */
    size_t nverdicts;   /* as recorded */
    struct pl_verdict *verdicts;
};

/* ==== Engine input and output ==== */

struct pl_options {
    int max_reason; /* reserved; 0 */
    /* Bounded verdicts (pl_verdicts_select): when verdicts_chosen or verdicts_passed is not
     * 0, a decision keeps the verdicts of its first verdicts_chosen targets and of the first
     * verdicts_passed candidates preferred over its last target, and counts the rest
     * (pl_decision.verdicts_omitted). 0, 0: every decision keeps every verdict. What is kept
     * and counted does not depend on these being set. */
    size_t verdicts_chosen;
    size_t verdicts_passed;
    /* With bounds: a decision that changes (pl_decision.change is not PL_CHANGE_NONE) keeps
     * every verdict all the same, for the commands that print those (plan, status, explain:
     * a decision that stands shows what its record lists). */
    int verdicts_whole_if_changed;
};

#define PL_OPTIONS_INIT                                                                            \
    {                                                                                              \
        0, 0, 0, 0                                                                                 \
    }

struct pl_input {
    const struct pl_resnames *res;
    size_t nobjects;
    const struct pl_object *objects;
    size_t nnamespaces;
    const struct pl_namespace *namespaces;
    size_t nclusters;
    const struct pl_cluster *clusters;
    size_t npolicies;
    const struct pl_policy *policies;
    size_t nprev;
    const struct pl_prev_unit *prev;
    struct pl_options opts;
};

enum pl_verdict_kind {
    PL_VERDICT_FITS_NOW = 0,
    PL_VERDICT_FITS_AFTER_SCALE_UP = 1,
    PL_VERDICT_DOES_NOT_FIT = 2,
    PL_VERDICT_UNREACHABLE = 3
};

struct pl_verdict {
    const char *cluster;
    enum pl_verdict_kind kind;
    const char *detail;  /* the numbers: "worker needs nvidia.com/gpu 1; best node has 0" */
    int64_t nodes_added; /* fits-after-scale-up: nodes the autoscaler must add */
};

struct pl_target {
    const char *cluster;
    int64_t percent;    /* Divide: this cluster's share; otherwise 100 */
    const char *domain; /* Divide: the topology value it stands for; NULL: the cluster name */
};

enum pl_change {
    PL_CHANGE_NONE = 0,   /* same as the previous record */
    PL_CHANGE_NEW = 1,    /* not in the previous record */
    PL_CHANGE_MOVED = 2,  /* clusters changed; `cause` says why */
    PL_CHANGE_STATE = 3,  /* state or reason changed (pending -> placed, ...) */
    PL_CHANGE_REMOVED = 4 /* in the previous record, gone from the source */
};

struct pl_decision {
    const char *unit;   /* "<policy>/<namespace>/<groupBy value>", or the object's key */
    const char *policy; /* NULL: no policy governs it */
    const char *policy_digest;
    size_t nobjects; /* sorted by key; 0 for PL_CHANGE_REMOVED */
    const struct pl_object **objects;
    const char **object_keys; /* nobjects keys (also for removed units: their old keys) */
    enum pl_state state;
    size_t ntargets; /* placed: >= 1, sorted by cluster name */
    struct pl_target *targets;
    const char *reason; /* one line for a reader */
    size_t nverdicts;   /* one per candidate cluster, in preference order */
    struct pl_verdict *verdicts;
    /* Bounded verdicts (pl_options.verdicts_chosen): the candidates' verdicts not in
     * `verdicts` (0: the list is complete), and every candidate's verdict counted by kind
     * (enum pl_verdict_kind; set only when verdicts_omitted is not 0). */
    size_t verdicts_omitted;
    size_t verdict_counts[4];
    enum pl_change change;
    const char *cause; /* moves: why it moved; NULL otherwise */
    /* spreadConstraints.overrides that apply to its objects on its targets, one line each:
     * "<cluster>: <object key> <fieldPath> = <value>", in target then policy order */
    size_t noverrides;
    const char **overrides;
};

/* Per cluster, what the decisions leave of it (for status and capacity.yaml). */
struct pl_usage {
    const char *cluster;
    struct pl_res allocatable; /* schedulable nodes */
    struct pl_res requested;   /* observed on the cluster */
    struct pl_res committed;   /* placed by rightplace, not yet observed */
    int64_t nodes_to_add;      /* scale-up the decisions expect */
};

struct pl_result {
    size_t ndecisions; /* sorted by unit */
    struct pl_decision *decisions;
    size_t nwarnings; /* e.g. "object 'a/RayJob/x' matches policies 'p1' and 'p2'; 'p1' wins" */
    const char **warnings;
    size_t nusage; /* one per cluster, sorted by name */
    struct pl_usage *usage;
    size_t scratch_held; /* bytes the engine held besides the output, at most (its scratch) */
};

#endif
