/*
 * test_rd_yaml.c - YAML loading (typing, positions, anchors, limits, errors) and the
 * canonical emitter (quoting, block scalars, round trips over the skyray files and over
 * generated trees).
 */
#include "th.h"

#include "th_inputs.h"

#include <dirent.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rc_buf.h"
#include "rc_mem.h"
#include "rd_jarena.h"
#include "rd_pack.h"
#include "rd_yaml.h"

/* ==== helpers ==== */

struct warns {
    int n;
    char last[512];
    struct rd_pos pos;
};

static void collect_warn(void *payload, const char *file, struct rd_pos pos, const char *msg)
{
    struct warns *w = payload;

    w->n++;
    w->pos = pos;
    snprintf(w->last, sizeof(w->last), "%s:%d:%d: %s", file, pos.line, pos.col, msg);
}

static struct rd_docs *load_ok(const char *text)
{
    struct rd_docs *d = NULL;
    struct rc_err err = RC_ERR_INIT;
    int rc = rd_yaml_load(&d, "t.yaml", text, strlen(text), NULL, NULL, &err);

    if (rc != RC_OK)
        print_error("unexpected error: %s\n", err.msg);
    assert_int_equal(rc, RC_OK);
    return d;
}

/* Load text expecting an error that contains `want`; returns nothing, checks code. */
static void load_fails(const char *text, size_t len, const struct rd_yaml_limits *lim,
                       const char *want)
{
    struct rd_docs *d = NULL;
    struct rc_err err = RC_ERR_INIT;
    int rc = rd_yaml_load(&d, "t.yaml", text, len, lim, NULL, &err);

    assert_int_equal(rc, RC_EINVALID);
    assert_null(d);
    if (!strstr(err.msg, want))
        print_error("message '%s' lacks '%s'\n", err.msg, want);
    assert_non_null(strstr(err.msg, want));
}

static char *emit(const cJSON *root)
{
    struct rc_buf b = RC_BUF_INIT;
    struct rc_err err = RC_ERR_INIT;

    if (rd_yaml_emit(&b, root, &err) != RC_OK)
        print_error("emit: %s\n", err.msg);
    assert_int_equal(err.code, RC_OK);
    return rc_buf_detach(&b, NULL);
}

/* load -> emit -> load gives the same tree, and emit is a fixed point. */
/* rd_pack.h: what render expands is exactly what was loaded, the same YAML byte for byte */
static void check_pack_round_trip(const char *name, const cJSON *tree)
{
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_err err = RC_ERR_INIT;
    const unsigned char *packed = NULL;
    size_t len = 0;
    cJSON *back = NULL;
    char *y1, *y2;

    if (rd_pack(&packed, &len, tree, &a, &err) != RC_OK)
        print_error("%s: pack: %s\n", name, err.msg);
    assert_int_equal(err.code, RC_OK);
    assert_int_equal(rd_unpack(&back, packed, len, &err), RC_OK);
    assert_true(rd_yaml_equal(tree, back));
    y1 = emit(tree);
    y2 = emit(back);
    assert_string_equal(y1, y2);
    /* any strict prefix is refused, never read past */
    for (size_t cut = 0; cut < len; cut += 1 + cut / 8) {
        cJSON *t = NULL;
        assert_int_equal(rd_unpack(&t, packed, cut, &err), RC_EINVALID);
        assert_null(t);
    }
    free(y1);
    free(y2);
    cJSON_Delete(back);
    rc_arena_release(&a);
}

static void check_round_trip(const char *name, const cJSON *tree)
{
    char *y1 = emit(tree), *y2;
    struct rd_docs *d = NULL;
    struct rc_err err = RC_ERR_INIT;
    int rc = rd_yaml_load(&d, name, y1, strlen(y1), NULL, NULL, &err);

    if (rc != RC_OK)
        print_error("%s: reload: %s\n--- emitted:\n%s\n", name, err.msg, y1);
    assert_int_equal(rc, RC_OK);
    if (cJSON_IsNull(tree)) {
        assert_int_equal(rd_docs_count(d), 0);
    } else {
        assert_int_equal(rd_docs_count(d), 1);
        if (!rd_yaml_equal(tree, rd_docs_get(d, 0)))
            print_error("%s: tree changed\n--- emitted:\n%s\n", name, y1);
        assert_true(rd_yaml_equal(tree, rd_docs_get(d, 0)));
        assert_true(cJSON_Compare(tree, rd_docs_get(d, 0), 1) || isnan(tree->valuedouble) ||
                    strstr(y1, "nan"));
        y2 = emit(rd_docs_get(d, 0));
        if (strcmp(y1, y2) != 0)
            print_error("%s: not a fixed point\n--- first:\n%s\n--- second:\n%s\n", name, y1, y2);
        assert_string_equal(y1, y2);
        free(y2);
    }
    check_pack_round_trip(name, tree);
    rd_docs_free(d);
    free(y1);
}

static char *read_text(const char *path, size_t *len)
{
    struct rc_buf b = RC_BUF_INIT;
    struct rc_err err = RC_ERR_INIT;

    if (rc_buf_read_file(&b, path, &err) != RC_OK)
        print_error("%s\n", err.msg);
    assert_int_equal(err.code, RC_OK);
    return rc_buf_detach(&b, len);
}

/* ${VAR} -> "x" (the skyray files are templates) */
static char *substitute(const char *s)
{
    static const char *const any_x[] = {"*=x", NULL};

    return th_inputs_subst(s, any_x);
}

/* ==== loading: scalars ==== */

static void test_rd_yaml__scalar_types(void **state)
{
    static const struct {
        const char *text;
        int type; /* cJSON type */
        double num;
        const char *str;
    } cases[] = {
        {"true", cJSON_True, 0, NULL},
        {"True", cJSON_True, 0, NULL},
        {"TRUE", cJSON_True, 0, NULL},
        {"false", cJSON_False, 0, NULL},
        {"yes", cJSON_True, 0, NULL},
        {"No", cJSON_False, 0, NULL},
        {"on", cJSON_True, 0, NULL},
        {"OFF", cJSON_False, 0, NULL},
        {"y", cJSON_True, 0, NULL},
        {"n", cJSON_False, 0, NULL},
        {"tRue", cJSON_String, 0, "tRue"},
        {"\"true\"", cJSON_String, 0, "true"},
        {"'yes'", cJSON_String, 0, "yes"},
        {"!!str true", cJSON_String, 0, "true"},
        {"!!str 12", cJSON_String, 0, "12"},
        {"null", cJSON_NULL, 0, NULL},
        {"Null", cJSON_NULL, 0, NULL},
        {"~", cJSON_NULL, 0, NULL},
        {"", cJSON_NULL, 0, NULL},
        {"'null'", cJSON_String, 0, "null"},
        {"12", cJSON_Number, 12, NULL},
        {"-12", cJSON_Number, -12, NULL},
        {"+12", cJSON_Number, 12, NULL},
        {"0x1F", cJSON_Number, 31, NULL},
        {"0o17", cJSON_Number, 15, NULL},
        {"0644", cJSON_Number, 420, NULL},
        {"0b101", cJSON_Number, 5, NULL},
        {"1_000", cJSON_Number, 1000, NULL},
        {"1.5", cJSON_Number, 1.5, NULL},
        {"1e3", cJSON_Number, 1000, NULL},
        {"-.5", cJSON_Number, -0.5, NULL},
        {".5", cJSON_Number, 0.5, NULL},
        {"6.", cJSON_Number, 6, NULL},
        {"9223372036854775807", cJSON_Number, 9223372036854775807.0, NULL},
        {"18446744073709551615", cJSON_Number, 18446744073709551615.0, NULL},
        {"1e400", cJSON_String, 0, "1e400"},
        {"0x", cJSON_String, 0, "0x"},
        {"08", cJSON_Number, 8, NULL},
        {"1.5.5Gi", cJSON_String, 0, "1.5.5Gi"},
        {"12G", cJSON_String, 0, "12G"},
        {"500m", cJSON_String, 0, "500m"},
        {"2001-12-14", cJSON_String, 0, "2001-12-14"},
        {"\"12\"", cJSON_String, 0, "12"},
        {"'3'", cJSON_String, 0, "3"},
        {"!!int '3'", cJSON_Number, 3, NULL},
        {"!!float 3", cJSON_Number, 3, NULL},
        {"!!binary aGVsbG8=", cJSON_String, 0, "hello"}, /* kubectl: "hello" */
        {"!custom 12", cJSON_String, 0, "12"},           /* kubectl: "12" */
        {"!!timestamp 2024-01-01", cJSON_String, 0, "2024-01-01"},
        {"-x", cJSON_String, 0, "-x"},
        {"+", cJSON_String, 0, "+"},
        {"v1", cJSON_String, 0, "v1"},
    };
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char text[128];
        struct rd_docs *d;
        const cJSON *v;

        snprintf(text, sizeof(text), "k: %s\n", cases[i].text);
        d = load_ok(text);
        assert_int_equal(rd_docs_count(d), 1);
        v = cJSON_GetObjectItemCaseSensitive(rd_docs_get(d, 0), "k");
        assert_non_null(v);
        if ((v->type & 0xFF) != cases[i].type)
            print_error("'%s': type %d, want %d\n", cases[i].text, v->type & 0xFF, cases[i].type);
        assert_int_equal(v->type & 0xFF, cases[i].type);
        if (cases[i].type == cJSON_Number)
            assert_true(v->valuedouble == cases[i].num);
        if (cases[i].str)
            assert_string_equal(v->valuestring, cases[i].str);
        rd_docs_free(d);
    }
}

