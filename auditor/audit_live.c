/* What the audit shows while it runs: when a review cycle ends, its figures
 * go to the /metrics server (--listen, cheap: a copy under a mutex) and
 * become a sample of the plot (--plot); every --interval they are written
 * to the textfile (--metrics-file) that node_exporter's textfile collector
 * reads.  The figures are those of the last cycle: the review is what
 * knows which files still exist. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "audit_engine.h"
#include "audit_reclaim.h"
#include "audit_summary.h"
#include "metrics.h"
#include "outfile.h"
#include "plot_svg.h"
#include "text.h"

struct audit_live {
	struct plot_sample *samples; /* one per review cycle, with --plot */
	size_t nsamples, cap;
	unsigned sample_every, cycles_since_sample; /* one sample every that many cycles (downsampled) */
	struct metrics_workload *series; /* the workloads' (metrics.h) */
	size_t series_cap;
	uint32_t cycles; /* the last cycle published */
	double next_write_s;
	bool write_failed; /* said once on stderr */
	char why[SG_OUTFILE_ERR_MAX]; /* why the metrics file was not written */
};

/* The plot's timeline holds at most this many samples (a cycle a second:
 * the first 2.3 hours whole, then thinned). */
#define MAX_SAMPLES 8192

struct audit_live *audit_live_new(void)
{
	struct audit_live *l = calloc(1, sizeof(struct audit_live));

	if (l)
		l->sample_every = 1;
	return l;
}

void audit_live_free(struct audit_live *l)
{
	if (!l)
		return;
	free(l->samples);
	free(l->series);
	free(l);
}

/* A time of the run (audit_now_s) on the wall clock. */
static double unix_time_of(const struct audit *a, double run_s)
{
	struct timespec now;

	clock_gettime(CLOCK_REALTIME, &now);
	return (double)now.tv_sec + now.tv_nsec / 1e9 - (audit_now_s(a) - run_s);
}

/* The workloads' series, in l->series (its strings point into the
 * workloads): one for each workload shown, and one, "other", for all those
 * folded (audit_workloads.h), with what the folded ones that are gone
 * counted. */
static void workload_series(const struct audit *a, struct audit_metrics *m)
{
	const struct audit_workloads *ws = &a->workloads;
	struct audit_live *l = a->live;
	struct metrics_workload other = {.namespace_ = "", .pod = "", .container = "", .container_id = "",
					 .cgroup = "other", .aborts_measured = ws->folded_gone.aborts,
					 .leaked_bytes = ws->folded_gone.leaked_bytes,
					 .aborts_unattributed = ws->folded_gone.aborts_unattributed};
	size_t n = 0, want = ws->shown + 1;

	if (want > l->series_cap) {
		struct metrics_workload *s = realloc(l->series, want * sizeof(*s));
		if (!s)
			return; /* no series this time */
		l->series = s;
		l->series_cap = want;
	}
	for (const struct audit_workload *w = ws->oldest; w; w = w->next) {
		if (w->folded) {
			m->workloads_folded++;
			other.aborts_measured += w->aborts;
			other.leaked_bytes += w->leaked_bytes;
			other.aborts_unattributed += w->root.aborts_unattributed;
			other.aborted_held_bytes += w->aborted_held;
			other.tracked_bytes += w->tracked;
		} else if (n < want - 1) {
			l->series[n++] = (struct metrics_workload){
				.namespace_ = w->ns, .pod = w->pod, .container = w->container,
				.container_id = w->ids.container_id, .cgroup = w->path ? w->path : "",
				.cgroup_id = w->cgroup_id, .aborts_measured = w->aborts, .leaked_bytes = w->leaked_bytes,
				.aborted_held_bytes = w->aborted_held, .tracked_bytes = w->tracked,
				.aborts_unattributed = w->root.aborts_unattributed};
		}
	}
	if (m->workloads_folded || other.aborts_measured || other.leaked_bytes || other.aborts_unattributed)
		l->series[n++] = other;
	m->workloads = l->series;
	m->nworkloads = n;
}

