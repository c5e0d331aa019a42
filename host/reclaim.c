#include "reclaim.h"

#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "holders.h"
#include "locks.h"
#include "orphan_proof.h"
#include "text.h"

#define LOCK_RETRY_MS 50

/* --instance-gone: why tagged f, whose creator is dead, must still be
 * kept, or NULL when its instance is proven gone too (*why_go says so). */
static const char *instance_kept(const struct sg_reclaim_opts *o, struct sg_shm_listing *l, const struct sg_shm_file *f,
				 const char **why_go)
{
	const struct sg_creator_rec *r = o->records && f->linked && f->name && f->root >= 0
						 ? sg_store_find(o->records, f->kdev, f->ino)
						 : NULL;
	struct sg_orphan_verdict v;

	if (!r)
		return "its creator is gone, but --instance-gone asks for the proof that its instance is, and shmguard "
		       "watch has no record of it";
	v = sg_orphan_of(l, f, r, true);
	if (!v.proven)
		return v.missing;
	*why_go = v.proof;
	return NULL;
}

/* Whether the kernel says, now, that a process holds a lock on the
 * regular file name of dfd: 1, 0, or -1 when it cannot tell.  /proc/locks
 * is no snapshot (it is read a page at a time, and a lock let go earlier in
 * its list hides a later one), so the file itself is asked: a query for
 * POSIX and OFD locks, and an flock tried without waiting and given back
 * at once (no query exists for flock). */
