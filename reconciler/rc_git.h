/*
 * rc_git.h - the git repository rightplace reads its sources from and writes placements to.
 *
 * rc_git.c is the only file that calls libgit2. It never touches a work tree or an index
 * file: sources are read from commits, deploy trees are built in memory and written as
 * objects, refs are moved with compare-and-swap, and for a remote repository the refs are
 * pushed. Everything is translated into rc codes and one-line messages (struct rc_err).
 *
 * Ids are passed as 40-hex strings. Wherever a parameter is called `commit`, any revision
 * libgit2 understands is accepted too (a branch name is tried as refs/heads/<name> first, see
 * rc_git_resolve), and it is peeled to a commit.
 *
 * Codes: RC_ENOTFOUND (a rev, path, note or ref does not exist), RC_EINVALID (a bad path, ref
 * name, rev or argument), RC_ECONFLICT (someone else moved a ref first), RC_ERROR (anything
 * else: I/O, network, authentication, a push refused by the remote).
 *
 * Credentials (for remotes): each method is offered once per operation, in this order: ssh
 * agent ($SSH_AUTH_SOCK), ssh key file, the credentials an https URL carried (held in memory:
 * rc_git_url_split), HTTPS token from the environment variable, HTTPS token file; the HTTPS
 * user is the URL's user or "x-access-token". When all were refused the
 * operation fails (no retry loop). SSH host keys are checked by libgit2 1.5.1 against
 * ~/.ssh/known_hosts. Credentials are never logged and never in an error message; URLs are
 * shown with any user:password part replaced by "***".
 *
 * Threads: a struct rc_git is used by one thread at a time (libgit2's rule).
 */
#ifndef RC_GIT_H
#define RC_GIT_H

#include <stddef.h>
#include <stdint.h>

#include "rc_arena.h"
#include "rc_err.h"
#include "rc_log.h"

/* Process-wide setup and teardown of libgit2 (main calls them once, around everything else;
 * reference-counted, so tests may call them per case). init returns RC_OK or RC_ERROR. */
int rc_git_global_init(struct rc_err *err);
void rc_git_global_shutdown(void);

/* How long a connection to a git remote may stay silent (nothing could be sent or received,
 * or a connect not answered) before the fetch or push gives up with an error that says so
 * (rc_git_net.c; an ssh connection, which libssh2 reads itself, is shut down when the kernel
 * counts no byte moving on it). seconds <= 0: the default. */
#define RC_GIT_TIMEOUT_DEFAULT_S 120
void rc_git_set_timeout(long seconds);
long rc_git_timeout(void);
/* Make libgit2 open its TCP connections with rc_git_net.c's stream (rc_git_global_init does).
 * The last failure of such a connection on this thread ("" when none since forget). */
int rc_git_net_register(void);
void rc_git_net_forget(void);
const char *rc_git_net_failure(void);

/* What libgit2's object cache may hold, across every repository of the process (in its own
 * accounting: the objects' sizes). The cache keeps the trees and commits a pass reads, and a
 * long-running loop reads new ones every pass that it never reads again: under libgit2's
 * default bound (256 MiB) they piled up for days. A pass reads about 90 bytes of trees a
 * source file (1 MB at 10,000 workloads, 9 MB at 100,000), so the bound follows the source:
 * RC_GIT_CACHE_BASE plus RC_GIT_CACHE_PER_FILE a file of the last source listed, at most
 * RC_GIT_CACHE_MAX (docs/architecture.md, "Memory: the arena"). */
#define RC_GIT_CACHE_BASE ((size_t)4 << 20)
#define RC_GIT_CACHE_PER_FILE ((size_t)256)
#define RC_GIT_CACHE_MAX ((size_t)256 << 20)

/* The bound for a source of nfiles YAML files. */
size_t rc_git_cache_bound(size_t nfiles);
/* Bound the cache for a source of nfiles files (rc_pass, after listing it); init sets the
 * bound of an empty source. */
void rc_git_cache_fit(size_t nfiles);
/* Bytes the cache holds now and its bound. */
void rc_git_cache_usage(size_t *used, size_t *limit);
/* Tests: a fixed bound that rc_git_cache_fit leaves alone (0: follow the source again). */
void rc_git_cache_limit(size_t bytes);

struct rc_git; /* an open repository */

