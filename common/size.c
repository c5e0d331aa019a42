#include "size.h"

#include <ctype.h>
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
		return -1;
	if (*end) {
		for (u = units; *u && toupper((unsigned char)*end) != *u; u++)
			scale *= 1024;
		if (!*u)
			return -1;
		end++;
		if (*u != 'B' && (strcasecmp(end, "iB") == 0 || strcasecmp(end, "B") == 0))
			end += strlen(end);
		if (*end)
			return -1;
	}
	v *= scale;
	if (v >= 18446744073709551616.0) /* 2^64 */
		return -1;
	*out = (uint64_t)v;
	return 0;
}
