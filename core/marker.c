#include "core.h"
#include "marker.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "reqid.h"
#include "sys.h"

/* -EACCES with *why, or 0. */
static int refuse(const char **why, const char *reason)
{
	*why = reason;
	return -EACCES;
}

int sg_abort_dir_check(const struct stat *dir, uid_t euid, const char **why)
{
	*why = NULL;
	if (!S_ISDIR(dir->st_mode))
		return refuse(why, "is not a directory");
	if (dir->st_uid != euid && dir->st_uid != 0)
		return refuse(why, "belongs to another user");
	if ((dir->st_mode & S_IWOTH) && !(dir->st_mode & S_ISVTX))
		return refuse(why, "is world-writable without the sticky bit");
	return 0;
}

const char *sg_abort_dir_remedy(const struct stat *dir, uid_t euid)
{
	if (S_ISDIR(dir->st_mode) && (dir->st_uid == euid || dir->st_uid == 0))
		return "chmod +t or chmod o-w";
	return "remove it, or choose a directory in a place only you or root can write to";
}

/* Whether dfd lists nothing but "." and "..": a directory just made. */
static bool dir_empty(int dfd)
{
	union {
		struct dirent64 first;
		char bytes[4 * sizeof(struct dirent64)];
	} buf;
	bool empty = true;
	ssize_t n;

	while (empty && (n = getdents64(dfd, buf.bytes, sizeof(buf.bytes))) > 0)
		for (ssize_t off = 0; empty && off < n;) {
			struct dirent64 *e = (struct dirent64 *)(buf.bytes + off);

			empty = strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0;
			off += e->d_reclen;
		}
	lseek(dfd, 0, SEEK_SET);
	return empty;
}

int sg_abort_dir_open(const char *path, bool create)
{
	bool made = create && mkdir(path, 0755) == 0;
	int fd = sg_sys_openat(AT_FDCWD, path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC), err;
	struct stat st;

	if (fd < 0) {
		err = errno;
		/* With O_DIRECTORY a symlink fails as ENOTDIR: say what it is. */
		return err == ENOTDIR && lstat(path, &st) == 0 && S_ISLNK(st.st_mode) ? -ELOOP : -err;
	}
	/* Stamped only if what was opened is the empty directory of ours just
	 * made, not one swapped in for it since. */
	if (made && fstat(fd, &st) == 0 && st.st_uid == geteuid() && dir_empty(fd))
		(void)mknodat(fd, SG_ABORT_DIR_STAMP, S_IFREG | 0444, 0);
	return fd;
}

int sg_abort_dir_open_trusted(const char *path, bool create, uid_t euid, struct stat *dir, const char **why)
{
	int fd = sg_abort_dir_open(path, create), ret = fd;

	*why = NULL;
	if (fd < 0)
		return fd;
	if (fstat(fd, dir) < 0)
		ret = -errno;
	else if (sg_abort_dir_check(dir, euid, why) < 0)
		ret = -EACCES;
	if (ret < 0)
		sg_sys_close(fd);
	return ret;
}

int sg_marker_file_check(const struct stat *st, uid_t euid, const char **why)
{
	*why = NULL;
	if (!S_ISREG(st->st_mode))
		return refuse(why, "not a regular file");
	if (st->st_uid != euid && st->st_uid != 0)
		return refuse(why, "foreign owner");
	if (st->st_nlink != 1)
		return refuse(why, "more than one link (a hard link may name any file)");
	return 0;
}

int sg_marker_check(int dfd, const char *name, uid_t euid, struct stat *st, const char **why)
{
	const char *dir_why;
	int ret;

	memset(st, 0, sizeof(*st));
	*why = NULL;
	if (sg_reqid_invalid(name) || strcmp(name, SG_ABORT_DIR_STAMP) == 0) {
		*why = "not a request ID";
		return -EINVAL;
	}
	if (fstat(dfd, st) < 0) {
		ret = -errno;
		*why = "its directory cannot be examined";
	} else if (sg_abort_dir_check(st, euid, &dir_why) < 0) {
		ret = refuse(why, "its directory is not trusted");
	} else if (fstatat(dfd, name, st, AT_SYMLINK_NOFOLLOW) < 0 || st->st_nlink == 0) {
		ret = -ENOENT;
		*why = "gone"; /* no link left: unlinked between the lookup and the stat */
	} else {
		return sg_marker_file_check(st, euid, why);
	}
	memset(st, 0, sizeof(*st));
	return ret;
}

bool sg_abort_dir_stamped(int dfd, uid_t euid)
{
	struct stat st;

	const char *why;

	return fstatat(dfd, SG_ABORT_DIR_STAMP, &st, AT_SYMLINK_NOFOLLOW) == 0 && sg_marker_file_check(&st, euid, &why) == 0;
}

unsigned sg_markers_expire(int dfd, unsigned ttl)
{
	time_t now = time(NULL);
	uid_t euid = geteuid();
	unsigned removed = 0;
	const char *why;
	struct stat dir;
	struct dirent *e;
	int fd;
	DIR *d;

	if (fstat(dfd, &dir) < 0 || sg_abort_dir_check(&dir, euid, &why) < 0 || !sg_abort_dir_stamped(dfd, euid))
		return 0;
	/* A descriptor of its own for readdir ("." of dfd: no path is followed). */
	fd = sg_sys_openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	d = fdopendir(fd);
	if (!d) {
		sg_sys_close(fd);
		return 0;
	}
	while ((e = readdir(d))) {
		struct stat st;

		if (sg_marker_check(dfd, e->d_name, euid, &st, &why) == 0 && now - st.st_mtime > (time_t)ttl &&
		    sg_sys_unlinkat(dfd, e->d_name, 0) == 0)
			removed++;
	}
	closedir(d);
	return removed;
}
