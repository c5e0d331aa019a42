/* abort's own sweep: the process that marks requests aborted unlinks the
 * files the ownership journals record for them at once, instead of waiting
 * for each server's watcher thread to be scheduled (under load, the tail of
 * that wait is milliseconds).  The shims remain the backstop: for segments
 * created after the marker, and for markers written by other means. */
#ifndef SHMGUARD_REQUEST_SWEEP_H
#define SHMGUARD_REQUEST_SWEEP_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "journal.h"
#include "journal_read.h"

struct request_swept {
	unsigned files;    /* unlinked */
	uint64_t bytes;    /* their allocated bytes */
	unsigned replaced; /* a recorded name that now refers to another file: left alone */
	unsigned failed;   /* could not be unlinked (said on stderr) */
};

/* What abort reads of a root, at most, before it leaves the sweep to the
 * shims: finding the journals takes reading the whole directory (the root,
 * or its SG_JOURNAL_DIR where an operator made one), and a
 * journal holds every live file of its process (docs/performance.md has
 * the figures: 100,000 live files took 0.35 s).  Journal bytes are those
 * the reader reads: headers and the slots in use. */
#define REQUEST_SWEEP_MAX_ENTRIES 4096
#define REQUEST_SWEEP_MAX_JOURNAL_BYTES (2u << 20)

/* What abort read of the roots, before it writes its markers: then only
 * the few system calls of the unlinks lie between a marker and its files
 * being gone.  A file created after the reading is in its creator's record,
 * which its shim sweeps on the marker (or at once, created after it). */
struct request_sweep {
	unsigned n;
	struct {
		const char *dir;
		int dfd;
		uint32_t kdev;
		bool from_dir;         /* its journals read from its SG_JOURNAL_DIR, the root not listed */
		struct sg_journals js;
	} root[SG_MAX_ROOTS];
	unsigned left;         /* roots over the bounds below, not read: left to the shims */
	const char *left_root; /* the first of them */
	unsigned from_dir;          /* roots whose journals were read from their SG_JOURNAL_DIR */
	const char *from_dir_root;  /* the first of them */
	bool failed;           /* a root could not be read, or memory ran out (said on stderr) */
	const char *sub;       /* the subcommand its messages are said as */
};

/* Reads the ownership journals each root holds and this process trusts
 * (journal.h), saying what fails as subcommand sub: those in the root's
 * SG_JOURNAL_DIR when it is trusted (the root itself then not listed),
 * else those in the root.  A missing root is skipped; a directory with
 * more entries, or more journal bytes, than the bounds is not read but
 * counted in left. */
void request_sweep_read(struct request_sweep *rs, const struct sg_roots *roots, const char *sub);

/* Unlinks each file a record read names for one of reqs[0..n) (that very
 * ID, never a prefix or suffix), when right before all of this holds: the
 * name is directly in the root and, not followed if a symlink, a regular
 * file; its inode is the record's, on the root's device; it is ours, unless
 * we are root (a shim obeys markers of its euid or root only); and the newest
 * claim on that inode from a journal of the file's owner names it, for that
 * request, and is not older than the file (sg_journals_find, as ls and
 * sweep decide).  A name already gone is no error. */
void request_sweep_run(const struct request_sweep *rs, const char *const *reqs, unsigned n,
		       struct request_swept *out);

void request_sweep_free(struct request_sweep *rs);

#endif
