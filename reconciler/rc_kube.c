/*
 * rc_kube.c - the Kubernetes API client (see rc_kube.h for the requests and content types it
 * sends). HTTP goes through rc_http, credentials through rc_kubeconfig; this file knows API
 * paths, discovery, the Status object and DeleteOptions. It does not decide what to apply.
 */
#include "rc_kube.h"
#include "rc_mem.h"
#include "rd_yaml.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rc_banned.h"

struct kres {
    char *name; /* plural resource */
    char *kind;
    int namespaced;
};

struct kgv {
    char *gv;   /* "v1", "apps/v1" */
    int served; /* 0: the server answered 404 for it */
    struct kres *res;
    size_t nres, cap;
    /* the server answered 5xx for it (an aggregated API whose service is down): its objects
     * fail with this message until discovery is forgotten, without asking again */
    char *failed;
};

struct rc_kube {
    struct rc_kubeconfig *kc;
    struct rc_http *http;
    struct rc_kube_options o;
    const struct rc_log *log;
    struct kgv *gvs;
    size_t ngvs, capgvs;
    long last_status;
    char last_reason[64];
};

/* ==== open / free ==== */

static void default_sleep(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

    nanosleep(&ts, NULL);
}

/* A client for kubeconfig kc (owned by the client from here on, also on failure). */
static int open_kc(struct rc_kube **out, struct rc_kubeconfig *kc, const struct rc_kube_options *o,
                   struct rc_err *err)
{
    struct rc_kube *k = rc_xcalloc(1, sizeof(*k));
    struct rc_http_tls tls = RC_HTTP_TLS_INIT;
    int error;

    *out = NULL;
    k->o = *o;
    k->log = o->log;
    k->kc = kc;
    if (k->o.page_size <= 0)
        k->o.page_size = 500;
    if (k->o.poll_interval_ms <= 0)
        k->o.poll_interval_ms = 500;
    if (o->exec_timeout_ms > 0)
        k->kc->exec_timeout_ms = o->exec_timeout_ms;
    tls.ca_file = k->kc->ca_file;
    tls.ca_data = k->kc->ca_data;
    tls.ca_len = k->kc->ca_len;
    tls.cert_file = k->kc->cert_file;
    tls.cert_data = k->kc->cert_data;
    tls.cert_len = k->kc->cert_len;
    tls.key_file = k->kc->key_file;
    tls.key_data = k->kc->key_data;
    tls.key_len = k->kc->key_len;
    tls.server_name = k->kc->tls_server_name;
    tls.insecure = k->kc->insecure;
    error = rc_http_new(&k->http, &tls, &k->o.http, o->log, err);
    if (error < 0)
        goto fail;
    *out = k;
    return RC_OK;
fail:
    rc_kube_free(k);
    return error;
}

int rc_kube_open_opts(struct rc_kube **out, const struct rc_kube_options *o, struct rc_err *err)
{
    struct rc_kubeconfig *kc = NULL;
    int error;

    *out = NULL;
    if (o->in_cluster || (!o->kubeconfig && !(getenv("KUBECONFIG") && *getenv("KUBECONFIG")) &&
                          rc_kubeconfig_in_cluster_env()))
        error = rc_kubeconfig_in_cluster(&kc, o->sa_dir, err);
    else
        error = rc_kubeconfig_load(&kc, o->kubeconfig, o->context, o->log, err);
    if (error < 0)
        return error;
    return open_kc(out, kc, o, err);
}

int rc_kube_open(struct rc_kube **out, const char *kubeconfig, const char *context,
                 const struct rc_log *log, struct rc_err *err)
{
    struct rc_kube_options o = RC_KUBE_OPTIONS_INIT;

    o.kubeconfig = kubeconfig;
    o.context = context;
    o.log = log;
    return rc_kube_open_opts(out, &o, err);
}

int rc_kube_open_conn(struct rc_kube **out, const struct rd_cluster_conn *conn,
                      const struct rc_kube_options *o, struct rc_err *err)
{
    struct rc_kube_options def = RC_KUBE_OPTIONS_INIT;
    struct rc_kubeconfig *kc = NULL;
    int error;

    *out = NULL;
    if (!o)
        o = &def;
    error = rc_kubeconfig_select(&kc, o->sources, conn, o->log, err);
    if (error < 0)
        return error;
    return open_kc(out, kc, o, err);
}

static void gv_clear(struct kgv *g)
{
    for (size_t i = 0; i < g->nres; i++) {
        free(g->res[i].name);
        free(g->res[i].kind);
    }
    free(g->res);
    g->res = NULL;
    g->nres = g->cap = 0;
    free(g->failed);
    g->failed = NULL;
}

void rc_kube_invalidate(struct rc_kube *k)
{
    for (size_t i = 0; i < k->ngvs; i++) {
        gv_clear(&k->gvs[i]);
        free(k->gvs[i].gv);
    }
    free(k->gvs);
    k->gvs = NULL;
    k->ngvs = k->capgvs = 0;
}

void rc_kube_free(struct rc_kube *k)
{
    if (!k)
        return;
    rc_kube_invalidate(k);
    rc_http_free(k->http);
    rc_kubeconfig_free(k->kc);
    free(k);
}

const char *rc_kube_server(const struct rc_kube *k)
{
    return k->kc->server;
}

const char *rc_kube_namespace(const struct rc_kube *k)
{
    return k->kc->ns;
}

