/*
 * rc_apply.c - applies the deploy branch to live clusters (see rc_apply.h).
 *
 * The calling thread reads git (applied refs, the cluster directories) and makes one plan per
 * cluster; worker threads, one per cluster with work, talk to the API servers with their own
 * client and arena; the calling thread then moves the applied refs and writes the note.
 * The plan (cJSON manifests, strings in the caller's arena) is only read by the workers.
 *
 * Failure policy per cluster (see object_failed): an object the server refuses (4xx other
 * than 401/429, or a 5xx after the client's retries) is a failure of that object and the
 * others are still applied; no answer at all means the cluster is unreachable, and 401, 429
 * after retries or RC_APPLY_MAX_SERVER_ERRORS server errors in a row stop it: its work stops
 * there. Either way nothing is deleted on it and its applied ref stays, so the next pass
 * retries.
 */
#include "rc_sort.h"
#include "rc_apply.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "pl_basics.h"
#include "rc_git.h"
#include "rc_hash.h"
#include "rc_kube.h"
#include "rc_mem.h"
#include "rc_thread.h"

#include "rc_banned.h"

#define CRD_WAIT_MS 60000

/* What the last apply reported (rc_apply_memory_new): the digests of its halts (cluster and
 * outcome) and object failures (cluster, what, message), sorted, each once; kept in a file
 * when it has one (rc_apply_memory_file). */
struct rc_apply_memory {
    uint64_t *prev;
    size_t nprev;
    char *path; /* NULL: none */
};

/* The file: this line, then one digest a line, 16 lower-case hex digits, ascending; at most
 * MEMORY_DIGESTS_MAX of them (about a million), so that the reader's limit never refuses
 * what the writer wrote: past it, the largest are left out (their problems warn again). */
#define MEMORY_MAGIC "rightplace-apply-reported 1\n"
#define MEMORY_LINE 17
#define MEMORY_FILE_MAX ((size_t)16 << 20)
#define MEMORY_DIGESTS_MAX ((MEMORY_FILE_MAX - (sizeof(MEMORY_MAGIC) - 1)) / MEMORY_LINE)

void rc_apply_memory_new(struct rc_apply_memory **out)
{
    *out = rc_xcalloc(1, sizeof(**out));
}

void rc_apply_memory_free(struct rc_apply_memory *m)
{
    if (!m)
        return;
    free(m->prev);
    free(m->path);
    free(m);
}

/* The digests the file at path holds, into m; 0 (m left empty) when there is none or it does
 * not read as this build writes it: a file in the state directory is read as untrusted, and
 * the worst a bad one can do is a warning logged again. */
static int memory_read(struct rc_apply_memory *m, const char *path)
{
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    size_t magic = strlen(MEMORY_MAGIC), size, n;
    unsigned char *buf = NULL;
    uint64_t *v = NULL;
    struct stat st;
    int ok = 0;

    if (fd < 0)
        return 0;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
        (size_t)st.st_size > MEMORY_FILE_MAX || (size_t)st.st_size < magic ||
        ((size_t)st.st_size - magic) % MEMORY_LINE)
        goto done;
    size = (size_t)st.st_size;
    buf = rc_xmalloc(size + 1);
    if (rc_file_read_at(fd, buf, size, 0) < 0 || memcmp(buf, MEMORY_MAGIC, magic))
        goto done;
    n = (size - magic) / MEMORY_LINE;
    v = rc_xcalloc(n + 1, sizeof(*v));
    for (size_t i = 0; i < n; i++) {
        const char *p = (const char *)buf + magic + i * MEMORY_LINE;
        if (rc_hash_unhex(p, &v[i]) < 0 || p[16] != '\n' || (i && v[i - 1] >= v[i]))
            goto done;
    }
    free(m->prev);
    m->prev = v;
    m->nprev = n;
    v = NULL;
    ok = 1;
done:
    free(v);
    free(buf);
    close(fd);
    return ok;
}

void rc_apply_memory_file(struct rc_apply_memory *m, const char *path)
{
    free(m->path);
    m->path = rc_xstrdup(path);
    memory_read(m, path);
}

/* The file written again (atomically) with what m holds now. */
static int memory_write(const struct rc_apply_memory *m, struct rc_err *err)
{
    struct rc_buf b = RC_BUF_INIT;
    int error;

    rc_buf_puts(&b, MEMORY_MAGIC, NULL);
    for (size_t i = 0; i < m->nprev && i < MEMORY_DIGESTS_MAX; i++) {
        char hex[17];
        rc_hash_hex(m->prev[i], hex);
        hex[16] = '\n';
        rc_buf_add(&b, hex, MEMORY_LINE, NULL);
    }
    error = rc_file_write_atomic(m->path, b.ptr, b.len, err);
    rc_buf_release(&b);
    return error;
}

