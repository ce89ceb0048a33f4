/*
 * test_pl_cases.c - placement cases as data: every folder under
 * tests/placement/ holds input.yaml     Cluster, SchedulePolicy, Namespace and
 * workload objects (multi-document), loaded with rd_source_load exactly as a
 * source repository is; previous.yaml  optional: a placements.yaml as the
 * previous record (read here with rd_yaml: unit, policy, policyDigest, objects,
 * state, clusters); expected.yaml  the decisions that must come out: setup:
 * optional knobs the YAML fleet cannot express: unreachable: [cluster, ...]
 * clusters that could not be observed; unreachableFor: {cluster: seconds} how long present:
 * {cluster: [unit id, ...]} units whose pods were observed there requested: {cluster: {res: qty}}
 * observed requests on its first node units:     one entry per decision (every decision must be
 * listed): unit, state, clusters: [...], shares: {cluster: percent}, verdicts: {cluster: kind},
 * detail: {cluster: substring}, nodesAdded: {cluster: n}, reason: substring, change, cause:
 * substring warnings:  substrings, one per engine warning (absent: no warnings) overrides (per
 * unit): substrings of the overrides it gets. rendered: {path: [substring,
 * ...]} files of the deploy tree and what they hold; {path: null}: no such file. sourceWarnings:
 * substrings, one per warning of the load (absent: not checked). errors: substrings of the input's
 * load errors (the case then checks nothing else). Each case is also run with its input arrays
 * reversed, which must not change a byte of the decisions. One failure report lists every mismatch
 * of every case.
 */
#include "th.h"

#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "pl_basics.h"
#include "pl_engine.h"
#include "pl_quantity.h"
#include "rc_arena.h"
#include "rc_buf.h"
#include "rc_mem.h"
#include "rd_output.h"
#include "rd_source.h"
#include "rd_yaml.h"

#define CASES_DIR RP_SOURCE_DIR "/tests/placement"

struct ctx {
    const char *name;
    int failed;
    struct rc_buf *log;
};

static void bad(struct ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void bad(struct ctx *c, const char *fmt, ...)
{
    va_list ap;

    rc_buf_printf(c->log, NULL, "%s: ", c->name);
    va_start(ap, fmt);
    rc_buf_vprintf(c->log, NULL, fmt, ap);
    va_end(ap);
    rc_buf_puts(c->log, "\n", NULL);
    c->failed++;
}

static int read_text(struct rc_buf *b, const char *path)
{
    struct rc_err err = RC_ERR_INIT;
    return rc_buf_read_file(b, path, &err);
}

static int file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

static const char *str_item(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static const struct pl_decision *find_decision(const struct pl_result *r, const char *unit)
{
    for (size_t i = 0; i < r->ndecisions; i++) {
        if (!strcmp(r->decisions[i].unit, unit))
            return &r->decisions[i];
    }
    return NULL;
}

static const struct pl_verdict *find_verdict(const struct pl_decision *d, const char *cluster)
{
    for (size_t i = 0; i < d->nverdicts; i++) {
        if (!strcmp(d->verdicts[i].cluster, cluster))
            return &d->verdicts[i];
    }
    return NULL;
}

static struct pl_cluster *find_cluster(struct rd_source *s, const char *name)
{
    for (size_t i = 0; i < s->nclusters; i++) {
        if (!strcmp(s->clusters[i].name, name))
            return &s->clusters[i];
    }
    return NULL;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void apply_setup(struct ctx *c, const cJSON *setup, struct rd_source *src,
                        struct rc_arena *a)
{
    const cJSON *it, *v;

    cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(setup, "unreachable"))
    {
        struct pl_cluster *cl = cJSON_IsString(it) ? find_cluster(src, it->valuestring) : NULL;
        if (!cl)
            bad(c, "setup: unknown cluster in unreachable");
        else
            cl->reachable = 0;
    }
    cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(setup, "unreachableFor"))
    {
        struct pl_cluster *cl = find_cluster(src, it->string);
        if (!cl || !cJSON_IsNumber(it))
            bad(c, "setup: bad unreachableFor '%s'", it->string);
        else
            cl->unreachable_for = (int64_t)it->valuedouble;
    }
    cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(setup, "present"))
    {
        struct pl_cluster *cl = find_cluster(src, it->string);
        size_t n = (size_t)cJSON_GetArraySize(it), k = 0;
        if (!cl) {
            bad(c, "setup: unknown cluster '%s' in present", it->string);
            continue;
        }
        cl->present = rc_arena_calloc(a, n + 1, sizeof(char *));
        cJSON_ArrayForEach(v, it)
        {
            char label[17];
            pl_unit_label(v->valuestring, label);
            cl->present[k++] = rc_arena_strdup(a, label);
        }
        qsort(cl->present, k, sizeof(char *), cmp_str);
        cl->npresent = k;
    }
    cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(setup, "requested"))
    {
        struct pl_cluster *cl = find_cluster(src, it->string);
        if (!cl || cl->nnodes == 0) {
            bad(c, "setup: no nodes on cluster '%s' for requested", it->string);
            continue;
        }
        cJSON_ArrayForEach(v, it)
        {
            struct rc_err err = RC_ERR_INIT;
            int r = pl_resnames_find(&src->res, v->string);
            int64_t q;
            if (r < 0 || !cJSON_IsString(v) || pl_quantity_parse(&q, v->valuestring, &err) < 0) {
                bad(c, "setup: bad requested '%s'", v->string);
                continue;
            }
            cl->nodes[0].requested.v[r] = q;
        }
    }
}

