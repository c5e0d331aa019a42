/* Workloads that measure what the shim costs.  Run with and without
 * LD_PRELOAD by scripts/bench.sh; each prints one result line.
 *
 *   bench_shim open-close N PATH          ns per open+close of PATH (not under a shm root)
 *   bench_shim map N PATH                 ns per mmap+munmap of a 4 KiB shared mapping of PATH
 *                                         (a file outside the roots): what the shim's mapping
 *                                         wrappers cost every mapping of the program
 *   bench_shim creat-close N PATH         the same with O_CREAT|O_WRONLY (PATH exists after the
 *                                         first): what deciding that PATH is in no root costs
 *   bench_shim lifecycle N PREFIX         ns per segment lifecycle: shm_open create,
 *                                         ftruncate, mmap, write, munmap, close, shm_unlink
 *   bench_shim lifecycle-floor N PREFIX [WATCH_DIR]
 *                                         the same plus, by hand, the two system calls the
 *                                         shim adds to a tagged creation (statx for the
 *                                         inode, fsetxattr for the tag); with WATCH_DIR,
 *                                         also an idle thread holding an inotify watch on
 *                                         it, as the shim's marker watcher does: what no
 *                                         shim built as the issue asks can go below
 *   bench_shim lifecycle-floor-journal N PREFIX WATCH_DIR
 *                                         the same with journal tags (the default): the
 *                                         statx alone (a journal record is stores into
 *                                         memory) and the idle watcher
 *   bench_shim putget N PREFIX            ns per put and get of a 48 KiB payload as vllm-omni's
 *                                         SHM connector makes them: the segment guarded by an
 *                                         flock'ed lock file shm_KEY_lockfile.lock, written by
 *                                         the put, read, unlinked with its lock by the get
 *   bench_shim putget-floor N PREFIX WATCH_DIR
 *                                         the same plus, by hand, what the shim adds to it
 *                                         with journal tags: an exclusive open first where
 *                                         the program's open may create (the lock file; the
 *                                         get's then fails, EEXIST), statx for the inode of
 *                                         each file created, and the idle watcher thread
 *   bench_shim fork N                     ns per fork of a child that exits at once (exit:
 *                                         its exit handlers run), waited for: what a forking
 *                                         server (PostgreSQL's parallel workers) pays a child
 *   bench_shim churn N PREFIX             creates and unlinks N empty files as fast as it can
 *                                         (files/s): a burst of shm events for the auditor
 *   bench_shim keep N PREFIX              creates N empty files and leaves them (for the
 *                                         auditor's memory per tracked file)
 *   bench_shim keep-offload N PREFIX      the same with vLLM's offload names,
 *                                         vllm_offload_chatcmpl-<32 hex>.mmap (the hex from
 *                                         PREFIX and the count): what the journal takes per
 *                                         live file with the pattern vllm_offload_{req}.mmap
 *   bench_shim sweep ROUNDS K LIVE PREFIX ABORT_DIR [THREADS [SHMGUARD]]
 *                                         creates LIVE segments of other requests, then per
 *                                         round K segments of a fresh request and its abort
 *                                         marker; prints the median and p99 microseconds from
 *                                         the marker to the last of the K names being gone
 *                                         (needs the shim; removes what it made).  THREADS
 *                                         threads meanwhile create and unlink segments of
 *                                         their own requests in a loop (the load).  Without
 *                                         SHMGUARD the marker is written here, as touch or
 *                                         `abort --no-sweep` write it, and the shim's watcher
 *                                         sweeps; with it, each round runs `SHMGUARD abort`,
 *                                         which sweeps itself: the time is then the one it
 *                                         prints (its first marker to its last unlink), and
 *                                         the command's start to its exit is printed too;
 *                                         its files must be gone when it exits.  The thread
 *                                         that writes the marker and watches the names go is
 *                                         real-time where it may be (observer=rt; see
 *                                         observe_realtime), so that its own wait to run
 *                                         among the busy threads is not measured
 *   bench_shim sweep-floor ROUNDS K LIVE PREFIX THREADS [SLICE_NS]
 *                                         the same load and rounds, but what no sweeper in
 *                                         the same root can go below: instead of a marker, a
 *                                         sleeping thread of this process is woken (a pipe) and
 *                                         unlinks the K names by raw system calls; with
 *                                         SLICE_NS it asks for that scheduling slice first
 *                                         (Linux 6.12+; "sweep-floor-short-slice" when the
 *                                         kernel took it) */
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <spawn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int open_close(long n, const char *path, bool create)
{
	int flags = create ? O_CREAT | O_WRONLY | O_CLOEXEC : O_RDONLY | O_CLOEXEC;
	double t0 = now_ns();

	for (long i = 0; i < n; i++) {
		int fd = open(path, flags, 0600);
		if (fd < 0) {
			perror(path);
			return 1;
		}
		close(fd);
	}
	printf("%s %.1f ns/op\n", create ? "creat-close" : "open-close", (now_ns() - t0) / n);
	return 0;
}

