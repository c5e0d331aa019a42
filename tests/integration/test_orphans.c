/* The orphans of programs nobody preloads (issue #20): shmguard watch
 * records their creators, sweep --dead removes the files whose instance is
 * proven gone, and nothing else.  Each test has a /dev/shm of its own (a
 * tmpfs in a private mount namespace: what the programs write there cannot
 * be anyone else's), a record store of its own, and runs its workloads in
 * cgroups it makes; it computes what must remain and compares. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cgroup_ids.h"
#include "harness.h"

static const char *prefix, *store, *mpi_tmp, *gst_sock, *cgroup2;
static struct h_proc watch = {.pid = -1};
static const char *made[16];
static unsigned nmade;

/* Kills every process of cgroup path and removes it (a stopped instance). */
static void cg_remove(const char *path)
{
	char *events = h_str("%s/cgroup.events", path), buf[256];
	long until = h_now_ms() + 10000;
	FILE *f;

	if ((f = fopen(h_str("%s/cgroup.kill", path), "w"))) {
		fputs("1", f);
		fclose(f);
	}
	while (h_now_ms() < until) {
		int fd = open(events, O_RDONLY | O_CLOEXEC);
		ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
		if (fd >= 0)
			close(fd);
		if (n < 0)
			return; /* gone already */
		buf[n] = '\0';
		if (strstr(buf, "populated 0") && rmdir(path) == 0)
			return;
		usleep(10000);
	}
	cr_assert_fail("cgroup %s did not empty: %s", path, strerror(errno));
}

static void teardown(void)
{
	if (watch.pid > 0) {
		kill(watch.pid, SIGTERM);
		h_finish(&watch, NULL);
	}
	while (nmade)
		cg_remove(made[--nmade]);
	if (store)
		h_run((const char *[]){"/bin/rm", "-rf", store, NULL}, NULL, NULL);
	if (mpi_tmp)
		h_run((const char *[]){"/bin/rm", "-rf", mpi_tmp, NULL}, NULL, NULL);
	if (gst_sock)
		unlink(gst_sock);
	h_cleanup(prefix);
}

static void setup(void)
{
	char link[64], target[4096];
	ssize_t n;

	prefix = h_prefix("orph");
	h_need_bpf(teardown);
	h_private_mounts(teardown);
	cr_assert_eq(mount("none", "/dev/shm", "tmpfs", 0, "mode=1777,size=256m"), 0, "%s", strerror(errno));
	store = h_str("/tmp/%sstore-XXXXXX", prefix);
	cr_assert_not_null(mkdtemp((char *)store));
	setenv("SHMGUARD_STORE_DIR", store, 1);
	cr_assert_geq(sg_cgroup2_fd(), 0, "no cgroup2 mount: %s", strerror(errno));
	snprintf(link, sizeof(link), "/proc/self/fd/%d", sg_cgroup2_fd());
	cr_assert_gt(n = readlink(link, target, sizeof(target) - 1), 0);
	target[n] = '\0';
	cgroup2 = h_str("%s", target);
}

TestSuite(orphans, .init = setup, .fini = teardown, .timeout = 120);

/* A new cgroup for an instance, removed at teardown if still there. */
static const char *cg_make(const char *name)
{
	const char *path = h_str("%s/%s%s", cgroup2, prefix, name);

	cr_assert_eq(mkdir(path, 0755), 0, "mkdir %s: %s", path, strerror(errno));
	made[nmade++] = path;
	return path;
}

static void cg_stop(const char *path)
{
	cg_remove(path);
	for (unsigned i = 0; i < nmade; i++)
		if (strcmp(made[i], path) == 0)
			made[i] = made[--nmade];
}

/* argv (up to 15 words) started inside cgroup cg. */
static struct h_proc spawn_in(const char *cg, const char *const *argv)
{
	const char *sh[20] = {"/bin/sh", "-c", "echo $$ > \"$0/cgroup.procs\" && exec \"$@\"", cg};
	size_t i;

	for (i = 0; argv[i]; i++) {
		cr_assert_lt(i, 15, "too many words");
		sh[4 + i] = argv[i];
	}
	sh[4 + i] = NULL;
	return h_spawn(sh, NULL);
}

static struct h_proc ready_in(const char *cg, const char *const *argv)
{
	struct h_proc p = spawn_in(cg, argv);
	char *line = h_read_line(&p, 30000);

	cr_assert(line && strcmp(line, "ready") == 0, "%s did not get ready: %s", argv[1], line ? line : "(nothing)");
	return p;
}

static void start_watch(void)
{
	const char *argv[] = {h_bin("SG_CLI"), "watch", NULL};

	watch = h_spawn(argv, NULL);
	cr_assert(h_wait_stderr(&watch, "recording the creators", 30000), "watch did not start");
}

/* The node agent as the recorder (no watch): --record-creators, over this
 * test's /dev/shm (its own mount namespace's), and the options given. */
static void start_agent(const char *abort_dir, const char *o1, const char *o2, const char *o3)
{
	const char *argv[] = {h_bin("SG_CLI"), "audit", "--own-namespace", "--abort-dir", abort_dir,
			      "--record-creators", "--interval", "0.1", o1, o2, o3, NULL};

	watch = h_spawn(argv, NULL);
	cr_assert(h_wait_stderr(&watch, "aborts 0", 30000), "the node agent did not start");
}

static const char *shm(const char *name)
{
	return h_str("/dev/shm/%s%s", prefix, name);
}

/* Polls ls --json until each of the names (NULL-ended) has a creator record. */
static void wait_recorded(const char *const *names)
{
	const char *argv[] = {h_bin("SG_CLI"), "ls", "--json", NULL};
	long until = h_now_ms() + 10000;

	for (;;) {
		char *out, *err;
		bool all = true;

		cr_assert_eq(h_output(argv, NULL, &out, &err), 0, "%s", err);
		json_error_t je;
		json_t *r = json_loads(out, 0, &je), *files = json_object_get(r, "files"), *f;
		size_t i;
		for (size_t k = 0; names[k]; k++) {
			bool seen = false;
			json_array_foreach(files, i, f)
				seen |= strcmp(json_string_value(json_object_get(f, "path")), names[k]) == 0 &&
					json_is_object(json_object_get(f, "creator_record"));
			all &= seen;
		}
		json_decref(r);
		if (all)
			return;
		cr_assert_lt(h_now_ms(), until, "not all recorded: %s", out);
		usleep(50000);
	}
}

static char *sweep(bool dry_run)
{
	const char *argv[] = {h_bin("SG_CLI"), "sweep", "--dead", "--ignore-unreadable", dry_run ? "--dry-run" : NULL,
			      NULL};
	char *out, *err;

	cr_assert_eq(h_output(argv, NULL, &out, &err), 0, "%s%s", out, err);
	return out;
}

/* The names in /dev/shm with this test's prefix, sorted, one a line. */
static char *remaining(void)
{
	struct dirent **list;
	int n = scandir("/dev/shm", &list, NULL, alphasort);
	char *all = "";

	cr_assert_geq(n, 0);
	for (int i = 0; i < n; i++) {
		if (strncmp(list[i]->d_name, prefix, strlen(prefix)) == 0)
			all = h_str("%s%s\n", all, list[i]->d_name + strlen(prefix));
		free(list[i]);
	}
	free(list);
	return all;
}

static ino_t ino_of(const char *path)
{
	struct stat st;

	cr_assert_eq(stat(path, &st), 0, "%s: %s", path, strerror(errno));
	return st.st_ino;
}

