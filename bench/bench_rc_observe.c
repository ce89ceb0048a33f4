/*
 * bench_rc_observe.c - the CPU side of observe and apply, without a server: turning a big
 * cluster's node and pod lists into the model (rc_observe_build), and planning a big cluster
 * directory (rc_apply_plan_make: diff, YAML parse, ordering).
 *
 * Observe: 1,000 nodes and 30,000 pods (30 per node, half with a rightplace unit label), as
 * the API server lists them. Plan: 5,000 ConfigMap files, first apply (everything) and a
 * change of 1% of them. Best of 3 runs each; prints times and per-item rates. Never asserts.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pl_basics.h"
#include "rc_apply.h"
#include "rc_observe.h"

#define NNODES 1000
#define PODS_PER_NODE 30
#define NFILES 5000

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static cJSON *make_nodes(void)
{
    cJSON *arr = cJSON_CreateArray();
    char name[32];

    for (int i = 0; i < NNODES; i++) {
        cJSON *n = cJSON_CreateObject(), *md = cJSON_AddObjectToObject(n, "metadata");
        cJSON *st = cJSON_AddObjectToObject(n, "status");
        cJSON *al = cJSON_AddObjectToObject(st, "allocatable");
        cJSON *conds = cJSON_AddArrayToObject(st, "conditions"), *c = cJSON_CreateObject();
        cJSON *labels = cJSON_AddObjectToObject(md, "labels");

        snprintf(name, sizeof(name), "node-%05d", i);
        cJSON_AddStringToObject(md, "name", name);
        cJSON_AddStringToObject(labels, "kubernetes.io/hostname", name);
        cJSON_AddStringToObject(labels, "node.kubernetes.io/instance-type", "m5.4xlarge");
        cJSON_AddStringToObject(al, "cpu", "15890m");
        cJSON_AddStringToObject(al, "memory", "63Gi");
        cJSON_AddStringToObject(al, "pods", "110");
        cJSON_AddStringToObject(al, "ephemeral-storage", "95Gi");
        cJSON_AddStringToObject(c, "type", "Ready");
        cJSON_AddStringToObject(c, "status", "True");
        cJSON_AddItemToArray(conds, c);
        cJSON_AddItemToArray(arr, n);
    }
    return arr;
}

static cJSON *make_pods(void)
{
    cJSON *arr = cJSON_CreateArray();
    char name[32], node[32], unit[32];

    for (int i = 0; i < NNODES * PODS_PER_NODE; i++) {
        cJSON *p = cJSON_CreateObject(), *md = cJSON_AddObjectToObject(p, "metadata");
        cJSON *spec = cJSON_AddObjectToObject(p, "spec"), *labels;
        cJSON *cs = cJSON_AddArrayToObject(spec, "containers"), *c = cJSON_CreateObject();
        cJSON *req = cJSON_AddObjectToObject(cJSON_AddObjectToObject(c, "resources"), "requests");

        snprintf(name, sizeof(name), "pod-%06d", i);
        snprintf(node, sizeof(node), "node-%05d", i % NNODES);
        snprintf(unit, sizeof(unit), "%016x", (unsigned)(i / 7));
        cJSON_AddStringToObject(md, "name", name);
        cJSON_AddStringToObject(md, "namespace", "team");
        labels = cJSON_AddObjectToObject(md, "labels");
        if (i % 2)
            cJSON_AddStringToObject(labels, "rightplace.dev/unit", unit);
        cJSON_AddStringToObject(spec, "nodeName", node);
        cJSON_AddStringToObject(c, "name", "app");
        cJSON_AddStringToObject(req, "cpu", "250m");
        cJSON_AddStringToObject(req, "memory", "512Mi");
        cJSON_AddItemToArray(cs, c);
        cJSON_AddStringToObject(cJSON_AddObjectToObject(p, "status"), "phase", "Running");
        cJSON_AddItemToArray(arr, p);
    }
    return arr;
}

static void bench_observe(void)
{
    cJSON *nodes = make_nodes(), *pods = make_pods();
    double best = 1e9;
    size_t present = 0;

    for (int run = 0; run < 3; run++) {
        struct rc_arena a = RC_ARENA_INIT;
        struct rc_err err = RC_ERR_INIT;
        struct pl_resnames res;
        struct pl_cluster c;
        double t0, t;

        memset(&c, 0, sizeof(c));
        c.name = "big";
        pl_resnames_init(&res);
        t0 = now();
        if (rc_observe_build(&c, nodes, pods, NULL, &res, &a, &err) < 0) {
            fprintf(stderr, "bench_rc_observe: %s\n", err.msg);
            exit(1);
        }
        t = now() - t0;
        if (t < best)
            best = t;
        present = c.npresent;
        rc_arena_release(&a);
    }
    printf("observe build: %d nodes, %d pods, %zu units present: %.3f s (%.0f pods/s)\n", NNODES,
           NNODES * PODS_PER_NODE, present, best, NNODES * PODS_PER_NODE / best);
    cJSON_Delete(nodes);
    cJSON_Delete(pods);
}

static void bench_plan(void)
{
    struct rc_apply_file *old = calloc(NFILES, sizeof(*old)), *cur = calloc(NFILES, sizeof(*cur));
    char **paths = calloc(NFILES, sizeof(*paths)), **d0 = calloc(NFILES, sizeof(*d0));
    char **d1 = calloc(NFILES, sizeof(*d1));
    double best_all = 1e9, best_one = 1e9;
    size_t napply_one = 0;

    for (int i = 0; i < NFILES; i++) {
        paths[i] = malloc(64);
        d0[i] = malloc(256);
        d1[i] = malloc(256);
        snprintf(paths[i], 64, "clusters/big/team/configmap.cm-%05d.yaml", i);
        snprintf(d0[i], 256,
                 "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%05d\n  namespace: "
                 "team\n  labels:\n    app.kubernetes.io/managed-by: rightplace\ndata:\n  k: v%d\n",
                 i, 0);
        snprintf(d1[i], 256,
                 "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%05d\n  namespace: "
                 "team\n  labels:\n    app.kubernetes.io/managed-by: rightplace\ndata:\n  k: v%d\n",
                 i, i % 100 == 0);
        old[i].path = cur[i].path = paths[i];
        old[i].data = d0[i];
        old[i].len = strlen(d0[i]);
        cur[i].data = d1[i];
        cur[i].len = strlen(d1[i]);
    }
    for (int run = 0; run < 3; run++) {
        struct rc_arena a = RC_ARENA_INIT;
        struct rc_err err = RC_ERR_INIT;
        struct rc_apply_plan p;
        double t0 = now(), t;

        if (rc_apply_plan_make(&p, NULL, 0, cur, NFILES, 0, &a, &err) < 0) {
            fprintf(stderr, "bench_rc_observe: %s\n", err.msg);
            exit(1);
        }
        t = now() - t0;
        best_all = t < best_all ? t : best_all;
        rc_apply_plan_release(&p);
        t0 = now();
        if (rc_apply_plan_make(&p, old, NFILES, cur, NFILES, 0, &a, &err) < 0) {
            fprintf(stderr, "bench_rc_observe: %s\n", err.msg);
            exit(1);
        }
        t = now() - t0;
        best_one = t < best_one ? t : best_one;
        napply_one = p.napply;
        rc_apply_plan_release(&p);
        rc_arena_release(&a);
    }
    printf("apply plan: %d files, first apply: %.3f s (%.0f files/s)\n", NFILES, best_all,
           NFILES / best_all);
    printf("apply plan: %d files, %zu changed: %.4f s\n", NFILES, napply_one, best_one);
    for (int i = 0; i < NFILES; i++) {
        free(paths[i]);
        free(d0[i]);
        free(d1[i]);
    }
    free(paths);
    free(d0);
    free(d1);
    free(old);
    free(cur);
}

int main(void)
{
    bench_observe();
    bench_plan();
    return 0;
}
