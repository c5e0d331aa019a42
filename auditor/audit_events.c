/* What the BPF events say about the files created under the shm roots. */
#include <limits.h>
#include <linux/types.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "audit_engine.h"
#include "audit_event.h"
#include "holders.h"
#include "reqid.h"

/* The kernel side's limits and the records they fill here. */
_Static_assert(sizeof(((struct audit_creator *)0)->comm) == SG_AUDIT_COMM_LEN &&
		       sizeof(((struct audit_leftover *)0)->comm) == SG_AUDIT_COMM_LEN,
	       "a file keeps the whole command name an event gives");
_Static_assert(SG_AUDIT_NAME_MAX >= NAME_MAX + 1 && SG_AUDIT_NAME_MAX >= SG_NAME_MAX + 1,
	       "an event holds any file name and any request ID, with its NUL");

/* Gives f, which has no request, the one the patterns give name. */
static void attribute_by(struct audit *a, struct audit_file *f, const char *name)
{
	char req[SG_NAME_MAX + 1], other[SG_NAME_MAX + 1];
	struct sg_match_at at;

	if (f->indexed || f->source == REQ_AMBIGUOUS)
		return;
	switch (sg_patterns_match(&a->o->patterns, name, strlen(name), req, other, &at)) {
	case SG_MATCH_ONE:
		audit_files_attribute(a->files, f, req, REQ_PATTERN, at.shape);
		break;
	case SG_MATCH_AMBIGUOUS:
		f->source = REQ_AMBIGUOUS;
		a->ambiguous++;
		break;
	case SG_MATCH_NONE:
		break;
	}
}

void audit_attribute_by_name(struct audit *a, struct audit_file *f)
{
	if (f->name)
		attribute_by(a, f, f->name);
}

/* A file's request follows its names.  The name a rename or a link gives
 * it replaces the request of the one before, when the patterns give that
 * name one; a name it had before, never looked at, still counts when the
 * new one gives none (a link, then the first name removed, before any
 * pass).  Any name it has gives a request it has none of.  The first name
 * is looked at by the next pass (the shim's xattr first).  A tag is exact
 * and stays. */
void audit_file_named(struct audit *a, struct audit_file *f, int root, const char *name, bool renamed)
{
	char req[SG_NAME_MAX + 1], other[SG_NAME_MAX + 1], had[AUDIT_FILE_REQUEST_MAX];
	bool had_name = f->name != NULL;
	struct sg_match_at at;

	if (had_name && !renamed) {
		attribute_by(a, f, name);
		return;
	}
	if (had_name && f->root == root && strcmp(f->name, name) == 0)
		return;
	if (had_name && !f->indexed)
		audit_attribute_by_name(a, f); /* before the old name is overwritten */
	if (!audit_files_name(a->files, f, root, name))
		return;
	if (!had_name || f->source == REQ_TAG ||
	    sg_patterns_match(&a->o->patterns, name, strlen(name), req, other, &at) != SG_MATCH_ONE ||
	    (f->indexed && strcmp(audit_file_request(f, had), req) == 0))
		return;
	audit_files_unattribute(a->files, f);
	audit_files_attribute(a->files, f, req, REQ_PATTERN, at.shape);
}

static struct audit_file *add(struct audit *a, const struct sg_audit_header *h, uint32_t kdev, uint64_t ino)
{
	char comm[SG_AUDIT_COMM_LEN];
	struct audit_workload *w;
	struct audit_file *f;

	memcpy(comm, h->comm, sizeof(comm));
	comm[sizeof(comm) - 1] = '\0';
	/* A full table may hold markers whose inotify events came after their
	 * creations were read: read those now (their files leave the table)
	 * rather than lose this file.  A failing inotify fd is the loop's to
	 * report, at its next read. */
	if (audit_files_count(a->files) >= a->o->max_files && a->markers_fd >= 0)
		(void)audit_markers_read(a, a->markers_fd);
	/* The cgroup is the event's: a process that predates the run counts too. */
	w = audit_workload_of(&a->workloads, h->cgroup_id, audit_now_s(a));
	if (!(f = audit_files_add(a->files, kdev, ino, h->tgid, comm, w)))
		return NULL;
	f->created_ns = h->ts_ns;
	return f;
}

/* An event with a name ends with it, NUL included (the kernel side sends
 * only that much); check anyway. */
#define NAMED_SIZE(type) (offsetof(type, name) + 1)

static bool has_name(const char *name, size_t room)
{
	return name[0] && memchr(name, '\0', room);
}

