/* stress: many processes and threads creating, consuming and aborting
 * requests under the shim, with request IDs drawn to collide, late puts,
 * forks in the middle of the run and a worker killed with SIGKILL; every
 * creation is logged by the driver itself (the oracle, not the shim).
 *
 *   stress --root R --abort-dir D --logs DIR --procs N --threads T --ops M [--seed S] [--kill]
 *
 * Files are made in R (which must be one of the shim's SHMGUARD_SHM_ROOTS)
 * under explicit requests (shmguard_set_request).  When every worker has
 * done its operations it prints "ready" and waits for a line on stdin
 * (workers stay alive: their files are not orphans yet); then it checks:
 *   wrong unlinks      files of requests never aborted, created by a live
 *                      process and not consumed, that are gone or replaced
 *   aborted leftovers  files of aborted requests made by live processes
 *                      that still exist
 *   orphans left       files the killed worker made that still exist (run
 *                      `shmguard sweep --dead` before answering "ready")
 * prints "lifecycles N wrong_unlinks W aborted_leftovers A orphans_left O"
 * and exits 0 only if all three are 0.
 *
 * Its unshimmed programs (issue #34), which the orphans test drives against
 * shmguard watch and sweep --dead:
 *   stress actor KIND DIR STEM N [CGROUP]
 * makes or uses the files DIR/STEM-0 .. STEM-(N-1) of 4096 bytes, prints
 * "ready", waits for a line on stdin, then opens every one of them again by
 * its name and prints "checked N missing M" (M: gone or emptied, that is
 * removed while this live process could use it), and exits 0 iff M is 0:
 *   mover    creates them, then moves itself into CGROUP (a cgroup2
 *            directory) before saying ready: its first cgroup can go
 *   daemon   creates each through system(), by a dd that a shell starts:
 *            it is the creator's grandparent
 *   make     creates them (and stays: killed by the test)
 *   consumer opens and closes each (a hand-off), and stays
 *   locker   creates each with its lock file, DIR/shm_STEM-i_lockfile.lock
 *            (vllm-omni's shape), and says ready (killed by the test)
 *   holder   locks each lock file (flock for even i, an OFD lock for odd),
 *            with no segment open, and stays */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define NREQ 12

/* Prefixes, suffixes, underscores, digits only, the empty-looking ones,
 * and the longest name a request can have.  Only the even ones are ever
 * aborted, and each collides with an odd one: "abc" with "abc_def", "0"
 * with "00", "abc_1" with "abc_1_2", "a" with "a_"... */
static const char *requests[NREQ] = {"0", "_", "abc", "abc_def", "abc_1", "abc_1_2", "1_abc", "00", "a", "a_",
				     NULL /* 255 x's */, "x"};
static char longest[256];

static const char *root, *abort_dir, *log_dir;
static int threads = 4, ops = 1000;
static unsigned seed = 1;

static int (*set_request)(const char *);

struct worker {
	int proc, index;
	unsigned rnd;
};

static unsigned next_rand(unsigned *s)
{
	*s = *s * 1103515245u + 12345u;
	return *s >> 8;
}

static void mark_aborted(int r)
{
	char path[600];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", abort_dir, requests[r]);
	fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
	if (fd >= 0)
		close(fd);
}

/* Aborted means its marker exists: what every process (exec'd ones too)
 * and the shim go by. */
static bool is_aborted(int r)
{
	char path[600];

	snprintf(path, sizeof(path), "%s/%s", abort_dir, requests[r]);
	return access(path, F_OK) == 0;
}

/* Logs "C name ino request" once the file exists, "U name" once consumed:
 * the oracle, written by the driver, not by the shim. */
