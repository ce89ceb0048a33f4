/*
 * main.c - the rightplace command line: parses arguments, builds the context, runs a
 * command, and turns result codes into the documented exit statuses. The only file that
 * calls exit() or installs signal handlers; the only place process-wide library state is
 * set up (libgit2, libcurl).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <malloc.h>
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
#include "rc_apply.h"
#include "rc_cache.h"
#include "rc_clock.h"
#include "rc_git.h"
#include "rc_hash.h"
#include "rc_buf.h"
#include "rc_esc.h"
#include "rc_http.h"
#include "rc_kube.h"
#include "rc_kubeconfig.h"
#include "rc_log.h"
#include "rc_mem.h"
#include "rc_proc.h"
#include "rc_metrics.h"
#include "rc_watch.h"
#include "rc_pass.h"
#include "rc_version.h"

#include "rc_banned.h"

/* Exit statuses (the same table is in README.md). Every command uses them alike: a
 * configuration error is 2, an outage (a cluster that cannot be reached or applied to) 1,
 * bad input in the repository 3. */
enum rc_exit {
    RC_EXIT_OK = 0,      /* in sync / success; plan: no change; replay: match */
    RC_EXIT_PARTIAL = 1, /* outage: some cluster unreachable or some applies failed;
                            plan: changes pending; replay: mismatch */
    RC_EXIT_USAGE = 2,   /* usage or configuration error */
    RC_EXIT_INPUT = 3,   /* invalid repository input (reported files were not loaded) */
    RC_EXIT_SYSTEM = 4,  /* system error: git, I/O, exhausted retries */
    RC_EXIT_LOCKED = 5   /* another pass holds the state directory's lock */
};

/* Loop mode: SIGTERM/SIGINT stop after the running pass; SIGHUP/SIGUSR1 start a pass now. */
static volatile sig_atomic_t stop_requested;
static volatile sig_atomic_t pass_requested;

static void on_signal(int sig)
{
    if (sig == SIGHUP || sig == SIGUSR1)
        pass_requested = 1;
    else
        stop_requested = 1;
}

/* ==== Flags ==== */

enum opt_id {
    OPT_REPO,
    OPT_STATE_DIR,
    OPT_SOURCE_BRANCH,
    OPT_DEPLOY_BRANCH,
    OPT_TOKEN_FILE,
    OPT_SSH_KEY,
    OPT_KUBECONFIG,
    OPT_KUBECONFIG_DIR,
    OPT_PATH,
    OPT_LUNA,
    OPT_NO_LUNA,
    OPT_MODE,
    OPT_PROPOSE,
    OPT_COMMITTER_NAME,
    OPT_COMMITTER_EMAIL,
    OPT_ONCE,
    OPT_INTERVAL,
    OPT_NO_APPLY,
    OPT_RESYNC,
    OPT_APPLY_CONCURRENCY,
    OPT_FORCE,
    OPT_MAX_SOURCE,
    OPT_NO_PARSE_CACHE,
    OPT_REPLACE_UNREACHABLE,
    OPT_SOURCE,
    OPT_OUTPUT,
    OPT_LOCK_TIMEOUT,
    OPT_GIT_TIMEOUT,
    OPT_METRICS_FILE,
    OPT_LISTEN,
    OPT_LOG_LEVEL,
    OPT_LOG_JSON,
    OPT_HELP,
    OPT_COUNT
};

#define OPT_BIT(id) (UINT64_C(1) << (id))

struct opt_def {
    enum opt_id id;
    const char *name;  /* --name */
    char short_name;   /* -x (kubectl's short form), or 0 */
    const char *value; /* the value's name in help; NULL: a switch */
    const char *help;
};

static const struct opt_def opt_defs[] = {
    {OPT_REPO, "repo", 0, "R", "local path (used in place) or URL (cloned into the state dir)"},
    {OPT_STATE_DIR, "state-dir", 0, "D",
     "lock, clone and caches (default: the repository's git dir for a local\n"
     "path; ~/.local/state/rightplace/<hash> for a URL or a linked work tree)"},
    {OPT_SOURCE_BRANCH, "source-branch", 0, "B", "branch people push workloads to (default main)"},
    {OPT_DEPLOY_BRANCH, "deploy-branch", 0, "B",
     "branch rightplace writes placements to (default deploy)"},
    {OPT_TOKEN_FILE, "token-file", 0, "F",
     "HTTPS token for the git remote (or $RIGHTPLACE_GIT_TOKEN)"},
    {OPT_SSH_KEY, "ssh-key", 0, "F", "SSH private key for the git remote (default: ssh-agent)"},
    {OPT_GIT_TIMEOUT, "git-timeout", 0, "DURATION",
     "give up on a git remote that sends and takes nothing for DURATION\n"
     "(default 2m)"},
    {OPT_KUBECONFIG, "kubeconfig", 0, "F",
     "a kubeconfig whose contexts Cluster objects may select (repeatable;\n"
     "default $RIGHTPLACE_KUBECONFIG; never $KUBECONFIG nor ~/.kube/config)"},
    {OPT_KUBECONFIG_DIR, "kubeconfig-dir", 0, "D",
     "kubeconfigs Cluster objects may select by file name\n"
     "(default $RIGHTPLACE_KUBECONFIG_DIR; docs/security.md)"},
    {OPT_PATH, "path", 0, "P", "load manifests only under P (repeatable; default: all)"},
    {OPT_LUNA, "luna-label", 0, "K=V", "label added to pod templates (default elotl-luna=true)"},
    {OPT_NO_LUNA, "no-luna-label", 0, NULL, "add no Luna label"},
    {OPT_MODE, "mode", 0, "push|pull",
     "pull: Flux or Argo CD applies the deploy branch; no apply, no managed-by\n"
     "label (docs/pull-mode.md; default push)"},
    {OPT_PROPOSE, "propose", 0, "BRANCH",
     "commit decisions to BRANCH, on top of the deploy branch, for review;\n"
     "the deploy branch moves only when a person promotes BRANCH"},
    {OPT_COMMITTER_NAME, "committer-name", 0, "NAME",
     "author and committer of placement commits and notes\n"
     "(default $RIGHTPLACE_COMMITTER_NAME, else rightplace)"},
    {OPT_COMMITTER_EMAIL, "committer-email", 0, "EMAIL",
     "their email (default $RIGHTPLACE_COMMITTER_EMAIL, else rightplace@localhost)"},
    {OPT_ONCE, "once", 0, NULL, "one pass, then exit (the default)"},
    {OPT_INTERVAL, "interval", 0, "DURATION",
     "run a pass every DURATION (30s, 5m, 1h; a bare number is seconds)\n"
     "until SIGTERM or SIGINT"},
    {OPT_NO_APPLY, "no-apply", 0, NULL, "commit placements, but do not apply them to clusters"},
    {OPT_RESYNC, "resync", 0, NULL, "apply every object, not only what changed"},
    {OPT_APPLY_CONCURRENCY, "apply-concurrency", 0, "N",
     "requests in flight per cluster while applying (1-256, default 32)"},
    {OPT_FORCE, "force", 0, NULL, "run the pass even when nothing seems to have changed"},
    {OPT_MAX_SOURCE, "max-source-mib", 0, "N",
     "memory one pass may hold parsed (default 1024, or\n"
     "$RIGHTPLACE_MAX_SOURCE_MIB); past it the largest files are refused,\n"
     "each with an error"},
    {OPT_NO_PARSE_CACHE, "no-parse-cache", 0, NULL,
     "parse every source file read and the deploy head's record; do not\n"
     "read or write the state directory's parse-cache and record-cache"},
    {OPT_REPLACE_UNREACHABLE, "replace-unreachable-after", 0, "DURATION",
     "move units off a live cluster unreachable for longer than DURATION\n"
     "(policies' rightplace.dev/replace-unreachable-after overrides; default off)"},
    {OPT_SOURCE, "source", 0, "REV", "use REV instead of the source branch head"},
    {OPT_OUTPUT, "output", 'o', "FORMAT", "text (default) or json"},
    {OPT_LOCK_TIMEOUT, "lock-timeout", 0, "DURATION",
     "wait at most DURATION for a running pass to release the lock\n"
     "(default 60s; 0: do not wait)"},
    {OPT_METRICS_FILE, "metrics-file", 0, "PATH",
     "after each pass, write Prometheus metrics to PATH (atomically: for\n"
     "node_exporter's textfile collector)"},
    {OPT_LISTEN, "listen", 0, "ADDR:PORT",
     "with --interval: serve /metrics and /healthz on ADDR:PORT (\":9090\"\n"
     "binds 127.0.0.1)"},
    {OPT_LOG_LEVEL, "log-level", 0, "L", "error, warn, info (default) or debug"},
    {OPT_LOG_JSON, "log-json", 0, NULL, "log lines as JSON objects"},
    {OPT_HELP, "help", 'h', NULL, "show this help"},
};

#define OPTS_REPO                                                                                  \
    (OPT_BIT(OPT_REPO) | OPT_BIT(OPT_STATE_DIR) | OPT_BIT(OPT_SOURCE_BRANCH) |                     \
     OPT_BIT(OPT_DEPLOY_BRANCH) | OPT_BIT(OPT_TOKEN_FILE) | OPT_BIT(OPT_SSH_KEY) |                 \
     OPT_BIT(OPT_GIT_TIMEOUT) | OPT_BIT(OPT_KUBECONFIG) | OPT_BIT(OPT_KUBECONFIG_DIR))
#define OPTS_RENDER                                                                                \
    (OPT_BIT(OPT_PATH) | OPT_BIT(OPT_LUNA) | OPT_BIT(OPT_NO_LUNA) | OPT_BIT(OPT_MODE))
#define OPTS_LOG (OPT_BIT(OPT_LOG_LEVEL) | OPT_BIT(OPT_LOG_JSON) | OPT_BIT(OPT_HELP))
#define OPTS_READ                                                                                  \
    (OPTS_REPO | OPTS_RENDER | OPTS_LOG | OPT_BIT(OPT_OUTPUT) | OPT_BIT(OPT_LOCK_TIMEOUT))

/* ==== Commands ==== */

struct cli;
struct run;

struct cmd_def {
    const char *name;
    const char *args; /* positional arguments in help ("WORKLOAD"); NULL: none */
    size_t min_args, max_args;
    uint64_t opts; /* the flags it takes (OPT_BIT) */
    int repo;      /* 1: needs --repo; the repository is opened before exec */
    const char *summary;
    const char *help; /* shown by `rightplace COMMAND --help` */
    int (*exec)(struct run *);
};

static int cmd_reconcile(struct run *r);
static int cmd_plan(struct run *r);
static int cmd_explain(struct run *r);
static int cmd_replay(struct run *r);
static int cmd_status(struct run *r);
static int cmd_diff(struct run *r);
static int cmd_version(struct run *r);
static int cmd_suspend(struct run *r);
static int cmd_resume(struct run *r);
static int cmd_help(struct run *r);

