/* The ownership journal's format: records read back, torn or forged ones
 * ignored, and the reader's rules of trust. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "journal.h"
#include "journal_read.h"

#define NSLOTS (2 * SG_JOURNAL_BLOCK_SLOTS)
#define FIRST_TEXT sizeof(((struct sg_journal_rec *)0)->text)
#define CONT_TEXT sizeof(((struct sg_journal_cont *)0)->text)
#define NREC 4

/* Two blocks of a journal: the header in slot 0. */
static union {
	struct sg_journal_head head;
	char slot[NSLOTS][SG_JOURNAL_SLOT];
} img;

static struct sg_journal_rec *rec(size_t i)
{
	return (struct sg_journal_rec *)img.slot[i];
}

static void fresh(void)
{
	memset(&img, 0, sizeof(img));
	sg_journal_head_init(&img.head, 4242, 123456, 4026531836ull, 1795968667000000000ull);
	img.head.slots_used = NSLOTS;
}

TestSuite(journal, .init = fresh);

struct seen {
	int n;
	struct {
		uint64_t ino, created;
		char req[256], name[256];
	} e[NREC];
};

static int collect(const struct sg_journal_entry *e, void *opaque)
{
	struct seen *s = opaque;

	s->e[s->n].ino = e->ino;
	s->e[s->n].created = e->created_ns;
	strcpy(s->e[s->n].req, e->req);
	strcpy(s->e[s->n].name, e->name);
	s->n++;
	return 0;
}

static int parse(struct seen *s, size_t len)
{
	struct sg_journal_head head;

	memset(s, 0, sizeof(*s));
	return sg_journal_parse(&img, len, &head, collect, s);
}

Test(journal, records_read_back)
{
	struct sg_journal_head head;
	struct seen s = {0};
	char longest[SG_NAME_MAX + 1], longest_name[SG_NAME_MAX + 1];

	memset(longest, 'r', SG_NAME_MAX);
	longest[SG_NAME_MAX] = '\0';
	memset(longest_name, 'n', SG_NAME_MAX);
	longest_name[SG_NAME_MAX] = '\0';
	cr_assert_eq(sg_journal_rec_commit(rec(2), 77, 1000, "chatcmpl-42", "chatcmpl-42_0_1"), 2);
	cr_assert_eq(sg_journal_rec_commit(rec(4), 78, 2000, longest, longest_name), SG_JOURNAL_MAX_SPAN);
	cr_assert_eq(sg_journal_parse(&img, sizeof(img), &head, collect, &s), 2);
	cr_assert_eq(head.pid, 4242);
	cr_assert_eq(head.start_ticks, 123456);
	cr_assert_eq(head.pidns, 4026531836ull);
	cr_assert_eq(s.e[0].ino, 77);
	cr_assert_eq(s.e[0].created, 1000);
	cr_assert_str_eq(s.e[0].req, "chatcmpl-42");
	cr_assert_str_eq(s.e[0].name, "chatcmpl-42_0_1");
	cr_assert_str_eq(s.e[1].req, longest);
	cr_assert_str_eq(s.e[1].name, longest_name);
}

/* What a record costs: a vLLM request ID and its offload file's name in
 * three slots (96 bytes), a short lock file's in two. */
Test(journal, a_typical_record_takes_two_slots)
{
	const char *req = "chatcmpl-6f1c2a9e4b7d4e0f8a3b5c7d9e1f2a4b";
	const char *name = "vllm_offload_chatcmpl-6f1c2a9e4b7d4e0f8a3b5c7d9e1f2a4b.mmap";
	struct seen s;

	cr_assert_eq(sg_journal_span(req, name), 3);
	cr_assert_eq(sg_journal_span("r1", "shm_lock_r1"), 2);
	cr_assert_eq(sg_journal_span("", "x"), 0);
	/* The request is kept once, and the name read back whole. */
	cr_assert_eq(sg_journal_rec_commit(rec(2), 9, 1, req, name), 3);
	cr_assert_eq(sg_journal_rec_commit(rec(6), 10, 1, "x", "no_request_here"), 2);
	cr_assert_eq(parse(&s, sizeof(img)), 2);
	cr_assert_str_eq(s.e[0].name, name);
	cr_assert_str_eq(s.e[0].req, req);
	cr_assert_str_eq(s.e[1].name, "no_request_here");
}

