/*
 * rc_pass.c - one reconcile pass, and the replay of a deploy commit.
 *
 * The pass is a pipeline over per-pass data in one arena:
 *   sync (fetch) -> resolve S and D -> previous record (D:placements.yaml) -> load S
 *   (broken files replaced by their last good version) -> fleet (declared or observed)
 *   -> pl_place -> rd_render_tree -> diff against D -> commit + compare-and-swap -> apply.
 * It does not talk to libgit2 or the API server itself: rc_git and rc_observe/rc_apply do.
 */
#include "rc_pass.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pl_basics.h"
#include "pl_engine.h"
#include "rc_apply.h"
#include "rc_kube.h"
#include "rc_buf.h"
#include "rc_git.h"
#include "rc_mem.h"
#include "rc_observe.h"
#include "rd_output.h"
#include "rd_source.h"

#include "rc_banned.h"

#define RECORD_PATH "placements.yaml"
#define CAPACITY_PATH ".rightplace/capacity.yaml"
#define MAX_SOURCE_BYTES (64 << 20) /* all manifests of one source commit together */
#define MAX_HISTORY_WALK 1000       /* distinct versions tried for a file's last good version */

/* ==== Loading the source, with broken files kept at their last good version ==== */

struct loaded {
    struct rd_source src;
    int have_src;
    size_t nerrors; /* the errors as found at S, before substitution */
    struct rd_file_error *errors;
    size_t unresolved; /* broken files without a last good version */
};

static void loaded_release(struct loaded *l)
{
    if (l->have_src)
        rd_source_release(&l->src);
    l->have_src = 0;
}

/* A copy with every byte that is not part of valid UTF-8 replaced by '?': messages quote
 * file names and contents, and the record (YAML) and JSON logs must stay valid. */
static char *utf8_clean(struct rc_arena *a, const char *s)
{
    size_t n = strlen(s);
    unsigned char *o = (unsigned char *)rc_arena_strndup(a, s, n);

    for (size_t i = 0; i < n;) {
        unsigned char c = o[i];
        size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        int ok = len > 0 && i + len <= n;
        for (size_t k = 1; ok && k < len; k++)
            ok = (o[i + k] & 0xc0) == 0x80;
        if (ok && len == 2)
            ok = c >= 0xc2;
        if (ok && len == 3)
            ok = !(c == 0xe0 && o[i + 1] < 0xa0) && !(c == 0xed && o[i + 1] >= 0xa0);
        if (ok && len == 4)
            ok = c <= 0xf4 && !(c == 0xf0 && o[i + 1] < 0x90) && !(c == 0xf4 && o[i + 1] >= 0x90);
        if (!ok) {
            o[i++] = '?';
            continue;
        }
        i += len;
    }
    return (char *)o;
}

static int file_loads_alone(const char *path, const char *data, size_t len, struct rc_arena *a)
{
    struct rd_source one;
    struct rd_file f = {path, data, len};
    struct rc_err err = RC_ERR_INIT;
    int ok;

    memset(&one, 0, sizeof(one));
    if (rd_source_load(&one, &f, 1, a, &err) < 0)
        return 0;
    ok = one.nerrors == 0;
    rd_source_release(&one);
    return ok;
}

/*
 * The version of `path` that the deploy branch was built from: starting at `from` (the
 * source commit of the previous record), walk first parents back to the newest version that
 * loads. The walk stops where the file does not exist: a file deleted and later re-added
 * broken has nothing to keep (its objects were removed when it was deleted). Consecutive
 * commits sharing one blob are tested once. RC_ENOTFOUND: nothing to keep. Any other error
 * (git I/O, or a walk longer than MAX_HISTORY_WALK distinct versions) fails the pass rather
 * than dropping the file's objects.
 */
