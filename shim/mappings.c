#include "mappings.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "maps.h"
#include "real.h"
#include "state.h"

/* Identity of the segment each tracked fd refers to, indexed by fd; ino 0
 * means untracked.  The close() wrapper clears a slot before the number can
 * be reused.  (An fd number taken over by dup2() keeps a stale slot: only
 * the mapped-bytes figure can suffer.) */
static struct {
	dev_t dev;
	ino_t ino;
	bool swept;
} fds[SG_MAX_TRACKED_FD];
static int fds_end; /* one past the highest slot ever used */

struct range {
	uintptr_t start;
	size_t len;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct range *swept; /* mappings of swept segments that are still mapped */
static size_t nswept, swept_cap;
/* Whether a sweep can find any mapping of a tracked segment at all (if the
 * program never maps one, /proc/self/maps need not be read). */
static bool mapped_any;
/* Set while a sweep reads /proc/self/maps: a munmap() that the read may
 * have seen must wait for the list instead of skipping it. */
static bool reading;

void sg_mappings_track_fd(int fd, dev_t dev, ino_t ino)
{
	int end;

	if ((unsigned)fd >= SG_MAX_TRACKED_FD)
		return;
	/* Another thread may have used this number a moment ago: the kernel
	 * orders the close and the reuse, the atomics make that visible. */
	__atomic_store_n(&fds[fd].dev, dev, __ATOMIC_RELAXED);
	__atomic_store_n(&fds[fd].swept, false, __ATOMIC_RELAXED);
	__atomic_store_n(&fds[fd].ino, ino, __ATOMIC_RELEASE);
	end = __atomic_load_n(&fds_end, __ATOMIC_RELAXED);
	while (fd >= end && !__atomic_compare_exchange_n(&fds_end, &end, fd + 1, false, __ATOMIC_RELAXED,
							 __ATOMIC_RELAXED))
		;
}

void sg_mappings_forget_fd(int fd)
{
	if ((unsigned)fd < SG_MAX_TRACKED_FD && __atomic_load_n(&fds[fd].ino, __ATOMIC_RELAXED))
		__atomic_store_n(&fds[fd].ino, 0, __ATOMIC_RELAXED);
}

static size_t page_round(size_t len)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	return (len + page - 1) & ~(page - 1);
}

/* Called with the lock held.  A range already listed is not added again: a
 * mapping made while a sweep runs can be seen both by the sweep's reading of
 * /proc/self/maps and by the mmap() wrapper. */
static void add_swept(uintptr_t start, size_t len)
{
	for (size_t i = 0; i < nswept; i++)
		if (swept[i].start == start)
			return;
	if (nswept == swept_cap) {
		size_t cap = swept_cap ? swept_cap * 2 : 16;
		struct range *r = realloc(swept, cap * sizeof(*r));
		if (!r)
			return; /* the figure undercounts; nothing else depends on it */
		swept = r;
		swept_cap = cap;
	}
	swept[nswept] = (struct range){start, len};
	__atomic_store_n(&nswept, nswept + 1, __ATOMIC_RELEASE);
	sg_count(mapped_bytes, len);
}

/* Called with the lock held. */
static void remove_swept(uintptr_t lo, uintptr_t hi)
{
	for (size_t i = 0; i < nswept;) {
		struct range *m = &swept[i];
		uintptr_t mlo = m->start, mhi = m->start + m->len;
		uintptr_t olo = lo > mlo ? lo : mlo, ohi = hi < mhi ? hi : mhi;

		if (olo >= ohi) {
			i++;
			continue;
		}
		sg_count(mapped_bytes, -(uint64_t)(ohi - olo));
		/* A hole punched in the middle leaves the mapping counted as one
		 * piece of the remaining length: only byte totals matter here. */
		m->len -= ohi - olo;
		if (olo == mlo)
			m->start = ohi;
		if (m->len == 0) {
			*m = swept[nswept - 1];
			__atomic_store_n(&nswept, nswept - 1, __ATOMIC_RELEASE);
			continue;
		}
		i++;
	}
}

void sg_mappings_on_mmap(void *addr, size_t len, int fd, int flags)
{
	/* MAP_FIXED replaces whatever was mapped there. */
	if ((flags & MAP_FIXED) && sg_mappings_any())
		sg_mappings_on_munmap(addr, len);
	if ((unsigned)fd >= SG_MAX_TRACKED_FD || !__atomic_load_n(&fds[fd].ino, __ATOMIC_ACQUIRE))
		return;
	/* Either this sees the sweep's flag below, or the sweep sees this and
	 * reads the mapping from /proc/self/maps (sequentially consistent on
	 * both sides: a store then a load each). */
	if (!__atomic_load_n(&mapped_any, __ATOMIC_SEQ_CST))
		__atomic_store_n(&mapped_any, true, __ATOMIC_SEQ_CST);
	/* Mapped after its sweep (a late put, say): counted from now on. */
	if (__atomic_load_n(&fds[fd].swept, __ATOMIC_SEQ_CST)) {
		pthread_mutex_lock(&lock);
		add_swept((uintptr_t)addr, page_round(len));
		pthread_mutex_unlock(&lock);
	}
}

