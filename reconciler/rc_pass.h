/*
 * rc_pass.h - one reconcile pass: sync, load, observe, place, render, commit, apply.
 *
 * A pass reads the source branch head S and the deploy branch head D, loads every manifest
 * at S (a file that does not parse is replaced by its newest version that does, at or
 * before the source commit D was made from, so that a parse error never moves or removes
 * anything), places every unit against the fleet, renders the deploy tree, and commits it
 * on D when the decisions changed. The same computation serves `plan` (nothing written),
 * `explain`, `status` and `replay` (recompute a deploy commit from what it recorded).
 */
#ifndef RC_PASS_H
#define RC_PASS_H

#include <stddef.h>
#include <stdint.h>

#include "pl_types.h"
#include "rc_arena.h"
#include "rc_err.h"
#include "rc_git.h"
#include "rc_log.h"
#include "rd_output.h"
#include "rd_source.h"

struct rc_git;
struct rc_kube_options;
struct rc_cache;

struct rc_pass_options {
    const char *source_branch; /* default "main" */
    const char *deploy_branch; /* default "deploy" */
    const char *source_rev;    /* plan --source: any revision; NULL: the source branch head */
    const char *const *paths;  /* source paths to load; npaths == 0: the whole tree */
    size_t npaths;
    int dry_run;      /* compute only: no commit, no apply */
    int force;        /* run even when nothing seems to have changed */
    int apply;        /* apply to live clusters after committing */
    int resync;       /* apply everything, not only what changed */
    int max_attempts; /* passes redone when another writer moved the deploy branch */
    struct rd_render_options render;
    const struct rc_log *log;
    /* What the last pass saw (rc_cache.h): lets a pass whose inputs did not change stop
     * before reading any manifest. NULL: every pass does all the work. */
    struct rc_cache *cache;
    /* Bytes of YAML one pass may hold in memory; files beyond it (in path order) are refused,
     * each with an error that names the limit. 0: RC_PASS_SOURCE_BYTES_DEFAULT. */
    size_t max_source_bytes;
    /* The review gate (reconcile --propose): the placement commit goes to this branch, made
     * on top of the deploy head, and the deploy branch is left alone: a person or CI
     * promotes the proposal (a fast-forward of the deploy branch to it) and the next pass
     * applies it. The branch always holds the one proposal for the current deploy head and
     * source (replaced, by a forced push for a remote, whenever they change), or the deploy
     * head itself when there is nothing to propose. Apply still applies the deploy head.
     * NULL: commit to the deploy branch. */
    const char *propose_branch;
    /* client options for observe and apply, with the operator's kubeconfigs (sources) that
     * Cluster objects select among; NULL: defaults and no kubeconfig, so live clusters are
     * not connectable */
    const struct rc_kube_options *kube;
    /* Re-placement off unreachable clusters (docs/formats.md): the file in the state
     * directory that keeps since when each live cluster has been unreachable (rc_outage.h;
     * NULL: every outage starts at this pass), the grace of policies without the
     * rightplace.dev/replace-unreachable-after annotation (seconds; 0: they never move), and
     * the time of the pass (0: the clock). */
    const char *outage_file;
    int64_t replace_unreachable_after;
    int64_t now;
    /* Threads that parse source files (at most RD_PRIME_THREADS_MAX); 0: one per online
     * CPU. The result does not depend on it. */
    int parse_threads;
    /* No later pass runs in this process (reconcile --once): the cache's memo file is still
     * written, but nothing is kept in memory for a next pass (the record as written and its
     * entries' text, rd_record_memo), which would only add to the pass's peak memory. */
    int last_pass;
    /* Decisions keep only the verdicts the record and the commit message list, with counts by
     * kind (pl_options.verdicts_chosen, ...): what reconcile and replay need. 0: a decision
     * that changes keeps every verdict (plan, explain, status print them; one that stands
     * shows what its record lists). The files and the message are the same either way. */
    int bounded_verdicts;
};

#define RC_PASS_SOURCE_BYTES_DEFAULT ((size_t)1 << 30)