struct job {
    const struct rd_cluster_conn *conn;
    const struct rc_kube_options *ko;
    const struct rc_log *log;
    const struct rc_apply_memory *mem; /* NULL: none (every problem is a warning) */
    uint64_t *reported;                /* this pass's, in the arena */
    size_t nreported, cap_reported;
    int failed_again; /* objects failed, as in the last apply (its summary is at info level) */
    const struct rc_apply_plan *plan;
    struct rc_arena arena; /* the worker's own */
    struct rc_apply_result res;
    size_t cap_failures;
    int server_errors; /* 5xx failures since the last success */
    int halted;        /* the cluster's work stopped (unreachable or stopped) */
    size_t base;       /* plan index of the first call of the batch being sent (apply) */
    size_t *map;       /* plan->del index of each call of the batch being sent (delete) */
    char **uids;       /* per plan->del: the live object's uid when it is ours to delete */
};

static uint64_t report_digest(const char *cluster, const char *what, const char *msg)
{
    uint64_t h = rc_xxh64_seeded(cluster, strlen(cluster) + 1, 0);

    h = rc_xxh64_seeded(what, strlen(what) + 1, h);
    return msg ? rc_xxh64_seeded(msg, strlen(msg), h) : h;
}

/* Note a problem this pass reports; whether the last apply of the process reported it too
 * (then it is logged at info level: a cluster down for a day is not a warning every pass). */
static int reported_before(struct job *j, uint64_t d)
{
    if (j->nreported == j->cap_reported) {
        size_t cap = j->cap_reported ? 2 * j->cap_reported : 8;
        uint64_t *v = rc_arena_calloc(&j->arena, cap, sizeof(*v));
        if (j->nreported)
            memcpy(v, j->reported, j->nreported * sizeof(*v));
        j->reported = v;
        j->cap_reported = cap;
    }
    j->reported[j->nreported++] = d;
    return j->mem && j->mem->nprev &&
           bsearch(&d, j->mem->prev, j->mem->nprev, sizeof(d), rc_cmp_u64) != NULL;
}

static void add_failure(struct job *j, const char *verb, const char *key, const char *msg)
{
    struct rc_apply_result *r = &j->res;
    int again;

    if (r->nfailures == j->cap_failures) {
        size_t cap = j->cap_failures ? j->cap_failures * 2 : 8;
        struct rc_apply_failure *f = rc_arena_calloc(&j->arena, cap, sizeof(*f));
        if (r->nfailures)
            memcpy(f, r->failures, r->nfailures * sizeof(*f));
        r->failures = f;
        j->cap_failures = cap;
    }
    r->failures[r->nfailures].what = rc_arena_printf(&j->arena, "%s %s", verb, key);
    r->failures[r->nfailures].msg = rc_arena_strdup(&j->arena, msg);
    r->nfailures++;
    again =
        reported_before(j, report_digest(j->conn->name, r->failures[r->nfailures - 1].what, msg));
    if (j->log)
        rc_log_kv(j->log, again ? RC_LOG_INFO : RC_LOG_WARN, NULL, 0, "cluster '%s': %s '%s': %s%s",
                  j->conn->name, verb, key, msg, again ? " (as in the pass before)" : "");
}

static void halt(struct job *j, enum rc_apply_outcome outcome, const char *msg)
{
    const char *how = outcome == RC_APPLY_UNREACHABLE ? "unreachable" : "stopped";
    int again;

    j->halted = 1;
    j->res.outcome = outcome;
    j->res.why = rc_arena_strdup(&j->arena, msg);
    /* by its outcome alone: the message names the request that met it */
    again = reported_before(j, report_digest(j->conn->name, how, NULL));
    if (j->log)
        rc_log_kv(j->log, again ? RC_LOG_INFO : RC_LOG_WARN, NULL, 0,
                  "cluster '%s': %s%s: %s; retried next pass", j->conn->name, again ? "still " : "",
                  how, msg);
}

static void unreachable(struct job *j, const char *msg)
{
    halt(j, RC_APPLY_UNREACHABLE, msg);
}

/* A request about one object failed with rc (HTTP status `status`, 0: none). No answer at all
 * means the cluster is unreachable; 401 (credentials refused) and 429 after the client's
 * retries (the server asks us to back off) stop the cluster's work; anything else (403, 404,
 * 409, 422, a 5xx after retries) is a failure of that object only, unless server errors come
 * RC_APPLY_MAX_SERVER_ERRORS times in a row. Returns -1 when the cluster's work stops. */
