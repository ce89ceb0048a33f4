/*
 * rd_policy.c - SchedulePolicy manifests -> struct pl_policy (see rd_policy.h).
 *
 * Decisions where Nova's documentation is silent (nova-and-kuberay.md section 2):
 * - spreadConstraints without spreadMode divides (the 2023 CRD had no spreadMode and its
 *   spreading split replicas); topologyKey absent means kubernetes.io/metadata.name.
 * - percentageSplit is read in the CRD's list form [{topologyValue, percentage}] and in the
 *   map form {value: percentage} of the v1.5 docs; percentages are integers 0..100, each
 *   value at most once, and with Divide they add up to exactly 100 (less would leave
 *   replicas nowhere: Nova drops them, rightplace refuses the policy).
 * - orderedClusterSelector must hold an In requirement: its values are the priority order.
 * - namespaceSelector may be left out (the 2023 CRD required it; Nova 1.5's examples omit
 *   it): every namespace, as `matchExpressions: [{key: kubernetes.io/metadata.name,
 *   operator: Exists}]` says.
 */
#include "rc_sort.h"
#include "rd_policy.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pl_basics.h"
#include "pl_selector.h"
#include "rc_arena.h"
#include "rc_hash.h"
#include "rd_field.h"

int rd_selector_from_json(struct pl_selector *out, const cJSON *label_selector,
                          const struct rd_docs *docs, struct rc_arena *a, struct rc_err *err)
{
    const cJSON *ml, *me, *it;
    struct pl_labels labels;
    int rc;

    out->n = 0;
    out->req = NULL;
    if (!label_selector || cJSON_IsNull(label_selector))
        return RC_OK;
    if (!cJSON_IsObject(label_selector))
        return rd_err_at(err, RC_EINVALID, docs, label_selector,
                         "label selector must be a mapping");
    cJSON_ArrayForEach(it, label_selector)
    {
        if (strcmp(it->string, "matchLabels") && strcmp(it->string, "matchExpressions"))
            return rd_err_at(err, RC_EINVALID, docs, it,
                             "unknown field '%s' in label selector (want matchLabels, "
                             "matchExpressions)",
                             it->string);
    }
    if ((rc = rd_field_obj(&ml, label_selector, "matchLabels", 0, docs, err)) < 0 ||
        (rc = rd_field_string_map(&labels, ml, 1, docs, a, err)) < 0 ||
        (rc = rd_field_list(&me, label_selector, "matchExpressions", 0, docs, err)) < 0)
        return rc;
    if (labels.n) {
        out->req = rc_arena_calloc(a, labels.n, sizeof(*out->req));
        for (size_t i = 0; i < labels.n; i++) {
            struct pl_requirement *r = &out->req[i];
            r->key = labels.v[i].key;
            r->op = PL_OP_IN;
            r->nvalues = 1;
            r->values = rc_arena_calloc(a, 1, sizeof(*r->values));
            r->values[0] = labels.v[i].value;
        }
        out->n = labels.n;
    }
    return rd_field_requirements(out, me, 0, docs, a, err);
}

int rd_is_policy(const struct rd_object *o)
{
    return o->kind && o->group && !strcmp(o->kind, "SchedulePolicy") &&
           (!strcmp(o->group, "policy.elotl.co") || !strcmp(o->group, "rightplace.dev"));
}

/* ==== Warnings ==== */

struct wlist {
    size_t *n;
    const char ***v;
    struct rc_arena *a;
};

static void warn(struct wlist *w, const struct rd_docs *docs, const cJSON *node, const char *fmt,
                 ...) __attribute__((format(printf, 4, 5)));

