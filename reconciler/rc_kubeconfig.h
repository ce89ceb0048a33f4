/*
 * rc_kubeconfig.h - kubeconfig files read the way kubectl reads them, in-cluster service
 * account config, and the credentials they lead to (token, token file, exec plugin).
 *
 * Files: an explicit path, or the ':'-separated list in $KUBECONFIG (missing files skipped,
 * as kubectl does), or ~/.kube/config. With several files the first one to define a value
 * wins: current-context, and each context, cluster and user by name. Relative paths
 * (certificate-authority, client-certificate, client-key, tokenFile, an exec command with a
 * '/') are resolved against the folder of the file that defined the entry.
 *
 * Supported: server, certificate-authority(-data), insecure-skip-tls-verify (only when set;
 * logged as a warning), tls-server-name; client-certificate(-data), client-key(-data), token,
 * tokenFile (re-read for every request: it rotates), exec plugins
 * (client.authentication.k8s.io/v1 and v1beta1). Not supported (an error, never a silent
 * fallback): username/password, auth-provider, impersonation, proxy-url.
 *
 * Trust (docs/security.md): every kubeconfig read here is one the operator gave (flags,
 * environment, the pod's service account). A Cluster object of the source repository only
 * selects among them (rc_kubeconfig_select); nothing the repository holds is read as a
 * kubeconfig, so a pusher can choose no program, credential or host file. Files are read only
 * when regular (a FIFO or device is an error, never a wait) and bounded in size; certificate
 * and key files are read into memory here, so the TLS library opens no path itself.
 *
 * Exec plugins are the one thing rightplace runs: fork/execvp, no shell, a timeout, stdout
 * read up to 1 MiB, KUBERNETES_EXEC_INFO set. They come only from the operator's kubeconfigs:
 * giving a kubeconfig with an exec user is the operator's choice to run that program.
 *
 * Credentials (tokens, keys, plugin output) never appear in logs or error messages; messages
 * name files and plugin commands only.
 */
#ifndef RC_KUBECONFIG_H
#define RC_KUBECONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "rc_err.h"
#include "rc_log.h"

struct rd_cluster_conn;

struct rc_kube_exec {
    char *command; /* resolved as described above */
    char **args;
    size_t nargs;
    char **env; /* "NAME=value" */
    size_t nenv;
    char *api_version;        /* client.authentication.k8s.io/v1 | v1beta1 */
    int provide_cluster_info; /* pass server & CA in KUBERNETES_EXEC_INFO */
};

struct rc_kubeconfig {
    char *file;    /* the file the context came from ("in-cluster" for in-cluster) */
    char *context; /* context name used */
    char *user;    /* the context's user name (NULL: none); named in 401 messages */
    char *server;  /* https://host:port, no trailing '/' */
    char *ns;      /* the context's namespace, "default" when unset */
    char *tls_server_name;
    int insecure;
    char *ca_file;
    char *ca_data; /* decoded PEM */
    size_t ca_len;
    char *ca_b64; /* as written in the file, for exec cluster info */
    char *cert_file;
    char *cert_data; /* decoded PEM */
    size_t cert_len;
    char *key_file;
    char *key_data; /* decoded PEM */
    size_t key_len;
    char *token;
    char *token_file;
    struct rc_kube_exec *exec; /* NULL: none */
    long exec_timeout_ms;      /* default 30 s */

    /* credential state, managed by rc_kubeconfig_bearer */
    char *cur_token; /* the last token handed out */
    char *exec_cert; /* from the plugin (PEM) */
    size_t exec_cert_len;
    char *exec_key;
    size_t exec_key_len;
    int64_t exec_expiry; /* unix seconds; 0: none given; -1: no cached credential */
    uint64_t exec_gen;   /* the generation of the process's credential it holds */
    unsigned exec_runs;  /* how many times the plugin ran (for tests and logs) */
};

/*
 * Load a context. path: a kubeconfig file, or NULL for $KUBECONFIG / ~/.kube/config.
 * context: a context name, or NULL for current-context. log may be NULL. Errors name the
 * file (and line:col from the YAML loader). Free with rc_kubeconfig_free.
 */
int rc_kubeconfig_load(struct rc_kubeconfig **out, const char *path, const char *context,
                       const struct rc_log *log, struct rc_err *err);

/* The same for one kubeconfig given as text; path names it in messages and anchors relative
 * paths. Files it names are not checked (for tests and fuzzing). */
int rc_kubeconfig_parse(struct rc_kubeconfig **out, const char *path, const char *text, size_t len,
                        const char *context, const struct rc_log *log, struct rc_err *err);

