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
			  double expiry_s, size_t series_max)
{
	*ws = (struct audit_workloads){.pods_dir = pods_dir, .containers_dir = containers_dir, .expiry_s = expiry_s,
				       .series_max = series_max};
}

static void free_workload(struct audit_workload *w)
{
	free(w->path);
	free(w->root.shown);
	free(w);
}

void audit_workloads_free(struct audit_workloads *ws)
{
	for (struct audit_workload *w = ws->oldest, *next; w; w = next) {
		next = w->next;
		free_workload(w);
	}
	for (struct audit_workload *w = ws->incarnations, *next; w; w = next) {
		next = w->next;
		free_workload(w);
	}
	ws->incarnations = NULL;
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

/* The workload of the container whose new cgroup w is (restarted in place:
 * the same container ID in the same pod), or NULL. */
static struct audit_workload *first_incarnation(const struct audit_workloads *ws, const struct audit_workload *w)
{
	if (!w->ids.container_id[0])
		return NULL;
	for (struct audit_workload *o = ws->oldest; o; o = o->next)
		if (strcmp(o->ids.container_id, w->ids.container_id) == 0 && strcmp(o->ids.pod_uid, w->ids.pod_uid) == 0)
			return o;
	return NULL;
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
		if (w->incarnation_of) {
			w->idle_since_s = now_s;
			return w->incarnation_of;
		}
		resolve(ws, w, now_s);
		return w;
	}
	if (!(w = calloc(1, sizeof(*w))))
		return NULL;
	w->node.hash = h;
	w->cgroup_id = cgroup_id;
	w->idle_since_s = now_s;
	sg_htable_insert_at(&ws->index, slot, &w->node);
	resolve(ws, w, now_s);
	if ((w->incarnation_of = first_incarnation(ws, w))) {
		audit_workload_hold(w->incarnation_of);
		w->next = ws->incarnations;
		ws->incarnations = w;
		return w->incarnation_of;
	}
	w->folded = ws->series_max && ws->shown >= ws->series_max;
	ws->shown += !w->folded;
	w->prev = ws->newest;
	*(ws->newest ? &ws->newest->next : &ws->oldest) = w;
	ws->newest = w;
	ws->count++;
	return w;
}

void audit_workload_note_root(struct audit_workload *w, const char *path, uint32_t root_id)
{
	if (w && !w->root.id) {
		w->root.shown = strdup(path); /* NULL when memory is short: unknown */
		w->root.id = root_id;
	}
}

bool audit_workloads_abort_unattributed(struct audit_workloads *ws, uint32_t root_id)
{
	bool counted = false;

	for (struct audit_workload *w = ws->oldest; root_id && w; w = w->next)
		if (w->root.id == root_id && w->root.unattributed && !w->root.attributed) {
			w->root.aborts_unattributed++;
			counted = true;
		}
	ws->aborts_unattributed += counted;
	return counted;
}

static void expire(struct audit_workloads *ws, struct audit_workload *w)
{
	ws->expired.workloads++;
	ws->expired.aborts += w->aborts;
	ws->expired.leaked_bytes += w->leaked_bytes;
	ws->expired.leaked_files += w->leaked_files;
	ws->expired.aborts_unattributed += w->root.aborts_unattributed;
	if (w->folded) {
		ws->folded_gone.aborts += w->aborts;
		ws->folded_gone.leaked_bytes += w->leaked_bytes;
		ws->folded_gone.aborts_unattributed += w->root.aborts_unattributed;
	} else {
		ws->shown--;
	}
	sg_htable_remove(&ws->index, &w->node);
	*(w->prev ? &w->prev->next : &ws->oldest) = w->next;
	*(w->next ? &w->next->prev : &ws->newest) = w->prev;
	ws->count--;
	free_workload(w);
}

/* A later incarnation goes with its cgroup (or, where the kernel cannot be
 * asked, unseen for the expiry), and lets its container's workload go. */
static void incarnations_end(struct audit_workloads *ws, double now_s)
{
	for (struct audit_workload **p = &ws->incarnations, *w; (w = *p);) {
		enum sg_cgroup_state st = sg_cgroup_state(w->cgroup_id);

		if (st == SG_CGROUP_ALIVE || (st != SG_CGROUP_GONE && now_s - w->idle_since_s < ws->expiry_s)) {
			p = &w->next;
			continue;
		}
		*p = w->next;
		audit_workload_release(w->incarnation_of);
		sg_htable_remove(&ws->index, &w->node);
		free_workload(w);
	}
}

void audit_workloads_cycle_end(struct audit_workloads *ws, double now_s)
{
	incarnations_end(ws, now_s);
	for (struct audit_workload *w = ws->oldest, *next; w; w = next) {
		next = w->next;
		w->tracked = w->next_tracked;
		w->files = w->next_files;
		w->aborted_held = w->next_aborted_held;
		w->next_tracked = w->next_files = w->next_aborted_held = 0;
		look_up_names(ws, w, now_s);
		if (w->refs)
			w->idle_since_s = now_s;
		else if (now_s - w->idle_since_s >= ws->expiry_s ||
			 (!w->aborts && !w->leaked_bytes && !w->root.aborts_unattributed && sg_cgroup_state(w->cgroup_id) == SG_CGROUP_GONE))
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
