/* Lines of a CRI container log (kubelet's /var/log/pods/NS_POD_UID/NAME/N.log,
 * podman's --log-driver k8s-file), made whole again:
 *
 *   TIMESTAMP STREAM TAG LINE      2026-12-01T20:00:00.123456789Z stdout F text
 *
 * The runtime writes the prefix, the application only LINE.  TAG is P when
 * LINE is a part of a line (containerd splits a long one; conmon writes
 * what one read gave, which may end anywhere), the rest following in P
 * lines up to an F line; more tags may follow after ':'.  stdout's and
 * stderr's parts interleave: each stream is joined on its own.  What is
 * kept of the line's end differs: containerd takes "\r\n" off, conmon keeps
 * the "\r"; LINE is passed as the file holds it.  The prefix can be trusted
 * only because the file is a CRI log, which the user says (--format cri): a
 * line read from a plain log could hold a forged one.
 *
 * Bounded: a joined line longer than max is dropped whole (and counted),
 * never cut, so that a part of it cannot pass for a line; a line without a
 * well-formed prefix is dropped and counted. */
#ifndef SHMGUARD_CRI_LOG_H
#define SHMGUARD_CRI_LOG_H

#include <stdbool.h>
#include <stddef.h>

#include "log_record.h"

struct cri_log {
	size_t max;
	struct log_join part[LOG_STREAMS]; /* each stream's line being joined */
	unsigned long long malformed, overlong;
};

/* A line of the container's output, whole, from the stream it was
 * written to. */
typedef void cri_line_fn(const char *line, size_t len, enum log_stream st, void *ctx);

void cri_log_init(struct cri_log *c, size_t max);

/* One line of the file, without its newline: passes the container's line
 * to line() when this one ends it.  Returns 0, or -1 out of memory (the
 * line is then dropped and counted as overlong). */
int cri_log_line(struct cri_log *c, const char *s, size_t len, cri_line_fn *line, void *ctx);

void cri_log_free(struct cri_log *c);

#endif
