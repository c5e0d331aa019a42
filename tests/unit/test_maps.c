#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "maps.h"

Test(maps, parses_every_field)
{
	struct sg_map m;

	cr_assert(sg_map_parse("7f12a0000000-7f12a0201000 rw-s 00003000 00:1a 123456789   /dev/shm/req-1_0", &m));
	cr_expect_eq(m.start, 0x7f12a0000000ull);
	cr_expect_eq(m.end, 0x7f12a0201000ull);
	cr_expect_eq(m.offset, 0x3000ull);
	cr_expect_eq(m.major, 0);
	cr_expect_eq(m.minor, 0x1a);
	cr_expect_eq(m.ino, 123456789ull);
	cr_expect_str_eq(m.path, "/dev/shm/req-1_0");
	cr_expect_eq(m.path_len, strlen("/dev/shm/req-1_0"));
	cr_expect(!m.deleted);
}

Test(maps, hex_device_numbers)
{
	struct sg_map m;

	cr_assert(sg_map_parse("1000-2000 r--p 00000000 fd:1f 42 /lib/x.so", &m));
	cr_expect_eq(m.major, 0xfd);
	cr_expect_eq(m.minor, 0x1f);
}

Test(maps, anonymous_mapping_has_no_path)
{
	struct sg_map m;

	cr_assert(sg_map_parse("1000-2000 rw-p 00000000 00:00 0 ", &m));
	cr_expect_eq(m.ino, 0);
	cr_expect_str_eq(m.path, "");
	cr_assert(sg_map_parse("1000-2000 rw-p 00000000 00:00 0", &m), "no blank after the inode");
	cr_expect_str_eq(m.path, "");
	cr_assert(sg_map_parse("1000-2000 rw-p 00000000 00:00 0                          [heap]", &m));
	cr_expect_str_eq(m.path, "[heap]");
}

Test(maps, path_with_spaces_and_deleted)
{
	struct sg_map m;

	cr_assert(sg_map_parse("1000-2000 rw-s 00000000 00:1a 7 /dev/shm/a b  c (deleted)", &m));
	cr_expect(m.deleted);
	cr_expect_eq(m.path_len, strlen("/dev/shm/a b  c"));
	cr_expect_eq(strncmp(m.path, "/dev/shm/a b  c", m.path_len), 0);

	cr_assert(sg_map_parse("1000-2000 rw-s 00000000 00:1a 7 /dev/shm/x (deleted) y", &m));
	cr_expect(!m.deleted, "only a trailing \" (deleted)\" says so");
	cr_assert(sg_map_parse("1000-2000 rw-s 00000000 00:1a 7  (deleted)", &m));
	cr_expect(!m.deleted, "a name that is nothing but the suffix");
}

Test(maps, rejects_what_is_not_a_line)
{
	struct sg_map m;

	cr_expect(!sg_map_parse("", &m));
	cr_expect(!sg_map_parse("garbage", &m));
	cr_expect(!sg_map_parse("1000 2000 rw-p 00000000 00:00 0", &m));
	cr_expect(!sg_map_parse("1000-2000 rw-p 00000000 00-00 0", &m));
	cr_expect(!sg_map_parse("1000-2000 rw-p 00000000 00:00 x", &m));
	cr_expect(!sg_map_parse("1000-2000 rw-p 00000000 00:00 12x /a", &m));
	cr_expect(!sg_map_parse("1000-2000", &m));
}

Test(maps, proc_path_len)
{
	bool deleted;

	cr_expect_eq(sg_proc_path_len("/dev/shm/a (deleted)", 20, &deleted), 10);
	cr_expect(deleted);
	cr_expect_eq(sg_proc_path_len("/dev/shm/a", 10, &deleted), 10);
	cr_expect(!deleted);
}

struct seen {
	unsigned n, stop_after;
	uint64_t ino[8];
};

static bool note(const struct sg_map *m, void *ctx)
{
	struct seen *s = ctx;

	if (s->n < 8)
		s->ino[s->n] = m->ino;
	return ++s->n != s->stop_after;
}

/* Reads text through a pipe, with a buffer of size bytes. */
static size_t read_text(const char *text, size_t size, struct seen *s)
{
	char buf[256];
	int p[2];
	size_t lines;

	cr_assert_leq(size, sizeof(buf));
	cr_assert_eq(pipe(p), 0);
	cr_assert_eq(write(p[1], text, strlen(text)), (ssize_t)strlen(text));
	close(p[1]);
	lines = sg_maps_read(p[0], buf, size, note, s);
	close(p[0]);
	return lines;
}

Test(maps, reads_every_line)
{
	struct seen s = {0};
	size_t lines = read_text("1000-2000 r--p 00000000 00:1a 1 /a\n"
				 "not a maps line\n"
				 "2000-3000 r--p 00000000 00:1a 2 /b c\n",
				 64, &s);

	cr_expect_eq(lines, 3);
	cr_assert_eq(s.n, 2);
	cr_expect_eq(s.ino[0], 1);
	cr_expect_eq(s.ino[1], 2);
}

Test(maps, stops_when_told)
{
	struct seen s = {.stop_after = 1};

	read_text("1000-2000 r--p 00000000 00:1a 1 /a\n2000-3000 r--p 00000000 00:1a 2 /b\n", 64, &s);
	cr_expect_eq(s.n, 1);
}

Test(maps, an_over_long_line_is_passed_over_whole)
{
	struct seen s = {0};
	char text[512];

	/* The second line does not fit 64 bytes: a pipe's reads fill the
	 * buffer, so its first 63 bytes come in whole, and the rest, which
	 * looks like a line of its own, must not be taken for one. */
	snprintf(text, sizeof(text),
		 "1000-2000 r--p 00000000 00:1a 1 /a\n"
		 "2000-3000 r--p 00000000 00:1a 2 /%s3000-4000 r--p 00000000 00:1a 99 /fake\n"
		 "4000-5000 r--p 00000000 00:1a 3 /c\n",
		 "012345678901234567890123456789");
	size_t lines = read_text(text, 64, &s);

	cr_expect_eq(lines, 3);
	cr_assert_eq(s.n, 2);
	cr_expect_eq(s.ino[0], 1);
	cr_expect_eq(s.ino[1], 3);
}
