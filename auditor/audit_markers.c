/* An abort, for the auditor, is a marker appearing in --abort-dir while it
 * runs: the same convention the shim obeys.  Markers already there at the
 * start, and a marker touched again, are not new aborts. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "audit.h"
#include "hash.h"
#include "reqid.h"

int audit_markers_open(struct audit *a)
{
	int fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);

	if (fd < 0)
		return -1;
	if (inotify_add_watch(fd, a->o->abort_dir, IN_CREATE | IN_MOVED_TO | IN_ONLYDIR) < 0) {
		int saved = errno;
		close(fd);
		errno = saved;
		return -1;
	}
	return fd;
}

/* Open addressing over a->abort_index, kept at most half full. */
static struct audit_abort **slot_of(struct audit *a, const char *request)
{
	size_t mask = a->abort_index_size - 1, i = sg_hash_str(request) & mask;

	while (a->abort_index[i] && strcmp(a->abort_index[i]->request, request) != 0)
		i = (i + 1) & mask;
	return &a->abort_index[i];
}

static bool index_room(struct audit *a)
{
	if ((a->naborts + 1) * 2 <= a->abort_index_size)
		return true;
	size_t n = a->abort_index_size ? a->abort_index_size * 2 : 256;
	struct audit_abort **old = a->abort_index, **fresh = calloc(n, sizeof(*fresh));
	size_t old_size = a->abort_index_size;

	if (!fresh)
		return false;
	a->abort_index = fresh;
	a->abort_index_size = n;
	for (size_t i = 0; i < old_size; i++)
		if (old[i])
			*slot_of(a, old[i]->request) = old[i];
	free(old);
	return true;
}

static void add_abort(struct audit *a, const char *request)
{
	struct audit_abort *ab, **slot;

	if (sg_reqid_invalid(request) || !index_room(a) || *(slot = slot_of(a, request)) ||
	    !(ab = calloc(1, sizeof(*ab))))
		return;
	if (!(ab->request = strdup(request))) {
		free(ab);
		return;
	}
	*slot = ab;
	ab->marker_s = audit_now_s(a);
	*a->aborts_tail = ab;
	a->aborts_tail = &ab->next;
	a->naborts++;
}

void audit_markers_read(struct audit *a, int fd)
{
	char buf[64 * (sizeof(struct inotify_event) + NAME_MAX + 1)]
		__attribute__((aligned(__alignof__(struct inotify_event))));
	ssize_t n;

	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		for (char *p = buf; p < buf + n;) {
			const struct inotify_event *ev = (const struct inotify_event *)p;
			if (ev->len && !(ev->mask & IN_ISDIR))
				add_abort(a, ev->name);
			p += sizeof(*ev) + ev->len;
		}
	}
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
	free(a->abort_index);
}
