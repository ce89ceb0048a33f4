/*
 * test_rd_demand.c - workload demand: pods, effective requests, constraints, KubeRay rules.
 *
 * Small manifests are written as JSON with single quotes (turned into double quotes before
 * cJSON_Parse) to keep them readable; the skyray files are loaded through rd_yaml.
 */
#include "th.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pl_basics.h"
#include "rc_arena.h"
#include "rc_buf.h"
#include "rd_demand.h"
#include "rd_yaml.h"
#include "th_inputs.h"

#define MI INT64_C(1048576000)   /* 1Mi in milli-units */
#define G INT64_C(1000000000000) /* 1G in milli-units */

struct fx {
    struct rc_arena a;
    struct pl_resnames res;
    struct pl_object obj;
    struct rc_err err;
    cJSON *root;
    struct rd_docs *docs;
};

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));
    pl_resnames_init(&f->res);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    cJSON_Delete(f->root);
    rd_docs_free(f->docs);
    rc_arena_release(&f->a);
    free(f);
    return 0;
}

/* Parse single-quoted JSON and extract demand; returns the rc. */
static int extract(struct fx *f, const char *sq_json)
{
    char *s = strdup(sq_json);
    for (char *p = s; *p; p++) {
        if (*p == '\'')
            *p = '"';
    }
    cJSON_Delete(f->root);
    f->root = cJSON_Parse(s);
    free(s);
    assert_non_null(f->root);
    memset(&f->obj, 0, sizeof(f->obj));
    rc_err_clear(&f->err);
    return rd_demand_extract(&f->obj, f->root, NULL, &f->res, &f->a, &f->err);
}

/* Load YAML text (named `file`) and extract the demand of the document of kind `kind`. */
static int extract_yaml(struct fx *f, const char *file, const char *text, const char *kind)
{
    const struct rd_yaml_limits lim = RD_YAML_LIMITS_INIT;
    cJSON *root = NULL;

    rd_docs_free(f->docs);
    f->docs = NULL;
    assert_int_equal(rd_yaml_load(&f->docs, file, text, strlen(text), &lim, NULL, &f->err), RC_OK);
    for (size_t i = 0; i < rd_docs_count(f->docs); i++) {
        cJSON *d = rd_docs_get(f->docs, i);
        if (!strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(d, "kind")), kind))
            root = d;
    }
    assert_non_null(root);
    memset(&f->obj, 0, sizeof(f->obj));
    rc_err_clear(&f->err);
    return rd_demand_extract(&f->obj, root, f->docs, &f->res, &f->a, &f->err);
}

static int extract_file(struct fx *f, const char *relpath, const char *const *vars,
                        const char *kind)
{
    char *raw = th_inputs_read(relpath, NULL);
    char *text = th_inputs_subst(raw, vars);
    int rc = extract_yaml(f, relpath, text, kind);

    free(raw);
    free(text);
    return rc;
}

static int64_t req(struct fx *f, size_t pod, const char *name)
{
    int i = pl_resnames_find(&f->res, name);
    assert_true(pod < f->obj.npods);
    return i < 0 ? 0 : f->obj.pods[pod].req.v[i];
}

#define POD(spec) "{'apiVersion':'v1','kind':'Pod','metadata':{'name':'p'},'spec':" spec "}"

static void test_rd_demand__limits_only_container(void **state)
{
    struct fx *f = *state;

    assert_int_equal(
        extract(f, POD("{'containers':[{'name':'a','resources':{'limits':{'cpu':'2',"
                       "'memory':'1Gi','nvidia.com/gpu':1},'requests':{'cpu':'500m'}}}]}")),
        RC_OK);
    assert_int_equal(f->obj.npods, 1);
    assert_string_equal(f->obj.pods[0].role, "pod");
    assert_int_equal(f->obj.pods[0].count, 1);
    assert_int_equal(f->obj.replicas, -1);
    assert_int_equal(req(f, 0, "cpu"), 500);             /* request wins */
    assert_int_equal(req(f, 0, "memory"), 1024 * MI);    /* limit where no request */
    assert_int_equal(req(f, 0, "nvidia.com/gpu"), 1000); /* extended, like cpu */
    assert_int_equal(req(f, 0, "pods"), 0);
}

static void test_rd_demand__containers_summed_init_by_max(void **state)
{
    struct fx *f = *state;

    /* containers: 1 + 0.5 cpu; init containers 2 and 1 cpu: max(1.5, 2) = 2.
     * memory: containers 100Mi + 100Mi, init 150Mi: 200Mi */
    assert_int_equal(
        extract(f, POD("{'containers':["
                       "{'name':'a','resources':{'requests':{'cpu':1,'memory':'100Mi'}}},"
                       "{'name':'b','resources':{'requests':{'cpu':0.5,'memory':'100Mi'}}}],"
                       "'initContainers':["
                       "{'name':'i1','resources':{'requests':{'cpu':'2','memory':'150Mi'}}},"
                       "{'name':'i2','resources':{'limits':{'cpu':'1'}}}]}")),
        RC_OK);
    assert_int_equal(req(f, 0, "cpu"), 2000);
    assert_int_equal(req(f, 0, "memory"), 200 * MI);
}

static void test_rd_demand__sidecars_follow_the_scheduler(void **state)
{
    struct fx *f = *state;

    /* sidecar s (1 cpu) before init i (2 cpu), container 1 cpu:
     * sum = 1 + 1 = 2; i needs 2 + 1 = 3 -> 3 */
    assert_int_equal(
        extract(f, POD("{'containers':[{'name':'c','resources':{'requests':{'cpu':'1'}}}],"
                       "'initContainers':["
                       "{'name':'s','restartPolicy':'Always','resources':{'requests':{'cpu':'1'}}},"
                       "{'name':'i','resources':{'requests':{'cpu':'2'}}}]}")),
        RC_OK);
    assert_int_equal(req(f, 0, "cpu"), 3000);
    /* the same sidecar after the init container: i needs 2, sum 2 -> 2 */
    assert_int_equal(
        extract(f, POD("{'containers':[{'name':'c','resources':{'requests':{'cpu':'1'}}}],"
                       "'initContainers':["
                       "{'name':'i','resources':{'requests':{'cpu':'2'}}},"
                       "{'name':'s','restartPolicy':'Always','resources':{'requests':{'cpu':'1'}}}"
                       "]}")),
        RC_OK);
    assert_int_equal(req(f, 0, "cpu"), 2000);
    /* a sidecar alone counts with the containers: 1 + 3 */
    assert_int_equal(
        extract(f, POD("{'containers':[{'name':'c','resources':{'requests':{'cpu':'1'}}}],"
                       "'initContainers':[{'name':'s','restartPolicy':'Always',"
                       "'resources':{'requests':{'cpu':'3'}}}]}")),
        RC_OK);
    assert_int_equal(req(f, 0, "cpu"), 4000);
    assert_int_equal(extract(f, POD("{'containers':[{'name':'c'}],'initContainers':[{'name':'s',"
                                    "'restartPolicy':'OnFailure'}]}")),
                     RC_EINVALID);
    assert_non_null(strstr(f->err.msg, "restartPolicy"));
}

