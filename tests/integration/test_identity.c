/* A creator's identity (pid, start time, pid namespace) as the shim records
 * it and `ls` and `sweep --dead` judge it: an identity nobody can check is
 * unknown, never dead.  A creator that could not read /proc, a sweep whose
 * /proc is another pid namespace's, and a child made with a raw clone
 * system call, which inherits its parent's journal without a fork handler. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "journal.h"

static const char *prefix, *abort_dir, *root;

static void setup(void)
{
	h_setup("idn", &prefix, &abort_dir, &root);
}

static void teardown(void)
{
	h_teardown(prefix, root);
}

TestSuite(identity, .init = setup, .fini = teardown, .timeout = 60);

/* A test that needs a root without user xattrs mounts a ramfs on root, in
 * its private mount namespace (h_mount_root): only the journal speaks there. */

static const char **env_for(const char *extra)
{
	return h_shim_env(abort_dir, "{req}_{int}_{int}", h_str("SHMGUARD_SHM_ROOTS=%s", root), extra, NULL);
}

/* `[PRE...] shmguard CMD --root ROOT ARG` (pre: NULL-terminated, may be NULL). */
static int cli(char **out, const char *const *pre, const char *cmd, const char *arg)
{
	const char *argv[16];
	size_t n = 0;

	for (; pre && *pre; pre++)
		argv[n++] = *pre;
	argv[n++] = h_bin("SG_CLI");
	argv[n++] = cmd;
	argv[n++] = "--root";
	argv[n++] = root;
	if (strcmp(cmd, "sweep") == 0)
		argv[n++] = "--ignore-unreadable";
	argv[n++] = arg;
	argv[n] = NULL;
	return h_output(argv, NULL, out, NULL);
}

/* The creator ls --json gives name: its state and pid, "-" and 0 untagged. */
static const char *creator_of(const char *const *pre, const char *name, int *pid)
{
	const char *state = "-";
	json_t *j, *f;
	char *out;
	size_t i;

	cr_assert_eq(cli(&out, pre, "ls", "--json"), 0, "%s", out);
	cr_assert((j = json_loads(out, 0, NULL)), "%s", out);
	*pid = 0;
	json_array_foreach(json_object_get(j, "files"), i, f) {
		json_t *tag = json_object_get(f, "tag");
		if (strcmp(json_string_value(json_object_get(f, "path")), h_in(root, name)) != 0 || !json_is_object(tag))
			continue;
		state = h_str("%s", json_string_value(json_object_get(tag, "creator_state")));
		*pid = (int)json_integer_value(json_object_get(tag, "creator_pid"));
	}
	json_decref(j);
	return state;
}

/* Without /proc the creator records start time 0 and namespace 0: that
 * names no process anybody can look for, so its file is kept. */
Test(identity, a_creator_that_cannot_read_proc_is_unknown_not_dead)
{
	const char *seg = h_str("%sblind_0_0", prefix);
	const char *argv[] = {"/usr/bin/unshare", "--mount", "--propagation", "private", "/bin/sh", "-c",
			      "umount -l /proc && exec \"$0\" \"$@\"", h_bin("SG_SHMTOOL"), "open", h_in(root, seg),
			      "4096", "wait", NULL};
	struct h_proc p;
	char *out;
	int pid;

	if (getenv("SG_SANITIZED"))
		cr_skip_test("AddressSanitizer's runtime needs /proc: the plain build's pass runs this");
	h_mount_root(root, "ramfs", "mode=1777", teardown);
	p = h_start_ready(argv, env_for(NULL));
	cr_expect_str_eq(creator_of(NULL, seg, &pid), "unknown");
	cr_assert_eq(cli(&out, NULL, "sweep", "--dead"), 0, "%s", out);
	cr_expect(h_exists(h_in(root, seg)), "a live creator without /proc was judged dead: %s", out);
	cr_expect(strstr(out, "cannot tell whether its creator runs"), "%s", out);
	cr_assert_eq(h_finish(&p, NULL), 0);
}

/* The host pid of the only child of pid (unshare --fork's). */
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

/* Issue 17 finding 7: `nsenter -p` without `-m` runs the sweep in the
 * creator's pid namespace with the host's /proc.  The creator's pid (1
 * there) is another process in that /proc: the sweep must see that /proc is
 * not its namespace's and judge nobody. */
