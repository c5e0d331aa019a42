#include "markers.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/inotify.h>
#include <linux/close_range.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"
#include "marker.h"
#include "real.h"
#include "registry.h"
#include "roots.h"
#include "state.h"
#include "sweep.h"

#define RETRY_MS 500        /* abort directory missing or gone: look again */
#define PRUNE_BATCH 1024    /* registry entries checked per second */
#define START_WAIT_MS 2000  /* longest a creating call waits for the watcher to place its watch */
#define DRAIN_WAIT_MS 2000  /* longest exit waits for a sweep under way */
#define DRAIN_SLACK_NS 1000000000LL /* markers this much older than the watcher's last read are rescanned at exit */

#define WATCH_MASK (IN_CREATE | IN_MOVED_TO | IN_ATTRIB | IN_ONLYDIR | IN_DELETE_SELF | IN_MOVE_SELF)

static pthread_mutex_t start_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t start_cond;
static bool started, watch_placed; /* under start_lock */

/* Until the watcher has read the markers that were there before its watch
 * (a directory any user may fill: that can take seconds), a creation looks
 * for its own request's marker itself, in the watcher's directory
 * (open_watched).  The watcher's thread ID and the directory's identity are
 * written before first_dir_fd is. */
static bool first_scan_done;
static pid_t watcher_tid;
static dev_t first_dev;
static ino_t first_ino;
static int first_dir_fd = -1;

/* Held while markers are acted on, so that exit can wait for a sweep under
 * way and then look for the markers the watcher has not read yet. */
static pthread_mutex_t events_lock = PTHREAD_MUTEX_INITIALIZER;

/* The watcher's descriptors live in a descriptor table of its own
 * (close_range(CLOSE_RANGE_UNSHARE)): the program can neither close them
 * nor find them in its way, however it closes descriptors (close-all loops,
 * closefrom, raw system calls).  Only the watcher uses them. */
static int inotify_fd = -1, dir_fd = -1, watch_wd = -1;

/* The directory watched (under events_lock), for the exit scan: its identity,
 * and the time before the watcher's last read of its events. */
static bool have_dir;
static dev_t dir_dev;
static ino_t dir_ino;
static long long read_upto_ns;

static bool lost; /* the directory was watched, then moved or removed */

static bool said_refused, said_foreign, said_missing, said_symlink, said_unusable, said_lost, said_back,
	said_unstamped, said_thread, said_drain;

static long long realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME_COARSE, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Checked again for every marker: the directory may be opened up (or
 * fixed) later. */
static bool dir_trusted(int dfd)
{
	struct stat st;
	const char *why;

	if (fstat(dfd, &st) < 0)
		return false;
	if (sg_abort_dir_check(&st, geteuid(), &why) < 0)
		sg_log_once(&said_refused, SG_LOG_WARN,
			    "abort directory %s %s (uid %u, mode %04o); its markers are ignored until that is fixed (%s)",
			    sg_cfg.abort_dir, why, (unsigned)st.st_uid, (unsigned)st.st_mode & 07777,
			    sg_abort_dir_remedy(&st, geteuid()));
	return !why;
}

static bool marker_acceptable(int dfd, const char *request)
{
	struct stat st;
	const char *why;

	if (sg_marker_check(dfd, request, geteuid(), &st, &why) == 0)
		return true;
	if (!st.st_mode) /* a bad name, or gone already */
		return false;
	sg_count(ignored_markers, 1);
	if (!__atomic_load_n(&said_foreign, __ATOMIC_RELAXED))
		sg_log_once(&said_foreign, SG_LOG_WARN,
			    "ignored marker %s/%s: %s (only regular files with one link owned by uid %u or root "
			    "count; later ones are logged at debug level)",
			    sg_cfg.abort_dir, request, why, (unsigned)geteuid());
	else
		sg_log(SG_LOG_DEBUG, "ignored marker %s/%s: %s (uid %u, mode %o, %u links)", sg_cfg.abort_dir, request,
		       why, (unsigned)st.st_uid, (unsigned)st.st_mode, (unsigned)st.st_nlink);
	return false;
}

