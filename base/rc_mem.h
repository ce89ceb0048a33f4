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

#endif
