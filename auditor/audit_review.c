/* Measuring what is left: a file still exists if its name directly in a
 * shm root still refers to it, or if some process still holds it open or
 * mapped after its unlink from such a root (it then still uses RAM).  Files
 * of subdirectories count in neither case.  Its allocated bytes are
 * st_blocks * 512, read through the name or through the holder's /proc
 * entry.
 *
 * The review that forgets freed files runs in cycles, a slice per turn of
 * the event loop so that its cost, which grows with the files followed,
 * never holds up the events: the roots' directories are read (a followed
 * file whose inode an entry names is linked, under that name), then every
 * file older than the cycle is looked at: those no entry named are checked
 * against the holders that /proc shows, read once that is over.  A file's
 * bytes are read (lstat) when it is first seen, and all of them again at
 * the end of the run: a directory entry costs far less than an lstat.  An
 * abort is measured (lstat and holders, then) at the end of the first cycle
 * that knows the request of every file created before its grace ended. */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "audit_engine.h"
#include "holders.h"
#include "journal.h"
#include "tag.h"
#include "journal_read.h"

/* A new cycle this long after the last one ended (sooner for an abort). */
#define REVIEW_S 1.0
/* But never sooner than the time its directory reads took, divided by this
 * share.  Reading a root's directory holds its lock, which every creation
 * and unlink there waits for: a workload on the same root slows by about
 * the share of the time the directory is being read, so the reads are
 * kept to a small share of it.  Large tables are therefore reviewed less
 * often, and their aborts measured that much later.  (The figures behind
 * the value: docs/performance.md.) */
#define READ_SHARE 0.015
/* While a cycle is under way: this much of it per step, then this long for
 * the events before the next slice (half a CPU at most), unless an abort
 * waits for the cycle's end and the directories have been read. */
#define SLICE_S 0.005
#define PAUSE_S 0.005
/* Reading the directories, shorter slices and longer pauses: a creation
 * that meets the lock held waits for the rest of the slice's reads. */
#define NAMING_SLICE_S 0.001
#define NAMING_PAUSE_S 0.009
/* The clock is read every this many files or directory entries. */
#define CLOCK_EVERY 64
/* The review reads journals between events: one journal's read is not cut
 * into slices, so each is read only when it is at most this (about 11,000
 * live records, about a millisecond).  The journal is the fallback of
 * attribution (the shim's USDT probe comes first); a root's journals cost at
 * most SG_JOURNALS_READ_MAX a cycle, planted ones a header each. */
#define JOURNAL_READ_MAX (1u << 20)

/* What a look at files needs from /proc, read once and only if needed. */
struct pass {
	struct audit *a;
	struct sg_holders holders;
	bool holders_read;
};

struct measured {
	bool exists, linked;
	uint64_t bytes;
	int64_t size;
	uint32_t holder;
	int root;
	const char *name;
};

struct suspect {
	uint32_t kdev;
	uint64_t ino;
};

/* A cycle: NAMING reads the roots' directories, CHECKING walks the table;
 * the files no entry named are settled at once against the holders. */
enum review_phase { REVIEW_IDLE, REVIEW_NAMING, REVIEW_CHECKING };

struct audit_review {
	enum review_phase phase;
	unsigned root; /* NAMING: the root whose directory is being read */
	uint32_t cycle; /* numbers the cycles: audit_file.seen */
	bool exact;     /* every linked file's bytes are read again */
	bool urgent;    /* an abort waits for this cycle (its walk runs without pause) */
	DIR *dir;
	bool in_dir; /* dir is the root's SG_JOURNAL_DIR, read after the root for its journals */
	uint64_t started_ns; /* CLOCK_MONOTONIC, as the events' times: newer files wait */
	/* The earliest birth of a file caught up since it began, UINT64_MAX none:
	 * it knows no file's request from then on. */
	uint64_t caught_up_from_ns;
	uint64_t reading_ns; /* time spent in NAMING so far: reading directories */
	double started_s, next_s, slice_end_s;
	double paced_s; /* no cycle before this (READ_SHARE) */
	struct suspect *suspects; /* files no name refers to, for the holders */
	size_t nsuspects, cap;
	size_t held_back; /* unnamed files found nowhere for the first time */
	/* The shim's ownership journals of each root, read with its directory:
	 * one per root slot as the cycle began (roots found since wait for the next). */
	struct sg_journals *journals;
	unsigned nroots;
	uint64_t tracked, unattributed, files;
	uint64_t aborted_held, live_pending, live_files;
};

