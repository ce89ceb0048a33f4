/*
 * rc_arena.h - a bump allocator for data that lives exactly as long as one reconcile pass.
 *
 * Parsed objects, placement inputs and decisions are allocated here and all discarded at once
 * with rc_arena_release, so loop mode cannot leak across passes and most structs need no _free.
 * Allocation never fails (aborts on OOM, see rc_mem.h); memory is zeroed.
 */
#ifndef RC_ARENA_H
#define RC_ARENA_H

#include <stddef.h>

struct rc_arena_block;

struct rc_arena {
    struct rc_arena_block *head;
    size_t used_total; /* bytes handed out, for reporting */
};

#define RC_ARENA_INIT                                                                              \
    {                                                                                              \
        NULL, 0                                                                                    \
    }

void *rc_arena_alloc(struct rc_arena *a, size_t n);
/* count * n bytes, zeroed, aborting on overflow. */
void *rc_arena_calloc(struct rc_arena *a, size_t count, size_t n);
char *rc_arena_strdup(struct rc_arena *a, const char *s);
char *rc_arena_strndup(struct rc_arena *a, const char *s, size_t n);
char *rc_arena_printf(struct rc_arena *a, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* parts[0..n) joined by sep ("a/b/c"): what rc_arena_printf(a, "%s/%s/%s", ...) gives, for a
 * name made for every object of every pass, at a fraction of a printf's cost. */
char *rc_arena_join(struct rc_arena *a, char sep, const char *const *parts, size_t n);
/* Hand p, n bytes from malloc, to the arena: it is freed when the arena is released (and
 * moves with it, rc_arena_adopt). For a buffer built elsewhere (an rc_buf) that must live as
 * long as the arena, without a copy. Returns p. */
void *rc_arena_take(struct rc_arena *a, void *p, size_t n);
/* Move the buffer p, which `from` took (rc_arena_take), to `to`: it is freed when `to` is
 * released, and no longer with `from`. For one large buffer that must outlive the arena it
 * was made in, without a copy. Returns 0, or -1 when `from` did not take p (nothing moves). */
int rc_arena_pass_on(struct rc_arena *from, const void *p, struct rc_arena *to);
/* Move every block of src into dst: what src handed out now lives as long as dst; src is back
 * to RC_ARENA_INIT. (A thread allocates from an arena of its own, then hands it over.) */
void rc_arena_adopt(struct rc_arena *dst, struct rc_arena *src);
/* Bytes the arena holds from malloc (its blocks, used or not, and the buffers it took);
 * used_total counts what it handed out. */
size_t rc_arena_held(const struct rc_arena *a);
/* For a caller that knows how much it will allocate: when a holds nothing yet, its first block
 * holds exactly `size` bytes (blocks otherwise start at 4 KiB, and the unused end of a block is
 * memory held for nothing); else nothing. Later blocks grow as usual. */
void rc_arena_first_block(struct rc_arena *a, size_t size);
/* Bytes handed out from a's blocks (buffers rc_arena_take'n not counted): the size of a first
 * block that would have held them all. */
size_t rc_arena_bumped(const struct rc_arena *a);
/* Bytes of a's blocks not handed out. */
size_t rc_arena_unused(const struct rc_arena *a);
/* Free every block; the arena is back to RC_ARENA_INIT. */
void rc_arena_release(struct rc_arena *a);

#endif
