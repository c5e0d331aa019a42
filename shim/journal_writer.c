#include "journal_writer.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "journal.h"
#include "log.h"
#include "real.h"
#include "roots.h"
#include "shim.h"

/* A slot names a root and a record: (root + 1) << 24 | index. */
#define SLOT_ROOT_SHIFT 24
#define SLOT_INDEX_MASK ((1u << SLOT_ROOT_SHIFT) - 1)
#define FIRST_CAPACITY 7 /* records in the first page */

/* No descriptor is kept: the program may close or reuse any number (a
 * closefrom, a dup2), and growing reopens the journal by name and checks it
 * is still ours. */
struct writer {
	bool opened, failed;
	char *base; /* the mapping: header, then records */
	size_t cap; /* records mapped */
	size_t used; /* slots ever handed out */
	/* Freed slots, chained through their ino field (a freed record's seal
	 * is 0: readers skip it whatever it holds); 1 + index, 0 ends. */
	uint32_t free_head;
	dev_t dev;
	ino_t ino;
	char path[SG_PATH_MAX + 64];
};

static struct writer writers[SG_MAX_ROOTS];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static bool said_failed;

static size_t bytes_for(size_t cap)
{
	return sizeof(struct sg_journal_head) + cap * sizeof(struct sg_journal_rec);
}

static struct sg_journal_rec *rec_at(struct writer *w, size_t idx)
{
	return (struct sg_journal_rec *)(w->base + sizeof(struct sg_journal_head)) + idx;
}

/* Gives bytes from..to of the journal their pages before the mapping
 * touches them: a write into a page a full tmpfs cannot supply would be
 * SIGBUS in the program, where this returns ENOSPC.  (ramfs has no
 * fallocate, and no size limit either: writing zeros does.) */
static int reserve(int fd, size_t from, size_t to)
{
	static const char zeros[4096];

	if (fallocate(fd, 0, (off_t)from, (off_t)(to - from)) == 0)
		return 0;
	if (errno != EOPNOTSUPP)
		return -1;
	while (from < to) {
		ssize_t n = pwrite(fd, zeros, to - from < sizeof(zeros) ? to - from : sizeof(zeros), (off_t)from);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			errno = n < 0 ? errno : EIO;
			return -1;
		}
		from += (size_t)n;
	}
	return 0;
}

static void fail(struct writer *w, unsigned k, const char *what)
{
	w->failed = true;
	sg_log_once(&said_failed, SG_LOG_WARN,
		    "cannot keep an ownership journal in %s (%s: %s); this process sweeps its own segments, but "
		    "other processes, shmguard ls and sweep will not know whose they are",
		    sg_cfg.roots.dir[k], what, strerror(errno));
}

/* Creates the journal: a new file of our own (O_EXCL, never through a
 * symlink), readable by all and writable by us alone, header first. */