static void test_rd_demand__overhead_and_pod_level_resources(void **state)
{
    struct fx *f = *state;

    assert_int_equal(
        extract(f, POD("{'containers':[{'name':'c','resources':{'requests':{'cpu':'1',"
                       "'memory':'1Gi'}}}],'overhead':{'cpu':'250m','memory':'120Mi'}}")),
        RC_OK);
    assert_int_equal(req(f, 0, "cpu"), 1250);
    assert_int_equal(req(f, 0, "memory"), 1144 * MI);
    assert_int_equal(extract(f, POD("{'containers':[{'name':'c','resources':{'requests':{'cpu':'1',"
                                    "'memory':'1Gi'}}}],'resources':{'requests':{'cpu':'3'}}}")),
                     RC_OK);
    assert_int_equal(req(f, 0, "cpu"), 3000);
    assert_int_equal(req(f, 0, "memory"), 1024 * MI);
}

static void test_rd_demand__number_quantities_are_exact(void **state)
{
    struct fx *f = *state;

    assert_int_equal(extract(f, POD("{'containers':[{'name':'c','resources':{'requests':{'cpu':0.1,"
                                    "'memory':1e9,'example.com/foo':3}}}]}")),
                     RC_OK);
    assert_int_equal(req(f, 0, "cpu"), 100); /* not 101m */
    assert_int_equal(req(f, 0, "memory"), INT64_C(1000000000000));
    assert_int_equal(req(f, 0, "example.com/foo"), 3000);
}

static void test_rd_demand__bad_quantities_are_errors(void **state)
{
    struct fx *f = *state;

    assert_int_equal(
        extract(f, POD("{'containers':[{'name':'c','resources':{'requests':{'cpu':'-1'}}}]}")),
        RC_EINVALID);
    assert_non_null(strstr(f->err.msg, "negative"));
    assert_int_equal(
        extract(f, POD("{'containers':[{'name':'c','resources':{'requests':{'cpu':-0.5}}}]}")),
        RC_EINVALID);
    assert_int_equal(
        extract(f, POD("{'containers':[{'name':'c','resources':{'limits':{'memory':'10Qi'}}}]}")),
        RC_EINVALID);
    assert_non_null(strstr(f->err.msg, "10Qi"));
    assert_int_equal(
        extract(f, POD("{'containers':[{'name':'c','resources':{'limits':{'memory':true}}}]}")),
        RC_EINVALID);
    assert_non_null(strstr(f->err.msg, "memory"));
    assert_int_equal(
        extract(f, POD("{'containers':[{'name':'c','resources':{'requests':{'cpu':'2'},"
                       "'limits':{'cpu':'1'}}}]}")),
        RC_EINVALID);
    assert_non_null(strstr(f->err.msg, "greater than its limit"));
    assert_int_equal(extract(f, POD("{'containers':[]}")), RC_EINVALID);
    assert_non_null(strstr(f->err.msg, "no containers"));
    assert_int_equal(
        extract(f, POD("{'containers':[{'name':'c','resources':{'requests':{'pods':'1'}}}]}")),
        RC_EINVALID);
}

static void test_rd_demand__too_many_resource_names(void **state)
{
    struct fx *f = *state;
    char buf[4096];
    size_t n = 0;

    /* 20 extended names: more than the table holds */
    n = (size_t)snprintf(buf, sizeof(buf),
                         "{'apiVersion':'v1','kind':'Pod','spec':{'containers':[{'name':'c',"
                         "'resources':{'requests':{");
    for (int i = 0; i < 20; i++)
        n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s'example.com/r%d':1", i ? "," : "", i);
    snprintf(buf + n, sizeof(buf) - n, "}}}]}}");
    assert_int_equal(extract(f, buf), RC_EINVALID);
    assert_non_null(strstr(f->err.msg, "too many distinct resource names"));
}

