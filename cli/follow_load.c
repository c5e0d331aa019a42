/* shmguard abort --follow: loads its module (cli_module.h, PCRE2) and
 * follows there. */
#include <limits.h>

#include "abort_follow.h"
#include "cli.h"
#include "cli_module.h"

int abort_follow(const struct abort_follow_opts *o, const char *dir, unsigned ttl, int (*open_dir)(const char *dir),
		 int (*write_marker)(int dfd, const char *dir, const char *id))
{
	const struct sg_module_follow *m;
	char err[PATH_MAX + 256];

	if (!(m = cli_module_load("shmguard-follow.so", err, sizeof(err))))
		return cli_fail(EXIT_FAIL, "abort", "--follow: %s", err);
	return m->abort_follow(o, dir, ttl, open_dir, write_marker);
}
