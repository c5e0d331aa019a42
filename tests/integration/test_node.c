/* shmguard audit in node mode (#19): a system-wide auditor follows every
 * pod's /dev/shm, found as the pod appears and forgotten when it goes.  The
 * "pods" are made of namespaces, as a container runtime makes them: mount,
 * pid and ipc namespaces of their own, each with its own tmpfs on /dev/shm,
 * running leakgen (a known leak per aborted request).  The truth is the
 * st_blocks of the pod's files, read through its root. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "harness.h"

#define PATTERNS "{req}_{int}_{int};shm_{req}_{int}_{int}_lockfile.lock"
#define CGROOT "/sys/fs/cgroup/unified"

static const char *prefix, *abort_dir, *shared_dir, *json_path, *pod_aborts;
/* The pods' own cgroups, removed at the end. */
static const char *cgroups[8];
static size_t ncgroups;

static void setup(void)
{
	h_setup("node", &prefix, &abort_dir, NULL);
	/* On /tmp: a pod's own /dev/shm hides the host's, not /tmp. */
	shared_dir = h_str("/tmp/%sshared", prefix);
	json_path = h_str("/tmp/%sreport.json", prefix);
	/* The pods' own abort directories: this test's name, so that the pods
	 * of a test running beside it abort nothing here. */
	pod_aborts = h_str("%saborts", prefix);
	cr_assert_eq(mkdir(abort_dir, 0755), 0);
	cr_assert_eq(mkdir(shared_dir, 0755), 0);
}

static void teardown(void)
{
	h_cleanup(prefix); /* the pods too: their tmpfs goes with their last process */
	for (size_t i = 0; i < ncgroups; i++)
		for (int tries = 0; rmdir(cgroups[i]) < 0 && errno == EBUSY && tries < 50; tries++)
			usleep(20000); /* its last process is still exiting */
	ncgroups = 0;
	unlink(json_path);
	h_run((const char *const[]){"/bin/rm", "-rf", h_str("/tmp/%sagent", prefix), h_str("/tmp/%smetrics", prefix), NULL},
	      NULL, NULL);
	h_run((const char *const[]){"/bin/rm", "-rf", shared_dir, NULL}, NULL, NULL);
	/* The shimmed pods' own abort directories (/tmp/PREFIXNAMEshim-aborts). */
	h_run((const char *const[]){"/bin/sh", "-c", h_str("rm -rf /tmp/%s*shim-aborts", prefix), NULL}, NULL, NULL);
}

TestSuite(node, .init = setup, .fini = teardown, .timeout = 120);

enum { REQUESTS = 6, ABORT_EVERY = 2, ABORTS = REQUESTS / ABORT_EVERY };

/* The system-wide auditor, tracing once its first progress line is out. */
static struct h_proc start_auditor(const char *markers, const char *o1, const char *o2, const char *o3)
{
	const char *argv[] = {h_bin("SG_CLI"), "audit", "--abort-dir", markers, "--patterns", PATTERNS, "--grace", "0.3",
			      "--json", json_path, "--lib", h_bin("SG_SHIM"), "--interval", "0.1", "--root-abort-dir", pod_aborts,
			      o1, o2, o3, NULL};
	struct h_proc p = h_spawn(argv, NULL);
	char *err;

	if (!h_wait_stderr(&p, "aborts 0", 20000)) {
		h_finish(&p, &err);
		cr_assert_fail("the auditor did not start: %s", err);
	}
	return p;
}

/* Ends the auditor as an operator does (SIGINT): its exit status, its
 * report (stdout) in *out if not NULL. */
static int stop_auditor(struct h_proc *p, char **err, char **out)
{
	char *text;

	kill(p->pid, SIGINT);
	text = h_read_all(p, 20000);
	if (out)
		*out = text;
	return h_finish(p, err);
}

struct pod {
	struct h_proc proc; /* unshare, which waits for the pod's first process */
	pid_t init;         /* leakgen, pid 1 of the pod */
	uint32_t kdev;      /* its /dev/shm */
	const char *name;   /* its requests' prefix */
	const char *cgroup; /* its own cgroup (its workload), or NULL: the test's */
};


