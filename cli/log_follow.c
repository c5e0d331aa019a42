#include "log_follow.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "clock.h"

/* Passes the complete lines in the buffer, those in its bytes from `from`
 * on being new. */
static void split(struct log_source *s, size_t from, log_line_fn *line, void *ctx)
{
	size_t start = 0;
	char *nl;

	while ((nl = memchr(s->buf + from, '\n', s->len - from))) {
		size_t end = (size_t)(nl - s->buf);

		if (s->skipping)
			s->skipping = false;
		else
			line(s->buf + start, end - start, ctx);
		start = from = end + 1;
	}
	memmove(s->buf, s->buf + start, s->len - start);
	s->len -= start;
}

/* An unfinished line whose end will never be read: dropped, counted. */
static void drop_partial(struct log_follow *f, struct log_source *s)
{
	f->dropped += s->len && !s->skipping;
	s->len = 0;
	s->skipping = false;
}

/* One read into the buffer: the bytes read, 0 at the end, -1 on an error
 * (EAGAIN and EINTR included). */
static ssize_t read_some(struct log_follow *f, struct log_source *s, log_line_fn *line, void *ctx)
{
	ssize_t n;

	if (s->len == LOG_LINE_MAX) { /* no newline in a whole buffer */
		f->overlong += !s->skipping;
		s->skipping = true;
		s->len = 0;
	}
	n = read(s->fd, s->buf + s->len, LOG_LINE_MAX - s->len);
	if (n > 0) {
		size_t from = s->len;

		s->len += (size_t)n;
		s->off += n;
		split(s, from, line, ctx);
	}
	return n;
}

/* Reads s to its end: 0, or -1 with err set. */
static int drain(struct log_follow *f, struct log_source *s, log_line_fn *line, void *ctx,
		 volatile sig_atomic_t *stop, char *err, size_t errlen)
{
	ssize_t n;

	while (!*stop && (n = read_some(f, s, line, ctx)) != 0)
		if (n < 0 && errno != EINTR && errno != EAGAIN) {
			snprintf(err, errlen, "cannot read %s: %s", f->path, strerror(errno));
			return -1;
		}
	return 0;
}

/* What st is, for a message. */
static const char *file_kind(const struct stat *st)
{
	return S_ISFIFO(st->st_mode)  ? "a FIFO"
	       : S_ISDIR(st->st_mode) ? "a directory"
	       : S_ISSOCK(st->st_mode) ? "a socket"
	       : S_ISCHR(st->st_mode) || S_ISBLK(st->st_mode) ? "a device"
							      : "not a regular file";
}

/* Opens the file into cur if it is there: 1 opened, 0 not there (or not a
 * regular file, said once until one is there), -1 error.  The name may be
 * a symbolic link (logs often are), but only a regular file is opened for
 * reading: the name is opened O_PATH first, which opens nothing (no FIFO
 * waited on, no device's driver run, as root), and that very file is
 * reopened through /proc once it is checked. */
