/*
 * rd_record.c - placements.yaml, the decision record: written from the engine's result,
 * read back as the previous placements of the next pass (and of replay).
 *
 * Format (docs/formats.md "placements.yaml"), with our extensions marked +:
 *
 *   apiVersion: rightplace.dev/v1alpha1
 *   kind: PlacementRecord
 *   source: <source commit id>
 *   renderDigest: <16 hex>       # +  rd_render_digest: what rendered files depend on
 *   units:                       # sorted by unit id; removed units are not written
 *   - unit: <id>
 *     policy: <name>             # absent when no policy governs the unit
 *     policyDigest: <digest>     # +  for stickiness: a changed policy may move the unit
 *     objects: [<key>, ...]
 *     state: placed | pending | unplaced
 *     clusters: [<name>, ...]
 *     shares: [{cluster, percent}]   # +  Divide: each target's share
 *     reason: <one line>
 *     cause: <one line>          # +  moves: why
 *     verdicts:                  # the chosen clusters and the preferred ones passed over,
 *     - {cluster, verdict, detail, nodesAdded +}   # a bounded few (rd_output.h)
 *     verdictsOmitted: <n>       # +  verdicts not listed (absent: none)
 *     verdictCounts: {<verdict>: <n>}  # +  every verdict by kind, when some are omitted
 *   warnings: [<line>, ...]      # +
 *   errors: [{file, message}]    # +  source files not loaded this pass
 *
 * Beyond the inline size (rd_record_shards_for) the record is in shards (rd_output.h): the
 * header above with apiVersion v1alpha2, `shards: <n>` and `shardFiles: [{file, blob,
 * units}]` in place of `units`, and the units in placements/<k>.yaml, each a document of kind
 * PlacementRecordShard holding `units:` as above (write_sharded; read_shards).
 *
 * The reader ignores what it does not know, so later versions can add fields.
 */
#include "rc_sort.h"
#include "rd_output.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pl_engine.h"
#include "rc_arena.h"
#include "rc_bytes.h"
#include "rc_hash.h"
#include "rc_mem.h"
#include "rc_thread.h"
#include "rd_jarena.h"
#include "rd_output_internal.h"
#include "rd_pack.h"
#include "rd_source.h"
#include "rd_yaml.h"

#define RECORD_FILE "placements.yaml"

/* ==== Writing ==== */

/* Which verdicts the entry lists (keep[i]), and the tally of the rest. A decision whose
 * verdicts the engine bounded (pl_options.verdicts_chosen, set to the same bounds) already
 * lists exactly those: all kept, with its own tally. */
static void select_verdicts(unsigned char *keep, struct rd_verdict_tally *t,
                            const struct pl_decision *d)
{
    if (d->verdicts_omitted) {
        memset(keep, 1, d->nverdicts);
        t->omitted = d->verdicts_omitted;
        memcpy(t->count, d->verdict_counts, sizeof(t->count));
        return;
    }
    t->omitted =
        pl_verdicts_select(keep, t->count, d, RD_RECORD_CHOSEN_VERDICTS, RD_RECORD_PASSED_VERDICTS);
}

/* One unit's entry as written: the decision, which of its verdicts are listed and the tally
 * written. entry_json writes it and entry_key names it; both read only this. */
struct entry {
    const struct pl_decision *d;
    const unsigned char *keep; /* verdicts listed (NULL: all) */
    struct rd_verdict_tally tally;
    int divide; /* placed with a share that is not 100%: shares are written */
};

/* keep: d->nverdicts bytes of room. kept: the entry's recorded tally (NULL: none). */
static void entry_init(struct entry *e, const struct pl_decision *d,
                       const struct rd_verdict_tally *kept, unsigned char *keep)
{
    memset(e, 0, sizeof(*e));
    e->d = d;
    for (size_t i = 0; d->state == PL_STATE_PLACED && i < d->ntargets; i++) {
        if (d->targets[i].percent != 100)
            e->divide = 1;
    }
    select_verdicts(keep, &e->tally, d);
    e->keep = keep;
    if (kept && kept->omitted) {
        /* the entry as recorded: its list is already the bounded one */
        e->tally = *kept;
        e->keep = NULL;
    }
}

static const char *object_key(const struct pl_decision *d, size_t i)
{
    return d->object_keys ? d->object_keys[i] : d->objects[i] ? d->objects[i]->key : NULL;
}

static cJSON *entry_json(const struct entry *e)
{
    const struct pl_decision *d = e->d;
    cJSON *u = cJSON_CreateObject(), *arr;

    rd_out_add_str(u, "unit", d->unit);
    if (d->policy)
        rd_out_add_str(u, "policy", d->policy);
    if (d->policy_digest)
        rd_out_add_str(u, "policyDigest", d->policy_digest);
    arr = rd_out_add(u, "objects", cJSON_CreateArray());
    for (size_t i = 0; i < d->nobjects; i++) {
        const char *key = object_key(d, i);
        if (key)
            rd_out_push(arr, rd_out_str(key));
    }
    rd_out_add_str(u, "state", pl_state_name(d->state));
    arr = rd_out_add(u, "clusters", cJSON_CreateArray());
    for (size_t i = 0; d->state == PL_STATE_PLACED && i < d->ntargets; i++)
        rd_out_push(arr, rd_out_str(d->targets[i].cluster));
    if (e->divide) {
        arr = rd_out_add(u, "shares", cJSON_CreateArray());
        for (size_t i = 0; i < d->ntargets; i++) {
            cJSON *s = rd_out_push(arr, cJSON_CreateObject());
            rd_out_add_str(s, "cluster", d->targets[i].cluster);
            rd_out_add_int(s, "percent", d->targets[i].percent);
        }
    }
    if (d->reason)
        rd_out_add_str(u, "reason", d->reason);
    if (d->cause)
        rd_out_add_str(u, "cause", d->cause);
    arr = rd_out_add(u, "verdicts", cJSON_CreateArray());
    for (size_t i = 0; i < d->nverdicts; i++) {
        const struct pl_verdict *v = &d->verdicts[i];
        cJSON *j;
        if (e->keep && !e->keep[i])
            continue;
        j = rd_out_push(arr, cJSON_CreateObject());
        rd_out_add_str(j, "cluster", v->cluster);
        rd_out_add_str(j, "verdict", pl_verdict_name(v->kind));
        rd_out_add_str(j, "detail", v->detail ? v->detail : "");
        if (v->nodes_added > 0)
            rd_out_add_int(j, "nodesAdded", v->nodes_added);
    }
    if (e->tally.omitted) {
        cJSON *counts;
        rd_out_add_int(u, "verdictsOmitted", (int64_t)e->tally.omitted);
        counts = rd_out_add(u, "verdictCounts", cJSON_CreateObject());
        for (int k = 0; k < 4; k++) {
            if (e->tally.count[k])
                rd_out_add_int(counts, pl_verdict_name((enum pl_verdict_kind)k),
                               (int64_t)e->tally.count[k]);
        }
    }
    return u;
}

/* ==== The writer's memo ==== */

/* key: everything entry_json reads, each field tagged and length-prefixed, so that equal keys
 * mean equal entries; kd: two XXH64 of the key (128 bits), what the record cache file keeps
 * of it, held only where the key is not (a kept key's digest is made when the memo is
 * exported); chunk: the entry's text ("- unit: ...\n  ..."). key and chunk are NULL in a
 * memo that keeps digests alone (rd_record_memo_keep_bytes 0, rd_record_memo_import). */
struct memo_unit {
    char *unit;
    char *key;
    size_t keylen;
    uint64_t kd[2];
    char *chunk;
    size_t len;
    int same; /* the last write took the entry as the memo had it (rd_record_of_result_over) */
};

struct memo_warning {
    char *text;
    char *chunk;
    size_t len;
};

struct memo_shard {
    char id[41];
    size_t nunits;
};

/* An empty shard's id in the exported memo */
#define NO_SHARD_ID "----------------------------------------"

static int shard_count_ok(size_t n);

struct rd_record_memo {
    size_t nunits; /* sorted by unit (strcmp) */
    struct memo_unit *units;
    size_t nwarnings; /* in the order last written */
    struct memo_warning *warnings;
    /* the digests of the warnings (rd_record_warning_digest) and file errors
     * (rd_record_file_error_digest) the last record written with the memo listed, sorted: kept in
     * every mode, and by the record cache file, so that the next process knows what was reported
     * (rd_record_memo_reported_digests) */
    size_t nwdig;
    uint64_t *wdig;
    struct rd_record_stats last;
    /* the last record written whole with this memo: XXH64 of its bytes before the units and
     * the digest of what those after them are written from (tail_digest; have_last 0: none,
     * or it failed) */
    int have_last;
    uint64_t last_head, last_tail;
    int digests_only; /* rd_record_memo_keep_bytes(m, 0) */
    /* the shards of the last record written with the memo, by index (an empty one: nunits 0,
     * no file); nshards 0: it was one file */
    size_t nshards;
    struct memo_shard *shards;
};

void rd_record_memo_new(struct rd_record_memo **out)
{
    *out = rc_xcalloc(1, sizeof(**out));
}

void rd_record_memo_keep_bytes(struct rd_record_memo *m, int keep)
{
    m->digests_only = !keep;
}

#define KEY_SEED_2 UINT64_C(0x9E3779B97F4A7C15)

static void key_digest(uint64_t kd[2], const void *key, size_t len)
{
    kd[0] = rc_xxh64_seeded(key, len, 0);
    kd[1] = rc_xxh64_seeded(key, len, KEY_SEED_2);
}

/* Was the memo's entry written from this key? By the key itself when the memo kept it, else
 * by its digest. */
static int memo_matches(const struct memo_unit *had, const struct rc_buf *key)
{
    uint64_t kd[2];

    if (had->key)
        return had->keylen == key->len && !memcmp(had->key, key->ptr, key->len);
    key_digest(kd, key->ptr, key->len);
    return had->kd[0] == kd[0] && had->kd[1] == kd[1];
}

static void memo_units_free(struct memo_unit *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(v[i].unit);
        free(v[i].key);
        free(v[i].chunk);
    }
    free(v);
}

static void memo_warnings_free(struct memo_warning *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(v[i].text);
        free(v[i].chunk);
    }
    free(v);
}

void rd_record_memo_free(struct rd_record_memo *m)
{
    if (!m)
        return;
    memo_units_free(m->units, m->nunits);
    memo_warnings_free(m->warnings, m->nwarnings);
    free(m->wdig);
    free(m->shards);
    free(m);
}

static void memo_set_shards(struct rd_record_memo *m, struct memo_shard *v, size_t n)
{
    free(m->shards);
    m->shards = v;
    m->nshards = n;
}

struct rd_record_stats rd_record_memo_stats(const struct rd_record_memo *m)
{
    struct rd_record_stats none = {0, 0, 0, 0};

    return m ? m->last : none;
}

/* The memo for the record cache file (rc_rcache.h): the digests of the bytes before and
 * after the units, then each unit's name and key digest, in the memo's order, then the
 * record's shards, then the digests of the warnings and file errors the record listed,
 * sorted; all numbers little-endian:
 *   u8 have_last, u64 last_head, u64 last_tail, u64 nunits,
 *   nunits x (u32 name length, name, u64 kd[0], u64 kd[1]),
 *   u64 nshards, nshards x (u64 units, 40 hex digits of blob id, or 40 '-' for none),
 *   u64 nwarnings, nwarnings x u64 digest
 * The warnings' text and the entries' bytes are not kept: a memo read back writes them
 * again. */
/* unit i of m as exported: u32 name length, name, u64 kd[0], u64 kd[1] */
static void memo_export_unit(const struct rd_record_memo *m, size_t i, struct rc_buf *out)
{
    const struct memo_unit *u = &m->units[i];
    unsigned char n[4], kd[16];
    size_t len = strlen(u->unit);
    uint64_t d[2] = {u->kd[0], u->kd[1]};

    if (u->key) /* the digest of a key kept whole is made here, not every pass */
        key_digest(d, u->key, u->keylen);
    rc_le32_put(n, (uint32_t)len);
    rc_le64_put(kd, d[0]);
    rc_le64_put(kd + 8, d[1]);
    rc_buf_add(out, n, 4, NULL);
    rc_buf_add(out, u->unit, len, NULL);
    rc_buf_add(out, kd, 16, NULL);
}

/* the export, with its units or (units 0) as if it had none */
static void memo_export(const struct rd_record_memo *m, struct rc_buf *out, int units)
{
    unsigned char fixed[25];

    fixed[0] = (unsigned char)(m->have_last != 0);
    rc_le64_put(fixed + 1, m->last_head);
    rc_le64_put(fixed + 9, m->last_tail);
    rc_le64_put(fixed + 17, units ? m->nunits : 0);
    rc_buf_add(out, fixed, sizeof(fixed), NULL);
    for (size_t i = 0; units && i < m->nunits; i++)
        memo_export_unit(m, i, out);
    rc_le64_put(fixed, m->nshards);
    rc_buf_add(out, fixed, 8, NULL);
    for (size_t i = 0; i < m->nshards; i++) {
        rc_le64_put(fixed, m->shards[i].nunits);
        rc_buf_add(out, fixed, 8, NULL);
        rc_buf_add(out, m->shards[i].nunits ? m->shards[i].id : NO_SHARD_ID, 40, NULL);
    }
    rc_le64_put(fixed, m->nwdig);
    rc_buf_add(out, fixed, 8, NULL);
    for (size_t i = 0; i < m->nwdig; i++) {
        rc_le64_put(fixed, m->wdig[i]);
        rc_buf_add(out, fixed, 8, NULL);
    }
}

