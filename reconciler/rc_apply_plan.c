/*
 * rc_apply_plan.c - what to apply and delete on one cluster, and the note that reports it
 * (see rc_apply.h). Pure: no git, no network.
 */
#include <stdlib.h>
#include <string.h>

#include "rc_sort.h"
#include "rc_apply.h"
#include "rc_mem.h"
#include "rd_yaml.h"

#include "rc_banned.h"

static int is_manifest(const char *path)
{
    const char *base = strrchr(path, '/');
    size_t n = strlen(path);

    base = base ? base + 1 : path;
    if (!strcmp(base, "kustomization.yaml") || !strcmp(base, "kustomization.yml"))
        return 0;
    return (n > 5 && !strcmp(path + n - 5, ".yaml")) || (n > 4 && !strcmp(path + n - 4, ".yml"));
}

static const char *str_at(const cJSON *o, const char *name)
{
    const cJSON *v = cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, name) : NULL;
    return cJSON_IsString(v) && *v->valuestring ? v->valuestring : NULL;
}

/* Parse one file into op (obj kept when keep_obj). */
static int read_op(struct rc_apply_op *op, const struct rc_apply_file *f, int keep_obj,
                   struct rc_arena *a, struct rc_err *err)
{
    struct rd_yaml_limits limits = RD_YAML_LIMITS_INIT;
    struct rd_docs *docs = NULL;
    const cJSON *md;
    const char *group_end;
    cJSON *root;
    int rc;

    memset(op, 0, sizeof(*op));
    op->path = f->path;
    if ((rc = rd_yaml_load(&docs, f->path, f->data, f->len, &limits, NULL, err)) < 0)
        return rc;
    if (rd_docs_count(docs) != 1) {
        rc = rc_err_set(err, RC_EINVALID, "%s: holds %zu objects, not one", f->path,
                        rd_docs_count(docs));
        rd_docs_free(docs);
        return rc;
    }
    root = rd_docs_take(docs, 0);
    rd_docs_free(docs);
    md = cJSON_GetObjectItemCaseSensitive(root, "metadata");
    op->api_version = str_at(root, "apiVersion");
    op->kind = str_at(root, "kind");
    op->name = str_at(md, "name");
    op->ns = str_at(md, "namespace");
    if (!op->api_version || !op->kind || !op->name) {
        cJSON_Delete(root);
        return rc_err_set(err, RC_EINVALID, "%s: needs apiVersion, kind and metadata.name",
                          f->path);
    }
    op->api_version = rc_arena_strdup(a, op->api_version);
    op->kind = rc_arena_strdup(a, op->kind);
    op->name = rc_arena_strdup(a, op->name);
    op->ns = op->ns ? rc_arena_strdup(a, op->ns) : NULL;
    op->key = op->ns ? rc_arena_printf(a, "%s/%s/%s", op->ns, op->kind, op->name)
                     : rc_arena_printf(a, "%s/%s", op->kind, op->name);
    group_end = strchr(op->api_version, '/');
    if (!strcmp(op->api_version, "v1") && !strcmp(op->kind, "Namespace"))
        op->stage = RC_APPLY_STAGE_NAMESPACE;
    else if (group_end && !strncmp(op->api_version, "apiextensions.k8s.io/", 21) &&
             !strcmp(op->kind, "CustomResourceDefinition"))
        op->stage = RC_APPLY_STAGE_CRD;
    else
        op->stage = RC_APPLY_STAGE_REST;
    if (keep_obj)
        op->obj = root;
    else
        cJSON_Delete(root);
    return RC_OK;
}

static int cmp_apply(const void *x, const void *y)
{
    const struct rc_apply_op *p = x, *q = y;
    if (p->stage != q->stage)
        return p->stage < q->stage ? -1 : 1;
    return strcmp(p->path, q->path);
}

static int cmp_delete(const void *x, const void *y)
{
    const struct rc_apply_op *p = x, *q = y;
    if (p->stage != q->stage)
        return p->stage > q->stage ? -1 : 1;
    return strcmp(p->path, q->path);
}