/* Every command, in the order `rightplace --help` lists them. */
static const struct cmd_def cmd_table[] = {
    {"reconcile", NULL, 0, 0,
     OPTS_REPO | OPTS_RENDER | OPTS_LOG | OPT_BIT(OPT_ONCE) | OPT_BIT(OPT_INTERVAL) |
         OPT_BIT(OPT_NO_APPLY) | OPT_BIT(OPT_RESYNC) | OPT_BIT(OPT_APPLY_CONCURRENCY) |
         OPT_BIT(OPT_FORCE) | OPT_BIT(OPT_MAX_SOURCE) | OPT_BIT(OPT_NO_PARSE_CACHE) |
         OPT_BIT(OPT_PROPOSE) | OPT_BIT(OPT_REPLACE_UNREACHABLE) | OPT_BIT(OPT_COMMITTER_NAME) |
         OPT_BIT(OPT_COMMITTER_EMAIL) | OPT_BIT(OPT_METRICS_FILE) | OPT_BIT(OPT_LISTEN),
     1, "place what changed, commit to the deploy branch, apply",
     "Place what changed on the source branch, commit the decisions and the rendered\n"
     "directories to the deploy branch, and apply them to the live clusters. One pass\n"
     "by default; --interval runs a pass every DURATION until SIGTERM or SIGINT, and\n"
     "SIGHUP or SIGUSR1 starts the next pass now. While the file 'suspend' exists in the\n"
     "state directory ('rightplace suspend'), passes place and commit but do not apply.",
     cmd_reconcile},
    {"plan", NULL, 0, 0,
     OPTS_READ | OPT_BIT(OPT_SOURCE) | OPT_BIT(OPT_REPLACE_UNREACHABLE) |
         OPT_BIT(OPT_NO_PARSE_CACHE),
     1, "show what a pass would decide; write nothing",
     "Show the decisions and files a pass would change; write nothing.\n"
     "exit status: 0 no change, 1 changes pending (or a cluster unreachable),\n"
     "2 configuration, 3 some files did not load, 4 system, 5 locked.",
     cmd_plan},
    {"explain", "WORKLOAD", 1, 1, OPTS_READ | OPT_BIT(OPT_SOURCE) | OPT_BIT(OPT_NO_PARSE_CACHE), 1,
     "where a workload is placed, or why it is pending",
     "Say where a workload is placed, or why it is pending, with every candidate\n"
     "cluster's verdict. WORKLOAD: ns/Kind/name, ns/name, name or a unit id.",
     cmd_explain},
    {"replay", "COMMIT", 1, 1, OPTS_READ | OPT_BIT(OPT_REPLACE_UNREACHABLE), 1,
     "recompute a deploy commit's decisions and compare",
     "Recompute a deploy commit's decisions from what it recorded and compare the\n"
     "result with the commit. exit status 1: mismatch.",
     cmd_replay},
    {"status", NULL, 0, 0, OPTS_READ | OPT_BIT(OPT_SOURCE) | OPT_BIT(OPT_NO_PARSE_CACHE), 1,
     "placements and capacity per cluster",
     "Show each cluster's capacity and units, and what is not placed.", cmd_status},
    {"diff", NULL, 0, 0, OPTS_READ | OPT_BIT(OPT_NO_PARSE_CACHE), 1,
     "the deploy branch against the live clusters",
     "Server-side dry-run (dryRun=All) of every object of the deploy branch against each\n"
     "live cluster, showing what differs from the live objects as unified diffs, in the\n"
     "style of kubectl diff. Exit 0: no drift; 1: drift; 4: some cluster or object could\n"
     "not be compared.",
     cmd_diff},
    {"suspend", NULL, 0, 0, OPTS_REPO | OPTS_LOG, 1, "stop applying; keep placing and committing",
     "Stop applying to clusters: passes go on placing and committing to the deploy\n"
     "branch, and apply nothing until 'rightplace resume'. Creates the file 'suspend'\n"
     "in the state directory (a running loop sees it at its next pass).",
     cmd_suspend},
    {"resume", NULL, 0, 0, OPTS_REPO | OPTS_LOG, 1, "apply again after suspend",
     "Apply again: removes the state directory's 'suspend' file. The next pass applies\n"
     "everything that changed since each cluster was last applied to.",
     cmd_resume},
    {"version", NULL, 0, 0, OPT_BIT(OPT_OUTPUT) | OPT_BIT(OPT_HELP), 0, "show the version",
     "Show the version of rightplace.", cmd_version},
    {"help", "[COMMAND]", 0, 1, OPT_BIT(OPT_HELP), 0, "show the commands, or one command's flags",
     "Show the commands, or one command's flags.", cmd_help},
};

#define NCMDS (sizeof(cmd_table) / sizeof(cmd_table[0]))
#define NOPTS (sizeof(opt_defs) / sizeof(opt_defs[0]))

struct cli {
    const struct cmd_def *cmd;
    const char *repo;
    const char *state_dir;
    const char *source_rev;
    const char *output; /* "text" | "json" */
    const char *paths[64];
    size_t npaths;
    const char *args[8];
    size_t nargs;
    long interval;     /* seconds; 0: once */
    long lock_timeout; /* seconds a read-only command waits for the lock */
    const char *metrics_file;
    const char *listen;
    int once;
    int no_parse_cache; /* --no-parse-cache */
    char luna_buf[256];
    const char *committer_name;  /* NULL: $RIGHTPLACE_COMMITTER_NAME, else rc_git's default */
    const char *committer_email; /* NULL: $RIGHTPLACE_COMMITTER_EMAIL, else rc_git's default */
    struct rc_pass_options pass;
    struct rc_git_options git;
    struct rc_log log;
    const char *kubeconfig_files[64]; /* --kubeconfig */
    size_t nkubeconfig_files;
    const char *kubeconfig_dir;               /* --kubeconfig-dir */
    struct rc_kubeconfig_sources kubeconfigs; /* the operator's: Clusters select among them */
    struct rc_kube_options kube;
};

/* ==== Help and suggestions ==== */

static void usage(FILE *f)
{
    fputs("usage: rightplace COMMAND [flags] [arguments]\n\ncommands:\n", f);
    for (size_t i = 0; i < NCMDS; i++) {
        char left[64];
        snprintf(left, sizeof(left), "%s%s%s", cmd_table[i].name, cmd_table[i].args ? " " : "",
                 cmd_table[i].args ? cmd_table[i].args : "");
        fprintf(f, "  %-20s %s\n", left, cmd_table[i].summary);
    }
    fputs("\n'rightplace COMMAND --help' shows a command's flags; 'rightplace --version'\n"
          "(or 'rightplace version') the version.\n"
          "\n"
          "exit status: 0 ok, 1 outage (a cluster unreachable or not fully applied) /\n"
          "plan: changes pending / replay: mismatch, 2 usage or configuration,\n"
          "3 invalid repository input, 4 system error, 5 another pass holds the lock\n",
          f);
}

static void print_opt_help(FILE *f, const struct opt_def *o)
{
    char left[64];
    const char *h = o->help;

    if (o->short_name)
        snprintf(left, sizeof(left), "-%c, --%s%s%s", o->short_name, o->name, o->value ? " " : "",
                 o->value ? o->value : "");
    else
        snprintf(left, sizeof(left), "    --%s%s%s", o->name, o->value ? " " : "",
                 o->value ? o->value : "");
    fprintf(f, "  %-28s ", left);
    /* continuation lines of a help text line up under its first */
    for (; *h; h++) {
        fputc(*h, f);
        if (*h == '\n')
            fprintf(f, "  %-28s ", "");
    }
    fputc('\n', f);
}

static void command_usage(FILE *f, const struct cmd_def *cmd)
{
    fprintf(f, "usage: rightplace %s%s%s%s\n\n%s\n\nflags:\n", cmd->name,
            cmd->opts & ~OPT_BIT(OPT_HELP) ? " [flags]" : "", cmd->args ? " " : "",
            cmd->args ? cmd->args : "", cmd->help);
    for (size_t i = 0; i < NOPTS; i++) {
        if (cmd->opts & OPT_BIT(opt_defs[i].id))
            print_opt_help(f, &opt_defs[i]);
    }
}

/* Optimal string alignment distance (Levenshtein plus adjacent transpositions), capped. */
static size_t edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    size_t d[40][40];

    if (la >= 40 || lb >= 40)
        return 99;
    for (size_t i = 0; i <= la; i++)
        d[i][0] = i;
    for (size_t j = 0; j <= lb; j++)
        d[0][j] = j;
    for (size_t i = 1; i <= la; i++) {
        for (size_t j = 1; j <= lb; j++) {
            size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
            size_t v = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < v)
                v = d[i][j - 1] + 1;
            if (d[i - 1][j - 1] + cost < v)
                v = d[i - 1][j - 1] + cost;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                d[i - 2][j - 2] + 1 < v)
                v = d[i - 2][j - 2] + 1;
            d[i][j] = v;
        }
    }
    return d[la][lb];
}

/* How far a typo may be from what was meant and still be suggested. */
static size_t typo_budget(const char *word)
{
    size_t n = strlen(word);
    return n <= 3 ? 1 : n <= 7 ? 2 : 3;
}

/* The closest name to `word` among candidates (NULL entries skipped), or NULL. A word that
 * is a prefix of exactly one candidate suggests that candidate. */
static const char *closest(const char *word, const char *const *cands, size_t n)
{
    const char *best = NULL, *prefix = NULL;
    size_t bestd = typo_budget(word) + 1;
    size_t nprefix = 0;

    for (size_t i = 0; i < n; i++) {
        size_t d;
        if (!cands[i])
            continue;
        if (strlen(word) >= 2 && !strncmp(cands[i], word, strlen(word))) {
            prefix = cands[i];
            nprefix++;
        }
        d = edit_distance(word, cands[i]);
        if (d < bestd) {
            bestd = d;
            best = cands[i];
        }
    }
    if (best)
        return best;
    return nprefix == 1 ? prefix : NULL;
}

/* What people coming from kubectl, Flux or Argo CD type, and our nearest command. */
static const char *command_alias(const char *word)
{
    static const char *const aliases[][2] = {
        {"get", "status"},    {"list", "status"},  {"ls", "status"},       {"describe", "explain"},
        {"why", "explain"},   {"show", "explain"}, {"apply", "reconcile"}, {"sync", "reconcile"},
        {"run", "reconcile"}, {"check", "plan"},   {"dry-run", "plan"},    {"diff", "plan"},
        {"verify", "replay"},
    };
    for (size_t i = 0; i < sizeof(aliases) / sizeof(aliases[0]); i++) {
        if (!strcmp(aliases[i][0], word))
            return aliases[i][1];
    }
    return NULL;
}

static const struct cmd_def *find_command(const char *name)
{
    for (size_t i = 0; i < NCMDS; i++) {
        if (!strcmp(cmd_table[i].name, name))
            return &cmd_table[i];
    }
    return NULL;
}

