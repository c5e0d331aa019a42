/* shmguard audit against ground truth: pipelines that leak a known amount
 * per abort, measured by the test itself from st_blocks. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <pty.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

#define PATTERNS "{req}_{int}_{int};shm_{req}_{int}_{int}_lockfile.lock"

static const char *prefix, *abort_dir, *json_path;

static void setup(void)
{
	h_setup("aud", &prefix, &abort_dir, NULL);
	json_path = h_str("/tmp/%sreport.json", prefix);
	cr_assert_eq(mkdir(abort_dir, 0755), 0);
}

static void teardown(void)
{
	h_cleanup(prefix);
	unlink(json_path);
}

TestSuite(audit, .init = setup, .fini = teardown, .timeout = 90);

#define SKIP(why) h_skip(teardown, why)

static void need_bpf(void)
{
	h_need_bpf(teardown);
}

/* `shmguard audit` as the harness runs it, with this test's directories,
 * and a budget if not NULL. */
static const char **audit_argv(const char *budget, const char *const *cmd)
{
	const char *options[] = {budget ? "--max-kib-per-abort" : NULL, budget, NULL};

	return h_audit_argv(abort_dir, PATTERNS, json_path, options, cmd);
}

/* audit_argv() with extra options right after "audit". */
static const char **with_options(const char **argv, const char *o1, const char *o2, const char *o3)
{
	const char **out = calloc(80, sizeof(*out)), *extra[] = {o1, o2, o3};
	size_t n = 0;

	out[n++] = argv[0];
	out[n++] = argv[1];
	for (size_t i = 0; i < 3; i++)
		if (extra[i])
			out[n++] = extra[i];
	for (size_t i = 2; argv[i]; i++)
		out[n++] = argv[i];
	return out;
}

static json_t *report(void)
{
	return h_json_load(json_path);
}

static uint64_t blocks_of(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 ? (uint64_t)st.st_blocks * 512 : 0;
}

/* Bytes of this test's unlinked files that some process still maps, found
 * the way an operator would: /proc/PID/maps, then stat through map_files. */
static uint64_t mapped_unlinked_bytes(void)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	uint64_t total = 0;

	while (d && (e = readdir(d))) {
		char line[4096];
		FILE *f = fopen(h_str("/proc/%s/maps", e->d_name), "r");
		while (f && fgets(line, sizeof(line), f)) {
			unsigned long long lo, hi;
			if (strstr(line, prefix) && strstr(line, "(deleted)") && sscanf(line, "%llx-%llx", &lo, &hi) == 2)
				total += blocks_of(h_str("/proc/%s/map_files/%llx-%llx", e->d_name, lo, hi));
		}
		if (f)
			fclose(f);
	}
	if (d)
		closedir(d);
	return total;
}

/* Allocated bytes of the linked files of aborted request i. */
static uint64_t linked_bytes(int i)
{
	return blocks_of(h_str("/dev/shm/%s%d_0_0", prefix, i)) + blocks_of(h_str("/dev/shm/%s%d_0_1", prefix, i)) +
	       blocks_of(h_str("/dev/shm/%s%d_0_2", prefix, i)) +
	       blocks_of(h_str("/dev/shm/shm_%s%d_0_0_lockfile.lock", prefix, i));
}

enum { REQUESTS = 12, ABORT_EVERY = 3, ABORTS = REQUESTS / ABORT_EVERY };

/* argv run by wrap (a command that runs what follows it: unshare ...), or
 * as it is. */
static const char **wrapped(const char *const *wrap, const char **argv)
{
	const char **out = calloc(96, sizeof(*out));
	size_t n = 0;

	for (size_t i = 0; wrap && wrap[i]; i++)
		out[n++] = wrap[i];
	for (size_t i = 0; argv[i]; i++)
		out[n++] = argv[i];
	return out;
}

/* The auditor in a pid namespace of its own, with that namespace's /proc,
 * as in a CI job's container. */
static const char *const own_pidns[] = {"/usr/bin/unshare", "--pid", "--fork", "--mount-proc", NULL};

/* leakgen audited, the auditor run by wrap and leakgen by cmd_wrap (NULL:
 * as they are). */
static struct h_proc start_leakgen_in(const char *const *wrap, const char *const *cmd_wrap, bool shimmed, bool mapped,
				      const char *probe)
{
	const char *leakgen[] = {h_bin("SG_LEAKGEN"), "--prefix", prefix, "--requests", h_str("%d", REQUESTS),
				 "--abort-every", h_str("%d", ABORT_EVERY), "--abort-dir", abort_dir,
				 "--wait-stdin", mapped ? "--mapped" : NULL, NULL};
	const char *run[] = {h_bin("SG_CLI"), "run", "--patterns", PATTERNS, "--abort-dir", abort_dir,
			     "--lib", h_bin("SG_SHIM"), "--", NULL};
	const char *cmd[32];
	size_t n = 0;

	for (size_t i = 0; shimmed && run[i]; i++)
		cmd[n++] = run[i];
	for (size_t i = 0; cmd_wrap && cmd_wrap[i]; i++)
		cmd[n++] = cmd_wrap[i];
	for (size_t i = 0; leakgen[i]; i++)
		cmd[n++] = leakgen[i];
	cmd[n] = NULL;
	struct h_proc p =
		h_spawn(wrapped(wrap, with_options(audit_argv("0", cmd), probe ? "--probe" : NULL, probe, NULL)), NULL);
	char *line = h_read_line(&p, 30000);
	cr_assert_str_eq(line ? line : "(nothing)", "done");
	return p;
}

static struct h_proc start_leakgen(bool shimmed, bool mapped, const char *probe)
{
	return start_leakgen_in(NULL, NULL, shimmed, mapped, probe);
}

/* Every file leakgen freed left the table, each counted once, at its
 * inode's eviction where the kernel allows fentry or kprobe, else at the
 * review (which then says why): the consumed requests' 5 files each, and
 * perhaps the aborted ones' mapped files, freed as leakgen ends. */
static void expect_frees_counted(json_t *r)
{
	long long evicted = h_jint(r, "files_freed_at_eviction"), reviewed = h_jint(r, "files_freed_by_review");
	const char *how = json_string_value(json_object_get(r, "freed_probe"));
	const char *why = json_string_value(json_object_get(r, "freed_probe_unavailable"));

	cr_expect(evicted + reviewed >= (REQUESTS - ABORTS) * 5 && evicted + reviewed <= (REQUESTS - ABORTS) * 5 + ABORTS,
		  "%lld files freed at eviction, %lld at the review", evicted, reviewed);
	if (how) {
		cr_expect(strcmp(how, "fentry") == 0 || strcmp(how, "kprobe") == 0, "frees seen by %s", how);
		cr_expect_gt(evicted, 0);
		cr_expect_null(why);
	} else {
		cr_expect_eq(evicted, 0);
		cr_expect(why && *why, "frees left to the review without a reason");
	}
}

/* The leak measured with PROBE (NULL: the best here), the auditor run by
 * wrap and the pipeline by cmd_wrap (NULL: as they are), is the truth. */
