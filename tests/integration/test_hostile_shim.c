/* The host program and the local users around it against the shim and the
 * sweeps: a lock another user holds, a program that chroots, a signal
 * handler that creates files, an abort directory filled by another user.
 * Run as root, with a second, unprivileged user as the attacker
 * (tests/integration/harness.h).  docs/threat-model.md says what each
 * shows. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"

static const char *prefix, *abort_dir;

static const char *seg(const char *req)
{
	return h_str("/dev/shm/%s%s_0_0", prefix, req);
}

static const char *marker(const char *req)
{
	return h_str("%s/%s%s", abort_dir, prefix, req);
}

static void touch(const char *path)
{
	int fd = open(path, O_CREAT | O_WRONLY, 0644);
	cr_assert_geq(fd, 0, "cannot create %s", path);
	close(fd);
}

static void setup(void)
{
	h_setup("hsh", &prefix, &abort_dir, NULL);
}

static void teardown(void)
{
	h_teardown(prefix, NULL);
}

TestSuite(hostile_shim, .init = setup, .fini = teardown, .timeout = 60);

/* Finding 13: anyone who can open a root can flock it.  A sweep gives up on
 * that root after a bounded wait, says why, exits 3; the preflight starts
 * the server all the same. */
Test(hostile_shim, a_root_locked_by_another_user_is_not_waited_on)
{
	const struct h_user *u = h_hostile_user();
	const char *root = h_str("/dev/shm/%sroot", prefix);
	char *out, *err;
	long t0;
	int status;

	cr_assert_eq(mkdir(root, 0755), 0);
	const char *hold[] = {"/usr/bin/flock", "--shared", root, "/bin/sh", "-c", "echo ready; exec sleep 60", NULL};
	struct h_proc holder = h_spawn_as(u, hold, NULL);
	char *ready = h_read_line(&holder, 10000);
	cr_assert(ready && strcmp(ready, "ready") == 0, "the attacker could not lock %s", root);

	const char *sweep[] = {h_bin("SG_CLI"), "sweep", "--dead", "--root", root, "--ignore-unreadable", NULL};
	t0 = h_now_ms();
	status = h_output(sweep, NULL, &out, &err);
	cr_expect_eq(status, 3, "sweep exited %d: %s", status, err);
	cr_expect_lt(h_now_ms() - t0, 10000, "sweep waited %ld ms on the attacker's lock", h_now_ms() - t0);
	cr_expect(strstr(err, "stayed locked by another process"), "%s", err);

	const char *preflight[] = {h_str("%s/shmguard-preflight", h_bin("SG_CONTRIB")), "/bin/echo", "started", NULL};
	const char *env[] = {h_str("SHMGUARD=%s", h_bin("SG_CLI")),
			     h_str("SHMGUARD_SWEEP_ARGS=--root %s --ignore-unreadable", root), NULL};
	t0 = h_now_ms();
	status = h_output(preflight, env, &out, &err);
	cr_expect_eq(status, 0, "preflight exited %d: %s", status, err);
	cr_expect(strstr(out, "\nstarted\n"), "the server did not start: '%s' %s", out, err);
	cr_expect(strstr(err, "status 3; starting anyway"), "%s", err);
	cr_expect_lt(h_now_ms() - t0, 10000, "the preflight waited %ld ms on the attacker's lock", h_now_ms() - t0);
}

/* Finding 10: the program chroots (as root) after creating its segments.
 * Neither the abort directory nor the root has a path there any more: the
 * watcher keeps both by the descriptors it opened and checked, and sweeps. */
Test(hostile_shim, a_program_that_chroots_still_has_its_aborts_swept)
{
	const char *jail = h_str("/dev/shm/%sjail", prefix);
	const char *argv[] = {h_bin("SG_SHMTOOL"), "shm", seg("a") + 8, "4096", "shm", seg("b") + 8, "4096",
			      "chroot", jail, "wait", NULL};
	struct h_proc p;
	char *err;

	if (geteuid() != 0) {
		cr_assert(!getenv("CI"), "this test must run as root in CI");
		cr_skip_test("needs root to chroot");
	}
	cr_assert_eq(mkdir(jail, 0755), 0);
	p = h_start_ready(argv, h_shim_env(abort_dir, "{req}_{int}_{int}", NULL));
	/* Past the watcher's once-a-second look at its directory and its
	 * registry, which used paths that the chroot took away. */
	usleep(1500 * 1000);
	touch(marker("a"));
	cr_expect(h_wait_gone(seg("a"), 2000), "the abort was not swept after the program's chroot");
	cr_expect(h_exists(seg("b")), "another request's segment was swept");
	cr_assert_eq(h_finish(&p, &err), 0, "%s", err);
	cr_expect(!strstr(err, "was moved or removed"), "%s", err);
}

