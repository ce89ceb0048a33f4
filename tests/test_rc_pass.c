/*
 * test_rc_pass.c - the load path of a pass: work proportional to the change (the quick exit
 * from git object ids, counted in files parsed) and per-file isolation of limits.
 */
#include "th.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "rc_cache.h"
#include "rc_git.h"
#include "rc_pass.h"
#include "th_git.h"
#include "th_rp.h"

#include "rc_banned.h"

static char *home;

/* Files *.yaml under examples/repo: what a full pass parses. */
#define EXAMPLE_FILES 20

struct fx {
    char *repo;
    struct rc_git *g;
    struct rc_cache *cache;
    struct rc_arena a;
};

static void fx_open(struct fx *f, const char *state_dir)
{
    struct rc_err err = RC_ERR_INIT;

    memset(f, 0, sizeof(*f));
    f->repo = th_example_repo();
    assert_int_equal(rc_git_open(&f->g, f->repo, NULL, &err), RC_OK);
    assert_int_equal(rc_cache_new(&f->cache, state_dir, &err), RC_OK);
}

static void fx_close(struct fx *f)
{
    rc_cache_free(f->cache);
    rc_git_free(f->g);
    rc_arena_release(&f->a);
    th_rm_rf(f->repo);
    free(f->repo);
}

static void pass(struct fx *f, struct rc_pass_result *res)
{
    struct rc_pass_options o = RC_PASS_OPTIONS_INIT;
    struct rc_err err = RC_ERR_INIT;
    int rc;

    o.apply = 0;
    o.cache = f->cache;
    rc = rc_pass_run(res, f->g, &o, &f->a, &err);
    if (rc != RC_OK)
        fail_msg("pass: %s", err.msg);
}

static void test_rc_pass__noop_parses_no_manifest(void **state)
{
    struct fx f;
    struct rc_pass_result res;
    char deploy[41];
    (void)state;

    fx_open(&f, NULL);
    pass(&f, &res);
    assert_int_equal(res.committed, 1);
    assert_int_equal(res.skipped, 0);
    assert_int_equal(res.nparsed, EXAMPLE_FILES);
    memcpy(deploy, res.deploy_new, 41);

    /* nothing changed */
    pass(&f, &res);
    assert_int_equal(res.skipped, 1);
    assert_int_equal(res.nparsed, 0);
    assert_int_equal(res.committed, 0);
    assert_string_equal(res.deploy_new, deploy);

    /* a commit that touches no YAML file under the source paths */
    free(th_git_commit_files(f.repo, "docs", "README.md", "new words\n", "notes.txt", "x\n", NULL));
    pass(&f, &res);
    assert_int_equal(res.skipped, 1);
    assert_int_equal(res.nparsed, 0);
    assert_string_equal(res.deploy_new, deploy);

    /* a YAML change is a pass that parses */
    free(th_git_commit_files(f.repo, "label", "infra/namespace-development.yaml",
                             "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: development\n"
                             "  labels: {env: development, team: web}\n",
                             NULL));
    pass(&f, &res);
    assert_int_equal(res.skipped, 0);
    assert_true(res.nparsed > 0);
    fx_close(&f);
}

