/* shmtool: runs a small script of file operations, so that integration tests
 * can drive a real process under the shim step by step.
 *
 *   shmtool CMD [ARGS] [, CMD [ARGS]]...
 *
 * Commands (paths are absolute; NAME is a shm_open name):
 *   shm NAME SIZE        shm_open(O_CREAT|O_EXCL), ftruncate, write every page, close
 *   open PATH SIZE       open(O_CREAT|O_RDWR) (re-opens an existing file), size and fill it
 *   open64 / openat / creat PATH SIZE   the same through that function
 *   map NAME SIZE        like shm, but the mapping is kept (until unmap or exit)
 *   unmap                munmap every mapping that map kept
 *   region PATH SIZE     create PATH with O_CREAT|O_EXCL and size it, or join it if it
 *                        exists; map it and keep the mapping (a shared region)
 *   hold PATH            open(O_CREAT|O_EXCL) and keep the descriptor open
 *   nofile N             set this process's open-file limit (the soft one) to N
 *   unlink PATH          unlink(PATH)
 *   try open|shm|sem PATH|NAME FLAGS
 *                        open(PATH), shm_open(NAME) or sem_open(NAME) with FLAGS (a comma-separated list of
 *                        rdonly wronly rdwr creat excl trunc path) and mode 0600 (a semaphore's
 *                        value 1), errno set to ENOTTY before; prints "ok TYPE errno=E" (TYPE
 *                        reg, dir, fifo, other or sem; E the errno left after the success) or
 *                        "fail E"; never fails
 *   try rename|link OLD NEW
 *                        the same for rename(OLD, NEW) or link(OLD, NEW): "ok errno=E" or "fail E"
 *   rename OLD NEW       rename(OLD, NEW)
 *   exchange A B         renameat2(A, B, RENAME_EXCHANGE)
 *   link OLD NEW         link(OLD, NEW)
 *   tmpfile DIR NEW SIZE an O_TMPFILE file in DIR, sized and filled, then named NEW with
 *                        linkat through /proc/self/fd (the unprivileged way)
 *   sem NAME             sem_open(NAME, O_CREAT, 0600, 1), kept open
 *   cd DIR               chdir(DIR): relative paths start there
 *   chroot DIR           chroot(DIR), then chdir("/") (needs root)
 *   touch PATH           create an empty file (an abort marker, say)
 *   fill DIR N           create N empty files DIR/fill_<i> (a directory filled by someone)
 *   req ID               shmguard_set_request(ID) for this thread ("-" clears it)
 *   threads N COUNT P    N threads; thread t sets request P<t> and creates COUNT
 *                        segments P<t>_0_<i>; even threads write their abort marker
 *                        into $SHMTOOL_ABORT_DIR half-way and keep creating
 *   signals SECONDS DIR SIGDIR
 *                        for SECONDS, creates and unlinks files DIR/main_<n> in a loop while
 *                        a SIGALRM handler, every 100 us, creates and unlinks SIGDIR/sig_<n>
 *                        (open and unlink are async-signal-safe); prints the counts, and
 *                        how many handler runs came on a thread other than the main one
 *   sigcreate SECONDS DIR
 *                        the same with DIR for both, the handler's files kept, and the main
 *                        loop calling malloc() and free() around each file, as programs do:
 *                        the handler interrupts them
 *   closefrom N          closes every descriptor from N up, with the raw close_range system call
 *   pipe N               makes a pipe, writes N bytes into it and prints "pipe M": the M bytes
 *                        read back from it within a second
 *   fdnum                prints "fd N": the number the next open() returns
 *   vfork NAME SIZE      a vfork child creates segment NAME (as shm does) and execs shmtool
 *                        with nothing to do; the parent waits for it
 *   flip A B MS          for MS ms, swaps the names A and B (renameat2 RENAME_EXCHANGE)
 *                        every 100 us or so
 *   fork                 the child runs the rest of the script; the parent waits
 *                        for it and exits with its status
 *   rawfork              a child made with the clone system call itself (no fork handler
 *                        runs) runs the rest of the script; the parent prints "child PID"
 *                        and sleeps until it is killed
 *   files PREFIX N       creates N empty files PREFIX<i> (i from 0), each closed at once
 *   unlinks PREFIX N     unlinks PREFIX<i> for i below N
 *   exec                 re-executes shmtool with the rest of the script
 *   wait                 prints "ready" and waits for a line on stdin
 *   say TEXT             prints TEXT
 *
 * Exit status: 0, or 1 on the first failed operation (reported on stderr). */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

