/* shmguard watch: the light node service.  Follows the shm roots with the
 * auditor's tracer (no measurement) and keeps, for every file created in
 * them, a record of its creator as the kernel saw it (host/creator_store.h)
 * and of the other processes that open it (its attachers), so that `sweep --dead` can prove the orphans of programs nobody preloads.
 * Records of files that are gone are dropped. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "audit_trace.h"
#include "cli.h"
#include "clock.h"
#include "creator_store.h"
#include "holders.h"
#include "journal_read.h"
#include "procstat.h"
#include "text.h"
#include "watch_record.h"

/* The records are written at most this often when they changed, and the
 * records of files gone are dropped this often. */
#define SAVE_EVERY_MS 500
#define PRUNE_EVERY_MS 5000
/* A file the probe saw created without its name (the ctime probe fires
 * before the name exists) is looked for in its root for this long. */
#define NAME_WAIT_MS 2000
#define MAX_PENDING 4096

struct pending {
	struct sg_creator_rec rec;
	int root; /* -1: any root on its device (the probe did not say which directory) */
	uint64_t since_ms;
};

struct watch {
	struct sg_roots roots;
	uint32_t kdev[SG_MAX_ROOTS];
	uint64_t dir_ino[SG_MAX_ROOTS];
	int rootfd[SG_MAX_ROOTS];
	struct sg_creator_store store;
	int sd; /* the store's directory */
	bool dirty;
	struct pending *pending;
	size_t npending;
	bool said_full; /* that a file could not be recorded for want of room */
	bool attachers; /* opens are followed (not --no-attachers) */
};

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: shmguard watch [--root DIR]... [--probe NAME] [--no-attachers]\n\n"
		"Records who creates each file in the shm roots, as the kernel sees it (eBPF):\n"
		"the process and its start time, its ancestors up to its cgroup's first process,\n"
		"pid namespace, cgroup and command, the file's device, inode and name, and the\n"
		"other processes that open it (its attachers, up to %d). `shmguard ls` shows the\n"
		"records and `shmguard sweep --dead` removes the files whose instance is proven\n"
		"gone. Runs until SIGINT or SIGTERM; needs root. Records are kept in\n"
		"%s (SHMGUARD_STORE_DIR), which a restart keeps and a reboot forgets;\n"
		"those of files that are gone are dropped.\n\n"
		"  --root DIR       a shm root to follow instead of /dev/shm (repeatable)\n"
		"  --probe NAME     how to see files created: %s\n"
		"                   (default: the best this kernel allows)\n"
		"  --no-attachers   do not follow opens (on vfs_open where the kernel allows it,\n"
		"                   else at every system call's exit); sweep --dead then removes\n"
		"                   nothing by these records (any process may have opened a file)\n"
		"  -h, --help       show this help\n"
		"  -V, --version    print the version\n\n"
		"Exit status: 0 stopped by a signal; 1 the tracer or the records could not be set\n"
		"up; 2 bad usage.\n",
		SG_REC_ATTACHERS, SG_STORE_DIR, audit_probe_list);
}

static uint64_t now_ms(void)
{
	return sg_monotonic_ns() / 1000000u;
}

/* Said once: a file without a record is never proven an orphan. */
static void no_room(struct watch *w, const char *what)
{
	if (!w->said_full)
		fprintf(stderr, "shmguard watch: %s is full: files created from now on may have no record, and are "
				"never removed by sweep --dead\n",
			what);
	w->said_full = true;
}

static void put(struct watch *w, const struct sg_creator_rec *r)
{
	if (sg_store_put(&w->store, r) == 0)
		w->dirty = true;
	else
		no_room(w, "the record store (" SG_STORE_MAX_TEXT " records)");
}

/* r's file is called name in its root: recorded if it is still the inode
 * the kernel reported, with its birth time. */
static void named(struct watch *w, struct sg_creator_rec *r, unsigned root, const char *name)
{
	struct statx stx;

	/* One statx: the type, the inode and its birth (each file created costs it). */
	if (statx(w->rootfd[root], name, AT_SYMLINK_NOFOLLOW | AT_STATX_DONT_SYNC, STATX_TYPE | STATX_INO | STATX_BTIME,
		  &stx) < 0 ||
	    !S_ISREG(stx.stx_mode) || sg_kdev(makedev(stx.stx_dev_major, stx.stx_dev_minor)) != r->kdev ||
	    stx.stx_ino != r->ino)
		return;
	snprintf(r->name, sizeof(r->name), "%s", name);
	r->birth_ns = sg_statx_birth_ns(&stx);
	put(w, r);
}

