/* Who owns a file, as other processes learn it: the shim's ownership
 * journal on a root without user xattrs (ramfs), what `ls` and `sweep`
 * make of it, and records nobody should believe (another user's journal or
 * tag, a creator in another pid namespace). */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "journal.h"

static const char *prefix, *abort_dir, *root;

static void setup(void)
{
	h_setup("own", &prefix, &abort_dir, &root);
}

static void teardown(void)
{
	h_teardown(prefix, root);
}

TestSuite(owners, .init = setup, .fini = teardown, .timeout = 60);

/* A test that needs a root without user xattrs mounts a ramfs on root, in
 * its private mount namespace (h_mount_root): only the journal speaks there. */

static const char **env_for(const char *extra)
{
	return h_shim_env(abort_dir, "{req}_{int}_{int};vllm_offload_{req}.mmap", h_str("SHMGUARD_SHM_ROOTS=%s", root),
			  extra, NULL);
}

static void kill9(struct h_proc *p)
{
	kill(p->pid, SIGKILL);
	h_finish(p, NULL);
}

/* `shmguard CMD --root ROOT` with up to three more arguments.  This
 * sandbox's init cannot be read even by root: the sweeps say so. */
static int cli(char **out, const char *cmd, const char *a1, const char *a2, const char *a3)
{
	const char *argv[] = {h_bin("SG_CLI"), cmd, "--root", root, a1, a2, a3, NULL};
	return h_output(argv, NULL, out, NULL);
}

static int sweep(char **out, const char *a1, const char *a2)
{
	return cli(out, "sweep", "--ignore-unreadable", a1, a2);
}

/* The ls --json entry for name: its request and creator, "-" untagged. */
static void owner_of(const char *name, const char **req, int *pid, const char **state)
{
	char *out;
	json_t *j, *files, *f;
	size_t i;

	cr_assert_eq(cli(&out, "ls", "--json", NULL, NULL), 0, "%s", out);
	j = json_loads(out, 0, NULL);
	cr_assert(j, "%s", out);
	files = json_object_get(j, "files");
	*req = "-";
	*pid = 0;
	*state = "-";
	json_array_foreach(files, i, f) {
		const char *path = json_string_value(json_object_get(f, "path"));
		json_t *tag = json_object_get(f, "tag");
		cr_assert(path, "%s", out);
		cr_assert(!strstr(path, SG_JOURNAL_PREFIX), "ls lists a journal: %s", out);
		if (strcmp(path, h_in(root, name)) != 0 || !json_is_object(tag))
			continue;
		*req = h_str("%s", json_string_value(json_object_get(tag, "request")));
		*pid = (int)json_integer_value(json_object_get(tag, "creator_pid"));
		*state = h_str("%s", json_string_value(json_object_get(tag, "creator_state")));
	}
	json_decref(j);
}

static int journals(void)
{
	return h_count(root, SG_JOURNAL_PREFIX);
}

/* seed 001's restart case where xattrs are refused: the creator of
 * vllm_offload_e1.mmap is killed, and sweep --dead reclaims its files, not
 * a live process's, and then its journal. */
