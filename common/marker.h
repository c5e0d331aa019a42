/* Rules for abort markers, shared by the shim (which obeys them) and
 * `shmguard abort` (which writes them). */
#ifndef SHMGUARD_MARKER_H
#define SHMGUARD_MARKER_H

#include <stdbool.h>
#include <sys/stat.h>

/* A directory anyone may write into without the sticky bit lets anyone
 * rename or delete markers: it is not trusted. */
static inline bool sg_abort_dir_unsafe(const struct stat *dir)
{
	return (dir->st_mode & S_IWOTH) && !(dir->st_mode & S_ISVTX);
}

/* Anyone can write into /dev/shm: a marker counts only if it is a regular
 * file (never a symlink: stat it with AT_SYMLINK_NOFOLLOW) made by euid or
 * by root. */
static inline bool sg_marker_owner_ok(const struct stat *st, uid_t euid)
{
	return S_ISREG(st->st_mode) && (st->st_uid == euid || st->st_uid == 0);
}

/* Removes the acceptable markers in dir last modified more than ttl seconds
 * ago.  Returns how many were removed. */
unsigned sg_markers_expire(const char *dir, unsigned ttl);

#endif
