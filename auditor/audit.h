/* shmguard audit: what its parts share.  The run's state lives in one
 * struct audit; the parts are the tracer (audit_trace.c), the events'
 * effect on the file table (audit_events.c), the abort markers
 * (audit_markers.c), the measurement of what is left (audit_eval.c) and the
 * report (audit_report.c), driven by cmd_audit.c. */
#ifndef SHMGUARD_AUDIT_H
#define SHMGUARD_AUDIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "audit_files.h"
#include "config.h"
#include "pattern.h"

/* Exit codes of shmguard audit. */
enum {
	AUDIT_PASS = 0,
	AUDIT_OVER_BUDGET = 1, /* or events dropped without --allow-drops */
	AUDIT_USAGE = 2,
	AUDIT_NO_TRACING = 3,
	AUDIT_CMD_FAILED = 4, /* the gate passed, but COMMAND did not succeed */
};

struct audit_opts {
	struct sg_pattern_set patterns;
	char abort_dir[SG_PATH_MAX + 1];
	struct sg_roots roots;
	double grace, duration, interval;
	const char *json_path;
	bool have_budget, allow_drops, verbose;
	double budget_kib;
	const char *lib;
	size_t max_files;
	unsigned ring_kib; /* the kernel side's event buffer, a power of two */
	const char *probe; /* forced (--probe), or NULL: the best one here */
	char **cmd; /* NULL: the whole system */
};

struct audit_root {
	const char *path;
	uint32_t kdev;
	uint64_t dir_ino;
};

/* A file of an aborted request that was still there when measured. */
struct audit_leftover {
	struct audit_leftover *next;
	char *name; /* NULL if it has none any more and no holder showed it */
	uint32_t kdev;
	uint64_t ino;
	uint64_t bytes;
	bool linked;
	uint32_t holder; /* a process still mapping or holding it (unlinked files) */
	uint32_t creator;
	char comm[16];
	int shape;
	bool segment; /* non-empty */
};

struct audit_abort {
	struct audit_abort *next;
	char *request;
	double marker_s; /* seconds since the run began */
	bool measured;
	uint64_t leaked_bytes;
	unsigned leaked_files, leaked_segments;
	struct audit_leftover *leftovers;
};

struct audit {
	const struct audit_opts *o;
	struct audit_root roots[SG_MAX_ROOTS];
	unsigned nroots;
	struct audit_files *files;
	struct audit_abort *aborts, **aborts_tail; /* in marker order */
	unsigned naborts;
	struct audit_abort **abort_index; /* by request (audit_markers.c) */
	size_t abort_index_size;
	uint64_t start_ns; /* CLOCK_MONOTONIC, the clock of the BPF events */
	const char *probe; /* how the kernel side sees files created (audit_trace.c) */
	double end_s;
	uint64_t events, dropped, ambiguous;
	uint64_t tracked, unattributed, files_left; /* as of the last review */
	int cmd_status; /* -1: no COMMAND or still running */
};

double audit_now_s(const struct audit *a);

/* audit_events.c: one event from the ring buffer (size bytes of data,
 * checked before use) and its effect on the file table. */
void audit_on_event(struct audit *a, const void *data, size_t size);
/* Gives f a request from its name when it has none (patterns). */
void audit_attribute_by_name(struct audit *a, struct audit_file *f);
/* f is called name in root (-1: outside the roots).  renamed: that name is
 * its newest (a rename or a link, seen by an event or by a pass), and its
 * request follows it. */
void audit_file_named(struct audit *a, struct audit_file *f, int root, const char *name, bool renamed);

/* audit_markers.c: a marker appearing in the abort directory is an abort. */
int audit_markers_open(struct audit *a); /* inotify fd, or -1 */
void audit_markers_read(struct audit *a, int fd);
void audit_aborts_free(struct audit *a);

/* audit_eval.c: what is left of files now.  Measures the aborts whose
 * grace is over (all of them with all). */
void audit_measure_due(struct audit *a, bool all);
/* Forgets the files that are freed; gives the allocated bytes of those that
 * still exist, of those with no request, and their number. */
void audit_review(struct audit *a, uint64_t *tracked, uint64_t *unattributed, uint64_t *files_left);

/* audit_report.c */
int audit_report(struct audit *a);

#endif
