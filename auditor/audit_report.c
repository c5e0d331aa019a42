/* The audit's result: a report for people on stdout, the same as JSON for
 * programs (--json), and the verdict that is the exit status. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "audit_ci.h"
#include "audit_reclaim.h"
#include "audit_summary.h"
#include "audit_workload_report.h"
#include "text.h"
#include "encode.h"
#include "size.h"

#define KIB 1024.0
#define MIB (1024.0 * 1024.0)

static void print_text(const struct audit *a, const struct summary *s, const struct groups *by_proc,
		       const struct groups *by_shape)
{
	char b1[32], b2[32], e1[SG_ESCAPED_MAX], e2[SG_ESCAPED_MAX];
	double n = audit_aborts_counted(a) ? audit_aborts_counted(a) : 1;
	/* A report written to stdout (--json -) keeps it to itself. */
	FILE *out = a->run.report_on_stdout ? stderr : stdout;

	fprintf(out, "aborts %u   leaked %s in %llu %s   %.1f KiB/abort   ", audit_aborts_counted(a),
	       sg_human_bytes(s->leaked_bytes, b1, sizeof(b1)),
	       SG_PLURAL((unsigned long long)s->leaked_files, "file", "files"), s->kib_per_abort);
	if (s->leak_growth_mib_per_hour >= 0)
		fprintf(out, "leak growth %.1f MiB/h\n", s->leak_growth_mib_per_hour);
	else
		fprintf(out, "leak growth: run too short to extrapolate (%.1f s < %.0f s)\n", a->end_s, AUDIT_GROWTH_MIN_S);
	if (!a->abort_set.naborts)
		fprintf(out, "no abort markers appeared in %s: nothing to measure per abort\n",
			sg_text_escape(a->o->abort_dir, e1, sizeof(e1)));
	if (a->abort_set.aborts_cut_short)
		fprintf(out, "warning: %u %s cut short: %s --grace had not ended when COMMAND ended, and what "
			     "COMMAND's teardown removes at exit is no measure: in no figure (a longer run, or a "
			     "shorter --grace, measures them)\n",
			SG_PLURAL(a->abort_set.aborts_cut_short, "abort", "aborts"),
			a->abort_set.aborts_cut_short == 1 ? "its" : "their");
	fprintf(out, "per abort: %.1f files, %.1f segments   run %.1f s (probe %s, frees %s%s)   tracked at end %s in %llu %s   "
	       "unattributed %s\n",
	       s->leaked_files / n, s->leaked_segments / n, a->end_s, a->run.probe,
	       a->run.freed_probe ? "at eviction by " : "by review", a->run.freed_probe ? a->run.freed_probe : "",
	       sg_human_bytes(s->tracked, b1, sizeof(b1)), SG_PLURAL((unsigned long long)s->files_left, "file", "files"),
	       sg_human_bytes(s->unattributed, b2, sizeof(b2)));
	fprintf(out, "live requests pending at end: %s in %llu %s (not aborted: no leak)\n",
	       sg_human_bytes(s->live_pending, b1, sizeof(b1)), SG_PLURAL((unsigned long long)s->live_files, "file", "files"));
	if (a->run.reclaim) {
		struct audit_reclaim_totals t;
		audit_reclaim_totals(a->run.reclaim, &t);
		fprintf(out, "%s from dead creators: %s in %llu %s (%llu %s every %g s)%s\n",
			a->o->reclaim.dry_run ? "would have reclaimed (--reclaim-dry-run)" : "reclaimed", sg_human_bytes(t.bytes, b1, sizeof(b1)), SG_PLURAL((unsigned long long)t.files, "file", "files"),
			SG_PLURAL((unsigned long long)t.passes, "pass", "passes"), a->o->reclaim.interval,
			t.failed ? ", some roots or files failed (said on stderr)" : "");
		fprintf(out, "  reclaim covers: %s (%llu %s in the last pass)%s\n",
			audit_reclaim_scope_name(audit_reclaim_scope(a->run.reclaim)), SG_PLURAL((unsigned long long)t.roots, "root", "roots"),
			t.node_roots_left ? "; the node's own /dev/shm left alone (--reclaim-node-shm to include it)" : "");
	}
	/* A process names itself (prctl): its name may hold a newline and a
	 * workflow command, or a terminal's escape sequences. */
	for (size_t i = 0; i < by_proc->n && i < 3; i++) {
		const struct group *g = &by_proc->g[i];
		char proc[sizeof(g->key)];
		snprintf(proc, sizeof(proc), "%.*s", (int)strcspn(g->key, "\t"), g->key);
		fprintf(out, "top: %s  %s  %llu %s, %llu %s  %s\n", sg_text_escape(proc, e1, sizeof(e1)),
			sg_text_escape(audit_shape_text(a, g->shape), e2, sizeof(e2)), SG_PLURAL((unsigned long long)g->files, "file", "files"),
			SG_PLURAL((unsigned long long)g->segments, "segment", "segments"),
			sg_human_bytes(g->bytes, b1, sizeof(b1)));
	}
	for (size_t i = 0; i < by_shape->n && i < 3; i++)
		fprintf(out, "shape: %s  %llu %s  %s\n", sg_text_escape(by_shape->g[i].key, e1, sizeof(e1)),
			SG_PLURAL((unsigned long long)by_shape->g[i].files, "file", "files"),
			sg_human_bytes(by_shape->g[i].bytes, b1, sizeof(b1)));
	if (a->abort_set.folded && a->abort_set.folded->aborts)
		fprintf(out, "aborts not listed in the JSON report (older than the newest --abort-detail; in every figure): "
			"%llu\n", (unsigned long long)a->abort_set.folded->aborts);
	audit_workloads_print(a, out);
	if (a->attribution.ambiguous)
		fprintf(out, "ambiguous names (attributed to no request): %llu\n", (unsigned long long)a->attribution.ambiguous);
	if (a->run.dropped || audit_files_over_limit(a->files))
		fprintf(out, "LOST: %llu events dropped, %llu files over --max-files: the figures are lower bounds\n",
		       (unsigned long long)a->run.dropped, (unsigned long long)audit_files_over_limit(a->files));
	if (a->o->node_mode)
		fprintf(out, "roots: %u followed at end, %llu found in mount namespaces during the run (%llu late, "
			"%llu %s caught up), %llu forgotten%s\n",
			audit_roots_in_use(a), (unsigned long long)a->root_table.roots_found, (unsigned long long)a->root_table.roots_late,
			SG_PLURAL((unsigned long long)a->event_counts.caught_up, "file", "files"),
			(unsigned long long)a->root_table.roots_forgotten,
			a->scans.namespaces_unreadable ? "; some mount namespaces could not be read" : "");
	if (a->root_table.roots_refused)
		fprintf(out, "NOT FOLLOWED: %llu /dev/shm mounts could not be followed (the kernel side's maps are "
			"full, or memory short)\n", (unsigned long long)a->root_table.roots_refused);
	if (a->pending.unfollowed_files)
		fprintf(out, "NOT FOLLOWED: %llu %s of aborted requests %s on filesystems no root follows (the shim's "
			"tags say so): their bytes are not in the figure%s\n",
			SG_PLURAL((unsigned long long)a->pending.unfollowed_files, "file", "files"),
			a->pending.unfollowed_files == 1 ? "is" : "are",
			a->o->node_mode ? "" : " (without --own-namespace every pod's /dev/shm is followed)");
	if (a->pending.tags_expired)
		fprintf(out, "not followed: %llu tags of files on filesystems no root follows were kept %s and "
			"dropped before their request aborted, if it did\n",
			(unsigned long long)a->pending.tags_expired, "as long as allowed");
	if (a->abort_set.marker_overflows)
		fprintf(out, "LOST: the abort directory's event queue overflowed %llu times (fs.inotify.max_queued_events):\n"
		       "  %llu markers recovered by reading it again; markers removed before that are not counted, and\n"
		       "  recovered aborts are measured from when they were found\n",
		       (unsigned long long)a->abort_set.marker_overflows, (unsigned long long)a->abort_set.markers_recovered);
	if (a->abort_set.markers_refused)
		fprintf(out, "not aborts: %llu entries of the abort directory that are no markers (another user's, a "
			"hard link, not a regular file)\n", (unsigned long long)a->abort_set.markers_refused);
	if (a->run.interrupted)
		fprintf(out, "interrupted: COMMAND did not end at the first signal and was killed at the second\n");
	else if (a->run.cmd_status > 0)
		fprintf(out, "command exited with status %d\n", a->run.cmd_status);
	if (s->reason[0])
		fprintf(out, "verdict: FAIL  %s\n", s->reason);
	else if (a->o->gate.have_budget)
		fprintf(out, "verdict: PASS  %.1f KiB/abort <= budget %g KiB/abort\n", s->kib_per_abort, a->o->gate.budget_kib);
	else
		fprintf(out, "verdict: none (no --max-kib-per-abort)\n");
	fflush(out);
}