static int fail(const char *what, const char *arg)
{
	fprintf(stderr, "shmtool: %s %s: %s\n", what, arg, strerror(errno));
	return -1;
}

/* The mappings that map kept, for unmap. */
static struct kept {
	void *addr;
	size_t size;
} *kept;
static size_t nkept;

static int keep(void *addr, size_t size)
{
	struct kept *k = realloc(kept, (nkept + 1) * sizeof(*k));

	if (!k)
		return -1;
	kept = k;
	kept[nkept++] = (struct kept){addr, size};
	return 0;
}

/* Sizes the file and writes every page, so its bytes are really allocated. */
static int fill(int fd, size_t size, bool keep_mapped)
{
	char *p;

	if (ftruncate(fd, (off_t)size) < 0)
		return -1;
	if (size == 0)
		return 0;
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return -1;
	memset(p, 0x5a, size);
	if (keep_mapped)
		return keep(p, size);
	munmap(p, size);
	return 0;
}

static int make_shm(const char *name, size_t size, bool keep_mapped)
{
	int fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);

	if (fd < 0 || fill(fd, size, keep_mapped) < 0)
		return fail("shm", name);
	close(fd);
	return 0;
}

static int make_file(const char *how, const char *path, size_t size)
{
	int fd;

	if (strcmp(how, "open") == 0)
		fd = open(path, O_CREAT | O_RDWR, 0600);
	else if (strcmp(how, "open64") == 0)
		fd = open64(path, O_CREAT | O_RDWR, 0600);
	else if (strcmp(how, "openat") == 0)
		fd = openat(AT_FDCWD, path, O_CREAT | O_RDWR, 0600);
	else
		fd = creat(path, 0600); /* write-only: size it, but nothing to map */
	if (fd < 0)
		return fail(how, path);
	if (strcmp(how, "creat") == 0 ? ftruncate(fd, (off_t)size) < 0 : fill(fd, size, false) < 0)
		return fail(how, path);
	close(fd);
	return 0;
}

static int region(const char *path, size_t size)
{
	int fd = open(path, O_CREAT | O_EXCL | O_RDWR, 0600);
	bool created = fd >= 0;
	char *p;

	if (!created && errno == EEXIST)
		fd = open(path, O_RDWR);
	if (fd < 0 || (created && ftruncate(fd, (off_t)size) < 0))
		return fail("region", path);
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return fail("region", path);
	if (created)
		memset(p, 0x7e, size);
	close(fd);
	return 0;
}

static int parse_flags(const char *list)
{
	static const struct {
		const char *name;
		int flag;
	} known[] = {{"rdonly", O_RDONLY}, {"wronly", O_WRONLY}, {"rdwr", O_RDWR}, {"creat", O_CREAT},
		     {"excl", O_EXCL},     {"trunc", O_TRUNC},   {"path", O_PATH}};
	char copy[256], *save, *word;
	int flags = 0;

	snprintf(copy, sizeof(copy), "%s", list);
	for (word = strtok_r(copy, ",", &save); word; word = strtok_r(NULL, ",", &save))
		for (size_t k = 0; k < sizeof(known) / sizeof(known[0]); k++)
			if (strcmp(word, known[k].name) == 0)
				flags |= known[k].flag;
	return flags;
}

/* What a call returned, in a form two runs (with and without the shim)
 * can be compared by. */
