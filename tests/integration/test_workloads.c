/* Issue 19 §2: the auditor says which pod and container leaks.  Two "pods"
 * made of namespaces (mount, pid, ipc), each with its own tmpfs on /dev/shm
 * and put into a cgroup laid out as kubelet lays them (one systemd-style,
 * one cgroupfs-style), with a fake /var/log/pods: one leaks its aborted
 * requests, the other runs under the shim and leaks none.  The pods start
 * before the auditor (their cgroups are read from the events, not from a
 * fork).  The per-workload figures in the JSON and the metrics are the truth
 * from st_blocks. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "harness.h"

#define PATTERNS "{req}_{int}_{int};shm_{req}_{int}_{int}_lockfile.lock"
#define CGROOT "/sys/fs/cgroup/unified"
enum { REQUESTS = 20, ABORT_EVERY = 2, ABORTS = REQUESTS / ABORT_EVERY };

static const char *prefix, *abort_dir, *json_path, *pods_dir, *containers_dir;
/* A cgroup whose name a delegated user chose: an escape sequence, a quote,
 * a backslash (the kernel refuses a newline). */
static const char *hostile_cgroup;

struct pod {
	const char *ns, *name, *uid, *container, *cgroup; /* cgroup: its directory, under CGROOT */
	const char *container_name;
	const char *requests; /* its request IDs' prefix: the pods share the abort directory */
	const char *dirs[6]; /* the cgroup directories made for it, innermost first */
	struct h_proc proc;
};

static struct pod leaky, clean;

/* A pod UID of this test process: unique, and the same in both layouts. */
static const char *pod_uid(int n)
{
	return h_str("%08x-0000-4000-8000-%012x", (unsigned)getpid(), n);
}

static const char *container_id(int n)
{
	return h_str("%056x%08x", n, (unsigned)getpid());
}

static void make_cgroup(struct pod *p, const char *const *path)
{
	char dir[4096] = CGROOT;
	size_t n = 0;

	for (; path[n]; n++)
		;
	for (size_t i = 0; i < n; i++) {
		strcat(dir, "/");
		strcat(dir, path[i]);
		cr_assert(mkdir(dir, 0755) == 0 || errno == EEXIST, "mkdir %s: %s", dir, strerror(errno));
		p->dirs[n - 1 - i] = h_str("%s", dir);
	}
	p->cgroup = p->dirs[0];
}

static void setup(void)
{
	prefix = h_prefix("wl");
	abort_dir = h_str("/tmp/%saborts", prefix);
	json_path = h_str("/tmp/%sreport.json", prefix);
	pods_dir = h_str("/tmp/%spods", prefix);
	containers_dir = h_str("/tmp/%scontainers", prefix);
	hostile_cgroup = h_str(CGROOT "/%sesc\x1b[2J\"\\x", prefix);
	cr_assert_eq(mkdir(abort_dir, 0755), 0);
	cr_assert_eq(mkdir(pods_dir, 0755), 0);
	cr_assert_eq(mkdir(containers_dir, 0755), 0);
	cr_assert_eq(mkdir(hostile_cgroup, 0755), 0);
	leaky = (struct pod){.ns = "serving", .name = "vllm-leaky-0", .uid = pod_uid(1), .container = container_id(1),
			 .requests = h_str("%sa", prefix), .container_name = "server"};
	clean = (struct pod){.ns = "serving", .name = "vllm-clean-0", .uid = pod_uid(2), .container = container_id(2),
			 .requests = h_str("%sb", prefix), .container_name = "engine"};
	/* kubelet's systemd layout: the UID's dashes are underscores there. */
	char *uid_ = h_str("%s", leaky.uid);
	for (char *c = uid_; *c; c++)
		*c = *c == '-' ? '_' : *c;
	make_cgroup(&leaky, (const char *const[]){"kubepods.slice", "kubepods-burstable.slice",
						 h_str("kubepods-burstable-pod%s.slice", uid_),
						 h_str("cri-containerd-%s.scope", leaky.container), NULL});
	make_cgroup(&clean, (const char *const[]){"kubepods", "besteffort", h_str("pod%s", clean.uid), clean.container,
						 NULL});
	cr_assert_eq(mkdir(h_str("%s/%s_%s_%s", pods_dir, leaky.ns, leaky.name, leaky.uid), 0755), 0);
	cr_assert_eq(mkdir(h_str("%s/%s_%s_%s", pods_dir, clean.ns, clean.name, clean.uid), 0755), 0);
	/* The kubelet's links to the containers' logs: POD_NAMESPACE_CONTAINER-ID.log. */
	for (const struct pod *p = &leaky; p; p = p == &leaky ? &clean : NULL)
		close(open(h_str("%s/%s_%s_%s-%s.log", containers_dir, p->name, p->ns, p->container_name, p->container),
			   O_CREAT | O_WRONLY, 0644));
}

