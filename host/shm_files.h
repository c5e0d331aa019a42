/* What the shm roots hold right now, for `shmguard ls` and `shmguard sweep`:
 * every regular file in each root (symlinks are never followed), and every
 * unlinked file some process still holds open or mapped, with its tag, the
 * state of its creator and its holders.
 *
 * Errors: a negative errno (docs/architecture.md, "Reporting a failure"). */
#ifndef SHMGUARD_SHM_FILES_H
#define SHMGUARD_SHM_FILES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "config.h"
#include "creators.h"
#include "holders.h"
#include "journal.h"
#include "tag.h"
#include "journal_read.h"
#include "shm_mounts.h"

/* A file named like an ownership journal that is not read as one. */
enum sg_journal_like {
	JOURNAL_LIKE_NO,      /* not named like one, or a journal that was read (never listed) */
	JOURNAL_LIKE_FOREIGN, /* not an intact journal, or not one we may believe: not shmguard's */
	JOURNAL_LIKE_UNREAD,  /* intact, but more to read than its owner's files could need */
};

struct sg_shm_file {
	int root;   /* index into the roots */
	enum sg_journal_like journal_like; /* never tagged, never swept */
	char *name; /* in its root; for an unlinked file, as /proc shows it (may be NULL) */
	bool linked;
	uint32_t kdev;
	uint64_t ino;
	uid_t uid;
	int64_t size;
	uint64_t bytes; /* allocated: st_blocks * 512 */
	double age_s;   /* since creation (the tag's time, else the inode's) */
	bool tagged;    /* its owner is known: from a journal, else a trusted xattr tag */
	struct sg_tag tag;
	enum sg_creator_state creator;
	enum sg_creator_proof creator_proof; /* how creator was found */
	const struct sg_holder *holders;
	size_t nholders;
};

/* What /proc shows, read after the roots it judges: who holds files on
 * their devices, and who runs.  One for each listing, or one for a whole
 * pass that its listings share (struct sg_shm_pass): /proc is then walked
 * once, however many roots. */
struct sg_shm_proc {
	struct sg_holders holders;   /* of every device of the roots read */
	struct sg_creators creators; /* who runs: every creator judged by it */
	unsigned walks;              /* the holders' walks of /proc */
};

/* The walks of /proc's processes made for p: its holders', and the index
 * of who runs when a creator of another pid namespace was asked about. */
unsigned sg_shm_proc_walks(const struct sg_shm_proc *p);
void sg_shm_proc_free(struct sg_shm_proc *p);

struct sg_shm_listing {
	struct sg_roots roots; /* a root that is the same directory as an earlier one is read once */
	struct sg_shm_file *files;
	size_t n;
	/* The ownership journals found in each root: never listed as files
	 * (names like theirs that are not read as journals are). */
	struct sg_journals journals[SG_MAX_ROOTS];
	unsigned journals_foreign, journals_unread;
	/* Roots whose SG_JOURNAL_DIR is something else than a directory to
	 * trust (journal.h): never read. */
	bool journal_dir_untrusted[SG_MAX_ROOTS];
	/* Each root's device, and whether it is listed as the one where an
	 * unlinked file held on that device was (a mount point, read once). */
	uint32_t kdev[SG_MAX_ROOTS];
	bool mount_point[SG_MAX_ROOTS];
	bool listed; /* its roots read and its files judged */
	struct sg_shm_proc *proc; /* what /proc showed: &own, or its pass's */
	struct sg_shm_proc own;
	/* How each root is named to people: its directory, or for another
	 * mount namespace's (mount[r], set by sg_shm_listing_add_mount) its
	 * mount point there after "[pid P mnt:N]" (P, the process it was
	 * reached through).  Ours only: no outside byte in it but the point,
	 * which is escaped where it is shown. */
	char shown[SG_MAX_ROOTS][SG_PATH_MAX + 48];
	const struct sg_shm_mount *mount[SG_MAX_ROOTS];
};

/* Adds m (found by sg_shm_mounts_scan, which keeps it open for as long
 * as the listing is used) as a root of l, through its descriptor's path:
 * 0, or -E2BIG when l has SG_MAX_ROOTS roots. */
int sg_shm_listing_add_mount(struct sg_shm_listing *l, const struct sg_shm_mount *m);

/* A directory by its device and inode. */
struct sg_dir_id {
	uint32_t kdev;
	uint64_t ino;
};

/* Reads the roots, then /proc (into l->own).  Returns 0, or a negative
 * errno with err saying what could not be read. */
int sg_shm_list(struct sg_shm_listing *l, char *err, size_t errlen);
void sg_shm_listing_free(struct sg_shm_listing *l);

/* A node's pass: its roots, SG_MAX_ROOTS to a listing, and one reading of
 * /proc for them all, made after every root is read (as a listing's own
 * is after its roots: a creator of a file listed ran before /proc was
 * read). */
struct sg_shm_pass {
	struct sg_shm_listing *l;
	size_t n, cap;
	struct sg_shm_proc proc;
};

/* Adds the mounts of ms (only those whose directory is one of
 * only[0..nonly), when nonly) as the pass's roots.  0, or -ENOMEM. */
int sg_shm_pass_add_mounts(struct sg_shm_pass *p, const struct sg_shm_mounts *ms, const struct sg_dir_id *only,
			   size_t nonly);

/* A new listing of the pass, without roots, for the caller to give some
 * (valid until the next one is added); NULL when memory is short. */
struct sg_shm_listing *sg_shm_pass_add(struct sg_shm_pass *p);

/* Reads every listing's roots, then /proc once, then judges every
 * listing's files.  A listing whose roots cannot be read is said to
 * failed (err, a sentence) and left unlisted.  Returns 0, or a negative
 * errno with err saying what could not be read when /proc cannot be (then
 * no listing is listed). */
int sg_shm_pass_list(struct sg_shm_pass *p, void (*failed)(const char *err, void *ctx), void *ctx, char *err,
		     size_t errlen);

/* The walks of /proc's processes made for the pass's listings. */
unsigned sg_shm_pass_walks(const struct sg_shm_pass *p);
void sg_shm_pass_free(struct sg_shm_pass *p);

/* For `sweep`: removes each journal in root r (dfd, the root's directory)
 * whose creator is dead and none of whose records names a file still there,
 * calling said for each (dry_run: only calls it).  Returns how many. */
size_t sg_shm_reap_journals(struct sg_shm_listing *l, unsigned r, int dfd, bool dry_run,
			    void (*said)(unsigned root, const char *name, void *ctx), void *ctx);

/* What sg_shm_unlink_same() found and did. */
enum sg_unlink_result {
	SG_UNLINK_DONE,     /* unlinked (with dry_run: would have been) */
	SG_UNLINK_GONE,     /* no such name any more: someone else removed it */
	SG_UNLINK_REPLACED, /* the name now refers to another file: left alone */
	SG_UNLINK_FAILED,   /* unlinkat failed (errno set) */
};

/* Unlinks name in dfd only if it still refers to the inode (kdev, ino),
 * checked right before, without following a symlink (which is another
 * inode).  ls's and sweep's decisions, and abort's, end here. */
enum sg_unlink_result sg_shm_unlink_same(int dfd, const char *name, uint32_t kdev, uint64_t ino, bool dry_run);

/* The command name of pid, or "?". */
const char *sg_comm(uint32_t pid, char *buf, size_t len);

#endif
