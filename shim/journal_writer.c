#include "journal_writer.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "journal.h"
#include "log.h"
#include "real.h"
#include "roots.h"
#include "state.h"

/* A slot names a root, the writer's generation and a record's first slot:
 * (root + 1) << 28 | epoch << 21 | index.  A record of a journal this
 * process no longer writes (a raw fork's child drops its parent's) is never
 * freed in the one it writes now. */
#define SLOT_ROOT_SHIFT 28
#define SLOT_EPOCH_SHIFT 21
#define SLOT_INDEX_MASK ((1u << SLOT_EPOCH_SHIFT) - 1)
#define EPOCH_MASK 0x7fu
/* The file grows and shrinks in pages of two blocks, its holes are pages. */
#define PAGE 4096u
#define PAGE_BLOCKS (PAGE / SG_JOURNAL_BLOCK)
_Static_assert(SG_JOURNAL_MAX_BYTES / SG_JOURNAL_SLOT <= SLOT_INDEX_MASK + 1, "a slot index fits");
_Static_assert(SG_MAX_ROOTS < 15, "a root fits");

/* Empty pages kept for the next records before they are given back. */
#define IDLE_KEPT 16
/* A journal takes at most this share of its root, and one growth at most
 * a quarter of the root's free space: that space is the program's. */
#define ROOT_SHARE 16
/* Creations let pass, at most, before a journal that could not be made or
 * grown is tried again. */
#define RETRY_MAX 1024

/* No descriptor is kept: the program may close or reuse any number (a
 * closefrom, a dup2), and growing or shrinking reopens the journal by name
 * and checks it is still ours.  Where the records go is decided here, in
 * the process's memory: block by block, a bit per slot (lowest first, so
 * that the last blocks empty and can be given back). */
struct writer {
	bool opened; /* base is a journal (else: none yet, or it failed) */
	bool done;   /* removed at exit: nothing more is recorded */
	bool no_punch; /* the filesystem cannot punch holes (ramfs) */
	pid_t pid;   /* the process it speaks for */
	char *base;  /* the mapping: header, then records */
	size_t blocks; /* blocks mapped: the file's size (whole pages) */
	size_t top;    /* blocks up to the last one holding a record (at least 1) */
	uint64_t *taken; /* per block: bit i, slot i holds (part of) a record or the header */
	uint8_t *hole;   /* per block (both of a page alike): given back, to be reserved again */
	size_t map_cap;  /* blocks taken and hole have room for */
	size_t idle;     /* empty pages still reserved */
	size_t idle_kept; /* of them, those that could not be given back (inside, without holes) */
	/* No block below hint[n] has n free slots in a row.  Only the spans
	 * asked for so far (up to max_span, two or three for most names) are
	 * kept up, in order (hint[n] <= hint[n + 1], as a run of n + 1 free
	 * slots holds one of n): a release lowers only those above its block,
	 * from the top down. */
	size_t hint[SG_JOURNAL_MAX_SPAN + 1];
	unsigned max_span;
	unsigned retry_in, backoff; /* creations to let pass before the next try */
	dev_t dev;
	ino_t ino;
	bool in_dir;     /* in the root's SG_JOURNAL_DIR, not the root */
	size_t name_off; /* where its name starts in path, after its directory's */
	char path[SG_PATH_MAX + 64];
};

/* Guarded by the registry's lock, which every caller holds (journal_writer.h). */
static struct writer writers[SG_MAX_ROOTS];
static unsigned epoch;
static bool said_failed, said_share, said_again, said_dir;

static struct sg_journal_head *head_of(struct writer *w)
{
	return (struct sg_journal_head *)w->base;
}

static void *slot_at(struct writer *w, size_t idx)
{
	return w->base + idx * SG_JOURNAL_SLOT;
}

/* Gives bytes from..to of the journal their pages before the mapping
 * touches them: a write into a page a full tmpfs cannot supply would be
 * SIGBUS in the program, where this returns -ENOSPC.  (ramfs has no
 * fallocate, and no size limit either: writing zeros does.)  0 or a
 * negative errno. */
static int reserve(int fd, size_t from, size_t to)
{
	static const char zeros[4096];

	if (fallocate(fd, 0, (off_t)from, (off_t)(to - from)) == 0)
		return 0;
	if (errno != EOPNOTSUPP)
		return -errno;
	while (from < to) {
		ssize_t n = pwrite(fd, zeros, to - from < sizeof(zeros) ? to - from : sizeof(zeros), (off_t)from);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		from += (size_t)n;
	}
	return 0;
}

