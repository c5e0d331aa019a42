/* shmguard audit's parts, wired into one run (private to auditor/).  Each
 * part has its header and the state only it changes, a member of struct
 * audit below:
 *   the root table and node mode's scans  audit_roots.h    audit_roots.c
 *   the file table, the workloads         audit_files.h    audit_files.c, audit_strings.c, audit_workloads.c
 *   attribution by name                   audit_attribution.h  audit_attribution.c
 *   the kept tags and early creators      audit_kept.h     audit_tags.c, audit_early.c
 *   the abort set                         audit_markers.h  audit_markers.c, audit_fold.c
 *   the review                            audit_review.h   audit_review.c
 *   the events' effect on the tables      audit_events.h   audit_events.c
 *   the live metrics                      audit_live.h     audit_live.c
 * The tracer (audit_trace.h) hands the events over; the loop (audit_loop.c)
 * and the front door (audit.c, audit.h) wire the parts and hold the run's
 * descriptors; the reports read them all (audit_report.c, audit_ci.c).
 * A part calls only the parts listed before it; a lower part tells a
 * higher one through a callback (audit_roots.h's hooks), and a higher
 * part changes a lower one's state through the lower one's functions.
 *
 * Errors: a negative errno, and a sentence in err where a function takes
 * one; the front door (audit.h) turns them into an exit status. */
#ifndef SHMGUARD_AUDIT_ENGINE_H
#define SHMGUARD_AUDIT_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <signal.h>
#include <sys/types.h>

#include "audit.h"
#include "audit_clock.h"
#include "audit_files.h"
#include "audit_attribution.h"
#include "audit_events.h"
#include "audit_kept.h"
#include "audit_live.h"
#include "audit_markers.h"
#include "audit_review.h"
#include "audit_roots.h"
#include "audit_workloads.h"
#include "outfile.h"

/* The report files: --json, --junit, --plot. */
#define AUDIT_REPORT_FILES 3

struct metrics_server;
struct audit_reclaim;
struct audit_recorder;
struct audit_tracer;

/* What the run holds (audit.c, audit_loop.c). */
struct audit_run {
	struct audit_tracer *tracer;
	const char *probe; /* how the kernel side sees files created (audit_trace.c) */
	const char *freed_probe, *freed_why; /* and files freed, or NULL and why not */
	uint64_t dropped, frees_unsent; /* the tracer's, at the end of the run */
	int markers_fd, signal_fd; /* inotify on the abort directory; SIGINT, SIGTERM, SIGHUP, SIGCHLD */
	sigset_t old_mask; /* the mask before audit_new(): COMMAND's */
	pid_t child; /* COMMAND, or -1 */
	int cmd_status; /* -1: no COMMAND or still running */
	int cmd_signal; /* the signal that ended COMMAND, or 0 */
	bool cmd_ended;   /* COMMAND was reaped: an abort not measured by then is late */
	bool interrupted; /* a second SIGINT (or SIGTERM, SIGHUP) ended the run */
	int json_fd, junit_fd, plot_fd; /* the report files, opened by audit_new(), or -1 */
	struct sg_outfile reports[AUDIT_REPORT_FILES]; /* --json, --junit, --plot (host/outfile.h) */
	bool report_failed[AUDIT_REPORT_FILES];        /* its writing failed: not put in place */
	bool report_on_stdout;          /* one of them is stdout: the text report goes to stderr */
	struct metrics_server *metrics_server; /* --listen */
	struct audit_reclaim *reclaim; /* --reclaim-dead, or NULL */
	struct audit_recorder *recorder; /* --record-creators, or NULL */
};

/* A run: its parts, each changed by the file named beside it. */
struct audit {
	const struct audit_opts *o;
	struct audit_clock clock; /* the events' clock (CLOCK_MONOTONIC), or a test's */
	struct audit_holders_view holders; /* /proc, or a test's */
	uint64_t start_ns; /* CLOCK_MONOTONIC, the clock of the BPF events */
	uint64_t start_unix_ns; /* the run's start, CLOCK_REALTIME: birth times are compared with it */
	double end_s;
	struct audit_root_table root_table; /* audit_roots.c */
	struct audit_root_scans scans;      /* audit_roots.c, node mode */
	struct audit_pending pending;       /* audit_tags.c, audit_early.c */
	struct audit_files *files;          /* audit_files.c */
	struct audit_attribution attribution; /* audit_attribution.c */
	struct audit_workloads workloads;   /* the cgroups that created followed files */
	struct audit_abort_set abort_set;   /* audit_markers.c, audit_fold.c */
	struct audit_event_counts event_counts; /* audit_events.c */
	struct audit_review *review;        /* audit_review.c, private to it */
	struct audit_reviewed reviewed;     /* audit_review.c: what the last cycle found */
	struct audit_live *live;            /* audit_live.c, private to it */
	struct audit_run run;               /* audit.c, audit_loop.c */
};

/* audit_loop.c: the run, until COMMAND ends (its status in a->run.cmd_status),
 * --duration is over, or a signal arrives on a->run.signal_fd (SIGINT, SIGTERM,
 * SIGHUP go to COMMAND first; a second one kills it and ends the run).
 * Then the events still queued are read and the review finished.  A
 * negative errno when waiting or reading fails (what was measured is kept). */
int audit_loop_run(struct audit *a);

/* audit_report.c: the report itself (audit_report() adds the report
 * files' commit); failed[i] says whether --json, --junit or --plot could
 * not be written. */
int audit_report_write(const struct audit *a, bool failed[AUDIT_REPORT_FILES]);

#endif
