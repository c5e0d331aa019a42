#include "audit_recorder.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "cgroup_ids.h"
#include "clock.h"
#include "creator_store.h"
#include "holders.h"
#include "journal.h"
#include "journal_read.h"
#include "procstat.h"
#include "text.h"

/* The records are written at most this often when they changed (else
 * the store's completeness mark is moved on), and the records of files
 * gone are dropped this often. */
#define SAVE_EVERY_MS 500
#define PRUNE_EVERY_MS 5000
/* A file the probe saw created without its name (the ctime probe fires
 * before the name exists) is looked for in its root for this long. */
#define NAME_WAIT_MS 2000
#define MAX_PENDING 4096
/* A device no root is on any more keeps its records this long: a pod's
 * /dev/shm is forgotten with its mount namespace and found again in the
 * next one when its container restarts in place. */
#define DEVICE_GONE_MS 60000
#define MAX_GONE 256
/* A file's birth time is the kernel's coarse clock, up to a tick (10 ms
 * at HZ=100) behind the clock the recorder reads: the completeness mark
 * stays that far behind. */
#define COARSE_CLOCK_NS 20000000ull
/* A file seen created without a name holds the completeness mark back
 * this long: its name comes within microseconds of the event; one still
 * unnamed after that was unlinked first (a POSIX semaphore's temporary
 * name), and a sweep cannot list it. */
#define NAME_PIN_MS 300

struct pending {
	struct sg_creator_rec rec;
	int root; /* -1: any root on its device (the probe did not say which directory) */
	uint64_t since_ms;
	uint64_t seen_unix_ns; /* CLOCK_REALTIME when its event was read */
};

struct rroot {
	uint32_t kdev;
	uint64_t dir_ino;
	int fd;
};

struct gone_dev {
	uint32_t kdev;
	uint64_t since_ms;
};

struct audit_recorder {
	struct rroot *roots;
	unsigned nroots, cap;
	struct gone_dev gone[MAX_GONE]; /* devices no root is on any more, oldest first */
	unsigned ngone;
	struct sg_creator_store store;
	int sd; /* the store's directory, locked */
	bool dirty, saved_once;
	struct pending *pending;
	size_t npending;
	const char *warning; /* files created from now on may have no record: to say */
	bool warned;         /* it was said */
	bool attachers;
	uint32_t self; /* this process, as the kernel side numbers it */
	uint64_t drain_unix_ns; /* when the last reading of events began */
	uint64_t last_save_ms, last_prune_ms;
};

static uint64_t now_ms(void)
{
	return sg_monotonic_ns() / 1000000u;
}

static uint64_t now_unix_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* CLOCK_BOOTTIME ns as /proc/PID/stat counts them (field 22): whole clock
 * ticks, rounded down as the kernel does. */
static uint64_t ticks_of(uint64_t ns)
{
	static long hz;

	if (!hz && (hz = sysconf(_SC_CLK_TCK)) <= 0)
		hz = 100;
	return ns / (1000000000ull / (uint64_t)hz);
}

/* A program creating many files is asked about once: the last creator's
 * pid namespace (a process never changes its own) and the last cgroup's
 * path (an id is never given twice within a boot; a cgroup renamed keeps
 * its id, so the path is believed for CACHE_NS only). */
#define CACHE_NS 1000000000ull
static struct {
	uint32_t pid;
	uint64_t start_ticks, pidns;
} last_process;
static uint64_t own_pidns;
static struct {
	uint64_t id, until_ns;
	char path[SG_REC_CGROUP_MAX];
} last_cgroup;

/* The pid namespace of pid, if pid is still the process that started at
 * start_ticks; 0 otherwise. */
static uint64_t pidns_of(uint32_t pid, uint64_t start_ticks)
{
	char path[48];
	struct stat st;
	uint64_t now;

	if (last_process.pid == pid && last_process.start_ticks == start_ticks)
		return last_process.pidns;
	snprintf(path, sizeof(path), "/proc/%u/ns/pid", pid);
	if (stat(path, &st) < 0 || sg_proc_start_ticks((pid_t)pid, &now) < 0 || now != start_ticks)
		return 0;
	last_process.pid = pid;
	last_process.start_ticks = start_ticks;
	last_process.pidns = st.st_ino;
	return st.st_ino;
}