static int try_open(struct log_follow *f, char *err, size_t errlen)
{
	struct log_source *s = &f->cur;
	char proc_path[64];
	struct stat st;
	int path_fd = open(f->path, O_PATH | O_CLOEXEC), saved;

	if (path_fd < 0) {
		if (errno == ENOENT)
			return 0;
		snprintf(err, errlen, "cannot open %s: %s", f->path, strerror(errno));
		return -1;
	}
	st.st_mode = 0;
	if (fstat(path_fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		if (!f->said_not_regular)
			cli_warn("abort", "%s is %s, which is not read: waiting for a regular file there (a pipe is "
					  "read as stdin: '-')",
				 f->path, file_kind(&st));
		f->said_not_regular = true;
		close(path_fd);
		return 0;
	}
	snprintf(proc_path, sizeof(proc_path), "/proc/self/fd/%d", path_fd);
	s->fd = open(proc_path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	/* Without /proc: by name again, checked after to be the same file (a
	 * swap in between is caught, though the file swapped in was opened). */
	if (s->fd < 0 && errno == ENOENT) {
		struct stat now;

		s->fd = open(f->path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
		if (s->fd >= 0 && (fstat(s->fd, &now) < 0 || now.st_dev != st.st_dev || now.st_ino != st.st_ino)) {
			close(s->fd);
			s->fd = -1;
			errno = ESTALE;
		}
	}
	saved = errno;
	close(path_fd);
	if (s->fd < 0) {
		if (saved == ESTALE || saved == ENOENT)
			return 0; /* replaced meanwhile: looked at again */
		snprintf(err, errlen, "cannot open %s: %s", f->path, strerror(saved));
		return -1;
	}
	f->said_not_regular = false;
	s->dev = st.st_dev;
	s->ino = st.st_ino;
	s->off = 0;
	s->len = 0;
	s->skipping = false;
	if (!f->started && !f->from_start)
		s->off = lseek(s->fd, 0, SEEK_END);
	return 1;
}

int log_follow_open(struct log_follow *f, const char *path, bool from_start, char *err, size_t errlen)
{
	char dir[PATH_MAX];

	*f = (struct log_follow){.wake = -1, .from_start = from_start, .cur.fd = -1, .old.fd = -1};
	f->cur.buf = malloc(LOG_LINE_MAX);
	if (!f->cur.buf) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (!path || strcmp(path, "-") == 0) {
		f->cur.fd = STDIN_FILENO;
		return 0;
	}
	f->path = path;
	/* Appends, creations and renames in the directory wake the reader;
	 * without inotify (or the directory) it polls.  Watched before the
	 * file is opened, so that nothing written from then on is missed. */
	snprintf(dir, sizeof(dir), "%s", path);
	f->wake = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (f->wake >= 0 && inotify_add_watch(f->wake, dirname(dir),
					      IN_MODIFY | IN_CREATE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE |
						      IN_CLOSE_WRITE | IN_ATTRIB) < 0) {
		close(f->wake);
		f->wake = -1;
	}
	/* What the file holds now is history (unless from_start); if it does
	 * not exist yet, all it will hold is new. */
	if (try_open(f, err, errlen) < 0)
		return -1;
	f->started = true;
	return 0;
}

int log_follow_pollfd(const struct log_follow *f)
{
	return f->path ? f->wake : f->cur.fd;
}

static void close_old(struct log_follow *f)
{
	if (f->old.fd < 0)
		return;
	drop_partial(f, &f->old);
	close(f->old.fd);
	f->old.fd = -1;
}

void log_follow_close(struct log_follow *f)
{
	close_old(f);
	if (f->path && f->cur.fd >= 0)
		close(f->cur.fd);
	if (f->wake >= 0)
		close(f->wake);
	free(f->cur.buf);
	free(f->old.buf);
	f->cur.buf = f->old.buf = NULL;
}

/* The file was replaced: the one read so far becomes old, read on for the
 * grace (a writer that has not reopened yet still appends to it). */
static int rotate(struct log_follow *f, char *err, size_t errlen)
{
	char *spare;

	close_old(f);
	if (!f->old.buf && !(f->old.buf = malloc(LOG_LINE_MAX))) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	spare = f->old.buf;
	f->old = f->cur;
	f->old_until_ns = sg_monotonic_ns() + LOG_ROTATED_GRACE_S * 1000000000ull;
	f->cur = (struct log_source){.fd = -1, .buf = spare};
	return 0;
}

static int read_stdin(struct log_follow *f, log_line_fn *line, void *ctx, char *err, size_t errlen)
{
	ssize_t n = read_some(f, &f->cur, line, ctx);

	if (n == 0) {
		/* The writer is done: its last line is whole, newline or not. */
		if (f->cur.len && !f->cur.skipping)
			line(f->cur.buf, f->cur.len, ctx);
		return 1;
	}
	if (n < 0 && errno != EAGAIN && errno != EINTR) {
		snprintf(err, errlen, "cannot read stdin: %s", strerror(errno));
		return -1;
	}
	return 0;
}

int log_follow_read(struct log_follow *f, log_line_fn *line, void *ctx, volatile sig_atomic_t *stop, char *err,
		    size_t errlen)
{
	char events[4096];
	struct stat st;

	if (!f->path)
		return read_stdin(f, line, ctx, err, errlen);
	if (f->wake >= 0)
		while (read(f->wake, events, sizeof(events)) > 0)
			; /* any event only means: look */
	if (f->old.fd >= 0) {
		if (drain(f, &f->old, line, ctx, stop, err, errlen) < 0)
			return -1;
		if (sg_monotonic_ns() >= f->old_until_ns)
			close_old(f);
	}
	for (;;) {
		if (f->cur.fd < 0) {
			int r = try_open(f, err, errlen);
			if (r <= 0)
				return r;
		}
		if (drain(f, &f->cur, line, ctx, stop, err, errlen) < 0)
			return -1;
		if (*stop)
			return 0;
		/* Truncated in place (copytruncate): from its start again. */
		if (fstat(f->cur.fd, &st) == 0 && st.st_size < f->cur.off) {
			drop_partial(f, &f->cur);
			f->cur.off = lseek(f->cur.fd, 0, SEEK_SET);
			continue;
		}
		/* Renamed away and nothing new yet, or still the same file. */
		if (stat(f->path, &st) < 0 || (st.st_dev == f->cur.dev && st.st_ino == f->cur.ino))
			return 0;
		if (rotate(f, err, errlen) < 0)
			return -1;
	}
}
