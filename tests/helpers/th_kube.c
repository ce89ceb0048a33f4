/*
 * th_kube.c - the fake Kubernetes API server harness (see th_kube.h).
 */
#include "th.h"
#include "th_kube.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "rc_mem.h"
#include "rc_banned.h"

void th_kube_write(const char *path, const char *text)
{
    char tmp[TH_PATH + 8];
    FILE *f;

    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    f = fopen(tmp, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
    assert_int_equal(rename(tmp, path), 0);
}

char *th_kube_read(const char *path)
{
    FILE *f = fopen(path, "rb");
    char *data = NULL;
    size_t len = 0, cap = 0, n;
    char chunk[4096];

    if (!f)
        return NULL;
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
        data = rc_xgrow(data, &cap, len + n + 1, 1);
        memcpy(data + len, chunk, n);
        len += n;
    }
    fclose(f);
    if (!data)
        data = rc_xstrdup("");
    data[len] = '\0';
    return data;
}

char *th_kube_base64(const char *data, size_t len)
{
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const unsigned char *p = (const unsigned char *)data;
    char *out = rc_xmalloc((len + 2) / 3 * 4 + 1);
    size_t o = 0;

    for (size_t i = 0; i < len; i += 3) {
        unsigned v = (unsigned)p[i] << 16;
        if (i + 1 < len)
            v |= (unsigned)p[i + 1] << 8;
        if (i + 2 < len)
            v |= p[i + 2];
        out[o++] = tab[(v >> 18) & 63];
        out[o++] = tab[(v >> 12) & 63];
        out[o++] = i + 1 < len ? tab[(v >> 6) & 63] : '=';
        out[o++] = i + 2 < len ? tab[v & 63] : '=';
    }
    out[o] = '\0';
    return out;
}

char *th_kube_base64_file(const char *path)
{
    char *data = th_kube_read(path);
    char *b;

    assert_non_null(data);
    b = th_kube_base64(data, strlen(data));
    free(data);
    return b;
}