static int object_failed(struct job *j, const char *verb, const char *key, int rc, long status,
                         const char *msg)
{
    if (rc == RC_ETRANSPORT) {
        unreachable(j, msg);
        return -1;
    }
    if (status == 401 || status == 429) {
        halt(j, RC_APPLY_STOPPED, msg);
        return -1;
    }
    add_failure(j, verb, key, msg);
    if (status >= 500 && ++j->server_errors >= RC_APPLY_MAX_SERVER_ERRORS) {
        char *why = rc_arena_printf(&j->arena, "%d server errors in a row, the last: %s",
                                    RC_APPLY_MAX_SERVER_ERRORS, msg);
        halt(j, RC_APPLY_STOPPED, why);
        return -1;
    }
    if (status < 500)
        j->server_errors = 0;
    return 0;
}

/* The cluster could not be worked with at all (opening the client, discovery). */
static void cluster_failed(struct job *j, int rc, const char *msg)
{
    halt(j, rc == RC_ETRANSPORT ? RC_APPLY_UNREACHABLE : RC_APPLY_STOPPED, msg);
}

/* Wait for the CRDs applied so far (stage CRD) to be Established, then forget discovery. */
static int wait_crds(struct job *j, struct rc_kube *k, size_t upto)
{
    struct rc_err err = RC_ERR_INIT;
    int rc;

    for (size_t i = 0; i < upto; i++) {
        const struct rc_apply_op *op = &j->plan->apply[i];
        if (op->stage != RC_APPLY_STAGE_CRD)
            continue;
        if ((rc = rc_kube_wait_crd(k, op->name, CRD_WAIT_MS, &err)) < 0 &&
            object_failed(j, "wait for", op->key, rc, rc_kube_last_status(k), err.msg) < 0)
            return -1;
    }
    rc_kube_invalidate(k);
    return 0;
}

static int is_ours(const cJSON *live)
{
    const cJSON *labels = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(live, "metadata"), "labels");
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(labels, PL_LABEL_MANAGED);

    return cJSON_IsString(v) && !strcmp(v->valuestring, PL_LABEL_MANAGED_VALUE);
}

static int count_foreign_pod(void *payload, const cJSON *item, struct rc_err *err)
{
    const cJSON *labels = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(item, "metadata"), "labels");

    (void)err;
    if (!cJSON_IsString(cJSON_GetObjectItemCaseSensitive(labels, PL_LABEL_UNIT)))
        (*(size_t *)payload)++;
    return RC_OK;
}

/* Deleting a Namespace deletes everything in it: refuse while pods that rightplace did not
 * place run there. 1: it may go; 0: kept (counted and logged); -1: the cluster is down. */
static int namespace_may_go(struct job *j, struct rc_kube *k, const struct rc_apply_op *op)
{
    struct rc_err err = RC_ERR_INIT;
    struct rc_buf path = RC_BUF_INIT;
    size_t foreign = 0;
    int rc;

    if (rc_buf_printf(&path, &err, "/api/v1/namespaces/%s/pods", op->name) < 0) {
        add_failure(j, "delete", op->key, err.msg);
        return 0;
    }
    rc = rc_kube_list(k, path.ptr, NULL, count_foreign_pod, &foreign, &err);
    rc_buf_release(&path);
    if (rc < 0)
        return object_failed(j, "delete", op->key, rc, rc_kube_last_status(k), err.msg);
    if (foreign == 0)
        return 1;
    j->res.kept++;
    if (j->log)
        rc_log_info(j->log,
                    "cluster '%s': not deleting '%s': %zu pods there were not placed by rightplace",
                    j->conn->name, op->key, foreign);
    return 0;
}

/* A request about one object failed (c: its answer, in completion order). Requests still in
 * flight when the cluster's work stopped keep what they say about their objects. Nonzero:
 * send no more. */
static int call_failed(struct job *j, const char *verb, const char *key,
                       const struct rc_kube_call *c)
{
    if (j->halted) {
        if (c->rc != RC_ETRANSPORT && c->status != 401 && c->status != 429)
            add_failure(j, verb, key, c->err.msg);
        return 1;
    }
    return object_failed(j, verb, key, c->rc, c->status, c->err.msg) < 0;
}

/* The GET of an object to delete answered: is it ours, and which uid does it have? */
static int on_got(void *payload, struct rc_kube_call *c, size_t i)
{
    struct job *j = payload;
    size_t d = j->map[i];
    const struct rc_apply_op *op = &j->plan->del[d];
    const cJSON *uid;
    cJSON *live;

    if (c->rc == RC_HTTP_NOT_SENT)
        return 1;
    if (c->rc == RC_ENOTFOUND)
        return 0; /* already gone (or its kind is no longer served) */
    if (c->rc != RC_OK)
        return call_failed(j, "delete", op->key, c);
    j->server_errors = 0;
    live = cJSON_ParseWithLength(c->resp.body.ptr, c->resp.body.len);
    if (!live) {
        add_failure(j, "delete", op->key, "invalid JSON in the answer to GET");
        return 0;
    }
    uid =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(live, "metadata"), "uid");
    if (is_ours(live) && cJSON_IsString(uid)) {
        j->uids[d] = rc_arena_strdup(&j->arena, uid->valuestring);
    } else {
        j->res.kept++;
        if (j->log)
            rc_log_info(j->log, "cluster '%s': not deleting '%s': it does not carry %s=%s",
                        j->conn->name, op->key, PL_LABEL_MANAGED, PL_LABEL_MANAGED_VALUE);
    }
    cJSON_Delete(live);
    return 0;
}

