/* The abort set: every marker seen in the abort directories is an abort,
 * measured once its grace is over, listed, or folded when the list is
 * long (audit_markers.c, audit_fold.c).  Its state is struct
 * audit_abort_set, which only these two files change.
 *
 * Errors: a negative errno, and a sentence in err where a function takes
 * one; the front door (audit.h) turns them into an exit status. */
#ifndef SHMGUARD_AUDIT_MARKERS_H
#define SHMGUARD_AUDIT_MARKERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "audit_workloads.h"
#include "htable.h"

struct audit;
struct audit_attribution;
struct audit_file;
struct audit_folded;

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
	bool cut_short; /* see audit_abort_cut_short: not measured */
	unsigned files_gone; /* files of its request that went before it was measured */
	struct audit_workload_set workloads; /* those it counts for (audit_workloads.h), until measured */
};

/* The commands that created followed files, in the order seen (noted as
 * each file goes; audit_ci.c adds those of the files still followed).  The
 * JUnit file's cases are each with each name pattern, leaking or not, so
 * that they are the same in every run, and "(shim tag)" for one the shim
 * tagged a file of whose name no pattern matches (audit_file_shape).  Not
 * noted at an abort: a shim's sweep may free an aborted request's files
 * before the auditor reads the marker, or sees a name of theirs. */
#define AUDIT_COMMANDS_MAX 64
struct audit_commands {
	struct {
		char comm[16];
		bool tag_shape; /* a tagged file of its had a name no pattern matches */
	} seen[AUDIT_COMMANDS_MAX];
	unsigned n, last; /* last: the one found last, looked at first */
	bool more; /* others were seen past the bound */
};

/* f's creator's command is among c. */
void audit_commands_note(struct audit_commands *c, const struct audit_attribution *attr, const struct audit_file *f);

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
	unsigned aborts_cut_short; /* aborts whose grace COMMAND's end cut short: in no figure */
	uint64_t reclaimed; /* bytes of aborted requests' files found freed after the marker */
	struct audit_commands commands; /* of the files that went */
};

/* audit_markers.c */

/* A marker appearing in the abort directory is an abort. */
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

/* f, a file of ab's request (in ab's scope), makes ab count for f's
 * creator's workload (until ab is measured: audit_workloads.h). */
void audit_abort_note_file(struct audit_abort *ab, const struct audit_file *f);
/* l, found by the review when it measured ab, is one of ab's leftovers. */
void audit_abort_add_leftover(struct audit_abort *ab, struct audit_leftover *l);
/* ab, the first abort not measured yet, is measured: it counts for its
 * workloads, and the next one waits. */
void audit_abort_measured(struct audit *a, struct audit_abort *ab);
/* Whether ab, the first abort not measured yet, is cut short: COMMAND
 * ended before it was measured (its grace not over, or no review cycle
 * since), and files of its request went since its marker.  A sweep or
 * COMMAND's teardown at exit (a connector's close(), Python's resource
 * tracker) took them: which, nothing tells, so what is left says nothing
 * of the leak. */
bool audit_abort_is_cut_short(const struct audit *a, const struct audit_abort *ab);
/* Counts ab apart, in no figure. */
void audit_abort_cut_short(struct audit *a, struct audit_abort *ab);
/* The aborts the figures divide by: every marker seen but those cut short. */
unsigned audit_aborts_counted(const struct audit *a);
/* The abort f's request has, in its root's scope or else --abort-dir's, or NULL. */
const struct audit_abort *audit_abort_of_file(const struct audit *a, const struct audit_file *f);
void audit_aborts_free(struct audit *a);

/* f's file is freed (by the review's look, or its inode's eviction): what
 * its abort gave back is counted, its creator's command noted, and its
 * record forgotten. */
void audit_file_freed(struct audit *a, struct audit_file *f);

/* audit_fold.c: what a run of months keeps of the aborts it measured.
 * Those beyond the listed window (the newest --abort-detail that left files,
 * and as many that left none) are folded: their figures go to a->abort_set.folded
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

#endif
