#include "shm_files.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "clock.h"
#include "procstat.h"
#include "journal_read.h"

const char *sg_comm(uint32_t pid, char *buf, size_t len)
{
	char path[32];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%u/comm", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	n = fd >= 0 ? read(fd, buf, len - 1) : -1;
	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return strncpy(buf, "?", len);
	buf[n - (buf[n - 1] == '\n')] = '\0';
	return buf;
}

/* A new entry, called a copy of name (NULL: no name); NULL when memory is
 * short, the listing as it was. */
static struct sg_shm_file *append(struct sg_shm_listing *l, size_t *cap, const char *name)
{
	if (l->n == *cap) {
		size_t c = *cap ? *cap * 2 : 64;
		struct sg_shm_file *f = realloc(l->files, c * sizeof(*f));
		if (!f)
			return NULL;
		l->files = f;
		*cap = c;
	}
	struct sg_shm_file *f = &l->files[l->n];
	memset(f, 0, sizeof(*f));
	if (name && !(f->name = strdup(name)))
		return NULL;
	l->n++;
	return f;
}

static void owned(struct sg_shm_file *f, double now)
{
	f->tagged = true; /* judged once the roots are read (sg_shm_list) */
	f->age_s = now - f->tag.created_ns / 1e9;
}

static void fill(struct sg_shm_file *f, const struct stat *st, const char *value, ssize_t vlen, double now)
{
	f->kdev = sg_kdev(st->st_dev);
	f->ino = st->st_ino;
	f->uid = st->st_uid;
	f->size = st->st_size;
	f->bytes = (uint64_t)st->st_blocks * 512;
	f->age_s = now - (st->st_ctim.tv_sec + st->st_ctim.tv_nsec / 1e9);
	/* The tag only where nobody but the file's owner could have written it. */
	if (vlen > 0 && sg_tag_trusted_mode(st->st_mode) && sg_tag_decode(&f->tag, value, (size_t)vlen) == 0)
		owned(f, now);
}

/* What the root's journals say of a file; beats the xattr (the two agree
 * when the shim writes both). */
static void from_journal(struct sg_shm_file *f, const struct sg_journals *js, int dirfd, const char *path,
			 int flags, const char *name, double now)
{
	if (!sg_journals_claim_any(js, f->ino))
		return;
	if (sg_journals_find(js, f->ino, f->uid, name, sg_birth_ns(dirfd, path, flags), &f->tag))
		owned(f, now);
}

/* What the journals of one owner may cost to read: as much as that owner's
 * files in the root could need, and a little more.  Anyone may plant files
 * named like journals (sparse ones cost nothing to make): they cost the
 * reader a header each beyond their owner's share. */
#define JOURNAL_BYTES_PER_UID (64u << 10)
#define JOURNAL_BYTES_PER_FILE 1024u

struct owner_share {
	uid_t uid;
	size_t files, spent;
};

static struct owner_share *share_of(struct owner_share *o, size_t *n, uid_t uid)
{
	for (size_t i = 0; i < *n; i++)
		if (o[i].uid == uid)
			return &o[i];
	o[*n] = (struct owner_share){uid, 0, 0};
	return &o[(*n)++];
}

/* Names like journals' found in one directory: the root, or its
 * SG_JOURNAL_DIR. */
struct journal_names {
	int dfd;
	bool in_dir;
	char **names;
	size_t n, cap;
};

static int add_name(struct journal_names *jn, const char *name)
{
	if (jn->n == jn->cap) {
		size_t c = jn->cap ? jn->cap * 2 : 16;
		char **n = realloc(jn->names, c * sizeof(*n));
		if (!n)
			return -ENOMEM;
		jn->names = n;
		jn->cap = c;
	}
	if (!(jn->names[jn->n] = strdup(name)))
		return -ENOMEM;
	jn->n++;
	return 0;
}

static void free_names(struct journal_names *jn)
{
	for (size_t i = 0; i < jn->n; i++)
		free(jn->names[i]);
	free(jn->names);
}

/* The names like journals' in root dfd's SG_JOURNAL_DIR, into jn, when it
 * is trusted (jn->dfd then its descriptor, else -1; l says when it is not). */
