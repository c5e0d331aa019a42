/* Records kept a while for a root found later, oldest first: the shim's
 * tags of files on devices not followed (audit_tags.c) and the creators of
 * files made in a new tmpfs's first moments (audit_early.c).  Each record
 * starts with a struct audit_kept; the list is bounded by its owner.
 *
 * Errors: nothing here can fail (the auditor reports a failure as a
 * negative errno). */
#ifndef SHMGUARD_AUDIT_KEPT_H
#define SHMGUARD_AUDIT_KEPT_H

#include <stddef.h>
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

#endif
