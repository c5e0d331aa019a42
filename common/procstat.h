/* Facts about a process read from /proc. */
#ifndef SHMGUARD_PROCSTAT_H
#define SHMGUARD_PROCSTAT_H

#include <stdint.h>
#include <sys/types.h>

/* Start time of pid in clock ticks since boot (/proc/PID/stat field 22):
 * with the pid, it names one process even after the pid is reused.
 * Returns 0, or -1 with errno set (ENOENT: no such process). */
int sg_proc_start_ticks(pid_t pid, uint64_t *ticks);

#endif
