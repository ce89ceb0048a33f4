/*
 * rd_demand.c - the pods a workload manifest creates and what each asks of a node.
 *
 * Effective pod request, as the kube-scheduler computes it (k8s.io/component-helpers
 * resource.PodRequests), per resource name:
 *   sum     = sum over containers of (request, else limit)
 *   walking initContainers in order, with S = restartable (restartPolicy: Always) sidecars
 *   seen so far: a sidecar adds its request to sum and to S, and needs S; a plain init
 *   container needs its request + S;   init = max of those needs
 *   request = max(sum, init), then pod-level spec.resources override, + spec.overhead
 * Requests never come from anything but the manifest: no LimitRange or admission defaults.
 *
 * What it does not do: read Ray-level settings (rayStartParams, group `resources`), count
 * a RayService's transient second cluster during an upgrade, or KubeRay's injected worker
 * init container (200m/256Mi, smaller than any real Ray container). nodeAffinity matchFields
 * (node names) are not modelled: a term with only matchFields constrains nothing here.
 */
#include "rc_sort.h"
#include "rd_demand.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pl_basics.h"
#include "rc_arena.h"
#include "rd_field.h"
#include "rd_object.h"

#define MILLI_MI INT64_C(1048576000) /* 1Mi in milli-units */

struct dctx {
    const struct rd_docs *docs;
    struct pl_resnames *res;
    struct rc_arena *a;
    struct rc_err *err;
    size_t npods, cap;
    struct pl_pod *pods;
    const char *ns; /* the object's namespace; NULL: cluster-scoped (references not kept) */
    size_t nrefs, capref;
    struct pl_ref *refs;
};

/* ==== Resource vectors ==== */

static int res_add(struct dctx *c, struct pl_res *dst, const struct pl_res *src, const cJSON *where)
{
    for (int i = 0; i < PL_RES_MAX; i++) {
        if (__builtin_add_overflow(dst->v[i], src->v[i], &dst->v[i]))
            return rd_err_at(c->err, RC_EINVALID, c->docs, where,
                             "total request for '%s' is too large", c->res->name[i]);
    }
    return RC_OK;
}

static void res_max(struct pl_res *dst, const struct pl_res *src)
{
    for (int i = 0; i < PL_RES_MAX; i++) {
        if (src->v[i] > dst->v[i])
            dst->v[i] = src->v[i];
    }
}

static int intern(struct dctx *c, const cJSON *node, const char *name, int *idx)
{
    if (!name || !*name)
        return rd_err_at(c->err, RC_EINVALID, c->docs, node, "empty resource name");
    if (!strcmp(name, "pods"))
        return rd_err_at(c->err, RC_EINVALID, c->docs, node, "'pods' is not a container resource");
    *idx = pl_resnames_intern(c->res, c->a, name);
    if (*idx < 0)
        return rd_err_at(c->err, RC_EINVALID, c->docs, node,
                         "too many distinct resource names (at most %d in all): '%s'", PL_RES_MAX,
                         name);
    return RC_OK;
}

/* A ResourceRequirements: per resource, the request, else the limit. set[i] marks the
 * resources named at all. */
static int requirements(struct dctx *c, const cJSON *resources, struct pl_res *out,
                        unsigned char set[PL_RES_MAX])
{
    const cJSON *requests, *limits, *it;
    int64_t q;
    int rc, i;

    memset(out, 0, sizeof(*out));
    if (set)
        memset(set, 0, PL_RES_MAX);
    if (!resources || cJSON_IsNull(resources))
        return RC_OK;
    if (!cJSON_IsObject(resources))
        return rd_err_at(c->err, RC_EINVALID, c->docs, resources,
                         "field 'resources' must be a mapping");
    if ((rc = rd_field_obj(&requests, resources, "requests", 0, c->docs, c->err)) < 0 ||
        (rc = rd_field_obj(&limits, resources, "limits", 0, c->docs, c->err)) < 0)
        return rc;
    cJSON_ArrayForEach(it, requests)
    {
        if ((rc = intern(c, it, it->string, &i)) < 0 ||
            (rc = rd_field_quantity(&q, it, it->string, c->docs, c->err)) < 0)
            return rc;
        out->v[i] = q;
        if (set)
            set[i] = 1;
    }
    cJSON_ArrayForEach(it, limits)
    {
        if ((rc = intern(c, it, it->string, &i)) < 0 ||
            (rc = rd_field_quantity(&q, it, it->string, c->docs, c->err)) < 0)
            return rc;
        if (!rd_field_get(requests, it->string)) {
            out->v[i] = q; /* the API server defaults a missing request to the limit */
        } else if (out->v[i] > q) {
            return rd_err_at(c->err, RC_EINVALID, c->docs, it,
                             "request for '%s' is greater than its limit", it->string);
        }
        if (set)
            set[i] = 1;
    }
    return RC_OK;
}

static int container_requests(struct dctx *c, const cJSON *ctr, struct pl_res *out)
{
    if (!cJSON_IsObject(ctr))
        return rd_err_at(c->err, RC_EINVALID, c->docs, ctr, "container must be a mapping");
    return requirements(c, rd_field_get(ctr, "resources"), out, NULL);
}

/* The effective request of one pod spec; `extra` (may be NULL) is a container KubeRay adds. */
static int pod_requests(struct dctx *c, const cJSON *spec, const struct pl_res *extra,
                        struct pl_res *out)
{
    const cJSON *ctrs, *inits, *overhead, *it;
    struct pl_res sum, r, sidecars, init, podlevel;
    unsigned char podset[PL_RES_MAX];
    size_t n = 0;
    int rc, i;

    memset(&sum, 0, sizeof(sum));
    memset(&sidecars, 0, sizeof(sidecars));
    memset(&init, 0, sizeof(init));
    if ((rc = rd_field_list(&ctrs, spec, "containers", 1, c->docs, c->err)) < 0 ||
        (rc = rd_field_list(&inits, spec, "initContainers", 0, c->docs, c->err)) < 0 ||
        (rc = rd_field_obj(&overhead, spec, "overhead", 0, c->docs, c->err)) < 0)
        return rc;
    cJSON_ArrayForEach(it, ctrs)
    {
        if ((rc = container_requests(c, it, &r)) < 0 || (rc = res_add(c, &sum, &r, it)) < 0)
            return rc;
        n++;
    }
    if (!n)
        return rd_err_at(c->err, RC_EINVALID, c->docs, ctrs, "pod has no containers");
    if (extra && (rc = res_add(c, &sum, extra, spec)) < 0)
        return rc;
    cJSON_ArrayForEach(it, inits)
    {
        const char *policy = NULL;

        if ((rc = container_requests(c, it, &r)) < 0 ||
            (rc = rd_field_str(&policy, it, "restartPolicy", NULL, c->docs, c->a, c->err)) < 0)
            return rc;
        if (policy && strcmp(policy, "Always"))
            return rd_err_at(c->err, RC_EINVALID, c->docs, rd_field_get(it, "restartPolicy"),
                             "init container restartPolicy must be 'Always', not '%s'", policy);
        if (policy) { /* a sidecar: runs beside the containers and later init containers */
            if ((rc = res_add(c, &sum, &r, it)) < 0 || (rc = res_add(c, &sidecars, &r, it)) < 0)
                return rc;
            r = sidecars;
        } else if ((rc = res_add(c, &r, &sidecars, it)) < 0) {
            return rc;
        }
        res_max(&init, &r);
    }
    res_max(&sum, &init);
    /* pod-level resources (PodLevelResources) take precedence for the names they give */
    if ((rc = requirements(c, rd_field_get(spec, "resources"), &podlevel, podset)) < 0)
        return rc;
    for (i = 0; i < PL_RES_MAX; i++) {
        if (podset[i])
            sum.v[i] = podlevel.v[i];
    }
    cJSON_ArrayForEach(it, overhead)
    {
        int64_t q;
        if ((rc = intern(c, it, it->string, &i)) < 0 ||
            (rc = rd_field_quantity(&q, it, it->string, c->docs, c->err)) < 0)
            return rc;
        if (__builtin_add_overflow(sum.v[i], q, &sum.v[i]))
            return rd_err_at(c->err, RC_EINVALID, c->docs, it,
                             "total request for '%s' is too large", it->string);
    }
    *out = sum;
    return RC_OK;
}

