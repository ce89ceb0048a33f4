/*
 * rc_clock.h - the monotonic clock in seconds, for durations and deadlines (never for what is
 * written: output carries no time).
 */
#ifndef RC_CLOCK_H
#define RC_CLOCK_H

#include <time.h>

static inline double rc_mono_seconds(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

#endif