static void remove_cgroups(const struct pod *p)
{
	/* The shared parents (kubepods.slice, ...) may hold another test's
	 * pods: removed only when empty. */
	for (size_t i = 0; i < sizeof(p->dirs) / sizeof(p->dirs[0]) && p->dirs[i]; i++)
		for (int tries = 0; rmdir(p->dirs[i]) < 0 && errno == EBUSY && tries < 50; tries++)
			usleep(20000); /* its last process is still exiting */
}

static void teardown(void)
{
	h_cleanup(prefix); /* ends the pods: their namespaces and tmpfs go with them */
	remove_cgroups(&leaky);
	remove_cgroups(&clean);
	for (int tries = 0; rmdir(hostile_cgroup) < 0 && errno == EBUSY && tries < 50; tries++)
		usleep(20000);
	unlink(json_path);
	const char *rm[] = {"/bin/rm", "-rf", abort_dir, pods_dir, containers_dir, NULL};
	h_run(rm, NULL, NULL);
}

TestSuite(workloads, .init = setup, .fini = teardown, .timeout = 120);

/* A pod: its cgroup, then new mount, pid and ipc namespaces, a tmpfs of
 * its own on /dev/shm (every process of its namespaces is in its cgroup,
 * as a runtime makes them); it says "ready", then waits for a line on
 * stdin before it execs leakgen (under the shim if shimmed), which keeps
 * its files until stdin closes. */
static void start_pod(struct pod *p, bool shimmed)
{
	const char *script = "mount -t tmpfs -o size=64m tmpfs /dev/shm && echo ready && read go && exec \"$@\"";
	const char *argv[40] = {"/bin/sh", "-c", "echo 0 > \"$0/cgroup.procs\" && exec \"$@\"", p->cgroup,
				"/usr/bin/unshare", "--mount", "--pid", "--ipc", "--fork", "--kill-child", "--propagation",
				"private", "/bin/sh", "-c", script, "pod"};
	size_t n = 16;

	if (shimmed) {
		const char *run[] = {h_bin("SG_CLI"), "run", "--patterns", PATTERNS, "--abort-dir", abort_dir,
				     "--lib", h_bin("SG_SHIM"), "--", NULL};
		for (size_t i = 0; run[i]; i++)
			argv[n++] = run[i];
	}
	const char *gen[] = {h_bin("SG_LEAKGEN"), "--prefix", p->requests, "--requests", h_str("%d", REQUESTS),
			     "--abort-every", h_str("%d", ABORT_EVERY), "--abort-dir", abort_dir, "--wait-stdin", NULL};
	for (size_t i = 0; gen[i]; i++)
		argv[n++] = gen[i];
	p->proc = h_start_ready(argv, NULL);
}

/* The pod's /dev/shm, seen from the host (unshare is in its mount namespace). */
static const char *shm_of(const struct pod *p)
{
	return h_str("/proc/%d/root/dev/shm", (int)p->proc.pid);
}

static uint64_t blocks_of(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 ? (uint64_t)st.st_blocks * 512 : 0;
}

