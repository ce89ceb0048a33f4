/*
 * rc_pcache.c - the parse cache file (see rc_pcache.h).
 *
 * Format:
 *   "rightplace-parse-cache 1\n"
 *   "rightplace <version> load <digest of the Load step's sources> <rd_cache_export_version>\n"
 *   entries, each:
 *     u32 L            bytes of the entry after this field (little-endian, as all below)
 *     u64 checksum     XXH64 of the L - 8 bytes after it
 *     40 bytes         the blob id, lower-case hex
 *     u32 P            bytes of the path
 *     P bytes          the path
 *     L - 52 - P bytes what rd_cache_export wrote
 * The header must match this build's byte for byte. Entries are listed at the start of a pass
 * from their lengths alone (checked against the file and the limits); the checksum is
 * verified when an entry is read, just before it is taken up.
 */
#include "rc_pcache.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rc_buf.h"
#include "rc_bytes.h"
#include "rc_fstate.h"
#include "rc_hash.h"
#include "rc_mem.h"
#include "rc_version.h"

#include "rc_banned.h"

#define MAGIC "rightplace-parse-cache 1\n"
#define FIXED 52 /* checksum, id, path length */
#define PATH_MAX_BYTES 4096
#define WRITE_CHUNK ((size_t)1 << 20)

struct ent {
    char id[41];
    char *path;
    size_t hash;  /* ent_hash(id, path) */
    uint64_t off; /* of the entry's length field */
    size_t size;  /* the whole entry, length field included */
    struct ent *next;
};

struct rc_pcache {
    char *path;
    char *header;
    size_t header_len;
    int fd;             /* open from rc_pcache_begin to rc_pcache_save, else -1 */
    int leave_payloads; /* rc_pcache_leave_payloads */
    /* the file as this process last read or wrote it: the index is valid while it stays so */
    struct rc_fstate file;
    int rewrite; /* absent, foreign or damaged: written whole at the end of the load */
    size_t n, cap;
    struct ent **slot;
    unsigned char *buf; /* one entry, as read */
    size_t bufcap;
    size_t hits, written;
    int rewritten;
};

/* ==== The index: (id, path) -> entry ==== */

static size_t ent_hash(const char *id, const char *path)
{
    return (size_t)rc_xxh64_pair(id, path);
}

static struct ent *ent_find_at(const struct rc_pcache *pc, size_t h, const char *id,
                               const char *path)
{
    if (!pc->cap)
        return NULL;
    for (struct ent *e = pc->slot[h & (pc->cap - 1)]; e; e = e->next) {
        if (e->hash == h && !strcmp(e->id, id) && !strcmp(e->path, path))
            return e;
    }
    return NULL;
}

static struct ent *ent_find(const struct rc_pcache *pc, const char *id, const char *path)
{
    return pc->cap ? ent_find_at(pc, ent_hash(id, path), id, path) : NULL;
}

static void index_clear(struct rc_pcache *pc)
{
    for (size_t i = 0; i < pc->cap; i++) {
        struct ent *e = pc->slot[i], *next;
        for (; e; e = next) {
            next = e->next;
            free(e->path);
            free(e);
        }
    }
    free(pc->slot);
    pc->slot = NULL;
    pc->n = pc->cap = 0;
}

