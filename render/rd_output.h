/*
 * rd_output.h - the deploy branch's content: per-cluster directories, the decision record
 * (placements.yaml), the capacity snapshot (.rightplace/capacity.yaml), the commit message;
 * and the parsers that read the record and the snapshot back (for stickiness and replay).
 *
 * Layout of the tree rd_render_tree builds (see docs/formats.md "Deploy branch"):
 *
 *   clusters/<cluster>/kustomization.yaml              every file below it, sorted
 *   clusters/<cluster>/<namespace>/<kind>.<name>.yaml  one object per file, kind in lower case
 *   clusters/<cluster>/_cluster/<kind>.<name>.yaml     cluster-scoped objects
 *   placements.yaml                                    the decision record
 *   .rightplace/capacity.yaml                          the fleet the decisions were made against
 *
 * Every function here is pure (no I/O) and deterministic: the same inputs give the same
 * bytes. Everything returned is allocated in the arena passed in.
 */
#ifndef RD_OUTPUT_H
#define RD_OUTPUT_H

#include <stddef.h>
#include <stdint.h>

#include "pl_types.h"
#include "rc_buf.h"
#include "rc_err.h"

struct rc_arena;
struct rd_file_error; /* rd_source.h: {path, msg}; msg is "path:line:col: ..." */
struct rd_verdict_tally;
struct rd_record_shard;

struct rd_render_options {
    const char *luna_key;   /* pod-template label for Luna; NULL: none. Default "elotl-luna" */
    const char *luna_value; /* default "true" */
    /* Source files that failed to load this pass (their objects kept their previous
     * placements); listed in placements.yaml under `errors`. */
    size_t nfile_errors;
    const struct rd_file_error *file_errors;
    /* Extra warnings (e.g. from loading the source) listed after the engine's. */
    size_t nwarnings;
    const char *const *warnings;
    /* NULL, or one entry per res->decisions: for a decision whose verdicts were taken from
     * the previous record (a unit that kept its entry), that entry's tally, so that the
     * entry is written again as it was; NULL entries: the tally is counted from verdicts. */
    const struct rd_verdict_tally *const *tallies;
    /* Pull mode (docs/pull-mode.md): Flux or Argo CD applies the cluster directories, so
     * objects carry no app.kubernetes.io/managed-by label (rightplace's apply would take them
     * for its own) and Namespaces carry the annotations that keep both agents from pruning a
     * Namespace, which would delete everything in it. */
    int pull;
    /* NULL, or one entry per res->decisions: NULL, or one flag per object of the decision,
     * 1 = the object's files are as the base deploy tree has them (the same decision and
     * render digest, a Divide's shares too, the unit's entry in the base record lists the
     * object, and it is loaded from the same version of its file): they are listed with
     * keep = 1 and not rendered again; a target a Divide gives no share of the object has
     * none. An object an override of the unit's policy names is rendered all the same. */
    const unsigned char *const *reuse_objects;
    /* Threads that render object files and write the record's entries: 0, as many as the
     * machine has cores (at most 4) when there is enough work for them; n > 0: n. The tree is
     * the same whatever it is. */
    int threads;
    /* NULL, or what the last record written with it holds (rd_record_memo_new): entries
     * and warnings that are the same are copied from it instead of written again, and it
     * then holds this record's. Loop mode keeps one in rc_cache; a `--once` pass has the one
     * the record cache file kept (digests alone, rd_record_memo_import). */
    struct rd_record_memo *record_memo;
    /* 1: the base deploy tree's placements.yaml is the last record written with record_memo
     * (the caller knows it by its blob id): a record that would be that one byte for byte is
     * listed with keep = 1 instead of written again (rd_record_emit_unless_same). */
    int record_base_is_memo;
    /* The broken source files of the pass and the version of each that the tree is made from
     * (sorted by path, unique): written to RD_KEPT_FILE, none when nkept is 0. */
    size_t nkept;
    const struct rd_kept *kept;
    /* The git blob id of bytes (40 hex digits and a NUL into out; 0, or < 0 on failure):
     * the header of a record in shards names each shard by it. Any thread. NULL: a record
     * that would be written in shards is an error. */
    int (*blob_id)(char out[41], const void *data, size_t len);
    /* 0: records of up to RD_RECORD_INLINE_MAX units are written as one file; n > 0: up to
     * n (tests lower it to write small records in shards) */
    size_t record_inline_max;
    /* 0: the record's layout follows from its units (rd_record_shards_for); 1: one file; a
     * power of two: that many shards. Replay writes the layout of the commit it replays. */
    size_t record_shards;
    /* 0: the record lists RD_RECORD_WARNINGS warnings at most; n > 0: n. Replay of a commit
     * made before the bound lists as many as it did (SIZE_MAX: all). */
    size_t record_warnings;
    /* 1: capacity.yaml names the source commit (`source:`), as snapshots written before
     * RD_SOURCE_FILE carried it alone did; replay of such a commit sets it
     * (rd_capacity_names_source). 0: it does not, so that its bytes depend on the fleet
     * alone and a commit that changes neither keeps its blob. */
    int capacity_source;
};

