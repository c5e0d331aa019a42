#include "creator_store.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "outfile.h"

/* The file: this header, then n records as they are in memory (the
 * store is read only by the machine that wrote it, within one boot). */
#define STORE_MAGIC "SGCREC02"

struct store_header {
	char magic[8];
	uint32_t rec_size; /* sizeof(struct sg_creator_rec): a build with another layout refuses it */
	uint32_t n;
};

/* The reason in err; returns -e. */
static int fail(char *err, size_t errlen, const char *fmt, const char *what, int e)
{
	snprintf(err, errlen, fmt, what, strerror(e));
	return -e;
}

const char *sg_store_dir(void)
{
	const char *d = getenv("SHMGUARD_STORE_DIR");

	return d && *d == '/' ? d : SG_STORE_DIR;
}

int sg_store_open_dir(bool make, char *err, size_t errlen)
{
	const char *dir = sg_store_dir();
	struct stat st;
	int fd;

	if (make && mkdir(dir, 0700) < 0 && errno != EEXIST)
		return fail(err, errlen, "cannot make %s: %s", dir, errno);
	if ((fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
		return fail(err, errlen, "cannot open %s: %s", dir, errno);
	if (fstat(fd, &st) < 0) {
		int e = errno;
		close(fd);
		return fail(err, errlen, "cannot read %s: %s", dir, e);
	}
	/* Only its owner, root or whoever runs watch, may put records there. */
	if ((st.st_uid != 0 && st.st_uid != geteuid()) || (st.st_mode & 077)) {
		close(fd);
		snprintf(err, errlen, "%s is not safe to trust (owner uid %u, mode %03o; wanted root's, 0700)", dir,
			 (unsigned)st.st_uid, (unsigned)(st.st_mode & 0777));
		return -EPERM;
	}
	return fd;
}

static void terminate(struct sg_creator_rec *r)
{
	r->comm[sizeof(r->comm) - 1] = '\0';
	r->name[sizeof(r->name) - 1] = '\0';
	r->cgroup[sizeof(r->cgroup) - 1] = '\0';
}

int sg_store_load(struct sg_creator_store *s, int dfd, char *err, size_t errlen)
{
	const char *dir = sg_store_dir();
	struct store_header h;
	struct stat st;
	int fd = openat(dfd, SG_STORE_FILE, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK), ret = -EBADMSG;

	*s = (struct sg_creator_store){0};
	if (fd < 0)
		return errno == ENOENT ? 0 : fail(err, errlen, "cannot open the records in %s: %s", dir, errno);
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1 ||
	    (st.st_uid != 0 && st.st_uid != geteuid()) || (st.st_mode & 022)) {
		snprintf(err, errlen, "%s/%s is not a file watch wrote (type, links, owner or mode): not read", dir,
			 SG_STORE_FILE);
		ret = -EPERM;
		goto cleanup;
	}
	if (read(fd, &h, sizeof(h)) != (ssize_t)sizeof(h) || memcmp(h.magic, STORE_MAGIC, 8) != 0 ||
	    h.rec_size != sizeof(struct sg_creator_rec) || h.n > SG_STORE_MAX ||
	    (uint64_t)st.st_size != sizeof(h) + (uint64_t)h.n * sizeof(struct sg_creator_rec)) {
		snprintf(err, errlen, "%s/%s is not a record file of this shmguard (header or size): not read", dir,
			 SG_STORE_FILE);
		goto cleanup;
	}
	if (h.n && !(s->recs = calloc(h.n, sizeof(*s->recs)))) {
		snprintf(err, errlen, "out of memory");
		ret = -ENOMEM;
		goto cleanup;
	}
	s->cap = h.n;
	size_t want = h.n * sizeof(*s->recs), got = 0;
	while (got < want) {
		ssize_t r = read(fd, (char *)s->recs + got, want - got);
		if (r <= 0) {
			snprintf(err, errlen, "%s/%s could not be read whole", dir, SG_STORE_FILE);
			ret = r < 0 ? -errno : -EIO;
			goto cleanup;
		}
		got += (size_t)r;
	}
	s->n = h.n;
	s->complete_ns = (uint64_t)st.st_mtim.tv_sec * 1000000000ull + (uint64_t)st.st_mtim.tv_nsec;
	for (size_t i = 0; i < s->n; i++) {
		terminate(&s->recs[i]);
		if (s->recs[i].nattachers > SG_REC_ATTACHERS || s->recs[i].nancestors > SG_REC_ANCESTORS) {
			snprintf(err, errlen, "%s/%s holds a record with %u attachers and %u ancestors: not read", dir,
				 SG_STORE_FILE, s->recs[i].nattachers, s->recs[i].nancestors);
			goto cleanup;
		}
	}
	sg_store_index(s);
	ret = 0;
cleanup:
	close(fd);
	if (ret < 0)
		sg_store_free(s);
	return ret;
}

int sg_store_save(const struct sg_creator_store *s, int dfd, char *err, size_t errlen)
{
	struct store_header h = {.rec_size = sizeof(struct sg_creator_rec), .n = (uint32_t)s->n};
	struct sg_outfile out;
	size_t len = s->n * sizeof(*s->recs), done = 0;
	ssize_t w;
	int ret;

	memcpy(h.magic, STORE_MAGIC, 8);
	if ((ret = sg_outfile_open_at(&out, dfd, SG_STORE_FILE, 0600, 0, err, errlen)) < 0)
		return ret;
	if ((w = write(out.fd, &h, sizeof(h))) != (ssize_t)sizeof(h))
		goto failed;
	while (done < len) {
		if ((w = write(out.fd, (const char *)s->recs + done, len - done)) <= 0)
			goto failed;
		done += (size_t)w;
	}
	/* Its modification time says up to when it is complete: set before
	 * it replaces the last, so no reader sees the mark without the
	 * records. */
	struct timespec mark[2] = {{.tv_nsec = UTIME_OMIT},
				   {.tv_sec = (time_t)(s->complete_ns / 1000000000ull),
				    .tv_nsec = (long)(s->complete_ns % 1000000000ull)}};
	if (s->complete_ns && futimens(out.fd, mark) < 0) {
		w = -1;
		goto failed;
	}
	return sg_outfile_commit(&out, 0, err, errlen);
failed:
	ret = w < 0 ? -errno : -EIO;
	snprintf(err, errlen, "cannot write the records in %s: %s", sg_store_dir(), strerror(-ret));
	sg_outfile_discard(&out);
	return ret;
}

int sg_store_mark_complete(int dfd, uint64_t complete_ns, char *err, size_t errlen)
{
	struct timespec mark[2] = {{.tv_nsec = UTIME_OMIT},
				   {.tv_sec = (time_t)(complete_ns / 1000000000ull),
				    .tv_nsec = (long)(complete_ns % 1000000000ull)}};

	if (utimensat(dfd, SG_STORE_FILE, mark, AT_SYMLINK_NOFOLLOW) < 0)
		return fail(err, errlen, "cannot mark the records in %s complete: %s", sg_store_dir(), errno);
	return 0;
}

/* CLOCK_REALTIME, ns. */
static uint64_t unix_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int sg_store_load_current(struct sg_creator_store *s, int dfd, unsigned timeout_ms, char *err, size_t errlen)
{
	uint64_t since = unix_ns(), until = since + (uint64_t)timeout_ms * 1000000ull;
	struct timespec pause = {.tv_nsec = 20000000};
	int ret;

	for (;;) {
		if ((ret = sg_store_load(s, dfd, err, errlen)) < 0 || s->complete_ns >= since)
			return ret;
		/* No recorder holds the lock: these records are all there will be. */
		int probe = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		bool recording = probe >= 0 && flock(probe, LOCK_SH | LOCK_NB) < 0 && errno == EWOULDBLOCK;
		if (probe >= 0)
			close(probe);
		if (!recording)
			return 0;
		if (unix_ns() >= until) {
			snprintf(err, errlen, "the recorder of %s has not written its records for %u ms", sg_store_dir(),
				 timeout_ms);
			sg_store_free(s);
			return -ETIMEDOUT;
		}
		sg_store_free(s);
		nanosleep(&pause, NULL);
	}
}

static int by_key(const void *x, const void *y)
{
	const struct sg_creator_rec *a = x, *b = y;

	if (a->kdev != b->kdev)
		return (a->kdev > b->kdev) - (a->kdev < b->kdev);
	return (a->ino > b->ino) - (a->ino < b->ino);
}

void sg_store_index(struct sg_creator_store *s)
{
	if (s->n)
		qsort(s->recs, s->n, sizeof(*s->recs), by_key);
}

const struct sg_creator_rec *sg_store_find(const struct sg_creator_store *s, uint32_t kdev, uint64_t ino)
{
	struct sg_creator_rec key = {.kdev = kdev, .ino = ino};

	return s->n ? bsearch(&key, s->recs, s->n, sizeof(*s->recs), by_key) : NULL;
}

struct sg_creator_rec *sg_store_lookup(struct sg_creator_store *s, uint32_t kdev, uint64_t ino)
{
	/* Unsorted while watch adds: a linear look. */
	for (size_t i = 0; i < s->n; i++)
		if (s->recs[i].kdev == kdev && s->recs[i].ino == ino)
			return &s->recs[i];
	return NULL;
}

bool sg_rec_attach(struct sg_creator_rec *r, uint32_t pid, uint64_t start_ticks)
{
	if (pid && pid == r->pid && start_ticks == r->start_ticks)
		return false;
	for (uint32_t i = 0; i < r->nattachers; i++)
		if (pid && r->attachers[i].pid == pid && r->attachers[i].start_ticks == start_ticks)
			return false;
	if (!pid || !start_ticks || r->nattachers == SG_REC_ATTACHERS) {
		bool changed = !(r->flags & SG_REC_ATTACHERS_LOST);
		r->flags |= SG_REC_ATTACHERS_LOST;
		return changed;
	}
	r->attachers[r->nattachers++] = (struct sg_rec_process){.pid = pid, .start_ticks = start_ticks};
	return true;
}

int sg_store_put(struct sg_creator_store *s, const struct sg_creator_rec *r)
{
	struct sg_creator_rec *old = sg_store_lookup(s, r->kdev, r->ino);

	if (old) {
		*old = *r;
		terminate(old);
		return 0;
	}
	if (s->n >= SG_STORE_MAX)
		return -ENOSPC;
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 64;
		struct sg_creator_rec *n = realloc(s->recs, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		s->recs = n;
		s->cap = cap;
	}
	s->recs[s->n] = *r;
	terminate(&s->recs[s->n++]);
	return 0;
}

void sg_store_free(struct sg_creator_store *s)
{
	free(s->recs);
	*s = (struct sg_creator_store){0};
}
