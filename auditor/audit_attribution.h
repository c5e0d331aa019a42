/* A followed file's request from its names (audit_attribution.c): the
 * patterns give the one a name holds, and a rename or a link moves it (a
 * tag, exact, stays).  The events and the review both name files; the
 * file table holds what this part decides.
 *
 * The patterns are the run's (--patterns, --patterns-file), or a pod's
 * own for the files of its root: the SHMGUARD_PATTERNS in the environment
 * of a process of the pod (/proc/PID/environ, read when its root is found
 * and at its files' creations until it is learnt), which take precedence
 * over the run's there.  A pod's environment is hostile: read bounded,
 * a value too long or that does not parse is refused, with a reason said
 * once, and that pod keeps the run's patterns.
 *
 * Errors: a negative errno, with a sentence where one is asked for. */
#ifndef SHMGUARD_AUDIT_ATTRIBUTION_H
#define SHMGUARD_AUDIT_ATTRIBUTION_H

#include <stdbool.h>
#include <stdint.h>

#include <stddef.h>
#include <sys/types.h>

#include "pattern.h"

struct audit_file;
struct audit_files;

/* The processes of a pod read for its patterns, at most, when none of
 * them has any: a pod whose shim is not there is not read at every file. */
#define AUDIT_POD_ENV_TRIES 4
/* The shapes the reports can name (a file's shape is an int8_t): the
 * run's patterns first, then the pods' patterns, each text once. */
#define AUDIT_SHAPES_MAX 127
/* The shape of a file a pod's pattern named once the table of shapes was full. */
#define AUDIT_SHAPE_POD (-2)

/* A root's own patterns and abort directory (by its slot): learnt from
 * its pod's environment. */
struct audit_root_patterns {
	unsigned tries;              /* processes read that gave none */
	bool done;                   /* learnt, refused, or tried enough: read no more */
	struct sg_pattern_set *set;  /* NULL: the run's */
	int8_t shapes[SG_MAX_PATTERNS]; /* each pattern's shape */
	char abort_name[SG_NAME_MAX + 1]; /* its SHMGUARD_ABORT_DIR's name in its /dev/shm, "" the run's */
};

struct audit_attribution {
	const struct sg_pattern_set *patterns; /* the run's (--patterns, --patterns-file) */
	struct audit_files *files;             /* the table whose files it names */
	uint64_t ambiguous; /* files whose name two patterns gave different requests */
	struct audit_root_patterns *roots;     /* by root slot, grown as slots are */
	unsigned nroots;
	char (*pod_shapes)[SG_NAME_MAX + 1];   /* the pods' patterns' texts, shapes from patterns->count on */
	unsigned npod_shapes;
	uint64_t pods_learnt, pods_refused;    /* roots that got their own patterns, or refused them */
	bool abort_dirs; /* pods' SHMGUARD_ABORT_DIR are learnt too (no --root-abort-dir) */
};

/* Gives f a request from its name when it has none (patterns). */
void audit_attribute_by_name(struct audit_attribution *attr, struct audit_file *f);
/* f is called name in root (-1: outside the roots).  renamed: that name is
 * its newest (a rename or a link, seen by an event or by a pass), and its
 * request follows it. */
void audit_file_named(struct audit_attribution *attr, struct audit_file *f, int root, const char *name, bool renamed);
/* The shape of f's name, the same whatever gave its request: the pattern
 * that attributed it, or for a file the shim's tag attributed, the first
 * pattern its name matches (whatever request that pattern would give), so
 * that the reports name its leftovers as they would without the shim;
 * -1: none (the tag does not record one, core/tag.h). */
int audit_file_shape(const struct audit_attribution *attr, const struct audit_file *f);

/* Reads pid's SHMGUARD_PATTERNS and SHMGUARD_ABORT_DIR for the root of
 * slot when it has none yet (pid must be a process whose /dev/shm is that
 * root: the caller checks its device).  An abort directory counts when it
 * is one name in /dev/shm (the pod's root), and abort_dirs; one elsewhere
 * is not followed.
 * 1: learnt; 0: nothing to do or none there; a negative errno when a
 * value is refused (why says it, once: the root is not read again) or
 * memory is short. */
/* Whether the root of slot still wants its pod's patterns read. */
bool audit_attribution_learning(const struct audit_attribution *attr, int slot);
int audit_attribution_learn(struct audit_attribution *attr, int slot, pid_t pid, char *why, size_t whylen);
/* The name of the abort directory the pod of slot's root gave, or NULL. */
const char *audit_attribution_abort_name(const struct audit_attribution *attr, int slot);
/* The root of slot is found, or forgotten: its patterns are the run's again. */
void audit_attribution_forget_root(struct audit_attribution *attr, int slot);
/* The pattern shape's text, "(shim tag)" for -1. */
const char *audit_attribution_shape_text(const struct audit_attribution *attr, int shape);
void audit_attribution_free(struct audit_attribution *attr);

#endif
