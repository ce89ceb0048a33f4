/*
 * rc_watch.c - loop mode's watches of the live clusters' pods and nodes (see rc_watch.h).
 */
#include "rc_watch.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rc_buf.h"
#include "rc_clock.h"
#include "rc_hash.h"
#include "rc_mem.h"

#include "rc_banned.h"

/* ==== The table: namespace/name -> the bytes kept ==== */

/*
 * One allocation an object: its key and its bytes, the key NUL-terminated. A table lives as
 * long as its watcher, so an object costs what it holds: a pod reduced by rc_observe.c about
 * 140 bytes with the allocator's own, on average over the pods of bench/gen_kube_state.py's
 * clusters, against about 290 as a struct of the request and two strings allocated apart.
 */
struct tent {
    uint64_t h;
    struct tent *next;
    uint32_t klen, vlen;
    char data[]; /* the key, its NUL, then vlen bytes */
};

struct rc_watch_table {
    struct tent **slot;
    size_t n, cap;         /* cap: a power of two, or 0 */
    struct rc_buf scratch; /* what reduce writes */
};

struct rc_watch_table *rc_watch_table_new(void)
{
    struct rc_watch_table *t = rc_xcalloc(1, sizeof(struct rc_watch_table));

    rc_buf_init(&t->scratch, 0);
    return t;
}

void rc_watch_table_free(struct rc_watch_table *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->cap; i++) {
        struct tent *e = t->slot[i], *next;
        for (; e; e = next) {
            next = e->next;
            free(e);
        }
    }
    free(t->slot);
    rc_buf_release(&t->scratch);
    free(t);
}

static struct tent **table_find(struct rc_watch_table *t, const char *key, uint64_t h)
{
    struct tent **pe;

    if (!t->cap)
        return NULL;
    for (pe = &t->slot[h & (t->cap - 1)]; *pe; pe = &(*pe)->next) {
        if ((*pe)->h == h && !strcmp((*pe)->data, key))
            return pe;
    }
    return pe;
}

static void table_grow(struct rc_watch_table *t)
{
    size_t ncap = t->cap ? 2 * t->cap : 64;
    struct tent **ns = rc_xcalloc(ncap, sizeof(*ns));

    for (size_t i = 0; i < t->cap; i++) {
        struct tent *e = t->slot[i], *next;
        for (; e; e = next) {
            next = e->next;
            e->next = ns[e->h & (ncap - 1)];
            ns[e->h & (ncap - 1)] = e;
        }
    }
    free(t->slot);
    t->slot = ns;
    t->cap = ncap;
}

/* namespace/name of item into key; 0 when it has no name (or one no API server accepts). */
static int item_key(char *key, size_t n, const cJSON *item)
{
    const cJSON *md = cJSON_GetObjectItemCaseSensitive(item, "metadata");
    const cJSON *ns = cJSON_GetObjectItemCaseSensitive(md, "namespace");
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(md, "name");
    int len;

    if (!cJSON_IsString(name) || !name->valuestring[0])
        return 0;
    len = snprintf(key, n, "%s/%s", cJSON_IsString(ns) ? ns->valuestring : "", name->valuestring);
    return len > 0 && (size_t)len < n;
}

static void table_del_key(struct rc_watch_table *t, const char *key)
{
    uint64_t h = rc_xxh64(key, strlen(key));
    struct tent **pe = table_find(t, key, h), *e;

    if (!pe || !(e = *pe))
        return;
    *pe = e->next;
    free(e);
    t->n--;
}

void rc_watch_table_put(struct rc_watch_table *t, const cJSON *item, const struct pl_resnames *res,
                        rc_watch_reduce_fn reduce)
{
    char key[512]; /* a namespace (63) and a name (253) with room to spare */
    struct tent **pe, *e;
    size_t klen;
    uint64_t h;

    if (!item_key(key, sizeof(key), item))
        return;
    rc_buf_reset(&t->scratch);
    if (reduce(item, res, &t->scratch) <= 0 || t->scratch.len >= UINT32_MAX) {
        table_del_key(t, key);
        return;
    }
    klen = strlen(key);
    h = rc_xxh64(key, klen);
    e = rc_xmalloc(sizeof(*e) + klen + 1 + t->scratch.len);
    e->h = h;
    e->next = NULL;
    e->klen = (uint32_t)klen;
    e->vlen = (uint32_t)t->scratch.len;
    memcpy(e->data, key, klen + 1);
    memcpy(e->data + klen + 1, t->scratch.ptr, t->scratch.len);
    if (!t->cap || t->n + 1 > t->cap / 4 * 3)
        table_grow(t);
    pe = table_find(t, key, h);
    if (*pe) {
        e->next = (*pe)->next;
        free(*pe);
        *pe = e;
        return;
    }
    *pe = e;
    t->n++;
}