static int map_unmap(long n, const char *path)
{
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	double t0;

	if (fd < 0 || ftruncate(fd, 4096) < 0) {
		perror(path);
		return 1;
	}
	t0 = now_ns();
	for (long i = 0; i < n; i++) {
		void *p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
		if (p == MAP_FAILED) {
			perror("mmap");
			close(fd);
			return 1;
		}
		munmap(p, 4096);
	}
	printf("map %.1f ns/op\n", (now_ns() - t0) / n);
	close(fd);
	return 0;
}

static void *idle_watcher(void *arg)
{
	struct pollfd p = {.fd = (int)(long)arg, .events = POLLIN};

	for (;;)
		poll(&p, 1, 1000);
	return NULL;
}

/* What the shim's marker watcher leaves behind while the program works: an
 * inotify watch on the abort directory and a thread asleep on it. */
static int start_idle_watcher(const char *dir)
{
	pthread_attr_t attr;
	pthread_t tid;
	int fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);

	mkdir(dir, 0755);
	if (fd < 0 || inotify_add_watch(fd, dir, IN_CREATE | IN_MOVED_TO | IN_ATTRIB | IN_ONLYDIR) < 0) {
		perror(dir);
		return -1;
	}
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	if (pthread_create(&tid, &attr, idle_watcher, (void *)(long)fd) != 0)
		return -1;
	pthread_attr_destroy(&attr);
	return 0;
}

/* What a lifecycle's floor makes by hand: nothing, the statx the shim
 * makes for the inode, or that and the xattr tag. */
enum lifecycle_floor { FLOOR_NONE, FLOOR_STATX, FLOOR_XATTR };

static int lifecycle(long n, const char *prefix, enum lifecycle_floor floor, const char *watch_dir)
{
	static const char tag[] = "shmguard/1 pid=4242 start=123456 created=1795968667504769199 req=bench-0";
	char name[256];
	struct statx stx;
	double t0;

	if (watch_dir && start_idle_watcher(watch_dir) < 0)
		return 1;
	t0 = now_ns();
	for (long i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "/%s%ld_0_0", prefix, i);
		int fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
		if (fd < 0 ||
		    (floor != FLOOR_NONE && statx(fd, "", AT_EMPTY_PATH, STATX_INO, &stx) < 0) ||
		    (floor == FLOOR_XATTR && fsetxattr(fd, "user.shmguard", tag, sizeof(tag) - 1, 0) < 0) ||
		    ftruncate(fd, 4096) < 0) {
			perror(name);
			return 1;
		}
		char *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (p == MAP_FAILED) {
			perror("mmap");
			return 1;
		}
		p[0] = 1;
		munmap(p, 4096);
		close(fd);
		shm_unlink(name);
	}
	printf("%s %.1f ns/op\n", floor == FLOOR_NONE ? "lifecycle" : "lifecycle-floor", (now_ns() - t0) / n);
	if (watch_dir)
		rmdir(watch_dir);
	return 0;
}

enum { PAYLOAD = 48 * 1024 };

/* With floor set, put and get make by hand the system calls the shim adds. */
static bool floor_calls;

/* fd was just created: the shim learns its inode. */
static int learn_inode(int fd)
{
	struct statx stx;

	return floor_calls ? statx(fd, "", AT_EMPTY_PATH, STATX_INO, &stx) : 0;
}

