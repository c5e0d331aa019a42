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
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "audit.h"
#include "clock.h"
#include "holders.h"
#include "audit_trace.h"
#include "cli.h"

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
		"  -g, --grace SECONDS        how long after its marker an abort is measured (default 2)\n"
		"  -b, --max-kib-per-abort N  the gate: fail (exit 1) above N KiB per abort\n"
		"      --allow-drops          do not fail the gate because events were dropped\n"
		"  -j, --json FILE            also write the report as JSON\n"
		"  -d, --duration SECONDS     without COMMAND: stop after this long\n"
		"  -i, --interval SECONDS     a progress line this often when stderr is not a terminal\n"
		"      --lib PATH             the shim whose tags to follow (default: found as by 'run')\n"
		"      --max-files N          files followed at most (default 1000000); more fails the gate\n"
		"      --ring-kib N           the kernel side's event buffer, a power of two from 4 (default\n"
		"                             8192); events it cannot hold are counted and fail the gate\n"
		"      --probe NAME           how to see files created: ctime, fentry, kprobe or syscalls\n"
		"                             (default: the best this kernel allows; exit 3 if NAME is not)\n"
		"  -v, --verbose              libbpf's messages\n"
		"  -h, --help                 show this help\n\n"
		"Exit status: 0 pass (or no budget given), 1 over budget or events lost, 2 bad usage or\n"
		"input, 3 tracing not possible here, 4 COMMAND failed (the report is still printed).\n",
		SG_DEFAULT_ABORT_DIR);
}

static int parse_seconds(const char *s, double *out)
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

