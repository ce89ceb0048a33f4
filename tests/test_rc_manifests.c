/*
 * test_rc_manifests.c - the Kubernetes manifests of deploy/kubernetes/ as a cluster would
 * get them, checked without a server: `kubectl kustomize` builds the CronJob and the
 * Deployment variants, and every pod they run is non-root with a read-only root file system
 * and no capabilities, mounts only volumes that exist, reads the repository credentials and
 * the member kubeconfigs from the Secrets of secrets.example.yaml, takes $(VARS) that its
 * ConfigMap defines, and passes the binary only flags `rightplace reconcile --help` lists.
 * Also: every YAML example in README.md and the docs folder loads.
 */
#include "th.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rd_yaml.h"
#include "th_git.h"
#include "th_inputs.h"
#include "th_rp.h"

#include "rc_banned.h"

static struct rd_docs *load_text(const char *name, const char *text)
{
    struct rd_docs *docs = NULL;
    struct rc_err err = RC_ERR_INIT;

    if (rd_yaml_load(&docs, name, text, strlen(text), NULL, NULL, &err) < 0)
        fail_msg("%s does not load: %s", name, err.msg);
    return docs;
}

static struct rd_docs *kustomize(const char *variant)
{
    char dir[4096];
    char *out = NULL, *errout = NULL;
    const char *argv[] = {"kubectl", "kustomize", dir, NULL};
    struct rd_docs *docs;

    snprintf(dir, sizeof(dir), "%s/deploy/kubernetes/%s", RP_SOURCE_DIR, variant);
    if (th_run(NULL, &out, &errout, argv) != 0)
        fail_msg("kubectl kustomize %s: %s", dir, errout);
    docs = load_text(variant, out);
    free(out);
    free(errout);
    return docs;
}

/* o at a dotted path of keys ("spec.template.spec"); NULL when absent. */
static const cJSON *at(const cJSON *o, const char *path)
{
    while (o && *path) {
        char key[128];
        size_t n = strcspn(path, ".");
        snprintf(key, sizeof(key), "%.*s", (int)n, path);
        o = cJSON_GetObjectItemCaseSensitive(o, key);
        path += n + (path[n] == '.');
    }
    return o;
}

