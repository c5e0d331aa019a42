/* The functions libshmguard.so exports: libc's file functions that can
 * create, name, unlink or map a segment (and close, to know an fd's end),
 * and shmguard_set_request().  Each takes a fast path to the real function
 * unless the call can create, name or unlink a file under a shm root, or
 * map one this process created.  Every wrapper leaves errno as the real
 * call leaves it. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mappings.h"
#include "real.h"
#include "registry.h"
#include "reqid.h"
#include "roots.h"
#include "state.h"
#include "shmguard.h"
#include "track.h"

enum entry { OPEN, OPEN64, OPENAT, OPENAT64, OPEN_2, OPEN64_2, OPENAT_2, OPENAT64_2, CREAT, CREAT64 };

#define CREAT_FLAGS (O_CREAT | O_WRONLY | O_TRUNC)
/* As glibc's __OPEN_NEEDS_MODE: only then was a mode passed. */
#define NEEDS_MODE(flags) (((flags)&O_CREAT) || ((flags)&__O_TMPFILE) == __O_TMPFILE)
/* O_PATH makes the kernel ignore O_CREAT. */
#define CREATES(flags) (((flags) & (O_CREAT | O_PATH)) == O_CREAT)

/* The program's call, made with flags (which the slow path may change). */
static int call_open(const struct sg_call *c, int flags)
{
	switch ((enum entry)c->which) {
	case OPEN:
		return sg_real.open(c->path, flags, c->mode);
	case OPEN64:
		return sg_real.open64(c->path, flags, c->mode);
	case OPENAT:
		return sg_real.openat(c->dirfd, c->path, flags, c->mode);
	case OPENAT64:
		return sg_real.openat64(c->dirfd, c->path, flags, c->mode);
	/* The fortified entries have no mode: with O_CREAT they abort, as
	 * the program's own call would have. */
	case OPEN_2:
		return sg_real.open_2 ? sg_real.open_2(c->path, flags) : sg_real.open(c->path, flags);
	case OPEN64_2:
		return sg_real.open64_2 ? sg_real.open64_2(c->path, flags) : sg_real.open64(c->path, flags);
	case OPENAT_2:
		return sg_real.openat_2 ? sg_real.openat_2(c->dirfd, c->path, flags)
					: sg_real.openat(c->dirfd, c->path, flags);
	case OPENAT64_2:
		return sg_real.openat64_2 ? sg_real.openat64_2(c->dirfd, c->path, flags)
					  : sg_real.openat64(c->dirfd, c->path, flags);
	case CREAT:
		return flags == CREAT_FLAGS ? sg_real.creat(c->path, c->mode) : sg_real.open(c->path, flags, c->mode);
	case CREAT64:
		return flags == CREAT_FLAGS ? sg_real.creat64(c->path, c->mode)
					    : sg_real.open64(c->path, flags, c->mode);
	}
	errno = EINVAL;
	return -1;
}

static int open_common(enum entry which, int dirfd, const char *path, int flags, mode_t mode)
{
	struct sg_call c = {.open = call_open, .dirfd = dirfd, .path = path, .mode = mode, .which = which};

	sg_real_ensure();
	if (!CREATES(flags) || !path)
		return call_open(&c, flags);
	return sg_create(&c, flags, dirfd, path, 0);
}

#define VA_MODE(flags, mode)                                                                                      \
	do {                                                                                                       \
		if (NEEDS_MODE(flags)) {                                                                           \
			va_list ap;                                                                                \
			va_start(ap, flags);                                                                       \
			mode = va_arg(ap, mode_t);                                                                 \
			va_end(ap);                                                                                \
		}                                                                                                  \
	} while (0)

SG_EXPORT int open(const char *path, int flags, ...)
{
	mode_t mode = 0;

	VA_MODE(flags, mode);
	return open_common(OPEN, AT_FDCWD, path, flags, mode);
}

SG_EXPORT int open64(const char *path, int flags, ...)
{
	mode_t mode = 0;

	VA_MODE(flags, mode);
	return open_common(OPEN64, AT_FDCWD, path, flags, mode);
}

