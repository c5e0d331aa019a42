/* shmguard doctor: can shmguard work here, and if not, why. */
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <gelf.h>
#include <getopt.h>
#include <sys/random.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/utsname.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "audit.h"
#include "audit_trace.h"
#include "cli.h"
#include "doctor_need.h"
#include "doctor_shim.h"
#include "holders.h"
#include "size.h"
#include "text.h"

#define TMPFS_MAGIC 0x01021994

static void usage(FILE *out)
{
	fprintf(out, "Usage: shmguard doctor [--binary PATH] [--root DIR]... [--need SIZE]\n\n"
		     "Checks, one line each: the kernel, where the shim is (the path for LD_PRELOAD), the\n"
		     "kernel's BTF, whether the auditor's BPF programs load here (and why not), tracefs,\n"
		     "whether the shim is preloaded in this environment (and if LD_PRELOAD names it but it\n"
		     "is not, why) and whether this glibc can load it, and for each shm root (default\n"
		     "/dev/shm) its filesystem, size and use, and whether the shim can keep its ownership\n"
		     "journal and its xattr tags there; with --binary, whether that program can run under\n"
		     "the shim.\n"
		     "With --need SIZE (512M, 2G, 1.5GiB: powers of 1024), whether each root has that much\n"
		     "free; when not, what holds the rest (the largest holders by request and creator) and\n"
		     "how much `shmguard sweep --dead` would reclaim.\n\n"
		     "  --binary PATH   a program to check\n"
		     "  --need SIZE     the free space each root must have\n"
		     "  --root DIR      a shm root to check instead of /dev/shm (repeatable)\n"
		     "  -h, --help      show this help\n"
		     "  -V, --version   print the version\n\n"
		     "Exit status: 0 all is well; 1 something is not; 2 bad usage.\n");
}

static doctor_line_fn line;
static int line(const char *what, bool ok, const char *fmt, ...)
{
	va_list ap;

	printf("%-10s %-4s ", what, ok ? "ok" : "FAIL");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	return ok ? 0 : 1;
}

static int check_bpf(const struct sg_roots *roots)
{
	struct audit_opts o = {0};
	struct audit a = {.o = &o};
	struct audit_tracer *t;
	struct stat st;
	char err[512];

	for (unsigned i = 0; i < roots->n; i++)
		if (stat(roots->dir[i], &st) == 0)
			a.roots[a.nroots++] = (struct audit_root){roots->dir[i], sg_kdev(st.st_dev), st.st_ino};
	t = audit_trace_start(&a, false, NULL, err, sizeof(err));
	if (!t)
		return line("bpf", false, "shmguard audit cannot trace here: %s", err);
	line("bpf", true, "the auditor's programs load and attach; it sees files created with the %s probe%s",
	     audit_trace_probe(t), strcmp(audit_trace_probe(t), "syscalls") == 0
					   ? " (every system call pays for it: this kernel allows no cheaper one)"
					   : "");
	audit_trace_stop(t);
	return 0;
}

/* Names tried: 64 random bits each, so only a squatter makes one taken. */
#define PROBE_TRIES 10

/* A new file of ours in root (O_EXCL, no symlink followed), its path in
 * path; the fd, or -1 with errno. */
