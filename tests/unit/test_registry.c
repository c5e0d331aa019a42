#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* path (/dev/shm/NAME), file dev, ino, made for request. */
static int add(const char *path, dev_t dev, ino_t ino, const char *request)
{
	struct sg_new_file f = {.path = path,
				.name_off = sizeof("/dev/shm"),
				.name_len = strlen(path) - sizeof("/dev/shm"),
				.req = request,
				.req_len = strlen(request),
				.dev = dev,
				.ino = ino};

	return sg_registry_add(&f);
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

	struct sg_segment *seg = sg_registry_take("/dev/shm/a");
	cr_assert_not_null(seg);
	cr_expect_str_eq(seg->path, "/dev/shm/a");
	cr_expect_str_eq(seg->request, "r1");
	cr_expect_eq(seg->ino, 10);
	free(seg);
	cr_expect_null(sg_registry_take("/dev/shm/a"));

	sg_registry_forget_path("/dev/shm/b");
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
		sg_registry_forget_path(path);
	}
	cr_expect_eq(sg_registry_count(), N - N / 8);
	cr_expect_eq(count_and_free(sg_registry_abort("big", 1), "big"), N * 3 / 4);
	cr_expect_eq(count_and_free(sg_registry_abort("small", 1), "small"), N / 4 - N / 8);
	cr_expect_eq(sg_registry_count(), 0);
}