/* ==== Scheduling constraints ==== */

static int toleration(struct dctx *c, const cJSON *t, struct pl_toleration *out)
{
    struct rc_err verr = RC_ERR_INIT;
    const char *op = NULL;
    int rc;

    if (!cJSON_IsObject(t))
        return rd_err_at(c->err, RC_EINVALID, c->docs, t, "toleration must be a mapping");
    if ((rc = rd_field_str(&out->key, t, "key", "", c->docs, c->a, c->err)) < 0 ||
        (rc = rd_field_str(&op, t, "operator", "Equal", c->docs, c->a, c->err)) < 0 ||
        (rc = rd_field_str(&out->value, t, "value", "", c->docs, c->a, c->err)) < 0 ||
        (rc = rd_field_str(&out->effect, t, "effect", "", c->docs, c->a, c->err)) < 0)
        return rc;
    if (*out->key && rd_validate_label_key(out->key, &verr) < 0)
        return rd_err_at(c->err, RC_EINVALID, c->docs, rd_field_get(t, "key"), "%s", verr.msg);
    if (!strcmp(op, "Exists"))
        out->exists = 1;
    else if (strcmp(op, "Equal"))
        return rd_err_at(c->err, RC_EINVALID, c->docs, rd_field_get(t, "operator"),
                         "unknown toleration operator '%s' (want Exists or Equal)", op);
    if (out->exists && *out->value)
        return rd_err_at(c->err, RC_EINVALID, c->docs, t,
                         "toleration with operator Exists must have no value");
    if (!*out->key && !out->exists)
        return rd_err_at(c->err, RC_EINVALID, c->docs, t,
                         "toleration without a key must use operator Exists");
    if (*out->effect && strcmp(out->effect, "NoSchedule") &&
        strcmp(out->effect, "PreferNoSchedule") && strcmp(out->effect, "NoExecute"))
        return rd_err_at(c->err, RC_EINVALID, c->docs, rd_field_get(t, "effect"),
                         "unknown toleration effect '%s'", out->effect);
    return RC_OK;
}

/* A selector no node matches: k Exists and k DoesNotExist. */
static void never_selector(struct dctx *c, struct pl_selector *sel)
{
    sel->n = 2;
    sel->req = rc_arena_calloc(c->a, 2, sizeof(*sel->req));
    sel->req[0].key = "kubernetes.io/hostname";
    sel->req[0].op = PL_OP_EXISTS;
    sel->req[1].key = "kubernetes.io/hostname";
    sel->req[1].op = PL_OP_DOESNOTEXIST;
}

static int node_affinity(struct dctx *c, const cJSON *spec, struct pl_pod *pod)
{
    const cJSON *aff, *na, *req, *terms, *t;
    size_t n = 0;
    int rc;

    if ((rc = rd_field_obj(&aff, spec, "affinity", 0, c->docs, c->err)) < 0 ||
        (rc = rd_field_obj(&na, aff, "nodeAffinity", 0, c->docs, c->err)) < 0 ||
        (rc = rd_field_obj(&req, na, "requiredDuringSchedulingIgnoredDuringExecution", 0, c->docs,
                           c->err)) < 0)
        return rc;
    if (!req)
        return RC_OK;
    if ((rc = rd_field_list(&terms, req, "nodeSelectorTerms", 1, c->docs, c->err)) < 0)
        return rc;
    cJSON_ArrayForEach(t, terms) n++;
    if (!n)
        return rd_err_at(c->err, RC_EINVALID, c->docs, terms,
                         "required node affinity has no nodeSelectorTerms");
    pod->affinity = rc_arena_calloc(c->a, n, sizeof(*pod->affinity));
    cJSON_ArrayForEach(t, terms)
    {
        struct pl_selector *sel = &pod->affinity[pod->naffinity];
        const cJSON *exprs, *fields;

        if (!cJSON_IsObject(t))
            return rd_err_at(c->err, RC_EINVALID, c->docs, t, "nodeSelectorTerm must be a mapping");
        if ((rc = rd_field_list(&exprs, t, "matchExpressions", 0, c->docs, c->err)) < 0 ||
            (rc = rd_field_list(&fields, t, "matchFields", 0, c->docs, c->err)) < 0 ||
            (rc = rd_field_requirements(sel, exprs, 1, c->docs, c->a, c->err)) < 0)
            return rc;
        if (!sel->n && !cJSON_GetArraySize(fields))
            continue; /* an empty term matches no node: it adds nothing to the OR */
        pod->naffinity++;
    }
    if (!pod->naffinity) { /* every term empty: the pod fits no node */
        pod->naffinity = 1;
        never_selector(c, &pod->affinity[0]);
    }
    return RC_OK;
}

static int pod_constraints(struct dctx *c, const cJSON *spec, struct pl_pod *pod)
{
    const cJSON *sel, *tols, *t;
    size_t n = 0;
    int rc;

    if ((rc = rd_field_obj(&sel, spec, "nodeSelector", 0, c->docs, c->err)) < 0 ||
        (rc = rd_field_string_map(&pod->node_selector, sel, 1, c->docs, c->a, c->err)) < 0 ||
        (rc = rd_field_list(&tols, spec, "tolerations", 0, c->docs, c->err)) < 0)
        return rc;
    cJSON_ArrayForEach(t, tols) n++;
    if (n) {
        pod->tolerations = rc_arena_calloc(c->a, n, sizeof(*pod->tolerations));
        cJSON_ArrayForEach(t, tols)
        {
            if ((rc = toleration(c, t, &pod->tolerations[pod->ntolerations])) < 0)
                return rc;
            pod->ntolerations++;
        }
    }
    return node_affinity(c, spec, pod);
}

/* ==== Pods ==== */

static struct pl_pod *new_pod(struct dctx *c)
{
    if (c->npods == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 4;
        struct pl_pod *v = rc_arena_calloc(c->a, cap, sizeof(*v));
        if (c->npods)
            memcpy(v, c->pods, c->npods * sizeof(*v));
        c->pods = v;
        c->cap = cap;
    }
    memset(&c->pods[c->npods], 0, sizeof(c->pods[0]));
    return &c->pods[c->npods++];
}

/* ==== References: what a pod spec needs to exist beside it ==== */