/* Add or replace (id, path): a later entry wins. */
static void index_put(struct rc_pcache *pc, const char *id, const char *path, size_t plen,
                      uint64_t off, size_t size)
{
    struct ent *e;
    size_t h;

    if (pc->n + 1 > pc->cap / 2) {
        size_t ncap = pc->cap ? pc->cap * 2 : 1024;
        struct ent **ns = rc_xcalloc(ncap, sizeof(*ns));
        for (size_t i = 0; i < pc->cap; i++) {
            struct ent *q = pc->slot[i], *next;
            for (; q; q = next) {
                next = q->next;
                q->next = ns[q->hash & (ncap - 1)];
                ns[q->hash & (ncap - 1)] = q;
            }
        }
        free(pc->slot);
        pc->slot = ns;
        pc->cap = ncap;
    }
    e = rc_xcalloc(1, sizeof(*e));
    memcpy(e->id, id, 40);
    e->path = rc_xmalloc(plen + 1);
    memcpy(e->path, path, plen);
    e->path[plen] = '\0';
    e->off = off;
    e->size = size;
    e->hash = h = ent_hash(e->id, e->path);
    {
        struct ent *old = ent_find_at(pc, h, e->id, e->path);
        if (old) {
            old->off = off;
            old->size = size;
            free(e->path);
            free(e);
            return;
        }
    }
    e->next = pc->slot[h & (pc->cap - 1)];
    pc->slot[h & (pc->cap - 1)] = e;
    pc->n++;
}

static void index_drop(struct rc_pcache *pc, struct ent *gone)
{
    struct ent **pp = &pc->slot[gone->hash & (pc->cap - 1)];

    for (; *pp; pp = &(*pp)->next) {
        if (*pp == gone) {
            *pp = gone->next;
            free(gone->path);
            free(gone);
            pc->n--;
            return;
        }
    }
}

/* ==== Reading ==== */

static void warn_ignored(const struct rc_pcache *pc, const struct rc_log *log, const char *why)
{
    if (log)
        rc_log_warn(log, "parse cache '%s': %s; ignored (its files are parsed again)", pc->path,
                    why);
}

static void scan_damaged(struct rc_pcache *pc, uint64_t off, const struct rc_log *log)
{
    char why[96];

    snprintf(why, sizeof(why), "damaged at byte %llu", (unsigned long long)off);
    warn_ignored(pc, log, why);
    pc->rewrite = 1;
}

#define SCAN_WINDOW ((size_t)1 << 20)

/* List the entries of the open file (pc->fd, of `size` bytes), reading their fixed fields a
 * window at a time. Stops at the first one that does not check out: the entries before it are
 * kept and the file is rewritten. */
static void scan(struct rc_pcache *pc, off_t size, const struct rc_log *log)
{
    size_t hn = (uint64_t)size < pc->header_len ? (size_t)size : pc->header_len;
    char *hdr = rc_xcalloc(1, pc->header_len);
    uint64_t off = pc->header_len;
    unsigned char *win = NULL;
    uint64_t woff = 0; /* the file offset of win[0] */
    size_t wlen = 0;
    int same;

    index_clear(pc);
    same = hn == pc->header_len && rc_file_read_at(pc->fd, hdr, hn, 0) == 0 &&
           !memcmp(hdr, pc->header, pc->header_len);
    if (!same) {
        int ours = hn >= strlen(MAGIC) && rc_file_read_at(pc->fd, hdr, hn, 0) == 0 &&
                   !memcmp(hdr, MAGIC, strlen(MAGIC));
        warn_ignored(pc, log,
                     ours ? "written by another build of rightplace" : "not a parse cache");
        pc->rewrite = 1;
        free(hdr);
        return;
    }
    free(hdr);
    win = rc_xmalloc(SCAN_WINDOW);
    while (off < (uint64_t)size) {
        uint64_t left = (uint64_t)size - off;
        size_t want = left < 4 + FIXED + PATH_MAX_BYTES ? (size_t)left : 4 + FIXED + PATH_MAX_BYTES;
        const unsigned char *head;
        uint32_t len, plen;
        char id[41];
        if (off < woff || off + want > woff + wlen) { /* the window moves to this entry */
            wlen = left < SCAN_WINDOW ? (size_t)left : SCAN_WINDOW;
            woff = off;
            if (rc_file_read_at(pc->fd, win, wlen, woff) < 0)
                wlen = 0;
        }
        head = win + (off - woff);
        if (want < 4 + FIXED || off + want > woff + wlen) {
            scan_damaged(pc, off, log);
            break;
        }
        len = rc_le32_get(head);
        plen = rc_le32_get(head + 4 + 48);
        if (len < FIXED || len > RC_PCACHE_ENTRY_MAX || 4 + (uint64_t)len > left || plen == 0 ||
            plen > PATH_MAX_BYTES || plen > len - FIXED || 4 + FIXED + plen > want ||
            !rc_is_object_id((const char *)head + 12, 40) || memchr(head + 4 + FIXED, '\0', plen)) {
            scan_damaged(pc, off, log);
            break;
        }
        memcpy(id, head + 12, 40);
        id[40] = '\0';
        index_put(pc, id, (const char *)head + 4 + FIXED, plen, off, 4 + (size_t)len);
        off += 4 + (uint64_t)len;
    }
    free(win);
}