/* The memo outlives the process (--once runs) and a damaged memo file costs only work. */
static void test_rc_pass__noop_memo_in_state_dir(void **state)
{
    char *dir = th_tmpdir("state");
    char path[4096];
    struct fx f;
    struct rc_pass_result res;
    struct rc_err err = RC_ERR_INIT;
    struct stat st;
    (void)state;

    fx_open(&f, dir);
    pass(&f, &res);
    assert_int_equal(res.nparsed, EXAMPLE_FILES);
    snprintf(path, sizeof(path), "%s/pass-state", dir);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);

    /* a new process: the memo comes from the file */
    rc_cache_free(f.cache);
    assert_int_equal(rc_cache_new(&f.cache, dir, &err), RC_OK);
    pass(&f, &res);
    assert_int_equal(res.skipped, 1);
    assert_int_equal(res.nparsed, 0);

    /* damaged or hostile memo files: ignored, the pass does its work */
    {
        static const char *bad[] = {
            "",
            "garbage\n",
            "rightplace-pass-state 1\nkey 0\n",
            "rightplace-pass-state 1\nkey aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\ncommit "
            "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\nsource "
            "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\ndeploy -\nquiet 1\nerrors 99999999\n",
            "rightplace-pass-state 1\nkey aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\ncommit "
            "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\nsource "
            "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\ndeploy -\nquiet 1\nerrors 1\na%0 b\nkept "
            "0\nend\n",
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
            th_write_file(dir, "pass-state", bad[i], (size_t)-1);
            rc_cache_free(f.cache);
            assert_int_equal(rc_cache_new(&f.cache, dir, &err), RC_OK);
            assert_string_equal(rc_cache_memo(f.cache)->key, "");
        }
    }
    pass(&f, &res);
    assert_int_equal(res.nparsed, EXAMPLE_FILES);
    fx_close(&f);
    th_rm_rf(dir);
    free(dir);
}

/* A broken file is reported by every pass, the skipped ones too. */
static void test_rc_pass__noop_reports_broken_files(void **state)
{
    struct fx f;
    struct rc_pass_result res;
    (void)state;

    fx_open(&f, NULL);
    pass(&f, &res);
    free(th_git_commit_files(f.repo, "oops", "fill-and-spill/rayjob-rayjob1.yaml",
                             "apiVersion: ray.io/v1\nkind: RayJob\nmetadata:\n\tname: x\n", NULL));
    pass(&f, &res);
    assert_int_equal(res.nfile_errors, 1);
    pass(&f, &res);
    assert_int_equal(res.skipped, 1);
    assert_int_equal(res.nparsed, 0);
    assert_int_equal(res.nfile_errors, 1);
    assert_string_equal(res.file_errors[0].path, "fill-and-spill/rayjob-rayjob1.yaml");
    assert_non_null(strstr(res.file_errors[0].msg, "rayjob-rayjob1.yaml:4"));
    fx_close(&f);
}

/* A file over the per-file limit is refused alone, named, without being read; the source as a
 * whole has no fixed cap (100 MB here, over the old 64 MiB). */
static void test_rc_pass__huge_file_refused_alone(void **state)
{
    struct fx f;
    struct rc_pass_result res;
    size_t big = 100u << 20;
    char *data = malloc(big + 1);
    (void)state;

    assert_non_null(data);
    for (size_t i = 0; i < big; i += 64)
        memcpy(data + i, "# padding padding padding padding padding padding padding paddi\n", 64);
    data[big] = '\0';
    fx_open(&f, NULL);
    th_write_file(f.repo, "zz/huge.yaml", data, big);
    free(data);
    free(th_git_ok(f.repo, "add", "-A", NULL));
    free(th_git_ok(f.repo, "commit", "-q", "-m", "huge", NULL));
    pass(&f, &res);
    assert_int_equal(res.committed, 1);
    assert_true(res.placed > 0);
    assert_int_equal(res.nfile_errors, 1);
    assert_string_equal(res.file_errors[0].path, "zz/huge.yaml");
    assert_non_null(strstr(res.file_errors[0].msg, "zz/huge.yaml: file of 104857600 bytes"));
    assert_int_equal(res.nparsed, EXAMPLE_FILES);
    fx_close(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rc_pass__noop_parses_no_manifest),
        cmocka_unit_test(test_rc_pass__noop_memo_in_state_dir),
        cmocka_unit_test(test_rc_pass__noop_reports_broken_files),
        cmocka_unit_test(test_rc_pass__huge_file_refused_alone),
    };
    struct rc_err err = RC_ERR_INIT;
    int rc;

    home = th_git_env_setup();
    assert_int_equal(rc_git_global_init(&err), RC_OK);
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    rc_git_global_shutdown();
    th_rm_rf(home);
    free(home);
    return rc;
}
