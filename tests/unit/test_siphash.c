/* SipHash-2-4 against the reference implementation's vectors
 * (github.com/veorq/SipHash, vectors.h: key 00..0f, message 00..len-1),
 * and the table key: random, the same for every call of a process. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "hash.h"
#include "siphash.h"

/* vectors_sip64[len], read as little-endian 64-bit values. */
static const uint64_t expected[64] = {
	0x726fdb47dd0e0e31ull, 0x74f839c593dc67fdull, 0x0d6c8009d9a94f5aull, 0x85676696d7fb7e2dull,
	0xcf2794e0277187b7ull, 0x18765564cd99a68dull, 0xcbc9466e58fee3ceull, 0xab0200f58b01d137ull,
	0x93f5f5799a932462ull, 0x9e0082df0ba9e4b0ull, 0x7a5dbbc594ddb9f3ull, 0xf4b32f46226bada7ull,
	0x751e8fbc860ee5fbull, 0x14ea5627c0843d90ull, 0xf723ca908e7af2eeull, 0xa129ca6149be45e5ull,
	0x3f2acc7f57c29bdbull, 0x699ae9f52cbe4794ull, 0x4bc1b3f0968dd39cull, 0xbb6dc91da77961bdull,
	0xbed65cf21aa2ee98ull, 0xd0f2cbb02e3b67c7ull, 0x93536795e3a33e88ull, 0xa80c038ccd5ccec8ull,
	0xb8ad50c6f649af94ull, 0xbce192de8a85b8eaull, 0x17d835b85bbb15f3ull, 0x2f2e6163076bcfadull,
	0xde4daaaca71dc9a5ull, 0xa6a2506687956571ull, 0xad87a3535c49ef28ull, 0x32d892fad841c342ull,
	0x7127512f72f27cceull, 0xa7f32346f95978e3ull, 0x12e0b01abb051238ull, 0x15e034d40fa197aeull,
	0x314dffbe0815a3b4ull, 0x027990f029623981ull, 0xcadcd4e59ef40c4dull, 0x9abfd8766a33735cull,
	0x0e3ea96b5304a7d0ull, 0xad0c42d6fc585992ull, 0x187306c89bc215a9ull, 0xd4a60abcf3792b95ull,
	0xf935451de4f21df2ull, 0xa9538f0419755787ull, 0xdb9acddff56ca510ull, 0xd06c98cd5c0975ebull,
	0xe612a3cb9ecba951ull, 0xc766e62cfcadaf96ull, 0xee64435a9752fe72ull, 0xa192d576b245165aull,
	0x0a8787bf8ecb74b2ull, 0x81b3e73d20b49b6full, 0x7fa8220ba3b2eceaull, 0x245731c13ca42499ull,
	0xb78dbfaf3a8d83bdull, 0xea1ad565322a1a0bull, 0x60e61c23a3795013ull, 0x6606d7e446282b93ull,
	0x6ca4ecb15c5f91e1ull, 0x9f626da15c9625f3ull, 0xe51b38608ef25f57ull, 0x958a324ceb064572ull,
};

Test(siphash, reference_vectors)
{
	uint8_t key[16], msg[64];

	for (int i = 0; i < 16; i++)
		key[i] = (uint8_t)i;
	for (int i = 0; i < 64; i++)
		msg[i] = (uint8_t)i;
	for (size_t len = 0; len < 64; len++)
		cr_expect_eq(sg_siphash(key, msg, len), expected[len], "length %zu: %016llx", len,
			     (unsigned long long)sg_siphash(key, msg, len));
}

Test(siphash, table_key_is_drawn_once_and_is_not_zero)
{
	static const uint8_t zero[16];

	cr_expect_null(sg_table_key_init(), "getrandom() failed here");
	cr_expect_eq(sg_table_hash_str("chatcmpl-1"), sg_table_hash("chatcmpl-1", 10));
	cr_expect_neq(sg_table_hash("chatcmpl-1", 10), sg_siphash(zero, "chatcmpl-1", 10), "the table key is all zero");
}

/* Request IDs a client chose to share one bucket of 4096 under a fixed hash
 * (found here by brute force, as anyone can) are spread by the table hash. */
