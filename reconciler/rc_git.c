/*
 * rc_git.c - rightplace's git repository access; the only file that calls libgit2.
 *
 * What it does: opens a local repository in place or keeps a bare mirror of a remote one in
 * the state directory (fetch with force-updating, pruning refspecs; push without force, or forced
 * with a lease for the proposal branch), reads files from commits, builds trees in an in-memory
 * index (never a work tree or an index file), writes commits and notes with a configurable identity
 * at caller-given times, and moves refs with compare-and-swap. What it doesn't: decide what to
 * write (that is the pass), retry whole passes, or run the git CLI.
 *
 * External protocol: libgit2 1.5 (git_* functions, 0/negative returns with git_error_last()),
 * and through it the git smart protocol over file://, ssh:// (libssh2) and https://. Remote
 * refusals arrive through the push_update_reference callback (a status string even when
 * git_remote_push returns 0) and the remote's messages through sideband_progress.
 *
 * Credentials: the credential callback tries each method once (ssh agent, ssh key file, token
 * from the environment, token file) so libgit2 cannot loop; tokens are wiped after use and
 * never logged; every message passes through redact() which hides URL user:password parts.
 */
#include "rc_sort.h"
#include "rc_git.h"

#include <ctype.h>
#include <inttypes.h>
#include <limits.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include <git2.h>
#include <git2/sys/mempack.h>
#include <git2/sys/odb_backend.h>
#include <git2/sys/repository.h>

#include "rc_buf.h"
#include "rc_mem.h"
#include "rc_thread.h"

#include "rc_banned.h"

#define ORIGIN "origin"
#define DEFAULT_NAME "rightplace"
#define DEFAULT_EMAIL "rightplace@localhost"
#define REMOTE_MSG_MAX 1024
#define TOKEN_FILE_MAX 65536
#define NOTE_ATTEMPTS 3

struct rc_git {
    git_repository *repo;
    int remote;
    char *url;       /* without the credentials an https URL carried (rc_git_url_split) */
    char *url_user;  /* those credentials, kept in memory only and offered through the */
    char *url_pass;  /* credential callback; NULL: none */
    char *url_shown; /* redacted, for messages */
    char *path;      /* the repository path (local) or the mirror path */
    char *token_env;
    char *token_file;
    char *ssh_key;
    struct rc_log *log;
    char *name;
    char *email;
    /* the index of the last tree rc_git_build_tree wrote, for a next build over that tree (a
     * loop pass builds over the commit the pass before made): not read from the tree again */
    git_index *built;
    git_oid built_tree;
    struct listed *listed; /* see struct listed */
    struct ahead *ahead;   /* a listing being made on a thread (rc_git_list_ahead) */
    size_t tree_walks;     /* whole trees listed by walking them (rc_git_tree_walks) */
    size_t walks_ahead;    /* of them, walked on a thread of their own (rc_git_list_ahead) */
    size_t trees_read;
    size_t listings;     /* rc_git_list_yaml calls */
    size_t headers_read; /* rc_git_read_blob's object headers */
    char *objdir;        /* "<common dir>/objects/", for loose objects (rc_git_read_blob) */
    size_t loose_misses; /* blobs in a row that loose_within found no loose file for */
    size_t loose_skip;   /* blobs still to read without looking for one (a packed repository) */
};

/* The whole-tree listing of one tree (rc_git_list_tree_odd), kept by the handle so that
 * listing that tree again reads nothing: the tree it last walked, the tree rc_git_build_tree
 * last wrote (from its sorted files, or from its index), or the tree rc_git_update_tree made
 * from the one listed, its listing changed by the same paths. A loop pass lists the deploy
 * commit the pass before it made. Paths point into text. */
struct listed {
    git_oid tree;
    size_t n, odd;
    char **path;
    char (*id)[41];
    char *text;
};

static void listed_free(struct listed *l)
{
    if (!l)
        return;
    free(l->path);
    free(l->id);
    free(l->text);
    free(l);
}

/* A listing of n entries, whose paths take `bytes` bytes with their NULs. */
static struct listed *listed_new(const git_oid *tree, size_t n, size_t bytes, size_t odd)
{
    struct listed *l = rc_xcalloc(1, sizeof(*l));

    l->tree = *tree;
    l->odd = odd;
    l->path = rc_xcalloc(n + 1, sizeof(*l->path));
    l->id = rc_xcalloc(n + 1, sizeof(*l->id));
    l->text = rc_xmalloc(bytes + 1);
    return l;
}

/* Append entry (path, id) to l, whose text has room for it. at: the next byte of text. */
static void listed_put(struct listed *l, char **at, const char *path, const char *id)
{
    size_t len = strlen(path) + 1;

    memcpy(*at, path, len);
    l->path[l->n] = *at;
    memcpy(l->id[l->n], id, 41);
    l->n++;
    *at += len;
}

static void ahead_take(struct rc_git *g, const git_oid *tree);

static int cmp_cstr(const void *x, const void *y)
{
    return strcmp(*(const char *const *)x, *(const char *const *)y);
}

static int odd_deploy_entry(const char *path, git_filemode_t mode);
static void oid_hex(char out[41], const git_oid *id);

/* The index of path in l (sorted), or -1. */
static long listed_find(const struct listed *l, const char *path)
{
    char *const *at = l->n ? bsearch(&path, l->path, l->n, sizeof(*l->path), cmp_cstr) : NULL;

    return at ? (long)(at - l->path) : -1;
}

/* Does a walk of the tree an index was written to list this entry? Files of stage 0,
 * executables too; symlinks and submodules are skipped. */
static int index_lists(const git_index_entry *ie)
{
    return git_index_entry_stage(ie) == 0 &&
           (ie->mode == GIT_FILEMODE_BLOB || ie->mode == GIT_FILEMODE_BLOB_EXECUTABLE);
}

/* The listing of the tree an index was written to, as a walk of that tree lists it, odd
 * entries counted. */
static struct listed *listed_of_index(git_index *idx, const git_oid *tree)
{
    size_t count = git_index_entrycount(idx), n = 0, bytes = 0, odd = 0;
    struct listed *l;
    char hex[41], *at;

    for (size_t i = 0; i < count; i++) {
        const git_index_entry *ie = git_index_get_byindex(idx, i);
        odd += odd_deploy_entry(ie->path, (git_filemode_t)ie->mode) != 0;
        if (index_lists(ie)) {
            bytes += strlen(ie->path) + 1;
            n++;
        }
    }
    l = listed_new(tree, n, bytes, odd);
    at = l->text;
    for (size_t i = 0; i < count; i++) {
        const git_index_entry *ie = git_index_get_byindex(idx, i);
        if (index_lists(ie)) {
            oid_hex(hex, &ie->id);
            listed_put(l, &at, ie->path, hex);
        }
    }
    return l;
}

/* listed_updated where the update only rewrote files l lists (a loop pass's usual change):
 * l itself becomes the listing of tree, its ids changed in place. 0, or -1 (l unchanged)
 * when some path is new or removed. */
static int listed_rewritten(struct listed *l, const git_oid *tree, const git_tree_update *u,
                            size_t nup, size_t nrm)
{
    if (l->odd || nrm)
        return -1;
    for (size_t x = 0; x < nup; x++) {
        if (listed_find(l, u[x].path) < 0)
            return -1;
    }
    for (size_t x = 0; x < nup; x++)
        oid_hex(l->id[listed_find(l, u[x].path)], &u[x].id);
    l->tree = *tree;
    return 0;
}

/* The listing of `tree`, which git_tree_create_updated made from l's tree by u[0..nup)
 * (upserts of plain files) and u[nup..nup+nrm) (removals): NULL when that cannot be told from
 * l alone (l counts odd entries; a path named twice; a removed path that l does not list as a
 * file, such as a directory). */
static struct listed *listed_updated(const struct listed *l, const git_oid *tree,
                                     const git_tree_update *u, size_t nup, size_t nrm)
{
    struct change {
        const char *path; /* first: cmp_cstr sorts by it */
        const git_oid *id;
    } *ups = rc_xcalloc(nup + 1, sizeof(*ups)), *rms = rc_xcalloc(nrm + 1, sizeof(*rms));
    struct listed *out = NULL;
    size_t bytes = 0, odd = 0, i = 0, j = 0, k = 0;
    char hex[41], *at;

    if (l->odd)
        goto done;
    for (size_t x = 0; x < nup; x++) {
        ups[x].path = u[x].path;
        ups[x].id = &u[x].id;
        odd += odd_deploy_entry(u[x].path, GIT_FILEMODE_BLOB) != 0;
        bytes += strlen(u[x].path) + 1;
    }
    for (size_t x = 0; x < nrm; x++)
        rms[x].path = u[nup + x].path;
    rc_sort(ups, nup, sizeof(*ups), cmp_cstr);
    rc_sort(rms, nrm, sizeof(*rms), cmp_cstr);
    for (size_t x = 0; x + 1 < nup; x++)
        if (!strcmp(ups[x].path, ups[x + 1].path))
            goto done;
    for (size_t x = 0; x + 1 < nrm; x++)
        if (!strcmp(rms[x].path, rms[x + 1].path))
            goto done;
    for (size_t x = 0; x < l->n; x++)
        bytes += strlen(l->path[x]) + 1;
    out = listed_new(tree, l->n + nup, bytes, odd);
    at = out->text;
    while (i < l->n || j < nup) {
        int c = i >= l->n ? 1 : j >= nup ? -1 : strcmp(l->path[i], ups[j].path);
        if (c <= 0 && k < nrm) {
            int r = strcmp(rms[k].path, l->path[i]);
            if (r < 0 || (r == 0 && c == 0))
                break; /* removed but not listed as a file; or written and removed */
            if (r == 0) {
                i++;
                k++;
                continue;
            }
        }
        if (c < 0) {
            listed_put(out, &at, l->path[i], l->id[i]);
            i++;
        } else {
            oid_hex(hex, ups[j].id);
            listed_put(out, &at, ups[j].path, hex);
            i += c == 0;
            j++;
        }
    }
    if (i < l->n || j < nup || k < nrm) {
        listed_free(out);
        out = NULL;
    }
done:
    free(ups);
    free(rms);
    return out;
}

/* ==== Errors and redaction ==== */

/* Copy src into dst (cap bytes, always NUL-terminated) replacing the user-info part of every
 * "scheme://user:secret@host" with "***", and control characters with spaces. */
static void redact(char *dst, size_t cap, const char *src)
{
    size_t o = 0;
    const char *p = src;

    if (cap == 0)
        return;
    while (*p && o + 1 < cap) {
        if (p[0] == ':' && p[1] == '/' && p[2] == '/') {
            const char *auth = p + 3, *end = auth, *at = NULL;

            while (*end && *end != '/' && *end != ' ' && *end != '\'' && *end != '"')
                if (*end++ == '@')
                    at = end - 1;
            for (int i = 0; i < 3 && o + 1 < cap; i++)
                dst[o++] = p[i];
            p += 3;
            if (at) {
                for (const char *s = "***"; *s && o + 1 < cap; s++)
                    dst[o++] = *s;
                p = at;
            }
            continue;
        }
        dst[o++] = ((unsigned char)*p < 0x20 || *p == 0x7f) ? ' ' : *p;
        p++;
    }
    dst[o] = '\0';
}

