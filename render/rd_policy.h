/*
 * rd_policy.h - Nova SchedulePolicy manifests -> struct pl_policy.
 *
 * Reads `SchedulePolicy` of policy.elotl.co/v1alpha1 as Nova defines it (and the same kind
 * under rightplace.dev/v1alpha1): resourceSelectors.labelSelectors (required),
 * namespaceSelector (absent: every namespace, as in Nova 1.5), clusterSelector,
 * orderedClusterSelector, groupBy.labelKey, spreadConstraints (spreadMode, topologyKey,
 * percentageSplit in list or map form, overrides with staticValue). Unknown fields are accepted and
 * ignored with a warning. What a policy means at placement time is placement/'s business; this
 * module only checks and translates.
 */
#ifndef RD_POLICY_H
#define RD_POLICY_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "pl_types.h"
#include "rc_err.h"
#include "rd_object.h"
#include "rd_yaml.h"

struct rc_arena;

/* A metav1.LabelSelector (matchLabels ANDed with matchExpressions; operators In, NotIn,
 * Exists, DoesNotExist) -> *out, allocated in a. NULL or null: the empty selector (matches
 * everything). Unknown fields are errors (a typo must not widen a selector). */
int rd_selector_from_json(struct pl_selector *out, const cJSON *label_selector,
                          const struct rd_docs *docs, struct rc_arena *a, struct rc_err *err);

/* Check a spreadConstraints.overrides fieldPath: dotted field names, [N] list indexes,
 * ['key'] or ["key"] map keys (for keys with dots: metadata.labels['a.b/c']). */
int rd_override_check_path(const char *field_path, struct rc_err *err);

/* Set field_path of root to the JSON value value_json, as Nova's overrides do: missing
 * mappings on the way are made (metadata.labels of an object without labels), a missing
 * list or list item is RC_EINVALID ("... (not applied)") and root is left unchanged. */
int rd_override_apply(cJSON *root, const char *field_path, const char *value_json,
                      struct rc_err *err);

/* Is o a SchedulePolicy of policy.elotl.co or rightplace.dev (any version)? */
int rd_is_policy(const struct rd_object *o);

/* Translate and validate one policy. Errors "file:line:col: ...". out->digest is 16 hex
 * digits of FNV-1a over the spec printed as JSON with keys sorted, so it changes exactly
 * when the spec's meaning-bearing content changes (not with key order or comments).
 * Warnings are dropped; see rd_policy_parse_ex. */
int rd_policy_parse(struct pl_policy *out, const struct rd_object *o, const struct rd_docs *docs,
                    struct rc_arena *a, struct rc_err *err);
/* Same, appending warnings ("file:line:col: ...", arena strings) to *warnings / *nwarnings
 * (an arena array, grown here). */
int rd_policy_parse_ex(struct pl_policy *out, const struct rd_object *o, const struct rd_docs *docs,
                       size_t *nwarnings, const char ***warnings, struct rc_arena *a,
                       struct rc_err *err);

#endif