static void *work(void *arg)
{
	struct worker *w = arg;
	char name[300], path[600], logpath[300];
	FILE *log;

	snprintf(logpath, sizeof(logpath), "%s/log-%d-%d-%d", log_dir, w->proc, w->index, (int)getpid());
	if (!(log = fopen(logpath, "w")))
		return NULL;
	setvbuf(log, NULL, _IOLBF, 0);
	for (int i = 0; i < ops; i++) {
		int r = (int)(next_rand(&w->rnd) % NREQ);
		unsigned what = next_rand(&w->rnd) % 100;
		struct stat st;
		int fd;

		if (what < 1 && r % 2 == 0) { /* abort; late puts follow naturally */
			mark_aborted(r);
			continue;
		}
		set_request(requests[r]);
		snprintf(name, sizeof(name), "%.200s_%d_%d_%d_%d", requests[r] == longest ? "long" : requests[r],
			 w->proc, (int)getpid(), w->index, i);
		snprintf(path, sizeof(path), "%s/%s", root, name);
		fd = open(path, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
		if (fd < 0)
			continue;
		if (fstat(fd, &st) == 0) {
			if (ftruncate(fd, 4096) == 0) {
				char *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
				if (p != MAP_FAILED) {
					p[0] = 1;
					munmap(p, 4096);
				}
			}
			fprintf(log, "C %s %llu %d\n", name, (unsigned long long)st.st_ino, r);
		}
		close(fd);
		/* Most files are consumed at once, as a next stage would. */
		if (what < 90 && unlink(path) == 0)
			fprintf(log, "U %s\n", name);
	}
	set_request(NULL);
	fclose(log);
	return NULL;
}

static void run_threads(int proc, unsigned rnd)
{
	pthread_t tid[64];
	struct worker w[64];

	for (int t = 0; t < threads; t++) {
		w[t] = (struct worker){proc, t, rnd + (unsigned)t * 7919u};
		pthread_create(&tid[t], NULL, work, &w[t]);
	}
	for (int t = 0; t < threads; t++)
		pthread_join(tid[t], NULL);
}

/* Works, reports done, and stays alive until the check is over. */
static void work_and_wait(int proc, unsigned rnd, int go_fd, int done_fd)
{
	char c;

	run_threads(proc, rnd);
	(void)!write(done_fd, "d", 1);
	(void)!read(go_fd, &c, 1);
	_exit(0);
}

/* A worker: its threads, and a child forked at the start that execs this
 * program again (a new image under the shim) to work alongside. */
static void worker_main(int proc, int go_fd, int done_fd)
{
	if (proc % 2 == 0 && fork() == 0) {
		char args[6][32];
		snprintf(args[0], sizeof(args[0]), "%d", proc + 1000);
		snprintf(args[1], sizeof(args[1]), "%d", go_fd);
		snprintf(args[2], sizeof(args[2]), "%d", done_fd);
		snprintf(args[3], sizeof(args[3]), "%d", threads);
		snprintf(args[4], sizeof(args[4]), "%d", ops);
		snprintf(args[5], sizeof(args[5]), "%u", seed * 31u + (unsigned)proc);
		execl("/proc/self/exe", "stress", "--exec-child", args[0], args[1], args[2], args[3], args[4], args[5],
		      root, abort_dir, log_dir, (char *)NULL);
		_exit(127);
	}
	work_and_wait(proc, seed * 17u + (unsigned)proc, go_fd, done_fd);
}

struct record {
	char name[300];
	unsigned long long ino;
	int request;
	bool consumed, killed;
};

static void read_log(const char *path, bool killed, struct record **recs, size_t *n, size_t *cap)
{
	char line[700], name[300];
	unsigned long long ino;
	FILE *f = fopen(path, "r");
	int r;

	while (f && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "C %299s %llu %d", name, &ino, &r) == 3 && r >= 0 && r < NREQ) {
			if (*n == *cap) {
				*cap = *cap ? *cap * 2 : 1024;
				*recs = realloc(*recs, *cap * sizeof(**recs));
			}
			(*recs)[*n] = (struct record){.ino = ino, .request = r, .killed = killed};
			strcpy((*recs)[(*n)++].name, name);
		} else if (sscanf(line, "U %299s", name) == 1) {
			for (size_t k = *n; k-- > 0;)
				if (strcmp((*recs)[k].name, name) == 0) {
					(*recs)[k].consumed = true;
					break;
				}
		}
	}
	if (f)
		fclose(f);
}

