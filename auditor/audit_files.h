/* The auditor's table of the files created under the shm roots during a
 * run, keyed by device and inode: who created each, its name where known,
 * and the request it belongs to. */
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
	/* The tail its last file needed, for its name and for its request:
	 * its next file's room. */
	uint8_t name_hint, request_hint;
};

/* Packed: the auditor follows up to a million of these (docs/performance.md
 * has the bytes per file).  The record's tail holds, from its start, the
 * name, or a pointer to it when it does not fit.  A file that is its
 * request's only one keeps the request as a piece of its own name where
 * the name holds it (as a pattern's request always is), else at the
 * tail's end.  A request of more files is one copy on their chain; the
 * creator is one record for all its files. */
struct audit_file {
	struct sg_hnode node;         /* in the table, by (kdev, ino) */
	/* The next file of its request (by_req.next), or, its request's only
	 * file, its node in the table of those (by the request's hash). */
	struct sg_hnode by_req;
	struct audit_file *prev_all, *next_all; /* every file, oldest first (the review's walk) */
	union {                       /* set by audit_files_attribute (indexed) */
		const char *copy;     /* the chain's, or the tail's */
		struct {
			uint8_t at, len;
		} in_name;            /* req_in_name: those bytes of the name */
	} req;
	const struct audit_creator *creator;
	uint64_t ino;
	uint64_t created_ns;          /* monotonic */
	uint64_t bytes;               /* allocated, when last measured */
	uint32_t kdev;                /* kernel encoding, major << 20 | minor */
	uint32_t seen;                /* the review cycle that last found it in a root */
	uint32_t missed;              /* the review cycle that last found it nowhere (unnamed) */
	int16_t root;                 /* index of the shm root holding the name, -1 unknown */
	int8_t shape;                 /* pattern index for REQ_PATTERN */
	uint8_t source;               /* enum audit_req_source */
	bool indexed : 1;             /* has a request, found by it */
	bool alone : 1;               /* its request's only file, the request in the tail */
	bool measured : 1;            /* bytes is known */
	bool looked_up : 1;           /* its request was looked for under its name */
	bool named : 1;               /* the name is known (audit_files_name) */
	bool name_outside : 1;        /* the tail holds a pointer to the name */
	bool req_in_name : 1;         /* its request is a piece of its name (alone) */
	uint8_t tail_room;            /* bytes of tail, at least a pointer's */
	char tail[];
};

/* f's name in its root, NULL unknown. */
static inline const char *audit_file_name(const struct audit_file *f)
{
	const char *name;

	if (!f->named)
		return NULL;
	if (!f->name_outside)
		return f->tail;
	memcpy(&name, f->tail, sizeof(name)); /* the tail is not aligned */
	return name;
}

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
	memcpy(buf, audit_file_name(f) + f->req.in_name.at, f->req.in_name.len);
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
 * (NULL: none known).  name_len: the length
 * of the name it is about to be given (its room in the record), 0 if none is
 * known. */
struct audit_file *audit_files_add(struct audit_files *t, uint32_t kdev, uint64_t ino, uint32_t tgid,
				   const char *comm, struct audit_workload *w, size_t name_len);

/* f, in t, is called name (a copy; it may be f's own) in root (-1: outside
 * the roots), or has no name when name is NULL.  False when out of memory:
 * f is as it was. */
bool audit_files_name(struct audit_files *t, struct audit_file *f, int root, const char *name);

/* Sets f's request and indexes f by it (in its name or its tail when it is
 * the request's only file and either holds it, else on the request's
 * chain); a file keeps its first request, except that a tag replaces a
 * pattern's. */
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
/* The file added last (then prev_all, towards the oldest). */
struct audit_file *audit_files_newest(struct audit_files *t);
struct audit_file *audit_files_walk_next(struct audit_files *t);

size_t audit_files_count(const struct audit_files *t);
uint64_t audit_files_over_limit(const struct audit_files *t);

#endif
