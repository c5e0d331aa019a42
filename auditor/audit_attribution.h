/* A followed file's request from its names (audit_attribution.c): the
 * patterns give the one a name holds, and a rename or a link moves it (a
 * tag, exact, stays).  The events and the review both name files; the
 * file table holds what this part decides.
 *
 * Errors: nothing here can fail (the auditor reports a failure as a
 * negative errno). */
#ifndef SHMGUARD_AUDIT_ATTRIBUTION_H
#define SHMGUARD_AUDIT_ATTRIBUTION_H

#include <stdbool.h>
#include <stdint.h>

struct audit_file;
struct audit_files;
struct sg_pattern_set;

struct audit_attribution {
	const struct sg_pattern_set *patterns; /* the run's (--pattern) */
	struct audit_files *files;             /* the table whose files it names */
	uint64_t ambiguous; /* files whose name two patterns gave different requests */
};

/* Gives f a request from its name when it has none (patterns). */
void audit_attribute_by_name(struct audit_attribution *attr, struct audit_file *f);
/* f is called name in root (-1: outside the roots).  renamed: that name is
 * its newest (a rename or a link, seen by an event or by a pass), and its
 * request follows it. */
void audit_file_named(struct audit_attribution *attr, struct audit_file *f, int root, const char *name, bool renamed);
/* The shape of f's name, the same whatever gave its request: the pattern
 * that attributed it, or for a file the shim's tag attributed, the first
 * pattern its name matches (whatever request that pattern would give), so
 * that the reports name its leftovers as they would without the shim;
 * -1: none (the tag does not record one, core/tag.h). */
int audit_file_shape(const struct audit_attribution *attr, const struct audit_file *f);

#endif