/* A DELETE (uid precondition) answered. */
static int on_deleted(void *payload, struct rc_kube_call *c, size_t i)
{
    struct job *j = payload;
    const struct rc_apply_op *op = &j->plan->del[j->map[i]];

    if (c->rc == RC_HTTP_NOT_SENT)
        return 1;
    if (c->rc == RC_OK) {
        j->server_errors = 0;
        j->res.deleted++;
        if (j->log)
            rc_log_info(j->log, "cluster '%s': deleted '%s'", j->conn->name, op->key);
        return 0;
    }
    if (c->rc == RC_ENOTFOUND)
        return 0; /* gone meanwhile */
    if (c->rc == RC_ECONFLICT && c->status == 409) {
        j->res.kept++; /* re-created by someone else since our GET: not ours to delete */
        if (j->log)
            rc_log_info(j->log, "cluster '%s': not deleting '%s': %s", j->conn->name, op->key,
                        c->err.msg);
        return 0;
    }
    return call_failed(j, "delete", op->key, c);
}

/* Send calls[0, n) (their objects: plan->del[j->map[i]]) with the client's concurrency. */
static void send_calls(struct job *j, struct rc_kube *k, struct rc_kube_call *calls, size_t n,
                       rc_kube_call_fn on_done)
{
    struct rc_err err = RC_ERR_INIT;

    if (n && !j->halted && rc_kube_request_many(k, calls, n, 0, on_done, j, &err) < 0)
        cluster_failed(j, RC_ERROR, err.msg); /* no credentials */
    for (size_t i = 0; i < n; i++)
        rc_kube_call_release(&calls[i]);
}

/* Delete plan->del[from, to), one stage (the rest, CRDs or Namespaces), with the client's
 * concurrency: a GET of each (is it ours? its uid), for a Namespace a look at its pods, then
 * a DELETE with a uid precondition of each one that may go. The stage is over (every answer
 * in) before the next begins, so a Namespace is deleted only after the objects in it, a CRD
 * only after its custom resources. -1 when the cluster's work stopped. */
static int delete_stage(struct job *j, struct rc_kube *k, size_t from, size_t to)
{
    size_t n = to - from, m = 0;
    struct rc_kube_call *calls = rc_xcalloc(n + 1, sizeof(*calls));
    size_t *map = rc_xcalloc(n + 1, sizeof(*map));

    j->map = map;
    for (size_t i = 0; i < n && !j->halted; i++) {
        const struct rc_apply_op *op = &j->plan->del[from + i];

        map[m] = from + i;
        if (rc_kube_get_call(k, &calls[m], op->api_version, op->kind, op->ns, op->name) < 0)
            on_got(j, &calls[m], m); /* not sendable: a kind no longer served is gone */
        m++;
    }
    send_calls(j, k, calls, m, on_got);
    for (size_t i = 0; i < n && !j->halted; i++) {
        const struct rc_apply_op *op = &j->plan->del[from + i];

        if (j->uids[from + i] && op->stage == RC_APPLY_STAGE_NAMESPACE) {
            int rc = namespace_may_go(j, k, op);
            if (rc <= 0)
                j->uids[from + i] = NULL;
        }
    }
    m = 0;
    for (size_t i = 0; i < n && !j->halted; i++) {
        const struct rc_apply_op *op = &j->plan->del[from + i];

        if (!j->uids[from + i])
            continue;
        map[m] = from + i;
        if (rc_kube_delete_call(k, &calls[m], op->api_version, op->kind, op->ns, op->name,
                                j->uids[from + i]) < 0)
            on_deleted(j, &calls[m], m);
        m++;
    }
    send_calls(j, k, calls, m, on_deleted);
    j->map = NULL;
    free(calls);
    free(map);
    return j->halted ? -1 : 0;
}

/* An apply answered (in completion order). Nonzero: send no more. */
static int on_applied(void *payload, struct rc_kube_call *c, size_t i)
{
    struct job *j = payload;
    const struct rc_apply_op *op = &j->plan->apply[j->base + i];

    if (c->rc == RC_OK) {
        j->server_errors = 0;
        j->res.applied++;
        if (j->log)
            rc_log_debug(j->log, "cluster '%s': applied '%s'", j->conn->name, op->key);
        return 0;
    }
    if (c->rc == RC_HTTP_NOT_SENT)
        return 1;
    return call_failed(j, "apply", op->key, c);
}