/* The first child of pid. */
static pid_t child_of(pid_t pid)
{
	char buf[64] = "";
	FILE *f;

	for (int tries = 0; tries < 200; tries++) {
		if ((f = fopen(h_str("/proc/%d/task/%d/children", (int)pid, (int)pid), "r"))) {
			char *got = fgets(buf, sizeof(buf), f);
			fclose(f);
			if (got && atoi(buf) > 0)
				return atoi(buf);
		}
		usleep(10000);
	}
	cr_assert_fail("no child of %d", (int)pid);
	return -1;
}

/* What a pod's processes have in their environment (NULL: nothing). */
struct pod_env {
	const char *patterns;  /* SHMGUARD_PATTERNS */
	const char *abort_dir; /* SHMGUARD_ABORT_DIR, made in the pod; its markers go there */
};

/* A pod running leakgen (aborts: every ABORT_EVERY-th request, or none),
 * its markers in its own abort directory (--root-abort-dir) or in markers; under the
 * shim when shimmed (whose own abort directory is elsewhere: the files
 * stay, as with a shim that missed the marker).  held: its namespaces are
 * made, and it mounts its tmpfs only once it reads a line (pod_go).
 * env: the pod has a cgroup of its own (its workload) and that
 * environment, its shim no --patterns.  pod_ready() waits for it. */
static struct pod pod_spawn_env(const char *tag, bool aborts, const char *markers, bool shimmed, bool held,
				const struct pod_env *env)
{
	struct pod p = {.name = h_str("%s%s", prefix, tag)};
	const char *own_aborts = env && env->abort_dir ? env->abort_dir : h_str("/dev/shm/%s", pod_aborts);
	const char *script = h_str("%smount -t tmpfs -o size=16m tmpfs /dev/shm && mkdir -m 0755 %s && %sexec \"$@\"",
				   held ? "read go && " : "", own_aborts,
				   env ? h_str("echo 0 > %s/%s%s/cgroup.procs && ", CGROOT, prefix, tag) : "");
	const char *argv[40] = {"/usr/bin/unshare", "--mount", "--pid", "--ipc", "--fork", "--propagation", "private",
				"/bin/sh", "-c", script, "pod"};
	size_t n = 11;

	if (shimmed) {
		argv[n++] = h_bin("SG_CLI");
		argv[n++] = "run";
		argv[n++] = "--lib";
		argv[n++] = h_bin("SG_SHIM");
		if (!env) { /* with env, the shim's patterns and abort directory are the environment's alone */
			argv[n++] = "--patterns";
			argv[n++] = PATTERNS;
			argv[n++] = "--abort-dir";
			argv[n++] = h_str("/tmp/%sshim-aborts", p.name);
		}
		argv[n++] = "--";
	}
	const char *leakgen[] = {h_bin("SG_LEAKGEN"), "--prefix", p.name, "--requests", h_str("%d", REQUESTS),
				 "--abort-every", h_str("%d", aborts ? ABORT_EVERY : REQUESTS + 1), "--abort-dir",
				 markers ? markers : own_aborts, "--wait-stdin"};
	for (size_t i = 0; i < sizeof(leakgen) / sizeof(*leakgen); i++)
		argv[n++] = leakgen[i];
	argv[n] = NULL;
	const char *vars[3] = {NULL};
	if (env) {
		size_t nvars = 0;
		p.cgroup = h_str("/%s%s", prefix, tag);
		cr_assert_eq(mkdir(h_str(CGROOT "%s", p.cgroup), 0755), 0, "%s", strerror(errno));
		cgroups[ncgroups++] = h_str(CGROOT "%s", p.cgroup);
		if (env->patterns)
			vars[nvars++] = h_str("SHMGUARD_PATTERNS=%s", env->patterns);
		if (env->abort_dir)
			vars[nvars++] = h_str("SHMGUARD_ABORT_DIR=%s", env->abort_dir);
	}
	p.proc = h_spawn(argv, vars);
	return p;
}

static struct pod pod_spawn(const char *tag, bool aborts, const char *markers, bool shimmed, bool held)
{
	return pod_spawn_env(tag, aborts, markers, shimmed, held, NULL);
}

/* Once leakgen is done (its files made, its aborted requests' files left):
 * its pid and its tmpfs. */