static void dump_decisions(struct rc_buf *b, const struct pl_result *r)
{
    for (size_t i = 0; i < r->ndecisions; i++) {
        const struct pl_decision *d = &r->decisions[i];
        rc_buf_printf(b, NULL, "  %s: %s [%s] ->", d->unit, pl_state_name(d->state),
                      pl_change_name(d->change));
        for (size_t k = 0; k < d->ntargets; k++)
            rc_buf_printf(b, NULL, " %s(%" PRId64 ")", d->targets[k].cluster,
                          d->targets[k].percent);
        rc_buf_printf(b, NULL, "; %s%s%s\n", d->reason ? d->reason : "",
                      d->cause ? "; cause: " : "", d->cause ? d->cause : "");
        for (size_t k = 0; k < d->nverdicts; k++)
            rc_buf_printf(b, NULL, "    %s %s (+%" PRId64 "): %s\n", d->verdicts[k].cluster,
                          pl_verdict_name(d->verdicts[k].kind), d->verdicts[k].nodes_added,
                          d->verdicts[k].detail);
    }
    for (size_t i = 0; i < r->nwarnings; i++)
        rc_buf_printf(b, NULL, "  warning: %s\n", r->warnings[i]);
}

static void check_unit(struct ctx *c, const cJSON *eu, const struct pl_result *r)
{
    const char *unit = str_item(eu, "unit"), *s;
    const struct pl_decision *d;
    const cJSON *it;

    if (!unit) {
        bad(c, "expected.yaml: a unit without 'unit'");
        return;
    }
    d = find_decision(r, unit);
    if (!d) {
        bad(c, "no decision for unit '%s'", unit);
        return;
    }
    if ((s = str_item(eu, "state")) && strcmp(s, pl_state_name(d->state)))
        bad(c, "%s: state %s, expected %s", unit, pl_state_name(d->state), s);
    if ((s = str_item(eu, "change")) && strcmp(s, pl_change_name(d->change)))
        bad(c, "%s: change %s, expected %s", unit, pl_change_name(d->change), s);
    if ((s = str_item(eu, "reason")) && (!d->reason || !strstr(d->reason, s)))
        bad(c, "%s: reason '%s' lacks '%s'", unit, d->reason ? d->reason : "", s);
    if ((s = str_item(eu, "cause")) && (!d->cause || !strstr(d->cause, s)))
        bad(c, "%s: cause '%s' lacks '%s'", unit, d->cause ? d->cause : "(none)", s);
    if ((it = cJSON_GetObjectItemCaseSensitive(eu, "clusters"))) {
        size_t n = (size_t)cJSON_GetArraySize(it), k = 0;
        const cJSON *v;
        int same = n == d->ntargets;
        cJSON_ArrayForEach(v, it)
        {
            if (k < d->ntargets && cJSON_IsString(v) &&
                strcmp(v->valuestring, d->targets[k].cluster))
                same = 0;
            k++;
        }
        if (!same) {
            struct rc_buf got = RC_BUF_INIT, want = RC_BUF_INIT;
            for (k = 0; k < d->ntargets; k++)
                rc_buf_printf(&got, NULL, "%s%s", k ? "," : "", d->targets[k].cluster);
            k = 0;
            cJSON_ArrayForEach(v, it)
            {
                rc_buf_printf(&want, NULL, "%s%s", k++ ? "," : "",
                              cJSON_IsString(v) ? v->valuestring : "?");
            }
            bad(c, "%s: clusters [%s], expected [%s]", unit, got.ptr, want.ptr);
            rc_buf_release(&got);
            rc_buf_release(&want);
        }
    }
    cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(eu, "shares"))
    {
        int found = 0;
        for (size_t k = 0; k < d->ntargets; k++) {
            if (!strcmp(d->targets[k].cluster, it->string)) {
                found = 1;
                if (d->targets[k].percent != (int64_t)it->valuedouble)
                    bad(c, "%s: share of %s is %" PRId64 ", expected %d", unit, it->string,
                        d->targets[k].percent, (int)it->valuedouble);
            }
        }
        if (!found)
            bad(c, "%s: no share on %s", unit, it->string);
    }
    cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(eu, "verdicts"))
    {
        const struct pl_verdict *v = find_verdict(d, it->string);
        if (!v)
            bad(c, "%s: no verdict for %s", unit, it->string);
        else if (!cJSON_IsString(it) || strcmp(pl_verdict_name(v->kind), it->valuestring))
            bad(c, "%s: verdict on %s is %s, expected %s", unit, it->string,
                pl_verdict_name(v->kind), cJSON_IsString(it) ? it->valuestring : "?");
    }
    cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(eu, "detail"))
    {
        const struct pl_verdict *v = find_verdict(d, it->string);
        if (!v)
            bad(c, "%s: no verdict for %s", unit, it->string);
        else if (!cJSON_IsString(it) || !v->detail || !strstr(v->detail, it->valuestring))
            bad(c, "%s: detail on %s is '%s', expected to contain '%s'", unit, it->string,
                v->detail ? v->detail : "", cJSON_IsString(it) ? it->valuestring : "?");
    }
    if ((it = cJSON_GetObjectItemCaseSensitive(eu, "overrides"))) {
        const cJSON *v;
        size_t n = 0;
        cJSON_ArrayForEach(v, it)
        {
            int found = 0;
            for (size_t k = 0; k < d->noverrides; k++)
                found |= cJSON_IsString(v) && strstr(d->overrides[k], v->valuestring) != NULL;
            if (!found)
                bad(c, "%s: no override contains '%s'", unit,
                    cJSON_IsString(v) ? v->valuestring : "?");
            n++;
        }
        if (n != d->noverrides)
            bad(c, "%s: %zu overrides, expected %zu", unit, d->noverrides, n);
    }
    cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(eu, "nodesAdded"))
    {
        const struct pl_verdict *v = find_verdict(d, it->string);
        if (!v || v->nodes_added != (int64_t)it->valuedouble)
            bad(c, "%s: nodes added on %s is %" PRId64 ", expected %d", unit, it->string,
                v ? v->nodes_added : -1, (int)it->valuedouble);
    }
}

