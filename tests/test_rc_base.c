/*
 * test_rc_base.c - the base library: error messages, capped buffers, arena, hashes, threads.
 */
#include "th.h"

#include <string.h>

#include "rc_arena.h"
#include "rc_mem.h"
#include "rc_sort.h"
#include "rc_buf.h"
#include "rc_err.h"
#include "rc_esc.h"
#include "rc_hash.h"
#include "rc_log.h"
#include "rc_proc.h"
#include "rc_thread.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

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

/* A message cut to fit says so ("..." at its end, on a character boundary), whether the format,
 * the escaping or a prefix made it too long; one that fits is never marked. */
/* The soft limit on open files is raised to the hard one (rc_proc.h). */
static void test_rc_base__open_files_limit_raised(void **state)
{
    struct rlimit old, low, now;
    unsigned long got;

    (void)state;
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
    if (old.rlim_max != RLIM_INFINITY && old.rlim_max <= 64)
        skip();
    low = old;
    low.rlim_cur = 64;
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
    got = rc_proc_raise_nofile();
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &now), 0);
    assert_int_equal(now.rlim_max, old.rlim_max);
    if (old.rlim_max == RLIM_INFINITY || old.rlim_max > ((rlim_t)1 << 20))
        assert_true(now.rlim_cur >= ((rlim_t)1 << 20));
    else
        assert_int_equal(now.rlim_cur, old.rlim_max);
    assert_true(got == (unsigned long)now.rlim_cur || now.rlim_cur == RLIM_INFINITY);
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
}

/* A file that cannot be opened: not there, the caller's path to fix, or the system's trouble
 * (here: out of descriptors), which a caller may take for an outage that passes. */
static void test_rc_base__read_file_says_why_it_cannot_open(void **state)
{
    char dir[] = "/tmp/rc-base-XXXXXX", loop[64], ok[64];
    struct rc_buf b = RC_BUF_INIT;
    struct rc_err err = RC_ERR_INIT;
    struct rlimit old, low;
    int fd, rc;

    (void)state;
    assert_non_null(mkdtemp(dir));
    snprintf(loop, sizeof(loop), "%s/loop", dir);
    snprintf(ok, sizeof(ok), "%s/ok", dir);
    assert_int_equal(symlink(loop, loop), 0);
    fd = open(ok, O_WRONLY | O_CREAT | O_EXCL, 0600);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "x", 1), 1);
    close(fd);
    assert_int_equal(rc_buf_read_file(&b, "/nonexistent/rc-base", &err), RC_ENOTFOUND);
    assert_int_equal(rc_buf_read_file(&b, loop, &err), RC_EINVALID);
    fd = dup(0);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
    low = old;
    low.rlim_cur = (rlim_t)fd; /* the lowest free descriptor: no open succeeds */
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
    rc = rc_buf_read_file(&b, ok, &err);
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
    assert_int_equal(rc, RC_ERROR);
    assert_non_null(strstr(err.msg, "Too many open files"));
    assert_int_equal(rc_buf_read_file(&b, ok, &err), RC_OK);
    rc_buf_release(&b);
    unlink(loop);
    unlink(ok);
    rmdir(dir);
}