struct rc_git_options {
    const char *state_dir;  /* where a remote is cloned (<state_dir>/repo.git); needed for URLs */
    const char *token_env;  /* HTTPS: environment variable holding a token; NULL: none */
    const char *token_file; /* HTTPS: file holding a token (first line); NULL: none */
    const char *ssh_key;    /* SSH: private key file (public key: same path + ".pub" if present) */
    struct rc_log *log;     /* borrowed; NULL: no logging */
};
#define RC_GIT_OPTIONS_INIT                                                                        \
    {                                                                                              \
        NULL, "RIGHTPLACE_GIT_TOKEN", NULL, NULL, NULL                                             \
    }

/* Split the credentials off a URL: https://user:token@host/x.git -> *clean
 * "https://host/x.git", *user "user", *password "token" (percent-decoded; "" when the URL has
 * no password: https://TOKEN@host/x.git is a token too). For other schemes only a password is
 * taken off (ssh://git@host/x.git keeps its user, which is no secret). Returns 1 when
 * credentials were found, else 0 with *user and *password NULL; *clean is always set. All
 * three are malloc'd. rc_git_open keeps the credentials in memory only: the mirror's config
 * records *clean, and libgit2's credential callback offers them first. */
int rc_git_url_split(const char *url, char **clean, char **user, char **password);

/* Is `repo` a URL (anything with "://", or scp-like "user@host:path" / "host:path" with the
 * colon before any slash) rather than a local path? */
int rc_git_is_url(const char *repo);

/* Open a repository.
 * - A local path (bare, non-bare, or a .git folder) is opened in place and never searched
 *   upwards. Its work tree and index are never read or written. RC_ENOTFOUND: no repository
 *   at the path.
 * - A URL (file://, https://, ssh://, scp-like, git://) is mirrored into the bare repository
 *   <o->state_dir>/repo.git: created and fetched on first use (also while it holds no refs,
 *   e.g. after a failed first fetch), only opened afterwards; call rc_git_fetch each pass.
 *   Fetches force-update and prune: every branch to refs/heads/<b>, and refs/tags/...,
 *   refs/notes/... and refs/rightplace/... to the same names, so local refs mirror the
 *   remote's. The mirror's config records the URL without credentials (remote.origin.url;
 *   a mirror an older version recorded with them is rewritten); url.*.insteadOf is not
 *   applied. A state directory holding a mirror of another URL is RC_EINVALID. HTTP(S)
 *   proxies: libgit2's automatic lookup (GIT_PROXY_AUTO, git config http.proxy); a test
 *   showed libgit2 1.5.1 ignoring $http_proxy for an in-memory remote.
 * - Pushes over ssh://, https:// and git:// go to the server's receive-pack (which checks old
 *   values under its locks and runs hooks). Over file:// rc_git pushes itself: objects into
 *   the remote's store, then all refs at once under the remote's ref locks, each only if it
 *   fast-forwards (libgit2's own file:// push overwrites refs unchecked and loses updates when
 *   two writers race). The remote's hooks do not run over file://.
 * - The caller holds the state directory's lock (only a pass holding it writes the mirror):
 *   an existing mirror is first cleared of the lock and temporary files of libgit2's that a
 *   killed pass left (a ref's lock file would fail every later fetch), and of a pack whose
 *   index was never written; logged at info level.
 * The options' strings are copied; o->log is borrowed and must outlive the handle. *out is
 * set only on success; free it with rc_git_free. */
int rc_git_open(struct rc_git **out, const char *repo, const struct rc_git_options *o,
                struct rc_err *err);
/* Close the repository; accepts NULL. */
void rc_git_free(struct rc_git *g);
/* 1 when the repository was opened from a URL (refs are pushed), else 0. */
int rc_git_is_remote(const struct rc_git *g);

/* Author and committer of the commits and notes rc_git writes; default
 * "rightplace <rightplace@localhost>". Strings are copied. RC_EINVALID when a name or email is
 * empty or contains '<', '>' or a newline. */
int rc_git_set_identity(struct rc_git *g, const char *name, const char *email, struct rc_err *err);

/* Fetch every mirrored ref from the remote (force-updating and pruning local copies). No-op
 * (RC_OK) for a local repository. libgit2 1.5 has no network timeout: a remote that accepts
 * the connection and then stalls blocks the call. */
int rc_git_fetch(struct rc_git *g, struct rc_err *err);

