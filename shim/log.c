#include "log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

enum sg_log_level sg_log_level = SG_LOG_WARN;

static void vlog(enum sg_log_level level, const char *fmt, va_list ap)
{
	static const char *names[] = {"", "warning: ", "", "debug: "};
	char buf[1024];
	int saved = errno;
	int n = snprintf(buf, sizeof(buf), "shmguard: [%d] %s", (int)getpid(), names[level]);

	/* One write(2) per message, no stdio: safe from any thread, and lines from
	 * several processes do not interleave mid-line. */
	n += vsnprintf(buf + n, sizeof(buf) - (size_t)n - 1, fmt, ap);
	if (n > (int)sizeof(buf) - 2)
		n = (int)sizeof(buf) - 2;
	buf[n++] = '\n';
	(void)!write(STDERR_FILENO, buf, (size_t)n);
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
