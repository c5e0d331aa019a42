#include <criterion/criterion.h>

#include <stdbool.h>
#include <stddef.h>
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
 * followed file (docs/performance.md).  The name in the record's tail; the
 * creator one copy for its files. */
Test(audit_files, a_record_is_packed_and_keeps_its_name_inline)
{
	struct audit_files *t = audit_files_new(100);
	struct audit_file *f = audit_files_add(t, 1, 10, 42, "vllm", NULL, strlen("seg-1"));
	struct audit_file *g = audit_files_add(t, 1, 11, 42, "vllm", NULL, 0), *h = audit_files_add(t, 1, 12, 43, "vllm", NULL, 0);
	char longer[300];

	cr_expect_leq(offsetof(struct audit_file, tail), 106);
	cr_assert(f && g && h);
	cr_expect_eq(f->creator, g->creator, "one record per creator");
	cr_expect_neq(f->creator, h->creator, "another process, another creator");
	cr_expect_eq(f->creator->tgid, 42);
	cr_expect_str_eq(f->creator->comm, "vllm");
	cr_expect_null(audit_file_name(f));
	cr_assert(audit_files_name(f, 0, "seg-1"));
	cr_expect_eq(audit_file_name(f), f->tail, "a name that fits the room is kept in the record");
	cr_expect_str_eq(audit_file_name(f), "seg-1");
	cr_expect_eq(f->root, 0);
	memset(longer, 'x', sizeof(longer) - 1);
	longer[sizeof(longer) - 1] = '\0';
	cr_assert(audit_files_name(f, 1, longer)); /* a rename to a longer name: on the heap */
	cr_expect_neq(audit_file_name(f), f->tail);
	cr_expect_str_eq(audit_file_name(f), longer);
	cr_assert(audit_files_name(f, 1, audit_file_name(f)), "its own name again");
	cr_expect_str_eq(audit_file_name(f), longer);
	cr_assert(audit_files_name(f, 0, "s2"));
	cr_expect_eq(audit_file_name(f), f->tail, "a shorter one goes back into the record");
	cr_expect_str_eq(audit_file_name(f), "s2");
	cr_assert(audit_files_name(f, -1, NULL));
	cr_expect_null(audit_file_name(f));
	audit_files_free(t);
}

/* Whether f's request is kept in its own tail. */
static bool request_in_tail(const struct audit_file *f)
{
	return f->request >= f->tail && f->request < f->tail + f->tail_room;
}

/* A request of one file costs no record of its own: kept in the file's tail,
 * where its creator's last file showed the room is needed, until a second
 * file shares it.  (vLLM's offload names: longer than the room a first file
 * is given.) */