static void ref_add(struct dctx *c, const char *kind, const cJSON *name, const cJSON *optional)
{
    if (!c->ns || !cJSON_IsString(name) || !*name->valuestring)
        return;
    if (c->nrefs == c->capref) {
        size_t cap = c->capref ? c->capref * 2 : 8;
        struct pl_ref *v = rc_arena_calloc(c->a, cap, sizeof(*v));
        if (c->nrefs)
            memcpy(v, c->refs, c->nrefs * sizeof(*v));
        c->refs = v;
        c->capref = cap;
    }
    c->refs[c->nrefs].key = rc_arena_printf(c->a, "%s/%s/%s", c->ns, kind, name->valuestring);
    c->refs[c->nrefs].optional = cJSON_IsTrue(optional);
    c->nrefs++;
}

/* A sequence, else NULL (cJSON_ArrayForEach then does nothing). */
static const cJSON *seq(const cJSON *x)
{
    return cJSON_IsArray(x) ? x : NULL;
}

static void container_refs(struct dctx *c, const cJSON *ctrs)
{
    const cJSON *ctr, *e;

    cJSON_ArrayForEach(ctr, seq(ctrs))
    {
        cJSON_ArrayForEach(e, seq(rd_field_get(ctr, "env")))
        {
            const cJSON *from = rd_field_get(e, "valueFrom"), *r;
            if ((r = rd_field_get(from, "configMapKeyRef")))
                ref_add(c, "ConfigMap", rd_field_get(r, "name"), rd_field_get(r, "optional"));
            if ((r = rd_field_get(from, "secretKeyRef")))
                ref_add(c, "Secret", rd_field_get(r, "name"), rd_field_get(r, "optional"));
        }
        cJSON_ArrayForEach(e, seq(rd_field_get(ctr, "envFrom")))
        {
            const cJSON *r;
            if ((r = rd_field_get(e, "configMapRef")))
                ref_add(c, "ConfigMap", rd_field_get(r, "name"), rd_field_get(r, "optional"));
            if ((r = rd_field_get(e, "secretRef")))
                ref_add(c, "Secret", rd_field_get(r, "name"), rd_field_get(r, "optional"));
        }
    }
}

/* ConfigMaps, Secrets, the ServiceAccount and PVCs a pod spec names (volumes, projected
 * sources, env, envFrom, imagePullSecrets, serviceAccountName). */
static void pod_refs(struct dctx *c, const cJSON *spec)
{
    const cJSON *v, *sa, *s;

    container_refs(c, rd_field_get(spec, "containers"));
    container_refs(c, rd_field_get(spec, "initContainers"));
    cJSON_ArrayForEach(v, seq(rd_field_get(spec, "volumes")))
    {
        const cJSON *r, *srcs;
        if ((r = rd_field_get(v, "configMap")))
            ref_add(c, "ConfigMap", rd_field_get(r, "name"), rd_field_get(r, "optional"));
        if ((r = rd_field_get(v, "secret")))
            ref_add(c, "Secret", rd_field_get(r, "secretName"), rd_field_get(r, "optional"));
        if ((r = rd_field_get(v, "persistentVolumeClaim")))
            ref_add(c, "PersistentVolumeClaim", rd_field_get(r, "claimName"), NULL);
        srcs = rd_field_get(rd_field_get(v, "projected"), "sources");
        cJSON_ArrayForEach(s, seq(srcs))
        {
            if ((r = rd_field_get(s, "configMap")))
                ref_add(c, "ConfigMap", rd_field_get(r, "name"), rd_field_get(r, "optional"));
            if ((r = rd_field_get(s, "secret")))
                ref_add(c, "Secret", rd_field_get(r, "name"), rd_field_get(r, "optional"));
        }
    }
    cJSON_ArrayForEach(s, seq(rd_field_get(spec, "imagePullSecrets")))
    {
        ref_add(c, "Secret", rd_field_get(s, "name"), NULL);
    }
    sa = rd_field_get(spec, "serviceAccountName");
    if (!sa)
        sa = rd_field_get(spec, "serviceAccount"); /* the deprecated spelling */
    if (cJSON_IsString(sa) && strcmp(sa->valuestring, "default"))
        ref_add(c, "ServiceAccount", sa, NULL);
}

static int cmp_ref(const void *x, const void *y)
{
    return strcmp(((const struct pl_ref *)x)->key, ((const struct pl_ref *)y)->key);
}

/* Sort and merge: a reference is optional only when every mention says so. */
static size_t refs_finish(struct dctx *c)
{
    size_t w = 0;

    if (!c->nrefs)
        return 0;
    rc_sort(c->refs, c->nrefs, sizeof(*c->refs), cmp_ref);
    for (size_t i = 0; i < c->nrefs; i++) {
        if (w && !strcmp(c->refs[w - 1].key, c->refs[i].key)) {
            c->refs[w - 1].optional &= c->refs[i].optional;
            continue;
        }
        c->refs[w++] = c->refs[i];
    }
    return w;
}

/* `count` pods of `spec` (checked even when count is 0, so that a scaled-down workload's
 * errors are not hidden until it scales up). */
static int add_pod(struct dctx *c, const char *role, int64_t count, const cJSON *spec,
                   const struct pl_res *extra, const cJSON *where)
{
    struct pl_pod pod;
    int rc;

    memset(&pod, 0, sizeof(pod));
    if (!cJSON_IsObject(spec))
        return rd_err_at(c->err, RC_EINVALID, c->docs, where, "pod spec must be a mapping");
    if ((rc = pod_requests(c, spec, extra, &pod.req)) < 0 ||
        (rc = pod_constraints(c, spec, &pod)) < 0)
        return rc;
    pod_refs(c, spec);
    if (count > (int64_t)UINT32_MAX)
        return rd_err_at(c->err, RC_EINVALID, c->docs, where, "too many pods (%lld) for '%s'",
                         (long long)count, role);
    if (count <= 0)
        return RC_OK;
    pod.role = rc_arena_strdup(c->a, role);
    pod.count = (uint32_t)count;
    *new_pod(c) = pod;
    return RC_OK;
}

/* parent[key] must be a pod template; *spec = its spec. */
static int template_spec(struct dctx *c, const cJSON *parent, const char *key, const cJSON **spec)
{
    const cJSON *tmpl;
    int rc;

    if ((rc = rd_field_obj(&tmpl, parent, key, 1, c->docs, c->err)) < 0)
        return rc;
    return rd_field_obj(spec, tmpl, "spec", 1, c->docs, c->err);
}

/* ==== Kinds ==== */

static int replicated(struct dctx *c, struct pl_object *obj, const cJSON *root)
{
    const cJSON *spec, *pspec;
    int64_t replicas;
    int rc;

    if ((rc = rd_field_obj(&spec, root, "spec", 1, c->docs, c->err)) < 0 ||
        (rc = rd_field_int(&replicas, spec, "replicas", 1, 0, INT32_MAX, c->docs, c->err)) < 0 ||
        (rc = template_spec(c, spec, "template", &pspec)) < 0)
        return rc;
    obj->replicas = replicas;
    obj->split = PL_SPLIT_REPLICAS;
    return add_pod(c, "pod", replicas, pspec, NULL, spec);
}

/* A Job's spec (also a CronJob's jobTemplate.spec). Divide shares a Job's parallelism and
 * completions (PL_SPLIT_JOB), except an Indexed one: its completion indexes are one set, so
 * it runs whole on one cluster (PL_SPLIT_WHOLE). */
