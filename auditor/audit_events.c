/* What the BPF events say about the files created under the shm roots. */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/types.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "audit_engine.h"
#include "audit_event.h"
#include "holders.h"
#include "journal_read.h"
#include "reqid.h"

/* The kernel side's limits and the records they fill here. */
_Static_assert(sizeof(((struct audit_creator *)0)->comm) == SG_AUDIT_COMM_LEN &&
		       sizeof(((struct audit_leftover *)0)->comm) == SG_AUDIT_COMM_LEN,
	       "a file keeps the whole command name an event gives");
_Static_assert(SG_AUDIT_NAME_MAX >= NAME_MAX + 1 && SG_AUDIT_NAME_MAX >= SG_NAME_MAX + 1,
	       "an event holds any file name and any request ID, with its NUL");

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
	if (audit_files_count(a->files) >= a->o->max_files && a->run.markers_fd >= 0)
		(void)audit_markers_read(a, a->run.markers_fd);
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

	a->fig.events++;
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
	if (r >= 0 && (unsigned)r < a->root_table.nroots && a->root_table.roots[r].in_use)
		audit_workload_note_root(f->creator->workload, a->root_table.roots[r].shown);
}

/* The syscalls probe gives the path a rename or link created, as the
 * process wrote it: the file it names, if that is in a root. */
static bool find_in_roots(struct audit *a, const char *path, uint32_t *kdev, uint64_t *ino, uint64_t *dir_ino)
{
	const char *base = strrchr(path, '/');
	char full[SG_PATH_MAX + SG_AUDIT_NAME_MAX + 2];
	struct stat st;

	base = base ? base + 1 : path;
	for (unsigned r = 0; *base && r < a->root_table.nroots; r++) {
		if (!a->root_table.roots[r].in_use)
			continue;
		snprintf(full, sizeof(full), "%s/%s", a->root_table.roots[r].path, base);
		if (lstat(full, &st) == 0 && S_ISREG(st.st_mode) && sg_kdev(st.st_dev) == a->root_table.roots[r].kdev) {
			*kdev = a->root_table.roots[r].kdev;
			*ino = st.st_ino;
			*dir_ino = a->root_table.roots[r].dir_ino;
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

	a->fig.events++;
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

	a->fig.events++;
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

	a->fig.events++;
	if (!f || f->created_ns > e->h.ts_ns)
		return;
	audit_file_freed(a, f);
	a->fig.freed_at_eviction++;
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

/* The files a root found late holds that were made after the run began
 * (their birth time says so, where the kernel keeps one): created before
 * the kernel side followed its device.  Each is followed from now on, its
 * creator the one kept for it (audit_early_claim) or unknown, its request
 * from a tag kept for it (audit_tags_claim), its journal, xattr or name. */
void audit_events_catch_up(struct audit *a, int slot)
{
	struct audit_root *r = &a->root_table.roots[slot];
	uint64_t start_unix_ns = a->start_unix_ns;
	int fd = openat(r->dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *e;
	struct stat st;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((e = readdir(d))) {
		struct audit_file *f;
		uint64_t born;

		if ((e->d_type != DT_REG && e->d_type != DT_UNKNOWN) || audit_files_find(a->files, r->kdev, e->d_ino) ||
		    fstatat(r->dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
			continue;
		born = sg_birth_ns(r->dfd, e->d_name, AT_SYMLINK_NOFOLLOW);
		if (born && born < start_unix_ns)
			continue; /* there before the run */
		struct audit_early_create c;
		bool known = audit_early_claim(a, r->kdev, st.st_ino, &c);
		struct audit_workload *w = known ? audit_workload_of(&a->workloads, c.cgroup_id, audit_now_s(a)) : NULL;
		if (!(f = audit_files_add(a->files, r->kdev, st.st_ino, known ? c.tgid : 0, known ? c.comm : "?", w)))
			continue;
		f->created_ns = audit_clock_ns(a);
		audit_review_caught_up(a, born ? a->start_ns + (born - start_unix_ns) : a->start_ns);
		audit_file_named(a, f, slot, e->d_name, false);
		if (w)
			audit_workload_note_root(w, r->shown);
		audit_tags_claim(a, f);
		a->root_table.caught_up++;
	}
	closedir(d);
}
