/*
 * rc_metrics.h - Prometheus metrics of the reconcile loop: a text file for node_exporter's
 * textfile collector, and a small HTTP listener serving /metrics and /healthz.
 *
 * The exposition format is Prometheus text 0.0.4 (one "# HELP" and "# TYPE" line per family,
 * then samples). Families (docs/formats.md lists them with their labels):
 *   rightplace_build_info{version}                         gauge, 1
 *   rightplace_passes_total{status}                        counter (this process)
 *   rightplace_last_pass_status                            gauge, the exit status
 *   rightplace_last_pass_timestamp_seconds                 gauge
 *   rightplace_last_success_timestamp_seconds              gauge (status 0)
 *   rightplace_pass_duration_seconds{phase}                gauge, the last pass, phase "total"
 *                                                          and sync|load|observe|place|commit|apply
 *   rightplace_units{state}                                gauge, placed|pending|unplaced
 *   rightplace_pending_units                               gauge
 *   rightplace_file_errors                                 gauge, source files not loaded
 *   rightplace_hand_edits                                  gauge, deploy files edited by hand
 *   rightplace_cluster_reachable{cluster}                  gauge, 1/0 (live clusters)
 *   rightplace_cluster_apply_result{cluster,result}        gauge, 1 for the last pass's result
 *   rightplace_apply_results_total{cluster,result}         counter (this process)
 *   rightplace_resident_memory_bytes                       gauge, at the end of the last pass
 *   rightplace_peak_resident_memory_bytes                  gauge, the process so far
 *   rightplace_git_cache_bytes                             gauge, libgit2's object cache
 *   rightplace_git_cache_bound_bytes                       gauge, its bound (rc_git_cache_fit)
 * result: up_to_date | applied | incomplete | unreachable | stopped.
 *
 * The listener is plain sockets on one thread (no library): one request per connection,
 * GET and HEAD only, a bounded request size, non-blocking sockets, at most 32 clients at once
 * and each for at most two seconds from accept to the end of its answer, so that no client
 * (one that trickles its request, or never reads) holds /healthz from the kubelet. The text it
 * serves is rebuilt when a pass is recorded, under a mutex; the loop never waits for a
 * client.
 */
#ifndef RC_METRICS_H
#define RC_METRICS_H

#include <time.h>

#include "rc_buf.h"
#include "rc_err.h"
#include "rc_log.h"
#include "rc_pass.h"

struct rc_metrics;

/* A new, empty set of metrics (version goes into rightplace_build_info). Free it with
 * rc_metrics_free (which stops a listener first). */
struct rc_metrics *rc_metrics_new(const char *version);
void rc_metrics_free(struct rc_metrics *m);

/* Record a finished pass: res (NULL when the pass failed before computing anything), its
 * exit status, the apply note on the deploy commit (NULL: nothing applied; its "cluster
 * <name>: ..." lines give the apply results, docs/formats.md), the pass's wall time and when
 * it ended. A skipped pass (res->skipped) keeps the unit gauges of the pass before it. */
void rc_metrics_record(struct rc_metrics *m, const struct rc_pass_result *res, int status,
                       const char *apply_note, double seconds, time_t now);

/* Loop mode's watches after a pass: the live clusters whose pods it took from their watch
 * (rightplace_pod_watches) and the events those watches applied so far
 * (rightplace_pod_watch_events_total), and the same of nodes (rightplace_node_watches,
 * rightplace_node_watch_events_total); a process that never called this leaves them out. */
void rc_metrics_watches(struct rc_metrics *m, size_t pods, size_t pod_events, size_t nodes,
                        size_t node_events);

/* The exposition text (appended to out). */
int rc_metrics_text(struct rc_metrics *m, struct rc_buf *out, struct rc_err *err);

/* Write the text to `path` atomically: a temporary file in the same folder, then rename, so
 * a collector never reads half a file. */
int rc_metrics_write_file(struct rc_metrics *m, const char *path, struct rc_err *err);

/* Serve /metrics and /healthz on `addr` ("HOST:PORT", ":PORT" = 127.0.0.1, "[::1]:PORT"; port
 * 0 picks a free one) from a thread. /healthz answers 200 while a pass ended (or the
 * listener started) less than `healthy_for` seconds ago, else 503. The bound address is
 * logged ("serving metrics on http://HOST:PORT/metrics"). */
int rc_metrics_listen(struct rc_metrics *m, const char *addr, long healthy_for,
                      const struct rc_log *log, struct rc_err *err);
/* The port the listener is bound to (0: none). */
int rc_metrics_port(const struct rc_metrics *m);

#endif
