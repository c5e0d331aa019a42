/* shmguard ls and sweep on a private shm root: orphans are reclaimed, files
 * in use and files of live creators are not. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "harness.h"

static const char *prefix, *abort_dir, *root;

static void setup(void)
{
	h_setup("swp", &prefix, &abort_dir, NULL);
	root = h_str("/dev/shm/%sroot", prefix);
	cr_assert_eq(mkdir(root, 0755), 0);
}

static void teardown(void)
{
	h_cleanup(prefix);
}

TestSuite(sweep, .init = setup, .fini = teardown, .timeout = 60);

static const char *in_root(const char *name)
{
	return h_str("%s/%s", root, name);
}

static const char **env_for(const char *request)
{
	return h_shim_env(abort_dir, "{req}_{int}_{int}", h_str("SHMGUARD_SHM_ROOTS=%s", root),
			  request ? h_str("SHMGUARD_REQUEST_ID=%s", request) : NULL, NULL);
}

/* `shmguard sweep --root ROOT` with up to four more arguments.  This
 * sandbox's init cannot be read even by root: the tests say so explicitly. */
static int sweep(char **out, const char *a1, const char *a2, const char *a3, const char *a4)
{
	const char *argv[] = {h_bin("SG_CLI"), "sweep", "--root", root, "--ignore-unreadable", a1, a2, a3, a4, NULL};

	return h_output(argv, NULL, out, NULL);
}

static void kill9(struct h_proc *p)
{
	kill(p->pid, SIGKILL);
	h_finish(p, NULL);
}

static uint64_t allocated(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 ? (uint64_t)st.st_blocks * 512 : 0;
}

/* seed 001: a region made with O_CREAT|O_EXCL and joined by others; the
 * creator is not the lifetime owner. */
Test(sweep, restart_case_keeps_a_region_joiners_still_map)
{
	const char *region = in_root("vllm_offload_engine0.mmap");
	const char *argv[] = {h_bin("SG_SHMTOOL"), "region", region, "65536", "wait", NULL};
	struct h_proc creator = h_start_ready(argv, env_for(h_str("%sengine0", prefix)));
	struct h_proc j1 = h_start_ready(argv, env_for(NULL)), j2 = h_start_ready(argv, env_for(NULL));
	uint64_t bytes = allocated(region);
	char *out;

	cr_assert_gt(bytes, 0);
	kill9(&creator);
	cr_assert_eq(sweep(&out, "--dead", NULL, NULL, NULL), 0, "%s", out);
	cr_expect(h_exists(region), "a region joiners map was swept: %s", out);
	cr_expect(strstr(out, "kept") && strstr(out, "in use by"), "%s", out);

	kill9(&j1);
	kill9(&j2);
	cr_assert_eq(sweep(&out, "--dead", NULL, NULL, NULL), 0, "%s", out);
	cr_expect(!h_exists(region), "the orphaned region stayed: %s", out);
	cr_expect(strstr(out, h_str("removed       %s (%llu bytes)", region, (unsigned long long)bytes)), "%s", out);
}

/* A producer crashed with segments of two requests; another process lives. */
Test(sweep, request_and_dead_sweeps_take_exactly_theirs)
{
	const char *crashed[] = {h_bin("SG_SHMTOOL"), "open", in_root("reqA_0_0"), "4096", "open", in_root("reqA_0_1"),
				 "4096", "open", in_root("reqA_1_0_0_0"), "4096", "open", in_root("reqB_0_0"), "4096",
				 "wait", NULL};
	const char *live[] = {h_bin("SG_SHMTOOL"), "open", in_root("reqC_0_0"), "4096", "wait", NULL};
	struct h_proc p1 = h_start_ready(crashed, env_for(NULL)), p2 = h_start_ready(live, env_for(NULL));
	char *out;

	kill9(&p1);
	cr_assert_eq(sweep(&out, "--request", "reqA", NULL, NULL), 0, "%s", out);
	cr_expect(!h_exists(in_root("reqA_0_0")) && !h_exists(in_root("reqA_0_1")), "%s", out);
	cr_expect(h_exists(in_root("reqA_1_0_0_0")), "reqA swept reqA_1's file: %s", out);
	cr_expect(h_exists(in_root("reqB_0_0")), "reqA swept reqB's file: %s", out);

	cr_assert_eq(sweep(&out, "--dead", NULL, NULL, NULL), 0, "%s", out);
	cr_expect(!h_exists(in_root("reqB_0_0")), "the dead producer's file stayed: %s", out);
	cr_expect(!h_exists(in_root("reqA_1_0_0_0")), "the dead producer's file stayed: %s", out);
	cr_expect(h_exists(in_root("reqC_0_0")), "a live process's file was swept: %s", out);
	kill9(&p2);
}