static void pod_ready(struct pod *p)
{
	char *line = h_read_line(&p->proc, 30000);
	struct stat st;

	if (!line || strcmp(line, "done") != 0) {
		char *err;
		h_finish(&p->proc, &err);
		cr_assert_fail("the pod did not run: %s", err);
	}
	p->init = child_of(p->proc.pid); /* shmguard run execs its command */
	cr_assert_eq(stat(h_str("/proc/%d/root/dev/shm", (int)p->init), &st), 0);
	p->kdev = (uint32_t)(major(st.st_dev) << 20 | minor(st.st_dev));
	cr_assert_neq(p->kdev, 0);
}

/* A held pod goes on: it mounts its tmpfs and runs. */
static void pod_go(struct pod *p)
{
	cr_assert_eq(write(p->proc.in, "go\n", 3), 3);
}

static struct pod pod_start(const char *tag, bool aborts, const char *markers, bool shimmed)
{
	struct pod p = pod_spawn(tag, aborts, markers, shimmed, false);

	pod_ready(&p);
	return p;
}

static void pod_stop(struct pod *p)
{
	cr_expect_eq(h_finish(&p->proc, NULL), 0, "pod %s", p->name);
}

static uint64_t blocks_of(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 ? (uint64_t)st.st_blocks * 512 : 0;
}

/* What the pod's aborted requests left, from st_blocks in its /dev/shm. */
static uint64_t pod_truth(const struct pod *p)
{
	const char *shm = h_str("/proc/%d/root/dev/shm", (int)p->init);
	uint64_t truth = 0;

	for (int i = ABORT_EVERY - 1; i < REQUESTS; i += ABORT_EVERY)
		truth += blocks_of(h_str("%s/%s%d_0_0", shm, p->name, i)) + blocks_of(h_str("%s/%s%d_0_1", shm, p->name, i)) +
			 blocks_of(h_str("%s/%s%d_0_2", shm, p->name, i)) +
			 blocks_of(h_str("%s/shm_%s%d_0_0_lockfile.lock", shm, p->name, i));
	return truth;
}

/* Descriptors of pid on device kdev (its directory, held while followed). */
static int fds_on(pid_t pid, uint32_t kdev)
{
	DIR *d = opendir(h_str("/proc/%d/fd", (int)pid));
	struct dirent *e;
	struct stat st;
	int n = 0;

	while (d && (e = readdir(d)))
		if (e->d_name[0] != '.' && stat(h_str("/proc/%d/fd/%s", (int)pid, e->d_name), &st) == 0 &&
		    (uint32_t)(major(st.st_dev) << 20 | minor(st.st_dev)) == kdev)
			n++;
	if (d)
		closedir(d);
	return n;
}

/* Whether pid's descriptors on kdev come to be (want) or go (!want) within 10 s. */
static bool wait_fds(pid_t pid, uint32_t kdev, bool want)
{
	for (long end = h_now_ms() + 10000; h_now_ms() < end; usleep(20000))
		if ((fds_on(pid, kdev) > 0) == want)
			return true;
	return false;
}

static json_t *report(void)
{
	return h_json_load(json_path);
}

/* Pods made after the auditor started are found and measured exactly; a
 * pod that leaks nothing neither adds aborts nor dilutes the figure (its
 * requests have the same IDs' shapes, in another /dev/shm). */