static void warn(struct wlist *w, const struct rd_docs *docs, const cJSON *node, const char *fmt,
                 ...)
{
    struct rc_err tmp = RC_ERR_INIT;
    const char **v;
    char msg[RC_ERR_MSG_MAX];
    va_list ap;

    if (!w->n)
        return;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    rd_err_at(&tmp, RC_OK, docs, node, "%s", msg);
    v = rc_arena_calloc(w->a, *w->n + 1, sizeof(*v));
    if (*w->n)
        memcpy(v, *w->v, *w->n * sizeof(*v));
    v[*w->n] = rc_arena_strdup(w->a, tmp.msg);
    *w->v = v;
    (*w->n)++;
}

/* ==== Digest: the spec as JSON with keys sorted ==== */

static int cmp_items(const void *x, const void *y)
{
    const cJSON *a = *(const cJSON *const *)x, *b = *(const cJSON *const *)y;
    return strcmp(a->string, b->string);
}

static void sort_keys(cJSON *n)
{
    cJSON *c, **v;
    size_t count = 0, i = 0;

    for (c = n->child; c; c = c->next) {
        sort_keys(c);
        count++;
    }
    if (!cJSON_IsObject(n) || count < 2)
        return;
    v = malloc(count * sizeof(*v));
    if (!v)
        abort();
    for (c = n->child; c; c = c->next)
        v[i++] = c;
    rc_sort(v, count, sizeof(*v), cmp_items);
    for (i = 0; i < count; i++) {
        v[i]->prev = i ? v[i - 1] : v[count - 1]; /* cJSON: child->prev is the tail */
        v[i]->next = i + 1 < count ? v[i + 1] : NULL;
    }
    n->child = v[0];
    free(v);
}

static const char *digest(const cJSON *spec, struct rc_arena *a)
{
    cJSON *copy = cJSON_Duplicate(spec, 1);
    char *text, hex[17];

    if (!copy)
        abort(); /* out of memory: see rc_mem.h */
    sort_keys(copy);
    text = cJSON_PrintUnformatted(copy);
    cJSON_Delete(copy);
    if (!text)
        abort();
    rc_hash_hex(rc_fnv1a_str(RC_FNV_INIT, text), hex);
    cJSON_free(text);
    return rc_arena_strdup(a, hex);
}

/* ==== spreadConstraints.overrides ==== */

/* One step of a field path: a mapping key, or a sequence index (key NULL). */
struct step {
    char key[256];
    int is_index;
    long index;
};

/* Parse field path `p` into steps (at most max); returns the count, or -1 with *why set. */
static long path_parse(const char *p, struct step *out, size_t max, const char **why)
{
    size_t n = 0;

    *why = "empty path";
    while (*p) {
        if (n == max) {
            *why = "too many steps";
            return -1;
        }
        memset(&out[n], 0, sizeof(out[n]));
        if (*p == '[') {
            const char *q = p + 1;
            if (*q == '\'' || *q == '"') {
                char quote = *q++;
                const char *end = strchr(q, quote);
                if (!end || end[1] != ']' || (size_t)(end - q) >= sizeof(out[n].key) || end == q) {
                    *why = "bad ['key'] step";
                    return -1;
                }
                memcpy(out[n].key, q, (size_t)(end - q));
                p = end + 2;
            } else {
                char *end = NULL;
                long v = strtol(q, &end, 10);
                if (end == q || *end != ']' || v < 0 || q[0] == '-' || q[0] == '+') {
                    *why = "bad [index] step";
                    return -1;
                }
                out[n].is_index = 1;
                out[n].index = v;
                p = end + 1;
            }
        } else {
            size_t k = 0;
            while (p[k] && p[k] != '.' && p[k] != '[')
                k++;
            if (k == 0 || k >= sizeof(out[n].key)) {
                *why = "empty or overlong field name";
                return -1;
            }
            memcpy(out[n].key, p, k);
            p += k;
        }
        n++;
        if (*p == '.') {
            p++;
            if (!*p || *p == '.' || *p == '[') {
                *why = "empty field name";
                return -1;
            }
        } else if (*p && *p != '[') {
            *why = "expected '.' or '['";
            return -1;
        }
    }
    return n ? (long)n : -1;
}

