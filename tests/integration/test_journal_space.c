/* What the ownership journals cost and leave behind: the program's own
 * space on a small root, a journal that could not be opened at first, a
 * process that ends with _exit(), and what `ls` and `sweep` pay for files
 * others name like journals (sparse ones, or just names). */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "journal.h"

static const char *prefix, *abort_dir, *root;

static void setup(void)
{
	h_setup("jsp", &prefix, &abort_dir, &root);
}

static void teardown(void)
{
	h_teardown(prefix, root);
}

TestSuite(journal_space, .init = setup, .fini = teardown, .timeout = 120);

static void mount_root(const char *type, const char *options)
{
	h_mount_root(root, type, options, teardown);
}

static const char **env_for(void)
{
	return h_shim_env(abort_dir, "{req}_{int}_{int}", h_str("SHMGUARD_SHM_ROOTS=%s", root), NULL);
}

static int sweep(char **out, const char *a1, const char *a2, const char *a3)
{
	const char *argv[] = {h_bin("SG_CLI"), "sweep", "--root", root, "--ignore-unreadable", a1, a2, a3, NULL};
	return h_output(argv, NULL, out, NULL);
}

/* The journals in root: their number, and the bytes of the root they take. */
static int journals(long long *bytes)
{
	DIR *d = opendir(root);
	struct dirent *e;
	struct stat st;
	int n = 0;

	cr_assert(d);
	*bytes = 0;
	while ((e = readdir(d)))
		if (sg_journal_name(e->d_name) && fstatat(dirfd(d), e->d_name, &st, 0) == 0) {
			n++;
			*bytes += (long long)st.st_blocks * 512;
		}
	closedir(d);
	return n;
}

/* Issue 17 finding 11: 14,000 lock files created and unlinked on an 8 MiB
 * root.  The journal may not take the program's space while they live, and
 * must give it back when they are gone: the program's next 6 MiB segment,
 * written through a mapping, must not die of SIGBUS. */
Test(journal_space, lock_files_leave_the_program_its_space_on_a_small_root)
{
	const char *locks = h_in(root, h_str("%slk_0_", prefix));
	const char *argv[] = {h_bin("SG_SHMTOOL"), "files", locks, "14000", "unlinks", locks, "14000", "wait",
			      "open", h_in(root, h_str("%sbig_0_0", prefix)), "6291456", NULL};
	struct h_proc p;
	long long bytes;
	char *err;

	mount_root("tmpfs", "size=8m");
	p = h_start_ready(argv, env_for());
	cr_expect_eq(journals(&bytes), 1);
	cr_expect_leq(bytes, 68 << 10, "the journal kept %lld bytes after its files were gone", bytes);
	cr_assert_eq(h_finish(&p, &err), 0, "the program failed (SIGBUS is 135): %s", err);
	cr_expect(h_exists(h_in(root, h_str("%sbig_0_0", prefix))));
	cr_expect(strstr(err, "stops at"), "the journal's limit was not said: %s", err);
}

/* Issue 17 finding 9: at the open-file limit the journal cannot be made.
 * It is tried again, and once descriptors are free a crash's files are
 * reclaimed by sweep --dead. */
Test(journal_space, a_journal_that_could_not_be_made_is_tried_again)
{
	const char *first = h_in(root, h_str("%sa_0_0", prefix)), *later = h_in(root, h_str("%sb_0_0", prefix));
	const char *argv[] = {h_bin("SG_SHMTOOL"), "nofile", "4", "open", first, "4096", "nofile", "64",
			      "open", later, "4096", "wait", NULL};
	struct h_proc p;
	char *out, *err;

	mount_root("ramfs", "mode=1777");
	p = h_start_ready(argv, env_for());
	kill(p.pid, SIGKILL);
	h_finish(&p, &err);
	cr_expect(strstr(err, "cannot keep an ownership journal"), "%s", err);
	cr_expect_eq(h_occurrences(err, "cannot keep an ownership journal"), 1, "said more than once: %s", err);
	cr_assert_eq(sweep(&out, "--dead", NULL, NULL), 0, "%s", out);
	cr_expect(!h_exists(later), "the file made after the limit was lifted was not reclaimed: %s", out);
	cr_expect(h_exists(first), "a file nobody recorded was swept: %s", out);
}

