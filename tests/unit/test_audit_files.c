#include <criterion/criterion.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "audit_files.h"
#include "audit_inode_set.h"

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
	struct audit_file *f = audit_files_add(t, 1, 10, 1, NULL, NULL);

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
	struct audit_file *f = audit_files_add(t, 1, 10, 1, NULL, NULL);

	audit_files_attribute(t, f, "r1", REQ_TAG, -1);
	f = audit_files_add(t, 1, 10, 1, NULL, NULL);
	cr_expect_eq(audit_files_find(t, 1, 10), f);
	cr_expect_eq(audit_files_count(t), 1);
	cr_expect_eq(files_of(t, "r1"), 0);
	audit_files_free(t);
}

Test(audit_files, limit_and_exclusions)
{
	struct audit_files *t = audit_files_new(2);

	cr_expect_not_null(audit_files_add(t, 1, 1, 1, NULL, NULL));
	cr_expect_not_null(audit_files_add(t, 1, 2, 1, NULL, NULL));
	cr_expect_null(audit_files_add(t, 1, 3, 1, NULL, NULL));
	cr_expect_eq(audit_files_over_limit(t), 1);
	audit_files_exclude(t, 1, 2);
	cr_expect_null(audit_files_find(t, 1, 2), "an excluded file in the table is forgotten");
	audit_files_exclude(t, 1, 4);
	cr_expect_null(audit_files_add(t, 1, 4, 1, NULL, NULL));
	audit_files_end_exclusions(t);
	cr_expect_not_null(audit_files_add(t, 1, 4, 1, NULL, NULL));
	audit_files_free(t);
}

/* The exclusion set through its growth: every inode added is in it, no
 * other, and a clear empties it. */
Test(audit_files, the_inode_set_holds_what_was_added_through_its_growth)
{
	struct audit_inode_set s = {0};

	for (uint64_t i = 1; i <= 1000; i++)
		audit_inode_set_add(&s, (uint32_t)(i % 3), i * 4096);
	audit_inode_set_add(&s, 1, 4096); /* again: once */
	cr_expect_eq(s.n, 1000);
	for (uint64_t i = 1; i <= 1000; i++) {
		cr_expect(audit_inode_set_has(&s, (uint32_t)(i % 3), i * 4096), "%llu", (unsigned long long)i);
		cr_expect(!audit_inode_set_has(&s, (uint32_t)(i % 3) + 1, i * 4096));
		cr_expect(!audit_inode_set_has(&s, (uint32_t)(i % 3), i * 4096 + 1));
	}
	audit_inode_set_clear(&s);
	cr_expect(!audit_inode_set_has(&s, 1, 4096));
	audit_inode_set_add(&s, 1, 4096);
	cr_expect(audit_inode_set_has(&s, 1, 4096));
	audit_inode_set_free(&s);
}

