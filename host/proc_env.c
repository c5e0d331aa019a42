/* A variable of another process's environment (proc_env.h). */
#include "proc_env.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Up to SG_PROC_ENV_READ_MAX bytes of pid's environ into a buffer of that
 * size: the bytes read, or a negative errno. */
static ssize_t read_environ(pid_t pid, char *buf)
{
	char path[64];
	size_t got = 0;
	ssize_t n = 0;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) < 0)
		return -errno;
	while (got < SG_PROC_ENV_READ_MAX && (n = read(fd, buf + got, SG_PROC_ENV_READ_MAX - got)) > 0)
		got += (size_t)n;
	if (n < 0)
		n = -errno;
	close(fd);
	return n < 0 ? n : (ssize_t)got;
}

int sg_proc_env_get(pid_t pid, const char *name, char *out, size_t outlen)
{
	size_t namelen = strlen(name);
	char *buf = malloc(SG_PROC_ENV_READ_MAX);
	ssize_t len;
	int ret = -ENOENT;

	if (!buf)
		return -ENOMEM;
	if ((len = read_environ(pid, buf)) < 0) {
		ret = (int)len;
		goto cleanup;
	}
	/* Entries end with a NUL; the last one read may be cut short by the
	 * bound: only whole entries count. */
	for (size_t at = 0; at < (size_t)len;) {
		const char *end = memchr(buf + at, '\0', (size_t)len - at);
		size_t entry;

		if (!end)
			break;
		entry = (size_t)(end - (buf + at));
		if (entry > namelen && memcmp(buf + at, name, namelen) == 0 && buf[at + namelen] == '=') {
			size_t vlen = entry - namelen - 1;
			if (vlen >= outlen) {
				ret = -E2BIG;
				goto cleanup;
			}
			memcpy(out, buf + at + namelen + 1, vlen);
			out[vlen] = '\0';
			ret = (int)vlen;
			goto cleanup;
		}
		at += entry + 1;
	}
cleanup:
	free(buf);
	return ret;
}