/* Where the request stands in the name, as a pattern found it, spares the
 * writer a search; a place that does not hold the request is not taken on
 * trust: the record is the same either way. */
Test(journal, the_requests_place_told_or_found_gives_one_record)
{
	const char *req = "ab", *name = "ab_ab_1"; /* the pattern {any}_{req}_{int} finds it at 3 */
	static const size_t told[] = {3, 0, SG_JOURNAL_REQ_AT_UNKNOWN, 4, 6, 200};
	struct sg_journal_text t;

	for (size_t i = 0; i < sizeof(told) / sizeof(told[0]); i++) {
		struct seen s;

		fresh();
		cr_assert_eq(sg_journal_text_make(&t, req, 2, name, 7, told[i]), 2, "told %zu", told[i]);
		cr_expect(t.req_at == (i == 0 ? 3 : 0), "told %zu: kept at %zu", told[i], t.req_at);
		sg_journal_text_commit(rec(2), 5, 1, &t);
		cr_assert_eq(parse(&s, sizeof(img)), 1, "told %zu", told[i]);
		cr_expect_str_eq(s.e[0].name, name, "told %zu", told[i]);
		cr_expect_str_eq(s.e[0].req, req, "told %zu", told[i]);
	}
}

/* The two writers: sg_journal_text_make and sg_journal_text_commit (the
 * shim's, in whole slots) must write the bytes sg_journal_rec_commit (the
 * plain one, slot by slot) writes. */
static size_t same_as_reference(const char *req, size_t rlen, const char *name, size_t nlen, size_t told)
{
	static char ref[SG_JOURNAL_MAX_SPAN + 1][SG_JOURNAL_SLOT], fast[SG_JOURNAL_MAX_SPAN + 1][SG_JOURNAL_SLOT];
	struct sg_journal_text t;
	size_t len, end;
	int span;

	/* Over stale bytes (a freed record's), with garbage where the text's
	 * own bytes end: none of it may reach the record. */
	memset(ref, 0xa5, sizeof(ref));
	memset(fast, 0xa5, sizeof(fast));
	memset(&t, 0x5a, sizeof(t));
	span = sg_journal_rec_commit(ref, 0x0123456789abcdefull, 1795968667504769199ull, req, name);
	cr_assert_gt(span, 0, "req %zu bytes, name %zu", rlen, nlen);
	cr_assert_eq(sg_journal_text_make(&t, req, rlen, name, nlen, told), (unsigned)span, "req %zu bytes, name %zu",
		     rlen, nlen);
	sg_journal_text_commit(fast, 0x0123456789abcdefull, 1795968667504769199ull, &t);
	cr_assert_arr_eq(fast, ref, (size_t)span * SG_JOURNAL_SLOT, "req %zu bytes, name %zu, req at %u, told %zu", rlen,
			 nlen, ((struct sg_journal_rec *)ref)->req_at, told);
	cr_assert_eq((unsigned char)fast[span][0], 0xa5, "nothing past the record");
	/* Past the text, its last slot holds zeros. */
	len = ((struct sg_journal_rec *)ref)->req_at == SG_JOURNAL_NO_REQ ? rlen + nlen : nlen;
	end = span == 1 ? offsetof(struct sg_journal_rec, text) + len
			: offsetof(struct sg_journal_cont, text) + (len - FIRST_TEXT - (size_t)(span - 2) * CONT_TEXT);
	for (size_t i = end; i < SG_JOURNAL_SLOT; i++)
		cr_assert_eq(fast[span - 1][i], 0, "byte %zu of slot %d, req %zu bytes, name %zu", i, span - 1, rlen, nlen);
	return (size_t)span;
}

