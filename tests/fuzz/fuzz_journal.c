/* libFuzzer target: an ownership journal as another process reads it
 * (core/journal.h): as given, and behind a valid header with each record
 * sealed as it stands, so that the checks on a record's contents are
 * reached.  Every record read must be one the shim could have written:
 * committed again, it reads back the same, and the shim's writer writes
 * the plain writer's bytes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "journal.h"
#include "reqid.h"

struct again {
	uint64_t ino, created_ns;
	const char *req, *name;
	int n;
};

static int same(const struct sg_journal_entry *e, void *ctx)
{
	struct again *a = ctx;

	if (e->ino != a->ino || e->created_ns != a->created_ns || strcmp(e->req, a->req) != 0 ||
	    strcmp(e->name, a->name) != 0)
		abort();
	a->n++;
	return 0;
}

static int check(const struct sg_journal_entry *e, void *ctx)
{
	static union {
		struct sg_journal_head head;
		char slot[SG_JOURNAL_HEAD_SLOTS + SG_JOURNAL_MAX_SPAN][SG_JOURNAL_SLOT];
	} img;
	static char fast[SG_JOURNAL_MAX_SPAN][SG_JOURNAL_SLOT];
	struct again a = {e->ino, e->created_ns, e->req, e->name, 0};
	struct sg_journal_head head;
	struct sg_journal_text t;
	size_t rlen = strlen(e->req), nlen = strlen(e->name);
	int span;

	(void)ctx;
	if (!rlen || rlen > SG_NAME_MAX || !nlen || nlen > SG_NAME_MAX || sg_reqid_invalid(e->req))
		abort();
	memset(&img, 0, sizeof(img));
	sg_journal_head_init(&img.head, 1, 2, 3, 4);
	if ((span = sg_journal_rec_commit(img.slot[SG_JOURNAL_HEAD_SLOTS], e->ino, e->created_ns, e->req, e->name)) < 0)
		abort();
	/* The shim's writer: the same bytes, over stale ones. */
	memset(fast, 0xa5, sizeof(fast));
	memset(&t, 0x5a, sizeof(t));
	if (sg_journal_text_make(&t, e->req, rlen, e->name, nlen, SG_JOURNAL_REQ_AT_UNKNOWN) != (unsigned)span)
		abort();
	sg_journal_text_commit(fast, e->ino, e->created_ns, &t);
	if (memcmp(fast, img.slot[SG_JOURNAL_HEAD_SLOTS], (size_t)span * SG_JOURNAL_SLOT) != 0)
		abort();
	if (sg_journal_parse(&img, sizeof(img), &head, same, &a) != 1 || a.n != 1)
		abort();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sg_journal_head head;
	size_t len = sizeof(head) + size;
	uint8_t *buf;

	sg_journal_parse(data, size, &head, check, NULL);
	if (!(buf = malloc(len)))
		return 0;
	sg_journal_head_init(&head, 4242, 1, 2, 3);
	head.slots_used = UINT32_MAX;
	memcpy(buf, &head, sizeof(head));
	memcpy(buf + sizeof(head), data, size);
	for (size_t i = SG_JOURNAL_HEAD_SLOTS; (i + 1) * SG_JOURNAL_SLOT <= len; i++) {
		struct sg_journal_rec r;
		memcpy(&r, buf + i * SG_JOURNAL_SLOT, sizeof(r));
		if (!r.seal)
			continue;
		r.seal = 0;
		memcpy(buf + i * SG_JOURNAL_SLOT, &r, sizeof(r));
		r.seal = sg_journal_rec_seal(buf + i * SG_JOURNAL_SLOT, (unsigned)(len / SG_JOURNAL_SLOT - i));
		memcpy(buf + i * SG_JOURNAL_SLOT, &r, sizeof(r));
	}
	if (sg_journal_parse(buf, len, &head, check, NULL) < 0)
		abort();
	free(buf);
	return 0;
}
