/* shmguard ls and sweep on a private shm root: orphans are reclaimed, files
 * in use and files of live creators are not. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdint.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "harness.h"

static const char *prefix, *abort_dir, *root;

static void setup(void)
{
	prefix = h_prefix("swp");
	abort_dir = h_str("/dev/shm/%sabort", prefix);
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

static void forge(const char *path, int pid, unsigned long long start)
{
	const char *value = h_str("shmguard/1 pid=%d start=%llu created=1 req=%sforged", pid, start, prefix);
	int fd = open(path, O_CREAT | O_RDWR, 0600);

	cr_assert_geq(fd, 0);
	cr_assert_eq(ftruncate(fd, 4096), 0);
	cr_assert_eq(fsetxattr(fd, "user.shmguard", value, strlen(value), 0), 0);
	close(fd);
}

static unsigned long long my_start(void)
{
	char buf[1024];
	FILE *f = fopen("/proc/self/stat", "r");
	unsigned long long v = 0;

	cr_assert(f && fgets(buf, sizeof(buf), f));
	fclose(f);
	sscanf(strrchr(buf, ')') + 2, "%*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %llu", &v);
	return v;
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
	json_array_foreach(json_object_get(r, "files"), i, f) {
		if (!strstr(json_string_value(json_object_get(f, "path")), "mapped_0_0"))
			continue;
		found = true;
		cr_expect(!json_is_true(json_object_get(f, "linked")));
		cr_expect_eq(json_integer_value(json_object_get(f, "allocated_bytes")), 8192);
		json_t *h = json_array_get(json_object_get(f, "holders"), 0);
		cr_expect_eq(json_integer_value(json_object_get(h, "pid")), p.pid);
		cr_expect_str_eq(json_string_value(json_object_get(h, "via")), "mapping");
	}
	cr_expect(found, "the unlinked mapped file is not listed: %s", text);
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
	cr_assert_eq(sweep(&out, "--match", "*.tmp", "--older-than", "1h"), 0, "%s", out);
	cr_expect(h_exists(in_root("stale.tmp")), "younger than --older-than, yet swept: %s", out);
	cr_assert_eq(sweep(&out, "--match", "*.tmp", "--older-than", "0s"), 0, "%s", out);
	cr_expect(!h_exists(in_root("stale.tmp")), "%s", out);
	cr_expect(h_exists(in_root("fresh.tmp")), "a young empty file was swept: %s", out);
	cr_expect(strstr(out, "empty and young"), "%s", out);
	cr_expect(h_exists(in_root("other.dat")), "a name that does not match was swept: %s", out);
}

Test(sweep, bad_usage)
{
	const char *argv1[] = {h_bin("SG_CLI"), "sweep", "--root", root, NULL};
	const char *argv2[] = {h_bin("SG_CLI"), "sweep", "--root", root, "--match", "*", NULL};
	const char *argv3[] = {h_bin("SG_CLI"), "sweep", "--root", root, "--request", "a/b", NULL};
	const char *argv4[] = {h_bin("SG_CLI"), "sweep", "--root", "relative", "--dead", NULL};
	char *err;

	cr_expect_eq(h_run(argv1, NULL, &err), 2, "nothing to sweep is bad usage");
	cr_expect_eq(h_run(argv2, NULL, &err), 2);
	cr_expect(strstr(err, "go together"), "%s", err);
	cr_expect_eq(h_run(argv3, NULL, &err), 2);
	cr_expect_eq(h_run(argv4, NULL, &err), 2);
}