/* rendered: {path: [substring, ...]} the deploy tree file must hold each substring;
 * {path: null} the file must not exist. */
static void check_rendered(struct ctx *c, const cJSON *want, const struct pl_input *in,
                           const struct pl_result *r, struct rc_arena *a)
{
    struct rd_tree t;
    struct rc_err err = RC_ERR_INIT;
    const cJSON *it, *v;

    if (!want)
        return;
    if (rd_render_tree(&t, r, in, "0000000000000000000000000000000000000000", NULL, a, &err) < 0) {
        bad(c, "rd_render_tree: %s", err.msg);
        return;
    }
    cJSON_ArrayForEach(it, want)
    {
        const struct rd_tree_file *file = NULL;
        for (size_t i = 0; i < t.nfiles; i++) {
            if (!strcmp(t.files[i].path, it->string))
                file = &t.files[i];
        }
        if (cJSON_IsNull(it)) {
            if (file)
                bad(c, "rendered %s, expected no such file", it->string);
            continue;
        }
        if (!file) {
            bad(c, "no rendered file %s", it->string);
            continue;
        }
        cJSON_ArrayForEach(v, it)
        {
            if (!cJSON_IsString(v) || !strstr(file->data, v->valuestring))
                bad(c, "%s lacks '%s':\n%s", it->string, cJSON_IsString(v) ? v->valuestring : "?",
                    file->data);
        }
    }
}