static void unknown_command(const char *word)
{
    const char *names[NCMDS];
    const char *s;

    for (size_t i = 0; i < NCMDS; i++)
        names[i] = cmd_table[i].name;
    s = closest(word, names, NCMDS);
    if (!s && find_command(command_alias(word) ? command_alias(word) : ""))
        s = command_alias(word);
    if (s)
        fprintf(stderr, "rightplace: unknown command '%s'; did you mean '%s'?\n", word, s);
    else
        fprintf(stderr, "rightplace: unknown command '%s'\n", word);
    fputs("run 'rightplace --help' for the list of commands\n", stderr);
}

/* The commands a flag applies to, as "plan, explain and status". */
static void commands_of(char *out, size_t n, enum opt_id id)
{
    size_t used = 0, k = 0, total = 0;

    out[0] = '\0';
    for (size_t i = 0; i < NCMDS; i++)
        total += (cmd_table[i].opts & OPT_BIT(id)) != 0;
    for (size_t i = 0; i < NCMDS && used < n; i++) {
        if (!(cmd_table[i].opts & OPT_BIT(id)))
            continue;
        k++;
        used += (size_t)snprintf(out + used, n - used, "%s%s",
                                 k == 1       ? ""
                                 : k == total ? " and "
                                              : ", ",
                                 cmd_table[i].name);
    }
}

static void unknown_flag(const struct cmd_def *cmd, const char *flag, size_t len)
{
    const char *names[NOPTS];
    char word[64];
    const char *s;

    snprintf(word, sizeof(word), "%.*s", (int)(len < 60 ? len : 60), flag);
    for (size_t i = 0; i < NOPTS; i++)
        names[i] = cmd->opts & OPT_BIT(opt_defs[i].id) ? opt_defs[i].name : NULL;
    s = word[0] == '-' && word[1] == '-' ? closest(word + 2, names, NOPTS) : NULL;
    if (s)
        fprintf(stderr, "rightplace: unknown flag '%s' for %s; did you mean '--%s'?\n", word,
                cmd->name, s);
    else
        fprintf(stderr, "rightplace: unknown flag '%s' for %s\n", word, cmd->name);
    fprintf(stderr, "run 'rightplace %s --help' for its flags\n", cmd->name);
}

/* ==== Parsing ==== */

/* "30", "30s", "5m", "1h", "1h30m": seconds in *out (0 allowed when allow_zero). */
static int parse_duration(long *out, const char *s, int allow_zero)
{
    long total = 0;
    const char *p = s;

    if (!*p)
        return -1;
    while (*p) {
        long v = 0, mult;
        if (*p < '0' || *p > '9')
            return -1;
        for (; *p >= '0' && *p <= '9'; p++) {
            v = v * 10 + (*p - '0');
            if (v > 86400L * 7)
                return -1;
        }
        switch (*p) {
        case '\0':
            /* a bare number is seconds, and only alone */
            if (p != s + strspn(s, "0123456789"))
                return -1;
            mult = 1;
            break;
        case 's':
            mult = 1;
            p++;
            break;
        case 'm':
            mult = 60;
            p++;
            break;
        case 'h':
            mult = 3600;
            p++;
            break;
        default:
            return -1;
        }
        total += v * mult;
        if (total > 86400L * 7)
            return -1;
    }
    if (total == 0 && !allow_zero)
        return -1;
    *out = total;
    return 0;
}

/* "N" MiB (1 .. 2^20) into bytes; -1 when malformed. */
static int parse_mib(size_t *out, const char *s)
{
    char *end;
    long v;

    errno = 0;
    v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < 1 || v > (1L << 20))
        return -1;
    *out = (size_t)v << 20;
    return 0;
}

static int set_opt(struct cli *c, const struct opt_def *o, const char *v)
{
    switch (o->id) {
    case OPT_REPO:
        c->repo = v;
        break;
    case OPT_STATE_DIR:
        c->state_dir = v;
        break;
    case OPT_SOURCE_BRANCH:
        c->pass.source_branch = v;
        break;
    case OPT_DEPLOY_BRANCH:
        c->pass.deploy_branch = v;
        break;
    case OPT_TOKEN_FILE:
        c->git.token_file = v;
        break;
    case OPT_SSH_KEY:
        c->git.ssh_key = v;
        break;
    case OPT_KUBECONFIG:
        if (c->nkubeconfig_files == sizeof(c->kubeconfig_files) / sizeof(c->kubeconfig_files[0])) {
            fprintf(stderr, "rightplace: at most %zu --kubeconfig flags\n", c->nkubeconfig_files);
            return -1;
        }
        c->kubeconfig_files[c->nkubeconfig_files++] = v;
        break;
    case OPT_KUBECONFIG_DIR:
        c->kubeconfig_dir = v;
        break;
    case OPT_PATH:
        if (c->npaths == sizeof(c->paths) / sizeof(c->paths[0])) {
            fprintf(stderr, "rightplace: at most %zu --path flags\n", c->npaths);
            return -1;
        }
        c->paths[c->npaths++] = v;
        break;
    case OPT_LUNA: {
        const char *eq = strchr(v, '=');
        size_t n = strlen(v);
        if (!eq || eq == v || n >= sizeof(c->luna_buf)) {
            fprintf(stderr, "rightplace: --luna-label wants KEY=VALUE, got '%s'\n", v);
            return -1;
        }
        memcpy(c->luna_buf, v, n + 1);
        c->luna_buf[eq - v] = '\0';
        c->pass.render.luna_key = c->luna_buf;
        c->pass.render.luna_value = c->luna_buf + (eq - v) + 1;
        break;
    }
    case OPT_NO_LUNA:
        c->pass.render.luna_key = NULL;
        c->pass.render.luna_value = NULL;
        break;
    case OPT_MODE:
        if (strcmp(v, "push") && strcmp(v, "pull")) {
            fprintf(stderr, "rightplace: --mode wants push or pull, got '%s'\n", v);
            return -1;
        }
        c->pass.render.pull = !strcmp(v, "pull");
        break;
    case OPT_PROPOSE:
        c->pass.propose_branch = v;
        break;
    case OPT_COMMITTER_NAME:
        c->committer_name = v;
        break;
    case OPT_COMMITTER_EMAIL:
        c->committer_email = v;
        break;
    case OPT_ONCE:
        c->once = 1;
        break;
    case OPT_INTERVAL:
        if (parse_duration(&c->interval, v, 0) < 0) {
            fprintf(stderr,
                    "rightplace: invalid --interval '%s': give a duration with a unit s, m or h "
                    "(30s, 5m, 1h; at most 7 days)\n",
                    v);
            return -1;
        }
        break;
    case OPT_LOCK_TIMEOUT:
        if (parse_duration(&c->lock_timeout, v, 1) < 0) {
            fprintf(stderr,
                    "rightplace: invalid --lock-timeout '%s': give a duration with a unit s, m "
                    "or h (30s, 5m, 1h), or 0\n",
                    v);
            return -1;
        }
        break;
    case OPT_GIT_TIMEOUT: {
        long s;
        if (parse_duration(&s, v, 0) < 0) {
            fprintf(stderr,
                    "rightplace: invalid --git-timeout '%s': give a duration with a unit s, m "
                    "or h (30s, 5m, 1h)\n",
                    v);
            return -1;
        }
        rc_git_set_timeout(s);
        break;
    }
    case OPT_NO_APPLY:
        c->pass.apply = 0;
        break;
    case OPT_METRICS_FILE:
        c->metrics_file = v;
        break;
    case OPT_LISTEN:
        c->listen = v;
        break;
    case OPT_RESYNC:
        c->pass.resync = 1;
        break;
    case OPT_APPLY_CONCURRENCY: {
        char *end = NULL;
        long n = strtol(v, &end, 10);

        if (!*v || *end || n < 1 || n > 256) {
            fprintf(stderr, "rightplace: invalid --apply-concurrency '%s': give 1 to 256\n", v);
            return -1;
        }
        c->kube.concurrency = (int)n;
        break;
    }
    case OPT_FORCE:
        c->pass.force = 1;
        break;
    case OPT_NO_PARSE_CACHE:
        c->no_parse_cache = 1;
        break;
    case OPT_MAX_SOURCE:
        if (parse_mib(&c->pass.max_source_bytes, v) < 0) {
            fprintf(stderr, "rightplace: invalid --max-source-mib '%s': give 1 to 1048576\n", v);
            return -1;
        }
        break;
    case OPT_REPLACE_UNREACHABLE: {
        long d;
        if (parse_duration(&d, v, 0) < 0) {
            fprintf(stderr, "rightplace: invalid --replace-unreachable-after '%s': give e.g. 5m\n",
                    v);
            return -1;
        }
        c->pass.replace_unreachable_after = d;
        break;
    }
    case OPT_SOURCE:
        c->source_rev = v;
        break;
    case OPT_OUTPUT:
        if (strcmp(v, "text") && strcmp(v, "json")) {
            fprintf(stderr, "rightplace: --output wants text or json, got '%s'\n", v);
            return -1;
        }
        c->output = v;
        break;
    case OPT_LOG_LEVEL: {
        int l = rc_log_level_parse(v);
        if (l < 0) {
            fprintf(stderr, "rightplace: unknown log level '%s'; use error, warn, info or debug\n",
                    v);
            return -1;
        }
        c->log.level = (enum rc_log_level)l;
        break;
    }
    case OPT_LOG_JSON:
        c->log.json = 1;
        break;
    case OPT_HELP:
    case OPT_COUNT:
        break;
    }
    return 0;
}

/* The flag definition `arg` names ("--name", "--name=value", "-x", "-xvalue"), or NULL;
 * *inline_value is set when the value is part of arg. */
static const struct opt_def *lookup_flag(const char *arg, const char **inline_value)
{
    *inline_value = NULL;
    if (arg[1] == '-') {
        const char *name = arg + 2;
        const char *eq = strchr(name, '=');
        size_t n = eq ? (size_t)(eq - name) : strlen(name);
        for (size_t i = 0; i < NOPTS; i++) {
            if (strlen(opt_defs[i].name) == n && !strncmp(opt_defs[i].name, name, n)) {
                *inline_value = eq ? eq + 1 : NULL;
                return &opt_defs[i];
            }
        }
        return NULL;
    }
    for (size_t i = 0; i < NOPTS; i++) {
        if (opt_defs[i].short_name && opt_defs[i].short_name == arg[1]) {
            *inline_value = arg[2] ? arg + 2 + (arg[2] == '=') : NULL;
            return &opt_defs[i];
        }
    }
    return NULL;
}

static int is_flag(const char *arg)
{
    return arg[0] == '-' && arg[1] && strcmp(arg, "--");
}