static int last_good_version(const char **data, size_t *len, struct rc_git *g, const char *from,
                             const char *path, struct rc_arena *a, struct rc_err *err)
{
    char cur[41], blob[41], tested[41] = "";
    int versions = 0;
    int error;

    if (!from || !from[0])
        return RC_ENOTFOUND;
    memcpy(cur, from, sizeof(cur));
    for (;;) {
        char parent[41];

        error = rc_git_path_id(blob, g, cur, path, err);
        if (error == RC_ENOTFOUND) {
            rc_err_clear(err);
            return RC_ENOTFOUND;
        }
        if (error < 0)
            return error;
        if (strcmp(blob, tested)) {
            char *d = NULL;
            size_t n = 0;
            if (++versions > MAX_HISTORY_WALK)
                return rc_err_set(err, RC_ERROR,
                                  "'%s' has not loaded for %d versions; cannot tell which "
                                  "objects to keep (fix the file)",
                                  path, MAX_HISTORY_WALK);
            error = rc_git_read_file(&d, &n, g, cur, path, a, err);
            if (error < 0)
                return error;
            if (file_loads_alone(path, d, n, a)) {
                *data = d;
                *len = n;
                return RC_OK;
            }
            memcpy(tested, blob, sizeof(tested));
        }
        error = rc_git_commit_parent(parent, g, cur, err);
        if (error == RC_ENOTFOUND) {
            rc_err_clear(err);
            return RC_ENOTFOUND;
        }
        if (error < 0)
            return error;
        memcpy(cur, parent, sizeof(cur));
    }
}

static int load_source(struct loaded *out, struct rc_git *g, const char *source,
                       const char *prev_source, const struct rc_pass_options *o, struct rc_arena *a,
                       struct rc_err *err)
{
    struct rc_git_blob *blobs = NULL;
    struct rd_file *files;
    size_t nblobs = 0;
    size_t replaced = 0;
    int error;

    memset(out, 0, sizeof(*out));
    error = rc_git_read_yaml(&blobs, &nblobs, g, source, o->paths, o->npaths, a, err);
    if (error < 0)
        return error;
    {
        /* Each file is bounded by the YAML loader; the whole tree is bounded here, so that
         * many files each under the limits cannot exhaust memory together. */
        size_t total = 0;
        for (size_t i = 0; i < nblobs; i++)
            total += blobs[i].len;
        if (total > MAX_SOURCE_BYTES)
            return rc_err_set(err, RC_EINVALID,
                              "the source holds %zu MiB of YAML; the limit is %d MiB (use --path "
                              "to load part of the tree)",
                              total >> 20, MAX_SOURCE_BYTES >> 20);
    }
    files = rc_arena_calloc(a, nblobs ? nblobs : 1, sizeof(*files));
    for (size_t i = 0; i < nblobs; i++) {
        files[i].path = blobs[i].path;
        files[i].data = blobs[i].data;
        files[i].len = blobs[i].len;
    }
    error = rd_source_load(&out->src, files, nblobs, a, err);
    if (error < 0)
        return error;
    out->have_src = 1;
    if (out->src.nerrors == 0)
        return RC_OK;

    /* Keep the errors as found, then swap each broken file for its last good version. */
    out->nerrors = out->src.nerrors;
    out->errors = rc_arena_calloc(a, out->nerrors, sizeof(*out->errors));
    for (size_t e = 0; e < out->nerrors; e++) {
        out->errors[e].path = utf8_clean(a, out->src.errors[e].path);
        out->errors[e].msg = utf8_clean(a, out->src.errors[e].msg);
        for (size_t i = 0; i < nblobs; i++) {
            const char *d;
            size_t n;
            int found;
            if (strcmp(files[i].path, out->errors[e].path))
                continue;
            found = last_good_version(&d, &n, g, prev_source, files[i].path, a, err);
            if (found < 0 && found != RC_ENOTFOUND)
                return found;
            if (found == RC_ENOTFOUND) {
                /* nothing to keep: left out of the reload, so that it cannot break another
                 * file again (a duplicate breaks both sides) */
                files[i].data = NULL;
                files[i].len = 0;
                out->unresolved++;
                replaced++;
            }
            if (found == RC_OK) {
                files[i].data = d;
                files[i].len = n;
                replaced++;
                if (o->log)
                    rc_log_warn(o->log, "%s (placements of its objects are kept)",
                                out->errors[e].msg);
            } else if (o->log) {
                rc_log_warn(o->log, "%s (not loaded)", out->errors[e].msg);
            }
        }
    }
    if (replaced == 0)
        return RC_OK;
    rd_source_release(&out->src);
    out->have_src = 0;
    memset(&out->src, 0, sizeof(out->src));
    {
        size_t w = 0;
        for (size_t i = 0; i < nblobs; i++) {
            if (files[i].data)
                files[w++] = files[i];
        }
        nblobs = w;
    }
    error = rd_source_load(&out->src, files, nblobs, a, err);
    if (error < 0)
        return error;
    out->have_src = 1;
    /* A kept old version may clash with a file that loaded before (an object moved from the
     * broken file to another one). Either side dropping would remove placed objects, so the
     * pass stops here and commits nothing. */
    for (size_t e = 0; e < out->src.nerrors; e++) {
        int known = 0;
        for (size_t k = 0; k < out->nerrors; k++)
            known |= !strcmp(out->src.errors[e].path, out->errors[k].path);
        if (!known)
            return rc_err_set(err, RC_EINVALID,
                              "%s (while keeping the last good version of a broken file; "
                              "fix the broken file)",
                              out->src.errors[e].msg);
    }
    return RC_OK;
}