static int parse_options(int argc, char **argv, struct audit_opts *o)
{
	static const struct option opts[] = {
		{"patterns", required_argument, NULL, 'p'},  {"abort-dir", required_argument, NULL, 'a'},
		{"shm-root", required_argument, NULL, 's'},  {"grace", required_argument, NULL, 'g'},
		{"max-kib-per-abort", required_argument, NULL, 'b'}, {"allow-drops", no_argument, NULL, 'D'},
		{"json", required_argument, NULL, 'j'},      {"duration", required_argument, NULL, 'd'},
		{"interval", required_argument, NULL, 'i'},  {"lib", required_argument, NULL, 'L'},
		{"max-files", required_argument, NULL, 'M'}, {"verbose", no_argument, NULL, 'v'},
		{"ring-kib", required_argument, NULL, 'R'},  {"probe", required_argument, NULL, 'P'},
		{"help", no_argument, NULL, 'h'},            {0},
	};
	const char *patterns = getenv("SHMGUARD_PATTERNS"), *abort_dir = getenv("SHMGUARD_ABORT_DIR");
	char err[200], *end;
	int c;

	o->grace = 2;
	o->max_files = 1000000;
	cli_default_root(&o->roots);
	while ((c = getopt_long(argc, argv, "+p:a:s:g:b:j:d:i:vh", opts, NULL)) != -1) {
		switch (c) {
		case 'p': patterns = optarg; break;
		case 'a': abort_dir = optarg; break;
		case 's':
			if (cli_add_root("audit", &o->roots, optarg) < 0)
				return -1;
			break;
		case 'g':
			if (parse_seconds(optarg, &o->grace) < 0)
				return cli_fail(-1, "audit", "bad --grace '%s': expected seconds", optarg);
			break;
		case 'b':
			if (parse_seconds(optarg, &o->budget_kib) < 0)
				return cli_fail(-1, "audit", "bad --max-kib-per-abort '%s': expected a number of KiB",
						optarg);
			o->have_budget = true;
			break;
		case 'D': o->allow_drops = true; break;
		case 'j': o->json_path = optarg; break;
		case 'd':
			if (parse_seconds(optarg, &o->duration) < 0 || o->duration == 0)
				return cli_fail(-1, "audit", "bad --duration '%s': expected seconds", optarg);
			break;
		case 'i':
			if (parse_seconds(optarg, &o->interval) < 0 || o->interval == 0)
				return cli_fail(-1, "audit", "bad --interval '%s': expected seconds", optarg);
			break;
		case 'L': o->lib = optarg; break;
		case 'M':
			o->max_files = strtoul(optarg, &end, 10);
			if (!*optarg || *end || o->max_files == 0)
				return cli_fail(-1, "audit", "bad --max-files '%s'", optarg);
			break;
		case 'R':
			o->ring_kib = (unsigned)strtoul(optarg, &end, 10);
			if (!*optarg || *end || o->ring_kib < 4 || o->ring_kib > (1u << 20) ||
			    (o->ring_kib & (o->ring_kib - 1)))
				return cli_fail(-1, "audit", "bad --ring-kib '%s': a power of two from 4 to 1048576",
						optarg);
			break;
		case 'P':
			if (audit_probe_by_name(optarg) < 0)
				return cli_fail(-1, "audit", "bad --probe '%s': one of %s", optarg, audit_probe_list);
			o->probe = optarg;
			break;
		case 'v': o->verbose = true; break;
		case 'h':
			usage(stdout);
			exit(AUDIT_PASS);
		default:
			usage(stderr);
			return -1;
		}
	}
	if (optind < argc)
		o->cmd = argv + optind;
	if (o->cmd && o->duration)
		return cli_fail(-1, "audit", "--duration is for a run without COMMAND (which ends the run itself)");
	if (!patterns || !*patterns)
		o->patterns.count = 0;
	else if (sg_patterns_parse(&o->patterns, patterns, err, sizeof(err)) < 0)
		return cli_fail(-1, "audit", "bad patterns: %s", err);
	const char *why = sg_config_check_dir(abort_dir && *abort_dir ? abort_dir : SG_DEFAULT_ABORT_DIR, o->abort_dir);
	if (why)
		return cli_fail(-1, "audit", "bad abort directory '%s': %s", abort_dir, why);
	if ((why = sg_roots_check_abort_dir(&o->roots, o->abort_dir)))
		return cli_fail(-1, "audit", "bad abort directory '%s': %s", o->abort_dir, why);
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
				"abort directory %s does not exist (create it first: mkdir -p %s; the shim and "
				"'shmguard abort' use it too)",
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

static void progress(struct audit *a, bool tty, double *next)
{
	double now = audit_now_s(a), kib = 0;
	unsigned measured = 0;
	char line[160];

	if ((!tty && a->o->interval <= 0) || now < *next)
		return;
	for (const struct audit_abort *ab = a->aborts; ab; ab = ab->next) {
		if (ab->measured) {
			measured++;
			kib += ab->leaked_bytes / 1024.0;
		}
	}
	snprintf(line, sizeof(line), "[%6.1f s] aborts %u (measured %u)   %.1f KiB/abort so far   tracked %.1f MiB in %llu files",
		 now, a->naborts, measured, measured ? kib / measured : 0.0, a->tracked / 1048576.0,
		 (unsigned long long)a->files_left);
	if (tty)
		fprintf(stderr, "\r%s\033[K", line);
	else
		fprintf(stderr, "%s\n", line);
	*next = now + (tty ? 0.5 : a->o->interval);
}

/* The kernel side wakes the reader only when its buffer fills up: poll it
 * this often (the 8 MiB buffer holds well over a second of events). */
#define POLL_S 0.02
/* How often the file table is reviewed (freed files forgotten). */
#define REVIEW_S 1.0

/* Milliseconds until something is due: an abort to measure, a progress
 * line, the end of --duration, the next look at the event buffer. */
static int next_timeout(const struct audit *a, double next_progress, bool show)
{
	double now = audit_now_s(a), due = now + POLL_S;

	for (const struct audit_abort *ab = a->aborts; ab; ab = ab->next)
		if (!ab->measured && ab->marker_s + a->o->grace < due)
			due = ab->marker_s + a->o->grace;
	if (show && next_progress < due)
		due = next_progress;
	if (a->o->duration && a->o->duration < due)
		due = a->o->duration;
	return due <= now ? 0 : (int)((due - now) * 1000) + 1;
}

static int run(struct audit *a, struct audit_tracer *t, int markers, pid_t child, int sfd)
{
	bool tty = isatty(STDERR_FILENO), show = tty || a->o->interval > 0;
	double next_progress = 0, next_review = REVIEW_S;
	int ep = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event ev = {.events = EPOLLIN};

	if (ep < 0)
		return -1;
	ev.data.u32 = 0;
	epoll_ctl(ep, EPOLL_CTL_ADD, audit_trace_fd(t), &ev);
	ev.data.u32 = 1;
	epoll_ctl(ep, EPOLL_CTL_ADD, markers, &ev);
	ev.data.u32 = 2;
	epoll_ctl(ep, EPOLL_CTL_ADD, sfd, &ev);

	for (bool running = true; running;) {
		struct epoll_event got[3];
		int n = epoll_wait(ep, got, 3, next_timeout(a, next_progress, show));

		for (int i = 0; i < n; i++) {
			struct signalfd_siginfo si;
			int status;

			switch (got[i].data.u32) {
			case 0:
				audit_trace_consume(t);
				break;
			case 1:
				audit_markers_read(a, markers);
				break;
			case 2:
				if (read(sfd, &si, sizeof(si)) != sizeof(si))
					break;
				if (si.ssi_signo == SIGCHLD) {
					if (child > 0 && waitpid(child, &status, WNOHANG) == child) {
						a->cmd_status = WIFEXITED(status) ? WEXITSTATUS(status)
										  : 128 + WTERMSIG(status);
						running = false;
					}
				} else if (child > 0) {
					kill(child, (int)si.ssi_signo); /* COMMAND decides; its end ends the run */
				} else {
					running = false;
				}
				break;
			}
		}
		if (a->o->duration && audit_now_s(a) >= a->o->duration)
			running = false;
		audit_trace_consume(t); /* measurements need every event so far */
		audit_measure_due(a, false);
		if (audit_now_s(a) >= next_review) {
			/* The table keeps only what exists: consumed files go. */
			audit_review(a, &a->tracked, &a->unattributed, &a->files_left);
			next_review = audit_now_s(a) + REVIEW_S;
		}
		if (show)
			progress(a, tty, &next_progress);
	}
	if (tty)
		fprintf(stderr, "\r\033[K");
	close(ep);
	return 0;
}

int cmd_audit(int argc, char **argv)
{
	struct audit_opts o = {0};
	struct audit a = {.o = &o, .aborts_tail = &a.aborts, .cmd_status = -1};
	struct audit_tracer *t = NULL;
	char shim[PATH_MAX], err[512];
	sigset_t mask, old;
	int markers = -1, sfd = -1, go = -1, status = AUDIT_USAGE;
	pid_t child = -1;
	if (parse_options(argc, argv, &o) < 0 || resolve_roots(&a, &o) < 0)
		return AUDIT_USAGE;
	if (o.lib && cli_find_shim(o.lib, shim) < 0)
		return cli_fail(AUDIT_USAGE, "audit", "cannot use shim '%s': %s", o.lib, strerror(errno));
	bool have_shim = o.lib || cli_find_shim(NULL, shim) == 0;
	if (!(a.files = audit_files_new(o.max_files)))
		return cli_fail(AUDIT_USAGE, "audit", "out of memory");

	t = audit_trace_start(&a, o.cmd != NULL, have_shim ? shim : NULL, err, sizeof(err));
	if (!t) {
		status = cli_fail(AUDIT_NO_TRACING, "audit", "tracing is not possible: %s", err);
		goto out;
	}
	if (!audit_trace_has_usdt(t))
		fprintf(stderr, "shmguard audit: the shim's tags are not followed (%s); requests come from the "
				"patterns and from tags already written on files\n",
			have_shim ? "its USDT probe did not attach" : "libshmguard.so not found");
	if ((markers = audit_markers_open(&a)) < 0) {
		status = cli_fail(AUDIT_USAGE, "audit", "cannot watch %s: %s", o.abort_dir, strerror(errno));
		goto out;
	}
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
	a.start_ns = sg_monotonic_ns();
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
	run(&a, t, markers, child, sfd);

	/* What is still queued belongs to the run; aborts not yet due are
	 * measured now (a run that ends sooner measures at its end). */
	audit_trace_consume(t);
	audit_markers_read(&a, markers);
	a.end_s = audit_now_s(&a);
	a.dropped = audit_trace_dropped(t);
	audit_measure_due(&a, true);
	audit_review(&a, &a.tracked, &a.unattributed, &a.files_left);
	status = audit_report(&a);
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
	audit_trace_stop(t);
	audit_files_free(a.files);
	audit_aborts_free(&a);
	return status;
}