long rc_kube_last_status(const struct rc_kube *k)
{
    return k->last_status;
}

const char *rc_kube_last_reason(const struct rc_kube *k)
{
    return k->last_reason;
}

/* ==== requests ==== */

int rc_kube_escape(struct rc_buf *out, const char *s, struct rc_err *err)
{
    static const char hex[] = "0123456789ABCDEF";

    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        int keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                   c == '-' || c == '.' || c == '_' || c == '~';
        int error;

        if (keep) {
            error = rc_buf_putc(out, (char)c, err);
        } else {
            char enc[3] = {'%', hex[c >> 4], hex[c & 15]};
            error = rc_buf_add(out, enc, 3, err);
        }
        if (error < 0)
            return error;
    }
    return RC_OK;
}

/* Turn a non-2xx response into err, from its Status object when there is one; the Status
 * reason goes into reason (size n). A 401 names the kubeconfig, context and user whose
 * credentials were refused (never the credential). */
static int status_error_r(const struct rc_kube *k, const char *method, const char *path,
                          const struct rc_http_response *resp, char *reason, size_t n,
                          struct rc_err *err)
{
    cJSON *st = NULL;
    const char *msg = NULL;
    int code;
    char where[256];

    rc_http_without_query(where, sizeof(where), path);
    reason[0] = '\0';
    if (resp->status >= 200 && resp->status < 300)
        return RC_OK;
    if (!strncmp(resp->content_type, "application/json", 16))
        st = cJSON_ParseWithLength(resp->body.ptr, resp->body.len);
    if (st) {
        const cJSON *kind = cJSON_GetObjectItemCaseSensitive(st, "kind");
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(st, "message");
        const cJSON *r = cJSON_GetObjectItemCaseSensitive(st, "reason");

        if (cJSON_IsString(kind) && !strcmp(kind->valuestring, "Status")) {
            if (cJSON_IsString(m) && m->valuestring[0])
                msg = m->valuestring;
            if (cJSON_IsString(r))
                snprintf(reason, n, "%s", r->valuestring);
        }
    }
    code = resp->status == 404 ? RC_ENOTFOUND : resp->status == 409 ? RC_ECONFLICT : RC_EHTTP;
    if (resp->status == 401)
        rc_err_set(err, code,
                   "unauthorized: user '%s' of context '%s' in kubeconfig '%s' refused by %s: %s "
                   "(%s %s: 401); renew that user's credentials",
                   k->kc->user ? k->kc->user : "(none)", k->kc->context ? k->kc->context : "",
                   k->kc->file ? k->kc->file : "", k->kc->server, msg ? msg : "Unauthorized",
                   method, where);
    else if (msg)
        rc_err_set(err, code, "%s (%s %s: %ld)", msg, method, where, resp->status);
    else
        rc_err_set(err, code, "server answered %ld to %s %s", resp->status, method, where);
    cJSON_Delete(st);
    return code;
}

static int status_error(struct rc_kube *k, const char *method, const char *path,
                        const struct rc_http_response *resp, struct rc_err *err)
{
    return status_error_r(k, method, path, resp, k->last_reason, sizeof(k->last_reason), err);
}

/* Send with credentials; on 401 with an exec plugin, refresh and try once more. */
static int send_authed_stream(struct rc_kube *k, const char *method, const char *path,
                              const char *content_type, const char *body, size_t body_len,
                              const struct rc_http_request *stream, struct rc_http_response *resp,
                              struct rc_err *err)
{
    struct rc_buf url = RC_BUF_INIT;
    int error = RC_OK;

    rc_buf_printf(&url, NULL, "%s%s", k->kc->server, path);
    for (int attempt = 0; attempt < 2; attempt++) {
        struct rc_http_request req = {.method = method,
                                      .url = url.ptr,
                                      .content_type = content_type,
                                      .body = body,
                                      .body_len = body_len};
        int cert_changed = 0;

        if (stream) {
            req.no_retry = 1;
            req.on_data = stream->on_data;
            req.data_payload = stream->data_payload;
            req.stop = stream->stop;
            req.timeout_ms = stream->timeout_ms;
        }

        error = rc_kubeconfig_bearer(k->kc, attempt > 0, &req.bearer, &cert_changed, err);
        if (error < 0)
            break;
        if (cert_changed)
            rc_http_set_client_cert(k->http, k->kc->exec_cert, k->kc->exec_cert_len,
                                    k->kc->exec_key, k->kc->exec_key_len);
        rc_http_response_release(resp);
        error = rc_http_do(k->http, &req, resp, err);
        k->last_status = resp->status;
        if (error < 0)
            break;
        if (resp->status != 401 || !k->kc->exec)
            break;
        if (k->log)
            rc_log_debug(k->log, "unauthorized by '%s': running the credential plugin again",
                         k->kc->server);
    }
    rc_buf_release(&url);
    return error;
}

static int send_authed(struct rc_kube *k, const char *method, const char *path,
                       const char *content_type, const char *body, size_t body_len,
                       struct rc_http_response *resp, struct rc_err *err)
{
    return send_authed_stream(k, method, path, content_type, body, body_len, NULL, resp, err);
}

int rc_kube_request(struct rc_kube *k, const char *method, const char *path,
                    const char *content_type, const char *body, size_t body_len,
                    struct rc_http_response *resp, struct rc_err *err)
{
    int error;

