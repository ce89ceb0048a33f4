/*
 * rd_source.h - the Load step: a source tree's YAML files -> placement inputs.
 *
 * Every document of every file becomes one of: a Cluster (the fleet), a SchedulePolicy, or a
 * workload object (everything else, Namespaces included: they are placed like anything else,
 * and their labels also feed namespaceSelector). A file is all-or-nothing: any error in it
 * (YAML, object, demand, policy, cluster, a duplicate object) and it contributes nothing and
 * is reported with file:line:col, so that the caller can keep that file's previous content.
 *
 * Each file is parsed on its own, into memory of its own (its arena, its cJSON trees and its
 * own table of resource names); what crosses files (duplicates, colliding output paths, the
 * pass's table of resource names, namespaces, order) is decided afterwards from those
 * results. That is what lets a cache (struct rd_cache) keep what each blob parsed to between
 * passes, so that a commit touching one file parses one file.
 */
#ifndef RD_SOURCE_H
#define RD_SOURCE_H

#include <stddef.h>

#include "pl_types.h"
#include "rc_err.h"
#include "rd_cluster.h"

struct rc_arena;
struct rd_docs;
struct rd_cache;

/* Extended resource names (not cpu, memory, pods) one file may use; a file naming more is
 * refused alone. */
#define RD_FILE_EXTENDED_MAX 8

struct rd_file {
    const char *path;
    const char *data;
    size_t len;
};

/* Warnings one source file lists (docs/formats.md): a file of a million duplicate keys would
 * otherwise put a million lines into every record and every status. */
#define RD_FILE_WARNINGS_MAX 50

struct rd_file_error {
    const char *path;
    const char *msg; /* "path:line:col: ..." */
};

struct rd_source {
    struct pl_resnames res;
    size_t nobjects;
    struct pl_object *objects; /* workloads, sorted by key; payload = struct rd_object * */
    size_t npolicies;
    struct pl_policy *policies; /* sorted by name */
    size_t nclusters;
    struct pl_cluster *clusters;   /* sorted by name; declared capacity */
    struct rd_cluster_conn *conns; /* nclusters, same order */
    const char **cluster_files;    /* nclusters, same order: the file each was loaded from */
    size_t nnamespaces;
    struct pl_namespace *namespaces; /* every namespace named by an object or Namespace
                                        object, sorted by name */
    size_t nerrors;
    struct rd_file_error *errors; /* one per broken file, sorted by path */
    size_t nwarnings;
    /* "path:line:col: ...", of files that loaded, in path order: at most
     * RD_FILE_WARNINGS_MAX a file, then "path: N more warnings (...)" */
    const char **warnings;
    size_t nparsed; /* files whose YAML was parsed by this call (not from the cache) */
    /* Objects refused alone, not their files: two objects that would be written to one
     * output path. "path:line: ..." naming both files, sorted by path. */
    size_t nconflicts;
    struct rd_file_error *conflicts;
    /* private: where the parsed files live (a cache of the caller's, or one of its own) */
    struct rd_cache *cache;
    int own_cache;
};

#define RD_SOURCE_INIT                                                                             \
    {                                                                                              \
        {0, {0}}, 0, NULL, 0, NULL, 0, NULL, NULL, NULL, 0, NULL, 0, NULL, 0, NULL, 0, 0, NULL,    \
            NULL, 0                                                                                \
    }

/*
 * Parse every file (callers pass only *.yaml / *.yml), in path order whatever the order of
 * `files`. A file with any error contributes nothing and is listed in errors (the caller may
 * retry with that file's previous content). Duplicate objects (same key; Clusters and
 * SchedulePolicies by name): the later path is the broken one. Only contract violations
 * (NULL path, the same path twice) return an error. Everything but the cJSON trees is in `a`;
 * the trees (rd_object.root of each payload) are freed by rd_source_release, which must be
 * called before the arena is released. `files` may be freed after the call.
 */
int rd_source_load(struct rd_source *out, const struct rd_file *files, size_t nfiles,
                   struct rc_arena *a, struct rc_err *err);