/* kubectl refuses .inf and .nan values ("json: unsupported value: +Inf"): so does the
 * loader, with the place; as keys they are the text kubectl makes of them. */
static void test_rd_yaml__special_floats(void **state)
{
    struct rd_docs *d = load_ok("\".inf\": a\n.Inf: b\n-.INF: c\n.NaN: d\ne: [\".nan\"]\n");
    const cJSON *r = rd_docs_get(d, 0);
    cJSON *n = cJSON_CreateNumber(0);
    struct rc_buf b = RC_BUF_INIT;
    struct rc_err err = RC_ERR_INIT;

    (void)state;
    load_fails("a: 1\nb: .inf\n", 13, NULL,
               "t.yaml:2:4: .inf has no JSON form and kubectl refuses it");
    load_fails("a: [1, -.Inf]\n", 14, NULL, "t.yaml:1:8: -.inf has no JSON form");
    load_fails("a:\n  b: .NaN\n", 13, NULL, "t.yaml:2:6: .nan has no JSON form");
    load_fails("a: &x .nan\n", 11, NULL, "t.yaml:1:4: .nan has no JSON form");
    load_fails("+.INF\n", 6, NULL, "t.yaml:1:1: .inf has no JSON form");
    /* one .inf key and then another: the second is a duplicate */
    assert_int_equal(cJSON_GetArraySize(r), 4);
    assert_string_equal(cJSON_GetObjectItem(r, ".inf")->valuestring, "b");
    assert_string_equal(cJSON_GetObjectItem(r, "-.inf")->valuestring, "c");
    assert_string_equal(cJSON_GetObjectItem(r, ".nan")->valuestring, "d");
    check_round_trip("special floats", r);
    rd_docs_free(d);
    /* trees built in code: neither YAML nor JSON can carry them */
    n->valuedouble = INFINITY;
    assert_int_equal(rd_yaml_emit(&b, n, &err), RC_EINVALID);
    assert_string_equal(err.msg, "number .inf has no JSON form");
    assert_null(rd_json_print(n, &err));
    cJSON_Delete(n);
    rc_buf_release(&b);
}

static void test_rd_yaml__bad_tagged_scalar(void **state)
{
    (void)state;
    load_fails("a: 1\nb: !!int abc\n", 18, NULL, "t.yaml:2:4: cannot read 'abc' as !!int");
    load_fails("a: !!bool 1\n", 12, NULL, "t.yaml:1:4: cannot read '1' as !!bool");
    /* kubectl: "cannot decode !!float `1.0` as a !!int" */
    load_fails("a: !!int 1.0\n", 13, NULL, "t.yaml:1:4: cannot read '1.0' as !!int");
    load_fails("a: !!binary aGVsbG8\n", 20, NULL,
               "t.yaml:1:4: !!binary value contains invalid base64 data");
    load_fails("a: !!binary //79\n", 17, NULL, "t.yaml:1:4: !!binary value is not UTF-8 text");
}

static void test_rd_yaml__nul_in_string_refused(void **state)
{
    (void)state;
    load_fails("a: \"x\\0y\"\n", 10, NULL, "t.yaml:1:4: string contains a NUL character");
}

/* Keys as kubectl makes them (sigs.k8s.io/yaml over go-yaml v2); every expected key was
 * printed by kubectl 1.32: `kubectl label --local -o json -f file.yaml x=y`. */
static void test_rd_yaml__keys_as_kubectl_reads_them(void **state)
{
    static const struct {
        const char *key, *want;
    } cases[] = {
        {"on", "true"},
        {"On", "true"},
        {"y", "true"},
        {"Y", "true"},
        {"yes", "true"},
        {"True", "true"},
        {"n", "false"},
        {"off", "false"},
        {"NO", "false"},
        {"\"on\"", "on"},
        {"'y'", "y"},
        {"!!str on", "on"},
        {"0x10", "16"},
        {"010", "8"},
        {"0b11", "3"},
        {"1_0", "10"},
        {"+1", "1"},
        {"-0", "0"},
        {"9223372036854775807", "9223372036854775807"},
        {"1.0", "1"},
        {"-0.0", "-0"},
        {"1e3", "1000"},
        {"1e6", "1e+06"},
        {"1234567.0", "1.234567e+06"},
        {"0.0001", "0.0001"},
        {"0.00001", "1e-05"},
        {"-1e-10", "-1e-10"},
        {"3.14159265358979", "3.1415927"},
        {"16777217.0", "1.6777216e+07"},
        {"100000000000000000000.0", "1e+20"},
        {"1e300", ".inf"},
        {"!!float 1", "1"},
        {".inf", ".inf"},
        {"-.Inf", "-.inf"},
        {".NaN", ".nan"},
        {"1e400", "1e400"},
        {"2024-01-01", "2024-01-01"},
        {"=", "="},
    };
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char text[128];
        struct rd_docs *d;
        const cJSON *r;

        snprintf(text, sizeof(text), "%s: v\n", cases[i].key);
        d = load_ok(text);
        r = rd_docs_get(d, 0);
        if (!r->child || strcmp(r->child->string, cases[i].want) != 0)
            print_error("key %s: '%s', want '%s'\n", cases[i].key, r->child ? r->child->string : "",
                        cases[i].want);
        assert_string_equal(r->child->string, cases[i].want);
        check_round_trip(text, r);
        rd_docs_free(d);
    }
    {
        /* aliases as keys: the anchored value's key text (an exact integer stays exact) */
        struct rd_docs *d = load_ok("a: [&x 9223372032854775807, ? *x, &y on, *y : 2]\n");
        const cJSON *a = cJSON_GetObjectItem(rd_docs_get(d, 0), "a");
        assert_string_equal(cJSON_GetArrayItem(a, 1)->child->string, "9223372032854775807");
        assert_true(cJSON_IsNull(cJSON_GetArrayItem(a, 1)->child));
        assert_string_equal(cJSON_GetArrayItem(a, 3)->child->string, "true");
        check_round_trip("alias keys", rd_docs_get(d, 0));
        rd_docs_free(d);
    }
    /* kubectl: "unsupported map key of type: <nil>" / "... uint64" */
    load_fails("a: 1\n~: v\n", 9, NULL, "t.yaml:2:1: mapping key is null, which kubectl refuses");
    load_fails("null: v\n", 8, NULL, "t.yaml:1:1: mapping key is null");
    load_fails("18446744073709551615: v\n", 24, NULL,
               "t.yaml:1:1: mapping key 18446744073709551615 is an integer beyond int64");
}

/* Integers exact to int64: kept as text past 2^53, written back and sent as JSON digit for
 * digit; beyond int64 kubectl reads a float64, and so does the loader. */
