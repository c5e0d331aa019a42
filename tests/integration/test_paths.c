/* Where a file is, not how its path is spelled: the shim follows every
 * creation directly in a root, whatever the spelling or the call that made
 * the name (open, rename, link, O_TMPFILE, sem_open), follows nothing
 * outside, and changes no call's result or errno. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"

static const char *prefix, *abort_dir, *work;

static void setup(void)
{
	h_setup("paths", &prefix, &abort_dir, NULL);
	/* A directory on the shm filesystem that is no root: temporary names
	 * live here, and link() can reach a root from it. */
	work = h_str("/dev/shm/%swork", prefix);
	cr_assert_eq(mkdir(work, 0755), 0);
}

/* What the tests make outside the prefix's names in /dev/shm. */
static void teardown(void)
{
	h_cleanup(prefix);
	h_cleanup(h_str("sem.%s", prefix));
	unlink(h_str("/tmp/%sescape", prefix));
	unlink(h_str("/tmp/%slink", prefix));
	unlink(h_str("/tmp/%svictim/data", prefix));
	rmdir(h_str("/tmp/%svictim", prefix));
	umount2(h_str("/tmp/%sbind", prefix), MNT_DETACH);
	rmdir(h_str("/tmp/%sbind", prefix));
}

TestSuite(paths, .init = setup, .fini = teardown, .timeout = 30);

static const char *shm(const char *name)
{
	return h_str("/dev/shm/%s%s", prefix, name);
}

static const char **explicit_env(const char *req)
{
	return h_shim_env(abort_dir, NULL, h_str("SHMGUARD_REQUEST_ID=%s%s", prefix, req), NULL);
}

/* An explicit request owns whatever this process creates in a root, and
 * nothing else: "/dev/shm/../../tmp/x" is /tmp/x. */
Test(paths, dot_dot_out_of_a_root_is_not_tracked)
{
	const char *outside = h_str("/tmp/%sescape", prefix);
	const char *argv[] = {h_bin("SG_SHMTOOL"),
			      "open", h_str("/dev/shm/../../tmp/%sescape", prefix), "4096",
			      "open", shm("sentinel"), "4096",
			      "wait", NULL};
	struct h_proc p = h_start_ready(argv, explicit_env("req"));

	h_abort(abort_dir, h_str("%sreq", prefix), NULL);
	cr_expect(h_wait_gone(shm("sentinel"), 1000), "the request's own file was not swept");
	cr_expect(h_exists(outside), "the abort unlinked a file in /tmp");
	cr_assert_eq(h_finish(&p, NULL), 0);
}

/* Another user's symlink in /dev/shm leads the program's creation into a
 * directory of root's: that file is not in a root, and no abort touches it
 * (recorded by its spelling, a sweep would have followed the symlink). */
Test(paths, a_hostile_symlink_does_not_lead_a_sweep_out_of_the_root)
{
	const struct h_user *u = h_hostile_user();
	const char *victim = h_str("/tmp/%svictim", prefix), *evil = shm("evil");
	const char *ln[] = {"/bin/ln", "-s", victim, evil, NULL};
	const char *argv[] = {h_bin("SG_SHMTOOL"),
			      "open", h_str("%s/data", evil), "4096",
			      "open", shm("sentinel"), "4096",
			      "wait", NULL};
	struct h_proc p;
	char *out, *err;

	cr_assert_eq(mkdir(victim, 0755), 0);
	cr_assert_eq(h_output_as(u, ln, NULL, &out, &err), 0, "%s", err);
	p = h_start_ready(argv, explicit_env("req"));
	h_abort(abort_dir, h_str("%sreq", prefix), NULL);
	cr_expect(h_wait_gone(shm("sentinel"), 1000), "the request's own file was not swept");
	cr_expect(h_exists(h_str("%s/data", victim)), "the abort unlinked a file in root's directory");
	cr_assert_eq(h_finish(&p, NULL), 0);
}

