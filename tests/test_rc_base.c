/*
 * test_rc_base.c - the base library: error messages, capped buffers, arena, hashes.
 */
#include "th.h"

#include <string.h>

#include "rc_arena.h"
#include "rc_buf.h"
#include "rc_err.h"
#include "rc_hash.h"

static void test_rc_base__err_is_one_line(void **state)
{
    struct rc_err err = RC_ERR_INIT;

    (void)state;
    assert_int_equal(rc_err_set(&err, RC_EINVALID, "bad '%s'\nnext", "x"), RC_EINVALID);
    assert_string_equal(err.msg, "bad 'x' next");
    rc_err_prefix(&err, "%s:%d: ", "f.yaml", 3);
    assert_string_equal(err.msg, "f.yaml:3: bad 'x' next");
    assert_int_equal(err.code, RC_EINVALID);
}

static void test_rc_base__buf_respects_cap(void **state)
{
    struct rc_buf b = RC_BUF_INIT;
    struct rc_err err = RC_ERR_INIT;

    (void)state;
    assert_string_equal(b.ptr, "");
    rc_buf_init(&b, 8);
    assert_int_equal(rc_buf_puts(&b, "12345678", &err), RC_OK);
    assert_int_equal(rc_buf_putc(&b, '9', &err), RC_ERROR);
    assert_non_null(strstr(err.msg, "limit of 8 bytes"));
    assert_string_equal(b.ptr, "12345678"); /* unchanged after a refused append */
    rc_buf_reset(&b);
    assert_int_equal(rc_buf_printf(&b, &err, "%d-%s", 42, "x"), RC_OK);
    assert_string_equal(b.ptr, "42-x");
    rc_buf_release(&b);
}

static void test_rc_base__arena_strings_and_big_blocks(void **state)
{
    struct rc_arena a = RC_ARENA_INIT;
    char *big;

    (void)state;
    assert_string_equal(rc_arena_printf(&a, "%s/%d", "ns", 7), "ns/7");
    big = rc_arena_alloc(&a, 1 << 20);
    for (size_t i = 0; i < (1 << 20); i++)
        assert_true(big[i] == 0);
    assert_string_equal(rc_arena_strdup(&a, "after"), "after");
    rc_arena_release(&a);
    assert_null(a.head);
}

static void test_rc_base__fnv_is_stable(void **state)
{
    char hex[17];

    (void)state;
    /* FNV-1a 64 of "a" plus its NUL terminator, fixed forever: it names pod labels */
    rc_hash_hex(rc_fnv1a(RC_FNV_INIT, "", 0), hex);
    assert_string_equal(hex, "cbf29ce484222325");
    rc_hash_hex(rc_fnv1a(RC_FNV_INIT, "a", 1), hex);
    assert_string_equal(hex, "af63dc4c8601ec8c");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rc_base__err_is_one_line),
        cmocka_unit_test(test_rc_base__buf_respects_cap),
        cmocka_unit_test(test_rc_base__arena_strings_and_big_blocks),
        cmocka_unit_test(test_rc_base__fnv_is_stable),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
