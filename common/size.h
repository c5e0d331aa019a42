/* Sizes and durations as people write them: 512M, 2G, 1.5GiB; 90, 30s, 10m,
 * 1.5h.  (sg_human_bytes in text.h prints sizes.) */
#ifndef SHMGUARD_SIZE_H
#define SHMGUARD_SIZE_H

#include <stdint.h>

/* A number (a fraction allowed) with an optional unit: none or B for bytes,
 * K, M, G, T, each optionally followed by "iB" or "B"; units are powers of
 * 1024 whichever is written, as for tmpfs's size= and df.  Case-insensitive.
 * Returns 0 with *out set, or -EINVAL (empty, negative, unknown unit, overflow). */
int sg_parse_size(const char *s, uint64_t *out);

/* A duration in seconds: a number (a fraction allowed) with an optional
 * unit, ms, s, m, h or d (none: seconds), as every option and variable that
 * takes a duration accepts it.  Digits and a point only (no sign, blank,
 * exponent or locale's decimal comma), so the shim can call it in any
 * program.  Returns 0 with *out set, or -EINVAL. */
int sg_parse_duration(const char *s, double *out);

#endif