static char *redact_dup(const char *s)
{
    size_t cap = strlen(s) + 8;
    char *d = rc_xmalloc(cap);

    redact(d, cap, s);
    return d;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* n bytes of s, percent-decoded, malloc'd. */
static char *pct_decode(const char *s, size_t n)
{
    char *d = rc_xmalloc(n + 1);
    size_t o = 0;

    for (size_t i = 0; i < n; i++) {
        if (s[i] == '%' && i + 2 < n && hexval(s[i + 1]) >= 0 && hexval(s[i + 2]) >= 0) {
            d[o++] = (char)(hexval(s[i + 1]) * 16 + hexval(s[i + 2]));
            i += 2;
        } else {
            d[o++] = s[i];
        }
    }
    d[o] = '\0';
    return d;
}

int rc_git_url_split(const char *url, char **clean, char **user, char **password)
{
    const char *sep = strstr(url, "://");
    const char *auth, *end, *at = NULL, *colon = NULL;
    int http;

    *clean = *user = *password = NULL;
    if (!sep) {
        *clean = rc_xstrdup(url);
        return 0;
    }
    http = (size_t)(sep - url) >= 4 && !strncmp(url, "http", 4) &&
           (sep - url == 4 || (sep - url == 5 && url[4] == 's'));
    auth = sep + 3;
    for (end = auth; *end && *end != '/' && *end != '?' && *end != '#'; end++) {
        if (*end == '@')
            at = end;
    }
    if (!at) {
        *clean = rc_xstrdup(url);
        return 0;
    }
    for (const char *p = auth; p < at; p++) {
        if (*p == ':') {
            colon = p;
            break;
        }
    }
    if (!http && !colon) {
        /* ssh://git@host/...: a user name, not a secret */
        *clean = rc_xstrdup(url);
        return 0;
    }
    {
        struct rc_buf b = RC_BUF_INIT;

        rc_buf_add(&b, url, (size_t)(auth - url), NULL);
        if (!http) { /* keep the user of ssh://user:secret@host, drop the secret */
            rc_buf_add(&b, auth, (size_t)(colon - auth), NULL);
            rc_buf_putc(&b, '@', NULL);
        }
        rc_buf_puts(&b, at + 1, NULL);
        *clean = rc_buf_detach(&b, NULL);
    }
    *user = pct_decode(auth, (size_t)((colon ? colon : at) - auth));
    *password = colon ? pct_decode(colon + 1, (size_t)(at - colon - 1)) : rc_xstrdup("");
    return 1;
}

/* The rc code for a libgit2 return code. */
static int rc_code(int gerr)
{
    switch (gerr) {
    case GIT_ENOTFOUND:
        return RC_ENOTFOUND;
    case GIT_EINVALIDSPEC:
    case GIT_EAMBIGUOUS:
    case GIT_EINVALID:
        return RC_EINVALID;
    case GIT_EMODIFIED:
    case GIT_ENONFASTFORWARD:
    case GIT_ELOCKED:
        return RC_ECONFLICT;
    default:
        return RC_ERROR;
    }
}

static int failv(struct rc_err *err, int code, const char *hint, const char *fmt, va_list ap)
    __attribute__((format(printf, 4, 0)));
static int failv(struct rc_err *err, int code, const char *hint, const char *fmt, va_list ap)
{
    char what[RC_ERR_MSG_MAX], gmsg[RC_ERR_MSG_MAX], shown[RC_ERR_MSG_MAX];
    const git_error *e = git_error_last();

    vsnprintf(what, sizeof(what), fmt, ap);
    redact(gmsg, sizeof(gmsg), e && e->message ? e->message : "unknown libgit2 error");
    redact(shown, sizeof(shown), what);
    git_error_clear();
    return rc_err_set(err, code, "%s: %s%s", shown, gmsg, hint ? hint : "");
}

/* Set err to "<what>: <libgit2's last message><hint>" (redacted, one line) with `code`; hint
 * may be NULL. */
static int fail_hint(struct rc_err *err, int code, const char *hint, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int fail_hint(struct rc_err *err, int code, const char *hint, const char *fmt, ...)
{
    va_list ap;
    int rc;

    va_start(ap, fmt);
    rc = failv(err, code, hint, fmt, ap);
    va_end(ap);
    return rc;
}

/* Set err to "<what>: <libgit2's last message>" (redacted, one line) with `code`. */
#define fail(err, code, ...) fail_hint(err, code, NULL, __VA_ARGS__)

/* What the file system holding `dir` has left, for a message about a write that failed: a
 * full disk is the usual cause, and libgit2 does not always say so (a pack whose write failed
 * is reported as "unknown libgit2 error"). Written to out (empty when statvfs fails), which
 * is returned. */
static const char *space_left(char *out, size_t cap, const char *dir)
{
    static const char *const unit[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
    struct statvfs s;
    unsigned long long avail;
    size_t u = 0;

    out[0] = '\0';
    if (!dir || statvfs(dir, &s) < 0)
        return out;
    if (s.f_files && s.f_favail == 0) {
        snprintf(out, cap, " (no free inodes on the file system of '%s')", dir);
        return out;
    }
    avail = (unsigned long long)s.f_bavail * s.f_frsize;
    while (avail >= 10 * 1024 && u + 1 < sizeof(unit) / sizeof(unit[0])) {
        avail /= 1024;
        u++;
    }
    snprintf(out, cap, " (%llu %s free on the file system of '%s')", avail, unit[u], dir);
    return out;
}

/* fail() for a write into a repository (its git folder `dir`): the message says what space is
 * left there (in a buffer that lives as long as the caller's block). */
#define fail_write(err, dir, code, ...)                                                            \
    fail_hint(err, code, space_left((char[RC_ERR_MSG_MAX]){0}, RC_ERR_MSG_MAX, dir), __VA_ARGS__)

/*
 * Write a commit object and return its id. Not git_commit_create: libgit2 1.5 returns 0 from it
 * when the object's write fails (commit.c keeps an earlier 0 as its result), so on a full disk
 * it hands out the id of a commit that does not exist, and only a later ref update stops,
 * with "target OID for the reference doesn't exist", which hides why. git_odb_write reports
 * the failure itself.
 */
static int write_commit(git_oid *id, git_repository *repo, const git_signature *sig,
                        const char *message, const git_tree *tree, size_t nparents,
                        const git_commit **parents)
{
    git_buf buf = GIT_BUF_INIT;
    git_odb *odb = NULL;
    int ge;

    if ((ge = git_commit_create_buffer(&buf, repo, sig, sig, NULL, message, tree, nparents,
                                       parents)) >= 0 &&
        (ge = git_repository_odb(&odb, repo)) >= 0)
        ge = git_odb_write(id, odb, buf.ptr, buf.size, GIT_OBJECT_COMMIT);
    git_odb_free(odb);
    git_buf_dispose(&buf);
    return ge;
}

/* ==== Small helpers ==== */

static void oid_hex(char out[41], const git_oid *id)
{
    git_oid_tostr(out, 41, id);
}

static int parse_oid(git_oid *out, const char *hex, const char *what, struct rc_err *err)
{
    size_t n = hex ? strlen(hex) : 0;

    if (n != GIT_OID_HEXSZ)
        return rc_err_set(err, RC_EINVALID, "%s '%s' is not a 40-hex object id", what,
                          hex ? hex : "(null)");
    for (size_t i = 0; i < n; i++)
        if (!isxdigit((unsigned char)hex[i]))
            return rc_err_set(err, RC_EINVALID, "%s '%s' is not a 40-hex object id", what, hex);
    if (git_oid_fromstr(out, hex) < 0)
        return fail(err, RC_EINVALID, "bad object id '%s'", hex);
    return RC_OK;
}

/* A relative '/'-separated path: no empty, ".", ".." or ".git" component. "" allowed when
 * allow_empty (the root). */
static int check_path(const char *p, int allow_empty, struct rc_err *err)
{
    const char *c = p;

    if (!*p) {
        if (allow_empty)
            return RC_OK;
        return rc_err_set(err, RC_EINVALID, "empty path");
    }
    while (*c) {
        const char *slash = strchr(c, '/');
        size_t len = slash ? (size_t)(slash - c) : strlen(c);

        if (len == 0 || (len == 1 && c[0] == '.') || (len == 2 && c[0] == '.' && c[1] == '.') ||
            (len == 4 && !strncasecmp(c, ".git", 4)))
            return rc_err_set(err, RC_EINVALID, "invalid path '%s'", p);
        if (!slash)
            break;
        c = slash + 1;
        if (!*c)
            return rc_err_set(err, RC_EINVALID, "invalid path '%s'", p);
    }
    return RC_OK;
}

/* Normalize a path given by a caller for reading: "./a/b/" → "a/b", "." → "". Malloc'd. */
static char *norm_read_path(const char *p)
{
    size_t n;

    while (p[0] == '.' && p[1] == '/')
        p += 2;
    if (!strcmp(p, "."))
        p = "";
    n = strlen(p);
    while (n > 0 && p[n - 1] == '/')
        n--;
    return rc_xstrndup(p, n);
}

/* ==== Global setup ==== */

int rc_git_global_init(struct rc_err *err)
{
    if (git_libgit2_init() < 0)
        return fail(err, RC_ERROR, "cannot initialize libgit2");
    /* connections that give up when the remote goes silent (rc_git_net.c) */
    if (rc_git_net_register() < 0)
        return fail(err, RC_ERROR, "cannot register the git connection stream");
    /* libgit2 caches trees and commits of at most 4 KB; a directory of a few hundred
     * manifests is larger, and a pass reads the source's trees several times (listing, the
     * no-op check, the source diff), each time inflated and hash-checked again */
    git_libgit2_opts(GIT_OPT_SET_CACHE_OBJECT_LIMIT, GIT_OBJECT_TREE, (size_t)1 << 20);
    git_libgit2_opts(GIT_OPT_SET_CACHE_OBJECT_LIMIT, GIT_OBJECT_COMMIT, (size_t)1 << 20);
    rc_git_cache_fit(0);
    /* An object read is not hashed again to check its id, as git's own reads do not: a fetch
     * hashes what it indexes, and zlib checks what it inflates. libgit2's default re-hashed
     * every object the commit had just written when it packed them (bench/RESULTS.md,
     * note 40). */
    git_libgit2_opts(GIT_OPT_ENABLE_STRICT_HASH_VERIFICATION, 0);
    return RC_OK;
}

void rc_git_global_shutdown(void)
{
    git_libgit2_shutdown();
}

static size_t cache_fixed; /* rc_git_cache_limit's bound; 0: the source's */

size_t rc_git_cache_bound(size_t nfiles)
{
    size_t room = (RC_GIT_CACHE_MAX - RC_GIT_CACHE_BASE) / RC_GIT_CACHE_PER_FILE;

    return nfiles >= room ? RC_GIT_CACHE_MAX : RC_GIT_CACHE_BASE + nfiles * RC_GIT_CACHE_PER_FILE;
}

static void cache_set(size_t bytes)
{
    git_libgit2_opts(GIT_OPT_SET_CACHE_MAX_SIZE, (ssize_t)bytes);
}

void rc_git_cache_fit(size_t nfiles)
{
    if (!cache_fixed)
        cache_set(rc_git_cache_bound(nfiles));
}

void rc_git_cache_usage(size_t *used, size_t *limit)
{
    ssize_t u = 0, l = 0;

    git_libgit2_opts(GIT_OPT_GET_CACHED_MEMORY, &u, &l);
    *used = u > 0 ? (size_t)u : 0;
    *limit = l > 0 ? (size_t)l : 0;
}

void rc_git_cache_limit(size_t bytes)
{
    cache_fixed = bytes;
    cache_set(bytes ? bytes : RC_GIT_CACHE_BASE);
}

/* ==== Remote operations: credentials, fetch, push ==== */

enum {
    TRIED_USERNAME = 1,
    TRIED_AGENT = 2,
    TRIED_KEY = 4,
    TRIED_TOKEN_ENV = 8,
    TRIED_TOKEN_FILE = 16,
    TOKEN_FILE_UNREADABLE = 32,
    TRIED_URL = 64,
    KEY_NOT_REGULAR = 128,
};

struct remote_state {
    struct rc_git *g;
    unsigned tried;
    /* push results */
    char rejected_ref[256];
    char rejected_status[256];
    int nrejected;
    struct rc_buf remote_msgs; /* sideband text, capped */
    /* a forced push's lease (push_lease_cb): the value the remote's ref must hold (lease_set 0:
     * no lease; lease_absent: the ref must not exist) */
    const char *lease_ref;
    int lease_set, lease_absent, lease_broken;
    git_oid lease;
};

static void remote_state_init(struct remote_state *st, struct rc_git *g)
{
    memset(st, 0, sizeof(*st));
    st->g = g;
    rc_buf_init(&st->remote_msgs, REMOTE_MSG_MAX);
}

static void wipe_free(char *s)
{
    if (s) {
        volatile char *v = s;
        while (*v)
            *v++ = 0;
        free(s);
    }
}

/* The token from the first line of a file, trimmed; NULL when unreadable or empty. */
static char *read_token_file(const char *path)
{
    struct rc_buf b = RC_BUF_INIT;
    struct rc_err e = RC_ERR_INIT;
    char *tok = NULL;
    size_t n;

    rc_buf_init(&b, TOKEN_FILE_MAX);
    if (rc_buf_read_file(&b, path, &e) == RC_OK) {
        n = strcspn(b.ptr, "\r\n");
        while (n > 0 && isspace((unsigned char)b.ptr[n - 1]))
            n--;
        if (n > 0)
            tok = rc_xstrndup(b.ptr, n);
    }
    if (b.cap)
        memset(b.ptr, 0, b.cap);
    rc_buf_release(&b);
    return tok;
}

static int is_regular_file(const char *path)
{
    struct stat sb;

    return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

static int cred_cb(git_credential **out, const char *url, const char *user_from_url,
                   unsigned int allowed, void *payload)
{
    struct remote_state *st = payload;
    struct rc_git *g = st->g;
    const char *user = user_from_url && *user_from_url ? user_from_url : NULL;
    char tried[192] = "";

    (void)url;
    if ((allowed & GIT_CREDENTIAL_USERNAME) && !(st->tried & TRIED_USERNAME)) {
        st->tried |= TRIED_USERNAME;
        return git_credential_username_new(out, user ? user : "git");
    }
    if (allowed & GIT_CREDENTIAL_SSH_KEY) {
        const char *sock = getenv("SSH_AUTH_SOCK");

        if (!(st->tried & TRIED_AGENT) && sock && *sock) {
            st->tried |= TRIED_AGENT;
            return git_credential_ssh_key_from_agent(out, user ? user : "git");
        }
        /* libssh2 opens the key files itself: regular files only, so that a FIFO cannot
         * make it wait */
        if (!(st->tried & TRIED_KEY) && g->ssh_key && !is_regular_file(g->ssh_key)) {
            st->tried |= TRIED_KEY | KEY_NOT_REGULAR;
        } else if (!(st->tried & TRIED_KEY) && g->ssh_key) {
            char *pub = rc_xmalloc(strlen(g->ssh_key) + 5);
            int e;

            st->tried |= TRIED_KEY;
            memcpy(pub, g->ssh_key, strlen(g->ssh_key));
            memcpy(pub + strlen(g->ssh_key), ".pub", 5);
            e = git_credential_ssh_key_new(
                out, user ? user : "git",
                is_regular_file(pub) && access(pub, R_OK) == 0 ? pub : NULL, g->ssh_key, NULL);
            free(pub);
            return e;
        }
    }
    if (allowed & GIT_CREDENTIAL_USERPASS_PLAINTEXT) {
        const char *v = g->token_env ? getenv(g->token_env) : NULL;
        char *tok = NULL;
        int e;

        if (!(st->tried & TRIED_URL) && g->url_user) {
            /* the credentials the URL carried, from memory (never in the mirror's config) */
            st->tried |= TRIED_URL;
            return git_credential_userpass_plaintext_new(out, g->url_user, g->url_pass);
        }
        if (!(st->tried & TRIED_TOKEN_ENV) && v && *v) {
            st->tried |= TRIED_TOKEN_ENV;
            tok = rc_xstrdup(v);
        } else if (!(st->tried & TRIED_TOKEN_FILE) && g->token_file) {
            st->tried |= TRIED_TOKEN_FILE;
            tok = read_token_file(g->token_file);
            if (!tok)
                st->tried |= TOKEN_FILE_UNREADABLE;
        }
        if (tok) {
            e = git_credential_userpass_plaintext_new(out, user ? user : "x-access-token", tok);
            wipe_free(tok);
            return e;
        }
    }
    if (st->tried & TRIED_URL)
        snprintf(tried + strlen(tried), sizeof(tried) - strlen(tried), ", the URL's credentials");
    if (st->tried & TRIED_AGENT)
        snprintf(tried + strlen(tried), sizeof(tried) - strlen(tried), ", ssh agent");
    if (st->tried & TRIED_KEY)
        snprintf(tried + strlen(tried), sizeof(tried) - strlen(tried), ", ssh key file%s",
                 (st->tried & KEY_NOT_REGULAR) ? " (not a regular file)" : "");
    if (st->tried & TRIED_TOKEN_ENV)
        snprintf(tried + strlen(tried), sizeof(tried) - strlen(tried), ", token from $%s",
                 g->token_env);
    if (st->tried & TRIED_TOKEN_FILE)
        snprintf(tried + strlen(tried), sizeof(tried) - strlen(tried), ", token file%s",
                 (st->tried & TOKEN_FILE_UNREADABLE) ? " (unreadable or empty)" : "");
    if (tried[0]) {
        char msg[256];

        snprintf(msg, sizeof(msg), "authentication refused (tried %s)", tried + 2);
        git_error_set_str(GIT_ERROR_NET, msg);
    } else {
        git_error_set_str(GIT_ERROR_NET, "authentication required and no credentials configured");
    }
    return GIT_EAUTH;
}

static int sideband_cb(const char *str, int len, void *payload)
{
    struct remote_state *st = payload;
    struct rc_err e = RC_ERR_INIT;
    size_t room = st->remote_msgs.max - st->remote_msgs.len;
    size_t n = len > 0 ? (size_t)len : 0;

    rc_buf_add(&st->remote_msgs, str, n < room ? n : room, &e);
    return 0;
}

static int push_update_cb(const char *refname, const char *status, void *payload)
{
    struct remote_state *st = payload;

    if (status) {
        if (st->nrejected++ == 0) {
            snprintf(st->rejected_ref, sizeof(st->rejected_ref), "%s", refname);
            snprintf(st->rejected_status, sizeof(st->rejected_status), "%s", status);
        }
    }
    return 0;
}

/* Before a forced push sends anything: the remote's ref must still hold what this process
 * read (the lease), else nothing is pushed. The value is the one the remote advertised on
 * this connection, and receive-pack updates the ref only if it still holds that value, so
 * no write between the check and the update is lost. */
static int push_lease_cb(const git_push_update **updates, size_t len, void *payload)
{
    struct remote_state *st = payload;

    for (size_t i = 0; st->lease_set && i < len; i++) {
        if (strcmp(updates[i]->dst_refname, st->lease_ref))
            continue;
        if (st->lease_absent ? !git_oid_is_zero(&updates[i]->src)
                             : !git_oid_equal(&updates[i]->src, &st->lease)) {
            st->lease_broken = 1;
            return -1;
        }
    }
    return 0;
}

/* A rejection that means "someone else moved the ref": refetch and redo. receive-pack says
 * "failed to update ref" both for a lost race (its messages then say "cannot lock ref ...
 * but expected ...") and for server trouble, so the messages decide. */
static int status_is_conflict(const char *status, const char *msgs)
{
    static const char *const moved[] = {"non-fast-forward",    "fetch first",     "stale info",
                                        "incorrect old value", "cannot lock ref", "failed to lock"};

    for (size_t i = 0; i < sizeof(moved) / sizeof(moved[0]); i++)
        if (strstr(status, moved[i]))
            return 1;
    return strstr(status, "failed to update ref") &&
           (strstr(msgs, "cannot lock ref") || strstr(msgs, "but expected"));
}

static void remote_callbacks(git_remote_callbacks *cb, struct remote_state *st)
{
    cb->credentials = cred_cb;
    cb->sideband_progress = sideband_cb;
    cb->push_update_reference = push_update_cb;
    cb->payload = st;
}

/* The refspecs a mirror is fetched with (force, so local refs follow the remote's). */
static const char *mirror_specs[] = {"+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*",
                                     "+refs/notes/*:refs/notes/*",
                                     "+refs/rightplace/*:refs/rightplace/*"};

/* An in-memory remote for g->url. Not git_remote_lookup: it applies url.*.insteadOf through a
 * config regex that leaks in libgit2 1.5 (pcre2 match data), and our refspecs are fixed. */
static int remote_new(git_remote **out, struct rc_git *g, struct rc_err *err)
{
    git_remote_create_options co;

    git_remote_create_options_init(&co, GIT_REMOTE_CREATE_OPTIONS_VERSION);
    co.repository = g->repo;
    co.flags = GIT_REMOTE_CREATE_SKIP_INSTEADOF | GIT_REMOTE_CREATE_SKIP_DEFAULT_FETCHSPEC;
    if (git_remote_create_with_opts(out, g->url, &co) < 0)
        return fail(err, RC_EINVALID, "bad remote '%s'", g->url_shown);
    return RC_OK;
}

/* Whether a remote URL is reached over ssh (ssh://, or scp-like user@host:path). */
static int is_ssh_url(const char *url)
{
    if (!strncmp(url, "ssh://", 6) || !strncmp(url, "git+ssh://", 10) ||
        !strncmp(url, "ssh+git://", 10))
        return 1;
    return rc_git_is_url(url) && !strstr(url, "://"); /* scp-like: user@host:path */
}

/* After a failed fetch or push: what the error needs said beside libgit2's words.
 * - A connection that failed under libgit2's TLS stream, which words it as its own "SSL
 *   error": the connection's own failure (a remote gone silent, rc_git_net.c).
 * - An ssh remote whose host key libgit2 refused ("invalid or unknown remote ssh hostkey"):
 *   where the key must be, as libgit2 1.5.1 and later check it against
 *   $HOME/.ssh/known_hosts and refuse a host not found there (docs/security.md).
 * Empty otherwise. */
static void remote_hint(char *out, size_t cap, const struct rc_git *g, int e)
{
    const char *home = getenv("HOME"), *net = rc_git_net_failure();
    const git_error *ge = git_error_last();

    out[0] = '\0';
    if (*net && !(ge && ge->message && strstr(ge->message, net))) {
        snprintf(out, cap, "; %s", net);
        return;
    }
    if (e != GIT_ECERTIFICATE || !g->url || !is_ssh_url(g->url))
        return;
    snprintf(out, cap, "; the host's key must be in '%s/.ssh/known_hosts' (ssh-keyscan prints it)",
             home && *home ? home : "~");
}

static int do_fetch(struct rc_git *g, struct rc_err *err)
{
    git_strarray specs = {(char **)mirror_specs, sizeof(mirror_specs) / sizeof(mirror_specs[0])};
    git_remote *remote = NULL;
    git_fetch_options fo;
    struct remote_state st;
    int e, error = RC_OK;

    remote_state_init(&st, g);
    git_fetch_options_init(&fo, GIT_FETCH_OPTIONS_VERSION);
    remote_callbacks(&fo.callbacks, &st);
    fo.prune = GIT_FETCH_PRUNE;
    fo.proxy_opts.type = GIT_PROXY_AUTO;              /* http.proxy or $https_proxy, as git does */
    fo.download_tags = GIT_REMOTE_DOWNLOAD_TAGS_NONE; /* tags come through the refspec */

    if ((error = remote_new(&remote, g, err)) < 0)
        goto done;
    rc_git_net_forget();
    if ((e = git_remote_fetch(remote, &specs, &fo, "rightplace: fetch")) < 0) {
        char hint[RC_ERR_MSG_MAX];
        remote_hint(hint, sizeof(hint), g, e);
        error = fail_hint(err, RC_ERROR, hint, "cannot fetch from '%s'", g->url_shown);
        goto done;
    }
    if (g->log)
        rc_log_debug(g->log, "fetched '%s'", g->url_shown);
done:
    git_remote_free(remote);
    rc_buf_release(&st.remote_msgs);
    return error;
}

int rc_git_fetch(struct rc_git *g, struct rc_err *err)
{
    if (!g->remote)
        return RC_OK;
    return do_fetch(g, err);
}

/* Push refs over a smart transport (ssh, https, git): the server's receive-pack checks the
 * old values under its ref locks and runs its hooks. */
/* force: "+ref:ref", the remote ref is replaced when it holds what lease says (lease NULL:
 * whatever it holds; lease->absent: only when it does not exist; rc_git_force_ref). */
struct lease {
    int absent;
    git_oid id;
};

static int push_smart(struct rc_git *g, const char *const *refs, size_t nrefs, int force,
                      const struct lease *lease, struct rc_err *err)
{
    git_remote *remote = NULL;
    git_push_options po;
    struct remote_state st;
    git_strarray specs = {NULL, 0};
    int e, error = RC_OK;

    remote_state_init(&st, g);
    git_push_options_init(&po, GIT_PUSH_OPTIONS_VERSION);
    remote_callbacks(&po.callbacks, &st);
    if (force && lease && nrefs == 1) {
        st.lease_ref = refs[0];
        st.lease_set = 1;
        st.lease_absent = lease->absent;
        git_oid_cpy(&st.lease, &lease->id);
        po.callbacks.push_negotiation = push_lease_cb;
    }
    po.proxy_opts.type = GIT_PROXY_AUTO;
    specs.strings = rc_xcalloc(nrefs ? nrefs : 1, sizeof(char *));
    for (size_t i = 0; i < nrefs; i++) {
        size_t n = strlen(refs[i]);
        char *s = rc_xmalloc(2 * n + 3), *p = s;

        if (force)
            *p++ = '+';
        memcpy(p, refs[i], n);
        p[n] = ':';
        memcpy(p + n + 1, refs[i], n + 1);
        specs.strings[specs.count++] = s;
    }
    if ((error = remote_new(&remote, g, err)) < 0)
        goto done;
    rc_git_net_forget();
    e = git_remote_push(remote, &specs, &po);
    if (st.lease_broken) {
        error = rc_err_set(err, RC_ECONFLICT,
                           "push of '%s' to '%s' not sent: the remote's ref is no longer the "
                           "one this pass read (another writer moved it)",
                           refs[0], g->url_shown);
    } else if (e == GIT_ENONFASTFORWARD) {
        error = fail(err, RC_ECONFLICT, "push to '%s' rejected (the remote moved)", g->url_shown);
    } else if (e < 0) {
        char hint[RC_ERR_MSG_MAX];
        remote_hint(hint, sizeof(hint), g, e);
        error = fail_hint(err, RC_ERROR, hint, "cannot push to '%s'", g->url_shown);
    } else if (st.nrejected > 0) {
        char msgs[REMOTE_MSG_MAX + 1];

        redact(msgs, sizeof(msgs), st.remote_msgs.ptr);
        /* trim spaces left by newlines */
        for (size_t n = strlen(msgs); n > 0 && msgs[n - 1] == ' ';)
            msgs[--n] = '\0';
        error = rc_err_set(err,
                           status_is_conflict(st.rejected_status, st.remote_msgs.ptr) ? RC_ECONFLICT
                                                                                      : RC_ERROR,
                           "push of '%s' refused by '%s': %s%s%s", st.rejected_ref, g->url_shown,
                           st.rejected_status, msgs[0] ? ": remote: " : "", msgs);
    }
done:
    for (size_t i = 0; i < specs.count; i++)
        free(specs.strings[i]);
    free(specs.strings);
    git_remote_free(remote);
    rc_buf_release(&st.remote_msgs);
    return error;
}

/* "file:///a/b%20c" → "/a/b c" (malloc'd); NULL when not a file:// URL with a path. */
static char *file_url_path(const char *url)
{
    const char *p = url + strlen("file://");
    char *out, *o;

    if (strncmp(url, "file://", 7) || *p != '/')
        return NULL;
    out = o = rc_xmalloc(strlen(p) + 1);
    for (; *p; p++) {
        if (p[0] == '%' && isxdigit((unsigned char)p[1]) && isxdigit((unsigned char)p[2])) {
            char hex[3] = {p[1], p[2], 0};

            *o++ = (char)strtol(hex, NULL, 16);
            p += 2;
        } else {
            *o++ = *p;
        }
    }
    *o = '\0';
    return out;
}

struct hide_walk {
    git_repository *remote;
    git_odb *local_odb;
    git_revwalk *walk;
};

/* Hide every remote tip we also have, so only what the remote lacks is packed. */
static int hide_remote_tip(const char *name, void *payload)
{
    struct hide_walk *h = payload;
    git_oid id;

    if (git_reference_name_to_id(&id, h->remote, name) == 0 && git_odb_exists(h->local_odb, &id) &&
        git_revwalk_hide(h->walk, &id) < 0)
        git_error_clear(); /* not a commit: nothing to hide */
    git_error_clear();
    return 0;
}

/* A git process that updates a ref holds "<ref>.lock" for milliseconds; one that crashed
 * leaves it, and every later update fails. One older than this, while rightplace holds its
 * own lock (no other pass runs on this repository through this state directory), is stale. */
#define STALE_REF_LOCK_SECONDS 600

static void ref_lock_path(char *out, size_t n, git_repository *repo, const char *ref)
{
    const char *dir = git_repository_commondir(repo);
    size_t dl = dir ? strlen(dir) : 0;

    snprintf(out, n, "%s%s%s.lock", dir ? dir : "", dl && dir[dl - 1] != '/' ? "/" : "", ref);
}

/*
 * A ref lock that may be live: "<what>: '<lock>' exists (...)", with as much of the why and
 * what to do as fits in a message beside the lock's whole path, which is what the reader
 * needs (cut short it is not a path): whole up to about 200 bytes. `brief` is a shorter
 * `what` for a long path.
 */
static int lock_held(struct rc_err *err, int code, const char *what, const char *brief,
                     const char *lock)
{
    static const char died[] = " (a git process is updating it, or one died)";
    char whole[160], msg[2 * RC_ERR_MSG_MAX];
    /* the first form that fits whole, longest first; the last one is cut if it must be */
    const struct {
        int brief;
        const char *why;
    } form[] = {{0, whole}, {0, died}, {1, died}, {1, ""}};
    size_t i;

    snprintf(whole, sizeof(whole),
             " (a git process is updating it, or one died; if none runs on this repository, "
             "remove it; rightplace does once it is %d minutes old)",
             STALE_REF_LOCK_SECONDS / 60);
    for (i = 0; i + 1 < sizeof(form) / sizeof(form[0]); i++) {
        int n = snprintf(msg, sizeof(msg), "%s: '%s' exists%s", form[i].brief ? brief : what, lock,
                         form[i].why);
        if (n >= 0 && n < RC_ERR_MSG_MAX)
            break;
    }
    return rc_err_set(err, code, "%s: '%s' exists%s", form[i].brief ? brief : what, lock,
                      form[i].why);
}

/* Remove the lock file of ref in repo when it is provably stale (older than
 * STALE_REF_LOCK_SECONDS); returns 1 when removed, else 0. */
static int clear_stale_ref_lock(git_repository *repo, const struct rc_log *log, const char *ref)
{
    char path[4096];
    struct stat st;
    time_t now = time(NULL);

    ref_lock_path(path, sizeof(path), repo, ref);
    if (lstat(path, &st) < 0 || !S_ISREG(st.st_mode) || now - st.st_mtime < STALE_REF_LOCK_SECONDS)
        return 0;
    if (unlink(path) < 0)
        return 0;
    if (log)
        rc_log_warn(log,
                    "removed the stale lock file '%s' (%lld minutes old; a git process that "
                    "updated '%s' must have died)",
                    path, (long long)(now - st.st_mtime) / 60, ref);
    return 1;
}

/* Push refs to a file:// remote. libgit2's local transport writes the remote's refs with
 * force and no check of their current value, so two writers racing would silently lose one
 * update. Instead: write a pack of what the remote lacks into its object store, then under
 * the remote's ref locks (a transaction) refuse any ref whose current value is not an
 * ancestor of ours, and move all refs at once or none (like `git push --atomic`). */
static int push_file(struct rc_git *g, const char *const *refs, size_t nrefs, int force,
                     const struct lease *lease, struct rc_err *err)
{
    char *path = file_url_path(g->url), *pack_dir = NULL;
    git_repository *rr = NULL;
    git_revwalk *walk = NULL;
    git_packbuilder *pb = NULL;
    git_transaction *tx = NULL;
    git_odb *rodb = NULL;
    struct hide_walk h = {NULL, NULL, NULL};
    git_oid *ids = rc_xcalloc(nrefs ? nrefs : 1, sizeof(git_oid));
    int e, error = RC_OK;

    if (!path) {
        error = rc_err_set(err, RC_EINVALID, "unsupported file URL '%s'", g->url_shown);
        goto done;
    }
    if ((e = git_repository_open_ext(&rr, path, GIT_REPOSITORY_OPEN_NO_SEARCH, NULL)) < 0) {
        error = fail(err, RC_ERROR, "cannot open remote '%s'", g->url_shown);
        goto done;
    }
    if (!git_repository_is_bare(rr)) {
        error =
            rc_err_set(err, RC_ERROR, "cannot push to '%s': not a bare repository", g->url_shown);
        goto done;
    }
    for (size_t i = 0; i < nrefs; i++)
        if ((e = git_reference_name_to_id(&ids[i], g->repo, refs[i])) < 0) {
            error = fail(err, rc_code(e), "cannot push '%s'", refs[i]);
            goto done;
        }

    /* 1. objects */
    if ((e = git_revwalk_new(&walk, g->repo)) < 0 ||
        (e = git_repository_odb(&h.local_odb, g->repo)) < 0) {
        error = fail(err, RC_ERROR, "cannot walk '%s'", g->path);
        goto done;
    }
    for (size_t i = 0; i < nrefs; i++)
        if ((e = git_revwalk_push(walk, &ids[i])) < 0) {
            error = fail(err, RC_EINVALID, "cannot push '%s'", refs[i]);
            goto done;
        }
    h.remote = rr;
    h.walk = walk;
    git_reference_foreach_name(rr, hide_remote_tip, &h);
    if ((e = git_packbuilder_new(&pb, g->repo)) < 0 ||
        (e = git_packbuilder_insert_walk(pb, walk)) < 0) {
        error = fail(err, RC_ERROR, "cannot pack objects for '%s'", g->url_shown);
        goto done;
    }
    if (git_packbuilder_object_count(pb) > 0) {
        size_t n = strlen(git_repository_path(rr));

        pack_dir = rc_xmalloc(n + sizeof("objects/pack"));
        memcpy(pack_dir, git_repository_path(rr), n); /* ends with '/' */
        memcpy(pack_dir + n, "objects/pack", sizeof("objects/pack"));
        if ((e = git_packbuilder_write(pb, pack_dir, 0, NULL, NULL)) < 0) {
            error = fail_write(err, git_repository_path(rr), RC_ERROR,
                               "cannot write objects to '%s'", g->url_shown);
            goto done;
        }
        if ((e = git_repository_odb(&rodb, rr)) < 0 || (e = git_odb_refresh(rodb)) < 0) {
            error = fail(err, RC_ERROR, "cannot read objects of '%s'", g->url_shown);
            goto done;
        }
    }

    /* 2. refs, under the remote's locks */
    if ((e = git_transaction_new(&tx, rr)) < 0) {
        error = fail(err, RC_ERROR, "cannot update '%s'", g->url_shown);
        goto done;
    }
    for (size_t i = 0; i < nrefs; i++) {
        git_oid cur;

        e = git_transaction_lock_ref(tx, refs[i]);
        if (e == GIT_ELOCKED && clear_stale_ref_lock(rr, g->log, refs[i]))
            e = git_transaction_lock_ref(tx, refs[i]);
        if (e == GIT_ELOCKED) {
            /* held by another writer, or left by one that died (removed once it is stale) */
            char lock[4096], what[RC_ERR_MSG_MAX], brief[RC_ERR_MSG_MAX];
            git_error_clear();
            ref_lock_path(lock, sizeof(lock), rr, refs[i]);
            snprintf(what, sizeof(what), "push of '%s' refused by '%s'", refs[i], g->url_shown);
            snprintf(brief, sizeof(brief), "push of '%s' refused", refs[i]);
            error = lock_held(err, RC_ECONFLICT, what, brief, lock);
            goto done;
        }
        if (e < 0) {
            error = fail(err, RC_ERROR, "push of '%s' refused by '%s'", refs[i], g->url_shown);
            goto done;
        }
        e = git_reference_name_to_id(&cur, rr, refs[i]);
        if (e == 0 && !force && !git_oid_equal(&cur, &ids[i]) &&
            git_graph_descendant_of(rr, &ids[i], &cur) != 1) {
            error = rc_err_set(err, RC_ECONFLICT,
                               "push of '%s' refused by '%s': non-fast-forward (the remote "
                               "moved)",
                               refs[i], g->url_shown);
            goto done;
        }
        if (e < 0 && e != GIT_ENOTFOUND) {
            error = fail(err, RC_ERROR, "cannot read '%s' in '%s'", refs[i], g->url_shown);
            goto done;
        }
        if (force && lease &&
            (lease->absent ? e != GIT_ENOTFOUND : e != 0 || !git_oid_equal(&cur, &lease->id))) {
            error = rc_err_set(err, RC_ECONFLICT,
                               "push of '%s' to '%s' not sent: the remote's ref is no longer "
                               "the one this pass read (another writer moved it)",
                               refs[i], g->url_shown);
            goto done;
        }
        git_error_clear();
        if ((e = git_transaction_set_target(tx, refs[i], &ids[i], NULL, "push")) < 0) {
            error = fail(err, RC_ERROR, "cannot update '%s' in '%s'", refs[i], g->url_shown);
            goto done;
        }
    }
    if ((e = git_transaction_commit(tx)) < 0)
        error = fail(err, RC_ERROR, "cannot update refs of '%s'", g->url_shown);
done:
    git_transaction_free(tx); /* releases the locks when not committed */
    git_packbuilder_free(pb);
    git_revwalk_free(walk);
    git_odb_free(h.local_odb);
    git_odb_free(rodb);
    git_repository_free(rr);
    free(pack_dir);
    free(path);
    free(ids);
    return error;
}

/* Push refs (full names) without force; on failure fetch again so that the local mirror
 * shows the remote's refs. See rc_git_push_refs. */
static int do_push(struct rc_git *g, const char *const *refs, size_t nrefs, int force,
                   const struct lease *lease, struct rc_err *err)
{
    int error;

    if (!strncmp(g->url, "file://", 7))
        error = push_file(g, refs, nrefs, force, lease, err);
    else
        error = push_smart(g, refs, nrefs, force, lease, err);
    if (error < 0) {
        struct rc_err ferr = RC_ERR_INIT;

        if (do_fetch(g, &ferr) < 0 && g->log)
            rc_log_warn(g->log, "%s", ferr.msg);
    } else if (g->log) {
        rc_log_debug(g->log, "pushed %zu ref(s) to '%s'", nrefs, g->url_shown);
    }
    return error;
}

int rc_git_push_refs(struct rc_git *g, const char *const *refs, size_t nrefs, struct rc_err *err)
{
    git_oid id;

    if (!g->remote || nrefs == 0)
        return RC_OK;
    for (size_t i = 0; i < nrefs; i++) {
        int e = git_reference_name_to_id(&id, g->repo, refs[i]);

        if (e < 0)
            return fail(err, rc_code(e), "cannot push '%s'", refs[i]);
    }
    return do_push(g, refs, nrefs, 0, NULL, err);
}

/* ==== Open ==== */

int rc_git_is_url(const char *repo)
{
    const char *p = repo, *colon, *slash;

    if (isalpha((unsigned char)*p)) {
        while (isalnum((unsigned char)*p) || *p == '+' || *p == '-' || *p == '.')
            p++;
        if (!strncmp(p, "://", 3))
            return 1;
    }
    colon = strchr(repo, ':');
    slash = strchr(repo, '/');
    return colon && colon != repo && (!slash || colon < slash);
}

static int mkdir_p(const char *path, struct rc_err *err)
{
    char *tmp = rc_xstrdup(path);
    int error = RC_OK;

    for (char *p = tmp + 1;; p++) {
        if (*p == '/' || *p == '\0') {
            char c = *p;

            *p = '\0';
            if (mkdir(tmp, 0700) < 0 && errno != EEXIST) {
                error = rc_err_set(err, RC_ERROR, "cannot create '%s': %s", tmp, strerror(errno));
                break;
            }
            *p = c;
            if (!c)
                break;
        }
    }
    free(tmp);
    return error;
}

/* ==== What a killed process left in the mirror ==== */

/* What a sweep of the mirror removed. */
struct sweep {
    size_t files;
    uint64_t bytes;
};

/* Remove file `name` of directory fd `dir`, a regular file of st (lstat'ed: never a link),
 * counted in *sw. */
static void sweep_unlink(struct sweep *sw, int dir, const char *name, const struct stat *st)
{
    if (unlinkat(dir, name, 0) == 0) {
        sw->files++;
        sw->bytes += (uint64_t)st->st_size;
    }
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);

    return n >= k && !memcmp(s + n - k, suffix, k);
}

/* libgit2's temporary files (git_futils_mktmp: "<name>_git2_XXXXXX": a loose object, a pack
 * being indexed) and lock files ("<file>.lock": a ref, packed-refs, config, a pack's index
 * being written) in directory `path`; under refs/ also below it (depth-bounded). */
static void sweep_dir(struct sweep *sw, const char *path, int refs, int depth)
{
    DIR *d = opendir(path);
    struct dirent *e;

    if (!d)
        return;
    while ((e = readdir(d)) != NULL) {
        struct stat st;
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
            continue;
        if (S_ISDIR(st.st_mode) && refs && depth < 32) {
            size_t n = strlen(path) + strlen(e->d_name) + 2;
            char *sub = rc_xmalloc(n);
            snprintf(sub, n, "%s/%s", path, e->d_name);
            sweep_dir(sw, sub, refs, depth + 1);
            free(sub);
        } else if (S_ISREG(st.st_mode) &&
                   (ends_with(e->d_name, ".lock") || strstr(e->d_name, "_git2_"))) {
            sweep_unlink(sw, dirfd(d), e->d_name, &st);
        }
    }
    closedir(d);
}

/* A pack without its index (the indexer renames the pack, then writes the index): nothing
 * reads it. */
static void sweep_orphan_packs(struct sweep *sw, const char *path)
{
    DIR *d = opendir(path);
    struct dirent *e;

    if (!d)
        return;
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        char idx[NAME_MAX + 1];
        struct stat st;
        struct stat ist;
        if (len <= 10 || len > NAME_MAX || strncmp(e->d_name, "pack-", 5) ||
            !ends_with(e->d_name, ".pack") ||
            fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
            continue;
        memcpy(idx, e->d_name, len - 5);
        memcpy(idx + len - 5, ".idx", 5);
        if (fstatat(dirfd(d), idx, &ist, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT)
            sweep_unlink(sw, dirfd(d), e->d_name, &st);
    }
    closedir(d);
}

/*
 * Nothing writes the mirror but a rightplace process holding the state directory's lock, and
 * the caller holds it (rc_git_open), so a lock file or a temporary file of libgit2's found
 * there belongs to a process that died before it could rename or remove it (SIGKILL, the OOM
 * killer, a power cut). A ref's lock file would fail every later fetch ("failed to lock
 * file"); a temporary pack would stay as large as the indexer had written, for good (git gc
 * removes its own "tmp_" files, not libgit2's). Crash trials at 10,000 workloads left
 * temporary packs here, and a ref lock in a file:// remote (bench/RESULTS.md, note 89).
 */
static void sweep_mirror(const struct rc_git *g)
{
    struct sweep sw = {0, 0};
    size_t n = strlen(g->path) + sizeof("/objects/pack");
    char *p = rc_xmalloc(n);

    sweep_dir(&sw, g->path, 0, 0);
    snprintf(p, n, "%s/refs", g->path);
    sweep_dir(&sw, p, 1, 0);
    snprintf(p, n, "%s/objects", g->path);
    sweep_dir(&sw, p, 0, 0);
    snprintf(p, n, "%s/objects/pack", g->path);
    sweep_dir(&sw, p, 0, 0);
    sweep_orphan_packs(&sw, p);
    free(p);
    if (sw.files && g->log)
        rc_log_info(g->log,
                    "removed %zu lock and temporary files (%" PRIu64
                    " bytes) that a killed pass left in mirror '%s'",
                    sw.files, sw.bytes, g->path);
}

/* nftw callbacks: remove what is visited (depth first); count the files. */
static int remove_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    return (type == FTW_DP ? rmdir(path) : unlink(path)) < 0 ? -1 : 0;
}

static int remove_tree(const char *path)
{
    return nftw(path, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

static int count_file(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)path;
    (void)st;
    (void)ftw;
    /* the first file (or what could not be read) stops the walk */
    return type == FTW_D || type == FTW_DP ? 0 : 1;
}

/* Whether `dir` holds a file, or might (it cannot be read): anything but a clear no. */
static int holds_a_file(const char *dir)
{
    struct stat st;

    if (lstat(dir, &st) < 0)
        return errno != ENOENT;
    return nftw(dir, count_file, 16, FTW_PHYS) != 0;
}

/*
 * Whether the mirror at `path` is a shell that holds nothing: a directory without an object,
 * a ref or packed-refs. An init or its configuration cut short (a full disk, a kill) leaves
 * one, and every later pass then failed on it ("is not a git mirror", "has no remote") until a
 * person removed it. Such a shell costs nothing to make again; anything holding objects or
 * refs is left for a person.
 */
static int mirror_shell(const char *path)
{
    char sub[4096];
    struct stat st;

    if (lstat(path, &st) < 0 || !S_ISDIR(st.st_mode))
        return 0;
    snprintf(sub, sizeof(sub), "%s/packed-refs", path);
    if (lstat(sub, &st) == 0 || errno != ENOENT)
        return 0;
    snprintf(sub, sizeof(sub), "%s/objects", path);
    if (holds_a_file(sub))
        return 0;
    snprintf(sub, sizeof(sub), "%s/refs", path);
    return !holds_a_file(sub);
}

/* A mirror shell (mirror_shell) that does not open or does not name its remote, made halfway
 * by an earlier rightplace that ran out of room or was killed, removed to be made again (one
 * made whole whose first fetch failed is fetched into instead). */
static int drop_shell(struct rc_git *g, struct rc_err *err)
{
    git_error_clear();
    if (g->log)
        rc_log_warn(g->log, "mirror '%s' holds no object and no ref: made again", g->path);
    if (remove_tree(g->path) < 0)
        return rc_err_set(err, RC_ERROR, "cannot remove the empty mirror '%s': %s", g->path,
                          strerror(errno));
    return RC_OK;
}

/* Make the mirror's repository at g->path: made and configured beside it (repo.git.new, any
 * earlier one removed: the caller holds the state directory's lock), then renamed into place,
 * so that a failure halfway leaves no repo.git. */
static int create_mirror(struct rc_git *g, const char *state_dir, struct rc_err *err)
{
    git_repository *r = NULL;
    git_config *cfg = NULL;
    size_t n = strlen(state_dir);
    char *tmp = rc_xmalloc(n + sizeof("/repo.git.new"));
    int error = RC_OK;

    memcpy(tmp, state_dir, n);
    memcpy(tmp + n, "/repo.git.new", sizeof("/repo.git.new"));
    if (remove_tree(tmp) < 0 && errno != ENOENT) {
        error = rc_err_set(err, RC_ERROR, "cannot remove '%s': %s", tmp, strerror(errno));
        goto done;
    }
    if (git_repository_init(&r, tmp, 1) < 0) {
        error = fail_write(err, state_dir, RC_ERROR, "cannot create mirror '%s'", g->path);
        goto done;
    }
    /* Recorded for people using the git CLI in the mirror, and to recognise the URL later;
     * without credentials (they stay in memory, offered by cred_cb). */
    if (git_repository_config(&cfg, r) < 0 ||
        git_config_set_string(cfg, "remote." ORIGIN ".url", g->url) < 0 ||
        git_config_set_string(cfg, "remote." ORIGIN ".fetch", mirror_specs[0]) < 0) {
        error = fail_write(err, state_dir, RC_ERROR, "cannot configure mirror '%s'", g->path);
        goto done;
    }
    git_config_free(cfg);
    cfg = NULL;
    git_repository_free(r);
    r = NULL;
    if (rename(tmp, g->path) < 0) {
        error =
            rc_err_set(err, RC_ERROR, "cannot create mirror '%s': %s", g->path, strerror(errno));
        goto done;
    }
    if (git_repository_open_bare(&g->repo, g->path) < 0)
        error = fail(err, RC_ERROR, "cannot open mirror '%s'", g->path);
done:
    git_config_free(cfg);
    git_repository_free(r);
    if (error < 0)
        remove_tree(tmp);
    free(tmp);
    return error;
}

static int open_mirror(struct rc_git *g, const char *state_dir, struct rc_err *err)
{
    git_config *cfg = NULL;
    git_buf have = {NULL, 0, 0};
    struct stat sb;
    size_t n = strlen(state_dir);
    int e, error = RC_OK;

    g->path = rc_xmalloc(n + sizeof("/repo.git"));
    memcpy(g->path, state_dir, n);
    memcpy(g->path + n, "/repo.git", sizeof("/repo.git"));

    if (stat(g->path, &sb) == 0) {
        sweep_mirror(g);
        if ((e = git_repository_open_bare(&g->repo, g->path)) < 0) {
            if (!mirror_shell(g->path))
                return fail(err, RC_ERROR, "'%s' is not a git mirror", g->path);
            if ((error = drop_shell(g, err)) < 0)
                return error;
            goto create;
        }
        if ((e = git_repository_config_snapshot(&cfg, g->repo)) < 0)
            return fail(err, RC_ERROR, "cannot read the config of '%s'", g->path);
        e = git_config_get_string_buf(&have, cfg, "remote." ORIGIN ".url");
        if (e < 0 && mirror_shell(g->path)) {
            git_config_free(cfg);
            git_repository_free(g->repo);
            g->repo = NULL;
            if ((error = drop_shell(g, err)) < 0)
                return error;
            goto create;
        }
        if (e < 0) {
            error = fail(err, RC_EINVALID, "mirror '%s' has no remote", g->path);
        } else if (strcmp(have.ptr, g->url)) {
            char *clean = NULL, *u = NULL, *p = NULL;

            rc_git_url_split(have.ptr, &clean, &u, &p);
            if (!strcmp(clean, g->url)) {
                /* made by an older rightplace, with the URL's credentials: drop them */
                git_config *wcfg = NULL;
                if (git_repository_config(&wcfg, g->repo) < 0 ||
                    git_config_set_string(wcfg, "remote." ORIGIN ".url", g->url) < 0)
                    error = fail(err, RC_ERROR, "cannot configure mirror '%s'", g->path);
                git_config_free(wcfg);
            } else {
                char *shown = redact_dup(have.ptr);

                error =
                    rc_err_set(err, RC_EINVALID, "state directory mirror '%s' is of '%s', not '%s'",
                               g->path, shown, g->url_shown);
                free(shown);
            }
            free(clean);
            wipe_free(u);
            wipe_free(p);
        }
        if (have.ptr)
            memset(have.ptr, 0, have.size);
        git_buf_dispose(&have);
        git_config_free(cfg);
        /* a mirror whose first fetch failed has no refs yet: fetch now */
        if (error == RC_OK && git_repository_is_empty(g->repo) == 1)
            error = do_fetch(g, err);
        return error;
    }
create:
    if ((error = mkdir_p(state_dir, err)) < 0 || (error = create_mirror(g, state_dir, err)) < 0)
        return error;
    if (g->log)
        rc_log_info(g->log, "cloning '%s' into '%s'", g->url_shown, g->path);
    return do_fetch(g, err);
}

int rc_git_open(struct rc_git **out, const char *repo, const struct rc_git_options *o,
                struct rc_err *err)
{
    struct rc_git *g = rc_xcalloc(1, sizeof(*g));
    int e, error = RC_OK;

    g->name = rc_xstrdup(DEFAULT_NAME);
    g->email = rc_xstrdup(DEFAULT_EMAIL);
    rc_git_url_split(repo, &g->url, &g->url_user, &g->url_pass);
    g->url_shown = redact_dup(repo);
    if (o) {
        g->token_env = o->token_env ? rc_xstrdup(o->token_env) : NULL;
        g->token_file = o->token_file ? rc_xstrdup(o->token_file) : NULL;
        g->ssh_key = o->ssh_key ? rc_xstrdup(o->ssh_key) : NULL;
        g->log = o->log;
    }
    if (!*repo) {
        error = rc_err_set(err, RC_EINVALID, "empty repository path");
        goto done;
    }
    if (rc_git_is_url(repo)) {
        g->remote = 1;
        if (!o || !o->state_dir || !*o->state_dir) {
            error = rc_err_set(err, RC_EINVALID, "a state directory is needed to mirror '%s'",
                               g->url_shown);
            goto done;
        }
        error = open_mirror(g, o->state_dir, err);
    } else {
        g->path = rc_xstrdup(repo);
        e = git_repository_open_ext(&g->repo, repo, GIT_REPOSITORY_OPEN_NO_SEARCH, NULL);
        if (e == GIT_EOWNER || (e < 0 && git_error_last() && git_error_last()->message &&
                                strstr(git_error_last()->message, "safe.directory"))) {
            git_error_clear();
            error = rc_err_set(err, RC_ERROR,
                               "repository '%s' is not owned by the current user (see git's "
                               "safe.directory)",
                               repo);
        } else if (e < 0) {
            error = fail(err, rc_code(e), "no git repository at '%s'", repo);
        }
    }
    if (error < 0)
        goto done;
    git_repository_set_ident(g->repo, g->name, g->email);
    *out = g;
    g = NULL;
done:
    rc_git_free(g);
    return error;
}

void rc_git_free(struct rc_git *g)
{
    if (!g)
        return;
    ahead_take(g, NULL);
    git_index_free(g->built);
    listed_free(g->listed);
    git_repository_free(g->repo);
    free(g->url);
    wipe_free(g->url_user);
    wipe_free(g->url_pass);
    free(g->url_shown);
    free(g->path);
    free(g->token_env);
    free(g->token_file);
    free(g->ssh_key);
    free(g->name);
    free(g->email);
    free(g->objdir);
    free(g);
}

size_t rc_git_listings(const struct rc_git *g)
{
    return g->listings;
}

size_t rc_git_headers_read(const struct rc_git *g)
{
    return g->headers_read;
}

size_t rc_git_trees_read(const struct rc_git *g)
{
    return g->trees_read;
}

size_t rc_git_tree_walks(const struct rc_git *g)
{
    return g->tree_walks;
}

size_t rc_git_tree_walks_ahead(const struct rc_git *g)
{
    return g->walks_ahead;
}

int rc_git_is_remote(const struct rc_git *g)
{
    return g->remote;
}

static int bad_ident(const char *s)
{
    return !s || !*s || strpbrk(s, "<>\n\r") != NULL;
}

int rc_git_set_identity(struct rc_git *g, const char *name, const char *email, struct rc_err *err)
{
    if (bad_ident(name) || bad_ident(email))
        return rc_err_set(err, RC_EINVALID, "invalid identity '%s <%s>'", name ? name : "",
                          email ? email : "");
    free(g->name);
    free(g->email);
    g->name = rc_xstrdup(name);
    g->email = rc_xstrdup(email);
    git_repository_set_ident(g->repo, g->name, g->email);
    return RC_OK;
}

/* ==== Resolving revisions ==== */

static int resolve_oid(git_oid *out, struct rc_git *g, const char *rev, struct rc_err *err)
{
    git_object *obj = NULL, *peeled = NULL;
    int e, valid = 0;

    if (!rev || !*rev)
        return rc_err_set(err, RC_EINVALID, "empty revision");
    if (strncmp(rev, "refs/", 5) && strlen(rev) < 200) {
        char ref[256];

        snprintf(ref, sizeof(ref), "refs/heads/%s", rev);
        if (git_reference_name_is_valid(&valid, ref) == 0 && valid) {
            git_reference *r = NULL;

            if (git_reference_lookup(&r, g->repo, ref) == 0) {
                e = git_reference_peel(&peeled, r, GIT_OBJECT_COMMIT);
                git_reference_free(r);
                if (e == 0) {
                    git_oid_cpy(out, git_object_id(peeled));
                    git_object_free(peeled);
                    return RC_OK;
                }
            }
            git_error_clear();
        }
    }
    e = git_revparse_single(&obj, g->repo, rev);
    if (e < 0)
        return fail(err, e == GIT_ENOTFOUND ? RC_ENOTFOUND : RC_EINVALID, "cannot resolve '%s'",
                    rev);
    e = git_object_peel(&peeled, obj, GIT_OBJECT_COMMIT);
    git_object_free(obj);
    if (e < 0)
        return fail(err, RC_EINVALID, "'%s' is not a commit", rev);
    git_oid_cpy(out, git_object_id(peeled));
    git_object_free(peeled);
    return RC_OK;
}

int rc_git_resolve(char out[41], struct rc_git *g, const char *rev, struct rc_err *err)
{
    git_oid id;
    int error = resolve_oid(&id, g, rev, err);

    if (error == RC_OK)
        oid_hex(out, &id);
    return error;
}

static int lookup_commit(git_commit **out, struct rc_git *g, const char *rev, struct rc_err *err)
{
    git_oid id;
    int e, error = resolve_oid(&id, g, rev, err);

    if (error < 0)
        return error;
    if ((e = git_commit_lookup(out, g->repo, &id)) < 0)
        return fail(err, rc_code(e), "cannot read commit '%s'", rev);
    return RC_OK;
}

static int lookup_tree(git_tree **out, struct rc_git *g, const char *commit, struct rc_err *err)
{
    git_commit *c = NULL;
    int e, error = lookup_commit(&c, g, commit, err);

    if (error < 0)
        return error;
    if ((e = git_commit_tree(out, c)) < 0)
        error = fail(err, rc_code(e), "cannot read the tree of '%s'", commit);
    git_commit_free(c);
    return error;
}

/* ==== Reading ==== */

struct walk {
    struct rc_git *g;
    struct rc_arena *a;
    const char *prefix; /* "" or "dir/" prepended to walk roots */
    int yaml_only;
    int list_only; /* ids only: no blob is read */
    struct rc_git_blob *v;
    size_t n, cap;
    struct rc_err *err;
    int error;
    size_t odd; /* deploy-path entries other than plain blobs (rc_git_list_tree_odd) */
};

static int is_yaml_name(const char *name)
{
    size_t n = strlen(name);

    return (n > 5 && !strcmp(name + n - 5, ".yaml")) || (n > 4 && !strcmp(name + n - 4, ".yml"));
}

static int is_regular(const git_tree_entry *e)
{
    git_filemode_t m = git_tree_entry_filemode(e);

    return m == GIT_FILEMODE_BLOB || m == GIT_FILEMODE_BLOB_EXECUTABLE;
}

/* "<a><b><c>" in the arena: a path made for every file a walk lists, without printf. */
static char *cat3(struct rc_arena *ar, const char *a, const char *b, const char *c)
{
    size_t la = strlen(a), lb = strlen(b), lc = strlen(c);
    char *p = rc_arena_alloc(ar, la + lb + lc + 1);

    memcpy(p, a, la);
    memcpy(p + la, b, lb);
    memcpy(p + la + lb, c, lc + 1);
    return p;
}

/* Append the blob of entry `e` at path "<a><b><c>" to w. */
static int walk_add(struct walk *w, const git_tree_entry *e, const char *a, const char *b,
                    const char *c)
{
    git_blob *blob = NULL;
    struct rc_git_blob *out;
    size_t len;
    int ge;

    if (w->list_only) {
        w->v = rc_xgrow(w->v, &w->cap, w->n + 1, sizeof(*w->v));
        out = &w->v[w->n++];
        memset(out, 0, sizeof(*out));
        out->path = cat3(w->a, a, b, c);
        oid_hex(out->id, git_tree_entry_id(e));
        return RC_OK;
    }
    if ((ge = git_blob_lookup(&blob, w->g->repo, git_tree_entry_id(e))) < 0)
        return w->error = fail(w->err, RC_ERROR, "cannot read '%s%s%s'", a, b, c);
    w->v = rc_xgrow(w->v, &w->cap, w->n + 1, sizeof(*w->v));
    out = &w->v[w->n++];
    out->path = cat3(w->a, a, b, c);
    oid_hex(out->id, git_tree_entry_id(e));
    len = (size_t)git_blob_rawsize(blob);
    out->data = rc_arena_alloc(w->a, len + 1);
    if (len)
        memcpy(out->data, git_blob_rawcontent(blob), len);
    out->data[len] = '\0';
    out->len = len;
    git_blob_free(blob);
    return RC_OK;
}

static int is_deploy_path(const char *p);

/* A deploy-path entry only rc_git_build_tree puts right (rc_git_list_tree_odd): not a plain
 * file (an executable, a symlink, a submodule), or a file where a deploy directory goes. */
static int odd_deploy_entry(const char *path, git_filemode_t mode)
{
    return is_deploy_path(path) && (mode != GIT_FILEMODE_BLOB || !strcmp(path, "clusters") ||
                                    !strcmp(path, ".rightplace") || !strcmp(path, "placements"));
}

static int walk_cb(const char *root, const git_tree_entry *e, void *payload)
{
    struct walk *w = payload;
    const char *name = git_tree_entry_name(e);

    if (git_tree_entry_type(e) == GIT_OBJECT_TREE)
        return 0; /* descended into */
    if (git_tree_entry_filemode(e) != GIT_FILEMODE_BLOB || (!*root && !*w->prefix)) {
        /* only these can be odd, so only their path is made; one too long to tell counts */
        char path[4096];
        int len = snprintf(path, sizeof(path), "%s%s%s", w->prefix, root, name);
        if (len < 0 || (size_t)len >= sizeof(path) ||
            odd_deploy_entry(path, git_tree_entry_filemode(e)))
            w->odd++;
    }
    if (git_tree_entry_type(e) != GIT_OBJECT_BLOB || !is_regular(e))
        return 0; /* symlinks and submodules skipped */
    if (w->yaml_only && !is_yaml_name(name))
        return 0;
    return walk_add(w, e, w->prefix, root, name) < 0 ? -1 : 0;
}

static int blob_cmp(const void *x, const void *y)
{
    return strcmp(((const struct rc_git_blob *)x)->path, ((const struct rc_git_blob *)y)->path);
}

/* Walk `path` ("" = root) of tree into w. missing_ok: an absent path adds nothing. */
static int walk_path(struct walk *w, git_tree *tree, const char *path, int missing_ok,
                     const char *commit)
{
    git_tree_entry *e = NULL;
    git_tree *sub = NULL;
    char *prefix = NULL;
    int ge;

    if (!*path) {
        w->prefix = "";
        ge = git_tree_walk(tree, GIT_TREEWALK_PRE, walk_cb, w);
        if (ge < 0 && w->error == RC_OK)
            w->error = fail(w->err, RC_ERROR, "cannot read the tree of '%s'", commit);
        return w->error;
    }
    ge = git_tree_entry_bypath(&e, tree, path);
    if (ge == GIT_ENOTFOUND) {
        git_error_clear();
        if (missing_ok)
            return RC_OK;
        return w->error =
                   rc_err_set(w->err, RC_ENOTFOUND, "path '%s' not found in '%s'", path, commit);
    }
    if (ge < 0)
        return w->error = fail(w->err, RC_ERROR, "cannot read '%s' in '%s'", path, commit);
    if (git_tree_entry_type(e) == GIT_OBJECT_TREE) {
        if ((ge = git_tree_lookup(&sub, w->g->repo, git_tree_entry_id(e))) < 0) {
            w->error = fail(w->err, RC_ERROR, "cannot read '%s' in '%s'", path, commit);
        } else {
            prefix = rc_arena_printf(w->a, "%s/", path);
            w->prefix = prefix;
            ge = git_tree_walk(sub, GIT_TREEWALK_PRE, walk_cb, w);
            if (ge < 0 && w->error == RC_OK)
                w->error = fail(w->err, RC_ERROR, "cannot read '%s' in '%s'", path, commit);
        }
    } else if (git_tree_entry_type(e) == GIT_OBJECT_BLOB && is_regular(e) &&
               (!w->yaml_only || is_yaml_name(path))) {
        walk_add(w, e, path, "", "");
    }
    git_tree_free(sub);
    git_tree_entry_free(e);
    return w->error;
}

/* Sort, drop duplicates, copy into the arena. */
static void walk_finish(struct rc_git_blob **out, size_t *n, struct walk *w)
{
    size_t k = 0;

    if (w->n)
        rc_sort(w->v, w->n, sizeof(*w->v), blob_cmp);
    for (size_t i = 0; i < w->n; i++)
        if (k == 0 || strcmp(w->v[k - 1].path, w->v[i].path))
            w->v[k++] = w->v[i];
    *out = NULL;
    if (k) {
        *out = rc_arena_calloc(w->a, k, sizeof(**out));
        memcpy(*out, w->v, k * sizeof(**out));
    }
    *n = k;
}

static int read_yaml(struct rc_git_blob **out, size_t *n, struct rc_git *g, const char *commit,
                     const char *const *paths, size_t npaths, int list_only, struct rc_arena *a,
                     struct rc_err *err)
{
    struct walk w = {g, a, "", 1, list_only, NULL, 0, 0, err, RC_OK, 0};
    git_tree *tree = NULL;
    int error;

    if ((error = lookup_tree(&tree, g, commit, err)) < 0)
        return error;
    if (!paths || npaths == 0) {
        error = walk_path(&w, tree, "", 0, commit);
    } else {
        for (size_t i = 0; i < npaths && error == RC_OK; i++) {
            char *p = norm_read_path(paths[i]);

            error = check_path(p, 1, err);
            if (error == RC_OK)
                error = walk_path(&w, tree, p, 0, commit);
            free(p);
        }
    }
    if (error == RC_OK)
        walk_finish(out, n, &w);
    free(w.v);
    git_tree_free(tree);
    return error;
}

int rc_git_read_yaml(struct rc_git_blob **out, size_t *n, struct rc_git *g, const char *commit,
                     const char *const *paths, size_t npaths, struct rc_arena *a,
                     struct rc_err *err)
{
    return read_yaml(out, n, g, commit, paths, npaths, 0, a, err);
}

int rc_git_list_yaml(struct rc_git_blob **out, size_t *n, struct rc_git *g, const char *commit,
                     const char *const *paths, size_t npaths, struct rc_arena *a,
                     struct rc_err *err)
{
    g->listings++;
    return read_yaml(out, n, g, commit, paths, npaths, 1, a, err);
}

/* Deflate's largest ratio: a stream of n bytes inflates to at most 1032 * n (a 258-byte match
 * in 2 bits). zlib's FAQ gives the same bound. */
#define INFLATE_RATIO_MAX 1032

/* After this many blobs in a row with no loose file, the next LOOSE_SKIP are not looked for */
#define LOOSE_MISSES_MAX 64
#define LOOSE_SKIP 4096

/*
 * Is blob `id` a loose object whose file is too small to inflate past max bytes? Then its size
 * need not be read before the object: reading the header opens and inflates the file once
 * more, 40% on top of reading a small loose blob (bench/RESULTS.md, note 58). A packed object,
 * or one in an alternate, answers no, and its header is read as before; in a repository of
 * packs the look costs a stat() that finds nothing, so after LOOSE_MISSES_MAX such blobs in a
 * row it is left out for the next LOOSE_SKIP.
 */
static int loose_within(struct rc_git *g, const char *id, size_t max)
{
    char path[4096];
    struct stat st;
    int n;

    if (g->loose_skip) {
        g->loose_skip--;
        return 0;
    }
    if (!g->objdir) {
        const char *common = git_repository_commondir(g->repo);
        size_t len = common ? strlen(common) : 0;
        if (!len)
            return 0;
        g->objdir = rc_xmalloc(len + sizeof("/objects/"));
        snprintf(g->objdir, len + sizeof("/objects/"), "%s%sobjects/", common,
                 common[len - 1] == '/' ? "" : "/");
    }
    n = snprintf(path, sizeof(path), "%s%.2s/%s", g->objdir, id, id + 2);
    if (n < 0 || (size_t)n >= sizeof(path) || stat(path, &st) < 0 || !S_ISREG(st.st_mode)) {
        if (++g->loose_misses >= LOOSE_MISSES_MAX) {
            g->loose_misses = 0;
            g->loose_skip = LOOSE_SKIP;
        }
        return 0;
    }
    g->loose_misses = 0;
    return (uint64_t)st.st_size <= max / INFLATE_RATIO_MAX;
}

int rc_git_blob_size(size_t *size, struct rc_git *g, const char *id, struct rc_err *err)
{
    git_odb *odb = NULL;
    git_object_t type;
    git_oid oid;
    int ge, error;

    *size = 0;
    if ((error = parse_oid(&oid, id, "blob", err)) < 0)
        return error;
    if ((ge = git_repository_odb(&odb, g->repo)) < 0)
        return fail(err, RC_ERROR, "cannot open the object database");
    g->headers_read++;
    ge = git_odb_read_header(size, &type, odb, &oid);
    git_odb_free(odb);
    if (ge == GIT_ENOTFOUND) {
        git_error_clear();
        return rc_err_set(err, RC_ENOTFOUND, "object %.12s not found", id);
    }
    if (ge < 0)
        return fail(err, RC_ERROR, "cannot read the header of object %.12s", id);
    if (type != GIT_OBJECT_BLOB)
        return rc_err_set(err, RC_EINVALID, "object %.12s is not a blob", id);
    return RC_OK;
}

int rc_git_read_blob(char **data, size_t *len, struct rc_git *g, const char *id, size_t max,
                     struct rc_arena *a, struct rc_err *err)
{
    git_odb *odb = NULL;
    git_odb_object *obj = NULL;
    git_oid oid;
    size_t size = 0;
    int ge, error;

    if ((error = parse_oid(&oid, id, "blob", err)) < 0)
        return error;
    if (!loose_within(g, id, max)) {
        /* the size first: a blob over max is not read */
        if ((error = rc_git_blob_size(&size, g, id, err)) < 0)
            return error;
        if (size > max) {
            *len = size;
            return rc_err_set(err, RC_EINVALID, "%zu bytes; the limit is %zu", size, max);
        }
    }
    if ((ge = git_repository_odb(&odb, g->repo)) < 0)
        return fail(err, RC_ERROR, "cannot open the object database");
    ge = git_odb_read(&obj, odb, &oid);
    git_odb_free(odb);
    if (ge == GIT_ENOTFOUND) {
        git_error_clear();
        return rc_err_set(err, RC_ENOTFOUND, "object %.12s not found", id);
    }
    if (ge < 0)
        return fail(err, RC_ERROR, "cannot read object %.12s", id);
    size = git_odb_object_size(obj);
    if (git_odb_object_type(obj) != GIT_OBJECT_BLOB) {
        git_odb_object_free(obj);
        return rc_err_set(err, RC_EINVALID, "object %.12s is not a blob", id);
    }
    if (size > max) { /* the header read says so first; kept for an object changed since */
        git_odb_object_free(obj);
        *len = size;
        return rc_err_set(err, RC_EINVALID, "%zu bytes; the limit is %zu", size, max);
    }
    *data = rc_arena_alloc(a, size + 1);
    if (size)
        memcpy(*data, git_odb_object_data(obj), size);
    (*data)[size] = '\0';
    *len = size;
    git_odb_object_free(obj);
    return RC_OK;
}

int rc_git_digest(char out[41], const char *data, size_t len, struct rc_err *err)
{
    git_oid oid;

    if (git_odb_hash(&oid, data ? data : "", len, GIT_OBJECT_BLOB) < 0)
        return fail(err, RC_ERROR, "cannot compute a digest");
    oid_hex(out, &oid);
    return RC_OK;
}

/* The listing of tree, from the sorted entries a walk of it found. */
static struct listed *listed_of_walk(const git_oid *tree, const struct rc_git_blob *v, size_t n,
                                     size_t odd)
{
    struct listed *l;
    size_t bytes = 0;
    char *at;

    for (size_t i = 0; i < n; i++)
        bytes += strlen(v[i].path) + 1;
    l = listed_new(tree, n, bytes, odd);
    at = l->text;
    for (size_t i = 0; i < n; i++)
        listed_put(l, &at, v[i].path, v[i].id);
    return l;
}

/*
 * A whole tree listed on a thread of its own while the caller goes on (rc_git_list_ahead): a
 * `--once` pass lists the deploy head it diffs against while it loads the source. The thread
 * opens the repository again (a libgit2 repository is not to be shared between threads) and
 * touches nothing but this struct; the handle joins it when it lists that tree, or is freed.
 */
struct ahead {
    struct rc_threads_bg bg;
    char *gitdir;
    git_oid tree;
    struct listed *listed; /* NULL: the walk failed, and the listing walks again */
};

static void ahead_work(void *arg, size_t k)
{
    struct ahead *ah = arg;
    git_repository *repo = NULL;
    git_tree *tree = NULL;
    struct rc_arena ar = RC_ARENA_INIT;
    struct rc_err err = RC_ERR_INIT;
    struct walk w = {NULL, &ar, "", 0, 1, NULL, 0, 0, &err, RC_OK, 0};

    (void)k;
    if (git_repository_open(&repo, ah->gitdir) == 0 &&
        git_tree_lookup(&tree, repo, &ah->tree) == 0 && walk_path(&w, tree, "", 0, "") == RC_OK) {
        struct rc_git_blob *v;
        size_t n;
        walk_finish(&v, &n, &w);
        ah->listed = listed_of_walk(&ah->tree, v, n, w.odd);
    }
    git_error_clear(); /* the thread's own; what failed is walked again by the caller */
    free(w.v);
    rc_arena_release(&ar);
    git_tree_free(tree);
    git_repository_free(repo);
}

int rc_git_list_ahead(struct rc_git *g, const char *commit, struct rc_err *err)
{
    git_tree *tree = NULL;
    struct ahead *ah;
    int error;

    if (!commit || !commit[0])
        return RC_OK;
    if ((error = lookup_tree(&tree, g, commit, err)) < 0)
        return error;
    if ((g->listed && git_oid_equal(&g->listed->tree, git_tree_id(tree))) ||
        (g->ahead && git_oid_equal(&g->ahead->tree, git_tree_id(tree)))) {
        git_tree_free(tree); /* listed already, or being listed */
        return RC_OK;
    }
    ahead_take(g, NULL);
    ah = rc_xcalloc(1, sizeof(*ah));
    ah->gitdir = rc_xstrdup(git_repository_path(g->repo));
    git_oid_cpy(&ah->tree, git_tree_id(tree));
    git_tree_free(tree);
    g->ahead = ah;
    rc_threads_start(&ah->bg, ahead_work, ah, 1);
    return RC_OK;
}

/* Wait for the listing being made ahead, if any; when it is of `tree` (NULL: of none), it
 * becomes the handle's kept listing. */
static void ahead_take(struct rc_git *g, const git_oid *tree)
{
    struct ahead *ah = g->ahead;

    if (!ah || (tree && !git_oid_equal(&ah->tree, tree)))
        return;
    rc_threads_join(&ah->bg);
    g->ahead = NULL;
    if (tree && ah->listed) {
        listed_free(g->listed);
        g->listed = ah->listed;
        g->tree_walks++;
        g->walks_ahead++;
    } else {
        listed_free(ah->listed);
    }
    free(ah->gitdir);
    free(ah);
}

static int read_tree(struct rc_git_blob **out, size_t *n, size_t *nodd, struct rc_git *g,
                     const char *commit, const char *prefix, int list_only, struct rc_arena *a,
                     struct rc_err *err)
{
    struct walk w = {g, a, "", 0, list_only, NULL, 0, 0, err, RC_OK, 0};
    git_tree *tree = NULL;
    char *p = norm_read_path(prefix ? prefix : "");
    int error, walked = 0;

    error = check_path(p, 1, err);
    if (error == RC_OK)
        error = lookup_tree(&tree, g, commit, err);
    if (error == RC_OK && list_only && !*p)
        ahead_take(g, git_tree_id(tree));
    if (error == RC_OK && list_only && !*p && g->listed &&
        git_oid_equal(&g->listed->tree, git_tree_id(tree))) {
        /* kept from the walk of this tree, or from the build or update that made it */
        const struct listed *l = g->listed;
        w.v = rc_xcalloc(l->n + 1, sizeof(*w.v));
        w.cap = l->n + 1;
        for (size_t i = 0; i < l->n; i++) {
            w.v[i].path = rc_arena_strdup(a, l->path[i]);
            memcpy(w.v[i].id, l->id[i], 41);
        }
        w.n = l->n;
        w.odd = l->odd;
    } else if (error == RC_OK) {
        error = walk_path(&w, tree, p, 1, commit);
        walked = error == RC_OK && !*p;
        g->tree_walks += walked;
    }
    if (error == RC_OK)
        walk_finish(out, n, &w);
    if (error == RC_OK && nodd)
        *nodd = w.odd;
    if (walked && list_only) {
        /* kept for the next listing of this tree, or of the tree an update makes from it */
        listed_free(g->listed);
        g->listed = listed_of_walk(git_tree_id(tree), *out, *n, w.odd);
    }
    free(w.v);
    free(p);
    git_tree_free(tree);
    return error;
}

int rc_git_read_tree(struct rc_git_blob **out, size_t *n, struct rc_git *g, const char *commit,
                     const char *prefix, struct rc_arena *a, struct rc_err *err)
{
    return read_tree(out, n, NULL, g, commit, prefix, 0, a, err);
}

int rc_git_list_tree(struct rc_git_blob **out, size_t *n, struct rc_git *g, const char *commit,
                     const char *prefix, struct rc_arena *a, struct rc_err *err)
{
    return read_tree(out, n, NULL, g, commit, prefix, 1, a, err);
}

int rc_git_list_tree_odd(struct rc_git_blob **out, size_t *n, size_t *nodd, struct rc_git *g,
                         const char *commit, struct rc_arena *a, struct rc_err *err)
{
    return read_tree(out, n, nodd, g, commit, "", 1, a, err);
}

int rc_git_read_file(char **data, size_t *len, struct rc_git *g, const char *commit,
                     const char *path, struct rc_arena *a, struct rc_err *err)
{
    git_tree *tree = NULL;
    git_tree_entry *e = NULL;
    git_blob *blob = NULL;
    char *p = norm_read_path(path);
    size_t n;
    int ge, error;

    if ((error = check_path(p, 0, err)) < 0)
        goto done;
    if ((error = lookup_tree(&tree, g, commit, err)) < 0)
        goto done;
    ge = git_tree_entry_bypath(&e, tree, p);
    if (ge == GIT_ENOTFOUND) {
        git_error_clear();
        error = rc_err_set(err, RC_ENOTFOUND, "path '%s' not found in '%s'", p, commit);
        goto done;
    }
    if (ge < 0) {
        error = fail(err, RC_ERROR, "cannot read '%s' in '%s'", p, commit);
        goto done;
    }
    if (git_tree_entry_type(e) != GIT_OBJECT_BLOB || !is_regular(e)) {
        error = rc_err_set(err, RC_EINVALID, "'%s' in '%s' is not a regular file", p, commit);
        goto done;
    }
    if ((ge = git_blob_lookup(&blob, g->repo, git_tree_entry_id(e))) < 0) {
        error = fail(err, RC_ERROR, "cannot read '%s' in '%s'", p, commit);
        goto done;
    }
    n = (size_t)git_blob_rawsize(blob);
    *data = rc_arena_alloc(a, n + 1);
    if (n)
        memcpy(*data, git_blob_rawcontent(blob), n);
    (*data)[n] = '\0';
    *len = n;
done:
    git_blob_free(blob);
    git_tree_entry_free(e);
    git_tree_free(tree);
    free(p);
    return error;
}

int rc_git_path_id(char out[41], struct rc_git *g, const char *commit, const char *path,
                   struct rc_err *err)
{
    git_tree *tree = NULL;
    git_tree_entry *e = NULL;
    char *p = norm_read_path(path ? path : "");
    int ge, error;

    if ((error = check_path(p, 1, err)) < 0 || (error = lookup_tree(&tree, g, commit, err)) < 0)
        goto done;
    if (!*p) {
        oid_hex(out, git_tree_id(tree));
        goto done;
    }
    ge = git_tree_entry_bypath(&e, tree, p);
    if (ge == GIT_ENOTFOUND) {
        git_error_clear();
        error = rc_err_set(err, RC_ENOTFOUND, "path '%s' not found in '%s'", p, commit);
    } else if (ge < 0) {
        error = fail(err, RC_ERROR, "cannot read '%s' in '%s'", p, commit);
    } else {
        oid_hex(out, git_tree_entry_id(e));
    }
done:
    git_tree_entry_free(e);
    git_tree_free(tree);
    free(p);
    return error;
}

int rc_git_file_id(char out[41], struct rc_git *g, const char *commit, const char *path,
                   struct rc_err *err)
{
    git_tree *tree = NULL;
    git_tree_entry *e = NULL;
    char *p = norm_read_path(path ? path : "");
    int ge, error;

    if ((error = check_path(p, 0, err)) < 0 || (error = lookup_tree(&tree, g, commit, err)) < 0)
        goto done;
    ge = git_tree_entry_bypath(&e, tree, p);
    if (ge == GIT_ENOTFOUND) {
        git_error_clear();
        error = rc_err_set(err, RC_ENOTFOUND, "path '%s' not found in '%s'", p, commit);
    } else if (ge < 0) {
        error = fail(err, RC_ERROR, "cannot read '%s' in '%s'", p, commit);
    } else if (git_tree_entry_type(e) != GIT_OBJECT_BLOB || !is_regular(e)) {
        error = rc_err_set(err, RC_EINVALID, "'%s' in '%s' is not a regular file", p, commit);
    } else {
        oid_hex(out, git_tree_entry_id(e));
    }
done:
    git_tree_entry_free(e);
    git_tree_free(tree);
    free(p);
    return error;
}

/* ==== Building trees ==== */

/* Is an index path under the deploy paths that rc_git_build_tree replaces? */
static int is_deploy_path(const char *p)
{
    static const char *const dirs[] = {"clusters", ".rightplace", "placements"};

    if (!strcmp(p, "placements.yaml"))
        return 1;
    for (size_t i = 0; i < 3; i++) {
        size_t n = strlen(dirs[i]);

        if (!strncmp(p, dirs[i], n) && (p[n] == '/' || p[n] == '\0'))
            return 1;
    }
    return 0;
}

/* A path of sorted[0..n) (strcmp order) that is also a directory of another ("a" beside
 * "a/b"), malloc'd, or NULL. Every parent directory of a path is looked up, once per
 * directory: sorted, the files of one directory follow one another. */
static char *file_and_dir(const char *const *sorted, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const char *slash = strrchr(sorted[i], '/');
        size_t dlen = slash ? (size_t)(slash - sorted[i]) : 0;
        char *dir;

        if (!slash || (i > 0 && !strncmp(sorted[i - 1], sorted[i], dlen + 1) &&
                       !strchr(sorted[i - 1] + dlen + 1, '/')))
            continue;
        dir = rc_xstrndup(sorted[i], dlen);
        for (char *s = dir + dlen; s; s = strrchr(dir, '/')) {
            const char *key = dir;

            *s = '\0';
            if (bsearch(&key, sorted, n, sizeof(char *), cmp_cstr))
                return dir;
        }
        free(dir);
    }
    return NULL;
}

/* Paths valid, no duplicates, no path that is both a file and a directory. On success
 * *sorted_out gets the paths sorted (malloc'd array of borrowed strings). */
static int file_path_cmp(const void *x, const void *y)
{
    return strcmp((*(const struct rc_git_file *const *)x)->path,
                  (*(const struct rc_git_file *const *)y)->path);
}

/* Validate files' paths; *sorted_out gets their paths sorted by strcmp, and *order_out (may
 * be NULL) the files in that order (both malloc'd). */
static int check_files(const char ***sorted_out, const struct rc_git_file ***order_out,
                       const struct rc_git_file *files, size_t nfiles, struct rc_err *err)
{
    const char **sorted = rc_xcalloc(nfiles ? nfiles : 1, sizeof(char *));
    const struct rc_git_file **order = rc_xcalloc(nfiles ? nfiles : 1, sizeof(*order));
    int error = RC_OK;

    for (size_t i = 0; i < nfiles && error == RC_OK; i++) {
        if (!files[i].path || (!files[i].data && files[i].len))
            error = rc_err_set(err, RC_EINVALID, "file %zu has no path or data", i);
        else
            error = check_path(files[i].path, 0, err);
        order[i] = &files[i];
    }
    if (error == RC_OK && nfiles)
        rc_sort(order, nfiles, sizeof(*order), file_path_cmp);
    for (size_t i = 0; i < nfiles && error == RC_OK; i++)
        sorted[i] = order[i]->path;
    for (size_t i = 1; i < nfiles && error == RC_OK; i++)
        if (!strcmp(sorted[i - 1], sorted[i]))
            error = rc_err_set(err, RC_EINVALID, "path '%s' given twice", sorted[i]);
    if (error == RC_OK) {
        char *dir = file_and_dir(sorted, nfiles);
        if (dir)
            error = rc_err_set(err, RC_EINVALID, "path '%s' is both a file and a directory", dir);
        free(dir);
    }
    if (error == RC_OK) {
        *sorted_out = sorted;
        sorted = NULL;
        if (order_out) {
            *order_out = order;
            order = NULL;
        }
    }
    free(sorted);
    free(order);
    return error;
}

/*
 * Where the new objects of a tree build go. Few: loose objects in the repository, as usual.
 * Many (a first commit of a large fleet, a policy change that moves everything): an
 * in-memory object store on a second handle of the repository, written out at the end as
 * one pack, so that the commit costs one file instead of one file per object; creating
 * thousands of files is what a large commit otherwise spends its time on (and what `git add`
 * pays).
 */
#define PACK_MIN_OBJECTS 256

/*
 * Pack mode's blobs: an object store that lends the caller's file buffers (they outlive the
 * tree build) instead of copying them into the in-memory store, which held a second copy of
 * every rendered file until the pack was written. Read-only once sealed (sorted by id).
 */
struct blobref {
    git_oid id;
    const char *data;
    size_t len;
};

struct lent {
    git_odb_backend parent;
    struct blobref *v;
    size_t n, cap;
    int sealed;
};

static int blobref_cmp(const void *x, const void *y)
{
    return git_oid_cmp(&((const struct blobref *)x)->id, &((const struct blobref *)y)->id);
}

static const struct blobref *lent_find(git_odb_backend *b, const git_oid *id)
{
    struct lent *l = (struct lent *)b;
    struct blobref key;

    if (!l->sealed || !l->n)
        return NULL; /* nothing lent (bsearch may not be given a null array) */
    key.id = *id;
    return bsearch(&key, l->v, l->n, sizeof(*l->v), blobref_cmp);
}

static int lent_exists(git_odb_backend *b, const git_oid *id)
{
    return lent_find(b, id) != NULL;
}

static int lent_read_header(size_t *len, git_object_t *type, git_odb_backend *b, const git_oid *id)
{
    const struct blobref *r = lent_find(b, id);

    if (!r)
        return GIT_ENOTFOUND;
    *len = r->len;
    *type = GIT_OBJECT_BLOB;
    return 0;
}

static int lent_read(void **data, size_t *len, git_object_t *type, git_odb_backend *b,
                     const git_oid *id)
{
    const struct blobref *r = lent_find(b, id);

    if (!r)
        return GIT_ENOTFOUND;
    if (!(*data = git_odb_backend_data_alloc(b, r->len ? r->len : 1)))
        return -1;
    memcpy(*data, r->data, r->len);
    *len = r->len;
    *type = GIT_OBJECT_BLOB;
    return 0;
}

static void lent_free(git_odb_backend *b)
{
    struct lent *l = (struct lent *)b;

    free(l->v);
    free(l);
}

static struct lent *lent_new(void)
{
    struct lent *l = rc_xcalloc(1, sizeof(*l));

    l->parent.version = GIT_ODB_BACKEND_VERSION;
    l->parent.read = lent_read;
    l->parent.read_header = lent_read_header;
    l->parent.exists = lent_exists;
    l->parent.free = lent_free;
    return l;
}

static void lent_add(struct lent *l, const git_oid *id, const char *data, size_t len)
{
    l->v = rc_xgrow(l->v, &l->cap, l->n + 1, sizeof(*l->v));
    l->v[l->n].id = *id;
    l->v[l->n].data = data;
    l->v[l->n].len = len;
    l->n++;
}

/* Sorted by id, each id once: lookups work from here on. */
static void lent_seal(struct lent *l)
{
    size_t k = 0;

    if (l->n)
        rc_sort(l->v, l->n, sizeof(*l->v), blobref_cmp);
    for (size_t i = 0; i < l->n; i++) {
        if (k == 0 || !git_oid_equal(&l->v[k - 1].id, &l->v[i].id))
            l->v[k++] = l->v[i];
    }
    l->n = k;
    l->sealed = 1;
}

struct objsink {
    git_odb *packed;          /* the repository's packs alone (pack mode), see sink_write_blob */
    git_repository *repo;     /* where objects are written: g->repo, or `own` */
    git_repository *own;      /* the second handle (pack mode) */
    git_odb_backend *mempack; /* owned by own's object database: the new trees */
    struct lent *lent;        /* likewise: the new blobs */
    git_odb *odb;             /* own's object database (pack mode) */
    size_t nobjects;          /* new objects expected (pack mode) */
};

/* Pack mode: lend a blob whose id the caller computed to the object store, unless the
 * repository's packs have it already. git_blob_create_from_buffer would copy it, hash it
 * again and, for every object that is new (all of them, in a first commit), touch its
 * would-be loose file and then rescan the pack directory (an odb "freshen" that misses is
 * followed by a refresh and a second try): two directory reads and a utimensat per object.
 * Loose objects are not asked: a stat of a would-be file per blob was a tenth of a large
 * commit, and they are few (small commits write them, and git gc packs them); one that is
 * packed again costs only its bytes in the new pack. Blobs lent twice are kept once
 * (lent_seal). */
static int sink_write_blob(struct objsink *s, const git_oid *id, const char *data, size_t len)
{
    if (!s->packed || !git_odb_exists_ext(s->packed, id, GIT_ODB_LOOKUP_NO_REFRESH))
        lent_add(s->lent, id, data, len);
    return 0;
}

/* Is id one of the new objects? */
static int sink_has(struct objsink *s, const git_oid *id)
{
    return s->mempack->exists(s->mempack, id) || lent_exists(&s->lent->parent, id);
}

static int sink_open(struct objsink *s, struct rc_git *g, size_t nobjects, struct rc_err *err)
{
    git_odb *odb = NULL;
    int ge;

    memset(s, 0, sizeof(*s));
    s->repo = g->repo;
    if (nobjects < PACK_MIN_OBJECTS)
        return RC_OK;
    if ((ge = git_repository_open(&s->own, git_repository_path(g->repo))) < 0)
        return fail(err, RC_ERROR, "cannot open the repository a second time");
    if ((ge = git_repository_odb(&odb, s->own)) < 0 || (ge = git_mempack_new(&s->mempack)) < 0 ||
        (ge = git_odb_add_backend(odb, s->mempack, 1000)) < 0) {
        git_odb_free(odb);
        if (s->mempack && ge < 0 && odb)
            s->mempack->free(s->mempack);
        git_repository_free(s->own);
        memset(s, 0, sizeof(*s));
        return fail(err, RC_ERROR, "cannot set up an in-memory object store");
    }
    s->lent = lent_new();
    if ((ge = git_odb_add_backend(odb, &s->lent->parent, 1001)) < 0) {
        lent_free(&s->lent->parent);
        git_odb_free(odb);
        git_repository_free(s->own);
        memset(s, 0, sizeof(*s));
        return fail(err, RC_ERROR, "cannot set up an in-memory object store");
    }
    s->odb = odb;
    s->repo = s->own;
    s->nobjects = nobjects;
    {
        /* the packs alone: asked whether a blob is new (sink_write_blob); without them, every
         * blob is lent */
        git_odb_backend *pb = NULL;
        char objdir[4096];
        int fits = snprintf(objdir, sizeof(objdir), "%sobjects", git_repository_path(g->repo)) <
                   (int)sizeof(objdir);
        if (!fits || git_odb_new(&s->packed) < 0 || git_odb_backend_pack(&pb, objdir) < 0 ||
            git_odb_add_backend(s->packed, pb, 1) < 0) {
            if (pb)
                pb->free(pb);
            git_odb_free(s->packed);
            s->packed = NULL;
            git_error_clear();
        }
    }
    return RC_OK;
}

/* A commit of many new objects writes them as up to PACK_HALVES packs at once, each by its
 * own packer on its own thread: the packer deflates and the indexer reads back on one thread
 * each, so one pack kept a first commit on one core for most of its time. Objects go to the
 * packs in turn, in the tree's order; a pack's deltas are against objects of the same pack.
 * A second pack needs PACK_PER_THREAD new objects and a second core, so that the many small
 * commits of a fleet's life add one pack each. */
#define PACK_HALVES 2
#define PACK_PER_THREAD 4096

struct pack_walk {
    git_packbuilder *pb[PACK_HALVES];
    size_t npb; /* packs being written */
    struct objsink *sink;
    size_t n;
    int error;
};

/* Every object of the new tree that is new (in the in-memory store) goes into a pack. */
static int pack_walk_cb(const char *root, const git_tree_entry *e, void *payload)
{
    struct pack_walk *w = payload;
    const git_oid *id = git_tree_entry_id(e);

    (void)root;
    if (sink_has(w->sink, id) && git_packbuilder_insert(w->pb[w->n++ % w->npb], id, NULL) < 0) {
        w->error = -1;
        return -1;
    }
    return 0;
}

/* The packer's delta search was most of a large commit's cost (and `git add` does none):
 * give the second handle a configuration whose pack.windowMemory leaves one object in the
 * window, so that each object is tried as a delta of the one before it in the packer's order
 * (by type and size) and of no other. Copies of one workload still become small deltas,
 * which deflate faster than whole objects: with no search at all (pack.bigFileThreshold
 * below every object), a first commit of 10,000 workloads took 1,080 ms instead of 600.
 * The file is read at once and removed. */
static int no_delta_search(git_repository *own, struct rc_err *err)
{
    static const char text[] = "[pack]\n\twindowMemory = 1\n";
    char path[4096];
    git_config *cfg = NULL;
    FILE *f;
    int ge;

    if (snprintf(path, sizeof(path), "%srightplace-pack-%ld.conf", git_repository_path(own),
                 (long)getpid()) >= (int)sizeof(path))
        return rc_err_set(err, RC_ERROR, "repository path too long");
    f = fopen(path, "wx");
    if (!f || fwrite(text, 1, sizeof(text) - 1, f) != sizeof(text) - 1) {
        if (f)
            fclose(f);
        unlink(path);
        return rc_err_set(err, RC_ERROR, "cannot write '%s': %s", path, strerror(errno));
    }
    fclose(f);
    ge = git_config_new(&cfg);
    if (ge == 0)
        ge = git_config_add_file_ondisk(cfg, path, GIT_CONFIG_LEVEL_APP, own, 1);
    if (ge == 0)
        ge = git_repository_set_config(own, cfg);
    unlink(path);
    git_config_free(cfg);
    return ge < 0 ? fail(err, RC_ERROR, "cannot configure the packer") : RC_OK;
}

/* The packer hands out a pack a few bytes at a time (an object's header, then its data); the
 * indexer that stores it maps the growing file and writes to it on every call it gets. So
 * the pack goes to the indexer in pieces of PACK_CHUNK bytes: a first commit of 20,000 files
 * made 60,000 writes and 40,000 mmap/munmap pairs before, a few hundred now. */
#define PACK_CHUNK (1u << 20)

struct pack_out {
    git_odb_writepack *wp;
    git_indexer_progress stats;
    char *buf; /* PACK_CHUNK bytes */
    size_t len;
};

static int pack_out_flush(struct pack_out *p)
{
    int ge = 0;

    if (p->len)
        ge = p->wp->append(p->wp, p->buf, p->len, &p->stats);
    p->len = 0;
    return ge;
}

static int pack_out_cb(void *data, size_t size, void *payload)
{
    struct pack_out *p = payload;

    if (p->len + size > PACK_CHUNK && pack_out_flush(p) < 0)
        return -1;
    if (size >= PACK_CHUNK)
        return p->wp->append(p->wp, data, size, &p->stats) < 0 ? -1 : 0;
    memcpy(p->buf + p->len, data, size);
    p->len += size;
    return 0;
}

/* One pack: what its thread needs and what it reports. */
struct pack_half {
    git_packbuilder *pb;
    git_odb *odb;    /* where the pack goes: g->repo's object database */
    const char *dir; /* its git folder, for the message */
    struct pack_out out;
    struct rc_err err;
    int error;
};

static void pack_half_write(void *arg, size_t k)
{
    struct pack_half *h = &((struct pack_half *)arg)[k];
    int ge;

    if (git_packbuilder_object_count(h->pb) == 0)
        return;
    h->out.buf = rc_xmalloc(PACK_CHUNK);
    if ((ge = git_odb_write_pack(&h->out.wp, h->odb, NULL, NULL)) < 0 ||
        (ge = git_packbuilder_foreach(h->pb, pack_out_cb, &h->out)) < 0 ||
        (ge = pack_out_flush(&h->out)) < 0 ||
        (ge = h->out.wp->commit(h->out.wp, &h->out.stats)) < 0)
        h->error = fail_write(&h->err, h->dir, RC_ERROR, "cannot write the new objects as a pack");
    if (h->out.wp)
        h->out.wp->free(h->out.wp);
    free(h->out.buf);
}

/* Pack mode: write the new objects of `tree` as packs, and let g->repo see them. */
static int sink_flush(struct objsink *s, struct rc_git *g, const git_oid *tree, struct rc_err *err)
{
    struct pack_walk w;
    struct pack_half half[PACK_HALVES];
    git_tree *t = NULL;
    git_odb *main_odb = NULL;
    int ge, error = RC_OK;

    if (!s->own)
        return RC_OK;
    if ((error = no_delta_search(s->own, err)) < 0)
        return error;
    memset(&w, 0, sizeof(w));
    memset(half, 0, sizeof(half));
    w.sink = s;
    w.npb = rc_threads_for(0, s->nobjects, PACK_PER_THREAD, PACK_HALVES);
    for (size_t k = 0; k < w.npb; k++) {
        if ((ge = git_packbuilder_new(&w.pb[k], s->own)) < 0) {
            error = fail(err, RC_ERROR, "cannot write the new objects as a pack");
            goto done;
        }
        /* the halves run side by side: one thread each for the delta search */
        git_packbuilder_set_threads(w.pb[k], 1);
    }
    if ((ge = git_repository_odb(&main_odb, g->repo)) < 0 ||
        (ge = git_tree_lookup(&t, s->own, tree)) < 0 ||
        (sink_has(s, tree) && (ge = git_packbuilder_insert(w.pb[w.n++ % w.npb], tree, NULL)) < 0) ||
        (ge = git_tree_walk(t, GIT_TREEWALK_PRE, pack_walk_cb, &w)) < 0 || w.error < 0) {
        error = fail(err, RC_ERROR, "cannot write the new objects as a pack");
        goto done;
    }
    for (size_t k = 0; k < w.npb; k++) {
        half[k].pb = w.pb[k];
        half[k].odb = main_odb;
        half[k].dir = git_repository_path(g->repo);
        half[k].err = (struct rc_err)RC_ERR_INIT;
    }
    rc_threads_run(pack_half_write, half, w.npb);
    for (size_t k = 0; k < w.npb && error == RC_OK; k++) {
        if (half[k].error < 0) {
            *err = half[k].err;
            error = half[k].error;
        }
    }
    /* the packs written, even when one of them failed: the other's objects are not lost */
    if ((ge = git_odb_refresh(main_odb)) < 0 && error == RC_OK)
        error = fail(err, RC_ERROR, "cannot read the new pack");
done:
    git_tree_free(t);
    for (size_t k = 0; k < w.npb; k++)
        git_packbuilder_free(w.pb[k]);
    git_odb_free(main_odb);
    return error;
}

/* ==== Pack upkeep (rc_git_pack_upkeep) ==== */

/* A pack of objects/pack: its name without the extension and how many objects it holds. */
struct packinfo {
    char *base;
    uint32_t count;
};

static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

/* The object count of pack index `path` (version 2: magic, version, 256 fan-out entries, then
 * the sorted ids), and with ids the ids themselves (count x 20 bytes, malloc'd). -1: not a
 * version 2 index this long. */
static int idx_read(const char *path, uint32_t *count, unsigned char **ids)
{
    unsigned char head[8 + 256 * 4];
    struct stat st;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW), rc = -1;

    if (ids)
        *ids = NULL;
    if (fd < 0)
        return -1;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (size_t)st.st_size >= sizeof(head) &&
        rc_file_read_at(fd, head, sizeof(head), 0) == 0 && !memcmp(head, "\377tOc", 4) &&
        be32(head + 4) == 2) {
        uint64_t n = be32(head + 8 + 255 * 4);
        /* ids, CRCs and offsets, then the two trailing checksums */
        if ((uint64_t)st.st_size >= sizeof(head) + n * 28 + 40) {
            *count = (uint32_t)n;
            rc = 0;
            if (ids) {
                *ids = rc_xmalloc(n * 20 + 1);
                if (rc_file_read_at(fd, *ids, n * 20, sizeof(head)) < 0) {
                    free(*ids);
                    *ids = NULL;
                    rc = -1;
                }
            }
        }
    }
    close(fd);
    return rc;
}

static int cmp_packinfo(const void *x, const void *y)
{
    const struct packinfo *a = x, *b = y;

    if (a->count != b->count)
        return a->count < b->count ? -1 : 1;
    return strcmp(a->base, b->base);
}

static int file_exists(const char *path)
{
    struct stat st;

    return lstat(path, &st) == 0;
}

/* The packs of directory `dir` (an index and its pack), and whether anything is there that
 * upkeep must leave alone (a .keep, a multi-pack-index, an index it cannot read). */
static size_t packs_list(struct packinfo **out, int *foreign, const char *dir)
{
    struct packinfo *v = NULL;
    size_t n = 0, cap = 0;
    DIR *d = opendir(dir);
    struct dirent *e;

    *foreign = 0;
    *out = NULL;
    if (!d)
        return 0;
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        char *path, *base;
        uint32_t count;

        if (!strcmp(e->d_name, "multi-pack-index")) {
            *foreign = 1;
            continue;
        }
        if (len <= 9 || strncmp(e->d_name, "pack-", 5) || !ends_with(e->d_name, ".idx"))
            continue;
        size_t psize = strlen(dir) + len + 16;
        base = rc_xstrndup(e->d_name, len - 4);
        path = rc_xmalloc(psize);
        snprintf(path, psize, "%s/%s.keep", dir, base);
        if (file_exists(path))
            *foreign = 1;
        snprintf(path, psize, "%s/%s.pack", dir, base);
        if (file_exists(path)) {
            snprintf(path, psize, "%s/%s.idx", dir, base);
            if (idx_read(path, &count, NULL) < 0) {
                *foreign = 1;
                count = 0;
            }
            v = rc_xgrow(v, &cap, n + 1, sizeof(*v));
            v[n].base = base;
            v[n++].count = count;
            base = NULL;
        }
        free(base);
        free(path);
    }
    closedir(d);
    *out = v;
    return n;
}

