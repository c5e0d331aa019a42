/* Abort markers: who may write them, where, and for how long they count. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

static const char *prefix, *abort_dir;

static void setup(void)
{
	h_setup("mark", &prefix, &abort_dir, NULL);
}

static void teardown(void)
{
	h_teardown(prefix, NULL);
}

TestSuite(markers, .init = setup, .fini = teardown, .timeout = 30);

static const char *seg(const char *req)
{
	return h_str("/dev/shm/%s%s_0_0", prefix, req);
}

static const char *marker(const char *req)
{
	return h_str("%s/%s%s", abort_dir, prefix, req);
}

static struct h_proc start(const char *const *extra_env)
{
	const char *argv[] = {h_bin("SG_SHMTOOL"), "shm", seg("a") + 8, "4096", "shm", seg("b") + 8, "4096",
			      "wait", NULL};
	const char **env = h_shim_env(abort_dir, "{req}_{int}_{int}", extra_env ? extra_env[0] : NULL, NULL);
	return h_start_ready(argv, env);
}

static void touch(const char *path)
{
	int fd = open(path, O_CREAT | O_WRONLY, 0644);
	cr_assert_geq(fd, 0, "cannot create %s", path);
	close(fd);
}

Test(markers, shim_creates_a_missing_abort_dir_and_watches_it)
{
	struct h_proc p = start(NULL);
	struct stat st;

	/* The first tagged creation started the watcher, which made the dir. */
	for (long end = h_now_ms() + 1000; stat(abort_dir, &st) < 0 && h_now_ms() < end;)
		usleep(5000);
	cr_assert(S_ISDIR(st.st_mode), "abort dir was not created");
	touch(marker("a"));
	cr_expect(h_wait_gone(seg("a"), 1000));
	cr_expect(h_exists(seg("b")));
	cr_assert_eq(h_finish(&p, NULL), 0);
}

Test(markers, marker_of_another_uid_is_ignored)
{
	struct h_proc p = start(NULL);

	mkdir(abort_dir, 0755);
	touch(marker("zz-tmp"));
	cr_assert_eq(chown(marker("zz-tmp"), 4242, 4242), 0);
	cr_assert_eq(rename(marker("zz-tmp"), marker("a")), 0);
	cr_assert(h_wait_stderr(&p, "ignored marker", 1000), "a foreign marker was not reported");
	touch(marker("b")); /* a valid marker after it: once b is swept, a was seen */
	cr_assert(h_wait_gone(seg("b"), 1000));
	cr_expect(h_exists(seg("a")), "a marker owned by another uid swept a segment");
	cr_assert_eq(h_finish(&p, NULL), 0);
}

Test(markers, symlink_marker_is_ignored)
{
	struct h_proc p = start(NULL);

	mkdir(abort_dir, 0755);
	touch(h_str("%s/target", abort_dir));
	cr_assert_eq(symlink(h_str("%s/target", abort_dir), marker("a")), 0);
	touch(marker("b"));
	cr_assert(h_wait_gone(seg("b"), 1000));
	cr_expect(h_exists(seg("a")), "a symlink marker swept a segment");
	cr_expect(h_wait_stderr(&p, "not a regular file", 1000));
	cr_assert_eq(h_finish(&p, NULL), 0);
}

Test(markers, world_writable_dir_without_sticky_bit_is_refused)
{
	struct h_proc p;

	cr_assert_eq(mkdir(abort_dir, 0777), 0);
	cr_assert_eq(chmod(abort_dir, 0777), 0);
	p = start(NULL);
	cr_assert(h_wait_stderr(&p, "world-writable without the sticky bit", 1000));
	touch(marker("a"));
	usleep(300 * 1000);
	cr_expect(h_exists(seg("a")), "a marker in an unsafe directory was obeyed");
	/* Fixed with the sticky bit: markers count again. */
	cr_assert_eq(chmod(abort_dir, 01777), 0);
	touch(marker("b"));
	cr_expect(h_wait_gone(seg("b"), 1500), "markers still ignored after chmod +t");
	cr_assert_eq(h_finish(&p, NULL), 0);
}