/* ==== Previous record ==== */

static int read_record(struct rd_record *rec, struct rc_git *g, const char *deploy,
                       struct rc_arena *a, struct rc_err *err)
{
    char *text = NULL;
    size_t len = 0;
    int error;

    memset(rec, 0, sizeof(*rec));
    if (!deploy || !deploy[0])
        return RC_OK;
    error = rc_git_read_file(&text, &len, g, deploy, RECORD_PATH, a, err);
    if (error == RC_ENOTFOUND) {
        rc_err_clear(err);
        return RC_OK;
    }
    if (error < 0)
        return error;
    error = rd_record_parse(rec, text, len, a, err);
    if (error < 0)
        return rc_err_prefix(err, "deploy commit %.12s: %s: ", deploy, RECORD_PATH);
    return RC_OK;
}

/* ==== Diffing the rendered tree against a commit ==== */

static int managed_path(const char *p)
{
    return !strncmp(p, "clusters/", 9) || !strcmp(p, RECORD_PATH) ||
           !strncmp(p, ".rightplace/", 12);
}

static int cmp_change(const void *x, const void *y)
{
    const struct rc_path_change *a = x, *b = y;

    return strcmp(a->path, b->path);
}

/* Split a record around its "source: <id>" line: head before it, tail from its newline. */
static int split_record(const char *p, size_t len, size_t *head, const char **tail, size_t *tlen)
{
    const char *src = memmem(p, len, "\nsource: ", 9);
    const char *eol;

    if (!src)
        return 0;
    eol = memchr(src + 1, '\n', len - (size_t)(src + 1 - p));
    if (!eol)
        return 0;
    *head = (size_t)(src - p);
    *tail = eol;
    *tlen = len - (size_t)(eol - p);
    return 1;
}

/* Equal content; for placements.yaml, equal but for the source commit it names: a source
 * commit that changes no decision (a README edit) makes no deploy commit. */
static int same_content(const char *path, const char *a, size_t alen, const char *b, size_t blen)
{
    size_t ah, bh, at, bt;
    const char *ap, *bp;

    if (!strcmp(path, RECORD_PATH) && split_record(a, alen, &ah, &ap, &at) &&
        split_record(b, blen, &bh, &bp, &bt))
        return ah == bh && !memcmp(a, b, ah) && at == bt && !memcmp(ap, bp, at);
    return alen == blen && !memcmp(a, b, alen);
}

/* Changes that writing `tree` over commit `base` would make to the managed paths. */
static int diff_tree(struct rc_path_change **out, size_t *n, struct rc_git *g, const char *base,
                     const struct rd_tree *tree, struct rc_arena *a, struct rc_err *err)
{
    struct rc_git_blob *old = NULL;
    size_t nold = 0, cap = 0, cnt = 0;
    struct rc_path_change *ch = NULL;
    size_t i = 0, j = 0;
    int error;

    if (base && base[0]) {
        error = rc_git_read_tree(&old, &nold, g, base, "", a, err);
        if (error < 0)
            return error;
    }
    cap = nold + tree->nfiles + 1;
    ch = rc_arena_calloc(a, cap, sizeof(*ch));
    /* both lists are sorted by path (strcmp) */
    while (i < nold || j < tree->nfiles) {
        int c;
        if (i < nold && !managed_path(old[i].path)) {
            i++;
            continue;
        }
        if (i >= nold)
            c = 1;
        else if (j >= tree->nfiles)
            c = -1;
        else
            c = strcmp(old[i].path, tree->files[j].path);
        if (c < 0) {
            ch[cnt].path = old[i].path;
            ch[cnt++].op = 'D';
            i++;
        } else if (c > 0) {
            ch[cnt].path = tree->files[j].path;
            ch[cnt++].op = 'A';
            j++;
        } else {
            if (!same_content(old[i].path, old[i].data, old[i].len, tree->files[j].data,
                              tree->files[j].len)) {
                ch[cnt].path = tree->files[j].path;
                ch[cnt++].op = 'M';
            }
            i++;
            j++;
        }
    }
    qsort(ch, cnt, sizeof(*ch), cmp_change);
    *out = ch;
    *n = cnt;
    return RC_OK;
}

