#include "audit_files.h"
#include "audit_workloads.h"

#include <stdlib.h>
#include <string.h>

#include "siphash.h"
#include "htable.h"
#include "config.h"
#include "pattern.h"

_Static_assert(SG_MAX_PATTERNS <= INT8_MAX, "a pattern index fits a record's int8_t");
_Static_assert(AUDIT_FILE_REQUEST_MAX > UINT8_MAX, "a request spelled by a name (its length a uint8_t) fits, with its NUL");

/* A request of more than one file: its files, oldest first, and its one copy
 * of the request, freed with its last file.  Files mostly go in the order
 * they came (a pipeline consumes its segments), so the one to take off the
 * chain is mostly at its head.  A request of one file (most requests of a
 * pipeline that names a file per request) is kept in that file's record, as
 * the bytes of its name that spell it or at its tail's end, its chain made
 * when a second file comes. */
struct req_chain {
	struct sg_hnode node;
	struct sg_hnode *files;   /* the first file's by_req */
	struct sg_hnode **tail;   /* the last file's by_req.next, or &files */
	char request[];
};

struct audit_files {
	/* alone: the files that are their request's only one, by request */
	struct sg_htable files, requests, alone, creators;
	size_t max_files;
	uint64_t over_limit;
	struct audit_file *oldest, *newest, *walk;
	struct excluded *excluded; /* open addressing, at most half full */
	size_t nexcluded, excluded_size;
};

struct excluded {
	uint32_t kdev;
	uint64_t ino;
	bool used;
};

/* Inode numbers are given out in order, and anyone can make files: keyed
 * too. */
static uint64_t hash_key(uint32_t kdev, uint64_t ino)
{
	uint64_t words[2] = {ino, kdev};

	return sg_table_hash(words, sizeof(words));
}

struct file_key {
	uint32_t kdev;
	uint64_t ino;
};

