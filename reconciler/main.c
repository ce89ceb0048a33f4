/*
 * main.c - the rightplace command line: parses arguments, builds the context, runs a
 * command, and turns result codes into the documented exit statuses. The only file that
 * calls exit() or installs signal handlers; the only place process-wide library state is
 * set up (libgit2, libcurl).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "pl_basics.h"
#include "pl_engine.h"
#include "pl_quantity.h"
#include "rc_arena.h"
#include "rc_git.h"
#include "rc_hash.h"
#include "rc_http.h"
#include "rc_log.h"
#include "rc_pass.h"
#include "rc_version.h"

#include "rc_banned.h"

/* Exit statuses (the same table is in README.md). */
enum rc_exit {
    RC_EXIT_OK = 0,      /* in sync / success; plan: no change */
    RC_EXIT_PARTIAL = 1, /* some applies failed; plan: changes pending; replay: mismatch */
    RC_EXIT_USAGE = 2,   /* usage or configuration error */
    RC_EXIT_INPUT = 3,   /* invalid repository input (reported files were not loaded) */
    RC_EXIT_SYSTEM = 4,  /* system error: git, I/O, exhausted retries */
    RC_EXIT_LOCKED = 5   /* another pass holds the state directory's lock */
};

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
    (void)sig;
    stop_requested = 1;
}

struct cli {
    const char *command;
    const char *repo;
    const char *state_dir;
    const char *source_rev;
    const char *output; /* "text" | "json" */
    const char *paths[64];
    size_t npaths;
    const char *args[8];
    size_t nargs;
    long interval; /* seconds; 0: once */
    int once;
    struct rc_pass_options pass;
    struct rc_git_options git;
    struct rc_log log;
};

static void usage(FILE *f)
{
    fputs("usage: rightplace <command> --repo REPO [options]\n"
          "\n"
          "commands:\n"
          "  reconcile            place what changed, commit to the deploy branch, apply\n"
          "  plan                 show what a pass would decide; write nothing\n"
          "                       (exit 0: no change, 1: changes, >= 2: error)\n"
          "  explain WORKLOAD     where a workload is placed, or why it is pending\n"
          "                       (WORKLOAD: ns/Kind/name, ns/name, name or a unit id)\n"
          "  replay COMMIT        recompute a deploy commit's decisions and compare\n"
          "  status               placements and capacity per cluster\n"
          "\n"
          "options:\n"
          "  --repo R             local path (used in place) or URL (cloned into the state dir)\n"
          "  --source-branch B    branch people push workloads to (default main)\n"
          "  --deploy-branch B    branch rightplace writes placements to (default deploy)\n"
          "  --state-dir D        lock, clone and caches (default: inside the repository's\n"
          "                       git dir for a local path; ~/.local/state/rightplace/<hash>)\n"
          "  --path P             load manifests only under P (repeatable; default: all)\n"
          "  --once               one pass, then exit (the default)\n"
          "  --interval SECONDS   run a pass every SECONDS until SIGTERM/SIGINT\n"
          "  --no-apply           commit placements, but do not apply them to clusters\n"
          "  --resync             apply every object, not only what changed\n"
          "  --force              run the pass even when nothing seems to have changed\n"
          "  --source REV         plan: use REV instead of the source branch head\n"
          "  --luna-label K=V     label added to pod templates (default elotl-luna=true)\n"
          "  --no-luna-label      add no Luna label\n"
          "  --mode push|pull     pull: Flux or Argo CD applies the deploy branch; no apply,\n"
          "                       no managed-by label (docs/pull-mode.md; default push)\n"
          "  --token-file F       HTTPS token for the git remote (or $RIGHTPLACE_GIT_TOKEN)\n"
          "  --ssh-key F          SSH private key for the git remote (default: ssh-agent)\n"
          "  --output text|json   output format of plan, explain, replay, status\n"
          "  --log-level L        error, warn, info (default) or debug\n"
          "  --log-json           log lines as JSON objects\n"
          "  -h, --help           show this help\n"
          "  --version            show the version\n"
          "\n"
          "exit status: 0 ok, 1 partly applied / changes pending / replay mismatch,\n"
          "2 usage or configuration, 3 invalid repository input, 4 system error,\n"
          "5 another pass holds the lock\n",
          f);
}

enum {
    OPT_REPO = 256,
    OPT_SOURCE_BRANCH,
    OPT_DEPLOY_BRANCH,
    OPT_STATE_DIR,
    OPT_PATH,
    OPT_ONCE,
    OPT_INTERVAL,
    OPT_NO_APPLY,
    OPT_RESYNC,
    OPT_FORCE,
    OPT_SOURCE,
    OPT_LUNA,
    OPT_NO_LUNA,
    OPT_MODE,
    OPT_TOKEN_FILE,
    OPT_SSH_KEY,
    OPT_OUTPUT,
    OPT_LOG_LEVEL,
    OPT_LOG_JSON,
    OPT_VERSION
};

