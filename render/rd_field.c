/*
 * rd_field.c - typed reads of manifest fields with positioned errors (see rd_field.h).
 *
 * It does not know any kind's schema: callers say which field they want and what type.
 */
#include "rd_field.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pl_basics.h"
#include "pl_quantity.h"
#include "pl_selector.h"
#include "rc_arena.h"
#include "rd_object.h"

static const char *type_name(const cJSON *n)
{
    if (cJSON_IsString(n))
        return "a string";
    if (cJSON_IsNumber(n))
        return "a number";
    if (cJSON_IsBool(n))
        return "a boolean";
    if (cJSON_IsArray(n))
        return "a sequence";
    if (cJSON_IsObject(n))
        return "a mapping";
    return "null";
}

const cJSON *rd_field_get(const cJSON *obj, const char *key)
{
    const cJSON *n;

    if (!cJSON_IsObject(obj))
        return NULL;
    n = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!n || cJSON_IsNull(n))
        return NULL;
    return n;
}

int rd_field_str(const char **out, const cJSON *obj, const char *key, const char *def,
                 const struct rd_docs *docs, struct rc_arena *a, struct rc_err *err)
{
    const cJSON *n = rd_field_get(obj, key);

    if (!n) {
        *out = def;
        return RC_OK;
    }
    if (!cJSON_IsString(n))
        return rd_err_at(err, RC_EINVALID, docs, n, "field '%s' must be a string, not %s", key,
                         type_name(n));
    *out = rc_arena_strdup(a, n->valuestring);
    return RC_OK;
}

int rd_field_int(int64_t *out, const cJSON *obj, const char *key, int64_t def, int64_t min,
                 int64_t max, const struct rd_docs *docs, struct rc_err *err)
{
    const cJSON *n = rd_field_get(obj, key);
    double d;

    if (!n) {
        *out = def;
        return RC_OK;
    }
    if (!cJSON_IsNumber(n))
        return rd_err_at(err, RC_EINVALID, docs, n, "field '%s' must be an integer, not %s", key,
                         type_name(n));
    d = n->valuedouble;
    if (!isfinite(d))
        return rd_err_at(err, RC_EINVALID, docs, n, "field '%s' must be an integer", key);
    if (d < (double)min || d > (double)max)
        return rd_err_at(err, RC_EINVALID, docs, n, "field '%s' is %.0f, out of range [%lld, %lld]",
                         key, d, (long long)min, (long long)max);
    if ((double)(int64_t)d != d)
        return rd_err_at(err, RC_EINVALID, docs, n, "field '%s' must be an integer", key);
    *out = (int64_t)d;
    return RC_OK;
}

int rd_field_bool(int *out, const cJSON *obj, const char *key, int def, const struct rd_docs *docs,
                  struct rc_err *err)
{
    const cJSON *n = rd_field_get(obj, key);

    if (!n) {
        *out = def;
        return RC_OK;
    }
    if (!cJSON_IsBool(n))
        return rd_err_at(err, RC_EINVALID, docs, n, "field '%s' must be true or false, not %s", key,
                         type_name(n));
    *out = cJSON_IsTrue(n) ? 1 : 0;
    return RC_OK;
}

static int field_typed(const cJSON **out, const cJSON *obj, const char *key, int required,
                       int want_array, const struct rd_docs *docs, struct rc_err *err)
{
    const cJSON *n = rd_field_get(obj, key);

    *out = NULL;
    if (!n) {
        if (required)
            return rd_err_at(err, RC_EINVALID, docs, obj, "missing field '%s'", key);
        return RC_OK;
    }
    if (want_array ? !cJSON_IsArray(n) : !cJSON_IsObject(n))
        return rd_err_at(err, RC_EINVALID, docs, n, "field '%s' must be %s, not %s", key,
                         want_array ? "a sequence" : "a mapping", type_name(n));
    *out = n;
    return RC_OK;
}

int rd_field_obj(const cJSON **out, const cJSON *obj, const char *key, int required,
                 const struct rd_docs *docs, struct rc_err *err)
{
    return field_typed(out, obj, key, required, 0, docs, err);
}

