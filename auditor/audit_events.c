/* What the BPF events say about the files created under the shm roots. */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "audit_engine.h"
#include "audit_trace.h"
#include "holders.h"
#include "journal_read.h"
#include "reqid.h"
#include "text.h"

/* The kernel side's limits and the records they fill here. */
_Static_assert(sizeof(((struct audit_creator *)0)->comm) == AUDIT_EVENT_COMM_LEN &&
		       sizeof(((struct audit_leftover *)0)->comm) == AUDIT_EVENT_COMM_LEN,
	       "a file keeps the whole command name an event gives");
_Static_assert(AUDIT_EVENT_NAME_MAX >= NAME_MAX + 1 && AUDIT_EVENT_NAME_MAX >= SG_NAME_MAX + 1,
	       "an event holds any file name and any request ID, with its NUL");

static struct audit_file *add(struct audit *a, const struct audit_event *e, uint32_t kdev, uint64_t ino)
{
	struct audit_workload *w;
	struct audit_file *f;

	/* A full table may hold markers whose inotify events came after their
	 * creations were read: read those now (their files leave the table)
	 * rather than lose this file.  A failing inotify fd is the loop's to
	 * report, at its next read. */
	if (audit_files_count(a->files) >= a->o->max_files && a->run.markers_fd >= 0)
		(void)audit_markers_read(a, a->run.markers_fd);
	/* The cgroup is the event's: a process that predates the run counts too. */
	w = audit_workload_of(&a->workloads, e->cgroup_id, audit_now_s(a));
	if (!(f = audit_files_add(a->files, kdev, ino, e->tgid, e->comm, w)))
		return NULL;
	f->created_ns = e->ts_ns;
	return f;
}

void audit_events_learn_patterns(struct audit *a, int slot, pid_t pid)
{
	const struct audit_root *r = slot >= 0 && (unsigned)slot < a->root_table.nroots ? &a->root_table.roots[slot] : NULL;
	char path[64], why[SG_NAME_MAX + 300] = "", shown[SG_ESCAPED_MAX], ewhy[SG_ESCAPED_MAX];
	struct stat st;

	if (!r || !r->in_use || !r->discovered || pid <= 0 || !audit_attribution_learning(&a->attribution, slot))
		return;
	/* The process's own /dev/shm must be this root: a process elsewhere
	 * (the host, another pod) that made a file here says nothing of it. */
	snprintf(path, sizeof(path), "/proc/%d/root/dev/shm", (int)pid);
	if (fstatat(AT_FDCWD, path, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode) ||
	    sg_kdev(st.st_dev) != r->kdev || st.st_ino != r->dir_ino)
		return;
	int learnt = audit_attribution_learn(&a->attribution, slot, pid, why, sizeof(why));
	if (learnt < 0 && why[0])
		fprintf(stderr, "shmguard audit: %s: %s; its files are named by the node's patterns\n",
			sg_text_escape(r->shown, shown, sizeof(shown)), sg_text_escape(why, ewhy, sizeof(ewhy)));
	/* Its markers are where its shims look for them. */
	if (learnt != 0 && audit_attribution_abort_name(&a->attribution, slot)) {
		audit_markers_unwatch_root(a, slot);
		audit_markers_watch_root(a, slot);
	}
}

static void on_create(struct audit *a, const struct audit_event *e)
{
	struct audit_file *f;

	a->event_counts.events++;
	/* A device no root follows yet: a file made in a new tmpfs's first
	 * moments, kept for when its root is found. */
	if (audit_root_of_dev(a, e->kdev) < 0) {
		audit_early_keep(&a->pending.early, e, audit_now_s(a));
		return;
	}
	/* A marker (in a directory that is no root): the probes that send the
	 * directory read its creation after its inotify event, too late for
	 * audit_files_exclude. */
	int dir_root = audit_root_of_dir(a, e->kdev, e->dir_ino);
	if (dir_root < 0 && audit_in_abort_dir(a, e->kdev, e->dir_ino))
		return;
	/* Its creator's environment may say its pod's patterns (the ctime
	 * probe sends no directory: the root of its device, then). */
	audit_events_learn_patterns(a, dir_root >= 0 ? dir_root : audit_root_of_dev(a, e->kdev), (pid_t)e->tgid);
	f = add(a, e, e->kdev, e->ino);
	if (f && e->name[0])
		audit_file_named(&a->attribution, f, dir_root, e->name, false);
	/* The workload's root: the one its file is named in, else the first on
	 * its filesystem (the ctime probe sends no name). */
	int r = f ? (f->root >= 0 ? f->root : audit_root_of_dev(a, e->kdev)) : -1;
	if (r >= 0 && (unsigned)r < a->root_table.nroots && a->root_table.roots[r].in_use)
		audit_workload_note_root(f->creator->workload, a->root_table.roots[r].shown, a->root_table.roots[r].id);
}

