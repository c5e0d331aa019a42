#include "shm_mounts.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "holders.h"

/* A mountinfo field, unescaped (the kernel writes space, tab, newline and
 * backslash as \ooo).  False when it does not fit len bytes or is malformed. */
static bool take_field(const char **p, char *out, size_t len)
{
	const char *s = *p;
	size_t n = 0;

	while (*s == ' ')
		s++;
	if (!*s)
		return false;
	for (; *s && *s != ' '; s++) {
		char c = *s;
		if (c == '\\') {
			if (s[1] < '0' || s[1] > '3' || s[2] < '0' || s[2] > '7' || s[3] < '0' || s[3] > '7')
				return false;
			c = (char)((s[1] - '0') << 6 | (s[2] - '0') << 3 | (s[3] - '0'));
			s += 3;
		}
		if (n + 1 >= len)
			return false;
		out[n++] = c;
	}
	out[n] = '\0';
	*p = s;
	return true;
}

int sg_mountinfo_parse(const char *line, struct sg_mountinfo_entry *e)
{
	char num[24], devs[24];
	unsigned maj, min;
	char *end;
	long id;

	memset(e, 0, sizeof(*e));
	if (!take_field(&line, num, sizeof(num)))
		return -EINVAL;
	id = strtol(num, &end, 10);
	if (*end || id < 0 || id > INT32_MAX)
		return -EINVAL;
	e->mnt_id = (int)id;
	if (!take_field(&line, num, sizeof(num)) || !take_field(&line, devs, sizeof(devs)) ||
	    sscanf(devs, "%u:%u", &maj, &min) != 2 || maj > 0xfff || min > 0xfffff)
		return -EINVAL;
	e->kdev = maj << 20 | min;
	if (!take_field(&line, e->root, sizeof(e->root)) || !take_field(&line, e->point, sizeof(e->point)))
		return -EINVAL;
	/* The mount's options, then optional fields up to a lone "-". */
	for (;;) {
		while (*line == ' ')
			line++;
		if (line[0] == '-' && (line[1] == ' ' || !line[1]))
			break;
		const char *before = line;
		char skip[SG_PATH_MAX + 1];
		if (!take_field(&line, skip, sizeof(skip)) || line == before)
			return -EINVAL;
	}
	line++;
	if (!take_field(&line, e->fstype, sizeof(e->fstype)))
		return -EINVAL;
	return 0;
}

/* The mount namespaces met so far, sorted. */
struct ns_set {
	uint64_t *v;
	size_t n, cap;
};

