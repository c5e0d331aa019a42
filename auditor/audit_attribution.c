/* A followed file's request from its names (audit_attribution.h). */
#include "audit_attribution.h"

#include <string.h>

#include "audit_files.h"
#include "config.h"
#include "pattern.h"

/* Gives f, which has no request, the one the patterns give name. */
static void attribute_by(struct audit_attribution *attr, struct audit_file *f, const char *name)
{
	char req[SG_NAME_MAX + 1], other[SG_NAME_MAX + 1];
	struct sg_match_at at;

	if (f->indexed || f->source == REQ_AMBIGUOUS)
		return;
	switch (sg_patterns_match(attr->patterns, name, strlen(name), req, other, &at)) {
	case SG_MATCH_ONE:
		audit_files_attribute(attr->files, f, req, REQ_PATTERN, at.shape);
		break;
	case SG_MATCH_AMBIGUOUS:
		f->source = REQ_AMBIGUOUS;
		attr->ambiguous++;
		break;
	case SG_MATCH_NONE:
		break;
	}
}

void audit_attribute_by_name(struct audit_attribution *attr, struct audit_file *f)
{
	if (f->name)
		attribute_by(attr, f, f->name);
}

/* A file's request follows its names.  The name a rename or a link gives
 * it replaces the request of the one before, when the patterns give that
 * name one; a name it had before, never looked at, still counts when the
 * new one gives none (a link, then the first name removed, before any
 * pass).  Any name it has gives a request it has none of.  The first name
 * is looked at by the next pass (the shim's xattr first).  A tag is exact
 * and stays. */
void audit_file_named(struct audit_attribution *attr, struct audit_file *f, int root, const char *name, bool renamed)
{
	char req[SG_NAME_MAX + 1], other[SG_NAME_MAX + 1], had[AUDIT_FILE_REQUEST_MAX];
	bool had_name = f->name != NULL;
	struct sg_match_at at;

	if (had_name && !renamed) {
		attribute_by(attr, f, name);
		return;
	}
	if (had_name && f->root == root && strcmp(f->name, name) == 0)
		return;
	if (had_name && !f->indexed)
		audit_attribute_by_name(attr, f); /* before the old name is overwritten */
	if (!audit_files_name(attr->files, f, root, name))
		return;
	if (!had_name || f->source == REQ_TAG ||
	    sg_patterns_match(attr->patterns, name, strlen(name), req, other, &at) != SG_MATCH_ONE ||
	    (f->indexed && strcmp(audit_file_request(f, had), req) == 0))
		return;
	audit_files_unattribute(attr->files, f);
	audit_files_attribute(attr->files, f, req, REQ_PATTERN, at.shape);
}

int audit_file_shape(const struct audit_attribution *attr, const struct audit_file *f)
{
	char req[SG_NAME_MAX + 1], other[SG_NAME_MAX + 1];
	struct sg_match_at at;

	if (f->source != REQ_TAG || !f->name)
		return f->shape;
	sg_patterns_match(attr->patterns, f->name, strlen(f->name), req, other, &at);
	return at.shape;
}
