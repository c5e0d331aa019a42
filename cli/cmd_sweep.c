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
#include "marker_sweep.h"
#include "orphan_view.h"
#include "reqid.h"
#include "reclaim.h"
#include "shm_files.h"
#include "shm_mounts.h"
#include "size.h"
#include "text.h"
#include "duration.h"

struct sweep_opts {
	bool dead, instance_gone, dry_run, ignore_unreadable, node;
	struct sg_dir_id *pods; /* --pod's /dev/shm */
	long *pod_pids;
	unsigned npods;
	const char *json; /* --json's FILE, "-" for stdout; NULL: text */
	const char **requests;
	unsigned nrequests;
	const char *glob;
	double older_than;
	bool have_older_than;
	bool markers; /* --markers: a mode of its own (marker_sweep.h) */
	const char *abort_dir;
};

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: shmguard sweep [--dead [--instance-gone]] [--request ID]...\n"
		"                      [--glob GLOB --older-than DURATION]\n"
		"                      [--root DIR... | --node | --pod PID...]\n"
		"                      [--ignore-unreadable] [--dry-run] [--json [FILE]]\n"
		"       shmguard sweep --markers [--abort-dir DIR] [--root DIR]...\n\n"
		"Unlinks files under the shm roots that nobody will unlink:\n"
		"  --dead              tagged files whose creator is gone (a reused pid does not\n"
		"                      count as alive), and untagged files that shmguard watch\n"
		"                      recorded whose instance is gone (their creator's cgroup\n"
		"                      removed; in a shared cgroup, their creator and its parent\n"
		"                      dead), when no live process has them open or mapped\n"
		"  --instance-gone     with --dead, the stricter proof for tagged files too:\n"
		"                      their creator's instance must be gone, by shmguard watch's\n"
		"                      record of them (a dead worker may have handed a file to a\n"
		"                      live process)\n"
		"  --request ID        every file tagged with that request, whoever created it,\n"
		"                      unless a live process has it open or mapped (repeatable)\n"
		"  --glob GLOB --older-than DURATION\n"
		"                      untagged files whose name matches GLOB (fnmatch) and that\n"
		"                      are older than DURATION (e.g. 90, 30s, 10m, 2h, 1d), when\n"
		"                      nobody uses them\n"
		"  --markers           the requests marked in the abort directory, however\n"
		"                      marked (a touch too), swept from the journals as\n"
		"                      abort sweeps them: for creators that have exited\n"
		"  --abort-dir DIR     with --markers (default: $SHMGUARD_ABORT_DIR, else\n"
		"                      %s)\n"
		"  --root DIR          a shm root to sweep instead of /dev/shm (repeatable)\n"
		"  --node              every tmpfs mounted at /dev/shm in any mount namespace of\n"
		"                      the machine (every pod's and container's), each named by a\n"
		"                      process that reaches it: [pid P mnt:N]/dev/shm/NAME. Run\n"
		"                      it as root in the initial pid namespace (a node agent's\n"
		"                      hostPID): creators of other pid namespaces are judged only\n"
		"                      from there\n"
		"  --pod PID           as --node, only the /dev/shm that process PID sees (a\n"
		"                      process of one pod, by its pid here; repeatable)\n"
		"  --ignore-unreadable\n"
		"                      sweep even though some processes' files cannot be read\n"
		"                      (not root, or a process more privileged than this one):\n"
		"                      their use of a file is then not seen\n"
		"  --dry-run           decide and print, unlink nothing\n"
		"  --json [FILE]       the decisions as JSON, into FILE (--json=FILE too;\n"
		"                      none or -: stdout)\n"
		"  -h, --help          show this help\n"
		"  -V, --version       print the version\n"
		"Never unlinked: a file in use (or, without --ignore-unreadable, whose users\n"
		"cannot all be seen), a zero-length file younger than %.0f s, a name whose inode\n"
		"changed since it was examined, a symlink. Sweeps of one root run one at a time:\n"
		"a root another process keeps locked for %d s is not swept.\n\n"
		"Exit status: 0; 1 a file could not be removed, or a root read; 2 bad usage; 3 a\n"
		"root stayed locked by another process (the other roots are swept).\n",
		SG_DEFAULT_ABORT_DIR, SG_RECLAIM_YOUNG_EMPTY_S, SG_RECLAIM_LOCK_WAIT_MS / 1000);
}

