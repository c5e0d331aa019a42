/* The file table's string arena (audit_files.c): names, and the requests
 * of one file that its name does not spell.
 *
 * Errors: a copy that cannot be made is NULL (memory short). */
#ifndef SHMGUARD_AUDIT_STRINGS_H
#define SHMGUARD_AUDIT_STRINGS_H

#include <stddef.h>

/* Names, and the requests of one file that its name does not spell, as
 * strings of up to AUDIT_STR_MAX bytes with their NUL, each in a slot of the next
 * multiple of AUDIT_STR_STEP, carved from blocks that live as long as the table;
 * a freed slot, which holds the next, is the next of its size taken.
 * Longer strings (no file name is) are malloc's.  A string's length tells
 * its slot: no header, no rounding to malloc's 16 bytes. */
#define AUDIT_STR_STEP 8
#define AUDIT_STR_MAX 256
#define AUDIT_STR_BLOCK 65536

struct audit_strings {
	char *free[AUDIT_STR_MAX / AUDIT_STR_STEP]; /* by size */
	char *next, *end;               /* the newest block's rest */
	char **blocks;
	size_t nblocks, room;
};

/* A copy of s in the arena, NULL when memory is short. */
char *audit_str_dup(struct audit_strings *a, const char *s);
/* Gives back s, a copy audit_str_dup made; its length tells where it lives. */
void audit_str_free(struct audit_strings *a, const char *s);
/* Frees the arena's blocks (the strings malloc holds are their owners'). */
void audit_str_clear(struct audit_strings *a);

#endif