/* The root whose directory held the name that /proc shows for h (unlinked
 * from there), or -1 (a subdirectory, or a directory gone since).  The
 * directory is compared by device and inode: a root may be named through a
 * symbolic link. */
static int root_of_holder(const struct audit *a, const struct sg_holder *h)
{
	char dir[PATH_MAX];
	struct stat st;

	if (!h->path || !h->name ||
	    snprintf(dir, sizeof(dir), "%.*s", (int)(h->name - 1 - h->path), h->path) >= (int)sizeof(dir) ||
	    stat(*dir ? dir : "/", &st) < 0)
		return -1;
	return audit_root_of_dir(a, sg_kdev(st.st_dev), st.st_ino);
}

/* A holder of (kdev, ino) that had it in a root, and that root. */
static const struct sg_holder *holder_in_root(struct pass *p, uint32_t kdev, uint64_t ino, int *root)
{
	const struct sg_holder *h;
	size_t n;

	if (!p->holders_read) {
		uint32_t *kdevs = calloc(p->a->root_table.nroots ? p->a->root_table.nroots : 1, sizeof(*kdevs));
		unsigned n = 0;
		for (unsigned r = 0; kdevs && r < p->a->root_table.nroots; r++)
			if (p->a->root_table.roots[r].in_use)
				kdevs[n++] = p->a->root_table.roots[r].kdev;
		if (p->a->holders.scan)
			p->a->holders.scan(p->a->holders.ctx, &p->holders, kdevs, n);
		else
			sg_holders_scan(&p->holders, kdevs, n, true);
		free(kdevs);
		p->holders_read = true;
	}
	h = sg_holders_find(&p->holders, kdev, ino, &n);
	for (size_t i = 0; i < n; i++)
		if ((*root = root_of_holder(p->a, &h[i])) >= 0)
			return &h[i];
	return NULL;
}

static void end_pass(struct pass *p)
{
	sg_holders_free(&p->holders);
	p->holders_read = false;
}

static bool stat_linked(struct pass *p, const struct audit_file *f, struct stat *st)
{
	char path[SG_PATH_MAX + SG_NAME_MAX + 2];

	if (f->root < 0 || !f->name || (unsigned)f->root >= p->a->root_table.nroots || !p->a->root_table.roots[f->root].in_use ||
	    p->a->root_table.roots[f->root].kdev != f->kdev)
		return false;
	snprintf(path, sizeof(path), "%s/%s", p->a->root_table.roots[f->root].path, f->name);
	return lstat(path, st) == 0 && st->st_ino == f->ino && sg_kdev(st->st_dev) == f->kdev;
}

static struct measured found(struct measured m, const struct stat *st)
{
	m.exists = true;
	m.bytes = (uint64_t)st->st_blocks * 512;
	m.size = st->st_size;
	return m;
}

/* f through its name, if that still refers to it. */
static struct measured measure_linked(struct pass *p, struct audit_file *f)
{
	struct measured m = {.root = f->root, .linked = true, .name = f->name};
	struct stat st;

	return stat_linked(p, f, &st) ? found(m, &st) : (struct measured){0};
}

/* f through a process that holds it after its unlink from a root. */
static struct measured measure_held(struct pass *p, struct audit_file *f)
{
	struct measured m = {0};
	const struct sg_holder *h = holder_in_root(p, f->kdev, f->ino, &m.root);
	struct stat st;

	if (!h || stat(h->stat_path, &st) < 0 || st.st_ino != f->ino)
		return m;
	m.holder = h->pid;
	m.name = f->name ? f->name : h->name;
	return found(m, &st);
}

static struct measured measure(struct pass *p, struct audit_file *f)
{
	struct measured m = measure_linked(p, f);

	return m.exists ? m : measure_held(p, f);
}

static void free_journals(struct audit_review *rv)
{
	for (unsigned r = 0; r < rv->nroots; r++)
		sg_journals_free(&rv->journals[r]);
	free(rv->journals);
	rv->journals = NULL;
	rv->nroots = 0;
}

/* A request for a file that has none yet where the USDT tag was missed (a
 * shim loaded before the audit began): the shim's journal, or its xattr
 * where nobody else could have written it, then the patterns. */