static void test_rd_yaml__integers_exact_to_int64(void **state)
{
    const char *text = "a: 9007199254740993\n"
                       "b: 0x20000000000001\n"
                       "c: -9223372036854775808\n"
                       "d: 9223372036854775807\n"
                       "e: 123_456_789_012_345_678\n"
                       "f: 18446744073709551615\n"
                       "g: !!float 9007199254740993\n"
                       "h: [*x, &x 9007199254740995]\n";
    const char *want_yaml = "a: 9007199254740993\n"
                            "b: 9007199254740993\n"
                            "c: -9223372036854775808\n"
                            "d: 9223372036854775807\n"
                            "e: 123456789012345678\n"
                            "f: 1.8446744073709552e+19\n"
                            "g: 9007199254740992\n"
                            "h:\n"
                            "- 9007199254740995\n"
                            "- 9007199254740995\n";
    const char *want_json = "{\"a\":9007199254740993,\"b\":9007199254740993,"
                            "\"c\":-9223372036854775808,\"d\":9223372036854775807,"
                            "\"e\":123456789012345678,\"f\":18446744073709552000,"
                            "\"g\":9007199254740992,\"h\":[9007199254740995,9007199254740995]}";
    struct rd_docs *d;
    struct rc_err err = RC_ERR_INIT;
    cJSON *r, *near;
    char *y, *j;

    (void)state;
    load_fails(text, strlen(text), NULL, "t.yaml:8:5: unknown anchor 'x'");
    text = "a: 9007199254740993\n"
           "b: 0x20000000000001\n"
           "c: -9223372036854775808\n"
           "d: 9223372036854775807\n"
           "e: 123_456_789_012_345_678\n"
           "f: 18446744073709551615\n"
           "g: !!float 9007199254740993\n"
           "h: [&x 9007199254740995, *x]\n";
    d = load_ok(text);
    r = rd_docs_get(d, 0);
    y = emit(r);
    assert_string_equal(y, want_yaml);
    j = rd_json_print(r, &err);
    assert_non_null(j);
    assert_string_equal(j, want_json);
    check_round_trip("big integers", r);
    /* 2^53 + 1 and 2^53 are the same double but not the same integer */
    near = cJSON_CreateNumber(9007199254740992.0);
    assert_true(near->valuedouble == cJSON_GetObjectItem(r, "a")->valuedouble);
    assert_false(rd_yaml_equal(near, cJSON_GetObjectItem(r, "a")));
    /* code that changes the double does not print a stale text */
    cJSON_SetNumberValue(cJSON_GetObjectItem(r, "a"), 5);
    free(j);
    j = rd_json_print(r, &err);
    assert_non_null(strstr(j, "{\"a\":5,"));
    cJSON_Delete(near);
    free(j);
    free(y);
    rd_docs_free(d);
}

/* Numerals of any length are numbers, as for kubectl: 1 and 200 zeros is 1e+200, a long
 * underflow is 0; a long quoted numeral stays a string and is written quoted. */
static void test_rd_yaml__long_numerals(void **state)
{
    char text[1024], want[1024];
    struct rd_docs *d;
    const cJSON *r;
    cJSON *o;
    char *y;
    int n;

    (void)state;
    n = snprintf(text, sizeof(text), "a: 1%0200d\nb: 1e-100000\nc: 1%0130d_2\nd: \"1%0200d\"\n", 0,
                 0, 0);
    assert_true(n > 0 && (size_t)n < sizeof(text));
    d = load_ok(text);
    r = rd_docs_get(d, 0);
    assert_true(cJSON_IsNumber(cJSON_GetObjectItem(r, "a")));
    assert_true(cJSON_GetObjectItem(r, "a")->valuedouble == 1e200);
    assert_true(cJSON_GetObjectItem(r, "b")->valuedouble == 0);
    assert_true(cJSON_IsNumber(cJSON_GetObjectItem(r, "c")));
    assert_true(cJSON_IsString(cJSON_GetObjectItem(r, "d")));
    check_round_trip("long numerals", r);
    o = cJSON_CreateObject();
    cJSON_AddItemReferenceToObject(o, "d", cJSON_GetObjectItem(r, "d"));
    y = emit(o);
    snprintf(want, sizeof(want), "d: \"1%0200d\"\n", 0);
    assert_string_equal(y, want);
    free(y);
    cJSON_Delete(o);
    rd_docs_free(d);
}

/* rd_json_print writes numbers as Go's encoding/json does (what kubectl sends). */
static void test_rd_yaml__json_print_numbers(void **state)
{
    static const struct {
        double d;
        const char *want;
    } cases[] = {
        {0, "0"},
        {-0.0, "0"},
        {42, "42"},
        {-7, "-7"},
        {0.1, "0.1"},
        {1.5, "1.5"},
        {1.0 / 3, "0.3333333333333333"},
        {0.000001, "0.000001"},
        {1e-7, "1e-7"},
        {-2.25e-7, "-2.25e-7"},
        {1e-10, "1e-10"},
        {1e17, "100000000000000000"},
        {1e20, "100000000000000000000"},
        {1e21, "1e+21"},
        {1.5e300, "1.5e+300"},
        {123456.789, "123456.789"},
        {18446744073709551616.0, "18446744073709552000"},
    };
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        cJSON *n = cJSON_CreateNumber(cases[i].d);
        struct rc_err err = RC_ERR_INIT;
        char *j = rd_json_print(n, &err);
        assert_non_null(j);
        if (strcmp(j, cases[i].want) != 0)
            print_error("%.17g: '%s', want '%s'\n", cases[i].d, j, cases[i].want);
        assert_string_equal(j, cases[i].want);
        free(j);
        cJSON_Delete(n);
    }
}

/* A duplicate that decides which object a document is refuses the file; any other keeps
 * the last value, as kubectl does, with a warning naming both lines. */
static void test_rd_yaml__duplicate_identity_keys_refused(void **state)
{
    static const struct {
        const char *text, *want;
    } bad[] = {
        {"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  name: b\n",
         "t.yaml:5:3: duplicate key 'metadata.name' (also at line 4): it decides which object "
         "this is, so the file is refused"},
        {"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  namespace: a\n  name: x\n"
         "  namespace: b\n",
         "t.yaml:6:3: duplicate key 'metadata.namespace' (also at line 4)"},
        {"kind: ConfigMap\napiVersion: v1\nkind: Secret\n",
         "t.yaml:3:1: duplicate key 'kind' (also at line 1)"},
        {"apiVersion: v1\napiVersion: apps/v1\n",
         "t.yaml:2:1: duplicate key 'apiVersion' (also at line 1)"},
        {"metadata: {name: a}\nkind: X\nmetadata: {name: b}\n",
         "t.yaml:3:1: duplicate key 'metadata' (also at line 1)"},
        {"a: 1\n---\nmetadata:\n  name: a\n  name: a\n",
         "t.yaml:5:3: duplicate key 'metadata.name' (also at line 4)"},
    };
    static const char *const warned[] = {
        "spec:\n  name: a\n  name: b\n",
        "spec:\n  template:\n    metadata:\n      name: a\n      name: b\n",
        "items:\n- metadata:\n    name: a\n    name: b\n",
        "metadata:\n  labels: {}\n  labels: {a: b}\n",
        "on: 1\ntrue: 2\n",
    };
    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        load_fails(bad[i].text, strlen(bad[i].text), NULL, bad[i].want);
    for (size_t i = 0; i < sizeof(warned) / sizeof(warned[0]); i++) {
        struct warns w = {0};
        struct rd_diag diag = {collect_warn, &w};
        struct rd_docs *d = NULL;
        struct rc_err err = RC_ERR_INIT;
        assert_int_equal(
            rd_yaml_load(&d, "t.yaml", warned[i], strlen(warned[i]), NULL, &diag, &err), RC_OK);
        assert_int_equal(w.n, 1);
        assert_non_null(strstr(w.last, "the last value wins"));
        rd_docs_free(d);
    }
    {
        /* merged keys are not duplicates: written ones win */
        const char *text = "base: &b {name: a}\nmetadata:\n  <<: *b\n  name: b\n";
        struct rd_docs *d = load_ok(text);
        assert_string_equal(
            cJSON_GetObjectItem(cJSON_GetObjectItem(rd_docs_get(d, 0), "metadata"), "name")
                ->valuestring,
            "b");
        rd_docs_free(d);
    }
}

/* ==== loading: documents, positions, keys ==== */

static void test_rd_yaml__documents_and_positions(void **state)
{
    const char *text = "# only a comment\n"
                       "---\n"
                       "---\n"
                       "apiVersion: v1\n"
                       "kind: ConfigMap\n"
                       "data:\n"
                       "  list:\n"
                       "  - a\n"
                       "  -   b\n"
                       "---\n"
                       "- 1\n"
                       "...\n";
    struct rd_docs *d = load_ok(text);
    const cJSON *cm, *list;
    struct rd_pos p;

    (void)state;
    assert_int_equal(rd_docs_count(d), 2); /* the empty document is skipped */
    assert_string_equal(rd_docs_file(d), "t.yaml");
    cm = rd_docs_get(d, 0);
    p = rd_docs_pos(d, cm);
    assert_int_equal(p.line, 4);
    assert_int_equal(p.col, 1);
    p = rd_docs_pos(d, cJSON_GetObjectItem(cm, "kind"));
    assert_int_equal(p.line, 5);
    assert_int_equal(p.col, 7);
    list = cJSON_GetObjectItem(cJSON_GetObjectItem(cm, "data"), "list");
    p = rd_docs_pos(d, cJSON_GetArrayItem(list, 1));
    assert_int_equal(p.line, 9);
    assert_int_equal(p.col, 7);
    assert_true(cJSON_IsArray(rd_docs_get(d, 1)));
    p = rd_docs_pos(d, NULL);
    assert_int_equal(p.line, 0);
    rd_docs_free(d);
}

