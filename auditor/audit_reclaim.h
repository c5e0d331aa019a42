/* --reclaim-dead INTERVAL: the node agent reclaims, on a schedule, the
 * files whose creator is proven gone in every /dev/shm of the node and in
 * the roots it was given, with sweep --dead's rules (host/reclaim.h).  It
 * runs on a thread of its own, so that a pass over /proc never holds up the
 * events. */
#ifndef SHMGUARD_AUDIT_RECLAIM_H
#define SHMGUARD_AUDIT_RECLAIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"

struct audit_reclaim_totals {
	uint64_t passes; /* passes ended */
	uint64_t files, bytes; /* removed: dead creators' files (journals not counted) */
	uint64_t failed; /* unlinks that failed, roots that could not be read or locked */
};

struct audit_reclaim;

struct audit_reclaim_opts {
	double interval; /* seconds between passes */
	const struct sg_roots *extra; /* swept besides the /dev/shm mounts (once, if among them) */
	bool node; /* every mount namespace's /dev/shm (node mode), else this namespace's */
	bool ignore_unreadable, dry_run; /* as sweep's: the totals then count what would go */
};

/* Starts the passes: the first at once, then every interval seconds.  The
 * creator records of shmguard watch, where it runs, are read at each pass,
 * so that the files of programs without the shim are reclaimed too.  NULL
 * with err when the thread cannot start.  o is copied (extra's roots too). */
struct audit_reclaim *audit_reclaim_start(const struct audit_reclaim_opts *o, char *err, size_t errlen);

/* The totals so far (a pass under way is counted when it ends); zeros for
 * NULL. */
void audit_reclaim_totals(struct audit_reclaim *r, struct audit_reclaim_totals *t);

/* Ends the passes (a pass under way finishes first); the totals stay. */
void audit_reclaim_finish(struct audit_reclaim *r);

/* Finishes and frees r.  NULL is fine. */
void audit_reclaim_free(struct audit_reclaim *r);

#endif
