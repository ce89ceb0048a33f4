/*
 * rd_field.h - typed reads of manifest fields, with errors that name file:line:col.
 *
 * Shared by the modules that turn manifests into placement types (rd_demand, rd_policy,
 * rd_cluster). Each helper reads one field of a cJSON object the way the Kubernetes API
 * would decode it (an integer field must hold an integer, a string field a string) and fails
 * with RC_EINVALID and a message positioned at the offending node (through rd_err_at; docs
 * may be NULL, then messages carry no position). An absent field and an explicit YAML null
 * are the same: "not set". Strings handed out are copies in the arena.
 */
#ifndef RD_FIELD_H
#define RD_FIELD_H

#include <stdint.h>

#include <cjson/cJSON.h>

#include "pl_types.h"
#include "rc_err.h"
#include "rd_yaml.h"

struct rc_arena;

/* The member `key` of obj, or NULL when obj is not an object, the key is absent or null. */
const cJSON *rd_field_get(const cJSON *obj, const char *key);

/* A string field: *out = arena copy, or def (may be NULL) when not set. */
int rd_field_str(const char **out, const cJSON *obj, const char *key, const char *def,
                 const struct rd_docs *docs, struct rc_arena *a, struct rc_err *err);
/* An integer field within [min, max]: *out = value, or def when not set. */
int rd_field_int(int64_t *out, const cJSON *obj, const char *key, int64_t def, int64_t min,
                 int64_t max, const struct rd_docs *docs, struct rc_err *err);
/* A boolean field: *out = 0/1, or def when not set. */
int rd_field_bool(int *out, const cJSON *obj, const char *key, int def, const struct rd_docs *docs,
                  struct rc_err *err);
/* A mapping field: *out = the node or NULL when not set; `required` makes absence an error
 * positioned at obj. */
int rd_field_obj(const cJSON **out, const cJSON *obj, const char *key, int required,
                 const struct rd_docs *docs, struct rc_err *err);
/* A sequence field, as rd_field_obj. */
int rd_field_list(const cJSON **out, const cJSON *obj, const char *key, int required,
                  const struct rd_docs *docs, struct rc_err *err);

/* A resource quantity given as a YAML string ("500m", "12G") or number (4, 0.5) in
 * milli-units; negative amounts are refused. `name` is the resource, for messages. */
int rd_field_quantity(int64_t *out, const cJSON *node, const char *name, const struct rd_docs *docs,
                      struct rc_err *err);
/* Write the shortest decimal text that reads back as exactly d ("0.1", "4", "1e+30"). */
void rd_field_number_text(char out[40], double d);

/* A map of string to string (nodeSelector, labels). validate: keys must be valid label
 * keys and values valid label values. The result is sorted. */
int rd_field_string_map(struct pl_labels *out, const cJSON *map, int validate,
                        const struct rd_docs *docs, struct rc_arena *a, struct rc_err *err);
/* A list of {key, operator, values} (matchExpressions / NodeSelectorRequirements) appended
 * to sel. allow_gt_lt: Gt and Lt are accepted (node affinity). Values keep their order. */
int rd_field_requirements(struct pl_selector *sel, const cJSON *list, int allow_gt_lt,
                          const struct rd_docs *docs, struct rc_arena *a, struct rc_err *err);
/* A taint {key, value, effect}; effect must be NoSchedule, PreferNoSchedule or NoExecute. */
int rd_field_taint(struct pl_taint *out, const cJSON *node, const struct rd_docs *docs,
                   struct rc_arena *a, struct rc_err *err);

#endif
