/* shmguard audit's parts, and what they share.  The run's state lives in
 * one struct audit, private to auditor/: the tracer (audit_trace.c), the
 * events' effect on the file table (audit_events.c), the abort markers
 * (audit_markers.c), the review of what is left (audit_review.c), the event
 * loop that drives them (audit_loop.c), the live metrics (audit_live.c)
 * and the reports (audit_report.c, audit_ci.c).  audit.c is the front
 * door (audit.h).
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
#include "audit_kept.h"
#include "audit_roots.h"
#include "audit_workloads.h"
#include "htable.h"
#include "outfile.h"

struct metrics_server;
struct audit_event;
struct audit_folded;
struct audit_tracer;
struct sg_holders;

/* Where the review learns which processes hold files unlinked from a root:
 * /proc (sg_holders_scan) unless a test gives its own.  The roots' names
 * are read from their directories, which a test makes itself. */
struct audit_holders_view {
	int (*scan)(void *ctx, struct sg_holders *hs, const uint32_t *kdevs, unsigned ndevs); /* NULL: /proc */
	void *ctx;
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
	struct audit_workload *creator_workload; /* held while the leftover is listed */
	char comm[16];
	int shape;
	bool segment; /* non-empty */
};

struct audit_abort {
	struct audit_abort *next;
	struct sg_hnode node; /* in the index by scope and request */
	uint32_t scope; /* 0: --abort-dir's; else the root (its id) whose abort directory it came from */
	char *request;
	double marker_s; /* seconds since the run began */
	uint64_t leaked_bytes;
	unsigned leaked_files, leaked_segments;
	unsigned unfollowed_files; /* its files on filesystems not followed (the shim's tags say so) */
	struct audit_leftover *leftovers;
	bool measured;
	struct audit_workload_set workloads; /* those it counts for (audit_workloads.h), until measured */
};

/* A shim's tag for a file on a device no root follows (yet): kept for a
 * while, so that a root found late claims it, and an abort of its request
 * counts it as a file not followed (audit_tags.c). */
struct audit_pending_tag {
	struct audit_kept k; /* first: kept in a->tags */
	uint32_t kdev;
	uint64_t ino;
	char request[];
};

/* A file the kernel side saw created on a tmpfs no root follows, in the
 * first moments of its device (a pod's /dev/shm before it is found): its
 * creator, for the root's catch-up (audit_early.c). */
struct audit_early_create {
	struct audit_kept k; /* first: kept in a->early */
	uint32_t kdev, tgid;
	uint64_t ino, cgroup_id;
	char comm[16];
};

/* Node mode's scans of the mounts (audit_roots.c). */
struct audit_root_scans {
	uint32_t root_scans;
	bool scan_wanted; /* a new device was reported */
	bool full_wanted; /* one a scan of the new namespaces did not find */
	uint32_t reported[64]; /* the devices reported since the last scan */
	unsigned nreported;
	double next_scan_s, scanned_at_s, last_scan_s, last_new_scan_s;
	double full_scan_begun_s; /* when the last scan of every namespace began */
	uint64_t *known_ns; /* the mount namespaces read so far, sorted (host/shm_mounts.h) */
	size_t nknown_ns;
	uint64_t new_devs, scans_failed;
	unsigned namespaces, namespaces_unreadable; /* as of the last scan */
};

/* The roots followed (audit_roots.c). */
struct audit_root_table {
	struct audit_root *roots; /* slots, some unused (audit_roots.h) */
	unsigned nroots, roots_cap;
	uint32_t next_root_id;
	struct audit_root_hooks root_hooks;
	uint64_t roots_found, roots_late, roots_forgotten, roots_refused, caught_up;
};

/* Records kept for a root found later (audit_tags.c, audit_early.c), oldest first. */
struct audit_pending {
	struct audit_kept_list tags;  /* struct audit_pending_tag (audit_tags.c) */
	struct audit_kept_list early; /* struct audit_early_create (audit_early.c) */
	uint64_t tags_expired; /* kept as long as allowed, never claimed nor counted */
	uint64_t unfollowed_files; /* files of aborted requests on filesystems not followed */
};

/* The aborts: the markers seen, measured or not, listed or folded
 * (audit_markers.c, audit_fold.c). */
struct audit_abort_set {
	struct audit_abort *aborts, **aborts_tail; /* in marker order */
	struct audit_abort *unmeasured; /* the first abort not measured yet */
	unsigned naborts;
	struct audit_folded *folded; /* the aborts no longer listed (audit_fold.c), NULL: none yet */
	struct audit_abort *kept, **kept_tail; /* folded aborts still known by request, oldest first */
	size_t nkept;
	struct sg_htable abort_index; /* by request (audit_markers.c) */
	char **markers_at_start; /* sorted */
	size_t nmarkers_at_start;
	uint64_t marker_overflows, markers_recovered; /* the inotify queue's */
	uint64_t markers_refused; /* entries of the abort directory that are no markers (sg_marker_check) */
	int abort_dfd;            /* the abort directory, checked; -1: none */
	uint32_t abort_kdev;      /* its device (the kernel's encoding) and inode */
	uint64_t abort_ino;
	int abort_wd;             /* its inotify watch */
	uint64_t aborts_measured, leaked_measured; /* aborts measured so far, and the bytes they left */
	uint64_t reclaimed; /* bytes of aborted requests' files found freed after the marker */
};

