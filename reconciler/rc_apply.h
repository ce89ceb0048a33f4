/*
 * rc_apply.h - applies the deploy branch to live clusters.
 *
 * For each cluster with a connection whose directory clusters/<name>/ at the deploy commit
 * differs from its tree at refs/rightplace/applied/<name> (absent, or resync: everything),
 * the objects of added and changed files are server-side applied (field manager
 * "rightplace", force): Namespaces first, then CustomResourceDefinitions (waiting until they
 * are Established), then everything else in path order. Then the objects whose files left the
 * directory are deleted, each only when the live object carries
 * app.kubernetes.io/managed-by=rightplace, with a uid precondition; never on a cluster that
 * was unreachable or had any failure in this call. Applies and deletes go out with the
 * client's concurrency (rc_kube_options.concurrency), stage by stage: deletes take the rest,
 * then CRDs, then Namespaces, each stage answered in full before the next starts (a
 * Namespace goes after the objects in it, a CRD after its custom resources); an object whose
 * delete fails is reported alone, the others are still deleted. A Namespace is kept while pods
 * without rightplace's unit label run in it (deleting it would delete them). A cluster applied
 * completely gets its applied ref moved to the deploy commit (compare-and-swap). The results go
 * into a git note (refs/notes/rightplace) on the deploy commit, merged with a note another writer
 * left there (rc_apply_note_merge), written before the refs move: a note that cannot be written
 * leaves them, and the next pass applies again. When the repo is remote, the refs and the note are
 * pushed in one push; a push refused because another writer pushed first is done again on top of
 * its refs and note (at most RC_APPLY_PUBLISH_ATTEMPTS times).
 *
 * An unchanged file is never applied again (unless resync): a finished RayJob that KubeRay
 * deleted is not re-created by the next pass. kustomization.yaml is not applied.
 *
 * Threads: at most RC_APPLY_MAX_THREADS, the calling thread among them, each taking the next
 * cluster with work as soon as it is done with one (a cluster that answers only at its
 * timeout holds one thread, not a round of them); a cluster's work has its own API connection
 * and arena; git is read and written only by the calling thread.
 * Credentials never reach the note, the log or an error message (the client never reports
 * them).
 */
#ifndef RC_APPLY_H
#define RC_APPLY_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "rc_arena.h"
#include "rc_buf.h"
#include "rc_err.h"
#include "rc_log.h"
#include "rd_source.h"

struct rc_git;
struct rc_kube_options;

#define RC_APPLY_FIELD_MANAGER "rightplace"
#define RC_APPLY_REF_PREFIX "refs/rightplace/applied/"
#define RC_APPLY_MAX_THREADS 8
#define RC_APPLY_PUBLISH_ATTEMPTS 16 /* pushes of refs + note racing other writers */

/* Apply deploy commit `deploy` to every live cluster among conns (those with a kubeconfig).
 * *incomplete is set when a cluster was unreachable or an object failed; that is not an
 * error of the call. Errors: git could not be read or written (RC_ERROR & co). */
int rc_apply_deploy(int *incomplete, struct rc_git *g, const char *deploy,
                    const struct rd_cluster_conn *conns, size_t nconns, int resync,
                    const struct rc_log *log, struct rc_arena *a, struct rc_err *err);

/* The same with client options (timeouts, retries, page size; kubeconfig and context are
 * taken from each conn). ko NULL: RC_KUBE_OPTIONS_INIT. */
int rc_apply_deploy_opts(int *incomplete, struct rc_git *g, const char *deploy,
                         const struct rd_cluster_conn *conns, size_t nconns, int resync,
                         const struct rc_kube_options *ko, const struct rc_log *log,
                         struct rc_arena *a, struct rc_err *err);

/* What one apply of a process reported, for the next (loop mode): a cluster that stays
 * unreachable, or an object the server keeps refusing, is a warning in the pass that meets
 * it and an info line ("still unreachable", "as in the pass before") in the passes after it. */
struct rc_apply_memory;
void rc_apply_memory_new(struct rc_apply_memory **out);
void rc_apply_memory_free(struct rc_apply_memory *m);
/* Keep the memory in the file at path too (the state directory's RC_CACHE_APPLY_FILE), so that
 * a `--once` process (a cron tick) knows what the last one reported: read now (a file that is
 * missing or does not read is nothing known), written whenever the memory changes. */
void rc_apply_memory_file(struct rc_apply_memory *m, const char *path);

/* rc_apply_deploy_opts with that memory (NULL: none), which it reads and then replaces with
 * what this apply reported. */
int rc_apply_deploy_ex(int *incomplete, struct rc_git *g, const char *deploy,
                       const struct rd_cluster_conn *conns, size_t nconns, int resync,
                       const struct rc_kube_options *ko, struct rc_apply_memory *mem,
                       const struct rc_log *log, struct rc_arena *a, struct rc_err *err);

/* `rightplace diff`: for each live cluster among conns, every object of clusters/<name>/ at
 * `deploy` is server-side applied with dryRun=All (field manager rightplace, force: what the
 * next apply would make of it; the server stores nothing) and compared with the live object,
 * both without metadata.managedFields, resourceVersion, generation, uid and
 * creationTimestamp, as YAML. Each object that differs (or does not exist) is written to out
 * as a unified diff, in the style of `kubectl diff` ("--- live/<cluster>/<file>",
 * "+++ merged/<cluster>/<file>", one hunk). *drift counts them; *failed counts the clusters
 * and objects that could not be compared (logged at warn level). Errors: git only. */
