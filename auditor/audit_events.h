/* The tracer's events' effect on the file table (audit_events.c).
 *
 * Errors: nothing here can fail (the auditor reports a failure as a
 * negative errno). */
#ifndef SHMGUARD_AUDIT_EVENTS_H
#define SHMGUARD_AUDIT_EVENTS_H

#include <stdint.h>
#include <sys/types.h>

/* What the events counted (audit_events.c alone writes it). */
struct audit_event_counts {
	uint64_t events;            /* events read */
	uint64_t freed_at_eviction; /* records forgotten: their inode was evicted */
	uint64_t caught_up;         /* files of roots found late, followed from then on */
};

struct audit;
struct audit_event;

/* audit_events.c: one event of the tracer (decoded and checked there) and
 * its effect on the file table. */
void audit_on_event(struct audit *a, const struct audit_event *e);
/* A root found late (slot): the files it holds made since the run began
 * are followed from now on, with the creator and tag kept for each
 * (audit_early_claim, audit_tags_claim). */
void audit_events_catch_up(struct audit *a, int slot);
/* A discovered root's own patterns, read from pid's environment when pid's
 * /dev/shm is that root and it has none yet (audit_attribution_learn); a
 * refusal is said once. */
void audit_events_learn_patterns(struct audit *a, int slot, pid_t pid);

#endif
