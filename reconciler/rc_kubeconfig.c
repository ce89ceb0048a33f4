/*
 * rc_kubeconfig.c - kubeconfig and in-cluster config, token files and exec credential
 * plugins (see rc_kubeconfig.h). YAML is read with rd_yaml; nothing here talks to a server.
 */
#include "rc_kubeconfig.h"
#include "rc_buf.h"
#include "rc_mem.h"
#include "rd_cluster.h"
#include "rd_yaml.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "rc_banned.h"

extern char **environ;

#define KUBECONFIG_MAX ((size_t)4 << 20)
#define EXEC_OUTPUT_MAX ((size_t)1 << 20)
#define TOKEN_FILE_MAX ((size_t)64 << 10)
#define PEM_FILE_MAX ((size_t)1 << 20)
#define DEFAULT_SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

/* ==== small helpers ==== */

static void wipe_free(char *p, size_t n)
{
    if (!p)
        return;
    memset(p, 0, n);
    free(p);
}

static void wipe_free_str(char *p)
{
    if (p)
        wipe_free(p, strlen(p));
}

static const char *jstr(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

    return cJSON_IsString(v) && v->valuestring[0] ? v->valuestring : NULL;
}

static char *dup_or_null(const char *s)
{
    return s ? rc_xstrdup(s) : NULL;
}

static void trim(char *s)
{
    size_t n = strlen(s);
    size_t i = 0;

    while (n && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' ' || s[n - 1] == '\t'))
        s[--n] = '\0';
    while (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')
        i++;
    if (i)
        memmove(s, s + i, n - i + 1);
}

int rc_base64_decode(char **out, size_t *len, const char *text, struct rc_err *err)
{
    size_t n = strlen(text);
    char *buf = rc_xmalloc(n / 4 * 3 + 4);
    size_t o = 0;
    unsigned acc = 0;
    int bits = 0, pad = 0;

    for (const char *p = text; *p; p++) {
        int v;
        char c = *p;

        if (c == ' ' || c == '\n' || c == '\r' || c == '\t')
            continue;
        if (c == '=') {
            pad++;
            continue;
        }
        if (pad)
            goto bad;
        if (c >= 'A' && c <= 'Z')
            v = c - 'A';
        else if (c >= 'a' && c <= 'z')
            v = c - 'a' + 26;
        else if (c >= '0' && c <= '9')
            v = c - '0' + 52;
        else if (c == '+' || c == '-')
            v = 62;
        else if (c == '/' || c == '_')
            v = 63;
        else
            goto bad;
        acc = (acc << 6) | (unsigned)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            buf[o++] = (char)((acc >> bits) & 0xff);
        }
    }
    if (pad > 2 || bits >= 6)
        goto bad;
    buf[o] = '\0';
    *out = buf;
    *len = o;
    return RC_OK;
bad:
    wipe_free(buf, n / 4 * 3 + 4);
    *out = NULL;
    *len = 0;
    return rc_err_set(err, RC_EINVALID, "invalid base64 data");
}

/* dir of file + "/" + rel, unless rel is absolute. */
static char *resolve(const char *file, const char *rel)
{
    const char *slash;
    struct rc_buf b = RC_BUF_INIT;

    if (!rel)
        return NULL;
    if (rel[0] == '/' || !file)
        return rc_xstrdup(rel);
    slash = strrchr(file, '/');
    if (!slash)
        return rc_xstrdup(rel);
    rc_buf_add(&b, file, (size_t)(slash - file) + 1, NULL);
    rc_buf_puts(&b, rel, NULL);
    return rc_buf_detach(&b, NULL);
}

void rc_kubeconfig_free(struct rc_kubeconfig *kc)
{
    if (!kc)
        return;
    free(kc->file);
    free(kc->context);
    free(kc->user);
    free(kc->server);
    free(kc->ns);
    free(kc->tls_server_name);
    free(kc->ca_file);
    free(kc->ca_data);
    free(kc->ca_b64);
    free(kc->cert_file);
    free(kc->cert_data);
    free(kc->key_file);
    wipe_free(kc->key_data, kc->key_len);
    wipe_free_str(kc->token);
    free(kc->token_file);
    if (kc->exec) {
        free(kc->exec->command);
        for (size_t i = 0; i < kc->exec->nargs; i++)
            free(kc->exec->args[i]);
        free(kc->exec->args);
        for (size_t i = 0; i < kc->exec->nenv; i++)
            wipe_free_str(kc->exec->env[i]);
        free(kc->exec->env);
        free(kc->exec->api_version);
        free(kc->exec);
    }
    wipe_free_str(kc->cur_token);
    wipe_free(kc->exec_cert, kc->exec_cert_len);
    wipe_free(kc->exec_key, kc->exec_key_len);
    free(kc);
}

/* ==== loading ==== */

struct kfile {
    char *path;
    struct rd_docs *docs;
    const cJSON *root;
};

struct kfiles {
    struct kfile *v;
    size_t n, cap;
};

static void kfiles_release(struct kfiles *fs)
{
    for (size_t i = 0; i < fs->n; i++) {
        free(fs->v[i].path);
        rd_docs_free(fs->v[i].docs);
    }
    free(fs->v);
    fs->v = NULL;
    fs->n = fs->cap = 0;
}

/* Parse one file's text (path names it in messages and anchors relative paths). */
static int kfiles_add_text(struct kfiles *fs, const char *path, const char *text, size_t len,
                           struct rc_err *err)
{
    struct rd_yaml_limits lim = RD_YAML_LIMITS_INIT;
    struct rd_docs *docs = NULL;
    struct kfile *f;
    int error;

    lim.max_bytes = KUBECONFIG_MAX;
    lim.max_documents = 1;
    lim.max_nodes = 100000;
    /* the loader's messages give positions and problems, never scalar values */
    error = rd_yaml_load(&docs, path, text, len, &lim, NULL, err);
    if (error < 0)
        return error;
    if (rd_docs_count(docs) > 0 && !cJSON_IsObject(rd_docs_get(docs, 0))) {
        rd_docs_free(docs);
        return rc_err_set(err, RC_EINVALID, "kubeconfig '%s' is not a mapping", path);
    }
    fs->v = rc_xgrow(fs->v, &fs->cap, fs->n + 1, sizeof(*fs->v));
    f = &fs->v[fs->n++];
    f->path = rc_xstrdup(path);
    f->docs = docs;
    f->root = rd_docs_count(docs) > 0 ? rd_docs_get(docs, 0) : NULL;
    return RC_OK;
}

