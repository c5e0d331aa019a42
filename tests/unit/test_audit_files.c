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
	cr_assert(audit_files_name(t, f, 0, "seg-1"));
	cr_expect_eq(audit_file_name(f), f->tail, "a name that fits the room is kept in the record");
	cr_expect_str_eq(audit_file_name(f), "seg-1");
	cr_expect_eq(f->root, 0);
	memset(longer, 'x', sizeof(longer) - 1);
	longer[sizeof(longer) - 1] = '\0';
	cr_assert(audit_files_name(t, f, 1, longer)); /* a rename to a longer name: on the heap */
	cr_expect_neq(audit_file_name(f), f->tail);
	cr_expect_str_eq(audit_file_name(f), longer);
	cr_assert(audit_files_name(t, f, 1, audit_file_name(f)), "its own name again");
	cr_expect_str_eq(audit_file_name(f), longer);
	cr_assert(audit_files_name(t, f, 0, "s2"));
	cr_expect_eq(audit_file_name(f), f->tail, "a shorter one goes back into the record");
	cr_expect_str_eq(audit_file_name(f), "s2");
	cr_assert(audit_files_name(t, f, -1, NULL));
	cr_expect_null(audit_file_name(f));
	audit_files_free(t);
}

/* Whether f's request is kept in its own tail. */
static bool request_in_tail(const struct audit_file *f)
{
	return f->indexed && !f->req_in_name && f->req.copy >= f->tail && f->req.copy < f->tail + f->tail_room;
}

/* f's request (NULL none), valid until the next call. */
static const char *request_of(const struct audit_file *f)
{
	static char buf[AUDIT_FILE_REQUEST_MAX];

	return audit_file_request(f, buf);
}

/* A request of one file costs no record of its own: kept as the piece of
 * the file's name that spells it (as a pattern's request always is), else
 * in the file's tail where its creator's last file showed the room is
 * needed, until a second file shares it.  (vLLM's offload names: longer
 * than the room a first file is given.) */
#define REQ(n) "chatcmpl-" #n "0123456789abcdef0123456789abcdef"
Test(audit_files, a_request_of_one_file_is_kept_in_its_name_until_a_second_comes)
{
	struct audit_files *t = audit_files_new(100);
	struct audit_file *first = audit_files_add(t, 1, 9, 42, "vllm", NULL, 0), *f, *h;
	char longer[300];

	/* A creator's first file, of a name not known yet, is given room for a
	 * short name and request: the name goes out of it, the request is in
	 * the name. */
	cr_assert(first && audit_files_name(t, first, 0, "x" REQ(0) "_0_0"));
	audit_files_attribute(t, first, REQ(0), REQ_PATTERN, 0);
	cr_expect_neq(audit_file_name(first), first->tail);
	cr_expect(first->req_in_name && first->req.in_name.at == 1);
	cr_expect_str_eq(request_of(first), REQ(0));
	cr_expect_eq(files_of(t, REQ(0)), 1);
	cr_expect_eq(files_of(t, "chatcmpl-0"), 0, "found by its whole request only");
	cr_expect_eq(files_of(t, REQ(0) "_"), 0);

	/* Its next file has room for what that one needed: its name, and no
	 * request, which the name holds. */
	f = audit_files_add(t, 1, 10, 42, "vllm", NULL, 0);
	cr_assert(f && audit_files_name(t, f, 0, REQ(1) "_0_0"));
	cr_expect_eq(audit_file_name(f), f->tail);
	audit_files_attribute(t, f, REQ(1), REQ_PATTERN, 0);
	cr_expect(f->req_in_name && !request_in_tail(f));
	cr_expect_lt(f->tail_room, strlen(REQ(1) "_0_0") + 1 + strlen(REQ(1)) + 1, "no room kept for a request");
	cr_expect_eq(files_of(t, REQ(1)), 1);

	/* Renamed to a name without it: the request is taken out of the old
	 * name first, into the tail where it fits, else onto a chain. */
	cr_assert(audit_files_name(t, f, 0, "s2"));
	cr_expect(request_in_tail(f));
	cr_expect_str_eq(request_of(f), REQ(1));
	cr_expect_str_eq(audit_file_name(f), "s2");
	memset(longer, 'y', sizeof(longer) - 1);
	longer[sizeof(longer) - 1] = '\0';
	cr_assert(audit_files_name(t, f, 0, longer));
	cr_expect_str_eq(audit_file_name(f), longer);
	cr_expect_str_eq(request_of(f), REQ(1), "a request not in the name stays where it is");
	cr_expect_eq(files_of(t, REQ(1)), 1);
	cr_assert(audit_files_name(t, first, 0, NULL), "no name: the request still kept");
	cr_expect(!first->req_in_name);
	cr_expect_str_eq(request_of(first), REQ(0));
	cr_expect_eq(files_of(t, REQ(0)), 1);
	cr_assert(audit_files_name(t, first, 0, REQ(0)));
	cr_expect_str_eq(request_of(first), REQ(0));

	/* A second file of REQ(1): one chain for both, oldest first. */
	h = audit_files_add(t, 1, 12, 42, "vllm", NULL, 0);
	cr_assert(h && audit_files_name(t, h, 0, REQ(1) "_1_0"));
	audit_files_attribute(t, h, REQ(1), REQ_PATTERN, 0);
	cr_expect(!request_in_tail(f) && !request_in_tail(h) && !h->req_in_name);
	cr_expect_eq(f->req.copy, h->req.copy, "one copy of a request for all its files");
	cr_expect_str_eq(request_of(f), REQ(1));
	cr_expect_eq(files_of(t, REQ(1)), 2);

	/* A tag replaces the pattern's request, in the name or chained. */
	audit_files_attribute(t, first, "tagged", REQ_TAG, -1);
	cr_expect_str_eq(request_of(first), "tagged");
	cr_expect_eq(files_of(t, REQ(0)), 0);
	cr_expect_eq(files_of(t, "tagged"), 1);
	audit_files_attribute(t, first, REQ(0), REQ_PATTERN, 0);
	cr_expect_str_eq(request_of(first), "tagged", "a pattern does not replace a tag");

	audit_files_remove(t, f);
	cr_expect_eq(files_of(t, REQ(1)), 1);
	audit_files_unattribute(t, h);
	cr_expect_null(request_of(h));
	cr_expect_eq(files_of(t, REQ(1)), 0, "the chain went with its last file");
	audit_files_attribute(t, h, REQ(1), REQ_TAG, -1);
	cr_expect(h->req_in_name, "a tag its name spells is kept there too");
	cr_expect_eq(files_of(t, REQ(1)), 1, "and the request comes back with the next");
	audit_files_remove(t, first);
	cr_expect_eq(files_of(t, "tagged"), 0);
	audit_files_remove(t, h);
	cr_expect_eq(files_of(t, REQ(1)), 0);
	audit_files_free(t);
}

