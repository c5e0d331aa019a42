/* shmguard doctor: can shmguard work here, and if not, why. */
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/utsname.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "cli.h"
#include "doctor.h"
#include "doctor_report.h"
#include "doctor_need.h"
#include "doctor_shim.h"
#include "holders.h"
#include "size.h"
#include "text.h"
#include "outfile.h"

#define TMPFS_MAGIC 0x01021994

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: shmguard doctor [--binary PATH] [--root DIR]... [--need SIZE]\n"
		"                       [--json [FILE]]\n\n"
		"Checks, one line each: the kernel, where the shim is (the path for LD_PRELOAD),\n"
		"the kernel's BTF, whether the auditor's BPF programs load here (and why not; in\n"
		"a build with the auditor), tracefs, whether the shim is preloaded in this\n"
		"environment (and if LD_PRELOAD names it but it is not, why) and whether this\n"
		"glibc can load it, and for each shm root (default /dev/shm) its filesystem, size\n"
		"and use, and whether the shim can keep its ownership journal and its xattr tags\n"
		"there; with --binary, whether that program can run under the shim.\n\n"
		"With --need SIZE (512M, 2G, 1.5GiB: powers of 1024), whether each root has that\n"
		"much free; when not, what holds the rest (the largest holders by request and\n"
		"creator) and how much `shmguard sweep --dead` would reclaim.\n\n"
		"  --binary PATH   a program to check\n"
		"  --need SIZE     the free space each root must have\n"
		"  --root DIR      a shm root to check instead of /dev/shm (repeatable)\n"
		"  --json [FILE]   the checks as JSON, into FILE (--json=FILE too; none or -:\n"
		"                  stdout)\n"
		"  -h, --help      show this help\n"
		"  -V, --version   print the version\n\n"
		"Exit status: 0 all is well; 1 something is not; 2 bad usage.\n");
}

/* The report with --json: the checks, and whether all is well. */
static int write_json(struct cli_json_out *out, int status)
{
	json_t *root = json_pack("{s:i, s:s, s:b, s:O}", "schema", 1, "shmguard_version", SHMGUARD_VERSION, "ok",
				 status == 0, "checks", doctor_report_checks());
	int ret = cli_json_write("doctor", root, out);

	json_decref(root);
	return ret;
}

/* A new file of ours in root with a name nobody can take first, its path
 * in path; the fd, or -1 with errno. */
static int probe_file(const char *root, char *path, size_t len)
{
	char stem[SG_PATH_MAX + 32];
	int fd;

	snprintf(stem, sizeof(stem), "%s/.shmguard-doctor-", root);
	fd = sg_open_new_random(AT_FDCWD, stem, path, len, 0600);
	if (fd < 0) {
		errno = -fd;
		return -1;
	}
	return fd;
}

static int check_root(const char *root)
{
	char probe[SG_PATH_MAX + 64], label[SG_PATH_MAX + 8], b1[16], b2[16];
	struct statfs fs;
	int fd, status = 0;

	snprintf(label, sizeof(label), "%s", root);
	if (statfs(root, &fs) < 0)
		return doctor_line(label, false, "cannot be read: %s", strerror(errno));
	uint64_t total = (uint64_t)fs.f_blocks * fs.f_bsize, used = total - (uint64_t)fs.f_bfree * fs.f_bsize;
	status |= doctor_line(label, true, "%s, %s, %s used (%.1f%%)",
		       fs.f_type == TMPFS_MAGIC ? "tmpfs" : "not tmpfs (memory use is not RAM)",
		       sg_human_bytes(total, b1, sizeof(b1)), sg_human_bytes(used, b2, sizeof(b2)),
		       total > 0 ? 100.0 * (double)used / (double)total : 0);
	/* The journal needs a file of its own there, xattr tags user xattrs:
	 * try both on a file of our own, under a name nobody can guess (others
	 * can write the root, and a name taken first is no failure of it). */
	if ((fd = probe_file(root, probe, sizeof(probe))) < 0)
		return status | doctor_line("", false, "  cannot create a file there (%s): the shim's ownership journal "
					       "cannot be kept", strerror(errno));
	doctor_line("", true, "  takes files: the shim's ownership journal (SHMGUARD_TAG=journal, the default) works");
	if (fsetxattr(fd, "user.shmguard-doctor", "1", 1, 0) == 0)
		doctor_line("", true, "  keeps user xattrs: SHMGUARD_TAG=xattr or both works too");
	else
		doctor_line("", true, "  refuses user xattrs (%s): SHMGUARD_TAG=xattr would tag nothing here; the journal "
			       "does not need them", strerror(errno));
	close(fd);
	unlink(probe);
	return status;
}

