/*
 * rc_rcache.c - the record cache file (see rc_rcache.h).
 *
 * Format:
 *   "rightplace-record-cache 3\n"
 *   "rightplace <version> load <digest of the Load step's sources> <RD_RECORD_PACK_VERSION>\n"
 *   entries, back to back:
 *     u64 L            bytes of the entry after this field (little-endian, as below)
 *     u64 checksum     XXH64 of the L - 8 bytes after it
 *     u8 kind          'R': a record, named by its placements.yaml's blob id;
 *                      'S': a shard's units, named by the shard file's blob id
 *     40 bytes         that blob id, lower-case hex
 *     then, for 'R':
 *       u32 S          bytes of the blob's source line + 1 (0: it has none)
 *       u8 form        0: the record whole; 1: in shards
 *       u8 memo        1: the writer's memo the blob was written with is kept
 *       S - 1 bytes    the source line
 *       form 0:        u64 P, P bytes of rd_record_pack, then what rd_record_memo_export
 *                      wrote (nothing without the memo)
 *       form 1:        u64 nshards, u64 n, n x (u64 shard index, 40 hex digits of the 'S'
 *                      entry holding it), ascending by index; then what rd_record_pack_head
 *                      wrote
 *     for 'S': what rd_record_pack_shard wrote
 * The header must match this build's byte for byte. A pass whose record is in shards appends
 * the entries of the shards it wrote and its 'R' (a shard it kept is in the file already,
 * under the same blob id); the file is written whole (a temporary file, fsync, rename) when
 * it is new, damaged or not as this process left it, when it holds none of the record's
 * shards, or when the entries no record uses would pass half the live ones. A reader takes
 * the last 'R' of the blob asked for and the 'S' entries it names, each checked against its
 * checksum, and joins them; a torn or damaged tail ends the entries read, and the next write
 * rewrites the file.
 */
#include "rc_rcache.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rc_buf.h"
#include "rc_bytes.h"
#include "rc_fstate.h"
#include "rc_hash.h"
#include "rc_mem.h"
#include "rc_version.h"

#include "rc_banned.h"

#define MAGIC "rightplace-record-cache 3\n"
#define FIXED 57   /* length, checksum, kind, blob id */
#define R_FIXED 6  /* source line length, form, memo */
#define PART_ID 48 /* a shard named in an 'R': index, blob id */
#define LINE_MAX_BYTES 4096
/* a file is written whole when what no record uses would pass half the live entries and this */
#define SLACK ((size_t)256 << 10)

struct entry {
    char kind;
    char id[41];
    size_t off, len; /* of the whole entry, its length field included */
};

struct rc_rcache {
    char *path;
    char *header;
    size_t header_len;
    char held[41];           /* the blob whose record the file holds, as last read or written */
    int held_memo;           /* and whether the writer's memo is with it */
    struct rc_fstate known;  /* the file then */
    struct rc_fstate warned; /* the file last warned about (warned once) */
    /* the file's entries as known (index_ok: the file is as this process read or wrote it,
     * so that entries may be appended; else the next write rewrites it) */
    int index_ok;
    struct entry *entries;
    size_t nentries, cap;
    size_t size;
    size_t hits, written;
};

void rc_rcache_new(struct rc_rcache **out, const char *path)
{
    struct rc_rcache *rc = rc_xcalloc(1, sizeof(*rc));

    rc->path = rc_xstrdup(path);
    rc->header = rc_version_state_header(&rc->header_len, MAGIC, RD_RECORD_PACK_VERSION);
    *out = rc;
}

void rc_rcache_free(struct rc_rcache *rc)
{
    if (!rc)
        return;
    free(rc->entries);
    free(rc->header);
    free(rc->path);
    free(rc);
}

static void index_clear(struct rc_rcache *rc)
{
    rc->nentries = 0;
    rc->index_ok = 0;
    rc->size = 0;
}

/* The entries of data[from..len) (as the file holds them from offset base + from) added to
 * the index: returns the offset after the last whole one. */
