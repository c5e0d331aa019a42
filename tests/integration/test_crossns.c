/* Creators in other pid namespaces, judged from the node (issue 19, section
 * 3).  The "pods" are made as a runtime makes them: new mount, pid and ipc
 * namespaces with their own /proc and a tmpfs of their own on /dev/shm (or
 * the tmpfs of a volume kept in a directory, bind-mounted there, as an
 * emptyDir survives its sandbox).  Their pid 1 is a shell that outlives the
 * creator, as a pause process does. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdarg.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "procstat.h"

static const char *prefix, *keep;

static void setup(void)
{
	prefix = h_prefix("xns");
	keep = h_str("/dev/shm/%skeep", prefix);
}

static void teardown(void)
{
	umount2(keep, MNT_DETACH);
	h_cleanup(prefix);
}

TestSuite(crossns, .init = setup, .fini = teardown, .timeout = 90);

static void need_root(void)
{
	if (geteuid() != 0) {
		cr_assert(!getenv("CI"), "needs root in CI");
		h_skip(teardown, "pods need root");
	}
}

struct pod {
	struct h_proc p;
	pid_t init;    /* its pid 1, as this namespace numbers it */
	pid_t creator; /* the creator, as this namespace numbers it (0: none) */
	const char *shm; /* its /dev/shm from here */
};

/* The only child of pid. */
static pid_t child_of(pid_t pid)
{
	char *path = h_str("/proc/%d/task/%d/children", (int)pid, (int)pid);
	FILE *f = fopen(path, "r");
	int child = 0;

	cr_assert(f, "%s: %s", path, strerror(errno));
	cr_assert_eq(fscanf(f, "%d", &child), 1, "no child of %d", (int)pid);
	fclose(f);
	return child;
}

/* A pod whose /dev/shm is a tmpfs of its own, or (volume) that directory's
 * filesystem; its creator (under the shim) makes name there and waits.
 * Without name, the pod only waits. */
static struct pod pod_start(const char *volume, const char *name)
{
	const char *shm = volume ? "mount --bind \"$SG_VOLUME\" /dev/shm" : "mount -t tmpfs -o size=4m tmpfs /dev/shm";
	const char *script = h_str("%s || exit 9; \"$0\" \"$@\"; exec cat >/dev/null", shm);
	const char *argv[] = {"/usr/bin/unshare", "--mount", "--pid", "--ipc", "--fork", "--mount-proc",
			      "--propagation", "private", "/bin/sh", "-c", script, h_bin("SG_SHMTOOL"),
			      name ? "open" : "wait", name ? h_str("/dev/shm/%s", name) : NULL, "4096", "wait", NULL};
	struct pod pod = {0};

	pod.p = h_start_ready(argv, h_shim_env("/dev/shm/shmguard-abort", "{req}_{int}_{int}",
					       h_str("SG_VOLUME=%s", volume ? volume : ""), NULL));
	pod.init = child_of(pod.p.pid); /* unshare's forked child: the shell */
	pod.creator = name ? child_of(pod.init) : 0;
	pod.shm = h_str("/proc/%d/root/dev/shm", (int)pod.init);
	return pod;
}

/* Kills the pod's creator; returns once its shell has reaped it. */
static void kill_creator(struct pod *pod)
{
	cr_assert_eq(kill(pod->creator, SIGKILL), 0);
	cr_assert(h_wait_gone(h_str("/proc/%d", (int)pod->creator), 5000), "the creator did not go");
}

static const char *in_pod(const struct pod *pod, const char *name)
{
	return h_str("%s/%s", pod->shm, name);
}

/* `shmguard ARGS...` (NULL-terminated, at most 10); its exit status. */
static int cli(char **out, char **err, ...)
{
	const char *argv[12] = {h_bin("SG_CLI")};
	size_t n = 1;
	va_list ap;

	va_start(ap, err);
	while (n < 11 && (argv[n] = va_arg(ap, const char *)))
		n++;
	va_end(ap);
	argv[n] = NULL;
	return h_output(argv, NULL, out, err);
}

