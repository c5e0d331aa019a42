/* Sizes as people write them (512M, 2G, 1.5GiB) and as the reports print
 * them.  (duration.h reads durations.)
 *
 * Errors: a negative errno (docs/architecture.md, "Reporting a failure"). */
#ifndef SHMGUARD_SIZE_H
#define SHMGUARD_SIZE_H

#include <stddef.h>
#include <stdint.h>

/* A number (a fraction allowed) with an optional unit: none or B for bytes,
 * K, M, G, T, each optionally followed by "iB" or "B"; units are powers of
 * 1024 whichever is written, as for tmpfs's size= and df.  Case-insensitive.
 * Returns 0 with *out set, or -EINVAL (empty, negative, unknown unit, overflow). */
int sg_parse_size(const char *s, uint64_t *out);

/* bytes as "512 B", "1.5 KiB", "2.0 MiB", "1.1 GiB"; returns buf. */
const char *sg_human_bytes(uint64_t bytes, char *buf, size_t len);

#endif
