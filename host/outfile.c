/* The one way the command writes a file: a new file beside the target,
 * renamed into place (outfile.h). */
#include "outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

/* Names tried before giving up: each is 64 random bits, so a second one is
 * only needed when someone plants names, and a tenth never. */
#define TMP_TRIES 10

/* The reason in err; returns -e. */
static int fail(int e, char *err, size_t errlen, const char *fmt, const char *what)
{
	snprintf(err, errlen, fmt, what);
	return -e;
}

/* Whether the target may be replaced: absent, or a regular file. */
static int check_target(int dirfd, const char *name, char *err, size_t errlen)
{
	struct stat st;

	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : fail(errno, err, errlen, "%s", strerror(errno));
	if (S_ISREG(st.st_mode))
		return 0;
	return fail(EEXIST, err, errlen, "it exists and is %s, not a regular file: not replaced",
		    S_ISLNK(st.st_mode)    ? "a symbolic link"
		    : S_ISFIFO(st.st_mode) ? "a FIFO"
		    : S_ISDIR(st.st_mode)  ? "a directory"
					   : "a device or socket");
}

int sg_open_new_random(int dirfd, const char *stem, char *name, size_t len, mode_t mode)
{
	for (int i = 0; i < TMP_TRIES; i++) {
		unsigned long long r;
		int fd;

		if (getrandom(&r, sizeof(r), 0) != sizeof(r))
			return -errno;
		if (snprintf(name, len, "%s%016llx", stem, r) >= (int)len)
			return -ENAMETOOLONG;
		fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, mode);
		if (fd >= 0 || errno != EEXIST)
			return fd >= 0 ? fd : -errno;
	}
	return -EEXIST;
}

int sg_outfile_open_at(struct sg_outfile *f, int dirfd, const char *name, mode_t mode, int flags, char *err,
		       size_t errlen)
{
	int ret;

	(void)flags;
	f->fd = -1;
	f->dirfd = dirfd;
	f->to_stdout = f->owns_dir = false;
	f->tmp[0] = '\0';
	if (!*name || strchr(name, '/') || strcmp(name, ".") == 0 || strcmp(name, "..") == 0 ||
	    snprintf(f->name, sizeof(f->name), "%s", name) >= (int)sizeof(f->name)) {
		return fail(EINVAL, err, errlen, "%s", "not a file name");
	}
	if ((ret = check_target(dirfd, name, err, errlen)) < 0)
		return ret;
	/* Hidden, and not *.prom: a textfile collector never reads it. */
	f->fd = sg_open_new_random(dirfd, ".shmguard-new-", f->tmp, sizeof(f->tmp), mode);
	if (f->fd < 0) {
		f->tmp[0] = '\0';
		ret = f->fd;
		f->fd = -1;
		if (ret == -EEXIST)
			return fail(EEXIST, err, errlen, "%s",
				    "cannot create a file in its directory: every name tried was taken");
		return fail(-ret, err, errlen, "cannot create a file in its directory: %s", strerror(-ret));
	}
	/* The mode asked for, whatever the umask: a collector must read it. */
	if (fchmod(f->fd, mode) < 0) {
		ret = fail(errno, err, errlen, "cannot set its mode: %s", strerror(errno));
		sg_outfile_discard(f);
		return ret;
	}
	return 0;
}

int sg_outfile_open(struct sg_outfile *f, const char *path, mode_t mode, int flags, char *err, size_t errlen)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(path, '/'), *name = slash ? slash + 1 : path;
	int dirfd, ret;

	f->fd = f->dirfd = -1;
	f->tmp[0] = '\0';
	f->to_stdout = f->owns_dir = false;
	if ((flags & SG_OUTFILE_STDOUT) && strcmp(path, "-") == 0) {
		f->fd = STDOUT_FILENO;
		f->to_stdout = true;
		return 0;
	}
	if (!*name) {
		return fail(EISDIR, err, errlen, "%s", "it names a directory, not a file");
	}
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == path)
		snprintf(dir, sizeof(dir), "/");
	else if ((size_t)(slash - path) >= sizeof(dir)) {
		return fail(ENAMETOOLONG, err, errlen, "%s", strerror(ENAMETOOLONG));
	} else {
		memcpy(dir, path, (size_t)(slash - path));
		dir[slash - path] = '\0';
	}
	dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dirfd < 0) {
		struct stat st;
		int e = errno;
		/* With O_DIRECTORY a symbolic link fails as ENOTDIR. */
		bool link = e == ELOOP || (e == ENOTDIR && lstat(dir, &st) == 0 && S_ISLNK(st.st_mode));
		return fail(link ? ELOOP : e, err, errlen, link ? "its directory is a symbolic link" : "its directory: %s",
			    strerror(e));
	}
	if ((ret = sg_outfile_open_at(f, dirfd, name, mode, flags, err, errlen)) < 0) {
		close(dirfd);
		f->dirfd = -1;
		return ret;
	}
	f->owns_dir = true;
	return 0;
}

