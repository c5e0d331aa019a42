#include "locks.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LOCK_PREFIX "shm_"
#define LOCK_SUFFIX "_lockfile.lock"

/* One line: "1: FLOCK  ADVISORY  WRITE 1234 00:2b:5678 0 EOF"; a waiter
 * ("1: -> FLOCK ...") holds nothing.  The device is MAJOR:MINOR in hex
 * (%02x:%02x), the inode in decimal.  Returns 1 for a held lock, 0 for a
 * line that holds none, -EIO for one that cannot be read. */
static int parse_line(char *line, struct sg_lock *out)
{
	char *save = NULL, *tok, *prev = NULL;
	unsigned fields = 0;

	for (tok = strtok_r(line, " \t\n", &save); tok; prev = tok, tok = strtok_r(NULL, " \t\n", &save)) {
		unsigned major, minor;
		unsigned long long ino;
		int used = 0;
		char *end;

		if (++fields == 2 && strcmp(tok, "->") == 0)
			return 0;
		if (sscanf(tok, "%x:%x:%llu%n", &major, &minor, &ino, &used) != 3 || tok[used] || !prev)
			continue;
		long pid = strtol(prev, &end, 10);
		if (*end || major >= 1u << 12 || minor >= 1u << 20)
			return -EIO;
		*out = (struct sg_lock){.kdev = major << 20 | minor, .ino = ino, .pid = (int32_t)pid};
		return 1;
	}
	return -EIO;
}

static int by_file(const void *x, const void *y)
{
	const struct sg_lock *a = x, *b = y;

	if (a->kdev != b->kdev)
		return (a->kdev > b->kdev) - (a->kdev < b->kdev);
	return (a->ino > b->ino) - (a->ino < b->ino);
}

int sg_locks_scan(struct sg_locks *ls, const char *path)
{
	size_t cap = 0, total = 0, len = 0;
	char *line = NULL;
	ssize_t n;
	int ret = 0;
	FILE *f;

	*ls = (struct sg_locks){0};
	if (!(f = fopen(path ? path : "/proc/locks", "re"))) {
		ret = -errno;
		goto cleanup;
	}
	while ((n = getline(&line, &len, f)) > 0) {
		struct sg_lock k;
		int r;

		if ((total += (size_t)n) > SG_LOCKS_MAX_BYTES) {
			ret = -EFBIG;
			goto cleanup;
		}
		if ((r = parse_line(line, &k)) < 0) {
			ret = r;
			goto cleanup;
		}
		if (!r)
			continue;
		if (ls->n == cap) {
			size_t nc = cap ? cap * 2 : 64;
			struct sg_lock *v = realloc(ls->l, nc * sizeof(*v));
			if (!v) {
				ret = -ENOMEM;
				goto cleanup;
			}
			ls->l = v;
			cap = nc;
		}
		ls->l[ls->n++] = k;
	}
	if (ferror(f))
		ret = -EIO;
	else if (ls->n)
		qsort(ls->l, ls->n, sizeof(*ls->l), by_file);
cleanup:
	if (f)
		fclose(f);
	free(line);
	if (ret < 0) {
		sg_locks_free(ls);
		ls->unknown = true;
	}
	return ret;
}

const struct sg_lock *sg_locks_find(const struct sg_locks *ls, uint32_t kdev, uint64_t ino)
{
	const struct sg_lock key = {.kdev = kdev, .ino = ino};

	return ls->n ? bsearch(&key, ls->l, ls->n, sizeof(*ls->l), by_file) : NULL;
}

void sg_locks_free(struct sg_locks *ls)
{
	free(ls->l);
	*ls = (struct sg_locks){0};
}

int sg_lock_file_of(const char *name, char *buf, size_t len)
{
	int n = snprintf(buf, len, LOCK_PREFIX "%s" LOCK_SUFFIX, name);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int sg_lock_file_segment(const char *name, char *buf, size_t len)
{
	size_t n = strlen(name), p = strlen(LOCK_PREFIX), s = strlen(LOCK_SUFFIX);

	if (n <= p + s || strncmp(name, LOCK_PREFIX, p) != 0 || strcmp(name + n - s, LOCK_SUFFIX) != 0)
		return -EINVAL;
	if (n - p - s >= len)
		return -ENAMETOOLONG;
	memcpy(buf, name + p, n - p - s);
	buf[n - p - s] = '\0';
	return 0;
}
