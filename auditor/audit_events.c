/* What the BPF events say about the files created under the shm roots. */
#include <linux/types.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "audit.h"
#include "audit_event.h"
#include "holders.h"
#include "reqid.h"

void audit_attribute_by_name(struct audit *a, struct audit_file *f)
{
	char req[SG_NAME_MAX + 1], other[SG_NAME_MAX + 1];
	int shape;

	if (f->indexed || !f->name || f->source == REQ_AMBIGUOUS)
		return;
	switch (sg_patterns_match(&a->o->patterns, f->name, strlen(f->name), req, other, &shape)) {
	case SG_MATCH_ONE:
		audit_files_attribute(a->files, f, req, REQ_PATTERN, shape);
		break;
	case SG_MATCH_AMBIGUOUS:
		f->source = REQ_AMBIGUOUS;
		a->ambiguous++;
		break;
	case SG_MATCH_NONE:
		break;
	}
}

static void on_create(struct audit *a, const struct sg_audit_create *e)
{
	struct audit_file *f;

	a->events++;
	if (!(f = audit_files_add(a->files, e->dev, e->ino)))
		return;
	f->creator = e->h.tgid;
	memcpy(f->comm, e->h.comm, sizeof(f->comm));
	f->comm[sizeof(f->comm) - 1] = '\0';
	f->created_ns = e->h.ts_ns;
}

static void on_tag(struct audit *a, const struct sg_audit_tag *e)
{
	struct audit_file *f = audit_files_find(a->files, sg_kdev(e->dev), e->ino);

	a->events++;
	/* The kernel side terminates the string; a request must still be one. */
	if (f && memchr(e->request, '\0', sizeof(e->request)) && !sg_reqid_invalid(e->request))
		audit_files_attribute(a->files, f, e->request, REQ_TAG, -1);
}

void audit_on_event(struct audit *a, const void *data, size_t size)
{
	const struct sg_audit_header *h = data;

	if (size < sizeof(*h))
		return;
	switch (h->type) {
	case SG_AUDIT_CREATE:
		if (size >= sizeof(struct sg_audit_create))
			on_create(a, data);
		break;
	case SG_AUDIT_TAG:
		if (size >= sizeof(struct sg_audit_tag))
			on_tag(a, data);
		break;
	}
}
