/* shmguard audit: follows /dev/shm per request during a run and reports
 * the leak in KiB per abort; a budget makes it a CI gate. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "audit.h"
#include "audit_trace.h"
#include "clock.h"
#include "holders.h"
#include "metrics.h"
#include "outfile.h"
#include "text.h"
#include "cli.h"
#include "size.h"

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: shmguard audit [OPTIONS] [-- COMMAND [ARGS]...]\n\n"
		"Traces the files created under the shm roots (eBPF) by COMMAND and every process it\n"
		"starts, or by the whole system until SIGINT or --duration, and reports what aborted\n"
		"requests leave behind: allocated bytes of their files that still exist --grace seconds\n"
		"after their abort marker, unlinked files still mapped or open included.\n\n"
		"  -p, --patterns P           name patterns, ';'-separated (default: $SHMGUARD_PATTERNS)\n"
		"  -a, --abort-dir DIR        where abort markers appear (default: $SHMGUARD_ABORT_DIR,\n"
		"                             else %s); it must exist\n"
		"  -s, --shm-root DIR         another directory to watch besides /dev/shm (repeatable)\n"
		"  -g, --grace DURATION       how long after its marker an abort is measured (default 2 s;\n"
		"                             durations: 2, 500ms, 30s, 10m, 1h)\n"
		"  -b, --max-kib-per-abort N  the gate: fail (exit 1) above N KiB per abort\n"
		"      --min-aborts N         with a budget: fail (exit 1) when fewer than N aborts were\n"
		"                             measured (default 1: a gate that saw no abort does not pass)\n"
		"      --allow-drops          do not fail the gate because events or markers were lost\n"
		"  -j, --json FILE            also write the report as JSON (checked before the run)\n"
		"      --junit FILE           also write it as JUnit XML: a test case per leak shape\n"
		"      --plot FILE            draw the run's timeline into FILE (SVG)\n"
		"                             (a report FILE of - is stdout: the text report goes to stderr)\n"
		"      --metrics-file FILE    Prometheus text (node_exporter's textfile collector), rewritten\n"
		"                             atomically every --interval seconds (default 15) and at the end\n"
		"      --listen HOST:PORT     serve the same figures on http://HOST:PORT/metrics (HOST a name\n"
		"                             or an address, [IPV6]; :PORT every IPv4 address; the address\n"
		"                             bound is printed on stderr)\n"
		"  -d, --duration DURATION    without COMMAND: stop after this long\n"
		"  -i, --interval DURATION    a progress line this often when stderr is not a terminal\n"
		"      --lib PATH             the shim whose tags to follow (default: found as by 'run')\n"
		"      --max-files N          files followed at most (1 to 100000000, default 1000000);\n"
		"                             more fails the gate\n"
		"      --ring-kib N           the kernel side's event buffer, a power of two from 4 (default\n"
		"                             8192); events it cannot hold are counted and fail the gate\n"
		"      --probe NAME           how to see files created: ctime, fentry, kprobe or syscalls\n"
		"                             (default: the best this kernel allows; exit 3 if NAME is not)\n"
		"  -v, --verbose              libbpf's messages\n"
		"  -h, --help                 show this help\n"
		"  -V, --version              print the version\n\n"
		"A first SIGINT (or SIGTERM, SIGHUP) goes to COMMAND; a second kills it and ends the run.\n"
		"With GITHUB_ACTIONS=true it also writes annotations to stdout and a summary table to\n"
		"$GITHUB_STEP_SUMMARY.\n\n"
		"Exit status: 0 pass (or no budget given); 1 over budget, fewer aborts measured than\n"
		"--min-aborts, or events, files or markers lost without --allow-drops; 2 bad usage or\n"
		"input, found before COMMAND runs; 3 tracing not possible here, or it failed during the\n"
		"run; 4 the gate passed but COMMAND failed or was killed. The report is printed in every\n"
		"case but 2.\n",
		SG_DEFAULT_ABORT_DIR);
}

/* A number of KiB: digits, a fraction allowed. */
static int parse_kib(const char *s, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (!*s || *end || errno || !(v >= 0) || v > 1e7)
		return -1;
	*out = v;
	return 0;
}