/* Whether the journal may take `more` bytes of the root beside the `size`
 * it has: the program's own files come first. */
static bool may_take(int fd, size_t size, size_t more)
{
	struct statvfs sv;

	if (fstatvfs(fd, &sv) < 0 || sv.f_blocks == 0) /* ramfs: no size, no limit */
		return true;
	return size + more <= (uint64_t)sv.f_blocks * sv.f_frsize / ROOT_SHARE &&
	       more <= (uint64_t)sv.f_bavail * sv.f_frsize / 4;
}

/* After a failure: the next try comes after 1, 2, 4 ... RETRY_MAX creations. */
static void back_off(struct writer *w)
{
	w->backoff = w->backoff ? (w->backoff * 2 > RETRY_MAX ? RETRY_MAX : w->backoff * 2) : 1;
	w->retry_in = w->backoff;
}

/* err: a negative errno. */
static void fail(struct writer *w, unsigned k, const char *what, int err)
{
	back_off(w);
	sg_log_once(&said_failed, SG_LOG_WARN,
		    "cannot keep an ownership journal in %s (%s: %s); tried again at later creations, until then "
		    "this process sweeps its own segments, but other processes, shmguard ls and sweep do not know "
		    "whose they are",
		    sg_cfg.roots.dir[k], what, strerror(-err));
}

/* Opens dir, a root or (sub) its SG_JOURNAL_DIR, to hold a journal: the
 * latter never through a symlink and only while it is trusted (journal.h;
 * -EPERM when it is not).  A descriptor or a negative errno.  O_PATH: a
 * root others may write in but not list (1733) is as good a root as any. */
static int open_dir(const char *dir, bool sub)
{
	struct stat st;
	int fd = sg_real.open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC | (sub ? O_NOFOLLOW : 0));

	if (fd < 0)
		return errno == ELOOP || errno == ENOTDIR ? -EPERM : -errno;
	if (sub && (fstat(fd, &st) < 0 || !sg_journal_dir_trusted(&st))) {
		sg_real.close(fd);
		return -EPERM;
	}
	return fd;
}

/* The directory w's journal is in, opened afresh and checked again: the
 * name in it is opened or removed only through this descriptor, so that a
 * symlink put in SG_JOURNAL_DIR's place is never followed. */
static int open_home(const struct writer *w)
{
	char dir[sizeof(w->path)];

	memcpy(dir, w->path, w->name_off - 1);
	dir[w->name_off - 1] = '\0';
	return open_dir(dir, w->in_dir);
}

/* The journal by name, if it still is ours; else a negative errno (-ESTALE:
 * the name is no longer our journal). */