#define RD_PATH_MAX 64

int rd_override_check_path(const char *field_path, struct rc_err *err)
{
    struct step st[RD_PATH_MAX];
    const char *why = NULL;

    if (path_parse(field_path, st, RD_PATH_MAX, &why) < 0)
        return rc_err_set(err, RC_EINVALID, "fieldPath '%s': %s", field_path, why);
    return RC_OK;
}

/* Walk steps st over root; dry: only check that they lead somewhere (nothing changes). */
static int override_walk(cJSON *root, const struct step *st, long n, const char *field_path,
                         const char *value_json, int dry, struct rc_err *err)
{
    cJSON *cur = root, *value;

    for (long i = 0; i < n; i++) {
        int last = i == n - 1;
        if (st[i].is_index) {
            if (!cJSON_IsArray(cur) || st[i].index >= cJSON_GetArraySize(cur))
                return rc_err_set(err, RC_EINVALID,
                                  "fieldPath '%s': no item [%ld] in the object (not applied)",
                                  field_path, st[i].index);
            if (last && !dry) {
                value = cJSON_Parse(value_json);
                if (!value || !cJSON_ReplaceItemInArray(cur, (int)st[i].index, value))
                    abort(); /* out of memory (value_json was printed by cJSON) */
            }
            cur = cJSON_GetArrayItem(cur, (int)st[i].index);
            continue;
        }
        if (!cJSON_IsObject(cur))
            return rc_err_set(err, RC_EINVALID,
                              "fieldPath '%s': '%s' is not inside a mapping (not applied)",
                              field_path, st[i].key);
        if (last) {
            if (dry)
                return RC_OK;
            value = cJSON_Parse(value_json);
            if (!value)
                abort();
            if (cJSON_GetObjectItemCaseSensitive(cur, st[i].key)) {
                if (!cJSON_ReplaceItemInObjectCaseSensitive(cur, st[i].key, value))
                    abort();
            } else if (!cJSON_AddItemToObject(cur, st[i].key, value)) {
                abort();
            }
            return RC_OK;
        }
        {
            cJSON *next = cJSON_GetObjectItemCaseSensitive(cur, st[i].key);
            if (!next || cJSON_IsNull(next)) { /* a missing mapping is made, as for labels */
                for (long k = i + 1; k < n; k++) {
                    if (st[k].is_index) /* a list item cannot be made up */
                        return rc_err_set(err, RC_EINVALID,
                                          "fieldPath '%s': no '%s' in the object (not applied)",
                                          field_path, st[i].key);
                }
                if (dry) /* everything below it will be made: nothing can fail */
                    return RC_OK;
                next = cJSON_CreateObject();
                if (!next)
                    abort();
                if (cJSON_GetObjectItemCaseSensitive(cur, st[i].key)) {
                    if (!cJSON_ReplaceItemInObjectCaseSensitive(cur, st[i].key, next))
                        abort();
                } else if (!cJSON_AddItemToObject(cur, st[i].key, next)) {
                    abort();
                }
            }
            cur = next;
        }
    }
    return RC_OK;
}

int rd_override_apply(cJSON *root, const char *field_path, const char *value_json,
                      struct rc_err *err)
{
    struct step st[RD_PATH_MAX];
    const char *why = NULL;
    long n = path_parse(field_path, st, RD_PATH_MAX, &why);
    int rc;

    if (n < 0)
        return rc_err_set(err, RC_EINVALID, "fieldPath '%s': %s", field_path, why);
    if ((rc = override_walk(root, st, n, field_path, value_json, 1, err)) < 0)
        return rc;
    return override_walk(root, st, n, field_path, value_json, 0, err);
}

static int known(const cJSON *it, const char *const *names)
{
    for (size_t i = 0; names[i]; i++) {
        if (!strcmp(it->string, names[i]))
            return 1;
    }
    return 0;
}