void rc_watch_table_each(const struct rc_watch_table *t, rc_watch_each_fn fn, void *payload)
{
    for (size_t i = 0; t && i < t->cap; i++) {
        for (const struct tent *e = t->slot[i]; e; e = e->next)
            fn(payload, e->data, e->data + e->klen + 1, e->vlen);
    }
}

/* ==== Watchers ==== */

struct watcher {
    char *name;
    enum rc_watch_kind kind;
    uint64_t ident;
    char *path;
    struct rc_kube *k; /* the watcher's own client */
    long timeout_s;
    struct pl_resnames res;
    char *resname[PL_RES_MAX]; /* res's strings, owned */
    rc_watch_reduce_fn reduce;
    pthread_t thread;
    pthread_mutex_t mu;
    struct rc_watch_table *t; /* under mu */
    int failed;               /* under mu: the watch ended in a way only a list can follow */
    int refused;              /* under mu: by a 403 (failed is set too) */
    char why[256];            /* under mu: how */
    char rv[128];             /* the thread's alone */
    atomic_int stop;
    atomic_size_t *events; /* the set's counter */
    struct watcher *next;
};

/* A watch the server refused: not asked for again for the set's refused_s (rc_watch.h). */
struct refusal {
    char *name;
    enum rc_watch_kind kind;
    double at; /* when, in monotonic seconds */
    size_t count;
    struct refusal *next;
};

struct rc_watch_set {
    pthread_mutex_t mu;
    struct watcher *list;
    struct refusal *refusals;
    atomic_size_t events[RC_WATCH_NKINDS];
    long timeout_s;
    long refused_s;
    int no_thread_said; /* rc_watch_say_no_thread said it; cleared when a watcher starts */
};

/* The refusal of name and kind (under the set's lock), or NULL. */
static struct refusal *find_refusal(struct rc_watch_set *ws, const char *name,
                                    enum rc_watch_kind kind)
{
    for (struct refusal *r = ws->refusals; r; r = r->next) {
        if (r->kind == kind && !strcmp(r->name, name))
            return r;
    }
    return NULL;
}

struct rc_watch_set *rc_watch_set_new(void)
{
    struct rc_watch_set *ws = rc_xcalloc(1, sizeof(*ws));

    pthread_mutex_init(&ws->mu, NULL);
    ws->timeout_s = RC_WATCH_TIMEOUT_S;
    ws->refused_s = RC_WATCH_REFUSED_S;
    return ws;
}

void rc_watch_set_refused_backoff(struct rc_watch_set *ws, long seconds)
{
    pthread_mutex_lock(&ws->mu);
    ws->refused_s = seconds >= 0 ? seconds : RC_WATCH_REFUSED_S;
    pthread_mutex_unlock(&ws->mu);
}

size_t rc_watch_refusals(struct rc_watch_set *ws, const char *name, enum rc_watch_kind kind)
{
    struct refusal *r;
    size_t n;

    pthread_mutex_lock(&ws->mu);
    r = find_refusal(ws, name, kind);
    n = r ? r->count : 0;
    pthread_mutex_unlock(&ws->mu);
    return n;
}

void rc_watch_set_timeout(struct rc_watch_set *ws, long seconds)
{
    pthread_mutex_lock(&ws->mu);
    ws->timeout_s = seconds > 0 ? seconds : RC_WATCH_TIMEOUT_S;
    pthread_mutex_unlock(&ws->mu);
}

/* What a watcher holds, its thread ended or never started. */
static void watcher_release(struct watcher *w)
{
    rc_kube_free(w->k);
    rc_watch_table_free(w->t);
    pthread_mutex_destroy(&w->mu);
    for (int i = 0; i < w->res.n; i++)
        free(w->resname[i]);
    free(w->path);
    free(w->name);
    free(w);
}

static void watcher_free(struct watcher *w)
{
    w->stop = 1;
    pthread_join(w->thread, NULL);
    watcher_release(w);
}

void rc_watch_set_free(struct rc_watch_set *ws)
{
    struct watcher *w, *next;

    if (!ws)
        return;
    for (w = ws->list; w; w = w->next)
        w->stop = 1; /* all of them at once: each ends within a second */
    for (w = ws->list; w; w = next) {
        next = w->next;
        watcher_free(w);
    }
    while (ws->refusals) {
        struct refusal *r = ws->refusals;
        ws->refusals = r->next;
        free(r->name);
        free(r);
    }
    pthread_mutex_destroy(&ws->mu);
    free(ws);
}