/* Load one file; a missing file is skipped when optional. */
static int kfiles_add(struct kfiles *fs, const char *path, int optional, struct rc_err *err)
{
    struct rc_buf text = RC_BUF_INIT;
    int error;

    if (optional && access(path, F_OK) != 0)
        return RC_OK;
    rc_buf_init(&text, KUBECONFIG_MAX);
    error = rc_buf_read_file(&text, path, err);
    if (error == RC_OK)
        error = kfiles_add_text(fs, path, text.ptr, text.len, err);
    if (text.len)
        memset(text.ptr, 0, text.len);
    rc_buf_release(&text);
    return error;
}

/* The first file's entry named `name` in list `list` ("clusters"), returning its inner
 * object (`inner`: "cluster") and the file that defined it. */
static const cJSON *find_named(const struct kfiles *fs, const char *list, const char *name,
                               const char *inner, const struct kfile **file)
{
    for (size_t i = 0; i < fs->n; i++) {
        const cJSON *arr = cJSON_GetObjectItemCaseSensitive(fs->v[i].root, list);
        const cJSON *e;

        cJSON_ArrayForEach(e, arr)
        {
            const char *n = jstr(e, "name");
            if (n && !strcmp(n, name)) {
                const cJSON *in = cJSON_GetObjectItemCaseSensitive(e, inner);
                *file = &fs->v[i];
                return cJSON_IsObject(in) ? in : NULL;
            }
        }
    }
    return NULL;
}

static int load_data_or_file(char **data, size_t *len, char **file, const cJSON *o,
                             const char *data_key, const char *file_key, const struct kfile *kf,
                             struct rc_err *err)
{
    const char *d = jstr(o, data_key);

    if (d) {
        if (rc_base64_decode(data, len, d, err) < 0)
            return rc_err_set(err, RC_EINVALID, "invalid base64 in '%s' of kubeconfig '%s'",
                              data_key, kf->path);
        return RC_OK;
    }
    *file = resolve(kf->path, jstr(o, file_key));
    return RC_OK;
}

static int parse_exec(struct rc_kubeconfig *kc, const cJSON *ex, const struct kfile *kf,
                      struct rc_err *err)
{
    struct rc_kube_exec *e;
    const char *cmd = jstr(ex, "command");
    const char *api = jstr(ex, "apiVersion");
    const cJSON *args = cJSON_GetObjectItemCaseSensitive(ex, "args");
    const cJSON *env = cJSON_GetObjectItemCaseSensitive(ex, "env");
    const cJSON *it;

    if (!cmd)
        return rc_err_set(err, RC_EINVALID, "exec plugin without a command in kubeconfig '%s'",
                          kf->path);
    if (!api || (strcmp(api, "client.authentication.k8s.io/v1") &&
                 strcmp(api, "client.authentication.k8s.io/v1beta1")))
        return rc_err_set(err, RC_EINVALID,
                          "exec plugin apiVersion '%s' is not supported in kubeconfig '%s'",
                          api ? api : "", kf->path);
    if (jstr(ex, "interactiveMode") && !strcmp(jstr(ex, "interactiveMode"), "Always"))
        return rc_err_set(err, RC_EINVALID,
                          "exec plugin '%s' needs a terminal (interactiveMode Always) in "
                          "kubeconfig '%s'",
                          cmd, kf->path);
    e = rc_xcalloc(1, sizeof(*e));
    kc->exec = e;
    e->command = strchr(cmd, '/') ? resolve(kf->path, cmd) : rc_xstrdup(cmd);
    e->api_version = rc_xstrdup(api);
    e->provide_cluster_info =
        cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(ex, "provideClusterInfo"));
    e->args = rc_xcalloc((size_t)cJSON_GetArraySize(args) + 1, sizeof(char *));
    cJSON_ArrayForEach(it, args)
    {
        if (!cJSON_IsString(it))
            return rc_err_set(err, RC_EINVALID, "exec plugin args must be strings in '%s'",
                              kf->path);
        e->args[e->nargs++] = rc_xstrdup(it->valuestring);
    }
    e->env = rc_xcalloc((size_t)cJSON_GetArraySize(env) + 1, sizeof(char *));
    cJSON_ArrayForEach(it, env)
    {
        const char *n = jstr(it, "name");
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(it, "value");
        struct rc_buf b = RC_BUF_INIT;

        if (!n || !cJSON_IsString(v) || strchr(n, '='))
            return rc_err_set(err, RC_EINVALID,
                              "exec plugin env needs name and value in kubeconfig '%s'", kf->path);
        rc_buf_printf(&b, NULL, "%s=%s", n, v->valuestring);
        e->env[e->nenv++] = rc_buf_detach(&b, NULL);
    }
    return RC_OK;
}