static void snapshot(const struct audit *a, uint64_t dropped, struct audit_metrics *m)
{
	struct statvfs sv;

	*m = (struct audit_metrics){
		.aborts = a->abort_set.naborts,
		.aborted_held_bytes = a->reviewed.aborted_held,
		.reclaimed_bytes = a->abort_set.reclaimed,
		.live_pending_bytes = a->reviewed.live_pending,
		.aborts_measured = a->abort_set.aborts_measured,
		.leaked_bytes = a->abort_set.leaked_measured,
		.last_review_unix_s = unix_time_of(a, a->reviewed.cycles ? a->reviewed.last_review_s : 0),
		.last_review_duration_s = a->reviewed.last_review_duration_s,
		.events = a->event_counts.events,
		.dropped_events = dropped,
		.files_over_limit = audit_files_over_limit(a->files),
		.followed_files = audit_files_count(a->files),
		.freed_at_eviction = a->event_counts.freed_at_eviction,
		.freed_by_review = a->reviewed.freed_by_review,
		.lost_markers = a->abort_set.marker_overflows,
		.unfollowed_files = a->pending.unfollowed_files,
		.probe = a->run.probe,
		.version = a->o->version,
		.roots = calloc(a->root_table.nroots ? a->root_table.nroots : 1, sizeof(*m->roots)), /* short of memory: no root's */
		.abort_book = {.without_workload = a->workloads.aborts_without,
			       .records = a->abort_set.naborts - (a->abort_set.folded ? a->abort_set.folded->aborts : 0),
			       .remembered = a->abort_set.nkept},
	};
	if (a->run.reclaim) {
		struct audit_reclaim_totals t;
		audit_reclaim_totals(a->run.reclaim, &t);
		m->dead_reclaimed.on = true;
		m->dead_reclaimed.bytes = t.bytes;
		m->dead_reclaimed.files = t.files;
		m->dead_reclaimed.scope = audit_reclaim_scope_name(audit_reclaim_scope(a->run.reclaim));
		m->dead_reclaimed.roots = t.roots;
		m->dead_reclaimed.node_roots_left = t.node_roots_left;
	}
	workload_series(a, m);
	for (unsigned r = 0; m->roots && r < a->root_table.nroots; r++) {
		const struct audit_root *root = &a->root_table.roots[r];
		struct metrics_root *mr;

		if (!root->in_use)
			continue;
		mr = &m->roots[m->nroots++];
		*mr = (struct metrics_root){.path = root->shown, .tracked_bytes = root->bytes.tracked,
					    .unattributed_bytes = root->bytes.unattributed, .namespace_ = root->pod.ns,
					    .pod = root->pod.name, .container = root->pod.container};
		if (statvfs(root->path, &sv) == 0) {
			mr->free_bytes = (uint64_t)sv.f_bavail * sv.f_frsize;
			mr->size_bytes = (uint64_t)sv.f_blocks * sv.f_frsize;
		}
	}
}

/* The figures to the server and, if it is time (or now is true), to the
 * file.  A negative errno, with l->why, when the file cannot be written. */
static int emit(struct audit *a, uint64_t dropped, bool publish, bool now)
{
	struct audit_live *l = a->live;
	bool write = a->o->reports.metrics_path && (now || audit_now_s(a) >= l->next_write_s);
	struct audit_metrics m;
	char *text;
	size_t len;
	int ret = 0;

	if (!(publish && a->run.metrics_server) && !write)
		return 0;
	snapshot(a, dropped, &m);
	text = metrics_render(&m, &len);
	free(m.roots);
	if (!text) {
		snprintf(l->why, sizeof(l->why), "out of memory");
		return -ENOMEM;
	}
	if (publish && a->run.metrics_server)
		metrics_publish(a->run.metrics_server, text, len);
	if (write) {
		l->next_write_s = audit_now_s(a) + a->o->reports.metrics_interval;
		ret = metrics_write_file(a->o->reports.metrics_path, text, len, l->why, sizeof(l->why));
	}
	free(text);
	return ret;
}

/* With --plot: the cycle's figures, at the time it ended (the picture's
 * lines join these samples: nothing is drawn before the first cycle). */
