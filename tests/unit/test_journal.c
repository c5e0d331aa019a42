/* The ownership journal's format: records read back, torn or forged ones
 * ignored, and the reader's rules of trust. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "journal.h"

#define NREC 4

struct image {
	struct sg_journal_head head;
	struct sg_journal_rec rec[NREC];
};

static struct image img;

static void fresh(void)
{
	memset(&img, 0, sizeof(img));
	sg_journal_head_init(&img.head, 4242, 123456, 4026531836ull, 1795968667000000000ull);
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
	char longest[SG_NAME_MAX + 1];

	memset(longest, 'r', SG_NAME_MAX);
	longest[SG_NAME_MAX] = '\0';
	cr_assert_eq(sg_journal_rec_commit(&img.rec[0], 77, 1000, "chatcmpl-42", "chatcmpl-42_0_1"), 0);
	cr_assert_eq(sg_journal_rec_commit(&img.rec[2], 78, 2000, longest, longest), 0);
	cr_assert_eq(sg_journal_parse(&img, sizeof(img), &head, collect, &s), 2);
	cr_assert_eq(head.pid, 4242);
	cr_assert_eq(head.start_ticks, 123456);
	cr_assert_eq(head.pidns, 4026531836ull);
	cr_assert_eq(s.e[0].ino, 77);
	cr_assert_eq(s.e[0].created, 1000);
	cr_assert_str_eq(s.e[0].req, "chatcmpl-42");
	cr_assert_str_eq(s.e[0].name, "chatcmpl-42_0_1");
	cr_assert_str_eq(s.e[1].req, longest);
	cr_assert_str_eq(s.e[1].name, longest);
}

Test(journal, too_long_is_not_written)
{
	char over[SG_NAME_MAX + 2];

	memset(over, 'x', sizeof(over) - 1);
	over[sizeof(over) - 1] = '\0';
	cr_assert_eq(sg_journal_rec_commit(&img.rec[0], 1, 1, over, "n"), -1);
	cr_assert_eq(sg_journal_rec_commit(&img.rec[0], 1, 1, "r", over), -1);
	cr_assert_eq(img.rec[0].seal, 0);
}

/* A record is committed by its seal, stored last: whatever a SIGKILL or a
 * concurrent rewrite leaves half-done is not read. */
Test(journal, torn_and_freed_records_are_ignored)
{
	struct seen s;

	for (int i = 0; i < NREC; i++)
		cr_assert_eq(sg_journal_rec_commit(&img.rec[i], 10 + i, 1, "req", "req_0_0"), 0);
	cr_assert_eq(parse(&s, sizeof(img)), NREC);

	img.rec[0].seal = 0; /* killed before the seal */
	img.rec[1].name[3] = 'X'; /* rewritten while read: new bytes, old seal */
	img.rec[2].ino = 99;
	sg_journal_rec_free(&img.rec[3]);
	cr_assert_eq(parse(&s, sizeof(img)), 0);

	/* A file cut short: only whole records count. */
	fresh();
	cr_assert_eq(sg_journal_rec_commit(&img.rec[0], 5, 1, "req", "req_0_0"), 0);
	cr_assert_eq(sg_journal_rec_commit(&img.rec[1], 6, 1, "req", "req_0_1"), 0);
	cr_assert_eq(parse(&s, sizeof(img.head) + sizeof(img.rec[0]) + sizeof(img.rec[1]) - 1), 1);
	cr_assert_eq(s.e[0].ino, 5);
}

Test(journal, bad_headers_are_rejected)
{
	struct seen s;

	cr_assert_eq(parse(&s, sizeof(img.head) - 1), -1, "short");
	img.head.pid = 4343; /* torn or edited: the seal no longer matches */
	cr_assert_eq(parse(&s, sizeof(img)), -1);
	fresh();
	img.head.magic[0] = 'x';
	cr_assert_eq(parse(&s, sizeof(img)), -1);
	fresh();
	memset(&img.head, 0, sizeof(img.head)); /* created, killed before the header */
	cr_assert_eq(parse(&s, sizeof(img)), -1);
}

