#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "tag.h"

Test(tag, round_trip)
{
	struct sg_tag in = {.pid = 4242, .start_ticks = 123456789, .created_ns = 1795968667504769199ull}, out;
	char buf[SG_TAG_MAX];
	int n;

	strcpy(in.req, "chatcmpl-42 with spaces=and=equals");
	n = sg_tag_encode(&in, buf, sizeof(buf));
	cr_assert_gt(n, 0);
	cr_assert_eq(sg_tag_decode(&out, buf, (size_t)n), 0);
	cr_assert_eq(out.pid, 4242);
	cr_assert_eq(out.start_ticks, 123456789);
	cr_assert_eq(out.created_ns, 1795968667504769199ull);
	cr_assert_str_eq(out.req, in.req);
}

Test(tag, longest_request_fits)
{
	struct sg_tag in = {.pid = 2147483647, .start_ticks = UINT64_MAX, .created_ns = UINT64_MAX}, out;
	char buf[SG_TAG_MAX];
	int n;

	memset(in.req, 'r', SG_NAME_MAX);
	in.req[SG_NAME_MAX] = '\0';
	n = sg_tag_encode(&in, buf, sizeof(buf));
	cr_assert_gt(n, 0);
	cr_assert_eq(sg_tag_decode(&out, buf, (size_t)n), 0);
	cr_assert_str_eq(out.req, in.req);
}

/* The encoder writes digits two at a time: every length and both kinds of
 * last digit, against snprintf's text. */
Test(tag, numbers_written_exactly)
{
	static const uint64_t values[] = {0, 7, 10, 42, 99, 100, 101, 999, 1000, 65536, 10000000000000000000ull, UINT64_MAX};

	for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
		struct sg_tag in = {.pid = 1, .start_ticks = values[i], .created_ns = values[i]};
		char buf[SG_TAG_MAX + 1], want[SG_TAG_MAX + 1];
		int n;

		strcpy(in.req, "r");
		n = sg_tag_encode(&in, buf, sizeof(buf) - 1);
		cr_assert_gt(n, 0);
		buf[n] = '\0';
		snprintf(want, sizeof(want), "shmguard/1 pid=1 start=%llu created=%llu req=r", (unsigned long long)values[i],
			 (unsigned long long)values[i]);
		cr_assert_str_eq(buf, want);
	}
}

static void rejected(const char *text)
{
	struct sg_tag out;
	cr_assert_eq(sg_tag_decode(&out, text, strlen(text)), -EINVAL, "'%s' should be rejected", text);
}

Test(tag, malformed_values_are_rejected)
{
	rejected("");
	rejected("shmguard/2 pid=1 start=1 created=1 req=a");
	rejected("shmguard/1 pid=0 start=1 created=1 req=a");
	rejected("shmguard/1 pid=2147483648 start=1 created=1 req=a");
	rejected("shmguard/1 pid=1 start=18446744073709551616 created=1 req=a");
	rejected("shmguard/1 pid=1 start=1 created=1 req=");
	rejected("shmguard/1 pid=1 start=1 created=1 req=a/b");
	rejected("shmguard/1 pid=1 start=1 created=1 req=..");
	rejected("shmguard/1 pid=1 start=x created=1 req=a");
	rejected("shmguard/1 pid=1 created=1 start=1 req=a");
	rejected("shmguard/1 pid=1  start=1 created=1 req=a");
}

Test(tag, embedded_nul_is_rejected)
{
	struct sg_tag out;
	const char text[] = "shmguard/1 pid=1 start=1 created=1 req=a\0b";
	cr_assert_eq(sg_tag_decode(&out, text, sizeof(text) - 1), -EINVAL);
}