/* req (rlen bytes of "qrstuvwxyz") in name at at, between bytes that can
 * hold no part of it; at + rlen + after bytes in all. */
static void req_in_name(char *req, char *name, size_t rlen, size_t at, size_t after)
{
	for (size_t i = 0; i < rlen; i++)
		req[i] = "qrstuvwxyz"[i % 10];
	req[rlen] = '\0';
	for (size_t i = 0; i < at + rlen + after; i++)
		name[i] = "abcdefghij0123456789-_."[i % 23];
	memcpy(name + at, req, rlen);
	name[at + rlen + after] = '\0';
}

Test(journal, the_shims_writer_writes_the_plain_writers_bytes)
{
	static const size_t ats[] = {0, 1, 3, 4, 5, 26, 27, 30, 31, 32, 35, 62, 100, 127, 200, 254};
	static const size_t afters[] = {0, 1, 2, 3, 4, 7, 8, 26, 27, 30, 31, 32, 61, 62, 100, 254};
	char req[SG_NAME_MAX + 1], name[SG_NAME_MAX + 1];
	unsigned cases = 0;

	for (size_t rlen = 1; rlen <= SG_NAME_MAX; rlen++) {
		/* The request in the name, where a pattern finds it (told) or
		 * where the writer must look for it. */
		for (size_t a = 0; a < sizeof(ats) / sizeof(ats[0]); a++)
			for (size_t f = 0; f < sizeof(afters) / sizeof(afters[0]); f++) {
				if (ats[a] + rlen + afters[f] > SG_NAME_MAX)
					continue;
				req_in_name(req, name, rlen, ats[a], afters[f]);
				same_as_reference(req, rlen, name, strlen(name), ats[a]);
				same_as_reference(req, rlen, name, strlen(name), SG_JOURNAL_REQ_AT_UNKNOWN);
				cases += 2;
			}
		/* Not in the name: each length of name. */
		req_in_name(req, name, rlen, 0, 0);
		for (size_t nlen = 1; nlen <= SG_NAME_MAX; nlen++) {
			for (size_t i = 0; i < nlen; i++)
				name[i] = "abcdefghij0123456789-_."[(i * 7) % 23];
			name[nlen] = '\0';
			same_as_reference(req, rlen, name, nlen, nlen % 3 ? SG_JOURNAL_REQ_AT_UNKNOWN : nlen / 2);
			cases++;
		}
	}
	cr_assert_gt(cases, 70000);
}

/* The bytes of two records as shmguard-jnl/2 lays them out (x86-64's byte
 * order): journals are read by other versions of shmguard (node agents and
 * CLIs during a rolling upgrade), and both writers must keep to them. */