Test(orphans, python_pool_killed_in_its_cgroup_is_reclaimed_exactly)
{
	const char *py = h_bin("SG_PSM_POOL");
	/* Made before watch: no record, never judged. */
	static char page[8192];
	int fd = open(shm("before"), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, page, sizeof(page)), (ssize_t)sizeof(page));
	close(fd);
	start_watch();
	const char *job = cg_make("job"), *other = cg_make("other");
	struct h_proc pool = ready_in(job, (const char *[]){"/usr/bin/python3", py, "pool", h_str("%spool", prefix), "3", NULL});
	struct h_proc live = ready_in(other, (const char *[]){"/usr/bin/python3", py, "live", h_str("%slive", prefix), "2", NULL});
	char *before = remaining(), *out;

	/* The parent's three, one of each of two workers, the other job's two. */
	cr_assert_eq(h_occurrences(before, "pool-main"), 3, "%s", before);
	cr_assert_eq(h_occurrences(before, "pool-w"), 2, "%s", before);
	const char *live0 = shm("live-live0"), *live1 = shm("live-live1"), *p0 = shm("pool-main0");
	wait_recorded((const char *[]){live0, live1, p0, NULL});
	ino_t i0 = ino_of(live0), i1 = ino_of(live1);

	/* The pool runs: nothing is proven. */
	out = sweep(false);
	cr_expect_str_eq(remaining(), before, "a running pool's files were swept: %s", out);
	cr_expect(strstr(out, "its instance runs") || strstr(out, "open or mapped"), "%s", out);
	cr_expect(strstr(out, "untagged: 1 file, 8192 bytes"), "the unrecorded leftover is not reported: %s", out);

	/* Killed mid-run, with its resource tracker (the job's cgroup stops). */
	cg_stop(job);
	h_finish(&pool, NULL);
	cr_expect_str_eq(remaining(), before, "the kill removed files itself: the test sees no leak");
	out = sweep(true);
	cr_expect_eq(h_occurrences(out, "would remove  /dev/shm/"), 5, "%s", out);
	cr_expect_str_eq(remaining(), before, "--dry-run removed something: %s", out);
	cr_expect(strstr(out, "its creator's cgroup no longer exists"), "%s", out);
	out = sweep(false);
	cr_expect_str_eq(remaining(), "before\nlive-live0\nlive-live1\n", "%s", out);
	cr_expect(strstr(out, "removed 5 files, 327680 bytes"), "%s", out);
	cr_expect_eq(ino_of(live0), i0, "a live file was replaced");
	cr_expect_eq(ino_of(live1), i1, "a live file was replaced");
	/* The live job still reads its own segments, and finishes naturally. */
	cr_expect_eq(h_finish(&live, NULL), 0);
	cr_expect_str_eq(remaining(), "before\n");
}

/* ls's table names the creator watch recorded for a file the shim did not
 * tag, as it names the shim's: "PID (STATE)", not "-". */
Test(orphans, ls_shows_the_recorded_creator_of_an_untagged_file)
{
	const char *path = shm("mine");
	char *out, *err, *row;
	int fd;

	start_watch();
	fd = open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);
	cr_assert_geq(fd, 0, "%s", strerror(errno));
	close(fd);
	wait_recorded((const char *[]){path, NULL});
	cr_assert_eq(h_output((const char *[]){h_bin("SG_CLI"), "ls", NULL}, NULL, &out, &err), 0, "%s", err);
	row = strstr(out, h_str("  %s\n", path));
	cr_assert(row, "%s", out);
	while (row > out && row[-1] != '\n')
		row--;
	cr_expect(strstr(row, h_str(" %d (alive) ", (int)getpid())) < strstr(row, path) &&
			  strstr(row, h_str(" %d (alive) ", (int)getpid())),
		  "the row does not name its creator: %s", out);
}

Test(orphans, a_segment_handed_to_the_parent_is_kept)
{
	const char *py = h_bin("SG_PSM_POOL");

	start_watch();
	/* In an instance of its own, and in a cgroup shared like a login
	 * session's: the worker that made it is dead either way. */
	const char *own = cg_make("own"), *session = cg_make("user");
	session = h_str("%s/session-1.scope", session);
	cr_assert_eq(mkdir(session, 0755), 0, "%s", strerror(errno));
	made[nmade++] = session;
	struct h_proc a = ready_in(own, (const char *[]){"/usr/bin/python3", py, "handoff", h_str("%sown", prefix), NULL});
	struct h_proc b = ready_in(session, (const char *[]){"/usr/bin/python3", py, "handoff", h_str("%sses", prefix), NULL});
	const char *fa = shm("own-handoff"), *fb = shm("ses-handoff");
	wait_recorded((const char *[]){fa, fb, NULL});

	/* ls says which proof applies and what is missing. */
	char *out, *err;
	cr_assert_eq(h_output((const char *[]){h_bin("SG_CLI"), "ls", NULL}, NULL, &out, &err), 0, "%s", err);
	cr_expect(strstr(out, h_str("%s: pid ", fa)) && strstr(out, h_str("%sown (its own, exists), started by pid ", prefix)) &&
		  strstr(out, "(alive): kept: its instance runs"),
		  "%s", out);
	cr_expect(strstr(out, "session-1.scope (shared, exists), started by pid ") &&
		  strstr(out, "(alive): kept: the process that started its creator runs"), "%s", out);
	out = sweep(false);
	cr_expect(h_exists(fa) && h_exists(fb), "a handed-over segment was swept: %s", out);
	cr_expect(strstr(out, "its instance runs"), "%s", out);
	cr_expect(strstr(out, "may have been handed the name"), "%s", out);
	/* The parents open them later, and find what the workers wrote. */
	for (struct h_proc *p = &a; p; p = p == &a ? &b : NULL) {
		cr_assert_eq(write(p->in, "open\n", 5), 5);
		char *line = h_read_line(p, 10000);
		cr_expect(line && strcmp(line, "payload ok") == 0, "%s", line ? line : "(nothing)");
		cr_expect_eq(h_finish(p, NULL), 0);
	}
	cr_expect_str_eq(remaining(), "");
}

/* The creator record of path, from ls --json (a new reference), or NULL. */
static json_t *record_of(const char *path)
{
	const char *argv[] = {h_bin("SG_CLI"), "ls", "--json", NULL};
	json_t *r, *f, *found = NULL;
	json_error_t je;
	char *out, *err;
	size_t i;

	cr_assert_eq(h_output(argv, NULL, &out, &err), 0, "%s", err);
	cr_assert_not_null(r = json_loads(out, 0, &je), "%s", je.text);
	json_array_foreach(json_object_get(r, "files"), i, f)
		if (strcmp(json_string_value(json_object_get(f, "path")), path) == 0)
			found = json_incref(json_object_get(f, "creator_record"));
	json_decref(r);
	return json_is_object(found) ? found : NULL;
}

/* Waits until path's record counts n attachers (and, when lost, "others
 * not recorded"). */
static void wait_attachers(const char *path, size_t n, bool lost)
{
	long until = h_now_ms() + 10000;

	for (;;) {
		json_t *rec = record_of(path);
		bool ok = rec && json_array_size(json_object_get(rec, "attachers")) == n &&
			  json_is_true(json_object_get(rec, "attachers_lost")) == lost;
		json_decref(rec);
		if (ok)
			return;
		cr_assert_lt(h_now_ms(), until, "%s: not %zu attachers recorded", path, n);
		usleep(50000);
	}
}

/* Runs script (sh, with the file's path as $0) in a shell of its own in a
 * cgroup shared like a login session's (session-N.scope), started by a
 * shell that ends too, so that neither the creator nor its parent lives;
 * waits for file's record.  Returns the session's cgroup. */
