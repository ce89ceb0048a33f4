/*
 * rc_cache.c - the memo of the last pass, in memory and in <state_dir>/pass-state.
 *
 * File format (text, one field per line, written only by rc_cache_set_memo):
 *   rightplace-pass-state 1
 *   key <40 hex>
 *   commit <40 hex>
 *   source <40 hex>
 *   deploy <40 hex, or "-">
 *   quiet <0 or 1>
 *   errors <count>
 *   <path> <message>          one line per error; bytes <= ' ', '%' and DEL as %XX
 *   kept <count>
 *   <path> <40 hex>           one line per kept version
 *   end
 * The reader accepts exactly this and nothing else: the file may have been damaged or
 * written by someone else, and the worst a bad memo may cause is a pass doing all its work.
 */
#include "rc_cache.h"
#include "rc_watch.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rc_apply.h"
#include "rc_arena.h"
#include "rc_buf.h"
#include "rc_hash.h"
#include "rc_mem.h"
#include "rc_pcache.h"
#include "rc_rcache.h"
#include "rc_version.h"
#include "rd_output.h"

#include "rc_banned.h"

#define MEMO_FILE "pass-state"
#define MEMO_MAGIC "rightplace-pass-state 1"

/* A kept decision record and the arena that holds it. A record made over the one before it
 * (rc_cache_take_record_over) shares that one's strings: its arena took the older one's
 * blocks, and `chain` counts the records in it; `dead` counts the units of those records no
 * later record shares, whose strings the chain still holds. */
struct kept_record {
    char blob[41]; /* "" when none */
    struct rd_record rec;
    struct rc_arena arena; /* empty when the record after it took it over */
    char *text;            /* the blob's bytes (in arena), or NULL */
    size_t len;
    unsigned chain;
    size_t dead;
};

/* A chain holds at most this many records, and dead units up to a quarter of its record's:
 * then the next record is made whole and the chain goes with the record before it. */
#define CHAIN_MAX 64

struct rc_cache {
    char *state_dir; /* NULL: memory only */
    struct rc_memo memo;
    struct rd_cache *parsed;
    struct kept_record rec, older; /* the record, and the one before (results may point in) */
    struct rd_record_memo *writer;
    char writer_blob[41];    /* rc_cache_memo_blob */
    struct rc_pcache *pfile; /* NULL: none */
    struct rc_rcache *rfile; /* NULL: none */
    uint64_t *reported;      /* rc_cache_reported (NULL: not set) */
    size_t nreported;
    struct rc_apply_memory *applied; /* rc_cache_apply_memory (NULL: not made yet) */
    struct rc_watch_set *watches;    /* rc_cache_watches (NULL: not made yet) */
};

static void memo_release(struct rc_memo *m)
{
    for (size_t i = 0; i < m->nerrors; i++) {
        free((char *)m->errors[i].path);
        free((char *)m->errors[i].msg);
    }
    free(m->errors);
    for (size_t i = 0; i < m->nkept; i++)
        free((char *)m->kept[i].path);
    free(m->kept);
    memset(m, 0, sizeof(*m));
}

/* ==== Reading ==== */

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

/* Decode a %XX-escaped field of n bytes (no raw byte <= ' ' allowed); NULL when malformed. */
static char *unescape(const char *s, size_t n)
{
    char *o = rc_xmalloc(n + 1);
    size_t w = 0;

    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c <= ' ' || c == 0x7f)
            goto bad;
        if (c == '%') {
            int h, l;
            if (i + 2 >= n)
                goto bad;
            h = hexval(s[i + 1]);
            l = hexval(s[i + 2]);
            if (h < 0 || l < 0 || (h == 0 && l == 0))
                goto bad;
            o[w++] = (char)(h * 16 + l);
            i += 2;
            continue;
        }
        o[w++] = (char)c;
    }
    o[w] = '\0';
    return o;
bad:
    free(o);
    return NULL;
}

/* The next line (without '\n') of [*p, end); 0 at the end or when a line has no '\n'. */
static int next_line(const char **line, size_t *n, const char **p, const char *end)
{
    const char *eol;

    if (*p >= end)
        return 0;
    eol = memchr(*p, '\n', (size_t)(end - *p));
    if (!eol)
        return 0;
    *line = *p;
    *n = (size_t)(eol - *p);
    *p = eol + 1;
    return 1;
}

