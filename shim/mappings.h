/* Which of this process's mappings belong to segments it created, so that a
 * sweep can say how many of the bytes it unlinked are not freed yet: unlink
 * frees nothing while a mapping lives. */
#ifndef SHMGUARD_MAPPINGS_H
#define SHMGUARD_MAPPINGS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* fd was returned by the creation of a tracked segment (fds from
 * SG_MAX_TRACKED_FD on are not followed: their mappings go uncounted). */
#define SG_MAX_TRACKED_FD 4096
void sg_mappings_track_fd(int fd, dev_t dev, ino_t ino);

/* The program is closing fd. */
void sg_mappings_forget_fd(int fd);

/* After a successful mmap of fd / munmap of a range. */
void sg_mappings_on_mmap(void *addr, size_t len, int fd);
void sg_mappings_on_munmap(void *addr, size_t len);

/* The segment (dev, ino) was unlinked by a sweep: returns the bytes this
 * process still maps of it, which stay counted until unmapped. */
uint64_t sg_mappings_swept(dev_t dev, ino_t ino);

/* Fast-path hint: false means no munmap can concern a tracked mapping. */
int sg_mappings_any(void);

void sg_mappings_lock(void);
void sg_mappings_unlock(void);
void sg_mappings_after_fork(void);

#endif