/* The lock file of a key, opened (created if need be) and flock'ed. */
static int lock_key(const char *key, int how)
{
	char path[300];
	int fd = -1;

	snprintf(path, sizeof(path), "/dev/shm/shm_%s_lockfile.lock", key);
	/* The shim learns whether the open creates the file, without a race. */
	if (floor_calls && (fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600)) >= 0 && learn_inode(fd) < 0)
		return -1;
	if (fd < 0)
		fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd >= 0 && flock(fd, how) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static int put(const char *key, const char *payload)
{
	char name[300];
	int lock = lock_key(key, LOCK_EX), fd;
	char *p;

	snprintf(name, sizeof(name), "/%s", key);
	if (lock < 0 || (fd = shm_open(name, O_CREAT | O_RDWR, 0600)) < 0 || learn_inode(fd) < 0)
		return -1;
	if (ftruncate(fd, PAYLOAD) < 0 ||
	    (p = mmap(NULL, PAYLOAD, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED)
		return -1;
	memcpy(p, payload, PAYLOAD);
	munmap(p, PAYLOAD);
	close(fd);
	flock(lock, LOCK_UN);
	close(lock);
	return 0;
}

static int get(const char *key, char *payload)
{
	char name[300], path[300];
	int lock = lock_key(key, LOCK_SH), fd;
	char *p;

	snprintf(name, sizeof(name), "/%s", key);
	snprintf(path, sizeof(path), "/dev/shm/shm_%s_lockfile.lock", key);
	if (lock < 0 || (fd = shm_open(name, O_RDWR, 0600)) < 0)
		return -1;
	if ((p = mmap(NULL, PAYLOAD, PROT_READ, MAP_SHARED, fd, 0)) == MAP_FAILED)
		return -1;
	memcpy(payload, p, PAYLOAD);
	munmap(p, PAYLOAD);
	close(fd);
	shm_unlink(name);
	flock(lock, LOCK_UN);
	close(lock);
	unlink(path);
	return 0;
}

static int putget(long n, const char *prefix, const char *watch_dir)
{
	static char out[PAYLOAD], in[PAYLOAD];
	char key[256];
	double t0;

	floor_calls = watch_dir != NULL;
	if (watch_dir && start_idle_watcher(watch_dir) < 0)
		return 1;
	memset(out, 'x', sizeof(out));
	t0 = now_ns();
	for (long i = 0; i < n; i++) {
		snprintf(key, sizeof(key), "%s%ld_0_0", prefix, i);
		if (put(key, out) < 0 || get(key, in) < 0) {
			perror(key);
			return 1;
		}
	}
	printf("%s %.1f ns/op\n", watch_dir ? "putget-floor" : "putget", (now_ns() - t0) / n);
	if (watch_dir)
		rmdir(watch_dir);
	return 0;
}

static int fork_exit(long n)
{
	double t0 = now_ns();

	for (long i = 0; i < n; i++) {
		pid_t pid = fork();
		if (pid < 0) {
			perror("fork");
			return 1;
		}
		if (pid == 0)
			exit(0);
		waitpid(pid, NULL, 0);
	}
	printf("fork %.1f ns/op\n", (now_ns() - t0) / n);
	return 0;
}

/* Creates n empty files, unlinking each at once (churn) or leaving them
 * (keep), named as the pipeline's chunks or, with offload, as vLLM's
 * offload files vllm_offload_chatcmpl-<32 hex>.mmap (the hex from prefix
 * and the count). */
static int make_files(long n, const char *prefix, bool keep, bool offload)
{
	const char *what = offload ? "keep-offload" : keep ? "keep" : "churn";
	char path[300];
	double t0 = now_ns();

	for (long i = 0; i < n; i++) {
		if (offload)
			snprintf(path, sizeof(path), "/dev/shm/vllm_offload_chatcmpl-%.16s%016lx.mmap", prefix, i);
		else
			snprintf(path, sizeof(path), "/dev/shm/%s%ld_0_0", prefix, i);
		int fd = open(path, O_CREAT | O_EXCL | O_WRONLY, 0600);
		if (fd < 0) {
			perror(path);
			return 1;
		}
		close(fd);
		if (!keep)
			unlink(path);
	}
	printf("%s %.0f files/s\n", what, n / ((now_ns() - t0) / 1e9));
	return 0;
}

static int make(const char *name)
{
	int fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
	if (fd < 0) {
		perror(name);
		return -1;
	}
	close(fd);
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

struct load {
	const char *prefix;
	int t;
	volatile bool *stop;
};

/* Creates and unlinks segments of its own request until told to stop. */
static void *churn_load(void *arg)
{
	const struct load *l = arg;
	char name[256];

	for (long i = 0; !*l->stop; i++) {
		snprintf(name, sizeof(name), "/%sload%d_0_%ld", l->prefix, l->t, i);
		if (make(name) == 0)
			shm_unlink(name);
	}
	return NULL;
}

extern char **environ;

/* Runs `shmguard abort -a DIR ID` without the shim (this process's
 * LD_PRELOAD is left out); returns the microseconds it printed (its marker
 * to its last unlink), -1 on failure; *total_us gets start to exit, *left
 * whether it left the sweep to the shims (a root over its bounds). */
static double run_abort(const char *shmguard, const char *abort_dir, const char *id, double *total_us, bool *left)
{
	char *argv[] = {(char *)shmguard, "abort", "-a", (char *)abort_dir, (char *)id, NULL}, *envp[256], line[512];
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t sa;
	struct sched_param normal = {.sched_priority = 0};
	double us = -1, t0;
	int out[2], status;
	size_t n = 0;
	ssize_t len;
	pid_t pid;

	for (char **e = environ; *e && n < 255; e++)
		if (strncmp(*e, "LD_PRELOAD=", 11) != 0)
			envp[n++] = *e;
	envp[n] = NULL;
	if (pipe(out) < 0)
		return -1;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, out[1], 1);
	posix_spawn_file_actions_addclose(&fa, out[0]);
	/* Scheduled as any program is, not as this real-time observer. */
	posix_spawnattr_init(&sa);
	posix_spawnattr_setflags(&sa, POSIX_SPAWN_SETSCHEDULER);
	posix_spawnattr_setschedpolicy(&sa, SCHED_OTHER);
	posix_spawnattr_setschedparam(&sa, &normal);
	t0 = now_ns();
	if (posix_spawn(&pid, shmguard, &fa, &sa, argv, envp) != 0) {
		perror(shmguard);
		return -1;
	}
	close(out[1]);
	len = read(out[0], line, sizeof(line) - 1);
	close(out[0]);
	waitpid(pid, &status, 0);
	*total_us = (now_ns() - t0) / 1e3;
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&sa);
	if (len > 0) {
		line[len] = '\0';
		char *in = strstr(line, " in ");
		if (in)
			us = atof(in + 4);
		*left = strstr(line, "left to the shims") != NULL;
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || us < 0) {
		fprintf(stderr, "bench_shim: %s abort failed: %s\n", shmguard, len > 0 ? line : "(no output)");
		return -1;
	}
	return us;
}

static void report(const char *what, long live, int k, int threads, int rounds, bool rt, double *lat)
{
	qsort(lat, (size_t)rounds, sizeof(*lat), cmp_double);
	printf("%s live=%ld k=%d threads=%d rounds=%d observer=%s median %.0f us p99 %.0f us\n", what, live, k, threads,
	       rounds, rt ? "rt" : "fair", lat[rounds / 2], lat[(int)(rounds * 0.99)]);
}

/* The measuring thread (it writes the marker and watches the names go) is
 * made real-time where it may be, so that the time measured is the
 * sweep's, not the wait of a measuring thread among the busy ones to be
 * scheduled again: it sleeps OBSERVE_NS between looks, so it takes little
 * CPU from the load.  Set after the load's threads and the shim's watcher
 * were created (they would inherit it).  Whether it is: "observer=rt". */
#define OBSERVE_NS 10000
static bool observe_realtime(void)
{
	struct sched_param sp = {.sched_priority = 1};

	return pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp) == 0;
}

