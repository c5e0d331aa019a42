/* shmguard audit: follows /dev/shm per request during a run and reports
 * the leak in KiB per abort; a budget makes it a CI gate. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "audit.h"
#include "audit_trace.h"
#include "cli.h"
#include "creator_store.h"
#include "size.h"
#include "duration.h"
#include "marker.h"
#include "reqid.h"
#include "text.h"

/* A discovered root's abort directory, as the shim's default is in /dev/shm. */
#define ROOT_ABORT_NAME "shmguard-abort"

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: shmguard audit [OPTIONS] [-- COMMAND [ARGS]...]\n\n"
		"Traces the files created under the shm roots (eBPF) by COMMAND and every process\n"
		"it starts, or by the whole system until SIGINT or --duration, and reports what\n"
		"aborted requests leave behind: allocated bytes of their files that still exist\n"
		"--grace seconds after their abort marker, unlinked files still mapped or open\n"
		"included.\n\n"
		"  -p, --patterns P           name patterns, ';'-separated (default:\n"
		"                             $SHMGUARD_PATTERNS)\n"
		"      --patterns-file FILE   more name patterns, one a line ('#' begins a\n"
		"                             comment): the node's (a ConfigMap); a pod's own\n"
		"                             SHMGUARD_PATTERNS take precedence for its files\n"
		"  -a, --abort-dir DIR        where abort markers appear (default:\n"
		"                             $SHMGUARD_ABORT_DIR, else %s);\n"
		"                             with COMMAND, made if missing and then removed\n"
		"                             at the end\n"
		"      --shim-uid USER        the user the shims run as (a name or a number;\n"
		"                             default: the auditor's own): the abort directory\n"
		"                             and its markers are checked as the shims check them\n"
		"                             for that user\n"
		"  -s, --shm-root DIR         another directory to watch besides /dev/shm\n"
		"                             (repeatable)\n"
		"      --own-namespace        without COMMAND: follow only these roots, in the\n"
		"                             auditor's own mount namespace (the default follows\n"
		"                             every tmpfs mounted at /dev/shm in every mount\n"
		"                             namespace too: every pod's, as they come and go)\n"
		"      --all-namespaces       with COMMAND: follow every namespace's /dev/shm too\n"
		"      --root-abort-dir NAME  the abort directory in each /dev/shm found so\n"
		"                             (default: the one its processes'\n"
		"                             SHMGUARD_ABORT_DIR names there, else\n"
		"                             %s); its markers abort that root's\n"
		"                             requests only\n"
		"  -g, --grace DURATION       how long after its marker an abort is measured\n"
		"                             (default 2 s; durations: 2, 500ms, 30s, 10m, 1h)\n"
		"  -b, --max-kib-per-abort N  the gate: fail (exit 1) above N KiB per abort\n"
		"      --min-aborts N         with a budget: fail (exit 1) when fewer than N\n"
		"                             aborts were measured (default 1: a gate that saw no\n"
		"                             abort does not pass)\n"
		"      --allow-drops          do not fail the gate because events or markers were\n"
		"                             lost\n"
		"      --abort-detail N       measured aborts listed one by one in the JSON\n"
		"                             report, of those that left files and of those that\n"
		"                             did not: the newest N of each (default 1000); the\n"
		"                             others are in every figure\n"
		"      --per-workload         with a budget: also fail when any workload (cgroup)\n"
		"                             is over it\n"
		"      --pod-logs DIR         the kubelet's pod log directories, for pods'\n"
		"                             namespaces and names (default /var/log/pods)\n"
		"      --container-logs DIR   the kubelet's container log links\n"
		"                             (POD_NS_NAME-ID.log), for containers' names\n"
		"                             (default /var/log/containers)\n"
		"      --workload-expiry DURATION\n"
		"                             a workload with no file followed and no abort to\n"
		"                             measure is forgotten (its metrics too) this long\n"
		"                             after (default 10m)\n"
		"  -j, --json FILE            also write the report as JSON (checked before the\n"
		"                             run)\n"
		"      --junit FILE           also write it as JUnit XML: a test case per leak\n"
		"                             shape\n"
		"      --max-workload-series N\n"
		"                             workloads with series of their own (default\n"
		"                             1000); the ones made past them share one series,\n"
		"                             id=\"other\" (0: no limit)\n"
		"      --plot FILE            draw the run's timeline into FILE (SVG)\n"
		"                             (a report FILE of - is stdout: the text report\n"
		"                             goes to stderr)\n"
		"      --metrics-file FILE    Prometheus text (node_exporter's textfile\n"
		"                             collector), rewritten atomically every --interval\n"
		"                             seconds (default 15) and at the end\n"
		"      --listen HOST:PORT     serve the same figures on http://HOST:PORT/metrics\n"
		"                             (HOST a name or an address, [IPV6]; :PORT every\n"
		"                             IPv4 address; the address bound is printed on\n"
		"                             stderr)\n"
		"  -d, --duration DURATION    without COMMAND: stop after this long\n"
		"      --reclaim-dead DURATION\n"
		"                             without COMMAND: at the start and this often,\n"
		"                             remove the files whose creator is proven gone from\n"
		"                             every /dev/shm of the machine (every pod's) and\n"
		"                             each --shm-root, as sweep does (the node agent:\n"
		"                             run it in the initial pid namespace); each removal\n"
		"                             is said on stderr\n"
		"      --reclaim-ignore-unreadable\n"
		"                             reclaim even though some processes' files cannot be\n"
		"                             read, as sweep's --ignore-unreadable\n"
		"      --reclaim-dry-run      decide and say what --reclaim-dead would remove,\n"
		"                             remove nothing\n"
		"      --reclaim-node-shm     node mode: --reclaim-dead covers the node's own\n"
		"                             /dev/shm too (its services' files), not only the\n"
		"                             pods'\n"
		"      --record-creators      without COMMAND: record who creates each file, and\n"
		"                             who opens it, as shmguard watch does, into\n"
		"                             " SG_STORE_DIR " (SHMGUARD_STORE_DIR): the reclaim\n"
		"                             and sweep's dead files then include those of\n"
		"                             programs without the shim (one recorder a node)\n"
		"  -i, --interval DURATION    a progress line this often when stderr is not a\n"
		"                             terminal\n"
		"      --lib PATH             the shim whose tags to follow (default: found as by\n"
		"                             'run')\n"
		"      --max-files N          files followed at most (1 to 100000000, default\n"
		"                             1000000); more fails the gate\n"
		"      --ring-kib N           the kernel side's event buffer, a power of two from\n"
		"                             4 (default 8192); events it cannot hold are counted\n"
		"                             and fail the gate\n"
		"      --probe NAME           how to see files created: ctime, fentry, kprobe or\n"
		"                             syscalls (default: the best this kernel allows;\n"
		"                             exit 3 if NAME is not)\n"
		"  -v, --verbose              libbpf's messages\n"
		"  -h, --help                 show this help\n"
		"  -V, --version              print the version\n\n"
		"A first SIGINT (or SIGTERM, SIGHUP) goes to COMMAND; a second kills it and ends\n"
		"the run. With GITHUB_ACTIONS=true it also writes annotations to stdout and a\n"
		"summary table to $GITHUB_STEP_SUMMARY.\n\n"
		"Exit status: 0 pass (or no budget given); 1 over budget, fewer aborts measured\n"
		"than --min-aborts, or events, files or markers lost without --allow-drops; 2 bad\n"
		"usage or input, found before COMMAND runs; 3 tracing not possible here (in a pid\n"
		"namespace of its own: without COMMAND, or with another namespace's /proc), or it\n"
		"failed during the run; 4 the gate passed but COMMAND failed or was killed. The\n"
		"report is printed in every case but 2.\n",
		SG_DEFAULT_ABORT_DIR, ROOT_ABORT_NAME);
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