/* The decision sweep's JSON made for path (in its pod's view) in the
 * mount namespace of pod, or NULL. */
static const char *decision_for(json_t *j, const struct pod *pod, const char *path)
{
	struct stat st;
	json_t *d;
	size_t i;

	cr_assert_eq(stat(h_str("/proc/%d/ns/mnt", (int)pod->init), &st), 0);
	json_array_foreach(json_object_get(j, "decisions"), i, d) {
		json_t *root = json_object_get(d, "root");
		if (json_is_object(root) && (uint64_t)json_integer_value(json_object_get(root, "mount_namespace")) ==
						    (uint64_t)st.st_ino &&
		    strcmp(json_string_value(json_object_get(d, "path")), path) == 0)
			return json_string_value(json_object_get(d, "decision"));
	}
	return NULL;
}

/* The ls --node --json entry of path in pod: its creator's state and proof. */
static void creator_in(const struct pod *pod, const char *path, const char **state, const char **proof)
{
	char *out;
	json_t *j, *f;
	struct stat st;
	size_t i;

	*state = *proof = "none";
	cr_assert_eq(stat(h_str("/proc/%d/ns/mnt", (int)pod->init), &st), 0);
	cr_assert_leq(cli(&out, NULL, "ls", "--node", "--json", NULL), 1, "%s", out);
	cr_assert((j = json_loads(out, 0, NULL)), "%s", out);
	json_array_foreach(json_object_get(j, "files"), i, f) {
		json_t *root = json_object_get(f, "root"), *tag = json_object_get(f, "tag");
		if (!json_is_object(root) || !json_is_object(tag) ||
		    (uint64_t)json_integer_value(json_object_get(root, "mount_namespace")) != (uint64_t)st.st_ino ||
		    strcmp(json_string_value(json_object_get(f, "path")), path) != 0)
			continue;
		*state = h_str("%s", json_string_value(json_object_get(tag, "creator_state")));
		*proof = h_str("%s", json_string_value(json_object_get(tag, "creator_proof")));
	}
	json_decref(j);
}

/* A live creator in one pod, a killed one in another, and a recreated
 * sandbox: the old pod's volume given to a new pod (a new pid namespace,
 * perhaps with the old one's inode number), whose new creator runs.  From
 * the node, the dead creators' files go and the live ones' stay. */
