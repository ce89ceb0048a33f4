/*
 * test_pl_quantity.c - Kubernetes quantities: parsing exactly as resource.Quantity, rounding
 * up to milli-units, overflow, and formatting for people (exact, round-tripping).
 */
#include "th.h"

#include <stdio.h>
#include <string.h>

#include "pl_quantity.h"
#include "rc_err.h"

struct qcase {
    const char *text;
    int ok;
    int64_t milli;
};

/* Values checked by hand against resource.Quantity's MilliValue(). */
static const struct qcase cases[] = {
    /* YAML-number-like inputs ("cpu: 4", "cpu: 0.5") */
    {"0", 1, 0},
    {"4", 1, 4000},
    {"0.5", 1, 500},
    {"1e3", 1, 1000000},
    {"110", 1, 110000},
    {"00012", 1, 12000},
    /* decimal SI suffixes */
    {"1n", 1, 1},
    {"1u", 1, 1},
    {"500m", 1, 500},
    {"1k", 1, 1000000},
    {"1M", 1, 1000000000},
    {"12G", 1, 12000000000000},
    {"1T", 1, 1000000000000000},
    {"1P", 1, 1000000000000000000},
    {"0.001E", 1, 1000000000000000000},
    /* binary SI suffixes */
    {"1Ki", 1, 1024000},
    {"1Mi", 1, 1048576000},
    {"200Mi", 1, 209715200000},
    {"1Gi", 1, 1073741824000},
    {"1.5Gi", 1, 1610612736000},
    {"1Ti", 1, 1099511627776000},
    {"1Pi", 1, 1125899906842624000},
    {"0.001Ei", 1, 1152921504606846976},
    {"1.5Ki", 1, 1536000},
    {"0.1Ki", 1, 102400},
    /* exponents */
    {"1E3", 1, 1000000},
    {"1e+3", 1, 1000000},
    {"1e-3", 1, 1},
    {"12e-1", 1, 1200},
    {"1.5e3", 1, 1500000},
    {"1000000000000000000000000e-20", 1, 10000000},
    {"1e-9223372036854775808", 1, 1},
    {"0e9223372036854775807", 1, 0},
    /* fractions and signs */
    {".5", 1, 500},
    {"1.", 1, 1000},
    {"1.G", 1, 1000000000000},
    {"+1", 1, 1000},
    {"-1", 1, -1000},
    {"-0", 1, 0},
    {"-.5Gi", 1, -536870912000},
    {"0.000", 1, 0},
    {"0Gi", 1, 0},
    /* rounding up to the next milli-unit, away from zero */
    {"0.1m", 1, 1},
    {"1001u", 1, 2},
    {"1000u", 1, 1},
    {"0.0001", 1, 1},
    {"-0.0001", 1, -1},
    {"-1n", 1, -1},
    {"0.0001Ki", 1, 103},
    {"1.23456789e2", 1, 123457},
    {"1e-10", 1, 1},
    {"0.000000000000000000000000000000001", 1, 1},
    {"123456789012345678901234567890e-30", 1, 124},
    /* overflow boundaries */
    {"9223372036854775807m", 1, INT64_MAX},
    {"9223372036854775.807", 1, INT64_MAX},
    {"-9223372036854775807m", 1, -INT64_MAX},
    {"9223372036854775808m", 0, 0},
    {"9223372036854775.8071", 0, 0},
    {"9223372036854775807000u", 1, INT64_MAX},
    {"9223372036854775807001u", 0, 0},
    {"9223372036854775806001u", 1, INT64_MAX},
    {"-9223372036854775808m", 0, 0},
    {"1E", 0, 0},
    {"1Ei", 0, 0},
    {"8.2Pi", 0, 0},
    {"8.19Pi", 1, 9221120237041090560},
    {"8Pi", 1, 9007199254740992000},
    {"10P", 0, 0},
    {"1e16", 0, 0},
    {"1e9223372036854775807", 0, 0},
    {"99999999999999999999999999", 0, 0},
    /* malformed */
    {"", 0, 0},
    {"1.5.5Gi", 0, 0},
    {"10Qi", 0, 0},
    {"1KI", 0, 0},
    {"1K", 0, 0},
    {"Mi", 0, 0},
    {"-k", 0, 0},
    {" 1", 0, 0},
    {"1 ", 0, 0},
    {"1 Gi", 0, 0},
    {"+-1", 0, 0},
    {"--1", 0, 0},
    {"+", 0, 0},
    {"1e", 0, 0},
    {"1e+", 0, 0},
    {"-3.01e-", 0, 0},
    {"1e3.5", 0, 0},
    {"1e1e1", 0, 0},
    {"1e9223372036854775808", 0, 0},
    {"0x10", 0, 0},
    {".", 0, 0},
    {"1..5", 0, 0},
    {"1,5", 0, 0},
    {"1i", 0, 0},
    {"1m3", 0, 0},
    {"1Mii", 0, 0},
    {"0.1mi", 0, 0},
    {"1+1.0M", 0, 0},
    {"abc", 0, 0},
    {"1\n", 0, 0},
};