Test(node, pods_made_during_the_run_are_measured_exactly_and_a_clean_one_adds_nothing)
{
	struct h_proc a;
	struct pod leaky, clean;
	uint64_t truth;
	char *err;

	h_need_bpf(teardown);
	a = start_auditor(abort_dir, "--max-kib-per-abort", "100000", NULL);
	leaky = pod_start("leaky", true, NULL, false);
	clean = pod_start("clean", false, NULL, false);
	h_wait_measured(&a, ABORTS);
	/* The clean pod's files tell of its device too, but a scan for it may
	 * be paced after the leaky pod's measurement: wait until both are held. */
	cr_assert(wait_fds(a.pid, leaky.kdev, true) && wait_fds(a.pid, clean.kdev, true), "a pod was never followed");
	truth = pod_truth(&leaky);
	cr_assert_gt(truth, 0);
	cr_assert_eq(stop_auditor(&a, &err, NULL), 0, "a budget of 100000 KiB passes: %s", err);
	json_t *r = report();
	cr_expect_eq(h_jint(r, "aborts"), ABORTS, "the leaky pod's aborts, from its own abort directory: %s", err);
	cr_expect_eq(h_jint(r, "leaked_bytes"), (long long)truth, "truth %llu", (unsigned long long)truth);
	cr_expect_eq(h_jint(r, "leaked_files"), ABORTS * 4);
	cr_expect_eq(h_jint(r, "unfollowed_files"), 0);
	json_t *roots = json_object_get(r, "roots");
	cr_expect(json_is_true(json_object_get(roots, "node_mode")));
	cr_expect_geq(json_integer_value(json_object_get(roots, "found_late")), 2, "both pods found during the run");
	json_decref(r);
	pod_stop(&leaky);
	pod_stop(&clean);
}

/* A pod's first file, made before its /dev/shm can be found: the tmpfs is
 * mounted elsewhere first and moved to /dev/shm after (as a runtime may
 * set a sandbox up).  The kernel side sends the creations of a new tmpfs's
 * first seconds, so the root's catch-up knows who made the file: its
 * creator is the pod's program, not unknown. */
Test(node, a_file_made_before_its_root_was_found_keeps_its_creator)
{
	const char *req = h_str("%searly", prefix), *name = h_str("%s_0_0", req);
	const char *script = h_str("mount -t tmpfs -o size=16m tmpfs /mnt && \"$0\" open /mnt/%s 8192 && "
				   "mount --move /mnt /dev/shm && mkdir -m 0755 /dev/shm/%s && echo ready && exec sleep 60",
				   name, pod_aborts);
	const char *argv[] = {"/usr/bin/unshare", "--mount", "--pid", "--ipc", "--fork", "--propagation", "private",
			      "/bin/sh", "-c", script, h_bin("SG_SHMTOOL"), NULL};
	struct h_proc a, pod;
	struct stat st;
	char *err;

	h_need_bpf(teardown);
	a = start_auditor(abort_dir, NULL, NULL, NULL);
	pod = h_spawn(argv, NULL);
	char *line = h_read_line(&pod, 30000);
	cr_assert(line && strcmp(line, "ready") == 0, "the pod did not start");
	pid_t init = child_of(pod.pid);
	cr_assert_eq(stat(h_str("/proc/%d/root/dev/shm", (int)init), &st), 0);
	cr_assert(wait_fds(a.pid, (uint32_t)(major(st.st_dev) << 20 | minor(st.st_dev)), true), "the pod never followed");
	int fd = open(h_str("/proc/%d/root/dev/shm/%s/%s", (int)init, pod_aborts, req), O_CREAT | O_WRONLY | O_EXCL, 0644);
	cr_assert_geq(fd, 0, "%s", strerror(errno));
	close(fd);
	h_wait_measured(&a, 1);
	cr_assert_eq(stop_auditor(&a, &err, NULL), 0, "%s", err);
	json_t *r = report(), *ab = json_array_get(json_object_get(r, "aborted_requests"), 0);
	json_t *left = json_array_get(json_object_get(ab, "leftover_files"), 0);
	cr_expect_eq(h_jint(r, "leaked_bytes"), 8192, "the file made before its root was found");
	cr_expect_str_eq(json_string_value(json_object_get(left, "creator_command")) ?: "(none)", "shmtool",
			 "its creator was lost");
	json_decref(r);
	kill(pod.pid, SIGKILL);
	kill(init, SIGKILL);
	h_finish(&pod, NULL);
}

/* A pod's root is held while the pod lives, and let go when it goes: a
 * descriptor kept would keep its tmpfs, and its RAM, for the run. */