static json_t *groups_json(const struct audit *a, const struct groups *gs, bool procs)
{
	json_t *arr = json_array();

	for (size_t i = 0; i < gs->n && i < 10; i++) {
		const struct group *g = &gs->g[i];
		json_t *o = json_pack("{s:I, s:I, s:I}", "leaked_bytes", (json_int_t)g->bytes, "files",
				      (json_int_t)g->files, "segments", (json_int_t)g->segments);
		if (procs) {
			json_t *pids = json_array();
			char name[sizeof(g->key)], *lossy;

			snprintf(name, sizeof(name), "%.*s", (int)strcspn(g->key, "\t"), g->key);
			/* A name set by the process itself need not be UTF-8. */
			lossy = sg_utf8_lossy(name);
			json_object_set_new(o, "process", json_string(lossy ? lossy : "?"));
			free(lossy);
			for (unsigned p = 0; p < g->npids && p < GROUP_PIDS; p++)
				json_array_append_new(pids, json_integer(g->pids[p]));
			json_object_set_new(o, "pids", pids);
			json_object_set_new(o, "processes", json_integer(g->npids));
		}
		json_object_set_new(o, "shape", json_string(audit_shape_text(a, g->shape)));
		json_array_append_new(arr, o);
	}
	return arr;
}

/* major:minor, as /proc shows devices. */
static const char *dev_text(uint32_t kdev, char *buf, size_t len)
{
	snprintf(buf, len, "%u:%u", kdev >> 20, kdev & 0xfffff);
	return buf;
}