static int parse_args(struct cli *c, int argc, char **argv)
{
    static const struct option opts[] = {
        {"repo", required_argument, NULL, OPT_REPO},
        {"source-branch", required_argument, NULL, OPT_SOURCE_BRANCH},
        {"deploy-branch", required_argument, NULL, OPT_DEPLOY_BRANCH},
        {"state-dir", required_argument, NULL, OPT_STATE_DIR},
        {"path", required_argument, NULL, OPT_PATH},
        {"once", no_argument, NULL, OPT_ONCE},
        {"interval", required_argument, NULL, OPT_INTERVAL},
        {"no-apply", no_argument, NULL, OPT_NO_APPLY},
        {"resync", no_argument, NULL, OPT_RESYNC},
        {"force", no_argument, NULL, OPT_FORCE},
        {"source", required_argument, NULL, OPT_SOURCE},
        {"luna-label", required_argument, NULL, OPT_LUNA},
        {"no-luna-label", no_argument, NULL, OPT_NO_LUNA},
        {"mode", required_argument, NULL, OPT_MODE},
        {"token-file", required_argument, NULL, OPT_TOKEN_FILE},
        {"ssh-key", required_argument, NULL, OPT_SSH_KEY},
        {"output", required_argument, NULL, OPT_OUTPUT},
        {"log-level", required_argument, NULL, OPT_LOG_LEVEL},
        {"log-json", no_argument, NULL, OPT_LOG_JSON},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, OPT_VERSION},
        {NULL, 0, NULL, 0},
    };
    static char luna_buf[256];
    int ch;

    while ((ch = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (ch) {
        case OPT_REPO:
            c->repo = optarg;
            break;
        case OPT_SOURCE_BRANCH:
            c->pass.source_branch = optarg;
            break;
        case OPT_DEPLOY_BRANCH:
            c->pass.deploy_branch = optarg;
            break;
        case OPT_STATE_DIR:
            c->state_dir = optarg;
            break;
        case OPT_PATH:
            if (c->npaths == sizeof(c->paths) / sizeof(c->paths[0])) {
                fprintf(stderr, "rightplace: too many --path options\n");
                return -1;
            }
            c->paths[c->npaths++] = optarg;
            break;
        case OPT_ONCE:
            c->once = 1;
            break;
        case OPT_INTERVAL: {
            char *end;
            errno = 0;
            c->interval = strtol(optarg, &end, 10);
            if (errno || *end || c->interval <= 0 || c->interval > 86400 * 7) {
                fprintf(stderr, "rightplace: invalid --interval '%s'\n", optarg);
                return -1;
            }
            break;
        }
        case OPT_NO_APPLY:
            c->pass.apply = 0;
            break;
        case OPT_RESYNC:
            c->pass.resync = 1;
            break;
        case OPT_FORCE:
            c->pass.force = 1;
            break;
        case OPT_SOURCE:
            c->source_rev = optarg;
            break;
        case OPT_LUNA: {
            char *eq = strchr(optarg, '=');
            size_t n = strlen(optarg);
            if (!eq || eq == optarg || n >= sizeof(luna_buf)) {
                fprintf(stderr, "rightplace: --luna-label wants KEY=VALUE, got '%s'\n", optarg);
                return -1;
            }
            memcpy(luna_buf, optarg, n + 1);
            luna_buf[eq - optarg] = '\0';
            c->pass.render.luna_key = luna_buf;
            c->pass.render.luna_value = luna_buf + (eq - optarg) + 1;
            break;
        }
        case OPT_NO_LUNA:
            c->pass.render.luna_key = NULL;
            c->pass.render.luna_value = NULL;
            break;
        case OPT_MODE:
            if (strcmp(optarg, "push") && strcmp(optarg, "pull")) {
                fprintf(stderr, "rightplace: --mode wants push or pull, got '%s'\n", optarg);
                return -1;
            }
            c->pass.render.pull = !strcmp(optarg, "pull");
            break;
        case OPT_TOKEN_FILE:
            c->git.token_file = optarg;
            break;
        case OPT_SSH_KEY:
            c->git.ssh_key = optarg;
            break;
        case OPT_OUTPUT:
            if (strcmp(optarg, "text") && strcmp(optarg, "json")) {
                fprintf(stderr, "rightplace: --output wants text or json, got '%s'\n", optarg);
                return -1;
            }
            c->output = optarg;
            break;
        case OPT_LOG_LEVEL: {
            int l = rc_log_level_parse(optarg);
            if (l < 0) {
                fprintf(stderr, "rightplace: unknown log level '%s'\n", optarg);
                return -1;
            }
            c->log.level = (enum rc_log_level)l;
            break;
        }
        case OPT_LOG_JSON:
            c->log.json = 1;
            break;
        case 'h':
            usage(stdout);
            exit(RC_EXIT_OK);
        case OPT_VERSION:
            printf("rightplace %s\n", rc_version());
            exit(RC_EXIT_OK);
        default:
            return -1;
        }
    }
    if (optind >= argc) {
        fprintf(stderr, "rightplace: no command given\n");
        return -1;
    }
    c->command = argv[optind++];
    while (optind < argc) {
        if (c->nargs == sizeof(c->args) / sizeof(c->args[0])) {
            fprintf(stderr, "rightplace: too many arguments\n");
            return -1;
        }
        c->args[c->nargs++] = argv[optind++];
    }
    if (!c->repo) {
        fprintf(stderr, "rightplace: --repo is required\n");
        return -1;
    }
    if (c->pass.render.pull) /* Flux or Argo CD applies */
        c->pass.apply = 0;
    if (c->once && c->interval) {
        fprintf(stderr, "rightplace: --once and --interval exclude each other\n");
        return -1;
    }
    return 0;
}

