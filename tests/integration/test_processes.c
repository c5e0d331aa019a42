/* The shim inside real process life: fork, exec, threads, Python, and a
 * bad configuration that must not hurt the host. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "harness.h"

static const char *prefix, *abort_dir;

static void setup(void)
{
	h_setup("proc", &prefix, &abort_dir, NULL);
}

static void teardown(void)
{
	/* The ramfs and full-tmpfs tests' mounts, if they got that far: they
	 * live in the test process's own mount namespace, over directories of
	 * the shared one. */
	umount2(h_str("/dev/shm/%sramfs", prefix), MNT_DETACH);
	umount2(h_str("/dev/shm/%sfull", prefix), MNT_DETACH);
	h_cleanup(prefix);
}

TestSuite(processes, .init = setup, .fini = teardown, .timeout = 60);

static const char *seg(const char *req, int chunk)
{
	return h_str("/dev/shm/%s%s_0_%d", prefix, req, chunk);
}

static const char *req(const char *r)
{
	return h_str("%s%s", prefix, r);
}

/* Parent and child each sweep what they created; the child's watcher
 * started anew after the fork. */
Test(processes, fork_child_keeps_working)
{
	const char *argv[] = {h_bin("SG_SHMTOOL"), "shm", seg("parent", 0) + 8, "4096", "fork",
			      "shm", seg("child", 0) + 8, "4096", "wait", NULL};
	struct h_proc p = h_start_ready(argv, h_shim_env(abort_dir, "{req}_{int}_{int}", NULL));

	h_abort(abort_dir, req("child"), NULL);
	cr_expect(h_wait_gone(seg("child", 0), 1000), "the fork child's segment was not swept");
	cr_expect(h_exists(seg("parent", 0)));
	h_abort(abort_dir, req("parent"), NULL);
	cr_expect(h_wait_gone(seg("parent", 0), 1000), "the parent's segment was not swept after fork");
	cr_assert_eq(h_finish(&p, NULL), 0);
}

/* The start time (clock ticks after boot) /proc gives for pid, or 0. */
static unsigned long long start_ticks_of(long pid)
{
	char buf[1024], *p;
	unsigned long long ticks = 0;
	FILE *f = fopen(h_str("/proc/%ld/stat", pid), "r");

	if (f && fgets(buf, sizeof(buf), f) && (p = strrchr(buf, ')')) &&
	    sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
		   &ticks) != 1)
		ticks = 0;
	if (f)
		fclose(f);
	return ticks;
}

/* A fork child learns who it is when it first tags a file, not from its
 * parent: its tag names its own pid and start time. */
Test(processes, a_fork_childs_tag_names_the_child)
{
	const char *x = seg("forked", 0);
	const char *argv[] = {h_bin("SG_SHMTOOL"), "shm", seg("forkparent", 0) + 8, "4096", "fork",
			      "shm", x + 8, "4096", "wait", NULL};
	struct h_proc p = h_start_ready(argv, h_shim_env(abort_dir, "{req}_{int}_{int}", "SHMGUARD_TAG=xattr", NULL));
	char value[512] = "";
	unsigned long long start = 0;
	long child = 0;
	ssize_t n;

	n = getxattr(x, "user.shmguard", value, sizeof(value) - 1);
	cr_assert_gt(n, 0, "no user.shmguard tag on %s", x);
	value[n] = '\0';
	cr_assert_eq(sscanf(value, "shmguard/1 pid=%ld start=%llu ", &child, &start), 2, "%s", value);
	cr_expect_neq(child, (long)p.pid, "the child's tag names its parent: %s", value);
	cr_expect_eq(start, start_ticks_of(child), "the tag's start time is not the child's: %s", value);
	cr_assert_eq(h_finish(&p, NULL), 0);
}

Test(processes, exec_keeps_the_shim)
{
	const char *argv[] = {h_bin("SG_SHMTOOL"), "exec", "shm", seg("execd", 0) + 8, "4096", "wait", NULL};
	struct h_proc p = h_start_ready(argv, h_shim_env(abort_dir, "{req}_{int}_{int}", NULL));

	h_abort(abort_dir, req("execd"), NULL);
	cr_expect(h_wait_gone(seg("execd", 0), 1000), "the exec'd image's segment was not swept");
	cr_assert_eq(h_finish(&p, NULL), 0);
}

