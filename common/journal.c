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
	h->slot_size = SG_JOURNAL_SLOT;
	h->pid = (uint32_t)pid;
	h->start_ticks = start_ticks;
	h->pidns = pidns;
	h->created_ns = created_ns;
	h->seal = head_seal(h);
	h->slots_used = SG_JOURNAL_BLOCK_SLOTS; /* the writer keeps it current */
}

#define FIRST_TEXT sizeof(((struct sg_journal_rec *)0)->text)
#define CONT_TEXT sizeof(((struct sg_journal_cont *)0)->text)
#define FIELDS_AT offsetof(struct sg_journal_rec, ino)
#define FIELDS_LEN (offsetof(struct sg_journal_rec, text) - FIELDS_AT)

static unsigned span_for(size_t len)
{
	return len <= FIRST_TEXT ? 1 : 1 + (unsigned)((len - FIRST_TEXT + CONT_TEXT - 1) / CONT_TEXT);
}

/* Where req stands in name, SG_JOURNAL_NO_REQ if nowhere (or too far). */
static size_t req_in(const char *req, const char *name)
{
	const char *at = strstr(name, req);

	return at && at - name < (ptrdiff_t)SG_JOURNAL_NO_REQ ? (size_t)(at - name) : SG_JOURNAL_NO_REQ;
}

unsigned sg_journal_span(const char *req, const char *name)
{
	size_t rlen = strlen(req), nlen = strlen(name);

	if (!rlen || !nlen || rlen > SG_NAME_MAX || nlen > SG_NAME_MAX)
		return 0;
	return span_for(rlen + nlen - (req_in(req, name) == SG_JOURNAL_NO_REQ ? 0 : rlen));
}

_Static_assert(2 * SG_NAME_MAX <= FIRST_TEXT + (SG_JOURNAL_MAX_SPAN - 1) * CONT_TEXT, "the longest record fits");

/* Where byte off of a record's text lies, from its first slot. */
static size_t text_at(size_t off)
{
	if (off < FIRST_TEXT)
		return offsetof(struct sg_journal_rec, text) + off;
	off -= FIRST_TEXT;
	return (1 + off / CONT_TEXT) * SG_JOURNAL_SLOT + offsetof(struct sg_journal_cont, text) + off % CONT_TEXT;
}

/* Copies len bytes between a record's text (from byte off) and flat. */
static void text_copy(char *rec, size_t off, char *flat, size_t len, bool to_rec)
{
	while (len) {
		size_t at = text_at(off), room = off < FIRST_TEXT ? FIRST_TEXT - off : CONT_TEXT - (off - FIRST_TEXT) % CONT_TEXT;
		size_t n = len < room ? len : room;
		if (to_rec)
			memcpy(rec + at, flat, n);
		else
			memcpy(flat, rec + at, n);
		off += n;
		flat += n;
		len -= n;
	}
}

/* Its first byte in memory is never 0, whatever the byte order: that is how
 * a reader tells a record's first slot from the others. */
static uint64_t rec_seal_flat(const char *rec, const char *text, size_t len)
{
	return sg_hash_mix(sg_hash_mem(rec + FIELDS_AT, FIELDS_LEN), sg_hash_mem(text, len)) | 1 | 1ull << 56;
}

/* The length of a record's text, 0 when its fields are out of range. */
static size_t text_len(const struct sg_journal_rec *r)
{
	size_t rlen = r->req_len, nlen = r->name_len;

	if (!rlen || !nlen || rlen > SG_NAME_MAX || nlen > SG_NAME_MAX)
		return 0;
	if (r->req_at == SG_JOURNAL_NO_REQ)
		return rlen + nlen;
	return rlen <= nlen && r->req_at <= nlen - rlen ? nlen : 0;
}

uint64_t sg_journal_rec_seal(const void *at, unsigned avail_slots)
{
	const struct sg_journal_rec *r = at;
	char text[2 * SG_NAME_MAX];
	size_t len = text_len(r);

	if (!len || span_for(len) != r->span || r->span > avail_slots)
		return 0;
	text_copy((char *)at, 0, text, len, false);
	return rec_seal_flat(at, text, len);
}