static const char *made_in_a_session(const char *n, const char *file, const char *script)
{
	const char *session = h_str("%s/session-%s.scope", cg_make(h_str("user%s", n)), n);
	char *err;

	cr_assert_eq(mkdir(session, 0755), 0, "%s", strerror(errno));
	made[nmade++] = session;
	struct h_proc maker = spawn_in(session, (const char *[]){"/bin/sh", "-c", "/bin/sh -c \"$1\" \"$0\"; true",
								  file, script, NULL});
	cr_assert_eq(h_finish(&maker, &err), 0, "%s", err);
	wait_recorded((const char *[]){file, NULL});
	return session;
}

/* In a shared cgroup the instance cannot be told from its neighbours: a
 * consumer that opened the file and closed it may open it again, so the
 * file stays while it runs; the creator opening its own file again is no
 * attacher. */
Test(orphans, a_consumer_that_opened_a_shared_cgroup_file_keeps_it)
{
	const char *fa = shm("shared-seg");
	char *out, *err;

	start_watch();
	/* The creator (an inner shell, which opens it twice) and the shell
	 * that started it both end. */
	made_in_a_session("2", fa, "echo data > \"$0\"; cat \"$0\" > /dev/null");
	/* A consumer elsewhere opens it, closes it, and stays. */
	struct h_proc consumer = h_spawn((const char *[]){"/bin/sh", "-c", "exec 3< \"$0\"; exec 3<&-; echo ready; read x", fa, NULL}, NULL);
	cr_assert_str_eq(h_read_line(&consumer, 10000), "ready");
	/* cat, the creator's second open, was a process of its own: two. */
	wait_attachers(fa, 2, false);
	/* Every field of ls --json, the record's too, is documented. */
	cr_assert_eq(h_output((const char *[]){h_bin("SG_CLI"), "ls", "--json", NULL}, NULL, &out, &err), 0, "%s", err);
	json_t *ls = json_loads(out, 0, NULL);
	cr_assert_not_null(ls, "%s", out);
	h_expect_json_documented(ls, "ls");
	json_decref(ls);

	out = sweep(false);
	cr_expect(h_exists(fa), "a file a live consumer opened was swept: %s", out);
	cr_expect(strstr(out, "a process that opened it runs"), "%s", out);
	cr_assert_eq(h_output((const char *[]){h_bin("SG_CLI"), "ls", NULL}, NULL, &out, &err), 0, "%s", err);
	cr_expect(strstr(out, h_str("opened by pid %d (alive)", (int)consumer.pid)) ||
		  strstr(out, h_str(", pid %d (alive)", (int)consumer.pid)), "%s", out);

	cr_assert_eq(write(consumer.in, "\n", 1), 1);
	cr_assert_eq(h_finish(&consumer, NULL), 0);
	out = sweep(false);
	cr_expect_str_eq(remaining(), "", "everyone who could use it is dead: %s", out);
	cr_expect(strstr(out, "every process that opened it are dead"), "%s", out);
}

/* More openers than a record holds: the record says so, and the file is
 * kept even when every one it knows of is dead. */
Test(orphans, more_openers_than_recorded_keep_a_shared_cgroup_file)
{
	const char *fa = shm("crowded");

	start_watch();
	const char *session = made_in_a_session("3", fa, "echo data > \"$0\"");
	for (int i = 0; i < 9; i++) {
		struct h_proc p = h_spawn((const char *[]){"/bin/sh", "-c", "exec 3< \"$0\"", fa, NULL}, NULL);
		cr_assert_eq(h_finish(&p, NULL), 0);
	}
	wait_attachers(fa, 8, true);
	char *out = sweep(false);
	cr_expect(h_exists(fa), "%s", out);
	cr_expect(strstr(out, "more processes opened it than were recorded"), "%s", out);
	/* Its cgroup gone (the session ended) proves nothing of the openers
	 * not recorded: they ran elsewhere, and may still. */
	cg_stop(session);
	out = sweep(false);
	cr_expect(h_exists(fa), "%s", out);
	cr_expect(strstr(out, "more processes opened it than were recorded"), "%s", out);
}

Test(orphans, an_instance_restarted_in_place_loses_only_its_old_files)
{
	const char *py = h_bin("SG_PSM_POOL");

	start_watch();
	const char *svc = cg_make("svc");
	struct h_proc old = ready_in(svc, (const char *[]){"/usr/bin/python3", py, "pool", h_str("%sold", prefix), "2", NULL});
	wait_recorded((const char *[]){shm("old-main0"), shm("old-main1"), NULL});
	cg_stop(svc);
	h_finish(&old, NULL);
	/* The same cgroup path again: a new cgroup, a new id. */
	svc = cg_make("svc");
	struct h_proc now = ready_in(svc, (const char *[]){"/usr/bin/python3", py, "live", h_str("%snew", prefix), "2", NULL});
	wait_recorded((const char *[]){shm("new-live0"), shm("new-live1"), NULL});

	char *out = sweep(false);
	cr_expect_str_eq(remaining(), "new-live0\nnew-live1\n", "%s", out);
	cr_expect(strstr(out, "removed 4 files"), "%s", out);
	cr_expect_eq(h_finish(&now, NULL), 0);
}

/* One process on the node: the agent records the creators as it measures
 * (--record-creators) and reclaims with its own records (--reclaim-dead),
 * no watch running. */
Test(orphans, the_node_agent_records_and_reclaims_alone)
{
	const char *py = h_bin("SG_PSM_POOL");
	char abort_dir[] = "/tmp/sg-orph-abort-XXXXXX";

	cr_assert_not_null(mkdtemp(abort_dir));
	start_agent(abort_dir, "--reclaim-dead", "1", "--reclaim-ignore-unreadable");
	const char *job = cg_make("job"), *other = cg_make("other");
	struct h_proc pool = ready_in(job, (const char *[]){"/usr/bin/python3", py, "pool", h_str("%spool", prefix), "2", NULL});
	struct h_proc live = ready_in(other, (const char *[]){"/usr/bin/python3", py, "live", h_str("%slive", prefix), "1", NULL});
	wait_recorded((const char *[]){shm("pool-main0"), shm("pool-main1"), shm("live-live0"), NULL});
	cg_stop(job);
	h_finish(&pool, NULL);
	long until = h_now_ms() + 15000;
	while (strcmp(remaining(), "live-live0\n") != 0 && h_now_ms() < until)
		usleep(100000);
	char *err;
	kill(watch.pid, SIGINT);
	int status = h_finish(&watch, &err);
	watch.pid = -1;
	rmdir(abort_dir);
	cr_expect_eq(status, 0, "%s", err);
	cr_expect_str_eq(remaining(), "live-live0\n", "%s", err);
	cr_expect(strstr(err, h_str("reclaim: removed /dev/shm/%spool-main0", prefix)), "%s", err);
	cr_expect_eq(h_finish(&live, NULL), 0);
}

/* sweep --dead proves a file with the node agent's records: an unshimmed
 * program's file, recorded by the agent alone, goes once its instance is
 * gone; a live job's stays. */
