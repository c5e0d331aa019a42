/* The auditor's front door (audit.h): what a run needs is checked and
 * opened before it starts, then the tracer, the markers' watch and COMMAND
 * are started in the order that loses nothing, and the loop runs. */
#include "audit.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "audit_engine.h"
#include "audit_reclaim.h"
#include "audit_recorder.h"
#include "audit_trace.h"
#include "holders.h"
#include "metrics.h"
#include "outfile.h"
#include "text.h"

__attribute__((format(printf, 3, 4))) static int say(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -1;
}

/* Device and directory inode of each root, which must exist, and the
 * abort directory. */
static int resolve_roots(struct audit *a, char *err, size_t errlen)
{
	const struct audit_opts *o = a->o;
	struct stat st;

	if (audit_roots_given(a, err, errlen) < 0)
		return -1;
	if (stat(o->abort_dir, &st) < 0 || !S_ISDIR(st.st_mode))
		return say(err, errlen,
			   "abort directory %s does not exist: create it with 'shmguard abort --init-dir %s' "
			   "(stamped as shmguard's, so that old markers expire; a directory made by mkdir keeps "
			   "them for ever)",
			   o->abort_dir, o->abort_dir);
	return 0;
}

/* The report files (--json, --junit, --plot): each a new file beside its
 * path from before the run (host/outfile.h), so that a path it cannot
 * write is found at once; it replaces the path once the run has reported
 * (audit_report), and is removed if it never did (audit_free).  "-" is
 * stdout (the command line lets one report at most go there). */
static const char *const report_option[] = {"--json", "--junit", "--plot"};

static const char *report_path(const struct audit *a, size_t i)
{
	return i == 0 ? a->o->reports.json_path : i == 1 ? a->o->reports.junit_path : a->o->reports.plot_path;
}

static int *report_fd(struct audit *a, size_t i)
{
	return i == 0 ? &a->run.json_fd : i == 1 ? &a->run.junit_fd : &a->run.plot_fd;
}

static int open_reports(struct audit *a, char *err, size_t errlen)
{
	char why[SG_OUTFILE_ERR_MAX], shown[SG_ESCAPED_MAX];

	for (size_t i = 0; i < sizeof(report_option) / sizeof(report_option[0]); i++) {
		const char *path = report_path(a, i);

		if (!path)
			continue;
		if (sg_outfile_open(&a->run.reports[i], path, 0644, SG_OUTFILE_STDOUT, why, sizeof(why)) < 0)
			return say(err, errlen, "cannot write the %s report to %s: %s", report_option[i],
				   sg_text_escape(path, shown, sizeof(shown)), why);
		*report_fd(a, i) = a->run.reports[i].fd;
		a->run.report_on_stdout |= a->run.reports[i].to_stdout;
	}
	return 0;
}

/* Each report file written whole replaces its path (reported), or is
 * removed: a report cut short (a full filesystem) never takes the place of
 * the one there before.  -1 if one could not replace it (said why). */
static int close_reports(struct audit *a, bool reported)
{
	char why[SG_OUTFILE_ERR_MAX], shown[SG_ESCAPED_MAX];
	int ret = 0;

	for (size_t i = 0; i < sizeof(report_option) / sizeof(report_option[0]); i++) {
		int *fd = report_fd(a, i);

		if (*fd < 0)
			continue;
		*fd = -1;
		if (!reported || a->run.report_failed[i]) {
			sg_outfile_discard(&a->run.reports[i]);
		} else if (sg_outfile_commit(&a->run.reports[i], SG_OUTFILE_FSYNC, why, sizeof(why)) < 0) {
			fprintf(stderr, "shmguard audit: cannot write the %s report to %s: %s\n", report_option[i],
				sg_text_escape(report_path(a, i), shown, sizeof(shown)), why);
			ret = -1;
		}
	}
	return ret;
}

int audit_report(struct audit *a)
{
	int status = audit_report_write(a, a->run.report_failed);

	if (close_reports(a, true) < 0 && status != AUDIT_OVER_BUDGET)
		status = AUDIT_USAGE;
	return status;
}

/* Blocked before the /metrics server's thread starts: it inherits the
 * mask, so that the signals wait for the signalfd. */
