/*
 * test_rc_warnings.c - a pass's warnings reach every place a person looks: standard error
 * (the log), `plan` (text and JSON), `explain` (the warnings about that workload), the
 * deploy commit's message and placements.yaml, with file and line.
 *
 * The repository is examples/repo plus one file: a policy with fields Nova does not have
 * at several depths (spec, groupBy, resourceSelectors) and an override whose path does not exist,
 * which overlaps the example's fill-and-spill policy for rayjob3's RayJob.
 */
#include "th.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rc_buf.h"
#include "th_git.h"
#include "th_inputs.h"
#include "th_rp.h"

/* unknown fields (warnings with their lines), and a policy that overlaps the example's */
#define OVERLAP_POLICY "tests/data/warnings/overlap-policy.yaml"

static const char rayjob3[] = "apiVersion: v1\n"
                              "kind: ConfigMap\n"
                              "metadata:\n"
                              "  name: extra\n"
                              "  namespace: rayjob3\n"
                              "  labels: {app.kubernetes.io/instance: rayjob}\n"
                              "data: {k: v}\n";

static char *warned_repo(void)
{
    char *repo = th_example_repo();
    char *overlap = th_inputs_read(OVERLAP_POLICY, NULL);
    char *id = th_git_commit_files(repo, "a policy with warnings", "policies/overlap.yaml", overlap,
                                   "fill-and-spill/extra.yaml", rayjob3, NULL);
    free(id);
    free(overlap);
    return repo;
}

static void test_rc_warnings__plan_explain_log_commit(void **state)
{
    char *repo = warned_repo();
    char *out = NULL, *err = NULL, *msg, *rec;
    (void)state;

    /* plan: every warning, with file:line, on stdout; the log repeats them on stderr */
    assert_int_equal(th_rp(&out, &err, "plan", "--repo", repo, NULL), 1);
    assert_non_null(strstr(out, "warnings:"));
    assert_non_null(strstr(out, "policies/overlap.yaml:8:21: unknown field "
                                "'spec.resourceSelectors.fieldSelectors'"));
    assert_non_null(strstr(out, "policies/overlap.yaml:9:"));
    assert_non_null(strstr(out, "'spec.groupBy.label'"));
    assert_non_null(
        strstr(out, "policies/overlap.yaml:10:19: unknown field 'spec.clusterSelectr'"));
    assert_non_null(strstr(out, "override of 'rayjob3/ConfigMap/extra' on static-cluster: "
                                "fieldPath 'data.list[0]': no 'list' in the object"));
    assert_non_null(strstr(out, "fill-and-spill/extra.yaml:1: object 'rayjob3/ConfigMap/extra' "
                                "matches policies 'aaa-overlap' and"));
    assert_non_null(strstr(err, "'spec.groupBy.label'"));
    free(out);
    free(err);
    out = err = NULL;
    assert_int_equal(th_rp(&out, NULL, "plan", "--repo", repo, "-o", "json", NULL), 1);
    assert_non_null(strstr(out, "\"warnings\""));
    assert_non_null(strstr(out, "spec.groupBy.label"));
    free(out);
    out = NULL;

    /* explain: the warnings about that workload (its policy, its objects) */
    assert_int_equal(th_rp(&out, NULL, "explain", "--repo", repo, "rayjob3/extra", NULL), 0);
    assert_non_null(strstr(out, "override: static-cluster: rayjob3/ConfigMap/extra data.list[0]"));
    assert_non_null(strstr(out, "warnings:"));
    assert_non_null(strstr(out, "'spec.groupBy.label'"));
    free(out);
    out = NULL;

    /* the commit message and the record */
    assert_int_equal(th_rp(NULL, &err, "reconcile", "--repo", repo, "--once", "--no-apply", NULL),
                     0);
    assert_non_null(strstr(err, "policies/overlap.yaml:9:"));
    free(err);
    msg = th_git_ok(repo, "log", "-1", "--format=%B", "deploy", NULL);
    assert_non_null(strstr(msg, "\nwarnings:\n"));
    assert_non_null(strstr(msg, "policies/overlap.yaml:8:21: unknown field"));
    assert_non_null(strstr(msg, "matches policies 'aaa-overlap'"));
    rec = th_git_show(repo, "deploy", "placements.yaml");
    assert_non_null(strstr(rec, "spec.groupBy.label"));
    free(msg);
    free(rec);
    th_rm_rf(repo);
    free(repo);
}