static int reopen(struct writer *w)
{
	struct stat st;
	int dfd = open_home(w), fd;

	if (dfd < 0)
		return dfd;
	fd = sg_real.openat(dfd, w->path + w->name_off, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		fd = -errno;
	sg_real.close(dfd);
	if (fd < 0)
		return fd;
	if (fstat(fd, &st) < 0 || st.st_dev != w->dev || st.st_ino != w->ino) {
		sg_real.close(fd);
		return -ESTALE;
	}
	return fd;
}

/* Room in the bookkeeping for blocks blocks (anonymous memory, no malloc:
 * this runs in the program's creating call).  0 or a negative errno. */
static int book_room(struct writer *w, size_t blocks)
{
	size_t cap = w->map_cap ? w->map_cap : 64;
	void *mem;

	if (blocks <= w->map_cap)
		return 0;
	while (cap < blocks)
		cap *= 2;
	mem = sg_real.mmap(NULL, cap * 9, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED)
		return -errno;
	if (w->taken) {
		memcpy(mem, w->taken, w->map_cap * 8);
		memcpy((char *)mem + cap * 8, w->hole, w->map_cap);
		sg_real.munmap(w->taken, w->map_cap * 9);
	}
	w->taken = mem;
	w->hole = (uint8_t *)mem + cap * 8;
	w->map_cap = cap;
	return 0;
}

static void set_top(struct writer *w, size_t top)
{
	w->top = top;
	__atomic_store_n(&head_of(w)->slots_used, (uint32_t)(top * SG_JOURNAL_BLOCK_SLOTS), __ATOMIC_RELEASE);
}

/* Where root k's journal goes: into its SG_JOURNAL_DIR if it is trusted,
 * else into the root (w->path, w->name_off and w->in_dir say which).  A
 * descriptor of that directory, or a negative errno. */
static int choose_home(struct writer *w, unsigned k)
{
	const char *root = sg_cfg.roots.dir[k];
	int dfd;

	snprintf(w->path, sizeof(w->path), "%s/" SG_JOURNAL_DIR, root);
	w->in_dir = true;
	if ((dfd = open_dir(w->path, true)) >= 0)
		goto found;
	if (dfd == -EPERM)
		sg_log_once(&said_dir, SG_LOG_WARN,
			    "%s is not a directory owned by root with mode 1777: journals stay in %s", w->path, root);
	snprintf(w->path, sizeof(w->path), "%s", root);
	w->in_dir = false;
	if ((dfd = open_dir(w->path, false)) < 0)
		return dfd;
found:
	w->name_off = strlen(w->path) + 1;
	return dfd;
}

/* Creates the journal: a new file of our own (O_EXCL, never through a
 * symlink), readable by all and writable by us alone, header first.
 * 0, or a negative errno (said once). */
static int open_writer(struct writer *w, unsigned k, const struct sg_self *self)
{
	struct sg_journal_head head;
	struct timespec now;
	struct stat st;
	void *base;
	int dfd, fd = -1, err;

	clock_gettime(CLOCK_REALTIME, &now);
	if ((dfd = choose_home(w, k)) < 0) {
		fail(w, k, "open the directory", dfd);
		return dfd;
	}
	/* A random part, so that nobody can take the name beforehand. */
	for (unsigned n = 0; fd < 0 && n < 16; n++) {
		uint64_t r;
		if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != sizeof(r))
			r = (uint64_t)now.tv_nsec * 0x9e3779b97f4a7c15ull ^ (uint64_t)(uintptr_t)&r ^ n;
		snprintf(w->path + w->name_off - 1, sizeof(w->path) - (w->name_off - 1), "/" SG_JOURNAL_PREFIX "%d-%016llx",
			 (int)self->pid, (unsigned long long)r);
		fd = sg_real.openat(dfd, w->path + w->name_off, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
				    0644);
		if (fd < 0 && errno != EEXIST)
			break;
	}
	if (fd < 0) {
		err = -errno;
		sg_real.close(dfd);
		fail(w, k, "create", err);
		return err;
	}
	if (!may_take(fd, 0, PAGE)) {
		err = -ENOSPC;
		goto undo;
	}
	if (fchmod(fd, 0644) < 0 || fstat(fd, &st) < 0) {
		err = -errno;
		goto undo;
	}
	if ((err = reserve(fd, 0, PAGE)) < 0 || (err = book_room(w, PAGE_BLOCKS)) < 0)
		goto undo;
	base = sg_real.mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (base == MAP_FAILED) {
		err = -errno;
		goto undo;
	}
	sg_journal_head_init(&head, self->pid, self->start_ticks, self->pidns,
			     (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec);
	memcpy(base, &head, sizeof(head));
	sg_real.close(fd);
	sg_real.close(dfd);
	w->base = base;
	w->blocks = PAGE_BLOCKS;
	memset(w->taken, 0, PAGE_BLOCKS * sizeof(*w->taken));
	memset(w->hole, 0, PAGE_BLOCKS);
	w->taken[0] = (1ull << SG_JOURNAL_HEAD_SLOTS) - 1; /* the header */
	memset(w->hint, 0, sizeof(w->hint));
	w->max_span = 0;
	w->idle = w->idle_kept = 0;
	set_top(w, 1);
	w->dev = st.st_dev;
	w->ino = st.st_ino;
	w->pid = self->pid;
	w->opened = true;
	w->backoff = 0;
	return 0;
undo:
	fail(w, k, "set up", err);
	sg_real.unlinkat(dfd, w->path + w->name_off, 0); /* ours: made with O_EXCL a moment ago */
	sg_real.close(fd);
	sg_real.close(dfd);
	return err;
}

/* More pages at the end: an eighth more (at least a page), or one where
 * the root's share allows no more.  An eighth: 100,000 live records leave
 * at most 12% of the journal unused.  0, or a negative errno (said once;
 * -ENOSPC when the root's share allows no more). */
static int grow(struct writer *w, unsigned k)
{
	size_t old = w->blocks * SG_JOURNAL_BLOCK, more = (old / 8 + PAGE - 1) / PAGE * PAGE, blocks;
	bool refused = false;
	void *base;
	int fd = -1, ret;

	if (old + more > SG_JOURNAL_MAX_BYTES)
		more = SG_JOURNAL_MAX_BYTES - old;
	if (!more) {
		ret = -EFBIG;
		goto cleanup;
	}
	if ((ret = fd = reopen(w)) < 0)
		goto cleanup;
	if (!may_take(fd, old, more)) {
		more = PAGE;
		if (!may_take(fd, old, more)) {
			sg_log_once(&said_share, SG_LOG_WARN,
				    "the ownership journal in %s stops at %zu KiB: more would take over 1/%d of the "
				    "root or a quarter of its free space, which the program needs; later files are "
				    "not recorded in it until some are gone",
				    sg_cfg.roots.dir[k], old >> 10, ROOT_SHARE);
			refused = true;
			ret = -ENOSPC;
			goto cleanup;
		}
	}
	blocks = (old + more) / SG_JOURNAL_BLOCK;
	if ((ret = book_room(w, blocks)) < 0 || (ret = reserve(fd, old, old + more)) < 0)
		goto cleanup;
	base = mremap(w->base, old, old + more, MREMAP_MAYMOVE);
	if (base == MAP_FAILED) {
		ret = -errno;
		if (ftruncate(fd, (off_t)old) < 0) /* the pages back to the root */
			(void)0;
		goto cleanup;
	}
	memset(w->taken + w->blocks, 0, (blocks - w->blocks) * sizeof(*w->taken));
	memset(w->hole + w->blocks, 0, blocks - w->blocks);
	w->idle += (blocks - w->blocks) / PAGE_BLOCKS;
	w->base = base;
	w->blocks = blocks;
	ret = 0;
cleanup:
	if (ret < 0 && !refused)
		sg_log_once(&said_failed, SG_LOG_WARN, "the ownership journal in %s cannot grow (%s): later files are not "
			    "recorded in it", sg_cfg.roots.dir[k], strerror(-ret));
	if (fd >= 0)
		sg_real.close(fd);
	return ret;
}

/* The first slot of n free ones in a row in a block's bits, or -1. */
static int run_of(uint64_t taken, unsigned n)
{
	uint64_t free_from = ~taken;

	for (unsigned i = 1; i < n && free_from; i++)
		free_from &= free_from >> 1;
	return free_from ? __builtin_ctzll(free_from) : -1;
}

static bool page_empty(const struct writer *w, size_t page)
{
	return !w->taken[page * PAGE_BLOCKS] && !w->taken[page * PAGE_BLOCKS + 1];
}

/* Block b's page, given back, reserved again; false if it cannot be. */
static __attribute__((noinline)) bool unhole(struct writer *w, size_t b)
{
	size_t page = b / PAGE_BLOCKS;
	int fd = reopen(w);
	bool ok = fd >= 0 && may_take(fd, w->blocks * SG_JOURNAL_BLOCK, PAGE) &&
		  reserve(fd, page * PAGE, (page + 1) * PAGE) == 0;

	if (fd >= 0)
		sg_real.close(fd);
	if (!ok)
		return false;
	memset(w->hole + page * PAGE_BLOCKS, 0, PAGE_BLOCKS);
	w->idle++;
	return true;
}

/* No block below b has n free slots in a row, nor more. */
static void raise_hints(struct writer *w, unsigned n, size_t b)
{
	for (unsigned m = n; m <= w->max_span && w->hint[m] < b; m++)
		w->hint[m] = b;
}

/* The lowest n free slots in a row, reserving their page again if it was
 * given back; -1 when there are none. */
static long find_room(struct writer *w, unsigned n)
{
	for (; w->max_span < n; w->max_span++)
		w->hint[w->max_span + 1] = w->hint[w->max_span];
	for (size_t b = w->hint[n]; b < w->blocks; b++) {
		int at = run_of(w->taken[b], n);
		if (at < 0)
			continue;
		raise_hints(w, n, b);
		if (w->hole[b] && !unhole(w, b))
			return -1;
		return (long)(b * SG_JOURNAL_BLOCK_SLOTS + (size_t)at);
	}
	raise_hints(w, n, w->blocks);
	return -1;
}

static void take(struct writer *w, size_t idx, unsigned n)
{
	size_t b = idx / SG_JOURNAL_BLOCK_SLOTS;

	if (page_empty(w, b / PAGE_BLOCKS) && --w->idle < w->idle_kept)
		w->idle_kept = w->idle;
	w->taken[b] |= ((1ull << n) - 1) << (idx % SG_JOURNAL_BLOCK_SLOTS);
	if (b + 1 > w->top)
		set_top(w, b + 1); /* before the record's seal: a reader reads that far */
}

/* Gives the root back the journal's empty pages: the tail by truncating,
 * those inside by punching holes.  Only once IDLE_KEPT are empty: a
 * program that creates and unlinks in turn keeps its next pages. */
static void give_back(struct writer *w)
{
	size_t keep = (w->top + PAGE_BLOCKS - 1) / PAGE_BLOCKS * PAGE_BLOCKS;
	int fd = reopen(w);

	if (fd < 0)
		return;
	if (keep < w->blocks && ftruncate(fd, (off_t)(keep * SG_JOURNAL_BLOCK)) == 0) {
		void *base = mremap(w->base, w->blocks * SG_JOURNAL_BLOCK, keep * SG_JOURNAL_BLOCK, 0);
		if (base != MAP_FAILED) {
			for (size_t b = keep; b < w->blocks; b += PAGE_BLOCKS)
				w->idle -= !w->hole[b];
			w->base = base;
			w->blocks = keep;
		}
	}
	for (size_t page = 1; page < w->blocks / PAGE_BLOCKS && !w->no_punch; page++) {
		if (!page_empty(w, page) || w->hole[page * PAGE_BLOCKS])
			continue;
		if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)(page * PAGE), PAGE) < 0) {
			w->no_punch = errno == EOPNOTSUPP;
			break;
		}
		memset(w->hole + page * PAGE_BLOCKS, 1, PAGE_BLOCKS);
		w->idle--;
	}
	w->idle_kept = w->idle;
	sg_real.close(fd);
}