#define RC_PASS_OPTIONS_INIT                                                                       \
    {                                                                                              \
        "main", "deploy", NULL, NULL, 0, 0, 0, 1, 0, 5, RD_RENDER_OPTIONS_INIT, NULL, NULL, 0,     \
            NULL, NULL, NULL, 0, 0, 0, 0, 0                                                        \
    }

/* A path whose content a pass would change. */
struct rc_path_change {
    const char *path;
    char op; /* 'A' added, 'M' modified, 'D' deleted */
};

/* The phases of a pass, timed for metrics. */
enum rc_pass_phase {
    RC_PHASE_SYNC,    /* fetch, resolve the branches */
    RC_PHASE_LOAD,    /* read and parse the source */
    RC_PHASE_OBSERVE, /* read live clusters */
    RC_PHASE_PLACE,   /* place and render */
    RC_PHASE_COMMIT,  /* compare with the deploy tree, commit */
    RC_PHASE_APPLY,   /* apply to live clusters */
    RC_PHASE_COUNT
};

/* "sync", "load", "observe", "place", "commit", "apply" */
const char *rc_pass_phase_name(int phase);

struct rc_pass_result {
    char source[41];     /* source commit S */
    char deploy_old[41]; /* deploy head before the pass; "" when the branch did not exist */
    char deploy_new[41]; /* deploy head after the pass (== deploy_old when nothing committed) */
    int skipped;         /* quick exit: nothing could change a decision (see rc_pass.c) */
    size_t nparsed;      /* source files whose YAML this pass parsed (history walk included) */
    /* source files taken from the parse cache file (rc_pcache.h): neither read nor parsed */
    size_t nparse_cached;
    int committed;
    /* a pass over the clusters a change touches (rc_pass.c, partial_pass): result and input
     * hold their units and clusters alone, warnings the first RC_IMAGE_WARNINGS (20) */
    int partial;
    int attempts;
    size_t placed, pending, unplaced, changed; /* units by state; units whose decision changed */
    size_t nfile_errors;
    const struct rd_file_error *file_errors;
    size_t npaths_changed;
    const struct rc_path_change *paths_changed;
    const struct pl_result *result; /* the decisions (arena) */
    const struct pl_input *input;
    size_t nrendered;    /* object files rendered this pass (the rest kept from the deploy head) */
    size_t nrecord_read; /* units read from the deploy head's placements.yaml (0: kept in memory) */
    size_t nrecord_written;    /* with a cache and not last_pass: record entries written (the
                                  rest copied, rd_record_memo) */
    size_t nrecord_bytes_read; /* bytes of placements.yaml blobs read (record, comparison) */
    /* the deploy head's record came from the record cache file (rc_rcache.h): neither read
     * nor parsed; bytes this pass wrote to that file (the record it committed, or the one it
     * parsed when the file did not hold it) */
    int record_cached;
    size_t nrecord_cache_written;
    /* loop mode, a record committed: units of the record kept for the next pass that it
     * shares with the record the pass started from (rd_record_of_result_over; 0: made whole) */
    size_t nrecord_shared;
    /* placements.yaml compared with the deploy head's but for the source line: 0 when their
     * blob ids are equal or the pass commits for other paths anyway (not `plan`) */
    size_t nrecord_compared;
    /* bytes of the new placements.yaml hashed for that comparison (its id against the head
     * blob's, `--once`): 0 when its length differs from the blob's, which is read from the
     * blob's header; the write hashes it once more either way */
    size_t nrecord_bytes_hashed;
    /* files of the new tree the diff hashed to compare them with the deploy head's: not the
     * kept ones, the record's shards (named by render) nor a cluster's kustomization.yaml
     * whose files are the head's path for path (it is the head's) */
    size_t nfiles_hashed;
    /* loop mode: the new placements.yaml would be the deploy head's byte for byte, which the
     * writer's memo told without writing it (rd_record_emit_unless_same): the head's blob is
     * kept, neither written, compared nor hashed */
    int record_kept;
    int apply_incomplete; /* some live cluster was not fully applied */
    /* hand edits: files under clusters/, placements.yaml or .rightplace/ that differ between
     * rightplace's last commit on the deploy branch (hand_edit_base) and its head, made by
     * commits rightplace did not write. A pass that commits restores them. */
    size_t nhand_edits;
    const struct rc_git_change *hand_edits;
    char hand_edit_base[41];
    double phase_seconds[RC_PHASE_COUNT]; /* wall time of each phase of the last attempt */
    size_t nunreachable;                  /* live clusters that could not be observed */
    size_t nwatched; /* live clusters whose pods came from their watch (loop mode, rc_watch.h) */
    size_t nwatched_nodes;             /* live clusters whose nodes came from their watch */
    size_t nconfig_errors;             /* of those, the ones whose kubeconfig could not be loaded */
    char config_error[RC_ERR_MSG_MAX]; /* the first of those, naming the Cluster */
    /* warnings of the pass: the engine's (overlapping policies, split values, ...), then the
     * source's (unknown fields, ignored features), "file:line[:col]: ..." where known; also
     * logged at warn level, in the commit message and in placements.yaml */
    size_t nwarnings;
    const char *const *warnings;
    /* the Cluster objects' connections as loaded by the pass (copied into the arena), for
     * commands that talk to the live clusters afterwards (diff) */
    size_t nconns;
    const struct rd_cluster_conn *conns;
    char proposal[41]; /* --propose: the proposal branch's head after the pass ("": none) */
    int proposed;      /* --propose: the proposal branch was moved this pass */
};

