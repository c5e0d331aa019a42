#include "audit_files.h"
#include "audit_inode_set.h"
#include "audit_strings.h"
#include "audit_workloads.h"

#include <stdlib.h>
#include <string.h>

#include "siphash.h"
#include "htable.h"
#include "config.h"
#include "pattern.h"

#include "audit_poison.h"

_Static_assert(SG_MAX_PATTERNS <= INT8_MAX, "a pattern index fits a record's int8_t");
_Static_assert(AUDIT_FILE_REQUEST_MAX > UINT8_MAX, "a request spelled by a name (its length a uint8_t) fits, with its NUL");

/* Records are slots of one size in slabs of SLAB_SLOTS, numbered slab <<
 * SLAB_SHIFT | slot; a slab lives as long as the table, and a freed slot
 * is the next one taken.  Links of 32 bits, and no hash kept in a record
 * (the buckets' growth hashes the keys again): half the bytes a pointer's
 * chained node takes. */
#define SLAB_SHIFT 12
#define SLAB_SLOTS (1u << SLAB_SHIFT)

/* A request of more than one file: its files, oldest first, and its one copy
 * of the request, freed with its last file.  Files mostly go in the order
 * they came (a pipeline consumes its segments), so the one to take off the
 * chain is mostly at its head.  A request of one file (most requests of a
 * pipeline that names a file per request) costs no chain: it is kept by
 * the file, its chain made when a second file comes. */
struct req_chain {
	struct sg_hnode node;
	uint32_t first, last; /* files, by next_of_req */
	char request[];
};

/* Buckets of records linked by number: a power of two of them, at least as
 * many as records. */
struct buckets {
	uint32_t *heads;
	size_t n, count;
};

struct audit_files {
	struct audit_file **slabs;
	size_t nslabs, slabs_room;
	uint32_t carved;    /* slots ever taken from the slabs */
	uint32_t free_slot; /* freed slots, by next */
	struct buckets files, alone; /* alone: the files that are their request's only one, by request */
	struct sg_htable requests, creators;
	struct audit_strings strings;
	size_t max_files;
	uint64_t over_limit;
	uint32_t oldest, newest, walk;
	struct audit_inode_set excluded;
};

static struct audit_file *file_at(const struct audit_files *t, uint32_t i)
{
	return i == AUDIT_FILE_NONE ? NULL : &t->slabs[i >> SLAB_SHIFT][i & (SLAB_SLOTS - 1)];
}

/* One more slab; false when memory is short. */
static bool add_slab(struct audit_files *t)
{
	struct audit_file *slab;

	if (t->nslabs == t->slabs_room) {
		size_t room = t->slabs_room ? 2 * t->slabs_room : 16;
		struct audit_file **slabs = realloc(t->slabs, room * sizeof(*slabs));
		if (!slabs)
			return false;
		t->slabs = slabs;
		t->slabs_room = room;
	}
	if (!(slab = malloc(SLAB_SLOTS * sizeof(*slab))))
		return false;
	POISON(slab, SLAB_SLOTS * sizeof(*slab));
	t->slabs[t->nslabs++] = slab;
	return true;
}

/* A slot for a record, zeroed but for its number; NULL when memory is short
 * or the numbers ran out. */
static struct audit_file *take_slot(struct audit_files *t)
{
	struct audit_file *f;
	uint32_t i;

	if (t->free_slot != AUDIT_FILE_NONE) {
		i = t->free_slot;
		f = file_at(t, i);
		UNPOISON(f, sizeof(*f));
		t->free_slot = f->next;
	} else {
		if (t->carved == AUDIT_FILE_NONE || (t->carved == t->nslabs * SLAB_SLOTS && !add_slab(t)))
			return NULL;
		i = t->carved++;
		f = file_at(t, i);
		UNPOISON(f, sizeof(*f));
	}
	memset(f, 0, sizeof(*f));
	f->self = i;
	return f;
}

static void put_slot(struct audit_files *t, struct audit_file *f)
{
	f->next = t->free_slot;
	t->free_slot = f->self;
	POISON(f, sizeof(*f));
	/* Its links stay readable to the free list alone. */
	UNPOISON(&f->next, sizeof(f->next));
}