int rc_apply_plan_make(struct rc_apply_plan *out, const struct rc_apply_file *old, size_t nold,
                       const struct rc_apply_file *new_files, size_t nnew, int resync,
                       struct rc_arena *a, struct rc_err *err)
{
    size_t i = 0, j = 0;
    int rc = RC_OK;

    memset(out, 0, sizeof(*out));
    out->apply = rc_arena_calloc(a, nnew + 1, sizeof(*out->apply));
    out->del = rc_arena_calloc(a, nold + 1, sizeof(*out->del));
    while (i < nold || j < nnew) {
        int c = i == nold ? 1 : j == nnew ? -1 : strcmp(old[i].path, new_files[j].path);

        if (c < 0) { /* removed */
            if (is_manifest(old[i].path)) {
                struct rc_err ignored = RC_ERR_INIT;
                if (read_op(&out->del[out->ndelete], &old[i], 0, a, &ignored) == RC_OK)
                    out->ndelete++;
            }
            i++;
            continue;
        }
        if (c == 0) {
            int same = old[i].len == new_files[j].len &&
                       !memcmp(old[i].data, new_files[j].data, old[i].len);
            i++;
            if (same && !resync) {
                j++;
                continue;
            }
        }
        if (is_manifest(new_files[j].path)) {
            if ((rc = read_op(&out->apply[out->napply], &new_files[j], 1, a, err)) < 0)
                goto fail;
            out->napply++;
        }
        j++;
    }
    rc_sort(out->apply, out->napply, sizeof(*out->apply), cmp_apply);
    rc_sort(out->del, out->ndelete, sizeof(*out->del), cmp_delete);
    return RC_OK;
fail:
    rc_apply_plan_release(out);
    return rc;
}

void rc_apply_plan_release(struct rc_apply_plan *p)
{
    for (size_t i = 0; i < p->napply; i++) {
        cJSON_Delete(p->apply[i].obj);
        p->apply[i].obj = NULL;
    }
    p->napply = 0;
    p->ndelete = 0;
}

/* ==== The note ==== */

int rc_apply_note_format(struct rc_buf *out, const char *deploy,
                         const struct rc_apply_result *results, size_t n, struct rc_err *err)
{
    int rc = rc_buf_printf(out, err, "rightplace apply %s\n\n", deploy);

    for (size_t i = 0; rc == RC_OK && i < n; i++) {
        const struct rc_apply_result *r = &results[i];

        switch (r->outcome) {
        case RC_APPLY_UP_TO_DATE:
            rc = rc_buf_printf(out, err, "cluster %s: up to date\n", r->cluster);
            break;
        case RC_APPLY_DONE:
            rc = rc_buf_printf(out, err, "cluster %s: applied %zu, deleted %zu", r->cluster,
                               r->applied, r->deleted);
            break;
        case RC_APPLY_FAILED:
            rc = rc_buf_printf(out, err,
                               "cluster %s: incomplete: applied %zu, failed %zu, deleted %zu",
                               r->cluster, r->applied, r->nfailures, r->deleted);
            break;
        case RC_APPLY_UNREACHABLE:
        case RC_APPLY_STOPPED:
            rc = rc_buf_printf(out, err, "cluster %s: %s: %s; applied %zu, deleted %zu", r->cluster,
                               r->outcome == RC_APPLY_UNREACHABLE ? "unreachable" : "stopped",
                               r->why ? r->why : "unknown", r->applied, r->deleted);
            break;
        }
        if (rc == RC_OK && r->outcome != RC_APPLY_UP_TO_DATE) {
            if (r->kept)
                rc = rc_buf_printf(out, err, ", kept %zu not managed by rightplace", r->kept);
            if (rc == RC_OK && r->outcome == RC_APPLY_DONE && r->why)
                rc = rc_buf_printf(out, err, "; %s", r->why);
            if (rc == RC_OK)
                rc = rc_buf_puts(out, "\n", err);
        }
        for (size_t f = 0; rc == RC_OK && f < r->nfailures; f++)
            rc = rc_buf_printf(out, err, "  failed: %s: %s\n", r->failures[f].what,
                               r->failures[f].msg);
    }
    return rc;
}