    k->last_reason[0] = '\0';
    error = send_authed(k, method, path, content_type, body, body_len, resp, err);
    if (error < 0)
        return error;
    return status_error(k, method, path, resp, err);
}

/* GET path and parse the JSON body into *out. */
/* GET path as JSON into *out; *too_large (may be NULL): 1 when the answer failed for being
 * larger than options.http.max_body. */
static int get_json_sized(struct rc_kube *k, const char *path, cJSON **out, int *too_large,
                          struct rc_err *err)
{
    struct rc_http_response resp = RC_HTTP_RESPONSE_INIT;
    int error = rc_kube_request(k, "GET", path, NULL, NULL, 0, &resp, err);

    *out = NULL;
    if (too_large)
        *too_large = error < 0 && resp.too_large;
    if (error == RC_OK) {
        *out = cJSON_ParseWithLength(resp.body.ptr, resp.body.len);
        if (!*out)
            error = rc_err_set(err, RC_EHTTP, "invalid JSON from %s", path);
    }
    rc_http_response_release(&resp);
    return error;
}

static int get_json(struct rc_kube *k, const char *path, cJSON **out, struct rc_err *err)
{
    return get_json_sized(k, path, out, NULL, err);
}

/* ==== discovery ==== */

static struct kgv *gv_find(struct rc_kube *k, const char *gv)
{
    for (size_t i = 0; i < k->ngvs; i++) {
        if (!strcmp(k->gvs[i].gv, gv))
            return &k->gvs[i];
    }
    return NULL;
}

/* Fetch one group/version's resource list into the cache. */
static int gv_fetch(struct rc_kube *k, const char *gv, struct kgv **out, struct rc_err *err)
{
    struct rc_buf path = RC_BUF_INIT;
    cJSON *list = NULL;
    const cJSON *r;
    struct kgv *g = gv_find(k, gv);
    int error;

    if (!g) {
        k->gvs = rc_xgrow(k->gvs, &k->capgvs, k->ngvs + 1, sizeof(*k->gvs));
        g = &k->gvs[k->ngvs++];
        memset(g, 0, sizeof(*g));
        g->gv = rc_xstrdup(gv);
    }
    gv_clear(g);
    g->served = 0;
    if (strchr(gv, '/'))
        rc_buf_printf(&path, NULL, "/apis/%s", gv);
    else
        rc_buf_printf(&path, NULL, "/api/%s", gv);
    error = get_json(k, path.ptr, &list, err);
    if (error == RC_ENOTFOUND) {
        *out = g; /* not served: cached as such until invalidated */
        error = RC_OK;
        goto done;
    }
    if (error == RC_EHTTP && k->last_status >= 500) {
        /* this group/version alone: the server answers, the API behind it does not */
        g->failed = rc_xstrdup(err->msg);
        *out = g;
        goto done;
    }
    if (error < 0)
        goto done;
    g->served = 1;
    cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(list, "resources"))
    {
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(r, "name");
        const cJSON *kind = cJSON_GetObjectItemCaseSensitive(r, "kind");
        const cJSON *nsd = cJSON_GetObjectItemCaseSensitive(r, "namespaced");
        struct kres *res;

        if (!cJSON_IsString(name) || !cJSON_IsString(kind) || strchr(name->valuestring, '/'))
            continue; /* subresources: pods/status */
        g->res = rc_xgrow(g->res, &g->cap, g->nres + 1, sizeof(*g->res));
        res = &g->res[g->nres++];
        res->name = rc_xstrdup(name->valuestring);
        res->kind = rc_xstrdup(kind->valuestring);
        res->namespaced = cJSON_IsTrue(nsd);
    }
    *out = g;
done:
    cJSON_Delete(list);
    rc_buf_release(&path);
    return error;
}

int rc_kube_discover(struct rc_kube *k, struct rc_err *err)
{
    cJSON *api = NULL, *apis = NULL;
    const cJSON *it, *grp;
    struct kgv *g;
    int error;

    rc_kube_invalidate(k);
    error = get_json(k, "/api", &api, err);
    if (error < 0)
        goto done;
    cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(api, "versions"))
    {
        if (cJSON_IsString(it) && (error = gv_fetch(k, it->valuestring, &g, err)) < 0)
            goto done;
    }
    error = get_json(k, "/apis", &apis, err);
    if (error < 0)
        goto done;
    cJSON_ArrayForEach(grp, cJSON_GetObjectItemCaseSensitive(apis, "groups"))
    {
        cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(grp, "versions"))
        {
            const cJSON *gv = cJSON_GetObjectItemCaseSensitive(it, "groupVersion");
            if (cJSON_IsString(gv) && (error = gv_fetch(k, gv->valuestring, &g, err)) < 0)
                goto done;
        }
    }
done:
    cJSON_Delete(api);
    cJSON_Delete(apis);
    return error;
}

static const struct kres *gv_lookup(const struct kgv *g, const char *kind)
{
    for (size_t i = 0; i < g->nres; i++) {
        if (!strcmp(g->res[i].kind, kind))
            return &g->res[i];
    }
    return NULL;
}

