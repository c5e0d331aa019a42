/* shmguard watch: the creator recorder alone on the tracer (no
 * measurement), for a host that runs no node agent. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "audit_recorder.h"
#include "creator_store.h"
#include "holders.h"
#include "procstat.h"
#include "text.h"

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void on_event(void *ctx, const struct audit_event *e)
{
	audit_recorder_event(ctx, e);
}

static int say(char *err, size_t errlen, int ret, const char *fmt, const char *what)
{
	snprintf(err, errlen, fmt, what);
	return ret;
}

/* The roots' devices and directories, each recorded. */
static int add_roots(struct audit_recorder *rec, const struct sg_roots *roots, struct audit_trace_root *tr,
		     char *err, size_t errlen)
{
	for (unsigned i = 0; i < roots->n; i++) {
		struct stat st;
		int ret;

		if (stat(roots->dir[i], &st) < 0)
			return say(err, errlen, -errno, "cannot open %s", roots->dir[i]);
		tr[i] = (struct audit_trace_root){sg_kdev(st.st_dev), st.st_ino};
		if ((ret = audit_recorder_add_root(rec, roots->dir[i], tr[i].kdev, tr[i].dir_ino)) < 0)
			return say(err, errlen, ret, "cannot open %s", roots->dir[i]);
	}
	return 0;
}

int audit_watch_run(const struct audit_watch_opts *o, char *err, size_t errlen)
{
	struct audit_trace_opts t = {.probe = o->probe, .attachers = o->attachers, .on_event = on_event};
	struct audit_trace_root roots[SG_MAX_ROOTS];
	struct sigaction sa = {.sa_handler = on_signal};
	struct audit_recorder *rec = NULL;
	struct audit_tracer *tracer = NULL;
	uint64_t dropped = 0;
	char why[512], esc[SG_ESCAPED_MAX];
	const char *warning;
	int ret = -EINVAL;

	if (!sg_proc_is_own())
		return say(err, errlen, -EINVAL, "%s",
			   "/proc is not this pid namespace's own: the processes it shows are not the ones the kernel "
			   "side numbers; run with this namespace's /proc");
	if (!(rec = audit_recorder_new(o->attachers, err, errlen)))
		return -EINVAL;
	if ((ret = add_roots(rec, &o->roots, roots, err, errlen)) < 0)
		goto cleanup;
	t.ctx = rec;
	t.roots = roots;
	t.nroots = o->roots.n;
	if (!(tracer = audit_trace_start(&t, why, sizeof(why)))) {
		ret = say(err, errlen, -ENOTSUP, "tracing is not possible: %s", why);
		goto cleanup;
	}
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	fprintf(stderr, "shmguard watch: recording the creators of new files in %u %s (probe %s)%s%s%s into %s\n",
		SG_PLURAL(o->roots.n, "root", "roots"), audit_trace_probe(tracer),
		o->attachers ? " and who opens them (probe " : "", o->attachers ? audit_trace_attach_probe(tracer) : "",
		o->attachers ? ")" : "", sg_text_escape(sg_store_dir(), esc, sizeof(esc)));
	while (!stop) {
		struct pollfd p = {.fd = audit_trace_fd(tracer), .events = POLLIN};

		if (poll(&p, 1, 100) < 0 && errno != EINTR) {
			ret = say(err, errlen, -errno, "cannot wait for events: %s", strerror(errno));
			goto cleanup;
		}
		audit_recorder_drain_begins(rec);
		if ((ret = audit_trace_consume(tracer)) < 0 && ret != -EINTR) {
			say(err, errlen, ret, "cannot read events: %s", strerror(-ret));
			goto cleanup;
		}
		if ((ret = audit_recorder_tick(rec, err, errlen)) < 0)
			goto cleanup;
		if ((warning = audit_recorder_warning(rec)))
			fprintf(stderr, "shmguard watch: %s: files created from now on may have no record, and are "
					"never removed by sweep --dead\n", warning);
		if (audit_trace_dropped(tracer) != dropped) {
			dropped = audit_trace_dropped(tracer);
			fprintf(stderr, "shmguard watch: %llu %s lost (the event buffer was full): those files have no "
					"record, and are never removed by sweep --dead\n",
				(unsigned long long)dropped, dropped == 1 ? "event" : "events");
		}
	}
	audit_recorder_drain_begins(rec);
	ret = audit_trace_consume(tracer);
	if (ret == 0 || ret == -EINTR)
		ret = audit_recorder_finish(rec, err, errlen);
cleanup:
	if (tracer)
		audit_trace_stop(tracer);
	audit_recorder_free(rec);
	return ret;
}