/* The oracle's verdict on what the root holds now. */
static int check(pid_t killed_pid)
{
	long wrong = 0, leftovers = 0, orphans = 0;
	struct record *recs = NULL;
	size_t n = 0, cap = 0;
	struct dirent *e;
	DIR *d = opendir(log_dir);

	while (d && (e = readdir(d))) {
		int proc, index, pid;
		char path[600];
		if (sscanf(e->d_name, "log-%d-%d-%d", &proc, &index, &pid) != 3)
			continue;
		snprintf(path, sizeof(path), "%s/%s", log_dir, e->d_name);
		read_log(path, pid == killed_pid, &recs, &n, &cap);
	}
	if (d)
		closedir(d);
	for (size_t k = 0; k < n; k++) {
		char path[700];
		struct stat st;
		bool there;

		if (recs[k].consumed)
			continue;
		snprintf(path, sizeof(path), "%s/%s", root, recs[k].name);
		there = lstat(path, &st) == 0 && st.st_ino == recs[k].ino;
		if (recs[k].killed)
			orphans += there;
		else if (is_aborted(recs[k].request))
			leftovers += there;
		else
			wrong += !there;
	}
	free(recs);
	printf("lifecycles %zu wrong_unlinks %ld aborted_leftovers %ld orphans_left %ld\n", n, wrong, leftovers, orphans);
	fflush(stdout);
	return wrong || leftovers || orphans;
}

/* Bytes the threads of worker proc have logged so far. */
static long logged(int proc)
{
	char want[32], path[600];
	struct dirent *e;
	struct stat st;
	long total = 0;
	DIR *d = opendir(log_dir);

	snprintf(want, sizeof(want), "log-%d-", proc);
	while (d && (e = readdir(d))) {
		snprintf(path, sizeof(path), "%s/%s", log_dir, e->d_name);
		if (strncmp(e->d_name, want, strlen(want)) == 0 && stat(path, &st) == 0)
			total += st.st_size;
	}
	if (d)
		closedir(d);
	return total;
}

/* DIR/STEM-i, or its lock file. */
static char *actor_path(const char *dir, const char *stem, int i, bool lock_file)
{
	static char path[1024];

	snprintf(path, sizeof(path), lock_file ? "%s/shm_%s-%d_lockfile.lock" : "%s/%s-%d", dir, stem, i);
	return path;
}

static int make_file(const char *path)
{
	static char page[4096];
	int fd = open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);

	memset(page, 'd', sizeof(page));
	if (fd < 0 || write(fd, page, sizeof(page)) != (ssize_t)sizeof(page)) {
		perror(path);
		return -1;
	}
	close(fd);
	return 0;
}

