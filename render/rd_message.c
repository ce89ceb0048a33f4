/*
 * rd_message.c - the deploy commit's message, for a reviewer reading `git log`:
 *
 *   place rayjob3/rayjob-train on dynamic-cluster          <- what moved (<= 72 columns)
 *
 *   place rayjob3/rayjob-train on dynamic-cluster          <- one paragraph per changed unit
 *     unit: rayjob-capacity-policy/rayjob3/rayjob (policy rayjob-capacity-policy)
 *     objects: rayjob3/RayJob/rayjob-train, rayjob3/ConfigMap/code
 *     reason: no cluster fits now; dynamic-cluster's autoscaler (luna) can add 2 nodes
 *     static-cluster: does-not-fit: worker needs nvidia.com/gpu 1; best node has 0
 *     dynamic-cluster: fits-after-scale-up: ... (2 nodes to add)
 *
 *   update ml/train on gpu-east: image                    <- content-only changes: the
 *     unit: ...                                              fields of each object that
 *     ml/Deployment/train on gpu-east:                       changed, old -> new for short
 *       spec.template.spec.containers[0].image: a -> b       values (never for Secrets)
 *
 *   repair hand edits on the deploy branch:                <- files someone changed there
 *     clusters/a/ml/deployment.train.yaml
 *
 *   warnings:                                              <- what was ignored or guessed
 *     p.yaml:7:5: spreadConstraints.overrides are ...        (engine's, then the source's)
 *
 *   not loaded, placements kept: a.yaml:3:1: ...         <- source files with errors
 *
 *   Rightplace-Source: <id>                                 <- trailers (git interpret-trailers)
 *   Rightplace-Placed: 1
 *   Rightplace-Pending: 0
 *   Rightplace-Unplaced: 0
 *   Rightplace-Source-Subject: <the source commit's subject>
 *   Rightplace-Source-Author: Name <email>
 *
 * A unit of several objects with no workload among them (a policy's six Namespaces) is
 * titled by count and kind ("6 Namespaces (development, experiments, +4)"), not by one.
 *
 * Body lines are wrapped at 72 columns; continuation lines are indented.
 */
#include "rc_sort.h"
#include "rd_output.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pl_engine.h"
#include "rc_arena.h"
#include "rc_esc.h"
#include "rc_mem.h"
#include "pl_basics.h"
#include "rd_output_internal.h"
#include "rd_source.h"
#include "rd_yaml.h"

#define WIDTH 72
/* a burst of units gets a readable message; the record has all */
#define MAX_PARAGRAPHS RD_MESSAGE_PARAGRAPHS
#define MAX_FIELDS 8    /* changed fields listed per object */
#define MAX_VALUE 60    /* old -> new shown when both are at most this long */
#define MAX_WARNINGS 20 /* warnings listed; placements.yaml has them all */

enum what { W_PLACE, W_MOVE, W_PENDING, W_REMOVE, W_UNPLACED, W_COUNT };

static enum what classify(const struct pl_decision *d)
{
    if (d->change == PL_CHANGE_REMOVED)
        return W_REMOVE;
    if (d->change == PL_CHANGE_MOVED)
        return W_MOVE;
    if (d->state == PL_STATE_PLACED)
        return W_PLACE;
    if (d->state == PL_STATE_PENDING)
        return W_PENDING;
    return W_UNPLACED;
}

static int cmp_decision(const void *x, const void *y)
{
    const struct pl_decision *const *a = x;
    const struct pl_decision *const *b = y;
    return strcmp((*a)->unit, (*b)->unit);
}

static const struct pl_prev_unit *find_prev(const struct pl_prev_unit *prev, size_t nprev,
                                            const char *unit)
{
    for (size_t i = 0; prev && i < nprev; i++) {
        if (!strcmp(prev[i].unit, unit))
            return &prev[i];
    }
    return NULL;
}

static int put_list(struct rc_buf *b, const char *const *v, size_t n, struct rc_err *err)
{
    int error = 0;

    for (size_t i = 0; i < n && !error; i++) {
        if (i > 0)
            error = rc_buf_puts(b, i + 1 == n ? " and " : ", ", err);
        if (!error)
            error = rc_buf_puts(b, v[i], err);
    }
    return error;
}

static int put_targets(struct rc_buf *b, const struct pl_decision *d, struct rc_err *err)
{
    int error = 0;

    for (size_t i = 0; i < d->ntargets && !error; i++) {
        if (i > 0)
            error = rc_buf_puts(b, i + 1 == d->ntargets ? " and " : ", ", err);
        if (!error)
            error = rc_buf_puts(b, d->targets[i].cluster, err);
        if (!error && d->targets[i].percent != 100)
            error = rc_buf_printf(b, err, " (%lld%%)", (long long)d->targets[i].percent);
    }
    return error;
}

