#include <criterion/criterion.h>
#include <stdbool.h>
#include <stdio.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include "hash.h"
#include "registry.h"

/* The ownership journal the registry keeps its records in is not this
 * test's subject (the integration tests' owners suite is). */
uint32_t sg_jw_record(const struct sg_new_file *f)
{
	(void)f;
	return 0;
}

void sg_jw_release(uint32_t slot)
{
	(void)slot;
}

void sg_jw_exit(void)
{
}

/* Where the name starts in /dev/shm/NAME. */
#define IN_SHM sizeof("/dev/shm")

/* path (ROOT/NAME, NAME at name_off), file dev, ino, made for request. */
static int add_at(const char *path, size_t name_off, dev_t dev, ino_t ino, const char *request)
{
	struct sg_new_file f = {.path = path,
				.name_off = name_off,
				.name_len = strlen(path) - name_off,
				.req = request,
				.req_len = strlen(request),
				.dev = dev,
				.ino = ino};

	return sg_registry_add(&f);
}

/* path (/dev/shm/NAME) ... */
static int add(const char *path, dev_t dev, ino_t ino, const char *request)
{
	return add_at(path, IN_SHM, dev, ino, request);
}

static unsigned count_and_free(struct sg_segment *list, const char *request)
{
	unsigned n = 0;

	for (struct sg_segment *seg = list, *next; seg; seg = next) {
		next = seg->next_of_request;
		cr_expect_str_eq(seg->request, request);
		free(seg);
		n++;
	}
	return n;
}

Test(registry, add_take_and_forget)
{
	cr_assert_eq(add("/dev/shm/a", 1, 10, "r1"), SG_ADDED);
	cr_assert_eq(add("/dev/shm/b", 1, 11, "r1"), SG_ADDED);
	cr_expect_eq(sg_registry_count(), 2);

	struct sg_segment *seg = sg_registry_take("/dev/shm/a", IN_SHM);
	cr_assert_not_null(seg);
	cr_expect_str_eq(seg->path, "/dev/shm/a");
	cr_expect_str_eq(seg->request, "r1");
	cr_expect_eq(seg->ino, 10);
	free(seg);
	cr_expect_null(sg_registry_take("/dev/shm/a", IN_SHM));

	sg_registry_forget_path("/dev/shm/b", IN_SHM);
	cr_expect_eq(sg_registry_count(), 0);
	cr_expect_null(sg_registry_abort("r1", 1), "forgotten segments are not swept");
}

Test(registry, a_name_created_again_replaces_its_record)
{
	add("/dev/shm/a", 1, 10, "r1");
	add("/dev/shm/a", 1, 20, "r2");
	cr_expect_eq(sg_registry_count(), 1);
	cr_expect_null(sg_registry_abort("r1", 1));
	struct sg_segment *seg = sg_registry_abort("r2", 1);
	cr_assert_not_null(seg);
	cr_expect_eq(seg->ino, 20);
	cr_expect_eq(count_and_free(seg, "r2"), 1);
}

Test(registry, abort_takes_exactly_its_request)
{
	add("/dev/shm/abc_0", 1, 1, "abc");
	add("/dev/shm/abc_def_0", 1, 2, "abc_def");
	add("/dev/shm/0", 1, 3, "0");
	cr_expect_eq(count_and_free(sg_registry_abort("abc", 1), "abc"), 1);
	cr_expect_eq(sg_registry_count(), 2);
	cr_expect_eq(count_and_free(sg_registry_abort("abc_def", 1), "abc_def"), 1);
	cr_expect_eq(count_and_free(sg_registry_abort("0", 1), "0"), 1);
	cr_expect_eq(sg_registry_count(), 0);
}

Test(registry, late_put_and_expiry)
{
	cr_expect_null(sg_registry_abort("r1", 100));
	cr_expect_eq(add("/dev/shm/late", 1, 1, "r1"), SG_ADDED_ABORTED);
	cr_expect_eq(add("/dev/shm/other", 1, 2, "r2"), SG_ADDED);
	sg_registry_expire_aborts(100);
	cr_expect_eq(add("/dev/shm/late2", 1, 3, "r1"), SG_ADDED_ABORTED, "not older than the cutoff");
	sg_registry_expire_aborts(101);
	cr_expect_eq(add("/dev/shm/late3", 1, 4, "r1"), SG_ADDED);
	sg_registry_forget_all();
	cr_expect_eq(sg_registry_count(), 0);
}

Test(registry, growth_with_many_segments_of_one_request)
{
	enum { N = 20000 };
	char path[64];

	/* One request's segments share one chain of the request index. */
	for (int i = 0; i < N; i++) {
		snprintf(path, sizeof(path), "/dev/shm/seg_%d", i);
		cr_assert_eq(add(path, 1, (ino_t)i + 1, i % 4 ? "big" : "small"), SG_ADDED);
	}
	cr_expect_eq(sg_registry_count(), N);
	for (int i = 0; i < N; i += 8) {
		snprintf(path, sizeof(path), "/dev/shm/seg_%d", i);
		sg_registry_forget_path(path, IN_SHM);
	}
	cr_expect_eq(sg_registry_count(), N - N / 8);
	cr_expect_eq(count_and_free(sg_registry_abort("big", 1), "big"), N * 3 / 4);
	cr_expect_eq(count_and_free(sg_registry_abort("small", 1), "small"), N / 4 - N / 8);
	cr_expect_eq(sg_registry_count(), 0);
}