Test(node, a_deleted_pods_root_is_forgotten_and_its_tmpfs_freed)
{
	struct h_proc a;
	struct pod p;
	char *err;

	h_need_bpf(teardown);
	a = start_auditor(abort_dir, NULL, NULL, NULL);
	p = pod_start("gone", true, NULL, false);
	cr_assert(wait_fds(a.pid, p.kdev, true), "the auditor never followed the pod's /dev/shm");
	h_wait_measured(&a, ABORTS);
	pod_stop(&p);
	cr_expect(wait_fds(a.pid, p.kdev, false), "the auditor still holds the deleted pod's /dev/shm");
	cr_assert_eq(stop_auditor(&a, &err, NULL), 0, "%s", err);
	json_t *r = report();
	cr_expect_geq(json_integer_value(json_object_get(json_object_get(r, "roots"), "forgotten")), 1);
	json_decref(r);
}

/* Once the auditor a (with a budget of 1 KiB/abort) has measured p's
 * aborts: they are p's whole leak, and the gate fails on them. */
static void expect_the_pods_leak_fails(struct h_proc *a, const struct pod *p)
{
	uint64_t truth;
	char *err;

	h_wait_measured(a, ABORTS);
	truth = pod_truth(p);
	cr_assert_gt(truth, (uint64_t)ABORTS * 1024);
	cr_expect_eq(stop_auditor(a, &err, NULL), 1, "over a budget of 1 KiB/abort: %s", err);
	json_t *r = report();
	cr_expect_eq(h_jint(r, "aborts"), ABORTS);
	cr_expect_eq(h_jint(r, "leaked_bytes"), (long long)truth, "truth %llu", (unsigned long long)truth);
	json_decref(r);
}

/* The late pod: its markers go to a directory it shares with the
 * auditor, its files to its own /dev/shm, made after the auditor started.
 * Every abort is counted; its bytes must be too, or the figure is diluted
 * (the old auditor said 0 KiB/abort, and a gate passed). */
Test(node, a_late_pod_with_a_shared_abort_dir_is_not_diluted)
{
	struct h_proc a;
	struct pod p;

	h_need_bpf(teardown);
	a = start_auditor(shared_dir, "--max-kib-per-abort", "1", NULL);
	p = pod_start("late", true, shared_dir, false);
	expect_the_pods_leak_fails(&a, &p);
	pod_stop(&p);
}

/* A pod whose tmpfs is mounted in a namespace the auditor has read already
 * (another pod appeared while this one was being set up): its first file
 * finds no namespace new, and only the next read of every namespace finds
 * its tmpfs.  Its aborts wait for that read rather than count its files as
 * none, and the gate fails on them as it must. */
Test(node, a_pod_mounted_in_a_namespace_read_before_is_not_diluted)
{
	struct pod held, other;
	struct h_proc a;

	h_need_bpf(teardown);
	a = start_auditor(shared_dir, "--max-kib-per-abort", "1", NULL);
	held = pod_spawn("held", true, shared_dir, false, true);
	child_of(held.proc.pid); /* its namespaces are made; its tmpfs is not mounted yet */
	other = pod_start("other", false, shared_dir, false);
	cr_assert(wait_fds(a.pid, other.kdev, true), "the other pod was not followed");
	pod_go(&held);
	pod_ready(&held);
	expect_the_pods_leak_fails(&a, &held);
	pod_stop(&held);
	pod_stop(&other);
}

/* Following only its own namespace (the old behaviour), the auditor cannot
 * see the late pod's files; the shim's tags say where they are, so they are
 * counted as not followed and the gate fails instead of passing on a
 * diluted figure. */
Test(node, files_on_a_filesystem_not_followed_fail_the_gate)
{
	struct h_proc a;
	struct pod p;
	char *err, *out;

	h_need_bpf(teardown);
	a = start_auditor(shared_dir, "--max-kib-per-abort", "100000", "--own-namespace");
	p = pod_start("unseen", true, shared_dir, true);
	h_wait_measured(&a, ABORTS);
	cr_expect_eq(stop_auditor(&a, &err, &out), 1, "the gate must fail: %s", err);
	cr_expect(strstr(out, "NOT FOLLOWED"), "said in the report: %s", out);
	json_t *r = report();
	cr_expect_eq(h_jint(r, "aborts"), ABORTS);
	cr_expect_eq(h_jint(r, "leaked_bytes"), 0, "nothing it could see");
	cr_expect_eq(h_jint(r, "unfollowed_files"), ABORTS * 4, "each aborted request's four tagged files");
	cr_expect_str_eq(json_string_value(json_object_get(r, "verdict")), "fail");
	json_decref(r);
	pod_stop(&p);
}