/* Allocated bytes of the pod's files of aborted requests: its leak. */
static uint64_t aborted_truth(const struct pod *p)
{
	uint64_t truth = 0;

	for (int i = ABORT_EVERY - 1; i < REQUESTS; i += ABORT_EVERY)
		for (int k = 0; k < 3; k++)
			truth += blocks_of(h_str("%s/%s%d_0_%d", shm_of(p), p->requests, i, k));
	return truth;
}

static unsigned metrics_port_of(struct h_proc *audit)
{
	char line[256];
	unsigned port = 0;
	FILE *e;

	cr_assert(h_wait_stderr(audit, "/metrics\n", 20000), "the address bound was not printed");
	cr_assert(e = fopen(audit->err, "r"));
	while (!port && fgets(line, sizeof(line), e))
		sscanf(line, "shmguard audit: serving metrics on http://127.0.0.1:%u/metrics", &port);
	fclose(e);
	cr_assert_gt(port, 0);
	return port;
}

/* Prometheus's own linter reads text as valid exposition format. */
static void expect_promtool_passes(const char *text)
{
	const char *path = h_str("/tmp/%smetrics.txt", prefix);
	FILE *f = fopen(path, "w");
	char *err;

	cr_assert(f);
	fputs(text, f);
	fclose(f);
	const char *promtool[] = {"/bin/sh", "-c", h_str("promtool check metrics < %s", path), NULL};
	cr_expect_eq(h_run(promtool, NULL, &err), 0, "promtool: %s", err);
	unlink(path);
}

static char *scrape(unsigned port)
{
	const char *curl[] = {"/usr/bin/curl", "-sf", "--noproxy", "*", "--max-time", "5",
			      h_str("http://127.0.0.1:%u/metrics", port), NULL};
	char *out = NULL;

	for (long t0 = h_now_ms(); h_now_ms() - t0 < 20000; usleep(100 * 1000))
		if (h_output(curl, NULL, &out, NULL) == 0)
			return out;
	cr_assert_fail("/metrics never answered");
	return NULL;
}

/* The value of the series NAME whose labels include pod="POD", -1 if none. */
static long long series(const char *text, const char *name, const struct pod *p)
{
	const char *want = h_str("pod=\"%s\"", p->name);

	for (const char *line = text; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
		const char *nl = strchr(line, '\n'), *brace = strchr(line, '{'), *w = strstr(line, want);
		if (strncmp(line, name, strlen(name)) == 0 && brace == line + strlen(name) && w && (!nl || w < nl) &&
		    strstr(line, h_str("namespace=\"%s\"", p->ns)) &&
		    strstr(line, h_str("container_id=\"%s\"", p->container)) &&
		    strstr(line, h_str("container=\"%s\"", p->container_name)))
			return strtoll(strchr(line, '}') + 1, NULL, 10);
	}
	return -1;
}

static json_t *workload_of(json_t *r, const struct pod *p)
{
	json_t *ws = json_object_get(r, "workloads"), *w;
	size_t i;

	cr_assert(json_is_array(ws), "no workloads in the report");
	json_array_foreach(ws, i, w) {
		const char *uid = json_string_value(json_object_get(w, "pod_uid"));
		if (uid && strcmp(uid, p->uid) == 0)
			return w;
	}
	cr_assert_fail("no workload for pod %s", p->name);
	return NULL;
}

static void expect_pod(json_t *r, const struct pod *p, long long aborts, uint64_t truth)
{
	json_t *w = workload_of(r, p);

	cr_expect_str_eq(json_string_value(json_object_get(w, "pod")), p->name);
	cr_expect_str_eq(json_string_value(json_object_get(w, "namespace")), p->ns);
	cr_expect_str_eq(json_string_value(json_object_get(w, "container_id")), p->container);
	cr_expect_str_eq(json_string_value(json_object_get(w, "container")), p->container_name);
	cr_expect_str_eq(json_string_value(json_object_get(w, "cgroup")), p->cgroup + strlen(CGROOT));
	cr_expect_str_eq(json_string_value(json_object_get(w, "root")), shm_of(p));
	cr_expect_eq(h_jint(w, "aborts"), aborts, "pod %s", p->name);
	cr_expect_eq(h_jint(w, "leaked_bytes"), (long long)truth, "pod %s: truth %llu", p->name,
		     (unsigned long long)truth);
	double kib = json_number_value(json_object_get(w, "kib_per_abort"));
	cr_expect(kib > truth / 1024.0 / aborts - 0.01 && kib < truth / 1024.0 / aborts + 0.01, "%s: %.2f KiB/abort",
		  p->name, kib);
}