/* A new segment waits unindexed by request until a few hundred newer ones
 * wait too (N is more than that bound).  An abort finds every live segment
 * of its request whichever it is, and segments forgotten in either state,
 * the newest waiting one included, leave the others in place. */
Test(registry, an_abort_finds_segments_indexed_or_not)
{
	enum { N = 1000 };
	char path[64];

	for (int i = 0; i < N; i++) {
		snprintf(path, sizeof(path), "/dev/shm/seg_%d", i);
		cr_assert_eq(add(path, 1, (ino_t)i + 1, i % 2 ? "r" : "s"), SG_ADDED);
	}
	/* The oldest (indexed), one in the middle, the newest (waiting). */
	for (int i = 0; i < N; i += N / 2 - 1) {
		snprintf(path, sizeof(path), "/dev/shm/seg_%d", i | 1);
		sg_registry_forget_path(path, IN_SHM);
	}
	cr_assert_eq(add("/dev/shm/after", 1, N + 1, "r"), SG_ADDED);

	struct sg_segment *list = sg_registry_abort("r", 1);
	unsigned found = 0;
	for (struct sg_segment *seg = list; seg; seg = seg->next_of_request) {
		bool forgotten = seg->ino == 2 || seg->ino == N / 2 || seg->ino == N;
		cr_expect(!forgotten && (seg->ino % 2 == 0 || seg->ino == N + 1), "ino %lu", (unsigned long)seg->ino);
		found++;
	}
	cr_expect_eq(found, N / 2 - 3 + 1);
	cr_expect_eq(count_and_free(list, "r"), N / 2 - 3 + 1);
	cr_expect_eq(count_and_free(sg_registry_abort("s", 1), "s"), N / 2);
	cr_expect_eq(sg_registry_count(), 0);
	sg_registry_forget_all();
}

/* Two request IDs whose unkeyed hashes agree in their low 20 bits: the
 * registry's filter of aborted requests cannot tell them apart. */
static void colliding_ids(char a[16], char b[16])
{
	enum { BITS = 20 };
	int *first = calloc(1u << BITS, sizeof(*first));
	char id[16];

	cr_assert_not_null(first);
	for (int i = 1;; i++) {
		snprintf(id, sizeof(id), "req-%d", i);
		uint64_t low = sg_hash_mem(id, strlen(id)) & ((1u << BITS) - 1);
		if (first[low]) {
			snprintf(a, 16, "req-%d", first[low]);
			snprintf(b, 16, "%s", id);
			break;
		}
		first[low] = i;
	}
	free(first);
}

Test(registry, an_abort_sharing_the_filters_bit_is_no_late_put)
{
	char aborted[16], other[16];

	colliding_ids(aborted, other);
	cr_expect_null(sg_registry_abort(aborted, 100));
	cr_expect_eq(add("/dev/shm/other_0", 1, 1, other), SG_ADDED, "%s is not %s", other, aborted);
	cr_expect_eq(add("/dev/shm/late_0", 1, 2, aborted), SG_ADDED_ABORTED);
	cr_expect_eq(count_and_free(sg_registry_abort(other, 100), other), 1);
	sg_registry_forget_all();
}

/* The path index hashes names alone: one name in two roots is two records. */
Test(registry, one_name_in_two_roots_is_two_records)
{
	cr_assert_eq(add("/dev/shm/x_0", 1, 1, "r"), SG_ADDED);
	cr_assert_eq(add_at("/run/other/x_0", sizeof("/run/other"), 2, 1, "s"), SG_ADDED);
	cr_expect_eq(sg_registry_count(), 2);
	sg_registry_forget_path("/run/other/x_0", sizeof("/run/other"));
	cr_expect_eq(sg_registry_count(), 1);
	struct sg_segment *seg = sg_registry_take("/dev/shm/x_0", IN_SHM);
	cr_assert_not_null(seg);
	cr_expect_eq(seg->dev, 1);
	free(seg);
	cr_expect_null(sg_registry_abort("s", 1));
	sg_registry_forget_all();
}

/* A late put is indexed at once, whatever its entry's memory held before:
 * malloc here fills new blocks with a nonzero byte (M_PERTURB). */
Test(registry, a_late_put_leaves_the_waiting_list_whole)
{
	mallopt(M_PERTURB, 0x5a);
	cr_expect_null(sg_registry_abort("r", 100));
	cr_assert_eq(add("/dev/shm/late_0", 1, 1, "r"), SG_ADDED_ABORTED);
	sg_registry_forget_path("/dev/shm/late_0", IN_SHM);
	cr_assert_eq(add("/dev/shm/s_0", 1, 2, "s"), SG_ADDED);
	cr_assert_eq(add("/dev/shm/s_1", 1, 3, "s"), SG_ADDED);
	cr_expect_eq(count_and_free(sg_registry_abort("s", 100), "s"), 2);
	cr_expect_eq(sg_registry_count(), 0);
	sg_registry_forget_all();
}
