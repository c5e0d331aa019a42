/* Ownership journals in a root's own directory, ROOT/.shmguard (issue 33):
 * used where an operator made it a directory owned by root with mode 1777,
 * by the shim, ls, sweep and abort; anything else by that name is never
 * written into, never read, and said; and a .shmguard swapped for a
 * symlink after the journal was made is never followed.  Roots are ramfs
 * (no user xattrs: only the journals speak) in the test's private mount
 * namespace, or directories of this test's own under /dev/shm. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "journal.h"

static const char *prefix, *abort_dir, *root;

static void setup(void)
{
	h_setup("jdr", &prefix, &abort_dir, &root);
}

static void teardown(void)
{
	h_teardown(prefix, root);
}

TestSuite(journal_dir, .init = setup, .fini = teardown, .timeout = 90);

#define UNTRUSTED "is not a directory owned by root with mode 1777"

static const char *jdir(void)
{
	return h_in(root, SG_JOURNAL_DIR);
}

static const char **env_for(const char *r)
{
	return h_shim_env(abort_dir, "{req}_{int}_{int};vllm_offload_{req}.mmap", h_str("SHMGUARD_SHM_ROOTS=%s", r),
			  NULL);
}

/* `shmguard CMD --root ROOT` with up to two more arguments; its stderr in
 * *err when err is not NULL. */
static int cli(char **out, char **err, const char *cmd, const char *a1, const char *a2)
{
	const char *argv[] = {h_bin("SG_CLI"), cmd, "--root", root, a1, a2, NULL};
	return h_output(argv, NULL, out, err);
}

static int sweep_dead(char **out, char **err)
{
	return cli(out, err, "sweep", "--ignore-unreadable", "--dead");
}

/* `ls --json`, parsed (its text in *out). */
static json_t *ls_json(char **out)
{
	json_t *j;

	cr_assert_eq(cli(out, NULL, "ls", "--json", NULL), 0, "%s", *out);
	j = json_loads(*out, 0, NULL);
	cr_assert(j, "%s", *out);
	return j;
}

/* The request ls --json shows for root's file name, "-" when untagged. */
static const char *request_of(const char *name)
{
	const char *req = "-";
	char *out;
	json_t *j = ls_json(&out), *f;
	size_t i;

	json_array_foreach(json_object_get(j, "files"), i, f) {
		const char *path = json_string_value(json_object_get(f, "path"));
		json_t *tag = json_object_get(f, "tag");
		cr_assert(path, "%s", out);
		cr_assert(!strstr(path, SG_JOURNAL_PREFIX), "ls lists a journal: %s", out);
		if (strcmp(path, h_in(root, name)) == 0 && json_is_object(tag))
			req = h_str("%s", json_string_value(json_object_get(tag, "request")));
	}
	json_decref(j);
	return req;
}

/* The paths ls --json gives as untrusted_journal_dirs, one a line ("" none). */
static const char *untrusted_dirs(void)
{
	const char *paths = "";
	char *out;
	json_t *j = ls_json(&out), *d;
	size_t i;

	cr_assert(json_is_array(json_object_get(j, "untrusted_journal_dirs")), "%s", out);
	json_array_foreach(json_object_get(j, "untrusted_journal_dirs"), i, d)
		paths = h_str("%s%s%s", paths, i ? "\n" : "", json_string_value(json_object_get(d, "path")) ?: "?");
	h_expect_json_documented(j, "ls");
	json_decref(j);
	return paths;
}

/* A directory made as root (this test) with mode exactly mode. */
static void make_dir(const char *dir, mode_t mode)
{
	cr_assert_eq(mkdir(dir, 0700), 0, "mkdir %s: %s", dir, strerror(errno));
	cr_assert_eq(chmod(dir, mode), 0);
}

