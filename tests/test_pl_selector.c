/*
 * test_pl_selector.c - label selectors (matching, validation, kubectl's string syntax,
 * formatting), taints and tolerations, nodeSelector and required node affinity.
 */
#include "th.h"

#include <string.h>

#include "pl_basics.h"
#include "pl_selector.h"
#include "rc_arena.h"
#include "rc_buf.h"
#include "rc_err.h"

/* "k=v,k2=v2" (no spaces) into a sorted label set. */
static struct pl_labels labels(struct rc_arena *a, const char *text)
{
    struct pl_labels l = {0, NULL};
    char *s = rc_arena_strdup(a, text);

    while (*s) {
        char *comma = strchr(s, ','), *eq;
        if (comma)
            *comma = '\0';
        eq = strchr(s, '=');
        assert_non_null(eq);
        *eq = '\0';
        pl_labels_set(&l, a, s, eq + 1);
        if (!comma)
            break;
        s = comma + 1;
    }
    return l;
}

static struct pl_selector parse_ok(struct rc_arena *a, const char *text)
{
    struct pl_selector sel;
    struct rc_err err = RC_ERR_INIT;

    if (pl_selector_parse(&sel, text, a, &err) != RC_OK)
        fail_msg("'%s': %s", text ? text : "(null)", err.msg);
    return sel;
}

static const char *format(struct rc_arena *a, const struct pl_selector *sel)
{
    struct rc_buf b = RC_BUF_INIT;
    struct rc_err err = RC_ERR_INIT;
    const char *s;

    assert_int_equal(pl_selector_format(&b, sel, &err), RC_OK);
    s = rc_arena_strdup(a, b.ptr);
    rc_buf_release(&b);
    return s;
}

/* ==== Matching ==== */

static const char *const label_sets[] = {"", "a=1,b=x", "a=5,env=prod", "env=dev"};

struct mcase {
    const char *selector;
    const char *want; /* one of '0' / '1' per label set above */
};

static const struct mcase mcases[] = {
    {"", "1111"},
    {"a", "0110"},
    {"!a", "1001"},
    {"env=prod", "0010"},
    {"env==prod", "0010"},
    {"env!=prod", "1101"},
    {"env in (prod,dev)", "0011"},
    {"env notin (prod,dev)", "1100"},
    {"env in (prod)", "0010"},
    {"a>3", "0010"},
    {"a<3", "0100"},
    {"a>5", "0000"},
    {"a<5", "0100"},
    {"b>0", "0000"}, /* "x" is not an integer: no match */
    {"b<0", "0000"},
    {"a,env=prod", "0010"},
    {"a,!env", "0100"},
    {"!a,!env", "1000"},
    {"env=", "0000"},
    {"a in (1,5),env!=prod", "0100"},
    {"missing notin (x)", "1111"},
    {"missing!=x", "1111"},
};

static void test_pl_selector__matches_truth_table(void **state)
{
    struct rc_arena a = RC_ARENA_INIT;

    (void)state;
    for (size_t i = 0; i < sizeof(mcases) / sizeof(mcases[0]); i++) {
        struct pl_selector sel = parse_ok(&a, mcases[i].selector);
        for (size_t j = 0; j < 4; j++) {
            struct pl_labels l = labels(&a, label_sets[j]);
            int want = mcases[i].want[j] == '1';
            if (pl_selector_matches(&sel, &l) != want)
                fail_msg("'%s' on {%s}: want %d", mcases[i].selector, label_sets[j], want);
        }
    }
    rc_arena_release(&a);
}