/* Empty buckets, n of them (a power of two); -1 when memory is short. */
static int buckets_make(struct buckets *b, size_t n)
{
	uint32_t *heads = malloc(n * sizeof(*heads));

	if (!heads)
		return -1;
	memset(heads, 0xff, n * sizeof(*heads)); /* AUDIT_FILE_NONE */
	free(b->heads);
	b->heads = heads;
	b->n = n;
	return 0;
}

static uint32_t *file_bucket(struct audit_files *t, uint32_t kdev, uint64_t ino)
{
	return &t->files.heads[audit_inode_hash(kdev, ino) & (t->files.n - 1)];
}

/* Whether f, its request's only file, has that request. */
static bool alone_with(const struct audit_file *f, const char *request)
{
	size_t len;

	if (!f->req_in_name)
		return strcmp(f->req.copy, request) == 0;
	len = f->req.in_name.len;
	return strnlen(request, len + 1) == len && memcmp(f->name + f->req.in_name.at, request, len) == 0;
}

/* The hash of the request of f, its only file. */
static uint64_t alone_hash(const struct audit_file *f)
{
	if (f->req_in_name)
		return sg_table_hash(f->name + f->req.in_name.at, f->req.in_name.len);
	return sg_table_hash_str(f->req.copy);
}

static uint32_t *alone_bucket(struct audit_files *t, uint64_t h)
{
	return &t->alone.heads[h & (t->alone.n - 1)];
}

/* The link of file k to the next of its bucket in the table, or (by_req)
 * of its request's chain or bucket. */
static uint32_t *link_of(struct audit_files *t, uint32_t k, bool by_req)
{
	struct audit_file *f = file_at(t, k);

	return by_req ? &f->next_of_req : &f->next;
}

/* Room for one more record in b, the table's buckets or (by_req) those of
 * the files alone with their requests: twice the buckets, each record's
 * key hashed again, once there would be more records than buckets.  Memory
 * short, the buckets stay, their chains longer. */
static void buckets_reserve(struct audit_files *t, struct buckets *b, bool by_req)
{
	struct buckets old = *b;

	if (b->count + 1 <= b->n)
		return;
	b->heads = NULL;
	if (buckets_make(b, 2 * old.n) < 0) {
		*b = old;
		return;
	}
	for (size_t i = 0; i < old.n; i++) {
		for (uint32_t k = old.heads[i], next; k != AUDIT_FILE_NONE; k = next) {
			struct audit_file *f = file_at(t, k);
			uint32_t *link = link_of(t, k, by_req);
			uint64_t h = by_req ? alone_hash(f) : audit_inode_hash(f->kdev, f->ino);
			uint32_t *head = &b->heads[h & (b->n - 1)];
			next = *link;
			*link = *head;
			*head = k;
		}
	}
	free(old.heads);
}

/* Takes f out of the chain from *head; the file before it, or
 * AUDIT_FILE_NONE. */
static uint32_t unchain(struct audit_files *t, uint32_t *head, struct audit_file *f, bool by_req)
{
	uint32_t *link = head, before = AUDIT_FILE_NONE;

	while (*link != AUDIT_FILE_NONE && *link != f->self) {
		before = *link;
		link = link_of(t, *link, by_req);
	}
	if (*link == f->self)
		*link = *link_of(t, f->self, by_req);
	return before;
}

struct creator_key {
	struct audit_workload *workload;
	uint32_t tgid;
	char comm[16];
};

static bool is_creator(const struct sg_hnode *node, const void *key)
{
	const struct audit_creator *c = sg_hnode_entry(node, struct audit_creator, node);
	const struct creator_key *k = key;

	return c->tgid == k->tgid && c->workload == k->workload && memcmp(c->comm, k->comm, sizeof(c->comm)) == 0;
}

/* The creator (tgid, comm), one more file of it; NULL when memory is short. */
static const struct audit_creator *hold_creator(struct audit_files *t, uint32_t tgid, const char *comm,
					       struct audit_workload *w)
{
	struct creator_key k;
	struct sg_hnode **slot;
	struct audit_creator *c;
	uint64_t h;

	memset(&k, 0, sizeof(k)); /* its padding too: the key is hashed whole */
	k.workload = w;
	k.tgid = tgid;