static int job(struct dctx *c, struct pl_object *obj, const cJSON *spec)
{
    const cJSON *pspec;
    const char *mode = NULL;
    int64_t parallelism, completions;
    int suspend, rc;

    if ((rc = rd_field_int(&parallelism, spec, "parallelism", 1, 0, INT32_MAX, c->docs, c->err)) <
            0 ||
        (rc = rd_field_int(&completions, spec, "completions", -1, 0, INT32_MAX, c->docs, c->err)) <
            0 ||
        (rc = rd_field_bool(&suspend, spec, "suspend", 0, c->docs, c->err)) < 0 ||
        (rc = rd_field_str(&mode, spec, "completionMode", "NonIndexed", c->docs, c->a, c->err)) <
            0 ||
        (rc = template_spec(c, spec, "template", &pspec)) < 0)
        return rc;
    obj->split = strcmp(mode, "Indexed") ? PL_SPLIT_JOB : PL_SPLIT_WHOLE;
    obj->parallelism = parallelism;
    obj->completions = completions;
    if (completions >= 0 && completions < parallelism)
        parallelism = completions; /* never more pods at once than completions left */
    return add_pod(c, "pod", suspend ? 0 : parallelism, pspec, NULL, spec);
}

static void submitter_default(struct pl_res *r)
{
    /* KubeRay's default submitter container: requests 500m / 200Mi (limits 1 / 1Gi) */
    memset(r, 0, sizeof(*r));
    r->v[PL_RES_CPU] = 500;
    r->v[PL_RES_MEMORY] = 200 * MILLI_MI;
}

/* A RayClusterSpec: the head (with `head_extra`, a container KubeRay adds, may be NULL) and
 * every worker group. */
static int ray_cluster(struct dctx *c, const cJSON *cs, const struct pl_res *head_extra)
{
    const cJSON *head, *hspec, *groups, *wg, *aopts;
    struct pl_res extra;
    int suspend, autoscale, rc;
    int64_t live;

    memset(&extra, 0, sizeof(extra));
    if ((rc = rd_field_bool(&suspend, cs, "suspend", 0, c->docs, c->err)) < 0 ||
        (rc = rd_field_bool(&autoscale, cs, "enableInTreeAutoscaling", 0, c->docs, c->err)) < 0 ||
        (rc = rd_field_obj(&aopts, cs, "autoscalerOptions", 0, c->docs, c->err)) < 0 ||
        (rc = rd_field_obj(&head, cs, "headGroupSpec", 1, c->docs, c->err)) < 0 ||
        (rc = template_spec(c, head, "template", &hspec)) < 0 ||
        (rc = rd_field_list(&groups, cs, "workerGroupSpecs", 0, c->docs, c->err)) < 0)
        return rc;
    live = suspend ? 0 : 1;
    if (head_extra && (rc = res_add(c, &extra, head_extra, head)) < 0)
        return rc;
    if (autoscale) { /* the Ray autoscaler sidecar in the head pod */
        const cJSON *ares = rd_field_get(aopts, "resources");
        struct pl_res r;
        if (ares) {
            if ((rc = requirements(c, ares, &r, NULL)) < 0)
                return rc;
        } else {
            memset(&r, 0, sizeof(r));
            r.v[PL_RES_CPU] = 500;
            r.v[PL_RES_MEMORY] = 512 * MILLI_MI;
        }
        if ((rc = res_add(c, &extra, &r, head)) < 0)
            return rc;
    }
    if ((rc = add_pod(c, "head", live, hspec, &extra, head)) < 0)
        return rc;
    cJSON_ArrayForEach(wg, groups)
    {
        const cJSON *wspec;
        const char *name = NULL;
        int64_t replicas, min, max, hosts;
        int wsuspend;

        if (!cJSON_IsObject(wg))
            return rd_err_at(c->err, RC_EINVALID, c->docs, wg, "worker group must be a mapping");
        if ((rc = rd_field_str(&name, wg, "groupName", NULL, c->docs, c->a, c->err)) < 0 ||
            (rc = rd_field_int(&replicas, wg, "replicas", 0, 0, INT32_MAX, c->docs, c->err)) < 0 ||
            (rc = rd_field_int(&min, wg, "minReplicas", 0, 0, INT32_MAX, c->docs, c->err)) < 0 ||
            (rc = rd_field_int(&max, wg, "maxReplicas", INT32_MAX, 0, INT32_MAX, c->docs, c->err)) <
                0 ||
            (rc = rd_field_int(&hosts, wg, "numOfHosts", 1, 0, INT32_MAX, c->docs, c->err)) < 0 ||
            (rc = rd_field_bool(&wsuspend, wg, "suspend", 0, c->docs, c->err)) < 0 ||
            (rc = template_spec(c, wg, "template", &wspec)) < 0)
            return rc;
        if (!name || !*name)
            return rd_err_at(c->err, RC_EINVALID, c->docs, wg, "worker group has no groupName");
        if (min > max)
            return rd_err_at(c->err, RC_EINVALID, c->docs, wg,
                             "worker group '%s': minReplicas %lld is greater than maxReplicas "
                             "%lld",
                             name, (long long)min, (long long)max);
        /* KubeRay's reconciler: clamp to [min, max]; each replica is numOfHosts pods (an
         * old CRD without the field reads 0, which KubeRay treats as 1) */
        if (replicas < min)
            replicas = min;
        else if (replicas > max)
            replicas = max;
        if (hosts < 1)
            hosts = 1;
        if ((rc = add_pod(c, rc_arena_printf(c->a, "worker %s", name),
                          (suspend || wsuspend) ? 0 : replicas * hosts, wspec, NULL, wg)) < 0)
            return rc;
    }
    return RC_OK;
}

static int ray_job(struct dctx *c, const cJSON *spec)
{
    const cJSON *rcs, *sel, *stmpl;
    const char *mode = NULL;
    struct pl_res sub;
    int suspend, has_sel, rc;

    if ((rc = rd_field_bool(&suspend, spec, "suspend", 0, c->docs, c->err)) < 0 ||
        (rc = rd_field_str(&mode, spec, "submissionMode", "K8sJobMode", c->docs, c->a, c->err)) <
            0 ||
        (rc = rd_field_obj(&rcs, spec, "rayClusterSpec", 0, c->docs, c->err)) < 0 ||
        (rc = rd_field_obj(&sel, spec, "clusterSelector", 0, c->docs, c->err)) < 0 ||
        (rc = rd_field_obj(&stmpl, spec, "submitterPodTemplate", 0, c->docs, c->err)) < 0)
        return rc;
    if (strcmp(mode, "K8sJobMode") && strcmp(mode, "HTTPMode") && strcmp(mode, "InteractiveMode") &&
        strcmp(mode, "SidecarMode"))
        return rd_err_at(c->err, RC_EINVALID, c->docs, rd_field_get(spec, "submissionMode"),
                         "unknown submissionMode '%s' (want K8sJobMode, HTTPMode, "
                         "InteractiveMode, SidecarMode)",
                         mode);
    has_sel = cJSON_GetArraySize(sel) > 0;
    if (!has_sel && !rcs)
        return rd_err_at(c->err, RC_EINVALID, c->docs, spec,
                         "RayJob needs 'rayClusterSpec' or 'clusterSelector'");
    if (has_sel && !strcmp(mode, "SidecarMode"))
        return rd_err_at(c->err, RC_EINVALID, c->docs, sel,
                         "RayJob with a clusterSelector cannot use SidecarMode");
    if (suspend) /* no RayCluster and no submitter while suspended */
        return RC_OK;
    submitter_default(&sub);
    if (!has_sel) { /* with a clusterSelector the job runs on an existing RayCluster */
        if ((rc = ray_cluster(c, rcs, !strcmp(mode, "SidecarMode") ? &sub : NULL)) < 0)
            return rc;
    }
    if (strcmp(mode, "K8sJobMode"))
        return RC_OK;
    if (stmpl) { /* the Job's pod is the template as given */
        const cJSON *sspec;
        if ((rc = rd_field_obj(&sspec, stmpl, "spec", 1, c->docs, c->err)) < 0)
            return rc;
        return add_pod(c, "submitter", 1, sspec, NULL, stmpl);
    }
    {
        struct pl_pod *p = new_pod(c);
        p->role = "submitter";
        p->count = 1;
        p->req = sub;
    }
    return RC_OK;
}

