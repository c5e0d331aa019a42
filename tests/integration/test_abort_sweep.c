/* shmguard abort sweeps the aborted requests' files itself, from the
 * ownership journals, before it returns: the servers' watcher threads need
 * not be scheduled first (each server is stopped here while abort runs, as a
 * busy host leaves its watcher waiting).  The shims stay the backstop. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"

static const char *prefix, *abort_dir;

static void setup(void)
{
	h_setup("asw", &prefix, &abort_dir, NULL);
}

static void teardown(void)
{
	h_teardown(prefix, NULL);
}

TestSuite(abort_sweep, .init = setup, .fini = teardown, .timeout = 30);

static const char *req(const char *r)
{
	return h_str("%s%s", prefix, r);
}

static const char *seg(const char *r, int i)
{
	return h_str("/dev/shm/%s%s_0_%d", prefix, r, i);
}

/* Stops pid and waits until each of its threads is stopped (kill returns
 * before they are, and a busy machine may not run them for a while). */
static void stop(pid_t pid)
{
	long t0 = h_now_ms();
	bool all;

	cr_assert_eq(kill(pid, SIGSTOP), 0);
	do {
		DIR *d = opendir(h_str("/proc/%d/task", pid));
		struct dirent *e;

		cr_assert(d);
		all = true;
		while ((e = readdir(d)))
			if (e->d_name[0] != '.') {
				FILE *f = fopen(h_str("/proc/%d/task/%s/stat", pid, e->d_name), "r");
				char state = '?';

				if (f && fscanf(f, "%*d (%*[^)]) %c", &state) != 1)
					state = '?';
				if (f)
					fclose(f);
				all &= state == 'T' || state == 't';
			}
		closedir(d);
	} while (!all && h_now_ms() - t0 < 5000);
	cr_assert(all, "process %d did not stop", pid);
}

/* A server under the shim with request x's two segments (one kept mapped)
 * and request xy's (a name x is a prefix of), which then waits; stopped, so
 * that its watcher cannot act on a marker before it is continued.  After
 * its line on stdin it creates x's late segment and says so. */
static struct h_proc start_stopped(void)
{
	const char *argv[] = {h_bin("SG_SHMTOOL"), "shm", seg("x", 0) + 8, "4096", "map", seg("x", 1) + 8, "8192",
			      "shm", seg("xy", 0) + 8, "4096", "wait", "shm", seg("x", 2) + 8, "4096", "say",
			      "late", "wait", NULL};
	struct h_proc p = h_start_ready(argv, h_shim_env(abort_dir, "{req}_{int}_{int}", NULL));

	stop(p.pid);
	return p;
}

static int abort_cmd(const char *option, const char *id, char **out, char **err)
{
	const char *argv[] = {h_bin("SG_CLI"), "abort", "--abort-dir", abort_dir, id, option, NULL};
	return h_output(argv, NULL, out, err);
}

static void expect_no_warning(const char *err)
{
	cr_expect(!strstr(err, "warning") && !strstr(err, "cannot"), "the shim complained: %s", err);
}

Test(abort_sweep, abort_returns_after_the_requests_files_are_gone)
{
	struct h_proc p = start_stopped();
	char *out, *err;

	cr_assert_eq(abort_cmd(NULL, req("x"), &out, &err), 0, "%s", err);
	/* No waiting: gone when the command has returned. */
	cr_expect(!h_exists(seg("x", 0)), "x's segment is still there after abort returned");
	cr_expect(!h_exists(seg("x", 1)), "x's mapped segment is still there after abort returned");
	cr_expect(h_exists(seg("xy", 0)), "abort swept the segment of another request (xy)");
	cr_expect(strstr(out, h_str("request %s: swept 2 files, 12288 bytes", req("x"))), "output: %s", out);
	cr_expect_eq(h_occurrences(out, "\n"), 1, "more than one line: %s", out);
	/* The shim, continued, finds the names gone: no word about it. */
	cr_assert_eq(kill(p.pid, SIGCONT), 0);
	cr_assert_eq(h_finish(&p, &err), 0);
	expect_no_warning(err);
	cr_expect(h_exists(seg("xy", 0)), "the shim swept the segment of another request (xy)");
}