Test(identity, a_sweep_through_another_namespaces_proc_judges_no_creator)
{
	const char *seg = h_str("%spod_0_0", prefix);
	const char *argv[] = {"/usr/bin/unshare", "--pid", "--fork", h_bin("SG_SHMTOOL"), "open", h_in(root, seg), "4096",
			      "wait", NULL};
	struct h_proc p;
	char *out, *target;
	int pid;

	if (geteuid() != 0) {
		cr_assert(!getenv("CI"), "needs root in CI");
		h_skip(teardown, "nsenter needs root");
	}
	h_mount_root(root, "ramfs", "mode=1777", teardown);
	p = h_start_ready(argv, env_for(NULL));
	target = h_str("%d", (int)child_of(p.pid));
	const char *nsenter[] = {"/usr/bin/nsenter", "-t", target, "-p", "--", NULL};

	/* From the host (the initial pid namespace), the creator (pid 1 of
	 * its own namespace) is found running. */
	cr_expect_str_eq(creator_of(NULL, seg, &pid), "alive");
	cr_expect_eq(pid, 1);
	/* From inside its namespace, with the host's /proc: unknown too. */
	cr_expect_str_eq(creator_of(nsenter, seg, &pid), "unknown");
	cr_assert_eq(cli(&out, nsenter, "ls", NULL), 0, "%s", out);
	cr_expect(strstr(out, "/proc shows another pid namespace"), "%s", out);
	cr_assert_eq(cli(&out, nsenter, "sweep", "--dead"), 0, "%s", out);
	cr_expect(h_exists(h_in(root, seg)), "a running creator's file was swept: %s", out);
	cr_expect(strstr(out, "/proc is another pid namespace's"), "%s", out);
	cr_assert_eq(h_finish(&p, NULL), 0);
}

/* An unknown creator is never dead, whatever part of /proc hides it: a
 * sweep run by a user who cannot read the namespaces of root's processes
 * cannot tell that a creator of another pid namespace is not among them,
 * though it may unlink the file (a root open to all, without the sticky
 * bit; the journal, 0644, speaks for the file on ramfs). */
Test(identity, a_sweep_that_cannot_read_every_process_judges_no_creator_of_another_namespace_dead)
{
	const char *seg = h_str("%shidden_0_0", prefix);
	const char *argv[] = {"/usr/bin/unshare", "--pid", "--fork", h_bin("SG_SHMTOOL"), "open", h_in(root, seg), "4096",
			      "wait", NULL};
	const char *sweep[] = {h_bin("SG_CLI"), "sweep", "--root", root, "--ignore-unreadable", "--dead", NULL};
	struct h_proc p;
	char *out, *err;
	int pid;

	if (geteuid() != 0) {
		cr_assert(!getenv("CI"), "needs root in CI");
		h_skip(teardown, "a pid namespace and a second user need root");
	}
	h_mount_root(root, "ramfs", "mode=0777", teardown);
	p = h_start_ready(argv, env_for(NULL));
	cr_expect_str_eq(creator_of(NULL, seg, &pid), "alive");
	cr_assert_eq(h_output_as(h_hostile_user(), sweep, NULL, &out, &err), 0, "%s%s", out, err);
	cr_expect(h_exists(h_in(root, seg)), "a live creator another user cannot see was judged dead: %s", out);
	cr_expect(strstr(out, "some processes could not be read"), "%s", out);
	cr_assert_eq(h_finish(&p, NULL), 0);
}

/* Starts argv, a shmtool script that opens the parent's file, waits, then
 * goes on with "rawfork" and a "wait" in the child.  The clone is made once
 * the parent's watcher has finished its first look, so that the copy is
 * made while that thread holds no lock: a copy of a lock held stays held
 * (in one loaded AddressSanitizer run, not reproduced, a child's watcher
 * never swept).  Returns the child's pid, once it has said it and reached
 * its "wait" (in either order). */