/* Where an abort's marker appeared: --abort-dir, or a root's own. */
static const char *abort_dir_text(const struct audit *a, uint32_t scope)
{
	for (unsigned r = 0; scope && r < a->root_table.nroots; r++)
		if (a->root_table.roots[r].id == scope)
			return a->root_table.roots[r].shown; /* the slot may be a later root's: then "a forgotten root" */
	return scope ? "a root forgotten since" : a->o->abort_dir;
}

static json_t *aborts_json(const struct audit *a)
{
	json_t *arr = json_array();
	char dev[24];

	for (const struct audit_abort *ab = a->abort_set.aborts; ab; ab = ab->next) {
		json_t *files = json_array();
		for (const struct audit_leftover *l = ab->leftovers; l; l = l->next) {
			char *comm = sg_utf8_lossy(l->comm);
			json_t *f = json_pack("{s:I, s:b, s:I, s:s, s:s, s:I}", "bytes", (json_int_t)l->bytes, "linked",
					      l->linked, "creator_pid", (json_int_t)l->creator, "creator_command",
					      comm ? comm : "?", "device", dev_text(l->kdev, dev, sizeof(dev)), "inode",
					      (json_int_t)l->ino);
			free(comm);
			json_object_set_new(f, "name", l->name ? json_string(l->name) : json_null());
			json_object_set_new(f, "held_by_pid", l->holder ? json_integer(l->holder) : json_null());
			json_array_append_new(files, f);
		}
		json_array_append_new(arr, json_pack("{s:s, s:f, s:I, s:o, s:I, s:s}", "request", ab->request,
						     "marker_s", ab->marker_s, "leaked_bytes", (json_int_t)ab->leaked_bytes,
						     "leftover_files", files, "unfollowed_files",
						     (json_int_t)ab->unfollowed_files, "abort_dir",
						     abort_dir_text(a, ab->scope)));
	}
	return arr;
}

