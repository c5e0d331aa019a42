/* What the subcommands share: finding the shim, reading --root options,
 * strings from outside in JSON. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "config.h"
#include "text.h"
#include "encode.h"
#include "journal.h"
#include "marker.h"

static int usable(const char *candidate, char *out)
{
	return access(candidate, R_OK) == 0 && realpath(candidate, out) ? 0 : -1;
}

int cli_find_shim(const char *given, char *out)
{
	char exe[PATH_MAX], candidate[PATH_MAX + 32];
	ssize_t n;

	if (given)
		return realpath(given, out) ? 0 : -1;
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = '\0';
		snprintf(candidate, sizeof(candidate), "%s/../shim/" SG_SHIM_NAME, dirname(exe));
		if (usable(candidate, out) == 0)
			return 0;
	}
	snprintf(candidate, sizeof(candidate), "%s/" SG_SHIM_NAME, SHMGUARD_SHIM_DIR);
	return usable(candidate, out);
}

int cli_add_root(const char *sub, struct sg_roots *roots, const char *dir)
{
	const char *why;

	return sg_roots_add(roots, dir, &why) < 0 ? cli_usage_fail(-1, sub, "bad root '%s': %s", dir, why) : 0;
}

void cli_default_root(struct sg_roots *roots)
{
	const char *why;

	if (!roots->n)
		sg_roots_add(roots, SG_DEFAULT_ROOT, &why);
}

int cli_abort_dir_open(const char *sub, const char *dir, bool make)
{
	char shown[SG_ESCAPED_MAX];
	struct stat st;
	const char *why;
	int fd = sg_abort_dir_open_trusted(dir, make, geteuid(), &st, &why);

	if (fd >= 0)
		return fd;
	sg_text_escape(dir, shown, sizeof(shown));
	if (!why)
		return cli_fail(-1, sub, "cannot open abort directory %s: %s", shown,
				fd == -ELOOP ? "it is a symbolic link" : strerror(-fd));
	return cli_fail(-1, sub, "abort directory %s %s (uid %u, mode %04o), so the shims ignore its markers; %s", shown,
			why, (unsigned)st.st_uid, (unsigned)st.st_mode & 07777, sg_abort_dir_remedy(&st, geteuid()));
}

void cli_json_set_text(json_t *o, const char *key, const char *s)
{
	char hex_key[64];
	char *lossy, *hex;

	if (!s || sg_utf8_valid(s)) {
		json_object_set_new(o, key, s ? json_string(s) : json_null());
		return;
	}
	lossy = sg_utf8_lossy(s);
	hex = sg_hex(s);
	snprintf(hex_key, sizeof(hex_key), "%s_hex", key);
	json_object_set_new(o, key, lossy ? json_string(lossy) : json_null());
	json_object_set_new(o, hex_key, hex ? json_string(hex) : json_null());
	free(lossy);
	free(hex);
}

const char *cli_json_arg(int argc, char **argv)
{
	if (optarg)
		return optarg;
	if (optind < argc && (argv[optind][0] != '-' || strcmp(argv[optind], "-") == 0))
		return argv[optind++];
	return "-";
}

int cli_json_open(const char *sub, const char *path, struct cli_json_out *j)
{
	char err[SG_OUTFILE_ERR_MAX], esc[SG_ESCAPED_MAX];

	j->path = path;
	if (sg_outfile_open(&j->out, path, 0644, SG_OUTFILE_STDOUT, err, sizeof(err)) < 0)
		return cli_fail(-1, sub, "cannot write the JSON to %s: %s", sg_text_escape(path, esc, sizeof(esc)), err);
	return 0;
}

/* All of buf[0..len) to fd: 0, or -1 with errno. */
static int write_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = write(fd, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

int cli_json_write(const char *sub, json_t *root, struct cli_json_out *j)
{
	char err[SG_OUTFILE_ERR_MAX], esc[SG_ESCAPED_MAX];
	/* Made whole, then written at once: jansson writes a descriptor a
	 * token at a time (66,000 writes for ls --node of 400 pods). */
	char *text = json_dumps(root, JSON_INDENT(2));

	fflush(stdout); /* what was printed before comes first */
	if (!text || write_all(j->out.fd, text, strlen(text)) < 0 || write_all(j->out.fd, "\n", 1) < 0) {
		snprintf(err, sizeof(err), "%s", text ? strerror(errno) : strerror(ENOMEM));
		free(text);
		cli_json_discard(j);
	} else {
		free(text);
		if (sg_outfile_commit(&j->out, SG_OUTFILE_FSYNC, err, sizeof(err)) == 0)
			return 0;
	}
	return cli_fail(-1, sub, "cannot write the JSON to %s: %s", sg_text_escape(j->path, esc, sizeof(esc)), err);
}

void cli_json_discard(struct cli_json_out *j)
{
	sg_outfile_discard(&j->out);
}

int cli_unexpected(int code, const char *sub, const char *word)
{
	char esc[SG_ESCAPED_MAX];

	return cli_usage_fail(code, sub, "unexpected argument '%s'", sg_text_escape(word, esc, sizeof(esc)));
}

void cli_warn_journal_dir_untrusted(const char *sub, const char *root)
{
	/* (the listing's shown roots: SG_PATH_MAX and a mount's note) */
	char path[SG_PATH_MAX + 48 + sizeof(SG_JOURNAL_DIR) + 1], esc[SG_ESCAPED_MAX];

	snprintf(path, sizeof(path), "%s/" SG_JOURNAL_DIR, root);
	cli_warn(sub, "%s is not a directory owned by root with mode 1777: the journals in it are not read",
		 sg_text_escape(path, esc, sizeof(esc)));
}