Test(orphans, sweep_uses_the_node_agents_records)
{
	const char *py = h_bin("SG_PSM_POOL");
	char abort_dir[] = "/tmp/sg-orph-abort-XXXXXX";

	cr_assert_not_null(mkdtemp(abort_dir));
	start_agent(abort_dir, NULL, NULL, NULL);
	const char *job = cg_make("job"), *other = cg_make("other");
	struct h_proc pool = ready_in(job, (const char *[]){"/usr/bin/python3", py, "pool", h_str("%spool", prefix), "1", NULL});
	struct h_proc live = ready_in(other, (const char *[]){"/usr/bin/python3", py, "live", h_str("%slive", prefix), "1", NULL});
	wait_recorded((const char *[]){shm("pool-main0"), shm("live-live0"), NULL});
	char *out = sweep(false);
	cr_expect(h_exists(shm("pool-main0")), "a running pool's file was swept: %s", out);
	cg_stop(job);
	h_finish(&pool, NULL);
	out = sweep(false);
	rmdir(abort_dir);
	cr_expect_str_eq(remaining(), "live-live0\n", "%s", out);
	cr_expect(strstr(out, "its creator's cgroup no longer exists"), "%s", out);
	cr_expect_eq(h_finish(&live, NULL), 0);
}

/* Records are never lost (issue #34): jobs killed at once after creating
 * their files, one after another, and sweep --dead run at once after the
 * last, with no wait for the records: it reads them as the running
 * recorder has them once it started, so every dead job's file is
 * reclaimed (none kept for want of a record) and the live job's stays. */
static void kill_at_once_loop(bool agent)
{
	const char *py = h_bin("SG_PSM_POOL");
	char abort_dir[] = "/tmp/sg-orph-abort-XXXXXX";
	enum { JOBS = 12 };

	cr_assert_not_null(mkdtemp(abort_dir));
	if (agent)
		start_agent(abort_dir, NULL, NULL, NULL);
	else
		start_watch();
	const char *other = cg_make("other");
	struct h_proc live = ready_in(other, (const char *[]){"/usr/bin/python3", py, "live", h_str("%slive", prefix), "1", NULL});
	for (int i = 0; i < JOBS; i++) {
		const char *job = cg_make(h_str("job%d", i));
		struct h_proc pool = ready_in(job, (const char *[]){"/usr/bin/python3", py, "pool",
								    h_str("%sp%d", prefix, i), "1", NULL});
		cg_stop(job); /* at once: the files' records may not be written yet */
		h_finish(&pool, NULL);
	}
	char *left = remaining();
	cr_assert_eq(h_occurrences(left, "-main0"), JOBS, "%s", left);
	char *out = sweep(false);
	rmdir(abort_dir);
	cr_expect_str_eq(remaining(), "live-live0\n", "%s", out);
	cr_expect(!strstr(out, "no owner record"), "%s", out);
	cr_expect_eq(h_finish(&live, NULL), 0);
}

Test(orphans, no_record_lost_when_jobs_die_at_once_under_the_agent)
{
	kill_at_once_loop(true);
}

Test(orphans, no_record_lost_when_jobs_die_at_once_under_watch)
{
	kill_at_once_loop(false);
}

/* The stricter proof for shim-tagged files: a worker under the shim made a
 * segment and is dead, but its instance lives (it may have handed the name
 * on).  sweep --dead removes it for its creator's death; --instance-gone
 * keeps it until the instance's cgroup is gone. */
Test(orphans, instance_gone_keeps_a_dead_workers_file_while_its_instance_lives)
{
	char abort_dir[] = "/tmp/sg-orph-abort-XXXXXX";
	const char *seg = shm("job_0_0"), *sentinel = shm("sentinel");
	const char *strict[] = {h_bin("SG_CLI"), "sweep", "--dead", "--instance-gone", "--ignore-unreadable", NULL};
	const char *plain[] = {h_bin("SG_CLI"), "sweep", "--dead", "--ignore-unreadable", "--dry-run", NULL};
	char *out, *err;

	cr_assert_not_null(mkdtemp(abort_dir));
	start_watch();
	const char *svc = cg_make("svc");
	struct h_proc sibling = spawn_in(svc, (const char *[]){"/bin/sleep", "60", NULL});
	struct h_proc worker = spawn_in(svc, (const char *[]){h_bin("SG_CLI"), "run", "--patterns", "{req}_{int}_{int}",
							      "--abort-dir", abort_dir, "--", h_bin("SG_SHMTOOL"),
							      "open", seg, "4096", NULL});
	cr_assert_eq(h_finish(&worker, &err), 0, "%s", err);
	/* A file made after it in the same instance: once it is recorded, so is
	 * the worker's (watch records in order). */
	struct h_proc later = spawn_in(svc, (const char *[]){h_bin("SG_SHMTOOL"), "open", sentinel, "4096", NULL});
	cr_assert_eq(h_finish(&later, NULL), 0);
	wait_recorded((const char *[]){sentinel, NULL});

	cr_assert_eq(h_output(plain, NULL, &out, &err), 0, "%s%s", out, err);
	cr_expect(strstr(out, h_str("would remove  %s", seg)), "the creator's death alone would do: %s", out);
	cr_assert_eq(h_output(strict, NULL, &out, &err), 0, "%s%s", out, err);
	cr_expect(h_exists(seg), "a dead worker's file went while its instance lives: %s", out);
	cr_expect(strstr(out, "its instance runs"), "%s", out);

	cg_stop(svc);
	h_finish(&sibling, NULL);
	cr_assert_eq(h_output(strict, NULL, &out, &err), 0, "%s%s", out, err);
	rmdir(abort_dir);
	cr_expect_str_eq(remaining(), "", "the instance is gone, its files not: %s", out);
}

Test(orphans, records_outlive_a_restart_of_watch)
{
	const char *py = h_bin("SG_PSM_POOL");

	start_watch();
	const char *job = cg_make("job");
	struct h_proc pool = ready_in(job, (const char *[]){"/usr/bin/python3", py, "pool", h_str("%spool", prefix), "1", NULL});
	wait_recorded((const char *[]){shm("pool-main0"), NULL});
	/* watch stops and starts again: what it recorded stays. */
	kill(watch.pid, SIGTERM);
	cr_assert_eq(h_finish(&watch, NULL), 0);
	watch.pid = -1;
	start_watch();
	/* A file recorded since: the new watch has written its records. */
	const char *other = cg_make("other");
	struct h_proc live = ready_in(other, (const char *[]){"/usr/bin/python3", py, "live", h_str("%slive", prefix), "1", NULL});
	wait_recorded((const char *[]){shm("live-live0"), NULL});
	cg_stop(job);
	h_finish(&pool, NULL);
	char *out = sweep(false);
	cr_expect_str_eq(remaining(), "live-live0\n", "%s", out);
	cr_expect(strstr(out, "removed 3 files"), "%s", out);
	cr_expect_eq(h_finish(&live, NULL), 0);
}