/* ==== Merging notes ==== */

struct block {
    const char *name; /* cluster name (not NUL-terminated: nlen) */
    size_t nlen;
    const char *text; /* the block's lines */
    size_t len;
    int up_to_date;
};

struct blocks {
    const char *head; /* text before the first block */
    size_t head_len;
    struct block *v;
    size_t n;
};

static int is_block_start(const char *line)
{
    return !strncmp(line, "cluster ", 8);
}

/* Split a note into its head and cluster blocks (v: calloc'd, caller frees). */
static void split_note(struct blocks *b, const char *text)
{
    const char *p = text;
    size_t cap = 0;

    memset(b, 0, sizeof(*b));
    b->head = text;
    while (*p) {
        const char *eol = strchr(p, '\n');
        const char *next = eol ? eol + 1 : p + strlen(p);

        if (is_block_start(p)) {
            struct block *bl;
            const char *colon = strstr(p + 8, ": ");

            b->v = rc_xgrow(b->v, &cap, b->n + 1, sizeof(*b->v));
            bl = &b->v[b->n++];
            memset(bl, 0, sizeof(*bl));
            bl->name = p + 8;
            bl->nlen = colon && colon < next ? (size_t)(colon - bl->name) : 0;
            bl->text = p;
            bl->up_to_date = colon && colon < next && !strncmp(colon, ": up to date", 12);
        } else if (b->n == 0) {
            b->head_len = (size_t)(next - text);
        }
        if (b->n)
            b->v[b->n - 1].len = (size_t)(next - b->v[b->n - 1].text);
        p = next;
    }
}

static struct block *find_block(struct blocks *b, const struct block *x)
{
    for (size_t i = 0; i < b->n; i++) {
        if (b->v[i].nlen == x->nlen && !memcmp(b->v[i].name, x->name, x->nlen))
            return &b->v[i];
    }
    return NULL;
}

static int put_block(struct rc_buf *out, const struct block *bl, struct rc_err *err)
{
    int rc = rc_buf_add(out, bl->text, bl->len, err);

    if (rc == RC_OK && bl->len && bl->text[bl->len - 1] != '\n')
        rc = rc_buf_putc(out, '\n', err);
    return rc;
}

int rc_apply_note_merge(struct rc_buf *out, const char *existing, const char *ours,
                        struct rc_err *err)
{
    struct blocks e, o;
    int rc = RC_OK;

    if (!existing || !*existing)
        return rc_buf_puts(out, ours, err);
    split_note(&e, existing);
    split_note(&o, ours);
    if (e.n || e.head_len)
        rc = rc_buf_add(out, e.head, e.head_len, err);
    else
        rc = rc_buf_add(out, o.head, o.head_len, err);
    for (size_t i = 0; rc == RC_OK && i < e.n; i++) {
        const struct block *mine = e.v[i].nlen ? find_block(&o, &e.v[i]) : NULL;

        rc = put_block(out, mine && !mine->up_to_date ? mine : &e.v[i], err);
    }
    for (size_t i = 0; rc == RC_OK && i < o.n; i++) {
        if (!o.v[i].nlen || !find_block(&e, &o.v[i]))
            rc = put_block(out, &o.v[i], err);
    }
    free(e.v);
    free(o.v);
    return rc;
}

const char *const *rc_apply_plan_api_versions(const struct rc_apply_plan *p, size_t *n,
                                              struct rc_arena *a)
{
    const char **gvs = rc_arena_calloc(a, p->napply + p->ndelete + 1, sizeof(*gvs));

    *n = 0;
    for (size_t i = 0; i < p->napply + p->ndelete; i++) {
        const struct rc_apply_op *op = i < p->napply ? &p->apply[i] : &p->del[i - p->napply];
        size_t k = 0;

        while (k < *n && strcmp(gvs[k], op->api_version))
            k++;
        if (k == *n)
            gvs[(*n)++] = op->api_version;
    }
    return gvs;
}
