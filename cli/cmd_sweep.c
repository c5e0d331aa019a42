/* shmguard sweep: reclaim what no live process will ever unlink.  Every
 * decision is printed with its reason; anything in use, anything whose
 * owner cannot be told, and anything that changed since it was examined is
 * kept. */
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "cli.h"
#include "reqid.h"
#include "shm_files.h"
#include "size.h"
#include "text.h"
#include "duration.h"

/* A creator may sit between its O_EXCL create and its ftruncate. */
#define YOUNG_EMPTY_S 5.0

/* Anyone who can open a root can hold a lock on it: a sweep waits for
 * another sweep this long at most, trying every LOCK_RETRY_MS. */
#define LOCK_WAIT_MS 2000
#define LOCK_RETRY_MS 50

struct sweep_opts {
	bool dead, dry_run, ignore_unreadable;
	const char *json; /* --json's FILE, "-" for stdout; NULL: text */
	const char **requests;
	unsigned nrequests;
	const char *glob;
	double older_than;
	bool have_older_than;
};

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: shmguard sweep [--dead] [--request ID]... [--glob GLOB --older-than DURATION]\n"
		"                      [--root DIR]... [--ignore-unreadable] [--dry-run] [--json [FILE]]\n\n"
		"Unlinks files under the shm roots that nobody will unlink:\n"
		"  --dead              tagged files whose creator is gone (a reused pid does not count as\n"
		"                      alive) and that no live process has open or mapped\n"
		"  --request ID        every file tagged with that request, whoever created it, unless a\n"
		"                      live process has it open or mapped (repeatable)\n"
		"  --glob GLOB --older-than DURATION\n"
		"                      untagged files whose name matches GLOB (fnmatch) and that are older\n"
		"                      than DURATION (e.g. 90, 30s, 10m, 2h, 1d), when nobody uses them\n"
		"                      (--match GLOB is the old, deprecated name of --glob)\n"
		"  --root DIR          a shm root to sweep instead of /dev/shm (repeatable)\n"
		"  --ignore-unreadable sweep even though some processes' files cannot be read (not\n"
		"                      root, or a process more privileged than this one): their use\n"
		"                      of a file is then not seen\n"
		"  --dry-run           decide and print, unlink nothing\n"
		"  --json [FILE]       the decisions as JSON, into FILE (--json=FILE too; none or -:\n"
		"                      stdout)\n"
		"  -h, --help          show this help\n"
		"  -V, --version       print the version\n"
		"Never unlinked: a file in use (or, without --ignore-unreadable, whose users cannot all\n"
		"be seen), a zero-length file younger than %.0f s, a name whose inode changed since it\n"
		"was examined, a symlink.  Sweeps of one root run one at a time: a root another\n"
		"process keeps locked for %d s is not swept.\n\n"
		"Exit status: 0; 1 a file could not be removed, or a root read; 2 bad usage; 3 a root\n"
		"stayed locked by another process (the other roots are swept).\n",
		YOUNG_EMPTY_S, LOCK_WAIT_MS / 1000);
}