/* The run's figures, for the reports and the metrics (audit_live.c). */
struct audit_figures {
	const char *probe; /* how the kernel side sees files created (audit_trace.c) */
	const char *freed_probe, *freed_why; /* and files freed, or NULL and why not */
	uint64_t events, dropped, ambiguous;
	uint64_t tracked, unattributed, files_left; /* as of the last review */
	uint64_t aborted_held;  /* the part of tracked whose request is aborted */
	uint64_t live_pending, live_files; /* the part whose request is not (yet) aborted */
	uint64_t freed_at_eviction, freed_by_review; /* records forgotten, by how their file was found freed */
	uint64_t frees_unsent; /* frees the kernel side did not send (its buffer half full): left to the review */
	uint32_t cycles;    /* review cycles ended */
	double last_review_s, last_review_duration_s; /* when the last cycle ended (audit_now_s), how long it took */
};

/* What the run holds (audit.c, audit_loop.c). */
struct audit_run {
	struct audit_tracer *tracer;
	int markers_fd, signal_fd; /* inotify on the abort directory; SIGINT, SIGTERM, SIGHUP, SIGCHLD */
	sigset_t old_mask; /* the mask before audit_new(): COMMAND's */
	pid_t child; /* COMMAND, or -1 */
	int cmd_status; /* -1: no COMMAND or still running */
	int cmd_signal; /* the signal that ended COMMAND, or 0 */
	bool interrupted; /* a second SIGINT (or SIGTERM, SIGHUP) ended the run */
	int json_fd, junit_fd, plot_fd; /* the report files, opened by audit_new(), or -1 */
	struct sg_outfile reports[3];   /* --json, --junit, --plot (host/outfile.h) */
	bool report_failed[3];          /* its writing failed: not put in place */
	bool report_on_stdout;          /* one of them is stdout: the text report goes to stderr */
	struct metrics_server *metrics_server; /* --listen */
	struct audit_reclaim *reclaim; /* --reclaim-dead, or NULL */
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
	struct audit_files *files;          /* audit_files.c, named by audit_attribution.c */
	struct audit_workloads workloads;   /* the cgroups that created followed files */
	struct audit_abort_set abort_set;   /* audit_markers.c, audit_fold.c */
	struct audit_review *review;        /* audit_review.c */
	struct audit_figures fig;           /* the events', the review's and the loop's counts */
	struct audit_live *live;            /* metrics and the plot's samples (audit_live.c) */
	struct audit_run run;               /* audit.c, audit_loop.c */
};

/* audit_events.c: one event of the tracer (decoded and checked there) and
 * its effect on the file table. */
void audit_on_event(struct audit *a, const struct audit_event *e);
/* A root found late (slot): the files it holds made since the run began
 * are followed from now on, with the creator and tag kept for each
 * (audit_early_claim, audit_tags_claim). */
void audit_events_catch_up(struct audit *a, int slot);

/* audit_attribution.c: a file's request from its names.
 * Gives f a request from its name when it has none (patterns). */
void audit_attribute_by_name(struct audit *a, struct audit_file *f);
/* f is called name in root (-1: outside the roots).  renamed: that name is
 * its newest (a rename or a link, seen by an event or by a pass), and its
 * request follows it. */
void audit_file_named(struct audit *a, struct audit_file *f, int root, const char *name, bool renamed);

/* audit_markers.c: a marker appearing in the abort directory is an abort. */
/* The inotify fd, or a negative errno with err set (the directory is
 * refused, or cannot be watched). */
int audit_markers_open(struct audit *a, char *err, size_t errlen);
int audit_markers_read(struct audit *a, int fd); /* 0, or a negative errno: the fd failed */
/* A new abort: request's marker, if it is one (else counted as refused, if
 * count_refused: a rescan would count the same entries again).
 * False if it is no marker, or an abort already.  A file in the abort
 * directory is no file of a request: when it is on a shm device its inode
 * is excluded from the table.  The ctime probe sends a file's creation
 * before inotify queues the marker, so the caller reads the events after
 * the markers, then ends the exclusions.  (The other probes send it later,
 * but with its directory: audit_in_abort_dir.) */
bool audit_abort_add(struct audit *a, uint32_t scope, int dfd, const char *request, bool count_refused);
/* Whether dir_ino on kdev is an abort directory watched (the run's or a
 * root's own): what is created there is a marker or nothing, never a file
 * of a request. */
bool audit_in_abort_dir(const struct audit *a, uint32_t kdev, uint64_t dir_ino);
/* The abort of request in scope (audit_root_scope), or NULL if it has none (yet). */
struct audit_abort *audit_abort_of(const struct audit *a, uint32_t scope, const char *request);
/* A discovered root's own abort directory (o->root_abort_name), watched if
 * it exists; tried again at each scan until it does. */