/* A tag naming a creator in this pid namespace (one naming none is unknown). */
static void forge(const char *path, int pid, unsigned long long start)
{
	struct stat ns;
	const char *value;

	cr_assert_eq(stat("/proc/self/ns/pid", &ns), 0);
	value = h_str("shmguard/1 pid=%d start=%llu ns=%llu created=1 req=%sforged", pid, start,
		      (unsigned long long)ns.st_ino, prefix);
	int fd = open(path, O_CREAT | O_RDWR, 0600);

	cr_assert_geq(fd, 0);
	cr_assert_eq(ftruncate(fd, 4096), 0);
	cr_assert_eq(fsetxattr(fd, "user.shmguard", value, strlen(value), 0), 0);
	close(fd);
}

/* Field 3 (the state) and field 22 (the start time) of /proc/PID/stat. */
static unsigned long long start_of(pid_t pid, char *state)
{
	char buf[1024];
	FILE *f = fopen(h_str("/proc/%d/stat", (int)pid), "r");
	unsigned long long v = 0;

	cr_assert(f && fgets(buf, sizeof(buf), f));
	fclose(f);
	if (state)
		*state = strrchr(buf, ')')[2];
	sscanf(strrchr(buf, ')') + 2, "%*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %llu", &v);
	return v;
}

static unsigned long long my_start(void)
{
	return start_of(getpid(), NULL);
}

/* Polls until pid's main thread has exited (state Z). */
static bool wait_zombie(pid_t pid)
{
	char state = 0;

	for (long end = h_now_ms() + 5000; h_now_ms() < end; usleep(10000))
		if (start_of(pid, &state), state == 'Z')
			return true;
	return false;
}

Test(sweep, a_reused_pid_is_not_the_creator)
{
	char *out;

	forge(in_root("mine_0_0"), getpid(), my_start());
	forge(in_root("reused_0_0"), getpid(), my_start() + 1);
	cr_assert_eq(sweep(&out, "--dead", NULL, NULL, NULL), 0, "%s", out);
	cr_expect(h_exists(in_root("mine_0_0")), "a live creator's file was swept: %s", out);
	cr_expect(!h_exists(in_root("reused_0_0")), "a pid with another start time counted as alive: %s", out);
}

Test(sweep, ls_shows_unlinked_but_mapped_bytes_and_holder)
{
	const char *x = in_root("mapped_0_0");
	const char *argv[] = {h_bin("SG_SHMTOOL"), "region", x, "8192", "unlink", x, "wait", NULL};
	struct h_proc p = h_start_ready(argv, env_for(NULL));
	const char *ls[] = {h_bin("SG_CLI"), "ls", "--json", "--root", root, NULL};
	char *text;
	json_error_t err;
	json_t *r, *f;
	size_t i;
	bool found = false;

	cr_assert_eq(h_output(ls, NULL, &text, NULL), 0);
	cr_assert_not_null(r = json_loads(text, 0, &err), "%s", err.text);
	cr_expect_eq(json_integer_value(json_object_get(r, "schema")), 2);
	json_array_foreach(json_object_get(r, "files"), i, f) {
		if (!strstr(json_string_value(json_object_get(f, "path")), "mapped_0_0"))
			continue;
		found = true;
		cr_expect(!json_is_true(json_object_get(f, "linked")));
		/* Issue 22: the path is only a path; "linked" says it is gone. */
		cr_expect_str_eq(json_string_value(json_object_get(f, "path")), x);
		cr_expect_eq(json_integer_value(json_object_get(f, "allocated_bytes")), 8192);
		json_t *h = json_array_get(json_object_get(f, "holders"), 0);
		cr_expect_eq(json_integer_value(json_object_get(h, "pid")), p.pid);
		cr_expect_str_eq(json_string_value(json_object_get(h, "via")), "mapping");
	}
	cr_expect(found, "the unlinked mapped file is not listed: %s", text);
	/* Every field, the tag's and the holders' too, is documented. */
	h_expect_json_documented(r, "ls");
	json_decref(r);
	kill9(&p);
}

