/* The auditor's roots (audit_roots.h).  Node mode keeps the table in step
 * with the machine's mounts: every tmpfs at /dev/shm of any mount namespace
 * is followed, the kernel side's maps updated, its abort directory watched.
 * A root that goes is forgotten at the next scan, its directory closed at
 * once: a descriptor held would keep a deleted pod's tmpfs in RAM.  Scans
 * come on the kernel side's new-device event (a pod's first file), paced to
 * a small share of the time, and every AUDIT_ROOTS_RESCAN_S. */
#include "audit_roots.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "audit_engine.h"
#include "audit_trace.h"
#include "holders.h"
#include "journal_read.h"
#include "shm_mounts.h"

/* Every this long every namespace's mounts are read again, whatever
 * happened: gone pods are forgotten (and their tmpfs freed) within it, and
 * a tmpfs mounted in a namespace read before is found. */
#define RESCAN_S 2.0
/* A scan reads every namespace's mountinfo: never more than this share of
 * the time (figures: docs/performance.md). */
#define SCAN_SHARE 0.05
/* A device a scan of the new namespaces did not find: every namespace is
 * read this long after the last time they were, at the soonest. */
#define MISSED_SCAN_S 1.0

int audit_roots_given(struct audit *a, char *err, size_t errlen)
{
	const struct audit_opts *o = a->o;
	struct stat st;

	if (!(a->root_table.roots = calloc(o->roots.n ? o->roots.n : 1, sizeof(*a->root_table.roots)))) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	a->root_table.roots_cap = o->roots.n ? o->roots.n : 1;
	for (unsigned i = 0; i < o->roots.n; i++) {
		struct audit_root *r = &a->root_table.roots[a->root_table.nroots++];

		if (stat(o->roots.dir[i], &st) < 0 || !S_ISDIR(st.st_mode)) {
			snprintf(err, errlen, "shm root %s is not a directory", o->roots.dir[i]);
			return -ENOTDIR;
		}
		*r = (struct audit_root){.in_use = true, .kdev = sg_kdev(st.st_dev), .dir_ino = st.st_ino,
					 .id = ++a->root_table.next_root_id, .dfd = -1, .abort_dfd = -1, .abort_wd = -1};
		snprintf(r->path, sizeof(r->path), "%s", o->roots.dir[i]);
		snprintf(r->shown, sizeof(r->shown), "%s", o->roots.dir[i]);
	}
	return 0;
}

int audit_root_of_dir(const struct audit *a, uint32_t kdev, uint64_t dir_ino)
{
	for (unsigned r = 0; r < a->root_table.nroots; r++)
		if (a->root_table.roots[r].in_use && a->root_table.roots[r].kdev == kdev && a->root_table.roots[r].dir_ino == dir_ino)
			return (int)r;
	return -1;
}

int audit_root_of_dev(const struct audit *a, uint32_t kdev)
{
	for (unsigned r = 0; r < a->root_table.nroots; r++)
		if (a->root_table.roots[r].in_use && a->root_table.roots[r].kdev == kdev)
			return (int)r;
	return -1;
}

uint32_t audit_root_scope(const struct audit *a, uint32_t kdev, int root)
{
	const struct audit_root *r;

	if (root < 0 || (unsigned)root >= a->root_table.nroots || !a->root_table.roots[root].in_use || a->root_table.roots[root].kdev != kdev)
		root = audit_root_of_dev(a, kdev);
	if (root < 0)
		return 0;
	r = &a->root_table.roots[root];
	return r->abort_dfd >= 0 ? r->id : 0;
}

/* A pod's names are looked for again this often until found, as a
 * workload's (audit_workloads.c): the kubelet makes its log directory as
 * the pod starts. */
#define POD_RETRY_S 10.0

/* The cgroup v2 path of pid ("0::PATH" in /proc/PID/cgroup), a process of
 * mount namespace mntns: both read through one /proc/PID, so that a pid
 * used again meanwhile gives nothing.  0, or a negative errno. */