#define RD_RENDER_OPTIONS_INIT                                                                     \
    {                                                                                              \
        .luna_key = "elotl-luna", .luna_value = "true"                                             \
    }

struct rd_tree_file {
    const char *path;
    const char *data; /* NULL when keep */
    size_t len;
    int keep; /* 1: the file is the base deploy tree's at this path
                 (rd_render_options.reuse_objects) */
    /* NULL, or the file's blob id as render made it (a shard of the record, which its header
     * names by id), so that it is not hashed again */
    const char *id;
};

struct rd_tree {
    size_t nfiles;
    struct rd_tree_file *files; /* sorted by path (strcmp) */
    size_t nrendered;           /* object files rendered (kept ones not counted) */
    /* what rendering could not do, e.g. a spreadConstraints.overrides fieldPath that does
     * not exist in the object ("file:line: ..."); also listed in placements.yaml */
    size_t nwarnings;
    const char **warnings;
};

/*
 * What rendered files depend on besides the decisions and the manifests: rightplace's version
 * and the render options (the Luna label, pull mode). Written to placements.yaml as
 * renderDigest; a pass reuses the base tree's files only when the base record has the same
 * digest. 16 hex digits.
 */
void rd_render_digest(char out[17], const struct rd_render_options *opts);

/*
 * Build the whole desired deploy tree from the engine's result and its input.
 *
 * Objects of placed units are written to every target cluster: deep copies of the manifests
 * (in->objects[i].payload is a struct rd_object *), with metadata.namespace set for
 * namespaced objects, server-populated fields removed (metadata.uid, resourceVersion,
 * generation, creationTimestamp, managedFields, selfLink; status), rightplace's labels
 * (app.kubernetes.io/managed-by: rightplace unless opts->pull, rightplace.dev/unit:
 * pl_unit_label(unit)) on the object and on every pod template (plus the Luna label there),
 * and spec.replicas set to the target's share for Divide. A cluster that receives an object in
 * namespace N gets Namespace N too (the repo's Namespace object when there is one, else a minimal
 * one), once, except the namespaces every cluster has (default, kube-system, kube-public,
 * kube-node-lease). Every cluster of in->clusters gets a kustomization.yaml, even an empty one.
 *
 * source_commit: the source commit id written, alone on a line, to RD_SOURCE_FILE (neither
 * placements.yaml nor capacity.yaml names it, so that their bytes depend on the decisions and
 * the fleet alone; opts->capacity_source writes it to capacity.yaml as older versions did).
 * opts may be NULL (RD_RENDER_OPTIONS_INIT). Errors: RC_EINVALID when an object cannot be
 * written (no manifest, a name that is not a file name), or what the YAML emitter reports.
 */
int rd_render_tree(struct rd_tree *out, const struct pl_result *res, const struct pl_input *in,
                   const char *source_commit, const struct rd_render_options *opts,
                   struct rc_arena *a, struct rc_err *err);

/* ==== placements.yaml ==== */