int rc_kube_resource(struct rc_kube *k, const char *api_version, const char *kind,
                     const char **resource, int *namespaced, struct rc_err *err)
{
    struct kgv *g = gv_find(k, api_version);
    const struct kres *r = NULL;
    int error;

    if (g && g->failed) {
        /* the answer kept for its group/version: no request is made for this object, so
         * nothing reads as one more server error (rc_apply stops a cluster after five in a
         * row) */
        k->last_status = 0;
        return rc_err_set(err, RC_EHTTP, "%s", g->failed);
    }
    if (g)
        r = gv_lookup(g, kind);
    if (!r) {
        /* unknown group/version, or a kind missing from it: (re)fetch it once */
        error = gv_fetch(k, api_version, &g, err);
        if (error < 0)
            return error;
        r = gv_lookup(g, kind);
    }
    if (!r)
        return rc_err_set(err, RC_ENOTFOUND, "no resource for kind '%s' in '%s' on '%s'", kind,
                          api_version, k->kc->server);
    *resource = r->name;
    if (namespaced)
        *namespaced = r->namespaced;
    return RC_OK;
}

int rc_kube_prepare(struct rc_kube *k, const char *const *api_versions, size_t n,
                    struct rc_err *err)
{
    for (size_t i = 0; i < n; i++) {
        struct kgv *g = NULL;
        int error;

        if (!api_versions[i] || gv_find(k, api_versions[i]))
            continue;
        error = gv_fetch(k, api_versions[i], &g, err);
        if (error < 0 && !(g && g->failed))
            return error;
    }
    rc_err_clear(err);
    return RC_OK;
}

int rc_kube_path(struct rc_buf *out, struct rc_kube *k, const char *api_version, const char *kind,
                 const char *ns, const char *name, struct rc_err *err)
{
    const char *resource;
    int namespaced = 0;
    int error = rc_kube_resource(k, api_version, kind, &resource, &namespaced, err);

    if (error < 0)
        return error;
    error =
        rc_buf_printf(out, err, "%s%s", strchr(api_version, '/') ? "/apis/" : "/api/", api_version);
    if (error == RC_OK && namespaced && (ns || name))
        error = rc_buf_printf(out, err, "/namespaces/%s", ns && *ns ? ns : "default");
    if (error == RC_OK)
        error = rc_buf_printf(out, err, "/%s", resource);
    if (error == RC_OK && name)
        error = rc_buf_printf(out, err, "/%s", name);
    return error;
}

/* ==== objects ==== */

static const char *obj_str(const cJSON *o, const char *a, const char *b)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, a);

    if (b)
        v = cJSON_GetObjectItemCaseSensitive(v, b);
    return cJSON_IsString(v) && v->valuestring[0] ? v->valuestring : NULL;
}

/* Names go into paths unescaped: refuse anything that is not a plain path segment. */
static int check_segment(const char *s, const char *what, struct rc_err *err)
{
    if (!s || !*s)
        return rc_err_set(err, RC_EINVALID, "object without %s", what);
    if (!strcmp(s, ".") || !strcmp(s, "..") || strpbrk(s, "/?#% \t\r\n"))
        return rc_err_set(err, RC_EINVALID, "invalid %s '%s'", what, s);
    return RC_OK;
}

int rc_kube_apply(struct rc_kube *k, const cJSON *obj, const char *field_manager, int force,
                  cJSON **result, struct rc_err *err)
{
    return rc_kube_apply_ex(k, obj, field_manager, force ? RC_KUBE_APPLY_FORCE : 0u, result, err);
}

int rc_kube_apply_ex(struct rc_kube *k, const cJSON *obj, const char *field_manager, unsigned flags,
                     cJSON **result, struct rc_err *err)
{
    const char *av = obj_str(obj, "apiVersion", NULL);
    const char *kind = obj_str(obj, "kind", NULL);
    const char *name = obj_str(obj, "metadata", "name");
    const char *ns = obj_str(obj, "metadata", "namespace");
    struct rc_buf path = RC_BUF_INIT;
    struct rc_http_response resp = RC_HTTP_RESPONSE_INIT;
    char *body = NULL;
    int error;

    if (result)
        *result = NULL;
    if (!av || !kind)
        return rc_err_set(err, RC_EINVALID, "object without apiVersion or kind");
    if ((error = check_segment(name, "metadata.name", err)) < 0 ||
        (ns && (error = check_segment(ns, "metadata.namespace", err)) < 0))
        return error;
    if (!field_manager || !*field_manager)
        return rc_err_set(err, RC_EINVALID, "server-side apply needs a field manager");
    error = rc_kube_path(&path, k, av, kind, ns, name, err);
    if (error < 0)
        goto done;
    rc_buf_puts(&path, "?fieldManager=", NULL);
    rc_kube_escape(&path, field_manager, NULL);
    rc_buf_puts(&path, (flags & RC_KUBE_APPLY_FORCE) ? "&force=true" : "&force=false", NULL);
    if (flags & RC_KUBE_APPLY_DRY_RUN)
        rc_buf_puts(&path, "&dryRun=All", NULL);
    body = rd_json_print(obj, err); /* exact integers, numbers as kubectl writes them */
    if (!body) {
        error = RC_EINVALID;
        goto done;
    }
    error = rc_kube_request(k, "PATCH", path.ptr, "application/apply-patch+yaml", body,
                            strlen(body), &resp, err);
    if (error < 0)
        goto done;
    if (result) {
        *result = cJSON_ParseWithLength(resp.body.ptr, resp.body.len);
        if (!*result)
            error = rc_err_set(err, RC_EHTTP, "invalid JSON answer to apply of %s/%s '%s'", av,
                               kind, name);
    }
done:
    free(body);
    rc_http_response_release(&resp);
    rc_buf_release(&path);
    return error;
}

