/*
 * th_kube.h - test helpers for the fake Kubernetes API server (tests/fakekube/fakekube.py):
 * certificates made with the openssl CLI, start/stop, fault files, token files, kubeconfig
 * files, and the recorded request log. Everything lives in temporary folders that
 * th_kube_rmtree removes.
 */
#ifndef TH_KUBE_H
#define TH_KUBE_H

#include <stddef.h>
#include <sys/types.h>

#include <cjson/cJSON.h>

#define TH_PATH 512
#define TH_DIR 200

/* Certificates, made once per test program: in dir, ca.crt/ca.key (the cluster CA),
 * server.crt/server.key (127.0.0.1, localhost, kube.test), client.crt/client.key (signed by
 * ca), and ca2.crt, server2.crt/server2.key (another CA: the "wrong certificate"). */
struct th_certs {
    char dir[TH_DIR];
};
int th_certs_make(struct th_certs *c);
/* dir/name into out (TH_PATH bytes). */
const char *th_certs_path(char *out, const struct th_certs *c, const char *name);

struct th_kube_opts {
    const char *state_json;  /* preloaded objects: {"objects": [...]}; NULL: none */
    const char *tokens;      /* valid bearer tokens, one a line; NULL: "test-token-1" */
    int wrong_ca;            /* serve server2.crt (signed by ca2) */
    int gate_ray;            /* ray.io discoverable only once its CRDs exist */
    int crd_establish_after; /* CRDs Established after this many GETs (0: at once) */
};

struct th_kube {
    char dir[TH_DIR]; /* this server's folder: port, log.jsonl, faults.json, tokens */
    pid_t pid;
    int port;
    char url[64]; /* https://127.0.0.1:<port> */
    const struct th_certs *certs;
};

/* Start a server; 0 on success (the port is known and the server listens). It gets SIGTERM
 * when the calling thread ends: start it on the thread that runs the test. */
int th_kube_start(struct th_kube *k, const struct th_certs *certs, const struct th_kube_opts *o);
/* Stop it (SIGTERM, wait) and remove its folder. */
void th_kube_stop(struct th_kube *k);
/* dir/name of this server into out (TH_PATH bytes). */
const char *th_kube_path(char *out, const struct th_kube *k, const char *name);
/* Replace the fault rules (JSON array, see fakekube.py); "" or "[]" clears them.
 * [{"wrong_cert": true}] makes new connections see server2.crt (signed by ca2). */
void th_kube_faults(struct th_kube *k, const char *json);
/* Replace the valid tokens (one a line). */
void th_kube_tokens(struct th_kube *k, const char *tokens);
/* Every request recorded so far, as a cJSON array (caller deletes); entries have method,
 * path, query (object), content_type, accept, body, auth, status. */
cJSON *th_kube_requests(const struct th_kube *k);
/* The last recorded request with this method whose path contains path_part; NULL: none.
 * Borrowed from reqs. */
const cJSON *th_kube_find(const cJSON *reqs, const char *method, const char *path_part);
size_t th_kube_count(const cJSON *reqs, const char *method, const char *path_part);
/* The GETs of exactly `path` that listed it; *watches (may be NULL): those that watched it
 * (query watch=...). */
size_t th_kube_lists(const cJSON *reqs, const char *path, size_t *watches);
/* The GETs of exactly `path` whose query has key=value (observe's probe: limit=1). */
size_t th_kube_gets_with(const cJSON *reqs, const char *path, const char *key, const char *value);
void th_kube_clear_requests(struct th_kube *k);

/* Write a kubeconfig to path with one cluster "fake" (server k->url, plus cluster_extra
 * lines, e.g. "    certificate-authority: /x/ca.crt\n"), one user "u" (user_lines, e.g.
 * "    token: abc\n") and one context "test" made current. */
void th_kube_kubeconfig(const char *path, const struct th_kube *k, const char *cluster_extra,
                        const char *user_lines);

/* Small file helpers. */
void th_kube_write(const char *path, const char *text);
char *th_kube_read(const char *path);               /* malloc'd, NULL when absent */
char *th_kube_base64(const char *data, size_t len); /* malloc'd */
char *th_kube_base64_file(const char *path);        /* malloc'd base64 of a file's bytes */
int th_kube_mkdtemp(char out[TH_DIR]);
void th_kube_rmtree(const char *dir);
/* Run argv (no shell), output discarded; returns the exit status or -1. */
int th_kube_run(const char *const *argv);

#endif