int rd_field_list(const cJSON **out, const cJSON *obj, const char *key, int required,
                  const struct rd_docs *docs, struct rc_err *err)
{
    return field_typed(out, obj, key, required, 1, docs, err);
}

void rd_field_number_text(char out[40], double d)
{
    /* the shortest of %.15g..%.17g that reads back as d: 0.1 is "0.1", not
     * "0.10000000000000001" (which a quantity parser would round up to 101m) */
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(out, 40, "%.*g", prec, d);
        if (strtod(out, NULL) == d)
            return;
    }
}

int rd_field_quantity(int64_t *out, const cJSON *node, const char *name, const struct rd_docs *docs,
                      struct rc_err *err)
{
    struct rc_err qerr = RC_ERR_INIT;
    char num[40];
    const char *text;
    int64_t v;

    if (cJSON_IsString(node)) {
        text = node->valuestring;
    } else if (cJSON_IsNumber(node)) {
        if (!isfinite(node->valuedouble))
            return rd_err_at(err, RC_EINVALID, docs, node, "quantity for '%s' is not finite", name);
        rd_field_number_text(num, node->valuedouble);
        text = num;
    } else {
        return rd_err_at(err, RC_EINVALID, docs, node,
                         "quantity for '%s' must be a string or a number, not %s", name,
                         type_name(node));
    }
    if (pl_quantity_parse(&v, text, &qerr) < 0)
        return rd_err_at(err, RC_EINVALID, docs, node, "%s (resource '%s')", qerr.msg, name);
    if (v < 0)
        return rd_err_at(err, RC_EINVALID, docs, node, "negative quantity '%s' for '%s'", text,
                         name);
    *out = v;
    return RC_OK;
}

int rd_field_string_map(struct pl_labels *out, const cJSON *map, int validate,
                        const struct rd_docs *docs, struct rc_arena *a, struct rc_err *err)
{
    const cJSON *it;
    struct rc_err verr = RC_ERR_INIT;
    size_t n = 0, i = 0;

    out->n = 0;
    out->v = NULL;
    if (!map)
        return RC_OK;
    if (!cJSON_IsObject(map))
        return rd_err_at(err, RC_EINVALID, docs, map, "expected a mapping of strings, not %s",
                         type_name(map));
    cJSON_ArrayForEach(it, map) n++;
    if (!n)
        return RC_OK;
    out->v = rc_arena_calloc(a, n, sizeof(*out->v));
    cJSON_ArrayForEach(it, map)
    {
        if (!cJSON_IsString(it))
            return rd_err_at(err, RC_EINVALID, docs, it,
                             "value of '%s' must be a string, not %s (quote it)", it->string,
                             type_name(it));
        if (validate && (rd_validate_label_key(it->string, &verr) < 0 ||
                         rd_validate_label_value(it->valuestring, &verr) < 0))
            return rd_err_at(err, RC_EINVALID, docs, it, "%s", verr.msg);
        out->v[i].key = rc_arena_strdup(a, it->string);
        out->v[i].value = rc_arena_strdup(a, it->valuestring);
        i++;
    }
    out->n = i;
    pl_labels_sort(out);
    return RC_OK;
}

static int parse_op(enum pl_op *op, const char *s)
{
    static const struct {
        const char *name;
        enum pl_op op;
    } ops[] = {{"In", PL_OP_IN},         {"NotIn", PL_OP_NOTIN},
               {"Exists", PL_OP_EXISTS}, {"DoesNotExist", PL_OP_DOESNOTEXIST},
               {"Gt", PL_OP_GT},         {"Lt", PL_OP_LT}};

    for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
        if (!strcmp(ops[i].name, s)) {
            *op = ops[i].op;
            return 0;
        }
    }
    return -1;
}