/* Issue 22: Python multiprocessing children end with os._exit(), which
 * runs no destructor.  Each makes and removes a segment; afterwards the
 * root (a private tmpfs at /dev/shm) holds no file of shmguard's.  (The
 * pool is closed and joined: leaving a `with Pool()` block terminates its
 * workers with SIGTERM instead, and a killed process runs no code at all.) */
Test(journal_space, multiprocessing_children_leave_no_journal)
{
	const char *script =
		"import multiprocessing as mp, os, sys\n"
		"from multiprocessing import shared_memory\n"
		"def work(i):\n"
		"    s = shared_memory.SharedMemory(name=sys.argv[1] + 'mp_0_%d' % i, create=True, size=4096)\n"
		"    mine = '.shmguard-journal-%d-' % os.getpid()\n"
		"    recorded = any(n.startswith(mine) for n in os.listdir('/dev/shm'))\n"
		"    s.buf[0] = 1\n"
		"    s.close()\n"
		"    s.unlink()\n"
		"    return recorded\n"
		"if __name__ == '__main__':\n"
		"    ctx = mp.get_context('fork')\n"
		"    pool = ctx.Pool(4)\n"
		"    print('recorded', sum(pool.map(work, range(16))))\n"
		"    pool.close()\n"
		"    pool.join()\n";
	const char *argv[] = {"/usr/bin/python3", "-c", script, prefix, NULL};
	const char **env;
	char *out, *err;
	int n = 0;

	h_private_mounts(teardown);
	cr_assert_eq(mount("none", "/dev/shm", "tmpfs", 0, "mode=1777"), 0, "mount: %s", strerror(errno));
	env = h_shim_env("/dev/shm/abort", "{req}_{int}_{int}", NULL);
	cr_assert_eq(h_output(argv, env, &out, &err), 0, "%s", err);
	/* The control: each child kept a journal while its segment lived. */
	cr_expect(strstr(out, "recorded 16"), "%s%s", out, err);
	DIR *d = opendir("/dev/shm");
	struct dirent *e;
	cr_assert(d);
	while ((e = readdir(d)))
		n += strncmp(e->d_name, ".shmguard", 9) == 0;
	closedir(d);
	cr_expect_eq(n, 0, "shmguard files left in /dev/shm: %d", n);
	umount2("/dev/shm", MNT_DETACH);
}

/* The bytes a command read (rchar of /proc/PID/io, looked at before it is
 * reaped); its exit status through status. */
static long long bytes_read_by(const char *const *argv, int *status)
{
	long long rchar = -1;
	char line[128];
	siginfo_t si;
	FILE *f;
	pid_t pid = fork();

	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);
		dup2(null, 1);
		dup2(null, 2);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	cr_assert_gt(pid, 0);
	cr_assert_eq(waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT), 0);
	f = fopen(h_str("/proc/%d/io", (int)pid), "r");
	cr_assert(f, "/proc/%d/io: %s", (int)pid, strerror(errno));
	while (fgets(line, sizeof(line), f))
		sscanf(line, "rchar: %lld", &rchar);
	fclose(f);
	cr_assert_eq(waitpid(pid, status, 0), pid);
	return rchar;
}

/* Issue 17 finding 14: another user plants 200 sparse 64 MiB files named
 * like journals, half with a journal's intact header claiming every slot.
 * ls and sweep read their headers, not their 12.8 GB. */
Test(journal_space, sparse_journals_of_another_user_cost_a_header_each)
{
	const struct h_user *u = h_hostile_user();
	struct sg_journal_head head;
	const char *ls[] = {h_bin("SG_CLI"), "ls", "--root", root, NULL};
	const char *sw[] = {h_bin("SG_CLI"), "sweep", "--dead", "--ignore-unreadable", "--root", root, NULL};
	long long got;
	int status;

	cr_assert_eq(mkdir(root, 01777), 0);
	cr_assert_eq(chmod(root, 01777), 0);
	sg_journal_head_init(&head, 4242, 1, 1, 1);
	head.slots_used = UINT32_MAX;
	/* Planted by the other user: files of theirs, made by them. */
	pid_t planter = fork();
	if (planter == 0) {
		if (setgid(u->gid) < 0 || setuid(u->uid) < 0)
			_exit(2);
		for (int i = 0; i < 200; i++) {
			char path[512];
			snprintf(path, sizeof(path), "%s/" SG_JOURNAL_PREFIX "x%d", root, i);
			int fd = open(path, O_CREAT | O_EXCL | O_WRONLY, 0644);
			if (fd < 0 || (i % 2 && write(fd, &head, sizeof(head)) != sizeof(head)) ||
			    ftruncate(fd, 64 << 20) < 0)
				_exit(1);
			close(fd);
		}
		_exit(0);
	}
	cr_assert_eq(waitpid(planter, &status, 0), planter);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the other user could not plant the files");

	got = bytes_read_by(ls, &status);
	cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	cr_expect_lt(got, 16 << 20, "ls read %lld bytes", got);
	got = bytes_read_by(sw, &status);
	cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	cr_expect_lt(got, 16 << 20, "sweep read %lld bytes", got);
	cr_expect_eq(h_count(root, SG_JOURNAL_PREFIX), 200, "sweep removed another user's files");
}

