/* The workloads in the reports (audit_workload_report.h). */
#include "audit_workload_report.h"

#include <stdlib.h>
#include <string.h>

#include "encode.h"
#include "size.h"
#include "text.h"

/* Lines of the text report; the JSON has every workload. */
#define TEXT_WORKLOADS 20

static double kib_per_abort(const struct audit_workload *w)
{
	return w->aborts ? w->leaked_bytes / 1024.0 / w->aborts : 0;
}

/* "pass", "fail", or "none": no gate for it, or no abort of its own to judge. */
static const char *verdict(const struct audit *a, const struct audit_workload *w)
{
	if (!a->o->gate.have_budget || !a->o->gate.per_workload || !w->aborts)
		return "none";
	return kib_per_abort(w) > a->o->gate.budget_kib ? "fail" : "pass";
}

static int by_pod(const void *x, const void *y)
{
	const struct audit_workload *a = *(const struct audit_workload *const *)x;
	const struct audit_workload *b = *(const struct audit_workload *const *)y;
	int c;

	/* Pods first, in UID order; then each pod's containers by ID. */
	if (!a->ids.pod_uid[0] != !b->ids.pod_uid[0])
		return a->ids.pod_uid[0] ? -1 : 1;
	if ((c = strcmp(a->ids.pod_uid, b->ids.pod_uid)) || (c = strcmp(a->ids.container_id, b->ids.container_id)))
		return c;
	return (a->cgroup_id > b->cgroup_id) - (a->cgroup_id < b->cgroup_id);
}

/* Every workload, sorted; NULL (and n 0) when there are none or memory is short. */
static const struct audit_workload **sorted(const struct audit *a, size_t *n)
{
	const struct audit_workload **v = a->workloads.count ? calloc(a->workloads.count, sizeof(*v)) : NULL;

	*n = 0;
	if (!v)
		return NULL;
	for (const struct audit_workload *w = a->workloads.oldest; w && *n < a->workloads.count; w = w->next)
		v[(*n)++] = w;
	qsort(v, *n, sizeof(*v), by_pod);
	return v;
}

static bool has_figures(const struct audit_workload *w)
{
	return w->aborts || w->leaked_bytes || w->leaked_files || w->root.aborts_unattributed;
}

/* Why w's leak cannot be known, in reason, or false: it can. */
static bool unknown_why(const struct audit_workload *w, char *reason, size_t len)
{
	if (!w->root.aborts_unattributed)
		return false;
	snprintf(reason, len,
		 "%llu %s of its /dev/shm's abort directory could not be tied to its files: no pattern matched "
		 "their names and no shim tag (give the pod SHMGUARD_PATTERNS, or the node --patterns-file)",
		 SG_PLURAL((unsigned long long)w->root.aborts_unattributed, "abort", "aborts"));
	return true;
}

/* The workload for people: its container, else its cgroup, else its id. */
static void print_name(FILE *out, const struct audit_workload *w)
{
	char e[SG_ESCAPED_MAX];

	if (w->container[0])
		fprintf(out, "container %s (%.12s)", sg_text_escape(w->container, e, sizeof(e)), w->ids.container_id);
	else if (w->ids.container_id[0])
		fprintf(out, "container %.12s", w->ids.container_id);
	else if (w->path)
		fprintf(out, "cgroup %s", sg_text_escape(w->path, e, sizeof(e)));
	else
		fprintf(out, "cgroup id %llu (path unknown: it was gone or left before it was read)",
			(unsigned long long)w->cgroup_id);
}

void audit_workloads_print(const struct audit *a, FILE *out)
{
	const struct audit_workloads *ws = &a->workloads;
	char b[32], e1[SG_ESCAPED_MAX], e2[SG_ESCAPED_MAX], why[300];
	const char *pod = NULL;
	size_t n, shown = 0, with = 0;
	const struct audit_workload **v = sorted(a, &n);

	for (size_t i = 0; i < n; i++)
		with += has_figures(v[i]);
	if (with)
		fprintf(out, "by workload (an abort counts for each workload that created a file of its request):\n");
	for (size_t i = 0; i < n && shown < TEXT_WORKLOADS; i++) {
		const struct audit_workload *w = v[i];
		if (!has_figures(w))
			continue;
		if (!pod || strcmp(pod, w->ids.pod_uid) != 0) {
			pod = w->ids.pod_uid;
			if (!*pod)
				fprintf(out, "  no pod\n");
			else if (w->pod[0])
				fprintf(out, "  pod %s/%s (uid %s)\n", sg_text_escape(w->ns, e1, sizeof(e1)),
					sg_text_escape(w->pod, e2, sizeof(e2)), pod);
			else
				fprintf(out, "  pod uid %s (name unknown)\n", pod);
		}
		fprintf(out, "    ");
		print_name(out, w);
		if (unknown_why(w, why, sizeof(why))) {
			fprintf(out, "  leaked UNKNOWN: %s\n", why);
			shown++;
			continue;
		}
		fprintf(out, "  aborts %llu  leaked %s in %llu %s  %.1f KiB/abort", (unsigned long long)w->aborts,
			sg_human_bytes(w->leaked_bytes, b, sizeof(b)),
			SG_PLURAL((unsigned long long)w->leaked_files, "file", "files"), kib_per_abort(w));
		if (strcmp(verdict(a, w), "none") != 0)
			fprintf(out, "  %s", strcmp(verdict(a, w), "fail") == 0 ? "FAIL" : "pass");
		else if (a->o->gate.per_workload && !w->aborts)
			fprintf(out, "  not judged: no abort of its own");
		fputc('\n', out);
		shown++;
	}
	if (with > shown)
		fprintf(out, "  %zu more workloads in the JSON report\n", with - shown);
	if (ws->aborts_without)
		fprintf(out, "aborts that counted for no workload (no file of their request was followed): %llu\n",
			(unsigned long long)ws->aborts_without);
	if (ws->aborts_unattributed)
		fprintf(out, "of those, aborts of a pod whose files could not be tied to requests: %llu (its leak is "
			"UNKNOWN)\n", (unsigned long long)ws->aborts_unattributed);
	if (ws->expired.workloads)
		fprintf(out, "workloads expired during the run: %llu (their aborts %llu, leaked %s)\n",
			(unsigned long long)ws->expired.workloads, (unsigned long long)ws->expired.aborts,
			sg_human_bytes(ws->expired.leaked_bytes, b, sizeof(b)));
	free(v);
}

