/* The ownership journal: where the shim records, for other processes, which
 * request and which process created each file, on filesystems with or
 * without user xattrs (tmpfs before Linux 6.6, ramfs).
 *
 * Each process keeps one journal in each shm root it creates files in, a
 * file named SG_JOURNAL_PREFIX... beside the files.  It is mapped into the
 * process, so a record is written without a system call: a 64-byte header
 * naming the creator, then fixed-size records.  A record is committed last,
 * by storing the seal (a hash of its contents) into its first word: a record
 * cut short by SIGKILL, or read while it is rewritten, fails the seal and is
 * ignored.  A freed record's seal is 0 and its slot is reused.
 *
 * Trust: anyone may write in /dev/shm.  A reader believes a journal only if
 * it is a regular file with one link that nobody but its owner can write,
 * and believes a record of it only about a file with the same owner: a
 * journal can only speak for files its owner could have created. */
#ifndef SHMGUARD_JOURNAL_H
#define SHMGUARD_JOURNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>

#include "pattern.h"
#include "tag.h"

#define SG_JOURNAL_PREFIX ".shmguard-journal-"
#define SG_JOURNAL_MAGIC "shmguard-jnl/1\n"
#define SG_JOURNAL_MAX_BYTES (64u << 20) /* a reader's bound: about 120,000 records */

struct sg_journal_head {
	char magic[16];
	uint32_t rec_size;
	uint32_t pid;
	uint64_t start_ticks;
	uint64_t pidns; /* inode of the creator's /proc/self/ns/pid */
	uint64_t created_ns;
	uint64_t seal;
	uint8_t reserved[8];
};

struct sg_journal_rec {
	uint64_t seal; /* 0: free, or being written; else sg_journal_rec_seal() */
	uint64_t ino;
	uint64_t created_ns; /* CLOCK_REALTIME(_COARSE) after the file was created */
	uint16_t req_len, name_len;
	uint32_t reserved;
	char req[SG_NAME_MAX + 1];
	char name[SG_NAME_MAX + 1]; /* under the root */
};

_Static_assert(sizeof(struct sg_journal_head) == 64, "journal header is 64 bytes");
_Static_assert(sizeof(struct sg_journal_rec) % 8 == 0, "records keep their seal aligned");

static inline bool sg_journal_name(const char *name)
{
	return strncmp(name, SG_JOURNAL_PREFIX, sizeof(SG_JOURNAL_PREFIX) - 1) == 0;
}

/* Writing. */
void sg_journal_head_init(struct sg_journal_head *h, pid_t pid, uint64_t start_ticks, uint64_t pidns,
			  uint64_t created_ns);
/* Fills a free record and commits it (the seal stored last, with release
 * order).  Returns -1, writing nothing, when req or name does not fit. */
int sg_journal_rec_commit(struct sg_journal_rec *r, uint64_t ino, uint64_t created_ns, const char *req,
			  const char *name);
/* The seal a record's contents call for (0 when its lengths are out of
 * range): what a reader compares with the stored one. */
uint64_t sg_journal_rec_seal(const struct sg_journal_rec *r);
static inline void sg_journal_rec_free(struct sg_journal_rec *r)
{
	__atomic_store_n(&r->seal, 0, __ATOMIC_RELEASE);
}

/* Reading a journal's bytes (pure: the unit tests and the fuzzer call it).
 * Returns the number of intact records passed to each (which returns 0 to
 * go on), or -1 when the header is not an intact journal header. */
struct sg_journal_entry {
	uint64_t ino;
	uint64_t created_ns;
	const char *req;  /* NUL-terminated copies, valid during the call */
	const char *name;
};
int sg_journal_parse(const void *buf, size_t len, struct sg_journal_head *head,
		     int (*each)(const struct sg_journal_entry *e, void *ctx), void *ctx);

/* The journals of one directory, read for `ls`, `sweep` and the auditor. */
struct sg_journal_file {
	char *name;
	uint64_t ino;
	uid_t uid;
	struct sg_tag creator; /* pid, start_ticks, pidns; req empty */
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
};

/* Reads the journal called name in dirfd if it can be trusted (see above);
 * an untrusted or unreadable one is skipped.  Returns 0, or -1 without
 * memory. */
int sg_journals_add(struct sg_journals *js, int dirfd, const char *name);
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

/* This process's pid namespace (inode of /proc/self/ns/pid), 0 if unknown. */
uint64_t sg_self_pidns(void);

#endif
