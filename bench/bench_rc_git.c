/*
 * bench_rc_git.c - how long the git side of a pass takes on a large deploy tree: building the
 * tree from nothing, rebuilding it with one file changed and with nothing changed, committing,
 * and reading every YAML file back; beside it the floor, the `git` CLI committing the same
 * files in a fresh work tree (`git add -A && git commit`). Prints figures; asserts nothing.
 *
 * usage: bench_rc_git [nfiles]   (default 20000, spread over 100 clusters x 50 namespaces,
 *                                 each file about 3 KB like a rendered RayJob)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "rc_arena.h"
#include "rc_buf.h"
#include "rc_err.h"
#include "rc_git.h"
#include "rc_mem.h"

#include "rc_banned.h"

static double now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int run(const char *const *argv)
{
    pid_t pid = fork();
    int status;

    if (pid == 0) {
        execvp(argv[0], (char *const *)argv);
        _exit(127);
    }
    if (pid < 0 || waitpid(pid, &status, 0) < 0)
        return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void die(const char *what, const struct rc_err *err)
{
    fprintf(stderr, "bench_rc_git: %s: %s\n", what, err->msg);
    exit(1);
}

int main(int argc, char **argv)
{
    struct rc_err err = RC_ERR_INIT;
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_git *g = NULL;
    struct rc_git_file *files;
    struct rc_git_blob *blobs;
    size_t n = 20000, nblobs;
    char dir[] = "/tmp/rp-bench-git-XXXXXX", tree[41], tree2[41], c1[41], c2[41];
    const char *base = NULL, *body;
    double t, t_build, t_commit;

    if (argc > 1) {
        char *end;
        long v = strtol(argv[1], &end, 10);

        if (*end || v <= 0 || v > 1000000) {
            fprintf(stderr, "usage: bench_rc_git [nfiles]\n");
            return 2;
        }
        n = (size_t)v;
    }
    if (!mkdtemp(dir) || rc_git_global_init(&err) < 0)
        return 1;
    {
        const char *init[] = {"git", "init", "-q", "--bare", dir, NULL};

        if (run(init) != 0)
            return 1;
    }
    if (rc_git_open(&g, dir, NULL, &err) < 0)
        die("open", &err);

    {
        /* a rendered RayJob's spec, about 3 KB */
        struct rc_buf b = RC_BUF_INIT;
        for (int k = 0; k < 40; k++)
            rc_buf_printf(&b, &err,
                          "  rayClusterSpec%d: {image: rayproject/ray-ml:2.2.0-gpu, cpu: \"%d\", "
                          "memory: 12G}\n",
                          k, k % 8);
        body = rc_arena_strndup(&a, b.ptr, b.len);
        rc_buf_release(&b);
    }
    files = rc_xcalloc(n, sizeof(*files));
    for (size_t i = 0; i < n; i++) {
        files[i].path = rc_arena_printf(&a, "clusters/c%zu/ns%zu/rayjob.job-%zu.yaml", i % 100,
                                        (i / 100) % 50, i);
        files[i].data = rc_arena_printf(&a,
                                        "apiVersion: ray.io/v1\nkind: RayJob\nmetadata:\n"
                                        "  name: job-%zu\n  namespace: ns%zu\n  labels:\n"
                                        "    rightplace.dev/unit: p/ns/%zu\nspec:\n"
                                        "  entrypoint: python train.py --epochs 10\n%s",
                                        i, (i / 100) % 50, i, body);
        files[i].len = strlen(files[i].data);
    }

    printf("files: %zu\n", n);
    t = now_ms();
    if (rc_git_build_tree(tree, g, base, files, n, &err) < 0)
        die("build", &err);
    t_build = now_ms() - t;
    printf("build tree, all new:        %8.1f ms\n", t_build);
    t = now_ms();
    if (rc_git_commit(c1, g, tree, NULL, "bench\n", 1700000000, &err) < 0 ||
        rc_git_update_ref(g, "refs/heads/deploy", c1, NULL, "bench", &err) < 0)
        die("commit", &err);
    t_commit = now_ms() - t;
    printf("commit + ref:               %8.1f ms\n", t_commit);
    printf("rightplace, first commit:   %8.1f ms\n", t_build + t_commit);
    {
        /* the floor: the git CLI committing the same files in a fresh work tree */
        char wt[] = "/tmp/rp-bench-gitcli-XXXXXX";
        const char *init[] = {"git", "init", "-q", wt, NULL};
        const char *add[] = {"git", "-C", wt, "add", "-A", NULL};
        const char *commit[] = {"git",
                                "-C",
                                wt,
                                "-c",
                                "user.name=bench",
                                "-c",
                                "user.email=bench@example.com",
                                "commit",
                                "-q",
                                "-m",
                                "bench",
                                NULL};
        const char *rm[] = {"rm", "-rf", wt, NULL};

        if (!mkdtemp(wt) || run(init) != 0)
            return 1;
        for (size_t i = 0; i < n; i++) {
            char path[4096];
            FILE *f;
            snprintf(path, sizeof(path), "%s/%s", wt, files[i].path);
            for (char *sl = strchr(path + strlen(wt) + 1, '/'); sl; sl = strchr(sl + 1, '/')) {
                *sl = '\0';
                mkdir(path, 0755);
                *sl = '/';
            }
            f = fopen(path, "wb");
            if (!f || fwrite(files[i].data, 1, files[i].len, f) != files[i].len)
                return 1;
            fclose(f);
        }
        t = now_ms();
        if (run(add) != 0 || run(commit) != 0)
            return 1;
        printf("git CLI add -A + commit:    %8.1f ms   (floor)\n", now_ms() - t);
        run(rm);
    }

    t = now_ms();
    if (rc_git_build_tree(tree2, g, c1, files, n, &err) < 0)
        die("build", &err);
    printf("build tree, nothing changed: %7.1f ms (%s)\n", now_ms() - t,
           strcmp(tree, tree2) ? "DIFFERENT TREE" : "same tree");

    files[n / 2].data = "changed: true\n";
    files[n / 2].len = strlen(files[n / 2].data);
    t = now_ms();
    if (rc_git_build_tree(tree2, g, c1, files, n, &err) < 0)
        die("build", &err);
    printf("build tree, one changed:    %8.1f ms\n", now_ms() - t);

    /* as a pass gives it: every unchanged file kept (not hashed again), one new, one gone */
    for (size_t i = 0; i < n; i++)
        files[i].keep = i != n / 2;
    files[n / 2].data = "changed: twice\n";
    files[n / 2].len = strlen(files[n / 2].data);
    t = now_ms();
    if (rc_git_build_tree(tree2, g, c1, files, n - 1, &err) < 0)
        die("build", &err);
    printf("build tree, one changed, one removed, the rest kept: %6.1f ms\n", now_ms() - t);
    if (rc_git_commit(c2, g, tree2, c1, "bench 2\n", 1700000001, &err) < 0)
        die("commit", &err);

    t = now_ms();
    if (rc_git_read_yaml(&blobs, &nblobs, g, c2, NULL, 0, &a, &err) < 0)
        die("read", &err);
    printf("read every yaml (%zu):   %8.1f ms\n", nblobs, now_ms() - t);
    t = now_ms();
    if (rc_git_read_tree(&blobs, &nblobs, g, c2, "clusters/c3/", &a, &err) < 0)
        die("read", &err);
    printf("read one cluster dir (%zu): %6.1f ms\n", nblobs, now_ms() - t);

    rc_git_free(g);
    rc_git_global_shutdown();
    free(files);
    rc_arena_release(&a);
    {
        const char *rm[] = {"rm", "-rf", dir, NULL};

        run(rm);
    }
    return 0;
}
