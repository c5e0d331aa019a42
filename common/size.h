/* Sizes as people write them: 512M, 2G, 1.5GiB.  (sg_human_bytes in text.h
 * prints them.) */
#ifndef SHMGUARD_SIZE_H
#define SHMGUARD_SIZE_H

#include <stdint.h>

/* A number (a fraction allowed) with an optional unit: none or B for bytes,
 * K, M, G, T, each optionally followed by "iB" or "B"; units are powers of
 * 1024 whichever is written, as for tmpfs's size= and df.  Case-insensitive.
 * Returns 0 with *out set, or -1 (empty, negative, unknown unit, overflow). */
int sg_parse_size(const char *s, uint64_t *out);

#endif