/* 8 threads, each its own request; the even ones abort themselves half-way
 * and keep creating (late puts) while the others create on. */
Test(processes, threads_create_and_sweep_concurrently)
{
	enum { THREADS = 8, COUNT = 60 };
	const char *argv[] = {h_bin("SG_SHMTOOL"), "threads", h_str("%d", THREADS), h_str("%d", COUNT), req("t"),
			      "wait", NULL};
	const char **env = h_shim_env(abort_dir, NULL, h_str("SHMTOOL_ABORT_DIR=%s", abort_dir), NULL);
	struct h_proc p;

	cr_assert_eq(mkdir(abort_dir, 0755), 0);
	p = h_start_ready(argv, env);
	for (int t = 0; t < THREADS; t++) {
		const char *r = h_str("t%d", t);
		for (int i = 0; i < COUNT; i++) {
			if (t % 2 == 0)
				cr_expect(h_wait_gone(seg(r, i), 1000), "%s survived its abort", seg(r, i));
			else
				cr_expect(h_exists(seg(r, i)), "%s was swept but never aborted", seg(r, i));
		}
	}
	cr_assert_eq(h_finish(&p, NULL), 0);
}

/* shmguard_set_request from Python through ctypes, with
 * multiprocessing.shared_memory creating the segment. */
Test(processes, python_sets_its_request_through_ctypes)
{
	const char *script =
		"import ctypes, sys\n"
		"from multiprocessing import shared_memory, resource_tracker\n"
		"lib = ctypes.CDLL(None)\n"
		"assert lib.shmguard_set_request(sys.argv[1].encode()) == 0\n"
		"s = shared_memory.SharedMemory(name=sys.argv[2], create=True, size=8192)\n"
		"resource_tracker.unregister(s._name, 'shared_memory')\n"
		"s.buf[:4] = b'data'\n"
		"print('ready', flush=True)\n"
		"sys.stdin.readline()\n"
		"s.close()\n";
	const char *name = h_str("%sunpatterned", prefix);
	const char *argv[] = {"/usr/bin/env", "python3", "-c", script, req("py"), name, NULL};
	struct h_proc p = h_start_ready(argv, h_shim_env(abort_dir, NULL, NULL));

	h_abort(abort_dir, req("py"), NULL);
	cr_expect(h_wait_gone(h_str("/dev/shm/%s", name), 1000), "the Python segment was not swept");
	cr_assert_eq(h_finish(&p, NULL), 0);
}

Test(processes, bad_configuration_keeps_the_host_working)
{
	const char *x = seg("bad", 0);
	const char *argv[] = {h_bin("SG_SHMTOOL"), "shm", x + 8, "4096", "open", h_str("%s-f_0_1", x), "4096",
			      "fork", "exec", "say", "still-running", "wait", NULL};
	struct h_proc p = h_spawn(argv, h_shim_env(abort_dir, "{req}_{int}_{bogus}", NULL));
	char *line = h_read_line(&p, 10000), *err;

	cr_assert_str_eq(line, "still-running");
	cr_assert_str_eq(h_read_line(&p, 10000), "ready");
	h_abort(abort_dir, req("bad"), NULL);
	usleep(300 * 1000);
	cr_expect(h_exists(x), "a disabled shim swept a segment");
	cr_assert_eq(h_finish(&p, &err), 0, "the host failed: %s", err);
	/* Said once per process image (parent, fork child's exec). */
	cr_expect_eq(h_occurrences(err, "bad configuration, SHMGUARD_PATTERNS="), 2, "stderr: %s", err);
	cr_expect(strstr(err, "unknown placeholder"), "the fault is named: %s", err);
}