static void test_rc_base__err_cut_short_says_so(void **state)
{
    struct rc_err err = RC_ERR_INIT;
    char path[600], utf8[RC_ERR_MSG_MAX + 8];
    size_t n;
    (void)state;

    memset(path, 'p', sizeof(path) - 1);
    path[sizeof(path) - 1] = '\0';
    rc_err_set(&err, RC_ERROR, "cannot read '%s'", path);
    n = strlen(err.msg);
    assert_int_equal(n, RC_ERR_MSG_MAX - 1);
    assert_string_equal(err.msg + n - 4, "p...");
    assert_memory_equal(err.msg, "cannot read 'ppp", 16);

    /* exactly full is not cut */
    memset(path, 'q', RC_ERR_MSG_MAX - 1);
    path[RC_ERR_MSG_MAX - 1] = '\0';
    rc_err_set(&err, RC_ERROR, "%s", path);
    assert_string_equal(err.msg, path);

    /* a two-byte character across the cut goes whole */
    memset(utf8, 'u', RC_ERR_MSG_MAX - 4);
    memcpy(utf8 + RC_ERR_MSG_MAX - 5, "\xc3\xa9tail", 7);
    utf8[RC_ERR_MSG_MAX + 2] = '\0';
    rc_err_set(&err, RC_ERROR, "%s", utf8);
    n = strlen(err.msg);
    assert_string_equal(err.msg + n - 4, "u...");
    assert_null(memchr(err.msg, 0xc3, n));

    /* escapes that no longer fit */
    memset(path, '\x01', 200);
    path[200] = '\0';
    rc_err_set(&err, RC_EINVALID, "bad '%s'", path);
    assert_int_equal(strlen(err.msg) <= RC_ERR_MSG_MAX - 1, 1);
    assert_string_equal(err.msg + strlen(err.msg) - 3, "...");

    /* a prefix that pushes the end out */
    memset(path, 'r', 250);
    path[250] = '\0';
    rc_err_set(&err, RC_EINVALID, "%s", path);
    assert_null(strstr(err.msg, "..."));
    rc_err_prefix(&err, "%s:%d: ", "f.yaml", 3);
    assert_string_equal(err.msg + strlen(err.msg) - 4, "r...");
    assert_memory_equal(err.msg, "f.yaml:3: rrr", 13);
    assert_int_equal(err.code, RC_EINVALID);

    /* short ones stay as they were */
    rc_err_set(&err, RC_EINVALID, "bad '%s'", "x");
    rc_err_prefix(&err, "%s: ", "f.yaml");
    assert_string_equal(err.msg, "f.yaml: bad 'x'");
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
    /* a reservation within the cap is taken whole, past it up to the cap; what fits then
     * goes in without the buffer moving */
    assert_int_equal(rc_buf_reserve(&b, 100, &err), RC_OK);
    {
        const char *at = b.ptr;
        assert_int_equal(rc_buf_puts(&b, "abcd", &err), RC_OK);
        assert_ptr_equal(b.ptr, at);
    }
    assert_string_equal(b.ptr, "42-xabcd");
    rc_buf_release(&b);
    rc_buf_init(&b, 0);
    assert_int_equal(rc_buf_reserve(&b, 1 << 20, &err), RC_OK);
    {
        const char *at = b.ptr;
        for (int i = 0; i < 1024; i++)
            assert_int_equal(rc_buf_add(&b, "0123456789abcdef", 16, &err), RC_OK);
        assert_ptr_equal(b.ptr, at);
        assert_int_equal(b.len, 16 * 1024);
    }
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
    {
        const char *parts[3] = {"policy", "", "value"};
        assert_string_equal(rc_arena_join(&a, '/', parts, 3), "policy//value");
        assert_string_equal(rc_arena_join(&a, '/', parts, 1), "policy");
        assert_string_equal(rc_arena_join(&a, '/', parts, 0), "");
    }
    rc_arena_release(&a);
    assert_null(a.head);
}

/* A buffer handed to an arena lives as long as the arena, also after it moved to another
 * (LeakSanitizer checks that release frees it), and the arena keeps filling around it. */
static void test_rc_base__arena_take(void **state)
{
    struct rc_arena a = RC_ARENA_INIT, b = RC_ARENA_INIT;
    char *first, *big = rc_xmalloc(1 << 16), *small = rc_xmalloc(8);

    (void)state;
    memset(big, 'x', 1 << 16);
    assert_ptr_equal(rc_arena_take(&b, small, 8), small); /* into an empty arena */
    assert_string_equal(rc_arena_strdup(&b, "then"), "then");
    first = rc_arena_strdup(&a, "first");
    assert_ptr_equal(rc_arena_take(&a, big, 1 << 16), big);
    assert_true(a.used_total >= (1 << 16));
    assert_string_equal(rc_arena_strdup(&a, "second"), "second");
    rc_arena_adopt(&b, &a);
    assert_string_equal(first, "first");
    assert_int_equal(big[(1 << 16) - 1], 'x');
    rc_arena_release(&b);
    rc_arena_release(&a);
}

