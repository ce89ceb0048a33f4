/*
 * rd_source.c - the Load step over a whole source tree (see rd_source.h).
 *
 * Two stages. (1) Each file is parsed alone into a struct parsed: its objects, policies,
 * clusters, warnings and object keys, or one error; everything in memory of its own (an
 * arena, the cJSON trees, a resource-name table of its own), so that the result depends on
 * the file's bytes and path only and can be cached by blob id. (2) The files' results are
 * combined in path order: duplicates and colliding output paths, the pass's resource-name
 * table (each file's demand remapped onto it), sorting, namespaces. The same tree always
 * loads to the same inputs, whatever was cached.
 */
#include "rc_sort.h"
#include "rd_source.h"

#include <ctype.h>
#include <limits.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pl_basics.h"
#include "rc_arena.h"
#include "rc_buf.h"
#include "rc_hash.h"
#include "rc_mem.h"
#include "rc_thread.h"
#include "rd_demand.h"
#include "rd_object.h"
#include "rd_jarena.h"
#include "rd_pack.h"
#include "rd_policy.h"
#include "rd_yaml.h"

/* ==== A set of object keys -> where they were first seen ==== */

/* Open addressing, linear probing. Each entry keeps its key's hash: a probe compares hashes
 * before it follows a key pointer into some file's memory, and growing rehashes nothing. */
struct keyent {
    const char *key; /* NULL: empty */
    const char *path;
    int line;
    uint64_t hash;
};

struct keyset {
    size_t n, cap; /* cap: power of two, 0 when empty */
    struct keyent *v;
};

static uint64_t key_hash(const char *key)
{
    return rc_xxh64(key, strlen(key));
}

/* The entry of key (hash h), or the empty slot where it would go. s->cap must not be 0. */
static struct keyent *keyset_slot(const struct keyset *s, const char *key, uint64_t h)
{
    size_t i = (size_t)h & (s->cap - 1);

    while (s->v[i].key && (s->v[i].hash != h || strcmp(s->v[i].key, key)))
        i = (i + 1) & (s->cap - 1);
    return &s->v[i];
}

/* Room for n keys in all without growing (a load factor of at most 1/2). */
static void keyset_reserve(struct keyset *s, size_t n)
{
    struct keyset bigger = {0, s->cap ? s->cap : 64, NULL};

    while (bigger.cap < 2 * n)
        bigger.cap *= 2;
    if (bigger.cap == s->cap)
        return;
    bigger.v = rc_xcalloc(bigger.cap, sizeof(*bigger.v));
    for (size_t i = 0; i < s->cap; i++) {
        if (s->v[i].key)
            *keyset_slot(&bigger, s->v[i].key, s->v[i].hash) = s->v[i];
    }
    bigger.n = s->n;
    free(s->v);
    *s = bigger;
}

static struct keyent *keyset_find(const struct keyset *s, const char *key, uint64_t h)
{
    struct keyent *e;

    if (!s->cap)
        return NULL;
    e = keyset_slot(s, key, h);
    return e->key ? e : NULL;
}

/* Adds key (hash h), which the set does not hold. */
static void keyset_add(struct keyset *s, const char *key, uint64_t h, const char *path, int line)
{
    struct keyent *e;

    if (2 * (s->n + 1) > s->cap)
        keyset_reserve(s, s->n + 1 > s->cap ? s->n + 1 : s->cap);
    e = keyset_slot(s, key, h);
    e->key = key;
    e->path = path;
    e->line = line;
    e->hash = h;
    s->n++;
}

/* ==== Growable arrays (malloc'd while loading, copied into the arena at the end) ==== */

#define VEC(T)                                                                                     \
    struct {                                                                                       \
        size_t n, cap;                                                                             \
        T *v;                                                                                      \
    }

#define VEC_PUSH(vec)                                                                              \
    ((vec).v = rc_xgrow((vec).v, &(vec).cap, (vec).n + 1, sizeof(*(vec).v)),                       \
     memset(&(vec).v[(vec).n], 0, sizeof(*(vec).v)), &(vec).v[(vec).n++])

struct nsent {
    const char *name;
    const struct pl_labels *labels; /* NULL: no Namespace object */
};

struct cluster_ent {
    struct pl_cluster c;
    struct rd_cluster_conn conn;
    const char *file;
};

/* ==== One file, parsed alone ==== */

struct fkey {
    const char *key;
    uint64_t hash; /* key_hash(key): the load claims every key of every file on each pass */
    int line, col;
};

/* A document of a file that loaded, as rd_cache_export writes it: a workload is kept packed
 * by its object (objects[object]); any other document (Cluster, SchedulePolicy) is packed
 * here with the position of every node, in pre-order, since its parse reads positions also
 * when it succeeds (override lines). A workload's parse reads only its root's position when
 * it succeeds: keep it so, or keep positions for workloads too (load_docs). */
struct pdoc {
    long object; /* index into objects, or -1 */
    const unsigned char *packed;
    size_t packed_len;
    const struct rd_pos *pos;
    size_t npos;
};

struct parsed {
    char *path;             /* in arena */
    char *id;               /* in arena; NULL: not cached */
    struct rc_arena own;    /* what a cached file holds */
    struct rc_arena *arena; /* &own, or the caller's arena when nothing is cached */
    struct rd_docs *docs;
    struct pl_resnames res; /* this file's names; indices of its demand and capacity */
    const char *error;      /* broken: the message, and nothing below is set */
    size_t nobjects;
    struct pl_object *objects;
    size_t npolicies;
    struct pl_policy *policies;
    size_t nclusters;
    struct cluster_ent *clusters;
    size_t nwarnings;
    const char **warnings;
    size_t nkeys;
    struct fkey *keys; /* objects, Clusters, SchedulePolicies, in document order */
    size_t ndocs;
    struct pdoc *pdocs; /* each document, in order (rd_cache_export) */
    size_t bytes;
    size_t len;        /* of the file */
    unsigned gen;      /* the cache sweep that last saw it used */
    unsigned held_gen; /* the sweep since which the budget counts it (ledger_hold) */
    int over;          /* refused by the budget: holds the refusal alone; the next sweep frees it */
    struct rd_payload_file *payloads; /* its objects' packed manifests are there (rd_import) */
    size_t hash;                      /* cache_hash(id, path), once in a cache */
    struct parsed *next;              /* hash chain */
};

struct pstage {
    VEC(struct pl_object) objects;
    VEC(struct pl_policy) policies;
    VEC(struct cluster_ent) clusters;
    VEC(const char *) warnings;
    VEC(struct fkey) keys;
    struct keyset claimed; /* keys, by key, once the file has many (stage_claimed) */
};

static void pstage_free(struct pstage *s)
{
    free(s->objects.v);
    free(s->policies.v);
    free(s->clusters.v);
    free(s->warnings.v);
    free(s->keys.v);
    free(s->claimed.v);
}

/* Did the file already claim key (hash h)? The line where it did, in *line. A file of a few
 * objects is scanned; one of many (up to 10,000 documents) is looked up in a set, so that a
 * file's load stays linear in its objects. */
static int stage_claimed(struct pstage *s, const char *key, uint64_t h, int *line)
{
    const struct keyent *e;

    if (s->keys.n <= 16) {
        for (size_t i = 0; i < s->keys.n; i++) {
            if (s->keys.v[i].hash == h && !strcmp(s->keys.v[i].key, key)) {
                *line = s->keys.v[i].line;
                return 1;
            }
        }
        return 0;
    }
    if (!s->claimed.cap) {
        keyset_reserve(&s->claimed, 2 * s->keys.n);
        for (size_t i = 0; i < s->keys.n; i++)
            if (!keyset_find(&s->claimed, s->keys.v[i].key, s->keys.v[i].hash))
                keyset_add(&s->claimed, s->keys.v[i].key, s->keys.v[i].hash, NULL,
                           s->keys.v[i].line);
    }
    e = keyset_find(&s->claimed, key, h);
    if (e)
        *line = e->line;
    return e != NULL;
}

/* Claim key (hash h) for the file, at line:col. */
static void stage_claim(struct pstage *s, const char *key, uint64_t h, int line, int col)
{
    struct fkey *k = VEC_PUSH(s->keys);

    k->key = key;
    k->hash = h;
    k->line = line;
    k->col = col;
    if (s->claimed.cap)
        keyset_add(&s->claimed, key, h, NULL, line);
}

struct pctx {
    struct parsed *p;
    struct pstage st;
    size_t unlisted; /* warnings past RD_FILE_WARNINGS_MAX, counted only */
    int replay;      /* loading documents kept by rd_cache_export: their warnings are kept too */
    /* with replay: each document's packed bytes as kept (a workload keeps them as they are:
     * packing its tree again would give the same bytes) */
    const unsigned char **kept;
    const size_t *kept_len;
};

/* Room for another warning of the file; past RD_FILE_WARNINGS_MAX it is only counted. */
static int warning_room(struct pctx *c)
{
    if (c->st.warnings.n < RD_FILE_WARNINGS_MAX)
        return 1;
    c->unlisted++;
    return 0;
}

static void on_warn(void *payload, const char *file, struct rd_pos pos, const char *msg)
{
    struct pctx *c = payload;
    struct rc_arena *a = c->p->arena;

    if (warning_room(c))
        *VEC_PUSH(c->st.warnings) =
            pos.line > 0 ? rc_arena_printf(a, "%s:%d:%d: %s", file, pos.line, pos.col, msg)
                         : rc_arena_printf(a, "%s: %s", file, msg);
}

static int is_core(const struct rd_object *o, const char *kind)
{
    return o->group && !*o->group && !strcmp(o->kind, kind);
}

/* A key for the file being read; the same object twice in one file breaks it. */
static int file_claim(struct pctx *c, const char *key, const struct rd_object *o,
                      const struct rd_docs *docs, struct rc_err *err)
{
    struct rd_pos pos = rd_docs_pos(docs, o->root);
    uint64_t h = key_hash(key);
    int line;

    if (stage_claimed(&c->st, key, h, &line))
        return rd_err_at(err, RC_EINVALID, docs, o->root,
                         "duplicate object '%s' (already at line %d)", key, line);
    stage_claim(&c->st, key, h, pos.line > 0 ? pos.line : o->pos.line,
                pos.line > 0 ? pos.col : o->pos.col);
    return RC_OK;
}

/* A workload's identity as placement reads it, from render's object (its payload). */
static void object_of(struct pl_object *obj, struct rd_object *o)
{
    obj->key = o->key;
    obj->api_version = o->api_version;
    obj->kind = o->kind;
    obj->ns = o->ns;
    obj->name = o->name;
    obj->labels = o->labels;
    obj->file = o->file;
    obj->line = o->pos.line;
    obj->payload = o;
}

static int load_doc(struct pctx *c, struct rd_docs *docs, size_t i, const char *path,
                    struct rc_err *err)
{
    struct rc_arena *a = c->p->arena;
    cJSON *root = rd_docs_get(docs, i);
    struct rd_object *o = rc_arena_calloc(a, 1, sizeof(*o));
    int rc;