/* The same directory by other spellings: each is a creation in /dev/shm. */
Test(paths, other_spellings_of_a_root_are_tracked)
{
	const char *link_dir = h_str("/tmp/%slink", prefix);
	const char *argv[] = {h_bin("SG_SHMTOOL"),
			      "open", h_str("/dev/shm/./%sdot", prefix), "4096",
			      "open", h_str("//dev//shm//%sslashes", prefix), "4096",
			      "open", h_str("%s/../%sup", work, prefix), "4096",
			      "open", h_str("%s/%ssymlinked", link_dir, prefix), "4096",
			      "cd", "/dev/shm",
			      "open", h_str("%srelative", prefix), "4096",
			      "wait", NULL};
	const char *names[] = {"dot", "slashes", "up", "symlinked", "relative"};
	struct h_proc p;

	cr_assert_eq(symlink("/dev/shm", link_dir), 0);
	p = h_start_ready(argv, explicit_env("req"));
	h_abort(abort_dir, h_str("%sreq", prefix), NULL);
	for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++)
		cr_expect(h_wait_gone(shm(names[k]), 1000), "%s not swept", names[k]);
	cr_assert_eq(h_finish(&p, NULL), 0);
}

/* A bind mount of /dev/shm is /dev/shm: the directory's device and inode
 * are the root's.  (A mount namespace of the test's own keeps the mount
 * from the rest of the machine.) */
Test(paths, a_bind_mount_of_a_root_is_tracked)
{
	const char *bind = h_str("/tmp/%sbind", prefix);
	const char *argv[] = {h_bin("SG_SHMTOOL"), "open", h_str("%s/%sbound", bind, prefix), "4096", "wait", NULL};
	struct h_proc p;

	if (geteuid() != 0) {
		cr_assert(!getenv("CI"), "needs root (mount) and CI is set");
		cr_skip_test("needs root to mount");
	}
	h_private_mounts(teardown);
	cr_assert_eq(mkdir(bind, 0755), 0);
	cr_assert_eq(mount("/dev/shm", bind, NULL, MS_BIND, NULL), 0, "mount: %s", strerror(errno));
	p = h_start_ready(argv, explicit_env("req"));
	h_abort(abort_dir, h_str("%sreq", prefix), NULL);
	cr_expect(h_wait_gone(shm("bound"), 1000), "a file created through a bind mount was not swept");
	cr_assert_eq(h_finish(&p, NULL), 0);
}

/* What each creating call returns, and errno after a success, are the
 * same with and without the shim: directories, symlinks (a dangling one's
 * target is created), FIFOs, "." and "..", O_PATH, existing files. */
static const char **invisibility_script(const char *side)
{
	const char *dir = shm(h_str("%s-dir", side)), *file = shm(h_str("%s-file", side));
	const char **argv = calloc(128, sizeof(*argv));
	size_t n = 0;

	cr_assert_eq(mkdir(dir, 0755), 0);
	cr_assert_eq(close(creat(file, 0600)), 0);
	cr_assert_eq(symlink(shm(h_str("%s-target", side)), shm(h_str("%s-dangling", side))), 0);
	cr_assert_eq(symlink(file, shm(h_str("%s-symlink", side))), 0);
	cr_assert_eq(mkfifo(shm(h_str("%s-fifo", side)), 0600), 0);
	argv[n++] = h_bin("SG_SHMTOOL");
#define TRY(how, path, flags) (argv[n++] = "try", argv[n++] = how, argv[n++] = path, argv[n++] = flags)
	TRY("open", dir, "creat,rdonly");
	TRY("open", dir, "creat,rdwr");
	TRY("open", h_str("%s/", dir), "creat,rdonly");
	TRY("open", h_str("%s/.", dir), "creat,rdonly");
	TRY("shm", ".", "creat,rdonly");
	TRY("shm", "..", "creat,rdonly");
	TRY("shm", ".", "creat,rdwr");
	TRY("open", file, "creat,rdwr");
	TRY("open", file, "creat,rdonly,trunc");
	TRY("open", file, "creat,excl,rdwr");
	TRY("shm", h_str("%s%s-file", prefix, side), "creat,rdwr");
	TRY("open", shm(h_str("%s-dangling", side)), "creat,rdwr");
	TRY("open", shm(h_str("%s-symlink", side)), "creat,rdwr");
	TRY("open", shm(h_str("%s-fifo", side)), "creat,rdwr");
	TRY("open", shm(h_str("%s-opath", side)), "creat,path");
	TRY("open", shm(h_str("%s-new", side)), "creat,rdwr");
	TRY("sem", h_str("%s%s-sem", prefix, side), "creat");
	TRY("sem", h_str("%s%s-sem", prefix, side), "creat");
	TRY("sem", h_str("%s%s-sem", prefix, side), "creat,excl");
	TRY("sem", h_str("%s%s-nosem", prefix, side), "rdwr");
	TRY("rename", file, shm(h_str("%s-renamed", side)));
	TRY("link", shm(h_str("%s-renamed", side)), shm(h_str("%s-linked", side)));
	TRY("rename", shm(h_str("%s-renamed", side)), shm(h_str("%s-linked", side)));
	TRY("rename", shm(h_str("%s-gone", side)), shm(h_str("%s-linked", side)));
	TRY("link", shm(h_str("%s-linked", side)), dir);
#undef TRY
	argv[n] = NULL;
	return argv;
}