static void test_rd_demand__constraints(void **state)
{
    struct fx *f = *state;
    const struct pl_pod *p;

    assert_int_equal(
        extract(f,
                POD("{'containers':[{'name':'c'}],'nodeSelector':{'zone':'a','disk':'ssd'},"
                    "'tolerations':[{'key':'nvidia.com/gpu','operator':'Exists','effect':"
                    "'NoSchedule'},{'key':'k','value':'v'},{'operator':'Exists'}],"
                    "'affinity':{'nodeAffinity':{'requiredDuringSchedulingIgnoredDuringExecution':"
                    "{'nodeSelectorTerms':[{'matchExpressions':[{'key':'gpu','operator':'In',"
                    "'values':['a100','h100']},{'key':'cores','operator':'Gt','values':['8']}]},"
                    "{'matchExpressions':[{'key':'spot','operator':'DoesNotExist'}]},"
                    "{}]}}}}")),
        RC_OK);
    p = &f->obj.pods[0];
    assert_int_equal(p->node_selector.n, 2);
    assert_string_equal(p->node_selector.v[0].key, "disk"); /* sorted */
    assert_string_equal(pl_labels_get(&p->node_selector, "zone"), "a");
    assert_int_equal(p->ntolerations, 3);
    assert_true(p->tolerations[0].exists);
    assert_string_equal(p->tolerations[0].key, "nvidia.com/gpu");
    assert_string_equal(p->tolerations[0].effect, "NoSchedule");
    assert_false(p->tolerations[1].exists);
    assert_string_equal(p->tolerations[1].value, "v");
    assert_string_equal(p->tolerations[1].effect, "");
    assert_string_equal(p->tolerations[2].key, "");
    assert_true(p->tolerations[2].exists);
    assert_int_equal(p->naffinity, 2); /* the empty term matches nothing: dropped */
    assert_int_equal(p->affinity[0].n, 2);
    assert_int_equal(p->affinity[0].req[0].op, PL_OP_IN);
    assert_int_equal(p->affinity[0].req[0].nvalues, 2);
    assert_string_equal(p->affinity[0].req[0].values[1], "h100");
    assert_int_equal(p->affinity[0].req[1].op, PL_OP_GT);
    assert_int_equal(p->affinity[1].req[0].op, PL_OP_DOESNOTEXIST);

    /* only empty terms: a pod no node can take */
    assert_int_equal(
        extract(f, POD("{'containers':[{'name':'c'}],'affinity':{'nodeAffinity':{"
                       "'requiredDuringSchedulingIgnoredDuringExecution':{'nodeSelectorTerms':"
                       "[{'matchExpressions':[]}]}}}}")),
        RC_OK);
    assert_int_equal(f->obj.pods[0].naffinity, 1);
    assert_int_equal(f->obj.pods[0].affinity[0].n, 2);

    assert_int_equal(extract(f, POD("{'containers':[{'name':'c'}],'tolerations':[{'key':'k',"
                                    "'operator':'Exists','value':'v'}]}")),
                     RC_EINVALID);
    assert_int_equal(extract(f, POD("{'containers':[{'name':'c'}],'tolerations':[{'key':'k',"
                                    "'operator':'Maybe'}]}")),
                     RC_EINVALID);
    assert_non_null(strstr(f->err.msg, "'Maybe'"));
    assert_int_equal(extract(f, POD("{'containers':[{'name':'c'}],'tolerations':[{'key':'a b',"
                                    "'operator':'Exists'}]}")),
                     RC_EINVALID);
    assert_non_null(strstr(f->err.msg, "'a b'"));
    assert_int_equal(extract(f, POD("{'containers':[{'name':'c'}],'nodeSelector':{'a':1}}")),
                     RC_EINVALID);
    assert_int_equal(
        extract(f, POD("{'containers':[{'name':'c'}],'affinity':{'nodeAffinity':{"
                       "'requiredDuringSchedulingIgnoredDuringExecution':{'nodeSelectorTerms':"
                       "[{'matchExpressions':[{'key':'a','operator':'Near'}]}]}}}}")),
        RC_EINVALID);
    assert_non_null(strstr(f->err.msg, "'Near'"));
}

#define CTR(cpu) "{'containers':[{'name':'c','resources':{'requests':{'cpu':'" cpu "'}}}]}"

static void test_rd_demand__deployment_replicas(void **state)
{
    struct fx *f = *state;

    assert_int_equal(extract(f, "{'apiVersion':'apps/v1','kind':'Deployment','spec':{"
                                "'replicas':3,'template':{'spec':" CTR("250m") "}}}"),
                     RC_OK);
    assert_int_equal(f->obj.npods, 1);
    assert_int_equal(f->obj.pods[0].count, 3);
    assert_int_equal(f->obj.replicas, 3);
    assert_int_equal(req(f, 0, "cpu"), 250);
    /* default 1 */
    assert_int_equal(extract(f, "{'apiVersion':'apps/v1','kind':'StatefulSet','spec':{"
                                "'template':{'spec':" CTR("1") "}}}"),
                     RC_OK);
    assert_int_equal(f->obj.pods[0].count, 1);
    assert_int_equal(f->obj.replicas, 1);
    /* zero replicas: no pods, still checked */
    assert_int_equal(extract(f, "{'apiVersion':'apps/v1','kind':'ReplicaSet','spec':{"
                                "'replicas':0,'template':{'spec':" CTR("1") "}}}"),
                     RC_OK);
    assert_int_equal(f->obj.npods, 0);
    assert_int_equal(f->obj.replicas, 0);
    assert_int_equal(extract(f, "{'apiVersion':'apps/v1','kind':'ReplicaSet','spec':{"
                                "'replicas':0,'template':{'spec':" CTR("1.5.5Gi") "}}}"),
                     RC_EINVALID);
    assert_int_equal(extract(f, "{'apiVersion':'apps/v1','kind':'Deployment','spec':{"
                                "'replicas':-1,'template':{'spec':" CTR("1") "}}}"),
                     RC_EINVALID);
    assert_int_equal(extract(f, "{'apiVersion':'apps/v1','kind':'Deployment','spec':{"
                                "'replicas':'2','template':{'spec':" CTR("1") "}}}"),
                     RC_EINVALID);
    assert_non_null(strstr(f->err.msg, "'replicas'"));
    /* same kind name in another group: not a pod controller */
    assert_int_equal(extract(f, "{'apiVersion':'example.com/v1','kind':'Deployment','spec':{"
                                "'replicas':3}}"),
                     RC_OK);
    assert_int_equal(f->obj.npods, 0);
    assert_int_equal(f->obj.replicas, -1);
}

static void test_rd_demand__job_parallelism_and_completions(void **state)
{
    struct fx *f = *state;

    assert_int_equal(extract(f, "{'apiVersion':'batch/v1','kind':'Job','spec':{"
                                "'template':{'spec':" CTR("1") "}}}"),
                     RC_OK);
    assert_int_equal(f->obj.pods[0].count, 1);
    assert_int_equal(f->obj.replicas, -1);
    assert_int_equal(extract(f, "{'apiVersion':'batch/v1','kind':'Job','spec':{'parallelism':5,"
                                "'template':{'spec':" CTR("1") "}}}"),
                     RC_OK);
    assert_int_equal(f->obj.pods[0].count, 5);
    assert_int_equal(extract(f, "{'apiVersion':'batch/v1','kind':'Job','spec':{'parallelism':5,"
                                "'completions':2,'template':{'spec':" CTR("1") "}}}"),
                     RC_OK);
    assert_int_equal(f->obj.pods[0].count, 2);
    assert_int_equal(extract(f, "{'apiVersion':'batch/v1','kind':'Job','spec':{'parallelism':2,"
                                "'completions':9,'template':{'spec':" CTR("1") "}}}"),
                     RC_OK);
    assert_int_equal(f->obj.pods[0].count, 2);
    assert_int_equal(extract(f, "{'apiVersion':'batch/v1','kind':'Job','spec':{'suspend':true,"
                                "'template':{'spec':" CTR("1") "}}}"),
                     RC_OK);
    assert_int_equal(f->obj.npods, 0);
    /* CronJob: one job's worth */
    assert_int_equal(extract(f, "{'apiVersion':'batch/v1','kind':'CronJob','spec':{"
                                "'schedule':'* * * * *','jobTemplate':{'spec':{'parallelism':3,"
                                "'template':{'spec':" CTR("2") "}}}}}"),
                     RC_OK);
    assert_int_equal(f->obj.npods, 1);
    assert_int_equal(f->obj.pods[0].count, 3);
    assert_int_equal(req(f, 0, "cpu"), 2000);
    assert_int_equal(extract(f, "{'apiVersion':'batch/v1','kind':'CronJob','spec':{"
                                "'suspend':true,'jobTemplate':{'spec':{"
                                "'template':{'spec':" CTR("2") "}}}}}"),
                     RC_OK);
    assert_int_equal(f->obj.npods, 0);
}