/* When the run began, as RFC 3339 UTC: now on the wall clock, less the
 * run's time on the monotonic one (the clock of a->start_ns). */
static json_t *started_at(const struct audit *a)
{
	struct timespec wall;
	char buf[40];
	struct tm tm;

	/* The wall clock now, less the run's time on its own clock (audit_clock). */
	clock_gettime(CLOCK_REALTIME, &wall);
	int64_t ns = (int64_t)wall.tv_sec * 1000000000 + wall.tv_nsec -
		     ((int64_t)audit_clock_ns(a) - (int64_t)a->start_ns);
	time_t sec = (time_t)(ns / 1000000000);
	if (!gmtime_r(&sec, &tm))
		return json_null();
	size_t n = strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + n, sizeof(buf) - n, ".%03dZ", (int)(ns % 1000000000 / 1000000));
	return json_string(buf);
}

static json_int_t max_rss_kib(void)
{
	struct rusage ru;

	return getrusage(RUSAGE_SELF, &ru) == 0 ? (json_int_t)ru.ru_maxrss : -1;
}

/* --reclaim-dead's totals, or null without it. */
static json_t *dead_reclaim_json(const struct audit *a)
{
	struct audit_reclaim_totals t;

	if (!a->run.reclaim)
		return json_null();
	audit_reclaim_totals(a->run.reclaim, &t);
	return json_pack("{s:f, s:I, s:I, s:I, s:I, s:b, s:s, s:I, s:I}", "interval_s", a->o->reclaim.interval, "passes",
			 (json_int_t)t.passes, "files", (json_int_t)t.files, "bytes", (json_int_t)t.bytes, "failed",
			 (json_int_t)t.failed, "dry_run", a->o->reclaim.dry_run, "scope",
			 audit_reclaim_scope_name(audit_reclaim_scope(a->run.reclaim)), "roots", (json_int_t)t.roots,
			 "node_roots_left", (json_int_t)t.node_roots_left);
}