static void ground_truth_within_one_percent_in(const char *const *wrap, const char *const *cmd_wrap, const char *probe)
{
	struct h_proc p = start_leakgen_in(wrap, cmd_wrap, false, true, probe);
	uint64_t truth = 0;
	char *err;

	h_wait_measured(&p, ABORTS);
	for (int i = ABORT_EVERY - 1; i < REQUESTS; i += ABORT_EVERY)
		truth += linked_bytes(i);
	truth += mapped_unlinked_bytes();
	cr_assert_gt(truth, 0);
	cr_assert_eq(h_finish(&p, &err), 1, "over budget 0 must exit 1: %s", err);

	json_t *r = report();
	long long leaked = h_jint(r, "leaked_bytes");
	cr_expect_eq(h_jint(r, "aborts"), ABORTS);
	cr_expect(llabs(leaked - (long long)truth) * 100 <= (long long)truth, "reported %lld bytes, truth %llu",
		  leaked, (unsigned long long)truth);
	cr_expect_eq(h_jint(r, "leaked_files"), ABORTS * 5, "odd, sparse, fallocate, lock file, mapped");
	cr_expect_eq(h_jint(r, "dropped_events"), 0);
	cr_expect_str_eq(json_string_value(json_object_get(r, "verdict")), "fail");
	if (probe)
		cr_expect_str_eq(json_string_value(json_object_get(r, "probe")) ?: "(none)", probe);
	expect_frees_counted(r);
	json_decref(r);
}

Test(audit, ground_truth_within_one_percent)
{
	need_bpf();
	ground_truth_within_one_percent_in(NULL, NULL, NULL);
}

/* The fallback every kernel has measures the same. */
Test(audit, the_syscalls_probe_finds_the_same_ground_truth)
{
	need_bpf();
	ground_truth_within_one_percent_in(NULL, NULL, "syscalls");
}

/* The kernel side numbers processes as the auditor's namespace does (it
 * saw none of the command's tree, and passed with 0 bytes, before). */
Test(audit, in_a_pid_namespace_of_its_own_the_command_is_measured)
{
	need_bpf();
	ground_truth_within_one_percent_in(own_pidns, NULL, NULL);
}

Test(audit, in_a_pid_namespace_of_its_own_the_syscalls_probe_measures_the_command)
{
	need_bpf();
	ground_truth_within_one_percent_in(own_pidns, NULL, "syscalls");
}

/* A pipeline in a pid namespace below the auditor's is its tree too. */
Test(audit, in_a_pid_namespace_of_its_own_a_command_in_a_nested_one_is_measured)
{
	const char *const nested[] = {"/usr/bin/unshare", "--pid", "--fork", NULL};

	need_bpf();
	ground_truth_within_one_percent_in(own_pidns, nested, NULL);
}

/* What it cannot see is refused, exit 3, with the reason: the whole
 * system from inside a pid namespace, and a /proc that is another
 * namespace's (unshare without --mount-proc keeps the host's). */
Test(audit, in_a_pid_namespace_what_it_cannot_see_is_refused)
{
	const char *leak[] = {h_bin("SG_LEAKGEN"), "--prefix", prefix, "--requests", "2", "--abort-every", "1",
			      "--abort-dir", abort_dir, NULL};
	const char *whole[] = {"/usr/bin/unshare", "--pid", "--fork", "--mount-proc", h_bin("SG_CLI"), "audit", "--abort-dir",
			       abort_dir, "--duration", "1", NULL};
	const char *host_proc[] = {"/usr/bin/unshare", "--pid", "--fork", NULL};
	char *err;

	need_bpf();
	cr_assert_eq(h_run(whole, NULL, &err), 3, "%s", err);
	cr_expect(strstr(err, "pid namespace of its own"), "%s", err);
	cr_assert_eq(h_run(wrapped(host_proc, audit_argv("0", leak)), NULL, &err), 3, "%s", err);
	cr_expect(strstr(err, "/proc is not this pid namespace's own"), "%s", err);
}

Test(audit, the_same_pipeline_under_the_shim_reports_zero)
{
	need_bpf();
	struct h_proc p = start_leakgen(true, false, NULL);
	char *err;

	h_wait_measured(&p, ABORTS);
	cr_assert_eq(h_finish(&p, &err), 0, "under the shim the gate must pass: %s", err);
	json_t *r = report();
	cr_expect_eq(h_jint(r, "aborts"), ABORTS);
	cr_expect_eq(h_jint(r, "leaked_bytes"), 0);
	cr_expect_eq(h_jint(r, "leaked_files"), 0);
	cr_expect_str_eq(json_string_value(json_object_get(r, "verdict")), "pass");
	json_decref(r);
}

/* The leftover's request as the report gives it. */
static const char *request_of(json_t *r, const char *file)
{
	json_t *ab, *f;
	size_t i, k;

	json_array_foreach(json_object_get(r, "aborted_requests"), i, ab)
		json_array_foreach(json_object_get(ab, "leftover_files"), k, f)
			if (strcmp(json_string_value(json_object_get(f, "name")) ?: "", file) == 0)
				return json_string_value(json_object_get(ab, "request"));
	return NULL;
}

/* The shim tags a file for request "explicit" while its name says "named";
 * a process without the shim is attributed by the patterns. */
Test(audit, attribution_agrees_with_the_shim)
{
	need_bpf();
	const char *tagged = h_str("%snamed_0_0", prefix), *plain = h_str("%splain_0_0", prefix);
	const char *script = h_str("LD_PRELOAD=%s SHMGUARD_REQUEST_ID=%sexplicit SHMGUARD_ABORT_DIR=%sother "
				   "SHMGUARD_LOG=off %s shm /%s 4096 , touch %s/%sexplicit , say a && "
				   "%s shm /%s 4096 , touch %s/%splain , say b && { read x || true; }",
				   h_bin("SG_SHIM"), prefix, abort_dir, h_bin("SG_SHMTOOL"), tagged, abort_dir, prefix,
				   h_bin("SG_SHMTOOL"), plain, abort_dir, prefix);
	const char *cmd[] = {"/bin/sh", "-c", script, NULL};
	struct h_proc p = h_spawn(audit_argv(NULL, cmd), NULL);

	/* The shim's abort dir is another one: it tags but never sweeps here. */
	cr_assert_str_eq(h_read_line(&p, 20000) ?: "", "a");
	cr_assert_str_eq(h_read_line(&p, 20000) ?: "", "b");
	h_wait_measured(&p, 2);
	cr_assert_eq(h_finish(&p, NULL), 0);
	json_t *r = report();
	cr_expect_str_eq(request_of(r, tagged) ?: "(none)", h_str("%sexplicit", prefix), "the shim's tag was not used");
	cr_expect_str_eq(request_of(r, plain) ?: "(none)", h_str("%splain", prefix), "patterns were not used");
	json_decref(r);
}

/* A file COMMAND creates (shmtool open FILE 8192) and then moves with SHELL
 * (mv, ln, rm), before its request is aborted: the leak is that file's, and
 * it belongs to the request of the name it has at the end (NAME). */