/* The index of the command word in argv (flags may come before it), or 0. */
static int find_command_index(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *iv;
        const struct opt_def *o;
        if (!strcmp(argv[i], "--"))
            return i + 1 < argc ? i + 1 : 0;
        if (!is_flag(argv[i]))
            return i;
        o = lookup_flag(argv[i], &iv);
        if (o && o->value && !iv)
            i++;
    }
    return 0;
}

/* Returns 0 to run c->cmd, 1 when help was shown (exit 0), -1 after a usage error. */
static int parse_args(struct cli *c, int argc, char **argv)
{
    int ci = find_command_index(argc, argv);
    int help = 0, dashdash = 0;

    if (!ci) {
        for (int i = 1; i < argc; i++) {
            if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
                usage(stdout);
                return 1;
            }
            if (!strcmp(argv[i], "--version")) {
                printf("rightplace %s\n", rc_version());
                return 1;
            }
        }
        fputs("rightplace: no command given\n"
              "usage: rightplace COMMAND [flags]; 'rightplace --help' lists the commands\n",
              stderr);
        return -1;
    }
    c->cmd = find_command(argv[ci]);
    if (!c->cmd) {
        unknown_command(argv[ci]);
        return -1;
    }
    for (int i = 1; i < argc; i++) {
        const struct opt_def *o;
        const char *v;
        if (i == ci)
            continue;
        if (dashdash || !is_flag(argv[i])) {
            if (!dashdash && !strcmp(argv[i], "--")) {
                dashdash = 1;
                continue;
            }
            if (c->nargs == sizeof(c->args) / sizeof(c->args[0]) || c->nargs >= c->cmd->max_args) {
                if (c->cmd->max_args == 0)
                    fprintf(stderr, "rightplace: %s takes no arguments; got '%s'\n", c->cmd->name,
                            argv[i]);
                else
                    fprintf(stderr, "rightplace: %s takes one %s; got also '%s'\n", c->cmd->name,
                            c->cmd->args, argv[i]);
                fprintf(stderr, "run 'rightplace %s --help' for its usage\n", c->cmd->name);
                return -1;
            }
            c->args[c->nargs++] = argv[i];
            continue;
        }
        o = lookup_flag(argv[i], &v);
        if (!o) {
            size_t n = strcspn(argv[i], "=");
            unknown_flag(c->cmd, argv[i], argv[i][1] == '-' ? n : 2);
            return -1;
        }
        if (!(c->cmd->opts & OPT_BIT(o->id))) {
            char list[256];
            commands_of(list, sizeof(list), o->id);
            fprintf(stderr, "rightplace: flag '--%s' does not apply to %s%s%s\n", o->name,
                    c->cmd->name, list[0] ? "; it is for " : "", list);
            fprintf(stderr, "run 'rightplace %s --help' for its flags\n", c->cmd->name);
            return -1;
        }
        if (o->id == OPT_HELP) {
            help = 1;
            continue;
        }
        if (o->value && !v) {
            if (i + 1 >= argc) {
                fprintf(stderr, "rightplace: flag '--%s' wants a value (%s)\n", o->name, o->value);
                return -1;
            }
            v = argv[++i];
        } else if (!o->value && v) {
            fprintf(stderr, "rightplace: flag '--%s' takes no value; got '%s'\n", o->name, v);
            return -1;
        }
        if (set_opt(c, o, v) < 0)
            return -1;
    }
    if (help) {
        command_usage(stdout, c->cmd);
        return 1;
    }
    if (c->nargs < c->cmd->min_args) {
        fprintf(stderr, "rightplace: %s wants %s\n", c->cmd->name, c->cmd->args);
        fprintf(stderr, "run 'rightplace %s --help' for its usage\n", c->cmd->name);
        return -1;
    }
    if (c->cmd->repo && !c->repo) {
        fprintf(stderr,
                "rightplace: %s needs --repo: the repository to place from (a path or a URL)\n",
                c->cmd->name);
        return -1;
    }
    if (c->pass.propose_branch && (!strcmp(c->pass.propose_branch, c->pass.deploy_branch) ||
                                   !strcmp(c->pass.propose_branch, c->pass.source_branch))) {
        fprintf(stderr,
                "rightplace: --propose %s: the proposal branch must differ from the source and "
                "deploy branches\n",
                c->pass.propose_branch);
        return -1;
    }
    if (c->pass.render.pull) /* Flux or Argo CD applies */
        c->pass.apply = 0;
    if (c->once && c->interval) {
        fputs("rightplace: --once and --interval exclude each other\n", stderr);
        return -1;
    }
    if (c->listen && !c->interval) {
        fputs("rightplace: --listen serves metrics while a loop runs: give --interval too "
              "(one pass: --metrics-file)\n",
              stderr);
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

/* How a local --repo path holds its git data. */
enum repo_kind { REPO_NONE, REPO_WORK_TREE, REPO_BARE, REPO_LINKED };

static enum repo_kind local_repo_kind(const char *repo)
{
    char p[PATH_MAX];
    struct stat st;

    if (snprintf(p, sizeof(p), "%s/.git", repo) < (int)sizeof(p) && lstat(p, &st) == 0)
        return S_ISDIR(st.st_mode) ? REPO_WORK_TREE : REPO_LINKED; /* .git file: worktree */
    /* a bare repository: HEAD, objects/ and refs/ at the top */
    if (snprintf(p, sizeof(p), "%s/HEAD", repo) >= (int)sizeof(p) || stat(p, &st) < 0 ||
        !S_ISREG(st.st_mode))
        return REPO_NONE;
    if (snprintf(p, sizeof(p), "%s/objects", repo) >= (int)sizeof(p) || stat(p, &st) < 0 ||
        !S_ISDIR(st.st_mode))
        return REPO_NONE;
    if (snprintf(p, sizeof(p), "%s/refs", repo) >= (int)sizeof(p) || stat(p, &st) < 0 ||
        !S_ISDIR(st.st_mode))
        return REPO_NONE;
    return REPO_BARE;
}

/* A local --repo that is not a repository is refused before anything is written (no state
 * directory inside someone's folder). Returns 0 or prints why and returns -1. */
static int check_local_repo(const char *repo, const struct rc_log *log)
{
    struct stat st;

    if (rc_git_is_url(repo))
        return 0;
    if (stat(repo, &st) < 0) {
        rc_log_error(log, "--repo '%s': %s", repo, strerror(errno));
        return -1;
    }
    if (!S_ISDIR(st.st_mode)) {
        rc_log_error(log, "--repo '%s' is not a directory", repo);
        return -1;
    }
    if (local_repo_kind(repo) == REPO_NONE) {
        rc_log_error(log,
                     "--repo '%s' is not a git repository (no .git in it, not a bare "
                     "repository); give the top of a repository or a URL",
                     repo);
        return -1;
    }
    return 0;
}

static int default_state_dir(char *out, size_t n, const char *repo)
{
    char hex[17];
    char abs[PATH_MAX];
    const char *base;
    const char *key = repo;

    if (!rc_git_is_url(repo)) {
        switch (local_repo_kind(repo)) {
        case REPO_WORK_TREE:
            return snprintf(out, n, "%s/.git/rightplace", repo) < (int)n ? 0 : -1;
        case REPO_BARE:
            return snprintf(out, n, "%s/rightplace", repo) < (int)n ? 0 : -1;
        case REPO_LINKED:
        case REPO_NONE:
            /* keyed by the real path; nothing is written into the work tree */
            if (realpath(repo, abs))
                key = abs;
            break;
        }
    }
    {
        /* keyed by the URL without credentials: a rotated token is the same mirror */
        char *clean = NULL, *user = NULL, *pass = NULL;

        rc_git_url_split(key, &clean, &user, &pass);
        rc_hash_hex(rc_fnv1a_str(RC_FNV_INIT, clean), hex);
        free(clean);
        if (user)
            memset(user, 0, strlen(user));
        if (pass)
            memset(pass, 0, strlen(pass));
        free(user);
        free(pass);
    }
    base = getenv("XDG_STATE_HOME");
    if (base && base[0])
        return snprintf(out, n, "%s/rightplace/%s", base, hex) < (int)n ? 0 : -1;
    base = getenv("HOME");
    if (!base || !base[0])
        return -1;
    return snprintf(out, n, "%s/.local/state/rightplace/%s", base, hex) < (int)n ? 0 : -1;
}

static void lock_path(char *out, size_t n, const char *state_dir)
{
    snprintf(out, n, "%s/lock", state_dir);
}

/* The pid the holder of the lock wrote into it, or 0. */
static long lock_holder(const char *state_dir)
{
    char path[PATH_MAX], buf[32];
    long pid = 0;
    ssize_t got;
    int fd;

    lock_path(path, sizeof(path), state_dir);
    fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return 0;
    got = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (got <= 0)
        return 0;
    buf[got] = '\0';
    for (const char *p = buf; *p >= '0' && *p <= '9'; p++)
        pid = pid * 10 + (*p - '0');
    return pid;
}

/* Try the state directory's lock once; returns the fd (close it to release) or -1, with
 * *locked_by_other set when another process holds it. The holder writes its pid into the
 * file, so that a waiting command can say whom it waits for. */
static int try_lock(const char *state_dir, const struct rc_log *log, int *locked_by_other)
{
    char path[PATH_MAX];
    char pid[32];
    int fd, n;

    *locked_by_other = 0;
    lock_path(path, sizeof(path), state_dir);
    fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
        rc_log_error(log, "cannot open lock '%s': %s", path, strerror(errno));
        return -1;
    }
    while (flock(fd, LOCK_EX | LOCK_NB) < 0) {
        if (errno == EINTR)
            continue;
        if (errno == EWOULDBLOCK)
            *locked_by_other = 1;
        else
            rc_log_error(log, "cannot lock '%s': %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    n = snprintf(pid, sizeof(pid), "%ld\n", (long)getpid());
    if (ftruncate(fd, 0) == 0 && pwrite(fd, pid, (size_t)n, 0) < 0)
        rc_log_debug(log, "cannot write the pid into '%s': %s", path, strerror(errno));
    return fd;
}

/* Release a lock from try_lock; the pid goes first, so that nobody names a finished pass. */
static void release_lock(int fd)
{
    if (fd < 0)
        return;
    if (ftruncate(fd, 0) < 0) {
        /* the next holder truncates it anyway */
    }
    close(fd);
}

/* Take the lock, waiting for a running pass at most `timeout` seconds (-1: until stopped),
 * saying once that it waits and for whom. Returns the fd or -1 (*locked_by_other: still
 * held when the time ran out). */
static int take_lock(const char *state_dir, long timeout, const struct rc_log *log,
                     int *locked_by_other)
{
    double start = rc_mono_seconds();
    int fd = try_lock(state_dir, log, locked_by_other);
    long pid;
    char who[64] = "";

    if (fd >= 0 || !*locked_by_other || timeout == 0)
        return fd;
    pid = lock_holder(state_dir);
    if (pid)
        snprintf(who, sizeof(who), " (pid %ld)", pid);
    if (timeout > 0)
        rc_log_info(log, "waiting up to %ld s for the rightplace pass%s holding the lock on '%s'",
                    timeout, who, state_dir);
    else
        rc_log_info(log, "waiting for the rightplace pass%s holding the lock on '%s'", who,
                    state_dir);
    while (!stop_requested && (timeout < 0 || rc_mono_seconds() - start < (double)timeout)) {
        struct timespec ts = {0, 200000000L};
        nanosleep(&ts, NULL);
        fd = try_lock(state_dir, log, locked_by_other);
        if (fd >= 0 || !*locked_by_other)
            return fd;
    }
    return -1;
}

/* The message for a lock still held after take_lock gave up. */
static void log_locked(const struct rc_log *log, const char *state_dir, long waited)
{
    long pid = lock_holder(state_dir);
    char who[64] = "";

    if (pid)
        snprintf(who, sizeof(who), " (pid %ld)", pid);
    if (waited > 0)
        rc_log_error(log,
                     "another rightplace pass%s still holds the lock on '%s' after %ld s; try "
                     "again later or raise --lock-timeout",
                     who, state_dir, waited);
    else
        rc_log_error(log, "another rightplace pass%s holds the lock on '%s'", who, state_dir);
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
    if (d->noverrides) {
        cJSON *ov = cJSON_AddArrayToObject(o, "overrides");
        for (size_t i = 0; i < d->noverrides; i++)
            cJSON_AddItemToArray(ov, cJSON_CreateString(d->overrides[i]));
    }
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
        cJSON_free(s);
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
    for (size_t i = 0; i < d->noverrides; i++) /* spreadConstraints.overrides it gets */
        fprintf(f, "  %s %s\n", i ? "         " : "override:", d->overrides[i]);
    if (verbose && d->nverdicts) {
        fprintf(f, "  candidates:\n");
        for (size_t i = 0; i < d->nverdicts; i++)
            fprintf(f, "    %-20s %-20s %s\n", d->verdicts[i].cluster,
                    pl_verdict_name(d->verdicts[i].kind),
                    d->verdicts[i].detail ? d->verdicts[i].detail : "");
    }
}

/* ==== Commands ==== */

struct run {
    struct cli *cli;
    struct rc_git *git;
    const char *state_dir;
    struct rc_metrics *metrics; /* reconcile: NULL without --metrics-file or --listen */
};

/* "<state dir>/suspend": while it exists, passes do not apply. */
static void suspend_path(char *out, size_t n, const char *state_dir)
{
    snprintf(out, n, "%s/suspend", state_dir);
}

static int suspended(const char *state_dir)
{
    char p[PATH_MAX];
    struct stat st;

    suspend_path(p, sizeof(p), state_dir);
    return lstat(p, &st) == 0;
}

static int cmd_suspend(struct run *r)
{
    char p[PATH_MAX];
    int fd;

    suspend_path(p, sizeof(p), r->state_dir);
    fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) {
        rc_log_error(&r->cli->log, "cannot create '%s': %s", p, strerror(errno));
        return RC_EXIT_SYSTEM;
    }
    close(fd);
    rc_log_info(&r->cli->log,
                "suspended: passes place and commit but do not apply until 'rightplace resume' "
                "(%s)",
                p);
    return RC_EXIT_OK;
}

static int cmd_resume(struct run *r)
{
    char p[PATH_MAX];

    suspend_path(p, sizeof(p), r->state_dir);
    if (unlink(p) < 0 && errno != ENOENT) {
        rc_log_error(&r->cli->log, "cannot remove '%s': %s", p, strerror(errno));
        return RC_EXIT_SYSTEM;
    }
    rc_log_info(&r->cli->log, "resumed: the next pass applies");
    return RC_EXIT_OK;
}

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

/* Files someone changed by hand on the deploy branch: said on stderr, with what happens. */
static void log_hand_edits(const struct rc_log *log, const struct rc_pass_result *res,
                           const char *deploy_branch, int restored)
{
    char list[512];
    size_t used = 0;

    if (!res->nhand_edits)
        return;
    list[0] = '\0';
    for (size_t i = 0; i < res->nhand_edits && i < 5 && used < sizeof(list); i++)
        used += (size_t)snprintf(list + used, sizeof(list) - used, "%s%s", i ? ", " : "",
                                 res->hand_edits[i].path);
    if (res->nhand_edits > 5 && used < sizeof(list))
        snprintf(list + used, sizeof(list) - used, " and %zu more", res->nhand_edits - 5);
    rc_log_warn(log,
                "deploy branch '%s': %zu file%s changed by hand since rightplace's commit %.12s "
                "(%s); %s",
                deploy_branch, res->nhand_edits, res->nhand_edits == 1 ? "" : "s",
                res->hand_edit_base, list,
                restored ? "this pass restored what rightplace renders"
                         : "the next pass restores what rightplace renders");
}

/* The exit status a computed pass calls for, the same for every command: a configuration
 * error (a kubeconfig that cannot be loaded) before bad input before an outage. `pending`:
 * plan's changes, which share status 1 with an outage. */
static int result_status(const struct rc_pass_result *res, int pending)
{
    if (res->nconfig_errors)
        return RC_EXIT_USAGE;
    if (res->nfile_errors)
        return RC_EXIT_INPUT;
    if (res->apply_incomplete || pending)
        return RC_EXIT_PARTIAL;
    return RC_EXIT_OK;
}

/* Record a pass in the metrics, and write the metrics file. The apply results come from the
 * note rc_apply left on the deploy commit (docs/formats.md). */
static void record_metrics(struct run *r, const struct rc_pass_result *res, int status,
                           double seconds, struct rc_arena *a)
{
    struct rc_err err = RC_ERR_INIT;
    char *note = NULL;

    if (!r->metrics)
        return;
    if (res && res->deploy_new[0] && r->cli->pass.apply &&
        rc_git_note_read(&note, r->git, res->deploy_new, a, &err) < 0)
        note = NULL;
    if (r->cli->interval && r->cli->pass.cache && res && !res->skipped) {
        /* the clusters this pass read from a watch: a watcher started by this pass counts
         * from the next, so one whose watch is refused every time never does */
        struct rc_watch_set *ws = rc_cache_watches(r->cli->pass.cache);
        size_t pod_events = 0, node_events = 0;
        rc_watch_counts(ws, RC_WATCH_PODS, NULL, &pod_events);
        rc_watch_counts(ws, RC_WATCH_NODES, NULL, &node_events);
        rc_metrics_watches(r->metrics, res->nwatched, pod_events, res->nwatched_nodes, node_events);
    }
    rc_metrics_record(r->metrics, res, status, note, seconds, time(NULL));
    if (r->cli->metrics_file && rc_metrics_write_file(r->metrics, r->cli->metrics_file, &err) < 0)
        rc_log_warn(&r->cli->log, "%s", err.msg);
}

/*
 * Between the passes of a loop that reads live clusters. Observe reads each cluster's lists
 * on threads of its own, each into a malloc arena of its own, and glibc keeps what a
 * thread's arena freed, up to the top pad (rc_mem_tune), for the life of the process; the
 * watchers' threads put more arenas in play. At 20 clusters of 1,000 pods a loop held
 * about 244 MB where listing held 189 (bench/RESULTS.md, note 96). Given back
 * here, once the pass is over; the main arena keeps its pad, which a pass of simulated
 * clusters (no trim) keeps warm.
 */
static void trim_after_observing(struct run *r)
{
#ifdef __GLIBC__
    size_t pods = 0, nodes = 0;

    if (r->cli->pass.cache) {
        struct rc_watch_set *ws = rc_cache_watches(r->cli->pass.cache);
        rc_watch_counts(ws, RC_WATCH_PODS, &pods, NULL);
        rc_watch_counts(ws, RC_WATCH_NODES, &nodes, NULL);
        if (pods || nodes)
            malloc_trim(RC_MEM_TOP_PAD);
    }
#else
    (void)r;
#endif
}

static int cmd_reconcile_once(struct run *r)
{
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_err err = RC_ERR_INIT;
    struct rc_pass_result res;
    struct rc_pass_options o;
    int locked_by_other = 0;
    int lock_fd;
    int status;
    int error;
    double start;
    long long ms;

    /* One pass at a time per state directory. */
    lock_fd = take_lock(r->state_dir, 0, &r->cli->log, &locked_by_other);
    if (lock_fd < 0) {
        if (!locked_by_other)
            return RC_EXIT_SYSTEM;
        log_locked(&r->cli->log, r->state_dir, 0);
        return RC_EXIT_LOCKED;
    }
    o = r->cli->pass;
    if (o.apply && suspended(r->state_dir)) {
        o.apply = 0;
        rc_log_info(&r->cli->log,
                    "suspended ('%s/suspend' exists): placing and committing, not applying; "
                    "'rightplace resume' applies again",
                    r->state_dir);
    }
    start = rc_mono_seconds();
    memset(&res, 0, sizeof(res));
    error = rc_pass_run(&res, r->git, &o, &a, &err);
    ms = (long long)((rc_mono_seconds() - start) * 1000.0);
    if (error < 0) {
        struct rc_log_field f[] = {RC_LOG_NUM("duration_ms", ms)};
        rc_log_kv(&r->cli->log, RC_LOG_ERROR, f, 1, "%s", err.msg);
        status = exit_for(error);
        record_metrics(r, NULL, status, rc_mono_seconds() - start, &a);
        goto done;
    }
    status = result_status(&res, 0);
    log_hand_edits(&r->cli->log, &res, r->cli->pass.deploy_branch, res.committed);
    {
        struct rc_log_field f[] = {
            RC_LOG_STR("commit", res.source),     RC_LOG_STR("deploy", res.deploy_new),
            RC_LOG_NUM("duration_ms", ms),        RC_LOG_NUM("status", status),
            RC_LOG_NUM("placed", res.placed),     RC_LOG_NUM("pending", res.pending),
            RC_LOG_NUM("unplaced", res.unplaced), RC_LOG_NUM("changed", res.changed),
        };
        /* a skipped pass computed no counts: commit, deploy, duration and status only */
        size_t nf = res.skipped ? 4 : sizeof(f) / sizeof(f[0]);
        /* quiet loops: a pass that changed nothing and met no problem is a debug line */
        enum rc_log_level quiet = status == RC_EXIT_OK ? RC_LOG_DEBUG : RC_LOG_INFO;

        if (res.skipped)
            rc_log_kv(&r->cli->log, quiet, f, nf, "source %s already placed; nothing to do",
                      short_id(res.source));
        else if (res.proposed && strcmp(res.proposal, res.deploy_old))
            rc_log_kv(&r->cli->log, RC_LOG_INFO, f, nf,
                      "source %s: %zu placed, %zu pending, %zu unplaced; %zu changed; "
                      "proposed %s on %s for review (deploy %s unchanged)",
                      short_id(res.source), res.placed, res.pending, res.unplaced, res.changed,
                      short_id(res.proposal), r->cli->pass.propose_branch,
                      short_id(res.deploy_old));
        else if (res.committed)
            rc_log_kv(&r->cli->log, RC_LOG_INFO, f, nf,
                      "source %s: %zu placed, %zu pending, %zu unplaced; %zu changed; "
                      "deploy %s -> %s",
                      short_id(res.source), res.placed, res.pending, res.unplaced, res.changed,
                      short_id(res.deploy_old), short_id(res.deploy_new));
        else
            rc_log_kv(&r->cli->log, quiet, f, nf,
                      "source %s: %zu placed, %zu pending, %zu unplaced; deploy %s is up to date",
                      short_id(res.source), res.placed, res.pending, res.unplaced,
                      short_id(res.deploy_old));
    }
    record_metrics(r, &res, status, rc_mono_seconds() - start, &a);
    /* a remote's mirror gains a pack with every fetch: keep them few (rc_git.h), under the lock */
    if (rc_git_is_remote(r->git)) {
        struct rc_git_upkeep up;
        double t0 = rc_mono_seconds();
        if (rc_git_pack_upkeep(r->git, &up, &err) < 0)
            rc_log_warn(&r->cli->log, "%s (the mirror keeps its objects as they are)", err.msg);
        else if (up.packs || up.loose)
            rc_log_debug(&r->cli->log,
                         "packed %zu packs and %zu loose objects of the mirror into one pack "
                         "(%.0f ms)",
                         up.packs, up.loose, (rc_mono_seconds() - t0) * 1000.0);
    }
done:
    release_lock(lock_fd);
    rc_arena_release(&a);
    return status;
}

/* Sleep until the next pass is due, a stop is asked for, or SIGHUP/SIGUSR1 asks for a pass. */
static void sleep_interruptible(long seconds)
{
    for (long i = 0; i < seconds * 10 && !stop_requested && !pass_requested; i++) {
        struct timespec ts = {0, 100000000L};
        nanosleep(&ts, NULL);
    }
}

static int cmd_reconcile(struct run *r)
{
    int status = RC_EXIT_OK;

    if (!r->cli->interval)
        return cmd_reconcile_once(r);
    if (r->cli->listen) {
        struct rc_err err = RC_ERR_INIT;
        /* healthy while passes keep ending: three intervals and a minute of slack */
        if (rc_metrics_listen(r->metrics, r->cli->listen, 3 * r->cli->interval + 60, &r->cli->log,
                              &err) < 0) {
            rc_log_error(&r->cli->log, "%s", err.msg);
            return RC_EXIT_USAGE;
        }
    }
    rc_log_info(&r->cli->log,
                "reconciling every %ld s; SIGHUP or SIGUSR1 starts a pass now, SIGTERM or SIGINT "
                "stops after the pass",
                r->cli->interval);
    /* A long-running service keeps going whatever one pass met (a branch not pushed yet, an
     * unreachable cluster, the lock held by a manual run): each pass logs its own problem. */
    do {
        int last = status;
        pass_requested = 0;
        status = cmd_reconcile_once(r);
        trim_after_observing(r);
        /* a warning when the status changes to a failing one; the passes that end as the one
         * before, and the first that succeeds again, say so at info level (the problem's own
         * lines said what it is) */
        if (status != RC_EXIT_OK && status != last)
            rc_log_warn(&r->cli->log, "pass ended with status %d; next pass in %ld s", status,
                        r->cli->interval);
        else if (status != RC_EXIT_OK)
            rc_log_info(&r->cli->log,
                        "pass ended with status %d, as the pass before; next pass in %ld s", status,
                        r->cli->interval);
        else if (last != RC_EXIT_OK)
            rc_log_info(&r->cli->log, "pass ended with status 0, after passes that ended with %d",
                        last);
        sleep_interruptible(r->cli->interval);
        if (pass_requested && !stop_requested)
            rc_log_info(&r->cli->log, "signal: starting a pass now");
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
    /* wait for a running pass (a remote's clone is fetched into the state directory), saying
     * so, for a bounded time */
    lock_fd = take_lock(r->state_dir, r->cli->lock_timeout, &r->cli->log, &locked_by_other);
    if (lock_fd < 0) {
        if (!locked_by_other)
            return RC_EXIT_SYSTEM;
        log_locked(&r->cli->log, r->state_dir, r->cli->lock_timeout);
        return RC_EXIT_LOCKED;
    }
    error = rc_pass_run(res, r->git, &o, a, &err);
    release_lock(lock_fd);
    if (error < 0) {
        rc_log_error(&r->cli->log, "%s", err.msg);
        return exit_for(error);
    }
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
        if (rc_pass_path_commits(res.paths_changed[i].path))
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
            char path[1024];
            rc_esc(path, sizeof(path), res.paths_changed[i].path);
            cJSON_AddStringToObject(p, "path", path);
            cJSON_AddStringToObject(p, "change", op);
            cJSON_AddItemToArray(ps, p);
        }
        {
            cJSON *ws = cJSON_AddArrayToObject(o, "warnings");
            for (size_t i = 0; i < res.nwarnings; i++)
                cJSON_AddItemToArray(ws, cJSON_CreateString(res.warnings[i]));
        }
        {
            cJSON *hs = cJSON_AddArrayToObject(o, "handEdits");
            for (size_t i = 0; i < res.nhand_edits; i++) {
                cJSON *p = cJSON_CreateObject();
                char op[2] = {res.hand_edits[i].op, 0};
                char path[1024]; /* any name someone committed: valid UTF-8, escaped */
                rc_esc(path, sizeof(path), res.hand_edits[i].path);
                cJSON_AddStringToObject(p, "path", path);
                cJSON_AddStringToObject(p, "change", op);
                cJSON_AddItemToArray(hs, p);
            }
        }
        print_json(o);
    } else {
        printf("source %s, deploy %s\n", short_id(res.source), short_id(res.deploy_old));
        if (res.nhand_edits) {
            printf("\nfiles changed by hand on the deploy branch since rightplace's commit %s "
                   "(the next pass restores them):\n",
                   short_id(res.hand_edit_base));
            for (size_t i = 0; i < res.nhand_edits; i++) {
                char path[1024]; /* any name someone committed: escaped (rc_esc.h) */
                rc_esc(path, sizeof(path), res.hand_edits[i].path);
                printf("  %c %s\n", res.hand_edits[i].op, path);
            }
            printf("\n");
        }
        printf("%zu placed, %zu pending, %zu unplaced\n", res.placed, res.pending, res.unplaced);
        if (res.nwarnings) {
            printf("\nwarnings:\n");
            for (size_t i = 0; i < res.nwarnings; i++)
                printf("  %s\n", res.warnings[i]);
            printf("\n");
        }
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
            for (size_t i = 0; i < res.npaths_changed; i++) {
                char path[1024]; /* a file added by hand may have any name: escaped */
                rc_esc(path, sizeof(path), res.paths_changed[i].path);
                printf("  %c %s\n", res.paths_changed[i].op, path);
            }
        }
    }
    log_hand_edits(&r->cli->log, &res, r->cli->pass.deploy_branch, 0);
    status = result_status(&res, nchanged != 0);
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

