/* Abort markers: who may write them, where, and for how long they count. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

static const char *prefix, *abort_dir;

static void setup(void)
{
	prefix = h_prefix("mark");
	abort_dir = h_str("/dev/shm/%sabort", prefix);
}

static void teardown(void)
{
	h_cleanup(prefix);
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

Test(markers, expired_markers_are_removed)
{
	struct timespec old[2] = {{.tv_sec = time(NULL) - 10}, {.tv_sec = time(NULL) - 10}};
	const char *env[] = {"SHMGUARD_ABORT_TTL=2", NULL};
	struct h_proc p;

	mkdir(abort_dir, 0755);
	touch(marker("old"));
	cr_assert_eq(utimensat(AT_FDCWD, marker("old"), old, 0), 0);
	touch(marker("fresh"));
	p = start(env);
	cr_expect(h_wait_gone(marker("old"), 3000), "an expired marker stayed");
	cr_expect(h_exists(marker("fresh")), "a fresh marker was removed");
	cr_assert_eq(h_finish(&p, NULL), 0);
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
