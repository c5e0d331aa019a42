/* An abort, for the auditor, is a marker appearing in --abort-dir while it
 * runs: the same convention the shim obeys.  Markers already there at the
 * start, and a marker touched again, are not new aborts.  When the kernel's
 * inotify queue overflows (a burst of more markers than
 * fs.inotify.max_queued_events), the directory is read again: markers
 * still there are recovered, those removed meanwhile are lost, so every
 * overflow is counted and fails the gate. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "audit.h"
#include "holders.h"
#include "hash.h"
#include "reqid.h"

static int by_text(const void *x, const void *y)
{
	return strcmp(*(char *const *)x, *(char *const *)y);
}

/* The markers already in the directory (after the watch is set, so that
 * none falls between the two), sorted: a rescan must not take them for new. */
static int note_markers_at_start(struct audit *a)
{
	DIR *d = opendir(a->o->abort_dir);
	struct dirent *e;
	size_t cap = 0;

	if (!d)
		return -1;
	while ((e = readdir(d))) {
		if (e->d_type == DT_DIR || sg_reqid_invalid(e->d_name))
			continue;
		if (a->nmarkers_at_start == cap) {
			char **n = realloc(a->markers_at_start, (cap = cap ? cap * 2 : 64) * sizeof(*n));
			if (!n)
				break;
			a->markers_at_start = n;
		}
		if (!(a->markers_at_start[a->nmarkers_at_start] = strdup(e->d_name)))
			break;
		a->nmarkers_at_start++;
	}
	closedir(d);
	if (e) {
		errno = ENOMEM;
		return -1;
	}
	if (a->nmarkers_at_start)
		qsort(a->markers_at_start, a->nmarkers_at_start, sizeof(char *), by_text);
	return 0;
}

int audit_markers_open(struct audit *a)
{
	int fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK), saved;

	if (fd < 0)
		return -1;
	if (inotify_add_watch(fd, a->o->abort_dir, IN_CREATE | IN_MOVED_TO | IN_ONLYDIR) < 0 ||
	    note_markers_at_start(a) < 0) {
		saved = errno;
		close(fd);
		errno = saved;
		return -1;
	}
	return fd;
}

static bool is_abort(const struct sg_hnode *node, const void *request)
{
	return strcmp(sg_hnode_entry(node, struct audit_abort, node)->request, request) == 0;
}

struct audit_abort *audit_abort_of(const struct audit *a, const char *request)
{
	struct sg_hnode *node = sg_htable_find(&a->abort_index, sg_hash_str(request), is_abort, request);

	return node ? sg_hnode_entry(node, struct audit_abort, node) : NULL;
}

/* A marker is no file of a request: when the abort directory is on a shm
 * device its inode is excluded from the table.  The kernel side sends a
 * file's creation before inotify queues the marker, so the caller reads
 * the events after the markers, then ends the exclusions. */
static void exclude_marker_file(struct audit *a, const char *name)
{
	char path[SG_PATH_MAX + NAME_MAX + 2];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", a->o->abort_dir, name);
	if (lstat(path, &st) == 0 && S_ISREG(st.st_mode))
		audit_files_exclude(a->files, sg_kdev(st.st_dev), st.st_ino);
}

/* A new abort; false if request is one already (or no request at all). */
static bool add_abort(struct audit *a, const char *request)
{
	uint64_t h = sg_hash_str(request);
	struct audit_abort *ab;
	struct sg_hnode **slot;

	if (sg_reqid_invalid(request))
		return false;
	exclude_marker_file(a, request);
	if (sg_htable_reserve(&a->abort_index, 256) < 0 ||
	    *(slot = sg_htable_slot(&a->abort_index, h, is_abort, request)) || !(ab = calloc(1, sizeof(*ab))))
		return false;
	if (!(ab->request = strdup(request))) {
		free(ab);
		return false;
	}
	ab->node.hash = h;
	sg_htable_insert_at(&a->abort_index, slot, &ab->node);
	ab->marker_s = audit_now_s(a);
	*a->aborts_tail = ab;
	a->aborts_tail = &ab->next;
	if (!a->unmeasured)
		a->unmeasured = ab;
	a->naborts++;
	return true;
}

/* After an overflow: the markers now in the directory that are neither
 * aborts yet nor there from the start. */
static int rescan(struct audit *a)
{
	DIR *d = opendir(a->o->abort_dir);
	struct dirent *e;
	char *name;

	if (!d)
		return -1;
	while ((e = readdir(d))) {
		name = e->d_name;
		if (e->d_type != DT_DIR &&
		    !(a->nmarkers_at_start &&
		      bsearch(&name, a->markers_at_start, a->nmarkers_at_start, sizeof(char *), by_text)) &&
		    add_abort(a, name))
			a->markers_recovered++;
	}
	closedir(d);
	return 0;
}

int audit_markers_read(struct audit *a, int fd)
{
	char buf[64 * (sizeof(struct inotify_event) + NAME_MAX + 1)]
		__attribute__((aligned(__alignof__(struct inotify_event))));
	ssize_t n;

	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		for (char *p = buf; p < buf + n;) {
			const struct inotify_event *ev = (const struct inotify_event *)p;
			if (ev->mask & IN_Q_OVERFLOW) {
				a->marker_overflows++;
				if (rescan(a) < 0)
					return -1;
			} else if (ev->len && !(ev->mask & IN_ISDIR)) {
				add_abort(a, ev->name);
			}
			p += sizeof(*ev) + ev->len;
		}
	}
	return n < 0 && errno != EAGAIN ? -1 : 0;
}

void audit_aborts_free(struct audit *a)
{
	for (struct audit_abort *ab = a->aborts, *next; ab; ab = next) {
		next = ab->next;
		for (struct audit_leftover *l = ab->leftovers, *ln; l; l = ln) {
			ln = l->next;
			free(l->name);
			free(l);
		}
		free(ab->request);
		free(ab);
	}
	free(a->abort_index.buckets); /* its nodes are the aborts, freed above */
	a->abort_index = (struct sg_htable){0};
	for (size_t i = 0; i < a->nmarkers_at_start; i++)
		free(a->markers_at_start[i]);
	free(a->markers_at_start);
}