void rd_record_memo_export(const struct rd_record_memo *m, struct rc_buf *out)
{
    memo_export(m, out, 1);
}

size_t rd_record_memo_shards(const struct rd_record_memo *m)
{
    return m ? m->nshards : 0;
}

const char *rd_record_memo_shard_id(const struct rd_record_memo *m, size_t k)
{
    return m && k < m->nshards && m->shards[k].nunits ? m->shards[k].id : "";
}

int rd_record_memo_import(struct rd_record_memo *m, const void *data, size_t len)
{
    const unsigned char *p = data, *end = p + len;
    struct memo_unit *v = NULL;
    struct memo_shard *sh = NULL;
    uint64_t *wd = NULL;
    size_t n, nwd, nsh;

    if (len < 25 || p[0] > 1)
        return RC_EINVALID;
    n = (size_t)rc_le64_get(p + 17);
    if (n > (len - 25) / 21) /* each unit takes at least 21 bytes */
        return RC_EINVALID;
    v = rc_xcalloc(n + 1, sizeof(*v));
    p += 25;
    for (size_t i = 0; i < n; i++) {
        size_t ulen;
        if (end - p < 4)
            goto bad;
        ulen = rc_le32_get(p);
        if ((size_t)(end - p) - 4 < ulen || (size_t)(end - p) - 4 - ulen < 16 ||
            memchr(p + 4, '\0', ulen))
            goto bad;
        v[i].unit = rc_xstrndup((const char *)p + 4, ulen);
        v[i].kd[0] = rc_le64_get(p + 4 + ulen);
        v[i].kd[1] = rc_le64_get(p + 12 + ulen);
        p += 20 + ulen;
        if (i && strcmp(v[i - 1].unit, v[i].unit) >= 0)
            goto bad; /* searched by name: sorted, each once */
    }
    /* the shards: a power of two of them, or none; each unit counted in its own (the writer
     * keeps a shard whose units all match, so the counts must be the units') */
    if (end - p < 8)
        goto bad;
    nsh = (size_t)rc_le64_get(p);
    p += 8;
    if ((nsh && !shard_count_ok(nsh)) || nsh > (size_t)(end - p) / 48)
        goto bad;
    sh = rc_xcalloc(nsh + 1, sizeof(*sh));
    for (size_t i = 0; i < nsh; i++, p += 48) {
        sh[i].nunits = (size_t)rc_le64_get(p);
        memcpy(sh[i].id, p + 8, 40);
        if (sh[i].nunits ? !rc_is_object_id(sh[i].id, 40) : memcmp(sh[i].id, NO_SHARD_ID, 40))
            goto bad;
        sh[i].id[sh[i].nunits ? 40 : 0] = '\0';
    }
    if (nsh) { /* each shard's count is its units' */
        size_t *cnt = rc_xcalloc(nsh, sizeof(*cnt));
        int ok = 1;
        for (size_t i = 0; i < n; i++)
            cnt[rd_record_shard_of(v[i].unit, nsh)]++;
        for (size_t i = 0; i < nsh; i++)
            ok = ok && cnt[i] == sh[i].nunits;
        free(cnt);
        if (!ok)
            goto bad;
    }
    if (end - p < 8)
        goto bad;
    nwd = (size_t)rc_le64_get(p);
    p += 8;
    if (nwd != (size_t)(end - p) / 8 || (size_t)(end - p) % 8)
        goto bad;
    wd = rc_xcalloc(nwd + 1, sizeof(*wd));
    for (size_t i = 0; i < nwd; i++, p += 8) {
        wd[i] = rc_le64_get(p);
        if (i && wd[i - 1] > wd[i])
            goto bad; /* searched by rd_record_warning_listed: sorted */
    }
    p = data;
    memo_units_free(m->units, m->nunits);
    memo_warnings_free(m->warnings, m->nwarnings);
    free(m->wdig);
    m->units = v;
    m->nunits = n;
    m->warnings = NULL;
    m->nwarnings = 0;
    m->wdig = wd;
    m->nwdig = nwd;
    memo_set_shards(m, sh, nsh);
    m->have_last = p[0];
    m->last_head = rc_le64_get(p + 1);
    m->last_tail = rc_le64_get(p + 9);
    memset(&m->last, 0, sizeof(m->last));
    return RC_OK;
bad:
    memo_units_free(v, n);
    free(sh);
    free(wd);
    return RC_EINVALID;
}

static void key_str(struct rc_buf *k, char tag, const char *s)
{
    size_t n = s ? strlen(s) : (size_t)-1;

    rc_buf_add(k, &tag, 1, NULL);
    rc_buf_add(k, &n, sizeof(n), NULL);
    if (s)
        rc_buf_add(k, s, n, NULL);
}

static void key_int(struct rc_buf *k, char tag, int64_t v)
{
    rc_buf_add(k, &tag, 1, NULL);
    rc_buf_add(k, &v, sizeof(v), NULL);
}

static void entry_key(struct rc_buf *k, const struct entry *e)
{
    const struct pl_decision *d = e->d;

    rc_buf_reset(k);
    key_str(k, 'u', d->unit);
    key_str(k, 'p', d->policy);
    key_str(k, 'g', d->policy_digest);
    for (size_t i = 0; i < d->nobjects; i++) {
        const char *key = object_key(d, i);
        if (key)
            key_str(k, 'o', key);
    }
    key_int(k, 's', (int64_t)d->state);
    for (size_t i = 0; d->state == PL_STATE_PLACED && i < d->ntargets; i++) {
        key_str(k, 'c', d->targets[i].cluster);
        if (e->divide)
            key_int(k, '%', d->targets[i].percent);
    }
    key_str(k, 'r', d->reason);
    key_str(k, 'w', d->cause);
    for (size_t i = 0; i < d->nverdicts; i++) {
        const struct pl_verdict *v = &d->verdicts[i];
        if (e->keep && !e->keep[i])
            continue;
        key_str(k, 'v', v->cluster);
        key_int(k, 'k', (int64_t)v->kind);
        key_str(k, 'd', v->detail ? v->detail : "");
        key_int(k, 'n', v->nodes_added > 0 ? v->nodes_added : 0);
    }
    key_int(k, 'O', (int64_t)e->tally.omitted);
    for (int i = 0; e->tally.omitted && i < 4; i++)
        key_int(k, 'C', (int64_t)e->tally.count[i]);
}

/* The text of item `item` of a top-level sequence `name`, as the whole document would have
 * it: the emitter writes each item of a sequence on its own, so emitting {name: [item]} and
 * dropping the "name:\n" line gives the same bytes (tests/test_rd_record.c checks the whole
 * record against load + emit). Takes item. */
static int item_text(struct rc_buf *out, const char *name, cJSON *item, struct rc_err *err)
{
    cJSON *root = cJSON_CreateObject();
    struct rc_buf b = RC_BUF_INIT;
    size_t skip = strlen(name) + 2;
    int error;

    rd_out_push(rd_out_add(root, name, cJSON_CreateArray()), item);
    error = rd_yaml_emit(&b, root, err);
    cJSON_Delete(root);
    if (error == 0 && (b.len < skip || memcmp(b.ptr, name, skip - 2) || b.ptr[skip - 2] != ':' ||
                       b.ptr[skip - 1] != '\n'))
        error = rc_err_set(err, RC_ERROR, "unexpected text for an item of '%s'", name);
    if (error == 0)
        error = rc_buf_add(out, b.ptr + skip, b.len - skip, err);
    rc_buf_release(&b);
    return error;
}

/* A top-level member written alone (the document's members are written one after another). */
static int member_text(struct rc_buf *out, const char *name, cJSON *value, struct rc_err *err)
{
    cJSON *root = cJSON_CreateObject();
    int error;

    rd_out_add(root, name, value);
    error = rd_yaml_emit(out, root, err);
    cJSON_Delete(root);
    return error;
}

static int cmp_memo_unit(const void *key, const void *x)
{
    return strcmp(key, ((const struct memo_unit *)x)->unit);
}

/* Room for a decision's verdict flags (entry_init), grown as needed. */
struct keep_room {
    unsigned char small[64];
    unsigned char *keep; /* NULL: small */
    size_t cap;
};

static unsigned char *keep_room(struct keep_room *r, size_t n)
{
    if (!r->keep) {
        r->keep = r->small;
        r->cap = sizeof(r->small);
    }
    if (n > r->cap) {
        if (r->keep != r->small)
            free(r->keep);
        r->cap = n;
        r->keep = rc_xcalloc(n, 1);
    }
    return r->keep;
}

static void keep_room_free(struct keep_room *r)
{
    if (r->keep && r->keep != r->small)
        free(r->keep);
}

/* Unit u's entry was written now, as text[0..len): counted, and its bytes kept by a memo that
 * keeps bytes (m may be NULL). */
static void memo_written(struct rd_record_memo *m, struct memo_unit *u, const char *text,
                         size_t len)
{
    if (!m)
        return;
    m->last.units_written++;
    if (!m->digests_only) {
        u->len = len;
        u->chunk = rc_xmalloc(len + 1);
        memcpy(u->chunk, text, len);
    }
}

/* Unit d's entry against memo m: next gets the unit's name and what m keeps of the entry's key
 * (the key itself, or its digest), and *had the memo's entry of that unit (NULL: none). 1 when
 * that entry was written from the same key: its key, digest and bytes (chunk; NULL when the
 * memo kept none) are moved to next, the unit's name staying for the search. */
static int memo_take(struct memo_unit *next, struct memo_unit **had, struct rd_record_memo *m,
                     const struct pl_decision *d, const struct rd_verdict_tally *kept,
                     struct rc_buf *key, struct keep_room *room)
{
    struct memo_unit *h;
    struct entry e;

    entry_init(&e, d, kept, keep_room(room, d->nverdicts));
    entry_key(key, &e);
    h = m->nunits ? bsearch(d->unit, m->units, m->nunits, sizeof(*m->units), cmp_memo_unit) : NULL;
    *had = h;
    next->unit = rc_xstrdup(d->unit);
    if (h && memo_matches(h, key)) {
        next->kd[0] = h->kd[0];
        next->kd[1] = h->kd[1];
        next->key = h->key;
        next->keylen = h->keylen;
        next->chunk = h->chunk;
        next->len = h->len;
        next->same = 1;
        h->key = h->chunk = NULL;
        return 1;
    }
    if (!m->digests_only) {
        next->keylen = key->len;
        next->key = rc_xmalloc(key->len + 1);
        memcpy(next->key, key->ptr, key->len);
    } else {
        key_digest(next->kd, key->ptr, key->len);
    }
    return 0;
}

/* Entries written on more than one thread: enough entries for a second thread to pay. */
#define UNITS_PER_THREAD 1024
#define WRITE_THREADS_MAX 4

/* One entry to write: its text lands in its worker's buffer at [off, off + len). */
struct unit_job {
    const struct pl_decision *d;
    const struct rd_verdict_tally *kept;
    size_t index; /* in the record's order */
    size_t off, len;
};

/* A thread writing jobs [from, to) into text, in order; stops at its first failure. */
struct unit_worker {
    struct unit_job *jobs;
    size_t from, to;
    struct rc_buf text;
    size_t failed_at; /* to: none */
    int error;        /* of that job */
    struct rc_err err;
};

static void unit_worker_run(struct unit_worker *w)
{
    struct rc_buf one = RC_BUF_INIT;
    unsigned char small[64], *keep = small;
    size_t cap = sizeof(small);
    struct rd_jarena ja;

    w->failed_at = w->to;
    for (size_t i = w->from; i < w->to; i++) {
        struct unit_job *j = &w->jobs[i];
        struct entry e;

        if (j->d->nverdicts > cap) {
            if (keep != small)
                free(keep);
            cap = j->d->nverdicts;
            keep = rc_xcalloc(cap, 1);
        }
        entry_init(&e, j->d, j->kept, keep);
        rc_buf_reset(&one);
        /* the entry's tree lives until its text is written (rd_jarena.h) */
        rd_jarena_begin(&ja);
        w->error = item_text(&one, "units", entry_json(&e), &w->err);
        rd_jarena_end(&ja);
        if (w->error < 0) {
            w->failed_at = i;
            break;
        }
        j->off = w->text.len;
        j->len = one.len;
        rc_buf_add(&w->text, one.ptr, one.len, NULL);
    }
    if (keep != small)
        free(keep);
    rc_buf_release(&one);
}

static void unit_share(void *arg, size_t k)
{
    unit_worker_run(&((struct unit_worker *)arg)[k]);
}

/* Write jobs[0..n) on threads, each thread a contiguous share. Returns the number of workers
 * (their texts hold the entries); on failure err is the first failed job's error. */
static int write_jobs(struct unit_worker **out, size_t *nw, struct unit_job *jobs, size_t n,
                      const struct rd_render_options *opts, struct rc_err *err)
{
    size_t t = rc_threads_for(opts ? opts->threads : 0, n, UNITS_PER_THREAD, WRITE_THREADS_MAX);
    size_t failed = n, who = 0;
    struct unit_worker *w = rc_xcalloc(t, sizeof(*w));

    for (size_t k = 0; k < t; k++) {
        w[k].jobs = jobs;
        w[k].from = n * k / t;
        w[k].to = n * (k + 1) / t;
        rc_buf_init(&w[k].text, 0);
    }
    rc_threads_run(unit_share, w, t);
    for (size_t k = 0; k < t; k++) {
        if (w[k].failed_at < w[k].to && w[k].failed_at < failed) {
            failed = w[k].failed_at;
            who = k;
        }
    }
    *out = w;
    *nw = t;
    if (failed < n) {
        *err = w[who].err;
        return w[who].error;
    }
    return RC_OK;
}

