/* Reclaiming what no live process will ever unlink, one root of a listing
 * at a time: `shmguard sweep` and the node agent's --reclaim-dead decide
 * and unlink here.  Every decision is handed to the caller with its
 * reason; anything in use, anything whose owner cannot be told, and
 * anything that changed since it was examined is kept.
 *
 * Errors: a negative errno (docs/architecture.md, "Reporting a failure"). */
#ifndef SHMGUARD_RECLAIM_H
#define SHMGUARD_RECLAIM_H

#include <stdbool.h>
#include <stdint.h>

#include "creator_store.h"
#include "shm_files.h"

/* A creator may sit between its O_EXCL create and its ftruncate. */
#define SG_RECLAIM_YOUNG_EMPTY_S 5.0

/* Anyone who can open a root can hold a lock on it: a reclaim waits for
 * another this long at most. */
#define SG_RECLAIM_LOCK_WAIT_MS 2000

struct sg_reclaim_opts {
	bool dead;              /* tagged files whose creator is proven gone */
	const char *const *requests; /* every file tagged with one of these requests */
	unsigned nrequests;
	const char *glob;       /* untagged files matching it (fnmatch)... */
	double older_than;      /* ...older than this many seconds */
	bool ignore_unreadable; /* even though some processes' files cannot be read */
	/* With dead: shmguard watch's creator records, by which untagged files
	 * whose instance is proven gone go too (host/orphan_proof.h); NULL: none. */
	const struct sg_creator_store *records;
	/* With dead, the stricter proof for tagged files too: a dead creator is
	 * not enough, its instance must be gone (by its record in records),
	 * for the files a dead worker may have handed to a live process. */
	bool instance_gone;
	bool dry_run;
};

/* One decision, as the caller shows it. */
struct sg_reclaim_decision {
	const char *verdict; /* "removed", "would remove", "kept", "gone", "failed" */
	unsigned root;
	const char *name;    /* in the root, as its bytes are */
	uint64_t bytes;
	const char *why;     /* ours; any outside string in it escaped */
	const struct sg_shm_file *file; /* NULL for a journal */
};

struct sg_reclaim_outcome {
	unsigned removed, kept, failed;
	uint64_t bytes;
};

/* Reclaims in root r of l what o asks for, under the root's lock, every
 * name checked to be the inode examined right before it is unlinked,
 * through the root's descriptor; then the journals of dead creators that
 * speak for no file left.  Each decision goes to said.  Returns 0, or a
 * negative errno with err saying why the root was not swept (-EWOULDBLOCK:
 * another process kept it locked). */
int sg_reclaim_root(struct sg_shm_listing *l, unsigned r, const struct sg_reclaim_opts *o,
		    struct sg_reclaim_outcome *out, void (*said)(const struct sg_reclaim_decision *d, void *ctx),
		    void *ctx, char *err, size_t errlen);

#endif
