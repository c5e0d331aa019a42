/* The auditor's BPF side from userspace: load, attach, read events, as
 * libbpf-tools' tools use their skeletons: options in, each event handed
 * to the caller's callback with the caller's context.
 *
 * Errors: a negative errno, and a sentence in err where a function takes
 * one; the front door (audit.h) turns them into an exit status. */
#ifndef SHMGUARD_AUDIT_TRACE_H
#define SHMGUARD_AUDIT_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "config.h"

struct audit_tracer;

/* A directory whose files are followed, by device (the kernel's encoding)
 * and inode. */
struct audit_trace_root {
	uint32_t kdev;
	uint64_t dir_ino;
};

/* An event of the kernel side (bpf/audit_event.h), decoded once by the
 * tracer: its size checked for its type, its strings NUL-terminated, every
 * device in the kernel's encoding.  What a type does not carry is 0. */
enum audit_event_type {
	AUDIT_EVENT_CREATE = 1, /* a file was created on a followed device */
	AUDIT_EVENT_TAG,        /* the shim tagged a file it created (USDT) */
	AUDIT_EVENT_NAME,       /* a file has a name (a rename or a link, or as it changes) */
	AUDIT_EVENT_NEW_DEV,    /* a regular file was created on a tmpfs not followed */
	AUDIT_EVENT_ATTACH,     /* a followed file was opened, not created */
	AUDIT_EVENT_FREED,      /* a file on a followed device was freed */
};

#define AUDIT_EVENT_COMM_LEN 16
#define AUDIT_EVENT_ANCESTORS 8
/* A name or request the kernel side sends, NUL included (SG_AUDIT_NAME_MAX). */
#define AUDIT_EVENT_NAME_MAX 256

struct audit_event {
	enum audit_event_type type;
	uint32_t tgid;        /* the process that did it (not for freed) */
	uint64_t ts_ns;       /* CLOCK_MONOTONIC */
	uint64_t cgroup_id;
	char comm[AUDIT_EVENT_COMM_LEN];
	uint32_t kdev;        /* the file's device (a tag's converted) */
	uint64_t ino;         /* a name's from the syscalls probe: 0, and name is the path given */
	uint64_t dir_ino;     /* create, name, attach: its name's directory, 0 unknown */
	uint64_t old_dir_ino; /* name: where it was before, 0 unknown */
	bool renamed;         /* name: a rename or a link just gave it */
	/* create: its creator's start and its parent's; attach: the opener's
	 * (CLOCK_BOOTTIME ns, 0 unknown). */
	uint64_t start_ns, parent_start_ns;
	uint32_t parent_tgid; /* create: 0 outside the auditor's pid namespace */
	/* create: its ancestors, its parent first, up to its cgroup's first
	 * process; ancestors_whole when those are all of them. */
	bool ancestors_whole;
	uint32_t nancestors;
	struct {
		uint32_t tgid; /* 0 outside the auditor's pid namespace */
		uint64_t start_ns;
	} ancestors[AUDIT_EVENT_ANCESTORS];
	/* create, name: the name ("" unknown); tag: the request ("" none).
	 * Points into the event's buffer: valid during the callback. */
	const char *name;
};

/* Decodes size bytes from the ring buffer into e; false when they are no
 * event (too short for their type, or a type unknown). */
bool audit_trace_decode(const void *data, size_t size, struct audit_event *e);

/* One event, decoded. */
typedef void audit_trace_event_fn(void *ctx, const struct audit_event *e);

struct audit_trace_opts {
	const struct audit_trace_root *roots; /* followed from the start (more: audit_trace_add_root) */
	unsigned nroots;
	bool discover;      /* report tmpfs devices not followed (AUDIT_EVENT_NEW_DEV events) */
	bool follow_tree;   /* only the processes audit_trace_follow() names, and theirs */
	bool attachers;     /* report opens of followed files (AUDIT_EVENT_ATTACH) */
	bool freed;         /* report followed files as they are freed (AUDIT_EVENT_FREED), where the kernel allows */
	const char *shim;   /* the shim whose USDT tags to follow, or NULL */
	const char *probe;  /* forced, or NULL: the best this kernel allows */
	unsigned ring_kib;  /* the event buffer, a power of two; 0: the default */
	bool verbose;       /* libbpf's messages on stderr */
	audit_trace_event_fn *on_event; /* NULL: events are dropped (doctor's check) */
	void *ctx;
};

/* The probes that can see files being created, best first, for messages. */
extern const char *const audit_probe_list;
/* The index of a probe's name, or -1. */
int audit_probe_by_name(const char *name);

/* Loads and attaches everything before any traced program runs, with the
 * best probe this kernel allows (o->probe forces one).  NULL with a message
 * in err naming what is missing (privileges, BTF, each probe's reason).
 * o is not kept. */
struct audit_tracer *audit_trace_start(const struct audit_trace_opts *o, char *err, size_t errlen);

/* Follows the files of root (its device and directory) from now on; 0, or
 * a negative errno (-E2BIG: the kernel side's maps are full). */
int audit_trace_add_root(struct audit_tracer *t, const struct audit_trace_root *root);
/* Stops following root's directory and, when dev_too (no other root is on
 * its device), its device. */
void audit_trace_remove_root(struct audit_tracer *t, const struct audit_trace_root *root, bool dev_too);

/* Counts pid, and every process it starts from now on, as the traced tree:
 * 0, or a negative errno. */
int audit_trace_follow(struct audit_tracer *t, pid_t pid);

/* Readable when events wait; audit_trace_consume() hands them to on_event. */
int audit_trace_fd(struct audit_tracer *t);
int audit_trace_consume(struct audit_tracer *t); /* 0, or a negative errno */

/* Events the kernel side could not queue, so far: frees aside. */
uint64_t audit_trace_dropped(struct audit_tracer *t);
/* Frees not sent (the buffer half full, or full), so far: their records
 * wait for the review, and no figure is wrong for it. */
uint64_t audit_trace_frees_unsent(struct audit_tracer *t);

/* Whether the shim's tags are followed (its USDT probe attached). */
bool audit_trace_has_usdt(struct audit_tracer *t);

/* The probe chosen: ctime, fentry, kprobe or syscalls. */
const char *audit_trace_probe(struct audit_tracer *t);

/* How opens are seen with attachers: fentry or kprobe (on vfs_open) or
 * syscalls (every system call's exit); NULL without. */
const char *audit_trace_attach_probe(struct audit_tracer *t);

/* How freed files are seen with o->freed: fentry or kprobe (on
 * shmem_evict_inode); NULL when they are not, and then *why (if why is not
 * NULL) says why not. */
const char *audit_trace_freed_probe(struct audit_tracer *t, const char **why);

void audit_trace_stop(struct audit_tracer *t);

#endif