uint64_t rc_watch_ident(const struct rd_cluster_conn *conn, const char *server,
                        const struct pl_resnames *res)
{
    const char *parts[6] = {
        conn->name, conn->context, conn->file, conn->path, conn->in_cluster ? "in-cluster" : "",
        server};
    uint64_t h = 0;

    /* each part with its terminating NUL, so that ("ab", "c") is not ("a", "bc"); NULL as
     * one byte that no string here holds */
    for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
        h = parts[i] ? rc_xxh64_seeded(parts[i], strlen(parts[i]) + 1, h)
                     : rc_xxh64_seeded("\x01", 1, h);
    for (int i = 0; i < res->n; i++)
        h = rc_xxh64_seeded(res->name[i], strlen(res->name[i]) + 1, h);
    return h;
}

static int on_event(void *payload, const char *type, const cJSON *object, struct rc_err *err)
{
    struct watcher *w = payload;
    char key[512];

    (void)err;
    if (!strcmp(type, "BOOKMARK"))
        return RC_OK; /* rc_kube_watch keeps its resourceVersion */
    pthread_mutex_lock(&w->mu);
    if (!strcmp(type, "DELETED")) {
        /* deleted, or no longer matching the field selector (it ended) */
        if (item_key(key, sizeof(key), object))
            table_del_key(w->t, key);
    } else {
        rc_watch_table_put(w->t, object, &w->res, w->reduce);
    }
    pthread_mutex_unlock(&w->mu);
    (*w->events)++;
    return RC_OK;
}

static void *run_watch(void *arg)
{
    struct watcher *w = arg;

    while (!w->stop) {
        struct rc_err err = RC_ERR_INIT;
        int error = rc_kube_watch(w->k, w->path, w->rv, sizeof(w->rv), w->timeout_s, on_event, w,
                                  &w->stop, &err);

        if (w->stop)
            break;
        if (error < 0) {
            pthread_mutex_lock(&w->mu);
            w->failed = 1;
            w->refused = rc_kube_last_status(w->k) == 403;
            snprintf(w->why, sizeof(w->why), "%s", err.msg);
            pthread_mutex_unlock(&w->mu);
            break;
        }
        /* the server ended it at its timeout: the next from where it ended */
    }
    return NULL;
}

/* The watcher of `name` and `kind` unlinked from the set (under its lock), or NULL. */
static struct watcher *unlink_named(struct rc_watch_set *ws, const char *name,
                                    enum rc_watch_kind kind)
{
    for (struct watcher **pw = &ws->list; *pw; pw = &(*pw)->next) {
        if ((*pw)->kind == kind && !strcmp((*pw)->name, name)) {
            struct watcher *w = *pw;
            *pw = w->next;
            return w;
        }
    }
    return NULL;
}

int rc_watch_take(struct rc_watch_set *ws, const char *name, enum rc_watch_kind kind,
                  uint64_t ident, rc_watch_each_fn fn, void *payload, char *why, size_t whylen,
                  size_t *refused)
{
    struct watcher *w, *gone = NULL;
    int taken = 0;

    if (why && whylen)
        why[0] = '\0';
    if (refused)
        *refused = 0;
    pthread_mutex_lock(&ws->mu);
    for (w = ws->list; w && (w->kind != kind || strcmp(w->name, name)); w = w->next)
        ;
    if (w) {
        pthread_mutex_lock(&w->mu);
        if (w->ident != ident) {
            if (why)
                snprintf(why, whylen, "the cluster's connection or resources changed");
        } else if (w->failed) {
            if (why)
                snprintf(why, whylen, "%s", w->why);
            if (w->refused) {
                struct refusal *r = find_refusal(ws, name, kind);
                if (!r) {
                    r = rc_xcalloc(1, sizeof(*r));
                    r->name = rc_xstrdup(name);
                    r->kind = kind;
                    r->next = ws->refusals;
                    ws->refusals = r;
                }
                r->count++;
                r->at = rc_mono_seconds();
                if (refused)
                    *refused = r->count;
            }
        } else {
            rc_watch_table_each(w->t, fn, payload);
            taken = 1;
        }
        pthread_mutex_unlock(&w->mu);
        if (!taken)
            gone = unlink_named(ws, name, kind);
    }
    pthread_mutex_unlock(&ws->mu);
    if (gone)
        watcher_free(gone); /* outside the set's lock: the join takes up to a second */
    return taken;
}