/* Block b holds no record any more. */
static __attribute__((noinline)) void emptied(struct writer *w, size_t b)
{
	if (b + 1 == w->top) {
		size_t top = w->top;
		while (top > 1 && !w->taken[top - 1])
			top--;
		set_top(w, top);
	}
	if (!page_empty(w, b / PAGE_BLOCKS))
		return;
	w->idle++;
	if (w->idle >= w->idle_kept + IDLE_KEPT)
		give_back(w);
}

static void release_at(struct writer *w, size_t idx)
{
	struct sg_journal_rec *r = slot_at(w, idx);
	size_t b = idx / SG_JOURNAL_BLOCK_SLOTS;
	unsigned n = r->span, at = idx % SG_JOURNAL_BLOCK_SLOTS;

	if (!n || n > SG_JOURNAL_MAX_SPAN || at + n > SG_JOURNAL_BLOCK_SLOTS)
		return;
	sg_journal_rec_free(r);
	w->taken[b] &= ~(((1ull << n) - 1) << at);
	for (unsigned m = w->max_span; m && w->hint[m] > b; m--)
		w->hint[m] = b;
	if (!w->taken[b])
		emptied(w, b);
}

/* The writers this process inherited without a fork handler (a raw clone
 * or fork system call): its parent's journals, not its own. */