/* The node agent as the DaemonSet runs it: the manifest's own arguments
 * (contrib/kubernetes/shmguard-node.yaml, read there, its ConfigMap's
 * patterns file written where they name it), in a mount namespace of its
 * own whose /dev/shm holds the node's abort directory as its
 * initContainer makes it.  What the test adds: its metrics on a port of
 * its own, its reclaim a dry run (the machine's files are not its), the
 * reports, the test's shim and, with root_abort_dir, its pods' abort
 * directory's name (the other tests' agents then never follow this
 * test's pods' aborts, nor this one theirs).  node_patterns: the
 * ConfigMap's file replaced by this text (an operator's that knows none of
 * the pods' shapes), or NULL: as shipped. */
static struct h_proc start_shipped_agent(const char *node_patterns, const char *metrics, bool root_abort_dir)
{
	const char *dir = h_str("/tmp/%sagent", prefix), *argv[64] = {"/usr/bin/unshare", "--mount", "--propagation",
								       "private", "/bin/sh", "-c",
								       "mount -t tmpfs -o size=1m tmpfs /dev/shm && "
								       "\"$0\" abort --init-dir /dev/shm/shmguard-abort && "
								       "exec \"$0\" \"$@\"",
								       h_bin("SG_CLI")};
	size_t n = 8;
	char *out, *err, *line, *save = NULL;

	cr_assert_eq(h_output((const char *const[]){"/usr/bin/python3", h_bin("SG_KUBE_LOCAL"), "--agent-args",
						     h_str("%s/kubernetes/shmguard-node.yaml", h_bin("SG_CONTRIB")), dir, NULL},
			      NULL, &out, &err), 0, "%s", err);
	cr_assert(strstr(out, "--patterns-file"), "the DaemonSet names the node's patterns: %s", out);
	if (node_patterns) {
		FILE *f = fopen(h_str("%s/configmap-patterns/patterns.conf", dir), "w");
		cr_assert(f && fputs(node_patterns, f) >= 0 && fclose(f) == 0);
	}
	for (line = strtok_r(out, "\n", &save); line && n < 40; line = strtok_r(NULL, "\n", &save)) {
		argv[n] = strcmp(argv[n - 1], "--listen") == 0 ? "127.0.0.1:0" : line;
		n++;
	}
	cr_assert_str_eq(argv[8], "audit");
	const char *more[] = {"--reclaim-dry-run", "--json", json_path, "--metrics-file", metrics, "--lib", h_bin("SG_SHIM"),
			      "--interval", "0.1", "--grace", "0.3", "--root-abort-dir", pod_aborts};
	for (size_t i = 0; i < sizeof(more) / sizeof(*more) - (root_abort_dir ? 0 : 2); i++)
		argv[n++] = more[i];
	argv[n] = NULL;
	/* --record-creators' store: this test's, not the host's /run/shmguard. */
	struct h_proc p = h_spawn(argv, (const char *const[]){"SHMGUARD_PATTERNS=", "SHMGUARD_ABORT_DIR=",
							     h_str("SHMGUARD_STORE_DIR=%s/creators", dir), NULL});
	if (!h_wait_stderr(&p, "aborts 0", 30000)) {
		h_finish(&p, &err);
		cr_assert_fail("the agent did not start: %s", err);
	}
	return p;
}

/* The workload of pod p (its own cgroup) in report r. */
static json_t *workload_of(json_t *r, const struct pod *p)
{
	json_t *ws = json_object_get(r, "workloads"), *w;
	size_t i;

	json_array_foreach(ws, i, w) {
		const char *cgroup = json_string_value(json_object_get(w, "cgroup"));
		if (cgroup && strcmp(cgroup, p->cgroup) == 0)
			return w;
	}
	cr_assert_fail("no workload of the pod %s in the report", p->name);
	return NULL;
}

/* The series name{...id="CGROUP"...} of the metrics file (as the run
 * left it), or -1. */