static void attribute(struct pass *p, struct audit_review *rv, struct audit_file *f, const struct measured *m)
{
	char path[SG_PATH_MAX + SG_NAME_MAX + 2], value[SG_TAG_MAX];
	const struct sg_journals *js;
	struct sg_tag tag;
	struct stat st;
	ssize_t n;

	if (f->indexed || f->source == REQ_AMBIGUOUS)
		return;
	if (m->linked && f->root >= 0 && (unsigned)f->root < rv->nroots && f->name) {
		snprintf(path, sizeof(path), "%s/%s", p->a->root_table.roots[f->root].path, f->name);
		js = &rv->journals[f->root];
		/* The owner and mode are looked up only for a claim or a tag. */
		if (sg_journals_claim_any(js, f->ino) && lstat(path, &st) == 0 && st.st_ino == f->ino &&
		    sg_journals_find(js, f->ino, st.st_uid, f->name,
				     sg_birth_ns(AT_FDCWD, path, AT_SYMLINK_NOFOLLOW), &tag)) {
			audit_files_attribute(p->a->files, f, tag.req, REQ_TAG, -1);
			return;
		}
		n = lgetxattr(path, SG_TAG_XATTR, value, sizeof(value));
		if (n > 0 && sg_tag_decode(&tag, value, (size_t)n) == 0 && lstat(path, &st) == 0 &&
		    st.st_ino == f->ino && sg_tag_trusted_mode(st.st_mode)) {
			audit_files_attribute(p->a->files, f, tag.req, REQ_TAG, -1);
			return;
		}
	}
	audit_attribute_by_name(&p->a->attribution, f);
}

/* A file that exists counts in the cycle's totals, with its request.  The
 * shim's ownership journals are its own bookkeeping: they do not count. */
static void count(struct pass *p, struct audit_review *rv, struct audit_file *f, const struct measured *m)
{
	struct audit_root *root = f->root >= 0 && (unsigned)f->root < p->a->root_table.nroots ? &p->a->root_table.roots[f->root] : NULL;

	if (!f->name && m->name)
		audit_files_name(p->a->files, f, m->root, m->name);
	f->bytes = m->bytes;
	f->measured = true;
	if (f->name && sg_journal_name(f->name))
		return;
	if (!f->looked_up) { /* once per name: a file with no request keeps none */
		attribute(p, rv, f, m);
		f->looked_up = true;
	}
	rv->tracked += m->bytes;
	rv->files++;
	audit_roots_count(p->a, f->root, m->bytes, 0);
	struct audit_workload *w = f->creator->workload;
	if (w) {
		w->next_tracked += m->bytes;
		w->next_files++;
		if (root)
			audit_workload_note_root(w, root->shown, root->id);
		if (f->indexed)
			w->root.attributed = true;
		else
			w->root.unattributed = true;
	}
	if (!f->indexed) {
		rv->unattributed += m->bytes;
		audit_roots_count(p->a, f->root, 0, m->bytes);
	} else if (audit_abort_of_file(p->a, f)) {
		rv->aborted_held += m->bytes;
		if (w)
			w->next_aborted_held += m->bytes;
	} else {
		rv->live_pending += m->bytes;
		rv->live_files++;
	}
}

/* A directory entry of root r: the followed file of that inode is linked
 * there, under that name. */
static void note_name(struct audit *a, struct audit_review *rv, unsigned r, const struct dirent *e)
{
	struct audit_file *f = audit_files_find(a->files, a->root_table.roots[r].kdev, e->d_ino);

	if (!f)
		return;
	f->seen = rv->cycle;
	if (f->root == (int)r && f->name && strcmp(f->name, e->d_name) == 0)
		return;
	audit_file_named(&a->attribution, f, (int)r, e->d_name, true);
	f->looked_up = false; /* its request is looked for under the new name */
}