/* ---- explain: where the verdicts come from ----
 * A decision made this run (not yet committed) has every verdict, against the fleet now. A
 * decision that stands keeps its record entry, which lists a bounded few verdicts as they
 * were when it was made; the full per-candidate verdicts are recomputed from the deploy
 * commit's capacity snapshot, and labelled as of that snapshot, never as current. */

static const struct pl_decision *explain_find(const struct rc_verdicts *rv, const char *unit)
{
    for (size_t i = 0; i < rv->ndecisions; i++) {
        if (!strcmp(rv->decisions[i].unit, unit))
            return &rv->decisions[i];
    }
    return NULL;
}

static void explain_recompute(struct run *r, const struct rc_pass_result *res,
                              struct rc_verdicts *rv, struct rc_arena *a)
{
    struct rc_err err = RC_ERR_INIT;
    const char **units;
    size_t n = 0;

    memset(rv, 0, sizeof(*rv));
    if (!res->deploy_old[0])
        return;
    units = rc_arena_calloc(a, res->result->ndecisions + 1, sizeof(*units));
    for (size_t i = 0; i < res->result->ndecisions; i++) {
        const struct pl_decision *d = &res->result->decisions[i];
        if (d->change == PL_CHANGE_NONE && decision_matches(d, r->cli->args[0]))
            units[n++] = d->unit;
    }
    if (n &&
        rc_verdicts_recompute(rv, r->git, res->deploy_old, units, n, &r->cli->pass, a, &err) < 0) {
        rc_log_warn(&r->cli->log, "cannot recompute the verdicts from deploy commit %.12s: %s",
                    res->deploy_old, err.msg);
        memset(rv, 0, sizeof(*rv));
    }
}