/*
 * The record lists a bounded few verdicts per unit, so that its size does not depend on the
 * size of the fleet: those of the chosen clusters (at most RD_RECORD_CHOSEN_VERDICTS, in
 * preference order) and of the most preferred clusters passed over (at most
 * RD_RECORD_PASSED_VERDICTS: candidates ranked above a chosen one, or any candidate of a
 * unit that is not placed). When it leaves verdicts out it says how many (verdictsOmitted)
 * and counts every verdict by kind (verdictCounts); the full verdicts are recomputed from
 * the commit's capacity snapshot (rc_verdicts_recompute, `rightplace explain`).
 */
#define RD_RECORD_CHOSEN_VERDICTS 3
#define RD_RECORD_PASSED_VERDICTS 3

/* Likewise the record lists at most RD_RECORD_WARNINGS warnings (the engine's first, then the
 * load's) and says how many it leaves out (warningsOmitted): a fleet whose every file warns
 * (10,000 copies of one manifest with a duplicate key) made a header of 1.1 MB, written, hashed
 * and stored again by every commit that changed a shard. `rightplace plan` lists them all. */
#define RD_RECORD_WARNINGS 100

struct rd_verdict_tally {
    size_t omitted;  /* verdicts the entry does not list; 0: the list is complete */
    size_t count[4]; /* every verdict of the decision by kind (enum pl_verdict_kind) */
};

/*
 * rightplace reads back whatever it writes: records are read item by item (rd_yaml_load_items),
 * each unit and each cluster within the reader's usual limits (1,000,000 nodes, depth 64),
 * and the lists that grow with the source or the fleet (a unit's objects, clusters and
 * shares; a cluster's shapes, nodes and present units; the record's errors and warnings)
 * element by element, the whole file within RD_RECORD_MAX_BYTES. So no fleet rightplace
 * accepts makes a record it cannot read, while a hostile file still costs bounded memory per
 * element.
 */
#define RD_RECORD_MAX_BYTES ((size_t)1 << 30)

struct rd_record {
    const char *source;        /* "" when the record has none (RD_SOURCE_FILE names it) */
    const char *render_digest; /* NULL when the record has none */
    size_t nunits;
    struct pl_prev_unit *units;       /* in file order (sorted by unit when written by us) */
    struct rd_verdict_tally *tallies; /* nunits entries, parallel to units */
};

/*
 * Read a decision record. Unknown fields are ignored (forward compatible); missing or
 * mistyped required fields (apiVersion, kind, units[].unit, units[].state) are RC_EINVALID
 * with "placements.yaml:line:col: ..." messages. A record in shards is RC_EINVALID here:
 * rd_record_read reads it.
 */
int rd_record_parse(struct rd_record *out, const char *text, size_t len, struct rc_arena *a,
                    struct rc_err *err);

/* The bytes of blob id (40 hex), for rd_record_read: 0, or < 0 with err set (a blob of more
 * than max bytes is an error). The bytes live as long as arena a. */
typedef int (*rd_record_blob_fn)(void *payload, const char *id, size_t max, const char **text,
                                 size_t *len, struct rc_arena *a, struct rc_err *err);

/* How a record read was laid out: shards 1 for one file, else the header's `shards` and the
 * shard files it lists (nfiles of them, in the arena); the warnings it lists, and whether it
 * says how many it left out (warningsOmitted: a record of this version's bound). */
struct rd_record_layout {
    size_t shards;
    size_t nfiles;
    struct rd_record_shard *files;
    size_t nwarnings;
    int warnings_omitted;
};

/*
 * rd_record_parse, and a record in shards too: each shard the header names is read by its
 * blob id through fetch (the file of that path in the same tree is not looked at), checked
 * (its path, kind, unit count, each unit in its shard, no unit twice) and its units joined,
 * sorted by unit. The header and its shards together are held to RD_RECORD_MAX_BYTES, and
 * one shard's bytes at a time are held. layout (may be NULL) gets how the record was laid
 * out.
 */
int rd_record_read(struct rd_record *out, const char *text, size_t len, rd_record_blob_fn fetch,
                   void *payload, struct rd_record_layout *layout, struct rc_arena *a,
                   struct rc_err *err);

/*
 * The record rd_record_parse reads from the bytes rd_record_emit writes for (res, opts),
 * made without writing or reading them: loop mode keeps it for the next pass (rc_cache.h),
 * by the blob id of those bytes. tests/test_rd_record.c checks that both give the same
 * record. Its source is "", as parsed: a record names no source commit (RD_SOURCE_FILE).
 */
