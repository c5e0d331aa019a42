#include "journal_read.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct adding {
	struct sg_journals *js;
	bool nomem;
};

static int add_claim(const struct sg_journal_entry *e, void *opaque)
{
	struct adding *a = opaque;
	struct sg_journals *js = a->js;
	struct sg_journal_claim *c;

	if (js->nclaims == js->claims_cap) {
		size_t cap = js->claims_cap ? js->claims_cap * 2 : 64;
		if (!(c = realloc(js->claims, cap * sizeof(*c))))
			goto nomem;
		js->claims = c;
		js->claims_cap = cap;
	}
	c = &js->claims[js->nclaims];
	*c = (struct sg_journal_claim){e->ino, e->created_ns, js->nfiles, strdup(e->req), strdup(e->name)};
	if (!c->req || !c->name) {
		free(c->req);
		free(c->name);
		goto nomem;
	}
	js->nclaims++;
	return 0;
nomem:
	a->nomem = true;
	return -1;
}

/* Reads len bytes from off: the file may change while read, which the
 * header's and the records' seals take care of.  Returns the bytes read. */
static size_t read_at(int fd, char *buf, size_t len, size_t off)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = pread(fd, buf + got, len - got, (off_t)(off + got));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	return got;
}

/* Opens the journal called name in dirfd if it can be trusted, and reads
 * its header: the fd, or -1 with *verdict saying why not (gone, foreign).
 * *got: the bytes read. */
static int open_trusted(int dirfd, const char *name, struct stat *st, struct sg_journal_head *head, size_t *got,
			int *verdict)
{
	char first[sizeof(*head)];
	struct stat lst;
	int fd;

	*got = 0;
	*verdict = SG_JOURNAL_GONE;
	/* Nobody but its owner may have written it, and no second name may be
	 * a way for anybody else to have done so. */
	if (fstatat(dirfd, name, &lst, AT_SYMLINK_NOFOLLOW) < 0)
		return -1;
	*verdict = SG_JOURNAL_FOREIGN;
	if (!S_ISREG(lst.st_mode) || lst.st_nlink != 1 || (lst.st_mode & (S_IWGRP | S_IWOTH)))
		return -1;
	fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0 || fstat(fd, st) < 0) {
		*verdict = SG_JOURNAL_GONE;
		goto refused;
	}
	if (st->st_ino != lst.st_ino || st->st_dev != lst.st_dev || !S_ISREG(st->st_mode) || st->st_nlink != 1 ||
	    (st->st_mode & (S_IWGRP | S_IWOTH)) || st->st_size < (off_t)sizeof(*head) ||
	    st->st_size > (off_t)SG_JOURNAL_MAX_BYTES)
		goto refused;
	/* The header first: the rest is read only for an intact one, and only
	 * as far as its slots in use go. */
	*got = read_at(fd, first, sizeof(first), 0);
	if (!sg_journal_head_ok(first, *got, head))
		goto refused;
	return fd;
refused:
	if (fd >= 0)
		close(fd);
	return -1;
}