/* One of the unshimmed programs (see the top of this file). */
static int actor(int argc, char **argv)
{
	const char *kind = argv[2], *dir = argv[3], *stem = argv[4];
	int n = atoi(argv[5]), missing = 0, *held = NULL;
	char line[16], cmd[1200];

	for (int i = 0; i < n; i++) {
		const char *path = actor_path(dir, stem, i, false);
		int fd;

		if (strcmp(kind, "mover") == 0 || strcmp(kind, "make") == 0) {
			if (make_file(path) < 0)
				return 2;
		} else if (strcmp(kind, "daemon") == 0) {
			snprintf(cmd, sizeof(cmd), "/bin/dd if=/dev/zero of='%s' bs=4096 count=1 status=none; true", path);
			if (system(cmd) != 0)
				return 2;
		} else if (strcmp(kind, "consumer") == 0) {
			if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
				return perror(path), 2;
			close(fd);
		} else if (strcmp(kind, "locker") == 0) {
			if (make_file(path) < 0 || make_file(actor_path(dir, stem, i, true)) < 0)
				return 2;
		} else if (strcmp(kind, "holder") == 0) {
			if (!held && !(held = calloc((size_t)n, sizeof(*held))))
				return 2;
			struct flock ofd = {.l_type = F_RDLCK, .l_whence = SEEK_SET};
			path = actor_path(dir, stem, i, true);
			if ((held[i] = open(path, O_RDONLY | O_CLOEXEC)) < 0 ||
			    (i % 2 ? fcntl(held[i], F_OFD_SETLK, &ofd) : flock(held[i], LOCK_SH | LOCK_NB)) < 0)
				return perror(path), 2;
		} else {
			fprintf(stderr, "stress: unknown actor %s\n", kind);
			return 2;
		}
	}
	if (strcmp(kind, "mover") == 0) {
		snprintf(cmd, sizeof(cmd), "%s/cgroup.procs", argc > 6 ? argv[6] : ".");
		FILE *f = argc > 6 ? fopen(cmd, "w") : NULL;
		if (!f || fprintf(f, "%d\n", (int)getpid()) < 0 || fclose(f) != 0)
			return perror("cgroup.procs"), 2;
	}
	printf("ready\n");
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 0; /* told to go without a check */
	for (int i = 0; i < n; i++) {
		struct stat st;
		int fd = open(actor_path(dir, stem, i, false), O_RDONLY | O_CLOEXEC);

		missing += fd < 0 || fstat(fd, &st) < 0 || st.st_size != 4096;
		if (fd >= 0)
			close(fd);
	}
	printf("checked %d missing %d\n", n, missing);
	fflush(stdout);
	free(held);
	return missing ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc >= 6 && strcmp(argv[1], "actor") == 0)
		return actor(argc, argv);
	/* An exec'd worker: --exec-child PROC GO DONE THREADS OPS SEED ROOT ABORT LOGS */
	if (argc == 11 && strcmp(argv[1], "--exec-child") == 0) {
		if (!(set_request = (int (*)(const char *))dlsym(RTLD_DEFAULT, "shmguard_set_request")))
			return 2;
		memset(longest, 'x', 255);
		requests[10] = longest;
		threads = atoi(argv[5]);
		ops = atoi(argv[6]);
		root = argv[8];
		abort_dir = argv[9];
		log_dir = argv[10];
		work_and_wait(atoi(argv[2]), (unsigned)strtoul(argv[7], NULL, 10), atoi(argv[3]), atoi(argv[4]));
	}
	static const struct option opts[] = {
		{"root", required_argument, NULL, 'r'},    {"abort-dir", required_argument, NULL, 'a'},
		{"procs", required_argument, NULL, 'p'},   {"threads", required_argument, NULL, 't'},
		{"ops", required_argument, NULL, 'o'},     {"seed", required_argument, NULL, 's'},
		{"kill", no_argument, NULL, 'k'},          {"logs", required_argument, NULL, 'l'},
		{0},
	};
	int procs = 2, c, go[2], done[2];
	bool kill_one = false;
	pid_t *pids, killed = -1;
	char line[16];

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'r': root = optarg; break;
		case 'a': abort_dir = optarg; break;
		case 'p': procs = atoi(optarg); break;
		case 't': threads = atoi(optarg); break;
		case 'o': ops = atoi(optarg); break;
		case 's': seed = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'k': kill_one = true; break;
		case 'l': log_dir = optarg; break;
		default: return 2;
		}
	}
	if (!root || !abort_dir || !log_dir || procs < 1 || threads < 1 || threads > 64 || ops < 1) {
		fprintf(stderr, "usage: see the comment at the top of tests/tools/stress.c\n");
		return 2;
	}
	if (!(set_request = (int (*)(const char *))dlsym(RTLD_DEFAULT, "shmguard_set_request"))) {
		fprintf(stderr, "stress: run it under the shim\n");
		return 2;
	}
	memset(longest, 'x', 255);
	requests[10] = longest;
	if (pipe(go) < 0 || pipe(done) < 0)
		return 2;
	pids = calloc((size_t)procs, sizeof(*pids));
	for (int p = 0; p < procs; p++) {
		if ((pids[p] = fork()) == 0) {
			close(go[1]);
			close(done[0]);
			worker_main(p, go[0], done[1]);
		}
	}
	close(go[0]);
	close(done[1]);
	/* The odd workers do not fork: the last of them is killed once it has
	 * made some files (its log holds a few KiB), so that it leaves orphans. */
	if (kill_one && procs > 1) {
		int victim = procs % 2 ? procs - 2 : procs - 1;
		killed = pids[victim];
		for (int tries = 0; tries < 1000 && logged(victim) < 8192; tries++)
			usleep(10000);
		kill(killed, SIGKILL);
		waitpid(killed, NULL, 0);
	}
	/* Every remaining worker and fork child reports once. */
	int expect = procs + (procs + 1) / 2 - (killed > 0);
	for (int i = 0; i < expect && read(done[0], line, 1) == 1; i++)
		;
	printf("ready\n");
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 2;
	int status = check(killed);
	close(go[1]); /* the workers go */
	while (wait(NULL) > 0)
		;
	return status;
}
