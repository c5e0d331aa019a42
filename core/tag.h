/* The tag a creator writes onto a segment (extended attribute user.shmguard),
 * so that other processes and the CLI know its request after the creator is
 * gone.  Text: "shmguard/1 pid=P start=S ns=N created=NS req=" followed by
 * the request ID's raw bytes up to the end of the value (no terminator);
 * "ns=N " (the creator's pid namespace) is left out when unknown.
 *
 * Errors: a negative errno (docs/architecture.md, "Reporting a failure"). */
#ifndef SHMGUARD_TAG_H
#define SHMGUARD_TAG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "pattern.h"

#define SG_TAG_XATTR "user.shmguard"
#define SG_TAG_MAX 384 /* header (< 100 bytes) + longest request ID */

struct sg_tag {
	pid_t pid;            /* creator */
	uint64_t start_ticks; /* creator's start time (/proc/PID/stat field 22) */
	uint64_t pidns;       /* inode of the creator's pid namespace, 0: unknown */
	uint64_t created_ns;  /* CLOCK_REALTIME at creation */
	char req[SG_NAME_MAX + 1];
};

/* Returns the value's length, or -ENOBUFS if it does not fit in buflen. */
int sg_tag_encode(const struct sg_tag *tag, char *buf, size_t buflen);

/* The same in two steps, for a creator that writes many tags: the part
 * naming the creator ("shmguard/1 pid=P start=S ns=N ") is written once. */
struct sg_tag_head {
	char text[96];
	size_t len;
};

void sg_tag_head_init(struct sg_tag_head *head, pid_t pid, uint64_t start_ticks, uint64_t pidns);
int sg_tag_encode_with(const struct sg_tag_head *head, uint64_t created_ns, const char *req, char *buf,
		       size_t buflen);

/* Returns 0, or -EINVAL when buf is not a well-formed tag of this version. */
int sg_tag_decode(struct sg_tag *tag, const char *buf, size_t len);

/* Whether a tag read from a file with this mode can be believed: writing a
 * user xattr takes write access to the file, so a file that others may
 * write may carry a tag that they wrote, naming any creator. */
static inline bool sg_tag_trusted_mode(mode_t mode)
{
	return !(mode & 022);
}

#endif