/*
 * The mirror's objects kept in few packs (a remote's mirror only: a local repository is its
 * owner's to pack). Every fetch adds a pack to the mirror and small commits write loose
 * objects, and nothing else packs it, so a loop that runs for weeks would leave thousands of
 * packs, and libgit2 looks a missing object up in each of them: with 2,000 packs a one-change
 * pass's commit took 170-258 ms against 35. Past RC_GIT_PACKS_MAX packs, the smallest ones
 * (the smallest two, then each next one while it holds fewer objects than twice those taken:
 * what is merged grows geometrically, so an object is rewritten a few times over the
 * mirror's life), and past about RC_GIT_LOOSE_MAX small loose objects (files of at most 64 KB,
 * counted as git counts them, from one directory of the 256) all of those, are written into
 * one new pack (a larger loose object, a record of 10 MB, stays loose); every object
 * taken is checked to be in it, and only then are the old packs and loose files deleted,
 * and the repository is opened again so that nothing still reads them. A pack with a .keep
 * file, a multi-pack-index, or a pack index of a version other than 2 leaves the mirror as
 * it is. Errors leave every old pack and loose object in place.
 */
#define RC_GIT_PACKS_MAX 16
#define RC_GIT_LOOSE_MAX 2048
struct rc_git_upkeep {
    size_t packs; /* packs merged and deleted */
    size_t loose; /* loose objects packed and deleted */
};
int rc_git_pack_upkeep(struct rc_git *g, struct rc_git_upkeep *out, struct rc_err *err);
/* Tests: how many packs the repository's objects/pack holds. */
size_t rc_git_pack_count(struct rc_git *g);

/* Resolve a branch name or any rev ("main", "refs/heads/x", "v1^{commit}", "HEAD~2", an id) to
 * the 40-hex id of the commit it names: refs/heads/<rev> is tried first, then the rev as
 * libgit2's revparse reads it. RC_ENOTFOUND when it does not exist, RC_EINVALID when it is
 * malformed, ambiguous or names something that is not a commit. */
int rc_git_resolve(char out[41], struct rc_git *g, const char *rev, struct rc_err *err);

/* A file read from a commit. path and data are allocated in the caller's arena; data has
 * len bytes plus a terminating NUL (not counted in len), so it can be read as a string. */
struct rc_git_blob {
    char *path;  /* from the repository root, "a/b.yaml" */
    char *data;  /* NULL from rc_git_list_yaml */
    size_t len;  /* 0 from rc_git_list_yaml */
    char id[41]; /* the blob id (40 hex) */
};

/* Every blob under `paths` (npaths entries; NULL or npaths 0, or a path "" / ".": the whole
 * tree) whose name ends in ".yaml" or ".yml", sorted by path (strcmp), each file once even if
 * the paths overlap. A path may name a directory or a file (a file not named *.yaml or *.yml
 * contributes nothing). Symlinks, submodules and other non-regular entries are skipped
 * silently. Sizes are not limited here (the loader does).
 * *out is an array of *n blobs allocated in `a` (NULL when *n is 0). RC_ENOTFOUND when a path
 * is not in the tree (so a mistyped source path is not read as "no objects"). */
int rc_git_read_yaml(struct rc_git_blob **out, size_t *n, struct rc_git *g, const char *commit,
                     const char *const *paths, size_t npaths, struct rc_arena *a,
                     struct rc_err *err);

/* What rc_git_read_yaml would read, without reading any blob: paths and blob ids only (data
 * NULL, len 0). Cost: the trees under `paths`, never the blobs. */
int rc_git_list_yaml(struct rc_git_blob **out, size_t *n, struct rc_git *g, const char *commit,
                     const char *const *paths, size_t npaths, struct rc_arena *a,
                     struct rc_err *err);
/* rc_git_list_yaml calls on this handle so far (a pass lists its source once). */
size_t rc_git_listings(const struct rc_git *g);
/* Object headers rc_git_read_blob read to learn a blob's size before reading it. */
size_t rc_git_headers_read(const struct rc_git *g);

/* Blob `id` (40 hex) into *data (NUL-terminated, *len bytes, allocated in `a`) if it holds at
 * most `max` bytes. A larger blob is refused without being read: RC_EINVALID with *len set to
 * its size and "<N> bytes; the limit is <max>" as the message. RC_ENOTFOUND when there is no
 * such object. The size comes from the object's header, read first, unless the blob is a loose
 * object whose file is too small to inflate past `max` (deflate inflates at most 1032-fold). */
