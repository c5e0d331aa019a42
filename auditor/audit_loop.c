/* The auditor's event loop: events from the kernel side, abort markers and
 * signals on one epoll, the review in slices between them, a progress line
 * on stderr. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "audit.h"
#include "audit_trace.h"

/* The kernel side wakes the reader only when its buffer fills up: poll it
 * this often (the 8 MiB buffer holds well over a second of events). */
#define POLL_S 0.02

enum { FD_EVENTS, FD_MARKERS, FD_SIGNALS };

static void progress(struct audit *a, bool tty, double *next)
{
	double now = audit_now_s(a), kib = 0;
	unsigned measured = 0;
	char line[160];

	if ((!tty && a->o->interval <= 0) || now < *next)
		return;
	for (const struct audit_abort *ab = a->aborts; ab != a->unmeasured; ab = ab->next) {
		measured++;
		kib += ab->leaked_bytes / 1024.0;
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

/* Milliseconds until something is due: the review (a cycle, an abort to
 * measure), a progress line, the end of --duration, the next look at the
 * event buffer. */
static int next_timeout(const struct audit *a, double next_progress, bool show)
{
	double review = audit_review_due_s(a), now = audit_now_s(a), due = now + POLL_S;

	if (review < due)
		due = review;
	if (show && next_progress < due)
		due = next_progress;
	if (a->o->duration && a->o->duration < due)
		due = a->o->duration;
	return due <= now ? 0 : (int)((due - now) * 1000) + 1;
}

/* The signals that arrived.  COMMAND decides what the first SIGINT, SIGTERM
 * or SIGHUP means, and its end ends the run; one that ignores it is killed
 * at the second, and the run ends without waiting for it. */
static int on_signals(struct audit *a, int sfd, pid_t child, unsigned *interrupts, bool *running)
{
	struct signalfd_siginfo si;
	ssize_t n;
	int status;

	while ((n = read(sfd, &si, sizeof(si))) == sizeof(si)) {
		if (si.ssi_signo == SIGCHLD) {
			if (child > 0 && waitpid(child, &status, WNOHANG) == child) {
				a->cmd_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
				*running = false;
			}
		} else if (child <= 0) {
			*running = false;
		} else if ((*interrupts)++ == 0) {
			kill(child, (int)si.ssi_signo);
		} else if (a->cmd_status < 0) {
			kill(child, SIGKILL);
			a->interrupted = true;
			*running = false;
		}
	}
	return n < 0 && errno != EAGAIN ? -1 : 0;
}

/* New markers, then the events that may still add their files to the
 * table (audit_files_exclude). */
static int read_markers(struct audit *a, struct audit_tracer *t, int markers)
{
	int ret = audit_markers_read(a, markers);

	if (ret == 0)
		ret = audit_trace_consume(t);
	audit_files_end_exclusions(a->files);
	return ret;
}

static int watch(int ep, int fd, uint32_t what)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.u32 = what};

	return epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
}

/* Turns until the run ends; -1 with errno when a descriptor fails. */
static int turns(struct audit *a, struct audit_tracer *t, int ep, int markers, int sfd, pid_t child)
{
	bool tty = isatty(STDERR_FILENO), show = tty || a->o->interval > 0;
	double next_progress = 0;
	unsigned interrupts = 0;

	for (bool running = true; running;) {
		struct epoll_event got[3];
		int n = epoll_wait(ep, got, 3, next_timeout(a, next_progress, show));

		if (n < 0 && errno != EINTR)
			return -1;
		for (int i = 0; i < n; i++) {
			int ret = 0;

			switch (got[i].data.u32) {
			case FD_EVENTS:
				ret = audit_trace_consume(t);
				break;
			case FD_MARKERS:
				ret = read_markers(a, t, markers);
				break;
			case FD_SIGNALS:
				ret = on_signals(a, sfd, child, &interrupts, &running);
				break;
			}
			if (ret < 0)
				return -1;
		}
		if (a->o->duration && audit_now_s(a) >= a->o->duration)
			running = false;
		if (audit_trace_consume(t) < 0) /* the review needs every event so far */
			return -1;
		audit_review_step(a);
		audit_live_update(a, audit_trace_dropped(t));
		if (show)
			progress(a, tty, &next_progress);
	}
	if (tty)
		fprintf(stderr, "\r\033[K");
	return 0;
}

int audit_loop_run(struct audit *a, struct audit_tracer *t, int markers, int sfd, pid_t child)
{
	int ep = epoll_create1(EPOLL_CLOEXEC), ret = -1, saved;

	if (ep < 0)
		return -1;
	if (watch(ep, audit_trace_fd(t), FD_EVENTS) == 0 && watch(ep, markers, FD_MARKERS) == 0 &&
	    watch(ep, sfd, FD_SIGNALS) == 0)
		ret = turns(a, t, ep, markers, sfd, child);
	saved = errno;
	/* What is still queued belongs to the run; aborts not yet due are
	 * measured now (a run that ends sooner measures at its end). */
	if (read_markers(a, t, markers) < 0) {
		saved = errno;
		ret = -1;
	}
	a->end_s = audit_now_s(a);
	a->dropped = audit_trace_dropped(t);
	audit_review_finish(a);
	if (audit_live_flush(a, a->dropped) < 0)
		fprintf(stderr, "shmguard audit: cannot write the metrics at the end: %s\n", strerror(errno));
	close(ep);
	errno = saved;
	return ret;
}
