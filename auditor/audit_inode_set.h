/* A set of inodes, by (device, inode number): the files the file table
 * must not take for a request's (abort markers and other files the
 * auditor knows are none), until the table ends its exclusions.
 *
 * Open addressing, at most half full; out of memory, an inode is not added
 * (its file is then taken, and only the figures it would have been left
 * out of change).  Errors: none returned. */
#ifndef SHMGUARD_AUDIT_INODE_SET_H
#define SHMGUARD_AUDIT_INODE_SET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "siphash.h"

struct audit_inode_set {
	struct audit_inode_slot *slots;
	size_t n, size;
};

/* Inode numbers are given out in order, and anyone can make files: keyed. */
static inline uint64_t audit_inode_hash(uint32_t kdev, uint64_t ino)
{
	uint64_t words[2] = {ino, kdev};

	return sg_table_hash(words, sizeof(words));
}

void audit_inode_set_add(struct audit_inode_set *s, uint32_t kdev, uint64_t ino);
bool audit_inode_set_has(const struct audit_inode_set *s, uint32_t kdev, uint64_t ino);
/* Empties the set, keeping its room. */
void audit_inode_set_clear(struct audit_inode_set *s);
void audit_inode_set_free(struct audit_inode_set *s);

#endif
