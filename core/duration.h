/* Durations as people write them: 90, 30s, 10m, 1.5h.
 *
 * Errors: a negative errno (docs/architecture.md, "Reporting a failure"). */
#ifndef SHMGUARD_DURATION_H
#define SHMGUARD_DURATION_H

/* A duration in seconds: a number (a fraction allowed) with an optional
 * unit, ms, s, m, h or d (none: seconds), as every option and variable that
 * takes a duration accepts it.  Digits and a point only (no sign, blank,
 * exponent or locale's decimal comma), so the shim can call it in any
 * program.  Returns 0 with *out set, or -EINVAL. */
int sg_parse_duration(const char *s, double *out);

#endif