/* The units: entries the memo has with the same key are copied, the others written (on
 * several threads when there are many; an entry the memo knows by its key's digest alone is
 * written too); the memo then holds exactly this record's entries.
 * The bytes do not depend on the threads. out gets room for `extra` more bytes. With
 * may_skip, when every entry is the memo's at the same place (the units are the last
 * record's, byte for byte), nothing is written and *skipped is 1. */
static int write_units(struct rc_buf *out, const struct pl_decision **dec, size_t ndec,
                       const struct pl_result *res, const struct rd_render_options *opts,
                       struct rd_record_memo *m, size_t extra, int may_skip, int *skipped,
                       struct rc_err *err)
{
    int same = m && ndec == m->nunits;
    struct memo_unit *next = NULL;
    struct rc_buf key = RC_BUF_INIT;
    struct unit_job *jobs = NULL;
    struct unit_worker *w = NULL;
    struct keep_room room = {{0}, NULL, 0};
    size_t njobs = 0, nw = 0, wk = 0;
    int error = 0;

    *skipped = 0;
    if (!ndec) {
        if (m) {
            memo_units_free(m->units, m->nunits);
            m->units = NULL;
            m->nunits = 0;
        }
        if (may_skip && same) {
            *skipped = 1;
            return 0;
        }
        return member_text(out, "units", cJSON_CreateArray(), err);
    }
    if (m)
        next = rc_xcalloc(ndec + 1, sizeof(*next));
    jobs = rc_xcalloc(ndec + 1, sizeof(*jobs));
    /* which entries the memo has (moved to next), and which are to be written */
    for (size_t i = 0; i < ndec; i++) {
        const struct pl_decision *d = dec[i];
        size_t at = (size_t)(d - res->decisions);
        const struct rd_verdict_tally *kept = opts && opts->tallies ? opts->tallies[at] : NULL;
        struct memo_unit *had = NULL;

        if (m) {
            if (memo_take(&next[i], &had, m, d, kept, &key, &room)) {
                same = same && had == &m->units[i];
                if (next[i].chunk) {
                    m->last.units_kept++;
                    continue;
                }
                /* the same entry, its bytes not at hand: written if the record is */
            } else {
                same = 0;
            }
        }
        jobs[njobs].d = d;
        jobs[njobs].kept = kept;
        jobs[njobs++].index = i;
    }
    keep_room_free(&room);
    rc_buf_release(&key);
    may_skip = may_skip && same;
    if (njobs && !may_skip)
        error = write_jobs(&w, &nw, jobs, njobs, opts, err);
    if (!error && may_skip) {
        *skipped = 1;
    } else if (!error) {
        /* in the record's order: copied entries and written ones, into a buffer of the
         * exact size (no copy while it grows) */
        size_t j = 0, total = 7;
        for (size_t k = 0; k < njobs; k++)
            total += jobs[k].len;
        for (size_t i = 0; m && i < ndec; i++)
            total += next[i].chunk ? next[i].len : 0;
        rc_buf_reserve(out, total + extra, NULL);
        rc_buf_add(out, "units:\n", 7, NULL);
        for (size_t i = 0; i < ndec; i++) {
            const char *text;
            size_t len;
            if (j < njobs && jobs[j].index == i) {
                while (wk + 1 < nw && j >= w[wk].to)
                    rc_buf_release(&w[wk++].text); /* copied: the peak holds one share */
                text = w[wk].text.ptr + jobs[j].off;
                len = jobs[j].len;
                memo_written(m, &next[i], text, len);
                j++;
            } else {
                text = next[i].chunk;
                len = next[i].len;
            }
            rc_buf_add(out, text, len, NULL);
        }
    }
    for (size_t k = 0; k < nw; k++)
        rc_buf_release(&w[k].text);
    free(w);
    free(jobs);
    if (!m)
        return error;
    if (error) {
        memo_units_free(next, ndec);
        next = NULL;
        ndec = 0;
    }
    memo_units_free(m->units, m->nunits);
    m->units = next;
    m->nunits = ndec;
    return error;
}

/* ==== A record in shards ==== */

size_t rd_record_shards_for(size_t nunits, size_t inline_max)
{
    size_t n = 2, per;

    if (!inline_max)
        inline_max = RD_RECORD_INLINE_MAX;
    if (nunits <= inline_max)
        return 1;
    per = inline_max / (RD_RECORD_INLINE_MAX / RD_RECORD_SHARD_UNITS);
    if (!per)
        per = 1;
    while (n < RD_RECORD_SHARDS_MAX && n * per < nunits)
        n *= 2;
    return n;
}

/* A count of shards rightplace writes: a power of two from 2 to RD_RECORD_SHARDS_MAX. */
static int shard_count_ok(size_t n)
{
    return n >= 2 && n <= RD_RECORD_SHARDS_MAX && !(n & (n - 1));
}

size_t rd_record_shard_of(const char *unit, size_t nshards)
{
    return (size_t)(rc_xxh64(unit, strlen(unit)) & (uint64_t)(nshards - 1));
}

static void shard_path(char out[32], size_t k)
{
    snprintf(out, 32, RD_RECORD_SHARD_DIR "%03x.yaml", (unsigned)(k & 0xfff));
}

/* A shard file's bytes before its units. */
static int shard_prefix(struct rc_buf *out, struct rc_err *err)
{
    cJSON *head = cJSON_CreateObject();
    int error;

    rd_out_add_str(head, "apiVersion", RD_RECORD_SHARDED_API_VERSION);
    rd_out_add_str(head, "kind", "PlacementRecordShard");
    error = rd_yaml_emit(out, head, err);
    cJSON_Delete(head);
    if (!error)
        error = rc_buf_add(out, "units:\n", 7, err);
    return error;
}

/* The blob ids of the shards written (text[k] not NULL), one shard an item on every core;
 * a shard whose id cannot be made gets "". */
#define ID_SHARDS_PER_THREAD 16
#define ID_THREADS_MAX 4
struct id_job {
    int (*fn)(char out[41], const void *data, size_t len);
    char **text;
    const size_t *size;
    struct memo_shard *tab;
};

static void id_item(void *arg, size_t k)
{
    struct id_job *j = arg;

    if (j->text[k] && j->fn(j->tab[k].id, j->text[k], j->size[k]) < 0)
        j->tab[k].id[0] = '\0';
}

/*
 * The units of a record in ns shards (rd_record_shards_for), each shard a file of files
 * (texts in a). With a memo whose last record is the base deploy tree's (record_base_is_memo)
 * and had as many shards, a shard whose units all match the memo's, as many as it had, is
 * kept: not written, the base's file, named by the memo's id. In the others an entry the memo
 * has the bytes of is copied, the rest written (on threads, as write_units). The memo then
 * holds this record's entries and shards. With may_skip, when every shard is kept nothing is
 * written and *skipped is 1 (files still lists them, all kept).
 */
static int write_sharded(struct rd_record_files *files, const struct pl_decision **dec, size_t ndec,
                         const struct pl_result *res, const struct rd_render_options *opts,
                         struct rd_record_memo *m, size_t ns, int may_skip, int *skipped,
                         struct rc_arena *a, struct rc_err *err)
{
    size_t *of = rc_xcalloc(ndec + 1, sizeof(*of)), *cnt = rc_xcalloc(ns, sizeof(*cnt));
    size_t *size = rc_xcalloc(ns, sizeof(*size));
    unsigned char *dirty = rc_xcalloc(ns, 1), *copied = rc_xcalloc(ndec + 1, 1);
    struct memo_unit *next = m ? rc_xcalloc(ndec + 1, sizeof(*next)) : NULL;
    struct memo_shard *tab = rc_xcalloc(ns, sizeof(*tab));
    struct unit_job *jobs = rc_xcalloc(ndec + 1, sizeof(*jobs));
    char **text = rc_xcalloc(ns, sizeof(*text));
    struct rc_buf key = RC_BUF_INIT, prefix = RC_BUF_INIT;
    struct unit_worker *w = NULL;
    struct keep_room room = {{0}, NULL, 0};
    size_t njobs = 0, nw = 0, nfiles = 0;
    int base = m && opts && opts->record_base_is_memo && m->nshards == ns;
    int error = 0, all_kept = 1;

    *skipped = 0;
    for (size_t i = 0; i < ndec; i++)
        cnt[of[i] = rd_record_shard_of(dec[i]->unit, ns)]++;
    for (size_t k = 0; k < ns; k++)
        dirty[k] = !base || cnt[k] != m->shards[k].nunits;
    /* which entries the memo has (moved to next); a shard with an entry it has not is written */
    for (size_t i = 0; i < ndec; i++) {
        const struct pl_decision *d = dec[i];
        size_t at = (size_t)(d - res->decisions);
        const struct rd_verdict_tally *kept = opts && opts->tallies ? opts->tallies[at] : NULL;
        struct memo_unit *had;

        jobs[i].d = d;
        jobs[i].kept = kept;
        if (m && memo_take(&next[i], &had, m, d, kept, &key, &room)) {
            copied[i] = next[i].chunk != NULL;
            continue;
        }
        dirty[of[i]] = 1;
    }
    keep_room_free(&room);
    rc_buf_release(&key);
    for (size_t k = 0; k < ns; k++) /* a shard emptied is a change too: its file goes */
        all_kept = all_kept && !dirty[k];
    if (may_skip && base && all_kept) {
        *skipped = 1;
    } else {
        /* the entries of the shards written: copied, or written on threads */
        for (size_t i = 0; i < ndec; i++) {
            if (dirty[of[i]] && !copied[i]) {
                jobs[njobs] = jobs[i];
                jobs[njobs++].index = i;
            }
        }
        error = shard_prefix(&prefix, err);
        if (!error && njobs)
            error = write_jobs(&w, &nw, jobs, njobs, opts, err);
    }
    if (!error && !*skipped) {
        size_t j = 0, wk = 0;
        for (size_t k = 0; k < ns; k++)
            size[k] = prefix.len;
        for (size_t i = 0, jj = 0; i < ndec; i++) {
            if (!dirty[of[i]])
                continue;
            if (jj < njobs && jobs[jj].index == i)
                size[of[i]] += jobs[jj++].len;
            else
                size[of[i]] += next[i].len;
        }
        for (size_t k = 0; k < ns; k++) {
            if (!dirty[k] || !cnt[k])
                continue;
            text[k] = rc_arena_alloc(a, size[k] + 1);
            memcpy(text[k], prefix.ptr, prefix.len);
            size[k] = prefix.len; /* now the bytes written so far */
        }
        for (size_t i = 0; i < ndec; i++) {
            const char *t;
            size_t len;
            if (!dirty[of[i]])
                continue;
            if (j < njobs && jobs[j].index == i) {
                while (wk + 1 < nw && j >= w[wk].to)
                    rc_buf_release(&w[wk++].text); /* copied: the peak holds one share */
                t = w[wk].text.ptr + jobs[j].off;
                len = jobs[j].len;
                j++;
                memo_written(m, &next[i], t, len);
            } else { /* copied: only a memo has bytes to copy */
                t = next[i].chunk;
                len = next[i].len;
                if (m)
                    m->last.units_kept++;
            }
            memcpy(text[of[i]] + size[of[i]], t, len);
            size[of[i]] += len;
        }
        for (size_t k = 0; k < ns; k++) {
            if (text[k])
                text[k][size[k]] = '\0';
        }
    }
    for (size_t k = 0; k < nw; k++)
        rc_buf_release(&w[k].text);
    free(w);
    /* the shards' table: the memo's for those kept, each written one named by its blob id
     * (made on every core: SHA-1 of the whole record in a first pass) */
    if (!error && !*skipped) {
        struct id_job job = {opts ? opts->blob_id : NULL, text, size, tab};
        if (!job.fn)
            error = rc_err_set(err, RC_EINVALID,
                               "a record of %zu units is written in shards, named by blob id, "
                               "and no blob id function was given",
                               ndec);
        else
            rc_threads_each(
                id_item, &job, ns,
                rc_threads_for(opts->threads, ns, ID_SHARDS_PER_THREAD, ID_THREADS_MAX));
        for (size_t k = 0; !error && k < ns; k++) {
            if (text[k] && !tab[k].id[0])
                error = rc_err_set(err, RC_ERROR, "cannot make the blob id of shard %zu", k);
        }
    }
    for (size_t k = 0; k < ns && !error; k++) {
        if (!cnt[k])
            continue;
        tab[k].nunits = cnt[k];
        if (!text[k]) { /* kept: only with the memo of the base's record */
            memcpy(tab[k].id, m->shards[k].id, sizeof(tab[k].id));
            m->last.units_kept += cnt[k];
        }
        nfiles++;
    }
    if (!error) {
        struct rd_record_shard *v = rc_arena_calloc(a, nfiles + 1, sizeof(*v));
        size_t f = 0;
        for (size_t k = 0; k < ns; k++) {
            if (!cnt[k])
                continue;
            shard_path(v[f].path, k);
            v[f].index = k;
            memcpy(v[f].id, tab[k].id, sizeof(v[f].id));
            v[f].nunits = cnt[k];
            v[f].text = text[k];
            v[f].len = text[k] ? size[k] : 0;
            f++;
        }
        files->shards = v;
        files->nshards = nfiles;
    }
    rc_buf_release(&prefix);
    free(text);
    free(jobs);
    free(copied);
    free(dirty);
    free(size);
    free(cnt);
    free(of);
    if (!m) {
        free(tab);
        return error;
    }
    if (error) {
        memo_units_free(next, ndec);
        next = NULL;
        ndec = 0;
        free(tab);
        tab = NULL;
        ns = 0;
    }
    memo_units_free(m->units, m->nunits);
    m->units = next;
    m->nunits = ndec;
    memo_set_shards(m, tab, ns);
    return error;
}

