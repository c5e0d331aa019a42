/* What the reports share (audit_report.c for people and --json,
 * audit_ci.c for --junit and GitHub Actions): the run's totals and its
 * leftovers grouped by creating command and by name shape
 * (audit_summary.c).
 *
 * Errors: nothing here can fail (the auditor reports a failure as a
 * negative errno). */
#ifndef SHMGUARD_AUDIT_SUMMARY_H
#define SHMGUARD_AUDIT_SUMMARY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "audit_engine.h"
#include "config.h"

/* A run shorter than this is not extrapolated to an hour: a few seconds
 * say nothing about a rate (40 KiB after 0.1 s would be 1,400 MiB/h). */
#define AUDIT_GROWTH_MIN_S 60.0

struct summary {
	uint64_t leaked_bytes, leaked_files, leaked_segments;
	uint64_t tracked, unattributed, files_left, live_pending, live_files;
	double kib_per_abort;
	double leak_growth_mib_per_hour; /* < 0: the run was too short */
	bool over_budget, drops_fail, lost;
	bool too_few_aborts; /* a budget, and fewer aborts than --min-aborts */
	bool unfollowed; /* files of aborted requests on filesystems not followed: the figure is too low */
	char reason[SG_PATH_MAX + 160]; /* why the gate failed, for every output; "" if it did not */
	const char *verdict; /* "pass", "fail" or "none" */
};

/* The pids a group lists (JSON, JUnit): the first ones, then a count. */
#define GROUP_PIDS 16

/* Leftovers grouped by a key: a creating command (its name, the same in
 * every run, whatever its pids) and a name shape; or a name shape. */
struct group {
	char key[96];
	int shape;
	uint64_t bytes, files, segments;
	uint64_t requests_folded; /* aborted requests of the group no longer listed (audit_fold.c) */
	uint64_t last_fold;       /* the fold that counted one last */
	uint32_t pids[GROUP_PIDS]; /* creating processes, in the order found */
	unsigned npids; /* distinct pids, those beyond GROUP_PIDS included (an upper bound then) */
};

struct groups {
	struct group *g;
	size_t n, cap;
};

/* What a long run keeps of the aborts it measured (audit_fold.c): the
 * aborts no longer listed, folded into figures, and the plot's ticks. */
struct audit_folded {
	uint64_t aborts, leaked_bytes, leaked_files, leaked_segments;
	struct groups by_proc, by_shape;
	uint64_t folds; /* numbers each fold (group.last_fold) */
	double *ticks;  /* markers' times, one every tick_every folded aborts */
	size_t nticks, tick_every;
};

/* The shape's pattern, or "(shim tag)" for a file the shim tagged whose
 * name no pattern matches (audit_file_shape). */
const char *audit_shape_text(const struct audit *a, int shape);
/* Whether group g of the processes' grouping is command comm's files of that shape. */
bool audit_group_is(const struct group *g, const char *comm, int shape);
/* Whether leftover l is one of group g of the processes' grouping. */
bool audit_group_has(const struct group *g, const struct audit_leftover *l);
/* l into the groups (either may be NULL). */
void audit_group_add(const struct audit *a, struct groups *by_proc, struct groups *by_shape,
		     const struct audit_leftover *l);
/* Every abort's leftovers (the folded ones' included), grouped by process
 * and by shape, largest first. */
void audit_group_leftovers(const struct audit *a, struct groups *by_proc, struct groups *by_shape);

/* l, of an abort being folded, into f's groups: a group counts the abort
 * once among its requests no longer listed. */
void audit_group_fold(const struct audit *a, struct audit_folded *f, const struct audit_leftover *l);
/* The markers' times the plot shows: the folded ones' (downsampled) and the
 * listed ones'; a malloc'd array, *n of them (NULL: none, or no memory). */
double *audit_fold_ticks(const struct audit *a, size_t *n);

#endif