static int try_open(const char *how, const char *path, const char *flag_list)
{
	int flags = parse_flags(flag_list), fd, err;
	struct stat st;
	const char *type = "other";

	if (strcmp(how, "rename") == 0 || strcmp(how, "link") == 0) {
		errno = ENOTTY;
		int ret = how[0] == 'r' ? rename(path, flag_list) : link(path, flag_list);
		err = errno;
		if (ret < 0)
			printf("fail %s\n", strerrorname_np(err));
		else
			printf("ok errno=%s\n", strerrorname_np(err));
		fflush(stdout);
		return 0;
	}
	if (strcmp(how, "sem") == 0) {
		errno = ENOTTY;
		sem_t *sem = sem_open(path, flags, 0600, 1);
		err = errno;
		if (sem == SEM_FAILED)
			printf("fail %s\n", strerrorname_np(err));
		else
			printf("ok sem errno=%s\n", strerrorname_np(err));
		fflush(stdout);
		return 0;
	}
	errno = ENOTTY;
	fd = strcmp(how, "shm") == 0 ? shm_open(path, flags, 0600) : open(path, flags, 0600);
	err = errno;
	if (fd < 0) {
		printf("fail %s\n", strerrorname_np(err));
	} else {
		if (fstat(fd, &st) == 0)
			type = S_ISREG(st.st_mode) ? "reg" : S_ISDIR(st.st_mode) ? "dir" : S_ISFIFO(st.st_mode) ? "fifo" : "other";
		printf("ok %s errno=%s\n", type, strerrorname_np(err));
		close(fd);
	}
	fflush(stdout);
	return 0;
}

static int tmpfile_link(const char *dir, const char *path, size_t size)
{
	char proc[64];
	int fd = open(dir, O_TMPFILE | O_RDWR, 0600);

	if (fd < 0 || fill(fd, size, false) < 0)
		return fail("tmpfile", dir);
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	if (linkat(AT_FDCWD, proc, AT_FDCWD, path, AT_SYMLINK_FOLLOW) < 0)
		return fail("tmpfile", path);
	close(fd);
	return 0;
}

static char sig_path[512];
static size_t sig_len;
static volatile sig_atomic_t sig_count, sig_foreign, sig_keep;
static pid_t main_tid;

/* Only async-signal-safe calls: the name is formatted by hand. */
static void on_alarm(int signo)
{
	int saved = errno, n = sig_count++, k = 0;
	char digits[16];

	(void)signo;
	/* The shim's thread must never run the program's handlers. */
	if (gettid() != main_tid) {
		sig_foreign++;
		errno = saved;
		return;
	}
	do
		digits[k++] = (char)('0' + n % 10);
	while ((n /= 10));
	for (size_t i = 0; k; i++)
		sig_path[sig_len + i] = digits[--k], sig_path[sig_len + i + 1] = '\0';
	int fd = open(sig_path, O_CREAT | O_EXCL | O_WRONLY, 0600);
	if (fd >= 0) {
		close(fd);
		if (!sig_keep)
			unlink(sig_path);
	}
	errno = saved;
}

/* Blocks of sizes both in and beyond malloc's per-thread caches. */
static void churn(void)
{
	void *blocks[8];

	for (int i = 0; i < 8; i++)
		blocks[i] = malloc(24 + (size_t)(rand() % 3000));
	for (int i = 0; i < 8; i++)
		free(blocks[i]);
}