/* The kind and name of an object key ("ns/Kind/name" or "Kind/name"). */
static void key_parts(const char *key, const char **kind, size_t *kind_len, const char **name)
{
    const char *s1 = strchr(key, '/');
    const char *s2 = s1 ? strchr(s1 + 1, '/') : NULL;

    if (s2) {
        *kind = s1 + 1;
        *kind_len = (size_t)(s2 - s1 - 1);
        *name = s2 + 1;
    } else if (s1) {
        *kind = key;
        *kind_len = (size_t)(s1 - key);
        *name = s1 + 1;
    } else {
        *kind = "";
        *kind_len = 0;
        *name = key;
    }
}

/* How a unit is named in a headline. Several objects of one kind and no workload among them
 * (a policy's Namespaces) are named by count, with the first names: one of them would
 * misname the unit. Otherwise rd_out_unit_title (the workload). */
static const char *unit_title(const struct pl_decision *d, struct rc_arena *a)
{
    const char *kind0 = NULL, *name;
    size_t klen0 = 0, shown = 0;
    char names[64] = "";
    size_t used = 0;

    if (d->nobjects < 2 || !d->object_keys)
        return rd_out_unit_title(d, a);
    for (size_t i = 0; i < d->nobjects; i++) {
        const char *kind;
        size_t klen;
        if (d->objects && d->objects[i] && d->objects[i]->npods > 0)
            return rd_out_unit_title(d, a);
        key_parts(d->object_keys[i], &kind, &klen, &name);
        if (i == 0) {
            kind0 = kind;
            klen0 = klen;
        } else if (klen != klen0 || strncmp(kind, kind0, klen)) {
            return rd_out_unit_title(d, a);
        }
    }
    for (size_t i = 0; i < d->nobjects; i++) {
        const char *kind;
        size_t klen;
        int n;
        key_parts(d->object_keys[i], &kind, &klen, &name);
        n = snprintf(names + used, sizeof(names) - used, "%s%s", i ? ", " : "", name);
        if (n < 0 || used + (size_t)n >= 40 || used + (size_t)n >= sizeof(names)) {
            names[used] = '\0';
            break;
        }
        used += (size_t)n;
        shown++;
    }
    if (shown == d->nobjects)
        return rc_arena_printf(a, "%zu %.*ss (%s)", d->nobjects, (int)klen0, kind0, names);
    if (shown)
        return rc_arena_printf(a, "%zu %.*ss (%s, +%zu)", d->nobjects, (int)klen0, kind0, names,
                               d->nobjects - shown);
    return rc_arena_printf(a, "%zu %.*ss", d->nobjects, (int)klen0, kind0);
}

/* "place a/b on c", "move a/b from x to y", "pending a/b", "remove a/b", "unplaced a/b" */
static int headline(struct rc_buf *b, const struct pl_decision *d, const struct pl_prev_unit *prev,
                    struct rc_arena *a, struct rc_err *err)
{
    const char *title = unit_title(d, a);
    int error = 0;

    switch (classify(d)) {
    case W_PLACE:
        error = rc_buf_printf(b, err, "place %s on ", title);
        if (!error)
            error = put_targets(b, d, err);
        break;
    case W_MOVE:
        error = rc_buf_printf(b, err, "move %s ", title);
        if (!error && prev && prev->nclusters) {
            error = rc_buf_puts(b, "from ", err);
            if (!error)
                error = put_list(b, prev->clusters, prev->nclusters, err);
            if (!error)
                error = rc_buf_putc(b, ' ', err);
        }
        if (!error)
            error = rc_buf_puts(b, "to ", err);
        if (!error)
            error = put_targets(b, d, err);
        break;
    case W_PENDING:
        error = rc_buf_printf(b, err, "pending %s", title);
        break;
    case W_REMOVE:
        error = rc_buf_printf(b, err, "remove %s", title);
        if (!error && prev && prev->nclusters) {
            error = rc_buf_puts(b, " from ", err);
            if (!error)
                error = put_list(b, prev->clusters, prev->nclusters, err);
        }
        break;
    default:
        error = rc_buf_printf(b, err, "unplaced %s", title);
        break;
    }
    return error;
}

static int is_space(char c)
{
    return c == ' ' || c == '\n' || c == '\t' || c == '\r';
}

/* Append `text` wrapped at WIDTH: the first line starts with `first`, the others with
 * `cont`. Words longer than a line stay whole. Ends with a newline. */
static int put_wrapped(struct rc_buf *b, const char *first, const char *cont, const char *text,
                       struct rc_err *err)
{
    size_t col, i = 0, n = strlen(text);
    int error, fresh = 1;

    error = rc_buf_puts(b, first, err);
    col = strlen(first);
    while (!error && i < n) {
        size_t j;
        while (i < n && is_space(text[i]))
            i++;
        j = i;
        while (j < n && !is_space(text[j]))
            j++;
        if (j == i)
            break;
        if (!fresh && col + 1 + (j - i) > WIDTH) {
            error = rc_buf_putc(b, '\n', err);
            if (!error)
                error = rc_buf_puts(b, cont, err);
            col = strlen(cont);
            fresh = 1;
        }
        if (!error && !fresh) {
            error = rc_buf_putc(b, ' ', err);
            col++;
        }
        if (!error) /* names and messages come from pushers: escaped (rc_esc.h) */
            error = rc_buf_add_esc(b, text + i, j - i, err);
        col += j - i;
        fresh = 0;
        i = j;
    }
    if (!error)
        error = rc_buf_putc(b, '\n', err);
    return error;
}

