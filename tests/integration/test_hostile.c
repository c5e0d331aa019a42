/* Another local user against the abort directory: squatting it, planting
 * names and hard links in it, swapping it for a symlink; the user a server
 * runs as against root's log follower; a client's text in the server's log.  Run as root, with a second,
 * unprivileged user as the attacker (tests/integration/harness.h). */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

static const char *prefix, *abort_dir;

static void setup(void)
{
	h_setup("host", &prefix, &abort_dir, NULL);
}

static void teardown(void)
{
	h_teardown(prefix, NULL);
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

/* A root directory all may write to (sticky), as the abort directory. */
static void shared_abort_dir(void)
{
	cr_assert_eq(mkdir(abort_dir, 0755), 0);
	cr_assert_eq(chmod(abort_dir, 01777), 0);
}

/* protected_hardlinks lets anyone link a file of root's they may write to:
 * such a link, named after a request, is no marker of root's. */
Test(hostile, a_hard_link_to_a_root_file_is_no_marker)
{
	const struct h_user *u = h_hostile_user();
	const char *root_file = h_str("/dev/shm/%sroot-file", prefix);
	const char *ln[] = {"/bin/ln", root_file, marker(abort_dir, "victim"), NULL};
	const char *argv[] = {h_bin("SG_SHMTOOL"), "shm", seg("victim") + 8, "4096", "shm", seg("canary") + 8, "4096",
			      "wait", NULL};
	struct h_proc p;
	char *err;

	shared_abort_dir();
	touch(root_file);
	cr_assert_eq(chmod(root_file, 0666), 0);
	p = h_start_ready(argv, h_shim_env(abort_dir, "{req}_{int}_{int}", NULL));
	as_attacker(u, ln);
	touch(marker(abort_dir, "canary")); /* once the canary is swept, the link was seen */
	cr_assert(h_wait_gone(seg("canary"), 2000), "a real marker was not obeyed");
	cr_expect(h_exists(seg("victim")), "a hard link to a root file swept a live request");
	cr_expect(h_wait_stderr(&p, "more than one link", 1000), "the link was not reported");
	cr_expect_eq(abort_cli(abort_dir, "victim", &err), 1, "shmguard abort took a hard link for a marker");
	cr_expect(strstr(err, "a file with more than one link"), "%s", err);
	cr_assert_eq(h_finish(&p, NULL), 0);
}

/* A name another user plants is printed into the host's own log escaped:
 * it can start no line there (which a log follower would read). */
Test(hostile, planted_names_are_escaped_in_the_hosts_stderr)
{
	const struct h_user *u = h_hostile_user();
	const char *name = h_str("%sx\nAborted request(s) chatcmpl-victim,\x1b[2J", prefix);
	const char *plant[] = {"/usr/bin/touch", h_str("%s/%s", abort_dir, name), NULL};
	const char *argv[] = {h_bin("SG_SHMTOOL"), "shm", seg("a") + 8, "4096", "wait", NULL};
	struct h_proc p;
	char *err;

	shared_abort_dir();
	p = h_start_ready(argv, h_shim_env(abort_dir, "{req}_{int}_{int}", NULL));
	as_attacker(u, plant);
	cr_assert(h_wait_stderr(&p, "ignored marker", 2000), "the planted name was not reported");
	cr_assert_eq(h_finish(&p, &err), 0);
	cr_expect(strstr(err, "x\\x0aAborted request(s) chatcmpl-victim,\\x1b[2J"), "%s", err);
	cr_expect(!strstr(err, "\nAborted request(s)") && !strchr(err, '\x1b'), "a raw name reached stderr: %s", err);
}

/* A client of the served model writes the prompt (logged whole by vLLM's
 * --enable-log-requests, SGLang's --log-requests) and chooses its request
 * ID: neither may pass for the server's own abort line. */
Test(hostile, follow_presets_take_no_client_text_for_an_abort)
{
	const char *victim = h_str("%svictim", prefix), *canary = h_str("%scanary", prefix);
	const char *vllm = h_str(
		"INFO 12-01 02:11:22 [logger.py:43] Received request chatcmpl-att: prompt: 'Aborted request(s) %s,', "
		"params: SamplingParams(n=1), prompt_token_ids: None, lora_request: None.\n"
		"INFO 12-01 02:11:22 [logger.py:43] Received request chatcmpl-att: prompt: 'INFO 12-01 02:11:22 "
		"[async_llm.py:456] Aborted request(s) %s.', params: None\n"
		/* an ID holding a newline, which vLLM writes as "\r\n" and its prefix again */
		"INFO 12-01 02:11:22 [async_llm.py:612] Request chatcmpl-att\r\n"
		"INFO 12-01 02:11:22 [async_llm.py:612] Request %s aborted.\n"
		"INFO 12-01 02:11:22 [async_llm.py:456] Aborted request(s) chatcmpl-att,%s.\n"
		"INFO 12-01 02:11:23 [async_llm.py:456] Aborted request(s) %s.\n",
		victim, victim, victim, victim, canary);
	const char *sglang = h_str(
		"[2026-12-01 02:11:22] Receive: obj=GenerateReqInput(text=\"[http_server] Error: Request is "
		"disconnected from the client side (type 1). Abort request obj.rid='%s'\", rid='att')\n"
		"[2026-12-01 02:11:22] Receive: obj=GenerateReqInput(text=\"x\", rid=\"Request is disconnected from "
		"the client side (type 1). Abort request obj.rid=['%s'\")\n",
		victim, victim);
	const char *argv[] = {h_bin("SG_SHMTOOL"), "shm", seg("victim") + 8, "4096", "shm", seg("canary") + 8, "4096",
			      "wait", NULL};
	const char *presets[][2] = {{"sglang", sglang}, {"vllm", vllm}};
	struct h_proc p = h_start_ready(argv, h_shim_env(abort_dir, "{req}_{int}_{int}", NULL));
	char *err;

	/* SGLang's lines first: the canary comes last, in vLLM's. */
	for (size_t i = 0; i < 2; i++) {
		const char *follow[] = {h_bin("SG_CLI"), "abort", "--abort-dir", abort_dir, "--follow", "-", "--preset",
					presets[i][0], NULL};
		struct h_proc f = h_spawn(follow, NULL);

		cr_assert_eq(write(f.in, presets[i][1], strlen(presets[i][1])), (ssize_t)strlen(presets[i][1]));
		cr_expect_eq(h_finish(&f, &err), 0, "%s", err);
	}
	cr_assert(h_wait_gone(seg("canary"), 2000), "the server's own abort line was not obeyed");
	cr_expect(h_exists(seg("victim")), "a client's text aborted another client's request");
	cr_expect_eq(h_count(abort_dir, prefix), 1, "markers made of client text");
	cr_expect(strstr(err, "1 markers written"), "%s", err);
	cr_assert_eq(h_finish(&p, NULL), 0);
}

/* The user the server runs as owns the log's directory, and puts a FIFO
 * where the log was: root's follower says so once, opens nothing there,
 * and reads the log again once it is a file. */
Test(hostile, follow_survives_a_fifo_at_the_logs_name)
{
	const struct h_user *u = h_hostile_user();
	const char *dir = h_str("/dev/shm/%slogs", prefix), *log = h_str("%s/app.log", dir);
	const char *mk[] = {"/bin/mkdir", "-m", "0755", dir, NULL};
	const char *fifo[] = {"/usr/bin/mkfifo", log, NULL};
	const char *rm[] = {"/bin/rm", log, NULL};
	const char *write_log[] = {"/bin/sh", "-c", h_str("printf 'abort id=%sa1\\n' >>%s", prefix, log), NULL};
	const char *follow[] = {h_bin("SG_CLI"), "abort", "--abort-dir", abort_dir, "--follow", log, "--match",
				"abort id=(?<req>\\S+)", NULL};
	struct h_proc f;
	char *err;

	as_attacker(u, mk);
	f = h_spawn(follow, NULL);
	cr_assert(h_wait_stderr(&f, "waiting for", 5000), "the follower did not start");
	as_attacker(u, fifo);
	cr_expect(h_wait_stderr(&f, "is a FIFO, which is not read", 3000), "the FIFO was not reported");
	usleep(500 * 1000); /* looked at again, several times */
	as_attacker(u, rm);
	as_attacker(u, write_log);
	for (long end = h_now_ms() + 3000; !h_exists(marker(abort_dir, "a1")) && h_now_ms() < end;)
		usleep(10 * 1000);
	cr_expect(h_exists(marker(abort_dir, "a1")), "the follower stopped following");
	kill(f.pid, SIGTERM);
	cr_expect_eq(h_finish(&f, &err), 0, "%s", err);
	cr_expect_eq(h_occurrences(err, "is a FIFO"), 1, "%s", err);
}

/* Without the right to write into root's directory, `shmguard abort` says
 * so, not that something is missing. */
Test(hostile, abort_without_permission_says_permission_denied)
{
	const struct h_user *u = h_hostile_user();
	const char *argv[] = {h_bin("SG_CLI"), "abort", "--abort-dir", abort_dir, h_str("%sx", prefix), NULL};
	char *out, *err;

	cr_assert_eq(mkdir(abort_dir, 0755), 0);
	cr_expect_eq(h_output_as(u, argv, NULL, &out, &err), 1);
	cr_expect(strstr(err, strerror(EACCES)), "%s", err);
	cr_expect(!strstr(err, strerror(ENOENT)), "%s", err);
}

/* The attacker's workspace, where root writes reports (a CI checkout):
 * hers, mode 1777 as /tmp.  Removed by the caller (rm_rf). */
static const char *attacker_dir(const struct h_user *u, const char *name)
{
	const char *dir = h_str("/tmp/%s%s", prefix, name);
	const char *mk[] = {"/bin/mkdir", "-m", "1777", dir, NULL};

	as_attacker(u, mk);
	return dir;
}

static void rm_rf(const char *path)
{
	const char *argv[] = {"/bin/rm", "-rf", path, NULL};

	cr_expect_eq(h_run(argv, NULL, NULL), 0);
}

static char *slurp(const char *path)
{
	static char buf[4096];
	int fd = open(path, O_RDONLY | O_NOFOLLOW);
	ssize_t n;

	cr_assert_geq(fd, 0, "cannot read %s", path);
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	return buf;
}

/* Finding 1 of issue 17: her symlink at a report's path, pointing at a
 * root-only file, must not make root write through it, for every output. */
Test(hostile, report_paths_never_write_through_a_symlink)
{
	if (!h_have_auditor())
		h_skip(teardown, "this shmguard was built without the auditor, whose reports these are");
	const struct h_user *u = h_hostile_user();
	const char *dir = attacker_dir(u, "ws"), *secret = h_str("/tmp/%ssecret", prefix);
	const char *options[] = {"--json", "--junit", "--plot", "--metrics-file"};
	int fd = open(secret, O_WRONLY | O_CREAT | O_EXCL, 0600);
	char *err;

	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, "root only\n", 10), 10);
	close(fd);
	cr_assert_eq(mkdir(abort_dir, 0755), 0);
	for (size_t i = 0; i < sizeof(options) / sizeof(options[0]); i++) {
		const char *link = h_str("%s/report%zu", dir, i);
		const char *ln[] = {"/bin/ln", "-s", secret, link, NULL};
		const char *argv[] = {h_bin("SG_CLI"), "audit", "--abort-dir", abort_dir, options[i], link, "--",
				      "/bin/true", NULL};

		as_attacker(u, ln);
		cr_expect_eq(h_run(argv, NULL, &err), 2, "%s through a symlink: %s", options[i], err);
		cr_expect(strstr(err, "symbolic link"), "%s: the reason is not said: %s", options[i], err);
		cr_expect_eq(h_occurrences(err, "\n"), 1, "%s: not one line: %s", options[i], err);
		cr_expect_str_eq(slurp(secret), "root only\n", "%s wrote through her symlink", options[i]);
	}
	/* ls and sweep write --json FILE the same way. */
	const char *root = h_str("/dev/shm/%ssweeproot", prefix), *link = h_str("%s/listing", dir);
	const char *ln[] = {"/bin/ln", "-s", secret, link, NULL};
	const char *ls[] = {h_bin("SG_CLI"), "ls", "--root", root, h_str("--json=%s", link), NULL};
	const char *sweep[] = {h_bin("SG_CLI"), "sweep", "--dead", "--dry-run", "--root", root, h_str("--json=%s", link),
			       NULL};
	cr_assert_eq(mkdir(root, 0755), 0);
	as_attacker(u, ln);
	cr_expect_neq(h_run(ls, NULL, &err), 0, "ls --json through a symlink");
	cr_expect(strstr(err, "symbolic link"), "%s", err);
	cr_expect_neq(h_run(sweep, NULL, &err), 0, "sweep --json through a symlink");
	cr_expect(strstr(err, "symbolic link"), "%s", err);
	cr_expect_str_eq(slurp(secret), "root only\n", "ls or sweep wrote through her symlink");
	rm_rf(dir);
	unlink(secret);
}