/* Issue 17 finding 18: a file named like a journal that is not one is
 * shown by ls (as foreign) and by doctor --need, and no sweep removes it. */
Test(journal_space, a_file_named_like_a_journal_is_shown_and_never_swept)
{
	const char *cache = h_in(root, SG_JOURNAL_PREFIX "cache");
	const char *ls[] = {h_bin("SG_CLI"), "ls", "--root", root, NULL};
	const char *need[] = {h_bin("SG_CLI"), "doctor", "--need", "1G", "--root", root, NULL};
	static char data[1 << 20];
	char *out, *err;
	int fd;

	mount_root("tmpfs", "size=4m");
	fd = open(cache, O_CREAT | O_EXCL | O_WRONLY, 0644);
	cr_assert_geq(fd, 0);
	memset(data, 'c', sizeof(data));
	cr_assert_eq(write(fd, data, sizeof(data)), (ssize_t)sizeof(data));
	close(fd);

	cr_assert_eq(h_output(ls, NULL, &out, &err), 0, "%s", err);
	cr_expect(strstr(out, SG_JOURNAL_PREFIX "cache"), "ls does not show it: %s", out);
	cr_expect(strstr(out, "foreign"), "%s", out);
	h_output(need, NULL, &out, &err);
	cr_expect(strstr(out, "named like shmguard's journals"), "doctor --need does not count it: %s%s", out, err);
	cr_assert_eq(sweep(&out, "--dead", NULL, NULL), 0, "%s", out);
	cr_assert_eq(sweep(&out, "--glob", "*", "--older-than=0"), 0, "%s", out);
	cr_expect(h_exists(cache), "a sweep removed it: %s", out);
	cr_expect(strstr(out, "never removed"), "%s", out);
}

/* A creator killed with 1,500 records whose files others then removed
 * leaves a journal bigger than its owner's budget (64 KiB and 1 KiB per
 * file left): left unread, it used to stay in RAM for good.  It is read a
 * few blocks at a time instead: kept while one of its records names a
 * file still there, removed once none does. */
Test(journal_space, a_dead_creators_journal_too_big_to_read_whole_goes_once_it_names_nothing)
{
	const char *files = h_in(root, h_str("%smany_0_", prefix));
	const char *argv[] = {h_bin("SG_SHMTOOL"), "files", files, "1500", "wait", NULL};
	struct h_proc p;
	long long bytes;
	char *out;

	mount_root("tmpfs", "size=64m");
	p = h_start_ready(argv, env_for());
	kill(p.pid, SIGKILL);
	h_finish(&p, NULL);
	/* Others remove all but the last file, without the shim. */
	for (int i = 0; i < 1499; i++)
		cr_assert_eq(unlink(h_str("%s%d", files, i)), 0);
	cr_assert_eq(journals(&bytes), 1);
	cr_assert_gt(bytes, 68 << 10, "the journal (%lld bytes) is within its owner's budget: nothing to show", bytes);
	/* A sweep that removes nothing still reaps journals. */
	cr_assert_eq(sweep(&out, "--request", "nobody's", NULL), 0, "%s", out);
	cr_expect_eq(journals(&bytes), 1, "a journal naming a file still there was removed: %s", out);
	cr_expect(h_exists(h_str("%s1499", files)));
	cr_assert_eq(unlink(h_str("%s1499", files)), 0);
	cr_assert_eq(sweep(&out, "--request", "nobody's", NULL), 0, "%s", out);
	cr_expect_eq(journals(&bytes), 0, "the dead creator's journal names nothing, yet it stayed: %s", out);
	cr_expect(strstr(out, "ownership journal of a dead creator"), "%s", out);
}
