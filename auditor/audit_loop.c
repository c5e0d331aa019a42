/* The auditor's event loop: events from the kernel side, abort markers and
 * signals on one epoll, the review in slices between them, a progress line
 * on stderr. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "audit_engine.h"
#include "audit_recorder.h"
#include "audit_trace.h"
#include "text.h"
#include "size.h"

/* The kernel side wakes the reader only when its buffer fills up: poll it
 * this often, far less time than the buffer takes to fill (the burst
 * figures: docs/performance.md). */
#define POLL_S 0.02

enum { FD_EVENTS, FD_MARKERS, FD_SIGNALS };

static void progress(struct audit *a, bool tty, double *next)
{
	double now = audit_now_s(a), kib = a->abort_set.leaked_measured / 1024.0;
	unsigned measured = (unsigned)a->abort_set.aborts_measured;
	char line[160], tracked[16];
	struct winsize ws;

	if ((!tty && a->o->interval <= 0) || now < *next)
		return;
	snprintf(line, sizeof(line), "[%6.1f s] aborts %u (measured %u)   %.1f KiB/abort so far   tracked %s in %llu %s",
		 now, a->abort_set.naborts, measured, measured ? kib / measured : 0.0,
		 sg_human_bytes(a->reviewed.tracked, tracked, sizeof(tracked)), (unsigned long long)a->reviewed.files_left,
		 a->reviewed.files_left == 1 ? "file" : "files");
	/* A line that wraps would scroll with every redraw: cut it to the
	 * terminal's width (it is ASCII: a byte a column), leaving the last
	 * column free. */
	if (tty && ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 1 && strlen(line) >= ws.ws_col)
		line[ws.ws_col - 1] = '\0';
	if (tty)
		fprintf(stderr, "\r%s\033[K", line);
	else
		fprintf(stderr, "%s\n", line);
	*next = now + (tty ? 0.5 : a->o->interval);
}

/* Milliseconds until something is due: the review (a cycle, an abort to
 * measure), a progress line, the end of --duration, the next look at the
 * event buffer. */
static int next_timeout(const struct audit *a, double next_progress, bool show)
{
	double review = audit_review_due_s(a), now = audit_now_s(a), due = now + POLL_S;

	if (review < due)
		due = review;
	if (audit_roots_due_s(a) < due)
		due = audit_roots_due_s(a);
	if (show && next_progress < due)
		due = next_progress;
	if (a->o->duration && a->o->duration < due)
		due = a->o->duration;
	return due <= now ? 0 : (int)((due - now) * 1000) + 1;
}

/* Whether pid ignores sig (SIG_IGN), from /proc/PID/status's SigIgn. */
static bool ignores(pid_t pid, int sig)
{
	char path[32], buf[4096], *at;
	int fd;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	if (!(at = strstr(buf, "\nSigIgn:")))
		return false;
	return (strtoull(at + 8, NULL, 16) >> (sig - 1)) & 1;
}

static void record_status(struct audit *a, int status)
{
	a->run.cmd_ended = true;
	a->run.cmd_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	a->run.cmd_signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
}

/* How long a killed COMMAND is waited for: SIGKILL ends it at once unless
 * it is stuck in the kernel, and the run does not wait on that. */
#define REAP_WAIT_MS 1000

/* COMMAND, killed: its status (128 + 9) and signal for the report. */
static void reap_killed(struct audit *a, pid_t child)
{
	int status;

	for (int waited = 0; waited < REAP_WAIT_MS; waited += 10) {
		if (waitpid(child, &status, WNOHANG) == child) {
			record_status(a, status);
			return;
		}
		usleep(10 * 1000);
	}
}

/* The signals that arrived.  COMMAND decides what the first SIGINT, SIGTERM
 * or SIGHUP means, and its end ends the run; one that ignores it is killed
 * at the second, and the run ends without waiting for it. */
static int on_signals(struct audit *a, unsigned *interrupts, bool *running)
{
	pid_t child = a->run.child;
	struct signalfd_siginfo si;
	ssize_t n;
	int status;

	while ((n = read(a->run.signal_fd, &si, sizeof(si))) == sizeof(si)) {
		if (si.ssi_signo == SIGCHLD) {
			if (child > 0 && waitpid(child, &status, WNOHANG) == child) {
				record_status(a, status);
				*running = false;
			}
		} else if (child <= 0) {
			*running = false;
		} else if ((*interrupts)++ == 0) {
			kill(child, (int)si.ssi_signo);
			/* Said once: the user who pressed Ctrl-C sees why nothing ends. */
			if (ignores(child, (int)si.ssi_signo))
				fprintf(stderr, "%sshmguard audit: COMMAND ignores SIG%s; a second one (Ctrl-C again) kills it "
						"and ends the run\n",
					isatty(STDERR_FILENO) ? "\r\033[K" : "", sigabbrev_np((int)si.ssi_signo));
		} else if (a->run.cmd_status < 0) {
			kill(child, SIGKILL);
			a->run.interrupted = true;
			*running = false;
			reap_killed(a, child);
		}
	}
	return n < 0 && errno != EAGAIN ? -errno : 0;
}

