/*
 * rc_thread.h - work split over threads: how many, and running one share on each. The caller
 * gives each share its own memory, or slots of its arrays no other share touches, and combines
 * the shares in their order afterwards, so that no result depends on the number of threads
 * (docs/architecture.md, "Threads").
 */
#ifndef RC_THREAD_H
#define RC_THREAD_H

#include <stddef.h>

/* Shares that run on threads of their own at once; more run on the calling thread. */
#define RC_THREADS_MAX 16

/* Threads for n items: `requested` when > 0; else the machine's cores, at most max, and no
 * more than one per per_thread items. At least 1. */
size_t rc_threads_for(int requested, size_t n, size_t per_thread, size_t max);

/* work(arg, k) for every k in [0, t): k = 0 on this thread, the others each on a thread of
 * its own; a share whose thread cannot be started runs on this thread after k = 0. Returns
 * when every share has. */
void rc_threads_run(void (*work)(void *arg, size_t k), void *arg, size_t t);

/* item(arg, i) for every i in [0, n), on at most t threads (this one included): each thread
 * takes the next item as soon as it has finished one, so a slow item (a cluster that does not
 * answer until its timeout) holds one thread while the others go on through the rest, where
 * rounds of t items would each wait for their slowest. Items run in no set order and at
 * once: each touches only its own slot. Returns when every item has run. */
void rc_threads_each(void (*item)(void *arg, size_t i), void *arg, size_t n, size_t t);

/* The same in the background: work(arg, k) for every k in [0, t), each on a thread of its own,
 * while the caller goes on; rc_threads_join waits for them and runs on the calling thread the
 * shares whose thread could not be started (so every share has run when it returns). */
struct rc_threads_bg {
    void (*work)(void *arg, size_t k);
    void *arg;
    size_t t;
    struct rc_threads_share *s; /* t of them */
};
void rc_threads_start(struct rc_threads_bg *bg, void (*work)(void *arg, size_t k), void *arg,
                      size_t t);
void rc_threads_join(struct rc_threads_bg *bg);

#endif
