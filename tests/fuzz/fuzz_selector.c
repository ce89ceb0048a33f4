/*
 * fuzz_selector.c - pl_selector_parse never crashes; what it accepts validates (Gt/Lt
 * allowed), formats to text that parses to a selector formatting the same way, and the
 * two selectors agree on a few fixed label sets and on one made from the selector itself.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pl_basics.h"
#include "pl_selector.h"
#include "rc_arena.h"
#include "rc_buf.h"
#include "rc_err.h"
#include "rc_mem.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const fixed[][2] = {
    {"a", "1"},
    {"a", "5"},
    {"b", "x"},
    {"env", "prod"},
    {"env", "dev"},
    {"x", ""},
    {"in", "in"},
    {"n", "-3"},
    {"tier", "a"},
    {"k", "v"},
    {"nvidia.com/gpu", "true"},
    {"cluster.class", "production"},
};

static void agree(const struct pl_selector *s1, const struct pl_selector *s2,
                  const struct pl_labels *l)
{
    if (pl_selector_matches(s1, l) != pl_selector_matches(s2, l))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_buf f1 = RC_BUF_INIT, f2 = RC_BUF_INIT;
    struct rc_err err = RC_ERR_INIT;
    struct pl_selector s1, s2;
    struct pl_labels l = {0, NULL};
    char *text = rc_arena_strndup(&a, (const char *)data, size);

    if (pl_selector_parse(&s1, text, &a, &err) != RC_OK) {
        if (err.code != RC_EINVALID || !err.msg[0])
            abort();
        goto done;
    }
    if (pl_selector_validate(&s1, 1, &err) != RC_OK)
        abort();
    if (pl_selector_format(&f1, &s1, &err) != RC_OK)
        abort();
    if (pl_selector_parse(&s2, f1.ptr, &a, &err) != RC_OK)
        abort();
    if (s2.n != s1.n)
        abort();
    if (pl_selector_format(&f2, &s2, &err) != RC_OK)
        abort();
    /* parse sorts requirements by key (stable) and values, so formatting is a fixed point */
    if (strcmp(f1.ptr, f2.ptr))
        abort();
    agree(&s1, &s2, &l); /* the empty label set */
    for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++) {
        struct pl_labels one = {0, NULL};
        pl_labels_set(&one, &a, fixed[i][0], fixed[i][1]);
        pl_labels_set(&l, &a, fixed[i][0], fixed[i][1]);
        agree(&s1, &s2, &one);
        agree(&s1, &s2, &l);
    }
    /* labels made from the selector: each key with one of its values */
    l.n = 0;
    for (size_t i = 0; i < s1.n; i++) {
        const struct pl_requirement *r = &s1.req[i];
        pl_labels_set(&l, &a, r->key, r->nvalues ? r->values[i % r->nvalues] : "");
        agree(&s1, &s2, &l);
    }
done:
    rc_buf_release(&f1);
    rc_buf_release(&f2);
    rc_arena_release(&a);
    return 0;
}
