/* The creator records of `shmguard watch`: for every file created in a
 * followed root, who made it as the kernel saw it.  Kept in one file of a
 * directory only root may enter (/run/shmguard/creators: a restart of watch
 * keeps them, a reboot forgets them), replaced whole on each write, read
 * by `ls` and `sweep`.  The contents were chosen in part by others (file
 * names, comm, cgroup names): every string is bounded and NUL-terminated on
 * reading, and printed escaped.
 *
 * Errors: a negative errno (docs/architecture.md, "Reporting a failure"). */
#ifndef SHMGUARD_CREATOR_STORE_H
#define SHMGUARD_CREATOR_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SG_STORE_DIR "/run/shmguard"
#define SG_STORE_FILE "creators"
/* At most this many records (about 860 bytes each): a file created past
 * it has none, and is never proven an orphan. */
#define SG_STORE_MAX 16384
#define SG_STORE_MAX_TEXT "16384"
#define SG_REC_NAME_MAX 256
#define SG_REC_CGROUP_MAX 256
/* The processes, other than its creator, that opened a file: at most this
 * many are kept; one more sets SG_REC_ATTACHERS_LOST. */
#define SG_REC_ATTACHERS 8
/* Some process that opened the file is not among its attachers (room ran
 * out, or watch could not name it): the proof that needs them all fails. */
#define SG_REC_ATTACHERS_LOST 1u
/* watch ran without following opens (--no-attachers): nobody knows who
 * opened the file, which fails that proof too. */
#define SG_REC_ATTACHERS_UNSEEN 2u
/* The processes that started the creator, its parent first, up to the
 * first process of its cgroup (or a child of the host's PID 1), as the
 * kernel saw them at creation: at most this many. */
#define SG_REC_ANCESTORS 8
#define SG_REC_ANCESTORS_TEXT "8"
/* Its ancestors up to its instance's start are not all recorded (more
 * than SG_REC_ANCESTORS, one watch could not name, or a kernel without
 * start times): the proof that needs them all fails. */
#define SG_REC_ANCESTORS_CUT 4u

/* A process a record names besides its creator: one that opened the file,
 * or an ancestor of the creator. */
struct sg_rec_process {
	uint32_t pid; /* in the record's pidns */
	uint32_t pad;
	uint64_t start_ticks;
};

struct sg_creator_rec {
	uint64_t ino;
	uint64_t birth_ns;     /* the file's birth time (statx), 0 unknown */
	uint64_t recorded_ns;  /* CLOCK_REALTIME when it was recorded */
	uint64_t cgroup_id;    /* cgroup v2 id of the creator, 0 unknown */
	uint64_t start_ticks;  /* the creator's start time (/proc/PID/stat field 22), 0 unknown */
	uint64_t pidns;        /* the pid namespace pid is numbered in (watch's own) */
	uint64_t creator_pidns; /* the pid namespace the creator runs in, 0 unknown */
	uint64_t parent_start_ticks; /* its parent's, 0 unknown */
	uint32_t kdev;
	uint32_t pid;
	uint32_t parent_pid; /* its parent when it created the file, 0 unknown */
	uint32_t flags;      /* SG_REC_* */
	uint32_t nattachers;
	uint32_t nancestors;
	struct sg_rec_process attachers[SG_REC_ATTACHERS];
	struct sg_rec_process ancestors[SG_REC_ANCESTORS];
	char comm[16];
	char name[SG_REC_NAME_MAX];      /* in its root; "" unknown */
	char cgroup[SG_REC_CGROUP_MAX];  /* path below the cgroup2 root; "" unknown or too long */
};

struct sg_creator_store {
	struct sg_creator_rec *recs; /* sorted by (kdev, ino) once indexed */
	size_t n, cap;
	/* CLOCK_REALTIME ns: every file born before it whose creation the
	 * recorder read is in recs (the file's modification time); 0 unknown. */
	uint64_t complete_ns;
};

/* A recorder holds an exclusive flock on the directory while it runs.
 * The records' directory: SHMGUARD_STORE_DIR in the environment (tests),
 * else SG_STORE_DIR. */
const char *sg_store_dir(void);

/* Opens the directory, made 0700 when make and it is missing; refused
 * unless it is a real directory (no symlink anywhere in its last
 * component) owned by root (or by this uid, for tests run by a user) that
 * nobody else may enter.  Returns an O_DIRECTORY fd, or a negative errno
 * with a reason (-EPERM: not safe to trust). */
int sg_store_open_dir(bool make, char *err, size_t errlen);

/* Reads the records (none when the file is missing).  Returns 0, or a
 * negative errno with a reason: an unsafe (-EPERM) or malformed (-EBADMSG)
 * file is refused whole. */
int sg_store_load(struct sg_creator_store *s, int dfd, char *err, size_t errlen);

/* Reads the records as a running recorder has them: when one holds the
 * directory's lock, waits (up to timeout_ms) for a write that is complete
 * up to this call, so that every file that existed when it was called and
 * whose creation the recorder read has its record (one in the kernel's
 * buffer at that moment has it at the next).  As sg_store_load, or
 * -ETIMEDOUT with a reason. */
/* How long readers wait for a running recorder (it writes every 500 ms). */
#define SG_STORE_WAIT_MS 5000
int sg_store_load_current(struct sg_creator_store *s, int dfd, unsigned timeout_ms, char *err, size_t errlen);

/* Replaces the file with the records (written beside it, then renamed),
 * marked complete up to s->complete_ns: 0, or a negative errno with a
 * reason. */
int sg_store_save(const struct sg_creator_store *s, int dfd, char *err, size_t errlen);

/* Marks the file, unchanged, complete up to complete_ns: 0, or a negative
 * errno with a reason. */
int sg_store_mark_complete(int dfd, uint64_t complete_ns, char *err, size_t errlen);

/* Adds r, replacing an older record of the same (kdev, ino); -ENOSPC when full. */
int sg_store_put(struct sg_creator_store *s, const struct sg_creator_rec *r);

/* The record of (kdev, ino) while unsorted (watch adds), or NULL. */
struct sg_creator_rec *sg_store_lookup(struct sg_creator_store *s, uint32_t kdev, uint64_t ino);

/* Counts the process pid (started at start_ticks; pid 0: one watch could
 * not name) as one that opened r's file, unless it is r's creator or
 * counted already.  Returns whether r changed. */
bool sg_rec_attach(struct sg_creator_rec *r, uint32_t pid, uint64_t start_ticks);

/* Sorts for sg_store_find(). */
void sg_store_index(struct sg_creator_store *s);
const struct sg_creator_rec *sg_store_find(const struct sg_creator_store *s, uint32_t kdev, uint64_t ino);

void sg_store_free(struct sg_creator_store *s);

#endif
