/* shmguard: the command-line side of shmguard. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "siphash.h"

static const struct {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
} commands[] = {
	{"run", cmd_run, "run a program with libshmguard.so preloaded"},
	{"abort", cmd_abort, "mark requests aborted: running shims sweep their segments"},
	{"audit", cmd_audit, "measure what aborted requests leave in /dev/shm (eBPF), gate CI on it"},
	{"ls", cmd_ls, "list what /dev/shm holds: bytes, tags, creators, holders"},
	{"sweep", cmd_sweep, "reclaim orphans: dead creators' files, a request's files"},
	{"watch", cmd_watch, "record who creates each /dev/shm file (eBPF), for sweep --dead"},
	{"doctor", cmd_doctor, "check whether shmguard can work here, and say why not"},
};

static void usage(FILE *out)
{
	fprintf(out, "Usage: shmguard COMMAND [OPTIONS]...\n\n"
		     "Stops /dev/shm leaks: segments of aborted requests are unlinked by the\n"
		     "libshmguard.so shim preloaded into the pipeline's processes.\n\nCommands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(out, "  %-8s %s\n", commands[i].name, commands[i].summary);
	fprintf(out, "\n'shmguard COMMAND --help' describes a command; -V, --version prints the version.\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "shmguard: no command given\nTry 'shmguard --help' for more information.\n");
		return EXIT_USAGE;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
		usage(stdout);
		return EXIT_OK;
	}
	if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0)
		return cli_version();
	const char *weak_key = sg_table_key_init();
	if (weak_key)
		fprintf(stderr, "shmguard: warning: %s\n", weak_key);
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		if (strcmp(argv[1], commands[i].name) == 0) {
			/* getopt names the program by argv[0]: "shmguard doctor:". */
			char name[32];
			snprintf(name, sizeof(name), "shmguard %s", commands[i].name);
			argv[1] = name;
			return commands[i].run(argc - 1, argv + 1);
		}
	}
	fprintf(stderr, "shmguard: unknown command '%s'\nTry 'shmguard --help' for more information.\n", argv[1]);
	return EXIT_USAGE;
}