Test(abort_sweep, no_sweep_leaves_it_to_the_shim)
{
	struct h_proc p = start_stopped();
	char *out, *err;

	cr_assert_eq(abort_cmd("--no-sweep", req("x"), &out, &err), 0, "%s", err);
	cr_expect_str_eq(out, "", "--no-sweep said: %s", out);
	cr_expect(h_exists(seg("x", 0)), "--no-sweep swept");
	cr_assert_eq(kill(p.pid, SIGCONT), 0);
	cr_expect(h_wait_gone(seg("x", 0), 5000), "the shim did not sweep after --no-sweep");
	cr_expect(h_wait_gone(seg("x", 1), 5000), "the shim did not sweep after --no-sweep");
	cr_expect(h_exists(seg("xy", 0)));
	cr_assert_eq(h_finish(&p, NULL), 0);
}

/* Between the server's creation and the abort, x's first name was removed
 * and another user made a file of that name: neither abort nor the shim
 * may unlink it. */
Test(abort_sweep, a_name_now_another_users_file_is_left_alone)
{
	const struct h_user *u = h_hostile_user();
	struct h_proc p = start_stopped();
	const char *plant[] = {h_bin("SG_SHMTOOL"), "open", seg("x", 0), "4096", NULL};
	char *out, *err;
	struct stat st;

	cr_assert_eq(unlink(seg("x", 0)), 0);
	cr_assert_eq(h_output_as(u, plant, NULL, &out, &err), 0, "%s", err);
	cr_assert_eq(abort_cmd(NULL, req("x"), &out, &err), 0, "%s", err);
	cr_expect(!h_exists(seg("x", 1)), "x's other segment is still there after abort returned");
	cr_expect(strstr(out, "swept 1 file, 8192 bytes"), "output: %s", out);
	cr_expect(strstr(out, "left 1 recorded name alone"), "output: %s", out);
	cr_assert_eq(stat(seg("x", 0), &st), 0, "abort unlinked another user's file under a recorded name");
	cr_expect_eq(st.st_uid, u->uid);
	/* The shim, continued, finds another inode there. */
	cr_assert_eq(kill(p.pid, SIGCONT), 0);
	cr_assert(h_wait_stderr(&p, "the name now refers to another file", 5000), "the shim did not look");
	cr_assert_eq(h_finish(&p, &err), 0);
	expect_no_warning(err);
	cr_assert_eq(stat(seg("x", 0), &st), 0, "the shim unlinked another user's file under its recorded name");
	cr_expect_eq(st.st_uid, u->uid);
}

Test(abort_sweep, a_late_put_after_abort_is_swept_by_the_shim)
{
	struct h_proc p = start_stopped();
	char *out, *err, *line;

	cr_assert_eq(abort_cmd(NULL, req("x"), &out, &err), 0, "%s", err);
	cr_expect(!h_exists(seg("x", 0)));
	cr_assert_eq(kill(p.pid, SIGCONT), 0);
	cr_assert_eq(write(p.in, "\n", 1), 1);
	line = h_read_line(&p, 10000);
	cr_assert_str_eq(line, "late");
	cr_expect(h_wait_gone(seg("x", 2), 5000), "a late put after abort survived");
	cr_expect(h_exists(seg("xy", 0)));
	cr_assert_eq(h_finish(&p, &err), 0);
	expect_no_warning(err);
}

Test(abort_sweep, follow_sweeps_each_request_it_marks)
{
	const char *argv[] = {h_bin("SG_CLI"), "abort", "--abort-dir", abort_dir, "--follow", "-",
			      "--match", "^cancel (?<req>\\S+)$", NULL};
	struct h_proc p = start_stopped(), f = h_spawn(argv, NULL);
	const char *line = h_str("cancel %s\n", req("x"));
	char *err;

	cr_assert_eq(write(f.in, line, strlen(line)), (ssize_t)strlen(line));
	/* The server is stopped: only --follow can sweep them. */
	cr_expect(h_wait_gone(seg("x", 0), 5000) && h_wait_gone(seg("x", 1), 5000), "--follow did not sweep");
	cr_expect(h_exists(seg("xy", 0)));
	cr_assert_eq(h_finish(&f, &err), 0, "%s", err);
	cr_expect(strstr(err, "shmguard abort: swept 2 files, 12288 bytes (12.0 KiB), of 1 request marked"), "%s", err);
	cr_assert_eq(kill(p.pid, SIGCONT), 0);
	cr_assert_eq(h_finish(&p, NULL), 0);
}