SG_EXPORT int openat(int dirfd, const char *path, int flags, ...)
{
	mode_t mode = 0;

	VA_MODE(flags, mode);
	return open_common(OPENAT, dirfd, path, flags, mode);
}

SG_EXPORT int openat64(int dirfd, const char *path, int flags, ...)
{
	mode_t mode = 0;

	VA_MODE(flags, mode);
	return open_common(OPENAT64, dirfd, path, flags, mode);
}

SG_EXPORT int __open_2(const char *path, int flags)
{
	return open_common(OPEN_2, AT_FDCWD, path, flags, 0);
}

SG_EXPORT int __open64_2(const char *path, int flags)
{
	return open_common(OPEN64_2, AT_FDCWD, path, flags, 0);
}

SG_EXPORT int __openat_2(int dirfd, const char *path, int flags)
{
	return open_common(OPENAT_2, dirfd, path, flags, 0);
}

SG_EXPORT int __openat64_2(int dirfd, const char *path, int flags)
{
	return open_common(OPENAT64_2, dirfd, path, flags, 0);
}

SG_EXPORT int creat(const char *path, mode_t mode)
{
	return open_common(CREAT, AT_FDCWD, path, CREAT_FLAGS, mode);
}

SG_EXPORT int creat64(const char *path, mode_t mode)
{
	return open_common(CREAT64, AT_FDCWD, path, CREAT_FLAGS, mode);
}

static int call_shm_open(const struct sg_call *c, int flags)
{
	return sg_real.shm_open(c->path, flags, c->mode);
}

/* glibc's shm_open and sem_open open /dev/shm/NAME and /dev/shm/sem.NAME
 * without going through open().  Their path is spelled root/name: /dev/shm
 * is always the first root.  Returns the offset of the name, or 0 when the
 * real call rejects the name or it cannot be a file's. */
#define SHM_PATH_MAX (sizeof(SG_DEFAULT_ROOT) + NAME_MAX + 1)

static inline size_t shm_path(const char *name, const char *kind, char path[static SHM_PATH_MAX])
{
	size_t len, klen = strlen(kind);

	while (*name == '/')
		name++;
	len = strlen(name);
	if (!len || klen + len > NAME_MAX || memchr(name, '/', len) ||
	    (!klen && name[0] == '.' && (len == 1 || (len == 2 && name[1] == '.'))))
		return 0;
	memcpy(path, SG_DEFAULT_ROOT "/", sizeof(SG_DEFAULT_ROOT));
	memcpy(path + sizeof(SG_DEFAULT_ROOT), kind, klen);
	memcpy(path + sizeof(SG_DEFAULT_ROOT) + klen, name, len + 1);
	return sizeof(SG_DEFAULT_ROOT);
}

SG_EXPORT int shm_open(const char *name, int flags, mode_t mode)
{
	struct sg_call c = {.open = call_shm_open, .dirfd = AT_FDCWD, .path = name, .mode = mode};
	char path[SHM_PATH_MAX];
	size_t name_off;

	sg_real_ensure();
	if (!CREATES(flags) || !(name_off = shm_path(name, "", path)))
		return call_shm_open(&c, flags);
	return sg_create(&c, flags, AT_FDCWD, path, name_off);
}

SG_EXPORT sem_t *sem_open(const char *name, int oflag, ...)
{
	char path[SHM_PATH_MAX];
	unsigned value = 0;
	size_t name_off;
	mode_t mode = 0;

	if (oflag & O_CREAT) {
		va_list ap;
		va_start(ap, oflag);
		mode = va_arg(ap, mode_t);
		value = va_arg(ap, unsigned);
		va_end(ap);
	}
	sg_real_ensure();
	if (!(oflag & O_CREAT) || !(name_off = shm_path(name, "sem.", path)))
		return sg_real.sem_open(name, oflag, mode, value);
	return sg_sem_create(name, oflag, mode, value, path, name_off);
}

