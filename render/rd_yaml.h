/*
 * rd_yaml.h - YAML text <-> cJSON trees: the only module that calls libyaml.
 *
 * Loading reads scalars the way kubectl (sigs.k8s.io/yaml, i.e. go-yaml v2.4) does: quoted
 * and block scalars stay strings; plain scalars are typed:
 *   null  "" ~ null Null NULL
 *   bool  true True TRUE false False FALSE, and YAML 1.1's y Y yes Yes YES n N no No NO
 *         on On ON off Off OFF (so `enabled: yes` is true, `country: NO` is false: quote them)
 *   int   [+-] decimal, 0x hex, 0o or leading-0 octal (0644 is 420), 0b binary, '_' ignored,
 *         within int64/uint64
 *   float [+-](.5 | 1 | 1. | 1.5)(e[+-]?3)?; .inf -.inf .nan are refused as values (kubectl
 *         cannot make JSON of them and refuses the file)
 *   else  string (timestamps too)
 * cJSON keeps numbers as doubles; an integer beyond 2^53 within int64 also keeps its exact
 * decimal text, which the emitter and rd_json_print write (beyond int64 kubectl reads a
 * float64, and so does this loader). Tags: !!str makes a string of anything; !!int !!float
 * !!bool !!null demand that type; other tags are ignored. Mapping keys are what kubectl
 * makes of them: strings as written, bools "true"/"false" (`on:`, `y:`, `yes:` are the key
 * "true"), integers in decimal (0x10 -> "16"), floats at float32 precision ("1e+06",
 * "3.1415927"); a null key or one beyond int64 is refused, as kubectl refuses it;
 * collections as keys are refused. Strings with a NUL character are refused.
 *
 * A duplicate mapping key keeps the last value (kubectl 1.32 does the same, silently) and
 * yields a warning naming both lines, except a duplicate of a key that decides which object
 * a document is (apiVersion, kind, metadata at the root; name, namespace in the root's
 * metadata): that is an error, since the file would silently rename or move the object.
 * Anchors and aliases
 * work (per document); merge keys (<<) follow the YAML merge spec: written keys win over
 * merged ones, earlier merged mappings over later ones. Limits: input bytes (checked before
 * parsing), nesting depth (aliases included), nodes (aliases and merges expanded, counted
 * before anything is copied: a "billion laughs" stops at the first alias over the limit),
 * documents, and text expanded through aliases (4 x max_bytes + 1 MiB). Every error names
 * the file, line and column: "examples/a.yaml:3:7: found a tab character ...".
 *
 * Emitting writes canonical YAML: the same tree gives the same bytes; block style, 2-space
 * indentation, sequences inside a mapping at the mapping's indentation ("- name: x", as
 * kubectl prints them); keys in the tree's order; strings that any YAML 1.1 or 1.2 reader
 * (go-yaml v2 for kubectl, yaml.v3 for kustomize, PyYAML...) could read as another type
 * (bools in every YAML 1.1 spelling, nulls, numbers in any base or form, base 60,
 * timestamps, <<, =), or that YAML cannot hold plain, double-quoted with escapes; multi-line
 * strings as literal block scalars (|, |-, |+, with an indentation indicator when needed);
 * integers exact (the kept text beyond 2^53), other numbers in the shortest form that reads
 * back exactly; .inf and .nan refused;
 * {} and [] for empty collections. emit(load(x)) loads back to the same tree, and emit is a
 * fixed point of load+emit.
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
 * input in messages. Empty documents (only comments, or a bare null) are skipped, as kubectl
 * does. On error nothing is returned and err says "<file>:<line>:<col>: <problem>" (code
 * RC_EINVALID). limits NULL: RD_YAML_LIMITS_INIT. Warnings (duplicate keys) go to diag
 * (NULL: dropped). *out is freed with rd_docs_free.
 */
int rd_yaml_load(struct rd_docs **out, const char *file, const char *text, size_t len,
                 const struct rd_yaml_limits *limits, const struct rd_diag *diag,
                 struct rc_err *err);
void rd_docs_free(struct rd_docs *docs);

