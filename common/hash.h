/* The string hash of every table in shmguard (FNV-1a). */
#ifndef SHMGUARD_HASH_H
#define SHMGUARD_HASH_H

#include <stdint.h>

static inline uint64_t sg_hash_str(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return h;
}

#endif
