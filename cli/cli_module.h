/* Parts of the command that need a library the hot path does not: each a
 * module of its own in the package's private directory (LIBDIR/shmguard,
 * beside the shim), loaded by the commands that use it, so that abort,
 * sweep, ls and the preflight, which a serving host runs on its hot path,
 * load libc and jansson alone:
 * - shmguard-auditor.so (libbpf, libelf, libmicrohttpd): audit, watch,
 *   doctor's BPF checks;
 * - shmguard-follow.so (PCRE2): abort --follow;
 * - shmguard-elf.so (libelf): doctor's preload and --binary checks.
 * A module takes the command line's helpers (cli.h, doctor_line) from the
 * program, which exports them, and is linked -Bsymbolic, so that its entry
 * points are its own and not the program's loaders of the same names. */
#ifndef SHMGUARD_CLI_MODULE_H
#define SHMGUARD_CLI_MODULE_H

#include <stddef.h>

#include "abort_follow.h"
#include "config.h"
#include "doctor_shim.h"

/* What each module exports under this name: its struct below, whose
 * first member is the version of the build it belongs to. */
#define SG_MODULE_SYMBOL "shmguard_module"

struct sg_module_auditor {
	const char *version; /* SHMGUARD_VERSION: a module of another build is refused */
	int (*cmd_audit)(int argc, char **argv);
	int (*cmd_watch)(int argc, char **argv);
	int (*doctor_bpf)(const struct sg_roots *roots);
};

struct sg_module_follow {
	const char *version;
	int (*abort_follow)(const struct abort_follow_opts *o, const char *dir, unsigned ttl,
			    int (*open_dir)(const char *dir), int (*write_marker)(int dfd, const char *dir, const char *id));
};

struct sg_module_elf {
	const char *version;
	int (*doctor_shim)(doctor_line_fn *line);
	int (*doctor_binary)(const char *path);
};

/* The module NAME ("shmguard-auditor.so"): next to this program in a build
 * tree, else in LIBDIR/shmguard.  Returns its struct, or NULL with why in
 * err (one line).  A module is loaded once. */
const void *cli_module_load(const char *name, char *err, size_t errlen);

#endif
