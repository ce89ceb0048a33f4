/*
 * test_rc_kube.c - the API client against the fake API server: discovery (and CRDs that
 * appear later), server-side apply create/update with the exact method, path, content type
 * and body on the wire, Status errors, delete with a uid precondition, paged lists with label
 * selectors, CRD waits, and the fault matrix (429, 500, dropped connection, slow response).
 */
#include "th.h"
#include "th_kube.h"

#include <pthread.h>
#include <stdatomic.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "rc_kube.h"

static struct th_certs certs;

struct sleeps {
    long ms[32];
    int n;
};

static void record_sleep(void *payload, long ms)
{
    struct sleeps *s = payload;

    if (s->n < 32)
        s->ms[s->n++] = ms;
}

struct fixture {
    struct th_kube kube;
    char dir[TH_DIR];
    char kubeconfig[TH_PATH];
    struct sleeps sleeps;
    struct rc_kube_options o;
    struct rc_kube *k;
    char *logtext;
    size_t loglen;
    struct rc_log log;
};

static const char state_json[] =
    "{\"objects\": ["
    "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"team-a\"}},"
    "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"n1\",\"labels\":{\"pool\":"
    "\"gpu\"}}},"
    "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"n2\",\"labels\":{\"pool\":"
    "\"gpu\"}}},"
    "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"n3\",\"labels\":{\"pool\":"
    "\"cpu\"}}},"
    "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"n4\",\"labels\":{\"pool\":"
    "\"cpu\"}}},"
    "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"n5\",\"labels\":{\"pool\":"
    "\"cpu\"}}},"
    "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"n6\"}},"
    "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"n7\"}},"
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p1\",\"namespace\":\"team-"
    "a\",\"labels\":{\"rightplace.dev/unit\":\"u1\"}}},"
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p2\",\"namespace\":\"team-"
    "a\",\"labels\":{\"rightplace.dev/unit\":\"u1\"}}},"
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p3\",\"namespace\":\"team-"
    "a\",\"labels\":{\"rightplace.dev/unit\":\"u2\"}}},"
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p4\",\"namespace\":"
    "\"default\"},\"status\":{\"phase\":\"Succeeded\"}},"
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p5\",\"namespace\":"
    "\"default\",\"labels\":{\"rightplace.dev/unit\":\"u3\"}}}"
    "]}";

static int start(void **state, const struct th_kube_opts *opts)
{
    struct fixture *f = calloc(1, sizeof(*f));
    struct rc_kube_options def = RC_KUBE_OPTIONS_INIT;
    struct rc_err err = RC_ERR_INIT;
    char ca[TH_PATH + 64], p[TH_PATH];

    if (th_kube_start(&f->kube, &certs, opts) != 0 || th_kube_mkdtemp(f->dir) != 0)
        return -1;
    snprintf(f->kubeconfig, sizeof(f->kubeconfig), "%s/config", f->dir);
    snprintf(ca, sizeof(ca), "    certificate-authority: %s\n", th_certs_path(p, &certs, "ca.crt"));
    th_kube_kubeconfig(f->kubeconfig, &f->kube, ca, "    token: test-token-1\n");
    f->log.level = RC_LOG_DEBUG;
    f->log.out = open_memstream(&f->logtext, &f->loglen);
    f->o = def;
    f->o.kubeconfig = f->kubeconfig;
    f->o.log = &f->log;
    f->o.http.sleep_ms = record_sleep;
    f->o.http.sleep_payload = &f->sleeps;
    f->o.page_size = 3;
    if (rc_kube_open_opts(&f->k, &f->o, &err) < 0) {
        fprintf(stderr, "open: %s\n", err.msg);
        return -1;
    }
    *state = f;
    return 0;
}

static int setup(void **state)
{
    struct th_kube_opts o = {state_json, NULL, 0, 0, 0};

    return start(state, &o);
}

static int setup_gated(void **state)
{
    struct th_kube_opts o = {state_json, NULL, 0, 1, 3};

    return start(state, &o);
}

static int teardown(void **state)
{
    struct fixture *f = *state;

    rc_kube_free(f->k);
    th_kube_stop(&f->kube);
    th_kube_rmtree(f->dir);
    fclose(f->log.out);
    /* the bearer token never reaches the log */
    assert_null(strstr(f->logtext ? f->logtext : "", "test-token-1"));
    free(f->logtext);
    free(f);
    return 0;
}

static int group_setup(void **state)
{
    (void)state;
    if (rc_http_global_init(NULL) < 0)
        return -1;
    return th_certs_make(&certs);
}

static int group_teardown(void **state)
{
    (void)state;
    th_kube_rmtree(certs.dir);
    rc_http_global_cleanup();
    return 0;
}