static void test_pl_selector__matches_edge_cases(void **state)
{
    struct rc_arena a = RC_ARENA_INIT;
    struct pl_labels l = labels(&a, "n=-7,m=+3,big=9223372036854775808");
    const char *none[1] = {"x"}, *two[2] = {"1", "2"}, *neg[1] = {"-8"}, *three[1] = {"3"};
    struct pl_requirement r = {"n", PL_OP_IN, 0, NULL};
    struct pl_selector sel = {1, &r};

    (void)state;
    /* In without values never matches; NotIn without values always does */
    assert_int_equal(pl_selector_matches(&sel, &l), 0);
    r.op = PL_OP_NOTIN;
    assert_int_equal(pl_selector_matches(&sel, &l), 1);
    /* Gt/Lt: signed integers as strconv.ParseInt reads them */
    r.op = PL_OP_GT;
    r.nvalues = 1;
    r.values = neg;
    assert_int_equal(pl_selector_matches(&sel, &l), 1); /* -7 > -8 */
    r.op = PL_OP_LT;
    assert_int_equal(pl_selector_matches(&sel, &l), 0);
    r.key = "m";
    r.op = PL_OP_LT;
    r.values = three;
    assert_int_equal(pl_selector_matches(&sel, &l), 0); /* +3 < 3: no */
    r.op = PL_OP_GT;
    r.values = none;
    assert_int_equal(pl_selector_matches(&sel, &l), 0); /* requirement value not an integer */
    r.values = two;
    r.nvalues = 2;
    assert_int_equal(pl_selector_matches(&sel, &l), 0); /* two values: never */
    r.key = "big";
    r.values = neg;
    r.nvalues = 1;
    assert_int_equal(pl_selector_matches(&sel, &l), 0); /* label value out of int64 */
    /* NULL label set is the empty set */
    r.key = "n";
    r.op = PL_OP_DOESNOTEXIST;
    r.nvalues = 0;
    assert_int_equal(pl_selector_matches(&sel, NULL), 1);
    rc_arena_release(&a);
}

/* ==== Validation ==== */

static void test_pl_selector__validate_operators(void **state)
{
    const char *one[1] = {"5"}, *two[2] = {"5", "6"}, *word[1] = {"five"};
    struct pl_requirement r = {"tier", PL_OP_IN, 1, one};
    struct pl_selector sel = {1, &r};
    struct rc_err err = RC_ERR_INIT;

    (void)state;
    assert_int_equal(pl_selector_validate(&sel, 0, &err), RC_OK);
    r.nvalues = 0;
    assert_int_equal(pl_selector_validate(&sel, 0, &err), RC_EINVALID);
    assert_string_equal(err.msg, "operator 'In' on key 'tier' needs at least one value");
    r.op = PL_OP_NOTIN;
    assert_int_equal(pl_selector_validate(&sel, 1, &err), RC_EINVALID);
    assert_string_equal(err.msg, "operator 'NotIn' on key 'tier' needs at least one value");
    r.op = PL_OP_EXISTS;
    assert_int_equal(pl_selector_validate(&sel, 0, &err), RC_OK);
    r.nvalues = 1;
    assert_int_equal(pl_selector_validate(&sel, 0, &err), RC_EINVALID);
    assert_string_equal(err.msg, "operator 'Exists' on key 'tier' takes no values");
    r.op = PL_OP_DOESNOTEXIST;
    assert_int_equal(pl_selector_validate(&sel, 0, &err), RC_EINVALID);
    assert_string_equal(err.msg, "operator 'DoesNotExist' on key 'tier' takes no values");
    r.op = PL_OP_GT;
    assert_int_equal(pl_selector_validate(&sel, 0, &err), RC_EINVALID);
    assert_string_equal(err.msg, "operator 'Gt' on key 'tier' is only allowed in node affinity");
    assert_int_equal(pl_selector_validate(&sel, 1, &err), RC_OK);
    r.op = PL_OP_LT;
    assert_int_equal(pl_selector_validate(&sel, 1, &err), RC_OK);
    r.values = two;
    r.nvalues = 2;
    assert_int_equal(pl_selector_validate(&sel, 1, &err), RC_EINVALID);
    assert_string_equal(err.msg, "operator 'Lt' on key 'tier' needs exactly one value");
    r.values = word;
    r.nvalues = 1;
    assert_int_equal(pl_selector_validate(&sel, 1, &err), RC_EINVALID);
    assert_string_equal(err.msg, "value 'five' of operator 'Lt' on key 'tier' is not an integer");
    r.op = (enum pl_op)42;
    assert_int_equal(pl_selector_validate(&sel, 1, &err), RC_EINVALID);
    /* empty selector is valid */
    sel.n = 0;
    assert_int_equal(pl_selector_validate(&sel, 0, &err), RC_OK);
}