Test(siphash, ids_colliding_under_a_fixed_hash_spread_under_the_table_hash)
{
	enum { IDS = 64, BUCKETS = 4096 };
	static bool used[BUCKETS];
	char id[32];
	unsigned found = 0, distinct = 0;

	for (unsigned i = 0; found < IDS; i++) {
		snprintf(id, sizeof(id), "chatcmpl-%u", i);
		if ((sg_hash_str(id) & (BUCKETS - 1)) != 0)
			continue;
		found++;
		uint64_t b = sg_table_hash_str(id) & (BUCKETS - 1);
		distinct += !used[b];
		used[b] = true;
	}
	/* 64 random draws from 4096 buckets: 63.5 distinct on average, fewer
	 * than 58 with a probability below 1e-6. */
	cr_expect_geq(distinct, 58, "%u IDs of one fixed-hash bucket fell into only %u buckets", IDS, distinct);
}

/* sg_hash_mem() seals journal records that other processes, and other
 * versions of shmguard, check: its values never change, however it is
 * computed.  Message i*7+1 for i < len, for each len < 64 (little-endian). */
static const uint64_t fixed_hash[64] = {
	0x4fba3d351618224eull, 0x27f51e910214133full, 0xaea91d93cce5d5a9ull, 0xf37b870ea6807012ull,
	0xd328afdf649deacfull, 0x994bb345ca6c784cull, 0x32a3748e1007a214ull, 0x2c3ea0140ceec7dfull,
	0xbdab134af80528deull, 0x92b5d12be7cfd852ull, 0x15afbc0a9bc789c1ull, 0x96936865c7ba8947ull,
	0xc7031ab3ba0eb845ull, 0x03660b5a6d345247ull, 0xb47d74c9270a2750ull, 0xd6d97cab0c0c6646ull,
	0x04ddb50b1fbf3eb3ull, 0x56310a79e1930431ull, 0xee97332ba50592e5ull, 0x15befd704b2541aeull,
	0xa7f2c3499d082620ull, 0x2a0b47f4dce598c3ull, 0x9124841f73e64416ull, 0xfa64e25b3615d03bull,
	0x355d0ec92dba5e5eull, 0x3deef279574e1500ull, 0xe41ccf50b8b68f9cull, 0x008ec2c63e5e9284ull,
	0xbf5b02b7d2ec21dcull, 0x9544cdb8dcbbc2f8ull, 0x6191208e844e453dull, 0x966d3bf1e5178851ull,
	0x7b638eab431922fcull, 0x43e9ca36bbb8b25dull, 0xcbe71838f1abe369ull, 0x2d26a4fed464a499ull,
	0xef3ab2dd16de2b1aull, 0x0fe14e4de7a4129eull, 0xe86ef4aa1f52cab0ull, 0x16e0ed35e396ca06ull,
	0x4e1b50b43452c742ull, 0x697bd9f04c53b6b8ull, 0xf9ba39578b51bf0bull, 0x0446009a50990e00ull,
	0x5b4c3df8212cc849ull, 0x48fdbf75c19d24d9ull, 0x1f4b06a23c692b48ull, 0xffdcca62c717fc83ull,
	0x54ee4b7afaa6a5c2ull, 0x12f5308a37bcd94eull, 0xc050a4fed0bb745aull, 0x4d5a0b5a1dfe3a1aull,
	0x4b51eec142a7731aull, 0x7178a379508b4421ull, 0x7f700f85439ee3a7ull, 0x4e790b014ac77e25ull,
	0x09572bf6c4e4e174ull, 0xbd2341f2c9a35c8dull, 0x736288ce845031c4ull, 0x747722e6f0da395full,
	0x30fd4eb1942dcfe9ull, 0x1e235ae3001c5e06ull, 0x66e3fed65d75e6f0ull, 0xe1d02e1ac5809628ull,
};

Test(hash, fixed_values_for_every_tail_length)
{
	unsigned char msg[64 + 8];

	for (int i = 0; i < 64; i++)
		msg[i] = (unsigned char)(i * 7 + 1);
	for (size_t len = 0; len < 64; len++)
		cr_expect_eq(sg_hash_mem(msg, len), fixed_hash[len], "length %zu: %016llx", len,
			     (unsigned long long)sg_hash_mem(msg, len));
	/* The same at every alignment. */
	for (size_t off = 1; off < 8; off++) {
		memmove(msg + off, msg + off - 1, 64);
		for (size_t len = 0; len < 64; len++)
			cr_expect_eq(sg_hash_mem(msg + off, len), fixed_hash[len], "offset %zu, length %zu", off, len);
	}
}
