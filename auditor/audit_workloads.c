/* The auditor's workloads (audit_workloads.h). */
#include "audit_workloads.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cgroup_ids.h"
#include "siphash.h"

/* A pod's names are looked for again this often until found: the kubelet
 * makes its log directory as the pod starts. */
#define NAMES_RETRY_S 10.0

static bool is_workload(const struct sg_hnode *node, const void *key)
{
	return sg_hnode_entry(node, struct audit_workload, node)->cgroup_id == *(const uint64_t *)key;
}

void audit_workloads_init(struct audit_workloads *ws, const char *pods_dir, const char *containers_dir,
			  double expiry_s)
{
	*ws = (struct audit_workloads){.pods_dir = pods_dir, .containers_dir = containers_dir, .expiry_s = expiry_s};
}

static void free_workload(struct audit_workload *w)
{
	free(w->path);
	free(w->root);
	free(w);
}

void audit_workloads_free(struct audit_workloads *ws)
{
	for (struct audit_workload *w = ws->oldest, *next; w; w = next) {
		next = w->next;
		free_workload(w);
	}
	free(ws->index.buckets);
	ws->index = (struct sg_htable){0};
	ws->oldest = ws->newest = NULL;
	ws->count = 0;
}

static void look_up_names(struct audit_workloads *ws, struct audit_workload *w, double now_s)
{
	bool want_container = ws->containers_dir && w->ids.container_id[0] && !w->container[0];

	if (!w->ids.pod_uid[0] || (w->pod[0] && !want_container) || now_s < w->names_next_s)
		return;
	w->names_next_s = now_s + NAMES_RETRY_S;
	if (!w->pod[0] && (!ws->pods_dir || !sg_pod_names_find(ws->pods_dir, w->ids.pod_uid, w->ns, w->pod))) {
		w->ns[0] = w->pod[0] = '\0';
		return;
	}
	if (want_container && !sg_container_name_find(ws->containers_dir, w->ids.container_id, w->pod, w->ns, w->container))
		w->container[0] = '\0';
}

/* The path of w's cgroup, asked of the kernel by its id, if it is still there. */
static void resolve(struct audit_workloads *ws, struct audit_workload *w, double now_s)
{
	char path[SG_CGROUP_PATH_MAX];
	int ret;

	if (w->path || w->tries >= AUDIT_WORKLOAD_TRIES)
		return;
	w->tries++;
	if ((ret = sg_cgroup_path(w->cgroup_id, path, sizeof(path))) < 0) {
		if (ret == -ESTALE)
			w->tries = AUDIT_WORKLOAD_TRIES; /* gone: its path is not known, and never guessed */
		return;
	}
	if (!(w->path = strdup(path)))
		return;
	sg_cgroup_parse(w->path, &w->ids);
	look_up_names(ws, w, now_s);
}

struct audit_workload *audit_workload_of(struct audit_workloads *ws, uint64_t cgroup_id, double now_s)
{
	uint64_t h = sg_table_hash(&cgroup_id, sizeof(cgroup_id));
	struct sg_hnode **slot;
	struct audit_workload *w;

	if (sg_htable_reserve(&ws->index, 64) < 0)
		return NULL;
	slot = sg_htable_slot(&ws->index, h, is_workload, &cgroup_id);
	if (*slot) {
		w = sg_hnode_entry(*slot, struct audit_workload, node);
		resolve(ws, w, now_s);
		return w;
	}
	if (!(w = calloc(1, sizeof(*w))))
		return NULL;
	w->node.hash = h;
	w->cgroup_id = cgroup_id;
	w->idle_since_s = now_s;
	sg_htable_insert_at(&ws->index, slot, &w->node);
	w->prev = ws->newest;
	*(ws->newest ? &ws->newest->next : &ws->oldest) = w;
	ws->newest = w;
	ws->count++;
	resolve(ws, w, now_s);
	return w;
}

void audit_workload_note_root(struct audit_workload *w, const char *path)
{
	if (w && !w->root)
		w->root = strdup(path); /* NULL when memory is short: unknown */
}

static void expire(struct audit_workloads *ws, struct audit_workload *w)
{
	ws->expired.workloads++;
	ws->expired.aborts += w->aborts;
	ws->expired.leaked_bytes += w->leaked_bytes;
	ws->expired.leaked_files += w->leaked_files;
	sg_htable_remove(&ws->index, &w->node);
	*(w->prev ? &w->prev->next : &ws->oldest) = w->next;
	*(w->next ? &w->next->prev : &ws->newest) = w->prev;
	ws->count--;
	free_workload(w);
}

void audit_workloads_cycle_end(struct audit_workloads *ws, double now_s)
{
	for (struct audit_workload *w = ws->oldest, *next; w; w = next) {
		next = w->next;
		w->tracked = w->next_tracked;
		w->files = w->next_files;
		w->aborted_held = w->next_aborted_held;
		w->next_tracked = w->next_files = w->next_aborted_held = 0;
		look_up_names(ws, w, now_s);
		if (w->refs)
			w->idle_since_s = now_s;
		else if (now_s - w->idle_since_s >= ws->expiry_s)
			expire(ws, w);
	}
}

bool audit_workload_set_add(struct audit_workload_set *s, struct audit_workload *w)
{
	if (!w)
		return true;
	for (unsigned i = 0; i < s->n; i++)
		if (s->w[i] == w)
			return true;
	if (s->n == s->cap) {
		unsigned cap = s->cap ? s->cap * 2 : 2;
		struct audit_workload **n = realloc(s->w, cap * sizeof(*n));
		if (!n)
			return false;
		s->w = n;
		s->cap = cap;
	}
	audit_workload_hold(w);
	s->w[s->n++] = w;
	return true;
}

void audit_workload_set_free(struct audit_workload_set *s)
{
	for (unsigned i = 0; i < s->n; i++)
		audit_workload_release(s->w[i]);
	free(s->w);
	*s = (struct audit_workload_set){0};
}
