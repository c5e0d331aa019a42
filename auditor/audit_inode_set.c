#include "audit_inode_set.h"

#include <stdlib.h>
#include <string.h>

#include "audit_poison.h"

struct audit_inode_slot {
	uint32_t kdev;
	uint64_t ino;
	bool used;
};

static struct audit_inode_slot *slot_of(struct audit_inode_slot *slots, size_t size, uint32_t kdev, uint64_t ino)
{
	size_t i = audit_inode_hash(kdev, ino) & (size - 1);

	while (slots[i].used && (slots[i].kdev != kdev || slots[i].ino != ino))
		i = (i + 1) & (size - 1);
	return &slots[i];
}

bool audit_inode_set_has(const struct audit_inode_set *s, uint32_t kdev, uint64_t ino)
{
	return s->n && slot_of(s->slots, s->size, kdev, ino)->used;
}

void audit_inode_set_add(struct audit_inode_set *s, uint32_t kdev, uint64_t ino)
{
	struct audit_inode_slot *slot;

	if ((s->n + 1) * 2 > s->size) {
		size_t n = s->size ? s->size * 2 : 64;
		struct audit_inode_slot *slots = calloc(n, sizeof(*slots));

		if (!slots)
			return;
		for (size_t i = 0; i < s->size; i++)
			if (s->slots[i].used)
				*slot_of(slots, n, s->slots[i].kdev, s->slots[i].ino) = s->slots[i];
		free(s->slots);
		s->slots = slots;
		s->size = n;
	}
	slot = slot_of(s->slots, s->size, kdev, ino);
	if (!slot->used) {
		*slot = (struct audit_inode_slot){kdev, ino, true};
		s->n++;
	}
}

void audit_inode_set_clear(struct audit_inode_set *s)
{
	if (s->n)
		memset(s->slots, 0, s->size * sizeof(*s->slots));
	s->n = 0;
}

void audit_inode_set_free(struct audit_inode_set *s)
{
	free(s->slots);
	memset(s, 0, sizeof(*s));
}