static bool is_file(const struct sg_hnode *node, const void *key)
{
	const struct audit_file *f = sg_hnode_entry(node, struct audit_file, node);
	const struct file_key *k = key;

	return f->kdev == k->kdev && f->ino == k->ino;
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

static struct audit_file *of_by_req(struct sg_hnode *node)
{
	return node ? sg_hnode_entry(node, struct audit_file, by_req) : NULL;
}

/* Whether f, its request's only file, has that request. */
static bool alone_with(const struct audit_file *f, const char *request)
{
	size_t len;

	if (!f->req_in_name)
		return strcmp(f->req.copy, request) == 0;
	len = f->req.in_name.len;
	return memcmp(audit_file_name(f) + f->req.in_name.at, request, len) == 0 && request[len] == '\0';
}

static bool is_alone(const struct sg_hnode *node, const void *request)
{
	return alone_with(sg_hnode_entry(node, struct audit_file, by_req), request);
}

struct audit_files *audit_files_new(size_t max_files)
{
	struct audit_files *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->max_files = max_files;
	if (sg_htable_grow(&t->files, 1024) < 0 || sg_htable_grow(&t->requests, 256) < 0 ||
	    sg_htable_grow(&t->alone, 256) < 0 || sg_htable_grow(&t->creators, 64) < 0) {
		audit_files_free(t);
		return NULL;
	}
	return t;
}

static void free_file(struct sg_hnode *node)
{
	struct audit_file *f = sg_hnode_entry(node, struct audit_file, node);

	if (f->name_outside)
		free((char *)(uintptr_t)audit_file_name(f));
	free(f);
}

/* The bytes at the tail's end that its request takes. */
static size_t request_bytes(const struct audit_file *f)
{
	return f->alone && !f->req_in_name ? strlen(f->req.copy) + 1 : 0;
}

/* The bytes at the tail's start that its name takes. */
static size_t name_bytes(const struct audit_file *f)
{
	return !f->named ? 0 : f->name_outside ? sizeof(char *) : strlen(f->tail) + 1;
}

static uint8_t hint(size_t bytes)
{
	return bytes < UINT8_MAX ? (uint8_t)bytes : UINT8_MAX;
}

static struct audit_creator *creator_of(struct audit_file *f)
{
	return (struct audit_creator *)(uintptr_t)f->creator; /* the table's own */
}

/* Gives f its name; its request is none of the name's bytes. */
static bool set_name(struct audit_file *f, int root, const char *name)
{
	size_t len = name ? strlen(name) + 1 : 0;
	char *old = f->name_outside ? (char *)(uintptr_t)audit_file_name(f) : NULL, *heap = NULL;

	/* A request at the tail's end leaves a pointer's room before it
	 * (audit_files_attribute). */
	if (len > f->tail_room - request_bytes(f)) {
		if (!(heap = malloc(len)))
			return false;
		memcpy(heap, name, len); /* name may be f's own */
		memcpy(f->tail, &heap, sizeof(heap));
	} else if (name) {
		memmove(f->tail, name, len); /* the same */
	}
	free(old);
	f->named = name != NULL;
	f->name_outside = heap != NULL;
	f->root = (int16_t)root; /* the roots table never holds more (audit_roots.h) */
	if (name) /* its creator's next file is given room for as much */
		creator_of(f)->name_hint = hint(len);
	return true;
}

static void free_request(struct sg_hnode *node)
{
	free(sg_hnode_entry(node, struct req_chain, node));
}

static void free_creator(struct sg_hnode *node)
{
	free(sg_hnode_entry(node, struct audit_creator, node));
}

void audit_files_free(struct audit_files *t)
{
	if (!t)
		return;
	sg_htable_clear(&t->files, free_file);
	sg_htable_clear(&t->requests, free_request);
	free(t->alone.buckets); /* its nodes are the files' */
	sg_htable_clear(&t->creators, free_creator);
	free(t->excluded);
	free(t);
}

struct audit_file *audit_files_find(struct audit_files *t, uint32_t kdev, uint64_t ino)
{
	struct file_key k = {kdev, ino};
	struct sg_hnode *node = sg_htable_find(&t->files, hash_key(kdev, ino), is_file, &k);

	return node ? sg_hnode_entry(node, struct audit_file, node) : NULL;
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

/* The tail of a file whose name is not known, of a creator none of whose
 * files has been named yet: the ctime probe sends no name, and a review may
 * come only after a great many files were made.  Room for a pipeline's
 * short names and their request; the chunk holds it at little more. */
#define UNNAMED_ROOM 24

/* glibc's chunks are multiples of 16 B, 8 of them its own: a record asks for
 * the whole chunk its size takes, and its tail has the rest for nothing. */
static size_t chunk_fill(size_t n)
{
	size_t chunk = (n + 8 + 15) & ~(size_t)15;

	return chunk < 32 ? 24 : chunk - 8;
}

struct audit_file *audit_files_add(struct audit_files *t, uint32_t kdev, uint64_t ino, uint32_t tgid,
				   const char *comm, struct audit_workload *w, size_t name_len)
{
	struct audit_file *old = audit_files_find(t, kdev, ino), *f;
	const struct audit_creator *c;
	size_t room;

	if (is_excluded(t, kdev, ino))
		return NULL;
	if (t->files.count >= t->max_files || !(c = hold_creator(t, tgid, comm, w))) {
		t->over_limit++;
		return NULL;
	}
	/* Room for the name it is about to be given, or its creator's last
	 * file's, and for the request that file kept: files of one process are
	 * mostly named alike.  Longer names go on the heap. */
	room = (name_len ? name_len + 1 : c->name_hint) + c->request_hint;
	if (!room)
		room = UNNAMED_ROOM;
	room = chunk_fill(offsetof(struct audit_file, tail) + (room > sizeof(char *) ? room : sizeof(char *))) -
	       offsetof(struct audit_file, tail);
	if (!(f = calloc(1, offsetof(struct audit_file, tail) + (room < UINT8_MAX ? room : UINT8_MAX)))) {
		release_creator(t, c);
		t->over_limit++;
		return NULL;
	}
	f->creator = c;
	if (old)
		audit_files_remove(t, old); /* the number could only be reused once it was freed */
	sg_htable_reserve(&t->files, 1024); /* it has buckets: failing, it leaves longer chains */
	f->kdev = kdev;
	f->ino = ino;
	f->root = -1;
	f->shape = -1;
	f->tail_room = room < UINT8_MAX ? (uint8_t)room : UINT8_MAX;
	f->node.hash = hash_key(kdev, ino);
	sg_htable_insert_at(&t->files, sg_htable_slot(&t->files, f->node.hash, is_file, &(struct file_key){kdev, ino}),
			    &f->node);
	f->prev_all = t->newest;
	*(t->newest ? &t->newest->next_all : &t->oldest) = f;
	t->newest = f;
	return f;
}

static struct req_chain *find_chain(struct audit_files *t, uint64_t h, const char *request)
{
	struct sg_hnode *node = sg_htable_find(&t->requests, h, is_request, request);

	return node ? sg_hnode_entry(node, struct req_chain, node) : NULL;
}

static struct audit_file *find_alone(struct audit_files *t, uint64_t h, const char *request)
{
	return of_by_req(sg_htable_find(&t->alone, h, is_alone, request));
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
	r->files = NULL;
	r->tail = &r->files;
	memcpy(r->request, request, len);
	sg_htable_insert_at(&t->requests, sg_htable_slot(&t->requests, h, is_request, request), &r->node);
	return r;
}

static void append(struct req_chain *r, struct audit_file *f)
{
	f->req.copy = r->request;
	f->req_in_name = false;
	f->by_req.next = NULL;
	*r->tail = &f->by_req;
	r->tail = &f->by_req.next;
}

/* Whether f's tail has room for a request of len bytes at its end, a name
 * (or a pointer to one) still fitting before it. */
static bool fits_alone(const struct audit_file *f, size_t len)
{
	size_t name = name_bytes(f);

	return (size_t)f->tail_room >= (name > sizeof(char *) ? name : sizeof(char *)) + len;
}

/* f, with no request, its request's only file: the request kept as the
 * bytes of its name that spell it, else in its tail.  False when neither
 * holds it, or memory for the table is short. */
static bool keep_alone(struct audit_files *t, struct audit_file *f, uint64_t h, const char *request)
{
	size_t len = strlen(request) + 1;
	const char *name = audit_file_name(f), *in = name ? memmem(name, strlen(name), request, len - 1) : NULL;
	bool spelled = in && in - name <= UINT8_MAX && len - 1 <= UINT8_MAX; /* its place fits the record */
	char *at;

	if ((!spelled && !fits_alone(f, len)) || sg_htable_reserve(&t->alone, 256) < 0)
		return false;
	if (spelled) {
		f->req.in_name.at = (uint8_t)(in - name);
		f->req.in_name.len = (uint8_t)(len - 1);
		f->req_in_name = true;
	} else {
		at = f->tail + f->tail_room - len;
		memcpy(at, request, len);
		f->req.copy = at;
	}
	f->alone = true;
	f->by_req.hash = h;
	sg_htable_insert_at(&t->alone, sg_htable_slot(&t->alone, h, is_alone, request), &f->by_req);
	return true;
}

/* Takes f off its request's index, and the chain away with its last file. */
static void unindex(struct audit_files *t, struct audit_file *f)
{
	if (f->alone) {
		sg_htable_remove(&t->alone, &f->by_req);
		f->alone = false;
	} else {
		/* f->req.copy is the chain's own. */
		struct req_chain *r = (struct req_chain *)(uintptr_t)(f->req.copy - offsetof(struct req_chain, request));
		struct sg_hnode **p = &r->files;

		while (*p && *p != &f->by_req)
			p = &(*p)->next;
		if (*p)
			*p = f->by_req.next;
		if (r->tail == &f->by_req.next)
			r->tail = p;
		if (!r->files) {
			sg_htable_remove(&t->requests, &r->node);
			free(r);
		}
	}
	f->req.copy = NULL;
	f->req_in_name = false;
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
		sg_htable_remove(&t->alone, &first->by_req);
		first->alone = false;
		append(r, first);
	} else if (!shared && !keep_alone(t, f, h, request) && !(r = new_chain(t, h, request))) {
		return;
	}
	if (r)
		append(r, f);
	f->source = (uint8_t)source;
	f->shape = (int8_t)shape;
	f->indexed = true;
	/* Room for a request in its creator's next file's tail while its files
	 * start requests of their own that their names do not hold; once they
	 * share them, none. */
	creator_of(f)->request_hint = hint(shared || f->req_in_name ? 0 : strlen(request) + 1);
}

void audit_files_unattribute(struct audit_files *t, struct audit_file *f)
{
	if (f->indexed)
		unindex(t, f);
	f->source = REQ_NONE;
	f->shape = -1;
}

bool audit_files_name(struct audit_files *t, struct audit_file *f, int root, const char *name)
{
	char request[AUDIT_FILE_REQUEST_MAX];
	enum audit_req_source source = f->source;
	int shape = f->shape;
	bool named;

	if (!f->req_in_name)
		return set_name(f, root, name);
	/* The name holds the request: taken out of it first, and kept again
	 * where the new one leaves room. */
	audit_file_request(f, request);
	unindex(t, f);
	named = set_name(f, root, name);
	audit_files_attribute(t, f, request, source, shape);
	return named;
}

void audit_files_remove(struct audit_files *t, struct audit_file *f)
{
	sg_htable_remove(&t->files, &f->node);
	if (t->walk == f)
		t->walk = f->next_all;
	*(f->prev_all ? &f->prev_all->next_all : &t->oldest) = f->next_all;
	*(f->next_all ? &f->next_all->prev_all : &t->newest) = f->prev_all;
	if (f->indexed)
		unindex(t, f);
	release_creator(t, f->creator);
	free_file(&f->node);
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
	for (struct sg_hnode *node = r->files, *next; node; node = next) {
		next = node->next;
		fn(of_by_req(node), ctx);
	}
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
	return t->files.count;
}

uint64_t audit_files_over_limit(const struct audit_files *t)
{
	return t->over_limit;
}