/* A pid that ran and is gone, for a creator that is dead. */
static pid_t dead_pid(void)
{
	pid_t dead = fork();

	if (dead == 0)
		_exit(0);
	cr_assert_eq(waitpid(dead, NULL, 0), dead);
	return dead;
}

/* root's file name (4 KiB) and, in dir, a journal of root's saying a dead
 * creator made it for request req: what sweep --dead acts on only if it
 * reads that journal. */
static void plant_in(const char *dir, const char *name, const char *req)
{
	h_plant_journal(root, name, req, sg_self_pidns(), dead_pid(), 1);
	cr_assert_eq(rename(h_str("%s/" SG_JOURNAL_PREFIX "%s", root, name),
			    h_str("%s/" SG_JOURNAL_PREFIX "%s", dir, name)), 0, "%s", strerror(errno));
}

/* The shim makes its journal in a trusted .shmguard, not in the root; ls
 * and sweep --dead read the journals there (the shim's, and one of a dead
 * creator), reclaim the dead creator's file by its record and then its
 * journal, and leave a live creator's file. */
Test(journal_dir, a_trusted_directory_holds_the_journals_and_ls_and_sweep_read_them)
{
	const char *live_name = h_str("vllm_offload_%slive.mmap", prefix), *dead_name = h_str("%sdead_0_0", prefix);
	const char *argv[] = {h_bin("SG_SHMTOOL"), "open", h_in(root, live_name), "65536", "wait", NULL};
	struct h_proc p;
	char *out, *err;

	h_mount_root(root, "ramfs", "mode=1777", teardown);
	make_dir(jdir(), 01777);
	p = h_start_ready(argv, env_for(root));
	cr_expect_eq(h_count(jdir(), SG_JOURNAL_PREFIX), 1, "the shim's journal is not in %s", jdir());
	cr_expect_eq(h_count(root, SG_JOURNAL_PREFIX), 0, "the shim made its journal in the root");
	cr_expect_str_eq(request_of(live_name), h_str("%slive", prefix), "ls did not read the journal in %s", jdir());
	cr_expect_str_eq(untrusted_dirs(), "");

	plant_in(jdir(), dead_name, h_str("%sdead", prefix));
	cr_expect_str_eq(request_of(dead_name), h_str("%sdead", prefix));
	cr_assert_eq(sweep_dead(&out, &err), 0, "%s%s", out, err);
	cr_expect(!h_exists(h_in(root, dead_name)), "the dead creator's file was kept: %s", out);
	cr_expect(h_exists(h_in(root, live_name)), "a live creator's file was removed: %s", out);
	cr_expect(!h_exists(h_str("%s/" SG_JOURNAL_PREFIX "%s", jdir(), dead_name)),
		  "the dead creator's journal stayed: %s", out);
	cr_expect(strstr(out, SG_JOURNAL_DIR "/" SG_JOURNAL_PREFIX), "sweep does not name the journal's place: %s", out);
	cr_expect(!strstr(err, UNTRUSTED), "%s", err);

	/* Its file unlinked, the live creator takes its journal at exit,
	 * through the directory. */
	cr_assert_eq(unlink(h_in(root, live_name)), 0);
	cr_assert_eq(h_finish(&p, &err), 0, "%s", err);
	cr_expect(!strstr(err, "cannot") && !strstr(err, UNTRUSTED), "the shim complained: %s", err);
	cr_expect_eq(h_count(jdir(), SG_JOURNAL_PREFIX), 0, "the shim left its journal in %s", jdir());
}

/* What is made at .shmguard for an untrusted case; where the planted
 * journal goes (NULL: nowhere it could be read). */
enum untrusted { OTHER_OWNER, NOT_STICKY, SYMLINK, REGULAR_FILE };

