#include "core.h"
#include "maps.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DELETED " (deleted)"

/* A number in base, then the character that must end it. */
static bool field(const char **p, int base, char end, unsigned long long *v)
{
	char *after;

	*v = strtoull(*p, &after, base);
	if (after == *p || *after != end)
		return false;
	*p = after + 1;
	return true;
}

size_t sg_proc_path_len(const char *shown, size_t len, bool *deleted)
{
	const size_t n = sizeof(DELETED) - 1;

	*deleted = len > n && memcmp(shown + len - n, DELETED, n) == 0;
	return *deleted ? len - n : len;
}

bool sg_map_parse(const char *line, struct sg_map *m)
{
	unsigned long long start, end, offset, major, minor, ino;
	const char *p = line, *perms_end;
	char *after;

	if (!field(&p, 16, '-', &start) || !field(&p, 16, ' ', &end) || !(perms_end = strchr(p, ' ')))
		return false;
	p = perms_end + 1;
	if (!field(&p, 16, ' ', &offset) || !field(&p, 16, ':', &major) || !field(&p, 16, ' ', &minor))
		return false;
	/* The inode is last when there is no path. */
	ino = strtoull(p, &after, 10);
	if (after == p || (*after != ' ' && *after != '\0'))
		return false;
	p = after + strspn(after, " ");
	*m = (struct sg_map){start, end, offset, (unsigned)major, (unsigned)minor, ino, p, 0, false};
	m->path_len = sg_proc_path_len(p, strlen(p), &m->deleted);
	return true;
}

size_t sg_maps_read(int fd, char *buf, size_t size, bool (*fn)(const struct sg_map *m, void *ctx), void *ctx)
{
	size_t have = 0, lines = 0;
	bool skipping = false; /* inside a line longer than the buffer */
	bool more = true;
	ssize_t got;

	while (more && (got = read(fd, buf + have, size - 1 - have)) > 0) {
		char *line = buf, *nl;

		have += (size_t)got;
		buf[have] = '\0';
		while (more && (nl = memchr(line, '\n', have - (size_t)(line - buf)))) {
			struct sg_map m;

			*nl = '\0';
			if (!skipping) {
				lines++;
				if (sg_map_parse(line, &m))
					more = fn(&m, ctx);
			}
			skipping = false;
			line = nl + 1;
		}
		have -= (size_t)(line - buf);
		memmove(buf, line, have);
		if (have == size - 1) {
			/* Its start has the fields, but with its path cut short,
			 * and the rest must not pass for a line of its own. */
			if (!skipping)
				lines++;
			skipping = true;
			have = 0;
		}
	}
	return lines;
}