static void test_rd_yaml__take_keeps_positions(void **state)
{
    struct rd_docs *d = load_ok("a: 1\n---\nb:\n  c: 2\n");
    cJSON *t = rd_docs_take(d, 1);
    struct rd_pos p;

    (void)state;
    assert_non_null(t);
    assert_null(rd_docs_get(d, 1));
    assert_null(rd_docs_take(d, 1));
    assert_null(rd_docs_take(d, 7));
    p = rd_docs_pos(d, cJSON_GetObjectItem(cJSON_GetObjectItem(t, "b"), "c"));
    assert_int_equal(p.line, 4);
    assert_int_equal(p.col, 6);
    rd_docs_free(d);
    cJSON_Delete(t);
}

static void test_rd_yaml__duplicate_key_last_wins_with_warning(void **state)
{
    struct warns w = {0};
    struct rd_diag diag = {collect_warn, &w};
    struct rd_docs *d = NULL;
    struct rc_err err = RC_ERR_INIT;
    const char *text = "a: 1\nb: 2\na: 3\n";
    cJSON *r;

    (void)state;
    assert_int_equal(rd_yaml_load(&d, "t.yaml", text, strlen(text), NULL, &diag, &err), RC_OK);
    r = rd_docs_get(d, 0);
    assert_int_equal(cJSON_GetArraySize(r), 2);
    assert_int_equal(cJSON_GetObjectItem(r, "a")->valuedouble, 3);
    assert_int_equal(w.n, 1);
    assert_string_equal(w.last, "t.yaml:3:1: duplicate key 'a' (also at line 1): the last value "
                                "wins");
    rd_docs_free(d);
}

static void test_rd_yaml__skyray_rayjob_duplicate_key(void **state)
{
    struct warns w = {0};
    struct rd_diag diag = {collect_warn, &w};
    struct rd_docs *d = NULL;
    struct rc_err err = RC_ERR_INIT;
    size_t len;
    char *raw =
        read_text(RP_SOURCE_DIR "/tests/data/skyray/deploy-scripts/ray-job.train.yaml", &len);
    char *text = substitute(raw);

    (void)state;
    assert_int_equal(rd_yaml_load(&d, "ray-job.train.yaml", text, strlen(text), NULL, &diag, &err),
                     RC_OK);
    assert_int_equal(w.n, 1);
    assert_non_null(strstr(w.last, "ray-job.train.yaml:93:9: duplicate key 'rayStartParams'"));
    rd_docs_free(d);
    free(text);
    free(raw);
}

static void test_rd_yaml__big_mapping_duplicates_and_merge(void **state)
{
    struct warns w = {0};
    struct rd_diag diag = {collect_warn, &w};
    struct rc_buf b = RC_BUF_INIT;
    struct rd_docs *d = NULL;
    struct rc_err err = RC_ERR_INIT;
    const cJSON *big, *m;

    (void)state;
    rc_buf_puts(&b, "big: &big\n", NULL);
    for (int i = 0; i < 40; i++)
        rc_buf_printf(&b, NULL, "  k%d: %d\n", i, i);
    rc_buf_puts(&b, "  k3: last\n  k30: last\nm:\n", NULL);
    for (int i = 35; i < 50; i++)
        rc_buf_printf(&b, NULL, "  k%d: own\n", i);
    rc_buf_puts(&b, "  <<: *big\n  k36: again\n", NULL);
    assert_int_equal(rd_yaml_load(&d, "t.yaml", b.ptr, b.len, NULL, &diag, &err), RC_OK);
    big = cJSON_GetObjectItem(rd_docs_get(d, 0), "big");
    assert_int_equal(cJSON_GetArraySize(big), 40);
    assert_string_equal(cJSON_GetObjectItem(big, "k3")->valuestring, "last");
    assert_string_equal(cJSON_GetObjectItem(big, "k30")->valuestring, "last");
    assert_int_equal(cJSON_GetObjectItem(big, "k39")->valuedouble, 39);
    m = cJSON_GetObjectItem(rd_docs_get(d, 0), "m");
    assert_int_equal(cJSON_GetArraySize(m), 50);
    assert_string_equal(cJSON_GetObjectItem(m, "k36")->valuestring, "again");
    assert_string_equal(cJSON_GetObjectItem(m, "k35")->valuestring, "own");
    assert_string_equal(cJSON_GetObjectItem(m, "k3")->valuestring, "last");
    assert_int_equal(cJSON_GetObjectItem(m, "k0")->valuedouble, 0);
    assert_int_equal(w.n, 3); /* k3, k30 and k36 (written twice); merged keys do not warn */
    rd_docs_free(d);
    rc_buf_release(&b);
}

static void test_rd_yaml__keys_are_scalar_text(void **state)
{
    struct rd_docs *d = load_ok("1: a\ntrue: b\n\"x y\": c\n");
    const cJSON *r = rd_docs_get(d, 0);

    (void)state;
    assert_string_equal(cJSON_GetObjectItem(r, "1")->valuestring, "a");
    assert_string_equal(cJSON_GetObjectItem(r, "true")->valuestring, "b");
    assert_string_equal(cJSON_GetObjectItem(r, "x y")->valuestring, "c");
    rd_docs_free(d);
    load_fails("? [a]\n: b\n", 10, NULL, "t.yaml:1:3: mapping key is a sequence");
}

/* ==== anchors, aliases, merge keys ==== */

static void test_rd_yaml__anchors_and_merge(void **state)
{
    const char *text = "base: &b\n"
                       "  cpu: 1\n"
                       "  mem: 2Gi\n"
                       "other: &o {gpu: 1}\n"
                       "x:\n"
                       "  <<: *b\n"
                       "  cpu: 4\n"
                       "w:\n"
                       "  cpu: 8\n"
                       "  <<: [*o, *b]\n"
                       "z: *b\n"
                       "k: &name hello\n"
                       "*name : world\n";
    struct rd_docs *d = load_ok(text);
    const cJSON *r = rd_docs_get(d, 0), *x, *y, *z;
    char *y1;

    (void)state;
    x = cJSON_GetObjectItem(r, "x");
    assert_int_equal(cJSON_GetObjectItem(x, "cpu")->valuedouble, 4);
    assert_string_equal(cJSON_GetObjectItem(x, "mem")->valuestring, "2Gi");
    assert_int_equal(cJSON_GetArraySize(x), 2);
    y = cJSON_GetObjectItem(r, "w");
    assert_int_equal(cJSON_GetObjectItem(y, "cpu")->valuedouble, 8);
    assert_int_equal(cJSON_GetObjectItem(y, "gpu")->valuedouble, 1);
    assert_string_equal(cJSON_GetObjectItem(y, "mem")->valuestring, "2Gi");
    z = cJSON_GetObjectItem(r, "z");
    assert_true(cJSON_Compare(z, cJSON_GetObjectItem(r, "base"), 1));
    assert_ptr_not_equal(z, cJSON_GetObjectItem(r, "base"));
    /* the copy's children keep the anchored node's positions; the root gets the alias's */
    assert_int_equal(rd_docs_pos(d, cJSON_GetObjectItem(z, "mem")).line, 3);
    assert_int_equal(rd_docs_pos(d, z).line, 11);
    assert_string_equal(cJSON_GetObjectItem(r, "hello")->valuestring, "world");
    y1 = emit(r);
    assert_null(strstr(y1, "<<"));
    assert_null(strstr(y1, "*"));
    free(y1);
    rd_docs_free(d);
}

static void test_rd_yaml__bad_merge_and_alias(void **state)
{
    (void)state;
    load_fails("a: 1\nb:\n  <<: 3\n", 16, NULL, "t.yaml:3:7: merge key '<<' needs a mapping");
    load_fails("a: *nope\n", 9, NULL, "t.yaml:1:4: unknown anchor 'nope'");
    /* anchors do not cross documents */
    load_fails("a: &x 1\n---\nb: *x\n", 18, NULL, "t.yaml:3:4: unknown anchor 'x'");
}

static char *billion_laughs(void)
{
    struct rc_buf b = RC_BUF_INIT;

    rc_buf_puts(&b,
                "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n",
                NULL);
    for (char c = 'b'; c <= 'j'; c++)
        rc_buf_printf(&b, NULL, "%c: &%c [*%c,*%c,*%c,*%c,*%c,*%c,*%c,*%c,*%c]\n", c, c, c - 1,
                      c - 1, c - 1, c - 1, c - 1, c - 1, c - 1, c - 1, c - 1);
    return rc_buf_detach(&b, NULL);
}

static void test_rd_yaml__billion_laughs_refused(void **state)
{
    char *text = billion_laughs();

    (void)state;
    /* refused as kubectl refuses it, long before the node limit */
    load_fails(text, strlen(text), NULL, "document contains excessive aliasing");
    free(text);
}

