/* The clocks shmguard reads, each named for what it is.
 *
 * Errors: nothing here can fail (core/ reports a failure as a negative errno). */
#ifndef SHMGUARD_CLOCK_H
#define SHMGUARD_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t sg_clock_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* CLOCK_MONOTONIC, the clock of BPF event timestamps and of intervals. */
static inline uint64_t sg_monotonic_ns(void)
{
	return sg_clock_ns(CLOCK_MONOTONIC);
}

/* CLOCK_REALTIME, the clock of file times (st_mtime, st_ctime). */
static inline uint64_t sg_realtime_ns(void)
{
	return sg_clock_ns(CLOCK_REALTIME);
}

#endif
