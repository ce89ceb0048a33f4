/*
 * bench_rd_source.c - how fast the Load step reads a source tree: N RayJob files shaped
 * like skyray's rayjob-train (RayJob + ConfigMap each), one Cluster file, one policy file.
 * Prints files, objects, wall time and objects per second. Usage: bench_rd_source [N]
 *
 *   find src -name '*.yaml' | bench_rd_source -
 *
 * loads the files named on standard input instead (one a line, read into memory first), on
 * one thread, the way a pass without a cache does: put it beside bench_yaml_scan on the same
 * list to read the Load step against a bare libyaml scan.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rc_arena.h"
#include "rc_mem.h"
#include "rd_source.h"

static const char job_fmt[] =
    "apiVersion: ray.io/v1\n"
    "kind: RayJob\n"
    "metadata: {name: job-%d, namespace: ns-%d, labels: {app.kubernetes.io/instance: job-%d}}\n"
    "spec:\n"
    "  entrypoint: python /home/ray/samples/train_code.py\n"
    "  rayClusterSpec:\n"
    "    headGroupSpec:\n"
    "      rayStartParams: {dashboard-host: '0.0.0.0'}\n"
    "      template:\n"
    "        spec:\n"
    "          containers:\n"
    "          - name: ray-head\n"
    "            image: rayproject/ray-ml:2.2.0-gpu\n"
    "            resources:\n"
    "              limits: {cpu: \"4\", memory: \"24G\"}\n"
    "              requests: {cpu: \"4\", memory: \"12G\"}\n"
    "    workerGroupSpecs:\n"
    "    - replicas: 2\n"
    "      minReplicas: 1\n"
    "      maxReplicas: 300\n"
    "      groupName: small-group\n"
    "      template:\n"
    "        spec:\n"
    "          tolerations: [{key: nvidia.com/gpu, effect: NoSchedule, operator: Exists}]\n"
    "          containers:\n"
    "          - name: machine-learning\n"
    "            resources:\n"
    "              limits: {cpu: \"8\", memory: \"24G\", nvidia.com/gpu: 1}\n"
    "              requests: {cpu: \"4\", memory: \"12G\", nvidia.com/gpu: 1}\n"
    "---\n"
    "apiVersion: v1\n"
    "kind: ConfigMap\n"
    "metadata: {name: code-%d, namespace: ns-%d, labels: {app.kubernetes.io/instance: job-%d}}\n"
    "data: {train_code.py: \"print('hello')\"}\n";

static const char cluster[] =
    "apiVersion: rightplace.dev/v1alpha1\nkind: Cluster\nmetadata: {name: c}\nspec:\n"
    "  nodes: [{name: gpu, count: 100, allocatable: {cpu: 8, memory: 32Gi, nvidia.com/gpu: 1}}]\n";

static const char policy[] =
    "apiVersion: policy.elotl.co/v1alpha1\nkind: SchedulePolicy\nmetadata: {name: p}\nspec:\n"
    "  namespaceSelector: {matchExpressions: [{key: kubernetes.io/metadata.name, operator: "
    "Exists}]}\n"
    "  resourceSelectors: {labelSelectors: [{matchExpressions: []}]}\n"
    "  groupBy: {labelKey: app.kubernetes.io/instance}\n";

/* Read the files named on stdin into files[0..*n). */
static struct rd_file *read_list(int *n, size_t *bytes)
{
    struct rd_file *files = NULL;
    size_t cap = 0;
    char line[4096];

    *n = 0;
    while (fgets(line, sizeof(line), stdin)) {
        size_t l = strcspn(line, "\n");
        FILE *f;
        char *buf;
        long len;

        line[l] = '\0';
        if (!l || !(f = fopen(line, "rb")))
            continue;
        if (fseek(f, 0, SEEK_END) != 0 || (len = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
            fclose(f);
            continue;
        }
        buf = rc_xmalloc((size_t)len + 1);
        if (fread(buf, 1, (size_t)len, f) != (size_t)len) {
            fclose(f);
            free(buf);
            continue;
        }
        fclose(f);
        if ((size_t)*n == cap) {
            cap = cap ? cap * 2 : 1024;
            files = rc_xrealloc(files, cap * sizeof(*files));
        }
        files[*n].path = rc_xstrdup(line);
        files[*n].data = buf;
        files[*n].len = (size_t)len;
        *bytes += (size_t)len;
        (*n)++;
    }
    return files;
}

int main(int argc, char **argv)
{
    int from_list = argc > 1 && !strcmp(argv[1], "-");
    int n = argc > 1 && !from_list ? (int)strtol(argv[1], NULL, 10) : 2000;
    int nfiles;
    struct rd_file *files;
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_err err = RC_ERR_INIT;
    struct rd_source src;
    struct timespec t0, t1;
    double secs;
    size_t bytes = 0;

    if (from_list) {
        files = read_list(&nfiles, &bytes);
        n = nfiles - 2; /* the same report and cleanup as the generated set */
        goto load;
    }
    if (n < 1)
        n = 1;
    files = rc_xcalloc((size_t)n + 2, sizeof(*files));
    for (int i = 0; i < n; i++) {
        char *buf = rc_xmalloc(sizeof(job_fmt) + 128);
        int len = snprintf(buf, sizeof(job_fmt) + 128, job_fmt, i, i % 50, i, i, i % 50, i);
        char *path = rc_xmalloc(64);
        snprintf(path, 64, "jobs/job-%06d.yaml", i);
        files[i].path = path;
        files[i].data = buf;
        files[i].len = (size_t)len;
        bytes += (size_t)len;
    }
    files[n].path = "fleet/cluster.yaml";
    files[n].data = cluster;
    files[n].len = sizeof(cluster) - 1;
    files[n + 1].path = "policies/p.yaml";
    files[n + 1].data = policy;
    files[n + 1].len = sizeof(policy) - 1;

load:
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (rd_source_load(&src, files, (size_t)n + 2, &a, &err) < 0) {
        fprintf(stderr, "bench_rd_source: %s\n", err.msg);
        return 1;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    printf("rd_source_load: %d files (%.1f MB), %zu objects, %zu errors, %.3f s, %.0f objects/s, "
           "arena %.1f MB\n",
           n + 2, (double)bytes / 1e6, src.nobjects, src.nerrors, secs, (double)src.nobjects / secs,
           (double)a.used_total / 1e6);
    rd_source_release(&src);
    rc_arena_release(&a);
    for (int i = 0; i < (from_list ? n + 2 : n); i++) {
        free((char *)files[i].path);
        free((char *)files[i].data);
    }
    free(files);
    return 0;
}
