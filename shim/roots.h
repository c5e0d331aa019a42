/* Which shm root, if any, a path names a file directly in: decided on the
 * resolved directory, not on the spelling, so that "/dev/shm/./x",
 * "//dev//shm//x", a symlink or a bind mount to a root count, and
 * "/dev/shm/../../tmp/x" does not. */
#ifndef SHMGUARD_ROOTS_H
#define SHMGUARD_ROOTS_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "config.h"

/* root + "/" + name: the one spelling the shim records and unlinks. */
#define SG_ROOT_PATH_MAX (SG_PATH_MAX + 1 + NAME_MAX + 1)

/* Whether path (relative to dirfd, as openat takes it) names an entry
 * directly in a shm root (never the abort directory, which is no root)
 * whose name can be a file's (not empty, "." or ".."): if so, fills canon
 * with root/name and returns the offset of the name in it; else returns 0.
 * A canonical spelling (root/name) is decided from the string alone; any
 * other costs one stat of its directory.  May change errno. */
size_t sg_root_path(int dirfd, const char *path, char canon[static SG_ROOT_PATH_MAX]);

/* The same from the string alone: only a canonical spelling counts.  No
 * system call. */
size_t sg_root_path_canonical(const char *path, char canon[static SG_ROOT_PATH_MAX]);

/* The device, inode and (if mode is not NULL) type and mode of what dirfd
 * and path name, flags as fstatat's.  Returns 0 or -1 (errno set). */
int sg_identify(int dirfd, const char *path, int flags, dev_t *dev, ino_t *ino, mode_t *mode);

#endif
