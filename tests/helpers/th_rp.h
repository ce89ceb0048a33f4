/*
 * th_rp.h - running the rightplace binary from tests, and example repositories to run it on.
 */
#ifndef TH_RP_H
#define TH_RP_H

/* Run RP_BINARY with the given arguments (NULL-terminated) in the current directory.
 * *out and *errout (when non-NULL) get stdout and stderr (malloc'd). Returns the exit status. */
int th_rp(char **out, char **errout, ...);

/* A non-bare repository (branch main) holding a copy of examples/repo, committed. */
char *th_example_repo(void);

/* `git show <rev>:<path>` in repo, or NULL when it does not exist (malloc'd). */
char *th_git_show(const char *repo, const char *rev, const char *path);

/* The whole record of deploy commit rev: placements.yaml, then each shard file of a record in
 * shards (placements/<k>.yaml, in order), as `git show` gives them; NULL without
 * placements.yaml (malloc'd). */
char *th_git_record(const char *repo, const char *rev);

/* Number of occurrences of `needle` in s (s may be NULL). */
int th_count(const char *s, const char *needle);

/* Fail the current test unless `hay` (may be NULL) contains `needle`; the message shows hay. */
void th_assert_contains(const char *hay, const char *needle);

/* Take the pass lock of `statedir` (the file "lock" in it, flock LOCK_EX) as a running pass
 * would; fails the test if it cannot. Returns the descriptor: close it to release the lock. */
int th_rp_hold_lock(const char *statedir);

/* Fail the current test (the message starts with `what`) unless deploy commit `commit` of repo
 * replays to itself (rc_replay with bounded verdicts, as the replay command runs). */
void th_expect_replay(const char *repo, const char *commit, const char *what);

#endif
