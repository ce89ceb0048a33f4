/*
 * rc_thread.c - work split over threads (rc_thread.h).
 */
#include "rc_thread.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "rc_mem.h"

size_t rc_threads_for(int requested, size_t n, size_t per_thread, size_t max)
{
    long ncpu;
    size_t t;

    if (requested > 0)
        return (size_t)requested;
    ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    t = ncpu > 0 ? (size_t)ncpu : 1;
    if (t > max)
        t = max;
    if (per_thread && t > n / per_thread)
        t = n / per_thread;
    return t ? t : 1;
}

struct rc_threads_share {
    void (*work)(void *, size_t);
    void *arg;
    size_t k;
    int started;
    pthread_t tid;
};

static void *share_run(void *p)
{
    struct rc_threads_share *s = p;

    s->work(s->arg, s->k);
    return NULL;
}

void rc_threads_run(void (*work)(void *arg, size_t k), void *arg, size_t t)
{
    struct rc_threads_share s[RC_THREADS_MAX];
    size_t on_threads = t < RC_THREADS_MAX ? t : RC_THREADS_MAX;

    for (size_t k = 1; k < on_threads; k++) {
        s[k].work = work;
        s[k].arg = arg;
        s[k].k = k;
        s[k].started = pthread_create(&s[k].tid, NULL, share_run, &s[k]) == 0;
    }
    if (t)
        work(arg, 0);
    for (size_t k = 1; k < t; k++) {
        if (k >= on_threads || !s[k].started)
            work(arg, k);
    }
    for (size_t k = 1; k < on_threads; k++) {
        if (s[k].started)
            pthread_join(s[k].tid, NULL);
    }
}

struct each {
    void (*item)(void *, size_t);
    void *arg;
    size_t n;
    atomic_size_t next;
};

static void each_run(void *arg, size_t k)
{
    struct each *e = arg;
    size_t i;

    (void)k;
    while ((i = atomic_fetch_add(&e->next, 1)) < e->n)
        e->item(e->arg, i);
}

void rc_threads_each(void (*item)(void *arg, size_t i), void *arg, size_t n, size_t t)
{
    struct each e;

    e.item = item;
    e.arg = arg;
    e.n = n;
    atomic_init(&e.next, 0);
    if (t > n)
        t = n;
    rc_threads_run(each_run, &e, t ? t : 1);
}

void rc_threads_start(struct rc_threads_bg *bg, void (*work)(void *arg, size_t k), void *arg,
                      size_t t)
{
    bg->work = work;
    bg->arg = arg;
    bg->t = t;
    bg->s = rc_xcalloc(t + 1, sizeof(*bg->s));
    for (size_t k = 0; k < t; k++) {
        struct rc_threads_share *s = &bg->s[k];
        s->work = work;
        s->arg = arg;
        s->k = k;
        s->started = pthread_create(&s->tid, NULL, share_run, s) == 0;
    }
}

void rc_threads_join(struct rc_threads_bg *bg)
{
    for (size_t k = 0; k < bg->t; k++) {
        if (!bg->s[k].started)
            bg->work(bg->arg, k);
    }
    for (size_t k = 0; k < bg->t; k++) {
        if (bg->s[k].started)
            pthread_join(bg->s[k].tid, NULL);
    }
    free(bg->s);
    bg->s = NULL;
    bg->t = 0;
}
