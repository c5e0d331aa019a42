/* Which files some process holds a lock on (flock, POSIX, OFD, a lease),
 * from /proc/locks: a lock is a fact the kernel keeps for as long as its
 * holder holds it, whatever that holder's descriptors show.  Programs
 * prove their use of a segment that way (vLLM's and vllm-omni's lock
 * files, shm_{key}_lockfile.lock), so a locked file, or a segment whose
 * lock file is locked, is in use.  /proc/locks lists every lock of the
 * kernel, of every mount namespace, by the superblock's device and the
 * inode; it is read with bounds, and past them nothing is known.  It is
 * read a page at a time and is no snapshot (a lock let go earlier in its
 * list hides a later one): a file it does not show locked is asked itself
 * before it goes (host/reclaim.c). */
#ifndef SHMGUARD_LOCKS_H
#define SHMGUARD_LOCKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* /proc/locks is read up to this many bytes: past them, what holds a lock
 * is not known. */
#define SG_LOCKS_MAX_BYTES (16u << 20)

struct sg_lock {
	uint32_t kdev; /* the kernel's encoding, major << 20 | minor (sg_kdev) */
	uint64_t ino;
	int32_t pid; /* as /proc/locks shows it: -1 for an OFD lock (no one process) */
};

struct sg_locks {
	struct sg_lock *l; /* sorted by (kdev, ino) */
	size_t n;
	bool unknown; /* /proc/locks could not be read whole: any file may be locked */
};

/* Reads /proc/locks (path: another file, for tests; NULL for it).
 * Returns 0, or a negative errno with *ls->unknown set. */
int sg_locks_scan(struct sg_locks *ls, const char *path);

/* A lock held on (kdev, ino), or NULL. */
const struct sg_lock *sg_locks_find(const struct sg_locks *ls, uint32_t kdev, uint64_t ino);

void sg_locks_free(struct sg_locks *ls);

/* The lock file vllm-omni keeps beside segment name, "shm_{name}_lockfile.lock",
 * into buf: 0, or -ENAMETOOLONG. */
int sg_lock_file_of(const char *name, char *buf, size_t len);

/* The segment lock file name guards (its name between "shm_" and
 * "_lockfile.lock", exactly), into buf: 0, or -EINVAL when name is not a
 * lock file's. */
int sg_lock_file_segment(const char *name, char *buf, size_t len);

#endif