static void test_rd_demand__zero_demand_kinds(void **state)
{
    struct fx *f = *state;

    assert_int_equal(extract(f, "{'apiVersion':'apps/v1','kind':'DaemonSet','spec':{"
                                "'template':{'spec':" CTR("1") "}}}"),
                     RC_OK);
    assert_int_equal(f->obj.npods, 0);
    assert_int_equal(extract(f, "{'apiVersion':'v1','kind':'ConfigMap','data':{'a':'b'}}"), RC_OK);
    assert_int_equal(f->obj.npods, 0);
    assert_int_equal(extract(f, "{'apiVersion':'v1','kind':'Namespace','metadata':{'name':'x'}}"),
                     RC_OK);
    assert_int_equal(f->obj.npods, 0);
    assert_int_equal(f->obj.replicas, -1);
}

/* A RayCluster spec: head 1 cpu, one worker group with the given fields and 2 cpu. */
#define RAYSPEC(top, wg)                                                                           \
    "{" top "'headGroupSpec':{'rayStartParams':{'num-cpus':'64'},'template':{'spec':" CTR(         \
        "1") "}},'workerGroupSpecs':[{'groupName':'g'," wg "'rayStartParams':{'num-gpus':'8'},"    \
             "'template':{'spec':" CTR("2") "}}]}"
#define RAYCLUSTER(top, wg)                                                                        \
    "{'apiVersion':'ray.io/v1','kind':'RayCluster','spec':" RAYSPEC(top, wg) "}"

static uint32_t workers(struct fx *f)
{
    for (size_t i = 0; i < f->obj.npods; i++) {
        if (!strcmp(f->obj.pods[i].role, "worker g"))
            return f->obj.pods[i].count;
    }
    return 0;
}

static void test_rd_demand__ray_worker_clamping(void **state)
{
    struct fx *f = *state;

    /* CRD defaults: replicas 0, min 0 -> no workers; head only */
    assert_int_equal(extract(f, RAYCLUSTER("", "")), RC_OK);
    assert_int_equal(f->obj.npods, 1);
    assert_string_equal(f->obj.pods[0].role, "head");
    assert_int_equal(req(f, 0, "cpu"), 1000); /* rayStartParams never count */
    assert_int_equal(workers(f), 0);
    assert_int_equal(extract(f, RAYCLUSTER("", "'minReplicas':2,")), RC_OK);
    assert_int_equal(workers(f), 2);
    assert_int_equal(extract(f, RAYCLUSTER("", "'replicas':1,'minReplicas':3,'maxReplicas':5,")),
                     RC_OK);
    assert_int_equal(workers(f), 3);
    assert_int_equal(extract(f, RAYCLUSTER("", "'replicas':9,'minReplicas':3,'maxReplicas':5,")),
                     RC_OK);
    assert_int_equal(workers(f), 5);
    assert_int_equal(extract(f, RAYCLUSTER("", "'replicas':4,'minReplicas':1,")), RC_OK);
    assert_int_equal(workers(f), 4);
    assert_int_equal(req(f, 1, "cpu"), 2000);
    assert_int_equal(extract(f, RAYCLUSTER("", "'replicas':1,'minReplicas':3,'maxReplicas':2,")),
                     RC_EINVALID);
    assert_non_null(strstr(f->err.msg, "minReplicas"));
}

static void test_rd_demand__ray_num_of_hosts(void **state)
{
    struct fx *f = *state;

    assert_int_equal(extract(f, RAYCLUSTER("", "'replicas':2,'numOfHosts':4,")), RC_OK);
    assert_int_equal(workers(f), 8);
    assert_int_equal(extract(f, RAYCLUSTER("", "'replicas':2,'numOfHosts':0,")), RC_OK);
    assert_int_equal(workers(f), 2); /* 0 is an old CRD's missing field: 1 */
}

static void test_rd_demand__ray_suspend(void **state)
{
    struct fx *f = *state;

    assert_int_equal(extract(f, RAYCLUSTER("'suspend':true,", "'replicas':2,")), RC_OK);
    assert_int_equal(f->obj.npods, 0);
    assert_int_equal(extract(f, RAYCLUSTER("", "'replicas':2,'suspend':true,")), RC_OK);
    assert_int_equal(f->obj.npods, 1); /* head stays */
    assert_int_equal(
        extract(f, "{'apiVersion':'ray.io/v1','kind':'RayService','spec':{"
                   "'suspend':true,'rayClusterConfig':" RAYSPEC("", "'replicas':2,") "}}"),
        RC_OK);
    assert_int_equal(f->obj.npods, 0);
    assert_int_equal(extract(f, "{'apiVersion':'ray.io/v1','kind':'RayJob','spec':{"
                                "'suspend':true,'shutdownAfterJobFinishes':true,"
                                "'rayClusterSpec':" RAYSPEC("", "'replicas':2,") "}}"),
                     RC_OK);
    assert_int_equal(f->obj.npods, 0); /* no submitter either */
}

