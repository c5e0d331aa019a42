/* The state every part of the shim reads (state.h): the configuration,
 * the counters, the thread-locals and this process's identity.  The bottom
 * of the shim: it calls none of its other parts. */
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "journal.h"
#include "procstat.h"
#include "real.h"
#include "state.h"

struct sg_config sg_cfg;
struct sg_stats sg_stats;
struct sg_self sg_self;
SG_THREAD_LOCAL bool sg_busy;
SG_THREAD_LOCAL bool sg_watcher_thread;
SG_THREAD_LOCAL char sg_thread_request[SG_NAME_MAX + 1];

static pthread_mutex_t self_lock = PTHREAD_MUTEX_INITIALIZER;
static bool self_known;
#define SELF_RETRY_MAX 1024
static unsigned self_retry_in, self_backoff;
/* A page the kernel empties in any child that does not share our memory
 * (MADV_WIPEONFORK): a fork or clone system call made without libc's fork,
 * whose child runs no fork handler, shows here as a zero (COPY_SEEN), and
 * as COPY_RESETTING while one thread of the child resets the shim.  NULL
 * where the kernel cannot (before 4.14): then getpid() is asked each time. */
static char *same_process;
enum { COPY_SEEN = 0, SAME_PROCESS = 1, COPY_RESETTING = 2 };

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
		__atomic_store_n(same_process, SAME_PROCESS, __ATOMIC_RELEASE);
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

int sg_self_claim_copy(void)
{
	char seen = COPY_SEEN;

	if (!same_process || __builtin_expect(__atomic_load_n(same_process, __ATOMIC_ACQUIRE) == SAME_PROCESS, 1))
		return 0;
	if (__atomic_compare_exchange_n(same_process, &seen, COPY_RESETTING, false, __ATOMIC_ACQ_REL,
					__ATOMIC_ACQUIRE))
		return 1;
	return seen == SAME_PROCESS ? 0 : -1;
}

void sg_self_init(void)
{
	watch_for_children();
	learn_self();
}

void sg_state_after_fork_child(void)
{
	memset(&sg_stats, 0, sizeof(sg_stats));
	learn_self();
	pthread_mutex_init(&self_lock, NULL);
}
