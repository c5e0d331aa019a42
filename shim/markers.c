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
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"
#include "marker.h"
#include "registry.h"
#include "reqid.h"
#include "shim.h"
#include "sweep.h"

#define RETRY_MS 200        /* abort directory missing or unsafe: look again */
#define PRUNE_BATCH 1024    /* registry entries checked per second */

static pthread_mutex_t start_lock = PTHREAD_MUTEX_INITIALIZER;
/* Held while markers are acted on, so that exit can wait for a sweep under
 * way and then handle the markers still queued. */
static pthread_mutex_t events_lock = PTHREAD_MUTEX_INITIALIZER;
static bool started;
static int inotify_fd = -1;
static int watch_wd = -1; /* under events_lock */

static bool said_unsafe, said_foreign, said_missing, said_thread;

/* Checked again for every marker: the directory may be opened up later. */
static bool dir_usable(void)
{
	struct stat st;

	if (lstat(sg_cfg.abort_dir, &st) < 0 || !S_ISDIR(st.st_mode))
		return false;
	if (sg_abort_dir_unsafe(&st)) {
		sg_log_once(&said_unsafe, SG_LOG_WARN,
			    "abort directory %s is world-writable without the sticky bit; its markers are ignored "
			    "until that is fixed (chmod +t or chmod o-w)",
			    sg_cfg.abort_dir);
		return false;
	}
	return true;
}

static bool marker_acceptable(const char *request)
{
	char path[SG_PATH_MAX + SG_NAME_MAX + 2];
	struct stat st;

	if (sg_reqid_invalid(request))
		return false;
	snprintf(path, sizeof(path), "%s/%s", sg_cfg.abort_dir, request);
	if (lstat(path, &st) < 0)
		return false;
	if (!sg_marker_owner_ok(&st, geteuid())) {
		sg_count(ignored_markers, 1);
		if (!__atomic_load_n(&said_foreign, __ATOMIC_RELAXED))
			sg_log_once(&said_foreign, SG_LOG_WARN,
				    "ignored marker %s: %s (only regular files owned by uid %u or root count; later "
				    "ones are logged at debug level)",
				    path, S_ISREG(st.st_mode) ? "foreign owner" : "not a regular file",
				    (unsigned)geteuid());
		else
			sg_log(SG_LOG_DEBUG, "ignored marker %s (uid %u, mode %o)", path, (unsigned)st.st_uid,
			       (unsigned)st.st_mode);
		return false;
	}
	return true;
}

static void on_marker(const char *request)
{
	if (dir_usable() && marker_acceptable(request))
		sg_sweep(request);
}

/* Calls fn for every entry of the abort directory. */
static void for_each_marker(void (*fn)(const char *name))
{
	DIR *d = opendir(sg_cfg.abort_dir);
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, ".."))
			fn(e->d_name);
	closedir(d);
}

/* Returns the watch descriptor, or -1 while the directory cannot be watched. */
static int watch_dir(int fd)
{
	int wd;

	if (mkdir(sg_cfg.abort_dir, 0755) == 0)
		sg_log(SG_LOG_DEBUG, "created abort directory %s", sg_cfg.abort_dir);
	if (!dir_usable())
		goto missing;
	wd = inotify_add_watch(fd, sg_cfg.abort_dir,
			       IN_CREATE | IN_MOVED_TO | IN_ATTRIB | IN_ONLYDIR | IN_DONT_FOLLOW | IN_DELETE_SELF |
				       IN_MOVE_SELF);
	if (wd < 0)
		goto missing;
	/* Markers that appeared before the watch. */
	for_each_marker(on_marker);
	return wd;
missing:
	sg_log_once(&said_missing, SG_LOG_INFO, "abort directory %s cannot be watched yet (%s); retrying",
		    sg_cfg.abort_dir, strerror(errno));
	return -1;
}

/* Reads the pending events; returns false when the watch is gone. */
static bool read_events(int fd)
{
	char buf[16 * (sizeof(struct inotify_event) + NAME_MAX + 1)]
		__attribute__((aligned(__alignof__(struct inotify_event))));
	bool alive = true;
	ssize_t n;

	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		for (char *p = buf; p < buf + n;) {
			struct inotify_event *ev = (struct inotify_event *)p;

			if (ev->mask & (IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF))
				alive = false;
			else if (ev->mask & IN_Q_OVERFLOW)
				for_each_marker(on_marker);
			else if (ev->len)
				on_marker(ev->name);
			p += sizeof(*ev) + ev->len;
		}
	}
	return alive;
}