static void test_pl_selector__validate_keys(void **state)
{
    char name63[64], name64[65], prefix253[300], prefix254[300];
    const char *good[] = {"a",
                          "nvidia.com/gpu",
                          "kubernetes.io/metadata.name",
                          "cluster.class",
                          "A_b-c.D9",
                          "x/Y",
                          "1-2.3/4_5",
                          name63,
                          prefix253};
    const char *bad[] = {"",     "/a",           "a/",    "a/b/c",  "-a",       "a-",
                         "a b",  "Nvidia.com/g", "a_b/c", "a..b/c", "-a.com/x", "a.com-/x",
                         ".a/x", "a./x",         "é",     name64,   prefix254,  "a/.b"};
    struct pl_requirement r = {NULL, PL_OP_EXISTS, 0, NULL};
    struct pl_selector sel = {1, &r};
    struct rc_err err = RC_ERR_INIT;

    (void)state;
    memset(name63, 'n', 63);
    name63[63] = '\0';
    memset(name64, 'n', 64);
    name64[64] = '\0';
    memset(prefix253, 'p', 253);
    memcpy(prefix253 + 253, "/name", 6);
    memset(prefix254, 'p', 254);
    memcpy(prefix254 + 254, "/name", 6);
    prefix253[100] = '.';
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        r.key = good[i];
        if (pl_selector_validate(&sel, 0, &err) != RC_OK)
            fail_msg("'%s' refused: %s", good[i], err.msg);
    }
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        r.key = bad[i];
        if (pl_selector_validate(&sel, 0, &err) != RC_EINVALID)
            fail_msg("'%s' accepted", bad[i]);
        assert_non_null(strstr(err.msg, "invalid label key '"));
    }
    r.key = "a/b/c";
    pl_selector_validate(&sel, 0, &err);
    assert_string_equal(err.msg, "invalid label key 'a/b/c': a label key has at most one '/'");
    r.key = "a-";
    pl_selector_validate(&sel, 0, &err);
    assert_string_equal(err.msg, "invalid label key 'a-': name part must start and end with an "
                                 "alphanumeric character");
    r.key = name64;
    pl_selector_validate(&sel, 0, &err);
    assert_non_null(strstr(err.msg, "name part must be at most 63 characters"));
    r.key = prefix254;
    pl_selector_validate(&sel, 0, &err);
    assert_non_null(strstr(err.msg, "prefix part must be at most 253 characters"));
}

/* ==== kubectl's string syntax ==== */

struct pcase {
    const char *text;
    const char *formatted;
};

static const struct pcase pcases[] = {
    {"a=b", "a=b"},
    {"a==b", "a=b"},
    {"a!=b", "a!=b"},
    {"a in (y,x)", "a in (x,y)"},
    {"a notin (x)", "a!=x"},
    {"a notin (x,y)", "a notin (x,y)"},
    {"a", "a"},
    {"!a", "!a"},
    {"  a  in  ( x , y ) , ! b , c = d ", "a in (x,y),!b,c=d"},
    {"\ta\n=\rb", "a=b"},
    {"z=1,a=2", "a=2,z=1"},
    {"b=2,a,b!=3", "a,b=2,b!=3"}, /* sorted by key, stable */
    {"a in (x,x,x)", "a=x"},
    {"a=", "a="},
    {"a=,b", "a=,b"},
    {"a in ()", "a="},
    {"a in (x,)", "a in (,x)"},
    {"a in (,x)", "a in (,x)"},
    {"a notin (x,,y)", "a notin (,x,y)"},
    {"a>5", "a>5"},
    {"a<0", "a<0"},
    {"in=notin", "in=notin"},
    {"notin in (in,notin)", "notin in (in,notin)"},
    {"nvidia.com/gpu.product in (A100,H100)", "nvidia.com/gpu.product in (A100,H100)"},
    {"cluster.class=production", "cluster.class=production"},
    {"kubernetes.io/metadata.name!=dev,tier", "kubernetes.io/metadata.name!=dev,tier"},
    {"", ""},
    {"   ", ""},
};