static json_t *text_or_null(const char *s)
{
	char *lossy;
	json_t *j;

	if (!s || !*s)
		return json_null();
	lossy = sg_utf8_lossy(s); /* a cgroup's name need not be UTF-8 */
	j = json_string(lossy ? lossy : "?");
	free(lossy);
	return j;
}

json_t *audit_workloads_json(const struct audit *a)
{
	json_t *arr = json_array();
	size_t n;
	const struct audit_workload **v = sorted(a, &n);

	for (size_t i = 0; i < n; i++) {
		const struct audit_workload *w = v[i];
		json_t *o = json_object();
		char why[300];
		bool unknown = unknown_why(w, why, sizeof(why));

		json_object_set_new(o, "cgroup", text_or_null(w->path));
		json_object_set_new(o, "cgroup_id", json_integer((json_int_t)w->cgroup_id));
		json_object_set_new(o, "container_id", text_or_null(w->ids.container_id));
		json_object_set_new(o, "container", text_or_null(w->container));
		json_object_set_new(o, "pod_uid", text_or_null(w->ids.pod_uid));
		json_object_set_new(o, "pod", text_or_null(w->pod));
		json_object_set_new(o, "namespace", text_or_null(w->ns));
		json_object_set_new(o, "root", text_or_null(w->root.shown));
		json_object_set_new(o, "aborts", json_integer((json_int_t)w->aborts));
		json_object_set_new(o, "aborts_unattributed", json_integer((json_int_t)w->root.aborts_unattributed));
		json_object_set_new(o, "leaked_bytes", unknown ? json_null() : json_integer((json_int_t)w->leaked_bytes));
		json_object_set_new(o, "leaked_files", unknown ? json_null() : json_integer((json_int_t)w->leaked_files));
		json_object_set_new(o, "kib_per_abort",
				    w->aborts && !unknown ? json_real(kib_per_abort(w)) : json_null());
		json_object_set_new(o, "leaked_unknown_reason", unknown ? json_string(why) : json_null());
		json_object_set_new(o, "tracked_bytes_at_end", json_integer((json_int_t)w->tracked));
		json_object_set_new(o, "tracked_files_at_end", json_integer((json_int_t)w->files));
		json_object_set_new(o, "verdict", json_string(unknown ? "fail" : verdict(a, w)));
		json_array_append_new(arr, o);
	}
	free(v);
	return arr;
}

/* The first workload whose leak cannot be known, in reason, or false. */
static bool unknown_gate(const struct audit *a, char *reason, size_t len)
{
	char e1[SG_ESCAPED_MAX], e2[SG_ESCAPED_MAX], why[300];

	for (const struct audit_workload *w = a->workloads.oldest; w; w = w->next) {
		if (!unknown_why(w, why, sizeof(why)))
			continue;
		if (w->pod[0])
			snprintf(reason, len, "workload %s/%s container %.12s: leak unknown: %s", sg_text_escape(w->ns, e1, sizeof(e1)),
				 sg_text_escape(w->pod, e2, sizeof(e2)), w->ids.container_id[0] ? w->ids.container_id : "?", why);
		else
			snprintf(reason, len, "workload %s: leak unknown: %s",
				 w->path ? sg_text_escape(w->path, e1, sizeof(e1)) : "(cgroup path unknown)", why);
		return true;
	}
	if (!a->workloads.aborts_unattributed)
		return false;
	/* Its workloads are gone (expired, or folded in "other"). */
	snprintf(reason, len, "%llu %s of pods whose files could not be tied to requests: leak unknown",
		 SG_PLURAL((unsigned long long)a->workloads.aborts_unattributed, "abort", "aborts"));
	return true;
}

bool audit_workloads_gate(const struct audit *a, char *reason, size_t len)
{
	char e1[SG_ESCAPED_MAX], e2[SG_ESCAPED_MAX];
	bool judged = false;

	if (unknown_gate(a, reason, len))
		return true;
	if (!a->o->gate.have_budget || !a->o->gate.per_workload)
		return false;
	for (const struct audit_workload *w = a->workloads.oldest; w; w = w->next) {
		judged |= w->aborts > 0;
		if (strcmp(verdict(a, w), "fail") != 0)
			continue;
		if (w->pod[0])
			snprintf(reason, len, "workload %s/%s container %.12s: %.1f KiB/abort > budget %g KiB/abort",
				 sg_text_escape(w->ns, e1, sizeof(e1)), sg_text_escape(w->pod, e2, sizeof(e2)),
				 w->ids.container_id[0] ? w->ids.container_id : "?", kib_per_abort(w), a->o->gate.budget_kib);
		else
			snprintf(reason, len, "workload %s: %.1f KiB/abort > budget %g KiB/abort",
				 w->path ? sg_text_escape(w->path, e1, sizeof(e1)) : "(cgroup path unknown)",
				 kib_per_abort(w), a->o->gate.budget_kib);
		return true;
	}
	if (!judged)
		snprintf(reason, len, "--per-workload: no workload had an abort of its own measured");
	return !judged;
}