Test(orphans, nccl_like_attach_then_unlink)
{
	const char *tool = h_bin("SG_NCCL_LIKE");

	start_watch();
	const char *done = cg_make("done"), *crashed = cg_make("crashed"), *held = cg_make("held"),
		   *peer_cg = cg_make("peer");
	/* A ring set up in full: the creator unlinked it once its peer was attached. */
	struct h_proc c1 = spawn_in(done, (const char *[]){tool, "create", "/dev/shm", NULL});
	char *ring1 = h_read_line(&c1, 10000);
	cr_assert_not_null(ring1);
	struct h_proc p1 = spawn_in(done, (const char *[]){tool, "attach", ring1, NULL});
	cr_assert_str_eq(h_read_line(&p1, 10000), "attached");
	cr_assert_eq(write(c1.in, "unlink\n", 7), 7);
	cr_assert_str_eq(h_read_line(&c1, 10000), "unlinked");
	/* A job killed before its unlink. */
	struct h_proc c2 = spawn_in(crashed, (const char *[]){tool, "create", "/dev/shm", NULL});
	char *ring2 = h_read_line(&c2, 10000);
	cr_assert_not_null(ring2);
	/* One whose peer, in another job, still maps it when the creator's dies. */
	struct h_proc c3 = spawn_in(held, (const char *[]){tool, "create", "/dev/shm", NULL});
	char *ring3 = h_read_line(&c3, 10000);
	cr_assert_not_null(ring3);
	struct h_proc p3 = spawn_in(peer_cg, (const char *[]){tool, "attach", ring3, NULL});
	cr_assert_str_eq(h_read_line(&p3, 10000), "attached");
	wait_recorded((const char *[]){ring2, ring3, NULL});

	cg_stop(crashed);
	cg_stop(held);
	cg_stop(done);
	h_finish(&c1, NULL), h_finish(&p1, NULL), h_finish(&c2, NULL), h_finish(&c3, NULL);
	char *out = sweep(false);
	cr_expect(!h_exists(ring2), "the crashed job's ring stayed: %s", out);
	cr_expect(h_exists(ring3), "a ring a live peer maps was swept: %s", out);
	cr_expect(strstr(out, "a process that opened it runs"), "%s", out);
	cr_expect(strstr(out, "removed 1 file, 1048576 bytes"), "%s", out);
	/* The peer goes: now nobody can use it. */
	cg_stop(peer_cg);
	h_finish(&p3, NULL);
	out = sweep(false);
	cr_expect(!h_exists(ring3), "%s", out);
	cr_expect(strstr(out, "removed 1 file"), "%s", out);
}

/* A program this test runs that the test command installs: in CI it must
 * be there, elsewhere the test is skipped without it. */
static void need_program(const char *path)
{
	if (access(path, X_OK) == 0)
		return;
	cr_assert(!getenv("CI"), "%s is missing: scripts/deps.sh installs it", path);
	h_skip(teardown, h_str("%s is not installed (scripts/deps.sh installs it)", path));
}

/* The file of this /dev/shm whose name starts with stem, waited for. */
static const char *wait_file(const char *stem, struct h_proc *maker)
{
	long until = h_now_ms() + 20000;

	for (;;) {
		struct dirent **list;
		int n = scandir("/dev/shm", &list, NULL, alphasort);
		const char *found = NULL;
		for (int i = 0; i < n; i++) {
			if (!found && strncmp(list[i]->d_name, stem, strlen(stem)) == 0)
				found = h_str("/dev/shm/%s", list[i]->d_name);
			free(list[i]);
		}
		free(list);
		if (found)
			return found;
		if (h_now_ms() > until) {
			char *err;
			kill(maker->pid, SIGKILL);
			h_finish(maker, &err);
			cr_assert_fail("no /dev/shm/%s... appeared; its maker said: %s", stem, err);
		}
		usleep(20000);
	}
}

/* Whether process pid maps a file whose path holds needle. */
static bool maps(pid_t pid, const char *needle)
{
	char *out = NULL;
	const char *argv[] = {"/bin/cat", h_str("/proc/%d/maps", (int)pid), NULL};

	return h_output(argv, NULL, &out, NULL) == 0 && strstr(out, needle);
}

Test(orphans, gstreamer_shmsink_killed_while_a_reader_maps_it)
{
	const char *gst = "/usr/bin/gst-launch-1.0", *sock = gst_sock = h_str("/tmp/%sgst.sock", prefix);

	need_program(gst);
	start_watch();
	const char *prod_cg = cg_make("producer"), *read_cg = cg_make("reader");
	struct h_proc producer = spawn_in(prod_cg, (const char *[]){gst, "-q", "videotestsrc", "is-live=true", "!",
								      "video/x-raw,width=64,height=64", "!",
								      "shmsink", h_str("socket-path=%s", sock),
								      "shm-size=200000", "wait-for-connection=false", NULL});
	const char *seg = wait_file("shmpipe.", &producer);
	wait_recorded((const char *[]){seg, NULL});
	struct h_proc reader = spawn_in(read_cg, (const char *[]){gst, "-q", "shmsrc", h_str("socket-path=%s", sock), "!",
								    "fakesink", NULL});
	long until = h_now_ms() + 20000;
	while (!maps(reader.pid, "shmpipe.")) {
		cr_assert_lt(h_now_ms(), until, "the reader never mapped %s", seg);
		usleep(20000);
	}
	/* The reader keeps its mapping (stopped: it cannot see the producer go). */
	kill(reader.pid, SIGSTOP);
	cg_stop(prod_cg);
	h_finish(&producer, NULL);
	cr_assert(h_exists(seg), "the producer removed its segment: no leak to test");
	char *out = sweep(false);
	cr_expect(h_exists(seg), "a segment a reader maps was swept: %s", out);
	/* Kept for the first fact that fails: the mapping, or the reader
	 * recorded as having opened it, whichever is judged first. */
	cr_expect(strstr(out, "in use by") || strstr(out, "a process that opened it runs"), "%s", out);
	cg_stop(read_cg);
	h_finish(&reader, NULL);
	out = sweep(false);
	cr_expect(!h_exists(seg), "the leaked segment stayed: %s", out);
	cr_expect(strstr(out, "removed 1 file"), "%s", out);
}

/* The vader_segment files of this /dev/shm, sorted, one a line. */
static char *vader_segments(void)
{
	struct dirent **list;
	int n = scandir("/dev/shm", &list, NULL, alphasort);
	char *all = "";

	cr_assert_geq(n, 0);
	for (int i = 0; i < n; i++) {
		if (strncmp(list[i]->d_name, "vader_segment.", 14) == 0)
			all = h_str("%s/dev/shm/%s\n", all, list[i]->d_name);
		free(list[i]);
	}
	free(list);
	return all;
}

/* An Open MPI job of two ranks over its shared-memory transport (vader),
 * in cgroup cg: "ready" once both ranks are past a barrier. */
static struct h_proc mpi_job(const char *cg, const char *tmp)
{
	static const char rank[] = "from mpi4py import MPI\n"
				   "import time\n"
				   "MPI.COMM_WORLD.Barrier()\n"
				   "if MPI.COMM_WORLD.rank == 0: print('ready', flush=True)\n"
				   "time.sleep(3600)\n";

	return ready_in(cg, (const char *[]){"/usr/bin/mpirun", "--allow-run-as-root", "-np", "2", "--mca", "btl",
					     "self,vader", "--mca", "orte_tmpdir_base", tmp, "/usr/bin/python3", "-c",
					     rank, NULL});
}

Test(orphans, open_mpi_job_killed_is_reclaimed)
{
	const char *tmp = mpi_tmp = h_str("/tmp/%smpi", prefix);

	need_program("/usr/bin/mpirun");
	cr_assert_eq(system("/usr/bin/python3 -c 'import mpi4py' 2>/dev/null"), 0,
		     "python3-mpi4py is missing: scripts/deps.sh installs it");
	cr_assert_eq(mkdir(tmp, 0700), 0);
	start_watch();
	const char *dead_cg = cg_make("mpidead"), *live_cg = cg_make("mpilive");
	struct h_proc dead = mpi_job(dead_cg, tmp);
	char *dead_files = vader_segments();
	cr_assert_eq(h_occurrences(dead_files, "\n"), 2, "not one segment per rank: %s", dead_files);
	struct h_proc live = mpi_job(live_cg, tmp);
	char *all = vader_segments(), *live_files = "";
	for (char *line = strtok(h_str("%s", all), "\n"); line; line = strtok(NULL, "\n"))
		if (!strstr(dead_files, line))
			live_files = h_str("%s%s\n", live_files, line);
	cr_assert_eq(h_occurrences(live_files, "\n"), 2, "%s", all);
	char *names[5] = {0}, *copy = h_str("%s", all);
	int k = 0;
	for (char *line = strtok(copy, "\n"); line && k < 4; line = strtok(NULL, "\n"))
		names[k++] = line;
	wait_recorded((const char *const *)names);

	/* kill -9 of the whole job: mpirun and its ranks. */
	cg_stop(dead_cg);
	h_finish(&dead, NULL);
	cr_assert_str_eq(vader_segments(), all, "Open MPI removed its segments itself: no leak to test");
	char *out = sweep(false);
	cr_expect_str_eq(vader_segments(), live_files, "%s", out);
	cr_expect(strstr(out, "removed 2 files"), "%s", out);
	cg_stop(live_cg);
	h_finish(&live, NULL);
}