int rd_record_of_result(struct rd_record *out, const struct pl_result *res,
                        const struct rd_render_options *opts, struct rc_arena *a);

/*
 * The same record, made over `base`, the record of the base deploy tree, right after the
 * record was written with opts->record_memo and opts->record_base_is_memo (so the memo's last
 * record was base): a unit whose entry the memo took unchanged is base's unit, its strings
 * shared (they must live as long as out); the others are made as rd_record_of_result makes
 * them, in a. The units and tallies arrays are out's own, buffers a took (rc_arena_take), as
 * are those rd_record_of_result and rd_record_copy make. *shared: the units shared. -1, out
 * untouched, without such a memo or when it is not of res's record; then make it whole.
 */
int rd_record_of_result_over(struct rd_record *out, size_t *shared, const struct pl_result *res,
                             const struct rd_render_options *opts, const struct rd_record *base,
                             struct rc_arena *a);

/* The same record, pointing into res for its units' strings (the rest in a): valid while res
 * is. Saves the copies for a record that is only packed (rd_record_pack). */
void rd_record_view_of_result(struct rd_record *out, const struct pl_result *res,
                              const struct rd_render_options *opts, struct rc_arena *a);

/* A deep copy of in, allocated in a. */
void rd_record_copy(struct rd_record *out, const struct rd_record *in, struct rc_arena *a);

/*
 * The record in a compact binary form, for the record cache file in the state directory
 * (reconciler/rc_rcache.h), which saves the next process parsing placements.yaml:
 * rd_record_unpack(rd_record_pack(r)) is r field for field (lists never NULL; equal strings
 * may share one copy), in a thirtieth of the time of rd_record_parse and a sixth of the
 * bytes of the YAML (each string is written once, then referred to by its index).
 * RD_RECORD_PACK_VERSION names the form (see rd_record.c).
 * rd_record_unpack takes untrusted bytes: every length is checked against the input, and a
 * record rd_record_parse would refuse or never give (a unit or verdict cluster missing, an
 * unknown state or verdict kind, a placed unit without clusters, a unit listed twice, counts
 * out of the parser's ranges, trailing bytes) is RC_EINVALID, never a crash.
 */
#define RD_RECORD_PACK_VERSION "record-pack 4"
void rd_record_pack(struct rc_buf *out, const struct rd_record *r);
int rd_record_unpack(struct rd_record *out, const unsigned char *data, size_t len,
                     struct rc_arena *a, struct rc_err *err);

/*
 * A record packed in parts, so that the record cache file (reconciler/rc_rcache.h) keeps a
 * record in shards by its shards' blob ids, and a pass that wrote one shard packs one:
 * rd_record_pack_shard packs the units r->units[which[0..n)] (one shard's, in order) with,
 * when memo is the writer's memo r was written with, each unit's key digest;
 * rd_record_pack_head packs the rest of r, and of memo (NULL: none) all but its units;
 * rd_record_pack_order the order of r's units by shard (nshards of them): for each unit, in
 * order, the rank of its shard among the shards that have units, two bytes (little-endian),
 * so that the join puts each unit in its place without comparing any.
 * rd_record_unpack_shards joins a head and its shards' parts (parts[k] is shard index[k] of
 * nshards, ascending), placed by the order of nunits units, into the record, and the memo
 * when every part has its digests (then *memo_read is 1), that they were packed from. The
 * bytes are untrusted: besides what rd_record_unpack and rd_record_memo_import check, each
 * unit must be in its shard, the units in order and each once, and each named by its digests
 * as by its record; else RC_EINVALID.
 */
struct rd_record_memo;
void rd_record_pack_shard(struct rc_buf *out, const struct rd_record *r,
                          const struct rd_record_memo *memo, const size_t *which, size_t n);
void rd_record_pack_head(struct rc_buf *out, const struct rd_record *r,
                         const struct rd_record_memo *memo);