/* ==== many requests ==== */

int rc_kube_apply_call(struct rc_kube *k, struct rc_kube_call *c, const cJSON *obj,
                       const char *field_manager, unsigned flags)
{
    const char *av = obj_str(obj, "apiVersion", NULL);
    const char *kind = obj_str(obj, "kind", NULL);
    const char *name = obj_str(obj, "metadata", "name");
    const char *ns = obj_str(obj, "metadata", "namespace");
    struct rc_buf path = RC_BUF_INIT;
    int error;

    memset(c, 0, sizeof(*c));
    c->resp = (struct rc_http_response)RC_HTTP_RESPONSE_INIT;
    if (!av || !kind) {
        error = rc_err_set(&c->err, RC_EINVALID, "object without apiVersion or kind");
        goto done;
    }
    if ((error = check_segment(name, "metadata.name", &c->err)) < 0 ||
        (ns && (error = check_segment(ns, "metadata.namespace", &c->err)) < 0))
        goto done;
    if (!field_manager || !*field_manager) {
        error = rc_err_set(&c->err, RC_EINVALID, "server-side apply needs a field manager");
        goto done;
    }
    if ((error = rc_kube_path(&path, k, av, kind, ns, name, &c->err)) < 0)
        goto done;
    rc_buf_puts(&path, "?fieldManager=", NULL);
    rc_kube_escape(&path, field_manager, NULL);
    rc_buf_puts(&path, (flags & RC_KUBE_APPLY_FORCE) ? "&force=true" : "&force=false", NULL);
    if (flags & RC_KUBE_APPLY_DRY_RUN)
        rc_buf_puts(&path, "&dryRun=All", NULL);
    c->method = "PATCH";
    c->path = rc_xstrdup(path.ptr);
    c->content_type = "application/apply-patch+yaml";
    c->body = rd_json_print(obj, &c->err); /* exact integers, numbers as kubectl writes them */
    if (!c->body) {
        error = RC_EINVALID;
        goto done;
    }
    c->body_len = strlen(c->body);
    c->ready = 1;
done:
    rc_buf_release(&path);
    c->rc = error;
    if (error < 0)
        c->status = k->last_status;
    return error;
}

/* Fill c with method and the path of one object (no query); the body is left to the caller. */
static int object_call(struct rc_kube *k, struct rc_kube_call *c, const char *method,
                       const char *api_version, const char *kind, const char *ns, const char *name)
{
    struct rc_buf path = RC_BUF_INIT;
    int error;

    memset(c, 0, sizeof(*c));
    c->resp = (struct rc_http_response)RC_HTTP_RESPONSE_INIT;
    if ((error = check_segment(name, "name", &c->err)) < 0 ||
        (ns && (error = check_segment(ns, "namespace", &c->err)) < 0))
        goto done;
    if ((error = rc_kube_path(&path, k, api_version, kind, ns, name, &c->err)) < 0)
        goto done;
    c->method = method;
    c->path = rc_xstrdup(path.ptr);
    c->ready = 1;
done:
    rc_buf_release(&path);
    c->rc = error;
    if (error < 0)
        c->status = k->last_status;
    return error;
}

int rc_kube_get_call(struct rc_kube *k, struct rc_kube_call *c, const char *api_version,
                     const char *kind, const char *ns, const char *name)
{
    return object_call(k, c, "GET", api_version, kind, ns, name);
}

/* The DeleteOptions body of rc_kube_delete (malloc'd). */
static char *delete_options(const char *uid)
{
    cJSON *opts = cJSON_CreateObject();
    char *body;

    cJSON_AddStringToObject(opts, "kind", "DeleteOptions");
    cJSON_AddStringToObject(opts, "apiVersion", "v1");
    cJSON_AddStringToObject(opts, "propagationPolicy", "Background");
    if (uid)
        cJSON_AddStringToObject(cJSON_AddObjectToObject(opts, "preconditions"), "uid", uid);
    body = cJSON_PrintUnformatted(opts);
    cJSON_Delete(opts);
    if (!body)
        abort(); /* out of memory: the policy of rc_mem.h */
    return body;
}

int rc_kube_delete_call(struct rc_kube *k, struct rc_kube_call *c, const char *api_version,
                        const char *kind, const char *ns, const char *name, const char *uid)
{
    int error = object_call(k, c, "DELETE", api_version, kind, ns, name);

    if (error < 0)
        return error;
    c->content_type = "application/json";
    c->body = delete_options(uid);
    c->body_len = strlen(c->body);
    return RC_OK;
}

void rc_kube_call_release(struct rc_kube_call *c)
{
    free(c->path);
    free(c->body);
    c->path = NULL;
    c->body = NULL;
    rc_http_response_release(&c->resp);
}

struct many {
    struct rc_kube *k;
    struct rc_kube_call *calls;
    size_t *map; /* request index -> call index */
    struct rc_http_response *resps;
    int *codes;
    struct rc_err *errs;
    rc_kube_call_fn on_done;
    void *payload;
    int retry_401; /* hold 401s back for a second round: do not report them yet */
    size_t held;
};

