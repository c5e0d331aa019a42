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
#include "clock.h"
#include "reqid.h"
#include "request_sweep.h"
#include "text.h"
#include "size.h"

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: shmguard abort [-a DIR] [-t DURATION] [--no-sweep] REQUEST-ID...\n"
		"       shmguard abort --init-dir DIR\n"
		"       shmguard abort --follow FILE|- (--match REGEX | --preset NAME)\n"
		"                      [--id-template T] [--from-start] [--format plain|cri]\n"
		"                      [-a DIR] [-t DURATION] [--no-sweep]\n\n"
		"Marks each request aborted by creating DIR/REQUEST-ID (or refreshing its time),\n"
		"and unlinks the files the ownership journals in the shm roots record for it\n"
		"(/dev/shm and $SHMGUARD_SHM_ROOTS, as the shims see them; read before the\n"
		"markers are written, from ROOT/.shmguard when it is a directory of root's with\n"
		"mode 1777, else by listing the root; a directory over 4096 entries or 2 MiB\n"
		"of journals left to the shims), each only if its name still refers to the\n"
		"recorded inode, and prints one line: \"request ID: swept N files, B bytes\n"
		"(SIZE) in T us\".  Every process running under libshmguard.so with the same\n"
		"abort directory also unlinks the segments it created for that request, the\n"
		"ones it creates later too.  Markers older than the TTL are removed on the\n"
		"way, in a directory shmguard made only.\n"
		"DIR must be yours or root's, and not world-writable without the sticky bit.\n\n"
		"  -a, --abort-dir DIR   marker directory (default: $SHMGUARD_ABORT_DIR, else\n"
		"                        %s)\n"
		"  -t, --ttl DURATION    marker lifetime (600, 10m; default: $SHMGUARD_ABORT_TTL,\n"
		"                        else %d s)\n"
		"      --init-dir DIR    only make DIR the abort directory: create it and stamp\n"
		"                        it as shmguard's (so that old markers expire), or stamp\n"
		"                        an empty one; checked as above (for a service's\n"
		"                        ExecStartPre=)\n"
		"      --no-sweep        only write the markers: leave the sweep to the shims\n"
		"  -h, --help            show this help\n"
		"  -V, --version         print the version\n\n"
		"With --follow, reads a log (a file followed by name like tail -F, through\n"
		"rotation and truncation, from its end; or stdin) and marks aborted each request\n"
		"ID a line yields (and sweeps its files), until SIGINT or SIGTERM (or the end of\n"
		"stdin). A summary goes to stderr, then a line adding up what was swept.\n"
		"      --follow FILE|-   the log to read\n"
		"      --match REGEX     PCRE2; the ID is its group (?<req>...), else its first\n"
		"                        group; matched again where the last match ended (several\n"
		"                        IDs a line)\n"
		"      --preset NAME     a ready regex: vllm, sglang, nginx or envoy (see\n"
		"                        docs/usage.md)\n"
		"      --id-template T   the request ID made from the logged one: 'chatcmpl-{id}'\n"
		"      --from-start      the file's present lines too, not only new ones\n"
		"      --format cri      the file is a CRI container log\n"
		"                        (/var/log/pods/.../N.log, podman's k8s-file): each\n"
		"                        line's runtime prefix is removed and the lines the\n"
		"                        runtime split (P) joined up to their end (F) before\n"
		"                        matching; lines without the prefix are dropped. Default:\n"
		"                        plain\n\n"
		"An ID a followed log yields that the shims would not accept is skipped and\n"
		"counted, not fatal.\n\n"
		"Exit status: 0 all marked; 1 a marker could not be written, DIR is refused, or a\n"
		"file or root could not be swept; 2 bad usage or ID.\n\n"
		"Exit status with --follow: 0 stopped by a signal or at the end of stdin; 1 a\n"
		"marker could not be written, a file could not be swept or the log could not be\n"
		"read; 2 bad usage.\n",
		SG_DEFAULT_ABORT_DIR, SG_DEFAULT_ABORT_TTL);
}

/* The marker directory, made (one level, stamped) when missing; the
 * follower reopens it through this too. */
static int open_dir(const char *dir)
{
	return cli_abort_dir_open("abort", dir, true);
}

static const char *kind(const struct stat *st)
{
	return !S_ISREG(st->st_mode) ? S_ISFIFO(st->st_mode) ? "a FIFO" : "not a regular file"
	       : st->st_nlink != 1   ? "a file with more than one link"
				     : "a file";
}

/* Creates DIR/ID, or gives an existing marker a new time.  What is there
 * already must be a marker the shims accept (sg_marker_file_check):
 * another user's file, a hard link or a FIFO planted under that name is
 * reported, never opened for reading or waited on (O_NONBLOCK), never
 * removed. */