void rd_record_pack_order(struct rc_buf *out, const struct rd_record *r, size_t nshards);
int rd_record_unpack_shards(struct rd_record *out, struct rd_record_memo *memo, int *memo_read,
                            const unsigned char *head, size_t hlen,
                            const unsigned char *const *parts, const size_t *lens,
                            const size_t *index, size_t nparts, size_t nshards,
                            const unsigned char *order, size_t nunits, struct rc_arena *a,
                            struct rc_err *err);

/* The writer's memo (rd_render_options.record_memo) and what the last record written with
 * it did: entries (units) and warnings copied from the memo, or written. */
struct rd_record_memo;
struct rd_record_stats {
    size_t units_kept, units_written;
    size_t warnings_kept, warnings_written;
};
void rd_record_memo_new(struct rd_record_memo **out);
void rd_record_memo_free(struct rd_record_memo *m);
struct rd_record_stats rd_record_memo_stats(const struct rd_record_memo *m);
/* keep 1 (the default): the memo keeps each entry's key and bytes, so that an entry that did
 * not change is copied (loop mode). keep 0: only a 128-bit digest of each key (two XXH64),
 * enough to tell that a record would be the last one, for a process that writes one record
 * and leaves its memo to the record cache file. */
void rd_record_memo_keep_bytes(struct rd_record_memo *m, int keep);
/* The memo as bytes for the record cache file (the digests of the units' keys, of the
 * bytes around them and of the warnings; no entry bytes, no warnings' text), and a memo read
 * back from them in place of m's (RC_EINVALID, m unchanged, when they do not decode). A memo
 * read back tells that a record would be the last one written with it
 * (rd_record_emit_unless_same) as the memo that wrote it would; when the record must be
 * written, its entries are written again. */
void rd_record_memo_export(const struct rd_record_memo *m, struct rc_buf *out);
/* The digests of the warnings and file errors the last record written with m reported (listed,
 * or counted in warningsOmitted), sorted
 * (*n of them, in a): what an earlier pass has reported already, of this process or, for a
 * memo read back from the record cache file (rd_record_memo_import), of the process that
 * wrote it. */
uint64_t *rd_record_memo_reported_digests(const struct rd_record_memo *m, size_t *n,
                                          struct rc_arena *a);
/* Whether warning w, or the error msg of the file at path, is among digests[0..n) (as
 * rd_record_memo_reported_digests made them). */
int rd_record_warning_listed(const uint64_t *digests, size_t n, const char *w);
int rd_record_file_error_listed(const uint64_t *digests, size_t n, const char *path,
                                const char *msg);
/* The digest of warning w, and of the error msg of the file at path, as listed above. */
uint64_t rd_record_warning_digest(const char *w);
uint64_t rd_record_file_error_digest(const char *path, const char *msg);
int rd_record_memo_import(struct rd_record_memo *m, const void *data, size_t len);
/* The shards of the last record written with m (0: it was one file), and the blob id of
 * shard k ("" for an empty shard, which has no file). */
size_t rd_record_memo_shards(const struct rd_record_memo *m);
const char *rd_record_memo_shard_id(const struct rd_record_memo *m, size_t k);

/*
 * A record of more than RD_RECORD_INLINE_MAX units is written in shards (docs/formats.md
 * "placements.yaml"), so that a pass that changes one unit writes one shard and the header,
 * not the whole record: placements.yaml is then the header (apiVersion
 * RD_RECORD_SHARDED_API_VERSION, which rightplace versions before shards refuse), naming each
 * shard file placements/<3 hex digits>.yaml (RD_RECORD_SHARD_DIR) by its blob id and unit
 * count; a unit is in shard rd_record_shard_of(unit, nshards); nshards is
 * rd_record_shards_for(nunits): a power of two, about RD_RECORD_SHARD_UNITS units a shard.
 * Empty shards have no file. The record's identity is the header's blob id: it names every
 * shard's bytes, and a reader reads the shards by the ids it names.
 */
#define RD_RECORD_INLINE_MAX 1024
#define RD_RECORD_SHARD_UNITS 128
#define RD_RECORD_SHARDS_MAX 4096
#define RD_RECORD_SHARD_DIR "placements/"
#define RD_RECORD_SHARDED_API_VERSION "rightplace.dev/v1alpha2"
/* 1 (one file) for up to inline_max units (0: RD_RECORD_INLINE_MAX), else the shards */
size_t rd_record_shards_for(size_t nunits, size_t inline_max);
/* the shard of unit among nshards (a power of two): XXH64 of its id, seed 0, modulo nshards */
size_t rd_record_shard_of(const char *unit, size_t nshards);

