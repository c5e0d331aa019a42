#include "mappings.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "shim.h"

struct tracked_fd {
	int fd;
	dev_t dev;
	ino_t ino;
};

struct mapping {
	uintptr_t start;
	size_t len;
	dev_t dev;
	ino_t ino;
	bool swept;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
/* Keyed by fd number, so the table is bounded by the fd numbers in use. */
static struct tracked_fd *fds;
static size_t nfds, fds_cap;
static struct mapping *maps;
static size_t nmaps, maps_cap;

static bool reserve(void **arr, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return true;
	size_t n = *cap ? *cap * 2 : 16;
	void *p = realloc(*arr, n * elem);
	if (!p)
		return false;
	*arr = p;
	*cap = n;
	return true;
}

void sg_mappings_track_fd(int fd, dev_t dev, ino_t ino)
{
	size_t i;

	pthread_mutex_lock(&lock);
	for (i = 0; i < nfds && fds[i].fd != fd; i++)
		;
	if (i < nfds || reserve((void **)&fds, &fds_cap, nfds + 1, sizeof(*fds))) {
		fds[i] = (struct tracked_fd){fd, dev, ino};
		if (i == nfds)
			__atomic_store_n(&nfds, nfds + 1, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&lock);
}

void sg_mappings_on_mmap(void *addr, size_t len, int fd)
{
	struct stat st;
	size_t i;

	pthread_mutex_lock(&lock);
	for (i = 0; i < nfds && fds[i].fd != fd; i++)
		;
	/* The fd may have been closed and its number reused since: check. */
	if (i < nfds && fstat(fd, &st) == 0 && st.st_dev == fds[i].dev && st.st_ino == fds[i].ino &&
	    reserve((void **)&maps, &maps_cap, nmaps + 1, sizeof(*maps))) {
		maps[nmaps] = (struct mapping){(uintptr_t)addr, len, st.st_dev, st.st_ino, false};
		__atomic_store_n(&nmaps, nmaps + 1, __ATOMIC_RELAXED);
	}
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

int sg_mappings_any_fd(void)
{
	return __atomic_load_n(&nfds, __ATOMIC_RELAXED) != 0;
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
