/*
 * rc_kube.h - a Kubernetes API client for one cluster: discovery, server-side apply, get,
 * delete with a uid precondition, paged lists, waiting for CRDs.
 *
 * Requests it sends (all with Accept: application/json):
 *   GET    /api, /api/v1, /apis, /apis/<g>/<v>                   legacy discovery
 *   PATCH  <object path>?fieldManager=<m>&force=true|false         Content-Type
 *          application/apply-patch+yaml, body: the object as JSON (valid YAML)
 *   GET    <object path>
 *   DELETE <object path>   Content-Type application/json, body DeleteOptions
 *          {propagationPolicy: Background, preconditions: {uid}}
 *   GET    <collection path>?labelSelector=..&limit=..&continue=..
 * Object paths: /api/v1[/namespaces/<ns>]/<resource>/<name> for the core group,
 * /apis/<g>/<v>[/namespaces/<ns>]/<resource>/<name> otherwise; resource names come from
 * discovery, cached per client (a group/version is fetched when first needed, and fetched
 * again once when a kind is missing from it, for CRDs established since).
 *
 * Errors: the server's Status message goes into err: 404 → RC_ENOTFOUND, 409 → RC_ECONFLICT,
 * other non-2xx → RC_EHTTP; no answer → RC_ETRANSPORT. rc_kube_last_status/_reason tell the
 * HTTP status and Status reason of the last request (e.g. "Conflict", "AlreadyExists").
 * Credentials never appear in logs or errors. A 401 re-runs an exec credential plugin and
 * retries once.
 *
 * A struct rc_kube is used by one thread at a time (one per cluster). Response sizes are
 * bounded by options.http.max_body.
 */
#ifndef RC_KUBE_H
#define RC_KUBE_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "rc_err.h"
#include "rc_http.h"
#include "rc_kubeconfig.h"
#include "rc_log.h"
#include "rd_cluster.h"

struct rc_kube;
struct rc_watch_set;

struct rc_kube_options {
    const char *kubeconfig; /* file; NULL: $KUBECONFIG, else in-cluster when its environment
                               variables are set, else ~/.kube/config */
    const char *context;    /* NULL: current-context */
    const char *sa_dir; /* in-cluster files; NULL: /var/run/secrets/kubernetes.io/serviceaccount */
    int in_cluster;     /* 1: in-cluster config whatever the rest says */
    struct rc_http_options http;
    long page_size;        /* list limit per page */
    long poll_interval_ms; /* CRD wait */
    long exec_timeout_ms;  /* exec credential plugins */
    const struct rc_log *log;
    /* the operator's kubeconfigs, among which rc_kube_open_conn lets a Cluster select
     * (docs/security.md); NULL: none, so only simulated clusters and nothing live */
    const struct rc_kubeconfig_sources *sources;
    int concurrency; /* requests in flight at once where a caller sends many (apply, delete) */
    /* observe: the clusters the last pass found unreachable (rc_outage_names: sorted by
     * name), each read with
     * one attempt per request instead of http.max_attempts, so that a cluster that stays down
     * costs a pass its connect timeout once, not once per attempt */
    const char *const *known_down;
    size_t nknown_down;
    /* observe in loop mode: the watchers that keep the live clusters' pods between passes
     * (rc_watch.h); NULL: every pass lists them (--once, plan, status) */
    struct rc_watch_set *watches;
};

#define RC_KUBE_DEFAULT_CONCURRENCY 32
#define RC_KUBE_OPTIONS_INIT                                                                       \
    {                                                                                              \
        NULL, NULL, NULL, 0, RC_HTTP_OPTIONS_INIT, 500, 500, 30000, NULL, NULL,                    \
            RC_KUBE_DEFAULT_CONCURRENCY, NULL, 0, NULL                                             \
    }

/* Open a client for a kubeconfig context (see options.kubeconfig for NULL). Nothing is sent
 * yet. Free with rc_kube_free. */
