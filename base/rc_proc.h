/*
 * rc_proc.h - settings of the whole process, made once when it starts.
 */
#ifndef RC_PROC_H
#define RC_PROC_H

/*
 * Raise the soft limit on open files to the hard limit, and return the soft limit in force
 * (0: unknown). A loop over live clusters holds about six descriptors a cluster (the pass's
 * connection and two watches, each watch with libcurl's wake-up pair), so the soft limit of
 * 1024 that systemd gives a service ran out at about 170 clusters, while its hard limit is
 * 524288; every Cluster past it failed as if its kubeconfig could not be read. Nothing in
 * rightplace or its libraries waits with select(2), so a descriptor past FD_SETSIZE is fine.
 * A hard limit the kernel refuses as a soft one (infinity, past fs.nr_open) gives 2^20.
 */
unsigned long rc_proc_raise_nofile(void);

#endif
