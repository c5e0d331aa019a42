/* Request IDs double as marker file names, so they obey file-name rules.
 *
 * Errors: a negative errno (docs/architecture.md, "Reporting a failure"). */
#ifndef SHMGUARD_REQID_H
#define SHMGUARD_REQID_H

#include <stdbool.h>
#include <stddef.h>

/* 0 when id is a usable request ID; otherwise -EINVAL with *why saying why
 * it is not. */
int sg_reqid_check(const char *id, const char **why);

/* Whether id is no usable request ID, for callers that need no reason. */
static inline bool sg_reqid_invalid(const char *id)
{
	const char *why;

	return sg_reqid_check(id, &why) < 0;
}

#endif
