/* The interposed file calls that the shared core makes, as system calls.
 * The shim links this code and wraps open, openat, close and unlinkat: the
 * core's calls through libc would bind to the shim's own wrappers (see
 * shim/real.h).  A system call reaches the kernel directly, in the shim and
 * in the command alike.
 *
 * Errors: -1 with errno, as the system calls these stand for; the rest of
 * core/ returns a negative errno. */
#ifndef SHMGUARD_SYS_H
#define SHMGUARD_SYS_H

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Without O_CREAT: no mode. */
static inline int sg_sys_openat(int dfd, const char *path, int flags)
{
	return (int)syscall(SYS_openat, dfd, path, flags);
}

static inline int sg_sys_close(int fd)
{
	return (int)syscall(SYS_close, fd);
}

static inline int sg_sys_unlinkat(int dfd, const char *path, int flags)
{
	return (int)syscall(SYS_unlinkat, dfd, path, flags);
}

#endif
