/*
 * test_rc_explain.c - `rightplace explain` gives every candidate's verdict although the record
 * lists a bounded few: the full verdicts are recomputed from the deploy commit's capacity
 * snapshot, and labelled as of that snapshot, never as the fleet now.
 *
 * Real git repositories in temp dirs and the real binary.
 */
#include "th.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "th_git.h"
#include "th_rp.h"

#include "rc_banned.h"

#define NCLUSTERS 8

static char *home;

static const char *const policy =
    "apiVersion: policy.elotl.co/v1alpha1\n"
    "kind: SchedulePolicy\n"
    "metadata: {name: capacity}\n"
    "spec:\n"
    "  namespaceSelector:\n"
    "    matchLabels: {kubernetes.io/metadata.name: team}\n"
    "  resourceSelectors:\n"
    "    labelSelectors:\n"
    "    - matchExpressions: [{key: app.kubernetes.io/instance, operator: Exists}]\n"
    "  groupBy: {labelKey: app.kubernetes.io/instance}\n";

static const char *const job =
    "apiVersion: batch/v1\n"
    "kind: Job\n"
    "metadata: {name: train, namespace: team, labels: {app.kubernetes.io/instance: train}}\n"
    "spec:\n"
    "  template:\n"
    "    spec:\n"
    "      restartPolicy: Never\n"
    "      containers:\n"
    "      - {name: c, image: busybox, resources: {requests: {cpu: \"6\"}}}\n";

/* Clusters c0..c7; only c3 and c5 have a node big enough (8 cpu), the rest 4 cpu. */
static char *make_repo(void)
{
    char *repo = th_git_init("explain", 0);
    char path[64], text[512];

    th_write_file(repo, "policy.yaml", policy, (size_t)-1);
    th_write_file(repo, "job.yaml", job, (size_t)-1);
    for (int c = 0; c < NCLUSTERS; c++) {
        snprintf(path, sizeof(path), "fleet/c%d.yaml", c);
        snprintf(text, sizeof(text),
                 "apiVersion: rightplace.dev/v1alpha1\n"
                 "kind: Cluster\n"
                 "metadata: {name: c%d}\n"
                 "spec:\n"
                 "  nodes:\n"
                 "  - {name: node, count: 2, allocatable: {cpu: \"%d\", memory: 16Gi, pods: "
                 "\"110\"}}\n",
                 c, c == 3 || c == 5 ? 8 : 4);
        th_write_file(repo, path, text, (size_t)-1);
    }
    free(th_git_ok(repo, "add", "-A", NULL));
    free(th_git_ok(repo, "commit", "-q", "-m", "fleet", NULL));
    return repo;
}

static void test_rc_explain__full_verdicts_from_the_snapshot(void **state)
{
    char *repo = make_repo();
    char *out = NULL, *err = NULL, *deploy, *record;
    cJSON *arr, *d, *re;

    (void)state;
    assert_int_equal(th_rp(&out, &err, "reconcile", "--repo", repo, "--once", "--no-apply", NULL),
                     0);
    free(out);
    free(err);
    deploy = th_git_ok(repo, "rev-parse", "deploy", NULL);

    /* the record lists the chosen cluster and the three preferred ones passed over */
    record = th_git_show(repo, "deploy", "placements.yaml");
    assert_non_null(record);
    assert_int_equal(th_count(record, "  - cluster: "), 4);
    assert_non_null(strstr(record, "verdictsOmitted: 4\n"));

    assert_int_equal(th_rp(&out, &err, "explain", "--repo", repo, "-o", "json", "team/train", NULL),
                     0);
    arr = cJSON_Parse(out);
    assert_non_null(arr);
    d = cJSON_GetArrayItem(arr, 0);
    assert_non_null(d);
    assert_string_equal(cJSON_GetObjectItem(d, "verdictsFrom")->valuestring, "record");
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(d, "verdicts")), 4);
    re = cJSON_GetObjectItem(d, "recomputed");
    assert_non_null(re);
    assert_string_equal(cJSON_GetObjectItem(re, "snapshotOf")->valuestring, deploy);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(re, "verdicts")), NCLUSTERS);
    cJSON_Delete(arr);
    free(out);
    free(err);

    /* in text, it says which snapshot and that it is not the fleet now */
    assert_int_equal(th_rp(&out, &err, "explain", "--repo", repo, "team/train", NULL), 0);
    assert_non_null(strstr(out, "all 8 candidates, recomputed from the capacity snapshot of "
                                "deploy commit"));
    {
        char shortid[13];
        snprintf(shortid, sizeof(shortid), "%.12s", deploy);
        assert_non_null(strstr(out, shortid));
    }
    assert_non_null(strstr(out, "not as it is now"));
    assert_int_equal(th_count(out, "does-not-fit"), 6 + 3);
    free(out);
    free(err);
    free(record);
    free(deploy);
    th_rm_rf(repo);
    free(repo);
}

/* A decision not yet committed shows its verdicts as the fleet now, and says so. */
static void test_rc_explain__uncommitted_decision_is_the_fleet_now(void **state)
{
    char *repo = make_repo();
    char *out = NULL, *err = NULL;
    cJSON *arr, *d;

    (void)state;
    assert_int_equal(th_rp(&out, &err, "explain", "--repo", repo, "-o", "json", "team/train", NULL),
                     0);
    arr = cJSON_Parse(out);
    d = cJSON_GetArrayItem(arr, 0);
    assert_non_null(d);
    assert_string_equal(cJSON_GetObjectItem(d, "verdictsFrom")->valuestring, "now");
    assert_null(cJSON_GetObjectItem(d, "recomputed"));
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(d, "verdicts")), NCLUSTERS);
    cJSON_Delete(arr);
    free(out);
    free(err);
    assert_int_equal(th_rp(&out, &err, "explain", "--repo", repo, "team/train", NULL), 0);
    assert_non_null(strstr(out, "candidates (against the fleet now):"));
    assert_non_null(strstr(out, "not yet committed"));
    free(out);
    free(err);
    th_rm_rf(repo);
    free(repo);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rc_explain__full_verdicts_from_the_snapshot),
        cmocka_unit_test(test_rc_explain__uncommitted_decision_is_the_fleet_now),
    };
    int rc;

    home = th_git_env_setup();
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    th_rm_rf(home);
    free(home);
    return rc;
}