size_t rd_docs_count(const struct rd_docs *docs);
/* Memory the set holds (trees, positions, strings), approximately; 0 for NULL. */
size_t rd_docs_bytes(const struct rd_docs *docs);
/* Borrowed: valid until rd_docs_free. Ownership may be taken with rd_docs_take. */
cJSON *rd_docs_get(const struct rd_docs *docs, size_t i);
/* Take document i out of the set (the slot becomes NULL); the caller frees it. */
cJSON *rd_docs_take(struct rd_docs *docs, size_t i);
/* Position of any node of the set (also of taken documents, until rd_docs_free);
 * {0, 0} when unknown. */
struct rd_pos rd_docs_pos(const struct rd_docs *docs, const cJSON *node);
const char *rd_docs_file(const struct rd_docs *docs);

/*
 * A document set of trees that were not read from text: what rd_source keeps of a parsed file
 * (its parse cache) made into documents again. Takes roots[0..n) (the caller's array is not
 * kept); pos[i] (NULL, or with npos[i] entries) gives the positions of the first npos[i] nodes
 * of document i in pre-order (the root, then each child and its subtree before the next
 * child); the other nodes have none ({0, 0} from rd_docs_pos). Free with rd_docs_free.
 */
void rd_docs_from_trees(struct rd_docs **out, const char *file, cJSON **roots, size_t n,
                        const struct rd_pos *const *pos, const size_t *npos);

/* The libyaml version the loader was built with ("0.2.5"): what a document set read from text
 * depends on besides this program. */
const char *rd_yaml_version(void);

/*
 * Load one document whose root is a mapping, streaming the elements of the sequences under
 * the root keys items[0..nitems).key: each element is built, handed to that entry's each and
 * freed before the next one is read, so that memory holds one element at a time. An entry
 * with inner entries streams, the same way, the sequences under those keys of each of its
 * elements that is a mapping: their elements go to the inner each first, then the element,
 * which holds an empty sequence there, to the entry's each. This is how rightplace reads its
 * own records (placements.yaml, .rightplace/capacity.yaml), which grow with the fleet, and a
 * unit's objects or a cluster's nodes with them.
 * Limits: max_bytes bounds the whole input; max_nodes, max_depth (counted from the root)
 * and the alias text budget bound each streamed element on its own (without the elements
 * streamed inside it), and the rest of the document together. Anchors do not reach into or
 * out of a streamed element. Merge keys and a repeated streamed key are refused in a mapping
 * whose sequences are streamed (the root, and elements with inner entries). each (NULL: the
 * elements are read and dropped) gets the element (freed after it returns: copy what is
 * kept) and a document set for rd_docs_pos; a negative return stops the load with that code
 * and err as each set it. *out holds the root with an empty sequence in place of each
 * streamed one (rd_docs_count 0 for an empty input); free it with rd_docs_free.
 */
struct rd_yaml_items {
    const char *key;
    int (*each)(void *payload, const cJSON *item, const struct rd_docs *docs, struct rc_err *err);
    void *payload;
    const struct rd_yaml_items *inner; /* streamed inside each element: ninner entries */
    size_t ninner;
};

int rd_yaml_load_items(struct rd_docs **out, const char *file, const char *text, size_t len,
                       const struct rd_yaml_limits *limits, const struct rd_yaml_items *items,
                       size_t nitems, struct rc_err *err);

/* Are two trees the same: same types, same keys in the same order, numbers equal as
 * doubles (NaN equals NaN), strings byte for byte? Stricter than cJSON_Compare, which ignores
 * key order and compares numbers approximately. */
int rd_yaml_equal(const cJSON *a, const cJSON *b);

/* Append canonical YAML for `root` (one document, no "---") to out. */
int rd_yaml_emit(struct rc_buf *out, const cJSON *root, struct rc_err *err);

/* Compact JSON for `root` with numbers as kubectl sends them: integers exact (also those
 * beyond 2^53 that the loader kept as text), other numbers as Go's encoding/json writes a
 * float64 (1e+21, 0.1, 1e-7; 1e17 as 100000000000000000). Use it, not cJSON_Print, for
 * bodies sent to the API server. NULL with err (RC_EINVALID) for .inf or .nan; the result
 * is freed with free(). */
char *rd_json_print(const cJSON *root, struct rc_err *err);

#endif