/* The memo's warnings by text, built when a warning is not where the last record had it (one
 * was added or removed before it): slot k holds an index + 1 into m->warnings, 0 empty. A
 * warning's chunk is a function of its text alone, so any entry of the same text will do. */
struct warning_index {
    size_t cap; /* a power of two, at least twice the warnings */
    size_t *slot;
};

uint64_t rd_record_warning_digest(const char *w)
{
    return rc_xxh64(w, strlen(w));
}

static void warning_index_build(struct warning_index *x, const struct rd_record_memo *m)
{
    x->cap = 16;
    while (x->cap < 2 * m->nwarnings)
        x->cap *= 2;
    x->slot = rc_xcalloc(x->cap, sizeof(*x->slot));
    for (size_t j = 0; j < m->nwarnings; j++) {
        size_t k;
        if (!m->warnings[j].chunk)
            continue;
        k = (size_t)rd_record_warning_digest(m->warnings[j].text) & (x->cap - 1);
        while (x->slot[k])
            k = (k + 1) & (x->cap - 1);
        x->slot[k] = j + 1;
    }
}

/* An entry of the memo not taken yet with text w, or NULL. */
static struct memo_warning *warning_find(const struct warning_index *x, struct rd_record_memo *m,
                                         const char *w)
{
    for (size_t k = (size_t)rd_record_warning_digest(w) & (x->cap - 1); x->slot[k];
         k = (k + 1) & (x->cap - 1)) {
        struct memo_warning *e = &m->warnings[x->slot[k] - 1];
        if (e->chunk && !strcmp(e->text, w))
            return e;
    }
    return NULL;
}

uint64_t *rd_record_memo_reported_digests(const struct rd_record_memo *m, size_t *n,
                                          struct rc_arena *a)
{
    uint64_t *v = rc_arena_calloc(a, (m ? m->nwdig : 0) + 1, sizeof(*v));

    *n = m ? m->nwdig : 0;
    if (*n)
        memcpy(v, m->wdig, *n * sizeof(*v));
    return v;
}

/* A file error's digest: its path and message, seeded apart from the warnings' (which share
 * the memo's list). */
#define ERROR_SEED UINT64_C(0xC2B2AE3D27D4EB4F)

uint64_t rd_record_file_error_digest(const char *path, const char *msg)
{
    uint64_t h = rc_xxh64_seeded(path, strlen(path) + 1, ERROR_SEED);

    return rc_xxh64_seeded(msg, strlen(msg), h);
}

/* What the memo says was reported from now on: the warnings and file errors of the record
 * just written (res NULL: nothing, as after a failure), sorted. */
static void memo_set_reported(struct rd_record_memo *m, const struct pl_result *res,
                              const struct rd_render_options *opts)
{
    size_t na = res ? res->nwarnings : 0, nb = res && opts ? opts->nwarnings : 0;
    size_t ne = res && opts ? opts->nfile_errors : 0, k = 0;

    free(m->wdig);
    m->wdig = rc_xcalloc(na + nb + ne + 1, sizeof(*m->wdig));
    for (size_t i = 0; i < na; i++)
        m->wdig[k++] = rd_record_warning_digest(res->warnings[i]);
    for (size_t i = 0; i < nb; i++)
        m->wdig[k++] = rd_record_warning_digest(opts->warnings[i]);
    for (size_t i = 0; i < ne; i++)
        m->wdig[k++] =
            rd_record_file_error_digest(opts->file_errors[i].path, opts->file_errors[i].msg);
    m->nwdig = k;
    rc_sort(m->wdig, k, sizeof(*m->wdig), rc_cmp_u64);
}

static int digest_listed(const uint64_t *digests, size_t n, uint64_t h)
{
    return n && bsearch(&h, digests, n, sizeof(*digests), rc_cmp_u64) != NULL;
}

int rd_record_file_error_listed(const uint64_t *digests, size_t n, const char *path,
                                const char *msg)
{
    return digest_listed(digests, n, rd_record_file_error_digest(path, msg));
}

int rd_record_warning_listed(const uint64_t *digests, size_t n, const char *w)
{
    return digest_listed(digests, n, rd_record_warning_digest(w));
}

/* The warnings, each copied from the memo when the last record had the same text: where it
 * had it (the usual case), else found by text. At most RD_RECORD_WARNINGS, then how many were
 * left out. */
static int write_warnings(struct rc_buf *out, const char *const *a, size_t na, const char *const *b,
                          size_t nb, size_t most, struct rd_record_memo *m, struct rc_err *err)
{
    size_t all = na + nb, n = all < most ? all : most;
    struct memo_warning *next = NULL;
    struct warning_index index = {0, NULL};
    struct rc_buf one = RC_BUF_INIT;
    int error = 0;

    if (!n) {
        if (m) {
            memo_warnings_free(m->warnings, m->nwarnings);
            m->warnings = NULL;
            m->nwarnings = 0;
        }
        return 0;
    }
    if (m)
        next = rc_xcalloc(n + 1, sizeof(*next));
    rc_buf_add(out, "warnings:\n", 10, NULL);
    for (size_t i = 0; i < n && !error; i++) {
        const char *w = i < na ? a[i] : b[i - na];
        struct memo_warning *had = NULL;
        if (m && i < m->nwarnings && m->warnings[i].chunk && !strcmp(m->warnings[i].text, w)) {
            had = &m->warnings[i];
        } else if (m && m->nwarnings && !m->digests_only) {
            if (!index.slot)
                warning_index_build(&index, m);
            had = warning_find(&index, m, w);
        }
        if (had) {
            rc_buf_add(out, had->chunk, had->len, NULL);
            next[i] = *had;
            memset(had, 0, sizeof(*had));
            m->last.warnings_kept++;
            continue;
        }
        rc_buf_reset(&one);
        error = item_text(&one, "warnings", rd_out_str(w), err);
        if (error)
            break;
        rc_buf_add(out, one.ptr, one.len, NULL);
        if (m)
            m->last.warnings_written++;
        if (m && !m->digests_only) {
            next[i].text = rc_xstrdup(w);
            next[i].len = one.len;
            next[i].chunk = rc_xmalloc(one.len + 1);
            memcpy(next[i].chunk, one.ptr, one.len);
        }
    }
    rc_buf_release(&one);
    free(index.slot);
    if (!error && all > n) {
        char line[64];
        int len = snprintf(line, sizeof(line), "warningsOmitted: %zu\n", all - n);
        rc_buf_add(out, line, (size_t)len, NULL);
    }
    if (!m)
        return error;
    if (error) {
        memo_warnings_free(next, n);
        next = NULL;
        n = 0;
    }
    memo_warnings_free(m->warnings, m->nwarnings);
    m->warnings = next;
    m->nwarnings = n;
    return error;
}

/* A digest of all the bytes after the units are written from: the warnings (the engine's,
 * then the load's) and the file errors, each length-prefixed. */
static uint64_t tail_digest(const struct pl_result *res, const struct rd_render_options *opts)
{
    size_t na = res->nwarnings, nb = opts ? opts->nwarnings : 0;
    size_t ne = opts ? opts->nfile_errors : 0;
    uint64_t h = rc_xxh64_seeded("tail", 4, (uint64_t)(na + nb) * 31 + ne);

    for (size_t i = 0; i < na + nb; i++) {
        const char *w = i < na ? res->warnings[i] : opts->warnings[i - na];
        size_t n = strlen(w);
        h = rc_xxh64_seeded(w, n, h ^ (uint64_t)n);
    }
    for (size_t i = 0; i < ne; i++) {
        const char *s[2] = {opts->file_errors[i].path, opts->file_errors[i].msg};
        for (int k = 0; k < 2; k++) {
            size_t n = strlen(s[k]);
            h = rc_xxh64_seeded(s[k], n, h ^ (uint64_t)n ^ ((uint64_t)(k + 1) << 62));
        }
    }
    return h;
}

/*
 * The record is written member by member and unit by unit, which gives the bytes of the whole
 * document written at once (the emitter writes each member and each sequence item on its
 * own). With a memo (rd_render_options.record_memo), an entry whose key (all it is written
 * from) is the one the memo has is copied instead of written again when the memo kept its
 * bytes (loop mode): a pass that changes one decision writes one entry. With may_skip, a record
 * that would be the last one written with the memo, byte for byte (the same bytes before and after
 * the units, and every entry the memo's at the same place), is not written: *skipped is 1 and out
 * is as it was.
 */
static int record_emit(struct rc_buf *out, struct rd_record_files *files, struct rc_arena *fa,
                       const struct pl_result *res, const struct rd_render_options *opts,
                       int may_skip, int *skipped, struct rc_err *err)
{
    struct rc_arena a = RC_ARENA_INIT;
    struct rd_record_memo *m = opts ? opts->record_memo : NULL;
    struct rc_buf hb = RC_BUF_INIT;
    cJSON *head = cJSON_CreateObject(), *arr;
    const struct pl_decision **dec;
    size_t start = out->len, ns;
    char digest[17];
    size_t ndec;
    int error;

    *skipped = 0;
    if (files)
        memset(files, 0, sizeof(*files));
    if (m)
        memset(&m->last, 0, sizeof(m->last));
    dec = rd_out_sorted_decisions(res, &ndec, &a);
    ns = !files ? 1
         : opts && opts->record_shards
             ? opts->record_shards
             : rd_record_shards_for(ndec, opts ? opts->record_inline_max : 0);

    rd_out_add_str(head, "apiVersion", ns > 1 ? RD_RECORD_SHARDED_API_VERSION : RD_API_VERSION);
    rd_out_add_str(head, "kind", "PlacementRecord");
    rd_render_digest(digest, opts);
    rd_out_add_str(head, "renderDigest", digest);
    error = rd_yaml_emit(&hb, head, err);
    cJSON_Delete(head);
    if (!error) {
        /* what follows the units is written from the warnings and the file errors alone:
         * whether they changed decides the skip, and they are written only if it fails */
        uint64_t hh = rc_xxh64(hb.ptr, hb.len), th = tail_digest(res, opts);
        may_skip = may_skip && m && m->have_last && m->last_head == hh && m->last_tail == th;
        rc_buf_add(out, hb.ptr, hb.len, NULL);
        if (ns == 1) {
            error = write_units(out, dec, ndec, res, opts, m, 0, may_skip, skipped, err);
            if (m)
                memo_set_shards(m, NULL, 0);
        } else {
            error = write_sharded(files, dec, ndec, res, opts, m, ns, may_skip, skipped, fa, err);
            if (!error && !*skipped)
                error = member_text(out, "shards", cJSON_CreateNumber((double)ns), err);
            if (!error && !*skipped) {
                arr = cJSON_CreateArray();
                for (size_t i = 0; i < files->nshards; i++) {
                    cJSON *e = rd_out_push(arr, cJSON_CreateObject());
                    rd_out_add_str(e, "file", files->shards[i].path);
                    rd_out_add_str(e, "blob", files->shards[i].id);
                    rd_out_add_int(e, "units", (int64_t)files->shards[i].nunits);
                }
                error = member_text(out, "shardFiles", arr, err);
            }
        }
        if (!error && !*skipped)
            error = write_warnings(
                out, (const char *const *)res->warnings, res->nwarnings,
                opts ? opts->warnings : NULL, opts ? opts->nwarnings : 0,
                opts && opts->record_warnings ? opts->record_warnings : RD_RECORD_WARNINGS, m, err);
        if (!error && !*skipped && opts && opts->nfile_errors) {
            arr = cJSON_CreateArray();
            for (size_t i = 0; i < opts->nfile_errors; i++) {
                cJSON *e = rd_out_push(arr, cJSON_CreateObject());
                rd_out_add_str(e, "file", opts->file_errors[i].path);
                rd_out_add_str(e, "message", opts->file_errors[i].msg);
            }
            error = member_text(out, "errors", arr, err);
        }
        if (m && !error) {
            m->have_last = 1;
            m->last_head = hh;
            m->last_tail = th;
            if (!*skipped) /* a skipped record lists what the last one did */
                memo_set_reported(m, res, opts);
        }
    }
    if (error || *skipped) { /* out as it was: not even the header */
        out->len = start;
        if (out->ptr)
            out->ptr[start] = '\0';
    }
    if (m && error) {
        m->have_last = 0;
        memo_set_reported(m, NULL, NULL);
    }
    rc_buf_release(&hb);
    rc_arena_release(&a);
    return error;
}

int rd_record_emit(struct rc_buf *out, const struct pl_result *res,
                   const struct rd_render_options *opts, struct rc_err *err)
{
    int skipped;

    return record_emit(out, NULL, NULL, res, opts, 0, &skipped, err);
}

int rd_record_emit_unless_same(struct rc_buf *out, int *same, const struct pl_result *res,
                               const struct rd_render_options *opts, struct rc_err *err)
{
    return record_emit(out, NULL, NULL, res, opts, 1, same, err);
}

int rd_record_emit_files(struct rc_buf *out, struct rd_record_files *files, int may_same, int *same,
                         const struct pl_result *res, const struct rd_render_options *opts,
                         struct rc_arena *a, struct rc_err *err)
{
    int skipped;
    size_t ns = opts ? opts->record_shards : 0;

    if (!same)
        same = &skipped;
    *same = 0;
    if (ns > 1 && !shard_count_ok(ns))
        return rc_err_set(err, RC_EINVALID, "%zu shards: not a power of two up to %d", ns,
                          RD_RECORD_SHARDS_MAX);
    return record_emit(out, files, a, res, opts, may_same, same, err);
}

/* ==== The record a result makes, without writing and reading it ==== */

