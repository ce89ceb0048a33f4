/*
 * rc_rcache.h - the record cache file: the previous decision record, parsed, kept in the
 * state directory (<state_dir>/record-cache) so that the next process need not read and parse
 * the deploy head's placements.yaml (at 10,000 units, 10 MB of YAML and a third of a `--once`
 * pass). In loop mode the record kept in memory (rc_cache_record) answers first; the file
 * serves the first pass after a restart.
 *
 * The file holds records keyed by the blob id of the placements.yaml each stands for: the
 * record the last pass committed (rd_record_of_result, which gives what rd_record_parse of
 * those bytes gives), or the one it parsed from the deploy head. Content addressing makes a
 * hit exact: a hand edit, another writer or another repository gives another blob id, and the
 * file is then read and parsed as without the cache. A record in shards (docs/formats.md) is
 * kept by shard, each shard's units under the shard file's blob id, so that a pass that wrote
 * one shard packs and appends that one (rd_record_pack_shard) and the record's entry naming
 * them all; the file is rewritten whole when what no record uses would outweigh the rest.
 *
 * The file is untrusted input. It is used only when it is a regular file of this user of at
 * most RC_RCACHE_MAX_BYTES whose header names this exact build (the program's version, the
 * digest of the sources of base/, placement/ and render/, RD_RECORD_PACK_VERSION); its one
 * entry carries its length and a checksum (XXH64) and is decoded by rd_record_unpack,
 * which checks every length and what rd_record_parse checks of a record. Anything else is a
 * warning (once for one state of the file), the record is parsed, and the file is rewritten
 * (a temporary file, fsync, rename). Appends are not synced: a tail torn by a crash fails
 * its lengths or checksums, costs a parse, and the file is rewritten. Callers hold the state
 * directory's lock.
 */
#ifndef RC_RCACHE_H
#define RC_RCACHE_H

#include <stddef.h>

#include "rc_arena.h"
#include "rc_err.h"
#include "rc_log.h"
#include "rd_output.h"

#define RC_RCACHE_FILE "record-cache"
/* Largest file read or written: a larger record is not kept (it is parsed every time) */
#define RC_RCACHE_MAX_BYTES ((size_t)256 << 20)

struct rc_rcache;

/* A record cache kept at `path` (nothing is read yet). */
void rc_rcache_new(struct rc_rcache **out, const char *path);
void rc_rcache_free(struct rc_rcache *rc);

/*
 * With the record, the entry keeps the blob's source line (the bytes from the newline before
 * "source: " to the next newline), so that a pass can tell whether its new placements.yaml
 * differs from that blob but for the source commit without reading the blob: put that line
 * in place of its own and compare blob ids.
 */
struct rc_rcache_line {
    int have; /* 0: the blob has no source line */
    const char *text;
    size_t len;
};

/* The record of placements.yaml blob `blob` from the file, allocated in a, and its source
 * line (line may be NULL): 1 when the file holds it (nothing need be read nor parsed), 0
 * otherwise (no file, another blob's record, or a file that does not check out: logged as a
 * warning, log may be NULL, and rewritten by the next rc_rcache_save). When the file also
 * holds the writer's memo that blob was written with and memo is not NULL, *memo becomes it
 * (rd_record_memo_import) and *memo_read 1 (memo_read may be NULL). */
int rc_rcache_load(struct rc_rcache *rc, struct rd_record *out, struct rc_rcache_line *line,
                   struct rd_record_memo *memo, int *memo_read, const char *blob,
                   struct rc_arena *a, const struct rc_log *log);

/* Whether the file holds the record of `blob`, as this process last read or wrote it. */
int rc_rcache_holds(const struct rc_rcache *rc, const char *blob);

/* Make the file hold r and line (NULL: none) as the record of `blob` (written whole: a
 * temporary file, fsync, rename), unless it holds it already, with its writer's memo when
 * memo is not NULL (as rc_rcache_prepare keeps it: a file holding the blob without a memo is
 * written again to add one). A record past RC_RCACHE_MAX_BYTES is not kept (the file is
 * removed). RC_ERROR when the file could not be written (removed then; the caller may log and
 * go on: the cache only saves work). */
int rc_rcache_save(struct rc_rcache *rc, const char *blob, const struct rd_record *r,
                   const struct rc_rcache_line *line, const struct rd_record_memo *memo,
                   struct rc_err *err);

/* rc_rcache_save in two steps, so that a pass can pack the record while it writes its commit
 * (the blob id comes with the commit): rc_rcache_prepare writes into out the file's bytes,
 * or for a record in shards those to append (it reads rc's header and list of entries, which
 * only rc_rcache_load and rc_rcache_write change: safe on another thread between them), and
 * rc_rcache_write names the blob, checksums and writes them, as rc_rcache_save does. memo
 * (may be NULL): the writer's memo the record's blob was written with
 * (rd_render_options.record_memo), kept beside it so that the next process can tell that its
 * record would be the same without writing it; a file holding the blob's record without a
 * memo is written again when prepared bytes bring one. */
struct rc_buf;
void rc_rcache_prepare(struct rc_buf *out, const struct rc_rcache *rc, const struct rd_record *r,
                       const struct rc_rcache_line *line, const struct rd_record_memo *memo);
int rc_rcache_write(struct rc_rcache *rc, const char *blob, struct rc_buf *prepared,
                    struct rc_err *err);

/* Records taken from the file by rc_rcache_load, and bytes written by rc_rcache_save, since
 * rc_rcache_new. */
size_t rc_rcache_hits(const struct rc_rcache *rc);
size_t rc_rcache_written(const struct rc_rcache *rc);

#endif