static long now_ms(void)
{
	return (long)(sg_monotonic_ns() / 1000000u);
}

static void *watcher(void *arg)
{
	int fd = (int)(long)arg;
	long ttl_ms = sg_cfg.abort_ttl * 1000L, expire_every = ttl_ms / 10;
	long next_prune = now_ms() + 1000, next_expire = now_ms();

	sg_busy = true;
	if (expire_every < 1000)
		expire_every = 1000;
	if (expire_every > 60000)
		expire_every = 60000;

	for (;;) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		bool watching;
		long now;

		pthread_mutex_lock(&events_lock);
		if (watch_wd < 0)
			watch_wd = watch_dir(fd);
		watching = watch_wd >= 0;
		pthread_mutex_unlock(&events_lock);
		if (poll(&p, 1, watching ? 1000 : RETRY_MS) > 0) {
			pthread_mutex_lock(&events_lock);
			if (!read_events(fd)) {
				inotify_rm_watch(fd, watch_wd);
				watch_wd = -1;
			}
			pthread_mutex_unlock(&events_lock);
		}
		now = now_ms();
		if (now >= next_prune) {
			sg_registry_prune(PRUNE_BATCH);
			next_prune = now + 1000;
		}
		if (watching && now >= next_expire) {
			sg_markers_expire(sg_cfg.abort_dir, sg_cfg.abort_ttl);
			sg_registry_expire_aborts(time(NULL) - (time_t)sg_cfg.abort_ttl);
			next_expire = now + expire_every;
		}
	}
	return NULL;
}

void sg_markers_start(void)
{
	pthread_attr_t attr;
	pthread_t tid;
	sigset_t all, old;
	bool created;
	int fd;

	if (__atomic_load_n(&started, __ATOMIC_ACQUIRE))
		return;
	pthread_mutex_lock(&start_lock);
	if (started)
		goto out;
	fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	if (fd < 0) {
		sg_log_once(&said_thread, SG_LOG_WARN, "cannot watch abort markers (inotify: %s); aborts will not be "
						       "swept in this process", strerror(errno));
		goto out;
	}
	/* Watch and read the markers already there before the creating call
	 * returns, so that its own late put is recognised at once. */
	pthread_mutex_lock(&events_lock);
	watch_wd = watch_dir(fd);
	pthread_mutex_unlock(&events_lock);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	/* The host's signals are for the host's threads: the watcher starts
	 * with every signal blocked, so that not even its first instructions
	 * can run a handler (which may count on running on one of the host's
	 * threads, or on running on one thread at a time). */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	created = pthread_create(&tid, &attr, watcher, (void *)(long)fd) == 0;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!created) {
		close(fd);
		sg_log_once(&said_thread, SG_LOG_WARN, "cannot start the marker watcher thread; aborts will not be "
						       "swept in this process");
	} else {
		__atomic_store_n(&inotify_fd, fd, __ATOMIC_RELEASE);
	}
	pthread_attr_destroy(&attr);
	/* Tried once per process either way: a failure is not retried per call. */
	__atomic_store_n(&started, true, __ATOMIC_RELEASE);
out:
	pthread_mutex_unlock(&start_lock);
}

void sg_markers_drain(void)
{
	if (__atomic_load_n(&inotify_fd, __ATOMIC_ACQUIRE) < 0)
		return;
	pthread_mutex_lock(&events_lock);
	if (watch_wd >= 0)
		read_events(inotify_fd);
	else /* the watcher has not got going (or lost its directory): look */
		for_each_marker(on_marker);
	pthread_mutex_unlock(&events_lock);
}

void sg_markers_after_fork(void)
{
	/* The inherited inotify fd shares its queue with the parent's: reading
	 * it here would steal the parent's events. */
	if (inotify_fd >= 0)
		close(inotify_fd);
	inotify_fd = -1;
	watch_wd = -1;
	pthread_mutex_init(&start_lock, NULL);
	pthread_mutex_init(&events_lock, NULL);
	started = false;
}
