#include "watch_record.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cgroup_ids.h"
#include "clock.h"
#include "journal.h"
#include "procstat.h"

/* CLOCK_BOOTTIME ns as /proc/PID/stat counts them (field 22): whole clock
 * ticks, rounded down as the kernel does. */
static uint64_t ticks_of(uint64_t ns)
{
	static long hz;

	if (!hz && (hz = sysconf(_SC_CLK_TCK)) <= 0)
		hz = 100;
	return ns / (1000000000ull / (uint64_t)hz);
}

/* A program creating many files is asked about once: the last creator's
 * pid namespace (a process never changes its own) and the last cgroup's
 * path (an id is never given twice within a boot; a cgroup renamed keeps
 * its id, so the path is believed for CACHE_NS only). */
#define CACHE_NS 1000000000ull
static struct {
	uint32_t pid;
	uint64_t start_ticks, pidns;
} last_process;
static uint64_t own_pidns;
static struct {
	uint64_t id, until_ns;
	char path[SG_REC_CGROUP_MAX];
} last_cgroup;

/* The pid namespace of pid, if pid is still the process that started at
 * start_ticks; 0 otherwise. */
static uint64_t pidns_of(uint32_t pid, uint64_t start_ticks)
{
	char path[48];
	struct stat st;
	uint64_t now;

	if (last_process.pid == pid && last_process.start_ticks == start_ticks)
		return last_process.pidns;
	snprintf(path, sizeof(path), "/proc/%u/ns/pid", pid);
	if (stat(path, &st) < 0 || sg_proc_start_ticks((pid_t)pid, &now) < 0 || now != start_ticks)
		return 0;
	last_process.pid = pid;
	last_process.start_ticks = start_ticks;
	last_process.pidns = st.st_ino;
	return st.st_ino;
}

/* The path of cgroup id into r, or "" when it cannot be read. */
static void cgroup_of(struct sg_creator_rec *r)
{
	uint64_t now = sg_monotonic_ns();

	if (r->cgroup_id && r->cgroup_id == last_cgroup.id && now < last_cgroup.until_ns) {
		memcpy(r->cgroup, last_cgroup.path, sizeof(r->cgroup));
		return;
	}
	if (sg_cgroup_path(r->cgroup_id, r->cgroup, sizeof(r->cgroup)) < 0) {
		r->cgroup[0] = '\0';
		return;
	}
	last_cgroup.id = r->cgroup_id;
	last_cgroup.until_ns = now + CACHE_NS;
	memcpy(last_cgroup.path, r->cgroup, sizeof(last_cgroup.path));
}

void sg_watch_creator(struct sg_creator_rec *r, const struct audit_event *e)
{
	struct timespec now;

	clock_gettime(CLOCK_REALTIME, &now);
	r->recorded_ns = (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
	r->cgroup_id = e->cgroup_id;
	_Static_assert(sizeof(r->comm) <= sizeof(e->comm), "a record's comm fits the event's");
	memcpy(r->comm, e->comm, sizeof(r->comm) - 1);
	r->comm[sizeof(r->comm) - 1] = '\0';
	/* watch's own, which it never leaves. */
	if (!own_pidns)
		own_pidns = sg_self_pidns();
	r->pidns = own_pidns;
	cgroup_of(r);
	/* A pid outside watch's namespace names nobody it can look for. */
	if ((r->pid = e->tgid) && e->start_ns) {
		r->start_ticks = ticks_of(e->start_ns);
		r->creator_pidns = pidns_of(r->pid, r->start_ticks);
	}
	if ((r->parent_pid = e->parent_tgid) && e->parent_start_ns)
		r->parent_start_ticks = ticks_of(e->parent_start_ns);
	else
		r->parent_pid = 0;
	/* The chain up to its instance's start, whole or refused. */
	r->nancestors = e->nancestors <= SG_REC_ANCESTORS ? e->nancestors : 0;
	_Static_assert(AUDIT_EVENT_ANCESTORS <= SG_REC_ANCESTORS, "a record holds every ancestor the kernel sends");
	bool whole = e->ancestors_whole && e->start_ns && e->nancestors <= SG_REC_ANCESTORS;
	for (uint32_t i = 0; i < r->nancestors; i++) {
		r->ancestors[i] = (struct sg_rec_ancestor){.pid = e->ancestors[i].tgid,
							   .start_ticks = ticks_of(e->ancestors[i].start_ns)};
		whole &= r->ancestors[i].pid && e->ancestors[i].start_ns;
	}
	if (!whole)
		r->flags |= SG_REC_ANCESTORS_CUT;
}

bool sg_watch_attacher(struct sg_creator_rec *r, const struct audit_event *e)
{
	/* A pid outside watch's namespace, or without a start, names nobody. */
	return sg_rec_attach(r, e->start_ns ? e->tgid : 0, e->start_ns ? ticks_of(e->start_ns) : 0);
}