/* ==== State directory and lock ==== */

static int mkdir_p(const char *path)
{
    char tmp[PATH_MAX];
    size_t n = strlen(path);

    if (n == 0 || n >= sizeof(tmp))
        return -1;
    memcpy(tmp, path, n + 1);
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(tmp, 0700) < 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    if (mkdir(tmp, 0700) < 0 && errno != EEXIST)
        return -1;
    return 0;
}

static int default_state_dir(char *out, size_t n, const char *repo)
{
    struct stat st;
    char hex[17];
    const char *base;

    if (!rc_git_is_url(repo)) {
        char dotgit[PATH_MAX];
        snprintf(dotgit, sizeof(dotgit), "%s/.git", repo);
        if (stat(dotgit, &st) == 0 && S_ISDIR(st.st_mode))
            return snprintf(out, n, "%s/rightplace", dotgit) < (int)n ? 0 : -1;
        return snprintf(out, n, "%s/rightplace", repo) < (int)n ? 0 : -1;
    }
    rc_hash_hex(rc_fnv1a_str(RC_FNV_INIT, repo), hex);
    base = getenv("XDG_STATE_HOME");
    if (base && base[0])
        return snprintf(out, n, "%s/rightplace/%s", base, hex) < (int)n ? 0 : -1;
    base = getenv("HOME");
    if (!base || !base[0])
        return -1;
    return snprintf(out, n, "%s/.local/state/rightplace/%s", base, hex) < (int)n ? 0 : -1;
}

/* Take the state directory's lock; returns the fd (close it to release) or -1.
 * Non-blocking: *locked_by_other says another process holds it. Blocking: waits for it. */
static int take_lock(const char *state_dir, int blocking, const struct rc_log *log,
                     int *locked_by_other)
{
    char path[PATH_MAX];
    int fd;

    *locked_by_other = 0;
    if (snprintf(path, sizeof(path), "%s/lock", state_dir) >= (int)sizeof(path))
        return -1;
    fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
        rc_log_error(log, "cannot open lock '%s': %s", path, strerror(errno));
        return -1;
    }
    while (flock(fd, LOCK_EX | (blocking ? 0 : LOCK_NB)) < 0) {
        if (errno == EINTR && blocking && !stop_requested)
            continue;
        if (errno == EWOULDBLOCK)
            *locked_by_other = 1;
        else
            rc_log_error(log, "cannot lock '%s': %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

/* ==== Output ==== */

static const char *short_id(const char *id)
{
    static char buf[4][13];
    static int k;

    if (!id || !id[0])
        return "(none)";
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof(buf[k]), "%.12s", id);
    return buf[k];
}

static const char *change_name(enum pl_change c)
{
    switch (c) {
    case PL_CHANGE_NONE:
        return "unchanged";
    case PL_CHANGE_NEW:
        return "new";
    case PL_CHANGE_MOVED:
        return "moved";
    case PL_CHANGE_STATE:
        return "changed";
    case PL_CHANGE_REMOVED:
        return "removed";
    }
    return "?";
}

static cJSON *decision_json(const struct pl_decision *d)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *objs = cJSON_AddArrayToObject(o, "objects");
    cJSON *cl = cJSON_AddArrayToObject(o, "clusters");
    cJSON *vs = cJSON_AddArrayToObject(o, "verdicts");

    cJSON_AddStringToObject(o, "unit", d->unit);
    if (d->policy)
        cJSON_AddStringToObject(o, "policy", d->policy);
    else
        cJSON_AddNullToObject(o, "policy");
    for (size_t i = 0; i < d->nobjects; i++)
        cJSON_AddItemToArray(objs, cJSON_CreateString(d->object_keys[i]));
    cJSON_AddStringToObject(o, "state", pl_state_name(d->state));
    for (size_t i = 0; i < d->ntargets; i++)
        cJSON_AddItemToArray(cl, cJSON_CreateString(d->targets[i].cluster));
    cJSON_AddStringToObject(o, "reason", d->reason ? d->reason : "");
    cJSON_AddStringToObject(o, "change", change_name(d->change));
    if (d->cause)
        cJSON_AddStringToObject(o, "cause", d->cause);
    for (size_t i = 0; i < d->nverdicts; i++) {
        cJSON *v = cJSON_CreateObject();
        cJSON_AddStringToObject(v, "cluster", d->verdicts[i].cluster);
        cJSON_AddStringToObject(v, "verdict", pl_verdict_name(d->verdicts[i].kind));
        cJSON_AddStringToObject(v, "detail", d->verdicts[i].detail ? d->verdicts[i].detail : "");
        cJSON_AddItemToArray(vs, v);
    }
    return o;
}

