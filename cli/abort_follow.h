/* shmguard abort --follow: abort markers from a log, for servers that
 * cannot be changed but already log (or whose proxy logs) each abort. */
#ifndef SHMGUARD_ABORT_FOLLOW_H
#define SHMGUARD_ABORT_FOLLOW_H

#include <stdbool.h>

struct abort_follow_opts {
	const char *file;        /* followed by name; "-": stdin */
	const char *match;       /* regex; NULL: the preset's */
	const char *preset;      /* vllm, sglang, nginx, envoy */
	const char *id_template; /* "chatcmpl-{id}"; NULL: the ID as logged */
	bool from_start;         /* the file's present lines too, not only new ones */
	bool cri;                /* a CRI container log (cri_log.h): lines unwrapped and joined first */
};

/* Follows until SIGINT or SIGTERM, or the end of stdin, marking each valid
 * ID with plain `shmguard abort`'s own functions: open_dir opens (creates
 * and checks) dir, again if it is removed meanwhile, and write_marker writes
 * one marker into it (reporting a failure, and returning nonzero then).
 * Returns an exit status: 0, 1 a marker could not be written or the log not
 * read, 2 bad options. */
int abort_follow(const struct abort_follow_opts *o, const char *dir, unsigned ttl, int (*open_dir)(const char *dir),
		 int (*write_marker)(int dfd, const char *dir, const char *id));

#endif