Test(crossns, a_node_sweep_reclaims_exactly_the_dead_creators_files_in_every_pod)
{
	const char *live = h_str("%slive_0_0", prefix), *killed = h_str("%skilled_0_0", prefix);
	const char *old = h_str("%sold_0_0", prefix), *new = h_str("%snew_0_0", prefix);
	const char *state, *proof;
	struct pod a, b, c1, c2;
	char *out, *err;
	json_t *j;
	int status;

	need_root();
	h_mount_root(keep, "tmpfs", "size=4m", teardown);
	a = pod_start(NULL, live);
	b = pod_start(NULL, killed);
	kill_creator(&b);
	c1 = pod_start(keep, old);
	kill_creator(&c1);
	h_finish(&c1.p, NULL); /* the old sandbox is gone; its volume is kept */
	cr_assert(h_exists(h_str("%s/%s", keep, old)));
	c2 = pod_start(keep, new);

	creator_in(&a, h_str("/dev/shm/%s", live), &state, &proof);
	cr_expect_str_eq(state, "alive");
	cr_expect_str_eq(proof, "namespace_scan");
	creator_in(&b, h_str("/dev/shm/%s", killed), &state, &proof);
	cr_expect_str_eq(state, "dead");
	cr_expect_str_eq(proof, "namespace_scan");

	/* The whole node, deciding only: every pod is found. */
	status = cli(&out, &err, "sweep", "--node", "--dead", "--ignore-unreadable", "--dry-run", "--json", NULL);
	cr_assert(status == 0 || (status == 1 && strstr(err, "mount namespaces could not be read")), "%d: %s%s",
		  status, out, err);
	cr_assert((j = json_loads(out, 0, NULL)), "%s", out);
	cr_expect_str_eq(decision_for(j, &b, h_str("/dev/shm/%s", killed)), "would remove", "%s", out);
	cr_expect_str_eq(decision_for(j, &c2, h_str("/dev/shm/%s", old)), "would remove", "%s", out);
	/* A live creator's file is no candidate: no decision at all. */
	cr_expect_null(decision_for(j, &a, h_str("/dev/shm/%s", live)), "%s", out);
	cr_expect_null(decision_for(j, &c2, h_str("/dev/shm/%s", new)), "%s", out);
	json_decref(j);
	cr_expect(h_exists(in_pod(&b, killed)), "a dry run removed a file");

	/* And for real, in these pods only (others' are none of this test's). */
	const char *pa = h_str("%d", (int)a.init), *pb = h_str("%d", (int)b.init), *pc = h_str("%d", (int)c2.init);
	status = cli(&out, &err, "sweep", "--dead", "--ignore-unreadable", "--pod", pa, "--pod", pb, "--pod", pc, NULL);
	cr_assert_eq(status, 0, "%s%s", out, err);
	cr_expect(h_exists(in_pod(&a, live)), "a live creator's file was removed: %s", out);
	cr_expect(h_exists(in_pod(&c2, new)), "the new sandbox's file was removed: %s", out);
	cr_expect(!h_exists(in_pod(&b, killed)), "a dead creator's file was kept: %s", out);
	cr_expect(!h_exists(in_pod(&c2, old)), "the old sandbox's file was kept: %s", out);
	struct stat bns;
	cr_assert_eq(stat(h_str("/proc/%d/ns/mnt", (int)b.init), &bns), 0);
	cr_expect(strstr(out, h_str(" mnt:%llu]/dev/shm/%s", (unsigned long long)bns.st_ino, killed)),
		  "the pod is not named: %s", out);

	cr_assert_eq(h_finish(&a.p, NULL), 0);
	h_finish(&b.p, NULL);
	cr_assert_eq(h_finish(&c2.p, NULL), 0);
}

/* A journal claiming name for the creator (pidns, pid, start), as a creator
 * of any namespace records itself: what a recreated sandbox whose namespace
 * got an old inode number would show. */
static void plant(const char *dir, const char *name, uint64_t pidns, pid_t pid, uint64_t start)
{
	h_plant_journal(dir, name, h_str("%sreq", prefix), pidns, pid, start);
}

static uint64_t pidns_of(pid_t pid)
{
	struct stat st;

	cr_assert_eq(stat(h_str("/proc/%d/ns/pid", (int)pid), &st), 0);
	return (uint64_t)st.st_ino;
}

/* Inode reuse cannot be forced, but what it would show can: a record whose
 * namespace is a live namespace's inode.  With a start time that no process
 * of it has (an older sandbox's creator), it is dead; with its pid 1's, it
 * runs.  A creator of the node's own namespace seen from inside the pod is
 * unknown (the pod cannot see the node's processes), and kept. */
