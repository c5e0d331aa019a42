/* The files made on a tmpfs before its root was found (a pod's /dev/shm in
 * its first moments): the kernel side sends their creation while their
 * device is new (audit.bpf.c, note_unfollowed), and their creator is kept
 * EARLY_KEEP_S (at most EARLY_KEEP_MAX of them), so that the root's
 * catch-up (audit_roots.c) knows who made each file it finds, and for which
 * workload, instead of an unknown creator. */
#include <linux/types.h>
#include <stdlib.h>
#include <string.h>

#include "audit_engine.h"
#include "audit_event.h"

#define EARLY_KEEP_S 60.0
#define EARLY_KEEP_MAX 65536

static void drop_first(struct audit *a)
{
	struct audit_early_create *c = a->early;

	a->early = c->next;
	if (!a->early)
		a->early_tail = &a->early;
	a->nearly--;
	free(c);
}

void audit_early_keep(struct audit *a, const struct sg_audit_header *h, uint32_t kdev, uint64_t ino)
{
	struct audit_early_create *c;

	if (!a->early_tail)
		a->early_tail = &a->early;
	if (a->nearly == EARLY_KEEP_MAX)
		drop_first(a);
	if (!(c = malloc(sizeof(*c))))
		return;
	*c = (struct audit_early_create){.kdev = kdev, .tgid = h->tgid, .ino = ino, .cgroup_id = h->cgroup_id,
					 .at_s = audit_now_s(a)};
	memcpy(c->comm, h->comm, sizeof(c->comm));
	c->comm[sizeof(c->comm) - 1] = '\0';
	*a->early_tail = c;
	a->early_tail = &c->next;
	a->nearly++;
}

bool audit_early_claim(struct audit *a, uint32_t kdev, uint64_t ino, struct audit_early_create *out)
{
	/* The newest creation of an inode number is the file's. */
	struct audit_early_create **found = NULL;

	for (struct audit_early_create **at = &a->early; *at; at = &(*at)->next)
		if ((*at)->kdev == kdev && (*at)->ino == ino)
			found = at;
	if (!found)
		return false;
	struct audit_early_create *c = *found;
	*out = *c;
	*found = c->next;
	if (a->early_tail == &c->next)
		a->early_tail = found;
	a->nearly--;
	free(c);
	return true;
}

void audit_early_expire(struct audit *a)
{
	double now = audit_now_s(a);

	while (a->early && a->early->at_s + EARLY_KEEP_S < now)
		drop_first(a);
}

void audit_early_free(struct audit *a)
{
	while (a->early)
		drop_first(a);
}