static int fill(struct rc_kubeconfig *kc, const struct kfiles *fs, const char *context,
                const struct rc_log *log, struct rc_err *err)
{
    const struct kfile *ctxf = NULL, *clf = NULL, *uf = NULL;
    const cJSON *ctx, *cl, *user = NULL;
    const char *cluster_name, *user_name, *server, *ns;
    static const char *const unsupported[] = {"username",  "password", "auth-provider", "as",
                                              "as-groups", "as-uid",   "as-user-extra"};

    if (!context) {
        for (size_t i = 0; i < fs->n && !context; i++)
            context = jstr(fs->v[i].root, "current-context");
        if (!context)
            return rc_err_set(err, RC_EINVALID, "no current-context in kubeconfig '%s'",
                              fs->v[0].path);
    }
    ctx = find_named(fs, "contexts", context, "context", &ctxf);
    if (!ctx)
        return rc_err_set(err, RC_ENOTFOUND, "context '%s' not found in kubeconfig '%s'", context,
                          fs->v[0].path);
    kc->context = rc_xstrdup(context);
    kc->file = rc_xstrdup(ctxf->path);
    cluster_name = jstr(ctx, "cluster");
    user_name = jstr(ctx, "user");
    kc->user = user_name ? rc_xstrdup(user_name) : NULL;
    ns = jstr(ctx, "namespace");
    kc->ns = rc_xstrdup(ns ? ns : "default");
    if (!cluster_name)
        return rc_err_set(err, RC_EINVALID, "context '%s' names no cluster in kubeconfig '%s'",
                          context, ctxf->path);
    cl = find_named(fs, "clusters", cluster_name, "cluster", &clf);
    if (!cl)
        return rc_err_set(err, RC_ENOTFOUND, "cluster '%s' not found in kubeconfig '%s'",
                          cluster_name, ctxf->path);
    server = jstr(cl, "server");
    if (!server)
        return rc_err_set(err, RC_EINVALID, "cluster '%s' has no server in kubeconfig '%s'",
                          cluster_name, clf->path);
    if (strncmp(server, "https://", 8) && strncmp(server, "http://", 7))
        return rc_err_set(err, RC_EINVALID,
                          "server of cluster '%s' is not an http(s) URL in kubeconfig '%s'",
                          cluster_name, clf->path);
    kc->server = rc_xstrdup(server);
    while (strlen(kc->server) > 8 && kc->server[strlen(kc->server) - 1] == '/')
        kc->server[strlen(kc->server) - 1] = '\0';
    if (jstr(cl, "proxy-url"))
        return rc_err_set(err, RC_EINVALID,
                          "proxy-url of cluster '%s' is not supported (kubeconfig '%s')",
                          cluster_name, clf->path);
    kc->tls_server_name = dup_or_null(jstr(cl, "tls-server-name"));
    if (load_data_or_file(&kc->ca_data, &kc->ca_len, &kc->ca_file, cl, "certificate-authority-data",
                          "certificate-authority", clf, err) < 0)
        return err ? err->code : RC_EINVALID;
    kc->ca_b64 = dup_or_null(jstr(cl, "certificate-authority-data"));
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(cl, "insecure-skip-tls-verify"))) {
        if (kc->ca_data || kc->ca_file)
            return rc_err_set(err, RC_EINVALID,
                              "cluster '%s' sets both a certificate authority and "
                              "insecure-skip-tls-verify (kubeconfig '%s')",
                              cluster_name, clf->path);
        kc->insecure = 1;
        if (log)
            rc_log_warn(log,
                        "tls verification is off for cluster '%s' "
                        "(insecure-skip-tls-verify in kubeconfig '%s')",
                        cluster_name, clf->path);
    }

    if (user_name) {
        user = find_named(fs, "users", user_name, "user", &uf);
        if (!user)
            return rc_err_set(err, RC_ENOTFOUND, "user '%s' not found in kubeconfig '%s'",
                              user_name, ctxf->path);
    }
    if (!user)
        return RC_OK;
    for (size_t i = 0; i < sizeof(unsupported) / sizeof(*unsupported); i++) {
        if (cJSON_GetObjectItemCaseSensitive(user, unsupported[i]))
            return rc_err_set(err, RC_EINVALID,
                              "'%s' of user '%s' is not supported (kubeconfig '%s')",
                              unsupported[i], user_name, uf->path);
    }
    if (load_data_or_file(&kc->cert_data, &kc->cert_len, &kc->cert_file, user,
                          "client-certificate-data", "client-certificate", uf, err) < 0 ||
        load_data_or_file(&kc->key_data, &kc->key_len, &kc->key_file, user, "client-key-data",
                          "client-key", uf, err) < 0)
        return err ? err->code : RC_EINVALID;
    if ((kc->cert_data || kc->cert_file) != (kc->key_data || kc->key_file))
        return rc_err_set(err, RC_EINVALID,
                          "user '%s' needs both a client certificate and a key (kubeconfig '%s')",
                          user_name, uf->path);
    kc->token = dup_or_null(jstr(user, "token"));
    kc->token_file = resolve(uf->path, jstr(user, "tokenFile"));
    if (cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(user, "exec")))
        return parse_exec(kc, cJSON_GetObjectItemCaseSensitive(user, "exec"), uf, err);
    return RC_OK;
}

/* Read a certificate or key file into memory now (regular files only, bounded): a clear
 * message beats a TLS error later, and the TLS library never opens a path itself. */
static int read_pem(char **data, size_t *len, const char *file, const char *what,
                    const char *context, struct rc_err *err)
{
    struct rc_buf b = RC_BUF_INIT;
    struct rc_err e = RC_ERR_INIT;

    if (!file || *data)
        return RC_OK;
    rc_buf_init(&b, PEM_FILE_MAX);
    if (rc_buf_read_file(&b, file, &e) < 0) {
        wipe_free(b.cap ? b.ptr : NULL, b.len);
        if (e.code == RC_ENOTFOUND)
            return rc_err_set(err, RC_ENOTFOUND, "%s file '%s' of context '%s' is not readable",
                              what, file, context);
        /* the file's own trouble is the kubeconfig's to fix; the system's (out of descriptors,
         * an I/O error) may pass */
        return rc_err_set(err, e.code == RC_ERROR ? RC_ERROR : RC_EINVALID,
                          "%s file of context '%s': %s", what, context, e.msg);
    }
    *data = rc_buf_detach(&b, len);
    return RC_OK;
}

static int read_files(struct rc_kubeconfig *kc, struct rc_err *err)
{
    int error;

    if ((error = read_pem(&kc->ca_data, &kc->ca_len, kc->ca_file, "certificate-authority",
                          kc->context, err)) < 0 ||
        (error = read_pem(&kc->cert_data, &kc->cert_len, kc->cert_file, "client-certificate",
                          kc->context, err)) < 0 ||
        (error = read_pem(&kc->key_data, &kc->key_len, kc->key_file, "client-key", kc->context,
                          err)) < 0)
        return error;
    return RC_OK;
}

