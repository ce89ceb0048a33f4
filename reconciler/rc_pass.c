/*
 * rc_pass.c - one reconcile pass, and the replay of a deploy commit.
 *
 * The pass is a pipeline over per-pass data in one arena:
 *   sync (fetch) -> resolve S and D -> previous record (D:placements.yaml) -> load S
 *   (broken files replaced by their last good version) -> fleet (declared or observed)
 *   -> pl_place -> rd_render_tree -> diff against D -> commit + compare-and-swap -> apply.
 * It does not talk to libgit2 or the API server itself: rc_git and rc_observe/rc_apply do.
 */
#include "rc_sort.h"
#include "rc_pass.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pl_basics.h"
#include "pl_engine.h"
#include "rc_apply.h"
#include "rc_buf.h"
#include "rc_cache.h"
#include "rc_clock.h"
#include "rc_pcache.h"
#include "rc_rcache.h"
#include "rc_git.h"
#include "rc_hash.h"
#include "rc_mem.h"
#include "rc_observe.h"
#include "rc_kube.h"
#include "rc_outage.h"
#include "rc_thread.h"
#include "rc_version.h"
#include "rd_output.h"
#include "rd_source.h"

#include "rc_banned.h"

#define RECORD_PATH "placements.yaml"
#define CAPACITY_PATH ".rightplace/capacity.yaml"
#define MAX_HISTORY_WALK 64 /* distinct versions tried for a file's last good version */

/* ==== Phase times (debug log; bench/e2e.sh reads them) ==== */

enum { PH_RECORD, PH_LOAD, PH_OBSERVE, PH_PLACE, PH_RENDER, PH_DIFF, PH_COMMIT, PH_N };

static const char *const phase_names[PH_N] = {"record", "load", "observe", "place",
                                              "render", "diff", "commit"};

static double mono_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Add the time since *t to phase k and restart the clock. */
static void phase_mark(double *ms, int k, double *t)
{
    double now = mono_ms();

    if (ms)
        ms[k] += now - *t;
    *t = now;
}

static void phase_log(const struct rc_log *log, const double *ms)
{
    char line[256];
    size_t n = 0;

    if (!log || !rc_log_enabled(log, RC_LOG_DEBUG))
        return;
    for (int k = 0; k < PH_N && n < sizeof(line); k++)
        n += (size_t)snprintf(line + n, sizeof(line) - n, "%s%s %.0f ms", k ? ", " : "",
                              phase_names[k], ms[k]);
    rc_log_debug(log, "pass phases: %s", line);
}

/* ==== Loading the source, with broken files kept at their last good version ==== */

struct loaded {
    struct rd_source src;
    int have_src;
    /* the warnings and file errors reported already, set by the caller: what the last pass of
     * the process reported (rc_cache_reported) or, for its first pass, what the record cache
     * file's memo says the record lists (rd_record_memo_reported_digests). Logged at info
     * level, counted (nknown_errors: the file errors so counted by the load). */
    const uint64_t *known;
    size_t nknown, nknown_errors;
    size_t nerrors; /* the errors as found at S, before substitution */
    struct rd_file_error *errors;
    size_t unresolved; /* broken files without a last good version */
    size_t nkept;      /* broken files replaced by their last good version: */
    struct rc_memo_kept *kept;
    size_t nbroken; /* every broken file and the version kept of it ("": none), by path */
    struct rd_kept *broken;
    /* what the previous deploy tree says of the files broken then (read_kept); NULL: nothing */
    size_t nwas;
    struct rd_kept *was;
    size_t nparsed;                  /* files parsed, history walk included */
    char digest[41];                 /* of the (path, blob id) listing at S */
    const struct rc_git_blob *blobs; /* that listing (of the files loaded), sorted by path */
    size_t nblobs;
    /* files taken from the parse cache file (not read, not parsed); ms reading it (the
     * writing is timed by the writer: save.ms) */
    size_t nfrom_file;
    double ms_from_file;
    /* the parse cache file being written on a thread of its own (save_parse_cache) */
    struct pcache_save {
        struct rc_threads_bg bg;
        int started;
        struct rc_pcache *pfile;
        const struct rd_cache *cache;
        const struct rc_git_blob *blobs;
        size_t nblobs, budget;
        int error;
        struct rc_err err;
        double ms;
        const struct rc_log *log; /* written to only after the join */
    } save;
};

/* Wait for the parse cache file (when it is being written), then report it. */
static void save_join(struct loaded *l);

static void loaded_release(struct loaded *l)
{
    save_join(l); /* the writer reads the parsed files */
    if (l->have_src)
        rd_source_release(&l->src);
    l->have_src = 0;
}

/* A copy with every byte that is not part of valid UTF-8 replaced by '?': messages quote
 * file names and contents, and the record (YAML) and JSON logs must stay valid. */
static char *utf8_clean(struct rc_arena *a, const char *s)
{
    size_t n = strlen(s);
    unsigned char *o = (unsigned char *)rc_arena_strndup(a, s, n);

    for (size_t i = 0; i < n;) {
        unsigned char c = o[i];
        size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        int ok = len > 0 && i + len <= n;
        for (size_t k = 1; ok && k < len; k++)
            ok = (o[i + k] & 0xc0) == 0x80;
        if (ok && len == 2)
            ok = c >= 0xc2;
        if (ok && len == 3)
            ok = !(c == 0xe0 && o[i + 1] < 0xa0) && !(c == 0xed && o[i + 1] >= 0xa0);
        if (ok && len == 4)
            ok = c <= 0xf4 && !(c == 0xf0 && o[i + 1] < 0x90) && !(c == 0xf4 && o[i + 1] >= 0x90);
        if (!ok) {
            o[i++] = '?';
            continue;
        }
        i += len;
    }
    return (char *)o;
}

/* Load version `id` of one file alone into *one, through the cache when there is one and not
 * counted against the pass's budget (a check: it must not take the place of a file of the
 * pass). *nparsed grows by the files parsed. RC_OK, or the load's error (nothing to release). */
static int load_alone(struct rd_source *one, const struct rd_file *f, const char *id,
                      struct rd_cache *cache, size_t *nparsed, struct rc_arena *a)
{
    static const unsigned char uncounted = 1;
    struct rd_load_options lo;
    struct rc_err err = RC_ERR_INIT;
    int error;

    memset(one, 0, sizeof(*one));
    memset(&lo, 0, sizeof(lo));
    lo.ids = &id;
    lo.cache = cache;
    lo.uncounted = &uncounted;
    error = rd_source_load_ex(one, f, 1, &lo, a, &err);
    if (error == RC_OK)
        *nparsed += one->nparsed;
    return error;
}

/* Does blob `id` of `path` load alone? */
static int file_loads_alone(const char *path, const char *data, size_t len, const char *id,
                            struct rd_cache *cache, size_t *nparsed, struct rc_arena *a)
{
    struct rd_source one;
    struct rd_file f = {path, data, len};
    int ok;

    if (load_alone(&one, &f, id, cache, nparsed, a) < 0)
        return 0;
    ok = one.nerrors == 0;
    rd_source_release(&one);
    return ok;
}

/* A file of the source, read if it is within the per-file limit; a larger one is refused
 * from its object header, unread. */
static void read_source_file(struct rd_file *f, const char **refused, struct rc_git *g,
                             const struct rc_git_blob *b, struct rc_arena *a)
{
    const struct rd_yaml_limits lim = RD_YAML_LIMITS_INIT;
    struct rc_err err = RC_ERR_INIT;
    char *data = NULL;
    size_t len = 0;
    int error;

    memset(f, 0, sizeof(*f));
    *refused = NULL;
    f->path = b->path;
    error = rc_git_read_blob(&data, &len, g, b->id, lim.max_bytes, a, &err);
    if (error == RC_EINVALID && len > lim.max_bytes) {
        *refused = rc_arena_printf(a,
                                   "file of %zu bytes is larger than the limit of %zu bytes "
                                   "per file (not read)",
                                   len, lim.max_bytes);
        return;
    }
    if (error < 0) {
        *refused = rc_arena_printf(a, "cannot read: %s", err.msg);
        return;
    }
    f->data = data;
    f->len = len;
}

/*
 * Does version `blob` of `path` load alone? RC_OK: yes, and with a shared cache it stays
 * there (*data NULL), without one its bytes are copied into `a`. Each version is read into
 * memory of its own and freed, so a long walk over large versions holds one at a time.
 * RC_EINVALID: it does not (or is larger than a file may be).
 */
static int try_version(const char **data, size_t *len, size_t *nparsed, struct rc_git *g,
                       const char *path, const char *blob, struct rd_cache *cache,
                       struct rc_arena *a, struct rc_err *err)
{
    const struct rd_yaml_limits lim = RD_YAML_LIMITS_INIT;
    struct rc_arena tmp = RC_ARENA_INIT;
    char *d = NULL;
    size_t n = 0;
    int error = RC_OK;

    *data = NULL;
    *len = 0;
    if (rd_cache_refused(cache, blob, path)) {
        /* it loaded, and the pass's budget refused it: its text, for a load that does not
         * count it (rd_load_options.uncounted) */
        error = rc_git_read_blob(&d, &n, g, blob, lim.max_bytes, a, err);
        if (error == RC_EINVALID)
            rc_err_clear(err);
        if (error == RC_OK) {
            *data = d;
            *len = n;
        }
        return error;
    }
    if (!rd_cache_has(cache, blob, path, NULL))
        error = rc_git_read_blob(&d, &n, g, blob, lim.max_bytes, &tmp, err);
    if (error == RC_OK && !file_loads_alone(path, d, n, blob, cache, nparsed, a))
        error = RC_EINVALID;
    if (error == RC_OK && !cache) {
        char *copy = rc_arena_alloc(a, n + 1);
        memcpy(copy, d, n + 1);
        *data = copy;
        *len = n;
    }
    if (error == RC_EINVALID)
        rc_err_clear(err);
    rc_arena_release(&tmp);
    return error;
}

/* The version of `path` a previous pass kept (the memo), or NULL. */
static const char *memo_kept(const struct rc_memo *m, const char *path)
{
    for (size_t i = 0; m && i < m->nkept; i++) {
        if (!strcmp(m->kept[i].path, path))
            return m->kept[i].id;
    }
    return NULL;
}

/*
 * The version of `path` that the deploy branch was built from: starting at `from` (the
 * source commit of the previous record), walk first parents back to the newest version that
 * loads. The walk stops where the file does not exist: a file deleted and later re-added
 * broken has nothing to keep (its objects were removed when it was deleted). Consecutive
 * commits sharing one blob are tested once, and at most MAX_HISTORY_WALK distinct versions
 * are tried: past that, the version a previous pass kept (the memo) is used if it still
 * loads. RC_ENOTFOUND: nothing to keep. Other errors: git I/O.
 */
static int last_good_version(const char **data, size_t *len, char kept_id[41], size_t *nparsed,
                             struct rc_git *g, const char *from, const char *path,
                             const struct rc_memo *memo, struct rd_cache *cache, struct rc_arena *a,
                             struct rc_err *err)
{
    char cur[41], blob[41], tested[41] = "";
    const char *memo_id;
    int versions = 0;
    int error;

    if (!from || !from[0])
        return RC_ENOTFOUND;
    memcpy(cur, from, sizeof(cur));
    for (;;) {
        char parent[41];

        error = rc_git_path_id(blob, g, cur, path, err);
        if (error == RC_ENOTFOUND || error == RC_EINVALID) {
            rc_err_clear(err);
            return RC_ENOTFOUND;
        }
        if (error < 0)
            return error;
        if (strcmp(blob, tested)) {
            if (++versions > MAX_HISTORY_WALK)
                break;
            error = try_version(data, len, nparsed, g, path, blob, cache, a, err);
            if (error == RC_OK) {
                memcpy(kept_id, blob, 41);
                return RC_OK;
            }
            if (error != RC_EINVALID)
                return error;
            memcpy(tested, blob, sizeof(tested));
        }
        error = rc_git_commit_parent(parent, g, cur, err);
        if (error == RC_ENOTFOUND) {
            rc_err_clear(err);
            return RC_ENOTFOUND;
        }
        if (error < 0)
            return error;
        memcpy(cur, parent, sizeof(cur));
    }
    /* the walk's bound: what a previous pass kept, if it still loads */
    memo_id = memo_kept(memo, path);
    if (memo_id && memo_id[0]) {
        error = try_version(data, len, nparsed, g, path, memo_id, cache, a, err);
        if (error == RC_OK) {
            memcpy(kept_id, memo_id, 41);
            return RC_OK;
        }
        if (error == RC_ENOTFOUND)
            rc_err_clear(err); /* gone from the repository: nothing to keep */
        else if (error != RC_EINVALID)
            return error;
    }
    return RC_ENOTFOUND;
}

/* The digest of a listing: "<path>\0<blob id>\n" for each file, in path order. */
static int listing_digest(char out[41], const struct rc_git_blob *b, size_t n, struct rc_err *err)
{
    struct rc_buf text = RC_BUF_INIT;
    int error;

    for (size_t i = 0; i < n; i++) {
        rc_buf_add(&text, b[i].path, strlen(b[i].path) + 1, NULL);
        rc_buf_add(&text, b[i].id, 40, NULL);
        rc_buf_add(&text, "\n", 1, NULL);
    }
    error = rc_git_digest(out, text.ptr, text.len, err);
    rc_buf_release(&text);
    return error;
}

static int cmp_str(const void *x, const void *y)
{
    return strcmp(*(const char *const *)x, *(const char *const *)y);
}

/* Keys of every object the previous record names, sorted: "placed first" for collisions. */
static const char *const *record_keys(size_t *n, const struct rd_record *prev, struct rc_arena *a)
{
    size_t total = 0, w = 0;
    const char **v;

    for (size_t i = 0; i < prev->nunits; i++)
        total += prev->units[i].nobjects;
    v = rc_arena_calloc(a, total + 1, sizeof(*v));
    for (size_t i = 0; i < prev->nunits; i++) {
        for (size_t k = 0; k < prev->units[i].nobjects; k++)
            v[w++] = prev->units[i].objects[k];
    }
    rc_sort(v, w, sizeof(*v), cmp_str);
    *n = w;
    return v;
}

/* rd_load_options.placed_fn: the previous record's object keys, built when asked */
struct placed_arg {
    const struct rd_record *prev;
    struct rc_arena *a;
};

static const char *const *placed_keys(void *arg, size_t *n)
{
    const struct placed_arg *p = arg;

    return record_keys(n, p->prev, p->a);
}

/* Files read ahead and parsed into the cache together (rd_cache_prime), on every core: at
 * most PRIME_BATCH files or PRIME_BATCH_BYTES of text (plus one file) a batch. One batch is
 * parsed in the background while the next is read from git, so two are held at once. */
#define PRIME_BATCH 256
#define PRIME_BATCH_BYTES ((size_t)8 << 20)

struct prime_batch {
    size_t *idx; /* indices into the pass's files */
    size_t n, bytes;
    struct rc_arena tmp; /* their text */
    struct rd_file *f;   /* theirs, as the parse reads them */
    const char **id;
    struct rd_prime_job *job; /* parsing in the background */
};

static int parse_threads(const struct rc_pass_options *o)
{
    long n = o->parse_threads > 0 ? o->parse_threads : sysconf(_SC_NPROCESSORS_ONLN);

    return n < 1 ? 1 : n > RD_PRIME_THREADS_MAX ? RD_PRIME_THREADS_MAX : (int)n;
}

static void prime_batch_init(struct prime_batch *b, struct rc_arena *a)
{
    memset(b, 0, sizeof(*b));
    b->idx = rc_arena_calloc(a, PRIME_BATCH, sizeof(*b->idx));
    b->f = rc_arena_calloc(a, PRIME_BATCH, sizeof(*b->f));
    b->id = rc_arena_calloc(a, PRIME_BATCH, sizeof(*b->id));
}

/* Start parsing the batch on threads of their own. */
static void prime_start(struct prime_batch *b, const struct rd_file *files, const char **ids,
                        struct rd_cache *cache, const struct rc_pass_options *o)
{
    if (b->n == 0)
        return;
    for (size_t k = 0; k < b->n; k++) {
        b->f[k] = files[b->idx[k]];
        b->id[k] = ids[b->idx[k]];
    }
    b->job = rd_cache_prime_start(cache, b->f, b->id, b->n, parse_threads(o));
}

/* Wait for the batch's parse: into the cache (counted against its budget); its text is
 * dropped. */
static void prime_end(struct prime_batch *b, struct rd_file *files, struct rd_cache *cache,
                      size_t *nparsed)
{
    if (b->n == 0)
        return;
    rd_cache_prime_finish(cache, b->job, nparsed);
    b->job = NULL;
    for (size_t k = 0; k < b->n; k++) {
        files[b->idx[k]].data = NULL;
        files[b->idx[k]].len = 0;
    }
    rc_arena_release(&b->tmp);
    b->n = 0;
    b->bytes = 0;
}

/* `batch` (one of the two) is read: the other one's parse is finished first, so that two at
 * most are held, then this one's starts. The other one, empty, is read next. */
static struct prime_batch *prime_next(struct prime_batch batches[2], struct prime_batch *batch,
                                      struct rd_file *files, const char **ids,
                                      struct rd_cache *cache, const struct rc_pass_options *o,
                                      size_t *nparsed)
{
    struct prime_batch *other = batch == &batches[0] ? &batches[1] : &batches[0];

    prime_end(other, files, cache, nparsed);
    prime_start(batch, files, ids, cache, o);
    return other;
}

/* Does version `id` of file f define something the deploy branch was made from: a policy, a
 * Cluster, a Namespace (one no policy places is no unit, yet the cluster directories take it
 * from the source) or an object the previous record names (keys, sorted)? One that does not
 * load alone is taken to. */
static int holds_recorded(const struct rd_file *f, const char *id, const char *const *keys,
                          size_t nkeys, struct rd_cache *cache, size_t *nparsed, struct rc_arena *a)
{
    struct rd_source one;
    int held;

    if (load_alone(&one, f, id, cache, nparsed, a) < 0)
        return 1;
    held = one.nerrors || one.npolicies || one.nclusters;
    for (size_t i = 0; !held && i < one.nobjects; i++) {
        const struct pl_object *o = &one.objects[i];
        held = (!o->ns && !strcmp(o->kind, "Namespace")) ||
               bsearch(&o->key, keys, nkeys, sizeof(*keys), cmp_str) != NULL;
    }
    rd_source_release(&one);
    return held;
}

/* The source's YAML files as listed for the no-op check (memo_says_skip), so that the load
 * does not walk the same tree and hash the same listing again. */
struct listing {
    char source[41]; /* the commit listed; "": none */
    struct rc_git_blob *blobs;
    size_t n;
    char digest[41];
    /* a partial pass's: the files of the whole source, blobs being the ones it loads (the
     * parse cache file is kept for all of them); NULL: blobs are the whole source */
    const struct rc_git_blob *all;
    size_t nall;
};

/* What the deploy tree of commit `from` says of the broken files it was made from
 * (RD_KEPT_FILE): *n entries. None when there is no such file (no file was broken, or an older
 * rightplace made the tree) or it does not read (a warning): every broken file's last good
 * version is then looked for in history. */
static int read_kept(struct rd_kept **kept, size_t *n, struct rc_git *g, const char *from,
                     const struct rc_log *log, struct rc_arena *a, struct rc_err *err)
{
    char *text = NULL;
    size_t len = 0;
    int error;

    *kept = NULL;
    *n = 0;
    if (!from || !from[0])
        return RC_OK;
    error = rc_git_read_file(&text, &len, g, from, RD_KEPT_FILE, a, err);
    if (error == RC_ENOTFOUND || error == RC_EINVALID) {
        rc_err_clear(err);
        return RC_OK;
    }
    if (error < 0)
        return error;
    if (rd_kept_parse(kept, n, text, len, a, err) < 0) {
        if (log)
            rc_log_warn(log, "deploy %.12s: %s (the last good versions are looked for in history)",
                        from, err->msg);
        rc_err_clear(err);
        *kept = NULL;
        *n = 0;
    }
    return RC_OK;
}

/*
 * The version of broken file `path` to keep: the one the deploy tree of the previous pass was
 * made from. Where that tree lists the file (read_kept), its version exactly, or nothing;
 * where it does not, the file was not broken then, and the walk's first step finds the version
 * it loaded (last_good_version). A listed version that no longer loads (another rightplace
 * version's rules) is looked for in history instead.
 */
static int kept_version(const char **data, size_t *len, char kept_id[41], size_t *nparsed,
                        struct rc_git *g, const struct rd_kept *was, const char *from,
                        const char *path, const struct rc_memo *memo, struct rd_cache *cache,
                        struct rc_arena *a, struct rc_err *err)
{
    if (was && !was->id[0])
        return RC_ENOTFOUND;
    if (was) {
        int error = try_version(data, len, nparsed, g, path, was->id, cache, a, err);
        if (error == RC_OK) {
            memcpy(kept_id, was->id, 41);
            return RC_OK;
        }
        if (error != RC_EINVALID && error != RC_ENOTFOUND)
            return error;
        rc_err_clear(err);
    }
    return last_good_version(data, len, kept_id, nparsed, g, from, path, memo, cache, a, err);
}

static int cmp_file_path(const void *key, const void *x)
{
    return strcmp(key, ((const struct rd_file *)x)->path);
}

/* The index of `path` in files (n, sorted by path as rc_git_list_yaml lists them), or n. */
static size_t find_file(const struct rd_file *files, size_t n, const char *path)
{
    const struct rd_file *f = n ? bsearch(path, files, n, sizeof(*files), cmp_file_path) : NULL;

    return f ? (size_t)(f - files) : n;
}