    if ((rc = rd_object_init(o, root, path, rd_docs_pos(docs, root), docs, a, err)) < 0)
        return rc;
    if (is_core(o, "List"))
        return rd_err_at(err, RC_EINVALID, docs, root,
                         "kind 'List' is not supported: write one object per document");
    if ((!strcmp(o->group, "rightplace.dev") || !strcmp(o->group, "policy.elotl.co")) &&
        !rd_is_cluster(o) && !rd_is_policy(o))
        /* a typo here would silently turn a cluster or a policy into a workload */
        return rd_err_at(err, RC_EINVALID, docs, root, "unknown kind '%s' in %s (expected %s)",
                         o->kind, o->api_version,
                         !strcmp(o->group, "rightplace.dev") ? "Cluster or SchedulePolicy"
                                                             : "SchedulePolicy");
    if (rd_is_cluster(o)) {
        struct cluster_ent *ce = VEC_PUSH(c->st.clusters);
        ce->file = path;
        if ((rc = rd_cluster_parse(&ce->c, &ce->conn, o, docs, &c->p->res, a, err)) < 0)
            return rc;
        return file_claim(c, rc_arena_printf(a, "Cluster/%s", o->name), o, docs, err);
    }
    if (rd_is_policy(o)) {
        struct pl_policy *p = VEC_PUSH(c->st.policies);
        size_t nw = 0;
        const char **w = NULL;
        if ((rc = rd_policy_parse_ex(p, o, docs, &nw, &w, a, err)) < 0)
            return rc;
        for (size_t k = 0; k < nw && !c->replay; k++)
            if (warning_room(c))
                *VEC_PUSH(c->st.warnings) = w[k];
        return file_claim(c, rc_arena_printf(a, "SchedulePolicy/%s", o->name), o, docs, err);
    }
    {
        struct pl_object *obj = VEC_PUSH(c->st.objects);
        object_of(obj, o);
        if ((rc = rd_demand_extract(obj, root, docs, &c->p->res, a, err)) < 0)
            return rc;
        return file_claim(c, o->key, o, docs, err);
    }
}

/* Exactly n (NULL for none): a cached file keeps these for as long as it is cached, and a
 * --once pass takes up every file's. A spare slot in each (a workload's file has no policy
 * and no Cluster, and one of each is 344 bytes) was 544 of a skyray job file's 2,832. */
#define TO_ARENA(a, dst, ndst, vec)                                                                \
    do {                                                                                           \
        (ndst) = (vec).n;                                                                          \
        (dst) = (vec).n ? rc_arena_calloc((a), (vec).n, sizeof(*(vec).v)) : NULL;                  \
        if ((vec).n)                                                                               \
            memcpy((dst), (vec).v, (vec).n * sizeof(*(vec).v));                                    \
    } while (0)

static void parsed_free(struct parsed *p)
{
    if (!p)
        return;
    rd_docs_free(p->docs);
    rc_arena_release(&p->own);
    rd_payload_file_unref(p->payloads);
    free(p);
}

/* ==== Packed manifests left in the parse cache's file (rd_import.payloads) ==== */

struct rd_payload_file {
    atomic_size_t refs;
    int fd;
};

static atomic_size_t payload_reads;

struct rd_payload_file *rd_payload_file_new(int fd)
{
    struct rd_payload_file *f = rc_xcalloc(1, sizeof(*f));

    atomic_init(&f->refs, 1);
    f->fd = fd;
    return f;
}

static struct rd_payload_file *payload_file_ref(struct rd_payload_file *f)
{
    if (f)
        atomic_fetch_add(&f->refs, 1);
    return f;
}

void rd_payload_file_unref(struct rd_payload_file *f)
{
    if (!f || atomic_fetch_sub(&f->refs, 1) != 1)
        return;
    if (f->fd >= 0)
        close(f->fd);
    free(f);
}

int rd_payload_read(unsigned char **out, const struct rd_payload_file *f, uint64_t off, size_t len,
                    uint64_t sum, const char *what, struct rc_err *err)
{
    unsigned char *b = rc_xmalloc(len ? len : 1);

    *out = NULL;
    atomic_fetch_add(&payload_reads, 1);
    if (!f || rc_file_read_at(f->fd, b, len, off) < 0) {
        free(b);
        return rc_err_set(err, RC_ERROR,
                          "parse cache changed under the pass (object %s): cannot read its "
                          "manifest",
                          what ? what : "?");
    }
    if (rc_xxh64(b, len) != sum) {
        free(b);
        return rc_err_set(err, RC_ERROR,
                          "parse cache changed under the pass (object %s): its manifest's "
                          "bytes differ",
                          what ? what : "?");
    }
    *out = b;
    return RC_OK;
}

size_t rd_payload_reads(void)
{
    return atomic_load(&payload_reads);
}

/* The positions of every node under n (n included, its siblings not), in pre-order. */
static void collect_pos(const struct rd_docs *docs, const cJSON *n, int top, struct rd_pos **v,
                        size_t *count, size_t *cap)
{
    for (; n; n = top ? NULL : n->next) {
        *v = rc_xgrow(*v, cap, *count + 1, sizeof(**v));
        (*v)[(*count)++] = rd_docs_pos(docs, n);
        if (n->child)
            collect_pos(docs, n->child, 0, v, count, cap);
    }
}

/* Keep a document that is not a workload as rd_cache_export writes it: packed, with the
 * positions of all its nodes. RC_EINVALID when it cannot be packed. */
static int keep_doc(struct pdoc *d, const struct rd_docs *docs, const cJSON *root,
                    struct rc_arena *a)
{
    struct rd_pos *v = NULL;
    size_t n = 0, cap = 0;
    struct rd_pos *pos;

    struct rc_err err = RC_ERR_INIT;

    d->object = -1;
    if (rd_pack(&d->packed, &d->packed_len, root, a, &err) < 0)
        return RC_EINVALID;
    collect_pos(docs, root, 1, &v, &n, &cap);
    pos = rc_arena_calloc(a, n + 1, sizeof(*pos));
    memcpy(pos, v, n * sizeof(*pos));
    free(v);
    d->pos = pos;
    d->npos = n;
    return RC_OK;
}

/* Load every document of c->p->docs (what parsing does after the YAML). */
static int load_docs(struct pctx *c, struct rc_err *ferr)
{
    struct parsed *p = c->p;
    size_t ndocs = rd_docs_count(p->docs);
    int rc = RC_OK;

    p->pdocs = rc_arena_calloc(p->arena, ndocs + 1, sizeof(*p->pdocs));
    p->ndocs = ndocs;
    for (size_t i = 0; rc >= 0 && i < ndocs; i++) {
        size_t before = c->st.objects.n;
        rc = load_doc(c, p->docs, i, p->path, ferr);
        if (rc >= 0 && c->st.objects.n > before)
            p->pdocs[i].object = (long)before; /* packed below, with its root's position */
        else if (rc >= 0 && keep_doc(&p->pdocs[i], p->docs, rd_docs_get(p->docs, i), p->arena) < 0)
            rc = rc_err_set(ferr, RC_EINVALID, "%s: cannot hold this document", p->path);
    }
    if (rc >= 0 && p->res.n - PL_RES_FIRST_EXTENDED > RD_FILE_EXTENDED_MAX) {
        rc = rc_err_set(ferr, RC_EINVALID,
                        "%s: names %d extended resources; at most %d in one file ('%s', ...)",
                        p->path, p->res.n - PL_RES_FIRST_EXTENDED, RD_FILE_EXTENDED_MAX,
                        p->res.name[PL_RES_FIRST_EXTENDED]);
    }
    /* What placement reads was copied out by load_doc; render needs each workload's tree, so
     * it is kept packed (about the YAML's size, a few times less than the trees) and the loaded
     * trees and their positions are freed after this (rd_pack.h). */
    if (rc >= 0 && c->st.objects.n) {
        size_t total = 0;
        unsigned char *at;
        const unsigned char **kept = NULL;
        if (c->kept) {
            kept = rc_xcalloc(c->st.objects.n, sizeof(*kept));
            for (size_t i = 0; i < ndocs; i++) {
                if (p->pdocs[i].object >= 0) {
                    struct rd_object *ro = c->st.objects.v[p->pdocs[i].object].payload;
                    kept[p->pdocs[i].object] = c->kept[i];
                    ro->packed_len = c->kept_len[i];
                }
            }
        }
        for (size_t i = 0; rc >= 0 && i < c->st.objects.n; i++) {
            struct rd_object *ro = c->st.objects.v[i].payload;
            if (!kept && !(ro->packed_len = rd_pack_size(ro->root)))
                rc = rc_err_set(ferr, RC_EINVALID, "%s: cannot hold this document", p->path);
            total += ro->packed_len;
        }
        /* one allocation of the exact size for the file's objects, which the arena takes;
         * its blocks (grown from small ones, not reserved: what placement reads is not known
         * before it is read) hold the small rest */
        at = rc >= 0 ? rc_arena_take(p->arena, rc_xmalloc(total + 1), total + 1) : NULL;
        for (size_t i = 0; rc >= 0 && i < c->st.objects.n; i++) {
            struct rd_object *ro = c->st.objects.v[i].payload;
            ro->packed = at;
            if (kept) {
                memcpy(at, kept[i], ro->packed_len);
                at += ro->packed_len;
            } else {
                at = rd_pack_write(at, ro->root);
            }
            ro->root = NULL;
        }
        free(kept);
    }
    return rc;
}

/* The end of parsing: the trees go, and p holds what the file loaded to, or its error. */
static void finish(struct pctx *c, int rc, const struct rc_err *ferr)
{
    struct parsed *p = c->p;

    rd_docs_free(p->docs);
    p->docs = NULL;
    if (rc < 0) {
        p->error = rc_arena_strdup(p->arena, ferr->msg[0] ? ferr->msg : "unreadable file");
        p->ndocs = 0;
        return;
    }
    TO_ARENA(p->arena, p->objects, p->nobjects, c->st.objects);
    TO_ARENA(p->arena, p->policies, p->npolicies, c->st.policies);
    TO_ARENA(p->arena, p->clusters, p->nclusters, c->st.clusters);
    if (c->unlisted)
        *VEC_PUSH(c->st.warnings) =
            rc_arena_printf(p->arena, "%s: %zu more warnings (a file lists at most %d)", p->path,
                            c->unlisted, RD_FILE_WARNINGS_MAX);
    TO_ARENA(p->arena, p->warnings, p->nwarnings, c->st.warnings);
    TO_ARENA(p->arena, p->keys, p->nkeys, c->st.keys);
}

/* Parse one file alone. refused: refuse it unread with that problem. Never fails: a broken
 * file is a struct parsed with an error. */
static struct parsed *parse_file(const struct rd_file *f, const char *id, const char *refused,
                                 struct rc_arena *into)
{
    const struct rd_yaml_limits limits = RD_YAML_LIMITS_INIT;
    struct parsed *p = rc_xcalloc(1, sizeof(*p));
    struct pctx c;
    struct rd_diag diag;
    struct rc_err ferr = RC_ERR_INIT;
    struct rd_jarena ja;
    int rc;

    memset(&c, 0, sizeof(c));
    p->arena = into ? into : &p->own;
    c.p = p;
    diag.warn = on_warn;
    diag.payload = &c;
    pl_resnames_init(&p->res);
    p->path = rc_arena_strdup(p->arena, f->path);
    p->len = f->len;
    p->id = id ? rc_arena_strdup(p->arena, id) : NULL;
    if (refused) {
        p->error = rc_arena_printf(p->arena, "%s: %s", p->path, refused);
        goto done;
    }
    /* the trees live only until finish: built in an arena, freed at once (rd_jarena.h) */
    rd_jarena_begin(&ja);
    rc = rd_yaml_load(&p->docs, p->path, f->data ? f->data : "", f->len, &limits, &diag, &ferr);
    if (rc >= 0)
        rc = load_docs(&c, &ferr);
    finish(&c, rc, &ferr);
    rd_jarena_end(&ja);
done:
    pstage_free(&c.st);
    p->bytes = sizeof(*p) + p->own.used_total + rd_docs_bytes(p->docs);
    return p;
}