Test(owners, without_xattrs_ls_and_sweep_dead_read_the_journal)
{
	const char *e1 = h_str("%se1", prefix), *req;
	const char *argv[] = {h_bin("SG_SHMTOOL"), "open", h_in(root, h_str("vllm_offload_%s.mmap", e1)), "65536",
			      "open", h_in(root, h_str("%sa_0_0", prefix)), "4096", "wait", NULL};
	const char *other[] = {h_bin("SG_SHMTOOL"), "open", h_in(root, h_str("%sb_0_0", prefix)), "4096", "wait", NULL};
	struct h_proc creator, live;
	char *out, *err;
	int pid;
	const char *state;

	h_mount_root(root, "ramfs", "mode=1777", teardown);
	creator = h_start_ready(argv, env_for(NULL));
	live = h_start_ready(other, env_for(NULL));
	cr_expect_eq(journals(), 2);

	owner_of(h_str("vllm_offload_%s.mmap", e1), &req, &pid, &state);
	cr_expect_str_eq(req, e1);
	cr_expect_eq(pid, creator.pid);
	cr_expect_str_eq(state, "alive");
	owner_of(h_str("%sa_0_0", prefix), &req, &pid, &state);
	cr_expect_str_eq(req, h_str("%sa", prefix));

	kill9(&creator);
	owner_of(h_str("vllm_offload_%s.mmap", e1), &req, &pid, &state);
	cr_expect_str_eq(state, "dead");
	cr_assert_eq(sweep(&out, "--dead", NULL), 0, "%s", out);
	cr_expect(!h_exists(h_in(root, h_str("vllm_offload_%s.mmap", e1))), "%s", out);
	cr_expect(!h_exists(h_in(root, h_str("%sa_0_0", prefix))), "%s", out);
	cr_expect(h_exists(h_in(root, h_str("%sb_0_0", prefix))), "a live creator's file was swept: %s", out);
	cr_expect(strstr(out, "removed 2 files"), "%s", out);
	cr_expect_eq(journals(), 1, "the dead creator's journal stayed, or the live one's went: %s", out);

	/* The live one exits with its file still there: its journal stays. */
	cr_assert_eq(h_finish(&live, &err), 0, "%s", err);
	cr_expect_eq(journals(), 1);
	/* Any sweep that leaves a dead creator no file removes its journal. */
	cr_assert_eq(sweep(&out, "--request", h_str("%sb", prefix)), 0, "%s", out);
	cr_expect(!h_exists(h_in(root, h_str("%sb_0_0", prefix))), "%s", out);
	cr_expect_eq(journals(), 0, "%s", out);
	cr_expect(strstr(out, "ownership journal of a dead creator"), "%s", out);
}

/* A process whose files are all gone at exit takes its journal with it;
 * one the abort swept counts as gone. */
Test(owners, a_process_removes_its_journal_when_its_files_are_gone)
{
	const char *argv[] = {h_bin("SG_SHMTOOL"), "open", h_in(root, h_str("%sx_0_0", prefix)), "4096",
			      "open", h_in(root, h_str("%sy_0_0", prefix)), "4096", "unlink",
			      h_in(root, h_str("%sx_0_0", prefix)), "wait", NULL};
	struct h_proc p;
	char *err;

	h_mount_root(root, "ramfs", "mode=1777", teardown);
	p = h_start_ready(argv, env_for(NULL));
	cr_expect_eq(journals(), 1);
	h_abort(abort_dir, h_str("%sy", prefix), NULL);
	cr_expect(h_wait_gone(h_in(root, h_str("%sy_0_0", prefix)), 2000));
	cr_assert_eq(h_finish(&p, &err), 0, "%s", err);
	cr_expect_eq(journals(), 0, "%s", err);
}

/* Another user may write in a shared root: a journal of theirs naming
 * root's file, or a tag they wrote on a file they may write, is not
 * believed, and root's sweep --dead does not delete that file for them. */