/* Apply plan->apply[from, to) with the client's concurrency. -1 when the work stopped. */
static int apply_range(struct job *j, struct rc_kube *k, size_t from, size_t to)
{
    struct rc_kube_call *calls;
    struct rc_err err = RC_ERR_INIT;
    size_t n = to - from;

    if (n == 0)
        return j->halted ? -1 : 0;
    calls = rc_xcalloc(n, sizeof(*calls));
    j->base = from;
    for (size_t i = 0; i < n && !j->halted; i++) {
        if (rc_kube_apply_call(k, &calls[i], j->plan->apply[from + i].obj, RC_APPLY_FIELD_MANAGER,
                               RC_KUBE_APPLY_FORCE) < 0)
            on_applied(j, &calls[i], i); /* not sendable (e.g. a kind the server lacks) */
    }
    if (!j->halted && rc_kube_request_many(k, calls, n, 0, on_applied, j, &err) < 0)
        cluster_failed(j, RC_ERROR, err.msg); /* no credentials */
    for (size_t i = 0; i < n; i++)
        rc_kube_call_release(&calls[i]);
    free(calls);
    return j->halted ? -1 : 0;
}

static int cmp_failure(const void *x, const void *y)
{
    const struct rc_apply_failure *p = x, *q = y;
    int c = strcmp(p->what, q->what);

    return c ? c : strcmp(p->msg, q->msg);
}

static void run_job(struct job *j)
{
    struct rc_kube_options ko = *j->ko;
    struct rc_err err = RC_ERR_INIT;
    struct rc_kube *k = NULL;
    size_t i, ns_end = 0, crd_end, del_end, gvs_n = 0;
    const char *const *gvs;
    int rc;

    ko.log = j->log;
    if ((rc = rc_kube_open_conn(&k, j->conn, &ko, &err)) < 0) {
        cluster_failed(j, rc, err.msg);
        return;
    }
    /* discovery of what the plan uses, and no more (rc_apply_plan_api_versions) */
    gvs = rc_apply_plan_api_versions(j->plan, &gvs_n, &j->arena);
    if ((rc = rc_kube_prepare(k, gvs, gvs_n, &err)) < 0) {
        cluster_failed(j, rc, err.msg);
        goto done;
    }
    /* Namespaces, then CRDs (established before anything that may need them), then the rest;
     * each stage concurrently */
    while (ns_end < j->plan->napply && j->plan->apply[ns_end].stage == RC_APPLY_STAGE_NAMESPACE)
        ns_end++;
    crd_end = ns_end;
    while (crd_end < j->plan->napply && j->plan->apply[crd_end].stage == RC_APPLY_STAGE_CRD)
        crd_end++;
    if (apply_range(j, k, 0, ns_end) < 0 || apply_range(j, k, ns_end, crd_end) < 0)
        goto done;
    if (crd_end > ns_end && wait_crds(j, k, crd_end) < 0)
        goto done;
    if (apply_range(j, k, crd_end, j->plan->napply) < 0)
        goto done;
    if (j->res.nfailures) {
        j->res.outcome = RC_APPLY_FAILED;
        goto done;
    }
    /* deletes: the rest, then CRDs, then Namespaces (the plan's order), stage by stage */
    j->uids = rc_arena_calloc(&j->arena, j->plan->ndelete + 1, sizeof(*j->uids));
    for (i = 0; i < j->plan->ndelete; i = del_end) {
        del_end = i;
        while (del_end < j->plan->ndelete && j->plan->del[del_end].stage == j->plan->del[i].stage)
            del_end++;
        if (delete_stage(j, k, i, del_end) < 0)
            goto done;
    }
    j->res.outcome = j->res.nfailures ? RC_APPLY_FAILED : RC_APPLY_DONE;
done:
    /* answers came in completion order: report failures in a stable order */
    if (j->res.nfailures > 1)
        rc_sort(j->res.failures, j->res.nfailures, sizeof(*j->res.failures), cmp_failure);
    rc_kube_free(k);
}

/* ==== The calling thread: git, plans, refs, note ==== */

static struct rc_apply_file *to_files(const struct rc_git_blob *b, size_t n, struct rc_arena *a)
{
    struct rc_apply_file *f = rc_arena_calloc(a, n + 1, sizeof(*f));

    for (size_t i = 0; i < n; i++) {
        f[i].path = b[i].path;
        f[i].data = b[i].data;
        f[i].len = b[i].len;
    }
    return f;
}