/* A first block of a given size holds exactly that much; the arena says what it handed out
 * and what its blocks leave unused, taken buffers aside; later blocks grow as usual. */
static void test_rc_base__arena_first_block(void **state)
{
    struct rc_arena a = RC_ARENA_INIT, b = RC_ARENA_INIT;

    (void)state;
    rc_arena_first_block(&a, 100); /* rounded to the alignment: 112 */
    assert_int_equal(rc_arena_bumped(&a), 0);
    assert_int_equal(rc_arena_unused(&a), 112);
    for (int i = 0; i < 7; i++)
        assert_non_null(rc_arena_alloc(&a, 16));
    assert_int_equal(rc_arena_bumped(&a), 112);
    assert_int_equal(rc_arena_unused(&a), 0);
    rc_arena_first_block(&a, 4096); /* not empty: nothing */
    assert_int_equal(rc_arena_unused(&a), 0);
    assert_non_null(rc_arena_take(&a, rc_xmalloc(32), 32));
    assert_int_equal(rc_arena_bumped(&a), 112); /* a taken buffer is not the blocks' */
    assert_non_null(rc_arena_alloc(&a, 1));     /* a block of its own */
    assert_int_equal(rc_arena_bumped(&a), 128);
    assert_true(rc_arena_unused(&a) > 0);
    rc_arena_release(&a);
    /* without it, the first block is 4 KiB whatever the arena holds */
    assert_non_null(rc_arena_alloc(&b, 16));
    assert_int_equal(rc_arena_unused(&b), 4096 - 16);
    rc_arena_release(&b);
}

/* A taken buffer passed on lives as long as the arena it went to and is freed with it, not
 * with the one it left (LeakSanitizer and ASan check both); a buffer an arena did not take,
 * or an arena's own string, does not move. */
static void test_rc_base__arena_pass_on(void **state)
{
    struct rc_arena a = RC_ARENA_INIT, b = RC_ARENA_INIT, c = RC_ARENA_INIT;
    char *big = rc_xmalloc(1 << 16), *other = rc_xmalloc(8), *own;
    size_t held_a;

    (void)state;
    memset(big, 'x', 1 << 16);
    own = rc_arena_strdup(&a, "own");
    assert_ptr_equal(rc_arena_take(&a, big, 1 << 16), big);
    assert_ptr_equal(rc_arena_take(&a, other, 8), other);
    held_a = rc_arena_held(&a);
    assert_int_equal(rc_arena_pass_on(&a, big, &b), 0);
    assert_true(rc_arena_held(&a) <= held_a - (1 << 16));
    assert_true(rc_arena_held(&b) >= (1 << 16));
    assert_int_equal(rc_arena_pass_on(&a, big, &c), -1); /* gone from a already */
    assert_int_equal(rc_arena_pass_on(&a, own, &c), -1); /* not taken: an arena's own */
    assert_int_equal(rc_arena_pass_on(&a, NULL, &c), -1);
    assert_int_equal(rc_arena_held(&c), 0);
    rc_arena_release(&a); /* frees other and own, not big */
    assert_int_equal(big[(1 << 16) - 1], 'x');
    assert_string_equal(rc_arena_strdup(&b, "after"), "after");
    rc_arena_release(&b);
}

/* XXH64 gives what `xxhsum -H64` gives (the values below are its output), at every length
 * class: empty, under 4, under 8, under 32 with a tail, and over 32 with each tail. */
