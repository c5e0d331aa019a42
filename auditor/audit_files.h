/* The auditor's table of the files created under the shm roots during a
 * run, keyed by device and inode: who created each, its name where known,
 * and the request it belongs to.
 *
 * Errors: nothing here can fail (the auditor reports a failure as a
 * negative errno). */
#ifndef SHMGUARD_AUDIT_FILES_H
#define SHMGUARD_AUDIT_FILES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "htable.h"

enum audit_req_source {
	REQ_NONE,      /* no tag, and no pattern matches the name (or no name) */
	REQ_TAG,       /* the shim's tag: USDT at creation, or the xattr */
	REQ_PATTERN,   /* the one request the patterns give */
	REQ_AMBIGUOUS, /* the patterns give two requests: attributed to none */
};

struct audit_workload;

/* A process that created followed files: one record however many it made
 * in one cgroup. */
struct audit_creator {
	struct sg_hnode node; /* by (tgid, comm, workload) */
	size_t files;         /* it goes with the last */
	struct audit_workload *workload; /* its cgroup's (held), NULL unknown */
	uint32_t tgid;
	char comm[16];
};

/* No file: the end of a link between records. */
#define AUDIT_FILE_NONE UINT32_MAX

/* The auditor follows up to a million of these (docs/performance.md has the
 * bytes per file): records of one size in slabs, linked by their numbers,
 * their names in an arena of strings by size (audit_files.c).  A file that
 * is its request's only one keeps the request as the piece of its own name
 * that spells it (as a pattern's request always does), else as a string of
 * its own; a request of more files is one copy on their chain; the creator
 * is one record for all its files. */
struct audit_file {
	const struct audit_creator *creator;
	union {                       /* set by audit_files_attribute (indexed) */
		const char *copy;     /* its own (alone), or its chain's */
		struct {
			uint8_t at, len;
		} in_name;            /* req_in_name: those bytes of the name */
	} req;
	const char *name;             /* in its root, NULL unknown (audit_files_name) */
	uint64_t ino;
	uint64_t created_ns;          /* monotonic */
	uint64_t bytes;               /* allocated, when last measured */
	uint32_t kdev;                /* kernel encoding, major << 20 | minor */
	uint32_t seen;                /* the review cycle that last found it in a root */
	uint32_t missed;              /* the review cycle that last found it nowhere (unnamed) */
	/* Its number, and the links (AUDIT_FILE_NONE: none) to the next file
	 * of its bucket in the table, to the next of its request's chain (or
	 * of its bucket among the files alone with theirs), and to those made
	 * before and after it (the review's walk). */
	uint32_t self, next, next_of_req, older, newer;
	int16_t root;                 /* index of the shm root holding the name, -1 unknown */
	int8_t shape;                 /* pattern index for REQ_PATTERN */
	uint8_t source;               /* enum audit_req_source */
	bool indexed : 1;             /* has a request, found by it */
	bool alone : 1;               /* its request's only file */
	bool req_in_name : 1;         /* alone, its request a piece of its name */
	bool measured : 1;            /* bytes is known */
	bool looked_up : 1;           /* its request was looked for under its name */
};

/* Room for any request a record holds, with its NUL (a request in a name
 * is no longer than a name). */
#define AUDIT_FILE_REQUEST_MAX 256

/* f's request, NULL none: its own copy, or one made in buf. */
static inline const char *audit_file_request(const struct audit_file *f, char buf[AUDIT_FILE_REQUEST_MAX])
{
	if (!f->indexed)
		return NULL;
	if (!f->req_in_name)
		return f->req.copy;
	memcpy(buf, f->name + f->req.in_name.at, f->req.in_name.len);
	buf[f->req.in_name.len] = '\0';
	return buf;
}

struct audit_files;

struct audit_files *audit_files_new(size_t max_files);
void audit_files_free(struct audit_files *t);

/* The record for (kdev, ino), or NULL. */
struct audit_file *audit_files_find(struct audit_files *t, uint32_t kdev, uint64_t ino);

/* A new record (a reused inode number removes the old one first), or NULL
 * when the table is full (counted: audit_files_over_limit) or the inode is
 * excluded (or memory is short).  Its creator: tgid, whose command name is
 * comm (NUL-terminated within 16 bytes; NULL: none), in the workload w
 * (NULL: none known). */
struct audit_file *audit_files_add(struct audit_files *t, uint32_t kdev, uint64_t ino, uint32_t tgid,
				   const char *comm, struct audit_workload *w);

/* f, in t, is called name (a copy; it may be f's own) in root (-1: outside
 * the roots), or has no name when name is NULL.  False when out of memory:
 * f is as it was. */
bool audit_files_name(struct audit_files *t, struct audit_file *f, int root, const char *name);

/* Sets f's request and indexes f by it (as a piece of its name, or a
 * string of its own, while it is the request's only file, else on the
 * request's chain); a file keeps its first request, except that a tag
 * replaces a pattern's. */
void audit_files_attribute(struct audit_files *t, struct audit_file *f, const char *request,
			   enum audit_req_source source, int shape);

/* Takes f's request away, so that it can be attributed again. */
void audit_files_unattribute(struct audit_files *t, struct audit_file *f);

/* A file that is not to be followed (an abort marker): forgotten if it is
 * in the table, else not added until audit_files_end_exclusions(), which
 * the caller calls once the events that could add it have been read. */
void audit_files_exclude(struct audit_files *t, uint32_t kdev, uint64_t ino);
void audit_files_end_exclusions(struct audit_files *t);

/* Forgets f (freed in the kernel: it cannot matter any more). */
void audit_files_remove(struct audit_files *t, struct audit_file *f);

/* Calls fn for each file of request. */
void audit_files_of_request(struct audit_files *t, const char *request, void (*fn)(struct audit_file *, void *),
			    void *ctx);

/* A walk over every file, oldest first, that may span many turns of the
 * event loop: files added meanwhile come last, a removed file is skipped.
 * audit_files_walk_next() gives NULL at the end. */
void audit_files_walk_begin(struct audit_files *t);
/* The file added last, and the one added before f (NULL: none), towards
 * the oldest. */
struct audit_file *audit_files_newest(struct audit_files *t);
struct audit_file *audit_files_older(struct audit_files *t, const struct audit_file *f);
struct audit_file *audit_files_walk_next(struct audit_files *t);

size_t audit_files_count(const struct audit_files *t);
uint64_t audit_files_over_limit(const struct audit_files *t);

#endif
