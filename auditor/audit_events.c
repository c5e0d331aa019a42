/* What the BPF events say about the files under the shm roots. */
#include <linux/types.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <sys/types.h>

#include "audit.h"
#include "audit_event.h"

uint32_t audit_kdev(uint64_t st_dev)
{
	return (uint32_t)(major(st_dev) << 20 | minor(st_dev));
}

static int root_of_dir(const struct audit *a, uint32_t kdev, uint64_t dir_ino)
{
	for (unsigned i = 0; i < a->nroots; i++)
		if (a->roots[i].kdev == kdev && a->roots[i].dir_ino == dir_ino)
			return (int)i;
	return -1;
}

/* The root an absolute path lies directly in, with *name set to the rest. */
static int root_of_path(const struct audit *a, const char *path, const char **name)
{
	for (unsigned i = 0; i < a->nroots; i++) {
		size_t len = strlen(a->roots[i].path);
		const char *rest = path + len + 1;

		if (strncmp(path, a->roots[i].path, len) == 0 && path[len] == '/' && *rest && !strchr(rest, '/')) {
			*name = rest;
			return (int)i;
		}
	}
	return -1;
}

static void set_name(struct audit_file *f, int root, const char *name)
{
	if (f->name && f->root == root && strcmp(f->name, name) == 0)
		return;
	char *copy = strdup(name);
	if (!copy)
		return;
	free(f->name);
	f->name = copy;
	f->root = root;
}

void audit_attribute_by_name(struct audit *a, struct audit_file *f)
{
	char req[SG_NAME_MAX + 1], other[SG_NAME_MAX + 1];
	int shape;

	if (f->indexed || !f->name || f->source == REQ_AMBIGUOUS)
		return;
	switch (sg_patterns_match(&a->o->patterns, f->name, strlen(f->name), req, other, &shape)) {
	case SG_MATCH_ONE:
		audit_files_attribute(a->files, f, req, REQ_PATTERN, shape);
		break;
	case SG_MATCH_AMBIGUOUS:
		f->source = REQ_AMBIGUOUS;
		a->ambiguous++;
		break;
	case SG_MATCH_NONE:
		break;
	}
}

void audit_on_inode(struct audit *a, const struct sg_audit_inode *e)
{
	struct audit_file *f = audit_files_find(a->files, e->dev, e->ino);
	const char *name;
	int root;

	a->events++;
	if (e->created) {
		if (!(f = audit_files_add(a->files, e->dev, e->ino)))
			return;
		f->creator = e->h.tgid;
		memcpy(f->comm, e->h.comm, sizeof(f->comm));
		f->comm[sizeof(f->comm) - 1] = '\0';
		f->created_ns = e->h.ts_ns;
	} else if (!f) {
		return; /* a file that was there before the run, or not the tree's */
	}
	f->size = e->size;
	f->blocks = e->blocks;
	f->unlinked = e->nlink == 0;
	switch (e->name_kind) {
	case SG_AUDIT_NAME_DENTRY:
		root = root_of_dir(a, e->dev, e->parent_ino);
		if (root >= 0)
			set_name(f, root, e->name);
		else
			f->root = -1; /* renamed out of the roots (or into a subdirectory) */
		break;
	case SG_AUDIT_NAME_PATH:
		if ((root = root_of_path(a, e->name, &name)) >= 0)
			set_name(f, root, name);
		break;
	}
}

void audit_on_tag(struct audit *a, const struct sg_audit_tag *e)
{
	struct audit_file *f = audit_files_find(a->files, audit_kdev(e->dev), e->ino);

	a->events++;
	if (f && e->request[0])
		audit_files_attribute(a->files, f, e->request, REQ_TAG, -1);
}