static void test_pl_quantity__table(void **state)
{
    size_t n = sizeof(cases) / sizeof(cases[0]);

    (void)state;
    assert_true(n >= 40);
    for (size_t i = 0; i < n; i++) {
        struct rc_err err = RC_ERR_INIT;
        int64_t v = 42;
        int rc = pl_quantity_parse(&v, cases[i].text, &err);
        if (cases[i].ok) {
            if (rc != RC_OK || v != cases[i].milli)
                fail_msg("'%s': rc %d (%s), got %lld, want %lld", cases[i].text, rc, err.msg,
                         (long long)v, (long long)cases[i].milli);
        } else {
            if (rc != RC_EINVALID || err.code != RC_EINVALID || !err.msg[0])
                fail_msg("'%s': accepted as %lld", cases[i].text, (long long)v);
            assert_int_equal(v, 42); /* untouched on error */
        }
    }
}

static void test_pl_quantity__messages(void **state)
{
    struct rc_err err = RC_ERR_INIT;
    int64_t v;

    (void)state;
    assert_int_equal(pl_quantity_parse(&v, "1E", &err), RC_EINVALID);
    assert_string_equal(err.msg, "quantity '1E' is out of range");
    assert_int_equal(pl_quantity_parse(&v, "10Qi", &err), RC_EINVALID);
    assert_string_equal(err.msg, "invalid quantity '10Qi': unexpected character at column 3");
    assert_int_equal(pl_quantity_parse(&v, "1KI", &err), RC_EINVALID);
    assert_string_equal(err.msg, "invalid quantity '1KI': unexpected character at column 3");
    assert_int_equal(pl_quantity_parse(&v, "1K", &err), RC_EINVALID);
    assert_string_equal(err.msg, "invalid quantity '1K': unknown suffix 'K'");
    assert_int_equal(pl_quantity_parse(&v, "Mi", &err), RC_EINVALID);
    assert_string_equal(err.msg, "invalid quantity 'Mi': expected a number");
    assert_int_equal(pl_quantity_parse(&v, "", &err), RC_EINVALID);
    assert_string_equal(err.msg, "invalid quantity '': empty");
    assert_int_equal(pl_quantity_parse(&v, NULL, &err), RC_EINVALID);
    /* NULL err is allowed */
    assert_int_equal(pl_quantity_parse(&v, "x", NULL), RC_EINVALID);
}

static void test_pl_quantity__long_input_is_bounded(void **state)
{
    static char big[70000];
    struct rc_err err = RC_ERR_INIT;
    int64_t v = 0;

    (void)state;
    /* 0.000...0001 with 69998 digits after the point: rounds up to 1 milli */
    memset(big, '0', sizeof(big) - 1);
    big[1] = '.';
    big[sizeof(big) - 2] = '1';
    assert_int_equal(pl_quantity_parse(&v, big, &err), RC_OK);
    assert_int_equal(v, 1);
    /* 1 and 69991 zeros, e-69990: 10 units */
    memset(big, '0', sizeof(big) - 1);
    big[0] = '1';
    memcpy(big + sizeof(big) - 8, "e-69990", 8);
    assert_int_equal(pl_quantity_parse(&v, big, &err), RC_OK);
    assert_int_equal(v, 10000);
    /* the message quotes only the start of the text */
    big[20] = 'x';
    assert_int_equal(pl_quantity_parse(&v, big, &err), RC_EINVALID);
    assert_non_null(strstr(err.msg, "...'"));
    assert_true(strlen(err.msg) < 160);
}