Test(owners, another_users_journal_or_tag_is_not_believed)
{
	const struct h_user *u = h_hostile_user();
	struct sg_journal_head head;
	char rec[SG_JOURNAL_MAX_SPAN * SG_JOURNAL_SLOT];
	int span;
	const char *victim = h_in(root, "victim_0_0"), *control = h_in(root, "control_0_0");
	struct stat vst, cst;
	struct timespec now;
	uint64_t created;
	char *out;
	int fd, status;
	pid_t dead = fork();

	if (dead == 0)
		_exit(0);
	waitpid(dead, NULL, 0);
	cr_assert_eq(mkdir(root, 01777), 0);
	cr_assert_eq(chmod(root, 01777), 0);
	/* root's files: one anyone may write, one only root may. */
	fd = open(victim, O_CREAT | O_EXCL | O_RDWR, 0666);
	cr_assert_geq(fd, 0);
	cr_assert_eq(fchmod(fd, 0666), 0);
	cr_assert_eq(ftruncate(fd, 4096), 0);
	cr_assert_eq(fstat(fd, &vst), 0);
	close(fd);
	fd = open(control, O_CREAT | O_EXCL | O_RDWR, 0600);
	cr_assert_geq(fd, 0);
	cr_assert_eq(ftruncate(fd, 4096), 0);
	cr_assert_eq(fstat(fd, &cst), 0);
	close(fd);
	clock_gettime(CLOCK_REALTIME, &now);
	created = (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;

	/* The other user's journal, naming a dead creator for the victim. */
	sg_journal_head_init(&head, dead, 1, sg_self_pidns(), created);
	memset(&rec, 0, sizeof(rec));
	span = sg_journal_rec_commit(rec, vst.st_ino, created, h_str("%sforged", prefix), "victim_0_0");
	cr_assert_gt(span, 0);
	fd = open(h_in(root, SG_JOURNAL_PREFIX "forged"), O_CREAT | O_EXCL | O_WRONLY, 0644);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, &head, sizeof(head)), (ssize_t)sizeof(head));
	cr_assert_eq(write(fd, rec, span * SG_JOURNAL_SLOT), (ssize_t)(span * SG_JOURNAL_SLOT));
	cr_assert_eq(fchown(fd, u->uid, u->gid), 0);
	close(fd);
	/* The same claim in a journal of root's proves the test could fail:
	 * it is believed for root's control file. */
	memset(&rec, 0, sizeof(rec));
	span = sg_journal_rec_commit(rec, cst.st_ino, created, h_str("%sforged", prefix), "control_0_0");
	cr_assert_gt(span, 0);
	fd = open(h_in(root, SG_JOURNAL_PREFIX "roots"), O_CREAT | O_EXCL | O_WRONLY, 0644);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, &head, sizeof(head)), (ssize_t)sizeof(head));
	cr_assert_eq(write(fd, rec, span * SG_JOURNAL_SLOT), (ssize_t)(span * SG_JOURNAL_SLOT));
	close(fd);

	/* And a tag the other user writes on the victim, as that user. */
	const char *value = h_str("shmguard/1 pid=%d start=1 created=1 req=%sforged", (int)dead, prefix);
	pid_t child = fork();
	if (child == 0) {
		if (setgid(u->gid) < 0 || setuid(u->uid) < 0)
			_exit(2);
		_exit(setxattr(victim, "user.shmguard", value, strlen(value), 0) == 0 ? 0 : 1);
	}
	cr_assert_eq(waitpid(child, &status, 0), child);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the other user could not write the tag");

	cr_assert_eq(sweep(&out, "--dead", NULL), 0, "%s", out);
	cr_expect(h_exists(victim), "a forged record deleted root's file: %s", out);
	cr_expect(!h_exists(control), "root's own journal was not believed: %s", out);
	cr_assert_eq(sweep(&out, "--request", h_str("%sforged", prefix)), 0, "%s", out);
	cr_expect(h_exists(victim), "%s", out);
	cr_expect(h_exists(h_in(root, SG_JOURNAL_PREFIX "forged")), "sweep removed another user's journal: %s", out);
}

/* A creator in another pid namespace writes its pid there (1): from this
 * (the initial) pid namespace, every process is read with its namespace,
 * its pid there and its start time, so the creator is found while it runs
 * and proven gone once it is killed (issue 19). */
