/*
 * rd_object.c - validate a manifest's identity (apiVersion, kind, metadata) and describe it
 * as a struct rd_object. Mirrors the API server's validation of names and labels
 * (k8s.io/apimachinery/pkg/util/validation), so that a manifest refused here would also be
 * refused by kubectl apply, and the other way round. It does not look at spec.
 */
#include "rd_object.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pl_basics.h"
#include "rd_pack.h"
#include "rd_source.h"
#include "rc_banned.h"

/* ==== Name and label rules ==== */

static int is_lower_alnum(int c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static int is_alnum(int c)
{
    return is_lower_alnum(c) || (c >= 'A' && c <= 'Z');
}

/* [a-z0-9]([-a-z0-9]*[a-z0-9])? over s[0..n) */
static int dns_label_ok(const char *s, size_t n)
{
    if (n == 0 || n > 63 || !is_lower_alnum(s[0]) || !is_lower_alnum(s[n - 1]))
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!is_lower_alnum(s[i]) && s[i] != '-')
            return 0;
    return 1;
}

static int subdomain_ok(const char *s, size_t n)
{
    size_t start = 0;

    if (n == 0 || n > 253)
        return 0;
    for (size_t i = 0; i <= n; i++) {
        if (i == n || s[i] == '.') {
            /* each dot-separated part: [a-z0-9]([-a-z0-9]*[a-z0-9])? (no 63 limit per part,
             * as in apimachinery's IsDNS1123Subdomain) */
            size_t len = i - start;
            if (len == 0 || !is_lower_alnum(s[start]) || !is_lower_alnum(s[i - 1]))
                return 0;
            for (size_t j = start; j < i; j++)
                if (!is_lower_alnum(s[j]) && s[j] != '-')
                    return 0;
            start = i + 1;
        }
    }
    return 1;
}

/* ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9] , at most 63; empty allowed when allow_empty */
static int label_name_ok(const char *s, size_t n, int allow_empty)
{
    if (n == 0)
        return allow_empty;
    if (n > 63 || !is_alnum(s[0]) || !is_alnum(s[n - 1]))
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!is_alnum(s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.')
            return 0;
    return 1;
}

int rd_validate_subdomain(const char *s, const char *what, struct rc_err *err)
{
    if (s && subdomain_ok(s, strlen(s)))
        return RC_OK;
    return rc_err_set(err, RC_EINVALID,
                      "invalid %s '%.80s': not a DNS-1123 subdomain (at most 253 of a-z, 0-9, "
                      "'-', '.'; alphanumeric at both ends)",
                      what, s ? s : "");
}

int rd_validate_dns_label(const char *s, const char *what, struct rc_err *err)
{
    if (s && dns_label_ok(s, strlen(s)))
        return RC_OK;
    return rc_err_set(err, RC_EINVALID,
                      "invalid %s '%.80s': not a DNS-1123 label (at most 63 of a-z, 0-9, '-'; "
                      "alphanumeric at both ends)",
                      what, s ? s : "");
}

int rd_validate_label_key(const char *s, struct rc_err *err)
{
    const char *slash;
    const char *name;

    if (!s || !*s)
        return rc_err_set(err, RC_EINVALID, "invalid label key '': empty");
    slash = strchr(s, '/');
    name = slash ? slash + 1 : s;
    if (slash && !subdomain_ok(s, (size_t)(slash - s)))
        return rc_err_set(err, RC_EINVALID,
                          "invalid label key '%.80s': the prefix must be a DNS-1123 subdomain "
                          "(at most 253 of a-z, 0-9, '-', '.')",
                          s);
    if (!label_name_ok(name, strlen(name), 0))
        return rc_err_set(err, RC_EINVALID,
                          "invalid label key '%.80s': the name must be at most 63 of A-Z, a-z, "
                          "0-9, '-', '_', '.', alphanumeric at both ends",
                          s);
    return RC_OK;
}

int rd_validate_label_value(const char *s, struct rc_err *err)
{
    if (s && label_name_ok(s, strlen(s), 1))
        return RC_OK;
    return rc_err_set(err, RC_EINVALID,
                      "invalid label value '%.80s': at most 63 of A-Z, a-z, 0-9, '-', '_', '.', "
                      "alphanumeric at both ends",
                      s ? s : "");
}

/* RBAC objects accept any name that is a valid path segment (ValidatePathSegmentName). */
static int path_segment_ok(const char *s)
{
    size_t n = strlen(s);

    if (n == 0 || n > 253 || strcmp(s, ".") == 0 || strcmp(s, "..") == 0)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (s[i] == '/' || s[i] == '%' || (unsigned char)s[i] < 0x21 || s[i] == 0x7F)
            return 0;
    return 1;
}

/* ==== Cluster-scoped kinds ==== */

static const struct {
    const char *group;
    const char *kind;
} cluster_scoped[] = {
    {"", "Namespace"},
    {"", "Node"},
    {"", "PersistentVolume"},
    {"", "ComponentStatus"},
    {"rbac.authorization.k8s.io", "ClusterRole"},
    {"rbac.authorization.k8s.io", "ClusterRoleBinding"},
    {"apiextensions.k8s.io", "CustomResourceDefinition"},
    {"storage.k8s.io", "StorageClass"},
    {"storage.k8s.io", "CSIDriver"},
    {"storage.k8s.io", "CSINode"},
    {"storage.k8s.io", "VolumeAttachment"},
    {"scheduling.k8s.io", "PriorityClass"},
    {"networking.k8s.io", "IngressClass"},
    {"node.k8s.io", "RuntimeClass"},
    {"admissionregistration.k8s.io", "ValidatingWebhookConfiguration"},
    {"admissionregistration.k8s.io", "MutatingWebhookConfiguration"},
    {"admissionregistration.k8s.io", "ValidatingAdmissionPolicy"},
    {"admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding"},
    {"apiregistration.k8s.io", "APIService"},
    {"certificates.k8s.io", "CertificateSigningRequest"},
    {"flowcontrol.apiserver.k8s.io", "FlowSchema"},
    {"flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration"},
    {"policy.elotl.co", "SchedulePolicy"},
    {"rightplace.dev", "SchedulePolicy"},
    {"rightplace.dev", "Cluster"},
    {"cluster.elotl.co", "Cluster"},
};

int rd_kind_is_cluster_scoped(const char *group, const char *kind)
{
    if (!group)
        group = "";
    if (!kind)
        return 0;
    for (size_t i = 0; i < sizeof(cluster_scoped) / sizeof(cluster_scoped[0]); i++)
        if (cluster_scoped[i].kind[0] == kind[0] && strcmp(cluster_scoped[i].kind, kind) == 0 &&
            strcmp(cluster_scoped[i].group, group) == 0)
            return 1;
    return 0;
}

/* ==== Errors with positions ==== */

int rd_err_at(struct rc_err *err, int code, const struct rd_docs *docs, const cJSON *node,
              const char *fmt, ...)
{
    struct rd_pos pos = rd_docs_pos(docs, node);
    va_list ap;

    va_start(ap, fmt);
    rc_err_setv(err, code, fmt, ap);
    va_end(ap);
    if (docs && pos.line > 0)
        rc_err_prefix(err, "%s:%d:%d: ", rd_docs_file(docs), pos.line, pos.col);
    else if (docs)
        rc_err_prefix(err, "%s: ", rd_docs_file(docs));
    return code;
}

struct octx {
    const char *file;
    struct rd_pos pos;
    const struct rd_docs *docs;
    struct rc_err *err;
};

/* Prefix the message already in err with the node's position (or the document's). */
static int at(const struct octx *c, const cJSON *node)
{
    struct rd_pos p = rd_docs_pos(c->docs, node);

    if (p.line <= 0)
        p = c->pos;
    rc_err_prefix(c->err, "%s:%d:%d: ", c->file, p.line, p.col);
    return c->err ? c->err->code : RC_EINVALID;
}

static int fail(const struct octx *c, const cJSON *node, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail(const struct octx *c, const cJSON *node, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    rc_err_setv(c->err, RC_EINVALID, fmt, ap);
    va_end(ap);
    at(c, node);
    return RC_EINVALID;
}

/* A required, non-empty string field. */
static int need_string(const struct octx *c, const cJSON *parent, const cJSON *parent_at,
                       const char *field, const char *path, const char **out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(parent, field);

    if (!v)
        return fail(c, parent_at, "missing %s", path);
    if (!cJSON_IsString(v))
        return fail(c, v, "%s must be a string", path);
    if (!v->valuestring[0])
        return fail(c, v, "%s is empty", path);
    *out = v->valuestring;
    return RC_OK;
}

static int kind_ok(const char *k)
{
    size_t n = strlen(k);

    if (n == 0 || n > 63 || !((k[0] >= 'A' && k[0] <= 'Z') || (k[0] >= 'a' && k[0] <= 'z')))
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!is_alnum(k[i]))
            return 0;
    return 1;
}

/* apiVersion is <group>/<version> or <version>: the group part (slash: its '/', or NULL). */
static int api_group_ok(const char *api, const char *slash)
{
    return !slash || (slash != api && slash[1] && !strchr(slash + 1, '/') &&
                      subdomain_ok(api, (size_t)(slash - api)));
}

/* ... and the version part, a DNS label like v1 or v1beta1. */
static int api_version_part_ok(const char *api, const char *slash)
{
    const char *v = slash ? slash + 1 : api;

    return dns_label_ok(v, strlen(v));
}

/* metadata.name by the kind's rule: a Namespace's is a DNS label, RBAC objects' a path
 * segment, every other a DNS subdomain. */
static int name_rule(const char *group, const char *kind, const char *name, struct rc_err *err)
{
    if (group[0] == '\0' && strcmp(kind, "Namespace") == 0)
        return rd_validate_dns_label(name, "metadata.name", err);
    if (strcmp(group, "rbac.authorization.k8s.io") == 0)
        return path_segment_ok(name)
                   ? RC_OK
                   : rc_err_set(err, RC_EINVALID,
                                "invalid metadata.name '%.80s': may not be '.' or '..' or "
                                "contain '/', '%%', spaces or control characters",
                                name);
    return rd_validate_subdomain(name, "metadata.name", err);
}

int rd_object_init(struct rd_object *out, cJSON *root, const char *file, struct rd_pos pos,
                   const struct rd_docs *docs, struct rc_arena *a, struct rc_err *err)
{
    struct octx c;
    struct rd_object o;
    const char *api = NULL, *kind = NULL, *name = NULL, *slash;
    const cJSON *meta, *nsnode, *labels, *annotations, *namenode;
    int error;

    memset(out, 0, sizeof(*out));
    memset(&o, 0, sizeof(o));
    c.file = file ? file : (docs ? rd_docs_file(docs) : "<input>");
    c.pos = pos.line > 0 ? pos : rd_docs_pos(docs, root);
    c.docs = docs;
    c.err = err;
    if (!cJSON_IsObject(root))
        return fail(&c, root,
                    "document is not a mapping (a Kubernetes object needs apiVersion, "
                    "kind and metadata)");

    error = need_string(&c, root, root, "apiVersion", "apiVersion", &api);
    if (error < 0)
        return error;
    slash = strchr(api, '/');
    if (!api_group_ok(api, slash))
        return fail(&c, cJSON_GetObjectItemCaseSensitive(root, "apiVersion"),
                    "invalid apiVersion '%.80s': want <group>/<version> or <version>", api);
    if (!api_version_part_ok(api, slash))
        return fail(&c, cJSON_GetObjectItemCaseSensitive(root, "apiVersion"),
                    "invalid apiVersion '%.80s': the version must be like v1 or v1beta1", api);
    error = need_string(&c, root, root, "kind", "kind", &kind);
    if (error < 0)
        return error;
    if (!kind_ok(kind))
        return fail(&c, cJSON_GetObjectItemCaseSensitive(root, "kind"),
                    "invalid kind '%.80s': want letters and digits, like ConfigMap", kind);
    meta = cJSON_GetObjectItemCaseSensitive(root, "metadata");
    if (!meta)
        return fail(&c, root, "missing metadata");
    if (!cJSON_IsObject(meta))
        return fail(&c, meta, "metadata must be a mapping");
    error = need_string(&c, meta, meta, "name", "metadata.name", &name);
    if (error < 0)
        return error;
    namenode = cJSON_GetObjectItemCaseSensitive(meta, "name");

    o.root = root;
    o.api_version = rc_arena_strdup(a, api);
    o.group = slash ? rc_arena_strndup(a, api, (size_t)(slash - api)) : "";
    o.version = rc_arena_strdup(a, slash ? slash + 1 : api);
    o.kind = rc_arena_strdup(a, kind);

    if ((error = name_rule(o.group, kind, name, err)) < 0)
        return at(&c, namenode);
    o.name = rc_arena_strdup(a, name);

    nsnode = cJSON_GetObjectItemCaseSensitive(meta, "namespace");
    if (nsnode && !cJSON_IsNull(nsnode)) {
        if (!cJSON_IsString(nsnode))
            return fail(&c, nsnode, "metadata.namespace must be a string");
        if (nsnode->valuestring[0] &&
            rd_validate_dns_label(nsnode->valuestring, "metadata.namespace", err) < 0)
            return at(&c, nsnode);
    }
    if (rd_kind_is_cluster_scoped(o.group, o.kind)) {
        o.ns = NULL;
        o.key = rc_arena_join(a, '/', (const char *const[]){o.kind, o.name}, 2);
    } else {
        o.ns = nsnode && cJSON_IsString(nsnode) && nsnode->valuestring[0]
                   ? rc_arena_strdup(a, nsnode->valuestring)
                   : "default";
        o.key = rc_arena_join(a, '/', (const char *const[]){o.ns, o.kind, o.name}, 3);
    }

    labels = cJSON_GetObjectItemCaseSensitive(meta, "labels");
    if (labels && !cJSON_IsNull(labels)) {
        if (!cJSON_IsObject(labels))
            return fail(&c, labels, "metadata.labels must be a mapping");
        for (const cJSON *l = labels->child; l; l = l->next) {
            if (rd_validate_label_key(l->string, err) < 0)
                return at(&c, l);
            if (!cJSON_IsString(l))
                return fail(&c, l,
                            "label '%.80s' must have a string value: YAML reads this unquoted "
                            "value as %s; quote it",
                            l->string,
                            cJSON_IsBool(l)     ? "a boolean"
                            : cJSON_IsNumber(l) ? "a number"
                            : cJSON_IsNull(l)   ? "null"
                                                : "a collection");
            if (rd_validate_label_value(l->valuestring, err) < 0) {
                rc_err_prefix(err, "label '%.80s': ", l->string);
                return at(&c, l);
            }
            pl_labels_set(&o.labels, a, rc_arena_strdup(a, l->string),
                          rc_arena_strdup(a, l->valuestring));
        }
    }
    /* the API server takes annotations as map[string]string too */
    annotations = cJSON_GetObjectItemCaseSensitive(meta, "annotations");
    if (annotations && !cJSON_IsNull(annotations)) {
        if (!cJSON_IsObject(annotations))
            return fail(&c, annotations, "metadata.annotations must be a mapping");
        for (const cJSON *n = annotations->child; n; n = n->next)
            if (!cJSON_IsString(n))
                return fail(&c, n,
                            "annotation '%.80s' must have a string value: YAML reads this "
                            "unquoted value as %s; quote it",
                            n->string,
                            cJSON_IsBool(n)     ? "a boolean"
                            : cJSON_IsNumber(n) ? "a number"
                            : cJSON_IsNull(n)   ? "null"
                                                : "a collection");
    }
    o.file = rc_arena_strdup(a, c.file);
    o.pos = c.pos;
    *out = o;
    return RC_OK;
}

int rd_object_identity_ok(const struct rd_object *o)
{
    const char *slash = o->api_version ? strchr(o->api_version, '/') : NULL;
    struct rc_err err = RC_ERR_INIT;

    if (!o->api_version || !o->kind || !o->name || !o->group)
        return 0;
    if (!api_group_ok(o->api_version, slash) || !api_version_part_ok(o->api_version, slash) ||
        !kind_ok(o->kind) || name_rule(o->group, o->kind, o->name, &err) < 0)
        return 0;
    /* namespaced exactly when the kind is, in a valid namespace */
    if (rd_kind_is_cluster_scoped(o->group, o->kind)
            ? o->ns != NULL
            : !o->ns || !*o->ns || rd_validate_dns_label(o->ns, "metadata.namespace", &err) < 0)
        return 0;
    for (size_t i = 0; i < o->labels.n; i++) {
        if (rd_validate_label_key(o->labels.v[i].key, &err) < 0 ||
            rd_validate_label_value(o->labels.v[i].value, &err) < 0 ||
            (i && strcmp(o->labels.v[i - 1].key, o->labels.v[i].key) >= 0))
            return 0;
    }
    return 1;
}

int rd_object_tree(cJSON **out, const struct rd_object *o, struct rc_err *err)
{
    const unsigned char *bytes;
    unsigned char *owned = NULL;
    int error;

    *out = NULL;
    if (o && o->root) {
        if (!(*out = cJSON_Duplicate(o->root, 1)))
            abort(); /* out of memory, as rc_mem */
        return RC_OK;
    }
    error = rd_object_packed(&bytes, &owned, o, err);
    if (error == RC_OK)
        error = rd_unpack(out, bytes, o->packed_len, err);
    free(owned);
    return error;
}

int rd_object_packed(const unsigned char **bytes, unsigned char **owned, const struct rd_object *o,
                     struct rc_err *err)
{
    int error;

    *bytes = NULL;
    *owned = NULL;
    if (o && o->packed) {
        *bytes = o->packed;
        return RC_OK;
    }
    if (!o || !o->lazy)
        return rc_err_set(err, RC_EINVALID, "object '%s' has no manifest",
                          o && o->key ? o->key : "?");
    error = rd_payload_read(owned, o->lazy, o->lazy_off, o->packed_len, o->lazy_sum, o->key, err);
    *bytes = *owned;
    return error;
}

int rd_object_has_manifest(const struct rd_object *o)
{
    return o && (o->root || o->packed || o->lazy);
}
