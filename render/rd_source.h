/*
 * rd_source.h - the Load step: a source tree's YAML files -> placement inputs.
 *
 * Every document of every file becomes one of: a Cluster (the fleet), a SchedulePolicy, or a
 * workload object (everything else, Namespaces included: they are placed like anything else,
 * and their labels also feed namespaceSelector). A file is all-or-nothing: any error in it
 * (YAML, object, demand, policy, cluster, a duplicate object) and it contributes nothing and
 * is reported with file:line:col, so that the caller can keep that file's previous content.
 */
#ifndef RD_SOURCE_H
#define RD_SOURCE_H

#include <stddef.h>

#include "pl_types.h"
#include "rc_err.h"
#include "rd_cluster.h"

struct rc_arena;
struct rd_docs;

struct rd_file {
    const char *path;
    const char *data;
    size_t len;
};

struct rd_file_error {
    const char *path;
    const char *msg; /* "path:line:col: ..." */
};

struct rd_source {
    struct pl_resnames res;
    size_t nobjects;
    struct pl_object *objects; /* workloads, sorted by key; payload = struct rd_object * */
    size_t npolicies;
    struct pl_policy *policies; /* sorted by name */
    size_t nclusters;
    struct pl_cluster *clusters;   /* sorted by name; declared capacity */
    struct rd_cluster_conn *conns; /* nclusters, same order */
    size_t nnamespaces;
    struct pl_namespace *namespaces; /* every namespace named by an object or Namespace
                                        object, sorted by name */
    size_t nerrors;
    struct rd_file_error *errors; /* one per broken file, sorted by path */
    size_t nwarnings;
    const char **warnings; /* "path:line:col: ...", of files that loaded, in path order */
    size_t nparsed;        /* files whose YAML was parsed by this call */
    /* private: the loaded documents of accepted files (they own every cJSON tree) */
    size_t ndocs;
    struct rd_docs **docs;
};

#define RD_SOURCE_INIT                                                                             \
    {                                                                                              \
        {0, {0}}, 0, NULL, 0, NULL, 0, NULL, NULL, 0, NULL, 0, NULL, 0, NULL, 0, 0, NULL           \
    }

/*
 * Parse every file (callers pass only *.yaml / *.yml), in path order whatever the order of
 * `files`. A file with any error contributes nothing and is listed in errors (the caller may
 * retry with that file's previous content). Duplicate objects (same key; Clusters and
 * SchedulePolicies by name): the later path is the broken one. Only contract violations
 * (NULL path, the same path twice) return an error. Everything but the cJSON trees is in `a`;
 * the trees (rd_object.root of each payload) are freed by rd_source_release, which must be
 * called before the arena is released. `files` may be freed after the call.
 */
int rd_source_load(struct rd_source *out, const struct rd_file *files, size_t nfiles,
                   struct rc_arena *a, struct rc_err *err);
/* rd_source_load where refused[i] (refused may be NULL), when not NULL, refuses file i
 * unread with that problem ("<path>: <problem>" in errors); its data may be NULL. */
int rd_source_load_ex(struct rd_source *out, const struct rd_file *files,
                      const char *const *refused, size_t nfiles, struct rc_arena *a,
                      struct rc_err *err);
void rd_source_release(struct rd_source *src);

#endif
