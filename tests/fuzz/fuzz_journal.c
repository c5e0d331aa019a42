/* libFuzzer target: an ownership journal as another process reads it
 * (common/journal.h): as given, and behind a valid header with each record
 * sealed as it stands, so that the checks on a record's contents are
 * reached.  Every record read must be one the shim could have written:
 * committed again, it reads back the same. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "journal.h"
#include "reqid.h"

static int check(const struct sg_journal_entry *e, void *ctx)
{
	struct {
		struct sg_journal_head head;
		struct sg_journal_rec rec;
	} again;
	struct sg_journal_head head;
	size_t rlen = strlen(e->req), nlen = strlen(e->name);

	(void)ctx;
	if (!rlen || rlen > SG_NAME_MAX || !nlen || nlen > SG_NAME_MAX || sg_reqid_invalid(e->req))
		abort();
	memset(&again, 0, sizeof(again));
	sg_journal_head_init(&again.head, 1, 2, 3, 4);
	if (sg_journal_rec_commit(&again.rec, e->ino, e->created_ns, e->req, e->name) < 0)
		abort();
	if (sg_journal_parse(&again, sizeof(again), &head, NULL, NULL) != 1 || again.rec.ino != e->ino ||
	    again.rec.created_ns != e->created_ns || memcmp(again.rec.req, e->req, rlen) != 0 ||
	    memcmp(again.rec.name, e->name, nlen) != 0)
		abort();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sg_journal_head head;
	uint8_t *buf;

	sg_journal_parse(data, size, &head, check, NULL);
	if (!(buf = malloc(sizeof(head) + size)))
		return 0;
	sg_journal_head_init(&head, 4242, 1, 2, 3);
	memcpy(buf, &head, sizeof(head));
	memcpy(buf + sizeof(head), data, size);
	for (size_t off = sizeof(head); off + sizeof(struct sg_journal_rec) <= sizeof(head) + size;
	     off += sizeof(struct sg_journal_rec)) {
		struct sg_journal_rec r;
		memcpy(&r, buf + off, sizeof(r));
		r.seal = sg_journal_rec_seal(&r);
		memcpy(buf + off, &r, sizeof(r));
	}
	if (sg_journal_parse(buf, sizeof(head) + size, &head, check, NULL) < 0)
		abort();
	free(buf);
	return 0;
}