static void test_pl_selector__parse(void **state)
{
    struct rc_arena a = RC_ARENA_INIT;

    (void)state;
    for (size_t i = 0; i < sizeof(pcases) / sizeof(pcases[0]); i++) {
        struct pl_selector sel = parse_ok(&a, pcases[i].text), again;
        const char *got = format(&a, &sel);
        if (strcmp(got, pcases[i].formatted))
            fail_msg("'%s': formatted '%s', want '%s'", pcases[i].text, got, pcases[i].formatted);
        /* the formatted text parses to the same text again */
        again = parse_ok(&a, got);
        assert_string_equal(format(&a, &again), got);
    }
    rc_arena_release(&a);
}

static void test_pl_selector__parse_structure(void **state)
{
    struct rc_arena a = RC_ARENA_INIT;
    struct pl_selector sel = parse_ok(&a, "tier in (b,a), !gone, x != 1, here, n > 10");

    (void)state;
    assert_int_equal(sel.n, 5);
    assert_string_equal(sel.req[0].key, "gone");
    assert_int_equal(sel.req[0].op, PL_OP_DOESNOTEXIST);
    assert_int_equal(sel.req[0].nvalues, 0);
    assert_string_equal(sel.req[1].key, "here");
    assert_int_equal(sel.req[1].op, PL_OP_EXISTS);
    assert_string_equal(sel.req[2].key, "n");
    assert_int_equal(sel.req[2].op, PL_OP_GT);
    assert_int_equal(sel.req[2].nvalues, 1);
    assert_string_equal(sel.req[2].values[0], "10");
    assert_string_equal(sel.req[3].key, "tier");
    assert_int_equal(sel.req[3].op, PL_OP_IN);
    assert_int_equal(sel.req[3].nvalues, 2);
    assert_string_equal(sel.req[3].values[0], "a");
    assert_string_equal(sel.req[3].values[1], "b");
    assert_string_equal(sel.req[4].key, "x");
    assert_int_equal(sel.req[4].op, PL_OP_NOTIN);
    assert_string_equal(sel.req[4].values[0], "1");
    /* what parse produces validates (Gt only where allowed) */
    assert_int_equal(pl_selector_validate(&sel, 1, NULL), RC_OK);
    assert_int_equal(pl_selector_validate(&sel, 0, NULL), RC_EINVALID);
    sel = parse_ok(&a, "");
    assert_int_equal(sel.n, 0);
    sel = parse_ok(&a, NULL);
    assert_int_equal(sel.n, 0);
    rc_arena_release(&a);
}

struct ecase {
    const char *text;
    const char *msg;
};

static const struct ecase ecases[] = {
    {"a in (x", "invalid selector 'a in (x': expected ',' or ')' at column 8"},
    {"a=b,", "invalid selector 'a=b,': expected a label key or '!' at column 5"},
    {",a", "invalid selector ',a': expected a label key or '!' at column 1"},
    {"a b", "invalid selector 'a b': expected '=', '==', '!=', '>', '<', 'in', 'notin', ',' or the "
            "end at column 3"},
    {"!a=b", "invalid selector '!a=b': expected ',' or the end at column 3"},
    {"!", "invalid selector '!': expected a label key at column 2"},
    {"!!a", "invalid selector '!!a': expected a label key at column 2"},
    {"a in x", "invalid selector 'a in x': expected '(' at column 6"},
    {"a>b", "invalid selector 'a>b': expected an integer at column 3"},
    {"a>", "invalid selector 'a>': expected an integer at column 3"},
    {"a>1.5", "invalid selector 'a>1.5': expected an integer at column 3"},
    {"a=b c", "invalid selector 'a=b c': expected ',' or the end at column 5"},
    {"a in (x y)", "invalid selector 'a in (x y)': expected ',' or ')' at column 9"},
    {"a in (=)", "invalid selector 'a in (=)': expected a value, ',' or ')' at column 7"},
    {"a=(b)", "invalid selector 'a=(b)': expected a value at column 3"},
    {"a==", NULL},
    {"a===b", "invalid selector 'a===b': expected a value at column 4"},
    {"=b", "invalid selector '=b': expected a label key or '!' at column 1"},
    {"a/b/c=d", "invalid selector 'a/b/c=d': invalid label key (a label key has at most one "
                "'/') at column 1"},
    {"a=-b", NULL},
    {"a in (x,-y)", NULL},
    {"a>-5", NULL},
    {"a=b)", "invalid selector 'a=b)': expected ',' or the end at column 4"},
    {"a in (x)(", "invalid selector 'a in (x)(': expected ',' or the end at column 9"},
    {"in", NULL},
};

