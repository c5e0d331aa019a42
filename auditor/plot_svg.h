/* A picture of an audit run: a timeline, as a standalone SVG file.
 *
 * Errors: a negative errno, and a sentence in err where a function takes
 * one; the front door (audit.h) turns them into an exit status. */
#ifndef SHMGUARD_PLOT_SVG_H
#define SHMGUARD_PLOT_SVG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* What the roots held at one moment of the run. */
struct plot_sample {
	double t_s;             /* seconds into the run */
	uint64_t tracked_bytes; /* files created during the run that still exist */
	uint64_t aborted_bytes; /* the part of it held by aborted requests */
};

struct plot {
	const char *title;
	double duration_s;
	const struct plot_sample *samples; /* in time order */
	size_t nsamples;
	const double *abort_s; /* when each abort marker appeared, in time order */
	size_t naborts;
	bool has_budget;
	double budget_kib_per_abort; /* the budget line: this much per abort so far */
};

/* Writes the timeline: tracked bytes, bytes held by aborted requests, the
 * budget line and a tick per abort marker.  Each series is an element with
 * its own id (tracked, aborted, budget, aborts).  0, or -EIO on a write error. */
int plot_svg_write(FILE *out, const struct plot *p);

#endif
