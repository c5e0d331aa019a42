/* Files the command writes, often as root, at paths others choose or in
 * directories others can write (a CI checkout, /tmp, a textfile
 * collector's directory): the reports, the metrics file, markers.
 *
 * A file is never written through a name that already exists.  The target's
 * directory is opened once (O_DIRECTORY|O_NOFOLLOW); a new file with a random
 * name is made in it (O_CREAT|O_EXCL|O_NOFOLLOW), written, and renamed over
 * the target, so a symbolic link planted there is replaced, not followed,
 * and a file another user made there does not stay hers.  A target that
 * exists and is not a regular file (a symbolic link, FIFO, directory) is
 * refused with a reason.
 *
 * Errors, as everywhere in host/: a negative errno; and, since the errno
 * alone cannot say what the user needs to hear, a one-line reason in err
 * (SG_OUTFILE_ERR_MAX bytes) where the function takes one.
 *
 * Errors: a negative errno (docs/architecture.md, "Reporting a failure"). */
#ifndef SHMGUARD_OUTFILE_H
#define SHMGUARD_OUTFILE_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define SG_OUTFILE_ERR_MAX 256

struct sg_outfile {
	int fd;     /* write here; 1 when the path was "-" */
	int dirfd;  /* the target's directory; -1 for stdout */
	char name[NAME_MAX + 1]; /* the target, in dirfd */
	char tmp[NAME_MAX + 1];  /* the new file, in dirfd, until committed */
	bool to_stdout;
	bool owns_dir; /* dirfd was opened by sg_outfile_open */
};

/* Flags of sg_outfile_open. */
enum {
	SG_OUTFILE_STDOUT = 1, /* "-" means standard output */
	SG_OUTFILE_FSYNC = 2,  /* fsync the file before it replaces the target */
};

/* Starts writing path (created with mode): f->fd is an empty new file.
 * 0, or a negative errno with the reason in err (-EEXIST: the target is
 * no regular file; -ELOOP: its directory is a symbolic link). */
int sg_outfile_open(struct sg_outfile *f, const char *path, mode_t mode, int flags, char *err, size_t errlen);
/* A new file in dirfd named stem and 64 random bits in hex (name, len),
 * made with O_EXCL|O_NOFOLLOW and retried while a name is taken: no name
 * another user can guess and take first.  The fd, or a negative errno
 * (-EEXIST: every name tried was taken). */
int sg_open_new_random(int dirfd, const char *stem, char *name, size_t len, mode_t mode);

/* The same for name in the directory dirfd, which the caller opened and
 * checked (it stays the caller's); name holds no '/'. */
int sg_outfile_open_at(struct sg_outfile *f, int dirfd, const char *name, mode_t mode, int flags, char *err,
		       size_t errlen);
/* The written file replaces the target (fsync'd first with
 * SG_OUTFILE_FSYNC).  Closes f either way.  0, or a negative errno with
 * the reason. */
int sg_outfile_commit(struct sg_outfile *f, int flags, char *err, size_t errlen);
/* Drops what was written: the new file is removed, the target untouched. */
void sg_outfile_discard(struct sg_outfile *f);

/* path replaced by len bytes of data at once (open, write, commit): 0, or
 * a negative errno with the reason. */
int sg_outfile_replace(const char *path, const void *data, size_t len, mode_t mode, int flags, char *err,
		       size_t errlen);

/* A file another program made for us to add to (GitHub's step summary):
 * opened O_APPEND|O_NOFOLLOW, and only if it is a regular file with one
 * link; made (O_EXCL) if it does not exist.  The fd, or a negative errno
 * with the reason (-ELOOP: a symbolic link; -EEXIST: not a regular file, or
 * other links). */
int sg_outfile_append(const char *path, char *err, size_t errlen);

#endif
