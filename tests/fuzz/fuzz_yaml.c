/*
 * fuzz_yaml.c - libFuzzer target for the YAML loader and emitter.
 *
 * Loads the input with small limits; whatever loads must emit, and the emitted text must
 * load back to the same tree (rd_yaml_equal) and emit to the same bytes. Each document also
 * goes through rd_object_init. Any mismatch aborts.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rc_arena.h"
#include "rc_buf.h"
#include "rd_object.h"
#include "rd_yaml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_doc(const cJSON *tree)
{
    struct rc_buf y1 = RC_BUF_INIT, y2 = RC_BUF_INIT;
    struct rc_err err = RC_ERR_INIT;
    struct rd_yaml_limits lim = RD_YAML_LIMITS_INIT;
    struct rd_docs *again = NULL;

    if (rd_yaml_emit(&y1, tree, &err) != RC_OK) {
        fprintf(stderr, "emit failed: %s\n", err.msg);
        abort();
    }
    if (rd_yaml_load(&again, "emitted", y1.ptr, y1.len, &lim, NULL, &err) != RC_OK) {
        fprintf(stderr, "reload failed: %s\n--- emitted:\n%s", err.msg, y1.ptr);
        abort();
    }
    if (rd_docs_count(again) != 1 || !rd_yaml_equal(tree, rd_docs_get(again, 0))) {
        fprintf(stderr, "tree changed (%zu documents)\n--- emitted:\n%s", rd_docs_count(again),
                y1.ptr);
        abort();
    }
    if (rd_yaml_emit(&y2, rd_docs_get(again, 0), &err) != RC_OK || strcmp(y1.ptr, y2.ptr) != 0) {
        fprintf(stderr, "emit not a fixed point\n--- first:\n%s--- second:\n%s", y1.ptr, y2.ptr);
        abort();
    }
    rd_docs_free(again);
    rc_buf_release(&y1);
    rc_buf_release(&y2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct rd_yaml_limits lim = {64u << 10, 24, 20000, 50};
    struct rc_err err = RC_ERR_INIT;
    struct rc_arena a = RC_ARENA_INIT;
    struct rd_docs *docs = NULL;

    if (rd_yaml_load(&docs, "fuzz.yaml", (const char *)data, size, &lim, NULL, &err) != RC_OK) {
        if (strncmp(err.msg, "fuzz.yaml:", 10) != 0) {
            fprintf(stderr, "error without a position: %s\n", err.msg);
            abort();
        }
        return 0;
    }
    for (size_t i = 0; i < rd_docs_count(docs); i++) {
        struct rd_object o;
        check_doc(rd_docs_get(docs, i));
        if (rd_object_init(&o, rd_docs_get(docs, i), "fuzz.yaml", (struct rd_pos){0, 0}, docs, &a,
                           &err) != RC_OK &&
            strncmp(err.msg, "fuzz.yaml:", 10) != 0) {
            fprintf(stderr, "object error without a position: %s\n", err.msg);
            abort();
        }
    }
    rd_docs_free(docs);
    rc_arena_release(&a);
    return 0;
}
