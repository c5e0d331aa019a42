/* The file table's string arena (audit_strings.h). */
#include "audit_strings.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "audit_poison.h"

static size_t str_class(size_t size)
{
	return (size + AUDIT_STR_STEP - 1) / AUDIT_STR_STEP - 1;
}

/* A new block to carve strings from (the rest of the last one is left);
 * false when memory is short. */
static bool add_block(struct audit_strings *a)
{
	char *block;

	if (a->nblocks == a->room) {
		size_t room = a->room ? 2 * a->room : 16;
		char **blocks = realloc(a->blocks, room * sizeof(*blocks));
		if (!blocks)
			return false;
		a->blocks = blocks;
		a->room = room;
	}
	if (!(block = malloc(AUDIT_STR_BLOCK)))
		return false;
	POISON(block, AUDIT_STR_BLOCK);
	a->blocks[a->nblocks++] = block;
	a->next = block;
	a->end = block + AUDIT_STR_BLOCK;
	return true;
}

char *audit_str_dup(struct audit_strings *a, const char *s)
{
	size_t size = strlen(s) + 1, c = str_class(size), slot = (c + 1) * AUDIT_STR_STEP;
	char *p;

	if (size > AUDIT_STR_MAX) {
		if ((p = malloc(size)))
			memcpy(p, s, size);
		return p;
	}
	if ((p = a->free[c])) {
		UNPOISON(p, slot);
		memcpy(&a->free[c], p, sizeof(p));
	} else {
		if ((size_t)(a->end - a->next) < slot && !add_block(a))
			return NULL;
		p = a->next;
		a->next += slot;
		UNPOISON(p, slot);
	}
	memcpy(p, s, size);
	return p;
}

void audit_str_free(struct audit_strings *a, const char *s)
{
	size_t size = strlen(s) + 1, c = str_class(size);
	char *p = (char *)(uintptr_t)s; /* the arena's own */

	if (size > AUDIT_STR_MAX) {
		free(p);
		return;
	}
	memcpy(p, &a->free[c], sizeof(p));
	a->free[c] = p;
	POISON(p + sizeof(p), (c + 1) * AUDIT_STR_STEP - sizeof(p));
}

void audit_str_clear(struct audit_strings *a)
{
	for (size_t i = 0; i < a->nblocks; i++) {
		UNPOISON(a->blocks[i], AUDIT_STR_BLOCK);
		free(a->blocks[i]);
	}
	free(a->blocks);
}