/* spreadConstraints.overrides, as Nova's examples write it:
 *   - topologyValue: wlc-1
 *     resources:
 *     - {kind: Deployment, apiVersion: apps/v1, name: ferretdb, namespace: default,
 *        override: [{fieldPath: spec.template.spec.containers[0].env[0].value,
 *                    value: {staticValue: postgres://...}}]} */
static int overrides(struct pl_policy *out, const cJSON *list, const struct rd_docs *docs,
                     struct wlist *w, struct rc_arena *a, struct rc_err *err)
{
    static const char *const entry_keys[] = {"topologyValue", "resources", NULL};
    static const char *const res_keys[] = {"kind",      "apiVersion", "name",
                                           "namespace", "override",   NULL};
    static const char *const ovr_keys[] = {"fieldPath", "value", NULL};
    const cJSON *e, *r, *ov, *f;
    size_t n = 0;
    int rc;

    if (!cJSON_IsArray(list))
        return rd_err_at(err, RC_EINVALID, docs, list, "overrides must be a sequence");
    cJSON_ArrayForEach(e, list)
    {
        cJSON_ArrayForEach(r, rd_field_get(e, "resources"))
        {
            cJSON_ArrayForEach(ov, rd_field_get(r, "override")) n++;
        }
    }
    out->overrides = rc_arena_calloc(a, n + 1, sizeof(*out->overrides));
    cJSON_ArrayForEach(e, list)
    {
        const char *tv = NULL;
        const cJSON *resources;
        if (!cJSON_IsObject(e))
            return rd_err_at(err, RC_EINVALID, docs, e, "overrides entry must be a mapping");
        cJSON_ArrayForEach(f, e)
        {
            if (!known(f, entry_keys))
                warn(w, docs, f, "unknown field 'spreadConstraints.overrides[].%s'; ignored",
                     f->string);
        }
        if ((rc = rd_field_str(&tv, e, "topologyValue", NULL, docs, a, err)) < 0 ||
            (rc = rd_field_list(&resources, e, "resources", 1, docs, err)) < 0)
            return rc;
        if (!tv)
            return rd_err_at(err, RC_EINVALID, docs, e, "overrides entry has no topologyValue");
        cJSON_ArrayForEach(r, resources)
        {
            const char *kind = NULL, *av = NULL, *name = NULL, *ns = NULL;
            const cJSON *ovl;
            if (!cJSON_IsObject(r))
                return rd_err_at(err, RC_EINVALID, docs, r, "overrides resource must be a mapping");
            cJSON_ArrayForEach(f, r)
            {
                if (!known(f, res_keys))
                    warn(w, docs, f,
                         "unknown field 'spreadConstraints.overrides[].resources[].%s'; ignored",
                         f->string);
            }
            if ((rc = rd_field_str(&kind, r, "kind", NULL, docs, a, err)) < 0 ||
                (rc = rd_field_str(&av, r, "apiVersion", NULL, docs, a, err)) < 0 ||
                (rc = rd_field_str(&name, r, "name", NULL, docs, a, err)) < 0 ||
                (rc = rd_field_str(&ns, r, "namespace", NULL, docs, a, err)) < 0 ||
                (rc = rd_field_list(&ovl, r, "override", 1, docs, err)) < 0)
                return rc;
            if (!kind || !name)
                return rd_err_at(err, RC_EINVALID, docs, r,
                                 "overrides resource needs kind and name");
            cJSON_ArrayForEach(ov, ovl)
            {
                struct pl_override *o = &out->overrides[out->noverrides];
                const cJSON *val, *sv;
                struct rc_err perr = RC_ERR_INIT;
                char *json;
                if (!cJSON_IsObject(ov))
                    return rd_err_at(err, RC_EINVALID, docs, ov, "override must be a mapping");
                cJSON_ArrayForEach(f, ov)
                {
                    if (!known(f, ovr_keys))
                        warn(w, docs, f, "unknown field in override: '%s'; ignored", f->string);
                }
                if ((rc = rd_field_str(&o->field_path, ov, "fieldPath", NULL, docs, a, err)) < 0 ||
                    (rc = rd_field_obj(&val, ov, "value", 1, docs, err)) < 0)
                    return rc;
                if (!o->field_path)
                    return rd_err_at(err, RC_EINVALID, docs, ov, "override has no fieldPath");
                if (rd_override_check_path(o->field_path, &perr) < 0)
                    return rd_err_at(err, RC_EINVALID, docs, rd_field_get(ov, "fieldPath"), "%s",
                                     perr.msg);
                cJSON_ArrayForEach(f, val)
                {
                    if (strcmp(f->string, "staticValue"))
                        warn(w, docs, f,
                             "override value '%s' is not supported (only staticValue); ignored",
                             f->string);
                }
                sv = rd_field_get(val, "staticValue");
                if (!sv)
                    return rd_err_at(err, RC_EINVALID, docs, val,
                                     "override value has no staticValue");
                json = cJSON_PrintUnformatted(sv);
                if (!json)
                    abort();
                o->value_json = rc_arena_strdup(a, json);
                cJSON_free(json);
                o->topology_value = tv;
                o->kind = kind;
                o->api_version = av;
                o->name = name;
                o->ns = ns;
                o->file = out->file;
                o->line = rd_docs_pos(docs, ov).line;
                out->noverrides++;
            }
        }
    }
    return RC_OK;
}

