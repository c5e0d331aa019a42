/* The hash of every table keyed on input from outside (paths, request IDs
 * that clients choose, inode numbers): SipHash (Aumasson and Bernstein,
 * 2012) under a key drawn at random once per process, so that nobody can
 * choose keys that share a chain, and make every lookup under the table's
 * lock walk all of them.  The tables use SipHash-1-3, as Rust's HashMap does:
 * half the rounds of SipHash-2-4, on the shim's creation path.  (core/hash.h remains for checksums, which other
 * processes must compute alike.)
 *
 * Errors: nothing here can fail (core/ reports a failure as a negative errno). */
#ifndef SHMGUARD_SIPHASH_H
#define SHMGUARD_SIPHASH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* SipHash-2-4 and SipHash-1-3 of data under key (16 bytes, as the reference
 * takes them): one implementation, its rounds counted differently. */
uint64_t sg_siphash(const uint8_t key[16], const void *data, size_t len);
uint64_t sg_siphash13(const uint8_t key[16], const void *data, size_t len);

/* Draws this process's table key (getrandom, without blocking), once; later
 * calls do nothing.  Returns NULL, or (the first time only) why the key is
 * not from the kernel's random pool, for the caller to say: it is then made
 * from the auxiliary vector's random bytes, the time and the pid. */
const char *sg_table_key_init(void);

/* The table hash (SipHash-1-3) of data under this process's key (drawn at the first use
 * if sg_table_key_init() was not called). */
uint64_t sg_table_hash(const void *data, size_t len);

static inline uint64_t sg_table_hash_str(const char *s)
{
	return sg_table_hash(s, strlen(s));
}

#endif