static int finish(struct rc_kubeconfig **out, const struct kfiles *fs, const char *context,
                  int check, const struct rc_log *log, struct rc_err *err)
{
    struct rc_kubeconfig *kc = rc_xcalloc(1, sizeof(*kc));
    int error;

    kc->exec_timeout_ms = 30000;
    kc->exec_expiry = -1;
    error = fill(kc, fs, context, log, err);
    if (error == RC_OK && check)
        error = read_files(kc, err);
    if (error < 0) {
        rc_kubeconfig_free(kc);
        return error;
    }
    *out = kc;
    return RC_OK;
}

int rc_kubeconfig_parse(struct rc_kubeconfig **out, const char *path, const char *text, size_t len,
                        const char *context, const struct rc_log *log, struct rc_err *err)
{
    struct kfiles fs = {NULL, 0, 0};
    int error;

    *out = NULL;
    error = kfiles_add_text(&fs, path, text, len, err);
    if (error == RC_OK)
        error = finish(out, &fs, context, 0, log, err);
    kfiles_release(&fs);
    return error;
}

int rc_kubeconfig_load(struct rc_kubeconfig **out, const char *path, const char *context,
                       const struct rc_log *log, struct rc_err *err)
{
    struct kfiles fs = {NULL, 0, 0};
    const char *env = getenv("KUBECONFIG");
    int error = RC_OK;

    *out = NULL;
    if (path) {
        error = kfiles_add(&fs, path, 0, err);
    } else if (env && *env) {
        char *list = rc_xstrdup(env);
        char *p = list;

        while (p && error == RC_OK) {
            char *colon = strchr(p, ':');
            if (colon)
                *colon = '\0';
            if (*p)
                error = kfiles_add(&fs, p, 1, err);
            p = colon ? colon + 1 : NULL;
        }
        free(list);
        if (error == RC_OK && fs.n == 0)
            error = rc_err_set(err, RC_ENOTFOUND, "no kubeconfig file of $KUBECONFIG exists");
    } else {
        const char *home = getenv("HOME");
        struct rc_buf p = RC_BUF_INIT;

        rc_buf_printf(&p, NULL, "%s/.kube/config", home ? home : "");
        error = kfiles_add(&fs, p.ptr, 0, err);
        rc_buf_release(&p);
    }
    if (error == RC_OK)
        error = finish(out, &fs, context, 1, log, err);
    kfiles_release(&fs);
    return error;
}

int rc_kubeconfig_in_cluster_env(void)
{
    const char *host = getenv("KUBERNETES_SERVICE_HOST");
    const char *port = getenv("KUBERNETES_SERVICE_PORT");

    return host && *host && port && *port;
}

int rc_kubeconfig_in_cluster(struct rc_kubeconfig **out, const char *sa_dir, struct rc_err *err)
{
    const char *host = getenv("KUBERNETES_SERVICE_HOST");
    const char *port = getenv("KUBERNETES_SERVICE_PORT");
    struct rc_kubeconfig *kc;
    struct rc_buf b = RC_BUF_INIT;
    struct rc_err ignore = RC_ERR_INIT;

    *out = NULL;
    if (!rc_kubeconfig_in_cluster_env())
        return rc_err_set(err, RC_ENOTFOUND,
                          "not in a cluster: KUBERNETES_SERVICE_HOST and "
                          "KUBERNETES_SERVICE_PORT are not set");
    if (!sa_dir)
        sa_dir = DEFAULT_SA_DIR;
    kc = rc_xcalloc(1, sizeof(*kc));
    kc->exec_timeout_ms = 30000;
    kc->exec_expiry = -1;
    kc->file = rc_xstrdup("in-cluster");
    kc->context = rc_xstrdup("in-cluster");
    kc->user = rc_xstrdup("service account");
    if (strchr(host, ':'))
        rc_buf_printf(&b, NULL, "https://[%s]:%s", host, port);
    else
        rc_buf_printf(&b, NULL, "https://%s:%s", host, port);
    kc->server = rc_buf_detach(&b, NULL);
    rc_buf_printf(&b, NULL, "%s/token", sa_dir);
    kc->token_file = rc_buf_detach(&b, NULL);
    rc_buf_printf(&b, NULL, "%s/ca.crt", sa_dir);
    kc->ca_file = rc_buf_detach(&b, NULL);
    rc_buf_printf(&b, NULL, "%s/namespace", sa_dir);
    {
        struct rc_buf ns = RC_BUF_INIT;

        rc_buf_init(&ns, 1024);
        if (rc_buf_read_file(&ns, b.ptr, &ignore) == RC_OK) {
            trim(ns.ptr);
            ns.len = strlen(ns.ptr);
        }
        kc->ns = rc_xstrdup(ns.len ? ns.ptr : "default");
        rc_buf_release(&ns);
    }
    rc_buf_release(&b);
    if (access(kc->token_file, R_OK) != 0 ||
        read_pem(&kc->ca_data, &kc->ca_len, kc->ca_file, "certificate-authority", kc->context,
                 &ignore) < 0) {
        int error =
            rc_err_set(err, RC_ENOTFOUND, "service account files in '%s' are not readable", sa_dir);
        rc_kubeconfig_free(kc);
        return error;
    }
    *out = kc;
    return RC_OK;
}

/* ==== the operator's kubeconfigs, and what a Cluster selects among them ==== */

void rc_kubeconfig_sources_add_file(struct rc_kubeconfig_sources *s, const char *path)
{
    s->files = rc_xrealloc(s->files, (s->nfiles + 1) * sizeof(*s->files));
    s->files[s->nfiles++] = rc_xstrdup(path);
}

void rc_kubeconfig_sources_set_dir(struct rc_kubeconfig_sources *s, const char *dir)
{
    free(s->dir);
    s->dir = dir ? rc_xstrdup(dir) : NULL;
}

void rc_kubeconfig_sources_release(struct rc_kubeconfig_sources *s)
{
    for (size_t i = 0; i < s->nfiles; i++)
        free(s->files[i]);
    free(s->files);
    free(s->dir);
    free(s->sa_dir);
    s->files = NULL;
    s->nfiles = 0;
    s->dir = s->sa_dir = NULL;
}

static void add_list(struct rc_kubeconfig_sources *s, const char *list)
{
    char *copy = rc_xstrdup(list);
    char *p = copy;

    while (p) {
        char *colon = strchr(p, ':');
        if (colon)
            *colon = '\0';
        if (*p && access(p, F_OK) == 0)
            rc_kubeconfig_sources_add_file(s, p);
        p = colon ? colon + 1 : NULL;
    }
    free(copy);
}

