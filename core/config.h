/* shmguard's configuration, read from SHMGUARD_* environment variables.
 * The shim and the CLI parse it with the same code, so `shmguard run` rejects
 * exactly what the shim would.
 *
 * Errors: a negative errno (docs/architecture.md, "Reporting a failure"). */
#ifndef SHMGUARD_CONFIG_H
#define SHMGUARD_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include "pattern.h"

#define SG_MAX_ROOTS 8
#define SG_PATH_MAX 200
#define SG_DEFAULT_ROOT "/dev/shm"
#define SG_DEFAULT_ABORT_DIR "/dev/shm/shmguard-abort"
#define SG_DEFAULT_ABORT_TTL 600
#define SG_MAX_ABORT_TTL (7 * 24 * 3600)
/* Markers among the segments would make every segment a marker. */
#define SG_ABORT_DIR_IS_ROOT "the abort directory must not be a shm root itself (use a subdirectory, such as " SG_DEFAULT_ABORT_DIR ")"

/* A list of shm roots: absolute directories, normalised (see
 * sg_config_check_dir), each once.  The shim's configuration, ls, sweep,
 * doctor and audit all build theirs with sg_roots_add. */
struct sg_roots {
	char dir[SG_MAX_ROOTS][SG_PATH_MAX + 1];
	size_t len[SG_MAX_ROOTS];
	unsigned n;
};

enum sg_log_level { SG_LOG_OFF, SG_LOG_WARN, SG_LOG_INFO, SG_LOG_DEBUG };

struct sg_config {
	struct sg_pattern_set patterns; /* empty: no pattern attribution */
	struct sg_roots roots;
	char abort_dir[SG_PATH_MAX + 1];
	char request_id[SG_NAME_MAX + 1]; /* empty: none */
	unsigned abort_ttl;                /* seconds */
	enum sg_log_level log_level;
	/* SHMGUARD_TAG: journal (default), xattr, both or off. */
	bool tag_journal; /* record each segment in the process's ownership journal */
	bool tag_xattr;   /* write the user.shmguard tag onto each segment */
};

/* Fill c from the environment.  On a bad value returns -EINVAL with err naming the
 * variable and the fault; c->log_level is still set when SHMGUARD_LOG itself
 * was readable, so the fault can be reported at the level the user asked for. */
int sg_config_from_env(struct sg_config *c, char *err, size_t errlen);

/* The same, with the values from get (NULL: unset). */
int sg_config_from(struct sg_config *c, const char *(*get)(const char *name, void *ctx), void *ctx, char *err,
		   size_t errlen);

/* Normalise an absolute directory path (no trailing '/', no '.', '..' or
 * empty components) into out.  Returns 0, or -EINVAL with *why saying why
 * it is unusable. */
int sg_config_check_dir(const char *path, char *out, const char **why);

/* Adds dir, normalised, to r unless it is there already ("/a/" is "/a").
 * Returns 0, or a negative errno with *why saying why it cannot (r is then
 * unchanged): -EINVAL, or -E2BIG beyond SG_MAX_ROOTS. */
int sg_roots_add(struct sg_roots *r, const char *dir, const char **why);

/* Adds each directory of a ':'-separated list; 0, or as sg_roots_add(). */
int sg_roots_add_list(struct sg_roots *r, const char *list, const char **why);

/* 0, or -EINVAL with *why when the (normalised) abort directory cannot be
 * used with these roots: markers among the segments would make every
 * segment a marker. */
int sg_roots_check_abort_dir(const struct sg_roots *r, const char *abort_dir, const char **why);

/* Marker lifetime in whole seconds, 1 to SG_MAX_ABORT_TTL.  Returns 0 or -EINVAL. */
int sg_config_parse_ttl(const char *v, unsigned *ttl);

#endif