/* Where ns is or would go in the set. */
static size_t ns_set_slot(const struct ns_set *s, uint64_t ns)
{
	size_t lo = 0, hi = s->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (s->v[mid] < ns)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static bool ns_set_has(const struct ns_set *s, uint64_t ns)
{
	size_t i = ns_set_slot(s, ns);

	return i < s->n && s->v[i] == ns;
}

/* Adds ns, not there yet.  Memory short: it is read again at its next
 * process, which costs time, not truth. */
static void ns_set_add(struct ns_set *s, uint64_t ns)
{
	size_t lo = ns_set_slot(s, ns);

	if (s->n == s->cap) {
		size_t c = s->cap ? s->cap * 2 : 64;
		uint64_t *v = realloc(s->v, c * sizeof(*v));
		if (!v)
			return;
		s->v = v;
		s->cap = c;
	}
	memmove(&s->v[lo + 1], &s->v[lo], (s->n - lo) * sizeof(*s->v));
	s->v[lo] = ns;
	s->n++;
}

/* pid's mount namespace: 0 with errno when it cannot be read. */
static uint64_t mount_ns_of(const char *pid)
{
	char path[64], link[64];
	unsigned long long ns;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%s/ns/mnt", pid);
	n = readlink(path, link, sizeof(link) - 1);
	if (n < 0)
		return 0;
	link[n] = '\0';
	if (sscanf(link, "mnt:[%llu]", &ns) != 1 || !ns) {
		errno = EINVAL;
		return 0;
	}
	return ns;
}

/* point (absolute) under root, no component being a link of any kind and
 * none leaving root.  openat2 (5.6) does it in one call; before, one
 * component at a time. */
static int open_beneath(int root, const char *point)
{
	struct open_how how = {
		.flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC,
		.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_BENEATH | RESOLVE_NO_XDEV,
	};
	char part[SG_PATH_MAX + 1];
	const char *p = point;
	int fd, at;

	while (*p == '/')
		p++;
	if (!*p)
		return openat(root, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	/* RESOLVE_NO_XDEV would refuse the mount itself: cross into it plainly
	 * and check the mount after. */
	how.resolve &= ~(uint64_t)RESOLVE_NO_XDEV;
	fd = (int)syscall(SYS_openat2, root, p, &how, sizeof(how));
	if (fd >= 0 || errno != ENOSYS)
		return fd;
	at = root;
	fd = -1;
	while (*p) {
		size_t n = strcspn(p, "/");
		if (n >= sizeof(part) || (n == 2 && p[0] == '.' && p[1] == '.')) {
			errno = EINVAL;
			fd = -1;
			break;
		}
		memcpy(part, p, n);
		part[n] = '\0';
		fd = openat(at, part, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (at != root)
			close(at);
		if (fd < 0)
			break;
		at = fd;
		p += n;
		while (*p == '/')
			p++;
	}
	return fd;
}

/* The directory at e's mount point in pid's view, if it is e's mount. */
static int open_mount(const char *pid, const struct sg_mountinfo_entry *e, uint64_t *dir_ino)
{
	char path[64];
	struct statx stx;
	int root, fd;

	snprintf(path, sizeof(path), "/proc/%s/root", pid);
	root = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root < 0)
		return -1;
	fd = open_beneath(root, e->point);
	close(root);
	if (fd < 0)
		return -1;
	if (statx(fd, "", AT_EMPTY_PATH, STATX_INO | STATX_TYPE | STATX_MNT_ID, &stx) < 0 || !S_ISDIR(stx.stx_mode) ||
	    (stx.stx_dev_major << 20 | stx.stx_dev_minor) != e->kdev ||
	    ((stx.stx_mask & STATX_MNT_ID) && stx.stx_mnt_id != (uint64_t)e->mnt_id)) {
		/* Covered by a later mount at the same point, or changed since the
		 * line was read: not that mount. */
		close(fd);
		errno = ESTALE;
		return -1;
	}
	*dir_ino = stx.stx_ino;
	return fd;
}

static bool wanted(const struct sg_mountinfo_entry *e, const char *const *points, size_t npoints)
{
	if (strcmp(e->fstype, "tmpfs") != 0)
		return false;
	if (!npoints)
		return strcmp(e->point, "/dev/shm") == 0;
	for (size_t i = 0; i < npoints; i++)
		if (strcmp(e->point, points[i]) == 0)
			return true;
	return false;
}

static bool known(const struct sg_shm_mounts *ms, uint32_t kdev, uint64_t dir_ino)
{
	for (size_t i = 0; i < ms->n; i++)
		if (ms->m[i].kdev == kdev && ms->m[i].dir_ino == dir_ino)
			return true;
	return false;
}

static int add(struct sg_shm_mounts *ms, const struct sg_shm_mount *m)
{
	if (ms->n == ms->cap) {
		size_t c = ms->cap ? ms->cap * 2 : 16;
		struct sg_shm_mount *v = realloc(ms->m, c * sizeof(*v));
		if (!v)
			return -ENOMEM;
		ms->m = v;
		ms->cap = c;
	}
	ms->m[ms->n] = *m;
	snprintf(ms->m[ms->n].path, sizeof(ms->m[ms->n].path), "/proc/self/fd/%d", m->dfd);
	ms->n++;
	return 0;
}

/* A mountinfo line longer than this is no mount of interest (two paths
 * and the options): it is skipped, bounded reading of what a namespace's
 * owner chose. */
#define LINE_MAX_BYTES (3 * SG_PATH_MAX + 4096)

/* Whether errno says that a process went away while it was read. */
static bool gone(void)
{
	return errno == ENOENT || errno == ESRCH;
}

/* The shm mounts of pid's namespace: 0; 1 when pid went away before they
 * could be read (another process of the namespace may tell); -1 when
 * they cannot be read. */
static int scan_namespace(struct sg_shm_mounts *ms, const char *pid, uint64_t ns, bool own,
			  const char *const *points, size_t npoints)
{
	char path[64], *line = NULL;
	size_t cap = 0;
	ssize_t len;
	FILE *f;
	int r = 0;

	snprintf(path, sizeof(path), "/proc/%s/mountinfo", pid);
	f = fopen(path, "re");
	if (!f)
		return gone() ? 1 : -1;
	while ((len = getline(&line, &cap, f)) > 0) {
		struct sg_mountinfo_entry e;
		struct sg_shm_mount m = {.mntns = ns, .own_ns = own, .pid = (pid_t)atoi(pid)};

		if (len > LINE_MAX_BYTES)
			continue;
		if (line[len - 1] == '\n')
			line[len - 1] = '\0';
		if (sg_mountinfo_parse(line, &e) < 0 || !wanted(&e, points, npoints))
			continue;
		m.dfd = open_mount(pid, &e, &m.dir_ino);
		if (m.dfd < 0) {
			/* ESTALE: covered, or changed since the line was read. */
			if (errno == ESRCH || (errno == ENOENT && kill(m.pid, 0) < 0 && errno == ESRCH))
				r = r < 0 ? r : 1;
			else if (errno != ESTALE && errno != ENOENT)
				r = -1;
			continue;
		}
		m.kdev = e.kdev;
		snprintf(m.point, sizeof(m.point), "%s", e.point);
		if (known(ms, m.kdev, m.dir_ino) || add(ms, &m) < 0)
			close(m.dfd);
	}
	if (ferror(f))
		r = -1;
	free(line);
	fclose(f);
	return r;
}

static bool is_pid(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return false;
	return true;
}

/* Reads pid's namespace ns unless it was read: counted, and as unreadable
 * when it cannot be. */
static void visit(struct sg_shm_mounts *ms, struct ns_set *seen, const char *pid, uint64_t ns, uint64_t own,
		  const char *const *points, size_t npoints)
{
	int r;

	if (ns_set_has(seen, ns))
		return;
	r = scan_namespace(ms, pid, ns, ns == own, points, npoints);
	if (r == 1)
		return;
	ns_set_add(seen, ns);
	ms->namespaces++;
	if (r < 0 && !ms->unreadable++)
		ms->first_unreadable = (pid_t)atoi(pid);
}

int sg_shm_mounts_scan(struct sg_shm_mounts *ms, const char *const *points, size_t npoints)
{
	return sg_shm_mounts_scan_new(ms, points, npoints, NULL, 0);
}

int sg_shm_mounts_scan_new(struct sg_shm_mounts *ms, const char *const *points, size_t npoints,
			   const uint64_t *skip, size_t nskip)
{
	struct ns_set seen = {0};
	char self[24];
	uint64_t own;
	struct dirent *d;
	DIR *proc;

	memset(ms, 0, sizeof(*ms));
	/* Memory short: every namespace is read, which costs time, not truth. */
	if (nskip && (seen.v = malloc(nskip * sizeof(*seen.v)))) {
		memcpy(seen.v, skip, nskip * sizeof(*seen.v));
		seen.n = seen.cap = nskip;
	}
	snprintf(self, sizeof(self), "%d", (int)getpid());
	own = mount_ns_of(self);
	proc = opendir("/proc");
	if (!proc) {
		int e = errno;
		free(seen.v);
		return -e;
	}
	/* This process's namespace first, so that its own view wins. */
	if (own)
		visit(ms, &seen, self, own, own, points, npoints);
	while ((d = readdir(proc))) {
		uint64_t ns;

		if (!is_pid(d->d_name))
			continue;
		ns = mount_ns_of(d->d_name);
		if (ns)
			visit(ms, &seen, d->d_name, ns, own, points, npoints);
		else if (!gone() && !ms->unreadable++) /* gone meanwhile is no news; unreadable is */
			ms->first_unreadable = (pid_t)atoi(d->d_name);
	}
	closedir(proc);
	ms->read_ns = seen.v;
	ms->nread_ns = seen.n;
	return 0;
}

void sg_shm_mounts_free(struct sg_shm_mounts *ms)
{
	for (size_t i = 0; i < ms->n; i++)
		close(ms->m[i].dfd);
	free(ms->m);
	free(ms->read_ns);
	memset(ms, 0, sizeof(*ms));
}

int sg_shm_dir_of(pid_t pid, const char *point, uint32_t *kdev, uint64_t *ino)
{
	char path[48];
	struct stat st;
	int root, fd, ret = 0;

	snprintf(path, sizeof(path), "/proc/%d/root", (int)pid);
	if ((root = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
		return -errno;
	fd = open_beneath(root, point);
	if (fd < 0 || fstat(fd, &st) < 0)
		ret = -errno;
	close(root);
	if (fd >= 0)
		close(fd);
	if (ret == 0) {
		*kdev = sg_kdev(st.st_dev);
		*ino = st.st_ino;
	}
	return ret;
}