/* Two sweeps at once remove each orphan once between them. */
Test(sweep, concurrent_sweeps_never_unlink_a_name_twice)
{
	enum { FILES = 200 };
	const char **argv = calloc(FILES * 3 + 3, sizeof(*argv));
	size_t n = 0;

	argv[n++] = h_bin("SG_SHMTOOL");
	for (int i = 0; i < FILES; i++) {
		argv[n++] = "open";
		argv[n++] = in_root(h_str("orphan%d_0_0", i));
		argv[n++] = "4096";
	}
	argv[n++] = "wait";
	struct h_proc p = h_start_ready(argv, env_for(h_str("%sorphans", prefix)));
	kill9(&p);

	const char *a[] = {h_bin("SG_CLI"), "sweep", "--root", root, "--ignore-unreadable", "--dead", "--json", NULL};
	struct h_proc s1 = h_spawn(a, NULL), s2 = h_spawn(a, NULL);
	char *t1 = h_read_all(&s1, 30000), *t2 = h_read_all(&s2, 30000);
	cr_assert_eq(h_finish(&s1, NULL), 0);
	cr_assert_eq(h_finish(&s2, NULL), 0);
	json_t *r1 = json_loads(t1, 0, NULL), *r2 = json_loads(t2, 0, NULL);
	cr_assert(r1 && r2);
	cr_expect_eq(json_integer_value(json_object_get(r1, "removed")) + json_integer_value(json_object_get(r2, "removed")),
		     FILES);
	cr_expect_eq(json_integer_value(json_object_get(r1, "failed")) + json_integer_value(json_object_get(r2, "failed")), 0);
	cr_expect_eq(h_count(root, "orphan"), 0);
	h_expect_json_documented(r1, "sweep");
	h_expect_json_documented(r2, "sweep");
	json_decref(r1);
	json_decref(r2);
}

/* Where some process cannot be read (this sandbox's init, even for root),
 * a file it could be using stays unless --ignore-unreadable; where every
 * process can be read, it goes. */
Test(sweep, unseen_users_keep_files_unless_told)
{
	const char *ls[] = {h_bin("SG_CLI"), "ls", "--json", "--root", root, NULL};
	const char *argv[] = {h_bin("SG_CLI"), "sweep", "--root", root, "--request", h_str("%sforged", prefix), NULL};
	char *text, *out;
	json_t *r;

	cr_assert_eq(h_output(ls, NULL, &text, NULL), 0);
	cr_assert_not_null(r = json_loads(text, 0, NULL));
	long long unreadable = json_integer_value(json_object_get(r, "unreadable_processes"));
	json_decref(r);

	forge(in_root("unseen_0_0"), 1, 1);
	cr_assert_eq(h_run(argv, NULL, &out), 0, "%s", out);
	if (unreadable) {
		cr_expect(h_exists(in_root("unseen_0_0")), "swept although %lld processes could not be read", unreadable);
		cr_assert_eq(sweep(&out, "--request", h_str("%sforged", prefix), NULL, NULL), 0, "%s", out);
	}
	cr_expect(!h_exists(in_root("unseen_0_0")), "not swept with every user seen or ignored");
}