static void moved_file_is_charged_to(const char *probe, const char *create, const char *shell, const char *name,
				     const char *request)
{
	const char *script = h_str("%s open %s 8192 && %s && touch %s/%s && echo moved && { read x || true; }",
				   h_bin("SG_SHMTOOL"), create, shell, abort_dir, request);
	const char *cmd[] = {"/bin/sh", "-c", script, NULL};
	const char *path = h_str("/dev/shm/%s", name);
	struct h_proc p = h_spawn(with_options(audit_argv(NULL, cmd), probe ? "--probe" : NULL, probe, NULL), NULL);

	cr_assert_str_eq(h_read_line(&p, 20000) ?: "", "moved");
	h_wait_measured(&p, 1);
	uint64_t truth = blocks_of(path);
	cr_assert_eq(h_finish(&p, NULL), 0);
	json_t *r = report();
	cr_assert_gt(truth, 0, "%s is not there", path);
	cr_expect_eq(h_jint(r, "aborts"), 1);
	cr_expect_eq(h_jint(r, "leaked_bytes"), (long long)truth, "the moved file's bytes");
	cr_expect_str_eq(request_of(r, name) ?: "(none)", request, "charged to the wrong request");
	cr_expect_eq(h_jint(r, "unattributed_bytes"), 0);
	json_decref(r);
}

/* Past the auditor's once-a-second pass: the name it saw first is gone. */
static void rename_after_a_pass(const char *probe)
{
	moved_file_is_charged_to(probe, h_str("/dev/shm/%srenA_1_2", prefix),
				 h_str("sleep 1.5 && mv /dev/shm/%srenA_1_2 /dev/shm/%srenB_1_2", prefix, prefix),
				 h_str("%srenB_1_2", prefix), h_str("%srenB", prefix));
}

/* Before the first pass, to a name no pattern knows: the auditor never
 * looks at the first name in the directory. */
static void link_and_unlink_before_a_pass(const char *probe)
{
	moved_file_is_charged_to(probe, h_str("/dev/shm/%slnkA_1_2", prefix),
				 h_str("ln /dev/shm/%slnkA_1_2 /dev/shm/%skept.bin && rm /dev/shm/%slnkA_1_2", prefix,
				       prefix, prefix),
				 h_str("%skept.bin", prefix), h_str("%slnkA", prefix));
}

/* Written in a subdirectory, renamed into the root after a pass. */
static void staged_in_a_subdirectory(const char *probe)
{
	cr_assert_eq(mkdir(h_str("/dev/shm/%sstage", prefix), 0700), 0);
	moved_file_is_charged_to(probe, h_str("/dev/shm/%sstage/%sstg_1_2", prefix, prefix),
				 h_str("sleep 1.5 && mv /dev/shm/%sstage/%sstg_1_2 /dev/shm/%sstg_1_2", prefix, prefix,
				       prefix),
				 h_str("%sstg_1_2", prefix), h_str("%sstg", prefix));
}

Test(audit, a_rename_after_the_first_pass_moves_the_file_to_the_new_request)
{
	need_bpf();
	rename_after_a_pass(NULL);
}

Test(audit, a_link_then_unlink_before_the_first_pass_keeps_the_file_attributed)
{
	need_bpf();
	link_and_unlink_before_a_pass(NULL);
}

Test(audit, a_file_staged_in_a_subdirectory_counts_once_renamed_into_place)
{
	need_bpf();
	staged_in_a_subdirectory(NULL);
}

/* The same three, seen by the system calls. */
Test(audit, syscalls_probe_follows_a_rename_after_the_first_pass)
{
	need_bpf();
	rename_after_a_pass("syscalls");
}

Test(audit, syscalls_probe_follows_a_link_then_unlink_before_the_first_pass)
{
	need_bpf();
	link_and_unlink_before_a_pass("syscalls");
}

Test(audit, syscalls_probe_follows_a_file_staged_in_a_subdirectory)
{
	need_bpf();
	staged_in_a_subdirectory("syscalls");
}

/* Each probe, forced: it works here, or says plainly that it cannot (exit 3). */
Test(audit, a_forced_probe_works_or_says_why_not)
{
	need_bpf();
	const char *probes[] = {"ctime", "fentry", "kprobe", "syscalls"};
	const char *cmd[] = {"/bin/true", NULL};

	for (size_t i = 0; i < sizeof(probes) / sizeof(probes[0]); i++) {
		char *err;
		int status = h_run(with_options(audit_argv(NULL, cmd), "--probe", probes[i], NULL), NULL, &err);

		if (status == 3) {
			cr_expect(strstr(err, h_str("the probe '%s' is not available here: ", probes[i])), "%s", err);
			continue;
		}
		cr_assert_eq(status, 0, "--probe %s: %s", probes[i], err);
		json_t *r = report();
		cr_expect_str_eq(json_string_value(json_object_get(r, "probe")) ?: "(none)", probes[i]);
		json_decref(r);
	}
}

/* doctor names the probe that audit then uses. */
Test(audit, doctor_names_the_probe_the_audit_uses)
{
	need_bpf();
	const char *doctor[] = {h_bin("SG_CLI"), "doctor", NULL}, *cmd[] = {"/bin/true", NULL};
	char *text, *err;

	h_output(doctor, NULL, &text, NULL);
	cr_assert_eq(h_run(audit_argv(NULL, cmd), NULL, &err), 0, "%s", err);
	json_t *r = report();
	const char *probe = json_string_value(json_object_get(r, "probe"));
	cr_assert_not_null(probe);
	cr_expect(strstr(text, h_str("bpf        ok   the auditor's programs load and attach; it sees files created with "
				     "the %s probe", probe)),
		  "%s", text);
	/* And how freed files are seen, as the audit saw them. */
	const char *freed = json_string_value(json_object_get(r, "freed_probe"));
	if (freed)
		cr_expect(strstr(text, h_str("frees      ok   freed files leave the auditor's table at once (%s on "
					     "shmem_evict_inode)", freed)),
			  "%s", text);
	else
		cr_expect(strstr(text, h_str("frees      ok   freed files leave the auditor's table at its review's next "
					     "look, not at once (%s)",
					     json_string_value(json_object_get(r, "freed_probe_unavailable")))),
			  "%s", text);
	json_decref(r);
}

/* A process outside COMMAND's tree leaks too; only the tree is counted. */
Test(audit, only_the_command_tree_is_counted)
{
	need_bpf();
	const char *inside = h_str("/dev/shm/%sin_0_0", prefix), *outside = h_str("/dev/shm/%sout_0_0", prefix);
	const char *cmd[] = {h_bin("SG_SHMTOOL"), "shm", inside + 8, "8192", "touch", h_str("%s/%sin", abort_dir, prefix),
			     "wait", NULL};
	struct h_proc p = h_spawn(audit_argv(NULL, cmd), NULL);
	int fd;

	cr_assert_str_eq(h_read_line(&p, 20000) ?: "", "ready");
	fd = open(outside, O_CREAT | O_RDWR, 0600);
	cr_assert_geq(fd, 0);
	cr_assert_eq(fallocate(fd, 0, 0, 65536), 0);
	close(fd);
	close(open(h_str("%s/%sout", abort_dir, prefix), O_CREAT | O_WRONLY, 0644));
	h_wait_measured(&p, 2);
	cr_assert_eq(h_finish(&p, NULL), 0);
	json_t *r = report();
	cr_expect_eq(h_jint(r, "aborts"), 2, "both markers are aborts");
	cr_expect_eq(h_jint(r, "leaked_bytes"), (long long)blocks_of(inside), "only the tree's file counts");
	struct stat st;
	json_t *left = json_array_get(json_object_get(json_array_get(json_object_get(r, "aborted_requests"), 0),
						      "leftover_files"), 0);
	cr_assert_eq(stat(inside, &st), 0);
	cr_expect_eq(json_integer_value(json_object_get(left, "inode")), (long long)st.st_ino);
	cr_expect_null(request_of(r, h_str("%sout_0_0", prefix)), "a file from outside the tree was counted");
	json_decref(r);
}