static long long metric_of(const char *metrics, const char *name, const char *cgroup)
{
	const char *want = h_str("id=\"%s\"", cgroup);
	char line[4096];
	long long v = -1;
	FILE *f = fopen(metrics, "r");

	cr_assert(f, "no metrics file %s", metrics);
	while (v < 0 && fgets(line, sizeof(line), f))
		if (strncmp(line, name, strlen(name)) == 0 && line[strlen(name)] == '{' && strstr(line, want))
			v = atoll(strrchr(line, ' ') + 1);
	fclose(f);
	return v;
}

/* Issue #29: a pod without the shim, under the agent as shipped.  The
 * node's patterns (the ConfigMap) hold leakgen's shapes, vllm-omni's chunk
 * keys and lock files: the pod's leak is exact, with no flag for it. */
Test(node, the_shipped_agent_measures_an_unshimmed_pod_by_the_node_patterns)
{
	const char *metrics = h_str("/tmp/%smetrics", prefix);
	struct h_proc a;
	struct pod p;
	char *err;

	h_need_bpf(teardown);
	a = start_shipped_agent(NULL, metrics, true);
	p = pod_spawn_env("plain", true, NULL, false, false, &(struct pod_env){0});
	pod_ready(&p);
	h_wait_measured(&a, ABORTS);
	uint64_t truth = pod_truth(&p);
	cr_assert_gt(truth, 0);
	cr_assert_eq(stop_auditor(&a, &err, NULL), 0, "no budget, every figure known: %s", err);
	json_t *r = report(), *w = workload_of(r, &p);
	cr_expect_eq(h_jint(w, "aborts"), ABORTS, "the pod's aborts, from its own abort directory");
	cr_expect_eq(h_jint(w, "leaked_bytes"), (long long)truth, "truth %llu", (unsigned long long)truth);
	cr_expect(json_is_null(json_object_get(w, "leaked_unknown_reason")));
	cr_expect_eq(h_jint(r, "aborts_unattributed"), 0);
	cr_expect_eq(metric_of(metrics, "shmguard_workload_leaked_bytes_total", p.cgroup), (long long)truth);
	json_decref(r);
	pod_stop(&p);
}

/* The same pod, under an operator's node patterns that know none of its
 * shapes: its aborts cannot be tied to its files.  Its figure is null
 * with the reason, never 0; a metric counts them; the run fails. */
Test(node, a_pod_whose_files_no_pattern_names_reads_unknown_and_fails)
{
	const char *metrics = h_str("/tmp/%smetrics", prefix);
	struct h_proc a;
	struct pod p;
	char *err, *out;

	h_need_bpf(teardown);
	a = start_shipped_agent("# the operator's servers\nother_{req}.seg\n", metrics, true);
	p = pod_spawn_env("blind", true, NULL, false, false, &(struct pod_env){0});
	pod_ready(&p);
	h_wait_measured(&a, ABORTS);
	cr_expect_eq(stop_auditor(&a, &err, &out), 1, "a leak not seen is no pass: %s", err);
	cr_expect_eq(metric_of(metrics, "shmguard_workload_aborts_unattributed_total", p.cgroup), ABORTS,
		     "the metric counts the pod's unattributed aborts");
	cr_expect(strstr(out, "leaked UNKNOWN:"), "said in the report: %s", out);
	json_t *r = report(), *w = workload_of(r, &p);
	cr_expect_eq(h_jint(w, "aborts_unattributed"), ABORTS);
	cr_expect(json_is_null(json_object_get(w, "leaked_bytes")), "null, never 0");
	cr_expect(json_is_null(json_object_get(w, "kib_per_abort")));
	cr_expect(json_is_string(json_object_get(w, "leaked_unknown_reason")));
	cr_expect_str_eq(json_string_value(json_object_get(w, "verdict")), "fail");
	cr_expect_eq(h_jint(r, "aborts_unattributed"), ABORTS);
	cr_expect_str_eq(json_string_value(json_object_get(r, "verdict")), "fail");
	cr_expect(strstr(json_string_value(json_object_get(r, "verdict_reason")) ?: "", "leak unknown"),
		  "the reason: %s", json_string_value(json_object_get(r, "verdict_reason")));
	json_decref(r);
	pod_stop(&p);
}