/* Finding 12: a SIGALRM handler, every 100 us, creates tracked files while
 * the main loop calls malloc() and creates tracked files too.  Without the
 * shim this runs cleanly; the shim allocated and locked inside the handler
 * and hung or crashed the program.  Now it leaves such files untracked,
 * counted and said once. */
Test(hostile_shim, a_signal_handler_creating_tracked_files_runs_as_without_the_shim)
{
	const char *root = h_str("/dev/shm/%ssig", prefix);
	const char *argv[] = {h_bin("SG_SHMTOOL"), "sigcreate", "2", root, NULL};
	const char **env = h_shim_env(abort_dir, "{any}_{req}", h_str("SHMGUARD_SHM_ROOTS=%s", root), NULL);
	struct h_proc p;
	char *line, *err;
	long loops = 0, sigs = 0, foreign = -1, untracked = -1;
	const char *summary;

	cr_assert_eq(mkdir(root, 0755), 0);
	p = h_spawn(argv, env);
	line = h_read_line(&p, 20000);
	cr_assert_not_null(line, "no result: the program hung");
	cr_assert_eq(sscanf(line, "main %ld signals %ld foreign %ld", &loops, &sigs, &foreign), 3, "%s", line);
	cr_assert_eq(h_finish(&p, &err), 0, "%s", err);
	cr_expect_gt(sigs, 100, "the signals did not come: %s", line);
	cr_expect_eq(h_occurrences(err, "created in a signal handler"), 1, "%s", err);
	summary = strstr(err, "created in signal handlers (not tracked) ");
	cr_assert(summary, "%s", err);
	cr_expect_eq(sscanf(summary, "created in signal handlers (not tracked) %ld", &untracked), 1);
	cr_expect_eq(untracked, sigs, "%ld of %ld handler files counted: %s", untracked, sigs, err);
	cr_expect(strstr(err, h_str("summary: tagged %ld,", loops)), "the main loop's %ld files were not all tracked: %s",
		  loops, err);
}

/* Finding 16: another user fills a 1777 abort directory.  The first
 * creation of a process does not wait for the watcher to read it all: it
 * returns while that reading is under way (the shim says when it is over),
 * and a late put (its request's marker there already) is still swept at
 * once, by the creation itself. */
Test(hostile_shim, a_filled_abort_dir_does_not_hold_up_the_first_creation, .timeout = 120)
{
	const struct h_user *u = h_hostile_user();
	const char *argv[] = {h_bin("SG_SHMTOOL"), "shm", seg("late") + 8, "4096", "say", "created", "wait", NULL};
	const char *fill[] = {h_bin("SG_SHMTOOL"), "fill", abort_dir, "100000", NULL};
	struct h_proc p;
	char *out, *err, *line;
	const char *late, *scanned;

	cr_assert_eq(mkdir(abort_dir, 0755), 0);
	cr_assert_eq(chmod(abort_dir, 01777), 0);
	cr_assert_eq(h_output_as(u, fill, NULL, &out, &err), 0, "%s", err);
	touch(marker("late"));
	p = h_spawn(argv, h_shim_env(abort_dir, "{req}_{int}_{int}", NULL));
	line = h_read_line(&p, 20000);
	cr_assert_str_eq(line ? line : "(nothing)", "created");
	cr_expect(!h_exists(seg("late")), "the late put survived its creating call");
	cr_assert_str_eq(h_read_line(&p, 20000), "ready");
	cr_assert(h_wait_stderr(&p, "first look done", 20000), "the watcher never finished reading");
	cr_assert_eq(h_finish(&p, &err), 0, "%s", err);
	late = strstr(err, "was created after its abort");
	scanned = strstr(err, "first look done, ");
	cr_assert(late && scanned, "%s", err);
	cr_expect_lt(late, scanned, "the first creation waited for the reading of the directory: %s", err);
	cr_expect(strstr(scanned, "first look done, 100003 entries"), "%s", scanned);
}