/* A burst of files: the ring buffer keeps up. */
Test(audit, a_burst_loses_no_events)
{
	need_bpf();
	const char *cmd[] = {h_bin("SG_LEAKGEN"), "--prefix", prefix, "--requests", "3000", "--abort-every", "1000",
			     "--abort-dir", abort_dir, NULL};
	char *err;

	cr_assert_eq(h_run(audit_argv(NULL, cmd), NULL, &err), 0, "%s", err);
	json_t *r = report();
	cr_expect_eq(h_jint(r, "dropped_events"), 0);
	cr_expect_eq(h_jint(r, "aborts"), 3);
	json_decref(r);
}

/* A burst beyond a tiny event buffer: the loss is counted, reported and
 * fails the gate, unless --allow-drops. */
Test(audit, dropped_events_fail_the_gate_unless_allowed)
{
	need_bpf();
	const char *burst[] = {h_bin("SG_LEAKGEN"), "--prefix", prefix, "--requests", "2000", "--abort-every", "1000",
			       "--abort-dir", abort_dir, NULL};
	char *err;
	json_t *r;

	cr_assert_eq(h_run(with_options(audit_argv(NULL, burst), "--ring-kib", "4", NULL), NULL, &err), 1,
		     "events were lost: the gate must fail: %s", err);
	r = report();
	cr_expect_gt(h_jint(r, "dropped_events"), 0);
	cr_expect_str_eq(json_string_value(json_object_get(r, "verdict")), "fail");
	json_decref(r);

	h_cleanup(prefix);
	cr_assert_eq(mkdir(abort_dir, 0755), 0);
	cr_assert_eq(h_run(with_options(audit_argv(NULL, burst), "--ring-kib", "4", "--allow-drops"), NULL, &err), 0,
		     "%s", err);
	r = report();
	cr_expect_gt(h_jint(r, "dropped_events"), 0);
	json_decref(r);
}

/* COMMAND's failure shows in the report and in the exit status. */
Test(audit, a_failing_command_still_gets_its_report)
{
	need_bpf();
	const char *cmd[] = {"/bin/sh", "-c", "exit 3", NULL};
	char *err;

	/* No abort to measure: the floor is taken away for the gate to pass. */
	cr_assert_eq(h_run(with_options(audit_argv("0", cmd), "--min-aborts", "0", NULL), NULL, &err), 4, "%s", err);
	json_t *r = report();
	cr_expect_eq(h_jint(r, "command_exit_status"), 3);
	cr_expect_str_eq(json_string_value(json_object_get(r, "verdict")), "pass");
	json_decref(r);
}

/* The auditor's userspace frees all it allocates, and makes no memory error. */
Test(audit, memcheck_finds_no_leak_and_no_error, .timeout = 180)
{
	need_bpf();
	if (getenv("SG_SANITIZED"))
		SKIP("valgrind cannot run AddressSanitizer's build: the plain build's pass runs this");
	if (access("/usr/bin/valgrind", X_OK) != 0) {
		cr_assert(!getenv("CI"), "valgrind is missing in CI (scripts/deps.sh installs it)");
		SKIP("needs valgrind");
	}
	const char *argv[] = {"/usr/bin/valgrind", "-q", "--leak-check=full", "--show-leak-kinds=definite,indirect",
			      "--errors-for-leak-kinds=definite,indirect", "--error-exitcode=99",
			      h_str("--suppressions=%s", h_bin("SG_VALGRIND_SUPP")), h_bin("SG_CLI"), "audit", "--abort-dir",
			      abort_dir, "--patterns", PATTERNS, "--grace", "0.2", "--json", json_path, "--lib",
			      h_bin("SG_SHIM"), "--junit", h_str("%s.xml", json_path), "--plot", h_str("%s.svg", json_path),
			      "--metrics-file", h_str("%s.prom", json_path), "--listen", "127.0.0.1:0", "--",
			      h_bin("SG_LEAKGEN"), "--prefix", prefix, "--requests", "6",
			      "--abort-every", "3", "--abort-dir", abort_dir, "--mapped", NULL};
	char *err;

	cr_assert_eq(h_run(argv, NULL, &err), 0, "memcheck: %s", err);
	json_t *r = report();
	cr_expect_eq(h_jint(r, "aborts"), 2, "the run under valgrind did its work");
	json_decref(r);
	/* The CI and fleet outputs were made too. */
	for (const char *const *ext = (const char *const[]){"xml", "svg", "prom", NULL}; *ext; ext++) {
		cr_expect(h_exists(h_str("%s.%s", json_path, *ext)), "no %s written", *ext);
		unlink(h_str("%s.%s", json_path, *ext));
	}
}

static int audit_status(char **err, const char *a1, const char *a2, const char *a3, const char *a4)
{
	const char *argv[] = {h_bin("SG_CLI"), "audit", a1, a2, a3, a4, NULL};
	return h_run(argv, NULL, err);
}

Test(audit, bad_input_is_refused_with_a_reason)
{
	char *err;

	cr_expect_eq(audit_status(&err, "--frobnicate", NULL, NULL, NULL), 2);
	cr_expect_eq(audit_status(&err, "--abort-dir", abort_dir, "--patterns", "{req"), 2);
	cr_expect(strstr(err, "bad patterns"), "%s", err);
	cr_expect_eq(audit_status(&err, "--abort-dir", h_str("%s/missing/below", abort_dir), "--", "/bin/true"), 2);
	cr_expect(strstr(err, "does not exist and cannot be made"), "%s", err);
	cr_expect_eq(audit_status(&err, "--abort-dir", h_str("%s/missing", abort_dir), NULL, NULL), 2);
	cr_expect(strstr(err, "does not exist"), "%s", err);
	const char *file = h_str("%s/a-file", abort_dir);
	close(open(file, O_CREAT | O_WRONLY | O_CLOEXEC, 0600));
	cr_expect_eq(audit_status(&err, "--abort-dir", file, "--", "/bin/true"), 2);
	cr_expect(strstr(err, "is not a directory"), "%s", err);
	unlink(file);
	cr_expect_eq(audit_status(&err, "--abort-dir", abort_dir, "--grace", "soon"), 2);
	cr_expect_eq(audit_status(&err, "--abort-dir", "/dev/shm", "--", "/bin/true"), 2);
	cr_expect(strstr(err, "must not be a shm root"), "%s", err);
	cr_expect_eq(audit_status(&err, "--abort-dir", abort_dir, "--max-kib-per-abort", "-1"), 2);
	cr_expect_eq(audit_status(&err, "--abort-dir", abort_dir, "--shm-root", "/nonexistent"), 2);
}

Test(audit, without_privileges_it_says_what_is_missing)
{
	char *err;
	const char *argv[] = {"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", h_bin("SG_CLI"),
			      "audit", "--abort-dir", abort_dir, "--", "/bin/true", NULL};

	if (geteuid() != 0)
		SKIP("needs root to drop to another user");
	cr_assert_eq(h_run(argv, NULL, &err), 3, "%s", err);
	cr_expect(strstr(err, "tracing is not possible"), "%s", err);
	cr_expect(strstr(err, "CAP_BPF"), "the message names the missing privilege: %s", err);
}

