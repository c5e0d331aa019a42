#include "track.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sdt.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "journal.h"
#include "log.h"
#include "mappings.h"
#include "markers.h"
#include "real.h"
#include "registry.h"
#include "roots.h"
#include "state.h"
#include "sweep.h"
#include "tag.h"

static bool said_ambiguous, said_xattr, said_nomem, said_signal;

/* An explicit request, copied to req; where it stands in the name is not known. */
static bool explicit_request(const char *id, char *req, struct sg_match_at *at)
{
	size_t len = strlen(id);

	memcpy(req, id, len + 1);
	*at = (struct sg_match_at){.shape = -1, .req_at = SG_JOURNAL_REQ_AT_UNKNOWN, .req_len = len};
	return true;
}

/* Explicit beats patterns: the thread's request, then the process's, then
 * the one request the patterns give name (len bytes), with *at where it
 * stands.  False: leave the file untagged. */
static bool attribute(const char *name, size_t len, char *req, struct sg_match_at *at)
{
	char other[SG_NAME_MAX + 1];

	if (sg_thread_request[0])
		return explicit_request(sg_thread_request, req, at);
	if (sg_cfg.request_id[0])
		return explicit_request(sg_cfg.request_id, req, at);
	/* name is a path's last component: no '/', no NUL byte. */
	switch (sg_patterns_match_component(&sg_cfg.patterns, name, len, req, other, at)) {
	case SG_MATCH_ONE:
		return true;
	case SG_MATCH_AMBIGUOUS:
		sg_count(ambiguous, 1);
		if (!__atomic_load_n(&said_ambiguous, __ATOMIC_RELAXED))
			sg_log_once(&said_ambiguous, SG_LOG_WARN,
				    "%s is ambiguous: the patterns give request '%s' and request '%s'; it is not "
				    "tagged and no abort will sweep it (later ambiguous names are counted and "
				    "logged at debug level)",
				    name, req, other);
		else
			sg_log(SG_LOG_DEBUG, "%s is ambiguous ('%s' or '%s'): not tagged", name, req, other);
		return false;
	case SG_MATCH_NONE:
		break;
	}
	return false;
}

/* Whether a file called name would be attributed to some request (or be
 * ambiguous), without a word said: a name that would not needs no stat to
 * learn which directory it is in. */
static bool attributable(const char *name)
{
	return sg_thread_request[0] || sg_cfg.request_id[0] ||
	       sg_patterns_match_component(&sg_cfg.patterns, name, strlen(name), NULL, NULL, NULL) != SG_MATCH_NONE;
}

const char *sg_locate(int dirfd, const char *path, char canon[static SG_ROOT_PATH_MAX], bool always,
		      size_t *name_off)
{
	const char *name;

	if ((*name_off = sg_root_spelled(path)))
		return path;
	if (!(name = sg_file_name(path)) || (!always && !attributable(name)))
		return NULL;
	return sg_root_path(dirfd, path, canon, name_off);
}

/* Whether the call created the file, learnt without a race: try it as an
 * exclusive creation first; if the name exists (a file, a directory, a
 * symlink, dangling or not, a FIFO...), make the program's own call, which
 * meets that entry exactly as without the shim (EISDIR for a directory, a
 * symlink followed, its missing target created, protected_regular's
 * EACCES).  Only if the name vanished between the two calls does the second
 * create a file, left untracked: a miss, never a wrong record. */
static int open_learning_creation(const struct sg_call *call, int flags, bool *created)
{
	int fd = call->open(call, flags | O_EXCL);

	*created = fd >= 0;
	if (fd >= 0 || (flags & O_EXCL) || errno != EEXIST)
		return fd;
	return call->open(call, flags);
}