static int signals(int seconds, const char *dir, const char *sig_dir, bool mallocs)
{
	struct itimerval every = {{0, 100}, {0, 100}}, off = {0};
	struct sigaction sa = {.sa_handler = on_alarm, .sa_flags = SA_RESTART};
	char path[600];
	long loops = 0;
	time_t end = time(NULL) + seconds;

	main_tid = gettid();
	sig_len = (size_t)snprintf(sig_path, sizeof(sig_path) - 16, "%s/sig_", sig_dir);
	sigaction(SIGALRM, &sa, NULL);
	setitimer(ITIMER_REAL, &every, NULL);
	while (time(NULL) < end) {
		snprintf(path, sizeof(path), "%s/main_%ld", dir, loops++);
		for (int i = 0; mallocs && i < 50; i++)
			churn();
		if (make_file("open", path, 4096) < 0)
			return -1;
		if (unlink(path) < 0)
			return fail("unlink", path);
	}
	setitimer(ITIMER_REAL, &off, NULL);
	printf("main %ld signals %d foreign %d\n", loops, (int)sig_count, (int)sig_foreign);
	fflush(stdout);
	return 0;
}

static int fill_dir(const char *dir, int n)
{
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	char name[32];

	if (dfd < 0)
		return fail("fill", dir);
	for (int i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "fill_%d", i);
		int fd = openat(dfd, name, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
		if (fd < 0) {
			close(dfd);
			return fail("fill", name);
		}
		close(fd);
	}
	close(dfd);
	return 0;
}

/* Found at run time, so shmtool also runs without the shim. */
static int set_request(const char *id)
{
	int (*set)(const char *) = (int (*)(const char *))dlsym(RTLD_DEFAULT, "shmguard_set_request");

	if (!set) {
		errno = ENOSYS;
		return fail("req", id);
	}
	if (set(strcmp(id, "-") == 0 ? NULL : id) < 0)
		return fail("req", id);
	return 0;
}

struct worker {
	pthread_t tid;
	int index, count;
	const char *prefix;
	int status;
};

static void *work(void *arg)
{
	struct worker *w = arg;
	char req[256], name[300], marker[512];
	const char *dir = getenv("SHMTOOL_ABORT_DIR");

	snprintf(req, sizeof(req), "%s%d", w->prefix, w->index);
	if (set_request(req) < 0)
		return NULL;
	for (int i = 0; i < w->count; i++) {
		if (w->index % 2 == 0 && i == w->count / 2 && dir) {
			snprintf(marker, sizeof(marker), "%s/%s", dir, req);
			int fd = open(marker, O_CREAT | O_WRONLY, 0644);
			if (fd < 0) {
				fail("marker", marker);
				return NULL;
			}
			close(fd);
		}
		snprintf(name, sizeof(name), "/%s_0_%d", req, i);
		if (make_shm(name, 4096, false) < 0)
			return NULL;
	}
	w->status = 0;
	return NULL;
}

static int run_threads(int n, int count, const char *prefix)
{
	struct worker *w = calloc((size_t)n, sizeof(*w));
	int status = 0;

	for (int t = 0; t < n; t++) {
		w[t] = (struct worker){.index = t, .count = count, .prefix = prefix, .status = -1};
		if (pthread_create(&w[t].tid, NULL, work, &w[t]) != 0)
			return fail("threads", prefix);
	}
	for (int t = 0; t < n; t++) {
		pthread_join(w[t].tid, NULL);
		status |= w[t].status;
	}
	free(w);
	return status;
}

static int pipe_through(size_t n)
{
	char buf[4096] = {0};
	size_t got = 0;
	int p[2];

	if (n > sizeof(buf) || pipe(p) < 0)
		return fail("pipe", "");
	if (write(p[1], buf, n) != (ssize_t)n)
		return fail("pipe", "write");
	for (struct pollfd pfd = {.fd = p[0], .events = POLLIN}; got < n && poll(&pfd, 1, 1000) > 0;) {
		ssize_t r = read(p[0], buf, n - got);
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	close(p[0]);
	close(p[1]);
	printf("pipe %zu\n", got);
	fflush(stdout);
	return 0;
}

/* The child shares the parent's memory until it execs: it only creates
 * the segment and execs. */
static int vfork_create(const char *name, size_t size)
{
	pid_t pid = vfork();
	int st;

	if (pid < 0)
		return fail("vfork", name);
	if (pid == 0) {
		int fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
		if (fd < 0 || ftruncate(fd, (off_t)size) < 0)
			_exit(1);
		execl("/proc/self/exe", "shmtool", (char *)NULL);
		_exit(127);
	}
	if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		errno = ECHILD;
		return fail("vfork", name);
	}
	return 0;
}

