/* The auditor's workloads: one record per cgroup v2 that created a followed
 * file, with the path, container and pod it resolves to (host/cgroups.h)
 * and its own figures.  Which workload an abort counts for: every workload
 * that created a file of its request that the auditor followed when its
 * marker appeared, until it was measured, or at its measurement; its leaked
 * bytes go to the workload that created each file left.  An abort for which
 * no such file was seen (a request that made no file, or whose files all
 * went before its marker) counts for no workload: it is in the run's
 * figures, and counted apart (docs/audit.md).
 *
 * A workload stays while a followed file, a listed leftover or an abort to
 * be measured refers to it, and for --workload-expiry after; then its
 * figures are folded into the expired ones' totals and it is freed, so that
 * the state and the metrics' series stay bounded on a node that runs pods
 * for months.  One whose cgroup is gone and that has no figure to show
 * (no measured abort, no byte left) goes at the first review cycle's end
 * with nothing referring to it, so cgroups churned by a pod or a local
 * user leave no series behind.  And at most --max-workload-series have
 * series of their own: a workload made past them is folded for its life
 * into one series, "other", whose counters keep what such workloads
 * counted after they are gone.
 *
 * A container restarted in place gets a new cgroup (a new id) with the same
 * container ID: that cgroup is an incarnation of the workload made for the
 * first, its figures are the first's, and one series shows the container.
 * The new cgroup's record is only an entry of the index that leads to the
 * first's (it holds it) until its cgroup is gone.
 *
 * Errors: nothing here can fail (the auditor reports a failure as a
 * negative errno). */
#ifndef SHMGUARD_AUDIT_WORKLOADS_H
#define SHMGUARD_AUDIT_WORKLOADS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cgroups.h"
#include "htable.h"

/* How many events of a cgroup its path is looked for at (the kernel is
 * asked by its id): a cgroup gone by then stays known by id alone. */
#define AUDIT_WORKLOAD_TRIES 8

/* The shm root a workload's first counted file was in, and what its files
 * and that root's aborts said of requests. */
struct audit_workload_root {
	char *shown;   /* NULL unknown */
	uint32_t id;   /* the root's id (audit_roots.h), 0 unknown */
	bool attributed, unattributed; /* files of it the review found with a request, and without one */
	/* Measured aborts of its root's own abort directory that no file was
	 * tied to, while none of its files had a request (no pattern matched
	 * their names, no tag): its leak cannot be known. */
	uint64_t aborts_unattributed;
};

struct audit_workload {
	struct sg_hnode node; /* by cgroup id */
	struct audit_workload *prev, *next; /* every workload, oldest first */
	uint64_t cgroup_id;
	char *path; /* NULL: not known (gone before it was asked, or not askable here) */
	unsigned tries;
	struct sg_cgroup_ids ids; /* from the path */
	char ns[SG_K8S_NAMESPACE_MAX + 1], pod[SG_K8S_NAME_MAX + 1]; /* "" unknown */
	char container[SG_K8S_NAMESPACE_MAX + 1]; /* the container's name, "" unknown */
	double names_next_s; /* when to look for the pod's names again (not found yet) */
	struct audit_workload_root root;
	bool folded; /* made past the series' limit: its figures are "other"'s */
	struct audit_workload *incarnation_of; /* a later cgroup of that container: only a way to it */
	size_t refs; /* creators of followed files, leftovers listed, aborts to be measured */
	double idle_since_s; /* when refs was last seen at 0 */
	/* Measured aborts that counted for it, and what they left of its files. */
	uint64_t aborts, leaked_bytes, leaked_files;
	/* As of the last review cycle (the one under way: next_). */
	uint64_t tracked, files, aborted_held, next_tracked, next_files, next_aborted_held;
};

/* The figures of the workloads gone (expired), so that totals stay whole. */
struct audit_workloads_expired {
	uint64_t workloads, aborts, leaked_bytes, leaked_files, aborts_unattributed;
};

/* What the folded workloads that are gone counted, so that the "other"
 * series' counters never go down. */
struct audit_workloads_folded_gone {
	uint64_t aborts, leaked_bytes, aborts_unattributed;
};

struct audit_workloads {
	struct sg_htable index;
	struct audit_workload *oldest, *newest; /* the workloads, not the later incarnations */
	size_t count;
	struct audit_workload *incarnations; /* the later incarnations, linked by next */
	const char *pods_dir;  /* the kubelet's pod log directories (--pod-logs), or NULL */
	const char *containers_dir; /* its container log links (--container-logs), or NULL */
	double expiry_s;
	size_t series_max; /* workloads with series of their own at most (0: no limit) */
	size_t shown;      /* the workloads that have one */
	struct audit_workloads_expired expired;
	struct audit_workloads_folded_gone folded_gone;
	uint64_t aborts_without; /* measured aborts that counted for no workload */
	uint64_t aborts_unattributed; /* of those, the ones counted unattributed for a workload */
};

/* pods_dir, containers_dir: where to look for pods' and containers' names
 * (NULL: nowhere); series_max: workloads with a series of their own at
 * most (0: no limit). */
void audit_workloads_init(struct audit_workloads *ws, const char *pods_dir, const char *containers_dir,
			  double expiry_s, size_t series_max);
void audit_workloads_free(struct audit_workloads *ws);

/* The workload of cgroup_id, made at its first event; NULL when memory is
 * short. */
struct audit_workload *audit_workload_of(struct audit_workloads *ws, uint64_t cgroup_id, double now_s);

static inline void audit_workload_hold(struct audit_workload *w)
{
	if (w)
		w->refs++;
}

static inline void audit_workload_release(struct audit_workload *w)
{
	if (w && w->refs)
		w->refs--;
}

/* w's files are in the shm root path, of id root_id (the first one given stays). */
void audit_workload_note_root(struct audit_workload *w, const char *path, uint32_t root_id);
/* A measured abort of the abort directory of the root root_id that no
 * file was tied to: it counts, unattributed, for each workload of that
 * root none of whose files had a request.  Whether one did. */
bool audit_workloads_abort_unattributed(struct audit_workloads *ws, uint32_t root_id);

/* At a review cycle's end: its figures become the workloads' own, and the
 * workloads nothing has referred to for expiry_s are folded and freed. */
void audit_workloads_cycle_end(struct audit_workloads *ws, double now_s);

/* A set of workloads an abort counts for. */
struct audit_workload_set {
	struct audit_workload **w;
	unsigned n, cap;
};
/* Adds w (held) unless it is there; false when memory is short. */
bool audit_workload_set_add(struct audit_workload_set *s, struct audit_workload *w);
/* Releases each and frees the set. */
void audit_workload_set_free(struct audit_workload_set *s);

#endif