unsigned sg_journal_rec_commit(void *at, uint64_t ino, uint64_t created_ns, const char *req, const char *name)
{
	struct sg_journal_rec *r = at;
	size_t rlen = strlen(req), nlen = strlen(name), req_at, len;
	unsigned span;
	char text[2 * SG_NAME_MAX];

	if (!rlen || !nlen || rlen > SG_NAME_MAX || nlen > SG_NAME_MAX)
		return 0;
	req_at = req_in(req, name);
	memcpy(text, req, rlen);
	if (req_at == SG_JOURNAL_NO_REQ) {
		memcpy(text + rlen, name, nlen);
		len = rlen + nlen;
	} else {
		memcpy(text + rlen, name, req_at);
		memcpy(text + rlen + req_at, name + req_at + rlen, nlen - req_at - rlen);
		len = nlen;
	}
	span = span_for(len);
	r->ino = ino;
	r->created_ns = created_ns;
	r->span = (uint8_t)span;
	r->req_len = (uint8_t)rlen;
	r->name_len = (uint8_t)nlen;
	r->req_at = (uint8_t)req_at;
	for (unsigned i = 1; i < span; i++)
		((struct sg_journal_cont *)at)[i].zero = 0;
	text_copy(at, 0, text, len, true);
	__atomic_store_n(&r->seal, rec_seal_flat(at, text, len), __ATOMIC_RELEASE);
	return span;
}

bool sg_journal_head_ok(const void *buf, size_t len, struct sg_journal_head *head)
{
	if (len < sizeof(*head))
		return false;
	memcpy(head, buf, sizeof(*head));
	return memcmp(head->magic, SG_JOURNAL_MAGIC, sizeof(SG_JOURNAL_MAGIC)) == 0 && head->slot_size == SG_JOURNAL_SLOT &&
	       head->seal == head_seal(head) && head->pid != 0 && head->pid <= 0x7fffffff;
}

/* The record at slot i of buf (n slots readable from it), checked; its
 * span, or 0 when there is no intact record there. */
static unsigned read_rec(const char *buf, size_t i, size_t n, struct sg_journal_entry *e, char *req, char *name)
{
	char rec[SG_JOURNAL_MAX_SPAN * SG_JOURNAL_SLOT];
	const struct sg_journal_rec *r = (const struct sg_journal_rec *)rec;
	unsigned span;

	if (!((const unsigned char *)buf)[i * SG_JOURNAL_SLOT])
		return 0; /* free, or not a record's first slot */
	memcpy(rec, buf + i * SG_JOURNAL_SLOT, SG_JOURNAL_SLOT);
	span = r->span;
	if (r->seal == 0 || span == 0 || span > SG_JOURNAL_MAX_SPAN || span > n ||
	    i % SG_JOURNAL_BLOCK_SLOTS + span > SG_JOURNAL_BLOCK_SLOTS)
		return 0;
	memcpy(rec + SG_JOURNAL_SLOT, buf + (i + 1) * SG_JOURNAL_SLOT, (span - 1) * SG_JOURNAL_SLOT);
	for (unsigned k = 1; k < span; k++)
		if (((const struct sg_journal_cont *)rec)[k].zero != 0)
			return 0;
	if (r->seal != sg_journal_rec_seal(rec, span))
		return 0;
	text_copy(rec, 0, req, r->req_len, false);
	req[r->req_len] = '\0';
	if (r->req_at == SG_JOURNAL_NO_REQ) {
		text_copy(rec, r->req_len, name, r->name_len, false);
	} else {
		text_copy(rec, r->req_len, name, r->req_at, false);
		memcpy(name + r->req_at, req, r->req_len);
		text_copy(rec, (size_t)r->req_len + r->req_at, name + r->req_at + r->req_len,
			  (size_t)r->name_len - r->req_at - r->req_len, false);
	}
	name[r->name_len] = '\0';
	if (sg_reqid_invalid(req) || strlen(name) != r->name_len)
		return 0;
	*e = (struct sg_journal_entry){r->ino, r->created_ns, req, name};
	return span;
}