/* Untagged files go only by name and age, and never while young and empty. */
Test(sweep, untagged_files_need_match_and_age)
{
	char *out;
	int fd;

	fd = open(in_root("stale.tmp"), O_CREAT | O_RDWR, 0600);
	cr_assert_eq(ftruncate(fd, 4096), 0);
	close(fd);
	close(open(in_root("fresh.tmp"), O_CREAT | O_RDWR, 0600)); /* empty: a creator may size it next */
	close(open(in_root("other.dat"), O_CREAT | O_RDWR, 0600));
	cr_assert_eq(sweep(&out, "--glob", "*.tmp", "--older-than", "1h"), 0, "%s", out);
	cr_expect(h_exists(in_root("stale.tmp")), "younger than --older-than, yet swept: %s", out);
	cr_assert_eq(sweep(&out, "--glob", "*.tmp", "--older-than", "0s"), 0, "%s", out);
	cr_expect(!h_exists(in_root("stale.tmp")), "%s", out);
	cr_expect(h_exists(in_root("fresh.tmp")), "a young empty file was swept: %s", out);
	cr_expect(strstr(out, "empty and young"), "%s", out);
	cr_expect(h_exists(in_root("other.dat")), "a name that does not match was swept: %s", out);
}

Test(sweep, bad_usage)
{
	const char *argv1[] = {h_bin("SG_CLI"), "sweep", "--root", root, NULL};
	const char *argv2[] = {h_bin("SG_CLI"), "sweep", "--root", root, "--glob", "*", NULL};
	const char *argv3[] = {h_bin("SG_CLI"), "sweep", "--root", root, "--request", "a/b", NULL};
	const char *argv4[] = {h_bin("SG_CLI"), "sweep", "--root", "relative", "--dead", NULL};
	char *err;

	cr_expect_eq(h_run(argv1, NULL, &err), 2, "nothing to sweep is bad usage");
	cr_expect_eq(h_run(argv2, NULL, &err), 2);
	cr_expect(strstr(err, "go together"), "%s", err);
	cr_expect_eq(h_run(argv3, NULL, &err), 2);
	cr_expect_eq(h_run(argv4, NULL, &err), 2);
}

/* What the thread cases hold: an fd on one file and a mapping of another. */
struct held {
	const char *open_path, *map_path;
	bool own_table; /* unshare(CLONE_FILES) first */
	int ready;
};

static void *hold(void *arg)
{
	struct held *h = arg;
	char ok = 'y';

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (h->own_table && unshare(CLONE_FILES) < 0)
		ok = 'n';
	if (h->open_path && open(h->open_path, O_RDWR | O_CLOEXEC) < 0)
		ok = 'n';
	if (h->map_path) {
		int fd = open(h->map_path, O_RDWR | O_CLOEXEC);
		if (fd < 0 || mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) == MAP_FAILED)
			ok = 'n';
		close(fd);
	}
	if (write(h->ready, &ok, 1) != 1)
		_exit(1);
	for (;;)
		pause();
	return NULL;
}

/* A child whose second thread holds h's files; its main thread then calls
 * pthread_exit (main_exits) or waits.  It dies with the test. */
static pid_t start_holder(struct held *h, bool main_exits)
{
	int p[2];
	char ok = 0;
	pthread_t t;

	cr_assert_eq(pipe(p), 0);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		h->ready = p[1];
		if (pthread_create(&t, NULL, hold, h) != 0)
			_exit(1);
		if (main_exits)
			pthread_exit(NULL);
		for (;;)
			pause();
	}
	close(p[1]);
	cr_assert_eq(read(p[0], &ok, 1), 1);
	close(p[0]);
	cr_assert_eq(ok, 'y');
	if (main_exits)
		cr_assert(wait_zombie(pid), "the main thread did not exit");
	return pid;
}