/* go-yaml's rule: a document may take most of its nodes from aliases while small, less as it
 * grows; a file of 10 lines cannot become 600,000 nodes. */
static void test_rd_yaml__alias_ratio_as_kubectl(void **state)
{
    struct rc_buf b = RC_BUF_INIT;
    struct rd_docs *docs = NULL;
    struct rc_err err = RC_ERR_INIT;

    (void)state;
    /* 200 aliases of a 4-node list next to 2,000 written nodes: 800 of 2,800 from aliases */
    rc_buf_printf(&b, NULL, "base: &b [1, 2, 3]\nplain:\n");
    for (int i = 0; i < 1000; i++)
        rc_buf_printf(&b, NULL, "- k%d\n", i);
    rc_buf_printf(&b, NULL, "refs:\n");
    for (int i = 0; i < 200; i++)
        rc_buf_printf(&b, NULL, "- *b\n");
    assert_int_equal(rd_yaml_load(&docs, "ok.yaml", b.ptr, b.len, NULL, NULL, &err), RC_OK);
    rd_docs_free(docs);
    rc_buf_release(&b);
    /* ~80,000 nodes from five lines: refused at the first alias over the ratio */
    rc_buf_printf(&b, NULL,
                  "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
                  "b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
                  "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\n"
                  "d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
                  "e: &e [*d, *d, *d, *d, *d, *d]\n");
    load_fails(b.ptr, b.len, NULL, "excessive aliasing");
    rc_buf_release(&b);
}

static void test_rd_yaml__alias_text_amplification_refused(void **state)
{
    struct rc_buf b = RC_BUF_INIT;
    struct rd_yaml_limits lim = RD_YAML_LIMITS_INIT;

    (void)state;
    lim.max_bytes = 1 << 20;
    rc_buf_puts(&b, "a: &a \"", NULL);
    for (int i = 0; i < 500000; i++)
        rc_buf_putc(&b, 'x', NULL);
    rc_buf_puts(&b, "\"\nb: [", NULL);
    for (int i = 0; i < 20; i++)
        rc_buf_puts(&b, "*a,", NULL);
    rc_buf_puts(&b, "*a]\n", NULL);
    load_fails(b.ptr, b.len, &lim, "aliases expand to more than");
    rc_buf_release(&b);
}

/* ==== limits and errors ==== */

static void test_rd_yaml__depth_limit(void **state)
{
    struct rc_buf b = RC_BUF_INIT;
    char want[64];

    (void)state;
    for (int i = 0; i < 100; i++)
        rc_buf_putc(&b, '[', NULL);
    for (int i = 0; i < 100; i++)
        rc_buf_putc(&b, ']', NULL);
    load_fails(b.ptr, b.len, NULL, "t.yaml:1:65: nesting deeper than 64 levels");
    rc_buf_reset(&b);
    /* block style: 70 levels of mappings */
    for (int i = 0; i < 70; i++) {
        for (int j = 0; j < i; j++)
            rc_buf_putc(&b, ' ', NULL);
        rc_buf_puts(&b, "k:\n", NULL);
    }
    snprintf(want, sizeof(want), "t.yaml:%d:%d: nesting deeper than 64 levels", 65, 65);
    load_fails(b.ptr, b.len, NULL, want);
    rc_buf_release(&b);
}

static void test_rd_yaml__depth_through_aliases(void **state)
{
    struct rd_yaml_limits lim = RD_YAML_LIMITS_INIT;
    const char *text = "a: &a [[[1]]]\nb: [[[*a]]]\n";

    (void)state;
    lim.max_depth = 6;
    load_fails(text, strlen(text), &lim,
               "t.yaml:2:7: nesting deeper than 6 levels (through "
               "alias 'a')");
}

static void test_rd_yaml__size_and_document_limits(void **state)
{
    struct rd_yaml_limits lim = RD_YAML_LIMITS_INIT;
    size_t big = 50u << 20;
    char *text = rc_xmalloc(big + 16);

    (void)state;
    memcpy(text, "a: \"", 4);
    memset(text + 4, 'x', big);
    memcpy(text + 4 + big, "\"\n", 2);
    load_fails(text, big + 6, NULL,
               "t.yaml:1:1: input of 52428806 bytes is larger than the limit of 8388608 bytes");
    free(text);
    lim.max_documents = 3;
    load_fails("a: 1\n---\nb: 2\n---\nc: 3\n---\nd: 4\n", 32, &lim,
               "t.yaml:6:1: more than 3 documents in one file");
    lim = (struct rd_yaml_limits)RD_YAML_LIMITS_INIT;
    lim.max_nodes = 10;
    load_fails("[1,2,3,4,5,6,7,8,9,10,11,12]", 28, &lim,
               "t.yaml:1:20: input has more than 10 nodes");
}

static void test_rd_yaml__syntax_errors_name_the_place(void **state)
{
    (void)state;
    load_fails("a:\n\tb: 1\n", 9, NULL, "t.yaml:2:1: found a tab character where indentation");
    load_fails("a: \"open\nb: 2\n", 14, NULL,
               "t.yaml:1:4: found unexpected end of stream while scanning a quoted scalar that "
               "starts here (the input ends at line 3)");
    load_fails("a:\n  b: 1\n c: 2\n", 16, NULL, "t.yaml:3:2: did not find expected key");
    load_fails("a: [1, 2\n", 9, NULL, "t.yaml:2:1: did not find expected ',' or ']'");
    load_fails("a: b: c\n", 8, NULL, "t.yaml:1:5: mapping values are not allowed");
    load_fails("a: \xff\n", 5, NULL, "t.yaml:1:4: invalid leading UTF-8 octet");
}

static void test_rd_yaml__equal_is_strict(void **state)
{
    cJSON *a = cJSON_Parse("{\"x\": 1, \"y\": [true, null, \"s\"]}");
    cJSON *same = cJSON_Parse("{\"x\": 1, \"y\": [true, null, \"s\"]}");
    cJSON *reordered = cJSON_Parse("{\"y\": [true, null, \"s\"], \"x\": 1}");
    cJSON *near = cJSON_Parse("{\"x\": 1.0000000000000002, \"y\": [true, null, \"s\"]}");
    cJSON *n1 = cJSON_CreateNumber(0), *n2 = cJSON_CreateNumber(0);

    (void)state;
    assert_true(rd_yaml_equal(a, same));
    assert_false(rd_yaml_equal(a, reordered)); /* cJSON_Compare says equal */
    assert_true(cJSON_Compare(a, reordered, 1));
    assert_false(rd_yaml_equal(a, near)); /* cJSON_Compare says equal */
    assert_false(rd_yaml_equal(a, NULL));
    assert_true(rd_yaml_equal(NULL, NULL));
    n1->valuedouble = NAN;
    n2->valuedouble = NAN;
    assert_true(rd_yaml_equal(n1, n2));
    cJSON_Delete(a);
    cJSON_Delete(same);
    cJSON_Delete(reordered);
    cJSON_Delete(near);
    cJSON_Delete(n1);
    cJSON_Delete(n2);
}

/* ==== emitting ==== */

static void test_rd_yaml__emit_canonical_form(void **state)
{
    const char *in = "apiVersion: v1\n"
                     "kind: Pod\n"
                     "metadata: {name: p, labels: {app: x}, annotations: {}}\n"
                     "spec:\n"
                     "  containers:\n"
                     "    - name: c\n"
                     "      args: [\"a\", 1, true, null, 2.5, [x, z], []]\n"
                     "      env: [{name: A, value: \"1\"}]\n";
    const char *want = "apiVersion: v1\n"
                       "kind: Pod\n"
                       "metadata:\n"
                       "  name: p\n"
                       "  labels:\n"
                       "    app: x\n"
                       "  annotations: {}\n"
                       "spec:\n"
                       "  containers:\n"
                       "  - name: c\n"
                       "    args:\n"
                       "    - a\n"
                       "    - 1\n"
                       "    - true\n"
                       "    - null\n"
                       "    - 2.5\n"
                       "    - - x\n"
                       "      - z\n"
                       "    - []\n"
                       "    env:\n"
                       "    - name: A\n"
                       "      value: \"1\"\n";
    struct rd_docs *d = load_ok(in);
    char *out = emit(rd_docs_get(d, 0));

    (void)state;
    assert_string_equal(out, want);
    free(out);
    rd_docs_free(d);
}

