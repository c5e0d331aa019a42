/* Rendering the auditor's figures in Prometheus's text exposition format,
 * and writing them the way node_exporter's textfile collector wants. */
#include "metrics.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "outfile.h"
#include "text.h"

/* A label value: backslash, double quote and newline escaped as the
 * exposition format wants; bytes that are not valid UTF-8 (a cgroup named by
 * a pod or a local user may hold any byte) and other control characters
 * written as the four characters \xNN, so one hostile name can never make
 * Prometheus refuse the whole scrape, nor drive a terminal that shows it. */
static void label_value(FILE *out, const char *v)
{
	const unsigned char *p = (const unsigned char *)v;

	while (*p) {
		size_t n = sg_utf8_seq(p);

		if (*p == '\\' || *p == '"') {
			fprintf(out, "\\%c", *p);
		} else if (*p == '\n') {
			fputs("\\n", out);
		} else if (n == 0 || *p < 0x20 || *p == 0x7f) {
			fprintf(out, "\\\\x%02x", *p);
		} else if (n == 2 && p[0] == 0xc2 && p[1] < 0xa0) { /* a C1 control */
			fprintf(out, "\\\\xc2\\\\x%02x", p[1]);
		} else {
			fwrite(p, 1, n, out);
		}
		p += n ? n : 1;
	}
}