Test(audit_files, growth_collisions_and_requests)
{
	enum { N = 50000 };
	struct audit_files *t = audit_files_new(N);

	/* Inodes that differ only in their device: a hash of the inode alone
	 * would put pairs in one chain. */
	for (uint64_t i = 0; i < N / 2; i++) {
		for (uint32_t dev = 1; dev <= 2; dev++) {
			struct audit_file *f = audit_files_add(t, dev, i, 1, NULL, NULL);
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

/* The auditor follows up to a million records: their size is most of the
 * bytes per followed file (docs/performance.md).  The name a string of the
 * table's own; the creator one copy for its files. */
Test(audit_files, a_record_is_small_and_keeps_a_copy_of_its_name)
{
	struct audit_files *t = audit_files_new(100);
	struct audit_file *f = audit_files_add(t, 1, 10, 42, "vllm", NULL);
	struct audit_file *g = audit_files_add(t, 1, 11, 42, "vllm", NULL), *h = audit_files_add(t, 1, 12, 43, "vllm", NULL);
	char name[300], longer[300];

	cr_expect_leq(sizeof(struct audit_file), 88);
	cr_assert(f && g && h);
	cr_expect_eq(f->creator, g->creator, "one record per creator");
	cr_expect_neq(f->creator, h->creator, "another process, another creator");
	cr_expect_eq(f->creator->tgid, 42);
	cr_expect_str_eq(f->creator->comm, "vllm");
	cr_expect_null(f->name);
	strcpy(name, "seg-1");
	cr_assert(audit_files_name(t, f, 0, name));
	name[0] = 'X';
	cr_expect_str_eq(f->name, "seg-1", "a copy");
	cr_expect_eq(f->root, 0);
	memset(longer, 'x', sizeof(longer) - 1);
	longer[sizeof(longer) - 1] = '\0';
	cr_assert(audit_files_name(t, f, 1, longer)); /* longer than any file name: malloc's */
	cr_expect_str_eq(f->name, longer);
	cr_assert(audit_files_name(t, f, 1, f->name), "its own name again");
	cr_expect_str_eq(f->name, longer);
	cr_assert(audit_files_name(t, f, 0, "s2"));
	cr_expect_str_eq(f->name, "s2");
	cr_assert(audit_files_name(t, g, 0, f->name));
	cr_assert(audit_files_name(t, f, -1, NULL));
	cr_expect_null(f->name);
	cr_expect_str_eq(g->name, "s2", "a name of its own");
	audit_files_free(t);
}

/* A record's slot, and its name's, are the next ones taken once it is
 * forgotten; the links of the others stay whole. */
Test(audit_files, a_forgotten_record_and_its_name_make_room_for_the_next)
{
	struct audit_files *t = audit_files_new(100);
	struct audit_file *f = audit_files_add(t, 1, 10, 42, "p", NULL), *g = audit_files_add(t, 1, 11, 42, "p", NULL);
	struct audit_file *h = audit_files_add(t, 1, 12, 42, "p", NULL), *again;
	const char *name;

	cr_assert(f && g && h && audit_files_name(t, g, 0, "the-name_0_0"));
	name = g->name;
	audit_files_remove(t, g);
	cr_assert_not_null(again = audit_files_add(t, 1, 13, 42, "p", NULL));
	cr_expect_eq(again, g, "the freed slot");
	cr_assert(audit_files_name(t, again, 0, "other-name_0"));
	cr_expect_eq(again->name, name, "the freed name's slot (the same size)");
	cr_expect_null(audit_files_find(t, 1, 11));
	cr_expect_eq(audit_files_find(t, 1, 13), again);
	audit_files_walk_begin(t);
	cr_expect_eq(audit_files_walk_next(t), f);
	cr_expect_eq(audit_files_walk_next(t), h);
	cr_expect_eq(audit_files_walk_next(t), again, "the newest last");
	cr_expect_null(audit_files_walk_next(t));
	cr_expect_eq(audit_files_newest(t), again);
	cr_expect_eq(audit_files_older(t, again), h);
	cr_expect_eq(audit_files_older(t, h), f);
	cr_expect_null(audit_files_older(t, f));
	audit_files_free(t);
}

/* Whether f keeps a copy of its own request. */
static bool own_request(const struct audit_file *f)
{
	return f->indexed && f->alone && !f->req_in_name;
}

/* f's request (NULL none), valid until the next call. */
static const char *request_of(const struct audit_file *f)
{
	static char buf[AUDIT_FILE_REQUEST_MAX];

	return audit_file_request(f, buf);
}

/* A request of one file costs no record of its own: kept as the piece of
 * the file's name that spells it (as a pattern's request always is), else
 * as a string of the file's own, until a second file shares it.  (vLLM's
 * offload names.) */
#define REQ(n) "chatcmpl-" #n "0123456789abcdef0123456789abcdef"
Test(audit_files, a_request_of_one_file_is_kept_in_its_name_until_a_second_comes)
{
	struct audit_files *t = audit_files_new(100);
	struct audit_file *first = audit_files_add(t, 1, 9, 42, "vllm", NULL), *f, *h;
	char longer[300];

	cr_assert(first && audit_files_name(t, first, 0, "x" REQ(0) "_0_0"));
	audit_files_attribute(t, first, REQ(0), REQ_PATTERN, 0);
	cr_expect(first->req_in_name && first->req.in_name.at == 1);
	cr_expect_str_eq(request_of(first), REQ(0));
	cr_expect_eq(files_of(t, REQ(0)), 1);
	cr_expect_eq(files_of(t, "chatcmpl-0"), 0, "found by its whole request only");
	cr_expect_eq(files_of(t, REQ(0) "_"), 0);

	f = audit_files_add(t, 1, 10, 42, "vllm", NULL);
	cr_assert(f && audit_files_name(t, f, 0, REQ(1) "_0_0"));
	audit_files_attribute(t, f, REQ(1), REQ_PATTERN, 0);
	cr_expect(f->req_in_name);
	cr_expect_eq(files_of(t, REQ(1)), 1);

	/* Renamed to a name without it: the request is taken out of the old
	 * name first, into a string of its own. */
	cr_assert(audit_files_name(t, f, 0, "s2"));
	cr_expect(own_request(f));
	cr_expect_str_eq(request_of(f), REQ(1));
	cr_expect_str_eq(f->name, "s2");
	memset(longer, 'y', sizeof(longer) - 1);
	longer[sizeof(longer) - 1] = '\0';
	cr_assert(audit_files_name(t, f, 0, longer));
	cr_expect_str_eq(f->name, longer);
	cr_expect_str_eq(request_of(f), REQ(1), "a request not in the name stays where it is");
	cr_expect_eq(files_of(t, REQ(1)), 1);
	cr_assert(audit_files_name(t, first, 0, NULL), "no name: the request still kept");
	cr_expect(own_request(first));
	cr_expect_str_eq(request_of(first), REQ(0));
	cr_expect_eq(files_of(t, REQ(0)), 1);
	cr_assert(audit_files_name(t, first, 0, REQ(0)));
	cr_expect_str_eq(request_of(first), REQ(0));

	/* A second file of REQ(1): one chain for both, oldest first. */
	h = audit_files_add(t, 1, 12, 42, "vllm", NULL);
	cr_assert(h && audit_files_name(t, h, 0, REQ(1) "_1_0"));
	audit_files_attribute(t, h, REQ(1), REQ_PATTERN, 0);
	cr_expect(!own_request(f) && !own_request(h) && !h->req_in_name);
	cr_expect_eq(f->req.copy, h->req.copy, "one copy of a request for all its files");
	cr_expect_str_eq(request_of(f), REQ(1));
	cr_expect_eq(files_of(t, REQ(1)), 2);

	/* A tag replaces the pattern's request. */
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

/* Many files alone with their requests, more than the first buckets: each
 * found by its own, in its name or not, after the buckets grew and after
 * a third of them went. */
Test(audit_files, files_alone_with_their_requests_are_found_as_the_buckets_grow)
{
	enum { N = 5000 };
	struct audit_files *t = audit_files_new(N);
	char name[64], request[64];

	for (unsigned i = 0; i < N; i++) {
		struct audit_file *f = audit_files_add(t, 1, i, 7, "p", NULL);
		snprintf(name, sizeof(name), "seg-%u_0_0", i);
		snprintf(request, sizeof(request), i % 2 ? "seg-%u" : "tag-%u", i);
		cr_assert(f && audit_files_name(t, f, 0, name));
		audit_files_attribute(t, f, request, REQ_TAG, -1);
		cr_assert_eq(f->req_in_name, i % 2 == 1);
	}
	for (unsigned i = 0; i < N; i += 3)
		audit_files_remove(t, audit_files_find(t, 1, i));
	for (unsigned i = 0; i < N; i++) {
		snprintf(request, sizeof(request), i % 2 ? "seg-%u" : "tag-%u", i);
		cr_assert_eq(files_of(t, request), i % 3 ? 1u : 0u, "%s", request);
	}
	audit_files_free(t);
}

/* A request that its file's name does not spell (a tag): a copy of the
 * file's own, the name whole. */
Test(audit_files, a_request_the_name_does_not_spell_is_a_copy_of_its_own)
{
	struct audit_files *t = audit_files_new(100);
	struct audit_file *f = audit_files_add(t, 1, 10, 42, "vllm", NULL);
	char request[200];

	cr_assert(f && audit_files_name(t, f, 0, "seg_1_0"));
	audit_files_attribute(t, f, REQ(2), REQ_TAG, -1);
	cr_expect(own_request(f));
	cr_expect_str_eq(request_of(f), REQ(2));
	cr_expect_str_eq(f->name, "seg_1_0");
	cr_assert(audit_files_name(t, f, 0, "seg_1_0_renamed"));
	cr_expect_str_eq(request_of(f), REQ(2));
	cr_expect_eq(files_of(t, REQ(2)), 1);
	memset(request, 'r', sizeof(request) - 1);
	request[sizeof(request) - 1] = '\0';
	audit_files_unattribute(t, f);
	audit_files_attribute(t, f, request, REQ_TAG, -1);
	cr_expect_str_eq(request_of(f), request);
	cr_expect_eq(files_of(t, request), 1);
	audit_files_free(t);
}

/* A long request of two files: one chain, the same answers. */
Test(audit_files, a_long_request_of_two_files_is_one_chain)
{
	struct audit_files *t = audit_files_new(100);
	struct audit_file *f = audit_files_add(t, 1, 10, 7, "p", NULL), *g;
	char request[200];

	memset(request, 'r', sizeof(request) - 1);
	request[sizeof(request) - 1] = '\0';
	cr_assert(f && audit_files_name(t, f, 0, "a-name-of-twenty-six-bytes"));
	audit_files_attribute(t, f, request, REQ_TAG, -1);
	cr_expect_str_eq(request_of(f), request);
	cr_expect_str_eq(f->name, "a-name-of-twenty-six-bytes");
	g = audit_files_add(t, 1, 11, 7, "p", NULL);
	cr_assert(g);
	audit_files_attribute(t, g, request, REQ_TAG, -1);
	cr_expect_eq(f->req.copy, g->req.copy);
	cr_expect_eq(files_of(t, request), 2);
	audit_files_remove(t, f);
	cr_expect_eq(files_of(t, request), 1);
	audit_files_remove(t, g);
	cr_expect_eq(files_of(t, request), 0);
	audit_files_free(t);
}