static int write_json(const struct audit *a, const struct summary *s, const struct groups *by_proc,
		      const struct groups *by_shape)
{
	double n = audit_aborts_counted(a) ? audit_aborts_counted(a) : 1;
	json_t *cmd = json_array();
	json_t *root;
	int ret;

	for (char **c = a->o->cmd; c && *c; c++)
		json_array_append_new(cmd, json_string(*c));
	root = json_pack("{s:i, s:f, s:I, s:I, s:f, s:I, s:f, s:f}", "schema", 3, "duration_s", a->end_s, "aborts",
			 (json_int_t)audit_aborts_counted(a), "leaked_bytes", (json_int_t)s->leaked_bytes, "leaked_kib_per_abort",
			 s->kib_per_abort, "leaked_files", (json_int_t)s->leaked_files, "leaked_files_per_abort",
			 s->leaked_files / n, "leaked_segments_per_abort", s->leaked_segments / n);
	json_object_set_new(root, "aborts_cut_short", json_integer((json_int_t)a->abort_set.aborts_cut_short));
	json_object_set_new(root, "tracked_bytes_at_end", json_integer((json_int_t)s->tracked));
	json_object_set_new(root, "tracked_files_at_end", json_integer((json_int_t)s->files_left));
	json_object_set_new(root, "leak_growth_mib_per_hour",
			    s->leak_growth_mib_per_hour >= 0 ? json_real(s->leak_growth_mib_per_hour) : json_null());
	json_object_set_new(root, "leak_growth_unavailable",
			    s->leak_growth_mib_per_hour >= 0
				    ? json_null()
				    : json_sprintf("run too short to extrapolate (%.1f s < %.0f s)", a->end_s,
						   AUDIT_GROWTH_MIN_S));
	json_object_set_new(root, "aborted_held_bytes_at_end", json_integer((json_int_t)a->reviewed.aborted_held));
	json_object_set_new(root, "reclaimed_bytes", json_integer((json_int_t)a->abort_set.reclaimed));
	json_object_set_new(root, "dead_reclaim", dead_reclaim_json(a));
	json_object_set_new(root, "live_pending_bytes", json_integer((json_int_t)s->live_pending));
	json_object_set_new(root, "live_pending_files", json_integer((json_int_t)s->live_files));
	json_object_set_new(root, "unattributed_bytes", json_integer((json_int_t)s->unattributed));
	json_object_set_new(root, "ambiguous_files", json_integer((json_int_t)a->attribution.ambiguous));
	json_object_set_new(root, "probe", json_string(a->run.probe));
	json_object_set_new(root, "freed_probe", a->run.freed_probe ? json_string(a->run.freed_probe) : json_null());
	json_object_set_new(root, "freed_probe_unavailable", a->run.freed_probe ? json_null() : json_string(a->run.freed_why));
	json_object_set_new(root, "files_freed_at_eviction", json_integer((json_int_t)a->event_counts.freed_at_eviction));
	json_object_set_new(root, "files_freed_by_review", json_integer((json_int_t)a->reviewed.freed_by_review));
	json_object_set_new(root, "frees_left_to_review", json_integer((json_int_t)a->run.frees_unsent));
	json_object_set_new(root, "events", json_integer((json_int_t)a->event_counts.events));
	json_object_set_new(root, "dropped_events", json_integer((json_int_t)a->run.dropped));
	json_object_set_new(root, "auditor_max_rss_kib", json_integer(max_rss_kib()));
	json_object_set_new(root, "files_over_limit", json_integer((json_int_t)audit_files_over_limit(a->files)));
	json_object_set_new(root, "marker_queue_overflows", json_integer((json_int_t)a->abort_set.marker_overflows));
	json_object_set_new(root, "markers_recovered", json_integer((json_int_t)a->abort_set.markers_recovered));
	json_object_set_new(root, "markers_refused", json_integer((json_int_t)a->abort_set.markers_refused));
	json_object_set_new(root, "unfollowed_files", json_integer((json_int_t)a->pending.unfollowed_files));
	json_object_set_new(root, "unfollowed_tags_expired", json_integer((json_int_t)a->pending.tags_expired));
	json_object_set_new(root, "roots", json_pack("{s:b, s:i, s:I, s:I, s:I, s:I, s:I, s:i}", "node_mode",
						     a->o->node_mode, "followed_at_end", (int)audit_roots_in_use(a),
						     "found", (json_int_t)a->root_table.roots_found, "found_late",
						     (json_int_t)a->root_table.roots_late, "caught_up_files", (json_int_t)a->event_counts.caught_up,
						     "forgotten", (json_int_t)a->root_table.roots_forgotten, "refused",
						     (json_int_t)a->root_table.roots_refused, "namespaces_unreadable",
						     (int)a->scans.namespaces_unreadable));
	json_object_set_new(json_object_get(root, "roots"), "last_scan_s", json_real(a->scans.last_scan_s));
	json_object_set_new(json_object_get(root, "roots"), "last_new_scan_s", json_real(a->scans.last_new_scan_s));
	json_object_set_new(json_object_get(root, "roots"), "scans", json_integer(a->scans.root_scans));
	json_object_set_new(json_object_get(root, "roots"), "new_devices", json_integer((json_int_t)a->scans.new_devs));
	json_object_set_new(json_object_get(root, "roots"), "pod_patterns_learnt", json_integer((json_int_t)a->attribution.pods_learnt));
	json_object_set_new(json_object_get(root, "roots"), "pod_patterns_refused", json_integer((json_int_t)a->attribution.pods_refused));
	json_object_set_new(root, "interrupted", json_boolean(a->run.interrupted));
	json_object_set_new(root, "budget_kib_per_abort", a->o->gate.have_budget ? json_real(a->o->gate.budget_kib) : json_null());
	json_object_set_new(root, "min_aborts", a->o->gate.have_budget ? json_integer(a->o->gate.min_aborts) : json_null());
	json_object_set_new(root, "verdict", json_string(s->verdict));
	json_object_set_new(root, "verdict_reason", s->reason[0] ? json_string(s->reason) : json_null());
	json_object_set_new(root, "command", a->o->cmd ? cmd : json_null());
	if (!a->o->cmd)
		json_decref(cmd);
	/* null only without COMMAND; one killed at the second signal has its
	 * status (128 + 9) and signal like any other. */
	json_object_set_new(root, "command_exit_status", a->run.cmd_status >= 0 ? json_integer(a->run.cmd_status) : json_null());
	json_object_set_new(root, "command_signal", a->run.cmd_signal ? json_integer(a->run.cmd_signal) : json_null());
	json_object_set_new(root, "shmguard_version", json_string(a->o->version ? a->o->version : ""));
	json_object_set_new(root, "started_at", started_at(a));
	json_object_set_new(root, "top_processes", groups_json(a, by_proc, true));
	json_object_set_new(root, "top_shapes", groups_json(a, by_shape, false));
	json_object_set_new(root, "aborted_requests", aborts_json(a));
	json_object_set_new(root, "aborted_requests_not_listed", json_integer(a->abort_set.folded ? (json_int_t)a->abort_set.folded->aborts : 0));
	json_object_set_new(root, "workloads", audit_workloads_json(a));
	json_object_set_new(root, "aborts_without_workload", json_integer((json_int_t)a->workloads.aborts_without));
	json_object_set_new(root, "aborts_unattributed", json_integer((json_int_t)a->workloads.aborts_unattributed));
	json_object_set_new(root, "workloads_expired",
			    json_pack("{s:I, s:I, s:I, s:I}", "workloads", (json_int_t)a->workloads.expired.workloads,
				      "aborts", (json_int_t)a->workloads.expired.aborts, "leaked_bytes",
				      (json_int_t)a->workloads.expired.leaked_bytes, "leaked_files",
				      (json_int_t)a->workloads.expired.leaked_files));
	/* A new, empty file made before the run (or stdout). */
	ret = json_dumpfd(root, a->run.json_fd, JSON_INDENT(2) | JSON_SORT_KEYS);
	if (ret == 0 && write(a->run.json_fd, "\n", 1) != 1) /* a text file ends in one */
		ret = -1;
	json_decref(root);
	if (ret < 0)
		fprintf(stderr, "shmguard audit: cannot write %s\n", a->o->reports.json_path);
	return ret;
}