static void test_rd_demand__ray_autoscaler_sidecar(void **state)
{
    struct fx *f = *state;

    assert_int_equal(extract(f, RAYCLUSTER("'enableInTreeAutoscaling':true,", "")), RC_OK);
    assert_int_equal(req(f, 0, "cpu"), 1500);
    assert_int_equal(req(f, 0, "memory"), 512 * MI);
    assert_int_equal(
        extract(f, RAYCLUSTER("'enableInTreeAutoscaling':true,'autoscalerOptions':{'resources':{"
                              "'limits':{'cpu':'1','memory':'1Gi'}}},",
                              "")),
        RC_OK);
    assert_int_equal(req(f, 0, "cpu"), 2000);
    assert_int_equal(req(f, 0, "memory"), 1024 * MI);
    assert_int_equal(extract(f, RAYCLUSTER("'enableInTreeAutoscaling':false,", "")), RC_OK);
    assert_int_equal(req(f, 0, "cpu"), 1000);
}

static void test_rd_demand__rayjob_submission_modes(void **state)
{
    struct fx *f = *state;

    /* default K8sJobMode: head, workers, submitter 500m/200Mi */
    assert_int_equal(extract(f, "{'apiVersion':'ray.io/v1','kind':'RayJob','spec':{"
                                "'rayClusterSpec':" RAYSPEC("", "'replicas':2,") "}}"),
                     RC_OK);
    assert_int_equal(f->obj.npods, 3);
    assert_string_equal(f->obj.pods[2].role, "submitter");
    assert_int_equal(f->obj.pods[2].count, 1);
    assert_int_equal(req(f, 2, "cpu"), 500);
    assert_int_equal(req(f, 2, "memory"), 200 * MI);
    /* HTTPMode and InteractiveMode: no submitter */
    assert_int_equal(extract(f, "{'apiVersion':'ray.io/v1','kind':'RayJob','spec':{"
                                "'submissionMode':'HTTPMode',"
                                "'rayClusterSpec':" RAYSPEC("", "'replicas':2,") "}}"),
                     RC_OK);
    assert_int_equal(f->obj.npods, 2);
    assert_int_equal(extract(f, "{'apiVersion':'ray.io/v1','kind':'RayJob','spec':{"
                                "'submissionMode':'InteractiveMode',"
                                "'rayClusterSpec':" RAYSPEC("", "'replicas':2,") "}}"),
                     RC_OK);
    assert_int_equal(f->obj.npods, 2);
    /* SidecarMode: the submitter container joins the head */
    assert_int_equal(extract(f, "{'apiVersion':'ray.io/v1','kind':'RayJob','spec':{"
                                "'submissionMode':'SidecarMode',"
                                "'rayClusterSpec':" RAYSPEC("", "'replicas':2,") "}}"),
                     RC_OK);
    assert_int_equal(f->obj.npods, 2);
    assert_string_equal(f->obj.pods[0].role, "head");
    assert_int_equal(req(f, 0, "cpu"), 1500);
    assert_int_equal(req(f, 0, "memory"), 200 * MI);
    /* a custom submitter template is the submitter pod */
    assert_int_equal(extract(f,
                             "{'apiVersion':'ray.io/v1','kind':'RayJob','spec':{"
                             "'submitterPodTemplate':{'spec':{'restartPolicy':'Never',"
                             "'nodeSelector':{'pool':'cpu'},"
                             "'containers':[{'name':'s','resources':{'requests':{'cpu':'2'}}}]}},"
                             "'rayClusterSpec':" RAYSPEC("", "") "}}"),
                     RC_OK);
    assert_int_equal(f->obj.npods, 2);
    assert_string_equal(f->obj.pods[1].role, "submitter");
    assert_int_equal(req(f, 1, "cpu"), 2000);
    assert_string_equal(pl_labels_get(&f->obj.pods[1].node_selector, "pool"), "cpu");
    assert_int_equal(extract(f, "{'apiVersion':'ray.io/v1','kind':'RayJob','spec':{"
                                "'submissionMode':'ShellMode',"
                                "'rayClusterSpec':" RAYSPEC("", "") "}}"),
                     RC_EINVALID);
    assert_non_null(strstr(f->err.msg, "'ShellMode'"));
}

static void test_rd_demand__rayjob_cluster_selector(void **state)
{
    struct fx *f = *state;

    assert_int_equal(extract(f, "{'apiVersion':'ray.io/v1','kind':'RayJob','spec':{"
                                "'clusterSelector':{'ray.io/cluster':'shared'}}}"),
                     RC_OK);
    assert_int_equal(f->obj.npods, 1);
    assert_string_equal(f->obj.pods[0].role, "submitter");
    assert_int_equal(extract(f, "{'apiVersion':'ray.io/v1','kind':'RayJob','spec':{"
                                "'submissionMode':'HTTPMode',"
                                "'clusterSelector':{'ray.io/cluster':'shared'}}}"),
                     RC_OK);
    assert_int_equal(f->obj.npods, 0);
    assert_int_equal(extract(f, "{'apiVersion':'ray.io/v1','kind':'RayJob','spec':{"
                                "'submissionMode':'SidecarMode',"
                                "'clusterSelector':{'ray.io/cluster':'shared'}}}"),
                     RC_EINVALID);
    assert_int_equal(extract(f, "{'apiVersion':'ray.io/v1','kind':'RayJob','spec':{"
                                "'entrypoint':'python x.py'}}"),
                     RC_EINVALID);
    assert_non_null(strstr(f->err.msg, "rayClusterSpec"));
}

static void test_rd_demand__leaderworkerset(void **state)
{
    struct fx *f = *state;
    cJSON *t[8];

    /* no leaderTemplate: the leader uses the worker template; 3 groups of 4 */
    assert_int_equal(extract(f, "{'apiVersion':'leaderworkerset.x-k8s.io/v1','kind':"
                                "'LeaderWorkerSet','spec':{'replicas':3,'leaderWorkerTemplate':{"
                                "'size':4,'workerTemplate':{'spec':" CTR("2") "}}}}"),
                     RC_OK);
    assert_int_equal(f->obj.npods, 2);
    assert_string_equal(f->obj.pods[0].role, "leader");
    assert_int_equal(f->obj.pods[0].count, 3);
    assert_int_equal(f->obj.pods[1].count, 9);
    assert_int_equal(req(f, 1, "cpu"), 2000);
    assert_int_equal(f->obj.replicas, 3);
    assert_int_equal(f->obj.split, PL_SPLIT_REPLICAS);
    assert_int_equal(rd_pod_templates(f->root, t, 8), 1);
    /* size 0 is refused */
    assert_int_equal(extract(f, "{'apiVersion':'leaderworkerset.x-k8s.io/v1','kind':"
                                "'LeaderWorkerSet','spec':{'leaderWorkerTemplate':{"
                                "'size':0,'workerTemplate':{'spec':" CTR("2") "}}}}"),
                     RC_EINVALID);
}

