/* State shared by the shim's parts (state.c): configuration, whether the
 * shim is active (init.c), the re-entry guard, this process's identity and
 * the counters reported at exit. */
#ifndef SHMGUARD_STATE_H
#define SHMGUARD_STATE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "config.h"
#include "tag.h"

#define SG_EXPORT __attribute__((visibility("default")))

extern struct sg_config sg_cfg;

/* Loads the configuration once.  Returns whether the shim is active: false
 * after a bad configuration, when every call passes through untouched. */
bool sg_active(void);

/* The shim's thread-locals live in the static TLS block (it is preloaded,
 * and glibc keeps room for a late dlopen): every wrapper reads them, and the
 * default model would make each read a call to __tls_get_addr. */
#define SG_THREAD_LOCAL __thread __attribute__((tls_model("initial-exec")))

/* Set while a thread runs the shim's own work, so the file calls that work
 * makes are not intercepted again.  Only sg_enter() and sg_leave() write it. */
extern SG_THREAD_LOCAL bool sg_busy;

/* Signal handlers of the program's entered and not yet returned from, on
 * this thread (shim/signals.c runs every handler through a trampoline). */
extern SG_THREAD_LOCAL unsigned sg_handler_depth;
bool sg_in_handler_slow(void);

/* Whether this thread runs one of the program's signal handlers (one left
 * by siglongjmp no longer counts).  A handler may call open(), unlink() or
 * shm_open() (async-signal-safe) anywhere in the program, inside its
 * malloc() say: there the shim, which allocates and takes locks, does
 * nothing but pass the call on. */
static inline bool sg_in_handler(void)
{
	return __builtin_expect(sg_handler_depth != 0, 0) && sg_in_handler_slow();
}

/* The shim's bookkeeping runs between these: a signal handler that
 * interrupts it on this thread and calls back into libc (open and unlink
 * are async-signal-safe) then goes straight through, instead of waiting for
 * a lock this very thread holds.  False: the thread is busy already, or
 * runs a signal handler, and the bookkeeping is skipped.  A thread of the
 * shim's own (the watcher) and the exit summary enter and never leave. */
static inline bool sg_enter(void)
{
	if (sg_busy || sg_in_handler())
		return false;
	sg_busy = true;
	return true;
}

static inline void sg_leave(void)
{
	sg_busy = false;
}

/* Set in the watcher thread, which has a descriptor table of its own. */
extern SG_THREAD_LOCAL bool sg_watcher_thread;

/* The request set for this thread with shmguard_set_request(), or "". */
extern SG_THREAD_LOCAL char sg_thread_request[SG_NAME_MAX + 1];

/* This process, as its tags name it: pid, start time and pid namespace
 * (kept current across fork). */
struct sg_self {
	pid_t pid;
	uint64_t start_ticks;
	uint64_t pidns;
	struct sg_tag_head tag_head; /* the start of every tag it writes */
};

/* Its pid is always current; the rest is read from /proc at the first
 * tag or journal that needs it (sg_self_known): most children of a forking
 * server never tag a file, and the reads cost more than the fork. */
extern struct sg_self sg_self;
const struct sg_self *sg_self_known(void);
/* At start-up: the pid, and a page that tells a child no fork handler saw. */
void sg_self_init(void);
/* In a fork child (a fork handler): counters zeroed, the identity learnt
 * anew (which ends a copy's reset, below). */
void sg_state_after_fork_child(void);
/* Whether this process is a copy no fork handler saw (a raw clone(2)
 * child): 0 not, or known since; 1 for the one thread that is to reset the
 * shim, ending with sg_state_after_fork_child(); -1 for the others while it
 * does. */
int sg_self_claim_copy(void);

struct sg_stats {
	uint64_t tagged;          /* segments recorded at creation */
	uint64_t ambiguous;       /* created names whose patterns named two requests */
	uint64_t swept;           /* names unlinked by an abort */
	uint64_t swept_bytes;     /* their allocated bytes */
	uint64_t late_puts;       /* created after their request's marker: unlinked at once */
	uint64_t replaced;        /* left alone: the name now refers to another file */
	uint64_t vanished;        /* already gone when the sweep came */
	uint64_t mapped_bytes;    /* unlinked by a sweep but still mapped here: not yet freed */
	uint64_t ignored_markers; /* markers rejected (owner, type, unsafe directory) */
	uint64_t signal_misses;   /* files a signal handler created: not tracked */
};

extern struct sg_stats sg_stats;

#define sg_count(field, n) __atomic_add_fetch(&sg_stats.field, (n), __ATOMIC_RELAXED)

#endif