/* ==== The computation shared by pass and replay ==== */

struct compute {
    struct loaded load;
    struct pl_input in;
    struct pl_result res;
    struct rd_tree tree;
};

/* Units made only of a Namespace that no policy governs are not decisions: namespaces follow
 * their workloads. Drop them so that they do not show up as "unplaced". */
static void drop_bare_namespaces(struct pl_result *res)
{
    size_t w = 0;

    for (size_t r = 0; r < res->ndecisions; r++) {
        const struct pl_decision *d = &res->decisions[r];
        if (!d->policy && d->nobjects == 1 && d->objects[0] && !d->objects[0]->ns &&
            !strcmp(d->objects[0]->kind, "Namespace") && d->state == PL_STATE_UNPLACED)
            continue;
        res->decisions[w++] = res->decisions[r];
    }
    res->ndecisions = w;
}

static int cmp_prev_index(const void *x, const void *y, void *units)
{
    const struct pl_prev_unit *u = units;

    return strcmp(u[*(const size_t *)x].unit, u[*(const size_t *)y].unit);
}

/* A unit whose decision did not change keeps its record entry as written when the decision
 * was made (reason, verdicts and their tally), so that an unchanged fleet makes no new
 * commit and the record keeps saying why the unit went where it is. Returns the tallies
 * for rd_render_options.tallies (NULL entries for decisions made now). */
static const struct rd_verdict_tally **
keep_recorded_reasons(struct pl_result *res, const struct rd_record *prev, struct rc_arena *a)
{
    const struct rd_verdict_tally **tallies;
    size_t *order;

    if (!prev->nunits)
        return NULL;
    tallies = rc_arena_calloc(a, res->ndecisions + 1, sizeof(*tallies));
    order = rc_arena_calloc(a, prev->nunits, sizeof(*order));
    for (size_t i = 0; i < prev->nunits; i++)
        order[i] = i;
    qsort_r(order, prev->nunits, sizeof(*order), cmp_prev_index, prev->units);
    for (size_t i = 0; i < res->ndecisions; i++) {
        struct pl_decision *d = &res->decisions[i];
        const struct pl_prev_unit *p = NULL;
        size_t lo = 0, hi = prev->nunits;
        if (d->change != PL_CHANGE_NONE)
            continue;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            int c = strcmp(prev->units[order[mid]].unit, d->unit);
            if (c == 0) {
                p = &prev->units[order[mid]];
                break;
            }
            if (c < 0)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (!p || !p->reason)
            continue;
        d->reason = p->reason;
        d->cause = p->cause;
        d->nverdicts = p->nverdicts;
        d->verdicts = p->verdicts;
        if (prev->tallies)
            tallies[i] = &prev->tallies[p - prev->units];
    }
    return tallies;
}

/* Load the source at S (step 1 of a computation). */
static int compute_load(struct compute *c, struct rc_git *g, const char *source,
                        const struct rd_record *prev, const struct rc_pass_options *o,
                        struct rc_arena *a, struct rc_err *err)
{
    return load_source(&c->load, g, source, prev->source, o, a, err);
}

/* Place and render against `fleet` (NULL: the clusters as declared in the source). The
 * fleet's resource indices must come from c->load.src.res. */