static void on_create(struct audit *a, const struct sg_audit_create *e, size_t size)
{
	struct audit_file *f;

	bool named = has_name(e->name, size - offsetof(struct sg_audit_create, name));

	a->events++;
	/* A device no root follows yet: a file made in a new tmpfs's first
	 * moments, kept for when its root is found. */
	if (audit_root_of_dev(a, e->dev) < 0) {
		audit_early_keep(a, &e->h, e->dev, e->ino);
		return;
	}
	/* A marker (in a directory that is no root): the probes that send the
	 * directory read its creation after its inotify event, too late for
	 * audit_files_exclude. */
	int dir_root = audit_root_of_dir(a, e->dev, e->dir_ino);
	if (dir_root < 0 && audit_in_abort_dir(a, e->dev, e->dir_ino))
		return;
	f = add(a, &e->h, e->dev, e->ino);
	if (f && named)
		audit_file_named(a, f, dir_root, e->name, false);
	/* The workload's root: the one its file is named in, else the first on
	 * its filesystem (the ctime probe sends no name). */
	int r = f ? (f->root >= 0 ? f->root : audit_root_of_dev(a, e->dev)) : -1;
	if (r >= 0 && (unsigned)r < a->nroots && a->roots[r].in_use)
		audit_workload_note_root(f->creator->workload, a->roots[r].shown);
}

/* The syscalls probe gives the path a rename or link created, as the
 * process wrote it: the file it names, if that is in a root. */
static bool find_in_roots(struct audit *a, const char *path, uint32_t *kdev, uint64_t *ino, uint64_t *dir_ino)
{
	const char *base = strrchr(path, '/');
	char full[SG_PATH_MAX + SG_AUDIT_NAME_MAX + 2];
	struct stat st;

	base = base ? base + 1 : path;
	for (unsigned r = 0; *base && r < a->nroots; r++) {
		if (!a->roots[r].in_use)
			continue;
		snprintf(full, sizeof(full), "%s/%s", a->roots[r].path, base);
		if (lstat(full, &st) == 0 && S_ISREG(st.st_mode) && sg_kdev(st.st_dev) == a->roots[r].kdev) {
			*kdev = a->roots[r].kdev;
			*ino = st.st_ino;
			*dir_ino = a->roots[r].dir_ino;
			return true;
		}
	}
	return false;
}

/* A name of a file (struct sg_audit_name).  A file the table does not hold
 * is added when it comes from outside the roots' directories (staged in a
 * subdirectory, or from where the probe cannot tell): it has just come into
 * view.  A file of a root that only changes is not: it predates the run. */
static void on_name(struct audit *a, const struct sg_audit_name *e, size_t size)
{
	uint32_t kdev = e->dev;
	uint64_t ino = e->ino, dir_ino = e->dir_ino, from = e->renamed ? e->old_dir_ino : e->dir_ino;
	const char *name = e->name;
	struct audit_file *f;

	a->events++;
	if (!has_name(name, size - offsetof(struct sg_audit_name, name)) ||
	    (!ino && !find_in_roots(a, name, &kdev, &ino, &dir_ino)))
		return;
	if (!e->ino) {
		from = 0;
		name = strrchr(name, '/') ? strrchr(name, '/') + 1 : name;
	}
	f = audit_files_find(a->files, kdev, ino);
	if (!f && (audit_root_of_dir(a, kdev, from) >= 0 || !(f = add(a, &e->h, kdev, ino))))
		return;
	audit_file_named(a, f, audit_root_of_dir(a, kdev, dir_ino), name, e->renamed);
}

static void on_tag(struct audit *a, const struct sg_audit_tag *e)
{
	struct audit_file *f = audit_files_find(a->files, sg_kdev(e->dev), e->ino);

	a->events++;
	/* The kernel side terminates the string; a request must still be one. */
	if (!memchr(e->request, '\0', sizeof(e->request)) || sg_reqid_invalid(e->request))
		return;
	if (f)
		audit_files_attribute(a->files, f, e->request, REQ_TAG, -1);
	else if (audit_root_of_dev(a, sg_kdev(e->dev)) < 0)
		audit_tags_keep(a, sg_kdev(e->dev), e->ino, e->request);
}

/* A followed file's inode is being evicted: nothing holds it any more.
 * The events come in the order they were queued, so a record made after
 * this is another file's, whose inode number was handed out again. */
static void on_freed(struct audit *a, const struct sg_audit_freed *e)
{
	struct audit_file *f = audit_files_find(a->files, e->dev, e->ino);

	a->events++;
	if (!f || f->created_ns > e->h.ts_ns)
		return;
	audit_file_freed(a, f);
	a->freed_at_eviction++;
}

void audit_on_event(struct audit *a, const void *data, size_t size)
{
	const struct sg_audit_header *h = data;

	if (size < sizeof(*h))
		return;
	switch (h->type) {
	case SG_AUDIT_CREATE:
		if (size >= NAMED_SIZE(struct sg_audit_create))
			on_create(a, data, size);
		break;
	case SG_AUDIT_TAG:
		if (size >= sizeof(struct sg_audit_tag))
			on_tag(a, data);
		break;
	case SG_AUDIT_NAME:
		if (size >= NAMED_SIZE(struct sg_audit_name))
			on_name(a, data, size);
		break;
	case SG_AUDIT_FREED:
		if (size >= sizeof(struct sg_audit_freed))
			on_freed(a, data);
		break;
	case SG_AUDIT_NEW_DEV:
		if (size >= sizeof(struct sg_audit_new_dev))
			audit_roots_new_dev(a, ((const struct sg_audit_new_dev *)data)->dev);
		break;
	}
}