/* rc_pcache_take of the version of each broken file of out->src that the deploy tree names
 * (out->was) or, for one it does not name, of the file's blob at `from`: where the walk for
 * its last good version starts. Returns the entries taken. */
static size_t take_kept(struct rc_pcache *pfile, struct rd_cache *cache,
                        const struct rd_file *files, size_t nfiles, const struct loaded *out,
                        const char *from, struct rc_git *g, const struct rc_pass_options *o,
                        struct rc_arena *a)
{
    struct rc_git_blob *want = rc_arena_calloc(a, out->src.nerrors + 1, sizeof(*want));
    size_t n = 0;

    for (size_t e = 0; e < out->src.nerrors; e++) {
        const char *path = out->src.errors[e].path;
        const struct rd_kept *was = rd_kept_find(out->was, out->nwas, path);
        struct rc_err err = RC_ERR_INIT;

        if (find_file(files, nfiles, path) == nfiles)
            continue;
        if (was && was->id[0])
            memcpy(want[n].id, was->id, 41);
        else if (was || !from || !from[0] || rc_git_path_id(want[n].id, g, from, path, &err) < 0)
            continue;
        want[n++].path = (char *)path;
    }
    return rc_pcache_take(pfile, cache, want, n, parse_threads(o), 1, o->log);
}

static void save_run(void *arg, size_t k)
{
    struct pcache_save *sv = arg;
    double t0 = mono_ms();

    (void)k;
    sv->error = rc_pcache_save(sv->pfile, sv->cache, sv->blobs, sv->nblobs, sv->budget, &sv->err);
    sv->ms = mono_ms() - t0;
}

static void save_report(struct loaded *l)
{
    struct pcache_save *sv = &l->save;

    if (sv->error < 0 && sv->log)
        rc_log_warn(sv->log, "parse cache: %s", sv->err.msg);
    if (sv->log)
        rc_log_debug(sv->log,
                     "load: %zu files parsed, %zu taken from the parse cache (%.0f ms), %zu bytes "
                     "%s it (%.0f ms)",
                     l->nparsed, l->nfrom_file, l->ms_from_file, rc_pcache_written(sv->pfile),
                     rc_pcache_rewritten(sv->pfile) ? "written to" : "appended to", sv->ms);
}

static void save_join(struct loaded *l)
{
    if (!l->save.started)
        return;
    rc_threads_join(&l->save.bg);
    l->save.started = 0;
    save_report(l);
}

/* What this pass parsed, for the next process (only work is saved or lost): the files of the
 * pass and the versions kept in place of the broken ones, which a pass while they stay broken
 * takes again (take_kept). In the background (`background`, a pass that loaded without
 * errors): the writer only reads the parsed files, which nothing changes until the pass
 * releases them (loaded_release joins it first), so it runs beside place and render; the
 * pass joins it before it ends (save_join). Otherwise the load goes on to reload files into
 * the cache, and the file is written first. */
static void save_parse_cache(struct loaded *out, struct rc_pcache *pfile, struct rd_cache *cache,
                             const struct rc_git_blob *blobs, size_t nblobs, size_t budget,
                             int background, const struct rc_pass_options *o, struct rc_arena *a)
{
    struct pcache_save *sv = &out->save;
    const struct rc_git_blob *all = blobs;

    if (!pfile)
        return;
    if (out->nkept) {
        struct rc_git_blob *v = rc_arena_calloc(a, nblobs + out->nkept + 1, sizeof(*v));
        if (nblobs)
            memcpy(v, blobs, nblobs * sizeof(*v));
        for (size_t k = 0; k < out->nkept; k++) {
            v[nblobs + k].path = (char *)out->kept[k].path;
            memcpy(v[nblobs + k].id, out->kept[k].id, 41);
        }
        all = v;
    }
    save_join(out);
    memset(sv, 0, sizeof(*sv));
    sv->pfile = pfile;
    sv->cache = cache;
    sv->blobs = all;
    sv->nblobs = nblobs + out->nkept;
    sv->budget = budget;
    sv->err = (struct rc_err)RC_ERR_INIT;
    sv->log = o->log;
    if (o->dry_run) { /* plan, explain, status, diff: the caches are read, not written */
        save_report(out);
        return;
    }
    if (background) {
        rc_threads_start(&sv->bg, save_run, sv, 1);
        sv->started = 1;
        return;
    }
    save_run(sv, 0);
    save_report(out);
}

static int cmp_kept(const void *x, const void *y)
{
    return strcmp(((const struct rd_kept *)x)->path, ((const struct rd_kept *)y)->path);
}

/* Did the last record list file error e (then it is counted, not warned of again)? */
static int error_known(struct loaded *out, const struct rd_file_error *e)
{
    if (!rd_record_file_error_listed(out->known, out->nknown, e->path, e->msg))
        return 0;
    out->nknown_errors++;
    return 1;
}

static int load_source(struct loaded *out, struct rc_git *g, const char *source,
                       const struct rd_record *prev, const char *kept_from,
                       const struct listing *listed, const struct rc_pass_options *o,
                       struct rc_arena *a, struct rc_err *err)
{
    const struct rc_memo *memo = o->cache ? rc_cache_memo(o->cache) : NULL;
    struct rd_cache *cache = o->cache ? rc_cache_parsed(o->cache) : NULL;
    struct rc_pcache *pfile = cache ? rc_cache_parse_file(o->cache) : NULL;
    const char *prev_source = prev->source;
    size_t budget = o->max_source_bytes ? o->max_source_bytes : RC_PASS_SOURCE_BYTES_DEFAULT;
    size_t held = 0;
    const char *over;
    struct rc_git_blob *blobs = NULL;
    const struct rc_git_blob *keep_blobs;
    size_t nkeep_blobs;
    struct rd_file *files;
    const char **refused, **ids;
    unsigned char *keep, *uncounted, *cached;
    size_t nlack = 0;
    struct rd_load_options lo;
    struct placed_arg pa;
    size_t nblobs = 0;
    size_t replaced = 0;
    struct prime_batch batches[2], *batch = &batches[0];
    const uint64_t *known = out->known; /* the caller's: kept */
    size_t nknown = out->nknown;
    int error;

    memset(out, 0, sizeof(*out));
    out->known = known;
    out->nknown = nknown;
    error = read_kept(&out->was, &out->nwas, g, kept_from, o->log, a, err);
    if (error < 0)
        return error;
    memset(&lo, 0, sizeof(lo));
    prime_batch_init(&batches[0], a);
    prime_batch_init(&batches[1], a);
    if (listed && listed->source[0] && !strcmp(listed->source, source)) {
        blobs = listed->blobs;
        nblobs = listed->n;
        memcpy(out->digest, listed->digest, sizeof(listed->digest));
    } else {
        error = rc_git_list_yaml(&blobs, &nblobs, g, source, o->paths, o->npaths, a, err);
        if (error < 0)
            return error;
        error = listing_digest(out->digest, blobs, nblobs, err);
        if (error < 0)
            return error;
    }
    out->blobs = blobs;
    out->nblobs = nblobs;
    /* the files whose entries the parse cache file keeps: a partial pass's whole source */
    keep_blobs = listed && listed->all ? listed->all : blobs;
    nkeep_blobs = listed && listed->all ? listed->nall : nblobs;
    /* libgit2's object cache holds what a pass of this source reads, not every tree the
     * process ever read (rc_git.h) */
    rc_git_cache_fit(nblobs);
    files = rc_arena_calloc(a, nblobs + 1, sizeof(*files));
    refused = rc_arena_calloc(a, nblobs + 1, sizeof(*refused));
    ids = rc_arena_calloc(a, nblobs + 1, sizeof(*ids));
    keep = rc_arena_calloc(a, nblobs + 1, 1);
    uncounted = rc_arena_calloc(a, nblobs + 1, 1);
    cached = rc_arena_calloc(a, nblobs + 1, 1);
    /* Memory is bounded by what the pass holds parsed: past the budget, the files that take
     * most are refused, each alone and saying which limit to raise (rd_cache_limit). */
    over = rc_arena_printf(a,
                           "the source takes more than %zu MiB of memory parsed, the limit of "
                           "one pass, and this file is among its largest (raise it with "
                           "--max-source-mib or RIGHTPLACE_MAX_SOURCE_MIB)",
                           budget >> 20);
    if (cache)
        rd_cache_limit(cache, budget, over);
    /* what the cache in memory holds, one lookup a file: nothing leaves it during the pass
     * (a file the budget refuses keeps its entry, as its refusal) */
    for (size_t i = 0; cache && i < nblobs; i++) {
        cached[i] = (unsigned char)rd_cache_has(cache, blobs[i].id, blobs[i].path, NULL);
        nlack += !cached[i];
    }
    if (pfile) {
        /* parsed by an earlier process: taken from the state directory, on every core, not
         * read from git; what is left is read and parsed below */
        double t0 = mono_ms();
        rc_pcache_begin(pfile, o->log);
        /* the process's last pass renders few of what it takes: their packed manifests stay
         * in the file until then (rd_import.payloads) */
        rc_pcache_leave_payloads(pfile, o->last_pass);
        if (nlack) {
            struct rc_git_blob *lack = blobs;
            if (nlack < nblobs) {
                size_t k = 0;
                lack = rc_arena_calloc(a, nlack, sizeof(*lack));
                for (size_t i = 0; i < nblobs; i++) {
                    if (!cached[i])
                        lack[k++] = blobs[i];
                }
            }
            out->nfrom_file =
                rc_pcache_take(pfile, cache, lack, nlack, parse_threads(o), 0, o->log);
            for (size_t i = 0; out->nfrom_file && i < nblobs; i++) {
                if (!cached[i])
                    cached[i] =
                        (unsigned char)rd_cache_has(cache, blobs[i].id, blobs[i].path, NULL);
            }
        }
        out->ms_from_file += mono_ms() - t0;
    }
    for (size_t i = 0; i < nblobs; i++) {
        size_t size = 0;
        ids[i] = blobs[i].id;
        keep[i] = 1;
        if (cached[i]) {
            /* parsed by an earlier pass: not even read */
            files[i].path = blobs[i].path;
            continue;
        }
        if (cache) {
            /* parsed into the cache now, a batch at a time on every core, the text dropped
             * after its batch: the pass never holds the whole source's text */
            read_source_file(&files[i], &refused[i], g, &blobs[i], &batch->tmp);
            if (refused[i]) {
                refused[i] = rc_arena_strdup(a, refused[i]);
                files[i].data = NULL;
                files[i].len = 0;
            } else {
                batch->idx[batch->n++] = i;
                batch->bytes += files[i].len;
            }
            if (batch->n == PRIME_BATCH || batch->bytes >= PRIME_BATCH_BYTES)
                batch = prime_next(batches, batch, files, ids, cache, o, &out->nparsed);
            continue;
        }
        /* Without a cache (library use: the command line always has one), the load parses
         * text the pass holds: that text is bounded too, in path order. */
        read_source_file(&files[i], &refused[i], g, &blobs[i], a);
        size = files[i].len;
        if (!refused[i] && size > budget - held) {
            refused[i] = rc_arena_printf(
                a,
                "the source files up to this one hold more than %zu MiB of YAML, the limit of "
                "one pass (raise it with --max-source-mib or RIGHTPLACE_MAX_SOURCE_MIB)",
                budget >> 20);
            files[i].data = NULL;
            files[i].len = 0;
            size = 0;
        }
        held += size;
    }
    {
        struct prime_batch *last = batch;
        prime_next(batches, batch, files, ids, cache, o, &out->nparsed);
        prime_end(last, files, cache, &out->nparsed);
    }
    lo.refused = refused;
    lo.ids = ids;
    lo.cache = cache;
    pa.prev = prev;
    pa.a = a;
    lo.placed_fn = placed_keys;
    lo.placed_arg = &pa;
    lo.max_bytes = budget;
    lo.over_budget = over;
    error = rd_source_load_ex(&out->src, files, nblobs, &lo, a, err);
    if (error < 0)
        return error;
    out->nparsed += out->src.nparsed;
    out->have_src = 1;
    if (pfile && out->src.nerrors) {
        /* the versions to keep of the broken files, as far as they are known without a walk,
         * taken from the state directory together (before it is written again) and not
         * counted against the budget: a commit that breaks many files parses none of them */
        double t0 = mono_ms();
        out->nfrom_file += take_kept(pfile, cache, files, nblobs, out, prev_source, g, o, a);
        out->ms_from_file += mono_ms() - t0;
    }
    if (out->src.nerrors == 0) {
        save_parse_cache(out, pfile, cache, keep_blobs, nkeep_blobs, budget, 1, o, a);
        goto conflicts;
    }

    /* Keep the errors as found, then swap each broken file for its last good version. */
    out->nerrors = out->src.nerrors;
    out->errors = rc_arena_calloc(a, out->nerrors + out->src.nconflicts + 1, sizeof(*out->errors));
    out->kept = rc_arena_calloc(a, out->nerrors, sizeof(*out->kept));
    out->broken = rc_arena_calloc(a, out->nerrors + 1, sizeof(*out->broken));
    for (size_t e = 0; e < out->nerrors; e++) {
        const char *d = NULL;
        size_t n = 0, i = find_file(files, nblobs, out->src.errors[e].path);
        char kept_id[41];
        int found;

        out->errors[e].path = utf8_clean(a, out->src.errors[e].path);
        out->errors[e].msg = utf8_clean(a, out->src.errors[e].msg);
        if (i == nblobs)
            continue;
        found = kept_version(&d, &n, kept_id, &out->nparsed, g,
                             rd_kept_find(out->was, out->nwas, files[i].path), prev_source,
                             files[i].path, memo, cache, a, err);
        if (found < 0 && found != RC_ENOTFOUND)
            return found;
        out->broken[out->nbroken].path = files[i].path;
        if (found == RC_OK)
            memcpy(out->broken[out->nbroken].id, kept_id, 41);
        out->nbroken++;
        if (found == RC_ENOTFOUND) {
            /* nothing to keep: left out of the reload, so that it cannot break another
             * file again (a duplicate breaks both sides); a file refused unread never
             * broke another one, so it alone needs no reload */
            if (!refused[i])
                replaced++;
            keep[i] = 0;
            out->unresolved++;
        }
        if (found == RC_OK) {
            files[i].data = d;
            files[i].len = n;
            refused[i] = NULL;
            ids[i] = rc_arena_strdup(a, kept_id);
            uncounted[i] = 1;
            out->kept[out->nkept].path = files[i].path;
            memcpy(out->kept[out->nkept++].id, kept_id, 41);
            replaced++;
            if (o->log && !error_known(out, &out->errors[e])) {
                struct rc_log_field f[] = {RC_LOG_STR("file", out->errors[e].path)};
                rc_log_kv(o->log, RC_LOG_WARN, f, 1,
                          "%s (placements of its objects are kept, from version %.12s of the file)",
                          out->errors[e].msg, kept_id);
            }
        } else if (o->log && !error_known(out, &out->errors[e])) {
            struct rc_log_field f[] = {RC_LOG_STR("file", out->errors[e].path)};
            rc_log_kv(o->log, RC_LOG_WARN, f, 1, "%s (not loaded)", out->errors[e].msg);
        }
    }
    if (out->nbroken > 1) {
        size_t w = 1;
        rc_sort(out->broken, out->nbroken, sizeof(*out->broken), cmp_kept);
        for (size_t k = 1; k < out->nbroken; k++)
            if (strcmp(out->broken[k].path, out->broken[w - 1].path))
                out->broken[w++] = out->broken[k];
        out->nbroken = w;
    }
    save_parse_cache(out, pfile, cache, keep_blobs, nkeep_blobs, budget, 0, o, a);
    if (replaced == 0)
        goto conflicts;
    rd_source_release(&out->src);
    out->have_src = 0;
    memset(&out->src, 0, sizeof(out->src));
    {
        size_t w = 0;
        for (size_t i = 0; i < nblobs; i++) {
            if (keep[i]) {
                refused[w] = refused[i];
                uncounted[w] = uncounted[i];
                ids[w] = ids[i];
                files[w++] = files[i];
            }
        }
        nblobs = w;
    }
    lo.uncounted = uncounted;
    error = rd_source_load_ex(&out->src, files, nblobs, &lo, a, err);
    if (error < 0)
        return error;
    out->nparsed += out->src.nparsed;
    out->have_src = 1;
    /* A kept old version may clash with a file that loaded before (an object moved from the
     * broken file to another one), or with another kept version (D written by an older
     * rightplace, without RD_KEPT_FILE: a committed copy of an object loads alone, so the walk
     * takes it as its own last good version, and so is the original). Either side dropping
     * would remove placed objects, so the pass stops here and commits nothing. Only a kept
     * version that holds nothing the deploy branch was made from (a file never placed, refused
     * again: holds_recorded) stays out, as its error says, and is listed as kept of nothing. */
    {
        const char *const *keys = NULL;
        size_t nkeys = 0;

        for (size_t e = 0; e < out->src.nerrors; e++) {
            const char *path = out->src.errors[e].path;
            size_t i = find_file(files, nblobs, path);
            /* broken before the reload (out->broken is this function's: writable) */
            struct rd_kept *k = (struct rd_kept *)rd_kept_find(out->broken, out->nbroken, path);
            if (k) {
                if (!keys)
                    keys = record_keys(&nkeys, prev, a);
                if (i < nblobs &&
                    !holds_recorded(&files[i], ids[i], keys, nkeys, cache, &out->nparsed, a)) {
                    k->id[0] = '\0'; /* left out: the tree is made from nothing of it */
                    continue;
                }
            }
            return rc_err_set(err, RC_EINVALID,
                              "%s (while keeping the last good version of a broken file; "
                              "fix the broken file)",
                              out->src.errors[e].msg);
        }
    }
conflicts:
    /* Objects refused alone (colliding output paths): reported with the broken files, but
     * their files are not replaced. */
    if (out->src.nconflicts) {
        struct rd_file_error *all =
            rc_arena_calloc(a, out->nerrors + out->src.nconflicts + 1, sizeof(*all));
        if (out->nerrors)
            memcpy(all, out->errors, out->nerrors * sizeof(*all));
        for (size_t k = 0; k < out->src.nconflicts; k++) {
            all[out->nerrors + k].path = utf8_clean(a, out->src.conflicts[k].path);
            all[out->nerrors + k].msg = utf8_clean(a, out->src.conflicts[k].msg);
            if (o->log && !error_known(out, &all[out->nerrors + k])) {
                struct rc_log_field f[] = {RC_LOG_STR("file", all[out->nerrors + k].path)};
                rc_log_kv(o->log, RC_LOG_WARN, f, 1, "%s (the object is not loaded)",
                          all[out->nerrors + k].msg);
            }
        }
        out->errors = all;
        out->nerrors += out->src.nconflicts;
    }
    return RC_OK;
}

/* ==== Previous record ==== */

/* The source commit a deploy tree was made from: its RD_SOURCE_FILE, else what its record
 * names (a record written before that file existed). rec->source gets it ("" when neither
 * does). A file that is not one commit id (a hand edit) counts as absent, with a warning: the
 * pass then renders everything, and writes the file again. */
static int record_source(struct rd_record *rec, struct rc_git *g, const char *deploy,
                         const struct rc_log *log, struct rc_arena *a, struct rc_err *err)
{
    char *text = NULL, id[41];
    size_t len = 0, n = 0;
    int error = rc_git_file_id(id, g, deploy, RD_SOURCE_FILE, err);

    if (error == RC_ENOTFOUND) {
        rc_err_clear(err);
        if (!rec->source)
            rec->source = "";
        return RC_OK;
    }
    if (error == RC_OK)
        error = rc_git_read_blob(&text, &len, g, id, 64, a, err);
    if (error == RC_EINVALID) { /* not a regular file, or larger than any commit id */
        rc_err_clear(err);
        len = 0;
    } else if (error < 0) {
        return error;
    }
    n = len && text[len - 1] == '\n' ? len - 1 : len;
    if (!rc_is_object_id(text, n)) {
        if (log)
            rc_log_msg(log, RC_LOG_WARN, "deploy commit %.12s: %s is not a commit id (ignored)",
                       deploy, RD_SOURCE_FILE);
        rec->source = "";
        return RC_OK;
    }
    rec->source = rc_arena_strndup(a, text, 40);
    return RC_OK;
}

/* A record's shard, by the blob id its header names (rd_record_read). */
static int record_blob(void *payload, const char *id, size_t max, const char **text, size_t *len,
                       struct rc_arena *a, struct rc_err *err)
{
    char *t = NULL;
    int error = rc_git_read_blob(&t, len, payload, id, max, a, err);

    *text = t;
    return error;
}

/* A record's bytes read: in one file, or its header, whose shards are read by id; layout (may
 * be NULL) gets which. */
static int record_read(struct rd_record *rec, struct rd_record_layout *layout, const char *text,
                       size_t len, struct rc_git *g, struct rc_arena *a, struct rc_err *err)
{
    return rd_record_read(rec, text, len, record_blob, g, layout, a, err);
}

/* The git blob id of bytes, for the header of a record in shards (rd_render_options). */
static int record_blob_id(char out[41], const void *data, size_t len)
{
    struct rc_err err = RC_ERR_INIT;

    return rc_git_digest(out, data, len, &err);
}