/* `shmguard audit` with the test's abort dir and JSON report, extra options
 * (up to NULL), then "--" and the command. */
static const char **audit_with(const char *const *options, const char *const *cmd)
{
	const char **argv = calloc(64, sizeof(*argv));
	size_t n = 0;

	argv[n++] = h_bin("SG_CLI");
	argv[n++] = "audit";
	argv[n++] = "--abort-dir";
	argv[n++] = abort_dir;
	argv[n++] = "--json";
	argv[n++] = json_path;
	while (*options)
		argv[n++] = *options++;
	argv[n++] = "--";
	while (*cmd)
		argv[n++] = *cmd++;
	return argv;
}

static long read_long(const char *path)
{
	FILE *f = fopen(path, "r");
	long v = -1;

	cr_assert_not_null(f, "%s", path);
	cr_assert_eq(fscanf(f, "%ld", &v), 1);
	fclose(f);
	return v;
}

/* More markers at once than the kernel's inotify queue holds (the auditor
 * is stopped meanwhile, so the queue overflows for sure): the directory is
 * read again, every marker still there is an abort, and the overflow is
 * reported and fails the gate, unless --allow-drops. */
Test(audit, a_marker_burst_beyond_the_inotify_queue_fails_the_gate, .timeout = 180)
{
	need_bpf();
	long markers = read_long("/proc/sys/fs/inotify/max_queued_events") + 200;
	const char *cmd[] = {h_bin("SG_SHMTOOL"), "wait", NULL};
	const char *strict[] = {"--grace", "0.2", NULL}, *lenient[] = {"--grace", "0.2", "--allow-drops", NULL};
	const char *const *options[] = {strict, lenient};
	char *err;

	for (int run = 0; run < 2; run++) {
		struct h_proc p = h_spawn(audit_with(options[run], cmd), NULL);
		cr_assert_str_eq(h_read_line(&p, 20000) ?: "", "ready");
		cr_assert_eq(kill(p.pid, SIGSTOP), 0);
		for (long i = 0; i < markers; i++)
			close(open(h_str("%s/%sr%dm%ld", abort_dir, prefix, run, i), O_CREAT | O_WRONLY, 0644));
		cr_assert_eq(kill(p.pid, SIGCONT), 0);
		usleep(500 * 1000);
		int status = h_finish(&p, &err);
		json_t *r = report();
		cr_expect_eq(h_jint(r, "aborts"), markers, "every marker still there is an abort");
		cr_expect_geq(h_jint(r, "marker_queue_overflows"), 1);
		cr_expect_gt(h_jint(r, "markers_recovered"), 0);
		if (run == 0) {
			cr_expect_eq(status, 1, "lost markers must fail the gate: %s", err);
			cr_expect_str_eq(json_string_value(json_object_get(r, "verdict")) ?: "", "fail");
		} else {
			cr_expect_eq(status, 0, "--allow-drops accepts them: %s", err);
		}
		json_decref(r);
	}
}

/* A root on a disk's filesystem: its device has a major number, where a
 * tmpfs has none, and the kernel side keeps those apart (audit_maps.bpf.h);
 * the file and its abort are measured all the same. */
Test(audit, a_root_on_a_disk_filesystem_is_followed_too)
{
	need_bpf();
	char dir[] = "sg-disk-root-XXXXXX"; /* in the build directory, which is on a disk */
	cr_assert_not_null(mkdtemp(dir));
	const char *root = h_str("%s/%s", getcwd(NULL, 0), dir), *leak = h_str("%s/%sdisk_0_0", root, prefix);
	const char *script = h_str("fallocate -l 65536 %s && touch %s/%sdisk", leak, abort_dir, prefix);
	const char *cmd[] = {"/bin/sh", "-c", script, NULL};
	const char *options[] = {"--patterns", PATTERNS, "--shm-root", root, NULL};
	struct stat st;
	uint64_t truth;
	char *err;
	int rc;

	cr_assert_eq(stat(root, &st), 0);
	if (major(st.st_dev) == 0) {
		rmdir(root);
		cr_assert_fail("%s is on a filesystem without a block device: this test needs one on a disk", root);
	}
	rc = h_run(audit_with(options, cmd), NULL, &err);
	truth = blocks_of(leak);
	unlink(leak);
	rmdir(root);
	cr_assert_eq(rc, 0, "%s", err);
	json_t *r = report();
	cr_assert_gt(truth, 0);
	cr_expect_eq(h_jint(r, "aborts"), 1);
	cr_expect_eq(h_jint(r, "leaked_bytes"), (long long)truth);
	json_decref(r);
}

/* With 100,000 files in a root, the review comes every few seconds once it
 * has read them (its directory reads are paced): an abort after that is
 * measured later, but still while its file is there, and right. */
Test(audit, a_large_root_still_measures_an_abort_while_its_file_is_there, .timeout = 120)
{
	need_bpf();
	const char *root = h_str("/dev/shm/%sbig", prefix), *leak = h_str("/dev/shm/%sbig/%sab_0_0", prefix, prefix);
	const char *script = h_str("seq -f %s/live%%g 100000 | xargs touch && sleep 2 && fallocate -l 65536 %s && "
				   "touch %s/%sab && echo marked && { read x || true; } && rm %s",
				   root, leak, abort_dir, prefix, leak);
	const char *cmd[] = {"/bin/sh", "-c", script, NULL};
	const char *options[] = {"--shm-root", root, NULL};

	cr_assert_eq(mkdir(root, 0755), 0);
	struct h_proc p = h_spawn(h_audit_argv(abort_dir, PATTERNS, json_path, options, cmd), NULL);
	cr_assert_str_eq(h_read_line(&p, 60000) ?: "", "marked");
	uint64_t truth = blocks_of(leak);
	h_wait_measured(&p, 1);
	cr_assert_eq(h_finish(&p, NULL), 0);
	json_t *r = report();
	cr_assert_gt(truth, 0);
	cr_expect_eq(h_jint(r, "aborts"), 1);
	cr_expect_eq(h_jint(r, "leaked_bytes"), (long long)truth, "measured after the file was removed?");
	cr_expect_eq(h_jint(r, "dropped_events"), 0);
	json_decref(r);
}

/* A table of 100,000 followed files, then bursts of files created and
 * removed at once, with an event buffer that holds under a second of
 * them: the review of the table must never hold up the events.
 * The files go into a root of their own, so that /dev/shm stays small for
 * the tests that run alongside. */
Test(audit, a_large_table_loses_no_events, .timeout = 180)
{
	need_bpf();
	const char *root = h_str("/dev/shm/%sbig", prefix);
	const char *script = h_str("seq -f %s/live%%g_0_0 100000 | xargs touch && sleep 1.2 && "
				   "for round in 1 2 3 4; do seq -f %s/c%%g_0_0 50000 | xargs touch && "
				   "seq -f %s/c%%g_0_0 50000 | xargs rm; done",
				   root, root, root);
	const char *cmd[] = {"/bin/sh", "-c", script, NULL};
	/* A buffer of under a second of the bursts (the default is 8 MiB):
	 * a review that held the reader up longer would lose events.  With
	 * 1 MiB the suite's other tests, run beside it, lost some 1 run in 4;
	 * AddressSanitizer slows the reader two to three times again. */
	const char *options[] = {"--ring-kib", getenv("SG_SANITIZED") ? "8192" : "4096", "--shm-root", root, NULL};
	char *err, *out;

	cr_assert_eq(mkdir(root, 0755), 0);
	cr_assert_eq(h_output(audit_with(options, cmd), NULL, &out, &err), 0, "%s%s", out, err);
	json_t *r = report();
	cr_expect_geq(h_jint(r, "events"), 300000);
	cr_expect_eq(h_jint(r, "dropped_events"), 0);
	cr_expect_eq(h_jint(r, "tracked_files_at_end"), 100000, "tracked at end: %lld files (events %lld)",
		     h_jint(r, "tracked_files_at_end"), h_jint(r, "events"));
	json_decref(r);
}