int cmd_doctor(int argc, char **argv)
{
	static const struct option opts[] = {
		{"binary", required_argument, NULL, 'b'}, {"root", required_argument, NULL, 'r'},
		{"need", required_argument, NULL, 'n'}, {"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},    {"json", optional_argument, NULL, 'j'},
		{0},
	};
	struct sg_roots roots = {0};
	const char *binary = NULL, *need_arg = NULL, *json = NULL;
	struct cli_json_out json_out;
	uint64_t need = 0;
	int c, status = 0;
	struct utsname u;
	char shim[PATH_MAX];

	while ((c = getopt_long(argc, argv, "hV", opts, NULL)) != -1) {
		switch (c) {
		case 'b': binary = optarg; break;
		case 'n': need_arg = optarg; break;
		case 'j': json = cli_json_arg(argc, argv); break;
		case 'r':
			if (cli_add_root("doctor", &roots, optarg) < 0)
				return EXIT_USAGE;
			break;
		case 'h': usage(stdout); return EXIT_OK;
		case 'V': return cli_version();
		default: return cli_try_help(EXIT_USAGE, "doctor");
		}
	}
	if (optind < argc)
		return cli_unexpected(EXIT_USAGE, "doctor", argv[optind]);
	if (need_arg && sg_parse_size(need_arg, &need) < 0)
		return cli_usage_fail(EXIT_USAGE, "doctor", "bad --need '%s': expected a size such as 512M, 2G or 1.5GiB", need_arg);
	cli_default_root(&roots);
	if (json) {
		if (cli_json_open("doctor", json, &json_out) < 0)
			return EXIT_USAGE;
		if (doctor_report_to_json() < 0)
			return cli_fail(EXIT_FAIL, "doctor", "out of memory");
	}

	uname(&u);
	doctor_line("kernel", true, "%s %s", u.release, u.machine);
	status |= cli_find_shim(NULL, shim) == 0
			  ? doctor_line("shim", true, "%s (for LD_PRELOAD; 'shmguard run' preloads it)", shim)
			  : doctor_line("shim", false, "%s not found next to this program nor in %s", SG_SHIM_NAME,
				 SHMGUARD_SHIM_DIR);
	status |= doctor_bpf(&roots);
	if (access("/sys/kernel/tracing/events", F_OK) == 0)
		doctor_line("tracefs", true, "mounted at /sys/kernel/tracing (shmguard does not need it)");
	else
		doctor_line("tracefs", true, "not mounted: shmguard does not need it (syscall-tracepoint tools do: mount -t "
				      "tracefs none /sys/kernel/tracing)");
	status |= doctor_shim(doctor_line);
	for (unsigned i = 0; i < roots.n; i++)
		status |= check_root(roots.dir[i]);
	if (binary)
		status |= doctor_binary(binary);
	for (unsigned i = 0; need_arg && i < roots.n; i++)
		status |= doctor_need(roots.dir[i], need);
	if (json) {
		if (write_json(&json_out, status) < 0)
			status = 1;
		doctor_report_end();
	}
	return status ? EXIT_FAIL : EXIT_OK;
}