static void print_json(cJSON *o)
{
    char *s = cJSON_Print(o);

    if (s) {
        puts(s);
        free(s);
    }
    cJSON_Delete(o);
}

static void print_targets(FILE *f, const struct pl_decision *d)
{
    for (size_t i = 0; i < d->ntargets; i++) {
        fprintf(f, "%s%s", i ? ", " : "", d->targets[i].cluster);
        if (d->targets[i].percent != 100)
            fprintf(f, " (%lld%%)", (long long)d->targets[i].percent);
    }
}

static void print_decision_text(FILE *f, const struct pl_decision *d, int verbose)
{
    fprintf(f, "%s\n", d->unit);
    if (d->nobjects) {
        fprintf(f, "  objects:  ");
        for (size_t i = 0; i < d->nobjects; i++)
            fprintf(f, "%s%s", i ? ", " : "", d->object_keys[i]);
        fputc('\n', f);
    }
    fprintf(f, "  policy:   %s\n", d->policy ? d->policy : "(none)");
    fprintf(f, "  state:    %s", pl_state_name(d->state));
    if (d->ntargets) {
        fprintf(f, " on ");
        print_targets(f, d);
    }
    fputc('\n', f);
    if (d->reason && d->reason[0])
        fprintf(f, "  reason:   %s\n", d->reason);
    if (d->cause)
        fprintf(f, "  moved:    %s\n", d->cause);
    if (verbose && d->nverdicts) {
        fprintf(f, "  candidates:\n");
        for (size_t i = 0; i < d->nverdicts; i++)
            fprintf(f, "    %-20s %-20s %s\n", d->verdicts[i].cluster,
                    pl_verdict_name(d->verdicts[i].kind),
                    d->verdicts[i].detail ? d->verdicts[i].detail : "");
    }
}

static void print_file_errors(const struct rc_pass_result *r)
{
    for (size_t i = 0; i < r->nfile_errors; i++)
        fprintf(stderr, "rightplace: error: %s\n", r->file_errors[i].msg);
}

/* ==== Commands ==== */

struct run {
    struct cli *cli;
    struct rc_git *git;
    const char *state_dir;
};

static int exit_for(int code)
{
    switch (code) {
    case RC_OK:
        return RC_EXIT_OK;
    case RC_EINVALID:
        return RC_EXIT_INPUT;
    case RC_ENOTFOUND:
        return RC_EXIT_USAGE;
    default:
        return RC_EXIT_SYSTEM;
    }
}

static int cmd_reconcile_once(struct run *r)
{
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_err err = RC_ERR_INIT;
    struct rc_pass_result res;
    int locked_by_other = 0;
    int lock_fd;
    int status;
    int error;

    /* One pass at a time per state directory. */
    lock_fd = take_lock(r->state_dir, 0, &r->cli->log, &locked_by_other);
    if (lock_fd < 0) {
        if (!locked_by_other)
            return RC_EXIT_SYSTEM;
        rc_log_error(&r->cli->log, "another rightplace pass holds the lock on '%s'", r->state_dir);
        return RC_EXIT_LOCKED;
    }
    error = rc_pass_run(&res, r->git, &r->cli->pass, &a, &err);
    if (error < 0) {
        rc_log_error(&r->cli->log, "%s", err.msg);
        status = exit_for(error);
        goto done;
    }
    print_file_errors(&res);
    if (res.skipped) {
        rc_log_info(&r->cli->log, "source %s already placed; nothing to do", short_id(res.source));
    } else if (res.committed) {
        rc_log_info(&r->cli->log,
                    "source %s: %zu placed, %zu pending, %zu unplaced; %zu changed; "
                    "deploy %s -> %s",
                    short_id(res.source), res.placed, res.pending, res.unplaced, res.changed,
                    short_id(res.deploy_old), short_id(res.deploy_new));
    } else {
        rc_log_info(&r->cli->log,
                    "source %s: %zu placed, %zu pending, %zu unplaced; deploy %s is up to date",
                    short_id(res.source), res.placed, res.pending, res.unplaced,
                    short_id(res.deploy_old));
    }
    status = RC_EXIT_OK;
    if (res.apply_incomplete)
        status = RC_EXIT_PARTIAL;
    if (res.nfile_errors)
        status = RC_EXIT_INPUT;
done:
    close(lock_fd);
    rc_arena_release(&a);
    return status;
}