static void family(FILE *out, const char *name, const char *type, const char *help)
{
	fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void plain(FILE *out, const char *name, const char *type, const char *help, uint64_t value)
{
	family(out, name, type, help);
	fprintf(out, "%s %llu\n", name, (unsigned long long)value);
}

/* One value per root, labelled root="PATH" and with its pod's namespace,
 * name and container: one series per root. */
static void per_root(FILE *out, const struct audit_metrics *m, const char *name, const char *help,
		     size_t offset)
{
	family(out, name, "gauge", help);
	for (unsigned i = 0; i < m->nroots; i++) {
		const struct metrics_root *r = &m->roots[i];
		uint64_t v;

		memcpy(&v, (const char *)r + offset, sizeof(v));
		fprintf(out, "%s{root=\"", name);
		label_value(out, r->path);
		fputs("\",namespace=\"", out);
		label_value(out, r->namespace_ ? r->namespace_ : "");
		fputs("\",pod=\"", out);
		label_value(out, r->pod ? r->pod : "");
		fputs("\",container=\"", out);
		label_value(out, r->container ? r->container : "");
		fprintf(out, "\"} %llu\n", (unsigned long long)v);
	}
}

/* One value per workload. */
static void per_workload(FILE *out, const struct audit_metrics *m, const char *name, const char *type,
			 const char *help, size_t offset)
{
	family(out, name, type, help);
	for (size_t i = 0; i < m->nworkloads; i++) {
		const struct metrics_workload *w = &m->workloads[i];
		uint64_t v;

		memcpy(&v, (const char *)w + offset, sizeof(v));
		fprintf(out, "%s{namespace=\"", name);
		label_value(out, w->namespace_);
		fprintf(out, "\",pod=\"");
		label_value(out, w->pod);
		fprintf(out, "\",container=\"");
		label_value(out, w->container);
		fprintf(out, "\",container_id=\"");
		label_value(out, w->container_id);
		fprintf(out, "\",id=\"");
		label_value(out, w->cgroup);
		fprintf(out, "\",cgroup_id=\"%llu\"} %llu\n", (unsigned long long)w->cgroup_id, (unsigned long long)v);
	}
}

char *metrics_render(const struct audit_metrics *m, size_t *len)
{
	char *text = NULL;
	FILE *out = open_memstream(&text, len);

	if (!out)
		return NULL;
	plain(out, "shmguard_aborts_total", "counter", "Abort markers seen.", m->aborts);
	plain(out, "shmguard_aborts_measured_total", "counter",
	      "Aborts measured (their grace is over): the denominator of the leak per abort.", m->aborts_measured);
	plain(out, "shmguard_leaked_bytes_total", "counter",
	      "Allocated bytes that measured aborts left behind: rate(shmguard_leaked_bytes_total) / "
	      "rate(shmguard_aborts_measured_total) is the leak per abort.",
	      m->leaked_bytes);
	plain(out, "shmguard_aborted_held_bytes", "gauge",
	      "Bytes still held in the shm roots by files of aborted requests.", m->aborted_held_bytes);
	plain(out, "shmguard_reclaimed_bytes_total", "counter",
	      "Bytes of aborted requests' files that went after their abort marker.", m->reclaimed_bytes);
	if (m->dead_reclaimed.on) {
		plain(out, "shmguard_dead_reclaimed_bytes_total", "counter",
		      "Allocated bytes of dead creators' files that --reclaim-dead removed.", m->dead_reclaimed.bytes);
		plain(out, "shmguard_dead_reclaimed_files_total", "counter",
		      "Dead creators' files that --reclaim-dead removed.", m->dead_reclaimed.files);
		family(out, "shmguard_dead_reclaim_roots", "gauge",
		       "The roots --reclaim-dead's last pass covered; scope says which /dev/shm it covers: "
		       "\"pods\" (not the node's own), \"pods and node\" (--reclaim-node-shm) or \"own namespace\".");
		fprintf(out, "shmguard_dead_reclaim_roots{scope=\"");
		label_value(out, m->dead_reclaimed.scope ? m->dead_reclaimed.scope : "");
		fprintf(out, "\"} %llu\n", (unsigned long long)m->dead_reclaimed.roots);
		plain(out, "shmguard_dead_reclaim_node_roots_left", "gauge",
		      "The node's own /dev/shm mounts --reclaim-dead's last pass left alone (--reclaim-node-shm to include them).",
		      m->dead_reclaimed.node_roots_left);
	}
	plain(out, "shmguard_live_pending_bytes", "gauge",
	      "Bytes held by files of requests not aborted (live, or finished and not yet read).",
	      m->live_pending_bytes);
	per_root(out, m, "shmguard_tracked_bytes", "Bytes of files created while auditing that still exist.",
		 offsetof(struct metrics_root, tracked_bytes));
	per_root(out, m, "shmguard_unattributed_bytes", "Tracked bytes that belong to no request.",
		 offsetof(struct metrics_root, unattributed_bytes));
	per_root(out, m, "shmguard_root_free_bytes", "Bytes the root's filesystem can still take.",
		 offsetof(struct metrics_root, free_bytes));
	per_root(out, m, "shmguard_root_size_bytes", "The size of the root's filesystem.",
		 offsetof(struct metrics_root, size_bytes));
	per_workload(out, m, "shmguard_workload_aborts_measured_total", "counter",
		     "Measured aborts that counted for the workload (it created a file of their request).",
		     offsetof(struct metrics_workload, aborts_measured));
	per_workload(out, m, "shmguard_workload_leaked_bytes_total", "counter",
		     "Allocated bytes of the workload's files that measured aborts left behind.",
		     offsetof(struct metrics_workload, leaked_bytes));
	per_workload(out, m, "shmguard_workload_aborts_unattributed_total", "counter",
		     "Measured aborts of the workload's /dev/shm abort directory that none of its files could be tied "
		     "to (no pattern matched their names, no shim tag): its leaked bytes are unknown, not 0.",
		     offsetof(struct metrics_workload, aborts_unattributed));
	per_workload(out, m, "shmguard_workload_aborted_held_bytes", "gauge",
		     "Bytes still held by the workload's files of aborted requests.",
		     offsetof(struct metrics_workload, aborted_held_bytes));
	per_workload(out, m, "shmguard_workload_tracked_bytes", "gauge",
		     "Bytes of the workload's files created while auditing that still exist.",
		     offsetof(struct metrics_workload, tracked_bytes));
	plain(out, "shmguard_workloads_folded", "gauge",
	      "Live workloads past --max-workload-series: their figures are in the workload series with id=\"other\".",
	      m->workloads_folded);
	plain(out, "shmguard_aborts_without_workload_total", "counter",
	      "Measured aborts for which no file of their request was followed: they count for no workload.",
	      m->abort_book.without_workload);
	plain(out, "shmguard_abort_records", "gauge",
	      "Aborts whose records the auditor holds: those not measured yet and the recent ones with leftovers.",
	      m->abort_book.records);
	plain(out, "shmguard_aborts_remembered", "gauge",
	      "Aborts no longer listed whose request is still known: their marker or a file of theirs remains.",
	      m->abort_book.remembered);
	plain(out, "shmguard_events_total", "counter", "Events the kernel side sent.", m->events);
	plain(out, "shmguard_dropped_events_total", "counter",
	      "Events the kernel side could not send (its buffer was full).", m->dropped_events);
	plain(out, "shmguard_files_over_limit_total", "counter", "Files not followed: the table was full.",
	      m->files_over_limit);
	plain(out, "shmguard_followed_files", "gauge", "Files the auditor follows now (its table's records).",
	      m->followed_files);
	plain(out, "shmguard_files_freed_at_eviction_total", "counter",
	      "Followed files forgotten as their inode was evicted (fentry or kprobe): at once.", m->freed_at_eviction);
	plain(out, "shmguard_files_freed_by_review_total", "counter",
	      "Followed files forgotten when the review found them gone (where evictions are not seen).",
	      m->freed_by_review);
	plain(out, "shmguard_unfollowed_files_total", "counter",
	      "Files of measured aborts on filesystems no root follows (the shim's tags say so): their bytes "
	      "are not in the leak.", m->unfollowed_files);
	plain(out, "shmguard_roots", "gauge", "The shm roots followed.", m->nroots);
	plain(out, "shmguard_lost_markers_total", "counter",
	      "Abort markers that may have been missed (the marker watch overflowed).", m->lost_markers);
	family(out, "shmguard_last_review_timestamp_seconds", "gauge",
	       "When the last review cycle ended, in Unix time (the run's start before the first cycle).");
	fprintf(out, "shmguard_last_review_timestamp_seconds %.3f\n", m->last_review_unix_s);
	family(out, "shmguard_last_review_duration_seconds", "gauge", "How long the last review cycle took.");
	fprintf(out, "shmguard_last_review_duration_seconds %.3f\n", m->last_review_duration_s);
	family(out, "shmguard_build_info", "gauge", "The auditor: its version and the probe in use.");
	fprintf(out, "shmguard_build_info{version=\"");
	label_value(out, m->version ? m->version : "");
	fprintf(out, "\",probe=\"");
	label_value(out, m->probe ? m->probe : "");
	fprintf(out, "\"} 1\n");
	if (fclose(out) != 0) {
		free(text);
		return NULL;
	}
	return text;
}

int metrics_write_file(const char *path, const char *text, size_t len, char *err, size_t errlen)
{
	/* Rewritten every interval: no fsync, a crash loses one snapshot. */
	return sg_outfile_replace(path, text, len, 0644, 0, err, errlen);
}