/* The first reason the gate fails, in s->reason, or "". */
static void gate_reason(const struct audit *a, struct summary *s)
{
	char dir[SG_ESCAPED_MAX];

	if (s->too_few_aborts && !a->abort_set.naborts)
		snprintf(s->reason, sizeof(s->reason), "no abort marker seen in %s: is --abort-dir right?",
			 sg_text_escape(a->o->abort_dir, dir, sizeof(dir)));
	else if (s->too_few_aborts && a->abort_set.aborts_cut_short)
		snprintf(s->reason, sizeof(s->reason),
			 "%u %s measured (%u cut short by COMMAND's end), fewer than --min-aborts %u or none at all",
			 SG_PLURAL(audit_aborts_counted(a), "abort", "aborts"), a->abort_set.aborts_cut_short,
			 a->o->gate.min_aborts);
	else if (s->too_few_aborts)
		snprintf(s->reason, sizeof(s->reason), "%u %s measured, fewer than --min-aborts %u",
			 SG_PLURAL(audit_aborts_counted(a), "abort", "aborts"), a->o->gate.min_aborts);
	else if (s->over_budget)
		snprintf(s->reason, sizeof(s->reason), "%.1f KiB/abort > budget %g KiB/abort", s->kib_per_abort,
			 a->o->gate.budget_kib);
	else if (s->unfollowed && a->root_table.roots_refused)
		snprintf(s->reason, sizeof(s->reason), "%llu /dev/shm mounts could not be followed",
			 (unsigned long long)a->root_table.roots_refused);
	else if (s->unfollowed)
		snprintf(s->reason, sizeof(s->reason), "%llu %s of aborted requests on filesystems not followed: the "
			 "figure would be too low", SG_PLURAL((unsigned long long)a->pending.unfollowed_files, "file", "files"));
	else if (audit_workloads_gate(a, s->reason, sizeof(s->reason)))
		return;
	else if (s->drops_fail)
		snprintf(s->reason, sizeof(s->reason), "events or markers were lost (--allow-drops to accept)");
	else
		s->reason[0] = '\0';
}