/* NAMING until deadline; true when every root has been read. */
static bool name_files(struct audit *a, struct audit_review *rv, uint64_t deadline)
{
	struct dirent *e;
	unsigned n = 0;

	for (; rv->root < rv->nroots; rv->root++) {
		if (!rv->dir && (!a->root_table.roots[rv->root].in_use || !(rv->dir = opendir(a->root_table.roots[rv->root].path))))
			continue;
		while ((e = readdir(rv->dir))) {
			if ((e->d_type == DT_REG || e->d_type == DT_UNKNOWN) && sg_journal_name(e->d_name)) {
				struct sg_journals *js = &rv->journals[rv->root];
				if (sg_journals_add_bounded(js, dirfd(rv->dir), e->d_name, JOURNAL_READ_MAX, NULL) ==
				    SG_JOURNAL_READ)
					js->files[js->nfiles - 1].in_dir = rv->in_dir;
			}
			if ((e->d_type == DT_REG || e->d_type == DT_UNKNOWN) && !rv->in_dir)
				note_name(a, rv, rv->root, e);
			if (++n % CLOCK_EVERY == 0 && audit_clock_ns(a) >= deadline)
				return false;
		}
		/* Then the journals of the root's SG_JOURNAL_DIR, if trusted. */
		int jfd = rv->in_dir ? -1 : sg_journal_dir_open(dirfd(rv->dir));
		closedir(rv->dir);
		rv->dir = jfd >= 0 ? fdopendir(jfd) : NULL;
		if (jfd >= 0 && !rv->dir)
			close(jfd);
		if ((rv->in_dir = rv->dir != NULL)) {
			rv->root--; /* the same root again, from its directory */
			continue;
		}
		sg_journals_index(&rv->journals[rv->root]);
	}
	return true;
}

static void suspect(struct audit_review *rv, const struct audit_file *f)
{
	if (rv->nsuspects == rv->cap) {
		size_t cap = rv->cap ? rv->cap * 2 : 256;
		struct suspect *s = realloc(rv->suspects, cap * sizeof(*s));
		if (!s)
			return; /* kept: looked at again next cycle */
		rv->suspects = s;
		rv->cap = cap;
	}
	rv->suspects[rv->nsuspects++] = (struct suspect){f->kdev, f->ino};
}

/* CHECKING until deadline; true when the walk is over.  Files newer than
 * the cycle are left for the next one (the directories may predate them). */
static bool check_files(struct pass *p, struct audit_review *rv, uint64_t deadline)
{
	struct audit_file *f;
	struct measured m;
	unsigned n = 0;

	while ((f = audit_files_walk_next(p->a->files))) {
		if (f->created_ns < rv->started_ns) {
			/* An entry named it: linked, its bytes as last read.  Else
			 * (or for new bytes) its name is looked at: one an event
			 * gave may be newer than the directory read. */
			if (f->seen == rv->cycle && f->measured && !rv->exact)
				count(p, rv, f, &(struct measured){.exists = true, .linked = true, .root = f->root,
								   .name = f->name, .bytes = f->bytes});
			else if ((m = measure_linked(p, f)).exists)
				count(p, rv, f, &m);
			else
				suspect(rv, f);
		}
		if (++n % CLOCK_EVERY == 0 && audit_clock_ns(p->a) >= deadline)
			return false;
	}
	return true;
}

/* The end of the cycle: a file no entry named is forgotten unless some
 * process holds it.  The holders are read now, after the directories, so
 * that a file unlinked meanwhile but still held is not missed. */
static void settle_suspects(struct pass *p, struct audit_review *rv)
{
	for (size_t i = 0; i < rv->nsuspects; i++) {
		struct audit_file *f = audit_files_find(p->a->files, rv->suspects[i].kdev, rv->suspects[i].ino);
		struct measured m;

		if (!f || f->created_ns >= rv->started_ns)
			continue; /* gone, or a new file with a reused inode number */
		if ((m = measure_held(p, f)).exists) {
			count(p, rv, f, &m);
			continue;
		}
		/* A file never named may have been passed over by a directory
		 * read racing with other entries' creation and removal: it is
		 * forgotten only when the next cycle cannot find it either. */
		if (!f->name && (!f->missed || f->missed + 1 != rv->cycle)) {
			f->missed = rv->cycle;
			rv->held_back++;
			continue;
		}
		audit_file_freed(p->a, f);
		p->a->reviewed.freed_by_review++;
	}
	rv->nsuspects = 0;
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

	if (audit_abort_of_file(c->p->a, f) != c->ab) /* the same request in another pod */
		return;
	audit_abort_note_file(c->ab, f);
	if (!m.exists || !(l = calloc(1, sizeof(*l))))
		return;
	l->name = m.name ? strdup(m.name) : NULL;
	l->kdev = f->kdev;
	l->ino = f->ino;
	l->bytes = m.bytes;
	l->linked = m.linked;
	l->holder = m.holder;
	l->creator = f->creator->tgid;
	if ((l->creator_workload = f->creator->workload)) {
		audit_workload_hold(l->creator_workload);
		l->creator_workload->leaked_bytes += m.bytes;
		l->creator_workload->leaked_files++;
	}
	memcpy(l->comm, f->creator->comm, sizeof(l->comm));
	l->shape = audit_file_shape(&c->p->a->attribution, f);
	l->segment = m.size > 0;
	audit_abort_add_leftover(c->ab, l);
}

