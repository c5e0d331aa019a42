#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "real.h"
#include "state.h"
#include "text.h"

enum sg_log_level sg_log_level = SG_LOG_WARN;

/* Set on a thread whose descriptor table is its own (the marker watcher):
 * its fd 2 is not the program's. */
static SG_THREAD_LOCAL bool own_table;
static int self_pidfd = -1;

void sg_log_from_own_table(int pidfd)
{
	self_pidfd = pidfd;
	own_table = true;
}

/* The program's stderr as it is now: a copy of its fd 2 taken through the
 * pidfd (the same open file, as write(2) would use), else reopened through
 * /proc (a pipe, terminal or file, not a socket). */
static int program_stderr(void)
{
	int fd = self_pidfd >= 0 ? (int)syscall(SYS_pidfd_getfd, self_pidfd, STDERR_FILENO, 0U) : -1;

	if (fd < 0)
		fd = sg_real.open("/proc/self/fd/2", O_WRONLY | O_APPEND | O_NOCTTY | O_CLOEXEC);
	return fd;
}

/* Every message is escaped whole (sg_text_escape): the names it holds (of
 * markers, files, requests) come from other users and from clients, and must
 * not start a line of their own in the host's log, nor drive a terminal. */
static void vlog(enum sg_log_level level, const char *fmt, va_list ap)
{
	static const char *names[] = {"", "warning: ", "", "debug: "};
	char raw[1024], buf[2048];
	int saved = errno;
	int n = snprintf(buf, sizeof(buf), "shmguard: [%d] %s", (int)getpid(), names[level]);

	/* One write(2) per message, no stdio, no allocation: safe from any
	 * thread, and lines from several processes do not interleave mid-line. */
	vsnprintf(raw, sizeof(raw), fmt, ap);
	sg_text_escape(raw, buf + n, sizeof(buf) - (size_t)n - 1);
	n += (int)strlen(buf + n);
	buf[n++] = '\n';
	if (own_table) {
		int fd = program_stderr();

		if (fd >= 0) {
			(void)!write(fd, buf, (size_t)n);
			sg_real.close(fd);
		}
	} else {
		(void)!write(STDERR_FILENO, buf, (size_t)n);
	}
	errno = saved;
}

void sg_log_write(enum sg_log_level level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(level, fmt, ap);
	va_end(ap);
}

void sg_log_once(bool *once, enum sg_log_level level, const char *fmt, ...)
{
	va_list ap;

	if (level > sg_log_level || __atomic_exchange_n(once, true, __ATOMIC_RELAXED))
		return;
	va_start(ap, fmt);
	vlog(level, fmt, ap);
	va_end(ap);
}
