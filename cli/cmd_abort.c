/* shmguard abort: write abort markers. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "abort_follow.h"
#include "cli.h"
#include "config.h"
#include "marker.h"
#include "reqid.h"
#include "text.h"

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: shmguard abort [-a DIR] [-t DURATION] REQUEST-ID...\n"
		"       shmguard abort --init-dir DIR\n"
		"       shmguard abort --follow FILE|- (--match REGEX | --preset NAME) [--id-template T]\n"
		"                      [--from-start] [--format plain|cri] [-a DIR] [-t DURATION]\n\n"
		"Marks each request aborted by creating DIR/REQUEST-ID (or refreshing its time).\n"
		"Every process running under libshmguard.so with the same abort directory then\n"
		"unlinks the segments it created for that request.  Markers older than the TTL\n"
		"are removed on the way, in a directory shmguard made only.  DIR must be yours\n"
		"or root's, and not world-writable without the sticky bit.\n\n"
		"  -a, --abort-dir DIR   marker directory (default: $SHMGUARD_ABORT_DIR, else\n"
		"                        %s)\n"
		"  -t, --ttl DURATION    marker lifetime (600, 10m; default: $SHMGUARD_ABORT_TTL, else\n"
		"                        %d s)\n"
		"      --init-dir DIR    only make DIR the abort directory: create it and stamp it as\n"
		"                        shmguard's (so that old markers expire), or stamp an empty\n"
		"                        one; checked as above (for a service's ExecStartPre=)\n"
		"  -h, --help            show this help\n"
		"  -V, --version         print the version\n\n"
		"With --follow, reads a log (a file followed by name like tail -F, through rotation\n"
		"and truncation, from its end; or stdin) and marks aborted each request ID a line\n"
		"yields, until SIGINT or SIGTERM (or the end of stdin).  A summary goes to stderr.\n"
		"      --follow FILE|-   the log to read\n"
		"      --match REGEX     PCRE2; the ID is its group (?<req>...), else its first group;\n"
		"                        matched again where the last match ended (several IDs a line)\n"
		"      --preset NAME     a ready regex: vllm, sglang, nginx or envoy (see docs/usage.md)\n"
		"      --id-template T   the request ID made from the logged one: 'chatcmpl-{id}'\n"
		"      --from-start      the file's present lines too, not only new ones\n"
		"      --format cri      the file is a CRI container log (/var/log/pods/.../N.log, podman's\n"
		"                        k8s-file): each line's runtime prefix is removed and the lines the\n"
		"                        runtime split (P) joined up to their end (F) before matching; lines\n"
		"                        without the prefix are dropped.  Default: plain\n\n"
		"An ID a followed log yields that the shims would not accept is skipped and counted,\n"
		"not fatal.\n\n"
		"Exit status: 0 all marked; 1 a marker could not be written, or DIR is refused; 2 bad\n"
		"usage or ID.\n\n"
		"Exit status with --follow: 0 stopped by a signal or at the end of stdin; 1 a marker\n"
		"could not be written or the log could not be read; 2 bad usage.\n",
		SG_DEFAULT_ABORT_DIR, SG_DEFAULT_ABORT_TTL);
}

/* Opens the marker directory, creating it (one level, stamped) when missing,
 * and checks it as the shims do: never a symlink, owned by us or root, not
 * writable by all without the sticky bit. */
static int open_dir(const char *dir)
{
	struct stat st;
	const char *why;
	int fd = sg_abort_dir_open_trusted(dir, true, geteuid(), &st, &why);

	if (fd >= 0)
		return fd;
	if (!why)
		return cli_fail(-1, "abort", "cannot open abort directory %s: %s", dir,
				errno == ELOOP ? "it is a symbolic link" : strerror(errno));
	return cli_fail(-1, "abort", "abort directory %s %s (uid %u, mode %04o), so the shims ignore its markers; %s",
			dir, why, (unsigned)st.st_uid, (unsigned)st.st_mode & 07777, sg_abort_dir_remedy(&st, geteuid()));
}

static const char *kind(const struct stat *st)
{
	return !S_ISREG(st->st_mode) ? S_ISFIFO(st->st_mode) ? "a FIFO" : "not a regular file"
	       : st->st_nlink != 1   ? "a file with more than one link"
				     : "a file";
}

/* Creates DIR/ID, or gives an existing marker a new time.  What is there
 * already must be a marker the shims accept (sg_marker_file_refusal):
 * another user's file, a hard link or a FIFO planted under that name is
 * reported, never opened for reading or waited on (O_NONBLOCK), never
 * removed. */
