/*
 * rc_rcache.c - the record cache file (see rc_rcache.h).
 *
 * Format:
 *   "rightplace-record-cache 2\n"
 *   "rightplace <version> load <digest of the Load step's sources> <RD_RECORD_PACK_VERSION>\n"
 *   one entry:
 *     u64 L            bytes of the entry after this field (little-endian, as below)
 *     u64 checksum     XXH64 of the L - 8 bytes after it
 *     40 bytes         the placements.yaml blob id, lower-case hex
 *     u32 S            bytes of the blob's source line + 1 (0: it has none)
 *     u64 M            bytes of the writer's memo at the end (0: none)
 *     S - 1 bytes      the source line
 *     L - 68 - (S - 1) - M bytes   what rd_record_pack wrote
 *     M bytes          what rd_record_memo_export wrote: the memo the blob was written with
 * The header must match this build's byte for byte, and the entry must end the file.
 */
#include "rc_rcache.h"

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

#define MAGIC "rightplace-record-cache 2\n"
#define FIXED 68 /* length, checksum, blob id, source line length, memo length */
#define LINE_MAX_BYTES 4096

struct rc_rcache {
    char *path;
    char *header;
    size_t header_len;
    char held[41];           /* the blob whose record the file holds, as last read or written */
    int held_memo;           /* and whether the writer's memo is with it */
    struct rc_fstate known;  /* the file then */
    struct rc_fstate warned; /* the file last warned about (warned once) */
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
    free(rc->header);
    free(rc->path);
    free(rc);
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

int rc_rcache_load(struct rc_rcache *rc, struct rd_record *out, struct rc_rcache_line *line,
                   struct rd_record_memo *memo, int *memo_read, const char *blob,
                   struct rc_arena *a, const struct rc_log *log)
{
    struct rc_err err = RC_ERR_INIT;
    struct stat st;
    unsigned char *buf = NULL, *p;
    size_t size, len, slen, mlen;
    int fd, hit = 0;

