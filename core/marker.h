/* Rules for abort markers and their directory, shared by the shim (which
 * obeys them) and `shmguard abort` (which writes them).  The directory may be
 * any directory a user names, in a place other local users can write to:
 * everything here works from one checked directory descriptor.
 *
 * Errors: a negative errno (docs/architecture.md, "Reporting a failure"). */
#ifndef SHMGUARD_MARKER_H
#define SHMGUARD_MARKER_H

#include <stdbool.h>
#include <sys/stat.h>

/* Left in a directory shmguard created as an abort directory.  Only there are
 * old markers removed: any other directory may hold files that are not
 * markers.  Never itself a marker. */
#define SG_ABORT_DIR_STAMP ".shmguard-abort-dir"

/* Whether a directory (fstat of its descriptor) can be trusted with
 * markers by euid: 0, or -EACCES with *why saying why not.  Its owner could
 * rename or plant markers, and so could anyone in a directory writable by
 * all without the sticky bit. */
int sg_abort_dir_check(const struct stat *dir, uid_t euid, const char **why);

/* What to do about a refusal, for the message that reports it. */
const char *sg_abort_dir_remedy(const struct stat *dir, uid_t euid);

/* Opens path as an abort directory, O_CLOEXEC, never through a symbolic
 * link.  With create, a missing directory is made (one level, mode 0755)
 * and stamped.  Returns the descriptor, or a negative errno (-ELOOP when
 * path is a symbolic link). */
int sg_abort_dir_open(const char *path, bool create);

/* Whether the abort directory dfd carries shmguard's stamp (a file that
 * passes sg_marker_file_check: no hard link to another file): shmguard
 * made it. */
bool sg_abort_dir_stamped(int dfd, uid_t euid);

/* Opens path as an abort directory (sg_abort_dir_open) and checks it for
 * euid (sg_abort_dir_check): the one check `shmguard abort`, --follow and
 * the auditor make before they use a directory.  Returns the descriptor; or
 * a negative errno with *why NULL (it cannot be opened), or -EACCES with
 * *why set (it is refused; *dir says what it is, for sg_abort_dir_remedy). */
int sg_abort_dir_open_trusted(const char *path, bool create, uid_t euid, struct stat *dir, const char **why);

/* The marker rule, the one the shim, `shmguard abort`, --follow and the
 * auditor apply.  Anyone can write into /dev/shm: a file counts as a marker
 * for processes of euid only if it is a regular file (never a symlink: st
 * from AT_SYMLINK_NOFOLLOW), owned by euid or root, with one link (a hard
 * link in a directory others can write to may name any file of root's).
 * 0 when st is one; otherwise -EACCES with *why saying why not. */
int sg_marker_file_check(const struct stat *st, uid_t euid, const char **why);

/* The whole rule for the entry name of the abort directory dfd: a request
 * ID (not the stamp), in a directory that passes sg_abort_dir_check, and a
 * file that passes sg_marker_file_check.  0 when it is a marker; otherwise
 * a negative errno with *why saying why not: -EINVAL (not a request ID),
 * -EACCES (a refused directory or file), -ENOENT (gone already), or the
 * directory's fstat's.  *st is the entry's, or all zero when the entry
 * itself was not examined (every case but a refused file). */
int sg_marker_check(int dfd, const char *name, uid_t euid, struct stat *st, const char **why);

/* Removes the acceptable markers in the abort directory dfd last modified
 * more than ttl seconds ago, and nothing else: only in a directory that is
 * trusted and carries shmguard's stamp.  Returns how many were removed. */
unsigned sg_markers_expire(int dfd, unsigned ttl);

#endif