struct cluster {
    struct job job;
    struct rc_apply_plan plan;
    char ref[300];
    char old[41]; /* "" when the ref does not exist */
    int has_work; /* a worker runs */
    int move_ref; /* move the ref when done */
};

/* Is clusters/<name> the same tree (or absent) in both commits? 0 when unsure. */
static int same_dir(struct rc_git *g, const char *x, const char *y, const char *name)
{
    struct rc_err err = RC_ERR_INIT;
    char path[300], ix[41], iy[41];
    int rx, ry;

    snprintf(path, sizeof(path), "clusters/%s", name);
    rx = rc_git_path_id(ix, g, x, path, &err);
    ry = rc_git_path_id(iy, g, y, path, &err);
    if (rx == RC_ENOTFOUND && ry == RC_ENOTFOUND)
        return 1;
    return rx == RC_OK && ry == RC_OK && !strcmp(ix, iy);
}

static int prepare(struct cluster *c, struct rc_git *g, const char *deploy, int resync,
                   struct rc_arena *a, struct rc_err *err)
{
    struct rc_git_blob *nb = NULL, *ob = NULL;
    size_t nn = 0, no = 0;
    char prefix[300];
    int rc;

    snprintf(c->ref, sizeof(c->ref), "%s%s", RC_APPLY_REF_PREFIX, c->job.conn->name);
    snprintf(prefix, sizeof(prefix), "clusters/%s/", c->job.conn->name);
    rc = rc_git_resolve(c->old, g, c->ref, err);
    if (rc == RC_ENOTFOUND) {
        c->old[0] = 0;
        rc_err_clear(err);
    } else if (rc < 0) {
        return rc;
    }
    if (!strcmp(c->old, deploy) && !resync) {
        c->job.res.outcome = RC_APPLY_UP_TO_DATE;
        return RC_OK;
    }
    if (c->old[0] && !resync && same_dir(g, deploy, c->old, c->job.conn->name)) {
        c->move_ref = 1; /* the directory did not change: nothing to send */
        c->job.res.outcome = RC_APPLY_UP_TO_DATE;
        return RC_OK;
    }
    if ((rc = rc_git_read_tree(&nb, &nn, g, deploy, prefix, a, err)) < 0)
        return rc;
    if (c->old[0] && (rc = rc_git_read_tree(&ob, &no, g, c->old, prefix, a, err)) < 0)
        return rc;
    rc = rc_apply_plan_make(&c->plan, to_files(ob, no, a), no, to_files(nb, nn, a), nn, resync, a,
                            err);
    if (rc < 0) {
        struct job *j = &c->job;
        /* a deploy branch rightplace cannot read: report it, apply nothing there */
        j->res.outcome = RC_APPLY_FAILED;
        add_failure(j, "read", prefix, err->msg);
        rc_err_clear(err);
        return RC_OK;
    }
    c->move_ref = 1;
    if (c->plan.napply == 0 && c->plan.ndelete == 0) {
        c->job.res.outcome = RC_APPLY_UP_TO_DATE;
        return RC_OK;
    }
    c->has_work = 1;
    return RC_OK;
}

struct with_work {
    struct cluster *cl;
    size_t *at; /* indices into cl of the clusters with work */
};

static void run_one(void *arg, size_t i)
{
    struct with_work *w = arg;

    run_job(&w->cl[w->at[i]].job);
}

/* The clusters with work, RC_APPLY_MAX_THREADS at once, a thread taking the next cluster as
 * soon as it is done with one: a cluster that answers only at its timeout holds one thread,
 * not a round of them (rc_threads_each). */
static void run_all(struct cluster *cl, size_t n)
{
    struct with_work w = {cl, rc_xcalloc(n + 1, sizeof(size_t))};
    size_t k = 0;

    for (size_t i = 0; i < n; i++) {
        if (cl[i].has_work)
            w.at[k++] = i;
    }
    rc_threads_each(run_one, &w, k, RC_APPLY_MAX_THREADS);
    free(w.at);
}

/* The apply's note on `deploy`: ours (results) merged into the one already there, written
 * when that changes it. */
static int write_note(struct rc_git *g, const char *deploy, const struct rc_apply_result *results,
                      size_t n, struct rc_buf *note, struct rc_buf *merged, struct rc_arena *a,
                      struct rc_err *err)
{
    char *existing = NULL;
    struct rc_err nerr = RC_ERR_INIT;
    int rc;