/* Why f must be kept, or NULL when it may go; *why_go says why it may. */
static const char *judge(const struct sweep_opts *o, const struct sg_shm_listing *l, const struct sg_shm_file *f,
			 const char **why_go, char *buf, size_t len)
{
	bool wanted = false;
	char comm[32], esc[sizeof(comm) * 4];

	*why_go = NULL;
	if (f->journal_like) /* never one shmguard made: sweep removes only journals it reads */
		return o->glob && fnmatch(o->glob, f->name, FNM_PATHNAME) == 0
			       ? "named like shmguard's ownership journal, but not one it wrote or reads: never removed"
			       : NULL;
	if (f->tagged) {
		for (unsigned i = 0; i < o->nrequests && !wanted; i++)
			if (strcmp(f->tag.req, o->requests[i]) == 0) {
				wanted = true;
				*why_go = "its request was swept";
			}
		if (!wanted && o->dead && f->creator == CREATOR_DEAD) {
			wanted = true;
			*why_go = "its creator is gone";
		}
		if (!wanted && o->dead && f->creator == CREATOR_UNKNOWN)
			return sg_proc_foreign() ? "cannot tell whether its creator runs: /proc is another pid namespace's"
						 : "cannot tell whether its creator runs";
	} else if (o->glob && fnmatch(o->glob, f->name, FNM_PATHNAME) == 0) {
		if (f->age_s < o->older_than)
			return NULL; /* not a candidate: too young for --older-than */
		wanted = true;
		*why_go = "untagged, matches, old enough";
	}
	if (!wanted)
		return NULL;
	if (f->nholders) {
		snprintf(buf, len, "in use by %u (%s)", f->holders[0].pid,
			 sg_text_escape(sg_comm(f->holders[0].pid, comm, sizeof(comm)), esc, sizeof(esc)));
		return buf;
	}
	if (l->holders.unreadable && !o->ignore_unreadable) {
		snprintf(buf, len, "%u %s cannot be read, e.g. %u (%s), and could be using it",
			 SG_PLURAL(l->holders.unreadable, "process", "processes"), l->holders.first_unreadable,
			 sg_text_escape(sg_comm(l->holders.first_unreadable, comm, sizeof(comm)), esc, sizeof(esc)));
		return buf;
	}
	if (f->size == 0 && f->age_s < YOUNG_EMPTY_S)
		return "empty and young: its creator may not have sized it yet";
	return NULL;
}

struct outcome {
	unsigned removed, kept, failed;
	uint64_t bytes;
	json_t *decisions;
};

/* path is the file's, as its bytes are (escaped here for a terminal, or
 * made JSON-safe); why is ours (with any outside string in it escaped). */
static void say(struct outcome *out, const struct sweep_opts *o, const char *verdict, const char *path,
		uint64_t bytes, const char *why)
{
	char esc[SG_ESCAPED_MAX];

	if (o->json) {
		json_t *d = json_pack("{s:s, s:I, s:s}", "decision", verdict, "allocated_bytes", (json_int_t)bytes,
				      "reason", why);
		cli_json_set_text(d, "path", path);
		json_array_append_new(out->decisions, d);
	} else {
		printf("%-13s %s (%llu bytes): %s\n", verdict, sg_text_escape(path, esc, sizeof(esc)),
		       (unsigned long long)bytes, why);
	}
}

/* Unlinks f if its name still refers to the inode examined. */
static void remove_file(struct outcome *out, const struct sweep_opts *o, int dfd, const char *path,
			const struct sg_shm_file *f, const char *why)
{
	char msg[160];

	switch (sg_shm_unlink_same(dfd, f->name, f->kdev, f->ino, o->dry_run)) {
	case SG_UNLINK_GONE:
		say(out, o, "gone", path, 0, "removed by someone else meanwhile");
		return;
	case SG_UNLINK_REPLACED:
		out->kept++;
		say(out, o, "kept", path, f->bytes, "the name now refers to another file");
		return;
	case SG_UNLINK_FAILED:
		out->failed++;
		snprintf(msg, sizeof(msg), "%s: %s", why, strerror(errno));
		say(out, o, "failed", path, f->bytes, msg);
		return;
	case SG_UNLINK_DONE:
		out->removed++;
		out->bytes += f->bytes;
		say(out, o, o->dry_run ? "would remove" : "removed", path, f->bytes, why);
		return;
	}
}

struct reaping {
	struct outcome *out;
	const struct sweep_opts *o;
};

static void journal_reaped(const char *root, const char *name, void *opaque)
{
	struct reaping *g = opaque;
	char path[SG_PATH_MAX + SG_NAME_MAX + 2];

	snprintf(path, sizeof(path), "%s/%s", root, name);
	say(g->out, g->o, g->o->dry_run ? "would remove" : "removed", path, 0,
	    "ownership journal of a dead creator, none of its files left");
}

/* An exclusive lock on dfd, waited for LOCK_WAIT_MS at most: never for
 * good, as a lock others can take is no lock to wait on.  Returns 0, or -1
 * with errno (EWOULDBLOCK: still held by someone else). */