static char *dump_to_string(const struct pl_result *r)
{
    struct rc_buf b = RC_BUF_INIT;
    dump_decisions(&b, r);
    return rc_buf_detach(&b, NULL);
}

/* Run the engine again on reversed copies of every input array: same decisions.
 */
static void check_order_independent(struct ctx *c, const struct pl_input *in,
                                    const struct pl_result *first)
{
    struct rc_arena a = RC_ARENA_INIT;
    struct pl_input rev = *in;
    struct pl_object *o = rc_arena_calloc(&a, in->nobjects + 1, sizeof(*o));
    struct pl_cluster *cl = rc_arena_calloc(&a, in->nclusters + 1, sizeof(*cl));
    struct pl_policy *p = rc_arena_calloc(&a, in->npolicies + 1, sizeof(*p));
    struct pl_prev_unit *pv = rc_arena_calloc(&a, in->nprev + 1, sizeof(*pv));
    struct pl_result out;
    struct rc_err err = RC_ERR_INIT;
    char *x, *y;

    for (size_t i = 0; i < in->nobjects; i++)
        o[i] = in->objects[in->nobjects - 1 - i];
    for (size_t i = 0; i < in->nclusters; i++) {
        const struct pl_cluster *src = &in->clusters[in->nclusters - 1 - i];
        cl[i] = *src;
        cl[i].nodes = rc_arena_calloc(&a, src->nnodes + 1, sizeof(*cl[i].nodes));
        for (size_t k = 0; k < src->nnodes; k++)
            cl[i].nodes[k] = src->nodes[src->nnodes - 1 - k];
    }
    for (size_t i = 0; i < in->npolicies; i++)
        p[i] = in->policies[in->npolicies - 1 - i];
    for (size_t i = 0; i < in->nprev; i++)
        pv[i] = in->prev[in->nprev - 1 - i];
    rev.objects = o;
    rev.clusters = cl;
    rev.policies = p;
    rev.prev = pv;
    if (pl_place(&out, &rev, &a, &err) < 0) {
        bad(c, "reversed input: %s", err.msg);
    } else {
        x = dump_to_string(first);
        y = dump_to_string(&out);
        if (strcmp(x, y))
            bad(c, "reversing the input arrays changed the decisions:\n%s---\n%s", x, y);
        free(x);
        free(y);
    }
    rc_arena_release(&a);
}

/* Feed the decisions back as the previous record: nothing may change. */
static void check_second_pass_quiet(struct ctx *c, const struct pl_input *in,
                                    const struct pl_result *first)
{
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_buf rec_text = RC_BUF_INIT;
    struct rd_record rec = {"", NULL, 0, NULL, NULL};
    struct pl_input again = *in;
    struct pl_result out;
    struct rc_err err = RC_ERR_INIT;

    if (rd_record_emit(&rec_text, first, NULL, &err) < 0 ||
        rd_record_parse(&rec, rec_text.ptr, rec_text.len, &a, &err) < 0) {
        bad(c, "record round trip: %s", err.msg);
        goto done;
    }
    again.nprev = rec.nunits;
    again.prev = rec.units;
    if (pl_place(&out, &again, &a, &err) < 0) {
        bad(c, "second pass: %s", err.msg);
        goto done;
    }
    for (size_t i = 0; i < out.ndecisions; i++) {
        const struct pl_decision *d = &out.decisions[i];
        const struct pl_decision *f = find_decision(first, d->unit);
        if (d->change != PL_CHANGE_NONE)
            bad(c, "second pass: %s changed (%s%s%s)", d->unit, pl_change_name(d->change),
                d->cause ? ": " : "", d->cause ? d->cause : "");
        if (!f || f->state != d->state || f->ntargets != d->ntargets)
            bad(c, "second pass: %s decided differently", d->unit);
    }
done:
    rc_buf_release(&rec_text);
    rc_arena_release(&a);
}