static int block_signals(struct audit *a, char *err, size_t errlen)
{
	sigset_t mask;

	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, &a->run.old_mask);
	if ((a->run.signal_fd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK)) < 0)
		return say(err, errlen, "signalfd: %s", strerror(errno));
	return 0;
}

/* --record-creators: a root's files are recorded too.  One that cannot be
 * opened again is said, and its files have no records (never reclaimed
 * by them). */
static void record_root(struct audit *a, int slot)
{
	const struct audit_root *r = &a->root_table.roots[slot];
	char esc[SG_ESCAPED_MAX];
	int ret;

	if (a->run.recorder && (ret = audit_recorder_add_root(a->run.recorder, r->path, r->kdev, r->dir_ino)) < 0)
		fprintf(stderr, "shmguard audit: the creators of %s are not recorded: %s\n",
			sg_text_escape(r->shown, esc, sizeof(esc)), strerror(-ret));
}

/* A root followed: its abort directory watched, and, found late, its
 * files caught up. */
static void root_found(struct audit *a, int slot, bool late)
{
	audit_attribution_forget_root(&a->attribution, slot);
	audit_events_learn_patterns(a, slot, a->root_table.roots[slot].pid);
	audit_markers_watch_root(a, slot);
	if (late)
		audit_events_catch_up(a, slot);
	record_root(a, slot);
}

/* A root forgotten: its abort directory, its own patterns and its
 * recording let go. */
static void root_forgetting(struct audit *a, int slot)
{
	const struct audit_root *r = &a->root_table.roots[slot];

	audit_markers_unwatch_root(a, slot);
	audit_attribution_forget_root(&a->attribution, slot);
	if (a->run.recorder)
		audit_recorder_remove_root(a->run.recorder, r->kdev, r->dir_ino);
}

struct audit *audit_new(const struct audit_opts *o, char *err, size_t errlen)
{
	struct audit *a = calloc(1, sizeof(*a));

	if (!a) {
		say(err, errlen, "out of memory");
		return NULL;
	}
	*a = (struct audit){
		.o = o,
		.root_table.root_hooks = {root_found, audit_markers_watch_root, root_forgetting},
		.abort_set = {.aborts_tail = &a->abort_set.aborts, .abort_dfd = -1, .abort_wd = -1},
		.run = {.cmd_status = -1, .child = -1, .markers_fd = -1, .signal_fd = -1, .json_fd = -1, .junit_fd = -1,
			.plot_fd = -1},
	};
	if (resolve_roots(a, err, errlen) < 0 ||
	    open_reports(a, err, errlen) < 0 ||
	    block_signals(a, err, errlen) < 0)
		goto fail;
	if (o->reports.listen_addr) {
		char why[256];
		if (!(a->run.metrics_server = metrics_serve(o->reports.listen_addr, why, sizeof(why)))) {
			say(err, errlen, "--listen: %s", why);
			goto fail;
		}
	}
	audit_workloads_init(&a->workloads, o->workloads.pod_logs, o->workloads.container_logs, o->workloads.expiry,
			     o->workloads.series_max);
	if (!(a->files = audit_files_new(o->max_files)) || !(a->review = audit_review_new()) ||
	    ((o->reports.metrics_path || o->reports.listen_addr || o->reports.plot_path) && !(a->live = audit_live_new()))) {
		say(err, errlen, "out of memory");
		goto fail;
	}
	a->attribution.patterns = &o->patterns;
	a->attribution.abort_dirs = !o->root_abort_given;
	a->attribution.files = a->files;
	return a;
fail:
	audit_free(a);
	return NULL;
}

/* The tracer's events: the table's, and the creator recorder's. */
static void on_event(void *ctx, const struct audit_event *e)
{
	struct audit *a = ctx;

	audit_on_event(a, e);
	if (a->run.recorder)
		audit_recorder_event(a->run.recorder, e);
}

/* The first pid namespace's inode (the kernel's PROC_PID_INIT_INO). */
#define INIT_PIDNS_INO 0xEFFFFFFCu

/* Whether the processes the run must see are there to be seen.  The kernel
 * side numbers them as the auditor's pid namespace does; /proc must be
 * that namespace's own (nsenter -p without -m keeps another's: its pids
 * are not the ones the kernel side sends), and a run of the whole system
 * must be in the first namespace, the only one that sees every process
 * (the creators and holders of the files it measures). */
