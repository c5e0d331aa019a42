#include "roots.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "real.h"
#include "state.h"

/* Each root's directory as stat(2) names it, learnt on first need (a root
 * made after the process started is learnt once it exists).  Atomics: two
 * threads may learn a root at once; they store the same values. */
static struct {
	dev_t dev;
	ino_t ino;
	bool known;
} root_ids[SG_MAX_ROOTS];

/* statx asked for the inode alone costs a creation about half of what
 * fstat does on tmpfs (which fills every field); fstatat remains for
 * kernels or sandboxes without statx. */
int sg_identify(int dirfd, const char *path, int flags, dev_t *dev, ino_t *ino, mode_t *mode)
{
	struct statx stx;
	struct stat st;
	unsigned mask = STATX_INO | (mode ? STATX_TYPE : 0);

	if (statx(dirfd, path, flags, mask, &stx) == 0 && (stx.stx_mask & mask) == mask) {
		*dev = makedev(stx.stx_dev_major, stx.stx_dev_minor);
		*ino = stx.stx_ino;
		if (mode)
			*mode = stx.stx_mode;
		return 0;
	}
	if (fstatat(dirfd, path, &st, flags) < 0)
		return -errno;
	*dev = st.st_dev;
	*ino = st.st_ino;
	if (mode)
		*mode = st.st_mode;
	return 0;
}

/* Whether root k is known to be dev and ino; learnt from what dirfd and path
 * name if it is not known yet. */
static bool root_is(unsigned k, int dirfd, const char *path, int flags, dev_t dev, ino_t ino)
{
	if (!__atomic_load_n(&root_ids[k].known, __ATOMIC_ACQUIRE)) {
		dev_t rdev;
		ino_t rino;
		if (sg_identify(dirfd, path, flags, &rdev, &rino, NULL) < 0)
			return false;
		__atomic_store_n(&root_ids[k].dev, rdev, __ATOMIC_RELAXED);
		__atomic_store_n(&root_ids[k].ino, rino, __ATOMIC_RELAXED);
		__atomic_store_n(&root_ids[k].known, true, __ATOMIC_RELEASE);
	}
	return __atomic_load_n(&root_ids[k].dev, __ATOMIC_RELAXED) == dev &&
	       __atomic_load_n(&root_ids[k].ino, __ATOMIC_RELAXED) == ino;
}

static bool is_root(unsigned k, dev_t dev, ino_t ino)
{
	return root_is(k, AT_FDCWD, sg_cfg.roots.dir[k], 0, dev, ino);
}

/* Each root's directory, open in the watcher's descriptor table (the
 * descriptor plus one: 0 is none), and where to put a new one there.  Only
 * the watcher reads or writes these. */
static int root_fd1[SG_MAX_ROOTS];
static int (*root_fd_place)(int fd);

/* Opens root k once (by its path, the one time), checked to be the
 * directory it is known as: from then on it is reached only through its
 * descriptor. */
static int root_fd(unsigned k)
{
	dev_t dev;
	ino_t ino;
	int fd;

	if (root_fd1[k])
		return root_fd1[k] - 1;
	fd = sg_real.openat(AT_FDCWD, sg_cfg.roots.dir[k], O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (sg_identify(fd, "", AT_EMPTY_PATH, &dev, &ino, NULL) < 0 ||
	    !root_is(k, fd, "", AT_EMPTY_PATH, dev, ino)) {
		sg_real.close(fd);
		return -1;
	}
	fd = root_fd_place(fd);
	root_fd1[k] = fd + 1;
	return fd;
}

void sg_roots_open(int (*place)(int fd))
{
	root_fd_place = place;
	for (unsigned k = 0; k < sg_cfg.roots.n; k++)
		(void)root_fd(k);
}

void sg_roots_forget(void)
{
	memset(root_fd1, 0, sizeof(root_fd1));
}

int sg_root_file(const char *path, const char **name)
{
	if (root_fd_place && sg_watcher_thread) {
		for (unsigned k = 0; k < sg_cfg.roots.n; k++) {
			size_t len = sg_cfg.roots.len[k];

			if (memcmp(path, sg_cfg.roots.dir[k], len) == 0 && path[len] == '/') {
				*name = path + len + 1;
				return root_fd(k);
			}
		}
	}
	*name = path;
	return AT_FDCWD;
}

/* The last component of path, if it can name a file. */
static const char *file_name(const char *path, const char **slash)
{
	const char *name;
	size_t len;

	*slash = strrchr(path, '/');
	name = *slash ? *slash + 1 : path;
	len = strlen(name);
	if (!len || len > NAME_MAX || (name[0] == '.' && (len == 1 || (len == 2 && name[1] == '.'))))
		return NULL;
	return name;
}

const char *sg_file_name(const char *path)
{
	const char *slash;

	return file_name(path, &slash);
}

/* The root whose path is exactly the first len bytes of dir, or -1. */
static int root_spelled(const char *dir, size_t len)
{
	for (unsigned k = 0; k < sg_cfg.roots.n; k++)
		if (sg_cfg.roots.len[k] == len && memcmp(sg_cfg.roots.dir[k], dir, len) == 0)
			return (int)k;
	return -1;
}

unsigned sg_root_at(const char *path, size_t name_off)
{
	int k = name_off ? root_spelled(path, name_off - 1) : -1;

	return k < 0 ? SG_MAX_ROOTS : (unsigned)k;
}

size_t sg_root_spelled(const char *path)
{
	const char *slash;
	int k = file_name(path, &slash) && slash ? root_spelled(path, (size_t)(slash - path)) : -1;

	return k < 0 ? 0 : sg_cfg.roots.len[k] + 1;
}

const char *sg_root_path(int dirfd, const char *path, char canon[static SG_ROOT_PATH_MAX], size_t *name_off)
{
	const char *slash, *name = file_name(path, &slash);
	char dir[PATH_MAX];
	dev_t dev;
	ino_t ino;

	if (!name)
		return NULL;
	if (slash && root_spelled(path, (size_t)(slash - path)) >= 0) {
		*name_off = (size_t)(slash - path) + 1;
		return path;
	}
	if (!slash) {
		strcpy(dir, ".");
	} else {
		size_t len = (size_t)(slash - path);
		if (len >= sizeof(dir))
			return NULL;
		memcpy(dir, path, len);
		dir[len] = '\0';
		if (!len)
			strcpy(dir, "/");
	}
	/* "/dev/shm/../../tmp", a symlink to /dev/shm, a bind mount of it:
	 * the directory the kernel will create the entry in. */
	if (sg_identify(dirfd, dir, 0, &dev, &ino, NULL) < 0)
		return NULL;
	for (unsigned k = 0; k < sg_cfg.roots.n; k++) {
		if (is_root(k, dev, ino)) {
			size_t len = sg_cfg.roots.len[k];
			memcpy(canon, sg_cfg.roots.dir[k], len);
			canon[len] = '/';
			strcpy(canon + len + 1, name);
			*name_off = len + 1;
			return canon;
		}
	}
	return NULL;
}