static void test_rd_yaml__emit_quotes_what_would_change_type(void **state)
{
    static const struct {
        const char *s;
        const char *want;
    } cases[] = {
        {"true", "\"true\""},
        {"yes", "\"yes\""},
        {"Off", "\"Off\""},
        {"1", "\"1\""},
        {"1.0", "\"1.0\""},
        {"0x10", "\"0x10\""},
        {"1_000", "\"1_000\""},
        {"1e3", "\"1e3\""},
        {".inf", "\".inf\""},
        {"null", "\"null\""},
        {"~", "\"~\""},
        {"", "\"\""},
        {" lead", "\" lead\""},
        {"trail ", "\"trail \""},
        {"a: b", "\"a: b\""},
        {"a #b", "\"a #b\""},
        {"long text: here", "\"long text: here\""},
        {"x  #", "\"x  #\""},
        {"#x", "\"#x\""},
        {"-x", "\"-x\""},
        {"?x", "\"?x\""},
        {"[x", "\"[x\""},
        {"{x", "\"{x\""},
        {"*x", "\"*x\""},
        {"&x", "\"&x\""},
        {"!x", "\"!x\""},
        {"|x", "\"|x\""},
        {">x", "\">x\""},
        {"'x", "\"'x\""},
        {"\"x", "\"\\\"x\""},
        {"%x", "\"%x\""},
        {"@x", "\"@x\""},
        {"`x", "\"`x\""},
        {"<<", "\"<<\""},
        {"a:", "\"a:\""},
        {"tab\there", "\"tab\\there\""},
        {"bell\a", "\"bell\\a\""},
        {"\x01", "\"\\x01\""},
        {"...", "\"...\""},
        {"back\\slash", "back\\slash"},
        {"12G", "12G"},
        {"500m", "500m"},
        {"a:b", "a:b"},
        {"a#b", "a#b"},
        {"http://x/y?z=1", "http://x/y?z=1"},
        {"héllo wörld", "héllo wörld"},
        {"2001-12-14", "\"2001-12-14\""},
        {"2001-12-14t21:59:43.10-05:00", "\"2001-12-14t21:59:43.10-05:00\""},
        {"2024-1-1 10:00:00", "\"2024-1-1 10:00:00\""},
        {"1:20", "\"1:20\""},
        {"12:30:45.5", "\"12:30:45.5\""},
        {"-1:20", "\"-1:20\""},
        {"1.2.3", "\"1.2.3\""},
        {".", "\".\""},
        {"1.", "\"1.\""},
        {"=", "\"=\""},
        {"0b_", "\"0b_\""},
        {"0x_1", "\"0x_1\""},
        {"0o17", "\"0o17\""},
        {"0O17", "\"0O17\""},
        {"-0b1", "\"-0b1\""},
        {"1e400", "\"1e400\""},
        {"+.inf", "\"+.inf\""},
        {"-.nan", "\"-.nan\""},
        {"y", "\"y\""},
        {"N", "\"N\""},
        {"on", "\"on\""},
        {"v1.2.3", "v1.2.3"},
        /* a letter first: a null or bool word only within 6 bytes of these letters */
        {"NULL", "\"NULL\""},
        {"FALSE", "\"FALSE\""},
        {"True", "\"True\""},
        {"OFF", "\"OFF\""},
        {"Yes", "\"Yes\""},
        {"nope", "nope"},
        {"offline", "offline"},
        {"Falsehood", "Falsehood"},
        {"abc", "abc"},
        {"name:", "\"name:\""},
        {"name: x", "\"name: x\""},
        {"ray #1", "\"ray #1\""},
        {"word ", "\"word \""},
        {"a...", "a..."},
        {"2024q1", "2024q1"},
        {"a-2024-01-01", "a-2024-01-01"},
        {"1.5Gi", "1.5Gi"},
        {"1:a", "1:a"},
        {"\xe2\x80\xa8", "\"\\L\""},
        {"\xef\xbb\xbf"
         "x",
         "\"\\uFEFFx\""},
    };
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        cJSON *o = cJSON_CreateObject();
        char want[128];
        char *out;
        cJSON_AddStringToObject(o, "k", cases[i].s);
        out = emit(o);
        snprintf(want, sizeof(want), "k: %s\n", cases[i].want);
        assert_string_equal(out, want);
        free(out);
        check_round_trip(cases[i].s, o);
        cJSON_Delete(o);
    }
}

static void test_rd_yaml__emit_block_scalars(void **state)
{
    static const struct {
        const char *s;
        const char *want;
    } cases[] = {
        {"a\nb\n", "k: |\n  a\n  b\n"},
        {"a\nb", "k: |-\n  a\n  b\n"},
        {"a\n\n", "k: |+\n  a\n\n"},
        {"a\n\nb\n", "k: |\n  a\n\n  b\n"},
        {"  indented\nx\n", "k: |2\n    indented\n  x\n"},
        {"\nfirst empty", "k: |2-\n\n  first empty\n"},
        {"\n", "k: \"\\n\"\n"},
        {"a\r\nb", "k: \"a\\r\\nb\"\n"},
        {"\tx\ny", "k: \"\\tx\\ny\"\n"},
        {"x\ty\nz", "k: |-\n  x\ty\n  z\n"},
    };
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        cJSON *o = cJSON_CreateObject();
        char *out;
        cJSON_AddStringToObject(o, "k", cases[i].s);
        out = emit(o);
        assert_string_equal(out, cases[i].want);
        free(out);
        check_round_trip(cases[i].s, o);
        cJSON_Delete(o);
    }
}

static void test_rd_yaml__emit_numbers(void **state)
{
    static const struct {
        double d;
        const char *want;
    } cases[] = {
        {0, "0"},
        {-0.0, "-0.0"},
        {42, "42"},
        {-7, "-7"},
        {1.5, "1.5"},
        {0.1, "0.1"},
        {1e300, "1e+300"},
        {9007199254740992.0, "9007199254740992"},
        {-9007199254740992.0, "-9007199254740992"},
        {1e15, "1000000000000000"},
        {-10, "-10"},
        {18446744073709551616.0, "1.8446744073709552e+19"},
        {1.0 / 3, "0.3333333333333333"},
    };
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        cJSON *n = cJSON_CreateNumber(cases[i].d);
        char want[64];
        char *out = emit(n);
        snprintf(want, sizeof(want), "%s\n", cases[i].want);
        assert_string_equal(out, want);
        free(out);
        check_round_trip(cases[i].want, n);
        cJSON_Delete(n);
    }
}

static void test_rd_yaml__emit_roots_and_empties(void **state)
{
    cJSON *o = cJSON_CreateObject(), *a = cJSON_CreateArray(), *s = cJSON_CreateString("x\ny\n");
    char *out;

    (void)state;
    out = emit(o);
    assert_string_equal(out, "{}\n");
    free(out);
    out = emit(a);
    assert_string_equal(out, "[]\n");
    free(out);
    out = emit(s);
    assert_string_equal(out, "|\n  x\n  y\n");
    free(out);
    check_round_trip("root string", s);
    check_round_trip("root array", a);
    cJSON_Delete(o);
    cJSON_Delete(a);
    cJSON_Delete(s);
}

/* Indentation deeper than the emitter's run of spaces (64) is written in full. */
static void test_rd_yaml__emit_deep_indentation(void **state)
{
    enum { DEPTH = 40 };
    cJSON *root = cJSON_CreateObject(), *at = root;
    char *out, *line, key[16];
    int level = 0;

    (void)state;
    for (int i = 0; i < DEPTH; i++) {
        cJSON *next = cJSON_CreateObject();
        snprintf(key, sizeof(key), "k%d", i);
        cJSON_AddItemToObject(at, key, next);
        at = next;
    }
    cJSON_AddItemToObject(at, "text", cJSON_CreateString("x\ny\n"));
    out = emit(root);
    line = out;
    for (; level < DEPTH; level++) { /* "k<i>:" at 2*i spaces */
        snprintf(key, sizeof(key), "k%d:\n", level);
        assert_int_equal(strspn(line, " "), 2 * level);
        assert_memory_equal(line + 2 * level, key, strlen(key));
        line = strchr(line, '\n') + 1;
    }
    assert_int_equal(strspn(line, " "), 2 * DEPTH); /* "text: |" */
    assert_memory_equal(line + 2 * DEPTH, "text: |\n", 8);
    line = strchr(line, '\n') + 1;
    assert_int_equal(strspn(line, " "), 2 * DEPTH + 2); /* the block's lines, 82 spaces */
    assert_memory_equal(line + 2 * DEPTH + 2, "x\n", 2);
    { /* read back, the same tree (not check_round_trip: cJSON_Compare is exponential in
       * the depth of nested mappings) */
        struct rd_docs *d = NULL;
        struct rc_err err = RC_ERR_INIT;
        char *again;
        assert_int_equal(rd_yaml_load(&d, "deep", out, strlen(out), NULL, NULL, &err), RC_OK);
        assert_true(rd_yaml_equal(root, rd_docs_get(d, 0)));
        again = emit(rd_docs_get(d, 0));
        assert_string_equal(again, out);
        free(again);
        rd_docs_free(d);
    }
    free(out);
    cJSON_Delete(root);
}

