/* Records kept a while for a root found later, oldest first: the shim's
 * tags of files on devices not followed (audit_tags.c) and the creators of
 * files made in a new tmpfs's first moments (audit_early.c), in struct
 * audit_pending, which only those two files change.  Each record starts
 * with a struct audit_kept; the list is bounded by its owner.
 *
 * Errors: nothing here can fail (the auditor reports a failure as a
 * negative errno). */
#ifndef SHMGUARD_AUDIT_KEPT_H
#define SHMGUARD_AUDIT_KEPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

struct audit_kept {
	struct audit_kept *next;
	double at_s; /* when it was kept (audit_now_s) */
};

struct audit_kept_list {
	struct audit_kept *head, **tail; /* tail NULL: empty, never used */
	size_t n;
};

static inline void audit_kept_push(struct audit_kept_list *l, struct audit_kept *k, double now_s)
{
	if (!l->tail)
		l->tail = &l->head;
	k->next = NULL;
	k->at_s = now_s;
	*l->tail = k;
	l->tail = &k->next;
	l->n++;
}

/* Unlinks *at (a pointer to a next member, or to head) and frees it. */
static inline void audit_kept_drop(struct audit_kept_list *l, struct audit_kept **at)
{
	struct audit_kept *k = *at;

	*at = k->next;
	if (l->tail == &k->next)
		l->tail = at;
	l->n--;
	free(k);
}

/* Drops the records kept before before_s; returns how many. */
static inline size_t audit_kept_expire(struct audit_kept_list *l, double before_s)
{
	size_t n = 0;

	while (l->head && l->head->at_s < before_s) {
		audit_kept_drop(l, &l->head);
		n++;
	}
	return n;
}

static inline void audit_kept_free(struct audit_kept_list *l)
{
	while (l->head)
		audit_kept_drop(l, &l->head);
}

struct audit;
struct audit_abort;
struct audit_event;
struct audit_file;

/* A shim's tag for a file on a device no root follows (yet): kept for a
 * while, so that a root found late claims it, and an abort of its request
 * counts it as a file not followed (audit_tags.c). */
struct audit_pending_tag {
	struct audit_kept k; /* first: kept in a->pending.tags */
	uint32_t kdev;
	uint64_t ino;
	char request[];
};

/* A file the kernel side saw created on a tmpfs no root follows, in the
 * first moments of its device (a pod's /dev/shm before it is found): its
 * creator, for the root's catch-up (audit_early.c). */
struct audit_early_create {
	struct audit_kept k; /* first: kept in a->pending.early */
	uint32_t kdev, tgid;
	uint64_t ino, cgroup_id;
	char comm[16];
};

/* Records kept for a root found later (audit_tags.c, audit_early.c), oldest first. */
struct audit_pending {
	struct audit_kept_list tags;  /* struct audit_pending_tag (audit_tags.c) */
	struct audit_kept_list early; /* struct audit_early_create (audit_early.c) */
	uint64_t tags_expired; /* kept as long as allowed, never claimed nor counted */
	uint64_t unfollowed_files; /* files of aborted requests on filesystems not followed */
};

/* audit_tags.c: tags of files on devices not followed. */
void audit_tags_keep(struct audit *a, uint32_t kdev, uint64_t ino, const char *request);
/* f, just followed, takes the tag kept for it, if any. */
void audit_tags_claim(struct audit *a, struct audit_file *f);
/* ab is measured: the tags kept for its request are its files not followed. */
void audit_tags_count(struct audit *a, struct audit_abort *ab);
void audit_tags_expire(struct audit *a);
void audit_tags_free(struct audit *a);
/* audit_early.c: the creators of files made on a tmpfs before its root
 * was found, kept a while for the root's catch-up. */
void audit_early_keep(struct audit_kept_list *early, const struct audit_event *e, double now_s);
/* The creator kept for (kdev, ino), taken: false if none. */
bool audit_early_claim(struct audit_kept_list *early, uint32_t kdev, uint64_t ino, struct audit_early_create *out);
void audit_early_expire(struct audit_kept_list *early, double now_s);
void audit_early_free(struct audit_kept_list *early);

#endif