static void on_create(struct watch *w, const struct audit_event *e)
{
	struct sg_creator_rec r = {.kdev = e->kdev, .ino = e->ino};
	const char *name = e->name;
	unsigned root;

	for (root = 0; root < w->roots.n; root++)
		if (w->kdev[root] == e->kdev && (!e->dir_ino || e->dir_ino == w->dir_ino[root]))
			break;
	if (root == w->roots.n)
		return; /* elsewhere on the device, a subdirectory */
	if (!e->dir_ino)
		root = (unsigned)-1;
	/* What the event says of its creator. */
	sg_watch_creator(&r, e);
	if (!w->attachers)
		r.flags |= SG_REC_ATTACHERS_UNSEEN;
	if (name[0] && !strchr(name, '/') && root != (unsigned)-1) {
		named(w, &r, root, name);
		return;
	}
	if (w->npending == MAX_PENDING) {
		no_room(w, "the queue of files whose names are looked for");
		return;
	}
	w->pending[w->npending++] = (struct pending){r, (int)root, now_ms()};
}

/* A process opened a followed file: one of its attachers, if it has a
 * record (or one waiting for its name). */
static void on_attach(struct watch *w, const struct audit_event *e)
{
	struct sg_creator_rec *r = sg_store_lookup(&w->store, e->kdev, e->ino);

	for (size_t i = 0; !r && i < w->npending; i++)
		if (w->pending[i].rec.kdev == e->kdev && w->pending[i].rec.ino == e->ino)
			r = &w->pending[i].rec;
	if (r && sg_watch_attacher(r, e))
		w->dirty = true;
}

/* The tracer's events, decoded (audit_trace.h): a creator recorder is
 * one consumer of them, the auditor's table another. */
static void on_event(void *ctx, const struct audit_event *e)
{
	if (e->type == AUDIT_EVENT_CREATE)
		on_create(ctx, e);
	else if (e->type == AUDIT_EVENT_ATTACH)
		on_attach(ctx, e);
}

/* Whether root r is where pending file p may be. */
static bool in_root(const struct watch *w, const struct pending *p, unsigned r)
{
	return p->root < 0 ? w->kdev[r] == p->rec.kdev : p->root == (int)r;
}

/* A listing of root r, through its own descriptor (the root's stays
 * open); NULL when it cannot be read. */
