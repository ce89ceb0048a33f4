/*
 * main.c - the rightplace command line: parses arguments, builds the context, runs a command,
 * and turns result codes into documented exit statuses. The only file that calls exit().
 */
#include <stdio.h>
#include <string.h>

#include "rc_banned.h"

/* Exit statuses (the same table is in README.md). */
enum rc_exit {
    RC_EXIT_OK = 0,      /* in sync / success */
    RC_EXIT_PARTIAL = 1, /* some applies failed, or plan: changes pending */
    RC_EXIT_USAGE = 2,   /* usage or configuration error */
    RC_EXIT_INPUT = 3,   /* invalid repository input */
    RC_EXIT_SYSTEM = 4,  /* system error: git, I/O, out of resources */
    RC_EXIT_LOCKED = 5   /* another pass holds the state directory's lock */
};

static void usage(FILE *f)
{
    fputs("usage: rightplace <command> [options]\n"
          "\n"
          "commands:\n"
          "  reconcile   place what changed, commit to the deploy branch, apply\n"
          "  plan        show what a pass would decide, without writing anything\n"
          "  explain     say where a workload is, or why it is pending\n"
          "  replay      recompute a deploy commit's decisions and compare\n"
          "  status      placements and capacity per cluster\n"
          "\n"
          "  --help      show this help\n"
          "  --version   show the version\n",
          f);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return RC_EXIT_USAGE;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return RC_EXIT_OK;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("rightplace %s\n", RP_VERSION);
        return RC_EXIT_OK;
    }
    fprintf(stderr, "rightplace: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return RC_EXIT_USAGE;
}
