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

/* Opens the file if it exists: 1 opened, 0 not there, -1 error. */
static int try_open(struct log_follow *f, char *err, size_t errlen)
{
	struct stat st;

	f->fd = open(f->path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (f->fd < 0) {
		if (errno == ENOENT)
			return 0;
		snprintf(err, errlen, "cannot open %s: %s", f->path, strerror(errno));
		return -1;
	}
	if (fstat(f->fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s is not a regular file (a pipe is read as stdin: '-')", f->path);
		close(f->fd);
		f->fd = -1;
		return -1;
	}
	f->dev = st.st_dev;
	f->ino = st.st_ino;
	f->off = 0;
	if (!f->started && !f->from_start)
		f->off = lseek(f->fd, 0, SEEK_END);
	return 1;
}

int log_follow_open(struct log_follow *f, const char *path, bool from_start, char *err, size_t errlen)
{
	*f = (struct log_follow){.fd = -1, .wake = -1, .from_start = from_start};
	f->buf = malloc(LOG_LINE_MAX);
	if (!f->buf) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (!path || strcmp(path, "-") == 0) {
		f->fd = STDIN_FILENO;
		return 0;
	}
	f->path = path;
	/* Appends, creations and renames in the directory wake the reader;
	 * without inotify (or the directory) it polls.  Watched first, so
	 * that nothing written from now on is missed. */
	char dir[PATH_MAX];
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
	return f->path ? f->wake : f->fd;
}

void log_follow_close(struct log_follow *f)
{
	if (f->path && f->fd >= 0)
		close(f->fd);
	if (f->wake >= 0)
		close(f->wake);
	free(f->buf);
	f->buf = NULL;
}

static void emit(log_line_fn *line, void *ctx, const char *s, size_t len)
{
	if (len && s[len - 1] == '\r')
		len--;
	line(s, len, ctx);
}

/* Passes the complete lines among the buffer's bytes from `from` on. */
static void split(struct log_follow *f, size_t from, log_line_fn *line, void *ctx)
{
	size_t start = 0;
	char *nl;

	while ((nl = memchr(f->buf + from, '\n', f->len - from))) {
		size_t end = (size_t)(nl - f->buf);

		if (f->skipping)
			f->skipping = false;
		else
			emit(line, ctx, f->buf + start, end - start);
		start = from = end + 1;
	}
	memmove(f->buf, f->buf + start, f->len - start);
	f->len -= start;
}

/* The last line of a file that will not grow any more. */
static void flush_partial(struct log_follow *f, log_line_fn *line, void *ctx)
{
	if (f->len && !f->skipping)
		emit(line, ctx, f->buf, f->len);
	f->len = 0;
	f->skipping = false;
}

/* One read into the buffer: the bytes read, 0 at the end, -1 on an error
 * (EAGAIN and EINTR included). */
static ssize_t read_some(struct log_follow *f, log_line_fn *line, void *ctx)
{
	ssize_t n;

	if (f->len == LOG_LINE_MAX) { /* no newline in a whole buffer */
		f->overlong += !f->skipping;
		f->skipping = true;
		f->len = 0;
	}
	n = read(f->fd, f->buf + f->len, LOG_LINE_MAX - f->len);
	if (n > 0) {
		size_t from = f->len;

		f->len += (size_t)n;
		f->off += n;
		split(f, from, line, ctx);
	}
	return n;
}

static int read_stdin(struct log_follow *f, log_line_fn *line, void *ctx, char *err, size_t errlen)
{
	ssize_t n = read_some(f, line, ctx);

	if (n == 0) {
		flush_partial(f, line, ctx);
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
	ssize_t n;

	if (!f->path)
		return read_stdin(f, line, ctx, err, errlen);
	if (f->wake >= 0)
		while (read(f->wake, events, sizeof(events)) > 0)
			; /* any event only means: look */
	for (;;) {
		if (f->fd < 0) {
			int r = try_open(f, err, errlen);
			if (r <= 0)
				return r;
		}
		while (!*stop && (n = read_some(f, line, ctx)) != 0) {
			if (n < 0 && errno != EINTR && errno != EAGAIN) {
				snprintf(err, errlen, "cannot read %s: %s", f->path, strerror(errno));
				return -1;
			}
		}
		if (*stop)
			return 0;
		/* Truncated in place (copytruncate): from its start again. */
		if (fstat(f->fd, &st) == 0 && st.st_size < f->off) {
			flush_partial(f, line, ctx);
			f->off = lseek(f->fd, 0, SEEK_SET);
			continue;
		}
		/* Renamed away and nothing new yet, or still the same file. */
		if (stat(f->path, &st) < 0 || (st.st_dev == f->dev && st.st_ino == f->ino))
			return 0;
		/* Replaced (rotated): the old file was read to its end above. */
		flush_partial(f, line, ctx);
		close(f->fd);
		f->fd = -1;
	}
}