static int read_record(struct rd_record *rec, struct rd_record_layout *layout, struct rc_git *g,
                       const char *deploy, struct rc_arena *a, struct rc_err *err)
{
    char *text = NULL;
    size_t len = 0;
    int error;

    memset(rec, 0, sizeof(*rec));
    if (layout)
        memset(layout, 0, sizeof(*layout));
    if (!deploy || !deploy[0])
        return RC_OK;
    error = rc_git_read_file(&text, &len, g, deploy, RECORD_PATH, a, err);
    if (error == RC_ENOTFOUND) {
        rc_err_clear(err);
        return RC_OK;
    }
    if (error < 0)
        return error;
    error = record_read(rec, layout, text, len, g, a, err);
    if (error < 0)
        return rc_err_prefix(err, "deploy commit %.12s: %s: ", deploy, RECORD_PATH);
    return record_source(rec, g, deploy, NULL, a, err);
}

/* The deploy head's placements.yaml as this pass knows it: its blob id, the bytes when this
 * pass read them (diff_tree compares the new record with them instead of reading the blob
 * again), and its source line (rc_rcache.h) when known. */
struct known_line {
    char blob[41];    /* "" when none */
    const char *text; /* NULL: not read */
    size_t len;
    int known; /* line is the blob's (line.have 0: it has none); 0: not known */
    struct rc_rcache_line line;
};

static int split_record(const char *p, size_t len, size_t *head, const char **tail, size_t *tlen);

/* The source line of a placements.yaml (the bytes from the newline before "source: " to the
 * next newline), pointing into text; none when it has no such line. */
static void record_source_line(struct rc_rcache_line *out, const char *text, size_t len)
{
    size_t head, tlen;
    const char *tail;

    memset(out, 0, sizeof(*out));
    if (text && split_record(text, len, &head, &tail, &tlen)) {
        out->have = 1;
        out->text = text + head;
        out->len = (size_t)(tail - (text + head));
    }
}

/* The record of kl->blob from the record cache file, with the writer's memo it was written
 * with unless this process has that memo already (loop mode): 1 when the file holds it. */
static int record_from_file(struct rd_record *rec, struct rc_rcache *rfile, struct rc_cache *cache,
                            struct known_line *kl, const struct rc_log *log, struct rc_arena *a)
{
    struct rd_record_memo *memo = rc_cache_record_memo(cache);
    int memo_read = 0;

    if (!strcmp(rc_cache_memo_blob(cache), kl->blob))
        memo = NULL;
    if (!rc_rcache_load(rfile, rec, &kl->line, memo, &memo_read, kl->blob, a, log))
        return 0;
    if (memo_read)
        rc_cache_set_memo_blob(cache, kl->blob);
    return 1;
}

/* The deploy head's placements.yaml, parsed, as cheaply as it can be had (its source commit
 * aside: prev_record). With a cache (loop mode) the record
 * the last pass read or wrote is used again when the head's placements.yaml is still that
 * blob (rc_cache.h: the blob id names the bytes, so this is the record a read would give);
 * else the record cache file (rc_rcache.h, `--once`) may hold it. A record read is kept in
 * memory for the next pass unless this is the last (a copy nobody would read). *nread counts
 * the units read from the file, 0 when it was not read; *cached says the record came from
 * the record cache file. kl gets the blob id ("" without a record), the bytes read, and,
 * when known, its source line, for the diff and for the record cache file. */
static int prev_record_blob(struct rd_record *rec, size_t *nread, size_t *nbytes, int *cached,
                            struct known_line *kl, struct rc_git *g, struct rc_cache *cache,
                            int last_pass, const char *deploy, const struct rc_log *log,
                            struct rc_arena *a, struct rc_err *err)
{
    struct rc_rcache *rfile = rc_cache_record_file(cache);
    const struct rd_record *kept;
    char *text = NULL;
    size_t len = 0;
    int error;

    *nread = 0;
    *cached = 0;
    memset(kl, 0, sizeof(*kl));
    memset(rec, 0, sizeof(*rec));
    if (!deploy || !deploy[0])
        return RC_OK;
    error = rc_git_file_id(kl->blob, g, deploy, RECORD_PATH, err);
    if (error == RC_ENOTFOUND) {
        rc_err_clear(err);
        kl->blob[0] = '\0';
        return RC_OK;
    }
    if (error < 0)
        return error;
    kept = cache ? rc_cache_record(cache, kl->blob) : NULL;
    if (kept) {
        const char *data = rc_cache_record_text(cache, kl->blob, &len);
        *rec = *kept;
        kl->known = data != NULL;
        record_source_line(&kl->line, data, len);
        return RC_OK;
    }
    if (rfile && record_from_file(rec, rfile, cache, kl, log, a)) {
        *cached = 1;
        kl->known = 1;
        if (!last_pass) /* `--once`: no next pass in this process */
            rc_cache_set_record(cache, kl->blob, rec, NULL, 0);
        return RC_OK;
    }
    error = rc_git_read_blob(&text, &len, g, kl->blob, RD_RECORD_MAX_BYTES, a, err);
    if (error == RC_OK) {
        *nbytes += len;
        error = record_read(rec, NULL, text, len, g, a, err);
    }
    if (error < 0)
        return rc_err_prefix(err, "deploy commit %.12s: %s: ", deploy, RECORD_PATH);
    *nread = rec->nunits;
    kl->text = text;
    kl->len = len;
    kl->known = 1;
    record_source_line(&kl->line, text, len);
    if (cache && !last_pass)
        rc_cache_set_record(cache, kl->blob, rec, text, len);
    return RC_OK;
}

/* The record the pass starts from (prev_record_blob), with the source commit of the deploy
 * head (record_source): a record's blob names no source, and the same blob serves every
 * source commit whose decisions it records. */
static int prev_record(struct rd_record *rec, size_t *nread, size_t *nbytes, int *cached,
                       struct known_line *kl, struct rc_git *g, struct rc_cache *cache,
                       int last_pass, const char *deploy, const struct rc_log *log,
                       struct rc_arena *a, struct rc_err *err)
{
    int error =
        prev_record_blob(rec, nread, nbytes, cached, kl, g, cache, last_pass, deploy, log, a, err);

    if (error == RC_OK && kl->blob[0])
        error = record_source(rec, g, deploy, log, a, err);
    return error;
}

/* ==== Diffing the rendered tree against a commit ==== */

/* Whether deploy path `path` (under clusters/) is a cluster's Namespace file (clusters/<c>/
 * _cluster/namespace.<name>.yaml) whose Namespace the source as loaded does not define: it is
 * written minimal, without what the repository's object said. */
static int cmp_object_key(const void *key, const void *x)
{
    return strcmp(key, ((const struct pl_object *)x)->key);
}

static int lost_namespace(const struct rd_source *src, const char *path, struct rc_arena *a)
{
    const char *c = strchr(path + 9, '/'), *name, *end, *key;

    if (!c || strncmp(c, "/_cluster/namespace.", 20))
        return 0;
    name = c + 20;
    end = strstr(name, ".yaml");
    if (!end || end[5] || end == name)
        return 0;
    key = rc_arena_printf(a, "Namespace/%.*s", (int)(end - name), name);
    return !src->nobjects ||
           !bsearch(key, src->objects, src->nobjects, sizeof(*src->objects), cmp_object_key);
}

/* While a source file that did not load has no earlier version, nothing it may hold leaves
 * the clusters: the first change that would remove a file of a cluster's directory, else the
 * first that would write a cluster's Namespace minimal where the repository defined it (*why
 * says which); NULL: none. */
static const struct rc_path_change *unresolved_loss(const struct rc_path_change *changes, size_t n,
                                                    const struct rd_source *src, const char **why,
                                                    struct rc_arena *a)
{
    for (size_t i = 0; i < n; i++) {
        if (changes[i].op == 'D' && !strncmp(changes[i].path, "clusters/", 9)) {
            *why = "leave the deploy branch";
            return &changes[i];
        }
    }
    for (size_t i = 0; i < n; i++) {
        if (changes[i].op == 'M' && !strncmp(changes[i].path, "clusters/", 9) &&
            lost_namespace(src, changes[i].path, a)) {
            *why = "lose the Namespace the repository defined";
            return &changes[i];
        }
    }
    return NULL;
}

int rc_pass_path_commits(const char *path)
{
    return strcmp(path, CAPACITY_PATH) && strcmp(path, RD_SOURCE_FILE);
}

/* Whether deploy path p is a file of the record: placements.yaml or one of its shards. */
static int record_path(const char *p)
{
    return !strcmp(p, RECORD_PATH) || !strncmp(p, RD_RECORD_SHARD_DIR, strlen(RD_RECORD_SHARD_DIR));
}

static int managed_path(const char *p)
{
    return !strncmp(p, "clusters/", 9) || record_path(p) || !strncmp(p, ".rightplace/", 12);
}

static int cmp_change(const void *x, const void *y)
{
    const struct rc_path_change *a = x, *b = y;

    return strcmp(a->path, b->path);
}

/* Where a record of the older form has its source line: in its header, after apiVersion and
 * kind. The search stops there: a record of today's form has none, and a search of its 10 MB
 * for one would cost every pass that much. */
#define RECORD_HEAD_MAX 1024

/* Split a record around its "source: <id>" line (within its first RECORD_HEAD_MAX bytes): head
 * before it, tail from its newline. */
static int split_record(const char *p, size_t len, size_t *head, const char **tail, size_t *tlen)
{
    const char *src = memmem(p, len < RECORD_HEAD_MAX ? len : RECORD_HEAD_MAX, "\nsource: ", 9);
    const char *eol;

    if (!src)
        return 0;
    eol = memchr(src + 1, '\n', len - (size_t)(src + 1 - p));
    if (!eol)
        return 0;
    *head = (size_t)(src - p);
    *tail = eol;
    *tlen = len - (size_t)(eol - p);
    return 1;
}

/* a's bytes with its source line cut out equal b's (which has none) */
static int same_but_line(const char *a, size_t alen, const char *b, size_t blen)
{
    size_t ah, at;
    const char *ap;

    if (!split_record(a, alen, &ah, &ap, &at))
        return 0;
    return blen == ah + at && !memcmp(a, b, ah) && !memcmp(b + ah, ap, at);
}

/* Equal content; for placements.yaml, equal but for the source commit it names, which only a
 * record written before RD_SOURCE_FILE existed has: an older deploy head is not rewritten for
 * that line alone, and a source commit that changes no decision (a README edit) makes no
 * deploy commit. */
static int same_content(const char *path, const char *a, size_t alen, const char *b, size_t blen)
{
    size_t ah, bh, at, bt;
    const char *ap, *bp;

    if (alen == blen && !memcmp(a, b, alen))
        return 1;
    if (strcmp(path, RECORD_PATH))
        return 0;
    if (split_record(a, alen, &ah, &ap, &at) && split_record(b, blen, &bh, &bp, &bt))
        return ah == bh && !memcmp(a, b, ah) && at == bt && !memcmp(ap, bp, at);
    return same_but_line(a, alen, b, blen) || same_but_line(b, blen, a, alen);
}

/* Whether placements.yaml file f equals blob old_id but for its source line, told from the
 * blob's source line alone (kl), without reading the blob. When neither has a source line
 * (records written since RD_SOURCE_FILE), f is the blob exactly when its id is old_id: a
 * length other than the blob's (from its header) says no without hashing f (10 MB at 10,000
 * units; f is hashed once, as it is written), else id gets f's blob id (hashed here, not
 * again when written). When both have one,
 * f with the blob's line in place of its own is the blob exactly when their blob ids are
 * equal (split_record cuts both at the same first "\nsource: "). *same: 1 or 0, or -1 when
 * that is not known here (kl does not know old_id, or one record has a source line and the
 * other none). */
static int same_by_line(int *same, char id[41], struct rc_git *g, const struct known_line *kl,
                        const char *old_id, const struct rd_tree_file *f, size_t *nhashed,
                        struct rc_err *err)
{
    size_t head, tlen, had = 0;
    const char *tail;
    char *joined, jid[41];
    int error, fline;

    *same = -1;
    if (!kl || !kl->known || !kl->blob[0] || strcmp(kl->blob, old_id) || !f->data)
        return RC_OK;
    fline = split_record(f->data, f->len, &head, &tail, &tlen);
    if (!kl->line.have && !fline) {
        if (rc_git_blob_size(&had, g, old_id, err) == RC_OK && had != f->len) {
            *same = 0;
            return RC_OK;
        }
        rc_err_clear(err); /* what the header did not tell, the ids do */
        if (nhashed)
            *nhashed += f->len;
        error = rc_git_digest(id, f->data, f->len, err);
        if (error < 0)
            return error;
        *same = !strcmp(id, old_id);
        return RC_OK;
    }
    if (!kl->line.have || !fline)
        return RC_OK; /* the caller compares the bytes */
    joined = rc_xmalloc(head + kl->line.len + tlen + 1);
    memcpy(joined, f->data, head);
    memcpy(joined + head, kl->line.text, kl->line.len);
    memcpy(joined + head + kl->line.len, tail, tlen);
    if (nhashed)
        *nhashed += head + kl->line.len + tlen;
    error = rc_git_digest(jid, joined, head + kl->line.len + tlen, err);
    free(joined);
    if (error < 0)
        return error;
    *same = !strcmp(jid, old_id);
    if (*same && kl->line.len == (size_t)(tail - (f->data + head)) &&
        !memcmp(kl->line.text, f->data + head, kl->line.len))
        memcpy(id, old_id, 41); /* the lines are equal too: the very blob */
    return RC_OK;
}

/* The bytes of placements.yaml blob o when this pass has them without reading it: those it
 * read, or (loop mode) those of the blob the last pass read or wrote, kept by its id. */
static const char *record_bytes(size_t *len, struct rc_cache *cache, const struct known_line *kl,
                                const struct rc_git_blob *o)
{
    if (kl && kl->text && !strcmp(kl->blob, o->id)) {
        *len = kl->len;
        return kl->text;
    }
    return rc_cache_record_text(cache, o->id, len);
}

/* Whether comparing the new placements.yaml with blob o costs no more than writing it: its
 * bytes are at hand (record_bytes), or its id tells (same_by_line on a record without a
 * source line, which hashes the new record once, as writing it would). */
static int record_cheap(struct rc_cache *cache, const struct known_line *kl,
                        const struct rc_git_blob *o)
{
    size_t len;

    if (record_bytes(&len, cache, kl, o))
        return 1;
    return kl && kl->known && !kl->line.have && !strcmp(kl->blob, o->id);
}

/* Whether the new placements.yaml f is the old blob o but for its source line
 * (same_content; counted in *ncompared), and id gets o's id when f is that very blob (or f's
 * own id when same_by_line hashed it): compared with the bytes at hand (record_bytes); else,
 * `--once`, told from what the record cache file kept of the blob (same_by_line); else the
 * blob is read (counted in *nread). */
static int record_same(int *same, char id[41], struct rc_git *g, struct rc_cache *cache,
                       const struct known_line *kl, size_t *nread, size_t *ncompared,
                       size_t *nhashed, const struct rc_git_blob *o, const struct rd_tree_file *f,
                       struct rc_arena *a, struct rc_err *err)
{
    const char *data;
    size_t len = 0;
    int known = -1, error;

    if (ncompared)
        (*ncompared)++;
    data = record_bytes(&len, cache, kl, o);
    if (!data) {
        error = same_by_line(&known, id, g, kl, o->id, f, nhashed, err);
        if (error < 0)
            return error;
        if (known >= 0) {
            *same = known;
            return RC_OK;
        }
        char *read = NULL;
        error = rc_git_read_blob(&read, &len, g, o->id, RD_RECORD_MAX_BYTES, a, err);
        if (error < 0)
            return error;
        data = read;
        if (nread)
            *nread += len;
    }
    if (len == f->len && !memcmp(data, f->data, len)) {
        memcpy(id, o->id, 41); /* the same bytes: that blob */
        *same = 1;
    } else {
        *same = same_content(o->path, data, len, f->data, f->len);
    }
    return RC_OK;
}

/* Hashing the rendered files: on every core (at most 4) from DIGEST_FILES_PER_THREAD files a
 * thread on, each thread a contiguous share (rc_thread.h). */
#define DIGEST_FILES_PER_THREAD 2048
#define DIGEST_THREADS_MAX 4

struct digest_share {
    const struct rd_tree *tree;
    char (*id)[41];
    size_t from, to;
    int skip_record;
    size_t nhashed; /* files hashed */
    int error;
    struct rc_err err;
};

static void digest_share_run(void *arg, size_t k)
{
    struct digest_share *s = &((struct digest_share *)arg)[k];

    for (size_t i = s->from; i < s->to && s->error == RC_OK; i++) {
        const struct rd_tree_file *f = &s->tree->files[i];
        /* the record is compared by its bytes (diff_tree): hashing 10 MB costs more (SHA-1
         * with collision detection), and a record that differs is hashed once, as written */
        if (f->keep || s->id[i][0] || (s->skip_record && !strcmp(f->path, RECORD_PATH)))
            continue; /* s->id[i] set: known already (kustomizations_as_base) */
        if (f->id) {  /* a shard of the record: render named it by its id */
            memcpy(s->id[i], f->id, 41);
            continue;
        }
        s->error = rc_git_digest(s->id[i], f->data ? f->data : "", f->len, &s->err);
        s->nhashed++;
    }
}

/* id[k]: the blob id of every file of tree not kept (and, over a base, not placements.yaml).
 * On failure, err is the first failed file's error. */
static int digest_files(char (*id)[41], const struct rd_tree *tree, int over_base, size_t *nhashed,
                        struct rc_err *err)
{
    struct digest_share sh[DIGEST_THREADS_MAX];
    size_t t = rc_threads_for(0, tree->nfiles, DIGEST_FILES_PER_THREAD, DIGEST_THREADS_MAX);

    for (size_t k = 0; k < t; k++) {
        memset(&sh[k], 0, sizeof(sh[k]));
        sh[k].tree = tree;
        sh[k].id = id;
        sh[k].from = tree->nfiles * k / t;
        sh[k].to = tree->nfiles * (k + 1) / t;
        sh[k].skip_record = over_base;
    }
    rc_threads_run(digest_share_run, sh, t);
    for (size_t k = 0; k < t; k++) {
        if (nhashed)
            *nhashed += sh[k].nhashed;
        if (sh[k].error < 0) {
            *err = sh[k].err;
            return sh[k].error;
        }
    }
    return RC_OK;
}

/*
 * A cluster's kustomization.yaml lists the cluster's files and nothing else, so when those
 * are the base's path for path, render made the base's kustomization from the same list: its
 * blob id is the base's, and it is not hashed again (a pass that changes one unit would
 * otherwise hash every cluster's, about 1 MB at 10,000 units). Only for a base this program
 * rendered with these options and nobody edited (the caller's reuse_ok). Both lists are
 * sorted by path, so the clusters' prefixes come in order and one cursor walks the base's.
 */
static void kustomizations_as_base(char (*id)[41], const struct rd_tree *tree,
                                   const struct rc_git_blob *old, size_t nold)
{
    static const char name[] = "kustomization.yaml";
    size_t j = 0, i = 0;

    while (j < tree->nfiles) {
        const char *p = tree->files[j].path, *slash;
        char prefix[4096];
        size_t plen, end, kust = (size_t)-1;
        int same;

        if (strncmp(p, "clusters/", 9) || !(slash = strchr(p + 9, '/')) ||
            (size_t)(slash - p) + 1 >= sizeof(prefix)) {
            j++;
            continue;
        }
        plen = (size_t)(slash - p) + 1; /* "clusters/<name>/" */
        memcpy(prefix, p, plen);
        prefix[plen] = '\0';
        for (end = j; end < tree->nfiles && !strncmp(tree->files[end].path, prefix, plen); end++) {
            if (!strcmp(tree->files[end].path + plen, name))
                kust = end;
        }
        while (i < nold && strcmp(old[i].path, prefix) < 0)
            i++;
        same = kust != (size_t)-1 && !tree->files[kust].keep && i + (end - j) <= nold &&
               (i + (end - j) == nold || strncmp(old[i + (end - j)].path, prefix, plen));
        for (size_t k = 0; same && k < end - j; k++)
            same = !strcmp(old[i + k].path, tree->files[j + k].path);
        if (same)
            memcpy(id[kust], old[i + (kust - j)].id, sizeof(id[kust]));
        j = end;
    }
}

/* Changes that writing `tree` over commit `base` would make to the managed paths, compared
 * by blob id, and placements.yaml by its bytes (record_same; its source line does not count).
 * lazy_record: when another path changes (capacity.yaml aside) the pass commits anyway,
 * writing the new placements.yaml whole, so a placements.yaml of another blob counts as
 * modified without a comparison (`plan` passes 0: it lists exactly what differs). Kept files
 * (rd_tree_file.keep) are the base's: RC_ENOTFOUND when the base has no such file. as_base: the
 * base was rendered by this program with these options and nobody edited it (the pass's
 * reuse_ok), so a kustomization whose cluster's files are the base's is the base's
 * (kustomizations_as_base); replay passes 0. ids
 * (NULL, or tree->nfiles entries) gets the blob id of every file that is not kept, for
 * rc_git_build_tree, but "" for a placements.yaml not known to be the base's blob
 * (rc_git_file.differs: hashed once, when written). */
