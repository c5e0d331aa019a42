#include "registry.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "hash.h"

struct sg_request {
	struct sg_request *next; /* hash chain; must stay first */
	struct sg_segment *segments;
	time_t aborted_at; /* 0: not aborted */
	char id[];
};

struct table {
	void **buckets;
	size_t nbuckets, count;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct table by_path, by_request;
static size_t prune_cursor;

/* Both kinds of node keep their chain pointer first, so one resize serves. */
static void **chain_of(void *node)
{
	return (void **)node;
}

static const char *path_key(void *node)
{
	return ((struct sg_segment *)node)->path;
}

static const char *request_key(void *node)
{
	return ((struct sg_request *)node)->id;
}

static int grow(struct table *t, const char *(*key)(void *))
{
	size_t n = t->nbuckets ? t->nbuckets * 2 : 64;
	void **b = calloc(n, sizeof(*b));

	if (!b)
		return -1;
	for (size_t i = 0; i < t->nbuckets; i++) {
		for (void *node = t->buckets[i], *next; node; node = next) {
			void **slot = &b[sg_hash_str(key(node)) & (n - 1)];
			next = *chain_of(node);
			*chain_of(node) = *slot;
			*slot = node;
		}
	}
	free(t->buckets);
	t->buckets = b;
	t->nbuckets = n;
	return 0;
}

/* Slot holding the node with that key, or the empty slot ending its chain. */
static void **find(struct table *t, const char *k, const char *(*key)(void *))
{
	void **slot = &t->buckets[sg_hash_str(k) & (t->nbuckets - 1)];

	while (*slot && strcmp(key(*slot), k) != 0)
		slot = chain_of(*slot);
	return slot;
}

/* Counts change under the lock, but sg_registry_count() reads them without
 * it (the unlink wrappers' fast path): atomics keep that race-free. */
static void count_add(struct table *t, long d)
{
	__atomic_add_fetch(&t->count, (size_t)d, __ATOMIC_RELAXED);
}

static int make_room(struct table *t, const char *(*key)(void *))
{
	return t->count + 1 > t->nbuckets ? grow(t, key) : 0;
}

static void drop_request(struct sg_request *req)
{
	void **rslot = find(&by_request, req->id, request_key);

	*rslot = req->next;
	count_add(&by_request, -1);
	free(req);
}

/* The request entry for id, created if missing; NULL when out of memory. */
static struct sg_request *request_entry(const char *id)
{
	size_t len = strlen(id) + 1;
	void **slot;

	if (make_room(&by_request, request_key) < 0)
		return NULL;
	slot = find(&by_request, id, request_key);
	if (!*slot) {
		struct sg_request *req = malloc(sizeof(*req) + len);
		if (!req)
			return NULL;
		req->next = NULL;
		req->segments = NULL;
		req->aborted_at = 0;
		memcpy(req->id, id, len);
		*slot = req;
		count_add(&by_request, 1);
	}
	return *slot;
}

/* Takes seg out of both indexes; frees its request with the last segment
 * unless the request is remembered as aborted. */
static void detach(struct sg_segment *seg)
{
	void **slot = find(&by_path, seg->path, path_key);
	struct sg_request *req = seg->request;

	*slot = seg->next_of_path;
	count_add(&by_path, -1);
	*seg->prev_of_request = seg->next_of_request;
	if (seg->next_of_request)
		seg->next_of_request->prev_of_request = seg->prev_of_request;
	if (!req->segments && !req->aborted_at)
		drop_request(req);
}

int sg_registry_add(const char *path, dev_t dev, ino_t ino, const char *request)
{
	size_t plen = strlen(path) + 1;
	struct sg_segment *seg = malloc(sizeof(*seg) + plen);
	struct sg_request *req;
	int ret = -1;

	if (!seg)
		return -1;
	memcpy(seg->path, path, plen);
	seg->dev = dev;
	seg->ino = ino;

	pthread_mutex_lock(&lock);
	if (make_room(&by_path, path_key) < 0)
		goto out;
	void **slot = find(&by_path, path, path_key);
	if (*slot) { /* an older file of that name, since unlinked by someone else */
		struct sg_segment *old = *slot;
		detach(old);
		free(old);
	}
	if (!(req = request_entry(request)))
		goto out;
	seg->request = req;
	seg->next_of_request = req->segments;
	seg->prev_of_request = &req->segments;
	if (req->segments)
		req->segments->prev_of_request = &seg->next_of_request;
	req->segments = seg;
	slot = find(&by_path, path, path_key);
	seg->next_of_path = NULL;
	*slot = seg;
	count_add(&by_path, 1);
	seg = NULL;
	ret = req->aborted_at ? SG_ADDED_ABORTED : SG_ADDED;
out:
	pthread_mutex_unlock(&lock);
	free(seg);
	return ret;
}

void sg_registry_forget_path(const char *path)
{
	pthread_mutex_lock(&lock);
	if (by_path.count) {
		struct sg_segment *seg = *find(&by_path, path, path_key);
		if (seg) {
			detach(seg);
			free(seg);
		}
	}
	pthread_mutex_unlock(&lock);
}

struct sg_segment *sg_registry_abort(const char *request, time_t now)
{
	struct sg_segment *list = NULL;
	struct sg_request *req;

	pthread_mutex_lock(&lock);
	req = request_entry(request);
	if (req) {
		req->aborted_at = now;
		while (req->segments) {
			struct sg_segment *seg = req->segments;

			detach(seg);
			seg->next_of_request = list;
			list = seg;
		}
	}
	pthread_mutex_unlock(&lock);
	return list;
}

void sg_registry_expire_aborts(time_t cutoff)
{
	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < by_request.nbuckets; i++) {
		for (struct sg_request *req = by_request.buckets[i], *next; req; req = next) {
			next = req->next;
			if (req->aborted_at && req->aborted_at < cutoff && !req->segments)
				drop_request(req);
		}
	}
	pthread_mutex_unlock(&lock);
}

void sg_registry_prune(size_t max)
{
	pthread_mutex_lock(&lock);
	for (size_t seen = 0; by_path.count && seen < max && seen < by_path.nbuckets; seen++) {
		size_t b = prune_cursor++ & (by_path.nbuckets - 1);
		struct sg_segment *seg = by_path.buckets[b], *next;

		for (; seg; seg = next) {
			struct stat st;
			next = seg->next_of_path;
			if (lstat(seg->path, &st) < 0 || st.st_dev != seg->dev || st.st_ino != seg->ino) {
				detach(seg);
				free(seg);
			}
		}
	}
	pthread_mutex_unlock(&lock);
}

size_t sg_registry_count(void)
{
	return __atomic_load_n(&by_path.count, __ATOMIC_RELAXED);
}

void sg_registry_lock(void)
{
	pthread_mutex_lock(&lock);
}

void sg_registry_unlock(void)
{
	pthread_mutex_unlock(&lock);
}

void sg_registry_forget_all(void)
{
	for (size_t i = 0; i < by_path.nbuckets; i++) {
		for (struct sg_segment *seg = by_path.buckets[i], *next; seg; seg = next) {
			next = seg->next_of_path;
			free(seg);
		}
	}
	for (size_t i = 0; i < by_request.nbuckets; i++) {
		for (struct sg_request *req = by_request.buckets[i], *next; req; req = next) {
			next = req->next;
			free(req);
		}
	}
	free(by_path.buckets);
	free(by_request.buckets);
	memset(&by_path, 0, sizeof(by_path));
	memset(&by_request, 0, sizeof(by_request));
}