/* "<name> <40 hex>" into out; "-" allowed (as "") when dash_ok. */
static int hex_field(char out[41], const char *line, size_t n, const char *name, int dash_ok)
{
    size_t k = strlen(name);

    if (n < k + 1 || memcmp(line, name, k) || line[k] != ' ')
        return 0;
    line += k + 1;
    n -= k + 1;
    if (dash_ok && n == 1 && line[0] == '-') {
        out[0] = '\0';
        return 1;
    }
    if (!rc_is_object_id(line, n))
        return 0;
    memcpy(out, line, 40);
    out[40] = '\0';
    return 1;
}

static int uint_field(size_t *out, const char *line, size_t n, const char *name, size_t max)
{
    size_t k = strlen(name), v = 0;

    if (n < k + 2 || memcmp(line, name, k) || line[k] != ' ' || n - k - 1 > 10)
        return 0;
    for (size_t i = k + 1; i < n; i++) {
        if (line[i] < '0' || line[i] > '9')
            return 0;
        v = v * 10 + (size_t)(line[i] - '0');
    }
    if (v > max)
        return 0;
    *out = v;
    return 1;
}

static int parse_memo(struct rc_memo *m, const char *text, size_t len)
{
    const char *p = text, *end = text + len, *line;
    size_t n, quiet = 0, nerr = 0, nkept = 0;

    memset(m, 0, sizeof(*m));
    if (!next_line(&line, &n, &p, end) || n != strlen(MEMO_MAGIC) || memcmp(line, MEMO_MAGIC, n))
        return -1;
    if (!next_line(&line, &n, &p, end) || !hex_field(m->key, line, n, "key", 0) ||
        !next_line(&line, &n, &p, end) || !hex_field(m->commit, line, n, "commit", 0) ||
        !next_line(&line, &n, &p, end) || !hex_field(m->source, line, n, "source", 0) ||
        !next_line(&line, &n, &p, end) || !hex_field(m->deploy, line, n, "deploy", 1) ||
        !next_line(&line, &n, &p, end) || !uint_field(&quiet, line, n, "quiet", 1) ||
        /* each error is a line of at least 3 bytes ("p m\n"), each kept version of 43 */
        !next_line(&line, &n, &p, end) ||
        !uint_field(&nerr, line, n, "errors", (size_t)(end - p) / 3))
        goto bad;
    m->quiet = (int)quiet;
    m->errors = rc_xcalloc(nerr + 1, sizeof(*m->errors));
    for (size_t i = 0; i < nerr; i++) {
        const char *sp;
        char *path, *msg;
        if (!next_line(&line, &n, &p, end) || !(sp = memchr(line, ' ', n)))
            goto bad;
        path = unescape(line, (size_t)(sp - line));
        msg = unescape(sp + 1, n - (size_t)(sp + 1 - line));
        if (!path || !msg || !*path) {
            free(path);
            free(msg);
            goto bad;
        }
        m->errors[i].path = path;
        m->errors[i].msg = msg;
        m->nerrors++;
    }
    if (!next_line(&line, &n, &p, end) ||
        !uint_field(&nkept, line, n, "kept", (size_t)(end - p) / 43))
        goto bad;
    m->kept = rc_xcalloc(nkept + 1, sizeof(*m->kept));
    for (size_t i = 0; i < nkept; i++) {
        const char *sp;
        char *path;
        if (!next_line(&line, &n, &p, end) || !(sp = memchr(line, ' ', n)))
            goto bad;
        if (!rc_is_object_id(sp + 1, n - (size_t)(sp + 1 - line)))
            goto bad;
        path = unescape(line, (size_t)(sp - line));
        if (!path || !*path) {
            free(path);
            goto bad;
        }
        m->kept[i].path = path;
        memcpy(m->kept[i].id, sp + 1, 40);
        m->kept[i].id[40] = '\0';
        m->nkept++;
    }
    if (!next_line(&line, &n, &p, end) || n != 3 || memcmp(line, "end", 3) || p != end)
        goto bad;
    return 0;
bad:
    memo_release(m);
    return -1;
}

/* The whole of state file `name` (malloc'd, *len bytes), or NULL when it is not a regular file
 * of this user of at most RC_CACHE_FILE_MAX bytes that reads. */
