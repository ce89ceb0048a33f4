/*
 * rc_pcache.h - the parse cache file: what source blobs parsed to, kept in the state directory
 * (<state_dir>/parse-cache) so that the next process finds it. A `--once` pass after a
 * one-file change then parses that one file and reads no unchanged blob from git; in loop
 * mode the cache in memory (rd_cache) answers first, and the file serves the first pass after
 * a restart.
 *
 * An entry is keyed by (blob id, path) and holds what rd_cache_export writes for a file: what
 * it loaded to, or its error (a file that stays broken costs later passes neither a read nor
 * a parse).
 * Taking an entry up (rd_cache_import) loads its documents again with the same code as a
 * parse, so the file saves work and never changes an outcome. A pass that is its process's
 * last leaves a workload file's packed manifests in the file (rc_pcache_leave_payloads).
 *
 * The file is untrusted input. It is used only when it is a regular file of this user whose
 * header names this exact build of the Load step (the program's version, a digest of the
 * sources of base/, placement/ and render/, the libyaml and cJSON versions); every entry
 * carries its length and a checksum (XXH64) and is read with bounds checks. A header that
 * does not match, or an entry that does not check out, is logged as a warning and ignored
 * (its files are parsed), and the file is rewritten at the end of the load.
 *
 * Writing: a pass appends the entries of the files it parsed. When the entries no file of
 * the pass used take more bytes than the used ones, or the file would grow past its limit,
 * the file is rewritten with the pass's entries only (a temporary file, fsync, rename).
 * Callers hold the state directory's lock.
 */
#ifndef RC_PCACHE_H
#define RC_PCACHE_H

#include <stddef.h>

#include "rc_err.h"
#include "rc_git.h"
#include "rc_log.h"
#include "rd_source.h"

#define RC_PCACHE_FILE "parse-cache"
/* Largest entry read (a file's YAML is at most 8 MiB; what it keeps is about its size) */
#define RC_PCACHE_ENTRY_MAX ((size_t)64 << 20)

struct rc_pcache;

/* A parse cache kept at `path` (nothing is read yet). */
void rc_pcache_new(struct rc_pcache **out, const char *path);
void rc_pcache_free(struct rc_pcache *pc);

/* Start of a load: read the file's header and list its entries, unless this process already
 * knows the file as it is. Problems are logged (log may be NULL) and leave the cache empty. */
void rc_pcache_begin(struct rc_pcache *pc, const struct rc_log *log);

/* A pass that is its process's last (reconcile --once): the entries taken leave their packed
 * manifests in the file, read again only for the objects the pass renders (rd_import.payloads;
 * the file is only appended to or replaced by a rename, so the bytes stay where they were).
 * Off by default: a cache that outlives the pass copies them. */
void rc_pcache_leave_payloads(struct rc_pcache *pc, int on);

/* Take (id, path) from the file into c: 1 when an entry was there and was taken up (the
 * blob need not be read nor parsed), 0 otherwise (a damaged entry is logged). */
int rc_pcache_load(struct rc_pcache *pc, struct rd_cache *c, const char *id, const char *path,
                   const struct rc_log *log);

/* The same for every file of blobs[0..n) that c lacks, a batch at a time on up to `threads`
 * threads (rd_cache_import_many; what c holds is bounded by its budget, rd_cache_limit, unless
 * `uncounted`: versions a pass keeps in place of broken files). Returns the files taken; the
 * others are for the caller to read and parse. */
size_t rc_pcache_take(struct rc_pcache *pc, struct rd_cache *c, const struct rc_git_blob *blobs,
                      size_t n, int threads, int uncounted, const struct rc_log *log);

/*
 * End of a load: the files of the pass are blobs[0..n); c holds what they parsed to. Appends
 * the entries the file lacks, or rewrites the file with the pass's entries only (see above).
 * max_bytes bounds the file (0: no bound); entries past it are not written. RC_ERROR when the
 * file could not be written (removed then; the caller may log and go on: the cache only
 * saves work).
 */
int rc_pcache_save(struct rc_pcache *pc, const struct rd_cache *c, const struct rc_git_blob *blobs,
                   size_t n, size_t max_bytes, struct rc_err *err);

/* Entries taken up by rc_pcache_load and bytes written by rc_pcache_save since
 * rc_pcache_begin (0 when the save failed: the file is removed); whether rc_pcache_save
 * rewrote the whole file. */
size_t rc_pcache_hits(const struct rc_pcache *pc);
size_t rc_pcache_written(const struct rc_pcache *pc);
int rc_pcache_rewritten(const struct rc_pcache *pc);

#endif