static void packs_free(struct packinfo *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i].base);
    free(v);
}

static int cmp_id20(const void *x, const void *y)
{
    return memcmp(x, y, 20);
}

size_t rc_git_pack_count(struct rc_git *g)
{
    size_t dsize = strlen(git_repository_path(g->repo)) + sizeof("objects/pack");
    char *dir = rc_xmalloc(dsize);
    struct packinfo *v;
    int foreign;
    size_t n;

    snprintf(dir, dsize, "%sobjects/pack", git_repository_path(g->repo));
    n = packs_list(&v, &foreign, dir);
    packs_free(v, n);
    free(dir);
    return n;
}

static int is_hex(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return 0;
    }
    return s[n] == '\0';
}

/* How many small loose objects directory objects/<xx> holds (file names of 38 hex digits,
 * files of at most LOOSE_SMALL bytes); with ids, their ids appended to *ids (n x 20 bytes,
 * cap for rc_xgrow). A larger one stays loose: the packer deflates it again whole, and the 31
 * records of 10 MB among 3,094 loose objects made packing them take 3.7 s and 200 MB with the
 * narrow delta search (bench/RESULTS.md, note 86). */
#define LOOSE_SMALL (64u << 10)
static size_t loose_in(const char *objdir, const char *xx, unsigned char **ids, size_t *n,
                       size_t *cap)
{
    size_t dsize = strlen(objdir) + 4, found = 0;
    char *path = rc_xmalloc(dsize);
    DIR *d;
    struct dirent *e;

    snprintf(path, dsize, "%s%s", objdir, xx);
    d = opendir(path);
    if (!d) {
        free(path);
        return 0;
    }
    while ((e = readdir(d)) != NULL) {
        git_oid id;
        struct stat st;
        char hex[41];
        if (!is_hex(e->d_name, 38) || fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
            !S_ISREG(st.st_mode) || (uint64_t)st.st_size > LOOSE_SMALL)
            continue;
        found++;
        if (!ids)
            continue;
        memcpy(hex, xx, 2);
        memcpy(hex + 2, e->d_name, 39);
        if (git_oid_fromstr(&id, hex) < 0)
            continue;
        *ids = rc_xgrow(*ids, cap, *n + 1, 20);
        memcpy(*ids + *n * 20, id.id, 20);
        (*n)++;
    }
    closedir(d);
    free(path);
    return found;
}