void audit_markers_watch_root(struct audit *a, int root);
void audit_markers_unwatch_root(struct audit *a, int root);
/* Every root's, at the end of the run (before the roots are freed). */
void audit_markers_unwatch_roots(struct audit *a);

/* audit_tags.c: tags of files on devices not followed. */
void audit_tags_keep(struct audit *a, uint32_t kdev, uint64_t ino, const char *request);
/* f, just followed, takes the tag kept for it, if any. */
void audit_tags_claim(struct audit *a, struct audit_file *f);
/* ab is measured: the tags kept for its request are its files not followed. */
void audit_tags_count(struct audit *a, struct audit_abort *ab);
void audit_tags_expire(struct audit *a);
void audit_tags_free(struct audit *a);
/* audit_early.c: the creators of files made on a tmpfs before its root
 * was found, kept a while for the root's catch-up. */
void audit_early_keep(struct audit *a, const struct audit_event *e);
/* The creator kept for (kdev, ino), taken: false if none. */
bool audit_early_claim(struct audit *a, uint32_t kdev, uint64_t ino, struct audit_early_create *out);
void audit_early_expire(struct audit *a);
void audit_early_free(struct audit *a);
/* f, a file of ab's request (in ab's scope), makes ab count for f's
 * creator's workload (until ab is measured: audit_workloads.h). */
void audit_abort_note_file(struct audit_abort *ab, const struct audit_file *f);
/* The abort f's request has, in its root's scope or else --abort-dir's, or NULL. */
const struct audit_abort *audit_abort_of_file(const struct audit *a, const struct audit_file *f);
void audit_aborts_free(struct audit *a);

/* audit_fold.c: what a run of months keeps of the aborts it measured.
 * Those beyond the listed window (the newest --abort-detail that left files,
 * and as many that left none) are folded: their figures go to a->folded
 * (the reports add them to the listed ones'), their records are freed but
 * for one that keeps the request known, and in the abort index, while its
 * marker is in the abort directory or a file of its request is followed:
 * such a file still counts as an aborted request's, and a rescan of the
 * directory does not take the marker for a new abort. */
void audit_fold_measured(struct audit *a);
/* At a review cycle's end: forgets some folded requests whose marker and
 * files are gone. */
void audit_fold_sweep(struct audit *a);
void audit_fold_free(struct audit *a);

/* audit_review.c: what is left of files.  The review forgets freed files,
 * sums those that exist (a->tracked, unattributed, files_left) and
 * measures the aborts whose grace is over, in cycles spread over steps. */
struct audit_review *audit_review_new(void);
void audit_review_free(struct audit_review *rv);
/* When the next step has work (audit_now_s()'s clock). */
double audit_review_due_s(const struct audit *a);
/* A slice of the review, if one is due: a few milliseconds at most. */
void audit_review_step(struct audit *a);
/* A file born at born_ns (the events' clock; the run's start when not
 * known) was caught up (a root found late): the cycle under way, which
 * does not look at it, knows no request from then on. */
void audit_review_caught_up(struct audit *a, uint64_t born_ns);
/* f's file is freed (by the review's look, or its inode's eviction): what
 * its abort gave back is counted and its record forgotten. */
void audit_file_freed(struct audit *a, struct audit_file *f);
/* At the end of the run: one whole cycle, then every abort is measured. */
void audit_review_finish(struct audit *a);

/* audit_loop.c: the run, until COMMAND ends (its status in a->cmd_status),
 * --duration is over, or a signal arrives on a->signal_fd (SIGINT, SIGTERM,
 * SIGHUP go to COMMAND first; a second one kills it and ends the run).
 * Then the events still queued are read and the review finished.  A
 * negative errno when waiting or reading fails (what was measured is kept). */
int audit_loop_run(struct audit *a);

/* audit_live.c: what the run shows while it goes: the metrics (published
 * to --listen after each review cycle, written to --metrics-file every
 * --interval) and the plot's samples. */
struct audit_live *audit_live_new(void);
void audit_live_free(struct audit_live *l);
/* After each turn of the loop: a review cycle that ended is published and
 * sampled; the metrics file is rewritten when its interval is over. */
void audit_live_update(struct audit *a, uint64_t dropped);
/* The figures now, written once more (the end of the run, or its start):
 * 0, or a negative errno. */
int audit_live_flush(struct audit *a, uint64_t dropped);
/* Why the metrics file could not be written (after an error from the above). */
const char *audit_live_why(const struct audit *a);
/* --plot: the timeline of the run, written to its fd, its title saying
 * the leak per abort and the verdict.  0, or a negative errno. */
int audit_live_plot(const struct audit *a, double kib_per_abort, const char *verdict);

/* audit_report.c: the report itself (audit_report() adds the report
 * files' commit). */
int audit_report_write(struct audit *a);

#endif