static void test_rd_demand__inference_service(void **state)
{
    struct fx *f = *state;

    /* minReplicas 0 still needs room for one pod; framework shorthand is the container */
    assert_int_equal(extract(f, "{'apiVersion':'serving.kserve.io/v1beta1','kind':"
                                "'InferenceService','spec':{'predictor':{'minReplicas':0,"
                                "'nodeSelector':{'gpu':'a100'},'sklearn':{'storageUri':'gs://x',"
                                "'resources':{'limits':{'cpu':'3','nvidia.com/gpu':'1'}}}}}}"),
                     RC_OK);
    assert_int_equal(f->obj.npods, 1);
    assert_int_equal(f->obj.pods[0].count, 1);
    assert_int_equal(req(f, 0, "cpu"), 3000);
    assert_int_equal(req(f, 0, "nvidia.com/gpu"), 1000);
    assert_int_equal(f->obj.pods[0].node_selector.n, 1);
    assert_int_equal(f->obj.split, PL_SPLIT_WHOLE);
    assert_int_equal(extract(f, "{'apiVersion':'serving.kserve.io/v1beta1','kind':"
                                "'InferenceService','spec':{'predictor':{'minReplicas':1}}}"),
                     RC_EINVALID);
    assert_non_null(strstr(f->err.msg, "no model and no containers"));
}

static void test_rd_demand__training_jobs(void **state)
{
    struct fx *f = *state;
    cJSON *t[8];

    assert_int_equal(
        extract(f, "{'apiVersion':'kubeflow.org/v2beta1','kind':'MPIJob','spec':{"
                   "'mpiReplicaSpecs':{'Launcher':{'template':{'spec':" CTR(
                       "1") "}},"
                            "'Worker':{'replicas':2,'template':{'spec':" CTR("4") "}}}}}"),
        RC_OK);
    assert_int_equal(f->obj.npods, 2);
    assert_string_equal(f->obj.pods[0].role, "Launcher");
    assert_int_equal(f->obj.pods[0].count, 1); /* replicas default 1 */
    assert_int_equal(f->obj.pods[1].count, 2);
    assert_int_equal(rd_pod_templates(f->root, t, 8), 2);
    assert_int_equal(extract(f, "{'apiVersion':'trainer.kubeflow.org/v1alpha1','kind':"
                                "'TrainJob','spec':{'trainer':{'numNodes':3,'resourcesPerNode':{"
                                "'limits':{'nvidia.com/gpu':'2'}}}}}"),
                     RC_OK);
    assert_int_equal(f->obj.npods, 1);
    assert_int_equal(f->obj.pods[0].count, 3);
    assert_int_equal(req(f, 0, "nvidia.com/gpu"), 2000);
}

static void test_rd_demand__jobs_divide_kind(void **state)
{
    struct fx *f = *state;

    assert_int_equal(extract(f, "{'apiVersion':'batch/v1','kind':'Job','spec':{'completions':10,"
                                "'parallelism':4,'template':{'spec':" CTR("1") "}}}"),
                     RC_OK);
    assert_int_equal(f->obj.split, PL_SPLIT_JOB);
    assert_int_equal(f->obj.parallelism, 4);
    assert_int_equal(f->obj.completions, 10);
    assert_int_equal(extract(f, "{'apiVersion':'batch/v1','kind':'Job','spec':{'completions':4,"
                                "'completionMode':'Indexed','template':{'spec':" CTR("1") "}}}"),
                     RC_OK);
    assert_int_equal(f->obj.split, PL_SPLIT_WHOLE);
    assert_int_equal(extract(f, "{'apiVersion':'v1','kind':'ConfigMap','data':{}}"), RC_OK);
    assert_int_equal(f->obj.split, PL_SPLIT_COPY);
}

static void test_rd_demand__declared_pod_templates(void **state)
{
    struct fx *f = *state;
    cJSON *t[8];

    assert_int_equal(
        extract(f,
                "{'apiVersion':'x.io/v1','kind':'Thing','metadata':{'annotations':{"
                "'rightplace.dev/pod-templates':'spec.main.template=spec.main.count, "
                "spec.side[1]=2, spec.other.template=spec.missing'}},'spec':{'main':{"
                "'count':5,'template':{'spec':" CTR(
                    "1") "}},'side':[{},{'containers':[{"
                         "'name':'s','resources':{'requests':{'cpu':'3'}}}]}],'other':{'template':{"
                         "'spec':" CTR("7") "}}}}"),
        RC_OK);
    assert_int_equal(f->obj.npods, 3);
    assert_string_equal(f->obj.pods[0].role, "spec.main.template");
    assert_int_equal(f->obj.pods[0].count, 5);
    assert_int_equal(f->obj.pods[1].count, 2);
    assert_int_equal(req(f, 1, "cpu"), 3000);
    assert_int_equal(f->obj.pods[2].count, 1); /* a replicas path that is absent: 1 */
    assert_null(f->obj.warning);
    /* only PodTemplateSpecs get labels (spec.side[1] is a bare PodSpec) */
    assert_int_equal(rd_pod_templates(f->root, t, 8), 2);
    /* a path that is not a pod template, a bad count */
    assert_int_equal(extract(f, "{'apiVersion':'x.io/v1','kind':'Thing','metadata':{"
                                "'annotations':{'rightplace.dev/pod-templates':'spec.nope'}},"
                                "'spec':{}}"),
                     RC_EINVALID);
    assert_non_null(strstr(f->err.msg, "'spec.nope' is not a pod template"));
    assert_int_equal(extract(f, "{'apiVersion':'x.io/v1','kind':'Thing','metadata':{"
                                "'annotations':{'rightplace.dev/pod-templates':'spec.t=spec.n'}},"
                                "'spec':{'n':'many','t':{'spec':" CTR("1") "}}}"),
                     RC_EINVALID);
    assert_int_equal(extract(f, "{'apiVersion':'x.io/v1','kind':'Thing','metadata':{"
                                "'annotations':{'rightplace.dev/pod-templates':' , '}}}"),
                     RC_EINVALID);
    /* undeclared: a warning that names where the pod spec is */
    assert_int_equal(extract(f, "{'apiVersion':'x.io/v1','kind':'Thing','spec':{'jobs':[{"
                                "'template':{'spec':" CTR("1") "}}]}}"),
                     RC_OK);
    assert_int_equal(f->obj.npods, 0);
    assert_non_null(f->obj.warning);
    assert_non_null(strstr(f->obj.warning, "spec.jobs[].template.spec"));
    /* a kind that only holds templates is not warned about */
    assert_int_equal(
        extract(f, "{'apiVersion':'v1','kind':'PodTemplate','template':{'spec':" CTR("1") "}}"),
        RC_OK);
    assert_null(f->obj.warning);
}

