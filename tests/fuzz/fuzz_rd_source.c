/*
 * fuzz_rd_source.c - the Load step on arbitrary bytes: YAML, objects, demand, policies and
 * clusters must refuse bad input with a message, never crash or leak.
 */
#include <stddef.h>
#include <stdint.h>

#include "rc_arena.h"
#include "rd_demand.h"
#include "rd_object.h"
#include "rd_source.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_err err = RC_ERR_INIT;
    struct rd_source src;
    struct rd_file f = {"fuzz.yaml", (const char *)data, size};
    cJSON *t[8];

    if (rd_source_load(&src, &f, 1, &a, &err) == RC_OK) {
        for (size_t i = 0; i < src.nobjects; i++) {
            const struct rd_object *o = src.objects[i].payload;
            rd_pod_templates(o->root, t, 8);
        }
    }
    rd_source_release(&src);
    rc_arena_release(&a);
    return 0;
}
