/* Measuring what is left: a file still exists if its name still refers to
 * it, or if some process still holds it open or mapped after its unlink
 * (it then still uses RAM).  Its allocated bytes are st_blocks * 512, read
 * through the name or through the holder's /proc entry.  Each pass reads
 * the roots and /proc once, and only when it needs them. */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "audit.h"
#include "clock.h"
#include "holders.h"
#include "tag.h"

struct named {
	uint64_t ino;
	char *name;
};

struct pass {
	struct audit *a;
	struct named *dir[SG_MAX_ROOTS];
	size_t ndir[SG_MAX_ROOTS];
	bool dirs_read;
	struct sg_holders holders;
	bool holders_read;
	uint64_t started_ns; /* CLOCK_MONOTONIC, as the events' times */
	uint64_t tracked, unattributed, files; /* what review() found */
};

struct measured {
	bool exists, linked;
	uint64_t bytes;
	int64_t size;
	uint32_t holder;
	const char *name;
};

static int by_ino(const void *x, const void *y)
{
	const struct named *a = x, *b = y;
	return (a->ino > b->ino) - (a->ino < b->ino);
}

static void read_dirs(struct pass *p)
{
	p->dirs_read = true;
	for (unsigned r = 0; r < p->a->nroots; r++) {
		DIR *d = opendir(p->a->roots[r].path);
		struct dirent *e;
		size_t cap = 0;

		while (d && (e = readdir(d))) {
			if (e->d_type != DT_REG && e->d_type != DT_UNKNOWN)
				continue;
			if (p->ndir[r] == cap) {
				cap = cap ? cap * 2 : 256;
				struct named *n = realloc(p->dir[r], cap * sizeof(*n));
				if (!n)
					break;
				p->dir[r] = n;
			}
			p->dir[r][p->ndir[r]++] = (struct named){e->d_ino, strdup(e->d_name)};
		}
		if (d)
			closedir(d);
		if (p->ndir[r])
			qsort(p->dir[r], p->ndir[r], sizeof(struct named), by_ino);
	}
}

static const char *dir_name(struct pass *p, unsigned r, uint64_t ino)
{
	struct named key = {.ino = ino}, *hit;

	if (!p->dirs_read)
		read_dirs(p);
	hit = p->ndir[r] ? bsearch(&key, p->dir[r], p->ndir[r], sizeof(key), by_ino) : NULL;
	return hit ? hit->name : NULL;
}

static int root_by_kdev(const struct audit *a, uint32_t kdev)
{
	for (unsigned r = 0; r < a->nroots; r++)
		if (a->roots[r].kdev == kdev)
			return (int)r;
	return -1;
}

static const struct sg_holder *holder_of(struct pass *p, uint32_t kdev, uint64_t ino)
{
	size_t n;

	if (!p->holders_read) {
		uint32_t kdevs[SG_MAX_ROOTS];
		for (unsigned r = 0; r < p->a->nroots; r++)
			kdevs[r] = p->a->roots[r].kdev;
		sg_holders_scan(&p->holders, kdevs, p->a->nroots, true);
		p->holders_read = true;
	}
	return sg_holders_find(&p->holders, kdev, ino, &n);
}

static bool stat_linked(struct pass *p, const struct audit_file *f, int root, const char *name, struct stat *st)
{
	char path[SG_PATH_MAX + SG_NAME_MAX + 2];

	snprintf(path, sizeof(path), "%s/%s", p->a->roots[root].path, name);
	return lstat(path, st) == 0 && st->st_ino == f->ino && sg_kdev(st->st_dev) == f->kdev;
}

/* Whether f is still linked: by the last name the events gave, else by what
 * the directories of the roots on its device say. */
static bool find_linked(struct pass *p, struct audit_file *f, struct stat *st)
{
	const char *name;

	if (f->root >= 0 && f->name && stat_linked(p, f, f->root, f->name, st))
		return true;
	for (unsigned r = 0; r < p->a->nroots; r++) {
		if (p->a->roots[r].kdev != f->kdev || !(name = dir_name(p, r, f->ino)) ||
		    !stat_linked(p, f, (int)r, name, st))
			continue;
		audit_file_named(p->a, f, (int)r, name, true);
		return true;
	}
	return false;
}

static struct measured measure(struct pass *p, struct audit_file *f)
{
	struct measured m = {0};
	struct stat st;

