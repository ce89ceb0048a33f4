/*
 * bench_rc_apply.c - rightplace's apply path (rc_apply_deploy_opts) against one API server.
 *
 *   bench_rc_apply KUBECONFIG N CONCURRENCY [NAMESPACE [delete]]
 *
 * Builds a deploy commit in a temporary bare repository holding a Namespace and N ConfigMaps
 * under clusters/bench/, applies it to the cluster of KUBECONFIG (its current context) and
 * prints the objects applied, the wall time and objects/s. CONCURRENCY 0: the client's
 * default (RC_KUBE_DEFAULT_CONCURRENCY, what `rightplace` uses without --apply-concurrency).
 * With "delete": then a second commit without the ConfigMaps is applied, which deletes them
 * (a GET and a DELETE with a uid precondition each), and that is timed too.
 * bench/apply.sh runs it against tests/fakekube/fakekube.py beside `kubectl apply
 * --server-side` and `kubectl delete` of the same objects.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "rc_apply.h"
#include "rc_git.h"
#include "rc_http.h"
#include "rc_kube.h"
#include "rc_kubeconfig.h"

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    struct rc_err err = RC_ERR_INIT;
    struct rc_kubeconfig_sources sources = RC_KUBECONFIG_SOURCES_INIT;
    struct rc_kube_options ko = RC_KUBE_OPTIONS_INIT;
    struct rc_arena a = RC_ARENA_INIT;
    struct rd_cluster_conn conn;
    struct rc_git *g = NULL;
    struct rc_git_file *files;
    char tmpl[] = "/tmp/rp-bench-apply-XXXXXX";
    char tree[41], commit[41], tree2[41], commit2[41];
    const char *ns = argc > 4 ? argv[4] : "bench";
    int del = argc > 5 && !strcmp(argv[5], "delete");
    long n, conc;
    int incomplete = 0, rc;
    double t0, t1;

    if (argc < 4) {
        fprintf(stderr, "usage: bench_rc_apply KUBECONFIG N CONCURRENCY [NAMESPACE [delete]]\n");
        return 2;
    }
    n = strtol(argv[2], NULL, 10);
    conc = strtol(argv[3], NULL, 10);
    if (n < 1 || conc < 0 || !mkdtemp(tmpl))
        return 2;
    if (rc_http_global_init(&err) < 0 || rc_git_global_init(&err) < 0)
        goto fail;
    {
        char cmd[256];
        snprintf(cmd, sizeof(cmd), "git init -q --bare %s", tmpl);
        if (system(cmd) != 0)
            return 2;
    }
    if (rc_git_open(&g, tmpl, NULL, &err) < 0)
        goto fail;
    files = calloc((size_t)n + 1, sizeof(*files));
    files[0].path = rc_arena_printf(&a, "clusters/bench/_cluster/namespace.%s.yaml", ns);
    files[0].data = rc_arena_printf(&a,
                                    "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: %s\n"
                                    "  labels:\n    app.kubernetes.io/managed-by: rightplace\n",
                                    ns);
    files[0].len = strlen(files[0].data);
    for (long i = 0; i < n; i++) {
        files[i + 1].path = rc_arena_printf(&a, "clusters/bench/%s/configmap.cm-%05ld.yaml", ns, i);
        files[i + 1].data =
            rc_arena_printf(&a,
                            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%05ld\n"
                            "  namespace: %s\n  labels:\n"
                            "    app.kubernetes.io/managed-by: rightplace\n"
                            "data:\n  index: \"%ld\"\n  payload: some configuration text\n",
                            i, ns, i);
        files[i + 1].len = strlen(files[i + 1].data);
    }
    if (rc_git_build_tree(tree, g, NULL, files, (size_t)n + 1, &err) < 0 ||
        rc_git_commit(commit, g, tree, NULL, "bench", 1700000000, &err) < 0)
        goto fail;
    /* the same directory without the ConfigMaps: applying it deletes them */
    if (del && (rc_git_build_tree(tree2, g, NULL, files, 1, &err) < 0 ||
                rc_git_commit(commit2, g, tree2, commit, "bench: prune", 1700000001, &err) < 0))
        goto fail;

    rc_kubeconfig_sources_add_file(&sources, argv[1]);
    ko.sources = &sources;
    if (conc > 0)
        ko.concurrency = (int)conc;
    conc = ko.concurrency;
    memset(&conn, 0, sizeof(conn));
    conn.name = "bench";
    conn.live = 1;
    conn.path = argv[1];
    t0 = now_s();
    rc = rc_apply_deploy_opts(&incomplete, g, commit, &conn, 1, 0, &ko, NULL, &a, &err);
    t1 = now_s();
    if (rc < 0 || incomplete) {
        fprintf(stderr, "bench_rc_apply: apply %s (rc %d)\n", incomplete ? "incomplete" : "failed",
                rc);
        goto fail;
    }
    {
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        printf("rightplace apply: %ld objects in %.3f s = %.0f objects/s (concurrency %ld; "
               "process CPU %.2f s user, %.2f s system)\n",
               n + 1, t1 - t0, (double)(n + 1) / (t1 - t0), conc,
               (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6,
               (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6);
    }
    if (del) {
        struct rc_arena a2 = RC_ARENA_INIT;
        t0 = now_s();
        rc = rc_apply_deploy_opts(&incomplete, g, commit2, &conn, 1, 0, &ko, NULL, &a2, &err);
        t1 = now_s();
        rc_arena_release(&a2);
        if (rc < 0 || incomplete) {
            fprintf(stderr, "bench_rc_apply: delete %s (rc %d)\n",
                    incomplete ? "incomplete" : "failed", rc);
            goto fail;
        }
        printf("rightplace delete: %ld objects in %.3f s = %.0f objects/s (concurrency %ld)\n", n,
               t1 - t0, (double)n / (t1 - t0), conc);
    }
    rc_git_free(g);
    {
        char cmd[256];
        snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpl);
        if (system(cmd) != 0)
            return 1;
    }
    free(files);
    rc_kubeconfig_sources_release(&sources);
    rc_arena_release(&a);
    return 0;
fail:
    fprintf(stderr, "bench_rc_apply: %s\n", err.msg);
    return 1;
}