static void write_tag(int fd, const char *req)
{
	struct timespec now;
	char buf[SG_TAG_MAX];
	int n;

	/* A tick's precision is plenty for an age, and the coarse clock is a
	 * plain read where the precise one may be a paravirtual clock read. */
	clock_gettime(CLOCK_REALTIME_COARSE, &now);
	n = sg_tag_encode_with(&sg_self_known()->tag_head, (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec, req,
			       buf, sizeof(buf));
	if (n > 0 && fsetxattr(fd, SG_TAG_XATTR, buf, (size_t)n, 0) < 0)
		sg_log_once(&said_xattr, SG_LOG_INFO,
			    "cannot write the %s tag (%s); this process works from its own records, but other "
			    "processes and the CLI will not see the tags",
			    SG_TAG_XATTR, strerror(errno));
}

static void say_nomem(const char *path)
{
	sg_log_once(&said_nomem, SG_LOG_WARN, "out of memory: %s is not tracked", path);
}

/* Recorded and checked under one lock: an abort that comes after this
 * finds the record in the watcher's sweep, and one that came before is a
 * late put, swept here.  looked: the watcher's first look at the markers
 * already present was done before the record was made; until then the
 * registry may not know an abort yet, and the marker itself is asked. */
static void check_late(int added, bool looked, const char *path, const char *req)
{
	if (added == SG_ADDED_ABORTED || (added == SG_ADDED && !looked && sg_markers_aborted(req))) {
		sg_count(late_puts, 1);
		sg_log(SG_LOG_INFO, "request %s: %s was created after its abort", req, path);
		sg_sweep(req);
	}
}

/* The file dev, ino, named path (root/name, the name at name_off, name_len
 * bytes long, the root sg_cfg.roots' root-th) and attributed to req as at
 * says. */
static struct sg_new_file new_file(const char *path, size_t name_off, size_t name_len, unsigned root,
				   const char *req, const struct sg_match_at *at, dev_t dev, ino_t ino)
{
	return (struct sg_new_file){.path = path,
				    .name_off = name_off,
				    .name_len = name_len,
				    .root = root,
				    .req = req,
				    .req_len = at->req_len,
				    .req_at = at->req_at,
				    .dev = dev,
				    .ino = ino};
}

/* Records f, which this process just created.  fd is open on it (-1: none
 * could be, and no tag is written); program_fd: the program's own, whose
 * later mappings count after a sweep. */
static void record(int fd, bool program_fd, const struct sg_new_file *f)
{
	const char *path = f->path, *req = f->req;
	bool looked;
	int added;

	if (__atomic_load_n(&sg_stats.signal_misses, __ATOMIC_RELAXED) && !__atomic_load_n(&said_signal, __ATOMIC_RELAXED))
		sg_log_once(&said_signal, SG_LOG_WARN, "a file was created in a signal handler: such files are not "
			    "tracked (the shim allocates and locks, which a handler must not), and no abort sweeps them");

	/* First, so that the aborts already on disk are known to the registry. */
	sg_markers_start();
	/* Before the record is visible: a sweep that comes at once must find
	 * the fd, to count the mappings the program makes of it afterwards. */
	if (program_fd)
		sg_mappings_track_fd(fd, f->dev, f->ino);
	looked = sg_markers_first_look_done();
	added = sg_registry_add(f);
	if (added < 0) {
		if (program_fd)
			sg_mappings_forget_fd(fd);
		say_nomem(path);
		return;
	}
	sg_count(tagged, 1);
	if (sg_cfg.tag_xattr && fd >= 0)
		write_tag(fd, req);
	/* For `shmguard audit`: a nop until a tracer attaches. */
	DTRACE_PROBE3(shmguard, tag, req, (uint64_t)f->dev, (uint64_t)f->ino);
	sg_log(SG_LOG_DEBUG, "tagged %s for request %s", path, req);
	check_late(added, looked, path, req);
}

int sg_create(const struct sg_call *call, int flags, int dirfd, const char *path, size_t name_off)
{
	char canon[SG_ROOT_PATH_MAX], req[SG_NAME_MAX + 1];
	bool shm_opens = name_off != 0, created;
	int fd, saved = errno;
	struct sg_match_at at;
	size_t name_len;
	dev_t dev;
	ino_t ino;

	if (!sg_active() || !sg_enter()) {
		if (sg_in_handler() && (name_off || sg_locate(dirfd, path, canon, false, &name_off)))
			sg_count(signal_misses, 1);
		return call->open(call, flags);
	}
	if (!name_off && !(path = sg_locate(dirfd, path, canon, false, &name_off)))
		goto untracked;
	name_len = strlen(path + name_off);
	if (!attribute(path + name_off, name_len, req, &at))
		goto untracked;
	fd = open_learning_creation(call, flags, &created);
	if (fd >= 0) {
		if (created && sg_identify(fd, "", AT_EMPTY_PATH, &dev, &ino, NULL) == 0) {
			unsigned root = shm_opens ? SG_SHM_OPEN_ROOT : sg_root_at(path, name_off);
			struct sg_new_file f = new_file(path, name_off, name_len, root, req, &at, dev, ino);
			record(fd, true, &f);
		}
		errno = saved;
	}
	sg_leave();
	return fd;
untracked:
	sg_leave();
	errno = saved;
	return call->open(call, flags);
}

/* A name that this process gave the file src in a root, other than by
 * opening it (path, spelled root/name, the name at name_off, name_len
 * bytes long, in sg_cfg.roots' root-th): records it for req, found as at
 * says.  The tag is written through a descriptor opened on the name (never
 * following a symlink), only once it is known to be src; a file this
 * process may not read is recorded untagged. */
static void record_named(const char *path, size_t name_off, size_t name_len, unsigned root,
			 const struct sg_source *src, const char *req, const struct sg_match_at *at)
{
	struct sg_new_file f = new_file(path, name_off, name_len, root, req, at, src->dev, src->ino);
	dev_t dev;
	ino_t ino;
	int fd = sg_real.open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);

	if (fd < 0 && errno != EACCES && errno != EPERM)
		return; /* gone already, or a symlink now */
	if (fd >= 0 && (sg_identify(fd, "", AT_EMPTY_PATH, &dev, &ino, NULL) < 0 || dev != src->dev ||
			ino != src->ino)) {
		sg_real.close(fd); /* the name already refers to another file: not ours */
		return;
	}
	record(fd, false, &f);
	if (fd >= 0)
		sg_real.close(fd);
}

