/* Folding measured aborts (audit_engine.h), so that the auditor's state is
 * bounded by the live files, the workloads and a window of recent aborts,
 * however long it runs, while every figure of the report stays exact. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "audit_summary.h"

/* Measured aborts listed in the report (each kind: with leftovers, without). */
#define ABORT_DETAIL 1000
/* The plot keeps at most this many markers' ticks of folded aborts. */
#define MAX_TICKS 2048
/* Folded requests looked at per review cycle, to be forgotten. */
#define SWEEP_MAX 1024

static struct audit_folded *folded(struct audit *a)
{
	if (!a->abort_set.folded && (a->abort_set.folded = calloc(1, sizeof(*a->abort_set.folded))))
		a->abort_set.folded->tick_every = 1;
	return a->abort_set.folded;
}

static void add_tick(struct audit_folded *f, double marker_s)
{
	if ((f->aborts - 1) % f->tick_every)
		return;
	if (!f->ticks && !(f->ticks = calloc(MAX_TICKS, sizeof(*f->ticks))))
		return;
	f->ticks[f->nticks++] = marker_s;
	if (f->nticks == MAX_TICKS) { /* every other one, from now on too */
		for (size_t i = 0; i < MAX_TICKS / 2; i++)
			f->ticks[i] = f->ticks[2 * i];
		f->nticks = MAX_TICKS / 2;
		f->tick_every *= 2;
	}
}

static void keep(struct audit *a, struct audit_abort *ab)
{
	ab->next = NULL;
	*a->abort_set.kept_tail = ab;
	a->abort_set.kept_tail = &ab->next;
}

static void has_file(struct audit_file *f, void *found)
{
	(void)f;
	*(bool *)found = true;
}

/* Whether the request of ab may still matter: its marker is still in its
 * abort directory (--abort-dir's, or its root's), or a file of it is followed. */
static bool still_known(const struct audit *a, const struct audit_abort *ab)
{
	struct stat st;
	bool found = false;

	int dfd = a->abort_set.abort_dfd; /* scope 0: --abort-dir's */

	for (unsigned r = 0; ab->scope && r < a->root_table.nroots; r++)
		if (a->root_table.roots[r].in_use && a->root_table.roots[r].id == ab->scope)
			dfd = a->root_table.roots[r].abort_dfd;
	if (ab->scope && dfd == a->abort_set.abort_dfd)
		dfd = -1; /* its root is gone, and its abort directory with it */
	if (dfd >= 0 && fstatat(dfd, ab->request, &st, AT_SYMLINK_NOFOLLOW) == 0)
		return true;
	audit_files_of_request(a->files, ab->request, has_file, &found);
	return found;
}

static void forget(struct audit *a, struct audit_abort *ab)
{
	sg_htable_remove(&a->abort_set.abort_index, &ab->node);
	free(ab->request);
	free(ab);
}

/* ab, unlinked from the list, into the figures; kept by request while
 * that may matter. */
static void fold(struct audit *a, struct audit_folded *f, struct audit_abort *ab)
{
	f->folds++;
	f->aborts++;
	f->leaked_bytes += ab->leaked_bytes;
	f->leaked_files += ab->leaked_files;
	f->leaked_segments += ab->leaked_segments;
	if (a->o->reports.plot_path)
		add_tick(f, ab->marker_s);
	for (struct audit_leftover *l = ab->leftovers, *next; l; l = next) {
		next = l->next;
		audit_group_fold(a, f, l);
		audit_workload_release(l->creator_workload);
		free(l->name);
		free(l);
	}
	ab->leftovers = NULL;
	audit_workload_set_free(&ab->workloads);
	if (!still_known(a, ab)) {
		forget(a, ab);
		return;
	}
	if (!a->abort_set.kept_tail)
		a->abort_set.kept_tail = &a->abort_set.kept;
	keep(a, ab);
	a->abort_set.nkept++;
}

void audit_fold_measured(struct audit *a)
{
	size_t window = a->o->gate.abort_detail ? a->o->gate.abort_detail : ABORT_DETAIL, leaked = 0, clean = 0;
	struct audit_folded *f;

	for (const struct audit_abort *ab = a->abort_set.aborts; ab && ab != a->abort_set.unmeasured; ab = ab->next)
		*(ab->leftovers ? &leaked : &clean) += 1;
	if ((leaked <= window && clean <= window) || !(f = folded(a)))
		return;
	/* The oldest of each kind go first. */
	for (struct audit_abort **p = &a->abort_set.aborts; *p && *p != a->abort_set.unmeasured && (leaked > window || clean > window);) {
		struct audit_abort *ab = *p;
		size_t *n = ab->leftovers ? &leaked : &clean;

		if (*n <= window) {
			p = &ab->next;
			continue;
		}
		(*n)--;
		*p = ab->next;
		if (!*p)
			a->abort_set.aborts_tail = p;
		fold(a, f, ab);
	}
}

void audit_fold_sweep(struct audit *a)
{
	size_t n = a->abort_set.nkept < SWEEP_MAX ? a->abort_set.nkept : SWEEP_MAX;

	for (size_t i = 0; i < n && a->abort_set.kept; i++) {
		struct audit_abort *ab = a->abort_set.kept;

		if (!(a->abort_set.kept = ab->next))
			a->abort_set.kept_tail = &a->abort_set.kept;
		if (still_known(a, ab)) {
			keep(a, ab); /* looked at again after the others */
			continue;
		}
		forget(a, ab);
		a->abort_set.nkept--;
	}
}

void audit_fold_free(struct audit *a)
{
	for (struct audit_abort *ab = a->abort_set.kept, *next; ab; ab = next) {
		next = ab->next;
		free(ab->request);
		free(ab);
	}
	a->abort_set.kept = NULL;
	a->abort_set.kept_tail = &a->abort_set.kept;
	a->abort_set.nkept = 0;
	if (a->abort_set.folded) {
		free(a->abort_set.folded->by_proc.g);
		free(a->abort_set.folded->by_shape.g);
		free(a->abort_set.folded->ticks);
		free(a->abort_set.folded);
		a->abort_set.folded = NULL;
	}
}

double *audit_fold_ticks(const struct audit *a, size_t *n)
{
	size_t listed = 0, folded_n = a->abort_set.folded ? a->abort_set.folded->nticks : 0;
	double *t;

	for (const struct audit_abort *ab = a->abort_set.aborts; ab; ab = ab->next)
		listed++;
	*n = 0;
	if (!(t = calloc(folded_n + listed + 1, sizeof(*t))))
		return NULL;
	if (folded_n)
		memcpy(t, a->abort_set.folded->ticks, folded_n * sizeof(*t));
	*n = folded_n;
	for (const struct audit_abort *ab = a->abort_set.aborts; ab; ab = ab->next)
		t[(*n)++] = ab->marker_s;
	return t;
}