/* Every id of ids (n x 20 bytes) is among have (nhave sorted ids). */
static int all_in(const unsigned char *ids, size_t n, const unsigned char *have, uint32_t nhave)
{
    for (size_t j = 0; j < n; j++) {
        if (!bsearch(ids + j * 20, have, nhave, 20, cmp_id20))
            return 0;
    }
    return 1;
}

int rc_git_pack_upkeep(struct rc_git *g, struct rc_git_upkeep *out, struct rc_err *err)
{
    const char *gitdir = git_repository_path(g->repo);
    size_t dsize = strlen(gitdir) + sizeof("objects/pack"), osize = strlen(gitdir) + 16;
    char *dir = rc_xmalloc(dsize), *objdir = rc_xmalloc(osize), *path = NULL, *made = NULL;
    struct packinfo *v = NULL;
    git_repository *own = NULL;
    git_packbuilder *pb = NULL;
    unsigned char *have = NULL, *ids = NULL;
    uint32_t nhave = 0;
    size_t n = 0, k = 0, plen, nids = 0, npacked = 0, icap = 0;
    int foreign, error = RC_OK;

    memset(out, 0, sizeof(*out));
    snprintf(dir, dsize, "%sobjects/pack", gitdir);
    snprintf(objdir, osize, "%sobjects/", gitdir);
    if (!g->remote) /* a local repository's objects are its owner's to pack (git gc) */
        goto done;
    n = packs_list(&v, &foreign, dir);
    if (foreign)
        goto done;
    if (n > RC_GIT_PACKS_MAX) {
        /* the smallest two, then each next pack smaller than twice what is taken, and at
         * least down to half the bound */
        uint64_t taken;
        rc_sort(v, n, sizeof(*v), cmp_packinfo);
        taken = (uint64_t)v[0].count + v[1].count;
        for (k = 2; k < n && ((uint64_t)v[k].count < 2 * taken || n - k + 1 > RC_GIT_PACKS_MAX / 2);
             k++)
            taken += v[k].count;
    }
    /* every object taken, in one array: the chosen packs' ids (read from their indexes
     * once), then those of the small loose objects, counted first as git counts them (one
     * directory of the 256, times 256) */
    plen = strlen(dir) + 64;
    path = rc_xmalloc(plen);
    for (size_t i = 0; i < k && error == RC_OK; i++) {
        unsigned char *some;
        uint32_t count;
        snprintf(path, plen, "%s/%s.idx", dir, v[i].base);
        if (idx_read(path, &count, &some) < 0) {
            error = rc_err_set(err, RC_ERROR, "cannot read pack index '%s'", path);
            break;
        }
        ids = rc_xgrow(ids, &icap, nids + count + 1, 20);
        memcpy(ids + nids * 20, some, (size_t)count * 20);
        nids += count;
        free(some);
    }
    if (error < 0)
        goto done;
    npacked = nids;
    if (loose_in(objdir, "17", NULL, NULL, NULL) * 256 > RC_GIT_LOOSE_MAX) {
        for (int i = 0; i < 256; i++) {
            char xx[3];
            snprintf(xx, sizeof(xx), "%02x", i);
            loose_in(objdir, xx, &ids, &nids, &icap);
        }
    }
    if (nids == 0)
        goto done;
    /* the packer of a handle of its own, configured before the packer reads it with the
     * commit's narrow delta search (each object tried against the one before it), its pack
     * written as the commit's are: in pieces, not an object at a time */
    if (git_repository_open_bare(&own, g->path) < 0) {
        error = fail(err, RC_ERROR, "cannot pack the mirror '%s'", g->path);
        goto done;
    }
    if ((error = no_delta_search(own, err)) < 0)
        goto done;
    if (git_packbuilder_new(&pb, own) < 0) {
        error = fail(err, RC_ERROR, "cannot pack the mirror '%s'", g->path);
        goto done;
    }
    git_packbuilder_set_threads(pb, 0);
    for (size_t j = 0; j < nids; j++) {
        git_oid id;
        git_oid_fromraw(&id, ids + j * 20);
        if (git_packbuilder_insert(pb, &id, NULL) < 0) {
            error = fail(err, RC_ERROR, "cannot pack the mirror '%s'", g->path);
            goto done;
        }
    }
    {
        struct pack_half h;
        memset(&h, 0, sizeof(h));
        h.pb = pb;
        if (git_repository_odb(&h.odb, own) < 0) {
            error = fail(err, RC_ERROR, "cannot pack the mirror '%s'", g->path);
        } else {
            pack_half_write(&h, 0);
            if (h.error < 0)
                error = rc_err_set(err, RC_ERROR, "%s", h.err.msg);
        }
        git_odb_free(h.odb);
    }
    if (error < 0)
        goto done;
    /* the pack it wrote: the one pack of the directory not listed before */
    {
        struct packinfo *now = NULL;
        size_t nnow = packs_list(&now, &foreign, dir);
        for (size_t i = 0; i < nnow && !made; i++) {
            size_t x = 0;
            while (x < n && strcmp(v[x].base, now[i].base))
                x++;
            if (x == n)
                made = rc_xstrdup(now[i].base);
        }
        packs_free(now, nnow);
    }
    snprintf(path, plen, "%s/%s.idx", dir, made ? made : "");
    if (!made || idx_read(path, &nhave, &have) < 0) {
        error = rc_err_set(err, RC_ERROR, "cannot find the pack it wrote in '%s'", dir);
        goto done;
    }
    /* nothing goes that the new pack does not hold */
    if (!all_in(ids, nids, have, nhave)) {
        error =
            rc_err_set(err, RC_ERROR, "the pack written in '%s' lacks objects it was given", dir);
        goto done;
    }
    /* every object taken is in the new pack: the old packs go (the index first, so that a
     * reader listing the directory never finds an index without its pack), then the loose
     * objects */
    for (size_t i = 0; i < k; i++) {
        static const char *const ext[] = {".idx", ".pack", ".rev", ".bitmap"};
        if (!strcmp(v[i].base, made))
            continue; /* the same objects made the same pack */
        for (size_t x = 0; x < sizeof(ext) / sizeof(ext[0]); x++) {
            snprintf(path, plen, "%s/%s%s", dir, v[i].base, ext[x]);
            if (unlink(path) < 0 && errno != ENOENT && error == RC_OK)
                error = rc_err_set(err, RC_ERROR, "cannot remove '%s': %s", path, strerror(errno));
        }
        out->packs++;
    }
    for (size_t j = npacked; j < nids; j++) {
        char hex[41];
        git_oid id;
        git_oid_fromraw(&id, ids + j * 20);
        git_oid_tostr(hex, sizeof(hex), &id);
        snprintf(path, plen, "%s%.2s/%s", objdir, hex, hex + 2);
        if (unlink(path) == 0 || errno == ENOENT)
            out->loose++;
        else if (error == RC_OK)
            error = rc_err_set(err, RC_ERROR, "cannot remove '%s': %s", path, strerror(errno));
    }
    /* libgit2 keeps every pack it has read open: open the repository again, so that what
     * this process reads next comes from the packs there are */
    {
        git_repository *nr = NULL;
        ahead_take(g, NULL);
        if (git_repository_open_bare(&nr, g->path) < 0) {
            if (error == RC_OK)
                error = fail(err, RC_ERROR, "cannot open the mirror '%s' again", g->path);
        } else {
            git_repository_set_ident(nr, g->name, g->email);
            git_repository_free(g->repo);
            g->repo = nr;
        }
    }
done:
    git_packbuilder_free(pb);
    git_repository_free(own);
    free(made);
    free(have);
    free(ids);
    free(path);
    packs_free(v, n);
    free(objdir);
    free(dir);
    return error;
}

