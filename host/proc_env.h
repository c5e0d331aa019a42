/* A variable of another process's environment (/proc/PID/environ), as the
 * node agent reads a pod's SHMGUARD_PATTERNS: the process may be hostile
 * (a pod's root writes its environment), so the read is bounded and the
 * value is checked, never trusted for more than what it says.
 *
 * Errors: a negative errno (docs/architecture.md, "Reporting a failure"). */
#ifndef SHMGUARD_PROC_ENV_H
#define SHMGUARD_PROC_ENV_H

#include <stddef.h>
#include <sys/types.h>

/* The environment read at most (in pieces): a variable past it is not seen. */
#define SG_PROC_ENV_READ_MAX (256u << 10)

/* The value of name in pid's environment (its first definition), copied
 * to out with its NUL: its length; -ENOENT (not defined in the first
 * SG_PROC_ENV_READ_MAX bytes), -E2BIG (its value does not fit in outlen),
 * or another negative errno (the process is gone, or not ours to read). */
int sg_proc_env_get(pid_t pid, const char *name, char *out, size_t outlen);

#endif
