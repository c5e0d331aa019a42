#include "audit_files.h"

#include <stdlib.h>
#include <string.h>

#include "hash.h"

struct req_chain {
	struct req_chain *next;
	struct audit_file *files;
	char request[];
};

struct audit_files {
	struct audit_file **buckets;
	size_t nbuckets, count, max_files;
	uint64_t over_limit;
	struct req_chain **rbuckets;
	size_t nrbuckets, nreqs;
	struct audit_file *oldest, *newest, *walk;
	struct excluded *excluded; /* open addressing, at most half full */
	size_t nexcluded, excluded_size;
};

struct excluded {
	uint32_t kdev;
	uint64_t ino;
	bool used;
};

static uint64_t hash_key(uint32_t kdev, uint64_t ino)
{
	uint64_t h = ino * 0x9e3779b97f4a7c15ull ^ kdev;
	return h ^ (h >> 29);
}

struct audit_files *audit_files_new(size_t max_files)
{
	struct audit_files *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->max_files = max_files;
	t->nbuckets = 1024;
	t->nrbuckets = 256;
	t->buckets = calloc(t->nbuckets, sizeof(*t->buckets));
	t->rbuckets = calloc(t->nrbuckets, sizeof(*t->rbuckets));
	if (!t->buckets || !t->rbuckets) {
		audit_files_free(t);
		return NULL;
	}
	return t;
}

void audit_files_free(struct audit_files *t)
{
	if (!t)
		return;
	for (size_t i = 0; t->buckets && i < t->nbuckets; i++) {
		for (struct audit_file *f = t->buckets[i], *next; f; f = next) {
			next = f->next;
			free(f->name);
			free(f->request);
			free(f);
		}
	}
	for (size_t i = 0; t->rbuckets && i < t->nrbuckets; i++) {
		for (struct req_chain *r = t->rbuckets[i], *next; r; r = next) {
			next = r->next;
			free(r);
		}
	}
	free(t->buckets);
	free(t->rbuckets);
	free(t->excluded);
	free(t);
}

struct audit_file *audit_files_find(struct audit_files *t, uint32_t kdev, uint64_t ino)
{
	struct audit_file *f = t->buckets[hash_key(kdev, ino) & (t->nbuckets - 1)];

	while (f && (f->kdev != kdev || f->ino != ino))
		f = f->next;
	return f;
}

static void grow(struct audit_files *t)
{
	size_t n = t->nbuckets * 2;
	struct audit_file **b = calloc(n, sizeof(*b));

	if (!b)
		return; /* longer chains, still correct */
	for (size_t i = 0; i < t->nbuckets; i++) {
		for (struct audit_file *f = t->buckets[i], *next; f; f = next) {
			struct audit_file **slot = &b[hash_key(f->kdev, f->ino) & (n - 1)];
			next = f->next;
			f->next = *slot;
			*slot = f;
		}
	}
	free(t->buckets);
	t->buckets = b;
	t->nbuckets = n;
}

static struct excluded *excluded_slot(struct excluded *set, size_t size, uint32_t kdev, uint64_t ino)
{
	size_t i = hash_key(kdev, ino) & (size - 1);

	while (set[i].used && (set[i].kdev != kdev || set[i].ino != ino))
		i = (i + 1) & (size - 1);
	return &set[i];
}

static bool is_excluded(const struct audit_files *t, uint32_t kdev, uint64_t ino)
{
	return t->nexcluded && excluded_slot(t->excluded, t->excluded_size, kdev, ino)->used;
}

void audit_files_exclude(struct audit_files *t, uint32_t kdev, uint64_t ino)
{
	struct audit_file *f = audit_files_find(t, kdev, ino);

	if (f) {
		audit_files_remove(t, f);
		return;
	}
	if ((t->nexcluded + 1) * 2 > t->excluded_size) {
		size_t n = t->excluded_size ? t->excluded_size * 2 : 64;
		struct excluded *set = calloc(n, sizeof(*set));
		if (!set)
			return;
		for (size_t i = 0; i < t->excluded_size; i++)
			if (t->excluded[i].used)
				*excluded_slot(set, n, t->excluded[i].kdev, t->excluded[i].ino) = t->excluded[i];
		free(t->excluded);
		t->excluded = set;
		t->excluded_size = n;
	}
	struct excluded *slot = excluded_slot(t->excluded, t->excluded_size, kdev, ino);
	if (!slot->used) {
		*slot = (struct excluded){kdev, ino, true};
		t->nexcluded++;
	}
}

void audit_files_end_exclusions(struct audit_files *t)
{
	if (t->nexcluded)
		memset(t->excluded, 0, t->excluded_size * sizeof(*t->excluded));
	t->nexcluded = 0;
}

struct audit_file *audit_files_add(struct audit_files *t, uint32_t kdev, uint64_t ino)
{
	struct audit_file *old = audit_files_find(t, kdev, ino), *f;