static size_t index_add(struct rc_rcache *rc, const unsigned char *data, size_t from, size_t len,
                        size_t base)
{
    size_t off = from;

    while (len - off >= 8) {
        uint64_t l = rc_le64_get(data + off);
        struct entry *e;
        if (l < FIXED - 8 || l > len - off - 8)
            break;
        rc->entries = rc_xgrow(rc->entries, &rc->cap, rc->nentries + 1, sizeof(*rc->entries));
        e = &rc->entries[rc->nentries++];
        e->kind = (char)data[off + 16];
        memcpy(e->id, data + off + 17, 40);
        e->id[40] = '\0';
        e->off = base + off;
        e->len = 8 + (size_t)l;
        off += 8 + (size_t)l;
    }
    return off;
}

/* The last entry of kind and id, or NULL. */
static const struct entry *index_find(const struct rc_rcache *rc, char kind, const char *id)
{
    for (size_t i = rc->nentries; i-- > 0;) {
        if (rc->entries[i].kind == kind && !memcmp(rc->entries[i].id, id, 40))
            return &rc->entries[i];
    }
    return NULL;
}

static int entry_checks(const unsigned char *file, const struct entry *e)
{
    return rc_le64_get(file + e->off + 8) == rc_xxh64(file + e->off + 16, e->len - 16);
}

/* A warning for the file in state st, unless this state was warned about already. */
static void warn_ignored(struct rc_rcache *rc, const struct stat *st, const struct rc_log *log,
                         const char *why)
{
    if (st && rc_fstate_same(&rc->warned, st))
        return;
    if (st)
        rc_fstate_of(&rc->warned, st);
    if (log)
        rc_log_warn(log, "record cache '%s': %s; ignored (the record is parsed)", rc->path, why);
}

/* The record of 'R' entry e of file (form 1: with the 'S' entries it names): NULL, or why
 * it does not load. */
static const char *read_record(struct rc_rcache *rc, const unsigned char *file,
                               const struct entry *e, struct rd_record *out,
                               struct rc_rcache_line *line, struct rd_record_memo *memo,
                               int *memo_read, struct rc_arena *a)
{
    struct rc_err err = RC_ERR_INIT;
    const unsigned char *p = file + e->off + FIXED, *end = file + e->off + e->len;
    size_t slen, rest;
    int form, with_memo;

    if (!entry_checks(file, e))
        return "damaged (checksum)";
    if (end - p < R_FIXED)
        return "damaged";
    slen = rc_le32_get(p);
    form = p[4];
    with_memo = p[5];
    if (slen > LINE_MAX_BYTES + 1 || form > 1 || with_memo > 1 ||
        (size_t)(end - p) - R_FIXED < (slen ? slen - 1 : 0))
        return "damaged";
    p += R_FIXED;
    if (line) {
        line->have = slen != 0;
        line->len = slen ? slen - 1 : 0;
        line->text = line->have ? rc_arena_strndup(a, (const char *)p, line->len) : NULL;
    }
    p += slen ? slen - 1 : 0;
    rest = (size_t)(end - p);
    if (form == 0) {
        size_t plen;
        if (rest < 8 || (plen = (size_t)rc_le64_get(p)) > rest - 8)
            return "damaged";
        if (rd_record_unpack(out, p + 8, plen, a, &err) < 0)
            return "the record does not load";
        if (memo && with_memo) {
            if (rd_record_memo_import(memo, p + 8 + plen, rest - 8 - plen) != RC_OK)
                return "the writer's memo does not load";
            if (memo_read)
                *memo_read = 1;
        }
    } else {
        size_t nshards, n;
        const unsigned char **parts;
        size_t *lens, *index;
        const char *why = NULL;
        if (rest < 16)
            return "damaged";
        nshards = (size_t)rc_le64_get(p);
        n = (size_t)rc_le64_get(p + 8);
        p += 16;
        if (n > (rest - 16) / PART_ID)
            return "damaged";
        parts = rc_xcalloc(n + 1, sizeof(*parts));
        lens = rc_xcalloc(n + 1, sizeof(*lens));
        index = rc_xcalloc(n + 1, sizeof(*index));
        for (size_t k = 0; k < n && !why; k++, p += PART_ID) {
            const struct entry *s;
            index[k] = (size_t)rc_le64_get(p);
            s = index_find(rc, 'S', (const char *)p + 8);
            if (!s)
                why = "damaged (a shard's entry is missing)";
            else if (!entry_checks(file, s))
                why = "damaged (checksum)";
            else {
                parts[k] = file + s->off + FIXED;
                lens[k] = s->len - FIXED;
            }
        }
        if (!why) {
            size_t nunits = end - p >= 8 ? (size_t)rc_le64_get(p) : SIZE_MAX;
            if (nunits > ((size_t)(end - p) - 8) / 2)
                why = "damaged";
            else if (rd_record_unpack_shards(out, with_memo ? memo : NULL, memo_read,
                                             p + 8 + 2 * nunits, (size_t)(end - p) - 8 - 2 * nunits,
                                             parts, lens, index, n, nshards, p + 8, nunits, a,
                                             &err) < 0)
                why = "the record does not load";
        }
        free(parts);
        free(lens);
        free(index);
        if (why)
            return why;
    }
    rc->held_memo = with_memo;
    return NULL;
}

