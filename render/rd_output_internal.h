/*
 * rd_output_internal.h - helpers shared by rd_output.c, rd_record.c, rd_capacity.c and
 * rd_message.c. Nothing outside render/rd_output*.c, rd_record.c, rd_capacity.c,
 * rd_message.c includes this.
 */
#ifndef RD_OUTPUT_INTERNAL_H
#define RD_OUTPUT_INTERNAL_H

#include <cjson/cJSON.h>

#include "pl_types.h"
#include "rc_err.h"

struct rc_arena;
struct rd_docs;

#define RD_API_VERSION "rightplace.dev/v1alpha1"

/* Decisions that are written to the record (not removed), sorted by unit; *n set. The array
 * lives in the arena. */
const struct pl_decision **rd_out_sorted_decisions(const struct pl_result *res, size_t *n,
                                                   struct rc_arena *a);

/* Emit root as canonical YAML into an arena copy (*data, *len). */
int rd_out_emit(const char **data, size_t *len, const cJSON *root, struct rc_arena *a,
                struct rc_err *err);

/* Object helpers that abort on OOM like the rest of the program. Ownership of `item` always
 * passes to the parent. */
cJSON *rd_out_add(cJSON *obj, const char *key, cJSON *item);
cJSON *rd_out_add_str(cJSON *obj, const char *key, const char *s);
cJSON *rd_out_add_int(cJSON *obj, const char *key, int64_t v);
cJSON *rd_out_add_bool(cJSON *obj, const char *key, int v);
cJSON *rd_out_push(cJSON *arr, cJSON *item);
cJSON *rd_out_str(const char *s);
/* A flow-friendly sequence of strings. */
cJSON *rd_out_str_array(const char *const *v, size_t n);

/* Parser helpers: "placements.yaml:3:5: <msg>" with the node's position. */
int rd_out_err_at(struct rc_err *err, const struct rd_docs *docs, const char *file,
                  const cJSON *node, const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* Read an optional string field: *out = arena copy or NULL when absent; RC_EINVALID when not a
 * string. */
int rd_out_get_str(const char **out, const cJSON *obj, const char *key, int required,
                   const struct rd_docs *docs, const char *file, struct rc_arena *a,
                   struct rc_err *err);
/* Read a sequence of strings (absent: 0 entries). */
int rd_out_get_strs(const char ***out, size_t *n, const cJSON *obj, const char *key,
                    const struct rd_docs *docs, const char *file, struct rc_arena *a,
                    struct rc_err *err);

/* A sequence of strings of an item as rd_yaml_load_items streams it in: rd_out_each_str is
 * the rd_yaml_items.each of the field `key` (payload: the list), which copies each string into
 * a; rd_out_take_strs gives the item what came, as rd_out_get_strs reads the field (absent: 0
 * entries; not a sequence: RC_EINVALID), and empties the list for the next item. */
struct rd_out_strs {
    const char *file, *key;
    struct rc_arena *a;
    const char **v; /* malloc'd; free it when the load is over */
    size_t n, cap;
};
int rd_out_each_str(void *payload, const cJSON *item, const struct rd_docs *docs,
                    struct rc_err *err);
int rd_out_take_strs(const char ***out, size_t *n, const cJSON *obj, struct rd_out_strs *l,
                     const struct rd_docs *docs, struct rc_err *err);

/* The name people know a unit by: its main workload object ("<ns>/<name>" or "<name>"),
 * preferring objects that create pods; the unit id when it has no objects. From keys when
 * objects are gone (removed units). */
const char *rd_out_unit_title(const struct pl_decision *d, struct rc_arena *a);

#endif
