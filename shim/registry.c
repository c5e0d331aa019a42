#include "registry.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "hash.h"
#include "htable.h"
#include "siphash.h"
#include "journal_writer.h"

/* A request whose marker was seen: a segment created for it later is a
 * late put.  Kept until the marker expires. */
struct aborted {
	struct sg_hnode node;
	time_t at;
	char id[];
};

/* The path index hashes a path's name only (root/name: the root is one
 * of a few, and the name tells files apart) and compares whole paths. */
static uint64_t path_hash(const char *path, size_t name_off, size_t name_len)
{
	return sg_table_hash(path + name_off, name_len);
}

static bool is_path(const struct sg_hnode *node, const void *path)
{
	return strcmp(sg_hnode_entry(node, struct sg_segment, by_path)->path, path) == 0;
}

static bool is_request(const struct sg_hnode *node, const void *id)
{
	return strcmp(sg_hnode_entry(node, struct aborted, node)->id, id) == 0;
}

#define FIRST_BUCKETS 64

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
/* Segments by path, aborted requests by ID. */
static struct sg_htable by_path, aborted;
/* The request index: as many buckets as by_path, chains of segments.  Not
 * an sg_htable: a segment leaves it alone (the program unlinks one), which
 * a doubly linked chain makes O(1) however many segments its request has. */
static struct sg_segment **by_request;
static size_t request_buckets;
static size_t prune_cursor;

/* Segments not in the request index yet, oldest first, chained as its
 * buckets are.  Hashing a request under the table's key costs about as
 * much as the rest of a record: a segment unlinked before PENDING_MAX
 * newer ones are made (most are) never pays it, the oldest is indexed
 * when one more would wait, and an abort indexes at most PENDING_MAX. */
#define PENDING_MAX 256
static struct sg_segment *pending, **pending_tail = &pending;
static size_t npending;

/* Requests that may be aborted: a bit per value of an unkeyed hash of the
 * ID, set for every abort remembered.  A clear bit proves a new segment's
 * request is not aborted without the keyed hash; a set one (its abort, or
 * that of an ID whose unkeyed hash collides, which anyone can arrange)
 * costs the keyed hash and the exact lookup, as every record once did. */
#define MAYBE_BITS 16384
static uint64_t maybe_aborted[MAYBE_BITS / 64];

/* Segments given back (unlinked by the program, swept), kept for the next
 * creations, linked by next_of_request: a creation takes one under the lock
 * it records under, rather than calling malloc, and an unlink does not
 * call free.  At most SPARE_MAX, so that a burst of unlinks gives its
 * memory back. */
#define SPARE_MAX 16
static struct sg_segment *spare;
static unsigned spares;

/* A segment of at least size bytes: the last one given back, else a new
 * one (NULL: out of memory).  Under the lock. */
static struct sg_segment *segment_new(size_t size)
{
	struct sg_segment *seg = spare;

	if (seg && seg->size >= size) {
		spare = seg->next_of_request;
		spares--;
		return seg;
	}
	if ((seg = malloc(size)))
		seg->size = size;
	return seg;
}

/* Under the lock. */
static void segment_free(struct sg_segment *seg)
{
	if (spares == SPARE_MAX) {
		free(seg);
		return;
	}
	seg->next_of_request = spare;
	spare = seg;
	spares++;
}

