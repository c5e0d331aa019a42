#include "sweep.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "journal_writer.h"
#include "log.h"
#include "mappings.h"
#include "real.h"
#include "registry.h"
#include "roots.h"
#include "state.h"

/* What seg's name refers to now, relative to its root's descriptor in the
 * watcher (sg_root_file).  Returns 0, or a negative errno (-ENOENT: its
 * root cannot be reached). */
static int stat_segment(const struct sg_segment *seg, int *dfd, const char **name, struct stat *st)
{
	*dfd = sg_root_file(seg->path, name);
	if (*dfd == -1)
		return -ENOENT;
	return fstatat(*dfd, *name, st, AT_SYMLINK_NOFOLLOW) < 0 ? -errno : 0;
}

bool sg_segment_gone(const struct sg_segment *seg)
{
	const char *name;
	struct stat st;
	int dfd;

	if (stat_segment(seg, &dfd, &name, &st) < 0)
		return dfd != -1; /* a root that cannot be reached says nothing of its files */
	return st.st_dev != seg->dev || st.st_ino != seg->ino;
}

void sg_sweep(const char *request)
{
	struct sg_segment *seg = sg_registry_abort(request, time(NULL)), *next;
	unsigned long long files = 0, bytes = 0, mapped;
	struct sg_file_id *unlinked = NULL;
	size_t nsegs = 0;
	static bool unlink_failed_said;

	for (struct sg_segment *s = seg; s; s = s->next_of_request)
		nsegs++;
	/* Without room to list them, only the mapped-bytes figure suffers. */
	if (nsegs)
		unlinked = malloc(nsegs * sizeof(*unlinked));
	for (; seg; seg = next) {
		const char *name;
		struct stat st;
		int dfd;

		next = seg->next_of_request;
		/* Between this check and the unlink another process could replace
		 * the name; unlink(2) offers no way to name an inode.  The window
		 * is a few microseconds, against a name that was ours a moment ago. */
		if (stat_segment(seg, &dfd, &name, &st) < 0) {
			sg_count(vanished, 1);
		} else if (st.st_dev != seg->dev || st.st_ino != seg->ino) {
			sg_count(replaced, 1);
			sg_log(SG_LOG_INFO, "request %s: left %s alone: the name now refers to another file", request,
			       seg->path);
		} else if (sg_real.unlinkat(dfd, name, 0) < 0) {
			if (errno == ENOENT)
				sg_count(vanished, 1);
			else
				sg_log_once(&unlink_failed_said, SG_LOG_WARN, "request %s: cannot unlink %s: %s", request,
					    seg->path, strerror(errno));
		} else {
			if (unlinked)
				unlinked[files] = (struct sg_file_id){seg->dev, seg->ino};
			files++;
			bytes += (unsigned long long)st.st_blocks * 512;
		}
		/* Only now: a process killed in the middle of a sweep leaves
		 * the files it had not unlinked yet claimed in its journal. */
		sg_jw_release(seg->journal_slot);
		free(seg);
	}
	mapped = unlinked ? sg_mappings_swept(unlinked, files) : 0;
	free(unlinked);
	/* Nothing unlinked is no failure: the abort is remembered. */
	if (!nsegs)
		sg_log(SG_LOG_INFO,
		       "request %s aborted: no file of it here yet; those it makes from now on are unlinked as "
		       "they appear, until its marker expires",
		       request);
	if (!files)
		return;
	sg_count(swept, files);
	sg_count(swept_bytes, bytes);
	if (mapped)
		sg_log(SG_LOG_INFO,
		       "request %s aborted: unlinked %llu file(s), %llu bytes; %llu mapped bytes stay in use until "
		       "this process unmaps them",
		       request, files, bytes, mapped);
	else
		sg_log(SG_LOG_INFO, "request %s aborted: unlinked %llu file(s), %llu bytes", request, files, bytes);
}