Test(workloads, each_pod_has_its_own_figures_in_the_json_and_the_metrics)
{
	h_need_bpf(teardown);
	start_pod(&leaky, false);
	start_pod(&clean, true);
	/* The pods' roots given, not found (--own-namespace): in node mode the
	 * pods of tests running beside it would bring their aborts. */
	const char *argv[] = {h_bin("SG_CLI"), "audit", "--own-namespace", "--abort-dir", abort_dir, "--patterns", PATTERNS,
			      "--grace", "0.3", "--json", json_path, "--interval", "0.1", "--listen", "127.0.0.1:0", "--pod-logs",
			      pods_dir, "--container-logs", containers_dir, "--shm-root", shm_of(&leaky), "--shm-root", shm_of(&clean),
			      "--lib", h_bin("SG_SHIM"), "--max-kib-per-abort", "50", "--per-workload", "--duration", "100", NULL};
	struct h_proc audit = h_spawn(argv, NULL);
	unsigned port = metrics_port_of(&audit);
	char *err;

	scrape(port); /* tracing has begun */
	cr_assert_eq(write(leaky.proc.in, "go\n", 3), 3);
	cr_assert_eq(write(clean.proc.in, "go\n", 3), 3);
	char *line = h_read_line(&leaky.proc, 30000);
	cr_assert_str_eq(line ? line : "(nothing)", "done");
	line = h_read_line(&clean.proc, 30000);
	cr_assert_str_eq(line ? line : "(nothing)", "done");
	/* A process of the hostile cgroup leaks one aborted request on the host's root. */
	const char *seg = h_str("/%sh1_0_0", prefix);
	const char *hostile[] = {"/bin/sh", "-c", "echo 0 > \"$0/cgroup.procs\" && exec \"$@\"", hostile_cgroup,
				 h_bin("SG_SHMTOOL"), "shm", seg, "8192", ",", "touch", h_str("%s/%sh1", abort_dir, prefix),
				 ",", "wait", NULL};
	struct h_proc odd = h_start_ready(hostile, NULL);
	if (!h_wait_stderr(&audit, h_str("(measured %d)", 2 * ABORTS + 1), 20000)) {
		kill(audit.pid, SIGINT);
		h_finish(&audit, &err);
		cr_assert_fail("the auditor never measured %d aborts: %s", 2 * ABORTS + 1, err + (strlen(err) > 3000 ? strlen(err) - 3000 : 0));
	}
	uint64_t truth = aborted_truth(&leaky);
	cr_assert_gt(truth, 0);
	cr_expect_eq(aborted_truth(&clean), 0, "the shim swept the clean pod's aborted requests");

	/* The metrics, by namespace, pod and container, as Prometheus reads them. */
	char *text = NULL;
	for (long t0 = h_now_ms(); h_now_ms() - t0 < 10000; usleep(100 * 1000))
		if (series(text = scrape(port), "shmguard_workload_aborts_measured_total", &clean) == ABORTS)
			break;
	cr_expect_eq(series(text, "shmguard_workload_aborts_measured_total", &leaky), ABORTS, "%s", text);
	cr_expect_eq(series(text, "shmguard_workload_leaked_bytes_total", &leaky), (long long)truth, "%s", text);
	cr_expect_eq(series(text, "shmguard_workload_aborted_held_bytes", &leaky), (long long)truth, "%s", text);
	cr_expect_eq(series(text, "shmguard_workload_aborts_measured_total", &clean), ABORTS, "%s", text);
	cr_expect_eq(series(text, "shmguard_workload_leaked_bytes_total", &clean), 0, "%s", text);
	expect_promtool_passes(text);

	cr_assert_eq(kill(audit.pid, SIGINT), 0);
	char *out = h_read_all(&audit, 20000);
	int status = h_finish(&audit, &err);
	json_t *r = h_json_load(json_path);
	expect_pod(r, &leaky, ABORTS, truth);
	expect_pod(r, &clean, ABORTS, 0);
	cr_expect_eq(h_jint(r, "aborts"), 2 * ABORTS + 1);
	cr_expect_eq(h_jint(r, "aborts_without_workload"), 0);
	/* The gate per workload: the run's figure (both pods' aborts) is under
	 * the budget, the leaky pod's is over it, and the report says which. */
	cr_expect_lt(h_jint(r, "leaked_bytes") / 1024.0 / (2 * ABORTS), 50);
	cr_expect_gt(truth / 1024.0 / ABORTS, 50);
	cr_expect_eq(status, 1, "%s%s", out, err);
	cr_expect_str_eq(json_string_value(json_object_get(workload_of(r, &leaky), "verdict")), "fail");
	cr_expect_str_eq(json_string_value(json_object_get(workload_of(r, &clean), "verdict")), "pass");
	/* The text report groups the figures by pod and container. */
	cr_expect(strstr(out, h_str("  pod serving/%s (uid %s)\n    container server (%.12s)  aborts %d  ", leaky.name,
				    leaky.uid, leaky.container, ABORTS)), "%s", out);
	cr_expect(strstr(out, h_str("  pod serving/%s (uid %s)\n    container engine (%.12s)  aborts %d  leaked 0 B in 0 "
				    "files  0.0 KiB/abort  pass\n", clean.name, clean.uid, clean.container, ABORTS)),
		  "%s", out);
	/* The hostile cgroup: no pod, its path escaped in the text, exact in the JSON. */
	cr_expect(strstr(out, h_str("  no pod\n    cgroup /%sesc\\x1b[2J\"\\\\x  aborts 1  leaked 8.0 KiB in 1 file", prefix)),
		  "%s", out);
	cr_expect_null(strchr(out, '\x1b'), "an escape sequence reached the terminal");
	json_t *w, *ws = json_object_get(r, "workloads");
	size_t i;
	bool seen = false;
	json_array_foreach(ws, i, w)
		if (json_is_string(json_object_get(w, "cgroup")) &&
		    strcmp(json_string_value(json_object_get(w, "cgroup")), hostile_cgroup + strlen(CGROOT)) == 0) {
			seen = true;
			cr_expect(json_is_null(json_object_get(w, "pod")) && json_is_null(json_object_get(w, "container_id")));
			cr_expect_eq(h_jint(w, "aborts"), 1);
			cr_expect_eq(h_jint(w, "leaked_bytes"), 8192);
		}
	cr_expect(seen, "no workload for the hostile cgroup");
	/* Every field of the report, and of a workload, is documented. */
	const char *schema = h_str("%s/json-schema.md", getenv("SG_DOCS") ?: "docs");
	FILE *doc = fopen(schema, "r");
	cr_assert(doc, "%s", schema);
	static char doc_text[1 << 17];
	doc_text[fread(doc_text, 1, sizeof(doc_text) - 1, doc)] = '\0';
	fclose(doc);
	const char *key;
	json_t *v;
	json_object_foreach(r, key, v)
		cr_expect(strstr(doc_text, h_str("`%s`", key)), "the report's %s is not in %s", key, schema);
	json_object_foreach(workload_of(r, &leaky), key, v)
		cr_expect(strstr(doc_text, h_str("`%s`", key)), "a workload's %s is not in %s", key, schema);
	cr_expect(strstr(out, h_str("verdict: FAIL  workload serving/%s container %.12s: ", leaky.name,
				    leaky.container)), "%s", out);
	json_decref(r);
	h_finish(&leaky.proc, NULL);
	h_finish(&clean.proc, NULL);
	h_finish(&odd, NULL);
}