Test(markers, abort_dir_removed_and_recreated_keeps_working)
{
	struct h_proc p;

	cr_assert_eq(mkdir(abort_dir, 0755), 0);
	p = start(NULL);
	touch(marker("a"));
	cr_assert(h_wait_gone(seg("a"), 1000));
	cr_assert_eq(unlink(marker("a")), 0);
	cr_assert_eq(rmdir(abort_dir), 0);
	usleep(50 * 1000);
	mkdir(abort_dir, 0755);
	touch(marker("b"));
	cr_expect(h_wait_gone(seg("b"), 1500), "abort after the directory came back was missed");
	cr_assert_eq(h_finish(&p, NULL), 0);
}

Test(markers, late_put_after_marker_is_unlinked_at_once)
{
	const char *argv[] = {h_bin("SG_SHMTOOL"), "shm", seg("late") + 8, "4096", "say", "created", "wait", NULL};
	struct h_proc p;
	char *line;

	mkdir(abort_dir, 0755);
	touch(marker("late"));
	p = h_spawn(argv, h_shim_env(abort_dir, "{req}_{int}_{int}", NULL));
	line = h_read_line(&p, 10000);
	cr_assert_str_eq(line, "created");
	/* No waiting: the creating call itself removed the name. */
	cr_expect(!h_exists(seg("late")), "a late put survived its creating call");
	cr_assert_eq(h_finish(&p, NULL), 0);
}

/* A marker for a request with no file yet in a process is no failure: the
 * shim says that the request's files are unlinked as they appear, and the
 * first one is. */
Test(markers, an_abort_before_any_file_says_its_files_go_as_they_appear)
{
	const char *argv[] = {h_bin("SG_SHMTOOL"), "shm", seg("first") + 8, "4096", "wait", "shm", seg("later") + 8,
			      "4096", "say", "created", "wait", NULL};
	struct h_proc p = h_start_ready(argv, h_shim_env(abort_dir, "{req}_{int}_{int}", NULL));
	char *line;

	touch(marker("later"));
	cr_assert(h_wait_stderr(&p,
				h_str("request %slater aborted: no file of it here yet; those it makes from now on are "
				      "unlinked as they appear, until its marker expires",
				      prefix),
				5000),
		  "the shim did not say it");
	cr_assert_eq(write(p.in, "\n", 1), 1);
	line = h_read_line(&p, 10000);
	cr_assert_str_eq(line, "created");
	cr_expect(!h_exists(seg("later")), "the request's file made after its abort survived");
	cr_expect(h_exists(seg("first")), "another request's file went");
	cr_assert_eq(h_finish(&p, NULL), 0);
}

static void make_old(const char *path)
{
	struct timespec old[2] = {{.tv_sec = time(NULL) - 10}, {.tv_sec = time(NULL) - 10}};

	touch(path);
	cr_assert_eq(utimensat(AT_FDCWD, path, old, AT_SYMLINK_NOFOLLOW), 0);
}

Test(markers, expired_markers_are_removed)
{
	const char *env[] = {"SHMGUARD_ABORT_TTL=2", NULL};
	struct h_proc p;

	h_abort(abort_dir, h_str("%sfresh", prefix), NULL); /* shmguard makes (and stamps) the directory */
	make_old(marker("old"));
	p = start(env);
	cr_expect(h_wait_gone(marker("old"), 3000), "an expired marker stayed");
	cr_expect(h_exists(marker("fresh")), "a fresh marker was removed");
	cr_assert_eq(h_finish(&p, NULL), 0);
}

/* Any directory may be named as the abort directory: one that shmguard did
 * not make may hold files that are not markers, and expiry never touches it. */
Test(markers, expiry_leaves_a_directory_shmguard_did_not_make_alone)
{
	const char *env[] = {"SHMGUARD_ABORT_TTL=1", NULL};
	const char *abort_argv[] = {h_bin("SG_CLI"), "abort", "--abort-dir", abort_dir, "--ttl", "1",
				    h_str("%snew", prefix), NULL};
	const char *conf = h_str("%s/app.conf", abort_dir);
	struct h_proc p;

	cr_assert_eq(mkdir(abort_dir, 0755), 0);
	make_old(conf);
	make_old(marker("old"));
	p = start(env);
	cr_assert_eq(h_run(abort_argv, NULL, NULL), 0);
	usleep(2500 * 1000); /* expiry runs at once, then every second */
	cr_expect(h_exists(conf), "expiry removed a file that is not a marker");
	cr_expect(h_exists(marker("old")), "expiry ran in a directory shmguard did not make");
	cr_assert_eq(h_finish(&p, NULL), 0);
}