int rc_kube_open(struct rc_kube **out, const char *kubeconfig, const char *context,
                 const struct rc_log *log, struct rc_err *err);
int rc_kube_open_opts(struct rc_kube **out, const struct rc_kube_options *o, struct rc_err *err);
/* Open the client for a Cluster object's connection: what conn selects among the operator's
 * kubeconfigs o->sources (rc_kubeconfig_select; RC_EINVALID for a simulated cluster, or a
 * selection that is not allowed). o: NULL for RC_KUBE_OPTIONS_INIT; its kubeconfig, context
 * and in_cluster are not used. */
int rc_kube_open_conn(struct rc_kube **out, const struct rd_cluster_conn *conn,
                      const struct rc_kube_options *o, struct rc_err *err);
void rc_kube_free(struct rc_kube *k);

/* Server URL and default namespace of the context (borrowed, live as long as k). */
const char *rc_kube_server(const struct rc_kube *k);
const char *rc_kube_namespace(const struct rc_kube *k);

/* HTTP status (0: no answer) and Status reason ("" when none) of the last request. */
long rc_kube_last_status(const struct rc_kube *k);
const char *rc_kube_last_reason(const struct rc_kube *k);

/* ---- discovery ---- */

/* Fetch every group/version the server serves (/api, /api/v1, /apis, /apis/<g>/<v> for
 * each version listed), replacing the cache. Also a quick "is the cluster reachable". */
int rc_kube_discover(struct rc_kube *k, struct rc_err *err);
/* Fetch the group/versions given (NULLs and repeats skipped) that are not cached: what a
 * client about to use those kinds needs, and no more (a real cluster serves dozens; apply
 * uses a few). The first request tells whether the cluster answers: an error is returned
 * (RC_ETRANSPORT, a 401, ...) but a 5xx for one group/version (an aggregated API whose
 * service is down), which is kept instead: rc_kube_resource fails its kinds with that answer,
 * without asking again, until discovery is forgotten (rc_kube_invalidate). */
int rc_kube_prepare(struct rc_kube *k, const char *const *api_versions, size_t n,
                    struct rc_err *err);
/* Forget cached discovery (e.g. after applying CRDs). */
void rc_kube_invalidate(struct rc_kube *k);
/* Resource name ("rayjobs", borrowed, lives as long as k or until invalidated) and scope of
 * a kind. RC_ENOTFOUND: "no resource for kind 'RayJob' in 'ray.io/v1'" (group/version not
 * served, or kind not in it after one refresh). */
int rc_kube_resource(struct rc_kube *k, const char *api_version, const char *kind,
                     const char **resource, int *namespaced, struct rc_err *err);
/* The REST path of an object (name NULL: its collection; ns NULL for a namespaced kind:
 * every namespace when name is NULL, else "default"; ignored for cluster-scoped kinds),
 * appended to out. */
int rc_kube_path(struct rc_buf *out, struct rc_kube *k, const char *api_version, const char *kind,
                 const char *ns, const char *name, struct rc_err *err);

/* ---- objects ---- */

/* Server-side apply of obj (apiVersion, kind, metadata.name required; metadata.namespace, or
 * "default" for namespaced kinds). field_manager e.g. "rightplace"; force: take fields from
 * other managers. *result (may be NULL) gets the object the server returned (caller
 * cJSON_Deletes it). */
int rc_kube_apply(struct rc_kube *k, const cJSON *obj, const char *field_manager, int force,
                  cJSON **result, struct rc_err *err);
enum rc_kube_apply_flags {
    RC_KUBE_APPLY_FORCE = 1,  /* force=true */
    RC_KUBE_APPLY_DRY_RUN = 2 /* dryRun=All: the server computes the result, stores nothing */
};
/* rc_kube_apply with flags; with RC_KUBE_APPLY_DRY_RUN, *result is what the object would
 * become (for drift checks against rc_kube_get). */