/* A shard file of a record (rd_record_emit_files): path and blob id, its units, and its bytes,
 * or NULL when the base deploy tree has it (the last record written with the memo had it). */
struct rd_record_shard {
    size_t index; /* k of placements/<k>.yaml */
    char path[32];
    char id[41];
    size_t nunits;
    const char *text;
    size_t len;
};

/* The shards of a record: none for a record in one file. */
struct rd_record_files {
    size_t nshards;
    struct rd_record_shard *shards; /* sorted by path; texts and the array in the arena */
};

/* Write placements.yaml (as rd_render_tree does) into out, in one file whatever the number
 * of units. opts may be NULL. */
int rd_record_emit(struct rc_buf *out, const struct pl_result *res,
                   const struct rd_render_options *opts, struct rc_err *err);

/* As rd_record_emit, but in shards beyond the inline size (files gets them, allocated in a).
 * With may_same, when the record would be the last one written with opts->record_memo byte
 * for byte, *same is 1 and out is not written (files lists the memo's shards, every one
 * kept). Without a memo, or after a failed write, it always writes. */
int rd_record_emit_files(struct rc_buf *out, struct rd_record_files *files, int may_same, int *same,
                         const struct pl_result *res, const struct rd_render_options *opts,
                         struct rc_arena *a, struct rc_err *err);

/* rd_record_emit_files(out, NULL-like files, 1, same, ...) for a record in one file. */
int rd_record_emit_unless_same(struct rc_buf *out, int *same, const struct pl_result *res,
                               const struct rd_render_options *opts, struct rc_err *err);

/* The deploy tree's file naming the source commit the tree was made from: 40 hex digits and a
 * newline. A record without it (written before the file existed) names the commit itself, in
 * its `source:` field, which rd_record_parse still reads. */
#define RD_SOURCE_FILE ".rightplace/source"

/* ==== .rightplace/kept ==== */

/*
 * The deploy tree's file naming, for each source file that was broken when the tree was made,
 * the version of it the tree was made from (docs/formats.md): the next pass keeps exactly that
 * one while the file stays broken. No file: no source file was broken. One line per file,
 * sorted by path: the blob id (40 hex) or "-" (nothing of it was loaded), a space, the path
 * with control bytes, DEL and '%' written as %XX. Lines starting with '#' are comments.
 */
#define RD_KEPT_FILE ".rightplace/kept"

struct rd_kept {
    const char *path;
    char id[41]; /* "": nothing of the file was loaded */
};

/* Append the file's bytes for kept[0..n) (sorted by path, unique) to out. */
void rd_kept_emit(struct rc_buf *out, const struct rd_kept *kept, size_t n);

/* Read them back: *out (n entries, in a) is what rd_kept_emit was given. A line that is not
 * "id path", a path out of order or twice: RC_EINVALID, ".rightplace/kept:line: ...". */
int rd_kept_parse(struct rd_kept **out, size_t *n, const char *text, size_t len, struct rc_arena *a,
                  struct rc_err *err);

/* The entry for path in kept[0..n) (sorted), or NULL. */
const struct rd_kept *rd_kept_find(const struct rd_kept *kept, size_t n, const char *path);

/* ==== .rightplace/capacity.yaml ==== */

/*
 * Write the capacity snapshot: every cluster with everything placement reads of it (labels,
 * live, reachable, autoscaler, shapes, cost, nodes, present units), amounts as exact
 * quantity strings. Nodes that differ only in name are grouped (`names: [...]`). usage
 * (nusage entries, matched by cluster name; may be NULL) adds a summary per cluster for
 * people, which the parser ignores. source_commit: NULL, or a `source:` line to write (the
 * older form, for replay; the parser ignores it).
 */
int rd_capacity_emit(struct rc_buf *out, const struct pl_cluster *clusters, size_t nclusters,
                     const struct pl_resnames *res, const struct pl_usage *usage, size_t nusage,
                     const char *source_commit, struct rc_err *err);

