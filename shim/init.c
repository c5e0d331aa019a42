/* Start-up: configuration, fork handlers and the exit summary. */
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "journal.h"
#include "journal_writer.h"
#include "log.h"
#include "mappings.h"
#include "procstat.h"
#include "markers.h"
#include "real.h"
#include "registry.h"
#include "shim.h"

struct sg_config sg_cfg;
struct sg_stats sg_stats;
struct sg_self sg_self;
SG_THREAD_LOCAL bool sg_busy;
SG_THREAD_LOCAL char sg_thread_request[SG_NAME_MAX + 1];

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static bool active;

static void before_fork(void)
{
	sg_registry_lock();
	sg_jw_lock();
	sg_mappings_lock();
}

static void after_fork_parent(void)
{
	sg_mappings_unlock();
	sg_jw_unlock();
	sg_registry_unlock();
}

static pthread_mutex_t self_lock = PTHREAD_MUTEX_INITIALIZER;
static bool self_known;

const struct sg_self *sg_self_known(void)
{
	pthread_mutex_lock(&self_lock);
	if (!self_known) {
		if (sg_proc_start_ticks(0, &sg_self.start_ticks) < 0)
			sg_self.start_ticks = 0;
		sg_self.pidns = sg_self_pidns();
		sg_tag_head_init(&sg_self.tag_head, sg_self.pid, sg_self.start_ticks, sg_self.pidns);
		self_known = true;
	}
	pthread_mutex_unlock(&self_lock);
	return &sg_self;
}

/* Only the pid: the rest waits for sg_self_known. */
static void learn_self(void)
{
	sg_self.pid = getpid();
	self_known = false;
	pthread_mutex_init(&self_lock, NULL);
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
	memset(&sg_stats, 0, sizeof(sg_stats));
	learn_self();
	sg_markers_after_fork();
}

static void init(void)
{
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
	learn_self();
	active = true;
	sg_log(SG_LOG_DEBUG, "active: %u pattern(s), abort dir %s, %u shm root(s)", sg_cfg.patterns.count,
	       sg_cfg.abort_dir, sg_cfg.roots.n);
}

bool sg_active(void)
{
	pthread_once(&init_once, init);
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
	sg_jw_exit();
	if (!s->tagged && !s->ambiguous && !s->ignored_markers)
		return;
	sg_log(SG_LOG_INFO,
	       "summary: tagged %llu, swept %llu (%llu bytes), late puts %llu, left (name reused) %llu, "
	       "already gone %llu, ambiguous %llu, ignored markers %llu, unlinked but still mapped %llu bytes",
	       (unsigned long long)s->tagged, (unsigned long long)s->swept, (unsigned long long)s->swept_bytes,
	       (unsigned long long)s->late_puts, (unsigned long long)s->replaced, (unsigned long long)s->vanished,
	       (unsigned long long)s->ambiguous, (unsigned long long)s->ignored_markers,
	       (unsigned long long)s->mapped_bytes);
}