static const char *make_untrusted(enum untrusted how)
{
	const char *target = h_in(root, h_str("%starget", prefix));
	int fd;

	switch (how) {
	case OTHER_OWNER:
		make_dir(jdir(), 01777);
		cr_assert_eq(chown(jdir(), h_hostile_user()->uid, h_hostile_user()->gid), 0);
		return jdir();
	case NOT_STICKY:
		make_dir(jdir(), 0777);
		return jdir();
	case SYMLINK:
		/* To a directory that would itself be trusted. */
		make_dir(target, 01777);
		cr_assert_eq(symlink(target, jdir()), 0);
		return target;
	case REGULAR_FILE:
		fd = open(jdir(), O_CREAT | O_EXCL | O_WRONLY, 01777);
		cr_assert_geq(fd, 0);
		close(fd);
		return NULL;
	}
	return NULL;
}

/* The shim keeps its journal in the root and says why, once; ls and sweep
 * never read a journal there (a dead creator's file it names is kept) and
 * say so; nothing is written into it. */
static void untrusted(enum untrusted how)
{
	const char *a = h_in(root, h_str("%sa_0_0", prefix)), *b = h_in(root, h_str("%sb_0_0", prefix));
	const char *argv[] = {h_bin("SG_SHMTOOL"), "open", a, "4096", "open", b, "4096", NULL};
	const char *dead_name = h_str("%sdead_0_0", prefix), *there;
	char *out, *err;

	h_mount_root(root, "ramfs", "mode=1777", teardown);
	there = make_untrusted(how);
	cr_assert_eq(h_run(argv, env_for(root), &err), 0, "%s", err);
	cr_expect_eq(h_count(root, SG_JOURNAL_PREFIX), 1, "the shim's journal is not in the root: %s", err);
	if (there)
		cr_expect_eq(h_count(there, SG_JOURNAL_PREFIX), 0, "the shim wrote into %s", there);
	cr_expect_eq(h_occurrences(err, UNTRUSTED), 1, "the shim did not say it once: %s", err);
	cr_expect(strstr(err, h_str("%s " UNTRUSTED ": journals stay in %s", jdir(), root)), "%s", err);
	cr_expect_str_eq(request_of(h_str("%sa_0_0", prefix)), h_str("%sa", prefix));

	if (!there)
		return;
	plant_in(there, dead_name, h_str("%sdead", prefix));
	cr_expect_str_eq(request_of(dead_name), "-", "ls read a journal in an untrusted %s", jdir());
	cr_assert_eq(cli(&out, &err, "ls", NULL, NULL), 0, "%s", out);
	cr_expect(strstr(err, h_str("%s " UNTRUSTED ": the journals in it are not read", jdir())), "ls: %s", err);
	cr_expect_str_eq(untrusted_dirs(), jdir(), "ls --json does not say it");
	cr_assert_eq(sweep_dead(&out, &err), 0, "%s%s", out, err);
	cr_expect(h_exists(h_in(root, dead_name)), "sweep believed a journal in an untrusted %s: %s", jdir(), out);
	cr_expect(h_exists(h_str("%s/" SG_JOURNAL_PREFIX "%s", there, dead_name)), "sweep removed it: %s", out);
	cr_expect(strstr(err, UNTRUSTED), "sweep: %s", err);
}

Test(journal_dir, a_directory_of_another_owner_is_not_used)
{
	untrusted(OTHER_OWNER);
}

Test(journal_dir, a_directory_without_the_sticky_bit_is_not_used)
{
	untrusted(NOT_STICKY);
}

Test(journal_dir, a_symlink_is_not_followed)
{
	untrusted(SYMLINK);
}

Test(journal_dir, a_regular_file_is_not_used)
{
	untrusted(REGULAR_FILE);
}

/* A root of over 4096 entries (REQUEST_SWEEP_MAX_ENTRIES), one file of
 * request x whose creator has exited: no shim is left to sweep it, so
 * only abort's own sweep can.  mode: .shmguard's, 0 for none. */