static void end_child(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/* #10.6: once the main thread has called pthread_exit, /proc/PID/fd and
 * /proc/PID/maps are empty, while a worker still holds an fd and a mapping;
 * the process lives on, and so does its files' creator. */
Test(sweep, files_a_worker_holds_after_the_main_thread_exits_are_in_use)
{
	const char *opened = in_root("opened_0_0"), *mapped = in_root("mapped_0_0"), *idle = in_root("idle_0_0");
	struct held h = {.open_path = opened, .map_path = mapped};
	char *out;

	forge(opened, 1, 1);
	forge(mapped, 1, 1);
	pid_t pid = start_holder(&h, true);
	unsigned long long start = start_of(pid, NULL);
	forge(idle, pid, start);

	cr_assert_eq(sweep(&out, "--dead", NULL, NULL, NULL), 0, "%s", out);
	cr_expect(h_exists(idle), "a process whose main thread exited counted as dead: %s", out);
	cr_assert_eq(sweep(&out, "--request", h_str("%sforged", prefix), NULL, NULL), 0, "%s", out);
	cr_expect(h_exists(opened), "a file a worker thread has open was swept: %s", out);
	cr_expect(h_exists(mapped), "a file a worker thread maps was swept: %s", out);
	cr_expect_eq(h_occurrences(out, h_str("in use by %d", (int)pid)), 2, "%s", out);
	cr_expect(!h_exists(idle), "%s", out);
	end_child(pid);
}

/* #10.6: a thread with its own descriptor table (unshare(CLONE_FILES)):
 * /proc/PID/fd shows the main thread's. */
Test(sweep, a_file_open_in_a_threads_own_table_is_in_use)
{
	const char *opened = in_root("own_0_0");
	struct held h = {.open_path = opened, .own_table = true};
	char *out;

	forge(opened, 1, 1);
	pid_t pid = start_holder(&h, false);
	cr_assert_eq(sweep(&out, "--request", h_str("%sforged", prefix), NULL, NULL), 0, "%s", out);
	cr_expect(h_exists(opened), "a file open in a thread's own table was swept: %s", out);
	cr_expect(strstr(out, h_str("in use by %d", (int)pid)), "%s", out);
	end_child(pid);
}

/* #10.14: an exited creator nobody reaped (a container whose PID 1 does
 * not reap) holds nothing and runs nothing: it is dead. */
Test(sweep, a_zombie_creator_is_dead)
{
	const char *orphan = in_root("zombie_0_0");
	char state = 0, *out;
	pid_t pid = fork();

	cr_assert_geq(pid, 0);
	if (pid == 0)
		_exit(0);
	forge(orphan, pid, start_of(pid, NULL));
	cr_assert(wait_zombie(pid));
	cr_assert_eq(sweep(&out, "--dead", NULL, NULL, NULL), 0, "%s", out);
	start_of(pid, &state);
	cr_expect_eq(state, 'Z', "the creator was reaped meanwhile: the test proves nothing");
	cr_expect(!h_exists(orphan), "a zombie creator counted as alive: %s", out);
	waitpid(pid, NULL, 0);
}

static json_t *ls_json(const char *root1, const char *root2)
{
	const char *argv[] = {h_bin("SG_CLI"), "ls", "--json", "--root", root1, root2 ? "--root" : NULL, root2, NULL};
	char *text;
	json_t *r;
	json_error_t err;

	cr_assert_eq(h_output(argv, NULL, &text, NULL), 0);
	cr_assert_not_null(r = json_loads(text, 0, &err), "%s: %s", err.text, text);
	return r;
}

static const char *hex_of(const char *s)
{
	char *out = h_str("%*s", (int)strlen(s) * 2, "");

	for (size_t i = 0; s[i]; i++)
		sprintf(out + 2 * i, "%02x", (unsigned char)s[i]);
	return out;
}

static void make_file(const char *path)
{
	int fd = open(path, O_CREAT | O_RDWR, 0600);

	cr_assert_geq(fd, 0, "%s", path);
	cr_assert_eq(write(fd, "x", 1), 1);
	close(fd);
}

/* #10.19: names are bytes.  JSON holds every file, lossless through
 * name_hex; text shows no control character and no invalid byte raw. */
Test(sweep, every_name_is_listed_and_swept_and_none_drives_the_terminal)
{
	static const char *names[] = {"plain", "bad\xff", "esc\x1b[31mred", "csi\xc2\x9b" "2J", "back\\slash",
				      "caf\xc3\xa9", "nl\nname", "tab\tname"};
	enum { N = sizeof(names) / sizeof(*names) };
	const char *ls[] = {h_bin("SG_CLI"), "ls", "--root", root, NULL};
	json_t *r, *f;
	size_t i;
	char *text, *out;
	int bad = 0, tagged = 0;

	for (i = 0; i < N; i++)
		make_file(in_root(names[i]));
	/* A tag's request ID is bytes too. */
	const char *tag = h_str("shmguard/1 pid=1 start=1 created=1 req=%s\x1b[2J\xfe", prefix);
	cr_assert_eq(setxattr(in_root("plain"), "user.shmguard", tag, strlen(tag), 0), 0);

	r = ls_json(root, NULL);
	cr_expect_eq(json_integer_value(json_object_get(r, "total_files")), N);
	cr_expect_eq(json_array_size(json_object_get(r, "files")), N, "a file is missing from ls --json");
	json_array_foreach(json_object_get(r, "files"), i, f) {
		const char *hex = json_string_value(json_object_get(f, "name_hex"));
		if (hex) {
			bad++;
			cr_expect_str_eq(hex, "626164ff", "name_hex is not the name's bytes");
			cr_expect_str_eq(json_string_value(json_object_get(f, "name")), "bad\xef\xbf\xbd");
		}
		json_t *t = json_object_get(f, "tag");
		if (json_is_object(t)) {
			tagged++;
			cr_expect_str_eq(json_string_value(json_object_get(t, "request_hex")),
					 h_str("%s1b5b324afe", hex_of(prefix)));
		}
	}
	cr_expect_eq(bad, 1, "exactly one name is not UTF-8");
	cr_expect_eq(tagged, 1, "the tag was not read");
	json_decref(r);

	cr_assert_eq(h_output(ls, NULL, &text, NULL), 0);
	cr_expect(!strchr(text, '\x1b') && !strstr(text, "\xc2\x9b") && !strchr(text, '\xff') && !strchr(text, '\xfe') &&
			  !strchr(text, '\t'),
		  "ls printed raw bytes: %s", text);
	cr_expect(strstr(text, "esc\\x1b[31mred") && strstr(text, "bad\\xff") && strstr(text, "csi\\xc2\\x9b2J") &&
			  strstr(text, "back\\\\slash") && strstr(text, "caf\xc3\xa9") && strstr(text, "\\x1b[2J\\xfe"),
		  "%s", text);

	const char *argv[] = {h_bin("SG_CLI"), "sweep", "--root", root, "--ignore-unreadable", "--json", "--glob",
			      "*", "--older-than", "0", NULL};
	cr_assert_eq(h_output(argv, NULL, &out, NULL), 0, "%s", out);
	cr_assert_not_null(r = json_loads(out, 0, NULL), "%s", out);
	cr_expect_eq(json_array_size(json_object_get(r, "decisions")), N - 1, "%s", out); /* "plain" is tagged */
	cr_expect_eq(json_integer_value(json_object_get(r, "removed")), N - 1, "%s", out);
	bad = 0;
	json_array_foreach(json_object_get(r, "decisions"), i, f)
		bad += json_string_value(json_object_get(f, "path_hex")) &&
		       strcmp(json_string_value(json_object_get(f, "path_hex")), hex_of(in_root("bad\xff"))) == 0;
	cr_expect_eq(bad, 1, "the decision on a name that is not UTF-8 has no exact path_hex: %s", out);
	json_decref(r);
	for (i = 1; i < N; i++)
		cr_expect(!h_exists(in_root(names[i])), "%s stayed", names[i]);
}

/* #10.19: one directory named twice (a trailing '/', a symlink) is listed once. */
Test(sweep, a_root_named_twice_is_read_once)
{
	const char *link = h_str("/dev/shm/%slink", prefix);
	json_t *r;
	char *out;

	make_file(in_root("once_0_0"));
	r = ls_json(root, h_str("%s/", root));
	cr_expect_eq(json_integer_value(json_object_get(r, "total_files")), 1, "--root D --root D/ lists twice");
	json_decref(r);
	cr_assert_eq(symlink(root, link), 0);
	r = ls_json(root, link);
	cr_expect_eq(json_integer_value(json_object_get(r, "total_files")), 1, "a root and a symlink to it list twice");
	json_decref(r);
	const char *argv[] = {h_bin("SG_CLI"), "sweep", "--root", root, "--root", h_str("%s//", root), "--glob", "*",
			      "--older-than", "0", "--ignore-unreadable", NULL};
	cr_assert_eq(h_output(argv, NULL, &out, NULL), 0, "%s", out);
	cr_expect_eq(h_occurrences(out, "once_0_0"), 1, "%s", out);
}

/* #10.19: a subdirectory root lists the unlinked files held in it, not
 * those of the whole device. */
Test(sweep, a_subdirectory_root_lists_only_its_own_unlinked_files)
{
	const char *inside = in_root("inside_0_0"), *outside = h_str("/dev/shm/%soutside_0_0", prefix);
	const char *argv[] = {h_bin("SG_SHMTOOL"), "region", inside, "4096", "unlink", inside,
			      "region", outside, "4096", "unlink", outside, "wait", NULL};
	struct h_proc p = h_start_ready(argv, NULL);
	json_t *r, *f;
	size_t i;
	bool seen_inside = false;

	r = ls_json(root, NULL);
	json_array_foreach(json_object_get(r, "files"), i, f) {
		const char *path = json_string_value(json_object_get(f, "path"));
		cr_expect(!strstr(path, "outside_0_0"), "a file unlinked from elsewhere on the device is listed: %s",
			  path);
		seen_inside |= strstr(path, "inside_0_0") != NULL;
	}
	cr_expect(seen_inside, "the file unlinked from the root is not listed");
	json_decref(r);
	kill9(&p);
}

/* Writes len bytes of c into path (a new file). */
static void fill(const char *path, char c, size_t len)
{
	char buf[4096];
	int fd = open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);

	cr_assert_geq(fd, 0, "%s", path);
	memset(buf, c, sizeof(buf));
	for (size_t done = 0; done < len; done += sizeof(buf))
		cr_assert_eq(write(fd, buf, sizeof(buf)), (ssize_t)sizeof(buf));
	close(fd);
}