int sg_journal_parse(const void *buf, size_t len, struct sg_journal_head *head,
		     int (*each)(const struct sg_journal_entry *e, void *ctx), void *ctx)
{
	size_t slots = len / SG_JOURNAL_SLOT;
	int n = 0;

	if (!sg_journal_head_ok(buf, len, head))
		return -1;
	if (head->slots_used < slots)
		slots = head->slots_used;
	for (size_t i = SG_JOURNAL_HEAD_SLOTS; i < slots;) {
		char req[SG_NAME_MAX + 1], name[SG_NAME_MAX + 1];
		struct sg_journal_entry e;
		unsigned span = read_rec(buf, i, slots - i, &e, req, name);

		if (!span) {
			i++;
			continue;
		}
		i += span;
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

int sg_journals_add_bounded(struct sg_journals *js, int dirfd, const char *name, size_t max_bytes, size_t *read)
{
	struct adding a = {js, false};
	struct sg_journal_head head;
	struct sg_journal_file *f;
	struct stat lst, st;
	char *buf = NULL, first[sizeof(head)];
	size_t len = 0, got = 0;
	int fd = -1, ret = SG_JOURNAL_FOREIGN;

	/* Nobody but its owner may have written it, and no second name may be
	 * a way for anybody else to have done so. */
	if (fstatat(dirfd, name, &lst, AT_SYMLINK_NOFOLLOW) < 0) {
		ret = SG_JOURNAL_GONE;
		goto cleanup;
	}
	if (!S_ISREG(lst.st_mode) || lst.st_nlink != 1 || (lst.st_mode & (S_IWGRP | S_IWOTH)))
		goto cleanup;
	fd = sg_sys_openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0 || fstat(fd, &st) < 0) {
		ret = SG_JOURNAL_GONE;
		goto cleanup;
	}
	if (st.st_ino != lst.st_ino || st.st_dev != lst.st_dev || !S_ISREG(st.st_mode) || st.st_nlink != 1 ||
	    (st.st_mode & (S_IWGRP | S_IWOTH)) || st.st_size < (off_t)sizeof(head) ||
	    st.st_size > (off_t)SG_JOURNAL_MAX_BYTES)
		goto cleanup;
	/* The header first: the rest is read only for an intact one, and only
	 * as far as its slots in use go. */
	got = read_at(fd, first, sizeof(first), 0);
	if (!sg_journal_head_ok(first, got, &head))
		goto cleanup;
	len = (size_t)head.slots_used * SG_JOURNAL_SLOT;
	if (len > (size_t)st.st_size)
		len = (size_t)st.st_size;
	if (len > max_bytes || js->bytes_read + len > SG_JOURNALS_READ_MAX) {
		js->over_budget++;
		ret = SG_JOURNAL_OVER_BUDGET;
		goto cleanup;
	}
	if (!(buf = malloc(len ? len : 1))) {
		ret = -1;
		goto cleanup;
	}
	len = read_at(fd, buf, len, 0);
	got += len;
	if (!(f = realloc(js->files, (js->nfiles + 1) * sizeof(*f)))) {
		ret = -1;
		goto cleanup;
	}
	js->files = f;
	f = &js->files[js->nfiles];
	memset(f, 0, sizeof(*f));
	f->first = js->nclaims;
	if (sg_journal_parse(buf, len, &head, add_claim, &a) < 0)
		goto cleanup; /* changed since its header was read */
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
		sg_sys_close(fd);
	return ret;
}

int sg_journals_add(struct sg_journals *js, int dirfd, const char *name)
{
	return sg_journals_add_bounded(js, dirfd, name, SIZE_MAX, NULL);
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