#define REQ(n) "chatcmpl-" #n "0123456789abcdef0123456789abcdef"
Test(audit_files, a_request_of_one_file_is_kept_in_its_tail_until_a_second_comes)
{
	struct audit_files *t = audit_files_new(100);
	struct audit_file *first = audit_files_add(t, 1, 9, 42, "vllm", NULL, 0), *f, *g, *h;
	char longer[300];

	/* A creator's first file, of a name not known yet, is given room for a
	 * short name and request: these go out of it, and on a chain. */
	cr_assert(first && audit_files_name(first, 0, REQ(0) "_0_0"));
	audit_files_attribute(t, first, REQ(0), REQ_PATTERN, 0);
	cr_expect_neq(audit_file_name(first), first->tail);
	cr_expect_str_eq(audit_file_name(first), REQ(0) "_0_0");
	cr_expect(!request_in_tail(first));
	cr_expect_eq(files_of(t, REQ(0)), 1);

	/* Its next file has room for what that one needed: its name and, as it
	 * started a request of its own, a request. */
	f = audit_files_add(t, 1, 10, 42, "vllm", NULL, 0);
	cr_assert(f && audit_files_name(f, 0, REQ(1) "_0_0"));
	cr_expect_eq(audit_file_name(f), f->tail);
	audit_files_attribute(t, f, REQ(1), REQ_PATTERN, 0);
	cr_expect(request_in_tail(f), "room for its request too");
	cr_expect_str_eq(f->request, REQ(1));
	cr_expect_str_eq(audit_file_name(f), REQ(1) "_0_0", "the name before it is whole");
	cr_expect_eq(files_of(t, REQ(1)), 1);
	cr_expect_eq(files_of(t, "chatcmpl-1"), 0, "found by its whole request only");

	/* Renamed longer than the room before the request: the name goes out,
	 * the request stays. */
	memset(longer, 'y', sizeof(longer) - 1);
	longer[sizeof(longer) - 1] = '\0';
	cr_assert(audit_files_name(f, 0, longer));
	cr_expect_str_eq(audit_file_name(f), longer);
	cr_expect_str_eq(f->request, REQ(1));
	cr_assert(audit_files_name(f, 0, REQ(1) "_0_0"));
	cr_expect_eq(audit_file_name(f), f->tail);
	cr_expect_str_eq(f->request, REQ(1));

	g = audit_files_add(t, 1, 11, 42, "vllm", NULL, 0);
	cr_assert(g && audit_files_name(g, 0, REQ(2) "_0_0"));
	audit_files_attribute(t, g, REQ(2), REQ_PATTERN, 0);
	cr_expect(request_in_tail(g));
	cr_expect_eq(files_of(t, REQ(2)), 1);

	/* A second file of REQ(1): one chain for both, oldest first. */
	h = audit_files_add(t, 1, 12, 42, "vllm", NULL, 0);
	cr_assert(h && audit_files_name(h, 0, REQ(1) "_1_0"));
	audit_files_attribute(t, h, REQ(1), REQ_PATTERN, 0);
	cr_expect(!request_in_tail(f) && !request_in_tail(h));
	cr_expect_eq(f->request, h->request, "one copy of a request for all its files");
	cr_expect_str_eq(f->request, REQ(1));
	cr_expect_str_eq(audit_file_name(f), REQ(1) "_0_0");
	cr_expect_eq(files_of(t, REQ(1)), 2);

	/* A tag replaces the pattern's request, alone or chained. */
	audit_files_attribute(t, g, "tagged", REQ_TAG, -1);
	cr_expect_str_eq(g->request, "tagged");
	cr_expect_eq(files_of(t, REQ(2)), 0);
	cr_expect_eq(files_of(t, "tagged"), 1);
	audit_files_attribute(t, g, REQ(2), REQ_PATTERN, 0);
	cr_expect_str_eq(g->request, "tagged", "a pattern does not replace a tag");

	audit_files_remove(t, f);
	cr_expect_eq(files_of(t, REQ(1)), 1);
	audit_files_unattribute(t, h);
	cr_expect_null(h->request);
	cr_expect_eq(files_of(t, REQ(1)), 0, "the chain went with its last file");
	audit_files_attribute(t, h, REQ(1), REQ_TAG, -1);
	cr_expect_eq(files_of(t, REQ(1)), 1, "and the request comes back with the next");
	audit_files_remove(t, g);
	cr_expect_eq(files_of(t, "tagged"), 0);
	audit_files_remove(t, first);
	cr_expect_eq(files_of(t, REQ(0)), 0);
	audit_files_free(t);
}

/* Files that share their requests: no room kept for a request in the next
 * file's tail. */
Test(audit_files, files_that_share_requests_keep_no_room_for_one)
{
	struct audit_files *t = audit_files_new(100);
	struct audit_file *f[4];

	for (unsigned i = 0; i < 4; i++) {
		f[i] = audit_files_add(t, 1, 20 + i, 7, "p", NULL, 0);
		cr_assert(f[i] && audit_files_name(f[i], 0, REQ(9) "_0_0"));
		audit_files_attribute(t, f[i], REQ(9), REQ_PATTERN, 0);
	}
	cr_expect(f[2]->tail_room < f[1]->tail_room, "the second file had room for a request (the first started one)");
	cr_expect_eq(f[3]->tail_room, f[2]->tail_room, "the third and fourth none");
	cr_expect_eq(files_of(t, REQ(9)), 4);
	audit_files_free(t);
}

/* No room in the tail (a long name, a long request): a chain from the first
 * file, the same answers. */
Test(audit_files, a_request_without_room_in_the_tail_gets_a_chain)
{
	struct audit_files *t = audit_files_new(100);
	struct audit_file *f = audit_files_add(t, 1, 10, 7, "p", NULL, 0), *g;
	char request[200];

	memset(request, 'r', sizeof(request) - 1);
	request[sizeof(request) - 1] = '\0';
	cr_assert(f && audit_files_name(f, 0, "a-name-of-twenty-six-bytes"));
	audit_files_attribute(t, f, request, REQ_TAG, -1);
	cr_expect(!request_in_tail(f));
	cr_expect_str_eq(f->request, request);
	cr_expect_str_eq(audit_file_name(f), "a-name-of-twenty-six-bytes");
	g = audit_files_add(t, 1, 11, 7, "p", NULL, 0);
	cr_assert(g);
	audit_files_attribute(t, g, request, REQ_TAG, -1);
	cr_expect_eq(f->request, g->request);
	cr_expect_eq(files_of(t, request), 2);
	audit_files_remove(t, f);
	audit_files_remove(t, g);
	cr_expect_eq(files_of(t, request), 0);
	audit_files_free(t);
}
