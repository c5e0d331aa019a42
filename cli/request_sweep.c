#include "request_sweep.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "cli.h"
#include "holders.h"
#include "journal.h"
#include "shm_files.h"
#include "text.h"
#include "journal_read.h"

static bool wanted(const char *req, const char *const *reqs, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		if (strcmp(req, reqs[i]) == 0)
			return true;
	return false;
}

/* The shim records names directly in a root only; anything else in a
 * record is no name of ours to unlink. */
static bool plain_name(const char *name)
{
	return !strchr(name, '/') && strcmp(name, ".") != 0 && strcmp(name, "..") != 0;
}

/* The file c names, if it is still c's and c's request's: unlinked. */
static void sweep_claim(const struct request_sweep *rs, int dfd, const char *dir, uint32_t root_kdev,
			const struct sg_journals *js, const struct sg_journal_claim *c, struct request_swept *out)
{
	char path[SG_PATH_MAX + SG_NAME_MAX + 2], shown[SG_ESCAPED_MAX];
	struct sg_tag tag;
	struct statx stx;
	uint32_t kdev;
	uint64_t btime = 0;

	if (!plain_name(c->name) ||
	    statx(dfd, c->name, AT_SYMLINK_NOFOLLOW | AT_STATX_DONT_SYNC,
		  STATX_TYPE | STATX_INO | STATX_UID | STATX_BLOCKS | STATX_BTIME, &stx) < 0)
		return; /* gone already (the shim was quicker): fine */
	kdev = sg_kdev(makedev(stx.stx_dev_major, stx.stx_dev_minor));
	if (!S_ISREG(stx.stx_mode) || stx.stx_ino != c->ino || kdev != root_kdev) {
		out->replaced++;
		return;
	}
	/* A shim takes markers of its euid or root only: another user's file
	 * is of a request not aborted for its creator, unless we are root. */
	if (geteuid() != 0 && stx.stx_uid != geteuid())
		return;
	if (stx.stx_mask & STATX_BTIME)
		btime = (uint64_t)stx.stx_btime.tv_sec * 1000000000ull + stx.stx_btime.tv_nsec;
	/* Only a journal of the file's owner speaks for it, and only its
	 * newest claim: an older one may be of another life of the inode. */
	if (!sg_journals_find(js, stx.stx_ino, stx.stx_uid, c->name, btime, &tag) || strcmp(tag.req, c->req) != 0)
		return;
	switch (sg_shm_unlink_same(dfd, c->name, kdev, stx.stx_ino, false)) {
	case SG_UNLINK_DONE:
		out->files++;
		out->bytes += stx.stx_blocks * 512;
		break;
	case SG_UNLINK_GONE: break;
	case SG_UNLINK_REPLACED: out->replaced++; break;
	case SG_UNLINK_FAILED:
		out->failed++;
		snprintf(path, sizeof(path), "%s/%s", dir, c->name);
		cli_fail(0, rs->sub, "cannot unlink %s: %s", sg_text_escape(path, shown, sizeof(shown)), strerror(errno));
		break;
	}
}

/* Reads the journals among the entries of directory jdfd (the root, or its
 * SG_JOURNAL_DIR) into js: 0 when read to its end, 1 when over the bounds
 * (too_large) or failed (said). */
static int read_journals(struct request_sweep *rs, struct sg_journals *js, int jdfd, const char *dir, bool *too_large)
{
	size_t entries = 0;
	struct dirent *e = NULL;
	/* The listing gets a descriptor of its own; jdfd stays for the reads. */
	int fd = dup(jdfd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;

	if (!d) {
		cli_fail(0, rs->sub, "cannot read %s: %s", dir, strerror(errno));
		rs->failed = true;
		if (fd >= 0)
			close(fd);
		return 1;
	}
	while ((e = readdir(d))) {
		if (++entries > REQUEST_SWEEP_MAX_ENTRIES) {
			*too_large = true;
			break;
		}
		if (!sg_journal_name(e->d_name))
			continue;
		/* What is left of the bound, counted as the reader reads:
		 * the header and the slots in use (a sparse file costs nothing). */
		int v = sg_journals_add_bounded(js, jdfd, e->d_name,
						js->bytes_read < REQUEST_SWEEP_MAX_JOURNAL_BYTES
							? REQUEST_SWEEP_MAX_JOURNAL_BYTES - js->bytes_read
							: 0,
						NULL);
		if (v == SG_JOURNAL_OVER_BUDGET) {
			*too_large = true;
			break;
		}
		if (v < 0) {
			cli_fail(0, rs->sub, "out of memory reading the journals of %s", dir);
			rs->failed = true;
			break;
		}
	}
	closedir(d);
	return e ? 1 : 0;
}

/* Reads root dir into slot k of rs: 0, 1 when it is to be skipped.  Its
 * SG_JOURNAL_DIR, when trusted, is read instead of the root: the root is
 * not listed, so its size does not matter; the journals its writers keep
 * in the root are left to their shims. */
static int read_root(struct request_sweep *rs, unsigned k, const char *dir)
{
	struct sg_journals *js = &rs->root[k].js;
	bool too_large = false;
	struct stat st;
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), jdfd, ret;

	if (dfd < 0 && errno == ENOENT)
		return 1; /* no such root here: nothing of it to sweep */
	if (dfd < 0 || fstat(dfd, &st) < 0) {
		cli_fail(0, rs->sub, "cannot read %s: %s", dir, strerror(errno));
		rs->failed = true;
		if (dfd >= 0)
			close(dfd);
		return 1;
	}
	rs->root[k].dir = dir;
	rs->root[k].dfd = dfd;
	rs->root[k].kdev = sg_kdev(st.st_dev);
	jdfd = sg_journal_dir_open(dfd);
	rs->root[k].from_dir = jdfd >= 0;
	ret = read_journals(rs, js, jdfd >= 0 ? jdfd : dfd, dir, &too_large);
	if (jdfd >= 0)
		close(jdfd);
	if (ret == 0) {
		sg_journals_index(js);
		if (rs->root[k].from_dir && !rs->from_dir++)
			rs->from_dir_root = dir;
		return 0;
	}
	if (too_large && !rs->left++)
		rs->left_root = dir;
	sg_journals_free(js);
	close(dfd);
	return 1;
}

void request_sweep_read(struct request_sweep *rs, const struct sg_roots *roots, const char *sub)
{
	memset(rs, 0, sizeof(*rs));
	rs->sub = sub;
	for (unsigned r = 0; r < roots->n; r++)
		if (read_root(rs, rs->n, roots->dir[r]) == 0)
			rs->n++;
}

void request_sweep_run(const struct request_sweep *rs, const char *const *reqs, unsigned n,
		       struct request_swept *out)
{
	for (unsigned k = 0; k < rs->n; k++) {
		const struct sg_journals *js = &rs->root[k].js;

		for (size_t i = 0; i < js->nclaims; i++)
			if (wanted(js->claims[i].req, reqs, n))
				sweep_claim(rs, rs->root[k].dfd, rs->root[k].dir, rs->root[k].kdev, js, &js->claims[i], out);
	}
}

void request_sweep_free(struct request_sweep *rs)
{
	for (unsigned k = 0; k < rs->n; k++) {
		sg_journals_free(&rs->root[k].js);
		close(rs->root[k].dfd);
	}
	rs->n = 0;
}