/* The verdicts that explain the choice, bounded as the record bounds them (rd_output.h), so
 * that a paragraph's size does not depend on the fleet's: the chosen clusters, the preferred
 * ones passed over, and a count by kind of the rest. */
static int put_verdicts(struct rc_buf *out, const struct pl_decision *d, struct rc_err *err)
{
    struct rc_buf line = RC_BUF_INIT;
    unsigned char small[64], *keep = small;
    size_t counts[4], omitted = d->verdicts_omitted;
    int error = 0;

    if (omitted) { /* the engine bounded the list already */
        memcpy(counts, d->verdict_counts, sizeof(counts));
        keep = NULL;
    } else if (d->nverdicts > RD_RECORD_CHOSEN_VERDICTS + RD_RECORD_PASSED_VERDICTS) {
        if (d->nverdicts > sizeof(small))
            keep = rc_xcalloc(d->nverdicts, 1);
        omitted = pl_verdicts_select(keep, counts, d, RD_RECORD_CHOSEN_VERDICTS,
                                     RD_RECORD_PASSED_VERDICTS);
    } else {
        keep = NULL;
    }
    for (size_t i = 0; i < d->nverdicts && !error; i++) {
        const struct pl_verdict *v = &d->verdicts[i];
        if (keep && !keep[i])
            continue;
        if (omitted && (unsigned)v->kind < 4 && counts[v->kind])
            counts[v->kind]--; /* what is left counts the verdicts not listed */
        rc_buf_reset(&line);
        error = rc_buf_printf(&line, err, "%s: %s", v->cluster, pl_verdict_name(v->kind));
        if (!error && v->detail && *v->detail)
            error = rc_buf_printf(&line, err, ": %s", v->detail);
        if (!error && v->nodes_added > 0)
            error = rc_buf_printf(&line, err, " (%lld node%s to add)", (long long)v->nodes_added,
                                  v->nodes_added == 1 ? "" : "s");
        if (!error)
            error = put_wrapped(out, "  ", "    ", line.ptr, err);
    }
    if (!error && omitted) {
        const char *sep = ": ";
        rc_buf_reset(&line);
        error = rc_buf_printf(&line, err, "... and %zu more", omitted);
        for (int k = 0; k < 4 && !error; k++) {
            if (!counts[k])
                continue;
            error = rc_buf_printf(&line, err, "%s%zu %s", sep, counts[k],
                                  pl_verdict_name((enum pl_verdict_kind)k));
            sep = ", ";
        }
        if (!error)
            error = rc_buf_puts(&line, " (rightplace explain lists each)", err);
        if (!error)
            error = put_wrapped(out, "  ", "    ", line.ptr, err);
    }
    if (keep != small)
        free(keep);
    rc_buf_release(&line);
    return error;
}

static int paragraph(struct rc_buf *out, const struct pl_decision *d,
                     const struct pl_prev_unit *prev, struct rc_arena *a, struct rc_err *err)
{
    struct rc_buf line = RC_BUF_INIT;
    int error;

    error = headline(&line, d, prev, a, err);
    if (!error)
        error = put_wrapped(out, "", "  ", line.ptr, err);
    rc_buf_reset(&line);
    if (!error)
        error = rc_buf_printf(&line, err, "unit: %s", d->unit);
    if (!error && d->policy)
        error = rc_buf_printf(&line, err, " (policy %s)", d->policy);
    if (!error)
        error = put_wrapped(out, "  ", "    ", line.ptr, err);
    if (!error && d->nobjects && (d->object_keys || d->objects)) {
        rc_buf_reset(&line);
        error = rc_buf_puts(&line, "objects:", err);
        for (size_t i = 0; i < d->nobjects && !error; i++)
            error = rc_buf_printf(&line, err, "%s %s", i ? "," : "",
                                  d->object_keys ? d->object_keys[i] : d->objects[i]->key);
        if (!error)
            error = put_wrapped(out, "  ", "    ", line.ptr, err);
    }
    if (!error && d->change != PL_CHANGE_REMOVED) {
        rc_buf_reset(&line);
        error = rc_buf_printf(&line, err, "state: %s", pl_state_name(d->state));
        if (!error && d->reason)
            error = rc_buf_printf(&line, err, "; %s", d->reason);
        if (!error)
            error = put_wrapped(out, "  ", "    ", line.ptr, err);
    }
    if (!error && d->cause) {
        rc_buf_reset(&line);
        error = rc_buf_printf(&line, err, "cause: %s", d->cause);
        if (!error)
            error = put_wrapped(out, "  ", "    ", line.ptr, err);
    }
    if (!error)
        error = put_verdicts(out, d, err);
    rc_buf_release(&line);
    return error;
}