static int write_marker(int dfd, const char *dir, const char *id)
{
	int fd = openat(dfd, id, O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, 0644);
	int status = EXIT_OK, saved = errno;
	char shown[SG_ESCAPED_MAX]; /* the ID may come from a log: escaped */
	struct stat st;

	sg_text_escape(id, shown, sizeof(shown));

	if (fd < 0 && fstatat(dfd, id, &st, AT_SYMLINK_NOFOLLOW) == 0 && sg_marker_file_refusal(&st, geteuid()))
		goto foreign;
	/* The open's error, not the fstatat's (EACCES, not ENOENT). */
	if (fd < 0)
		return cli_fail(EXIT_FAIL, "abort", "cannot write marker %s/%s: %s", dir, shown, strerror(saved));
	if (fstat(fd, &st) < 0) {
		status = cli_fail(EXIT_FAIL, "abort", "cannot write marker %s/%s: %s", dir, shown, strerror(errno));
		goto cleanup;
	}
	if (sg_marker_file_refusal(&st, geteuid()))
		goto foreign;
	/* An existing marker gets a new time: shims sweep again (a late
	 * segment whose marker had expired, say), and the TTL restarts. */
	if (futimens(fd, NULL) < 0)
		status = cli_fail(EXIT_FAIL, "abort", "cannot write marker %s/%s: %s", dir, shown, strerror(errno));
	goto cleanup;
foreign:
	status = cli_fail(EXIT_FAIL, "abort",
			  "%s/%s already exists and is not a marker the shims accept (%s of uid %u; only regular "
			  "files with one link of uid %u or root count); request %s is not marked: remove it and try "
			  "again",
			  dir, shown, kind(&st), (unsigned)st.st_uid, (unsigned)geteuid(), shown);
cleanup:
	if (fd >= 0)
		close(fd);
	return status;
}

/* --init-dir: DIR made the abort directory, stamped so that markers expire
 * there.  One that exists unstamped is stamped only when empty: the stamp
 * lets expiry remove old files of ours, which another directory may hold. */
