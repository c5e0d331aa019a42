/* Another local user against the abort directory: squatting it, planting
 * names in it, swapping it for a symlink.  Run as root, with a second,
 * unprivileged user as the attacker (tests/integration/harness.h). */
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
	prefix = h_prefix("host");
	abort_dir = h_str("/dev/shm/%sabort", prefix);
}

static void teardown(void)
{
	h_cleanup(prefix);
}

TestSuite(hostile, .init = setup, .fini = teardown, .timeout = 30);

static const char *seg(const char *req)
{
	return h_str("/dev/shm/%s%s_0_0", prefix, req);
}

static const char *marker(const char *dir, const char *req)
{
	return h_str("%s/%s%s", dir, prefix, req);
}

/* Runs argv as the attacker, asserting success. */
static void as_attacker(const struct h_user *u, const char *const *argv)
{
	char *out, *err;

	cr_assert_eq(h_output_as(u, argv, NULL, &out, &err), 0, "%s as %s: %s", argv[0], u->name, err);
}

static int abort_cli(const char *dir, const char *req, char **err)
{
	const char *argv[] = {h_bin("SG_CLI"), "abort", "--abort-dir", dir, h_str("%s%s", prefix, req), NULL};
	char *out;

	return h_output(argv, NULL, &out, err);
}

static void touch(const char *path)
{
	int fd = open(path, O_CREAT | O_WRONLY, 0644);
	cr_assert_geq(fd, 0, "cannot create %s", path);
	close(fd);
}

/* The attacker makes the abort directory before root's pipeline does, then
 * renames root's marker for one request to another's name. */
Test(hostile, squatted_abort_dir_is_refused_by_the_shim_and_the_cli)
{
	const struct h_user *u = h_hostile_user();
	const char *mk[] = {"/bin/mkdir", "-m", "0755", abort_dir, NULL};
	const char *mv[] = {"/bin/mv", marker(abort_dir, "gone"), marker(abort_dir, "victim"), NULL};
	const char *argv[] = {h_bin("SG_SHMTOOL"), "shm", seg("victim") + 8, "4096", "shm", seg("gone") + 8, "4096",
			      "wait", NULL};
	struct h_proc p;
	char *err;

	as_attacker(u, mk);
	p = h_start_ready(argv, h_shim_env(abort_dir, "{req}_{int}_{int}", NULL));
	cr_expect(h_wait_stderr(&p, "belongs to another user", 1000), "the shim did not refuse the directory");
	cr_expect_eq(abort_cli(abort_dir, "gone", &err), 1, "shmguard abort used a directory of another user");
	cr_expect(strstr(err, "belongs to another user"), "%s", err);
	/* Root writes the marker by hand (root may write anywhere). */
	touch(marker(abort_dir, "gone"));
	as_attacker(u, mv);
	usleep(300 * 1000);
	cr_expect(h_exists(seg("victim")), "a marker renamed by another user swept a live request");
	cr_expect(h_exists(seg("gone")), "a marker in another user's directory was obeyed");
	cr_assert_eq(h_finish(&p, NULL), 0);
}

/* In a directory all may write to (root's, sticky), the attacker plants a
 * FIFO, or a file of their own, under a request's name. */
Test(hostile, names_planted_in_a_shared_directory_are_reported_not_waited_on)
{
	const struct h_user *u = h_hostile_user();
	const char *fifo[] = {"/usr/bin/mkfifo", marker(abort_dir, "fifo"), NULL};
	const char *file[] = {"/usr/bin/touch", marker(abort_dir, "file"), NULL};
	long t0;
	char *err;

	cr_assert_eq(mkdir(abort_dir, 0755), 0);
	cr_assert_eq(chmod(abort_dir, 01777), 0);
	as_attacker(u, fifo);
	as_attacker(u, file);
	t0 = h_now_ms();
	cr_expect_eq(abort_cli(abort_dir, "fifo", &err), 1, "a FIFO was taken for a marker");
	cr_expect_lt(h_now_ms() - t0, 5000, "shmguard abort waited on a FIFO");
	cr_expect(strstr(err, "a FIFO"), "%s", err);
	cr_expect_eq(abort_cli(abort_dir, "file", &err), 1, "another user's file was taken for a marker");
	cr_expect(strstr(err, "is not a marker the shims accept"), "%s", err);
}

/* The attacker owns the parent of root's abort directory and swaps the
 * directory, again and again, with a symlink to a directory of root's that
 * holds old files.  Expiry (the shim's and the CLI's) must never follow it. */
Test(hostile, abort_dir_swapped_for_a_symlink_is_never_followed)
{
	const struct h_user *u = h_hostile_user();
	const char *parent = h_str("/dev/shm/%sparent", prefix), *victim = h_str("/dev/shm/%svictim", prefix);
	const char *dir = h_str("%s/abort", parent), *link = h_str("%s/link", parent);
	const char *mk[] = {"/bin/mkdir", "-m", "0755", parent, NULL};
	const char *ln[] = {"/bin/ln", "-s", victim, link, NULL};
	const char *flip[] = {h_bin("SG_SHMTOOL"), "flip", dir, link, "3000", NULL};
	const char *argv[] = {h_bin("SG_SHMTOOL"), "shm", seg("a") + 8, "4096", "wait", NULL};
	const char *old = h_str("%s/old", victim);
	struct timespec ages[2] = {{.tv_sec = time(NULL) - 3600}, {.tv_sec = time(NULL) - 3600}};
	struct h_proc p, flipper;
	char *err;

	cr_assert_eq(mkdir(victim, 0755), 0);
	touch(old);
	cr_assert_eq(utimensat(AT_FDCWD, old, ages, 0), 0);
	as_attacker(u, mk);
	as_attacker(u, ln);
	/* The shim makes and stamps root's directory inside the attacker's. */
	p = h_start_ready(argv, h_shim_env(dir, "{req}_{int}_{int}", "SHMGUARD_ABORT_TTL=1", NULL));
	flipper = h_spawn_as(u, flip, NULL);
	for (long end = h_now_ms() + 3000; h_now_ms() < end;) {
		abort_cli(dir, "x", &err);
		usleep(50 * 1000);
	}
	cr_assert_eq(h_finish(&flipper, &err), 0, "%s", err);
	cr_expect(h_exists(old), "expiry followed the symlink and removed another directory's file");
	cr_expect(!h_exists(marker(victim, "x")), "shmguard abort wrote through the symlink");
	cr_assert_eq(h_finish(&p, NULL), 0);
}
