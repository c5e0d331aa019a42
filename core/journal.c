#include "core.h"
#include "journal.h"

#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <sys/stat.h>

#include "hash.h"
#include "reqid.h"

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

/* Where req first stands in name, SG_JOURNAL_NO_REQ if nowhere (or too far). */
static __attribute__((noinline)) size_t req_found(const char *req, size_t rlen, const char *name, size_t nlen)
{
	const char *found = memmem(name, nlen, req, rlen);

	return found && found - name < (ptrdiff_t)SG_JOURNAL_NO_REQ ? (size_t)(found - name) : SG_JOURNAL_NO_REQ;
}

/* Where req stands in name, SG_JOURNAL_NO_REQ if nowhere (or too far):
 * at, when the caller knows it (and it holds), else the first place. */
static inline size_t req_in(const char *req, size_t rlen, const char *name, size_t nlen, size_t at)
{
	if (at < SG_JOURNAL_NO_REQ && rlen <= nlen && at <= nlen - rlen && memcmp(name + at, req, rlen) == 0)
		return at;
	return req_found(req, rlen, name, nlen);
}

unsigned sg_journal_span(const char *req, const char *name)
{
	struct sg_journal_text t;

	return sg_journal_text_make(&t, req, strlen(req), name, strlen(name), SG_JOURNAL_REQ_AT_UNKNOWN);
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
static uint64_t rec_seal_hashed(const char *rec, uint64_t text_hash)
{
	return sg_hash_mix(sg_hash_mem(rec + FIELDS_AT, FIELDS_LEN), text_hash) | 1 | 1ull << 56;
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
	return rec_seal_hashed(at, sg_hash_mem(text, len));
}

/* A text's last slot, and its last hashed word, end less than CONT_TEXT
 * bytes past it. */
_Static_assert(sizeof(((struct sg_journal_text *)0)->text) >= 2 * SG_NAME_MAX + CONT_TEXT, "room for the zeros");

unsigned sg_journal_text_make(struct sg_journal_text *t, const char *req, size_t rlen, const char *name, size_t nlen,
			      size_t req_at)
{
	char *text = t->text;

	t->span = 0;
	if (!rlen || !nlen || rlen > SG_NAME_MAX || nlen > SG_NAME_MAX)
		return 0;
	t->rlen = rlen;
	t->nlen = nlen;
	t->req_at = req_in(req, rlen, name, nlen, req_at);
	if (t->req_at == 0) {
		memcpy(text, name, nlen); /* the name starts with the request: the text is the name */
		t->len = nlen;
	} else if (t->req_at == SG_JOURNAL_NO_REQ) {
		memcpy(text, req, rlen);
		memcpy(text + rlen, name, nlen);
		t->len = rlen + nlen;
	} else {
		size_t after = t->req_at + rlen;
		memcpy(text, req, rlen);
		memcpy(text + rlen, name, t->req_at);
		if (after < nlen)
			memcpy(text + after, name + after, nlen - after);
		t->len = nlen;
	}
	/* Zeros to the end of the last slot: sg_journal_text_commit copies
	 * whole slots, and the file is world-readable. */
	memset(text + t->len, 0, CONT_TEXT);
	t->text_hash = sg_hash_padded(text, t->len);
	return t->span = span_for(t->len);
}

void sg_journal_text_commit(void *at, uint64_t ino, uint64_t created_ns, const struct sg_journal_text *t)
{
	struct sg_journal_rec first = {.ino = ino,
				       .created_ns = created_ns,
				       .span = (uint8_t)t->span,
				       .req_len = (uint8_t)t->rlen,
				       .name_len = (uint8_t)t->nlen,
				       .req_at = (uint8_t)t->req_at};
	const char *text = t->text + FIRST_TEXT;
	char *slot = at;

	memcpy(first.text, t->text, FIRST_TEXT);
	memcpy(slot + FIELDS_AT, (const char *)&first + FIELDS_AT, SG_JOURNAL_SLOT - FIELDS_AT);
	/* Each further slot whole, its zero byte first: a reader never sees a
	 * slot start with a byte of the text. */
	for (unsigned i = 1; i < t->span; i++, text += CONT_TEXT) {
		slot[i * SG_JOURNAL_SLOT] = 0;
		memcpy(slot + i * SG_JOURNAL_SLOT + 1, text, CONT_TEXT);
	}
	__atomic_store_n(&((struct sg_journal_rec *)at)->seal, rec_seal_hashed((const char *)&first, t->text_hash),
			 __ATOMIC_RELEASE);
}

/* The plain writer, slot by slot from req and name, sealed as a reader
 * computes the seal: what sg_journal_text_commit must write byte for byte
 * (tests/unit/test_journal.c). */
int sg_journal_rec_commit(void *at, uint64_t ino, uint64_t created_ns, const char *req, const char *name)
{
	struct sg_journal_rec *r = at;
	size_t rlen = strlen(req), nlen = strlen(name), req_at;
	unsigned span;

	if (!rlen || !nlen || rlen > SG_NAME_MAX || nlen > SG_NAME_MAX)
		return -EINVAL;
	req_at = req_in(req, rlen, name, nlen, SG_JOURNAL_REQ_AT_UNKNOWN);
	span = span_for(req_at == SG_JOURNAL_NO_REQ ? rlen + nlen : nlen);
	memset((char *)at + FIELDS_AT, 0, span * SG_JOURNAL_SLOT - FIELDS_AT);
	r->ino = ino;
	r->created_ns = created_ns;
	r->span = (uint8_t)span;
	r->req_len = (uint8_t)rlen;
	r->name_len = (uint8_t)nlen;
	r->req_at = (uint8_t)req_at;
	text_copy(at, 0, (char *)req, rlen, true);
	if (req_at == SG_JOURNAL_NO_REQ) {
		text_copy(at, rlen, (char *)name, nlen, true);
	} else {
		text_copy(at, rlen, (char *)name, req_at, true);
		text_copy(at, rlen + req_at, (char *)name + req_at + rlen, nlen - req_at - rlen, true);
	}
	__atomic_store_n(&r->seal, sg_journal_rec_seal(at, span), __ATOMIC_RELEASE);
	return (int)span;
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

/* The records of slots [from, slots) of buf. */
static int parse_slots(const char *buf, size_t from, size_t slots,
		       int (*each)(const struct sg_journal_entry *e, void *ctx), void *ctx)
{
	int n = 0;

	for (size_t i = from; i < slots;) {
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

int sg_journal_parse(const void *buf, size_t len, struct sg_journal_head *head,
		     int (*each)(const struct sg_journal_entry *e, void *ctx), void *ctx)
{
	size_t slots = len / SG_JOURNAL_SLOT;

	if (!sg_journal_head_ok(buf, len, head))
		return -EBADMSG;
	if (head->slots_used < slots)
		slots = head->slots_used;
	return parse_slots(buf, SG_JOURNAL_HEAD_SLOTS, slots, each, ctx);
}

int sg_journal_parse_part(const void *buf, size_t len, size_t first,
			  int (*each)(const struct sg_journal_entry *e, void *ctx), void *ctx)
{
	if (first % SG_JOURNAL_BLOCK_SLOTS || !first)
		return -EINVAL;
	return parse_slots(buf, 0, len / SG_JOURNAL_SLOT, each, ctx);
}

uint64_t sg_self_pidns(void)
{
	struct stat st;

	return stat("/proc/self/ns/pid", &st) == 0 ? (uint64_t)st.st_ino : 0;
}
