/* An abort, for the auditor, is a marker appearing in --abort-dir while it
 * runs: the same rule the shim obeys (sg_marker_check, for the auditor's
 * euid), in a directory the shims trust, so that files others drop there
 * are no aborts; they are counted apart.  Markers already there at the
 * start, and a marker touched again, are not new aborts.  When the kernel's
 * inotify queue overflows (a burst of more markers than
 * fs.inotify.max_queued_events), the directory is read again: markers
 * still there are recovered, those removed meanwhile are lost, so every
 * overflow is counted and fails the gate. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "audit_engine.h"
#include "holders.h"
#include "marker.h"
#include "siphash.h"
#include "reqid.h"
#include "text.h"

static int by_text(const void *x, const void *y)
{
	return strcmp(*(char *const *)x, *(char *const *)y);
}

/* An abort directory's entries, read through its checked descriptor. */
static DIR *open_entries(int dfd)
{
	int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;

	if (!d && fd >= 0)
		close(fd);
	return d;
}

/* The names already in the directory (after the watch is set, so that
 * none falls between the two), sorted: a rescan must not take them for new. */
static int note_markers_at_start(struct audit *a)
{
	DIR *d = open_entries(a->abort_set.abort_dfd);
	struct dirent *e;
	size_t cap = 0;

	if (!d)
		return -1;
	while ((e = readdir(d))) {
		if (e->d_type == DT_DIR || sg_reqid_invalid(e->d_name))
			continue;
		if (a->abort_set.nmarkers_at_start == cap) {
			char **n = realloc(a->abort_set.markers_at_start, (cap = cap ? cap * 2 : 64) * sizeof(*n));
			if (!n)
				break;
			a->abort_set.markers_at_start = n;
		}
		if (!(a->abort_set.markers_at_start[a->abort_set.nmarkers_at_start] = strdup(e->d_name)))
			break;
		a->abort_set.nmarkers_at_start++;
	}
	closedir(d);
	if (e) {
		errno = ENOMEM;
		return -1;
	}
	if (a->abort_set.nmarkers_at_start)
		qsort(a->abort_set.markers_at_start, a->abort_set.nmarkers_at_start, sizeof(char *), by_text);
	return 0;
}

/* Watches the directory opened and checked, through its descriptor;
 * without /proc, through the path, then checked to be the same directory. */
static int watch(const struct audit *a, int fd)
{
	char proc_path[64];
	struct stat dir, now;
	int wd;

	snprintf(proc_path, sizeof(proc_path), "/proc/self/fd/%d", a->abort_set.abort_dfd);
	wd = inotify_add_watch(fd, proc_path, IN_CREATE | IN_MOVED_TO | IN_ONLYDIR);
	if (wd >= 0 || errno != ENOENT)
		return wd;
	wd = inotify_add_watch(fd, a->o->abort_dir, IN_CREATE | IN_MOVED_TO | IN_ONLYDIR | IN_DONT_FOLLOW);
	if (wd >= 0 && (fstat(a->abort_set.abort_dfd, &dir) < 0 || lstat(a->o->abort_dir, &now) < 0 ||
			dir.st_dev != now.st_dev || dir.st_ino != now.st_ino)) {
		errno = ESTALE;
		return -1;
	}
	return wd;
}

int audit_markers_open(struct audit *a, char *err, size_t errlen)
{
	char shown[SG_ESCAPED_MAX];
	const char *why;
	struct stat st;
	int fd = -1;

	sg_text_escape(a->o->abort_dir, shown, sizeof(shown));
	a->abort_set.abort_dfd = sg_abort_dir_open_trusted(a->o->abort_dir, false, a->o->shim_uid, &st, &why);
	if (a->abort_set.abort_dfd < 0) {
		int e = -a->abort_set.abort_dfd; /* a negative errno, with why where the check refused it */

		a->abort_set.abort_dfd = -1;
		if (why)
			snprintf(err, errlen, "abort directory %s %s (uid %u, mode %04o): shims running as uid %u ignore "
				 "its markers, so it cannot show aborts; %s (or --shim-uid: the shims' user)", shown, why,
				 (unsigned)st.st_uid, (unsigned)st.st_mode & 07777, (unsigned)a->o->shim_uid,
				 sg_abort_dir_remedy(&st, a->o->shim_uid));
		else
			snprintf(err, errlen, "cannot watch %s: %s", shown,
				 e == ELOOP ? "it is a symbolic link" : strerror(e));
		return -e;
	}
	a->abort_set.abort_kdev = sg_kdev(st.st_dev);
	a->abort_set.abort_ino = st.st_ino;
	if ((fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK)) < 0 || (a->abort_set.abort_wd = watch(a, fd)) < 0 ||
	    note_markers_at_start(a) < 0) {
		int e = errno;

		snprintf(err, errlen, "cannot watch %s: %s", shown, strerror(e));
		if (fd >= 0)
			close(fd);
		return -e;
	}
	return fd;
}

