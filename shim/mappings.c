#include "mappings.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#include "shim.h"

struct mapping {
	uintptr_t start;
	size_t len;
	dev_t dev;
	ino_t ino;
	bool swept;
};

/* Identity of the segment each tracked fd refers to, indexed by fd; ino 0
 * means untracked.  The close() wrapper clears a slot before the number can
 * be reused, so mmap() needs no fstat to trust it.  (An fd number taken over
 * by dup2() keeps a stale slot: only the mapped-bytes figure can suffer.) */
static struct {
	dev_t dev;
	ino_t ino;
} fds[SG_MAX_TRACKED_FD];

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct mapping *maps;
static size_t nmaps, maps_cap;

void sg_mappings_track_fd(int fd, dev_t dev, ino_t ino)
{
	if ((unsigned)fd >= SG_MAX_TRACKED_FD)
		return;
	/* Another thread may have used this number a moment ago: the kernel
	 * orders the close and the reuse, the atomics make that visible. */
	__atomic_store_n(&fds[fd].dev, dev, __ATOMIC_RELAXED);
	__atomic_store_n(&fds[fd].ino, ino, __ATOMIC_RELEASE);
}

void sg_mappings_forget_fd(int fd)
{
	if ((unsigned)fd < SG_MAX_TRACKED_FD && __atomic_load_n(&fds[fd].ino, __ATOMIC_RELAXED))
		__atomic_store_n(&fds[fd].ino, 0, __ATOMIC_RELAXED);
}

void sg_mappings_on_mmap(void *addr, size_t len, int fd)
{
	ino_t ino;

	if ((unsigned)fd >= SG_MAX_TRACKED_FD || !(ino = __atomic_load_n(&fds[fd].ino, __ATOMIC_ACQUIRE)))
		return;
	pthread_mutex_lock(&lock);
	if (nmaps == maps_cap) {
		size_t cap = maps_cap ? maps_cap * 2 : 16;
		struct mapping *m = realloc(maps, cap * sizeof(*m));
		if (!m)
			goto out;
		maps = m;
		maps_cap = cap;
	}
	maps[nmaps] = (struct mapping){(uintptr_t)addr, len, __atomic_load_n(&fds[fd].dev, __ATOMIC_RELAXED), ino, false};
	__atomic_store_n(&nmaps, nmaps + 1, __ATOMIC_RELAXED);
out:
	pthread_mutex_unlock(&lock);
}

void sg_mappings_on_munmap(void *addr, size_t len)
{
	uintptr_t lo = (uintptr_t)addr, hi = lo + len;

	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < nmaps;) {
		struct mapping *m = &maps[i];
		uintptr_t mlo = m->start, mhi = m->start + m->len;
		uintptr_t olo = lo > mlo ? lo : mlo, ohi = hi < mhi ? hi : mhi;

		if (olo >= ohi) {
			i++;
			continue;
		}
		if (m->swept)
			sg_count(mapped_bytes, -(uint64_t)(ohi - olo));
		/* A hole punched in the middle leaves the mapping counted as one
		 * piece of the remaining length: only byte totals matter here. */
		m->len -= ohi - olo;
		if (olo == mlo)
			m->start = ohi;
		if (m->len == 0) {
			*m = maps[nmaps - 1];
			__atomic_store_n(&nmaps, nmaps - 1, __ATOMIC_RELAXED);
			continue;
		}
		i++;
	}
	pthread_mutex_unlock(&lock);
}

uint64_t sg_mappings_swept(dev_t dev, ino_t ino)
{
	uint64_t bytes = 0;

	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < nmaps; i++) {
		if (maps[i].dev == dev && maps[i].ino == ino && !maps[i].swept) {
			maps[i].swept = true;
			bytes += maps[i].len;
		}
	}
	pthread_mutex_unlock(&lock);
	sg_count(mapped_bytes, bytes);
	return bytes;
}

int sg_mappings_any(void)
{
	return __atomic_load_n(&nmaps, __ATOMIC_RELAXED) != 0;
}

void sg_mappings_lock(void)
{
	pthread_mutex_lock(&lock);
}

void sg_mappings_unlock(void)
{
	pthread_mutex_unlock(&lock);
}

/* In a fork child: mappings and fds survive a fork and keep their identity,
 * but the swept flags describe the parent's sweeps, whose counters the child
 * does not inherit. */
void sg_mappings_after_fork(void)
{
	for (size_t i = 0; i < nmaps; i++)
		maps[i].swept = false;
}