	if (find_linked(p, f, &st)) {
		m.linked = true;
		m.name = f->name;
	} else {
		const struct sg_holder *h = holder_of(p, f->kdev, f->ino);
		if (!h || stat(h->stat_path, &st) < 0 || st.st_ino != f->ino)
			return m;
		m.holder = h->pid;
		m.name = f->name ? f->name : h->name;
	}
	m.exists = true;
	m.bytes = (uint64_t)st.st_blocks * 512;
	m.size = st.st_size;
	return m;
}

/* A request for a file that has none yet: the shim's xattr where the USDT
 * tag was missed (a shim loaded before the audit began), then the patterns. */
static void attribute(struct pass *p, struct audit_file *f, const struct measured *m)
{
	char path[SG_PATH_MAX + SG_NAME_MAX + 2], value[SG_TAG_MAX];
	struct sg_tag tag;
	ssize_t n;

	if (f->indexed || f->source == REQ_AMBIGUOUS)
		return;
	if (m->linked) {
		snprintf(path, sizeof(path), "%s/%s", p->a->roots[f->root].path, f->name);
		n = lgetxattr(path, SG_TAG_XATTR, value, sizeof(value));
		if (n > 0 && sg_tag_decode(&tag, value, (size_t)n) == 0) {
			audit_files_attribute(p->a->files, f, tag.req, REQ_TAG, -1);
			return;
		}
	}
	audit_attribute_by_name(p->a, f);
}

/* One look at a file: a file that is neither linked nor held is freed and
 * forgotten (the table holds what still exists); the others get their
 * request and count in the totals.  Files newer than the pass are left for
 * the next one: the directory snapshot may predate them. */
static void review(struct audit_file *f, void *opaque)
{
	struct pass *p = opaque;
	struct measured m;

	if (f->created_ns >= p->started_ns)
		return;
	m = measure(p, f);
	if (!m.exists) {
		audit_files_remove(p->a->files, f);
		return;
	}
	if (!f->name && m.name && (f->name = strdup(m.name)))
		f->root = root_by_kdev(p->a, f->kdev);
	attribute(p, f, &m);
	p->tracked += m.bytes;
	p->files++;
	if (!f->indexed)
		p->unattributed += m.bytes;
}

double audit_now_s(const struct audit *a)
{
	return (sg_monotonic_ns() - a->start_ns) / 1e9;
}

static void begin_pass(struct pass *p, struct audit *a)
{
	*p = (struct pass){.a = a, .started_ns = sg_monotonic_ns()};
	audit_files_each(a->files, review, p);
}

static void end_pass(struct pass *p)
{
	for (unsigned r = 0; r < SG_MAX_ROOTS; r++) {
		for (size_t i = 0; i < p->ndir[r]; i++)
			free(p->dir[r][i].name);
		free(p->dir[r]);
	}
	sg_holders_free(&p->holders);
}

struct abort_ctx {
	struct pass *p;
	struct audit_abort *ab;
};

static void measure_leftover(struct audit_file *f, void *opaque)
{
	struct abort_ctx *c = opaque;
	struct measured m = measure(c->p, f);
	struct audit_leftover *l;

	if (!m.exists || !(l = calloc(1, sizeof(*l))))
		return;
	l->name = m.name ? strdup(m.name) : NULL;
	l->kdev = f->kdev;
	l->ino = f->ino;
	l->bytes = m.bytes;
	l->linked = m.linked;
	l->holder = m.holder;
	l->creator = f->creator;
	memcpy(l->comm, f->comm, sizeof(l->comm));
	l->shape = f->shape;
	l->segment = m.size > 0;
	l->next = c->ab->leftovers;
	c->ab->leftovers = l;
	c->ab->leaked_bytes += m.bytes;
	c->ab->leaked_files++;
	c->ab->leaked_segments += l->segment;
}

void audit_measure_due(struct audit *a, bool all)
{
	double now = audit_now_s(a);
	struct pass p;
	bool reviewed = false;

	for (struct audit_abort *ab = a->aborts; ab; ab = ab->next) {
		if (ab->measured || (!all && ab->marker_s + a->o->grace > now))
			continue;
		if (!reviewed) {
			begin_pass(&p, a);
			reviewed = true;
		}
		struct abort_ctx c = {&p, ab};
		audit_files_of_request(a->files, ab->request, measure_leftover, &c);
		ab->measured = true;
	}
	if (reviewed)
		end_pass(&p);
}

void audit_review(struct audit *a, uint64_t *tracked, uint64_t *unattributed, uint64_t *files_left)
{
	struct pass p;

	begin_pass(&p, a);
	end_pass(&p);
	*tracked = p.tracked;
	*unattributed = p.unattributed;
	*files_left = p.files;
}
