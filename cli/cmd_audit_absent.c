/* shmguard audit in a build without the auditor (-Dauditor=disabled, or
 * its BPF toolchain not found): it says so, with the status that says
 * tracing is not possible here, so that a CI gate fails instead of
 * passing on a run that saw nothing. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

/* shmguard audit's own: 3, tracing is not possible here. */
#define AUDIT_NOT_BUILT 3

static const char absent[] =
	"this shmguard was built without the auditor: rebuild it where libbpf, libelf, libmicrohttpd, "
	"clang and bpftool are found (meson -Dauditor=enabled says which one is missing)";

int cmd_audit(int argc, char **argv)
{
	if (argc == 2 && (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0)) {
		return cli_version();
	}
	if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		printf("Usage: shmguard audit [OPTIONS] [-- COMMAND [ARGS]...]\n\n"
		       "This shmguard was built without the auditor: rebuild it where libbpf, libelf,\n"
		       "libmicrohttpd, clang and bpftool are found (meson -Dauditor=enabled says which\n"
		       "one is missing).\n\n"
		       "Exit status: always %d (tracing is not possible here), except for --help.\n",
		       AUDIT_NOT_BUILT);
		return EXIT_OK;
	}
	return cli_fail(AUDIT_NOT_BUILT, "audit", "%s", absent);
}