int rc_watch_say_no_thread(struct rc_watch_set *ws)
{
    int say;

    pthread_mutex_lock(&ws->mu);
    say = !ws->no_thread_said;
    ws->no_thread_said = 1;
    pthread_mutex_unlock(&ws->mu);
    return say;
}

int rc_watch_start(struct rc_watch_set *ws, const char *name, enum rc_watch_kind kind,
                   uint64_t ident, const struct rd_cluster_conn *conn,
                   const struct rc_kube_options *ko, const char *path, const char *rv,
                   struct rc_watch_table *t, const struct pl_resnames *res,
                   rc_watch_reduce_fn reduce)
{
    struct rc_kube_options wko = *ko;
    struct watcher *w, *old;
    struct rc_err err = RC_ERR_INIT;
    int e;

    if (!rv || !rv[0] || strlen(rv) >= sizeof(w->rv) || res->n > PL_RES_MAX ||
        (unsigned)kind >= RC_WATCH_NKINDS) {
        rc_watch_table_free(t);
        return 0;
    }
    pthread_mutex_lock(&ws->mu);
    {
        /* refused not long ago: the caller lists again next pass, without a watch request */
        struct refusal *r = find_refusal(ws, name, kind);
        if (r && rc_mono_seconds() < r->at + (double)ws->refused_s) {
            pthread_mutex_unlock(&ws->mu);
            rc_watch_table_free(t);
            return 0;
        }
    }
    pthread_mutex_unlock(&ws->mu);
    w = rc_xcalloc(1, sizeof(*w));
    /* the watcher outlives the pass: nothing of the pass's (its log, its list of clusters
     * known down) is kept, and a watch is one attempt */
    wko.log = NULL;
    wko.known_down = NULL;
    wko.nknown_down = 0;
    wko.http.max_attempts = 1;
    if (rc_kube_open_conn(&w->k, conn, &wko, &err) < 0) {
        rc_watch_table_free(t);
        free(w);
        return 0;
    }
    w->name = rc_xstrdup(name);
    w->kind = kind;
    w->ident = ident;
    w->path = rc_xstrdup(path);
    w->res.n = res->n;
    for (int i = 0; i < res->n; i++)
        w->res.name[i] = w->resname[i] = rc_xstrdup(res->name[i]);
    w->reduce = reduce;
    w->t = t;
    snprintf(w->rv, sizeof(w->rv), "%s", rv);
    w->events = &ws->events[kind];
    pthread_mutex_lock(&ws->mu);
    w->timeout_s = ws->timeout_s;
    pthread_mutex_unlock(&ws->mu);
    pthread_mutex_init(&w->mu, NULL);
    if ((e = pthread_create(&w->thread, NULL, run_watch, w)) != 0) {
        watcher_release(w);
        return e;
    }
    pthread_mutex_lock(&ws->mu);
    old = unlink_named(ws, name, kind);
    w->next = ws->list;
    ws->list = w;
    ws->no_thread_said = 0;
    pthread_mutex_unlock(&ws->mu);
    if (old)
        watcher_free(old);
    return 0;
}

void rc_watch_keep_only(struct rc_watch_set *ws, const char *const *names, size_t n)
{
    struct watcher *gone = NULL;

    pthread_mutex_lock(&ws->mu);
    for (struct watcher **pw = &ws->list; *pw;) {
        struct watcher *w = *pw;
        size_t i;

        for (i = 0; i < n && strcmp(names[i], w->name); i++)
            ;
        if (i < n) {
            pw = &w->next;
            continue;
        }
        *pw = w->next;
        w->stop = 1;
        w->next = gone;
        gone = w;
    }
    pthread_mutex_unlock(&ws->mu);
    while (gone) {
        struct watcher *next = gone->next;
        watcher_free(gone);
        gone = next;
    }
}

void rc_watch_counts(struct rc_watch_set *ws, enum rc_watch_kind kind, size_t *running,
                     size_t *events)
{
    size_t n = 0;

    pthread_mutex_lock(&ws->mu);
    for (struct watcher *w = ws->list; w; w = w->next) {
        if (w->kind != kind)
            continue;
        pthread_mutex_lock(&w->mu);
        n += !w->failed;
        pthread_mutex_unlock(&w->mu);
    }
    if (running)
        *running = n;
    if (events)
        *events = ws->events[kind];
    pthread_mutex_unlock(&ws->mu);
}