	if (comm)
		strncpy(k.comm, comm, sizeof(k.comm) - 1);
	h = sg_table_hash(&k, sizeof(k));
	if (sg_htable_reserve(&t->creators, 64) < 0)
		return NULL;
	slot = sg_htable_slot(&t->creators, h, is_creator, &k);
	if (*slot) {
		c = sg_hnode_entry(*slot, struct audit_creator, node);
	} else {
		if (!(c = calloc(1, sizeof(*c))))
			return NULL;
		c->node.hash = h;
		c->tgid = tgid;
		c->workload = w;
		audit_workload_hold(w);
		memcpy(c->comm, k.comm, sizeof(c->comm));
		sg_htable_insert_at(&t->creators, slot, &c->node);
	}
	c->files++;
	return c;
}

static void release_creator(struct audit_files *t, const struct audit_creator *creator)
{
	struct audit_creator *c = (struct audit_creator *)(uintptr_t)creator;

	if (c && !--c->files) {
		sg_htable_remove(&t->creators, &c->node);
		audit_workload_release(c->workload);
		free(c);
	}
}

static bool is_request(const struct sg_hnode *node, const void *request)
{
	return strcmp(sg_hnode_entry(node, struct req_chain, node)->request, request) == 0;
}

struct audit_files *audit_files_new(size_t max_files)
{
	struct audit_files *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->max_files = max_files;
	t->free_slot = t->oldest = t->newest = t->walk = AUDIT_FILE_NONE;
	if (buckets_make(&t->files, 1024) < 0 || buckets_make(&t->alone, 256) < 0 ||
	    sg_htable_grow(&t->requests, 256) < 0 || sg_htable_grow(&t->creators, 64) < 0) {
		audit_files_free(t);
		return NULL;
	}
	return t;
}

static void free_request(struct sg_hnode *node)
{
	free(sg_hnode_entry(node, struct req_chain, node));
}

static void free_creator(struct sg_hnode *node)
{
	free(sg_hnode_entry(node, struct audit_creator, node));
}

/* Gives back f's own strings (audit_str_free knows those malloc holds). */
static void free_strings(struct audit_files *t, struct audit_file *f)
{
	if (f->name)
		audit_str_free(&t->strings, f->name);
	if (f->indexed && f->alone && !f->req_in_name)
		audit_str_free(&t->strings, f->req.copy);
}

void audit_files_free(struct audit_files *t)
{
	if (!t)
		return;
	for (struct audit_file *f = file_at(t, t->oldest); f; f = file_at(t, f->newer))
		free_strings(t, f);
	for (size_t i = 0; i < t->nslabs; i++) {
		UNPOISON(t->slabs[i], SLAB_SLOTS * sizeof(*t->slabs[i]));
		free(t->slabs[i]);
	}
	free(t->slabs);
	free(t->files.heads);
	free(t->alone.heads);
	audit_str_clear(&t->strings);
	sg_htable_clear(&t->requests, free_request);
	sg_htable_clear(&t->creators, free_creator);
	audit_inode_set_free(&t->excluded);
	free(t);
}

struct audit_file *audit_files_find(struct audit_files *t, uint32_t kdev, uint64_t ino)
{
	struct audit_file *f;

	for (uint32_t k = *file_bucket(t, kdev, ino); (f = file_at(t, k)); k = f->next)
		if (f->kdev == kdev && f->ino == ino)
			return f;
	return NULL;
}

void audit_files_exclude(struct audit_files *t, uint32_t kdev, uint64_t ino)
{
	struct audit_file *f = audit_files_find(t, kdev, ino);

	if (f)
		audit_files_remove(t, f);
	else
		audit_inode_set_add(&t->excluded, kdev, ino);
}

void audit_files_end_exclusions(struct audit_files *t)
{
	audit_inode_set_clear(&t->excluded);
}