int rc_rcache_load(struct rc_rcache *rc, struct rd_record *out, struct rc_rcache_line *line,
                   struct rd_record_memo *memo, int *memo_read, const char *blob,
                   struct rc_arena *a, const struct rc_log *log)
{
    struct stat st;
    unsigned char *buf = NULL;
    void *map = NULL;
    const struct entry *e;
    const char *why;
    size_t size = 0, end;
    int fd, hit = 0;

    if (memo_read)
        *memo_read = 0;
    if (!rc || !blob)
        return 0;
    rc->held[0] = '\0';
    index_clear(rc);
    fd = open(rc->path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        if (errno != ENOENT) {
            char why_open[128];
            snprintf(why_open, sizeof(why_open), "cannot open: %s", strerror(errno));
            warn_ignored(rc, NULL, log, why_open);
        }
        return 0;
    }
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
        warn_ignored(rc, NULL, log, "not a regular file of this user");
        goto done;
    }
    size = (size_t)st.st_size;
    if (size > RC_RCACHE_MAX_BYTES) {
        warn_ignored(rc, &st, log, "larger than its limit");
        goto done;
    }
    if (size < rc->header_len) {
        warn_ignored(rc, &st, log, "truncated");
        goto done;
    }
    /* mapped, not copied: a read into fresh memory costs a page fault a page besides the copy
     * (bench/RESULTS.md, note 99); the state directory's lock keeps writers out meanwhile */
    map = mmap(NULL, size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
    if (map != MAP_FAILED) {
        buf = map;
    } else {
        map = NULL;
        buf = rc_xmalloc(size + 1);
        if (rc_file_read_at(fd, buf, size, 0) < 0) {
            warn_ignored(rc, &st, log, "truncated");
            goto done;
        }
    }
    if (memcmp(buf, rc->header, rc->header_len)) {
        int ours = !memcmp(buf, MAGIC, strlen(MAGIC) - 2);
        warn_ignored(rc, &st, log,
                     ours ? "written by another build of rightplace" : "not a record cache");
        goto done;
    }
    end = index_add(rc, buf, rc->header_len, size, 0);
    rc_fstate_of(&rc->known, &st);
    rc->size = size;
    rc->index_ok = end == size; /* a torn tail: written whole next time */
    e = index_find(rc, 'R', blob);
    if (!e && end != size) {
        warn_ignored(rc, &st, log, "truncated or damaged");
        goto done;
    }
    if (!e) {
        /* the deploy branch moved by other means since this file was written (a proposal
         * promoted, a push by hand, a reset): a miss, not damage, so no warning */
        if (log)
            rc_log_debug(log,
                         "record cache '%s' holds no record of this placements.yaml "
                         "(the record is parsed)",
                         rc->path);
        goto done;
    }
    why = read_record(rc, buf, e, out, line, memo, memo_read, a);
    if (why) {
        if (memo_read)
            *memo_read = 0;
        rc->index_ok = 0;
        warn_ignored(rc, &st, log, why);
        goto done;
    }
    memcpy(rc->held, blob, 40);
    rc->held[40] = '\0';
    rc->hits++;
    hit = 1;
done:
    if (map)
        munmap(map, size);
    else
        free(buf);
    close(fd);
    return hit;
}