/* Whether pid sleeps in a timed sleep now (nanosleep, clock_nanosleep). */
static bool asleep(pid_t pid)
{
	char buf[64] = "";
	FILE *f = fopen(h_str("/proc/%d/syscall", (int)pid), "r");
	bool yes;

	if (!f)
		return false;
	yes = fgets(buf, sizeof(buf), f) && (strncmp(buf, "35 ", 3) == 0 || strncmp(buf, "230 ", 4) == 0);
	fclose(f);
	return yes;
}

/* Before it unlinks a name, sweep checks that the name is still the inode
 * it examined (sg_shm_unlink_same).  The seam: sweep lists the root, then
 * takes the root's lock, waiting for it asleep (2 s at most).  This test
 * holds that lock, gives the name to another file once sweep sleeps, and
 * lets go: the newcomer is not the file judged, and stays. */
Test(sweep, a_name_given_to_another_file_after_the_listing_is_kept)
{
	const char *victim = in_root("swapped"), *other = in_root("newcomer");
	const char *argv[] = {h_bin("SG_CLI"), "sweep", "--root", root, "--ignore-unreadable", "--glob", "swapped",
			      "--older-than", "0", NULL};
	char *err, *out = "", *line, head;
	struct h_proc s;
	int dfd, fd;

	fill(victim, 'a', 8192);
	fill(other, 'b', 8192);
	cr_assert_geq(dfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC), 0);
	cr_assert_eq(flock(dfd, LOCK_EX), 0);
	s = h_spawn(argv, NULL);
	for (long until = h_now_ms() + 10000; !asleep(s.pid); usleep(1000))
		cr_assert_lt(h_now_ms(), until, "sweep never waited for the root's lock");
	cr_assert_eq(rename(other, victim), 0);
	cr_assert_eq(flock(dfd, LOCK_UN), 0);
	close(dfd);
	while ((line = h_read_line(&s, 10000)))
		out = h_str("%s%s\n", out, line);
	cr_assert_eq(h_finish(&s, &err), 0, "%s%s", out, err);
	cr_assert_geq(fd = open(victim, O_RDONLY | O_CLOEXEC), 0, "the newcomer was unlinked in the listed file's place: %s",
		      out);
	cr_expect_eq(read(fd, &head, 1), 1);
	cr_expect_eq(head, 'b', "%s", out);
	close(fd);
	cr_expect(strstr(out, "the name now refers to another file"), "%s", out);
}