int rc_kubeconfig_sources_env(struct rc_kubeconfig_sources *s, struct rc_err *err)
{
    const char *own = getenv("RIGHTPLACE_KUBECONFIG");
    const char *dir = getenv("RIGHTPLACE_KUBECONFIG_DIR");
    struct stat st;

    /* Only what the operator handed to rightplace: never $KUBECONFIG nor ~/.kube/config, whose
     * contexts a pushed Cluster could otherwise select (docs/security.md). */
    if (s->nfiles == 0 && own && *own)
        add_list(s, own);
    if (!s->dir && dir && *dir)
        rc_kubeconfig_sources_set_dir(s, dir);
    for (size_t i = 0; i < s->nfiles; i++) {
        if (stat(s->files[i], &st) < 0)
            return rc_err_set(err, RC_EINVALID, "kubeconfig '%s': %s", s->files[i],
                              strerror(errno));
        if (!S_ISREG(st.st_mode))
            return rc_err_set(err, RC_EINVALID, "kubeconfig '%s' is not a regular file",
                              s->files[i]);
    }
    if (s->dir && stat(s->dir, &st) < 0)
        return rc_err_set(err, RC_EINVALID, "kubeconfig directory '%s': %s", s->dir,
                          strerror(errno));
    if (s->dir && !S_ISDIR(st.st_mode))
        return rc_err_set(err, RC_EINVALID, "kubeconfig directory '%s' is not a directory", s->dir);
    return RC_OK;
}

/* path made absolute (against the working directory) with '.', '..' and '//' folded, as
 * text: the file system is not asked (the path may come from the source repository). */
static char *fold_path(const char *path)
{
    struct rc_buf in = RC_BUF_INIT, out = RC_BUF_INIT;
    char cwd[4096];
    char *p, *q;

    if (path[0] != '/') {
        if (!getcwd(cwd, sizeof(cwd)))
            return NULL;
        rc_buf_printf(&in, NULL, "%s/", cwd);
    }
    rc_buf_puts(&in, path, NULL);
    for (p = in.ptr; *p; p = q) {
        size_t n;

        while (*p == '/')
            p++;
        q = p;
        while (*q && *q != '/')
            q++;
        n = (size_t)(q - p);
        if (n == 0 || (n == 1 && p[0] == '.'))
            continue;
        if (n == 2 && p[0] == '.' && p[1] == '.') {
            char *slash = strrchr(out.ptr, '/');
            if (slash) {
                out.len = (size_t)(slash - out.ptr);
                out.ptr[out.len] = '\0';
            }
            continue;
        }
        rc_buf_putc(&out, '/', NULL);
        rc_buf_add(&out, p, n, NULL);
    }
    if (!out.len)
        rc_buf_putc(&out, '/', NULL);
    rc_buf_release(&in);
    return rc_buf_detach(&out, NULL);
}

/* Does `want` (folded) name the operator's path `have`, as given or as its real path? */
static int same_path(const char *want, const char *have)
{
    char *folded = fold_path(have);
    char *real = realpath(have, NULL);
    int same = (folded && !strcmp(want, folded)) || (real && !strcmp(want, real));

    free(folded);
    free(real);
    return same;
}

/* The operator's file that the older spec.kubeconfig.path names, or NULL. */
static char *allowed_path(const struct rc_kubeconfig_sources *src, const char *path)
{
    char *want = fold_path(path);
    char *found = NULL;

    if (!want)
        return NULL;
    for (size_t i = 0; i < src->nfiles && !found; i++) {
        if (same_path(want, src->files[i]))
            found = rc_xstrdup(src->files[i]);
    }
    if (!found && src->dir) {
        char *slash = strrchr(want, '/');

        *slash = '\0';
        if (rd_cluster_file_name_ok(slash + 1) && same_path(*want ? want : "/", src->dir)) {
            struct rc_buf b = RC_BUF_INIT;
            rc_buf_printf(&b, NULL, "%s/%s", src->dir, slash + 1);
            found = rc_buf_detach(&b, NULL);
        }
    }
    free(want);
    return found;
}

static int load_files(struct rc_kubeconfig **out, char *const *files, size_t n, const char *context,
                      const struct rc_log *log, struct rc_err *err)
{
    struct kfiles fs = {NULL, 0, 0};
    int error = RC_OK;

    *out = NULL;
    for (size_t i = 0; i < n && error == RC_OK; i++)
        error = kfiles_add(&fs, files[i], 0, err);
    if (error == RC_OK)
        error = finish(out, &fs, context, 1, log, err);
    kfiles_release(&fs);
    return error;
}

int rc_kubeconfig_select(struct rc_kubeconfig **out, const struct rc_kubeconfig_sources *src,
                         const struct rd_cluster_conn *conn, const struct rc_log *log,
                         struct rc_err *err)
{
    static const struct rc_kubeconfig_sources none = RC_KUBECONFIG_SOURCES_INIT;
    char *path = NULL;
    int error;

    *out = NULL;
    if (!src)
        src = &none;
    if (!conn->live)
        return rc_err_set(err, RC_EINVALID, "cluster '%s' is simulated: it has no kubeconfig",
                          conn->name ? conn->name : "");
    if (conn->in_cluster)
        return rc_kubeconfig_in_cluster(out, src->sa_dir, err);
    if (conn->file) {
        struct rc_buf b = RC_BUF_INIT;

        if (!rd_cluster_file_name_ok(conn->file))
            return rc_err_set(err, RC_EINVALID,
                              "spec.kubeconfig.name '%s' is not a plain "
                              "file name",
                              conn->file);
        if (!src->dir)
            return rc_err_set(err, RC_EINVALID,
                              "spec.kubeconfig.name '%s' needs the "
                              "operator's kubeconfig directory (--kubeconfig-dir or "
                              "$RIGHTPLACE_KUBECONFIG_DIR)",
                              conn->file);
        rc_buf_printf(&b, NULL, "%s/%s", src->dir, conn->file);
        path = rc_buf_detach(&b, NULL);
    } else if (conn->path) {
        path = allowed_path(src, conn->path);
        if (!path)
            return rc_err_set(err, RC_EINVALID,
                              "spec.kubeconfig.path '%s' is not one of the "
                              "operator's kubeconfigs (--kubeconfig, --kubeconfig-dir); select "
                              "spec.kubeconfig.context or .name instead",
                              conn->path);
    } else if (src->nfiles == 0) {
        return rc_err_set(err, RC_EINVALID,
                          "context '%s' is selected but the operator gave "
                          "no kubeconfig: give one with --kubeconfig FILE or "
                          "$RIGHTPLACE_KUBECONFIG ($KUBECONFIG and ~/.kube/config are not used)",
                          conn->context ? conn->context : "");
    }
    if (path)
        error = load_files(out, &path, 1, conn->context, log, err);
    else
        error = load_files(out, src->files, src->nfiles, conn->context, log, err);
    free(path);
    return error;
}

