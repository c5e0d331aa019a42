#include "registry.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "hash.h"

struct sg_request {
	struct sg_chain by_id; /* must stay first */
	struct sg_segment *segments;
	time_t aborted_at; /* 0: not aborted */
	char id[];
};

struct table {
	struct sg_chain **buckets;
	size_t nbuckets, count;
	/* The node's key: both kinds of node start with their chain. */
	const char *(*key)(const struct sg_chain *node);
};

static const char *path_key(const struct sg_chain *node)
{
	return ((const struct sg_segment *)node)->path;
}

static const char *request_key(const struct sg_chain *node)
{
	return ((const struct sg_request *)node)->id;
}

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct table by_path = {.key = path_key}, by_request = {.key = request_key};
static size_t prune_cursor;

static int grow(struct table *t)
{
	size_t n = t->nbuckets ? t->nbuckets * 2 : 64;
	struct sg_chain **b = calloc(n, sizeof(*b));

	if (!b)
		return -1;
	for (size_t i = 0; i < t->nbuckets; i++) {
		for (struct sg_chain *node = t->buckets[i], *next; node; node = next) {
			struct sg_chain **slot = &b[node->hash & (n - 1)];
			next = node->next;
			node->next = *slot;
			*slot = node;
		}
	}
	free(t->buckets);
	t->buckets = b;
	t->nbuckets = n;
	return 0;
}

/* Slot holding the node with key k (whose hash is h), or the empty slot
 * ending its chain. */
static struct sg_chain **find(struct table *t, const char *k, uint64_t h)
{
	struct sg_chain **slot = &t->buckets[h & (t->nbuckets - 1)];

	while (*slot && ((*slot)->hash != h || strcmp(t->key(*slot), k) != 0))
		slot = &(*slot)->next;
	return slot;
}

/* Counts change under the lock, but sg_registry_count() reads them without
 * it (the unlink wrappers' fast path): atomics keep that race-free. */
static void count_add(struct table *t, long d)
{
	__atomic_add_fetch(&t->count, (size_t)d, __ATOMIC_RELAXED);
}

static int make_room(struct table *t)
{
	return t->count + 1 > t->nbuckets ? grow(t) : 0;
}

static void drop_request(struct sg_request *req)
{
	struct sg_chain **rslot = find(&by_request, req->id, req->by_id.hash);

	*rslot = req->by_id.next;
	count_add(&by_request, -1);
	free(req);
}

/* The request entry for id, created if missing; NULL when out of memory. */
static struct sg_request *request_entry(const char *id)
{
	size_t len = strlen(id);
	uint64_t h = sg_hash_mem(id, len);
	struct sg_chain **slot;

	if (make_room(&by_request) < 0)
		return NULL;
	slot = find(&by_request, id, h);
	if (!*slot) {
		struct sg_request *req = malloc(sizeof(*req) + len + 1);
		if (!req)
			return NULL;
		req->by_id = (struct sg_chain){.next = NULL, .hash = h};
		req->segments = NULL;
		req->aborted_at = 0;
		memcpy(req->id, id, len + 1);
		*slot = &req->by_id;
		count_add(&by_request, 1);
	}
	return (struct sg_request *)*slot;
}

/* Takes the segment in slot (of the path index) out of both indexes; frees
 * its request with the last segment unless the request is remembered as
 * aborted. */
static void detach_at(struct sg_chain **slot)
{
	struct sg_segment *seg = (struct sg_segment *)*slot;
	struct sg_request *req = seg->request;

	*slot = seg->by_path.next;
	count_add(&by_path, -1);
	*seg->prev_of_request = seg->next_of_request;
	if (seg->next_of_request)
		seg->next_of_request->prev_of_request = seg->prev_of_request;
	if (!req->segments && !req->aborted_at)
		drop_request(req);
}

static void detach(struct sg_segment *seg)
{
	detach_at(find(&by_path, seg->path, seg->by_path.hash));
}

int sg_registry_add(const char *path, dev_t dev, ino_t ino, const char *request)
{
	size_t plen = strlen(path);
	struct sg_segment *seg = malloc(sizeof(*seg) + plen + 1);
	struct sg_chain **slot;
	struct sg_request *req;
	int ret = -1;

	if (!seg)
		return -1;
	memcpy(seg->path, path, plen + 1);
	seg->by_path.hash = sg_hash_mem(path, plen);
	seg->dev = dev;
	seg->ino = ino;

	pthread_mutex_lock(&lock);
	if (make_room(&by_path) < 0)
		goto out;
	slot = find(&by_path, path, seg->by_path.hash);
	if (*slot) { /* an older file of that name, since unlinked by someone else */
		struct sg_segment *old = (struct sg_segment *)*slot;
		detach_at(slot);
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
	/* Only the request index changed since the lookup: slot still holds
	 * this path's place in its chain. */
	seg->by_path.next = *slot;
	*slot = &seg->by_path;
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
	uint64_t h = sg_hash_str(path);

	pthread_mutex_lock(&lock);
	if (by_path.count) {
		struct sg_chain **slot = find(&by_path, path, h);
		struct sg_segment *seg = (struct sg_segment *)*slot;
		if (seg) {
			detach_at(slot);
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
		for (struct sg_chain *node = by_request.buckets[i], *next; node; node = next) {
			struct sg_request *req = (struct sg_request *)node;
			next = node->next;
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
		for (struct sg_chain *node = by_path.buckets[b], *next; node; node = next) {
			struct sg_segment *seg = (struct sg_segment *)node;
			struct stat st;
			next = node->next;
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
		for (struct sg_chain *node = by_path.buckets[i], *next; node; node = next) {
			next = node->next;
			free(node);
		}
	}
	for (size_t i = 0; i < by_request.nbuckets; i++) {
		for (struct sg_chain *node = by_request.buckets[i], *next; node; node = next) {
			next = node->next;
			free(node);
		}
	}
	free(by_path.buckets);
	free(by_request.buckets);
	by_path = (struct table){.key = path_key};
	by_request = (struct table){.key = request_key};
}
