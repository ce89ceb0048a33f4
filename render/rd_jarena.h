/*
 * rd_jarena.h - cJSON trees built in a bump arena, for the trees that live and die inside
 * one call.
 *
 * Loading a file builds a cJSON tree per document, reads what placement needs out of it,
 * packs it (rd_pack.h) and frees it: every node and string is a malloc and a free, a third
 * of the load's time in a first pass of 10,000 files (bench/RESULTS.md). Between
 * rd_jarena_begin and rd_jarena_end, every cJSON allocation on the calling thread comes from
 * the arena, cJSON_Delete of its nodes frees nothing, and rd_jarena_end frees it all at once.
 * Other threads, and this thread outside the span, allocate as before (malloc and free).
 *
 * The rule for callers: nothing cJSON allocated inside the span may outlive it (no tree, no
 * string, no cJSON_Print result), and inside the span such memory is freed only through
 * cJSON (cJSON_Delete, cJSON_free), never with free(). Memory cJSON allocated before the span
 * may be freed inside it: it goes to free() as usual.
 *
 * The hooks are installed once, before main, by a constructor (cJSON_InitHooks is not
 * thread-safe, and before main nothing else runs).
 */
#ifndef RD_JARENA_H
#define RD_JARENA_H

#include <stddef.h>

struct rd_jchunk;

struct rd_jarena {
    struct rd_jchunk *head;
    struct rd_jarena *outer; /* the span this one is nested in, or NULL */
    size_t bytes;            /* chunk bytes held */
};

/* From here to rd_jarena_end(a), this thread's cJSON allocations come from a. Spans nest. */
void rd_jarena_begin(struct rd_jarena *a);

/* Free everything allocated in a and end its span (the innermost one of this thread). */
void rd_jarena_end(struct rd_jarena *a);

/* Is p memory of this thread's open spans? (for tests) */
int rd_jarena_owns(const void *p);

#endif