static int open_writer(struct writer *w, unsigned k)
{
	struct sg_journal_head head;
	struct timespec now;
	const struct sg_self *self;
	struct stat st;
	void *base;
	int fd = -1;

	clock_gettime(CLOCK_REALTIME, &now);
	w->opened = true;
	/* A random part, so that nobody can take the name beforehand. */
	for (unsigned n = 0; fd < 0 && n < 16; n++) {
		uint64_t r;
		if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != sizeof(r))
			r = (uint64_t)now.tv_nsec * 0x9e3779b97f4a7c15ull ^ (uint64_t)(uintptr_t)&r ^ n;
		snprintf(w->path, sizeof(w->path), "%s/" SG_JOURNAL_PREFIX "%d-%016llx", sg_cfg.roots.dir[k],
			 (int)sg_self.pid, (unsigned long long)r);
		fd = sg_real.open(w->path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
		if (fd < 0 && errno != EEXIST)
			break;
	}
	if (fd < 0) {
		fail(w, k, "create");
		return -1;
	}
	if (fchmod(fd, 0644) < 0 || fstat(fd, &st) < 0 || reserve(fd, 0, bytes_for(FIRST_CAPACITY)) < 0)
		goto undo;
	base = sg_real.mmap(NULL, bytes_for(FIRST_CAPACITY), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (base == MAP_FAILED)
		goto undo;
	self = sg_self_known();
	sg_journal_head_init(&head, self->pid, self->start_ticks, self->pidns,
			     (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec);
	memcpy(base, &head, sizeof(head));
	sg_real.close(fd);
	w->base = base;
	w->cap = FIRST_CAPACITY;
	w->dev = st.st_dev;
	w->ino = st.st_ino;
	return 0;
undo:
	fail(w, k, "set up");
	sg_real.unlink(w->path); /* ours: made with O_EXCL a moment ago */
	sg_real.close(fd);
	return -1;
}

static int grow(struct writer *w, unsigned k)
{
	size_t cap = w->cap * 2;
	void *base = MAP_FAILED;
	struct stat st;
	int fd = -1, ret = -1;

	if (cap > SLOT_INDEX_MASK || bytes_for(cap) > SG_JOURNAL_MAX_BYTES) {
		errno = EFBIG;
		goto cleanup;
	}
	fd = sg_real.open(w->path, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0)
		goto cleanup;
	if (st.st_dev != w->dev || st.st_ino != w->ino) {
		errno = ESTALE; /* the name is no longer our journal */
		goto cleanup;
	}
	if (reserve(fd, bytes_for(w->cap), bytes_for(cap)) < 0 ||
	    (base = mremap(w->base, bytes_for(w->cap), bytes_for(cap), MREMAP_MAYMOVE)) == MAP_FAILED)
		goto cleanup;
	w->base = base;
	w->cap = cap;
	ret = 0;
cleanup:
	if (ret < 0)
		sg_log_once(&said_failed, SG_LOG_WARN, "the ownership journal in %s cannot grow (%s): later files are not "
			    "recorded in it", sg_cfg.roots.dir[k], strerror(errno));
	if (fd >= 0)
		sg_real.close(fd);
	return ret;
}

/* The root path is spelled in, SG_MAX_ROOTS if none. */
static unsigned root_of(const char *path)
{
	size_t name_off = sg_root_spelled(path);

	for (unsigned k = 0; name_off && k < sg_cfg.roots.n; k++)
		if (sg_cfg.roots.len[k] + 1 == name_off && memcmp(path, sg_cfg.roots.dir[k], name_off - 1) == 0)
			return k;
	return SG_MAX_ROOTS;
}

/* A tick's precision is plenty for an age, and the coarse clock is a plain
 * read where the precise one may be a paravirtual clock read. */
static uint64_t now_ns(void)
{
	struct timespec now;

	clock_gettime(CLOCK_REALTIME_COARSE, &now);
	return (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
}

uint32_t sg_jw_record(const char *path, uint64_t ino, const char *req)
{
	unsigned k = sg_cfg.tag_journal ? root_of(path) : SG_MAX_ROOTS;
	uint32_t slot = 0;
	struct writer *w;
	size_t idx;

	if (k == SG_MAX_ROOTS)
		return 0;
	w = &writers[k];
	pthread_mutex_lock(&lock);
	if (w->failed || (!w->opened && open_writer(w, k) < 0))
		goto out;
	if (w->free_head) {
		idx = w->free_head - 1;
		w->free_head = (uint32_t)rec_at(w, idx)->ino;
	} else if (w->used < w->cap || grow(w, k) == 0) {
		idx = w->used++;
	} else {
		goto out;
	}
	if (sg_journal_rec_commit(rec_at(w, idx), ino, now_ns(), req, path + sg_cfg.roots.len[k] + 1) < 0) {
		rec_at(w, idx)->ino = w->free_head; /* a name or request too long for a record */
		w->free_head = (uint32_t)idx + 1;
		goto out;
	}
	slot = (k + 1) << SLOT_ROOT_SHIFT | (uint32_t)idx;
out:
	pthread_mutex_unlock(&lock);
	return slot;
}

void sg_jw_release(uint32_t slot)
{
	unsigned k = (slot >> SLOT_ROOT_SHIFT) - 1;
	size_t idx = slot & SLOT_INDEX_MASK;
	struct writer *w;

	if (!slot || k >= SG_MAX_ROOTS)
		return;
	w = &writers[k];
	pthread_mutex_lock(&lock);
	if (w->base && idx < w->used) {
		struct sg_journal_rec *r = rec_at(w, idx);
		sg_journal_rec_free(r);
		r->ino = w->free_head;
		w->free_head = (uint32_t)idx + 1;
	}
	pthread_mutex_unlock(&lock);
}

/* Whether a record still speaks for an existing file. */
static bool still_there(unsigned k, const struct sg_journal_rec *r)
{
	char path[SG_PATH_MAX + SG_NAME_MAX + 2];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%.*s", sg_cfg.roots.dir[k], (int)r->name_len, r->name);
	return lstat(path, &st) == 0 && st.st_ino == r->ino;
}

void sg_jw_exit(void)
{
	pthread_mutex_lock(&lock);
	for (unsigned k = 0; k < SG_MAX_ROOTS; k++) {
		struct writer *w = &writers[k];
		bool some = false;
		struct stat st;

		if (!w->base)
			continue;
		for (size_t i = 0; i < w->used && !some; i++)
			some = __atomic_load_n(&rec_at(w, i)->seal, __ATOMIC_RELAXED) && still_there(k, rec_at(w, i));
		/* Files remain: the journal stays for sweep --dead to read. */
		if (some || lstat(w->path, &st) < 0 || st.st_dev != w->dev || st.st_ino != w->ino)
			continue;
		sg_real.unlink(w->path);
		w->failed = true; /* a file created after this is not recorded */
	}
	pthread_mutex_unlock(&lock);
}

void sg_jw_lock(void)
{
	pthread_mutex_lock(&lock);
}

void sg_jw_unlock(void)
{
	pthread_mutex_unlock(&lock);
}

void sg_jw_after_fork_child(void)
{
	for (unsigned k = 0; k < SG_MAX_ROOTS; k++) {
		struct writer *w = &writers[k];
		if (w->base)
			sg_real.munmap(w->base, bytes_for(w->cap));
		*w = (struct writer){0};
	}
	pthread_mutex_unlock(&lock);
}