/* ==== Spread ==== */

static int add_split(struct pl_policy *out, const char *value, const cJSON *pct_node,
                     const cJSON *where, const struct rd_docs *docs, struct rc_arena *a,
                     struct rc_err *err)
{
    double d = cJSON_IsNumber(pct_node) ? pct_node->valuedouble : -1;

    if (!cJSON_IsNumber(pct_node) || d < 0 || d > 100 || d != (double)(int64_t)d)
        return rd_err_at(err, RC_EINVALID, docs, pct_node ? pct_node : where,
                         "percentage for '%s' must be an integer from 0 to 100", value);
    for (size_t i = 0; i < out->nsplits; i++) {
        if (!strcmp(out->splits[i].value, value))
            return rd_err_at(err, RC_EINVALID, docs, where,
                             "topology value '%s' appears twice in percentageSplit", value);
    }
    out->splits[out->nsplits].value = rc_arena_strdup(a, value);
    out->splits[out->nsplits].percent = (int64_t)d;
    out->nsplits++;
    return RC_OK;
}

static int spread(struct pl_policy *out, const cJSON *sc, const struct rd_docs *docs,
                  struct wlist *w, struct rc_arena *a, struct rc_err *err)
{
    const cJSON *ps, *it;
    const char *mode = NULL;
    struct rc_err verr = RC_ERR_INIT;
    int64_t sum = 0;
    size_t n;
    int rc;