Test(journal, records_keep_the_format_other_versions_read)
{
	static const unsigned char offload[2 * SG_JOURNAL_SLOT] = {
		0xbb, 0x12, 0x70, 0xd5, 0x0c, 0x73, 0x41, 0x59, 0x4d, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0xaf, 0x78, 0x5a, 0xd6, 0xfc, 0x8f, 0xec, 0x18, 0x02, 0x0b, 0x1d, 0x0d, 0x63, 0x68, 0x61, 0x74,
		0x00, 0x63, 0x6d, 0x70, 0x6c, 0x2d, 0x34, 0x32, 0x76, 0x6c, 0x6c, 0x6d, 0x5f, 0x6f, 0x66, 0x66,
		0x6c, 0x6f, 0x61, 0x64, 0x5f, 0x2e, 0x6d, 0x6d, 0x61, 0x70, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	};
	static const unsigned char lock[2 * SG_JOURNAL_SLOT] = {
		0xff, 0x98, 0x3a, 0xff, 0xaf, 0xa9, 0xdb, 0x53, 0x4e, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0xe8, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x02, 0x0a, 0xff, 0x72, 0x31, 0x73, 0x68,
		0x00, 0x6d, 0x5f, 0x6c, 0x6f, 0x63, 0x6b, 0x5f, 0x78, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	};
	const char *req = "chatcmpl-42", *name = "vllm_offload_chatcmpl-42.mmap";
	struct sg_journal_text t;

	if (__BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__)
		cr_skip_test("the bytes are little-endian ones");
	cr_assert_eq(sg_journal_rec_commit(rec(2), 77, 1795968667504769199ull, req, name), 2);
	cr_assert_arr_eq(rec(2), offload, sizeof(offload));
	cr_assert_eq(sg_journal_text_make(&t, req, strlen(req), name, strlen(name), 13), 2);
	sg_journal_text_commit(rec(4), 77, 1795968667504769199ull, &t);
	cr_assert_arr_eq(rec(4), offload, sizeof(offload));

	cr_assert_eq(sg_journal_rec_commit(rec(6), 78, 1000, "r1", "shm_lock_x"), 2);
	cr_assert_arr_eq(rec(6), lock, sizeof(lock));
	cr_assert_eq(sg_journal_text_make(&t, "r1", 2, "shm_lock_x", 10, SG_JOURNAL_REQ_AT_UNKNOWN), 2);
	sg_journal_text_commit(rec(8), 78, 1000, &t);
	cr_assert_arr_eq(rec(8), lock, sizeof(lock));
}

Test(journal, too_long_is_not_written)
{
	char over[SG_NAME_MAX + 2];

	memset(over, 'x', sizeof(over) - 1);
	over[sizeof(over) - 1] = '\0';
	cr_assert_eq(sg_journal_rec_commit(rec(2), 1, 1, over, "n"), -EINVAL);
	cr_assert_eq(sg_journal_rec_commit(rec(2), 1, 1, "r", over), -EINVAL);
	cr_assert_eq(rec(2)->seal, 0);
}

/* A record is committed by its seal, stored last: whatever a SIGKILL or a
 * concurrent rewrite leaves half-done is not read. */
Test(journal, torn_and_freed_records_are_ignored)
{
	struct seen s;

	for (int i = 0; i < NREC; i++)
		cr_assert_eq(sg_journal_rec_commit(rec(2 + 2 * i), 10 + i, 1, "req", "req_0_0"), 2);
	cr_assert_eq(parse(&s, sizeof(img)), NREC);

	rec(2)->seal = 0; /* killed before the seal */
	rec(4)->text[2] = 'X'; /* rewritten while read: new bytes, old seal */
	rec(6)->ino = 99;
	sg_journal_rec_free(rec(8));
	cr_assert_eq(parse(&s, sizeof(img)), 0);

	/* A file cut short: only whole records count. */
	fresh();
	cr_assert_eq(sg_journal_rec_commit(rec(2), 5, 1, "req", "req_0_0"), 2);
	cr_assert_eq(sg_journal_rec_commit(rec(4), 6, 1, "req", "req_0_1"), 2);
	cr_assert_eq(parse(&s, 6 * SG_JOURNAL_SLOT - 1), 1);
	cr_assert_eq(s.e[0].ino, 5);
}

/* The slots after a record's first start with a zero word, and a record
 * stays in one block: a reader never takes bytes of a name or request
 * (chosen by clients) for the start of a record. */
Test(journal, a_record_is_its_slots_and_no_more)
{
	char req[120];
	struct seen s;

	memset(req, 'q', sizeof(req) - 1);
	req[sizeof(req) - 1] = '\0';
	cr_assert_eq(sg_journal_rec_commit(rec(2), 5, 1, req, "n"), 5);
	cr_assert_eq(((struct sg_journal_cont *)img.slot[3])->zero, 0);
	cr_assert_eq(parse(&s, sizeof(img)), 1);
	((struct sg_journal_cont *)img.slot[4])->zero = 1;
	cr_assert_eq(parse(&s, sizeof(img)), 0, "a slot of it not zero-led");

	/* Across a block's end: not a record the writer makes. */
	fresh();
	cr_assert_eq(sg_journal_rec_commit(rec(SG_JOURNAL_BLOCK_SLOTS - 1), 6, 1, req, "n"), 5);
	cr_assert_eq(parse(&s, sizeof(img)), 0);

	/* Past the slots the header says are in use: not read. */
	fresh();
	cr_assert_eq(sg_journal_rec_commit(rec(SG_JOURNAL_BLOCK_SLOTS + 1), 7, 1, "r", "n"), 1);
	cr_assert_eq(parse(&s, sizeof(img)), 1);
	img.head.slots_used = SG_JOURNAL_BLOCK_SLOTS;
	cr_assert_eq(parse(&s, sizeof(img)), 0);
}