struct outcome {
	struct sg_reclaim_outcome n;
	json_t *decisions;
	unsigned proc_walks; /* --node: walks of /proc's processes made */
};

struct telling {
	struct outcome *out;
	const struct sweep_opts *o;
	const struct sg_shm_listing *l;
};

/* The root as JSON, for a root of another mount namespace: where it is
 * mounted there, and through which process it was reached. */
static json_t *root_json(const struct sg_shm_listing *l, unsigned r)
{
	const struct sg_shm_mount *m = l->mount[r];
	json_t *j;

	if (!m)
		return json_null();
	j = json_pack("{s:i, s:I, s:b}", "pid", (int)m->pid, "mount_namespace", (json_int_t)m->mntns, "this_namespace",
		      m->own_ns);
	cli_json_set_text(j, "mount_point", m->point);
	return j;
}

/* The decision's path is the file's, as its bytes are (escaped here for a
 * terminal, or made JSON-safe); why is ours (with any outside string in it
 * escaped).  In text, a root of another mount namespace is named by its
 * "[pid P mnt:N]" before its path there; in JSON, by "root". */
static void told(const struct sg_reclaim_decision *d, void *opaque)
{
	const struct telling *t = opaque;
	char path[SG_PATH_MAX + SG_NAME_MAX + 64], esc[SG_ESCAPED_MAX];
	const struct sg_shm_mount *m = t->l->mount[d->root];

	if (t->o->json) {
		json_t *j = json_pack("{s:s, s:I, s:s, s:o}", "decision", d->verdict, "allocated_bytes",
				      (json_int_t)d->bytes, "reason", d->why, "root", root_json(t->l, d->root));
		snprintf(path, sizeof(path), "%s/%s", m ? m->point : t->l->roots.dir[d->root], d->name);
		cli_json_set_text(j, "path", path);
		json_array_append_new(t->out->decisions, j);
	} else {
		snprintf(path, sizeof(path), "%s/%s", t->l->shown[d->root], d->name);
		printf("%-13s %s (%llu bytes): %s\n", d->verdict, sg_text_escape(path, esc, sizeof(esc)),
		       (unsigned long long)d->bytes, d->why);
	}
}

/* The creator records of shmguard watch, read once for --dead. */
static struct orphan_view records;

/* Sweeps every root of l.  Returns EXIT_OK, or EXIT_FAIL or EXIT_LOCKED
 * (said). */
static int sweep_listing(struct outcome *out, const struct sweep_opts *o, struct sg_shm_listing *l)
{
	const struct sg_reclaim_opts ro = {
		.dead = o->dead,
		.requests = o->requests,
		.nrequests = o->nrequests,
		.glob = o->glob,
		.older_than = o->older_than,
		.ignore_unreadable = o->ignore_unreadable,
		.dry_run = o->dry_run,
		.records = o->dead ? &records.store : NULL,
		.instance_gone = o->instance_gone,
	};
	struct telling t = {out, o, l};
	int status = EXIT_OK;
	char err[SG_PATH_MAX + 160];

	if (o->dead && sg_creators_proc_foreign(&l->proc->creators))
		fprintf(stderr, "shmguard sweep: /proc shows another pid namespace than this process's (/proc/self is "
				"not pid %d): no creator can be judged, so no file is removed as a dead creator's; run "
				"in the mount namespace too (nsenter -m -p), or mount this namespace's /proc\n",
			(int)getpid());
	for (unsigned r = 0; r < l->roots.n; r++) {
		char esc[SG_ESCAPED_MAX];

		if (l->journal_dir_untrusted[r])
			cli_warn_journal_dir_untrusted("sweep", l->shown[r]);
		int ret = sg_reclaim_root(l, r, &ro, &out->n, told, &t, err, sizeof(err));

		if (ret == 0)
			continue;
		sg_text_escape(err, esc, sizeof(esc));
		if (ret == -EWOULDBLOCK) {
			cli_fail(EXIT_LOCKED, "sweep", "%s", esc);
			if (status == EXIT_OK)
				status = EXIT_LOCKED;
		} else {
			status = cli_fail(EXIT_FAIL, "sweep", "%s", esc);
		}
	}
	if (o->dead)
		orphan_view_untagged(&records, l, o->json ? stderr : stdout);
	return status;
}

