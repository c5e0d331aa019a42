/* Which processes hold files of the shm devices open or mapped, read from
 * /proc: what `audit` needs for unlinked files that still use RAM, and what
 * `ls` and `sweep` need to tell a file in use from an orphan.
 *
 * Errors: a negative errno (docs/architecture.md, "Reporting a failure"). */
#ifndef SHMGUARD_HOLDERS_H
#define SHMGUARD_HOLDERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sg_holder {
	uint32_t kdev; /* the kernel's encoding, major << 20 | minor */
	uint64_t ino;
	uint32_t pid;
	bool mapped;     /* through a mapping (else an open fd) */
	char *stat_path; /* /proc/PID[/task/TID]/fd/N or /proc/PID/map_files/RANGE: stat() gives the file */
	char *path;      /* the path /proc shows, without " (deleted)"; may be NULL */
	const char *name; /* its last component (in path); NULL when path has no '/' */
};

struct sg_holders {
	struct sg_holder *h; /* sorted by (kdev, ino) */
	size_t n, cap;
	unsigned unreadable;     /* processes whose fds or maps could not be read */
	uint32_t first_unreadable; /* one of them, to name */
};

/* Scans every process, through every thread, for files on the given
 * devices (unlinked ones only, when unlinked_only): one walk of /proc,
 * however many devices.  Returns 0, or a negative errno when /proc cannot
 * be read (-ENOMEM: memory short). */
int sg_holders_scan(struct sg_holders *hs, const uint32_t *kdevs, unsigned ndevs, bool unlinked_only);

/* The holders of (kdev, ino): a pointer to the first and their number. */
const struct sg_holder *sg_holders_find(const struct sg_holders *hs, uint32_t kdev, uint64_t ino, size_t *count);

/* The holders of files on kdev, by inode: a pointer to the first and their number. */
const struct sg_holder *sg_holders_on(const struct sg_holders *hs, uint32_t kdev, size_t *count);

void sg_holders_free(struct sg_holders *hs);

/* The kernel's device encoding of a userspace st_dev. */
uint32_t sg_kdev(uint64_t st_dev);

#endif
