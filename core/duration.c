#include "core.h"
#include "duration.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <string.h>

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
