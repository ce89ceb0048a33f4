/*
 * bench_rd_output.c - how fast the Render step writes a deploy tree: N units (a RayJob and a
 * ConfigMap each, loaded by rd_source_load), each placed on one of 4 clusters, then the
 * record read back and the commit message written. Prints files, bytes, wall time per step.
 * Usage: bench_rd_output [N]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rc_arena.h"
#include "rc_buf.h"
#include "rc_mem.h"
#include "rd_output.h"
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
    "              requests: {cpu: \"4\", memory: \"12G\"}\n"
    "    workerGroupSpecs:\n"
    "    - replicas: 2\n"
    "      groupName: small-group\n"
    "      template:\n"
    "        spec:\n"
    "          containers:\n"
    "          - name: machine-learning\n"
    "            resources:\n"
    "              requests: {cpu: \"4\", memory: \"12G\", nvidia.com/gpu: 1}\n"
    "---\n"
    "apiVersion: v1\n"
    "kind: ConfigMap\n"
    "metadata: {name: code-%d, namespace: ns-%d, labels: {app.kubernetes.io/instance: job-%d}}\n"
    "data: {train_code.py: \"print('hello')\"}\n";

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? strtol(argv[1], NULL, 10) : 1000;
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_err err = RC_ERR_INIT;
    struct rd_source src = RD_SOURCE_INIT;
    struct rd_file *files;
    struct pl_cluster clusters[4];
    static const char *const names[4] = {"c0", "c1", "c2", "c3"};
    struct pl_input in;
    struct pl_result res;
    struct rd_tree tree;
    struct rd_record rec;
    struct rc_buf msg = RC_BUF_INIT;
    const struct rd_tree_file *record = NULL;
    size_t bytes = 0;
    double t0, t1, t2, t3;

    if (n < 1 || n > 1000000)
        n = 1000;
    files = rc_xcalloc((size_t)n, sizeof(*files));
    for (long i = 0; i < n; i++) {
        int k = (int)i;
        files[i].path = rc_arena_printf(&a, "jobs/job-%06ld.yaml", i);
        files[i].data = rc_arena_printf(&a, job_fmt, k, k, k, k, k, k);
        files[i].len = strlen(files[i].data);
    }
    if (rd_source_load(&src, files, (size_t)n, &a, &err) < 0) {
        fprintf(stderr, "load: %s\n", err.msg);
        return 1;
    }
    memset(clusters, 0, sizeof(clusters));
    for (int i = 0; i < 4; i++) {
        clusters[i].name = names[i];
        clusters[i].reachable = 1;
    }
    memset(&in, 0, sizeof(in));
    in.res = &src.res;
    in.nobjects = src.nobjects;
    in.objects = src.objects;
    in.nclusters = 4;
    in.clusters = clusters;
    memset(&res, 0, sizeof(res));
    res.ndecisions = (size_t)n;
    res.decisions = rc_arena_calloc(&a, (size_t)n, sizeof(*res.decisions));
    /* objects are sorted by key: ns-K/ConfigMap/code-K, ns-K/RayJob/job-K pairs */
    for (size_t i = 0; i < (size_t)n && 2 * i + 1 < src.nobjects; i++) {
        struct pl_decision *d = &res.decisions[i];
        d->unit = rc_arena_printf(&a, "p/%s/%s", src.objects[2 * i].ns, src.objects[2 * i].name);
        d->policy = "p";
        d->nobjects = 2;
        d->objects = rc_arena_calloc(&a, 2, sizeof(*d->objects));
        d->object_keys = rc_arena_calloc(&a, 2, sizeof(*d->object_keys));
        for (int k = 0; k < 2; k++) {
            d->objects[k] = &src.objects[2 * i + (size_t)k];
            d->object_keys[k] = src.objects[2 * i + (size_t)k].key;
        }
        d->state = PL_STATE_PLACED;
        d->ntargets = 1;
        d->targets = rc_arena_calloc(&a, 1, sizeof(*d->targets));
        d->targets[0].cluster = names[i % 4];
        d->targets[0].percent = 100;
        d->reason = "fits now";
        d->change = PL_CHANGE_NEW;
    }

    t0 = now();
    if (rd_render_tree(&tree, &res, &in, "0123456789abcdef0123456789abcdef01234567", NULL, &a,
                       &err) < 0) {
        fprintf(stderr, "render: %s\n", err.msg);
        return 1;
    }
    t1 = now();
    for (size_t i = 0; i < tree.nfiles; i++) {
        bytes += tree.files[i].len;
        if (!strcmp(tree.files[i].path, "placements.yaml"))
            record = &tree.files[i];
    }
    if (!record || rd_record_parse(&rec, record->data, record->len, &a, &err) < 0) {
        fprintf(stderr, "record: %s\n", err.msg);
        return 1;
    }
    t2 = now();
    if (rd_commit_message(&msg, &res, "0123456789abcdef0123456789abcdef01234567", 0, NULL, &err) <
        0) {
        fprintf(stderr, "message: %s\n", err.msg);
        return 1;
    }
    t3 = now();
    {
        struct rc_buf rb = RC_BUF_INIT;
        double r0 = now();
        if (rd_record_emit(&rb, &res, NULL, &err) < 0)
            return 1;
        printf("record emit alone %.3f s (%zu bytes)\n", now() - r0, rb.len);
        rc_buf_release(&rb);
    }
    printf("units %ld, files %zu, bytes %zu\n", n, tree.nfiles, bytes);
    printf("render %.3f s (%.0f units/s), record parse %.3f s (%zu units), message %.3f s "
           "(%zu bytes)\n",
           t1 - t0, (double)n / (t1 - t0), t2 - t1, rec.nunits, t3 - t2, msg.len);
    rc_buf_release(&msg);
    rd_source_release(&src);
    rc_arena_release(&a);
    free(files);
    return 0;
}
