#include "holders.h"

#include <ctype.h>
#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

uint32_t sg_kdev(uint64_t st_dev)
{
	return (uint32_t)(major(st_dev) << 20 | minor(st_dev));
}

struct scan {
	struct sg_holders *hs;
	const uint32_t *kdevs;
	unsigned ndevs;
	bool unlinked_only;
};

static bool wanted(const struct scan *s, uint32_t kdev)
{
	for (unsigned i = 0; i < s->ndevs; i++)
		if (s->kdevs[i] == kdev)
			return true;
	return false;
}

static void add(struct sg_holders *hs, uint32_t kdev, uint64_t ino, uint32_t pid, bool mapped, const char *stat_path,
		const char *shown)
{
	if (hs->n == hs->cap) {
		size_t cap = hs->cap ? hs->cap * 2 : 64;
		struct sg_holder *h = realloc(hs->h, cap * sizeof(*h));
		if (!h)
			return;
		hs->h = h;
		hs->cap = cap;
	}
	char *name = NULL;
	const char *slash = shown ? strrchr(shown, '/') : NULL;
	if (slash) {
		size_t len = strlen(slash + 1);
		if (len > 10 && strcmp(slash + 1 + len - 10, " (deleted)") == 0)
			len -= 10;
		name = strndup(slash + 1, len);
	}
	hs->h[hs->n++] = (struct sg_holder){kdev, ino, pid, mapped, strdup(stat_path), name};
}

/* Whether an open that failed says the process is there but hidden from us
 * (not gone, and not a zombie, which holds nothing). */
static bool hidden(void)
{
	return errno == EACCES || errno == EPERM;
}

/* Files of the devices that process pid holds open; false if hidden. */
static bool scan_fds(struct scan *s, uint32_t pid)
{
	char dir[64], link[sizeof(dir) + sizeof(((struct dirent *)0)->d_name) + 1], target[512];
	struct stat st;
	struct dirent *e;
	DIR *d;

	snprintf(dir, sizeof(dir), "/proc/%u/fd", pid);
	if (!(d = opendir(dir)))
		return !hidden();
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.' || fstatat(dirfd(d), e->d_name, &st, 0) < 0 || !S_ISREG(st.st_mode) ||
		    (s->unlinked_only && st.st_nlink != 0) || !wanted(s, sg_kdev(st.st_dev)))
			continue;
		snprintf(link, sizeof(link), "%s/%s", dir, e->d_name);
		ssize_t n = readlink(link, target, sizeof(target) - 1);
		target[n > 0 ? n : 0] = '\0';
		add(s->hs, sg_kdev(st.st_dev), st.st_ino, pid, false, link, n > 0 ? target : NULL);
	}
	closedir(d);
	return true;
}

/* Files of the devices that process pid maps; false if hidden. */
static bool scan_maps(struct scan *s, uint32_t pid)
{
	char path[64], line[4096];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%u/maps", pid);
	if (!(f = fopen(path, "re")))
		return !hidden();
	while (fgets(line, sizeof(line), f)) {
		unsigned long long start, end, ino;
		unsigned maj, min;
		int off = 0;

		if (sscanf(line, "%llx-%llx %*s %*s %x:%x %llu %n", &start, &end, &maj, &min, &ino, &off) < 5 || !ino ||
		    (s->unlinked_only && !strstr(line, " (deleted)")))
			continue;
		uint32_t kdev = maj << 20 | min;
		if (!wanted(s, kdev))
			continue;
		char *shown = line + off;
		shown[strcspn(shown, "\n")] = '\0';
		char stat_path[96];
		snprintf(stat_path, sizeof(stat_path), "/proc/%u/map_files/%llx-%llx", pid, start, end);
		add(s->hs, kdev, ino, pid, true, stat_path, shown);
	}
	fclose(f);
	return true;
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
	struct scan s = {hs, kdevs, ndevs, unlinked_only};
	DIR *d = opendir("/proc");
	struct dirent *e;

	*hs = (struct sg_holders){0};
	if (!d)
		return -1;
	while ((e = readdir(d))) {
		if (!isdigit((unsigned char)e->d_name[0]))
			continue;
		uint32_t pid = (uint32_t)strtoul(e->d_name, NULL, 10);
		bool fds = scan_fds(&s, pid), maps = scan_maps(&s, pid);
		/* One we may not read is unknown, not unused. */
		if (!fds || !maps) {
			if (!hs->unreadable++)
				hs->first_unreadable = pid;
		}
	}
	closedir(d);
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

void sg_holders_free(struct sg_holders *hs)
{
	for (size_t i = 0; i < hs->n; i++) {
		free(hs->h[i].stat_path);
		free(hs->h[i].name);
	}
	free(hs->h);
	*hs = (struct sg_holders){0};
}
