#include "cgroup_ids.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A kernfs file handle: 8 bytes, the node's 64-bit id (the cgroup id). */
#define KERNFS_HANDLE_BYTES 8
#define FILEID_KERNFS 0xfe

union kernfs_handle {
	struct file_handle fh;
	char room[sizeof(struct file_handle) + KERNFS_HANDLE_BYTES];
};

static int cgroup2 = -1;
static int cgroup2_errno;
static bool looked;
/* The cgroup2 mount's path, to turn /proc/self/fd links into cgroup paths. */
static char mount_path[4096];

/* Field 5 (the mount point) of a mountinfo line whose filesystem type,
 * after " - ", is cgroup2.  Mount points are octal-escaped (\040): only
 * ones without escapes are taken. */
static bool cgroup2_line(const char *line, char *point, size_t len)
{
	const char *dash = strstr(line, " - ");
	char fs[32];
	int n = 0;

	if (!dash || sscanf(dash + 3, "%31s", fs) != 1 || strcmp(fs, "cgroup2") != 0)
		return false;
	if (sscanf(line, "%*s %*s %*s %*s %n", &n) < 0 || n <= 0)
		return false;
	const char *start = line + n, *end = strchr(start, ' ');
	if (!end || (size_t)(end - start) >= len || memchr(start, '\\', (size_t)(end - start)))
		return false;
	memcpy(point, start, (size_t)(end - start));
	point[end - start] = '\0';
	return true;
}

int sg_cgroup2_fd(void)
{
	char line[8192];
	FILE *f;

	if (looked)
		return cgroup2 >= 0 ? cgroup2 : -cgroup2_errno;
	looked = true;
	cgroup2_errno = ENOENT;
	if (!(f = fopen("/proc/self/mountinfo", "re"))) {
		cgroup2_errno = errno;
		return -cgroup2_errno;
	}
	while (cgroup2 < 0 && fgets(line, sizeof(line), f))
		if (cgroup2_line(line, mount_path, sizeof(mount_path)) &&
		    (cgroup2 = open(mount_path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
			cgroup2_errno = errno;
	fclose(f);
	return cgroup2 >= 0 ? cgroup2 : -cgroup2_errno;
}

/* An O_PATH descriptor of cgroup id, or a negative errno. */
static int open_id(uint64_t id)
{
	union kernfs_handle h = {.fh = {.handle_bytes = KERNFS_HANDLE_BYTES, .handle_type = FILEID_KERNFS}};
	int mnt = sg_cgroup2_fd();

	memcpy(h.fh.f_handle, &id, sizeof(id));

	int fd;

	if (mnt < 0)
		return mnt;
	if (!id)
		return -EINVAL;
	return (fd = open_by_handle_at(mnt, &h.fh, O_PATH | O_CLOEXEC)) >= 0 ? fd : -errno;
}

enum sg_cgroup_state sg_cgroup_state(uint64_t id)
{
	int fd = open_id(id);

	if (fd >= 0) {
		close(fd);
		return SG_CGROUP_ALIVE;
	}
	return fd == -ESTALE ? SG_CGROUP_GONE : SG_CGROUP_UNKNOWN;
}

int sg_cgroup_path(uint64_t id, char *buf, size_t len)
{
	char link[64], target[4096];
	int fd = open_id(id); /* finds the mount first */
	size_t mlen = strlen(mount_path);
	ssize_t n;

	if (fd < 0)
		return fd;
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, target, sizeof(target) - 1);
	if (n < 0)
		n = -errno;
	close(fd);
	if (n < 0)
		return (int)n;
	target[n] = '\0';
	/* The mount point itself, or a path below it. */
	if (strncmp(target, mount_path, mlen) != 0 || (target[mlen] != '/' && target[mlen] != '\0'))
		return -EXDEV;
	const char *rel = target[mlen] ? target + mlen : "/";
	if (strlen(rel) >= len)
		return -ENAMETOOLONG;
	strcpy(buf, rel);
	return 0;
}

uint64_t sg_cgroup_id_of(const char *path)
{
	union kernfs_handle h = {.fh = {.handle_bytes = KERNFS_HANDLE_BYTES}};
	int mnt = sg_cgroup2_fd(), mount_id;
	uint64_t id;

	if (mnt < 0)
		return 0;
	while (*path == '/')
		path++;
	if (name_to_handle_at(mnt, *path ? path : ".", &h.fh, &mount_id, 0) < 0 ||
	    h.fh.handle_bytes != KERNFS_HANDLE_BYTES)
		return 0;
	memcpy(&id, h.fh.f_handle, sizeof(id));
	return id;
}