/* Whether ab's grace is over by until_s, and its files are where the
 * auditor can see them: a pod's tmpfs reported but not found yet holds it
 * back (audit_roots_unsearched). */
static bool measurable(const struct audit *a, const struct audit_abort *ab, double until_s)
{
	double grace_end = ab->marker_s + a->o->grace;

	return grace_end <= until_s && !audit_roots_unsearched(a, grace_end);
}

/* Measures the aborts (in marker order) measurable by until_s. */
static void measure_aborts(struct pass *p, double until_s)
{
	struct audit *a = p->a;

	for (struct audit_abort *ab; (ab = a->abort_set.unmeasured) && measurable(a, ab, until_s);) {
		struct abort_ctx c = {p, ab};

		if (audit_abort_is_cut_short(a, ab)) {
			audit_abort_cut_short(a, ab);
			continue;
		}
		audit_files_of_request(a->files, ab->request, measure_leftover, &c);
		audit_tags_count(a, ab);
		audit_abort_measured(a, ab);
	}
	audit_fold_measured(a);
}

struct audit_review *audit_review_new(void)
{
	struct audit_review *rv = calloc(1, sizeof(*rv));

	if (rv) {
		rv->next_s = REVIEW_S;
		rv->caught_up_from_ns = UINT64_MAX;
	}
	return rv;
}

void audit_review_free(struct audit_review *rv)
{
	if (!rv)
		return;
	if (rv->dir)
		closedir(rv->dir);
	free(rv->suspects);
	free_journals(rv);
	free(rv);
}

/* Whether an abort is measurable: it waits for the end of a cycle. */
static bool abort_waits(const struct audit *a, double now)
{
	return a->abort_set.unmeasured && measurable(a, a->abort_set.unmeasured, now);
}

double audit_review_due_s(const struct audit *a)
{
	const struct audit_review *rv = a->review;
	double now = audit_now_s(a), due = rv->next_s;

	if (rv->phase == REVIEW_CHECKING && (rv->urgent || abort_waits(a, now)))
		return 0;
	if (rv->phase != REVIEW_IDLE)
		return rv->slice_end_s + (rv->phase == REVIEW_NAMING ? NAMING_PAUSE_S : PAUSE_S);
	if (a->abort_set.unmeasured && a->abort_set.unmeasured->marker_s + a->o->grace < due && measurable(a, a->abort_set.unmeasured, INFINITY))
		due = a->abort_set.unmeasured->marker_s + a->o->grace;
	/* Freed files leave the table only at a cycle's end: not paced when
	 * the table nears --max-files, which would lose new files. */
	if (audit_files_count(a->files) >= a->o->max_files / 4 * 3)
		return due;
	return fmax(due, rv->paced_s);
}

/* Events of different CPUs reach the table in nearly, not exactly, the
 * order of their times: this much earlier is looked at too. */
#define ORDER_SLACK_NS 100000000ull

/* Until when the cycle knows every file's request: its start, or later if
 * no file it does not look at (newer than its start) is without a request
 * yet, up to the creation of the first such file. */
static double covered_until(const struct audit *a, const struct audit_review *rv)
{
	uint64_t until_ns = audit_clock_ns(a);
	double until_s;

	for (const struct audit_file *f = audit_files_newest(a->files);
	     f && f->created_ns + ORDER_SLACK_NS >= rv->started_ns; f = audit_files_older(a->files, f))
		if (f->created_ns >= rv->started_ns && !f->indexed && f->created_ns < until_ns)
			until_ns = f->created_ns;
	until_s = until_ns <= rv->started_ns ? rv->started_s : (until_ns - a->start_ns) / 1e9;
	/* Files caught up meanwhile were born before they joined the table,
	 * maybe before the cycle began. */
	if (rv->caught_up_from_ns != UINT64_MAX)
		until_s = fmin(until_s, rv->caught_up_from_ns > a->start_ns ? (rv->caught_up_from_ns - a->start_ns) / 1e9 : 0);
	return until_s;
}

void audit_review_caught_up(struct audit *a, uint64_t born_ns)
{
	struct audit_review *rv = a->review;

	if (rv && rv->phase != REVIEW_IDLE && born_ns < rv->caught_up_from_ns)
		rv->caught_up_from_ns = born_ns;
}