int rc_git_read_blob(char **data, size_t *len, struct rc_git *g, const char *id, size_t max,
                     struct rc_arena *a, struct rc_err *err);

/* The git blob id of `len` bytes of `data` (SHA-1 with collision detection, as git computes
 * it): a digest for "is this the same content", computed without touching the repository. */
int rc_git_digest(char out[41], const char *data, size_t len, struct rc_err *err);

/* One file at a commit; *data (NUL-terminated, *len bytes) is allocated in `a`. RC_ENOTFOUND
 * when the path is absent, RC_EINVALID when it is a directory, symlink or submodule. */
int rc_git_read_file(char **data, size_t *len, struct rc_git *g, const char *commit,
                     const char *path, struct rc_arena *a, struct rc_err *err);

/* All regular files under a directory prefix ("clusters/a/" or "clusters/a"; "" = the whole
 * tree), any name, sorted by path, allocated in `a` like rc_git_read_yaml. A prefix that does
 * not exist yields 0 files and RC_OK (a cluster directory that is new). Symlinks and
 * submodules are skipped. */
int rc_git_read_tree(struct rc_git_blob **out, size_t *n, struct rc_git *g, const char *commit,
                     const char *prefix, struct rc_arena *a, struct rc_err *err);

/* What rc_git_read_tree would read, without reading any blob: paths and blob ids only (data
 * NULL, len 0). */
int rc_git_list_tree(struct rc_git_blob **out, size_t *n, struct rc_git *g, const char *commit,
                     const char *prefix, struct rc_arena *a, struct rc_err *err);
/* rc_git_list_tree of the whole tree, and in *nodd how many entries under the deploy paths
 * (see rc_git_build_tree) are not plain files of mode 100644 (executables, symlinks,
 * submodules), plus a file named "clusters", ".rightplace" or "placements" (where the record's
 * shards go): what only rc_git_build_tree,
 * not rc_git_update_tree, puts right. */
int rc_git_list_tree_odd(struct rc_git_blob **out, size_t *n, size_t *nodd, struct rc_git *g,
                         const char *commit, struct rc_arena *a, struct rc_err *err);

/* The size of blob `id` (40 hex) from its header alone (the object is not read):
 * RC_ENOTFOUND when absent, RC_EINVALID when not a blob. */
int rc_git_blob_size(size_t *size, struct rc_git *g, const char *id, struct rc_err *err);

/* The blob id (40 hex) of the regular file at `path` in a commit, as rc_git_read_file would
 * find it: RC_ENOTFOUND when absent, RC_EINVALID when not a regular file. */
int rc_git_file_id(char out[41], struct rc_git *g, const char *commit, const char *path,
                   struct rc_err *err);

/* The id (40 hex) of the tree or blob at `path` in a commit ("" or ".": the root tree), so
 * that "did clusters/a change between these commits?" is one comparison. RC_ENOTFOUND when
 * the path is absent. */
int rc_git_path_id(char out[41], struct rc_git *g, const char *commit, const char *path,
                   struct rc_err *err);

/* Build a deploy tree without a work tree.
 * The result is the base commit's tree (base_commit NULL: the empty tree) with everything
 * under the deploy paths removed ("clusters/", "placements.yaml", ".rightplace/"), plus
 * `files` (mode 100644). Any other path of the base tree (a README someone committed to the
 * deploy branch) is kept untouched; a file in `files` outside the deploy paths replaces the
 * base's file at that path. The same content always gives the same tree id, so comparing
 * out_tree with rc_git_commit_tree_id(base) tells whether anything changed.
 * Paths are relative, '/'-separated: RC_EINVALID for an empty path or component, "." or "..",
 * a leading or doubled '/', a ".git" component (any case), or the same path twice or as both
 * a file and a directory. Blobs are written to the object database; out_tree gets 40 hex. */
struct rc_git_file {
    const char *path;
    const char *data;
    size_t len;
    int keep;    /* 1: the base tree's blob at this path stays (data unused); RC_ENOTFOUND when
                  * the base has no file there */
    char id[41]; /* the blob id of data when the caller has it ("": computed here) */
    int differs; /* 1 (with id ""): data is known not to be the base tree's blob at this path,
                  * so it is written without being hashed first to compare */
};
int rc_git_build_tree(char out_tree[41], struct rc_git *g, const char *base_commit,
                      const struct rc_git_file *files, size_t nfiles, struct rc_err *err);