static char *read_state_file(const struct rc_cache *c, const char *name, size_t *len)
{
    struct rc_buf path = RC_BUF_INIT;
    struct stat st;
    char *text = NULL;
    size_t got = 0;
    int fd;

    rc_buf_printf(&path, NULL, "%s/%s", c->state_dir, name);
    fd = open(path.ptr, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    rc_buf_release(&path);
    if (fd < 0)
        return NULL;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
        st.st_size > (off_t)RC_CACHE_FILE_MAX)
        goto bad;
    text = rc_xmalloc((size_t)st.st_size + 1);
    while (got < (size_t)st.st_size) {
        ssize_t r = read(fd, text + got, (size_t)st.st_size - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            goto bad;
        got += (size_t)r;
    }
    close(fd);
    *len = got;
    return text;
bad:
    close(fd);
    free(text);
    return NULL;
}

static void read_memo_file(struct rc_cache *c)
{
    size_t len = 0;
    char *text = read_state_file(c, MEMO_FILE, &len);

    if (text && parse_memo(&c->memo, text, len) < 0)
        memset(&c->memo, 0, sizeof(c->memo));
    free(text);
}

/* ==== Writing ==== */

static void escape(struct rc_buf *b, const char *s)
{
    const unsigned char *q = (const unsigned char *)s;

    while (*q > ' ' && *q != '%' && *q != 0x7f)
        q++;
    if (!*q) { /* nothing to escape (a path, mostly) */
        rc_buf_add(b, s, (size_t)(q - (const unsigned char *)s), NULL);
        return;
    }
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p <= ' ' || *p == '%' || *p == 0x7f)
            rc_buf_printf(b, NULL, "%%%02X", *p);
        else
            rc_buf_add(b, (const char *)p, 1, NULL);
    }
}

/* Write state file `name` whole: a temporary file renamed into place. One that cannot be
 * written is removed (a stale file must not survive). */
static int write_state_file(const struct rc_cache *c, const char *name, const char *data,
                            size_t len, struct rc_err *err)
{
    struct rc_buf path = RC_BUF_INIT, tmp = RC_BUF_INIT;
    int fd = -1, error = RC_OK;

    rc_buf_printf(&path, NULL, "%s/%s", c->state_dir, name);
    rc_buf_printf(&tmp, NULL, "%s/%s.tmp.%ld", c->state_dir, name, (long)getpid());
    unlink(tmp.ptr);
    fd = open(tmp.ptr, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        error = rc_err_set(err, RC_ERROR, "cannot write '%s': %s", tmp.ptr, strerror(errno));
        goto done;
    }
    if (rc_file_write_all(fd, data, len) < 0) {
        error = rc_err_set(err, RC_ERROR, "cannot write '%s': %s", tmp.ptr, strerror(errno));
        goto done;
    }
    if (close(fd) < 0) {
        fd = -1;
        error = rc_err_set(err, RC_ERROR, "cannot write '%s': %s", tmp.ptr, strerror(errno));
        goto done;
    }
    fd = -1;
    if (rename(tmp.ptr, path.ptr) < 0)
        error = rc_err_set(err, RC_ERROR, "cannot rename '%s': %s", tmp.ptr, strerror(errno));
done:
    if (fd >= 0)
        close(fd);
    if (error < 0) {
        unlink(tmp.ptr);
        unlink(path.ptr);
    }
    rc_buf_release(&path);
    rc_buf_release(&tmp);
    return error;
}

static int write_memo_file(const struct rc_cache *c, struct rc_err *err)
{
    const struct rc_memo *m = &c->memo;
    struct rc_buf text = RC_BUF_INIT;
    int error;

    rc_buf_printf(&text, NULL,
                  "%s\nkey %s\ncommit %s\nsource %s\ndeploy %s\nquiet %d\nerrors %zu\n", MEMO_MAGIC,
                  m->key, m->commit, m->source, m->deploy[0] ? m->deploy : "-", m->quiet ? 1 : 0,
                  m->nerrors);
    for (size_t i = 0; i < m->nerrors; i++) {
        escape(&text, m->errors[i].path);
        rc_buf_add(&text, " ", 1, NULL);
        escape(&text, m->errors[i].msg);
        rc_buf_add(&text, "\n", 1, NULL);
    }
    rc_buf_printf(&text, NULL, "kept %zu\n", m->nkept);
    for (size_t i = 0; i < m->nkept; i++) {
        escape(&text, m->kept[i].path);
        rc_buf_printf(&text, NULL, " %s\n", m->kept[i].id);
    }
    rc_buf_add(&text, "end\n", 4, NULL);
    error = write_state_file(c, MEMO_FILE, text.ptr, text.len, err);
    rc_buf_release(&text);
    return error;
}

