/*
 * rc_cache.h - what one reconcile pass leaves for the next: the memo of the last pass.
 *
 * The memo says, in git object ids, which inputs the last completed pass saw and what it
 * concluded: a digest of the options and program version (`key`), the source commit and a
 * digest of the (path, blob id) list of the YAML files under the source paths, the deploy
 * head it left, the last good versions it kept for broken files, whether the outcome was "quiet"
 * (no live cluster, no pending unit, nothing left to apply or retry) and the file errors it
 * reported. rc_pass compares the memo with the repository before reading any manifest (see
 * rc_pass.c, "The quick exit").
 *
 * The memo lives in memory (loop mode keeps one struct rc_cache across passes) and, when a
 * state directory is given, in <state_dir>/pass-state (mode 0600, written to a temporary
 * file and renamed) so that the next `--once` run finds it. The file is untrusted input: it
 * is read only when it is a regular file of at most RC_CACHE_FILE_MAX bytes in exactly the
 * format written; anything else is ignored (the pass then does all the work) and never an
 * error.
 */
#ifndef RC_CACHE_H
#define RC_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "rc_err.h"
#include "rd_source.h"

struct rc_arena;

/* As large as a record may be (RD_RECORD_MAX_BYTES): the memo lists the file errors the
 * record does, and the version kept of each broken file (30,000 broken files, each kept at
 * its last good version, made 6.1 MB). */
#define RC_CACHE_FILE_MAX ((size_t)1 << 30)

/* A broken file that was replaced by its last good version: the blob that was kept. */
struct rc_memo_kept {
    const char *path;
    char id[41];
};

struct rc_memo {
    char key[41];    /* digest of options and version; "" when there is no memo */
    char commit[41]; /* source commit S */
    char source[41]; /* digest of the (path, blob id) list of the YAML files at S */
    char deploy[41]; /* deploy head after the pass; "" when the branch did not exist */
    int quiet;       /* nothing could change a decision or is left to apply while inputs stay */
    size_t nerrors;
    struct rd_file_error *errors; /* malloc'd, strings too */
    size_t nkept;
    struct rc_memo_kept *kept; /* malloc'd, paths too */
};

struct rc_cache;
struct rc_apply_memory;

/* A cache; state_dir NULL: memory only. The memo file is read now (if valid). */
int rc_cache_new(struct rc_cache **out, const char *state_dir, struct rc_err *err);
void rc_cache_free(struct rc_cache *c);

/* The memo of the last pass; borrowed, valid until the next rc_cache_set_memo. Its key is ""
 * when there is none. */
const struct rc_memo *rc_cache_memo(const struct rc_cache *c);

/* Replace the memo (copied) and write the memo file when there is a state directory. A file
 * that cannot be written is removed (a stale memo must not survive) and reported as
 * RC_ERROR, which callers may log and ignore: the memo in memory is set in any case. */
int rc_cache_set_memo(struct rc_cache *c, const struct rc_memo *m, struct rc_err *err);

/* What source files parsed to, by blob id (rd_source.h): kept in memory between the passes
 * of one process; borrowed. */
struct rd_cache *rc_cache_parsed(struct rc_cache *c);

/*
 * The decision record (placements.yaml) the last passes read or wrote, by the blob id of the
 * file's bytes: kept in memory between the passes of one process (never in the memo file), so
 * that a pass whose deploy head still has that blob does not read it again. Content
 * addressing makes this safe: the id names exactly the bytes the record was read from (or
 * rd_record_of_result made it for), so a hand edit, another writer or a different repository
 * gives another id and the file is read again.
 *
 * rc_cache_record: the record of blob `blob` (borrowed), or NULL. rc_cache_set_record keeps a
 * copy of r (and of the blob's bytes, text, when given) as the record of `blob`. A record returned
 * stays valid until the second rc_cache_set_record after it (a pass's result may point into the
 * record it started from).
 */
struct rd_record;
struct rc_arena;
const struct rd_record *rc_cache_record(const struct rc_cache *c, const char *blob);
void rc_cache_set_record(struct rc_cache *c, const char *blob, const struct rd_record *r,
                         const char *text, size_t len);
/* The same, taking r as it is: r and text live in *arena, which the cache takes over (*arena
 * is left empty). Saves the copy for a record made for the cache. */
void rc_cache_take_record(struct rc_cache *c, const char *blob, const struct rd_record *r,
                          struct rc_arena *arena, const char *text, size_t len);
/* Loop mode's record made over the record the pass started from (rd_record_of_result_over),
 * which is the change's work, not the fleet's. rc_cache_record_to_share: the record of blob
 * when a record may be made over it, or NULL (not kept, or its chain of shared records long
 * or holding too many units no record uses: make the next one whole, and the chain goes).
 * rc_cache_take_record_over: rc_cache_take_record of such a record, which shares the current
 * one's strings (dropped: the current one's units it does not share); the current record's
 * memory then lives as long as r's, but for its arrays and text, which go with the record
 * after r as an older record's arena would. */
const struct rd_record *rc_cache_record_to_share(const struct rc_cache *c, const char *blob);
void rc_cache_take_record_over(struct rc_cache *c, const char *blob, const struct rd_record *r,
                               struct rc_arena *arena, const char *text, size_t len,
                               size_t dropped);
/* The bytes of that blob when rc_cache_set_record was given them (text NULL: not kept), so
 * that comparing the next record with it needs no read; NULL otherwise. */
const char *rc_cache_record_text(const struct rc_cache *c, const char *blob, size_t *len);

/* The record writer's memo (rd_render_options.record_memo), kept between the passes of one
 * process; borrowed. */
