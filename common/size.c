#include "size.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int sg_parse_size(const char *s, uint64_t *out)
{
	static const char units[] = "BKMGT";
	char *end;
	double v, scale = 1;
	const char *u;

	/* Digits and a point only: strtod alone would take "-1", " 1", "inf",
	 * "0x10", "1e3". */
	size_t digits = strspn(s, "0123456789.");

	v = strtod(s, &end);
	if (!digits || end != s + digits || !isfinite(v))
		return -EINVAL;
	if (*end) {
		for (u = units; *u && toupper((unsigned char)*end) != *u; u++)
			scale *= 1024;
		if (!*u)
			return -EINVAL;
		end++;
		if (*u != 'B' && (strcasecmp(end, "iB") == 0 || strcasecmp(end, "B") == 0))
			end += strlen(end);
		if (*end)
			return -EINVAL;
	}
	v *= scale;
	if (v >= 18446744073709551616.0) /* 2^64 */
		return -EINVAL;
	*out = (uint64_t)v;
	return 0;
}

int sg_parse_duration(const char *s, double *out)
{
	static const struct {
		const char *name;
		double seconds;
	} units[] = {{"", 1}, {"s", 1}, {"ms", 0.001}, {"m", 60}, {"h", 3600}, {"d", 86400}};
	double v = 0, scale = 1;
	bool digits = false, point = false;

	/* By hand, not strtod: the program's locale may want a comma. */
	for (; (*s >= '0' && *s <= '9') || (*s == '.' && !point); s++) {
		if (*s == '.') {
			point = true;
			continue;
		}
		digits = true;
		if (point)
			v += (*s - '0') * (scale /= 10);
		else
			v = v * 10 + (*s - '0');
	}
	if (!digits || !isfinite(v))
		return -EINVAL;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (strcmp(s, units[i].name) == 0) {
			*out = v * units[i].seconds;
			return isfinite(*out) ? 0 : -EINVAL;
		}
	return -EINVAL;
}
