/* The marker rule (core/marker.c), the one the shim, `shmguard abort`,
 * --follow and the auditor share: which entries of an abort directory are
 * markers, for which euid. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "marker.h"

static char dir[64];
static int dfd = -1;

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/sgt-%d-marker-XXXXXX", (int)getpid());
	cr_assert_not_null(mkdtemp(dir));
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	cr_assert_geq(dfd, 0);
}

static void teardown(void)
{
	char cmd[128];

	close(dfd);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_expect_eq(system(cmd), 0);
}

TestSuite(marker, .init = setup, .fini = teardown);

static void touch(const char *name)
{
	int fd = openat(dfd, name, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);

	cr_assert_geq(fd, 0, "%s", name);
	close(fd);
}

/* Why name is no marker, or NULL; the error it comes with must agree. */
static const char *refusal(const char *name, struct stat *st)
{
	const char *why;
	int ret = sg_marker_check(dfd, name, geteuid(), st, &why);

	cr_expect((ret == 0) == (why == NULL), "%s: %d, %s", name, ret, why ? why : "no reason");
	return ret < 0 ? why : NULL;
}

Test(marker, a_regular_file_with_one_link_is_one)
{
	struct stat st;

	touch("req-1");
	cr_expect_null(refusal("req-1", &st));
	cr_expect(S_ISREG(st.st_mode));
}

Test(marker, a_hard_link_symlink_or_fifo_is_none)
{
	struct stat st;

	touch("target");
	cr_assert_eq(linkat(dfd, "target", dfd, "linked", 0), 0);
	cr_expect_str_eq(refusal("linked", &st) ?: "", "more than one link (a hard link may name any file)");
	cr_expect_eq(st.st_nlink, 2, "the entry is described");
	cr_expect_not_null(refusal("target", &st), "the other name of a linked file is none either");
	cr_assert_eq(symlinkat("target", dfd, "sym"), 0);
	cr_expect_str_eq(refusal("sym", &st) ?: "", "not a regular file");
	cr_assert_eq(mkfifoat(dfd, "fifo", 0644), 0);
	cr_expect_str_eq(refusal("fifo", &st) ?: "", "not a regular file");
}

Test(marker, another_users_file_is_none_for_root_and_for_them)
{
	struct stat st;

	if (geteuid() != 0)
		cr_skip_test("chown needs root");
	touch("theirs");
	cr_assert_eq(fchownat(dfd, "theirs", 4242, 4242, 0), 0);
	cr_expect_str_eq(refusal("theirs", &st) ?: "", "foreign owner");
	/* A file of root's counts for every euid; one of 4242's for 4242. */
	touch("roots");
	const char *why;
	cr_expect_eq(sg_marker_check(dfd, "roots", 4343, &st, &why), 0);
	cr_expect_eq(sg_marker_check(dfd, "theirs", 4343, &st, &why), -EACCES);
}

Test(marker, names_that_are_no_request_ids_and_gone_files_are_not_examined)
{
	struct stat st;

	touch(SG_ABORT_DIR_STAMP);
	cr_expect_not_null(refusal(SG_ABORT_DIR_STAMP, &st));
	cr_expect_eq(st.st_mode, 0);
	cr_expect_not_null(refusal("..", &st));
	cr_expect_eq(st.st_mode, 0);
	cr_expect_str_eq(refusal("never-made", &st) ?: "", "gone");
	cr_expect_eq(st.st_mode, 0);
	const char *why;
	cr_expect_eq(sg_marker_check(dfd, "never-made", geteuid(), &st, &why), -ENOENT);
	cr_expect_eq(sg_marker_check(dfd, "..", geteuid(), &st, &why), -EINVAL);
}

Test(marker, nothing_counts_in_a_directory_the_shims_refuse)
{
	struct stat st;
	const char *why;
	int fd;

	touch("req-1");
	cr_assert_eq(chmod(dir, 0777), 0);
	cr_expect_str_eq(refusal("req-1", &st) ?: "", "its directory is not trusted");
	cr_expect_eq(st.st_mode, 0);
	fd = sg_abort_dir_open_trusted(dir, false, geteuid(), &st, &why);
	cr_expect_eq(fd, -EACCES);
	cr_expect_str_eq(why ?: "", "is world-writable without the sticky bit");
	/* The sticky bit makes it one all may share. */
	cr_assert_eq(chmod(dir, 01777), 0);
	cr_expect_null(refusal("req-1", &st));
	fd = sg_abort_dir_open_trusted(dir, false, geteuid(), &st, &why);
	cr_expect_geq(fd, 0, "%s", why ?: "");
	close(fd);
}

Test(marker, an_abort_directory_that_cannot_be_opened_says_why)
{
	char path[128];
	struct stat st;
	const char *why;

	snprintf(path, sizeof(path), "%s/missing", dir);
	cr_expect_eq(sg_abort_dir_open(path, false), -ENOENT);
	cr_expect_eq(sg_abort_dir_open_trusted(path, false, geteuid(), &st, &why), -ENOENT);
	cr_expect_null(why, "not a refusal: nothing was there to refuse");
	cr_assert_eq(symlinkat(".", dfd, "link"), 0);
	snprintf(path, sizeof(path), "%s/link", dir);
	cr_expect_eq(sg_abort_dir_open(path, false), -ELOOP, "a symbolic link is never followed, and said to be one");
	cr_expect_eq(sg_abort_dir_open(path, true), -ELOOP);
}