/* ==== credentials ==== */

static int read_token_file(char **out, const char *path, struct rc_err *err)
{
    struct rc_buf b = RC_BUF_INIT;
    struct rc_err e = RC_ERR_INIT;

    rc_buf_init(&b, TOKEN_FILE_MAX);
    if (rc_buf_read_file(&b, path, &e) < 0) {
        wipe_free(b.cap ? b.ptr : NULL, b.len);
        return rc_err_set(err, RC_ERROR, "cannot read token file '%s': %s", path, e.msg);
    }
    trim(b.ptr);
    if (!b.ptr[0]) {
        rc_buf_release(&b);
        return rc_err_set(err, RC_EINVALID, "token file '%s' is empty", path);
    }
    *out = rc_buf_detach(&b, NULL);
    return RC_OK;
}

/* Parse an RFC 3339 UTC time ("2026-12-02T10:00:00Z", fractions and offsets accepted). */
static int64_t parse_time(const char *s)
{
    struct tm tm;
    int off_sign = 0, oh = 0, om = 0;
    const char *p;

    memset(&tm, 0, sizeof(tm));
    if (sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
               &tm.tm_min, &tm.tm_sec) != 6)
        return -1;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    p = s + 19;
    if (*p == '.') {
        p++;
        while (*p >= '0' && *p <= '9')
            p++;
    }
    if (*p == '+' || *p == '-') {
        off_sign = *p == '+' ? 1 : -1;
        if (sscanf(p + 1, "%2d:%2d", &oh, &om) != 2)
            return -1;
    } else if (*p != 'Z' && *p != 'z') {
        return -1;
    }
    return (int64_t)timegm(&tm) - off_sign * (oh * 3600 + om * 60);
}

static char *exec_info(const struct rc_kubeconfig *kc)
{
    cJSON *root = cJSON_CreateObject();
    cJSON *spec;
    char *s;

    cJSON_AddStringToObject(root, "apiVersion", kc->exec->api_version);
    cJSON_AddStringToObject(root, "kind", "ExecCredential");
    spec = cJSON_AddObjectToObject(root, "spec");
    cJSON_AddBoolToObject(spec, "interactive", 0);
    if (kc->exec->provide_cluster_info) {
        cJSON *cl = cJSON_AddObjectToObject(spec, "cluster");
        cJSON_AddStringToObject(cl, "server", kc->server);
        if (kc->tls_server_name)
            cJSON_AddStringToObject(cl, "tls-server-name", kc->tls_server_name);
        if (kc->ca_b64)
            cJSON_AddStringToObject(cl, "certificate-authority-data", kc->ca_b64);
        if (kc->insecure)
            cJSON_AddBoolToObject(cl, "insecure-skip-tls-verify", 1);
    }
    s = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    return s;
}

static long now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Run the plugin; its stdout (bounded) into out. */
static int run_plugin(struct rc_buf *out, const struct rc_kubeconfig *kc, struct rc_err *err)
{
    const struct rc_kube_exec *e = kc->exec;
    char **argv = NULL, **envp = NULL;
    char *info = exec_info(kc);
    struct rc_buf infoenv = RC_BUF_INIT;
    size_t nenv = 0, n = 0;
    int pipefd[2] = {-1, -1};
    pid_t pid;
    int error = RC_OK, status = 0;
    long deadline;

    rc_buf_printf(&infoenv, NULL, "KUBERNETES_EXEC_INFO=%s", info);
    free(info);
    argv = rc_xcalloc(e->nargs + 2, sizeof(char *));
    argv[0] = e->command;
    for (size_t i = 0; i < e->nargs; i++)
        argv[i + 1] = e->args[i];
    while (environ && environ[nenv])
        nenv++;
    envp = rc_xcalloc(nenv + e->nenv + 2, sizeof(char *));
    for (size_t i = 0; i < nenv; i++) {
        const char *eq = strchr(environ[i], '=');
        size_t kl = eq ? (size_t)(eq - environ[i]) : strlen(environ[i]);
        int overridden = !strncmp(environ[i], "KUBERNETES_EXEC_INFO=", 21);

        for (size_t j = 0; j < e->nenv && !overridden; j++)
            overridden = !strncmp(e->env[j], environ[i], kl) && e->env[j][kl] == '=';
        if (!overridden)
            envp[n++] = environ[i];
    }
    for (size_t j = 0; j < e->nenv; j++)
        envp[n++] = e->env[j];
    envp[n++] = infoenv.ptr;
    envp[n] = NULL;

    if (pipe2(pipefd, O_CLOEXEC) < 0) {
        error = rc_err_set(err, RC_ERROR, "cannot create a pipe: %s", strerror(errno));
        goto done;
    }
    pid = fork();
    if (pid < 0) {
        error = rc_err_set(err, RC_ERROR, "cannot fork: %s", strerror(errno));
        goto done;
    }
    if (pid == 0) {
        int devnull = open("/dev/null", O_RDONLY);

        if (devnull >= 0)
            dup2(devnull, 0);
        dup2(pipefd[1], 1);
        close(pipefd[0]);
        close(pipefd[1]);
        execvpe(argv[0], argv, envp);
        _exit(127);
    }
    close(pipefd[1]);
    pipefd[1] = -1;
    deadline = now_ms() + kc->exec_timeout_ms;
    for (;;) {
        struct pollfd pfd = {pipefd[0], POLLIN, 0};
        long left = deadline - now_ms();
        char chunk[4096];
        ssize_t r;
        int pr;

        if (left <= 0) {
            kill(pid, SIGKILL);
            error = rc_err_set(err, RC_ERROR, "credential plugin '%s' timed out after %ld ms",
                               e->command, kc->exec_timeout_ms);
            break;
        }
        pr = poll(&pfd, 1, (int)(left > 1000 ? 1000 : left));
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr == 0)
            continue;
        r = read(pipefd[0], chunk, sizeof(chunk));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        if (rc_buf_add(out, chunk, (size_t)r, NULL) < 0) {
            kill(pid, SIGKILL);
            error = rc_err_set(err, RC_ERROR, "credential plugin '%s' wrote more than %zu bytes",
                               e->command, EXEC_OUTPUT_MAX);
            break;
        }
    }
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (error == RC_OK && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
        if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
            error =
                rc_err_set(err, RC_ERROR, "credential plugin '%s' could not be run", e->command);
        else
            error = rc_err_set(err, RC_ERROR, "credential plugin '%s' exited with status %d",
                               e->command, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    }
done:
    if (pipefd[0] >= 0)
        close(pipefd[0]);
    if (pipefd[1] >= 0)
        close(pipefd[1]);
    free(argv);
    free(envp);
    rc_buf_release(&infoenv);
    return error;
}