/* How rd_source_load_ex reads files. Arrays have nfiles entries, or are NULL. */
struct rd_load_options {
    /* refused[i] non-NULL: file i is refused unread with that problem ("<path>: <problem>"
     * in errors); its data may be NULL */
    const char *const *refused;
    /* ids[i]: a content id of file i (its git blob id); with `cache`, what the file parsed
     * to is looked up by (id, path) and kept there */
    const char *const *ids;
    struct rd_cache *cache; /* NULL: every file is parsed, and freed by rd_source_release */
    /* Object keys already placed (the previous record's), sorted by strcmp: when two objects
     * would be written to one output path, one of these keeps its place and the newcomer is
     * refused; NULL: both are refused. */
    const char *const *placed;
    size_t nplaced;
    /* Or, with placed NULL: a function that gives them, called at most once and only when two
     * objects collide (the list is a sort of every placed key, which a pass that has no
     * collision does not need). */
    const char *const *(*placed_fn)(void *arg, size_t *n);
    void *placed_arg;
    /* Memory the parsed files may hold together, 0: no limit (else rd_cache_limit of the
     * cache with it and `over_budget`, before the files are taken). */
    size_t max_bytes;
    const char *over_budget;
    /* Per file, as files (may be NULL): nonzero for a file not counted against the budget,
     * parsed again if the budget refused it before (a broken file's last good version, loaded
     * so that its objects keep their placements: it loaded under the budget of the pass that
     * placed them). */
    const unsigned char *uncounted;
};

int rd_source_load_ex(struct rd_source *out, const struct rd_file *files, size_t nfiles,
                      const struct rd_load_options *opts, struct rc_arena *a, struct rc_err *err);
void rd_source_release(struct rd_source *src);

/*
 * A cache of parsed files, keyed by (content id, path). Entries hold everything a file
 * parsed to (errors included). rd_cache_sweep frees the entries no load used since the
 * previous sweep, so the cache holds what the last pass needed, nothing older: call it at
 * the start of a pass, so that what the previous pass returned (object keys, names, labels:
 * strings of the cache's entries) stays valid until then. Without a cache, those strings are
 * in the `a` given to rd_source_load_ex, and the cJSON trees go with rd_source_release.
 */
int rd_cache_new(struct rd_cache **out);
void rd_cache_sweep(struct rd_cache *c);
void rd_cache_free(struct rd_cache *c);
/*
 * Parse files[0..n) into the cache ahead of rd_source_load_ex, on up to `threads` threads
 * (this one included; at most RD_PRIME_THREADS_MAX): each file alone, exactly as the load
 * would parse it, keyed by (ids[i], path). Files already cached, without an id or without
 * data are skipped. Entries are added in the order of `files`, so the cache is the same
 * whatever the number of threads. *nparsed (may be NULL) grows by the files parsed. The
 * caller bounds memory by how many files it passes at once (their text and what they parse
 * to are held together until the call returns).
 */
#define RD_PRIME_THREADS_MAX 16
int rd_cache_prime(struct rd_cache *c, const struct rd_file *files, const char *const *ids,
                   size_t n, int threads, size_t *nparsed);
/*
 * The budget of one pass: the entries a pass puts in the cache or takes from it (prime,
 * import, load), counted once each from one sweep to the next, may hold at most max_bytes
 * together (rd_cache_bytes' measure of each; 0: no limit). While they would hold more, the one
 * that holds most is refused (of equal ones, the later by path): its entry becomes the file's
 * error, "<path>: <over> (this file takes N KiB parsed)", what it held is freed, and the next
 * sweep drops it. So a pass holds at most the limit plus the files being parsed, and the
 * files refused are exactly those left when the lightest are kept while they fit: decided by
 * the files alone, not by their order nor by what the cache held. A bad file cannot push
 * out the files that come after it; the heaviest go first. Errors are not counted.
 */
void rd_cache_limit(struct rd_cache *c, size_t max_bytes, const char *over);
/*
 * rd_cache_prime in two steps, so that the caller can read the next files while these parse:
 * rd_cache_prime_start starts up to `threads` threads of their own on files[0..n) (files, ids
 * and the text must stay as they are until the finish) and returns; meanwhile the caller may
 * use the cache (the threads do not touch it). rd_cache_prime_finish parses what is left on
 * the calling thread too, waits for the threads and adds what they parsed in the order of
 * files, as rd_cache_prime would. Every job started must be
 * finished.
 */
struct rd_prime_job;
struct rd_prime_job *rd_cache_prime_start(struct rd_cache *c, const struct rd_file *files,
                                          const char *const *ids, size_t n, int threads);