/* rc_git_build_tree over base_commit when the caller knows how the result differs from the
 * base: the files of `up` are written over it (each a blob to add or replace: keep must be 0;
 * id as in rc_git_file) and the paths of `rm` are taken out (a directory left empty goes with
 * them). Only the trees on those paths are read and written, not the whole base, so a change
 * of a few files costs a few trees whatever the size of the deploy tree. The result is
 * rc_git_build_tree's over the same base when `up` and `rm` are exactly the files that differ
 * from it and the deploy paths it has that the files do not. RC_EINVALID for an invalid path
 * or a file to keep; RC_ECONFLICT when a file becomes a directory or a directory a file (one
 * path under another across or within the lists), which git_tree_create_updated cannot do:
 * rc_git_build_tree can. */
int rc_git_update_tree(char out_tree[41], struct rc_git *g, const char *base_commit,
                       const struct rc_git_file *up, size_t nup, const char *const *rm, size_t nrm,
                       struct rc_err *err);
/* Base trees rc_git_build_tree read into an index so far: a build over the tree the handle's
 * last build wrote reuses that build's index instead (a loop pass over the commit the pass
 * before it made), unless that build had no base (its trees were written from the sorted
 * paths, with no index). */
size_t rc_git_trees_read(const struct rc_git *g);
/* Whole trees listed by walking them so far (rc_git_list_tree_odd). The handle keeps the last
 * such listing, the listing of the tree rc_git_build_tree last wrote, and that of a tree
 * rc_git_update_tree makes from the one kept: listing any of them again walks nothing. */
size_t rc_git_tree_walks(const struct rc_git *g);
/* Start listing the whole tree of `commit` on a thread of its own, for the next
 * rc_git_list_tree_odd of that tree, which then waits for it instead of walking the tree
 * itself (a `--once` pass lists its deploy head while it loads the source). Nothing to do when
 * the handle keeps that listing already. The listing is the same either way; one the thread
 * could not make is walked by the caller. rc_git_tree_walks counts it; this, the walks made
 * ahead. */
int rc_git_list_ahead(struct rc_git *g, const char *commit, struct rc_err *err);
size_t rc_git_tree_walks_ahead(const struct rc_git *g);

/* The tree id of a commit (40 hex). */
int rc_git_commit_tree_id(char out[41], struct rc_git *g, const char *commit, struct rc_err *err);

/* Create a commit object (no ref is moved: see rc_git_update_ref). tree is a tree id,
 * parent a commit (NULL: a root commit). Author and committer are the identity set with
 * rc_git_set_identity, both at `when` (seconds since the epoch, UTC, given by the caller so
 * that the same inputs give the same commit id: the source commit's committer time). The
 * message is stored as given, with a final newline added when missing; RC_EINVALID when it is
 * empty. out gets the new commit's 40-hex id. */
int rc_git_commit(char out[41], struct rc_git *g, const char *tree, const char *parent,
                  const char *message, int64_t when, struct rc_err *err);

/* Compare-and-swap a ref ("refs/heads/deploy"): set it to new_id only if it is at old_id
 * (NULL: it must not exist); RC_ECONFLICT when it is somewhere else. For a remote repository
 * the ref is then pushed without force: a push rejected because the remote ref moved
 * (non-fast-forward, fetch first, stale old value, lock) is RC_ECONFLICT, any other refusal
 * (a hook declining, a protected branch) RC_ERROR with the remote's status and messages. After
 * a failed push the local mirror is fetched again, so the local ref goes back to the remote's
 * value (if that fetch fails too, the next rc_git_fetch repairs it). log_message goes to the
 * reflog (may be NULL). RC_EINVALID for a malformed ref name or id. */
int rc_git_update_ref(struct rc_git *g, const char *ref, const char *new_id, const char *old_id,
                      const char *log_message, struct rc_err *err);