static int lock_probe(int dfd, const char *name)
{
	struct flock q = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
	struct stat before, st;
	int ret, fd;

	if (fstatat(dfd, name, &before, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : -1;
	if (!S_ISREG(before.st_mode))
		return 0; /* no file of anyone's to lock: never removed as one */
	fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -1;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_ino != before.st_ino || st.st_dev != before.st_dev)
		ret = -1;
	else if (fcntl(fd, F_OFD_GETLK, &q) < 0)
		ret = -1;
	else if (q.l_type != F_UNLCK)
		ret = 1;
	else if (flock(fd, LOCK_EX | LOCK_NB) < 0)
		ret = errno == EWOULDBLOCK ? 1 : -1;
	else {
		flock(fd, LOCK_UN);
		ret = 0;
	}
	close(fd);
	return ret;
}

/* Why f, wanted, is in use by a lock on it or on its lock file (the
 * kernel's word, whatever descriptors show), or NULL. */
static const char *locked(const struct sg_locks *locks, int dfd, const struct sg_shm_file *f, char *buf, size_t len)
{
	char lock_name[SG_NAME_MAX + 32], comm[32], esc[sizeof(comm) * 4];
	const struct sg_lock *k = sg_locks_find(locks, f->kdev, f->ino);
	const char *whose = "it is";
	bool has_lock_file = sg_lock_file_of(f->name, lock_name, sizeof(lock_name)) == 0;
	struct stat st;
	int probe;

	if (locks->unknown)
		return "the locks held (/proc/locks) could not be read whole, and one could be on it";
	if (!k && has_lock_file && fstatat(dfd, lock_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
	    (k = sg_locks_find(locks, sg_kdev(st.st_dev), st.st_ino)))
		whose = "its lock file (shm_NAME_lockfile.lock) is";
	if (!k) {
		/* Not seen in /proc/locks: the file and its lock file asked. */
		if ((probe = lock_probe(dfd, f->name)) == 0 && has_lock_file)
			probe = lock_probe(dfd, lock_name), whose = "its lock file (shm_NAME_lockfile.lock) is";
		if (probe > 0)
			snprintf(buf, len, "%s locked (the kernel says so; /proc/locks had not shown it)", whose);
		else if (probe < 0)
			snprintf(buf, len, "cannot tell whether %s locked", whose);
		return probe ? buf : NULL;
	}
	if (k->pid > 0)
		snprintf(buf, len, "%s locked by %d (%s)", whose, (int)k->pid,
			 sg_text_escape(sg_comm((uint32_t)k->pid, comm, sizeof(comm)), esc, sizeof(esc)));
	else
		snprintf(buf, len, "%s locked (an open file description's lock)", whose);
	return buf;
}

/* Why f must be kept, or NULL when it may go; *why_go says why it may. */
static const char *judge(const struct sg_reclaim_opts *o, struct sg_shm_listing *l, const struct sg_shm_file *f,
			 const struct sg_locks *locks, int dfd, const char **why_go, char *buf, size_t len)
{
	const char *lock;
	bool wanted = false;
	char comm[32], esc[sizeof(comm) * 4];

	*why_go = NULL;
	if (f->journal_like) /* never one shmguard made: sweep removes only journals it reads */
		return o->glob && fnmatch(o->glob, f->name, FNM_PATHNAME) == 0
			       ? "named like shmguard's ownership journal, but not one it wrote or reads: never removed"
			       : NULL;
	if (f->tagged) {
		for (unsigned i = 0; i < o->nrequests && !wanted; i++)
			if (strcmp(f->tag.req, o->requests[i]) == 0) {
				wanted = true;
				*why_go = "its request was swept";
			}
		if (!wanted && o->dead && f->creator == CREATOR_DEAD) {
			const char *keep = o->instance_gone ? instance_kept(o, l, f, why_go) : NULL;
			if (keep)
				return keep;
			wanted = true;
			if (!o->instance_gone)
				*why_go = f->creator_proof == SG_PROOF_NAMESPACE_SCAN
						  ? "its creator is gone (no process of its pid namespace has its pid and start "
						    "time)"
						  : "its creator is gone";
		}
		if (!wanted && o->dead && f->creator == CREATOR_UNKNOWN) {
			snprintf(buf, len, "cannot tell whether its creator runs: %s",
				 sg_creator_proof_why(f->creator_proof));
			return buf;
		}
	} else if (o->dead && o->records && sg_orphan_record(o->records, f)) {
		/* The holders are checked below, as for every file. */
		struct sg_orphan_verdict v = sg_orphan_of(l, f, sg_orphan_record(o->records, f), true);
		if (!v.proven)
			return v.missing;
		wanted = true;
		*why_go = v.proof;
	} else if (o->glob && fnmatch(o->glob, f->name, FNM_PATHNAME) == 0) {
		if (f->age_s < o->older_than)
			return NULL; /* not a candidate: too young for --older-than */
		wanted = true;
		*why_go = "untagged, matches, old enough";
	}
	if (!wanted)
		return NULL;
	if (f->nholders) {
		snprintf(buf, len, "in use by %u (%s)", f->holders[0].pid,
			 sg_text_escape(sg_comm(f->holders[0].pid, comm, sizeof(comm)), esc, sizeof(esc)));
		return buf;
	}
	if ((lock = locked(locks, dfd, f, buf, len)))
		return lock;
	if (l->proc->holders.unreadable && !o->ignore_unreadable) {
		snprintf(buf, len, "%u %s cannot be read, e.g. %u (%s), and could be using it",
			 SG_PLURAL(l->proc->holders.unreadable, "process", "processes"), l->proc->holders.first_unreadable,
			 sg_text_escape(sg_comm(l->proc->holders.first_unreadable, comm, sizeof(comm)), esc, sizeof(esc)));
		return buf;
	}
	if (f->size == 0 && f->age_s < SG_RECLAIM_YOUNG_EMPTY_S)
		return "empty and young: its creator may not have sized it yet";
	return NULL;
}

struct run {
	const struct sg_reclaim_opts *o;
	struct sg_reclaim_outcome *out;
	void (*said)(const struct sg_reclaim_decision *d, void *ctx);
	void *ctx;
	unsigned root;
	uint64_t *went; /* the inodes removed (or that would be, dry) in this pass */
	size_t nwent;
};

static void say(const struct run *g, const char *verdict, const char *name, uint64_t bytes, const char *why,
		const struct sg_shm_file *f)
{
	const struct sg_reclaim_decision d = {verdict, g->root, name, bytes, why, f};

	g->said(&d, g->ctx);
}

/* Unlinks f if its name still refers to the inode examined. */
static void remove_file(struct run *g, int dfd, const struct sg_shm_file *f, const char *why)
{
	char msg[200];

	switch (sg_shm_unlink_same(dfd, f->name, f->kdev, f->ino, g->o->dry_run)) {
	case SG_UNLINK_GONE:
		say(g, "gone", f->name, 0, "removed by someone else meanwhile", f);
		return;
	case SG_UNLINK_REPLACED:
		g->out->kept++;
		say(g, "kept", f->name, f->bytes, "the name now refers to another file", f);
		return;
	case SG_UNLINK_FAILED:
		g->out->failed++;
		snprintf(msg, sizeof(msg), "%s: %s", why, strerror(errno));
		say(g, "failed", f->name, f->bytes, msg, f);
		return;
	case SG_UNLINK_DONE:
		g->went[g->nwent++] = f->ino;
		g->out->removed++;
		g->out->bytes += f->bytes;
		say(g, g->o->dry_run ? "would remove" : "removed", f->name, f->bytes, why, f);
		return;
	}
}

static void journal_reaped(unsigned root, const char *name, void *opaque)
{
	const struct run *g = opaque;

	(void)root;
	say(g, g->o->dry_run ? "would remove" : "removed", name, 0,
	    "ownership journal of a dead creator, none of its files left", NULL);
}

/* An exclusive lock on dfd, waited for SG_RECLAIM_LOCK_WAIT_MS at most:
 * never for good, as a lock others can take is no lock to wait on.
 * Returns 0, or -1 with errno (EWOULDBLOCK: still held by someone else). */
static int lock_root(int dfd)
{
	uint64_t until = sg_monotonic_ns() + SG_RECLAIM_LOCK_WAIT_MS * 1000000ull;
	const struct timespec pause = {0, LOCK_RETRY_MS * 1000000L};

	for (;;) {
		if (flock(dfd, LOCK_EX | LOCK_NB) == 0)
			return 0;
		if ((errno != EWOULDBLOCK && errno != EINTR) || sg_monotonic_ns() >= until)
			return -1;
		nanosleep(&pause, NULL);
	}
}

static int by_ino(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

	return (a > b) - (a < b);
}

/* Why lock file f must stay for its segment, or NULL: a lock file goes
 * only with its segment, which is either not in the root or went in this
 * pass (g->went sorted). */
static const char *segment_kept(const struct run *g, int dfd, const struct sg_shm_file *f)
{
	char segment[SG_NAME_MAX + 1];
	struct stat st;

	if (sg_lock_file_segment(f->name, segment, sizeof(segment)) < 0 ||
	    fstatat(dfd, segment, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
	    (g->nwent && bsearch(&st.st_ino, g->went, g->nwent, sizeof(*g->went), by_ino)))
		return NULL;
	return "the lock file of a segment that is kept (shm_NAME_lockfile.lock): it goes only with its segment";
}

int sg_reclaim_root(struct sg_shm_listing *l, unsigned r, const struct sg_reclaim_opts *o,
		    struct sg_reclaim_outcome *out, void (*said)(const struct sg_reclaim_decision *d, void *ctx),
		    void *ctx, char *err, size_t errlen)
{
	struct run g = {o, out, said, ctx, r, NULL, 0};
	struct sg_locks locks = {0};
	char buf[320], segment[SG_NAME_MAX + 1];
	int ret = 0, dfd = open(l->roots.dir[r], O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (dfd < 0) {
		ret = -errno;
		snprintf(err, errlen, "cannot open %s: %s", l->shown[r], strerror(-ret));
		return ret;
	}
	/* One sweep at a time per root: two never unlink the same name.
	 * Without the lock, this root is not swept. */
	if (lock_root(dfd) < 0) {
		ret = -errno;
		if (ret == -EWOULDBLOCK)
			snprintf(err, errlen,
				 "%s stayed locked by another process for %d s (another sweep, or anyone who can open "
				 "it): not swept",
				 l->shown[r], SG_RECLAIM_LOCK_WAIT_MS / 1000);
		else
			snprintf(err, errlen, "cannot lock %s: %s", l->shown[r], strerror(-ret));
		goto cleanup;
	}
	/* The locks as they are now, under the root's lock. */
	sg_locks_scan(&locks, NULL);
	if (!(g.went = malloc((l->n ? l->n : 1) * sizeof(*g.went)))) {
		ret = -ENOMEM;
		snprintf(err, errlen, "cannot sweep %s: %s", l->shown[r], strerror(ENOMEM));
		goto cleanup;
	}
	/* The segments first, then the lock files, which go only with them. */
	for (int lock_files = 0; lock_files < 2; lock_files++) {
		for (size_t i = 0; i < l->n; i++) {
			const struct sg_shm_file *f = &l->files[i];
			const char *why_go, *keep;

			if (f->root != (int)r || !f->linked || !f->name ||
			    (sg_lock_file_segment(f->name, segment, sizeof(segment)) == 0) != lock_files)
				continue;
			keep = judge(o, l, f, &locks, dfd, &why_go, buf, sizeof(buf));
			if (!keep && why_go && lock_files)
				keep = segment_kept(&g, dfd, f);
			if (keep) {
				out->kept++;
				say(&g, "kept", f->name, f->bytes, keep, f);
			} else if (why_go) {
				remove_file(&g, dfd, f, why_go);
			}
		}
		if (g.nwent)
			qsort(g.went, g.nwent, sizeof(*g.went), by_ino);
	}
	/* Whatever the mode: a dead creator's journal that names no file left
	 * speaks for nothing. */
	sg_shm_reap_journals(l, r, dfd, o->dry_run, journal_reaped, (void *)&g);
cleanup:
	free(g.went);
	sg_locks_free(&locks);
	close(dfd);
	return ret;
}