    cJSON_ArrayForEach(it, sc)
    {
        if (!strcmp(it->string, "overrides")) {
            if ((rc = overrides(out, it, docs, w, a, err)) < 0)
                return rc;
        } else if (strcmp(it->string, "spreadMode") && strcmp(it->string, "topologyKey") &&
                   strcmp(it->string, "percentageSplit")) {
            warn(w, docs, it, "unknown field 'spreadConstraints.%s'; ignored", it->string);
        }
    }
    if ((rc = rd_field_str(&mode, sc, "spreadMode", "Divide", docs, a, err)) < 0 ||
        (rc = rd_field_str(&out->topology_key, sc, "topologyKey", NULL, docs, a, err)) < 0)
        return rc;
    if (!strcmp(mode, "Duplicate"))
        out->spread = PL_SPREAD_DUPLICATE;
    else if (!strcmp(mode, "Divide"))
        out->spread = PL_SPREAD_DIVIDE;
    else
        return rd_err_at(err, RC_EINVALID, docs, rd_field_get(sc, "spreadMode"),
                         "unknown spreadMode '%s' (want Duplicate or Divide)", mode);
    if (out->topology_key && rd_validate_label_key(out->topology_key, &verr) < 0)
        return rd_err_at(err, RC_EINVALID, docs, rd_field_get(sc, "topologyKey"), "%s", verr.msg);
    ps = rd_field_get(sc, "percentageSplit");
    if (!ps)
        return RC_OK;
    if (!cJSON_IsArray(ps) && !cJSON_IsObject(ps))
        return rd_err_at(err, RC_EINVALID, docs, ps,
                         "percentageSplit must be a sequence of {topologyValue, percentage} "
                         "or a mapping of value to percentage");
    n = (size_t)cJSON_GetArraySize(ps);
    out->splits = rc_arena_calloc(a, n ? n : 1, sizeof(*out->splits));
    cJSON_ArrayForEach(it, ps)
    {
        if (cJSON_IsObject(ps)) { /* map form: {wlc-1: 30} */
            rc = add_split(out, it->string, it, it, docs, a, err);
        } else {
            const char *value = NULL;
            const cJSON *f;
            if (!cJSON_IsObject(it))
                return rd_err_at(err, RC_EINVALID, docs, it,
                                 "percentageSplit entry must be a mapping");
            cJSON_ArrayForEach(f, it)
            {
                if (strcmp(f->string, "topologyValue") && strcmp(f->string, "percentage"))
                    warn(w, docs, f,
                         "unknown field 'spreadConstraints.percentageSplit[].%s'; ignored",
                         f->string);
            }
            if ((rc = rd_field_str(&value, it, "topologyValue", NULL, docs, a, err)) < 0)
                return rc;
            if (!value)
                return rd_err_at(err, RC_EINVALID, docs, it,
                                 "percentageSplit entry has no 'topologyValue'");
            rc = add_split(out, value, rd_field_get(it, "percentage"), it, docs, a, err);
        }
        if (rc < 0)
            return rc;
        sum += out->splits[out->nsplits - 1].percent;
    }
    if (out->spread == PL_SPREAD_DIVIDE && sum > 100)
        return rd_err_at(err, RC_EINVALID, docs, ps,
                         "percentageSplit adds up to %lld%%, more than 100%%", (long long)sum);
    if (out->spread == PL_SPREAD_DIVIDE && sum < 100)
        return rd_err_at(err, RC_EINVALID, docs, ps,
                         "percentageSplit adds up to %lld%%, not 100%%: %lld%% of the replicas "
                         "would run nowhere (Nova drops them; rightplace refuses the policy)",
                         (long long)sum, 100 - (long long)sum);
    if (out->spread == PL_SPREAD_DUPLICATE && out->nsplits)
        warn(w, docs, ps, "percentageSplit has no effect with spreadMode Duplicate; ignored");
    return RC_OK;
}

/* ==== Re-placement (rightplace's annotations on the policy) ==== */

#define RD_REPLACE_WHEN_FULL "rightplace.dev/replace-when-full"
#define RD_REPLACE_UNREACHABLE "rightplace.dev/replace-unreachable-after"

/* A duration of at least one second: a whole number with an optional unit s, m or h
 * ("300", "90s", "5m", "1h"). */
static int duration(int64_t *out, const char *s)
{
    char *end = NULL;
    long long v;
    int64_t mul = 1;

    if (!s || *s < '0' || *s > '9')
        return -1;
    v = strtoll(s, &end, 10);
    if (!strcmp(end, "h"))
        mul = 3600;
    else if (!strcmp(end, "m"))
        mul = 60;
    else if (*end && strcmp(end, "s"))
        return -1;
    if (v < 1 || v > INT32_MAX)
        return -1;
    *out = (int64_t)v * mul;
    return 0;
}

/* metadata.annotations: rightplace.dev/replace-when-full: "true" and
 * rightplace.dev/replace-unreachable-after: "<duration>" opt the policy's units into
 * re-placement (Nova has no such fields; annotations keep the policy a valid Nova object). */