/* An abort that finds no file of its request says that the shims remove
 * those made later as they appear, for the marker's lifetime. */
Test(abort_sweep, swept_0_files_says_later_files_go_as_they_appear)
{
	const char *argv[] = {h_bin("SG_CLI"), "abort", "--abort-dir", abort_dir, "--ttl", "90", req("none"), NULL};
	char *out, *err;

	cr_assert_eq(h_output(argv, NULL, &out, &err), 0, "%s", err);
	cr_expect(strstr(out, h_str("request %s: swept 0 files, 0 bytes (0 B) in ", req("none"))), "%s", out);
	cr_expect(strstr(out, "; files made for it from now on are removed by the shims as they appear, while the "
			      "marker lasts (90 s)\n"),
		  "%s", out);
}

/* Another user aborts root's request in a root all may write to (no sticky
 * bit): root's shim would not take that user's marker, so abort must not
 * unlink root's files either, though it could. */
Test(abort_sweep, another_users_abort_leaves_roots_files_alone)
{
	const struct h_user *u = h_hostile_user();
	const char *root = h_str("/dev/shm/%sroot", prefix), *f = h_str("%s/%sx_0_0", root, prefix);
	const char *server[] = {h_bin("SG_SHMTOOL"), "open", f, "4096", "wait", NULL};
	const char *argv[] = {h_bin("SG_CLI"), "abort", "--abort-dir", h_str("/dev/shm/%suabort", prefix), req("x"),
			      NULL};
	const char *env[] = {h_str("SHMGUARD_SHM_ROOTS=%s", root), NULL};
	struct h_proc p;
	char *out, *err;

	cr_assert_eq(mkdir(root, 0777), 0);
	cr_assert_eq(chmod(root, 0777), 0);
	p = h_start_ready(server, h_shim_env(abort_dir, "{req}_{int}_{int}", env[0], NULL));
	cr_assert_eq(h_output_as(u, argv, env, &out, &err), 0, "%s", err);
	cr_expect(h_exists(f), "another user's abort unlinked root's file");
	cr_expect(strstr(out, "swept 0 files"), "output: %s", out);
	cr_assert_eq(h_finish(&p, NULL), 0);
}

/* A root too large to list quickly is left to the shims, and said. */
Test(abort_sweep, a_root_over_the_bounds_is_left_to_the_shims)
{
	const char *root = h_str("/dev/shm/%sbig", prefix), *f = h_str("%s/%sx_0_0", root, prefix);
	const char *server[] = {h_bin("SG_SHMTOOL"), "open", f, "4096", "wait", NULL};
	const char *env[] = {h_str("SHMGUARD_SHM_ROOTS=%s", root), NULL};
	const char *argv[] = {h_bin("SG_CLI"), "abort", "--abort-dir", abort_dir, req("x"), NULL};
	struct h_proc p;
	char *out, *err;

	cr_assert_eq(mkdir(root, 0755), 0);
	for (int i = 0; i < 4100; i++) {
		FILE *fp = fopen(h_str("%s/filler%d", root, i), "w");
		cr_assert(fp);
		fclose(fp);
	}
	p = h_start_ready(server, h_shim_env(abort_dir, "{req}_{int}_{int}", env[0], NULL));
	stop(p.pid);
	cr_assert_eq(h_output(argv, env, &out, &err), 0, "%s", err);
	cr_expect(strstr(out, h_str("; %s left to the shims (over 4096 entries", root)), "output: %s", out);
	cr_expect(h_exists(f), "abort swept a root over its bounds");
	cr_assert_eq(kill(p.pid, SIGCONT), 0);
	cr_expect(h_wait_gone(f, 5000), "the shim did not sweep what abort left to it");
	cr_assert_eq(h_finish(&p, NULL), 0);
}
