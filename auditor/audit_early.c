/* The files made on a tmpfs before its root was found (a pod's /dev/shm in
 * its first moments): the kernel side sends their creation while their
 * device is new (audit.bpf.c, note_unfollowed), and their creator is kept
 * EARLY_KEEP_S (at most EARLY_KEEP_MAX of them), so that the root's
 * catch-up (audit_events.c) knows who made each file it finds, and for which
 * workload, instead of an unknown creator. */
#include <stdlib.h>
#include <string.h>

#include "audit_kept.h"
#include "audit_trace.h"

#define EARLY_KEEP_S 60.0
#define EARLY_KEEP_MAX 65536

static struct audit_early_create *early_of(struct audit_kept *k)
{
	return (struct audit_early_create *)k;
}

void audit_early_keep(struct audit_kept_list *early, const struct audit_event *e, double now_s)
{
	struct audit_early_create *c;

	if (early->n == EARLY_KEEP_MAX)
		audit_kept_drop(early, &early->head);
	if (!(c = malloc(sizeof(*c))))
		return;
	c->kdev = e->kdev;
	c->tgid = e->tgid;
	c->ino = e->ino;
	c->cgroup_id = e->cgroup_id;
	memcpy(c->comm, e->comm, sizeof(c->comm));
	audit_kept_push(early, &c->k, now_s);
}

bool audit_early_claim(struct audit_kept_list *early, uint32_t kdev, uint64_t ino, struct audit_early_create *out)
{
	/* The newest creation of an inode number is the file's. */
	struct audit_kept **found = NULL;

	for (struct audit_kept **at = &early->head; *at; at = &(*at)->next)
		if (early_of(*at)->kdev == kdev && early_of(*at)->ino == ino)
			found = at;
	if (!found)
		return false;
	*out = *early_of(*found);
	audit_kept_drop(early, found);
	return true;
}

void audit_early_expire(struct audit_kept_list *early, double now_s)
{
	audit_kept_expire(early, now_s - EARLY_KEEP_S);
}

void audit_early_free(struct audit_kept_list *early)
{
	audit_kept_free(early);
}