int rc_apply_diff(struct rc_buf *out, size_t *drift, size_t *failed, struct rc_git *g,
                  const char *deploy, const struct rd_cluster_conn *conns, size_t nconns,
                  const struct rc_kube_options *ko, const struct rc_log *log, struct rc_arena *a,
                  struct rc_err *err);

/* ==== The parts below are exposed for tests ==== */

/* A file of a cluster directory as read from git. */
struct rc_apply_file {
    const char *path;
    const char *data;
    size_t len;
};

enum rc_apply_stage {
    RC_APPLY_STAGE_NAMESPACE = 0,
    RC_APPLY_STAGE_CRD = 1,
    RC_APPLY_STAGE_REST = 2
};

/* One object to apply or delete. */
struct rc_apply_op {
    const char *path;
    enum rc_apply_stage stage;
    cJSON *obj;                                 /* apply: the manifest (owned by the plan) */
    const char *api_version, *kind, *ns, *name; /* ns NULL: cluster-scoped */
    const char *key;                            /* "<ns>/<Kind>/<name>" | "<Kind>/<name>" */
};

struct rc_apply_plan {
    size_t napply; /* Namespaces, then CRDs, then the rest; path order within a stage */
    struct rc_apply_op *apply;
    size_t ndelete; /* the rest first, then CRDs, then Namespaces; path order within */
    struct rc_apply_op *del;
};

/* Compare the old and new files of one cluster directory (each sorted by path; old may be
 * NULL/0: nothing applied yet). Added and changed files are applied (every file when
 * resync), removed files deleted; kustomization.yaml and files that are not .yaml/.yml are
 * ignored. A file must hold exactly one object with apiVersion, kind and metadata.name
 * (RC_EINVALID "path: ..." otherwise: the deploy branch is rendered by rightplace, so this is
 * a broken deploy branch). A removed file that cannot be read is skipped. The cJSON trees are
 * freed by rc_apply_plan_release; everything else is in `a`. */
int rc_apply_plan_make(struct rc_apply_plan *out, const struct rc_apply_file *old, size_t nold,
                       const struct rc_apply_file *new_files, size_t nnew, int resync,
                       struct rc_arena *a, struct rc_err *err);
void rc_apply_plan_release(struct rc_apply_plan *p);

/* The distinct apiVersions of the plan's applies and deletes (*n of them, in `a`): the
 * group/versions a client needs discovered for it (rc_kube_prepare). A real cluster serves
 * dozens (every CRD's, the aggregated APIs'), each one more request before the first apply,
 * and one whose service is down (metrics.k8s.io without its metrics-server) answers 503,
 * which must cost its own kinds only, not the cluster's work. */
const char *const *rc_apply_plan_api_versions(const struct rc_apply_plan *p, size_t *n,
                                              struct rc_arena *a);

/* What happened on one cluster. */
enum rc_apply_outcome {
    RC_APPLY_UP_TO_DATE = 0,  /* nothing changed since the applied commit */
    RC_APPLY_DONE = 1,        /* every change applied; applied ref moved */
    RC_APPLY_FAILED = 2,      /* some objects failed; nothing deleted; ref not moved */
    RC_APPLY_UNREACHABLE = 3, /* no answer from the cluster; nothing deleted; ref not moved */
    RC_APPLY_STOPPED = 4      /* the cluster refused to work with us (401, 429 after retries,
                                 RC_APPLY_MAX_SERVER_ERRORS 5xx in a row, discovery refused):
                                 its work stopped; nothing deleted; ref not moved */
};

/* Server errors (5xx after the client's retries) in a row that stop a cluster's work; fewer
 * are failures of their objects only. */
#define RC_APPLY_MAX_SERVER_ERRORS 5

struct rc_apply_failure {
    const char *what; /* "apply rayjob3/RayJob/x" | "delete ..." */
    const char *msg;  /* the server's message, or the transport error */
};

struct rc_apply_result {
    const char *cluster;
    enum rc_apply_outcome outcome;
    size_t applied, deleted;
    size_t kept;     /* removed files whose live object is not ours: left alone */
    const char *why; /* unreachable/stopped: the reason; done: why the ref did not move */
    size_t nfailures;
    struct rc_apply_failure *failures;
};

/* Merge a note made by rc_apply_note_format (`ours`) into the note already on the commit
 * (`existing`, NULL: none), as another writer or an earlier pass left it. Per cluster block
 * (its "cluster <name>: ..." line and the indented lines under it): ours replaces the
 * existing block of the same cluster, except that an "up to date" line never replaces one
 * (it says nothing new); clusters only in the existing note keep their place; new clusters
 * follow in our order. Text before the first cluster block is kept (ours when there is
 * none). Bounded: one block per cluster, whatever the number of passes. */
int rc_apply_note_merge(struct rc_buf *out, const char *existing, const char *ours,
                        struct rc_err *err);

/* The note text: one "rightplace apply <deploy>" line, then per cluster (in the given
 * order) a line "cluster <name>: ..." and one indented line per failure. Deterministic. */
int rc_apply_note_format(struct rc_buf *out, const char *deploy,
                         const struct rc_apply_result *results, size_t n, struct rc_err *err);

#endif