/* "place 3 units, move 1, 2 pending" */
static int summary(struct rc_buf *b, const size_t count[W_COUNT], struct rc_err *err)
{
    int error = 0, first = 1;

    for (int w = 0; w < W_COUNT && !error; w++) {
        size_t n = count[w];
        const char *units = !first ? "" : n == 1 ? " unit" : " units";
        if (!n)
            continue;
        if (!first)
            error = rc_buf_puts(b, ", ", err);
        if (error)
            break;
        switch (w) {
        case W_PLACE:
            error = rc_buf_printf(b, err, "place %zu%s", n, units);
            break;
        case W_MOVE:
            error = rc_buf_printf(b, err, "move %zu%s", n, units);
            break;
        case W_PENDING:
            error = rc_buf_printf(b, err, "%zu%s pending", n, units);
            break;
        case W_REMOVE:
            error = rc_buf_printf(b, err, "remove %zu%s", n, units);
            break;
        default:
            error = rc_buf_printf(b, err, "%zu%s unplaced", n, units);
            break;
        }
        first = 0;
    }
    return error;
}

/* The clusters the decisions place on, "a and b" (at most 3), or NULL. */
static const char *targets_of(const struct pl_decision *const *v, size_t n, struct rc_arena *a)
{
    const char *names[3];
    size_t k = 0;

    for (size_t i = 0; i < n; i++) {
        for (size_t t = 0; t < v[i]->ntargets; t++) {
            const char *c = v[i]->targets[t].cluster;
            size_t j;
            for (j = 0; j < k && strcmp(names[j], c); j++)
                ;
            if (j < k)
                continue;
            if (k == 3)
                return NULL;
            names[k++] = c;
        }
    }
    if (!k)
        return NULL;
    /* sorted, for the same bytes whatever the decision order */
    for (size_t i = 1; i < k; i++) {
        for (size_t j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
            const char *t = names[j];
            names[j] = names[j - 1];
            names[j - 1] = t;
        }
    }
    if (k == 1)
        return names[0];
    if (k == 2)
        return rc_arena_printf(a, "%s and %s", names[0], names[1]);
    return rc_arena_printf(a, "%s, %s and %s", names[0], names[1], names[2]);
}

/* ==== Content-only changes ==== */

struct field_diff {
    const char *path;
    const char *old_value, *new_value; /* NULL: not shown */
};

/* One changed deploy file: an object on a cluster. */
struct object_change {
    const struct pl_decision *d; /* its unit's decision; NULL when not found */
    const char *unit;            /* d->unit, or the object key */
    const char *object;
    const char *cluster;
    const char *clusters; /* after merging identical changes on several clusters */
    int secret;           /* values never shown */
    size_t nfields, more;
    struct field_diff fields[MAX_FIELDS];
};

static const char *scalar_text(const cJSON *v, struct rc_arena *a)
{
    char *p;
    const char *r;

    if (cJSON_IsString(v))
        return rc_arena_strdup(a, v->valuestring);
    if (cJSON_IsObject(v) || cJSON_IsArray(v))
        return NULL;
    p = cJSON_PrintUnformatted(v);
    r = p ? rc_arena_strdup(a, p) : NULL;
    cJSON_free(p);
    return r;
}

static void add_field(struct object_change *oc, const char *path, const cJSON *x, const cJSON *y,
                      struct rc_arena *a)
{
    struct field_diff *f;

    if (oc->nfields == MAX_FIELDS) {
        oc->more++;
        return;
    }
    f = &oc->fields[oc->nfields++];
    f->path = rc_arena_strdup(a, path);
    f->old_value = x ? scalar_text(x, a) : "(none)";
    f->new_value = y ? scalar_text(y, a) : "(none)";
    if (!f->old_value || !f->new_value || oc->secret || strlen(f->old_value) > MAX_VALUE ||
        strlen(f->new_value) > MAX_VALUE)
        f->old_value = f->new_value = NULL;
}

/* Walk two trees side by side, recording the leaves that differ. */
static void diff_tree(struct object_change *oc, const cJSON *x, const cJSON *y, char *path,
                      size_t plen, size_t cap, struct rc_arena *a)
{
    const cJSON *c;

    if (x && y && cJSON_IsObject(x) && cJSON_IsObject(y)) {
        cJSON_ArrayForEach(c, x)
        {
            int n = snprintf(path + plen, cap - plen, "%s%s", plen ? "." : "", c->string);
            if (n < 0 || plen + (size_t)n >= cap)
                continue;
            diff_tree(oc, c, cJSON_GetObjectItemCaseSensitive(y, c->string), path, plen + (size_t)n,
                      cap, a);
        }
        cJSON_ArrayForEach(c, y)
        {
            int n;
            if (cJSON_GetObjectItemCaseSensitive(x, c->string))
                continue;
            n = snprintf(path + plen, cap - plen, "%s%s", plen ? "." : "", c->string);
            if (n < 0 || plen + (size_t)n >= cap)
                continue;
            diff_tree(oc, NULL, c, path, plen + (size_t)n, cap, a);
        }
        path[plen] = '\0';
        return;
    }
    if (x && y && cJSON_IsArray(x) && cJSON_IsArray(y) &&
        cJSON_GetArraySize(x) == cJSON_GetArraySize(y)) {
        const cJSON *d = y->child;
        int k = 0;
        for (c = x->child; c && d; c = c->next, d = d->next, k++) {
            int n = snprintf(path + plen, cap - plen, "[%d]", k);
            if (n < 0 || plen + (size_t)n >= cap)
                continue;
            diff_tree(oc, c, d, path, plen + (size_t)n, cap, a);
        }
        path[plen] = '\0';
        return;
    }
    if (!x || !y || !cJSON_Compare(x, y, 1))
        add_field(oc, path, x, y, a);
    path[plen] = '\0';
}