static void test_pl_selector__parse_errors(void **state)
{
    struct rc_arena a = RC_ARENA_INIT;

    (void)state;
    for (size_t i = 0; i < sizeof(ecases) / sizeof(ecases[0]); i++) {
        struct pl_selector sel = {7, NULL};
        struct rc_err err = RC_ERR_INIT;
        int rc = pl_selector_parse(&sel, ecases[i].text, &a, &err);
        if (!ecases[i].msg) {
            /* accepted: "a==" (empty value), "in" (a key named in) */
            if (!strcmp(ecases[i].text, "a==") || !strcmp(ecases[i].text, "in")) {
                assert_int_equal(rc, RC_OK);
                continue;
            }
            if (rc != RC_EINVALID || !strstr(err.msg, "invalid label value"))
                fail_msg("'%s': rc %d, '%s'", ecases[i].text, rc, err.msg);
            assert_int_equal(sel.n, 7); /* untouched */
            continue;
        }
        if (rc != RC_EINVALID || strcmp(err.msg, ecases[i].msg))
            fail_msg("'%s': rc %d, got '%s', want '%s'", ecases[i].text, rc, err.msg,
                     ecases[i].msg);
        assert_int_equal(sel.n, 7);
    }
    rc_arena_release(&a);
}

static void test_pl_selector__format(void **state)
{
    struct rc_arena a = RC_ARENA_INIT;
    const char *ab[2] = {"a", "b"}, *prod[1] = {"production"}, *five[1] = {"5"};
    struct pl_requirement r[] = {
        {"cluster.class", PL_OP_IN, 1, prod},  {"tier", PL_OP_IN, 2, ab},
        {"tier", PL_OP_NOTIN, 2, ab},          {"gpu", PL_OP_EXISTS, 0, NULL},
        {"spot", PL_OP_DOESNOTEXIST, 0, NULL}, {"cores", PL_OP_GT, 1, five},
        {"cores", PL_OP_LT, 1, five},
    };
    struct pl_selector sel = {2, r}, empty = {0, NULL}, all = {7, r};
    struct rc_buf capped = RC_BUF_INIT;
    struct rc_err err = RC_ERR_INIT;

    (void)state;
    assert_string_equal(format(&a, &sel), "cluster.class=production,tier in (a,b)");
    assert_string_equal(format(&a, &empty), "");
    assert_string_equal(format(&a, &all), "cluster.class=production,tier in (a,b),tier notin "
                                          "(a,b),gpu,!spot,cores>5,cores<5");
    /* deterministic and round-trips */
    assert_string_equal(format(&a, &all), format(&a, &all));
    {
        struct pl_selector back = parse_ok(&a, format(&a, &all));
        assert_string_equal(format(&a, &back), "cluster.class=production,cores>5,cores<5,gpu,"
                                               "!spot,tier in (a,b),tier notin (a,b)");
    }
    /* the buffer's cap is the only error */
    rc_buf_init(&capped, 10);
    assert_int_equal(pl_selector_format(&capped, &all, &err), RC_ERROR);
    rc_buf_release(&capped);
    rc_arena_release(&a);
}