Test(paths, creating_calls_are_invisible)
{
	char *plain, *shimmed, *err;

	cr_assert_eq(h_output(invisibility_script("plain"), NULL, &plain, &err), 0, "%s", err);
	cr_assert_eq(h_output(invisibility_script("shim"), explicit_env("req"), &shimmed, &err), 0, "%s", err);
	cr_expect_str_eq(shimmed, plain, "with the shim:\n%s\nwithout:\n%s", shimmed, plain);
	cr_expect(strncmp(plain, "fail EISDIR\n", 12) == 0, "%s", plain);
	cr_expect(strstr(plain, "ok reg errno=ENOTTY\nok reg errno=ENOTTY\nfail EEXIST\n"), "%s", plain);
	cr_expect(strstr(plain, "ok errno=ENOTTY\nok errno=ENOTTY\nok errno=ENOTTY\nfail ENOENT\nfail EEXIST\n"), "%s",
		  plain);
	cr_expect(h_exists(shm("shim-target")), "a dangling symlink's target was not created");
	cr_expect(!h_exists(shm("shim-opath")), "O_PATH created a file");
}

/* A name made by rename or link is a creation of that name: the
 * atomic-publish pattern (a temporary name, then rename), link + unlink,
 * O_TMPFILE + linkat. */
Test(paths, names_made_by_rename_or_link_are_tracked)
{
	const char *argv[] = {h_bin("SG_SHMTOOL"),
			      "open", h_str("%s/tmp1", work), "4096",
			      "rename", h_str("%s/tmp1", work), shm("a_0_0"),
			      "open", shm("tmp.a1"), "4096",
			      "rename", shm("tmp.a1"), shm("a_0_1"),
			      "open", h_str("%s/tmp2", work), "4096",
			      "link", h_str("%s/tmp2", work), shm("a_0_2"),
			      "unlink", h_str("%s/tmp2", work),
			      "tmpfile", "/dev/shm", shm("a_0_3"), "4096",
			      "wait", NULL};
	struct h_proc p = h_start_ready(argv, h_shim_env(abort_dir, "{req}_{int}_{int}", NULL));

	h_abort(abort_dir, h_str("%sa", prefix), NULL);
	for (int k = 0; k < 4; k++)
		cr_expect(h_wait_gone(shm(h_str("a_0_%d", k)), 1000), "a_0_%d not swept", k);
	cr_assert_eq(h_finish(&p, NULL), 0);
}