/* Lists and sweeps the roots given (or /dev/shm).  EXIT_OK, EXIT_FAIL or
 * EXIT_LOCKED. */
static int sweep_roots(struct outcome *out, const struct sweep_opts *o, const struct sg_roots *roots)
{
	struct sg_shm_listing l = {.roots = *roots};
	char err[SG_PATH_MAX + 160];
	int status;

	if (sg_shm_list(&l, err, sizeof(err)) < 0)
		status = cli_fail(EXIT_FAIL, "sweep", "%s", err);
	else
		status = sweep_listing(out, o, &l);
	sg_shm_listing_free(&l);
	return status;
}

static void list_failed(const char *err, void *ctx)
{
	char esc[SG_ESCAPED_MAX];

	*(int *)ctx = cli_fail(EXIT_FAIL, "sweep", "%s", sg_text_escape(err, esc, sizeof(esc)));
}

/* --node: every tmpfs at /dev/shm in every mount namespace, SG_MAX_ROOTS
 * to a listing, /proc read once for them all, each root listed and swept
 * through its descriptor. */
static int sweep_node(struct outcome *out, const struct sweep_opts *o)
{
	struct sg_shm_mounts ms;
	struct sg_shm_pass pass = {0};
	char err[SG_PATH_MAX + 160], comm[32], esc[SG_ESCAPED_MAX];
	int status = EXIT_OK, ret = sg_shm_mounts_scan(&ms, NULL, 0);

	if (ret < 0)
		return cli_fail(EXIT_FAIL, "sweep", "cannot read /proc: %s", strerror(-ret));
	out->proc_walks++;
	/* With --pod, the other namespaces are none of this sweep's business. */
	if (ms.unreadable && !o->npods)
		status = cli_fail(EXIT_FAIL, "sweep",
				  "%u of %u mount %s could not be read, e.g. pid %d's (%s): "
				  "their /dev/shm is not swept",
				  ms.unreadable, SG_PLURAL(ms.namespaces, "namespace", "namespaces"), (int)ms.first_unreadable,
				  sg_text_escape(sg_comm((uint32_t)ms.first_unreadable, comm, sizeof(comm)), esc, sizeof(esc)));
	if ((ret = sg_shm_pass_add_mounts(&pass, &ms, o->pods, o->npods)) < 0)
		status = cli_fail(EXIT_FAIL, "sweep", "%s", strerror(-ret));
	else if (sg_shm_pass_list(&pass, list_failed, &status, err, sizeof(err)) < 0)
		status = cli_fail(EXIT_FAIL, "sweep", "%s", sg_text_escape(err, esc, sizeof(esc)));
	else
		out->proc_walks += sg_shm_pass_walks(&pass);
	for (size_t i = 0; i < pass.n; i++) {
		int swept;

		if (!pass.l[i].listed)
			continue;
		swept = sweep_listing(out, o, &pass.l[i]);
		if (swept == EXIT_FAIL || (swept == EXIT_LOCKED && status == EXIT_OK))
			status = swept;
	}
	sg_shm_pass_free(&pass);
	for (unsigned p = 0; p < o->npods; p++) {
		bool found = false;
		for (size_t i = 0; i < ms.n && !found; i++)
			found = ms.m[i].kdev == o->pods[p].kdev && ms.m[i].dir_ino == o->pods[p].ino;
		if (!found)
			status = cli_fail(EXIT_FAIL, "sweep",
					  "--pod %ld: its /dev/shm is no tmpfs mounted at /dev/shm that could be read: "
					  "not swept",
					  o->pod_pids[p]);
	}
	sg_shm_mounts_free(&ms);
	return status;
}

