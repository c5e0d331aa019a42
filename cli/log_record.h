/* A log's records made whole out of pieces, bounded: the parts a container
 * runtime split one line into (cri_log.h), and the lines of one record of
 * a server that writes a record's inner newlines as "\r\n" (vLLM).  The
 * pieces of each stream are joined on their own: stdout's and stderr's may
 * interleave.
 *
 * Bounded: a text longer than max is dropped whole (and counted), never
 * cut, so that a part of it cannot pass for a whole one. */
#ifndef SHMGUARD_LOG_RECORD_H
#define SHMGUARD_LOG_RECORD_H

#include <stdbool.h>
#include <stddef.h>

#include "log_follow.h"

/* The streams a log may hold: a CRI log's stdout and stderr; a plain log
 * has the first alone. */
enum log_stream { LOG_STDOUT, LOG_STDERR, LOG_STREAMS };

/* One text being joined from pieces. */
struct log_join {
	char *buf; /* max bytes, allocated at the first piece kept */
	size_t len;
	bool overlong; /* past max: dropped up to its last piece */
};

/* Adds a piece of len bytes; last: the text ends with it.  Returns 1 with
 * *text and *text_len set to the whole text (valid until the next call)
 * when this piece ends it, 0 when more is to come or the text is dropped
 * (counted in *overlong), -1 out of memory (the text is then dropped and
 * counted as overlong).  A text in one piece is passed without a copy. */
int log_join_add(struct log_join *j, size_t max, const char *s, size_t len, bool last, const char **text,
		 size_t *text_len, unsigned long long *overlong);

void log_join_free(struct log_join *j);

/* Lines joined into records, per stream. */
struct log_records {
	size_t max;
	bool join_cr; /* a line ending in "\r" continues in its stream's next line */
	struct log_join stream[LOG_STREAMS];
	unsigned long long overlong;
};

void log_records_init(struct log_records *r, size_t max, bool join_cr);

/* One line of a stream, without its "\n" (a "\r" before it kept).  With
 * join_cr, a line ending in "\r" is held, and the record passed to fn when
 * a line of the same stream ends it: its lines joined by "\n", each "\r"
 * kept, as the server wrote it.  Without join_cr, each line is a record, a
 * final "\r" taken off.  Returns 0, or -1 out of memory (the record is
 * dropped and counted). */
int log_records_line(struct log_records *r, enum log_stream st, const char *line, size_t len, log_line_fn *fn,
		     void *ctx);

void log_records_free(struct log_records *r);

#endif