/* An abort's key: the same request in two pods' abort directories is two aborts. */
struct abort_key {
	uint32_t scope;
	const char *request;
};

static bool is_abort(const struct sg_hnode *node, const void *key)
{
	const struct audit_abort *ab = sg_hnode_entry(node, struct audit_abort, node);
	const struct abort_key *k = key;

	return ab->scope == k->scope && strcmp(ab->request, k->request) == 0;
}

static uint64_t abort_hash(uint32_t scope, const char *request)
{
	return sg_table_hash_str(request) ^ (scope * 0x9e3779b97f4a7c15ull);
}

struct audit_abort *audit_abort_of(const struct audit *a, uint32_t scope, const char *request)
{
	struct abort_key k = {scope, request};
	struct sg_hnode *node = sg_htable_find(&a->abort_set.abort_index, abort_hash(scope, request), is_abort, &k);

	return node ? sg_hnode_entry(node, struct audit_abort, node) : NULL;
}

void audit_abort_note_file(struct audit_abort *ab, const struct audit_file *f)
{
	if (!ab->measured)
		audit_workload_set_add(&ab->workloads, f->creator->workload);
}

void audit_commands_note(struct audit_commands *c, const struct audit_attribution *attr, const struct audit_file *f)
{
	const char *comm = f->creator->comm;
	unsigned i = c->last;

	if (i >= c->n || strcmp(c->seen[i].comm, comm) != 0) {
		for (i = 0; i < c->n && strcmp(c->seen[i].comm, comm) != 0; i++)
			;
		if (i == AUDIT_COMMANDS_MAX) {
			c->more = true;
			return;
		}
		if (i == c->n) {
			snprintf(c->seen[i].comm, sizeof(c->seen[i].comm), "%s", comm);
			c->seen[i].tag_shape = false;
			c->n++;
		}
		c->last = i;
	}
	if (!c->seen[i].tag_shape && f->source == REQ_TAG && f->name)
		c->seen[i].tag_shape = audit_file_shape(attr, f) < 0;
}

/* The abort of f's request: its root's own abort directory's, else
 * --abort-dir's (a directory the pods share aborts every pod's files of
 * the request: otherwise its aborts would count and their files not). */
const struct audit_abort *audit_abort_of_file(const struct audit *a, const struct audit_file *f)
{
	uint32_t scope = audit_root_scope(a, f->kdev, f->root);
	char buf[AUDIT_FILE_REQUEST_MAX];
	const char *request = audit_file_request(f, buf);
	const struct audit_abort *ab = scope ? audit_abort_of(a, scope, request) : NULL;

	return ab ? ab : audit_abort_of(a, 0, request);
}

/* What an abort's sweep (or its owner) gave back.  Its abort, not measured
 * yet, still counts for its workload. */
void audit_file_freed(struct audit *a, struct audit_file *f)
{
	struct audit_abort *ab = f->indexed ? (struct audit_abort *)audit_abort_of_file(a, f) : NULL;

	if (ab)
		audit_abort_note_file(ab, f);
	if (ab && !ab->measured)
		ab->files_gone++;
	if (ab && f->measured)
		a->abort_set.reclaimed += f->bytes;
	audit_commands_note(&a->abort_set.commands, &a->attribution, f);
	audit_files_remove(a->files, f);
}

void audit_abort_add_leftover(struct audit_abort *ab, struct audit_leftover *l)
{
	l->next = ab->leftovers;
	ab->leftovers = l;
	ab->leaked_bytes += l->bytes;
	ab->leaked_files++;
	ab->leaked_segments += l->segment;
}

void audit_abort_measured(struct audit *a, struct audit_abort *ab)
{
	for (unsigned i = 0; i < ab->workloads.n; i++)
		ab->workloads.w[i]->aborts++;
	if (!ab->workloads.n) {
		a->workloads.aborts_without++;
		audit_workloads_abort_unattributed(&a->workloads, ab->scope);
	}
	ab->measured = true;
	audit_workload_set_free(&ab->workloads);
	a->abort_set.unmeasured = ab->next;
	a->abort_set.aborts_measured++;
	a->abort_set.leaked_measured += ab->leaked_bytes;
}

bool audit_abort_is_cut_short(const struct audit *a, const struct audit_abort *ab)
{
	return a->run.cmd_ended && ab->files_gone;
}