static void test_rd_yaml__emit_refuses_invalid_utf8(void **state)
{
    cJSON *o = cJSON_CreateObject();
    struct rc_buf b = RC_BUF_INIT;
    struct rc_err err = RC_ERR_INIT;

    (void)state;
    rc_buf_puts(&b, "keep", NULL);
    cJSON_AddStringToObject(o, "k", "bad \xc3");
    assert_int_equal(rd_yaml_emit(&b, o, &err), RC_EINVALID);
    assert_string_equal(err.msg, "string is not valid UTF-8");
    assert_string_equal(b.ptr, "keep"); /* nothing appended on error */
    rc_buf_release(&b);
    cJSON_Delete(o);
}

static void test_rd_yaml__emit_refuses_raw_nodes(void **state)
{
    cJSON *o = cJSON_CreateObject();
    struct rc_buf b = RC_BUF_INIT;
    struct rc_err err = RC_ERR_INIT;

    (void)state;
    cJSON_AddItemToObject(o, "k", cJSON_CreateRaw("{not: yaml"));
    assert_int_equal(rd_yaml_emit(&b, o, &err), RC_ERROR);
    assert_non_null(strstr(err.msg, "cannot emit a cJSON node of type"));
    assert_int_equal(b.len, 0);
    rc_buf_release(&b);
    cJSON_Delete(o);
}

static void test_rd_yaml__emit_long_key(void **state)
{
    char key[1500];
    cJSON *o = cJSON_CreateObject(), *inner = cJSON_CreateObject();
    char *out;

    (void)state;
    memset(key, 'k', sizeof(key) - 1);
    key[sizeof(key) - 1] = '\0';
    cJSON_AddNumberToObject(inner, "x", 1);
    cJSON_AddItemToObject(o, key, inner);
    cJSON_AddItemToObject(o, "list", cJSON_CreateStringArray((const char *[]){"a", "b"}, 2));
    out = emit(o);
    assert_memory_equal(out, "? kkk", 5);
    free(out);
    check_round_trip("long key", o);
    cJSON_Delete(o);
}

/* ==== round trips ==== */

/* Every .yaml file under dir (its subdirectories too), its text with the fixtures'
 * placeholders substituted, to one_file(path, text); *nfiles counts them. */
static void each_yaml_file(const char *dir, void (*one_file)(const char *path, const char *text),
                           int *nfiles)
{
    DIR *dh = opendir(dir);
    struct dirent *de;

    assert_non_null(dh);
    while ((de = readdir(dh))) {
        char path[1024];
        size_t n = strlen(de->d_name);
        if (de->d_name[0] == '.')
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
        if (n > 5 && strcmp(de->d_name + n - 5, ".yaml") == 0) {
            size_t len;
            char *raw = read_text(path, &len);
            char *text = substitute(raw);
            one_file(path, text);
            free(text);
            free(raw);
            (*nfiles)++;
        } else if (!strchr(de->d_name, '.')) {
            each_yaml_file(path, one_file, nfiles);
        }
    }
    closedir(dh);
}

static void round_trip_file(const char *path, const char *text)
{
    struct rd_docs *d = NULL;
    struct rc_err err = RC_ERR_INIT;
    int rc = rd_yaml_load(&d, path, text, strlen(text), NULL, NULL, &err);

    if (rc != RC_OK)
        print_error("%s\n", err.msg);
    assert_int_equal(rc, RC_OK);
    assert_true(rd_docs_count(d) >= 1);
    for (size_t i = 0; i < rd_docs_count(d); i++)
        check_round_trip(path, rd_docs_get(d, i));
    rd_docs_free(d);
}

static void test_rd_yaml__skyray_round_trip(void **state)
{
    int n = 0;

    (void)state;
    each_yaml_file(RP_SOURCE_DIR "/tests/data/skyray", round_trip_file, &n);
    assert_true(n >= 26);
}

/* ==== Trees built in an arena span (rd_jarena.h) ==== */

/* Every node of a, and b in step: the same positions. */
static void same_positions(const struct rd_docs *da, const cJSON *a, const struct rd_docs *db,
                           const cJSON *b)
{
    for (; a && b; a = a->next, b = b->next) {
        struct rd_pos pa = rd_docs_pos(da, a), pb = rd_docs_pos(db, b);
        assert_int_equal(pa.line, pb.line);
        assert_int_equal(pa.col, pb.col);
        same_positions(da, a->child, db, b->child);
    }
    assert_true(!a && !b);
}

/* Each skyray file loaded inside a span is the tree loaded outside one, node for node and
 * position for position; its nodes and strings are the span's memory and go with it. */
static void span_file(const char *path, const char *text)
{
    struct rd_docs *out = NULL, *in = NULL;
    struct rc_err err = RC_ERR_INIT;
    struct rd_jarena ja;

    assert_int_equal(rd_yaml_load(&out, path, text, strlen(text), NULL, NULL, &err), RC_OK);
    assert_false(rd_jarena_owns(rd_docs_get(out, 0)));
    rd_jarena_begin(&ja);
    assert_int_equal(rd_yaml_load(&in, path, text, strlen(text), NULL, NULL, &err), RC_OK);
    assert_int_equal(rd_docs_count(in), rd_docs_count(out));
    for (size_t i = 0; i < rd_docs_count(in); i++) {
        const cJSON *r = rd_docs_get(in, i);
        assert_true(rd_jarena_owns(r));
        assert_true(rd_jarena_owns(r->child->string));
        assert_true(rd_yaml_equal(r, rd_docs_get(out, i)));
        same_positions(in, r, out, rd_docs_get(out, i));
    }
    /* a tree of the heap freed inside the span goes to free() (ASan checks it) */
    rd_docs_free(out);
    rd_docs_free(in);
    assert_true(ja.bytes > 0);
    rd_jarena_end(&ja);
}

static void test_rd_jarena__skyray_loads_the_same_in_a_span(void **state)
{
    int n = 0;

    (void)state;
    each_yaml_file(RP_SOURCE_DIR "/tests/data/skyray", span_file, &n);
    assert_true(n >= 26);
}

static void *other_thread(void *arg)
{
    cJSON *node = cJSON_CreateString("of another thread");

    *(int *)arg = rd_jarena_owns(node);
    cJSON_Delete(node);
    return NULL;
}

/* Spans nest, belong to their thread, and hold big allocations in chunks of their own. */
static void test_rd_jarena__nesting_threads_and_big_strings(void **state)
{
    struct rd_jarena outer, inner;
    cJSON *before = cJSON_CreateString("before"), *a, *b, *big;
    char *text = rc_xmalloc(300000);
    pthread_t t;
    int owned = -1;

    (void)state;
    memset(text, 'x', 299999);
    text[299999] = '\0';
    rd_jarena_begin(&outer);
    a = cJSON_CreateObject();
    cJSON_AddStringToObject(a, "k", "v");
    assert_true(rd_jarena_owns(a));
    assert_false(rd_jarena_owns(before));
    assert_int_equal(pthread_create(&t, NULL, other_thread, &owned), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    assert_int_equal(owned, 0); /* the other thread allocated from the heap */

    rd_jarena_begin(&inner);
    b = cJSON_CreateArray();
    big = cJSON_CreateString(text);
    cJSON_AddItemToArray(b, big);
    assert_true(rd_jarena_owns(b) && rd_jarena_owns(big->valuestring));
    assert_true(rd_jarena_owns(a)); /* the outer span's memory, seen from the inner one */
    assert_true(inner.bytes >= 300000);
    assert_string_equal(big->valuestring, text);
    cJSON_Delete(b);
    rd_jarena_end(&inner);

    /* the outer span's tree is intact after the inner one went */
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(a, "k")->valuestring, "v");
    assert_false(rd_jarena_owns(text));
    cJSON_Delete(before);
    cJSON_Delete(a);
    rd_jarena_end(&outer);

    /* after the span: the heap again */
    a = cJSON_CreateString("after");
    assert_false(rd_jarena_owns(a));
    cJSON_Delete(a);
    free(text);
}

/* A deterministic PRNG (xorshift64*), so that failures reproduce. */
static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ULL;
}

