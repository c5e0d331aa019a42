/* CRI container log lines made whole (cli/cri_log.c): prefixes removed,
 * partial lines joined per stream, and every bound. */
#include <criterion/criterion.h>
#include <string.h>

#include "cri_log.h"

#define TS "2026-12-01T20:00:00.123456789Z"

static char out[4096];

/* Each line passed, followed by '|'. */
static void collect(const char *line, size_t len, bool continued, void *ctx)
{
	(void)ctx;
	if (continued)
		strcat(out, "+");
	strncat(out, line, len);
	strcat(out, "|");
}

/* Feeds each of the n lines and returns what came out. */
static const char *feed(struct cri_log *c, const char *const *lines, size_t n)
{
	out[0] = '\0';
	for (size_t i = 0; i < n; i++)
		cr_assert_eq(cri_log_line(c, lines[i], strlen(lines[i]), false, collect, NULL), 0);
	return out;
}

#define FEED(c, ...) feed(c, (const char *const[]){__VA_ARGS__}, sizeof((const char *const[]){__VA_ARGS__}) / sizeof(char *))

Test(cri_log, full_lines_lose_their_prefix)
{
	struct cri_log c;

	cri_log_init(&c, 64);
	cr_expect_str_eq(FEED(&c, TS " stdout F abort id=a1", TS " stderr F  two  spaces ", "2026-12-01T20:00:00+01:00 stdout F:x tagged",
			      TS " stdout F ", TS " stdout F"),
			 "abort id=a1| two  spaces |tagged|||");
	cr_expect_eq(c.malformed, 0);
	cri_log_free(&c);
}

Test(cri_log, partial_lines_are_joined_per_stream)
{
	struct cri_log c;

	cri_log_init(&c, 64);
	/* stdout's and stderr's parts interleave; each is joined on its own. */
	cr_expect_str_eq(FEED(&c, TS " stdout P abort ", TS " stderr P other ", TS " stdout P id=", TS " stderr F line",
			      TS " stdout F a2"),
			 "other line|abort id=a2|");
	/* A part alone is never a line. */
	cr_expect_str_eq(FEED(&c, TS " stdout P abort id=a3"), "");
	cr_expect_str_eq(FEED(&c, TS " stdout F x"), "abort id=a3x|");
	cri_log_free(&c);
}

/* A joined line is continued ("\r\n" before it) as its first part was. */
Test(cri_log, a_joined_line_is_continued_as_its_first_part)
{
	struct cri_log c;

	cri_log_init(&c, 64);
	out[0] = '\0';
	cr_assert_eq(cri_log_line(&c, TS " stdout P ab", strlen(TS " stdout P ab"), true, collect, NULL), 0);
	cr_assert_eq(cri_log_line(&c, TS " stdout F cd", strlen(TS " stdout F cd"), false, collect, NULL), 0);
	cr_assert_eq(cri_log_line(&c, TS " stdout F ef", strlen(TS " stdout F ef"), true, collect, NULL), 0);
	cr_expect_str_eq(out, "+abcd|+ef|");
	cri_log_free(&c);
}

Test(cri_log, lines_without_the_prefix_are_dropped_and_counted)
{
	struct cri_log c;

	cri_log_init(&c, 64);
	cr_expect_str_eq(FEED(&c, "abort id=plain", "now stdout F abort id=badtime", TS " stdin F abort id=badstream",
			      TS " stdout X abort id=badtag", TS " stdout FP abort id=badtag2", TS, TS " stdout",
			      TS " stdout F ok"),
			 "ok|");
	cr_expect_eq(c.malformed, 7);
	/* A NUL in the timestamp. */
	cr_expect_eq(cri_log_line(&c, "2026\0-12 stdout F x", 19, false, collect, NULL), 0);
	cr_expect_eq(c.malformed, 8);
	cri_log_free(&c);
}

/* A chain of parts longer than the bound is dropped whole up to its F
 * line, never cut into a line that would match; the next line is whole. */
Test(cri_log, a_chain_longer_than_the_bound_is_dropped_whole)
{
	struct cri_log c;

	cri_log_init(&c, 16);
	cr_expect_str_eq(FEED(&c, TS " stdout P abort id=", TS " stdout P 0123456789", TS " stdout P abort id=x",
			      TS " stdout F abort id=y", TS " stdout F abort id=z"),
			 "abort id=z|");
	cr_expect_eq(c.overlong, 1);
	/* Exactly the bound passes; one byte more does not. */
	cr_expect_str_eq(FEED(&c, TS " stdout P 01234567", TS " stdout F 89abcdef"), "0123456789abcdef|");
	cr_expect_str_eq(FEED(&c, TS " stdout P 01234567", TS " stdout F 89abcdefg", TS " stdout F next"), "next|");
	cr_expect_eq(c.overlong, 2);
	/* A whole line in one F record is passed as the file's reader bounds it. */
	cr_expect_str_eq(FEED(&c, TS " stdout F 0123456789abcdefghij"), "0123456789abcdefghij|");
	/* The other stream is not held up by one that overflows. */
	cr_expect_str_eq(FEED(&c, TS " stdout P 0123456789", TS " stdout P 0123456789", TS " stderr P ab",
			      TS " stderr F cd", TS " stdout F end"),
			 "abcd|");
	cr_expect_eq(c.overlong, 3);
	cri_log_free(&c);
}
