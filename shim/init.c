/* Start-up (the configuration, read once by the first call that needs it),
 * the fork handlers, which call each module's own fork hooks, and the exit
 * summary.  Below the entry points that start it (interpose.c, track.c),
 * above the modules it orchestrates; the state they all read is state.c. */
#include <pthread.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "journal_writer.h"
#include "log.h"
#include "mappings.h"
#include "markers.h"
#include "real.h"
#include "registry.h"
#include "state.h"
#include "siphash.h"

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static bool active;

static void before_fork(void)
{
	sg_registry_lock();
	sg_mappings_lock();
}

static void after_fork_parent(void)
{
	sg_mappings_unlock();
	sg_registry_unlock();
}

/* The child is a new process: the segments it inherited records of were
 * created by its parent, which sweeps them; its watcher thread did not
 * survive the fork and starts again on the child's first tagged creation. */

static void after_fork_child(void)
{
	sg_mappings_unlock();
	sg_jw_after_fork_child();
	sg_registry_unlock();
	sg_registry_forget_all();
	sg_mappings_after_fork();
	sg_state_after_fork_child();
	sg_markers_after_fork();
}

/* A child of a raw clone(2), which ran no fork handler: the child's
 * handler's work, with the locks made anew (the copy may hold them for
 * threads it does not have) and the parent's records abandoned, not freed.
 * The identity comes last: learning it ends the reset. */
static void after_unseen_fork(void)
{
	sg_mappings_after_unseen_fork();
	sg_jw_after_fork_child();
	sg_registry_abandon();
	sg_markers_after_fork();
	sg_state_after_fork_child();
}

/* A root that is not there is a misconfiguration (a typo), said once: its
 * files are tracked from when it exists. */
static void warn_missing_roots(void)
{
	struct stat st;

	for (unsigned k = 0; k < sg_cfg.roots.n; k++)
		if (stat(sg_cfg.roots.dir[k], &st) < 0 || !S_ISDIR(st.st_mode))
			sg_log(SG_LOG_WARN, "shm root %s is not a directory here: nothing created under it is tracked "
					    "until it is", sg_cfg.roots.dir[k]);
}

static void init(void)
{
	const char *weak_key;
	char err[256];

	sg_real_ensure();
	if (sg_config_from_env(&sg_cfg, err, sizeof(err)) < 0) {
		sg_log_level = sg_cfg.log_level;
		sg_log(SG_LOG_WARN, "bad configuration, %s; shmguard is disabled in this process and every call "
				    "passes through untouched",
		       err);
		return;
	}
	sg_log_level = sg_cfg.log_level;
	if (pthread_atfork(before_fork, after_fork_parent, after_fork_child) != 0) {
		sg_log(SG_LOG_WARN, "cannot install fork handlers; shmguard is disabled in this process");
		return;
	}
	sg_self_init();
	if ((weak_key = sg_table_key_init()))
		sg_log(SG_LOG_WARN, "%s", weak_key);
	active = true;
	warn_missing_roots();
	sg_log(SG_LOG_DEBUG, "active: %u pattern(s), abort dir %s, %u shm root(s)", sg_cfg.patterns.count,
	       sg_cfg.abort_dir, sg_cfg.roots.n);
}

bool sg_active(void)
{
	pthread_once(&init_once, init);
	if (__builtin_expect(active, 1)) {
		int copy = sg_self_claim_copy();

		if (__builtin_expect(copy < 0, 0))
			return false; /* another thread resets the shim: this call passes through */
		if (__builtin_expect(copy > 0, 0))
			after_unseen_fork();
	}
	return active;
}

__attribute__((constructor)) static void shmguard_init(void)
{
	sg_active();
}

__attribute__((destructor)) static void shmguard_fini(void)
{
	struct sg_stats *s = &sg_stats;

	if (!active)
		return;
	sg_enter();
	sg_markers_drain();
	sg_registry_exit(true);
	if (!s->tagged && !s->ambiguous && !s->ignored_markers && !s->signal_misses)
		return;
	sg_log(SG_LOG_INFO,
	       "summary: tagged %llu, swept %llu (%llu bytes), late puts %llu, left (name reused) %llu, "
	       "already gone %llu, ambiguous %llu, ignored markers %llu, unlinked but still mapped %llu bytes, "
	       "created in signal handlers (not tracked) %llu",
	       (unsigned long long)s->tagged, (unsigned long long)s->swept, (unsigned long long)s->swept_bytes,
	       (unsigned long long)s->late_puts, (unsigned long long)s->replaced, (unsigned long long)s->vanished,
	       (unsigned long long)s->ambiguous, (unsigned long long)s->ignored_markers,
	       (unsigned long long)s->mapped_bytes, (unsigned long long)s->signal_misses);
}
