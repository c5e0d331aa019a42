/* The tracer's events' effect on the file table (audit_events.c), and a
 * file's request from its names (audit_attribution.c), which the events
 * and the review both use.
 *
 * Errors: nothing here can fail (the auditor reports a failure as a
 * negative errno). */
#ifndef SHMGUARD_AUDIT_EVENTS_H
#define SHMGUARD_AUDIT_EVENTS_H

#include <stdbool.h>
#include <stdint.h>

/* What the events counted (audit_events.c alone writes it). */
struct audit_event_counts {
	uint64_t events;            /* events read */
	uint64_t freed_at_eviction; /* records forgotten: their inode was evicted */
	uint64_t caught_up;         /* files of roots found late, followed from then on */
};

/* What attribution counted (audit_attribution.c alone writes it). */
struct audit_attribution {
	uint64_t ambiguous; /* files whose name two patterns gave different requests */
};

struct audit;
struct audit_event;
struct audit_file;

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

#endif