/* ==== The cache ==== */

struct rd_cache {
    size_t n, cap; /* cap: power of two */
    struct parsed **slot;
    unsigned gen;
    size_t used; /* entries marked with gen (mark_used) */
    size_t bytes;
    unsigned long anon; /* ids of entries nobody may look up */
    /* The budget of one pass (rd_cache_limit): the entries counted against it since the last
     * sweep, a heap with the one to refuse first on top, and their bytes. */
    size_t limit, ledger;
    char *over;           /* the problem of a file it refuses */
    struct parsed **heap; /* a plain list until the budget is first passed (heapified) */
    size_t nheap, capheap;
    int heapified;
    size_t nover; /* entries refused by it, freed at the next sweep */
};

int rd_cache_new(struct rd_cache **out)
{
    struct rd_cache *c = rc_xcalloc(1, sizeof(*c));

    c->cap = 256;
    c->slot = rc_xcalloc(c->cap, sizeof(*c->slot));
    c->gen = 1;
    *out = c;
    return RC_OK;
}

static size_t cache_hash(const char *id, const char *path)
{
    return (size_t)rc_xxh64_pair(id, path);
}

static struct parsed *cache_get(const struct rd_cache *c, const char *id, const char *path)
{
    size_t h = cache_hash(id, path);

    /* the hash first: an entry's strings are in its own arena, a cache miss away */
    for (struct parsed *p = c->slot[h & (c->cap - 1)]; p; p = p->next) {
        if (p->hash == h && !strcmp(p->id, id) && !strcmp(p->path, path))
            return p;
    }
    return NULL;
}

static void ledger_hold(struct rd_cache *c, struct parsed *p);

static void cache_put(struct rd_cache *c, struct parsed *p)
{
    size_t h;

    if (c->n + 1 > c->cap) {
        size_t ncap = c->cap * 2;
        struct parsed **ns = rc_xcalloc(ncap, sizeof(*ns));
        for (size_t i = 0; i < c->cap; i++) {
            struct parsed *q = c->slot[i], *next;
            for (; q; q = next) {
                next = q->next;
                h = q->hash & (ncap - 1);
                q->next = ns[h];
                ns[h] = q;
            }
        }
        free(c->slot);
        c->slot = ns;
        c->cap = ncap;
    }
    p->hash = cache_hash(p->id, p->path);
    h = p->hash & (c->cap - 1);
    p->next = c->slot[h];
    c->slot[h] = p;
    c->n++;
    c->bytes += p->bytes;
    ledger_hold(c, p);
}

/* ==== The budget of one pass ==== */

/* a is refused before b: it takes more memory parsed, or as much and comes later by path (by
 * id, for two versions of one path). So which files a budget refuses is decided by the files
 * alone: not by the order they come in, nor by which were parsed before. */
static int heavier(const struct parsed *a, const struct parsed *b)
{
    int d;

    if (a->bytes != b->bytes)
        return a->bytes > b->bytes;
    d = strcmp(a->path, b->path);
    return d ? d > 0 : strcmp(a->id, b->id) > 0;
}

static void heap_push(struct rd_cache *c, struct parsed *p)
{
    size_t i;

    c->heap = rc_xgrow(c->heap, &c->capheap, c->nheap + 1, sizeof(*c->heap));
    if (!c->heapified) { /* within the budget so far: nothing need be ordered */
        c->heap[c->nheap++] = p;
        return;
    }
    for (i = c->nheap++; i > 0 && heavier(p, c->heap[(i - 1) / 2]); i = (i - 1) / 2)
        c->heap[i] = c->heap[(i - 1) / 2];
    c->heap[i] = p;
}

/* Move heap[i] down to its place among its descendants. */
static void heap_down(struct rd_cache *c, size_t i)
{
    struct parsed *p = c->heap[i];

    for (;;) {
        size_t k = 2 * i + 1;
        if (k >= c->nheap)
            break;
        if (k + 1 < c->nheap && heavier(c->heap[k + 1], c->heap[k]))
            k++;
        if (!heavier(c->heap[k], p))
            break;
        c->heap[i] = c->heap[k];
        i = k;
    }
    c->heap[i] = p;
}

static struct parsed *heap_pop(struct rd_cache *c)
{
    struct parsed *top;

    if (!c->heapified) {
        for (size_t i = c->nheap / 2; i-- > 0;)
            heap_down(c, i);
        c->heapified = 1;
    }
    top = c->heap[0];
    c->heap[0] = c->heap[--c->nheap];
    if (c->nheap)
        heap_down(c, 0);
    return top;
}

/* p, which holds what a file parsed to, becomes that file's refusal in place: what it held is
 * freed, its key and address stay (a load that took p before sees the refusal; the next sweep
 * frees it, so no later pass finds it). */
static void refuse_over(struct rd_cache *c, struct parsed *p)
{
    size_t was = p->bytes;
    char *path = rc_xstrdup(p->path), *id = rc_xstrdup(p->id);

    rd_docs_free(p->docs);
    p->docs = NULL;
    if (p->arena == &p->own) /* else the caller's arena: its bytes go with it */
        rc_arena_release(&p->own);
    p->path = rc_arena_strdup(p->arena, path);
    p->id = rc_arena_strdup(p->arena, id);
    free(path);
    free(id);
    pl_resnames_init(&p->res);
    p->nobjects = p->npolicies = p->nclusters = p->nwarnings = p->nkeys = p->ndocs = 0;
    p->objects = NULL;
    p->policies = NULL;
    p->clusters = NULL;
    p->warnings = NULL;
    p->keys = NULL;
    p->pdocs = NULL;
    p->error = rc_arena_printf(p->arena, "%s: %s (this file takes %zu KiB parsed)", p->path,
                               c->over, (was + 1023) >> 10);
    p->over = 1;
    p->bytes = sizeof(*p) + p->own.used_total;
    c->bytes = c->bytes - was + p->bytes;
    c->nover++;
}

/* While the entries counted hold more than the budget, the heaviest is refused. Refusing the
 * heaviest first keeps exactly the lightest files that fit together, whatever order they are
 * counted in. */
static void ledger_trim(struct rd_cache *c)
{
    while (c->limit && c->ledger > c->limit) {
        struct parsed *q = heap_pop(c);
        c->ledger -= q->bytes;
        refuse_over(c, q);
    }
}

/* Count p against the budget, once per sweep (p itself may be the one refused). */
static void ledger_hold(struct rd_cache *c, struct parsed *p)
{
    if (!c->limit || p->error || p->held_gen == c->gen)
        return;
    p->held_gen = c->gen;
    heap_push(c, p);
    c->ledger += p->bytes;
    ledger_trim(c);
}

void rd_cache_limit(struct rd_cache *c, size_t max_bytes, const char *over)
{
    if (!c)
        return;
    free(c->over);
    c->over = rc_xstrdup(over ? over : "over the memory limit of the load");
    c->limit = max_bytes;
    ledger_trim(c);
}

/* ==== Parsing ahead, on several threads ==== */

/* Run work(arg) on up to `threads` threads, this one included (at most RD_PRIME_THREADS_MAX,
 * and no more than n, the items the workers share), and wait for them all. The workers take
 * items until none is left, so a thread that cannot be started only means fewer threads. */
struct same_work {
    void (*work)(void *);
    void *arg;
};

static void same_share(void *p, size_t k)
{
    const struct same_work *s = p;

    (void)k;
    s->work(s->arg);
}

/* The threads for n items: `threads`, at least 1, at most RD_PRIME_THREADS_MAX and n. */
static size_t threads_for_items(int threads, size_t n)
{
    size_t t = threads > 1 ? (size_t)threads : 1;

    if (t > RD_PRIME_THREADS_MAX)
        t = RD_PRIME_THREADS_MAX;
    if (t > n)
        t = n ? n : 1;
    return t;
}

static void run_on_threads(void (*work)(void *), void *arg, int threads, size_t n)
{
    struct same_work s = {work, arg};

    rc_threads_run(same_share, &s, threads_for_items(threads, n));
}

struct prime {
    const struct rd_file *files;
    const char *const *ids;
    struct parsed **out;
    size_t n;
    atomic_size_t next;
};

static void prime_worker(void *arg)
{
    struct prime *pr = arg;

    for (;;) {
        size_t i = atomic_fetch_add(&pr->next, 1);
        if (i >= pr->n)
            return;
        /* parse_file touches nothing shared: its own arena, its own libyaml parser */
        if (pr->out[i] == NULL && pr->files[i].data)
            pr->out[i] = parse_file(&pr->files[i], pr->ids[i], NULL, NULL);
    }
}

static void prime_setup(struct prime *pr, const struct rd_cache *c, const struct rd_file *files,
                        const char *const *ids, size_t n)
{
    memset(pr, 0, sizeof(*pr));
    pr->files = files;
    pr->ids = ids;
    pr->n = n;
    pr->out = rc_xcalloc(n + 1, sizeof(*pr->out));
    atomic_init(&pr->next, 0);
    for (size_t i = 0; i < n; i++) {
        if (!ids[i] || cache_get(c, ids[i], files[i].path))
            pr->out[i] = (struct parsed *)c; /* not to parse: a marker, never followed */
    }
}

/* Into the cache in the order given, whatever order the threads parsed in. */
static void prime_put(struct rd_cache *c, struct prime *pr, size_t *nparsed)
{
    for (size_t i = 0; i < pr->n; i++) {
        struct parsed *p = pr->out[i];
        if (!p || p == (struct parsed *)c)
            continue;
        if (cache_get(c, p->id, p->path)) { /* the same (id, path) twice, or put meanwhile */
            parsed_free(p);
            continue;
        }
        cache_put(c, p);
        if (nparsed)
            (*nparsed)++;
    }
    free(pr->out);
    pr->out = NULL;
}

int rd_cache_prime(struct rd_cache *c, const struct rd_file *files, const char *const *ids,
                   size_t n, int threads, size_t *nparsed)
{
    struct prime pr;

    if (!c || !ids)
        return RC_EINVALID;
    prime_setup(&pr, c, files, ids, n);
    run_on_threads(prime_worker, &pr, threads, n);
    prime_put(c, &pr, nparsed);
    return RC_OK;
}

struct rd_prime_job {
    struct prime pr;
    struct rc_threads_bg bg;
};

static void prime_share(void *arg, size_t k)
{
    (void)k;
    prime_worker(arg);
}

struct rd_prime_job *rd_cache_prime_start(struct rd_cache *c, const struct rd_file *files,
                                          const char *const *ids, size_t n, int threads)
{
    struct rd_prime_job *job = rc_xcalloc(1, sizeof(*job));

    prime_setup(&job->pr, c, files, ids, n);
    rc_threads_start(&job->bg, prime_share, &job->pr, threads_for_items(threads, n));
    return job;
}