Test(owners, a_creator_in_another_pid_namespace_is_judged_from_the_initial_one)
{
	const char *argv[] = {"/usr/bin/unshare", "--pid", "--fork", h_bin("SG_SHMTOOL"), "open",
			      h_in(root, h_str("%sns_0_0", prefix)), "4096", "wait", NULL};
	const char *req, *state;
	struct h_proc p;
	char *out;
	int pid;

	if (geteuid() != 0) {
		cr_assert(!getenv("CI"), "needs root in CI");
		cr_skip_test("unshare --pid needs root");
	}
	cr_assert_eq(mkdir(root, 0755), 0);
	p = h_start_ready(argv, env_for("SHMGUARD_TAG=both"));
	owner_of(h_str("%sns_0_0", prefix), &req, &pid, &state);
	cr_expect_str_eq(req, h_str("%sns", prefix));
	cr_expect_eq(pid, 1, "the creator's pid, as its namespace numbers it");
	cr_expect_str_eq(state, "alive");
	cr_assert_eq(sweep(&out, "--dead", NULL), 0, "%s", out);
	cr_expect(h_exists(h_in(root, h_str("%sns_0_0", prefix))), "a live creator's file was swept: %s", out);
	cr_expect(strstr(out, "kept"), "%s", out);
	/* pid 1 of its namespace killed: the namespace ends with it.  (Killing
	 * unshare alone would leave it running until it read its stdin's end.) */
	char children[64] = "";
	FILE *f = fopen(h_str("/proc/%d/task/%d/children", (int)p.pid, (int)p.pid), "r");
	cr_assert(f && fgets(children, sizeof(children), f), "unshare has no child");
	fclose(f);
	int init = atoi(children);
	cr_assert_gt(init, 0);
	cr_assert_eq(kill(init, SIGKILL), 0);
	kill9(&p);
	cr_assert(h_wait_gone(h_str("/proc/%d", init), 10000), "the namespace's pid 1 did not end");
	owner_of(h_str("%sns_0_0", prefix), &req, &pid, &state);
	cr_expect_str_eq(state, "dead");
	cr_assert_eq(sweep(&out, "--dead", NULL), 0, "%s", out);
	cr_expect(!h_exists(h_in(root, h_str("%sns_0_0", prefix))), "a dead creator's file was kept: %s", out);
}

/* The journals are shmguard's own: only sweep --dead's rule removes them,
 * never --match. */
Test(owners, journals_are_not_files_to_list_or_match)
{
	const char *argv[] = {h_bin("SG_SHMTOOL"), "open", h_in(root, h_str("%sm_0_0", prefix)), "4096", "wait", NULL};
	struct h_proc p;
	char *out;

	cr_assert_eq(mkdir(root, 0755), 0);
	p = h_start_ready(argv, env_for(NULL));
	cr_assert_eq(journals(), 1);
	cr_assert_eq(sweep(&out, "--glob", "*"), 2, "%s", out); /* --glob needs --older-than */
	const char *a[] = {h_bin("SG_CLI"), "sweep", "--root", root, "--ignore-unreadable", "--glob", ".*",
			   "--older-than", "0", NULL};
	cr_assert_eq(h_output(a, NULL, &out, NULL), 0, "%s", out);
	cr_expect_eq(journals(), 1, "%s", out);
	cr_assert_eq(cli(&out, "ls", NULL, NULL, NULL), 0, "%s", out);
	cr_expect(!strstr(out, SG_JOURNAL_PREFIX), "%s", out);
	cr_expect(strstr(out, h_str("%sm_0_0", prefix)), "%s", out);
	kill9(&p);
}

/* doctor on a root without xattrs: the journal works, xattr tags would not. */
Test(owners, doctor_says_the_journal_works_without_xattrs)
{
	char *out;

	h_mount_root(root, "ramfs", "mode=1777", teardown);
	cli(&out, "doctor", NULL, NULL, NULL);
	cr_expect(strstr(out, "refuses user xattrs"), "%s", out);
	cr_expect(strstr(out, "ownership journal (SHMGUARD_TAG=journal, the default) works"), "%s", out);
}

/* The auditor follows what a run creates: the shim's journal is its own
 * bookkeeping, neither a tracked file nor unattributed bytes. */
Test(owners, the_auditor_does_not_count_journals)
{
	const char *json = h_str("/tmp/%sreport.json", prefix);
	const char *script = h_str("LD_PRELOAD=%s SHMGUARD_ABORT_DIR=%s SHMGUARD_PATTERNS='{req}_{int}_{int}' "
				   "SHMGUARD_LOG=off %s shm /%skeep_0_0 4096",
				   h_bin("SG_SHIM"), abort_dir, h_bin("SG_SHMTOOL"), prefix);
	const char *argv[] = {h_bin("SG_CLI"), "audit", "--abort-dir", abort_dir, "--patterns", "{req}_{int}_{int}",
			      "--grace", "0.3", "--json", json, "--lib", h_bin("SG_SHIM"), "--", "/bin/sh", "-c",
			      script, NULL};
	json_error_t jerr;
	json_t *r;
	char *out, *err;
	int status;

	if (strcmp(h_bin("SG_AUDITOR"), "1") != 0)
		cr_skip_test("this shmguard was built without the auditor (test-cli checks what it says)");
	if (geteuid() != 0) {
		cr_assert(!getenv("CI"), "the audit tests must run as root in CI");
		cr_skip_test("needs root for BPF");
	}
	cr_assert_eq(mkdir(abort_dir, 0755), 0);
	status = h_output(argv, NULL, &out, &err);
	r = json_load_file(json, 0, &jerr);
	unlink(json);
	cr_assert_eq(status, 0, "%s%s", out, err);
	cr_assert(r, "no JSON report: %s", jerr.text);
	cr_expect(h_exists(h_str("/dev/shm/%skeep_0_0", prefix)));
	cr_expect_geq(h_count("/dev/shm", SG_JOURNAL_PREFIX), 1, "the shim kept no journal");
	cr_expect_eq(json_integer_value(json_object_get(r, "tracked_files_at_end")), 1, "%s", out);
	cr_expect_eq(json_integer_value(json_object_get(r, "unattributed_bytes")), 0, "%s", out);
	json_decref(r);
}