static int replacement(struct pl_policy *out, const struct rd_object *o, const struct rd_docs *docs,
                       struct wlist *w, struct rc_err *err)
{
    const cJSON *ann = rd_field_get(rd_field_get(o->root, "metadata"), "annotations"), *it;

    out->replace_unreachable_after = 0;
    if (!cJSON_IsObject(ann))
        ann = NULL;
    cJSON_ArrayForEach(it, ann)
    {
        const char *v = cJSON_IsString(it) ? it->valuestring : NULL;
        if (!strcmp(it->string, RD_REPLACE_WHEN_FULL)) {
            if (!v || (strcmp(v, "true") && strcmp(v, "false")))
                return rd_err_at(err, RC_EINVALID, docs, it, "%s must be \"true\" or \"false\"",
                                 RD_REPLACE_WHEN_FULL);
            out->replace_when_full = !strcmp(v, "true");
        } else if (!strcmp(it->string, RD_REPLACE_UNREACHABLE)) {
            if (duration(&out->replace_unreachable_after, v) < 0)
                return rd_err_at(err, RC_EINVALID, docs, it,
                                 "%s must be a duration in whole seconds, minutes or hours "
                                 "(\"300s\", \"5m\", \"1h\")",
                                 RD_REPLACE_UNREACHABLE);
        } else if (!strncmp(it->string, "rightplace.dev/", 15)) {
            warn(w, docs, it, "unknown annotation '%s' on SchedulePolicy '%s'; ignored", it->string,
                 o->name);
        }
    }
    return RC_OK;
}

/* ==== The policy ==== */

static const char *const known_spec[] = {"namespaceSelector", "resourceSelectors",
                                         "clusterSelector",   "orderedClusterSelector",
                                         "groupBy",           "spreadConstraints"};

int rd_policy_parse_ex(struct pl_policy *out, const struct rd_object *o, const struct rd_docs *docs,
                       size_t *nwarnings, const char ***warnings, struct rc_arena *a,
                       struct rc_err *err)
{
    struct wlist w = {nwarnings, warnings, a};
    const cJSON *spec, *nsel, *rsel, *lsels, *csel, *osel, *gb, *sc, *it;
    struct rc_err verr = RC_ERR_INIT;
    size_t n, i = 0;
    int rc;