static int proc_cgroup(pid_t pid, uint64_t mntns, char *path, size_t len)
{
	char dir[32], buf[SG_CGROUP_PATH_MAX + 64];
	const char *line, *end;
	struct stat st;
	ssize_t n;
	int pfd, fd = -1, ret;

	snprintf(dir, sizeof(dir), "/proc/%d", (int)pid);
	if ((pfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return -errno;
	if (fstatat(pfd, "ns/mnt", &st, 0) < 0 || (fd = openat(pfd, "cgroup", O_RDONLY | O_CLOEXEC)) < 0) {
		ret = -errno;
		goto cleanup;
	}
	if (st.st_ino != mntns) {
		ret = -ESRCH;
		goto cleanup;
	}
	if ((n = read(fd, buf, sizeof(buf) - 1)) < 0) {
		ret = -errno;
		goto cleanup;
	}
	buf[n] = '\0';
	ret = -ENOENT; /* no cgroup v2 line */
	for (line = buf; *line; line = end + 1) {
		if (!(end = strchr(line, '\n'))) {
			ret = -ENAMETOOLONG; /* cut by the buffer */
			break;
		}
		if (strncmp(line, "0::", 3) != 0)
			continue;
		line += 3;
		if ((size_t)(end - line) >= len) {
			ret = -ENAMETOOLONG;
			break;
		}
		memcpy(path, line, (size_t)(end - line));
		path[end - line] = '\0';
		ret = 0;
		break;
	}
cleanup:
	if (fd >= 0)
		close(fd);
	close(pfd);
	return ret;
}

/* What r's pod is, as far as is not known yet: the cgroup of the process
 * r was found through (while it is still in r's namespace), then the
 * names the kubelet's log directories give (--pod-logs,
 * --container-logs). */
static void learn_pod(struct audit *a, struct audit_root *r)
{
	struct audit_root_pod *p = &r->pod;
	const char *pods = a->o->workloads.pod_logs, *containers = a->o->workloads.container_logs;
	char path[SG_CGROUP_PATH_MAX];

	if (!r->discovered || audit_now_s(a) < p->next_s)
		return;
	p->next_s = audit_now_s(a) + POD_RETRY_S;
	if (!p->ids.pod_uid[0] && proc_cgroup(r->pid, p->mntns, path, sizeof(path)) == 0)
		sg_cgroup_parse(path, &p->ids);
	if (!p->ids.pod_uid[0])
		return;
	if (!p->name[0] && (!pods || !sg_pod_names_find(pods, p->ids.pod_uid, p->ns, p->name))) {
		p->ns[0] = p->name[0] = '\0';
		return;
	}
	if (!p->container[0] && containers && p->ids.container_id[0] &&
	    !sg_container_name_find(containers, p->ids.container_id, p->name, p->ns, p->container))
		p->container[0] = '\0';
}

/* A free slot (a forgotten root's, or a new one), or NULL. */
static struct audit_root *new_slot(struct audit *a)
{
	for (unsigned r = 0; r < a->root_table.nroots; r++)
		if (!a->root_table.roots[r].in_use)
			return &a->root_table.roots[r];
	if (a->root_table.nroots == AUDIT_MAX_ROOTS)
		return NULL;
	if (a->root_table.nroots == a->root_table.roots_cap) {
		unsigned cap = a->root_table.roots_cap * 2;
		struct audit_root *v = realloc(a->root_table.roots, cap * sizeof(*v));
		if (!v)
			return NULL;
		a->root_table.roots = v;
		a->root_table.roots_cap = cap;
	}
	return &a->root_table.roots[a->root_table.nroots++];
}

/* Follows m (its descriptor taken over), found by the scan numbered scan. */
static void follow(struct audit *a, struct sg_shm_mount *m, uint32_t scan, bool late)
{
	struct audit_root *r = new_slot(a);
	struct audit_trace_root tr = {m->kdev, m->dir_ino};
	int slot;

	if (!r || (a->run.tracer && audit_trace_add_root(a->run.tracer, &tr) < 0)) {
		if (r)
			r->in_use = false;
		a->root_table.roots_refused++;
		close(m->dfd);
		return;
	}
	*r = (struct audit_root){.in_use = true, .discovered = true, .kdev = m->kdev, .dir_ino = m->dir_ino,
				 .id = ++a->root_table.next_root_id, .dfd = m->dfd, .pid = m->pid, .scan = scan, .late = late,
				 .abort_dfd = -1, .abort_wd = -1, .pod.mntns = m->mntns};
	snprintf(r->path, sizeof(r->path), "/proc/self/fd/%d", m->dfd);
	snprintf(r->shown, sizeof(r->shown), "%.200s of pid %d (mnt:[%llu])", m->point, (int)m->pid,
		 (unsigned long long)m->mntns);
	slot = (int)(r - a->root_table.roots);
	learn_pod(a, r);
	a->root_table.roots_found++;
	a->root_table.roots_late += late;
	if (a->root_table.root_hooks.found)
		a->root_table.root_hooks.found(a, slot, late);
}

static void forget(struct audit *a, unsigned slot)
{
	struct audit_root *r = &a->root_table.roots[slot];
	struct audit_trace_root tr = {r->kdev, r->dir_ino};

	if (a->root_table.root_hooks.forgetting)
		a->root_table.root_hooks.forgetting(a, (int)slot);
	r->in_use = false;
	if (a->run.tracer)
		audit_trace_remove_root(a->run.tracer, &tr, audit_root_of_dev(a, r->kdev) < 0);
	close(r->dfd);
	r->dfd = -1;
	a->root_table.roots_forgotten++;
}

/* A scan of the mounts: every namespace's (full: roots not found again are
 * forgotten), or only those of namespaces made since (a new device's event:
 * a new pod's, read in a few milliseconds whatever the pods there are). */
/* This thread's CPU time: a scan is paced by what it costs, not by the
 * time a loaded machine makes it wait. */
static double cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void scan(struct audit *a, bool full)
{
	double begun = cpu_s();
	struct sg_shm_mounts ms;
	uint32_t scan = ++a->scans.root_scans;
	bool late = a->run.tracer != NULL;

	a->scans.scan_wanted = false;
	a->scans.scanned_at_s = audit_now_s(a);
	if (full)
		a->scans.full_scan_begun_s = a->scans.scanned_at_s;
	if (sg_shm_mounts_scan_new(&ms, NULL, 0, full ? NULL : a->scans.known_ns, full ? 0 : a->scans.nknown_ns) < 0) {
		a->scans.scans_failed++;
		a->scans.next_scan_s = audit_now_s(a) + RESCAN_S;
		return;
	}
	if (full) {
		a->scans.namespaces_unreadable = ms.unreadable;
		a->scans.namespaces = ms.namespaces;
	}
	for (size_t i = 0; i < ms.n; i++) {
		int r = audit_root_of_dir(a, ms.m[i].kdev, ms.m[i].dir_ino);

		if (r >= 0) {
			a->root_table.roots[r].scan = scan;
			close(ms.m[i].dfd);
			learn_pod(a, &a->root_table.roots[r]);
			if (a->root_table.roots[r].discovered && a->root_table.root_hooks.seen_again)
				a->root_table.root_hooks.seen_again(a, r); /* its abort directory made since, if it had none */
		} else {
			follow(a, &ms.m[i], scan, late);
		}
		ms.m[i].dfd = -1;
	}
	ms.n = 0;
	free(a->scans.known_ns);
	a->scans.known_ns = ms.read_ns;
	a->scans.nknown_ns = ms.nread_ns;
	ms.read_ns = NULL;
	sg_shm_mounts_free(&ms);
	for (unsigned r = 0; full && r < a->root_table.nroots; r++)
		if (a->root_table.roots[r].in_use && a->root_table.roots[r].discovered && a->root_table.roots[r].scan != scan)
			forget(a, r);
	if (full) {
		a->scans.last_scan_s = cpu_s() - begun;
		a->scans.next_scan_s = audit_now_s(a) + RESCAN_S;
	} else {
		a->scans.last_new_scan_s = cpu_s() - begun;
	}
	/* A device reported and still not found: its namespace was read before
	 * its tmpfs was mounted (a pod being set up), or it is no /dev/shm (a
	 * tmpfs at /run, reported again at most every 10 s).  Every namespace
	 * is read again, but not sooner than a second after the last time:
	 * a machine's other tmpfs would otherwise keep the scans of every
	 * namespace going, and the new pods' waiting behind them.  Only that
	 * read answers it: a scan of the new namespaces made meanwhile for
	 * another device, found, leaves it wanted. */
	if (full)
		a->scans.full_wanted = false;
	for (unsigned i = 0; i < a->scans.nreported; i++)
		a->scans.full_wanted |= !full && audit_root_of_dev(a, a->scans.reported[i]) < 0;
	a->scans.nreported = 0;
}

void audit_roots_scan(struct audit *a)
{
	double now = audit_now_s(a);
	bool full_due = now >= a->scans.next_scan_s ||
			(a->scans.full_wanted && now >= a->scans.next_scan_s - RESCAN_S + MISSED_SCAN_S);

	/* A new device's event before every namespace is due: the new ones. */
	scan(a, full_due || !a->scans.scan_wanted || !a->scans.known_ns);
}

double audit_roots_due_s(const struct audit *a)
{
	double due;

	if (!a->o->node_mode)
		return INFINITY;
	due = a->scans.next_scan_s;
	if (a->scans.scan_wanted)
		due = fmin(due, a->scans.scanned_at_s + a->scans.last_new_scan_s / SCAN_SHARE);
	if (a->scans.full_wanted)
		due = fmin(due, fmax(a->scans.next_scan_s - RESCAN_S + MISSED_SCAN_S,
				     a->scans.scanned_at_s + a->scans.last_scan_s / SCAN_SHARE));
	return due;
}

bool audit_roots_unsearched(const struct audit *a, double since_s)
{
	return a->o->node_mode && a->scans.full_wanted && a->scans.full_scan_begun_s < since_s;
}

void audit_roots_scan_before_end(struct audit *a)
{
	if (a->o->node_mode && a->scans.full_wanted)
		scan(a, true);
}

void audit_roots_new_dev(struct audit *a, uint32_t kdev)
{
	a->scans.new_devs++;
	if (!a->o->node_mode)
		return;
	a->scans.scan_wanted = true;
	if (a->scans.nreported < sizeof(a->scans.reported) / sizeof(a->scans.reported[0]))
		a->scans.reported[a->scans.nreported++] = kdev;
	else
		a->scans.full_wanted = true;
}

void audit_roots_count_begin(struct audit *a)
{
	for (unsigned r = 0; r < a->root_table.nroots; r++)
		a->root_table.roots[r].counting = (struct audit_root_bytes){0};
}

void audit_roots_count(struct audit *a, int root, uint64_t tracked, uint64_t unattributed)
{
	if (root < 0 || (unsigned)root >= a->root_table.nroots)
		return;
	a->root_table.roots[root].counting.tracked += tracked;
	a->root_table.roots[root].counting.unattributed += unattributed;
}

void audit_roots_count_end(struct audit *a)
{
	for (unsigned r = 0; r < a->root_table.nroots; r++)
		a->root_table.roots[r].bytes = a->root_table.roots[r].counting;
}

void audit_roots_clock_started(struct audit *a)
{
	a->scans.next_scan_s = a->scans.scanned_at_s = 0;
}

unsigned audit_roots_in_use(const struct audit *a)
{
	unsigned n = 0;

	for (unsigned r = 0; r < a->root_table.nroots; r++)
		n += a->root_table.roots[r].in_use;
	return n;
}

void audit_roots_free(struct audit *a)
{
	for (unsigned r = 0; r < a->root_table.nroots; r++)
		if (a->root_table.roots[r].in_use && a->root_table.roots[r].discovered)
			close(a->root_table.roots[r].dfd);
	free(a->root_table.roots);
	a->root_table.roots = NULL;
	a->root_table.nroots = 0;
	free(a->scans.known_ns);
	a->scans.known_ns = NULL;
}