/* --pod PID: the /dev/shm of that process.  0, or -1 (said). */
static int add_pod(struct sweep_opts *o, const char *arg, int argc)
{
	char *end;
	long pid;
	int ret;

	errno = 0;
	pid = strtol(arg, &end, 10);
	if (errno || end == arg || *end || pid <= 0 || pid > INT32_MAX)
		return cli_usage_fail(-1, "sweep", "bad --pod '%s': a process id", arg);
	if (!o->pods && (!(o->pods = calloc((size_t)argc, sizeof(*o->pods))) ||
			 !(o->pod_pids = calloc((size_t)argc, sizeof(*o->pod_pids)))))
		return cli_fail(-1, "sweep", "out of memory");
	o->pod_pids[o->npods] = pid;
	if ((ret = sg_shm_dir_of((pid_t)pid, "/dev/shm", &o->pods[o->npods].kdev, &o->pods[o->npods].ino)) < 0)
		return cli_usage_fail(-1, "sweep", "--pod %ld: cannot reach its /dev/shm: %s", pid, strerror(-ret));
	o->npods++;
	return 0;
}

/* --markers goes with --abort-dir and --root alone. */
static int parse_markers(struct sweep_opts *o, struct sg_roots *roots)
{
	static char dir[SG_PATH_MAX + 1];
	const char *given = o->abort_dir ? o->abort_dir : getenv("SHMGUARD_ABORT_DIR"), *why;

	if (!o->markers)
		return cli_usage_fail(-1, "sweep", "--abort-dir goes with --markers");
	if (o->dead || o->nrequests || o->glob || o->have_older_than || o->node || o->dry_run || o->json ||
	    o->ignore_unreadable || o->instance_gone)
		return cli_usage_fail(-1, "sweep", "--markers is a mode of its own: only --abort-dir and --root go "
						   "with it");
	if (sg_config_check_dir(given && *given ? given : SG_DEFAULT_ABORT_DIR, dir, &why) < 0)
		return cli_usage_fail(-1, "sweep", "bad abort directory '%s': %s", given, why);
	cli_default_root(roots);
	if (sg_roots_check_abort_dir(roots, dir, &why) < 0)
		return cli_usage_fail(-1, "sweep", "bad abort directory '%s': %s", dir, why);
	o->abort_dir = dir;
	return 0;
}

