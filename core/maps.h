/* The parser of /proc/PID/maps that the shim (its own mappings) and the
 * holders reader (every process's) share.  It allocates nothing: the caller
 * gives the buffer, so that the shim can read with a static one.
 *
 * Errors: nothing here can fail (core/ reports a failure as a negative errno). */
#ifndef SHMGUARD_MAPS_H
#define SHMGUARD_MAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One line: "start-end perms offset major:minor inode [path]". */
struct sg_map {
	uint64_t start, end, offset;
	unsigned major, minor;
	uint64_t ino;       /* 0: no file (anonymous, heap, stack) */
	const char *path;   /* what the kernel shows, as shown ("" if nothing) */
	size_t path_len;    /* its length, without a trailing " (deleted)" */
	bool deleted;       /* the path ended in " (deleted)": the file is unlinked */
};

/* The length of a path that /proc shows (in maps, or as an fd's link) of
 * len bytes, without the " (deleted)" that ends it when the file is
 * unlinked (*deleted then says so). */
size_t sg_proc_path_len(const char *shown, size_t len, bool *deleted);

/* Parses line (one line, without its newline, NUL-terminated); m->path
 * points into it.  False if it is not a maps line. */
bool sg_map_parse(const char *line, struct sg_map *m);

/* Reads fd to its end and calls fn for each line that parses, until fn
 * returns false.  buf (of size bytes) holds the lines while they are read:
 * a line that does not fit (with its NUL) is passed over whole, never taken
 * for two.  Returns the number of lines read, parsed or not. */
size_t sg_maps_read(int fd, char *buf, size_t size, bool (*fn)(const struct sg_map *m, void *ctx), void *ctx);

#endif
