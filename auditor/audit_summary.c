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
	return shape >= 0 ? a->o->patterns.patterns[shape].text : "(shim tag)";
}

/* A command's leftovers, one group per name shape: no pid in the key, so
 * that a case of the JUnit file has the same name in every run. */
static void proc_key(const struct audit_leftover *l, char *key, size_t len)
{
	snprintf(key, len, "%s\t%d", l->comm, l->shape);
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

bool audit_group_has(const struct group *g, const struct audit_leftover *l)
{
	char key[sizeof(g->key)];

	proc_key(l, key, sizeof(key));
	return strcmp(key, g->key) == 0;
}

void audit_group_leftovers(const struct audit *a, struct groups *by_proc, struct groups *by_shape)
{
	char key[96];

	for (const struct audit_abort *ab = a->aborts; ab; ab = ab->next) {
		for (const struct audit_leftover *l = ab->leftovers; l; l = l->next) {
			struct group *g;
			proc_key(l, key, sizeof(key));
			if ((g = group_of(by_proc, key))) {
				add_pid(g, l->creator);
				g->shape = l->shape;
				g->bytes += l->bytes;
				g->files++;
				g->segments += l->segment;
			}
			if ((g = group_of(by_shape, audit_shape_text(a, l->shape)))) {
				g->shape = l->shape;
				g->bytes += l->bytes;
				g->files++;
				g->segments += l->segment;
			}
		}
	}
	if (by_proc->n)
		qsort(by_proc->g, by_proc->n, sizeof(struct group), by_bytes);
	if (by_shape->n)
		qsort(by_shape->g, by_shape->n, sizeof(struct group), by_bytes);
}