/* Where the name starts in a canonical path root/name. */
static size_t name_at(const char *path)
{
	return (size_t)(strrchr(path, '/') + 1 - path);
}

/* A name that a rename or link made in a root: a creation by this process. */
static void arrived(const char *path, const struct sg_source *src)
{
	size_t name_off = name_at(path), name_len = strlen(path + name_off);
	char req[SG_NAME_MAX + 1];
	struct sg_match_at at;

	if (src->regular && attribute(path + name_off, name_len, req, &at))
		record_named(path, name_off, name_len, sg_root_at(path, name_off), src, req, &at);
}

/* A record moves to its file's new name, keeping its request. */
static void rekey(struct sg_segment *seg, const char *to)
{
	struct sg_match_at at = {.req_at = SG_JOURNAL_REQ_AT_UNKNOWN, .req_len = strlen(seg->request)};
	size_t name_off = name_at(to);
	struct sg_new_file f = new_file(to, name_off, strlen(to + name_off), sg_root_at(to, name_off), seg->request, &at,
					seg->dev, seg->ino);
	bool looked = sg_markers_first_look_done();
	int added = sg_registry_add(&f);

	if (added < 0)
		say_nomem(to);
	else
		check_late(added, looked, to, seg->request);
}

/* The record moved, if it is still that of the file src (or src was not
 * seen), goes to to; else the name is new to the roots. */
static void moved_to(struct sg_segment *seg, const char *to, const struct sg_source *src)
{
	if (seg && (!src->regular || (seg->dev == src->dev && seg->ino == src->ino)))
		rekey(seg, to);
	else
		arrived(to, src);
}

void sg_renamed(const char *from, const char *to, const struct sg_source *src, const struct sg_source *back)
{
	struct sg_segment *moved = from ? sg_registry_take(from, name_at(from)) : NULL;
	struct sg_segment *overwritten = to ? sg_registry_take(to, name_at(to)) : NULL;

	/* A record whose file left the roots is forgotten, and so is that of
	 * a name overwritten. */
	if (to)
		moved_to(moved, to, src);
	if (back && from) /* an exchange: the other file took the old name */
		moved_to(overwritten, from, back);
	free(moved);
	free(overwritten);
}

void sg_linked(const char *to, const struct sg_source *src)
{
	arrived(to, src);
}

sem_t *sg_sem_create(const char *name, int oflag, mode_t mode, unsigned value, const char *path, size_t name_off)
{
	char req[SG_NAME_MAX + 1];
	struct sg_source src = {.regular = true};
	struct sg_match_at at;
	struct sg_file_id id;
	int saved = errno;
	size_t name_len;
	sem_t *sem;

	if (!sg_active() || !sg_enter()) {
		if (sg_in_handler())
			sg_count(signal_misses, 1);
		return sg_real.sem_open(name, oflag, mode, value);
	}
	name_len = strlen(path + name_off);
	if (!attribute(path + name_off, name_len, req, &at)) {
		errno = saved;
		sem = sg_real.sem_open(name, oflag, mode, value);
		goto out;
	}
	/* glibc's own order: an existing semaphore is opened, else one is
	 * made exclusively (a temporary file linked to the name).  errno is as
	 * those calls leave it, as without the shim. */
	if (!(oflag & O_EXCL)) {
		errno = saved;
		sem = sg_real.sem_open(name, oflag & ~O_CREAT);
		if (sem != SEM_FAILED || errno != ENOENT)
			goto out;
	}
	sem = sg_real.sem_open(name, oflag | O_EXCL, mode, value);
	if (sem != SEM_FAILED) {
		/* glibc made the file and mapped it without the wrappers: the
		 * mapping names the inode that this call linked. */
		saved = errno;
		if (sg_mappings_file_at(sem, &id) == 0) {
			src.dev = id.dev;
			src.ino = id.ino;
			record_named(path, name_off, name_len, SG_SHM_OPEN_ROOT, &src, req, &at);
		}
		errno = saved;
	} else if (!(oflag & O_EXCL) && errno == EEXIST) {
		/* Made by another process in between: the program's own call. */
		sem = sg_real.sem_open(name, oflag, mode, value);
	}
out:
	sg_leave();
	return sem;
}
