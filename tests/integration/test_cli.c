/* The shmguard command: exit codes and messages for good and bad input. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"

static const char *prefix, *abort_dir;

static void setup(void)
{
	h_setup("cli", &prefix, &abort_dir, NULL);
}

static void teardown(void)
{
	h_teardown(prefix, NULL);
}

TestSuite(cli, .init = setup, .fini = teardown, .timeout = 30);

static int cli(char **err, const char *a1, const char *a2, const char *a3, const char *a4, const char *a5)
{
	const char *argv[] = {h_bin("SG_CLI"), a1, a2, a3, a4, a5, NULL};
	return h_run(argv, NULL, err);
}

/* Whether this shmguard has `audit` (meson gives SG_AUDITOR). */
static bool built_with_auditor(void)
{
	return strcmp(h_bin("SG_AUDITOR"), "1") == 0;
}

Test(cli, help_and_unknown_commands)
{
	char *err;
	cr_expect_eq(cli(&err, "--help", NULL, NULL, NULL, NULL), 0);
	cr_expect_eq(cli(&err, "run", "--help", NULL, NULL, NULL), 0);
	cr_expect_eq(cli(&err, "abort", "--help", NULL, NULL, NULL), 0);
	cr_expect_eq(cli(&err, "frobnicate", NULL, NULL, NULL, NULL), 2);
	cr_expect(strstr(err, "unknown command 'frobnicate'"), "%s", err);
	cr_expect_eq(cli(&err, NULL, NULL, NULL, NULL, NULL), 2);
}

Test(cli, abort_writes_markers)
{
	char *err;
	cr_assert_eq(cli(&err, "abort", "--abort-dir", abort_dir, h_str("%sr1", prefix), h_str("%sr2", prefix)), 0,
		     "%s", err);
	cr_expect(h_exists(h_str("%s/%sr1", abort_dir, prefix)));
	cr_expect(h_exists(h_str("%s/%sr2", abort_dir, prefix)));
}

Test(cli, abort_takes_the_short_options_of_run)
{
	char *err;
	cr_assert_eq(cli(&err, "abort", "-a", abort_dir, "-t", "5"), 2, "no ID: bad usage");
	const char *argv[] = {h_bin("SG_CLI"), "abort", "-a", abort_dir, "-t", "5", h_str("%sr1", prefix), NULL};
	cr_assert_eq(h_run(argv, NULL, &err), 0, "%s", err);
	cr_expect(h_exists(h_str("%s/%sr1", abort_dir, prefix)));
}

Test(cli, every_command_prints_its_help_on_stdout_and_succeeds)
{
	static const char *const subs[] = {"run", "abort", "audit", "ls", "sweep", "doctor"};

	for (size_t i = 0; i < sizeof(subs) / sizeof(*subs); i++) {
		const char *argv[] = {h_bin("SG_CLI"), subs[i], "--help", NULL};
		char *out, *err;
		cr_expect_eq(h_output(argv, NULL, &out, &err), 0, "%s --help", subs[i]);
		cr_expect(strncmp(out, h_str("Usage: shmguard %s ", subs[i]), strlen(subs[i]) + 17) == 0, "%s", out);
		cr_expect_str_empty(err, "%s --help: %s", subs[i], err);
	}
}

Test(cli, abort_rejects_bad_ids_before_writing_any)
{
	char *err;
	cr_expect_eq(cli(&err, "abort", "--abort-dir", abort_dir, h_str("%sok", prefix), "a/b"), 2);
	cr_expect(strstr(err, "bad request ID 'a/b': it contains '/'"), "%s", err);
	cr_expect(!h_exists(h_str("%s/%sok", abort_dir, prefix)), "a marker was written despite a bad ID");
	cr_expect_eq(cli(&err, "abort", "--abort-dir", abort_dir, "..", NULL), 2);
	cr_expect_eq(cli(&err, "abort", "--abort-dir", abort_dir, "", NULL), 2);
	char longid[300];
	memset(longid, 'x', 256);
	longid[256] = '\0';
	cr_expect_eq(cli(&err, "abort", "--abort-dir", abort_dir, longid, NULL), 2);
	cr_expect(strstr(err, "longer than 255 bytes"), "%s", err);
	cr_expect_eq(cli(&err, "abort", "--abort-dir", "relative/dir", "x", NULL), 2);
	cr_expect_eq(cli(&err, "abort", "--abort-dir", "/dev/shm", "x", NULL), 2);
	cr_expect(strstr(err, "must not be a shm root"), "%s", err);
	cr_expect_eq(cli(&err, "abort", "--ttl", "soon", "x", NULL), 2);
	cr_expect_eq(cli(&err, "abort", "--bogus", "x", NULL, NULL), 2);
	cr_expect_eq(cli(&err, "abort", "--abort-dir", abort_dir, NULL, NULL), 2, "no ID is bad usage");
}

Test(cli, abort_refuses_an_unsafe_directory)
{
	char *err;
	cr_assert_eq(mkdir(abort_dir, 0777), 0);
	cr_assert_eq(chmod(abort_dir, 0777), 0);
	cr_expect_eq(cli(&err, "abort", "--abort-dir", abort_dir, "x", NULL), 1);
	cr_expect(strstr(err, "sticky"), "%s", err);
}

/* #12: every command checks the abort directory against every root, the
 * shims' (SHMGUARD_SHM_ROOTS) included, with one function. */
Test(cli, abort_refuses_a_directory_that_is_a_shm_root)
{
	const char *root = h_str("/dev/shm/%sroot", prefix);
	const char *env[] = {h_str("SHMGUARD_SHM_ROOTS=%s/", root), NULL};
	const char *argv[] = {h_bin("SG_CLI"), "abort", "--abort-dir", root, h_str("%sr1", prefix), NULL};
	const char *audit[] = {h_bin("SG_CLI"), "audit", "--shm-root", root, "--abort-dir", h_str("%s//", root),
			       "true", NULL};
	char *err;

	cr_assert_eq(mkdir(root, 0755), 0);
	cr_expect_eq(h_run(argv, env, &err), 2, "a marker was written among the segments: %s", err);
	cr_expect(strstr(err, "must not be a shm root"), "%s", err);
	cr_expect(!h_exists(h_str("%s/%sr1", root, prefix)));
	if (!built_with_auditor())
		return; /* audit_says_when_it_was_built_without_the_auditor */
	cr_expect_eq(h_run(audit, NULL, &err), 2, "%s", err);
	cr_expect(strstr(err, "must not be a shm root"), "%s", err);
}