Test(journal, invalid_contents_are_rejected)
{
	struct seen s;

	/* Requests the shim never writes (shmguard's own rules)... */
	cr_assert_eq(sg_journal_rec_commit(&img.rec[0], 1, 1, "..", "x"), 0);
	cr_assert_eq(sg_journal_rec_commit(&img.rec[1], 2, 1, "a/b", "x"), 0);
	/* ...and a name with a NUL inside, sealed as it stands. */
	cr_assert_eq(sg_journal_rec_commit(&img.rec[2], 3, 1, "ok", "ab"), 0);
	img.rec[2].name[0] = '\0';
	img.rec[2].seal = sg_journal_rec_seal(&img.rec[2]);
	/* The control: an intact record beside them is read. */
	cr_assert_eq(sg_journal_rec_commit(&img.rec[3], 4, 1, "ok", "ab"), 0);
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
	cr_assert_eq(write(fd, &img, sizeof(img)), (ssize_t)sizeof(img));
	close(fd);
}

TestSuite(journal_reader, .init = make_dir, .fini = remove_dir);

Test(journal_reader, the_newest_claim_of_the_owner_naming_the_file_wins)
{
	struct sg_journals js = {0};
	struct sg_tag tag;

	cr_assert_eq(sg_journal_rec_commit(&img.rec[0], 7, 1000, "old", "seg_0_0"), 0);
	write_journal(SG_JOURNAL_PREFIX "1", 0644);
	fresh();
	sg_journal_head_init(&img.head, 5555, 99, 0, 1);
	cr_assert_eq(sg_journal_rec_commit(&img.rec[0], 7, 3000, "new", "seg_0_0"), 0);
	write_journal(SG_JOURNAL_PREFIX "2", 0600);
	cr_assert_eq(sg_journals_add(&js, dfd, SG_JOURNAL_PREFIX "1"), 0);
	cr_assert_eq(sg_journals_add(&js, dfd, SG_JOURNAL_PREFIX "2"), 0);
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

	cr_assert_eq(sg_journal_rec_commit(&img.rec[0], 7, 1000, "r", "seg_0_0"), 0);
	write_journal(SG_JOURNAL_PREFIX "1", 0666);
	write_journal(SG_JOURNAL_PREFIX "2", 0620);
	write_journal("other", 0644);
	cr_assert_eq(symlinkat("other", dfd, SG_JOURNAL_PREFIX "link"), 0);
	cr_assert_eq(sg_journals_add(&js, dfd, SG_JOURNAL_PREFIX "1"), 0);
	cr_assert_eq(sg_journals_add(&js, dfd, SG_JOURNAL_PREFIX "2"), 0);
	cr_assert_eq(sg_journals_add(&js, dfd, SG_JOURNAL_PREFIX "link"), 0);
	cr_assert_eq(js.nfiles, 0, "world- or group-writable, or a symlink");
	/* A second name: someone else may have linked it. */
	unlinkat(dfd, SG_JOURNAL_PREFIX "link", 0);
	cr_assert_eq(linkat(dfd, "other", dfd, SG_JOURNAL_PREFIX "link", 0), 0);
	cr_assert_eq(sg_journals_add(&js, dfd, SG_JOURNAL_PREFIX "link"), 0);
	cr_assert_eq(js.nfiles, 0, "a journal with two links");
	sg_journals_free(&js);
}

Test(journal_reader, the_name_says_whether_it_is_a_journal)
{
	cr_assert(sg_journal_name(SG_JOURNAL_PREFIX "42-0"));
	cr_assert(!sg_journal_name("shmguard-journal-42-0"));
	cr_assert(!sg_journal_name("x" SG_JOURNAL_PREFIX));
}