Test(markers, abort_command_expires_old_markers_in_a_directory_it_made)
{
	const char *argv[] = {h_bin("SG_CLI"), "abort", "--abort-dir", abort_dir, "--ttl", "1", h_str("%sy", prefix),
			      NULL};

	h_abort(abort_dir, h_str("%sx", prefix), NULL);
	cr_assert(h_exists(h_str("%s/.shmguard-abort-dir", abort_dir)), "the directory made was not stamped");
	make_old(marker("old"));
	cr_assert_eq(h_run(argv, NULL, NULL), 0);
	cr_expect(!h_exists(marker("old")), "an expired marker stayed");
	cr_expect(h_exists(h_str("%s/%sx", abort_dir, prefix)), "a fresh marker was removed");
	cr_expect(h_exists(h_str("%s/.shmguard-abort-dir", abort_dir)), "the stamp was removed");
}

/* A symlink in place of the directory is never followed, and said. */
Test(markers, abort_dir_that_is_a_symlink_is_not_followed)
{
	const char *target = h_str("/dev/shm/%starget", prefix);
	struct h_proc p;

	cr_assert_eq(mkdir(target, 0755), 0);
	cr_assert_eq(symlink(target, abort_dir), 0);
	p = start(NULL);
	cr_expect(h_wait_stderr(&p, "is a symbolic link", 1000), "the symlink was not reported");
	touch(h_str("%s/%sa", target, prefix));
	usleep(300 * 1000);
	cr_expect(h_exists(seg("a")), "a marker reached through a symlink was obeyed");
	cr_assert_eq(h_finish(&p, NULL), 0);
}

/* In a mount namespace without /proc (a bare chroot or container), the
 * watch goes through the path, checked after. */
Test(markers, watcher_works_without_proc)
{
	if (getenv("SG_SANITIZED"))
		cr_skip_test("AddressSanitizer's runtime needs /proc: the plain build's pass runs this");
	if (geteuid() != 0) {
		cr_assert(!getenv("CI"), "this test must run as root in CI");
		cr_skip_test("needs root for a mount namespace");
	}
	const char *argv[] = {"/usr/bin/unshare", "--mount", "--propagation", "private", "/bin/sh", "-c",
			      "umount -l /proc && exec \"$@\"", "sh", h_bin("SG_SHMTOOL"), "shm", seg("a") + 8, "4096",
			      "wait", NULL};
	struct h_proc p = h_start_ready(argv, h_shim_env(abort_dir, "{req}_{int}_{int}", NULL));

	touch(marker("a"));
	cr_expect(h_wait_gone(seg("a"), 1000), "no abort was swept without /proc");
	cr_assert_eq(h_finish(&p, NULL), 0);
}

/* CPU time (user and system) that process pid has used, in ms. */
static long cpu_ms(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long utime, stime;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	cr_assert(f, "cannot read %s", path);
	p = fgets(buf, sizeof(buf), f) ? strrchr(buf, ')') : NULL;
	fclose(f);
	cr_assert(p && sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &utime, &stime) == 2);
	return (long)((utime + stime) * 1000 / (unsigned long)sysconf(_SC_CLK_TCK));
}

/* The program closes every descriptor above stderr (as daemons and
 * CPython's closerange do), with the raw system call, then a pipe takes the
 * lowest numbers: the watcher must not read it, nor spin, nor hang the exit. */
