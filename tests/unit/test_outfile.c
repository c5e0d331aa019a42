/* The output writer (host/outfile.c) in a directory of its own: what it
 * replaces, what it refuses, and that nothing of it is left behind.  The
 * attack by another user is in tests/integration/test_hostile.c. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "outfile.h"

static char dir[64];

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/sgt-outfile-XXXXXX");
	cr_assert(mkdtemp(dir));
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_expect_eq(system(cmd), 0);
}

TestSuite(outfile, .init = setup, .fini = teardown, .timeout = 10);

static const char *at(const char *name)
{
	static char paths[4][128];
	static int n;
	char *p = paths[n++ % 4];

	snprintf(p, 128, "%s/%s", dir, name);
	return p;
}

static char *slurp(const char *path)
{
	static char buf[256];
	int fd = open(path, O_RDONLY);
	ssize_t n;

	cr_assert_geq(fd, 0, "%s missing", path);
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	cr_assert_geq(n, 0);
	buf[n] = '\0';
	return buf;
}

static void put(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

/* Names in the directory, "." and ".." not counted. */
static int entries(void)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	cr_assert(d);
	while ((e = readdir(d)))
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	closedir(d);
	return n;
}

Test(outfile, writes_a_new_file_and_replaces_an_old_one_whole)
{
	char err[SG_OUTFILE_ERR_MAX];
	struct stat st;

	cr_assert_eq(sg_outfile_replace(at("r.json"), "first\n", 6, 0644, SG_OUTFILE_FSYNC, err, sizeof(err)), 0, "%s",
		     err);
	cr_expect_str_eq(slurp(at("r.json")), "first\n");
	put(at("old"), "a longer old content\n");
	cr_assert_eq(sg_outfile_replace(at("old"), "new\n", 4, 0644, 0, err, sizeof(err)), 0, "%s", err);
	cr_expect_str_eq(slurp(at("old")), "new\n", "not truncated to what was written");
	cr_assert_eq(stat(at("old"), &st), 0);
	cr_expect_eq(st.st_mode & 07777, 0644, "the mode asked for, not the old file's");
	cr_expect_eq(entries(), 2, "a temporary file was left behind");
}

Test(outfile, refuses_a_symlink_a_fifo_and_a_directory_and_leaves_them)
{
	char err[SG_OUTFILE_ERR_MAX];
	struct sg_outfile f;
	struct stat st;

	put(at("secret"), "root only\n");
	cr_assert_eq(symlink(at("secret"), at("link")), 0);
	cr_assert_eq(mkfifo(at("fifo"), 0666), 0);
	cr_assert_eq(mkdir(at("dir"), 0755), 0);
	cr_expect_eq(sg_outfile_replace(at("link"), "x", 1, 0644, 0, err, sizeof(err)), -EEXIST);
	cr_expect(strstr(err, "symbolic link"), "%s", err);
	cr_expect_str_eq(slurp(at("secret")), "root only\n");
	cr_expect_eq(lstat(at("link"), &st), 0);
	cr_expect(S_ISLNK(st.st_mode));
	cr_expect_eq(sg_outfile_open(&f, at("fifo"), 0644, 0, err, sizeof(err)), -EEXIST, "a FIFO must not block or be used");
	cr_expect(strstr(err, "FIFO"), "%s", err);
	cr_expect_eq(sg_outfile_replace(at("dir"), "x", 1, 0644, 0, err, sizeof(err)), -EEXIST);
	cr_expect(strstr(err, "directory"), "%s", err);
	cr_expect_eq(entries(), 4, "a temporary file was left behind");
}