void rc_pcache_new(struct rc_pcache **out, const char *path)
{
    struct rc_pcache *pc = rc_xcalloc(1, sizeof(*pc));
    char version[128];

    pc->path = rc_xstrdup(path);
    pc->fd = -1;
    rd_cache_export_version(version, sizeof(version));
    pc->header = rc_version_state_header(&pc->header_len, MAGIC, version);
    *out = pc;
}

void rc_pcache_free(struct rc_pcache *pc)
{
    if (!pc)
        return;
    if (pc->fd >= 0)
        close(pc->fd);
    index_clear(pc);
    free(pc->buf);
    free(pc->header);
    free(pc->path);
    free(pc);
}

void rc_pcache_begin(struct rc_pcache *pc, const struct rc_log *log)
{
    struct stat st;

    pc->hits = pc->written = 0;
    pc->rewritten = 0;
    if (pc->fd >= 0)
        close(pc->fd);
    pc->fd = open(pc->path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (pc->fd < 0) {
        if (errno != ENOENT) {
            char why[128];
            snprintf(why, sizeof(why), "cannot open: %s", strerror(errno));
            warn_ignored(pc, log, why);
        }
        index_clear(pc);
        pc->file.set = 0;
        pc->rewrite = 1;
        return;
    }
    if (fstat(pc->fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
        warn_ignored(pc, log, "not a regular file of this user");
        close(pc->fd);
        pc->fd = -1;
        index_clear(pc);
        pc->file.set = 0;
        pc->rewrite = 1;
        return;
    }
    if (rc_fstate_same(&pc->file, &st))
        return; /* as this process left it: the index holds */
    pc->rewrite = 0;
    scan(pc, st.st_size, log);
    rc_fstate_of(&pc->file, &st);
}

/* Read entry e of (id, path) into dst (e->size bytes) and check it: its payload's offset in
 * dst, or 0 when it is damaged (logged; the entry leaves the index and the file is rewritten
 * at the end of the load). */
static size_t check_entry(struct rc_pcache *pc, struct ent *e, const char *id, const char *path,
                          const unsigned char *dst, int read_failed, const struct rc_log *log)
{
    size_t plen = strlen(path);

    if (read_failed || rc_le32_get(dst) + (size_t)4 != e->size ||
        rc_le64_get(dst + 4) != rc_xxh64(dst + 12, e->size - 12) || memcmp(dst + 12, id, 40) ||
        rc_le32_get(dst + 52) != plen || 56 + plen > e->size || memcmp(dst + 56, path, plen)) {
        char why[PATH_MAX_BYTES + 64];
        snprintf(why, sizeof(why), "the entry of '%s' is damaged", path);
        warn_ignored(pc, log, why);
        index_drop(pc, e);
        pc->rewrite = 1;
        return 0;
    }
    return 56 + plen;
}

static size_t read_entry(struct rc_pcache *pc, struct ent *e, const char *id, const char *path,
                         unsigned char *dst, const struct rc_log *log)
{
    return check_entry(pc, e, id, path, dst, rc_file_read_at(pc->fd, dst, e->size, e->off) < 0,
                       log);
}

static void not_loaded(struct rc_pcache *pc, const char *id, const char *path,
                       const struct rc_log *log)
{
    char why[PATH_MAX_BYTES + 64];
    struct ent *e = ent_find(pc, id, path);

    snprintf(why, sizeof(why), "the entry of '%s' does not load", path);
    warn_ignored(pc, log, why);
    if (e)
        index_drop(pc, e);
    pc->rewrite = 1;
}

int rc_pcache_load(struct rc_pcache *pc, struct rd_cache *c, const char *id, const char *path,
                   const struct rc_log *log)
{
    struct ent *e = pc && pc->fd >= 0 && id && path ? ent_find(pc, id, path) : NULL;
    size_t at;

    if (!e)
        return 0;
    if (e->size > pc->bufcap) {
        free(pc->buf);
        pc->bufcap = e->size;
        pc->buf = rc_xmalloc(pc->bufcap);
    }
    if (!(at = read_entry(pc, e, id, path, pc->buf, log)))
        return 0;
    if (rd_cache_import(c, id, path, pc->buf + at, e->size - at) < 0) {
        not_loaded(pc, id, path, log);
        return 0;
    }
    pc->hits++;
    return 1;
}

#define TAKE_BATCH 256
#define TAKE_BATCH_BYTES ((size_t)8 << 20)

void rc_pcache_leave_payloads(struct rc_pcache *pc, int on)
{
    if (pc)
        pc->leave_payloads = on;
}

size_t rc_pcache_take(struct rc_pcache *pc, struct rd_cache *c, const struct rc_git_blob *blobs,
                      size_t n, int threads, int uncounted, const struct rc_log *log)
{
    struct rd_import v[TAKE_BATCH];
    struct ent *ents[TAKE_BATCH];
    size_t at[TAKE_BATCH];
    size_t taken = 0, nb = 0, used = 0;
    unsigned char *buf = NULL;
    size_t cap = 0;
    struct rd_payload_file *payloads = NULL;

    if (!pc || pc->fd < 0 || !c)
        return 0;
    if (pc->leave_payloads) { /* a descriptor of its own: the entries outlive pc->fd */
        int fd = fcntl(pc->fd, F_DUPFD_CLOEXEC, 0);
        if (fd >= 0)
            payloads = rd_payload_file_new(fd);
    }
    for (size_t i = 0; i <= n; i++) {
        struct ent *e = NULL;
        if (i < n && !rd_cache_has(c, blobs[i].id, blobs[i].path, NULL))
            e = ent_find(pc, blobs[i].id, blobs[i].path);
        if (e) {
            if (used + e->size > cap) {
                cap = used + e->size > 2 * cap ? used + e->size : 2 * cap;
                buf = rc_xrealloc(buf, cap);
            }
            v[nb].id = blobs[i].id;
            v[nb].path = blobs[i].path;
            v[nb].uncounted = uncounted;
            ents[nb] = e;
            at[nb++] = used;
            used += e->size;
        }
        if (nb && (i == n || nb == TAKE_BATCH || used >= TAKE_BATCH_BYTES)) {
            /* read: one pread for each run of entries that follow one another in the file
             * (the file lists them in the order passes parsed them: mostly path order) */
            for (size_t k = 0, run; k < nb; k = run) {
                uint64_t end = ents[k]->off + ents[k]->size;
                int failed;
                for (run = k + 1; run < nb && ents[run]->off == end; run++)
                    end += ents[run]->size;
                failed = rc_file_read_at(pc->fd, buf + at[k], (size_t)(end - ents[k]->off),
                                         ents[k]->off) < 0;
                for (size_t r = k; r < run; r++) {
                    uint64_t at_file = ents[r]->off; /* a damaged entry is dropped below */
                    size_t off =
                        check_entry(pc, ents[r], v[r].id, v[r].path, buf + at[r], failed, log);
                    v[r].data = off ? buf + at[r] + off : NULL; /* NULL: damaged, skipped */
                    v[r].len = off ? ents[r]->size - off : 0;
                    v[r].payloads = payloads;
                    v[r].off = at_file + off;
                }
            }
            rd_cache_import_many(c, v, nb, threads);
            for (size_t k = 0; k < nb; k++) {
                if (v[k].ok)
                    taken++;
                else if (v[k].data)
                    not_loaded(pc, v[k].id, v[k].path, log);
            }
            nb = 0;
            used = 0;
        }
    }
    free(buf);
    rd_payload_file_unref(payloads); /* the entries hold their own references */
    pc->hits += taken;
    return taken;
}

/* ==== Writing ==== */

struct writer {
    int fd;
    const char *name;      /* for messages */
    struct rc_buf out;     /* entries not yet written */
    struct rc_buf scratch; /* one entry */
    uint64_t off;          /* file offset of out's first byte */
    size_t total;          /* bytes written and pending */
};

static int flush(struct writer *w, struct rc_err *err)
{
    size_t done = 0;

    while (done < w->out.len) {
        ssize_t r = write(w->fd, w->out.ptr + done, w->out.len - done);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return rc_err_set(err, RC_ERROR, "cannot write '%s': %s", w->name,
                              r < 0 ? strerror(errno) : "short write");
        done += (size_t)r;
    }
    w->off += w->out.len;
    rc_buf_reset(&w->out);
    return RC_OK;
}

/* Write the entry of blob b when c has one and it fits under max_bytes (file bytes so far:
 * *size); listed in the index at its offset. */
static int emit(struct rc_pcache *pc, struct writer *w, const struct rd_cache *c,
                const struct rc_git_blob *b, size_t *size, size_t max_bytes, struct rc_err *err)
{
    unsigned char fixed[4 + FIXED];
    size_t plen = strlen(b->path), len;
    uint64_t at;

    memset(fixed, 0, sizeof(fixed));
    if (plen == 0 || plen > PATH_MAX_BYTES)
        return RC_OK;
    rc_buf_reset(&w->scratch);
    rc_buf_add(&w->scratch, fixed, sizeof(fixed), NULL);
    rc_buf_add(&w->scratch, b->path, plen, NULL);
    if (rd_cache_export(c, b->id, b->path, &w->scratch) < 0)
        return RC_OK; /* broken, or not parsed by this pass */
    len = w->scratch.len;
    if (len - 4 > RC_PCACHE_ENTRY_MAX ||
        (max_bytes && (*size > max_bytes || len > max_bytes - *size)))
        return RC_OK; /* not kept: parsed again next time */
    rc_le32_put(fixed, (uint32_t)(len - 4));
    memcpy(fixed + 12, b->id, 40);
    rc_le32_put(fixed + 52, (uint32_t)plen);
    memcpy(w->scratch.ptr, fixed, sizeof(fixed));
    rc_le64_put(fixed + 4, rc_xxh64(w->scratch.ptr + 12, len - 12));
    memcpy(w->scratch.ptr + 4, fixed + 4, 8);
    at = w->off + w->out.len;
    rc_buf_add(&w->out, w->scratch.ptr, len, NULL);
    index_put(pc, b->id, b->path, plen, at, len);
    *size += len;
    w->total += len;
    return w->out.len >= WRITE_CHUNK ? flush(w, err) : RC_OK;
}

static int finish_file(struct rc_pcache *pc, int fd)
{
    struct stat st;

    if (fstat(fd, &st) < 0)
        return -1;
    rc_fstate_of(&pc->file, &st);
    return 0;
}

int rc_pcache_save(struct rc_pcache *pc, const struct rd_cache *c, const struct rc_git_blob *blobs,
                   size_t n, size_t max_bytes, struct rc_err *err)
{
    struct writer w;
    struct rc_buf tmp = RC_BUF_INIT;
    size_t live = 0, size, data;
    int rewrite, error = RC_OK;

    if (!pc)
        return RC_OK;
    memset(&w, 0, sizeof(w));
    w.fd = -1;
    w.out = (struct rc_buf)RC_BUF_INIT;
    w.scratch = (struct rc_buf)RC_BUF_INIT;
    for (size_t i = 0; i < n; i++) {
        const struct ent *e = ent_find(pc, blobs[i].id, blobs[i].path);
        live += e ? e->size : 0;
    }
    data = pc->file.set && (size_t)pc->file.size > pc->header_len
               ? (size_t)pc->file.size - pc->header_len
               : 0;
    /* dead bytes (entries no file of this pass used) past the live ones, or a file past its
     * bound (which was lowered): compact */
    rewrite = pc->rewrite || !pc->file.set || data - (live < data ? live : data) > live ||
              (max_bytes && (size_t)pc->file.size > max_bytes);
    if (pc->fd >= 0) {
        close(pc->fd);
        pc->fd = -1;
    }
    if (rewrite) {
        index_clear(pc);
        rc_buf_printf(&tmp, NULL, "%s.tmp.%ld", pc->path, (long)getpid());
        unlink(tmp.ptr);
        w.fd = open(tmp.ptr, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        w.name = tmp.ptr;
        if (w.fd < 0) {
            error = rc_err_set(err, RC_ERROR, "cannot write '%s': %s", tmp.ptr, strerror(errno));
            goto done;
        }
        rc_buf_add(&w.out, pc->header, pc->header_len, NULL);
        size = pc->header_len;
        for (size_t i = 0; i < n && error == RC_OK; i++)
            error = emit(pc, &w, c, &blobs[i], &size, max_bytes, err);
        if (error == RC_OK)
            error = flush(&w, err);
        if (error == RC_OK && fsync(w.fd) < 0)
            error = rc_err_set(err, RC_ERROR, "cannot write '%s': %s", tmp.ptr, strerror(errno));
        if (error == RC_OK && rename(tmp.ptr, pc->path) < 0)
            error = rc_err_set(err, RC_ERROR, "cannot rename '%s': %s", tmp.ptr, strerror(errno));
        if (error == RC_OK && finish_file(pc, w.fd) < 0)
            pc->file.set = 0;
        pc->rewritten = error == RC_OK;
        pc->rewrite = error != RC_OK;
        goto done;
    }
    size = (size_t)pc->file.size;
    w.off = (uint64_t)pc->file.size;
    w.name = pc->path;
    for (size_t i = 0; i < n && error == RC_OK; i++) {
        if (ent_find(pc, blobs[i].id, blobs[i].path))
            continue;
        if (w.fd < 0) {
            struct stat st;
            w.fd = open(pc->path, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
            /* append only to the file the index describes */
            if (w.fd < 0 || fstat(w.fd, &st) < 0 || !rc_fstate_same(&pc->file, &st)) {
                error = rc_err_set(err, RC_ERROR, "cannot append to '%s': %s", pc->path,
                                   w.fd < 0 ? strerror(errno) : "it changed");
                break;
            }
        }
        error = emit(pc, &w, c, &blobs[i], &size, max_bytes, err);
    }
    if (error == RC_OK && w.fd >= 0)
        error = flush(&w, err);
    if (error == RC_OK && w.fd >= 0 && finish_file(pc, w.fd) < 0)
        pc->file.set = 0;
done:
    pc->written = error < 0 ? 0 : w.total; /* what a failed write left is removed below */
    if (w.fd >= 0)
        close(w.fd);
    if (error < 0) {
        /* whatever is there may be torn: gone, and read afresh next time */
        if (tmp.len)
            unlink(tmp.ptr);
        unlink(pc->path);
        index_clear(pc);
        pc->file.set = 0;
        pc->rewrite = 1;
    }
    rc_buf_release(&tmp);
    rc_buf_release(&w.out);
    rc_buf_release(&w.scratch);
    return error;
}

size_t rc_pcache_hits(const struct rc_pcache *pc)
{
    return pc ? pc->hits : 0;
}

size_t rc_pcache_written(const struct rc_pcache *pc)
{
    return pc ? pc->written : 0;
}

int rc_pcache_rewritten(const struct rc_pcache *pc)
{
    return pc ? pc->rewritten : 0;
}