    rc_buf_reset(note);
    rc_buf_reset(merged);
    if ((rc = rc_apply_note_format(note, deploy, results, n, err)) < 0)
        return rc;
    rc = rc_git_note_read(&existing, g, deploy, a, &nerr);
    if (rc < 0 && rc != RC_ENOTFOUND)
        return rc_err_set(err, rc, "%s", nerr.msg);
    if ((rc = rc_apply_note_merge(merged, rc == RC_OK ? existing : NULL, note->ptr, err)) < 0)
        return rc;
    if (existing && !strcmp(existing, merged->ptr))
        return RC_OK;
    return rc_git_note_write_local(g, deploy, merged->ptr, err);
}

/* A cluster's applied ref that could not be moved: said in its result. */
static void ref_not_moved(struct rc_apply_result *r, const struct rc_err *rerr, struct rc_arena *a)
{
    r->why = rc_arena_printf(a, "applied ref not moved: %s", rerr->msg);
    if (r->outcome == RC_APPLY_UP_TO_DATE)
        r->outcome = RC_APPLY_DONE;
}

/* Write the note, then move the applied refs of the clusters applied completely, then push
 * them all in one push. The note goes first: a note that cannot be written (a full disk)
 * leaves the refs where they were, so that the next pass applies again and writes it, where
 * refs moved first left that apply without its note for good. A ref that then does not move
 * is said in the note, written again. When another writer pushed first (the push is refused
 * and the local mirror fetched again), do it again on top of what it wrote: its applied refs
 * are kept when they already name this commit, its note on this commit is merged with ours
 * (rc_apply_note_merge), not replaced. */
static int publish(struct cluster *cl, size_t n, struct rc_git *g, const char *deploy,
                   int *incomplete, const struct rc_log *log, struct rc_arena *a,
                   struct rc_err *err)
{
    struct rc_apply_result *results = rc_arena_calloc(a, n + 1, sizeof(*results));
    const char **refs = rc_arena_calloc(a, n + 2, sizeof(*refs));
    unsigned char *to_move = rc_arena_calloc(a, n + 1, 1);
    struct rc_buf note = RC_BUF_INIT, merged = RC_BUF_INIT;
    int rc = RC_OK;

    for (int attempt = 1;; attempt++) {
        size_t nrefs = 0;
        int reported = 0, failed = 0, moved_all = 1;

        for (size_t i = 0; i < n; i++) {
            struct cluster *c = &cl[i];
            struct rc_apply_result *r = &results[i];
            struct rc_err rerr = RC_ERR_INIT;
            char cur[41];
            int urc;

            *r = c->job.res;
            to_move[i] = 0;
            if (r->outcome == RC_APPLY_FAILED || r->outcome == RC_APPLY_UNREACHABLE ||
                r->outcome == RC_APPLY_STOPPED) {
                failed = 1;
                reported = 1;
                continue;
            }
            if (c->move_ref && strcmp(c->old, deploy)) {
                urc = rc_git_resolve(cur, g, c->ref, &rerr);
                if (urc == RC_ENOTFOUND) {
                    cur[0] = '\0';
                } else if (urc < 0) {
                    failed = 1;
                    ref_not_moved(r, &rerr, a);
                    goto next;
                }
                if (!strcmp(cur, deploy))
                    /* another writer applied this commit there (or our own earlier attempt
                     * did and the fetch after the refused push failed): pushing it is a
                     * no-op or completes ours */
                    refs[nrefs++] = c->ref;
                else
                    to_move[i] = 1;
            }
        next:
            if (r->outcome != RC_APPLY_UP_TO_DATE)
                reported = 1;
        }
        if (reported && (rc = write_note(g, deploy, results, n, &note, &merged, a, err)) < 0)
            goto done;
        for (size_t i = 0; i < n; i++) {
            struct cluster *c = &cl[i];
            struct rc_err rerr = RC_ERR_INIT;

            if (!to_move[i])
                continue;
            if (rc_git_update_ref_local(g, c->ref, deploy, c->old[0] ? c->old : NULL,
                                        "rightplace: applied", &rerr) == RC_OK) {
                refs[nrefs++] = c->ref;
                continue;
            }
            failed = 1;
            moved_all = 0;
            ref_not_moved(&results[i], &rerr, a);
        }
        *incomplete = failed;
        if (!moved_all) {
            /* the note said those refs moved */
            reported = 1;
            if ((rc = write_note(g, deploy, results, n, &note, &merged, a, err)) < 0)
                goto done;
        }
        if (reported)
            refs[nrefs++] = RC_GIT_NOTES_REF;
        rc = rc_git_push_refs(g, refs, nrefs, err);
        if (rc != RC_ECONFLICT || attempt == RC_APPLY_PUBLISH_ATTEMPTS)
            break;
        if (log)
            rc_log_debug(log, "another writer pushed first (%s): merging again", err->msg);
        rc_err_clear(err);
        {
            /* let the other writer finish before trying again */
            struct timespec ts = {0, (long)attempt * 20000000L};
            nanosleep(&ts, NULL);
        }
    }
    if (rc < 0)
        goto done;
    for (size_t i = 0; i < n; i++) {
        const struct rc_apply_result *r = &results[i];

        if (log && r->outcome == RC_APPLY_DONE && r->why)
            rc_log_warn(log, "cluster '%s': %s", r->cluster, r->why);
        if (log && r->outcome == RC_APPLY_DONE)
            rc_log_info(log, "cluster '%s': applied %zu, deleted %zu", r->cluster, r->applied,
                        r->deleted);
        else if (log && r->outcome == RC_APPLY_FAILED)
            rc_log_kv(log, cl[i].job.failed_again ? RC_LOG_INFO : RC_LOG_WARN, NULL, 0,
                      "cluster '%s': %zu of %zu objects failed; nothing deleted; retried "
                      "next pass",
                      r->cluster, r->nfailures, r->nfailures + r->applied);
    }
done:
    rc_buf_release(&note);
    rc_buf_release(&merged);
    return rc;
}