/* The program unlinked a name itself (a consumer in this process): the
 * record goes, so that a later sweep cannot touch a file of that name.
 * Records are keyed by the spelling root/name, and only that spelling is
 * looked up, to keep unlink free of system calls: under another, the
 * record stays until the watcher's pruning finds the name gone (a sweep
 * before that finds it gone too, or another inode). */
static void forget(const char *path, size_t name_off)
{
	if (sg_enter()) {
		int saved = errno;
		sg_registry_forget_path(path, name_off);
		errno = saved;
		sg_leave();
	}
}

static void forget_spelled(const char *path)
{
	size_t name_off;

	if (sg_registry_count() && path && (name_off = sg_root_spelled(path)))
		forget(path, name_off);
}

SG_EXPORT int shm_unlink(const char *name)
{
	char path[SHM_PATH_MAX];
	size_t name_off;
	int ret;

	sg_real_ensure();
	ret = sg_real.shm_unlink(name);
	if (ret == 0 && sg_registry_count() && (name_off = shm_path(name, "", path)))
		forget(path, name_off);
	return ret;
}

SG_EXPORT int sem_unlink(const char *name)
{
	char path[SHM_PATH_MAX];
	size_t name_off;
	int ret;

	sg_real_ensure();
	ret = sg_real.sem_unlink(name);
	if (ret == 0 && sg_registry_count() && (name_off = shm_path(name, "sem.", path)))
		forget(path, name_off);
	return ret;
}

SG_EXPORT int unlink(const char *path)
{
	int ret;

	sg_real_ensure();
	ret = sg_real.unlink(path);
	if (ret == 0)
		forget_spelled(path);
	return ret;
}

SG_EXPORT int unlinkat(int dirfd, const char *path, int flags)
{
	int ret;

	sg_real_ensure();
	ret = sg_real.unlinkat(dirfd, path, flags);
	if (ret == 0)
		forget_spelled(path);
	return ret;
}

enum move_entry { RENAME, RENAMEAT, RENAMEAT2, LINK, LINKAT };

/* A rename or link as the program made it. */
struct move {
	enum move_entry which;
	int olddirfd, newdirfd;
	const char *old, *new;
	unsigned flags;
};

static int call_move(const struct move *m)
{
	switch (m->which) {
	case RENAME:
		return sg_real.rename(m->old, m->new);
	case RENAMEAT:
		return sg_real.renameat(m->olddirfd, m->old, m->newdirfd, m->new);
	case RENAMEAT2:
		if (sg_real.renameat2)
			return sg_real.renameat2(m->olddirfd, m->old, m->newdirfd, m->new, m->flags);
		errno = ENOSYS;
		return -1;
	case LINK:
		return sg_real.link(m->old, m->new);
	case LINKAT:
		return sg_real.linkat(m->olddirfd, m->old, m->newdirfd, m->new, (int)m->flags);
	}
	errno = EINVAL;
	return -1;
}

/* How the old name is looked up: as the call itself will. */
static int source_flags(const struct move *m)
{
	if (m->which == LINKAT)
		return (m->flags & AT_SYMLINK_FOLLOW ? 0 : AT_SYMLINK_NOFOLLOW) | (int)(m->flags & AT_EMPTY_PATH);
	return AT_SYMLINK_NOFOLLOW;
}

/* The file that dirfd and path name, looked up with flags. */
static struct sg_source source(int dirfd, const char *path, int flags)
{
	struct sg_source src = {.regular = false};
	mode_t mode;

	src.regular = sg_identify(dirfd, path, flags, &src.dev, &src.ino, &mode) == 0 && S_ISREG(mode);
	return src;
}

/* Ownership follows the name: a name that a rename or link makes in a shm
 * root is a creation by this process, and a record follows its file when it
 * is renamed.  Only the directories are looked at before the call, and the
 * file that will arrive in a root. */
