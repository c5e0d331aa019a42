/* shmguard audit's outputs for fleets and CI, read by their real
 * consumers: Prometheus scraping /metrics, the textfile a collector reads,
 * junitparser reading --junit, the GitHub Actions annotations and step
 * summary, rsvg-convert drawing --plot.  The truth is measured by the test
 * itself from st_blocks. */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <jansson.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"

#define PATTERNS "{req}_{int}_{int};shm_{req}_{int}_{int}_lockfile.lock"

static const char *prefix, *abort_dir, *json_path, *tmp_dir;

static void setup(void)
{
	h_setup("flt", &prefix, &abort_dir, NULL);
	json_path = h_str("/tmp/%sreport.json", prefix);
	tmp_dir = h_str("/tmp/%sdir", prefix);
	cr_assert_eq(mkdir(abort_dir, 0755), 0);
	cr_assert_eq(mkdir(tmp_dir, 0755), 0);
}

static void teardown(void)
{
	h_cleanup(prefix);
	unlink(json_path);
	const char *rm[] = {"/bin/rm", "-rf", tmp_dir, NULL};
	h_run(rm, NULL, NULL);
}

TestSuite(fleet, .init = setup, .fini = teardown, .timeout = 90);

#define SKIP(why) h_skip(teardown, why)

static void need_bpf(void)
{
	h_need_bpf(teardown);
}

/* A program a test needs: missing is a failure in CI (scripts/deps.sh
 * installs it), a skip elsewhere. */
static void need_program(const char *path, const char *package)
{
	if (access(path, X_OK) == 0)
		return;
	cr_assert(!getenv("CI"), "%s is missing in CI (scripts/deps.sh installs %s)", path, package);
	teardown();
	cr_skip_test("needs %s (Debian package %s)", path, package);
}

/* `shmguard audit` as the harness runs it, with this test's directories,
 * extra options (up to NULL), then "--" and the command. */
static const char **audit_with(const char *const *options, const char *const *cmd)
{
	return h_audit_argv(abort_dir, PATTERNS, json_path, options, cmd);
}

enum { REQUESTS = 12, ABORT_EVERY = 3, ABORTS = REQUESTS / ABORT_EVERY };

/* leakgen under the shim, whose abort directory is shim_aborts (NULL: no
 * shim), kept alive with its files until its stdin closes. */
static const char **leakgen_under(const char *shim_aborts)
{
	const char **cmd = calloc(32, sizeof(*cmd));
	const char *run[] = {h_bin("SG_CLI"), "run", "--patterns", PATTERNS, "--abort-dir", shim_aborts,
			     "--lib", h_bin("SG_SHIM"), "--", NULL};
	bool shimmed = shim_aborts != NULL;
	const char *gen[] = {h_bin("SG_LEAKGEN"), "--prefix", prefix, "--requests", h_str("%d", REQUESTS),
			     "--abort-every", h_str("%d", ABORT_EVERY), "--abort-dir", abort_dir, "--wait-stdin", NULL};
	size_t n = 0;

	for (size_t i = 0; shimmed && run[i]; i++)
		cmd[n++] = run[i];
	for (size_t i = 0; gen[i]; i++)
		cmd[n++] = gen[i];
	return cmd;
}

/* leakgen (under the shim, sharing the auditor's abort directory, if shimmed). */
static const char **leakgen(bool shimmed)
{
	return leakgen_under(shimmed ? abort_dir : NULL);
}

static uint64_t blocks_of(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 ? (uint64_t)st.st_blocks * 512 : 0;
}

/* Allocated bytes of the files of leakgen's aborted requests: the leak. */
static uint64_t aborted_truth(void)
{
	uint64_t truth = 0;

	for (int i = ABORT_EVERY - 1; i < REQUESTS; i += ABORT_EVERY)
		truth += blocks_of(h_str("/dev/shm/%s%d_0_0", prefix, i)) + blocks_of(h_str("/dev/shm/%s%d_0_1", prefix, i)) +
			 blocks_of(h_str("/dev/shm/%s%d_0_2", prefix, i)) +
			 blocks_of(h_str("/dev/shm/shm_%s%d_0_0_lockfile.lock", prefix, i));
	return truth;
}

static struct h_proc start(const char **argv, const char *const *env)
{
	struct h_proc p = h_spawn(argv, env);
	char *line = h_read_line(&p, 30000);

	cr_assert_str_eq(line ? line : "(nothing)", "done");
	return p;
}

static json_t *report(void)
{
	return h_json_load(json_path);
}

/* A TCP port of 127.0.0.1 free a moment ago. */
static unsigned free_port(void)
{
	struct sockaddr_in in = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(in);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	cr_assert_geq(fd, 0);
	cr_assert_eq(bind(fd, (struct sockaddr *)&in, sizeof(in)), 0);
	cr_assert_eq(getsockname(fd, (struct sockaddr *)&in, &len), 0);
	close(fd);
	return ntohs(in.sin_port);
}