Test(processes, cpp_program_works_under_the_shim)
{
	const char *argv[] = {h_bin("SG_SHMCPP"), req("cpp"), "3", "5", NULL};
	struct h_proc p = h_start_ready(argv, h_shim_env(abort_dir, "{req}_{int}_{int}", NULL));

	h_abort(abort_dir, req("cpp1"), NULL);
	for (int i = 0; i < 5; i++) {
		cr_expect(h_wait_gone(seg("cpp1", i), 1000), "%s not swept", seg("cpp1", i));
		cr_expect(h_exists(seg("cpp0", i)));
		cr_expect(h_exists(seg("cpp2", i)));
	}
	cr_assert_eq(h_finish(&p, NULL), 0);
}

/* ramfs keeps no user xattrs: asked for xattr tags, the shim says so once
 * and sweeps from its own record.  Mounted in a private mount namespace of
 * this test.  (The default journal works there: test_owners.c.) */
Test(processes, without_xattrs_the_record_still_sweeps)
{
	const char *root = h_str("/dev/shm/%sramfs", prefix);
	const char *file = h_str("%s/x_0_0", root);
	const char *argv[] = {h_bin("SG_SHMTOOL"), "open", file, "4096", "wait", NULL};
	struct h_proc p;
	char *err;

	h_private_mounts(teardown);
	cr_assert_eq(mkdir(root, 0755), 0);
	cr_assert_eq(mount("none", root, "ramfs", 0, NULL), 0, "mount ramfs: %s", strerror(errno));
	p = h_start_ready(argv, h_shim_env(abort_dir, "{req}_{int}_{int}", h_str("SHMGUARD_SHM_ROOTS=%s", root),
					   "SHMGUARD_TAG=xattr", NULL));
	h_abort(abort_dir, "x", NULL);
	cr_expect(h_wait_gone(file, 1000), "not swept without a tag");
	cr_assert_eq(h_finish(&p, &err), 0);
	cr_expect_eq(h_occurrences(err, "cannot write the user.shmguard tag"), 1, "%s", err);
}

/* A shm root that runs out of space: the program sees the very errors it
 * sees without the shim, and the shim records only what was created. */
Test(processes, a_full_shm_root_fails_the_same_and_records_only_what_exists)
{
	const char *root = h_str("/dev/shm/%sfull", prefix);
	const char *argv[13] = {h_bin("SG_SHMTOOL")};
	char *plain_err, *shim_err;
	int plain, shimmed;

	h_private_mounts(teardown);
	cr_assert_eq(mkdir(root, 0755), 0);
	/* Room for a few files only; a fresh one for each run. */
	cr_assert_eq(mount("none", root, "tmpfs", 0, "nr_inodes=5,size=64k"), 0, "mount tmpfs: %s", strerror(errno));
	for (int i = 0; i < 6; i++) {
		argv[1 + 2 * i] = "creat";
		argv[2 + 2 * i] = h_str("%s/full_0_%d", root, i);
	}
	/* creat PATH SIZE takes a size: 0 keeps it to an inode. */
	const char *run[20];
	size_t n = 0;
	run[n++] = argv[0];
	for (int i = 0; i < 6; i++) {
		run[n++] = "creat";
		run[n++] = argv[2 + 2 * i];
		run[n++] = "0";
	}
	run[n] = NULL;

	plain = h_run(run, NULL, &plain_err);
	int fit = h_count(root, "full_");
	cr_assert(fit > 0 && fit < 6, "%d files fit", fit);
	cr_assert_eq(umount(root), 0);
	cr_assert_eq(mount("none", root, "tmpfs", 0, "nr_inodes=5,size=64k"), 0);
	shimmed = h_run(run, h_shim_env(abort_dir, "{req}_{int}_{int}", h_str("SHMGUARD_SHM_ROOTS=%s", root), NULL),
			&shim_err);
	cr_expect_eq(plain, 1);
	cr_expect_eq(shimmed, plain, "exit %d under the shim, %d without", shimmed, plain);
	cr_expect(strstr(plain_err, "No space left on device"), "%s", plain_err);
	cr_expect(strstr(shim_err, "shmtool: creat ") && strstr(shim_err, "No space left on device"), "%s", shim_err);
	/* What was created is recorded, nothing more.  (The shim's journal
	 * takes an inode: with the shim one file fewer fits here.) */
	int made = h_count(root, "full_");
	cr_expect(made > 0 && made <= fit, "%d fit without the shim, %d with", fit, made);
	cr_expect(strstr(shim_err, h_str("summary: tagged %d,", made)), "%d files made; %s", made, shim_err);
}