static int ray_service(struct dctx *c, const cJSON *spec)
{
    const cJSON *rcc;
    int suspend, rc;

    if ((rc = rd_field_bool(&suspend, spec, "suspend", 0, c->docs, c->err)) < 0 ||
        (rc = rd_field_obj(&rcc, spec, "rayClusterConfig", 1, c->docs, c->err)) < 0)
        return rc;
    if (suspend)
        return RC_OK;
    return ray_cluster(c, rcc, NULL);
}

/* ==== AI kinds: LeaderWorkerSet, KServe, Kubeflow training ==== */

/* LeaderWorkerSet (leaderworkerset.x-k8s.io): spec.replicas groups (default 1) of
 * leaderWorkerTemplate.size pods (default 1): one leader (leaderTemplate, else the worker
 * template) and size - 1 workers. Divide shares spec.replicas (whole groups). */
static int lws(struct dctx *c, struct pl_object *obj, const cJSON *spec)
{
    const cJSON *lwt, *wspec, *lspec = NULL;
    int64_t replicas, size;
    int rc;

    if ((rc = rd_field_int(&replicas, spec, "replicas", 1, 0, INT32_MAX, c->docs, c->err)) < 0 ||
        (rc = rd_field_obj(&lwt, spec, "leaderWorkerTemplate", 1, c->docs, c->err)) < 0 ||
        (rc = rd_field_int(&size, lwt, "size", 1, 1, INT32_MAX, c->docs, c->err)) < 0 ||
        (rc = template_spec(c, lwt, "workerTemplate", &wspec)) < 0)
        return rc;
    if (rd_field_get(lwt, "leaderTemplate") &&
        (rc = template_spec(c, lwt, "leaderTemplate", &lspec)) < 0)
        return rc;
    obj->replicas = replicas;
    obj->split = PL_SPLIT_REPLICAS;
    if ((rc = add_pod(c, "leader", replicas, lspec ? lspec : wspec, NULL, lwt)) < 0)
        return rc;
    return add_pod(c, "worker", replicas * (size - 1), wspec, NULL, lwt);
}

/* The keys of a KServe component that are a container: `model` and the framework shorthands
 * (each is a container spec with resources). */
static const char *const kserve_models[] = {"model",    "sklearn", "xgboost",    "tensorflow",
                                            "pytorch",  "triton",  "onnx",       "pmml",
                                            "lightgbm", "paddle",  "huggingface"};

static void ref_item(cJSON *to, const char *key, const cJSON *item)
{
    if (item && !cJSON_AddItemReferenceToObject(to, key, (cJSON *)item))
        abort(); /* out of memory: see rc_mem.h */
}

/* One KServe component (predictor, transformer, explainer): its pod spec is the component
 * itself (containers, nodeSelector, tolerations, affinity, ...) plus the model container.
 * Pods: minReplicas (default 1); a component that may scale to zero still needs room for
 * one pod to serve at all, so it counts as 1. */
static int isvc_component(struct dctx *c, const char *role, const cJSON *comp)
{
    static const char *const podkeys[] = {"nodeSelector",     "tolerations",       "affinity",
                                          "initContainers",   "overhead",          "volumes",
                                          "imagePullSecrets", "serviceAccountName"};
    const cJSON *ctrs, *it;
    cJSON *pod, *list;
    int64_t min;
    size_t n = 0;
    int rc;

    if (!cJSON_IsObject(comp))
        return rd_err_at(c->err, RC_EINVALID, c->docs, comp, "%s must be a mapping", role);
    if ((rc = rd_field_int(&min, comp, "minReplicas", 1, 0, INT32_MAX, c->docs, c->err)) < 0 ||
        (rc = rd_field_list(&ctrs, comp, "containers", 0, c->docs, c->err)) < 0)
        return rc;
    if (min < 1)
        min = 1;
    pod = cJSON_CreateObject();
    list = cJSON_CreateArray();
    if (!pod || !list || !cJSON_AddItemToObject(pod, "containers", list))
        abort();
    cJSON_ArrayForEach(it, ctrs)
    {
        if (!cJSON_AddItemReferenceToArray(list, (cJSON *)it))
            abort();
        n++;
    }
    for (size_t i = 0; i < sizeof(kserve_models) / sizeof(kserve_models[0]); i++) {
        const cJSON *m = rd_field_get(comp, kserve_models[i]);
        if (!cJSON_IsObject(m))
            continue;
        if (!cJSON_AddItemReferenceToArray(list, (cJSON *)m))
            abort();
        n++;
    }
    /* the component's own `resources` are the model container's, not pod-level ones */
    for (size_t i = 0; i < sizeof(podkeys) / sizeof(podkeys[0]); i++)
        ref_item(pod, podkeys[i], rd_field_get(comp, podkeys[i]));
    if (n == 0)
        rc = rd_err_at(c->err, RC_EINVALID, c->docs, comp,
                       "InferenceService %s has no model and no containers", role);
    else
        rc = add_pod(c, role, min, pod, NULL, comp);
    cJSON_Delete(pod);
    return rc;
}

/* KServe InferenceService (serving.kserve.io): predictor (required), transformer, explainer. */
static int isvc(struct dctx *c, const cJSON *spec)
{
    static const char *const parts[] = {"predictor", "transformer", "explainer"};
    int rc;

    if (!rd_field_get(spec, "predictor"))
        return rd_err_at(c->err, RC_EINVALID, c->docs, spec, "InferenceService has no predictor");
    for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
        const cJSON *comp = rd_field_get(spec, parts[i]);
        if (comp && (rc = isvc_component(c, parts[i], comp)) < 0)
            return rc;
    }
    return RC_OK;
}

/* The <x>ReplicaSpecs mapping of a Kubeflow training job (pytorchReplicaSpecs,
 * tfReplicaSpecs, mpiReplicaSpecs, xgbReplicaSpecs, paddleReplicaSpecs, jaxReplicaSpecs). */
static const cJSON *replica_specs(const cJSON *spec)
{
    const cJSON *it;
    static const char suffix[] = "ReplicaSpecs";

    if (!cJSON_IsObject(spec))
        return NULL;
    cJSON_ArrayForEach(it, spec)
    {
        size_t n = strlen(it->string);
        if (n > sizeof(suffix) - 1 && !strcmp(it->string + n - (sizeof(suffix) - 1), suffix))
            return it;
    }
    return NULL;
}