static int compute_place(struct compute *c, const char *source, const struct rd_record *prev,
                         const struct pl_cluster *fleet, size_t nfleet,
                         const struct rc_pass_options *o, struct rc_arena *a, struct rc_err *err)
{
    const struct rd_verdict_tally **tallies;
    struct rd_render_options ropts;
    int error;

    memset(&c->in, 0, sizeof(c->in));
    c->in.res = &c->load.src.res;
    c->in.nobjects = c->load.src.nobjects;
    c->in.objects = c->load.src.objects;
    c->in.nnamespaces = c->load.src.nnamespaces;
    c->in.namespaces = c->load.src.namespaces;
    c->in.npolicies = c->load.src.npolicies;
    c->in.policies = c->load.src.policies;
    c->in.nclusters = fleet ? nfleet : c->load.src.nclusters;
    c->in.clusters = fleet ? fleet : c->load.src.clusters;
    c->in.nprev = prev->nunits;
    c->in.prev = prev->units;
    error = pl_place(&c->res, &c->in, a, err);
    if (error < 0)
        return error;
    drop_bare_namespaces(&c->res);
    tallies = keep_recorded_reasons(&c->res, prev, a);
    ropts = o->render;
    ropts.tallies = tallies;
    ropts.nfile_errors = c->load.nerrors;
    ropts.file_errors = c->load.errors;
    ropts.nwarnings = c->load.src.nwarnings;
    ropts.warnings = c->load.src.warnings;
    return rd_render_tree(&c->tree, &c->res, &c->in, source, &ropts, a, err);
}

static void compute_release(struct compute *c)
{
    loaded_release(&c->load);
}

static void count_states(struct rc_pass_result *out, const struct pl_result *res)
{
    for (size_t i = 0; i < res->ndecisions; i++) {
        const struct pl_decision *d = &res->decisions[i];
        if (d->change == PL_CHANGE_REMOVED) {
            out->changed++;
            continue;
        }
        if (d->change != PL_CHANGE_NONE)
            out->changed++;
        if (d->state == PL_STATE_PLACED)
            out->placed++;
        else if (d->state == PL_STATE_PENDING)
            out->pending++;
        else
            out->unplaced++;
    }
}

static int record_has_pending(const struct rd_record *rec)
{
    for (size_t i = 0; i < rec->nunits; i++) {
        if (rec->units[i].state == PL_STATE_PENDING)
            return 1;
    }
    return 0;
}

/* ==== The pass ==== */

static void backoff(int attempt)
{
    struct timespec ts;
    long ms = 100L << (attempt < 6 ? attempt : 6);

    ts.tv_sec = ms / 1000;
    ts.tv_nsec = (ms % 1000) * 1000000L;
    nanosleep(&ts, NULL);
}

static int pass_once(struct rc_pass_result *out, struct rc_git *g, const struct rc_pass_options *o,
                     struct rc_arena *a, struct rc_err *err)
{
    struct compute *cp = rc_arena_calloc(a, 1, sizeof(*cp));
    struct rd_record prev;
    struct rc_path_change *changes = NULL;
    size_t nchanges = 0;
    struct pl_cluster *fleet = NULL;
    size_t nfleet = 0;
    char deploy_ref[512];
    int error;
    int decisions_changed = 0;

    if (snprintf(deploy_ref, sizeof(deploy_ref), "refs/heads/%s", o->deploy_branch) >=
        (int)sizeof(deploy_ref))
        return rc_err_set(err, RC_EINVALID, "deploy branch name '%.64s...' is too long",
                          o->deploy_branch);

    error = rc_git_fetch(g, err);
    if (error < 0)
        goto done;
    error = rc_git_resolve(out->source, g, o->source_rev ? o->source_rev : o->source_branch, err);
    if (error < 0) {
        if (error == RC_ENOTFOUND && o->source_rev)
            rc_err_set(err, RC_ENOTFOUND, "revision '%s' not found", o->source_rev);
        else if (error == RC_ENOTFOUND)
            rc_err_set(err, RC_ENOTFOUND, "source branch '%s' not found", o->source_branch);
        goto done;
    }
    out->deploy_old[0] = '\0';
    error = rc_git_resolve(out->deploy_old, g, deploy_ref, err);
    if (error == RC_ENOTFOUND) {
        out->deploy_old[0] = '\0';
        rc_err_clear(err);
    } else if (error < 0) {
        goto done;
    }
    memcpy(out->deploy_new, out->deploy_old, sizeof(out->deploy_new));

    error = read_record(&prev, g, out->deploy_old, a, err);
    if (error < 0)
        goto done;

    error = compute_load(cp, g, out->source, &prev, o, a, err);
    if (error < 0)
        goto done;
    out->nfile_errors = cp->load.nerrors;
    out->file_errors = cp->load.errors;