/* The path of cgroup id into r, or "" when it cannot be read. */
static void cgroup_of(struct sg_creator_rec *r)
{
	uint64_t now = sg_monotonic_ns();

	if (r->cgroup_id && r->cgroup_id == last_cgroup.id && now < last_cgroup.until_ns) {
		memcpy(r->cgroup, last_cgroup.path, sizeof(r->cgroup));
		return;
	}
	if (sg_cgroup_path(r->cgroup_id, r->cgroup, sizeof(r->cgroup)) < 0) {
		r->cgroup[0] = '\0';
		return;
	}
	last_cgroup.id = r->cgroup_id;
	last_cgroup.until_ns = now + CACHE_NS;
	memcpy(last_cgroup.path, r->cgroup, sizeof(last_cgroup.path));
}

/* r's creator fields from the creation event e: the process, its start
 * time and its parent's and ancestors' as the kernel side read them at
 * that moment (the creator may be gone before userspace looks), its
 * cgroup and comm; from /proc only its pid namespace, taken while the pid
 * is still that process's. */
static void fill_creator(struct sg_creator_rec *r, const struct audit_event *e)
{
	r->recorded_ns = now_unix_ns();
	r->cgroup_id = e->cgroup_id;
	_Static_assert(sizeof(r->comm) <= sizeof(e->comm), "a record's comm fits the event's");
	memcpy(r->comm, e->comm, sizeof(r->comm) - 1);
	r->comm[sizeof(r->comm) - 1] = '\0';
	/* The recorder's own, which it never leaves. */
	if (!own_pidns)
		own_pidns = sg_self_pidns();
	r->pidns = own_pidns;
	cgroup_of(r);
	/* A pid outside the recorder's namespace names nobody it can look for. */
	if ((r->pid = e->tgid) && e->start_ns) {
		r->start_ticks = ticks_of(e->start_ns);
		r->creator_pidns = pidns_of(r->pid, r->start_ticks);
	}
	if ((r->parent_pid = e->parent_tgid) && e->parent_start_ns)
		r->parent_start_ticks = ticks_of(e->parent_start_ns);
	else
		r->parent_pid = 0;
	/* The chain up to its instance's start, whole or refused. */
	r->nancestors = e->nancestors <= SG_REC_ANCESTORS ? e->nancestors : 0;
	_Static_assert(AUDIT_EVENT_ANCESTORS <= SG_REC_ANCESTORS, "a record holds every ancestor the kernel sends");
	bool whole = e->ancestors_whole && e->start_ns && e->nancestors <= SG_REC_ANCESTORS;
	for (uint32_t i = 0; i < r->nancestors; i++) {
		r->ancestors[i] = (struct sg_rec_process){.pid = e->ancestors[i].tgid,
							   .start_ticks = ticks_of(e->ancestors[i].start_ns)};
		whole &= r->ancestors[i].pid && e->ancestors[i].start_ns;
	}
	if (!whole)
		r->flags |= SG_REC_ANCESTORS_CUT;
}

static void no_room(struct audit_recorder *r, const char *what)
{
	if (!r->warned)
		r->warning = what;
	r->warned = true;
}

static void put(struct audit_recorder *r, const struct sg_creator_rec *c)
{
	if (sg_store_put(&r->store, c) == 0)
		r->dirty = true;
	else
		no_room(r, "the record store is full (" SG_STORE_MAX_TEXT " records)");
}

/* c's file is called name in root: recorded if it is still the inode the
 * kernel reported, with its birth time. */
static void named(struct audit_recorder *r, struct sg_creator_rec *c, const struct rroot *root, const char *name)
{
	struct statx stx;

	/* One statx: the type, the inode and its birth (each file created costs it). */
	if (statx(root->fd, name, AT_SYMLINK_NOFOLLOW | AT_STATX_DONT_SYNC, STATX_TYPE | STATX_INO | STATX_BTIME,
		  &stx) < 0 ||
	    !S_ISREG(stx.stx_mode) || sg_kdev(makedev(stx.stx_dev_major, stx.stx_dev_minor)) != c->kdev ||
	    stx.stx_ino != c->ino)
		return;
	snprintf(c->name, sizeof(c->name), "%s", name);
	c->birth_ns = sg_statx_birth_ns(&stx);
	put(r, c);
}