static void run_case(struct ctx *c, const char *dir)
{
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_buf path = RC_BUF_INIT, input = RC_BUF_INIT, prevtext = RC_BUF_INIT,
                  exptext = RC_BUF_INIT;
    struct rd_source src = RD_SOURCE_INIT;
    struct rd_docs *exp = NULL;
    struct rd_record rec = {"", NULL, 0, NULL, NULL};
    struct rc_err err = RC_ERR_INIT;
    struct pl_input in;
    struct pl_result out;
    const cJSON *root, *units, *it;
    struct rd_file f;
    int loaded = 0, failed_before = c->failed;
    size_t nexp = 0;

    memset(&in, 0, sizeof(in));
    rc_buf_printf(&path, NULL, "%s/input.yaml", dir);
    if (read_text(&input, path.ptr) < 0) {
        bad(c, "cannot read input.yaml");
        goto done;
    }
    f.path = rc_arena_printf(&a, "tests/placement/%s/input.yaml", c->name);
    f.data = input.ptr;
    f.len = input.len;
    if (rd_source_load(&src, &f, 1, &a, &err) < 0) {
        bad(c, "rd_source_load: %s", err.msg);
        goto done;
    }
    loaded = 1;

    rc_buf_reset(&path);
    rc_buf_printf(&path, NULL, "%s/expected.yaml", dir);
    if (read_text(&exptext, path.ptr) < 0 ||
        rd_yaml_load(&exp, "expected.yaml", exptext.ptr, exptext.len, NULL, NULL, &err) < 0 ||
        rd_docs_count(exp) != 1) {
        bad(c, "cannot load expected.yaml: %s", err.msg);
        goto done;
    }
    root = rd_docs_get(exp, 0);
    {
        /* errors: substrings of the load errors (the input file is refused whole) */
        const cJSON *want = cJSON_GetObjectItemCaseSensitive(root, "errors");
        size_t nw = 0;
        cJSON_ArrayForEach(it, want)
        {
            int found = 0;
            for (size_t i = 0; i < src.nerrors; i++)
                found |= cJSON_IsString(it) && strstr(src.errors[i].msg, it->valuestring) != NULL;
            if (!found)
                bad(c, "no input error contains '%s' (%zu errors: %s)",
                    cJSON_IsString(it) ? it->valuestring : "?", src.nerrors,
                    src.nerrors ? src.errors[0].msg : "");
            nw++;
        }
        for (size_t i = 0; nw == 0 && i < src.nerrors; i++)
            bad(c, "input error: %s", src.errors[i].msg);
        if (src.nerrors || nw)
            goto done;
    }
    apply_setup(c, cJSON_GetObjectItemCaseSensitive(root, "setup"), &src, &a);

    rc_buf_reset(&path);
    rc_buf_printf(&path, NULL, "%s/previous.yaml", dir);
    if (file_exists(path.ptr)) {
        if (read_text(&prevtext, path.ptr) < 0 ||
            rd_record_parse(&rec, prevtext.ptr, prevtext.len, &a, &err) < 0) {
            bad(c, "previous.yaml: %s", err.msg);
            goto done;
        }
    }

    in.res = &src.res;
    in.nobjects = src.nobjects;
    in.objects = src.objects;
    in.nnamespaces = src.nnamespaces;
    in.namespaces = src.namespaces;
    in.nclusters = src.nclusters;
    in.clusters = src.clusters;
    in.npolicies = src.npolicies;
    in.policies = src.policies;
    in.nprev = rec.nunits;
    in.prev = rec.units;
    if (pl_place(&out, &in, &a, &err) < 0) {
        bad(c, "pl_place: %s", err.msg);
        goto done;
    }

    units = cJSON_GetObjectItemCaseSensitive(root, "units");
    cJSON_ArrayForEach(it, units)
    {
        check_unit(c, it, &out);
        nexp++;
    }
    if (nexp != out.ndecisions)
        bad(c, "%zu decisions, expected.yaml lists %zu", out.ndecisions, nexp);
    {
        const cJSON *w = cJSON_GetObjectItemCaseSensitive(root, "warnings");
        size_t nw = 0;
        cJSON_ArrayForEach(it, w)
        {
            int found = 0;
            for (size_t i = 0; i < out.nwarnings; i++)
                found |= cJSON_IsString(it) && strstr(out.warnings[i], it->valuestring) != NULL;
            if (!found)
                bad(c, "no warning contains '%s'", cJSON_IsString(it) ? it->valuestring : "?");
            nw++;
        }
        if (nw != out.nwarnings)
            bad(c, "%zu warnings, expected %zu", out.nwarnings, nw);
    }
    {
        /* sourceWarnings: substrings, one per warning of the load (unknown fields, ...) */
        const cJSON *w = cJSON_GetObjectItemCaseSensitive(root, "sourceWarnings");
        size_t nw = 0, missing = 0;
        cJSON_ArrayForEach(it, w)
        {
            int found = 0;
            for (size_t i = 0; i < src.nwarnings; i++)
                found |= cJSON_IsString(it) && strstr(src.warnings[i], it->valuestring) != NULL;
            if (!found)
                bad(c, "no source warning contains '%s'",
                    cJSON_IsString(it) ? it->valuestring : "?");
            missing += !found;
            nw++;
        }
        if (w && (nw != src.nwarnings || missing)) {
            bad(c, "%zu source warnings, expected %zu", src.nwarnings, nw);
            for (size_t i = 0; i < src.nwarnings; i++)
                bad(c, "source warning: %s", src.warnings[i]);
        }
    }
    check_rendered(c, cJSON_GetObjectItemCaseSensitive(root, "rendered"), &in, &out, &a);
    check_order_independent(c, &in, &out);
    check_second_pass_quiet(c, &in, &out);
    if (c->failed > failed_before) {
        rc_buf_printf(c->log, NULL, "%s: decisions were:\n", c->name);
        dump_decisions(c->log, &out);
    }

done:
    if (loaded)
        rd_source_release(&src);
    rd_docs_free(exp);
    rc_buf_release(&path);
    rc_buf_release(&input);
    rc_buf_release(&prevtext);
    rc_buf_release(&exptext);
    rc_arena_release(&a);
}

