#include "holders.h"

#include <ctype.h>
#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/kcmp.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "maps.h"

uint32_t sg_kdev(uint64_t st_dev)
{
	return (uint32_t)(major(st_dev) << 20 | minor(st_dev));
}

struct scan {
	struct sg_holders *hs;
	uint32_t *kdevs; /* sorted: a node pass asks for hundreds */
	unsigned ndevs;
	bool unlinked_only;
	bool no_kcmp; /* the kernel has no kcmp (CONFIG_CHECKPOINT_RESTORE off) */
};

static int by_kdev(const void *x, const void *y)
{
	uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;

	return (a > b) - (a < b);
}

static bool wanted(const struct scan *s, uint32_t kdev)
{
	return s->ndevs && bsearch(&kdev, s->kdevs, s->ndevs, sizeof(*s->kdevs), by_kdev);
}

static void add(struct sg_holders *hs, uint32_t kdev, uint64_t ino, uint32_t pid, bool mapped, const char *stat_path,
		const char *shown, size_t shown_len)
{
	if (hs->n == hs->cap) {
		size_t cap = hs->cap ? hs->cap * 2 : 64;
		struct sg_holder *h = realloc(hs->h, cap * sizeof(*h));
		if (!h)
			return;
		hs->h = h;
		hs->cap = cap;
	}
	char *path = shown ? strndup(shown, shown_len) : NULL;
	const char *slash = path ? strrchr(path, '/') : NULL;
	hs->h[hs->n++] = (struct sg_holder){kdev, ino, pid, mapped, strdup(stat_path), path, slash ? slash + 1 : NULL};
}

/* Whether an open that failed says the process is there but hidden from us
 * (not gone, and not a zombie, which holds nothing). */
static bool hidden(void)
{
	return errno == EACCES || errno == EPERM;
}

/* Files of the devices in the descriptor table of base (/proc/PID or
 * /proc/PID/task/TID), held by process pid; false if hidden. */
static bool scan_fds(struct scan *s, uint32_t pid, const char *base)
{
	char dir[64], link[sizeof(dir) + sizeof(((struct dirent *)0)->d_name) + 1], target[512];
	struct stat st;
	struct dirent *e;
	DIR *d;

	snprintf(dir, sizeof(dir), "%s/fd", base);
	if (!(d = opendir(dir)))
		return !hidden();
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.' || fstatat(dirfd(d), e->d_name, &st, 0) < 0 || !S_ISREG(st.st_mode) ||
		    (s->unlinked_only && st.st_nlink != 0) || !wanted(s, sg_kdev(st.st_dev)))
			continue;
		snprintf(link, sizeof(link), "%s/%s", dir, e->d_name);
		ssize_t n = readlink(link, target, sizeof(target) - 1);
		bool deleted;
		size_t len = n > 0 ? sg_proc_path_len(target, (size_t)n, &deleted) : 0;
		add(s->hs, sg_kdev(st.st_dev), st.st_ino, pid, false, link, n > 0 ? target : NULL, len);
	}
	closedir(d);
	return true;
}

struct maps_scan {
	struct scan *s;
	uint32_t pid;
};

static bool add_mapped(const struct sg_map *m, void *ctx)
{
	struct maps_scan *ms = ctx;
	uint32_t kdev = m->major << 20 | m->minor;
	char stat_path[96];

	if (!m->ino || (ms->s->unlinked_only && !m->deleted) || !wanted(ms->s, kdev))
		return true;
	/* Only the process has map_files (no thread does): once its main
	 * thread has exited, stat() through it fails. */
	snprintf(stat_path, sizeof(stat_path), "/proc/%u/map_files/%llx-%llx", ms->pid, (unsigned long long)m->start,
		 (unsigned long long)m->end);
	add(ms->s->hs, kdev, m->ino, ms->pid, true, stat_path, m->path, m->path_len);
	return true;
}

/* Files of the devices that process pid maps, read from base (/proc/PID or
 * /proc/PID/task/TID: threads share one address space).  Returns how many
 * mappings base shows (0: none, or gone), or -1 if hidden. */
static int scan_maps(struct scan *s, uint32_t pid, const char *base)
{
	/* Room for a line with a path of PATH_MAX and " (deleted)". */
	char path[64], buf[PATH_MAX + 256];
	struct maps_scan ms = {s, pid};
	size_t lines;
	int fd;

	snprintf(path, sizeof(path), "%s/maps", base);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return hidden() ? -1 : 0;
	lines = sg_maps_read(fd, buf, sizeof(buf), add_mapped, &ms);
	close(fd);
	return lines > INT_MAX ? INT_MAX : (int)lines;
}

/* Whether thread tid uses one of the descriptor tables already read (those
 * of the threads in seen).  kcmp compares the tables themselves; without it
 * every thread is read. */
static bool table_seen(struct scan *s, uint32_t tid, const uint32_t *seen, unsigned nseen)
{
	for (unsigned i = 0; i < nseen && !s->no_kcmp; i++) {
		long same = syscall(SYS_kcmp, (pid_t)seen[i], (pid_t)tid, KCMP_FILES, 0, 0);
		if (same == 0)
			return true;
		s->no_kcmp = same < 0 && errno == ENOSYS;
	}
	return false;
}

