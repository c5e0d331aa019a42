/* Reading the ownership journals of a root, for `ls`, `sweep`, `abort` and
 * the auditor: the format and its trust rules are in journal.h.  Host code:
 * never linked into the shim.
 *
 * Errors: a negative errno (docs/architecture.md, "Reporting a failure"). */
#ifndef SHMGUARD_JOURNAL_READ_H
#define SHMGUARD_JOURNAL_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "journal.h"

/* What one listing reads of one root's journals at most. */
#define SG_JOURNALS_READ_MAX (16u << 20)

/* The journals of one directory, read for `ls`, `sweep` and the auditor. */
struct sg_journal_file {
	char *name;
	uint64_t ino;
	uid_t uid;
	struct sg_tag creator; /* pid, start_ticks, pidns; req empty */
	bool in_dir;           /* in the root's SG_JOURNAL_DIR (set by the caller), not the root */
	size_t first, count;   /* its claims, before sg_journals_index() sorts them */
};

struct sg_journal_claim {
	uint64_t ino;
	uint64_t created_ns;
	size_t journal;
	char *req;
	char *name;
};

struct sg_journals {
	struct sg_journal_file *files;
	size_t nfiles;
	struct sg_journal_claim *claims;
	size_t nclaims, claims_cap;
	bool indexed;
	size_t bytes_read; /* from every journal added: header first, then only the slots in use */
	unsigned over_budget; /* intact journals left unread: more to read than allowed */
};

/* What sg_journals_add() made of a name. */
enum sg_journal_verdict {
	SG_JOURNAL_READ,
	SG_JOURNAL_FOREIGN,      /* not an intact journal header, or not trusted: not shmguard's */
	SG_JOURNAL_OVER_BUDGET,  /* intact, but its slots in use are more than max_bytes */
	SG_JOURNAL_GONE,         /* no such file, or not readable */
};

/* Opens the SG_JOURNAL_DIR of the root rootfd: a descriptor when it is a
 * directory to trust (sg_journal_dir_trusted: never through a symlink),
 * -ENOENT when there is none, -EPERM when something else has that name,
 * or another negative errno. */
int sg_journal_dir_open(int rootfd);

/* Reads the journal called name in dirfd if it can be trusted (see above):
 * its header first, then only its slots in use, and not at all when they
 * take more than max_bytes (nor more than SG_JOURNALS_READ_MAX in all).
 * Returns what it made of it, or -ENOMEM; *read gets the bytes
 * read (may be NULL). */
int sg_journals_add_bounded(struct sg_journals *js, int dirfd, const char *name, size_t max_bytes, size_t *read);
/* The same within what is left of SG_JOURNALS_READ_MAX. */
int sg_journals_add(struct sg_journals *js, int dirfd, const char *name);
/* For a journal left unread (SG_JOURNAL_OVER_BUDGET), called name in dirfd
 * (root rootfd, or its SG_JOURNAL_DIR): whether one of its records names a
 * file still in rootfd, by name and inode.  It is read a
 * few blocks at a time, so its size (at most SG_JOURNAL_MAX_BYTES) costs
 * time, not memory, and only if its slots in use are all allocated (not
 * sparse) and take no more than *budget bytes, which they are taken from.
 * ino: the journal's inode as listed.  1 it names one, 0 none (creator
 * then holds its creator, from the header), -1 it cannot tell (gone,
 * changed, no longer to be trusted, sparse, over the budget). */
int sg_journal_names_a_file(int rootfd, int dirfd, const char *name, uint64_t ino, struct sg_tag *creator,
			    size_t *budget);

/* Sorts the claims by inode: call once, after the last add. */
void sg_journals_index(struct sg_journals *js);
void sg_journals_free(struct sg_journals *js);

/* What the journals say about a file of this directory: the newest claim on
 * its inode from a journal of the file's owner, naming it (name; NULL for an
 * unlinked file, which then must have a birth time) and not made before the
 * file was born (btime_ns, 0 when the filesystem does not keep it: a later
 * file that reuses a dead creator's inode number is born after the claim).
 * Returns whether one was found; tag gets the creator and the request. */
bool sg_journals_find(const struct sg_journals *js, uint64_t ino, uid_t uid, const char *name, uint64_t btime_ns,
		      struct sg_tag *tag);

/* Whether some journal claims ino (before the cost of a birth time). */
bool sg_journals_claim_any(const struct sg_journals *js, uint64_t ino);

/* The file's birth time in ns (statx), or 0 where the filesystem has none. */
uint64_t sg_birth_ns(int dirfd, const char *path, int flags);
/* The birth time a statx answer holds, in ns; 0 when it has none. */
struct statx;
uint64_t sg_statx_birth_ns(const struct statx *stx);

#endif