/* --grace, --duration, --interval: a duration (30s, 10m), at most 10^7 s. */
static int parse_duration(const char *s, double *out)
{
	double v;

	if (sg_parse_duration(s, &v) < 0 || v > 1e7)
		return -1;
	*out = v;
	return 0;
}

/* A whole decimal number from min to max (no sign, no blanks). */
static int parse_count(const char *s, unsigned long long min, unsigned long long max, unsigned long long *out)
{
	char *end;
	unsigned long long v;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (*end || errno || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

/* --metrics-file without --interval: node_exporter's scrapes are usually
 * 15 to 60 seconds apart. */
#define METRICS_INTERVAL_S 15.0

/* About 250 bytes each: beyond this the table would not fit in memory. */
#define MAX_FILES_LIMIT 100000000ull

/* Returns 0, 1 when --help was shown, or -1 on bad usage (reported). */
static int parse_options(int argc, char **argv, struct audit_opts *o, const char **listen_addr)
{
	static const struct option opts[] = {
		{"patterns", required_argument, NULL, 'p'},  {"abort-dir", required_argument, NULL, 'a'},
		{"shm-root", required_argument, NULL, 's'},  {"grace", required_argument, NULL, 'g'},
		{"max-kib-per-abort", required_argument, NULL, 'b'}, {"allow-drops", no_argument, NULL, 'D'},
		{"json", required_argument, NULL, 'j'},      {"duration", required_argument, NULL, 'd'},
		{"interval", required_argument, NULL, 'i'},  {"lib", required_argument, NULL, 'L'},
		{"max-files", required_argument, NULL, 'M'}, {"verbose", no_argument, NULL, 'v'},
		{"ring-kib", required_argument, NULL, 'R'},  {"probe", required_argument, NULL, 'P'},
		{"junit", required_argument, NULL, 'U'},     {"plot", required_argument, NULL, 'G'},
		{"metrics-file", required_argument, NULL, 'F'}, {"listen", required_argument, NULL, 'l'},
		{"help", no_argument, NULL, 'h'},            {"version", no_argument, NULL, 'V'},
		{"min-aborts", required_argument, NULL, 'A'}, {0},
	};
	const char *patterns = getenv("SHMGUARD_PATTERNS"), *abort_dir = getenv("SHMGUARD_ABORT_DIR");
	const char *listen_at = NULL;
	bool min_aborts_given = false;
	char err[200];
	unsigned long long n;
	int c;

	o->grace = 2;
	o->max_files = 1000000;
	cli_default_root(&o->roots);
	while ((c = getopt_long(argc, argv, "+p:a:s:g:b:j:d:i:vhV", opts, NULL)) != -1) {
		switch (c) {
		case 'p': patterns = optarg; break;
		case 'a': abort_dir = optarg; break;
		case 's':
			if (cli_add_root("audit", &o->roots, optarg) < 0)
				return -1;
			break;
		case 'g':
			if (parse_duration(optarg, &o->grace) < 0)
				return cli_usage_fail(-1, "audit", "bad --grace '%s': expected a duration (2, 500ms, 1m)",
						      optarg);
			break;
		case 'b':
			if (parse_kib(optarg, &o->budget_kib) < 0)
				return cli_usage_fail(-1, "audit", "bad --max-kib-per-abort '%s': expected a number of KiB",
						optarg);
			o->have_budget = true;
			break;
		case 'A':
			if (parse_count(optarg, 0, UINT_MAX, &n) < 0)
				return cli_usage_fail(-1, "audit", "bad --min-aborts '%s': a whole number of aborts",
						      optarg);
			o->min_aborts = (unsigned)n;
			min_aborts_given = true;
			break;
		case 'D': o->allow_drops = true; break;
		case 'j': o->json_path = optarg; break;
		case 'U': o->junit_path = optarg; break;
		case 'G': o->plot_path = optarg; break;
		case 'F':
			if (strcmp(optarg, "-") == 0)
				return cli_usage_fail(-1, "audit", "--metrics-file -: the file is rewritten every --interval, "
							     "it cannot be stdout (use --listen)");
			o->metrics_path = optarg;
			break;
		case 'l': listen_at = optarg; break;
		case 'd':
			if (parse_duration(optarg, &o->duration) < 0 || o->duration == 0)
				return cli_usage_fail(-1, "audit", "bad --duration '%s': expected a duration (90, 10m, 2h)",
						      optarg);
			break;
		case 'i':
			if (parse_duration(optarg, &o->interval) < 0 || o->interval == 0)
				return cli_usage_fail(-1, "audit", "bad --interval '%s': expected a duration (15, 30s, 1m)",
						      optarg);
			break;
		case 'L': o->lib = optarg; break;
		case 'M':
			if (parse_count(optarg, 1, MAX_FILES_LIMIT, &n) < 0)
				return cli_usage_fail(-1, "audit", "bad --max-files '%s': a number from 1 to %llu", optarg,
						MAX_FILES_LIMIT);
			o->max_files = (size_t)n;
			break;
		case 'R':
			if (parse_count(optarg, 4, 1u << 20, &n) < 0 || (n & (n - 1)))
				return cli_usage_fail(-1, "audit", "bad --ring-kib '%s': a power of two from 4 to 1048576",
						optarg);
			o->ring_kib = (unsigned)n;
			break;
		case 'P':
			if (audit_probe_by_name(optarg) < 0)
				return cli_usage_fail(-1, "audit", "bad --probe '%s': one of %s", optarg, audit_probe_list);
			o->probe = optarg;
			break;
		case 'v': o->verbose = true; break;
		case 'h':
			usage(stdout);
			return 1;
		case 'V':
			cli_version();
			return 1;
		default:
			return cli_try_help(-1, "audit");
		}
	}
	if (optind < argc)
		o->cmd = argv + optind;
	*listen_addr = listen_at;
	o->metrics_interval = o->interval ? o->interval : METRICS_INTERVAL_S;
	if (min_aborts_given && !o->have_budget)
		return cli_usage_fail(-1, "audit", "--min-aborts is a floor of the gate: give --max-kib-per-abort too");
	if (o->have_budget && !min_aborts_given)
		o->min_aborts = 1;
	if (o->cmd && o->duration)
		return cli_usage_fail(-1, "audit", "--duration is for a run without COMMAND (which ends the run itself)");
	if (!patterns || !*patterns)
		o->patterns.count = 0;
	else if (sg_patterns_parse(&o->patterns, patterns, err, sizeof(err)) < 0)
		return cli_usage_fail(-1, "audit", "bad patterns: %s", err);
	const char *why = sg_config_check_dir(abort_dir && *abort_dir ? abort_dir : SG_DEFAULT_ABORT_DIR, o->abort_dir);
	if (why)
		return cli_usage_fail(-1, "audit", "bad abort directory '%s': %s", abort_dir, why);
	if ((why = sg_roots_check_abort_dir(&o->roots, o->abort_dir)))
		return cli_usage_fail(-1, "audit", "bad abort directory '%s': %s", o->abort_dir, why);
	return 0;
}

/* Device and directory inode of each root, which must exist. */
static int resolve_roots(struct audit *a, const struct audit_opts *o)
{
	struct stat st;

	for (unsigned i = 0; i < o->roots.n; i++) {
		if (stat(o->roots.dir[i], &st) < 0 || !S_ISDIR(st.st_mode))
			return cli_fail(-1, "audit", "shm root %s is not a directory", o->roots.dir[i]);
		a->roots[a->nroots++] = (struct audit_root){o->roots.dir[i], sg_kdev(st.st_dev), st.st_ino};
	}
	if (stat(o->abort_dir, &st) < 0 || !S_ISDIR(st.st_mode))
		return cli_fail(-1, "audit",
				"abort directory %s does not exist: create it with 'shmguard abort --init-dir %s' "
				"(stamped as shmguard's, so that old markers expire; a directory made by mkdir keeps "
				"them for ever)",
				o->abort_dir, o->abort_dir);
	return 0;
}

/* COMMAND, started but held until it is traced. */
static pid_t spawn(char **cmd, const sigset_t *mask, int *go)
{
	int p[2];
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		char c;
		close(p[1]);
		sigprocmask(SIG_SETMASK, mask, NULL);
		if (read(p[0], &c, 1) != 1)
			_exit(127);
		execvp(cmd[0], cmd);
		fprintf(stderr, "shmguard audit: cannot run %s: %s\n", cmd[0], strerror(errno));
		_exit(errno == ENOENT ? 127 : 126);
	}
	close(p[0]);
	*go = p[1];
	return pid;
}

/* A report file (--json, --junit, --plot), a new file beside its path from
 * before the run (common/outfile.h), so that a path it cannot write is
 * found at once; it replaces the path when the run has reported, and is
 * removed if it never did.  "-" is stdout. */
struct report_file {
	const char *option, *path;
	int *fd;
	struct sg_outfile out;
};

/* The reports' files, opened; -1 when one cannot be (said why). */
static int open_reports(struct report_file *r, size_t n, bool *on_stdout)
{
	char err[SG_OUTFILE_ERR_MAX], shown[SG_ESCAPED_MAX];
	const char *first_stdout = NULL;

	for (size_t i = 0; i < n; i++) {
		if (!r[i].path)
			continue;
		if (strcmp(r[i].path, "-") == 0 && first_stdout)
			return cli_usage_fail(-1, "audit", "%s - and %s -: only one report can go to stdout", first_stdout,
					r[i].option);
		if (sg_outfile_open(&r[i].out, r[i].path, 0644, SG_OUTFILE_STDOUT, err, sizeof(err)) < 0)
			return cli_fail(-1, "audit", "cannot write the %s report to %s: %s", r[i].option,
					sg_text_escape(r[i].path, shown, sizeof(shown)), err);
		*r[i].fd = r[i].out.fd;
		if (r[i].out.to_stdout)
			first_stdout = r[i].option;
	}
	*on_stdout = first_stdout != NULL;
	return 0;
}

/* Each report written (reported) replaces its path; -1 if one could not. */
static int close_reports(struct report_file *r, size_t n, bool reported)
{
	char err[SG_OUTFILE_ERR_MAX], shown[SG_ESCAPED_MAX];
	int ret = 0;

	for (size_t i = 0; i < n; i++) {
		if (!r[i].path || *r[i].fd < 0)
			continue;
		*r[i].fd = -1;
		if (!reported) {
			sg_outfile_discard(&r[i].out);
		} else if (sg_outfile_commit(&r[i].out, SG_OUTFILE_FSYNC, err, sizeof(err)) < 0) {
			fprintf(stderr, "shmguard audit: cannot write the %s report to %s: %s\n", r[i].option,
				sg_text_escape(r[i].path, shown, sizeof(shown)), err);
			ret = -1;
		}
	}
	return ret;
}

int cmd_audit(int argc, char **argv)
{
	struct audit_opts o = {.json_fd = -1, .junit_fd = -1, .plot_fd = -1, .version = SHMGUARD_VERSION};
	struct audit a = {.o = &o, .aborts_tail = &a.aborts, .cmd_status = -1, .abort_dfd = -1};
	struct report_file reports[] = {{"--json", NULL, &o.json_fd, {0}}, {"--junit", NULL, &o.junit_fd, {0}},
					{"--plot", NULL, &o.plot_fd, {0}}};
	const size_t nreports = sizeof(reports) / sizeof(reports[0]);
	struct audit_tracer *t = NULL;
	char shim[PATH_MAX], err[512];
	const char *listen_addr = NULL;
	sigset_t mask, old;
	int markers = -1, sfd = -1, go = -1, status = AUDIT_USAGE;
	bool reported = false, have_shim;
	pid_t child = -1;
	int parsed = parse_options(argc, argv, &o, &listen_addr);

	if (parsed > 0)
		return AUDIT_PASS; /* --help */
	if (parsed < 0 || resolve_roots(&a, &o) < 0)
		return AUDIT_USAGE;
	if (o.lib && cli_find_shim(o.lib, shim) < 0)
		return cli_fail(AUDIT_USAGE, "audit", "cannot use shim '%s': %s", o.lib, strerror(errno));
	reports[0].path = o.json_path;
	reports[1].path = o.junit_path;
	reports[2].path = o.plot_path;
	if (open_reports(reports, nreports, &o.report_on_stdout) < 0)
		goto out;
	/* Blocked before the /metrics server's thread starts: it inherits the
	 * mask, so that the signals wait for the signalfd. */
	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, &old);
	if ((sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK)) < 0) {
		status = cli_fail(AUDIT_USAGE, "audit", "signalfd: %s", strerror(errno));
		goto out;
	}
	if (listen_addr && !(o.metrics_server = metrics_serve(listen_addr, err, sizeof(err)))) {
		status = cli_fail(AUDIT_USAGE, "audit", "--listen: %s", err);
		goto out;
	}
	if (o.metrics_server) /* :0 is given a port: say which */
		fprintf(stderr, "shmguard audit: serving metrics on http://%s/metrics\n",
			metrics_address(o.metrics_server));
	have_shim = o.lib || cli_find_shim(NULL, shim) == 0;
	if (!(a.files = audit_files_new(o.max_files)) || !(a.review = audit_review_new()) ||
	    ((o.metrics_path || o.metrics_server || o.plot_path) && !(a.live = audit_live_new()))) {
		status = cli_fail(AUDIT_USAGE, "audit", "out of memory");
		goto out;
	}

	/* The abort directory is checked before tracing starts: a refusal is
	 * said at once. */
	if ((markers = audit_markers_open(&a, err, sizeof(err))) < 0) {
		status = cli_fail(AUDIT_USAGE, "audit", "%s", err);
		goto out;
	}
	t = audit_trace_start(&a, o.cmd != NULL, have_shim ? shim : NULL, err, sizeof(err));
	if (!t) {
		status = cli_fail(AUDIT_NO_TRACING, "audit", "tracing is not possible: %s", err);
		goto out;
	}
	if (!audit_trace_has_usdt(t))
		fprintf(stderr, "shmguard audit: the shim's tags are not followed (%s); requests come from the "
				"patterns and from tags already written on files\n",
			have_shim ? "its USDT probe did not attach" : "libshmguard.so not found");
	a.start_ns = sg_monotonic_ns();
	/* The first figures: /metrics answers from now on, and a metrics file
	 * that cannot be written is found before COMMAND starts. */
	if (audit_live_flush(&a, 0) < 0) {
		char shown[SG_ESCAPED_MAX];
		status = cli_fail(AUDIT_USAGE, "audit", "cannot write the metrics to %s: %s",
				  sg_text_escape(o.metrics_path, shown, sizeof(shown)), audit_live_why(&a));
		goto out;
	}
	if (o.cmd) {
		if ((child = spawn(o.cmd, &old, &go)) < 0 || audit_trace_follow(t, child) < 0) {
			status = cli_fail(AUDIT_USAGE, "audit", "cannot start %s: %s", o.cmd[0], strerror(errno));
			goto out;
		}
		if (write(go, "g", 1) != 1) {
			status = cli_fail(AUDIT_USAGE, "audit", "cannot start %s", o.cmd[0]);
			goto out;
		}
		close(go);
		go = -1;
	}
	if (audit_loop_run(&a, t, markers, sfd, child) < 0) {
		/* What was measured is still reported; the status says the run broke. */
		fprintf(stderr, "shmguard audit: the run stopped early: %s\n", strerror(errno));
		audit_report(&a);
		status = AUDIT_NO_TRACING;
	} else {
		status = audit_report(&a);
	}
	reported = true;
out:
	if (go >= 0)
		close(go);
	if (child > 0 && a.cmd_status < 0) {
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
	}
	if (sfd >= 0)
		close(sfd);
	if (markers >= 0)
		close(markers);
	if (close_reports(reports, nreports, reported) < 0 && status != AUDIT_OVER_BUDGET)
		status = AUDIT_USAGE;
	audit_trace_stop(t);
	metrics_stop(o.metrics_server);
	audit_files_free(a.files);
	audit_review_free(a.review);
	audit_aborts_free(&a);
	audit_live_free(a.live);
	return status;
}