void rd_cache_prime_finish(struct rd_cache *c, struct rd_prime_job *job, size_t *nparsed)
{
    if (!job)
        return;
    prime_worker(&job->pr); /* this thread takes what is left too */
    rc_threads_join(&job->bg);
    prime_put(c, &job->pr, nparsed);
    free(job);
}

int rd_cache_refused(const struct rd_cache *c, const char *id, const char *path)
{
    const struct parsed *p = c && id ? cache_get(c, id, path) : NULL;

    return p && p->over;
}

int rd_cache_has(const struct rd_cache *c, const char *id, const char *path, size_t *len)
{
    const struct parsed *p = c && id ? cache_get(c, id, path) : NULL;

    if (p && len)
        *len = p->len;
    return p != NULL;
}

/* p was used by the load of this sweep's generation */
static void mark_used(struct rd_cache *c, struct parsed *p)
{
    if (p->gen != c->gen) {
        p->gen = c->gen;
        c->used++;
    }
}

void rd_cache_sweep(struct rd_cache *c)
{
    if (!c)
        return;
    /* every entry was used and none refused by the budget: nothing to free, and no entry need
     * be read to know it */
    for (size_t i = 0; (c->used != c->n || c->nover) && i < c->cap; i++) {
        struct parsed **pp = &c->slot[i];
        while (*pp) {
            struct parsed *p = *pp;
            if (p->gen != c->gen || p->over) {
                *pp = p->next;
                c->n--;
                c->bytes -= p->bytes;
                parsed_free(p);
            } else {
                pp = &p->next;
            }
        }
    }
    c->gen++;
    c->used = 0;
    c->nover = 0;
    c->nheap = 0;
    c->heapified = 0;
    c->ledger = 0;
}

void rd_cache_free(struct rd_cache *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->cap; i++) {
        struct parsed *p = c->slot[i], *next;
        for (; p; p = next) {
            next = p->next;
            parsed_free(p);
        }
    }
    free(c->slot);
    free(c->heap);
    free(c->over);
    free(c);
}

size_t rd_cache_count(const struct rd_cache *c)
{
    return c ? c->n : 0;
}

size_t rd_cache_bytes(const struct rd_cache *c)
{
    return c ? c->bytes : 0;
}

/* f of every entry's arena, summed. */
static size_t sum_arenas(const struct rd_cache *c, size_t (*f)(const struct rc_arena *))
{
    size_t n = 0;

    for (size_t i = 0; c && i < c->cap; i++) {
        for (const struct parsed *p = c->slot[i]; p; p = p->next)
            n += f(&p->own);
    }
    return n;
}

size_t rd_cache_unused(const struct rd_cache *c)
{
    return sum_arenas(c, rc_arena_unused);
}

size_t rd_cache_held(const struct rd_cache *c)
{
    return sum_arenas(c, rc_arena_held);
}

/* ==== A parsed file as bytes, for another process (rd_cache_export) ==== */

/*
 * An entry starts with its kind: 0 a file that loaded, 1 a broken one. A broken file keeps
 *   <file length> <len> <message>   its error, which starts with "<path>:"
 * (an error depends on the blob, its path and this build alone; a refusal does not, and is
 * not kept: the budget's, or one made unread). What a file that loaded keeps, all numbers
 * unsigned LEB128 (signed ones zigzag):
 *   <take-up bytes>                 what taking the rest up allocates in the entry's arena
 *   <file length> <bytes held> <nwarnings> (<len> <text>)...
 *   <nres> (<len> <name>)...        the file's extended resource names, in index order
 *   <ndocs> (<tag> <packed len> <packed bytes> ...)...
 * A document that is not a workload (tag 0) is followed by the positions of all its nodes in
 * pre-order (<npos> (<line> <col>)...: struct pdoc): its parse reads them. A workload (tag 1)
 * is followed by its root's position and by what load_doc derived from it, as <len> <bytes>
 * (put_object): a file of workloads alone is taken up from those, its trees not expanded
 * (import_derived); a file with any other document is loaded from the trees again.
 */

static void put_uv(struct rc_buf *b, size_t v)
{
    unsigned char t[RD_VARINT_MAX];

    rc_buf_add(b, t, (size_t)(rd_varint_put(t, v) - t), NULL);
}

static void put_bytes(struct rc_buf *b, const void *data, size_t n)
{
    put_uv(b, n);
    rc_buf_add(b, data, n, NULL);
}

static void put_sv(struct rc_buf *b, int64_t v)
{
    put_uv(b, (size_t)(((uint64_t)v << 1) ^ (uint64_t)(v >> 63)));
}

static void put_str(struct rc_buf *b, const char *s)
{
    put_bytes(b, s, strlen(s));
}

/* NULL as 0, else the length plus one */
static void put_opt(struct rc_buf *b, const char *s)
{
    put_uv(b, s ? strlen(s) + 1 : 0);
    if (s)
        rc_buf_add(b, s, strlen(s), NULL);
}

static void put_labels(struct rc_buf *b, const struct pl_labels *l)
{
    put_uv(b, l->n);
    for (size_t i = 0; i < l->n; i++) {
        put_str(b, l->v[i].key);
        put_str(b, l->v[i].value);
    }
}

static void put_pod(struct rc_buf *b, const struct pl_pod *pod)
{
    size_t nres = PL_RES_MAX;

    put_str(b, pod->role);
    put_uv(b, pod->count);
    while (nres && !pod->req.v[nres - 1])
        nres--;
    put_uv(b, nres);
    for (size_t r = 0; r < nres; r++)
        put_sv(b, pod->req.v[r]);
    put_labels(b, &pod->node_selector);
    put_uv(b, pod->ntolerations);
    for (size_t i = 0; i < pod->ntolerations; i++) {
        const struct pl_toleration *t = &pod->tolerations[i];
        put_str(b, t->key);
        put_uv(b, (size_t)(t->exists != 0));
        put_str(b, t->value);
        put_str(b, t->effect);
    }
    put_uv(b, pod->naffinity);
    for (size_t i = 0; i < pod->naffinity; i++) {
        const struct pl_selector *sel = &pod->affinity[i];
        put_uv(b, sel->n);
        for (size_t k = 0; k < sel->n; k++) {
            put_str(b, sel->req[k].key);
            put_uv(b, (size_t)sel->req[k].op);
            put_uv(b, sel->req[k].nvalues);
            for (size_t v = 0; v < sel->req[k].nvalues; v++)
                put_str(b, sel->req[k].values[v]);
        }
    }
}

/* What load_doc derived from a workload: its rd_object (the key, group and version follow
 * from the rest) and its pl_object (file and payload are the entry's). */
static void put_object(struct rc_buf *b, const struct pl_object *obj, const struct rd_object *o)
{
    put_str(b, o->api_version);
    put_str(b, o->kind);
    put_opt(b, o->ns);
    put_str(b, o->name);
    put_labels(b, &o->labels);
    put_uv(b, obj->npods);
    for (size_t i = 0; i < obj->npods; i++)
        put_pod(b, &obj->pods[i]);
    put_sv(b, obj->replicas);
    put_uv(b, (size_t)obj->split);
    put_sv(b, obj->parallelism);
    put_sv(b, obj->completions);
    put_opt(b, obj->warning);
    put_opt(b, obj->nova_cluster);
    put_opt(b, obj->nova_spread_onto);
    put_uv(b, obj->nrefs);
    for (size_t i = 0; i < obj->nrefs; i++) {
        put_str(b, obj->refs[i].key);
        put_uv(b, (size_t)(obj->refs[i].optional != 0));
    }
}

#define EXPORT_FORMAT 4

enum { ENTRY_LOADED = 0, ENTRY_BROKEN = 1 };

void rd_cache_export_version(char *out, size_t n)
{
    snprintf(out, n, "export %d libyaml %s cjson %s", EXPORT_FORMAT, rd_yaml_version(),
             cJSON_Version());
}

static struct parsed *import_rest(const char *id, const char *path, const void *data, size_t len,
                                  struct rd_payload_file *payloads, uint64_t off, size_t first);

static int export_rest(const struct parsed *p, struct rc_buf *out);

/* The error a broken entry may hold: "<path>:" and more, shorter than any message. */
static int broken_msg_ok(const char *path, const char *msg, size_t len)
{
    size_t plen = strlen(path);

    return len > plen + 1 && len < RC_ERR_MSG_MAX && !memchr(msg, '\0', len) &&
           !memcmp(msg, path, plen) && msg[plen] == ':';
}

int rd_cache_export(const struct rd_cache *c, const char *id, const char *path, struct rc_buf *out)
{
    const struct parsed *p = c && id && path ? cache_get(c, id, path) : NULL;
    struct rc_buf rest = RC_BUF_INIT;
    struct parsed *t;
    size_t first = 0;
    int error;

    if (!p || p->over)
        return RC_ENOTFOUND;
    if (p->error) {
        if (!broken_msg_ok(p->path, p->error, strlen(p->error)))
            return RC_ENOTFOUND; /* parsed again next time */
        put_uv(out, ENTRY_BROKEN);
        put_uv(out, p->len);
        put_str(out, p->error);
        return RC_OK;
    }
    error = export_rest(p, &rest);
    if (error == RC_OK) {
        put_uv(out, ENTRY_LOADED);
        /* taken up once here, so that every take-up can size its arena's first block to
         * hold all it allocates (blocks otherwise start at 4 KiB: a --once pass takes up
         * every file, and the unused ends of their blocks are a quarter of its memory) */
        t = import_rest(id, path, rest.ptr, rest.len, NULL, 0, 0);
        first = t ? rc_arena_bumped(&t->own) : 0;
        parsed_free(t);
        put_uv(out, first);
        rc_buf_add(out, rest.ptr, rest.len, NULL);
    }
    rc_buf_release(&rest);
    return error;
}

static int export_rest(const struct parsed *p, struct rc_buf *out)
{
    put_uv(out, p->len);
    put_uv(out, p->bytes);
    put_uv(out, p->nwarnings);
    for (size_t i = 0; i < p->nwarnings; i++)
        put_bytes(out, p->warnings[i], strlen(p->warnings[i]));
    put_uv(out, (size_t)(p->res.n - PL_RES_FIRST_EXTENDED));
    for (int r = PL_RES_FIRST_EXTENDED; r < p->res.n; r++)
        put_str(out, p->res.name[r]);
    put_uv(out, p->ndocs);
    for (size_t i = 0; i < p->ndocs; i++) {
        const struct pdoc *d = &p->pdocs[i];
        if (d->object >= 0) {
            const struct pl_object *obj = &p->objects[d->object];
            const struct rd_object *ro = obj->payload;
            struct rc_buf derived = RC_BUF_INIT;
            const unsigned char *bytes;
            unsigned char *owned = NULL;
            struct rc_err rerr = RC_ERR_INIT;
            if (rd_object_packed(&bytes, &owned, ro, &rerr) < 0)
                return RC_ERROR; /* not kept: the caller drops what was appended */
            put_uv(out, 1);
            put_bytes(out, bytes, ro->packed_len);
            free(owned);
            put_uv(out, (size_t)(ro->pos.line > 0 ? ro->pos.line : 0));
            put_uv(out, (size_t)(ro->pos.col > 0 ? ro->pos.col : 0));
            put_object(&derived, obj, ro);
            put_bytes(out, derived.ptr, derived.len);
            rc_buf_release(&derived);
            continue;
        }
        put_uv(out, 0);
        put_bytes(out, d->packed, d->packed_len);
        put_uv(out, d->npos);
        for (size_t k = 0; k < d->npos; k++) {
            put_uv(out, (size_t)(d->pos[k].line > 0 ? d->pos[k].line : 0));
            put_uv(out, (size_t)(d->pos[k].col > 0 ? d->pos[k].col : 0));
        }
    }
    return RC_OK;
}

