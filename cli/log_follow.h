/* A log read line by line as it grows: a file followed by name, like
 * `tail -F` (it may not exist yet, and may be rotated or truncated), or
 * stdin.  Memory is bounded: a line longer than LOG_LINE_MAX is skipped
 * whole (and counted), never cut, so that a part of it cannot pass for a
 * line; for the same reason a line left unfinished by a rotation or a
 * truncation is dropped (and counted), never passed. */
#ifndef SHMGUARD_LOG_FOLLOW_H
#define SHMGUARD_LOG_FOLLOW_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define LOG_LINE_MAX (1 << 20)
/* How long a rotated file is still read: its writer may not have reopened. */
#define LOG_ROTATED_GRACE_S 5

/* One file being read, and its unfinished line. */
struct log_source {
	int fd; /* -1: none */
	dev_t dev;
	ino_t ino;
	off_t off;
	char *buf; /* LOG_LINE_MAX bytes */
	size_t len;
	bool skipping; /* inside an overlong line, until its newline */
};

struct log_follow {
	const char *path; /* NULL: stdin */
	int wake;         /* inotify on the file's directory, or -1 (then polling alone) */
	bool from_start;
	bool started; /* past log_follow_open: a file opened from now on is new, read whole */
	bool said_not_regular; /* something else is at the path: said once until a file is there */
	struct log_source cur;
	struct log_source old; /* the file before the last rotation, during the grace */
	uint64_t old_until_ns;
	unsigned long long overlong, dropped;
};

/* One line, without its "\n" (a "\r" before it is kept: it may tell
 * that a record goes on, log_record.h). */
typedef void log_line_fn(const char *line, size_t len, void *ctx);

/* path NULL or "-": stdin.  Returns 0, or -1 with err set. */
int log_follow_open(struct log_follow *f, const char *path, bool from_start, char *err, size_t errlen);

/* The descriptor to poll for news (stdin, or the directory's inotify), or -1:
 * poll with a timeout alone. */
int log_follow_pollfd(const struct log_follow *f);

/* Reads what is there now and calls line() for each complete line, without
 * its newline.  The file: to its end, across a rotation or a
 * truncation, stopping early once *stop is set.  stdin: one read.
 * Returns 0; 1 when stdin ended (its last line passed, newline or not);
 * -1 with err set when the file cannot be read. */
int log_follow_read(struct log_follow *f, log_line_fn *line, void *ctx, volatile sig_atomic_t *stop, char *err,
		    size_t errlen);

/* Whether the file is open (it exists, or existed and was moved away). */
static inline bool log_follow_has_file(const struct log_follow *f)
{
	return f->cur.fd >= 0;
}

void log_follow_close(struct log_follow *f);

#endif