/* Only files directly in a root count, linked or not: a linked file and an
 * unlinked but mapped one in a subdirectory count as neither. */
Test(audit, files_of_subdirectories_count_neither_linked_nor_mapped)
{
	need_bpf();
	const char *sub = h_str("/dev/shm/%ssub", prefix);
	const char *in_root = h_str("/dev/shm/%sr_0_0", prefix);
	const char *cmd[] = {h_bin("SG_SHMTOOL"), "region", h_str("%s/%sr_0_1", sub, prefix), "8192", ",", "unlink",
			     h_str("%s/%sr_0_1", sub, prefix), ",", "open", h_str("%s/%sr_0_2", sub, prefix), "8192",
			     ",", "region", in_root, "8192", ",", "touch", h_str("%s/%sr", abort_dir, prefix), ",",
			     "wait", NULL};
	const char *options[] = {"--patterns", PATTERNS, "--grace", "0.3", NULL};

	cr_assert_eq(mkdir(sub, 0755), 0);
	struct h_proc p = h_spawn(audit_with(options, cmd), NULL);
	cr_assert_str_eq(h_read_line(&p, 20000) ?: "", "ready");
	usleep(800 * 1000);
	cr_assert_eq(h_finish(&p, NULL), 0);
	json_t *r = report();
	cr_expect_eq(h_jint(r, "aborts"), 1);
	cr_expect_eq(h_jint(r, "leaked_files"), 1, "only the file in the root counts");
	cr_expect_eq(h_jint(r, "leaked_bytes"), (long long)blocks_of(in_root));
	cr_expect_str_eq(request_of(r, h_str("%sr_0_0", prefix)) ?: "(none)", h_str("%sr", prefix));
	json_decref(r);
}

/* Markers in an abort directory under /dev/shm are not files of requests:
 * they take no place in the table (--max-files).  A marker's creation may
 * be read before the marker itself; when it then fills the table, the
 * markers are read before the next file is refused.  One process makes them
 * one after another, so each marker is in the inotify queue by the time the
 * next one's creation is read: a table of one file is enough, however slowly
 * the auditor runs (a limit of 100 was once too few for 200 markers in CI). */
Test(audit, markers_take_no_table_slots)
{
	need_bpf();
	const char *script = h_str("i=0; while [ $i -lt 200 ]; do : > %s/%sm$i; i=$((i + 1)); done", abort_dir, prefix);
	const char *cmd[] = {"/bin/sh", "-c", script, NULL};
	const char *options[] = {"--max-files", "1", "--grace", "0.1", NULL};
	char *err;

	int status = h_run(audit_with(options, cmd), NULL, &err);
	json_t *r = report();
	cr_expect_eq(status, 0, "exit %d, %lld files over the limit: %s", status, h_jint(r, "files_over_limit"), err);
	cr_expect_eq(h_jint(r, "aborts"), 200);
	cr_expect_eq(h_jint(r, "files_over_limit"), 0);
	cr_expect_eq(h_jint(r, "tracked_files_at_end"), 0);
	json_decref(r);
}

/* Numbers out of range, and negative ones, are refused before anything runs. */
Test(audit, out_of_range_numbers_are_refused)
{
	const char *cmd[] = {"/bin/true", NULL};
	const char *bad[][3] = {{"--ring-kib", "4294967300", NULL}, {"--ring-kib", "-8", NULL},
				{"--max-files", "-1", NULL},         {"--max-files", "18446744073709551617", NULL},
				{"--max-files", " 5", NULL},         {"--ring-kib", "+8", NULL}};
	char *err;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_expect_eq(h_run(audit_with(bad[i], cmd), NULL, &err), 2, "%s %s: %s", bad[i][0], bad[i][1], err);
		cr_expect(strstr(err, bad[i][0]), "the message names the option: %s", err);
	}
}

/* A report that cannot be written is found before COMMAND runs. */
Test(audit, an_unwritable_json_path_is_refused_before_the_run)
{
	const char *proof = h_str("/dev/shm/%sran", prefix);
	const char *argv[] = {h_bin("SG_CLI"), "audit", "--abort-dir", abort_dir, "--json",
			      h_str("/nonexistent/%s/report.json", prefix), "--", h_bin("SG_SHMTOOL"), "touch", proof,
			      NULL};
	char *err;

	cr_expect_eq(h_run(argv, NULL, &err), 2, "%s", err);
	cr_expect(strstr(err, "report.json"), "the message names the path: %s", err);
	cr_expect(!h_exists(proof), "COMMAND ran before the path was checked");
}

/* A COMMAND that ignores SIGINT: the first is passed on, the second kills
 * it and ends the run at once, with the report of what was measured. */
Test(audit, a_second_sigint_stops_a_command_that_ignores_it)
{
	need_bpf();
	const char *cmd[] = {"/bin/sh", "-c", "trap '' INT; echo ready; exec sleep 30", NULL};
	const char *options[] = {NULL};
	char *err;

	struct h_proc p = h_spawn(audit_with(options, cmd), NULL);
	cr_assert_str_eq(h_read_line(&p, 20000) ?: "", "ready");
	long t0 = h_now_ms();
	cr_assert_eq(kill(p.pid, SIGINT), 0);
	usleep(300 * 1000);
	cr_assert_eq(kill(p.pid, SIGINT), 0);
	int status = h_finish(&p, &err);
	cr_expect_lt(h_now_ms() - t0, 5000, "the auditor kept waiting for COMMAND");
	cr_expect_eq(status, 4, "COMMAND did not end by itself: %s", err);
	const char *said = "shmguard audit: COMMAND ignores SIGINT; a second one (Ctrl-C again) kills it";
	cr_expect(strstr(err, said), "the first SIGINT said nothing: %s", err);
	cr_expect(!strstr(err, said) || !strstr(strstr(err, said) + 1, said), "said more than once: %s", err);
	json_t *r = report();
	cr_expect(json_is_true(json_object_get(r, "interrupted")));
	/* Issue 22: null means no COMMAND; a killed one has its status. */
	cr_expect_eq(h_jint(r, "command_exit_status"), 128 + SIGKILL);
	cr_expect_eq(h_jint(r, "command_signal"), SIGKILL);
	json_decref(r);
}