static DIR *open_root(struct watch *w, unsigned r)
{
	int fd = openat(w->rootfd[r], ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;

	if (!d && fd >= 0)
		close(fd);
	return d;
}

/* The names of the files the probe reported without one: each root with
 * some is read once. */
static void resolve_pending(struct watch *w)
{
	uint64_t now = now_ms();
	size_t kept = 0;

	for (unsigned r = 0; r < w->roots.n && w->npending; r++) {
		bool any = false;
		for (size_t i = 0; i < w->npending && !any; i++)
			any = in_root(w, &w->pending[i], r);
		if (!any)
			continue;
		DIR *d = open_root(w, r);
		struct dirent *e;
		if (!d)
			continue;
		while ((e = readdir(d)))
			for (size_t i = 0; i < w->npending; i++)
				if (in_root(w, &w->pending[i], r) && !w->pending[i].rec.name[0] &&
				    e->d_ino == w->pending[i].rec.ino)
					named(w, &w->pending[i].rec, r, e->d_name);
		closedir(d);
	}
	/* Named now, or given up after NAME_WAIT_MS (gone again, or elsewhere). */
	for (size_t i = 0; i < w->npending; i++)
		if (!w->pending[i].rec.name[0] && now - w->pending[i].since_ms < NAME_WAIT_MS)
			w->pending[kept++] = w->pending[i];
	w->npending = kept;
}

struct dev_ino {
	uint32_t kdev;
	uint64_t ino;
};

static int by_dev_ino(const void *x, const void *y)
{
	const struct dev_ino *a = x, *b = y;

	if (a->kdev != b->kdev)
		return (a->kdev > b->kdev) - (a->kdev < b->kdev);
	return (a->ino > b->ino) - (a->ino < b->ino);
}

/* Every (device, inode) the roots name now, sorted; NULL when a root could
 * not be read (then nothing is dropped). */
static struct dev_ino *present(struct watch *w, size_t *n)
{
	struct dev_ino *all = NULL;
	size_t cap = 0;

	*n = 0;
	for (unsigned r = 0; r < w->roots.n; r++) {
		DIR *d = open_root(w, r);
		struct dirent *e;

		if (!d) {
			free(all);
			return NULL;
		}
		while ((e = readdir(d))) {
			if (*n == cap) {
				struct dev_ino *m = realloc(all, (cap = cap ? cap * 2 : 256) * sizeof(*m));
				if (!m) {
					closedir(d);
					free(all);
					return NULL;
				}
				all = m;
			}
			all[(*n)++] = (struct dev_ino){w->kdev[r], e->d_ino};
		}
		closedir(d);
	}
	if (*n)
		qsort(all, *n, sizeof(*all), by_dev_ino);
	return all ? all : calloc(1, sizeof(*all));
}

/* The root on device kdev where name is, or -1. */
static int root_with(struct watch *w, uint32_t kdev, const char *name, uint64_t ino)
{
	struct stat st;

	for (unsigned r = 0; r < w->roots.n; r++)
		if (w->kdev[r] == kdev && fstatat(w->rootfd[r], name, &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_ino == ino)
			return (int)r;
	return -1;
}

/* Drops the records of files no longer in a root (or whose inode number
 * another file has now); a renamed file keeps its record, with its old
 * name (the inode is what counts).  Records of devices no root is on are
 * kept: another watch's roots. */
static void prune(struct watch *w)
{
	size_t n, kept = 0;
	struct dev_ino *now = present(w, &n);

	if (!now)
		return;
	for (size_t i = 0; i < w->store.n; i++) {
		struct sg_creator_rec *c = &w->store.recs[i];
		struct dev_ino key = {c->kdev, c->ino};
		bool on_roots = false, gone;
		int r;

		for (unsigned k = 0; k < w->roots.n; k++)
			on_roots |= w->kdev[k] == c->kdev;
		gone = on_roots && !bsearch(&key, now, n, sizeof(*now), by_dev_ino);
		if (!gone && on_roots && c->birth_ns && (r = root_with(w, c->kdev, c->name, c->ino)) >= 0) {
			uint64_t birth = sg_birth_ns(w->rootfd[r], c->name, AT_SYMLINK_NOFOLLOW);
			gone = birth && birth != c->birth_ns; /* the number was given to another file */
		}
		if (!gone)
			w->store.recs[kept++] = *c;
	}
	free(now);
	if (kept != w->store.n)
		w->dirty = true;
	w->store.n = kept;
}

static int save(struct watch *w)
{
	char err[256];

	if (!w->dirty)
		return 0;
	if (sg_store_save(&w->store, w->sd, err, sizeof(err)) < 0)
		return cli_fail(-1, "watch", "%s", err);
	w->dirty = false;
	return 0;
}

static int open_roots(struct watch *w)
{
	struct stat st;

	for (unsigned r = 0; r < w->roots.n; r++) {
		w->rootfd[r] = open(w->roots.dir[r], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (w->rootfd[r] < 0 || fstat(w->rootfd[r], &st) < 0)
			return cli_fail(-1, "watch", "cannot open %s: %s", w->roots.dir[r], strerror(errno));
		w->kdev[r] = sg_kdev(st.st_dev);
		w->dir_ino[r] = st.st_ino;
	}
	return 0;
}

/* The store's directory, this watch's alone (flock), and its records. */
static int open_store(struct watch *w)
{
	char err[256];

	if ((w->sd = sg_store_open_dir(true, err, sizeof(err))) < 0)
		return cli_fail(-1, "watch", "%s", err);
	if (flock(w->sd, LOCK_EX | LOCK_NB) < 0)
		return cli_fail(-1, "watch", "another shmguard watch keeps %s: only one may record", sg_store_dir());
	if (sg_store_load(&w->store, w->sd, err, sizeof(err)) < 0)
		return cli_fail(-1, "watch", "%s", err);
	return 0;
}

static int parse(int argc, char **argv, struct watch *w, const char **probe)
{
	static const struct option opts[] = {
		{"root", required_argument, NULL, 'R'}, {"probe", required_argument, NULL, 'p'},
		{"no-attachers", no_argument, NULL, 'A'}, {"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{0},
	};
	int c;

	while ((c = getopt_long(argc, argv, "hV", opts, NULL)) != -1) {
		switch (c) {
		case 'R':
			if (cli_add_root("watch", &w->roots, optarg) < 0)
				return -1;
			break;
		case 'p':
			if (audit_probe_by_name(optarg) < 0)
				return cli_usage_fail(-1, "watch", "unknown probe '%s' (%s)", optarg, audit_probe_list);
			*probe = optarg;
			break;
		case 'A': w->attachers = false; break;
		case 'h': usage(stdout); return 1;
		case 'V': cli_version(); return 1;
		default: return cli_try_help(-1, "watch");
		}
	}
	if (optind < argc)
		return cli_unexpected(-1, "watch", argv[optind]);
	cli_default_root(&w->roots);
	return 0;
}

int cmd_watch(int argc, char **argv)
{
	struct watch w = {.sd = -1, .attachers = true};
	struct audit_trace_opts t = {.follow_tree = false, .on_event = on_event, .ctx = &w};
	struct audit_tracer *tracer = NULL;
	struct sigaction sa = {.sa_handler = on_signal};
	uint64_t last_save = 0, last_prune = 0, dropped = 0;
	struct audit_trace_root trace_roots[SG_MAX_ROOTS];
	char err[512], esc[SG_ESCAPED_MAX];
	int status = parse(argc, argv, &w, &t.probe), ret;

	for (unsigned r = 0; r < SG_MAX_ROOTS; r++)
		w.rootfd[r] = -1;
	if (status != 0)
		return status > 0 ? EXIT_OK : EXIT_USAGE;
	status = EXIT_FAIL;
	if (!sg_proc_is_own()) {
		cli_fail(0, "watch", "/proc is not this pid namespace's own: the processes it shows are not the ones "
				     "the kernel side numbers; run with this namespace's /proc");
		goto cleanup;
	}
	if (!(w.pending = calloc(MAX_PENDING, sizeof(*w.pending))) || open_roots(&w) < 0 || open_store(&w) < 0)
		goto cleanup;
	prune(&w);
	t.attachers = w.attachers;
	t.nroots = w.roots.n;
	for (unsigned r = 0; r < w.roots.n; r++)
		trace_roots[r] = (struct audit_trace_root){w.kdev[r], w.dir_ino[r]};
	t.roots = trace_roots;
	if (!(tracer = audit_trace_start(&t, err, sizeof(err)))) {
		cli_fail(0, "watch", "tracing is not possible: %s", err);
		goto cleanup;
	}
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	fprintf(stderr, "shmguard watch: recording the creators of new files in %u %s (probe %s)%s%s%s into %s\n",
		SG_PLURAL(w.roots.n, "root", "roots"), audit_trace_probe(tracer),
		w.attachers ? " and who opens them (probe " : "", w.attachers ? audit_trace_attach_probe(tracer) : "",
		w.attachers ? ")" : "", sg_text_escape(sg_store_dir(), esc, sizeof(esc)));
	while (!stop) {
		struct pollfd p = {.fd = audit_trace_fd(tracer), .events = POLLIN};
		uint64_t now;

		if (poll(&p, 1, 100) < 0 && errno != EINTR) {
			cli_fail(0, "watch", "cannot wait for events: %s", strerror(errno));
			goto cleanup;
		}
		if ((ret = audit_trace_consume(tracer)) < 0 && ret != -EINTR) {
			cli_fail(0, "watch", "cannot read events: %s", strerror(-ret));
			goto cleanup;
		}
		resolve_pending(&w);
		now = now_ms();
		if (now - last_prune >= PRUNE_EVERY_MS) {
			prune(&w);
			last_prune = now;
		}
		if (now - last_save >= SAVE_EVERY_MS) {
			if (save(&w) < 0)
				goto cleanup;
			last_save = now;
		}
		if (audit_trace_dropped(tracer) != dropped) {
			dropped = audit_trace_dropped(tracer);
			fprintf(stderr, "shmguard watch: %llu %s lost (the event buffer was full): those files have no "
					"record, and are never removed by sweep --dead\n",
				(unsigned long long)dropped, dropped == 1 ? "event" : "events");
		}
	}
	resolve_pending(&w);
	status = save(&w) < 0 ? EXIT_FAIL : EXIT_OK;
cleanup:
	if (tracer)
		audit_trace_stop(tracer);
	for (unsigned r = 0; r < SG_MAX_ROOTS; r++)
		if (w.rootfd[r] >= 0)
			close(w.rootfd[r]);
	if (w.sd >= 0)
		close(w.sd);
	sg_store_free(&w.store);
	free(w.pending);
	return status;
}