static void sink_close(struct objsink *s)
{
    git_odb_free(s->packed);
    git_odb_free(s->odb);
    git_repository_free(s->own); /* frees the in-memory store with its object database */
    memset(s, 0, sizeof(*s));
}

/* A build with no base tree (a first pass): the trees are made straight from the sorted paths,
 * without an index. In strcmp order of whole paths the entries of each directory come in
 * git's tree order (a directory sorts as its name and '/'), and a subdirectory's files follow
 * one another. */
struct fresh {
    const struct rc_git_file **order; /* files sorted by path */
    const git_oid *ids;               /* the blob id of each, in that order */
    git_odb *odb;                     /* where the trees go: the sink's store */
};

/* The tree of order[lo..hi), every path of which starts with the plen bytes of a directory
 * prefix ("" or "a/b/"), into out. */
static int fresh_tree(git_oid *out, struct fresh *fr, size_t lo, size_t hi, size_t plen,
                      struct rc_err *err)
{
    struct rc_buf b = RC_BUF_INIT;
    int error = RC_OK;

    for (size_t k = lo; k < hi && error == RC_OK;) {
        const char *rest = fr->order[k]->path + plen;
        const char *slash = strchr(rest, '/');
        size_t nlen = slash ? (size_t)(slash - rest) : strlen(rest);
        git_oid sub;
        const git_oid *id = &fr->ids[k];
        size_t end = k + 1;

        if (slash) {
            while (end < hi && !strncmp(fr->order[end]->path + plen, rest, nlen + 1))
                end++;
            error = fresh_tree(&sub, fr, k, end, plen + nlen + 1, err);
            id = &sub;
        }
        if (error == RC_OK)
            error = rc_buf_puts(&b, slash ? "40000 " : "100644 ", err);
        if (error == RC_OK)
            error = rc_buf_add(&b, rest, nlen, err);
        if (error == RC_OK)
            error = rc_buf_add(&b, "", 1, err); /* the name's NUL */
        if (error == RC_OK)
            error = rc_buf_add(&b, id->id, GIT_OID_RAWSZ, err);
        k = end;
    }
    if (error == RC_OK &&
        git_odb_write(out, fr->odb, b.len ? b.ptr : "", b.len, GIT_OBJECT_TREE) < 0)
        error = fail(err, RC_ERROR, "cannot write tree");
    rc_buf_release(&b);
    return error;
}