static void random_string(uint64_t *rng, char *out, size_t max)
{
    static const char *const pieces[] = {
        "a",
        "Z",
        "0",
        "1",
        " ",
        "  ",
        ":",
        ": ",
        "#",
        " #",
        "-",
        "- ",
        "?",
        "[",
        "]",
        "{",
        "}",
        ",",
        "*",
        "&",
        "!",
        "|",
        ">",
        "'",
        "\"",
        "%",
        "@",
        "`",
        "\n",
        "\n\n",
        "\t",
        "\\",
        "~",
        "true",
        "no",
        "null",
        "0x1F",
        "1e3",
        ".inf",
        "1_0",
        "<<",
        "---",
        "...",
        "é",
        "\xe2\x80\xa8",
        "\xc2\x85",
        "\x01",
        "\x7f",
        "\r",
        "\xef\xbb\xbf",
        "\xf0\x9f\x98\x80",
        "\xc2\xa0",
        "=",
    };
    size_t n = rng_next(rng) % 8, len = 0;

    out[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        const char *p = pieces[rng_next(rng) % (sizeof(pieces) / sizeof(pieces[0]))];
        size_t pl = strlen(p);
        if (len + pl + 1 > max)
            break;
        memcpy(out + len, p, pl + 1);
        len += pl;
    }
}

static cJSON *random_tree(uint64_t *rng, int depth)
{
    uint64_t r = rng_next(rng) % (depth > 4 ? 6 : 9);
    char s[96];

    switch (r) {
    case 0:
        return cJSON_CreateNull();
    case 1:
        return cJSON_CreateBool(rng_next(rng) & 1);
    case 2: {
        static const double nums[] = {
            0, 1, -1, 0.5, 1e21, -2.25e-7, 9007199254740993.0, 123456789, -0.0, 3.14159};
        return cJSON_CreateNumber(nums[rng_next(rng) % 10]);
    }
    case 3:
    case 4:
    case 5:
        random_string(rng, s, sizeof(s));
        return cJSON_CreateString(s);
    case 6:
    case 7: {
        cJSON *o = cJSON_CreateObject();
        size_t n = rng_next(rng) % 5;
        for (size_t i = 0; i < n; i++) {
            random_string(rng, s, sizeof(s));
            if (cJSON_GetObjectItemCaseSensitive(o, s))
                continue;
            cJSON_AddItemToObject(o, s, random_tree(rng, depth + 1));
        }
        return o;
    }
    default: {
        cJSON *a = cJSON_CreateArray();
        size_t n = rng_next(rng) % 5;
        for (size_t i = 0; i < n; i++)
            cJSON_AddItemToArray(a, random_tree(rng, depth + 1));
        return a;
    }
    }
}

static void test_rd_yaml__generated_trees_round_trip(void **state)
{
    uint64_t rng = 0x9E3779B97F4A7C15ULL;

    (void)state;
    for (int i = 0;
         i < (getenv("RD_YAML_TREES") ? (int)strtol(getenv("RD_YAML_TREES"), NULL, 10) : 3000);
         i++) {
        cJSON *t = random_tree(&rng, 0);
        char name[32];
        snprintf(name, sizeof(name), "generated tree %d", i);
        check_round_trip(name, t);
        cJSON_Delete(t);
    }
}

/* rd_pack.h: exact numbers survive packing; bytes rd_pack did not write are refused, whole */
static void test_rd_pack__exact_and_refuses_corrupt_bytes(void **state)
{
    struct rd_docs *d = load_ok("big: 9007199254740993\nneg: -9223372036854775808\nf: 0.1\n"
                                "s: \"\"\nl: [1, {a: null, b: true}, []]\nm: {}\n");
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_err err = RC_ERR_INIT;
    const unsigned char *packed = NULL;
    size_t len = 0;
    cJSON *t = NULL;
    unsigned char deep[300], bad[64];
    char *y1, *y2;

    (void)state;
    assert_int_equal(rd_pack(&packed, &len, rd_docs_get(d, 0), &a, &err), RC_OK);
    assert_int_equal(rd_unpack(&t, packed, len, &err), RC_OK);
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(t, "big")->valuestring,
                        "9007199254740993");
    y1 = emit(rd_docs_get(d, 0));
    y2 = emit(t);
    assert_string_equal(y1, y2);
    assert_non_null(strstr(y2, "big: 9007199254740993\n"));
    free(y1);
    free(y2);
    cJSON_Delete(t);
    t = NULL;

    /* trailing bytes */
    memcpy(bad, "nn", 2);
    assert_int_equal(rd_unpack(&t, bad, 2, &err), RC_EINVALID);
    /* a string holding a NUL */
    memcpy(bad, "s\x03a\0b", 5);
    assert_int_equal(rd_unpack(&t, bad, 5, &err), RC_EINVALID);
    /* a length past the input; a count past the input; an unknown tag */
    memcpy(bad, "s\xff\xff\xff\x0f", 5);
    assert_int_equal(rd_unpack(&t, bad, 5, &err), RC_EINVALID);
    memcpy(bad, "[\xff\xff\xff\xff\x0f", 6);
    assert_int_equal(rd_unpack(&t, bad, 6, &err), RC_EINVALID);
    memcpy(bad, "x", 1);
    assert_int_equal(rd_unpack(&t, bad, 1, &err), RC_EINVALID);
    /* a varint longer than a size_t */
    memset(bad, 0xff, sizeof(bad));
    bad[0] = 's';
    assert_int_equal(rd_unpack(&t, bad, sizeof(bad), &err), RC_EINVALID);
    /* nesting beyond RD_PACK_MAX_DEPTH: refused without recursing further */
    for (size_t i = 0; i + 1 < sizeof(deep); i += 2) {
        deep[i] = '[';
        deep[i + 1] = 1;
    }
    assert_int_equal(rd_unpack(&t, deep, sizeof(deep), &err), RC_EINVALID);
    assert_null(t);
    assert_int_equal(rd_unpack(&t, NULL, 0, &err), RC_EINVALID);
    rc_arena_release(&a);
    rd_docs_free(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rd_yaml__scalar_types),
        cmocka_unit_test(test_rd_yaml__special_floats),
        cmocka_unit_test(test_rd_yaml__bad_tagged_scalar),
        cmocka_unit_test(test_rd_yaml__nul_in_string_refused),
        cmocka_unit_test(test_rd_yaml__keys_as_kubectl_reads_them),
        cmocka_unit_test(test_rd_yaml__integers_exact_to_int64),
        cmocka_unit_test(test_rd_yaml__long_numerals),
        cmocka_unit_test(test_rd_yaml__json_print_numbers),
        cmocka_unit_test(test_rd_yaml__duplicate_identity_keys_refused),
        cmocka_unit_test(test_rd_yaml__documents_and_positions),
        cmocka_unit_test(test_rd_yaml__take_keeps_positions),
        cmocka_unit_test(test_rd_yaml__duplicate_key_last_wins_with_warning),
        cmocka_unit_test(test_rd_yaml__skyray_rayjob_duplicate_key),
        cmocka_unit_test(test_rd_yaml__big_mapping_duplicates_and_merge),
        cmocka_unit_test(test_rd_yaml__keys_are_scalar_text),
        cmocka_unit_test(test_rd_yaml__anchors_and_merge),
        cmocka_unit_test(test_rd_yaml__bad_merge_and_alias),
        cmocka_unit_test(test_rd_yaml__billion_laughs_refused),
        cmocka_unit_test(test_rd_yaml__alias_ratio_as_kubectl),
        cmocka_unit_test(test_rd_yaml__alias_text_amplification_refused),
        cmocka_unit_test(test_rd_yaml__depth_limit),
        cmocka_unit_test(test_rd_yaml__depth_through_aliases),
        cmocka_unit_test(test_rd_yaml__size_and_document_limits),
        cmocka_unit_test(test_rd_yaml__syntax_errors_name_the_place),
        cmocka_unit_test(test_rd_yaml__equal_is_strict),
        cmocka_unit_test(test_rd_yaml__emit_canonical_form),
        cmocka_unit_test(test_rd_yaml__emit_quotes_what_would_change_type),
        cmocka_unit_test(test_rd_yaml__emit_block_scalars),
        cmocka_unit_test(test_rd_yaml__emit_numbers),
        cmocka_unit_test(test_rd_yaml__emit_roots_and_empties),
        cmocka_unit_test(test_rd_yaml__emit_deep_indentation),
        cmocka_unit_test(test_rd_yaml__emit_refuses_invalid_utf8),
        cmocka_unit_test(test_rd_yaml__emit_refuses_raw_nodes),
        cmocka_unit_test(test_rd_yaml__emit_long_key),
        cmocka_unit_test(test_rd_yaml__skyray_round_trip),
        cmocka_unit_test(test_rd_yaml__generated_trees_round_trip),
        cmocka_unit_test(test_rd_pack__exact_and_refuses_corrupt_bytes),
        cmocka_unit_test(test_rd_jarena__skyray_loads_the_same_in_a_span),
        cmocka_unit_test(test_rd_jarena__nesting_threads_and_big_strings),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