static const char *str(const cJSON *o, const char *path)
{
    const cJSON *v = at(o, path);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static const cJSON *find_kind(const struct rd_docs *d, const char *kind, size_t *count)
{
    const cJSON *found = NULL;

    *count = 0;
    for (size_t i = 0; i < rd_docs_count(d); i++) {
        const char *k = str(rd_docs_get(d, i), "kind");
        if (k && !strcmp(k, kind)) {
            found = rd_docs_get(d, i);
            (*count)++;
        }
    }
    return found;
}

/* The ConfigMap's keys, the flags the binary takes: what the pod may refer to. */
struct refs {
    const cJSON *config; /* ConfigMap data */
    char *help;          /* `rightplace reconcile --help` */
};

static void check_pod(const cJSON *pod, const char *what, const struct refs *r)
{
    const cJSON *c, *v, *m, *a;
    size_t ncontainers = 0;

    assert_string_equal(str(pod, "serviceAccountName"), "rightplace");
    if (!cJSON_IsTrue(at(pod, "securityContext.runAsNonRoot")))
        fail_msg("%s: pod securityContext.runAsNonRoot is not true", what);
    if (!cJSON_IsNumber(at(pod, "securityContext.runAsUser")) ||
        at(pod, "securityContext.runAsUser")->valuedouble <= 0)
        fail_msg("%s: pod runs as root", what);
    assert_string_equal(str(pod, "securityContext.seccompProfile.type"), "RuntimeDefault");
    cJSON_ArrayForEach(c, at(pod, "containers"))
    {
        const cJSON *drop = at(c, "securityContext.capabilities.drop");
        ncontainers++;
        if (!cJSON_IsTrue(at(c, "securityContext.readOnlyRootFilesystem")))
            fail_msg("%s: container %s has a writable root file system", what, str(c, "name"));
        if (!cJSON_IsFalse(at(c, "securityContext.allowPrivilegeEscalation")))
            fail_msg("%s: container %s may escalate privileges", what, str(c, "name"));
        if (cJSON_GetArraySize(drop) != 1 || !cJSON_IsString(cJSON_GetArrayItem(drop, 0)) ||
            strcmp(cJSON_GetArrayItem(drop, 0)->valuestring, "ALL"))
            fail_msg("%s: container %s does not drop ALL capabilities", what, str(c, "name"));
        if (!at(c, "resources.limits.memory"))
            fail_msg("%s: container %s has no memory limit", what, str(c, "name"));
        /* every mount names a volume of the pod */
        cJSON_ArrayForEach(m, at(c, "volumeMounts"))
        {
            int found = 0;
            cJSON_ArrayForEach(v, at(pod, "volumes"))
            {
                found |= !strcmp(str(v, "name"), str(m, "name"));
            }
            if (!found)
                fail_msg("%s: mount %s names no volume", what, str(m, "name"));
        }
        /* every $(VAR) in args is defined by the ConfigMap or env; every flag is real */
        cJSON_ArrayForEach(a, at(c, "args"))
        {
            const char *s = a->valuestring, *p;
            assert_non_null(s);
            for (p = strstr(s, "$("); p; p = strstr(p + 2, "$(")) {
                char var[128];
                const char *end = strchr(p, ')');
                assert_non_null(end);
                snprintf(var, sizeof(var), "%.*s", (int)(end - p - 2), p + 2);
                if (!cJSON_GetObjectItemCaseSensitive(r->config, var))
                    fail_msg("%s: $(%s) is not in ConfigMap rightplace", what, var);
            }
            if (!strncmp(s, "--", 2)) {
                char flag[128];
                size_t n = strcspn(s, "=");
                snprintf(flag, sizeof(flag), "%.*s ", (int)n, s);
                if (!strstr(r->help, flag))
                    fail_msg("%s: rightplace reconcile takes no %.*s", what, (int)n, s);
            }
        }
    }
    assert_int_equal(ncontainers, 1);
    /* the kubeconfig Secret is mounted where $RIGHTPLACE_KUBECONFIG_DIR points */
    {
        const char *dir = cJSON_GetStringValue(
            cJSON_GetObjectItemCaseSensitive(r->config, "RIGHTPLACE_KUBECONFIG_DIR"));
        int found = 0;
        assert_non_null(dir);
        cJSON_ArrayForEach(m, at(cJSON_GetArrayItem(at(pod, "containers"), 0), "volumeMounts"))
        {
            found |= !strcmp(str(m, "name"), "kubeconfigs") && !strcmp(str(m, "mountPath"), dir);
        }
        if (!found)
            fail_msg("%s: Secret rightplace-kubeconfigs is not mounted at %s", what, dir);
    }
    /* credentials come from the two Secrets, read-only */
    {
        int git = 0, kc = 0;
        cJSON_ArrayForEach(v, at(pod, "volumes"))
        {
            const char *s = str(v, "secret.secretName");
            git |= s && !strcmp(s, "rightplace-git");
            kc |= s && !strcmp(s, "rightplace-kubeconfigs");
            if (s && (!cJSON_IsNumber(at(v, "secret.defaultMode")) ||
                      ((int)at(v, "secret.defaultMode")->valuedouble & 07) != 0))
                fail_msg("%s: secret volume %s is readable by others", what, s);
        }
        if (!git || !kc)
            fail_msg("%s: the git and kubeconfig Secrets are not both mounted", what);
    }
}

static int has_arg(const cJSON *pod, const char *want)
{
    const cJSON *a;

    cJSON_ArrayForEach(a, at(cJSON_GetArrayItem(at(pod, "containers"), 0), "args"))
    {
        if (cJSON_IsString(a) && !strcmp(a->valuestring, want))
            return 1;
    }
    return 0;
}

static void refs_init(struct refs *r, const struct rd_docs *d)
{
    size_t n;
    const cJSON *cm = find_kind(d, "ConfigMap", &n);
    char *errout = NULL;

    assert_int_equal(n, 1);
    r->config = at(cm, "data");
    assert_non_null(r->config);
    assert_int_equal(th_rp(&r->help, &errout, "reconcile", "--help", NULL), 0);
    free(errout);
}

static void check_common(const struct rd_docs *d)
{
    size_t n;
    const cJSON *ns = find_kind(d, "Namespace", &n);
    const cJSON *sa = find_kind(d, "ServiceAccount", &n);

    assert_non_null(ns);
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
                            at(ns, "metadata.labels"), "pod-security.kubernetes.io/enforce")),
                        "restricted");
    assert_non_null(sa);
    assert_true(cJSON_IsFalse(at(sa, "automountServiceAccountToken")));
    /* no Secret is part of what gets applied: credentials are created by hand */
    find_kind(d, "Secret", &n);
    assert_int_equal(n, 0);
    for (size_t i = 0; i < rd_docs_count(d); i++) {
        const char *k = str(rd_docs_get(d, i), "kind");
        if (strcmp(k, "Namespace"))
            assert_string_equal(str(rd_docs_get(d, i), "metadata.namespace"), "rightplace");
    }
}

static void test_rc_manifests__cronjob(void **state)
{
    struct rd_docs *d = kustomize("cronjob");
    struct refs r;
    size_t n;
    const cJSON *cj;
    const cJSON *pod;
    (void)state;

    refs_init(&r, d);
    check_common(d);
    cj = find_kind(d, "CronJob", &n);
    assert_int_equal(n, 1);
    find_kind(d, "Deployment", &n);
    assert_int_equal(n, 0);
    assert_string_equal(str(cj, "spec.concurrencyPolicy"), "Forbid");
    pod = at(cj, "spec.jobTemplate.spec.template.spec");
    assert_non_null(pod);
    assert_string_equal(str(pod, "restartPolicy"), "Never");
    check_pod(pod, "CronJob", &r);
    assert_true(has_arg(pod, "reconcile"));
    assert_true(has_arg(pod, "--once"));
    free(r.help);
    rd_docs_free(d);
}

