/*
 * rc_mem.h - allocation that never returns NULL.
 *
 * Out-of-memory policy (written down once, for the whole program): rightplace aborts on OOM,
 * as tmux and git do. Memory use is bounded by explicit limits on input (file size, YAML
 * nesting and alias expansion, HTTP body size), so running out of memory means the machine
 * is broken, not that input was hostile; no caller has to test malloc's result.
 */
#ifndef RC_MEM_H
#define RC_MEM_H

#include <stddef.h>

void *rc_xmalloc(size_t n);
void *rc_xcalloc(size_t count, size_t n);
void *rc_xrealloc(void *p, size_t n);
/* Grow an array: returns a pointer with room for at least `need` elements of `elem` bytes,
 * updating *cap (doubling). Aborts on overflow. */
void *rc_xgrow(void *p, size_t *cap, size_t need, size_t elem);
char *rc_xstrdup(const char *s);
char *rc_xstrndup(const char *s, size_t n);

/* Set the process's allocator up for rightplace's work (main, before anything allocates):
 * glibc's heaps grow by RC_MEM_TOP_PAD bytes beyond each request instead of 128 KiB. A first
 * pass on a large fleet allocates a few hundred MB in small blocks, so its heaps grew some
 * thousand times, each a brk or mprotect and fresh page faults; pages never touched cost no
 * memory. Leaves alone a pad the environment sets (MALLOC_TOP_PAD_, GLIBC_TUNABLES). */
#define RC_MEM_TOP_PAD (64 << 20)
void rc_mem_tune(void);

/* A long-running process (loop mode), before its second thread allocates: at most ncpu + 2
 * malloc arenas instead of glibc's 8 a CPU. glibc gives each thread that meets contention an
 * arena of its own and keeps what an arena freed, up to the top pad, for good; observe's
 * fetches and the pod watchers are threads that wait on the network, not CPUs, and with an
 * arena each a loop of 20 live clusters held 244 MB where 86 do (bench/RESULTS.md, note 96).
 * ncpu + 2 still gives each parsing thread (one a CPU) and the main thread an arena of its
 * own. Leaves alone a limit the environment sets (MALLOC_ARENA_MAX, GLIBC_TUNABLES). */
void rc_mem_tune_arenas(long ncpu);

/* The process's resident memory now, in bytes (/proc/self/statm); 0 where the system does not
 * say. */
size_t rc_mem_resident(void);

#endif
