#include <criterion/criterion.h>

#include "size.h"

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
		cr_expect_eq(sg_parse_size(bad[i], &v), -1, "'%s' was accepted", bad[i]);
}
