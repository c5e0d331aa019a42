#include <criterion/criterion.h>
#include <stdlib.h>

#include "htable.h"

struct item {
	struct sg_hnode node;
	int key;
};

static bool is_item(const struct sg_hnode *node, const void *key)
{
	return sg_hnode_entry(node, struct item, node)->key == *(const int *)key;
}

static struct item *find(struct sg_htable *t, uint64_t hash, int key)
{
	struct sg_hnode *node = sg_htable_find(t, hash, is_item, &key);

	return node ? sg_hnode_entry(node, struct item, node) : NULL;
}

static void add(struct sg_htable *t, struct item *it, uint64_t hash)
{
	cr_assert_eq(sg_htable_reserve(t, 4), 0);
	it->node.hash = hash;
	sg_htable_insert_at(t, sg_htable_slot(t, hash, is_item, &it->key), &it->node);
}

static unsigned freed;

static void free_item(struct sg_hnode *node)
{
	(void)node;
	freed++;
}

Test(htable, empty_table_finds_nothing)
{
	struct sg_htable t = {0};

	cr_expect_null(find(&t, 1, 1));
	sg_htable_remove(&t, &(struct sg_hnode){0});
	cr_expect_eq(t.count, 0);
}

Test(htable, grows_and_keeps_every_node)
{
	enum { N = 5000 };
	static struct item items[N];
	struct sg_htable t = {0};

	for (int i = 0; i < N; i++) {
		items[i].key = i;
		add(&t, &items[i], (uint64_t)i * 0x9e3779b97f4a7c15ull);
	}
	cr_expect_eq(t.count, N);
	cr_expect_geq(t.nbuckets, N, "no more nodes than buckets");
	cr_expect_eq(t.nbuckets & (t.nbuckets - 1), 0, "a power of two");
	for (int i = 0; i < N; i++)
		cr_assert_eq(find(&t, (uint64_t)i * 0x9e3779b97f4a7c15ull, i), &items[i]);
	for (int i = 0; i < N; i += 2)
		sg_htable_remove(&t, &items[i].node);
	cr_expect_eq(t.count, N / 2);
	for (int i = 0; i < N; i++)
		cr_assert_eq(find(&t, (uint64_t)i * 0x9e3779b97f4a7c15ull, i), i % 2 ? &items[i] : NULL);
	freed = 0;
	sg_htable_clear(&t, free_item);
	cr_expect_eq(freed, N / 2);
	cr_expect_eq(t.count, 0);
	cr_expect_null(t.buckets);
}

Test(htable, many_collisions_are_told_apart_by_key)
{
	enum { N = 300 };
	static struct item items[N];
	struct sg_htable t = {0};

	/* One hash for all: one chain, told apart by the comparison alone. */
	for (int i = 0; i < N; i++) {
		items[i].key = i;
		add(&t, &items[i], 42);
	}
	for (int i = 0; i < N; i++)
		cr_assert_eq(find(&t, 42, i), &items[i]);
	cr_expect_null(find(&t, 42, N));
	cr_expect_null(find(&t, 43, 0), "same key, other hash");
	sg_htable_remove(&t, &items[N / 2].node);
	cr_expect_null(find(&t, 42, N / 2));
	cr_expect_eq(find(&t, 42, N / 2 + 1), &items[N / 2 + 1]);
	cr_expect_eq(t.count, N - 1);
	sg_htable_clear(&t, free_item);
}

Test(htable, remove_at_the_slot_found)
{
	struct item a = {.key = 1}, b = {.key = 2};
	struct sg_htable t = {0};

	add(&t, &a, 7);
	add(&t, &b, 7);
	struct sg_hnode **slot = sg_htable_slot(&t, 7, is_item, &a.key);
	cr_assert_eq(*slot, &a.node);
	cr_expect_eq(sg_htable_remove_at(&t, slot), &a.node);
	cr_expect_null(find(&t, 7, 1));
	cr_expect_eq(find(&t, 7, 2), &b);
	cr_expect_eq(t.count, 1);
	sg_htable_clear(&t, free_item);
}
