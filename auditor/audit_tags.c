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

static struct audit_pending_tag *tag_of(struct audit_kept *k)
{
	return (struct audit_pending_tag *)k;
}

void audit_tags_keep(struct audit *a, uint32_t kdev, uint64_t ino, const char *request)
{
	size_t len = strlen(request);
	struct audit_pending_tag *t;

	if (a->pending.tags.n == TAG_KEEP_MAX) {
		a->pending.tags_expired++;
		audit_kept_drop(&a->pending.tags, &a->pending.tags.head);
	}
	if (!(t = malloc(sizeof(*t) + len + 1))) {
		a->pending.tags_expired++;
		return;
	}
	t->kdev = kdev;
	t->ino = ino;
	memcpy(t->request, request, len + 1);
	audit_kept_push(&a->pending.tags, &t->k, audit_now_s(a));
}

void audit_tags_claim(struct audit *a, struct audit_file *f)
{
	for (struct audit_kept **at = &a->pending.tags.head; *at; at = &(*at)->next)
		if (tag_of(*at)->kdev == f->kdev && tag_of(*at)->ino == f->ino) {
			audit_files_attribute(a->files, f, tag_of(*at)->request, REQ_TAG, -1);
			audit_kept_drop(&a->pending.tags, at);
			return;
		}
}

void audit_tags_count(struct audit *a, struct audit_abort *ab)
{
	for (struct audit_kept **at = &a->pending.tags.head; *at;) {
		if (strcmp(tag_of(*at)->request, ab->request) == 0 && audit_root_of_dev(a, tag_of(*at)->kdev) < 0) {
			ab->unfollowed_files++;
			a->pending.unfollowed_files++;
			audit_kept_drop(&a->pending.tags, at);
		} else {
			at = &(*at)->next;
		}
	}
}

void audit_tags_expire(struct audit *a)
{
	a->pending.tags_expired += audit_kept_expire(&a->pending.tags, audit_now_s(a) - TAG_KEEP_S);
}

void audit_tags_free(struct audit *a)
{
	audit_kept_free(&a->pending.tags);
}
