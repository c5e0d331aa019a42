/* A fixed, unkeyed hash, for what other processes must compute alike (the
 * journal's checksums).  It takes eight bytes per multiply.  Never for a
 * table keyed on input from outside: anyone can find keys that collide
 * under it (core/siphash.h is for those).
 *
 * Errors: nothing here can fail (core/ reports a failure as a negative errno). */
#ifndef SHMGUARD_HASH_H
#define SHMGUARD_HASH_H

#include <stdint.h>
#include <string.h>

static inline uint64_t sg_hash_mix(uint64_t h, uint64_t word)
{
	h = (h ^ word) * 0x9e3779b97f4a7c15ull;
	return h ^ (h >> 29);
}

static inline uint64_t sg_hash_start(size_t len)
{
	return 0x243f6a8885a308d3ull ^ len;
}

static inline uint64_t sg_hash_end(uint64_t h)
{
	h *= 0xbf58476d1ce4e5b9ull;
	return h ^ (h >> 32);
}

static inline uint64_t sg_hash_mem(const void *data, size_t len)
{
	const unsigned char *p = data;
	uint64_t h = sg_hash_start(len), word;

	for (; len >= 8; p += 8, len -= 8) {
		memcpy(&word, p, 8);
		h = sg_hash_mix(h, word);
	}
	if (len) {
		/* The last len bytes as a word whose other bytes are 0, as
		 * memcpy into a zeroed word lays them out: from the data's last
		 * whole word where it has one (a load, not a call). */
		if (p - (const unsigned char *)data >= 8) {
			memcpy(&word, p + len - 8, 8);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
			word >>= 64 - 8 * len;
#else
			word <<= 64 - 8 * len;
#endif
		} else {
			word = 0;
			memcpy(&word, p, len);
		}
		h = sg_hash_mix(h, word);
	}
	return sg_hash_end(h);
}

/* sg_hash_mem(data, len) when the bytes after len, up to a multiple of 8,
 * are readable zeros: whole words, without the byte-wise tail. */
static inline uint64_t sg_hash_padded(const void *data, size_t len)
{
	const unsigned char *p = data;
	uint64_t h = sg_hash_start(len), word;

	for (size_t i = 0; i < len; i += 8) {
		memcpy(&word, p + i, 8);
		h = sg_hash_mix(h, word);
	}
	return sg_hash_end(h);
}

static inline uint64_t sg_hash_str(const char *s)
{
	return sg_hash_mem(s, strlen(s));
}

#endif