/* A build without the auditor (-Dauditor=disabled) runs every other command,
 * and its audit says why it cannot, with the status of "tracing is not
 * possible here": a CI gate fails rather than passing on nothing. */
Test(cli, audit_says_when_it_was_built_without_the_auditor)
{
	char *err;
	int status = cli(&err, "audit", "--abort-dir", abort_dir, "--", "true");

	if (built_with_auditor()) {
		cr_expect_neq(status, 3, "%s", err);
		cr_expect(!strstr(err, "built without the auditor"), "%s", err);
		return;
	}
	cr_expect_eq(status, 3, "%s", err);
	cr_expect(strstr(err, "shmguard audit: this shmguard was built without the auditor"), "%s", err);
}

Test(cli, run_checks_configuration_and_command)
{
	char *err;
	cr_expect_eq(cli(&err, "run", "--patterns", "{req", "--", "/bin/true"), 2);
	cr_expect(strstr(err, "SHMGUARD_PATTERNS"), "%s", err);
	cr_expect_eq(cli(&err, "run", "--log", "loud", "--", "/bin/true"), 2);
	cr_expect_eq(cli(&err, "run", "--tag", "maybe", "--", "/bin/true"), 2);
	cr_expect(strstr(err, "SHMGUARD_TAG"), "%s", err);
	cr_expect_eq(cli(&err, "run", NULL, NULL, NULL, NULL), 2);
	cr_expect_eq(cli(&err, "run", "--", "/nonexistent/program", NULL, NULL), 127);
	cr_expect_eq(cli(&err, "run", "--lib", "/nonexistent/lib.so", "--", "/bin/true"), 1);
}

Test(cli, run_preloads_the_shim_and_passes_the_exit_status)
{
	char *err;
	cr_expect_eq(cli(&err, "run", "--", "/bin/sh", "-c", "case \"$LD_PRELOAD\" in *libshmguard.so*) exit 7;; esac"),
		     7, "%s", err);
}

Test(cli, doctor_tells_which_binaries_can_be_interposed)
{
	const char *setid = h_str("/tmp/%ssetid", prefix);
	char *err;
	const char *ok[] = {h_bin("SG_CLI"), "doctor", "--binary", h_bin("SG_SHMTOOL"), NULL};
	const char *stat_bin[] = {h_bin("SG_CLI"), "doctor", "--binary", h_bin("SG_STATIC"), NULL};
	const char *setid_bin[] = {h_bin("SG_CLI"), "doctor", "--binary", setid, NULL};
	char *text;

	if (strcmp(h_bin("SG_DOCTOR_BINARY"), "1") != 0) { /* built without libelf */
		cr_expect_eq(h_output(ok, NULL, &text, &err), 1);
		cr_expect(strstr(text, "binary     FAIL") && strstr(text, "built without libelf"), "%s", text);
		return;
	}
	/* The whole verdict depends on BPF too: only the binary's line is checked. */
	h_output(ok, NULL, &text, NULL);
	cr_expect(strstr(text, "binary     ok"), "%s", text);
	cr_expect(strstr(text, "/dev/shm   ok"), "%s", text);

	cr_expect_eq(h_output(stat_bin, NULL, &text, &err), 1);
	cr_expect(strstr(text, "statically linked"), "%s", text);

	cr_assert_eq(system(h_str("cp %s %s && chmod u+s %s", h_bin("SG_SHMTOOL"), setid, setid)), 0);
	cr_expect_eq(h_output(setid_bin, NULL, &text, NULL), 1);
	cr_expect(strstr(text, "set-id"), "%s", text);
	unlink(setid);
	cr_expect_eq(cli(&err, "doctor", "--bogus", NULL, NULL, NULL), 2);
}

Test(cli, doctor_says_whether_the_shim_is_preloaded)
{
	const char *argv[] = {h_bin("SG_CLI"), "doctor", NULL};
	const char *preloaded[] = {h_str("LD_PRELOAD=%s", h_bin("SG_SHIM")), NULL};
	const char *missing[] = {h_str("LD_PRELOAD=/nonexistent/%s/libshmguard.so", prefix), NULL};
	char *text;

	/* The whole verdict depends on BPF too: only the shim's lines are checked. */
	h_output(argv, preloaded, &text, NULL);
	cr_expect(strstr(text, h_str("preload    ok   the shim is preloaded in this process (%s)", h_bin("SG_SHIM"))),
		  "%s", text);
	cr_expect(strstr(text, h_str("ok     it needs glibc %s or later; this is glibc ", h_bin("SG_GLIBC_FLOOR"))), "%s", text);

	/* The loader says it once and goes on without: doctor says so clearly. */
	cr_expect_eq(h_output(argv, missing, &text, NULL), 1);
	cr_expect(strstr(text, "preload    FAIL the shim is NOT loaded: LD_PRELOAD names /nonexistent/"), "%s", text);
	cr_expect(strstr(text, "No such file or directory"), "%s", text);
}

/* doctor --json: the text's checks in its order, with their verdicts, detail
 * lines and notes, the same exit status, and every field documented. */
