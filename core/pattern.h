/* Name patterns: which request a file name under a shm root belongs to.
 *
 * A pattern is literal text with placeholders: {req} (the request ID, exactly
 * once), {int} (one or more digits) and {any} (one or more characters other
 * than '/').  A pattern must match the whole name.  A set is an ordered,
 * ';'-separated list of patterns.
 *
 * Matching never guesses: a name for which the set yields two different
 * request IDs (through two patterns, or two ways of matching one pattern) is
 * ambiguous, and nobody may sweep it on behalf of either request.
 *
 * Errors: a negative errno (docs/architecture.md, "Reporting a failure"). */
#ifndef SHMGUARD_PATTERN_H
#define SHMGUARD_PATTERN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SG_MAX_PATTERNS 32
#define SG_MAX_PATTERN_TOKENS 32
#define SG_NAME_MAX 255 /* longest file name, and longest request ID */

enum sg_token_kind { SG_TOK_LITERAL, SG_TOK_REQ, SG_TOK_INT, SG_TOK_ANY };

struct sg_token {
	enum sg_token_kind kind;
	unsigned short off, len; /* literal text: offset and length in the pattern */
};

/* A step of the scan that matches a direct pattern (below): a whole run of
 * one or more digits (an {int}) if digits, then the literal of len bytes
 * at off in the pattern's text. */
struct sg_step {
	bool digits;
	unsigned char len;
	unsigned short off;
};

struct sg_pattern {
	char text[SG_NAME_MAX + 1];
	struct sg_token tokens[SG_MAX_PATTERN_TOKENS];
	unsigned ntokens;
	unsigned req_index; /* index of the {req} token */
	unsigned min_len;   /* the shortest name it can match: its literals, a byte per placeholder */
	/* No {any}, and every {int} has a literal on its far side from {req}
	 * whose adjacent byte is no digit: each {int} can then only be a whole
	 * run of digits, so the pattern splits a name one way at most, found
	 * by a scan from each end instead of the position sets. */
	bool direct;
	/* With direct, the scan compiled: steps[0, nforward) read the name
	 * forward from its start, steps[nforward, nsteps) backward from its
	 * end; {req} is what they leave between them. */
	struct sg_step steps[SG_MAX_PATTERN_TOKENS];
	unsigned nforward, nsteps;
};

struct sg_pattern_set {
	struct sg_pattern patterns[SG_MAX_PATTERNS];
	unsigned count;
	/* Bit k of first[c] (last[c]) is set if a name that pattern k matches
	 * can begin (end) with the byte c: most names are refused by every
	 * pattern on those two bytes alone. */
	uint32_t first[256], last[256];
};

enum sg_match_result {
	SG_MATCH_NONE,      /* no pattern matches the name */
	SG_MATCH_ONE,       /* exactly one request ID: written to req */
	SG_MATCH_AMBIGUOUS, /* two different request IDs: written to req and other */
};

/* Parse a ';'-separated pattern list.  Returns 0, or -EINVAL with a
 * message naming the fault in err. */
int sg_patterns_parse(struct sg_pattern_set *set, const char *spec, char *err, size_t errlen);

/* Where the request written to req was found. */
struct sg_match_at {
	int shape;      /* the index of the first pattern that matched; -1: none */
	size_t req_at;  /* where the request ID stands in the name */
	size_t req_len; /* its length */
};

/* Match name (not NUL-terminated: len bytes, any bytes) against the set.
 * req and other, when not NULL, must hold SG_NAME_MAX + 1 bytes: req
 * receives the request (with SG_MATCH_ONE and SG_MATCH_AMBIGUOUS), other
 * the second one (with SG_MATCH_AMBIGUOUS).  *at, when not NULL, receives
 * where the request was found (with SG_MATCH_ONE; shape -1 otherwise). */
enum sg_match_result sg_patterns_match(const struct sg_pattern_set *set, const char *name, size_t len,
				       char *req, char *other, struct sg_match_at *at);

/* The same, for a name known to hold neither a NUL byte nor a '/': a
 * path's last component, its length from strlen (the shim's callers).
 * It is spared the two scans for them; any other name must go to
 * sg_patterns_match(). */
enum sg_match_result sg_patterns_match_component(const struct sg_pattern_set *set, const char *name, size_t len,
						 char *req, char *other, struct sg_match_at *at);

#endif
