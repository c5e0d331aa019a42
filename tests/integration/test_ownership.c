/* Ownership is exact: a sweep takes the files created for that request and
 * nothing else, whatever their names look like. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "harness.h"

static const char *prefix, *abort_dir, *root;

static void setup(void)
{
	/* A private shm root: names in it need no prefix, so the seeds'
	 * short names (abc, 0) can be used as they are. */
	h_setup("own", &prefix, &abort_dir, &root);
	cr_assert_eq(mkdir(root, 0755), 0);
}

static void teardown(void)
{
	h_cleanup(prefix);
}

TestSuite(ownership, .init = setup, .fini = teardown, .timeout = 30);

Test(ownership, seed_collisions_are_not_swept)
{
	const char *argv[] = {h_bin("SG_SHMTOOL"),
			      "open", h_in(root, "abc_0_0"), "4096",
			      "open", h_in(root, "abc_def_0_0"), "4096",
			      "open", h_in(root, "abc_1_2_0_0"), "4096",
			      "open", h_in(root, "other-req_0_0"), "4096",
			      "open", h_in(root, "0_0_0"), "4096",
			      "open", h_in(root, "0_1_0"), "4096",
			      "wait", NULL};
	const char **env = h_shim_env(abort_dir, "{req}_{int}_{int};{req}_{int}_{int}_{int}_{int}",
				      h_str("SHMGUARD_SHM_ROOTS=%s", root), NULL);
	struct h_proc p = h_start_ready(argv, env);
	char *err;

	h_abort(abort_dir, "abc", "0", "abc_1_2", NULL);
	cr_expect(h_wait_gone(h_in(root, "abc_0_0"), 1000), "abc's own segment survived");
	cr_expect(h_wait_gone(h_in(root, "0_0_0"), 1000), "0's chunk 0 survived");
	cr_expect(h_wait_gone(h_in(root, "0_1_0"), 1000), "0's chunk 1 survived");
	/* The sweeps are done (one watcher, events in order): the rest stays. */
	cr_expect(h_exists(h_in(root, "abc_def_0_0")), "abort of abc swept abc_def's segment");
	cr_expect(h_exists(h_in(root, "other-req_0_0")), "abort of 0 swept other-req's chunk 0");
	cr_expect(h_exists(h_in(root, "abc_1_2_0_0")), "an ambiguous name was swept");
	cr_assert_eq(h_finish(&p, &err), 0);
	cr_expect_eq(h_occurrences(err, "is ambiguous"), 1, "the ambiguous name is logged once: %s", err);
	cr_expect(strstr(err, "ambiguous 1,"), "the ambiguous name is counted: %s", err);
}

/* Explicit beats patterns: thread request, then process request. */
Test(ownership, explicit_requests_beat_patterns)
{
	const char *a = h_str("/dev/shm/%sa_0_0", prefix), *b = h_str("/dev/shm/%sb_0_0", prefix),
		   *s = h_str("/dev/shm/%ss_0_0", prefix);
	const char *argv[] = {h_bin("SG_SHMTOOL"),
			      "shm", a + 8, "4096",
			      "req", h_str("%sthread", prefix),
			      "shm", b + 8, "4096",
			      "req", h_str("%ssentinel", prefix),
			      "shm", s + 8, "4096",
			      "wait", NULL};
	const char **env = h_shim_env(abort_dir, "{req}_{int}_{int}", h_str("SHMGUARD_REQUEST_ID=%sproc", prefix), NULL);
	struct h_proc p = h_start_ready(argv, env);

	/* The names' pattern requests own nothing; the sentinel's sweep comes
	 * after theirs, so once it is done theirs are too. */
	h_abort(abort_dir, h_str("%sa", prefix), h_str("%sb", prefix), h_str("%ssentinel", prefix), NULL);
	cr_assert(h_wait_gone(s, 1000), "sentinel not swept");
	cr_expect(h_exists(a), "a pattern-derived request swept a file tagged explicitly");
	cr_expect(h_exists(b), "a pattern-derived request swept a file tagged explicitly");

	h_abort(abort_dir, h_str("%sproc", prefix), NULL);
	cr_expect(h_wait_gone(a, 1000), "SHMGUARD_REQUEST_ID's file not swept");
	cr_expect(h_exists(b), "the process request swept the thread request's file");
	h_abort(abort_dir, h_str("%sthread", prefix), NULL);
	cr_expect(h_wait_gone(b, 1000), "shmguard_set_request's file not swept");
	cr_assert_eq(h_finish(&p, NULL), 0);
}