static const char *dup_or_null(const char *s, struct rc_arena *a)
{
    return s ? rc_arena_strdup(a, s) : NULL;
}

/* What parse_tally reads back from the tally unit_json writes. */
static void tally_as_read(struct rd_verdict_tally *out, struct rd_verdict_tally t)
{
    memset(out, 0, sizeof(*out));
    if (t.omitted < 1 || (double)t.omitted > 1e12)
        return;
    for (int k = 0; k < 4; k++) {
        if ((double)t.count[k] < 1e12)
            out->count[k] = t.count[k];
    }
    out->omitted = t.omitted;
}

/* s copied into a, or (copy 0) s itself. */
static const char *keep_str(const char *s, int copy, struct rc_arena *a)
{
    return copy ? dup_or_null(s, a) : s;
}

/* The entry parse_unit reads back from what unit_json writes for d; its strings copied into
 * a, or (copy 0) d's own. */
static void unit_as_read(struct pl_prev_unit *u, struct rd_verdict_tally *tally,
                         const struct pl_decision *d, const struct rd_verdict_tally *kept, int copy,
                         struct rc_arena *a)
{
    unsigned char small[64], *keep = small;
    size_t k = 0;

    memset(u, 0, sizeof(*u));
    u->unit = keep_str(d->unit, copy, a);
    u->policy = keep_str(d->policy, copy, a);
    u->policy_digest = keep_str(d->policy_digest, copy, a);
    u->objects = rc_arena_calloc(a, d->nobjects + 1, sizeof(*u->objects));
    for (size_t i = 0; i < d->nobjects; i++) {
        const char *key = d->object_keys  ? d->object_keys[i]
                          : d->objects[i] ? d->objects[i]->key
                                          : NULL;
        if (key)
            u->objects[u->nobjects++] = keep_str(key, copy, a);
    }
    u->state = d->state;
    u->clusters = rc_arena_calloc(a, d->ntargets + 1, sizeof(*u->clusters));
    for (size_t i = 0; d->state == PL_STATE_PLACED && i < d->ntargets; i++)
        u->clusters[u->nclusters++] = keep_str(d->targets[i].cluster, copy, a);
    for (size_t i = 0; d->state == PL_STATE_PLACED && i < d->ntargets; i++) {
        if (d->targets[i].percent != 100) { /* written as shares (entry_init) */
            int64_t *pc = rc_arena_calloc(a, d->ntargets + 1, sizeof(*pc));
            for (size_t t = 0; t < d->ntargets; t++)
                pc[t] = d->targets[t].percent;
            u->percents = pc;
            break;
        }
    }
    u->reason = keep_str(d->reason, copy, a);
    u->cause = keep_str(d->cause, copy, a);
    if (d->nverdicts > sizeof(small))
        keep = rc_xcalloc(d->nverdicts, 1);
    select_verdicts(keep, tally, d);
    if (kept && kept->omitted)
        *tally = *kept;
    u->verdicts = rc_arena_calloc(a, d->nverdicts + 1, sizeof(*u->verdicts));
    for (size_t i = 0; i < d->nverdicts; i++) {
        const struct pl_verdict *v = &d->verdicts[i];
        struct pl_verdict *w = &u->verdicts[k];
        if (!keep[i] && !(kept && kept->omitted))
            continue;
        if ((unsigned)v->kind >= 4)
            continue; /* pl_verdict_parse would not know its name */
        w->cluster = keep_str(v->cluster, copy, a);
        w->kind = v->kind;
        w->detail = keep_str(v->detail ? v->detail : "", copy, a);
        /* written as a number (a double), read back when within [0, 1e15) */
        if (v->nodes_added > 0 && (double)v->nodes_added < 1e15)
            w->nodes_added = (int64_t)(double)v->nodes_added;
        k++;
    }
    u->nverdicts = k;
    if (keep != small)
        free(keep);
    tally_as_read(tally, *tally);
}

/* A record's units and tallies arrays: buffers a takes, so that a record made over this one
 * (rd_record_of_result_over), which shares its strings but not its arrays, lets the arrays go
 * alone (rc_arena_pass_on). */
static void record_arrays(struct rd_record *r, size_t n, struct rc_arena *a)
{
    r->units = rc_arena_take(a, rc_xcalloc(n + 1, sizeof(*r->units)), (n + 1) * sizeof(*r->units));
    r->tallies =
        rc_arena_take(a, rc_xcalloc(n + 1, sizeof(*r->tallies)), (n + 1) * sizeof(*r->tallies));
}

/* The record res makes, its strings copied into a or (copy 0) res's own. With base (the
 * record the memo's last write was over, copy 1): a unit whose entry the memo took as it was
 * is base's unit, shared. Returns the units shared, or (size_t)-1, out untouched, when the memo
 * is not of res's record. */
static size_t record_of_result(struct rd_record *out, const struct pl_result *res,
                               const struct rd_render_options *opts, int copy,
                               const struct rd_record *base, struct rc_arena *a)
{
    const struct rd_record_memo *m = base ? opts->record_memo : NULL;
    struct rc_arena tmp = RC_ARENA_INIT;
    const struct pl_decision **dec;
    char digest[17];
    size_t ndec, j = 0, shared = 0;

    dec = rd_out_sorted_decisions(res, &ndec, &tmp);
    if (m && m->nunits != ndec) {
        rc_arena_release(&tmp);
        return (size_t)-1;
    }
    memset(out, 0, sizeof(*out));
    out->source = ""; /* the record names none: RD_SOURCE_FILE does */
    rd_render_digest(digest, opts);
    out->render_digest = base && base->render_digest && !strcmp(base->render_digest, digest)
                             ? base->render_digest
                             : rc_arena_strdup(a, digest);
    record_arrays(out, ndec, a);
    for (size_t i = 0; i < ndec; i++) {
        size_t at = (size_t)(dec[i] - res->decisions);
        /* the entry the memo took as it was is the base's: the same key, the same bytes, the
         * same entry read back (the base's units are sorted as written; a base that is not
         * only shares less) */
        if (m && m->units[i].same && !strcmp(m->units[i].unit, dec[i]->unit)) {
            int c = 1;
            while (j < base->nunits && (c = strcmp(base->units[j].unit, dec[i]->unit)) < 0)
                j++;
            if (c == 0) {
                out->units[i] = base->units[j];
                out->tallies[i] = base->tallies[j++];
                shared++;
                continue;
            }
        }
        unit_as_read(&out->units[i], &out->tallies[i], dec[i],
                     opts && opts->tallies ? opts->tallies[at] : NULL, copy, a);
    }
    out->nunits = ndec;
    rc_arena_release(&tmp);
    return shared;
}

int rd_record_of_result(struct rd_record *out, const struct pl_result *res,
                        const struct rd_render_options *opts, struct rc_arena *a)
{
    record_of_result(out, res, opts, 1, NULL, a);
    return 0;
}

void rd_record_view_of_result(struct rd_record *out, const struct pl_result *res,
                              const struct rd_render_options *opts, struct rc_arena *a)
{
    record_of_result(out, res, opts, 0, NULL, a);
}

int rd_record_of_result_over(struct rd_record *out, size_t *shared, const struct pl_result *res,
                             const struct rd_render_options *opts, const struct rd_record *base,
                             struct rc_arena *a)
{
    *shared = 0;
    if (!opts || !opts->record_memo || !opts->record_base_is_memo || !base || !base->tallies)
        return -1;
    *shared = record_of_result(out, res, opts, 1, base, a);
    if (*shared == (size_t)-1) { /* not the memo of this result's record */
        *shared = 0;
        return -1;
    }
    return 0;
}

static const char **dup_strs(const char *const *v, size_t n, struct rc_arena *a)
{
    const char **o = rc_arena_calloc(a, n + 1, sizeof(*o));

    for (size_t i = 0; i < n; i++)
        o[i] = dup_or_null(v[i], a);
    return o;
}

void rd_record_copy(struct rd_record *out, const struct rd_record *in, struct rc_arena *a)
{
    memset(out, 0, sizeof(*out));
    out->source = dup_or_null(in->source, a);
    out->render_digest = dup_or_null(in->render_digest, a);
    out->nunits = in->nunits;
    record_arrays(out, in->nunits, a);
    for (size_t i = 0; i < in->nunits; i++) {
        const struct pl_prev_unit *s = &in->units[i];
        struct pl_prev_unit *d = &out->units[i];
        d->unit = dup_or_null(s->unit, a);
        d->policy = dup_or_null(s->policy, a);
        d->policy_digest = dup_or_null(s->policy_digest, a);
        d->nobjects = s->nobjects;
        d->objects = dup_strs(s->objects, s->nobjects, a);
        d->state = s->state;
        d->nclusters = s->nclusters;
        d->clusters = dup_strs(s->clusters, s->nclusters, a);
        if (s->percents) {
            int64_t *pc = rc_arena_calloc(a, s->nclusters + 1, sizeof(*pc));
            memcpy(pc, s->percents, s->nclusters * sizeof(*pc));
            d->percents = pc;
        }
        d->reason = dup_or_null(s->reason, a);
        d->cause = dup_or_null(s->cause, a);
        d->nverdicts = s->nverdicts;
        d->verdicts = rc_arena_calloc(a, s->nverdicts + 1, sizeof(*d->verdicts));
        for (size_t k = 0; k < s->nverdicts; k++) {
            d->verdicts[k] = s->verdicts[k];
            d->verdicts[k].cluster = dup_or_null(s->verdicts[k].cluster, a);
            d->verdicts[k].detail = dup_or_null(s->verdicts[k].detail, a);
        }
        if (in->tallies)
            out->tallies[i] = in->tallies[i];
    }
}

/* ==== Reading ==== */

/* The recorded verdicts, so that a unit that keeps its placement keeps its record entry. */
static int parse_verdicts(struct pl_prev_unit *u, const cJSON *arr, const struct rd_docs *docs,
                          struct rc_arena *a, struct rc_err *err)
{
    const cJSON *it;
    size_t k = 0;

    if (!arr || cJSON_IsNull(arr))
        return 0;
    if (!cJSON_IsArray(arr))
        return rd_out_err_at(err, docs, RECORD_FILE, arr, "field 'verdicts' is not a list");
    u->verdicts = rc_arena_calloc(a, (size_t)cJSON_GetArraySize(arr) + 1, sizeof(*u->verdicts));
    cJSON_ArrayForEach(it, arr)
    {
        struct pl_verdict *v = &u->verdicts[k];
        const char *kind = NULL;
        const cJSON *added;
        int error;

        if (!cJSON_IsObject(it))
            return rd_out_err_at(err, docs, RECORD_FILE, it, "verdict is not a mapping");
        error = rd_out_get_str(&v->cluster, it, "cluster", 1, docs, RECORD_FILE, a, err);
        if (!error)
            error = rd_out_get_str(&kind, it, "verdict", 1, docs, RECORD_FILE, a, err);
        if (error)
            return error;
        if (pl_verdict_parse(&v->kind, kind) < 0) {
            /* written by a later version: skip it rather than lose the whole record */
            memset(v, 0, sizeof(*v));
            continue;
        }
        error = rd_out_get_str(&v->detail, it, "detail", 0, docs, RECORD_FILE, a, err);
        if (error)
            return error;
        added = cJSON_GetObjectItemCaseSensitive(it, "nodesAdded");
        if (cJSON_IsNumber(added) && added->valuedouble >= 0 && added->valuedouble < 1e15)
            v->nodes_added = (int64_t)added->valuedouble;
        k++;
    }
    u->nverdicts = k;
    return 0;
}

/* verdictsOmitted and verdictCounts; a count that is not a small non-negative integer is
 * taken as absent (the entry is then written again with counts of its listed verdicts). */
static void parse_tally(struct rd_verdict_tally *t, const cJSON *j)
{
    const cJSON *om = cJSON_GetObjectItemCaseSensitive(j, "verdictsOmitted");
    const cJSON *counts = cJSON_GetObjectItemCaseSensitive(j, "verdictCounts");

    memset(t, 0, sizeof(*t));
    if (!cJSON_IsNumber(om) || om->valuedouble < 1 || om->valuedouble > 1e12 ||
        !cJSON_IsObject(counts))
        return;
    for (int k = 0; k < 4; k++) {
        const cJSON *c =
            cJSON_GetObjectItemCaseSensitive(counts, pl_verdict_name((enum pl_verdict_kind)k));
        if (cJSON_IsNumber(c) && c->valuedouble >= 0 && c->valuedouble < 1e12)
            t->count[k] = (size_t)c->valuedouble;
    }
    t->omitted = (size_t)om->valuedouble;
}

/* An entry's shares ({cluster, percent} each) as they stream in. They only let render keep a
 * Divide unit's files (rc_pass.c, reusable_objects), so shares that do not read, or do not
 * name the entry's clusters one each, are dropped (the unit's files are rendered) rather
 * than refused. */
struct shares_in {
    char **cluster; /* malloc'd copies, each freed once its entry is read (take_shares) */
    int64_t *percent;
    size_t n, cap, pcap;
    int bad;
};

static int each_share(void *payload, const cJSON *item, const struct rd_docs *docs,
                      struct rc_err *err)
{
    struct shares_in *sh = payload;
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(item, "cluster");
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(item, "percent");

    (void)docs;
    (void)err;
    if (sh->bad || !cJSON_IsString(c) || !cJSON_IsNumber(p) || !(p->valuedouble >= 0) ||
        !(p->valuedouble <= 100) || p->valuedouble != (double)(int64_t)p->valuedouble) {
        sh->bad = 1;
        return 0;
    }
    sh->cluster = rc_xgrow(sh->cluster, &sh->cap, sh->n + 1, sizeof(*sh->cluster));
    sh->percent = rc_xgrow(sh->percent, &sh->pcap, sh->n + 1, sizeof(*sh->percent));
    sh->cluster[sh->n] = rc_xstrdup(c->valuestring);
    sh->percent[sh->n++] = (int64_t)p->valuedouble;
    return 0;
}

