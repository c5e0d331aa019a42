/* CRI container log lines made whole (cli/cri_log.c): prefixes removed,
 * partial lines joined per stream; a server's records of several lines
 * joined per stream (cli/log_record.c); and every bound. */
#include <criterion/criterion.h>
#include <string.h>

#include "cri_log.h"
#include "log_record.h"

#define TS "2026-12-01T20:00:00.123456789Z"

static char out[4096];

/* Each line passed, followed by '|' (stderr's after "e:"). */
static void collect(const char *line, size_t len, enum log_stream st, void *ctx)
{
	(void)ctx;
	if (st == LOG_STDERR)
		strcat(out, "e:");
	strncat(out, line, len);
	strcat(out, "|");
}

/* Feeds each of the n lines and returns what came out. */
static const char *feed(struct cri_log *c, const char *const *lines, size_t n)
{
	out[0] = '\0';
	for (size_t i = 0; i < n; i++)
		cr_assert_eq(cri_log_line(c, lines[i], strlen(lines[i]), collect, NULL), 0);
	return out;
}

#define FEED(c, ...) feed(c, (const char *const[]){__VA_ARGS__}, sizeof((const char *const[]){__VA_ARGS__}) / sizeof(char *))

Test(cri_log, full_lines_lose_their_prefix)
{
	struct cri_log c;

	cri_log_init(&c, 64);
	cr_expect_str_eq(FEED(&c, TS " stdout F abort id=a1", TS " stderr F  two  spaces ", "2026-12-01T20:00:00+01:00 stdout F:x tagged",
			      TS " stdout F ", TS " stdout F"),
			 "abort id=a1|e: two  spaces |tagged|||");
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
			 "e:other line|abort id=a2|");
	/* A part alone is never a line. */
	cr_expect_str_eq(FEED(&c, TS " stdout P abort id=a3"), "");
	cr_expect_str_eq(FEED(&c, TS " stdout F x"), "abort id=a3x|");
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
	cr_expect_eq(cri_log_line(&c, "2026\0-12 stdout F x", 19, collect, NULL), 0);
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
			 "e:abcd|");
	cr_expect_eq(c.overlong, 3);
	cri_log_free(&c);
}

/* Records: a line ending in "\r" goes on in its stream's next line. */
static void collect_record(const char *rec, size_t len, void *ctx)
{
	(void)ctx;
	strncat(out, rec, len);
	strcat(out, "|");
}

/* Feeds each line (a stream's number, then the line) to r. */
static const char *records(struct log_records *r, const char *const *lines, size_t n)
{
	out[0] = '\0';
	for (size_t i = 0; i + 1 < n; i += 2)
		cr_assert_eq(log_records_line(r, lines[i][0] == 'e' ? LOG_STDERR : LOG_STDOUT, lines[i + 1],
					      strlen(lines[i + 1]), collect_record, NULL),
			     0);
	return out;
}

#define RECORDS(r, ...)                                                                                            \
	records(r, (const char *const[]){__VA_ARGS__}, sizeof((const char *const[]){__VA_ARGS__}) / sizeof(char *))

Test(log_records, lines_ending_in_cr_are_joined_per_stream)
{
	struct log_records r;

	log_records_init(&r, 64, true);
	/* stderr's lines between stdout's belong to stderr's records. */
	cr_expect_str_eq(RECORDS(&r, "o", "a\r", "e", "x\r", "o", "b\r", "e", "y", "o", "c", "o", "d"),
			 "x\r\ny|a\r\nb\r\nc|d|");
	/* A line that is only "\r" goes on too; a record still open is no
	 * record. */
	cr_expect_str_eq(RECORDS(&r, "o", "\r", "o", "z", "o", "open\r"), "\r\nz|");
	cr_expect_str_eq(RECORDS(&r, "o", "end"), "open\r\nend|");
	cr_expect_eq(r.overlong, 0);
	log_records_free(&r);
}

/* A record longer than the bound is dropped whole, never cut. */
Test(log_records, a_record_longer_than_the_bound_is_dropped_whole)
{
	struct log_records r;

	log_records_init(&r, 16, true);
	/* Exactly the bound, its joining newline counted. */
	cr_expect_str_eq(RECORDS(&r, "o", "0123456\r", "o", "789abcd"), "0123456\r\n789abcd|");
	cr_expect_str_eq(RECORDS(&r, "o", "0123456\r", "o", "789abcde", "o", "next"), "next|");
	cr_expect_eq(r.overlong, 1);
	/* Its tail is not taken for a record; the other stream goes on. */
	cr_expect_str_eq(RECORDS(&r, "o", "0123456789abcdefgh\r", "e", "a\r", "o", "tail", "e", "b"), "a\r\nb|");
	cr_expect_eq(r.overlong, 2);
	log_records_free(&r);
}

/* Without joining, each line is a record, its final "\r" taken off. */
Test(log_records, without_joining_each_line_is_a_record)
{
	struct log_records r;

	log_records_init(&r, 16, false);
	cr_expect_str_eq(RECORDS(&r, "o", "a\r", "o", "b", "e", "c\r\r"), "a|b|c\r|");
	log_records_free(&r);
}