static void on_marker(int dfd, const char *request)
{
	if (!dir_trusted(dfd)) {
		sg_count(ignored_markers, 1);
		return;
	}
	if (marker_acceptable(dfd, request))
		sg_sweep(request);
}

unsigned sg_markers_scan(int dfd, long long since_ns)
{
	int fd = sg_real.openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *e;
	unsigned seen = 0;

	if (!d) {
		if (fd >= 0)
			sg_real.close(fd);
		return 0;
	}
	while ((e = readdir(d))) {
		struct stat st;

		seen++;
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (since_ns && (fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
				 st.st_ctim.tv_sec * 1000000000LL + st.st_ctim.tv_nsec < since_ns))
			continue;
		on_marker(dfd, e->d_name);
	}
	closedir(d);
	return seen;
}

/* The watcher's descriptors are kept high in its table, so that a stray
 * write to 0, 1 or 2 there can reach none of them, and so that their numbers
 * rarely coincide with the program's (which matters to fd-tracking tools
 * such as ThreadSanitizer, unaware that the tables differ). */
static int move_high(int fd)
{
	struct rlimit rl;
	int base = 3, high;

	if (fd < 0)
		return fd;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur > 64)
		base = (int)(rl.rlim_cur < 1024 ? rl.rlim_cur : 1024) - 32;
	high = fcntl(fd, F_DUPFD_CLOEXEC, base);
	if (high < 0)
		return fd;
	sg_real.close(fd);
	return high;
}

/* Whether the path still names directory fd, of identity dev and ino: only
 * right after a watch was placed through the path. */