/* A full tmpfs: the journal's next page cannot be had.  Touching it through
 * the mapping would kill the program with SIGBUS; the shim must say it
 * cannot record, and the program go on. */
Test(owners, a_full_root_stops_the_journal_not_the_program)
{
	const char *argv[256] = {h_bin("SG_SHMTOOL")};
	const char *filler = h_in(root, h_str("%sfiller", prefix));
	static char page[4096];
	struct h_proc p;
	char *err;
	size_t n = 1;
	int fd;

	h_private_mounts(teardown);
	cr_assert_eq(mkdir(root, 0755), 0);
	cr_assert_eq(mount("none", root, "tmpfs", 0, "size=1m"), 0, "mount tmpfs: %s", strerror(errno));
	/* 63 records of two slots fill the journal's first page (the header
	 * takes the last two of its 128). */
	for (int i = 0; i < 63; i++) {
		argv[n++] = "creat";
		argv[n++] = h_in(root, h_str("%sf_0_%d", prefix, i));
		argv[n++] = "0";
	}
	argv[n++] = "wait";
	argv[n++] = "creat";
	argv[n++] = h_in(root, h_str("%sf_0_63", prefix));
	argv[n++] = "0";
	argv[n] = NULL;
	p = h_start_ready(argv, env_for(NULL));
	cr_assert_eq(journals(), 1);
	fd = open(filler, O_CREAT | O_EXCL | O_WRONLY, 0600);
	cr_assert_geq(fd, 0);
	while (write(fd, page, sizeof(page)) == sizeof(page))
		;
	cr_assert_eq(errno, ENOSPC);
	close(fd);
	cr_assert_eq(h_finish(&p, &err), 0, "%s", err);
	cr_expect(h_exists(h_in(root, h_str("%sf_0_63", prefix))));
	/* Refused, for the root's free space is the program's (or failed). */
	cr_expect(strstr(err, "stops at") || strstr(err, "cannot grow"), "%s", err);
}

/* The atomic-publish pattern where xattrs are refused: a file written under
 * a temporary name and renamed is known under its final name, and a dead
 * creator's published file is reclaimed. */
Test(owners, a_renamed_file_is_claimed_under_its_new_name)
{
	const char *tmp = h_in(root, h_str("%stmp.partial", prefix)), *final = h_in(root, h_str("%spub_0_0", prefix));
	const char *argv[] = {h_bin("SG_SHMTOOL"), "open", tmp, "4096", "rename", tmp, final, "wait", NULL};
	const char *req, *state;
	struct h_proc p;
	char *out;
	int pid;

	h_mount_root(root, "ramfs", "mode=1777", teardown);
	p = h_start_ready(argv, env_for(h_str("SHMGUARD_REQUEST_ID=%spub", prefix)));
	owner_of(h_str("%spub_0_0", prefix), &req, &pid, &state);
	cr_expect_str_eq(req, h_str("%spub", prefix));
	cr_expect_eq(pid, p.pid);
	kill9(&p);
	cr_assert_eq(sweep(&out, "--dead", NULL), 0, "%s", out);
	cr_expect(!h_exists(final), "%s", out);
	cr_expect_eq(journals(), 0, "%s", out);
}