struct fcase {
    int64_t milli;
    int is_memory;
    const char *want;
};

static const struct fcase fcases[] = {
    {500, 0, "500m"},
    {4000, 0, "4"},
    {12500, 0, "12500m"},
    {110000, 0, "110"},
    {1000000, 0, "1000"},
    {0, 0, "0"},
    {0, 1, "0"},
    {-500, 0, "-500m"},
    {1000, 0, "1"},
    {250, 0, "250m"},
    {12000000000000, 1, "12G"},
    {209715200000, 1, "200Mi"},
    {36209715200000, 1, "36209715200"},
    {1073741824000, 1, "1Gi"},
    {1610612736000, 1, "1536Mi"},
    {1024000, 1, "1Ki"},
    {1000000, 1, "1k"},
    {1536000, 1, "1536"},
    {1500, 1, "1500m"},
    {17179869184000, 1, "16Gi"},
    {4000000000000, 1, "4G"},
    {1048576000000, 1, "1000Mi"},
    {1024000000, 1, "1024k"},
    {-1073741824000, 1, "-1Gi"},
    {INT64_MAX, 1, "9223372036854775807m"},
    {INT64_MIN, 0, "-9223372036854775808m"},
    {1152921504606846976, 1, "1152921504606846976m"},
    {1125899906842624000, 1, "1Pi"},
};

static void test_pl_quantity__format(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(fcases) / sizeof(fcases[0]); i++) {
        char out[PL_QUANTITY_STR];
        memset(out, 'x', sizeof(out));
        pl_quantity_format(out, fcases[i].milli, fcases[i].is_memory);
        if (strcmp(out, fcases[i].want))
            fail_msg("%lld (memory %d): got '%s', want '%s'", (long long)fcases[i].milli,
                     fcases[i].is_memory, out, fcases[i].want);
    }
}

static void check_round_trip(int64_t milli)
{
    for (int mem = 0; mem <= 1; mem++) {
        char out[PL_QUANTITY_STR];
        struct rc_err err = RC_ERR_INIT;
        int64_t back = 0;
        pl_quantity_format(out, milli, mem);
        assert_true(strlen(out) < PL_QUANTITY_STR);
        if (milli == INT64_MIN) {
            assert_int_equal(pl_quantity_parse(&back, out, &err), RC_EINVALID);
            continue;
        }
        if (pl_quantity_parse(&back, out, &err) != RC_OK || back != milli)
            fail_msg("%lld -> '%s' -> %lld (%s)", (long long)milli, out, (long long)back, err.msg);
    }
}

static void test_pl_quantity__format_round_trips(void **state)
{
    uint64_t x = 0x9E3779B97F4A7C15u;

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        if (cases[i].ok)
            check_round_trip(cases[i].milli);
    }
    for (size_t i = 0; i < sizeof(fcases) / sizeof(fcases[0]); i++)
        check_round_trip(fcases[i].milli);
    /* multiples of every unit, and pseudo-random values (xorshift) */
    for (int64_t unit = 1; unit <= INT64_MAX / 1024; unit *= 2) {
        for (int64_t k = 1; k <= 1025; k += 7)
            if (unit <= INT64_MAX / k)
                check_round_trip(unit * k);
    }
    for (int i = 0; i < 20000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        check_round_trip((int64_t)(x >> (i % 64)));
        check_round_trip((int64_t)x);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pl_quantity__table),
        cmocka_unit_test(test_pl_quantity__messages),
        cmocka_unit_test(test_pl_quantity__long_input_is_bounded),
        cmocka_unit_test(test_pl_quantity__format),
        cmocka_unit_test(test_pl_quantity__format_round_trips),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