    /* Quick exit: nothing that could change a decision has changed. */
    if (!o->force && !o->dry_run && prev.source && !strcmp(prev.source, out->source) &&
        !record_has_pending(&prev) && !rc_observe_any_live(&cp->load.src)) {
        out->skipped = 1;
        error = RC_OK;
        goto apply;
    }

    /* Observe live clusters; simulated ones keep their declared capacity. */
    {
        struct rc_observe_report rep;
        error = rc_observe_fleet_report(&fleet, &nfleet, &cp->load.src, NULL, o->log, &rep, a, err);
        if (error < 0)
            goto done;
        out->nunreachable = rep.nunreachable;
        out->nconfig_errors = rep.nconfig;
        memcpy(out->config_error, rep.config_msg, sizeof(out->config_error));
    }
    /* an unreachable cluster keeps what it has and takes nothing new: the fleet is not in
     * sync, which the exit status says */
    for (size_t i = 0; i < nfleet; i++) {
        if (fleet[i].live && !fleet[i].reachable)
            out->apply_incomplete = 1;
    }
    error = compute_place(cp, out->source, &prev, fleet, nfleet, o, a, err);
    if (error < 0)
        goto done;
    out->result = &cp->res;
    out->input = &cp->in;
    count_states(out, &cp->res);

    /* A broken file without an earlier version may be a renamed file whose objects are placed
     * (under its old path): while one exists, nothing is moved or removed. */
    if (cp->load.unresolved) {
        for (size_t i = 0; i < cp->res.ndecisions; i++) {
            const struct pl_decision *d = &cp->res.decisions[i];
            if (d->change != PL_CHANGE_MOVED && d->change != PL_CHANGE_REMOVED)
                continue;
            error = rc_err_set(err, RC_EINVALID,
                               "unit '%s' would be %s while a source file that did not load has "
                               "no earlier version (renamed?); nothing is moved or removed until "
                               "it is fixed",
                               d->unit, d->change == PL_CHANGE_MOVED ? "moved" : "removed");
            goto done;
        }
    }

    error = diff_tree(&changes, &nchanges, g, out->deploy_old, &cp->tree, a, err);
    if (error < 0)
        goto done;
    out->paths_changed = changes;
    out->npaths_changed = nchanges;
    for (size_t i = 0; i < nchanges; i++) {
        if (strcmp(changes[i].path, CAPACITY_PATH))
            decisions_changed = 1;
    }
    if (o->dry_run || !decisions_changed)
        goto apply;

    {
        struct rc_git_file *files = rc_arena_calloc(a, cp->tree.nfiles + 1, sizeof(*files));
        struct rc_buf msg = RC_BUF_INIT;
        char tree[41], commit[41];

        for (size_t i = 0; i < cp->tree.nfiles; i++) {
            files[i].path = cp->tree.files[i].path;
            files[i].data = cp->tree.files[i].data;
            files[i].len = cp->tree.files[i].len;
        }
        error = rc_git_build_tree(tree, g, out->deploy_old[0] ? out->deploy_old : NULL, files,
                                  cp->tree.nfiles, err);
        if (error < 0)
            goto done;
        int64_t when = rc_git_commit_time(g, out->source);

        error = rd_commit_message_prev(&msg, &cp->res, prev.units, prev.nunits, out->source,
                                       cp->load.nerrors, cp->load.errors, err);
        if (error == RC_OK && when < 0)
            error = rc_err_set(err, RC_ERROR, "cannot read the time of commit %.12s", out->source);
        if (error == RC_OK)
            error = rc_git_commit(commit, g, tree, out->deploy_old[0] ? out->deploy_old : NULL,
                                  msg.ptr, when, err);
        rc_buf_release(&msg);
        if (error < 0)
            goto done;
        error =
            rc_git_update_ref(g, deploy_ref, commit, out->deploy_old[0] ? out->deploy_old : NULL,
                              "rightplace: placement commit", err);
        if (error < 0)
            goto done;
        memcpy(out->deploy_new, commit, sizeof(out->deploy_new));
        out->committed = 1;
    }

apply:
    if (o->apply && !o->dry_run && out->deploy_new[0]) {
        int incomplete = 0;
        struct rc_kube_options ko = RC_KUBE_OPTIONS_INIT;

        if (o->apply_concurrency > 0)
            ko.concurrency = o->apply_concurrency;
        error = rc_apply_deploy_opts(&incomplete, g, out->deploy_new, cp->load.src.conns,
                                     cp->load.have_src ? cp->load.src.nclusters : 0, o->resync, &ko,
                                     o->log, a, err);
        if (error < 0) {
            /* only the deploy branch moving may redo the pass; a conflict while applying
             * (a notes push) is an error of its own */
            if (error == RC_ECONFLICT)
                error = err->code = RC_ERROR;
            goto done;
        }
        out->apply_incomplete |= incomplete;
    }
    error = RC_OK;
done:
    /* The cJSON trees go now; decisions and rendered files live on in the arena. Objects'
     * payloads must not be followed after the pass. */
    compute_release(cp);
    return error;
}