    memset(out, 0, sizeof(*out));
    out->name = o->name;
    out->file = o->file;
    out->line = o->pos.line;
    if (strcmp(o->version, "v1alpha1"))
        return rd_err_at(err, RC_EINVALID, docs, rd_field_get(o->root, "apiVersion"),
                         "unsupported apiVersion '%s' for SchedulePolicy (want %s/v1alpha1)",
                         o->api_version, o->group);
    if ((rc = rd_field_obj(&spec, o->root, "spec", 0, docs, err)) < 0)
        return rc;
    if (!spec)
        return rd_err_at(err, RC_EINVALID, docs, o->root, "SchedulePolicy '%s' has no spec",
                         o->name);
    cJSON_ArrayForEach(it, spec)
    {
        size_t k;
        for (k = 0; k < sizeof(known_spec) / sizeof(known_spec[0]); k++) {
            if (!strcmp(it->string, known_spec[k]))
                break;
        }
        if (k == sizeof(known_spec) / sizeof(known_spec[0]))
            warn(&w, docs, it, "unknown field 'spec.%s' in SchedulePolicy '%s'; ignored",
                 it->string, o->name);
    }
    if ((rc = rd_field_obj(&nsel, spec, "namespaceSelector", 0, docs, err)) < 0 ||
        (rc = rd_field_obj(&rsel, spec, "resourceSelectors", 0, docs, err)) < 0 ||
        (rc = rd_field_obj(&csel, spec, "clusterSelector", 0, docs, err)) < 0 ||
        (rc = rd_field_obj(&osel, spec, "orderedClusterSelector", 0, docs, err)) < 0 ||
        (rc = rd_field_obj(&gb, spec, "groupBy", 0, docs, err)) < 0 ||
        (rc = rd_field_obj(&sc, spec, "spreadConstraints", 0, docs, err)) < 0)
        return rc;
    cJSON_ArrayForEach(it, rsel)
    {
        if (strcmp(it->string, "labelSelectors"))
            warn(&w, docs, it,
                 "unknown field 'spec.resourceSelectors.%s' in SchedulePolicy '%s'; "
                 "ignored",
                 it->string, o->name);
    }
    cJSON_ArrayForEach(it, gb)
    {
        if (strcmp(it->string, "labelKey"))
            warn(&w, docs, it, "unknown field 'spec.groupBy.%s' in SchedulePolicy '%s'; ignored",
                 it->string, o->name);
    }
    if (!rsel || !(lsels = rd_field_get(rsel, "labelSelectors")))
        return rd_err_at(err, RC_EINVALID, docs, rsel ? rsel : spec,
                         "SchedulePolicy '%s' needs spec.resourceSelectors.labelSelectors",
                         o->name);
    if (!cJSON_IsArray(lsels) || !(n = (size_t)cJSON_GetArraySize(lsels)))
        return rd_err_at(err, RC_EINVALID, docs, lsels,
                         "labelSelectors of SchedulePolicy '%s' must be a non-empty sequence "
                         "(`- matchExpressions: []` selects every object)",
                         o->name);
    /* absent (Nova 1.5 examples): every namespace, as the empty selector */
    if ((rc = rd_selector_from_json(&out->namespace_selector, nsel, docs, a, err)) < 0)
        return rc;
    out->resource_selectors = rc_arena_calloc(a, n, sizeof(*out->resource_selectors));
    cJSON_ArrayForEach(it, lsels)
    {
        if (!cJSON_IsObject(it))
            return rd_err_at(err, RC_EINVALID, docs, it, "label selector must be a mapping");
        if ((rc = rd_selector_from_json(&out->resource_selectors[i++], it, docs, a, err)) < 0)
            return rc;
    }
    out->nresource_selectors = n;
    if (csel) {
        out->has_cluster_selector = 1;
        if ((rc = rd_selector_from_json(&out->cluster_selector, csel, docs, a, err)) < 0)
            return rc;
    }
    if (osel) {
        size_t k;
        out->has_ordered = 1;
        if ((rc = rd_selector_from_json(&out->ordered, osel, docs, a, err)) < 0)
            return rc;
        for (k = 0; k < out->ordered.n && out->ordered.req[k].op != PL_OP_IN; k++)
            ;
        if (k == out->ordered.n)
            return rd_err_at(err, RC_EINVALID, docs, osel,
                             "orderedClusterSelector needs a matchExpressions requirement with "
                             "operator In (its values are the priority order)");
    }
    if (gb) {
        if ((rc = rd_field_str(&out->group_by, gb, "labelKey", NULL, docs, a, err)) < 0)
            return rc;
        if (!out->group_by)
            return rd_err_at(err, RC_EINVALID, docs, gb, "groupBy needs a labelKey");
        if (rd_validate_label_key(out->group_by, &verr) < 0)
            return rd_err_at(err, RC_EINVALID, docs, rd_field_get(gb, "labelKey"), "%s", verr.msg);
    }
    if (sc && (rc = spread(out, sc, docs, &w, a, err)) < 0)
        return rc;
    if ((rc = replacement(out, o, docs, &w, err)) < 0)
        return rc;
    out->digest = digest(spec, a);
    return RC_OK;
}

int rd_policy_parse(struct pl_policy *out, const struct rd_object *o, const struct rd_docs *docs,
                    struct rc_arena *a, struct rc_err *err)
{
    return rd_policy_parse_ex(out, o, docs, NULL, NULL, a, err);
}
