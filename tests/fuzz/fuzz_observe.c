/*
 * fuzz_observe.c - what a cluster's API server answers → the cluster model
 * (rc_observe_build): {"nodes": [...], "pods": [...], "deployments": [...]} as JSON. Never a
 * crash, an overflow or a leak; a failure comes with a message; a cluster built has its nodes
 * sorted by unique name, its present units sorted and unique, and requests it did not
 * overflow into negative amounts.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "pl_basics.h"
#include "rc_arena.h"
#include "rc_observe.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cJSON *root = cJSON_ParseWithLength((const char *)data, size);
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_err err = RC_ERR_INIT;
    struct pl_resnames res;
    struct pl_shape shape;
    struct pl_cluster c;
    const cJSON *deps;

    if (!root)
        return 0;
    pl_resnames_init(&res);
    pl_resnames_intern(&res, &a, "nvidia.com/gpu");
    memset(&shape, 0, sizeof(shape));
    shape.name = "m5.large";
    memset(&c, 0, sizeof(c));
    c.name = "fuzz";
    c.nshapes = 1;
    c.shapes = &shape;
    deps = cJSON_GetObjectItemCaseSensitive(root, "deployments");
    if (rc_observe_build(&c, cJSON_GetObjectItemCaseSensitive(root, "nodes"),
                         cJSON_GetObjectItemCaseSensitive(root, "pods"), deps, &res, &a,
                         &err) == RC_OK) {
        for (size_t i = 1; i < c.nnodes; i++) {
            if (strcmp(c.nodes[i - 1].name, c.nodes[i].name) >= 0)
                abort();
        }
        for (size_t i = 1; i < c.npresent; i++) {
            if (strcmp(c.present[i - 1], c.present[i]) >= 0)
                abort();
        }
        for (size_t i = 0; i < c.nnodes; i++) {
            for (int r = 0; r < res.n; r++) {
                if (c.nodes[i].requested.v[r] < 0)
                    abort();
            }
        }
    } else if (err.msg[0] == '\0') {
        abort();
    }
    rc_arena_release(&a);
    cJSON_Delete(root);
    return 0;
}