/* order: the nfiles files sorted by path (check_files) */
static int build_fresh(git_oid *tree_id, struct rc_git *g, const struct rc_git_file **order,
                       size_t nfiles, struct rc_err *err)
{
    struct fresh fr;
    git_oid *ids = rc_xcalloc(nfiles + 1, sizeof(*ids));
    struct objsink sink = {NULL, NULL, NULL, NULL, NULL, NULL, 0};
    int ge, error = RC_OK;

    memset(&fr, 0, sizeof(fr));
    fr.order = order;
    for (size_t k = 0; k < nfiles && error == RC_OK; k++) {
        if (fr.order[k]->keep)
            error = rc_err_set(err, RC_ENOTFOUND, "'%s' is not in the base tree to keep",
                               fr.order[k]->path);
    }
    if (error == RC_OK)
        error = sink_open(&sink, g, nfiles, err);
    for (size_t k = 0; k < nfiles && error == RC_OK; k++) {
        const struct rc_git_file *f = fr.order[k];
        const char *data = f->data ? f->data : "";
        if (sink.mempack) {
            if (!(f->id[0] && parse_oid(&ids[k], f->id, "blob", err) == RC_OK)) {
                rc_err_clear(err);
                ge = git_odb_hash(&ids[k], data, f->len, GIT_OBJECT_BLOB);
            } else {
                ge = 0;
            }
            if (ge >= 0)
                ge = sink_write_blob(&sink, &ids[k], data, f->len);
        } else {
            ge = git_blob_create_from_buffer(&ids[k], sink.repo, data, f->len);
        }
        if (ge < 0)
            error = fail_write(err, git_repository_path(sink.repo), RC_ERROR, "cannot write '%s'",
                               f->path);
    }
    if (sink.lent)
        lent_seal(sink.lent);
    fr.ids = ids;
    if (error == RC_OK && (ge = git_repository_odb(&fr.odb, sink.repo)) < 0)
        error = fail(err, RC_ERROR, "cannot open the object database");
    if (error == RC_OK)
        error = fresh_tree(tree_id, &fr, 0, nfiles, 0, err);
    if (error == RC_OK)
        error = sink_flush(&sink, g, tree_id, err);
    if (error == RC_OK) {
        /* the listing of the new tree is its files, in this order: kept (struct listed) */
        size_t bytes = 0, odd = 0;
        char hex[41], *at;
        for (size_t k = 0; k < nfiles; k++) {
            bytes += strlen(order[k]->path) + 1;
            odd += odd_deploy_entry(order[k]->path, GIT_FILEMODE_BLOB) != 0;
        }
        listed_free(g->listed);
        g->listed = listed_new(tree_id, nfiles, bytes, odd);
        at = g->listed->text;
        for (size_t k = 0; k < nfiles; k++) {
            oid_hex(hex, &ids[k]);
            listed_put(g->listed, &at, order[k]->path, hex);
        }
    }
    git_odb_free(fr.odb);
    sink_close(&sink);
    free(ids);
    return error;
}