/* Someone else unlinked the name and made a new file under it: the second
 * cleanup must not remove the newcomer. */
Test(ownership, a_name_that_now_belongs_to_another_file_is_left)
{
	const char *x = h_str("/dev/shm/%sx_0_0", prefix);
	const char *argv[] = {h_bin("SG_SHMTOOL"), "shm", x + 8, "4096", "wait", NULL};
	struct h_proc p = h_start_ready(argv, h_shim_env(abort_dir, "{req}_{int}_{int}", NULL));
	struct stat before, after;
	int fd;

	cr_assert_eq(unlink(x), 0);
	fd = open(x, O_CREAT | O_EXCL | O_RDWR, 0600);
	cr_assert_geq(fd, 0);
	cr_assert_eq(fstat(fd, &before), 0);
	close(fd);
	h_abort(abort_dir, h_str("%sx", prefix), NULL);
	cr_assert(h_wait_stderr(&p, "now refers to another file", 1000), "the shim did not notice the new inode");
	cr_assert_eq(stat(x, &after), 0, "the newcomer was unlinked");
	cr_expect_eq(after.st_ino, before.st_ino);
	cr_assert_eq(h_finish(&p, NULL), 0);
}

/* Every entry point that can create a file tags it. */
Test(ownership, open_family_is_tracked)
{
	const char *argv[] = {h_bin("SG_SHMTOOL"),
			      "open", h_in(root, "r_0_0"), "4096",
			      "open64", h_in(root, "r_0_1"), "4096",
			      "openat", h_in(root, "r_0_2"), "4096",
			      "creat", h_in(root, "r_0_3"), "4096",
			      "wait", NULL};
	const char **env = h_shim_env(abort_dir, "{req}_{int}_{int}", h_str("SHMGUARD_SHM_ROOTS=%s", root), NULL);
	struct h_proc p = h_start_ready(argv, env);

	h_abort(abort_dir, "r", NULL);
	for (int c = 0; c < 4; c++)
		cr_expect(h_wait_gone(h_in(root, h_str("r_0_%d", c)), 1000), "r_0_%d not swept", c);
	cr_assert_eq(h_finish(&p, NULL), 0);
}

/* Only an abort sweeps: a process that finishes leaves its files to the
 * next stage, and nobody removes them after it is gone. */
Test(ownership, natural_exit_never_sweeps)
{
	const char *x = h_str("/dev/shm/%sdone_0_0", prefix);
	const char *argv[] = {h_bin("SG_SHMTOOL"), "shm", x + 8, "4096", NULL};

	cr_assert_eq(h_run(argv, h_shim_env(abort_dir, "{req}_{int}_{int}", NULL), NULL), 0);
	cr_expect(h_exists(x), "a finished process's segment was removed");
}

/* A process maps an 8 KiB segment of request REQ and waits; the request is
 * aborted; the process unmaps it first if asked, and exits.  Returns its
 * stderr. */
static char *map_then_abort(const char *req, bool unmap)
{
	const char *m = h_str("/dev/shm/%s%s_0_0", prefix, req);
	const char *argv[] = {h_bin("SG_SHMTOOL"), "map", m + 8, "8192", ",", "wait", unmap ? "," : NULL, "unmap", NULL};
	struct h_proc p = h_start_ready(argv, h_shim_env(abort_dir, "{req}_{int}_{int}", NULL));
	char *err;

	h_abort(abort_dir, h_str("%s%s", prefix, req), NULL);
	cr_assert(h_wait_gone(m, 1000));
	cr_assert(h_wait_stderr(&p, "8192 mapped bytes stay in use", 1000), "mapped bytes not reported");
	cr_assert_eq(h_finish(&p, &err), 0);
	cr_expect(strstr(err, "swept 1 (8192 bytes)"), "summary: %s", err);
	return err;
}