static int flip(const char *a, const char *b, long ms)
{
	struct timespec now, end;

	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += ms / 1000;
	end.tv_nsec += (ms % 1000) * 1000000L;
	do {
		if (renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE) < 0)
			return fail("flip", a);
		usleep(100); /* often enough, without taking a CPU from the tests beside */
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while (now.tv_sec < end.tv_sec || (now.tv_sec == end.tv_sec && now.tv_nsec < end.tv_nsec));
	return 0;
}

static int many(bool create, const char *prefix, int n)
{
	char path[4096];

	for (int i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s%d", prefix, i);
		if (create) {
			int fd = open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);
			if (fd < 0)
				return fail("files", path);
			close(fd);
		} else if (unlink(path) < 0) {
			return fail("unlinks", path);
		}
	}
	return 0;
}

static int wait_stdin(void)
{
	char line[64];

	printf("ready\n");
	fflush(stdout);
	return fgets(line, sizeof(line), stdin) ? 0 : 0;
}

static size_t size_arg(const char *s)
{
	return (size_t)strtoull(s, NULL, 10);
}

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		const char *cmd = argv[i];
		const char *a = i + 1 < argc ? argv[i + 1] : "", *b = i + 2 < argc ? argv[i + 2] : "0";
		int ret = 0;

		if (strcmp(cmd, ",") == 0)
			continue;
		if (strcmp(cmd, "shm") == 0 || strcmp(cmd, "map") == 0) {
			ret = make_shm(a, size_arg(b), cmd[0] == 'm');
			i += 2;
		} else if (!strcmp(cmd, "open") || !strcmp(cmd, "open64") || !strcmp(cmd, "openat") ||
			   !strcmp(cmd, "creat")) {
			ret = make_file(cmd, a, size_arg(b));
			i += 2;
		} else if (strcmp(cmd, "unmap") == 0) {
			for (; nkept && ret == 0; nkept--)
				ret = munmap(kept[nkept - 1].addr, kept[nkept - 1].size) < 0 ? fail("unmap", "") : 0;
		} else if (strcmp(cmd, "hold") == 0) {
			ret = open(a, O_CREAT | O_EXCL | O_RDWR, 0600) < 0 ? fail("hold", a) : 0;
			i += 1;
		} else if (strcmp(cmd, "nofile") == 0) {
			struct rlimit rl;
			getrlimit(RLIMIT_NOFILE, &rl);
			rl.rlim_cur = (rlim_t)atoi(a);
			ret = setrlimit(RLIMIT_NOFILE, &rl) < 0 ? fail("nofile", a) : 0;
			i += 1;
		} else if (strcmp(cmd, "region") == 0) {
			ret = region(a, size_arg(b));
			i += 2;
		} else if (strcmp(cmd, "unlink") == 0) {
			ret = unlink(a) < 0 ? fail("unlink", a) : 0;
			i += 1;
		} else if (strcmp(cmd, "try") == 0) {
			ret = try_open(a, b, i + 3 < argc ? argv[i + 3] : "");
			i += 3;
		} else if (strcmp(cmd, "rename") == 0) {
			ret = rename(a, b) < 0 ? fail("rename", a) : 0;
			i += 2;
		} else if (strcmp(cmd, "exchange") == 0) {
			ret = renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE) < 0 ? fail("exchange", a) : 0;
			i += 2;
		} else if (strcmp(cmd, "link") == 0) {
			ret = link(a, b) < 0 ? fail("link", a) : 0;
			i += 2;
		} else if (strcmp(cmd, "tmpfile") == 0) {
			ret = tmpfile_link(a, b, size_arg(i + 3 < argc ? argv[i + 3] : "0"));
			i += 3;
		} else if (strcmp(cmd, "sem") == 0) {
			ret = sem_open(a, O_CREAT, 0600, 1) == SEM_FAILED ? fail("sem", a) : 0;
			i += 1;
		} else if (strcmp(cmd, "cd") == 0) {
			ret = chdir(a) < 0 ? fail("cd", a) : 0;
			i += 1;
		} else if (strcmp(cmd, "fill") == 0) {
			ret = fill_dir(a, atoi(b));
			i += 2;
		} else if (strcmp(cmd, "chroot") == 0) {
			ret = chroot(a) < 0 || chdir("/") < 0 ? fail("chroot", a) : 0;
			i += 1;
		} else if (strcmp(cmd, "touch") == 0) {
			int fd = open(a, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
			ret = fd < 0 ? fail("touch", a) : close(fd);
			i += 1;
		} else if (strcmp(cmd, "req") == 0) {
			ret = set_request(a);
			i += 1;
		} else if (strcmp(cmd, "threads") == 0) {
			ret = run_threads(atoi(a), atoi(b), i + 3 < argc ? argv[i + 3] : "t");
			i += 3;
		} else if (strcmp(cmd, "signals") == 0) {
			ret = signals(atoi(a), b, i + 3 < argc ? argv[i + 3] : b, false);
			i += 3;
		} else if (strcmp(cmd, "sigcreate") == 0) {
			sig_keep = 1;
			ret = signals(atoi(a), b, b, true);
			i += 2;
		} else if (strcmp(cmd, "closefrom") == 0) {
			ret = syscall(SYS_close_range, (unsigned)atoi(a), ~0U, 0U) < 0 ? fail("closefrom", a) : 0;
			i += 1;
		} else if (strcmp(cmd, "pipe") == 0) {
			ret = pipe_through(size_arg(a));
			i += 1;
		} else if (strcmp(cmd, "fdnum") == 0) {
			int fd = open("/dev/null", O_RDONLY);
			ret = fd < 0 ? fail("fdnum", "/dev/null") : printf("fd %d\n", fd) < 0 ? -1 : close(fd);
			fflush(stdout);
		} else if (strcmp(cmd, "vfork") == 0) {
			ret = vfork_create(a, size_arg(b));
			i += 2;
		} else if (strcmp(cmd, "flip") == 0) {
			ret = flip(a, b, atol(i + 3 < argc ? argv[i + 3] : "0"));
			i += 3;
		} else if (strcmp(cmd, "fork") == 0) {
			pid_t pid = fork();
			int st;
			if (pid < 0)
				return fail("fork", "") , 1;
			if (pid > 0) {
				waitpid(pid, &st, 0);
				return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
			}
		} else if (strcmp(cmd, "rawfork") == 0) {
			long pid = syscall(SYS_clone, (unsigned long)SIGCHLD, 0UL, 0UL, 0UL, 0UL);
			if (pid < 0)
				return fail("rawfork", ""), 1;
			if (pid > 0) {
				printf("child %ld\n", pid);
				fflush(stdout);
				for (;;)
					pause();
			}
		} else if (strcmp(cmd, "files") == 0 || strcmp(cmd, "unlinks") == 0) {
			ret = many(cmd[0] == 'f', a, atoi(b));
			i += 2;
		} else if (strcmp(cmd, "exec") == 0) {
			argv[i] = argv[0];
			execv("/proc/self/exe", argv + i);
			return fail("exec", argv[0]), 1;
		} else if (strcmp(cmd, "wait") == 0) {
			ret = wait_stdin();
		} else if (strcmp(cmd, "say") == 0) {
			printf("%s\n", a);
			fflush(stdout);
			i += 1;
		} else {
			fprintf(stderr, "shmtool: unknown command '%s'\n", cmd);
			return 2;
		}
		if (ret < 0)
			return 1;
	}
	return 0;
}