static void test_rc_manifests__deployment(void **state)
{
    struct rd_docs *d = kustomize("deployment");
    struct refs r;
    size_t n;
    const cJSON *dep, *pod;
    (void)state;

    refs_init(&r, d);
    check_common(d);
    dep = find_kind(d, "Deployment", &n);
    assert_int_equal(n, 1);
    find_kind(d, "CronJob", &n);
    assert_int_equal(n, 0);
    assert_int_equal((int)at(dep, "spec.replicas")->valuedouble, 1);
    assert_string_equal(str(dep, "spec.strategy.type"), "Recreate");
    pod = at(dep, "spec.template.spec");
    check_pod(pod, "Deployment", &r);
    assert_true(has_arg(pod, "reconcile"));
    assert_false(has_arg(pod, "--once"));
    find_kind(d, "PersistentVolumeClaim", &n);
    assert_int_equal(n, 1);
    /* the liveness probe asks the port --listen serves */
    {
        const cJSON *c = cJSON_GetArrayItem(at(pod, "containers"), 0);
        const cJSON *p = cJSON_GetArrayItem(at(c, "ports"), 0);
        assert_string_equal(str(c, "livenessProbe.httpGet.path"), "/healthz");
        assert_string_equal(str(c, "livenessProbe.httpGet.port"), str(p, "name"));
        assert_int_equal((int)at(p, "containerPort")->valuedouble, 9090);
        assert_true(has_arg(pod, "--listen=0.0.0.0:9090"));
    }
    free(r.help);
    rd_docs_free(d);
}

/* secrets.example.yaml names the Secrets and keys the pods read. */
static void test_rc_manifests__secrets_example(void **state)
{
    char *text = th_inputs_read("deploy/kubernetes/secrets.example.yaml", NULL);
    char *cron = th_inputs_read("deploy/kubernetes/cronjob/cronjob.yaml", NULL);
    struct rd_docs *d = load_text("secrets.example.yaml", text);
    int git = 0, kc = 0;
    (void)state;

    for (size_t i = 0; i < rd_docs_count(d); i++) {
        const cJSON *s = rd_docs_get(d, i);
        assert_string_equal(str(s, "kind"), "Secret");
        if (!strcmp(str(s, "metadata.name"), "rightplace-git")) {
            git = 1;
            /* the key is the file name --token-file reads */
            assert_non_null(at(s, "stringData.token"));
            assert_non_null(strstr(cron, "--token-file=/etc/rightplace/git/token"));
            assert_non_null(strstr(cron, "mountPath: /etc/rightplace/git,"));
        } else if (!strcmp(str(s, "metadata.name"), "rightplace-kubeconfigs")) {
            kc = 1;
        }
    }
    assert_true(git && kc);
    rd_docs_free(d);
    free(cron);
    free(text);
}

/* Every ```yaml block of README.md and docs/ loads (the examples people copy). */
static void check_yaml_blocks(const char *rel, int *nblocks)
{
    char *text = th_inputs_read(rel, NULL);
    char *p = text;

    while ((p = strstr(p, "```yaml\n")) != NULL) {
        char *start = p + 8, *end = strstr(start, "```");
        char name[512];
        assert_non_null(end);
        *end = '\0';
        snprintf(name, sizeof(name), "%s block %d", rel, *nblocks + 1);
        rd_docs_free(load_text(name, start));
        (*nblocks)++;
        p = end + 3;
    }
    free(text);
}

static void test_rc_manifests__doc_examples_load(void **state)
{
    char dir[4096];
    DIR *dp;
    struct dirent *e;
    int nblocks = 0;
    (void)state;

    check_yaml_blocks("README.md", &nblocks);
    snprintf(dir, sizeof(dir), "%s/docs", RP_SOURCE_DIR);
    dp = opendir(dir);
    assert_non_null(dp);
    while ((e = readdir(dp)) != NULL) {
        size_t n = strlen(e->d_name);
        char rel[600];
        if (n < 4 || strcmp(e->d_name + n - 3, ".md"))
            continue;
        snprintf(rel, sizeof(rel), "docs/%s", e->d_name);
        check_yaml_blocks(rel, &nblocks);
    }
    closedir(dp);
    assert_true(nblocks >= 5);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rc_manifests__cronjob),
        cmocka_unit_test(test_rc_manifests__deployment),
        cmocka_unit_test(test_rc_manifests__secrets_example),
        cmocka_unit_test(test_rc_manifests__doc_examples_load),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
