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
 * whose name can be a file's (not empty, "." or ".."): if so, returns its
 * one spelling root/name (path itself when so spelled, else canon, filled)
 * with the offset of the name in it; else NULL.  A canonical spelling is
 * decided from the string alone; any other costs one stat of its
 * directory.  May change errno. */
const char *sg_root_path(int dirfd, const char *path, char canon[static SG_ROOT_PATH_MAX], size_t *name_off);

/* The offset of the name in path if path is spelled root/name, else 0.
 * No system call. */
size_t sg_root_spelled(const char *path);
/* The index of the root a path spelled root/name names, its name at
 * name_off; SG_MAX_ROOTS if there is none.  No system call. */
unsigned sg_root_at(const char *path, size_t name_off);

/* The last component of path, if it can name a file (not empty, "." or
 * ".."), else NULL. */
const char *sg_file_name(const char *path);

/* The device, inode and (if mode is not NULL) type and mode of what dirfd
 * and path name, flags as fstatat's.  Returns 0, or a negative errno. */
int sg_identify(int dirfd, const char *path, int flags, dev_t *dev, ino_t *ino, mode_t *mode);

/* In the watcher thread, with place (which moves a new descriptor where it
 * is to be kept in the watcher's table): opens each root's directory once,
 * checked to be the directory its path named when first looked at.  From
 * then on the watcher reaches the roots' files only through these
 * descriptors, never through a path again, so that a chroot() or a rename
 * cannot take them from it.  A root missing now is opened when first
 * needed. */
void sg_roots_open(int (*place)(int fd));

/* In a fork child: the descriptors were in the parent watcher's table. */
void sg_roots_forget(void);

/* Where a recorded path (root/name, canonical) is to be reached from: in
 * the watcher, its root's descriptor (-1 if that root cannot be opened)
 * with *name the name in it; in any other thread, AT_FDCWD and the path
 * itself, as the program's view of the files is the only one there. */
int sg_root_file(const char *path, const char **name);

#endif