int rc_rcache_holds(const struct rc_rcache *rc, const char *blob)
{
    struct stat st;

    return rc && blob && rc->held[0] && !strcmp(rc->held, blob) && lstat(rc->path, &st) == 0 &&
           rc_fstate_same(&rc->known, &st);
}

/* The entry begun at b[at] (entry_begin) ends here: its length and checksum filled in. */
static void entry_end(struct rc_buf *b, size_t at)
{
    unsigned char *p = (unsigned char *)b->ptr + at;

    rc_le64_put(p, b->len - at - 8);
    rc_le64_put(p + 8, rc_xxh64(p + 16, b->len - at - 16));
}

/* An entry of kind and id (NULL: set later) begins: its offset in b. */
static size_t entry_begin(struct rc_buf *b, char kind, const char *id)
{
    unsigned char fixed[FIXED];
    size_t at = b->len;

    memset(fixed, 0, sizeof(fixed));
    fixed[16] = (unsigned char)kind;
    if (id)
        memcpy(fixed + 17, id, 40);
    rc_buf_add(b, fixed, sizeof(fixed), NULL);
    return at;
}

/* The 'R' entry's fields up to its form's bytes (its blob id is set by rc_rcache_write). */
static size_t record_begin(struct rc_buf *b, const struct rc_rcache_line *line, int form, int memo)
{
    unsigned char f[R_FIXED];
    size_t slen = line && line->have && line->len <= LINE_MAX_BYTES ? line->len : 0;

    size_t at = entry_begin(b, 'R', NULL);

    memset(f, 0, sizeof(f));
    if (line && line->have && line->len <= LINE_MAX_BYTES)
        rc_le32_put(f, (uint32_t)slen + 1);
    f[4] = (unsigned char)form;
    f[5] = (unsigned char)(memo != 0);
    rc_buf_add(b, f, sizeof(f), NULL);
    rc_buf_add(b, slen ? line->text : "", slen, NULL);
    return at;
}

/* The file whole, the record in one entry (form 0). */
static void prepare_whole(struct rc_buf *out, const struct rc_rcache *rc, const struct rd_record *r,
                          const struct rc_rcache_line *line, const struct rd_record_memo *memo)
{
    unsigned char num[8] = {0};
    size_t at, rec;

    rc_buf_add(out, rc->header, rc->header_len, NULL);
    rec = record_begin(out, line, 0, memo != NULL);
    at = out->len;
    rc_buf_add(out, num, 8, NULL);
    rd_record_pack(out, r);
    rc_le64_put((unsigned char *)out->ptr + at, out->len - at - 8);
    if (memo)
        rd_record_memo_export(memo, out);
    entry_end(out, rec);
}