static int many_done(void *payload, size_t i)
{
    struct many *m = payload;
    size_t ci = m->map[i];
    struct rc_kube_call *c = &m->calls[ci];

    /* the response moves into the call */
    rc_http_response_release(&c->resp);
    c->resp = m->resps[i];
    memset(&m->resps[i], 0, sizeof(m->resps[i]));
    c->status = c->resp.status;
    if (m->codes[i] != RC_OK) {
        c->rc = m->codes[i];
        c->err = m->errs[i];
        c->reason[0] = '\0';
    } else {
        c->rc = status_error_r(m->k, c->method, c->path, &c->resp, c->reason, sizeof(c->reason),
                               &c->err);
        if (c->status == 401 && m->retry_401) {
            m->held++;
            return 0;
        }
    }
    return m->on_done ? m->on_done(m->payload, c, ci) : 0;
}

int rc_kube_request_many(struct rc_kube *k, struct rc_kube_call *calls, size_t n,
                         size_t concurrency, rc_kube_call_fn on_done, void *payload,
                         struct rc_err *err)
{
    struct rc_http_request *reqs = rc_xcalloc(n + 1, sizeof(*reqs));
    struct rc_http_response *resps = rc_xcalloc(n + 1, sizeof(*resps));
    struct rc_err *errs = rc_xcalloc(n + 1, sizeof(*errs));
    size_t *map = rc_xcalloc(n + 1, sizeof(*map));
    int *codes = rc_xcalloc(n + 1, sizeof(*codes));
    struct rc_buf *urls = rc_xcalloc(n + 1, sizeof(*urls));
    struct many m;
    int error = RC_OK;

    if (concurrency == 0)
        concurrency = k->o.concurrency > 0 ? (size_t)k->o.concurrency : 1;
    memset(&m, 0, sizeof(m));
    m.k = k;
    m.calls = calls;
    m.map = map;
    m.resps = resps;
    m.codes = codes;
    m.errs = errs;
    m.on_done = on_done;
    m.payload = payload;
    for (size_t i = 0; i < n; i++)
        if (calls[i].ready)
            calls[i].rc = RC_HTTP_NOT_SENT;
    for (int round = 0; round < 2; round++) {
        const char *bearer = NULL;
        int cert_changed = 0;
        size_t nr = 0;

        for (size_t i = 0; i < n; i++) {
            struct rc_kube_call *c = &calls[i];

            if (!c->ready || (round == 1 && c->status != 401))
                continue;
            rc_http_response_release(&c->resp);
            map[nr] = i;
            rc_buf_reset(&urls[nr]);
            rc_buf_printf(&urls[nr], NULL, "%s%s", k->kc->server, c->path);
            reqs[nr].method = c->method;
            reqs[nr].url = urls[nr].ptr;
            reqs[nr].content_type = c->content_type;
            reqs[nr].body = c->body;
            reqs[nr].body_len = c->body_len;
            nr++;
        }
        if (nr == 0)
            break;
        error = rc_kubeconfig_bearer(k->kc, round > 0, &bearer, &cert_changed, err);
        if (error < 0) {
            for (size_t r = 0; r < nr; r++) {
                calls[map[r]].rc = error;
                calls[map[r]].err = *err;
            }
            break;
        }
        if (cert_changed)
            rc_http_set_client_cert(k->http, k->kc->exec_cert, k->kc->exec_cert_len,
                                    k->kc->exec_key, k->kc->exec_key_len);
        for (size_t r = 0; r < nr; r++)
            reqs[r].bearer = bearer;
        m.retry_401 = round == 0 && k->kc->exec != NULL;
        m.held = 0;
        error =
            rc_http_do_many(k->http, reqs, resps, codes, errs, nr, concurrency, many_done, &m, err);
        for (size_t r = 0; r < nr; r++) {
            if (codes[r] == RC_HTTP_NOT_SENT)
                calls[map[r]].rc = RC_HTTP_NOT_SENT;
            rc_http_response_release(&resps[r]);
        }
        if (error < 0 || m.held == 0)
            break;
        if (k->log)
            rc_log_debug(k->log, "unauthorized by '%s': running the credential plugin again",
                         k->kc->server);
    }
    for (size_t i = 0; i < n; i++)
        rc_buf_release(&urls[i]);
    free(urls);
    free(reqs);
    free(resps);
    free(errs);
    free(map);
    free(codes);
    return error;
}

int rc_kube_get(struct rc_kube *k, const char *api_version, const char *kind, const char *ns,
                const char *name, cJSON **out, struct rc_err *err)
{
    struct rc_buf path = RC_BUF_INIT;
    int error;

    *out = NULL;
    if ((error = check_segment(name, "name", err)) < 0 ||
        (ns && (error = check_segment(ns, "namespace", err)) < 0))
        return error;
    error = rc_kube_path(&path, k, api_version, kind, ns, name, err);
    if (error == RC_OK)
        error = get_json(k, path.ptr, out, err);
    rc_buf_release(&path);
    return error;
}

int rc_kube_delete(struct rc_kube *k, const char *api_version, const char *kind, const char *ns,
                   const char *name, const char *uid, struct rc_err *err)
{
    struct rc_buf path = RC_BUF_INIT;
    struct rc_http_response resp = RC_HTTP_RESPONSE_INIT;
    char *body = NULL;
    int error;

    if ((error = check_segment(name, "name", err)) < 0 ||
        (ns && (error = check_segment(ns, "namespace", err)) < 0))
        goto done;
    error = rc_kube_path(&path, k, api_version, kind, ns, name, err);
    if (error < 0)
        goto done;
    body = delete_options(uid);
    error =
        rc_kube_request(k, "DELETE", path.ptr, "application/json", body, strlen(body), &resp, err);
done:
    free(body);
    rc_http_response_release(&resp);
    rc_buf_release(&path);
    return error;
}