static void explain_time(char out[32], int64_t when)
{
    time_t t = (time_t)when;
    struct tm tm;

    if (when < 0 || !gmtime_r(&t, &tm) || !strftime(out, 32, "%Y-%m-%d %H:%M:%S UTC", &tm))
        snprintf(out, 32, "unknown time");
}

static void explain_verdict_lines(const struct pl_decision *d)
{
    for (size_t i = 0; i < d->nverdicts; i++)
        printf("    %-20s %-20s %s\n", d->verdicts[i].cluster, pl_verdict_name(d->verdicts[i].kind),
               d->verdicts[i].detail ? d->verdicts[i].detail : "");
}

static void explain_text(const struct pl_decision *d, const struct rc_verdicts *rv)
{
    const struct pl_decision *full = explain_find(rv, d->unit);
    char when[32];

    print_decision_text(stdout, d, 0);
    if (d->change != PL_CHANGE_NONE) {
        if (d->nverdicts) {
            printf("  candidates (against the fleet now):\n");
            explain_verdict_lines(d);
        }
        printf("  note:     not yet committed: the next pass makes this decision\n");
        return;
    }
    if (d->nverdicts) {
        printf("  candidates as recorded when the decision was made:\n");
        explain_verdict_lines(d);
    }
    if (!full)
        return;
    explain_time(when, rv->when);
    printf("  all %zu candidates, recomputed from the capacity snapshot of deploy commit %.12s\n"
           "  (%s, source %.12s): the fleet as that pass saw it, not as it is now:\n",
           full->nverdicts, rv->commit, when, rv->source);
    explain_verdict_lines(full);
}

