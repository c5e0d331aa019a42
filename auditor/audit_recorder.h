/* The creator recorder: a second consumer of the tracer's events (the
 * auditor's table is the first).  For every file created in the roots it
 * is given it keeps a record of its creator as the kernel saw it (the
 * process and its start time, its parent and ancestors, its cgroup and
 * comm) and of the other processes that open it (its attachers), in the
 * store `sweep --dead` and the node agent's --reclaim-dead read
 * (host/creator_store.h).  The node agent runs it as it measures
 * (--record-creators); `shmguard watch` runs it alone (audit_watch_run).
 * Only one recorder per store directory (a lock says so).
 *
 * Errors: a negative errno, and a sentence in err where a function takes
 * one. */
#ifndef SHMGUARD_AUDIT_RECORDER_H
#define SHMGUARD_AUDIT_RECORDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "audit_trace.h"
#include "config.h"

struct audit_recorder;

/* Opens the store (made if missing) and takes its lock; NULL with err
 * (another recorder holds it, or the store is not safe to trust).
 * attachers: opens are followed (the tracer's attachers option). */
struct audit_recorder *audit_recorder_new(bool attachers, char *err, size_t errlen);

/* Records the files of the directory at path (its device and inode
 * given, as the tracer follows it) from now on; a root already recorded
 * is left as it is.  0, or a negative errno. */
int audit_recorder_add_root(struct audit_recorder *r, const char *path, uint32_t kdev, uint64_t dir_ino);
/* Stops recording a root; the records of its device go once no root has
 * been on that device for a minute (its mount is gone, not found again in
 * a restarted container's namespace). */
void audit_recorder_remove_root(struct audit_recorder *r, uint32_t kdev, uint64_t dir_ino);

/* One of the tracer's events (creations and opens count). */
void audit_recorder_event(struct audit_recorder *r, const struct audit_event *e);

/* Called before the tracer's events are read: the moment up to which
 * every creation is then in hand. */
void audit_recorder_drain_begins(struct audit_recorder *r);

/* After the events are read: names looked for, records of files gone
 * dropped, the store written when due.  0, or a negative errno with err
 * (the store cannot be written). */
int audit_recorder_tick(struct audit_recorder *r, char *err, size_t errlen);

/* The last names looked for and the store written: 0, or a negative
 * errno with err. */
int audit_recorder_finish(struct audit_recorder *r, char *err, size_t errlen);

/* What to tell the user, once, of files that may have no record (the
 * store or the name queue full); NULL when nothing. */
const char *audit_recorder_warning(struct audit_recorder *r);

void audit_recorder_free(struct audit_recorder *r);

/* shmguard watch: the recorder alone on the tracer, over roots, until
 * SIGINT or SIGTERM.  0 when stopped by a signal; else a negative errno
 * with err (tracing not possible, the store not usable). */
struct audit_watch_opts {
	struct sg_roots roots;
	const char *probe; /* forced, or NULL */
	bool attachers;
};
int audit_watch_run(const struct audit_watch_opts *o, char *err, size_t errlen);

#endif