/* The value of the per-root series NAME of pod p's /dev/shm, labelled
 * with its namespace, name and container; -1 if none. */
static long long root_series(const char *text, const char *name, const struct pod *p)
{
	const char *labels = h_str(",namespace=\"%s\",pod=\"%s\",container=\"%s\"} ", p->ns, p->name, p->container_name);

	for (const char *line = text; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
		const char *nl = strchr(line, '\n'), *w = strstr(line, labels);
		if (strncmp(line, name, strlen(name)) == 0 && line[strlen(name)] == '{' && w && (!nl || w < nl))
			return strtoll(w + strlen(labels), NULL, 10);
	}
	return -1;
}

/* Issue 31 §5: in node mode, each pod's /dev/shm is a root found through a
 * process of the pod; its cgroup gives the pod, and the per-root series
 * carry its namespace, name and container, so that its headroom can be
 * graphed and alerted on by pod. */
Test(workloads, a_pods_root_series_carry_the_pod)
{
	h_need_bpf(teardown);
	start_pod(&leaky, false);
	start_pod(&clean, false);
	const char *argv[] = {h_bin("SG_CLI"), "audit", "--abort-dir", abort_dir, "--patterns", PATTERNS, "--interval", "0.1",
			      "--listen", "127.0.0.1:0", "--pod-logs", pods_dir, "--container-logs", containers_dir, "--lib",
			      h_bin("SG_SHIM"), "--duration", "100", NULL};
	struct h_proc audit = h_spawn(argv, NULL);
	unsigned port = metrics_port_of(&audit);
	char *text = NULL;

	for (long t0 = h_now_ms(); h_now_ms() - t0 < 15000; usleep(100 * 1000))
		if (root_series(text = scrape(port), "shmguard_root_size_bytes", &leaky) >= 0 &&
		    root_series(text, "shmguard_root_size_bytes", &clean) >= 0)
			break;
	for (const struct pod *p = &leaky; p; p = p == &leaky ? &clean : NULL) {
		struct statvfs sv;

		cr_assert_eq(statvfs(shm_of(p), &sv), 0);
		cr_expect_eq(root_series(text, "shmguard_root_size_bytes", p), 64 << 20, "%s: %s", p->name, text);
		cr_expect_eq(root_series(text, "shmguard_root_free_bytes", p), (long long)sv.f_bavail * (long long)sv.f_frsize,
			     "%s: %s", p->name, text);
		cr_expect_eq(root_series(text, "shmguard_tracked_bytes", p), 0, "%s: %s", p->name, text);
	}
	/* The node's own /dev/shm is no pod's: its labels are empty. */
	cr_expect(strstr(text, ",namespace=\"\",pod=\"\",container=\"\"} "), "%s", text);
	expect_promtool_passes(text);
	kill(audit.pid, SIGINT);
	h_read_all(&audit, 20000);
	h_finish(&audit, NULL);
}