int audit_report_write(const struct audit *a, bool failed[AUDIT_REPORT_FILES])
{
	struct summary s = {.tracked = a->reviewed.tracked, .unattributed = a->reviewed.unattributed, .files_left = a->reviewed.files_left,
			    .live_pending = a->reviewed.live_pending, .live_files = a->reviewed.live_files};
	struct groups by_proc = {0}, by_shape = {0};
	int status;

	if (a->abort_set.folded) { /* the aborts no longer listed */
		s.leaked_bytes = a->abort_set.folded->leaked_bytes;
		s.leaked_files = a->abort_set.folded->leaked_files;
		s.leaked_segments = a->abort_set.folded->leaked_segments;
	}
	for (const struct audit_abort *ab = a->abort_set.aborts; ab; ab = ab->next) {
		s.leaked_bytes += ab->leaked_bytes;
		s.leaked_files += ab->leaked_files;
		s.leaked_segments += ab->leaked_segments;
	}
	s.kib_per_abort = audit_aborts_counted(a) ? s.leaked_bytes / KIB / audit_aborts_counted(a) : 0;
	/* The leak's growth: what aborted requests leave, over the run. */
	s.leak_growth_mib_per_hour = a->end_s >= AUDIT_GROWTH_MIN_S ? s.leaked_bytes / MIB / (a->end_s / 3600.0) : -1;
	s.over_budget = a->o->gate.have_budget && s.kib_per_abort > a->o->gate.budget_kib;
	s.lost = a->run.dropped || audit_files_over_limit(a->files) || a->abort_set.marker_overflows;
	s.drops_fail = s.lost && !a->o->gate.allow_drops;
	s.unfollowed = a->pending.unfollowed_files || a->root_table.roots_refused;
	/* A gate that measured nothing does not pass, nor one that saw only
	 * aborts it could not measure, whatever --min-aborts. */
	s.too_few_aborts = a->o->gate.have_budget &&
			   (audit_aborts_counted(a) < a->o->gate.min_aborts ||
			    (!audit_aborts_counted(a) && a->abort_set.aborts_cut_short));
	gate_reason(a, &s);
	s.verdict = s.reason[0] ? "fail" : a->o->gate.have_budget ? "pass" : "none";
	audit_group_leftovers(a, &by_proc, &by_shape);
	/* The files first: they are written even if stdout is gone. */
	status = AUDIT_PASS;
	failed[0] = a->o->reports.json_path && write_json(a, &s, &by_proc, &by_shape) < 0;
	failed[1] = a->o->reports.junit_path && audit_junit_write(a, &s, &by_proc) < 0;
	failed[2] = a->o->reports.plot_path && audit_live_plot(a, s.kib_per_abort, s.verdict) < 0;
	for (size_t i = 0; i < AUDIT_REPORT_FILES; i++)
		if (failed[i])
			status = AUDIT_USAGE;
	print_text(a, &s, &by_proc, &by_shape);
	audit_github_report(a, &s, &by_shape);
	free(by_proc.g);
	free(by_shape.g);
	if (s.reason[0])
		return AUDIT_OVER_BUDGET;
	if (status != AUDIT_PASS)
		return status;
	return a->run.cmd_status > 0 || a->run.interrupted ? AUDIT_CMD_FAILED : AUDIT_PASS;
}
