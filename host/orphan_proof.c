#include "orphan_proof.h"

#include <fcntl.h>
#include <fnmatch.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "holders.h"
#include "journal.h"
#include "journal_read.h"
#include "procstat.h"

/* The last component of a cgroup path. */
static const char *leaf(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

bool sg_cgroup_shared(const char *path)
{
	const char *name;

	/* Unknown, not absolute, or with a component that is no name. */
	if (path[0] != '/' || strstr(path, "//") || strstr(path, "/./") || strstr(path, "/../"))
		return true;
	name = leaf(path);
	if (!*name || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
		return true; /* "/" is the root cgroup */
	return fnmatch("*.slice", name, 0) == 0 || strcmp(name, "init.scope") == 0 ||
	       fnmatch("session-*.scope", name, 0) == 0 || fnmatch("user@*.service", name, 0) == 0;
}

struct sg_orphan_verdict sg_orphan_judge(const struct sg_creator_rec *r, const struct sg_orphan_facts *f,
					 bool ignore_unreadable)
{
	/* A cgroup that cannot be asked about is no instance to rely on. */
	bool unchecked = !r->cgroup_id || f->cgroup == SG_CGROUP_UNKNOWN;
	bool gone = !unchecked && f->cgroup == SG_CGROUP_GONE;
	struct sg_orphan_verdict v = {.shared = unchecked || sg_cgroup_shared(r->cgroup)};

	/* The instance first: what is missing there says the most. */
	if (!f->inode_same)
		v.missing = "the name is not the file recorded any more";
	else if (!v.shared && !gone)
		v.missing = "its instance runs: its creator's cgroup exists";
	else if (f->creator == CREATOR_ALIVE)
		v.missing = gone ? "its creator runs, in another cgroup (the one it created it in is gone)"
			    : unchecked ? "its creator runs (its cgroup cannot be checked)"
					: "its creator runs (its cgroup is shared)";
	else if (f->creator != CREATOR_DEAD)
		v.missing = "cannot tell whether its creator runs";
	else if (r->flags & SG_REC_ANCESTORS_CUT)
		v.missing = "the processes that started its creator were not all recorded (more than " SG_REC_ANCESTORS_TEXT
			    " in its cgroup, one outside watch's pid namespace, or no start times)";
	else if (f->parent == CREATOR_ALIVE)
		v.missing = "the process that started its creator runs, and may have been handed the name";
	else if (f->parent != CREATOR_DEAD && f->parent != CREATOR_NONE)
		v.missing = "cannot tell whether the process that started its creator runs";
	else if (f->ancestors_alive)
		v.missing = "a process that started its creator's parent runs (as a daemon running it through a "
			    "shell does), and may use the name";
	else if (f->ancestors_unknown)
		v.missing = "cannot tell whether every process that started its creator runs";
	else if (r->flags & SG_REC_ATTACHERS_UNSEEN)
		v.missing = "watch did not follow who opened it (--no-attachers): a process of any cgroup may use the "
			    "name again";
	else if (r->flags & SG_REC_ATTACHERS_LOST)
		v.missing = "more processes opened it than were recorded, and may use the name again";
	else if (f->attachers_alive)
		v.missing = gone ? "a process that opened it runs, and may use the name again (its creator's cgroup is "
				   "gone, not the process)"
				 : "a process that opened it runs, and may use the name again";
	else if (f->attachers_unknown)
		v.missing = "cannot tell whether a process that opened it runs";
	else if (gone)
		v.proof = "its instance is gone: its creator's cgroup no longer exists, and its creator, the processes "
			  "that started it and every process that opened it are dead";
	else
		v.proof = "its creator, the processes that started it and every process that opened it are dead (its "
			  "cgroup is shared or cannot be checked)";
	if (v.proof && f->holders)
		v.missing = "a live process has it open or mapped";
	else if (v.proof && f->unreadable && !ignore_unreadable)
		v.missing = "some processes cannot be read, and could be using it";
	if (v.missing)
		v.proof = NULL;
	v.proven = v.proof != NULL;
	return v;
}

static enum sg_creator_state process_state(struct sg_creators *c, uint32_t pid, uint64_t start_ticks,
					   uint64_t pidns)
{
	struct sg_tag t = {.pid = (pid_t)pid, .start_ticks = start_ticks, .pidns = pidns};

	return pid ? sg_creators_judge(c, &t, NULL) : CREATOR_UNKNOWN;
}

/* This process as a recorder names it, and the program it runs; read again
 * in a fork child. */
struct self_ident {
	pid_t pid;
	uint64_t start_ticks, pidns; /* 0: unknown */
	struct stat exe;             /* st_ino 0: unknown */
};

static const struct self_ident *self_ident(void)
{
	static struct self_ident me;

	if (me.pid != getpid()) {
		me.pid = getpid();
		me.pidns = sg_self_pidns();
		if (sg_proc_start_ticks(me.pid, &me.start_ticks) < 0)
			me.start_ticks = 0;
		if (stat("/proc/self/exe", &me.exe) < 0)
			me.exe.st_ino = 0;
	}
	return &me;
}

/* Whether the opener pid (started at start_ticks, numbered in pidns) is
 * shmguard, whose opening is no use of the name: this very process (the
 * reaper opens the files it judges: their tags, locks and birth), or
 * another that runs this very program, as the kernel says now
 * (/proc/PID/exe is the file /proc/self/exe is): a node agent or a sweep
 * asking a file for its locks.  Two agents on a node would otherwise keep
 * each other's candidates forever.  Another process only in this pid
 * namespace, and only where /proc lets it be read: else it counts. */
static bool opener_is_shmguard(uint32_t pid, uint64_t start_ticks, uint64_t pidns)
{
	const struct self_ident *me = self_ident();
	struct sg_proc_stat ps;
	struct stat exe;
	char path[32];
	bool same;
	int piddir;

	if (me->start_ticks && pid == (uint32_t)me->pid && start_ticks == me->start_ticks && pidns == me->pidns)
		return true;
	if (!me->exe.st_ino || !me->pidns || pidns != me->pidns)
		return false;
	snprintf(path, sizeof(path), "/proc/%u", pid);
	/* One directory for both reads: one process, even if its pid is reused. */
	if ((piddir = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return false;
	same = sg_proc_stat_at(piddir, &ps) == 0 && ps.start_ticks == start_ticks && !sg_proc_exited(&ps) &&
	       fstatat(piddir, "exe", &exe, 0) == 0 && exe.st_dev == me->exe.st_dev && exe.st_ino == me->exe.st_ino;
	close(piddir);
	return same;
}

void sg_orphan_gather(const struct sg_creator_rec *r, struct sg_creators *c, int dfd, const char *name,
		      size_t nholders, unsigned unreadable, struct sg_orphan_facts *f)
{
	struct stat st;
	uint64_t birth;

	*f = (struct sg_orphan_facts){.holders = nholders, .unreadable = unreadable};
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) && sg_kdev(st.st_dev) == r->kdev &&
	    st.st_ino == r->ino) {
		/* A birth time either side does not know proves nothing against it. */
		birth = sg_birth_ns(dfd, name, AT_SYMLINK_NOFOLLOW);
		f->inode_same = !birth || !r->birth_ns || birth == r->birth_ns;
	}
	f->cgroup = r->cgroup_id ? sg_cgroup_state(r->cgroup_id) : SG_CGROUP_UNKNOWN;
	f->creator = process_state(c, r->pid, r->start_ticks, r->pidns);
	/* Its ancestors in its cgroup, its parent first (none: it started the instance). */
	f->parent = r->nancestors ? process_state(c, r->ancestors[0].pid, r->ancestors[0].start_ticks, r->pidns)
				  : CREATOR_NONE;
	for (uint32_t i = 1; i < r->nancestors && i < SG_REC_ANCESTORS; i++) {
		enum sg_creator_state s = process_state(c, r->ancestors[i].pid, r->ancestors[i].start_ticks, r->pidns);

		if (s == CREATOR_ALIVE)
			f->ancestors_alive++;
		else if (s != CREATOR_ALIVE && s != CREATOR_DEAD)
			f->ancestors_unknown++;
	}
	for (uint32_t i = 0; i < r->nattachers && i < SG_REC_ATTACHERS; i++) {
		if (opener_is_shmguard(r->attachers[i].pid, r->attachers[i].start_ticks, r->pidns))
			continue;
		enum sg_creator_state s = process_state(c, r->attachers[i].pid, r->attachers[i].start_ticks, r->pidns);

		if (s == CREATOR_ALIVE)
			f->attachers_alive++;
		else if (s != CREATOR_ALIVE && s != CREATOR_DEAD)
			f->attachers_unknown++;
	}
}

const struct sg_creator_rec *sg_orphan_record(const struct sg_creator_store *s, const struct sg_shm_file *f)
{
	if (f->tagged || f->journal_like || !f->linked || !f->name || f->root < 0)
		return NULL;
	return sg_store_find(s, f->kdev, f->ino);
}

struct sg_orphan_verdict sg_orphan_of(const struct sg_shm_listing *l, const struct sg_shm_file *f,
				      const struct sg_creator_rec *r, bool instance_only)
{
	char path[SG_PATH_MAX + SG_NAME_MAX + 2];
	struct sg_orphan_facts facts;

	snprintf(path, sizeof(path), "%s/%s", l->roots.dir[f->root], f->name);
	/* The listing's creators only cache what /proc says: asking changes nothing it shows. */
	sg_orphan_gather(r, &l->proc->creators, AT_FDCWD, path, instance_only ? 0 : f->nholders, l->proc->holders.unreadable, &facts);
	return sg_orphan_judge(r, &facts, instance_only);
}
