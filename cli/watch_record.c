#include "watch_record.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cgroup_ids.h"
#include "journal.h"
#include "procstat.h"

/* The parent pid of pid (/proc/PID/stat field 4), 0 when unknown. */
static uint32_t parent_of(uint32_t pid)
{
	char path[32], buf[1024];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%u/stat", pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	/* comm may hold spaces and parentheses: the fields go on after the last ')'. */
	char *p = strrchr(buf, ')'), *end;
	if (!p || p[1] != ' ' || !p[2] || p[3] != ' ')
		return 0;
	unsigned long v = strtoul(p + 4, &end, 10);
	return end != p + 4 && *end == ' ' && v <= UINT32_MAX ? (uint32_t)v : 0;
}

/* The start time of pid in ticks if it started no later than before_ns
 * (CLOCK_BOOTTIME): a process that started later only has the pid now.
 * 0 when it cannot be told. */
static uint64_t started_before(uint32_t pid, uint64_t before_ns)
{
	static long hz;
	uint64_t ticks;

	if (!hz && (hz = sysconf(_SC_CLK_TCK)) <= 0)
		hz = 100;
	if (!pid || sg_proc_start_ticks((pid_t)pid, &ticks) < 0 || !ticks)
		return 0;
	return ticks * (1000000000ull / (uint64_t)hz) <= before_ns ? ticks : 0;
}

static uint64_t pidns_of(uint32_t pid)
{
	char path[48];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%u/ns/pid", pid);
	return stat(path, &st) == 0 ? st.st_ino : 0;
}

void sg_watch_creator(struct sg_creator_rec *r, uint32_t pid, uint64_t cgroup_id, const char *comm, uint64_t ts_ns)
{
	struct timespec now;

	clock_gettime(CLOCK_REALTIME, &now);
	r->recorded_ns = (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
	r->pid = pid;
	r->cgroup_id = cgroup_id;
	snprintf(r->comm, sizeof(r->comm), "%.*s", (int)sizeof(r->comm) - 1, comm);
	r->pidns = sg_self_pidns();
	if (sg_cgroup_path(cgroup_id, r->cgroup, sizeof(r->cgroup)) < 0)
		r->cgroup[0] = '\0';
	if (!pid)
		return;
	/* The event's time is CLOCK_MONOTONIC, start times are counted in
	 * CLOCK_BOOTTIME, which is never behind it: a creator that started
	 * before the file can only look later after a suspend, and is then
	 * unknown, never someone else. */
	if (!(r->start_ticks = started_before(pid, ts_ns)))
		return;
	r->creator_pidns = pidns_of(pid);
	r->parent_pid = parent_of(pid);
	/* The parent started before the creator, or the pid is another's now. */
	if (r->parent_pid && !(r->parent_start_ticks = started_before(r->parent_pid, ts_ns)))
		r->parent_pid = 0;
	/* Both read after the fact: the creator must still be the one whose
	 * parent was read (a reused pid in between would be another). */
	uint64_t again;
	if (sg_proc_start_ticks((pid_t)pid, &again) < 0 || again != r->start_ticks)
		r->parent_pid = 0, r->parent_start_ticks = 0;
}
