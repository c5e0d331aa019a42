/* The run's leftovers grouped for the reports (audit_summary.h). */
#include "audit_summary.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct group *group_of(struct groups *gs, const char *key)
{
	for (size_t i = 0; i < gs->n; i++)
		if (strcmp(gs->g[i].key, key) == 0)
			return &gs->g[i];
	if (gs->n == gs->cap) {
		size_t cap = gs->cap ? gs->cap * 2 : 16;
		struct group *g = realloc(gs->g, cap * sizeof(*g));
		if (!g)
			return NULL;
		gs->g = g;
		gs->cap = cap;
	}
	struct group *g = &gs->g[gs->n++];
	memset(g, 0, sizeof(*g));
	snprintf(g->key, sizeof(g->key), "%s", key);
	return g;
}

static int by_bytes(const void *x, const void *y)
{
	const struct group *a = x, *b = y;
	return (a->bytes < b->bytes) - (a->bytes > b->bytes);
}

const char *audit_shape_text(const struct audit *a, int shape)
{
	return audit_attribution_shape_text(&a->attribution, shape);
}

/* A command's leftovers, one group per name shape: no pid in the key, so
 * that a case of the JUnit file has the same name in every run. */
static void proc_key(const char *comm, int shape, char *key, size_t len)
{
	snprintf(key, len, "%s\t%d", comm, shape);
}

static void add_pid(struct group *g, uint32_t pid)
{
	unsigned listed = g->npids < GROUP_PIDS ? g->npids : GROUP_PIDS;

	for (unsigned i = 0; i < listed; i++)
		if (g->pids[i] == pid)
			return;
	if (g->npids < GROUP_PIDS)
		g->pids[g->npids] = pid;
	g->npids++;
}

bool audit_group_is(const struct group *g, const char *comm, int shape)
{
	char key[sizeof(g->key)];

	proc_key(comm, shape, key, sizeof(key));
	return strcmp(key, g->key) == 0;
}

bool audit_group_has(const struct group *g, const struct audit_leftover *l)
{
	return audit_group_is(g, l->comm, l->shape);
}

void audit_group_add(const struct audit *a, struct groups *by_proc, struct groups *by_shape,
		     const struct audit_leftover *l)
{
	char key[96];
	struct group *g;

	proc_key(l->comm, l->shape, key, sizeof(key));
	if (by_proc && (g = group_of(by_proc, key))) {
		add_pid(g, l->creator);
		g->shape = l->shape;
		g->bytes += l->bytes;
		g->files++;
		g->segments += l->segment;
	}
	if (by_shape && (g = group_of(by_shape, audit_shape_text(a, l->shape)))) {
		g->shape = l->shape;
		g->bytes += l->bytes;
		g->files++;
		g->segments += l->segment;
	}
}

static void copy_groups(struct groups *to, const struct groups *from)
{
	if (!from->n || !(to->g = malloc(from->n * sizeof(*to->g))))
		return;
	memcpy(to->g, from->g, from->n * sizeof(*to->g));
	to->n = to->cap = from->n;
}

void audit_group_leftovers(const struct audit *a, struct groups *by_proc, struct groups *by_shape)
{
	/* The folded aborts come first: they are the older ones. */
	if (a->abort_set.folded) {
		copy_groups(by_proc, &a->abort_set.folded->by_proc);
		copy_groups(by_shape, &a->abort_set.folded->by_shape);
	}
	for (const struct audit_abort *ab = a->abort_set.aborts; ab; ab = ab->next)
		for (const struct audit_leftover *l = ab->leftovers; l; l = l->next)
			audit_group_add(a, by_proc, by_shape, l);
	if (by_proc->n)
		qsort(by_proc->g, by_proc->n, sizeof(struct group), by_bytes);
	if (by_shape->n)
		qsort(by_shape->g, by_shape->n, sizeof(struct group), by_bytes);
}

void audit_group_fold(const struct audit *a, struct audit_folded *f, const struct audit_leftover *l)
{
	char key[96];
	struct group *g[2];

	audit_group_add(a, &f->by_proc, &f->by_shape, l);
	proc_key(l->comm, l->shape, key, sizeof(key));
	g[0] = group_of(&f->by_proc, key);
	g[1] = group_of(&f->by_shape, audit_shape_text(a, l->shape));
	for (int i = 0; i < 2; i++)
		if (g[i] && g[i]->last_fold != f->folds) {
			g[i]->last_fold = f->folds;
			g[i]->requests_folded++;
		}
}
