/*
 * rc_watch.h - loop mode's watches of the live clusters' pods and nodes.
 *
 * Observe (rc_observe.c) reads each live cluster's nodes and the pods that count. Listing
 * them every pass made loop mode cost each API server a list of all its pods and nodes every
 * --interval, whatever had changed (about 1.6 GB of JSON a pass for 100 clusters of 3,000
 * pods, and about 1 MB a pass for each 100 nodes). In loop mode a pass that has listed a
 * cluster's pods (or nodes) hands what it kept of them, by namespace/name, to a watcher: a
 * thread of its own that watches that collection from the list's resourceVersion, with the
 * list's query, and applies each change to that table. The next pass takes the table instead
 * of listing, so that a pass costs each cluster what changed in it, as an informer costs a
 * controller. Each cluster has at most one watcher of each kind (enum rc_watch_kind).
 *
 * A watcher is trusted only while its watch holds. Anything else stops it, and the next pass
 * lists again and starts a new one: an ERROR event or error status (410 Expired when the
 * server no longer has the resourceVersion), a dropped connection, no word from the server
 * for the watch's timeout and half a minute, an event it cannot read, a Cluster whose
 * connection or whose resource names changed (its identity, below), a cluster no pass asked
 * for. So a watch never makes a cluster look reachable, or its pods and nodes current, when
 * a list would not: a pass that sends a cluster no list sends it a probe (rc_observe.c), and
 * a failing list or probe makes the cluster unreachable whatever its watchers hold.
 *
 * --once runs one pass, so it lists and starts no watcher (rc_pass gives observe a watch set
 * only when another pass follows).
 */
#ifndef RC_WATCH_H
#define RC_WATCH_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>
#include "pl_types.h"
#include "rc_kube.h"

struct rc_buf;

/* What a watcher follows: each cluster has at most one watcher of each. */
enum rc_watch_kind { RC_WATCH_PODS = 0, RC_WATCH_NODES = 1, RC_WATCH_NKINDS = 2 };

/* An object reduced to the bytes kept of it, appended to out (empty when called): 1, or 0
 * when it is not kept (a pod that does not count). Called on the watcher's thread, so it must
 * be reentrant. */
typedef int (*rc_watch_reduce_fn)(const cJSON *item, const struct pl_resnames *res,
                                  struct rc_buf *out);
/* One kept object: its namespace/name ("/name" when cluster-scoped) and its bytes, views of
 * the table valid during the call. */
typedef void (*rc_watch_each_fn)(void *payload, const char *key, const void *value, size_t len);

/* Objects by namespace/name, each held as the bytes its reduce function kept. */
struct rc_watch_table;

struct rc_watch_table *rc_watch_table_new(void);
void rc_watch_table_free(struct rc_watch_table *t);
/* Put item under its namespace/name, reduced; one that is not kept is removed. */
void rc_watch_table_put(struct rc_watch_table *t, const cJSON *item, const struct pl_resnames *res,
                        rc_watch_reduce_fn reduce);
/* Each object, in no particular order. */
void rc_watch_table_each(const struct rc_watch_table *t, rc_watch_each_fn fn, void *payload);

struct rc_watch_set;

struct rc_watch_set *rc_watch_set_new(void);
/* How long the server is asked to hold each watch before the watcher starts the next from
 * where it ended (default RC_WATCH_TIMEOUT_S; tests shorten it). Watchers started after the
 * call use it. A connection whose peer is gone (a NAT or load balancer that forgot it, a
 * server that died) is found out by TCP in about half a minute (rc_http.h); one that stays up
 * but carries nothing (a server that hangs) within the timeout and half a minute
 * (rc_kube_watch), and the watch is never idle for long. The real API server picks 30-60
 * minutes when asked for none; informers ask for 5-10. */
#define RC_WATCH_TIMEOUT_S 60
void rc_watch_set_timeout(struct rc_watch_set *ws, long seconds);
/*
 * A watch the server refuses (403 Forbidden: a member cluster whose role was bound before it
 * granted `watch`, deploy/rbac/member-cluster.yaml) is not asked for again for this long: the
 * cluster's pods or nodes are listed every pass meanwhile, as without watches, instead of a
 * refused request every pass. Tests shorten it.
 */
#define RC_WATCH_REFUSED_S 600
void rc_watch_set_refused_backoff(struct rc_watch_set *ws, long seconds);
/* Stops every watcher and waits for it (about a second at most). NULL is fine. */
void rc_watch_set_free(struct rc_watch_set *ws);

/* A cluster's identity for its watcher: its name, how it is reached (the rd_cluster_conn's
 * fields and the server's URL) and the resource names a pod's request is kept in. */
uint64_t rc_watch_ident(const struct rd_cluster_conn *conn, const char *server,
                        const struct pl_resnames *res);

/*
 * The objects of kind `kind` of cluster `name`, when a watcher of that identity holds them:
 * each given to fn, under the watcher's lock, and 1. Else 0, with the reason in why (may be
 * NULL; "" when there was no watcher): the caller lists. A watcher of that name and kind that
 * failed, or has another identity, is stopped; one the server refused (403) makes
 * rc_watch_start of that name and kind do nothing for RC_WATCH_REFUSED_S, is counted in
 * rc_watch_refusals, and sets *refused (may be NULL; else 0) to that count: the how manyth
 * refusal this is. Any thread.
 */
/* After rc_watch_start found no thread: 1 when that is to be said (a warning), the first time
 * since the process started or a watcher last started; 0 after. */
int rc_watch_say_no_thread(struct rc_watch_set *ws);

int rc_watch_take(struct rc_watch_set *ws, const char *name, enum rc_watch_kind kind,
                  uint64_t ident, rc_watch_each_fn fn, void *payload, char *why, size_t whylen,
                  size_t *refused);

/*
 * Start a watcher of kind `kind` of cluster `name` (replacing any): it takes t, what a list
 * at resourceVersion rv found under `path` (a collection path with its query), and watches
 * `path` from rv with its own client, opened now from conn and ko. res is copied. Failing to
 * start leaves the next pass to list. Returns 0, or the error of pthread_create when no thread
 * could be started for it (a pids or tasks limit: rc_watch_say_no_thread); other failures (no
 * resourceVersion, a client that cannot be opened) are 0 and silent. Any thread.
 */
int rc_watch_start(struct rc_watch_set *ws, const char *name, enum rc_watch_kind kind,
                   uint64_t ident, const struct rd_cluster_conn *conn,
                   const struct rc_kube_options *ko, const char *path, const char *rv,
                   struct rc_watch_table *t, const struct pl_resnames *res,
                   rc_watch_reduce_fn reduce);

/* How many times the server refused cluster `name`'s watch of `kind` since the set was made
 * (a caller warns at the first and says it at info level after). */
size_t rc_watch_refusals(struct rc_watch_set *ws, const char *name, enum rc_watch_kind kind);

/* Stop the watchers (of every kind) of clusters not named in names (n of them): a Cluster
 * removed from the source, or no longer live. */
void rc_watch_keep_only(struct rc_watch_set *ws, const char *const *names, size_t n);

/* Counters for tests and metrics, of one kind: watchers running, and events applied since the
 * set was made. */
void rc_watch_counts(struct rc_watch_set *ws, enum rc_watch_kind kind, size_t *running,
                     size_t *events);

#endif