void rc_rcache_prepare(struct rc_buf *out, const struct rc_rcache *rc, const struct rd_record *r,
                       const struct rc_rcache_line *line, const struct rd_record_memo *memo)
{
    size_t nsh = rd_record_memo_shards(memo), *count = NULL, *start = NULL, *which = NULL;
    size_t *shard = NULL, live = 0, fresh, rec;
    unsigned char *have = NULL, num[8];
    struct rc_buf parts = RC_BUF_INIT;
    int whole, ok = 1;

    rc_buf_reset(out);
    if (!nsh) { /* one file, or no memo to name the shards by */
        prepare_whole(out, rc, r, line, memo);
        return;
    }
    /* the units of each shard (r is in order of unit, so each shard's are too) */
    count = rc_xcalloc(nsh + 1, sizeof(*count));
    start = rc_xcalloc(nsh + 1, sizeof(*start));
    shard = rc_xcalloc(r->nunits + 1, sizeof(*shard));
    which = rc_xcalloc(r->nunits + 1, sizeof(*which));
    have = rc_xcalloc(nsh + 1, 1);
    for (size_t i = 0; i < r->nunits; i++)
        count[shard[i] = rd_record_shard_of(r->units[i].unit, nsh)]++;
    for (size_t k = 1; k <= nsh; k++)
        start[k] = start[k - 1] + count[k - 1];
    {
        size_t *at = rc_xcalloc(nsh + 1, sizeof(*at));
        for (size_t i = 0; i < r->nunits; i++)
            which[start[shard[i]] + at[shard[i]]++] = i;
        free(at);
    }
    /* a shard whose entry the file has is not packed again */
    for (size_t k = 0; k < nsh && ok; k++) {
        const char *id = rd_record_memo_shard_id(memo, k);
        const struct entry *e;
        ok = !count[k] == !id[0]; /* the memo names the shards these units are in */
        if (!count[k] || !ok)
            continue;
        e = rc->index_ok ? index_find(rc, 'S', id) : NULL;
        if (e) {
            have[k] = 1;
            live += e->len;
        } else {
            size_t at = entry_begin(&parts, 'S', id);
            rd_record_pack_shard(&parts, r, memo, which + start[k], count[k]);
            entry_end(&parts, at);
        }
    }
    if (!ok) {
        prepare_whole(out, rc, r, line, memo);
        goto done;
    }
    /* written whole when nothing in the file is kept (as many bytes, and no garbage), or
     * when the bytes no record would use pass half the live ones (a reader reads them all) */
    fresh = parts.len + FIXED + R_FIXED + 24 + nsh * PART_ID + 2 * r->nunits;
    whole = !rc->index_ok || !live || rc->size - live > (live + fresh) / 2 + SLACK ||
            rc->size + fresh > RC_RCACHE_MAX_BYTES;
    if (whole) {
        rc_buf_add(out, rc->header, rc->header_len, NULL);
        for (size_t k = 0; k < nsh; k++) {
            size_t at;
            if (!have[k])
                continue;
            at = entry_begin(&parts, 'S', rd_record_memo_shard_id(memo, k));
            rd_record_pack_shard(&parts, r, memo, which + start[k], count[k]);
            entry_end(&parts, at);
        }
    }
    rc_buf_add(out, parts.ptr, parts.len, NULL);
    rec = record_begin(out, line, 1, 1);
    rc_le64_put(num, nsh);
    rc_buf_add(out, num, 8, NULL);
    {
        size_t n = 0;
        for (size_t k = 0; k < nsh; k++)
            n += count[k] != 0;
        rc_le64_put(num, n);
        rc_buf_add(out, num, 8, NULL);
    }
    for (size_t k = 0; k < nsh; k++) {
        if (!count[k])
            continue;
        rc_le64_put(num, k);
        rc_buf_add(out, num, 8, NULL);
        rc_buf_add(out, rd_record_memo_shard_id(memo, k), 40, NULL);
    }
    rc_le64_put(num, r->nunits);
    rc_buf_add(out, num, 8, NULL);
    rd_record_pack_order(out, r, nsh);
    rd_record_pack_head(out, r, memo);
    entry_end(out, rec);
done:
    rc_buf_release(&parts);
    free(count);
    free(start);
    free(shard);
    free(which);
    free(have);
}

/* The offset of the last entry of the prepared bytes b[from..) (the 'R'), and whether it
 * keeps the writer's memo. */
static size_t last_entry(const struct rc_buf *b, size_t from, int *memo)
{
    const unsigned char *p = (const unsigned char *)b->ptr;
    size_t off = from, last = from;

    while (b->len - off >= 8) {
        uint64_t l = rc_le64_get(p + off);
        if (l > b->len - off - 8)
            break;
        last = off;
        off += 8 + (size_t)l;
    }
    *memo = b->len - last >= FIXED + R_FIXED && p[last + FIXED + 5];
    return last;
}