static void observe_pause(void)
{
	struct timespec ts = {0, OBSERVE_NS};

	nanosleep(&ts, NULL);
}

/* The floor of any sweeper in the same root: a thread of this process,
 * asleep as the shim's watcher is and woken through a pipe as inotify wakes
 * the watcher, that unlinks the round's K names by raw system calls (no
 * shim, no registry, no journal).  slice_ns > 0: it asks for that slice
 * first (sched_setattr, Linux 6.12+). */
struct floor_sweeper {
	int wake[2];
	const char *prefix;
	int k;
	unsigned long long slice_ns;
	bool sliced; /* the kernel took the slice */
};

struct sched_attr_v1 {
	unsigned size, policy;
	unsigned long long flags;
	int nice;
	unsigned priority;
	unsigned long long runtime, deadline, period;
};

static void *floor_sweep(void *arg)
{
	struct floor_sweeper *f = arg;
	char path[300];
	int r;

	if (f->slice_ns) {
		struct sched_attr_v1 a = {.size = sizeof(a), .runtime = f->slice_ns};
		f->sliced = syscall(SYS_sched_setattr, 0, &a, 0) == 0 &&
			    syscall(SYS_sched_getattr, 0, &a, sizeof(a), 0) == 0 && a.runtime == f->slice_ns;
	}
	while (read(f->wake[0], &r, sizeof(r)) == sizeof(r))
		for (int c = 0; c < f->k; c++) {
			snprintf(path, sizeof(path), "/dev/shm/%sr%d_0_%d", f->prefix, r, c);
			syscall(SYS_unlinkat, AT_FDCWD, path, 0);
		}
	return NULL;
}

