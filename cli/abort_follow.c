#include "abort_follow.h"

#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "abort_match.h"
#include "cli.h"
#include "clock.h"
#include "cri_log.h"
#include "log_follow.h"
#include "log_record.h"
#include "marker.h"
#include "reqid.h"
#include "text.h"

/* How long the follower sleeps at most without news: without inotify this
 * is its latency, and it looks for a rotated file at least this often. */
#define POLL_MS 200
/* Faults said one by one before they are only counted. */
#define MAX_REPORTED 10

struct follow {
	struct abort_match *match;
	struct cri_log cri;
	bool is_cri;
	struct log_records records;
	const char *dir;
	int dfd;
	int (*open_dir)(const char *dir);
	int (*write_marker)(int dfd, const char *dir, const char *id);
	unsigned long long lines, matched, ids, written, invalid, failed, gave_up, ambiguous;
};

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

/* The marker, in the directory made again if it was removed meanwhile (a
 * marker written into a removed directory would reach no shim). */
static int write_marker(struct follow *s, const char *id)
{
	struct stat st;
	int fd;

	if (fstat(s->dfd, &st) == 0 && st.st_nlink == 0 && (fd = s->open_dir(s->dir)) >= 0) {
		close(s->dfd);
		s->dfd = fd;
	}
	return s->write_marker(s->dfd, s->dir, id);
}

/* A byte that moves a terminal or starts a line: no server names a request
 * with one, and a record's lines joined (an ID holding "\r\n") have some. */
static bool has_control(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return true;
	return false;
}

static void on_id(const char *id, size_t len, bool ambiguous, void *ctx)
{
	struct follow *s = ctx;
	char shown[256]; /* the escaped ID, cut to fit: what it is is said anyway */
	const char *why;

	if (ambiguous) {
		char text[256];

		snprintf(text, sizeof(text), "%.*s", (int)(len < 255 ? len : 255), id);
		if (s->ambiguous++ < MAX_REPORTED)
			cli_warn("abort", "not marked: '%s' may be one request ID or several (a client may choose an ID "
					  "holding the separator)%s",
				 sg_text_escape(text, shown, sizeof(shown)),
				 s->ambiguous == MAX_REPORTED ? " (more are only counted)" : "");
		return;
	}
	sg_reqid_check(id, &why);

	/* The rules plain `shmguard abort` applies, a NUL byte, which no
	 * argument can hold, and any other control byte. */
	if (memchr(id, '\0', len))
		why = "it contains a NUL byte";
	else if (!why && strcmp(id, SG_ABORT_DIR_STAMP) == 0)
		why = "the name of the abort directory's stamp";
	else if (!why && has_control(id, len))
		why = "it contains a control byte (a record of several lines?)";

	s->ids++;
	if (why) {
		if (s->invalid++ < MAX_REPORTED)
			cli_warn("abort", "skipped request ID '%s': %s%s", sg_text_escape(id, shown, sizeof(shown)), why,
				 s->invalid == MAX_REPORTED ? " (more are only counted)" : "");
		return;
	}
	if (write_marker(s, id) != EXIT_OK)
		s->failed++; /* said by write_marker */
	else
		s->written++;
}

/* A record of the server's log. */
static void on_record(const char *line, size_t len, void *ctx)
{
	struct follow *s = ctx;
	int n = abort_match_line(s->match, line, len, on_id, s);

	s->lines++;
	if (n > 0)
		s->matched++;
	else if (n < 0 && s->gave_up++ < MAX_REPORTED)
		cli_warn("abort", "the regex gave up on a line of %zu bytes (too much backtracking)", len);
}

/* A whole line the container wrote to one of its streams. */
static void on_cri_line(const char *line, size_t len, enum log_stream st, void *ctx)
{
	struct follow *s = ctx;

	log_records_line(&s->records, st, line, len, on_record, s);
}

/* A line of the file: the application's own, or a CRI log's record of
 * (a part of) one. */
static void on_file_line(const char *line, size_t len, void *ctx)
{
	struct follow *s = ctx;

	if (s->is_cri)
		cri_log_line(&s->cri, line, len, on_cri_line, s);
	else
		log_records_line(&s->records, LOG_STDOUT, line, len, on_record, s);
}

