/* The slow path: a call that may create a file under a shm root. */
#ifndef SHMGUARD_TRACK_H
#define SHMGUARD_TRACK_H

#include <sys/types.h>

/* How to make the program's call with other flags (the real function and
 * its arguments other than the flags). */
struct sg_call {
	int (*open)(const struct sg_call *call, int flags);
	int dirfd;
	const char *path;
	mode_t mode;
	int which;
};

/* Makes call, and if it created path under a shm root (outside the abort
 * directory) for a known request, records and tags the new file. */
int sg_create(const struct sg_call *call, int flags, const char *path);

#endif