	if (is_excluded(t, kdev, ino))
		return NULL;
	if (t->count >= t->max_files) {
		t->over_limit++;
		return NULL;
	}
	if (!(f = calloc(1, sizeof(*f)))) {
		t->over_limit++;
		return NULL;
	}
	if (old)
		audit_files_remove(t, old); /* the number could only be reused once it was freed */
	if (t->count + 1 > t->nbuckets)
		grow(t);
	f->kdev = kdev;
	f->ino = ino;
	f->root = -1;
	f->shape = -1;
	struct audit_file **slot = &t->buckets[hash_key(kdev, ino) & (t->nbuckets - 1)];
	f->next = *slot;
	*slot = f;
	f->prev_all = t->newest;
	*(t->newest ? &t->newest->next_all : &t->oldest) = f;
	t->newest = f;
	t->count++;
	return f;
}

static struct req_chain **find_req(struct audit_files *t, const char *request)
{
	struct req_chain **slot = &t->rbuckets[sg_hash_str(request) & (t->nrbuckets - 1)];

	while (*slot && strcmp((*slot)->request, request) != 0)
		slot = &(*slot)->next;
	return slot;
}

static void grow_requests(struct audit_files *t)
{
	size_t n = t->nrbuckets * 2;
	struct req_chain **b = calloc(n, sizeof(*b));

	if (!b)
		return;
	for (size_t i = 0; i < t->nrbuckets; i++) {
		for (struct req_chain *r = t->rbuckets[i], *next; r; r = next) {
			next = r->next;
			struct req_chain **slot = &b[sg_hash_str(r->request) & (n - 1)];
			r->next = *slot;
			*slot = r;
		}
	}
	free(t->rbuckets);
	t->rbuckets = b;
	t->nrbuckets = n;
}

/* Takes f off its request's chain. */
static void unindex(struct audit_files *t, struct audit_file *f)
{
	struct req_chain *r = *find_req(t, f->request);
	struct audit_file **p = r ? &r->files : NULL;

	while (p && *p && *p != f)
		p = &(*p)->next_of_req;
	if (p && *p)
		*p = f->next_of_req;
	free(f->request);
	f->request = NULL;
	f->indexed = false;
}

void audit_files_attribute(struct audit_files *t, struct audit_file *f, const char *request,
			   enum audit_req_source source, int shape)
{
	struct req_chain **slot;
	size_t len = strlen(request) + 1;

	/* A tag beats patterns, whichever came first. */
	if (f->indexed && f->source == REQ_PATTERN && source == REQ_TAG)
		unindex(t, f);
	if (f->indexed || !(f->request = strdup(request)))
		return;
	f->source = source;
	f->shape = shape;
	if (t->nreqs + 1 > t->nrbuckets)
		grow_requests(t);
	slot = find_req(t, request);
	if (!*slot) {
		struct req_chain *r = malloc(sizeof(*r) + len);
		if (!r)
			return;
		r->next = NULL;
		r->files = NULL;
		memcpy(r->request, request, len);
		*slot = r;
		t->nreqs++;
	}
	f->next_of_req = (*slot)->files;
	(*slot)->files = f;
	f->indexed = true;
}

void audit_files_unattribute(struct audit_files *t, struct audit_file *f)
{
	if (f->indexed)
		unindex(t, f);
	f->source = REQ_NONE;
	f->shape = -1;
}

void audit_files_remove(struct audit_files *t, struct audit_file *f)
{
	struct audit_file **p = &t->buckets[hash_key(f->kdev, f->ino) & (t->nbuckets - 1)];

	while (*p && *p != f)
		p = &(*p)->next;
	if (*p)
		*p = f->next;
	if (t->walk == f)
		t->walk = f->next_all;
	*(f->prev_all ? &f->prev_all->next_all : &t->oldest) = f->next_all;
	*(f->next_all ? &f->next_all->prev_all : &t->newest) = f->prev_all;
	if (f->indexed)
		unindex(t, f);
	t->count--;
	free(f->name);
	free(f);
}

void audit_files_of_request(struct audit_files *t, const char *request, void (*fn)(struct audit_file *, void *),
			    void *ctx)
{
	struct req_chain *r = *find_req(t, request);

	for (struct audit_file *f = r ? r->files : NULL; f; f = f->next_of_req)
		fn(f, ctx);
}

void audit_files_walk_begin(struct audit_files *t)
{
	t->walk = t->oldest;
}

struct audit_file *audit_files_newest(struct audit_files *t)
{
	return t->newest;
}

struct audit_file *audit_files_walk_next(struct audit_files *t)
{
	struct audit_file *f = t->walk;

	if (f)
		t->walk = f->next_all;
	return f;
}

size_t audit_files_count(const struct audit_files *t)
{
	return t->count;
}

uint64_t audit_files_over_limit(const struct audit_files *t)
{
	return t->over_limit;
}
