/*
 * rc_fstate.h - a state of a file as stat(2) saw it (device, inode, size, modification time),
 * to tell whether a file is still the one this process last read or wrote.
 */
#ifndef RC_FSTATE_H
#define RC_FSTATE_H

#include <sys/stat.h>
#include <time.h>

struct rc_fstate {
    int set; /* 0: no state (nothing read or written yet, or forgotten) */
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtime;
};

static inline void rc_fstate_of(struct rc_fstate *s, const struct stat *st)
{
    s->set = 1;
    s->dev = st->st_dev;
    s->ino = st->st_ino;
    s->size = st->st_size;
    s->mtime = st->st_mtim;
}

static inline int rc_fstate_same(const struct rc_fstate *s, const struct stat *st)
{
    return s->set && s->dev == st->st_dev && s->ino == st->st_ino && s->size == st->st_size &&
           s->mtime.tv_sec == st->st_mtim.tv_sec && s->mtime.tv_nsec == st->st_mtim.tv_nsec;
}

#endif