int sg_journal_dir_open(int rootfd)
{
	struct stat st;
	int fd = openat(rootfd, SG_JOURNAL_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return errno == ELOOP || errno == ENOTDIR ? -EPERM : -errno;
	if (fstat(fd, &st) < 0 || !sg_journal_dir_trusted(&st)) {
		close(fd);
		return -EPERM;
	}
	return fd;
}

int sg_journals_add_bounded(struct sg_journals *js, int dirfd, const char *name, size_t max_bytes, size_t *read)
{
	struct adding a = {js, false};
	struct sg_journal_head head;
	struct sg_journal_file *f;
	struct stat st;
	char *buf = NULL;
	size_t len = 0, got = 0;
	int fd, ret;

	fd = open_trusted(dirfd, name, &st, &head, &got, &ret);
	if (fd < 0)
		goto cleanup;
	ret = SG_JOURNAL_FOREIGN;
	len = (size_t)head.slots_used * SG_JOURNAL_SLOT;
	if (len > (size_t)st.st_size)
		len = (size_t)st.st_size;
	if (len > max_bytes || js->bytes_read + len > SG_JOURNALS_READ_MAX) {
		js->over_budget++;
		ret = SG_JOURNAL_OVER_BUDGET;
		goto cleanup;
	}
	if (!(buf = malloc(len ? len : 1))) {
		ret = -ENOMEM;
		goto cleanup;
	}
	len = read_at(fd, buf, len, 0);
	got += len;
	if (!(f = realloc(js->files, (js->nfiles + 1) * sizeof(*f)))) {
		ret = -ENOMEM;
		goto cleanup;
	}
	js->files = f;
	f = &js->files[js->nfiles];
	memset(f, 0, sizeof(*f));
	f->first = js->nclaims;
	if (sg_journal_parse(buf, len, &head, add_claim, &a) < 0)
		goto cleanup; /* changed since its header was read */
	if (a.nomem || !(f->name = strdup(name))) {
		ret = -ENOMEM;
		goto drop;
	}
	f->ino = st.st_ino;
	f->uid = st.st_uid;
	f->creator.pid = (pid_t)head.pid;
	f->creator.start_ticks = head.start_ticks;
	f->creator.pidns = head.pidns;
	f->creator.created_ns = head.created_ns;
	f->count = js->nclaims - f->first;
	js->nfiles++;
	ret = SG_JOURNAL_READ;
	goto cleanup;
drop:
	for (size_t i = f->first; i < js->nclaims; i++) {
		free(js->claims[i].req);
		free(js->claims[i].name);
	}
	js->nclaims = f->first;
cleanup:
	js->bytes_read += got;
	if (read)
		*read = got;
	free(buf);
	if (fd >= 0)
		close(fd);
	return ret;
}

int sg_journals_add(struct sg_journals *js, int dirfd, const char *name)
{
	return sg_journals_add_bounded(js, dirfd, name, SIZE_MAX, NULL);
}

/* What a journal's records are checked against, block by block. */
struct naming {
	int dirfd;
	bool names;
};

static int names_a_file(const struct sg_journal_entry *e, void *opaque)
{
	struct naming *n = opaque;
	struct stat st;

	if (fstatat(n->dirfd, e->name, &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_ino == e->ino) {
		n->names = true;
		return 1;
	}
	return 0;
}

/* A part of a journal read at once: a whole number of blocks. */
#define PART_BYTES (32u * SG_JOURNAL_BLOCK)

int sg_journal_names_a_file(int rootfd, int dirfd, const char *name, uint64_t ino, struct sg_tag *creator,
			    size_t *budget)
{
	struct sg_journal_head head;
	struct naming n = {rootfd, false};
	struct stat st;
	char *buf = NULL;
	size_t got, len, off;
	int fd, verdict, ret = -1;

	fd = open_trusted(dirfd, name, &st, &head, &got, &verdict);
	if (fd < 0 || st.st_ino != ino || !(buf = malloc(PART_BYTES)))
		goto cleanup;
	memset(creator, 0, sizeof(*creator));
	creator->pid = (pid_t)head.pid;
	creator->start_ticks = head.start_ticks;
	creator->pidns = head.pidns;
	creator->created_ns = head.created_ns;
	len = (size_t)head.slots_used * SG_JOURNAL_SLOT;
	if (len > (size_t)st.st_size)
		len = (size_t)st.st_size;
	/* The shim writes every slot it uses: a journal whose slots in use are
	 * not all there (sparse: planted, or made by other hands) is not read
	 * on, and neither is one past what is left to read. */
	if ((uint64_t)st.st_blocks * 512 < len || len > *budget)
		goto cleanup;
	*budget -= len;
	/* The first block holds the header: parsed with it. */
	got = read_at(fd, buf, len < SG_JOURNAL_BLOCK ? len : SG_JOURNAL_BLOCK, 0);
	if (sg_journal_parse(buf, got, &head, names_a_file, &n) < 0)
		goto cleanup;
	for (off = SG_JOURNAL_BLOCK; !n.names && off < len; off += PART_BYTES) {
		size_t want = len - off < PART_BYTES ? len - off : PART_BYTES;
		got = read_at(fd, buf, want, off);
		sg_journal_parse_part(buf, got, off / SG_JOURNAL_SLOT, names_a_file, &n);
		if (got < want)
			break;
	}
	ret = n.names;
cleanup:
	free(buf);
	if (fd >= 0)
		close(fd);
	return ret;
}

static int by_ino(const void *x, const void *y)
{
	const struct sg_journal_claim *a = x, *b = y;
	return (a->ino > b->ino) - (a->ino < b->ino);
}

void sg_journals_index(struct sg_journals *js)
{
	if (js->nclaims)
		qsort(js->claims, js->nclaims, sizeof(*js->claims), by_ino);
	js->indexed = true;
}

void sg_journals_free(struct sg_journals *js)
{
	for (size_t i = 0; i < js->nclaims; i++) {
		free(js->claims[i].req);
		free(js->claims[i].name);
	}
	for (size_t i = 0; i < js->nfiles; i++)
		free(js->files[i].name);
	free(js->claims);
	free(js->files);
	memset(js, 0, sizeof(*js));
}

/* The first claim on ino, or NULL. */
static const struct sg_journal_claim *first_claim(const struct sg_journals *js, uint64_t ino)
{
	size_t lo = 0, hi = js->nclaims;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (js->claims[mid].ino < ino)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < js->nclaims && js->claims[lo].ino == ino ? &js->claims[lo] : NULL;
}

bool sg_journals_claim_any(const struct sg_journals *js, uint64_t ino)
{
	return js->indexed && first_claim(js, ino);
}

/* The creator reads the coarse clock after the file exists, and the kernel
 * stamps a birth time from the same coarse clock: a file born after its
 * claim by more than a tick of slack is another, later file. */
#define BIRTH_SLACK_NS 20000000ull

bool sg_journals_find(const struct sg_journals *js, uint64_t ino, uid_t uid, const char *name, uint64_t btime_ns,
		      struct sg_tag *tag)
{
	const struct sg_journal_claim *c = js->indexed ? first_claim(js, ino) : NULL, *best = NULL;

	if (!name && !btime_ns)
		return false;
	for (; c && c < js->claims + js->nclaims && c->ino == ino; c++) {
		if (js->files[c->journal].uid != uid || (name && strcmp(c->name, name) != 0))
			continue;
		if (btime_ns && btime_ns > c->created_ns + BIRTH_SLACK_NS)
			continue;
		if (!best || c->created_ns > best->created_ns)
			best = c;
	}
	if (!best)
		return false;
	*tag = js->files[best->journal].creator;
	tag->created_ns = best->created_ns;
	strcpy(tag->req, best->req);
	return true;
}

uint64_t sg_birth_ns(int dirfd, const char *path, int flags)
{
	struct statx stx;

	return statx(dirfd, path, flags | AT_STATX_DONT_SYNC, STATX_BTIME, &stx) < 0 ? 0 : sg_statx_birth_ns(&stx);
}

uint64_t sg_statx_birth_ns(const struct statx *stx)
{
	if (!(stx->stx_mask & STATX_BTIME))
		return 0;
	return (uint64_t)stx->stx_btime.tv_sec * 1000000000ull + stx->stx_btime.tv_nsec;
}
