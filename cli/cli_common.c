/* What the subcommands share: finding the shim, reading --root options. */
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "cli.h"
#include "config.h"

static int usable(const char *candidate, char *out)
{
	return access(candidate, R_OK) == 0 && realpath(candidate, out) ? 0 : -1;
}

int cli_find_shim(const char *given, char *out)
{
	char exe[PATH_MAX], candidate[PATH_MAX + 32];
	ssize_t n;

	if (given)
		return realpath(given, out) ? 0 : -1;
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = '\0';
		snprintf(candidate, sizeof(candidate), "%s/../shim/" SG_SHIM_NAME, dirname(exe));
		if (usable(candidate, out) == 0)
			return 0;
	}
	snprintf(candidate, sizeof(candidate), "%s/" SG_SHIM_NAME, SHMGUARD_LIBDIR);
	return usable(candidate, out);
}

int cli_add_root(const char *sub, const char *dir, const char **roots, unsigned *n)
{
	static char norm[SG_MAX_ROOTS][SG_PATH_MAX + 1];
	const char *why = *n < SG_MAX_ROOTS ? sg_config_check_dir(dir, norm[*n]) : "more than 8 roots";

	if (why)
		return cli_fail(-1, sub, "bad root '%s': %s", dir, why);
	roots[*n] = norm[*n];
	(*n)++;
	return 0;
}

void cli_default_root(const char **roots, unsigned *n)
{
	if (!*n)
		roots[(*n)++] = SG_DEFAULT_ROOT;
}
