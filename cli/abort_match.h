/* Request IDs out of log lines, for `shmguard abort --follow`: a regex
 * (PCRE2) whose group `req` (else its first group) is the ID, matched as
 * often as the line allows, and a template that turns the logged ID into the
 * request ID the segments are named with. */
#ifndef SHMGUARD_ABORT_MATCH_H
#define SHMGUARD_ABORT_MATCH_H

#include <stdbool.h>
#include <stddef.h>

struct abort_match;

/* The ready patterns (vllm, sglang, nginx, envoy); NULL for another name. */
const char *abort_match_preset(const char *name);

/* Compiles regex (NULL: the preset's) with template tmpl (NULL: the ID as
 * logged; else text with "{id}" exactly once).  NULL with err set on a bad
 * regex, a regex without a group, an unknown preset or a bad template. */
struct abort_match *abort_match_new(const char *regex, const char *preset, const char *tmpl, char *err,
				    size_t errlen);
void abort_match_free(struct abort_match *m);

/* Calls found() with each ID the line yields, in order, the template
 * applied: NUL-terminated, len not counting it.  The ID may hold any byte,
 * NUL included, and an empty logged ID is passed empty: checking it is
 * the caller's job.  A match of the group `ambiguous` (evidence of an abort
 * whose IDs cannot be told apart) is passed as it is logged, not
 * NUL-terminated, with ambiguous set: it is no ID.  continued: the line
 * before this one ended in "\r" (for a preset whose server writes a
 * record's inner newlines so, this line continues a record and never
 * matches).  Returns how many were found, or -1 when the regex gave up on
 * the line (its backtracking limit) or memory ran out; the IDs found before
 * that were passed. */
int abort_match_line(struct abort_match *m, const char *line, size_t len, bool continued,
		     void (*found)(const char *id, size_t len, bool ambiguous, void *ctx), void *ctx);

#endif
