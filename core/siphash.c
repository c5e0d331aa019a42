#include "core.h"
#include "siphash.h"

#include <endian.h>
#include <pthread.h>
#include <stdbool.h>
#include <sys/auxv.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

static inline uint64_t rotl(uint64_t x, int b)
{
	return (x << b) | (x >> (64 - b));
}

static inline uint64_t load64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return le64toh(v);
}

#define SIPROUND                                                                                                   \
	do {                                                                                                       \
		v0 += v1;                                                                                          \
		v1 = rotl(v1, 13);                                                                                 \
		v1 ^= v0;                                                                                          \
		v0 = rotl(v0, 32);                                                                                 \
		v2 += v3;                                                                                          \
		v3 = rotl(v3, 16);                                                                                 \
		v3 ^= v2;                                                                                          \
		v0 += v3;                                                                                          \
		v3 = rotl(v3, 21);                                                                                 \
		v3 ^= v0;                                                                                          \
		v2 += v1;                                                                                          \
		v1 = rotl(v1, 17);                                                                                 \
		v1 ^= v2;                                                                                          \
		v2 = rotl(v2, 32);                                                                                 \
	} while (0)

/* SipHash-c-d: c rounds per 8 bytes, d at the end; inlined into its two
 * users with constant counts. */
static inline __attribute__((always_inline)) uint64_t siphash_cd(int c, int d, const uint8_t key[16],
								 const void *data, size_t len)
{
	const uint8_t *p = data, *end = p + (len & ~(size_t)7);
	uint64_t k0 = load64(key), k1 = load64(key + 8), m, last = (uint64_t)len << 56;
	uint64_t v0 = 0x736f6d6570736575ull ^ k0, v1 = 0x646f72616e646f6dull ^ k1;
	uint64_t v2 = 0x6c7967656e657261ull ^ k0, v3 = 0x7465646279746573ull ^ k1;

	for (; p != end; p += 8) {
		m = load64(p);
		v3 ^= m;
		for (int r = 0; r < c; r++)
			SIPROUND;
		v0 ^= m;
	}
	/* The last len % 8 bytes: the top of the data's last word where it has
	 * one (a load, not a byte at a time: paths and IDs are rarely a whole
	 * number of words), else a byte at a time. */
	if ((len & 7) && len >= 8)
		last |= load64(p + (len & 7) - 8) >> (64 - 8 * (len & 7));
	else
		for (size_t i = 0; i < (len & 7); i++)
			last |= (uint64_t)p[i] << (8 * i);
	v3 ^= last;
	for (int r = 0; r < c; r++)
		SIPROUND;
	v0 ^= last;
	v2 ^= 0xff;
	for (int r = 0; r < d; r++)
		SIPROUND;
	return v0 ^ v1 ^ v2 ^ v3;
}

uint64_t sg_siphash(const uint8_t key[16], const void *data, size_t len)
{
	return siphash_cd(2, 4, key, data, len);
}

uint64_t sg_siphash13(const uint8_t key[16], const void *data, size_t len)
{
	return siphash_cd(1, 3, key, data, len);
}

static uint8_t table_key[16];
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static const char *key_weakness;
static bool key_drawn; /* set, with release order, once table_key is */

static void draw_key(void)
{
	/* Without the kernel's pool (early at boot, a seccomp filter): the 16
	 * random bytes the kernel gives every program at exec, which are not
	 * used as they are (they seed the stack protector), with the time and
	 * the pid. */
	if (getrandom(table_key, sizeof(table_key), GRND_NONBLOCK) != (ssize_t)sizeof(table_key)) {
		static const uint8_t fixed[16] = "shmguard-tables";
		const uint8_t *at_random = (const uint8_t *)getauxval(AT_RANDOM);
		struct {
			uint8_t random[16];
			struct timespec now;
			pid_t pid;
		} seed = {.pid = getpid()};
		uint64_t h0, h1;

		if (at_random)
			memcpy(seed.random, at_random, sizeof(seed.random));
		clock_gettime(CLOCK_REALTIME, &seed.now);
		h0 = sg_siphash(fixed, &seed, sizeof(seed));
		seed.pid = ~seed.pid;
		h1 = sg_siphash(fixed, &seed, sizeof(seed));
		memcpy(table_key, &h0, 8);
		memcpy(table_key + 8, &h1, 8);
		key_weakness = "no random bytes from getrandom(); the hash tables are keyed from the time, the pid "
			       "and the auxiliary vector instead";
	}
	__atomic_store_n(&key_drawn, true, __ATOMIC_RELEASE);
}

const char *sg_table_key_init(void)
{
	static bool said;
	const char *why;

	pthread_once(&key_once, draw_key);
	why = key_weakness;
	if (!why || __atomic_exchange_n(&said, true, __ATOMIC_RELAXED))
		return NULL;
	return why;
}

uint64_t sg_table_hash(const void *data, size_t len)
{
	/* pthread_once's own check is a call and a barrier on every lookup. */
	if (!__atomic_load_n(&key_drawn, __ATOMIC_ACQUIRE))
		pthread_once(&key_once, draw_key);
	return sg_siphash13(table_key, data, len);
}
