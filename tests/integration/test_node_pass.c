/* A node pass's cost in pods (issue 29): N pods, each a mount and a pid
 * namespace with a tmpfs of its own on /dev/shm and one file whose
 * creator (its pid 1) runs there, listed by `ls --node` and swept by
 * `sweep --dead --dry-run --pod` (each pod's, in one pass).
 * The walks of /proc's processes a pass makes are counted (proc_walks in
 * the JSON): 3 (the mounts', the holders', the index of who runs) for 800
 * pods as for 200, where two walks per 8 roots made the pass quadratic
 * (ls --node: 5.0 s for 200 pods, 36 s for 800).  The time is checked too,
 * generously: 800 pods cost at most 6 times 200, and half a second for
 * ls (a second for sweep, which also locks each root). */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "procstat.h"

#define PODS_FEW 200
#define PODS_MANY 800

static const char *prefix, *json_path;
static pid_t pods[PODS_MANY];
static size_t npods;
static int hold[2] = {-1, -1}, ready[2] = {-1, -1};
static char pod_stack[64 << 10]; /* each pod has its own copy: no CLONE_VM */

static void setup(void)
{
	prefix = h_prefix("pass");
	json_path = h_str("/tmp/%s.json", prefix);
}

static void teardown(void)
{
	if (hold[1] >= 0)
		close(hold[1]); /* every pod reads its end: they leave */
	for (size_t i = 0; i < npods; i++)
		kill(pods[i], SIGKILL);
	for (size_t i = 0; i < npods; i++)
		waitpid(pods[i], NULL, 0);
	npods = 0;
	unlink(json_path);
	h_cleanup(prefix);
}

TestSuite(node_pass, .init = setup, .fini = teardown, .timeout = 110);

/* A pod's pid 1: its own tmpfs on /dev/shm, then it waits for the test's
 * end.  System calls only (it runs on a copy of the test's memory). */
static int pod_main(void *unused)
{
	char c;

	(void)unused;
	close(hold[1]);
	close(ready[0]);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
	    mount("tmpfs", "/dev/shm", "tmpfs", 0, "size=256k") < 0)
		_exit(9);
	if (write(ready[1], "r", 1) != 1)
		_exit(9);
	while (read(hold[0], &c, 1) > 0)
		;
	_exit(0);
}

/* In pod's /dev/shm, a file and the journal that says its creator is the
 * pod's pid 1, as the shim writes them there. */
static void plant(pid_t pod)
{
	struct stat ns;
	uint64_t start;

	cr_assert_eq(stat(h_str("/proc/%d/ns/pid", (int)pod), &ns), 0);
	cr_assert_eq(sg_proc_start_ticks(pod, &start), 0);
	h_plant_journal(h_str("/proc/%d/root/dev/shm", (int)pod), h_str("%sseg_0_0", prefix), h_str("%sreq", prefix),
			(uint64_t)ns.st_ino, 1, start);
}

/* Pods until there are n, each with its file. */
static void pods_up_to(size_t n)
{
	size_t first = npods;
	char c;

	for (; npods < n; npods++) {
		pods[npods] = clone(pod_main, pod_stack + sizeof(pod_stack), CLONE_NEWNS | CLONE_NEWPID | SIGCHLD, NULL);
		cr_assert_gt(pods[npods], 0, "clone: %s", strerror(errno));
	}
	for (size_t i = first; i < n; i++) {
		struct pollfd p = {.fd = ready[0], .events = POLLIN};

		cr_assert_eq(poll(&p, 1, 20000), 1, "a pod did not start");
		cr_assert_eq(read(ready[0], &c, 1), 1);
	}
	for (size_t i = first; i < n; i++)
		plant(pods[i]);
}

/* `shmguard SUB ARGS --json=FILE`: the JSON, *ms its time (the best of
 * two runs: the machine is shared), the command alone timed. */
static json_t *pass_json(long *ms, const char *sub, const char *const *args)
{
	const char **argv = calloc(2 * PODS_MANY + 16, sizeof(*argv));
	size_t n = 0;
	json_t *j = NULL;

	cr_assert_not_null(argv);
	argv[n++] = h_bin("SG_CLI");
	argv[n++] = sub;
	while (*args)
		argv[n++] = *args++;
	argv[n++] = h_str("--json=%s", json_path);
	*ms = -1;
	for (int run = 0; run < 2; run++) {
		char *err = NULL;
		long t0 = h_now_ms(), took;
		int status = h_run(argv, NULL, &err);

		took = h_now_ms() - t0;
		/* 1: some namespace of the machine could not be read (not ours). */
		cr_assert(status == 0 || status == 1, "%s: exit %d: %s", sub, status, err);
		json_decref(j);
		j = h_json_load(json_path);
		if (*ms < 0 || took < *ms)
			*ms = took;
		free(err);
	}
	free(argv);
	return j;
}