static bool still_there(int fd, dev_t dev, ino_t ino)
{
	struct stat st;

	return fstat(fd, &st) == 0 && st.st_nlink > 0 &&
	       fstatat(AT_FDCWD, sg_cfg.abort_dir, &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_dev == dev &&
	       st.st_ino == ino;
}

/* A removed directory that is still open (as the watched one is) gives no
 * IN_DELETE_SELF; a moved one gives IN_MOVE_SELF.  Asked of the descriptor
 * alone, never of the path again: after the program's chroot() the path
 * names nothing, or something else. */
static bool removed(int fd)
{
	struct stat st;

	return fstat(fd, &st) < 0 || st.st_nlink == 0;
}

/* Watches the abort directory (created if missing when create is set);
 * whether it does.  The caller then reads the markers already there.
 * Under events_lock. */
static bool attach(bool create)
{
	char proc_path[64];
	struct stat st;
	int fd, wd, err;

	fd = sg_abort_dir_open(sg_cfg.abort_dir, create);
	if (fd < 0) {
		err = -fd;
		goto fail;
	}
	fd = move_high(fd);
	if (fstat(fd, &st) < 0) {
		err = errno;
		goto fail;
	}
	/* The watch is placed on the directory that was opened and checked,
	 * through this thread's own table, not through the path again. */
	snprintf(proc_path, sizeof(proc_path), "/proc/thread-self/fd/%d", fd);
	wd = inotify_add_watch(inotify_fd, proc_path, WATCH_MASK);
	/* Without /proc, through the path, checked after.  (Were it another
	 * directory, its events would only name markers looked for in ours.) */
	if (wd < 0 && errno == ENOENT && access("/proc/thread-self", F_OK) < 0) {
		wd = inotify_add_watch(inotify_fd, sg_cfg.abort_dir, WATCH_MASK | IN_DONT_FOLLOW);
		if (wd >= 0 && !still_there(fd, st.st_dev, st.st_ino)) {
			inotify_rm_watch(inotify_fd, wd);
			errno = ESTALE;
			wd = -1;
		}
	}
	if (wd < 0) {
		err = errno;
		goto fail;
	}
	if (lost)
		sg_log_once(&said_back, SG_LOG_INFO, "abort directory %s is there again; watching it", sg_cfg.abort_dir);
	lost = false;
	dir_fd = fd;
	watch_wd = wd;
	dir_dev = st.st_dev;
	dir_ino = st.st_ino;
	have_dir = true;
	read_upto_ns = realtime_ns();
	/* A refusal is said now, not at the first marker. */
	if (dir_trusted(fd) && !sg_abort_dir_stamped(fd, geteuid()))
		sg_log_once(&said_unstamped, SG_LOG_INFO, "abort directory %s was not made by shmguard (it has no %s): "
			    "old markers are not removed from it", sg_cfg.abort_dir, SG_ABORT_DIR_STAMP);
	return true;
fail:
	if (err == ELOOP)
		sg_log_once(&said_symlink, SG_LOG_WARN, "abort directory %s is a symbolic link, which is never "
			    "followed: no marker is read until a directory is there (remove the link)", sg_cfg.abort_dir);
	else if (err != ENOENT)
		sg_log_once(&said_unusable, SG_LOG_WARN, "abort directory %s cannot be watched (%s); looking again "
			    "every %d ms", sg_cfg.abort_dir, strerror(err), RETRY_MS);
	else if (!lost) /* a loss was said already */
		sg_log_once(&said_missing, SG_LOG_INFO, "abort directory %s is missing; looking for it every %d ms",
			    sg_cfg.abort_dir, RETRY_MS);
	if (fd >= 0)
		sg_real.close(fd);
	return false;
}

/* The directory was moved or removed (an administrator's doing, say): the
 * markers written to its path no longer land in it.  It is not re-created;
 * the watcher looks for a directory at the path again every RETRY_MS.
 * Under events_lock. */
static void detach(bool watch_gone)
{
	if (!watch_gone)
		inotify_rm_watch(inotify_fd, watch_wd);
	sg_real.close(dir_fd);
	dir_fd = watch_wd = -1;
	have_dir = false;
	lost = true;
	sg_log_once(&said_lost, SG_LOG_WARN, "abort directory %s was moved or removed; markers are not acted on until "
		    "a directory is there again (it is not re-created; looked for every %d ms)", sg_cfg.abort_dir,
		    RETRY_MS);
}

/* Reads and acts on the pending events.  Under events_lock. */
static void read_events(void)
{
	char buf[16 * (sizeof(struct inotify_event) + NAME_MAX + 1)]
		__attribute__((aligned(__alignof__(struct inotify_event))));
	long long upto = realtime_ns();
	ssize_t n;

	while ((n = read(inotify_fd, buf, sizeof(buf))) > 0) {
		for (char *p = buf; p < buf + n;) {
			struct inotify_event *ev = (struct inotify_event *)p;

			p += sizeof(*ev) + ev->len;
			if (ev->mask & IN_Q_OVERFLOW) {
				if (dir_fd >= 0)
					sg_markers_scan(dir_fd, 0);
			} else if (ev->wd != watch_wd) {
				continue; /* a watch already given up (its IN_IGNORED) */
			} else if (ev->mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED | IN_UNMOUNT)) {
				detach(ev->mask & IN_IGNORED);
			} else if (ev->len) {
				on_marker(dir_fd, ev->name);
			}
		}
	}
	read_upto_ns = upto;
}

static long now_ms(void)
{
	return (long)(sg_monotonic_ns() / 1000000u);
}

static void watch_is_placed(void)
{
	pthread_mutex_lock(&start_lock);
	watch_placed = true;
	pthread_cond_broadcast(&start_cond);
	pthread_mutex_unlock(&start_lock);
}

/* Gives this thread a descriptor table of its own, empty: nothing of the
 * program's is held open by it, and nothing of its own is in the program's. */
static bool own_fd_table(void)
{
	int pidfd;

	/* System calls rather than glibc's wrappers, which came in 2.34 and 2.36. */
	if (syscall(SYS_close_range, 0U, ~0U, CLOSE_RANGE_UNSHARE) < 0) {
		sg_log_once(&said_thread, SG_LOG_WARN, "cannot give the marker watcher a descriptor table of its own "
			    "(close_range: %s); aborts will not be swept in this process", strerror(errno));
		return false;
	}
	pidfd = move_high((int)syscall(SYS_pidfd_open, getpid(), 0U));
	sg_log_from_own_table(pidfd);
	return true;
}

