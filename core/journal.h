/* The ownership journal: where the shim records, for other processes, which
 * request and which process created each file, on filesystems with or
 * without user xattrs (tmpfs before Linux 6.6, ramfs).
 *
 * Each process keeps one journal in each shm root it creates files in, a
 * file named SG_JOURNAL_PREFIX... in the root's SG_JOURNAL_DIR when that
 * is trusted, else beside the files.  It is mapped into the
 * process, so a record is written without a system call.  The file is made
 * of 32-byte slots in 2 KiB blocks: slots 0 and 1 are a header naming the
 * creator, then each record takes 1 to SG_JOURNAL_MAX_SPAN consecutive
 * slots of one block (its request and name, however long, and nothing
 * more: 3 slots for a vLLM offload file).  A record's first word is its
 * seal, a hash of its contents stored last, whose first byte is never 0: a
 * record cut short by SIGKILL, or read while it is rewritten, fails the
 * seal and is ignored.  Every other slot of a record starts with a zero
 * byte, and a freed record's seal is 0: a reader that steps slot by slot
 * only ever takes a word the writer sealed as the start of a record, never
 * bytes of a name or request (which clients choose).  The header's
 * slots_used bounds what a reader reads.
 *
 * Trust: anyone may write in /dev/shm.  A reader reads journals in the root
 * and in its SG_JOURNAL_DIR only while sg_journal_dir_trusted() says so,
 * and believes a journal only if
 * it is a regular file with one link that nobody but its owner can write,
 * and believes a record of it only about a file with the same owner: a
 * journal can only speak for files its owner could have created.
 *
 * Errors: a negative errno (docs/architecture.md, "Reporting a failure"). */
#ifndef SHMGUARD_JOURNAL_H
#define SHMGUARD_JOURNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "pattern.h"
#include "tag.h"

#define SG_JOURNAL_PREFIX ".shmguard-journal-"
/* A root's directory of journals, used only where an operator made it
 * (docs/journal.md) and only while sg_journal_dir_trusted() says so: a
 * reader then finds the journals without listing the root. */
#define SG_JOURNAL_DIR ".shmguard"
#define SG_JOURNAL_MAGIC "shmguard-jnl/2\n"
#define SG_JOURNAL_SLOT 32u
#define SG_JOURNAL_BLOCK 2048u
#define SG_JOURNAL_HEAD_SLOTS 2u
#define SG_JOURNAL_BLOCK_SLOTS (SG_JOURNAL_BLOCK / SG_JOURNAL_SLOT)
#define SG_JOURNAL_NO_REQ 0xffu
#define SG_JOURNAL_MAX_SPAN 18u /* slots of the longest record: two names of SG_NAME_MAX */
#define SG_JOURNAL_MAX_BYTES (64u << 20) /* a file's bound: 2,097,152 slots */

struct sg_journal_head {
	char magic[16];
	uint32_t slot_size;
	uint32_t pid;
	uint64_t start_ticks;
	uint64_t pidns; /* inode of the creator's /proc/self/ns/pid */
	uint64_t created_ns;
	uint64_t seal; /* over the fields above */
	/* Not sealed, rewritten as the journal grows and shrinks: no record
	 * lies at or past this slot. */
	uint32_t slots_used;
	uint32_t reserved;
};

/* The first slot of a record. */
struct sg_journal_rec {
	uint64_t seal; /* 0: free, or being written; else its seal */
	uint64_t ino;
	uint64_t created_ns; /* CLOCK_REALTIME(_COARSE) after the file was created */
	uint8_t span;        /* slots it takes */
	uint8_t req_len, name_len;
	/* Where in the name the request stands (a name made from a pattern
	 * holds it: the text then holds the name without it), or SG_JOURNAL_NO_REQ. */
	uint8_t req_at;
	char text[SG_JOURNAL_SLOT - 28]; /* the request then the name, continued in the next slots */
};

/* Each further slot of a record. */
struct sg_journal_cont {
	uint8_t zero;
	char text[SG_JOURNAL_SLOT - 1];
};

_Static_assert(sizeof(struct sg_journal_head) == SG_JOURNAL_HEAD_SLOTS * SG_JOURNAL_SLOT, "the header is two slots");
_Static_assert(sizeof(struct sg_journal_rec) == SG_JOURNAL_SLOT, "a record starts in one slot");
_Static_assert(sizeof(struct sg_journal_cont) == SG_JOURNAL_SLOT, "and goes on in whole slots");