/* In-cluster config: https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT, token file
 * and CA from sa_dir (NULL: /var/run/secrets/kubernetes.io/serviceaccount), namespace from
 * its namespace file. RC_ENOTFOUND when the environment variables are not set. */
int rc_kubeconfig_in_cluster(struct rc_kubeconfig **out, const char *sa_dir, struct rc_err *err);
/* Whether the in-cluster environment variables are set. */
int rc_kubeconfig_in_cluster_env(void);

void rc_kubeconfig_free(struct rc_kubeconfig *kc);

/*
 * The kubeconfigs the operator gave: the only ones a Cluster object can select. Filled by
 * the command line from its flags and environment (rc_kubeconfig_sources_env), never from the
 * source repository. Owns its strings; release with rc_kubeconfig_sources_release.
 */
struct rc_kubeconfig_sources {
    char **files; /* merged as kubectl merges $KUBECONFIG: the first definition wins */
    size_t nfiles;
    char *dir;    /* kubeconfig directory: one kubeconfig per file, selected by file name */
    char *sa_dir; /* in-cluster service account files; NULL: the default (tests set it) */
};
#define RC_KUBECONFIG_SOURCES_INIT                                                                 \
    {                                                                                              \
        NULL, 0, NULL, NULL                                                                        \
    }

void rc_kubeconfig_sources_add_file(struct rc_kubeconfig_sources *s, const char *path);
void rc_kubeconfig_sources_set_dir(struct rc_kubeconfig_sources *s, const char *dir);
void rc_kubeconfig_sources_release(struct rc_kubeconfig_sources *s);

/*
 * Complete s from the environment where the flags gave nothing: no files given:
 * $RIGHTPLACE_KUBECONFIG (a ':'-separated list; files that do not exist are skipped, as
 * kubectl does); no directory given: $RIGHTPLACE_KUBECONFIG_DIR. $KUBECONFIG and
 * ~/.kube/config are never used: only kubeconfigs handed to rightplace are selectable. Then
 * every file and the directory must exist and be of the right type: RC_EINVALID naming the
 * first that is not.
 */
int rc_kubeconfig_sources_env(struct rc_kubeconfig_sources *s, struct rc_err *err);

/*
 * Load what a Cluster object selects (conn, from rd_cluster_parse) from the operator's
 * kubeconfigs src (NULL: none given):
 * - {context: C}: context C of src->files, merged;
 * - {name: F[, context: C]}: the file F of src->dir (F a plain file name);
 * - {inCluster: true}: the pod's service account (rc_kubeconfig_in_cluster, src->sa_dir);
 * - {path: P[, context: C]} (older form): only when P names one of src->files, or a file of
 *   src->dir; P is compared as text (made absolute against the working directory, '.' and
 *   '..' folded) with the operator's paths and their real paths, and never opened itself.
 * RC_EINVALID with a message saying what to do when the selection is not allowed or cannot
 * be met; loading errors as rc_kubeconfig_load.
 */
int rc_kubeconfig_select(struct rc_kubeconfig **out, const struct rc_kubeconfig_sources *src,
                         const struct rd_cluster_conn *conn, const struct rc_log *log,
                         struct rc_err *err);

/*
 * The bearer token to send now (*token: NULL when the config has none; borrowed, valid until
 * the next call or rc_kubeconfig_free). tokenFile is re-read on every call; an exec plugin
 * runs when there is no cached credential, when it has expired, or when refresh is set (after
 * a 401), unless the process keeps one that serves (below). *cert_changed (may be NULL) is set to 1
 * when the plugin returned a new client certificate (exec_cert/exec_key), which the caller hands to
 * its HTTP connection.
 */
int rc_kubeconfig_bearer(struct rc_kubeconfig *kc, int refresh, const char **token,
                         int *cert_changed, struct rc_err *err);

/* Exec credentials are kept by the process, not by one rc_kubeconfig: a kubeconfig whose
 * plugin would be run the same way (command, args, env, KUBERNETES_EXEC_INFO) takes the one
 * the last run printed while it has not expired, and a refresh after a 401 takes one that
 * another connection got since (so loop mode runs a plugin once per credential lifetime, not
 * once per pass and connection). At most 1,024 are kept, the least recently used evicted.
 * Clearing wipes them (tests); the count is for tests. */
void rc_kubeconfig_exec_cache_clear(void);
size_t rc_kubeconfig_exec_cache_count(void);

/* Decode base64 (whitespace ignored) into a malloc'd NUL-terminated buffer. */
int rc_base64_decode(char **out, size_t *len, const char *text, struct rc_err *err);

#endif