static void on_create(struct audit_recorder *r, const struct audit_event *e)
{
	struct sg_creator_rec c = {.kdev = e->kdev, .ino = e->ino};
	unsigned i;

	for (i = 0; i < r->nroots; i++)
		if (r->roots[i].kdev == e->kdev && (!e->dir_ino || e->dir_ino == r->roots[i].dir_ino))
			break;
	if (i == r->nroots)
		return; /* elsewhere on the device, a subdirectory, a root not recorded */
	fill_creator(&c, e);
	if (!r->attachers)
		c.flags |= SG_REC_ATTACHERS_UNSEEN;
	if (e->name[0] && !strchr(e->name, '/') && e->dir_ino) {
		named(r, &c, &r->roots[i], e->name);
		return;
	}
	if (r->npending == MAX_PENDING) {
		no_room(r, "the queue of files whose names are looked for is full");
		return;
	}
	r->pending[r->npending++] =
		(struct pending){c, e->dir_ino ? (int)i : -1, now_ms(), now_unix_ns()};
}

/* A process opened a recorded file: one of its attachers, if it has a
 * record (or one waiting for its name). */
static void on_attach(struct audit_recorder *r, const struct audit_event *e)
{
	struct sg_creator_rec *c;

	/* The recorder's own process (the node agent's review and reclaim
	 * read the files they judge) never uses a name. */
	if (e->tgid == r->self)
		return;
	c = sg_store_lookup(&r->store, e->kdev, e->ino);

	for (size_t i = 0; !c && i < r->npending; i++)
		if (r->pending[i].rec.kdev == e->kdev && r->pending[i].rec.ino == e->ino)
			c = &r->pending[i].rec;
	/* A pid outside the recorder's namespace, or without a start, names nobody. */
	if (c && sg_rec_attach(c, e->start_ns ? e->tgid : 0, e->start_ns ? ticks_of(e->start_ns) : 0))
		r->dirty = true;
}

void audit_recorder_event(struct audit_recorder *r, const struct audit_event *e)
{
	if (e->type == AUDIT_EVENT_CREATE)
		on_create(r, e);
	else if (e->type == AUDIT_EVENT_ATTACH)
		on_attach(r, e);
}

/* Whether root i is where pending file p may be. */
static bool in_root(const struct audit_recorder *r, const struct pending *p, unsigned i)
{
	if (p->root >= 0)
		return p->root == (int)i && r->roots[i].kdev == p->rec.kdev;
	return r->roots[i].kdev == p->rec.kdev;
}

/* A listing of a root, through its own descriptor (the root's stays
 * open); NULL when it cannot be read. */
