#include "registry.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "hash.h"

/* A request whose marker was seen: a segment created for it later is a
 * late put.  Kept until the marker expires. */
struct aborted {
	struct sg_chain chain; /* must stay first */
	time_t at;
	char id[];
};

/* Hash tables of sg_chain nodes: segments by path, aborted requests by ID. */
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

static const char *aborted_key(const struct sg_chain *node)
{
	return ((const struct aborted *)node)->id;
}

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct table by_path = {.key = path_key}, aborted = {.key = aborted_key};
/* The request index: as many buckets as by_path, chains of segments. */
static struct sg_segment **by_request;
static size_t request_buckets;
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

static void link_request(struct sg_segment **head, struct sg_segment *seg)
{
	seg->req_next = *head;
	seg->req_prev = head;
	if (*head)
		(*head)->req_prev = &seg->req_next;
	*head = seg;
}

/* The request index keeps pace with the path index. */
static int request_room(void)
{
	size_t n = request_buckets ? request_buckets * 2 : 64;
	struct sg_segment **b;

	if (by_path.count + 1 <= request_buckets)
		return 0;
	if (!(b = calloc(n, sizeof(*b))))
		return -1;
	for (size_t i = 0; i < request_buckets; i++) {
		while (by_request[i]) {
			struct sg_segment *seg = by_request[i];
			by_request[i] = seg->req_next;
			link_request(&b[seg->req_hash & (n - 1)], seg);
		}
	}
	free(by_request);
	by_request = b;
	request_buckets = n;
	return 0;
}

static struct aborted *find_aborted(const char *id, uint64_t h)
{
	return aborted.count ? (struct aborted *)*find(&aborted, id, h) : NULL;
}

/* Takes the segment in slot (of the path index) out of both indexes. */
static void detach_at(struct sg_chain **slot)
{
	struct sg_segment *seg = (struct sg_segment *)*slot;

	*slot = seg->by_path.next;
	count_add(&by_path, -1);
	*seg->req_prev = seg->req_next;
	if (seg->req_next)
		seg->req_next->req_prev = seg->req_prev;
}

static void detach(struct sg_segment *seg)
{
	detach_at(find(&by_path, seg->path, seg->by_path.hash));
}

int sg_registry_add(const char *path, dev_t dev, ino_t ino, const char *request)
{
	size_t plen = strlen(path), rlen = strlen(request);
	struct sg_segment *seg = malloc(sizeof(*seg) + plen + 1 + rlen + 1);
	struct sg_chain **slot;
	int ret = -1;

	if (!seg)
		return -1;
	memcpy(seg->path, path, plen + 1);
	memcpy(seg->path + plen + 1, request, rlen + 1);
	seg->request = seg->path + plen + 1;
	seg->by_path.hash = sg_hash_mem(path, plen);
	seg->req_hash = sg_hash_mem(request, rlen);
	seg->dev = dev;
	seg->ino = ino;

	pthread_mutex_lock(&lock);
	if (make_room(&by_path) < 0 || request_room() < 0)
		goto out;
	slot = find(&by_path, path, seg->by_path.hash);
	if (*slot) { /* an older file of that name, since unlinked by someone else */
		struct sg_segment *old = (struct sg_segment *)*slot;
		detach_at(slot);
		free(old);
	}
	seg->by_path.next = *slot;
	*slot = &seg->by_path;
	count_add(&by_path, 1);
	link_request(&by_request[seg->req_hash & (request_buckets - 1)], seg);
	ret = find_aborted(request, seg->req_hash) ? SG_ADDED_ABORTED : SG_ADDED;
	seg = NULL;
out:
	pthread_mutex_unlock(&lock);
	free(seg);
	return ret;
}

struct sg_segment *sg_registry_take(const char *path)
{
	uint64_t h = sg_hash_str(path);
	struct sg_segment *seg = NULL;

	pthread_mutex_lock(&lock);
	if (by_path.count) {
		struct sg_chain **slot = find(&by_path, path, h);
		if ((seg = (struct sg_segment *)*slot))
			detach_at(slot);
	}
	pthread_mutex_unlock(&lock);
	return seg;
}

void sg_registry_forget_path(const char *path)
{
	free(sg_registry_take(path));
}

/* Remembers request as aborted at now; false when out of memory. */
static bool remember_abort(const char *request, uint64_t h, time_t now)
{
	struct aborted *a = find_aborted(request, h);
	size_t len = strlen(request) + 1;

	if (!a) {
		if (make_room(&aborted) < 0 || !(a = malloc(sizeof(*a) + len)))
			return false;
		a->chain.hash = h;
		memcpy(a->id, request, len);
		a->chain.next = NULL;
		*find(&aborted, request, h) = &a->chain;
		count_add(&aborted, 1);
	}
	a->at = now;
	return true;
}

struct sg_segment *sg_registry_abort(const char *request, time_t now)
{
	uint64_t h = sg_hash_str(request);
	struct sg_segment *list = NULL;

	pthread_mutex_lock(&lock);
	/* Without memory to remember the abort, later late puts go unseen;
	 * the segments already recorded are swept all the same. */
	remember_abort(request, h, now);
	if (request_buckets) {
		for (struct sg_segment *seg = by_request[h & (request_buckets - 1)], *next; seg; seg = next) {
			next = seg->req_next;
			if (seg->req_hash == h && strcmp(seg->request, request) == 0) {
				detach(seg);
				seg->next_of_request = list;
				list = seg;
			}
		}
	}
	pthread_mutex_unlock(&lock);
	return list;
}

void sg_registry_expire_aborts(time_t cutoff)
{
	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < aborted.nbuckets; i++) {
		for (struct sg_chain **slot = &aborted.buckets[i]; *slot;) {
			struct aborted *a = (struct aborted *)*slot;
			if (a->at < cutoff) {
				*slot = a->chain.next;
				count_add(&aborted, -1);
				free(a);
			} else {
				slot = &a->chain.next;
			}
		}
	}
	pthread_mutex_unlock(&lock);
}

void sg_registry_prune(size_t max)
{
	pthread_mutex_lock(&lock);
	for (size_t seen = 0; by_path.count && seen < max && seen < by_path.nbuckets; seen++) {
		size_t b = prune_cursor++ & (by_path.nbuckets - 1);
		for (struct sg_chain **slot = &by_path.buckets[b]; *slot;) {
			struct sg_segment *seg = (struct sg_segment *)*slot;
			struct stat st;
			if (lstat(seg->path, &st) < 0 || st.st_dev != seg->dev || st.st_ino != seg->ino) {
				detach_at(slot);
				free(seg);
			} else {
				slot = &seg->by_path.next;
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

static void free_all(struct table *t)
{
	for (size_t i = 0; i < t->nbuckets; i++) {
		for (struct sg_chain *node = t->buckets[i], *next; node; node = next) {
			next = node->next;
			free(node);
		}
	}
	free(t->buckets);
	*t = (struct table){.key = t->key};
}

void sg_registry_forget_all(void)
{
	free_all(&by_path);
	free_all(&aborted);
	free(by_request);
	by_request = NULL;
	request_buckets = 0;
}