static void test_rc_base__xxh64_matches_xxhsum(void **state)
{
    static const struct {
        const char *text;
        const char *hex;
    } v[] = {
        {"", "ef46db3751d8e999"},
        {"a", "d24ec4f1a98c6e5b"},
        {"abc", "44bc2cf5ad770999"},
        {"abcdefg", "1860940e2902822d"},
        {"012345678901234567890123456789012345678901234", "937a56187cdd5d2e"},
        {"0123456789012345678901234567890", "8b80da128591b789"},
        {"rightplacerightplacerightplacerightplacerightplacerightplacerightplacerightplace"
         "rightplacerightplacerightplacerightplacerightplace",
         "150d5a727b9b486a"},
    };
    char hex[17];

    (void)state;
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        rc_hash_hex(rc_xxh64(v[i].text, strlen(v[i].text)), hex);
        assert_string_equal(hex, v[i].hex);
        assert_true(rc_xxh64_seeded(v[i].text, strlen(v[i].text), 0) ==
                    rc_xxh64(v[i].text, strlen(v[i].text)));
    }
    /* with a seed: the reference algorithm's values (XXH64(data, len, seed)) */
    {
        static const struct {
            const char *text;
            const char *hex;
        } s[] = {
            {"", "c4349fc93c010000"},
            {"abc", "2ed0f59d6b43ac8b"},
            {"0123456789012345678901234567890", "ce460c8d71e1da4e"},
            {"012345678901234567890123456789012345678901234", "c7eeafc02da9b0db"},
        };
        for (size_t i = 0; i < sizeof(s) / sizeof(s[0]); i++) {
            rc_hash_hex(rc_xxh64_seeded(s[i].text, strlen(s[i].text), UINT64_C(0x9E3779B97F4A7C15)),
                        hex);
            assert_string_equal(hex, s[i].hex);
        }
    }
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

/* Control characters, C1 controls, bidirectional overrides and bytes that are not UTF-8 are
 * made visible; everything else (UTF-8 text, backslashes) is kept, and escaping twice is
 * escaping once. */
static void test_rc_base__escape_controls(void **state)
{
    static const struct {
        const char *in, *out;
    } cases[] = {
        {"plain.yaml", "plain.yaml"},
        {"a\x1b[31mred\x1b[0m.yaml", "a\\e[31mred\\e[0m.yaml"},
        {"bell\a cr\r lf\n tab\t del\x7f nul-less\x01",
         "bell\\a cr\\r lf\\n tab\\t del\\x7f nul-less\\x01"},
        {"osc\x1b]0;title\a", "osc\\e]0;title\\a"},
        {"c1 \xc2\x9b"
         "31m",
         "c1 \\u{009b}31m"},
        {"raw \x9b"
         "31m",
         "raw \\x9b31m"},
        {"bidi \xe2\x80\xae"
         "evil",
         "bidi \\u{202e}evil"},
        {"utf8 caf\xc3\xa9"
         " \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80",
         "utf8 caf\xc3\xa9"
         " \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80"},
        {"back\\slash \\e", "back\\slash \\e"},
        {"overlong \xc0\xaf", "overlong \\xc0\\xaf"},
    };
    char out[256], again[256];
    struct rc_buf b = RC_BUF_INIT;
    struct rc_err err = RC_ERR_INIT;

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        rc_esc(out, sizeof(out), cases[i].in);
        assert_string_equal(out, cases[i].out);
        assert_int_equal(rc_esc_needed(out), 0);
        assert_int_equal(rc_esc_needed(cases[i].in), strcmp(cases[i].in, cases[i].out) != 0);
        rc_esc(again, sizeof(again), out);
        assert_string_equal(again, out);
        rc_buf_reset(&b);
        assert_int_equal(rc_buf_add_esc(&b, cases[i].in, strlen(cases[i].in), &err), RC_OK);
        assert_string_equal(b.ptr, cases[i].out);
    }
    rc_buf_release(&b);
    /* truncation never cuts an escape or a character */
    assert_int_equal(rc_esc(out, 5,
                            "ab\x1b"
                            "cd"),
                     4);
    assert_string_equal(out, "ab\\e");
    assert_int_equal(rc_esc(out, 4,
                            "ab\x1b"
                            "cd"),
                     2);
    assert_string_equal(out, "ab");
    assert_int_equal(rc_esc(out, 4, "a\xe6\x97\xa5"), 1);
    assert_string_equal(out, "a");
    /* error messages carry file names: escaped when they are made */
    rc_err_set(&err, RC_EINVALID, "cannot parse '%s'", "x\x1b[2Jy.yaml");
    assert_string_equal(err.msg, "cannot parse 'x\\e[2Jy.yaml'");
}

