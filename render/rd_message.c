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
 *   not loaded, placements kept: a.yaml:3:1: ...         <- source files with errors
 *
 *   Rightplace-Source: <id>                                 <- trailers (git interpret-trailers)
 *   Rightplace-Placed: 1
 *   Rightplace-Pending: 0
 *   Rightplace-Unplaced: 0
 *
 * Body lines are wrapped at 72 columns; continuation lines are indented.
 */
#include "rd_output.h"

#include <stdlib.h>
#include <string.h>

#include "pl_engine.h"
#include "rc_arena.h"
#include "rd_output_internal.h"
#include "rd_source.h"

#define WIDTH 72
#define MAX_PARAGRAPHS 100 /* a burst of units gets a readable message; the record has all */

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

/* "place a/b on c", "move a/b from x to y", "pending a/b", "remove a/b", "unplaced a/b" */
static int headline(struct rc_buf *b, const struct pl_decision *d, const struct pl_prev_unit *prev,
                    struct rc_arena *a, struct rc_err *err)
{
    const char *title = rd_out_unit_title(d, a);
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
        if (!error)
            error = rc_buf_add(b, text + i, j - i, err);
        col += j - i;
        fresh = 0;
        i = j;
    }
    if (!error)
        error = rc_buf_putc(b, '\n', err);
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
    for (size_t i = 0; i < d->nverdicts && !error; i++) {
        const struct pl_verdict *v = &d->verdicts[i];
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

int rd_commit_message_prev(struct rc_buf *out, const struct pl_result *res,
                           const struct pl_prev_unit *prev, size_t nprev, const char *source_commit,
                           size_t nfile_errors, const struct rd_file_error *file_errors,
                           struct rc_err *err)
{
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_buf subject = RC_BUF_INIT;
    size_t count[W_COUNT] = {0}, nchanged = 0, state[3] = {0};
    const struct pl_decision **changed;
    const struct pl_decision *only = NULL;
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
    qsort(changed, nchanged, sizeof(*changed), cmp_decision);

    if (nchanged == 1) {
        only = changed[0];
        error = headline(&subject, only, find_prev(prev, nprev, only->unit), &a, err);
        if (!error && subject.len > WIDTH) {
            rc_buf_reset(&subject);
            only = NULL;
        }
    }
    if (!error && !only && nchanged)
        error = summary(&subject, count, err);
    if (!error && !nchanged)
        error = rc_buf_puts(&subject, "update placement record", err);
    if (!error && !nchanged && nfile_errors)
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
    if (!error && nfile_errors) {
        error = rc_buf_putc(out, '\n', err);
        for (size_t i = 0; i < nfile_errors && !error; i++) {
            const char *msg = file_errors[i].msg && *file_errors[i].msg ? file_errors[i].msg
                                                                        : file_errors[i].path;
            const char *line = rc_arena_printf(&a, "not loaded, placements kept: %s", msg);
            error = put_wrapped(out, "", "  ", line, err);
        }
    }
    if (!error)
        error = rc_buf_printf(out, err,
                              "\nRightplace-Source: %s\nRightplace-Placed: %zu\n"
                              "Rightplace-Pending: %zu\nRightplace-Unplaced: %zu\n",
                              source_commit && *source_commit ? source_commit : "unknown",
                              state[PL_STATE_PLACED], state[PL_STATE_PENDING],
                              state[PL_STATE_UNPLACED]);
    rc_buf_release(&subject);
    rc_arena_release(&a);
    return error;
}

int rd_commit_message(struct rc_buf *out, const struct pl_result *res, const char *source_commit,
                      size_t nfile_errors, const struct rd_file_error *file_errors,
                      struct rc_err *err)
{
    return rd_commit_message_prev(out, res, NULL, 0, source_commit, nfile_errors, file_errors, err);
}