static int check_pidns(struct audit *a, char *err, size_t errlen)
{
	char self[32];
	ssize_t n = readlink("/proc/self", self, sizeof(self) - 1);
	struct stat st;

	if (n > 0)
		self[n] = '\0';
	if (n <= 0 || strtol(self, NULL, 10) != (long)getpid())
		return say(err, errlen,
			   "/proc is not this pid namespace's own (this process is %d here, %s in /proc): the "
			   "processes in /proc are not the ones the kernel side numbers; mount the namespace's "
			   "/proc (nsenter -m -p, unshare --pid --fork --mount-proc)",
			   (int)getpid(), n > 0 ? self : "unknown");
	if (stat("/proc/self/ns/pid", &st) < 0)
		return say(err, errlen, "cannot read this process's pid namespace (/proc/self/ns/pid): %s",
			   strerror(errno));
	if (!a->o->cmd && st.st_ino != INIT_PIDNS_INO)
		return say(err, errlen,
			   "this auditor runs in a pid namespace of its own, and the whole system's files are "
			   "made and held by processes it cannot see; run it in the host's pid namespace "
			   "(docker run --pid=host, hostPID: true), or audit one command: shmguard audit -- "
			   "COMMAND");
	return 0;
}

/* Node mode holds a directory per root (and its abort directory), and a
 * scan one more per mount while it runs: 500 pods take more than the
 * usual soft limit of 1024. */
static void raise_fd_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

static int start_tracer(struct audit *a, char *err, size_t errlen)
{
	struct audit_trace_opts t = {.follow_tree = a->o->cmd != NULL, .shim = a->o->trace.shim, .probe = a->o->trace.probe,
				     .ring_kib = a->o->trace.ring_kib, .verbose = a->o->trace.verbose, .on_event = on_event,
				     .ctx = a, .discover = a->o->node_mode, .freed = true,
				     .attachers = a->o->reclaim.record_creators};
	struct audit_trace_root *roots;
	char why[512];

	if (check_pidns(a, why, sizeof(why)) < 0)
		return say(err, errlen, "tracing is not possible: %s", why);
	/* The mounts of every namespace as the run begins, followed from the
	 * start; then as they come and go (audit_roots.c). */
	if (a->o->reclaim.record_creators && !(a->run.recorder = audit_recorder_new(true, why, sizeof(why))))
		return say(err, errlen, "--record-creators: %s", why);
	if (a->o->node_mode) {
		raise_fd_limit();
		audit_roots_scan(a);
	}
	for (unsigned i = 0; a->run.recorder && i < a->root_table.nroots; i++)
		if (a->root_table.roots[i].in_use)
			record_root(a, (int)i);
	if (!(roots = calloc(a->root_table.nroots ? a->root_table.nroots : 1, sizeof(*roots))))
		return say(err, errlen, "out of memory");
	for (unsigned i = 0; i < a->root_table.nroots; i++)
		if (a->root_table.roots[i].in_use)
			roots[t.nroots++] = (struct audit_trace_root){a->root_table.roots[i].kdev, a->root_table.roots[i].dir_ino};
	t.roots = roots;
	a->run.tracer = audit_trace_start(&t, why, sizeof(why));
	free(roots);
	if (!a->run.tracer)
		return say(err, errlen, "tracing is not possible: %s", why);
	a->run.probe = audit_trace_probe(a->run.tracer);
	a->run.freed_probe = audit_trace_freed_probe(a->run.tracer, &a->run.freed_why);
	if (!audit_trace_has_usdt(a->run.tracer))
		fprintf(stderr, "shmguard audit: the shim's tags are not followed (%s); requests come from the "
				"patterns and from tags already written on files\n",
			a->o->trace.shim ? "its USDT probe did not attach" : "libshmguard.so not found");
	return 0;
}