static int move_common(const struct move *m)
{
	char from_buf[SG_ROOT_PATH_MAX], to_buf[SG_ROOT_PATH_MAX];
	struct sg_source src = {.regular = false}, back = {.regular = false};
	bool link = m->which == LINK || m->which == LINKAT;
	bool exchange = !link && (m->flags & RENAME_EXCHANGE);
	const char *from = NULL, *to;
	int ret, saved = errno;
	bool records;
	size_t off;

	sg_real_ensure();
	if (!m->old || !m->new || !sg_enter())
		return call_move(m);
	if (!sg_active()) {
		sg_leave();
		return call_move(m);
	}
	/* Records matter only if there are any; else only a name that could
	 * be attributed.  The old name matters to a rename with records (they
	 * follow their file) and to an exchange (a file arrives there too). */
	records = sg_registry_count() != 0;
	to = sg_locate(m->newdirfd, m->new, to_buf, records, &off);
	if (!link && (records || exchange))
		from = sg_locate(m->olddirfd, m->old, from_buf, records, &off);
	if (to)
		src = source(m->olddirfd, m->old, source_flags(m));
	if (from && exchange)
		back = source(m->newdirfd, m->new, AT_SYMLINK_NOFOLLOW);
	sg_leave();
	errno = saved;
	ret = call_move(m);
	if (ret == 0 && (to || from) && sg_enter()) {
		if (link)
			sg_linked(to, &src);
		else
			sg_renamed(from, to, &src, exchange ? &back : NULL);
		errno = saved;
		sg_leave();
	}
	return ret;
}

SG_EXPORT int rename(const char *old, const char *new)
{
	return move_common(&(struct move){RENAME, AT_FDCWD, AT_FDCWD, old, new, 0});
}

SG_EXPORT int renameat(int olddirfd, const char *old, int newdirfd, const char *new)
{
	return move_common(&(struct move){RENAMEAT, olddirfd, newdirfd, old, new, 0});
}

SG_EXPORT int renameat2(int olddirfd, const char *old, int newdirfd, const char *new, unsigned flags)
{
	return move_common(&(struct move){RENAMEAT2, olddirfd, newdirfd, old, new, flags});
}

SG_EXPORT int link(const char *old, const char *new)
{
	return move_common(&(struct move){LINK, AT_FDCWD, AT_FDCWD, old, new, 0});
}

SG_EXPORT int linkat(int olddirfd, const char *old, int newdirfd, const char *new, int flags)
{
	return move_common(&(struct move){LINKAT, olddirfd, newdirfd, old, new, (unsigned)flags});
}

static void *after_mmap(void *addr, size_t len, int flags, int fd)
{
	if (addr != MAP_FAILED && (fd >= 0 || ((flags & MAP_FIXED) && sg_mappings_any())) && sg_enter()) {
		int saved = errno;
		sg_mappings_on_mmap(addr, len, fd, flags);
		errno = saved;
		sg_leave();
	}
	return addr;
}

SG_EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	sg_real_ensure();
	return after_mmap(sg_real.mmap(addr, len, prot, flags, fd, off), len, flags, fd);
}

SG_EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off64_t off)
{
	sg_real_ensure();
	return after_mmap(sg_real.mmap64(addr, len, prot, flags, fd, off), len, flags, fd);
}

SG_EXPORT int munmap(void *addr, size_t len)
{
	int ret;

	sg_real_ensure();
	ret = sg_real.munmap(addr, len);
	if (ret == 0 && sg_mappings_any() && sg_enter()) {
		int saved = errno;
		sg_mappings_on_munmap(addr, len);
		errno = saved;
		sg_leave();
	}
	return ret;
}

SG_EXPORT int close(int fd)
{
	sg_real_ensure();
	sg_mappings_forget_fd(fd); /* before: once closed, the number can be reused */
	return sg_real.close(fd);
}

SG_EXPORT int shmguard_set_request(const char *id)
{
	if (!id || !*id) {
		sg_thread_request[0] = '\0';
		return 0;
	}
	if (sg_reqid_invalid(id)) {
		errno = EINVAL;
		return -1;
	}
	strcpy(sg_thread_request, id);
	return 0;
}