/* ==== Taints and tolerations ==== */

static void test_pl_selector__gpu_taint(void **state)
{
    struct pl_taint gpu = {"nvidia.com/gpu", "true", "NoSchedule"};
    struct pl_toleration tol = {"nvidia.com/gpu", 1, "", "NoSchedule"};

    (void)state;
    /* the skyray GPU worker: {key: nvidia.com/gpu, operator: Exists, effect: NoSchedule} */
    assert_int_equal(pl_tolerates(&tol, 1, &gpu), 1);
    assert_int_equal(pl_tolerates_all(&tol, 1, &gpu, 1), 1);
    /* the head has no tolerations: cannot use the GPU node */
    assert_int_equal(pl_tolerates(NULL, 0, &gpu), 0);
    assert_int_equal(pl_tolerates_all(NULL, 0, &gpu, 1), 0);
    /* Exists with a different effect does not tolerate */
    tol.effect = "NoExecute";
    assert_int_equal(pl_tolerates(&tol, 1, &gpu), 0);
    /* no effect: every effect */
    tol.effect = "";
    assert_int_equal(pl_tolerates(&tol, 1, &gpu), 1);
}

struct tcase {
    struct pl_toleration tol;
    int want; /* tolerates the taint gpu=true:NoSchedule */
};

static void test_pl_selector__toleration_rules(void **state)
{
    const struct pl_taint taint = {"nvidia.com/gpu", "true", "NoSchedule"};
    const struct tcase tc[] = {
        {{"nvidia.com/gpu", 0, "true", "NoSchedule"}, 1},  /* Equal, same value */
        {{"nvidia.com/gpu", 0, "true", ""}, 1},            /* Equal, any effect */
        {{"nvidia.com/gpu", 0, "false", "NoSchedule"}, 0}, /* Equal, other value */
        {{"nvidia.com/gpu", 0, "", "NoSchedule"}, 0},      /* Equal, empty value */
        {{"amd.com/gpu", 1, "", ""}, 0},                   /* other key */
        {{"", 1, "", ""}, 1},                              /* tolerates everything */
        {{"", 1, "", "NoSchedule"}, 1},                    /* every NoSchedule taint */
        {{"", 1, "", "NoExecute"}, 0},
        {{"", 1, "ignored", ""}, 1}, /* Exists ignores the value */
        {{"nvidia.com/gpu", 1, "x", "PreferNoSchedule"}, 0},
        {{NULL, 1, NULL, NULL}, 1}, /* NULL strings read as "" */
    };

    (void)state;
    for (size_t i = 0; i < sizeof(tc) / sizeof(tc[0]); i++) {
        if (pl_tolerates(&tc[i].tol, 1, &taint) != tc[i].want)
            fail_msg("toleration %zu: want %d", i, tc[i].want);
    }
    /* any of several */
    {
        struct pl_toleration several[3] = {tc[2].tol, tc[4].tol, tc[0].tol};
        assert_int_equal(pl_tolerates(several, 2, &taint), 0);
        assert_int_equal(pl_tolerates(several, 3, &taint), 1);
    }
}

static void test_pl_selector__tolerates_all_effects(void **state)
{
    const struct pl_taint taints[] = {
        {"dedicated", "ml", "PreferNoSchedule"},
        {"nvidia.com/gpu", "true", "NoSchedule"},
        {"node.kubernetes.io/unreachable", "", "NoExecute"},
    };
    const struct pl_toleration tols[] = {
        {"nvidia.com/gpu", 1, "", "NoSchedule"},
        {"node.kubernetes.io/unreachable", 1, "", "NoExecute"},
    };

    (void)state;
    assert_int_equal(pl_tolerates_all(NULL, 0, NULL, 0), 1);   /* no taints */
    assert_int_equal(pl_tolerates_all(NULL, 0, taints, 1), 1); /* PreferNoSchedule only */
    assert_int_equal(pl_tolerates_all(tols, 2, taints, 3), 1);
    assert_int_equal(pl_tolerates_all(tols, 1, taints, 3), 0); /* NoExecute untolerated */
    assert_int_equal(pl_tolerates_all(tols + 1, 1, taints, 3), 0);
    assert_int_equal(pl_tolerates_all(tols + 1, 1, taints + 2, 1), 1);
}