int rc_git_build_tree(char out_tree[41], struct rc_git *g, const char *base_commit,
                      const struct rc_git_file *files, size_t nfiles, struct rc_err *err)
{
    git_index *idx = NULL;
    git_tree *base = NULL;
    const char **sorted = NULL;
    const struct rc_git_file **order = NULL;
    unsigned char *changed = NULL;
    git_oid *ids = NULL;
    size_t nchanged = 0;
    struct objsink sink = {NULL, NULL, NULL, NULL, NULL, NULL, 0};
    git_oid tree_id;
    int ge, error;

    if ((error = check_files(&sorted, base_commit ? NULL : &order, files, nfiles, err)) < 0)
        return error;
    if (!base_commit) {
        free(sorted);
        /* no index describes the tree built: a next build over it reads it */
        git_index_free(g->built);
        g->built = NULL;
        error = build_fresh(&tree_id, g, order, nfiles, err);
        if (error == RC_OK)
            oid_hex(out_tree, &tree_id);
        free(order);
        return error;
    }
    if ((ge = git_index_new(&idx)) < 0) {
        error = fail(err, RC_ERROR, "cannot create an in-memory index");
        goto done;
    }
    if (base_commit) {
        if ((error = lookup_tree(&base, g, base_commit, err)) < 0)
            goto done;
        if (g->built && git_oid_equal(&g->built_tree, git_tree_id(base))) {
            /* the index this handle built that tree from: taken (a failed build frees it) */
            git_index_free(idx);
            idx = g->built;
            g->built = NULL;
        } else if ((ge = git_index_read_tree(idx, base)) < 0) {
            error = fail(err, RC_ERROR, "cannot read the tree of '%s'", base_commit);
            goto done;
        } else {
            g->trees_read++;
        }
    }
    /* Which files differ from the base: a file whose content the base already has at that
     * path is left alone (hashing in memory is much cheaper than asking the object store). */
    changed = rc_xcalloc(nfiles + 1, 1);
    ids = rc_xcalloc(nfiles + 1, sizeof(*ids));
    for (size_t i = 0; i < nfiles; i++) {
        const char *data = files[i].data ? files[i].data : "";
        const git_index_entry *have = git_index_get_bypath(idx, files[i].path, 0);
        git_oid id;

        if (files[i].keep) {
            if (!have ||
                (have->mode != GIT_FILEMODE_BLOB && have->mode != GIT_FILEMODE_BLOB_EXECUTABLE)) {
                error = rc_err_set(err, RC_ENOTFOUND, "'%s' is not in the base tree to keep",
                                   files[i].path);
                goto done;
            }
            if (have->mode == GIT_FILEMODE_BLOB_EXECUTABLE) {
                /* the base's blob, as a plain file like every other (no object to write) */
                ids[i] = have->id;
                changed[i] = 3;
                nchanged++;
            }
            continue;
        }
        if (files[i].id[0] && parse_oid(&id, files[i].id, "blob", err) == RC_OK) {
            /* hashed by the caller */
        } else if (files[i].differs) {
            /* not the base's blob: hashed as it is written */
            changed[i] = 2;
            nchanged++;
            continue;
        } else if ((ge = git_odb_hash(&id, data, files[i].len, GIT_OBJECT_BLOB)) < 0) {
            error = fail(err, RC_ERROR, "cannot hash '%s'", files[i].path);
            goto done;
        }
        if (have && have->mode == GIT_FILEMODE_BLOB && git_oid_equal(&have->id, &id))
            continue;
        ids[i] = id;
        changed[i] = 1;
        nchanged++;
    }
    if ((error = sink_open(&sink, g, nchanged, err)) < 0)
        goto done;
    for (size_t i = 0; i < nfiles; i++) {
        const char *data = files[i].data ? files[i].data : "";
        git_index_entry ie;

        if (!changed[i])
            continue;
        memset(&ie, 0, sizeof(ie));
        if (changed[i] == 3) {
            ie.id = ids[i];
            ge = 0;
        } else if (sink.mempack) {
            ie.id = ids[i];
            ge = changed[i] == 2 ? git_odb_hash(&ie.id, data, files[i].len, GIT_OBJECT_BLOB) : 0;
            if (ge >= 0)
                ge = sink_write_blob(&sink, &ie.id, data, files[i].len);
        } else {
            ge = git_blob_create_from_buffer(&ie.id, sink.repo, data, files[i].len);
        }
        if (ge < 0) {
            error = fail_write(err, git_repository_path(sink.repo), RC_ERROR, "cannot write '%s'",
                               files[i].path);
            goto done;
        }
        ie.mode = GIT_FILEMODE_BLOB;
        ie.path = files[i].path;
        if ((ge = git_index_add(idx, &ie)) < 0) {
            error = fail(err, RC_EINVALID, "cannot add '%s'", files[i].path);
            goto done;
        }
    }
    if (sink.lent)
        lent_seal(sink.lent);
    /* Then drop every deploy path that is not in files: the index and sorted are both in
     * strcmp order, walked together from the end; a path the walk does not find is looked up
     * before it goes. */
    for (size_t i = git_index_entrycount(idx), j = nfiles; i-- > 0;) {
        const git_index_entry *ie = git_index_get_byindex(idx, i);
        const char *key = ie ? ie->path : NULL;

        while (key && j > 0 && strcmp(sorted[j - 1], key) > 0)
            j--;
        if (!ie || !is_deploy_path(ie->path) ||
            (git_index_entry_stage(ie) == 0 &&
             ((j > 0 && !strcmp(sorted[j - 1], key)) ||
              bsearch(&key, sorted, nfiles, sizeof(char *), cmp_cstr))))
            continue;
        if ((ge = git_index_remove(idx, ie->path, git_index_entry_stage(ie))) < 0) {
            error = fail(err, RC_ERROR, "cannot remove '%s'", key);
            goto done;
        }
    }
    if ((ge = git_index_write_tree_to(&tree_id, idx, sink.repo)) < 0) {
        error = fail_write(err, git_repository_path(sink.repo), RC_ERROR, "cannot write tree");
        goto done;
    }
    if ((error = sink_flush(&sink, g, &tree_id, err)) < 0)
        goto done;
    oid_hex(out_tree, &tree_id);
    git_index_free(g->built);
    g->built = idx; /* its tree cache is that of tree_id, as writing the tree left it */
    g->built_tree = tree_id;
    listed_free(g->listed);
    g->listed = listed_of_index(idx, &tree_id);
    idx = NULL;
done:
    sink_close(&sink);
    free(ids);
    free(changed);
    free(sorted);
    git_tree_free(base);
    git_index_free(idx);
    return error;
}

/* Whether one of the paths is a directory of another ("a" and "a/b"): a file that becomes a
 * directory or the reverse, which git_tree_create_updated cannot do in one go. */
static int df_change(const struct rc_git_file *up, size_t nup, const char *const *rm, size_t nrm)
{
    size_t n = nup + nrm;
    const char **v = rc_xcalloc(n + 1, sizeof(*v));
    char *dir;
    int found;

    for (size_t i = 0; i < nup; i++)
        v[i] = up[i].path;
    for (size_t i = 0; i < nrm; i++)
        v[nup + i] = rm[i];
    rc_sort(v, n, sizeof(*v), cmp_cstr);
    dir = file_and_dir(v, n);
    found = dir != NULL;
    free(v);
    free(dir);
    return found;
}

/* The base commit's tree with `up` written over it (added or replaced blobs) and `rm` taken
 * out, through git_tree_create_updated: only the trees on those paths are read and written. */
int rc_git_update_tree(char out_tree[41], struct rc_git *g, const char *base_commit,
                       const struct rc_git_file *up, size_t nup, const char *const *rm, size_t nrm,
                       struct rc_err *err)
{
    git_tree *base = NULL, *own_base = NULL;
    git_tree_update *ups = NULL;
    struct objsink sink = {NULL, NULL, NULL, NULL, NULL, NULL, 0};
    git_oid tree_id;
    int ge, error;

    for (size_t i = 0; i < nup; i++) {
        if ((error = check_path(up[i].path, 0, err)) < 0)
            return error;
        if (up[i].keep)
            return rc_err_set(err, RC_EINVALID, "'%s': nothing to write", up[i].path);
    }
    for (size_t i = 0; i < nrm; i++) {
        if ((error = check_path(rm[i], 0, err)) < 0)
            return error;
    }
    if (df_change(up, nup, rm, nrm))
        return rc_err_set(err, RC_ECONFLICT,
                          "a file becomes a directory or a directory a file: build the tree whole");
    if ((error = lookup_tree(&base, g, base_commit, err)) < 0)
        return error;
    if ((error = sink_open(&sink, g, nup, err)) < 0)
        goto done;
    ups = rc_xcalloc(nup + nrm + 1, sizeof(*ups));
    for (size_t i = 0; i < nup; i++) {
        const char *data = up[i].data ? up[i].data : "";
        git_oid id;

        if (!sink.mempack) {
            /* hashes it as it writes it: a hash before would be a second one (the record,
             * 10 MB at 10,000 units, is hashed at 25 instructions a byte) */
            ge = git_blob_create_from_buffer(&id, sink.repo, data, up[i].len);
        } else {
            if (up[i].id[0]) {
                if ((error = parse_oid(&id, up[i].id, "blob", err)) < 0)
                    goto done;
                ge = 0;
            } else {
                ge = git_odb_hash(&id, data, up[i].len, GIT_OBJECT_BLOB);
            }
            if (ge >= 0)
                ge = sink_write_blob(&sink, &id, data, up[i].len);
        }
        if (ge < 0) {
            error = fail_write(err, git_repository_path(sink.repo), RC_ERROR, "cannot write '%s'",
                               up[i].path);
            goto done;
        }
        ups[i].action = GIT_TREE_UPDATE_UPSERT;
        ups[i].id = id;
        ups[i].filemode = GIT_FILEMODE_BLOB;
        ups[i].path = up[i].path;
    }
    for (size_t i = 0; i < nrm; i++) {
        ups[nup + i].action = GIT_TREE_UPDATE_REMOVE;
        ups[nup + i].filemode = GIT_FILEMODE_BLOB; /* ignored */
        ups[nup + i].path = rm[i];
    }
    if (sink.lent)
        lent_seal(sink.lent);
    /* the trees are read and written where the blobs went */
    if ((ge = git_tree_lookup(&own_base, sink.repo, git_tree_id(base))) < 0 ||
        (ge = git_tree_create_updated(&tree_id, sink.repo, own_base, nup + nrm, ups)) < 0) {
        error = fail_write(err, git_repository_path(sink.repo), RC_ERROR,
                           "cannot update the tree of '%s'", base_commit);
        goto done;
    }
    if ((error = sink_flush(&sink, g, &tree_id, err)) < 0)
        goto done;
    oid_hex(out_tree, &tree_id);
    /* the last build's index, if any, describes another tree now; a listing of the base
     * becomes the listing of the new tree */
    git_index_free(g->built);
    g->built = NULL;
    if (g->listed && git_oid_equal(&g->listed->tree, git_tree_id(base)) &&
        listed_rewritten(g->listed, &tree_id, ups, nup, nrm) < 0) {
        struct listed *next = listed_updated(g->listed, &tree_id, ups, nup, nrm);
        listed_free(g->listed);
        g->listed = next;
    }
done:
    git_tree_free(own_base);
    sink_close(&sink);
    free(ups);
    git_tree_free(base);
    return error;
}