struct share_ent {
    const char *cluster;
    int64_t percent;
};

static int cmp_share_ent(const void *x, const void *y)
{
    return strcmp(((const struct share_ent *)x)->cluster, ((const struct share_ent *)y)->cluster);
}

/* u's percents from the shares that came (NULL unless they name each of u's clusters once);
 * empties them for the next entry. The writer lists them in the clusters' order; any other
 * order is matched by sorting, so that a unit of many clusters costs n log n, not n^2. */
static void take_shares(struct pl_prev_unit *u, struct shares_in *sh, struct rc_arena *a)
{
    int64_t *pc = NULL;
    size_t i = 0;
    int ok = !sh->bad && sh->n && sh->n == u->nclusters;

    if (ok)
        pc = rc_arena_calloc(a, u->nclusters + 1, sizeof(*pc));
    while (ok && i < u->nclusters && !strcmp(sh->cluster[i], u->clusters[i])) {
        pc[i] = sh->percent[i];
        i++;
    }
    if (ok && i < u->nclusters) {
        struct share_ent *v = rc_xcalloc(sh->n, sizeof(*v));
        for (size_t k = 0; k < sh->n; k++)
            v[k] = (struct share_ent){sh->cluster[k], sh->percent[k]};
        rc_sort(v, sh->n, sizeof(*v), cmp_share_ent);
        for (size_t k = 1; ok && k < sh->n; k++)
            ok = strcmp(v[k - 1].cluster, v[k].cluster) != 0;
        for (i = 0; ok && i < u->nclusters; i++) {
            struct share_ent key = {u->clusters[i], 0};
            const struct share_ent *hit = bsearch(&key, v, sh->n, sizeof(*v), cmp_share_ent);
            ok = hit != NULL;
            if (ok)
                pc[i] = hit->percent;
        }
        free(v);
    }
    u->percents = ok ? pc : NULL;
    for (size_t k = 0; k < sh->n; k++)
        free(sh->cluster[k]);
    sh->n = 0;
    sh->bad = 0;
}

/* objects and clusters: the lists of an entry that grow with the fleet (a unit's objects,
 * the clusters it is copied to), streamed one string at a time (rd_yaml.h), and its shares */
static int parse_unit(struct pl_prev_unit *u, const cJSON *j, const struct rd_docs *docs,
                      struct rd_out_strs *objects, struct rd_out_strs *clusters,
                      struct shares_in *shares, struct rc_arena *a, struct rc_err *err)
{
    const char *state = NULL;
    int error;

    if (!cJSON_IsObject(j))
        return rd_out_err_at(err, docs, RECORD_FILE, j, "unit entry is not a mapping");
    error = rd_out_get_str(&u->unit, j, "unit", 1, docs, RECORD_FILE, a, err);
    if (!error)
        error = rd_out_get_str(&u->policy, j, "policy", 0, docs, RECORD_FILE, a, err);
    if (!error)
        error = rd_out_get_str(&u->policy_digest, j, "policyDigest", 0, docs, RECORD_FILE, a, err);
    if (!error)
        error = rd_out_take_strs(&u->objects, &u->nobjects, j, objects, docs, err);
    if (!error)
        error = rd_out_get_str(&state, j, "state", 1, docs, RECORD_FILE, a, err);
    if (!error && pl_state_parse(&u->state, state) < 0)
        error = rd_out_err_at(err, docs, RECORD_FILE, cJSON_GetObjectItemCaseSensitive(j, "state"),
                              "unknown state '%s' of unit '%s'", state, u->unit);
    if (!error)
        error = rd_out_take_strs(&u->clusters, &u->nclusters, j, clusters, docs, err);
    if (!error && u->state == PL_STATE_PLACED && u->nclusters == 0)
        error =
            rd_out_err_at(err, docs, RECORD_FILE, j, "placed unit '%s' has no clusters", u->unit);
    if (!error)
        take_shares(u, shares, a);
    if (!error)
        error = rd_out_get_str(&u->reason, j, "reason", 0, docs, RECORD_FILE, a, err);
    if (!error)
        error = rd_out_get_str(&u->cause, j, "cause", 0, docs, RECORD_FILE, a, err);
    if (!error)
        error = parse_verdicts(u, cJSON_GetObjectItemCaseSensitive(j, "verdicts"), docs, a, err);
    return error;
}

static int cmp_str(const void *x, const void *y)
{
    return strcmp(*(const char *const *)x, *(const char *const *)y);
}

static int check_unique(const struct rd_record *r, struct rc_arena *a, struct rc_err *err)
{
    const char **ids = rc_arena_calloc(a, r->nunits + 1, sizeof(*ids));

    for (size_t i = 0; i < r->nunits; i++)
        ids[i] = r->units[i].unit;
    rc_sort(ids, r->nunits, sizeof(*ids), cmp_str);
    for (size_t i = 1; i < r->nunits; i++) {
        if (!strcmp(ids[i - 1], ids[i]))
            return rc_err_set(err, RC_EINVALID, "%s: unit '%s' listed twice", RECORD_FILE, ids[i]);
    }
    return 0;
}

/* Units as they stream in (rd_yaml_load_items). */
struct units_in {
    struct rc_arena *a;
    struct pl_prev_unit *units;
    struct rd_verdict_tally *tallies;
    size_t n, cap, tcap;
    struct rd_out_strs objects, clusters; /* of the entry being read */
    struct shares_in shares;
    size_t nwarnings; /* the warnings listed, read past */
};

static int count_warning(void *payload, const cJSON *item, const struct rd_docs *docs,
                         struct rc_err *err)
{
    (void)item;
    (void)docs;
    (void)err;
    ((struct units_in *)payload)->nwarnings++;
    return 0;
}

static int each_unit(void *payload, const cJSON *item, const struct rd_docs *docs,
                     struct rc_err *err)
{
    struct units_in *in = payload;
    int error;

    in->units = rc_xgrow(in->units, &in->cap, in->n + 1, sizeof(*in->units));
    in->tallies = rc_xgrow(in->tallies, &in->tcap, in->n + 1, sizeof(*in->tallies));
    memset(&in->units[in->n], 0, sizeof(in->units[in->n]));
    error = parse_unit(&in->units[in->n], item, docs, &in->objects, &in->clusters, &in->shares,
                       in->a, err);
    if (error < 0)
        return error;
    parse_tally(&in->tallies[in->n], item);
    in->n++;
    return 0;
}

/* A document of the record (file: its name in messages): one mapping, of apiVersion api (or,
 * with api2, that one: *sharded 1) and kind `kind`; its units streamed into in. */
static int load_doc(struct rd_docs **docs, const cJSON **root, int *sharded, struct units_in *in,
                    const char *file, const char *text, size_t len, const char *api,
                    const char *api2, const char *kind, struct rc_arena *a, struct rc_err *err)
{
    struct rd_yaml_limits limits = RD_YAML_LIMITS_INIT;
    struct rd_yaml_items lists[] = {
        {"objects", rd_out_each_str, &in->objects, NULL, 0},
        {"clusters", rd_out_each_str, &in->clusters, NULL, 0},
        {"shares", each_share, &in->shares, NULL, 0},
    };
    struct rd_yaml_items items[] = {
        {"units", each_unit, in, lists, sizeof(lists) / sizeof(lists[0])},
        /* one a broken source file or a warning: read past, one at a time (the warnings
         * counted, for replay: rd_record_layout) */
        {"errors", NULL, NULL, NULL, 0},
        {"warnings", count_warning, in, NULL, 0},
    };
    const char *s = NULL;
    int error;

    /* read unit by unit, and each unit's objects and clusters one by one: each within the
     * usual limits, the whole record within RD_RECORD_MAX_BYTES, whatever the number of
     * units or the size of one (rd_output.h) */
    limits.max_bytes = RD_RECORD_MAX_BYTES;
    in->objects = (struct rd_out_strs){RECORD_FILE, "objects", in->a, NULL, 0, 0};
    in->clusters = (struct rd_out_strs){RECORD_FILE, "clusters", in->a, NULL, 0, 0};
    in->shares = (struct shares_in){NULL, NULL, 0, 0, 0, 0};
    error = rd_yaml_load_items(docs, file, text, len, &limits, items,
                               sizeof(items) / sizeof(items[0]), err);
    free(in->objects.v);
    free(in->clusters.v);
    for (size_t k = 0; k < in->shares.n; k++) /* an entry that did not read */
        free(in->shares.cluster[k]);
    free(in->shares.cluster);
    free(in->shares.percent);
    memset(&in->objects, 0, sizeof(in->objects));
    memset(&in->clusters, 0, sizeof(in->clusters));
    memset(&in->shares, 0, sizeof(in->shares));
    if (error < 0)
        return error;
    if (rd_docs_count(*docs) != 1)
        return rc_err_set(err, RC_EINVALID, "%s: expected one document, found %zu", file,
                          rd_docs_count(*docs));
    *root = rd_docs_get(*docs, 0);
    if (!cJSON_IsObject(*root))
        return rd_out_err_at(err, *docs, file, *root, "record is not a mapping");
    error = rd_out_get_str(&s, *root, "apiVersion", 1, *docs, file, a, err);
    if (error < 0)
        return error;
    *sharded = api2 && !strcmp(s, api2);
    if (strcmp(s, api) && !*sharded)
        return rd_out_err_at(err, *docs, file,
                             cJSON_GetObjectItemCaseSensitive(*root, "apiVersion"),
                             "unsupported apiVersion '%s'", s);
    error = rd_out_get_str(&s, *root, "kind", 1, *docs, file, a, err);
    if (error < 0)
        return error;
    if (strcmp(s, kind))
        return rd_out_err_at(err, *docs, file, cJSON_GetObjectItemCaseSensitive(*root, "kind"),
                             "kind is '%s', expected '%s'", s, kind);
    return 0;
}

/* A count the header gives: a whole number in [lo, hi]. */
static int get_count_field(size_t *out, const cJSON *obj, const char *key, double lo, double hi,
                           const struct rd_docs *docs, struct rc_err *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

    if (!cJSON_IsNumber(v) || v->valuedouble < lo || v->valuedouble > hi ||
        v->valuedouble != (double)(size_t)v->valuedouble)
        return rd_out_err_at(err, docs, RECORD_FILE, v ? v : obj,
                             "field '%s' is not a whole number from %.0f to %.0f", key, lo, hi);
    *out = (size_t)v->valuedouble;
    return 0;
}

/* The header's shards (shards, shardFiles): each file's path, blob id and unit count. */
static int header_shards(struct rd_record_shard **out, size_t *n, size_t *count, const cJSON *root,
                         const struct rd_docs *docs, struct rc_arena *a, struct rc_err *err)
{
    const cJSON *files = cJSON_GetObjectItemCaseSensitive(root, "shardFiles"), *f;
    struct rd_record_shard *v;
    size_t k = 0;
    int error;

    if (cJSON_GetObjectItemCaseSensitive(root, "units"))
        return rd_out_err_at(err, docs, RECORD_FILE,
                             cJSON_GetObjectItemCaseSensitive(root, "units"),
                             "a record in shards lists its units in its shard files");
    error = get_count_field(count, root, "shards", 2, RD_RECORD_SHARDS_MAX, docs, err);
    if (error < 0)
        return error;
    if (!shard_count_ok(*count))
        return rd_out_err_at(err, docs, RECORD_FILE,
                             cJSON_GetObjectItemCaseSensitive(root, "shards"),
                             "field 'shards' is not a power of two");
    if (!cJSON_IsArray(files) || (size_t)cJSON_GetArraySize(files) > *count)
        return rd_out_err_at(err, docs, RECORD_FILE, files ? files : root,
                             "field 'shardFiles' is not a list of at most %zu files", *count);
    v = rc_arena_calloc(a, (size_t)cJSON_GetArraySize(files) + 1, sizeof(*v));
    cJSON_ArrayForEach(f, files)
    {
        const char *path = NULL, *id = NULL;
        char want[32];
        size_t idx;
        if ((error = rd_out_get_str(&path, f, "file", 1, docs, RECORD_FILE, a, err)) < 0 ||
            (error = rd_out_get_str(&id, f, "blob", 1, docs, RECORD_FILE, a, err)) < 0 ||
            (error = get_count_field(&v[k].nunits, f, "units", 1, 1e12, docs, err)) < 0)
            return error;
        /* placements/<index>.yaml, in order, each once, within the count */
        idx = strlen(path) == strlen(RD_RECORD_SHARD_DIR) + 8
                  ? (size_t)strtoul(path + strlen(RD_RECORD_SHARD_DIR), NULL, 16)
                  : *count;
        if (idx < *count)
            shard_path(want, idx);
        if (idx >= *count || strcmp(want, path) || (k && strcmp(v[k - 1].path, path) >= 0))
            return rd_out_err_at(err, docs, RECORD_FILE, f,
                                 "shard file '%s' is not placements/<index>.yaml, in order, "
                                 "of an index below %zu",
                                 path, *count);
        if (!rc_is_object_id(id, strlen(id)))
            return rd_out_err_at(err, docs, RECORD_FILE, f, "shard blob '%s' is not an object id",
                                 id);
        memcpy(v[k].path, path, strlen(path) + 1);
        memcpy(v[k].id, id, 41);
        v[k].index = idx;
        k++;
    }
    *out = v;
    *n = k;
    return 0;
}

