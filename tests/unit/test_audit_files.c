#include <criterion/criterion.h>

#include <string.h>

#include "audit_files.h"

static void count_file(struct audit_file *f, void *ctx)
{
	(void)f;
	++*(unsigned *)ctx;
}

static unsigned files_of(struct audit_files *t, const char *request)
{
	unsigned n = 0;

	audit_files_of_request(t, request, count_file, &n);
	return n;
}

Test(audit_files, add_find_remove)
{
	struct audit_files *t = audit_files_new(100);
	struct audit_file *f = audit_files_add(t, 1, 10, 1, NULL, NULL, 0);

	cr_assert_not_null(f);
	cr_expect_eq(audit_files_find(t, 1, 10), f);
	cr_expect_null(audit_files_find(t, 2, 10), "same inode, other device");
	cr_expect_null(audit_files_find(t, 1, 11));
	audit_files_remove(t, f);
	cr_expect_null(audit_files_find(t, 1, 10));
	cr_expect_eq(audit_files_count(t), 0);
	audit_files_free(t);
}

Test(audit_files, a_reused_inode_replaces_the_old_record)
{
	struct audit_files *t = audit_files_new(100);
	struct audit_file *f = audit_files_add(t, 1, 10, 1, NULL, NULL, 0);

	audit_files_attribute(t, f, "r1", REQ_TAG, -1);
	f = audit_files_add(t, 1, 10, 1, NULL, NULL, 0);
	cr_expect_eq(audit_files_find(t, 1, 10), f);
	cr_expect_eq(audit_files_count(t), 1);
	cr_expect_eq(files_of(t, "r1"), 0);
	audit_files_free(t);
}

Test(audit_files, limit_and_exclusions)
{
	struct audit_files *t = audit_files_new(2);

	cr_expect_not_null(audit_files_add(t, 1, 1, 1, NULL, NULL, 0));
	cr_expect_not_null(audit_files_add(t, 1, 2, 1, NULL, NULL, 0));
	cr_expect_null(audit_files_add(t, 1, 3, 1, NULL, NULL, 0));
	cr_expect_eq(audit_files_over_limit(t), 1);
	audit_files_exclude(t, 1, 2);
	cr_expect_null(audit_files_find(t, 1, 2), "an excluded file in the table is forgotten");
	audit_files_exclude(t, 1, 4);
	cr_expect_null(audit_files_add(t, 1, 4, 1, NULL, NULL, 0));
	audit_files_end_exclusions(t);
	cr_expect_not_null(audit_files_add(t, 1, 4, 1, NULL, NULL, 0));
	audit_files_free(t);
}

Test(audit_files, growth_collisions_and_requests)
{
	enum { N = 50000 };
	struct audit_files *t = audit_files_new(N);

	/* Inodes that differ only in their device: a hash of the inode alone
	 * would put pairs in one chain. */
	for (uint64_t i = 0; i < N / 2; i++) {
		for (uint32_t dev = 1; dev <= 2; dev++) {
			struct audit_file *f = audit_files_add(t, dev, i, 1, NULL, NULL, 0);
			cr_assert_not_null(f);
			audit_files_attribute(t, f, i % 3 ? "many" : "few", REQ_TAG, -1);
		}
	}
	cr_expect_eq(audit_files_count(t), N);
	for (uint64_t i = 0; i < N / 2; i++)
		for (uint32_t dev = 1; dev <= 2; dev++)
			cr_assert(audit_files_find(t, dev, i) && audit_files_find(t, dev, i)->kdev == dev);
	unsigned few = files_of(t, "few");
	cr_expect_eq(few + files_of(t, "many"), N);
	audit_files_unattribute(t, audit_files_find(t, 1, 0));
	cr_expect_eq(files_of(t, "few"), few - 1);
	for (uint64_t i = 0; i < N / 2; i += 2)
		audit_files_remove(t, audit_files_find(t, 2, i));
	cr_expect_eq(audit_files_count(t), N - N / 4);
	cr_expect_null(audit_files_find(t, 2, 0));
	cr_expect_not_null(audit_files_find(t, 1, 0));
	audit_files_free(t);
}

/* The auditor follows up to a million records: their size is the bytes per
 * followed file (docs/performance.md).  112 B and the name in the record's
 * tail; the request's string and the creator are one copy each. */
Test(audit_files, a_record_is_packed_and_keeps_its_name_inline)
{
	struct audit_files *t = audit_files_new(100);
	struct audit_file *f = audit_files_add(t, 1, 10, 42, "vllm", NULL, strlen("seg-1"));
	struct audit_file *g = audit_files_add(t, 1, 11, 42, "vllm", NULL, 0), *h = audit_files_add(t, 1, 12, 43, "vllm", NULL, 0);
	char longer[300];

	cr_expect_leq(sizeof(struct audit_file), 112);
	cr_assert(f && g && h);
	cr_expect_eq(f->creator, g->creator, "one record per creator");
	cr_expect_neq(f->creator, h->creator, "another process, another creator");
	cr_expect_eq(f->creator->tgid, 42);
	cr_expect_str_eq(f->creator->comm, "vllm");
	cr_assert(audit_files_name(f, 0, "seg-1"));
	cr_expect_eq(f->name, f->inline_name, "a name that fits the room is kept in the record");
	cr_expect_str_eq(f->name, "seg-1");
	cr_expect_eq(f->root, 0);
	memset(longer, 'x', sizeof(longer) - 1);
	longer[sizeof(longer) - 1] = '\0';
	cr_assert(audit_files_name(f, 1, longer)); /* a rename to a longer name: on the heap */
	cr_expect_neq(f->name, f->inline_name);
	cr_expect_str_eq(f->name, longer);
	cr_assert(audit_files_name(f, 0, "s2"));
	cr_expect_eq(f->name, f->inline_name, "a shorter one goes back into the record");
	cr_expect_str_eq(f->name, "s2");
	cr_assert(audit_files_name(f, -1, NULL));
	cr_expect_null(f->name);

	audit_files_attribute(t, f, "r1", REQ_TAG, -1);
	audit_files_attribute(t, g, "r1", REQ_PATTERN, 3);
	cr_expect_str_eq(f->request, "r1");
	cr_expect_eq(f->request, g->request, "one copy of a request for all its files");
	cr_expect_eq(g->shape, 3);
	audit_files_remove(t, f);
	cr_expect_eq(g->creator->tgid, 42, "the creator stays while it has files");
	audit_files_unattribute(t, g);
	cr_expect_null(g->request);
	cr_expect_eq(files_of(t, "r1"), 0, "the chain went with its last file");
	audit_files_attribute(t, g, "r1", REQ_TAG, -1);
	cr_expect_eq(files_of(t, "r1"), 1, "and comes back with the next");
	audit_files_free(t);
}