/* Unlinking frees nothing while a mapping lives: the shim says so. */
Test(ownership, unlinked_but_mapped_bytes_are_reported)
{
	char *err = map_then_abort("m", false);
	cr_expect(strstr(err, "still mapped 8192 bytes"), "summary: %s", err);
}

/* The figure follows the program: unmapping after the sweep frees the bytes. */
Test(ownership, mapped_bytes_drop_when_unmapped)
{
	char *err = map_then_abort("go", true);
	cr_expect(strstr(err, "still mapped 0 bytes"), "summary: %s", err);
}

/* A late put is swept before the program maps it: mapped afterwards, its
 * bytes are counted as soon as the mapping is made. */
Test(ownership, late_put_mapped_after_its_sweep_is_counted)
{
	const char *m = h_str("/dev/shm/%slatemap_0_0", prefix);
	const char *argv[] = {h_bin("SG_SHMTOOL"), "map", m + 8, "12288", NULL};
	char *err;

	h_abort(abort_dir, h_str("%slatemap", prefix), NULL);
	cr_assert_eq(h_run(argv, h_shim_env(abort_dir, "{req}_{int}_{int}", NULL), &err), 0, "%s", err);
	cr_expect(!h_exists(m), "the late put survived");
	cr_expect(strstr(err, "late puts 1"), "summary: %s", err);
	cr_expect(strstr(err, "still mapped 12288 bytes"), "summary: %s", err);
}

/* SHMGUARD_TAG=xattr: the record is also written onto the file, for other
 * processes and the CLI: request, creator pid, start time and pid
 * namespace, creation time. */
Test(ownership, the_tag_is_written_onto_the_segment)
{
	const char *x = h_str("/dev/shm/%stagged_0_0", prefix);
	const char *argv[] = {h_bin("SG_SHMTOOL"), "shm", x + 8, "4096", "wait", NULL};
	struct h_proc p = h_start_ready(argv, h_shim_env(abort_dir, "{req}_{int}_{int}", "SHMGUARD_TAG=xattr", NULL));
	struct stat ns;
	char value[512] = "";
	ssize_t n = -1;

	for (long end = h_now_ms() + 1000; n < 0 && h_now_ms() < end; usleep(5000))
		n = getxattr(x, "user.shmguard", value, sizeof(value) - 1);
	cr_assert_gt(n, 0, "no user.shmguard tag on %s", x);
	value[n] = '\0';
	cr_expect(strncmp(value, h_str("shmguard/1 pid=%d start=", (int)p.pid), 20 + 4) == 0, "%s", value);
	cr_expect(strstr(value, h_str(" req=%stagged", prefix)) && value[n - 1] == 'd', "%s", value);
	cr_assert_eq(stat("/proc/self/ns/pid", &ns), 0);
	cr_expect(strstr(value, h_str(" ns=%llu ", (unsigned long long)ns.st_ino)), "%s", value);
	cr_expect_eq(h_count("/dev/shm", h_str(".shmguard-journal-%d-", (int)p.pid)), 0, "a journal besides the tag");
	cr_assert_eq(h_finish(&p, NULL), 0);
}

/* SHMGUARD_TAG=off: nothing is written onto the file or into a journal,
 * and this process's own record still sweeps it. */
Test(ownership, tag_off_writes_nothing_and_still_sweeps)
{
	const char *x = h_str("/dev/shm/%suntagged_0_0", prefix);
	const char *argv[] = {h_bin("SG_SHMTOOL"), "shm", x + 8, "4096", "wait", NULL};
	struct h_proc p = h_start_ready(argv, h_shim_env(abort_dir, "{req}_{int}_{int}", "SHMGUARD_TAG=off", NULL));
	char value[64], *err;

	cr_assert(h_exists(x));
	cr_expect_eq(getxattr(x, "user.shmguard", value, sizeof(value)), -1, "a tag was written");
	cr_expect_eq(errno, ENODATA);
	cr_expect_eq(h_count("/dev/shm", h_str(".shmguard-journal-%d-", (int)p.pid)), 0, "a journal was written");
	h_abort(abort_dir, h_str("%suntagged", prefix), NULL);
	cr_expect(h_wait_gone(x, 1000), "not swept without its tag");
	cr_assert_eq(h_finish(&p, &err), 0, "%s", err);
}