/* What a reader calls a field: "image", "replicas", "resources", "env", or its last name. */
static const char *field_category(const char *path, struct rc_arena *a)
{
    const char *last = strrchr(path, '.');
    const char *end;

    if (strstr(path, ".resources.") || strstr(path, "resources.limits") ||
        strstr(path, "resources.requests"))
        return "resources";
    if (strstr(path, ".env[") || strstr(path, ".env."))
        return "env";
    last = last ? last + 1 : path;
    end = strchr(last, '[');
    return end ? rc_arena_strndup(a, last, (size_t)(end - last)) : last;
}

struct unit_label {
    char label[17];
    const struct pl_decision *d;
};

static int cmp_label(const void *x, const void *y)
{
    return strcmp(((const struct unit_label *)x)->label, ((const struct unit_label *)y)->label);
}

/* Content changes up to this many find their unit by a scan of the labels, more by a search
 * of the labels sorted: a one-file change at 10,000 units sorted 10,000 labels for one. */
#define LABELS_SCANNED_MAX 16

static struct unit_label *label_find(struct unit_label *v, size_t n, const char *label)
{
    for (size_t i = 0; i < n; i++) {
        if (!strcmp(v[i].label, label))
            return &v[i];
    }
    return NULL;
}

static int cmp_change(const void *x, const void *y)
{
    const struct object_change *a = x, *b = y;
    int c = strcmp(a->unit, b->unit);

    if (!c)
        c = strcmp(a->object, b->object);
    if (!c)
        c = strcmp(a->cluster, b->cluster);
    return c;
}

static const cJSON *first_doc(struct rd_docs **docs, const char *path, const char *data, size_t len)
{
    struct rc_err e = RC_ERR_INIT;

    *docs = NULL;
    if (!data || rd_yaml_load(docs, path, data, len, NULL, NULL, &e) < 0 ||
        rd_docs_count(*docs) == 0)
        return NULL;
    return rd_docs_get(*docs, 0);
}

static const char *jstr_at(const cJSON *o, const char *k1, const char *k2)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k1);

    if (k2)
        v = cJSON_GetObjectItemCaseSensitive(v, k2);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* The object changes of content-only units (their decision did not change), sorted, with
 * identical changes on several clusters merged. */
static size_t content_changes(struct object_change **out, const struct rd_message_input *in,
                              struct rc_arena *a)
{
    struct unit_label *labels;
    struct object_change *v;
    size_t n = 0, w = 0;