static int write_marker(int dfd, const char *dir, const char *id)
{
	int fd = openat(dfd, id, O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, 0644);
	int status = EXIT_OK, saved = errno;
	char shown[SG_ESCAPED_MAX]; /* the ID may come from a log: escaped */
	const char *why; /* the shims' reason; what the file is is said instead */
	struct stat st;

	sg_text_escape(id, shown, sizeof(shown));

	if (fd < 0 && fstatat(dfd, id, &st, AT_SYMLINK_NOFOLLOW) == 0 && sg_marker_file_check(&st, geteuid(), &why) < 0)
		goto foreign;
	/* The open's error, not the fstatat's (EACCES, not ENOENT). */
	if (fd < 0)
		return cli_fail(EXIT_FAIL, "abort", "cannot write marker %s/%s: %s", dir, shown, strerror(saved));
	if (fstat(fd, &st) < 0) {
		status = cli_fail(EXIT_FAIL, "abort", "cannot write marker %s/%s: %s", dir, shown, strerror(errno));
		goto cleanup;
	}
	if (sg_marker_file_check(&st, geteuid(), &why) < 0)
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

/* The roots abort sweeps (the shims': the default and SHMGUARD_SHM_ROOTS),
 * NULL with --no-sweep; static for --follow's write_marker callback, which
 * adds up what it swept in followed. */
static const struct sg_roots *sweep_roots;
static struct request_swept followed;
static unsigned followed_requests, followed_left;
static bool follow_sweep_failed;

static void say_swept(const struct request_swept *out, const struct request_sweep *rs, double us, unsigned ttl)
{
	char human[16], left[96] = "", shown[SG_ESCAPED_MAX], big[SG_ESCAPED_MAX + 96] = "", later[160] = "";
	char from[SG_ESCAPED_MAX + 96] = "";

	if (out->replaced)
		snprintf(left, sizeof(left), "; left %u recorded %s alone (now another file's)",
			 SG_PLURAL(out->replaced, "name", "names"));
	if (rs->left)
		snprintf(big, sizeof(big), "; %s left to the shims (over %d entries or %u MiB of journal records)",
			 sg_text_escape(rs->left_root, shown, sizeof(shown)), REQUEST_SWEEP_MAX_ENTRIES,
			 REQUEST_SWEEP_MAX_JOURNAL_BYTES >> 20);
	if (rs->from_dir)
		snprintf(from, sizeof(from), "; journals read from %s/" SG_JOURNAL_DIR "%s%.0u%s, not by listing the %s",
			 sg_text_escape(rs->from_dir_root, shown, sizeof(shown)), rs->from_dir > 1 ? " and " : "",
			 rs->from_dir - 1, rs->from_dir > 1 ? " more" : "", rs->from_dir > 1 ? "roots" : "root");
	/* "swept 0 files" is no failure: the shims remove the rest later. */
	if (!out->files)
		snprintf(later, sizeof(later),
			 "; files made for it from now on are removed by the shims as they appear, while the marker "
			 "lasts (%u s)",
			 ttl);
	printf("swept %u %s, %llu bytes (%s) in %.0f us%s%s%s%s\n", SG_PLURAL(out->files, "file", "files"),
	       (unsigned long long)out->bytes, sg_human_bytes(out->bytes, human, sizeof(human)), us, from, left, big,
	       later);
}

/* Sweeps the files of reqs[0..n) that rs read, all marked at started_ns
 * (monotonic), and says so in one line: "request ID: swept N files, B bytes
 * in T" (T from the first marker to the last unlink). */
static int sweep_marked(const struct request_sweep *rs, const char *const *reqs, unsigned n, uint64_t started_ns,
			unsigned ttl)
{
	struct request_swept out = {0};
	char shown[SG_ESCAPED_MAX];
	double us;

	request_sweep_run(rs, reqs, n, &out);
	us = (sg_monotonic_ns() - started_ns) / 1e3;
	if (n == 1)
		printf("request %s: ", sg_text_escape(reqs[0], shown, sizeof(shown)));
	else
		printf("%u requests: ", n);
	say_swept(&out, rs, us, ttl);
	return rs->failed || out.failed ? EXIT_FAIL : EXIT_OK;
}

/* --follow's marker: the journals read, the marker written, then its
 * request's files swept, silently (a burst of aborts is no burst of lines):
 * the total goes into followed. */
static int write_marker_and_sweep(int dfd, const char *dir, const char *id)
{
	struct request_sweep rs;
	struct request_swept out = {0};
	int status;

	if (!sweep_roots)
		return write_marker(dfd, dir, id);
	request_sweep_read(&rs, sweep_roots, "abort");
	if ((status = write_marker(dfd, dir, id)) == EXIT_OK) {
		request_sweep_run(&rs, &id, 1, &out);
		follow_sweep_failed |= rs.failed || out.failed;
		followed.files += out.files;
		followed.bytes += out.bytes;
		followed.replaced += out.replaced;
		followed_left += rs.left;
		followed_requests++;
	}
	request_sweep_free(&rs);
	/* A sweep's failure is said, and fails the command at its end: the
	 * marker is written. */
	return status;
}

/* After --follow: what its sweeps did, in one line on stderr, after the
 * follower's summary. */
static int follow_and_sweep(const struct abort_follow_opts *o, const char *dir, unsigned ttl)
{
	char human[16];
	int status = abort_follow(o, dir, ttl, open_dir, write_marker_and_sweep);

	if (!sweep_roots || status == EXIT_USAGE) /* bad usage: nothing was followed */
		return status;
	fprintf(stderr, "shmguard abort: swept %u %s, %llu bytes (%s), of %u %s marked%s%s\n",
		SG_PLURAL(followed.files, "file", "files"), (unsigned long long)followed.bytes,
		sg_human_bytes(followed.bytes, human, sizeof(human)),
		SG_PLURAL(followed_requests, "request", "requests"),
		followed.replaced ? "; some recorded names now another file's, left alone" : "",
		followed_left ? "; some roots too large to read quickly, left to the shims" : "");
	return follow_sweep_failed && status == EXIT_OK ? EXIT_FAIL : status;
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
				  dir, SG_ABORT_DIR_STAMP, SG_PLURAL(entries, "file", "files"));
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
		{"no-sweep", no_argument, NULL, 'N'},
		{0},
	};
	const char *dir_arg = getenv("SHMGUARD_ABORT_DIR"), *ttl_arg = getenv("SHMGUARD_ABORT_TTL");
	const char *roots_arg = getenv("SHMGUARD_SHM_ROOTS");
	struct sg_roots roots = {0};
	char dir[SG_PATH_MAX + 1];
	struct abort_follow_opts follow = {0};
	unsigned ttl = SG_DEFAULT_ABORT_TTL;
	int c, dfd, status = EXIT_OK;
	bool init = false, no_sweep = false;
	const char **marked = NULL;
	unsigned nmarked = 0;
	struct request_sweep rs;
	uint64_t t0;
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
		case 'N': no_sweep = true; break;
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
	if (sg_config_check_dir(dir_arg && *dir_arg ? dir_arg : SG_DEFAULT_ABORT_DIR, dir, &why) < 0)
		return cli_usage_fail(EXIT_USAGE, "abort", "bad abort directory '%s': %s", dir_arg, why);
	/* The roots the shims see: theirs are the default and SHMGUARD_SHM_ROOTS. */
	sg_roots_add(&roots, SG_DEFAULT_ROOT, &why);
	if (roots_arg && *roots_arg && sg_roots_add_list(&roots, roots_arg, &why) < 0)
		return cli_usage_fail(EXIT_USAGE, "abort", "bad SHMGUARD_SHM_ROOTS '%s': %s", roots_arg, why);
	if (sg_roots_check_abort_dir(&roots, dir, &why) < 0)
		return cli_usage_fail(EXIT_USAGE, "abort", "bad abort directory '%s': %s", dir, why);
	if (ttl_arg && sg_config_parse_ttl(ttl_arg, &ttl) < 0)
		return cli_usage_fail(EXIT_USAGE, "abort", "bad TTL '%s': expected a duration of whole seconds from 1 to %d (600, 10m, 1h)", ttl_arg,
				SG_MAX_ABORT_TTL);
	if (init)
		return init_dir(dir);
	sweep_roots = no_sweep ? NULL : &roots;
	if (follow.file)
		return follow_and_sweep(&follow, dir, ttl);
	/* All IDs are checked before any marker is written. */
	for (int i = optind; i < argc; i++)
		if (sg_reqid_check(argv[i], &why) < 0 ||
		    (strcmp(argv[i], SG_ABORT_DIR_STAMP) == 0 && (why = "the name of the abort directory's stamp"))) {
			char shown[SG_ESCAPED_MAX];

			return cli_usage_fail(EXIT_USAGE, "abort", "bad request ID '%s': %s",
					      sg_text_escape(argv[i], shown, sizeof(shown)), why);
		}

	dfd = open_dir(dir);
	if (dfd < 0)
		return EXIT_FAIL;
	if (!(marked = calloc((size_t)argc, sizeof(*marked)))) {
		close(dfd);
		return cli_fail(EXIT_FAIL, "abort", "out of memory");
	}
	sg_markers_expire(dfd, ttl);
	/* The journals first: what a server creates for these requests from
	 * now on is in its shim's record, which it sweeps on the marker. */
	if (sweep_roots)
		request_sweep_read(&rs, sweep_roots, "abort");
	t0 = sg_monotonic_ns();
	for (int i = optind; i < argc; i++)
		if (write_marker(dfd, dir, argv[i]) != EXIT_OK)
			status = EXIT_FAIL;
		else
			marked[nmarked++] = argv[i];
	close(dfd);
	/* A request whose marker could not be written is not aborted. */
	if (sweep_roots && nmarked && sweep_marked(&rs, marked, nmarked, t0, ttl) != EXIT_OK)
		status = EXIT_FAIL;
	if (sweep_roots)
		request_sweep_free(&rs);
	free(marked);
	return status;
}
