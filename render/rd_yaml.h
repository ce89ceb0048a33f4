/*
 * rd_yaml.h - YAML text <-> cJSON trees: the only module that calls libyaml.
 *
 * Loading reads scalars the way kubectl (sigs.k8s.io/yaml, YAML 1.1 core-ish) does: quoted
 * scalars stay strings; plain true/false, integers, floats, null/~ get their types. A
 * duplicate mapping key keeps the last value and yields a warning. Anchors and aliases work,
 * within a bound on expansion. File size, nesting depth, document count are bounded. Every
 * error names the file, line and column: "examples/a.yaml:3:7: found a tab character ...".
 *
 * Emitting writes canonical YAML: the same tree gives the same bytes; keys in the tree's
 * order; strings that would read back as another type are quoted; multi-line strings are
 * block scalars. emit(load(x)) loads back to the same tree.
 */
#ifndef RD_YAML_H
#define RD_YAML_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "rc_buf.h"
#include "rc_err.h"

struct rd_yaml_limits {
    size_t max_bytes;     /* whole input */
    int max_depth;        /* nesting of mappings/sequences */
    size_t max_nodes;     /* nodes in all documents, aliases expanded */
    size_t max_documents; /* documents in one stream */
};

/* 8 MiB, depth 64, 1,000,000 nodes, 10,000 documents */
#define RD_YAML_LIMITS_INIT                                                                        \
    {                                                                                              \
        8u << 20, 64, 1000000, 10000                                                               \
    }

/* Where a node came from. */
struct rd_pos {
    int line; /* 1-based */
    int col;  /* 1-based */
};

/* A loaded stream: documents in order, and the source position of every node. */
struct rd_docs;

/* Warnings go through this callback (NULL: dropped). */
struct rd_diag {
    void (*warn)(void *payload, const char *file, struct rd_pos pos, const char *msg);
    void *payload;
};

/*
 * Load every document of `text` (len bytes; need not be NUL-terminated). `file` names the
 * input in messages. Empty documents (only comments) are skipped. On error nothing is
 * returned and err says "<file>:<line>:<col>: <problem>". *out is freed with rd_docs_free.
 */
int rd_yaml_load(struct rd_docs **out, const char *file, const char *text, size_t len,
                 const struct rd_yaml_limits *limits, const struct rd_diag *diag,
                 struct rc_err *err);
void rd_docs_free(struct rd_docs *docs);

size_t rd_docs_count(const struct rd_docs *docs);
/* Borrowed: valid until rd_docs_free. Ownership may be taken with rd_docs_take. */
cJSON *rd_docs_get(const struct rd_docs *docs, size_t i);
/* Take document i out of the set (the slot becomes NULL); the caller frees it. */
cJSON *rd_docs_take(struct rd_docs *docs, size_t i);
/* Position of any node of the set (also of taken documents, until rd_docs_free);
 * {0, 0} when unknown. */
struct rd_pos rd_docs_pos(const struct rd_docs *docs, const cJSON *node);
const char *rd_docs_file(const struct rd_docs *docs);

/* Are two trees the same: same types, same keys in the same order, numbers equal as
 * doubles (NaN equals NaN), strings byte for byte? Stricter than cJSON_Compare, which ignores
 * key order and compares numbers approximately. */
int rd_yaml_equal(const cJSON *a, const cJSON *b);

/* Append canonical YAML for `root` (one document, no "---") to out. */
int rd_yaml_emit(struct rc_buf *out, const cJSON *root, struct rc_err *err);

#endif