/* ==== The pass image ==== */

#define IMAGE_MAGIC "rightplace-pass-image 1\n"

static char *image_header(size_t *len)
{
    return rc_version_state_header(len, IMAGE_MAGIC, "1");
}

void rc_cache_image_format(struct rc_buf *text, const struct rc_image *im)
{
    size_t hlen;
    char *hdr = image_header(&hlen);
    size_t start = text->len;

    rc_buf_add(text, hdr, hlen, NULL);
    free(hdr);
    rc_buf_printf(text, NULL,
                  "key %s\ncommit %s\nsource %s\ndeploy %s\nstates %zu %zu %zu\nwarnings %zu\n",
                  im->key, im->commit, im->source, im->deploy, im->states[0], im->states[1],
                  im->states[2], im->nwarnings);
    for (size_t i = 0; i < im->nlisted; i++) {
        escape(text, im->listed[i]);
        rc_buf_add(text, "\n", 1, NULL);
    }
    rc_buf_printf(text, NULL, "clusters %zu\n", im->nclusters);
    for (size_t i = 0; i < im->nclusters; i++) {
        escape(text, im->clusters[i].name);
        rc_buf_printf(text, NULL, " %zu\n", im->clusters[i].file);
    }
    rc_buf_printf(text, NULL, "files %zu\n", im->nfiles);
    for (size_t i = 0; i < im->nfiles; i++) { /* without printf: 10,000 files and more */
        const struct rc_image_file *f = &im->files[i];
        char line[64];
        size_t at = 40;
        memcpy(line, f->id, 40);
        line[at++] = ' ';
        line[at++] = "0123456789abcdef"[f->flags & 15];
        line[at++] = ' ';
        if (!f->nclusters)
            line[at++] = '-';
        rc_buf_add(text, line, at, NULL);
        for (size_t k = 0; k < f->nclusters; k++) {
            char d[12];
            size_t nd = sizeof(d);
            uint32_t v = f->clusters[k];
            do
                d[--nd] = (char)('0' + v % 10);
            while ((v /= 10) != 0);
            if (k)
                d[--nd] = ',';
            rc_buf_add(text, d + nd, sizeof(d) - nd, NULL);
        }
        rc_buf_add(text, " ", 1, NULL);
        escape(text, f->path);
        rc_buf_add(text, "\n", 1, NULL);
    }
    rc_buf_printf(text, NULL, "end %016llx\n",
                  (unsigned long long)rc_xxh64(text->ptr + start, text->len - start));
}

int rc_cache_image_write(const struct rc_cache *c, const struct rc_image *im, struct rc_err *err)
{
    struct rc_buf text = RC_BUF_INIT, path = RC_BUF_INIT;
    int error;

    if (!c->state_dir)
        return RC_OK;
    if (!im) {
        rc_buf_printf(&path, NULL, "%s/%s", c->state_dir, RC_IMAGE_FILE);
        unlink(path.ptr);
        rc_buf_release(&path);
        return RC_OK;
    }
    rc_cache_image_format(&text, im);
    error = write_state_file(c, RC_IMAGE_FILE, text.ptr, text.len, err);
    rc_buf_release(&text);
    return error;
}

/* "states <placed> <pending> <unplaced>", each a decimal of at most 10 digits */
static int states_field(size_t out[3], const char *line, size_t n)
{
    const char *p = line + 7, *end = line + n;

    if (n < 7 || memcmp(line, "states ", 7))
        return 0;
    for (int k = 0; k < 3; k++) {
        const char *d = p;
        size_t v = 0;
        while (p < end && *p >= '0' && *p <= '9' && p - d < 10)
            v = v * 10 + (size_t)(*p++ - '0');
        if (p == d || (p - d > 1 && *d == '0') || (k < 2 ? p >= end || *p != ' ' : p != end))
            return 0;
        out[k] = v;
        p++;
    }
    return 1;
}

