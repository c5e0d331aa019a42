#include "size.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
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

const char *sg_human_bytes(uint64_t bytes, char *buf, size_t len)
{
	static const char *units[] = {"KiB", "MiB", "GiB", "TiB"};
	double v = (double)bytes;
	unsigned u = 0;

	if (bytes < 1024) {
		snprintf(buf, len, "%llu B", (unsigned long long)bytes);
		return buf;
	}
	for (v /= 1024; v >= 1024 && u < 3; v /= 1024)
		u++;
	snprintf(buf, len, "%.1f %s", v, units[u]);
	return buf;
}