/* A new cycle; one begun again keeps the reading done so far on its account. */
static void start_cycle(struct audit *a)
{
	struct audit_review *rv = a->review;

	if (rv->dir)
		closedir(rv->dir);
	free_journals(rv);
	*rv = (struct audit_review){.phase = REVIEW_NAMING, .started_ns = audit_clock_ns(a), .caught_up_from_ns = UINT64_MAX,
				    .started_s = audit_now_s(a), .cycle = rv->cycle + 1, .suspects = rv->suspects,
				    .cap = rv->cap, .urgent = abort_waits(a, audit_now_s(a)),
				    .reading_ns = rv->phase == REVIEW_IDLE ? 0 : rv->reading_ns};
	/* Memory short: no directory is read this cycle, each file is looked
	 * at through its name instead (slower, as right). */
	if ((rv->journals = calloc(a->root_table.nroots ? a->root_table.nroots : 1, sizeof(*rv->journals))))
		rv->nroots = a->root_table.nroots;
	audit_roots_count_begin(a);
}

/* Works on the cycle until deadline (CLOCK_MONOTONIC); true at its end. */
static bool advance(struct audit *a, struct pass *p, uint64_t deadline)
{
	struct audit_review *rv = a->review;

	if (rv->phase == REVIEW_NAMING) {
		uint64_t begun = audit_clock_ns(a);
		bool read = name_files(a, rv, deadline);

		rv->reading_ns += audit_clock_ns(a) - begun;
		if (!read)
			return false;
		rv->phase = REVIEW_CHECKING;
		audit_files_walk_begin(a->files);
	}
	return check_files(p, rv, deadline);
}

/* Works on the cycle until deadline; at its end, the totals are published,
 * the aborts due by its start measured and the next cycle paced. */
static void work(struct audit *a, uint64_t deadline)
{
	struct audit_review *rv = a->review;
	struct pass p = {.a = a};

	if (!advance(a, &p, deadline))
		return;
	settle_suspects(&p, rv);
	a->reviewed.tracked = rv->tracked;
	a->reviewed.unattributed = rv->unattributed;
	a->reviewed.files_left = rv->files;
	a->reviewed.aborted_held = rv->aborted_held;
	a->reviewed.live_pending = rv->live_pending;
	a->reviewed.live_files = rv->live_files;
	audit_roots_count_end(a);
	a->reviewed.cycles++;
	a->reviewed.last_review_s = audit_now_s(a);
	a->reviewed.last_review_duration_s = a->reviewed.last_review_s - rv->started_s;
	measure_aborts(&p, covered_until(a, rv));
	end_pass(&p);
	audit_workloads_cycle_end(&a->workloads, a->reviewed.last_review_s);
	audit_fold_sweep(a);
	rv->phase = REVIEW_IDLE;
	rv->next_s = audit_now_s(a) + REVIEW_S;
	rv->paced_s = rv->started_s + rv->reading_ns / 1e9 / READ_SHARE;
}

void audit_review_step(struct audit *a)
{
	struct audit_review *rv = a->review;
	double now = audit_now_s(a);

	if (now < audit_review_due_s(a))
		return;
	/* A cycle begun before an abort's grace ended that cannot tell the
	 * requests of the files made since begins again, once. */
	if (rv->phase != REVIEW_IDLE && !rv->urgent && abort_waits(a, now)) {
		rv->urgent = true;
		if (covered_until(a, rv) < a->abort_set.unmeasured->marker_s + a->o->grace)
			start_cycle(a);
	}
	if (rv->phase == REVIEW_IDLE)
		start_cycle(a);
	work(a, audit_clock_ns(a) + (uint64_t)((rv->phase == REVIEW_NAMING ? NAMING_SLICE_S : SLICE_S) * 1e9));
	rv->slice_end_s = audit_now_s(a);
}

void audit_review_finish(struct audit *a)
{
	struct pass p = {.a = a};

	if (a->review->phase != REVIEW_IDLE)
		work(a, UINT64_MAX);
	/* A whole cycle that begins now, with every file's bytes; again if
	 * it held back files it could not find, so that they are counted or
	 * forgotten. */
	for (int cycles = 0; cycles < 2 && (cycles == 0 || a->review->held_back); cycles++) {
		start_cycle(a);
		a->review->exact = true;
		work(a, UINT64_MAX);
	}
	measure_aborts(&p, INFINITY);
	end_pass(&p);
}
