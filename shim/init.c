/* Start-up: configuration, fork handlers and the exit summary. */
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
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
#include "siphash.h"

struct sg_config sg_cfg;
struct sg_stats sg_stats;
struct sg_self sg_self;
SG_THREAD_LOCAL bool sg_busy;
SG_THREAD_LOCAL bool sg_watcher_thread;
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
#define SELF_RETRY_MAX 1024
static unsigned self_retry_in, self_backoff;
/* A page the kernel empties in any child that does not share our memory
 * (MADV_WIPEONFORK): a fork or clone system call made without libc's fork,
 * whose child runs no fork handler, shows here as a zero.  NULL where the
 * kernel cannot (before 4.14): then getpid() is asked each time. */
static char *same_process;

static bool still_self(void)
{
	return same_process ? __atomic_load_n(same_process, __ATOMIC_ACQUIRE) != 0 : getpid() == sg_self.pid;
}

/* Only the pid: the rest waits for sg_self_known. */
static void learn_self(void)
{
	sg_self.pid = getpid();
	__atomic_store_n(&self_known, false, __ATOMIC_RELEASE);
	self_retry_in = self_backoff = 0;
	if (same_process)
		__atomic_store_n(same_process, 1, __ATOMIC_RELEASE);
}

const struct sg_self *sg_self_known(void)
{
	if (__builtin_expect(__atomic_load_n(&self_known, __ATOMIC_ACQUIRE) && still_self(), 1))
		return &sg_self;
	pthread_mutex_lock(&self_lock);
	if (!still_self())
		learn_self(); /* a child its parent's fork handlers never saw */
	/* What /proc would not say (no /proc, or no descriptor left) is asked
	 * again after 1, 2, 4 ... SELF_RETRY_MAX calls: until then the records
	 * name an identity nobody will judge dead. */
	if (!self_known && (!self_retry_in || !--self_retry_in)) {
		if (sg_proc_start_ticks(0, &sg_self.start_ticks) < 0)
			sg_self.start_ticks = 0;
		sg_self.pidns = sg_self_pidns();
		sg_tag_head_init(&sg_self.tag_head, sg_self.pid, sg_self.start_ticks, sg_self.pidns);
		if (sg_self.start_ticks && sg_self.pidns) {
			__atomic_store_n(&self_known, true, __ATOMIC_RELEASE);
		} else {
			self_backoff = self_backoff ? (self_backoff * 2 > SELF_RETRY_MAX ? SELF_RETRY_MAX : self_backoff * 2) : 1;
			self_retry_in = self_backoff;
		}
	}
	pthread_mutex_unlock(&self_lock);
	return &sg_self;
}

static void watch_for_children(void)
{
	void *page = sg_real.mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (page == MAP_FAILED)
		return;
	if (madvise(page, 4096, MADV_WIPEONFORK) < 0) {
		sg_real.munmap(page, 4096);
		return;
	}
	same_process = page;
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
	pthread_mutex_init(&self_lock, NULL);
	sg_markers_after_fork();
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
	watch_for_children();
	learn_self();
	if ((weak_key = sg_table_key_init()))
		sg_log(SG_LOG_WARN, "%s", weak_key);
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
	sg_jw_exit(true);
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