static struct sg_segment *segment_of(struct sg_hnode *node)
{
	return sg_hnode_entry(node, struct sg_segment, by_path);
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
	size_t n = request_buckets ? request_buckets * 2 : FIRST_BUCKETS;
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

static void unlink_request(struct sg_segment *seg)
{
	*seg->req_prev = seg->req_next;
	if (seg->req_next)
		seg->req_next->req_prev = seg->req_prev;
	else if (seg->pending)
		pending_tail = seg->req_prev;
	if (seg->pending) {
		seg->pending = false;
		npending--;
	}
}

static void append_pending(struct sg_segment *seg)
{
	seg->req_next = NULL;
	seg->req_prev = pending_tail;
	*pending_tail = seg;
	pending_tail = &seg->req_next;
	seg->pending = true;
	npending++;
}

/* seg, pending, moves to the request index. */
static void index_request(struct sg_segment *seg)
{
	unlink_request(seg);
	seg->req_hash = sg_table_hash_str(seg->request);
	link_request(&by_request[seg->req_hash & (request_buckets - 1)], seg);
}

static size_t maybe_bit(const char *id, size_t len)
{
	return (size_t)(sg_hash_mem(id, len) & (MAYBE_BITS - 1));
}

static bool maybe_aborted_test(size_t bit)
{
	return maybe_aborted[bit / 64] >> (bit % 64) & 1;
}

static void maybe_aborted_set(const char *id)
{
	size_t bit = maybe_bit(id, strlen(id));

	maybe_aborted[bit / 64] |= 1ull << (bit % 64);
}

static bool aborted_already(const char *id, uint64_t h)
{
	return sg_htable_find(&aborted, h, is_request, id) != NULL;
}

/* Takes the segment in slot (of the path index) out of both indexes. */
static void detach_at(struct sg_hnode **slot)
{
	unlink_request(segment_of(sg_htable_remove_at(&by_path, slot)));
}

static void detach(struct sg_segment *seg)
{
	detach_at(sg_htable_slot(&by_path, seg->by_path.hash, is_path, seg->path));
}

/* A detached segment is no longer this process's to speak for: its record
 * in the ownership journal goes. */
static void release(struct sg_segment *seg)
{
	sg_jw_release(seg->journal_slot);
	seg->journal_slot = 0;
}

int sg_registry_add(const struct sg_new_file *f)
{
	size_t plen = f->name_off + f->name_len, rlen = f->req_len;
	uint64_t hash = path_hash(f->path, f->name_off, f->name_len);
	size_t bit = maybe_bit(f->req, rlen);
	struct sg_segment *seg = NULL;
	struct sg_hnode **slot;
	int ret = -1;

	pthread_mutex_lock(&lock);
	if (sg_htable_reserve(&by_path, FIRST_BUCKETS) < 0 || request_room() < 0 ||
	    !(seg = segment_new(sizeof(*seg) + plen + 1 + rlen + 1)))
		goto out;
	memcpy(seg->path, f->path, plen + 1);
	memcpy(seg->path + plen + 1, f->req, rlen);
	seg->path[plen + 1 + rlen] = '\0';
	seg->request = seg->path + plen + 1;
	seg->by_path.hash = hash;
	seg->dev = f->dev;
	seg->ino = f->ino;
	slot = sg_htable_slot(&by_path, seg->by_path.hash, is_path, seg->path);
	if (*slot) { /* an older file of that name, since unlinked by someone else */
		struct sg_segment *old = segment_of(*slot);
		detach_at(slot);
		release(old);
		segment_free(old);
	}
	/* Under the lock, so that no forgetting can come before it. */
	seg->journal_slot = sg_jw_record(f);
	sg_htable_insert_at(&by_path, slot, &seg->by_path);
	ret = SG_ADDED;
	seg->pending = false; /* (a new or reused entry: whatever it held) */
	if (maybe_aborted_test(bit)) {
		seg->req_hash = sg_table_hash(seg->request, rlen);
		link_request(&by_request[seg->req_hash & (request_buckets - 1)], seg);
		if (aborted_already(seg->request, seg->req_hash))
			ret = SG_ADDED_ABORTED;
	} else {
		append_pending(seg);
		if (npending > PENDING_MAX)
			index_request(pending);
	}
out:
	pthread_mutex_unlock(&lock);
	return ret;
}

/* The entry of path, detached and its record released; under the lock. */
static struct sg_segment *take(const char *path, uint64_t h)
{
	struct sg_segment *seg = NULL;

	if (by_path.count) {
		struct sg_hnode **slot = sg_htable_slot(&by_path, h, is_path, path);
		if (*slot) {
			seg = segment_of(*slot);
			detach_at(slot);
			release(seg);
		}
	}
	return seg;
}

struct sg_segment *sg_registry_take(const char *path, size_t name_off)
{
	uint64_t h = path_hash(path, name_off, strlen(path + name_off));
	struct sg_segment *seg;