/* --shim-uid: a number, else a user name of the passwd database. */
static int parse_user(const char *s, uid_t *out)
{
	unsigned long long n;
	const struct passwd *pw;

	if (parse_count(s, 0, (uid_t)-2, &n) == 0) {
		*out = (uid_t)n;
		return 0;
	}
	if (!*s || !(pw = getpwnam(s)))
		return -1;
	*out = pw->pw_uid;
	return 0;
}

/* --metrics-file without --interval: node_exporter's scrapes are usually
 * 15 to 60 seconds apart. */
#define METRICS_INTERVAL_S 15.0

/* About 250 bytes each: beyond this the table would not fit in memory. */
#define MAX_FILES_LIMIT 100000000ull

/* At most one report goes to stdout ("-"); -1 (reported) if two would. */
static int check_stdout_reports(const struct audit_opts *o)
{
	const char *const options[] = {"--json", "--junit", "--plot"};
	const char *paths[] = {o->reports.json_path, o->reports.junit_path, o->reports.plot_path}, *first = NULL;

	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		if (!paths[i] || strcmp(paths[i], "-") != 0)
			continue;
		if (first)
			return cli_usage_fail(-1, "audit", "%s - and %s -: only one report can go to stdout", first,
					      options[i]);
		first = options[i];
	}
	return 0;
}

