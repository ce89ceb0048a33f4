/*
 * rc_apply_diff.c - `rightplace diff`: the deploy branch against the live clusters, by
 * server-side dry-run (see rc_apply.h, rc_apply_diff).
 */
#include <stdlib.h>
#include <string.h>

#include "rc_apply.h"
#include "rc_git.h"
#include "rc_kube.h"
#include "rc_mem.h"
#include "rd_yaml.h"

#include "rc_banned.h"

/* Lines of the LCS table beyond which a diff is shown as all removed then all added. */
#define DIFF_MAX_CELLS ((size_t)4 << 20)

/* What kubectl diff leaves out: fields the server owns and changes on every write. */
static void strip(cJSON *o)
{
    static const char *const fields[] = {"managedFields", "resourceVersion", "generation", "uid",
                                         "creationTimestamp"};
    cJSON *md = cJSON_GetObjectItemCaseSensitive(o, "metadata");

    for (size_t i = 0; md && i < sizeof(fields) / sizeof(*fields); i++)
        cJSON_DeleteItemFromObjectCaseSensitive(md, fields[i]);
}

struct lines {
    const char **v;
    size_t *len;
    size_t n;
};

static void split_lines(struct lines *l, const char *text)
{
    size_t cap = 0;

    memset(l, 0, sizeof(*l));
    for (const char *p = text; p && *p;) {
        const char *eol = strchr(p, '\n');
        size_t n = eol ? (size_t)(eol - p) : strlen(p);
        size_t cap2 = cap;

        l->v = rc_xgrow(l->v, &cap, l->n + 1, sizeof(*l->v));
        l->len = rc_xgrow(l->len, &cap2, l->n + 1, sizeof(*l->len));
        l->v[l->n] = p;
        l->len[l->n++] = n;
        p = eol ? eol + 1 : p + n;
    }
}

static int same_line(const struct lines *x, size_t i, const struct lines *y, size_t j)
{
    return x->len[i] == y->len[j] && !memcmp(x->v[i], y->v[j], x->len[i]);
}

static int put_line(struct rc_buf *out, char mark, const char *p, size_t n, struct rc_err *err)
{
    int rc = rc_buf_putc(out, mark, err);

    if (rc == RC_OK)
        rc = rc_buf_add(out, p, n, err);
    if (rc == RC_OK)
        rc = rc_buf_putc(out, '\n', err);
    return rc;
}

/* One unified diff of a (live) and b (merged), the whole object as one hunk. */
static int unified(struct rc_buf *out, const char *name, const char *a, const char *b,
                   struct rc_err *err)
{
    struct lines x, y;
    size_t *t = NULL, i = 0, j = 0;
    int rc;

    split_lines(&x, a);
    split_lines(&y, b);
    rc = rc_buf_printf(out, err, "diff -u -N live/%s merged/%s\n--- live/%s\n+++ merged/%s\n", name,
                       name, name, name);
    if (rc == RC_OK)
        rc = rc_buf_printf(out, err, "@@ -%zu,%zu +%zu,%zu @@\n", x.n ? (size_t)1 : 0, x.n,
                           y.n ? (size_t)1 : 0, y.n);
    if (rc == RC_OK && (x.n + 1) * (y.n + 1) <= DIFF_MAX_CELLS) {
        /* t[i][j]: length of the longest common subsequence of x[i..] and y[j..] */
        size_t w = y.n + 1;

        t = rc_xcalloc((x.n + 1) * w, sizeof(*t));
        for (size_t p = x.n; p-- > 0;)
            for (size_t q = y.n; q-- > 0;)
                t[p * w + q] = same_line(&x, p, &y, q)
                                   ? t[(p + 1) * w + q + 1] + 1
                                   : (t[(p + 1) * w + q] >= t[p * w + q + 1] ? t[(p + 1) * w + q]
                                                                             : t[p * w + q + 1]);
        while (rc == RC_OK && (i < x.n || j < y.n)) {
            if (i < x.n && j < y.n && same_line(&x, i, &y, j)) {
                rc = put_line(out, ' ', x.v[i], x.len[i], err);
                i++;
                j++;
            } else if (i < x.n && (j == y.n || t[(i + 1) * w + j] >= t[i * w + j + 1])) {
                rc = put_line(out, '-', x.v[i], x.len[i], err); /* removals first, as diff -u */
                i++;
            } else {
                rc = put_line(out, '+', y.v[j], y.len[j], err);
                j++;
            }
        }
    } else {
        for (; rc == RC_OK && i < x.n; i++)
            rc = put_line(out, '-', x.v[i], x.len[i], err);
        for (; rc == RC_OK && j < y.n; j++)
            rc = put_line(out, '+', y.v[j], y.len[j], err);
    }
    free(t);
    free(x.v);
    free(x.len);
    free(y.v);
    free(y.len);
    return rc;
}