static int hex64_field(uint64_t *out, const char *s, size_t n)
{
    uint64_t v = 0;

    if (n != 16)
        return 0;
    for (size_t i = 0; i < n; i++) {
        int h = hexval(s[i]);
        if (h < 0 || (s[i] >= 'A' && s[i] <= 'F'))
            return 0;
        v = v << 4 | (uint64_t)h;
    }
    *out = v;
    return 1;
}

/* "<id> <flags> <clusters> <path>" of a file of the image */
static int image_file(struct rc_image_file *f, const char *line, size_t n, size_t nclusters,
                      struct rc_arena *a)
{
    const char *p = line, *end = line + n, *sp;
    unsigned flags = 0;
    char *path;

    if (n < 41 || !rc_is_object_id(p, 40) || p[40] != ' ')
        return 0;
    memcpy(f->id, p, 40);
    f->id[40] = '\0';
    p += 41;
    if (p >= end || !(sp = memchr(p, ' ', (size_t)(end - p))) || sp - p != 1 || hexval(*p) < 0 ||
        (unsigned)hexval(*p) > (RC_IMAGE_CONFIG | RC_IMAGE_CLUSTER | RC_IMAGE_OTHER))
        return 0;
    flags = (unsigned)hexval(*p);
    p = sp + 1;
    if (p >= end || !(sp = memchr(p, ' ', (size_t)(end - p))))
        return 0;
    f->flags = flags;
    f->nclusters = 0;
    f->clusters = NULL;
    if (!(sp - p == 1 && *p == '-')) {
        size_t cnt = 1;
        for (const char *q = p; q < sp; q++)
            cnt += *q == ',';
        if (cnt > nclusters)
            return 0;
        f->clusters = rc_arena_calloc(a, cnt, sizeof(*f->clusters));
        for (const char *q = p; q <= sp; q++) {
            uint32_t v = 0;
            const char *d = q;
            while (q < sp && *q >= '0' && *q <= '9' && q - d < 9)
                v = v * 10 + (uint32_t)(*q++ - '0');
            if (q == d || (q < sp && *q != ',') || v >= nclusters ||
                (f->nclusters && v <= f->clusters[f->nclusters - 1]))
                return 0;
            f->clusters[f->nclusters++] = v;
        }
    }
    p = sp + 1;
    path = unescape(p, (size_t)(end - p));
    if (!path || !*path) {
        free(path);
        return 0;
    }
    f->path = rc_arena_strdup(a, path);
    free(path);
    return 1;
}