/* A request its file's name does not hold (a tag): kept at the end of its
 * tail, the name before it whole. */
Test(audit_files, a_request_the_name_does_not_hold_is_kept_in_the_tail)
{
	struct audit_files *t = audit_files_new(100);
	struct audit_file *f = audit_files_add(t, 1, 10, 42, "vllm", NULL, 0), *g;

	cr_assert(f && audit_files_name(t, f, 0, "seg_0_0"));
	audit_files_attribute(t, f, REQ(1), REQ_TAG, -1);
	cr_expect(!f->req_in_name);
	g = audit_files_add(t, 1, 11, 42, "vllm", NULL, 0);
	cr_assert(g && audit_files_name(t, g, 0, "seg_1_0"));
	audit_files_attribute(t, g, REQ(2), REQ_TAG, -1);
	cr_expect(request_in_tail(g), "room for its request too, as its creator's last file needed");
	cr_expect_str_eq(request_of(g), REQ(2));
	cr_expect_str_eq(audit_file_name(g), "seg_1_0");
	cr_assert(audit_files_name(t, g, 0, "seg_1_0_renamed"));
	cr_expect_str_eq(request_of(g), REQ(2));
	cr_expect_eq(files_of(t, REQ(2)), 1);
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
		cr_assert(f[i] && audit_files_name(t, f[i], 0, "seg_0_0"));
		audit_files_attribute(t, f[i], REQ(9), REQ_TAG, -1);
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
	cr_assert(f && audit_files_name(t, f, 0, "a-name-of-twenty-six-bytes"));
	audit_files_attribute(t, f, request, REQ_TAG, -1);
	cr_expect(!request_in_tail(f));
	cr_expect_str_eq(request_of(f), request);
	cr_expect_str_eq(audit_file_name(f), "a-name-of-twenty-six-bytes");
	g = audit_files_add(t, 1, 11, 7, "p", NULL, 0);
	cr_assert(g);
	audit_files_attribute(t, g, request, REQ_TAG, -1);
	cr_expect_eq(f->req.copy, g->req.copy);
	cr_expect_eq(files_of(t, request), 2);
	audit_files_remove(t, f);
	audit_files_remove(t, g);
	cr_expect_eq(files_of(t, request), 0);
	audit_files_free(t);
}
