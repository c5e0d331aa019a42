#include "procstat.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int sg_proc_start_ticks(pid_t pid, uint64_t *ticks)
{
	char path[32], buf[1024];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0) {
		errno = n < 0 ? errno : EIO;
		return -1;
	}
	buf[n] = '\0';

	/* comm (field 2) may hold spaces and parentheses: fields resume after the last ')'. */
	char *p = strrchr(buf, ')');
	if (!p) {
		errno = EIO;
		return -1;
	}
	p++;
	/* Field 3 starts after ") "; field 22 is 19 fields further on. */
	for (int field = 2; field < 22; field++) {
		p = strchr(p, ' ');
		if (!p) {
			errno = EIO;
			return -1;
		}
		p++;
	}
	char *end;
	errno = 0;
	unsigned long long v = strtoull(p, &end, 10);
	if (end == p || errno) {
		errno = EIO;
		return -1;
	}
	*ticks = v;
	return 0;
}