struct unit_sort {
    struct pl_prev_unit u;
    struct rd_verdict_tally t;
    uint64_t kd[2];
};

static int cmp_unit_sort(const void *x, const void *y)
{
    return strcmp(((const struct unit_sort *)x)->u.unit, ((const struct unit_sort *)y)->u.unit);
}

/* units[0..n) and their tallies (and key digests, kd may be NULL) in order of unit, as
 * written in one file */
static void sort_units(struct pl_prev_unit *units, struct rd_verdict_tally *tallies,
                       uint64_t (*kd)[2], size_t n)
{
    struct unit_sort *t;

    if (n < 2)
        return;
    t = rc_xcalloc(n, sizeof(*t));
    for (size_t i = 0; i < n; i++) {
        t[i].u = units[i];
        t[i].t = tallies[i];
        if (kd)
            memcpy(t[i].kd, kd[i], sizeof(t[i].kd));
    }
    rc_sort(t, n, sizeof(*t), cmp_unit_sort);
    for (size_t i = 0; i < n; i++) {
        units[i] = t[i].u;
        tallies[i] = t[i].t;
        if (kd)
            memcpy(kd[i], t[i].kd, sizeof(t[i].kd));
    }
    free(t);
}

/* The units of the shards the header names, read by blob id into in, then sorted by unit;
 * the shards' bytes within budget (what RD_RECORD_MAX_BYTES leaves after the header), each
 * shard's freed once its units are read. */
static int read_shards(struct units_in *in, const struct rd_record_shard *v, size_t n, size_t count,
                       size_t budget, rd_record_blob_fn fetch, void *payload, struct rc_err *err)
{
    int error = 0;

    if (!fetch)
        return rc_err_set(err, RC_EINVALID,
                          "%s: the record is in shards (apiVersion %s), read here as one file",
                          RECORD_FILE, RD_RECORD_SHARDED_API_VERSION);
    for (size_t k = 0; k < n && !error; k++) {
        struct rc_arena scratch = RC_ARENA_INIT;
        struct rd_docs *docs = NULL;
        const cJSON *root;
        const char *text = NULL;
        size_t len = 0, from = in->n;
        int sharded = 0;
        error = fetch(payload, v[k].id, budget, &text, &len, &scratch, err);
        if (error < 0) {
            rc_arena_release(&scratch);
            return rc_err_prefix(err, "%s names %s as blob %.12s: ", RECORD_FILE, v[k].path,
                                 v[k].id);
        }
        budget -= len < budget ? len : budget;
        error = load_doc(&docs, &root, &sharded, in, v[k].path, text, len,
                         RD_RECORD_SHARDED_API_VERSION, NULL, "PlacementRecordShard", in->a, err);
        rd_docs_free(docs);
        rc_arena_release(&scratch);
        if (error < 0)
            return error;
        if (in->n - from != v[k].nunits)
            return rc_err_set(err, RC_EINVALID, "%s: %zu units, where %s says %zu", v[k].path,
                              in->n - from, RECORD_FILE, v[k].nunits);
        for (size_t i = from; i < in->n; i++) {
            if (rd_record_shard_of(in->units[i].unit, count) != v[k].index)
                return rc_err_set(err, RC_EINVALID, "%s: unit '%s' belongs in shard %03zx",
                                  v[k].path, in->units[i].unit,
                                  rd_record_shard_of(in->units[i].unit, count));
        }
    }
    sort_units(in->units, in->tallies, NULL, in->n);
    return 0;
}

int rd_record_read(struct rd_record *out, const char *text, size_t len, rd_record_blob_fn fetch,
                   void *payload, struct rd_record_layout *layout, struct rc_arena *a,
                   struct rc_err *err)
{
    struct units_in in;
    struct rd_docs *docs = NULL;
    const cJSON *root, *units;
    const char *s = NULL;
    struct rd_record r = {"", NULL, 0, NULL, NULL};
    struct rd_record_shard *sv = NULL;
    size_t nsv = 0, count = 0;
    int error, sharded = 0;

    memset(&in, 0, sizeof(in));
    in.a = a;
    if (layout)
        memset(layout, 0, sizeof(*layout));
    error = load_doc(&docs, &root, &sharded, &in, RECORD_FILE, text, len, RD_API_VERSION,
                     RD_RECORD_SHARDED_API_VERSION, "PlacementRecord", a, err);
    if (error < 0)
        goto done;
    error = rd_out_get_str(&s, root, "source", 0, docs, RECORD_FILE, a, err);
    if (error < 0)
        goto done;
    if (s)
        r.source = s;
    error = rd_out_get_str(&r.render_digest, root, "renderDigest", 0, docs, RECORD_FILE, a, err);
    if (error < 0)
        goto done;
    if (sharded) {
        error = header_shards(&sv, &nsv, &count, root, docs, a, err);
        if (error == 0)
            error = read_shards(&in, sv, nsv, count,
                                len < RD_RECORD_MAX_BYTES ? RD_RECORD_MAX_BYTES - len : 0, fetch,
                                payload, err);
        if (error < 0)
            goto done;
    } else {
        units = cJSON_GetObjectItemCaseSensitive(root, "units");
        if (units && !cJSON_IsNull(units) && !cJSON_IsArray(units)) {
            error = rd_out_err_at(err, docs, RECORD_FILE, units, "field 'units' is not a list");
            goto done;
        }
    }
    r.nunits = in.n;
    r.units = rc_arena_calloc(a, in.n + 1, sizeof(*r.units));
    r.tallies = rc_arena_calloc(a, in.n + 1, sizeof(*r.tallies));
    if (in.n) {
        memcpy(r.units, in.units, in.n * sizeof(*r.units));
        memcpy(r.tallies, in.tallies, in.n * sizeof(*r.tallies));
    }
    error = check_unique(&r, a, err);
    if (error < 0)
        goto done;
    *out = r;
    if (layout) {
        layout->shards = sharded ? count : 1;
        layout->nfiles = nsv;
        layout->files = sv;
        layout->nwarnings = in.nwarnings;
        layout->warnings_omitted =
            cJSON_GetObjectItemCaseSensitive(root, "warningsOmitted") != NULL;
    }
done:
    free(in.units);
    free(in.tallies);
    rd_docs_free(docs);
    return error;
}

int rd_record_parse(struct rd_record *out, const char *text, size_t len, struct rc_arena *a,
                    struct rc_err *err)
{
    return rd_record_read(out, text, len, NULL, NULL, NULL, a, err);
}

/* ==== The binary form (rd_record_pack) ====
 *
 * Format (numbers are rd_varint, unsigned LEB128):
 *   str        0 for NULL; 2 x len + 1, then len bytes (no NUL inside): a new string, the
 *              next entry of the string table; 2 x k + 2: entry k of that table (a record
 *              repeats policies, digests, clusters, reasons and details unit after unit)
 *   record     str source, str render_digest, nunits, unit...
 *   unit       str unit, str policy, str policy_digest, nobjects, str..., state,
 *              nclusters, str..., shares (0, or 1 and a percent per cluster), str reason,
 *              str cause, nverdicts, verdict..., omitted, count[0..3]
 *   verdict    str cluster, kind, str detail, nodes_added
 * A string read back from the table is shared: the record's strings are read-only.
 */

#define RECENT 1024

struct packer {
    struct rc_buf *out;
    const char **slot; /* open addressing: the strings written, by content */
    size_t *index;     /* their table entries */
    size_t cap, n;
    /* by address, the strings written last: a record made from a result shares its
     * policies', clusters' and digests' strings, found here without hashing them */
    struct {
        const char *s;
        size_t index;
    } recent[RECENT];
    unsigned char chunk[1 << 16]; /* bytes not yet added to out */
    size_t used;
};

static void put_flush(struct packer *pk)
{
    rc_buf_add(pk->out, pk->chunk, pk->used, NULL);
    pk->used = 0;
}

static void put_bytes(struct packer *pk, const void *p, size_t n)
{
    if (pk->used + n > sizeof(pk->chunk)) {
        put_flush(pk);
        if (n > sizeof(pk->chunk)) {
            rc_buf_add(pk->out, p, n, NULL);
            return;
        }
    }
    memcpy(pk->chunk + pk->used, p, n);
    pk->used += n;
}

static void put_num(struct packer *pk, size_t v)
{
    if (pk->used + RD_VARINT_MAX > sizeof(pk->chunk))
        put_flush(pk);
    pk->used = (size_t)(rd_varint_put(pk->chunk + pk->used, v) - pk->chunk);
}

static void put_str(struct packer *pk, const char *s)
{
    size_t n, h, r;

    if (!s) {
        put_num(pk, 0);
        return;
    }
    r = ((uintptr_t)s >> 3) % RECENT;
    if (pk->recent[r].s == s) {
        put_num(pk, 2 * pk->recent[r].index + 2);
        return;
    }
    n = strlen(s);
    if (2 * (pk->n + 1) > pk->cap) {
        size_t ncap = pk->cap ? 2 * pk->cap : 1024;
        const char **ns = rc_xcalloc(ncap, sizeof(*ns));
        size_t *ni = rc_xcalloc(ncap, sizeof(*ni));
        for (size_t i = 0; i < pk->cap; i++) {
            if (!pk->slot[i])
                continue;
            h = (size_t)rc_fnv1a(RC_FNV_INIT, pk->slot[i], strlen(pk->slot[i])) & (ncap - 1);
            while (ns[h])
                h = (h + 1) & (ncap - 1);
            ns[h] = pk->slot[i];
            ni[h] = pk->index[i];
        }
        free(pk->slot);
        free(pk->index);
        pk->slot = ns;
        pk->index = ni;
        pk->cap = ncap;
    }
    h = (size_t)rc_fnv1a(RC_FNV_INIT, s, n) & (pk->cap - 1);
    for (; pk->slot[h]; h = (h + 1) & (pk->cap - 1)) {
        if (!strcmp(pk->slot[h], s)) {
            pk->recent[r].s = s;
            pk->recent[r].index = pk->index[h];
            put_num(pk, 2 * pk->index[h] + 2);
            return;
        }
    }
    pk->slot[h] = s;
    pk->index[h] = pk->n++;
    pk->recent[r].s = s;
    pk->recent[r].index = pk->index[h];
    put_num(pk, 2 * n + 1);
    put_bytes(pk, s, n);
}

void rd_record_pack(struct rc_buf *out, const struct rd_record *r)
{
    struct packer *pk = rc_xcalloc(1, sizeof(*pk));

    pk->out = out;

    put_str(pk, r->source ? r->source : "");
    put_str(pk, r->render_digest);
    put_num(pk, r->nunits);
    for (size_t i = 0; i < r->nunits; i++) {
        const struct pl_prev_unit *u = &r->units[i];
        struct rd_verdict_tally t;
        put_str(pk, u->unit);
        put_str(pk, u->policy);
        put_str(pk, u->policy_digest);
        put_num(pk, u->nobjects);
        for (size_t k = 0; k < u->nobjects; k++)
            put_str(pk, u->objects[k]);
        put_num(pk, (size_t)u->state);
        put_num(pk, u->nclusters);
        for (size_t k = 0; k < u->nclusters; k++)
            put_str(pk, u->clusters[k]);
        put_num(pk, u->percents ? 1 : 0);
        for (size_t k = 0; u->percents && k < u->nclusters; k++)
            put_num(pk, (size_t)u->percents[k]);
        put_str(pk, u->reason);
        put_str(pk, u->cause);
        put_num(pk, u->nverdicts);
        for (size_t k = 0; k < u->nverdicts; k++) {
            const struct pl_verdict *v = &u->verdicts[k];
            put_str(pk, v->cluster);
            put_num(pk, (size_t)v->kind);
            put_str(pk, v->detail);
            put_num(pk, v->nodes_added > 0 ? (size_t)v->nodes_added : 0);
        }
        if (r->tallies)
            t = r->tallies[i];
        else
            memset(&t, 0, sizeof(t));
        put_num(pk, t.omitted);
        for (int k = 0; k < 4; k++)
            put_num(pk, t.count[k]);
    }
    put_flush(pk);
    free(pk->slot);
    free(pk->index);
    free(pk);
}

struct unpacker {
    const unsigned char *p, *end;
    struct rc_arena *a;
    int bad;
    const char **tab; /* the string table */
    size_t ntab, captab;
};

static size_t get_num(struct unpacker *u)
{
    size_t v = 0;

    if (!u->bad && rd_varint_get(&u->p, u->end, &v) < 0)
        u->bad = 1;
    return u->bad ? 0 : v;
}

/* A count of items that take at least one byte each: never more than the bytes left. */
static size_t get_count(struct unpacker *u)
{
    size_t n = get_num(u);

    if (n > (size_t)(u->end - u->p))
        u->bad = 1;
    return u->bad ? 0 : n;
}

static const char *get_str(struct unpacker *u, int required)
{
    size_t v = get_num(u), n;
    char *s;

    if (u->bad || (v == 0 && required)) {
        u->bad = 1;
        return NULL;
    }
    if (v == 0)
        return NULL;
    if (v % 2 == 0) {
        if (v / 2 - 1 >= u->ntab) {
            u->bad = 1;
            return NULL;
        }
        return u->tab[v / 2 - 1];
    }
    n = v / 2;
    if (n > (size_t)(u->end - u->p) || memchr(u->p, '\0', n)) {
        u->bad = 1;
        return NULL;
    }
    s = rc_arena_alloc(u->a, n + 1);
    memcpy(s, u->p, n);
    s[n] = '\0';
    u->p += n;
    u->tab = rc_xgrow(u->tab, &u->captab, u->ntab + 1, sizeof(*u->tab));
    u->tab[u->ntab++] = s;
    return s;
}