/* ls --node: every /dev/shm of the machine, read only. */
static json_t *ls_node(long *ms)
{
	return pass_json(ms, "ls", (const char *[]){"--node", NULL});
}

/* sweep --dead --dry-run of our pods' /dev/shm only (--pod each): one
 * pass for them all, and nobody else's /dev/shm even locked. */
static json_t *sweep_pods(long *ms)
{
	const char **args = calloc(2 * npods + 3, sizeof(*args));
	size_t n = 0;
	json_t *j;

	cr_assert_not_null(args);
	args[n++] = "--dead";
	args[n++] = "--dry-run";
	for (size_t i = 0; i < npods; i++) {
		args[n++] = "--pod";
		args[n++] = h_str("%d", (int)pods[i]);
	}
	j = pass_json(ms, "sweep", args);
	free(args);
	return j;
}

/* How many of our pods' files j lists, each with its creator alive (as
 * its pod's pid 1, found by the index of another pid namespace's). */
static size_t ours_alive(json_t *j)
{
	const char *name = h_str("%sseg_0_0", prefix);
	size_t i, n = 0;
	json_t *f;

	json_array_foreach(json_object_get(j, "files"), i, f) {
		json_t *tag = json_object_get(f, "tag");

		if (!json_is_string(json_object_get(f, "name")) ||
		    strcmp(json_string_value(json_object_get(f, "name")), name) != 0)
			continue;
		cr_assert(json_is_object(tag), "our file untagged");
		cr_expect_str_eq(json_string_value(json_object_get(tag, "creator_state")), "alive");
		cr_expect_str_eq(json_string_value(json_object_get(tag, "creator_proof")), "namespace_scan");
		n++;
	}
	return n;
}

/* No decision of sweep's on our pods' files but to leave them: their
 * creators run. */
static void none_removed(json_t *j)
{
	const char *name = h_str("/dev/shm/%sseg_0_0", prefix);
	size_t i;
	json_t *d;

	json_array_foreach(json_object_get(j, "decisions"), i, d) {
		const char *path = json_string_value(json_object_get(d, "path"));

		if (path && strcmp(path, name) == 0)
			cr_expect_str_eq(json_string_value(json_object_get(d, "decision")), "kept");
	}
}

Test(node_pass, reads_proc_as_often_for_800_pods_as_for_200)
{
	long ls_few, ls_many, sweep_few, sweep_many;
	json_int_t walks;
	json_t *j;

	if (geteuid() != 0) {
		cr_assert(!getenv("CI"), "needs root in CI");
		h_skip(teardown, "pods need root");
	}
	cr_assert_eq(pipe2(hold, O_CLOEXEC), 0);
	cr_assert_eq(pipe2(ready, O_CLOEXEC), 0);

	pods_up_to(PODS_FEW);
	j = ls_node(&ls_few);
	cr_expect_eq(ours_alive(j), PODS_FEW);
	/* The mounts', the holders', the index of who runs (asked about our
	 * pods' creators): one walk each. */
	walks = h_jint(j, "proc_walks");
	cr_expect_eq(walks, 3, "ls --node walked /proc %lld times", (long long)walks);
	h_expect_json_documented(j, "ls");
	json_decref(j);
	j = sweep_pods(&sweep_few);
	cr_expect_eq(h_jint(j, "proc_walks"), walks, "sweep --pod walked /proc %lld times, ls %lld",
		     (long long)h_jint(j, "proc_walks"), (long long)walks);
	none_removed(j);
	json_decref(j);

	pods_up_to(PODS_MANY);
	j = ls_node(&ls_many);
	cr_expect_eq(ours_alive(j), PODS_MANY);
	cr_expect_eq(h_jint(j, "proc_walks"), walks, "%d pods: /proc walked %lld times, %d pods: %lld", PODS_MANY,
		     (long long)h_jint(j, "proc_walks"), PODS_FEW, (long long)walks);
	json_decref(j);
	j = sweep_pods(&sweep_many);
	cr_expect_eq(h_jint(j, "proc_walks"), walks);
	none_removed(j);
	json_decref(j);

	cr_log_info("ls --node: %ld ms for %d pods, %ld ms for %d; sweep --dead --dry-run --pod (each): %ld ms, %ld ms",
		    ls_few, PODS_FEW, ls_many, PODS_MANY, sweep_few, sweep_many);
	cr_expect_leq(ls_many, 6 * ls_few + 500, "ls --node: %ld ms for %d pods, %ld ms for %d", ls_many, PODS_MANY,
		      ls_few, PODS_FEW);
	cr_expect_leq(sweep_many, 6 * sweep_few + 1000, "sweep --pod: %ld ms for %d pods, %ld ms for %d", sweep_many,
		      PODS_MANY, sweep_few, PODS_FEW);
}