static int sweep(int rounds, int k, long live, const char *prefix, const char *abort_dir, int threads,
		 const char *shmguard, long long floor_slice)
{
	struct floor_sweeper fs = {{-1, -1}, prefix, k, floor_slice > 0 ? (unsigned long long)floor_slice : 0, false};
	pthread_t floor_tid;
	double *lat = calloc((size_t)rounds, sizeof(*lat)), *total = calloc((size_t)rounds, sizeof(*total));
	char name[256], path[512], marker[512], id[256];
	pthread_t tids[64];
	struct load loads[64];
	volatile bool stop = false;
	struct stat st;
	int status = 0, left_rounds = 0;
	bool rt;

	if (threads > 64)
		threads = 64;
	if (abort_dir)
		mkdir(abort_dir, 0755);
	for (long i = 0; i < live; i++) {
		snprintf(name, sizeof(name), "/%slive%ld_0_0", prefix, i);
		if (make(name) < 0)
			return 1;
	}
	for (int t = 0; t < threads; t++) {
		loads[t] = (struct load){prefix, t, &stop};
		pthread_create(&tids[t], NULL, churn_load, &loads[t]);
	}
	if (floor_slice >= 0 && (pipe(fs.wake) < 0 || pthread_create(&floor_tid, NULL, floor_sweep, &fs) != 0))
		return 1;
	rt = observe_realtime();
	for (int r = 0; r < rounds && !status; r++) {
		for (int c = 0; c < k; c++) {
			snprintf(name, sizeof(name), "/%sr%d_0_%d", prefix, r, c);
			if (make(name) < 0)
				return 1;
		}
		snprintf(id, sizeof(id), "%sr%d", prefix, r);
		snprintf(marker, sizeof(marker), "%s/%s", abort_dir ? abort_dir : ".", id);
		double t0 = now_ns();
		if (shmguard) {
			bool left = false;
			if ((lat[r] = run_abort(shmguard, abort_dir, id, &total[r], &left)) < 0)
				status = 1;
			/* Then the shim's watcher sweeps, as without SHMGUARD. */
			if (left) {
				left_rounds++;
				goto wait_swept;
			}
			for (int c = 0; c < k && !status; c++) {
				snprintf(path, sizeof(path), "/dev/shm/%sr%d_0_%d", prefix, r, c);
				if (lstat(path, &st) == 0) {
					fprintf(stderr, "bench_shim: %s still there when abort returned\n", path);
					status = 1;
				}
			}
			unlink(marker);
			continue;
		}
		if (floor_slice >= 0) {
			if (write(fs.wake[1], &r, sizeof(r)) != sizeof(r))
				status = 1;
		} else {
			int fd = open(marker, O_CREAT | O_WRONLY, 0644);
			close(fd);
		}
wait_swept:
		/* The sweep unlinks in creation order, newest first: wait for all. */
		for (int c = 0; c < k; c++) {
			snprintf(path, sizeof(path), "/dev/shm/%sr%d_0_%d", prefix, r, c);
			while (lstat(path, &st) == 0) {
				if (rt)
					observe_pause();
				if (now_ns() - t0 > 5e9) {
					fprintf(stderr, "bench_shim: %s not swept in 5 s (is the shim preloaded?)\n", path);
					status = 1;
					break;
				}
			}
		}
		lat[r] = (now_ns() - t0) / 1e3;
		if (abort_dir)
			unlink(marker);
	}
	stop = true;
	for (int t = 0; t < threads; t++)
		pthread_join(tids[t], NULL);
	if (floor_slice >= 0) {
		close(fs.wake[1]);
		pthread_join(floor_tid, NULL);
		close(fs.wake[0]);
	}
	for (long i = 0; i < live; i++) {
		snprintf(name, sizeof(name), "/%slive%ld_0_0", prefix, i);
		shm_unlink(name);
	}
	if (abort_dir)
		rmdir(abort_dir);
	if (!status && left_rounds) {
		qsort(total, (size_t)rounds, sizeof(*total), cmp_double);
		printf("sweep-by-abort live=%ld k=%d threads=%d rounds=%d: left to the shims in %d rounds (a root over "
		       "abort's bounds); abort took median %.0f us to find that out\n",
		       live, k, threads, rounds, left_rounds, total[rounds / 2]);
	} else if (!status) {
		report(shmguard ? "sweep-by-abort" : floor_slice < 0 ? "sweep"
				    : fs.sliced ? "sweep-floor-short-slice" : floor_slice ? "sweep-floor-no-custom-slice"
				    : "sweep-floor", live, k, threads, rounds, rt, lat);
		if (shmguard)
			report("  abort-start-to-exit", live, k, threads, rounds, rt, total);
	}
	free(lat);
	free(total);
	return status;
}

