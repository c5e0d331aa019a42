/* The auditor's table of the files created under the shm roots during a
 * run, keyed by device and inode: who created each, its name where known,
 * and the request it belongs to. */
#ifndef SHMGUARD_AUDIT_FILES_H
#define SHMGUARD_AUDIT_FILES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum audit_req_source {
	REQ_NONE,      /* no tag, and no pattern matches the name (or no name) */
	REQ_TAG,       /* the shim's tag: USDT at creation, or the xattr */
	REQ_PATTERN,   /* the one request the patterns give */
	REQ_AMBIGUOUS, /* the patterns give two requests: attributed to none */
};

struct audit_file {
	struct audit_file *next;      /* hash chain */
	struct audit_file *next_of_req; /* request index chain */
	uint32_t kdev;                /* kernel encoding, major << 20 | minor */
	uint64_t ino;
	int root;                     /* index of the shm root holding the name, -1 unknown */
	char *name;                   /* name in that root, NULL unknown */
	uint32_t creator;             /* tgid */
	char comm[16];
	uint64_t created_ns;          /* monotonic */                    /* its inode number was reused: this file is freed */
	enum audit_req_source source;
	int shape;                    /* pattern index for REQ_PATTERN */
	char *request;
	bool indexed;                 /* on its request's chain */
};

struct audit_files;

struct audit_files *audit_files_new(size_t max_files);
void audit_files_free(struct audit_files *t);

/* The record for (kdev, ino), or NULL. */
struct audit_file *audit_files_find(struct audit_files *t, uint32_t kdev, uint64_t ino);

/* A new record (a reused inode number removes the old one first), or NULL
 * when the table is full (counted: audit_files_over_limit). */
struct audit_file *audit_files_add(struct audit_files *t, uint32_t kdev, uint64_t ino);

/* Sets f's request (taking a copy) and puts it on that request's chain; a
 * file keeps its first request, except that a tag replaces a pattern's. */
void audit_files_attribute(struct audit_files *t, struct audit_file *f, const char *request,
			   enum audit_req_source source, int shape);

/* Takes f's request away, so that it can be attributed again. */
void audit_files_unattribute(struct audit_files *t, struct audit_file *f);

/* Forgets f (freed in the kernel: it cannot matter any more). */
void audit_files_remove(struct audit_files *t, struct audit_file *f);

/* Calls fn for each file of request. */
void audit_files_of_request(struct audit_files *t, const char *request, void (*fn)(struct audit_file *, void *),
			    void *ctx);

/* Calls fn for every file; fn may remove the file it is given. */
void audit_files_each(struct audit_files *t, void (*fn)(struct audit_file *, void *), void *ctx);

uint64_t audit_files_over_limit(const struct audit_files *t);

#endif