static const char *big_root(mode_t mode, char **out)
{
	const char *big = h_str("/dev/shm/%sbig", prefix), *f = h_str("%s/%sx_0_0", big, prefix);
	const char *creator[] = {h_bin("SG_SHMTOOL"), "fill", big, "4100", "open", f, "4096", NULL};
	const char *env[] = {h_str("SHMGUARD_SHM_ROOTS=%s", big), NULL};
	const char *argv[] = {h_bin("SG_CLI"), "abort", "--abort-dir", abort_dir, h_str("%sx", prefix), NULL};
	char *err;

	make_dir(big, 0755);
	if (mode)
		make_dir(h_in(big, SG_JOURNAL_DIR), mode);
	cr_assert_eq(h_run(creator, env_for(big), &err), 0, "%s", err);
	cr_assert(h_exists(f));
	cr_assert_eq(h_output(argv, env, out, &err), 0, "%s", err);
	return f;
}

Test(journal_dir, abort_sweeps_a_root_of_any_size_from_a_trusted_directory)
{
	char *out;
	const char *f = big_root(01777, &out);

	cr_expect(!h_exists(f), "abort did not sweep: %s", out);
	cr_expect(strstr(out, "swept 1 file, 4096 bytes"), "%s", out);
	cr_expect(strstr(out, h_str("journals read from /dev/shm/%sbig/" SG_JOURNAL_DIR ", not by listing the root",
				     prefix)), "%s", out);
	cr_expect(!strstr(out, "left to the shims"), "%s", out);
}

Test(journal_dir, abort_lists_the_root_when_the_directory_is_not_trusted)
{
	char *out;
	const char *f = big_root(0777, &out);

	cr_expect(h_exists(f), "abort swept a root over its bounds: %s", out);
	cr_expect(strstr(out, h_str("; /dev/shm/%sbig left to the shims (over 4096 entries", prefix)), "%s", out);
	cr_expect(!strstr(out, "journals read from"), "%s", out);
}

/* The journal's apparent size (one file in dir), -1 when there is none. */
static long long journal_size(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	struct stat st;
	long long size = -1;

	cr_assert(d);
	while ((e = readdir(d)))
		if (sg_journal_name(e->d_name) && fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0)
			size = st.st_size;
	closedir(d);
	return size;
}

/* After the shim made its journal in .shmguard, the directory is moved
 * away and a symlink to it put in its place (as root: in a sticky root only
 * root may; a root others may write in would let them).  Growing the
 * journal (600 records) and removing it at exit (no file left) go through
 * .shmguard: the symlink is not followed, so the journal neither grows nor
 * goes, where following it would reach the very same journal. */
Test(journal_dir, a_symlink_swapped_in_later_is_not_followed)
{
	const char *moved = h_in(root, h_str("%smoved", prefix)), *lk = h_in(root, h_str("%slk_0_", prefix));
	const char *a = h_in(root, h_str("%sa_0_0", prefix));
	const char *argv[] = {h_bin("SG_SHMTOOL"), "open", a, "4096", "wait", "files", lk, "600",
			      "unlinks", lk, "600", "unlink", a, NULL};
	struct h_proc p;
	long long size;
	char *err;

	h_mount_root(root, "ramfs", "mode=1777", teardown);
	make_dir(jdir(), 01777);
	p = h_start_ready(argv, env_for(root));
	cr_assert_eq(h_count(jdir(), SG_JOURNAL_PREFIX), 1);
	size = journal_size(jdir());
	cr_assert_eq(rename(jdir(), moved), 0);
	cr_assert_eq(symlink(moved, jdir()), 0);
	cr_assert_eq(h_finish(&p, &err), 0, "%s", err);
	cr_expect_eq(journal_size(moved), size, "the journal grew through the symlink: %s", err);
	cr_expect_eq(h_count(moved, SG_JOURNAL_PREFIX), 1, "the journal was removed through the symlink: %s", err);
	cr_expect_eq(h_count(root, SG_JOURNAL_PREFIX), 0, "%s", err);
}