/* Returns 0, 1 when --help was shown, or -1 on bad usage (reported). */
static int parse(int argc, char **argv, struct sweep_opts *o, struct sg_roots *roots)
{
	static const struct option opts[] = {
		{"dead", no_argument, NULL, 'D'},       {"request", required_argument, NULL, 'r'},
		{"glob", required_argument, NULL, 'g'},
		{"older-than", required_argument, NULL, 'o'},
		{"root", required_argument, NULL, 'R'}, {"dry-run", no_argument, NULL, 'n'},
		{"json", optional_argument, NULL, 'j'}, {"help", no_argument, NULL, 'h'},
		{"ignore-unreadable", no_argument, NULL, 'I'}, {"version", no_argument, NULL, 'V'},
		{"node", no_argument, NULL, 'N'},       {"pod", required_argument, NULL, 'P'},
		{"instance-gone", no_argument, NULL, 'G'}, {"markers", no_argument, NULL, 'K'},
		{"abort-dir", required_argument, NULL, 'a'},
		{0},
	};
	int c;
	const char *why;

	o->requests = calloc((size_t)argc, sizeof(*o->requests));
	if (!o->requests)
		return cli_fail(-1, "sweep", "out of memory");
	while ((c = getopt_long(argc, argv, "hV", opts, NULL)) != -1) {
		switch (c) {
		case 'D': o->dead = true; break;
		case 'G': o->instance_gone = true; break;
		case 'r':
			if (sg_reqid_check(optarg, &why) < 0)
				return cli_usage_fail(-1, "sweep", "bad request ID '%s': %s", optarg, why);
			o->requests[o->nrequests++] = optarg;
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
		case 'N': o->node = true; break;
		case 'K': o->markers = true; break;
		case 'a': o->abort_dir = optarg; break;
		case 'P':
			if (add_pod(o, optarg, argc) < 0)
				return -1;
			o->node = true;
			break;
		case 'h': usage(stdout); return 1;
		case 'V': cli_version(); return 1;
		default: return cli_try_help(-1, "sweep");
		}
	}
	if (optind < argc)
		return cli_unexpected(-1, "sweep", argv[optind]);
	if (o->markers || o->abort_dir)
		return parse_markers(o, roots);
	if (!o->dead && !o->nrequests && !o->glob)
		return cli_usage_fail(-1, "sweep", "nothing to sweep: give --dead, --request ID or --glob GLOB "
						   "--older-than DURATION");
	if (o->instance_gone && !o->dead)
		return cli_usage_fail(-1, "sweep", "--instance-gone is a stricter --dead: give --dead too");
	if (!o->glob != !o->have_older_than)
		return cli_usage_fail(-1, "sweep", "--glob and --older-than go together: untagged files need both");
	if (o->node && roots->n)
		return cli_usage_fail(-1, "sweep", "--node and --pod sweep pods' /dev/shm: no --root with them");
	cli_default_root(roots);
	return 0;
}

int cmd_sweep(int argc, char **argv)
{
	struct sweep_opts o = {0};
	struct sg_roots roots = {0};
	struct outcome out = {0};
	char b1[16];
	struct cli_json_out json_out;
	int status = parse(argc, argv, &o, &roots);

	if (status == 0 && o.json && cli_json_open("sweep", o.json, &json_out) < 0)
		status = -1;
	if (status != 0) {
		free(o.requests);
		free(o.pods);
		free(o.pod_pids);
		return status > 0 ? EXIT_OK : EXIT_USAGE;
	}
	if (o.markers) {
		status = marker_sweep(o.abort_dir, &roots);
		free(o.requests);
		return status;
	}
	if (o.json)
		out.decisions = json_array();
	if (o.dead)
		orphan_view_load(&records);
	status = o.node ? sweep_node(&out, &o) : sweep_roots(&out, &o, &roots);
	orphan_view_free(&records);
	if (o.json) {
		json_t *root = json_pack("{s:i, s:s, s:o, s:i, s:i, s:i, s:I, s:b, s:b}", "schema", 1,
					 "shmguard_version", SHMGUARD_VERSION, "decisions", out.decisions, "removed",
					 out.n.removed, "kept", out.n.kept, "failed", out.n.failed, "reclaimed_bytes",
					 (json_int_t)out.n.bytes, "dry_run", o.dry_run, "node", o.node);
		if (o.node)
			json_object_set_new(root, "proc_walks", json_integer(out.proc_walks));
		if (cli_json_write("sweep", root, &json_out) < 0)
			status = EXIT_FAIL;
		json_decref(root);
	} else {
		printf("%s %u %s, %llu bytes (%s)%s; kept %u\n", o.dry_run ? "would remove" : "removed",
		       SG_PLURAL(out.n.removed, "file", "files"), (unsigned long long)out.n.bytes,
		       sg_human_bytes(out.n.bytes, b1, sizeof(b1)), o.dry_run ? " would be reclaimed" : " reclaimed",
		       out.n.kept);
	}
	if (out.n.failed)
		status = EXIT_FAIL;
	free(o.requests);
	free(o.pods);
	free(o.pod_pids);
	return status;
}