int main(int argc, char **argv)
{
	if (argc == 4 && strcmp(argv[1], "open-close") == 0)
		return open_close(atol(argv[2]), argv[3], false);
	if (argc == 4 && strcmp(argv[1], "map") == 0)
		return map_unmap(atol(argv[2]), argv[3]);
	if (argc == 4 && strcmp(argv[1], "creat-close") == 0)
		return open_close(atol(argv[2]), argv[3], true);
	if (argc == 4 && strcmp(argv[1], "lifecycle") == 0)
		return lifecycle(atol(argv[2]), argv[3], FLOOR_NONE, NULL);
	if ((argc == 4 || argc == 5) && strcmp(argv[1], "lifecycle-floor") == 0)
		return lifecycle(atol(argv[2]), argv[3], FLOOR_XATTR, argc == 5 ? argv[4] : NULL);
	if (argc == 5 && strcmp(argv[1], "lifecycle-floor-journal") == 0)
		return lifecycle(atol(argv[2]), argv[3], FLOOR_STATX, argv[4]);
	if (argc == 4 && strcmp(argv[1], "putget") == 0)
		return putget(atol(argv[2]), argv[3], NULL);
	if (argc == 5 && strcmp(argv[1], "putget-floor") == 0)
		return putget(atol(argv[2]), argv[3], argv[4]);
	if (argc == 3 && strcmp(argv[1], "fork") == 0)
		return fork_exit(atol(argv[2]));
	if (argc == 4 && strcmp(argv[1], "churn") == 0)
		return make_files(atol(argv[2]), argv[3], false, false);
	if (argc == 4 && strcmp(argv[1], "keep") == 0)
		return make_files(atol(argv[2]), argv[3], true, false);
	if (argc == 4 && strcmp(argv[1], "keep-offload") == 0)
		return make_files(atol(argv[2]), argv[3], true, true);
	if (argc >= 7 && argc <= 9 && strcmp(argv[1], "sweep") == 0)
		return sweep(atoi(argv[2]), atoi(argv[3]), atol(argv[4]), argv[5], argv[6], argc > 7 ? atoi(argv[7]) : 0,
			     argc > 8 ? argv[8] : NULL, -1);
	if ((argc == 7 || argc == 8) && strcmp(argv[1], "sweep-floor") == 0)
		return sweep(atoi(argv[2]), atoi(argv[3]), atol(argv[4]), argv[5], NULL, atoi(argv[6]), NULL,
			     argc > 7 ? atoll(argv[7]) : 0);
	fprintf(stderr, "usage: see the comment at the top of bench/bench_shim.c\n");
	return 2;
}