/* rc_git_update_ref for a ref rightplace alone writes and may replace (a proposal branch,
 * README.md "Review gate"): the same local compare-and-swap against old_id (NULL:
 * must not exist), then, for a remote repository, a forced push ("+ref:ref") with a lease:
 * the remote ref is replaced, also when new_id does not descend from it, only while it holds
 * old_id (or is absent for NULL), else RC_ECONFLICT and nothing is pushed (over a smart
 * transport the check is on the value the remote advertised, which receive-pack checks again
 * under its lock). Errors as rc_git_update_ref. */
int rc_git_force_ref(struct rc_git *g, const char *ref, const char *new_id, const char *old_id,
                     const char *log_message, struct rc_err *err);

/* The compare-and-swap of rc_git_update_ref without the push (for a batch pushed afterwards
 * with rc_git_push_refs). For a remote repository, note that every fetch, including the one
 * after any failed push (rc_git_note_write's too), puts all mirrored refs back to the
 * remote's values: a ref moved here and not pushed yet is lost then. Push such refs together
 * (rc_git_update_ref_local + rc_git_note_write_local, then one rc_git_push_refs). */
int rc_git_update_ref_local(struct rc_git *g, const char *ref, const char *new_id,
                            const char *old_id, const char *log_message, struct rc_err *err);

/* Push the local values of `refs` (full names) to the remote in one push, without force
 * (over file:// all or none of the refs move; over other transports each ref on its own).
 * RC_ECONFLICT / RC_ERROR as rc_git_update_ref (on any rejection the local mirror is fetched
 * again). A ref that does not exist locally is RC_ENOTFOUND. No-op for a local repository. */
int rc_git_push_refs(struct rc_git *g, const char *const *refs, size_t nrefs, struct rc_err *err);

/* The committer time of a commit (seconds since the epoch), or -1 when it cannot be read. */
int64_t rc_git_commit_time(struct rc_git *g, const char *commit);

/* Notes under refs/notes/rightplace (`git log --notes=rightplace` shows them).
 * rc_git_note_write adds or overwrites the note on a commit, as a notes commit by the
 * configured identity at the annotated commit's committer time (deterministic). For a remote
 * repository refs/notes/rightplace is pushed; when another writer pushed notes first, the
 * notes are fetched and the note is written again on top (at most 3 attempts, then
 * RC_ECONFLICT). */
#define RC_GIT_NOTES_REF "refs/notes/rightplace"
int rc_git_note_write(struct rc_git *g, const char *commit, const char *text, struct rc_err *err);
/* rc_git_note_write without the push (to push it with other refs in one rc_git_push_refs,
 * which then reports a conflict instead of retrying). */
int rc_git_note_write_local(struct rc_git *g, const char *commit, const char *text,
                            struct rc_err *err);
/* The note on a commit, allocated in `a` (NUL-terminated); RC_ENOTFOUND when there is none. */
int rc_git_note_read(char **text, struct rc_git *g, const char *commit, struct rc_arena *a,
                     struct rc_err *err);

/* The full commit message (raw, as stored), allocated in `a`. */
int rc_git_commit_message(char **msg, struct rc_git *g, const char *commit, struct rc_arena *a,
                          struct rc_err *err);
/* The author of a commit as "Name <email>", allocated in `a`. */
int rc_git_commit_author(char **out, struct rc_git *g, const char *commit, struct rc_arena *a,
                         struct rc_err *err);
/* Did rightplace write `commit`? Its message carries a "Rightplace-Source:" trailer line and
 * its committer is the configured identity. 1 yes, 0 no, negative on error. */
int rc_git_is_own_commit(struct rc_git *g, const char *commit, struct rc_err *err);

/* The newest commit on `commit`'s first-parent chain (itself included) that rightplace wrote,
 * at most `depth` commits back; RC_ENOTFOUND when there is none. */
int rc_git_last_own_commit(char out[41], struct rc_git *g, const char *commit, size_t depth,
                           struct rc_err *err);

/* A path whose content differs between two commits. */
struct rc_git_change {
    const char *path;
    char op; /* 'A', 'M', 'D' */
};

/* The paths (files) whose content differs from commit `from` to commit `to`, sorted by path,
 * allocated in `a`. */
int rc_git_diff_commits(struct rc_git_change **out, size_t *n, struct rc_git *g, const char *from,
                        const char *to, struct rc_arena *a, struct rc_err *err);

/* The first parent's id; RC_ENOTFOUND for a root commit. */
int rc_git_commit_parent(char out[41], struct rc_git *g, const char *commit, struct rc_err *err);

#endif
