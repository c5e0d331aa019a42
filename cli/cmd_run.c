/* shmguard run: run a program with the shim preloaded and configured. */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "config.h"
#include "marker.h"
#include "text.h"

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

/* A root named by --shm-root must be there: the shim would wait for it.
 * 0, or -1 (reported). */
static int check_root(const char *path)
{
	char shown[SG_ESCAPED_MAX];
	struct stat st;

	sg_text_escape(path, shown, sizeof(shown));
	if (stat(path, &st) < 0 && errno == ENOENT)
		return cli_usage_fail(-1, "run", "shm root %s does not exist", shown);
	if (stat(path, &st) < 0)
		return cli_usage_fail(-1, "run", "shm root %s: %s", shown, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return cli_usage_fail(-1, "run", "shm root %s is not a directory", shown);
	return 0;
}

/* The abort directory named by --abort-dir, made now when missing (one
 * level, stamped: what the shim would do on its first watch) and checked
 * as the shim checks it, so that one it would ignore, or could not make,
 * is said here rather than never.  0, or -1 (reported). */
static int check_abort_dir(const char *path)
{
	char shown[SG_ESCAPED_MAX];
	const char *why;
	struct stat st;
	int fd = sg_abort_dir_open_trusted(path, true, geteuid(), &st, &why);

	sg_text_escape(path, shown, sizeof(shown));
	if (fd >= 0) {
		close(fd);
		return 0;
	}
	if (why)
		return cli_usage_fail(-1, "run", "abort directory %s %s (uid %u, mode %04o), so the shim would ignore its "
				      "markers; %s", shown, why, (unsigned)st.st_uid, (unsigned)st.st_mode & 07777,
				      sg_abort_dir_remedy(&st, geteuid()));
	if (fd == -ENOENT) {
		char parent[SG_PATH_MAX + 1];

		snprintf(parent, sizeof(parent), "%s", path);
		*strrchr(parent, '/') = '\0';
		return cli_usage_fail(-1, "run", "abort directory %s does not exist, and the shim cannot make it: %s",
				      shown, stat(*parent ? parent : "/", &st) < 0 ? "its parent does not exist either"
								 : "this user may not create it there");
	}
	return cli_usage_fail(-1, "run", "abort directory %s %s", shown,
			      fd == -ELOOP   ? "is a symbolic link, which the shim never follows"
			      : fd == -ENOTDIR ? "is not a directory"
					       : strerror(-fd));
}

/* Whether the object fd (of this program's class) is a program built as a
 * position-independent executable (DF_1_PIE), which ld.so refuses to
 * preload; -1 when it has no dynamic section, which a shared library has. */
static int is_pie(int fd, const ElfW(Ehdr) *h)
{
	for (unsigned i = 0; i < h->e_phnum && i < 256; i++) {
		ElfW(Phdr) ph;
		ElfW(Dyn) dyn;

		if (pread(fd, &ph, sizeof(ph), (off_t)(h->e_phoff + (ElfW(Off))i * h->e_phentsize)) != sizeof(ph))
			return -1;
		if (ph.p_type != PT_DYNAMIC)
			continue;
		for (ElfW(Off) off = 0; off + sizeof(dyn) <= ph.p_filesz && off < 64 * 1024; off += sizeof(dyn)) {
			if (pread(fd, &dyn, sizeof(dyn), (off_t)(ph.p_offset + off)) != sizeof(dyn) || dyn.d_tag == DT_NULL)
				break;
			if (dyn.d_tag == DT_FLAGS_1)
				return (dyn.d_un.d_val & DF_1_PIE) != 0;
		}
		return 0;
	}
	return -1;
}

/* Why the loader would not preload fd into this program's kind of process
 * (a shared object of the same class, byte order and machine as
 * /proc/self/exe, not a program), or NULL. */
static const char *not_preloadable(int fd)
{
	ElfW(Ehdr) lib, self;
	int self_fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	ssize_t n = pread(fd, &lib, sizeof(lib), 0), m = self_fd >= 0 ? pread(self_fd, &self, sizeof(self), 0) : -1;

	if (self_fd >= 0)
		close(self_fd);
	if (n < 0)
		return strerror(errno);
	if (n < (ssize_t)EI_NIDENT || memcmp(lib.e_ident, ELFMAG, SELFMAG) != 0)
		return "not an ELF file";
	if (m < (ssize_t)sizeof(self) || n < (ssize_t)sizeof(lib))
		return "its ELF header cannot be read";
	if (lib.e_ident[EI_CLASS] != self.e_ident[EI_CLASS] || lib.e_ident[EI_DATA] != self.e_ident[EI_DATA])
		return "an ELF file of another class or byte order than this machine's programs";
	if (lib.e_type != ET_DYN)
		return "not a shared library (its ELF type is not ET_DYN)";
	if (lib.e_machine != self.e_machine)
		return "a shared library for another machine";
	switch (is_pie(fd, &lib)) {
	case 1: return "a program, not a shared library";
	case -1: return "not a shared library (no dynamic section)";
	}
	return NULL;
}

/* The shim must be a shared library the loader will preload: otherwise
 * ld.so says so on stderr and runs COMMAND without it.  0, or the exit
 * status (reported). */
static int check_shim(const char *shim)
{
	char shown[SG_ESCAPED_MAX];
	const char *why;
	int fd = open(shim, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return cli_fail(EXIT_FAIL, "run", "cannot use shim '%s': %s", sg_text_escape(shim, shown, sizeof(shown)),
				strerror(errno));
	why = not_preloadable(fd);
	close(fd);
	return why ? cli_usage_fail(EXIT_USAGE, "run", "cannot preload '%s': %s",
				    sg_text_escape(shim, shown, sizeof(shown)), why)
		   : 0;
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
	const char *lib = getenv("SHMGUARD_LIB"), *abort_dir = NULL;
	struct sg_config cfg;
	int c, status = EXIT_USAGE;

	/* '+': options end at COMMAND, whose own options are its business. */
	while ((c = getopt_long(argc, argv, "+p:a:r:s:t:l:hV", opts, NULL)) != -1) {
		const char *var = NULL;

		switch (c) {
		case 'p': var = "SHMGUARD_PATTERNS"; break;
		case 'a': var = "SHMGUARD_ABORT_DIR"; abort_dir = optarg; break;
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
	for (unsigned k = 0; roots && k < cfg.roots.n; k++)
		if (check_root(cfg.roots.dir[k]) < 0)
			goto out;
	if (abort_dir && check_abort_dir(cfg.abort_dir) < 0)
		goto out;
	if (cli_find_shim(lib, shim) < 0) {
		if (lib)
			status = cli_fail(EXIT_FAIL, "run", "cannot use shim '%s': %s", lib, strerror(errno));
		else
			status = cli_fail(EXIT_FAIL, "run",
					  "cannot find %s (looked next to this program and in %s); pass --lib PATH",
					  SG_SHIM_NAME, SHMGUARD_SHIM_DIR);
		goto out;
	}
	if ((status = check_shim(shim)) != 0)
		goto out;
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
