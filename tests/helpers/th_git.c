/*
 * th_git.c - temporary git repositories for tests: fork/exec of the git CLI with captured
 * output (no shell, so no injection), temp dirs, rm -rf, file writing. See th_git.h.
 */
#include "th.h"

#include "th_git.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rc_mem.h"

#include "rc_banned.h"

#define TH_ARGS_MAX 64

char *th_tmpdir(const char *tag)
{
    const char *base = getenv("TMPDIR");
    char path[4096];
    char *dir;

    if (!base || !*base)
        base = "/tmp";
    snprintf(path, sizeof(path), "%s/rp-%s-XXXXXX", base, tag ? tag : "t");
    dir = mkdtemp(path);
    if (!dir)
        fail_msg("mkdtemp '%s': %s", path, strerror(errno));
    return rc_xstrdup(dir);
}

static int rm_cb(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)ftw;
    return flag == FTW_DP ? rmdir(path) : unlink(path);
}

int th_rm_rf(const char *path)
{
    if (!path)
        return 0;
    return nftw(path, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

static void mkdirs_for(const char *file)
{
    char *tmp = rc_xstrdup(file);

    for (char *p = tmp + 1; *p; p++) {
        if (*p == '/') {
            *p = '\0';
            mkdir(tmp, 0755);
            *p = '/';
        }
    }
    free(tmp);
}

void th_write_file(const char *dir, const char *rel, const char *data, size_t len)
{
    char path[4096];
    FILE *f;

    if (len == (size_t)-1)
        len = strlen(data);
    snprintf(path, sizeof(path), "%s/%s", dir, rel);
    mkdirs_for(path);
    f = fopen(path, "wb");
    if (!f)
        fail_msg("cannot write '%s': %s", path, strerror(errno));
    if (len && fwrite(data, 1, len, f) != len)
        fail_msg("short write to '%s'", path);
    fclose(f);
}

char *th_git_rev(const char *dir, const char *rev)
{
    char *out = th_git_ok(dir, "rev-parse", rev, NULL);

    out[strcspn(out, "\n")] = '\0';
    return out;
}

void th_git_ref(char out[41], const char *dir, const char *ref)
{
    char *err = NULL, *rev = NULL;

    if (th_git(dir, &rev, &err, "rev-parse", "-q", "--verify", ref, NULL) == 0)
        snprintf(out, 41, "%.40s", rev);
    else
        out[0] = '\0';
    free(rev);
    free(err);
}

void th_git_set_ref(const char *dir, const char *ref, const char *id)
{
    if (id[0])
        free(th_git_ok(dir, "update-ref", ref, id, NULL));
    else
        free(th_git_ok(dir, "update-ref", "-d", ref, NULL));
}

char *th_read_all(const char *path, size_t *len)
{
    FILE *fp = fopen(path, "rb");
    char *s;
    long n;

    if (!fp)
        fail_msg("cannot read '%s': %s", path, strerror(errno));
    fseek(fp, 0, SEEK_END);
    n = ftell(fp);
    rewind(fp);
    s = malloc((size_t)n + 1);
    if (!s || fread(s, 1, (size_t)n, fp) != (size_t)n)
        fail_msg("short read of '%s'", path);
    s[n] = '\0';
    fclose(fp);
    *len = (size_t)n;
    return s;
}

void th_write_all(const char *path, const char *data, size_t len)
{
    FILE *fp = fopen(path, "wb");

    if (!fp)
        fail_msg("cannot write '%s': %s", path, strerror(errno));
    if (len && fwrite(data, 1, len, fp) != len)
        fail_msg("short write to '%s'", path);
    fclose(fp);
}

char *th_slurp(FILE *f)
{
    long n;
    char *s;

    fflush(f);
    n = ftell(f);
    s = calloc(1, (size_t)n + 1);
    rewind(f);
    if (!s || fread(s, 1, (size_t)n, f) != (size_t)n)
        fail_msg("cannot read the log back");
    return s;
}

char *th_git_env_setup(void)
{
    static const char *const proxies[] = {"http_proxy",  "https_proxy", "HTTP_PROXY",
                                          "HTTPS_PROXY", "all_proxy",   "ALL_PROXY"};
    char *home = th_tmpdir("home");

    setenv("GIT_CONFIG_NOSYSTEM", "1", 1);
    setenv("HOME", home, 1);
    setenv("XDG_CONFIG_HOME", home, 1);
    setenv("GIT_TERMINAL_PROMPT", "0", 1);
    setenv("GIT_AUTHOR_NAME", "Test Author", 1);
    setenv("GIT_AUTHOR_EMAIL", "author@example.com", 1);
    setenv("GIT_COMMITTER_NAME", "Test Author", 1);
    setenv("GIT_COMMITTER_EMAIL", "author@example.com", 1);
    for (size_t i = 0; i < sizeof(proxies) / sizeof(proxies[0]); i++)
        unsetenv(proxies[i]);
    unsetenv("GIT_DIR");
    unsetenv("GIT_WORK_TREE");
    unsetenv("GIT_ASKPASS");
    unsetenv("SSH_ASKPASS");
    return home;
}

static void append(char **buf, size_t *len, size_t *cap, const char *data, size_t n)
{
    *buf = rc_xgrow(*buf, cap, *len + n + 1, 1);
    memcpy(*buf + *len, data, n);
    *len += n;
    (*buf)[*len] = '\0';
}

int th_run(const char *dir, char **out, char **errout, const char *const *argv)
{
    int po[2], pe[2], status;
    char *bufs[2] = {NULL, NULL};
    size_t lens[2] = {0, 0}, caps[2] = {0, 0};
    pid_t pid;

    if (pipe(po) < 0 || pipe(pe) < 0)
        return -1;
    pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        int devnull = open("/dev/null", O_RDONLY);

        if (devnull >= 0)
            dup2(devnull, 0);
        dup2(po[1], 1);
        dup2(pe[1], 2);
        close(po[0]);
        close(pe[0]);
        if (dir && chdir(dir) < 0)
            _exit(126);
        execvp(argv[0], (char *const *)argv);
        _exit(127);
    }
    close(po[1]);
    close(pe[1]);
    {
        struct pollfd fds[2] = {{po[0], POLLIN, 0}, {pe[0], POLLIN, 0}};
        int open_fds = 2;

        while (open_fds > 0) {
            if (poll(fds, 2, -1) < 0) {
                if (errno == EINTR)
                    continue;
                break;
            }
            for (int i = 0; i < 2; i++) {
                char chunk[8192];
                ssize_t n;

                if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
                    continue;
                n = read(fds[i].fd, chunk, sizeof(chunk));
                if (n > 0) {
                    append(&bufs[i], &lens[i], &caps[i], chunk, (size_t)n);
                } else if (n == 0 || errno != EINTR) {
                    close(fds[i].fd);
                    fds[i].fd = -1;
                    open_fds--;
                }
            }
        }
    }
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    for (int i = 0; i < 2; i++)
        if (!bufs[i])
            append(&bufs[i], &lens[i], &caps[i], "", 0);
    if (out)
        *out = bufs[0];
    else
        free(bufs[0]);
    if (errout)
        *errout = bufs[1];
    else
        free(bufs[1]);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static int git_v(const char *dir, char **out, char **errout, va_list ap)
{
    const char *argv[TH_ARGS_MAX + 1];
    size_t n = 0;
    const char *a;

    argv[n++] = "git";
    argv[n++] = "-c";
    argv[n++] = "user.name=Test Author";
    argv[n++] = "-c";
    argv[n++] = "user.email=author@example.com";
    argv[n++] = "-c";
    argv[n++] = "init.defaultBranch=main";
    while ((a = va_arg(ap, const char *)) != NULL) {
        if (n >= TH_ARGS_MAX)
            fail_msg("too many git arguments");
        argv[n++] = a;
    }
    argv[n] = NULL;
    return th_run(dir, out, errout, argv);
}

int th_git(const char *dir, char **out, char **errout, ...)
{
    va_list ap;
    int rc;

    va_start(ap, errout);
    rc = git_v(dir, out, errout, ap);
    va_end(ap);
    return rc;
}

char *th_git_ok(const char *dir, ...)
{
    char *out = NULL, *errout = NULL;
    va_list ap;
    int rc;
    size_t n;

    va_start(ap, dir);
    rc = git_v(dir, &out, &errout, ap);
    va_end(ap);
    if (rc != 0) {
        print_error("git in '%s' exited %d: %s\n", dir ? dir : ".", rc, errout ? errout : "");
        free(out);
        free(errout);
        fail_msg("git command failed");
    }
    free(errout);
    n = strlen(out);
    while (n > 0 && (out[n - 1] == '\n' || out[n - 1] == '\r'))
        out[--n] = '\0';
    return out;
}

char *th_git_init(const char *tag, int bare)
{
    char *dir = th_tmpdir(tag);

    free(bare ? th_git_ok(dir, "init", "-q", "--bare", ".", NULL)
              : th_git_ok(dir, "init", "-q", ".", NULL));
    return dir;
}

char *th_git_commit_files(const char *dir, const char *message, ...)
{
    va_list ap;
    const char *path;

    va_start(ap, message);
    while ((path = va_arg(ap, const char *)) != NULL) {
        const char *content = va_arg(ap, const char *);

        th_write_file(dir, path, content, (size_t)-1);
    }
    va_end(ap);
    free(th_git_ok(dir, "add", "-A", ".", NULL));
    free(th_git_ok(dir, "commit", "-q", "--allow-empty", "-m", message, NULL));
    return th_git_ok(dir, "rev-parse", "HEAD", NULL);
}

/* Whether nothing listens on 127.0.0.1:port (a bind there succeeds). */
static int port_free(int port)
{
    struct sockaddr_in sa;
    int s = socket(AF_INET, SOCK_STREAM, 0), one = 1, ok;

    if (s < 0)
        return 1;
    setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ok = bind(s, (struct sockaddr *)&sa, sizeof(sa)) == 0;
    close(s);
    return ok;
}

pid_t th_git_daemon_start(const char *base, int *port_out)
{
    for (int attempt = 0; attempt < 20; attempt++) {
        /* below Linux's ephemeral ports (32768-60999): a probe of a port in that range can
         * connect to itself when nothing listens there, and an outgoing connection can hold it */
        int port = 20000 + (int)((getpid() * 7 + attempt * 131) % 12000);
        char portarg[32], basearg[4096];
        pid_t pid;

        if (!port_free(port))
            continue;
        snprintf(portarg, sizeof(portarg), "--port=%d", port);
        snprintf(basearg, sizeof(basearg), "--base-path=%s", base);
        pid = fork();
        if (pid == 0) {
            int devnull = open("/dev/null", O_WRONLY);

            if (devnull >= 0)
                dup2(devnull, 2);
            execlp("git", "git", "daemon", "--listen=127.0.0.1", portarg, basearg, "--export-all",
                   "--enable=receive-pack", "--reuseaddr", "--informative-errors", base,
                   (char *)NULL);
            _exit(127);
        }
        /* wait until it accepts connections, or exited (port taken) */
        for (int i = 0; i < 100; i++) {
            struct sockaddr_in sa;
            int s = socket(AF_INET, SOCK_STREAM, 0), status;

            memset(&sa, 0, sizeof(sa));
            sa.sin_family = AF_INET;
            sa.sin_port = htons((uint16_t)port);
            sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
            if (connect(s, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
                close(s);
                if (waitpid(pid, &status, WNOHANG) == pid)
                    break; /* something else answered there: the daemon could not listen */
                *port_out = port;
                return pid;
            }
            close(s);
            if (waitpid(pid, &status, WNOHANG) == pid)
                break;
            usleep(50000);
        }
        kill(pid, SIGTERM);
        waitpid(pid, NULL, 0);
    }
    return -1;
}

void th_git_daemon_stop(pid_t pid)
{
    if (pid > 0) {
        kill(pid, SIGTERM);
        waitpid(pid, NULL, 0);
    }
}

char *th_git_repo_from_dir(const char *tag, const char *src, const char *message)
{
    char *dir = th_git_init(tag, 0);
    char from[4096];
    const char *cp[] = {"cp", "-R", from, dir, NULL};

    snprintf(from, sizeof(from), "%s/.", src);
    if (th_run(NULL, NULL, NULL, cp) != 0)
        fail_msg("cannot copy '%s' into '%s'", src, dir);
    free(th_git_ok(dir, "add", "-A", ".", NULL));
    free(th_git_ok(dir, "commit", "-q", "--allow-empty", "-m", message, NULL));
    return dir;
}