static int diff_tree(struct rc_path_change **out, size_t *n, char (**ids)[41], size_t *nodd,
                     struct rc_git *g, struct rc_cache *cache, const struct known_line *kl,
                     int lazy_record, size_t *nread, size_t *ncompared, size_t *nhashed,
                     size_t *nfiles_hashed, const char *base, int as_base,
                     const struct rd_tree *tree, struct rc_arena *a, struct rc_err *err)
{
    const struct rc_git_blob *rec_old = NULL;
    size_t rec_j = 0, rec_at = 0;
    struct rc_git_blob *old = NULL;
    size_t nold = 0, cap = 0, cnt = 0;
    struct rc_path_change *ch = NULL;
    char(*id)[41] = rc_arena_calloc(a, tree->nfiles + 1, sizeof(*id));
    size_t i = 0, j = 0;
    int error;

    size_t odd = 0;

    if (base && base[0]) {
        error = rc_git_list_tree_odd(&old, &nold, &odd, g, base, a, err);
        if (error < 0)
            return error;
    }
    if (nodd)
        *nodd = odd;
    if (as_base && nold)
        kustomizations_as_base(id, tree, old, nold);
    error = digest_files(id, tree, base && base[0], nfiles_hashed, err);
    if (error < 0)
        return error;
    cap = nold + tree->nfiles + 1;
    ch = rc_arena_calloc(a, cap, sizeof(*ch));
    /* both lists are sorted by path (strcmp) */
    while (i < nold || j < tree->nfiles) {
        int c;
        if (i < nold && !managed_path(old[i].path)) {
            i++;
            continue;
        }
        if (i >= nold)
            c = 1;
        else if (j >= tree->nfiles)
            c = -1;
        else
            c = strcmp(old[i].path, tree->files[j].path);
        if (c > 0 && tree->files[j].keep)
            return rc_err_set(err, RC_ENOTFOUND, "'%s' is not in the deploy tree to keep",
                              tree->files[j].path);
        if (c < 0) {
            ch[cnt].path = old[i].path;
            ch[cnt++].op = 'D';
            i++;
        } else if (c > 0) {
            ch[cnt].path = tree->files[j].path;
            ch[cnt++].op = 'A';
            j++;
        } else {
            int same = tree->files[j].keep || !strcmp(old[i].id, id[j]);
            if (!tree->files[j].keep && !strcmp(old[i].path, RECORD_PATH)) {
                if (lazy_record && !record_cheap(cache, kl, &old[i])) {
                    /* decided below, when it matters */
                    rec_old = &old[i];
                    rec_j = j;
                    rec_at = cnt;
                    same = 0;
                } else {
                    error = record_same(&same, id[j], g, cache, kl, nread, ncompared, nhashed,
                                        &old[i], &tree->files[j], a, err);
                    if (error < 0)
                        return error;
                }
            }
            if (!same) {
                ch[cnt].path = tree->files[j].path;
                ch[cnt++].op = 'M';
            }
            i++;
            j++;
        }
    }
    if (rec_old) {
        int other = 0, same = 0;
        for (size_t k = 0; k < cnt && !other; k++)
            other = rc_pass_path_commits(ch[k].path) && strcmp(ch[k].path, RECORD_PATH);
        if (!other) {
            error = record_same(&same, id[rec_j], g, cache, kl, nread, ncompared, nhashed, rec_old,
                                &tree->files[rec_j], a, err);
            if (error < 0)
                return error;
        }
        if (same) {
            memmove(&ch[rec_at], &ch[rec_at + 1], (cnt - rec_at - 1) * sizeof(*ch));
            cnt--;
        }
    }
    rc_sort(ch, cnt, sizeof(*ch), cmp_change);
    *out = ch;
    *n = cnt;
    if (ids)
        *ids = id;
    return RC_OK;
}

/* ==== Hand edits on the deploy branch ==== */

#define HAND_EDIT_DEPTH 1000 /* commits searched back for rightplace's last one */

/* The managed files someone else changed in deploy commit `commit` since rightplace's last
 * commit there (base gets that one): none when `commit` is rightplace's own, or when no commit
 * of rightplace's is found (base ""). */
static int hand_edits_of(struct rc_git_change **v, size_t *n, char base[41], struct rc_git *g,
                         const char *commit, struct rc_arena *a, struct rc_err *err)
{
    size_t w = 0;
    int error = rc_git_is_own_commit(g, commit, err);

    *v = NULL;
    *n = 0;
    if (error != 0)
        return error < 0 ? error : RC_OK;
    error = rc_git_last_own_commit(base, g, commit, HAND_EDIT_DEPTH, err);
    if (error == RC_ENOTFOUND) {
        base[0] = '\0';
        rc_err_clear(err);
        return RC_OK;
    }
    if (error == RC_OK)
        error = rc_git_diff_commits(v, n, g, base, commit, a, err);
    if (error < 0)
        return error;
    for (size_t i = 0; i < *n; i++) {
        if (managed_path((*v)[i].path))
            (*v)[w++] = (*v)[i];
    }
    *n = w;
    return RC_OK;
}

/* When the deploy head was not written by rightplace, the managed files someone changed since
 * rightplace's last commit there (none found: nothing is reported). */
static int detect_hand_edits(struct rc_pass_result *out, struct rc_git *g, struct rc_arena *a,
                             struct rc_err *err)
{
    struct rc_git_change *v = NULL;
    int error =
        hand_edits_of(&v, &out->nhand_edits, out->hand_edit_base, g, out->deploy_old, a, err);

    out->hand_edits = v;
    return error;
}

/* Whether hand edits v[0..n) changed the record (record_path). */
static int record_edited(const struct rc_git_change *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (record_path(v[i].path))
            return 1;
    }
    return 0;
}

/* The deploy commit whose record a pass starts from, when the head is `deploy` and the last
 * commit of rightplace's below it `base` (edited: hand edits since then changed the record):
 * the head's, unless someone edited the record there. A record is what rightplace decided;
 * an edit of it (a unit "moved", a file broken or removed) is reported and restored, never
 * taken as a decision, and never stops a pass. Without such a commit of rightplace's (none
 * found) the head's is read. */
static const char *record_commit(const char *deploy, const char *base, int edited)
{
    return base[0] && edited ? base : deploy;
}

/* Whether hand edits v[0..n) changed RD_KEPT_FILE: a list of kept versions someone else wrote
 * is not taken (the versions are looked for in history). */
static int kept_list_edited(const struct rc_git_change *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (!strcmp(v[i].path, RD_KEPT_FILE))
            return 1;
    }
    return 0;
}

/* ==== The commit message ==== */

#define MESSAGE_MAX_CONTENT 500 /* content changes read back for the message */