/* Issue 22: the report says which shmguard made it, and when the run began. */
Test(audit, the_json_report_carries_the_version_and_the_start_time)
{
	need_bpf();
	const char *cmd[] = {"/bin/true", NULL};
	time_t before = time(NULL);
	struct tm tm = {0};
	char *err;

	cr_assert_eq(h_run(audit_argv(NULL, cmd), NULL, &err), 0, "%s", err);
	json_t *r = report();
	cr_expect_eq(h_jint(r, "schema"), 3);
	const char *version = json_string_value(json_object_get(r, "shmguard_version"));
	cr_expect(version && *version >= '0' && *version <= '9', "%s", version ?: "(none)");
	const char *at = json_string_value(json_object_get(r, "started_at"));
	cr_assert(at, "no started_at");
	const char *rest = strptime(at, "%Y-%m-%dT%H:%M:%S", &tm);
	cr_assert(rest && rest[0] == '.' && rest[4] == 'Z' && !rest[5], "not RFC 3339 UTC: %s", at);
	time_t t = timegm(&tm);
	cr_expect(t >= before - 1 && t <= time(NULL), "%s is not when the run began", at);
	cr_expect_eq(h_jint(r, "command_exit_status"), 0);
	cr_expect(json_is_null(json_object_get(r, "command_signal")));
	json_decref(r);
}

/* Another user made the abort directory first, or it is open to all
 * without the sticky bit: the shims ignore its markers, so the auditor
 * refuses it rather than count what anyone drops there. */
Test(audit, an_abort_dir_the_shims_refuse_is_refused)
{
	const struct h_user *u = h_hostile_user();
	const char *mk[] = {"/bin/mkdir", "-m", "0755", abort_dir, NULL};
	const char *cmd[] = {"/bin/true", NULL};
	char *out, *err;

	cr_assert_eq(rmdir(abort_dir), 0);
	cr_assert_eq(h_output_as(u, mk, NULL, &out, &err), 0, "%s", err);
	cr_expect_eq(h_run(audit_argv(NULL, cmd), NULL, &err), 2, "%s", err);
	cr_expect(strstr(err, "belongs to another user") && h_occurrences(err, "\n") == 1, "%s", err);
	cr_assert_eq(rmdir(abort_dir), 0);
	cr_assert_eq(mkdir(abort_dir, 0777), 0);
	cr_assert_eq(chmod(abort_dir, 0777), 0);
	cr_expect_eq(h_run(audit_argv(NULL, cmd), NULL, &err), 2, "%s", err);
	cr_expect(strstr(err, "world-writable without the sticky bit"), "%s", err);
	/* A symbolic link is never followed, and the reason says so. */
	cr_assert_eq(rmdir(abort_dir), 0);
	cr_assert_eq(symlink("/tmp", abort_dir), 0);
	cr_expect_eq(h_run(audit_argv(NULL, cmd), NULL, &err), 2, "%s", err);
	cr_expect(strstr(err, "it is a symbolic link"), "%s", err);
	cr_assert_eq(unlink(abort_dir), 0);
	cr_assert_eq(mkdir(abort_dir, 0755), 0);
}

/* The shims run as another user, with an abort directory of their own:
 * --shim-uid checks it, and its markers, as those shims do, and their
 * aborts are measured; a user that does not exist is bad usage. */
Test(audit, shim_uid_measures_the_aborts_of_shims_running_as_another_user)
{
	need_bpf();
	const struct h_user *u = h_hostile_user();
	const char *mk[] = {"/bin/mkdir", "-m", "0755", abort_dir, NULL};
	const char *seg = h_str("/dev/shm/%sr_0_0", prefix);
	const char *cmd[] = {"/usr/bin/setpriv", h_str("--reuid=%u", (unsigned)u->uid), h_str("--regid=%u", (unsigned)u->gid),
			     "--clear-groups", h_bin("SG_SHMTOOL"), "region", seg, "8192", ",", "touch",
			     h_str("%s/%sr", abort_dir, prefix), NULL};
	const char *bad[] = {"/bin/true", NULL};
	char *out, *err;

	cr_assert_eq(rmdir(abort_dir), 0);
	cr_assert_eq(h_output_as(u, mk, NULL, &out, &err), 0, "%s", err);
	cr_expect_eq(h_run(with_options(audit_argv(NULL, bad), "--shim-uid", "no-such-user-sg", NULL), NULL, &err), 2,
		     "%s", err);
	cr_expect(strstr(err, "bad --shim-uid 'no-such-user-sg'"), "%s", err);
	int status = h_run(with_options(audit_argv(NULL, cmd), "--shim-uid", u->name, NULL), NULL, &err);
	cr_expect_eq(status, 0, "exit %d: %s", status, err);
	json_t *r = report();
	cr_expect_eq(h_jint(r, "aborts"), 1);
	cr_expect_eq(h_jint(r, "markers_refused"), 0);
	cr_expect_eq(h_jint(r, "leaked_files"), 1);
	cr_expect_str_eq(request_of(r, h_str("%sr_0_0", prefix)) ?: "(none)", h_str("%sr", prefix));
	json_decref(r);
	unlink(seg);
	unlink(h_str("%s/%sr", abort_dir, prefix));
	cr_assert_eq(rmdir(abort_dir), 0);
	cr_assert_eq(mkdir(abort_dir, 0755), 0);
}

/* In a directory all may write to (root's, sticky), another user drops
 * files, a FIFO, a hard link to a file of root's and a marker for a live
 * request: none is an abort, each is counted apart. */
Test(audit, entries_others_drop_into_the_abort_dir_are_no_aborts)
{
	need_bpf();
	const struct h_user *u = h_hostile_user();
	const char *root_file = h_str("/dev/shm/%sroot-file", prefix);
	const char *drop = h_str("i=0; while [ $i -lt 30 ]; do : > %s/%sf$i; i=$((i + 1)); done; mkfifo %s/%sfifo; "
				 "ln %s %s/%slink; : > %s/%slive",
				 abort_dir, prefix, abort_dir, prefix, root_file, abort_dir, prefix, abort_dir, prefix);
	const char *sh[] = {"/bin/sh", "-c", drop, NULL};
	const char *cmd[] = {h_bin("SG_SHMTOOL"), "shm", h_str("%slive_0_0", prefix), "4096", "wait", NULL};
	char *out, *err;

	cr_assert_eq(chmod(abort_dir, 01777), 0);
	close(open(root_file, O_CREAT | O_WRONLY, 0666));
	cr_assert_eq(chmod(root_file, 0666), 0);
	struct h_proc p = h_spawn(audit_argv(NULL, cmd), NULL);
	cr_assert_str_eq(h_read_line(&p, 20000) ?: "", "ready");
	cr_assert_eq(h_output_as(u, sh, NULL, &out, &err), 0, "%s", err);
	close(open(h_str("%s/%sgone", abort_dir, prefix), O_CREAT | O_WRONLY, 0644)); /* root's own marker */
	h_wait_measured(&p, 1);
	cr_assert_eq(h_finish(&p, &err), 0, "%s", err);
	json_t *r = report();
	cr_expect_eq(h_jint(r, "aborts"), 1, "%s", err);
	cr_expect_eq(h_jint(r, "markers_refused"), 33);
	cr_expect_eq(h_jint(r, "leaked_bytes"), 0, "another user's marker made a live request leak");
	json_decref(r);
}

/* On a terminal the progress line is redrawn in place: one wider than the
 * terminal would wrap and scroll at every redraw, so it is cut to fit. */