struct rd_record_memo *rc_cache_record_memo(struct rc_cache *c);
/* The digests (rd_record_warning_digest, rd_record_file_error_digest) of the warnings and file
 * errors the last pass of this process reported, sorted; NULL (*n 0) before a pass set them.
 * A pass logs the ones reported already at info level, counted (loop mode warns of a
 * problem in the pass that finds it). set copies d[0..n). */
const uint64_t *rc_cache_reported(const struct rc_cache *c, size_t *n);
void rc_cache_set_reported(struct rc_cache *c, const uint64_t *d, size_t n);
/* What the last apply of this process reported (rc_apply_deploy_ex), made when first asked
 * for; borrowed. */
struct rc_apply_memory *rc_cache_apply_memory(struct rc_cache *c);

/* Loop mode's watchers of the live clusters' pods (rc_watch.h), made at the first call and
 * stopped by rc_cache_free. */
struct rc_watch_set *rc_cache_watches(struct rc_cache *c);
/* The blob id of the last record written with that memo, when known ("": not known, e.g. a
 * record written by a pass that did not commit it): a deploy head whose placements.yaml is
 * that blob is the memo's record (rd_render_options.record_base_is_memo). */
const char *rc_cache_memo_blob(const struct rc_cache *c);
void rc_cache_set_memo_blob(struct rc_cache *c, const char *blob);

/* The parse cache file (rc_pcache.h), <state_dir>/parse-cache, and the record cache file
 * (rc_rcache.h), <state_dir>/record-cache: NULL without a state directory or after
 * rc_cache_no_parse_file (reconcile --no-parse-cache turns both off); borrowed. */
struct rc_pcache;
struct rc_rcache;
struct rc_pcache *rc_cache_parse_file(struct rc_cache *c);
struct rc_rcache *rc_cache_record_file(struct rc_cache *c);
void rc_cache_no_parse_file(struct rc_cache *c);

/* The file of the live clusters' outages (rc_outage.h) in the state directory. */
#define RC_CACHE_OUTAGE_FILE "unreachable"
/* What the last apply reported (rc_apply_memory_file). */
#define RC_CACHE_APPLY_FILE "apply-reported"

/* Remove the temporary files that the writers of the state directory's files rename into
 * place ("<file>.tmp.<pid>", "<file>.tmp") and that a killed process left behind: a killed
 * first pass at 10,000 workloads leaves a parse cache of 33 MB under a name no later pass
 * writes (bench/RESULTS.md, note 89). Call it holding the state directory's lock (every
 * writer holds it, so none is being written). Returns the files removed; *bytes, their size. */
size_t rc_cache_sweep(const char *state_dir, uint64_t *bytes);

/*
 * The pass image, <state_dir>/pass-image: what a partial pass needs of the last full one (see
 * rc_pass.c, "A change that touches a few clusters"). Written by a `--once` pass that was
 * quiet and found no broken file, next to the memo whose key, source commit, listing digest
 * and deploy head it repeats; used only while the memo and the repository still say exactly
 * those. It lists every YAML file of the source (path, blob id, sorted by path) with what the
 * pass made of it: the clusters its objects were placed on, whether it holds what every
 * partial pass must load (RC_IMAGE_CONFIG: a SchedulePolicy or a Namespace; RC_IMAGE_CLUSTER:
 * Clusters) or an object that a pass over some clusters cannot decide alone (RC_IMAGE_OTHER);
 * the clusters (sorted by name) and the file of each; the pass's unit counts by state; and its
 * warnings: how many, and the first RC_IMAGE_WARNINGS of them, as the commit message lists.
 * The file is untrusted input like the memo's: read only when it is a regular file of this
 * user, in exactly the format written, whose header names this build and whose checksum holds.
 */
#define RC_IMAGE_FILE "pass-image"
#define RC_IMAGE_WARNINGS 20
#define RC_IMAGE_CONFIG 1u
#define RC_IMAGE_CLUSTER 2u
#define RC_IMAGE_OTHER 4u

struct rc_image_file {
    const char *path;
    char id[41];
    unsigned flags;   /* RC_IMAGE_* */
    size_t nclusters; /* the clusters its objects are placed on, as indices, ascending */
    uint32_t *clusters;
};

struct rc_image_cluster {
    const char *name;
    size_t file; /* index into files of the file that declares it */
};

struct rc_image {
    char key[41], commit[41], source[41], deploy[41]; /* as in the memo */
    size_t states[3];                                 /* units by enum pl_state */
    size_t nwarnings;                                 /* the pass's warnings */
    size_t nlisted;                                   /* min(nwarnings, RC_IMAGE_WARNINGS) */
    const char **listed;
    size_t nclusters;
    struct rc_image_cluster *clusters;
    size_t nfiles;
    struct rc_image_file *files;
};

/* The image in the state directory into out (in a): 1, or 0 when there is none that reads. */
int rc_cache_image_read(struct rc_image *out, const struct rc_cache *c, struct rc_arena *a);
/* Write it (RC_ERROR when it cannot be: the file is removed then), or remove it (im NULL). */
int rc_cache_image_write(const struct rc_cache *c, const struct rc_image *im, struct rc_err *err);
/* The file's bytes, appended to text; and read back (1, or 0 with *out zeroed when they are
 * not exactly what this build writes). For the tests and fuzz_pass_image. */
struct rc_buf;
void rc_cache_image_format(struct rc_buf *text, const struct rc_image *im);
int rc_cache_image_parse(struct rc_image *out, const char *text, size_t len, struct rc_arena *a);

/* Forget the memo (memory and file). */
void rc_cache_forget(struct rc_cache *c);

#endif