void audit_abort_cut_short(struct audit *a, struct audit_abort *ab)
{
	ab->measured = ab->cut_short = true;
	audit_workload_set_free(&ab->workloads);
	a->abort_set.unmeasured = ab->next;
	a->abort_set.aborts_cut_short++;
}

unsigned audit_aborts_counted(const struct audit *a)
{
	return a->abort_set.naborts - a->abort_set.aborts_cut_short;
}

struct note_ctx {
	const struct audit *a;
	struct audit_abort *ab;
};

static void note_file(struct audit_file *f, void *opaque)
{
	struct note_ctx *c = opaque;

	if (audit_abort_of_file(c->a, f) == c->ab) /* not the same request in another pod */
		audit_abort_note_file(c->ab, f);
}

bool audit_abort_add(struct audit *a, uint32_t scope, int dfd, const char *request, bool count_refused)
{
	uint64_t h = abort_hash(scope, request);
	struct abort_key k = {scope, request};
	struct audit_abort *ab;
	struct sg_hnode **slot;
	struct stat st;
	const char *why;
	int refused = sg_marker_check(dfd, request, a->o->shim_uid, &st, &why);

	if (S_ISREG(st.st_mode)) /* a marker or not, no file of a request */
		audit_files_exclude(a->files, sg_kdev(st.st_dev), st.st_ino);
	if (refused < 0) {
		a->abort_set.markers_refused += count_refused && st.st_mode != 0;
		return false;
	}
	if (sg_htable_reserve(&a->abort_set.abort_index, 256) < 0 ||
	    *(slot = sg_htable_slot(&a->abort_set.abort_index, h, is_abort, &k)) || !(ab = calloc(1, sizeof(*ab))))
		return false;
	if (!(ab->request = strdup(request))) {
		free(ab);
		return false;
	}
	ab->node.hash = h;
	ab->scope = scope;
	sg_htable_insert_at(&a->abort_set.abort_index, slot, &ab->node);
	ab->marker_s = audit_now_s(a);
	*a->abort_set.aborts_tail = ab;
	a->abort_set.aborts_tail = &ab->next;
	if (!a->abort_set.unmeasured)
		a->abort_set.unmeasured = ab;
	a->abort_set.naborts++;
	/* The workloads whose files the request has now (a sweep may take
	 * them before the abort is measured). */
	audit_files_of_request(a->files, request, note_file, &(struct note_ctx){a, ab});
	return true;
}

/* After an overflow: the markers now in the directory that are neither
 * aborts yet nor there from the start. */
static int rescan(struct audit *a)
{
	DIR *d = open_entries(a->abort_set.abort_dfd);
	struct dirent *e;
	char *name;

	if (!d)
		return -errno;
	while ((e = readdir(d))) {
		name = e->d_name;
		if (e->d_type != DT_DIR &&
		    !(a->abort_set.nmarkers_at_start &&
		      bsearch(&name, a->abort_set.markers_at_start, a->abort_set.nmarkers_at_start, sizeof(char *), by_text)) &&
		    audit_abort_add(a, 0, a->abort_set.abort_dfd, name, false))
			a->abort_set.markers_recovered++;
	}
	closedir(d);
	return 0;
}

/* A root's own abort directory read whole (watched just now, or after an
 * overflow): its markers made since the run began are aborts (it has no
 * list from the start: it may have been found late). */