/* A patterns file (the node's, a ConfigMap) at most this long. */
#define PATTERNS_FILE_MAX (64 << 10)

/* The patterns of FILE, one a line ('#' begins a comment, blank lines and
 * spaces around a pattern do not count), after those of given (NULL:
 * none), ';'-separated in *all (NULL when there are none): 0, or -1
 * (reported, naming the line). */
static int read_patterns_file(const char *path, const char *given, char **all)
{
	char shown[SG_ESCAPED_MAX], err[200], *text = NULL, *out = NULL, *line, *next;
	struct sg_pattern_set one;
	size_t len = 0, used = 0, cap;
	unsigned lineno = 0;
	ssize_t n = 0;
	int fd, ret = -1;

	sg_text_escape(path, shown, sizeof(shown));
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return cli_usage_fail(-1, "audit", "--patterns-file %s: %s", shown, strerror(errno));
	if (!(text = malloc(PATTERNS_FILE_MAX + 1))) {
		cli_usage_fail(-1, "audit", "--patterns-file %s: out of memory", shown);
		goto cleanup;
	}
	while (len <= PATTERNS_FILE_MAX && (n = read(fd, text + len, PATTERNS_FILE_MAX + 1 - len)) > 0)
		len += (size_t)n;
	if (n < 0) {
		cli_usage_fail(-1, "audit", "--patterns-file %s: %s", shown, strerror(errno));
		goto cleanup;
	}
	if (len > PATTERNS_FILE_MAX) {
		cli_usage_fail(-1, "audit", "--patterns-file %s: longer than %d bytes", shown, PATTERNS_FILE_MAX);
		goto cleanup;
	}
	text[len] = '\0';
	cap = len + (given ? strlen(given) : 0) + 2;
	if (!(out = malloc(cap))) {
		cli_usage_fail(-1, "audit", "--patterns-file %s: out of memory", shown);
		goto cleanup;
	}
	out[0] = '\0';
	if (given && *given)
		used = (size_t)snprintf(out, cap, "%s", given);
	for (line = text; line; line = next) {
		char *end;

		if ((next = strchr(line, '\n')))
			*next++ = '\0';
		lineno++;
		if (strchr(line, '#'))
			*strchr(line, '#') = '\0';
		line += strspn(line, " \t\r");
		for (end = line + strlen(line); end > line && strchr(" \t\r", end[-1]); end--)
			;
		*end = '\0';
		if (!*line)
			continue;
		if (strchr(line, ';') || sg_patterns_parse(&one, line, err, sizeof(err)) < 0) {
			cli_usage_fail(-1, "audit", "--patterns-file %s, line %u: %s", shown, lineno,
				       strchr(line, ';') ? "one pattern a line (no ';')" : err);
			goto cleanup;
		}
		used += (size_t)snprintf(out + used, cap - used, "%s%s", used ? ";" : "", line);
	}
	*all = out;
	out = NULL;
	ret = 0;
cleanup:
	free(out);
	free(text);
	close(fd);
	return ret;
}

