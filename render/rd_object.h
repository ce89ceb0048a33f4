/*
 * rd_object.h - the object model: what every manifest is (apiVersion, group/version, kind,
 * namespace, name, labels, a stable key), validated as the API server would.
 *
 * Names are DNS-1123 subdomains (Namespace names: DNS-1123 labels; RBAC kinds may use any
 * path-segment name, e.g. "system:auth-delegator"); namespaces are DNS-1123 labels; label
 * keys and values follow Kubernetes' rules. Cluster-scoped kinds come from a fixed table
 * (rd_kind_is_cluster_scoped); any other kind is namespaced, in "default" unless
 * metadata.namespace says otherwise. A namespace on a cluster-scoped object is ignored, as
 * the API server does. Every error reads "file:line:col: <problem>".
 *
 * Not here: what an object demands (rd_demand.h), policies and clusters (rd_policy.h,
 * rd_cluster.h), reading files (rd_source.h).
 */
#ifndef RD_OBJECT_H
#define RD_OBJECT_H

#include <cjson/cJSON.h>
#include <stdint.h>

#include "pl_types.h"
#include "rc_arena.h"
#include "rc_err.h"
#include "rd_yaml.h"

struct rd_payload_file; /* rd_source.h */

struct rd_object {
    cJSON *root; /* the manifest while it is loaded; owned by whoever built the object. rd_source
                    packs a workload's tree and sets root NULL (rd_pack.h) */
    const unsigned char *packed; /* the manifest packed (when root is NULL), in the arena */
    size_t packed_len;
    /* Or, for an object taken up from the parse cache by a pass that is its process's last
     * (rd_import.payloads): packed and root NULL, the packed manifest's packed_len bytes are
     * at lazy_off of that file, read when a tree is asked for and checked against lazy_sum
     * (XXH64). NULL: root or packed holds the manifest. */
    const struct rd_payload_file *lazy;
    uint64_t lazy_off, lazy_sum;
    const char *api_version; /* "ray.io/v1"   (all strings: arena copies) */
    const char *group;       /* "ray.io"; "" for the core group */
    const char *version;     /* "v1" */
    const char *kind;
    const char *ns; /* NULL: cluster-scoped. Namespaced without metadata.namespace: "default" */
    const char *name;
    const char *key;         /* "<ns>/<Kind>/<name>" | "<Kind>/<name>" */
    struct pl_labels labels; /* metadata.labels, sorted, validated */
    const char *file;
    struct rd_pos pos; /* of the document */
};

/* Validate and describe one manifest (a document's root). Messages "file:line:col: ...",
 * with the position of the offending node when docs knows it, else `pos`. Does not take
 * root: *out borrows it. Strings and the label array live in `a`. On error *out is zeroed. */
int rd_object_init(struct rd_object *out, cJSON *root, const char *file, struct rd_pos pos,
                   const struct rd_docs *docs /* for positions; may be NULL */, struct rc_arena *a,
                   struct rc_err *err);

/* Would rd_object_init accept this identity: apiVersion (group and version), kind, name (by
 * the kind's rule), namespace (exactly when the kind is namespaced), labels (valid, sorted,
 * unique)? For objects taken from bytes other than the YAML (rd_cache_import). */
int rd_object_identity_ok(const struct rd_object *o);

/* A new tree of the manifest (root copied, or the packed bytes expanded, read from the
 * payload file first when the object is lazy) for the caller to change and cJSON_Delete;
 * RC_EINVALID when the object holds none, RC_ERROR when the payload file cannot be read or
 * no longer holds the bytes taken up. */
int rd_object_tree(cJSON **out, const struct rd_object *o, struct rc_err *err);
/* The packed manifest of an object without a root: o->packed, or the bytes read back from
 * the payload file into *owned (malloc'd, the caller frees; NULL otherwise). *bytes holds
 * o->packed_len bytes on RC_OK; RC_EINVALID when o holds none, RC_ERROR as rd_object_tree. */
int rd_object_packed(const unsigned char **bytes, unsigned char **owned, const struct rd_object *o,
                     struct rc_err *err);
/* Does o hold a manifest (root, packed or lazy)? */
int rd_object_has_manifest(const struct rd_object *o);

/* Is group/kind ("" or NULL for the core group) cluster-scoped? Built-in Kubernetes kinds,
 * plus SchedulePolicy (policy.elotl.co, rightplace.dev) and Cluster (rightplace.dev,
 * cluster.elotl.co). Unknown kinds are namespaced. */
int rd_kind_is_cluster_scoped(const char *group, const char *kind);

/* Validators: RC_OK, or RC_EINVALID with "invalid <what> '<s>': <rule>" (no position). */
int rd_validate_subdomain(const char *s, const char *what,
                          struct rc_err *err); /* DNS-1123 subdomain */
int rd_validate_dns_label(const char *s, const char *what, struct rc_err *err); /* DNS-1123 label */
/* [<DNS-1123 subdomain prefix>/]<name>: name at most 63 of [A-Za-z0-9-_.], alphanumeric at
 * both ends */
int rd_validate_label_key(const char *s, struct rc_err *err);
/* at most 63 of [A-Za-z0-9-_.], alphanumeric at both ends; may be empty */
int rd_validate_label_value(const char *s, struct rc_err *err);

/* Error helper: set err to "file:line:col: <msg>" using the node's position in docs (the file
 * is rd_docs_file(docs)); "file: <msg>" when the node's position is unknown, "<msg>" without
 * docs. Returns code. */
int rd_err_at(struct rc_err *err, int code, const struct rd_docs *docs, const cJSON *node,
              const char *fmt, ...) __attribute__((format(printf, 5, 6)));

#endif