int rc_kube_apply_ex(struct rc_kube *k, const cJSON *obj, const char *field_manager, unsigned flags,
                     cJSON **result, struct rc_err *err);

/* GET one object into *out (caller deletes). RC_ENOTFOUND when absent. */
int rc_kube_get(struct rc_kube *k, const char *api_version, const char *kind, const char *ns,
                const char *name, cJSON **out, struct rc_err *err);
/* DELETE with propagationPolicy Background and, when uid is not NULL, preconditions.uid
 * (RC_ECONFLICT when the object now has another uid). RC_ENOTFOUND when already gone. */
int rc_kube_delete(struct rc_kube *k, const char *api_version, const char *kind, const char *ns,
                   const char *name, const char *uid, struct rc_err *err);

/* Called for every item of a list (borrowed: valid during the call; items of typed lists
 * carry no apiVersion/kind, as the real server sends them). A negative return stops the
 * list and is returned by rc_kube_list. */
typedef int (*rc_kube_item_fn)(void *payload, const cJSON *item, struct rc_err *err);

/* List a collection path ("/api/v1/pods", "/apis/apps/v1/namespaces/x/deployments"),
 * page by page (options.page_size, continue tokens; a page larger than
 * options.http.max_body is asked for again with half the items, down to one item, and the
 * rest of the list comes in pages of that size). label_selector may be NULL. The path
 * may carry a query already, e.g. "/api/v1/pods?fieldSelector=status.phase%21%3DSucceeded"
 * (escape it with rc_kube_escape). A 410 Gone (expired continue token) is RC_EHTTP: items
 * already delivered would be delivered again, so the caller decides whether to restart. */
int rc_kube_list(struct rc_kube *k, const char *path, const char *label_selector,
                 rc_kube_item_fn fn, void *payload, struct rc_err *err);
/* rc_kube_list, and the list's metadata.resourceVersion in rv (rvlen bytes; "" when the
 * server gave none or a longer one): a watch from it sees every change after the list. */
int rc_kube_list_rv(struct rc_kube *k, const char *path, const char *label_selector,
                    rc_kube_item_fn fn, void *payload, char *rv, size_t rvlen, struct rc_err *err);

/* Called for every event of a watch: type "ADDED", "MODIFIED", "DELETED" or "BOOKMARK"
 * (object borrowed, valid during the call; a bookmark's holds only its resourceVersion).
 * A negative return ends the watch and is returned by rc_kube_watch. */
typedef int (*rc_kube_event_fn)(void *payload, const char *type, const cJSON *object,
                                struct rc_err *err);

/*
 * Watch a collection path (as rc_kube_list takes it, its query included) from resourceVersion
 * rv: each change after rv comes to fn in order, as it happens, and rv follows the events
 * (bookmarks included, which are asked for), so that a watch started again from rv misses
 * nothing. The server ends the watch after about timeout_s seconds: RC_OK, and the caller
 * watches again from rv. *stop (may be NULL; read at least once a second) ends it sooner,
 * also RC_OK. A watch is one attempt, never retried here. An ERROR event, or an error
 * status, is RC_EHTTP with rc_kube_last_status set: 410 (reason "Expired") when rv is older
 * than the server remembers, so that only a new list can follow. An event larger than
 * options.http.max_body is RC_ERROR; no answer, or a stream cut inside an event, is
 * RC_ETRANSPORT.
 */
int rc_kube_watch(struct rc_kube *k, const char *path, char *rv, size_t rvlen, long timeout_s,
                  rc_kube_event_fn fn, void *payload, const atomic_int *stop, struct rc_err *err);

/* The same for a kind (ns NULL: all namespaces). */
int rc_kube_list_kind(struct rc_kube *k, const char *api_version, const char *kind, const char *ns,
                      const char *label_selector, rc_kube_item_fn fn, void *payload,
                      struct rc_err *err);

