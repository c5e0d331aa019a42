/* A variable of another process's environment (proc_env.h). */
#include "proc_env.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Where the scan of the entries stands. */
enum entry_state {
	NAME,  /* matching the entry's first bytes against "name=" */
	VALUE, /* copying the value of the entry that matched */
	SKIP,  /* another variable: up to its NUL */
};

/* The environment is read in pieces, never held whole: a value is copied
 * as its entry is scanned, and entries end with a NUL.  The last entry
 * read may be cut short by the bound: only a whole entry counts. */
int sg_proc_env_get(pid_t pid, const char *name, char *out, size_t outlen)
{
	size_t namelen = strlen(name), matched = 0, vlen = 0, total = 0;
	enum entry_state state = NAME;
	char path[64], buf[4096];
	ssize_t n;
	int fd, ret = -ENOENT;

	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) < 0)
		return -errno;
	while (total < SG_PROC_ENV_READ_MAX &&
	       (n = read(fd, buf, sizeof(buf) < SG_PROC_ENV_READ_MAX - total ? sizeof(buf) : SG_PROC_ENV_READ_MAX - total)) > 0) {
		total += (size_t)n;
		for (ssize_t i = 0; i < n; i++) {
			char c = buf[i];

			if (state == VALUE && c == '\0') {
				out[vlen] = '\0';
				ret = (int)vlen;
				goto cleanup;
			} else if (state == VALUE) {
				if (vlen + 1 >= outlen) {
					ret = -E2BIG;
					goto cleanup;
				}
				out[vlen++] = c;
			} else if (c == '\0') { /* the next entry */
				state = NAME;
				matched = 0;
			} else if (state == NAME && matched == namelen && c == '=') {
				state = VALUE;
			} else if (state == NAME && matched < namelen && c == name[matched]) {
				matched++;
			} else {
				state = SKIP;
			}
		}
	}
	if (n < 0)
		ret = -errno;
cleanup:
	close(fd);
	return ret;
}