/* The value of an instant query to Prometheus's HTTP API, -1 if it has
 * none (yet). */
static long long prometheus_value(unsigned port, const char *query)
{
	const char *argv[] = {"/usr/bin/curl", "-sf", "--noproxy", "*", "--max-time", "5", "-w", "\\n",
			      h_str("http://127.0.0.1:%u/api/v1/query?query=%s", port, query), NULL};
	char *out = NULL;
	long long v = -1;

	if (h_output(argv, NULL, &out, NULL) != 0 || !out)
		return -1;
	json_t *r = json_loads(out, 0, NULL);
	json_t *value = json_array_get(json_object_get(json_array_get(json_object_get(json_object_get(r, "data"),
										      "result"),
								       0),
						       "value"),
				       1);
	if (json_is_string(value))
		v = strtoll(json_string_value(value), NULL, 10);
	json_decref(r);
	return v;
}

/* Prometheus scrapes the auditor's /metrics every second; what it stores
 * is the workload's truth: four aborts, and the bytes their files hold. */
Test(fleet, prometheus_scrapes_the_aborts_and_the_bytes_they_hold)
{
	need_bpf();
	need_program("/usr/bin/prometheus", "prometheus");
	need_program("/usr/bin/curl", "curl");
	unsigned metrics_port = free_port(), prom_port;

	while ((prom_port = free_port()) == metrics_port)
		;
	const char *config = h_str("%s/prometheus.yml", tmp_dir);
	FILE *f = fopen(config, "w");

	cr_assert_not_null(f);
	fprintf(f,
		"global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
		"scrape_configs:\n  - job_name: shmguard\n    static_configs:\n      - targets: ['127.0.0.1:%u']\n",
		metrics_port);
	fclose(f);
	const char *options[] = {"--listen", h_str("127.0.0.1:%u", metrics_port), NULL};
	struct h_proc audit = start(audit_with(options, leakgen(false)), NULL);
	const char *prom_argv[] = {"/usr/bin/prometheus", h_str("--config.file=%s", config),
				   h_str("--storage.tsdb.path=%s/data", tmp_dir),
				   h_str("--web.listen-address=127.0.0.1:%u", prom_port), "--log.level=warn", NULL};
	struct h_proc prom = h_spawn(prom_argv, NULL);

	h_wait_measured(&audit, ABORTS);
	uint64_t truth = aborted_truth();
	long long aborts = -1, held = -1;
	cr_assert_gt(truth, 0);
	for (long t0 = h_now_ms(); h_now_ms() - t0 < 40000; usleep(500 * 1000)) {
		aborts = prometheus_value(prom_port, "shmguard_aborts_total");
		held = prometheus_value(prom_port, "shmguard_aborted_held_bytes");
		if (aborts == ABORTS && held == (long long)truth)
			break;
	}
	cr_expect_eq(aborts, ABORTS, "Prometheus has shmguard_aborts_total %lld", aborts);
	cr_expect_eq(held, (long long)truth, "Prometheus has shmguard_aborted_held_bytes %lld, truth %llu", held,
		     (unsigned long long)truth);
	cr_expect_eq(prometheus_value(prom_port, "shmguard_dropped_events_total"), 0);
	cr_expect_eq(prometheus_value(prom_port, "shmguard_live_pending_bytes"), 0, "every live request was consumed");
	/* Issue 22: what a fleet computes the leak per abort from (here every
	 * aborted file is still there, so the leak is what they hold). */
	cr_expect_eq(prometheus_value(prom_port, "shmguard_aborts_measured_total"), ABORTS);
	cr_expect_eq(prometheus_value(prom_port, "shmguard_leaked_bytes_total"), (long long)truth);
	cr_expect_eq(prometheus_value(prom_port, "count(shmguard_build_info)"), 1);
	long long age = prometheus_value(prom_port, "time()-shmguard_last_review_timestamp_seconds");
	cr_expect(age >= 0 && age < 30, "the last review is %lld s old", age);
	kill(prom.pid, SIGTERM);
	h_finish(&prom, NULL);
	cr_expect_eq(h_finish(&audit, NULL), 0);
}

/* The number after NAME at the start of a line of the textfile, -1 if none. */
static long long metric_in_file(const char *path, const char *name)
{
	FILE *f = fopen(path, "r");
	char line[512];
	long long v = -1;

	cr_assert_not_null(f, "%s", path);
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, name, strlen(name)) == 0 && line[strlen(name)] == ' ')
			v = strtoll(line + strlen(name) + 1, NULL, 10);
	fclose(f);
	return v;
}