/* Kubeflow training jobs (kubeflow.org: PyTorchJob, TFJob, MPIJob, XGBoostJob, PaddleJob,
 * JAXJob): every replica type's replicas (default 1) x its template; runPolicy.suspend: none. */
static int kubeflow_job(struct dctx *c, const cJSON *spec)
{
    const cJSON *rs = replica_specs(spec), *run, *it;
    int suspend, rc;

    if (!rs)
        return rd_err_at(c->err, RC_EINVALID, c->docs, spec,
                         "training job has no <framework>ReplicaSpecs (e.g. pytorchReplicaSpecs)");
    if (!cJSON_IsObject(rs))
        return rd_err_at(c->err, RC_EINVALID, c->docs, rs, "field '%s' must be a mapping",
                         rs->string);
    if ((rc = rd_field_obj(&run, spec, "runPolicy", 0, c->docs, c->err)) < 0 ||
        (rc = rd_field_bool(&suspend, run, "suspend", 0, c->docs, c->err)) < 0)
        return rc;
    cJSON_ArrayForEach(it, rs)
    {
        const cJSON *pspec;
        int64_t replicas;
        if (!cJSON_IsObject(it))
            return rd_err_at(c->err, RC_EINVALID, c->docs, it, "replica spec must be a mapping");
        if ((rc = rd_field_int(&replicas, it, "replicas", 1, 0, INT32_MAX, c->docs, c->err)) < 0 ||
            (rc = template_spec(c, it, "template", &pspec)) < 0 ||
            (rc = add_pod(c, it->string, suspend ? 0 : replicas, pspec, NULL, it)) < 0)
            return rc;
    }
    return RC_OK;
}

/* Kubeflow Trainer TrainJob (trainer.kubeflow.org): trainer.numNodes pods (default 1) asking
 * trainer.resourcesPerNode; the rest of the pod comes from its runtime, which is not read
 * (its nodeSelector and tolerations are not modelled). suspend: none. */
static int train_job(struct dctx *c, const cJSON *spec)
{
    const cJSON *trainer;
    cJSON *pod, *list, *ctr;
    int64_t nodes;
    int suspend, rc;

    if ((rc = rd_field_bool(&suspend, spec, "suspend", 0, c->docs, c->err)) < 0 ||
        (rc = rd_field_obj(&trainer, spec, "trainer", 0, c->docs, c->err)) < 0 ||
        (rc = rd_field_int(&nodes, trainer, "numNodes", 1, 0, INT32_MAX, c->docs, c->err)) < 0)
        return rc;
    pod = cJSON_CreateObject();
    list = cJSON_CreateArray();
    ctr = cJSON_CreateObject();
    if (!pod || !list || !ctr || !cJSON_AddItemToObject(pod, "containers", list) ||
        !cJSON_AddItemToArray(list, ctr))
        abort();
    ref_item(ctr, "resources", rd_field_get(trainer, "resourcesPerNode"));
    rc = add_pod(c, "node", suspend ? 0 : nodes, pod, NULL, trainer ? trainer : spec);
    cJSON_Delete(pod);
    return rc;
}

/* ==== Kinds declared by annotation ==== */

#define RD_POD_TEMPLATES_ANNOTATION "rightplace.dev/pod-templates"

/* Follow a path like "spec.workers[1].template" from root; NULL when it leads nowhere. */
static cJSON *follow(cJSON *root, const char *path, size_t len)
{
    cJSON *cur = root;
    size_t i = 0;

    while (cur && i < len) {
        if (path[i] == '.') {
            i++;
            continue;
        }
        if (path[i] == '[') {
            int64_t idx = 0;
            i++;
            if (i >= len || path[i] < '0' || path[i] > '9')
                return NULL;
            while (i < len && path[i] >= '0' && path[i] <= '9' && idx < INT32_MAX)
                idx = idx * 10 + (path[i++] - '0');
            if (i >= len || path[i] != ']' || !cJSON_IsArray(cur))
                return NULL;
            i++;
            cur = cJSON_GetArrayItem(cur, (int)idx);
            continue;
        }
        {
            size_t j = i;
            char key[256];
            while (j < len && path[j] != '.' && path[j] != '[')
                j++;
            if (j - i >= sizeof(key) || !cJSON_IsObject(cur))
                return NULL;
            memcpy(key, path + i, j - i);
            key[j - i] = 0;
            cur = cJSON_GetObjectItemCaseSensitive(cur, key);
            i = j;
        }
    }
    return cur;
}