int rd_field_requirements(struct pl_selector *sel, const cJSON *list, int allow_gt_lt,
                          const struct rd_docs *docs, struct rc_arena *a, struct rc_err *err)
{
    const cJSON *e, *v;
    struct pl_requirement *req;
    size_t n = 0;
    int rc;

    if (!list)
        return RC_OK;
    if (!cJSON_IsArray(list))
        return rd_err_at(err, RC_EINVALID, docs, list,
                         "matchExpressions must be a sequence, not %s", type_name(list));
    cJSON_ArrayForEach(e, list) n++;
    if (!n)
        return RC_OK;
    req = rc_arena_calloc(a, sel->n + n, sizeof(*req));
    if (sel->n)
        memcpy(req, sel->req, sel->n * sizeof(*req));
    cJSON_ArrayForEach(e, list)
    {
        struct pl_requirement *r = &req[sel->n];
        const cJSON *values;
        const char *op = NULL;
        size_t nv = 0;

        if (!cJSON_IsObject(e))
            return rd_err_at(err, RC_EINVALID, docs, e, "requirement must be a mapping, not %s",
                             type_name(e));
        if ((rc = rd_field_str(&r->key, e, "key", NULL, docs, a, err)) < 0)
            return rc;
        if (!r->key)
            return rd_err_at(err, RC_EINVALID, docs, e, "requirement has no 'key'");
        if ((rc = rd_field_str(&op, e, "operator", NULL, docs, a, err)) < 0)
            return rc;
        if (!op)
            return rd_err_at(err, RC_EINVALID, docs, e, "requirement on '%s' has no 'operator'",
                             r->key);
        if (parse_op(&r->op, op) < 0 || (!allow_gt_lt && (r->op == PL_OP_GT || r->op == PL_OP_LT)))
            return rd_err_at(err, RC_EINVALID, docs, rd_field_get(e, "operator"),
                             "unknown operator '%s' (want In, NotIn, Exists, DoesNotExist%s)", op,
                             allow_gt_lt ? ", Gt, Lt" : "");
        if ((rc = rd_field_list(&values, e, "values", 0, docs, err)) < 0)
            return rc;
        cJSON_ArrayForEach(v, values) nv++;
        if (nv) {
            r->values = rc_arena_calloc(a, nv, sizeof(*r->values));
            cJSON_ArrayForEach(v, values)
            {
                if (!cJSON_IsString(v))
                    return rd_err_at(err, RC_EINVALID, docs, v,
                                     "value for '%s' must be a string, not %s (quote it)", r->key,
                                     type_name(v));
                r->values[r->nvalues++] = rc_arena_strdup(a, v->valuestring);
            }
        }
        sel->n++;
        sel->req = req;
        {
            struct pl_selector one = {1, r};
            struct rc_err verr = RC_ERR_INIT;
            if (pl_selector_validate(&one, allow_gt_lt, &verr) < 0)
                return rd_err_at(err, RC_EINVALID, docs, e, "%s", verr.msg);
        }
    }
    return RC_OK;
}

int rd_field_taint(struct pl_taint *out, const cJSON *node, const struct rd_docs *docs,
                   struct rc_arena *a, struct rc_err *err)
{
    struct rc_err verr = RC_ERR_INIT;
    int rc;

    if (!cJSON_IsObject(node))
        return rd_err_at(err, RC_EINVALID, docs, node, "taint must be a mapping, not %s",
                         type_name(node));
    if ((rc = rd_field_str(&out->key, node, "key", NULL, docs, a, err)) < 0 ||
        (rc = rd_field_str(&out->value, node, "value", "", docs, a, err)) < 0 ||
        (rc = rd_field_str(&out->effect, node, "effect", NULL, docs, a, err)) < 0)
        return rc;
    if (!out->key)
        return rd_err_at(err, RC_EINVALID, docs, node, "taint has no 'key'");
    if (rd_validate_label_key(out->key, &verr) < 0)
        return rd_err_at(err, RC_EINVALID, docs, rd_field_get(node, "key"), "%s", verr.msg);
    if (!out->effect)
        return rd_err_at(err, RC_EINVALID, docs, node, "taint '%s' has no 'effect'", out->key);
    if (strcmp(out->effect, "NoSchedule") && strcmp(out->effect, "PreferNoSchedule") &&
        strcmp(out->effect, "NoExecute"))
        return rd_err_at(err, RC_EINVALID, docs, rd_field_get(node, "effect"),
                         "unknown taint effect '%s' (want NoSchedule, PreferNoSchedule, "
                         "NoExecute)",
                         out->effect);
    return RC_OK;
}
