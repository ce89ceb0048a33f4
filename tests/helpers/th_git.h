/*
 * th_git.h - test helpers for real git repositories in temporary folders: temp dirs, running
 * commands (the git CLI) without a shell, recursive removal, writing files.
 *
 * Strings returned are malloc'd and belong to the caller (free). Helpers whose name ends in
 * `_ok` fail the current CMocka test (with the command's stderr) instead of returning an error.
 */
#ifndef TH_GIT_H
#define TH_GIT_H

#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

/* Isolate git from the user's setup for the whole test process: GIT_CONFIG_NOSYSTEM=1, HOME
 * set to a fresh temporary folder (returned; remove it with th_rm_rf at the end), no askpass,
 * no terminal prompts, fixed author/committer names. Call once at the start of main, before
 * rc_git_global_init (libgit2 reads HOME when it is initialised). */
char *th_git_env_setup(void);

/* mkdtemp "<$TMPDIR or /tmp>/rp-<tag>-XXXXXX"; aborts the test on failure. */
char *th_tmpdir(const char *tag);

/* rm -rf path (no symlinks followed). Returns 0 or -1. Accepts NULL. */
int th_rm_rf(const char *path);

/* Write data (len bytes; len (size_t)-1: strlen) to dir/rel, creating parent folders. */
void th_write_file(const char *dir, const char *rel, const char *data, size_t len);
/* The bytes of file `path` (malloc'd, NUL-terminated; *len its size), or a test failure. */
char *th_read_all(const char *path, size_t *len);
/* Replace file `path` with data[0..len), or a test failure. */
void th_write_all(const char *path, const char *data, size_t len);
/* Everything written to f so far (a tmpfile() a log went to), malloc'd, NUL-terminated. */
char *th_slurp(FILE *f);

/* Run argv (argv[0] looked up in PATH) in `dir` (NULL: current), stdin from /dev/null.
 * *out (if out non-NULL) gets stdout, *errout stderr (NUL-terminated, malloc'd). Returns the
 * exit status, or -1 when it could not run or was killed by a signal. */
int th_run(const char *dir, char **out, char **errout, const char *const *argv);

/* Run `git -c user.name=... -c user.email=... -c init.defaultBranch=main <args...>` in dir;
 * the variadic arguments end with NULL. Returns the exit status; out/errout as th_run. */
int th_git(const char *dir, char **out, char **errout, ...);

/* As th_git, but fails the test unless git exits 0. Returns stdout with trailing newlines
 * removed (malloc'd). */
char *th_git_ok(const char *dir, ...);
/* The object id `rev` names in the repository at dir (git rev-parse), without the newline;
 * malloc'd. */
char *th_git_rev(const char *dir, const char *rev);
/* The id branch `ref` ("refs/heads/deploy") points at in out, "" when it does not exist; and
 * the branch moved to `id` ("": deleted). */
void th_git_ref(char out[41], const char *dir, const char *ref);
void th_git_set_ref(const char *dir, const char *ref, const char *id);

/* A fresh repository: `git init` (bare when bare != 0) in a new temp dir; returns its path. */
char *th_git_init(const char *tag, int bare);

/* Write files (pairs of path, content, terminated by NULL) into the work tree `dir`, add all
 * and commit with `message`. Returns the new commit id (malloc'd 40 hex). */
char *th_git_commit_files(const char *dir, const char *message, ...);

/* A new work-tree repository holding a copy of the folder `src` (e.g. RP_SOURCE_DIR
 * "/examples/repo"), committed on main with `message`. Returns its path. */
char *th_git_repo_from_dir(const char *tag, const char *src, const char *message);

/* Start `git daemon` on 127.0.0.1 (a free port from a few tries, *port set) serving the bare
 * repositories under `base` with receive-pack enabled, so pushes go through a real
 * receive-pack and run hooks (git://127.0.0.1:<port>/<name>.git). Returns the daemon's pid
 * once it accepts connections, or -1. Stop it with th_git_daemon_stop. */
pid_t th_git_daemon_start(const char *base, int *port);
void th_git_daemon_stop(pid_t pid);

#endif