/* The textfile for node_exporter: rewritten during the run, and at its end
 * with the final figures; a file the review saw, removed after its
 * request's marker, counts as reclaimed. */
Test(fleet, the_metrics_file_follows_the_run_and_counts_what_was_reclaimed)
{
	need_bpf();
	const char *path = h_str("%s/shmguard.prom", tmp_dir), *file = h_str("/dev/shm/%sgone_0_0", prefix);
	const char *script = h_str("fallocate -l 65536 %s && sleep 1.5 && touch %s/%sgone && echo marked && "
				   "read x && rm %s && echo removed",
				   file, abort_dir, prefix, file);
	const char *cmd[] = {"/bin/sh", "-c", script, NULL};
	const char *options[] = {"--metrics-file", path, "--interval", "0.5", NULL};
	struct h_proc p = h_spawn(audit_with(options, cmd), NULL);
	long long aborts = -1, held = -1;

	cr_assert_str_eq(h_read_line(&p, 20000) ?: "", "marked");
	/* Rewritten during the run: a review cycle after the marker, then a write. */
	for (long t0 = h_now_ms(); h_now_ms() - t0 < 10000; usleep(100 * 1000)) {
		aborts = metric_in_file(path, "shmguard_aborts_total");
		held = metric_in_file(path, "shmguard_aborted_held_bytes");
		if (aborts == 1 && held == 65536)
			break;
	}
	cr_expect_eq(aborts, 1, "the file is rewritten during the run");
	cr_expect_eq(held, 65536);
	cr_assert_eq(write(p.in, "go\n", 3), 3);
	cr_assert_str_eq(h_read_line(&p, 20000) ?: "", "removed");
	cr_assert_eq(h_finish(&p, NULL), 0);
	cr_expect_eq(metric_in_file(path, "shmguard_aborted_held_bytes"), 0);
	cr_expect_eq(metric_in_file(path, "shmguard_reclaimed_bytes_total"), 65536);
	cr_expect_eq(metric_in_file(path, "shmguard_dropped_events_total"), 0);
	struct stat st;
	cr_expect_eq(stat(path, &st), 0);
	cr_expect_eq(st.st_mode & 0777, 0644, "node_exporter must be able to read it");
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	static char buf[65536];
	size_t n;

	cr_assert_not_null(f, "%s", path);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

/* What junitparser (Debian's python3) reads in --junit: "TESTS FAILURES CASES
 * FAILED-CASES", then each failure's text. */
static char *junit_read(const char *path)
{
	const char *script = "import sys, junitparser\n"
			     "x = junitparser.JUnitXml.fromfile(sys.argv[1])\n"
			     "cases = [c for s in x for c in s]\n"
			     "fails = [c for c in cases if c.result and isinstance(c.result[0], junitparser.Failure)]\n"
			     "print(x.tests, x.failures, len(cases), len(fails))\n"
			     "for c in fails: print(c.result[0].text)\n";
	const char *argv[] = {"/usr/bin/python3", "-c", script, path, NULL};
	char *out = NULL, *err = NULL;

	cr_assert_eq(h_output(argv, NULL, &out, &err), 0, "junitparser: %s", err);
	return out;
}

/* The names of --junit's cases, sorted, one a line (junitparser). */
static char *junit_names(const char *path)
{
	const char *script = "import sys, junitparser\n"
			     "x = junitparser.JUnitXml.fromfile(sys.argv[1])\n"
			     "print('\\n'.join(sorted(c.classname + ' ' + c.name for s in x for c in s)))\n";
	const char *argv[] = {"/usr/bin/python3", "-c", script, path, NULL};
	char *out = NULL, *err = NULL;

	cr_assert_eq(h_output(argv, NULL, &out, &err), 0, "junitparser: %s", err);
	return out;
}

/* The audit argv run until its aborts are measured and its end, with exit
 * status want; the cases of the JUnit report it wrote to xml. */
static char *junit_names_of_run(const char **argv, const char *xml, int want)
{
	struct h_proc p = start(argv, NULL);

	h_wait_measured(&p, ABORTS);
	cr_assert_eq(h_finish(&p, NULL), want);
	return junit_names(xml);
}

/* A leak shape is a failing test case that lists the aborted requests; no
 * leak is one passing case. */
Test(fleet, junit_cases_are_the_leak_shapes_and_list_the_requests)
{
	need_bpf();
	if (system("/usr/bin/python3 -c 'import junitparser' 2>/dev/null") != 0) {
		cr_assert(!getenv("CI"), "junitparser is missing in CI (scripts/deps.sh installs python3-junitparser)");
		SKIP("needs python3-junitparser");
	}
	const char *xml = h_str("%s/audit.xml", tmp_dir);
	const char *options[] = {"--junit", xml, "--max-kib-per-abort", "0", NULL};
	struct h_proc p = start(audit_with(options, leakgen(false)), NULL);
	unsigned tests, failures, cases, fails;
	int used;

	h_wait_measured(&p, ABORTS);
	cr_assert_eq(h_finish(&p, NULL), 1);
	char *out = junit_read(xml);
	cr_assert_eq(sscanf(out, "%u %u %u %u%n", &tests, &failures, &cases, &fails, &used), 4, "%s", out);
	/* leakgen's segments and its lock files: two shapes of one process,
	 * and "aborts measured", which passes. */
	cr_expect_eq(cases, 3, "%s", out);
	cr_expect_eq(tests, cases);
	cr_expect_eq(fails, 2, "%s", out);
	cr_expect_eq(failures, fails);
	for (int i = ABORT_EVERY - 1; i < REQUESTS; i += ABORT_EVERY)
		cr_expect_eq(h_occurrences(out + used, h_str("%s%d: ", prefix, i)), 2, "request %d not listed: %s", i,
			     out);
	cr_expect_eq(h_occurrences(out, h_str("%s0: ", prefix)), 0, "a consumed request listed: %s", out);
	char *names = junit_names(xml);
	cr_expect_null(strstr(names, "pid"), "a case's name holds a pid: %s", names);
	json_t *r = report();
	json_t *top = json_array_get(json_object_get(r, "top_processes"), 0);
	cr_expect_str_eq(json_string_value(json_object_get(top, "process")) ?: "(none)", "leakgen");
	cr_expect_gt(json_integer_value(json_array_get(json_object_get(top, "pids"), 0)), 0, "no pid listed");
	cr_expect_eq(json_integer_value(json_object_get(top, "processes")), 1);
	json_decref(r);

	/* Issue 22: the same workload again (other pids) has the same cases. */
	h_cleanup(prefix);
	cr_assert_eq(mkdir(abort_dir, 0755), 0);
	p = start(audit_with(options, leakgen(false)), NULL);
	h_wait_measured(&p, ABORTS);
	cr_assert_eq(h_finish(&p, NULL), 1);
	cr_expect_str_eq(junit_names(xml), names, "the case names changed from one run to the next");

	/* A leak within the budget: the same cases, passing, still listing. */
	h_cleanup(prefix);
	cr_assert_eq(mkdir(abort_dir, 0755), 0);
	const char *lenient[] = {"--junit", xml, "--max-kib-per-abort", "100000", NULL};
	p = start(audit_with(lenient, leakgen(false)), NULL);
	h_wait_measured(&p, ABORTS);
	cr_assert_eq(h_finish(&p, NULL), 0);
	out = junit_read(xml);
	cr_assert_eq(sscanf(out, "%u %u %u %u", &tests, &failures, &cases, &fails), 4, "%s", out);
	cr_expect_eq(cases, 3, "%s", out);
	cr_expect_eq(failures, 0, "%s", out);
	cr_expect(h_occurrences(slurp(xml), h_str("%s2: ", prefix)) == 2, "%s", slurp(xml));

	h_cleanup(prefix);
	cr_assert_eq(mkdir(abort_dir, 0755), 0);
	p = start(audit_with(options, leakgen(true)), NULL);
	h_wait_measured(&p, ABORTS);
	cr_assert_eq(h_finish(&p, NULL), 0);
	out = junit_read(xml);
	cr_assert_eq(sscanf(out, "%u %u %u %u", &tests, &failures, &cases, &fails), 4, "%s", out);
	cr_expect_eq(cases, 3, "the two shapes, leaking none, and aborts measured: %s", out);
	cr_expect_eq(failures, 0, "%s", out);
}

/* Issue 31 §4: the same command's leak is the same case whether its files
 * were attributed by the patterns or by the shim's tags, and once fixed
 * the case stays, passing: CI history shows the leak failing, then fixed. */
Test(fleet, junit_cases_are_the_same_with_and_without_the_shim)
{
	need_bpf();
	if (system("/usr/bin/python3 -c 'import junitparser' 2>/dev/null") != 0) {
		cr_assert(!getenv("CI"), "junitparser is missing in CI (scripts/deps.sh installs python3-junitparser)");
		SKIP("needs python3-junitparser");
	}
	const char *xml = h_str("%s/audit.xml", tmp_dir), *elsewhere = h_str("%s/shim-aborts", tmp_dir);
	const char *options[] = {"--junit", xml, "--max-kib-per-abort", "0", NULL};
	const char *leaking = h_str("shmguard.audit.leak leakgen %s\nshmguard.audit.leak leakgen {req}_{int}_{int}",
				    "shm_{req}_{int}_{int}_lockfile.lock");
	unsigned tests, failures, cases, fails;

	cr_assert_eq(mkdir(elsewhere, 0755), 0);
	/* Without the shim: the patterns attribute the files. */
	char *names = junit_names_of_run(audit_with(options, leakgen(false)), xml, 1);
	cr_assert(strstr(names, leaking), "%s", names);

	/* Under a shim that misses the markers (its abort directory is
	 * another): its tags attribute the files, which leak the same. */
	h_cleanup(prefix);
	cr_assert_eq(mkdir(abort_dir, 0755), 0);
	char *tagged = junit_names_of_run(audit_with(options, leakgen_under(elsewhere)), xml, 1);
	cr_expect_str_eq(tagged, names, "the shim's tags changed the cases' names:\n%s\nwithout the shim:\n%s", tagged, names);
	char *out = junit_read(xml);
	cr_assert_eq(sscanf(out, "%u %u %u %u", &tests, &failures, &cases, &fails), 4, "%s", out);
	cr_expect_eq(fails, 2, "%s", out);

	/* Fixed: the shim sweeps at the marker; the same cases pass. */
	h_cleanup(prefix);
	cr_assert_eq(mkdir(abort_dir, 0755), 0);
	char *fixed = junit_names_of_run(audit_with(options, leakgen(true)), xml, 0);
	cr_expect_str_eq(fixed, names, "the cases changed once the leak was fixed:\n%s\nleaking:\n%s", fixed, names);
	out = junit_read(xml);
	cr_assert_eq(sscanf(out, "%u %u %u %u", &tests, &failures, &cases, &fails), 4, "%s", out);
	cr_expect_eq(cases, 3, "%s", out);
	cr_expect_eq(failures, 0, "%s", out);
	cr_expect_eq(tests, cases);
}

/* Under GitHub Actions: an ::error:: annotation for a leak over budget, a
 * ::notice:: when it passes, and a table appended to the step summary. */
Test(fleet, github_actions_gets_annotations_and_a_step_summary)
{
	need_bpf();
	const char *summary = h_str("%s/summary.md", tmp_dir);
	const char *env[] = {"GITHUB_ACTIONS=true", h_str("GITHUB_STEP_SUMMARY=%s", summary), NULL};
	const char *options[] = {"--max-kib-per-abort", "0", NULL};
	FILE *f = fopen(summary, "w");

	cr_assert_not_null(f);
	fputs("an earlier step's summary\n", f);
	fclose(f);
	struct h_proc p = start(audit_with(options, leakgen(false)), env);
	h_wait_measured(&p, ABORTS);
	close(p.in);
	p.in = -1;
	char *out = h_read_all(&p, 20000);
	cr_assert_eq(h_finish(&p, NULL), 1);
	cr_expect(strstr(out, "\n::error::shmguard audit: aborted requests leak "), "%s", out);
	cr_expect_null(strstr(out, "::notice::"), "%s", out);
	char *md = slurp(summary);
	cr_expect_eq(strncmp(md, "an earlier step's summary\n", 26), 0, "the summary was not appended to: %s", md);
	cr_expect(strstr(md, "### shmguard audit: FAIL\n"), "%s", md);
	cr_expect(strstr(md, h_str("\n| %d | ", ABORTS)), "%s", md);
	cr_expect(strstr(md, "| `{req}_{int}_{int}` | 12 | "), "%s", md);

	h_cleanup(prefix);
	cr_assert_eq(mkdir(abort_dir, 0755), 0);
	p = start(audit_with(options, leakgen(true)), env);
	h_wait_measured(&p, ABORTS);
	close(p.in);
	p.in = -1;
	out = h_read_all(&p, 20000);
	cr_assert_eq(h_finish(&p, NULL), 0);
	cr_expect(strstr(out, "\n::notice::shmguard audit: PASS"), "%s", out);
	cr_expect_null(strstr(out, "::error::"), "%s", out);
	cr_expect(strstr(slurp(summary), "### shmguard audit: PASS\n"), "%s", slurp(summary));
}

/* A short run says the leak's growth cannot be extrapolated, and tells
 * live requests' bytes apart from the leak; its --plot shows both. */
Test(fleet, a_short_run_gives_no_hourly_growth_counts_live_bytes_apart_and_plots_every_series)
{
	need_bpf();
	const char *live = h_str("/dev/shm/%slive_0_0", prefix);
	const char *script = h_str("fallocate -l 40960 %s && %s --prefix %s --requests %d --abort-every %d "
				   "--abort-dir %s --wait-stdin",
				   live, h_bin("SG_LEAKGEN"), prefix, REQUESTS, ABORT_EVERY, abort_dir);
	const char *cmd[] = {"/bin/sh", "-c", script, NULL};
	const char *svg = h_str("%s/run.svg", tmp_dir);
	const char *options[] = {"--plot", svg, "--max-kib-per-abort", "0", NULL};
	struct h_proc p = start(audit_with(options, cmd), NULL);

	/* Once every abort is measured, review cycles see both kinds for a
	 * while: the lines span a good part of the picture however long the
	 * start took on a loaded machine. */
	h_wait_measured(&p, ABORTS);
	usleep(2500 * 1000);
	uint64_t truth = aborted_truth();
	cr_assert_eq(h_finish(&p, NULL), 1);
	json_t *r = report();
	cr_expect(json_is_null(json_object_get(r, "leak_growth_mib_per_hour")));
	cr_expect(strstr(json_string_value(json_object_get(r, "leak_growth_unavailable")) ?: "", "run too short"));
	cr_expect_null(json_object_get(r, "growth_mib_per_hour"), "the old figure mixed live requests in");
	cr_expect_eq(h_jint(r, "live_pending_bytes"), (long long)blocks_of(live));
	cr_expect_eq(h_jint(r, "live_pending_files"), 1);
	cr_expect_eq(h_jint(r, "aborted_held_bytes_at_end"), (long long)truth);
	json_decref(r);

	/* The picture: rsvg-convert draws it, and every series is in the pixels. */
	need_program("/usr/bin/rsvg-convert", "librsvg2-bin");
	const char *draw = h_str("rsvg-convert -f png -o %s.png %s && /usr/bin/python3 %s %s.png '#1f77b4' '#d62728' "
				 "'#2ca02c' '#ff7f0e'",
				 svg, svg, h_bin("SG_PNG_COLORS"), svg);
	FILE *out = popen(draw, "r");
	char colour[16];
	unsigned long count;
	int seen = 0;

	/* The legend shows each colour in a 14 x 4 swatch (56 pixels): more
	 * than that is the series itself.  The four markers come at once, so
	 * their ticks overlap. */
	cr_assert_not_null(out);
	while (fscanf(out, "%15s %lu", colour, &count) == 2) {
		cr_expect_gt(count, strcmp(colour, "#ff7f0e") == 0 ? 64 : 500, "%s: %lu pixels", colour, count);
		seen++;
	}
	cr_expect_eq(pclose(out), 0);
	cr_expect_eq(seen, 4, "tracked, aborted, budget and abort ticks");
}

/* Output paths and the listen address are checked before COMMAND runs. */
Test(fleet, bad_output_paths_are_refused_before_the_run)
{
	const char *proof = h_str("/dev/shm/%sran", prefix);
	const char *cmd[] = {h_bin("SG_SHMTOOL"), "touch", proof, NULL};
	const char *bad[][3] = {{"--junit", h_str("/nonexistent/%s/a.xml", prefix), NULL},
				{"--plot", h_str("/nonexistent/%s/a.svg", prefix), NULL},
				{"--listen", "localhost", NULL},
				{"--listen", "no-such-host.invalid:9464", NULL},
				{"--listen", "256.1.1.1:80", NULL}};
	char *err;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_expect_eq(h_run(audit_with(bad[i], cmd), NULL, &err), 2, "%s %s: %s", bad[i][0], bad[i][1], err);
		cr_expect(strstr(err, bad[i][1]) || strstr(err, bad[i][0]), "the message names it: %s", err);
		cr_expect(!h_exists(proof), "COMMAND ran before %s was checked", bad[i][0]);
	}
	cr_expect(!h_exists(json_path), "a report the run made and never wrote is left");
	need_bpf(); /* the metrics file is written first once tracing is set up */
	const char *metrics[] = {"--metrics-file", h_str("/nonexistent/%s/a.prom", prefix), NULL};
	cr_expect_eq(h_run(audit_with(metrics, cmd), NULL, &err), 2, "%s", err);
	cr_expect(strstr(err, metrics[1]), "the message names the path: %s", err);
	cr_expect(!h_exists(proof), "COMMAND ran before the metrics file was checked");
}

