/* What the run shows while it goes (audit_live.c): the figures each part
 * keeps, published as metrics and sampled for the plot.  Its state is
 * struct audit_live, private to it.
 *
 * Errors: a negative errno, and a sentence in err where a function takes
 * one; the front door (audit.h) turns them into an exit status. */
#ifndef SHMGUARD_AUDIT_LIVE_H
#define SHMGUARD_AUDIT_LIVE_H

#include <stdint.h>

struct audit;
struct audit_live;

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
