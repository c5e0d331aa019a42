#include "orphan_proof.h"

#include <fcntl.h>
#include <fnmatch.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "holders.h"
#include "journal_read.h"

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

/* The host's PID 1 (systemd, or an init) never takes a name handed over. */
static bool is_host_init(uint32_t pid)
{
	return pid == 1;
}

struct sg_orphan_verdict sg_orphan_judge(const struct sg_creator_rec *r, const struct sg_orphan_facts *f,
					 bool ignore_unreadable)
{
	/* A cgroup that cannot be asked about is no instance to rely on: the
	 * creator and its parent must speak for it, as in a shared one. */
	bool unchecked = !r->cgroup_id || f->cgroup == SG_CGROUP_UNKNOWN;
	struct sg_orphan_verdict v = {.shared = unchecked || sg_cgroup_shared(r->cgroup)};

	/* The instance first: what is missing there says the most. */
	if (!f->inode_same)
		v.missing = "the name is not the file recorded any more";
	else if (!unchecked && f->cgroup == SG_CGROUP_GONE)
		v.proof = "its instance is gone: its creator's cgroup no longer exists";
	else if (!v.shared)
		v.missing = "its instance runs: its creator's cgroup exists";
	else if (f->creator == CREATOR_ALIVE)
		v.missing = unchecked ? "its creator runs (its cgroup cannot be checked)"
				      : "its creator runs (its cgroup is shared)";
	else if (f->creator != CREATOR_DEAD)
		v.missing = "cannot tell whether its creator runs, and its cgroup is shared or cannot be checked";
	else if (!is_host_init(r->parent_pid) && f->parent == CREATOR_ALIVE)
		v.missing = "the process that started its creator runs, and may have been handed the name (its "
			    "cgroup is shared or cannot be checked)";
	else if (!is_host_init(r->parent_pid) && f->parent != CREATOR_DEAD)
		v.missing = "cannot tell whether the process that started its creator runs (its cgroup is shared "
			    "or cannot be checked)";
	else if (r->flags & SG_REC_ATTACHERS_UNSEEN)
		v.missing = "watch did not follow who opened it (--no-attachers), and its cgroup is shared or cannot be "
			    "checked";
	else if (r->flags & SG_REC_ATTACHERS_LOST)
		v.missing = "more processes opened it than were recorded, and may use the name again (its cgroup is "
			    "shared or cannot be checked)";
	else if (f->attachers_alive)
		v.missing = "a process that opened it runs, and may use the name again (its cgroup is shared or "
			    "cannot be checked)";
	else if (f->attachers_unknown)
		v.missing = "cannot tell whether a process that opened it runs (its cgroup is shared or cannot be "
			    "checked)";
	else if (r->nattachers)
		v.proof = "its creator, the process that started it and every process that opened it are dead (its "
			  "cgroup is shared or cannot be checked)";
	else
		v.proof = "its creator and the process that started it are dead, and no other process opened it "
			  "(its cgroup is shared or cannot be checked)";
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
	f->parent = process_state(c, r->parent_pid, r->parent_start_ticks, r->pidns);
	for (uint32_t i = 0; i < r->nattachers && i < SG_REC_ATTACHERS; i++) {
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
	sg_orphan_gather(r, (struct sg_creators *)&l->creators, AT_FDCWD, path, instance_only ? 0 : f->nholders, l->holders.unreadable, &facts);
	return sg_orphan_judge(r, &facts, instance_only);
}