static int exec_credential(struct rc_kubeconfig *kc, int *cert_changed, struct rc_err *err)
{
    struct rc_buf out = RC_BUF_INIT;
    cJSON *root = NULL;
    const cJSON *st;
    const char *tok, *cert, *key, *exp, *api;
    int error;

    rc_buf_init(&out, EXEC_OUTPUT_MAX);
    kc->exec_runs++;
    error = run_plugin(&out, kc, err);
    if (error < 0)
        goto done;
    root = cJSON_ParseWithLength(out.ptr, out.len);
    api = jstr(root, "apiVersion");
    st = cJSON_GetObjectItemCaseSensitive(root, "status");
    if (!root || !cJSON_IsObject(st) || !jstr(root, "kind") ||
        strcmp(jstr(root, "kind"), "ExecCredential")) {
        error = rc_err_set(err, RC_EINVALID,
                           "credential plugin '%s' did not print an "
                           "ExecCredential",
                           kc->exec->command);
        goto done;
    }
    if (!api || strcmp(api, kc->exec->api_version)) {
        error = rc_err_set(err, RC_EINVALID,
                           "credential plugin '%s' answered apiVersion '%s', not '%s'",
                           kc->exec->command, api ? api : "", kc->exec->api_version);
        goto done;
    }
    tok = jstr(st, "token");
    cert = jstr(st, "clientCertificateData");
    key = jstr(st, "clientKeyData");
    exp = jstr(st, "expirationTimestamp");
    if (!tok && !(cert && key)) {
        error = rc_err_set(err, RC_EINVALID,
                           "credential plugin '%s' gave neither a token nor a client "
                           "certificate and key",
                           kc->exec->command);
        goto done;
    }
    kc->exec_expiry = 0;
    if (exp) {
        kc->exec_expiry = parse_time(exp);
        if (kc->exec_expiry < 0) {
            error = rc_err_set(err, RC_EINVALID,
                               "credential plugin '%s' gave an invalid expirationTimestamp",
                               kc->exec->command);
            goto done;
        }
    }
    wipe_free_str(kc->cur_token);
    kc->cur_token = dup_or_null(tok);
    if (cert && key) {
        wipe_free(kc->exec_cert, kc->exec_cert_len);
        wipe_free(kc->exec_key, kc->exec_key_len);
        kc->exec_cert_len = strlen(cert);
        kc->exec_cert = rc_xstrdup(cert);
        kc->exec_key_len = strlen(key);
        kc->exec_key = rc_xstrdup(key);
        if (cert_changed)
            *cert_changed = 1;
    }
done:
    if (error < 0)
        kc->exec_expiry = -1;
    if (root) {
        /* wipe secrets held by the parse tree */
        cJSON *s = cJSON_GetObjectItemCaseSensitive(root, "status");
        cJSON *it;
        cJSON_ArrayForEach(it, s)
        {
            if (cJSON_IsString(it))
                memset(it->valuestring, 0, strlen(it->valuestring));
        }
        cJSON_Delete(root);
    }
    if (out.len)
        memset(out.ptr, 0, out.len);
    rc_buf_release(&out);
    return error;
}

/* ==== Exec credentials kept by the process ====
 *
 * A credential a plugin printed is kept for the life of the process, not of one
 * rc_kubeconfig: every pass of loop mode opens its clusters again (observe, then apply), and
 * a plugin such as `aws eks get-token` takes a second of CPU, so a fleet of 100 such
 * clusters ran about 200 of them a pass. As client-go's exec authenticator does, the
 * credential is reused until it expires or a server refuses it (401), by any kubeconfig whose
 * plugin would be run the same way: the key is everything the plugin is given (command, args,
 * env, KUBERNETES_EXEC_INFO, which holds the cluster when provideClusterInfo is set; the
 * process's own environment does not change). A refresh after a 401 adopts a credential
 * another connection got since this one's (a newer generation) instead of running the plugin
 * again. Plugins run outside the lock, so clusters with different plugins get their
 * credentials in parallel. Entries are wiped when replaced or evicted. */

#define CRED_CACHE_MAX 1024

struct cred {
    char *key;
    size_t key_len;
    char *token; /* NULL: none */
    char *cert, *pkey;
    size_t cert_len, pkey_len;
    int64_t expiry; /* as rc_kubeconfig.exec_expiry: 0 none given */
    uint64_t gen;
    uint64_t used; /* the cache's clock when last used, for eviction */
    struct cred *next;
};

static pthread_mutex_t cred_mu = PTHREAD_MUTEX_INITIALIZER;
static struct cred *creds;
static size_t ncreds;
static uint64_t cred_clock, cred_gens;