Test(cli, doctor_json_says_what_the_text_says)
{
	/* More than any root has: the need check fails and explains itself. */
	const char *text_argv[] = {h_bin("SG_CLI"), "doctor", "--need", "1000TiB", NULL};
	const char *json_argv[] = {h_bin("SG_CLI"), "doctor", "--need", "1000TiB", "--json", NULL};
	size_t named = 0, details = 0, notes = 0, i;
	char *text, *out, *err, *line, *save = NULL;
	json_error_t je;
	json_t *doc, *checks, *c;

	int status = h_output(text_argv, NULL, &text, NULL);
	cr_assert_eq(status, 1, "%s", text);
	cr_assert_eq(h_output(json_argv, NULL, &out, &err), status, "%s", err);
	cr_assert_not_null(doc = json_loads(out, 0, &je), "%s: %s", je.text, out);
	checks = json_object_get(doc, "checks");
	cr_expect(json_is_false(json_object_get(doc, "ok")));
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char name[256], verdict[8];
		if (line[0] != ' ') {
			cr_assert_eq(sscanf(line, "%255s %7s", name, verdict), 2, "%s", line);
			c = json_array_get(checks, named++);
			cr_expect_str_eq(json_string_value(json_object_get(c, "name")), name);
			cr_expect_str_eq(json_string_value(json_object_get(c, "verdict")), strcmp(verdict, "ok") ? "fail" : "ok",
					 "%s", line);
		} else if (strncmp(line + 11, "ok ", 3) == 0 || strncmp(line + 11, "FAIL ", 5) == 0) {
			details++;
		} else {
			notes++;
		}
	}
	cr_expect_eq(json_array_size(checks), named, "%s", out);
	json_array_foreach(checks, i, c) {
		details -= json_array_size(json_object_get(c, "details"));
		notes -= json_array_size(json_object_get(c, "notes"));
	}
	cr_expect_eq(details, 0, "%s", out);
	cr_expect_eq(notes, 0, "%s", out);
	c = json_array_get(checks, named - 1);
	cr_expect_str_eq(json_string_value(json_object_get(c, "name")), "need");
	cr_expect_gt(json_array_size(json_object_get(c, "notes")), 0, "%s", out);
	h_expect_json_documented(doc, "doctor");
	json_decref(doc);
}

Test(cli, abort_as_another_user_cannot_write_into_roots_directory)
{
	const struct h_user *u = h_hostile_user();
	char *out, *err;

	cr_assert_eq(mkdir(abort_dir, 0755), 0);
	const char *argv[] = {h_bin("SG_CLI"), "abort", "--abort-dir", abort_dir, h_str("%sr", prefix), NULL};
	cr_expect_eq(h_output_as(u, argv, NULL, &out, &err), 1, "%s", err);
	cr_expect(!h_exists(h_str("%s/%sr", abort_dir, prefix)));
}