/* Pods whose patterns are only in their environment (SHMGUARD_PATTERNS),
 * the node's knowing none of their shapes: one without the shim (its
 * image's loader refused it, say), and one under it, their markers in the
 * abort directory their environment names (SHMGUARD_ABORT_DIR).  Both are
 * measured exactly (the shim's pod leaks nothing: its shim swept).
 * Beside them, hostile pods: one whose SHMGUARD_PATTERNS is 100 KiB, one
 * whose value does not parse, one of raw bytes (not UTF-8, a terminal's
 * escape).  Each is refused once with the reason, escaped; none stalls the
 * agent nor touches the others' figures. */
Test(node, pods_patterns_come_from_their_environment_and_a_hostile_one_is_refused)
{
	const char *metrics = h_str("/tmp/%smetrics", prefix);
	char *huge = calloc(1, 100 << 10), *err;
	struct h_proc a;
	struct pod plain, shimmed, big, bad, bytes;

	h_need_bpf(teardown);
	memset(huge, 'x', (100 << 10) - 1);
	/* Each pod's abort directory is its environment's: no --root-abort-dir. */
	a = start_shipped_agent("other_{req}.seg\n", metrics, false);
	big = pod_spawn_env("big", false, NULL, false, false, &(struct pod_env){.patterns = huge});
	bad = pod_spawn_env("bad", false, NULL, false, false, &(struct pod_env){.patterns = "{req}_{oops}"});
	bytes = pod_spawn_env("bytes", false, NULL, false, false, &(struct pod_env){.patterns = "{req}_\xff\x1b[2J"});
	/* Its markers where its environment says, not where the agent looks
	 * by default (--root-abort-dir). */
	plain = pod_spawn_env("envplain", true, NULL, false, false,
			      &(struct pod_env){.patterns = PATTERNS, .abort_dir = h_str("/dev/shm/%sown", prefix)});
	shimmed = pod_spawn_env("envshim", true, NULL, true, false,
				&(struct pod_env){.patterns = PATTERNS, .abort_dir = h_str("/dev/shm/%sshimown", prefix)});
	pod_ready(&big);
	pod_ready(&bad);
	pod_ready(&bytes);
	pod_ready(&plain);
	pod_ready(&shimmed);
	h_wait_measured(&a, 2 * ABORTS);
	uint64_t truth_plain = pod_truth(&plain), truth_shimmed = pod_truth(&shimmed);
	cr_assert_eq(stop_auditor(&a, &err, NULL), 0, "every figure known: %s", err);
	json_t *r = report();
	json_t *wp = workload_of(r, &plain), *ws = workload_of(r, &shimmed);
	cr_expect_eq(h_jint(wp, "aborts"), ABORTS);
	cr_expect_eq(h_jint(wp, "leaked_bytes"), (long long)truth_plain, "truth %llu", (unsigned long long)truth_plain);
	/* Its aborts count for it only if its files were still there when the
	 * agent saw the marker (its shim may have swept them first). */
	cr_expect_eq(h_jint(ws, "leaked_bytes"), (long long)truth_shimmed, "truth %llu", (unsigned long long)truth_shimmed);
	cr_expect_eq(h_jint(ws, "aborts_unattributed"), 0);
	json_t *roots = json_object_get(r, "roots");
	cr_expect_geq(h_jint(roots, "pod_patterns_learnt"), 2, "the two pods' patterns, from their environment");
	cr_expect_eq(h_jint(roots, "pod_patterns_refused"), 3, "the hostile ones: %s", err);
	cr_expect(strstr(err, "is not printable UTF-8"), "the one of raw bytes said: %s", err);
	cr_expect(!strstr(err, "\x1b[2J"), "no raw escape reaches the terminal: %s", err);
	cr_expect(strstr(err, h_str("is longer than")), "the huge one said: %s", err);
	cr_expect(strstr(err, "does not parse"), "the malformed one said: %s", err);
	const char *first = strstr(err, "does not parse");
	cr_expect(first && !strstr(first + 1, "does not parse"), "said once: %s", err);
	json_decref(r);
	pod_stop(&plain);
	pod_stop(&shimmed);
	pod_stop(&big);
	pod_stop(&bad);
	pod_stop(&bytes);
	free(huge);
}