/* Log lines (text and JSON) never carry a raw control character. */
static void test_rc_base__log_escapes_controls(void **state)
{
    char *text = NULL;
    size_t len = 0;
    struct rc_log log = RC_LOG_INIT;
    struct rc_log_field f[] = {RC_LOG_STR("file", "k\x1b[1m.yaml")};

    (void)state;
    log.out = open_memstream(&text, &len);
    rc_log_warn(&log, "file '%s' \x07 next\nline", "a\x1b[31m\r.yaml");
    log.json = 1;
    rc_log_kv(&log, RC_LOG_WARN, f, 1, "file '%s'", "b\x1b\xc2\x9b.yaml");
    fclose(log.out);
    assert_non_null(strstr(text, "rightplace: warning: file 'a\\e[31m\\r.yaml' \\a next\\nline\n"));
    assert_non_null(strstr(text, "\"msg\":\"file 'b\\\\e\\\\u{009b}.yaml'\""));
    assert_non_null(strstr(text, "\"file\":\"k\\\\e[1m.yaml\""));
    for (size_t i = 0; i < len; i++)
        assert_true(text[i] == '\n' || ((unsigned char)text[i] >= 0x20 && text[i] != 0x7f &&
                                        (unsigned char)text[i] < 0x80));
    free(text);
}

/* A FIFO or a device is refused without a read, so no open or read can wait on it. */
static void test_rc_base__read_file_regular_only(void **state)
{
    char dir[] = "/tmp/rp-base-XXXXXX", fifo[64];
    struct rc_buf b = RC_BUF_INIT;
    struct rc_err err = RC_ERR_INIT;

    (void)state;
    assert_non_null(mkdtemp(dir));
    snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    assert_int_equal(rc_buf_read_file(&b, fifo, &err), RC_EINVALID);
    assert_non_null(strstr(err.msg, "is not a regular file"));
    assert_int_equal(rc_buf_read_file(&b, "/dev/zero", &err), RC_EINVALID);
    assert_int_equal(rc_buf_read_file(&b, dir, &err), RC_EINVALID);
    assert_int_equal(b.len, 0);
    /* a regular file over the cap is refused before it is read */
    rc_buf_init(&b, 4);
    assert_int_equal(rc_buf_read_file(&b, "/etc/passwd", &err), RC_ERROR);
    assert_non_null(strstr(err.msg, "larger than 4 bytes"));
    assert_int_equal(b.len, 0);
    unlink(fifo);
    rmdir(dir);
}

/* rc_sort: a sorted array costs n - 1 comparisons and stays as it is; a few runs are merged
 * in a few comparisons per element; any array gives qsort's order exactly, ties included. */
struct sort_item {
    int key, tag;
};
static size_t sort_calls;

static int cmp_sort_item(const void *x, const void *y)
{
    const struct sort_item *a = x, *b = y;

    sort_calls++;
    return (a->key > b->key) - (a->key < b->key);
}

static void test_rc_base__sort_checks_before_sorting(void **state)
{
    enum { N = 1000 };
    struct sort_item v[N], w[N];

    (void)state;
    for (int i = 0; i < N; i++) {
        v[i].key = i / 3; /* ties */
        v[i].tag = i;
    }
    sort_calls = 0;
    rc_sort(v, N, sizeof(*v), cmp_sort_item);
    assert_int_equal(sort_calls, N - 1);
    for (int i = 0; i < N; i++)
        assert_int_equal(v[i].tag, i);
    /* out of order: qsort's result */
    for (int i = 0; i < N; i++) {
        v[i].key = (i * 7919) % 101;
        v[i].tag = i;
    }
    memcpy(w, v, sizeof(v));
    rc_sort(v, N, sizeof(*v), cmp_sort_item);
    qsort(w, N, sizeof(*w), cmp_sort_item);
    assert_memory_equal(v, w, sizeof(v));
    for (int i = 1; i < N; i++)
        assert_true(v[i - 1].key <= v[i].key);
    rc_sort(v, 0, sizeof(*v), cmp_sort_item);
    rc_sort(v, 1, sizeof(*v), cmp_sort_item);

    /* a few runs (ties across them): merged, in a few comparisons per element, to qsort's
     * order; for every number of runs up to past the merge's limit */
    for (int runs = 2; runs <= 20; runs++) {
        for (int i = 0; i < N; i++) {
            int r = i * runs / N; /* run r holds keys (r * 5) % 7 + k / 50 */
            v[i].key = (r * 5) % 7 + (i - r * N / runs) / 50;
            v[i].tag = i;
        }
        memcpy(w, v, sizeof(v));
        sort_calls = 0;
        rc_sort(v, N, sizeof(*v), cmp_sort_item);
        if (runs <= 4 && sort_calls >= 4 * N)
            fail_msg("%d runs: %zu comparisons", runs, sort_calls);
        qsort(w, N, sizeof(*w), cmp_sort_item);
        assert_memory_equal(v, w, sizeof(v));
    }
}