/*
 * Read a capacity snapshot back into clusters (*out, *n, allocated in a), interning resource
 * names into res (initialised with pl_resnames_init, or already holding names). For replay,
 * pass the table the objects' demand was loaded with (rd_source.res), so that the indices of
 * pl_res agree. Parsing what rd_capacity_emit wrote and emitting again gives the same bytes.
 */
int rd_capacity_parse(struct pl_cluster **out, size_t *n, struct pl_resnames *res, const char *text,
                      size_t len, struct rc_arena *a, struct rc_err *err);

/* 1 when a snapshot as rd_capacity_emit wrote it has a `source:` line (the older form), else
 * 0. Looks at the lines before `clusters:` alone. */
int rd_capacity_names_source(const char *text, size_t len);

/* ==== The commit message ==== */

/*
 * Append the deploy commit's message to out: a subject saying what moved ("place
 * rayjob3/rayjob-train on dynamic-cluster", "place 3 units, move 1, 2 pending"), one paragraph
 * per changed decision in unit order (wrapped at 72 columns; the first 100, then a line saying
 * how many more), the source files that were not loaded, and
 * trailers: Rightplace-Source, Rightplace-Placed, Rightplace-Pending, Rightplace-Unplaced
 * (counts of units in each state after this pass).
 */
int rd_commit_message(struct rc_buf *out, const struct pl_result *res, const char *source_commit,
                      size_t nfile_errors, const struct rd_file_error *file_errors,
                      struct rc_err *err);

/* The same, with the previous record's units so that moves name where they came from
 * ("move a/b from x to y"). prev may be NULL. */
int rd_commit_message_prev(struct rc_buf *out, const struct pl_result *res,
                           const struct pl_prev_unit *prev, size_t nprev, const char *source_commit,
                           size_t nfile_errors, const struct rd_file_error *file_errors,
                           struct rc_err *err);

/* A deploy file whose content changed (op 'M'), old and new bytes. */
struct rd_content_change {
    const char *path; /* clusters/<cluster>/... */
    const char *old_data;
    size_t old_len;
    const char *new_data;
    size_t new_len;
};

/* Changed units whose paragraph a commit message writes (in unit-id order), each with
 * every verdict of its decision; the others are counted ("... and 12 more"). */
#define RD_MESSAGE_PARAGRAPHS 100

/* Everything a commit message may say. Fields after file_errors are optional (0/NULL). */
struct rd_message_input {
    const struct pl_result *res;
    const struct pl_prev_unit *prev; /* the previous record's units (moves say "from") */
    size_t nprev;
    const char *source_commit;
    size_t nfile_errors;
    const struct rd_file_error *file_errors;
    /* content changes: a unit whose decision did not change but whose rendered objects did
     * (an image bump, replicas, resources) gets a paragraph naming the fields that changed */
    size_t ncontent;
    const struct rd_content_change *content;
    const char *source_subject; /* trailer Rightplace-Source-Subject (first line only) */
    const char *source_author;  /* trailer Rightplace-Source-Author ("Name <email>") */
    /* deploy paths that differ from what rightplace last wrote (hand edits), repaired here */
    size_t nhand_edits;
    const char *const *hand_edits;
    /* warnings of the pass (the engine's, the source's; "file:line: ..." where known),
     * listed in a section of their own (the first 20, then a count): warnings holds at
     * least the first min(nwarnings, 20) */
    size_t nwarnings;
    const char *const *warnings;
    /* the units by enum pl_state for the trailers; NULL: counted from res (a pass over some
     * clusters decides some units and knows the counts of all) */
    const size_t *states;
};

#define RD_MESSAGE_INPUT_INIT                                                                      \
    {                                                                                              \
        NULL, NULL, 0, NULL, 0, NULL, 0, NULL, NULL, NULL, 0, NULL, 0, NULL, NULL                  \
    }

/* The commit message from everything in `in` (rd_commit_message_prev is this with the first
 * six fields). Trailers Rightplace-Source-Subject and -Author follow the four counts. */
int rd_commit_message_ex(struct rc_buf *out, const struct rd_message_input *in, struct rc_err *err);

#endif
