/* The review (audit_review.c): what is left of the files followed, in
 * cycles spread over the event loop's turns; it measures the aborts whose
 * grace is over.  Its state is struct audit_review, private to it; what
 * it sums is published in the run's figures (audit_live.h).
 *
 * Errors: nothing here can fail (the auditor reports a failure as a
 * negative errno). */
#ifndef SHMGUARD_AUDIT_REVIEW_H
#define SHMGUARD_AUDIT_REVIEW_H

#include <stdint.h>

/* What the last review cycle found (audit_review.c alone writes it). */
struct audit_reviewed {
	uint64_t tracked, unattributed, files_left;
	uint64_t aborted_held;  /* the part of tracked whose request is aborted */
	uint64_t live_pending, live_files; /* the part whose request is not (yet) aborted */
	uint64_t freed_by_review; /* records forgotten: their file was found freed by a cycle */
	uint32_t cycles;    /* review cycles ended */
	double last_review_s, last_review_duration_s; /* when the last cycle ended (audit_now_s), how long it took */
};

struct audit;
struct audit_review;
struct sg_holders;

/* Where the review learns which processes hold files unlinked from a root:
 * /proc (sg_holders_scan) unless a test gives its own.  The roots' names
 * are read from their directories, which a test makes itself. */
struct audit_holders_view {
	int (*scan)(void *ctx, struct sg_holders *hs, const uint32_t *kdevs, unsigned ndevs); /* NULL: /proc */
	void *ctx;
};

/* What is left of files.  The review forgets freed files,
 * sums those that exist (a->reviewed) and
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
/* At the end of the run: one whole cycle, then every abort is measured. */
void audit_review_finish(struct audit *a);

#endif