Test(journal, bad_headers_are_rejected)
{
	struct seen s;

	cr_assert_eq(parse(&s, sizeof(img.head) - 1), -EBADMSG, "short");
	img.head.pid = 4343; /* torn or edited: the seal no longer matches */
	cr_assert_eq(parse(&s, sizeof(img)), -EBADMSG);
	fresh();
	img.head.magic[0] = 'x';
	cr_assert_eq(parse(&s, sizeof(img)), -EBADMSG);
	fresh();
	memset(&img.head, 0, sizeof(img.head)); /* created, killed before the header */
	cr_assert_eq(parse(&s, sizeof(img)), -EBADMSG);
}

Test(journal, invalid_contents_are_rejected)
{
	struct seen s;

	/* Requests the shim never writes (shmguard's own rules)... */
	cr_assert_eq(sg_journal_rec_commit(rec(2), 1, 1, "..", "x"), 1);
	cr_assert_eq(sg_journal_rec_commit(rec(4), 2, 1, "a/b", "x"), 1);
	/* ...and a name with a NUL inside, sealed as it stands. */
	cr_assert_eq(sg_journal_rec_commit(rec(6), 3, 1, "ok", "abc"), 2);
	rec(6)->text[3] = '\0';
	rec(6)->seal = sg_journal_rec_seal(rec(6), 2);
	/* The control: an intact record beside them is read. */
	cr_assert_eq(sg_journal_rec_commit(rec(8), 4, 1, "ok", "ab"), 1);
	cr_assert_eq(parse(&s, sizeof(img)), 1);
	cr_assert_eq(s.e[0].ino, 4);
}

/* The reader, on real files. */
static char dir[] = "/tmp/sg-journal-XXXXXX";
static int dfd = -1;

static void make_dir(void)
{
	fresh();
	cr_assert(mkdtemp(dir));
	dfd = open(dir, O_RDONLY | O_DIRECTORY);
	cr_assert_geq(dfd, 0);
}

static void remove_dir(void)
{
	const char *names[] = {SG_JOURNAL_PREFIX "1", SG_JOURNAL_PREFIX "2", SG_JOURNAL_PREFIX "link", "other"};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		unlinkat(dfd, names[i], 0);
	close(dfd);
	rmdir(dir);
}

static void write_journal(const char *name, mode_t mode)
{
	int fd = openat(dfd, name, O_CREAT | O_EXCL | O_WRONLY, mode);

	cr_assert_geq(fd, 0);
	cr_assert_eq(fchmod(fd, mode), 0);
	cr_assert_eq(write(fd, &img, SG_JOURNAL_BLOCK), (ssize_t)SG_JOURNAL_BLOCK);
	close(fd);
}

TestSuite(journal_reader, .init = make_dir, .fini = remove_dir);

