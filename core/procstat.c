#include "core.h"
#include "procstat.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sys.h"

/* The numeric field after p (which points at a field's start); moves p to
 * the next field.  -EIO on a malformed line. */
static int number(char **p, unsigned long long *v)
{
	char *end;

	errno = 0;
	*v = strtoull(*p, &end, 10);
	if (end == *p || errno || (*end != ' ' && *end != '\n' && *end))
		return -EIO;
	*p = *end ? end + 1 : end;
	return 0;
}

/* Reads and parses the stat file at (at, path). */
static int stat_file(int at, const char *path, struct sg_proc_stat *ps)
{
	char buf[1024];
	unsigned long long v;
	ssize_t n;
	int fd, r;

	fd = sg_sys_openat(at, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	/* A process gone between the open and the read: ESRCH. */
	r = n < 0 ? (errno == ESRCH ? -ENOENT : -errno) : -EIO;
	sg_sys_close(fd);
	if (n <= 0)
		return r;
	buf[n] = '\0';

	/* comm (field 2) may hold spaces and parentheses: fields resume after the last ')'. */
	char *p = strrchr(buf, ')');
	if (!p || p[1] != ' ' || !p[2])
		return -EIO;
	ps->state = p[2];
	p += 2;
	/* From field 3, the state, to field 22, skipping all but 20. */
	for (int field = 3; field < 22; field++) {
		if (field == 20) {
			if ((r = number(&p, &v)) < 0)
				return r;
			ps->threads = (unsigned)v;
			continue;
		}
		p = strchr(p, ' ');
		if (!p)
			return -EIO;
		p++;
	}
	if ((r = number(&p, &v)) < 0)
		return r;
	ps->start_ticks = v;
	return 0;
}

int sg_proc_stat(pid_t pid, struct sg_proc_stat *ps)
{
	char path[32];

	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	else
		strcpy(path, "/proc/self/stat");
	return stat_file(AT_FDCWD, path, ps);
}

int sg_proc_stat_at(int piddir, struct sg_proc_stat *ps)
{
	return stat_file(piddir, "stat", ps);
}

bool sg_proc_exited(const struct sg_proc_stat *ps)
{
	return (ps->state == 'Z' || ps->state == 'X') && ps->threads <= 1;
}

int sg_proc_start_ticks(pid_t pid, uint64_t *ticks)
{
	struct sg_proc_stat ps;
	int r = sg_proc_stat(pid, &ps);

	if (r < 0)
		return r;
	*ticks = ps.start_ticks;
	return 0;
}

bool sg_proc_is_own(void)
{
	char buf[32], *end;
	ssize_t n = readlink("/proc/self", buf, sizeof(buf) - 1);
	long pid;

	if (n <= 0)
		return false;
	buf[n] = '\0';
	pid = strtol(buf, &end, 10);
	return *end == '\0' && pid == (long)getpid();
}