/* Randomized: jobs in cgroups of their own make NCCL-like rings, peers in
 * random jobs attach, some creators unlink after the attach, random jobs
 * are killed; sweep --dead must remove exactly the rings whose job is gone
 * and that no live peer maps: no wrong unlink, no orphan left.  And files
 * made in shared cgroups (a login session's) by programs that ended, some
 * opened by a consumer that stays: kept exactly while the consumer runs. */
#define JOBS 4
#define RINGS_PER_JOB 2
#define RINGS (JOBS * RINGS_PER_JOB)
#define SHARED 2

/* One round of the shared-cgroup files: each made in a session of its own,
 * some opened and closed by a consumer that stays, until it is told to go. */
static void shared_round(unsigned seed, int round)
{
	struct h_proc consumer[SHARED];
	const char *file[SHARED], *session[SHARED];
	bool held[SHARED];

	for (int i = 0; i < SHARED; i++) {
		file[i] = shm(h_str("r%ds%d", round, i));
		session[i] = made_in_a_session(h_str("r%ds%d", round, i), file[i], "echo data > \"$0\"");
		if ((held[i] = rand() % 2)) {
			consumer[i] = h_spawn((const char *[]){"/bin/sh", "-c", "exec 3< \"$0\"; exec 3<&-; echo ready; read x",
							  file[i], NULL}, NULL);
			cr_assert_str_eq(h_read_line(&consumer[i], 10000), "ready");
			wait_attachers(file[i], 1, false);
		}
	}
	char *out = sweep(false);
	for (int i = 0; i < SHARED; i++)
		cr_expect_eq(h_exists(file[i]), held[i], "seed %u round %d: shared file %d (consumer %s) %s: %s", seed, round,
			     i, held[i] ? "alive" : "none", held[i] ? "was swept" : "stayed", out);
	for (int i = 0; i < SHARED; i++)
		if (held[i]) {
			cr_assert_eq(write(consumer[i].in, "\n", 1), 1);
			cr_assert_eq(h_finish(&consumer[i], NULL), 0);
		}
	out = sweep(false);
	for (int i = 0; i < SHARED; i++)
		cr_expect_not(h_exists(file[i]), "seed %u round %d: shared file %d stayed once its consumer ended: %s",
			      seed, round, i, out);
	for (int i = 0; i < SHARED; i++) {
		cg_stop(session[i]);
		cg_stop(h_str("%.*s", (int)(strrchr(session[i], '/') - session[i]), session[i]));
	}
}

/* (scripts/stress.sh runs 100 rounds: about 2 s each.) */
Test(orphans, randomized_jobs_and_peers_lose_exactly_their_orphans, .timeout = 900)
{
	const char *tool = h_bin("SG_NCCL_LIKE");
	unsigned seed = (unsigned)h_now_ms();
	/* scripts/stress.sh runs more (bounded by the suite's timeout). */
	const char *more = getenv("SG_ORPHAN_ROUNDS");
	int rounds = more && atoi(more) > 0 ? atoi(more) : 3;

	srand(seed);
	start_watch();
	for (int round = 0; round < rounds; round++) {
		const char *cg[JOBS];
		bool killed[JOBS];
		struct h_proc creator[RINGS], peer[RINGS];
		char *ring[RINGS];
		int peer_job[RINGS];
		bool unlinked[RINGS];
		const char *recorded[RINGS + 1] = {0};
		int nrec = 0;

		for (int j = 0; j < JOBS; j++)
			cg[j] = cg_make(h_str("r%dj%d", round, j));
		for (int i = 0; i < RINGS; i++) {
			creator[i] = spawn_in(cg[i / RINGS_PER_JOB], (const char *[]){tool, "create", "/dev/shm", NULL});
			cr_assert_not_null(ring[i] = h_read_line(&creator[i], 10000));
			peer_job[i] = rand() % 2 ? rand() % JOBS : -1;
			if (peer_job[i] >= 0) {
				peer[i] = spawn_in(cg[peer_job[i]], (const char *[]){tool, "attach", ring[i], NULL});
				cr_assert_str_eq(h_read_line(&peer[i], 10000), "attached");
			}
			/* Attach-then-unlink, done by some: nothing left of those. */
			unlinked[i] = peer_job[i] >= 0 && rand() % 3 == 0;
			if (unlinked[i]) {
				cr_assert_eq(write(creator[i].in, "unlink\n", 7), 7);
				cr_assert_str_eq(h_read_line(&creator[i], 10000), "unlinked");
			} else {
				recorded[nrec++] = ring[i];
			}
		}
		wait_recorded(recorded);
		for (int j = 0; j < JOBS; j++)
			if ((killed[j] = rand() % 2))
				cg_stop(cg[j]);
		char *out = sweep(false);
		for (int i = 0; i < RINGS; i++) {
			bool job_alive = !killed[i / RINGS_PER_JOB], peer_alive = peer_job[i] >= 0 && !killed[peer_job[i]];
			bool stays = !unlinked[i] && (job_alive || peer_alive);
			cr_expect_eq(h_exists(ring[i]), stays, "seed %u round %d: ring %d (job %s, peer %s) %s: %s", seed,
				     round, i, job_alive ? "alive" : "killed",
				     peer_job[i] < 0 ? "none" : peer_alive ? "alive" : "killed",
				     stays ? "was swept" : "stayed", out);
		}
		for (int j = 0; j < JOBS; j++)
			if (!killed[j])
				cg_stop(cg[j]);
		for (int i = 0; i < RINGS; i++) {
			h_finish(&creator[i], NULL);
			if (peer_job[i] >= 0)
				h_finish(&peer[i], NULL);
		}
		out = sweep(false);
		for (int i = 0; i < RINGS; i++)
			cr_expect_not(h_exists(ring[i]), "seed %u round %d: ring %d stayed once all jobs ended: %s", seed,
				      round, i, out);
		shared_round(seed, round);
	}
}

/* Issue #34: a cgroup's absence adds to the proof, never replaces a
 * process's death.  A service moved to another cgroup (by systemd, a
 * runtime, an operator, or itself in a delegated subtree), whose old
 * cgroup is then removed, reopens by name the file it closed. */