static inline bool sg_journal_name(const char *name)
{
	return strncmp(name, SG_JOURNAL_PREFIX, sizeof(SG_JOURNAL_PREFIX) - 1) == 0;
}

/* Whether st, the fstat of a root's SG_JOURNAL_DIR opened with
 * O_DIRECTORY|O_NOFOLLOW, may hold journals: a directory owned by root
 * with mode 01777 exactly.  In it, as in /dev/shm, only an entry's owner
 * or root may remove or rename the entry; a directory owned by another
 * user would let that user remove everybody's journals. */
static inline bool sg_journal_dir_trusted(const struct stat *st)
{
	return S_ISDIR(st->st_mode) && st->st_uid == 0 && (st->st_mode & 07777) == 01777;
}

/* Writing. */
void sg_journal_head_init(struct sg_journal_head *h, pid_t pid, uint64_t start_ticks, uint64_t pidns,
			  uint64_t created_ns);
/* The slots a record of req and name takes, 0 when either is empty or
 * longer than SG_NAME_MAX. */
unsigned sg_journal_span(const char *req, const char *name);
/* A record's text laid out, and hashed, ahead of its commit: a writer does
 * this before it takes its lock. */
struct sg_journal_text {
	char text[2 * SG_NAME_MAX + SG_JOURNAL_SLOT]; /* len bytes, then zeros to the end of its last slot */
	size_t len, rlen, nlen, req_at;
	uint64_t text_hash;
	unsigned span; /* 0: req or name empty, or longer than SG_NAME_MAX */
};
/* req_at's value when the caller does not know where req stands in name. */
#define SG_JOURNAL_REQ_AT_UNKNOWN ((size_t)-1)
/* Fills t for req (rlen bytes) and name (nlen); its span (as
 * sg_journal_span), 0 when they do not fit.  req_at: where req stands in
 * name, as a pattern found it (checked), or SG_JOURNAL_REQ_AT_UNKNOWN. */
unsigned sg_journal_text_make(struct sg_journal_text *t, const char *req, size_t rlen, const char *name, size_t nlen,
			      size_t req_at);
/* Fills the free slots at (t->span of them, t->span not 0) with the record of
 * ino, created_ns and t, and commits it: the bytes sg_journal_rec_commit
 * writes (the unused end of the last slot zeros), in whole slots. */
void sg_journal_text_commit(void *at, uint64_t ino, uint64_t created_ns, const struct sg_journal_text *t);
/* Fills the free slots at (sg_journal_span() of them) with a record and
 * commits it (the seal stored last, with release order): the plain writer,
 * which the one above must match.  Returns the span, or -EINVAL, writing
 * nothing, when req or name is empty or does not fit. */
int sg_journal_rec_commit(void *at, uint64_t ino, uint64_t created_ns, const char *req, const char *name);
/* The seal the record at (span slots of it readable) calls for, 0 when its
 * fields are out of range: what a reader compares with the stored one. */
uint64_t sg_journal_rec_seal(const void *at, unsigned avail_slots);
static inline void sg_journal_rec_free(void *at)
{
	__atomic_store_n(&((struct sg_journal_rec *)at)->seal, 0, __ATOMIC_RELEASE);
}

/* Whether buf starts with an intact journal header (copied to head). */
bool sg_journal_head_ok(const void *buf, size_t len, struct sg_journal_head *head);

/* Reading a journal's bytes (pure: the unit tests and the fuzzer call it).
 * Returns the number of intact records passed to each (which returns 0 to
 * go on), or -EBADMSG when the header is not an intact journal header. */
struct sg_journal_entry {
	uint64_t ino;
	uint64_t created_ns;
	const char *req;  /* NUL-terminated copies, valid during the call */
	const char *name;
};
int sg_journal_parse(const void *buf, size_t len, struct sg_journal_head *head,
		     int (*each)(const struct sg_journal_entry *e, void *ctx), void *ctx);
/* The same for a part of a journal read apart: buf holds its slots from
 * first (the start of a block, never the header's) on, len bytes of them.
 * Records never cross a block, so the parts of a journal read block by
 * block give its records. */
int sg_journal_parse_part(const void *buf, size_t len, size_t first,
			  int (*each)(const struct sg_journal_entry *e, void *ctx), void *ctx);

/* This process's pid namespace (inode of /proc/self/ns/pid), 0 if unknown. */
uint64_t sg_self_pidns(void);

#endif