/* Renamed within the roots, a file keeps the request it was created for. */
Test(paths, a_record_follows_its_file_when_renamed)
{
	const char *argv[] = {h_bin("SG_SHMTOOL"),
			      "shm", h_str("%sb_0_0", prefix), "4096",
			      "rename", shm("b_0_0"), shm("c_0_0"),
			      "shm", h_str("%sc_0_1", prefix), "4096",
			      "wait", NULL};
	struct h_proc p = h_start_ready(argv, h_shim_env(abort_dir, "{req}_{int}_{int}", NULL));

	h_abort(abort_dir, h_str("%sc", prefix), NULL);
	cr_assert(h_wait_gone(shm("c_0_1"), 1000), "c's own segment was not swept");
	cr_expect(h_exists(shm("c_0_0")), "the abort of c swept b's segment renamed to c_0_0");
	h_abort(abort_dir, h_str("%sb", prefix), NULL);
	cr_expect(h_wait_gone(shm("c_0_0"), 1000), "b's segment, renamed, was not swept with b");
	cr_assert_eq(h_finish(&p, NULL), 0);
}

/* Renamed out of the roots, a file is forgotten: when someone else brings
 * it back, it is theirs. */
Test(paths, a_name_renamed_out_of_the_roots_is_forgotten)
{
	const char *away = h_str("%s/d", work);
	const char *argv[] = {h_bin("SG_SHMTOOL"),
			      "shm", h_str("%sd_0_0", prefix), "4096",
			      "rename", shm("d_0_0"), away,
			      "shm", h_str("%sd_0_1", prefix), "4096",
			      "wait", NULL};
	struct h_proc p = h_start_ready(argv, h_shim_env(abort_dir, "{req}_{int}_{int}", NULL));

	cr_assert_eq(rename(away, shm("d_0_0")), 0);
	h_abort(abort_dir, h_str("%sd", prefix), NULL);
	cr_assert(h_wait_gone(shm("d_0_1"), 1000), "d's own segment was not swept");
	cr_expect(h_exists(shm("d_0_0")), "a file another process renamed into the root was swept");
	cr_assert_eq(h_finish(&p, NULL), 0);
}

/* RENAME_EXCHANGE swaps two files' names: each record follows its file,
 * and a file that comes into a root is a creation of its name there. */
Test(paths, an_exchange_moves_both_names)
{
	const char *outside = h_str("%s/e_0_0", work);
	const char *argv[] = {h_bin("SG_SHMTOOL"),
			      "open", outside, "4096",
			      "shm", h_str("%sf_0_0", prefix), "4096",
			      "exchange", outside, shm("f_0_0"),
			      "wait", NULL};
	struct h_proc p = h_start_ready(argv, h_shim_env(abort_dir, "{req}_{int}_{int}", NULL));

	/* The record of f's old file went with it out of the root: the test
	 * brings that file back under another name; not the shim's any more. */
	cr_assert_eq(rename(outside, shm("g_0_0")), 0);
	h_abort(abort_dir, h_str("%sf", prefix), NULL);
	cr_expect(h_wait_gone(shm("f_0_0"), 1000), "the file that came in as f_0_0 was not swept with f");
	cr_assert_eq(h_finish(&p, NULL), 0);
	cr_expect(h_exists(shm("g_0_0")), "the file that left the root was swept");
}

/* glibc makes /dev/shm/sem.NAME with a temporary name and link() of its
 * own, out of the wrappers' sight: sem_open itself is followed. */
Test(paths, semaphores_are_tracked)
{
	const char *sem = h_str("/dev/shm/sem.%ssem", prefix), *other = h_str("/dev/shm/sem.%sother", prefix);
	const char *argv[] = {h_bin("SG_SHMTOOL"),
			      "req", h_str("%sother", prefix),
			      "sem", h_str("/%sother", prefix),
			      "req", h_str("%ssem", prefix),
			      "sem", h_str("/%ssem", prefix),
			      "wait", NULL};
	struct h_proc p = h_start_ready(argv, h_shim_env(abort_dir, NULL, NULL));

	h_abort(abort_dir, h_str("%ssem", prefix), NULL);
	cr_expect(h_wait_gone(sem, 1000), "the request's semaphore was not swept");
	cr_expect(h_exists(other), "another request's semaphore was swept");
	cr_assert_eq(h_finish(&p, NULL), 0);
}