static cJSON *explain_json(const struct pl_decision *d, const struct rc_verdicts *rv)
{
    const struct pl_decision *full = explain_find(rv, d->unit);
    cJSON *o = decision_json(d), *re, *vs;
    char when[32];

    cJSON_AddStringToObject(o, "verdictsFrom", d->change == PL_CHANGE_NONE ? "record" : "now");
    if (d->change != PL_CHANGE_NONE || !full)
        return o;
    re = cJSON_AddObjectToObject(o, "recomputed");
    explain_time(when, rv->when);
    cJSON_AddStringToObject(re, "snapshotOf", rv->commit);
    cJSON_AddStringToObject(re, "source", rv->source);
    cJSON_AddStringToObject(re, "time", when);
    vs = cJSON_AddArrayToObject(re, "verdicts");
    for (size_t i = 0; i < full->nverdicts; i++) {
        cJSON *v = cJSON_CreateObject();
        cJSON_AddStringToObject(v, "cluster", full->verdicts[i].cluster);
        cJSON_AddStringToObject(v, "verdict", pl_verdict_name(full->verdicts[i].kind));
        cJSON_AddStringToObject(v, "detail",
                                full->verdicts[i].detail ? full->verdicts[i].detail : "");
        cJSON_AddItemToArray(vs, v);
    }
    return o;
}

/* Does warning w concern decision d: it names one of its objects ('<key>'), its policy
 * ('<name>') or the file of one of its objects? */
static int warning_concerns(const char *w, const struct pl_decision *d)
{
    char q[600];

    if (d->policy) {
        snprintf(q, sizeof(q), "'%s'", d->policy);
        if (strstr(w, q))
            return 1;
    }
    for (size_t i = 0; i < d->nobjects; i++) {
        snprintf(q, sizeof(q), "'%s'", d->object_keys[i]);
        if (strstr(w, q))
            return 1;
        if (d->objects && d->objects[i]->file) {
            size_t n = strlen(d->objects[i]->file);
            if (!strncmp(w, d->objects[i]->file, n) && w[n] == ':')
                return 1;
        }
    }
    return 0;
}

/* The pass's warnings that concern d: printed under its explanation, or as JSON. */
static void explain_warnings(FILE *f, cJSON *o, const struct rc_pass_result *res,
                             const struct pl_decision *d)
{
    cJSON *arr = NULL;
    int header = 0;

    for (size_t i = 0; i < res->nwarnings; i++) {
        if (!warning_concerns(res->warnings[i], d))
            continue;
        if (o) {
            if (!arr)
                arr = cJSON_AddArrayToObject(o, "warnings");
            cJSON_AddItemToArray(arr, cJSON_CreateString(res->warnings[i]));
        } else if (f) {
            if (!header++)
                fprintf(f, "  warnings:\n");
            fprintf(f, "    %s\n", res->warnings[i]);
        }
    }
}

static int cmd_explain(struct run *r)
{
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_pass_result res;
    struct rc_verdicts rv;
    int json = r->cli->output && !strcmp(r->cli->output, "json");
    size_t found = 0;
    int status;

    status = dry_run(r, &res, &a);
    if (status != RC_EXIT_OK)
        goto done;
    explain_recompute(r, &res, &rv, &a);
    {
        cJSON *arr = json ? cJSON_CreateArray() : NULL;
        for (size_t i = 0; i < res.result->ndecisions; i++) {
            const struct pl_decision *d = &res.result->decisions[i];
            if (!decision_matches(d, r->cli->args[0]))
                continue;
            found++;
            if (json) {
                cJSON *o = explain_json(d, &rv);
                explain_warnings(NULL, o, &res, d);
                cJSON_AddItemToArray(arr, o);
                continue;
            }
            if (found > 1)
                putchar('\n');
            explain_text(d, &rv);
            explain_warnings(stdout, NULL, &res, d);
        }
        if (json)
            print_json(arr);
    }
    status = result_status(&res, 0);
    if (!found) {
        rc_log_error(&r->cli->log, "no workload or unit matches '%s'", r->cli->args[0]);
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

/* ==== status ==== */

/* A quantity as JSON: the number in base units (cores, bytes, devices) and its canonical
 * string (docs/status.schema.json). */
static cJSON *quantity_json(int k, int64_t milli)
{
    cJSON *q = cJSON_CreateObject();
    char text[PL_QUANTITY_STR];

    pl_quantity_format(text, milli, k == PL_RES_MEMORY);
    cJSON_AddNumberToObject(q, "value", (double)milli / 1000.0);
    cJSON_AddStringToObject(q, "string", text);
    return q;
}

/* Colour on a terminal only, and never with NO_COLOR set (https://no-color.org). */
static int use_colour(void)
{
    const char *nc = getenv("NO_COLOR");

    return isatty(STDOUT_FILENO) && !(nc && nc[0]);
}

/* "[#######.............]  35%" for in use + placed of allocatable; colour by how full. */
static void print_bar(int64_t alloc, int64_t taken, int colour)
{
    enum { BAR = 20 };
    int fill = 0, pct = 0;

    if (alloc > 0) {
        double f = (double)taken / (double)alloc;
        if (f > 1)
            f = 1;
        if (f < 0)
            f = 0;
        fill = (int)(f * BAR + 0.5);
        pct = (int)(f * 100 + 0.5);
    }
    if (colour)
        fputs(pct >= 90 ? "\033[31m" : pct >= 70 ? "\033[33m" : "\033[32m", stdout);
    putchar('[');
    for (int i = 0; i < BAR; i++)
        putchar(i < fill ? '#' : '.');
    putchar(']');
    if (colour)
        fputs("\033[0m", stdout);
    printf(" %3d%%", pct);
}

static const struct pl_cluster *fleet_find(const struct pl_input *in, const char *name)
{
    for (size_t i = 0; in && i < in->nclusters; i++) {
        if (!strcmp(in->clusters[i].name, name))
            return &in->clusters[i];
    }
    return NULL;
}

static int cmd_status(struct run *r)
{
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_pass_result res;
    int json = r->cli->output && !strcmp(r->cli->output, "json");
    int status = dry_run(r, &res, &a);
    int colour = !json && use_colour();
    const struct pl_result *pr;
    cJSON *root = NULL, *clusters = NULL;

    if (status != RC_EXIT_OK)
        goto done;
    pr = res.result;
    if (json) {
        cJSON *u;
        root = cJSON_CreateObject();
        cJSON_AddStringToObject(root, "source", res.source);
        cJSON_AddStringToObject(root, "deploy", res.deploy_old);
        u = cJSON_AddObjectToObject(root, "units");
        cJSON_AddNumberToObject(u, "placed", (double)res.placed);
        cJSON_AddNumberToObject(u, "pending", (double)res.pending);
        cJSON_AddNumberToObject(u, "unplaced", (double)res.unplaced);
        clusters = cJSON_AddArrayToObject(root, "clusters");
    } else {
        printf("source %s, deploy %s: %zu placed, %zu pending, %zu unplaced\n",
               short_id(res.source), short_id(res.deploy_old), res.placed, res.pending,
               res.unplaced);
    }
    for (size_t c = 0; c < pr->nusage; c++) {
        const struct pl_usage *u = &pr->usage[c];
        const struct pl_cluster *fc = fleet_find(res.input, u->cluster);
        int live = fc && fc->live, reachable = !fc || fc->reachable;
        cJSON *cj = NULL, *rs = NULL, *units = NULL;

        if (json) {
            cj = cJSON_CreateObject();
            cJSON_AddStringToObject(cj, "name", u->cluster);
            cJSON_AddBoolToObject(cj, "live", live);
            cJSON_AddBoolToObject(cj, "reachable", reachable);
            cJSON_AddNumberToObject(cj, "nodesToAdd", (double)u->nodes_to_add);
            rs = cJSON_AddArrayToObject(cj, "resources");
            cJSON_AddItemToArray(clusters, cj);
        } else {
            const char *state = !live ? "simulated" : reachable ? "reachable" : "UNREACHABLE";
            int red = colour && live && !reachable;
            printf("\n%s%s%s  %s%s%s", colour ? "\033[1m" : "", u->cluster, colour ? "\033[0m" : "",
                   red ? "\033[31m" : "", state, red ? "\033[0m" : "");
            if (u->nodes_to_add)
                printf("  (autoscaler may add %lld node%s)", (long long)u->nodes_to_add,
                       u->nodes_to_add == 1 ? "" : "s");
            if (live && !reachable)
                printf("  (not observed: it takes no new work)");
            printf("\n  %-16s %12s %12s %12s %12s\n", "RESOURCE", "ALLOCATABLE", "IN USE", "PLACED",
                   "FREE");
        }
        for (int k = 0; k < res.input->res->n; k++) {
            int64_t al = u->allocatable.v[k], used = u->requested.v[k], pl = u->committed.v[k];
            int64_t fr = al - used - pl;
            if (fr < 0)
                fr = 0; /* what exceeds the nodes that exist waits for a scale-up */
            if (k == PL_RES_PODS || (k >= PL_RES_FIRST_EXTENDED && !al && !used && !pl))
                continue;
            if (json) {
                cJSON *q = cJSON_CreateObject();
                cJSON_AddStringToObject(q, "name", res.input->res->name[k]);
                cJSON_AddItemToObject(q, "allocatable", quantity_json(k, al));
                cJSON_AddItemToObject(q, "inUse", quantity_json(k, used));
                cJSON_AddItemToObject(q, "placed", quantity_json(k, pl));
                cJSON_AddItemToObject(q, "free", quantity_json(k, fr));
                cJSON_AddItemToArray(rs, q);
            } else {
                char sa[64], su[64], sp[64], sf[64];
                human_amount(sa, sizeof(sa), k, al);
                human_amount(su, sizeof(su), k, used);
                human_amount(sp, sizeof(sp), k, pl);
                human_amount(sf, sizeof(sf), k, fr);
                printf("  %-16.16s %12s %12s %12s %12s  ", res.input->res->name[k], sa, su, sp, sf);
                print_bar(al, used + pl, colour);
                putchar('\n');
            }
        }
        if (json)
            units = cJSON_AddArrayToObject(cj, "units");
        else
            printf("  units:\n");
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
        cJSON *pend = cJSON_AddArrayToObject(root, "notPlaced");
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
    status = result_status(&res, 0);
done:
    rc_arena_release(&a);
    return status;
}

/* rightplace diff: exit 0 no drift, 1 drift, 4 something could not be compared. */
static int cmd_diff(struct run *r)
{
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_pass_result res;
    struct rc_buf out = RC_BUF_INIT;
    struct rc_err err = RC_ERR_INIT;
    size_t drift = 0, failed = 0;
    int status = dry_run(r, &res, &a);

    if (status != RC_EXIT_OK)
        goto done;
    if (!res.deploy_old[0]) {
        rc_log_error(&r->cli->log, "no deploy branch '%s' yet: nothing to compare; run reconcile",
                     r->cli->pass.deploy_branch);
        status = RC_EXIT_USAGE;
        goto done;
    }
    if (rc_apply_diff(&out, &drift, &failed, r->git, res.deploy_old, res.conns, res.nconns,
                      &r->cli->kube, &r->cli->log, &a, &err) < 0) {
        rc_log_error(&r->cli->log, "%s", err.msg);
        status = RC_EXIT_SYSTEM;
        goto done;
    }
    if (out.len)
        fwrite(out.ptr, 1, out.len, stdout);
    status = failed ? RC_EXIT_SYSTEM : drift ? 1 : RC_EXIT_OK;
done:
    rc_buf_release(&out);
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
        for (size_t i = 0; i < res.nmismatch; i++) {
            char path[1024];
            rc_esc(path, sizeof(path), res.mismatch[i].path);
            cJSON_AddItemToArray(m, cJSON_CreateString(path));
        }
        print_json(o);
    } else if (res.match) {
        printf("match: %s recomputes to the same decisions and files (source %s)\n",
               r->cli->args[0], short_id(res.source));
    } else {
        printf("mismatch: %s does not recompute to the same result (source %s)\n", r->cli->args[0],
               short_id(res.source));
        for (size_t i = 0; i < res.nmismatch; i++) {
            char path[1024];
            rc_esc(path, sizeof(path), res.mismatch[i].path);
            printf("  %c %s\n", res.mismatch[i].op, path);
        }
    }
    status = res.match ? RC_EXIT_OK : RC_EXIT_PARTIAL;
done:
    rc_arena_release(&a);
    return status;
}

static int cmd_version(struct run *r)
{
    if (r->cli->output && !strcmp(r->cli->output, "json")) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "version", rc_version());
        print_json(o);
    } else {
        printf("rightplace %s\n", rc_version());
    }
    return RC_EXIT_OK;
}

