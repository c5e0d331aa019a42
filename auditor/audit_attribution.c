/* A followed file's request from its names (audit_attribution.h). */
#include "audit_attribution.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit_files.h"
#include "config.h"
#include "pattern.h"
#include "proc_env.h"
#include "reqid.h"
#include "text.h"

/* The root's own patterns, or NULL: the run's. */
static const struct audit_root_patterns *own(const struct audit_attribution *attr, int root)
{
	return root >= 0 && (unsigned)root < attr->nroots && attr->roots[root].set ? &attr->roots[root] : NULL;
}

/* Matches name with the patterns of root: the shape in at is the run's. */
static enum sg_match_result match(const struct audit_attribution *attr, int root, const char *name, char *req,
				  char *other, struct sg_match_at *at)
{
	const struct audit_root_patterns *rp = own(attr, root);
	enum sg_match_result m;

	if (!rp)
		return sg_patterns_match(attr->patterns, name, strlen(name), req, other, at);
	m = sg_patterns_match(rp->set, name, strlen(name), req, other, at);
	if (m == SG_MATCH_ONE)
		at->shape = rp->shapes[at->shape];
	return m;
}

/* Gives f, which has no request, the one the patterns give name. */
static void attribute_by(struct audit_attribution *attr, struct audit_file *f, const char *name)
{
	char req[SG_NAME_MAX + 1], other[SG_NAME_MAX + 1];
	struct sg_match_at at;

	if (f->indexed || f->source == REQ_AMBIGUOUS)
		return;
	switch (match(attr, f->root, name, req, other, &at)) {
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
	    match(attr, root, name, req, other, &at) != SG_MATCH_ONE ||
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
	return match(attr, f->root, f->name, req, other, &at) == SG_MATCH_ONE ? at.shape : -1;
}

/* The shape of a pod's pattern: the run's pattern of that text, else the
 * pods' one, made if there is room. */
static int8_t shape_of(struct audit_attribution *attr, const char *text)
{
	unsigned run = attr->patterns->count;

	for (unsigned i = 0; i < run; i++)
		if (strcmp(attr->patterns->patterns[i].text, text) == 0)
			return (int8_t)i;
	for (unsigned i = 0; i < attr->npod_shapes; i++)
		if (strcmp(attr->pod_shapes[i], text) == 0)
			return (int8_t)(run + i);
	if (run + attr->npod_shapes >= AUDIT_SHAPES_MAX)
		return AUDIT_SHAPE_POD;
	if (!attr->pod_shapes && !(attr->pod_shapes = calloc(AUDIT_SHAPES_MAX, sizeof(*attr->pod_shapes))))
		return AUDIT_SHAPE_POD;
	snprintf(attr->pod_shapes[attr->npod_shapes], sizeof(*attr->pod_shapes), "%s", text);
	return (int8_t)(run + attr->npod_shapes++);
}

/* The record of slot, the table grown to hold it; NULL when memory is short. */
static struct audit_root_patterns *record(struct audit_attribution *attr, int slot)
{
	if ((unsigned)slot >= attr->nroots) {
		unsigned n = (unsigned)slot + 16;
		struct audit_root_patterns *grown = realloc(attr->roots, n * sizeof(*grown));
		if (!grown)
			return NULL;
		memset(grown + attr->nroots, 0, (n - attr->nroots) * sizeof(*grown));
		attr->roots = grown;
		attr->nroots = n;
	}
	return &attr->roots[slot];
}

bool audit_attribution_learning(const struct audit_attribution *attr, int slot)
{
	return slot >= 0 && ((unsigned)slot >= attr->nroots || !attr->roots[slot].done);
}

/* The name of dir when it is one plain name in /dev/shm, else NULL. */
static const char *in_dev_shm(const char *dir)
{
	static const char shm[] = "/dev/shm/";
	const char *name = dir + sizeof(shm) - 1;

	if (strncmp(dir, shm, sizeof(shm) - 1) != 0)
		return NULL;
	return sg_reqid_invalid(name) ? NULL : name;
}

int audit_attribution_learn(struct audit_attribution *attr, int slot, pid_t pid, char *why, size_t whylen)
{
	char value[SG_MAX_PATTERNS * (SG_NAME_MAX + 1)], dir[SG_PATH_MAX + 1], err[200];
	struct audit_root_patterns *rp;
	struct sg_pattern_set *set;
	const char *name = NULL;
	bool new_dir;
	int n, d;

	if (slot < 0 || pid <= 0)
		return 0;
	if (!(rp = record(attr, slot)))
		return -ENOMEM;
	if (rp->done)
		return 0;
	n = sg_proc_env_get(pid, "SHMGUARD_PATTERNS", value, sizeof(value));
	d = sg_proc_env_get(pid, "SHMGUARD_ABORT_DIR", dir, sizeof(dir));
	new_dir = d > 0 && attr->abort_dirs && !rp->abort_name[0] && (name = in_dev_shm(dir));
	if (new_dir)
		snprintf(rp->abort_name, sizeof(rp->abort_name), "%s", name);
	if (n <= 0 && n != -E2BIG) { /* none there, or the process is gone or not readable */
		rp->done = ++rp->tries >= AUDIT_POD_ENV_TRIES;
		return new_dir;
	}
	rp->done = true;
	if (n == -E2BIG) {
		attr->pods_refused++;
		snprintf(why, whylen, "its SHMGUARD_PATTERNS (pid %d) is longer than %zu bytes", (int)pid, sizeof(value) - 1);
		return -E2BIG;
	}
	/* Its texts go into every report (JSON, XML): printable UTF-8 only. */
	for (const char *c = value; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			n = -EINVAL;
	if (n < 0 || !sg_utf8_valid(value)) {
		attr->pods_refused++;
		snprintf(why, whylen, "its SHMGUARD_PATTERNS (pid %d) is not printable UTF-8", (int)pid);
		return -EINVAL;
	}
	if (!(set = malloc(sizeof(*set))))
		return -ENOMEM;
	if (sg_patterns_parse(set, value, err, sizeof(err)) < 0) {
		free(set);
		attr->pods_refused++;
		snprintf(why, whylen, "its SHMGUARD_PATTERNS (pid %d) does not parse: %s", (int)pid, err);
		return -EINVAL;
	}
	for (unsigned i = 0; i < set->count; i++)
		rp->shapes[i] = shape_of(attr, set->patterns[i].text);
	rp->set = set;
	attr->pods_learnt++;
	return 1;
}

const char *audit_attribution_abort_name(const struct audit_attribution *attr, int slot)
{
	return slot >= 0 && (unsigned)slot < attr->nroots && attr->roots[slot].abort_name[0] ? attr->roots[slot].abort_name
											: NULL;
}

void audit_attribution_forget_root(struct audit_attribution *attr, int slot)
{
	if (slot < 0 || (unsigned)slot >= attr->nroots)
		return;
	free(attr->roots[slot].set);
	memset(&attr->roots[slot], 0, sizeof(attr->roots[slot]));
}

const char *audit_attribution_shape_text(const struct audit_attribution *attr, int shape)
{
	unsigned run = attr->patterns->count;

	if (shape == AUDIT_SHAPE_POD)
		return "(a pod's pattern)";
	if (shape < 0)
		return "(shim tag)";
	if ((unsigned)shape < run)
		return attr->patterns->patterns[shape].text;
	if ((unsigned)shape - run < attr->npod_shapes)
		return attr->pod_shapes[shape - run];
	return "(a pod's pattern)";
}

void audit_attribution_free(struct audit_attribution *attr)
{
	for (unsigned i = 0; i < attr->nroots; i++)
		free(attr->roots[i].set);
	free(attr->roots);
	free(attr->pod_shapes);
	attr->roots = NULL;
	attr->pod_shapes = NULL;
	attr->nroots = attr->npod_shapes = 0;
}