static void rescan_root(struct audit *a, const struct audit_root *r, bool recovering)
{
	DIR *d = open_entries(r->abort_dfd);
	struct dirent *e;
	struct stat st;

	if (!d)
		return;
	while ((e = readdir(d)))
		if (e->d_type != DT_DIR && fstatat(r->abort_dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    (uint64_t)st.st_mtim.tv_sec * 1000000000ull + (uint64_t)st.st_mtim.tv_nsec >= a->start_unix_ns &&
		    audit_abort_add(a, r->id, r->abort_dfd, e->d_name, false))
			a->abort_set.markers_recovered += recovering;
	closedir(d);
}

void audit_markers_watch_root(struct audit *a, int root)
{
	struct audit_root *r = &a->root_table.roots[root];
	char path[SG_PATH_MAX + SG_NAME_MAX + 2], proc_path[64];
	const char *why;
	struct stat st;
	int dfd;

	if (r->abort_dfd >= 0 || a->run.markers_fd < 0)
		return;
	const char *name = audit_attribution_abort_name(&a->attribution, root);

	snprintf(path, sizeof(path), "%s/%s", r->path, name ? name : a->o->root_abort_name);
	/* Missing (a pod without the shim, or not yet) or refused: none; looked
	 * for again at the next scan. */
	if ((dfd = sg_abort_dir_open_trusted(path, false, a->o->shim_uid, &st, &why)) < 0)
		return;
	snprintf(proc_path, sizeof(proc_path), "/proc/self/fd/%d", dfd);
	if ((r->abort_wd = inotify_add_watch(a->run.markers_fd, proc_path, IN_CREATE | IN_MOVED_TO | IN_ONLYDIR)) < 0) {
		close(dfd);
		return;
	}
	r->abort_dfd = dfd;
	r->abort_kdev = sg_kdev(st.st_dev);
	r->abort_ino = st.st_ino;
	rescan_root(a, r, false);
}

bool audit_in_abort_dir(const struct audit *a, uint32_t kdev, uint64_t dir_ino)
{
	if (!dir_ino)
		return false;
	if (a->abort_set.abort_dfd >= 0 && a->abort_set.abort_kdev == kdev && a->abort_set.abort_ino == dir_ino)
		return true;
	for (unsigned r = 0; r < a->root_table.nroots; r++)
		if (a->root_table.roots[r].in_use && a->root_table.roots[r].abort_dfd >= 0 && a->root_table.roots[r].abort_kdev == kdev &&
		    a->root_table.roots[r].abort_ino == dir_ino)
			return true;
	return false;
}

void audit_markers_unwatch_root(struct audit *a, int root)
{
	struct audit_root *r = &a->root_table.roots[root];

	if (r->abort_dfd < 0)
		return;
	inotify_rm_watch(a->run.markers_fd, r->abort_wd);
	close(r->abort_dfd);
	r->abort_dfd = r->abort_wd = -1;
}

/* The scope and directory of watch wd, or false (a root forgotten). */
static bool dir_of_watch(const struct audit *a, int wd, uint32_t *scope, int *dfd)
{
	if (wd == a->abort_set.abort_wd) {
		*scope = 0;
		*dfd = a->abort_set.abort_dfd;
		return true;
	}
	for (unsigned r = 0; r < a->root_table.nroots; r++)
		if (a->root_table.roots[r].in_use && a->root_table.roots[r].abort_dfd >= 0 && a->root_table.roots[r].abort_wd == wd) {
			*scope = a->root_table.roots[r].id;
			*dfd = a->root_table.roots[r].abort_dfd;
			return true;
		}
	return false;
}

int audit_markers_read(struct audit *a, int fd)
{
	char buf[64 * (sizeof(struct inotify_event) + NAME_MAX + 1)]
		__attribute__((aligned(__alignof__(struct inotify_event))));
	uint32_t scope;
	ssize_t n;
	int dfd, ret;

	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		for (char *p = buf; p < buf + n;) {
			const struct inotify_event *ev = (const struct inotify_event *)p;
			if (ev->mask & IN_Q_OVERFLOW) {
				a->abort_set.marker_overflows++;
				if ((ret = rescan(a)) < 0)
					return ret;
				for (unsigned r = 0; r < a->root_table.nroots; r++)
					if (a->root_table.roots[r].in_use && a->root_table.roots[r].abort_dfd >= 0)
						rescan_root(a, &a->root_table.roots[r], true);
			} else if (ev->len && !(ev->mask & IN_ISDIR) && dir_of_watch(a, ev->wd, &scope, &dfd)) {
				audit_abort_add(a, scope, dfd, ev->name, true);
			}
			p += sizeof(*ev) + ev->len;
		}
	}
	return n < 0 && errno != EAGAIN ? -errno : 0;
}

void audit_aborts_free(struct audit *a)
{
	for (struct audit_abort *ab = a->abort_set.aborts, *next; ab; ab = next) {
		next = ab->next;
		for (struct audit_leftover *l = ab->leftovers, *ln; l; l = ln) {
			ln = l->next;
			audit_workload_release(l->creator_workload);
			free(l->name);
			free(l);
		}
		audit_workload_set_free(&ab->workloads);
		free(ab->request);
		free(ab);
	}
	audit_fold_free(a);
	free(a->abort_set.abort_index.buckets); /* its nodes are the aborts, freed above and there */
	a->abort_set.abort_index = (struct sg_htable){0};
	for (size_t i = 0; i < a->abort_set.nmarkers_at_start; i++)
		free(a->abort_set.markers_at_start[i]);
	free(a->abort_set.markers_at_start);
	if (a->abort_set.abort_dfd >= 0)
		close(a->abort_set.abort_dfd);
	a->abort_set.abort_dfd = -1;
}

void audit_markers_unwatch_roots(struct audit *a)
{
	for (unsigned r = 0; r < a->root_table.nroots; r++)
		if (a->root_table.roots[r].in_use)
			audit_markers_unwatch_root(a, (int)r);
}