struct audit_file *audit_files_add(struct audit_files *t, uint32_t kdev, uint64_t ino, uint32_t tgid,
				   const char *comm, struct audit_workload *w)
{
	struct audit_file *old = audit_files_find(t, kdev, ino), *f;
	const struct audit_creator *c;
	uint32_t *head;

	if (audit_inode_set_has(&t->excluded, kdev, ino))
		return NULL;
	if (t->files.count >= t->max_files || !(c = hold_creator(t, tgid, comm, w))) {
		t->over_limit++;
		return NULL;
	}
	if (!(f = take_slot(t))) {
		release_creator(t, c);
		t->over_limit++;
		return NULL;
	}
	if (old)
		audit_files_remove(t, old); /* the number could only be reused once it was freed */
	buckets_reserve(t, &t->files, false);
	f->creator = c;
	f->kdev = kdev;
	f->ino = ino;
	f->root = -1;
	f->shape = -1;
	f->next_of_req = f->newer = AUDIT_FILE_NONE;
	head = file_bucket(t, kdev, ino);
	f->next = *head;
	*head = f->self;
	t->files.count++;
	f->older = t->newest;
	if (t->newest != AUDIT_FILE_NONE)
		file_at(t, t->newest)->newer = f->self;
	else
		t->oldest = f->self;
	t->newest = f->self;
	return f;
}

static struct req_chain *find_chain(struct audit_files *t, uint64_t h, const char *request)
{
	struct sg_hnode *node = sg_htable_find(&t->requests, h, is_request, request);

	return node ? sg_hnode_entry(node, struct req_chain, node) : NULL;
}

static struct audit_file *find_alone(struct audit_files *t, uint64_t h, const char *request)
{
	struct audit_file *f;

	for (uint32_t k = *alone_bucket(t, h); (f = file_at(t, k)); k = f->next_of_req)
		if (alone_with(f, request))
			return f;
	return NULL;
}

/* A new, empty chain for request (hashed h), which has none; NULL when
 * memory is short. */
static struct req_chain *new_chain(struct audit_files *t, uint64_t h, const char *request)
{
	size_t len = strlen(request) + 1;
	struct req_chain *r;

	if (sg_htable_reserve(&t->requests, 256) < 0 || !(r = malloc(sizeof(*r) + len)))
		return NULL;
	r->node.hash = h;
	r->first = r->last = AUDIT_FILE_NONE;
	memcpy(r->request, request, len);
	sg_htable_insert_at(&t->requests, sg_htable_slot(&t->requests, h, is_request, request), &r->node);
	return r;
}

static void append(struct audit_files *t, struct req_chain *r, struct audit_file *f)
{
	f->req.copy = r->request;
	f->next_of_req = AUDIT_FILE_NONE;
	if (r->last != AUDIT_FILE_NONE)
		file_at(t, r->last)->next_of_req = f->self;
	else
		r->first = f->self;
	r->last = f->self;
}

/* f, with no request, its request's only file (request hashed h): the
 * request kept as the bytes of its name that spell it, else as a string of
 * its own.  False when memory is short. */
static bool keep_alone(struct audit_files *t, struct audit_file *f, uint64_t h, const char *request)
{
	size_t len = strlen(request);
	const char *in = f->name ? memmem(f->name, strlen(f->name), request, len) : NULL;
	uint32_t *head;

	if (in && in - f->name <= UINT8_MAX && len <= UINT8_MAX) { /* its place fits the record */
		f->req.in_name.at = (uint8_t)(in - f->name);
		f->req.in_name.len = (uint8_t)len;
		f->req_in_name = true;
	} else if (!(f->req.copy = audit_str_dup(&t->strings, request))) {
		return false;
	}
	f->alone = true;
	buckets_reserve(t, &t->alone, true);
	head = alone_bucket(t, h);
	f->next_of_req = *head;
	*head = f->self;
	t->alone.count++;
	return true;
}

/* Takes f, its request's only file (request hashed h), out of those: its
 * request is no more. */
static void leave_alone(struct audit_files *t, struct audit_file *f, uint64_t h)
{
	unchain(t, alone_bucket(t, h), f, true);
	t->alone.count--;
	if (!f->req_in_name)
		audit_str_free(&t->strings, f->req.copy);
	f->alone = f->req_in_name = false;
	f->req.copy = NULL;
}

/* Takes f off its request's index, and the chain away with its last file. */
static void unindex(struct audit_files *t, struct audit_file *f)
{
	if (f->alone) {
		leave_alone(t, f, alone_hash(f));
	} else {
		/* f->req.copy is the chain's own. */
		struct req_chain *r = (struct req_chain *)(uintptr_t)(f->req.copy - offsetof(struct req_chain, request));
		uint32_t before = unchain(t, &r->first, f, true);

		if (r->last == f->self)
			r->last = before;
		if (r->first == AUDIT_FILE_NONE) {
			sg_htable_remove(&t->requests, &r->node);
			free(r);
		}
		f->req.copy = NULL;
	}
	f->indexed = false;
}