/* New markers, then the events that may still add their files to the
 * table (audit_files_exclude). */
static int read_markers(struct audit *a)
{
	int ret = audit_markers_read(a, a->run.markers_fd);

	if (ret == 0)
		ret = audit_trace_consume(a->run.tracer);
	audit_files_end_exclusions(a->files);
	return ret;
}

/* --record-creators: the names looked for, the records written when due. */
static int record(struct audit *a)
{
	char why[512], esc[SG_ESCAPED_MAX];
	const char *warning;
	int ret;

	if (!a->run.recorder)
		return 0;
	if ((ret = audit_recorder_tick(a->run.recorder, why, sizeof(why))) < 0) {
		fprintf(stderr, "shmguard audit: --record-creators: %s\n", sg_text_escape(why, esc, sizeof(esc)));
		return ret;
	}
	if ((warning = audit_recorder_warning(a->run.recorder)))
		fprintf(stderr, "shmguard audit: --record-creators: %s: files created from now on may have no "
				"record, and are never reclaimed by them\n", warning);
	return 0;
}

static int watch(int ep, int fd, uint32_t what)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.u32 = what};

	return epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
}

/* Turns until the run ends; a negative errno when a descriptor fails. */
static int turns(struct audit *a, int ep)
{
	struct audit_tracer *t = a->run.tracer;
	bool tty = isatty(STDERR_FILENO), show = tty || a->o->interval > 0;
	double next_progress = 0;
	unsigned interrupts = 0;

	for (bool running = true; running;) {
		struct epoll_event got[3];
		int n = epoll_wait(ep, got, 3, next_timeout(a, next_progress, show));

		if (n < 0 && errno != EINTR)
			return -errno;
		for (int i = 0; i < n; i++) {
			int ret = 0;

			switch (got[i].data.u32) {
			case FD_EVENTS:
				ret = audit_trace_consume(t);
				break;
			case FD_MARKERS:
				ret = read_markers(a);
				break;
			case FD_SIGNALS:
				ret = on_signals(a, &interrupts, &running);
				break;
			}
			if (ret < 0)
				return ret;
		}
		if (a->o->duration && audit_now_s(a) >= a->o->duration)
			running = false;
		if (a->run.recorder)
			audit_recorder_drain_begins(a->run.recorder);
		int ret = audit_trace_consume(t); /* the review needs every event so far */
		if (ret < 0 || (ret = record(a)) < 0)
			return ret;
		if (audit_now_s(a) >= audit_roots_due_s(a)) {
			audit_roots_scan(a);
			audit_tags_expire(a);
			audit_early_expire(&a->pending.early, audit_now_s(a));
		}
		audit_review_step(a);
		audit_live_update(a, audit_trace_dropped(t));
		if (show)
			progress(a, tty, &next_progress);
	}
	if (tty)
		fprintf(stderr, "\r\033[K");
	return 0;
}

int audit_loop_run(struct audit *a)
{
	struct audit_tracer *t = a->run.tracer;
	int ep = epoll_create1(EPOLL_CLOEXEC), ret, end;

	if (ep < 0)
		return -errno;
	if (watch(ep, audit_trace_fd(t), FD_EVENTS) == 0 && watch(ep, a->run.markers_fd, FD_MARKERS) == 0 &&
	    watch(ep, a->run.signal_fd, FD_SIGNALS) == 0)
		ret = turns(a, ep);
	else
		ret = -errno;
	/* What is still queued belongs to the run; aborts not yet due are
	 * measured now (a run that ends sooner measures at its end). */
	if ((end = read_markers(a)) < 0)
		ret = end;
	a->end_s = audit_now_s(a);
	audit_roots_scan_before_end(a);
	a->run.dropped = audit_trace_dropped(t);
	a->run.frees_unsent = audit_trace_frees_unsent(t);
	audit_review_finish(a);
	if (audit_live_flush(a, a->run.dropped) < 0)
		fprintf(stderr, "shmguard audit: cannot write the metrics at the end: %s\n", audit_live_why(a));
	close(ep);
	return ret;
}