void rd_cache_prime_finish(struct rd_cache *c, struct rd_prime_job *job, size_t *nparsed);
/* 1 when (id, path) loaded and this pass's budget refused it (its entry holds the refusal). */
int rd_cache_refused(const struct rd_cache *c, const char *id, const char *path);
/* 1 and *len (the file's size in bytes) when (id, path) is cached, else 0. */
int rd_cache_has(const struct rd_cache *c, const char *id, const char *path, size_t *len);
/*
 * What a file parsed to, as bytes another process can take up again: how the parse cache file
 * in the state directory keeps it (rc_pcache.h), so that a `--once` pass neither reads nor
 * parses a blob an earlier pass parsed.
 *
 * rd_cache_export appends to out what (id, path) loaded to: each document packed (rd_pack.h)
 * with the positions the load reads, for a workload also what its load derived (identity,
 * labels, demand, references), the warnings the file produced, its length; for a broken file
 * its error and its length (an error depends on the blob, its path and this build alone).
 * RC_ENOTFOUND when (id, path) is not cached, was refused by the budget (the pass's refusal,
 * not the file's), or its error does not start with "<path>:" (then it is parsed again).
 *
 * rd_cache_import adds (id, path) to the cache from such bytes. A broken file's entry must
 * hold an error that starts with "<path>:" and fits in a message. A file of workloads alone is
 * taken up from what was derived, its trees not expanded: the identity is checked as
 * rd_object_init checks it (rd_object_identity_ok), the demand's fields against the ranges its
 * parse reads them in, an object once per file. A file with any other document (a Cluster, a
 * SchedulePolicy) is unpacked and loaded again by the same code as a parse. Either way the
 * bytes cannot yield what a parse would refuse, and the kept positions and warnings are
 * restored. The result is what parsing the blob gives, as long
 * as the bytes were exported by a build of the same loader (the caller's to ensure, see
 * rc_pcache.h). RC_EINVALID when the bytes do not decode or do not load: nothing is added,
 * and the caller parses the file. RC_OK also when (id, path) was cached already.
 */
/* What exported bytes depend on besides the blob and this program's loader: the export's own
 * format and the libraries the load reads through ("export 2 libyaml 0.2.5 cjson 1.7.15"). */
void rd_cache_export_version(char *out, size_t n);
struct rc_buf;
int rd_cache_export(const struct rd_cache *c, const char *id, const char *path, struct rc_buf *out);
int rd_cache_import(struct rd_cache *c, const char *id, const char *path, const void *data,
                    size_t len);
/* rd_cache_import of v[0..n) on up to `threads` threads (this one included; at most
 * RD_PRIME_THREADS_MAX); entries without data are skipped. Each v[i].ok says whether (id, path)
 * is cached after the call; entries are added in the order of v, so the cache is the same
 * whatever the number of threads. Returns the entries added. */
struct rd_import {
    const char *id, *path;
    const void *data;
    size_t len;
    int uncounted; /* 1: not counted against the budget (rd_load_options.uncounted) */
    /* When not NULL: data is at offset `off` of this file, and an object's packed manifest
     * is not copied but read from it when a tree of the object is asked for (rd_object.lazy).
     * For a cache that lives one pass: the file must hold these bytes as long as the entry
     * lives (rc_pcache only appends to a file, and replaces it by a rename). */
    struct rd_payload_file *payloads;
    uint64_t off;
    int ok; /* out */
};
size_t rd_cache_import_many(struct rd_cache *c, struct rd_import *v, size_t n, int threads);

/* A file that packed manifests are read from when a tree is asked for (rd_import.payloads):
 * an open file descriptor (the new file owns it), shared by the entries taken up from it and
 * closed with the last of them and the caller's reference. */
struct rd_payload_file;
struct rd_payload_file *rd_payload_file_new(int fd);
void rd_payload_file_unref(struct rd_payload_file *f);
/* len bytes at off of f into *out (malloc'd, the caller frees) when their XXH64 is sum: else
 * RC_ERROR "parse cache changed under the pass (object <what>): ..." and *out NULL.
 * Callable on several threads. */
int rd_payload_read(unsigned char **out, const struct rd_payload_file *f, uint64_t off, size_t len,
                    uint64_t sum, const char *what, struct rc_err *err);
/* Payload reads so far, over every file (for tests: work done). */
size_t rd_payload_reads(void);
/* Entries held, and the bytes they hold (arena and trees, approximately). */
size_t rd_cache_count(const struct rd_cache *c);
size_t rd_cache_bytes(const struct rd_cache *c);
/* The bytes the entries' arenas hold from malloc (rc_arena_held): rd_cache_bytes' arena part
 * plus what their blocks leave unused. */
size_t rd_cache_held(const struct rd_cache *c);
/* The bytes of the entries' arena blocks left unused (rc_arena_unused). */
size_t rd_cache_unused(const struct rd_cache *c);

#endif
