/* shmguard run: run a program with the shim preloaded and configured. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "config.h"

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: shmguard run [OPTIONS] -- COMMAND [ARGS]...\n\n"
		"Runs COMMAND (and everything it starts) with %s preloaded. Options\n"
		"set the SHMGUARD_* variables of the same meaning; unset ones keep the\n"
		"environment's.\n\n"
		"  -p, --patterns P      name patterns, ';'-separated      (SHMGUARD_PATTERNS)\n"
		"  -a, --abort-dir DIR   abort marker directory            (SHMGUARD_ABORT_DIR)\n"
		"  -r, --request-id ID   request of every file created     (SHMGUARD_REQUEST_ID)\n"
		"  -s, --shm-root DIR    another shm root (repeatable)     (SHMGUARD_SHM_ROOTS)\n"
		"  -t, --ttl DURATION    abort marker lifetime (600, 10m)  (SHMGUARD_ABORT_TTL)\n"
		"  -l, --log LEVEL       off, warn, info or debug          (SHMGUARD_LOG)\n"
		"      --tag MODE        where ownership is recorded: journal (default),\n"
		"                        xattr, both or off                (SHMGUARD_TAG)\n"
		"      --lib PATH        the shim to preload (default: $SHMGUARD_LIB, else found\n"
		"                        next to this program or in\n"
		"                        %s)\n"
		"  -h, --help            show this help\n"
		"  -V, --version         print the version\n\n"
		"Exit status: COMMAND's; 1 the shim not found; 2 bad usage or configuration; 126\n"
		"or 127 COMMAND cannot be run.\n",
		SG_SHIM_NAME, SHMGUARD_SHIM_DIR);
}

/* LD_PRELOAD with the shim first, once. */
static int preload(const char *shim)
{
	const char *old = getenv("LD_PRELOAD");
	char *value;
	int ret;

	if (old && strstr(old, shim))
		return 0;
	if (old && *old) {
		if (asprintf(&value, "%s:%s", shim, old) < 0)
			return -1;
	} else if (!(value = strdup(shim))) {
		return -1;
	}
	ret = setenv("LD_PRELOAD", value, 1);
	free(value);
	return ret;
}

static int append_root(char **roots, const char *dir)
{
	char *joined;

	if (*roots && asprintf(&joined, "%s:%s", *roots, dir) < 0)
		return -1;
	if (!*roots && !(joined = strdup(dir)))
		return -1;
	free(*roots);
	*roots = joined;
	return 0;
}

int cmd_run(int argc, char **argv)
{
	static const struct option opts[] = {
		{"patterns", required_argument, NULL, 'p'}, {"abort-dir", required_argument, NULL, 'a'},
		{"request-id", required_argument, NULL, 'r'}, {"shm-root", required_argument, NULL, 's'},
		{"ttl", required_argument, NULL, 't'},       {"log", required_argument, NULL, 'l'},
		{"tag", required_argument, NULL, 'T'},       {"lib", required_argument, NULL, 'L'},
		{"help", no_argument, NULL, 'h'},           {"version", no_argument, NULL, 'V'},
		{0},
	};
	char shim[PATH_MAX], err[256], *roots = NULL;
	const char *lib = getenv("SHMGUARD_LIB");
	struct sg_config cfg;
	int c, status = EXIT_USAGE;

	/* '+': options end at COMMAND, whose own options are its business. */
	while ((c = getopt_long(argc, argv, "+p:a:r:s:t:l:hV", opts, NULL)) != -1) {
		const char *var = NULL;

		switch (c) {
		case 'p': var = "SHMGUARD_PATTERNS"; break;
		case 'a': var = "SHMGUARD_ABORT_DIR"; break;
		case 'r': var = "SHMGUARD_REQUEST_ID"; break;
		case 't': var = "SHMGUARD_ABORT_TTL"; break;
		case 'l': var = "SHMGUARD_LOG"; break;
		case 'T': var = "SHMGUARD_TAG"; break;
		case 'L': lib = optarg; break;
		case 's':
			if (append_root(&roots, optarg) < 0)
				goto out;
			break;
		case 'h':
			usage(stdout);
			status = EXIT_OK;
			goto out;
		case 'V':
			status = cli_version();
			goto out;
		default:
			status = cli_try_help(EXIT_USAGE, "run");
			goto out;
		}
		if (var && setenv(var, optarg, 1) < 0)
			goto out;
	}
	if (optind == argc) {
		status = cli_usage_fail(EXIT_USAGE, "run", "no COMMAND given");
		goto out;
	}
	if (roots && setenv("SHMGUARD_SHM_ROOTS", roots, 1) < 0)
		goto out;
	/* The shim would refuse a bad configuration and pass every call
	 * through: refuse it here, where the user is looking. */
	if (sg_config_from_env(&cfg, err, sizeof(err)) < 0) {
		status = cli_usage_fail(EXIT_USAGE, "run", "%s", err);
		goto out;
	}
	if (cli_find_shim(lib, shim) < 0) {
		if (lib)
			status = cli_fail(EXIT_FAIL, "run", "cannot use shim '%s': %s", lib, strerror(errno));
		else
			status = cli_fail(EXIT_FAIL, "run",
					  "cannot find %s (looked next to this program and in %s); pass --lib PATH",
					  SG_SHIM_NAME, SHMGUARD_SHIM_DIR);
		goto out;
	}
	if (preload(shim) < 0) {
		status = EXIT_FAIL;
		goto out;
	}
	free(roots);
	execvp(argv[optind], argv + optind);
	return cli_fail(errno == ENOENT ? 127 : 126, "run", "cannot run %s: %s", argv[optind], strerror(errno));
out:
	free(roots);
	return status;
}