Test(journal_reader, the_newest_claim_of_the_owner_naming_the_file_wins)
{
	struct sg_journals js = {0};
	struct sg_tag tag;

	cr_assert_eq(sg_journal_rec_commit(rec(2), 7, 1000, "old", "seg_0_0"), 2);
	write_journal(SG_JOURNAL_PREFIX "1", 0644);
	fresh();
	sg_journal_head_init(&img.head, 5555, 99, 0, 1);
	cr_assert_eq(sg_journal_rec_commit(rec(2), 7, 3000, "new", "seg_0_0"), 2);
	write_journal(SG_JOURNAL_PREFIX "2", 0600);
	cr_assert_eq(sg_journals_add(&js, dfd, SG_JOURNAL_PREFIX "1"), SG_JOURNAL_READ);
	cr_assert_eq(sg_journals_add(&js, dfd, SG_JOURNAL_PREFIX "2"), SG_JOURNAL_READ);
	sg_journals_index(&js);
	cr_assert_eq(js.nfiles, 2);

	cr_assert(sg_journals_find(&js, 7, getuid(), "seg_0_0", 0, &tag));
	cr_assert_str_eq(tag.req, "new");
	cr_assert_eq(tag.pid, 5555);
	cr_assert_eq(tag.start_ticks, 99);
	cr_assert_eq(tag.created_ns, 3000);
	cr_assert(!sg_journals_find(&js, 7, getuid() + 1, "seg_0_0", 0, &tag), "another owner's file");
	cr_assert(!sg_journals_find(&js, 7, getuid(), "seg_0_1", 0, &tag), "another name");
	cr_assert(!sg_journals_find(&js, 8, getuid(), "seg_0_0", 0, &tag), "another inode");
	cr_assert(!sg_journals_find(&js, 7, getuid(), NULL, 0, &tag), "no name and no birth time");
	/* A file born after a claim is a later file with a recycled inode number. */
	cr_assert(sg_journals_find(&js, 7, getuid(), "seg_0_0", 2000, &tag));
	cr_assert_str_eq(tag.req, "new");
	cr_assert(sg_journals_find(&js, 7, getuid(), NULL, 2000, &tag), "unlinked, with a birth time");
	cr_assert(sg_journals_find(&js, 7, getuid(), "seg_0_0", 1000 + 20000000ull + 2000, &tag));
	cr_assert(!sg_journals_find(&js, 7, getuid(), "seg_0_0", 3000 + 20000000ull + 1, &tag), "born after");
	sg_journals_free(&js);
}

Test(journal_reader, journals_others_could_write_are_not_read)
{
	struct sg_journals js = {0};

	cr_assert_eq(sg_journal_rec_commit(rec(2), 7, 1000, "r", "seg_0_0"), 2);
	write_journal(SG_JOURNAL_PREFIX "1", 0666);
	write_journal(SG_JOURNAL_PREFIX "2", 0620);
	write_journal("other", 0644);
	cr_assert_eq(symlinkat("other", dfd, SG_JOURNAL_PREFIX "link"), 0);
	cr_assert_eq(sg_journals_add(&js, dfd, SG_JOURNAL_PREFIX "1"), SG_JOURNAL_FOREIGN);
	cr_assert_eq(sg_journals_add(&js, dfd, SG_JOURNAL_PREFIX "2"), SG_JOURNAL_FOREIGN);
	cr_assert_eq(sg_journals_add(&js, dfd, SG_JOURNAL_PREFIX "link"), SG_JOURNAL_FOREIGN);
	cr_assert_eq(js.nfiles, 0, "world- or group-writable, or a symlink");
	/* A second name: someone else may have linked it. */
	unlinkat(dfd, SG_JOURNAL_PREFIX "link", 0);
	cr_assert_eq(linkat(dfd, "other", dfd, SG_JOURNAL_PREFIX "link", 0), 0);
	cr_assert_eq(sg_journals_add(&js, dfd, SG_JOURNAL_PREFIX "link"), SG_JOURNAL_FOREIGN);
	cr_assert_eq(js.nfiles, 0, "a journal with two links");
	sg_journals_free(&js);
}

Test(journal_reader, the_name_says_whether_it_is_a_journal)
{
	cr_assert(sg_journal_name(SG_JOURNAL_PREFIX "42-0"));
	cr_assert(!sg_journal_name("shmguard-journal-42-0"));
	cr_assert(!sg_journal_name("x" SG_JOURNAL_PREFIX));
}