Test(orphans, a_creator_moved_to_another_cgroup_keeps_its_file_when_the_old_one_goes)
{
	const char *fa = shm("moved");

	start_watch();
	const char *old = cg_make("old"), *now = cg_make("new");
	struct h_proc c = spawn_in(old, (const char *[]){"/bin/sh", "-c",
							 "echo data > \"$0\"; echo $$ > \"$1/cgroup.procs\"; echo ready; "
							 "read x; cat \"$0\"",
							 fa, now, NULL});
	cr_assert_str_eq(h_read_line(&c, 10000), "ready");
	wait_recorded((const char *[]){fa, NULL});
	cg_stop(old); /* empty: its creator left it */

	char *out = sweep(false);
	cr_expect(h_exists(fa), "a live creator's file went with the cgroup it left: %s", out);
	cr_expect(strstr(out, "its creator runs, in another cgroup"), "%s", out);
	cr_assert_eq(write(c.in, "\n", 1), 1);
	char *line = h_read_line(&c, 10000);
	cr_expect(line && strcmp(line, "data") == 0, "the creator could not reopen its file: %s", line ? line : "");
	cr_expect_eq(h_finish(&c, NULL), 0);
	out = sweep(false);
	cr_expect_str_eq(remaining(), "", "its creator is dead and its cgroup gone: %s", out);
	cr_expect(strstr(out, "cgroup no longer exists"), "%s", out);
}

/* Issue #34: a file handed to a live process of another cgroup, which
 * opened it, closed it, and opens it again later, stays after the
 * creator's cgroup is gone. */
Test(orphans, a_handoff_to_a_live_process_of_another_cgroup_outlives_the_creators_cgroup)
{
	const char *fa = shm("handed");

	start_watch();
	const char *job = cg_make("job"), *peer_cg = cg_make("peer");
	struct h_proc c = spawn_in(job, (const char *[]){"/bin/sh", "-c", "echo data > \"$0\"; echo ready; read x", fa,
							 NULL});
	cr_assert_str_eq(h_read_line(&c, 10000), "ready");
	struct h_proc peer = spawn_in(peer_cg, (const char *[]){"/bin/sh", "-c",
								"exec 3< \"$0\"; exec 3<&-; echo ready; read x; cat \"$0\"",
								fa, NULL});
	cr_assert_str_eq(h_read_line(&peer, 10000), "ready");
	wait_attachers(fa, 1, false);
	cg_stop(job);
	h_finish(&c, NULL);

	char *out = sweep(false);
	cr_expect(h_exists(fa), "a file a live peer will open again went with its creator's cgroup: %s", out);
	cr_expect(strstr(out, "a process that opened it runs"), "%s", out);
	cr_assert_eq(write(peer.in, "\n", 1), 1);
	char *line = h_read_line(&peer, 10000);
	cr_expect(line && strcmp(line, "data") == 0, "the peer could not reopen it: %s", line ? line : "");
	cr_expect_eq(h_finish(&peer, NULL), 0);
	out = sweep(false);
	cr_expect_str_eq(remaining(), "", "%s", out);
}

/* A cgroup shared like a login session's (session-N.scope). */
static const char *session_cgroup(const char *n)
{
	const char *session = h_str("%s/session-%s.scope", cg_make(h_str("user%s", n)), n);

	cr_assert_eq(mkdir(session, 0755), 0, "%s", strerror(errno));
	made[nmade++] = session;
	return session;
}

/* Issue #34: a daemon that runs a helper through a shell (system(), as
 * Python's os.system calls it) is the helper's grandparent.  Once the
 * helper (dd, which opens its output itself) and the shell have exited,
 * the daemon opens what the helper made. */
Test(orphans, a_daemon_running_its_creator_through_system_keeps_the_file)
{
	static const char daemon[] = "import os, sys\n"
				     "f = sys.argv[1]\n"
				     "os.system('/bin/dd if=/dev/zero of=\"%s\" bs=4096 count=1 status=none; true' % f)\n"
				     "print('ready', flush=True)\n"
				     "sys.stdin.readline()\n"
				     "print(len(open(f, 'rb').read()), flush=True)\n";
	const char *fa = shm("helper-out");

	start_watch();
	const char *session = session_cgroup("5");
	struct h_proc d = spawn_in(session, (const char *[]){"/usr/bin/python3", "-c", daemon, fa, NULL});
	cr_assert_str_eq(h_read_line(&d, 30000), "ready");
	wait_recorded((const char *[]){fa, NULL});

	char *out = sweep(false);
	cr_expect(h_exists(fa), "the daemon's file went before it opened it: %s", out);
	cr_expect(strstr(out, "a process that started its creator's parent runs"), "%s", out);
	cr_assert_eq(write(d.in, "\n", 1), 1);
	char *line = h_read_line(&d, 10000);
	cr_expect(line && strcmp(line, "4096") == 0, "the daemon could not open it: %s", line ? line : "");
	cr_expect_eq(h_finish(&d, NULL), 0);
	out = sweep(false);
	cr_expect_str_eq(remaining(), "", "%s", out);
	cr_expect(strstr(out, "every process that opened it are dead"), "%s", out);
}

/* vllm-omni's shape: segment K, lock file shm_K_lockfile.lock beside it. */
static const char *lock_file_of(const char *name)
{
	return h_str("/dev/shm/shm_%s%s_lockfile.lock", prefix, name);
}

/* Issue #34: locks are facts.  A consumer that holds the lock file's flock
 * (from another mount namespace) uses the segment, though no process has
 * the segment open. */
Test(orphans, a_segment_whose_lock_file_is_locked_is_in_use)
{
	const char *seg = shm("lk"), *lock = lock_file_of("lk");

	start_watch();
	const char *job = cg_make("job"), *holder_cg = cg_make("holder");
	struct h_proc maker = spawn_in(job, (const char *[]){"/bin/sh", "-c", "echo data > \"$0\"; echo lock > \"$1\"",
							     seg, lock, NULL});
	cr_assert_eq(h_finish(&maker, NULL), 0);
	struct h_proc holder = spawn_in(holder_cg, (const char *[]){"/usr/bin/unshare", "-m", "/usr/bin/flock", lock,
								    "/bin/sh", "-c", "echo ready; read x", NULL});
	cr_assert_str_eq(h_read_line(&holder, 10000), "ready");
	wait_recorded((const char *[]){seg, lock, NULL});
	cg_stop(job);

	char *out = sweep(false);
	cr_expect(h_exists(seg), "a segment whose lock file is locked went: %s", out);
	cr_expect(h_exists(lock), "a locked lock file went: %s", out);
	cr_expect(strstr(out, "its lock file (shm_NAME_lockfile.lock) is locked by"), "%s", out);
	cr_assert_eq(write(holder.in, "\n", 1), 1);
	cr_expect_eq(h_finish(&holder, NULL), 0);
	out = sweep(false);
	cr_expect(!h_exists(seg) && !h_exists(lock), "nobody uses them now: %s", out);
}

/* Issue #34: a lock file goes only with its segment: one whose maker is
 * gone stays while its segment's instance runs. */
Test(orphans, a_lock_file_goes_only_with_its_segment)
{
	const char *seg = shm("lk2"), *lock = lock_file_of("lk2");

	start_watch();
	const char *svc = cg_make("svc"), *helper = cg_make("helper");
	struct h_proc c = spawn_in(svc, (const char *[]){"/bin/sh", "-c", "echo data > \"$0\"; echo ready; read x", seg,
							 NULL});
	cr_assert_str_eq(h_read_line(&c, 10000), "ready");
	struct h_proc maker = spawn_in(helper, (const char *[]){"/bin/sh", "-c", "echo lock > \"$0\"", lock, NULL});
	cr_assert_eq(h_finish(&maker, NULL), 0);
	wait_recorded((const char *[]){seg, lock, NULL});
	cg_stop(helper);

	char *out = sweep(false);
	cr_expect(h_exists(seg), "%s", out);
	cr_expect(h_exists(lock), "a live segment's lock file went: %s", out);
	cr_expect(strstr(out, "it goes only with its segment"), "%s", out);
	cg_stop(svc);
	h_finish(&c, NULL);
	out = sweep(false);
	cr_expect(!h_exists(seg) && !h_exists(lock), "%s", out);
}

