/* Lines of a CRI container log (kubelet's /var/log/pods/NS_POD_UID/NAME/N.log,
 * podman's --log-driver k8s-file), made whole again:
 *
 *   TIMESTAMP STREAM TAG LINE      2026-12-01T20:00:00.123456789Z stdout F text
 *
 * The runtime writes the prefix, the application only LINE.  TAG is P when
 * the runtime split a long line (the rest follows, in P lines, up to an F
 * line), F when the line ends there; more tags may follow after ':'.
 * stdout's and stderr's parts may interleave: each stream is joined on its
 * own.  The prefix can be trusted only because the file is a CRI log, which
 * the user says (--format cri): a line read from a plain log could hold a
 * forged one.
 *
 * Bounded: a joined line longer than max is dropped whole (and counted),
 * never cut, so that a part of it cannot pass for a line; a line without a
 * well-formed prefix is dropped and counted. */
#ifndef SHMGUARD_CRI_LOG_H
#define SHMGUARD_CRI_LOG_H

#include <stdbool.h>
#include <stddef.h>

#include "log_follow.h"

/* One stream's line being joined. */
struct cri_part {
	char *buf; /* max bytes, allocated at the first part */
	size_t len;
	bool overlong; /* past max: dropped up to its F line */
	bool continued; /* the file's line its first part came in followed a "\r\n" */
};

struct cri_log {
	size_t max;
	struct cri_part out, err;
	unsigned long long malformed, overlong;
};

void cri_log_init(struct cri_log *c, size_t max);

/* One line of the file (without its newline; continued as log_line_fn's):
 * passes the joined line to line() when this one ends it, continued as its
 * first part's.  Returns 0, or -1 out of memory (the line is then dropped
 * and counted as overlong). */
int cri_log_line(struct cri_log *c, const char *s, size_t len, bool continued, log_line_fn *line, void *ctx);

void cri_log_free(struct cri_log *c);

#endif