/* Issue 29: a local user churns cgroups in a subtree delegated to it: it
 * makes one, creates and removes a file in /dev/shm from it, and removes
 * it, 3,000 times.  Each is a workload of the node agent for a moment; none
 * may stay as a series (nor as memory) once its cgroup is gone with
 * nothing to show. */
enum { CHURNED = 3000 };
static const char *churn_prefix, *churn_root, *churn_metrics, *churn_aborts;

static void churn_setup(void)
{
	churn_prefix = h_prefix("churn");
	churn_root = h_str(CGROOT "/%sdelegated", churn_prefix);
	churn_metrics = h_str("/tmp/%smetrics.prom", churn_prefix);
	churn_aborts = h_str("/tmp/%saborts", churn_prefix);
	cr_assert_eq(mkdir(churn_aborts, 0755), 0);
}

static void churn_teardown(void)
{
	h_cleanup(churn_prefix);
	/* What a failed run left: its cgroups, innermost first. */
	h_run((const char *const[]){"/bin/sh", "-c",
				    h_str("for d in '%s'/c*; do [ -d \"$d\" ] && rmdir \"$d\"; done; rmdir '%s'",
					  churn_root, churn_root),
				    NULL},
	      NULL, NULL);
	unlink(churn_metrics);
	rmdir(churn_aborts);
}