static void test_rd_demand__references(void **state)
{
    struct fx *f = *state;

    assert_int_equal(
        extract(f, "{'apiVersion':'apps/v1','kind':'Deployment','metadata':{'namespace':'ns'},"
                   "'spec':{'template':{'spec':{'serviceAccountName':'sa',"
                   "'imagePullSecrets':[{'name':'pull'}],"
                   "'initContainers':[{'name':'i','envFrom':[{'secretRef':{'name':'s1'}}]}],"
                   "'containers':[{'name':'c','env':[{'name':'A','valueFrom':{'configMapKeyRef':"
                   "{'name':'cm','key':'k','optional':true}}}],'envFrom':[{'configMapRef':{"
                   "'name':'cm'}}]}],'volumes':[{'name':'v','persistentVolumeClaim':{"
                   "'claimName':'pvc'}},{'name':'p','projected':{'sources':[{'secret':{"
                   "'name':'s2','optional':true}}]}}]}}}}"),
        RC_OK);
    assert_int_equal(f->obj.nrefs, 0); /* extract() leaves obj.ns NULL: cluster-scoped */
    f->obj.ns = "ns";
    assert_int_equal(rd_demand_extract(&f->obj, f->root, NULL, &f->res, &f->a, &f->err), RC_OK);
    assert_int_equal(f->obj.nrefs, 6);
    assert_string_equal(f->obj.refs[0].key, "ns/ConfigMap/cm");
    assert_int_equal(f->obj.refs[0].optional, 0); /* required by envFrom */
    assert_string_equal(f->obj.refs[1].key, "ns/PersistentVolumeClaim/pvc");
    assert_string_equal(f->obj.refs[2].key, "ns/Secret/pull");
    assert_string_equal(f->obj.refs[3].key, "ns/Secret/s1");
    assert_string_equal(f->obj.refs[4].key, "ns/Secret/s2");
    assert_int_equal(f->obj.refs[4].optional, 1);
    assert_string_equal(f->obj.refs[5].key, "ns/ServiceAccount/sa");
}

static void test_rd_demand__pod_templates(void **state)
{
    struct fx *f = *state;
    cJSON *t[8];

    assert_int_equal(extract(f, POD("{'containers':[{'name':'c'}]}")), RC_OK);
    assert_int_equal(rd_pod_templates(f->root, t, 8), 1);
    assert_ptr_equal(t[0], f->root);
    assert_int_equal(extract(f, "{'apiVersion':'ray.io/v1','kind':'RayJob','spec':{"
                                "'submitterPodTemplate':{'spec':{'containers':[{'name':'s'}]}},"
                                "'rayClusterSpec':" RAYSPEC("", "") "}}"),
                     RC_OK);
    assert_int_equal(rd_pod_templates(f->root, t, 8), 3);
    assert_ptr_equal(
        t[0], cJSON_GetObjectItem(
                  cJSON_GetObjectItem(
                      cJSON_GetObjectItem(cJSON_GetObjectItem(f->root, "spec"), "rayClusterSpec"),
                      "headGroupSpec"),
                  "template"));
    assert_ptr_equal(
        t[2], cJSON_GetObjectItem(cJSON_GetObjectItem(f->root, "spec"), "submitterPodTemplate"));
    assert_int_equal(rd_pod_templates(f->root, t, 1), 3); /* counts past max */
    assert_int_equal(extract(f, "{'apiVersion':'batch/v1','kind':'CronJob','spec':{"
                                "'jobTemplate':{'spec':{'template':{'spec':" CTR("1") "}}}}}"),
                     RC_OK);
    assert_int_equal(rd_pod_templates(f->root, t, 8), 1);
    assert_non_null(cJSON_GetObjectItem(t[0], "spec"));
    assert_int_equal(extract(f, "{'apiVersion':'apps/v1','kind':'DaemonSet','spec':{"
                                "'template':{'spec':" CTR("1") "}}}"),
                     RC_OK);
    assert_int_equal(rd_pod_templates(f->root, t, 8), 1);
    assert_int_equal(extract(f, "{'apiVersion':'v1','kind':'ConfigMap'}"), RC_OK);
    assert_int_equal(rd_pod_templates(f->root, t, 8), 0);
}

static const struct pl_pod *role(struct fx *f, const char *r)
{
    for (size_t i = 0; i < f->obj.npods; i++) {
        if (!strcmp(f->obj.pods[i].role, r))
            return &f->obj.pods[i];
    }
    fail_msg("no pod with role '%s'", r);
    return NULL;
}

static int64_t rreq(struct fx *f, const struct pl_pod *p, const char *name)
{
    int i = pl_resnames_find(&f->res, name);
    return i < 0 ? 0 : p->req.v[i];
}

static void test_rd_demand__skyray_rayjob_train(void **state)
{
    struct fx *f = *state;
    static const char *const vars[] = {"AWS_ACCESS_KEY_ID=x", "AWS_SECRET_ACCESS_KEY=y", NULL};
    const struct pl_pod *head, *worker, *sub;

    assert_int_equal(
        extract_file(f, "tests/data/skyray/deploy-scripts/ray-job.train.yaml", vars, "RayJob"),
        RC_OK);
    assert_int_equal(f->obj.npods, 3);
    assert_int_equal(f->obj.replicas, -1);
    head = role(f, "head");
    assert_int_equal(head->count, 1);
    assert_int_equal(rreq(f, head, "cpu"), 4000);
    assert_int_equal(rreq(f, head, "memory"), 12 * G);
    assert_int_equal(rreq(f, head, "nvidia.com/gpu"), 0);
    assert_int_equal(head->ntolerations, 0);
    worker = role(f, "worker small-group");
    assert_int_equal(worker->count, 2); /* clamp(2, 1, 300) */
    assert_int_equal(rreq(f, worker, "cpu"), 4000);
    assert_int_equal(rreq(f, worker, "memory"), 12 * G);
    assert_int_equal(rreq(f, worker, "nvidia.com/gpu"), 1000);
    assert_int_equal(worker->ntolerations, 1);
    assert_string_equal(worker->tolerations[0].key, "nvidia.com/gpu");
    assert_true(worker->tolerations[0].exists);
    assert_string_equal(worker->tolerations[0].effect, "NoSchedule");
    sub = role(f, "submitter");
    assert_int_equal(sub->count, 1);
    assert_int_equal(rreq(f, sub, "cpu"), 500);
    assert_int_equal(rreq(f, sub, "memory"), 200 * MI);
    /* the ConfigMap riding along asks for nothing */
    assert_int_equal(
        extract_file(f, "tests/data/skyray/deploy-scripts/ray-job.train.yaml", vars, "ConfigMap"),
        RC_OK);
    assert_int_equal(f->obj.npods, 0);
}