Test(crossns, a_reused_namespace_inode_neither_revives_nor_kills)
{
	const char *gone = h_str("%sgone_0_0", prefix), *runs = h_str("%sruns_0_0", prefix);
	const char *host = h_str("%shost_0_0", prefix);
	uint64_t ns, start, host_start;
	const char *state, *proof;
	pid_t dead;
	struct pod a;
	char *out, *err;

	need_root();
	a = pod_start(NULL, NULL);
	ns = pidns_of(a.init);
	cr_assert_eq(sg_proc_start_ticks(a.init, &start), 0);
	plant(a.shm, gone, ns, 1, start + 1000000);
	plant(a.shm, runs, ns, 1, start);
	/* A node process that is gone by now, as its own namespace numbers it. */
	dead = fork();
	if (dead == 0)
		_exit(0);
	cr_assert_eq(sg_proc_start_ticks(dead, &host_start), 0);
	cr_assert_eq(waitpid(dead, NULL, 0), dead);
	plant(a.shm, host, pidns_of(getpid()), dead, host_start);

	creator_in(&a, h_str("/dev/shm/%s", gone), &state, &proof);
	cr_expect_str_eq(state, "dead");
	creator_in(&a, h_str("/dev/shm/%s", runs), &state, &proof);
	cr_expect_str_eq(state, "alive");
	cr_expect_str_eq(proof, "namespace_scan");

	/* Inside the pod, with its own /proc: the node's creator is unknown. */
	const char *target = h_str("%d", (int)a.init);
	const char *inside[] = {"/usr/bin/nsenter", "-t", target, "-m", "-p", "--", h_bin("SG_CLI"), "sweep", "--dead",
				"--ignore-unreadable", NULL};
	cr_assert_eq(h_output(inside, NULL, &out, &err), 0, "%s%s", out, err);
	cr_expect(h_exists(in_pod(&a, host)), "the pod judged the node's creator: %s", out);
	cr_expect(strstr(out, "which this one may not see whole"), "%s", out);
	/* Its own namespace it judges by pid: its pid 1 started at another time. */
	cr_expect(h_exists(in_pod(&a, runs)), "%s", out);
	cr_expect(!h_exists(in_pod(&a, gone)), "%s", out);

	/* From the node: the node's dead creator goes too, the live one stays. */
	cr_assert_eq(cli(&out, &err, "sweep", "--dead", "--ignore-unreadable", "--pod", target, NULL), 0, "%s%s", out,
		     err);
	cr_expect(!h_exists(in_pod(&a, host)), "%s", out);
	cr_expect(h_exists(in_pod(&a, runs)), "a running creator's file was removed: %s", out);
	cr_assert_eq(h_finish(&a.p, NULL), 0);
}

/* The node agent: `audit --reclaim-dead` passes over every pod's /dev/shm
 * at its start and on its schedule.  Dry, so that other pods of this
 * machine lose nothing; what it decides is what sweep --node removes (the
 * same host/reclaim.c, tested above for real). */
Test(crossns, the_node_agent_decides_on_a_schedule_in_every_pod)
{
	const char *live = h_str("%slive_0_0", prefix), *killed = h_str("%skilled_0_0", prefix);
	const char *json = h_str("/dev/shm/%saudit.json", prefix), *abort_dir = h_str("/dev/shm/%sabort", prefix);
	struct pod a, b;
	struct stat bns;
	char *out, *err;
	json_t *r, *dr;

	need_root();
	h_need_bpf(teardown);
	cr_assert_eq(mkdir(abort_dir, 0755), 0);
	a = pod_start(NULL, live);
	b = pod_start(NULL, killed);
	kill_creator(&b);
	const char *argv[] = {h_bin("SG_CLI"), "audit", "--abort-dir", abort_dir, "--reclaim-dead", "1",
			      "--reclaim-dry-run", "--reclaim-ignore-unreadable", "--duration", "2.5", "--json", json,
			      NULL};
	cr_assert_eq(h_output(argv, NULL, &out, &err), 0, "%s%s", out, err);
	cr_assert_eq(stat(h_str("/proc/%d/ns/mnt", (int)b.init), &bns), 0);
	cr_expect(strstr(err, h_str("reclaim: would remove [pid %d mnt:%llu]/dev/shm/%s", (int)b.p.pid,
				    (unsigned long long)bns.st_ino, killed)) ||
			  strstr(err, h_str("reclaim: would remove [pid %d mnt:%llu]/dev/shm/%s", (int)b.init,
					    (unsigned long long)bns.st_ino, killed)),
		  "%s", err);
	cr_expect(!strstr(err, live), "a live creator's file would go: %s", err);
	cr_expect(h_exists(in_pod(&b, killed)), "a dry run removed a file");
	r = h_json_load(json);
	dr = json_object_get(r, "dead_reclaim");
	cr_assert(json_is_object(dr), "%s", out);
	cr_expect_geq(json_integer_value(json_object_get(dr, "passes")), 2, "at the start and a second later");
	cr_expect_geq(json_integer_value(json_object_get(dr, "files")), 2);
	cr_expect(json_is_true(json_object_get(dr, "dry_run")));
	cr_expect(strstr(out, "would have reclaimed (--reclaim-dry-run) from dead creators:"), "%s", out);
	json_decref(r);
	cr_assert_eq(h_finish(&a.p, NULL), 0);
	h_finish(&b.p, NULL);
}