int rc_apply_deploy_opts(int *incomplete, struct rc_git *g, const char *deploy,
                         const struct rd_cluster_conn *conns, size_t nconns, int resync,
                         const struct rc_kube_options *ko, const struct rc_log *log,
                         struct rc_arena *a, struct rc_err *err)
{
    return rc_apply_deploy_ex(incomplete, g, deploy, conns, nconns, resync, ko, NULL, log, a, err);
}

/* What the jobs reported, as the memory of the next apply; its file written when that
 * changed (a failure is a warning: the next process warns again of what this one did). */
static void remember(struct rc_apply_memory *mem, const struct cluster *cl, size_t n,
                     const struct rc_log *log)
{
    size_t total = 0, k = 0;
    uint64_t *v;
    struct rc_err err = RC_ERR_INIT;

    for (size_t i = 0; i < n; i++)
        total += cl[i].job.nreported;
    v = rc_xcalloc(total + 1, sizeof(*v));
    for (size_t i = 0; i < n; i++) {
        if (!cl[i].job.nreported)
            continue; /* and reported is NULL */
        memcpy(v + k, cl[i].job.reported, cl[i].job.nreported * sizeof(*v));
        k += cl[i].job.nreported;
    }
    total = rc_sort_u64_unique(v, total);
    if (total == mem->nprev && (!total || !memcmp(v, mem->prev, total * sizeof(*v)))) {
        free(v);
        return;
    }
    free(mem->prev);
    mem->prev = v;
    mem->nprev = total;
    if (mem->path && memory_write(mem, &err) < 0 && log)
        rc_log_warn(log, "%s (the next process warns again of what this pass did)", err.msg);
}

int rc_apply_deploy_ex(int *incomplete, struct rc_git *g, const char *deploy,
                       const struct rd_cluster_conn *conns, size_t nconns, int resync,
                       const struct rc_kube_options *ko, struct rc_apply_memory *mem,
                       const struct rc_log *log, struct rc_arena *a, struct rc_err *err)
{
    struct rc_kube_options defaults = RC_KUBE_OPTIONS_INIT;
    struct cluster *cl = rc_xcalloc(nconns + 1, sizeof(*cl));
    size_t nlive = 0;
    int rc = RC_OK;

    *incomplete = 0;
    for (size_t i = 0; i < nconns; i++) {
        struct cluster *c;
        if (!conns[i].live)
            continue;
        c = &cl[nlive++];
        c->job.conn = &conns[i];
        c->job.ko = ko ? ko : &defaults;
        c->job.log = log;
        c->job.mem = mem;
        c->job.plan = &c->plan;
        c->job.res.cluster = conns[i].name;
        if ((rc = prepare(c, g, deploy, resync, a, err)) < 0)
            goto done;
    }

    run_all(cl, nlive);
    for (size_t i = 0; i < nlive; i++) {
        struct job *j = &cl[i].job;
        if (j->res.outcome == RC_APPLY_FAILED)
            j->failed_again = reported_before(j, report_digest(j->conn->name, "failed", NULL));
    }
    if (mem)
        remember(mem, cl, nlive, log);
    rc = publish(cl, nlive, g, deploy, incomplete, log, a, err);
done:
    for (size_t i = 0; i < nlive; i++) {
        rc_apply_plan_release(&cl[i].plan);
        rc_arena_release(&cl[i].job.arena);
    }
    free(cl);
    return rc;
}

int rc_apply_deploy(int *incomplete, struct rc_git *g, const char *deploy,
                    const struct rd_cluster_conn *conns, size_t nconns, int resync,
                    const struct rc_log *log, struct rc_arena *a, struct rc_err *err)
{
    return rc_apply_deploy_opts(incomplete, g, deploy, conns, nconns, resync, NULL, log, a, err);
}
