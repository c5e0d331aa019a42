/* abort --follow in a build without PCRE2, which its --match and presets
 * need: said plainly, as bad usage of this build. */
#include "abort_follow.h"
#include "cli.h"

int abort_follow(const struct abort_follow_opts *o, const char *dir, unsigned ttl, int (*open_dir)(const char *dir),
		 int (*write_marker)(int dfd, const char *dir, const char *id))
{
	(void)o, (void)dir, (void)ttl, (void)open_dir, (void)write_marker;
	return cli_fail(EXIT_USAGE, "abort",
			"--follow is not available: this shmguard was built without PCRE2 (libpcre2-dev), "
			"which its --match and --preset need");
}
