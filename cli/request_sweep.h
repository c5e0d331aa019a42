/* abort's own sweep: the process that marks requests aborted unlinks the
 * files the ownership journals record for them at once, instead of waiting
 * for each server's watcher thread to be scheduled (under load, the tail of
 * that wait is milliseconds).  The shims remain the backstop: for segments
 * created after the marker, and for markers written by other means. */
#ifndef SHMGUARD_REQUEST_SWEEP_H
#define SHMGUARD_REQUEST_SWEEP_H

#include <stdint.h>

#include "config.h"

struct request_swept {
	unsigned files;    /* unlinked */
	uint64_t bytes;    /* their allocated bytes */
	unsigned replaced; /* a recorded name that now refers to another file: left alone */
	unsigned failed;   /* could not be unlinked (said on stderr) */
	unsigned left;     /* roots too large to read quickly: left to the shims */
	const char *left_root; /* the first of them */
};

/* What abort reads of a root, at most, before it leaves the sweep to the
 * shims: finding the journals takes reading the whole directory, and a
 * journal holds every live file of its process (docs/performance.md has
 * the figures: 100,000 live files took 0.35 s). */
#define REQUEST_SWEEP_MAX_ENTRIES 4096
#define REQUEST_SWEEP_MAX_JOURNAL_BYTES (2u << 20)

/* In each root, reads the ownership journals it trusts (journal.h) and
 * unlinks each file a record names for one of reqs[0..n) (that very ID,
 * never a prefix or suffix), when right before all of this holds: the name
 * is directly in the root and, not followed, a regular file; its inode is
 * the record's, on the root's device; and the newest claim on that inode
 * from a journal of the file's owner names it, for that request, and is
 * not older than the file (sg_journals_find, as ls and sweep decide).  A
 * name already gone is no error.  A root with more entries, or more journal
 * bytes, than the bounds above is not swept but counted in left.  Returns 0, or -1 when a root could not be
 * read or memory ran out (said on stderr). */
int request_sweep(const struct sg_roots *roots, const char *const *reqs, unsigned n, struct request_swept *out);

#endif