static const char *annotation(const cJSON *root, const char *key)
{
    const cJSON *v = rd_field_get(rd_field_get(rd_field_get(root, "metadata"), "annotations"), key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* One entry "<template path>[=<replicas path or integer>]" of the annotation. */
struct decl {
    const char *path;
    size_t len;
    const char *rep; /* NULL: 1 */
    size_t replen;
};

/* Split the annotation into entries (at most max); returns the count, or -1 on bad syntax. */
static long decl_parse(const char *v, struct decl *out, size_t max)
{
    size_t n = 0;
    const char *p = v;

    while (*p) {
        const char *end, *eq;
        while (*p == ' ' || *p == ',')
            p++;
        if (!*p)
            break;
        end = p;
        while (*end && *end != ',')
            end++;
        if (n == max)
            return -1;
        eq = memchr(p, '=', (size_t)(end - p));
        out[n].path = p;
        out[n].len = (size_t)((eq ? eq : end) - p);
        out[n].rep = eq ? eq + 1 : NULL;
        out[n].replen = eq ? (size_t)(end - eq - 1) : 0;
        while (out[n].len && out[n].path[out[n].len - 1] == ' ')
            out[n].len--;
        while (out[n].rep && out[n].replen && *out[n].rep == ' ') {
            out[n].rep++;
            out[n].replen--;
        }
        while (out[n].rep && out[n].replen && out[n].rep[out[n].replen - 1] == ' ')
            out[n].replen--;
        if (!out[n].len || (out[n].rep && !out[n].replen))
            return -1;
        n++;
        p = end;
    }
    return (long)n;
}

/* The pod spec a declared template path leads to: a PodTemplateSpec's spec, or a PodSpec. */
static cJSON *decl_spec(cJSON *t)
{
    cJSON *spec = cJSON_IsObject(t) ? cJSON_GetObjectItemCaseSensitive(t, "spec") : NULL;

    if (cJSON_IsObject(spec) && cJSON_GetObjectItemCaseSensitive(spec, "containers"))
        return spec;
    if (cJSON_IsObject(t) && cJSON_GetObjectItemCaseSensitive(t, "containers"))
        return t;
    return NULL;
}

#define RD_MAX_DECL 16

/* A kind declared with metadata.annotations["rightplace.dev/pod-templates"]:
 * "spec.template=spec.replicas, spec.launcher.template=1" (see rd_demand.h). */
static int declared(struct dctx *c, const cJSON *root, const char *value)
{
    struct decl d[RD_MAX_DECL];
    const cJSON *where = rd_field_get(rd_field_get(rd_field_get(root, "metadata"), "annotations"),
                                      RD_POD_TEMPLATES_ANNOTATION);
    long n = decl_parse(value, d, RD_MAX_DECL);
    int rc;

    if (n <= 0)
        return rd_err_at(c->err, RC_EINVALID, c->docs, where,
                         "annotation %s must list up to %d '<template path>[=<replicas path or "
                         "number>]' entries, comma-separated",
                         RD_POD_TEMPLATES_ANNOTATION, RD_MAX_DECL);
    for (long i = 0; i < n; i++) {
        const char *path = rc_arena_strndup(c->a, d[i].path, d[i].len);
        cJSON *spec = decl_spec(follow((cJSON *)root, d[i].path, d[i].len));
        int64_t count = 1;

        if (!spec)
            return rd_err_at(c->err, RC_EINVALID, c->docs, where,
                             "annotation %s: '%s' is not a pod template (a mapping with "
                             "spec.containers, or with containers)",
                             RD_POD_TEMPLATES_ANNOTATION, path);
        if (d[i].rep) {
            const char *rep = rc_arena_strndup(c->a, d[i].rep, d[i].replen);
            char *endp = NULL;
            long long lit = strtoll(rep, &endp, 10);
            if (endp && !*endp && lit >= 0 && lit <= INT32_MAX) {
                count = lit;
            } else {
                const cJSON *r = follow((cJSON *)root, d[i].rep, d[i].replen);
                if (r && (!cJSON_IsNumber(r) || r->valuedouble < 0 || r->valuedouble > INT32_MAX ||
                          r->valuedouble != (double)(int64_t)r->valuedouble))
                    return rd_err_at(c->err, RC_EINVALID, c->docs, r,
                                     "annotation %s: '%s' must be a whole number from 0 to %d",
                                     RD_POD_TEMPLATES_ANNOTATION, rep, INT32_MAX);
                count = r ? (int64_t)r->valuedouble : 1; /* absent: 1, as a replicas default */
            }
        }
        if ((rc = add_pod(c, path, count, spec, NULL, where)) < 0)
            return rc;
    }
    return RC_OK;
}

/* ==== Kinds rightplace does not know ==== */

/* Kinds that hold pod templates but make no pods themselves. */
static int templates_only(const char *api_version, const char *kind)
{
    static const char *const kinds[][2] = {{"", "PodTemplate"},
                                           {"apps", "ControllerRevision"},
                                           {"serving.kserve.io", "ServingRuntime"},
                                           {"serving.kserve.io", "ClusterServingRuntime"},
                                           {"trainer.kubeflow.org", "TrainingRuntime"},
                                           {"trainer.kubeflow.org", "ClusterTrainingRuntime"}};
    const char *slash = strchr(api_version, '/');
    size_t glen = slash ? (size_t)(slash - api_version) : 0;

    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
        if (strlen(kinds[i][0]) == glen && !strncmp(api_version, kinds[i][0], glen) &&
            !strcmp(kind, kinds[i][1]))
            return 1;
    }
    return 0;
}

/* Where (a path like "spec.template") a pod spec sits in n: a mapping whose `containers`
 * is a sequence of mappings. Depth-limited; the first in document order. */
static int find_pod_spec(const cJSON *n, int depth, char *path, size_t cap, size_t len)
{
    const cJSON *it;
    const cJSON *ctrs =
        cJSON_IsObject(n) ? cJSON_GetObjectItemCaseSensitive(n, "containers") : NULL;

    if (cJSON_IsArray(ctrs) && cJSON_IsObject(ctrs->child))
        return 1;
    if (depth == 0 || (!cJSON_IsObject(n) && !cJSON_IsArray(n)))
        return 0;
    for (it = n->child; it; it = it->next) {
        int w = cJSON_IsObject(n)
                    ? snprintf(path + len, cap - len, "%s%s", len ? "." : "", it->string)
                    : snprintf(path + len, cap - len, "[]");
        if (w < 0 || (size_t)w >= cap - len)
            continue;
        if (find_pod_spec(it, depth - 1, path, cap, len + (size_t)w))
            return 1;
        path[len] = 0;
    }
    return 0;
}

/* The API group of an apiVersion: "" for "v1", "apps" for "apps/v1". */
static int group_is(const char *api_version, const char *group)
{
    const char *slash = strchr(api_version, '/');
    size_t n = slash ? (size_t)(slash - api_version) : 0;

    return strlen(group) == n && !strncmp(api_version, group, n);
}

enum kind {
    K_NONE,
    K_POD,
    K_REPLICATED,
    K_DAEMONSET,
    K_JOB,
    K_CRONJOB,
    K_RAYCLUSTER,
    K_RAYJOB,
    K_RAYSERVICE,
    K_LWS,
    K_ISVC,
    K_KUBEFLOW,
    K_TRAINJOB
};

static enum kind kind_of(const cJSON *root)
{
    const cJSON *k = rd_field_get(root, "kind"), *v = rd_field_get(root, "apiVersion");
    const char *kind, *av;

    if (!cJSON_IsString(k) || !cJSON_IsString(v))
        return K_NONE;
    kind = k->valuestring;
    av = v->valuestring;
    if (group_is(av, "")) {
        if (!strcmp(kind, "Pod"))
            return K_POD;
        if (!strcmp(kind, "ReplicationController"))
            return K_REPLICATED;
    } else if (group_is(av, "apps")) {
        if (!strcmp(kind, "Deployment") || !strcmp(kind, "ReplicaSet") ||
            !strcmp(kind, "StatefulSet"))
            return K_REPLICATED;
        if (!strcmp(kind, "DaemonSet"))
            return K_DAEMONSET;
    } else if (group_is(av, "batch")) {
        if (!strcmp(kind, "Job"))
            return K_JOB;
        if (!strcmp(kind, "CronJob"))
            return K_CRONJOB;
    } else if (group_is(av, "ray.io")) {
        if (!strcmp(kind, "RayCluster"))
            return K_RAYCLUSTER;
        if (!strcmp(kind, "RayJob"))
            return K_RAYJOB;
        if (!strcmp(kind, "RayService"))
            return K_RAYSERVICE;
    } else if (group_is(av, "leaderworkerset.x-k8s.io")) {
        if (!strcmp(kind, "LeaderWorkerSet"))
            return K_LWS;
    } else if (group_is(av, "serving.kserve.io")) {
        if (!strcmp(kind, "InferenceService"))
            return K_ISVC;
    } else if (group_is(av, "kubeflow.org")) {
        static const char *const jobs[] = {"PyTorchJob", "TFJob",     "MPIJob",
                                           "XGBoostJob", "PaddleJob", "JAXJob"};
        for (size_t i = 0; i < sizeof(jobs) / sizeof(jobs[0]); i++) {
            if (!strcmp(kind, jobs[i]))
                return K_KUBEFLOW;
        }
    } else if (group_is(av, "trainer.kubeflow.org")) {
        if (!strcmp(kind, "TrainJob"))
            return K_TRAINJOB;
    }
    return K_NONE;
}

int rd_demand_extract(struct pl_object *obj, const cJSON *root, const struct rd_docs *docs,
                      struct pl_resnames *res, struct rc_arena *a, struct rc_err *err)
{
    struct dctx c = {docs, res, a, err, 0, 0, NULL, obj->ns, 0, 0, NULL};
    const cJSON *spec = NULL, *jt = NULL, *jspec = NULL;
    const char *decl = annotation(root, RD_POD_TEMPLATES_ANNOTATION);
    enum kind k = kind_of(root);
    int rc = RC_OK;

    obj->npods = 0;
    obj->pods = NULL;
    obj->replicas = -1;
    obj->parallelism = -1;
    obj->completions = -1;
    /* how Divide shares it: whole on one cluster unless a kind says otherwise below */
    obj->split = k == K_NONE || k == K_DAEMONSET ? PL_SPLIT_COPY : PL_SPLIT_WHOLE;
    obj->warning = NULL;
    obj->nrefs = 0;
    obj->refs = NULL;
    obj->nova_cluster = annotation(root, PL_ANNOTATION_CLUSTER);
    obj->nova_spread_onto = annotation(root, PL_ANNOTATION_SPREAD_ONTO);
    if (obj->nova_cluster)
        obj->nova_cluster = rc_arena_strdup(a, obj->nova_cluster);
    if (obj->nova_spread_onto)
        obj->nova_spread_onto = rc_arena_strdup(a, obj->nova_spread_onto);
    if (decl) { /* the annotation wins over what rightplace knows of the kind */
        obj->split = PL_SPLIT_WHOLE;
        if ((rc = declared(&c, root, decl)) < 0)
            return rc;
        obj->npods = c.npods;
        obj->pods = c.pods;
        obj->nrefs = refs_finish(&c);
        obj->refs = c.refs;
        return RC_OK;
    }
    if (k == K_NONE) {
        const cJSON *kind = rd_field_get(root, "kind"), *av = rd_field_get(root, "apiVersion");
        char path[256] = "";
        if (cJSON_IsString(kind) && cJSON_IsString(av) &&
            !templates_only(av->valuestring, kind->valuestring) &&
            find_pod_spec(root, 8, path, sizeof(path), 0))
            obj->warning = rc_arena_printf(
                a,
                "%s '%s' (%s) has a pod spec at %s, but rightplace does not know how many pods "
                "it makes: counted as none. Declare them with the annotation %s "
                "(docs/formats.md)",
                kind->valuestring, obj->key ? obj->key : "", av->valuestring,
                path[0] ? path : "the top", RD_POD_TEMPLATES_ANNOTATION);
        return RC_OK;
    }
    if (k == K_DAEMONSET)
        return RC_OK;
    if (k != K_REPLICATED && (rc = rd_field_obj(&spec, root, "spec", 1, docs, err)) < 0)
        return rc;
    switch (k) {
    case K_POD:
        rc = add_pod(&c, "pod", 1, spec, NULL, root);
        break;
    case K_REPLICATED:
        rc = replicated(&c, obj, root);
        break;
    case K_JOB:
        rc = job(&c, obj, spec);
        break;
    case K_CRONJOB: {
        int suspend;
        if ((rc = rd_field_bool(&suspend, spec, "suspend", 0, docs, err)) < 0 ||
            (rc = rd_field_obj(&jt, spec, "jobTemplate", 1, docs, err)) < 0 ||
            (rc = rd_field_obj(&jspec, jt, "spec", 1, docs, err)) < 0 ||
            (rc = job(&c, obj, jspec)) < 0)
            break;
        obj->split = PL_SPLIT_WHOLE; /* each run is one Job: nothing to share */
        if (suspend)                 /* a suspended CronJob starts no Jobs */
            c.npods = 0;
        break;
    }
    case K_RAYCLUSTER:
        rc = ray_cluster(&c, spec, NULL);
        break;
    case K_RAYJOB:
        rc = ray_job(&c, spec);
        break;
    case K_RAYSERVICE:
        rc = ray_service(&c, spec);
        break;
    case K_LWS:
        rc = lws(&c, obj, spec);
        break;
    case K_ISVC:
        rc = isvc(&c, spec);
        break;
    case K_KUBEFLOW:
        rc = kubeflow_job(&c, spec);
        break;
    case K_TRAINJOB:
        rc = train_job(&c, spec);
        break;
    default:
        break;
    }
    if (rc < 0)
        return rc;
    obj->npods = c.npods;
    obj->pods = c.pods;
    obj->nrefs = refs_finish(&c);
    obj->refs = c.refs;
    return RC_OK;
}

/* ==== Pod templates ==== */

static void push(cJSON *t, cJSON **out, size_t max, size_t *n)
{
    if (!cJSON_IsObject(t))
        return;
    if (*n < max)
        out[*n] = t;
    (*n)++;
}

static cJSON *member(cJSON *o, const char *key)
{
    return cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, key) : NULL;
}

