#include "rc_proc.h"

#include <limits.h>
#include <sys/resource.h>

#include "rc_banned.h"

#define NOFILE_FALLBACK ((rlim_t)1 << 20)

unsigned long rc_proc_raise_nofile(void)
{
    struct rlimit rl, want;

    if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
        return 0;
    if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < rl.rlim_max) {
        want = rl;
        want.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &want) == 0) {
            rl.rlim_cur = want.rlim_cur;
        } else if (rl.rlim_max > NOFILE_FALLBACK && rl.rlim_cur < NOFILE_FALLBACK) {
            want.rlim_cur = NOFILE_FALLBACK;
            if (setrlimit(RLIMIT_NOFILE, &want) == 0)
                rl.rlim_cur = want.rlim_cur;
        }
    }
    if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > ULONG_MAX)
        return ULONG_MAX;
    return (unsigned long)rl.rlim_cur;
}
