/* shmguard watch in a build without the auditor, whose tracer it uses: it
 * says so and fails, so that a node service started with it does not run
 * as if it recorded anything. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static const char absent[] =
	"this shmguard was built without the auditor, whose tracer watch uses: rebuild it where libbpf, "
	"libelf, libmicrohttpd, clang and bpftool are found";

int cmd_watch(int argc, char **argv)
{
	if (argc == 2 && (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0))
		return cli_version();
	if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		printf("Usage: shmguard watch [OPTIONS]\n\n"
		       "This shmguard was built without the auditor, whose tracer watch uses: rebuild\n"
		       "it where libbpf, libelf, libmicrohttpd, clang and bpftool are found.\n\n"
		       "Exit status: always 1, except for --help.\n");
		return EXIT_OK;
	}
	return cli_fail(EXIT_FAIL, "watch", "%s", absent);
}