static void *watcher(void *arg)
{
	long ttl_ms = sg_cfg.abort_ttl * 1000L, expire_every = ttl_ms / 10;
	long next_prune = now_ms() + 1000, next_check = next_prune, next_expire = now_ms(), next_retry = 0;

	(void)arg;
	sg_enter();
	sg_watcher_thread = true;
	watcher_tid = gettid();
	if (expire_every < 1000)
		expire_every = 1000;
	if (expire_every > 60000)
		expire_every = 60000;
	if (!own_fd_table()) {
		watch_is_placed();
		return NULL;
	}
	sg_roots_open(move_high);
	inotify_fd = move_high(inotify_init1(IN_CLOEXEC | IN_NONBLOCK));
	if (inotify_fd < 0) {
		sg_log_once(&said_thread, SG_LOG_WARN, "cannot watch abort markers (inotify: %s); aborts will not be "
			    "swept in this process", strerror(errno));
		watch_is_placed();
		return NULL;
	}
	/* The creating call waits for the watch only: the markers already
	 * there are read after it is let go (it looks for its own meanwhile,
	 * sg_markers_aborted), and those that come later are events. */
	pthread_mutex_lock(&events_lock);
	if (attach(true)) {
		first_dev = dir_dev;
		first_ino = dir_ino;
		__atomic_store_n(&first_dir_fd, dir_fd, __ATOMIC_RELEASE);
	} else {
		__atomic_store_n(&first_scan_done, true, __ATOMIC_RELEASE);
	}
	watch_is_placed();
	if (dir_fd >= 0) {
		unsigned seen = sg_markers_scan(dir_fd, 0);

		sg_log(SG_LOG_INFO, "abort directory %s: first look done, %u entries", sg_cfg.abort_dir, seen);
	}
	__atomic_store_n(&first_scan_done, true, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&events_lock);

	for (;;) {
		struct pollfd p = {.fd = inotify_fd, .events = POLLIN};
		long now;

		if (poll(&p, 1, dir_fd >= 0 ? 1000 : RETRY_MS) > 0) {
			pthread_mutex_lock(&events_lock);
			read_events();
			pthread_mutex_unlock(&events_lock);
		}
		now = now_ms();
		if (dir_fd >= 0 && now >= next_check) {
			pthread_mutex_lock(&events_lock);
			if (dir_fd >= 0 && removed(dir_fd))
				detach(false);
			pthread_mutex_unlock(&events_lock);
			next_check = now + 1000;
		}
		if (dir_fd < 0 && now >= next_retry) {
			pthread_mutex_lock(&events_lock);
			if (attach(false))
				sg_markers_scan(dir_fd, 0); /* markers that appeared before the watch */
			pthread_mutex_unlock(&events_lock);
			next_retry = now + RETRY_MS;
		}
		if (now >= next_prune) {
			sg_registry_prune(PRUNE_BATCH, sg_segment_gone);
			next_prune = now + 1000;
		}
		if (now >= next_expire) {
			if (dir_fd >= 0)
				sg_markers_expire(dir_fd, sg_cfg.abort_ttl);
			sg_registry_expire_aborts(time(NULL) - (time_t)sg_cfg.abort_ttl);
			next_expire = now + expire_every;
		}
	}
	return NULL;
}

/* A vfork child (or any child made without the fork handlers) shares or
 * copies the parent's memory but is not the parent: it must not start the
 * parent's watcher, nor wait for it. */
static bool in_own_process(void)
{
	return getpid() == sg_self.pid;
}

static void wait_for_watch(void)
{
	struct timespec until;

	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += START_WAIT_MS / 1000;
	while (!watch_placed && pthread_cond_timedwait(&start_cond, &start_lock, &until) == 0)
		;
}

