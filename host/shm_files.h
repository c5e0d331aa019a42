/* What the shm roots hold right now, for `shmguard ls` and `shmguard sweep`:
 * every regular file in each root (symlinks are never followed), and every
 * unlinked file some process still holds open or mapped, with its tag, the
 * state of its creator and its holders. */
#ifndef SHMGUARD_SHM_FILES_H
#define SHMGUARD_SHM_FILES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "config.h"
#include "holders.h"
#include "journal.h"
#include "tag.h"
#include "journal_read.h"

enum sg_creator_state {
	CREATOR_NONE,    /* untagged */
	CREATOR_ALIVE,   /* its pid runs, with the start time the tag names */
	CREATOR_DEAD,    /* no such process, a zombie, or the pid was reused */
	CREATOR_UNKNOWN, /* /proc would not say, it runs in another pid namespace, its identity was
			    * not known to itself (start time or namespace 0), or /proc is another
			    * namespace's */
};

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
	const struct sg_holder *holders;
	size_t nholders;
};

struct sg_shm_listing {
	struct sg_roots roots; /* a root that is the same directory as an earlier one is read once */
	struct sg_shm_file *files;
	size_t n;
	struct sg_holders holders;
	/* The ownership journals found in each root: never listed as files
	 * (names like theirs that are not read as journals are). */
	struct sg_journals journals[SG_MAX_ROOTS];
	unsigned journals_foreign, journals_unread;
};

/* Reads the roots and /proc.  Returns 0, or a negative errno with err saying
 * what could not be read. */
int sg_shm_list(struct sg_shm_listing *l, char *err, size_t errlen);
void sg_shm_listing_free(struct sg_shm_listing *l);

const char *sg_creator_state_name(enum sg_creator_state s);

/* Whether the process a tag or journal names still runs: a reused pid is not
 * the creator (the start time must match), and a creator in another pid
 * namespace than this process's cannot be judged (its pid means another
 * process here). */
enum sg_creator_state sg_creator_state(const struct sg_tag *creator);

/* Whether /proc belongs to another pid namespace than this process's (see
 * sg_proc_is_own): then every creator is unknown. */
bool sg_proc_foreign(void);

/* For `sweep`: removes each journal in root r (dfd, the root's directory)
 * whose creator is dead and none of whose records names a file still there,
 * calling said for each (dry_run: only calls it).  Returns how many. */
size_t sg_shm_reap_journals(const struct sg_shm_listing *l, unsigned r, int dfd, bool dry_run,
			    void (*said)(const char *root, const char *name, void *ctx), void *ctx);

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