/* Polls ls --json until each of the n paths has a record, and the first
 * nattached of them an attacher too. */
static void wait_recorded_attached(const char *const *paths, size_t n, size_t nattached)
{
	const char *file = h_str("%s/ls.json", store);
	const char *argv[] = {h_bin("SG_CLI"), "ls", "--json", file, NULL};
	long until = h_now_ms() + 60000;

	for (;;) {
		size_t seen = 0, i, k;
		json_error_t je;
		json_t *r, *f;
		char *err;

		/* Through a file: a listing of thousands of files is large. */
		cr_assert_eq(h_run(argv, NULL, &err), 0, "%s", err);
		free(err);
		cr_assert_not_null(r = json_load_file(file, 0, &je), "%s", je.text);
		json_array_foreach(json_object_get(r, "files"), i, f) {
			json_t *rec = json_object_get(f, "creator_record");
			const char *path = json_string_value(json_object_get(f, "path"));
			for (k = 0; json_is_object(rec) && k < n; k++)
				if (strcmp(path, paths[k]) == 0) {
					seen += k >= nattached || json_array_size(json_object_get(rec, "attachers")) > 0;
					break;
				}
		}
		json_decref(r);
		if (seen == n)
			return;
		cr_assert_lt(h_now_ms(), until, "%zu of %zu recorded", seen, n);
		usleep(100000);
	}
}

/* The files of actor stem (and their lock files) still in /dev/shm. */
static unsigned left_of(const char *stem, int n)
{
	unsigned left = 0;

	for (int i = 0; i < n; i++)
		left += h_exists(shm(h_str("%s-%d", stem, i))) + h_exists(lock_file_of(h_str("%s-%d", stem, i)));
	return left;
}

/* The checks of a live actor: how many of its files went while it ran. */
static long actor_check(struct h_proc *p, int n)
{
	int checked = -1, missing = -1;
	char *line;

	cr_assert_eq(write(p->in, "\n", 1), 1);
	line = h_read_line(p, 30000);
	cr_assert(line && sscanf(line, "checked %d missing %d", &checked, &missing) == 2, "%s", line ? line : "");
	cr_expect_eq(checked, n);
	h_finish(p, NULL);
	return missing;
}

/* The unshimmed programs of issue #34 (tests/tools/stress.c's actors),
 * randomized in their numbers: a creator that moves to another cgroup
 * before its first one goes, a daemon creating through system(), a
 * hand-off to a live process of another cgroup, segments whose lock files
 * another process locks.  sweep --dead runs while they live (no file of
 * theirs may go: each actor opens all of its own again by name) and once
 * they have ended (none may stay).  scripts/stress.sh runs many rounds
 * (SG_UNSHIMMED_ROUNDS, SG_UNSHIMMED_FILES) and reads the figures written
 * to SG_STRESS_REPORT. */
Test(orphans, unshimmed_programs_lose_no_live_file, .timeout = 3600)
{
	const char *tool = h_bin("SG_STRESS"), *report = getenv("SG_STRESS_REPORT");
	const char *r_env = getenv("SG_UNSHIMMED_ROUNDS"), *n_env = getenv("SG_UNSHIMMED_FILES");
	int rounds = r_env && atoi(r_env) > 0 ? atoi(r_env) : 1, max = n_env && atoi(n_env) > 0 ? atoi(n_env) : 12;
	unsigned seed = (unsigned)h_now_ms();
	long ops = 0, wrong = 0, left = 0;

	signal(SIGPIPE, SIG_IGN); /* an actor gone early is a failed write, said */
	srand(seed);
	start_watch();
	for (int round = 0; round < rounds; round++) {
		int n = max / 2 + rand() % (max / 2 + 1);
		const char *stem[4], *cg_old = cg_make(h_str("u%da", round)), *cg_new = cg_make(h_str("u%db", round));
		const char *session = session_cgroup(h_str("u%d", round)), *cg_make_ = cg_make(h_str("u%dc", round));
		const char *cg_cons = cg_make(h_str("u%dk", round)), *cg_lock = cg_make(h_str("u%dl", round));
		const char *cg_hold = cg_make(h_str("u%dh", round));
		const char **paths = calloc((size_t)n * 5, sizeof(*paths));
		size_t np = 0;

		for (int k = 0; k < 4; k++)
			stem[k] = h_str("%su%dx%d", prefix, round, k);
		const char *n_arg = h_str("%d", n);
		struct h_proc maker = ready_in(cg_make_, (const char *[]){tool, "actor", "make", "/dev/shm", stem[2], n_arg, NULL});
		struct h_proc consumer = ready_in(cg_cons, (const char *[]){tool, "actor", "consumer", "/dev/shm", stem[2], n_arg, NULL});
		struct h_proc mover = ready_in(cg_old, (const char *[]){tool, "actor", "mover", "/dev/shm", stem[0], n_arg, cg_new, NULL});
		struct h_proc daemon = ready_in(session, (const char *[]){tool, "actor", "daemon", "/dev/shm", stem[1], n_arg, NULL});
		struct h_proc locker = ready_in(cg_lock, (const char *[]){tool, "actor", "locker", "/dev/shm", stem[3], n_arg, NULL});
		struct h_proc holder = ready_in(cg_hold, (const char *[]){tool, "actor", "holder", "/dev/shm", stem[3], n_arg, NULL});
		for (int i = 0; i < n; i++)
			paths[np++] = h_str("/dev/shm/%s-%d", stem[2], i);
		for (int k = 0; k < 4; k++)
			for (int i = 0; i < n && k != 2; i++)
				paths[np++] = h_str("/dev/shm/%s-%d", stem[k], i);
		for (int i = 0; i < n; i++)
			paths[np++] = lock_file_of(h_str("u%dx3-%d", round, i));
		wait_recorded_attached(paths, np, (size_t)n);
		/* mover: n creates, a move, n opens; daemon: n system(), n opens;
		 * hand-off: n creates, 2n opens; locks: 2n creates, n locks, n opens. */
		ops += 11L * n + 1;
		cg_stop(cg_old);
		cg_stop(cg_make_);
		cg_stop(cg_lock);
		h_finish(&maker, NULL);
		h_finish(&locker, NULL);
		char *out = sweep(false);
		long w = actor_check(&mover, n) + actor_check(&daemon, n) + actor_check(&consumer, n) +
			 actor_check(&holder, n);
		cr_expect_eq(w, 0, "seed %u round %d: %ld files of live programs went: %s", seed, round, w, out);
		wrong += w;
		out = sweep(false);
		unsigned l = 0;
		for (int k = 0; k < 4; k++)
			l += left_of(stem[k] + strlen(prefix), n);
		cr_expect_eq(l, 0, "seed %u round %d: %u files stayed once every program ended: %s", seed, round, l, out);
		left += l;
		cg_stop(cg_new);
		cg_stop(session);
		cg_stop(h_str("%.*s", (int)(strrchr(session, '/') - session), session));
		cg_stop(cg_cons);
		cg_stop(cg_hold);
		free(paths);
	}
	if (report) {
		FILE *f = fopen(report, "w");
		cr_assert_not_null(f, "%s", report);
		fprintf(f, "unshimmed programs: %d rounds, %ld operations, wrong_removals %ld, orphans_left %ld (seed %u)\n",
			rounds, ops, wrong, left, seed);
		fclose(f);
	}
}