void sg_markers_start(void)
{
	pthread_condattr_t cattr;
	pthread_attr_t attr;
	pthread_t tid;
	sigset_t all, old;
	bool created;

	if (__atomic_load_n(&started, __ATOMIC_ACQUIRE) || !in_own_process())
		return;
	pthread_mutex_lock(&start_lock);
	if (started)
		goto out;
	/* Tried once per process either way (a failure is not retried per
	 * call), and set before the wait below lets go of the lock. */
	__atomic_store_n(&started, true, __ATOMIC_RELEASE);
	pthread_condattr_init(&cattr);
	pthread_condattr_setclock(&cattr, CLOCK_MONOTONIC);
	pthread_cond_init(&start_cond, &cattr);
	pthread_condattr_destroy(&cattr);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	/* The host's signals are for the host's threads: the watcher starts
	 * with every signal blocked, so that not even its first instructions
	 * can run a handler (which may count on running on one of the host's
	 * threads, or on running on one thread at a time). */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	created = pthread_create(&tid, &attr, watcher, NULL) == 0;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	if (created)
		wait_for_watch();
	else
		sg_log_once(&said_thread, SG_LOG_WARN, "cannot start the marker watcher thread; aborts will not be "
						       "swept in this process");
out:
	pthread_mutex_unlock(&start_lock);
}

/* The watcher's directory (its descriptor watched, of identity dev and ino)
 * opened in the calling thread's table: through the watcher's descriptor
 * (/proc/self/task/TID/fd/N), or through the path where there is no /proc.
 * negative unless what was opened is that very directory. */
static int open_watched(int watched, dev_t dev, ino_t ino)
{
	char path[64];
	struct stat st;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/task/%d/fd/%d", (int)watcher_tid, watched);
	fd = sg_real.open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 && access("/proc/self", F_OK) < 0)
		fd = sg_abort_dir_open(sg_cfg.abort_dir, false);
	if (fd >= 0 && (fstat(fd, &st) < 0 || st.st_dev != dev || st.st_ino != ino)) {
		sg_real.close(fd);
		fd = -1;
	}
	return fd;
}

bool sg_markers_first_look_done(void)
{
	return __atomic_load_n(&first_scan_done, __ATOMIC_ACQUIRE);
}

bool sg_markers_aborted(const char *request)
{
	bool aborted;
	int fd, watched;

	if (!in_own_process() ||
	    (watched = __atomic_load_n(&first_dir_fd, __ATOMIC_ACQUIRE)) < 0 ||
	    (fd = open_watched(watched, first_dev, first_ino)) < 0)
		return false;
	aborted = dir_trusted(fd) && marker_acceptable(fd, request);
	sg_real.close(fd);
	return aborted;
}

void sg_markers_drain(void)
{
	struct timespec until;
	int fd;

	if (!__atomic_load_n(&started, __ATOMIC_ACQUIRE) || !in_own_process())
		return;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += DRAIN_WAIT_MS / 1000;
	if (pthread_mutex_timedlock(&events_lock, &until) != 0) {
		sg_log_once(&said_drain, SG_LOG_WARN, "exit: the marker watcher is still busy; markers that came in "
			    "the last moments may not be acted on");
		return;
	}
	/* The watcher's descriptors are not in this thread's table: the
	 * directory is opened again and must be the one watched.  Markers
	 * changed since the watcher's last read (and a margin) are acted on. */
	fd = have_dir ? open_watched(dir_fd, dir_dev, dir_ino) : -1;
	if (fd >= 0) {
		sg_markers_scan(fd, read_upto_ns - DRAIN_SLACK_NS);
		sg_real.close(fd);
	}
	pthread_mutex_unlock(&events_lock);
}

void sg_markers_after_fork(void)
{
	/* The watcher did not survive the fork, and its descriptors were never
	 * in the table the child copied. */
	inotify_fd = dir_fd = watch_wd = -1;
	have_dir = lost = false;
	sg_roots_forget();
	pthread_mutex_init(&start_lock, NULL);
	pthread_mutex_init(&events_lock, NULL);
	started = watch_placed = first_scan_done = false;
	first_dir_fd = -1;
}
