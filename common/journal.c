#include "journal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hash.h"
#include "reqid.h"
#include "sys.h"

static uint64_t head_seal(const struct sg_journal_head *h)
{
	return sg_hash_mem(h, offsetof(struct sg_journal_head, seal)) | 1;
}

void sg_journal_head_init(struct sg_journal_head *h, pid_t pid, uint64_t start_ticks, uint64_t pidns,
			  uint64_t created_ns)
{
	memset(h, 0, sizeof(*h));
	memcpy(h->magic, SG_JOURNAL_MAGIC, sizeof(SG_JOURNAL_MAGIC));
	h->rec_size = sizeof(struct sg_journal_rec);
	h->pid = (uint32_t)pid;
	h->start_ticks = start_ticks;
	h->pidns = pidns;
	h->created_ns = created_ns;
	h->seal = head_seal(h);
}

/* Over the fields and the bytes of the two strings in use (what lies past
 * them in the slot is left from earlier records). */
static uint64_t rec_seal(const struct sg_journal_rec *r, uint16_t req_len, uint16_t name_len)
{
	if (req_len > SG_NAME_MAX || name_len > SG_NAME_MAX)
		return 0;
	uint64_t h = sg_hash_mem(&r->ino, offsetof(struct sg_journal_rec, req) - offsetof(struct sg_journal_rec, ino));

	h = sg_hash_mix(h, sg_hash_mem(r->req, req_len));
	h = sg_hash_mix(h, sg_hash_mem(r->name, name_len));
	return h | 1;
}

uint64_t sg_journal_rec_seal(const struct sg_journal_rec *r)
{
	return rec_seal(r, r->req_len, r->name_len);
}

int sg_journal_rec_commit(struct sg_journal_rec *r, uint64_t ino, uint64_t created_ns, const char *req,
			  const char *name)
{
	size_t rlen = strlen(req), nlen = strlen(name);

	if (rlen > SG_NAME_MAX || nlen > SG_NAME_MAX)
		return -1;
	r->ino = ino;
	r->created_ns = created_ns;
	r->req_len = (uint16_t)rlen;
	r->name_len = (uint16_t)nlen;
	r->reserved = 0;
	memcpy(r->req, req, rlen);
	memcpy(r->name, name, nlen);
	__atomic_store_n(&r->seal, rec_seal(r, (uint16_t)rlen, (uint16_t)nlen), __ATOMIC_RELEASE);
	return 0;
}

int sg_journal_parse(const void *buf, size_t len, struct sg_journal_head *head,
		     int (*each)(const struct sg_journal_entry *e, void *ctx), void *ctx)
{
	const size_t rsize = sizeof(struct sg_journal_rec);
	struct sg_journal_rec r;
	int n = 0;

	if (len < sizeof(*head))
		return -1;
	memcpy(head, buf, sizeof(*head));
	if (memcmp(head->magic, SG_JOURNAL_MAGIC, sizeof(SG_JOURNAL_MAGIC)) != 0 || head->rec_size != rsize ||
	    head->seal != head_seal(head) || head->pid == 0 || head->pid > 0x7fffffff)
		return -1;
	for (size_t off = sizeof(*head); off + rsize <= len; off += rsize) {
		char req[SG_NAME_MAX + 1], name[SG_NAME_MAX + 1];

		memcpy(&r, (const char *)buf + off, rsize);
		if (r.seal == 0 || r.req_len == 0 || r.req_len > SG_NAME_MAX || r.name_len == 0 ||
		    r.name_len > SG_NAME_MAX || r.seal != rec_seal(&r, r.req_len, r.name_len))
			continue;
		memcpy(req, r.req, r.req_len);
		req[r.req_len] = '\0';
		memcpy(name, r.name, r.name_len);
		name[r.name_len] = '\0';
		if (sg_reqid_invalid(req) || strlen(name) != r.name_len)
			continue;
		struct sg_journal_entry e = {r.ino, r.created_ns, req, name};
		n++;
		if (each && each(&e, ctx) != 0)
			break;
	}
	return n;
}

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

/* Reads the whole file: it may grow or change while read, which the
 * records' seals take care of. */
static void *read_all(int fd, size_t size, size_t *len)
{
	char *buf = malloc(size ? size : 1);
	size_t got = 0;

	if (!buf)
		return NULL;
	while (got < size) {
		ssize_t n = pread(fd, buf + got, size - got, (off_t)got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	*len = got;
	return buf;
}

int sg_journals_add(struct sg_journals *js, int dirfd, const char *name)
{
	struct adding a = {js, false};
	struct sg_journal_head head;
	struct sg_journal_file *f;
	struct stat lst, st;
	char *buf = NULL;
	size_t len = 0;
	int fd = -1, ret = 0;

	/* Nobody but its owner may have written it, and no second name may be
	 * a way for anybody else to have done so. */
	if (fstatat(dirfd, name, &lst, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(lst.st_mode) || lst.st_nlink != 1 ||
	    (lst.st_mode & (S_IWGRP | S_IWOTH)))
		goto cleanup;
	fd = sg_sys_openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0 || fstat(fd, &st) < 0 || st.st_ino != lst.st_ino || st.st_dev != lst.st_dev || !S_ISREG(st.st_mode) ||
	    st.st_nlink != 1 || (st.st_mode & (S_IWGRP | S_IWOTH)) || st.st_size < (off_t)sizeof(head) ||
	    st.st_size > (off_t)SG_JOURNAL_MAX_BYTES)
		goto cleanup;
	if (!(buf = read_all(fd, (size_t)st.st_size, &len))) {
		ret = -1;
		goto cleanup;
	}
	if (!(f = realloc(js->files, (js->nfiles + 1) * sizeof(*f)))) {
		ret = -1;
		goto cleanup;
	}
	js->files = f;
	f = &js->files[js->nfiles];
	memset(f, 0, sizeof(*f));
	f->first = js->nclaims;
	if (sg_journal_parse(buf, len, &head, add_claim, &a) < 0)
		goto cleanup;
	if (a.nomem || !(f->name = strdup(name))) {
		ret = -1;
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
	goto cleanup;
drop:
	for (size_t i = f->first; i < js->nclaims; i++) {
		free(js->claims[i].req);
		free(js->claims[i].name);
	}
	js->nclaims = f->first;
cleanup:
	free(buf);
	if (fd >= 0)
		sg_sys_close(fd);
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

	if (statx(dirfd, path, flags | AT_STATX_DONT_SYNC, STATX_BTIME, &stx) < 0 || !(stx.stx_mask & STATX_BTIME))
		return 0;
	return (uint64_t)stx.stx_btime.tv_sec * 1000000000ull + stx.stx_btime.tv_nsec;
}

uint64_t sg_self_pidns(void)
{
	struct stat st;

	return stat("/proc/self/ns/pid", &st) == 0 ? (uint64_t)st.st_ino : 0;
}