    *out = NULL;
    if (!in->ncontent)
        return 0;
    labels = rc_arena_calloc(a, in->res->ndecisions + 1, sizeof(*labels));
    for (size_t i = 0; i < in->res->ndecisions; i++) {
        pl_unit_label(in->res->decisions[i].unit, labels[i].label);
        labels[i].d = &in->res->decisions[i];
    }
    /* a few changes are looked up one by one; many, in the labels sorted */
    if (in->ncontent > LABELS_SCANNED_MAX)
        rc_sort(labels, in->res->ndecisions, sizeof(*labels), cmp_label);
    v = rc_arena_calloc(a, in->ncontent + 1, sizeof(*v));
    for (size_t i = 0; i < in->ncontent; i++) {
        const struct rd_content_change *c = &in->content[i];
        struct rd_docs *od = NULL, *nd = NULL;
        const cJSON *x = first_doc(&od, c->path, c->old_data, c->old_len);
        const cJSON *y = first_doc(&nd, c->path, c->new_data, c->new_len);
        struct object_change *oc = &v[n];
        const char *kind, *name, *ns, *lab, *cl, *sl;
        struct unit_label key, *hit;
        char path[512] = "";

        if (!y || strncmp(c->path, "clusters/", 9))
            goto next;
        kind = jstr_at(y, "kind", NULL);
        name = jstr_at(y, "metadata", "name");
        ns = jstr_at(y, "metadata", "namespace");
        lab = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(y, "metadata"),
                                             "labels"),
            "rightplace.dev/unit"));
        if (!kind || !name)
            goto next;
        memset(&key, 0, sizeof(key));
        snprintf(key.label, sizeof(key.label), "%s", lab ? lab : "");
        hit = !lab ? NULL
              : in->ncontent > LABELS_SCANNED_MAX
                  ? bsearch(&key, labels, in->res->ndecisions, sizeof(*labels), cmp_label)
                  : label_find(labels, in->res->ndecisions, key.label);
        if (hit && hit->d->change != PL_CHANGE_NONE)
            goto next; /* its decision's paragraph says what happened */
        cl = c->path + 9;
        sl = strchr(cl, '/');
        if (!sl)
            goto next;
        oc->d = hit ? hit->d : NULL;
        oc->object = ns ? rc_arena_printf(a, "%s/%s/%s", ns, kind, name)
                        : rc_arena_printf(a, "%s/%s", kind, name);
        oc->unit = oc->d ? oc->d->unit : oc->object;
        oc->cluster = rc_arena_strndup(a, cl, (size_t)(sl - cl));
        oc->clusters = oc->cluster;
        oc->secret = !strcmp(kind, "Secret");
        diff_tree(oc, x, y, path, 0, sizeof(path), a);
        if (oc->nfields || oc->more || !x)
            n++;
    next:
        rd_docs_free(od);
        rd_docs_free(nd);
    }
    rc_sort(v, n, sizeof(*v), cmp_change);
    /* the same object changed the same way on several clusters: one entry */
    for (size_t i = 0; i < n; i++) {
        struct object_change *p = w ? &v[w - 1] : NULL;
        int same = p && !strcmp(p->unit, v[i].unit) && !strcmp(p->object, v[i].object) &&
                   p->nfields == v[i].nfields && p->more == v[i].more;
        for (size_t f = 0; same && f < v[i].nfields; f++) {
            const struct field_diff *a1 = &p->fields[f], *b1 = &v[i].fields[f];
            same = !strcmp(a1->path, b1->path) && !!a1->old_value == !!b1->old_value &&
                   (!a1->old_value || (!strcmp(a1->old_value, b1->old_value) &&
                                       !strcmp(a1->new_value, b1->new_value)));
        }
        if (same) {
            p->clusters = rc_arena_printf(a, "%s, %s", p->clusters, v[i].cluster);
            continue;
        }
        v[w++] = v[i];
    }
    *out = v;
    return w;
}

/* The categories of the changed fields of changes [from, to), "image, replicas". */
static const char *categories(const struct object_change *v, size_t from, size_t to, size_t max,
                              struct rc_arena *a)
{
    const char *seen[8];
    size_t nseen = 0, more = 0;
    struct rc_buf b = RC_BUF_INIT;
    struct rc_err e = RC_ERR_INIT;
    const char *r;

    for (size_t i = from; i < to; i++) {
        for (size_t f = 0; f < v[i].nfields; f++) {
            const char *c = field_category(v[i].fields[f].path, a);
            size_t k;
            for (k = 0; k < nseen && strcmp(seen[k], c); k++)
                ;
            if (k < nseen)
                continue;
            if (nseen < max && nseen < 8)
                seen[nseen++] = c;
            else
                more++;
        }
    }
    for (size_t k = 0; k < nseen; k++)
        rc_buf_printf(&b, &e, "%s%s", k ? ", " : "", seen[k]);
    if (more)
        rc_buf_puts(&b, ", ...", &e);
    r = rc_arena_strdup(a, b.ptr ? b.ptr : "");
    rc_buf_release(&b);
    return r;
}

/* One paragraph per content-only unit: changes [from, to) share the unit. */
static int content_paragraph(struct rc_buf *out, const struct object_change *v, size_t from,
                             size_t to, struct rc_arena *a, struct rc_err *err)
{
    const struct pl_decision *d = v[from].d;
    const char *title = d ? unit_title(d, a) : v[from].object;
    const char *cats = categories(v, from, to, 4, a);
    int error;

    error = put_wrapped(out, "", "  ",
                        rc_arena_printf(a, "update %s%s%s", title, *cats ? ": " : "", cats), err);
    if (!error && d)
        error =
            put_wrapped(out, "  ", "    ",
                        rc_arena_printf(a, "unit: %s%s%s%s", d->unit, d->policy ? " (policy " : "",
                                        d->policy ? d->policy : "", d->policy ? ")" : ""),
                        err);
    for (size_t i = from; i < to && !error; i++) {
        error = put_wrapped(out, "  ", "    ",
                            rc_arena_printf(a, "%s on %s:", v[i].object, v[i].clusters), err);
        for (size_t f = 0; f < v[i].nfields && !error; f++) {
            const struct field_diff *fd = &v[i].fields[f];
            const char *line = fd->old_value ? rc_arena_printf(a, "%s: %s -> %s", fd->path,
                                                               fd->old_value, fd->new_value)
                                             : rc_arena_printf(a, "%s", fd->path);
            error = put_wrapped(out, "    ", "      ", line, err);
        }
        if (!error && v[i].more)
            error = put_wrapped(out, "    ", "      ",
                                rc_arena_printf(a, "... and %zu more fields", v[i].more), err);
    }
    return error;
}