static void test_pl_cases__all(void **state)
{
    DIR *d = opendir(CASES_DIR);
    struct dirent *e;
    char **names = NULL;
    size_t n = 0, cap = 0, failed_cases = 0;
    struct rc_buf log = RC_BUF_INIT;

    (void)state;
    assert_non_null(d);
    while ((e = readdir(d))) {
        struct rc_buf p = RC_BUF_INIT;
        struct stat st;
        int is_dir;

        if (e->d_name[0] == '.')
            continue;
        rc_buf_printf(&p, NULL, "%s/%s", CASES_DIR, e->d_name);
        is_dir = stat(p.ptr, &st) == 0 && S_ISDIR(st.st_mode);
        rc_buf_release(&p);
        if (!is_dir)
            continue; /* README.md */
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            names = rc_xrealloc(names, cap * sizeof(*names));
            assert_non_null(names);
        }
        names[n++] = rc_xstrdup(e->d_name);
    }
    closedir(d);
    qsort(names, n, sizeof(*names), cmp_str);
    for (size_t i = 0; i < n; i++) {
        struct ctx c = {names[i], 0, &log};
        struct rc_buf dir = RC_BUF_INIT;
        rc_buf_printf(&dir, NULL, "%s/%s", CASES_DIR, names[i]);
        run_case(&c, dir.ptr);
        rc_buf_release(&dir);
        failed_cases += c.failed > 0;
        printf("%s %s\n", c.failed ? "FAIL" : "ok  ", names[i]);
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    if (failed_cases)
        printf("%s", log.ptr);
    rc_buf_release(&log);
    printf("%zu placement cases, %zu failed\n", n, failed_cases);
    assert_true(n >= 30);
    assert_int_equal(failed_cases, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pl_cases__all),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
