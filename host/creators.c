#include "creators.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "journal.h"
#include "procstat.h"

const char *sg_creator_state_name(enum sg_creator_state s)
{
	static const char *names[] = {"-", "alive", "dead", "unknown"};
	return names[s];
}

const char *sg_creator_proof_name(enum sg_creator_proof p)
{
	static const char *names[] = {
		[SG_PROOF_NONE] = "none",
		[SG_PROOF_PID] = "pid",
		[SG_PROOF_NAMESPACE_SCAN] = "namespace_scan",
		[SG_PROOF_PROC_FOREIGN] = "proc_foreign",
		[SG_PROOF_NO_IDENTITY] = "no_identity",
		[SG_PROOF_PID_UNREADABLE] = "pid_unreadable",
		[SG_PROOF_NAMESPACE_UNSEEN] = "namespace_unseen",
		[SG_PROOF_PROCESSES_UNREADABLE] = "processes_unreadable",
		[SG_PROOF_OTHER_TIME_NAMESPACE] = "other_time_namespace",
		[SG_PROOF_PROC_HIDES] = "proc_hides",
	};
	return names[p];
}

const char *sg_creator_proof_why(enum sg_creator_proof p)
{
	switch (p) {
	case SG_PROOF_PROC_FOREIGN: return "/proc is another pid namespace's";
	case SG_PROOF_NO_IDENTITY: return "it could not read its own start time or pid namespace";
	case SG_PROOF_PID_UNREADABLE: return "its process could not be read";
	case SG_PROOF_NAMESPACE_UNSEEN:
		return "it ran in another pid namespace, which this one may not see whole (run from the "
		       "initial pid namespace)";
	case SG_PROOF_PROCESSES_UNREADABLE:
		return "it ran in another pid namespace, and some processes could not be read";
	case SG_PROOF_PROC_HIDES: return "/proc hides other users' processes from this one (hidepid)";
	case SG_PROOF_OTHER_TIME_NAMESPACE:
		return "a process with its pid runs in another time namespace, whose start times differ";
	default: return "no proof";
	}
}

/* The nsfs inode behind at/path (ns/pid, ns/time): 0 with errno when it
 * cannot be read. */
static uint64_t ns_inode(int at, const char *path)
{
	struct stat st;

	return fstatat(at, path, &st, 0) == 0 ? (uint64_t)st.st_ino : 0;
}

/* The NSpid line of status at (at, path): its last field, the pid in the
 * process's own namespace, and how many fields it has (1: the namespace of
 * the /proc read).  -ENOENT when gone, -EIO when there is no such line. */
static int nspid_at(int at, const char *path, uint32_t *pid, unsigned *levels)
{
	char buf[4096];
	ssize_t n;
	int fd = openat(at, path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0)
		return errno == ESRCH ? -ENOENT : -errno;
	buf[n] = '\0';
	/* The fields before NSpid are the kernel's own, except Name, which
	 * the kernel escapes (no newline in it). */
	char *line = strstr(buf, "\nNSpid:"), *end;
	if (!line || !(end = strchr(line + 1, '\n')))
		return -EIO; /* none, or cut off: not the whole line */
	*end = '\0';
	*levels = 0;
	for (char *p = line + 7; p < end; p++)
		*levels += *p == '\t';
	char *last = strrchr(line, '\t');
	unsigned long v;
	char *tail;
	if (!last)
		return -EIO;
	errno = 0;
	v = strtoul(last + 1, &tail, 10);
	if (errno || tail == last + 1 || *tail || !v || v > UINT32_MAX)
		return -EIO;
	*pid = (uint32_t)v;
	return 0;
}

/* The initial pid namespace's inode: fixed by the kernel (PROC_PID_INIT_INO
 * since 3.8).  NSpid cannot tell it: it counts from the namespace of the
 * /proc read, which may be a pod's own. */
#define INITIAL_PIDNS_INO 0xEFFFFFFCu

static void check(struct sg_creators *c)
{
	if (c->checked)
		return;
	c->checked = true;
	c->proc_own = sg_proc_is_own();
	/* Every pid namespace has a pid 1, root's: a /proc mounted with
	 * hidepid=invisible hides it, as it hides every process of others,
	 * whose absence would prove nothing. */
	c->proc_whole = access("/proc/1", F_OK) == 0;
	c->self_pidns = sg_self_pidns();
	c->self_timens = ns_inode(AT_FDCWD, "/proc/self/ns/time");
	c->initial_pidns = c->proc_own && c->self_pidns == INITIAL_PIDNS_INO;
}

bool sg_creators_proc_foreign(struct sg_creators *c)
{
	check(c);
	return !c->proc_own;
}

/* Threads of a process asked for its time namespace when its group leader
 * has released its own: at most this many. */
#define THREADS_ASKED 64

/* The time namespace of a thread of the process behind piddir that still
 * holds one: a group leader that exited (pthread_exit, or the first of an
 * exiting process's threads) has released its namespaces, not the others.
 * 0 if none does, errno as it found it (a thread's own end is not the
 * process's). */