static int count_lines(const char *s)
{
	int n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

/* The file's text (up to 64 KiB), "" when it cannot be read. */
static const char *read_file(const char *path)
{
	static char buf[65536];
	FILE *f = fopen(path, "r");
	size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;

	if (f)
		fclose(f);
	buf[n] = '\0';
	return buf;
}

/* A usage error is two lines on stderr: what is wrong, named after the
 * command, and where to look; never the whole help; exit 2. */
static void expect_usage_error(const char *sub, const char *const *args, const char *says)
{
	const char *argv[12] = {h_bin("SG_CLI"), sub};
	size_t n = 2;
	char *out, *err;

	for (; *args && n < 11; args++)
		argv[n++] = *args;
	argv[n] = NULL;
	cr_expect_eq(h_output(argv, NULL, &out, &err), 2, "%s %s: %s", sub, says, err);
	cr_expect_str_empty(out, "%s: %s", says, out);
	cr_expect(strncmp(err, h_str("shmguard %s: ", sub), strlen(sub) + 11) == 0, "%s: %s", says, err);
	cr_expect(strstr(err, says), "expected '%s' in: %s", says, err);
	cr_expect(strstr(err, h_str("\nTry 'shmguard %s --help' for more information.\n", sub)), "%s: %s", says, err);
	cr_expect_eq(count_lines(err), 2, "%s: one line and the Try line, not the help: %s", says, err);
}

Test(cli, usage_errors_say_what_is_wrong_in_one_line)
{
	expect_usage_error("abort", (const char *[]){NULL}, "no request ID given");
	expect_usage_error("abort", (const char *[]){"--follow", "-", NULL}, "--follow needs --match REGEX or --preset");
	expect_usage_error("abort", (const char *[]){"--follow", "-", "--preset", "vllm", "--match", "(?<req>x)", NULL},
			   "give one");
	expect_usage_error("abort", (const char *[]){"--preset", "vllm", "id", NULL}, "go with --follow");
	expect_usage_error("abort", (const char *[]){"--follow", "-", "--preset", "vllm", "extra", NULL},
			   "unexpected argument 'extra'");
	expect_usage_error("sweep", (const char *[]){NULL}, "nothing to sweep");
	expect_usage_error("sweep", (const char *[]){"--dead", "extra", NULL}, "unexpected argument 'extra'");
	expect_usage_error("ls", (const char *[]){"extra", NULL}, "unexpected argument 'extra'");
	expect_usage_error("ls", (const char *[]){"--root", "/dev/shm", "\x1b[2J", NULL}, "unexpected argument '\\x1b[2J'");
	expect_usage_error("doctor", (const char *[]){"extra", NULL}, "unexpected argument 'extra'");
	expect_usage_error("run", (const char *[]){NULL}, "no COMMAND given");
	/* getopt's own messages, named after the command. */
	expect_usage_error("doctor", (const char *[]){"--bogus", NULL}, "shmguard doctor: unrecognized option '--bogus'");
	expect_usage_error("ls", (const char *[]){"-x", NULL}, "shmguard ls: invalid option -- 'x'");
	if (!built_with_auditor())
		return; /* its stand-in parses nothing: audit_says_when_it_was_built_without_the_auditor */
	expect_usage_error("audit", (const char *[]){"--grace", "soon", "--", "true", NULL}, "bad --grace 'soon'");
	expect_usage_error("audit", (const char *[]){"--grace", NULL}, "shmguard audit: option '--grace' requires an argument");
}

Test(cli, every_command_prints_its_version)
{
	static const char *const subs[] = {"run", "abort", "audit", "ls", "sweep", "doctor"};

	for (size_t i = 0; i < sizeof(subs) / sizeof(*subs); i++) {
		for (int longer = 0; longer < 2; longer++) {
			const char *argv[] = {h_bin("SG_CLI"), subs[i], longer ? "--version" : "-V", NULL};
			char *out, *err;
			cr_expect_eq(h_output(argv, NULL, &out, &err), 0, "%s %s: %s", subs[i], argv[2], err);
			cr_expect(strncmp(out, "shmguard ", 9) == 0 && strchr("0123456789", out[9]), "%s: %s", subs[i], out);
		}
	}
	const char *argv[] = {h_bin("SG_CLI"), "-V", NULL};
	char *out, *err;
	cr_expect_eq(h_output(argv, NULL, &out, &err), 0);
	cr_expect(strncmp(out, "shmguard ", 9) == 0, "%s", out);
}

Test(cli, durations_take_units_everywhere)
{
	char *err;
	/* The TTL: 10m is 600 s, within the limit; 8d is over it. */
	const char *ok[] = {h_bin("SG_CLI"), "abort", "--abort-dir", abort_dir, "--ttl", "10m", h_str("%sr1", prefix), NULL};
	cr_expect_eq(h_run(ok, NULL, &err), 0, "%s", err);
	cr_expect(h_exists(h_str("%s/%sr1", abort_dir, prefix)));
	const char *over[] = {h_bin("SG_CLI"), "abort", "--abort-dir", abort_dir, "--ttl", "8d", h_str("%sr2", prefix), NULL};
	cr_expect_eq(h_run(over, NULL, &err), 2);
	cr_expect(strstr(err, "bad TTL '8d'"), "%s", err);
	if (!built_with_auditor())
		return;
	/* audit's --grace, --interval, --duration: parsed before any tracing,
	 * so a refusal here is exit 2 and an accepted one gets to the next check. */
	const char *a[] = {h_bin("SG_CLI"), "audit", "--abort-dir", abort_dir, "--grace", "500ms", "--interval", "1m",
			   "--duration", "2h", "--", "true", NULL};
	char *out;
	cr_expect_eq(h_output(a, NULL, &out, &err), 2, "%s", err);
	cr_expect(strstr(err, "--duration is for a run without COMMAND"), "the durations were accepted: %s", err);
}

Test(cli, ls_and_sweep_write_json_where_told)
{
	const char *dir = h_str("/dev/shm/%sroot", prefix), *file = h_str("/dev/shm/%sls.json", prefix);
	char *out, *err;

	cr_assert_eq(mkdir(dir, 0700), 0);
	const char *to_stdout[] = {h_bin("SG_CLI"), "ls", "--root", dir, "--json", NULL};
	cr_expect_eq(h_output(to_stdout, NULL, &out, &err), 0, "%s", err);
	cr_expect(strstr(out, "\"total_files\": 0"), "%s", out);
	const char *dash[] = {h_bin("SG_CLI"), "ls", "--json", "-", "--root", dir, NULL};
	cr_expect_eq(h_output(dash, NULL, &out, &err), 0, "%s", err);
	cr_expect(strstr(out, "\"total_files\": 0"), "%s", out);
	const char *to_file[] = {h_bin("SG_CLI"), "ls", "--root", dir, "--json", file, NULL};
	cr_expect_eq(h_output(to_file, NULL, &out, &err), 0, "%s", err);
	cr_expect_str_empty(out);
	cr_expect(strstr(read_file(file), "\"total_files\": 0"), "%s", read_file(file));
	unlink(file);
	const char *sweep_file[] = {h_bin("SG_CLI"), "sweep", "--root", dir, "--dead", h_str("--json=%s", file), NULL};
	cr_expect_eq(h_output(sweep_file, NULL, &out, &err), 0, "%s", err);
	cr_expect_str_empty(out);
	cr_expect(strstr(read_file(file), "\"removed\": 0"), "%s", read_file(file));
	unlink(file);
	const char *bad[] = {h_bin("SG_CLI"), "sweep", "--root", dir, "--dead", "--json", h_str("%s/no/such/x", dir), NULL};
	cr_expect_eq(h_output(bad, NULL, &out, &err), 2, "%s", err);
	rmdir(dir);
}

/* ls of dir (n files) with its address space bounded to kib: its exit
 * status, a listing it gave checked to be whole. */
static int ls_bounded(long kib, const char *dir, int n)
{
	const char *json = h_str("/dev/shm/%sls.json", prefix);
	const char *argv[] = {"/bin/sh", "-c", h_str("ulimit -v %ld && exec \"$0\" ls --root \"$1\" --json \"$2\"", kib),
			      h_bin("SG_CLI"), dir, json, NULL};
	char *err;
	int status = h_run(argv, NULL, &err);

	cr_assert_lt(status, 128, "ls died of signal %d under %ld KiB: %s", status - 128, kib, err);
	if (status == 0) {
		json_t *r = h_json_load(json);
		cr_assert_eq(h_jint(r, "total_files"), n, "exit 0 under %ld KiB with a part of the root", kib);
		json_decref(r);
	}
	unlink(json);
	return status;
}

/* Memory that runs out while a root is read: ls lists the root whole or says
 * it cannot, never a part of it as all of it.  The bound that lets it list
 * is found by halving, then every bound in 256 KiB steps for 6 MiB below it
 * (where the listing's own allocations fail). */
Test(cli, ls_lists_a_root_whole_or_not_at_all_when_memory_runs_out, .timeout = 120)
{
	enum { N = 10000 };
	const char *dir = h_str("/dev/shm/%sroot", prefix);
	long lo = 8 << 10, hi = 64 << 10;
	int refused = 0;

	if (getenv("SG_SANITIZED"))
		cr_skip_test("the sanitizers' runtime needs more address space than any bound here: the plain "
			     "build's pass runs this");
	cr_assert_eq(mkdir(dir, 0700), 0);
	for (int i = 0; i < N; i++) {
		int fd = open(h_str("%s/f%d", dir, i), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);
		cr_assert_geq(fd, 0);
		close(fd);
	}
	cr_assert_eq(ls_bounded(hi, dir, N), 0, "ls cannot list %d files in %ld KiB", N, hi);
	while (hi - lo > 256) {
		long mid = (lo + hi) / 2;
		*(ls_bounded(mid, dir, N) == 0 ? &hi : &lo) = mid;
	}
	for (long kib = hi - 256; kib >= hi - (6 << 10) && kib > 0; kib -= 256)
		refused += ls_bounded(kib, dir, N) != 0;
	cr_expect_gt(refused, 0, "no bound below %ld KiB was refused", hi);
}

/* sweep's pattern is --glob (fnmatch); --match is abort's PCRE2 regex and
 * no name of sweep's. */
Test(cli, sweep_takes_a_glob_and_no_match)
{
	const char *dir = h_str("/dev/shm/%sroot", prefix);
	char *out, *err;

	cr_assert_eq(mkdir(dir, 0700), 0);
	const char *glob[] = {h_bin("SG_CLI"), "sweep", "--root", dir, "--glob", "*", "--older-than", "1h", NULL};
	cr_expect_eq(h_output(glob, NULL, &out, &err), 0, "%s", err);
	cr_expect_str_empty(err);
	cr_expect(strstr(out, "removed 0 files, 0 bytes (0 B) reclaimed"), "%s", out);
	const char *match[] = {h_bin("SG_CLI"), "sweep", "--root", dir, "--match", "*", "--older-than", "1h", NULL};
	cr_expect_eq(h_output(match, NULL, &out, &err), 2, "%s", err);
	cr_expect(strstr(err, "match"), "%s", err);
	rmdir(dir);
}

/* --init-dir makes the abort directory shmguard's (stamped: markers expire
 * there), which mkdir -p does not; it refuses a directory another user made. */
Test(cli, abort_init_dir_creates_and_stamps_the_directory)
{
	const char *stamp = h_str("%s/.shmguard-abort-dir", abort_dir);
	struct stat st;
	char *err;

	cr_assert_eq(cli(&err, "abort", "--init-dir", abort_dir, NULL, NULL), 0, "%s", err);
	cr_expect(stat(abort_dir, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid(), "%s", err);
	cr_expect(h_exists(stamp), "not stamped");
	cr_expect_eq(cli(&err, "abort", "--init-dir", abort_dir, NULL, NULL), 0, "again: %s", err);

	/* An empty directory made by hand is stamped; one holding files is not. */
	cr_assert_eq(unlink(stamp), 0);
	cr_expect_eq(cli(&err, "abort", "--init-dir", abort_dir, NULL, NULL), 0, "%s", err);
	cr_expect(h_exists(stamp), "an empty directory was not stamped");
	cr_assert_eq(unlink(stamp), 0);
	const char *other = h_str("%s/%snot-a-marker", abort_dir, prefix);
	FILE *f = fopen(other, "w");
	cr_assert_not_null(f);
	fclose(f);
	cr_expect_eq(cli(&err, "abort", "--init-dir", abort_dir, NULL, NULL), 1, "%s", err);
	cr_expect(strstr(err, "was not made by shmguard") && strstr(err, "holds 1 file:"), "%s", err);
	cr_expect(!h_exists(stamp), "a directory holding other files was stamped");
	cr_expect(h_exists(other));
	unlink(other);
	expect_usage_error("abort", (const char *[]){"--init-dir", abort_dir, "some-id", NULL}, "takes no request ID");
}

Test(cli, abort_init_dir_refuses_a_directory_someone_else_made)
{
	const struct h_user *u = h_hostile_user();
	char *out, *err;

	/* The other user squats the name first, as anyone can in /dev/shm. */
	const char *squat[] = {"/bin/mkdir", "-m", "0755", abort_dir, NULL};
	cr_assert_eq(h_output_as(u, squat, NULL, &out, &err), 0, "%s", err);
	cr_expect_eq(cli(&err, "abort", "--init-dir", abort_dir, NULL, NULL), 1, "%s", err);
	cr_expect(strstr(err, "so the shims ignore its markers"), "%s", err);
	cr_expect(!h_exists(h_str("%s/.shmguard-abort-dir", abort_dir)), "the squatter's directory was stamped");
}

/* A bad input: the command's words, its exit status, and what the one line
 * that explains it says. */
struct bad_input {
	const char *argv[9];
	int status;
	const char *says;
};

static const struct bad_input bad_inputs[] = {
	{{"run", NULL}, 2, "no COMMAND given"},
	{{"run", "--bogus", "--", "/bin/true", NULL}, 2, "unrecognized option '--bogus'"},
	{{"run", "--patterns", "{req", "--", "/bin/true", NULL}, 2, "SHMGUARD_PATTERNS='{req': pattern '{req':"},
	{{"run", "--patterns", "{req}_{req}", "--", "/bin/true", NULL}, 2, "SHMGUARD_PATTERNS='{req}_{req}': pattern"},
	{{"run", "--patterns", "x", "--", "/bin/true", NULL}, 2, "SHMGUARD_PATTERNS='x': pattern 'x' must contain"},
	{{"run", "--log", "loud", "--", "/bin/true", NULL}, 2, "SHMGUARD_LOG='loud': expected off, warn, info"},
	{{"run", "--tag", "maybe", "--", "/bin/true", NULL}, 2, "SHMGUARD_TAG='maybe': expected journal, xattr,"},
	{{"run", "--ttl", "0", "--", "/bin/true", NULL}, 2, "SHMGUARD_ABORT_TTL='0': expected a duration of"},
	{{"run", "--ttl", "soon", "--", "/bin/true", NULL}, 2, "SHMGUARD_ABORT_TTL='soon': expected a duration"},
	{{"run", "--ttl", "9999999", "--", "/bin/true", NULL}, 2, "SHMGUARD_ABORT_TTL='9999999': expected a"},
	{{"run", "--request-id", "a/b", "--", "/bin/true", NULL}, 2, "SHMGUARD_REQUEST_ID='a/b': it contains '/'"},
	{{"run", "--request-id", "..", "--", "/bin/true", NULL}, 2, "SHMGUARD_REQUEST_ID='..': '.' and '..' are not"},
	{{"run", "--abort-dir", "relative", "--", "/bin/true", NULL}, 2, "SHMGUARD_ABORT_DIR='relative': not an absolute"},
	{{"run", "--abort-dir", "/", "--", "/bin/true", NULL}, 2, "SHMGUARD_ABORT_DIR='/': '/' itself is not"},
	{{"run", "--abort-dir", "/dev/shm", "--", "/bin/true", NULL}, 2, "SHMGUARD_ABORT_DIR='/dev/shm': the abort"},
	{{"run", "--abort-dir", "/nonexistent/below", "--", "/bin/true", NULL}, 2, "does not exist, and the shim cannot make it"},
	{{"run", "--abort-dir", "/etc/passwd", "--", "/bin/true", NULL}, 2, "abort directory /etc/passwd is not a directory"},
	{{"run", "--shm-root", "relative", "--", "/bin/true", NULL}, 2, "SHMGUARD_SHM_ROOTS='relative': not an absolute"},
	{{"run", "--shm-root", "/nonexistent", "--", "/bin/true", NULL}, 2, "shm root /nonexistent does not exist"},
	{{"run", "--shm-root", "/etc/passwd", "--", "/bin/true", NULL}, 2, "shm root /etc/passwd is not a directory"},
	{{"run", "--lib", "/nonexistent/lib.so", "--", "/bin/true", NULL}, 1, "cannot use shim '/nonexistent/lib.so': No such"},
	{{"run", "--lib", "/etc/passwd", "--", "/bin/true", NULL}, 2, "cannot preload '/etc/passwd': not an ELF file"},
	{{"run", "--lib", "/bin/true", "--", "/bin/true", NULL}, 2, "a program, not a shared library"},
	{{"run", "--lib", "/tmp", "--", "/bin/true", NULL}, 2, "cannot preload '/tmp': Is a directory"},
	{{"run", "--patterns", NULL}, 2, "option '--patterns' requires an argument"},
	{{"abort", NULL}, 2, "no request ID given"},
	{{"abort", "a/b", NULL}, 2, "bad request ID 'a/b': it contains '/'"},
	{{"abort", "..", NULL}, 2, "bad request ID '..': '.' and '..' are not"},
	{{"abort", ".shmguard-abort-dir", NULL}, 2, "bad request ID '.shmguard-abort-dir': the name"},
	{{"abort", "--ttl", "0", "x", NULL}, 2, "bad TTL '0': expected a duration of whole"},
	{{"abort", "--ttl", "later", "x", NULL}, 2, "bad TTL 'later': expected a duration of whole"},
	{{"abort", "--abort-dir", "relative", "x", NULL}, 2, "bad abort directory 'relative': not an absolute"},
	{{"abort", "--abort-dir", "/dev/shm", "x", NULL}, 2, "bad abort directory '/dev/shm': the abort"},
	{{"abort", "--follow", "-", NULL}, 2, "--follow needs --match REGEX or --preset NAME"},
	{{"abort", "--follow", "-", "--preset", "nosuch", NULL}, 2, "unknown preset 'nosuch' (vllm, sglang, nginx,"},
	{{"abort", "--follow", "-", "--match", "(", NULL}, 2, "bad regex at offset 1: missing closing"},
	{{"abort", "--follow", "-", "--match", "x", "--preset", "vllm", NULL}, 2, "--match and --preset are two ways to say the"},
	{{"abort", "--preset", "vllm", "id", NULL}, 2, "--match, --preset, --id-template and"},
	{{"abort", "--follow", "-", "--preset", "vllm", "extra", NULL}, 2, "unexpected argument 'extra': --follow reads the"},
	{{"abort", "--follow", "-", "--preset", "vllm", "--format", "json", NULL}, 2, "bad --format 'json': expected plain or cri"},
	{{"abort", "--follow", "-", "--preset", "nginx", "--id-template", "nobraces", NULL}, 2, "the ID template must hold {id} exactly once"},
	{{"abort", "--init-dir", "relative", NULL}, 2, "bad abort directory 'relative': not an absolute"},
	{{"abort", "--init-dir", "/x", "extra", NULL}, 2, "--init-dir takes no request ID and no --follow"},
	{{"abort", "--bogus", NULL}, 2, "unrecognized option '--bogus'"},
	{{"ls", "extra", NULL}, 2, "unexpected argument 'extra'"},
	{{"ls", "--root", "relative", NULL}, 2, "bad root 'relative': not an absolute path"},
	{{"ls", "--root", "/dev/shm", "--node", NULL}, 2, "--node lists every /dev/shm of the machine: no"},
	{{"ls", "-x", NULL}, 2, "invalid option -- 'x'"},
	{{"ls", "--json", "a", "b", NULL}, 2, "unexpected argument 'b'"},
	{{"ls", "--root", "/nonexistent", NULL}, 1, "cannot read /nonexistent: No such file or"},
	{{"sweep", NULL}, 2, "nothing to sweep: give --dead, --request ID or"},
	{{"sweep", "--dead", "extra", NULL}, 2, "unexpected argument 'extra'"},
	{{"sweep", "--glob", "*", NULL}, 2, "--glob and --older-than go together: untagged"},
	{{"sweep", "--older-than", "1m", NULL}, 2, "nothing to sweep: give --dead, --request ID or"},
	{{"sweep", "--glob", "*", "--older-than", "soon", NULL}, 2, "bad --older-than 'soon' (e.g. 90, 30s, 10m, 2h,"},
	{{"sweep", "--request", "a/b", NULL}, 2, "bad request ID 'a/b': it contains '/'"},
	{{"sweep", "--node", "--root", "/dev/shm", "--dead", NULL}, 2, "--node and --pod sweep pods' /dev/shm: no"},
	{{"sweep", "--pod", "abc", "--dead", NULL}, 2, "bad --pod 'abc': a process id"},
	{{"sweep", "--pod", "0", "--dead", NULL}, 2, "bad --pod '0': a process id"},
	{{"sweep", "--instance-gone", NULL}, 2, "nothing to sweep: give --dead, --request ID or"},
	{{"sweep", "--root", "relative", "--dead", NULL}, 2, "bad root 'relative': not an absolute path"},
	{{"sweep", "--bogus", NULL}, 2, "unrecognized option '--bogus'"},
	{{"sweep", "--abort-dir", "/dev/shm/x", NULL}, 2, "--abort-dir goes with --markers"},
	{{"sweep", "--markers", "--dead", NULL}, 2, "--markers is a mode of its own"},
	{{"sweep", "--markers", "--abort-dir", "relative", NULL}, 2, "bad abort directory 'relative'"},
	{{"sweep", "--markers", "--abort-dir", "/dev/shm", NULL}, 2, "must not be a shm root"},
	{{"sweep", "--markers", "--abort-dir", "/nonexistent", NULL}, 1, "cannot open abort directory /nonexistent"},
	{{"doctor", "extra", NULL}, 2, "unexpected argument 'extra'"},
	{{"doctor", "--bogus", NULL}, 2, "unrecognized option '--bogus'"},
	{{"doctor", "--need", "lots", NULL}, 2, "bad --need 'lots': expected a size such as"},
	{{"doctor", "--need", "-1G", NULL}, 2, "bad --need '-1G': expected a size such as 512M,"},
	{{"doctor", "--root", "relative", NULL}, 2, "bad root 'relative': not an absolute path"},
	{{"doctor", "--binary", NULL}, 2, "option '--binary' requires an argument"},
	{{"nosuchcommand", NULL}, 2, "unknown command 'nosuchcommand'"},
};

/* Only where audit is built (its stand-in parses nothing). */
static const struct bad_input bad_audit_inputs[] = {
	/* watch parses its options in the auditor's module too. */
	{{"watch", "--probe", "nosuch", NULL}, 2, "unknown probe 'nosuch' (ctime, fentry, kprobe,"},
	{{"watch", "--root", "relative", NULL}, 2, "bad root 'relative': not an absolute path"},
	{{"watch", "extra", NULL}, 2, "unexpected argument 'extra'"},
	{{"watch", "--bogus", NULL}, 2, "unrecognized option '--bogus'"},
	{{"audit", "--grace", "soon", "--", "true", NULL}, 2, "bad --grace 'soon': expected a duration (2,"},
	{{"audit", "--grace", NULL}, 2, "option '--grace' requires an argument"},
	{{"audit", "--patterns", "{req", "--", "true", NULL}, 2, "bad patterns: pattern '{req': unknown"},
	{{"audit", "--max-kib-per-abort", "-1", "--", "true", NULL}, 2, "bad --max-kib-per-abort '-1': expected a number"},
	{{"audit", "--max-kib-per-abort", "lots", "--", "true", NULL}, 2, "bad --max-kib-per-abort 'lots': expected a"},
	{{"audit", "--min-aborts", "3", "--", "true", NULL}, 2, "--min-aborts is a floor of the gate: give"},
	{{"audit", "--min-aborts", "x", "--max-kib-per-abort", "0", "--", "true", NULL}, 2, "bad --min-aborts 'x': a whole number of aborts"},
	{{"audit", "--per-workload", "--", "true", NULL}, 2, "--per-workload applies the gate to each"},
	{{"audit", "--duration", "10", "--", "true", NULL}, 2, "--duration is for a run without COMMAND (which"},
	{{"audit", "--duration", "0", NULL}, 2, "bad --duration '0': expected a duration (90,"},
	{{"audit", "--interval", "0", NULL}, 2, "bad --interval '0': expected a duration (15,"},
	{{"audit", "--reclaim-dead", "10s", "--", "true", NULL}, 2, "--reclaim-dead is for the node agent, a run"},
	{{"audit", "--reclaim-dead", "0", NULL}, 2, "bad --reclaim-dead '0': expected a duration of"},
	{{"audit", "--reclaim-dry-run", NULL}, 2, "--reclaim-dry-run and --reclaim-node-shm go with"},
	{{"audit", "--reclaim-node-shm", NULL}, 2, "go with --reclaim-dead"},
	{{"audit", "--max-workload-series", "x", NULL}, 2, "bad --max-workload-series 'x'"},
	{{"audit", "--own-namespace", "--all-namespaces", NULL}, 2, "--own-namespace and --all-namespaces: choose one"},
	{{"audit", "--own-namespace", "--", "true", NULL}, 2, "--own-namespace is the default with COMMAND"},
	{{"audit", "--all-namespaces", NULL}, 2, "--all-namespaces is the default without COMMAND"},
	{{"audit", "--root-abort-dir", "a/b", NULL}, 2, "bad --root-abort-dir 'a/b': one plain name,"},
	{{"audit", "--abort-detail", "0", NULL}, 2, "bad --abort-detail '0': a number from 1 to"},
	{{"audit", "--shim-uid", "nosuchuser", NULL}, 2, "bad --shim-uid 'nosuchuser': a user name or a"},
	{{"audit", "--workload-expiry", "never", NULL}, 2, "bad --workload-expiry 'never': expected a"},
	{{"audit", "--metrics-file", "-", NULL}, 2, "--metrics-file -: the file is rewritten every"},
	{{"audit", "--json", "-", "--junit", "-", "--", "true", NULL}, 2, "--json - and --junit -: only one report can go"},
	{{"audit", "--max-files", "0", NULL}, 2, "bad --max-files '0': a number from 1 to"},
	{{"audit", "--ring-kib", "3", NULL}, 2, "bad --ring-kib '3': a power of two from 4 to"},
	{{"audit", "--probe", "nosuch", NULL}, 2, "bad --probe 'nosuch': one of ctime, fentry,"},
	{{"audit", "--abort-dir", "/dev/shm", "--", "true", NULL}, 2, "bad abort directory '/dev/shm': the abort"},
	{{"audit", "--abort-dir", "relative", "--", "true", NULL}, 2, "bad abort directory 'relative': not an absolute"},
	{{"audit", "--shm-root", "/nonexistent", NULL}, 2, "shm root /nonexistent is not a directory"},
	{{"audit", "--lib", "/nonexistent", "--", "true", NULL}, 2, "cannot use shim '/nonexistent': No such file or"},
	{{"audit", "--abort-dir", "/etc/passwd", "--", "true", NULL}, 2, "abort directory /etc/passwd is not a directory"},
	{{"audit", "--abort-dir", "/nonexistent/below", "--", "true", NULL}, 2, "abort directory /nonexistent/below does not"},
};

/* The error is one line on stderr, "shmguard SUBCOMMAND: ...", followed by
 * the Try line alone for bad usage; nothing on stdout. */
static void expect_one_clear_line(const struct bad_input *b)
{
	const char *argv[12] = {h_bin("SG_CLI")};
	const char *sub = b->argv[0], *shown = b->argv[1] ? b->argv[1] : "";
	const char *start = strcmp(sub, "nosuchcommand") == 0 ? "shmguard: " : h_str("shmguard %s: ", sub);
	size_t n = 1;
	char *out, *err;

	for (const char *const *a = b->argv; *a; a++)
		argv[n++] = *a;
	argv[n] = NULL;
	cr_expect_eq(h_output(argv, NULL, &out, &err), b->status, "%s %s: exit status: %s", sub, shown, err);
	cr_expect_str_empty(out, "%s %s: %s", sub, shown, out);
	cr_expect(strncmp(err, start, strlen(start)) == 0 && strstr(err, b->says) && strstr(err, b->says) < strchr(err, '\n'),
		  "%s %s: expected '%s' on the first line of: %s", sub, shown, b->says, err);
	const char *nl = strchr(err, '\n'), *rest = nl ? nl + 1 : "", *try_sub = strcmp(sub, "nosuchcommand") == 0 ? "" : h_str(" %s", sub);
	cr_expect(!*rest || strcmp(rest, h_str("Try 'shmguard%s --help' for more information.\n", try_sub)) == 0,
		  "%s %s: one line, then only the Try line: %s", sub, shown, err);
}

Test(cli, every_bad_input_gets_one_clear_line)
{
	size_t n = sizeof(bad_inputs) / sizeof(bad_inputs[0]), na = sizeof(bad_audit_inputs) / sizeof(bad_audit_inputs[0]);

	for (size_t i = 0; i < n; i++)
		expect_one_clear_line(&bad_inputs[i]);
	if (built_with_auditor())
		for (size_t i = 0; i < na; i++)
			expect_one_clear_line(&bad_audit_inputs[i]);
	cr_expect_geq(n + na, 80, "%zu bad inputs", n + na);
}

/* A copy of the shim with the byte at off set to value, at path. */
static void patched_shim(const char *path, long off, unsigned char value)
{
	static char buf[4 << 20];
	FILE *in = fopen(h_bin("SG_SHIM"), "rb"), *out = fopen(path, "wb");
	size_t n;

	cr_assert(in && out);
	n = fread(buf, 1, sizeof(buf), in);
	cr_assert_gt(n, 64);
	buf[off] = (char)value;
	cr_assert_eq(fwrite(buf, 1, n, out), n);
	fclose(in);
	fclose(out);
}

/* What the loader would not preload is refused before COMMAND runs:
 * otherwise ld.so says so and runs it without the shim. */
Test(cli, run_refuses_a_lib_the_loader_would_not_preload)
{
	const char *lib = h_str("/tmp/%slib.so", prefix), *marker = h_str("/tmp/%sran", prefix);
	const char *cmd = h_str("touch %s", marker);
	char *err;

	patched_shim(lib, 18, 183); /* e_machine: EM_AARCH64 */
	const char *argv[] = {h_bin("SG_CLI"), "run", "--lib", lib, "--", "/bin/sh", "-c", cmd, NULL};
	cr_expect_eq(h_run(argv, NULL, &err), 2, "%s", err);
	cr_expect(strstr(err, "a shared library for another machine"), "%s", err);
	patched_shim(lib, 4, 1); /* EI_CLASS: ELFCLASS32 */
	cr_expect_eq(cli(&err, "run", "--lib", lib, "--", "/bin/true"), 2, "%s", err);
	cr_expect(strstr(err, "another class"), "%s", err);
	patched_shim(lib, 16, 1); /* e_type: ET_REL */
	cr_expect_eq(cli(&err, "run", "--lib", lib, "--", "/bin/true"), 2, "%s", err);
	cr_expect(strstr(err, "not ET_DYN"), "%s", err);
	cr_expect(!h_exists(marker), "COMMAND ran");
	unlink(lib);
	/* The shim itself runs. */
	cr_expect_eq(cli(&err, "run", "--lib", h_bin("SG_SHIM"), "--", "/bin/true"), 0, "%s", err);
}

/* The shim fails open, and says once what is missing: an abort directory
 * whose parent does not exist, a root that is not there.  The program
 * runs and creates its file as without the shim. */
Test(cli, the_shim_says_once_that_its_abort_dir_or_root_is_missing)
{
	const char *seg = h_str("/%sm_0_0", prefix), *seg2 = h_str("/%sm_1_0", prefix);
	const char *argv[] = {h_bin("SG_SHMTOOL"), "shm", seg, "4096", ",", "shm", seg2, "4096", NULL};
	const char *env[] = {h_str("LD_PRELOAD=%s", h_bin("SG_SHIM")), "SHMGUARD_PATTERNS={req}_{int}_{int}",
			     h_str("SHMGUARD_ABORT_DIR=/nonexistent-%s/abort", prefix), NULL, NULL};
	char *err;

	cr_expect_eq(h_run(argv, env, &err), 0, "%s", err);
	cr_expect(h_exists(h_str("/dev/shm%s", seg)) && h_exists(h_str("/dev/shm%s", seg2)));
	cr_expect_eq(h_occurrences(err, "does not exist and cannot be made (its parent is missing)"), 1, "%s", err);
	cr_expect_eq(h_occurrences(err, "\n"), 1, "%s", err);
	env[2] = h_str("SHMGUARD_SHM_ROOTS=/nonexistent-%s", prefix);
	cr_expect_eq(h_run((const char *[]){"/bin/true", NULL}, env, &err), 0, "%s", err);
	cr_expect_eq(h_occurrences(err, h_str("shm root /nonexistent-%s is not a directory here", prefix)), 1, "%s", err);
	cr_expect_eq(h_occurrences(err, "\n"), 1, "%s", err);
}

/* A missing abort directory is made by run, as the shim would make it on
 * its first watch (stamped), so that one it could not make is said at once. */
Test(cli, run_makes_a_missing_abort_directory_the_shim_could_make)
{
	char *err;

	cr_expect_eq(cli(&err, "run", "--abort-dir", abort_dir, "--", "/bin/true"), 0, "%s", err);
	cr_expect(h_exists(h_str("%s/.shmguard-abort-dir", abort_dir)), "%s was not made and stamped", abort_dir);
	cr_expect_str_empty(err);
}