struct reader {
    const unsigned char *p, *end;
    int bad;
};

static size_t get_uv(struct reader *r)
{
    size_t v = 0;

    if (!r->bad && rd_varint_get(&r->p, r->end, &v) < 0)
        r->bad = 1;
    return r->bad ? 0 : v;
}

/* n bytes at the reader (not copied); NULL when fewer are left. */
static const unsigned char *get_span(struct reader *r, size_t *n)
{
    const unsigned char *at;

    *n = get_uv(r);
    if (r->bad || *n > (size_t)(r->end - r->p)) {
        r->bad = 1;
        return NULL;
    }
    at = r->p;
    r->p += *n;
    return at;
}

static int get_int(struct reader *r)
{
    size_t v = get_uv(r);

    if (v > INT_MAX)
        r->bad = 1;
    return r->bad ? 0 : (int)v;
}

static int64_t get_sv(struct reader *r)
{
    uint64_t v = (uint64_t)get_uv(r);

    return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

/* A count of items that take at least one byte each: more than are left is damage. */
static size_t get_count(struct reader *r)
{
    size_t n = get_uv(r);

    if (n > (size_t)(r->end - r->p))
        r->bad = 1;
    return r->bad ? 0 : n;
}

/* A string (without NUL bytes), copied into a; "" once the reader is bad. */
static const char *get_str(struct reader *r, struct rc_arena *a)
{
    size_t n;
    const unsigned char *s = get_span(r, &n);

    if (s && memchr(s, '\0', n))
        r->bad = 1;
    return r->bad ? "" : rc_arena_strndup(a, (const char *)s, n);
}

static const char *get_opt(struct reader *r, struct rc_arena *a)
{
    size_t n = get_uv(r);
    const unsigned char *s = r->p;

    if (r->bad || n == 0)
        return NULL;
    if (n - 1 > (size_t)(r->end - r->p) || memchr(s, '\0', n - 1)) {
        r->bad = 1;
        return NULL;
    }
    r->p += n - 1;
    return rc_arena_strndup(a, (const char *)s, n - 1);
}

static void get_labels(struct reader *r, struct pl_labels *l, struct rc_arena *a)
{
    l->n = get_count(r);
    l->v = l->n ? rc_arena_calloc(a, l->n, sizeof(*l->v)) : NULL;
    for (size_t i = 0; i < l->n; i++) {
        l->v[i].key = get_str(r, a);
        l->v[i].value = get_str(r, a);
    }
}

static void get_pod(struct reader *r, struct pl_pod *pod, int nres, struct rc_arena *a)
{
    size_t n;

    pod->role = get_str(r, a);
    n = get_uv(r);
    if (n > UINT32_MAX)
        r->bad = 1;
    pod->count = (uint32_t)n;
    n = get_uv(r);
    if (n > (size_t)nres)
        r->bad = 1;
    for (size_t k = 0; k < n && !r->bad; k++)
        pod->req.v[k] = get_sv(r);
    get_labels(r, &pod->node_selector, a);
    pod->ntolerations = get_count(r);
    pod->tolerations =
        pod->ntolerations ? rc_arena_calloc(a, pod->ntolerations, sizeof(*pod->tolerations)) : NULL;
    for (size_t i = 0; i < pod->ntolerations; i++) {
        struct pl_toleration *t = &pod->tolerations[i];
        t->key = get_str(r, a);
        t->exists = get_uv(r) != 0;
        t->value = get_str(r, a);
        t->effect = get_str(r, a);
    }
    pod->naffinity = get_count(r);
    pod->affinity =
        pod->naffinity ? rc_arena_calloc(a, pod->naffinity, sizeof(*pod->affinity)) : NULL;
    for (size_t i = 0; i < pod->naffinity; i++) {
        struct pl_selector *sel = &pod->affinity[i];
        sel->n = get_count(r);
        sel->req = rc_arena_calloc(a, sel->n + 1, sizeof(*sel->req));
        for (size_t k = 0; k < sel->n; k++) {
            struct pl_requirement *q = &sel->req[k];
            q->key = get_str(r, a);
            n = get_uv(r);
            if (n > PL_OP_LT)
                r->bad = 1;
            q->op = (enum pl_op)n;
            q->nvalues = get_count(r);
            q->values = rc_arena_calloc(a, q->nvalues + 1, sizeof(*q->values));
            for (size_t v = 0; v < q->nvalues; v++)
                q->values[v] = get_str(r, a);
        }
    }
}

/* What put_object wrote, into o and obj; 0, or -1 when the bytes do not decode. */
static int get_object(struct reader *r, struct rd_object *o, struct pl_object *obj,
                      const struct parsed *p, struct rd_pos pos)
{
    struct rc_arena *a = p->arena;
    const char *slash;
    size_t n;

    o->api_version = get_str(r, a);
    o->kind = get_str(r, a);
    o->ns = get_opt(r, a);
    o->name = get_str(r, a);
    if (r->bad)
        return -1;
    slash = strchr(o->api_version, '/');
    o->group = slash ? rc_arena_strndup(a, o->api_version, (size_t)(slash - o->api_version)) : "";
    o->version = slash ? slash + 1 : o->api_version;
    o->key = o->ns ? rc_arena_join(a, '/', (const char *const[]){o->ns, o->kind, o->name}, 3)
                   : rc_arena_join(a, '/', (const char *const[]){o->kind, o->name}, 2);
    get_labels(r, &o->labels, a);
    o->file = p->path;
    o->pos = pos;
    object_of(obj, o);
    obj->npods = get_count(r);
    /* as the parse leaves them (rd_demand.c): no array for none, no slot to spare (a pod is
     * 200 bytes, and a --once pass takes up every workload's file) */
    obj->pods = obj->npods ? rc_arena_calloc(a, obj->npods, sizeof(*obj->pods)) : NULL;
    for (size_t i = 0; i < obj->npods && !r->bad; i++)
        get_pod(r, &obj->pods[i], p->res.n, a);
    obj->replicas = get_sv(r);
    n = get_uv(r);
    if (n > PL_SPLIT_WHOLE)
        r->bad = 1;
    obj->split = (enum pl_split_kind)n;
    obj->parallelism = get_sv(r);
    obj->completions = get_sv(r);
    obj->warning = get_opt(r, a);
    obj->nova_cluster = get_opt(r, a);
    obj->nova_spread_onto = get_opt(r, a);
    obj->nrefs = get_count(r);
    {
        struct pl_ref *refs = rc_arena_calloc(a, obj->nrefs + 1, sizeof(*refs));
        for (size_t i = 0; i < obj->nrefs; i++) {
            refs[i].key = get_str(r, a);
            refs[i].optional = get_uv(r) != 0;
        }
        obj->refs = refs;
    }
    return r->bad || r->p != r->end ? -1 : 0;
}

/* The ranges rd_demand_extract reads the fields in. */
static int demand_ok(const struct pl_object *obj)
{
    if (obj->replicas < -1 || obj->replicas > INT32_MAX || obj->parallelism < -1 ||
        obj->parallelism > INT32_MAX || obj->completions < -1 || obj->completions > INT32_MAX)
        return 0;
    for (size_t i = 0; i < obj->npods; i++) {
        for (int r = 0; r < PL_RES_MAX; r++) {
            if (obj->pods[i].req.v[r] < 0)
                return 0;
        }
    }
    return 1;
}

/* A file of workloads alone, taken up from what load_doc derived (no tree is expanded):
 * what load_docs and finish would have left in p. 0, or -1 when the bytes do not decode. */
static int import_derived(struct pctx *c, size_t ndocs, const unsigned char *const *packs,
                          const size_t *packs_len, const struct rd_pos *pos,
                          const unsigned char *const *derived, const size_t *derived_len,
                          const unsigned char *data, struct rd_payload_file *payloads, uint64_t off)
{
    struct parsed *p = c->p;
    size_t total = 0;
    unsigned char *at;

    p->pdocs = rc_arena_calloc(p->arena, ndocs + 1, sizeof(*p->pdocs));
    p->ndocs = ndocs;
    for (size_t i = 0; i < ndocs; i++) {
        struct reader r = {derived[i], derived[i] + derived_len[i], 0};
        struct rd_object *o = rc_arena_calloc(p->arena, 1, sizeof(*o));
        struct pl_object *obj = VEC_PUSH(c->st.objects);
        uint64_t h;
        int line;
        /* what a parse would refuse is refused here too (then the caller parses the file):
         * the identity that names paths, the ranges the demand's fields are read in, and
         * an object once per file */
        if (get_object(&r, o, obj, p, pos[i]) < 0 || !rd_object_identity_ok(o) || !demand_ok(obj))
            return -1;
        h = key_hash(o->key);
        if (stage_claimed(&c->st, o->key, h, &line))
            return -1;
        o->packed_len = packs_len[i];
        total += packs_len[i];
        p->pdocs[i].object = (long)i;
        stage_claim(&c->st, o->key, h, pos[i].line, pos[i].col);
    }
    if (payloads) { /* left in the file: read when a tree is asked for */
        for (size_t i = 0; i < ndocs; i++) {
            struct rd_object *o = c->st.objects.v[i].payload;
            o->lazy = payloads;
            o->lazy_off = off + (uint64_t)(packs[i] - data);
            o->lazy_sum = rc_xxh64(packs[i], packs_len[i]);
        }
        p->payloads = payload_file_ref(payloads);
        return 0;
    }
    /* one allocation for the packed manifests, as load_docs makes */
    at = rc_arena_take(p->arena, rc_xmalloc(total + 1), total + 1);
    for (size_t i = 0; i < ndocs; i++) {
        struct rd_object *o = c->st.objects.v[i].payload;
        o->packed = at;
        memcpy(at, packs[i], packs_len[i]);
        at += packs_len[i];
    }
    return 0;
}

/* A broken file's entry: its error, as its parse gave it */
static struct parsed *import_broken(const char *id, const char *path, struct reader *r)
{
    const struct rd_yaml_limits limits = RD_YAML_LIMITS_INIT;
    size_t flen = get_uv(r), n;
    const unsigned char *msg = get_span(r, &n);
    size_t plen, ilen;
    struct parsed *p;
    char *at;

    if (r->bad || !msg || r->p != r->end || flen > limits.max_bytes ||
        !broken_msg_ok(path, (const char *)msg, n))
        return NULL;
    plen = strlen(path);
    ilen = strlen(id);
    p = rc_xcalloc(1, sizeof(*p));
    p->arena = &p->own;
    /* the three strings in one block of their size */
    rc_arena_first_block(&p->own, plen + ilen + n + 3);
    at = rc_arena_alloc(&p->own, plen + ilen + n + 3);
    p->path = memcpy(at, path, plen + 1);
    p->id = memcpy(at + plen + 1, id, ilen + 1);
    memcpy(at + plen + ilen + 2, msg, n);
    at[plen + ilen + 2 + n] = '\0';
    p->error = at + plen + ilen + 2;
    p->len = flen;
    p->bytes = sizeof(*p) + p->own.used_total; /* as parse_file counts it */
    return p;
}

/* What bytes of rd_cache_export load to, as a new entry (not in any cache); NULL when they do
 * not decode or do not load. Touches nothing shared: callable on several threads. */
/* The first block of an entry's arena is at most this (what the export says it needs; a
 * bigger figure is not believed). */
#define IMPORT_FIRST_MAX ((size_t)64 * 1024)

static struct parsed *import_one(const char *id, const char *path, const void *data, size_t len,
                                 struct rd_payload_file *payloads, uint64_t off)
{
    struct reader r = {data, (const unsigned char *)data + len, 0};
    size_t kind = get_uv(&r), first, skip;

    if (!r.bad && kind == ENTRY_BROKEN)
        return import_broken(id, path, &r);
    first = get_uv(&r);
    skip = (size_t)(r.p - (const unsigned char *)data);
    if (r.bad || kind != ENTRY_LOADED)
        return NULL;
    return import_rest(id, path, r.p, len - skip, payloads, off + skip,
                       first <= IMPORT_FIRST_MAX ? first : 0);
}

/* import_one after the take-up's size: `first`, the size of the arena's first block (0: as
 * usual). */
static struct parsed *import_rest(const char *id, const char *path, const void *data, size_t len,
                                  struct rd_payload_file *payloads, uint64_t off, size_t first)
{
    const struct rd_yaml_limits limits = RD_YAML_LIMITS_INIT;
    struct reader r = {data, (const unsigned char *)data + len, 0};
    struct parsed *p = NULL;
    struct pctx ctx;
    struct rc_err ferr = RC_ERR_INIT;
    cJSON **roots = NULL;
    struct rd_pos **pos = NULL;
    size_t *npos = NULL;
    const unsigned char **packs = NULL, **derived = NULL;
    size_t *packs_len = NULL, *derived_len = NULL;
    struct rd_pos *root_pos = NULL;
    void *block = NULL;
    union {
        max_align_t align;
        unsigned char b[4096];
    } small;
    const char *res[RD_FILE_EXTENDED_MAX];
    size_t flen, bytes, nwarn, nres, ndocs = 0, nwork = 0;
    struct parsed *done = NULL;
    int rc;

    memset(&ctx, 0, sizeof(ctx));
    flen = get_uv(&r);
    bytes = get_uv(&r);
    nwarn = get_uv(&r);
    /* every count is checked against the bytes left before anything is allocated for it */
    if (r.bad || flen > limits.max_bytes || nwarn > (size_t)(r.end - r.p))
        return NULL;
    p = rc_xcalloc(1, sizeof(*p));
    p->arena = &p->own;
    rc_arena_first_block(&p->own, first);
    ctx.p = p;
    ctx.replay = 1;
    pl_resnames_init(&p->res);
    p->path = rc_arena_strdup(p->arena, path);
    p->len = flen;
    p->id = rc_arena_strdup(p->arena, id);
    for (size_t i = 0; i < nwarn && !r.bad; i++) {
        const char *w = get_str(&r, p->arena);
        if (!r.bad)
            *VEC_PUSH(ctx.st.warnings) = w;
    }
    /* the resource names: taken below when every document is a workload, else interned
     * again by the load */
    nres = get_uv(&r);
    if (r.bad || nres > RD_FILE_EXTENDED_MAX)
        goto out;
    for (size_t i = 0; i < nres; i++)
        res[i] = get_str(&r, p->arena);
    if (r.bad)
        goto out;
    ndocs = get_uv(&r);
    if (r.bad || ndocs > limits.max_documents || ndocs > (size_t)(r.end - r.p))
        goto out;
    /* the per-document arrays, carved from one block (on the stack for a few documents,
     * the usual file): every member is pointer-aligned but the positions, which go last */
    {
        size_t each = sizeof(*roots) + sizeof(*pos) + sizeof(*npos) + sizeof(*packs) +
                      sizeof(*packs_len) + sizeof(*derived) + sizeof(*derived_len) +
                      sizeof(*root_pos);
        unsigned char *at;
        if ((ndocs + 1) * each <= sizeof(small)) {
            memset(small.b, 0, (ndocs + 1) * each);
            at = small.b;
        } else {
            at = block = rc_xcalloc(ndocs + 1, each);
        }
        roots = (cJSON **)at;
        pos = (struct rd_pos **)(roots + ndocs + 1);
        npos = (size_t *)(pos + ndocs + 1);
        packs = (const unsigned char **)(npos + ndocs + 1);
        packs_len = (size_t *)(packs + ndocs + 1);
        derived = (const unsigned char **)(packs_len + ndocs + 1);
        derived_len = (size_t *)(derived + ndocs + 1);
        root_pos = (struct rd_pos *)(derived_len + ndocs + 1);
    }
    for (size_t i = 0; i < ndocs; i++) {
        size_t tag = get_uv(&r), n;
        const unsigned char *packed = get_span(&r, &n);
        if (!packed || tag > 1)
            goto out;
        packs[i] = packed;
        packs_len[i] = n;
        if (tag == 1) {
            root_pos[i].line = get_int(&r);
            root_pos[i].col = get_int(&r);
            derived[i] = get_span(&r, &derived_len[i]);
            npos[i] = 1;
            nwork++;
        } else {
            npos[i] = get_uv(&r);
            if (r.bad || npos[i] == 0 || npos[i] > (size_t)(r.end - r.p) / 2)
                goto out;
            pos[i] = rc_xcalloc(npos[i], sizeof(**pos));
            for (size_t k = 0; k < npos[i]; k++) {
                pos[i][k].line = get_int(&r);
                pos[i][k].col = get_int(&r);
            }
        }
        if (r.bad)
            goto out;
    }
    if (r.p != r.end)
        goto out;
    if (nwork == ndocs) {
        for (size_t i = 0; i < nres; i++) {
            if (!*res[i] || pl_resnames_find(&p->res, res[i]) >= 0)
                goto out;
            p->res.name[p->res.n++] = res[i];
        }
        if (import_derived(&ctx, ndocs, packs, packs_len, root_pos, derived, derived_len, data,
                           payloads, off) < 0)
            goto out;
        finish(&ctx, RC_OK, &ferr);
        rc = RC_OK;
    } else {
        for (size_t i = 0; i < ndocs; i++) {
            if (rd_unpack(&roots[i], packs[i], packs_len[i], &ferr) < 0)
                goto out;
            if (!pos[i]) {
                pos[i] = rc_xcalloc(1, sizeof(**pos));
                pos[i][0] = root_pos[i];
            }
        }
        /* the trees go to the document set, and are freed with it */
        rd_docs_from_trees(&p->docs, p->path, roots, ndocs, (const struct rd_pos *const *)pos,
                           npos);
        memset(roots, 0, ndocs * sizeof(*roots));
        /* the same load as a parse: what the bytes hold is validated again, and a document
         * that a parse would refuse is refused here (then the caller parses the file) */
        ctx.kept = packs;
        ctx.kept_len = packs_len;
        rc = load_docs(&ctx, &ferr);
        finish(&ctx, rc, &ferr);
    }
    if (rc >= 0 && !p->error) {
        p->bytes = bytes; /* as the parse counted it: the memory limit decides the same */
        done = p;
        p = NULL;
    }
out:
    for (size_t i = 0; roots && i < ndocs; i++)
        cJSON_Delete(roots[i]);
    for (size_t i = 0; pos && i < ndocs; i++)
        free(pos[i]);
    free(block);
    pstage_free(&ctx.st);
    parsed_free(p);
    return done;
}

int rd_cache_import(struct rd_cache *c, const char *id, const char *path, const void *data,
                    size_t len)
{
    struct parsed *p;

    if (!c || !id || !path || !data)
        return RC_EINVALID;
    if (cache_get(c, id, path))
        return RC_OK;
    if (!(p = import_one(id, path, data, len, NULL, 0)))
        return RC_EINVALID;
    cache_put(c, p);
    return RC_OK;
}

struct import_batch {
    struct rd_import *v;
    struct parsed **out;
    size_t n;
    atomic_size_t next;
};

static void import_worker(void *arg)
{
    struct import_batch *b = arg;

    for (;;) {
        size_t i = atomic_fetch_add(&b->next, 1);
        if (i >= b->n)
            return;
        if (b->v[i].data)
            b->out[i] = import_one(b->v[i].id, b->v[i].path, b->v[i].data, b->v[i].len,
                                   b->v[i].payloads, b->v[i].off);
    }
}

size_t rd_cache_import_many(struct rd_cache *c, struct rd_import *v, size_t n, int threads)
{
    struct import_batch b;
    size_t added = 0;

    memset(&b, 0, sizeof(b));
    b.v = v;
    b.n = n;
    b.out = rc_xcalloc(n + 1, sizeof(*b.out));
    atomic_init(&b.next, 0);
    run_on_threads(import_worker, &b, threads, n);
    /* into the cache in the order given, whatever order the threads took them in */
    for (size_t i = 0; i < n; i++) {
        v[i].ok = 0;
        if (!b.out[i])
            continue;
        if (cache_get(c, v[i].id, v[i].path)) {
            parsed_free(b.out[i]);
        } else {
            if (v[i].uncounted)
                b.out[i]->held_gen = c->gen; /* as if counted: ledger_hold passes it by */
            cache_put(c, b.out[i]);
            added++;
        }
        v[i].ok = 1;
    }
    free(b.out);
    return added;
}

/* ==== Combining the files ==== */

/* A later file that defined an object an accepted file already had. */
struct collision {
    const char *first; /* the accepted file */
    const char *later; /* the file refused for it */
    const char *key;
};

struct loader {
    struct rc_arena *a;
    struct rd_source *out;
    const struct rd_load_options *opts;
    struct keyset seen;
    VEC(struct pl_object) objects;
    VEC(struct pl_policy) policies;
    VEC(struct cluster_ent) clusters;
    VEC(const char *) warnings;
    VEC(struct rd_file_error) errors;
    VEC(struct rd_file_error) conflicts;
    VEC(struct collision) collisions;
    /* opts->placed, or what opts->placed_fn gave once asked (placed_asked) */
    const char *const *placed;
    size_t nplaced;
    int placed_asked;
};

static int is_broken(const struct loader *l, const char *path)
{
    for (size_t i = 0; i < l->errors.n; i++) {
        if (!strcmp(l->errors.v[i].path, path))
            return 1;
    }
    return 0;
}

static void add_error(struct loader *l, const char *path, const char *msg)
{
    struct rd_file_error *e = VEC_PUSH(l->errors);
    e->path = path;
    e->msg = msg;
}

/* Claim every key of an accepted file; the first duplicate refuses it (and, later, the file
 * it collided with). 0: claimed. */
static int claim_file(struct loader *l, const struct parsed *p)
{
    for (size_t i = 0; i < p->nkeys; i++) {
        const struct keyent *prev = keyset_find(&l->seen, p->keys[i].key, p->keys[i].hash);
        if (!prev)
            continue;
        struct collision *c = VEC_PUSH(l->collisions);
        c->first = prev->path;
        c->later = p->path;
        c->key = p->keys[i].key;
        add_error(l, p->path,
                  rc_arena_printf(l->a,
                                  "%s:%d:%d: duplicate object '%s' (already in '%s' at "
                                  "line %d)",
                                  p->path, p->keys[i].line, p->keys[i].col, p->keys[i].key,
                                  prev->path, prev->line));
        return -1;
    }
    for (size_t i = 0; i < p->nkeys; i++) {
        uint64_t h = p->keys[i].hash;
        if (!keyset_find(&l->seen, p->keys[i].key, h)) /* a key the file names twice: once */
            keyset_add(&l->seen, p->keys[i].key, h, p->path, p->keys[i].line);
    }
    return 0;
}

/* The pass's resource table: cpu, memory, pods, then the names Clusters declare (sorted),
 * then the names workloads use, by how many files use them (most first), then by name. A
 * file whose names do not all find a place is refused alone. */
struct rescount {
    const char *name;
    int clusters; /* declared by a Cluster file */
    size_t files; /* workload files using it */
};

static int cmp_rescount(const void *x, const void *y)
{
    const struct rescount *a = x, *b = y;

    if (a->clusters != b->clusters)
        return b->clusters - a->clusters;
    if (a->files != b->files)
        return a->files < b->files ? 1 : -1;
    return strcmp(a->name, b->name);
}

static void build_resnames(struct loader *l, struct parsed **files, size_t n)
{
    VEC(struct rescount) rc = {0, 0, NULL};

    for (size_t i = 0; i < n; i++) {
        const struct parsed *p = files[i];
        if (p->error)
            continue;
        for (int r = PL_RES_FIRST_EXTENDED; r < p->res.n; r++) {
            struct rescount *e = NULL;
            for (size_t k = 0; k < rc.n && !e; k++) {
                if (!strcmp(rc.v[k].name, p->res.name[r]))
                    e = &rc.v[k];
            }
            if (!e) {
                e = VEC_PUSH(rc);
                e->name = p->res.name[r];
            }
            if (p->nclusters)
                e->clusters = 1;
            if (p->nobjects)
                e->files++;
        }
    }
    if (rc.n)
        rc_sort(rc.v, rc.n, sizeof(*rc.v), cmp_rescount);
    for (size_t k = 0; k < rc.n && l->out->res.n < PL_RES_MAX; k++)
        pl_resnames_intern(&l->out->res, l->a, rc.v[k].name);
    free(rc.v);
}

/* Index map from a file's table to the pass's; 0 when some name has no place. */
static int res_map(int map[PL_RES_MAX], const struct pl_resnames *file,
                   const struct pl_resnames *pass, int *identity, const char **missing)
{
    *identity = 1;
    for (int r = 0; r < file->n; r++) {
        map[r] = pl_resnames_find(pass, file->name[r]);
        if (map[r] < 0) {
            *missing = file->name[r];
            return 0;
        }
        if (map[r] != r)
            *identity = 0;
    }
    return 1;
}

static void remap_res(struct pl_res *dst, const struct pl_res *src, const int map[PL_RES_MAX],
                      int n)
{
    struct pl_res r;

    memset(&r, 0, sizeof(r));
    for (int i = 0; i < n; i++)
        r.v[map[i]] = src->v[i];
    *dst = r;
}

/* Add an accepted file's results, with its resource indices moved onto the pass's table. */
static void add_file(struct loader *l, const struct parsed *p)
{
    int map[PL_RES_MAX], identity;
    const char *missing = NULL;

    if (!res_map(map, &p->res, &l->out->res, &identity, &missing)) {
        add_error(l, p->path,
                  rc_arena_printf(l->a,
                                  "%s: resource '%s' finds no place in the fleet's table of %d "
                                  "resource names (cpu, memory, pods and the most used "
                                  "extended resources)",
                                  p->path, missing, PL_RES_MAX));
        return;
    }
    for (size_t i = 0; i < p->nobjects; i++) {
        struct pl_object *o = VEC_PUSH(l->objects);
        *o = p->objects[i];
        if (!identity && o->npods) {
            struct pl_pod *pods = rc_arena_calloc(l->a, o->npods, sizeof(*pods));
            memcpy(pods, o->pods, o->npods * sizeof(*pods));
            for (size_t k = 0; k < o->npods; k++)
                remap_res(&pods[k].req, &o->pods[k].req, map, p->res.n);
            o->pods = pods;
        }
    }
    for (size_t i = 0; i < p->npolicies; i++)
        *VEC_PUSH(l->policies) = p->policies[i];
    for (size_t i = 0; i < p->nclusters; i++) {
        struct cluster_ent *ce = VEC_PUSH(l->clusters);
        *ce = p->clusters[i];
        if (identity)
            continue;
        if (ce->c.nnodes) {
            struct pl_node *nodes = rc_arena_calloc(l->a, ce->c.nnodes, sizeof(*nodes));
            memcpy(nodes, ce->c.nodes, ce->c.nnodes * sizeof(*nodes));
            for (size_t k = 0; k < ce->c.nnodes; k++) {
                remap_res(&nodes[k].allocatable, &ce->c.nodes[k].allocatable, map, p->res.n);
                remap_res(&nodes[k].requested, &ce->c.nodes[k].requested, map, p->res.n);
            }
            ce->c.nodes = nodes;
        }
        if (ce->c.nshapes) {
            struct pl_shape *shapes = rc_arena_calloc(l->a, ce->c.nshapes, sizeof(*shapes));
            memcpy(shapes, ce->c.shapes, ce->c.nshapes * sizeof(*shapes));
            for (size_t k = 0; k < ce->c.nshapes; k++)
                remap_res(&shapes[k].allocatable, &ce->c.shapes[k].allocatable, map, p->res.n);
            ce->c.shapes = shapes;
        }
    }
    for (size_t i = 0; i < p->nwarnings; i++)
        *VEC_PUSH(l->warnings) = p->warnings[i];
}

static int cmp_error(const void *x, const void *y)
{
    return strcmp(((const struct rd_file_error *)x)->path, ((const struct rd_file_error *)y)->path);
}

/*
 * Files are read in path order, so the later of two files defining one object is refused
 * first. Which of them is right cannot be told from the tree alone (a new file sorting first
 * would otherwise take over an object placed long ago), so the earlier file is refused too,
 * and the caller keeps both files' objects as they were.
 */
static void refuse_both_sides(struct loader *l)
{
    size_t w;

    for (size_t c = 0; c < l->collisions.n; c++) {
        const struct collision *col = &l->collisions.v[c];
        if (is_broken(l, col->first))
            continue;
        add_error(l, col->first,
                  rc_arena_printf(l->a, "%s: duplicate object '%s' (also in '%s')", col->first,
                                  col->key, col->later));
    }
    if (!l->collisions.n)
        return;
    w = 0;
    for (size_t r = 0; r < l->objects.n; r++) {
        if (!is_broken(l, l->objects.v[r].file))
            l->objects.v[w++] = l->objects.v[r];
    }
    l->objects.n = w;
    w = 0;
    for (size_t r = 0; r < l->policies.n; r++) {
        if (!is_broken(l, l->policies.v[r].file))
            l->policies.v[w++] = l->policies.v[r];
    }
    l->policies.n = w;
    w = 0;
    for (size_t r = 0; r < l->clusters.n; r++) {
        if (!is_broken(l, l->clusters.v[r].file))
            l->clusters.v[w++] = l->clusters.v[r];
    }
    l->clusters.n = w;
    w = 0;
    for (size_t r = 0; r < l->warnings.n; r++) {
        const char *warn = l->warnings.v[r];
        int drop = 0;
        for (size_t i = 0; i < l->errors.n && !drop; i++) {
            size_t n = strlen(l->errors.v[i].path);
            drop = !strncmp(warn, l->errors.v[i].path, n) && warn[n] == ':';
        }
        if (!drop)
            l->warnings.v[w++] = warn;
    }
    l->warnings.n = w;
}

/* ==== Output paths: two objects written to one file ==== */

/* Where render writes an object in a cluster's directory: "<ns or _cluster>/<kind lowercased>.
 * <name>" (see rd_output.c). Two objects with different keys can share it (a v1 ConfigMap and
 * an example.com/v1 Configmap of one name). */
static const char *out_path(const struct pl_object *o, struct rc_arena *a)
{
    char *s = rc_arena_printf(a, "%s/%s.%s", o->ns ? o->ns : "_cluster", o->kind, o->name);
    char *k = s + strlen(o->ns ? o->ns : "_cluster") + 1;

    for (size_t i = 0; i < strlen(o->kind); i++)
        k[i] = (char)tolower((unsigned char)k[i]);
    return s;
}

struct opath {
    const char *path;
    size_t idx;
};

static int cmp_opath(const void *x, const void *y)
{
    const struct opath *a = x, *b = y;
    int c = strcmp(a->path, b->path);

    return c ? c : (a->idx > b->idx) - (a->idx < b->idx);
}

static int is_placed(struct loader *l, const char *key)
{
    const struct rd_load_options *o = l->opts;
    size_t lo = 0, hi;

    if (!l->placed_asked) {
        l->placed_asked = 1;
        if (o && o->placed) {
            l->placed = o->placed;
            l->nplaced = o->nplaced;
        } else if (o && o->placed_fn) {
            l->placed = o->placed_fn(o->placed_arg, &l->nplaced);
        }
    }
    hi = l->placed ? l->nplaced : 0;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(l->placed[mid], key);
        if (!c)
            return 1;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return 0;
}

/*
 * Objects whose output paths collide cannot both be placed. When one of them is placed
 * already (in the previous record), it keeps its place and the others are refused; otherwise
 * all of them are. Only those objects are affected: their files' other objects load. Each
 * refusal is an error that names both files.
 */
/* FNV-1a of the bytes out_path writes, without writing them */
static uint64_t out_path_hash(const struct pl_object *o)
{
    uint64_t h = rc_fnv1a_str(RC_FNV_INIT, o->ns ? o->ns : "_cluster");

    h = rc_fnv1a(h, "/", 1);
    for (const char *k = o->kind; *k; k++) {
        char c = (char)tolower((unsigned char)*k);
        h = rc_fnv1a(h, &c, 1);
    }
    h = rc_fnv1a(h, ".", 1);
    return rc_fnv1a_str(h, o->name);
}

/* Whether no two objects can have one output path: their paths' hashes all differ (distinct
 * hashes, distinct paths). Equal hashes say nothing either way: the paths are compared. The
 * hashes go into a table of their own (a sort of them cost 4% of a one-change pass). */
static int paths_surely_distinct(const struct loader *l)
{
    size_t n = l->objects.n, cap = 16;
    uint64_t *t;
    int distinct = 1, zero = 0;

    while (cap < 2 * n)
        cap *= 2;
    t = rc_xcalloc(cap, sizeof(*t)); /* 0: an empty slot (a hash of 0 is noted apart) */
    for (size_t i = 0; i < n && distinct; i++) {
        uint64_t h = out_path_hash(&l->objects.v[i]);
        if (h == 0) {
            distinct = !zero;
            zero = 1;
            continue;
        }
        for (size_t k = (size_t)(h ^ (h >> 29)) & (cap - 1);; k = (k + 1) & (cap - 1)) {
            if (t[k] == 0) {
                t[k] = h;
                break;
            }
            if (t[k] == h) {
                distinct = 0;
                break;
            }
        }
    }
    free(t);
    return distinct;
}

static void refuse_colliding_paths(struct loader *l)
{
    struct opath *v;
    unsigned char *drop;
    size_t n = l->objects.n, w;

    if (n < 2 || paths_surely_distinct(l))
        return;
    v = rc_xcalloc(n, sizeof(*v));
    drop = rc_xcalloc(n, 1);
    for (size_t i = 0; i < n; i++) {
        v[i].path = out_path(&l->objects.v[i], l->a);
        v[i].idx = i;
    }
    rc_sort(v, n, sizeof(*v), cmp_opath);
    for (size_t i = 0; i < n;) {
        size_t j = i + 1, keep = (size_t)-1;
        while (j < n && !strcmp(v[j].path, v[i].path))
            j++;
        if (j - i > 1) {
            for (size_t k = i; k < j && keep == (size_t)-1; k++) {
                if (is_placed(l, l->objects.v[v[k].idx].key))
                    keep = v[k].idx;
            }
            for (size_t k = i; k < j; k++) {
                struct rd_file_error *e;
                const struct pl_object *o = &l->objects.v[v[k].idx];
                const struct pl_object *other =
                    &l->objects.v[keep != (size_t)-1 ? keep : v[k == i ? i + 1 : i].idx];
                if (v[k].idx == keep)
                    continue;
                drop[v[k].idx] = 1;
                e = VEC_PUSH(l->conflicts);
                e->path = o->file;
                e->msg =
                    rc_arena_printf(l->a,
                                    "%s:%d: object '%s' would be written to the same file "
                                    "as '%s' of '%s' (%s.yaml); %s",
                                    o->file, o->line, o->key, other->key, other->file, v[k].path,
                                    keep != (size_t)-1 ? "the one placed first keeps it"
                                                       : "neither is placed until one is renamed");
            }
        }
        i = j;
    }
    w = 0;
    for (size_t i = 0; i < n; i++) {
        if (!drop[i])
            l->objects.v[w++] = l->objects.v[i];
    }
    l->objects.n = w;
    free(v);
    free(drop);
}

/* ==== Sorting and namespaces ==== */

static int cmp_file(const void *x, const void *y)
{
    return strcmp((*(const struct rd_file *const *)x)->path,
                  (*(const struct rd_file *const *)y)->path);
}

static int cmp_object(const void *x, const void *y)
{
    return strcmp(((const struct pl_object *)x)->key, ((const struct pl_object *)y)->key);
}

static int cmp_policy(const void *x, const void *y)
{
    return strcmp(((const struct pl_policy *)x)->name, ((const struct pl_policy *)y)->name);
}

static int cmp_cluster(const void *x, const void *y)
{
    return strcmp(((const struct cluster_ent *)x)->c.name, ((const struct cluster_ent *)y)->c.name);
}

static int cmp_ns(const void *x, const void *y)
{
    const struct nsent *a = x, *b = y;
    int c = strcmp(a->name, b->name);
    /* entries with a Namespace object first, so that the dedup below keeps them */
    return c ? c : (a->labels ? 0 : 1) - (b->labels ? 0 : 1);
}

static void namespaces(struct loader *l)
{
    VEC(struct nsent) ns = {0, 0, NULL};
    struct rd_source *out = l->out;

    for (size_t i = 0; i < l->objects.n; i++) {
        const struct pl_object *o = &l->objects.v[i];
        const struct rd_object *ro = o->payload;
        if (o->ns) {
            struct nsent *e = VEC_PUSH(ns);
            e->name = o->ns;
        }
        if (!o->ns && is_core(ro, "Namespace")) {
            struct nsent *e = VEC_PUSH(ns);
            e->name = o->name;
            e->labels = &o->labels;
        }
    }
    if (ns.n)
        rc_sort(ns.v, ns.n, sizeof(*ns.v), cmp_ns);
    out->namespaces = rc_arena_calloc(l->a, ns.n + 1, sizeof(*out->namespaces));
    for (size_t i = 0; i < ns.n; i++) {
        struct pl_namespace *n;
        if (i && !strcmp(ns.v[i].name, ns.v[i - 1].name))
            continue;
        n = &out->namespaces[out->nnamespaces++];
        n->name = ns.v[i].name;
        if (ns.v[i].labels) {
            for (size_t k = 0; k < ns.v[i].labels->n; k++)
                pl_labels_set(&n->labels, l->a, ns.v[i].labels->v[k].key,
                              ns.v[i].labels->v[k].value);
        }
        pl_labels_set(&n->labels, l->a, PL_LABEL_CLUSTER_NAME, n->name);
    }
    free(ns.v);
}

#define VEC_TO_ARENA(dst, vec)                                                                     \
    do {                                                                                           \
        (dst) = rc_arena_calloc(a, (vec).n + 1, sizeof(*(vec).v));                                 \
        if ((vec).n)                                                                               \
            memcpy((dst), (vec).v, (vec).n * sizeof(*(vec).v));                                    \
    } while (0)

int rd_source_load(struct rd_source *out, const struct rd_file *files, size_t nfiles,
                   struct rc_arena *a, struct rc_err *err)
{
    return rd_source_load_ex(out, files, nfiles, NULL, a, err);
}

int rd_source_load_ex(struct rd_source *out, const struct rd_file *files, size_t nfiles,
                      const struct rd_load_options *opts, struct rc_arena *a, struct rc_err *err)
{
    const char *const *refused = opts ? opts->refused : NULL;
    const char *const *ids = opts ? opts->ids : NULL;
    struct loader l;
    const struct rd_file **order = NULL;
    struct parsed **parsed = NULL;
    int rc = RC_OK;

    memset(out, 0, sizeof(*out));
    pl_resnames_init(&out->res);
    if (nfiles && !files)
        return rc_err_set(err, RC_EINVALID, "no files given");
    for (size_t i = 0; i < nfiles; i++) {
        if (!files[i].path || (files[i].len && !files[i].data && !(refused && refused[i])))
            return rc_err_set(err, RC_EINVALID, "file %zu has no path or no data", i);
    }
    memset(&l, 0, sizeof(l));
    l.a = a;
    l.out = out;
    l.opts = opts;
    if (opts && opts->cache) {
        out->cache = opts->cache;
    } else {
        rd_cache_new(&out->cache);
        out->own_cache = 1;
    }
    order = rc_xcalloc(nfiles + 1, sizeof(*order));
    parsed = rc_xcalloc(nfiles + 1, sizeof(*parsed));
    for (size_t i = 0; i < nfiles; i++)
        order[i] = &files[i];
    rc_sort(order, nfiles, sizeof(*order), cmp_file);
    for (size_t i = 1; i < nfiles; i++) {
        if (!strcmp(order[i - 1]->path, order[i]->path)) {
            rc = rc_err_set(err, RC_EINVALID, "file '%s' given twice", order[i]->path);
            goto done;
        }
    }

    /* (1) each file alone, from the cache when its (id, path) was parsed before, counted
     * against the budget */
    if (opts && opts->max_bytes)
        rd_cache_limit(out->cache, opts->max_bytes, opts->over_budget);
    for (size_t i = 0; i < nfiles; i++) {
        size_t k = (size_t)(order[i] - files);
        const char *id = ids && ids[k] && !out->own_cache ? ids[k] : NULL;
        const char *why = refused ? refused[k] : NULL;
        int uncounted = opts && opts->uncounted && opts->uncounted[k];
        struct parsed *p = id && !why ? cache_get(out->cache, id, order[i]->path) : NULL;
        int fresh = 0;
        if (p && p->over && uncounted && order[i]->data) {
            p = NULL; /* refused by the budget, needed all the same: parsed again, kept apart */
            id = NULL;
        }
        if (!p) {
            p = parse_file(order[i], why ? NULL : id, why, out->own_cache ? a : NULL);
            fresh = 1;
            if (!why)
                out->nparsed++;
        }
        if (uncounted)
            p->held_gen = out->cache->gen; /* as if counted: ledger_hold passes it by */
        if (fresh) {
            if (!p->id) /* not to be found again: an id no content has; swept after use */
                p->id = rc_arena_printf(p->arena, "#%lu", ++out->cache->anon);
            cache_put(out->cache, p); /* counted against the budget, unless uncounted */
        } else {
            ledger_hold(out->cache, p);
        }
        /* p, or a file before it, may have been refused by the budget: in place, seen below */
        mark_used(out->cache, p);
        parsed[i] = p;
    }

    /* (2) combine, in path order, into room for everything the files hold */
    build_resnames(&l, parsed, nfiles);
    {
        size_t nkeys = 0, nobjects = 0;
        for (size_t i = 0; i < nfiles; i++) {
            nkeys += parsed[i]->error ? 0 : parsed[i]->nkeys;
            nobjects += parsed[i]->error ? 0 : parsed[i]->nobjects;
        }
        keyset_reserve(&l.seen, nkeys);
        l.objects.v = rc_xgrow(l.objects.v, &l.objects.cap, nobjects, sizeof(*l.objects.v));
    }
    for (size_t i = 0; i < nfiles; i++) {
        const struct parsed *p = parsed[i];
        if (p->error) {
            add_error(&l, p->path, rc_arena_strdup(a, p->error));
            continue;
        }
        if (claim_file(&l, p) < 0)
            continue;
        add_file(&l, p);
    }
    refuse_both_sides(&l);
    refuse_colliding_paths(&l);
    if (l.errors.n)
        rc_sort(l.errors.v, l.errors.n, sizeof(*l.errors.v), cmp_error);

    if (l.objects.n)
        rc_sort(l.objects.v, l.objects.n, sizeof(*l.objects.v), cmp_object);
    if (l.policies.n)
        rc_sort(l.policies.v, l.policies.n, sizeof(*l.policies.v), cmp_policy);
    if (l.clusters.n)
        rc_sort(l.clusters.v, l.clusters.n, sizeof(*l.clusters.v), cmp_cluster);
    out->nobjects = l.objects.n;
    VEC_TO_ARENA(out->objects, l.objects);
    out->npolicies = l.policies.n;
    VEC_TO_ARENA(out->policies, l.policies);
    out->nclusters = l.clusters.n;
    out->clusters = rc_arena_calloc(a, l.clusters.n + 1, sizeof(*out->clusters));
    out->conns = rc_arena_calloc(a, l.clusters.n + 1, sizeof(*out->conns));
    out->cluster_files = rc_arena_calloc(a, l.clusters.n + 1, sizeof(*out->cluster_files));
    for (size_t i = 0; i < l.clusters.n; i++) {
        out->clusters[i] = l.clusters.v[i].c;
        out->conns[i] = l.clusters.v[i].conn;
        out->cluster_files[i] = l.clusters.v[i].file;
    }
    out->nwarnings = l.warnings.n;
    VEC_TO_ARENA(out->warnings, l.warnings);
    out->nerrors = l.errors.n;
    VEC_TO_ARENA(out->errors, l.errors);
    if (l.conflicts.n)
        rc_sort(l.conflicts.v, l.conflicts.n, sizeof(*l.conflicts.v), cmp_error);
    out->nconflicts = l.conflicts.n;
    VEC_TO_ARENA(out->conflicts, l.conflicts);
    namespaces(&l);

done:
    free(l.objects.v);
    free(l.policies.v);
    free(l.clusters.v);
    free(l.warnings.v);
    free(l.errors.v);
    free(l.conflicts.v);
    free(l.collisions.v);
    free(l.seen.v);
    free(parsed);
    free(order);
    if (rc < 0)
        rd_source_release(out);
    return rc;
}

void rd_source_release(struct rd_source *src)
{
    if (!src)
        return;
    if (src->own_cache)
        rd_cache_free(src->cache);
    src->cache = NULL;
    src->own_cache = 0;
}
