#include "marker_sweep.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "marker.h"
#include "request_sweep.h"
#include "size.h"
#include "text.h"

/* The names of dfd's entries that are markers for this euid
 * (sg_marker_refusal), at most MARKER_SWEEP_MAX; *more when some were left. */
static int read_markers(int dfd, char ***ids, unsigned *n, bool *more)
{
	uid_t euid = geteuid();
	const char *why;
	struct dirent *e;
	struct stat st;
	int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;

	*ids = NULL;
	*n = 0;
	*more = false;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if (!(*ids = calloc(MARKER_SWEEP_MAX, sizeof(**ids)))) {
		closedir(d);
		return -1;
	}
	while ((e = readdir(d))) {
		if (sg_marker_check(dfd, e->d_name, euid, &st, &why) < 0)
			continue;
		if (*n == MARKER_SWEEP_MAX) {
			*more = true;
			break;
		}
		if (!((*ids)[*n] = strdup(e->d_name)))
			break;
		++*n;
	}
	closedir(d);
	return 0;
}

int marker_sweep(const char *abort_dir, const struct sg_roots *roots)
{
	char shown[SG_ESCAPED_MAX], human[16];
	struct request_swept out = {0};
	struct request_sweep rs;
	char **ids;
	unsigned n;
	bool more;
	int dfd = cli_abort_dir_open("sweep", abort_dir, false), status = EXIT_OK;

	if (dfd < 0)
		return EXIT_FAIL;
	sg_text_escape(abort_dir, shown, sizeof(shown));
	if (read_markers(dfd, &ids, &n, &more) < 0) {
		close(dfd);
		return cli_fail(EXIT_FAIL, "sweep", "cannot read abort directory %s: %s", shown, strerror(errno));
	}
	close(dfd);
	if (more)
		cli_warn("sweep", "more than %d markers in %s: the first %d read are swept", MARKER_SWEEP_MAX, shown,
			 MARKER_SWEEP_MAX);
	request_sweep_read(&rs, roots, "sweep");
	request_sweep_run(&rs, (const char *const *)ids, n, &out);
	printf("swept %u %s, %llu bytes (%s), of %u %s marked in %s%s%s\n", SG_PLURAL(out.files, "file", "files"),
	       (unsigned long long)out.bytes, sg_human_bytes(out.bytes, human, sizeof(human)),
	       SG_PLURAL(n, "request", "requests"), shown,
	       out.replaced ? "; some recorded names now another file's, left alone" : "",
	       rs.left ? "; some roots too large to read quickly, not swept" : "");
	if (rs.failed || out.failed || rs.left)
		status = EXIT_FAIL;
	request_sweep_free(&rs);
	for (unsigned i = 0; i < n; i++)
		free(ids[i]);
	free(ids);
	return status;
}