static int probe_file(const char *root, char *path, size_t len)
{
	int fd = -1;

	for (int i = 0; i < PROBE_TRIES; i++) {
		unsigned long long r;

		if (getrandom(&r, sizeof(r), 0) != sizeof(r))
			return -1;
		snprintf(path, len, "%s/.shmguard-doctor-%016llx", root, r);
		fd = open(path, O_CREAT | O_EXCL | O_NOFOLLOW | O_WRONLY | O_CLOEXEC, 0600);
		if (fd >= 0 || errno != EEXIST)
			break;
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
		return line(label, false, "cannot be read: %s", strerror(errno));
	uint64_t total = (uint64_t)fs.f_blocks * fs.f_bsize, used = total - (uint64_t)fs.f_bfree * fs.f_bsize;
	status |= line(label, true, "%s, %s, %s used (%.1f%%)",
		       fs.f_type == TMPFS_MAGIC ? "tmpfs" : "not tmpfs (memory use is not RAM)",
		       sg_human_bytes(total, b1, sizeof(b1)), sg_human_bytes(used, b2, sizeof(b2)),
		       total > 0 ? 100.0 * (double)used / (double)total : 0);
	/* The journal needs a file of its own there, xattr tags user xattrs:
	 * try both on a file of our own, under a name nobody can guess (others
	 * can write the root, and a name taken first is no failure of it). */
	if ((fd = probe_file(root, probe, sizeof(probe))) < 0)
		return status | line("", false, "  cannot create a file there (%s): the shim's ownership journal "
					       "cannot be kept", strerror(errno));
	line("", true, "  takes files: the shim's ownership journal (SHMGUARD_TAG=journal, the default) works");
	if (fsetxattr(fd, "user.shmguard-doctor", "1", 1, 0) == 0)
		line("", true, "  keeps user xattrs: SHMGUARD_TAG=xattr or both works too");
	else
		line("", true, "  refuses user xattrs (%s): SHMGUARD_TAG=xattr would tag nothing here; the journal "
			       "does not need them", strerror(errno));
	close(fd);
	unlink(probe);
	return status;
}

/* Dynamically linked against glibc, and not set-id: LD_PRELOAD applies. */
static int check_binary(const char *path)
{
	bool dynamic = false, libc = false;
	struct stat st;
	Elf_Scn *scn = NULL;
	size_t nph;
	Elf *elf;
	int fd;

	if (stat(path, &st) < 0 || (fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return line("binary", false, "%s: %s", path, strerror(errno));
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF || elf_getphdrnum(elf, &nph) < 0) {
		if (elf)
			elf_end(elf);
		close(fd);
		return line("binary", false, "%s is not an ELF program (a script runs its interpreter: check that)",
			    path);
	}
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;
		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_INTERP)
			dynamic = true;
	}
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNAMIC || !(data = elf_getdata(scn, NULL)))
			continue;
		for (size_t k = 0; k < sh.sh_size / sh.sh_entsize; k++) {
			GElf_Dyn dyn;
			const char *name;
			if (gelf_getdyn(data, (int)k, &dyn) && dyn.d_tag == DT_NEEDED &&
			    (name = elf_strptr(elf, sh.sh_link, dyn.d_un.d_val)) && strncmp(name, "libc.so", 7) == 0)
				libc = true;
		}
	}
	elf_end(elf);
	close(fd);
	if (!dynamic)
		return line("binary", false, "%s is statically linked: LD_PRELOAD cannot reach its calls", path);
	if (!libc)
		return line("binary", false, "%s does not link libc.so directly (Go, or raw system calls?): its "
					    "files are probably not created through libc",
			    path);
	if (st.st_mode & (S_ISUID | S_ISGID))
		return line("binary", false, "%s is set-id: the loader ignores LD_PRELOAD for it", path);
	return line("binary", true, "%s is dynamically linked against libc and not set-id: it can run under the shim",
		    path);
}

int cmd_doctor(int argc, char **argv)
{
	static const struct option opts[] = {
		{"binary", required_argument, NULL, 'b'}, {"root", required_argument, NULL, 'r'},
		{"need", required_argument, NULL, 'n'}, {"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},    {0},
	};
	struct sg_roots roots = {0};
	const char *binary = NULL, *need_arg = NULL;
	uint64_t need = 0;
	int c, status = 0;
	struct utsname u;
	char shim[PATH_MAX];

	while ((c = getopt_long(argc, argv, "hV", opts, NULL)) != -1) {
		switch (c) {
		case 'b': binary = optarg; break;
		case 'n': need_arg = optarg; break;
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

	uname(&u);
	line("kernel", true, "%s %s", u.release, u.machine);
	status |= cli_find_shim(NULL, shim) == 0
			  ? line("shim", true, "%s (for LD_PRELOAD; 'shmguard run' preloads it)", shim)
			  : line("shim", false, "%s not found next to this program nor in %s", SG_SHIM_NAME,
				 SHMGUARD_SHIM_DIR);
	status |= access("/sys/kernel/btf/vmlinux", R_OK) == 0
			  ? line("btf", true, "/sys/kernel/btf/vmlinux")
			  : line("btf", false, "no /sys/kernel/btf/vmlinux: the kernel needs CONFIG_DEBUG_INFO_BTF for the auditor");
	status |= check_bpf(&roots);
	if (access("/sys/kernel/tracing/events", F_OK) == 0)
		line("tracefs", true, "mounted at /sys/kernel/tracing (shmguard does not need it)");
	else
		line("tracefs", true, "not mounted: shmguard does not need it (syscall-tracepoint tools do: mount -t "
				      "tracefs none /sys/kernel/tracing)");
	status |= doctor_shim(line);
	for (unsigned i = 0; i < roots.n; i++)
		status |= check_root(roots.dir[i]);
	if (binary)
		status |= check_binary(binary);
	for (unsigned i = 0; need_arg && i < roots.n; i++)
		status |= doctor_need(roots.dir[i], need);
	return status ? EXIT_FAIL : EXIT_OK;
}
