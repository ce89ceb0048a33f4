/*
 * th_rp.c - helpers to run the rightplace binary on example repositories (see th_rp.h).
 */
#include "th.h"

#include "th_git.h"
#include "th_rp.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>

#include "rc_arena.h"
#include "rc_git.h"
#include "rc_pass.h"

#include "rc_banned.h"

#define TH_RP_ARGS_MAX 64

int th_rp(char **out, char **errout, ...)
{
    const char *argv[TH_RP_ARGS_MAX + 2];
    size_t n = 0;
    va_list ap;
    const char *s;

    argv[n++] = RP_BINARY;
    va_start(ap, errout);
    while ((s = va_arg(ap, const char *)) != NULL && n < TH_RP_ARGS_MAX)
        argv[n++] = s;
    va_end(ap);
    argv[n] = NULL;
    return th_run(NULL, out, errout, argv);
}

char *th_example_repo(void)
{
    char src[4096];

    snprintf(src, sizeof(src), "%s/examples/repo", RP_SOURCE_DIR);
    return th_git_repo_from_dir("example", src, "example fleet");
}

char *th_git_show(const char *repo, const char *rev, const char *path)
{
    char spec[4096];
    char *out = NULL;

    snprintf(spec, sizeof(spec), "%s:%s", rev, path);
    if (th_git(repo, &out, NULL, "show", spec, NULL) != 0) {
        free(out);
        return NULL;
    }
    return out;
}

char *th_git_record(const char *repo, const char *rev)
{
    char *all = th_git_show(repo, rev, "placements.yaml"), *ls = NULL, *line, *save = NULL;
    size_t len;

    if (!all)
        return NULL;
    len = strlen(all);
    if (th_git(repo, &ls, NULL, "ls-tree", "--name-only", rev, "placements/", NULL) != 0) {
        free(ls);
        return all;
    }
    for (line = strtok_r(ls, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char *one = th_git_show(repo, rev, line);
        size_t n = one ? strlen(one) : 0;
        all = realloc(all, len + n + 1);
        assert_non_null(all);
        memcpy(all + len, one ? one : "", n + 1);
        len += n;
        free(one);
    }
    free(ls);
    return all;
}

int th_count(const char *s, const char *needle)
{
    int n = 0;
    size_t len = strlen(needle);

    if (!s || !len)
        return 0;
    for (const char *p = strstr(s, needle); p; p = strstr(p + len, needle))
        n++;
    return n;
}

void th_assert_contains(const char *hay, const char *needle)
{
    if (!hay || !strstr(hay, needle))
        fail_msg("want '%s' in:\n%s", needle, hay ? hay : "(null)");
}

int th_rp_hold_lock(const char *statedir)
{
    char lock[4096];
    int fd;

    snprintf(lock, sizeof(lock), "%s/lock", statedir);
    fd = open(lock, O_RDWR | O_CREAT, 0600);
    assert_true(fd >= 0);
    assert_int_equal(flock(fd, LOCK_EX), 0);
    return fd;
}

void th_expect_replay(const char *repo, const char *commit, const char *what)
{
    struct rc_pass_options o = RC_PASS_OPTIONS_INIT;
    struct rc_replay_result r;
    struct rc_err err = RC_ERR_INIT;
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_git *g = NULL;

    o.bounded_verdicts = 1; /* as the replay command runs */
    o.last_pass = 1;
    /* the record's layout (one file, or shards) replay takes from the commit */
    assert_int_equal(rc_git_open(&g, repo, NULL, &err), RC_OK);
    if (rc_replay(&r, g, commit, &o, &a, &err) != RC_OK)
        fail_msg("%s: replay of %.12s: %s", what, commit, err.msg);
    if (!r.match)
        fail_msg("%s: replay of %.12s differs in %zu paths, the first '%s'", what, commit,
                 r.nmismatch, r.nmismatch ? r.mismatch[0].path : "");
    rc_git_free(g);
    rc_arena_release(&a);
}