static int lock_root(int dfd)
{
	uint64_t until = sg_monotonic_ns() + LOCK_WAIT_MS * 1000000ull;
	const struct timespec pause = {0, LOCK_RETRY_MS * 1000000L};

	for (;;) {
		if (flock(dfd, LOCK_EX | LOCK_NB) == 0)
			return 0;
		if ((errno != EWOULDBLOCK && errno != EINTR) || sg_monotonic_ns() >= until)
			return -1;
		nanosleep(&pause, NULL);
	}
}

/* Returns EXIT_OK, or EXIT_FAIL or EXIT_LOCKED (said). */
static int sweep_root(struct outcome *out, const struct sweep_opts *o, const struct sg_shm_listing *l, unsigned r)
{
	char path[SG_PATH_MAX + SG_NAME_MAX + 2], buf[192];
	int dfd = open(l->roots.dir[r], O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (dfd < 0)
		return cli_fail(EXIT_FAIL, "sweep", "cannot open %s: %s", l->roots.dir[r], strerror(errno));
	/* One sweep at a time per root: two never unlink the same name.
	 * Without the lock, this root is not swept. */
	if (lock_root(dfd) < 0) {
		int ret = errno == EWOULDBLOCK
				  ? cli_fail(EXIT_LOCKED, "sweep",
					     "%s stayed locked by another process for %d s (another sweep, or anyone "
					     "who can open it): not swept",
					     l->roots.dir[r], LOCK_WAIT_MS / 1000)
				  : cli_fail(EXIT_FAIL, "sweep", "cannot lock %s: %s", l->roots.dir[r], strerror(errno));
		close(dfd);
		return ret;
	}
	for (size_t i = 0; i < l->n; i++) {
		const struct sg_shm_file *f = &l->files[i];
		const char *why_go, *keep;

		if (f->root != (int)r || !f->linked)
			continue;
		snprintf(path, sizeof(path), "%s/%s", l->roots.dir[r], f->name);
		keep = judge(o, l, f, &why_go, buf, sizeof(buf));
		if (keep) {
			out->kept++;
			say(out, o, "kept", path, f->bytes, keep);
		} else if (why_go) {
			remove_file(out, o, dfd, path, f, why_go);
		}
	}
	/* Whatever the mode: a dead creator's journal that names no file left
	 * speaks for nothing. */
	sg_shm_reap_journals(l, r, dfd, o->dry_run, journal_reaped, &(struct reaping){out, o});
	close(dfd);
	return EXIT_OK;
}

/* Returns 0, 1 when --help was shown, or -1 on bad usage (reported). */
static int parse(int argc, char **argv, struct sweep_opts *o, struct sg_roots *roots)
{
	static const struct option opts[] = {
		{"dead", no_argument, NULL, 'D'},       {"request", required_argument, NULL, 'r'},
		{"glob", required_argument, NULL, 'g'}, {"match", required_argument, NULL, 'm'},
		{"older-than", required_argument, NULL, 'o'},
		{"root", required_argument, NULL, 'R'}, {"dry-run", no_argument, NULL, 'n'},
		{"json", optional_argument, NULL, 'j'}, {"help", no_argument, NULL, 'h'},
		{"ignore-unreadable", no_argument, NULL, 'I'}, {"version", no_argument, NULL, 'V'},
		{0},
	};
	int c;
	const char *why;
	bool warned_match = false;

	o->requests = calloc((size_t)argc, sizeof(*o->requests));
	if (!o->requests)
		return cli_fail(-1, "sweep", "out of memory");
	while ((c = getopt_long(argc, argv, "hV", opts, NULL)) != -1) {
		switch (c) {
		case 'D': o->dead = true; break;
		case 'r':
			if (sg_reqid_check(optarg, &why) < 0)
				return cli_usage_fail(-1, "sweep", "bad request ID '%s': %s", optarg, why);
			o->requests[o->nrequests++] = optarg;
			break;
		case 'm':
			/* --match is abort's PCRE2 regex; here it was a glob. */
			if (!warned_match)
				cli_warn("sweep", "--match is deprecated here: it is --glob (an fnmatch pattern, not "
						  "abort's regex)");
			warned_match = true;
			o->glob = optarg;
			break;
		case 'g': o->glob = optarg; break;
		case 'o':
			if (sg_parse_duration(optarg, &o->older_than) < 0)
				return cli_usage_fail(-1, "sweep", "bad --older-than '%s' (e.g. 90, 30s, 10m, 2h, 1d)",
						      optarg);
			o->have_older_than = true;
			break;
		case 'R':
			if (cli_add_root("sweep", roots, optarg) < 0)
				return -1;
			break;
		case 'n': o->dry_run = true; break;
		case 'j': o->json = cli_json_arg(argc, argv); break;
		case 'I': o->ignore_unreadable = true; break;
		case 'h': usage(stdout); return 1;
		case 'V': cli_version(); return 1;
		default: return cli_try_help(-1, "sweep");
		}
	}
	if (optind < argc)
		return cli_unexpected(-1, "sweep", argv[optind]);
	if (!o->dead && !o->nrequests && !o->glob)
		return cli_usage_fail(-1, "sweep", "nothing to sweep: give --dead, --request ID or --glob GLOB "
						   "--older-than DURATION");
	if (!o->glob != !o->have_older_than)
		return cli_usage_fail(-1, "sweep", "--glob and --older-than go together: untagged files need both");
	cli_default_root(roots);
	return 0;
}

int cmd_sweep(int argc, char **argv)
{
	struct sweep_opts o = {0};
	struct sg_shm_listing l = {0};
	struct outcome out = {0};
	char err[256], b1[16];
	struct cli_json_out json_out;
	bool json_open = false;
	int status = parse(argc, argv, &o, &l.roots);

	if (status == 0 && o.json) {
		if (cli_json_open("sweep", o.json, &json_out) < 0)
			status = -1;
		else
			json_open = true;
	}
	if (status != 0) {
		free(o.requests);
		return status > 0 ? EXIT_OK : EXIT_USAGE;
	}
	if (sg_shm_list(&l, err, sizeof(err)) < 0) {
		status = cli_fail(EXIT_FAIL, "sweep", "%s", err);
		goto out;
	}
	if (o.dead && sg_proc_foreign())
		fprintf(stderr, "shmguard sweep: /proc shows another pid namespace than this process's (/proc/self is "
				"not pid %d): no creator can be judged, so no file is removed as a dead creator's; run "
				"in the mount namespace too (nsenter -m -p), or mount this namespace's /proc\n",
			(int)getpid());
	if (o.json)
		out.decisions = json_array();
	for (unsigned r = 0; r < l.roots.n; r++) {
		int swept = sweep_root(&out, &o, &l, r);

		if (swept == EXIT_FAIL || (swept == EXIT_LOCKED && status == EXIT_OK))
			status = swept;
	}
	if (o.json) {
		json_t *root = json_pack("{s:i, s:s, s:o, s:i, s:i, s:i, s:I, s:b}", "schema", 1, "shmguard_version",
					 SHMGUARD_VERSION, "decisions", out.decisions, "removed",
					 out.removed, "kept", out.kept, "failed", out.failed, "reclaimed_bytes",
					 (json_int_t)out.bytes, "dry_run", o.dry_run);
		if (cli_json_write("sweep", root, &json_out) < 0)
			status = EXIT_FAIL;
		json_open = false;
		json_decref(root);
	} else {
		printf("%s %u %s, %llu bytes (%s)%s; kept %u\n", o.dry_run ? "would remove" : "removed",
		       SG_PLURAL(out.removed, "file", "files"), (unsigned long long)out.bytes,
		       sg_human_bytes(out.bytes, b1, sizeof(b1)), o.dry_run ? " would be reclaimed" : " reclaimed",
		       out.kept);
	}
	if (out.failed)
		status = EXIT_FAIL;
out:
	if (json_open)
		cli_json_discard(&json_out);
	sg_shm_listing_free(&l);
	free(o.requests);
	return status;
}