/* Whether a change to this deploy-tree path makes a deploy commit: every managed path but the
 * capacity snapshot and the source file, which change with the fleet and the source commit
 * alone and are written whenever another path's change is committed. */
int rc_pass_path_commits(const char *path);

/* Run one pass. Everything in *out lives in `a`, except that the manifests behind
 * input->objects[].payload are freed before the call returns: never follow a payload. With
 * o->cache, the objects' strings (keys, names, labels) live in the cache until the next pass
 * that uses it: read a result before running the next pass. Returns RC_OK
 * also when some files did not parse (see out->nfile_errors) or the pass was skipped; errors are
 * for git, I/O and exhausted retries. */
int rc_pass_run(struct rc_pass_result *out, struct rc_git *g, const struct rc_pass_options *o,
                struct rc_arena *a, struct rc_err *err);

/* The outcome of recomputing a deploy commit. */
struct rc_replay_result {
    char source[41];
    int match;
    size_t nmismatch; /* paths whose recomputed content differs from the commit's */
    const struct rc_path_change *mismatch;
};

/* Recompute deploy commit `commit`'s decisions from its source commit, its parent's
 * placements and its recorded capacity, and compare the rendered tree with the commit's. */
int rc_replay(struct rc_replay_result *out, struct rc_git *g, const char *commit,
              const struct rc_pass_options *o, struct rc_arena *a, struct rc_err *err);

/*
 * The full per-candidate verdicts of some units, recomputed from deploy commit `commit`:
 * its source commit, its capacity snapshot (.rightplace/capacity.yaml) and its record, in
 * which every other unit keeps its placement (and its capacity) while the units asked about
 * are placed afresh. The record lists a bounded few verdicts per unit; this gives them all,
 * as of that snapshot (the fleet as the pass that made `commit` saw it), not as of now.
 */
struct rc_verdicts {
    char commit[41];   /* the deploy commit whose snapshot was used */
    char source[41];   /* the source commit it was made from */
    int64_t when;      /* its commit time (seconds since the epoch); -1: unknown */
    size_t ndecisions; /* the units asked about that the source holds, in unit order */
    const struct pl_decision *decisions; /* objects is NULL: use object_keys */
};

int rc_verdicts_recompute(struct rc_verdicts *out, struct rc_git *g, const char *commit,
                          const char *const *units, size_t nunits, const struct rc_pass_options *o,
                          struct rc_arena *a, struct rc_err *err);

#endif