int abort_follow(const struct abort_follow_opts *o, const char *dir, unsigned ttl, int (*open_dir)(const char *dir),
		 int (*write_marker)(int dfd, const char *dir, const char *id))
{
	struct follow s = {.dir = dir, .dfd = -1, .open_dir = open_dir, .write_marker = write_marker, .is_cri = o->cri};
	struct sigaction sa = {.sa_handler = on_signal}; /* no SA_RESTART: a read on stdin ends */
	struct log_follow f = {.wake = -1, .cur.fd = -1, .old.fd = -1};
	const char *name = !o->file || strcmp(o->file, "-") == 0 ? "stdin" : o->file;
	char err[256];
	int status = EXIT_OK, r = 0;
	int announced = 0;
	uint64_t next_expiry_ns = 0;

	cri_log_init(&s.cri, LOG_LINE_MAX);
	s.match = abort_match_new(o->match, o->preset, o->id_template, err, sizeof(err));
	if (!s.match)
		return cli_fail(EXIT_USAGE, "abort", "%s", err);
	log_records_init(&s.records, LOG_LINE_MAX, abort_match_joins_crlf(s.match));
	if (log_follow_open(&f, o->file, o->from_start, err, sizeof(err)) < 0) {
		status = cli_fail(EXIT_FAIL, "abort", "%s", err);
		goto cleanup;
	}
	s.dfd = open_dir(dir);
	if (s.dfd < 0) {
		status = EXIT_FAIL;
		goto cleanup;
	}
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	for (bool readable = false;;) {
		/* Markers past the TTL go, as the shims' own expiry does. */
		if (sg_monotonic_ns() >= next_expiry_ns) {
			sg_markers_expire(s.dfd, ttl);
			next_expiry_ns = sg_monotonic_ns() + (ttl < 120 ? ttl / 2 : 60) * 1000000000ull;
		}
		/* stdin is read only when poll says so: a read would block. */
		if (f.path || readable)
			r = log_follow_read(&f, on_file_line, &s, &stop, err, sizeof(err));
		if (r < 0)
			status = cli_fail(EXIT_FAIL, "abort", "%s", err);
		if (r || stop)
			break; /* a read error, the end of stdin, or a signal */
		/* Said when following starts (scripts wait for it), and when a
		 * file that was not there appears. */
		if (announced < 2 && (announced == 0 || log_follow_has_file(&f))) {
			fprintf(stderr, log_follow_has_file(&f) ? "shmguard abort: following %s\n"
								 : "shmguard abort: waiting for %s to appear\n",
				name);
			announced = log_follow_has_file(&f) ? 2 : 1;
		}
		struct pollfd p = {.fd = log_follow_pollfd(&f), .events = POLLIN};
		readable = poll(&p, p.fd >= 0, POLL_MS) > 0;
	}
	fprintf(stderr,
		"shmguard abort: %s: %llu lines, %llu matched, %llu markers written, %llu invalid IDs skipped, "
		"%llu markers not written, %llu lines over %d bytes skipped, %llu unfinished lines dropped, "
		"%llu lines the regex gave up on, %llu ambiguous lists not marked\n",
		name, s.lines, s.matched, s.written, s.invalid, s.failed, f.overlong, LOG_LINE_MAX, f.dropped, s.gave_up,
		s.ambiguous);
	if (s.is_cri)
		fprintf(stderr,
			"shmguard abort: %s: %llu lines not in the CRI format dropped, %llu joined lines over %d bytes "
			"dropped\n",
			name, s.cri.malformed, s.cri.overlong, LOG_LINE_MAX);
	if (s.records.join_cr)
		fprintf(stderr, "shmguard abort: %s: %llu records of several lines over %d bytes dropped\n", name,
			s.records.overlong, LOG_LINE_MAX);
	if (s.failed)
		status = EXIT_FAIL;
cleanup:
	log_follow_close(&f);
	if (s.dfd >= 0)
		close(s.dfd);
	abort_match_free(s.match);
	cri_log_free(&s.cri);
	log_records_free(&s.records);
	return status;
}