static const char **get_strs(struct unpacker *u, size_t *n)
{
    const char **v;

    *n = get_count(u);
    v = rc_arena_calloc(u->a, *n + 1, sizeof(*v));
    for (size_t i = 0; i < *n && !u->bad; i++)
        v[i] = get_str(u, 1);
    return v;
}

/* One unit, with what rd_record_parse would refuse or never give refused. */
static void get_unit(struct unpacker *in, struct pl_prev_unit *u, struct rd_verdict_tally *t)
{
    size_t state, n;

    u->unit = get_str(in, 1);
    u->policy = get_str(in, 0);
    u->policy_digest = get_str(in, 0);
    u->objects = get_strs(in, &u->nobjects);
    state = get_num(in);
    if (state > PL_STATE_UNPLACED)
        in->bad = 1;
    u->state = (enum pl_state)state;
    u->clusters = get_strs(in, &u->nclusters);
    if (u->state == PL_STATE_PLACED && u->nclusters == 0)
        in->bad = 1;
    n = get_num(in); /* shares: as the YAML gives them, for a placed unit with clusters */
    if (n > 1 || (n == 1 && u->nclusters == 0))
        in->bad = 1;
    if (n == 1 && !in->bad) {
        int64_t *pc = rc_arena_calloc(in->a, u->nclusters + 1, sizeof(*pc));
        for (size_t k = 0; k < u->nclusters; k++) {
            size_t v = get_num(in);
            if (v > 100)
                in->bad = 1;
            pc[k] = (int64_t)v;
        }
        u->percents = pc;
    }
    u->reason = get_str(in, 0);
    u->cause = get_str(in, 0);
    n = get_count(in);
    u->verdicts = rc_arena_calloc(in->a, n + 1, sizeof(*u->verdicts));
    for (size_t k = 0; k < n && !in->bad; k++) {
        struct pl_verdict *v = &u->verdicts[k];
        size_t kind, added;
        v->cluster = get_str(in, 1);
        kind = get_num(in);
        if (kind > PL_VERDICT_UNREACHABLE)
            in->bad = 1;
        v->kind = (enum pl_verdict_kind)kind;
        v->detail = get_str(in, 0);
        added = get_num(in);
        if ((double)added >= 1e15)
            in->bad = 1;
        v->nodes_added = (int64_t)added;
    }
    u->nverdicts = n;
    t->omitted = get_num(in);
    for (int k = 0; k < 4; k++) {
        t->count[k] = get_num(in);
        if ((double)t->count[k] >= 1e12 || (t->omitted == 0 && t->count[k]))
            in->bad = 1;
    }
    if ((double)t->omitted > 1e12)
        in->bad = 1;
}

int rd_record_unpack(struct rd_record *out, const unsigned char *data, size_t len,
                     struct rc_arena *a, struct rc_err *err)
{
    struct unpacker in = {data, data + len, a, 0, NULL, 0, 0};
    struct rd_record r;
    int error;

    memset(&r, 0, sizeof(r));
    r.source = get_str(&in, 1);
    r.render_digest = get_str(&in, 0);
    r.nunits = get_count(&in);
    r.units = rc_arena_calloc(a, r.nunits + 1, sizeof(*r.units));
    r.tallies = rc_arena_calloc(a, r.nunits + 1, sizeof(*r.tallies));
    for (size_t i = 0; i < r.nunits && !in.bad; i++)
        get_unit(&in, &r.units[i], &r.tallies[i]);
    free(in.tab);
    if (in.bad || in.p != in.end)
        return rc_err_set(err, RC_EINVALID, "packed record: not what rd_record_pack writes");
    error = check_unique(&r, a, err);
    if (error < 0)
        return error;
    *out = r;
    return 0;
}

/* ==== A record packed by shard (rd_record_pack_shard) ====
 *
 * A shard:  u64 P, P bytes of rd_record_pack (source "", no render digest, the shard's units
 *           in order), u64 K (0, or the units: their key digests follow), K x (u32 name
 *           length, name, u64 kd[0], u64 kd[1]) as rd_record_memo_export writes a unit
 * A head:   u64 P, P bytes of rd_record_pack (no units), then what rd_record_memo_export
 *           writes of the memo with its units left out (nothing: no memo)
 */

void rd_record_pack_shard(struct rc_buf *out, const struct rd_record *r,
                          const struct rd_record_memo *memo, const size_t *which, size_t n)
{
    struct rd_record sub = {"", NULL, n, NULL, NULL};
    unsigned char num[8] = {0};
    size_t at = out->len;
    int digests = memo && memo->nunits == r->nunits;

    sub.units = rc_xcalloc(n + 1, sizeof(*sub.units));
    sub.tallies = rc_xcalloc(n + 1, sizeof(*sub.tallies));
    for (size_t i = 0; i < n; i++) {
        sub.units[i] = r->units[which[i]];
        if (r->tallies)
            sub.tallies[i] = r->tallies[which[i]];
        digests = digests && !strcmp(memo->units[which[i]].unit, r->units[which[i]].unit);
    }
    rc_buf_add(out, num, 8, NULL);
    rd_record_pack(out, &sub);
    rc_le64_put((unsigned char *)out->ptr + at, out->len - at - 8);
    rc_le64_put(num, digests ? n : 0);
    rc_buf_add(out, num, 8, NULL);
    for (size_t i = 0; digests && i < n; i++)
        memo_export_unit(memo, which[i], out);
    free(sub.units);
    free(sub.tallies);
}

void rd_record_pack_head(struct rc_buf *out, const struct rd_record *r,
                         const struct rd_record_memo *memo)
{
    struct rd_record head = *r;
    unsigned char num[8] = {0};
    size_t at = out->len;

    head.nunits = 0;
    rc_buf_add(out, num, 8, NULL);
    rd_record_pack(out, &head);
    rc_le64_put((unsigned char *)out->ptr + at, out->len - at - 8);
    if (memo)
        memo_export(memo, out, 0);
}

/* The packed record of p[0..len) as "u64 P, P bytes", *rest after it; -1 when it does not
 * read */
static int unpack_part(struct rd_record *r, const unsigned char **rest, const unsigned char *p,
                       size_t len, struct rc_arena *a, struct rc_err *err)
{
    size_t n;

    if (len < 8 || (n = (size_t)rc_le64_get(p)) > len - 8)
        return -1;
    if (rd_record_unpack(r, p + 8, n, a, err) < 0)
        return -1;
    *rest = p + 8 + n;
    return 0;
}

/* Part p[0..len) ("u64 P, P bytes" of rd_record_pack, then its key digests) unpacked into
 * the joined record's places: its unit i at r->units[at[i]] (n units, as the order says),
 * each unit's key digest at kd[at[i]] (*digests 0 when the part has none); each unit in
 * shard `shard` of nshards. 0, or -1 when it does not read. */
static int unpack_part_at(struct rd_record *r, uint64_t (*kd)[2], int *digests,
                          const unsigned char *p, size_t len, const size_t *at, size_t n,
                          size_t shard, size_t nshards, struct rc_arena *a)
{
    struct unpacker in;
    const unsigned char *end = p + len;
    size_t plen, nd;

    if (len < 8 || (plen = (size_t)rc_le64_get(p)) > len - 8)
        return -1;
    in = (struct unpacker){p + 8, p + 8 + plen, a, 0, NULL, 0, 0};
    (void)get_str(&in, 1);
    (void)get_str(&in, 0);
    if (get_count(&in) != n)
        in.bad = 1;
    for (size_t i = 0; i < n && !in.bad; i++) {
        get_unit(&in, &r->units[at[i]], &r->tallies[at[i]]);
        if (!in.bad && rd_record_shard_of(r->units[at[i]].unit, nshards) != shard)
            in.bad = 1;
    }
    free(in.tab);
    if (in.bad || in.p != in.end)
        return -1;
    p = in.end;
    if (end - p < 8)
        return -1;
    nd = (size_t)rc_le64_get(p);
    p += 8;
    if (nd && nd != n)
        return -1;
    *digests = *digests && nd;
    for (size_t i = 0; i < nd; i++) {
        const char *unit = r->units[at[i]].unit;
        size_t ulen;
        if (end - p < 4)
            return -1;
        ulen = rc_le32_get(p);
        if ((size_t)(end - p) - 4 < ulen || (size_t)(end - p) - 4 - ulen < 16 ||
            strlen(unit) != ulen || memcmp(p + 4, unit, ulen))
            return -1;
        kd[at[i]][0] = rc_le64_get(p + 4 + ulen);
        kd[at[i]][1] = rc_le64_get(p + 12 + ulen);
        p += 20 + ulen;
    }
    return p == end ? 0 : -1;
}

int rd_record_unpack_shards(struct rd_record *out, struct rd_record_memo *memo, int *memo_read,
                            const unsigned char *head, size_t hlen,
                            const unsigned char *const *parts, const size_t *lens,
                            const size_t *index, size_t nparts, size_t nshards,
                            const unsigned char *order, size_t nunits, struct rc_arena *a,
                            struct rc_err *err)
{
    struct rd_record h, r;
    const unsigned char *rest;
    uint64_t(*kd)[2] = NULL;
    size_t mlen, *start = NULL, *at = NULL, *fill = NULL;
    int digests = 1, error = RC_EINVALID;

    if (memo_read)
        *memo_read = 0;
    memset(&r, 0, sizeof(r));
    if (!shard_count_ok(nshards) || nparts > RD_RECORD_SHARDS_MAX ||
        unpack_part(&h, &rest, head, hlen, a, err) < 0 || h.nunits)
        goto bad;
    mlen = hlen - (size_t)(rest - head);
    r.source = h.source;
    r.render_digest = h.render_digest;
    /* where each part's units go: the order names the part of each unit of the record, in
     * order of unit */
    start = rc_xcalloc(nparts + 1, sizeof(*start));
    fill = rc_xcalloc(nparts + 1, sizeof(*fill));
    at = rc_xcalloc(nunits + 1, sizeof(*at));
    for (size_t j = 0; j < nunits; j++) {
        size_t k = (size_t)order[2 * j] | (size_t)order[2 * j + 1] << 8;
        if (k >= nparts)
            goto bad;
        start[k + 1]++;
    }
    for (size_t k = 0; k < nparts; k++)
        start[k + 1] += start[k];
    for (size_t j = 0; j < nunits; j++) {
        size_t k = (size_t)order[2 * j] | (size_t)order[2 * j + 1] << 8;
        at[start[k] + fill[k]++] = j;
    }
    r.nunits = nunits;
    r.units = rc_arena_calloc(a, nunits + 1, sizeof(*r.units));
    r.tallies = rc_arena_calloc(a, nunits + 1, sizeof(*r.tallies));
    kd = rc_xcalloc(nunits + 1, sizeof(*kd));
    for (size_t k = 0; k < nparts; k++) {
        if (index[k] >= nshards || (k && index[k] <= index[k - 1]) || start[k + 1] == start[k] ||
            unpack_part_at(&r, kd, &digests, parts[k], lens[k], at + start[k],
                           start[k + 1] - start[k], index[k], nshards, a) < 0)
            goto bad;
    }
    /* in order of unit, each once: what the order says, checked */
    for (size_t j = 1; j < nunits; j++) {
        if (strcmp(r.units[j - 1].unit, r.units[j].unit) >= 0)
            goto bad;
    }
    /* the memo: as rd_record_memo_export writes it whole, and read back as that is */
    if (memo && mlen && digests) {
        struct rc_buf b = RC_BUF_INIT;
        unsigned char num[8];
        if (mlen < 25)
            goto bad;
        rc_buf_add(&b, rest, 17, NULL);
        rc_le64_put(num, r.nunits);
        rc_buf_add(&b, num, 8, NULL);
        for (size_t i = 0; i < r.nunits; i++) {
            unsigned char n[4], d[16];
            size_t ulen = strlen(r.units[i].unit);
            rc_le32_put(n, (uint32_t)ulen);
            rc_le64_put(d, kd[i][0]);
            rc_le64_put(d + 8, kd[i][1]);
            rc_buf_add(&b, n, 4, NULL);
            rc_buf_add(&b, r.units[i].unit, ulen, NULL);
            rc_buf_add(&b, d, 16, NULL);
        }
        rc_buf_add(&b, rest + 25, mlen - 25, NULL);
        error = rc_le64_get(rest + 17) ? RC_EINVALID : rd_record_memo_import(memo, b.ptr, b.len);
        rc_buf_release(&b);
        if (error < 0)
            goto bad;
        if (memo_read)
            *memo_read = 1;
    }
    *out = r;
    error = 0;
    goto done;
bad:
    error = rc_err_set(err, RC_EINVALID, "packed record in shards: not what was packed");
done:
    free(start);
    free(fill);
    free(at);
    free(kd);
    return error;
}

void rd_record_pack_order(struct rc_buf *out, const struct rd_record *r, size_t nshards)
{
    size_t *part = rc_xcalloc(nshards + 1, sizeof(*part)), *sh, n = 0;

    sh = rc_xcalloc(r->nunits + 1, sizeof(*sh));
    for (size_t i = 0; i < r->nunits; i++)
        part[sh[i] = rd_record_shard_of(r->units[i].unit, nshards)] = 1;
    for (size_t k = 0; k < nshards; k++) {
        size_t used = part[k];
        part[k] = n;
        n += used;
    }
    for (size_t i = 0; i < r->nunits; i++) {
        unsigned char b[2] = {(unsigned char)(part[sh[i]] & 0xff),
                              (unsigned char)(part[sh[i]] >> 8)};
        rc_buf_add(out, b, 2, NULL);
    }
    free(part);
    free(sh);
}