Test(markers, program_closing_every_descriptor_leaves_the_watcher_working)
{
	const char *argv[] = {h_bin("SG_SHMTOOL"), "shm", seg("a") + 8, "4096", "shm", seg("b") + 8, "4096",
			      "closefrom", "3", "pipe", "1000", "wait", NULL};
	struct h_proc p = h_spawn(argv, h_shim_env(abort_dir, "{req}_{int}_{int}", NULL));
	char *line = h_read_line(&p, 10000);
	long cpu;

	cr_assert_str_eq(line ? line : "(nothing)", "pipe 1000", "the program's pipe was read by someone else");
	cr_assert_str_eq(h_read_line(&p, 10000), "ready");
	cpu = cpu_ms(p.pid);
	usleep(1000 * 1000);
	cr_expect_lt(cpu_ms(p.pid) - cpu, 100, "the idle process used %ld ms of CPU in a second",
		     cpu_ms(p.pid) - cpu);
	touch(marker("a"));
	cr_expect(h_wait_gone(seg("a"), 1000), "the watcher stopped working after the program closed descriptors");
	cr_expect(h_exists(seg("b")));
	cr_assert_eq(h_finish(&p, NULL), 0);
}

/* The shim's own descriptors are not in the program's table: the program
 * gets the same descriptor numbers with the shim as without. */
Test(markers, shim_descriptors_do_not_take_the_programs_numbers)
{
	const char *held = h_str("/dev/shm/%sheld", prefix);
	const char *argv[] = {h_bin("SG_SHMTOOL"), "shm", seg("a") + 8, "4096", "hold", held, "fdnum", NULL};
	char *with, *without;

	/* The segment's descriptor is closed, the next is held: a descriptor the
	 * shim made meanwhile would now sit between them. */
	cr_assert_eq(h_output(argv, h_shim_env(abort_dir, "{req}_{int}_{int}", NULL), &with, NULL), 0);
	unlink(seg("a"));
	unlink(held);
	cr_assert_eq(h_output(argv, NULL, &without, NULL), 0);
	cr_expect_str_eq(with, without);
}

/* A vfork child shares the parent's memory until it execs: its first
 * tagged creation must not start (in the child) the parent's watcher. */
Test(markers, vfork_child_creating_first_leaves_the_watcher_to_the_parent)
{
	const char *argv[] = {h_bin("SG_SHMTOOL"), "vfork", seg("child") + 8, "4096", "shm", seg("a") + 8, "4096",
			      "wait", NULL};
	struct h_proc p = h_start_ready(argv, h_shim_env(abort_dir, "{req}_{int}_{int}", NULL));

	touch(marker("a"));
	cr_expect(h_wait_gone(seg("a"), 1000), "the parent's own segment was not swept");
	cr_assert_eq(h_finish(&p, NULL), 0);
}

/* An administrator moves the directory away: the shim says so once, does
 * not spin, does not re-create it, and uses it again once it is back. */
Test(markers, abort_dir_moved_away_is_left_alone_until_it_comes_back)
{
	const char *moved = h_str("%s.old", abort_dir);
	struct h_proc p;
	char *err;
	long cpu;

	cr_assert_eq(mkdir(abort_dir, 0755), 0);
	p = start(NULL);
	cr_assert_eq(rename(abort_dir, moved), 0);
	cr_assert(h_wait_stderr(&p, "was moved or removed", 1000), "the move was not reported");
	cpu = cpu_ms(p.pid);
	usleep(1500 * 1000);
	cr_expect_lt(cpu_ms(p.pid) - cpu, 100, "the watcher used %ld ms of CPU in 1.5 s", cpu_ms(p.pid) - cpu);
	cr_expect(!h_exists(abort_dir), "the shim re-created the directory the administrator moved");
	cr_assert_eq(rename(moved, abort_dir), 0);
	touch(marker("b"));
	cr_expect(h_wait_gone(seg("b"), 2000), "the directory was not used again once back");
	cr_expect(h_exists(seg("a")));
	cr_assert_eq(h_finish(&p, &err), 0);
	cr_expect_eq(h_occurrences(err, "was moved or removed"), 1, "%s", err);
}

/* The marker comes a moment before the process exits: the abort came while
 * it lived, so it is honoured before the process goes. */
Test(markers, abort_just_before_exit_is_honoured)
{
	const char *argv[] = {h_bin("SG_SHMTOOL"), "shm", seg("last") + 8, "4096", "touch", marker("last"), NULL};

	cr_assert_eq(mkdir(abort_dir, 0755), 0);
	cr_assert_eq(h_run(argv, h_shim_env(abort_dir, "{req}_{int}_{int}", NULL), NULL), 0);
	cr_expect(!h_exists(seg("last")), "an abort just before exit was lost");
}
