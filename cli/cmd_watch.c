/* shmguard watch: the creator recorder alone (auditor/audit_recorder.h),
 * for a host without the node agent; the node agent records as it
 * measures with audit --record-creators.  Parses, calls, prints. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "audit_recorder.h"
#include "audit_trace.h"
#include "cli.h"
#include "creator_store.h"
#include "text.h"

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: shmguard watch [--root DIR]... [--probe NAME] [--no-attachers]\n\n"
		"The creator recorder alone, for a host without the node agent (which records\n"
		"as it measures with shmguard audit --record-creators; run one or the other).\n"
		"Records who creates each file in the shm roots, as the kernel sees it (eBPF):\n"
		"the process and its start time, its ancestors up to its cgroup's first process,\n"
		"pid namespace, cgroup and command, the file's device, inode and name, and the\n"
		"other processes that open it (its attachers, up to %d). `shmguard ls` shows the\n"
		"records and `shmguard sweep --dead` removes the files whose instance is proven\n"
		"gone. Runs until SIGINT or SIGTERM; needs root. Records are kept in\n"
		"%s (SHMGUARD_STORE_DIR), which a restart keeps and a reboot forgets;\n"
		"those of files that are gone are dropped.\n\n"
		"  --root DIR       a shm root to follow instead of /dev/shm (repeatable)\n"
		"  --probe NAME     how to see files created: %s\n"
		"                   (default: the best this kernel allows)\n"
		"  --no-attachers   do not follow opens (on vfs_open where the kernel allows it,\n"
		"                   else at every system call's exit); sweep --dead then removes\n"
		"                   nothing by these records (any process may have opened a file)\n"
		"  -h, --help       show this help\n"
		"  -V, --version    print the version\n\n"
		"Exit status: 0 stopped by a signal; 1 the tracer or the records could not be set\n"
		"up; 2 bad usage.\n",
		SG_REC_ATTACHERS, SG_STORE_DIR, audit_probe_list);
}

static int parse(int argc, char **argv, struct audit_watch_opts *w, const char **probe)
{
	static const struct option opts[] = {
		{"root", required_argument, NULL, 'R'}, {"probe", required_argument, NULL, 'p'},
		{"no-attachers", no_argument, NULL, 'A'}, {"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{0},
	};
	int c;

	while ((c = getopt_long(argc, argv, "hV", opts, NULL)) != -1) {
		switch (c) {
		case 'R':
			if (cli_add_root("watch", &w->roots, optarg) < 0)
				return -1;
			break;
		case 'p':
			if (audit_probe_by_name(optarg) < 0)
				return cli_usage_fail(-1, "watch", "unknown probe '%s' (%s)", optarg, audit_probe_list);
			*probe = optarg;
			break;
		case 'A': w->attachers = false; break;
		case 'h': usage(stdout); return 1;
		case 'V': cli_version(); return 1;
		default: return cli_try_help(-1, "watch");
		}
	}
	if (optind < argc)
		return cli_unexpected(-1, "watch", argv[optind]);
	cli_default_root(&w->roots);
	return 0;
}

int cmd_watch(int argc, char **argv)
{
	struct audit_watch_opts w = {.attachers = true};
	char err[768], esc[SG_ESCAPED_MAX];
	int status = parse(argc, argv, &w, &w.probe);

	if (status != 0)
		return status > 0 ? EXIT_OK : EXIT_USAGE;
	if (audit_watch_run(&w, err, sizeof(err)) < 0)
		return cli_fail(EXIT_FAIL, "watch", "%s", sg_text_escape(err, esc, sizeof(esc)));
	return EXIT_OK;
}