/* Issue 29: an agent that cannot trace says so and exits 3, and never
 * first that it serves metrics, which no one would then answer.  A user
 * without BPF rights is refused tracing. */
Test(fleet, a_refusal_to_trace_says_nothing_of_serving_metrics)
{
	const char *argv[] = {h_bin("SG_CLI"), "audit", "--abort-dir", "/tmp", "--listen", "127.0.0.1:0",
			      "--", "/bin/true", NULL};
	char *out, *err;

	if (!h_have_auditor())
		h_skip(teardown, "no auditor in this build");
	cr_assert_eq(h_output_as(h_hostile_user(), argv, NULL, &out, &err), 3, "%s", err);
	cr_expect(strstr(err, "tracing is not possible"), "%s", err);
	cr_expect_null(strstr(err, "serving metrics"), "a refused agent said it serves metrics: %s", err);
}

/* The fleet's way to run it: the whole system, /metrics served, until
 * SIGINT, which ends the run with its report (the server's thread must not
 * take the signal and let it kill the process). */
Test(fleet, a_system_wide_audit_serving_metrics_ends_at_sigint_with_its_report)
{
	need_bpf();
	need_program("/usr/bin/curl", "curl");
	/* Issue 22: a host name, and port 0, whose real port it prints.  Its
	 * own namespace only: in node mode the pods of tests running beside it
	 * would bring their aborts. */
	const char *argv[] = {h_bin("SG_CLI"), "audit", "--own-namespace", "--abort-dir", abort_dir, "--json", json_path,
			      "--listen", "localhost:0", "--duration", "60", NULL};
	struct h_proc p = h_spawn(argv, NULL);
	char *out = NULL, *err, url[128] = "";
	int status = -1;

	cr_assert(h_wait_stderr(&p, "/metrics\n", 20000), "the address bound was not printed");
	FILE *e = fopen(p.err, "r");
	char line[256];
	while (e && fgets(line, sizeof(line), e))
		if (sscanf(line, "shmguard audit: serving metrics on %127s", url) == 1)
			break;
	if (e)
		fclose(e);
	cr_assert(strncmp(url, "http://127.0.0.1:", 17) == 0 || strncmp(url, "http://[::1]:", 13) == 0, "%s", url);
	cr_assert_null(strstr(url, ":0/"), "port 0 printed: %s", url);
	const char *curl[] = {"/usr/bin/curl", "-sf", "--noproxy", "*", "--max-time", "5", url, NULL};

	for (long t0 = h_now_ms(); h_now_ms() - t0 < 20000; usleep(100 * 1000))
		if ((status = h_output(curl, NULL, &out, NULL)) == 0)
			break;
	cr_assert_eq(status, 0, "/metrics never answered");
	cr_expect(strstr(out, "\nshmguard_aborts_total 0\n"), "%s", out);
	long t0 = h_now_ms();
	cr_assert_eq(kill(p.pid, SIGINT), 0);
	cr_expect_eq(h_finish(&p, &err), 0, "%s", err);
	cr_expect_lt(h_now_ms() - t0, 10000);
	json_t *r = report();
	cr_expect_eq(h_jint(r, "aborts"), 0);
	json_decref(r);
}