int rc_rcache_write(struct rc_rcache *rc, const char *blob, struct rc_buf *prepared,
                    struct rc_err *err)
{
    unsigned char *p;
    struct stat st;
    size_t from, last;
    int error = RC_OK, memo, whole, fd;

    if (!rc)
        return RC_OK;
    whole = prepared->len >= rc->header_len && !memcmp(prepared->ptr, rc->header, rc->header_len);
    from = whole ? rc->header_len : 0;
    if (prepared->len < from + FIXED + R_FIXED || prepared->len > RC_RCACHE_MAX_BYTES) {
        unlink(rc->path); /* not kept: parsed every time */
        rc->held[0] = '\0';
        index_clear(rc);
        return RC_OK;
    }
    /* a file holding the blob's record is kept, unless this brings the memo it lacks (the
     * record was parsed from the head, and a later pass wrote the same blob with its memo) */
    last = last_entry(prepared, from, &memo);
    if (rc_rcache_holds(rc, blob) && (rc->held_memo || !memo))
        return RC_OK;
    rc->held[0] = '\0';
    p = (unsigned char *)prepared->ptr + last;
    memcpy(p + 17, blob, 40);
    rc_le64_put(p, prepared->len - last - 8);
    rc_le64_put(p + 8, rc_xxh64(p + 16, prepared->len - last - 16));
    if (whole) {
        error = rc_file_write_atomic(rc->path, prepared->ptr, prepared->len, err);
        index_clear(rc);
        if (error == RC_OK && lstat(rc->path, &st) == 0) {
            index_add(rc, (const unsigned char *)prepared->ptr, rc->header_len, prepared->len, 0);
            rc->size = prepared->len;
            rc->index_ok = 1;
            rc_fstate_of(&rc->known, &st);
        }
    } else {
        /* append only to the file the index describes */
        fd = open(rc->path, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0 || fstat(fd, &st) < 0 || !rc_fstate_same(&rc->known, &st) ||
            (size_t)st.st_size != rc->size)
            error = rc_err_set(err, RC_ERROR, "cannot append to the record cache '%s': %s",
                               rc->path, fd < 0 ? strerror(errno) : "it changed");
        else if (rc_file_write_all(fd, prepared->ptr, prepared->len) < 0 || fstat(fd, &st) < 0)
            error = rc_err_set(err, RC_ERROR, "cannot append to the record cache '%s': %s",
                               rc->path, strerror(errno));
        if (fd >= 0)
            close(fd);
        if (error == RC_OK) {
            index_add(rc, (const unsigned char *)prepared->ptr, 0, prepared->len, rc->size);
            rc->size += prepared->len;
            rc_fstate_of(&rc->known, &st);
        }
    }
    if (error < 0) {
        unlink(rc->path); /* whatever is there may be torn: gone, and written whole next */
        index_clear(rc);
        return error;
    }
    rc->written += prepared->len;
    memcpy(rc->held, blob, 40);
    rc->held[40] = '\0';
    rc->held_memo = memo;
    return RC_OK;
}

int rc_rcache_save(struct rc_rcache *rc, const char *blob, const struct rd_record *r,
                   const struct rc_rcache_line *line, const struct rd_record_memo *memo,
                   struct rc_err *err)
{
    struct rc_buf b = RC_BUF_INIT;
    int error;

    if (!rc || (!memo && rc_rcache_holds(rc, blob)))
        return RC_OK;
    rc_rcache_prepare(&b, rc, r, line, memo);
    error = rc_rcache_write(rc, blob, &b, err);
    rc_buf_release(&b);
    return error;
}

size_t rc_rcache_hits(const struct rc_rcache *rc)
{
    return rc ? rc->hits : 0;
}

size_t rc_rcache_written(const struct rc_rcache *rc)
{
    return rc ? rc->written : 0;
}