static int init_dir(const char *dir)
{
	int dfd = open_dir(dir), fd, status = EXIT_OK;
	unsigned entries = 0;
	struct dirent *e;
	DIR *d;

	if (dfd < 0)
		return EXIT_FAIL;
	if (sg_abort_dir_stamped(dfd, geteuid()))
		goto cleanup;
	if ((fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0 || !(d = fdopendir(fd))) {
		status = cli_fail(EXIT_FAIL, "abort", "cannot read abort directory %s: %s", dir, strerror(errno));
		if (fd >= 0)
			close(fd);
		goto cleanup;
	}
	while ((e = readdir(d)))
		entries += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
	closedir(d);
	if (entries)
		status = cli_fail(EXIT_FAIL, "abort",
				  "abort directory %s was not made by shmguard (no %s) and holds %u %s: markers would "
				  "never expire there; empty or remove it, then run --init-dir again",
				  dir, SG_ABORT_DIR_STAMP, CLI_PLURAL(entries, "file", "files"));
	else if (mknodat(dfd, SG_ABORT_DIR_STAMP, S_IFREG | 0444, 0) < 0)
		status = cli_fail(EXIT_FAIL, "abort", "cannot stamp abort directory %s: %s", dir, strerror(errno));
cleanup:
	close(dfd);
	return status;
}

/* What is wrong with the arguments left after the options, or NULL. */
static const char *usage_error(const struct abort_follow_opts *f, bool init, int nargs, char **args)
{
	static char buf[160];

	if (init && (f->file || nargs))
		return "--init-dir takes no request ID and no --follow";
	if (init)
		return NULL;
	if (!f->file) {
		if (f->match || f->preset || f->id_template || f->from_start)
			return "--match, --preset, --id-template and --from-start go with --follow";
		return nargs ? NULL : "no request ID given";
	}
	if (nargs) {
		char esc[SG_ESCAPED_MAX];
		snprintf(buf, sizeof(buf), "unexpected argument '%.64s': --follow reads the IDs from the log",
			 sg_text_escape(args[0], esc, sizeof(esc)));
		return buf;
	}
	if (f->match && f->preset)
		return "--match and --preset are two ways to say the same: give one";
	return f->match || f->preset ? NULL : "--follow needs --match REGEX or --preset NAME";
}

int cmd_abort(int argc, char **argv)
{
	static const struct option opts[] = {
		{"abort-dir", required_argument, NULL, 'a'},
		{"ttl", required_argument, NULL, 't'},
		{"follow", required_argument, NULL, 'F'},
		{"match", required_argument, NULL, 'm'},
		{"preset", required_argument, NULL, 'P'},
		{"id-template", required_argument, NULL, 'T'},
		{"from-start", no_argument, NULL, 'S'},
		{"format", required_argument, NULL, 'f'},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{"init-dir", required_argument, NULL, 'I'},
		{0},
	};
	const char *dir_arg = getenv("SHMGUARD_ABORT_DIR"), *ttl_arg = getenv("SHMGUARD_ABORT_TTL");
	const char *roots_arg = getenv("SHMGUARD_SHM_ROOTS");
	struct sg_roots roots = {0};
	char dir[SG_PATH_MAX + 1];
	struct abort_follow_opts follow = {0};
	unsigned ttl = SG_DEFAULT_ABORT_TTL;
	int c, dfd, status = EXIT_OK;
	bool init = false;
	const char *why;
	bool format_given = false;

	while ((c = getopt_long(argc, argv, "a:t:hV", opts, NULL)) != -1) {
		switch (c) {
		case 'a':
			dir_arg = optarg;
			break;
		case 't':
			ttl_arg = optarg;
			break;
		case 'F': follow.file = optarg; break;
		case 'm': follow.match = optarg; break;
		case 'P': follow.preset = optarg; break;
		case 'T': follow.id_template = optarg; break;
		case 'S': follow.from_start = true; break;
		case 'I':
			dir_arg = optarg;
			init = true;
			break;
		case 'f':
			if (strcmp(optarg, "cri") != 0 && strcmp(optarg, "plain") != 0)
				return cli_usage_fail(EXIT_USAGE, "abort", "bad --format '%s': expected plain or cri", optarg);
			follow.cri = strcmp(optarg, "cri") == 0;
			format_given = true;
			break;
		case 'h':
			usage(stdout);
			return EXIT_OK;
		case 'V': return cli_version();
		default: return cli_try_help(EXIT_USAGE, "abort");
		}
	}
	if ((why = usage_error(&follow, init, argc - optind, argv + optind)))
		return cli_usage_fail(EXIT_USAGE, "abort", "%s", why);
	if (format_given && !follow.file)
		return cli_usage_fail(EXIT_USAGE, "abort", "--format goes with --follow");
	if ((why = sg_config_check_dir(dir_arg && *dir_arg ? dir_arg : SG_DEFAULT_ABORT_DIR, dir)))
		return cli_usage_fail(EXIT_USAGE, "abort", "bad abort directory '%s': %s", dir_arg, why);
	/* The roots the shims see: theirs are the default and SHMGUARD_SHM_ROOTS. */
	sg_roots_add(&roots, SG_DEFAULT_ROOT);
	if (roots_arg && *roots_arg && (why = sg_roots_add_list(&roots, roots_arg)))
		return cli_usage_fail(EXIT_USAGE, "abort", "bad SHMGUARD_SHM_ROOTS '%s': %s", roots_arg, why);
	if ((why = sg_roots_check_abort_dir(&roots, dir)))
		return cli_usage_fail(EXIT_USAGE, "abort", "bad abort directory '%s': %s", dir, why);
	if (ttl_arg && sg_config_parse_ttl(ttl_arg, &ttl) < 0)
		return cli_usage_fail(EXIT_USAGE, "abort", "bad TTL '%s': expected a duration of whole seconds from 1 to %d (600, 10m, 1h)", ttl_arg,
				SG_MAX_ABORT_TTL);
	if (init)
		return init_dir(dir);
	if (follow.file)
		return abort_follow(&follow, dir, ttl, open_dir, write_marker);
	/* All IDs are checked before any marker is written. */
	for (int i = optind; i < argc; i++)
		if ((why = sg_reqid_invalid(argv[i])) ||
		    (strcmp(argv[i], SG_ABORT_DIR_STAMP) == 0 && (why = "the name of the abort directory's stamp"))) {
			char shown[SG_ESCAPED_MAX];

			return cli_usage_fail(EXIT_USAGE, "abort", "bad request ID '%s': %s",
					      sg_text_escape(argv[i], shown, sizeof(shown)), why);
		}

	dfd = open_dir(dir);
	if (dfd < 0)
		return EXIT_FAIL;
	sg_markers_expire(dfd, ttl);
	for (int i = optind; i < argc; i++)
		if (write_marker(dfd, dir, argv[i]) != EXIT_OK)
			status = EXIT_FAIL;
	close(dfd);
	return status;
}
