/* The exact record of what this process created: one entry per segment,
 * with the request it was created for, its device and inode.  Indexed by
 * request (a sweep walks only that request's segments, however many others
 * live) and by path (the program's own unlink drops the entry).  It also
 * remembers which requests are aborted, so that a segment created after its
 * abort is known as such under the same lock that records it. */
#ifndef SHMGUARD_REGISTRY_H
#define SHMGUARD_REGISTRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "htable.h"
#include "new_file.h"

struct sg_segment {
	struct sg_hnode by_path;            /* (private) */
	struct sg_segment *next_of_request; /* list handed out by sg_registry_abort() */
	/* (private) The request index chains segments whose request IDs share
	 * a bucket, doubly linked so that forgetting one is O(1).  A segment
	 * not indexed yet is pending, in one such list, and its req_hash is
	 * not computed. */
	struct sg_segment *req_next, **req_prev;
	uint64_t req_hash;
	bool pending;
	const char *request; /* the request ID, stored after the path */
	dev_t dev;
	ino_t ino;
	uint32_t journal_slot; /* its record in the ownership journal, 0: none */
	size_t size;           /* (private) bytes allocated, path and request included */
	char path[];           /* absolute path */
};

enum sg_added { SG_ADDED = 0, SG_ADDED_ABORTED = 1 };

/* Records f (replacing a stale entry of the same path), and writes it into
 * the ownership journal, whose record goes when the entry is taken or
 * forgotten (a sweep releases the records of the entries it is handed).
 * Its request is hashed for the request index only when it must be: when
 * an abort comes, when a few hundred newer segments wait to be indexed, or
 * when an abort of a request that may be its own is remembered; most
 * segments are unlinked before any of these.
 * Returns SG_ADDED, SG_ADDED_ABORTED when its request is already aborted (a
 * late put: sweep it), or -1 when out of memory (the segment is not
 * tracked). */
int sg_registry_add(const struct sg_new_file *f);

/* The program unlinked path (root/name, the name at name_off) itself:
 * forget it. */
void sg_registry_forget_path(const char *path, size_t name_off);

/* Detaches and returns the entry of path (root/name, the name at
 * name_off) for the caller to free, or NULL: the program renamed it. */
struct sg_segment *sg_registry_take(const char *path, size_t name_off);

/* Marks request aborted (at now; later additions report it) and detaches
 * and returns every segment recorded for it, NULL if none; the caller hands
 * each to sg_registry_done(). */
struct sg_segment *sg_registry_abort(const char *request, time_t now);

/* Forgets aborts older than cutoff: their markers have expired too. */
void sg_registry_expire_aborts(time_t cutoff);

/* Checks up to max entries, resuming where the previous call stopped, and
 * forgets those that gone() says are gone or now name another inode: a
 * consumer in another process unlinked them, and records must not pile up. */
void sg_registry_prune(size_t max, bool (*gone)(const struct sg_segment *seg));

size_t sg_registry_count(void);

/* A segment handed out by sg_registry_abort() and swept (its name unlinked,
 * or found gone): its journal record goes, and it is freed.  Only then: a
 * process killed in the middle of a sweep leaves the files it had not
 * unlinked yet claimed in its journal. */
void sg_registry_done(struct sg_segment *seg);

/* At exit: the journals none of whose files remain are removed
 * (sg_jw_exit), under the lock; without may_wait, not at all when another
 * thread holds it (an _exit from a signal handler, say): they stay for a
 * sweep to remove. */
void sg_registry_exit(bool may_wait);

void sg_registry_lock(void);
void sg_registry_unlock(void);
/* In a fork child, with the lock free: drop every entry. */
void sg_registry_forget_all(void);
/* In a copy no fork handler saw: the lock made anew and every entry
 * dropped unfreed (the copy may hold malloc's locks for threads it lacks). */
void sg_registry_abandon(void);

#endif
