/*
 * rc_outage.h - since when each live cluster has been unreachable, kept between passes.
 *
 * The time a pass first found a live cluster unreachable is kept in a small private file in
 * the state directory (0600; one "<cluster> <unix seconds>" line per unreachable cluster).
 * The next passes keep that time while the outage lasts and drop it when the cluster is
 * reached again (or is no longer in the fleet); each pass gives the engine
 * pl_cluster.unreachable_for = now - first seen. The file is read as untrusted: one that is
 * malformed, too large or not a regular file only resets the clocks, with a warning.
 */
#ifndef RC_OUTAGE_H
#define RC_OUTAGE_H

#include <stddef.h>
#include <stdint.h>

#include "pl_types.h"
#include "rc_err.h"
#include "rc_arena.h"
#include "rc_log.h"

/* The largest file read: what the writer writes for 240,000 unreachable clusters of the
 * longest names (253 bytes), where 1 MiB held 3,800, past which every pass started their
 * clocks again and none was ever failed over. */
#define RC_OUTAGE_FILE_MAX ((size_t)64 << 20)

/* Set fleet[i].unreachable_for of every live, unreachable cluster from the file at `path`
 * (missing: none known) and `now`; a cluster newly unreachable starts at 0 s. With `write`,
 * the file is replaced (atomically, 0600) when what it holds changes. Returns RC_OK, or an
 * error when the file cannot be written. */
int rc_outage_track(struct pl_cluster *fleet, size_t nfleet, const char *path, int64_t now,
                    int write, const struct rc_log *log, struct rc_err *err);

/* The clusters the file at `path` lists (unreachable at the last pass that wrote it), sorted
 * by name, in a (the strings and the array); none when the file is missing or does not read
 * (the pass's rc_outage_track warns about that). Observe reads these with one attempt per
 * request (rc_kube_options.known_down). */
size_t rc_outage_names(const char *const **out, const char *path, struct rc_arena *a);

#endif