/* Issue 17, finding 20: a process names itself (prctl PR_SET_NAME) with a
 * newline and a workflow command, or an escape sequence, then leaks a file
 * of an aborted request.  The report's top: lines, the annotations and the
 * step summary show the name escaped: stdout holds no ::error:: line and
 * no ESC. */
Test(fleet, a_process_name_cannot_inject_workflow_commands_or_escapes)
{
	need_bpf();
	const char *seg = h_str("/dev/shm/%sr1_0_0", prefix), *marker = h_str("%s/%sr1", abort_dir, prefix);
	const char *script = h_str("import ctypes, os\n"
				   "ctypes.CDLL(None).prctl(15, b'a\\n::error::x\\x1b[2J', 0, 0, 0)\n"
				   "fd = os.open('%s', os.O_CREAT | os.O_WRONLY, 0o600)\n"
				   "os.posix_fallocate(fd, 0, 8192)\n"
				   "os.close(fd)\n"
				   "open('%s', 'w').close()\n"
				   "print('done', flush=True)\n"
				   "import sys; sys.stdin.read()\n",
				   seg, marker);
	const char *cmd[] = {"/usr/bin/python3", "-c", script, NULL};
	const char *summary = h_str("%s/summary.md", tmp_dir);
	const char *env[] = {"GITHUB_ACTIONS=true", h_str("GITHUB_STEP_SUMMARY=%s", summary), NULL};
	const char *xml = h_str("%s/junit.xml", tmp_dir);
	const char *options[] = {"--junit", xml, NULL};
	struct h_proc p = start(audit_with(options, cmd), env);

	h_wait_measured(&p, 1);
	close(p.in);
	p.in = -1;
	char *out = h_read_all(&p, 20000);
	cr_assert_eq(h_finish(&p, NULL), 0);
	cr_expect(strstr(out, "top: a\\x0a::error::x\\x1b[2"), "%s", out); /* 15 bytes at most */
	cr_expect_null(strstr(out, "\n::error::"), "a name started a workflow command: %s", out);
	cr_expect_null(strchr(out, '\x1b'), "an escape sequence reached stdout: %s", out);
	cr_expect_null(strchr(slurp(summary), '\x1b'), "%s", slurp(summary));
	cr_expect_null(strchr(slurp(xml), '\x1b'), "%s", slurp(xml));
}

