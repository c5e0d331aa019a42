/* Request IDs out of log lines, for `shmguard abort --follow`: a regex
 * (PCRE2) whose group `req` (else its first group) is the ID, matched as
 * often as the line allows, and a template that turns the logged ID into the
 * request ID the segments are named with. */
#ifndef SHMGUARD_ABORT_MATCH_H
#define SHMGUARD_ABORT_MATCH_H

#include <stdbool.h>
#include <stddef.h>

struct abort_match;

/* Compiles regex (NULL: the preset's: vllm, sglang, nginx, envoy) with template tmpl (NULL: the ID as
 * logged; else text with "{id}" exactly once).  NULL with err set on a bad
 * regex, a regex without a group, an unknown preset or a bad template. */
struct abort_match *abort_match_new(const char *regex, const char *preset, const char *tmpl, char *err,
				    size_t errlen);
void abort_match_free(struct abort_match *m);

/* Whether the preset's server writes a record's inner newlines as "\r\n"
 * (vLLM): its lines are then to be joined into records (log_record.h)
 * and matched whole. */
bool abort_match_joins_crlf(const struct abort_match *m);

/* Calls found() with each ID the record yields, in order, the template
 * applied: NUL-terminated, len not counting it.  A record is a line, or
 * the lines of one joined by "\n" (see above); a preset's '.' crosses
 * them, so that an ID spanning lines is found whole.  The ID may hold any
 * byte, NUL and control bytes included, and an empty logged ID is passed
 * empty: checking it is the caller's job.  A match of the group
 * `ambiguous` (evidence of an abort whose IDs cannot be told apart) is
 * passed as it is logged, not NUL-terminated, with ambiguous set: it is no
 * ID.  Returns how many were found, or -1 when the regex gave up on the
 * record (its backtracking limit) or memory ran out; the IDs found before
 * that were passed. */
int abort_match_line(struct abort_match *m, const char *line, size_t len,
		     void (*found)(const char *id, size_t len, bool ambiguous, void *ctx), void *ctx);

#endif