static const char *qget(const cJSON *req, const char *key)
{
    const cJSON *v = cJSON_GetObjectItem(cJSON_GetObjectItem(req, "query"), key);

    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static const char *sget(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItem(o, key);

    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static const char *mdget(const cJSON *o, const char *key)
{
    return sget(cJSON_GetObjectItem(o, "metadata"), key);
}

static cJSON *rayjob(const char *name, const char *ns, const char *entrypoint)
{
    char text[512];

    snprintf(text, sizeof(text),
             "{\"apiVersion\":\"ray.io/v1\",\"kind\":\"RayJob\",\"metadata\":{\"name\":\"%s\","
             "\"namespace\":\"%s\",\"labels\":{\"rightplace.dev/unit\":\"u1\"}},"
             "\"spec\":{\"entrypoint\":\"%s\",\"shutdownAfterJobFinishes\":true}}",
             name, ns, entrypoint);
    return cJSON_Parse(text);
}

static void test_rc_kube__discovery(void **state)
{
    struct fixture *f = *state;
    struct rc_err err = RC_ERR_INIT;
    const char *res;
    int nsd = -1;
    cJSON *reqs;

    assert_int_equal(rc_kube_discover(f->k, &err), RC_OK);
    assert_int_equal(rc_kube_resource(f->k, "ray.io/v1", "RayJob", &res, &nsd, &err), RC_OK);
    assert_string_equal(res, "rayjobs");
    assert_int_equal(nsd, 1);
    assert_int_equal(rc_kube_resource(f->k, "v1", "Node", &res, &nsd, &err), RC_OK);
    assert_string_equal(res, "nodes");
    assert_int_equal(nsd, 0);
    assert_int_equal(rc_kube_resource(f->k, "apps/v1", "StatefulSet", &res, &nsd, &err), RC_OK);
    assert_string_equal(res, "statefulsets");
    assert_int_equal(rc_kube_resource(f->k, "apiextensions.k8s.io/v1", "CustomResourceDefinition",
                                      &res, &nsd, &err),
                     RC_OK);
    assert_int_equal(nsd, 0);
    assert_int_equal(rc_kube_resource(f->k, "batch/v1", "CronJob", &res, &nsd, &err), RC_OK);
    assert_string_equal(res, "cronjobs");

    reqs = th_kube_requests(&f->kube);
    assert_non_null(th_kube_find(reqs, "GET", "/api"));
    assert_non_null(th_kube_find(reqs, "GET", "/apis/ray.io/v1"));
    assert_non_null(th_kube_find(reqs, "GET", "/apis/apps/v1"));
    /* every lookup above came from the cache */
    assert_int_equal(th_kube_count(reqs, "GET", "/apis/apps/v1"), 1);
    cJSON_Delete(reqs);

    /* a kind the server does not serve: one refresh, then not found */
    th_kube_clear_requests(&f->kube);
    assert_int_equal(rc_kube_resource(f->k, "apps/v1", "Gadget", &res, &nsd, &err), RC_ENOTFOUND);
    assert_non_null(strstr(err.msg, "no resource for kind 'Gadget' in 'apps/v1'"));
    assert_int_equal(rc_kube_resource(f->k, "nope.io/v1", "Thing", &res, &nsd, &err), RC_ENOTFOUND);
    reqs = th_kube_requests(&f->kube);
    assert_int_equal(th_kube_count(reqs, "GET", "/apis/apps/v1"), 1);
    assert_int_equal(th_kube_count(reqs, "GET", "/apis/nope.io/v1"), 1);
    cJSON_Delete(reqs);
}

static void test_rc_kube__paths(void **state)
{
    struct fixture *f = *state;
    struct rc_err err = RC_ERR_INIT;
    struct rc_buf b = RC_BUF_INIT;

    assert_int_equal(rc_kube_path(&b, f->k, "ray.io/v1", "RayJob", "team-a", "train", &err), RC_OK);
    assert_string_equal(b.ptr, "/apis/ray.io/v1/namespaces/team-a/rayjobs/train");
    rc_buf_reset(&b);
    assert_int_equal(rc_kube_path(&b, f->k, "v1", "ConfigMap", NULL, "c", &err), RC_OK);
    assert_string_equal(b.ptr, "/api/v1/namespaces/default/configmaps/c");
    rc_buf_reset(&b);
    assert_int_equal(rc_kube_path(&b, f->k, "v1", "Pod", NULL, NULL, &err), RC_OK);
    assert_string_equal(b.ptr, "/api/v1/pods");
    rc_buf_reset(&b);
    assert_int_equal(rc_kube_path(&b, f->k, "v1", "Namespace", "ignored", "team-a", &err), RC_OK);
    assert_string_equal(b.ptr, "/api/v1/namespaces/team-a");
    rc_buf_reset(&b);
    assert_int_equal(rc_kube_escape(&b, "a=b,c in (x,y)", &err), RC_OK);
    assert_string_equal(b.ptr, "a%3Db%2Cc%20in%20%28x%2Cy%29");
    rc_buf_release(&b);
}

static void test_rc_kube__apply_create_then_update(void **state)
{
    struct fixture *f = *state;
    struct rc_err err = RC_ERR_INIT;
    cJSON *obj = rayjob("train", "team-a", "python a.py");
    cJSON *res = NULL, *res2 = NULL, *reqs, *sent;
    const cJSON *req;
    char uid[64], rv[32];

    assert_int_equal(rc_kube_apply(f->k, obj, "rightplace", 1, &res, &err), RC_OK);
    assert_int_equal(rc_kube_last_status(f->k), 201);
    assert_non_null(mdget(res, "uid"));
    snprintf(uid, sizeof(uid), "%s", mdget(res, "uid"));
    snprintf(rv, sizeof(rv), "%s", mdget(res, "resourceVersion"));
    assert_string_equal(sget(res, "kind"), "RayJob");
    assert_string_equal(
        sget(cJSON_GetArrayItem(
                 cJSON_GetObjectItem(cJSON_GetObjectItem(res, "metadata"), "managedFields"), 0),
             "manager"),
        "rightplace");

    /* on the wire: PATCH, the object path, apply-patch+yaml, fieldManager, force, JSON body */
    reqs = th_kube_requests(&f->kube);
    req = th_kube_find(reqs, "PATCH", NULL);
    assert_non_null(req);
    assert_string_equal(sget(req, "path"), "/apis/ray.io/v1/namespaces/team-a/rayjobs/train");
    assert_string_equal(sget(req, "content_type"), "application/apply-patch+yaml");
    assert_string_equal(qget(req, "fieldManager"), "rightplace");
    assert_string_equal(qget(req, "force"), "true");
    assert_string_equal(sget(req, "auth"), "bearer");
    sent = cJSON_Parse(sget(req, "body"));
    assert_true(cJSON_Compare(sent, obj, 1));
    cJSON_Delete(sent);
    /* no PATCH ever went out with another content type */
    {
        const cJSON *r;
        cJSON_ArrayForEach(r, reqs)
        {
            if (!strcmp(sget(r, "method"), "PATCH"))
                assert_string_equal(sget(r, "content_type"), "application/apply-patch+yaml");
        }
    }
    cJSON_Delete(reqs);

    /* the same object again: nothing changes */
    assert_int_equal(rc_kube_apply(f->k, obj, "rightplace", 1, &res2, &err), RC_OK);
    assert_int_equal(rc_kube_last_status(f->k), 200);
    assert_string_equal(mdget(res2, "resourceVersion"), rv);
    cJSON_Delete(res2);
    /* a change: same uid, new resourceVersion, new spec */
    cJSON_ReplaceItemInObject(cJSON_GetObjectItem(obj, "spec"), "entrypoint",
                              cJSON_CreateString("python b.py"));
    assert_int_equal(rc_kube_apply(f->k, obj, "rightplace", 1, &res2, &err), RC_OK);
    assert_string_equal(mdget(res2, "uid"), uid);
    assert_string_not_equal(mdget(res2, "resourceVersion"), rv);
    assert_string_equal(sget(cJSON_GetObjectItem(res2, "spec"), "entrypoint"), "python b.py");
    cJSON_Delete(res2);

    /* get sees it */
    assert_int_equal(rc_kube_get(f->k, "ray.io/v1", "RayJob", "team-a", "train", &res2, &err),
                     RC_OK);
    assert_string_equal(mdget(res2, "uid"), uid);
    cJSON_Delete(res2);
    cJSON_Delete(res);
    cJSON_Delete(obj);
}

static void test_rc_kube__apply_dry_run_stores_nothing(void **state)
{
    struct fixture *f = *state;
    struct rc_err err = RC_ERR_INIT;
    cJSON *obj = rayjob("dry", "team-a", "x");
    cJSON *res = NULL, *reqs;

    assert_int_equal(rc_kube_apply_ex(f->k, obj, "rightplace",
                                      RC_KUBE_APPLY_FORCE | RC_KUBE_APPLY_DRY_RUN, &res, &err),
                     RC_OK);
    assert_string_equal(sget(cJSON_GetObjectItem(res, "spec"), "entrypoint"), "x");
    cJSON_Delete(res);
    assert_int_equal(rc_kube_get(f->k, "ray.io/v1", "RayJob", "team-a", "dry", &res, &err),
                     RC_ENOTFOUND);
    reqs = th_kube_requests(&f->kube);
    assert_string_equal(qget(th_kube_find(reqs, "PATCH", "/rayjobs/dry"), "dryRun"), "All");
    assert_string_equal(qget(th_kube_find(reqs, "PATCH", "/rayjobs/dry"), "force"), "true");
    cJSON_Delete(reqs);
    /* without force */
    assert_int_equal(rc_kube_apply(f->k, obj, "rightplace", 0, NULL, &err), RC_OK);
    reqs = th_kube_requests(&f->kube);
    assert_string_equal(qget(th_kube_find(reqs, "PATCH", "/rayjobs/dry"), "force"), "false");
    assert_null(qget(th_kube_find(reqs, "PATCH", "/rayjobs/dry"), "dryRun"));
    cJSON_Delete(reqs);
    cJSON_Delete(obj);
}

static void test_rc_kube__apply_errors_are_the_servers(void **state)
{
    struct fixture *f = *state;
    struct rc_err err = RC_ERR_INIT;
    cJSON *obj = rayjob("train", "missing-ns", "x");
    struct rc_http_response resp = RC_HTTP_RESPONSE_INIT;
    const char body[] = "{\"metadata\":{\"labels\":{\"a\":\"b\"}}}";

    /* namespace does not exist */
    assert_int_equal(rc_kube_apply(f->k, obj, "rightplace", 1, NULL, &err), RC_ENOTFOUND);
    assert_non_null(strstr(err.msg, "namespaces \"missing-ns\" not found"));
    assert_string_equal(rc_kube_last_reason(f->k), "NotFound");
    cJSON_Delete(obj);

    /* the fake server is honest: a merge patch is refused (rc_kube never sends one) */
    assert_int_equal(
        rc_kube_request(f->k, "PATCH", "/api/v1/namespaces/team-a?fieldManager=rightplace",
                        "application/merge-patch+json", body, strlen(body), &resp, &err),
        RC_EHTTP);
    assert_int_equal(resp.status, 415);
    assert_non_null(strstr(err.msg, "unknown format"));
    /* and an apply without a field manager is a 400 */
    assert_int_equal(rc_kube_request(f->k, "PATCH", "/api/v1/namespaces/team-a",
                                     "application/apply-patch+yaml", body, strlen(body), &resp,
                                     &err),
                     RC_EHTTP);
    assert_int_equal(resp.status, 400);
    assert_non_null(strstr(err.msg, "fieldManager: Required value"));
    rc_http_response_release(&resp);

    /* invalid input never reaches the wire */
    obj = cJSON_Parse("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":"
                      "\"../x\"}}");
    assert_int_equal(rc_kube_apply(f->k, obj, "rightplace", 1, NULL, &err), RC_EINVALID);
    assert_int_equal(rc_kube_apply(f->k, obj, "", 1, NULL, &err), RC_EINVALID);
    cJSON_Delete(obj);
}

static void test_rc_kube__get_not_found(void **state)
{
    struct fixture *f = *state;
    struct rc_err err = RC_ERR_INIT;
    cJSON *out = NULL;

    assert_int_equal(rc_kube_get(f->k, "ray.io/v1", "RayJob", "team-a", "nope", &out, &err),
                     RC_ENOTFOUND);
    assert_null(out);
    assert_non_null(strstr(err.msg, "rayjobs.ray.io \"nope\" not found"));
    assert_int_equal(rc_kube_last_status(f->k), 404);
    assert_int_equal(rc_kube_get(f->k, "v1", "Node", NULL, "n3", &out, &err), RC_OK);
    assert_string_equal(
        sget(cJSON_GetObjectItem(cJSON_GetObjectItem(out, "metadata"), "labels"), "pool"), "cpu");
    cJSON_Delete(out);
}

static void test_rc_kube__delete_with_uid_precondition(void **state)
{
    struct fixture *f = *state;
    struct rc_err err = RC_ERR_INIT;
    cJSON *obj = rayjob("old", "team-a", "x");
    cJSON *res = NULL, *reqs, *opts;
    const cJSON *req;
    char uid[64];

    assert_int_equal(rc_kube_apply(f->k, obj, "rightplace", 1, &res, &err), RC_OK);
    snprintf(uid, sizeof(uid), "%s", mdget(res, "uid"));
    cJSON_Delete(res);

    /* someone re-created it: another uid, so our delete must not touch it */
    assert_int_equal(rc_kube_delete(f->k, "ray.io/v1", "RayJob", "team-a", "old",
                                    "11111111-2222-3333-4444-555555555555", &err),
                     RC_ECONFLICT);
    assert_non_null(strstr(err.msg, "Precondition failed: UID in precondition"));
    assert_string_equal(rc_kube_last_reason(f->k), "Conflict");
    assert_int_equal(rc_kube_get(f->k, "ray.io/v1", "RayJob", "team-a", "old", &res, &err), RC_OK);
    cJSON_Delete(res);

    assert_int_equal(rc_kube_delete(f->k, "ray.io/v1", "RayJob", "team-a", "old", uid, &err),
                     RC_OK);
    assert_int_equal(rc_kube_get(f->k, "ray.io/v1", "RayJob", "team-a", "old", &res, &err),
                     RC_ENOTFOUND);
    assert_int_equal(rc_kube_delete(f->k, "ray.io/v1", "RayJob", "team-a", "old", uid, &err),
                     RC_ENOTFOUND);

    reqs = th_kube_requests(&f->kube);
    req = th_kube_find(reqs, "DELETE", "/apis/ray.io/v1/namespaces/team-a/rayjobs/old");
    assert_non_null(req);
    assert_string_equal(sget(req, "content_type"), "application/json");
    opts = cJSON_Parse(sget(req, "body"));
    assert_string_equal(sget(opts, "kind"), "DeleteOptions");
    assert_string_equal(sget(opts, "propagationPolicy"), "Background");
    assert_string_equal(sget(cJSON_GetObjectItem(opts, "preconditions"), "uid"), uid);
    cJSON_Delete(opts);
    cJSON_Delete(reqs);
    cJSON_Delete(obj);
}

struct names {
    char v[32][32];
    int n;
    int stop_after;
};

static int collect(void *payload, const cJSON *item, struct rc_err *err)
{
    struct names *n = payload;

    if (n->stop_after && n->n == n->stop_after)
        return rc_err_set(err, RC_ERROR, "stopped");
    snprintf(n->v[n->n++], 32, "%s", mdget(item, "name"));
    return 0;
}

static void test_rc_kube__list_paging_and_selectors(void **state)
{
    struct fixture *f = *state;
    struct rc_err err = RC_ERR_INIT;
    struct names n;
    cJSON *reqs;
    const cJSON *r;
    int pages = 0, with_continue = 0;

    memset(&n, 0, sizeof(n));
    assert_int_equal(rc_kube_list(f->k, "/api/v1/nodes", NULL, collect, &n, &err), RC_OK);
    assert_int_equal(n.n, 7);
    for (int i = 0; i < 7; i++) {
        char want[8];
        snprintf(want, sizeof(want), "n%d", i + 1);
        assert_string_equal(n.v[i], want);
    }
    reqs = th_kube_requests(&f->kube);
    cJSON_ArrayForEach(r, reqs)
    {
        if (!strcmp(sget(r, "path"), "/api/v1/nodes")) {
            pages++;
            assert_string_equal(qget(r, "limit"), "3");
            with_continue += qget(r, "continue") != NULL;
        }
    }
    assert_int_equal(pages, 3);
    assert_int_equal(with_continue, 2);
    cJSON_Delete(reqs);

    /* a set-based selector, escaped on the wire, applied by the server */
    memset(&n, 0, sizeof(n));
    assert_int_equal(rc_kube_list_kind(f->k, "v1", "Node", NULL, "pool in (gpu,cpu),pool!=gpu",
                                       collect, &n, &err),
                     RC_OK);
    assert_int_equal(n.n, 3);
    assert_string_equal(n.v[0], "n3");
    reqs = th_kube_requests(&f->kube);
    assert_string_equal(qget(th_kube_find(reqs, "GET", "/api/v1/nodes"), "labelSelector"),
                        "pool in (gpu,cpu),pool!=gpu");
    cJSON_Delete(reqs);

    /* pods of all namespaces with our unit label; then one namespace */
    memset(&n, 0, sizeof(n));
    assert_int_equal(
        rc_kube_list_kind(f->k, "v1", "Pod", NULL, "rightplace.dev/unit", collect, &n, &err),
        RC_OK);
    assert_int_equal(n.n, 4);
    memset(&n, 0, sizeof(n));
    assert_int_equal(
        rc_kube_list_kind(f->k, "v1", "Pod", "team-a", "rightplace.dev/unit=u1", collect, &n, &err),
        RC_OK);
    assert_int_equal(n.n, 2);
    reqs = th_kube_requests(&f->kube);
    assert_non_null(th_kube_find(reqs, "GET", "/api/v1/namespaces/team-a/pods"));
    cJSON_Delete(reqs);

    /* a field selector in the path (non-terminal pods), together with a label selector */
    {
        struct rc_buf path = RC_BUF_INIT;

        rc_buf_puts(&path, "/api/v1/pods?fieldSelector=", NULL);
        rc_kube_escape(&path, "status.phase!=Succeeded,status.phase!=Failed", NULL);
        memset(&n, 0, sizeof(n));
        assert_int_equal(rc_kube_list(f->k, path.ptr, NULL, collect, &n, &err), RC_OK);
        assert_int_equal(n.n, 4); /* p4 finished */
        memset(&n, 0, sizeof(n));
        assert_int_equal(rc_kube_list(f->k, path.ptr, "rightplace.dev/unit", collect, &n, &err),
                         RC_OK);
        assert_int_equal(n.n, 4);
        reqs = th_kube_requests(&f->kube);
        r = th_kube_find(reqs, "GET", "/api/v1/pods");
        assert_string_equal(qget(r, "fieldSelector"),
                            "status.phase!=Succeeded,status.phase!=Failed");
        assert_string_equal(qget(r, "labelSelector"), "rightplace.dev/unit");
        assert_string_equal(qget(r, "limit"), "3");
        cJSON_Delete(reqs);
        rc_buf_release(&path);
    }

    /* the callback stops the list */
    memset(&n, 0, sizeof(n));
    n.stop_after = 4;
    assert_int_equal(rc_kube_list(f->k, "/api/v1/nodes", NULL, collect, &n, &err), RC_ERROR);
    assert_string_equal(err.msg, "stopped");
    assert_int_equal(n.n, 4);
}

/* Seven ConfigMaps of about 1 KB in namespace w, one of 3 KB in namespace x. */
static int setup_big(void **state)
{
    static char st[16 * 1024];
    char pad[3001];
    size_t at;
    struct th_kube_opts o = {st, NULL, 0, 0, 0};

    memset(pad, 'x', sizeof(pad) - 1);
    pad[sizeof(pad) - 1] = '\0';
    at = (size_t)snprintf(st, sizeof(st),
                          "{\"objects\":[{\"apiVersion\":\"v1\",\"kind\":\"Namespace\","
                          "\"metadata\":{\"name\":\"w\"}},{\"apiVersion\":\"v1\",\"kind\":"
                          "\"Namespace\",\"metadata\":{\"name\":\"x\"}}");
    for (int i = 0; i < 7; i++)
        at += (size_t)snprintf(st + at, sizeof(st) - at,
                               ",{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{"
                               "\"name\":\"c%d\",\"namespace\":\"w\"},\"data\":{\"pad\":"
                               "\"%.1000s\"}}",
                               i, pad);
    snprintf(st + at, sizeof(st) - at,
             ",{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":"
             "\"huge\",\"namespace\":\"x\"},\"data\":{\"pad\":\"%s\"}}]}",
             pad);
    return start(state, &o);
}

/* The limits the server was asked for on path, in order, into v (at most 16); their count. */
static int limits_asked(struct fixture *f, const char *path, long v[16])
{
    cJSON *reqs = th_kube_requests(&f->kube);
    const cJSON *r;
    int n = 0;

    cJSON_ArrayForEach(r, reqs)
    {
        if (!strcmp(sget(r, "path"), path) && n < 16)
            v[n++] = atol(qget(r, "limit"));
    }
    cJSON_Delete(reqs);
    return n;
}

/* A page larger than the client takes (options.http.max_body) is asked for again with half
 * the items, and the rest of the list comes in pages of that size: items that big (pods with
 * large annotations) do not make a cluster unreadable. Each item is delivered once, in order.
 * An item larger than the limit alone still fails the list, saying why. */
static void test_rc_kube__list_page_too_large_is_halved(void **state)
{
    struct fixture *f = *state;
    struct rc_kube_options o = f->o;
    struct rc_err err = RC_ERR_INIT;
    struct rc_kube *k = NULL;
    struct names n;
    long limits[16];

    o.http.max_body = 2600; /* two items and the list around them; not three */
    o.page_size = 8;
    assert_int_equal(rc_kube_open_opts(&k, &o, &err), RC_OK);
    memset(&n, 0, sizeof(n));
    assert_int_equal(rc_kube_list(k, "/api/v1/namespaces/w/configmaps", NULL, collect, &n, &err),
                     RC_OK);
    assert_int_equal(n.n, 7);
    for (int i = 0; i < 7; i++) {
        char want[8];
        snprintf(want, sizeof(want), "c%d", i);
        assert_string_equal(n.v[i], want);
    }
    /* 8 and 4 refused, then four pages of 2 (the last one short) */
    assert_int_equal(limits_asked(f, "/api/v1/namespaces/w/configmaps", limits), 6);
    assert_int_equal(limits[0], 8);
    assert_int_equal(limits[1], 4);
    for (int i = 2; i < 6; i++)
        assert_int_equal(limits[i], 2);

    memset(&n, 0, sizeof(n));
    assert_int_equal(rc_kube_list(k, "/api/v1/namespaces/x/configmaps", NULL, collect, &n, &err),
                     RC_ERROR);
    assert_int_equal(n.n, 0);
    assert_non_null(strstr(err.msg, "too large"));
    assert_int_equal(limits_asked(f, "/api/v1/namespaces/x/configmaps", limits), 4);
    assert_int_equal(limits[3], 1);
    rc_kube_free(k);
}

static void test_rc_kube__crd_appears_later(void **state)
{
    struct fixture *f = *state;
    struct rc_err err = RC_ERR_INIT;
    const char *res;
    int nsd = 0;
    cJSON *crd = cJSON_Parse(
        "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"CustomResourceDefinition\","
        "\"metadata\":{\"name\":\"rayjobs.ray.io\"},\"spec\":{\"group\":\"ray.io\","
        "\"scope\":\"Namespaced\",\"names\":{\"plural\":\"rayjobs\",\"singular\":\"rayjob\","
        "\"kind\":\"RayJob\",\"listKind\":\"RayJobList\"},\"versions\":[{\"name\":\"v1\","
        "\"served\":true,\"storage\":true,\"schema\":{\"openAPIV3Schema\":{\"type\":"
        "\"object\",\"x-kubernetes-preserve-unknown-fields\":true}}}]}}");
    cJSON *job = rayjob("train", "team-a", "x");

    /* no CRD yet: not discoverable, apply fails with a clear message */
    assert_int_equal(rc_kube_apply(f->k, job, "rightplace", 1, NULL, &err), RC_ENOTFOUND);
    assert_non_null(strstr(err.msg, "no resource for kind 'RayJob' in 'ray.io/v1'"));
    assert_int_equal(rc_kube_wait_crd(f->k, "rayjobs.ray.io", 1000, &err), RC_ERROR);
    assert_non_null(strstr(err.msg, "crd 'rayjobs.ray.io' not established after 1000 ms"));

    assert_int_equal(rc_kube_apply(f->k, crd, "rightplace", 1, NULL, &err), RC_OK);
    /* established after the third GET: two polls, waited in poll intervals */
    f->sleeps.n = 0;
    assert_int_equal(rc_kube_wait_crd(f->k, "rayjobs.ray.io", 10000, &err), RC_OK);
    assert_int_equal(f->sleeps.n, 2);
    assert_int_equal(f->sleeps.ms[0], 500);
    assert_int_equal(rc_kube_resource(f->k, "ray.io/v1", "RayJob", &res, &nsd, &err), RC_OK);
    assert_string_equal(res, "rayjobs");
    assert_int_equal(nsd, 1);
    assert_int_equal(rc_kube_apply(f->k, job, "rightplace", 1, NULL, &err), RC_OK);
    cJSON_Delete(crd);
    cJSON_Delete(job);
}

static void test_rc_kube__429_honours_retry_after(void **state)
{
    struct fixture *f = *state;
    struct rc_err err = RC_ERR_INIT;
    cJSON *obj = rayjob("busy", "team-a", "x");
    cJSON *reqs;

    th_kube_faults(&f->kube,
                   "[{\"path\": \"rayjobs/busy$\", \"method\": \"PATCH\", \"status\": 429, "
                   "\"retry_after\": 2, \"count\": 1}]");
    assert_int_equal(rc_kube_apply(f->k, obj, "rightplace", 1, NULL, &err), RC_OK);
    assert_int_equal(f->sleeps.n, 1);
    assert_int_equal(f->sleeps.ms[0], 2000);
    reqs = th_kube_requests(&f->kube);
    assert_int_equal(th_kube_count(reqs, "PATCH", "rayjobs/busy"), 2);
    cJSON_Delete(reqs);
    cJSON_Delete(obj);
}

static void test_rc_kube__500_retried_then_success(void **state)
{
    struct fixture *f = *state;
    struct rc_err err = RC_ERR_INIT;
    cJSON *out = NULL;

    th_kube_faults(&f->kube, "[{\"path\": \"/nodes/n1$\", \"status\": 500, \"count\": 2}]");
    assert_int_equal(rc_kube_get(f->k, "v1", "Node", NULL, "n1", &out, &err), RC_OK);
    assert_string_equal(mdget(out, "name"), "n1");
    cJSON_Delete(out);
    assert_int_equal(f->sleeps.n, 2);

    /* persistent 500: the server's message after the attempts ran out */
    th_kube_faults(&f->kube, "[{\"path\": \"/nodes/n2$\", \"status\": 500}]");
    assert_int_equal(rc_kube_get(f->k, "v1", "Node", NULL, "n2", &out, &err), RC_EHTTP);
    assert_non_null(strstr(err.msg, "Internal error occurred: injected fault"));
    assert_int_equal(rc_kube_last_status(f->k), 500);
}

static void test_rc_kube__dropped_connection_retried(void **state)
{
    struct fixture *f = *state;
    struct rc_err err = RC_ERR_INIT;
    struct names n;

    memset(&n, 0, sizeof(n));
    /* the second page's connection is dropped twice */
    th_kube_faults(&f->kube, "[{\"path\": \"^/api/v1/nodes$\", \"drop\": true, \"count\": 2}]");
    assert_int_equal(rc_kube_discover(f->k, &err), RC_OK);
    assert_int_equal(rc_kube_list(f->k, "/api/v1/nodes", NULL, collect, &n, &err), RC_OK);
    assert_int_equal(n.n, 7);
}

static void test_rc_kube__slow_response_times_out(void **state)
{
    struct fixture *f = *state;
    struct rc_err err = RC_ERR_INIT;
    struct rc_kube *k = NULL;
    cJSON *out = NULL;

    f->o.http.timeout_ms = 300;
    f->o.http.max_attempts = 2;
    assert_int_equal(rc_kube_open_opts(&k, &f->o, &err), RC_OK);
    th_kube_faults(&f->kube, "[{\"path\": \"/nodes/n1$\", \"delay\": 3}]");
    assert_int_equal(rc_kube_get(k, "v1", "Node", NULL, "n1", &out, &err), RC_ETRANSPORT);
    assert_non_null(strstr(err.msg, "timed out"));
    assert_int_equal(rc_kube_last_status(k), 0);
    rc_kube_free(k);
}

static void test_rc_kube__open_from_cluster_conn(void **state)
{
    struct fixture *f = *state;
    struct rc_err err = RC_ERR_INIT;
    struct rc_kube *k = NULL;
    struct rd_cluster_conn conn = {"static-cluster", 0, NULL, NULL, NULL, 0, 0};
    struct rc_kubeconfig_sources src = RC_KUBECONFIG_SOURCES_INIT;
    struct rc_kube_options o = f->o;

    o.sources = &src;
    assert_int_equal(rc_kube_open_conn(&k, &conn, &o, &err), RC_EINVALID);
    assert_non_null(strstr(err.msg, "cluster 'static-cluster' is simulated"));
    /* a context of the operator's kubeconfig */
    conn.live = 1;
    conn.context = "test";
    assert_int_equal(rc_kube_open_conn(&k, &conn, &o, &err), RC_EINVALID);
    assert_non_null(strstr(err.msg, "the operator gave no kubeconfig"));
    rc_kubeconfig_sources_add_file(&src, f->kubeconfig);
    assert_int_equal(rc_kube_open_conn(&k, &conn, &o, &err), RC_OK);
    assert_int_equal(rc_kube_discover(k, &err), RC_OK);
    rc_kube_free(k);
    conn.context = "other";
    assert_int_equal(rc_kube_open_conn(&k, &conn, &o, &err), RC_ENOTFOUND);
    assert_non_null(strstr(err.msg, "context 'other' not found"));
    assert_null(k);
    /* no options: no operator kubeconfig, nothing live is connectable */
    conn.context = "test";
    assert_int_equal(rc_kube_open_conn(&k, &conn, NULL, &err), RC_EINVALID);
    assert_null(k);
    rc_kubeconfig_sources_release(&src);
}

static void test_rc_kube__wrong_certificate_fault(void **state)
{
    struct fixture *f = *state;
    struct rc_err err = RC_ERR_INIT;
    struct rc_kube *k = NULL;

    /* the server starts presenting a certificate from another CA: refused, not retried */
    th_kube_faults(&f->kube, "[{\"wrong_cert\": true}]");
    assert_int_equal(rc_kube_open_opts(&k, &f->o, &err), RC_OK);
    assert_int_equal(rc_kube_discover(k, &err), RC_ETRANSPORT);
    assert_non_null(strstr(err.msg, "tls with"));
    assert_int_equal(f->sleeps.n, 0);
    rc_kube_free(k);
    /* back to the right one: a new client connects again */
    th_kube_faults(&f->kube, "[]");
    assert_int_equal(rc_kube_open_opts(&k, &f->o, &err), RC_OK);
    assert_int_equal(rc_kube_discover(k, &err), RC_OK);
    rc_kube_free(k);
}

struct par {
    const char *kubeconfig;
    const struct rc_kube_options *o;
    int rc;
    int nodes;
};

static int count_item(void *payload, const cJSON *item, struct rc_err *err)
{
    (void)item;
    (void)err;
    ((struct par *)payload)->nodes++;
    return 0;
}

static void *par_run(void *arg)
{
    struct par *p = arg;
    struct rc_kube_options o = *p->o;
    struct rc_kube *k = NULL;
    struct rc_err err = RC_ERR_INIT;

    o.kubeconfig = p->kubeconfig;
    o.http.sleep_ms = NULL; /* the recorder is not shared between threads */
    p->rc = rc_kube_open_opts(&k, &o, &err);
    for (int i = 0; p->rc == RC_OK && i < 5; i++) {
        p->rc = rc_kube_discover(k, &err);
        if (p->rc == RC_OK)
            p->rc = rc_kube_list_kind(k, "v1", "Node", NULL, NULL, count_item, p, &err);
    }
    rc_kube_free(k);
    return NULL;
}

static void test_rc_kube__clusters_in_parallel(void **state)
{
    struct fixture *f = *state;
    struct th_kube other;
    struct th_kube_opts opts = {state_json, NULL, 0, 0, 0};
    char kc2[TH_PATH + 8], ca[TH_PATH + 64], p[TH_PATH];
    struct par a = {f->kubeconfig, &f->o, -1, 0}, b = {kc2, &f->o, -1, 0};
    pthread_t ta, tb;

    assert_int_equal(th_kube_start(&other, &certs, &opts), 0);
    snprintf(kc2, sizeof(kc2), "%s/config2", f->dir);
    snprintf(ca, sizeof(ca), "    certificate-authority: %s\n", th_certs_path(p, &certs, "ca.crt"));
    th_kube_kubeconfig(kc2, &other, ca, "    token: test-token-1\n");
    assert_int_equal(pthread_create(&ta, NULL, par_run, &a), 0);
    assert_int_equal(pthread_create(&tb, NULL, par_run, &b), 0);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    assert_int_equal(a.rc, RC_OK);
    assert_int_equal(b.rc, RC_OK);
    assert_int_equal(a.nodes, 35);
    assert_int_equal(b.nodes, 35);
    th_kube_stop(&other);
}

static void test_rc_kube__unreachable(void **state)
{
    struct fixture *f = *state;
    struct rc_err err = RC_ERR_INIT;
    struct rc_kube *k = NULL;
    char ca[TH_PATH + 64], p[TH_PATH];
    struct th_kube gone = f->kube;

    /* a port nobody listens on: connection refused, retried, then RC_ETRANSPORT */
    snprintf(gone.url, sizeof(gone.url), "https://127.0.0.1:1");
    snprintf(ca, sizeof(ca), "    certificate-authority: %s\n", th_certs_path(p, &certs, "ca.crt"));
    th_kube_kubeconfig(f->kubeconfig, &gone, ca, "    token: test-token-1\n");
    assert_int_equal(rc_kube_open_opts(&k, &f->o, &err), RC_OK);
    assert_int_equal(rc_kube_discover(k, &err), RC_ETRANSPORT);
    assert_non_null(strstr(err.msg, "no answer from 'https://127.0.0.1:1/api'"));
    assert_int_equal(f->sleeps.n, 3);
    rc_kube_free(k);
}

/* Is process `pid` gone (or a zombie nobody reaped yet)? */
static int process_gone(pid_t pid)
{
    char path[64], stat[256];
    FILE *fp;
    size_t n;
    const char *close_paren;

    if (kill(pid, 0) != 0)
        return 1;
    snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
    if (!(fp = fopen(path, "r")))
        return 1;
    n = fread(stat, 1, sizeof(stat) - 1, fp);
    fclose(fp);
    stat[n] = '\0';
    close_paren = strrchr(stat, ')');
    return close_paren && close_paren[1] == ' ' && close_paren[2] == 'Z';
}

/* A test process that dies without its teardown (an abort, a sanitizer report) takes its fake
 * API server with it. Before, the server was left running, holding ctest's output pipe open:
 * ctest waited for its timeout (600 s) and the server outlived the run. */
static void test_rc_kube__server_goes_with_a_crashed_test(void **state)
{
    struct th_kube k;
    int fds[2], status = 0, gone = 0;
    pid_t child;

    (void)state;
    assert_int_equal(pipe(fds), 0);
    child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        struct th_kube mine;

        close(fds[0]);
        if (th_kube_start(&mine, &certs, NULL) != 0 ||
            write(fds[1], &mine, sizeof(mine)) != (ssize_t)sizeof(mine))
            _exit(3);
        raise(SIGKILL); /* a crash: no teardown, no atexit */
        _exit(4);
    }
    close(fds[1]);
    memset(&k, 0, sizeof(k));
    assert_int_equal(read(fds[0], &k, sizeof(k)), (ssize_t)sizeof(k));
    close(fds[0]);
    assert_int_equal(waitpid(child, &status, 0), child);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    assert_true(k.pid > 0);
    for (int i = 0; i < 500 && !(gone = process_gone(k.pid)); i++) {
        struct timespec ts = {0, 20 * 1000000L};
        nanosleep(&ts, NULL);
    }
    th_kube_stop(&k); /* its folder; and the server, if it is still there */
    assert_true(gone);
}

/* ==== Watch ==== */

struct events {
    char types[16][16];
    char names[16][64];
    size_t n;
    int fail_at; /* the event that returns an error (1-based; 0: none) */
};

static int on_event(void *payload, const char *type, const cJSON *object, struct rc_err *err)
{
    struct events *e = payload;
    const cJSON *md = cJSON_GetObjectItem(object, "metadata");
    const cJSON *name = cJSON_GetObjectItem(md, "name");

    if (e->n < 16) {
        snprintf(e->types[e->n], sizeof(e->types[0]), "%s", type);
        snprintf(e->names[e->n], sizeof(e->names[0]), "%s",
                 cJSON_IsString(name) ? name->valuestring : "");
    }
    e->n++;
    if (e->fail_at && (int)e->n == e->fail_at)
        return rc_err_set(err, RC_EINVALID, "no more, thanks");
    return RC_OK;
}

/* A pod in team-a, its annotation `pad` bytes long (0: none). */
static void apply_pod(struct rc_kube *k, const char *name, size_t pad)
{
    struct rc_err err = RC_ERR_INIT;
    cJSON *obj = cJSON_CreateObject(), *md;
    char *big = malloc(pad + 1);

    memset(big, 'x', pad);
    big[pad] = '\0';
    cJSON_AddStringToObject(obj, "apiVersion", "v1");
    cJSON_AddStringToObject(obj, "kind", "Pod");
    md = cJSON_AddObjectToObject(obj, "metadata");
    cJSON_AddStringToObject(md, "name", name);
    cJSON_AddStringToObject(md, "namespace", "team-a");
    if (pad)
        cJSON_AddStringToObject(cJSON_AddObjectToObject(md, "annotations"), "pad", big);
    assert_int_equal(rc_kube_apply(k, obj, "test", 1, NULL, &err), RC_OK);
    cJSON_Delete(obj);
    free(big);
}

static void *stop_soon(void *arg)
{
    usleep(300 * 1000);
    *(atomic_int *)arg = 1;
    return NULL;
}

/*
 * rc_kube_watch: the changes after a list's resourceVersion, in order, an event larger than
 * the pieces libcurl hands over (200 KB) whole, the resourceVersion following the events and
 * the bookmark the server sends as it ends the watch at its timeout; an event over the body
 * limit, a callback's error, 410 Expired, a refused token and a stop flag each end it as the
 * header says.
 */
static void test_rc_kube__watch(void **state)
{
    struct fixture *f = *state;
    struct rc_err err = RC_ERR_INIT;
    struct events ev;
    char rv[64], rv_list[64];
    struct rc_kube *small = NULL;
    struct rc_kube_options so = f->o;
    atomic_int stop = 0;
    struct par cnt;
    pthread_t t;
    cJSON *reqs;
    const cJSON *last = NULL, *r;

    memset(&cnt, 0, sizeof(cnt));
    assert_int_equal(rc_kube_list_rv(f->k, "/api/v1/namespaces/team-a/pods", NULL, count_item, &cnt,
                                     rv, sizeof(rv), &err),
                     RC_OK);
    assert_true(rv[0] != '\0');
    assert_int_equal(cnt.nodes, 3); /* the three pods of team-a */
    snprintf(rv_list, sizeof(rv_list), "%s", rv);
    apply_pod(f->k, "w1", 0);
    apply_pod(f->k, "w2", 200 * 1024);
    assert_int_equal(rc_kube_delete(f->k, "v1", "Pod", "team-a", "w1", NULL, &err), RC_OK);
    memset(&ev, 0, sizeof(ev));
    assert_int_equal(rc_kube_watch(f->k, "/api/v1/namespaces/team-a/pods", rv, sizeof(rv), 1,
                                   on_event, &ev, NULL, &err),
                     RC_OK);
    assert_int_equal(ev.n, 4);
    assert_string_equal(ev.types[0], "ADDED");
    assert_string_equal(ev.names[0], "w1");
    assert_string_equal(ev.types[1], "ADDED");
    assert_string_equal(ev.names[1], "w2");
    assert_string_equal(ev.types[2], "DELETED");
    assert_string_equal(ev.names[2], "w1");
    assert_string_equal(ev.types[3], "BOOKMARK"); /* as the server ended it */
    assert_true(atol(rv) > atol(rv_list));
    reqs = th_kube_requests(&f->kube);
    cJSON_ArrayForEach(r, reqs)
    {
        if (!strcmp(cJSON_GetObjectItem(r, "path")->valuestring,
                    "/api/v1/namespaces/team-a/pods") &&
            qget(r, "watch"))
            last = r;
    }
    assert_non_null(last);
    assert_string_equal(qget(last, "resourceVersion"), rv_list);
    assert_string_equal(qget(last, "allowWatchBookmarks"), "true");
    assert_string_equal(qget(last, "timeoutSeconds"), "1");
    cJSON_Delete(reqs);

    /* from the bookmark's resourceVersion: nothing again, only the next bookmark */
    memset(&ev, 0, sizeof(ev));
    assert_int_equal(rc_kube_watch(f->k, "/api/v1/namespaces/team-a/pods", rv, sizeof(rv), 1,
                                   on_event, &ev, NULL, &err),
                     RC_OK);
    assert_int_equal(ev.n, 1);
    assert_string_equal(ev.types[0], "BOOKMARK");

    /* a callback's error ends it, and is what it returns */
    snprintf(rv, sizeof(rv), "%s", rv_list);
    memset(&ev, 0, sizeof(ev));
    ev.fail_at = 2;
    assert_int_equal(rc_kube_watch(f->k, "/api/v1/namespaces/team-a/pods", rv, sizeof(rv), 1,
                                   on_event, &ev, NULL, &err),
                     RC_EINVALID);
    assert_int_equal(ev.n, 2);
    assert_string_equal(err.msg, "no more, thanks");

    /* an event over the body limit */
    so.http.max_body = 64 * 1024;
    assert_int_equal(rc_kube_open_opts(&small, &so, &err), RC_OK);
    snprintf(rv, sizeof(rv), "%s", rv_list);
    memset(&ev, 0, sizeof(ev));
    assert_int_equal(rc_kube_watch(small, "/api/v1/namespaces/team-a/pods", rv, sizeof(rv), 1,
                                   on_event, &ev, NULL, &err),
                     RC_ERROR);
    assert_int_equal(ev.n, 1); /* w1, then w2 would not fit */
    assert_non_null(strstr(err.msg, "is larger than 65536 bytes"));
    rc_kube_free(small);

    /* the server no longer has that resourceVersion */
    th_kube_faults(&f->kube, "[{\"path\": \"/pods$\", \"query\": \"watch\", \"gone\": true}]");
    snprintf(rv, sizeof(rv), "%s", rv_list);
    memset(&ev, 0, sizeof(ev));
    assert_int_equal(rc_kube_watch(f->k, "/api/v1/namespaces/team-a/pods", rv, sizeof(rv), 1,
                                   on_event, &ev, NULL, &err),
                     RC_EHTTP);
    assert_int_equal(ev.n, 0);
    assert_int_equal(rc_kube_last_status(f->k), 410);
    assert_string_equal(rc_kube_last_reason(f->k), "Expired");
    assert_non_null(strstr(err.msg, "too old resource version"));
    assert_string_equal(rv, rv_list);

    /* a token the server refuses: its Status, as for any request */
    th_kube_faults(&f->kube, "[]");
    th_kube_tokens(&f->kube, "another-token\n");
    assert_int_equal(rc_kube_watch(f->k, "/api/v1/namespaces/team-a/pods", rv, sizeof(rv), 1,
                                   on_event, &ev, NULL, &err),
                     RC_EHTTP);
    assert_int_equal(rc_kube_last_status(f->k), 401);
    th_kube_tokens(&f->kube, "test-token-1\n");

    /* a stop flag ends a watch that waits for its next event, as an answer */
    snprintf(rv, sizeof(rv), "%s", rv_list);
    memset(&ev, 0, sizeof(ev));
    ev.n = 0;
    assert_int_equal(rc_kube_watch(f->k, "/api/v1/namespaces/team-a/pods", rv, sizeof(rv), 1,
                                   on_event, &ev, NULL, &err),
                     RC_OK); /* caught up: rv is the bookmark's */
    memset(&ev, 0, sizeof(ev));
    assert_int_equal(pthread_create(&t, NULL, stop_soon, &stop), 0);
    assert_int_equal(rc_kube_watch(f->k, "/api/v1/namespaces/team-a/pods", rv, sizeof(rv), 600,
                                   on_event, &ev, &stop, &err),
                     RC_OK);
    pthread_join(t, NULL);
    assert_int_equal(ev.n, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_rc_kube__discovery, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rc_kube__paths, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rc_kube__apply_create_then_update, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rc_kube__apply_dry_run_stores_nothing, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_rc_kube__apply_errors_are_the_servers, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_rc_kube__get_not_found, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rc_kube__delete_with_uid_precondition, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_rc_kube__list_paging_and_selectors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rc_kube__list_page_too_large_is_halved, setup_big,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_rc_kube__crd_appears_later, setup_gated, teardown),
        cmocka_unit_test_setup_teardown(test_rc_kube__429_honours_retry_after, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rc_kube__500_retried_then_success, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rc_kube__dropped_connection_retried, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rc_kube__slow_response_times_out, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rc_kube__open_from_cluster_conn, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rc_kube__wrong_certificate_fault, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rc_kube__clusters_in_parallel, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rc_kube__unreachable, setup, teardown),
        cmocka_unit_test(test_rc_kube__server_goes_with_a_crashed_test),
        cmocka_unit_test_setup_teardown(test_rc_kube__watch, setup, teardown),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
