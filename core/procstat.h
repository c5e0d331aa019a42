/* Facts about a process read from /proc.
 *
 * Errors: a negative errno (docs/architecture.md, "Reporting a failure"). */
#ifndef SHMGUARD_PROCSTAT_H
#define SHMGUARD_PROCSTAT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct sg_proc_stat {
	char state;           /* field 3: R, S, D, Z (zombie)... */
	unsigned threads;     /* field 20 */
	uint64_t start_ticks; /* field 22 */
};

/* Reads /proc/PID/stat.  Returns 0, or a negative errno (-ENOENT: no such
 * process; -EIO: a line it cannot parse). */
int sg_proc_stat(pid_t pid, struct sg_proc_stat *ps);
/* The same through a /proc/PID directory's descriptor, which names one
 * process even once its pid is reused. */
int sg_proc_stat_at(int piddir, struct sg_proc_stat *ps);

/* Whether the process has exited and only waits to be reaped: a zombie
 * holds no files and runs no code.  A main thread that called pthread_exit
 * shows Z too, while other threads run: that process is alive. */
bool sg_proc_exited(const struct sg_proc_stat *ps);

/* Start time of pid in clock ticks since boot (/proc/PID/stat field 22):
 * with the pid, it names one process even after the pid is reused.  pid 0
 * is this process (/proc/self: right even where /proc belongs to another
 * pid namespace than the process's own).  Returns 0, or a negative errno
 * (-ENOENT: no such process). */
int sg_proc_start_ticks(pid_t pid, uint64_t *ticks);

/* Whether /proc shows this process's own pid namespace: /proc/self names
 * the pid getpid() returns.  A /proc mounted for another namespace (nsenter
 * -p without -m: the host's /proc seen from a pod) shows other processes
 * under the pids of this namespace. */
bool sg_proc_is_own(void);

#endif
