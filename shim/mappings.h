/* How many of the bytes a sweep unlinked this process still maps: unlink
 * frees nothing while a mapping lives.
 *
 * Nothing is recorded while the program maps and unmaps its segments.  When
 * a sweep unlinks some, their mappings are read from /proc/self/maps (the
 * kernel's own account, which also sees mappings made by mremap or inherited
 * across fork); from then on the munmap() and mmap() wrappers keep the figure
 * current.  The only list kept is that of swept mappings, so neither wrapper
 * does any work while nothing swept is mapped. */
#ifndef SHMGUARD_MAPPINGS_H
#define SHMGUARD_MAPPINGS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* fd was returned by the creation of a tracked segment (fds from
 * SG_MAX_TRACKED_FD on are not followed: mapping them after their sweep goes
 * uncounted). */
#define SG_MAX_TRACKED_FD 4096
void sg_mappings_track_fd(int fd, dev_t dev, ino_t ino);

/* The program is closing fd. */
void sg_mappings_forget_fd(int fd);

/* After a successful mmap of fd / munmap of a range. */
void sg_mappings_on_mmap(void *addr, size_t len, int fd, int flags);
void sg_mappings_on_munmap(void *addr, size_t len);

/* Fast-path hint: false means no munmap can concern a swept mapping. */
int sg_mappings_any(void);

struct sg_file_id {
	dev_t dev;
	ino_t ino;
};

/* A sweep unlinked these n files: returns the bytes this process still maps
 * of them, which stay counted (sg_stats.mapped_bytes) until unmapped. */
uint64_t sg_mappings_swept(const struct sg_file_id *ids, size_t n);

/* The file mapped at addr, as /proc/self/maps names it (for a mapping
 * libc made without the mmap() wrapper).  Returns 0, or -1 if none. */
int sg_mappings_file_at(const void *addr, struct sg_file_id *id);

void sg_mappings_lock(void);
void sg_mappings_unlock(void);

/* In a fork child, which inherits the mappings but not the parent's counts. */
void sg_mappings_after_fork(void);
/* The same in a copy no fork handler saw: the lock made anew too. */
void sg_mappings_after_unseen_fork(void);

#endif