void audit_files_attribute(struct audit_files *t, struct audit_file *f, const char *request,
			   enum audit_req_source source, int shape)
{
	uint64_t h = sg_table_hash_str(request);
	struct audit_file *first = NULL;
	struct req_chain *r;
	bool shared;

	/* A tag beats patterns, whichever came first. */
	if (f->indexed && f->source == REQ_PATTERN && source == REQ_TAG)
		unindex(t, f);
	if (f->indexed)
		return;
	shared = (r = find_chain(t, h, request)) || (first = find_alone(t, h, request));
	if (first) {
		/* The second file: the request's chain, the first on it. */
		if (!(r = new_chain(t, h, request)))
			return;
		leave_alone(t, first, h);
		append(t, r, first);
	} else if (!shared && !keep_alone(t, f, h, request) && !(r = new_chain(t, h, request))) {
		return;
	}
	if (r)
		append(t, r, f);
	f->source = (uint8_t)source;
	f->shape = (int8_t)shape;
	f->indexed = true;
}

void audit_files_unattribute(struct audit_files *t, struct audit_file *f)
{
	if (f->indexed)
		unindex(t, f);
	f->source = REQ_NONE;
	f->shape = -1;
}

/* Gives f its name; its request is none of the name's bytes. */
static bool set_name(struct audit_files *t, struct audit_file *f, int root, const char *name)
{
	char *copy = NULL;

	if (name && !(copy = audit_str_dup(&t->strings, name))) /* before the old goes: name may be f's own */
		return false;
	if (f->name)
		audit_str_free(&t->strings, f->name);
	f->name = copy;
	f->root = (int16_t)root; /* the roots table never holds more (audit_roots.h) */
	return true;
}

bool audit_files_name(struct audit_files *t, struct audit_file *f, int root, const char *name)
{
	char request[AUDIT_FILE_REQUEST_MAX];
	enum audit_req_source source = f->source;
	int shape = f->shape;
	bool named;

	if (!f->req_in_name)
		return set_name(t, f, root, name);
	/* The name holds the request: taken out of it first, and kept again
	 * as the new name allows. */
	audit_file_request(f, request);
	unindex(t, f);
	named = set_name(t, f, root, name);
	audit_files_attribute(t, f, request, source, shape);
	return named;
}

void audit_files_remove(struct audit_files *t, struct audit_file *f)
{
	unchain(t, file_bucket(t, f->kdev, f->ino), f, false);
	t->files.count--;
	if (t->walk == f->self)
		t->walk = f->newer;
	if (f->older != AUDIT_FILE_NONE)
		file_at(t, f->older)->newer = f->newer;
	else
		t->oldest = f->newer;
	if (f->newer != AUDIT_FILE_NONE)
		file_at(t, f->newer)->older = f->older;
	else
		t->newest = f->older;
	if (f->indexed)
		unindex(t, f);
	release_creator(t, f->creator);
	if (f->name)
		audit_str_free(&t->strings, f->name);
	put_slot(t, f);
}

void audit_files_of_request(struct audit_files *t, const char *request, void (*fn)(struct audit_file *, void *),
			    void *ctx)
{
	uint64_t h = sg_table_hash_str(request);
	struct req_chain *r = find_chain(t, h, request);
	struct audit_file *f;

	if (!r) {
		if ((f = find_alone(t, h, request)))
			fn(f, ctx);
		return;
	}
	for (uint32_t k = r->first, next; (f = file_at(t, k)); k = next) {
		next = f->next_of_req;
		fn(f, ctx);
	}
}

void audit_files_walk_begin(struct audit_files *t)
{
	t->walk = t->oldest;
}

struct audit_file *audit_files_newest(struct audit_files *t)
{
	return file_at(t, t->newest);
}

struct audit_file *audit_files_older(struct audit_files *t, const struct audit_file *f)
{
	return file_at(t, f->older);
}

struct audit_file *audit_files_walk_next(struct audit_files *t)
{
	struct audit_file *f = file_at(t, t->walk);

	if (f)
		t->walk = f->newer;
	return f;
}

size_t audit_files_count(const struct audit_files *t)
{
	return t->files.count;
}

uint64_t audit_files_over_limit(const struct audit_files *t)
{
	return t->over_limit;
}