static void test_rd_demand__skyray_text_summarizer(void **state)
{
    struct fx *f = *state;
    const struct pl_pod *head, *worker;

    assert_int_equal(
        extract_file(f, "tests/data/skyray/deploy-scripts/ray-service.text-summarizer.yaml", NULL,
                     "RayService"),
        RC_OK);
    assert_int_equal(f->obj.npods, 2);
    head = role(f, "head");
    assert_int_equal(head->count, 1);
    assert_int_equal(rreq(f, head, "cpu"), 2000);
    assert_int_equal(rreq(f, head, "memory"), 8 * G);
    worker = role(f, "worker gpu-group");
    assert_int_equal(worker->count, 1);
    assert_int_equal(rreq(f, worker, "cpu"), 3000); /* YAML integer 3, request below limit 4 */
    assert_int_equal(rreq(f, worker, "memory"), 12 * G);
    assert_int_equal(rreq(f, worker, "nvidia.com/gpu"), 1000);
    assert_int_equal(worker->ntolerations, 1);
}

static void test_rd_demand__supernova_autoscaler_sidecar(void **state)
{
    struct fx *f = *state;
    static const char *const vars[] = {"RAY_HEAD_CPU_COUNT=2",
                                       "RAY_HEAD_MEMORY_SIZE=8Gi",
                                       "NUM_REPLICAS=3",
                                       "MIN_REPLICAS=1",
                                       "MAX_REPLICAS=2",
                                       "RAY_WORKER_CPU_COUNT=1500m",
                                       "RAY_WORKER_MEMORY_SIZE=4Gi",
                                       NULL};
    const struct pl_pod *head, *worker;

    assert_int_equal(extract_file(f,
                                  "tests/data/skyray/supernova-examples/"
                                  "ray-cluster.text-summarizer.cpu.snova.1.3.2.yaml",
                                  vars, "RayCluster"),
                     RC_OK);
    head = role(f, "head");
    /* 2 cpu + the autoscaler sidecar from autoscalerOptions.resources (500m / 512Mi) */
    assert_int_equal(rreq(f, head, "cpu"), 2500);
    assert_int_equal(rreq(f, head, "memory"), 8192 * MI + 512 * MI);
    worker = role(f, "worker cpu-group");
    assert_int_equal(worker->count, 2); /* replicas 3 clamped to maxReplicas 2 */
    assert_int_equal(rreq(f, worker, "cpu"), 1500);
    assert_int_equal(rreq(f, worker, "memory"), 4096 * MI);
}

static void test_rd_demand__errors_name_file_line_col(void **state)
{
    struct fx *f = *state;

    assert_int_equal(extract_yaml(f, "apps/web.yaml",
                                  "apiVersion: apps/v1\n"
                                  "kind: Deployment\n"
                                  "metadata: {name: web}\n"
                                  "spec:\n"
                                  "  template:\n"
                                  "    spec:\n"
                                  "      containers:\n"
                                  "      - name: c\n"
                                  "        resources:\n"
                                  "          requests: {cpu: 1.5.5Gi}\n",
                                  "Deployment"),
                     RC_EINVALID);
    assert_non_null(strstr(f->err.msg, "apps/web.yaml:10:"));
    assert_non_null(strstr(f->err.msg, "1.5.5Gi"));
    assert_int_equal(extract_yaml(f, "apps/web.yaml",
                                  "apiVersion: apps/v1\n"
                                  "kind: Deployment\n"
                                  "metadata: {name: web}\n"
                                  "spec:\n"
                                  "  replicas: two\n"
                                  "  template: {spec: {containers: [{name: c}]}}\n",
                                  "Deployment"),
                     RC_EINVALID);
    assert_non_null(strstr(f->err.msg, "apps/web.yaml:5:13: "));
    assert_int_equal(extract_yaml(f, "ray.yaml",
                                  "apiVersion: ray.io/v1\n"
                                  "kind: RayCluster\n"
                                  "metadata: {name: r}\n"
                                  "spec:\n"
                                  "  headGroupSpec:\n"
                                  "    template: {spec: {containers: [{name: c, resources: "
                                  "{limits: {memory: 10Qi}}}]}}\n",
                                  "RayCluster"),
                     RC_EINVALID);
    assert_non_null(strstr(f->err.msg, "ray.yaml:6:"));
    assert_non_null(strstr(f->err.msg, "10Qi"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(name) cmocka_unit_test_setup_teardown(test_rd_demand__##name, setup, teardown)
        T(limits_only_container),
        T(containers_summed_init_by_max),
        T(sidecars_follow_the_scheduler),
        T(overhead_and_pod_level_resources),
        T(number_quantities_are_exact),
        T(bad_quantities_are_errors),
        T(too_many_resource_names),
        T(constraints),
        T(deployment_replicas),
        T(job_parallelism_and_completions),
        T(zero_demand_kinds),
        T(ray_worker_clamping),
        T(ray_num_of_hosts),
        T(ray_suspend),
        T(ray_autoscaler_sidecar),
        T(rayjob_submission_modes),
        T(rayjob_cluster_selector),
        T(pod_templates),
        T(references),
        T(leaderworkerset),
        T(inference_service),
        T(training_jobs),
        T(jobs_divide_kind),
        T(declared_pod_templates),
        T(skyray_rayjob_train),
        T(skyray_text_summarizer),
        T(supernova_autoscaler_sidecar),
        T(errors_name_file_line_col),
#undef T
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