static int cmd_help(struct run *r)
{
    const struct cmd_def *cmd;

    if (!r->cli->nargs) {
        usage(stdout);
        return RC_EXIT_OK;
    }
    cmd = find_command(r->cli->args[0]);
    if (!cmd) {
        unknown_command(r->cli->args[0]);
        return RC_EXIT_USAGE;
    }
    command_usage(stdout, cmd);
    return RC_EXIT_OK;
}

/* ==== main ==== */

int main(int argc, char **argv)
{
    struct cli c;
    struct run r;
    struct rc_pass_options pass_init = RC_PASS_OPTIONS_INIT;
    struct rc_git_options git_init = RC_GIT_OPTIONS_INIT;
    struct rc_log log_init = RC_LOG_INIT;
    struct rc_kube_options kube_init = RC_KUBE_OPTIONS_INIT;
    struct rc_kubeconfig_sources kc_init = RC_KUBECONFIG_SOURCES_INIT;
    struct rc_err err = RC_ERR_INIT;
    char state_dir[PATH_MAX];
    char outage_file[PATH_MAX + 16];
    int status;
    int dry; /* a command that runs a pass without committing */
    int error;

    rc_mem_tune();
    rc_proc_raise_nofile(); /* a live fleet holds descriptors by the cluster (rc_proc.h) */
    memset(&c, 0, sizeof(c));
    c.pass = pass_init;
    c.git = git_init;
    c.log = log_init;
    c.kube = kube_init;
    c.kubeconfigs = kc_init;
    c.lock_timeout = 60;
    memset(&r, 0, sizeof(r));
    r.cli = &c;

    switch (parse_args(&c, argc, argv)) {
    case 0:
        break;
    case 1:
        return RC_EXIT_OK;
    default:
        return RC_EXIT_USAGE;
    }
    if (!c.cmd->repo)
        return c.cmd->exec(&r);

    /* configuration that can be judged before touching anything */
    if (!strcmp(c.pass.source_branch, c.pass.deploy_branch)) {
        rc_log_error(&c.log,
                     "--deploy-branch '%s' is the source branch: rendered output would be "
                     "committed onto the workloads people push; choose another (default "
                     "'deploy')",
                     c.pass.deploy_branch);
        return RC_EXIT_USAGE;
    }
    if (check_local_repo(c.repo, &c.log) < 0)
        return RC_EXIT_USAGE;
    if (!c.pass.max_source_bytes && getenv("RIGHTPLACE_MAX_SOURCE_MIB") &&
        parse_mib(&c.pass.max_source_bytes, getenv("RIGHTPLACE_MAX_SOURCE_MIB")) < 0) {
        fprintf(stderr, "rightplace: invalid RIGHTPLACE_MAX_SOURCE_MIB '%s': give 1 to 1048576\n",
                getenv("RIGHTPLACE_MAX_SOURCE_MIB"));
        return RC_EXIT_USAGE;
    }
    c.pass.paths = c.paths;
    c.pass.npaths = c.npaths;
    c.pass.log = &c.log;
    c.git.log = &c.log;

    if (c.state_dir) {
        snprintf(state_dir, sizeof(state_dir), "%s", c.state_dir);
    } else if (default_state_dir(state_dir, sizeof(state_dir), c.repo) < 0) {
        rc_log_error(&c.log, "cannot choose a state directory; give --state-dir");
        return RC_EXIT_USAGE;
    }
    if (mkdir_p(state_dir) < 0) {
        rc_log_error(&c.log, "cannot create state directory '%s': %s", state_dir, strerror(errno));
        return RC_EXIT_SYSTEM;
    }
    {
        /* the state directory and everything under it are private (docs/security.md) */
        int tightened = rc_dir_make_private(state_dir, &err);

        if (tightened < 0) {
            rc_log_error(&c.log, "state directory: %s", err.msg);
            return RC_EXIT_USAGE;
        }
        if (tightened)
            rc_log_warn(&c.log, "state directory '%s' was open to other users: made private (0700)",
                        state_dir);
        /* a URL's mirror is written by libgit2, which honours the umask: files 0600, folders
         * 0700 (a local repository's own files keep the owner's umask) */
        if (rc_git_is_url(c.repo))
            umask(077);
    }
    c.git.state_dir = state_dir;
    /* since when each live cluster has been unreachable (rc_outage.h) */
    snprintf(outage_file, sizeof(outage_file), "%s/%s", state_dir, RC_CACHE_OUTAGE_FILE);
    c.pass.outage_file = outage_file;

    if (c.interval) {
        rc_mem_tune_arenas(sysconf(_SC_NPROCESSORS_ONLN));
        /* loop mode stops after the current pass; SA_RESTART keeps that pass's network I/O
         * from failing with EINTR. One-shot commands keep the default: stop now. */
        struct sigaction sa;
        memset(&sa, 0, sizeof(sa));
        sa.sa_handler = on_signal;
        sa.sa_flags = SA_RESTART;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGTERM, &sa, NULL);
        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGHUP, &sa, NULL);
        sigaction(SIGUSR1, &sa, NULL);
    }

    if (rc_git_global_init(&err) < 0 || rc_http_global_init(&err) < 0) {
        rc_log_error(&c.log, "%s", err.msg);
        return RC_EXIT_SYSTEM;
    }
    r.state_dir = state_dir;
    /* the operator's kubeconfigs: the only credentials Cluster objects can select */
    for (size_t i = 0; i < c.nkubeconfig_files; i++)
        rc_kubeconfig_sources_add_file(&c.kubeconfigs, c.kubeconfig_files[i]);
    rc_kubeconfig_sources_set_dir(&c.kubeconfigs, c.kubeconfig_dir);
    if (rc_kubeconfig_sources_env(&c.kubeconfigs, &err) < 0) {
        rc_log_error(&c.log, "%s", err.msg);
        status = RC_EXIT_USAGE;
        goto done;
    }
    c.kube.sources = &c.kubeconfigs;
    c.pass.kube = &c.kube;
    {
        /* the first open of a URL clones into the state directory: not while a pass runs.
         * A single reconcile fails at once; the loop waits; the rest wait a bounded time. */
        int once = c.cmd->exec == cmd_reconcile && !c.interval;
        long timeout = once ? 0 : c.interval ? -1 : c.lock_timeout;
        int other = 0;
        int fd = take_lock(state_dir, timeout, &c.log, &other);
        if (fd < 0) {
            if (other)
                log_locked(&c.log, state_dir, timeout);
            status = other ? RC_EXIT_LOCKED : RC_EXIT_SYSTEM;
            goto done;
        }
        {
            uint64_t bytes = 0;
            size_t n = rc_cache_sweep(state_dir, &bytes);
            if (n)
                rc_log_info(&c.log,
                            "removed %zu temporary files (%" PRIu64
                            " bytes) that a killed pass left in '%s'",
                            n, bytes, state_dir);
        }
        error = rc_git_open(&r.git, c.repo, &c.git, &err);
        release_lock(fd);
    }
    if (error == RC_OK) {
        /* the identity of placement commits and notes: flags, then the environment */
        const char *name =
            c.committer_name ? c.committer_name : getenv("RIGHTPLACE_COMMITTER_NAME");
        const char *email =
            c.committer_email ? c.committer_email : getenv("RIGHTPLACE_COMMITTER_EMAIL");
        if ((name && name[0]) || (email && email[0])) {
            error = rc_git_set_identity(r.git, name && name[0] ? name : "rightplace",
                                        email && email[0] ? email : "rightplace@localhost", &err);
            if (error < 0) {
                rc_log_error(&c.log, "committer identity: %s", err.msg);
                status = RC_EXIT_USAGE;
                goto done;
            }
        }
    }
    if (error < 0) {
        rc_log_error(&c.log, "%s", err.msg);
        status = error == RC_ENOTFOUND ? RC_EXIT_USAGE : RC_EXIT_SYSTEM;
        goto done;
    }
    dry = c.cmd->exec == cmd_plan || c.cmd->exec == cmd_explain || c.cmd->exec == cmd_status ||
          c.cmd->exec == cmd_diff;
    /* reconcile and replay print no verdict: decisions keep what the record and the message
     * list; --once runs one pass: nothing is kept in memory for a next one */
    if (c.cmd->exec == cmd_reconcile || c.cmd->exec == cmd_replay)
        c.pass.bounded_verdicts = 1;
    if (c.cmd->exec == cmd_reconcile)
        c.pass.last_pass = !c.interval;
    if (dry)
        c.pass.last_pass = 1; /* one pass, then the process ends */
    /* what the last pass saw, so that a pass with nothing to do stops early; the commands
     * that run a pass without committing (plan, explain, status, diff) take parsed files and
     * the record from the state directory's caches too, and add what they parse (under the
     * lock, as a pass does); they never read or write what the last pass saw */
    if ((c.cmd->exec == cmd_reconcile || dry) && rc_cache_new(&c.pass.cache, state_dir, &err) < 0) {
        rc_log_error(&c.log, "%s", err.msg);
        status = RC_EXIT_SYSTEM;
        goto done;
    }
    if (c.no_parse_cache)
        rc_cache_no_parse_file(c.pass.cache);
    if (c.metrics_file || c.listen)
        r.metrics = rc_metrics_new(rc_version());
    status = c.cmd->exec(&r);
done:
    rc_metrics_free(r.metrics);
    rc_cache_free(c.pass.cache);
    rc_git_free(r.git);
    rc_http_global_cleanup();
    rc_git_global_shutdown();
    rc_kubeconfig_sources_release(&c.kubeconfigs);
    return status;
}