    if (memo_read)
        *memo_read = 0;
    if (!rc || !blob)
        return 0;
    rc->held[0] = '\0';
    fd = open(rc->path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        if (errno != ENOENT) {
            char why[128];
            snprintf(why, sizeof(why), "cannot open: %s", strerror(errno));
            warn_ignored(rc, NULL, log, why);
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
    /* the header and the fixed fields first: another blob's record is not read */
    buf = rc_xmalloc(size + 1);
    p = buf + rc->header_len;
    if (size < rc->header_len + FIXED || rc_file_read_at(fd, buf, rc->header_len + FIXED, 0) < 0) {
        warn_ignored(rc, &st, log, "truncated");
        goto done;
    }
    if (memcmp(buf, rc->header, rc->header_len)) {
        int ours = !memcmp(buf, MAGIC, strlen(MAGIC));
        warn_ignored(rc, &st, log,
                     ours ? "written by another build of rightplace" : "not a record cache");
        goto done;
    }
    len = size - rc->header_len;
    slen = rc_le32_get(p + 56);
    mlen = (size_t)rc_le64_get(p + 60);
    if (rc_le64_get(p) != len - 8 || slen > LINE_MAX_BYTES + 1 || FIXED + slen > len + 1 ||
        mlen > len - FIXED - (slen ? slen - 1 : 0)) {
        warn_ignored(rc, &st, log, "truncated or damaged");
        goto done;
    }
    if (memcmp(p + 16, blob, 40)) {
        /* the deploy branch moved by other means since this file was written (a proposal
         * promoted, a push by hand, a reset): a miss, not damage, so no warning */
        if (log)
            rc_log_debug(log,
                         "record cache '%s' holds the record of another placements.yaml "
                         "(the record is parsed)",
                         rc->path);
        goto done;
    }
    if (rc_file_read_at(fd, p + FIXED, len - FIXED, rc->header_len + FIXED) < 0 ||
        rc_le64_get(p + 8) != rc_xxh64(p + 16, len - 16)) {
        warn_ignored(rc, &st, log, "damaged (checksum)");
        goto done;
    }
    slen = slen ? slen - 1 : 0;
    if (rd_record_unpack(out, p + FIXED + slen, len - FIXED - slen - mlen, a, &err) < 0) {
        warn_ignored(rc, &st, log, "the record does not load");
        goto done;
    }
    if (memo && mlen) {
        if (rd_record_memo_import(memo, p + len - mlen, mlen) == RC_OK) {
            if (memo_read)
                *memo_read = 1;
        } else {
            warn_ignored(rc, &st, log, "the writer's memo does not load");
            goto done;
        }
    }
    if (line) {
        line->have = rc_le32_get(p + 56) != 0;
        line->len = slen;
        line->text = line->have ? rc_arena_strndup(a, (const char *)p + FIXED, slen) : NULL;
    }
    memcpy(rc->held, blob, 40);
    rc->held[40] = '\0';
    rc->held_memo = mlen > 0;
    rc_fstate_of(&rc->known, &st);
    rc->hits++;
    hit = 1;
done:
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

void rc_rcache_prepare(struct rc_buf *out, const struct rc_rcache *rc, const struct rd_record *r,
                       const struct rc_rcache_line *line, const struct rd_record_memo *memo)
{
    unsigned char fixed[FIXED];
    size_t slen = line && line->have ? line->len : 0;

    rc_buf_reset(out);
    memset(fixed, 0, sizeof(fixed));
    if (line && line->have && slen <= LINE_MAX_BYTES)
        rc_le32_put(fixed + 56, (uint32_t)slen + 1);
    else
        slen = 0;
    rc_buf_add(out, rc->header, rc->header_len, NULL);
    rc_buf_add(out, fixed, sizeof(fixed), NULL);
    rc_buf_add(out, slen ? line->text : "", slen, NULL);
    rd_record_pack(out, r);
    if (memo) {
        size_t before = out->len;
        rd_record_memo_export(memo, out);
        rc_le64_put((unsigned char *)out->ptr + rc->header_len + 60, out->len - before);
    }
}

int rc_rcache_write(struct rc_rcache *rc, const char *blob, struct rc_buf *prepared,
                    struct rc_err *err)
{
    unsigned char *p;
    struct stat st;
    size_t len;
    int error, memo;

    if (!rc)
        return RC_OK;
    /* a file holding the blob's record is kept, unless this brings the memo it lacks (the
     * record was parsed from the head, and a later pass wrote the same blob with its memo) */
    memo = prepared->len >= rc->header_len + FIXED &&
           rc_le64_get((const unsigned char *)prepared->ptr + rc->header_len + 60) > 0;
    if (rc_rcache_holds(rc, blob) && (rc->held_memo || !memo))
        return RC_OK;
    rc->held[0] = '\0';
    if (prepared->len < rc->header_len + FIXED || prepared->len > RC_RCACHE_MAX_BYTES) {
        unlink(rc->path); /* not kept: parsed every time */
        return RC_OK;
    }
    p = (unsigned char *)prepared->ptr + rc->header_len;
    len = prepared->len - rc->header_len;
    rc_le64_put(p, len - 8);
    memcpy(p + 16, blob, 40);
    rc_le64_put(p + 8, rc_xxh64(p + 16, len - 16));
    error = rc_file_write_atomic(rc->path, prepared->ptr, prepared->len, err);
    if (error < 0) {
        unlink(rc->path); /* whatever is there is another record's: no use */
    } else {
        rc->written += prepared->len;
        if (lstat(rc->path, &st) == 0) {
            memcpy(rc->held, blob, 40);
            rc->held[40] = '\0';
            rc->held_memo = memo;
            rc_fstate_of(&rc->known, &st);
        }
    }
    return error;
}

int rc_rcache_save(struct rc_rcache *rc, const char *blob, const struct rd_record *r,
                   const struct rc_rcache_line *line, struct rc_err *err)
{
    struct rc_buf b = RC_BUF_INIT;
    int error;

    if (!rc || rc_rcache_holds(rc, blob))
        return RC_OK;
    rc_rcache_prepare(&b, rc, r, line, NULL);
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
