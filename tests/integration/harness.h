/* Helpers for integration tests: run real programs (under the shim or not),
 * talk to them line by line, and look at /dev/shm.  Every test uses its own
 * name prefix and removes only names carrying it. */
#ifndef SHMGUARD_HARNESS_H
#define SHMGUARD_HARNESS_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct h_proc {
	pid_t pid;
	int in;        /* child's stdin */
	int out;       /* child's stdout */
	char err[128]; /* file holding the child's stderr */
};

/* Paths of what the build made (from the environment meson test sets). */
const char *h_bin(const char *var);

/* A prefix unique to this test process, "sgt-<pid>-<tag>-". */
const char *h_prefix(const char *tag);

/* The set-up most suites share: their prefix (h_prefix(tag)) and, under
 * /dev/shm, an abort directory and a root named by it (neither made: a
 * test makes what it uses).  root may be NULL. */
void h_setup(const char *tag, const char **prefix, const char **abort_dir, const char **root);
/* The tear-down that goes with it: a filesystem a test mounted on root
 * (h_mount_root; root may be NULL) detached, then h_cleanup(prefix). */
void h_teardown(const char *prefix, const char *root);
/* dir/name, living until the test ends. */
const char *h_in(const char *dir, const char *name);

/* A formatted string that lives until the test ends. */
char *h_str(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Starts argv with the environment plus env (NULL-terminated "K=V" list). */
struct h_proc h_spawn(const char *const *argv, const char *const *env);

/* The next line of the child's stdout (without newline), NULL on EOF or
 * after timeout_ms. */
char *h_read_line(struct h_proc *p, int timeout_ms);

/* Closes the child's stdin, waits for it; returns its exit status (128+N
 * for a signal) and, through err if not NULL, its whole stderr. */
int h_finish(struct h_proc *p, char **err);

/* Runs argv to completion (stdin empty); as h_finish. */
int h_run(const char *const *argv, const char *const *env, char **err);

/* Every line the child prints on stdout until it closes it, each ended by
 * '\n' (a line slower than timeout_ms ends the reading). */
char *h_read_all(struct h_proc *p, int timeout_ms);

/* As h_run, with the child's stdout in *out too. */
int h_output(const char *const *argv, const char *const *env, char **out, char **err);

/* A file name of 4 KiB made now in dir, and the journal that says it was
 * created for request by (pidns, pid, start), as a shim of any namespace
 * writes it: what a creator records, written here as this test's user. */
void h_plant_journal(const char *dir, const char *name, const char *request, uint64_t pidns, pid_t pid,
		     uint64_t start);

bool h_exists(const char *path);
/* Polls until path is gone; returns whether it went in time.  The bound of
 * this and h_wait_stderr is timeout_ms times a patience for loaded machines
 * (harness.c): never use either to show that something does not happen. */
bool h_wait_gone(const char *path, int timeout_ms);
/* Milliseconds on a monotonic clock. */
long h_now_ms(void);

/* Ends the children still running, then removes every /dev/shm entry whose
 * name starts with prefix (or "shm_" + prefix: lock files), recursively. */
void h_cleanup(const char *prefix);

/* How many entries of dir start with prefix. */
int h_count(const char *dir, const char *prefix);

/* Occurrences of needle in haystack. */
int h_occurrences(const char *haystack, const char *needle);


/* Environment for a process under the shim: LD_PRELOAD, the abort
 * directory, SHMGUARD_LOG=info, patterns (if not NULL) and then up to 6
 * more "K=V" entries, NULL-terminated. */
const char **h_shim_env(const char *abort_dir, const char *patterns, ...);

/* Polls the child's stderr until it holds needle; whether it did in time
 * (a patient bound, as h_wait_gone's). */
bool h_wait_stderr(struct h_proc *p, const char *needle, int timeout_ms);

/* Starts a process and waits for its "ready" line. */
struct h_proc h_start_ready(const char *const *argv, const char *const *env);

/* Whether this shmguard has audit (meson sets SG_AUDITOR). */
bool h_have_auditor(void);

/* Skips the running test after calling teardown (Criterion does not tear a
 * skipped test down). */
void h_skip(void (*teardown)(void), const char *why);
/* BPF needs root: without it the test is skipped (after teardown); in CI
 * (CI set) it fails instead.  In a build without the auditor it is skipped. */
void h_need_bpf(void (*teardown)(void));
/* A private mount namespace for this test process (mounts made in it stay
 * in it), or a skip (after teardown); in CI it fails instead. */
void h_private_mounts(void (*teardown)(void));
/* dir made and a filesystem of type (ramfs, tmpfs) with options mounted on
 * it, in the test's private mount namespace (h_private_mounts). */
void h_mount_root(const char *dir, const char *type, const char *options, void (*teardown)(void));

/* A second, unprivileged user for hostile tests, made with useradd (no home,
 * no login) as "sgt<pid>" on first use and removed with userdel at exit.
 * Needs root: elsewhere the test is skipped, in CI (CI set) it fails. */
struct h_user {
	uid_t uid;
	gid_t gid;
	const char *name;
};
const struct h_user *h_hostile_user(void);

/* As h_spawn and h_output, the child running as user (groups dropped). */
struct h_proc h_spawn_as(const struct h_user *user, const char *const *argv, const char *const *env);
int h_output_as(const struct h_user *user, const char *const *argv, const char *const *env, char **out, char **err);

/* `shmguard audit` as the tests run it: abort_dir, patterns, a 0.3 s grace,
 * the JSON report at json, the built shim for `shmguard run` and progress
 * lines every 0.1 s on stderr (h_wait_measured), then options (NULL-
 * terminated), "--" and cmd. */
const char **h_audit_argv(const char *abort_dir, const char *patterns, const char *json, const char *const *options,
			  const char *const *cmd);
/* Waits until the auditor's progress line says aborts are measured, asserted. */
void h_wait_measured(struct h_proc *p, int aborts);

/* A JSON file (an audit report), asserted to be there and well-formed. */
json_t *h_json_load(const char *path);
/* An integer member of r, asserted to be one. */
long long h_jint(json_t *r, const char *key);
/* Expects every member of doc, the JSON of `shmguard command --json`, to be
 * named in backquotes in that command's section of docs/json-schema.md: a
 * member of an object in a top-level array ARRAY as `ARRAY[].member`, a
 * deeper one as `member` (a member ending in _hex by the doc's rule). */
void h_expect_json_documented(json_t *doc, const char *command);

/* Runs `shmguard abort --abort-dir DIR --no-sweep ID...` (NULL-terminated),
 * asserting success: the marker alone, as plain touch writes it, so that the
 * shims' own sweep is what a test sees (test_abort_sweep.c tests abort's). */
void h_abort(const char *abort_dir, ...);

#endif