/* ==== Commits ==== */

int rc_git_commit_tree_id(char out[41], struct rc_git *g, const char *commit, struct rc_err *err)
{
    git_commit *c = NULL;
    int error = lookup_commit(&c, g, commit, err);

    if (error < 0)
        return error;
    oid_hex(out, git_commit_tree_id(c));
    git_commit_free(c);
    return RC_OK;
}

int rc_git_commit(char out[41], struct rc_git *g, const char *tree, const char *parent,
                  const char *message, int64_t when, struct rc_err *err)
{
    git_oid tree_id, id;
    git_tree *t = NULL;
    git_commit *p = NULL;
    git_signature *sig = NULL;
    const git_commit *parents[1];
    char *msg = NULL;
    size_t mlen;
    int ge, error;

    if (!message || !*message)
        return rc_err_set(err, RC_EINVALID, "empty commit message");
    if ((error = parse_oid(&tree_id, tree, "tree", err)) < 0)
        return error;
    if ((ge = git_tree_lookup(&t, g->repo, &tree_id)) < 0)
        return fail(err, rc_code(ge), "cannot read tree '%s'", tree);
    if (parent && (error = lookup_commit(&p, g, parent, err)) < 0)
        goto done;
    if ((ge = git_signature_new(&sig, g->name, g->email, (git_time_t)when, 0)) < 0) {
        error = fail(err, RC_EINVALID, "invalid identity");
        goto done;
    }
    mlen = strlen(message);
    msg = rc_xmalloc(mlen + 2);
    memcpy(msg, message, mlen + 1);
    if (msg[mlen - 1] != '\n') {
        msg[mlen] = '\n';
        msg[mlen + 1] = '\0';
    }
    parents[0] = p;
    if ((ge = write_commit(&id, g->repo, sig, msg, t, p ? 1 : 0, parents)) < 0) {
        error = fail_write(err, git_repository_path(g->repo), RC_ERROR, "cannot write the commit");
        goto done;
    }
    oid_hex(out, &id);
done:
    free(msg);
    git_signature_free(sig);
    git_commit_free(p);
    git_tree_free(t);
    return error;
}

int64_t rc_git_commit_time(struct rc_git *g, const char *commit)
{
    struct rc_err err = RC_ERR_INIT;
    git_commit *c = NULL;
    int64_t t;

    if (lookup_commit(&c, g, commit, &err) < 0)
        return -1;
    t = (int64_t)git_commit_time(c);
    git_commit_free(c);
    return t;
}

int rc_git_commit_message(char **msg, struct rc_git *g, const char *commit, struct rc_arena *a,
                          struct rc_err *err)
{
    git_commit *c = NULL;
    const char *m;
    int error = lookup_commit(&c, g, commit, err);

    if (error < 0)
        return error;
    m = git_commit_message_raw(c);
    *msg = rc_arena_strdup(a, m ? m : "");
    git_commit_free(c);
    return RC_OK;
}

int rc_git_commit_author(char **out, struct rc_git *g, const char *commit, struct rc_arena *a,
                         struct rc_err *err)
{
    git_commit *c = NULL;
    const git_signature *s;
    int error = lookup_commit(&c, g, commit, err);

    if (error < 0)
        return error;
    s = git_commit_author(c);
    *out =
        rc_arena_printf(a, "%s <%s>", s && s->name ? s->name : "", s && s->email ? s->email : "");
    git_commit_free(c);
    return RC_OK;
}

static int own_commit(struct rc_git *g, git_commit *c)
{
    const git_signature *s = git_commit_committer(c);
    const char *m = git_commit_message_raw(c);

    if (!s || !s->name || strcmp(s->name, g->name) || !m)
        return 0;
    return !strncmp(m, "Rightplace-Source: ", 19) || strstr(m, "\nRightplace-Source: ") != NULL;
}

int rc_git_is_own_commit(struct rc_git *g, const char *commit, struct rc_err *err)
{
    git_commit *c = NULL;
    int error = lookup_commit(&c, g, commit, err);

    if (error < 0)
        return error;
    error = own_commit(g, c);
    git_commit_free(c);
    return error;
}

int rc_git_last_own_commit(char out[41], struct rc_git *g, const char *commit, size_t depth,
                           struct rc_err *err)
{
    git_commit *c = NULL;
    int error = lookup_commit(&c, g, commit, err);

    for (size_t i = 0; error == RC_OK && i <= depth; i++) {
        git_commit *parent = NULL;
        int e;
        if (own_commit(g, c)) {
            oid_hex(out, git_commit_id(c));
            git_commit_free(c);
            return RC_OK;
        }
        if (git_commit_parentcount(c) == 0)
            break;
        if ((e = git_commit_parent(&parent, c, 0)) < 0)
            error = fail(err, rc_code(e), "cannot read the parent of '%s'", commit);
        git_commit_free(c);
        c = parent;
    }
    git_commit_free(c);
    if (error < 0)
        return error;
    return rc_err_set(err, RC_ENOTFOUND, "no commit of rightplace within %zu commits of '%.12s'",
                      depth, commit);
}

int rc_git_diff_commits(struct rc_git_change **out, size_t *n, struct rc_git *g, const char *from,
                        const char *to, struct rc_arena *a, struct rc_err *err)
{
    git_tree *t1 = NULL, *t2 = NULL;
    git_diff *d = NULL;
    struct rc_git_change *v = NULL;
    size_t cnt = 0, nd;
    int e, error;

    *out = NULL;
    *n = 0;
    error = lookup_tree(&t1, g, from, err);
    if (error == RC_OK)
        error = lookup_tree(&t2, g, to, err);
    if (error == RC_OK && (e = git_diff_tree_to_tree(&d, g->repo, t1, t2, NULL)) < 0)
        error = fail(err, rc_code(e), "cannot compare '%.12s' with '%.12s'", from, to);
    if (error < 0)
        goto done;
    nd = git_diff_num_deltas(d);
    v = rc_arena_calloc(a, nd + 1, sizeof(*v));
    for (size_t i = 0; i < nd; i++) {
        const git_diff_delta *dd = git_diff_get_delta(d, i);
        char op = dd->status == GIT_DELTA_ADDED ? 'A' : dd->status == GIT_DELTA_DELETED ? 'D' : 'M';
        const char *path = dd->status == GIT_DELTA_DELETED ? dd->old_file.path : dd->new_file.path;
        v[cnt].path = rc_arena_strdup(a, path ? path : "");
        v[cnt++].op = op;
    }
    *out = v;
    *n = cnt;
done:
    git_diff_free(d);
    git_tree_free(t1);
    git_tree_free(t2);
    return error;
}

int rc_git_commit_parent(char out[41], struct rc_git *g, const char *commit, struct rc_err *err)
{
    git_commit *c = NULL;
    int error = lookup_commit(&c, g, commit, err);

    if (error < 0)
        return error;
    if (git_commit_parentcount(c) == 0)
        error = rc_err_set(err, RC_ENOTFOUND, "'%s' is a root commit", commit);
    else
        oid_hex(out, git_commit_parent_id(c, 0));
    git_commit_free(c);
    return error;
}

/* ==== Refs ==== */

static int check_ref_name(const char *ref, struct rc_err *err)
{
    int valid = 0;

    if (!ref || strncmp(ref, "refs/", 5) || git_reference_name_is_valid(&valid, ref) < 0 ||
        !valid) {
        git_error_clear();
        return rc_err_set(err, RC_EINVALID, "invalid ref name '%s'", ref ? ref : "");
    }
    return RC_OK;
}

static int explain_ref_lock(struct rc_git *g, const char *ref, struct rc_err *err)
{
    char path[4096], what[RC_ERR_MSG_MAX];

    git_error_clear();
    ref_lock_path(path, sizeof(path), g->repo, ref);
    snprintf(what, sizeof(what), "cannot update '%s'", ref);
    return lock_held(err, RC_ERROR, what, what, path);
}

int rc_git_update_ref_local(struct rc_git *g, const char *ref, const char *new_id,
                            const char *old_id, const char *log_message, struct rc_err *err)
{
    git_reference *r = NULL;
    git_oid nid, oid;
    int ge, error;

    if ((error = check_ref_name(ref, err)) < 0 ||
        (error = parse_oid(&nid, new_id, "new id", err)) < 0 ||
        (old_id && (error = parse_oid(&oid, old_id, "old id", err)) < 0))
        return error;
    for (int attempt = 0;; attempt++) {
        if (!old_id) {
            ge = git_reference_create(&r, g->repo, ref, &nid, 0, log_message);
            if (ge == GIT_EEXISTS)
                return fail(err, RC_ECONFLICT, "ref '%s' exists already", ref);
        } else {
            ge = git_reference_create_matching(&r, g->repo, ref, &nid, 1, &oid, log_message);
            if (ge == GIT_EMODIFIED || ge == GIT_ENOTFOUND)
                return fail(err, RC_ECONFLICT, "ref '%s' is no longer at %.12s", ref, old_id);
        }
        if (ge != GIT_ELOCKED || attempt > 0 || !clear_stale_ref_lock(g->repo, g->log, ref))
            break;
    }
    git_reference_free(r);
    if (ge == GIT_ELOCKED)
        return explain_ref_lock(g, ref, err);
    if (ge < 0)
        return fail_write(err, git_repository_path(g->repo), rc_code(ge), "cannot update ref '%s'",
                          ref);
    return RC_OK;
}

int rc_git_update_ref(struct rc_git *g, const char *ref, const char *new_id, const char *old_id,
                      const char *log_message, struct rc_err *err)
{
    int error = rc_git_update_ref_local(g, ref, new_id, old_id, log_message, err);

    if (error < 0 || !g->remote)
        return error;
    return do_push(g, &ref, 1, 0, NULL, err);
}

int rc_git_force_ref(struct rc_git *g, const char *ref, const char *new_id, const char *old_id,
                     const char *log_message, struct rc_err *err)
{
    int error = rc_git_update_ref_local(g, ref, new_id, old_id, log_message, err);
    struct lease lease;

    if (error < 0 || !g->remote)
        return error;
    /* forced, with a lease: the remote's ref must still be old_id, the value the local
     * compare-and-swap just checked (what the pass fetched) */
    memset(&lease, 0, sizeof(lease));
    lease.absent = !old_id || !old_id[0];
    if (!lease.absent && git_oid_fromstr(&lease.id, old_id) < 0)
        return rc_err_set(err, RC_EINVALID, "invalid object id '%s'", old_id);
    return do_push(g, &ref, 1, 1, &lease, err);
}

/* ==== Notes ==== */

/* A note named by its object's 40 hex digits at the top of the notes tree. */
static int flat_note(const git_tree_entry *e)
{
    const char *name = git_tree_entry_name(e);

    return git_tree_entry_type(e) == GIT_OBJECT_BLOB && strlen(name) == 40 && is_hex(name, 40);
}

/*
 * libgit2 writes a note into the subtree of its object's first two hex digits when the notes
 * tree has one, and at the top otherwise; it never makes one. So every note rightplace wrote
 * sat at the top, and each write rewrote one tree of every note there was: 76 KB after 1,268
 * deploy commits, growing with each (and kept as a new object each time). Past
 * NOTES_FLAT_MAX notes at the top, they move into subtrees named by their first two digits
 * (git's own fanout, which git and libgit2 both read), in a notes commit of its own; later
 * notes go into those subtrees, and a write rewrites the top (at most 256 subtrees and a few
 * notes) and one subtree.
 */
#define NOTES_FLAT_MAX 64
static int notes_fan_out(struct rc_git *g, const git_signature *sig, struct rc_err *err)
{
    git_reference *ref = NULL;
    git_commit *head = NULL;
    git_tree *root = NULL;
    git_treebuilder *rb = NULL;
    git_oid tree_id, commit_id;
    size_t n, nflat = 0;
    int error = RC_OK;

    if (git_reference_lookup(&ref, g->repo, RC_GIT_NOTES_REF) < 0) {
        git_error_clear(); /* no notes yet */
        return RC_OK;
    }
    if (git_commit_lookup(&head, g->repo, git_reference_target(ref)) < 0 ||
        git_commit_tree(&root, head) < 0) {
        error = fail(err, RC_ERROR, "cannot read %s", RC_GIT_NOTES_REF);
        goto done;
    }
    n = git_tree_entrycount(root);
    for (size_t i = 0; i < n; i++)
        nflat += flat_note(git_tree_entry_byindex(root, i));
    if (nflat <= NOTES_FLAT_MAX)
        goto done;
    if (git_treebuilder_new(&rb, g->repo, root) < 0) {
        error = fail(err, RC_ERROR, "cannot rewrite %s", RC_GIT_NOTES_REF);
        goto done;
    }
    /* the tree is sorted, so the top-level notes of one prefix are one run of it */
    for (size_t i = 0; i < n && error == RC_OK;) {
        const git_tree_entry *e = git_tree_entry_byindex(root, i), *se;
        git_treebuilder *sb = NULL;
        git_tree *sub = NULL;
        git_oid sub_id;
        char prefix[3];
        size_t j;

        if (!flat_note(e)) {
            i++;
            continue;
        }
        memcpy(prefix, git_tree_entry_name(e), 2);
        prefix[2] = '\0';
        se = git_tree_entry_byname(root, prefix);
        if (se && git_tree_entry_type(se) == GIT_OBJECT_TREE &&
            git_tree_lookup(&sub, g->repo, git_tree_entry_id(se)) < 0)
            error = fail(err, RC_ERROR, "cannot read %s", RC_GIT_NOTES_REF);
        if (error == RC_OK && git_treebuilder_new(&sb, g->repo, sub) < 0)
            error = fail(err, RC_ERROR, "cannot rewrite %s", RC_GIT_NOTES_REF);
        for (j = i; error == RC_OK && j < n; j++) {
            const git_tree_entry *f = git_tree_entry_byindex(root, j);
            if (!flat_note(f) || memcmp(git_tree_entry_name(f), prefix, 2))
                break;
            if (git_treebuilder_insert(NULL, sb, git_tree_entry_name(f) + 2, git_tree_entry_id(f),
                                       git_tree_entry_filemode(f)) < 0 ||
                git_treebuilder_remove(rb, git_tree_entry_name(f)) < 0)
                error = fail(err, RC_ERROR, "cannot rewrite %s", RC_GIT_NOTES_REF);
        }
        if (error == RC_OK &&
            (git_treebuilder_write(&sub_id, sb) < 0 ||
             git_treebuilder_insert(NULL, rb, prefix, &sub_id, GIT_FILEMODE_TREE) < 0))
            error = fail(err, RC_ERROR, "cannot rewrite %s", RC_GIT_NOTES_REF);
        git_treebuilder_free(sb);
        git_tree_free(sub);
        i = j > i ? j : i + 1;
    }
    if (error == RC_OK) {
        git_tree *t = NULL;
        const git_commit *parents[1] = {head};
        /* on top of the notes commit read: if another writer moved the ref since, this fails
         * and the note is written as it is (the next write fans out) */
        git_reference *moved = NULL;
        if (git_treebuilder_write(&tree_id, rb) < 0 || git_tree_lookup(&t, g->repo, &tree_id) < 0 ||
            write_commit(&commit_id, g->repo, sig,
                         "Notes moved into subtrees by their first two hex digits\n", t, 1,
                         parents) < 0 ||
            git_reference_create_matching(
                &moved, g->repo, RC_GIT_NOTES_REF, &commit_id, 1, git_commit_id(head),
                "commit: Notes moved into subtrees by their first two hex digits") < 0)
            error = fail_write(err, git_repository_path(g->repo), RC_ERROR, "cannot rewrite %s",
                               RC_GIT_NOTES_REF);
        git_reference_free(moved);
        git_tree_free(t);
    }
done:
    git_treebuilder_free(rb);
    git_tree_free(root);
    git_commit_free(head);
    git_reference_free(ref);
    return error;
}

static int note_write(struct rc_git *g, const char *commit, const char *text, int push,
                      struct rc_err *err)
{
    static const char *const notes_ref[] = {RC_GIT_NOTES_REF};
    git_commit *c = NULL;
    git_signature *sig = NULL;
    git_oid id, note_id;
    int ge, error;

    if (!text)
        return rc_err_set(err, RC_EINVALID, "no note text");
    if ((error = lookup_commit(&c, g, commit, err)) < 0)
        return error;
    git_oid_cpy(&id, git_commit_id(c));
    ge = git_signature_new(&sig, g->name, g->email, git_commit_time(c), 0);
    git_commit_free(c);
    if (ge < 0)
        return fail(err, RC_EINVALID, "invalid identity");
    for (int attempt = 1;; attempt++) {
        struct rc_err ferr = RC_ERR_INIT;
        if (notes_fan_out(g, sig, &ferr) < 0 && g->log)
            rc_log_debug(g->log, "%s (the note is written as the notes are)", ferr.msg);
        if ((ge = git_note_create(&note_id, g->repo, RC_GIT_NOTES_REF, sig, sig, &id, text, 1)) <
            0) {
            error = fail_write(err, git_repository_path(g->repo), RC_ERROR,
                               "cannot write note on '%s'", commit);
            break;
        }
        if (!g->remote || !push)
            break;
        error = do_push(g, notes_ref, 1, 0, NULL, err);
        if (error != RC_ECONFLICT || attempt == NOTE_ATTEMPTS)
            break;
        if (g->log)
            rc_log_debug(g->log, "notes moved on the remote, writing the note again");
    }
    git_signature_free(sig);
    return error;
}

int rc_git_note_write(struct rc_git *g, const char *commit, const char *text, struct rc_err *err)
{
    return note_write(g, commit, text, 1, err);
}

int rc_git_note_write_local(struct rc_git *g, const char *commit, const char *text,
                            struct rc_err *err)
{
    return note_write(g, commit, text, 0, err);
}

int rc_git_note_read(char **text, struct rc_git *g, const char *commit, struct rc_arena *a,
                     struct rc_err *err)
{
    git_note *note = NULL;
    git_oid id;
    int ge, error;

    if ((error = resolve_oid(&id, g, commit, err)) < 0)
        return error;
    ge = git_note_read(&note, g->repo, RC_GIT_NOTES_REF, &id);
    if (ge == GIT_ENOTFOUND) {
        git_error_clear();
        return rc_err_set(err, RC_ENOTFOUND, "no note on '%s'", commit);
    }
    if (ge < 0)
        return fail(err, RC_ERROR, "cannot read the note on '%s'", commit);
    *text = rc_arena_strdup(a, git_note_message(note) ? git_note_message(note) : "");
    git_note_free(note);
    return RC_OK;
}
