#include <criterion/criterion.h>
#include <errno.h>

#include "size.h"
#include "duration.h"

static uint64_t parsed(const char *s)
{
	uint64_t v = 0;

	cr_assert_eq(sg_parse_size(s, &v), 0, "'%s' was refused", s);
	return v;
}

Test(size, units_are_powers_of_1024)
{
	cr_expect_eq(parsed("0"), 0);
	cr_expect_eq(parsed("4096"), 4096);
	cr_expect_eq(parsed("100B"), 100);
	cr_expect_eq(parsed("512M"), 512ull << 20);
	cr_expect_eq(parsed("512m"), 512ull << 20);
	cr_expect_eq(parsed("2G"), 2ull << 30);
	cr_expect_eq(parsed("2GB"), 2ull << 30);
	cr_expect_eq(parsed("1.5GiB"), 3ull << 29);
	cr_expect_eq(parsed("64k"), 64ull << 10);
	cr_expect_eq(parsed("1T"), 1ull << 40);
	cr_expect_eq(parsed(".5K"), 512);
}

Test(size, refuses_what_is_not_a_size)
{
	const char *bad[] = {"", "-1", " 1", "M", "1X", "1MiBs", "1 M", "1BiB", "inf", "nan", "0x10", "1e3", "20000000T"};
	uint64_t v;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_expect_eq(sg_parse_size(bad[i], &v), -EINVAL, "'%s' was accepted", bad[i]);
}

static double seconds(const char *s)
{
	double v = -1;

	cr_assert_eq(sg_parse_duration(s, &v), 0, "'%s' was refused", s);
	return v;
}

Test(duration, units)
{
	cr_expect_eq(seconds("0"), 0);
	cr_expect_eq(seconds("90"), 90);
	cr_expect_eq(seconds("2.5"), 2.5);
	cr_expect_eq(seconds(".5"), 0.5);
	cr_expect_eq(seconds("30s"), 30);
	cr_expect_eq(seconds("250ms"), 0.25);
	cr_expect_eq(seconds("10m"), 600);
	cr_expect_eq(seconds("1.5h"), 5400);
	cr_expect_eq(seconds("1d"), 86400);
}

Test(duration, refuses_what_is_not_a_duration)
{
	const char *bad[] = {"", "-1", " 1", "1 ", "s", "1x", "1S", "1mm", "1sec", "1.2.3", "inf", "nan", "0x10",
			     "1e3", "1,5", "+1", ".", "1.5 h"};
	double v;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_expect_eq(sg_parse_duration(bad[i], &v), -EINVAL, "'%s' was accepted", bad[i]);
}
