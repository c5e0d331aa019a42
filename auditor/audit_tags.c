/* The shim tags each file it creates with its request, its device and its
 * inode (USDT).  A tag for a device no root follows is kept for
 * TAG_KEEP_S (at most TAG_KEEP_MAX of them): a pod's root found a moment
 * later claims its files' tags (audit_roots.c's catch-up), and an abort of
 * its request counts each as a file on a filesystem not followed, which the
 * gate fails on (the figure would be diluted: its bytes cannot be seen). */
#include <stdlib.h>
#include <string.h>

#include "audit_engine.h"

/* Longer than a pod takes to be found, and than --grace usually is; a tag
 * older than this whose request has not aborted is counted as expired. */
#define TAG_KEEP_S 60.0
#define TAG_KEEP_MAX 65536

static void drop_first(struct audit *a)
{
	struct audit_pending_tag *t = a->pending;

	a->pending = t->next;
	if (!a->pending)
		a->pending_tail = &a->pending;
	a->npending--;
	free(t);
}

void audit_tags_keep(struct audit *a, uint32_t kdev, uint64_t ino, const char *request)
{
	size_t len = strlen(request);
	struct audit_pending_tag *t;

	if (!a->pending_tail)
		a->pending_tail = &a->pending;
	if (a->npending == TAG_KEEP_MAX) {
		a->tags_expired++;
		drop_first(a);
	}
	if (!(t = malloc(sizeof(*t) + len + 1))) {
		a->tags_expired++;
		return;
	}
	*t = (struct audit_pending_tag){.kdev = kdev, .ino = ino, .at_s = audit_now_s(a)};
	memcpy(t->request, request, len + 1);
	*a->pending_tail = t;
	a->pending_tail = &t->next;
	a->npending++;
}

/* Unlinks *at from the list. */
static void take(struct audit *a, struct audit_pending_tag **at)
{
	struct audit_pending_tag *t = *at;

	*at = t->next;
	if (a->pending_tail == &t->next)
		a->pending_tail = at;
	a->npending--;
	free(t);
}

void audit_tags_claim(struct audit *a, struct audit_file *f)
{
	for (struct audit_pending_tag **at = &a->pending; *at; at = &(*at)->next)
		if ((*at)->kdev == f->kdev && (*at)->ino == f->ino) {
			audit_files_attribute(a->files, f, (*at)->request, REQ_TAG, -1);
			take(a, at);
			return;
		}
}

void audit_tags_count(struct audit *a, struct audit_abort *ab)
{
	for (struct audit_pending_tag **at = &a->pending; *at;) {
		if (strcmp((*at)->request, ab->request) == 0 && audit_root_of_dev(a, (*at)->kdev) < 0) {
			ab->unfollowed_files++;
			a->unfollowed_files++;
			take(a, at);
		} else {
			at = &(*at)->next;
		}
	}
}

void audit_tags_expire(struct audit *a)
{
	double now = audit_now_s(a);

	while (a->pending && a->pending->at_s + TAG_KEEP_S < now) {
		a->tags_expired++;
		drop_first(a);
	}
}

void audit_tags_free(struct audit *a)
{
	while (a->pending)
		drop_first(a);
}