static void drop_inherited(const struct sg_self *self)
{
	bool dropped = false;

	for (unsigned k = 0; k < SG_MAX_ROOTS; k++) {
		struct writer *w = &writers[k];
		if (!w->opened || w->pid == self->pid)
			continue;
		sg_real.munmap(w->base, w->blocks * SG_JOURNAL_BLOCK);
		if (w->taken)
			sg_real.munmap(w->taken, w->map_cap * 9);
		*w = (struct writer){0};
		dropped = true;
	}
	if (dropped)
		epoch++;
}

/* A tick's precision is plenty for an age, and the coarse clock is a plain
 * read where the precise one may be a paravirtual clock read. */
static uint64_t now_ns(void)
{
	struct timespec now;

	clock_gettime(CLOCK_REALTIME_COARSE, &now);
	return (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
}

/* Whether root k's writer w can record for this process (self), when it is
 * not simply so: a journal inherited from the parent, one to make, or one
 * that failed. */
static __attribute__((noinline)) bool make_ready(struct writer *w, unsigned k, const struct sg_self *self)
{
	bool again;

	if (w->opened && w->pid != self->pid)
		drop_inherited(self);
	if (w->done)
		return false;
	if (w->opened)
		return true;
	again = w->backoff != 0;
	if ((w->retry_in && --w->retry_in) || open_writer(w, k, self) < 0)
		return false;
	if (again)
		sg_log_once(&said_again, SG_LOG_INFO, "the ownership journal in %s works again", sg_cfg.roots.dir[k]);
	return true;
}

/* n free slots in a row, once the journal has grown (root k's writer w);
 * -1 when it cannot grow. */
static __attribute__((noinline)) long grown_room(struct writer *w, unsigned k, unsigned n)
{
	long idx;

	if (w->retry_in && --w->retry_in)
		return -1;
	if (grow(w, k) < 0 || (idx = find_room(w, n)) < 0) {
		back_off(w);
		return -1;
	}
	w->backoff = 0;
	return idx;
}

uint32_t sg_jw_record(const struct sg_new_file *f)
{
	struct sg_journal_text text;
	const struct sg_self *self;
	unsigned k = f->root;
	struct writer *w;
	long idx;

	if (!sg_cfg.tag_journal || k >= sg_cfg.roots.n)
		return 0;
	if (!sg_journal_text_make(&text, f->req, f->req_len, f->path + f->name_off, f->name_len, f->req_at))
		return 0; /* a name or request too long for a record */
	/* Whose record this is: a child made without the fork handlers learns
	 * here that it is not its parent (sg_self_known). */
	self = sg_self_known();
	w = &writers[k];
	if (!(w->opened && w->pid == self->pid && !w->done) && !make_ready(w, k, self))
		return 0;
	if ((idx = find_room(w, text.span)) < 0 && (idx = grown_room(w, k, text.span)) < 0)
		return 0;
	take(w, (size_t)idx, text.span);
	sg_journal_text_commit(slot_at(w, (size_t)idx), f->ino, now_ns(), &text);
	return (k + 1) << SLOT_ROOT_SHIFT | (epoch & EPOCH_MASK) << SLOT_EPOCH_SHIFT | (uint32_t)idx;
}

void sg_jw_release(uint32_t slot)
{
	unsigned k = (slot >> SLOT_ROOT_SHIFT) - 1;
	size_t idx = slot & SLOT_INDEX_MASK;
	struct writer *w;

	if (!slot || k >= SG_MAX_ROOTS)
		return;
	w = &writers[k];
	if (w->opened && ((slot >> SLOT_EPOCH_SHIFT) & EPOCH_MASK) == (epoch & EPOCH_MASK) && idx >= SG_JOURNAL_HEAD_SLOTS &&
	    idx < w->top * SG_JOURNAL_BLOCK_SLOTS &&
	    (w->taken[idx / SG_JOURNAL_BLOCK_SLOTS] >> (idx % SG_JOURNAL_BLOCK_SLOTS) & 1))
		release_at(w, idx);
}

struct looking {
	unsigned k;
	bool some;
};

/* Whether a record still speaks for an existing file. */
static int still_there(const struct sg_journal_entry *e, void *opaque)
{
	struct looking *l = opaque;
	char path[SG_PATH_MAX + SG_NAME_MAX + 2];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", sg_cfg.roots.dir[l->k], e->name);
	l->some = lstat(path, &st) == 0 && st.st_ino == e->ino;
	return l->some;
}

void sg_jw_exit(void)
{
	pid_t pid = getpid();

	for (unsigned k = 0; k < SG_MAX_ROOTS; k++) {
		struct writer *w = &writers[k];
		struct sg_journal_head head;
		struct looking l = {k, false};
		struct stat st;
		int dfd;

		/* Only its own: a vfork child shares its parent's memory. */
		if (!w->opened || w->done || w->pid != pid)
			continue;
		sg_journal_parse(w->base, w->top * SG_JOURNAL_BLOCK, &head, still_there, &l);
		/* Files remain: the journal stays for sweep --dead to read. */
		if (l.some || (dfd = open_home(w)) < 0)
			continue;
		if (fstatat(dfd, w->path + w->name_off, &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_dev == w->dev &&
		    st.st_ino == w->ino) {
			sg_real.unlinkat(dfd, w->path + w->name_off, 0);
			w->done = true; /* a file created after this is not recorded */
		}
		sg_real.close(dfd);
	}
}

void sg_jw_after_fork_child(void)
{
	for (unsigned k = 0; k < SG_MAX_ROOTS; k++) {
		struct writer *w = &writers[k];
		if (w->base)
			sg_real.munmap(w->base, w->blocks * SG_JOURNAL_BLOCK);
		if (w->taken)
			sg_real.munmap(w->taken, w->map_cap * 9);
		*w = (struct writer){0};
	}
	epoch++;
}