void sg_mappings_on_munmap(void *addr, size_t len)
{
	pthread_mutex_lock(&lock);
	remove_swept((uintptr_t)addr, (uintptr_t)addr + page_round(len));
	pthread_mutex_unlock(&lock);
}

int sg_mappings_any(void)
{
	/* reading first: once it is seen false again, the ranges the sweep
	 * added (before clearing it) are seen too. */
	return __atomic_load_n(&reading, __ATOMIC_SEQ_CST) || __atomic_load_n(&nswept, __ATOMIC_ACQUIRE) != 0;
}

static bool is_swept(const struct sg_file_id *ids, size_t n, dev_t dev, ino_t ino)
{
	for (size_t i = 0; i < n; i++)
		if (ids[i].dev == dev && ids[i].ino == ino)
			return true;
	return false;
}

/* Calls fn for each mapping /proc/self/maps lists, until it returns false.
 * Called with the lock held (which also guards the buffer: a late put
 * sweeps on the program's own thread, whose stack may be small). */
static void each_mapping(bool (*fn)(const struct sg_map *m, void *ctx), void *ctx)
{
	static char buf[16384];
	int fd = sg_real.open("/proc/self/maps", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return;
	sg_maps_read(fd, buf, sizeof(buf), fn, ctx);
	sg_real.close(fd);
}

struct swept_files {
	const struct sg_file_id *ids;
	size_t n;
	uint64_t bytes;
};

static bool add_if_swept(const struct sg_map *m, void *ctx)
{
	struct swept_files *f = ctx;

	if (m->ino && is_swept(f->ids, f->n, makedev(m->major, m->minor), (ino_t)m->ino)) {
		size_t before = nswept;
		add_swept((uintptr_t)m->start, m->end - m->start);
		if (nswept != before)
			f->bytes += m->end - m->start;
	}
	return true;
}

/* Adds every mapping of the n files that /proc/self/maps lists; returns
 * their bytes.  Called with the lock held. */
static uint64_t add_mapped(const struct sg_file_id *ids, size_t n)
{
	struct swept_files f = {ids, n, 0};

	each_mapping(add_if_swept, &f);
	return f.bytes;
}

struct file_at {
	uintptr_t addr;
	struct sg_file_id *id;
	bool found;
};

static bool find_addr(const struct sg_map *m, void *ctx)
{
	struct file_at *f = ctx;

	if (f->addr < m->start || f->addr >= m->end)
		return true;
	*f->id = (struct sg_file_id){makedev(m->major, m->minor), (ino_t)m->ino};
	f->found = m->ino != 0;
	return false;
}

int sg_mappings_file_at(const void *addr, struct sg_file_id *id)
{
	struct file_at f = {(uintptr_t)addr, id, false};

	pthread_mutex_lock(&lock);
	each_mapping(find_addr, &f);
	pthread_mutex_unlock(&lock);
	return f.found ? 0 : -1;
}

uint64_t sg_mappings_swept(const struct sg_file_id *ids, size_t n)
{
	int end = __atomic_load_n(&fds_end, __ATOMIC_RELAXED);
	uint64_t bytes = 0;

	if (!n)
		return 0;
	pthread_mutex_lock(&lock);
	/* Open fds of these files: their later mappings count too. */
	for (int fd = 0; fd < end; fd++) {
		ino_t ino = __atomic_load_n(&fds[fd].ino, __ATOMIC_ACQUIRE);
		if (ino && is_swept(ids, n, __atomic_load_n(&fds[fd].dev, __ATOMIC_RELAXED), ino))
			__atomic_store_n(&fds[fd].swept, true, __ATOMIC_SEQ_CST);
	}
	/* The other half of the handshake in sg_mappings_on_mmap(). */
	if (__atomic_load_n(&mapped_any, __ATOMIC_SEQ_CST)) {
		__atomic_store_n(&reading, true, __ATOMIC_SEQ_CST);
		bytes = add_mapped(ids, n);
		__atomic_store_n(&reading, false, __ATOMIC_SEQ_CST);
	}
	pthread_mutex_unlock(&lock);
	return bytes;
}

void sg_mappings_lock(void)
{
	pthread_mutex_lock(&lock);
}

void sg_mappings_unlock(void)
{
	pthread_mutex_unlock(&lock);
}

void sg_mappings_after_unseen_fork(void)
{
	pthread_mutex_init(&lock, NULL);
	sg_mappings_after_fork();
}

/* In a fork child: the swept mappings and flags describe the parent's
 * sweeps, whose counts the child does not inherit. */
void sg_mappings_after_fork(void)
{
	nswept = 0;
	for (int fd = 0; fd < fds_end; fd++)
		fds[fd].swept = false;
}
