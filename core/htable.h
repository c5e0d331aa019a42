/* The chained hash table of shmguard, intrusive: a node is a member of the
 * record it indexes, and carries its key's hash, so that neither a lookup's
 * comparisons nor a resize hash a key again.  Buckets are a power of two,
 * doubled once there are more nodes than buckets.  Everything is inline: the
 * shim adds and looks up a segment on every tracked creation and unlink, and
 * the compiler inlines the key comparison each caller passes.  The caller
 * locks; only the count may be read without the lock.
 *
 * Errors: a negative errno (docs/architecture.md, "Reporting a failure"). */
#ifndef SHMGUARD_HTABLE_H
#define SHMGUARD_HTABLE_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

struct sg_hnode {
	struct sg_hnode *next;
	uint64_t hash;
};

struct sg_htable {
	struct sg_hnode **buckets;
	size_t nbuckets; /* 0 until the first sg_htable_reserve(), then a power of two */
	size_t count;    /* changed atomically: it may be read without the lock */
};

/* The record that holds node as its member. */
#define sg_hnode_entry(node, type, member) ((type *)((char *)(node) - offsetof(type, member)))

/* Whether node is the one for key. */
typedef bool sg_hnode_is(const struct sg_hnode *node, const void *key);

/* Doubles the buckets (the first time, makes first of them, a power of two).
 * Returns 0, or -ENOMEM: the table is as it was, with longer
 * chains to come. */
static inline int sg_htable_grow(struct sg_htable *t, size_t first)
{
	size_t n = t->nbuckets ? t->nbuckets * 2 : first;
	struct sg_hnode **b = calloc(n, sizeof(*b));

	if (!b)
		return -ENOMEM;
	for (size_t i = 0; i < t->nbuckets; i++) {
		for (struct sg_hnode *node = t->buckets[i], *next; node; node = next) {
			struct sg_hnode **slot = &b[node->hash & (n - 1)];
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

/* Room for one more node: grows when it would make more nodes than buckets.
 * -ENOMEM only when the table has no buckets at all and none can be had. */
static inline int sg_htable_reserve(struct sg_htable *t, size_t first)
{
	if (t->count + 1 > t->nbuckets && sg_htable_grow(t, first) < 0 && !t->nbuckets)
		return -ENOMEM;
	return 0;
}

/* The slot holding the node for key (whose hash is hash), or the empty slot
 * ending its chain; the table must have buckets. */
static inline struct sg_hnode **sg_htable_slot(struct sg_htable *t, uint64_t hash, sg_hnode_is *is, const void *key)
{
	struct sg_hnode **slot = &t->buckets[hash & (t->nbuckets - 1)];

	while (*slot && ((*slot)->hash != hash || !is(*slot, key)))
		slot = &(*slot)->next;
	return slot;
}

/* The node for key, or NULL. */
static inline struct sg_hnode *sg_htable_find(const struct sg_htable *t, uint64_t hash, sg_hnode_is *is,
					      const void *key)
{
	struct sg_hnode *node = t->count ? t->buckets[hash & (t->nbuckets - 1)] : NULL;

	while (node && (node->hash != hash || !is(node, key)))
		node = node->next;
	return node;
}

/* Links node (its hash set) at slot, which sg_htable_slot() gave. */
static inline void sg_htable_insert_at(struct sg_htable *t, struct sg_hnode **slot, struct sg_hnode *node)
{
	node->next = *slot;
	*slot = node;
	__atomic_add_fetch(&t->count, 1, __ATOMIC_RELAXED);
}

/* Unlinks and returns the node at slot. */
static inline struct sg_hnode *sg_htable_remove_at(struct sg_htable *t, struct sg_hnode **slot)
{
	struct sg_hnode *node = *slot;

	*slot = node->next;
	__atomic_sub_fetch(&t->count, 1, __ATOMIC_RELAXED);
	return node;
}

/* Unlinks node, if it is in the table. */
static inline void sg_htable_remove(struct sg_htable *t, struct sg_hnode *node)
{
	struct sg_hnode **slot;

	if (!t->nbuckets)
		return;
	for (slot = &t->buckets[node->hash & (t->nbuckets - 1)]; *slot; slot = &(*slot)->next) {
		if (*slot == node) {
			sg_htable_remove_at(t, slot);
			return;
		}
	}
}

/* Frees every node with free_node, and the buckets: the table is empty. */
static inline void sg_htable_clear(struct sg_htable *t, void (*free_node)(struct sg_hnode *node))
{
	for (size_t i = 0; i < t->nbuckets; i++) {
		for (struct sg_hnode *node = t->buckets[i], *next; node; node = next) {
			next = node->next;
			free_node(node);
		}
	}
	free(t->buckets);
	*t = (struct sg_htable){0};
}

#endif