/* Returns 0, 1 when --help was shown, or -1 on bad usage (reported). */
static int parse_options(int argc, char **argv, struct audit_opts *o, const char **lib)
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
		{"min-aborts", required_argument, NULL, 'A'}, {"reclaim-dead", required_argument, NULL, 'C'},
		{"reclaim-ignore-unreadable", no_argument, NULL, 'I'}, {"reclaim-dry-run", no_argument, NULL, 'N'},
		{"reclaim-node-shm", no_argument, NULL, 'H'}, {"record-creators", no_argument, NULL, 'B'},
		{"own-namespace", no_argument, NULL, 'O'},    {"all-namespaces", no_argument, NULL, 'W'},
		{"root-abort-dir", required_argument, NULL, 'r'}, {"per-workload", no_argument, NULL, 'Y'},
		{"pod-logs", required_argument, NULL, 'K'}, {"abort-detail", required_argument, NULL, 'T'},
		{"container-logs", required_argument, NULL, 'Q'}, {"workload-expiry", required_argument, NULL, 'E'},
		{"shim-uid", required_argument, NULL, 'u'}, {"max-workload-series", required_argument, NULL, 'X'},
		{"patterns-file", required_argument, NULL, 'f'},
		{0},
	};
	const char *patterns = getenv("SHMGUARD_PATTERNS"), *abort_dir = getenv("SHMGUARD_ABORT_DIR");
	const char *patterns_file = NULL;
	char *all_patterns = NULL;
	bool min_aborts_given = false, own_ns = false, all_ns = false;
	char err[200];
	unsigned long long n;
	int c;

	o->grace = 2;
	o->max_files = 1000000;
	o->workloads.pod_logs = "/var/log/pods";
	o->workloads.container_logs = "/var/log/containers";
	o->workloads.expiry = 600;
	o->workloads.series_max = 1000;
	o->shim_uid = geteuid();
	cli_default_root(&o->roots);
	while ((c = getopt_long(argc, argv, "+p:a:s:g:b:j:d:i:vhV", opts, NULL)) != -1) {
		switch (c) {
		case 'p': patterns = optarg; break;
		case 'f': patterns_file = optarg; break;
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
			if (parse_kib(optarg, &o->gate.budget_kib) < 0)
				return cli_usage_fail(-1, "audit", "bad --max-kib-per-abort '%s': expected a number of KiB",
						optarg);
			o->gate.have_budget = true;
			break;
		case 'A':
			if (parse_count(optarg, 0, UINT_MAX, &n) < 0)
				return cli_usage_fail(-1, "audit", "bad --min-aborts '%s': a whole number of aborts",
						      optarg);
			o->gate.min_aborts = (unsigned)n;
			min_aborts_given = true;
			break;
		case 'D': o->gate.allow_drops = true; break;
		case 'O': own_ns = true; break;
		case 'W': all_ns = true; break;
		case 'r':
			if (sg_reqid_invalid(optarg) || strlen(optarg) >= sizeof(o->root_abort_name))
				return cli_usage_fail(-1, "audit", "bad --root-abort-dir '%s': one plain name, such as %s",
						      optarg, ROOT_ABORT_NAME);
			snprintf(o->root_abort_name, sizeof(o->root_abort_name), "%s", optarg);
			o->root_abort_given = true;
			break;
		case 'Y': o->gate.per_workload = true; break;
		case 'T':
			if (parse_count(optarg, 1, 1000000, &n) < 0)
				return cli_usage_fail(-1, "audit", "bad --abort-detail '%s': a number from 1 to 1000000", optarg);
			o->gate.abort_detail = (unsigned)n;
			break;
		case 'K': o->workloads.pod_logs = optarg; break;
		case 'Q': o->workloads.container_logs = optarg; break;
		case 'u':
			if (parse_user(optarg, &o->shim_uid) < 0)
				return cli_usage_fail(-1, "audit", "bad --shim-uid '%s': a user name or a number", optarg);
			break;
		case 'E':
			if (parse_duration(optarg, &o->workloads.expiry) < 0)
				return cli_usage_fail(-1, "audit", "bad --workload-expiry '%s': expected a duration (90, 10m, 2h)",
						      optarg);
			break;
		case 'X':
			if (parse_count(optarg, 0, 1000000, &n) < 0)
				return cli_usage_fail(-1, "audit", "bad --max-workload-series '%s': a count from 0 to 1000000",
						      optarg);
			o->workloads.series_max = (size_t)n;
			break;
		case 'j': o->reports.json_path = optarg; break;
		case 'U': o->reports.junit_path = optarg; break;
		case 'G': o->reports.plot_path = optarg; break;
		case 'F':
			if (strcmp(optarg, "-") == 0)
				return cli_usage_fail(-1, "audit", "--metrics-file -: the file is rewritten every --interval, "
							     "it cannot be stdout (use --listen)");
			o->reports.metrics_path = optarg;
			break;
		case 'l': o->reports.listen_addr = optarg; break;
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
		case 'C':
			if (parse_duration(optarg, &o->reclaim.interval) < 0 || o->reclaim.interval < 1)
				return cli_usage_fail(-1, "audit",
						      "bad --reclaim-dead '%s': expected a duration of 1 s or more (10s, 1m)",
						      optarg);
			break;
		case 'I': o->reclaim.ignore_unreadable = true; break;
		case 'N': o->reclaim.dry_run = true; break;
		case 'H': o->reclaim.node_shm = true; break;
		case 'B': o->reclaim.record_creators = true; break;
		case 'L': *lib = optarg; break;
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
			o->trace.ring_kib = (unsigned)n;
			break;
		case 'P':
			if (audit_probe_by_name(optarg) < 0)
				return cli_usage_fail(-1, "audit", "bad --probe '%s': one of %s", optarg, audit_probe_list);
			o->trace.probe = optarg;
			break;
		case 'v': o->trace.verbose = true; break;
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
	if (own_ns && all_ns)
		return cli_usage_fail(-1, "audit", "--own-namespace and --all-namespaces: choose one");
	if (own_ns && o->cmd)
		return cli_usage_fail(-1, "audit", "--own-namespace is the default with COMMAND");
	if (all_ns && !o->cmd)
		return cli_usage_fail(-1, "audit", "--all-namespaces is the default without COMMAND");
	o->node_mode = o->cmd ? all_ns : !own_ns;
	if (!o->root_abort_name[0])
		snprintf(o->root_abort_name, sizeof(o->root_abort_name), "%s", ROOT_ABORT_NAME);
	o->reports.metrics_interval = o->interval ? o->interval : METRICS_INTERVAL_S;
	if (check_stdout_reports(o) < 0)
		return -1;
	if (min_aborts_given && !o->gate.have_budget)
		return cli_usage_fail(-1, "audit", "--min-aborts is a floor of the gate: give --max-kib-per-abort too");
	if (o->gate.per_workload && !o->gate.have_budget)
		return cli_usage_fail(-1, "audit", "--per-workload applies the gate to each workload: give --max-kib-per-abort too");
	if (o->gate.have_budget && !min_aborts_given)
		o->gate.min_aborts = 1;
	if (o->cmd && o->duration)
		return cli_usage_fail(-1, "audit", "--duration is for a run without COMMAND (which ends the run itself)");
	if (o->cmd && o->reclaim.interval)
		return cli_usage_fail(-1, "audit", "--reclaim-dead is for the node agent, a run without COMMAND");
	if (o->cmd && o->reclaim.record_creators)
		return cli_usage_fail(-1, "audit", "--record-creators is for the node agent, a run without COMMAND");
	if ((o->reclaim.ignore_unreadable || o->reclaim.dry_run || o->reclaim.node_shm) && !o->reclaim.interval)
		return cli_usage_fail(-1, "audit",
				      "--reclaim-ignore-unreadable, --reclaim-dry-run and --reclaim-node-shm go with --reclaim-dead");
	if (patterns_file && read_patterns_file(patterns_file, patterns, &all_patterns) < 0)
		return -1;
	if (all_patterns)
		patterns = all_patterns;
	if (!patterns || !*patterns) {
		o->patterns.count = 0;
	} else if (sg_patterns_parse(&o->patterns, patterns, err, sizeof(err)) < 0) {
		free(all_patterns);
		return cli_usage_fail(-1, "audit", "bad patterns: %s", err);
	}
	free(all_patterns);
	const char *why;
	if (sg_config_check_dir(abort_dir && *abort_dir ? abort_dir : SG_DEFAULT_ABORT_DIR, o->abort_dir, &why) < 0)
		return cli_usage_fail(-1, "audit", "bad abort directory '%s': %s", abort_dir, why);
	if (sg_roots_check_abort_dir(&o->roots, o->abort_dir, &why) < 0)
		return cli_usage_fail(-1, "audit", "bad abort directory '%s': %s", o->abort_dir, why);
	return 0;
}

/* The abort directory a run with COMMAND made because none was there: it
 * is the run's, passed to COMMAND (SHMGUARD_ABORT_DIR), and removed with
 * its markers at the end, so that the CI recipe works on a fresh machine
 * and leaves it as found.  parent_fd and fd are -1 when the run did not
 * make it. */
struct run_abort_dir {
	int parent_fd, fd;
	char name[NAME_MAX + 1];
};

/* What is at the abort directory's path, said before the auditor opens it:
 * 0 (a directory, a link or nothing), or -1 (reported). */
static int check_abort_dir(const struct audit_opts *o)
{
	char shown[SG_ESCAPED_MAX];
	struct stat st;

	sg_text_escape(o->abort_dir, shown, sizeof(shown));
	if (lstat(o->abort_dir, &st) < 0) {
		if (errno == ENOENT)
			return 0; /* made with COMMAND; else the auditor says how to */
		return cli_usage_fail(-1, "audit", "abort directory %s: %s", shown, strerror(errno));
	}
	if (!S_ISDIR(st.st_mode) && !S_ISLNK(st.st_mode)) /* a link: the auditor says it is never followed */
		return cli_usage_fail(-1, "audit", "abort directory %s is not a directory", shown);
	return 0;
}

/* Removes what COMMAND left in the directory the run made (files only,
 * by its descriptor), then the directory, if its name is still it. */
static void remove_abort_dir(const struct audit_opts *o, struct run_abort_dir *d)
{
	char shown[SG_ESCAPED_MAX];
	struct stat mine, named;
	struct dirent *e;
	int fd;
	DIR *dir;

	if (d->fd < 0)
		return;
	if ((fd = openat(d->fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0 && (dir = fdopendir(fd))) {
		while ((e = readdir(dir)))
			if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
				(void)unlinkat(d->fd, e->d_name, 0);
		closedir(dir);
	} else if (fd >= 0) {
		close(fd);
	}
	if (fstat(d->fd, &mine) < 0 || fstatat(d->parent_fd, d->name, &named, AT_SYMLINK_NOFOLLOW) < 0 ||
	    mine.st_dev != named.st_dev || mine.st_ino != named.st_ino)
		cli_warn("audit", "left the abort directory %s it made: its name is another file now",
			 sg_text_escape(o->abort_dir, shown, sizeof(shown)));
	else if (unlinkat(d->parent_fd, d->name, AT_REMOVEDIR) < 0)
		cli_warn("audit", "left the abort directory %s it made: %s",
			 sg_text_escape(o->abort_dir, shown, sizeof(shown)), strerror(errno));
	close(d->fd);
	close(d->parent_fd);
	d->fd = d->parent_fd = -1;
}

/* Makes the abort directory when there is none (one level, 0755, given to
 * the shims' user), and names it to COMMAND.  0, or -1 (reported). */
static int make_abort_dir(const struct audit_opts *o, struct run_abort_dir *d)
{
	char parent[SG_PATH_MAX + 1], shown[SG_ESCAPED_MAX];
	const char *slash = strrchr(o->abort_dir, '/'), *why;
	struct stat st;

	sg_text_escape(o->abort_dir, shown, sizeof(shown));
	snprintf(parent, sizeof(parent), "%.*s", slash == o->abort_dir ? 1 : (int)(slash - o->abort_dir),
		 o->abort_dir);
	snprintf(d->name, sizeof(d->name), "%s", slash + 1);
	d->parent_fd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (d->parent_fd < 0 || mkdirat(d->parent_fd, d->name, 0755) < 0) {
		int err = errno;

		if (d->parent_fd >= 0)
			close(d->parent_fd);
		d->parent_fd = -1;
		if (err == EEXIST)
			goto named; /* someone else's, checked by the auditor as any other */
		return cli_usage_fail(-1, "audit", "abort directory %s does not exist and cannot be made: %s", shown,
				      strerror(err));
	}
	/* Ours only if what is opened is the directory just made, of this uid:
	 * a world-writable parent could have had it swapped. */
	d->fd = openat(d->parent_fd, d->name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (d->fd < 0 || fstat(d->fd, &st) < 0) {
		why = strerror(errno);
	} else if (st.st_uid != geteuid()) {
		why = "another user's directory took its place";
		close(d->fd);
		d->fd = -1; /* not ours to remove */
	} else if (o->shim_uid != st.st_uid && (fchown(d->fd, o->shim_uid, (gid_t)-1) < 0 || fstat(d->fd, &st) < 0)) {
		why = strerror(errno);
	} else if (sg_abort_dir_check(&st, o->shim_uid, &why) == 0) {
		why = NULL;
	}
	if (why) {
		cli_usage_fail(-1, "audit", "abort directory %s was made but is not usable: %s", shown, why);
		remove_abort_dir(o, d);
		if (d->parent_fd >= 0)
			close(d->parent_fd);
		d->parent_fd = -1;
		return -1;
	}
named:
	if (setenv("SHMGUARD_ABORT_DIR", o->abort_dir, 1) < 0)
		return cli_fail(-1, "audit", "cannot set SHMGUARD_ABORT_DIR: %s", strerror(errno));
	return 0;
}

int cmd_audit(int argc, char **argv)
{
	struct audit_opts o = {.version = SHMGUARD_VERSION};
	struct run_abort_dir made = {.parent_fd = -1, .fd = -1};
	char shim[PATH_MAX], err[1024];
	const char *lib = NULL;
	struct audit *a;
	int parsed = parse_options(argc, argv, &o, &lib), status;

	if (parsed > 0)
		return AUDIT_PASS; /* --help */
	if (parsed < 0)
		return AUDIT_USAGE;
	if (lib && cli_find_shim(lib, shim) < 0)
		return cli_fail(AUDIT_USAGE, "audit", "cannot use shim '%s': %s", lib, strerror(errno));
	o.trace.shim = lib || cli_find_shim(NULL, shim) == 0 ? shim : NULL;
	if (check_abort_dir(&o) < 0 || (o.cmd && make_abort_dir(&o, &made) < 0))
		return AUDIT_USAGE;
	if (!(a = audit_new(&o, err, sizeof(err)))) {
		remove_abort_dir(&o, &made);
		return cli_fail(AUDIT_USAGE, "audit", "%s", err);
	}
	status = audit_run(a, err, sizeof(err));
	if (status < 0) {
		/* What was measured is still reported; the status says the run broke. */
		cli_warn("audit", "%s", err);
		audit_report(a);
		status = AUDIT_NO_TRACING;
	} else if (status > 0) {
		cli_warn("audit", "%s", err);
	} else {
		status = audit_report(a);
	}
	audit_free(a);
	remove_abort_dir(&o, &made);
	return status;
}
