/* Whether the creator a tag or journal names still runs, and by which
 * proof: `ls`, `sweep --dead` and the node agent's reclaim decide with it.
 *
 * A creator records itself as (pid namespace inode, its pid there, start
 * time).  In this process's own pid namespace its pid is looked up.  In
 * another one, every process of /proc is indexed by the same triple (its
 * namespace's nsfs inode, the last NSpid field, its start time): the
 * creator runs iff that triple is found.  It is dead only when this process
 * sees every process that namespace can hold; else unknown.  The start time
 * binds the namespace inode to one lifetime: a recreated sandbox whose new
 * namespace got the old inode number holds no process with the old
 * creator's pid and start time. */
#ifndef SHMGUARD_CREATORS_H
#define SHMGUARD_CREATORS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "tag.h"

enum sg_creator_state {
	CREATOR_NONE,    /* untagged */
	CREATOR_ALIVE,   /* a process with the identity the tag names runs */
	CREATOR_DEAD,    /* proven: no such process, a zombie, or the pid was reused */
	CREATOR_UNKNOWN, /* no proof either way (sg_creator_proof says why) */
};

/* How a state was reached: for alive and dead, the proof; for unknown, why
 * there is none. */
enum sg_creator_proof {
	SG_PROOF_NONE,               /* untagged */
	SG_PROOF_PID,                /* this pid namespace: its pid looked up, start time compared */
	SG_PROOF_NAMESPACE_SCAN,     /* another pid namespace: every process read, its triple looked for */
	SG_PROOF_PROC_FOREIGN,       /* /proc is another pid namespace's than this process's */
	SG_PROOF_NO_IDENTITY,        /* the creator could not read its own start time or namespace */
	SG_PROOF_PID_UNREADABLE,     /* this namespace: its /proc/PID/stat could not be read */
	SG_PROOF_NAMESPACE_UNSEEN,   /* another namespace that this process may not see whole */
	SG_PROOF_PROCESSES_UNREADABLE, /* another namespace, and some process's identity could not be read */
	SG_PROOF_OTHER_TIME_NAMESPACE, /* a process that may be it runs in another time namespace (other clock) */
	SG_PROOF_PROC_HIDES,         /* /proc hides processes from this one (hidepid: pid 1 does not show) */
};

/* One process as the index knows it. */
struct sg_proc_ident {
	uint64_t pidns;
	uint64_t start_ticks;
	uint32_t nspid;
	bool exited;     /* a zombie (sg_proc_exited) */
	bool other_time; /* in another time namespace than this process, or not known to be in ours */
};

/* What this process can tell about creators; filled at its first question. */
struct sg_creators {
	bool checked;
	bool proc_own;      /* /proc is this process's pid namespace's (sg_proc_is_own) */
	bool proc_whole;    /* it shows pid 1: not mounted with hidepid against this process */
	bool initial_pidns; /* this process is in the initial pid namespace, with its own /proc */
	uint64_t self_pidns, self_timens;
	bool indexed;       /* the index below was built (only once another namespace is asked about) */
	struct sg_proc_ident *p; /* sorted by (pidns, nspid, start_ticks) */
	size_t n;
	unsigned unreadable;      /* processes whose identity could not be read */
	pid_t first_unreadable;   /* one of them (a pid of /proc), to name */
};

/* The clock the process behind piddir (a /proc/PID directory) reads start
 * times with, against this process's: its time namespace, as the kernel
 * says now (through another of its threads when its group leader has
 * exited). */
enum sg_proc_clock {
	SG_CLOCK_SAME,     /* this process's time namespace */
	SG_CLOCK_OTHER,    /* another, or not known to be this one */
	SG_CLOCK_RELEASED, /* none, in any thread: only exits let namespaces go */
	SG_CLOCK_GONE,     /* none: the process was reaped since piddir was opened */
};
enum sg_proc_clock sg_creators_clock_at(struct sg_creators *c, int piddir);

/* The creator's state, and through proof (may be NULL) why. */
enum sg_creator_state sg_creators_judge(struct sg_creators *c, const struct sg_tag *creator,
					enum sg_creator_proof *proof);

void sg_creators_free(struct sg_creators *c);

const char *sg_creator_state_name(enum sg_creator_state s);
/* A short word for JSON ("pid", "namespace_scan", "proc_foreign"...). */
const char *sg_creator_proof_name(enum sg_creator_proof p);
/* Why an unknown creator is unknown, as a sentence's end for people. */
const char *sg_creator_proof_why(enum sg_creator_proof p);

/* Whether /proc belongs to another pid namespace than this process's: then
 * every creator is unknown. */
bool sg_creators_proc_foreign(struct sg_creators *c);

#endif
