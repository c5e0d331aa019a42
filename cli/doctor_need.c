#include "doctor_need.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statfs.h>

#include "cli.h"
#include "doctor.h"
#include "shm_files.h"
#include "text.h"
#include "size.h"

/* Holders shown when a root is too full. */
#define TOP 5

/* The files of one request made by one creator (or, untagged, by one uid). */
struct group {
	const struct sg_shm_file *first;
	uint64_t bytes;
	size_t files;
};

static bool same_group(const struct sg_shm_file *a, const struct sg_shm_file *b)
{
	if (a->tagged != b->tagged || a->journal_like != b->journal_like)
		return false;
	return a->tagged ? a->tag.pid == b->tag.pid && a->tag.start_ticks == b->tag.start_ticks && strcmp(a->tag.req, b->tag.req) == 0
			 : a->uid == b->uid;
}

static int by_bytes(const void *x, const void *y)
{
	const struct group *a = x, *b = y;
	return (a->bytes < b->bytes) - (a->bytes > b->bytes);
}

/* What sweep --dead would remove: a dead creator's file nobody uses. */
static bool reclaimable(const struct sg_shm_file *f)
{
	return f->linked && f->tagged && f->creator == CREATOR_DEAD && f->nholders == 0;
}

static void print_group(const struct group *g)
{
	const struct sg_shm_file *f = g->first;
	char b[16], req[SG_ESCAPED_MAX];

	if (f->journal_like)
		doctor_note("%10s  %zu %s of uid %u named like shmguard's journals but not its own (never swept)",
		       sg_human_bytes(g->bytes, b, sizeof(b)), SG_PLURAL(g->files, "file", "files"), (unsigned)f->uid);
	else if (f->tagged)
		doctor_note("%10s  %zu %s of request %s, creator %u (%s)", sg_human_bytes(g->bytes, b, sizeof(b)), SG_PLURAL(g->files, "file", "files"), sg_text_escape(f->tag.req, req, sizeof(req)),
		       f->tag.pid, sg_creator_state_name(f->creator));
	else
		doctor_note("%10s  %zu untagged %s of uid %u", sg_human_bytes(g->bytes, b, sizeof(b)),
		       SG_PLURAL(g->files, "file", "files"), (unsigned)f->uid);
}

/* Why the root is full: its largest holders, and what sweep --dead frees. */
static void explain(const char *root)
{
	struct sg_shm_listing l = {0};
	struct group *groups = NULL;
	size_t ngroups = 0;
	uint64_t dead = 0, held = 0;
	char err[256], b[16];
	const char *why = NULL;

	if (sg_roots_add(&l.roots, root, &why) == 0 && sg_shm_list(&l, err, sizeof(err)) < 0)
		why = err;
	if (why) {
		doctor_note("cannot tell what holds it: %s", why);
		goto cleanup;
	}
	groups = calloc(l.n ? l.n : 1, sizeof(*groups));
	if (!groups) {
		doctor_note("cannot tell what holds it: out of memory");
		goto cleanup;
	}
	for (size_t i = 0; i < l.n; i++) {
		const struct sg_shm_file *f = &l.files[i];
		size_t k = 0;

		if (reclaimable(f))
			dead += f->bytes;
		if (!f->linked)
			held += f->bytes;
		while (k < ngroups && !same_group(groups[k].first, f))
			k++;
		if (k == ngroups)
			groups[ngroups++].first = f;
		groups[k].bytes += f->bytes;
		groups[k].files++;
	}
	qsort(groups, ngroups, sizeof(*groups), by_bytes);
	doctor_note("largest holders:%s", ngroups ? "" : " none (the space is not held by files)");
	for (size_t k = 0; k < ngroups && k < TOP; k++)
		print_group(&groups[k]);
	if (held)
		doctor_note("%s of it unlinked but still held open or mapped: freed when its holders let go",
		       sg_human_bytes(held, b, sizeof(b)));
	doctor_note("%s belongs to dead creators and no process uses it: `shmguard sweep --dead` reclaims it",
	       sg_human_bytes(dead, b, sizeof(b)));
	if (l.proc->holders.unreadable)
		doctor_note("(%u %s cannot be read, such as %u: sweep keeps files they might use "
			    "unless --ignore-unreadable)",
		       SG_PLURAL(l.proc->holders.unreadable, "process", "processes"), l.proc->holders.first_unreadable);
cleanup:
	free(groups);
	sg_shm_listing_free(&l);
}

int doctor_need(const char *root, uint64_t need)
{
	struct statfs fs;
	char b1[16], b2[16];
	uint64_t avail;

	if (statfs(root, &fs) < 0)
		return doctor_line("need", false, "%s cannot be read: %s", root, strerror(errno));
	avail = (uint64_t)fs.f_bavail * (uint64_t)fs.f_bsize;
	if (avail >= need)
		return doctor_line("need", true, "%s has %s free, %s needed", root, sg_human_bytes(avail, b1, sizeof(b1)),
				   sg_human_bytes(need, b2, sizeof(b2)));
	doctor_line("need", false, "%s has %s free, %s needed", root, sg_human_bytes(avail, b1, sizeof(b1)),
		    sg_human_bytes(need, b2, sizeof(b2)));
	explain(root);
	return 1;
}