static int image_parse(struct rc_image *im, const char *text, size_t len, struct rc_arena *a)
{
    const char *p = text, *end = text + len, *line;
    size_t n, hlen, nfiles = 0;
    char *hdr = image_header(&hlen);
    uint64_t sum;
    int same = len >= hlen && !memcmp(text, hdr, hlen);

    free(hdr);
    memset(im, 0, sizeof(*im));
    /* the checksum covers everything before its line, which is the last */
    if (!same || len < hlen + 21 || text[len - 1] != '\n' || memcmp(end - 22, "\nend ", 5) ||
        !hex64_field(&sum, end - 17, 16) || rc_xxh64(text, len - 21) != sum)
        return 0;
    end -= 21;
    p += hlen;
    if (!next_line(&line, &n, &p, end) || !hex_field(im->key, line, n, "key", 0) ||
        !next_line(&line, &n, &p, end) || !hex_field(im->commit, line, n, "commit", 0) ||
        !next_line(&line, &n, &p, end) || !hex_field(im->source, line, n, "source", 0) ||
        !next_line(&line, &n, &p, end) || !hex_field(im->deploy, line, n, "deploy", 0) ||
        !next_line(&line, &n, &p, end) || !states_field(im->states, line, n) ||
        !next_line(&line, &n, &p, end) ||
        !uint_field(&im->nwarnings, line, n, "warnings", (size_t)-1 / 2))
        return 0;
    im->nlisted = im->nwarnings < RC_IMAGE_WARNINGS ? im->nwarnings : RC_IMAGE_WARNINGS;
    im->listed = rc_arena_calloc(a, im->nlisted + 1, sizeof(*im->listed));
    for (size_t i = 0; i < im->nlisted; i++) {
        char *w;
        if (!next_line(&line, &n, &p, end) || !(w = unescape(line, n)))
            return 0;
        im->listed[i] = rc_arena_strdup(a, w);
        free(w);
    }
    /* each cluster is a line of at least 4 bytes, each file of at least 46 */
    if (!next_line(&line, &n, &p, end) ||
        !uint_field(&im->nclusters, line, n, "clusters", (size_t)(end - p) / 4))
        return 0;
    im->clusters = rc_arena_calloc(a, im->nclusters + 1, sizeof(*im->clusters));
    for (size_t i = 0; i < im->nclusters; i++) {
        const char *sp;
        char *name;
        size_t file = 0;
        if (!next_line(&line, &n, &p, end) || !(sp = memchr(line, ' ', n)))
            return 0;
        name = unescape(line, (size_t)(sp - line));
        if (!name || !*name || (i && strcmp(im->clusters[i - 1].name, name) >= 0)) {
            free(name);
            return 0;
        }
        im->clusters[i].name = rc_arena_strdup(a, name);
        free(name);
        for (const char *q = sp + 1; q < line + n; q++) {
            if (*q < '0' || *q > '9' || q - sp > 10)
                return 0;
            file = file * 10 + (size_t)(*q - '0');
        }
        if (sp + 1 == line + n)
            return 0;
        im->clusters[i].file = file;
    }
    if (!next_line(&line, &n, &p, end) ||
        !uint_field(&nfiles, line, n, "files", (size_t)(end - p) / 46))
        return 0;
    im->files = rc_arena_calloc(a, nfiles + 1, sizeof(*im->files));
    for (size_t i = 0; i < nfiles; i++) {
        if (!next_line(&line, &n, &p, end) ||
            !image_file(&im->files[i], line, n, im->nclusters, a) ||
            (i && strcmp(im->files[i - 1].path, im->files[i].path) >= 0))
            return 0;
        im->nfiles++;
    }
    for (size_t i = 0; i < im->nclusters; i++) {
        if (im->clusters[i].file >= im->nfiles ||
            !(im->files[im->clusters[i].file].flags & RC_IMAGE_CLUSTER))
            return 0;
    }
    return p == end;
}

int rc_cache_image_parse(struct rc_image *out, const char *text, size_t len, struct rc_arena *a)
{
    int ok = image_parse(out, text, len, a);

    if (!ok)
        memset(out, 0, sizeof(*out));
    return ok;
}

int rc_cache_image_read(struct rc_image *out, const struct rc_cache *c, struct rc_arena *a)
{
    size_t len = 0;
    char *text;
    int ok;

    memset(out, 0, sizeof(*out));
    if (!c->state_dir || !(text = read_state_file(c, RC_IMAGE_FILE, &len)))
        return 0;
    ok = image_parse(out, text, len, a);
    free(text);
    if (!ok)
        memset(out, 0, sizeof(*out));
    return ok;
}

/* ==== What a killed pass left ==== */

/* "<file>.tmp" or "<file>.tmp.<digits>" for a file of the state directory that is written
 * to a temporary file and renamed into place. */
static int state_tmp(const char *name)
{
    static const char *const files[] = {MEMO_FILE,      RC_IMAGE_FILE,        RC_PCACHE_FILE,
                                        RC_RCACHE_FILE, RC_CACHE_OUTAGE_FILE, RC_CACHE_APPLY_FILE};

    for (size_t i = 0; i < sizeof(files) / sizeof(*files); i++) {
        size_t n = strlen(files[i]);
        const char *t = name + n;
        if (strncmp(name, files[i], n) || strncmp(t, ".tmp", 4))
            continue;
        t += 4;
        if (!*t)
            return 1;
        if (*t++ != '.' || !*t)
            return 0;
        while (*t >= '0' && *t <= '9')
            t++;
        return !*t;
    }
    return 0;
}

size_t rc_cache_sweep(const char *state_dir, uint64_t *bytes)
{
    DIR *d = opendir(state_dir);
    struct dirent *e;
    size_t n = 0;

    *bytes = 0;
    if (!d)
        return 0;
    while ((e = readdir(d)) != NULL) {
        struct stat st;
        if (!state_tmp(e->d_name) || fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
            !S_ISREG(st.st_mode) || unlinkat(dirfd(d), e->d_name, 0) < 0)
            continue;
        n++;
        *bytes += (uint64_t)st.st_size;
    }
    closedir(d);
    return n;
}

/* ==== The API ==== */