static void sample(struct audit *a, bool last)
{
	struct audit_live *l = a->live;

	if (!a->o->reports.plot_path)
		return;
	if (l->nsamples == MAX_SAMPLES) {
		/* A long run: every other sample goes, and from now on one in two more. */
		for (size_t i = 0; i < MAX_SAMPLES / 2; i++)
			l->samples[i] = l->samples[2 * i + 1];
		l->nsamples = MAX_SAMPLES / 2;
		l->sample_every *= 2;
	}
	if (++l->cycles_since_sample < l->sample_every && !last)
		return;
	l->cycles_since_sample = 0;
	if (l->nsamples == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 256;
		struct plot_sample *s = realloc(l->samples, cap * sizeof(*s));
		if (!s)
			return; /* the picture has a gap */
		l->samples = s;
		l->cap = cap;
	}
	l->samples[l->nsamples++] = (struct plot_sample){audit_now_s(a), a->reviewed.tracked, a->reviewed.aborted_held};
}

void audit_live_update(struct audit *a, uint64_t dropped)
{
	struct audit_live *l = a->live;
	char shown[SG_ESCAPED_MAX];
	bool cycle_ended;

	if (!l)
		return;
	if ((cycle_ended = a->reviewed.cycles != l->cycles)) {
		l->cycles = a->reviewed.cycles;
		sample(a, false);
	}
	if (emit(a, dropped, cycle_ended, false) < 0 && !l->write_failed) {
		l->write_failed = true;
		fprintf(stderr, "shmguard audit: cannot write the metrics to %s: %s (trying again every %g s)\n",
			sg_text_escape(a->o->reports.metrics_path, shown, sizeof(shown)), audit_live_why(a),
			a->o->reports.metrics_interval);
	}
}

const char *audit_live_why(const struct audit *a)
{
	return a->live && a->live->why[0] ? a->live->why : "no reason known";
}

int audit_live_flush(struct audit *a, uint64_t dropped)
{
	struct audit_live *l = a->live;

	if (!l)
		return 0;
	if (a->reviewed.cycles != l->cycles) {
		l->cycles = a->reviewed.cycles;
		sample(a, true);
	}
	return emit(a, dropped, true, true);
}

/* "shmguard audit: COMMAND ARGS...: N KiB/abort, verdict V", the command
 * cut to fit a line of the picture. */
static void plot_title(const struct audit *a, double kib_per_abort, const char *verdict, char *buf, size_t len)
{
	char cmd[48] = "the whole system";
	size_t n = 0;

	for (char **c = a->o->cmd; c && *c && n < sizeof(cmd); c++)
		n += (size_t)snprintf(cmd + n, sizeof(cmd) - n, "%s%s", c == a->o->cmd ? "" : " ",
				      c == a->o->cmd && strrchr(*c, '/') ? strrchr(*c, '/') + 1 : *c);
	if (n >= sizeof(cmd))
		memcpy(cmd + sizeof(cmd) - 4, "...", 4);
	snprintf(buf, len, "shmguard audit: %s: %.1f KiB/abort, verdict %s", cmd, kib_per_abort, verdict);
}

int audit_live_plot(const struct audit *a, double kib_per_abort, const char *verdict)
{
	const struct audit_live *l = a->live;
	size_t n = 0;
	double *abort_s = audit_fold_ticks(a, &n);
	char title[200];
	struct plot p;
	FILE *out = NULL;
	int fd = -1, ret = -ENOMEM;

	if (!abort_s)
		goto cleanup;
	plot_title(a, kib_per_abort, verdict, title, sizeof(title));
	p = (struct plot){.title = title, .duration_s = a->end_s, .samples = l->samples, .nsamples = l->nsamples,
			 .abort_s = abort_s, .naborts = n, .has_budget = a->o->gate.have_budget,
			 .budget_kib_per_abort = a->o->gate.budget_kib};
	/* A new, empty file made before the run (or stdout). */
	if ((fd = dup(a->run.plot_fd)) < 0 || !(out = fdopen(fd, "w"))) {
		ret = -errno;
		goto cleanup;
	}
	fd = -1;
	ret = plot_svg_write(out, &p);
cleanup:
	if (out && fclose(out) != 0)
		ret = -EIO;
	if (fd >= 0)
		close(fd);
	free(abort_s);
	if (ret < 0)
		fprintf(stderr, "shmguard audit: cannot write the plot to %s\n", a->o->reports.plot_path);
	return ret;
}
