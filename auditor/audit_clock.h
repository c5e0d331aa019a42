/* The auditor's clock: CLOCK_MONOTONIC, the clock of the BPF events' times,
 * unless a test gives its own (the review's pacing and grace then run on
 * it, deterministically).
 *
 * Errors: nothing here can fail (the auditor reports a failure as a
 * negative errno). */
#ifndef SHMGUARD_AUDIT_CLOCK_H
#define SHMGUARD_AUDIT_CLOCK_H

#include <stdint.h>

struct audit;

struct audit_clock {
	uint64_t (*now_ns)(void *ctx); /* NULL: CLOCK_MONOTONIC */
	void *ctx;
};

/* Now, in the events' nanoseconds. */
uint64_t audit_clock_ns(const struct audit *a);
/* Seconds since the run began (a->start_ns). */
double audit_now_s(const struct audit *a);

#endif