/* Issue 22: the gate fails when it measured nothing.  The markers go to
 * one directory and the auditor watches another: "aborts 0" is no PASS, in
 * the text, the JSON, the JUnit file and the annotations.  --min-aborts
 * raises the floor. */
Test(fleet, a_gate_that_saw_no_abort_fails_and_says_why)
{
	need_bpf();
	const char *elsewhere = h_str("%s/elsewhere", tmp_dir), *xml = h_str("%s/gate.xml", tmp_dir);
	const char *env[] = {"GITHUB_ACTIONS=true", NULL};
	const char *options[] = {"--junit", xml, "--max-kib-per-abort", "1000", NULL};
	char *out, *why = h_str("no abort marker seen in %s: is --abort-dir right?", elsewhere);

	cr_assert_eq(mkdir(elsewhere, 0755), 0);
	struct h_proc p = start(h_audit_argv(elsewhere, PATTERNS, json_path, options, leakgen(true)), env);
	close(p.in);
	p.in = -1;
	out = h_read_all(&p, 20000);
	cr_expect_eq(h_finish(&p, NULL), 1, "a gate that saw no abort passed: %s", out);
	cr_expect(strstr(out, h_str("verdict: FAIL  %s\n", why)), "%s", out);
	cr_expect(strstr(out, h_str("::error::shmguard audit: FAIL, %s", why)), "%s", out);
	cr_expect_null(strstr(out, "::notice::"), "%s", out);
	json_t *r = report();
	cr_expect_str_eq(json_string_value(json_object_get(r, "verdict")) ?: "(none)", "fail");
	cr_expect_str_eq(json_string_value(json_object_get(r, "verdict_reason")) ?: "(none)", why);
	cr_expect_eq(h_jint(r, "min_aborts"), 1);
	json_decref(r);
	char *x = slurp(xml);
	cr_expect(strstr(x, "name=\"aborts measured\""), "%s", x);
	cr_expect(strstr(x, "<failure type=\"too-few-aborts\""), "%s", x);

	/* The right directory, and a floor above what was measured, then at it. */
	const char *more[] = {"--max-kib-per-abort", "1000", "--min-aborts", h_str("%d", ABORTS + 1), NULL};
	h_cleanup(prefix);
	cr_assert_eq(mkdir(abort_dir, 0755), 0);
	p = start(audit_with(more, leakgen(true)), NULL);
	h_wait_measured(&p, ABORTS);
	close(p.in);
	p.in = -1;
	out = h_read_all(&p, 20000);
	cr_expect_eq(h_finish(&p, NULL), 1, "%s", out);
	cr_expect(strstr(out, h_str("verdict: FAIL  %d aborts measured, fewer than --min-aborts %d\n", ABORTS,
				    ABORTS + 1)),
		  "%s", out);
	more[3] = h_str("%d", ABORTS);
	h_cleanup(prefix);
	cr_assert_eq(mkdir(abort_dir, 0755), 0);
	p = start(audit_with(more, leakgen(true)), NULL);
	h_wait_measured(&p, ABORTS);
	close(p.in);
	p.in = -1;
	out = h_read_all(&p, 20000);
	cr_expect_eq(h_finish(&p, NULL), 0, "%s", out);
	cr_expect(strstr(out, "verdict: PASS"), "%s", out);

	/* A floor with no gate to hold it up is a usage error. */
	const char *alone[] = {h_bin("SG_CLI"), "audit", "--min-aborts", "3", "--", "/bin/true", NULL};
	char *err;
	cr_expect_eq(h_run(alone, NULL, &err), 2, "%s", err);
	cr_expect(strstr(err, "--min-aborts"), "%s", err);
}

/* Issue 22: `--json -` is the report on stdout (it made a file named "-"),
 * and the text report goes to stderr, out of its way. */
Test(fleet, json_dash_is_stdout)
{
	need_bpf();
	const char *argv[] = {h_bin("SG_CLI"), "audit", "--abort-dir", abort_dir, "--json", "-", "--", "/bin/true", NULL};
	char cwd[4096], *out, *err;
	json_error_t jerr;

	cr_assert(getcwd(cwd, sizeof(cwd)));
	cr_assert_eq(chdir(tmp_dir), 0);
	int status = h_output(argv, NULL, &out, &err);
	cr_assert_eq(chdir(cwd), 0);
	cr_assert_eq(status, 0, "%s", err);
	json_t *r = json_loads(out, 0, &jerr);
	cr_assert(r, "stdout is not the JSON report (%s): %s", jerr.text, out);
	cr_expect_eq(h_jint(r, "aborts"), 0);
	json_decref(r);
	cr_expect(strstr(err, "verdict: none"), "the text report is not on stderr: %s", err);
	cr_expect(!h_exists(h_str("%s/-", tmp_dir)), "a file named - was made");
}