/* ==== nodeSelector and required node affinity ==== */

static void test_pl_selector__pod_node_labels(void **state)
{
    struct rc_arena a = RC_ARENA_INIT;
    struct pl_selector terms[3];
    struct pl_pod pod;

    (void)state;
    memset(&pod, 0, sizeof(pod));
    /* no constraints: every node */
    assert_int_equal(pl_pod_node_labels_ok(&pod, NULL), 1);
    /* nodeSelector: every key present and equal */
    pod.node_selector = labels(&a, "disk=ssd,zone=a");
    assert_int_equal(pl_pod_node_labels_ok(&pod, &(struct pl_labels){0, NULL}), 0);
    {
        struct pl_labels n1 = labels(&a, "disk=ssd,zone=a,extra=1");
        struct pl_labels n2 = labels(&a, "disk=hdd,zone=a");
        struct pl_labels n3 = labels(&a, "disk=ssd");
        assert_int_equal(pl_pod_node_labels_ok(&pod, &n1), 1);
        assert_int_equal(pl_pod_node_labels_ok(&pod, &n2), 0);
        assert_int_equal(pl_pod_node_labels_ok(&pod, &n3), 0);
    }
    /* required affinity: any term; terms may use Gt/Lt */
    pod.node_selector.n = 0;
    terms[0] = parse_ok(&a, "zone in (a)");
    terms[1] = parse_ok(&a, "gpu-count>2,gpu-count<8");
    pod.affinity = terms;
    pod.naffinity = 2;
    {
        struct pl_labels b4 = labels(&a, "zone=b,gpu-count=4");
        struct pl_labels b1 = labels(&a, "zone=b,gpu-count=1");
        struct pl_labels b8 = labels(&a, "zone=b,gpu-count=8");
        struct pl_labels a0 = labels(&a, "zone=a");
        assert_int_equal(pl_pod_node_labels_ok(&pod, &b4), 1);
        assert_int_equal(pl_pod_node_labels_ok(&pod, &b1), 0);
        assert_int_equal(pl_pod_node_labels_ok(&pod, &b8), 0);
        assert_int_equal(pl_pod_node_labels_ok(&pod, &a0), 1);
        assert_int_equal(pl_pod_node_labels_ok(&pod, NULL), 0);
        /* nodeSelector and affinity must both hold */
        pod.node_selector = labels(&a, "disk=ssd");
        assert_int_equal(pl_pod_node_labels_ok(&pod, &a0), 0);
        pod.node_selector.n = 0;
        /* an empty term matches no node, as in Kubernetes */
        terms[2].n = 0;
        terms[2].req = NULL;
        pod.affinity = &terms[2];
        pod.naffinity = 1;
        assert_int_equal(pl_pod_node_labels_ok(&pod, &a0), 0);
        pod.affinity = terms + 1;
        pod.naffinity = 2; /* Gt term or the empty one */
        assert_int_equal(pl_pod_node_labels_ok(&pod, &b4), 1);
    }
    rc_arena_release(&a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pl_selector__matches_truth_table),
        cmocka_unit_test(test_pl_selector__matches_edge_cases),
        cmocka_unit_test(test_pl_selector__validate_operators),
        cmocka_unit_test(test_pl_selector__validate_keys),
        cmocka_unit_test(test_pl_selector__parse),
        cmocka_unit_test(test_pl_selector__parse_structure),
        cmocka_unit_test(test_pl_selector__parse_errors),
        cmocka_unit_test(test_pl_selector__format),
        cmocka_unit_test(test_pl_selector__gpu_taint),
        cmocka_unit_test(test_pl_selector__toleration_rules),
        cmocka_unit_test(test_pl_selector__tolerates_all_effects),
        cmocka_unit_test(test_pl_selector__pod_node_labels),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