/* The syscalls probe gives the path a rename or link created, as the
 * process wrote it: the file it names, if that is in a root. */
static bool find_in_roots(struct audit *a, const char *path, uint32_t *kdev, uint64_t *ino, uint64_t *dir_ino)
{
	const char *base = strrchr(path, '/');
	char full[SG_PATH_MAX + AUDIT_EVENT_NAME_MAX + 2];
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

/* A name of a file.  A file the table does not hold is added when it
 * comes from outside the roots' directories (staged in a subdirectory, or
 * from where the probe cannot tell): it has just come into view.  A file
 * of a root that only changes is not: it predates the run. */
static void on_name(struct audit *a, const struct audit_event *e)
{
	uint32_t kdev = e->kdev;
	uint64_t ino = e->ino, dir_ino = e->dir_ino, from = e->renamed ? e->old_dir_ino : e->dir_ino;
	const char *name = e->name;
	struct audit_file *f;

	a->event_counts.events++;
	if (!name[0] || (!ino && !find_in_roots(a, name, &kdev, &ino, &dir_ino)))
		return;
	if (!e->ino) {
		from = 0;
		name = strrchr(name, '/') ? strrchr(name, '/') + 1 : name;
	}
	f = audit_files_find(a->files, kdev, ino);
	if (!f && (audit_root_of_dir(a, kdev, from) >= 0 || !(f = add(a, e, kdev, ino))))
		return;
	audit_file_named(&a->attribution, f, audit_root_of_dir(a, kdev, dir_ino), name, e->renamed);
}

static void on_tag(struct audit *a, const struct audit_event *e)
{
	struct audit_file *f = audit_files_find(a->files, e->kdev, e->ino);

	a->event_counts.events++;
	/* A request must still be one. */
	if (sg_reqid_invalid(e->name))
		return;
	if (f)
		audit_files_attribute(a->files, f, e->name, REQ_TAG, -1);
	else if (audit_root_of_dev(a, e->kdev) < 0)
		audit_tags_keep(a, e->kdev, e->ino, e->name);
}

/* A followed file's inode is being evicted: nothing holds it any more.
 * The events come in the order they were queued, so a record made after
 * this is another file's, whose inode number was handed out again. */
static void on_freed(struct audit *a, const struct audit_event *e)
{
	struct audit_file *f = audit_files_find(a->files, e->kdev, e->ino);

	a->event_counts.events++;
	if (!f || f->created_ns > e->ts_ns)
		return;
	audit_file_freed(a, f);
	a->event_counts.freed_at_eviction++;
}

void audit_on_event(struct audit *a, const struct audit_event *e)
{
	switch (e->type) {
	case AUDIT_EVENT_CREATE:
		on_create(a, e);
		break;
	case AUDIT_EVENT_TAG:
		on_tag(a, e);
		break;
	case AUDIT_EVENT_NAME:
		on_name(a, e);
		break;
	case AUDIT_EVENT_FREED:
		on_freed(a, e);
		break;
	case AUDIT_EVENT_NEW_DEV:
		audit_roots_new_dev(a, e->kdev);
		break;
	case AUDIT_EVENT_ATTACH:
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
		bool known = audit_early_claim(&a->pending.early, r->kdev, st.st_ino, &c);
		struct audit_workload *w = known ? audit_workload_of(&a->workloads, c.cgroup_id, audit_now_s(a)) : NULL;
		if (!(f = audit_files_add(a->files, r->kdev, st.st_ino, known ? c.tgid : 0, known ? c.comm : "?", w)))
			continue;
		f->created_ns = audit_clock_ns(a);
		if (known)
			audit_events_learn_patterns(a, slot, (pid_t)c.tgid);
		audit_review_caught_up(a, born ? a->start_ns + (born - start_unix_ns) : a->start_ns);
		audit_file_named(&a->attribution, f, slot, e->d_name, false);
		if (w)
			audit_workload_note_root(w, r->shown, r->id);
		audit_tags_claim(a, f);
		a->event_counts.caught_up++;
	}
	closedir(d);
}