static void cluster_templates(cJSON *cs, cJSON **out, size_t max, size_t *n)
{
    cJSON *wg, *groups = member(cs, "workerGroupSpecs");

    push(member(member(cs, "headGroupSpec"), "template"), out, max, n);
    if (!cJSON_IsArray(groups))
        groups = NULL;
    cJSON_ArrayForEach(wg, groups)
    {
        push(member(wg, "template"), out, max, n);
    }
}

size_t rd_pod_templates(cJSON *root, cJSON **out, size_t max)
{
    cJSON *spec = member(root, "spec"), *it;
    const char *decl = annotation(root, RD_POD_TEMPLATES_ANNOTATION);
    size_t n = 0;

    if (decl) {
        struct decl d[RD_MAX_DECL];
        long nd = decl_parse(decl, d, RD_MAX_DECL);
        for (long i = 0; i < nd; i++) {
            cJSON *t = follow(root, d[i].path, d[i].len);
            cJSON *ts = member(t, "spec");
            if (cJSON_IsObject(ts) && member(ts, "containers")) /* a PodTemplateSpec */
                push(t, out, max, &n);
        }
        return n;
    }
    switch (kind_of(root)) {
    case K_POD:
        push(root, out, max, &n);
        break;
    case K_REPLICATED:
    case K_DAEMONSET:
    case K_JOB:
        push(member(spec, "template"), out, max, &n);
        break;
    case K_CRONJOB:
        push(member(member(member(spec, "jobTemplate"), "spec"), "template"), out, max, &n);
        break;
    case K_RAYCLUSTER:
        cluster_templates(spec, out, max, &n);
        break;
    case K_RAYJOB:
        cluster_templates(member(spec, "rayClusterSpec"), out, max, &n);
        push(member(spec, "submitterPodTemplate"), out, max, &n);
        break;
    case K_RAYSERVICE:
        cluster_templates(member(spec, "rayClusterConfig"), out, max, &n);
        break;
    case K_LWS:
        push(member(member(spec, "leaderWorkerTemplate"), "leaderTemplate"), out, max, &n);
        push(member(member(spec, "leaderWorkerTemplate"), "workerTemplate"), out, max, &n);
        break;
    case K_KUBEFLOW:
        it = (cJSON *)replica_specs(spec);
        if (!cJSON_IsObject(it))
            break;
        for (it = it->child; it; it = it->next)
            push(member(it, "template"), out, max, &n);
        break;
    default:
        break;
    }
    return n;
}

size_t rd_pod_components(cJSON *root, cJSON **out, size_t max)
{
    static const char *const parts[] = {"predictor", "transformer", "explainer"};
    cJSON *spec = member(root, "spec");
    size_t n = 0;

    if (annotation(root, RD_POD_TEMPLATES_ANNOTATION) || kind_of(root) != K_ISVC)
        return 0;
    for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
        push(member(spec, parts[i]), out, max, &n);
    return n;
}
