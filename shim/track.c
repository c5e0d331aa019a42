#include "track.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/sdt.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "mappings.h"
#include "markers.h"
#include "registry.h"
#include "shim.h"
#include "sweep.h"
#include "tag.h"

static bool said_ambiguous, said_xattr, said_nomem;

/* Offset of the name under the shm root that path lies in (the deepest,
 * when roots nest), or 0 when path is under none or in the abort directory. */
static size_t name_offset(const char *path)
{
	size_t alen = strlen(sg_cfg.abort_dir), best = 0;

	if (strncmp(path, sg_cfg.abort_dir, alen) == 0 && path[alen] == '/')
		return 0;
	for (unsigned k = 0; k < sg_cfg.roots.n; k++) {
		size_t rlen = sg_cfg.roots.len[k];
		if (rlen >= best && strncmp(path, sg_cfg.roots.dir[k], rlen) == 0 && path[rlen] == '/' && path[rlen + 1])
			best = rlen + 1;
	}
	return best;
}

/* Explicit beats patterns: the thread's request, then the process's, then
 * the one request the patterns give.  False: leave the file untagged. */
static bool attribute(const char *name, char *req)
{
	char other[SG_NAME_MAX + 1];

	if (sg_thread_request[0]) {
		strcpy(req, sg_thread_request);
		return true;
	}
	if (sg_cfg.request_id[0]) {
		strcpy(req, sg_cfg.request_id);
		return true;
	}
	switch (sg_patterns_match(&sg_cfg.patterns, name, strlen(name), req, other, NULL)) {
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

/* Whether the call created the file, learnt without a race: try it as an
 * exclusive creation first, and only when the file exists open it without
 * O_CREAT.  The program sees the same result and errors as with its flags. */
static int open_learning_creation(const struct sg_call *call, int flags, bool *created)
{
	*created = false;
	if (flags & O_EXCL) {
		int fd = call->open(call, flags);
		*created = fd >= 0;
		return fd;
	}
	for (int tries = 0; tries < 4; tries++) {
		int fd = call->open(call, flags | O_EXCL);
		if (fd >= 0) {
			*created = true;
			return fd;
		}
		if (errno != EEXIST)
			return fd;
		fd = call->open(call, flags & ~O_CREAT);
		if (fd >= 0 || errno != ENOENT)
			return fd;
		/* Unlinked between the two calls: try again. */
	}
	return call->open(call, flags); /* a dangling symlink, say: the program's own call, untracked */
}

static void write_tag(int fd, const char *req)
{
	struct timespec now;
	char buf[SG_TAG_MAX];
	int n;

	/* A tick's precision is plenty for an age, and the coarse clock is a
	 * plain read where the precise one may be a paravirtual clock read. */
	clock_gettime(CLOCK_REALTIME_COARSE, &now);
	n = sg_tag_encode_with(&sg_self.tag_head, (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec, req,
			       buf, sizeof(buf));
	if (n > 0 && fsetxattr(fd, SG_TAG_XATTR, buf, (size_t)n, 0) < 0)
		sg_log_once(&said_xattr, SG_LOG_INFO,
			    "cannot write the %s tag (%s); this process works from its own records, but other "
			    "processes and the CLI will not see the tags",
			    SG_TAG_XATTR, strerror(errno));
}

/* The file's device and inode.  statx asked for the inode alone costs the
 * creation about half of what fstat does on tmpfs (which fills every field);
 * fstat remains for kernels or sandboxes without statx. */
static int identify(int fd, dev_t *dev, ino_t *ino)
{
	struct statx stx;
	struct stat st;

	if (statx(fd, "", AT_EMPTY_PATH, STATX_INO, &stx) == 0 && (stx.stx_mask & STATX_INO)) {
		*dev = makedev(stx.stx_dev_major, stx.stx_dev_minor);
		*ino = stx.stx_ino;
		return 0;
	}
	if (fstat(fd, &st) < 0)
		return -1;
	*dev = st.st_dev;
	*ino = st.st_ino;
	return 0;
}

static void record(int fd, const char *path, const char *req)
{
	dev_t dev;
	ino_t ino;
	int added;

	if (identify(fd, &dev, &ino) < 0)
		return;
	/* First, so that the aborts already on disk are known to the registry. */
	sg_markers_start();
	/* Before the record is visible: a sweep that comes at once must find
	 * the fd, to count the mappings the program makes of it afterwards. */
	sg_mappings_track_fd(fd, dev, ino);
	added = sg_registry_add(path, dev, ino, req);
	if (added < 0) {
		sg_mappings_forget_fd(fd);
		sg_log_once(&said_nomem, SG_LOG_WARN, "out of memory: %s is not tracked", path);
		return;
	}
	sg_count(tagged, 1);
	if (sg_cfg.tag_xattr)
		write_tag(fd, req);
	/* For `shmguard audit`: a nop until a tracer attaches. */
	DTRACE_PROBE3(shmguard, tag, req, (uint64_t)dev, (uint64_t)ino);
	sg_log(SG_LOG_DEBUG, "tagged %s for request %s", path, req);
	/* Recorded and checked under one lock: an abort that comes after this
	 * finds the record in the watcher's sweep. */
	if (added == SG_ADDED_ABORTED) {
		sg_count(late_puts, 1);
		sg_log(SG_LOG_INFO, "request %s: %s was created after its abort", req, path);
		sg_sweep(req);
	}
}

int sg_create(const struct sg_call *call, int flags, const char *path)
{
	char req[SG_NAME_MAX + 1];
	size_t name_off;
	bool created;
	int fd, saved;

	if (sg_busy || !sg_active() || !(name_off = name_offset(path)) || !attribute(path + name_off, req))
		return call->open(call, flags);
	sg_busy = true;
	fd = open_learning_creation(call, flags, &created);
	saved = errno;
	if (fd >= 0 && created)
		record(fd, path, req);
	sg_busy = false;
	errno = saved;
	return fd;
}
