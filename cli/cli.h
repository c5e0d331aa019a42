/* The shmguard command's subcommands and what they share. */
#ifndef SHMGUARD_CLI_H
#define SHMGUARD_CLI_H

/* Exit codes shared by every subcommand. */
enum {
	EXIT_OK = 0,
	EXIT_FAIL = 1,  /* the work could not be done (or, for audit: over budget) */
	EXIT_USAGE = 2, /* bad usage or input */
	EXIT_LOCKED = 3, /* sweep: a root stayed locked by another process, and was not swept */
};

int cmd_run(int argc, char **argv);
int cmd_abort(int argc, char **argv);
int cmd_audit(int argc, char **argv);
int cmd_ls(int argc, char **argv);
int cmd_sweep(int argc, char **argv);
int cmd_doctor(int argc, char **argv);
int cmd_watch(int argc, char **argv);

#include <jansson.h>

#include "config.h"
#include "outfile.h"

/* Adds a --root value to roots (normalised, once); -1 (reported) on a bad
 * one.  cli_default_root() then gives /dev/shm when none was given. */
int cli_add_root(const char *sub, struct sg_roots *roots, const char *dir);
void cli_default_root(struct sg_roots *roots);

/* The abort directory dir, opened as the shims trust it (never a symlink,
 * ours or root's, not writable by all without the sticky bit), made (one
 * level) when make and missing: its descriptor, or -1 after saying for sub
 * why not. */
int cli_abort_dir_open(const char *sub, const char *dir, bool make);

/* Says for sub that the SG_JOURNAL_DIR of the root shown as root (as the
 * listing shows it) is not trusted, so the journals in it are not read. */
void cli_warn_journal_dir_untrusted(const char *sub, const char *root);

/* Sets o[key] to s (NULL: null).  JSON strings are UTF-8: when s is not,
 * o[key] has U+FFFD for each bad byte and o[key "_hex"] the exact bytes. */
void cli_json_set_text(json_t *o, const char *key, const char *s);

/* --json [FILE], as getopt_long gave it (optional_argument): FILE is
 * --json=FILE, or the next word when it is no option (these commands take
 * no other words), else "-", stdout.  Moves optind past a word it takes. */
const char *cli_json_arg(int argc, char **argv);

/* The --json output: stdout, or a new file beside FILE that replaces it
 * when written (host/outfile.h: never written through a symlink or a
 * file another user planted there). */
struct cli_json_out {
	const char *path;
	struct sg_outfile out;
};

/* Opened before the work is done; -1 (reported) when FILE cannot be. */
int cli_json_open(const char *sub, const char *path, struct cli_json_out *j);

/* Writes root, and FILE is replaced by it; -1 (reported) on error. */
int cli_json_write(const char *sub, json_t *root, struct cli_json_out *j);

/* The work failed: FILE is left as it was. */
void cli_json_discard(struct cli_json_out *j);

/* "unexpected argument 'WORD'" for the first word left, escaped; the usage
 * error's return code. */
int cli_unexpected(int code, const char *sub, const char *word);

#define SG_SHIM_NAME "libshmguard.so"

/* The shim: given (made absolute), else next to this program in a build
 * tree, else in its install directory (LIBDIR/shmguard).  Returns 0 with out (PATH_MAX bytes)
 * set, or -1 (given: with errno). */
int cli_find_shim(const char *given, char *out);

/* cli_say.c: how a subcommand speaks.
 * "shmguard SUBCOMMAND: message" on stderr; returns code, which is what the
 * caller returns: an exit status, or -1 from a helper (an option parser:
 * which returns 0 to go on, 1 once --help is printed, -1 on bad usage). */
__attribute__((format(printf, 3, 4))) int cli_fail(int code, const char *sub, const char *fmt, ...);

/* The same for what does not fail the command (a skipped input, say). */
__attribute__((format(printf, 2, 3))) void cli_warn(const char *sub, const char *fmt, ...);

/* Bad usage: "shmguard SUBCOMMAND: message", then "Try 'shmguard
 * SUBCOMMAND --help' for more information.", on stderr; returns code. */
__attribute__((format(printf, 3, 4))) int cli_usage_fail(int code, const char *sub, const char *fmt, ...);

/* The "Try" line alone, after getopt's own message (main makes getopt name
 * "shmguard SUBCOMMAND"); returns code. */
int cli_try_help(int code, const char *sub);

/* -V, --version: prints "shmguard VERSION" on stdout; returns EXIT_OK. */
int cli_version(void);

#endif