int rc_kube_list(struct rc_kube *k, const char *path, const char *label_selector,
                 rc_kube_item_fn fn, void *payload, struct rc_err *err)
{
    return rc_kube_list_rv(k, path, label_selector, fn, payload, NULL, 0, err);
}

int rc_kube_list_rv(struct rc_kube *k, const char *path, const char *label_selector,
                    rc_kube_item_fn fn, void *payload, char *rv, size_t rvlen, struct rc_err *err)
{
    char *cont = NULL;
    int first = 1;
    long limit = k->o.page_size;
    int error = RC_OK, too_large;

    for (;;) {
        struct rc_buf url = RC_BUF_INIT;
        cJSON *list = NULL;
        const cJSON *it, *c;

        rc_buf_printf(&url, NULL, "%s%climit=%ld", path, strchr(path, '?') ? '&' : '?', limit);
        if (label_selector && *label_selector) {
            rc_buf_puts(&url, "&labelSelector=", NULL);
            rc_kube_escape(&url, label_selector, NULL);
        }
        if (cont) {
            rc_buf_puts(&url, "&continue=", NULL);
            rc_kube_escape(&url, cont, NULL);
        }
        error = get_json_sized(k, url.ptr, &list, &too_large, err);
        rc_buf_release(&url);
        if (error < 0 && too_large && limit > 1) {
            /* items this big (pods with large annotations): the same page again, halved, and
             * the rest of the list in pages of that size; the server takes any limit with a
             * continue token */
            limit /= 2;
            if (k->log)
                rc_log_debug(k->log, "%s: %s; asking for pages of %ld items", path, err->msg,
                             limit);
            continue;
        }
        if (error < 0)
            break;
        if (first && rv && rvlen) {
            /* every page of one list is read at the first page's resourceVersion */
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(
                cJSON_GetObjectItemCaseSensitive(list, "metadata"), "resourceVersion");
            rv[0] = '\0';
            if (cJSON_IsString(v) && strlen(v->valuestring) < rvlen)
                memcpy(rv, v->valuestring, strlen(v->valuestring) + 1);
        }
        first = 0;
        cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(list, "items"))
        {
            error = fn(payload, it, err);
            if (error < 0)
                break;
        }
        c = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(list, "metadata"),
                                             "continue");
        free(cont);
        cont = (error == RC_OK && cJSON_IsString(c) && c->valuestring[0])
                   ? rc_xstrdup(c->valuestring)
                   : NULL;
        cJSON_Delete(list);
        if (error < 0 || !cont)
            break;
    }
    free(cont);
    return error;
}

int rc_kube_list_kind(struct rc_kube *k, const char *api_version, const char *kind, const char *ns,
                      const char *label_selector, rc_kube_item_fn fn, void *payload,
                      struct rc_err *err)
{
    struct rc_buf path = RC_BUF_INIT;
    int error;

    if (ns && (error = check_segment(ns, "namespace", err)) < 0)
        return error;
    error = rc_kube_path(&path, k, api_version, kind, ns, NULL, err);
    if (error == RC_OK)
        error = rc_kube_list(k, path.ptr, label_selector, fn, payload, err);
    rc_buf_release(&path);
    return error;
}

/* ==== watch ==== */

struct watch_state {
    const char *where; /* the path, for messages */
    rc_kube_event_fn fn;
    void *payload;
    char *rv;
    size_t rvlen;
    struct rc_buf line; /* the event being received, bounded by options.http.max_body */
    int error;          /* the event that ended the transfer: err says why */
    struct rc_err err;
    long status;     /* an ERROR event's Status: its code and reason */
    char reason[64]; /* (the stream's own status is 200) */
};

/* One line of the stream: one event. */
static int watch_event(struct watch_state *w, const char *p, size_t n)
{
    cJSON *ev;
    const cJSON *obj, *v;
    const char *type;
    int error = RC_OK;

    while (n && (p[n - 1] == '\r' || p[n - 1] == ' '))
        n--;
    if (!n)
        return RC_OK;
    if (!(ev = cJSON_ParseWithLength(p, n)))
        return rc_err_set(&w->err, RC_EHTTP, "invalid JSON in an event of WATCH %s", w->where);
    type = obj_str(ev, "type", NULL);
    obj = cJSON_GetObjectItemCaseSensitive(ev, "object");
    if (!type || !cJSON_IsObject(obj)) {
        error =
            rc_err_set(&w->err, RC_EHTTP, "an event of WATCH %s has no type or object", w->where);
    } else if (!strcmp(type, "ERROR")) {
        /* a Status: 410 Expired when the resourceVersion is older than the server keeps */
        const cJSON *code = cJSON_GetObjectItemCaseSensitive(obj, "code");
        const char *msg = obj_str(obj, "message", NULL);
        const char *reason = obj_str(obj, "reason", NULL);

        w->status = cJSON_IsNumber(code) ? (long)code->valuedouble : 0;
        snprintf(w->reason, sizeof(w->reason), "%s", reason ? reason : "");
        if (!msg)
            msg = "an error event";
        error = rc_err_set(&w->err, w->status == 404 ? RC_ENOTFOUND : RC_EHTTP,
                           "%s (WATCH %s: %ld)", msg, w->where, w->status);
    } else if (strcmp(type, "ADDED") && strcmp(type, "MODIFIED") && strcmp(type, "DELETED") &&
               strcmp(type, "BOOKMARK")) {
        error = rc_err_set(&w->err, RC_EHTTP, "an event of WATCH %s has an unknown type", w->where);
    } else if ((error = w->fn(w->payload, type, obj, &w->err)) == RC_OK) {
        v = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(obj, "metadata"),
                                             "resourceVersion");
        if (cJSON_IsString(v) && v->valuestring[0] && strlen(v->valuestring) < w->rvlen)
            memcpy(w->rv, v->valuestring, strlen(v->valuestring) + 1);
    }
    cJSON_Delete(ev);
    return error;
}

