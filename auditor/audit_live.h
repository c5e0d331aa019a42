/* The run's figures (struct audit_figures: counted by the events, the
 * review and the loop) and what the run shows of them while it goes
 * (audit_live.c).
 *
 * Errors: a negative errno, and a sentence in err where a function takes
 * one; the front door (audit.h) turns them into an exit status. */
#ifndef SHMGUARD_AUDIT_LIVE_H
#define SHMGUARD_AUDIT_LIVE_H

#include <stdint.h>

struct audit;
struct audit_live;

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

#endif