static void sleep_interruptible(long seconds)
{
    for (long i = 0; i < seconds * 10 && !stop_requested; i++) {
        struct timespec ts = {0, 100000000L};
        nanosleep(&ts, NULL);
    }
}

static int cmd_reconcile(struct run *r)
{
    int status;

    if (!r->cli->interval)
        return cmd_reconcile_once(r);
    rc_log_info(&r->cli->log, "reconciling every %ld s; SIGTERM or SIGINT stops after the pass",
                r->cli->interval);
    /* A long-running service keeps going whatever one pass met (a branch not pushed yet, an
     * unreachable cluster, the lock held by a manual run): each pass logs its own problem. */
    do {
        status = cmd_reconcile_once(r);
        if (status != RC_EXIT_OK)
            rc_log_warn(&r->cli->log, "pass ended with status %d; next pass in %ld s", status,
                        r->cli->interval);
        sleep_interruptible(r->cli->interval);
    } while (!stop_requested);
    rc_log_info(&r->cli->log, "stopping");
    return RC_EXIT_OK;
}

static int dry_run(struct run *r, struct rc_pass_result *res, struct rc_arena *a)
{
    struct rc_pass_options o = r->cli->pass;
    struct rc_err err = RC_ERR_INIT;
    int locked_by_other = 0;
    int lock_fd;
    int error;

    o.dry_run = 1;
    o.apply = 0;
    o.source_rev = r->cli->source_rev;
    /* wait for a running pass: a remote's clone is fetched into the state directory */
    lock_fd = take_lock(r->state_dir, 1, &r->cli->log, &locked_by_other);
    if (lock_fd < 0)
        return RC_EXIT_SYSTEM;
    error = rc_pass_run(res, r->git, &o, a, &err);
    close(lock_fd);
    if (error < 0) {
        rc_log_error(&r->cli->log, "%s", err.msg);
        return exit_for(error);
    }
    print_file_errors(res);
    return RC_EXIT_OK;
}

static int cmd_plan(struct run *r)
{
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_pass_result res;
    int json = r->cli->output && !strcmp(r->cli->output, "json");
    int status = dry_run(r, &res, &a);
    size_t nchanged = 0;

    if (status != RC_EXIT_OK)
        goto done;
    for (size_t i = 0; i < res.npaths_changed; i++) {
        if (strcmp(res.paths_changed[i].path, ".rightplace/capacity.yaml"))
            nchanged++;
    }
    if (json) {
        cJSON *o = cJSON_CreateObject();
        cJSON *ds = cJSON_AddArrayToObject(o, "decisions");
        cJSON *ps = cJSON_AddArrayToObject(o, "files");
        cJSON_AddStringToObject(o, "source", res.source);
        cJSON_AddStringToObject(o, "deploy", res.deploy_old);
        for (size_t i = 0; i < res.result->ndecisions; i++) {
            if (res.result->decisions[i].change != PL_CHANGE_NONE)
                cJSON_AddItemToArray(ds, decision_json(&res.result->decisions[i]));
        }
        for (size_t i = 0; i < res.npaths_changed; i++) {
            cJSON *p = cJSON_CreateObject();
            char op[2] = {res.paths_changed[i].op, 0};
            cJSON_AddStringToObject(p, "path", res.paths_changed[i].path);
            cJSON_AddStringToObject(p, "change", op);
            cJSON_AddItemToArray(ps, p);
        }
        print_json(o);
    } else {
        printf("source %s, deploy %s\n", short_id(res.source), short_id(res.deploy_old));
        printf("%zu placed, %zu pending, %zu unplaced\n", res.placed, res.pending, res.unplaced);
        if (!nchanged) {
            printf("no change\n");
        } else {
            printf("\ndecisions that would change:\n\n");
            for (size_t i = 0; i < res.result->ndecisions; i++) {
                const struct pl_decision *d = &res.result->decisions[i];
                if (d->change == PL_CHANGE_NONE)
                    continue;
                printf("[%s] ", change_name(d->change));
                print_decision_text(stdout, d, 0);
            }
            printf("\nfiles that would change:\n");
            for (size_t i = 0; i < res.npaths_changed; i++)
                printf("  %c %s\n", res.paths_changed[i].op, res.paths_changed[i].path);
        }
    }
    status = nchanged ? RC_EXIT_PARTIAL : RC_EXIT_OK;
done:
    rc_arena_release(&a);
    return status;
}