/* rc_http's sink: the body cut into lines, each an event. Nonzero ends the transfer. */
static int watch_data(void *payload, const char *p, size_t n)
{
    struct watch_state *w = payload;

    while (n) {
        const char *nl = memchr(p, '\n', n);
        size_t take = nl ? (size_t)(nl - p) : n;

        if (nl && !w->line.len) {
            w->error = watch_event(w, p, take); /* a whole line in this piece: no copy */
        } else if (rc_buf_add(&w->line, p, take, &w->err) < 0) {
            w->error =
                rc_err_set(&w->err, RC_ERROR, "an event of WATCH %s is larger than %zu bytes",
                           w->where, w->line.max);
        } else if (nl) {
            w->error = watch_event(w, w->line.ptr, w->line.len);
            rc_buf_reset(&w->line);
        }
        if (w->error < 0)
            return 1;
        p += take + (nl != NULL);
        n -= take + (nl != NULL);
    }
    return 0;
}

int rc_kube_watch(struct rc_kube *k, const char *path, char *rv, size_t rvlen, long timeout_s,
                  rc_kube_event_fn fn, void *payload, const atomic_int *stop, struct rc_err *err)
{
    struct rc_buf url = RC_BUF_INIT;
    struct rc_http_response resp = RC_HTTP_RESPONSE_INIT;
    struct rc_http_request stream;
    struct watch_state w;
    char where[256];
    int error;

    rc_http_without_query(where, sizeof(where), path);
    memset(&w, 0, sizeof(w));
    w.where = where;
    w.fn = fn;
    w.payload = payload;
    w.rv = rv;
    w.rvlen = rvlen;
    rc_buf_init(&w.line, k->o.http.max_body);
    memset(&stream, 0, sizeof(stream));
    stream.on_data = watch_data;
    stream.data_payload = &w;
    stream.stop = stop;
    /* the server ends the watch at timeout_s; a connection that died without a word is
     * found out half a minute later */
    stream.timeout_ms = (timeout_s + 30) * 1000;
    rc_buf_printf(&url, NULL, "%s%cwatch=1&allowWatchBookmarks=true&timeoutSeconds=%ld", path,
                  strchr(path, '?') ? '&' : '?', timeout_s);
    if (rv[0]) {
        rc_buf_puts(&url, "&resourceVersion=", NULL);
        rc_kube_escape(&url, rv, NULL);
    }
    k->last_reason[0] = '\0';
    error = send_authed_stream(k, "GET", url.ptr, NULL, NULL, 0, &stream, &resp, err);
    if (w.error < 0) {
        error = w.error;
        rc_err_set(err, w.err.code, "%s", w.err.msg);
        if (w.status) {
            k->last_status = w.status;
            memcpy(k->last_reason, w.reason, sizeof(k->last_reason));
        }
    } else if (error == RC_OK && (error = status_error(k, "GET", url.ptr, &resp, err)) == RC_OK &&
               w.line.len && !(stop && *stop)) {
        error = rc_err_set(err, RC_ETRANSPORT, "WATCH %s ended inside an event", where);
    }
    rc_buf_release(&w.line);
    rc_buf_release(&url);
    rc_http_response_release(&resp);
    return error;
}

static int crd_established(const cJSON *crd)
{
    const cJSON *c;

    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(
                              cJSON_GetObjectItemCaseSensitive(crd, "status"), "conditions"))
    {
        const char *type = obj_str(c, "type", NULL);
        const char *st = obj_str(c, "status", NULL);

        if (type && st && !strcmp(type, "Established") && !strcmp(st, "True"))
            return 1;
    }
    return 0;
}

int rc_kube_wait_crd(struct rc_kube *k, const char *name, long timeout_ms, struct rc_err *err)
{
    long waited = 0;
    int error;

    if ((error = check_segment(name, "crd name", err)) < 0)
        return error;
    for (;;) {
        cJSON *crd = NULL;
        struct rc_buf path = RC_BUF_INIT;
        int ok;

        rc_buf_printf(&path, NULL, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/%s",
                      name);
        error = get_json(k, path.ptr, &crd, err);
        rc_buf_release(&path);
        if (error < 0 && error != RC_ENOTFOUND)
            return error;
        ok = error == RC_OK && crd_established(crd);
        cJSON_Delete(crd);
        if (ok) {
            rc_kube_invalidate(k);
            return RC_OK;
        }
        if (waited >= timeout_ms)
            return rc_err_set(err, RC_ERROR, "crd '%s' not established after %ld ms", name, waited);
        if (k->o.http.sleep_ms)
            k->o.http.sleep_ms(k->o.http.sleep_payload, k->o.poll_interval_ms);
        else
            default_sleep(k->o.poll_interval_ms);
        waited += k->o.poll_interval_ms;
    }
}