/* Compare one object; *differs set when it drifted. */
static int diff_one(struct rc_buf *out, int *differs, struct rc_kube *k, const char *cluster,
                    const struct rc_apply_op *op, struct rc_err *err)
{
    struct rc_buf lb = RC_BUF_INIT, mb = RC_BUF_INIT;
    cJSON *live = NULL, *merged = NULL;
    int rc;

    *differs = 0;
    rc = rc_kube_get(k, op->api_version, op->kind, op->ns, op->name, &live, err);
    if (rc < 0 && rc != RC_ENOTFOUND)
        goto done;
    rc = rc_kube_apply_ex(k, op->obj, RC_APPLY_FIELD_MANAGER,
                          RC_KUBE_APPLY_FORCE | RC_KUBE_APPLY_DRY_RUN, &merged, err);
    if (rc < 0)
        goto done;
    if (live)
        strip(live);
    strip(merged);
    if ((live && (rc = rd_yaml_emit(&lb, live, err)) < 0) ||
        (rc = rd_yaml_emit(&mb, merged, err)) < 0)
        goto done;
    if (live && lb.len == mb.len && !memcmp(lb.ptr, mb.ptr, lb.len))
        goto done;
    *differs = 1;
    /* kubectl diff names files <group>.<version>.<Kind>.<namespace>.<name> */
    {
        struct rc_buf nb = RC_BUF_INIT;
        rc_buf_printf(&nb, NULL, "%s/%s.%s.%s%s%s", cluster, op->api_version, op->kind,
                      op->ns ? op->ns : "", op->ns ? "." : "", op->name);
        for (char *p = nb.ptr; p && *p; p++)
            if (p > nb.ptr + strlen(cluster) && *p == '/')
                *p = '.';
        rc = unified(out, nb.ptr, live ? lb.ptr : "", mb.ptr, err);
        rc_buf_release(&nb);
    }
done:
    cJSON_Delete(live);
    cJSON_Delete(merged);
    rc_buf_release(&lb);
    rc_buf_release(&mb);
    return rc;
}

int rc_apply_diff(struct rc_buf *out, size_t *drift, size_t *failed, struct rc_git *g,
                  const char *deploy, const struct rd_cluster_conn *conns, size_t nconns,
                  const struct rc_kube_options *ko, const struct rc_log *log, struct rc_arena *a,
                  struct rc_err *err)
{
    struct rc_kube_options defaults = RC_KUBE_OPTIONS_INIT;
    int rc = RC_OK;

    *drift = 0;
    *failed = 0;
    for (size_t c = 0; c < nconns; c++) {
        struct rc_apply_plan plan;
        struct rc_git_blob *b = NULL;
        struct rc_apply_file *f;
        struct rc_kube *k = NULL;
        size_t ngvs = 0;
        const char *const *gvs;
        struct rc_err cerr = RC_ERR_INIT;
        char prefix[300];
        size_t nb = 0;

        if (!conns[c].live)
            continue;
        snprintf(prefix, sizeof(prefix), "clusters/%s/", conns[c].name);
        if ((rc = rc_git_read_tree(&b, &nb, g, deploy, prefix, a, err)) < 0)
            return rc;
        f = rc_arena_calloc(a, nb + 1, sizeof(*f));
        for (size_t i = 0; i < nb; i++) {
            f[i].path = b[i].path;
            f[i].data = b[i].data;
            f[i].len = b[i].len;
        }
        if ((rc = rc_apply_plan_make(&plan, NULL, 0, f, nb, 1, a, err)) < 0)
            return rc;
        gvs = rc_apply_plan_api_versions(&plan, &ngvs, a);
        if (rc_kube_open_conn(&k, &conns[c], ko ? ko : &defaults, &cerr) < 0 ||
            rc_kube_prepare(k, gvs, ngvs, &cerr) < 0) {
            (*failed)++;
            if (log)
                rc_log_warn(log, "cluster '%s': not compared: %s", conns[c].name, cerr.msg);
            rc_kube_free(k);
            rc_apply_plan_release(&plan);
            continue;
        }
        for (size_t i = 0; i < plan.napply; i++) {
            int differs = 0;

            rc_err_clear(&cerr);
            if (diff_one(out, &differs, k, conns[c].name, &plan.apply[i], &cerr) < 0) {
                (*failed)++;
                if (log)
                    rc_log_warn(log, "cluster '%s': '%s' not compared: %s", conns[c].name,
                                plan.apply[i].key, cerr.msg);
                if (rc_kube_last_status(k) == 0)
                    break; /* no answer: the rest would not be compared either */
                continue;
            }
            *drift += (size_t)differs;
        }
        rc_kube_free(k);
        rc_apply_plan_release(&plan);
    }
    return RC_OK;
}
