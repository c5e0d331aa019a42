/* The exact record of what this process created: one entry per segment,
 * with the request it was created for, its device and inode.  Indexed by
 * request (a sweep walks only that request's segments, however many others
 * live) and by path (the program's own unlink drops the entry). */
#ifndef SHMGUARD_REGISTRY_H
#define SHMGUARD_REGISTRY_H

#include <stddef.h>
#include <sys/types.h>

struct sg_segment {
	struct sg_segment *next_of_path;    /* path hash chain (private; must stay first) */
	struct sg_segment *next_of_request; /* list handed out by sg_registry_take() */
	struct sg_request *request;         /* (private) */
	struct sg_segment **prev_of_request; /* (private) */
	dev_t dev;
	ino_t ino;
	char path[]; /* absolute path */
};

/* Records path (replacing a stale entry of the same path).  Returns 0, or -1
 * when out of memory (the segment is then simply not tracked). */
int sg_registry_add(const char *path, dev_t dev, ino_t ino, const char *request);

/* The program unlinked path itself: forget it. */
void sg_registry_forget_path(const char *path);

/* Detaches and returns every segment recorded for request (NULL if none);
 * the caller frees each with free(). */
struct sg_segment *sg_registry_take(const char *request);

/* Checks up to max entries, resuming where the previous call stopped, and
 * forgets those whose name is gone or now names another inode: a consumer
 * in another process unlinked them, and records must not pile up. */
void sg_registry_prune(size_t max);

size_t sg_registry_count(void);

void sg_registry_lock(void);
void sg_registry_unlock(void);
/* In a fork child, with the lock free: drop every entry. */
void sg_registry_forget_all(void);

#endif