int rc_cache_new(struct rc_cache **out, const char *state_dir, struct rc_err *err)
{
    struct rc_cache *c = rc_xcalloc(1, sizeof(*c));

    (void)err;
    rd_cache_new(&c->parsed);
    rd_record_memo_new(&c->writer);
    if (state_dir) {
        struct rc_buf path = RC_BUF_INIT;
        c->state_dir = rc_xstrdup(state_dir);
        read_memo_file(c);
        rc_buf_printf(&path, NULL, "%s/%s", state_dir, RC_PCACHE_FILE);
        rc_pcache_new(&c->pfile, path.ptr);
        rc_buf_reset(&path);
        rc_buf_printf(&path, NULL, "%s/%s", state_dir, RC_RCACHE_FILE);
        rc_rcache_new(&c->rfile, path.ptr);
        rc_buf_release(&path);
    }
    *out = c;
    return RC_OK;
}

void rc_cache_free(struct rc_cache *c)
{
    if (!c)
        return;
    memo_release(&c->memo);
    rd_cache_free(c->parsed);
    rc_arena_release(&c->rec.arena);
    rc_arena_release(&c->older.arena);
    rd_record_memo_free(c->writer);
    rc_pcache_free(c->pfile);
    rc_rcache_free(c->rfile);
    free(c->reported);
    rc_apply_memory_free(c->applied);
    rc_watch_set_free(c->watches);
    free(c->state_dir);
    free(c);
}

struct rc_watch_set *rc_cache_watches(struct rc_cache *c)
{
    if (c && !c->watches)
        c->watches = rc_watch_set_new();
    return c ? c->watches : NULL;
}

struct rc_apply_memory *rc_cache_apply_memory(struct rc_cache *c)
{
    if (c && !c->applied) {
        rc_apply_memory_new(&c->applied);
        if (c->state_dir) {
            struct rc_buf path = RC_BUF_INIT;
            rc_buf_printf(&path, NULL, "%s/%s", c->state_dir, RC_CACHE_APPLY_FILE);
            rc_apply_memory_file(c->applied, path.ptr);
            rc_buf_release(&path);
        }
    }
    return c ? c->applied : NULL;
}

const uint64_t *rc_cache_reported(const struct rc_cache *c, size_t *n)
{
    *n = c ? c->nreported : 0;
    return c ? c->reported : NULL;
}

void rc_cache_set_reported(struct rc_cache *c, const uint64_t *d, size_t n)
{
    uint64_t *v = rc_xcalloc(n + 1, sizeof(*v));

    if (n)
        memcpy(v, d, n * sizeof(*v));
    free(c->reported);
    c->reported = v;
    c->nreported = n;
}

struct rc_pcache *rc_cache_parse_file(struct rc_cache *c)
{
    return c ? c->pfile : NULL;
}

void rc_cache_no_parse_file(struct rc_cache *c)
{
    if (!c)
        return;
    rc_pcache_free(c->pfile);
    c->pfile = NULL;
    rc_rcache_free(c->rfile);
    c->rfile = NULL;
}

struct rc_rcache *rc_cache_record_file(struct rc_cache *c)
{
    return c ? c->rfile : NULL;
}

struct rd_cache *rc_cache_parsed(struct rc_cache *c)
{
    return c ? c->parsed : NULL;
}

const struct rc_memo *rc_cache_memo(const struct rc_cache *c)
{
    return &c->memo;
}

int rc_cache_set_memo(struct rc_cache *c, const struct rc_memo *m, struct rc_err *err)
{
    struct rc_memo copy = *m;

    copy.errors = rc_xcalloc(m->nerrors + 1, sizeof(*copy.errors));
    for (size_t i = 0; i < m->nerrors; i++) {
        copy.errors[i].path = rc_xstrdup(m->errors[i].path);
        copy.errors[i].msg = rc_xstrdup(m->errors[i].msg);
    }
    copy.kept = rc_xcalloc(m->nkept + 1, sizeof(*copy.kept));
    for (size_t i = 0; i < m->nkept; i++) {
        copy.kept[i].path = rc_xstrdup(m->kept[i].path);
        memcpy(copy.kept[i].id, m->kept[i].id, 41);
    }
    memo_release(&c->memo);
    c->memo = copy;
    return c->state_dir ? write_memo_file(c, err) : RC_OK;
}

struct rd_record_memo *rc_cache_record_memo(struct rc_cache *c)
{
    return c ? c->writer : NULL;
}

