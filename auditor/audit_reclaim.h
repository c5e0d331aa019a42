/* --reclaim-dead INTERVAL: the node agent reclaims, on a schedule, the
 * files whose creator is proven gone in the pods' /dev/shm (every mount
 * namespace's but the node's own), in the node's own only when asked
 * (--reclaim-node-shm: its services' files are the operator's, not the
 * pods'), and in the roots it was given, with sweep --dead's rules
 * (host/reclaim.h).  It runs on a thread of its own, so that a pass over
 * /proc never holds up the events. */
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
	uint64_t roots;  /* the roots the last pass covered */
	uint64_t node_roots_left; /* the node's own /dev/shm the last pass left alone */
};

/* Which /dev/shm mounts a pass covers. */
enum audit_reclaim_scope {
	AUDIT_RECLAIM_OWN_NAMESPACE, /* this process's mount namespace's (--own-namespace) */
	AUDIT_RECLAIM_PODS,          /* every other namespace's but pid 1's: the pods' */
	AUDIT_RECLAIM_PODS_AND_NODE, /* every namespace's (--reclaim-node-shm) */
};

/* "own namespace", "pods", "pods and node": for the reports and metrics. */
const char *audit_reclaim_scope_name(enum audit_reclaim_scope s);

struct audit_reclaim;

struct audit_reclaim_opts {
	double interval; /* seconds between passes */
	const struct sg_roots *extra; /* swept besides the /dev/shm mounts (once, if among them) */
	enum audit_reclaim_scope scope;
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

/* The scope r was started with. */
enum audit_reclaim_scope audit_reclaim_scope(const struct audit_reclaim *r);

/* Ends the passes (a pass under way finishes first); the totals stay. */
void audit_reclaim_finish(struct audit_reclaim *r);

/* Finishes and frees r.  NULL is fine. */
void audit_reclaim_free(struct audit_reclaim *r);

#endif