static int find_tree_file(const struct rd_tree *t, const char *path)
{
    size_t lo = 0, hi = t->nfiles;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(t->files[mid].path, path);
        if (!c)
            return (int)mid;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

/* The deploy tree of the files: over the deploy head, by the changes the diff found
 * (rc_git_update_tree: only the trees on those paths are read and written); built whole
 * (rc_git_build_tree) without a head, when the head has deploy-path entries only a whole
 * build puts right (base_odd: rc_git_list_tree_odd) and when a file becomes a directory or
 * the reverse. Either way the same tree. files[i] is t->files[i] as rc_git_build_tree takes
 * it. */
static int build_deploy_tree(char tree[41], struct rc_git *g, const char *base, size_t base_odd,
                             const struct rc_git_file *files, const struct rd_tree *t,
                             const struct rc_path_change *ch, size_t nch, struct rc_arena *a,
                             struct rc_err *err)
{
    struct rc_git_file *up;
    const char **rm;
    size_t nup = 0, nrm = 0;
    int rec = find_tree_file(t, RECORD_PATH), rec_listed = 0, error;

    if (!base[0])
        return rc_git_build_tree(tree, g, NULL, files, t->nfiles, err);
    if (base_odd)
        return rc_git_build_tree(tree, g, base, files, t->nfiles, err);
    up = rc_arena_calloc(a, nch + 2, sizeof(*up));
    rm = rc_arena_calloc(a, nch + 1, sizeof(*rm));
    for (size_t i = 0; i < nch; i++) {
        int k;
        if (ch[i].op == 'D') {
            rm[nrm++] = ch[i].path;
            continue;
        }
        if ((k = find_tree_file(t, ch[i].path)) < 0 || files[k].keep)
            return rc_err_set(err, RC_ERROR, "'%s' changed but is not a file to write", ch[i].path);
        rec_listed = rec_listed || k == rec;
        up[nup++] = files[k];
    }
    /* the diff compares the record without its source line: written whatever it found */
    if (rec >= 0 && !files[rec].keep && !rec_listed)
        up[nup++] = files[rec];
    error = rc_git_update_tree(tree, g, base, up, nup, rm, nrm, err);
    if (error == RC_ECONFLICT) {
        rc_err_clear(err);
        error = rc_git_build_tree(tree, g, base, files, t->nfiles, err);
    }
    return error;
}

/* ==== The computation shared by pass and replay ==== */

struct compute {
    double *ph; /* phase times (ms) to add to; NULL: not timed */
    /* Render reuse (pass only): the base record's render digest is ours, and these source
     * paths changed since the source commit the base was made from (sorted). */
    int reuse_ok;
    size_t nsrc_changes;
    const struct rc_git_change *src_changes;
    struct loaded load;
    struct pl_input in;
    struct pl_result res;
    struct rd_tree tree;
    const struct rd_verdict_tally **tallies; /* rd_render_options.tallies of the render */
    /* rd_render_options.record_memo of the render (NULL: none): after it, the memo of the
     * record it made, kept with that record in the record cache file */
    struct rd_record_memo *record_memo;
    int record_base_is_memo; /* rd_render_options.record_base_is_memo of the render */
    /* --replace-unreachable-after: the grace of policies without the annotation (0: none) */
    int64_t replace_unreachable_after;
    int bounded_verdicts;  /* rc_pass_options.bounded_verdicts */
    struct listing listed; /* the pass's: listed already by memo_says_skip */
    /* the blob id of the deploy head's placements.yaml (NULL or "": none, or not known) */
    const char *base_record;
    /* the deploy commit whose RD_KEPT_FILE says which version of each broken file to keep:
     * the one the previous record is of (NULL or "": none) */
    const char *kept_from;
    int partial; /* a pass over some clusters (partial_pass): its record is not the pass's */
    /* a partial pass's: the keys of the objects it places (sorted), those of the units on
     * its clusters; the other objects of the files it loaded stay out (NULL: all) */
    const char **only_keys;
    size_t nonly;
};

/* Loop mode: the blob id of the record last written with the cache's memo, as far as the pass
 * knows it (rc_cache_memo_blob): "" once a record was written, its id when the diff or the
 * commit tells it. A record kept from the base changes nothing. */
static void note_memo_blob(struct rc_cache *cache, const struct rd_tree *tree, char (*ids)[41])
{
    int k = find_tree_file(tree, RECORD_PATH);

    if (cache && k >= 0 && !tree->files[k].keep)
        rc_cache_set_memo_blob(cache, ids ? ids[k] : "");
}

/* The deploy commit's message: the decisions, the content that changed under unchanged
 * decisions (old bytes read back for modified files only: work grows with the change), and
 * the source commit's subject and author. */
static int commit_message(struct rc_buf *msg, struct rc_git *g, const struct compute *cp,
                          const struct rd_record *prev, const struct rc_pass_result *out,
                          const struct rc_path_change *changes, size_t nchanges, struct rc_arena *a,
                          struct rc_err *err)
{
    struct rd_message_input in = RD_MESSAGE_INPUT_INIT;
    struct rd_content_change *cc = NULL;
    size_t ncc = 0;
    char *text = NULL, *author = NULL;
    struct rc_err ignore = RC_ERR_INIT;

    for (size_t i = 0; i < nchanges && out->deploy_old[0]; i++) {
        const char *p = changes[i].path;
        char *old = NULL;
        size_t oldlen = 0;
        int k;
        int hand = 0;
        for (size_t h = 0; h < out->nhand_edits && !hand; h++)
            hand = !strcmp(out->hand_edits[h].path, p);
        if (hand)
            continue; /* a repair, said apart: not a change of the source */
        if (changes[i].op != 'M' || strncmp(p, "clusters/", 9) ||
            !strcmp(p + strlen(p) - strlen("kustomization.yaml"), "kustomization.yaml"))
            continue;
        if (ncc == MESSAGE_MAX_CONTENT)
            break;
        k = find_tree_file(&cp->tree, p);
        if (k < 0 || rc_git_read_file(&old, &oldlen, g, out->deploy_old, p, a, &ignore) < 0)
            continue;
        if (!cc)
            cc = rc_arena_calloc(a, MESSAGE_MAX_CONTENT, sizeof(*cc));
        cc[ncc].path = p;
        cc[ncc].old_data = old;
        cc[ncc].old_len = oldlen;
        cc[ncc].new_data = cp->tree.files[k].data;
        cc[ncc].new_len = cp->tree.files[k].len;
        ncc++;
    }
    if (rc_git_commit_message(&text, g, out->source, a, &ignore) == RC_OK)
        in.source_subject = text;
    if (rc_git_commit_author(&author, g, out->source, a, &ignore) == RC_OK)
        in.source_author = author;
    in.res = &cp->res;
    in.prev = prev->units;
    in.nprev = prev->nunits;
    in.source_commit = out->source;
    in.nfile_errors = cp->load.nerrors;
    in.file_errors = cp->load.errors;
    in.ncontent = ncc;
    in.content = cc;
    in.nwarnings = out->nwarnings;
    in.warnings = out->warnings;
    if (out->nhand_edits) {
        const char **lines = rc_arena_calloc(a, out->nhand_edits, sizeof(*lines));
        for (size_t i = 0; i < out->nhand_edits; i++)
            lines[i] = rc_arena_printf(a, "%c %s", out->hand_edits[i].op, out->hand_edits[i].path);
        in.hand_edits = lines;
        in.nhand_edits = out->nhand_edits;
    }
    return rd_commit_message_ex(msg, &in, err);
}

/* Units made only of a Namespace that no policy governs are not decisions: namespaces follow
 * their workloads. Drop them so that they do not show up as "unplaced". */
static void drop_bare_namespaces(struct pl_result *res)
{
    size_t w = 0;

    for (size_t r = 0; r < res->ndecisions; r++) {
        const struct pl_decision *d = &res->decisions[r];
        if (!d->policy && d->nobjects == 1 && d->objects && d->objects[0] && !d->objects[0]->ns &&
            !strcmp(d->objects[0]->kind, "Namespace") && d->state == PL_STATE_UNPLACED)
            continue;
        res->decisions[w++] = res->decisions[r];
    }
    res->ndecisions = w;
}

static int cmp_prev_index(const void *x, const void *y, void *units)
{
    const struct pl_prev_unit *u = units;

    return strcmp(u[*(const size_t *)x].unit, u[*(const size_t *)y].unit);
}

/* A unit whose decision did not change keeps its record entry as written when the decision
 * was made (reason, verdicts and their tally), so that an unchanged fleet makes no new
 * commit and the record keeps saying why the unit went where it is. Returns the tallies
 * for rd_render_options.tallies (NULL entries for decisions made now). */
static const struct rd_verdict_tally **keep_recorded_reasons(struct pl_result *res,
                                                             const struct rd_record *prev,
                                                             const struct pl_prev_unit **kept,
                                                             struct rc_arena *a)
{
    const struct rd_verdict_tally **tallies;
    size_t *order;

    if (!prev->nunits)
        return NULL;
    tallies = rc_arena_calloc(a, res->ndecisions + 1, sizeof(*tallies));
    order = rc_arena_calloc(a, prev->nunits, sizeof(*order));
    for (size_t i = 0; i < prev->nunits; i++)
        order[i] = i;
    /* a record rightplace wrote is sorted by unit already: checked, not sorted again */
    for (size_t i = 1; i < prev->nunits; i++) {
        if (strcmp(prev->units[i - 1].unit, prev->units[i].unit) > 0) {
            qsort_r(order, prev->nunits, sizeof(*order), cmp_prev_index, prev->units);
            break;
        }
    }
    for (size_t i = 0; i < res->ndecisions; i++) {
        struct pl_decision *d = &res->decisions[i];
        const struct pl_prev_unit *p = NULL;
        size_t lo = 0, hi = prev->nunits;
        if (d->change != PL_CHANGE_NONE)
            continue;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            int c = strcmp(prev->units[order[mid]].unit, d->unit);
            if (c == 0) {
                p = &prev->units[order[mid]];
                break;
            }
            if (c < 0)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (kept)
            kept[i] = p;
        if (!p || !p->reason)
            continue;
        d->reason = p->reason;
        d->cause = p->cause;
        d->nverdicts = p->nverdicts;
        d->verdicts = p->verdicts;
        d->verdicts_omitted = 0; /* the recorded tally, if any, is tallies[i] */
        memset(d->verdict_counts, 0, sizeof(d->verdict_counts));
        if (prev->tallies)
            tallies[i] = &prev->tallies[p - prev->units];
    }
    return tallies;
}

/* The writer's memo of the pass's record (NULL: none): loop mode's, or, for the last pass of a
 * process, the one the record cache file keeps (digests alone). */
static struct rd_record_memo *pass_record_memo(const struct rc_pass_options *o)
{
    return o->cache && (!o->last_pass || rc_cache_record_file(o->cache))
               ? rc_cache_record_memo(o->cache)
               : NULL;
}

/* Load the source at S (step 1 of a computation). */
static int compute_load(struct compute *c, struct rc_git *g, const char *source,
                        const struct rd_record *prev, const struct rc_pass_options *o,
                        struct rc_arena *a, struct rc_err *err)
{
    int error;

    c->replace_unreachable_after = o->replace_unreachable_after;
    c->bounded_verdicts = o->bounded_verdicts;
    /* loop mode: what the last pass reported; a process's first pass: what the record cache
     * file's memo says the record lists */
    c->load.known = rc_cache_reported(o->cache, &c->load.nknown);
    if (!c->load.known)
        c->load.known = rd_record_memo_reported_digests(pass_record_memo(o), &c->load.nknown, a);
    error = load_source(&c->load, g, source, prev, c->kept_from, &c->listed, o, a, err);
    if (o->log && c->load.nknown_errors)
        rc_log_info(o->log,
                    "%zu file error%s as reported by an earlier pass (placements.yaml lists "
                    "them all)",
                    c->load.nknown_errors, c->load.nknown_errors == 1 ? "" : "s");
    return error;
}

/* Place and render against `fleet` (NULL: the clusters as declared in the source). The
 * fleet's resource indices must come from c->load.src.res. */
static int compute_decide(struct compute *c, const struct pl_prev_unit *prev, size_t nprev,
                          const struct pl_cluster *fleet, size_t nfleet, struct rc_arena *a,
                          struct rc_err *err)
{
    int error;

    memset(&c->in, 0, sizeof(c->in));
    c->in.res = &c->load.src.res;
    c->in.nobjects = c->load.src.nobjects;
    c->in.objects = c->load.src.objects;
    if (c->only_keys) {
        struct pl_object *v = rc_arena_calloc(a, c->load.src.nobjects + 1, sizeof(*v));
        size_t n = 0;
        for (size_t i = 0; i < c->load.src.nobjects; i++) {
            const struct pl_object *ob = &c->load.src.objects[i];
            /* and the Namespace objects: their labels are what namespace selectors read */
            if (bsearch(&ob->key, c->only_keys, c->nonly, sizeof(*c->only_keys), cmp_str) ||
                (!ob->ns && !strcmp(ob->kind, "Namespace")))
                v[n++] = *ob;
        }
        c->in.objects = v;
        c->in.nobjects = n;
    }
    c->in.nnamespaces = c->load.src.nnamespaces;
    c->in.namespaces = c->load.src.namespaces;
    c->in.npolicies = c->load.src.npolicies;
    c->in.policies = c->load.src.policies;
    if (c->replace_unreachable_after > 0 && c->in.npolicies) {
        /* the global grace, for policies whose annotation does not set one (the policies'
         * digests stay: a flag is not a policy change) */
        struct pl_policy *pp = rc_arena_calloc(a, c->in.npolicies, sizeof(*pp));
        for (size_t i = 0; i < c->in.npolicies; i++) {
            pp[i] = c->load.src.policies[i];
            if (pp[i].replace_unreachable_after <= 0)
                pp[i].replace_unreachable_after = c->replace_unreachable_after;
        }
        c->in.policies = pp;
    }
    c->in.nclusters = fleet ? nfleet : c->load.src.nclusters;
    c->in.clusters = fleet ? fleet : c->load.src.clusters;
    c->in.nprev = nprev;
    c->in.prev = prev;
    /* what the record and the commit message list; every verdict of a decision that changes
     * for the commands that print them (a decision that stands shows its record's) */
    c->in.opts.verdicts_chosen = RD_RECORD_CHOSEN_VERDICTS;
    c->in.opts.verdicts_passed = RD_RECORD_PASSED_VERDICTS;
    c->in.opts.verdicts_whole_if_changed = !c->bounded_verdicts;
    error = pl_place(&c->res, &c->in, a, err);
    if (error < 0)
        return error;
    drop_bare_namespaces(&c->res);
    return RC_OK;
}

static int cmp_change_path(const void *key, const void *x)
{
    return strcmp(key, ((const struct rc_git_change *)x)->path);
}

/* Whether the objects of source file `file` are loaded from the version the base deploy tree
 * was made from. A file broken now is loaded from the version kept of it: the base's exactly
 * when the base lists the same one (RD_KEPT_FILE), or when the base does not list it (it was
 * not broken then, and the walk for its last good version starts at its blob at the base's
 * source commit, which loaded then). A file the base lists and that loads now says what it
 * says now. Any other is the base's when it did not change since the base's source commit. */
static int file_as_in_base(const struct compute *c, const char *file)
{
    const struct rd_kept *now = rd_kept_find(c->load.broken, c->load.nbroken, file);
    const struct rd_kept *was = rd_kept_find(c->load.was, c->load.nwas, file);

    if (now)
        return now->id[0] && (!was || !strcmp(was->id, now->id));
    return !was && !bsearch(file, c->src_changes, c->nsrc_changes, sizeof(*c->src_changes),
                            cmp_change_path);
}

static int cmp_cluster_name(const void *key, const void *x)
{
    return strcmp(key, ((const struct pl_cluster *)x)->name);
}

/* Does Divide decision d share its objects as the base did? The same percent on each cluster
 * as the base record's `shares` (p), and each cluster loaded from the version of its file the
 * base was made from (its topology value orders targets whose percents tie). The record lists
 * the clusters in the targets' order (by name); a record that does not is rendered again. */
static int shares_as_in_base(const struct compute *c, const struct pl_decision *d,
                             const struct pl_prev_unit *p)
{
    const struct rd_source *src = &c->load.src;

    if (!p->percents || p->nclusters != d->ntargets || !src->cluster_files)
        return 0;
    for (size_t t = 0; t < d->ntargets; t++) {
        const struct pl_cluster *cl;
        if (strcmp(p->clusters[t], d->targets[t].cluster) ||
            p->percents[t] != d->targets[t].percent)
            return 0;
        cl = bsearch(d->targets[t].cluster, src->clusters, src->nclusters, sizeof(*src->clusters),
                     cmp_cluster_name);
        if (!cl || !src->cluster_files[cl - src->clusters] ||
            !file_as_in_base(c, src->cluster_files[cl - src->clusters]))
            return 0;
    }
    return 1;
}

/* The object files the base deploy tree already has as they would be rendered, per decision
 * (NULL: none) and per object of it: a unit with the same decision
 * (clusters, state, policy digest, or no policy then and now; a Divide also its shares,
 * shares_as_in_base), and of it each object that the
 * unit's entry in the base record lists and that is loaded from the version of its file the base
 * was made from (file_as_in_base). So a change to one file of a unit of many renders that file's
 * objects alone. Namespaces, kustomizations and the record are always rendered. */
static const unsigned char *const *reusable_objects(const struct compute *c,
                                                    const struct pl_prev_unit *const *kept,
                                                    struct rc_arena *a)
{
    unsigned char **obj = rc_arena_calloc(a, c->res.ndecisions + 1, sizeof(*obj));

    for (size_t i = 0; i < c->res.ndecisions; i++) {
        const struct pl_decision *d = &c->res.decisions[i];
        const struct pl_prev_unit *p = kept[i];
        size_t j = 0;
        /* a unit without a policy (one that follows the units referencing it, or placed by an
         * annotation) is rendered from its objects and clusters alone */
        if (!(d->change == PL_CHANGE_NONE && d->state == PL_STATE_PLACED && p &&
              ((p->policy_digest && d->policy_digest &&
                !strcmp(p->policy_digest, d->policy_digest)) ||
               (!p->policy && !d->policy))))
            continue;
        if (pl_decision_divides(d) && !shares_as_in_base(c, d, p))
            continue;
        obj[i] = rc_arena_calloc(a, d->nobjects + 1, 1);
        /* both lists are sorted by key (a record edited out of order finds fewer: rendered) */
        for (size_t k = 0; k < d->nobjects; k++) {
            const struct pl_object *o = d->objects[k];
            int cmp = 1;
            if (!o || !o->key)
                continue;
            while (j < p->nobjects && (cmp = strcmp(p->objects[j], o->key)) < 0)
                j++;
            if (j < p->nobjects && cmp == 0 && o->file && file_as_in_base(c, o->file))
                obj[i][k] = 1;
        }
    }
    return (const unsigned char *const *)obj;
}

static int compute_place(struct compute *c, const char *source, const struct rd_record *prev,
                         const struct pl_cluster *fleet, size_t nfleet,
                         const struct rc_pass_options *o, struct rc_arena *a, struct rc_err *err)
{
    const struct rd_verdict_tally **tallies;
    const struct pl_prev_unit **kept;
    struct rd_render_options ropts;
    int error;

    double t = mono_ms();

    error = compute_decide(c, prev->units, prev->nunits, fleet, nfleet, a, err);
    if (error < 0)
        return error;
    phase_mark(c->ph, PH_PLACE, &t);
    kept = rc_arena_calloc(a, c->res.ndecisions + 1, sizeof(*kept));
    tallies = keep_recorded_reasons(&c->res, prev, kept, a);
    c->tallies = tallies;
    ropts = o->render;
    ropts.tallies = tallies;
    if (c->reuse_ok)
        ropts.reuse_objects = reusable_objects(c, kept, a);
    /* the writer's memo: loop mode copies the entries that did not change from it; for the
     * last pass it keeps digests alone, for the record cache file (the next process) */
    ropts.record_memo = c->partial ? NULL : pass_record_memo(o);
    if (ropts.record_memo && o->last_pass)
        rd_record_memo_keep_bytes(ropts.record_memo, 0);
    c->record_memo = ropts.record_memo;
    ropts.blob_id = record_blob_id;
    ropts.record_base_is_memo = ropts.record_memo && c->base_record && c->base_record[0] &&
                                !strcmp(c->base_record, rc_cache_memo_blob(o->cache));
    c->record_base_is_memo = ropts.record_base_is_memo;
    ropts.nfile_errors = c->load.nerrors;
    ropts.file_errors = c->load.errors;
    ropts.nkept = c->load.nbroken;
    ropts.kept = c->load.broken;
    ropts.nwarnings = c->load.src.nwarnings;
    ropts.warnings = c->load.src.warnings;
    error = rd_render_tree(&c->tree, &c->res, &c->in, source, &ropts, a, err);
    if (ropts.record_memo) {
        if (error < 0)
            rc_cache_set_memo_blob(o->cache, "");
        else
            note_memo_blob(o->cache, &c->tree, NULL);
    }
    phase_mark(c->ph, PH_RENDER, &t);
    return error;
}

static void compute_release(struct compute *c)
{
    loaded_release(&c->load);
}

/* The pass's warnings, the engine's then the source's, into out; each logged (the first 20)
 * unless an earlier pass reported it (c->load.known): loop mode, and a `--once` process with
 * the state directory's record cache, warn of a file's problem in the pass that finds it, not
 * every pass (the others are counted at info level). */
static void collect_warnings(struct rc_pass_result *out, const struct compute *c,
                             const struct rc_pass_options *o, struct rc_arena *a)
{
    size_t n = c->res.nwarnings + c->load.src.nwarnings + c->tree.nwarnings, k = 0;
    size_t nnew = 0, nknown = 0;
    const char **w = rc_arena_calloc(a, n + 1, sizeof(*w));

    for (size_t i = 0; i < c->res.nwarnings; i++)
        w[k++] = c->res.warnings[i];
    for (size_t i = 0; i < c->load.src.nwarnings; i++)
        w[k++] = c->load.src.warnings[i];
    for (size_t i = 0; i < c->tree.nwarnings; i++) /* overrides that could not be applied */
        w[k++] = c->tree.warnings[i];
    out->nwarnings = k;
    out->warnings = w;
    for (size_t i = 0; o->log && i < k; i++) {
        if (rd_record_warning_listed(c->load.known, c->load.nknown, w[i]))
            nknown++;
        else if (nnew++ < 20)
            rc_log_warn(o->log, "%s", w[i]);
    }
    if (o->log && nnew > 20)
        rc_log_warn(o->log, "... and %zu more warnings (rightplace plan lists them all)",
                    nnew - 20);
    if (o->log && nknown)
        rc_log_info(o->log,
                    "%zu warning%s as reported by an earlier pass (rightplace plan "
                    "lists them all)",
                    nknown, nknown == 1 ? "" : "s");
}

/* What the pass reported, for the next pass of the process (rc_cache_reported): its warnings
 * and file errors; a pass that collected no warnings (the source already placed) reported
 * the ones known before it again. */
static void remember_reported(struct rc_cache *cache, const struct rc_pass_result *out,
                              const struct loaded *l)
{
    size_t nw = out->warnings ? out->nwarnings : l->nknown, n = 0;
    uint64_t *v = rc_xcalloc(nw + l->nerrors + 1, sizeof(*v));

    for (size_t i = 0; i < nw; i++)
        v[n++] = out->warnings ? rd_record_warning_digest(out->warnings[i]) : l->known[i];
    for (size_t i = 0; i < l->nerrors; i++)
        v[n++] = rd_record_file_error_digest(l->errors[i].path, l->errors[i].msg);
    n = rc_sort_u64_unique(v, n);
    rc_cache_set_reported(cache, v, n);
    free(v);
}

static void count_states(struct rc_pass_result *out, const struct pl_result *res)
{
    for (size_t i = 0; i < res->ndecisions; i++) {
        const struct pl_decision *d = &res->decisions[i];
        if (d->change == PL_CHANGE_REMOVED) {
            out->changed++;
            continue;
        }
        if (d->change != PL_CHANGE_NONE)
            out->changed++;
        if (d->state == PL_STATE_PLACED)
            out->placed++;
        else if (d->state == PL_STATE_PENDING)
            out->pending++;
        else
            out->unplaced++;
    }
}

/* Was the record written with the render options of this pass (rd_render_digest)? */
static int same_render_digest(const struct rd_record *rec, const struct rc_pass_options *o)
{
    char digest[17];

    rd_render_digest(digest, &o->render);
    return rec->render_digest && !strcmp(rec->render_digest, digest);
}

static int record_has_pending(const struct rd_record *rec)
{
    for (size_t i = 0; i < rec->nunits; i++) {
        if (rec->units[i].state == PL_STATE_PENDING)
            return 1;
    }
    return 0;
}

/* ==== The quick exit ==== */

/*
 * A pass can change nothing when its inputs are those of the last completed pass and that
 * pass's outcome depended on nothing else. Its inputs are: the options and program version
 * (the memo's key), the YAML files under the source paths (their paths and blob ids: a commit
 * that touches only other files changes nothing), and the deploy head (the record of
 * placements, the capacity snapshot, and the source commit the broken files' last good
 * versions are looked up from, all in that commit). Its outcome depends on nothing else when
 * it was "quiet": no live cluster (observation could change capacity, and apply could have
 * something to retry; pending units on a simulated fleet are decided again from the same
 * declared capacity, to the same result), no broken file without an earlier version, no hand
 * edit of the deploy branch, no configuration error and no review branch (--propose). So the pass
 * stops, before reading any blob, when a memo exists with the same key, the same deploy head,
 * quiet, and the same source commit or the same listing digest; it reports the memo's file errors
 * again. --force, plan and everything without a cache (rc_pass_options.cache) do all the work.
 */
static int memo_key(char out[41], const struct rc_pass_options *o, struct rc_err *err)
{
    struct rc_buf k = RC_BUF_INIT;
    int error;

    rc_buf_printf(&k, NULL,
                  "rightplace %s\nsource %s\ndeploy %s\nluna %s=%s\napply %d\npull %d\n"
                  "propose %s\ngrace %lld\n",
                  rc_version(), o->source_branch, o->deploy_branch,
                  o->render.luna_key ? o->render.luna_key : "-",
                  o->render.luna_value ? o->render.luna_value : "-", o->apply, o->render.pull,
                  o->propose_branch ? o->propose_branch : "-",
                  (long long)o->replace_unreachable_after);
    for (size_t i = 0; i < o->npaths; i++)
        rc_buf_printf(&k, NULL, "path %s\n", o->paths[i]);
    error = rc_git_digest(out, k.ptr, k.len, err);
    rc_buf_release(&k);
    return error;
}

/* RC_OK and *skip = 1 when the memo says this pass can change nothing. */
static int memo_says_skip(int *skip, struct listing *listed, struct rc_pass_result *out,
                          struct rc_git *g, const struct rc_pass_options *o, const char key[41],
                          struct rc_arena *a, struct rc_err *err)
{
    const struct rc_memo *m = rc_cache_memo(o->cache);
    int error;

    *skip = 0;
    if (!m->key[0] || strcmp(m->key, key) || !m->quiet || strcmp(m->deploy, out->deploy_old))
        return RC_OK;
    if (strcmp(m->commit, out->source)) {
        struct rc_git_blob *b = NULL;
        size_t n = 0;
        char digest[41];
        error = rc_git_list_yaml(&b, &n, g, out->source, o->paths, o->npaths, a, err);
        if (error == RC_OK)
            error = listing_digest(digest, b, n, err);
        if (error < 0)
            return error;
        if (strcmp(digest, m->source)) {
            /* for the load, which needs it */
            snprintf(listed->source, sizeof(listed->source), "%s", out->source);
            listed->blobs = b;
            listed->n = n;
            memcpy(listed->digest, digest, sizeof(digest));
            return RC_OK;
        }
    }
    out->nfile_errors = m->nerrors;
    out->file_errors = m->errors;
    for (size_t i = 0; o->log && i < m->nerrors; i++) {
        struct rc_log_field f[] = {RC_LOG_STR("file", m->errors[i].path)};
        rc_log_kv(o->log, RC_LOG_WARN, f, 1, "%s (as in the last pass)", m->errors[i].msg);
    }
    *skip = 1;
    return RC_OK;
}

/* Remember what this pass saw, for the next one's quick exit. */
static void remember(const struct rc_pass_options *o, const char key[41],
                     const struct rc_pass_result *out, const struct compute *cp, int quiet)
{
    struct rc_memo m;
    struct rc_err err = RC_ERR_INIT;

    memset(&m, 0, sizeof(m));
    memcpy(m.key, key, 41);
    memcpy(m.commit, out->source, 41);
    memcpy(m.source, cp->load.digest, 41);
    memcpy(m.deploy, out->deploy_new, 41);
    m.quiet = quiet;
    m.nerrors = cp->load.nerrors;
    m.errors = cp->load.errors;
    m.nkept = cp->load.nkept;
    m.kept = cp->load.kept;
    if (rc_cache_set_memo(o->cache, &m, &err) < 0 && o->log)
        rc_log_warn(o->log, "%s (the next pass will do all its work)", err.msg);
}

/*
 * The record this pass writes is the next pass's previous record: kept by the blob id of the
 * bytes written (rc_cache.h), so that the next pass need not read it; in memory for loop
 * mode's next pass, and in the record cache file (rc_rcache.h) for the next process. The
 * record is made and packed on a thread of its own while the commit is built (the record's
 * blob id comes with it): record_job_start before rc_git_build_tree, record_job_finish once
 * the deploy ref moved (committed) or the pass ends without it.
 */
struct record_job {
    int started, threaded;
    pthread_t tid;
    const struct rc_pass_options *o;
    const struct compute *cp;
    struct rd_render_options ro;
    struct rc_rcache *rfile;
    int k;                 /* the record's file in cp->tree */
    struct rc_arena *pass; /* the pass's: it holds the record's text (rd_render_tree) */
    struct rc_arena fresh;
    struct rd_record rec;
    /* loop mode: the record the pass started from, when rec may be made over it
     * (rc_cache_record_to_share); dropped: its units rec does not share ((size_t)-1: rec is
     * made whole) */
    const struct rd_record *base;
    size_t dropped, shared;
    struct rc_buf packed; /* rc_rcache_prepare's bytes */
    double ms_made, ms_packed;
};

static void *record_job_run(void *arg)
{
    struct record_job *j = arg;
    const struct rd_tree_file *f = &j->cp->tree.files[j->k];
    struct rc_rcache_line line;
    double t0 = mono_ms(), t1;

    /* made in an arena the cache takes over: no copy; for the file alone (the last pass),
     * pointing into the result: no string copied */
    j->dropped = (size_t)-1;
    if (j->o->last_pass) {
        rd_record_view_of_result(&j->rec, &j->cp->res, &j->ro, &j->fresh);
    } else if (j->base && rd_record_of_result_over(&j->rec, &j->shared, &j->cp->res, &j->ro,
                                                   j->base, &j->fresh) == 0) {
        j->dropped = j->base->nunits - j->shared; /* each base unit is shared once at most */
    } else {
        rd_record_of_result(&j->rec, &j->cp->res, &j->ro, &j->fresh);
    }
    t1 = mono_ms();
    record_source_line(&line, f->data, f->len);
    if (j->rfile)
        rc_rcache_prepare(&j->packed, j->rfile, &j->rec, &line, j->cp->record_memo);
    j->ms_made = t1 - t0;
    j->ms_packed = mono_ms() - t1;
    return NULL;
}

static void record_job_start(struct record_job *j, const struct rc_pass_options *o,
                             const struct compute *cp, struct rc_arena *pass)
{
    memset(j, 0, sizeof(*j));
    j->fresh = (struct rc_arena)RC_ARENA_INIT;
    j->packed = (struct rc_buf)RC_BUF_INIT;
    j->rfile = rc_cache_record_file(o->cache);
    j->k = find_tree_file(&cp->tree, RECORD_PATH);
    if (!o->cache || j->k < 0 || cp->tree.files[j->k].keep || (!j->rfile && o->last_pass))
        return;
    j->o = o;
    j->cp = cp;
    j->pass = pass;
    j->ro = o->render;
    j->ro.tallies = cp->tallies;
    j->ro.record_memo = cp->record_memo;
    j->ro.record_base_is_memo = cp->record_base_is_memo;
    if (!o->last_pass && cp->record_base_is_memo)
        j->base = rc_cache_record_to_share(o->cache, cp->base_record);
    j->started = 1;
    j->threaded = pthread_create(&j->tid, NULL, record_job_run, j) == 0;
    if (!j->threaded)
        record_job_run(j);
}

/* Wait for the job; when committed, keep the record as that of blob id (returns the bytes
 * written to the record cache file). Does nothing for a job not started or finished. */
static size_t record_job_finish(struct record_job *j, int committed, const char *id)
{
    struct rc_err err = RC_ERR_INIT;
    size_t before = rc_rcache_written(j->rfile), wrote;
    double t0;

    if (!j->started)
        return 0;
    if (j->threaded)
        pthread_join(j->tid, NULL);
    j->started = 0;
    if (!committed || !id || !id[0]) {
        rc_arena_release(&j->fresh);
        rc_buf_release(&j->packed);
        return 0;
    }
    t0 = mono_ms();
    if (j->rfile && rc_rcache_write(j->rfile, id, &j->packed, &err) < 0 && j->o->log)
        rc_log_warn(j->o->log, "%s (the next process parses the record)", err.msg);
    wrote = rc_rcache_written(j->rfile) - before;
    if (j->rfile && j->o->log)
        rc_log_debug(j->o->log,
                     "record: made in %.0f ms (%zu units shared), packed in %.0f ms (beside the "
                     "commit); %zu bytes written to the record cache (%.0f ms)",
                     j->ms_made, j->shared, j->ms_packed, wrote, mono_ms() - t0);
    rc_buf_release(&j->packed);
    if (j->o->last_pass) {
        rc_arena_release(&j->fresh);
    } else {
        const struct rd_tree_file *f = &j->cp->tree.files[j->k];
        const char *text = f->data;
        /* the text the pass made goes with the record, not copied (10 MB at 10,000 units, and
         * as many fresh pages to fault in) */
        if (rc_arena_pass_on(j->pass, text, &j->fresh) < 0)
            text = rc_arena_strndup(&j->fresh, f->data, f->len);
        rc_cache_take_record_over(j->o->cache, id, &j->rec, &j->fresh, text, f->len, j->dropped);
    }
    return wrote;
}

/* ==== The pass ==== */

static void backoff(int attempt)
{
    struct timespec ts;
    long ms = 100L << (attempt < 6 ? attempt : 6);

    ts.tv_sec = ms / 1000;
    ts.tv_nsec = (ms % 1000) * 1000000L;
    nanosleep(&ts, NULL);
}

const char *rc_pass_phase_name(int phase)
{
    static const char *const names[RC_PHASE_COUNT] = {"sync",  "load",   "observe",
                                                      "place", "commit", "apply"};
    return phase >= 0 && phase < RC_PHASE_COUNT ? names[phase] : "?";
}

/* Charge the time since *t to `phase`. */
static void phase_end(struct rc_pass_result *out, int phase, double *t)
{
    double now = rc_mono_seconds();

    out->phase_seconds[phase] += now - *t;
    *t = now;
}

/* ==== A change that touches a few clusters ==== */

/*
 * A one-workload change at 10,000 workloads cost a `--once` pass about 0.3 s, nearly all of
 * it taking up, deciding and rendering the 9,999 workloads it does not touch (bench/RESULTS.md,
 * notes 64, 68, 108). A unit kept in place is decided on its own cluster alone, against what
 * the units before it there left (decide_kept), and a unit whose decision stands keeps its
 * record entry as written (keep_recorded_reasons). So when a change only alters workload
 * files whose units stay where they are, what it can change lies on the clusters those units
 * are on: their directories of the deploy tree and their sections of the capacity snapshot.
 *
 * The pass image (rc_cache.h) says, for every source file of the last full `--once` pass,
 * which clusters its objects are on. A partial pass runs when the memo and the image describe
 * the deploy head as it is and:
 *   - every file that changed was in the image, is still in the source, and holds only units
 *     placed on one cluster each under a policy with no spread, override or re-placement,
 *     on simulated clusters (no RC_IMAGE_* flag), and no file was added or removed;
 *   - the clusters those files are on (the clusters A) hold no object the image marks
 *     RC_IMAGE_OTHER, and are at most a quarter of the fleet (or one cluster);
 *   - each changed file loads without an error to the objects its base version loaded to,
 *     with everything but their pods the same (same_but_pods), and each of those objects is
 *     in a unit the base record places on A.
 * It loads the files with objects on A, the policies, the Namespaces and the Clusters of A, and
 * places and renders the objects of the record's units on A (compute.only_keys: a file with
 * objects on A and elsewhere is loaded for the ones on A). When every one of those decisions
 * stands (change none, the same objects), the record is the base's, and the deploy tree is the
 * base's with A's directories and A's sections of the snapshot as rendered now: that is what it
 * commits, with the commit message a full pass writes (the image keeps the counts and
 * warnings it needs).
 * Anything else, found before the commit, leaves the pass to the full computation, which then
 * starts from nothing the partial one did. test_rc_partial checks that random changes commit
 * the same commit ids either way.
 */

#define PARTIAL_SHARE 4 /* at most 1/PARTIAL_SHARE of the clusters */

static int cmp_blob_path(const void *key, const void *x)
{
    return strcmp(key, ((const struct rc_git_blob *)x)->path);
}

/* The listing entry (index) of source file `path`, or n. */
static size_t listed_at(const struct rc_git_blob *b, size_t n, const char *path)
{
    const struct rc_git_blob *f = path ? bsearch(path, b, n, sizeof(*b), cmp_blob_path) : NULL;

    return f ? (size_t)(f - b) : n;
}

static int same_str(const char *x, const char *y)
{
    return x == y || (x && y && !strcmp(x, y));
}

/* Does file `path` load in y to what it loads in x but for its objects' pods: the same
 * objects (identity, position, labels, references, Nova annotations, what the engine warns
 * of them) and the same warnings? Objects are sorted by key in both. */
static int same_but_pods(const struct rd_source *x, const struct rd_source *y, const char *path)
{
    size_t i = 0, j = 0, k = 0, l = 0, plen = strlen(path);

    for (;;) {
        const struct pl_object *p, *q;
        while (i < x->nobjects && !same_str(x->objects[i].file, path))
            i++;
        while (j < y->nobjects && !same_str(y->objects[j].file, path))
            j++;
        if (i == x->nobjects || j == y->nobjects)
            break;
        p = &x->objects[i++];
        q = &y->objects[j++];
        if (strcmp(p->key, q->key) || !same_str(p->api_version, q->api_version) ||
            p->line != q->line || p->labels.n != q->labels.n || p->nrefs != q->nrefs ||
            !same_str(p->nova_cluster, q->nova_cluster) ||
            !same_str(p->nova_spread_onto, q->nova_spread_onto) ||
            !same_str(p->warning, q->warning) || p->split != q->split)
            return 0;
        for (size_t n = 0; n < p->labels.n; n++) {
            if (strcmp(p->labels.v[n].key, q->labels.v[n].key) ||
                strcmp(p->labels.v[n].value, q->labels.v[n].value))
                return 0;
        }
        for (size_t n = 0; n < p->nrefs; n++) {
            if (strcmp(p->refs[n].key, q->refs[n].key) ||
                p->refs[n].optional != q->refs[n].optional)
                return 0;
        }
    }
    if (i != x->nobjects || j != y->nobjects)
        return 0;
    /* the warnings "path:...", in order */
    for (;;) {
        while (k < x->nwarnings &&
               (strncmp(x->warnings[k], path, plen) || x->warnings[k][plen] != ':'))
            k++;
        while (l < y->nwarnings &&
               (strncmp(y->warnings[l], path, plen) || y->warnings[l][plen] != ':'))
            l++;
        if (k == x->nwarnings || l == y->nwarnings)
            return k == x->nwarnings && l == y->nwarnings;
        if (strcmp(x->warnings[k++], y->warnings[l++]))
            return 0;
    }
}

/* Version `id` of source file `path` as it loads alone (load_alone): taken from the parse
 * caches when they hold it, else read and parsed. RC_OK with *one to release; RC_EINVALID when
 * it is not read (larger than a file may be) or does not load. */
static int base_version(struct rd_source *one, struct rc_git *g, const char *path, const char *id,
                        const struct rc_pass_options *o, size_t *nparsed, struct rc_arena *a)
{
    struct rd_cache *cache = rc_cache_parsed(o->cache);
    struct rc_pcache *pfile = rc_cache_parse_file(o->cache);
    struct rd_file f = {path, NULL, 0};
    struct rc_git_blob b;
    const char *refused = NULL;

    if (!rd_cache_has(cache, id, path, NULL) &&
        !(pfile && rc_pcache_load(pfile, cache, id, path, o->log))) {
        memset(&b, 0, sizeof(b));
        b.path = (char *)path;
        memcpy(b.id, id, 41);
        read_source_file(&f, &refused, g, &b, a);
        if (refused)
            return RC_EINVALID;
    }
    if (load_alone(one, &f, id, cache, nparsed, a) < 0)
        return RC_EINVALID;
    if (one->nerrors) {
        rd_source_release(one);
        return RC_EINVALID;
    }
    return RC_OK;
}

static int cmp_image_cluster(const void *key, const void *x)
{
    return strcmp(key, ((const struct rc_image_cluster *)x)->name);
}

static int cmp_policy_name(const void *key, const void *x)
{
    return strcmp(key, ((const struct pl_policy *)x)->name);
}

struct fc {
    size_t file;
    uint32_t cluster;
};

static int cmp_fc(const void *x, const void *y)
{
    const struct fc *p = x, *q = y;

    if (p->file != q->file)
        return p->file < q->file ? -1 : 1;
    return p->cluster < q->cluster ? -1 : p->cluster > q->cluster;
}

/* Is decision d one a partial pass can take again on its cluster alone? */
static int simple_decision(const struct compute *cp, const struct pl_decision *d)
{
    const struct pl_policy *p;
    const struct pl_cluster *cl;

    if (d->state != PL_STATE_PLACED || d->ntargets != 1 || !d->policy || !d->objects)
        return 0;
    p = bsearch(d->policy, cp->in.policies, cp->in.npolicies, sizeof(*p), cmp_policy_name);
    if (!p || p->spread != PL_SPREAD_NONE || p->noverrides || p->replace_when_full ||
        p->replace_unreachable_after > 0)
        return 0;
    cl = bsearch(d->targets[0].cluster, cp->in.clusters, cp->in.nclusters, sizeof(*cl),
                 cmp_cluster_name);
    if (!cl || cl->live || !cl->reachable)
        return 0;
    for (size_t k = 0; k < d->nobjects; k++) {
        const struct pl_object *o = d->objects[k];
        if (!o || o->nova_cluster || o->nova_spread_onto ||
            (!o->ns && !strcmp(o->kind, "Namespace")))
            return 0;
    }
    return 1;
}

/* The image of a full pass that the next `--once` pass may start from (see above), written
 * when `usable`, else removed: a stale image must not describe another deploy head. */
static void save_image(const struct rc_pass_options *o, const char key[41],
                       const struct rc_pass_result *out, const struct compute *cp, int usable,
                       struct rc_arena *a)
{
    const struct loaded *l = &cp->load;
    const struct rd_source *src = &l->src;
    const struct rc_git_blob *b = l->blobs;
    size_t n = l->nblobs, nfc = 0, cap = 0;
    struct rc_image im;
    struct fc *fc = NULL;
    unsigned char *covered;
    size_t *fileof;
    struct rc_err err = RC_ERR_INIT;
    double t0 = mono_ms();

    if (!usable || !l->have_src || l->nerrors || l->nkept || l->unresolved || !n) {
        rc_cache_image_write(o->cache, NULL, &err);
        return;
    }
    memset(&im, 0, sizeof(im));
    memcpy(im.key, key, 41);
    memcpy(im.commit, out->source, 41);
    memcpy(im.source, l->digest, 41);
    memcpy(im.deploy, out->deploy_new, 41);
    im.nwarnings = out->nwarnings;
    im.nlisted = out->nwarnings < RC_IMAGE_WARNINGS ? out->nwarnings : RC_IMAGE_WARNINGS;
    im.listed = (const char **)out->warnings;
    im.nfiles = n;
    im.files = rc_arena_calloc(a, n + 1, sizeof(*im.files));
    for (size_t i = 0; i < n; i++) {
        im.files[i].path = b[i].path;
        memcpy(im.files[i].id, b[i].id, 41);
    }
    im.nclusters = src->nclusters;
    im.clusters = rc_arena_calloc(a, src->nclusters + 1, sizeof(*im.clusters));
    for (size_t i = 0; i < src->nclusters; i++) {
        size_t k = listed_at(b, n, src->cluster_files ? src->cluster_files[i] : NULL);
        if (k == n) {
            rc_cache_image_write(o->cache, NULL, &err);
            return;
        }
        im.clusters[i].name = src->clusters[i].name;
        im.clusters[i].file = k;
        im.files[k].flags |= RC_IMAGE_CLUSTER;
    }
    for (size_t i = 0; i < src->npolicies; i++) {
        size_t k = listed_at(b, n, src->policies[i].file);
        if (k < n)
            im.files[k].flags |= RC_IMAGE_CONFIG;
    }
    covered = rc_arena_calloc(a, src->nobjects + 1, 1);
    fileof = rc_arena_calloc(a, src->nobjects + 1, sizeof(*fileof));
    for (size_t i = 0; i < src->nobjects; i++)
        fileof[i] = listed_at(b, n, src->objects[i].file);
    for (size_t i = 0; i < cp->res.ndecisions; i++) {
        const struct pl_decision *d = &cp->res.decisions[i];
        int simple;
        if (d->change == PL_CHANGE_REMOVED)
            continue;
        simple = simple_decision(cp, d);
        if (d->state == PL_STATE_PLACED)
            im.states[PL_STATE_PLACED]++;
        else if ((unsigned)d->state < 3)
            im.states[d->state]++;
        for (size_t k = 0; k < d->nobjects; k++) {
            /* the engine's objects are the input's, which are the source's */
            const struct pl_object *ob = d->objects ? d->objects[k] : NULL;
            size_t f;
            if (!ob || ob < src->objects || ob >= src->objects + src->nobjects)
                ob = bsearch(d->object_keys[k], src->objects, src->nobjects, sizeof(*ob),
                             cmp_object_key);
            f = ob ? fileof[ob - src->objects] : n;
            if (!ob || f == n) {
                rc_cache_image_write(o->cache, NULL, &err);
                return;
            }
            covered[ob - src->objects] = 1;
            if (!simple)
                im.files[f].flags |= RC_IMAGE_OTHER;
            for (size_t t = 0; t < d->ntargets; t++) {
                const struct pl_cluster *cl =
                    bsearch(d->targets[t].cluster, src->clusters, src->nclusters, sizeof(*cl),
                            cmp_cluster_name);
                if (!cl) {
                    im.files[f].flags |= RC_IMAGE_OTHER;
                    continue;
                }
                fc = rc_xgrow(fc, &cap, nfc + 1, sizeof(*fc));
                fc[nfc].file = f;
                fc[nfc++].cluster = (uint32_t)(cl - src->clusters);
            }
        }
    }
    /* Every partial pass loads the Namespace objects: render writes a cluster's Namespace
     * from the repository's object wherever a unit needs it, whichever clusters a policy
     * places the object itself on (one placed so is also RC_IMAGE_OTHER, above: a partial
     * pass that loads it decides it and so runs the whole pass). Objects in no decision but
     * those Namespaces (drop_bare_namespaces) no partial pass may touch. */
    for (size_t i = 0; i < src->nobjects; i++) {
        const struct pl_object *ob = &src->objects[i];
        size_t f = fileof[i];
        int ns = !ob->ns && !strcmp(ob->kind, "Namespace");
        if (f == n || (covered[i] && !ns))
            continue;
        im.files[f].flags |= ns ? RC_IMAGE_CONFIG : RC_IMAGE_OTHER;
    }
    if (nfc)
        qsort(fc, nfc, sizeof(*fc), cmp_fc);
    for (size_t i = 0; i < nfc;) {
        size_t j = i;
        struct rc_image_file *f = &im.files[fc[i].file];
        while (j < nfc && fc[j].file == fc[i].file)
            j++;
        f->clusters = rc_arena_calloc(a, j - i + 1, sizeof(*f->clusters));
        for (j = i; j < nfc && fc[j].file == fc[i].file;) {
            if (!f->nclusters || f->clusters[f->nclusters - 1] != fc[j].cluster)
                f->clusters[f->nclusters++] = fc[j].cluster;
            j++;
        }
        i = j;
    }
    free(fc);
    if (rc_cache_image_write(o->cache, &im, &err) < 0 && o->log)
        rc_log_warn(o->log, "%s (the next pass does all its work)", err.msg);
    else if (o->log)
        rc_log_debug(o->log, "pass image: %zu files, %zu clusters (%.0f ms)", im.nfiles,
                     im.nclusters, mono_ms() - t0);
}

/* The section of cluster `name` in capacity snapshot text ("- name: <name>" and the indented
 * lines after it): 1 with [*at, *at + *len), or 0. */
static int snapshot_section(size_t *at, size_t *len, const char *text, size_t n, const char *name)
{
    size_t nl = strlen(name);
    const char *p = text, *end = text + n;

    while (p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        const char *next = eol ? eol + 1 : end;
        if ((size_t)(next - p) == nl + 9 && !memcmp(p, "- name: ", 8) && !memcmp(p + 8, name, nl) &&
            p[8 + nl] == '\n') {
            const char *q = next;
            while (q < end && *q == ' ') {
                const char *e = memchr(q, '\n', (size_t)(end - q));
                q = e ? e + 1 : end;
            }
            *at = (size_t)(p - text);
            *len = (size_t)(q - p);
            return 1;
        }
        p = next;
    }
    return 0;
}

/* One change of the partial pass's deploy tree, with the bytes to write ('A', 'M'). */
struct pchange {
    struct rc_path_change ch;
    const char *data;
    size_t len;
};

static int cmp_pchange(const void *x, const void *y)
{
    return strcmp(((const struct pchange *)x)->ch.path, ((const struct pchange *)y)->ch.path);
}

static int not_partial(const struct rc_pass_options *o, const char *why)
{
    if (o->log)
        rc_log_debug(o->log, "a full pass: %s", why);
    return 0;
}

/* 1: the pass is done (committed, or found the deploy head up to date); 0: the change is not
 * one for a partial pass, and nothing was done that the full pass must undo; < 0: an error. */
static int partial_pass(struct rc_pass_result *out, struct rc_git *g,
                        const struct rc_pass_options *o, const char key[41], const char *deploy_ref,
                        struct compute *cp, struct rc_arena *a, struct rc_err *err)
{
    const struct rc_memo *memo = rc_cache_memo(o->cache);
    const struct listing whole = cp->listed, *all = &whole; /* cp->listed becomes the part */
    struct rc_image im;
    unsigned char *in_a, *load;
    uint32_t *acl;
    size_t nacl = 0, nload = 0, nchanged = 0;
    struct listing part;
    struct rd_record prev, sub;
    struct known_line kl;
    struct pchange *pc = NULL;
    size_t npc = 0, cap = 0;
    double t = mono_ms(), tp = rc_mono_seconds();
    int error, changed_any = 0;

    if (!o->cache || !o->last_pass || o->force || o->dry_run || o->propose_branch ||
        !out->deploy_old[0] || !memo->quiet || memo->nerrors || memo->nkept ||
        strcmp(memo->deploy, out->deploy_old) || !all->source[0] ||
        strcmp(all->source, out->source) || !all->n)
        return not_partial(o,
                           "no quiet memo of this deploy head, or a change the memo does not list");
    if (!rc_cache_image_read(&im, o->cache, a) || strcmp(im.key, key) ||
        strcmp(im.commit, memo->commit) || strcmp(im.source, memo->source) ||
        strcmp(im.deploy, out->deploy_old) || im.nfiles != all->n || !im.nclusters)
        return not_partial(o, "no pass image of this deploy head");

    /* the files that changed, and the clusters they are on */
    in_a = rc_arena_calloc(a, im.nclusters + 1, 1);
    for (size_t i = 0; i < all->n; i++) {
        const struct rc_image_file *f = &im.files[i];
        if (strcmp(f->path, all->blobs[i].path))
            return not_partial(o, "a source file was added, removed or renamed");
        if (!strcmp(f->id, all->blobs[i].id))
            continue;
        if (f->flags || !f->nclusters)
            return not_partial(o,
                               "a changed file holds what a pass over some clusters cannot decide");
        for (size_t k = 0; k < f->nclusters; k++)
            in_a[f->clusters[k]] = 1;
        nchanged++;
    }
    if (!nchanged)
        return not_partial(o, "no source file changed");
    /* the files with objects there: loaded for those objects alone (compute.only_keys), so
     * none may hold what a pass over some clusters cannot decide */
    for (size_t i = 0; i < im.nfiles; i++) {
        const struct rc_image_file *f = &im.files[i];
        for (size_t k = 0; k < f->nclusters; k++) {
            if (in_a[f->clusters[k]] && (f->flags & RC_IMAGE_OTHER))
                return not_partial(o, "a cluster of the change holds what a pass over some "
                                      "clusters cannot decide");
        }
    }
    acl = rc_arena_calloc(a, im.nclusters + 1, sizeof(*acl));
    for (size_t c = 0; c < im.nclusters; c++) {
        if (in_a[c])
            acl[nacl++] = (uint32_t)c;
    }
    if (nacl * PARTIAL_SHARE > im.nclusters && nacl > 1)
        return not_partial(o, "the change touches more than a quarter of the clusters");
    load = rc_arena_calloc(a, im.nfiles + 1, 1);
    for (size_t i = 0; i < im.nfiles; i++) {
        const struct rc_image_file *f = &im.files[i];
        int touches = (f->flags & RC_IMAGE_CONFIG) != 0;
        for (size_t k = 0; k < f->nclusters && !touches; k++)
            touches = in_a[f->clusters[k]];
        load[i] = (unsigned char)touches;
    }
    for (size_t k = 0; k < nacl; k++)
        load[im.clusters[acl[k]].file] = 1;
    memset(&part, 0, sizeof(part));
    memcpy(part.source, all->source, sizeof(part.source));
    memcpy(part.digest, all->digest, sizeof(part.digest));
    part.blobs = rc_arena_calloc(a, im.nfiles + 1, sizeof(*part.blobs));
    for (size_t i = 0; i < im.nfiles; i++) {
        if (load[i])
            part.blobs[nload++] = all->blobs[i];
    }
    part.n = nload;
    part.all = all->blobs;
    part.nall = all->n;

    /* the record, and its units on A */
    error = prev_record(&prev, &out->nrecord_read, &out->nrecord_bytes_read, &out->record_cached,
                        &kl, g, o->cache, o->last_pass, out->deploy_old, o->log, a, err);
    if (error < 0)
        return error;
    if (!prev.source || strcmp(prev.source, im.commit) || !same_render_digest(&prev, o))
        return not_partial(o,
                           "the record is not of the image's source commit, or of another render");
    sub = prev;
    sub.units = rc_arena_calloc(a, prev.nunits + 1, sizeof(*sub.units));
    sub.tallies = prev.tallies ? rc_arena_calloc(a, prev.nunits + 1, sizeof(*sub.tallies)) : NULL;
    sub.nunits = 0;
    for (size_t i = 0; i < prev.nunits; i++) {
        const struct pl_prev_unit *u = &prev.units[i];
        size_t on = 0;
        for (size_t k = 0; k < u->nclusters; k++) {
            const struct rc_image_cluster *c = bsearch(u->clusters[k], im.clusters, im.nclusters,
                                                       sizeof(*im.clusters), cmp_image_cluster);
            on += c && in_a[c - im.clusters];
        }
        if (!on)
            continue;
        if (on != u->nclusters)
            return not_partial(o, "a unit is on clusters of the change and others");
        if (sub.tallies)
            sub.tallies[sub.nunits] = prev.tallies[i];
        sub.units[sub.nunits++] = *u;
    }
    {
        size_t nk = 0;
        for (size_t i = 0; i < sub.nunits; i++)
            nk += sub.units[i].nobjects;
        cp->only_keys = rc_arena_calloc(a, nk + 1, sizeof(*cp->only_keys));
        for (size_t i = 0; i < sub.nunits; i++) {
            for (size_t k = 0; k < sub.units[i].nobjects; k++)
                cp->only_keys[cp->nonly++] = sub.units[i].objects[k];
        }
        rc_sort(cp->only_keys, cp->nonly, sizeof(*cp->only_keys), cmp_str);
    }
    cp->base_record = kl.blob;
    cp->kept_from = out->deploy_old;
    phase_mark(cp->ph, PH_RECORD, &t);

    /* load the files with objects on A, and what every pass needs */
    cp->listed = part;
    cp->partial = 1;
    error = compute_load(cp, g, out->source, &prev, o, a, err);
    out->nparsed = cp->load.nparsed;
    out->nparse_cached = cp->load.nfrom_file;
    if (error < 0)
        return error;
    phase_mark(cp->ph, PH_LOAD, &t);
    phase_end(out, RC_PHASE_LOAD, &tp);
    if (cp->load.nerrors || cp->load.src.nconflicts)
        return not_partial(o, "a file of the change does not load");
    {
        /* the changed files as the base loaded them: their objects may change their pods,
         * nothing else */
        size_t checked = 0; /* parses of a check, not of the pass's files */
        for (size_t i = 0; i < im.nfiles; i++) {
            struct rd_source was;
            int same;
            if (!strcmp(im.files[i].id, all->blobs[i].id))
                continue;
            if (base_version(&was, g, im.files[i].path, im.files[i].id, o, &checked, a) < 0)
                return not_partial(o, "a changed file's objects changed more than their pods");
            same = same_but_pods(&was, &cp->load.src, im.files[i].path);
            rd_source_release(&was);
            if (!same)
                return not_partial(o, "a changed file's objects changed more than their pods");
        }
        /* what the image says of the changed files, the record must say too: each of their
         * objects is in a unit it places on the clusters of the change */
        for (size_t i = 0; i < cp->load.src.nobjects; i++) {
            const struct pl_object *ob = &cp->load.src.objects[i];
            size_t k = listed_at(all->blobs, all->n, ob->file);
            if (k < all->n && strcmp(im.files[k].id, all->blobs[k].id) &&
                !bsearch(&ob->key, cp->only_keys, cp->nonly, sizeof(*cp->only_keys), cmp_str))
                return not_partial(o, "a changed file's objects are not on the clusters the "
                                      "image names");
        }
    }

    /* place and render A's units; every decision must stand */
    {
        struct rc_git_change *srcch = NULL;
        size_t nsrcch = 0;
        struct pl_cluster *fleet = NULL;
        size_t nfleet = 0;
        struct rc_observe_report rep;

        if (rc_git_diff_commits(&srcch, &nsrcch, g, prev.source, out->source, a, err) == RC_OK) {
            cp->reuse_ok = 1;
            cp->src_changes = srcch;
            cp->nsrc_changes = nsrcch;
        }
        rc_err_clear(err);
        error = rc_observe_fleet_report(&fleet, &nfleet, &cp->load.src, NULL, o->log, &rep, a, err);
        if (error < 0)
            return error;
        for (size_t i = 0; i < nfleet; i++) {
            if (fleet[i].live)
                return not_partial(o, "the clusters are live");
        }
        error = compute_place(cp, out->source, &sub, fleet, nfleet, o, a, err);
        save_join(&cp->load);
        if (error < 0)
            return error;
        phase_end(out, RC_PHASE_PLACE, &tp);
    }
    if (cp->res.ndecisions != sub.nunits || cp->tree.nwarnings)
        return not_partial(o, "a decision of the change would not stand");
    for (size_t i = 0; i < cp->res.ndecisions; i++) {
        const struct pl_decision *d = &cp->res.decisions[i];
        const struct pl_prev_unit *p = &sub.units[i];
        int same =
            d->change == PL_CHANGE_NONE && !strcmp(d->unit, p->unit) && d->nobjects == p->nobjects;
        /* decisions and the record's units are both in unit order; each unit has all the
         * objects the record lists (a file the image left out would lose them) */
        for (size_t k = 0; same && k < d->nobjects; k++)
            same = !strcmp(d->object_keys[k], p->objects[k]);
        if (!same)
            return not_partial(o, "a decision of the change would not stand");
    }

    /* the deploy tree: A's directories and snapshot sections as rendered now */
    for (size_t k = 0; k < nacl; k++) {
        const char *dir = rc_arena_printf(a, "clusters/%s/", im.clusters[acl[k]].name);
        size_t dl = strlen(dir), nold = 0, i = 0, j;
        struct rc_git_blob *old = NULL;
        error = rc_git_list_tree(&old, &nold, g, out->deploy_old, dir, a, err);
        if (error == RC_ENOTFOUND) {
            rc_err_clear(err);
            nold = 0;
        } else if (error < 0) {
            return error;
        }
        for (j = 0; j < cp->tree.nfiles && strncmp(cp->tree.files[j].path, dir, dl) < 0; j++)
            ;
        while (i < nold || (j < cp->tree.nfiles && !strncmp(cp->tree.files[j].path, dir, dl))) {
            const struct rd_tree_file *tf =
                j < cp->tree.nfiles && !strncmp(cp->tree.files[j].path, dir, dl)
                    ? &cp->tree.files[j]
                    : NULL;
            int c = !tf ? -1 : i >= nold ? 1 : strcmp(old[i].path, tf->path);
            char id[41];
            pc = rc_xgrow(pc, &cap, npc + 1, sizeof(*pc));
            memset(&pc[npc], 0, sizeof(*pc));
            if (c < 0) {
                pc[npc].ch.path = old[i++].path;
                pc[npc++].ch.op = 'D';
                continue;
            }
            if (c > 0 && tf->keep) {
                free(pc);
                return not_partial(o, "the deploy tree lacks a file to keep");
            }
            if (c == 0 && tf->keep) {
                i++;
                j++;
                continue;
            }
            if ((error = rc_git_digest(id, tf->data, tf->len, err)) < 0) {
                free(pc);
                return error;
            }
            if (c == 0 && !strcmp(id, old[i].id)) {
                i++;
                j++;
                continue;
            }
            pc[npc].ch.path = tf->path;
            pc[npc].ch.op = c == 0 ? 'M' : 'A';
            pc[npc].data = tf->data;
            pc[npc++].len = tf->len;
            i += c == 0;
            j++;
        }
    }
    for (size_t j = 0; j < cp->tree.nfiles; j++) {
        const struct rd_tree_file *tf = &cp->tree.files[j];
        char *old = NULL;
        size_t oldlen = 0;
        if (!strncmp(tf->path, "clusters/", 9) || record_path(tf->path))
            continue;
        if (tf->keep) {
            free(pc);
            return not_partial(
                o, "a file of the deploy tree would be kept outside the clusters of the change");
        }
        error = rc_git_read_file(&old, &oldlen, g, out->deploy_old, tf->path, a, err);
        if (error == RC_ENOTFOUND) {
            free(pc);
            rc_err_clear(err);
            return not_partial(o, "a file of the deploy tree is not in the deploy head");
        }
        if (error < 0) {
            free(pc);
            return error;
        }
        if (!strcmp(tf->path, CAPACITY_PATH)) {
            struct rc_buf nb = RC_BUF_INIT;
            size_t from = 0;
            /* the base's sections of A replaced by the ones rendered now, in place */
            for (size_t k = 0; k < nacl; k++) {
                size_t at, len, nat, nlen;
                const char *name = im.clusters[acl[k]].name;
                if (!snapshot_section(&at, &len, old, oldlen, name) ||
                    !snapshot_section(&nat, &nlen, tf->data, tf->len, name) || at < from) {
                    rc_buf_release(&nb);
                    free(pc);
                    return not_partial(
                        o, "the capacity snapshot does not list the clusters of the change");
                }
                rc_buf_add(&nb, old + from, at - from, NULL);
                rc_buf_add(&nb, tf->data + nat, nlen, NULL);
                from = at + len;
            }
            rc_buf_add(&nb, old + from, oldlen - from, NULL);
            if (nb.len != oldlen || memcmp(nb.ptr, old, oldlen)) {
                pc = rc_xgrow(pc, &cap, npc + 1, sizeof(*pc));
                pc[npc].ch.path = tf->path;
                pc[npc].ch.op = 'M';
                pc[npc].data = rc_arena_strndup(a, nb.ptr, nb.len);
                pc[npc++].len = nb.len;
            }
            rc_buf_release(&nb);
            continue;
        }
        if (oldlen == tf->len && !memcmp(old, tf->data, oldlen))
            continue;
        if (strcmp(tf->path, RD_SOURCE_FILE)) {
            free(pc);
            return not_partial(o, "a file outside the clusters of the change would change");
        }
        pc = rc_xgrow(pc, &cap, npc + 1, sizeof(*pc));
        pc[npc].ch.path = tf->path;
        pc[npc].ch.op = 'M';
        pc[npc].data = tf->data;
        pc[npc++].len = tf->len;
    }
    if (npc)
        qsort(pc, npc, sizeof(*pc), cmp_pchange);
    phase_mark(cp->ph, PH_DIFF, &t);

    /* commit as the full pass does: only when a file other than the snapshot and the source
     * commit's name changed */
    {
        struct rc_path_change *changes = rc_arena_calloc(a, npc + 1, sizeof(*changes));
        for (size_t i = 0; i < npc; i++) {
            changes[i] = pc[i].ch;
            changed_any |= rc_pass_path_commits(pc[i].ch.path);
        }
        out->paths_changed = changes;
        out->npaths_changed = npc;
    }
    if (changed_any) {
        struct rc_git_file *up = rc_arena_calloc(a, npc + 1, sizeof(*up));
        const char **rm = rc_arena_calloc(a, npc + 1, sizeof(*rm));
        size_t nup = 0, nrm = 0;
        struct rd_message_input in = RD_MESSAGE_INPUT_INIT;
        struct rd_content_change *cc = rc_arena_calloc(a, npc + 1, sizeof(*cc));
        struct rc_buf msg = RC_BUF_INIT;
        char tree[41], commit[41], *text = NULL, *author = NULL;
        struct rc_err ignore = RC_ERR_INIT;
        int64_t when = rc_git_commit_time(g, out->source);

        for (size_t i = 0; i < npc; i++) {
            const char *p = pc[i].ch.path;
            if (pc[i].ch.op == 'D') {
                rm[nrm++] = p;
                continue;
            }
            up[nup].path = p;
            up[nup].data = pc[i].data;
            up[nup++].len = pc[i].len;
            if (pc[i].ch.op != 'M' || strncmp(p, "clusters/", 9) ||
                !strcmp(p + strlen(p) - strlen("kustomization.yaml"), "kustomization.yaml") ||
                in.ncontent == MESSAGE_MAX_CONTENT)
                continue;
            {
                char *old = NULL;
                if (rc_git_read_file(&old, &cc[in.ncontent].old_len, g, out->deploy_old, p, a,
                                     &ignore) < 0)
                    continue;
                cc[in.ncontent].old_data = old;
            }
            cc[in.ncontent].path = p;
            cc[in.ncontent].new_data = pc[i].data;
            cc[in.ncontent++].new_len = pc[i].len;
        }
        free(pc);
        pc = NULL;
        error = rc_git_update_tree(tree, g, out->deploy_old, up, nup, rm, nrm, err);
        if (error == RC_ECONFLICT) {
            rc_err_clear(err);
            return not_partial(o, "a file would become a directory");
        }
        if (error < 0)
            return error;
        if (rc_git_commit_message(&text, g, out->source, a, &ignore) == RC_OK)
            in.source_subject = text;
        if (rc_git_commit_author(&author, g, out->source, a, &ignore) == RC_OK)
            in.source_author = author;
        in.res = &cp->res;
        in.prev = sub.units;
        in.nprev = sub.nunits;
        in.source_commit = out->source;
        in.content = cc;
        in.nwarnings = im.nwarnings;
        in.warnings = im.listed;
        in.states = im.states;
        error = rd_commit_message_ex(&msg, &in, err);
        if (error == RC_OK && when < 0)
            error = rc_err_set(err, RC_ERROR, "cannot read the time of commit %.12s", out->source);
        if (error == RC_OK)
            error = rc_git_commit(commit, g, tree, out->deploy_old, msg.ptr, when, err);
        rc_buf_release(&msg);
        if (error == RC_OK)
            error = rc_git_update_ref(g, deploy_ref, commit, out->deploy_old,
                                      "rightplace: placement commit", err);
        if (error < 0)
            return error;
        memcpy(out->deploy_new, commit, sizeof(out->deploy_new));
        out->committed = 1;
        phase_mark(cp->ph, PH_COMMIT, &t);
    }
    free(pc);
    phase_end(out, RC_PHASE_COMMIT, &tp);
    if (o->apply && out->deploy_new[0]) {
        /* a quiet pass has no live cluster: nothing to apply, as the full pass finds */
        int incomplete = 0;
        error = rc_apply_deploy_ex(&incomplete, g, out->deploy_new, cp->load.src.conns,
                                   cp->load.src.nclusters, o->resync, o->kube,
                                   rc_cache_apply_memory(o->cache), o->log, a, err);
        if (error < 0)
            return error;
        out->apply_incomplete |= incomplete;
    }
    phase_end(out, RC_PHASE_APPLY, &tp);

    out->partial = 1;
    out->result = &cp->res;
    out->input = &cp->in;
    out->nrendered = cp->tree.nrendered;
    out->record_kept = 1;
    out->placed = im.states[PL_STATE_PLACED];
    out->pending = im.states[PL_STATE_PENDING];
    out->unplaced = im.states[PL_STATE_UNPLACED];
    out->changed = 0;
    out->nwarnings = im.nlisted;
    out->warnings = im.listed;
    /* the memo and the image of the deploy head now */
    {
        struct rc_memo m;
        struct rc_err merr = RC_ERR_INIT;
        memset(&m, 0, sizeof(m));
        memcpy(m.key, key, 41);
        memcpy(m.commit, out->source, 41);
        memcpy(m.source, all->digest, 41);
        memcpy(m.deploy, out->deploy_new, 41);
        m.quiet = 1;
        if (rc_cache_set_memo(o->cache, &m, &merr) < 0 && o->log)
            rc_log_warn(o->log, "%s (the next pass will do all its work)", merr.msg);
        memcpy(im.commit, out->source, 41);
        memcpy(im.source, all->digest, 41);
        memcpy(im.deploy, out->deploy_new, 41);
        for (size_t i = 0; i < im.nfiles; i++)
            memcpy(im.files[i].id, all->blobs[i].id, 41);
        if (rc_cache_image_write(o->cache, &im, &merr) < 0 && o->log)
            rc_log_warn(o->log, "%s (the next pass does all its work)", merr.msg);
    }
    if (o->log)
        rc_log_debug(o->log, "partial pass: %zu file%s changed, %zu of %zu clusters, %zu units",
                     nchanged, nchanged == 1 ? "" : "s", nacl, im.nclusters, sub.nunits);
    return 1;
}

static int pass_once(struct rc_pass_result *out, struct rc_git *g, const struct rc_pass_options *o,
                     struct rc_arena *a, struct rc_err *err)
{
    double tp = rc_mono_seconds(); /* phase_seconds, for metrics */
    struct compute *cp = rc_arena_calloc(a, 1, sizeof(*cp));
    struct rd_record prev;
    struct known_line prev_line = {"", NULL, 0, 0, {0, NULL, 0}};
    struct record_job rjob;
    struct rc_path_change *changes = NULL;
    size_t nchanges = 0;
    struct pl_cluster *fleet = NULL;
    size_t nfleet = 0;
    char deploy_ref[512], propose_ref[512] = "";
    char key[41] = "";
    int error;
    int decisions_changed = 0, edited;
    double ph[PH_N] = {0}, t = mono_ms();
    char(*ids)[41] = NULL;
    size_t base_odd = 0; /* deploy-path entries of the head only a whole build puts right */
    int quiet = 0;

    memset(&rjob, 0, sizeof(rjob));
    if (snprintf(deploy_ref, sizeof(deploy_ref), "refs/heads/%s", o->deploy_branch) >=
        (int)sizeof(deploy_ref))
        return rc_err_set(err, RC_EINVALID, "deploy branch name '%.64s...' is too long",
                          o->deploy_branch);
    if (o->propose_branch) {
        if (snprintf(propose_ref, sizeof(propose_ref), "refs/heads/%s", o->propose_branch) >=
            (int)sizeof(propose_ref))
            return rc_err_set(err, RC_EINVALID, "proposal branch name '%.64s...' is too long",
                              o->propose_branch);
        if (!strcmp(o->propose_branch, o->deploy_branch) ||
            !strcmp(o->propose_branch, o->source_branch))
            return rc_err_set(err, RC_EINVALID,
                              "the proposal branch '%s' must differ from the source and deploy "
                              "branches",
                              o->propose_branch);
    }

    error = rc_git_fetch(g, err);
    if (error < 0)
        goto done;
    error = rc_git_resolve(out->source, g, o->source_rev ? o->source_rev : o->source_branch, err);
    if (error < 0) {
        if (error == RC_ENOTFOUND && o->source_rev)
            rc_err_set(err, RC_ENOTFOUND, "revision '%s' not found", o->source_rev);
        else if (error == RC_ENOTFOUND)
            rc_err_set(err, RC_ENOTFOUND, "source branch '%s' not found", o->source_branch);
        goto done;
    }
    out->deploy_old[0] = '\0';
    error = rc_git_resolve(out->deploy_old, g, deploy_ref, err);
    if (error == RC_ENOTFOUND) {
        out->deploy_old[0] = '\0';
        rc_err_clear(err);
    } else if (error < 0) {
        goto done;
    }
    memcpy(out->deploy_new, out->deploy_old, sizeof(out->deploy_new));
    out->proposal[0] = '\0';
    if (propose_ref[0]) {
        error = rc_git_resolve(out->proposal, g, propose_ref, err);
        if (error == RC_ENOTFOUND) {
            out->proposal[0] = '\0';
            rc_err_clear(err);
        } else if (error < 0) {
            goto done;
        }
    }
    phase_end(out, RC_PHASE_SYNC, &tp);

    if (o->cache) {
        int skip = 0;
        error = memo_key(key, o, err);
        /* a proposal awaiting review is recomputed every pass (it must follow the source) */
        if (error == RC_OK && !o->force && !o->dry_run &&
            (!out->proposal[0] || !strcmp(out->proposal, out->deploy_old)))
            error = memo_says_skip(&skip, &cp->listed, out, g, o, key, a, err);
        if (error < 0)
            goto done;
        if (skip) {
            out->skipped = 1;
            return RC_OK;
        }
    }

    /* a change that touches a few clusters (see partial_pass) */
    if (o->cache && !out->proposal[0]) {
        struct listing all = cp->listed;
        cp->ph = ph;
        error = partial_pass(out, g, o, key, deploy_ref, cp, a, err);
        if (error < 0)
            goto done;
        if (error == 1) {
            phase_log(o->log, ph);
            compute_release(cp);
            return RC_OK;
        }
        /* not for this change: the full pass starts from nothing of it */
        compute_release(cp);
        memset(cp, 0, sizeof(*cp));
        cp->listed = all;
        memset(ph, 0, sizeof(ph));
        for (int k = RC_PHASE_LOAD; k < RC_PHASE_COUNT; k++)
            out->phase_seconds[k] = 0; /* the attempt counts in the load's */
        t = mono_ms();
        out->nrecord_read = out->nrecord_bytes_read = 0;
        out->record_cached = 0;
    }

    /* the diff lists the deploy head: walked on another core while the source loads, unless
     * the handle keeps its listing (a loop pass after the one that made it) */
    if (out->deploy_old[0] && rc_git_list_ahead(g, out->deploy_old, err) < 0)
        rc_err_clear(err); /* listed in the diff then, which reports what fails */

    cp->ph = ph;
    phase_mark(NULL, 0, &t);
    if (out->deploy_old[0]) {
        error = detect_hand_edits(out, g, a, err);
        if (error < 0)
            goto done;
    }
    edited = record_edited(out->hand_edits, out->nhand_edits);
    error =
        prev_record(&prev, &out->nrecord_read, &out->nrecord_bytes_read, &out->record_cached,
                    &prev_line, g, o->cache, o->last_pass,
                    record_commit(out->deploy_old, out->hand_edit_base, edited), o->log, a, err);
    if (error < 0)
        goto done;
    /* a record whose files someone edited is written whole: a file kept would be the edit */
    cp->base_record = edited ? "" : prev_line.blob;
    cp->kept_from = out->deploy_old;
    phase_mark(ph, PH_RECORD, &t);
    if (kept_list_edited(out->hand_edits, out->nhand_edits))
        cp->kept_from = NULL;

    /* what the previous pass loaded and this one may not need goes now (not at the end of
     * that pass: its result pointed into it) */
    if (o->cache)
        rd_cache_sweep(rc_cache_parsed(o->cache));
    error = compute_load(cp, g, out->source, &prev, o, a, err);
    out->nparsed = cp->load.nparsed;
    out->nparse_cached = cp->load.nfrom_file;
    if (error < 0)
        goto done;
    phase_mark(ph, PH_LOAD, &t);
    out->nfile_errors = cp->load.nerrors;
    out->file_errors = cp->load.errors;
    phase_end(out, RC_PHASE_LOAD, &tp);

    /* Without a memo: the same source commit as the record's, nothing pending and no live
     * cluster is a pass that can change nothing (but the manifests were read to know it). */
    if (!o->force && !o->dry_run && prev.source && !strcmp(prev.source, out->source) &&
        same_render_digest(&prev, o) && !record_has_pending(&prev) &&
        !rc_observe_any_live(&cp->load.src) && !out->nhand_edits &&
        (!out->proposal[0] || !strcmp(out->proposal, out->deploy_old))) {
        out->skipped = 1;
        quiet = !cp->load.unresolved && !o->propose_branch;
        error = RC_OK;
        goto apply;
    }

    /* Observe live clusters; simulated ones keep their declared capacity. */
    {
        struct rc_observe_report rep;
        struct rc_kube_options ko = RC_KUBE_OPTIONS_INIT;
        if (o->kube)
            ko = *o->kube;
        /* a cluster still down since the last pass costs its timeout once, not per attempt */
        if (o->outage_file && rc_observe_any_live(&cp->load.src))
            ko.nknown_down = rc_outage_names(&ko.known_down, o->outage_file, a);
        /* another pass follows in this process: pods come from watches (rc_watch.h), and
         * the watchers of clusters gone from the source stop */
        if (!o->last_pass && o->cache)
            ko.watches = rc_cache_watches(o->cache);
        error = rc_observe_fleet_report(&fleet, &nfleet, &cp->load.src, o->kube ? &ko : NULL,
                                        o->log, &rep, a, err);
        if (error < 0)
            goto done;
        phase_mark(ph, PH_OBSERVE, &t);
        out->nunreachable = rep.nunreachable;
        out->nwatched = rep.nwatched;
        out->nwatched_nodes = rep.nwatched_nodes;
        out->nconfig_errors = rep.nconfig;
        memcpy(out->config_error, rep.config_msg, sizeof(out->config_error));
        /* how long each unreachable live cluster has been so (the engine moves units of
         * policies that opted in off one unreachable for longer than their grace); the
         * duration goes into the capacity snapshot, which replay reads */
        if (rep.nunreachable || o->outage_file) {
            int64_t now = o->now > 0 ? o->now : (int64_t)time(NULL);
            error = rc_outage_track(fleet, nfleet, o->outage_file, now, !o->dry_run, o->log, err);
            if (error < 0)
                goto done;
        }
    }
    phase_end(out, RC_PHASE_OBSERVE, &tp);
    /* an unreachable cluster keeps what it has and takes nothing new: the fleet is not in
     * sync, which the exit status says */
    for (size_t i = 0; i < nfleet; i++) {
        if (fleet[i].live && !fleet[i].reachable)
            out->apply_incomplete = 1;
    }
    /* Render only what changed: units whose decision and manifests are as the deploy head was
     * made from keep its files (not when someone edited the deploy branch by hand). */
    if (out->deploy_old[0] && prev.source && prev.source[0] && prev.render_digest &&
        !out->nhand_edits) {
        struct rc_git_change *srcch = NULL;
        size_t nsrcch = 0;
        if (same_render_digest(&prev, o) &&
            rc_git_diff_commits(&srcch, &nsrcch, g, prev.source, out->source, a, err) == RC_OK) {
            cp->reuse_ok = 1;
            cp->src_changes = srcch;
            cp->nsrc_changes = nsrcch;
        }
        rc_err_clear(err);
    }
    error = compute_place(cp, out->source, &prev, fleet, nfleet, o, a, err);
    save_join(&cp->load); /* the parse cache file, written beside observe, place and render */
    if (error < 0)
        goto done;
    t = mono_ms();
    out->result = &cp->res;
    out->input = &cp->in;
    if (cp->load.have_src) {
        size_t n = cp->load.src.nclusters;
        struct rd_cluster_conn *cc = rc_arena_calloc(a, n + 1, sizeof(*cc));

        for (size_t i = 0; i < n; i++) {
            const struct rd_cluster_conn *s = &cp->load.src.conns[i];

            cc[i] = *s;
            cc[i].name = s->name ? rc_arena_strdup(a, s->name) : NULL;
            cc[i].context = s->context ? rc_arena_strdup(a, s->context) : NULL;
            cc[i].file = s->file ? rc_arena_strdup(a, s->file) : NULL;
            cc[i].path = s->path ? rc_arena_strdup(a, s->path) : NULL;
        }
        out->conns = cc;
        out->nconns = n;
    }
    collect_warnings(out, cp, o, a);
    count_states(out, &cp->res);
    phase_end(out, RC_PHASE_PLACE, &tp);
    /* hand edits, a proposal waiting for review and configuration errors are reported by
     * every pass until resolved: not quiet */
    quiet = !rc_observe_any_live(&cp->load.src) && !cp->load.unresolved && !out->nhand_edits &&
            !out->nconfig_errors && !o->propose_branch;

    /* A broken file without an earlier version may be a renamed file whose objects are placed
     * (under its old path): while one exists, nothing is moved or removed. */
    if (cp->load.unresolved) {
        for (size_t i = 0; i < cp->res.ndecisions; i++) {
            const struct pl_decision *d = &cp->res.decisions[i];
            if (d->change != PL_CHANGE_MOVED && d->change != PL_CHANGE_REMOVED)
                continue;
            error = rc_err_set(err, RC_EINVALID,
                               "unit '%s' would be %s while a source file that did not load has "
                               "no earlier version (renamed?); nothing is moved or removed until "
                               "it is fixed",
                               d->unit, d->change == PL_CHANGE_MOVED ? "moved" : "removed");
            goto done;
        }
    }

    error = diff_tree(&changes, &nchanges, &ids, &base_odd, g, o->cache, &prev_line, !o->dry_run,
                      &out->nrecord_bytes_read, &out->nrecord_compared, &out->nrecord_bytes_hashed,
                      &out->nfiles_hashed, out->deploy_old, cp->reuse_ok, &cp->tree, a, err);
    if (error == RC_ENOTFOUND && cp->reuse_ok) {
        /* a file to keep is not there (the deploy tree was changed by hand): render it all */
        rc_err_clear(err);
        cp->reuse_ok = 0;
        error = compute_place(cp, out->source, &prev, fleet, nfleet, o, a, err);
        if (error == RC_OK)
            error = diff_tree(&changes, &nchanges, &ids, &base_odd, g, o->cache, &prev_line,
                              !o->dry_run, &out->nrecord_bytes_read, &out->nrecord_compared,
                              &out->nrecord_bytes_hashed, &out->nfiles_hashed, out->deploy_old, 0,
                              &cp->tree, a, err);
    }
    if (error < 0)
        goto done;
    /* ... nor is any object of a unit that stays (a unit that keeps some of its objects, or
     * goes from placed to pending): no file may leave a cluster's directory; nor a Namespace
     * the repository defined (the broken file may hold it), for a minimal one. */
    if (cp->load.unresolved) {
        const char *why = NULL;
        const struct rc_path_change *ch =
            unresolved_loss(changes, nchanges, &cp->load.src, &why, a);
        if (ch) {
            error = rc_err_set(err, RC_EINVALID,
                               "'%s' would %s while a source file that did not load has no "
                               "earlier version (renamed?); nothing is moved or removed until it "
                               "is fixed",
                               ch->path, why);
            goto done;
        }
    }
    if (o->cache && !o->last_pass)
        note_memo_blob(o->cache, &cp->tree, ids);
    {
        int k = find_tree_file(&cp->tree, RECORD_PATH);
        out->record_kept = k >= 0 && cp->tree.files[k].keep;
    }
    out->nrendered = cp->tree.nrendered;
    if (o->cache && !o->last_pass) {
        struct rd_record_stats st = rd_record_memo_stats(rc_cache_record_memo(o->cache));
        out->nrecord_written = st.units_written;
    }
    phase_mark(ph, PH_DIFF, &t);
    out->paths_changed = changes;
    out->npaths_changed = nchanges;
    for (size_t i = 0; i < nchanges; i++) {
        if (rc_pass_path_commits(changes[i].path))
            decisions_changed = 1;
    }
    if (!o->dry_run && !decisions_changed && out->proposal[0] && out->deploy_old[0] &&
        strcmp(out->proposal, out->deploy_old)) {
        /* nothing to propose any more (promoted, or the source went back): the proposal
         * branch points at the deploy head, so that promoting it changes nothing */
        error = rc_git_force_ref(g, propose_ref, out->deploy_old, out->proposal,
                                 "rightplace: nothing to propose", err);
        if (error < 0)
            goto done;
        memcpy(out->proposal, out->deploy_old, sizeof(out->proposal));
        out->proposed = 1;
    }
    if (o->dry_run || !decisions_changed)
        goto apply;

    {
        struct rc_git_file *files = rc_arena_calloc(a, cp->tree.nfiles + 1, sizeof(*files));
        struct rc_buf msg = RC_BUF_INIT;
        char tree[41], commit[41];

        for (size_t i = 0; i < cp->tree.nfiles; i++) {
            files[i].path = cp->tree.files[i].path;
            files[i].data = cp->tree.files[i].data;
            files[i].len = cp->tree.files[i].len;
            files[i].keep = cp->tree.files[i].keep;
            memcpy(files[i].id, ids[i], sizeof(files[i].id));
            files[i].differs = !files[i].keep && !ids[i][0];
        }
        if (!propose_ref[0])
            record_job_start(&rjob, o, cp, a);
        error = build_deploy_tree(tree, g, out->deploy_old, base_odd, files, &cp->tree, changes,
                                  nchanges, a, err);
        if (error < 0)
            goto done;
        int64_t when = rc_git_commit_time(g, out->source);

        error = commit_message(&msg, g, cp, &prev, out, changes, nchanges, a, err);
        if (error == RC_OK && when < 0)
            error = rc_err_set(err, RC_ERROR, "cannot read the time of commit %.12s", out->source);
        if (error == RC_OK)
            error = rc_git_commit(commit, g, tree, out->deploy_old[0] ? out->deploy_old : NULL,
                                  msg.ptr, when, err);
        rc_buf_release(&msg);
        if (error < 0)
            goto done;
        {
            /* a record the diff did not hash (rc_git_file.differs) has its id in the tree */
            int k = find_tree_file(&cp->tree, RECORD_PATH);
            if (k >= 0 && !cp->tree.files[k].keep && !ids[k][0] &&
                (error = rc_git_file_id(ids[k], g, commit, RECORD_PATH, err)) < 0)
                goto done;
            if (o->cache && !o->last_pass)
                note_memo_blob(o->cache, &cp->tree, ids);
        }
        if (propose_ref[0]) {
            /* the review gate: the deploy branch stays; the proposal is replaced */
            if (strcmp(out->proposal, commit)) {
                error = rc_git_force_ref(g, propose_ref, commit,
                                         out->proposal[0] ? out->proposal : NULL,
                                         "rightplace: placement proposal", err);
                if (error < 0)
                    goto done;
                memcpy(out->proposal, commit, sizeof(out->proposal));
                out->proposed = 1;
            }
            goto apply;
        }
        error =
            rc_git_update_ref(g, deploy_ref, commit, out->deploy_old[0] ? out->deploy_old : NULL,
                              "rightplace: placement commit", err);
        if (error < 0)
            goto done;
        memcpy(out->deploy_new, commit, sizeof(out->deploy_new));
        out->committed = 1;
        {
            int k = find_tree_file(&cp->tree, RECORD_PATH);
            out->nrecord_cache_written = record_job_finish(&rjob, 1, k >= 0 ? ids[k] : NULL);
            out->nrecord_shared = rjob.shared;
        }
        phase_mark(ph, PH_COMMIT, &t);
    }

apply:
    record_job_finish(&rjob, 0, NULL); /* not committed (a proposal): nothing kept */
    phase_log(o->log, ph);
    phase_end(out, RC_PHASE_COMMIT, &tp);
    if (o->apply && !o->dry_run && out->deploy_new[0]) {
        int incomplete = 0;
        error = rc_apply_deploy_ex(&incomplete, g, out->deploy_new, cp->load.src.conns,
                                   cp->load.have_src ? cp->load.src.nclusters : 0, o->resync,
                                   o->kube, rc_cache_apply_memory(o->cache), o->log, a, err);
        if (error < 0) {
            /* only the deploy branch moving may redo the pass; a conflict while applying
             * (a notes push) is an error of its own */
            if (error == RC_ECONFLICT)
                error = err->code = RC_ERROR;
            goto done;
        }
        out->apply_incomplete |= incomplete;
    }
    phase_end(out, RC_PHASE_APPLY, &tp);
    error = RC_OK;
    /* the record parsed from the deploy head, for the next process, unless a committed one
     * replaced it; with the writer's memo when this pass wrote that very blob (the head
     * another writer made, or the first pass after an upgrade or a lost state directory), so
     * that the next pass can tell its record unchanged without writing it whole */
    if (prev_line.blob[0] && prev_line.known && !out->record_cached && !out->committed &&
        !o->dry_run && rc_cache_record_file(o->cache)) {
        struct rc_rcache *rfile = rc_cache_record_file(o->cache);
        size_t before = rc_rcache_written(rfile);
        struct rc_err rerr = RC_ERR_INIT;
        int k = find_tree_file(&cp->tree, RECORD_PATH);
        const struct rd_record_memo *memo = cp->record_memo && k >= 0 && !cp->tree.files[k].keep &&
                                                    ids && ids[k][0] &&
                                                    !strcmp(ids[k], prev_line.blob)
                                                ? cp->record_memo
                                                : NULL;
        if (rc_rcache_save(rfile, prev_line.blob, &prev, &prev_line.line, memo, &rerr) < 0 &&
            o->log)
            rc_log_warn(o->log, "%s (the next process parses the record)", rerr.msg);
        out->nrecord_cache_written += rc_rcache_written(rfile) - before;
    }
    if (o->cache && !o->dry_run) {
        remember(o, key, out, cp, quiet && !out->apply_incomplete);
        if (o->last_pass && !out->skipped)
            save_image(o, key, out, cp,
                       quiet && !out->apply_incomplete && !out->nhand_edits && !base_odd, a);
        remember_reported(o->cache, out, &cp->load);
    }
done:
    record_job_finish(&rjob, 0, NULL);
    /* The cJSON trees go now; decisions and rendered files live on in the arena. Objects'
     * payloads must not be followed after the pass. The parse cache keeps what this pass
     * loaded, and nothing else. */
    compute_release(cp);
    return error;
}

int rc_pass_run(struct rc_pass_result *out, struct rc_git *g, const struct rc_pass_options *o,
                struct rc_arena *a, struct rc_err *err)
{
    int attempts = o->max_attempts > 0 ? o->max_attempts : 1;
    char last[RC_ERR_MSG_MAX] = "";
    int error = RC_OK;

    for (int i = 0; i < attempts; i++) {
        memset(out, 0, sizeof(*out));
        out->attempts = i + 1;
        rc_err_clear(err);
        error = pass_once(out, g, o, a, err);
        if (error != RC_ECONFLICT)
            return error;
        if (o->log)
            rc_log_info(o->log, "deploy branch moved under us (%s); redoing the pass", err->msg);
        snprintf(last, sizeof(last), "%s", err->msg);
        backoff(i);
    }
    return rc_err_set(err, RC_ECONFLICT, "deploy branch '%s': gave up after %d attempts: %s",
                      o->deploy_branch, attempts, last);
}

/* ==== Replay ==== */

int rc_replay(struct rc_replay_result *out, struct rc_git *g, const char *commit,
              const struct rc_pass_options *o, struct rc_arena *a, struct rc_err *err)
{
    struct compute c;
    struct rd_record rec, prev;
    struct rd_record_layout layout;
    struct rc_pass_options ro;
    char id[41], parent[41];
    char *cap = NULL;
    size_t caplen = 0;
    struct pl_cluster *fleet = NULL;
    size_t nfleet = 0;
    struct rc_path_change *changes = NULL;
    size_t nchanges = 0;
    struct rc_cache *mem = NULL;
    int error;

    memset(&c, 0, sizeof(c));
    memset(out, 0, sizeof(*out));
    error = rc_git_fetch(g, err);
    if (error < 0)
        goto done;
    error = rc_git_resolve(id, g, commit, err);
    if (error < 0)
        goto done;
    error = read_record(&rec, &layout, g, id, a, err);
    if (error < 0)
        goto done;
    if (!rec.source || !rec.source[0]) {
        error = rc_err_set(err, RC_EINVALID, "commit %.12s has no %s", id, RECORD_PATH);
        goto done;
    }
    /* The mode the commit was rendered in (push or pull: the objects' labels differ) is the
     * one whose render digest the record holds; --mode only for a record that names neither
     * (written by another version) */
    ro = *o;
    if (rec.render_digest && !same_render_digest(&rec, &ro)) {
        ro.render.pull = !ro.render.pull;
        if (!same_render_digest(&rec, &ro))
            ro.render.pull = o->render.pull;
    }
    /* and its record as the commit has it: one file, or that many shards (a commit made before
     * records were written in shards has one file whatever its size) */
    ro.render.record_shards = layout.shards;
    /* and as many warnings as it lists: a commit made before the record's bound lists all */
    if (!layout.warnings_omitted && layout.nwarnings > RD_RECORD_WARNINGS)
        ro.render.record_warnings = SIZE_MAX;
    /* The source is loaded as a pass loads it (through a cache: a batch at a time on every
     * core, each batch's text dropped once parsed, and past the budget the heaviest files
     * refused, as the pass that made the commit refused them), but through a cache of its
     * own, in memory: replay checks what passes made, so it takes nothing from the caller's
     * cache or the state directory's files. */
    error = rc_cache_new(&mem, NULL, err);
    if (error < 0)
        goto done;
    ro.cache = mem;
    ro.last_pass = 1;
    o = &ro;
    memcpy(out->source, rec.source, strlen(rec.source) < 40 ? strlen(rec.source) + 1 : 41);
    out->source[40] = '\0';
    error = rc_git_commit_parent(parent, g, id, err);
    if (error == RC_ENOTFOUND) {
        memset(&prev, 0, sizeof(prev));
        rc_err_clear(err);
    } else if (error < 0) {
        goto done;
    } else {
        /* the record and the list of kept versions the pass that made this commit started
         * from: the parent's, but for what someone edited by hand there */
        struct rc_git_change *edits = NULL;
        size_t nedits = 0;
        char base[41];
        error = hand_edits_of(&edits, &nedits, base, g, parent, a, err);
        if (error == RC_OK)
            error = read_record(&prev, NULL, g,
                                record_commit(parent, base, record_edited(edits, nedits)), a, err);
        if (error < 0)
            goto done;
        if (prev.source && prev.source[0])
            c.kept_from = kept_list_edited(edits, nedits) ? NULL : parent;
    }
    error = rc_git_read_file(&cap, &caplen, g, id, CAPACITY_PATH, a, err);
    if (error < 0)
        goto done;
    /* and its snapshot in the form it has: one written before RD_SOURCE_FILE named the source
     * alone names it too */
    ro.render.capacity_source = rd_capacity_names_source(cap, caplen);
    error = compute_load(&c, g, rec.source, &prev, o, a, err);
    if (error < 0)
        goto done;
    error = rd_capacity_parse(&fleet, &nfleet, &c.load.src.res, cap, caplen, a, err);
    if (error < 0) {
        rc_err_prefix(err, "commit %.12s: %s: ", id, CAPACITY_PATH);
        goto done;
    }
    error = compute_place(&c, rec.source, &prev, fleet, nfleet, o, a, err);
    if (error < 0)
        goto done;
    error = diff_tree(&changes, &nchanges, NULL, NULL, g, NULL, NULL, 0, NULL, NULL, NULL, NULL, id,
                      0, &c.tree, a, err);
    if (error < 0)
        goto done;
    /* a commit of the older form names its source in its record (compared but for that line)
     * and has no RD_SOURCE_FILE: not a difference */
    for (size_t i = 0; i < nchanges; i++) {
        if (changes[i].op == 'A' && !strcmp(changes[i].path, RD_SOURCE_FILE)) {
            memmove(&changes[i], &changes[i + 1], (nchanges - i - 1) * sizeof(*changes));
            nchanges--;
            break;
        }
    }
    out->match = nchanges == 0;
    out->nmismatch = nchanges;
    out->mismatch = changes;
done:
    compute_release(&c);
    rc_cache_free(mem);
    return error;
}

/* ==== Verdicts recomputed from a deploy commit's snapshot ==== */

static int cmp_cstr(const void *x, const void *y)
{
    return strcmp(*(const char *const *)x, *(const char *const *)y);
}

int rc_verdicts_recompute(struct rc_verdicts *out, struct rc_git *g, const char *commit,
                          const char *const *units, size_t nunits, const struct rc_pass_options *o,
                          struct rc_arena *a, struct rc_err *err)
{
    struct compute c;
    struct rd_record rec;
    struct pl_prev_unit *others = NULL;
    const char **asked = NULL;
    struct pl_decision *found = NULL;
    struct pl_cluster *fleet = NULL;
    size_t nfleet = 0, nothers = 0, nfound = 0;
    char *cap = NULL;
    size_t caplen = 0;
    int error;

    memset(&c, 0, sizeof(c));
    memset(out, 0, sizeof(*out));
    error = rc_git_resolve(out->commit, g, commit, err);
    if (error < 0)
        goto done;
    out->when = rc_git_commit_time(g, out->commit);
    error = read_record(&rec, NULL, g, out->commit, a, err);
    if (error < 0)
        goto done;
    if (!rec.source || !rec.source[0]) {
        error = rc_err_set(err, RC_EINVALID, "commit %.12s has no %s", out->commit, RECORD_PATH);
        goto done;
    }
    snprintf(out->source, sizeof(out->source), "%s", rec.source);
    error = rc_git_read_file(&cap, &caplen, g, out->commit, CAPACITY_PATH, a, err);
    if (error < 0)
        goto done;
    c.kept_from = out->commit;
    error = compute_load(&c, g, rec.source, &rec, o, a, err);
    if (error < 0)
        goto done;
    error = rd_capacity_parse(&fleet, &nfleet, &c.load.src.res, cap, caplen, a, err);
    if (error < 0) {
        rc_err_prefix(err, "commit %.12s: %s: ", out->commit, CAPACITY_PATH);
        goto done;
    }
    /* every other unit keeps what it has (and takes its capacity first); the units asked
     * about are placed afresh, which gives a verdict for every candidate */
    asked = rc_arena_calloc(a, nunits + 1, sizeof(*asked));
    if (nunits)
        memcpy(asked, units, nunits * sizeof(*asked));
    rc_sort(asked, nunits, sizeof(*asked), cmp_cstr);
    others = rc_arena_calloc(a, rec.nunits + 1, sizeof(*others));
    for (size_t i = 0; i < rec.nunits; i++) {
        if (!bsearch(&rec.units[i].unit, asked, nunits, sizeof(*asked), cmp_cstr))
            others[nothers++] = rec.units[i];
    }
    c.bounded_verdicts = 0; /* the units asked about are placed afresh: every verdict */
    error = compute_decide(&c, others, nothers, fleet, nfleet, a, err);
    if (error < 0)
        goto done;
    found = rc_arena_calloc(a, nunits + 1, sizeof(*found));
    for (size_t i = 0; i < c.res.ndecisions; i++) {
        const struct pl_decision *d = &c.res.decisions[i];
        if (d->change != PL_CHANGE_REMOVED &&
            bsearch(&d->unit, asked, nunits, sizeof(*asked), cmp_cstr)) {
            found[nfound] = *d;
            found[nfound].objects = NULL; /* their payloads go with the load */
            nfound++;
        }
    }
    out->ndecisions = nfound;
    out->decisions = found;
done:
    compute_release(&c);
    return error;
}
