/* The slow path: a call that may create a file under a shm root, and the
 * calls that give a file a name there (rename, link). */
#ifndef SHMGUARD_TRACK_H
#define SHMGUARD_TRACK_H

#include <semaphore.h>
#include <stdbool.h>
#include <sys/types.h>

#include "roots.h"

/* As sg_root_path(), but a non-canonical spelling is resolved only when
 * always is set or its name could be attributed to a request: for other
 * names the answer would change nothing, and costs a stat. */
const char *sg_locate(int dirfd, const char *path, char canon[static SG_ROOT_PATH_MAX], bool always,
		      size_t *name_off);

/* How to make the program's call with other flags (the real function and
 * its arguments other than the flags). */
struct sg_call {
	int (*open)(const struct sg_call *call, int flags);
	int dirfd;
	const char *path;
	mode_t mode;
	int which;
};

/* Makes call; if it created the file that dirfd and path name, directly in
 * a shm root, for a known request, records and tags the new file.  On
 * success errno is as the program left it.  name_off: the offset of the
 * name when path is shm_open's (spelled root/name in SG_SHM_OPEN_ROOT),
 * else 0. */
int sg_create(const struct sg_call *call, int flags, int dirfd, const char *path, size_t name_off);

/* What a rename or link is about to give a name in a shm root: the file
 * that the old name refers to, seen before the call. */
struct sg_source {
	bool regular; /* false: not a regular file, or not seen */
	dev_t dev;
	ino_t ino;
};

/* After a successful rename of from to to (canonical paths in a shm root,
 * NULL for a name outside the roots): a record follows its file src, the
 * record of an overwritten name goes, and a file that arrives in a root
 * untracked is a creation of its new name.  back: for RENAME_EXCHANGE, the
 * file that was at to and is now at from; else NULL. */
void sg_renamed(const char *from, const char *to, const struct sg_source *src, const struct sg_source *back);

/* After a successful link that made to (canonical, in a shm root): a
 * creation of that name. */
void sg_linked(const char *to, const struct sg_source *src);

/* sem_open(name, oflag with O_CREAT, mode, value), which creates path
 * (/dev/shm/sem.NAME, its name at name_off): tracked as sg_create() tracks
 * an open. */
sem_t *sg_sem_create(const char *name, int oflag, mode_t mode, unsigned value, const char *path, size_t name_off);

#endif