/* Poll the CRD `name` ("rayjobs.ray.io") until its Established condition is True, at most
 * timeout_ms (counted in poll intervals, not wall time; a missing CRD counts as not yet
 * established). Invalidates discovery on success. Running out of time is RC_ERROR
 * "crd 'x' not established after N ms"; request errors are returned as they come. */
int rc_kube_wait_crd(struct rc_kube *k, const char *name, long timeout_ms, struct rc_err *err);

/* A raw request to path (with query) relative to the server, with auth and Status error
 * handling; resp is filled (caller releases) whatever the status. */
int rc_kube_request(struct rc_kube *k, const char *method, const char *path,
                    const char *content_type, const char *body, size_t body_len,
                    struct rc_http_response *resp, struct rc_err *err);

/* ---- many requests at once ---- */

/* One request of rc_kube_request_many. The caller fills the request part (rc_kube_apply_call
 * does it for a server-side apply); the rest is the answer. */
struct rc_kube_call {
    const char *method;
    char *path; /* relative to the server, with query (malloc'd; rc_kube_call_release) */
    const char *content_type;
    char *body; /* malloc'd; NULL: none */
    size_t body_len;
    int ready; /* 1: send it; 0: rc and err already tell why not */
    /* the answer */
    int rc;          /* RC_OK (2xx), RC_ENOTFOUND (404), RC_ECONFLICT (409), RC_EHTTP,
                        RC_ETRANSPORT (no answer), RC_HTTP_NOT_SENT, RC_EINVALID (not ready) */
    long status;     /* HTTP status; 0: no answer */
    char reason[64]; /* the Status reason; "" when none */
    struct rc_err err;
    struct rc_http_response resp; /* the body, e.g. the object the server returned */
};

/* Fill c for a server-side apply of obj (as rc_kube_apply_ex: path from discovery, query,
 * body). When the object cannot be sent (no apiVersion, unknown kind, bad name) c->ready is 0
 * and c->rc/c->err say why; the return value is the same code. */
int rc_kube_apply_call(struct rc_kube *k, struct rc_kube_call *c, const cJSON *obj,
                       const char *field_manager, unsigned flags);
/* Fill c for a GET of one object (as rc_kube_get; parse c->resp.body when c->rc is RC_OK) or
 * a DELETE of one (as rc_kube_delete: propagationPolicy Background, preconditions.uid when uid
 * is not NULL). Not sendable (bad name, a kind the server does not serve: RC_ENOTFOUND):
 * c->ready is 0, c->rc/c->err say why, and that code is returned. */
int rc_kube_get_call(struct rc_kube *k, struct rc_kube_call *c, const char *api_version,
                     const char *kind, const char *ns, const char *name);
int rc_kube_delete_call(struct rc_kube *k, struct rc_kube_call *c, const char *api_version,
                        const char *kind, const char *ns, const char *name, const char *uid);
void rc_kube_call_release(struct rc_kube_call *c);

/* Called as each call finishes (its answer filled in), in completion order; nonzero: start
 * no more (those get RC_HTTP_NOT_SENT). */
typedef int (*rc_kube_call_fn)(void *payload, struct rc_kube_call *c, size_t i);

/* Send the ready calls with at most `concurrency` (0: options.concurrency) in flight over the
 * client's connections (see rc_http_do_many), with credentials; the answer of each is
 * classified as rc_kube_request does. A 401 with an exec credential plugin runs the plugin
 * again and sends the refused calls once more. on_done may be NULL. Errors: only when nothing
 * could be sent (credentials could not be had: every call gets that error too). */
int rc_kube_request_many(struct rc_kube *k, struct rc_kube_call *calls, size_t n,
                         size_t concurrency, rc_kube_call_fn on_done, void *payload,
                         struct rc_err *err);

/* Percent-encode a query value (RFC 3986 unreserved kept) onto out. */
int rc_kube_escape(struct rc_buf *out, const char *s, struct rc_err *err);

#endif