/* rc_threads_each: every item once, and a slow item holds one thread, not a round: item 0
 * waits for all the others to have run, which rounds of t items would never let happen. */
struct each_fx {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    size_t done;
    int ran[10];
    int waited_ok;
};

static void each_item(void *arg, size_t i)
{
    struct each_fx *f = arg;

    pthread_mutex_lock(&f->mu);
    f->ran[i]++;
    if (i == 0) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += 30; /* a bound, so that a regression fails instead of hanging */
        while (f->done < 9 && pthread_cond_timedwait(&f->cv, &f->mu, &until) == 0)
            ;
        f->waited_ok = f->done == 9;
    } else {
        f->done++;
        pthread_cond_broadcast(&f->cv);
    }
    pthread_mutex_unlock(&f->mu);
}

static void count_item(void *arg, size_t i)
{
    (void)i;
    atomic_fetch_add((atomic_size_t *)arg, 1);
}

static void test_rc_base__threads_each_takes_the_next_item(void **state)
{
    struct each_fx f;
    atomic_size_t n;
    (void)state;

    memset(&f, 0, sizeof(f));
    pthread_mutex_init(&f.mu, NULL);
    pthread_cond_init(&f.cv, NULL);
    rc_threads_each(each_item, &f, 10, 3);
    assert_true(f.waited_ok);
    for (size_t i = 0; i < 10; i++)
        assert_int_equal(f.ran[i], 1);
    pthread_mutex_destroy(&f.mu);
    pthread_cond_destroy(&f.cv);

    atomic_init(&n, 0);
    rc_threads_each(count_item, &n, 0, 8);
    assert_int_equal(atomic_load(&n), 0);
    rc_threads_each(count_item, &n, 5, 64); /* more threads than items */
    assert_int_equal(atomic_load(&n), 5);
    rc_threads_each(count_item, &n, 1000, 1);
    assert_int_equal(atomic_load(&n), 1005);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rc_base__err_is_one_line),
        cmocka_unit_test(test_rc_base__open_files_limit_raised),
        cmocka_unit_test(test_rc_base__read_file_says_why_it_cannot_open),
        cmocka_unit_test(test_rc_base__err_cut_short_says_so),
        cmocka_unit_test(test_rc_base__buf_respects_cap),
        cmocka_unit_test(test_rc_base__arena_strings_and_big_blocks),
        cmocka_unit_test(test_rc_base__arena_take),
        cmocka_unit_test(test_rc_base__arena_first_block),
        cmocka_unit_test(test_rc_base__arena_pass_on),
        cmocka_unit_test(test_rc_base__fnv_is_stable),
        cmocka_unit_test(test_rc_base__xxh64_matches_xxhsum),
        cmocka_unit_test(test_rc_base__escape_controls),
        cmocka_unit_test(test_rc_base__log_escapes_controls),
        cmocka_unit_test(test_rc_base__read_file_regular_only),
        cmocka_unit_test(test_rc_base__sort_checks_before_sorting),
        cmocka_unit_test(test_rc_base__threads_each_takes_the_next_item),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