/* COMMAND, started but held until it is traced, then let go. */
static int start_command(struct audit *a, char *err, size_t errlen)
{
	char **cmd = a->o->cmd;
	int p[2], e;

	if (pipe2(p, O_CLOEXEC) < 0)
		return say(err, errlen, "cannot start %s: %s", cmd[0], strerror(errno));
	a->run.child = fork();
	if (a->run.child == 0) {
		char c;
		close(p[1]);
		sigprocmask(SIG_SETMASK, &a->run.old_mask, NULL);
		if (read(p[0], &c, 1) != 1)
			_exit(127);
		execvp(cmd[0], cmd);
		fprintf(stderr, "shmguard audit: cannot run %s: %s\n", cmd[0], strerror(errno));
		_exit(errno == ENOENT ? 127 : 126);
	}
	e = a->run.child < 0 ? errno : 0;
	close(p[0]);
	if (!e && (e = -audit_trace_follow(a->run.tracer, a->run.child)) == 0 && write(p[1], "g", 1) != 1)
		e = errno;
	if (e) {
		say(err, errlen, "cannot start %s: %s", cmd[0], strerror(e));
		close(p[1]);
		return -1;
	}
	close(p[1]);
	return 0;
}

int audit_run(struct audit *a, char *err, size_t errlen)
{
	/* The abort directory is checked before tracing starts: a refusal is
	 * said at once. */
	struct timespec now;

	clock_gettime(CLOCK_REALTIME, &now);
	a->start_unix_ns = (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
	if ((a->run.markers_fd = audit_markers_open(a, err, errlen)) < 0) {
		a->run.markers_fd = -1;
		return AUDIT_USAGE;
	}
	if (start_tracer(a, err, errlen) < 0)
		return AUDIT_NO_TRACING;
	a->start_ns = audit_clock_ns(a);
	audit_roots_clock_started(a);
	/* The first figures: /metrics answers from now on, and a metrics file
	 * that cannot be written is found before COMMAND starts. */
	if (audit_live_flush(a, 0) < 0) {
		char shown[SG_ESCAPED_MAX];
		say(err, errlen, "cannot write the metrics to %s: %s", sg_text_escape(a->o->reports.metrics_path, shown, sizeof(shown)),
		    audit_live_why(a));
		return AUDIT_USAGE;
	}
	/* Said once it answers, never before a refusal; :0 is given a port:
	 * say which. */
	if (a->run.metrics_server)
		fprintf(stderr, "shmguard audit: serving metrics on http://%s/metrics\n",
			metrics_address(a->run.metrics_server));
	if (a->o->cmd && start_command(a, err, errlen) < 0)
		return AUDIT_USAGE;
	const struct audit_reclaim_opts ro = {.interval = a->o->reclaim.interval,
					      .extra = &a->o->roots,
					      .scope = !a->o->node_mode ? AUDIT_RECLAIM_OWN_NAMESPACE
						       : a->o->reclaim.node_shm ? AUDIT_RECLAIM_PODS_AND_NODE
						       : AUDIT_RECLAIM_PODS,
					      .ignore_unreadable = a->o->reclaim.ignore_unreadable,
					      .dry_run = a->o->reclaim.dry_run};

	if (a->o->reclaim.interval && !(a->run.reclaim = audit_reclaim_start(&ro, err, errlen)))
		return AUDIT_USAGE;
	int ret = audit_loop_run(a);
	audit_reclaim_finish(a->run.reclaim); /* the report's totals are final */
	char why[512];
	if (a->run.recorder && audit_recorder_finish(a->run.recorder, why, sizeof(why)) < 0 && ret == 0)
		return say(err, errlen, "the creators' records could not be written: %s", why);
	if (ret < 0)
		return say(err, errlen, "the run stopped early: %s", strerror(-ret));
	return 0;
}

void audit_free(struct audit *a)
{
	if (!a)
		return;
	if (a->run.child > 0 && a->run.cmd_status < 0) {
		kill(a->run.child, SIGKILL);
		waitpid(a->run.child, NULL, 0);
	}
	if (a->run.signal_fd >= 0)
		close(a->run.signal_fd);
	close_reports(a, false);
	audit_trace_stop(a->run.tracer);
	metrics_stop(a->run.metrics_server);
	audit_reclaim_free(a->run.reclaim);
	audit_recorder_free(a->run.recorder);
	audit_files_free(a->files);
	audit_review_free(a->review);
	audit_markers_unwatch_roots(a); /* before the inotify fd */
	audit_roots_free(a);
	if (a->run.markers_fd >= 0)
		close(a->run.markers_fd);
	audit_aborts_free(a);
	audit_tags_free(a);
	audit_early_free(&a->pending.early);
	audit_live_free(a->live);
	audit_workloads_free(&a->workloads);
	audit_attribution_free(&a->attribution);
	free(a);
}