static DIR *open_root(const struct rroot *root)
{
	int fd = openat(root->fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;

	if (!d && fd >= 0)
		close(fd);
	return d;
}

/* The names of the files the probe reported without one: each root with
 * some is read once. */
static void resolve_pending(struct audit_recorder *r)
{
	uint64_t now = now_ms();
	size_t kept = 0;

	for (unsigned i = 0; i < r->nroots && r->npending; i++) {
		bool any = false;
		for (size_t k = 0; k < r->npending && !any; k++)
			any = in_root(r, &r->pending[k], i);
		if (!any)
			continue;
		DIR *d = open_root(&r->roots[i]);
		struct dirent *de;
		if (!d)
			continue;
		while ((de = readdir(d)))
			for (size_t k = 0; k < r->npending; k++)
				if (in_root(r, &r->pending[k], i) && !r->pending[k].rec.name[0] &&
				    de->d_ino == r->pending[k].rec.ino)
					named(r, &r->pending[k].rec, &r->roots[i], de->d_name);
		closedir(d);
	}
	/* Named now, or given up after NAME_WAIT_MS (gone again, or elsewhere). */
	for (size_t k = 0; k < r->npending; k++)
		if (!r->pending[k].rec.name[0] && now - r->pending[k].since_ms < NAME_WAIT_MS)
			r->pending[kept++] = r->pending[k];
	r->npending = kept;
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
static struct dev_ino *present(struct audit_recorder *r, size_t *n)
{
	struct dev_ino *all = NULL;
	size_t cap = 0;

	*n = 0;
	for (unsigned i = 0; i < r->nroots; i++) {
		DIR *d = open_root(&r->roots[i]);
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
			all[(*n)++] = (struct dev_ino){r->roots[i].kdev, e->d_ino};
		}
		closedir(d);
	}
	if (*n)
		qsort(all, *n, sizeof(*all), by_dev_ino);
	return all ? all : calloc(1, sizeof(*all));
}

/* The root on device kdev where name is that inode, or NULL. */
static const struct rroot *root_with(struct audit_recorder *r, uint32_t kdev, const char *name, uint64_t ino)
{
	struct stat st;

	for (unsigned i = 0; i < r->nroots; i++)
		if (r->roots[i].kdev == kdev && fstatat(r->roots[i].fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    st.st_ino == ino)
			return &r->roots[i];
	return NULL;
}

static bool on_roots(const struct audit_recorder *r, uint32_t kdev)
{
	for (unsigned i = 0; i < r->nroots; i++)
		if (r->roots[i].kdev == kdev)
			return true;
	return false;
}

/* Drops the records of files no longer in a root (or whose inode number
 * another file has now); a renamed file keeps its record, with its old
 * name (the inode is what counts).  Records of devices no root is on are
 * kept: a recorder started again with other roots finds them. */
static void prune(struct audit_recorder *r)
{
	size_t n, kept = 0;
	struct dev_ino *now = present(r, &n);

	if (!now)
		return;
	for (size_t i = 0; i < r->store.n; i++) {
		struct sg_creator_rec *c = &r->store.recs[i];
		struct dev_ino key = {c->kdev, c->ino};
		bool here = on_roots(r, c->kdev), gone;
		const struct rroot *root;

		gone = here && !bsearch(&key, now, n, sizeof(*now), by_dev_ino);
		if (!gone && here && c->birth_ns && (root = root_with(r, c->kdev, c->name, c->ino))) {
			uint64_t birth = sg_birth_ns(root->fd, c->name, AT_SYMLINK_NOFOLLOW);
			gone = birth && birth != c->birth_ns; /* the number was given to another file */
		}
		if (!gone)
			r->store.recs[kept++] = *c;
	}
	free(now);
	if (kept != r->store.n)
		r->dirty = true;
	r->store.n = kept;
}

/* Every file created before this moment that the recorder has read is in
 * its records: the last reading's start, or the earliest file still
 * waiting for its name (for NAME_PIN_MS), less the coarse clock's lag. */
static uint64_t complete_ns(const struct audit_recorder *r)
{
	uint64_t t = r->drain_unix_ns, now = now_ms();

	for (size_t k = 0; k < r->npending; k++)
		if (now - r->pending[k].since_ms < NAME_PIN_MS && r->pending[k].seen_unix_ns < t)
			t = r->pending[k].seen_unix_ns;
	return t > COARSE_CLOCK_NS ? t - COARSE_CLOCK_NS : 0;
}

static int save(struct audit_recorder *r, char *err, size_t errlen)
{
	int ret;

	if (!r->drain_unix_ns)
		return 0; /* no events read yet: nothing to say complete */
	r->store.complete_ns = complete_ns(r);
	if (!r->dirty && r->saved_once)
		return sg_store_mark_complete(r->sd, r->store.complete_ns, err, errlen);
	if ((ret = sg_store_save(&r->store, r->sd, err, errlen)) < 0)
		return ret;
	r->dirty = false;
	r->saved_once = true;
	return 0;
}

/* Drops the records of device kdev, and the files of it waiting for their names. */
static void drop_device(struct audit_recorder *r, uint32_t kdev)
{
	size_t kept = 0;

	for (size_t i = 0; i < r->store.n; i++)
		if (r->store.recs[i].kdev != kdev)
			r->store.recs[kept++] = r->store.recs[i];
	r->dirty |= kept != r->store.n;
	r->store.n = kept;
	kept = 0;
	for (size_t k = 0; k < r->npending; k++)
		if (r->pending[k].rec.kdev != kdev)
			r->pending[kept++] = r->pending[k];
	r->npending = kept;
}

static void forget_gone(struct audit_recorder *r, unsigned i)
{
	memmove(&r->gone[i], &r->gone[i + 1], (r->ngone - i - 1) * sizeof(r->gone[0]));
	r->ngone--;
}

struct audit_recorder *audit_recorder_new(bool attachers, char *err, size_t errlen)
{
	struct audit_recorder *r = calloc(1, sizeof(*r));
	char why[256];

	if (r)
		r->sd = -1;
	if (!r || !(r->pending = calloc(MAX_PENDING, sizeof(*r->pending)))) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	r->attachers = attachers;
	r->self = (uint32_t)getpid();
	if ((r->sd = sg_store_open_dir(true, why, sizeof(why))) < 0) {
		snprintf(err, errlen, "%s", why);
		goto fail;
	}
	if (flock(r->sd, LOCK_EX | LOCK_NB) < 0) {
		snprintf(err, errlen, "another recorder (shmguard watch, or audit --record-creators) keeps %s: only one may record",
			 sg_store_dir());
		goto fail;
	}
	if (sg_store_load(&r->store, r->sd, why, sizeof(why)) < 0) {
		snprintf(err, errlen, "%s", why);
		goto fail;
	}
	r->last_prune_ms = now_ms();
	return r;
fail:
	audit_recorder_free(r);
	return NULL;
}

int audit_recorder_add_root(struct audit_recorder *r, const char *path, uint32_t kdev, uint64_t dir_ino)
{
	struct stat st;
	int fd;

	for (unsigned i = 0; i < r->nroots; i++)
		if (r->roots[i].kdev == kdev && r->roots[i].dir_ino == dir_ino)
			return 0;
	if (r->nroots == r->cap) {
		unsigned cap = r->cap ? r->cap * 2 : 8;
		struct rroot *m = realloc(r->roots, cap * sizeof(*m));
		if (!m)
			return -ENOMEM;
		r->roots = m;
		r->cap = cap;
	}
	if ((fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return -errno;
	/* Still the directory the tracer follows. */
	if (fstat(fd, &st) < 0 || sg_kdev(st.st_dev) != kdev || st.st_ino != dir_ino) {
		close(fd);
		return -ESTALE;
	}
	r->roots[r->nroots++] = (struct rroot){kdev, dir_ino, fd};
	for (unsigned i = 0; i < r->ngone; i++)
		if (r->gone[i].kdev == kdev) {
			forget_gone(r, i);
			break;
		}
	return 0;
}

void audit_recorder_remove_root(struct audit_recorder *r, uint32_t kdev, uint64_t dir_ino)
{
	for (unsigned i = 0; i < r->nroots; i++)
		if (r->roots[i].kdev == kdev && r->roots[i].dir_ino == dir_ino) {
			close(r->roots[i].fd);
			r->roots[i] = r->roots[--r->nroots];
			break;
		}
	if (on_roots(r, kdev))
		return;
	/* Its mount may be gone, and its files with it: its records go once
	 * no root has been on it for DEVICE_GONE_MS. */
	if (r->ngone == MAX_GONE) {
		drop_device(r, r->gone[0].kdev);
		forget_gone(r, 0);
	}
	r->gone[r->ngone++] = (struct gone_dev){kdev, now_ms()};
}

void audit_recorder_drain_begins(struct audit_recorder *r)
{
	r->drain_unix_ns = now_unix_ns();
}

int audit_recorder_tick(struct audit_recorder *r, char *err, size_t errlen)
{
	uint64_t now;

	if (r->npending)
		resolve_pending(r);
	now = now_ms();
	while (r->ngone && now - r->gone[0].since_ms >= DEVICE_GONE_MS) {
		drop_device(r, r->gone[0].kdev);
		forget_gone(r, 0);
	}
	if (now - r->last_prune_ms >= PRUNE_EVERY_MS) {
		prune(r);
		r->last_prune_ms = now;
	}
	if (now - r->last_save_ms < SAVE_EVERY_MS)
		return 0;
	r->last_save_ms = now;
	return save(r, err, errlen);
}

int audit_recorder_finish(struct audit_recorder *r, char *err, size_t errlen)
{
	resolve_pending(r);
	return save(r, err, errlen);
}

const char *audit_recorder_warning(struct audit_recorder *r)
{
	const char *w = r->warning;

	r->warning = NULL;
	return w;
}

void audit_recorder_free(struct audit_recorder *r)
{
	if (!r)
		return;
	for (unsigned i = 0; i < r->nroots; i++)
		close(r->roots[i].fd);
	free(r->roots);
	if (r->sd >= 0)
		close(r->sd);
	sg_store_free(&r->store);
	free(r->pending);
	free(r);
}