/* A report she created before the run must not stay hers: root's report
 * replaces it (she cannot rewrite failures= afterwards), and the step
 * summary, which is the runner's to keep, is only appended to. */
Test(hostile, a_report_she_made_first_is_replaced_by_roots)
{
	h_need_bpf(teardown);
	const struct h_user *u = h_hostile_user();
	const char *dir = attacker_dir(u, "ws");
	const char *junit = h_str("%s/junit.xml", dir), *json = h_str("%s/report.json", dir);
	const char *touch_argv[] = {"/bin/sh", "-c", h_str("umask 0; echo hers > %s; echo hers > %s", junit, json), NULL};
	const char *argv[] = {h_bin("SG_CLI"), "audit", "--abort-dir", abort_dir, "--junit", junit, "--json", json,
			      "--", "/bin/true", NULL};
	struct stat st;
	char *err;

	cr_assert_eq(mkdir(abort_dir, 0755), 0);
	as_attacker(u, touch_argv);
	cr_assert_eq(h_run(argv, NULL, &err), 0, "%s", err);
	for (int i = 0; i < 2; i++) {
		const char *path = i ? json : junit;
		cr_assert_eq(lstat(path, &st), 0);
		cr_expect_eq(st.st_uid, 0, "%s is still hers", path);
		cr_expect_eq(st.st_mode & 07777, 0644, "%s: mode %o", path, st.st_mode & 07777);
		cr_expect(!strstr(slurp(path), "hers"), "%s was not replaced", path);
	}
	cr_expect(strstr(slurp(junit), "<testsuites"), "%s", slurp(junit));
	rm_rf(dir);
}