int rc_pass_run(struct rc_pass_result *out, struct rc_git *g, const struct rc_pass_options *o,
                struct rc_arena *a, struct rc_err *err)
{
    int attempts = o->max_attempts > 0 ? o->max_attempts : 1;
    char last[RC_ERR_MSG_MAX] = "";
    int error = RC_OK;

    for (int i = 0; i < attempts; i++) {
        memset(out, 0, sizeof(*out));
        out->attempts = i + 1;
        rc_err_clear(err);
        error = pass_once(out, g, o, a, err);
        if (error != RC_ECONFLICT)
            return error;
        if (o->log)
            rc_log_info(o->log, "deploy branch moved under us (%s); redoing the pass", err->msg);
        snprintf(last, sizeof(last), "%s", err->msg);
        backoff(i);
    }
    return rc_err_set(err, RC_ECONFLICT, "deploy branch '%s': gave up after %d attempts: %s",
                      o->deploy_branch, attempts, last);
}

/* ==== Replay ==== */

int rc_replay(struct rc_replay_result *out, struct rc_git *g, const char *commit,
              const struct rc_pass_options *o, struct rc_arena *a, struct rc_err *err)
{
    struct compute c;
    struct rd_record rec, prev;
    char id[41], parent[41];
    char *cap = NULL;
    size_t caplen = 0;
    struct pl_cluster *fleet = NULL;
    size_t nfleet = 0;
    struct rc_path_change *changes = NULL;
    size_t nchanges = 0;
    int error;

    memset(&c, 0, sizeof(c));
    memset(out, 0, sizeof(*out));
    error = rc_git_fetch(g, err);
    if (error < 0)
        goto done;
    error = rc_git_resolve(id, g, commit, err);
    if (error < 0)
        goto done;
    error = read_record(&rec, g, id, a, err);
    if (error < 0)
        goto done;
    if (!rec.source || !rec.source[0]) {
        error = rc_err_set(err, RC_EINVALID, "commit %.12s has no %s", id, RECORD_PATH);
        goto done;
    }
    memcpy(out->source, rec.source, strlen(rec.source) < 40 ? strlen(rec.source) + 1 : 41);
    out->source[40] = '\0';
    error = rc_git_commit_parent(parent, g, id, err);
    if (error == RC_ENOTFOUND) {
        memset(&prev, 0, sizeof(prev));
        rc_err_clear(err);
    } else if (error < 0) {
        goto done;
    } else {
        error = read_record(&prev, g, parent, a, err);
        if (error < 0)
            goto done;
    }
    error = rc_git_read_file(&cap, &caplen, g, id, CAPACITY_PATH, a, err);
    if (error < 0)
        goto done;
    error = compute_load(&c, g, rec.source, &prev, o, a, err);
    if (error < 0)
        goto done;
    error = rd_capacity_parse(&fleet, &nfleet, &c.load.src.res, cap, caplen, a, err);
    if (error < 0) {
        rc_err_prefix(err, "commit %.12s: %s: ", id, CAPACITY_PATH);
        goto done;
    }
    error = compute_place(&c, rec.source, &prev, fleet, nfleet, o, a, err);
    if (error < 0)
        goto done;
    error = diff_tree(&changes, &nchanges, g, id, &c.tree, a, err);
    if (error < 0)
        goto done;
    out->match = nchanges == 0;
    out->nmismatch = nchanges;
    out->mismatch = changes;
done:
    compute_release(&c);
    return error;
}