TestSuite(churn, .init = churn_setup, .fini = churn_teardown, .timeout = 180);

/* The workload series in the metrics file (one family's lines), or -1. */
static int series_in(const char *path)
{
	FILE *f = fopen(path, "r");
	char line[8192];
	int n = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		n += strncmp(line, "shmguard_workload_tracked_bytes{", 32) == 0;
	fclose(f);
	return n;
}

static long rss_kib(pid_t pid)
{
	FILE *f = fopen(h_str("/proc/%d/status", (int)pid), "r");
	char line[256];
	long kib = -1;

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
			break;
	if (f)
		fclose(f);
	return kib;
}

Test(churn, churned_cgroups_leave_no_series_behind)
{
	const struct h_user *u;
	struct h_proc agent, churner;
	long rss0, rss1;
	int series = -1;
	char *err;

	h_need_bpf(churn_teardown);
	u = h_hostile_user();
	/* Delegated as systemd delegates a subtree: the directory and the
	 * files through which its processes are moved and its children made. */
	cr_assert_eq(mkdir(churn_root, 0755), 0, "%s: %s", churn_root, strerror(errno));
	for (const char *const *f = (const char *const[]){"", "/cgroup.procs", "/cgroup.threads",
							  "/cgroup.subtree_control", NULL};
	     *f; f++)
		cr_assert_eq(chown(h_str("%s%s", churn_root, *f), u->uid, u->gid), 0);

	const char *audit[] = {h_bin("SG_CLI"), "audit", "--abort-dir", churn_aborts, "--grace", "0.3", "--interval", "0.1",
			       "--metrics-file", churn_metrics, NULL};
	agent = h_spawn(audit, NULL);
	if (!h_wait_stderr(&agent, "aborts 0", 20000)) {
		h_finish(&agent, &err);
		cr_assert_fail("the node agent did not start: %s", err);
	}
	rss0 = rss_kib(agent.pid);
	/* Moved into the subtree as root, then the user's own. */
	const char *loop = h_str(
		"cd '%s' && i=0 && while [ $i -lt %d ]; do "
		"mkdir c$i && sh -c 'echo $$ > c'$i'/cgroup.procs && : > /dev/shm/%sf && rm /dev/shm/%sf' && rmdir c$i || exit 1; "
		"i=$((i + 1)); done",
		churn_root, CHURNED, churn_prefix, churn_prefix);
	const char *churn[] = {"/bin/sh", "-c", "echo $$ > \"$0/cgroup.procs\" && exec setpriv --reuid=\"$1\" --regid=\"$2\" --clear-groups /bin/sh -c \"$3\"",
			       churn_root, h_str("%u", (unsigned)u->uid), h_str("%u", (unsigned)u->gid), loop, NULL};
	churner = h_spawn(churn, NULL);
	cr_assert_eq(h_finish(&churner, &err), 0, "the churn failed: %s", err);
	/* Bounded: the review cycles that see the files freed and the cgroups gone. */
	for (long until = h_now_ms() + 30000; h_now_ms() < until; usleep(200 * 1000))
		if ((series = series_in(churn_metrics)) >= 0 && series <= 50)
			break;
	rss1 = rss_kib(agent.pid);
	kill(agent.pid, SIGINT);
	h_read_all(&agent, 20000);
	h_finish(&agent, NULL);
	cr_expect_leq(series, 50, "%d workload series after %d cgroups were churned and removed", series, CHURNED);
	cr_expect_gt(series, -1, "no metrics file");
	/* Under AddressSanitizer freed memory is held in quarantine: no measure. */
	if (!getenv("SG_SANITIZED"))
		cr_expect_lt(rss1 - rss0, 8 * 1024, "the node agent grew %ld KiB over %d churned cgroups", rss1 - rss0,
			     CHURNED);
}