/* Issue 29: the node agent is deployed for the pods.  A dead creator's
 * file in the node's own /dev/shm (this test's namespace, the agent's own)
 * is the operator's business: --reclaim-dead leaves it unless told
 * --reclaim-node-shm, while a pod's goes; the report says which roots it
 * covered.  Dry runs: other work of this machine loses nothing. */
Test(crossns, the_node_agent_leaves_the_nodes_own_shm_unless_asked)
{
	const char *mine = h_str("%smine_0_0", prefix), *podfile = h_str("%spodded_0_0", prefix);
	const char *json = h_str("/dev/shm/%saudit.json", prefix), *abort_dir = h_str("/dev/shm/%sabort", prefix);
	const char *made[] = {h_bin("SG_CLI"), "run", "--patterns", "{req}_{int}_{int}", "--abort-dir", abort_dir, "--",
			      h_bin("SG_SHMTOOL"), "open", h_str("/dev/shm/%s", mine), "4096", NULL};
	struct pod b;
	char *out, *err;
	json_t *r, *dr;

	need_root();
	h_need_bpf(teardown);
	cr_assert_eq(mkdir(abort_dir, 0755), 0);
	cr_assert_eq(h_run(made, NULL, &err), 0, "%s", err); /* its creator has exited */
	b = pod_start(NULL, podfile);
	kill_creator(&b);
	for (int wide = 0; wide < 2; wide++) {
		const char *argv[] = {h_bin("SG_CLI"), "audit", "--abort-dir", abort_dir, "--reclaim-dead", "1",
				      "--reclaim-dry-run", "--reclaim-ignore-unreadable", "--duration", "1.5", "--json", json,
				      wide ? "--reclaim-node-shm" : NULL, NULL};

		cr_assert_eq(h_output(argv, NULL, &out, &err), 0, "%s%s", out, err);
		cr_expect(strstr(err, h_str("/dev/shm/%s (", podfile)), "a dead creator's file in a pod: %s", err);
		if (wide)
			cr_expect(strstr(err, h_str("reclaim: would remove /dev/shm/%s (", mine)),
				  "--reclaim-node-shm: the node's own dead creator's file stays: %s", err);
		else
			cr_expect_null(strstr(err, mine), "the node's own /dev/shm was reclaimed unasked: %s", err);
		r = h_json_load(json);
		dr = json_object_get(r, "dead_reclaim");
		cr_assert(json_is_object(dr), "%s", out);
		cr_expect_str_eq(json_string_value(json_object_get(dr, "scope")), wide ? "pods and node" : "pods");
		cr_expect_geq(json_integer_value(json_object_get(dr, "roots")), 1);
		if (!wide)
			cr_expect_geq(json_integer_value(json_object_get(dr, "node_roots_left")), 1);
		cr_expect(strstr(out, wide ? "reclaim covers: pods and node" : "reclaim covers: pods ("), "%s", out);
		json_decref(r);
		unlink(json);
	}
	cr_expect(h_exists(h_str("/dev/shm/%s", mine)), "a dry run removed a file");
	h_finish(&b.p, NULL);
}