static int list_journal_dir(struct sg_shm_listing *l, unsigned r, int dfd, struct journal_names *jn)
{
	struct dirent *e;
	DIR *d;
	int ret = 0;

	jn->in_dir = true;
	if ((jn->dfd = sg_journal_dir_open(dfd)) < 0) {
		l->journal_dir_untrusted[r] = jn->dfd == -EPERM;
		jn->dfd = -1;
		return 0;
	}
	/* The listing gets a descriptor of its own; jn->dfd stays for the reads. */
	int fd = dup(jn->dfd);
	if (fd < 0 || !(d = fdopendir(fd))) {
		ret = -errno;
		if (fd >= 0)
			close(fd);
		return ret;
	}
	for (;;) {
		errno = 0;
		if (!(e = readdir(d))) {
			ret = -errno;
			break;
		}
		if (sg_journal_name(e->d_name) && (ret = add_name(jn, e->d_name)) < 0)
			break;
	}
	closedir(d);
	return ret;
}

/* Reads the journals named in root r, and in its SG_JOURNAL_DIR (after its
 * files are known, so that each owner's share is known), and lists names
 * like theirs that are not journals to believe. */
static int read_journals(struct sg_shm_listing *l, unsigned r, struct journal_names *sets, size_t nsets, size_t first,
			 size_t *cap, double now)
{
	size_t nnames = 0;
	for (size_t s = 0; s < nsets; s++)
		nnames += sets[s].n;
	struct owner_share *owners = calloc(l->n - first + nnames + 1, sizeof(*owners));
	size_t nowners = 0;
	int ret = 0;

	if (!owners)
		return -ENOMEM;
	for (size_t i = first; i < l->n; i++)
		share_of(owners, &nowners, l->files[i].uid)->files++;
	for (size_t s = 0; s < nsets && !ret; s++) {
		const struct journal_names *jn = &sets[s];

		for (size_t i = 0; i < jn->n; i++) {
			char shown[sizeof(SG_JOURNAL_DIR) + SG_NAME_MAX + 2];
			struct sg_journals *js = &l->journals[r];
			struct stat st;
			struct owner_share *o;
			size_t allowed, got = 0;
			int v;

			if (fstatat(jn->dfd, jn->names[i], &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
				continue;
			o = share_of(owners, &nowners, st.st_uid);
			allowed = JOURNAL_BYTES_PER_UID + o->files * JOURNAL_BYTES_PER_FILE;
			v = sg_journals_add_bounded(js, jn->dfd, jn->names[i], allowed > o->spent ? allowed - o->spent : 0,
						    &got);
			o->spent += got;
			if (v < 0) {
				ret = v;
				break;
			}
			if (v == SG_JOURNAL_READ)
				js->files[js->nfiles - 1].in_dir = jn->in_dir;
			if (v != SG_JOURNAL_FOREIGN && v != SG_JOURNAL_OVER_BUDGET)
				continue;
			/* Listed by the path from the root: DIR/NAME for one in SG_JOURNAL_DIR. */
			snprintf(shown, sizeof(shown), "%s%s%s", jn->in_dir ? SG_JOURNAL_DIR : "", jn->in_dir ? "/" : "",
				 jn->names[i]);
			struct sg_shm_file *f = append(l, cap, shown);
			if (!f) {
				ret = -ENOMEM;
				break;
			}
			f->root = (int)r;
			f->linked = true;
			f->journal_like = v == SG_JOURNAL_FOREIGN ? JOURNAL_LIKE_FOREIGN : JOURNAL_LIKE_UNREAD;
			fill(f, &st, NULL, -1, now);
			if (v == SG_JOURNAL_FOREIGN)
				l->journals_foreign++;
			else
				l->journals_unread++;
		}
	}
	free(owners);
	return ret;
}

static int read_root(struct sg_shm_listing *l, unsigned r, size_t *cap, double now)
{
	char value[SG_TAG_MAX];
	struct journal_names sets[2] = {{.dfd = -1}, {.dfd = -1}};
	struct dirent *e;
	DIR *d = opendir(l->roots.dir[r]);
	size_t first = l->n;
	int ret = 0;

	if (!d)
		return -errno;
	sets[0].dfd = dirfd(d);
	/* A listing cut short is no listing of the root: any failure is the
	 * caller's to report. */
	for (;;) {
		struct stat st;
		ssize_t vlen = -1;
		int fd;

		errno = 0;
		if (!(e = readdir(d))) {
			ret = -errno;
			break;
		}
		if (sg_journal_name(e->d_name)) {
			if ((ret = add_name(&sets[0], e->d_name)) < 0)
				break;
			continue;
		}
		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
			continue;
		/* The tag through a descriptor of this very inode. */
		fd = openat(dirfd(d), e->d_name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (fd >= 0) {
			char proc[32];
			snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
			vlen = getxattr(proc, SG_TAG_XATTR, value, sizeof(value));
			close(fd);
		}
		struct sg_shm_file *f = append(l, cap, e->d_name);
		if (!f) {
			ret = -ENOMEM;
			break;
		}
		f->root = (int)r;
		f->linked = true;
		fill(f, &st, value, vlen, now);
	}
	size_t files_end = l->n;
	if (!ret)
		ret = list_journal_dir(l, r, dirfd(d), &sets[1]);
	if (!ret && read_journals(l, r, sets, sets[1].dfd >= 0 ? 2 : 1, first, cap, now) < 0)
		ret = -ENOMEM;
	sg_journals_index(&l->journals[r]);
	for (size_t i = first; i < files_end; i++)
		from_journal(&l->files[i], &l->journals[r], dirfd(d), l->files[i].name, AT_SYMLINK_NOFOLLOW,
			     l->files[i].name, now);
	for (size_t s = 0; s < 2; s++)
		free_names(&sets[s]);
	if (sets[1].dfd >= 0)
		close(sets[1].dfd);
	closedir(d);
	return ret;
}

/* The root an unlinked file held through holders h[0..n) was in: the one
 * whose directory /proc shows it in, else the first root on its device that
 * is a mount point (a holder in another mount namespace shows other paths);
 * -1 when it was elsewhere on the device (not listed then). */
static int root_of_unlinked(const struct sg_shm_listing *l, const struct sg_holder *h, size_t n)
{
	int top = -1;

	for (unsigned r = 0; r < l->roots.n; r++) {
		if (l->kdev[r] != h->kdev)
			continue;
		for (size_t k = 0; k < n; k++)
			if (h[k].name && (size_t)(h[k].name - 1 - h[k].path) == l->roots.len[r] &&
			    memcmp(h[k].path, l->roots.dir[r], l->roots.len[r]) == 0)
				return (int)r;
		if (top < 0 && l->mount_point[r])
			top = (int)r;
	}
	return top;
}

/* Whether dir is a mount point (its parent is on another device, or is itself). */
static bool is_mount_point(const char *dir, const struct stat *st)
{
	char parent[SG_PATH_MAX + 4];
	struct stat pst;

	snprintf(parent, sizeof(parent), "%s/..", dir);
	return stat(parent, &pst) < 0 || pst.st_dev != st->st_dev || pst.st_ino == st->st_ino;
}

int sg_shm_listing_add_mount(struct sg_shm_listing *l, const struct sg_shm_mount *m)
{
	unsigned r = (unsigned)l->roots.n;

	if (r == SG_MAX_ROOTS)
		return -E2BIG;
	snprintf(l->roots.dir[r], sizeof(l->roots.dir[r]), "%s", m->path);
	l->roots.len[r] = strlen(l->roots.dir[r]);
	l->roots.n++;
	l->mount[r] = m;
	if (m->own_ns)
		snprintf(l->shown[r], sizeof(l->shown[r]), "%s", m->point);
	else
		snprintf(l->shown[r], sizeof(l->shown[r]), "[pid %d mnt:%llu]%s", (int)m->pid,
			 (unsigned long long)m->mntns, m->point);
	return 0;
}

/* Reads l's roots: their files and journals, each root's device. */
static int read_roots(struct sg_shm_listing *l, char *err, size_t errlen)
{
	uint64_t inos[SG_MAX_ROOTS];
	double now = sg_realtime_ns() / 1e9;
	size_t cap = 0;
	struct stat st;
	int ret;

	for (unsigned r = 0; r < l->roots.n; r++) {
		bool again = false;

		if (!l->mount[r]) { /* (a copy, not snprintf: GCC's -Wrestrict cannot tell the fields apart) */
			size_t n = strnlen(l->roots.dir[r], sizeof(l->shown[r]) - 1);
			memcpy(l->shown[r], l->roots.dir[r], n);
			l->shown[r][n] = '\0';
		}

		if ((ret = stat(l->roots.dir[r], &st) < 0 ? -errno : S_ISDIR(st.st_mode) ? 0 : -ENOTDIR) < 0) {
			snprintf(err, errlen, "cannot read %s: %s", l->shown[r], strerror(-ret));
			return ret;
		}
		l->kdev[r] = sg_kdev(st.st_dev);
		inos[r] = st.st_ino;
		l->mount_point[r] = is_mount_point(l->roots.dir[r], &st);
		/* The same directory by another path (a symlink, a bind mount)
		 * would list every file twice. */
		for (unsigned k = 0; k < r; k++)
			again |= l->kdev[k] == l->kdev[r] && inos[k] == inos[r];
		if (again) {
			l->mount_point[r] = false;
			continue;
		}
		if ((ret = read_root(l, r, &cap, now)) < 0) {
			snprintf(err, errlen, "cannot read %s: %s", l->shown[r], strerror(-ret));
			return ret;
		}
	}
	return 0;
}

/* Unlinked files on device kdev still held: one entry per inode, through
 * its first holder that stat() reaches (a mapping's does not once the main
 * thread has exited). */
static int add_unlinked(struct sg_shm_listing *l, uint32_t kdev, size_t *cap, double now)
{
	const struct sg_holders *hs = &l->proc->holders;
	size_t on, n;
	const struct sg_holder *all = sg_holders_on(hs, kdev, &on);
	struct stat st;

	for (size_t i = 0; i < on; i += n) {
		const struct sg_holder *first = &all[i], *h = NULL;
		char value[SG_TAG_MAX];
		ssize_t vlen;
		int root;

		sg_holders_find(hs, first->kdev, first->ino, &n);
		if ((root = root_of_unlinked(l, first, n)) < 0)
			continue;
		for (size_t k = 0; k < n && !h; k++)
			if (stat(first[k].stat_path, &st) == 0)
				h = &first[k];
		if (!h || st.st_nlink != 0 || st.st_ino != h->ino)
			continue;
		vlen = getxattr(h->stat_path, SG_TAG_XATTR, value, sizeof(value));
		struct sg_shm_file *f = append(l, cap, h->name);
		if (!f)
			return -ENOMEM;
		f->root = root;
		fill(f, &st, value, vlen, now);
		/* Unlinked: no name to match, so only with a birth time. */
		if (f->root >= 0)
			from_journal(f, &l->journals[f->root], AT_FDCWD, h->stat_path, 0, NULL, now);
		f->holders = sg_holders_find(hs, h->kdev, h->ino, &f->nholders);
		if (f->tagged)
			f->creator = sg_creators_judge(&l->proc->creators, &f->tag, &f->creator_proof);
	}
	return 0;
}

static int by_kdev(const void *x, const void *y)
{
	uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;

	return (a > b) - (a < b);
}

/* Judges l's files (its roots read) by p, read after them. */
static int judge(struct sg_shm_listing *l, struct sg_shm_proc *p, char *err, size_t errlen)
{
	double now = sg_realtime_ns() / 1e9;
	size_t cap = l->n;
	int ret;

	l->proc = p;
	for (size_t i = 0; i < l->n; i++)
		if (l->files[i].tagged)
			l->files[i].creator = sg_creators_judge(&p->creators, &l->files[i].tag, &l->files[i].creator_proof);
	for (size_t i = 0; i < l->n; i++)
		l->files[i].holders = sg_holders_find(&p->holders, l->files[i].kdev, l->files[i].ino, &l->files[i].nholders);
	/* Each device once, in order (as the holders are). */
	uint32_t devs[SG_MAX_ROOTS];
	memcpy(devs, l->kdev, l->roots.n * sizeof(*devs));
	qsort(devs, l->roots.n, sizeof(*devs), by_kdev);
	for (unsigned k = 0; k < l->roots.n; k++) {
		if (k && devs[k] == devs[k - 1])
			continue;
		if ((ret = add_unlinked(l, devs[k], &cap, now)) < 0) {
			snprintf(err, errlen, "cannot list the files held after their unlink: %s", strerror(-ret));
			return ret;
		}
	}
	l->listed = true;
	return 0;
}

/* Reads /proc for the devices of ls[0..n) that were read. */
static int proc_scan(struct sg_shm_proc *p, const struct sg_shm_listing *ls, size_t n, char *err, size_t errlen)
{
	size_t ndevs = 0;
	uint32_t *kdevs = malloc((n * SG_MAX_ROOTS + 1) * sizeof(*kdevs));
	int ret;

	if (!kdevs)
		ret = -ENOMEM;
	else {
		for (size_t i = 0; i < n; i++)
			for (unsigned r = 0; r < ls[i].roots.n && ls[i].proc; r++)
				kdevs[ndevs++] = ls[i].kdev[r];
		ret = sg_holders_scan(&p->holders, kdevs, (unsigned)ndevs, false);
		p->walks++;
		free(kdevs);
	}
	if (ret < 0)
		snprintf(err, errlen, "cannot read /proc: %s", strerror(-ret));
	return ret;
}

static bool among(const struct sg_shm_mount *m, const struct sg_dir_id *only, size_t nonly)
{
	for (size_t i = 0; i < nonly; i++)
		if (only[i].kdev == m->kdev && only[i].ino == m->dir_ino)
			return true;
	return !nonly;
}

int sg_shm_list(struct sg_shm_listing *l, char *err, size_t errlen)
{
	int ret;

	l->proc = &l->own;
	if ((ret = read_roots(l, err, errlen)) < 0 || (ret = proc_scan(&l->own, l, 1, err, errlen)) < 0)
		return ret;
	return judge(l, &l->own, err, errlen);
}

unsigned sg_shm_proc_walks(const struct sg_shm_proc *p)
{
	return p->walks + p->creators.indexed;
}

void sg_shm_proc_free(struct sg_shm_proc *p)
{
	sg_holders_free(&p->holders);
	sg_creators_free(&p->creators);
}

void sg_shm_listing_free(struct sg_shm_listing *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->files[i].name);
	free(l->files);
	for (unsigned r = 0; r < SG_MAX_ROOTS; r++)
		sg_journals_free(&l->journals[r]);
	sg_shm_proc_free(&l->own);
	l->proc = NULL;
	l->listed = false;
	l->files = NULL;
	l->n = 0;
}

static struct sg_shm_listing *pass_add(struct sg_shm_pass *p)
{
	if (p->n == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 4;
		struct sg_shm_listing *l = realloc(p->l, cap * sizeof(*l));
		if (!l)
			return NULL;
		p->l = l;
		p->cap = cap;
	}
	memset(&p->l[p->n], 0, sizeof(p->l[p->n]));
	return &p->l[p->n++];
}

struct sg_shm_listing *sg_shm_pass_add(struct sg_shm_pass *p)
{
	return pass_add(p);
}

int sg_shm_pass_add_mounts(struct sg_shm_pass *p, const struct sg_shm_mounts *ms, const struct sg_dir_id *only,
			   size_t nonly)
{
	struct sg_shm_listing *l = NULL;

	for (size_t i = 0; i < ms->n; i++) {
		if (!among(&ms->m[i], only, nonly))
			continue;
		if ((!l || l->roots.n == SG_MAX_ROOTS) && !(l = pass_add(p)))
			return -ENOMEM;
		sg_shm_listing_add_mount(l, &ms->m[i]);
	}
	return 0;
}

int sg_shm_pass_list(struct sg_shm_pass *p, void (*failed)(const char *err, void *ctx), void *ctx, char *err,
		     size_t errlen)
{
	size_t read = 0;
	int ret;

	/* Every root first: /proc is read after the files it judges. */
	for (size_t i = 0; i < p->n; i++) {
		p->l[i].proc = &p->proc;
		if (read_roots(&p->l[i], err, errlen) < 0) {
			p->l[i].proc = NULL;
			failed(err, ctx);
		} else {
			read++;
		}
	}
	if (!read)
		return 0;
	if ((ret = proc_scan(&p->proc, p->l, p->n, err, errlen)) < 0)
		return ret;
	for (size_t i = 0; i < p->n; i++)
		if (p->l[i].proc && judge(&p->l[i], &p->proc, err, errlen) < 0)
			failed(err, ctx);
	return 0;
}

unsigned sg_shm_pass_walks(const struct sg_shm_pass *p)
{
	return sg_shm_proc_walks(&p->proc);
}

void sg_shm_pass_free(struct sg_shm_pass *p)
{
	for (size_t i = 0; i < p->n; i++)
		sg_shm_listing_free(&p->l[i]);
	free(p->l);
	sg_shm_proc_free(&p->proc);
	*p = (struct sg_shm_pass){0};
}

enum sg_unlink_result sg_shm_unlink_same(int dfd, const char *name, uint32_t kdev, uint64_t ino, bool dry_run)
{
	struct stat st;

	/* Between this check and the unlink the name could be replaced;
	 * unlinkat(2) offers no way to name an inode.  The shim has the same
	 * few microseconds' window. */
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return SG_UNLINK_GONE;
	if (sg_kdev(st.st_dev) != kdev || st.st_ino != ino)
		return SG_UNLINK_REPLACED;
	if (dry_run)
		return SG_UNLINK_DONE;
	if (unlinkat(dfd, name, 0) < 0)
		return errno == ENOENT ? SG_UNLINK_GONE : SG_UNLINK_FAILED;
	return SG_UNLINK_DONE;
}

/* Whether some record of journal j names a file still in the root. */
static bool journal_speaks(const struct sg_journals *js, size_t j, int dfd)
{
	for (size_t i = 0; i < js->nclaims; i++) {
		const struct sg_journal_claim *c = &js->claims[i];
		struct stat st;
		if (c->journal == j && fstatat(dfd, c->name, &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_ino == c->ino)
			return true;
	}
	return false;
}

/* Removes journal name of dfd (dry_run: only says it would) if it is still
 * the inode judged, and no other file by now. */
static bool reap(int dfd, const char *name, uint64_t ino, bool dry_run)
{
	struct stat st;

	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || st.st_ino != ino)
		return false;
	return dry_run || unlinkat(dfd, name, 0) == 0;
}

size_t sg_shm_reap_journals(struct sg_shm_listing *l, unsigned r, int dfd, bool dry_run,
			    void (*said)(unsigned root, const char *name, void *ctx), void *ctx)
{
	const struct sg_journals *js = &l->journals[r];
	const size_t dir_len = sizeof(SG_JOURNAL_DIR "/") - 1;
	/* The journals in SG_JOURNAL_DIR are removed through a descriptor of
	 * it checked again now; none when it is no longer to be trusted. */
	int jfd = sg_journal_dir_open(dfd);
	size_t n = 0;

	for (size_t j = 0; j < js->nfiles; j++) {
		const struct sg_journal_file *jf = &js->files[j];
		int at = jf->in_dir ? jfd : dfd;

		if (at < 0 || sg_creators_judge(&l->proc->creators, &jf->creator, NULL) != CREATOR_DEAD ||
		    journal_speaks(js, j, dfd))
			continue;
		if (reap(at, jf->name, jf->ino, dry_run)) {
			char shown[sizeof(SG_JOURNAL_DIR) + SG_NAME_MAX + 2]; /* by its path from the root */
			snprintf(shown, sizeof(shown), "%s%s", jf->in_dir ? SG_JOURNAL_DIR "/" : "", jf->name);
			said(r, shown, ctx);
			n++;
		}
	}
	/* A journal left unread, too big for its owner's files (a creator
	 * killed with many records, their files removed by others), is read
	 * here a few blocks at a time, within the listing's bound: else it
	 * would hold its RAM for good. */
	size_t budget = SG_JOURNALS_READ_MAX;
	for (size_t i = 0; i < l->n; i++) {
		const struct sg_shm_file *f = &l->files[i];
		bool in_dir = f->name && strncmp(f->name, SG_JOURNAL_DIR "/", dir_len) == 0;
		const char *name = in_dir ? f->name + dir_len : f->name;
		int at = in_dir ? jfd : dfd;
		struct sg_tag creator;

		if (at < 0 || f->root != (int)r || f->journal_like != JOURNAL_LIKE_UNREAD ||
		    sg_journal_names_a_file(dfd, at, name, f->ino, &creator, &budget) != 0 ||
		    sg_creators_judge(&l->proc->creators, &creator, NULL) != CREATOR_DEAD)
			continue;
		if (reap(at, name, f->ino, dry_run)) {
			said(r, f->name, ctx);
			n++;
		}
	}
	if (jfd >= 0)
		close(jfd);
	return n;
}