Test(outfile, a_symlink_planted_after_the_open_is_replaced_not_followed)
{
	char err[SG_OUTFILE_ERR_MAX];
	struct sg_outfile f;
	struct stat st;

	put(at("secret"), "root only\n");
	cr_assert_eq(sg_outfile_open(&f, at("r.json"), 0644, 0, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(write(f.fd, "{}\n", 3), 3);
	cr_assert_eq(symlink(at("secret"), at("r.json")), 0);
	/* The commit says so; the secret is untouched either way. */
	cr_expect_eq(sg_outfile_commit(&f, 0, err, sizeof(err)), -EEXIST);
	cr_expect(strstr(err, "symbolic link"), "%s", err);
	cr_expect_str_eq(slurp(at("secret")), "root only\n");
	cr_expect_eq(lstat(at("r.json"), &st), 0);
	cr_expect(S_ISLNK(st.st_mode));
	cr_expect_eq(entries(), 2, "a temporary file was left behind");
}

Test(outfile, a_discarded_file_leaves_the_target_as_it_was)
{
	char err[SG_OUTFILE_ERR_MAX];
	struct sg_outfile f;

	put(at("r.json"), "before\n");
	cr_assert_eq(sg_outfile_open(&f, at("r.json"), 0644, 0, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(write(f.fd, "after\n", 6), 6);
	cr_expect_eq(entries(), 2, "the new file is beside the target");
	sg_outfile_discard(&f);
	cr_expect_str_eq(slurp(at("r.json")), "before\n");
	cr_expect_eq(entries(), 1);
}

Test(outfile, dash_is_stdout_only_when_asked)
{
	char err[SG_OUTFILE_ERR_MAX];
	struct sg_outfile f;
	char cwd[4096];

	cr_assert_eq(sg_outfile_open(&f, "-", 0644, SG_OUTFILE_STDOUT, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(f.fd, STDOUT_FILENO);
	cr_expect_eq(sg_outfile_commit(&f, SG_OUTFILE_FSYNC, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(fcntl(STDOUT_FILENO, F_GETFD), 0, "stdout was closed");
	/* Without the flag, "-" is a file name like any other. */
	cr_assert(getcwd(cwd, sizeof(cwd)));
	cr_assert_eq(chdir(dir), 0);
	cr_expect_eq(sg_outfile_replace("-", "x", 1, 0644, 0, err, sizeof(err)), 0, "%s", err);
	cr_expect_str_eq(slurp(at("-")), "x");
	cr_assert_eq(chdir(cwd), 0);
}

Test(outfile, a_missing_or_symlinked_directory_is_a_reason)
{
	char err[SG_OUTFILE_ERR_MAX];

	cr_expect_eq(sg_outfile_replace(at("none/r.json"), "x", 1, 0644, 0, err, sizeof(err)), -ENOENT);
	cr_expect(strstr(err, "No such file"), "%s", err);
	cr_assert_eq(mkdir(at("real"), 0755), 0);
	cr_assert_eq(symlink(at("real"), at("alias")), 0);
	cr_expect_eq(sg_outfile_replace(at("alias/r.json"), "x", 1, 0644, 0, err, sizeof(err)), -ELOOP);
	cr_expect(strstr(err, "symbolic link"), "%s", err);
	cr_expect_eq(sg_outfile_replace(at("real/"), "x", 1, 0644, 0, err, sizeof(err)), -EISDIR);
}

Test(outfile, append_adds_to_a_plain_file_and_refuses_the_rest)
{
	char err[SG_OUTFILE_ERR_MAX];
	int fd;

	put(at("summary"), "other step\n");
	cr_assert_geq(fd = sg_outfile_append(at("summary"), err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(write(fd, "ours\n", 5), 5);
	close(fd);
	cr_expect_str_eq(slurp(at("summary")), "other step\nours\n");
	put(at("secret"), "root only\n");
	cr_assert_eq(symlink(at("secret"), at("link")), 0);
	cr_expect_eq(sg_outfile_append(at("link"), err, sizeof(err)), -ELOOP);
	cr_assert_eq(link(at("secret"), at("hard")), 0);
	cr_expect_eq(sg_outfile_append(at("hard"), err, sizeof(err)), -EEXIST);
	cr_expect(strstr(err, "hard links"), "%s", err);
	cr_assert_eq(mkfifo(at("fifo"), 0666), 0);
	cr_expect_eq(sg_outfile_append(at("fifo"), err, sizeof(err)), -ENXIO, "a FIFO must not block or be used");
	cr_expect_str_eq(slurp(at("secret")), "root only\n");
}

/* A caller's checked directory (a marker's abort directory): the file is
 * made in it by name, and the directory stays the caller's, open. */
Test(outfile, open_at_writes_into_the_callers_directory_and_leaves_it_open)
{
	char err[SG_OUTFILE_ERR_MAX];
	struct sg_outfile f;
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	cr_assert_geq(dfd, 0);
	cr_expect_eq(sg_outfile_open_at(&f, dfd, "a/b", 0644, 0, err, sizeof(err)), -EINVAL, "a path is not a name");
	cr_expect_eq(sg_outfile_open_at(&f, dfd, "..", 0644, 0, err, sizeof(err)), -EINVAL);
	cr_assert_eq(sg_outfile_open_at(&f, dfd, "marker", 0644, 0, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(sg_outfile_commit(&f, SG_OUTFILE_FSYNC, err, sizeof(err)), 0, "%s", err);
	cr_expect_str_eq(slurp(at("marker")), "");
	cr_expect_eq(fcntl(dfd, F_GETFD), FD_CLOEXEC, "the caller's directory was closed");
	cr_expect_eq(entries(), 1);
	close(dfd);
}