/* Signals land inside the shim's own work (its locks held) and their
 * handler creates and unlinks files too (elsewhere: creating tracked files
 * in a handler is not supported, see docs/limits.md): no deadlock, no error, and
 * the main loop's files are tracked all along. */
Test(processes, signal_handlers_calling_into_libc_do_not_deadlock, .timeout = 30)
{
	const char *root = h_str("/dev/shm/%ssig", prefix), *elsewhere = h_str("/dev/shm/%ssig-handler", prefix);
	const char *argv[] = {h_bin("SG_SHMTOOL"), "signals", "2", root, elsewhere, NULL};
	struct h_proc p;
	char *line, *err;
	long loops = 0, sigs = 0, foreign = -1;

	cr_assert_eq(mkdir(root, 0755), 0);
	cr_assert_eq(mkdir(elsewhere, 0755), 0);
	p = h_spawn(argv, h_shim_env(abort_dir, "{any}_{req}", h_str("SHMGUARD_SHM_ROOTS=%s", root), NULL));
	line = h_read_line(&p, 20000);
	cr_assert_not_null(line, "no result: a deadlock?");
	cr_assert_eq(sscanf(line, "main %ld signals %ld foreign %ld", &loops, &sigs, &foreign), 3, "%s", line);
	cr_assert_eq(h_finish(&p, &err), 0, "%s", err);
	cr_expect_gt(loops, 100);
	cr_expect_gt(sigs, 100, "the signals did not come: %s", line);
	cr_expect_eq(foreign, 0, "the program's handler ran on the shim's thread");
	cr_expect(strstr(err, "summary: tagged"), "the main loop's files were not tracked: %s", err);
	cr_expect_eq(h_count(root, ""), 2, "files left behind (only . and ..)");
	cr_expect_eq(h_count(elsewhere, ""), 2, "the handler's files left behind");
}

/* Out of file descriptors: the program gets EMFILE as it would without the
 * shim, and the shim records only the files that were made. */
Test(processes, fd_exhaustion_fails_the_same_and_records_only_what_exists)
{
	const char *root = h_str("/dev/shm/%semfile", prefix);
	const char *argv[48] = {h_bin("SG_SHMTOOL"), "nofile", "16"};
	char *plain_err, *shim_err;
	size_t n = 3;

	cr_assert_eq(mkdir(root, 0755), 0);
	for (int i = 0; i < 20; i++) {
		argv[n++] = "hold";
		argv[n++] = h_str("%s/emfile_0_%d", root, i);
	}
	int plain = h_run(argv, NULL, &plain_err);
	int fit = h_count(root, "emfile_");
	h_cleanup(h_str("%semfile", prefix));
	cr_assert_eq(mkdir(root, 0755), 0);
	int shimmed = h_run(argv, h_shim_env(abort_dir, "{req}_{int}_{int}", h_str("SHMGUARD_SHM_ROOTS=%s", root), NULL),
			    &shim_err);
	int made = h_count(root, "emfile_");

	cr_expect_eq(plain, 1);
	cr_expect_eq(shimmed, plain, "exit %d under the shim, %d without", shimmed, plain);
	cr_expect(strstr(plain_err, "Too many open files"), "%s", plain_err);
	cr_expect(strstr(shim_err, "Too many open files"), "%s", shim_err);
	/* The shim's watcher holds a descriptor of its own: one file fewer fits. */
	cr_expect(made > 0 && made <= fit, "%d fit without the shim, %d with", fit, made);
	cr_expect(strstr(shim_err, h_str("summary: tagged %d,", made)), "%d made; %s", made, shim_err);
}