static int start_clone_when_idle(struct h_proc *p, const char *const *argv)
{
	bool ready = false;
	int child = 0;

	cr_assert_eq(mkdir(abort_dir, 0755), 0);
	*p = h_spawn(argv, env_for("SHMGUARD_LOG=info"));
	cr_assert_str_eq(h_read_line(p, 10000) ?: "(nothing)", "ready");
	cr_assert(h_wait_stderr(p, "first look done", 10000), "the parent's watcher never finished its first look");
	cr_assert_eq(write(p->in, "\n", 1), 1);
	for (int i = 0; i < 2; i++) {
		char *line = h_read_line(p, 10000);
		cr_assert(line, "shmtool said nothing");
		if (strcmp(line, "ready") == 0)
			ready = true;
		else
			cr_assert_eq(sscanf(line, "child %d", &child), 1, "%s", line);
	}
	cr_assert(ready && child > 0);
	return child;
}

/* Issue 17 finding 4: a child made with the clone system call itself runs
 * no fork handler and inherits its parent's mapped journal.  Its records
 * must go into a journal of its own, under its own pid: after the parent is
 * killed, sweep --dead reclaims the parent's file and keeps the child's. */
Test(identity, a_raw_clone_child_records_in_its_own_journal)
{
	const char *parent_seg = h_str("%sparent_0_0", prefix), *child_seg = h_str("%schild_0_0", prefix);
	const char *argv[] = {h_bin("SG_SHMTOOL"), "open", h_in(root, parent_seg), "4096", "wait", "rawfork",
			      "open", h_in(root, child_seg), "4096", "wait", NULL};
	struct h_proc p;
	int child, pid, status;
	char *out;

	h_mount_root(root, "ramfs", "mode=1777", teardown);
	child = start_clone_when_idle(&p, argv);
	cr_expect_eq(h_count(root, h_str(SG_JOURNAL_PREFIX "%d-", child)), 1, "the child has no journal of its own");

	kill(p.pid, SIGKILL);
	cr_assert_eq(waitpid(p.pid, &status, 0), p.pid);
	cr_expect_str_eq(creator_of(NULL, child_seg, &pid), "alive");
	cr_expect_eq(pid, child);
	cr_assert_eq(cli(&out, NULL, "sweep", "--dead"), 0, "%s", out);
	cr_expect(!h_exists(h_in(root, parent_seg)), "%s", out);
	cr_expect(h_exists(h_in(root, child_seg)), "the live child's file was swept: %s", out);
	cr_expect_eq(h_count(root, h_str(SG_JOURNAL_PREFIX "%d-", (int)p.pid)), 0, "%s", out);
	kill(child, SIGKILL);
}

/* The same child is a process of its own for the abort too: its watcher
 * sweeps its file when its request is aborted, and unlinks the file it
 * makes for that request after the marker; its parent's file stays. */
Test(identity, a_raw_clone_child_sweeps_its_own_aborted_request)
{
	const char *parent_seg = h_in(root, h_str("%sparent_0_0", prefix));
	const char *child_seg = h_in(root, h_str("%schild_0_0", prefix)), *late = h_in(root, h_str("%schild_0_1", prefix));
	const char *argv[] = {h_bin("SG_SHMTOOL"), "open", parent_seg, "4096", "wait", "rawfork", "open", child_seg,
			      "4096", "wait", "open", late, "4096", "say", "made", "wait", NULL};
	struct h_proc p;
	int child, status;

	h_mount_root(root, "ramfs", "mode=1777", teardown);
	child = start_clone_when_idle(&p, argv);
	cr_assert(h_exists(child_seg));
	int fd = open(h_str("%s/%schild", abort_dir, prefix), O_CREAT | O_WRONLY, 0644);
	cr_assert_geq(fd, 0);
	close(fd);
	cr_expect(h_wait_gone(child_seg, 10000), "the child did not sweep its aborted request's file");
	cr_assert_eq(write(p.in, "\n", 1), 1);
	cr_assert_str_eq(h_read_line(&p, 10000) ?: "(nothing)", "made");
	cr_expect(!h_exists(late), "the child's file made after the abort survived");
	cr_expect(h_exists(parent_seg), "the parent's file of another request was swept");
	kill(child, SIGKILL);
	kill(p.pid, SIGKILL);
	cr_assert_eq(waitpid(p.pid, &status, 0), p.pid);
}