Test(audit, the_progress_line_fits_the_terminal)
{
	need_bpf();
	const char *cmd[] = {"/bin/sleep", "1.5", NULL};
	const char **argv = audit_argv(NULL, cmd);
	struct winsize ws = {.ws_row = 24, .ws_col = 40};
	char buf[65536];
	size_t len = 0;
	int master, status, lines = 0;
	pid_t pid = forkpty(&master, NULL, NULL, &ws);

	cr_assert_geq(pid, 0);
	if (pid == 0) {
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	for (struct pollfd p = {master, POLLIN, 0}; len < sizeof(buf) - 1 && poll(&p, 1, 20000) > 0;) {
		ssize_t n = read(master, buf + len, sizeof(buf) - 1 - len);
		if (n <= 0)
			break; /* EIO: the auditor is gone */
		len += (size_t)n;
	}
	buf[len] = '\0';
	close(master);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %d: %s", status, buf);
	/* Each redraw is "\r" LINE "\033[K". */
	for (char *at = buf; (at = strstr(at, "\r[")); at++) {
		char *end = strstr(at, "\033[K");
		cr_assert_not_null(end, "%s", at);
		cr_expect_leq(end - at - 1, 39, "a progress line wider than 40 columns: %.*s", (int)(end - at - 1), at + 1);
		lines++;
	}
	cr_expect_gt(lines, 0, "no progress line on the terminal: %s", buf);
}

/* A report cut short (its filesystem full) never takes the place of the one
 * there before: the old file stays whole, no half-written file is left
 * beside it, and the exit status says a report could not be written. */
Test(audit, a_report_that_cannot_be_written_whole_leaves_the_old_one)
{
	need_bpf();
	h_private_mounts(teardown);
	char dir[] = "/tmp/sgt-full-XXXXXX", *err;
	const char *cmd[] = {"/bin/true", NULL}, *options[] = {NULL};

	cr_assert(mkdtemp(dir));
	/* Two pages: the old report takes one, a filler the other. */
	cr_assert_eq(mount("tmpfs", dir, "tmpfs", 0, "size=8k"), 0, "%s", strerror(errno));
	char *target = h_str("%s/report.json", dir), *filler = h_str("%s/filler", dir), old[64] = "";
	FILE *f = fopen(target, "w");
	cr_assert(f && fputs("previous\n", f) >= 0 && fclose(f) == 0);
	int fd = open(filler, O_WRONLY | O_CREAT, 0600);
	for (char page[4096] = {0}; write(fd, page, sizeof(page)) > 0;)
		;
	close(fd);

	int status = h_run(h_audit_argv(abort_dir, PATTERNS, target, options, cmd), NULL, &err);
	cr_expect_eq(status, 2, "exit %d: %s", status, err);
	cr_expect(strstr(err, "cannot write"), "%s", err);
	f = fopen(target, "r");
	cr_expect(f && fgets(old, sizeof(old), f) && strcmp(old, "previous\n") == 0, "the old report: %s", old);
	if (f)
		fclose(f);
	DIR *d = opendir(dir);
	unsigned entries = 0;
	for (struct dirent *e; (e = readdir(d));)
		entries += e->d_name[0] != '.';
	closedir(d);
	cr_expect_eq(entries, 2, "a half-written report was left beside the old one");
	umount2(dir, MNT_DETACH);
	rmdir(dir);
}

/* Under a seccomp filter that refuses bpf() (a runtime's default profile
 * without CAP_SYS_ADMIN), the auditor names seccomp and what to set, not
 * the capabilities it has. */
Test(audit, a_seccomp_filter_refusing_bpf_is_named)
{
	need_bpf();
	const char *argv[] = {h_bin("SG_DENY_BPF"), h_bin("SG_CLI"), "audit", "--abort-dir", abort_dir, "--", "/bin/true",
			      NULL};
	char *err;

	cr_expect_eq(h_run(argv, NULL, &err), 3, "%s", err);
	cr_expect(strstr(err, "seccomp filter refuses bpf()") && strstr(err, "Localhost") &&
			  strstr(err, "shmguard-node.json"),
		  "%s", err);
	cr_expect(!strstr(err, "run as root"), "%s", err);
}

/* Issue 34, finding 5: a pipeline's teardown at exit (vllm-omni's
 * connector's close(), Python's resource tracker) removes its aborted
 * requests' files.  Three aborts measured while it runs leave 64 KiB
 * each; two more come just before the end, not measured when it ends:
 * measured after the teardown they would read 0 and dilute the figure.
 * They are counted apart, in no figure, and said; a gate that saw only
 * such aborts does not pass. */
Test(audit, aborts_cut_short_by_the_commands_end_are_no_measure)
{
	need_bpf();
	const char *files = h_str("/dev/shm/%sr", prefix), *marks = h_str("%s/%sr", abort_dir, prefix);
	const char *script = h_str(
		"for r in 1 2 3; do fallocate -l 65536 %s${r}_0_0 && touch %s$r; done && echo marked && "
		"read x && for r in 4 5; do fallocate -l 65536 %s${r}_0_0 && touch %s$r; done && echo marked && "
		"read x && rm -f %s*_0_0",
		files, marks, files, marks, files);
	const char *cmd[] = {"/bin/sh", "-c", script, NULL};
	const char *options[] = {"--grace", "3", NULL};
	struct h_proc p = h_spawn(h_audit_argv(abort_dir, PATTERNS, json_path, options, cmd), NULL);
	char *out;

	cr_assert_str_eq(h_read_line(&p, 60000) ?: "", "marked");
	h_wait_measured(&p, 3);
	cr_assert_eq(write(p.in, "go\n", 3), 3);
	cr_assert_str_eq(h_read_line(&p, 60000) ?: "", "marked");
	/* The review has seen the two late ones' files: then the teardown. */
	cr_assert(h_wait_stderr(&p, "in 5 files", 20000), "the late aborts' files were never seen");
	cr_assert_eq(write(p.in, "go\n", 3), 3);
	out = h_read_all(&p, 20000);
	cr_assert_eq(h_finish(&p, NULL), 0, "%s", out);
	json_t *r = report();
	cr_expect_eq(h_jint(r, "aborts"), 3);
	cr_expect_eq(h_jint(r, "aborts_cut_short"), 2);
	cr_expect_eq(h_jint(r, "leaked_bytes"), 3 * 65536, "the teardown's removals were measured");
	cr_expect_float_eq(json_real_value(json_object_get(r, "leaked_kib_per_abort")), 64.0, 1e-9, "diluted");
	cr_expect(strstr(out, "warning: 2 aborts cut short"), "%s", out);
	json_decref(r);

	/* Only such aborts, and a budget: no pass, whatever --min-aborts. */
	const char *only = h_str("fallocate -l 4096 %s9_0_0 && touch %s9 && echo marked && read x && rm -f %s9_0_0",
				 files, marks, files);
	const char *cmd2[] = {"/bin/sh", "-c", only, NULL};
	const char *budget[] = {"--grace", "5", "--max-kib-per-abort", "0", "--min-aborts", "0", NULL};
	p = h_spawn(h_audit_argv(abort_dir, PATTERNS, json_path, budget, cmd2), NULL);
	cr_assert_str_eq(h_read_line(&p, 60000) ?: "", "marked");
	cr_assert(h_wait_stderr(&p, "in 1 file", 20000), "the file was never seen");
	cr_assert_eq(write(p.in, "go\n", 3), 3);
	out = h_read_all(&p, 20000);
	cr_expect_eq(h_finish(&p, NULL), 1, "%s", out);
	r = report();
	cr_expect_eq(h_jint(r, "aborts_cut_short"), 1);
	cr_expect_str_eq(json_string_value(json_object_get(r, "verdict")), "fail");
	json_decref(r);
}