static uint64_t thread_timens(int piddir)
{
	int saved = errno;
	int fd = openat(piddir, "task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	uint64_t t = 0;
	struct dirent *e;
	unsigned asked = 0;
	char path[NAME_MAX + sizeof("/ns/time")];
	DIR *d;

	if (fd < 0 || !(d = fdopendir(fd))) {
		if (fd >= 0)
			close(fd);
		errno = saved;
		return 0;
	}
	while (!t && asked < THREADS_ASKED && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/ns/time", e->d_name);
		t = ns_inode(dirfd(d), path);
		asked++;
	}
	closedir(d);
	errno = saved;
	return t;
}

enum sg_proc_clock sg_creators_clock_at(struct sg_creators *c, int piddir)
{
	uint64_t t;

	check(c);
	if ((t = ns_inode(piddir, "ns/time")) || (errno == ENOENT && (t = thread_timens(piddir))))
		return t == c->self_timens ? SG_CLOCK_SAME : SG_CLOCK_OTHER;
	/* This directory names one process: ESRCH says that process was
	 * reaped since it was opened (a later one of the same pid is another
	 * directory). */
	if (errno == ESRCH)
		return SG_CLOCK_GONE;
	if (errno != ENOENT)
		return SG_CLOCK_OTHER;
	return c->self_timens ? SG_CLOCK_RELEASED : SG_CLOCK_SAME; /* or a kernel without time namespaces */
}

/* Whether the process behind piddir, whose stat is ps, has exited: a
 * zombie, or its one thread has released its namespaces, which only its
 * exit does, after its memory and its files (a group leader that left its
 * threads running releases its own too), or it was reaped meanwhile.
 * *clock: its time namespace's. */
static bool exited_at(struct sg_creators *c, int piddir, const struct sg_proc_stat *ps, enum sg_proc_clock *clock)
{
	*clock = sg_creators_clock_at(c, piddir);
	return sg_proc_exited(ps) || *clock == SG_CLOCK_GONE || (*clock == SG_CLOCK_RELEASED && ps->threads <= 1);
}

/* Reads one process into *p: 0; 1 when it went away meanwhile; -1 when it
 * could not be read. */
static int read_ident(struct sg_creators *c, int procfd, const char *name, struct sg_proc_ident *p)
{
	struct sg_proc_stat ps;
	unsigned levels = 0;
	int r, nr, piddir = openat(procfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	/* Everything through this directory: it names one process, never a
	 * later one given the same pid. */
	if (piddir < 0)
		return errno == ENOENT || errno == ESRCH ? 1 : -1;
	p->pidns = ns_inode(piddir, "ns/pid");
	r = p->pidns ? 0 : -errno;
	nr = nspid_at(piddir, "status", &p->nspid, &levels);
	/* A process whose namespace may not be read (a more privileged one)
	 * still shows its level: with one pid, it is in the namespace of this
	 * /proc, this process's own, and cannot be anyone of another. */
	if ((r == -EACCES || r == -EPERM) && nr == 0 && levels == 1) {
		p->pidns = c->self_pidns;
		r = 0;
	}
	if (r == 0)
		r = nr;
	if (r == 0 && (r = sg_proc_stat_at(piddir, &ps)) == 0) {
		p->start_ticks = ps.start_ticks;
		enum sg_proc_clock clock;

		p->exited = exited_at(c, piddir, &ps, &clock);
		p->other_time = !p->exited && clock != SG_CLOCK_SAME;
	}
	close(piddir);
	return r == 0 ? 0 : r == -ENOENT || r == -ESRCH ? 1 : -1;
}

static int by_ident(const void *x, const void *y)
{
	const struct sg_proc_ident *a = x, *b = y;

	if (a->pidns != b->pidns)
		return a->pidns < b->pidns ? -1 : 1;
	if (a->nspid != b->nspid)
		return a->nspid < b->nspid ? -1 : 1;
	return (a->start_ticks > b->start_ticks) - (a->start_ticks < b->start_ticks);
}

/* Every process of /proc by its identity.  Memory short, or /proc
 * unreadable: counted as unreadable, so that nothing is proven dead. */
static void build_index(struct sg_creators *c)
{
	size_t cap = 0;
	struct dirent *d;
	DIR *proc;

	c->indexed = true;
	if (!(proc = opendir("/proc")))
		goto unreadable;
	while ((d = readdir(proc))) {
		struct sg_proc_ident id = {0};
		int r;

		if (d->d_name[0] < '1' || d->d_name[0] > '9')
			continue;
		if ((r = read_ident(c, dirfd(proc), d->d_name, &id)) == 1)
			continue;
		if (r < 0) {
			if (!c->unreadable++)
				c->first_unreadable = (pid_t)atoi(d->d_name);
			continue;
		}
		if (c->n == cap) {
			size_t nc = cap ? cap * 2 : 256;
			struct sg_proc_ident *v = realloc(c->p, nc * sizeof(*v));
			if (!v) {
				closedir(proc);
				goto unreadable;
			}
			c->p = v;
			cap = nc;
		}
		c->p[c->n++] = id;
	}
	closedir(proc);
	qsort(c->p, c->n, sizeof(*c->p), by_ident);
	return;
unreadable:
	if (!c->unreadable++)
		c->first_unreadable = 0;
}

/* The first process of namespace ns with a pid >= pid (or n). */
static size_t lower_bound(const struct sg_creators *c, uint64_t ns, uint32_t pid)
{
	size_t lo = 0, hi = c->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct sg_proc_ident *p = &c->p[mid];
		if (p->pidns < ns || (p->pidns == ns && p->nspid < pid))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* A creator of another pid namespace, from the index. */
static enum sg_creator_state judge_by_index(struct sg_creators *c, const struct sg_tag *t, enum sg_creator_proof *proof)
{
	bool seen_ns, other_time = false;
	size_t i;

	if (!c->indexed)
		build_index(c);
	i = lower_bound(c, t->pidns, 0);
	seen_ns = i < c->n && c->p[i].pidns == t->pidns;
	for (i = lower_bound(c, t->pidns, (uint32_t)t->pid); i < c->n && c->p[i].pidns == t->pidns &&
							    c->p[i].nspid == (uint32_t)t->pid;
	     i++) {
		if (c->p[i].start_ticks == t->start_ticks && !c->p[i].exited)
			return *proof = SG_PROOF_NAMESPACE_SCAN, CREATOR_ALIVE;
		other_time |= c->p[i].other_time;
	}
	/* Not found.  Dead only if every process that namespace can hold was
	 * read: from the initial pid namespace every process shows; from
	 * another, a namespace of which some process shows is one below this
	 * one, all of whose processes show too. */
	if (other_time)
		return *proof = SG_PROOF_OTHER_TIME_NAMESPACE, CREATOR_UNKNOWN;
	if (c->unreadable)
		return *proof = SG_PROOF_PROCESSES_UNREADABLE, CREATOR_UNKNOWN;
	if (!c->initial_pidns && !seen_ns)
		return *proof = SG_PROOF_NAMESPACE_UNSEEN, CREATOR_UNKNOWN;
	return *proof = SG_PROOF_NAMESPACE_SCAN, CREATOR_DEAD;
}

/* A creator of this pid namespace: its pid.  A reused pid is not the
 * creator (the start time must match), unless the process there reads
 * another clock.  A zombie (exited, not yet reaped: a container's PID 1 may
 * never reap), or a process that has released its namespaces on its way
 * there, is dead. */
static enum sg_creator_state judge_by_pid(struct sg_creators *c, const struct sg_tag *t,
					  enum sg_creator_proof *proof)
{
	char path[32];
	struct sg_proc_stat ps;
	int piddir, r;

	snprintf(path, sizeof(path), "/proc/%d", (int)t->pid);
	if ((piddir = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		r = -errno;
	else
		r = sg_proc_stat_at(piddir, &ps);
	*proof = SG_PROOF_PID;
	if (r == -ENOENT || r == -ESRCH) {
		if (piddir >= 0)
			close(piddir);
		return CREATOR_DEAD;
	}
	if (r < 0) {
		if (piddir >= 0)
			close(piddir);
		return *proof = SG_PROOF_PID_UNREADABLE, CREATOR_UNKNOWN;
	}
	enum sg_proc_clock clock;
	bool exited = exited_at(c, piddir, &ps, &clock);
	enum sg_creator_state s = ps.start_ticks == t->start_ticks && !exited ? CREATOR_ALIVE
				  : exited || clock == SG_CLOCK_SAME ? CREATOR_DEAD
								 : CREATOR_UNKNOWN;
	if (s == CREATOR_UNKNOWN)
		*proof = SG_PROOF_OTHER_TIME_NAMESPACE;
	close(piddir);
	return s;
}

enum sg_creator_state sg_creators_judge(struct sg_creators *c, const struct sg_tag *t, enum sg_creator_proof *proof)
{
	enum sg_creator_proof ignored;

	if (!proof)
		proof = &ignored;
	check(c);
	/* An identity the creator could not read names nobody to look for. */
	if (!c->proc_own)
		return *proof = SG_PROOF_PROC_FOREIGN, CREATOR_UNKNOWN;
	if (!c->self_pidns || !t->start_ticks || !t->pidns || t->pid <= 0)
		return *proof = SG_PROOF_NO_IDENTITY, CREATOR_UNKNOWN;
	if (!c->proc_whole)
		return *proof = SG_PROOF_PROC_HIDES, CREATOR_UNKNOWN;
	if (t->pidns == c->self_pidns)
		return judge_by_pid(c, t, proof);
	return judge_by_index(c, t, proof);
}

void sg_creators_free(struct sg_creators *c)
{
	free(c->p);
	memset(c, 0, sizeof(*c));
}