static int decision_matches(const struct pl_decision *d, const char *q)
{
    size_t qn = strlen(q);

    if (!strcmp(d->unit, q))
        return 1;
    for (size_t i = 0; i < d->nobjects; i++) {
        const char *k = d->object_keys[i];
        const char *first = strchr(k, '/');
        const char *last = strrchr(k, '/');
        if (!strcmp(k, q))
            return 1;
        /* "ns/name" and "name" */
        if (last && !strcmp(last + 1, q))
            return 1;
        if (first && last && first != last && (size_t)(first - k) + 1 + strlen(last + 1) == qn &&
            !strncmp(k, q, (size_t)(first - k) + 1) && !strcmp(last + 1, q + (first - k) + 1))
            return 1;
    }
    return 0;
}

static int cmd_explain(struct run *r)
{
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_pass_result res;
    int json = r->cli->output && !strcmp(r->cli->output, "json");
    size_t found = 0;
    int status;

    if (r->cli->nargs != 1) {
        fprintf(stderr, "rightplace: explain wants one WORKLOAD\n");
        return RC_EXIT_USAGE;
    }
    status = dry_run(r, &res, &a);
    if (status != RC_EXIT_OK)
        goto done;
    {
        cJSON *arr = json ? cJSON_CreateArray() : NULL;
        for (size_t i = 0; i < res.result->ndecisions; i++) {
            const struct pl_decision *d = &res.result->decisions[i];
            if (!decision_matches(d, r->cli->args[0]))
                continue;
            found++;
            if (json) {
                cJSON_AddItemToArray(arr, decision_json(d));
                continue;
            }
            if (found > 1)
                putchar('\n');
            print_decision_text(stdout, d, 1);
            if (d->change != PL_CHANGE_NONE)
                printf("  note:     not yet committed: the next pass makes this decision\n");
        }
        if (json)
            print_json(arr);
    }
    if (!found) {
        fprintf(stderr, "rightplace: no workload or unit matches '%s'\n", r->cli->args[0]);
        status = RC_EXIT_USAGE;
    }
done:
    rc_arena_release(&a);
    return status;
}

/* An amount for people at a glance: cpu "34.5", memory "97.4Gi", others exact. Status only:
 * records and messages use exact quantities. */