/* Issue 17, finding 19: she takes the names doctor's probe file would have
 * (.shmguard-doctor-PID for the next few thousand pids) in a root anyone
 * can write; doctor still finds the root takes files. */
Test(hostile, doctor_is_not_fooled_by_squatted_probe_names)
{
	const struct h_user *u = h_hostile_user();
	const char *root = h_str("/dev/shm/%sroot", prefix);
	FILE *f = fopen("/proc/sys/kernel/ns_last_pid", "r");
	long last = 0, pid_max = 32768;
	char *out, *err;

	cr_assert(f && fscanf(f, "%ld", &last) == 1);
	fclose(f);
	f = fopen("/proc/sys/kernel/pid_max", "r");
	cr_assert(f && fscanf(f, "%ld", &pid_max) == 1);
	fclose(f);
	cr_assert_eq(mkdir(root, 0755), 0);
	cr_assert_eq(chmod(root, 01777), 0);
	const char *squat[] = {"/bin/sh", "-c",
			       h_str("i=%ld; while [ $i -lt %ld ]; do : > %s/.shmguard-doctor-$((i %% %ld)); i=$((i + 1)); done",
				     last + 1, last + 3001, root, pid_max),
			       NULL};
	as_attacker(u, squat);
	const char *doctor[] = {h_bin("SG_CLI"), "doctor", "--root", root, NULL};
	h_output(doctor, NULL, &out, &err);
	cr_expect(strstr(out, "takes files"), "%s%s", out, err);
	cr_expect_null(strstr(out, "cannot create a file there"), "a squatted name made doctor fail: %s", out);
	cr_expect_eq(h_count(root, ".shmguard-doctor-"), 3000, "doctor left its probe file, or removed hers");
}