static void cred_free(struct cred *c)
{
    wipe_free_str(c->token);
    wipe_free(c->cert, c->cert_len);
    wipe_free(c->pkey, c->pkey_len);
    wipe_free(c->key, c->key_len); /* the plugin's env may hold a secret */
    free(c);
}

/* What running kc's plugin depends on, as one byte string (each part length-prefixed). */
static char *cred_key(const struct rc_kubeconfig *kc, size_t *len)
{
    const struct rc_kube_exec *e = kc->exec;
    struct rc_buf b = RC_BUF_INIT;
    char *info = exec_info(kc);

#define PART(s) rc_buf_printf(&b, NULL, "%zu:%s", strlen(s), (s))
    PART(e->command);
    rc_buf_printf(&b, NULL, "a%zu", e->nargs);
    for (size_t i = 0; i < e->nargs; i++)
        PART(e->args[i]);
    rc_buf_printf(&b, NULL, "e%zu", e->nenv);
    for (size_t i = 0; i < e->nenv; i++)
        PART(e->env[i]);
    PART(info);
#undef PART
    free(info);
    *len = b.len;
    return rc_buf_detach(&b, NULL);
}

static struct cred *cred_find(const char *key, size_t len)
{
    for (struct cred *c = creds; c; c = c->next) {
        if (c->key_len == len && !memcmp(c->key, key, len))
            return c;
    }
    return NULL;
}

static int cred_expired(int64_t expiry)
{
    return expiry < 0 || (expiry > 0 && (int64_t)time(NULL) >= expiry);
}

/* Take the process's credential for key (kc's plugin, cred_key) into kc when there is one
 * that has not expired and, for a refresh, that is newer than kc's. 1 when taken. */
static int cred_adopt(struct rc_kubeconfig *kc, const char *key, size_t len, int refresh,
                      int *cert_changed)
{
    struct cred *c;
    int taken = 0;

    pthread_mutex_lock(&cred_mu);
    c = cred_find(key, len);
    if (c && !cred_expired(c->expiry) && (!refresh || c->gen != kc->exec_gen)) {
        wipe_free_str(kc->cur_token);
        kc->cur_token = dup_or_null(c->token);
        if (c->cert && c->pkey) {
            wipe_free(kc->exec_cert, kc->exec_cert_len);
            wipe_free(kc->exec_key, kc->exec_key_len);
            kc->exec_cert = rc_xstrdup(c->cert);
            kc->exec_cert_len = c->cert_len;
            kc->exec_key = rc_xstrdup(c->pkey);
            kc->exec_key_len = c->pkey_len;
            if (cert_changed)
                *cert_changed = 1;
        }
        kc->exec_expiry = c->expiry;
        kc->exec_gen = c->gen;
        c->used = ++cred_clock;
        taken = 1;
    }
    pthread_mutex_unlock(&cred_mu);
    return taken;
}

/* Keep the credential kc's plugin just printed, for the process, under *key (cred_key),
 * which a new entry takes (*key NULL then). */
static void cred_keep(struct rc_kubeconfig *kc, char **key, size_t len)
{
    struct cred *c;

    pthread_mutex_lock(&cred_mu);
    c = cred_find(*key, len);
    if (!c && ncreds >= CRED_CACHE_MAX) { /* evict the least recently used */
        struct cred **pp, **oldest = &creds;
        for (pp = &creds; *pp; pp = &(*pp)->next) {
            if ((*pp)->used < (*oldest)->used)
                oldest = pp;
        }
        c = *oldest;
        *oldest = c->next;
        cred_free(c);
        ncreds--;
        c = NULL;
    }
    if (!c) {
        c = rc_xcalloc(1, sizeof(*c));
        c->key = *key;
        c->key_len = len;
        *key = NULL;
        c->next = creds;
        creds = c;
        ncreds++;
    }
    wipe_free_str(c->token);
    wipe_free(c->cert, c->cert_len);
    wipe_free(c->pkey, c->pkey_len);
    c->token = dup_or_null(kc->cur_token);
    c->cert = c->pkey = NULL;
    c->cert_len = c->pkey_len = 0;
    if (kc->exec_cert && kc->exec_key) {
        c->cert = rc_xstrdup(kc->exec_cert);
        c->cert_len = kc->exec_cert_len;
        c->pkey = rc_xstrdup(kc->exec_key);
        c->pkey_len = kc->exec_key_len;
    }
    c->expiry = kc->exec_expiry;
    c->gen = kc->exec_gen = ++cred_gens;
    c->used = ++cred_clock;
    pthread_mutex_unlock(&cred_mu);
}

void rc_kubeconfig_exec_cache_clear(void)
{
    pthread_mutex_lock(&cred_mu);
    while (creds) {
        struct cred *c = creds;
        creds = c->next;
        cred_free(c);
    }
    ncreds = 0;
    pthread_mutex_unlock(&cred_mu);
}

size_t rc_kubeconfig_exec_cache_count(void)
{
    size_t n;

    pthread_mutex_lock(&cred_mu);
    n = ncreds;
    pthread_mutex_unlock(&cred_mu);
    return n;
}

int rc_kubeconfig_bearer(struct rc_kubeconfig *kc, int refresh, const char **token,
                         int *cert_changed, struct rc_err *err)
{
    int error;

    *token = NULL;
    if (cert_changed)
        *cert_changed = 0;
    if (kc->exec) {
        if (refresh || cred_expired(kc->exec_expiry)) {
            size_t len;
            char *key = cred_key(kc, &len);

            error = RC_OK;
            if (!cred_adopt(kc, key, len, refresh, cert_changed) &&
                (error = exec_credential(kc, cert_changed, err)) == RC_OK)
                cred_keep(kc, &key, len);
            wipe_free(key, len); /* the plugin's env may hold a secret */
            if (error < 0)
                return error;
        }
        *token = kc->cur_token;
        return RC_OK;
    }
    if (kc->token_file) {
        char *t = NULL;

        error = read_token_file(&t, kc->token_file, err);
        if (error < 0)
            return error;
        wipe_free_str(kc->cur_token);
        kc->cur_token = t;
        *token = kc->cur_token;
        return RC_OK;
    }
    *token = kc->token;
    return RC_OK;
}