int th_kube_mkdtemp(char out[TH_DIR])
{
    const char *tmp = getenv("TMPDIR");

    snprintf(out, TH_DIR, "%s/rp-test-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    return mkdtemp(out) ? 0 : -1;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

void th_kube_rmtree(const char *dir)
{
    if (dir && *dir)
        nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

int th_kube_run(const char *const *argv)
{
    pid_t pid = fork();
    int status;

    if (pid < 0)
        return -1;
    if (pid == 0) {
        int fd = open("/dev/null", O_RDWR);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        execvp(argv[0], (char *const *)argv);
        _exit(127);
    }
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR)
            return -1;
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

const char *th_certs_path(char *out, const struct th_certs *c, const char *name)
{
    snprintf(out, TH_PATH, "%s/%s", c->dir, name);
    return out;
}

/* A key and a certificate signed by ca (or self-signed when ca is NULL). */
static int make_cert(const struct th_certs *c, const char *name, const char *subj, const char *ca,
                     const char *ext)
{
    char key[TH_PATH], crt[TH_PATH], csr[TH_PATH], extf[TH_PATH], cacrt[TH_PATH], cakey[TH_PATH],
        serial[TH_PATH], tmp[64];

    snprintf(tmp, sizeof(tmp), "%s.key", name);
    th_certs_path(key, c, tmp);
    snprintf(tmp, sizeof(tmp), "%s.crt", name);
    th_certs_path(crt, c, tmp);
    snprintf(tmp, sizeof(tmp), "%s.csr", name);
    th_certs_path(csr, c, tmp);
    snprintf(tmp, sizeof(tmp), "%s.ext", name);
    th_certs_path(extf, c, tmp);
    if (!ca) {
        const char *argv[] = {"openssl",
                              "req",
                              "-x509",
                              "-newkey",
                              "ec",
                              "-pkeyopt",
                              "ec_paramgen_curve:prime256v1",
                              "-nodes",
                              "-keyout",
                              key,
                              "-out",
                              crt,
                              "-subj",
                              subj,
                              "-days",
                              "3",
                              NULL};
        return th_kube_run(argv);
    } else {
        const char *req[] = {
            "openssl", "req",     "-newkey", "ec",   "-pkeyopt", "ec_paramgen_curve:prime256v1",
            "-nodes",  "-keyout", key,       "-out", csr,        "-subj",
            subj,      NULL};
        const char *sign[] = {"openssl", "x509",      "-req",     "-in",
                              csr,       "-CA",       cacrt,      "-CAkey",
                              cakey,     "-CAserial", serial,     "-CAcreateserial",
                              "-days",   "3",         "-extfile", extf,
                              "-out",    crt,         NULL};
        snprintf(tmp, sizeof(tmp), "%s.crt", ca);
        th_certs_path(cacrt, c, tmp);
        snprintf(tmp, sizeof(tmp), "%s.key", ca);
        th_certs_path(cakey, c, tmp);
        snprintf(tmp, sizeof(tmp), "%s.srl", ca);
        th_certs_path(serial, c, tmp);
        th_kube_write(extf, ext);
        if (th_kube_run(req) != 0)
            return -1;
        return th_kube_run(sign);
    }
}

int th_certs_make(struct th_certs *c)
{
    static const char server_ext[] = "subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kube.test\n"
                                     "extendedKeyUsage=serverAuth\n";
    static const char client_ext[] = "extendedKeyUsage=clientAuth\n";

    if (th_kube_mkdtemp(c->dir) < 0)
        return -1;
    if (make_cert(c, "ca", "/CN=fake-kube-ca", NULL, NULL) != 0 ||
        make_cert(c, "server", "/CN=127.0.0.1", "ca", server_ext) != 0 ||
        make_cert(c, "client", "/O=system:masters/CN=rightplace", "ca", client_ext) != 0 ||
        make_cert(c, "ca2", "/CN=other-ca", NULL, NULL) != 0 ||
        make_cert(c, "server2", "/CN=127.0.0.1", "ca2", server_ext) != 0)
        return -1;
    return 0;
}

const char *th_kube_path(char *out, const struct th_kube *k, const char *name)
{
    snprintf(out, TH_PATH, "%s/%s", k->dir, name);
    return out;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* $RP_PYTHON, else the system interpreter (a version-manager shim can take seconds to
 * start), else python3 from PATH. The server needs only the standard library. */
static const char *python(void)
{
    const char *env = getenv("RP_PYTHON");

    if (env && *env)
        return env;
    if (access("/usr/bin/python3", X_OK) == 0)
        return "/usr/bin/python3";
    return "python3";
}

int th_kube_start(struct th_kube *k, const struct th_certs *certs, const struct th_kube_opts *o)
{
    static const struct th_kube_opts none = {NULL, NULL, 0, 0, 0};
    char script[TH_PATH], crt[TH_PATH], key[TH_PATH], ca[TH_PATH], tokens[TH_PATH], portf[TH_PATH],
        log[TH_PATH], faults[TH_PATH], state[TH_PATH], after[16], wcrt[TH_PATH], wkey[TH_PATH];
    const char *argv[32];
    int n = 0;
    pid_t parent;

    if (!o)
        o = &none;
    memset(k, 0, sizeof(*k));
    k->certs = certs;
    if (th_kube_mkdtemp(k->dir) < 0)
        return -1;
    snprintf(script, sizeof(script), "%s/tests/fakekube/fakekube.py", RP_SOURCE_DIR);
    th_certs_path(crt, certs, o->wrong_ca ? "server2.crt" : "server.crt");
    th_certs_path(key, certs, o->wrong_ca ? "server2.key" : "server.key");
    th_certs_path(ca, certs, "ca.crt");
    th_kube_path(tokens, k, "tokens");
    th_kube_path(portf, k, "port");
    th_kube_path(log, k, "log.jsonl");
    th_kube_path(faults, k, "faults.json");
    th_kube_write(tokens, o->tokens ? o->tokens : "test-token-1\n");
    th_kube_write(faults, "[]");
    th_kube_write(log, "");
    snprintf(after, sizeof(after), "%d", o->crd_establish_after);
    argv[n++] = python();
    argv[n++] = script;
    argv[n++] = "--cert";
    argv[n++] = crt;
    argv[n++] = "--key";
    argv[n++] = key;
    argv[n++] = "--client-ca";
    argv[n++] = ca;
    argv[n++] = "--wrong-cert";
    argv[n++] = th_certs_path(wcrt, certs, "server2.crt");
    argv[n++] = "--wrong-key";
    argv[n++] = th_certs_path(wkey, certs, "server2.key");
    argv[n++] = "--tokens-file";
    argv[n++] = tokens;
    argv[n++] = "--port-file";
    argv[n++] = portf;
    argv[n++] = "--log";
    argv[n++] = log;
    argv[n++] = "--faults-file";
    argv[n++] = faults;
    argv[n++] = "--crd-establish-after";
    argv[n++] = after;
    if (o->gate_ray)
        argv[n++] = "--gate-ray";
    if (o->state_json) {
        th_kube_path(state, k, "state.json");
        th_kube_write(state, o->state_json);
        argv[n++] = "--state";
        argv[n++] = state;
    }
    argv[n] = NULL;

    parent = getpid();
    k->pid = fork();
    if (k->pid < 0)
        return -1;
    if (k->pid == 0) {
        /* the server goes with the test: a test that crashes (an abort, a sanitizer report)
         * runs no teardown, and a server left behind holds ctest's output pipe open until
         * ctest's timeout */
        if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 || getppid() != parent)
            _exit(127);
        execvp(argv[0], (char *const *)argv);
        _exit(127);
    }
    for (int i = 0; i < 1000; i++) { /* up to 20 s on a loaded machine */
        char *text = th_kube_read(portf);
        int status;

        if (text) {
            k->port = (int)strtol(text, NULL, 10);
            free(text);
            snprintf(k->url, sizeof(k->url), "https://127.0.0.1:%d", k->port);
            return 0;
        }
        if (waitpid(k->pid, &status, WNOHANG) == k->pid) {
            k->pid = 0;
            return -1;
        }
        sleep_ms(20);
    }
    return -1;
}

void th_kube_stop(struct th_kube *k)
{
    if (k->pid > 0) {
        int status;

        kill(k->pid, SIGTERM);
        while (waitpid(k->pid, &status, 0) < 0 && errno == EINTR)
            ;
        k->pid = 0;
    }
    th_kube_rmtree(k->dir);
    k->dir[0] = '\0';
}

void th_kube_faults(struct th_kube *k, const char *json)
{
    char p[TH_PATH];

    th_kube_write(th_kube_path(p, k, "faults.json"), json && *json ? json : "[]");
}

void th_kube_tokens(struct th_kube *k, const char *tokens)
{
    char p[TH_PATH];

    th_kube_write(th_kube_path(p, k, "tokens"), tokens);
}

cJSON *th_kube_requests(const struct th_kube *k)
{
    char p[TH_PATH];
    char *text = th_kube_read(th_kube_path(p, k, "log.jsonl"));
    cJSON *arr = cJSON_CreateArray();
    char *line, *next;

    assert_non_null(text);
    for (line = text; *line; line = next) {
        cJSON *item;

        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        else
            next = line + strlen(line);
        if (!*line)
            continue;
        item = cJSON_Parse(line);
        assert_non_null(item);
        cJSON_AddItemToArray(arr, item);
    }
    free(text);
    return arr;
}

static int req_matches(const cJSON *r, const char *method, const char *path_part)
{
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(r, "method");
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(r, "path");

    if (method && (!cJSON_IsString(m) || strcmp(m->valuestring, method)))
        return 0;
    if (path_part && (!cJSON_IsString(p) || !strstr(p->valuestring, path_part)))
        return 0;
    return 1;
}

const cJSON *th_kube_find(const cJSON *reqs, const char *method, const char *path_part)
{
    const cJSON *found = NULL, *r;

    cJSON_ArrayForEach(r, reqs)
    {
        if (req_matches(r, method, path_part))
            found = r;
    }
    return found;
}

size_t th_kube_count(const cJSON *reqs, const char *method, const char *path_part)
{
    const cJSON *r;
    size_t n = 0;

    cJSON_ArrayForEach(r, reqs)
    {
        if (req_matches(r, method, path_part))
            n++;
    }
    return n;
}

size_t th_kube_lists(const cJSON *reqs, const char *path, size_t *watches)
{
    const cJSON *r;
    size_t n = 0;

    if (watches)
        *watches = 0;
    cJSON_ArrayForEach(r, reqs)
    {
        const cJSON *p = cJSON_GetObjectItemCaseSensitive(r, "path");
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(r, "method");
        const cJSON *q = cJSON_GetObjectItemCaseSensitive(r, "query");

        if (!cJSON_IsString(p) || strcmp(p->valuestring, path) || !cJSON_IsString(m) ||
            strcmp(m->valuestring, "GET"))
            continue;
        if (cJSON_GetObjectItemCaseSensitive(q, "watch")) {
            if (watches)
                (*watches)++;
        } else {
            n++;
        }
    }
    return n;
}

size_t th_kube_gets_with(const cJSON *reqs, const char *path, const char *key, const char *value)
{
    const cJSON *r;
    size_t n = 0;

    cJSON_ArrayForEach(r, reqs)
    {
        const cJSON *p = cJSON_GetObjectItemCaseSensitive(r, "path");
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(r, "method");
        const cJSON *v =
            cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(r, "query"), key);

        if (cJSON_IsString(p) && !strcmp(p->valuestring, path) && cJSON_IsString(m) &&
            !strcmp(m->valuestring, "GET") && cJSON_IsString(v) && !strcmp(v->valuestring, value))
            n++;
    }
    return n;
}

void th_kube_clear_requests(struct th_kube *k)
{
    char p[TH_PATH];
    FILE *f = fopen(th_kube_path(p, k, "log.jsonl"), "w");

    if (f)
        fclose(f);
}

void th_kube_kubeconfig(const char *path, const struct th_kube *k, const char *cluster_extra,
                        const char *user_lines)
{
    size_t n =
        1024 + strlen(cluster_extra ? cluster_extra : "") + strlen(user_lines ? user_lines : "");
    char *text = rc_xmalloc(n);

    snprintf(text, n,
             "apiVersion: v1\n"
             "kind: Config\n"
             "current-context: test\n"
             "clusters:\n"
             "- name: fake\n"
             "  cluster:\n"
             "    server: %s\n"
             "%s"
             "contexts:\n"
             "- name: test\n"
             "  context:\n"
             "    cluster: fake\n"
             "    user: u\n"
             "users:\n"
             "- name: u\n"
             "  user:\n"
             "%s",
             k->url, cluster_extra ? cluster_extra : "",
             user_lines && *user_lines ? user_lines : "    {}\n");
    th_kube_write(path, text);
    free(text);
}