/* A trailer value on one line: control characters become spaces, at most 200 bytes. */
static const char *trailer_value(const char *s, struct rc_arena *a)
{
    size_t n = strcspn(s, "\r\n");
    char *v;

    if (n > 200)
        n = 200;
    v = rc_arena_strndup(a, s, n);
    for (char *p = v; *p; p++) {
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            *p = ' ';
    }
    if (rc_esc_needed(v)) { /* C1 controls, bidirectional overrides, bytes not UTF-8 */
        char *e = rc_arena_alloc(a, 4 * n + 1);
        rc_esc(e, 4 * n + 1, v);
        v = e;
    }
    return v;
}

int rd_commit_message_ex(struct rc_buf *out, const struct rd_message_input *in, struct rc_err *err)
{
    const struct pl_result *res = in->res;
    const struct pl_prev_unit *prev = in->prev;
    size_t nprev = in->nprev;
    const char *source_commit = in->source_commit;
    size_t nfile_errors = in->nfile_errors;
    const struct rd_file_error *file_errors = in->file_errors;
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_buf subject = RC_BUF_INIT;
    size_t count[W_COUNT] = {0}, nchanged = 0, state[3] = {0};
    const size_t *states = state;
    const struct pl_decision **changed;
    const struct pl_decision *only = NULL;
    struct object_change *cc = NULL;
    size_t ncc, nupdated = 0;
    int error = 0;

    changed = rc_arena_calloc(&a, res->ndecisions + 1, sizeof(*changed));
    for (size_t i = 0; i < res->ndecisions; i++) {
        const struct pl_decision *d = &res->decisions[i];
        if (d->change != PL_CHANGE_REMOVED && (unsigned)d->state < 3)
            state[d->state]++;
        if (d->change == PL_CHANGE_NONE)
            continue;
        count[classify(d)]++;
        changed[nchanged++] = d;
    }
    rc_sort(changed, nchanged, sizeof(*changed), cmp_decision);
    ncc = content_changes(&cc, in, &a);
    for (size_t i = 0; i < ncc; i++)
        nupdated += i == 0 || strcmp(cc[i].unit, cc[i - 1].unit);

    if (nchanged == 1 && !nupdated) {
        only = changed[0];
        error = headline(&subject, only, find_prev(prev, nprev, only->unit), &a, err);
        if (!error && subject.len > WIDTH) {
            rc_buf_reset(&subject);
            only = NULL;
        }
    }
    if (!error && !only && nchanged) {
        error = summary(&subject, count, err);
        /* only placements and moves: say where to when it fits ("place 6 units on a and b") */
        if (!error && !count[W_PENDING] && !count[W_REMOVE] && !count[W_UNPLACED]) {
            const char *to = targets_of(changed, nchanged, &a);
            if (to && subject.len + 4 + strlen(to) <= WIDTH)
                error = rc_buf_printf(&subject, err, " on %s", to);
        }
    }
    if (!error && nupdated && !nchanged) {
        /* content only: "update ml/train: image", else "update 3 units: image, replicas" */
        const char *cats = categories(cc, 0, ncc, 3, &a);
        const char *sep = *cats ? ": " : "";
        if (nupdated == 1) {
            const char *title = cc[0].d ? unit_title(cc[0].d, &a) : cc[0].object;
            const char *where = cc[0].clusters;
            for (size_t i = 1; i < ncc; i++) {
                if (strcmp(cc[i].clusters, where))
                    where = NULL; /* objects on different clusters: leave it to the body */
                if (!where)
                    break;
            }
            if (where)
                error =
                    rc_buf_printf(&subject, err, "update %s on %s%s%s", title, where, sep, cats);
            if (!error && (!where || subject.len > WIDTH)) {
                rc_buf_reset(&subject);
                error = rc_buf_printf(&subject, err, "update %s%s%s", title, sep, cats);
            }
            if (!error && subject.len > WIDTH) {
                rc_buf_reset(&subject);
                error = rc_buf_printf(&subject, err, "update %s", title);
            }
        }
        if (!error && (nupdated > 1 || subject.len > WIDTH)) {
            rc_buf_reset(&subject);
            error = rc_buf_printf(&subject, err, "update %zu unit%s%s%s", nupdated,
                                  nupdated == 1 ? "" : "s", sep, cats);
        }
        if (!error && subject.len > WIDTH) {
            rc_buf_reset(&subject);
            error = rc_buf_printf(&subject, err, "update %zu unit%s", nupdated,
                                  nupdated == 1 ? "" : "s");
        }
    } else if (!error && nupdated) {
        error = rc_buf_printf(&subject, err, ", update %zu", nupdated);
    }
    if (!error && !nchanged && !nupdated && in->nhand_edits)
        error = rc_buf_printf(&subject, err, "repair %zu hand-edited file%s on the deploy branch",
                              in->nhand_edits, in->nhand_edits == 1 ? "" : "s");
    if (!error && !nchanged && !nupdated && !in->nhand_edits)
        error = rc_buf_puts(&subject, "update placement record", err);
    if (!error && !nchanged && nfile_errors && subject.len + 30 <= WIDTH)
        error = rc_buf_printf(&subject, err, " (%zu source file%s not loaded)", nfile_errors,
                              nfile_errors == 1 ? "" : "s");
    if (!error)
        error = rc_buf_add(out, subject.ptr, subject.len, err);
    if (!error)
        error = rc_buf_puts(out, "\n", err);

    for (size_t i = 0; i < nchanged && i < MAX_PARAGRAPHS && !error; i++) {
        error = rc_buf_putc(out, '\n', err);
        if (!error)
            error = paragraph(out, changed[i], find_prev(prev, nprev, changed[i]->unit), &a, err);
    }
    if (!error && nchanged > MAX_PARAGRAPHS)
        error = rc_buf_printf(out, err, "\n... and %zu more changed units: see placements.yaml\n",
                              nchanged - MAX_PARAGRAPHS);
    for (size_t i = 0, shown = 0; i < ncc && !error;) {
        size_t j = i + 1;
        while (j < ncc && !strcmp(cc[j].unit, cc[i].unit))
            j++;
        if (shown++ == MAX_PARAGRAPHS) {
            error = rc_buf_printf(out, err, "\n... and %zu more updated units\n",
                                  nupdated - MAX_PARAGRAPHS);
            break;
        }
        error = rc_buf_putc(out, '\n', err);
        if (!error)
            error = content_paragraph(out, cc, i, j, &a, err);
        i = j;
    }
    if (!error && in->nhand_edits) {
        error = rc_buf_puts(out,
                            "\nrepair hand edits on the deploy branch (files that differ from "
                            "what rightplace wrote):\n",
                            err);
        for (size_t i = 0; i < in->nhand_edits && i < MAX_PARAGRAPHS && !error; i++)
            error = put_wrapped(out, "  ", "    ", in->hand_edits[i], err);
        if (!error && in->nhand_edits > MAX_PARAGRAPHS)
            error =
                rc_buf_printf(out, err, "  ... and %zu more\n", in->nhand_edits - MAX_PARAGRAPHS);
    }
    if (!error && in->nwarnings) { /* what was ignored or guessed: a reviewer must see it */
        error = rc_buf_puts(out, "\nwarnings:\n", err);
        for (size_t i = 0; i < in->nwarnings && i < MAX_WARNINGS && !error; i++)
            error = put_wrapped(out, "  ", "    ", in->warnings[i], err);
        if (!error && in->nwarnings > MAX_WARNINGS)
            error = rc_buf_printf(out, err, "  ... and %zu more (placements.yaml lists all)\n",
                                  in->nwarnings - MAX_WARNINGS);
    }
    if (!error && nfile_errors) {
        error = rc_buf_putc(out, '\n', err);
        for (size_t i = 0; i < nfile_errors && !error; i++) {
            const char *msg = file_errors[i].msg && *file_errors[i].msg ? file_errors[i].msg
                                                                        : file_errors[i].path;
            const char *line = rc_arena_printf(&a, "not loaded, placements kept: %s", msg);
            error = put_wrapped(out, "", "  ", line, err);
        }
    }
    if (in->states) /* a partial pass's: the fleet's counts */
        states = in->states;
    if (!error)
        error = rc_buf_printf(out, err,
                              "\nRightplace-Source: %s\nRightplace-Placed: %zu\n"
                              "Rightplace-Pending: %zu\nRightplace-Unplaced: %zu\n",
                              source_commit && *source_commit ? source_commit : "unknown",
                              states[PL_STATE_PLACED], states[PL_STATE_PENDING],
                              states[PL_STATE_UNPLACED]);
    if (!error && in->source_subject && *in->source_subject)
        error = rc_buf_printf(out, err, "Rightplace-Source-Subject: %s\n",
                              trailer_value(in->source_subject, &a));
    if (!error && in->source_author && *in->source_author)
        error = rc_buf_printf(out, err, "Rightplace-Source-Author: %s\n",
                              trailer_value(in->source_author, &a));
    rc_buf_release(&subject);
    rc_arena_release(&a);
    return error;
}

int rd_commit_message_prev(struct rc_buf *out, const struct pl_result *res,
                           const struct pl_prev_unit *prev, size_t nprev, const char *source_commit,
                           size_t nfile_errors, const struct rd_file_error *file_errors,
                           struct rc_err *err)
{
    struct rd_message_input in = RD_MESSAGE_INPUT_INIT;

    in.res = res;
    in.prev = prev;
    in.nprev = nprev;
    in.source_commit = source_commit;
    in.nfile_errors = nfile_errors;
    in.file_errors = file_errors;
    return rd_commit_message_ex(out, &in, err);
}

int rd_commit_message(struct rc_buf *out, const struct pl_result *res, const char *source_commit,
                      size_t nfile_errors, const struct rd_file_error *file_errors,
                      struct rc_err *err)
{
    return rd_commit_message_prev(out, res, NULL, 0, source_commit, nfile_errors, file_errors, err);
}