static void human_amount(char *out, size_t n, int k, int64_t milli)
{
    const char *sign = milli < 0 ? "-" : "";
    uint64_t m = milli < 0 ? (uint64_t)0 - (uint64_t)milli : (uint64_t)milli;

    if (k == PL_RES_MEMORY) {
        static const char *const units[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi"};
        double v = (double)m / 1000.0;
        int u = 0;
        while (v >= 1024.0 && u < 5) {
            v /= 1024.0;
            u++;
        }
        if (u == 0 || v >= 100.0 || v == (double)(int64_t)v)
            snprintf(out, n, "%s%.0f%s", sign, v, units[u]);
        else
            snprintf(out, n, "%s%.1f%s", sign, v, units[u]);
    } else if (m % 1000 == 0) {
        snprintf(out, n, "%s%llu", sign, (unsigned long long)(m / 1000));
    } else {
        snprintf(out, n, "%s%.2f", sign, (double)m / 1000.0);
    }
}

static void format_res(char *out, size_t n, const struct pl_resnames *names, const struct pl_res *v)
{
    size_t used = 0;

    out[0] = '\0';
    for (int k = 0; k < names->n && used < n; k++) {
        char q[64];
        if (k == PL_RES_PODS || (!v->v[k] && k >= PL_RES_FIRST_EXTENDED))
            continue;
        human_amount(q, sizeof(q), k, v->v[k]);
        used +=
            (size_t)snprintf(out + used, n - used, "%s%s %s", used ? ", " : "", names->name[k], q);
    }
}

static int cmd_status(struct run *r)
{
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_pass_result res;
    int json = r->cli->output && !strcmp(r->cli->output, "json");
    int status = dry_run(r, &res, &a);
    const struct pl_result *pr;
    cJSON *root = NULL;

    if (status != RC_EXIT_OK)
        goto done;
    pr = res.result;
    if (json)
        root = cJSON_CreateObject();
    else
        printf("source %s, deploy %s: %zu placed, %zu pending, %zu unplaced\n",
               short_id(res.source), short_id(res.deploy_old), res.placed, res.pending,
               res.unplaced);
    for (size_t c = 0; c < pr->nusage; c++) {
        const struct pl_usage *u = &pr->usage[c];
        struct pl_res freev;
        char alloc[512], used[512], committed[512], freeb[512];
        cJSON *cj = NULL, *units = NULL;

        /* free on the nodes that exist now; what exceeds them waits for a scale-up */
        for (int k = 0; k < PL_RES_MAX; k++) {
            freev.v[k] = u->allocatable.v[k] - u->requested.v[k] - u->committed.v[k];
            if (freev.v[k] < 0)
                freev.v[k] = 0;
        }
        format_res(alloc, sizeof(alloc), res.input->res, &u->allocatable);
        format_res(used, sizeof(used), res.input->res, &u->requested);
        format_res(committed, sizeof(committed), res.input->res, &u->committed);
        format_res(freeb, sizeof(freeb), res.input->res, &freev);
        if (json) {
            cj = cJSON_AddObjectToObject(root, u->cluster);
            cJSON_AddStringToObject(cj, "allocatable", alloc);
            cJSON_AddStringToObject(cj, "requested", used);
            cJSON_AddStringToObject(cj, "committed", committed);
            cJSON_AddStringToObject(cj, "free", freeb);
            cJSON_AddNumberToObject(cj, "nodesToAdd", (double)u->nodes_to_add);
            units = cJSON_AddArrayToObject(cj, "units");
        } else {
            printf("\n%s\n", u->cluster);
            printf("  allocatable  %s\n", alloc);
            printf("  in use       %s   (observed on the cluster)\n", used[0] ? used : "-");
            printf("  placed       %s   (by rightplace, not observed yet)\n",
                   committed[0] ? committed : "-");
            printf("  free now     %s\n", freeb);
            if (u->nodes_to_add)
                printf("  scale-up     %lld node(s) expected from its autoscaler\n",
                       (long long)u->nodes_to_add);
            printf("  units:\n");
        }
        for (size_t i = 0; i < pr->ndecisions; i++) {
            const struct pl_decision *d = &pr->decisions[i];
            int here = 0;
            for (size_t t = 0; t < d->ntargets; t++)
                here |= !strcmp(d->targets[t].cluster, u->cluster);
            if (!here || d->change == PL_CHANGE_REMOVED)
                continue;
            if (json)
                cJSON_AddItemToArray(units, cJSON_CreateString(d->unit));
            else
                printf("    %s\n", d->unit);
        }
    }
    if (json) {
        cJSON *pend = cJSON_AddArrayToObject(root, "pending");
        for (size_t i = 0; i < pr->ndecisions; i++) {
            if (pr->decisions[i].state != PL_STATE_PLACED &&
                pr->decisions[i].change != PL_CHANGE_REMOVED)
                cJSON_AddItemToArray(pend, decision_json(&pr->decisions[i]));
        }
        print_json(root);
    } else {
        int header = 0;
        for (size_t i = 0; i < pr->ndecisions; i++) {
            const struct pl_decision *d = &pr->decisions[i];
            if (d->state == PL_STATE_PLACED || d->change == PL_CHANGE_REMOVED)
                continue;
            if (!header++)
                printf("\nnot placed:\n");
            printf("  %-50s %s: %s\n", d->unit, pl_state_name(d->state),
                   d->reason ? d->reason : "");
        }
    }
done:
    rc_arena_release(&a);
    return status;
}

static int cmd_replay(struct run *r)
{
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_err err = RC_ERR_INIT;
    struct rc_replay_result res;
    int json = r->cli->output && !strcmp(r->cli->output, "json");
    int status;
    int error;

    if (r->cli->nargs != 1) {
        fprintf(stderr, "rightplace: replay wants one COMMIT\n");
        return RC_EXIT_USAGE;
    }
    error = rc_replay(&res, r->git, r->cli->args[0], &r->cli->pass, &a, &err);
    if (error < 0) {
        rc_log_error(&r->cli->log, "%s", err.msg);
        /* a commit that does not exist or is not a placement commit: the caller's mistake */
        status = (error == RC_ENOTFOUND || error == RC_EINVALID) ? RC_EXIT_USAGE : exit_for(error);
        goto done;
    }
    if (json) {
        cJSON *o = cJSON_CreateObject();
        cJSON *m = cJSON_AddArrayToObject(o, "mismatch");
        cJSON_AddStringToObject(o, "commit", r->cli->args[0]);
        cJSON_AddStringToObject(o, "source", res.source);
        cJSON_AddBoolToObject(o, "match", res.match);
        for (size_t i = 0; i < res.nmismatch; i++)
            cJSON_AddItemToArray(m, cJSON_CreateString(res.mismatch[i].path));
        print_json(o);
    } else if (res.match) {
        printf("match: %s recomputes to the same decisions and files (source %s)\n",
               r->cli->args[0], short_id(res.source));
    } else {
        printf("mismatch: %s does not recompute to the same result (source %s)\n", r->cli->args[0],
               short_id(res.source));
        for (size_t i = 0; i < res.nmismatch; i++)
            printf("  %c %s\n", res.mismatch[i].op, res.mismatch[i].path);
    }
    status = res.match ? RC_EXIT_OK : RC_EXIT_PARTIAL;
done:
    rc_arena_release(&a);
    return status;
}

/* ==== main ==== */

int main(int argc, char **argv)
{
    struct cli c;
    struct run r;
    struct rc_pass_options pass_init = RC_PASS_OPTIONS_INIT;
    struct rc_git_options git_init = RC_GIT_OPTIONS_INIT;
    struct rc_log log_init = RC_LOG_INIT;
    struct rc_err err = RC_ERR_INIT;
    char state_dir[PATH_MAX];
    int status;
    int error;

    memset(&c, 0, sizeof(c));
    c.pass = pass_init;
    c.git = git_init;
    c.log = log_init;
    if (argc >= 2 &&
        (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help"))) {
        usage(stdout);
        return RC_EXIT_OK;
    }
    if (argc >= 2 && !strcmp(argv[1], "--version")) {
        printf("rightplace %s\n", rc_version());
        return RC_EXIT_OK;
    }
    if (parse_args(&c, argc, argv) < 0) {
        usage(stderr);
        return RC_EXIT_USAGE;
    }
    if (strcmp(c.command, "reconcile") && strcmp(c.command, "plan") &&
        strcmp(c.command, "explain") && strcmp(c.command, "replay") &&
        strcmp(c.command, "status")) {
        fprintf(stderr, "rightplace: unknown command '%s'\n", c.command);
        usage(stderr);
        return RC_EXIT_USAGE;
    }
    if (c.source_rev && !strcmp(c.command, "reconcile")) {
        fprintf(stderr, "rightplace: --source is for plan, explain and status, not reconcile\n");
        return RC_EXIT_USAGE;
    }
    c.pass.paths = c.paths;
    c.pass.npaths = c.npaths;
    c.pass.log = &c.log;
    c.git.log = &c.log;

    if (c.state_dir) {
        snprintf(state_dir, sizeof(state_dir), "%s", c.state_dir);
    } else if (default_state_dir(state_dir, sizeof(state_dir), c.repo) < 0) {
        fprintf(stderr, "rightplace: cannot choose a state directory; give --state-dir\n");
        return RC_EXIT_USAGE;
    }
    if (mkdir_p(state_dir) < 0) {
        fprintf(stderr, "rightplace: cannot create state directory '%s': %s\n", state_dir,
                strerror(errno));
        return RC_EXIT_SYSTEM;
    }
    c.git.state_dir = state_dir;

    if (c.interval) {
        /* loop mode stops after the current pass; SA_RESTART keeps that pass's network I/O
         * from failing with EINTR. One-shot commands keep the default: stop now. */
        struct sigaction sa;
        memset(&sa, 0, sizeof(sa));
        sa.sa_handler = on_signal;
        sa.sa_flags = SA_RESTART;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGTERM, &sa, NULL);
        sigaction(SIGINT, &sa, NULL);
    }

    if (rc_git_global_init(&err) < 0 || rc_http_global_init(&err) < 0) {
        rc_log_error(&c.log, "%s", err.msg);
        return RC_EXIT_SYSTEM;
    }
    memset(&r, 0, sizeof(r));
    r.cli = &c;
    r.state_dir = state_dir;
    {
        /* the first open of a URL clones into the state directory: not while a pass runs */
        int once = !strcmp(c.command, "reconcile") && !c.interval;
        int other = 0;
        int fd = take_lock(state_dir, !once, &c.log, &other);
        if (fd < 0) {
            if (other)
                rc_log_error(&c.log, "another rightplace pass holds the lock on '%s'", state_dir);
            status = other ? RC_EXIT_LOCKED : RC_EXIT_SYSTEM;
            goto done;
        }
        error = rc_git_open(&r.git, c.repo, &c.git, &err);
        close(fd);
    }
    if (error < 0) {
        rc_log_error(&c.log, "%s", err.msg);
        status = error == RC_ENOTFOUND ? RC_EXIT_USAGE : RC_EXIT_SYSTEM;
        goto done;
    }
    if (!strcmp(c.command, "reconcile"))
        status = cmd_reconcile(&r);
    else if (!strcmp(c.command, "plan"))
        status = cmd_plan(&r);
    else if (!strcmp(c.command, "explain"))
        status = cmd_explain(&r);
    else if (!strcmp(c.command, "replay"))
        status = cmd_replay(&r);
    else
        status = cmd_status(&r);
done:
    rc_git_free(r.git);
    rc_http_global_cleanup();
    rc_git_global_shutdown();
    return status;
}