/* Count the lines of text that hold needle. */
static size_t count_lines_with(const char *text, const char *needle)
{
    size_t n = 0;

    for (const char *p = text; (p = strstr(p, needle)) != NULL; p += strlen(needle))
        n++;
    return n;
}

/* A file of 3,000 duplicate keys lists its first RD_FILE_WARNINGS_MAX (50) warnings, in order,
 * and one that counts the rest, in the record, the log and `plan`; another file's warnings
 * are all listed. The next pass, which takes the file from the parse cache, lists the same. */
static void test_rc_warnings__a_file_lists_at_most_fifty(void **state)
{
    char *repo = warned_repo();
    char *out = NULL, *err = NULL, *rec, *id, *job3;
    struct rc_buf dupes = RC_BUF_INIT;
    (void)state;

    assert_int_equal(rc_buf_printf(&dupes, NULL,
                                   "apiVersion: v1\nkind: ConfigMap\nmetadata:\n"
                                   "  name: dupes\n  namespace: default\ndata:\n"),
                     0);
    for (int i = 0; i < 3001; i++)
        assert_int_equal(rc_buf_printf(&dupes, NULL, "  k: v%d\n", i), 0);
    id = th_git_commit_files(repo, "3,000 duplicate keys", "dupes.yaml", dupes.ptr, NULL);
    free(id);
    assert_int_equal(th_rp(&out, NULL, "plan", "--repo", repo, NULL), 1);
    assert_int_equal(count_lines_with(out, "dupes.yaml:"), 51);
    assert_non_null(strstr(out, "dupes.yaml:8:3: duplicate key 'k' (also at line 7)"));
    assert_non_null(strstr(out, "dupes.yaml:57:3: duplicate key 'k' (also at line 56)"));
    assert_null(strstr(out, "dupes.yaml:58:3:"));
    assert_non_null(strstr(out, "dupes.yaml: 2950 more warnings (a file lists at most 50)"));
    assert_non_null(strstr(out, "policies/overlap.yaml:10:19: unknown field"));
    free(out);
    out = NULL;

    assert_int_equal(th_rp(NULL, &err, "reconcile", "--repo", repo, "--once", "--no-apply", NULL),
                     0);
    assert_non_null(strstr(err, "dupes.yaml:8:3: duplicate key"));
    free(err);
    err = NULL;
    rec = th_git_show(repo, "deploy", "placements.yaml");
    assert_int_equal(count_lines_with(rec, "dupes.yaml:"), 51);
    assert_non_null(strstr(rec, "dupes.yaml: 2950 more warnings (a file lists at most 50)"));
    assert_non_null(strstr(rec, "policies/overlap.yaml:10:19: unknown field"));
    free(rec);

    /* a new workload: the record is written again, dupes.yaml's load taken from the cache */
    job3 = th_inputs_read("examples/rayjob3.yaml", NULL);
    id = th_git_commit_files(repo, "rayjob3", "fill-and-spill/rayjob-rayjob3.yaml", job3, NULL);
    free(id);
    free(job3);
    assert_int_equal(th_rp(NULL, &err, "reconcile", "--repo", repo, "--once", "--no-apply",
                           "--log-level", "debug", NULL),
                     0);
    assert_non_null(strstr(err, "load: 1 files parsed"));
    free(err);
    rec = th_git_show(repo, "deploy", "placements.yaml");
    assert_non_null(strstr(rec, "rayjob3"));
    assert_int_equal(count_lines_with(rec, "dupes.yaml:"), 51);
    assert_non_null(strstr(rec, "dupes.yaml:57:3: duplicate key 'k' (also at line 56)"));
    assert_non_null(strstr(rec, "dupes.yaml: 2950 more warnings (a file lists at most 50)"));
    free(rec);
    rc_buf_release(&dupes);
    th_rm_rf(repo);
    free(repo);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rc_warnings__plan_explain_log_commit),
        cmocka_unit_test(test_rc_warnings__a_file_lists_at_most_fifty),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