int sg_outfile_commit(struct sg_outfile *f, int flags, char *err, size_t errlen)
{
	int ret;

	if (f->to_stdout) {
		f->fd = -1;
		return 0;
	}
	if (f->fd < 0)
		return fail(EBADF, err, errlen, "%s", "not open");
	if ((flags & SG_OUTFILE_FSYNC) && fsync(f->fd) < 0) {
		ret = fail(errno, err, errlen, "cannot write it: %s", strerror(errno));
		goto cleanup;
	}
	if (close(f->fd) < 0) {
		f->fd = -1;
		ret = fail(errno, err, errlen, "cannot write it: %s", strerror(errno));
		goto cleanup;
	}
	f->fd = -1;
	/* Checked again for the reason only: rename replaces a symbolic link
	 * or file planted meanwhile, and never writes through it. */
	if ((ret = check_target(f->dirfd, f->name, err, errlen)) < 0)
		goto cleanup;
	if (renameat(f->dirfd, f->tmp, f->dirfd, f->name) < 0) {
		ret = fail(errno, err, errlen, "cannot put it in place: %s", strerror(errno));
		goto cleanup;
	}
	f->tmp[0] = '\0';
	ret = 0;
cleanup:
	sg_outfile_discard(f);
	return ret;
}

void sg_outfile_discard(struct sg_outfile *f)
{
	int saved = errno;

	if (f->to_stdout) {
		f->fd = -1;
		return;
	}
	if (f->tmp[0] && f->dirfd >= 0)
		unlinkat(f->dirfd, f->tmp, 0);
	f->tmp[0] = '\0';
	if (f->fd >= 0)
		close(f->fd);
	f->fd = -1;
	/* A caller's directory (sg_outfile_open_at) stays open. */
	if (f->owns_dir && f->dirfd >= 0)
		close(f->dirfd);
	f->dirfd = -1;
	f->owns_dir = false;
	errno = saved;
}

int sg_outfile_replace(const char *path, const void *data, size_t len, mode_t mode, int flags, char *err,
		       size_t errlen)
{
	struct sg_outfile f;
	int ret;

	if ((ret = sg_outfile_open(&f, path, mode, flags & ~SG_OUTFILE_STDOUT, err, errlen)) < 0)
		return ret;
	for (size_t done = 0; done < len;) {
		ssize_t n = write(f.fd, (const char *)data + done, len - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			ret = fail(n < 0 ? errno : EIO, err, errlen, "cannot write it: %s", strerror(n < 0 ? errno : EIO));
			sg_outfile_discard(&f);
			return ret;
		}
		done += (size_t)n;
	}
	return sg_outfile_commit(&f, flags, err, errlen);
}

int sg_outfile_append(const char *path, char *err, size_t errlen)
{
	/* O_NONBLOCK: opening a FIFO to write would wait for a reader. */
	int fd = open(path, O_WRONLY | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	struct stat st;
	int ret;

	if (fd < 0 && errno == ENOENT)
		fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0644);
	if (fd < 0)
		return fail(errno, err, errlen, errno == ELOOP ? "it is a symbolic link: not written" : "%s",
			    strerror(errno));
	if (fstat(fd, &st) < 0) {
		ret = fail(errno, err, errlen, "%s", strerror(errno));
		close(fd);
		return ret;
	}
	if (!S_ISREG(st.st_mode) || st.st_nlink != 1) {
		close(fd);
		return fail(EEXIST, err, errlen, "%s", S_ISREG(st.st_mode) ? "it has other hard links: not written"
								     : "it is not a regular file: not written");
	}
	if (fcntl(fd, F_SETFL, O_WRONLY | O_APPEND) < 0) {
		ret = fail(errno, err, errlen, "%s", strerror(errno));
		close(fd);
		return ret;
	}
	return fd;
}