/* Files of the devices that process pid holds open or maps; false if
 * hidden.  Every thread is looked at: one may have a table of its own
 * (unshare(CLONE_FILES)), and after the main thread exits (pthread_exit)
 * /proc/PID/fd and /proc/PID/maps are empty while the others still hold
 * and map files.  Threads that share a table are read once. */
static bool scan_process(struct scan *s, uint32_t pid)
{
	char dir[48], base[64];
	uint32_t seen[16];
	unsigned nseen = 0;
	bool ok = true, mapped = false;
	struct stat st;
	struct dirent *e;
	DIR *d;

	snprintf(dir, sizeof(dir), "/proc/%u/task", pid);
	if (stat(dir, &st) < 0)
		return !hidden();
	/* The task directory has 2 + (number of threads) links: a single
	 * thread, most processes, is read without the walk. */
	if (st.st_nlink <= 3) {
		snprintf(base, sizeof(base), "/proc/%u", pid);
		return scan_fds(s, pid, base) & (scan_maps(s, pid, base) >= 0);
	}
	if (!(d = opendir(dir)))
		return !hidden();
	while ((e = readdir(d))) {
		if (!isdigit((unsigned char)e->d_name[0]))
			continue;
		uint32_t tid = (uint32_t)strtoul(e->d_name, NULL, 10);
		snprintf(base, sizeof(base), "%s/%u", dir, tid);
		if (!mapped) {
			/* An exited main thread shows no mappings: read the next thread. */
			int n = scan_maps(s, pid, base);
			ok &= n >= 0;
			mapped = n != 0;
		}
		/* A process hidden from us once is unknown: no need to try each thread. */
		if (ok && !table_seen(s, tid, seen, nseen)) {
			ok &= scan_fds(s, pid, base);
			if (nseen < sizeof(seen) / sizeof(*seen))
				seen[nseen++] = tid;
		}
	}
	closedir(d);
	return ok;
}

static int by_key(const void *x, const void *y)
{
	const struct sg_holder *a = x, *b = y;
	if (a->kdev != b->kdev)
		return (a->kdev > b->kdev) - (a->kdev < b->kdev);
	if (a->ino != b->ino)
		return (a->ino > b->ino) - (a->ino < b->ino);
	return (a->pid > b->pid) - (a->pid < b->pid);
}

int sg_holders_scan(struct sg_holders *hs, const uint32_t *kdevs, unsigned ndevs, bool unlinked_only)
{
	struct scan s = {hs, NULL, ndevs, unlinked_only, false};
	struct dirent *e;
	DIR *d;

	*hs = (struct sg_holders){0};
	if (ndevs && !(s.kdevs = malloc(ndevs * sizeof(*s.kdevs))))
		return -ENOMEM;
	if (ndevs) {
		memcpy(s.kdevs, kdevs, ndevs * sizeof(*kdevs));
		qsort(s.kdevs, ndevs, sizeof(*s.kdevs), by_kdev);
	}
	if (!(d = opendir("/proc"))) {
		int ret = -errno;
		free(s.kdevs);
		return ret;
	}
	while ((e = readdir(d))) {
		if (!isdigit((unsigned char)e->d_name[0]))
			continue;
		uint32_t pid = (uint32_t)strtoul(e->d_name, NULL, 10);
		/* One we may not read is unknown, not unused. */
		if (!scan_process(&s, pid)) {
			if (!hs->unreadable++)
				hs->first_unreadable = pid;
		}
	}
	closedir(d);
	free(s.kdevs);
	if (hs->n)
		qsort(hs->h, hs->n, sizeof(*hs->h), by_key);
	return 0;
}

const struct sg_holder *sg_holders_find(const struct sg_holders *hs, uint32_t kdev, uint64_t ino, size_t *count)
{
	size_t lo = 0, hi = hs->n;

	/* The first entry not below the key. */
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		const struct sg_holder *h = &hs->h[mid];
		if (h->kdev < kdev || (h->kdev == kdev && h->ino < ino))
			lo = mid + 1;
		else
			hi = mid;
	}
	size_t end = lo;
	while (end < hs->n && hs->h[end].kdev == kdev && hs->h[end].ino == ino)
		end++;
	*count = end - lo;
	return end > lo ? &hs->h[lo] : NULL;
}

const struct sg_holder *sg_holders_on(const struct sg_holders *hs, uint32_t kdev, size_t *count)
{
	size_t lo = 0, hi = hs->n, end;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (hs->h[mid].kdev < kdev)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (end = lo; end < hs->n && hs->h[end].kdev == kdev; end++)
		;
	*count = end - lo;
	return end > lo ? &hs->h[lo] : NULL;
}

void sg_holders_free(struct sg_holders *hs)
{
	for (size_t i = 0; i < hs->n; i++) {
		free(hs->h[i].stat_path);
		free(hs->h[i].path);
	}
	free(hs->h);
	*hs = (struct sg_holders){0};
}