	pthread_mutex_lock(&lock);
	seg = take(path, h);
	pthread_mutex_unlock(&lock);
	return seg;
}

void sg_registry_forget_path(const char *path, size_t name_off)
{
	uint64_t h = path_hash(path, name_off, strlen(path + name_off));
	struct sg_segment *seg;

	pthread_mutex_lock(&lock);
	if ((seg = take(path, h)))
		segment_free(seg);
	pthread_mutex_unlock(&lock);
}

/* Remembers request as aborted at now; false when out of memory. */
static bool remember_abort(const char *request, uint64_t h, time_t now)
{
	struct sg_hnode **slot;
	struct aborted *a;
	size_t len = strlen(request) + 1;

	maybe_aborted_set(request);
	if (sg_htable_reserve(&aborted, FIRST_BUCKETS) < 0)
		return false;
	slot = sg_htable_slot(&aborted, h, is_request, request);
	if (*slot) {
		a = sg_hnode_entry(*slot, struct aborted, node);
	} else {
		if (!(a = malloc(sizeof(*a) + len)))
			return false;
		a->node.hash = h;
		memcpy(a->id, request, len);
		sg_htable_insert_at(&aborted, slot, &a->node);
	}
	a->at = now;
	return true;
}

struct sg_segment *sg_registry_abort(const char *request, time_t now)
{
	uint64_t h = sg_table_hash_str(request);
	struct sg_segment *list = NULL;

	pthread_mutex_lock(&lock);
	/* Without memory to remember the abort, later late puts go unseen;
	 * the segments already recorded are swept all the same. */
	remember_abort(request, h, now);
	if (request_buckets) {
		while (pending)
			index_request(pending);
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
	bool expired = false;

	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < aborted.nbuckets; i++) {
		for (struct sg_hnode **slot = &aborted.buckets[i]; *slot;) {
			struct aborted *a = sg_hnode_entry(*slot, struct aborted, node);
			if (a->at < cutoff) {
				free(sg_hnode_entry(sg_htable_remove_at(&aborted, slot), struct aborted, node));
				expired = true;
			} else {
				slot = &a->node.next;
			}
		}
	}
	if (expired) { /* the bits of the aborts that remain */
		memset(maybe_aborted, 0, sizeof(maybe_aborted));
		for (size_t i = 0; i < aborted.nbuckets; i++)
			for (struct sg_hnode *n = aborted.buckets[i]; n; n = n->next)
				maybe_aborted_set(sg_hnode_entry(n, struct aborted, node)->id);
	}
	pthread_mutex_unlock(&lock);
}

void sg_registry_prune(size_t max, bool (*gone)(const struct sg_segment *seg))
{
	pthread_mutex_lock(&lock);
	for (size_t seen = 0; by_path.count && seen < max && seen < by_path.nbuckets; seen++) {
		size_t b = prune_cursor++ & (by_path.nbuckets - 1);
		for (struct sg_hnode **slot = &by_path.buckets[b]; *slot;) {
			struct sg_segment *seg = segment_of(*slot);
			if (gone(seg)) {
				detach_at(slot);
				release(seg);
				segment_free(seg);
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

void sg_registry_done(struct sg_segment *seg)
{
	pthread_mutex_lock(&lock);
	release(seg);
	segment_free(seg);
	pthread_mutex_unlock(&lock);
}

void sg_registry_exit(bool may_wait)
{
	if (may_wait)
		pthread_mutex_lock(&lock);
	else if (pthread_mutex_trylock(&lock) != 0)
		return;
	sg_jw_exit();
	pthread_mutex_unlock(&lock);
}

void sg_registry_lock(void)
{
	pthread_mutex_lock(&lock);
}

void sg_registry_unlock(void)
{
	pthread_mutex_unlock(&lock);
}

static void free_segment(struct sg_hnode *node)
{
	free(segment_of(node));
}

static void free_aborted(struct sg_hnode *node)
{
	free(sg_hnode_entry(node, struct aborted, node));
}

void sg_registry_abandon(void)
{
	pthread_mutex_init(&lock, NULL);
	by_path = (struct sg_htable){0};
	aborted = (struct sg_htable){0};
	by_request = NULL;
	request_buckets = 0;
	pending = NULL;
	pending_tail = &pending;
	npending = 0;
	memset(maybe_aborted, 0, sizeof(maybe_aborted));
	spare = NULL;
	spares = 0;
}

void sg_registry_forget_all(void)
{
	sg_htable_clear(&by_path, free_segment);
	sg_htable_clear(&aborted, free_aborted);
	free(by_request);
	by_request = NULL;
	request_buckets = 0;
	pending = NULL;
	pending_tail = &pending;
	npending = 0;
	memset(maybe_aborted, 0, sizeof(maybe_aborted));
	while (spare) {
		struct sg_segment *next = spare->next_of_request;
		free(spare);
		spare = next;
	}
	spares = 0;
}
