/* The proof that a file is an orphan of a program nobody preloaded: its
 * instance is gone, that is no process that could still use its name
 * runs.  The creator is not the lifetime owner (a worker may create a
 * segment and hand its name to its parent, or to a process of another
 * cgroup), so its death alone proves nothing; what proves it is, each
 * confirmed by the kernel when the sweep asks:
 *   - the inode is still the one recorded (device, inode, birth time),
 *   - no live process in any namespace has it open or mapped (/proc),
 *   - its creator is dead (pid and start time: a reused pid is dead),
 *   - every process that started it, from its parent up to the first
 *     process of its cgroup (recorded by the kernel side at creation), is
 *     dead: a daemon that ran it through a shell is among them,
 *   - every process that opened it (its attachers, as watch recorded them)
 *     is dead; a file with more attachers, or more ancestors, than were
 *     recorded is never proven so,
 *   - and where its cgroup is its own (not sg_cgroup_shared), that cgroup
 *     no longer exists: while it does, the instance runs.
 * A cgroup's absence adds to the proof and never replaces a process's
 * death: a live process moved to another cgroup still uses the name.
 * Anything unknown (no start time, another pid namespace, processes /proc
 * would not show) is never taken as proof. */
#ifndef SHMGUARD_ORPHAN_PROOF_H
#define SHMGUARD_ORPHAN_PROOF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cgroup_ids.h"
#include "creator_store.h"
#include "shm_files.h"

/* What the system says now about a record's file and creator. */
struct sg_orphan_facts {
	bool inode_same; /* the name still refers to the recorded inode, born when it was */
	size_t holders;  /* live processes that have it open or mapped */
	unsigned unreadable; /* processes whose files could not be read */
	enum sg_cgroup_state cgroup;
	enum sg_creator_state creator;
	/* The creator's parent, when it was in the creator's cgroup (else
	 * CREATOR_NONE: it started the instance from outside). */
	enum sg_creator_state parent;
	unsigned ancestors_alive, ancestors_unknown; /* of the recorded ancestors above the parent */
	unsigned attachers_alive, attachers_unknown; /* of the record's attachers */
};

struct sg_orphan_verdict {
	bool proven;
	bool shared;         /* the creator's cgroup is shared or unchecked: its lasting proves nothing */
	const char *missing; /* what is not proven (NULL when proven) */
	const char *proof;   /* what proved it (NULL when not proven) */
};

/* Whether a cgroup (its path below the cgroup2 root) holds unrelated
 * processes, so that its lasting proves nothing about one program: the
 * root cgroup, a slice (*.slice), init.scope (PID 1, and a user manager's
 * own), a login session (session-*.scope), a user's service manager
 * (user@*.service itself; its app and service cgroups below are their own)
 * and any path not known. */
bool sg_cgroup_shared(const char *path);

/* The rules, on facts gathered (sg_orphan_gather) or given (tests). */
struct sg_orphan_verdict sg_orphan_judge(const struct sg_creator_rec *r, const struct sg_orphan_facts *f,
					 bool ignore_unreadable);

/* The facts of record r for the file called name in the directory dfd,
 * which nholders live processes hold and unreadable processes may; c
 * judges its creator, its ancestors and its attachers. */
void sg_orphan_gather(const struct sg_creator_rec *r, struct sg_creators *c, int dfd, const char *name,
		      size_t nholders, unsigned unreadable, struct sg_orphan_facts *f);

/* The record of f in s: only for a linked file the shim did not tag (the
 * shim's tag wins), else NULL. */
const struct sg_creator_rec *sg_orphan_record(const struct sg_creator_store *s, const struct sg_shm_file *f);

/* The proof for f of listing l and its record r, now; with instance_only,
 * all but its holders (a reclaim says who they are itself). */
struct sg_orphan_verdict sg_orphan_of(const struct sg_shm_listing *l, const struct sg_shm_file *f,
				      const struct sg_creator_rec *r, bool instance_only);

#endif
