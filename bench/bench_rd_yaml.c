/*
 * bench_rd_yaml.c - how fast rd_yaml loads and emits: a stream of manifests shaped like
 * skyray's RayJob (RayJob + ConfigMap) repeated 4999 times (9998 documents, ~8 MB: the
 * default limits), and
 * how long a "billion laughs" document takes to be refused. Prints bytes, documents, wall
 * times and MB/s. Usage: bench_rd_yaml [copies]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rc_buf.h"
#include "rd_yaml.h"

static const char doc[] =
    "apiVersion: ray.io/v1\n"
    "kind: RayJob\n"
    "metadata: {name: rayjob-train, namespace: rayjob3, labels: {app: train}}\n"
    "spec:\n"
    "  entrypoint: python /home/ray/samples/train_code.py\n"
    "  runtimeEnvYAML: |\n"
    "    pip:\n"
    "      - torch\n"
    "  rayClusterSpec:\n"
    "    headGroupSpec:\n"
    "      rayStartParams: {dashboard-host: '0.0.0.0'}\n"
    "      template:\n"
    "        spec:\n"
    "          containers:\n"
    "          - name: ray-head\n"
    "            image: rayproject/ray-ml:2.2.0-gpu\n"
    "            ports: [{containerPort: 6379, name: gcs-server}, {containerPort: 8265}]\n"
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
    "          - name: ray-worker\n"
    "            image: rayproject/ray-ml:2.2.0-gpu\n"
    "            resources:\n"
    "              limits: {cpu: \"4\", memory: \"24G\", nvidia.com/gpu: 1}\n"
    "              requests: {cpu: \"4\", memory: \"12G\", nvidia.com/gpu: 1}\n"
    "---\n"
    "apiVersion: v1\n"
    "kind: ConfigMap\n"
    "metadata: {name: ray-job-code-sample, namespace: rayjob3}\n"
    "data:\n"
    "  train_code.py: |\n"
    "    import ray\n"
    "    ray.init()\n"
    "    print(\"done\")\n"
    "---\n";

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    /* two documents a copy; stay within the default 10,000 documents and 8 MiB */
    long copies = argc > 1 ? strtol(argv[1], NULL, 10) : 4999;
    struct rc_buf in = RC_BUF_INIT, out = RC_BUF_INIT;
    struct rc_err err = RC_ERR_INIT;
    struct rd_docs *docs = NULL;
    double t0, t1, t2;

    for (long i = 0; i < copies; i++)
        rc_buf_add(&in, doc, sizeof(doc) - 1, NULL);
    t0 = now();
    if (rd_yaml_load(&docs, "bench.yaml", in.ptr, in.len, NULL, NULL, &err) != RC_OK) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    t1 = now();
    for (size_t i = 0; i < rd_docs_count(docs); i++) {
        if (rd_yaml_emit(&out, rd_docs_get(docs, i), &err) != RC_OK) {
            fprintf(stderr, "%s\n", err.msg);
            return 1;
        }
        rc_buf_puts(&out, "---\n", NULL);
    }
    t2 = now();
    printf("input: %zu bytes, %zu documents\n", in.len, rd_docs_count(docs));
    printf("load:  %.3f s (%.1f MB/s)\n", t1 - t0, (double)in.len / 1e6 / (t1 - t0));
    printf("emit:  %.3f s (%.1f MB/s, %zu bytes)\n", t2 - t1, (double)out.len / 1e6 / (t2 - t1),
           out.len);
    rd_docs_free(docs);
    rc_buf_release(&out);

    rc_buf_reset(&in);
    rc_buf_puts(&in, "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n", NULL);
    for (char c = 'b'; c <= 'j'; c++)
        rc_buf_printf(&in, NULL, "%c: &%c [*%c, *%c, *%c, *%c, *%c, *%c, *%c, *%c, *%c]\n", c, c,
                      c - 1, c - 1, c - 1, c - 1, c - 1, c - 1, c - 1, c - 1, c - 1);
    t0 = now();
    if (rd_yaml_load(&docs, "laughs.yaml", in.ptr, in.len, NULL, NULL, &err) == RC_OK) {
        fprintf(stderr, "billion laughs loaded\n");
        return 1;
    }
    t1 = now();
    printf("billion laughs refused in %.3f s: %s\n", t1 - t0, err.msg);
    rc_buf_release(&in);
    return 0;
}