const char *rc_cache_memo_blob(const struct rc_cache *c)
{
    return c ? c->writer_blob : "";
}

void rc_cache_set_memo_blob(struct rc_cache *c, const char *blob)
{
    if (c)
        snprintf(c->writer_blob, sizeof(c->writer_blob), "%s", blob ? blob : "");
}

const struct rd_record *rc_cache_record(const struct rc_cache *c, const char *blob)
{
    if (!c || !blob || !blob[0] || strcmp(c->rec.blob, blob))
        return NULL;
    return &c->rec.rec;
}

/* The record before the current one goes (a result of the pass before the last may point
 * into it no longer): its arena, or, when the current record took that arena over, the
 * buffers of its own the current one does not share (its arrays and its text). */
static void retire_older(struct rc_cache *c)
{
    struct kept_record *o = &c->older;

    if (o->arena.head) {
        rc_arena_release(&o->arena);
    } else if (o->blob[0]) {
        struct rc_arena gone = RC_ARENA_INIT;
        rc_arena_pass_on(&c->rec.arena, o->rec.units, &gone);
        rc_arena_pass_on(&c->rec.arena, o->rec.tallies, &gone);
        rc_arena_pass_on(&c->rec.arena, o->text, &gone);
        rc_arena_release(&gone);
    }
    memset(o, 0, sizeof(*o));
}

void rc_cache_set_record(struct rc_cache *c, const char *blob, const struct rd_record *r,
                         const char *text, size_t len)
{
    struct rc_arena fresh = RC_ARENA_INIT;
    struct rd_record copy;

    if (!c || !blob || strlen(blob) != 40)
        return;
    rd_record_copy(&copy, r, &fresh);
    retire_older(c);
    c->older = c->rec;
    memset(&c->rec, 0, sizeof(c->rec));
    memcpy(c->rec.blob, blob, 41);
    c->rec.rec = copy;
    c->rec.text = text ? rc_arena_strndup(&fresh, text, len) : NULL;
    c->rec.len = text ? len : 0;
    c->rec.arena = fresh;
}

void rc_cache_take_record(struct rc_cache *c, const char *blob, const struct rd_record *r,
                          struct rc_arena *arena, const char *text, size_t len)
{
    rc_cache_take_record_over(c, blob, r, arena, text, len, (size_t)-1);
}

const struct rd_record *rc_cache_record_to_share(const struct rc_cache *c, const char *blob)
{
    const struct rd_record *r = rc_cache_record(c, blob);

    if (!r || c->rec.chain + 1 >= CHAIN_MAX || c->rec.dead > r->nunits / 4)
        return NULL;
    return r;
}

void rc_cache_take_record_over(struct rc_cache *c, const char *blob, const struct rd_record *r,
                               struct rc_arena *arena, const char *text, size_t len, size_t dropped)
{
    int over = dropped != (size_t)-1;
    unsigned chain = 0;
    size_t dead = 0;

    if (!c || !blob || strlen(blob) != 40) {
        rc_arena_release(arena);
        return;
    }
    retire_older(c);
    if (over) { /* r points into the current record: its memory goes with r's */
        chain = c->rec.chain + 1;
        dead = c->rec.dead + dropped;
        rc_arena_adopt(arena, &c->rec.arena);
    }
    c->older = c->rec;
    memset(&c->rec, 0, sizeof(c->rec));
    memcpy(c->rec.blob, blob, 41);
    c->rec.rec = *r;
    c->rec.text = (char *)text;
    c->rec.len = text ? len : 0;
    c->rec.arena = *arena;
    c->rec.chain = chain;
    c->rec.dead = dead;
    memset(arena, 0, sizeof(*arena));
}

const char *rc_cache_record_text(const struct rc_cache *c, const char *blob, size_t *len)
{
    if (!rc_cache_record(c, blob) || !c->rec.text)
        return NULL;
    *len = c->rec.len;
    return c->rec.text;
}

void rc_cache_forget(struct rc_cache *c)
{
    memo_release(&c->memo);
    if (c->state_dir) {
        struct rc_buf path = RC_BUF_INIT;
        rc_buf_printf(&path, NULL, "%s/%s", c->state_dir, MEMO_FILE);
        unlink(path.ptr);
        rc_buf_release(&path);
    }
}
