/* Real servers that use /dev/shm for themselves, run under the shim:
 * PostgreSQL, its postmaster preloaded with libshmguard.so (its backends and
 * parallel workers are fork children and inherit it), every query forced
 * into parallel workers that meet through /dev/shm/PostgreSQL.N segments. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <glob.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

static const char *prefix, *abort_dir, *tmp;
static struct h_proc postmaster;

static void setup(void)
{
	h_setup("srv", &prefix, &abort_dir, NULL);
	tmp = h_str("/tmp/%spg", prefix);
}

static void teardown(void)
{
	/* A postmaster left running by a failed test: an immediate shutdown
	 * ends its backends too (each is its own session, out of the reach of
	 * h_cleanup's kill of the process group). */
	if (postmaster.pid > 0 && kill(postmaster.pid, SIGQUIT) == 0)
		for (long end = h_now_ms() + 5000; h_now_ms() < end && waitpid(postmaster.pid, NULL, WNOHANG) == 0;)
			usleep(10000);
	h_cleanup(prefix);
	cr_expect_eq(system(h_str("rm -rf '%s'", tmp)), 0);
}

TestSuite(postgres, .init = setup, .fini = teardown, .timeout = 60);

/* The bin directory of the newest installed PostgreSQL, and its major
 * version; missing is a failure in CI (scripts/deps.sh installs it). */
static const char *postgres_bin(int *version)
{
	glob_t g;
	const char *best = NULL;

	*version = 0;
	if (glob("/usr/lib/postgresql/*/bin/postgres", 0, NULL, &g) == 0) {
		for (size_t i = 0; i < g.gl_pathc; i++) {
			int v = atoi(g.gl_pathv[i] + strlen("/usr/lib/postgresql/"));
			if (v > *version) {
				*version = v;
				best = h_str("%.*s", (int)(strlen(g.gl_pathv[i]) - strlen("/postgres")), g.gl_pathv[i]);
			}
		}
		globfree(&g);
	}
	if (!best) {
		cr_assert(!getenv("CI"), "PostgreSQL is missing in CI (scripts/deps.sh installs postgresql)");
		cr_skip_test("PostgreSQL is not installed (Debian package postgresql)");
	}
	return best;
}

/* The test's own /dev/shm: an empty tmpfs in a mount namespace of its own,
 * so that what the server leaves there is exactly what is there, whatever
 * else runs on the machine. */
static void private_dev_shm(void)
{
	if (geteuid() != 0) {
		cr_assert(!getenv("CI"), "the PostgreSQL test must run as root in CI");
		cr_skip_test("needs root (a private /dev/shm, a user to run PostgreSQL as)");
	}
	h_private_mounts(teardown);
	cr_assert_eq(mount("none", "/dev/shm", "tmpfs", 0, "size=256m,mode=1777"), 0, "mount tmpfs: %s",
		     strerror(errno));
}

/* The names in /dev/shm that start with start (starting) or do not (!starting),
 * one a line. */
static char *dev_shm_names(const char *start, bool starting)
{
	DIR *d = opendir("/dev/shm");
	struct dirent *e;
	char *names = h_str("%s", "");

	cr_assert(d);
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") &&
		    (strncmp(e->d_name, start, strlen(start)) == 0) == starting)
			names = h_str("%s%s\n", names, e->d_name);
	closedir(d);
	return names;
}

/* The server's segments once they stop changing (5 s at most): a parallel
 * query's segment goes a moment after its session ends, and must not be
 * taken for one a sweep removed. */
static char *settled_names(void)
{
	char *names = dev_shm_names("PostgreSQL.", true), *again;

	for (int i = 0; i < 25; i++) {
		usleep(200 * 1000);
		again = dev_shm_names("PostgreSQL.", true);
		if (strcmp(again, names) == 0)
			break;
		names = again;
	}
	return names;
}

static const struct h_user *pg_user;
static const char *pg_bin;

/* psql's command line, running sql (-c) or a file of it (-f), output
 * unaligned and tuples only. */
static const char *const *psql_argv(const char *opt, const char *sql)
{
	const char **argv = calloc(16, sizeof(*argv));
	const char *words[] = {h_str("%s/psql", pg_bin), "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-h", tmp, "-U",
			       "postgres", "-d", "postgres", opt, sql};

	memcpy(argv, words, sizeof(words));
	return argv;
}

/* psql's output, asserted to succeed. */
static char *psql(const char *opt, const char *sql)
{
	char *out, *err;

	cr_assert_eq(h_output_as(pg_user, psql_argv(opt, sql), NULL, &out, &err), 0, "psql %s '%s': %s", opt, sql, err);
	return out;
}

/* The line of text holding needle, NULL if none does. */
static char *line_with(const char *text, const char *needle)
{
	const char *at = strstr(text, needle), *start;

	if (!at)
		return NULL;
	for (start = at; start > text && start[-1] != '\n'; start--)
		;
	return h_str("%.*s", (int)strcspn(start, "\n"), start);
}

/* SELECT count(*), sum(g) FROM t, n times: a parallel aggregate each. */
static const char *queries_file(const char *name, int n)
{
	const char *path = h_str("%s/%s.sql", tmp, name);
	FILE *f = fopen(path, "w");

	cr_assert(f);
	for (int i = 0; i < n; i++)
		fputs("SELECT count(*), sum(g) FROM t;\n", f);
	fclose(f);
	return path;
}

#define ROWS 200000
#define EXPECTED "200000|20000100000\n" /* count and sum of 1..ROWS */

static void expect_all_right(const char *out, int n, const char *what)
{
	cr_expect_eq(h_occurrences(out, EXPECTED), n, "%s: %d right answers expected: %s", what, n, out);
	cr_expect_eq(strlen(out), n * strlen(EXPECTED), "%s: %s", what, out);
}

/* The shim tags every segment the server makes (an explicit request, so
 * that its record, journal and marker watcher are at work in the postmaster
 * and in every backend that runs a parallel query); an abort of another
 * request, arriving while parallel queries run, sweeps that request's
 * segment and none of PostgreSQL's, and neither does an operator's sweep of
 * dead creators' files; after a clean shutdown and a sweep nothing is left. */
Test(postgres, parallel_queries_survive_an_unrelated_abort)
{
	int version, pm_status;
	char *out, *err, *maps;
	const char *data, *segment;

	if (getenv("SG_SANITIZED"))
		cr_skip_test("PostgreSQL hangs at start-up with AddressSanitizer's runtime loaded, shim or not: the plain "
			     "build's pass runs this");
	pg_bin = postgres_bin(&version);
	private_dev_shm();
	pg_user = h_hostile_user(); /* postgres refuses to run as root */
	data = h_str("%s/data", tmp);
	cr_assert_eq(mkdir(tmp, 0700), 0, "%s: %s", tmp, strerror(errno));
	cr_assert_eq(chown(tmp, pg_user->uid, pg_user->gid), 0);
	const char *initdb[] = {h_str("%s/initdb", pg_bin), "-D", data, "-U", "postgres", "-A", "trust", "--no-sync",
				NULL};
	cr_assert_eq(h_output_as(pg_user, initdb, NULL, &out, &err), 0, "initdb: %s%s", out, err);
	FILE *conf = fopen(h_str("%s/postgresql.conf", data), "a");
	cr_assert(conf);
	fprintf(conf,
		"listen_addresses = ''\nunix_socket_directories = '%s'\nfsync = off\n"
		/* Every parallel query makes a /dev/shm/PostgreSQL.N segment. */
		"dynamic_shared_memory_type = posix\nmin_dynamic_shared_memory = 0\n"
		"%s = on\nparallel_setup_cost = 0\nparallel_tuple_cost = 0\n"
		"min_parallel_table_scan_size = 0\nmax_parallel_workers_per_gather = 2\n",
		tmp, version >= 16 ? "debug_parallel_query" : "force_parallel_mode");
	fclose(conf);

	/* An abort that came before the server started, and a bystander whose
	 * request is aborted while the queries run. */
	h_abort(abort_dir, h_str("%searlier", prefix), NULL);
	const char *other = h_str("/dev/shm/%sother_0_0", prefix);
	const char *bystander_argv[] = {h_bin("SG_SHMTOOL"), "open", other, "4096", "wait", NULL};
	struct h_proc bystander = h_start_ready(bystander_argv, h_shim_env(abort_dir, "{req}_{int}_{int}", NULL));

	const char *postgres[] = {h_str("%s/postgres", pg_bin), "-D", data, NULL};
	postmaster = h_spawn_as(pg_user, postgres,
				h_shim_env(abort_dir, "{req}_{int}_{int}", h_str("SHMGUARD_REQUEST_ID=%spg", prefix), NULL));
	if (!h_wait_stderr(&postmaster, "database system is ready to accept connections", 15000)) {
		kill(postmaster.pid, SIGQUIT);
		h_finish(&postmaster, &err);
		postmaster.pid = 0;
		cr_assert_fail("PostgreSQL did not start: %s", err);
	}
	const char *cat[] = {"/bin/cat", h_str("/proc/%d/maps", (int)postmaster.pid), NULL};
	cr_assert_eq(h_output(cat, NULL, &maps, NULL), 0);
	cr_assert(strstr(maps, h_bin("SG_SHIM")), "the shim is not mapped in the postmaster");
	/* Its DSM control segment, which lives as long as the server. */
	segment = strstr(maps, "/dev/shm/PostgreSQL.");
	cr_assert(segment, "the postmaster maps no /dev/shm/PostgreSQL.N segment: %s", maps);
	segment = h_str("%.*s", (int)strcspn(segment, "\n"), segment);

	psql("-c", h_str("CREATE TABLE t AS SELECT g FROM generate_series(1, %d) g; ANALYZE t", ROWS));
	out = psql("-c", "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) SELECT count(*), sum(g) FROM t");
	cr_assert(strstr(out, "Gather") && strstr(out, "Parallel Seq Scan on t") && strstr(out, "Workers Launched: 2"),
		  "not a parallel plan with 2 workers: %s", out);
	/* The shim recorded the control segment as the request's, the
	 * postmaster its creator. */
	const char *ls[] = {h_bin("SG_CLI"), "ls", NULL};
	/* (This sandbox's init cannot be read even by root.) */
	const char *sweep_dead[] = {h_bin("SG_CLI"), "sweep", "--dead", "--ignore-unreadable", NULL};
	cr_assert_eq(h_output(ls, NULL, &out, NULL), 0);
	char *line = line_with(out, segment);
	cr_expect(line && strstr(line, h_str(" %spg ", prefix)) && strstr(line, h_str(" %d (alive) ", (int)postmaster.pid)),
		  "%s is not recorded as request %spg's, made by the postmaster %d: %s", segment, prefix,
		  (int)postmaster.pid, out);

	/* The abort lands while a session runs parallel queries... */
	struct h_proc during = h_spawn_as(pg_user, psql_argv("-f", queries_file("during", 100)), NULL);
	h_abort(abort_dir, h_str("%sother", prefix), NULL);
	cr_expect(h_wait_gone(other, 3000), "the bystander's segment outlived its abort by 3 s");
	out = h_read_all(&during, 20000);
	cr_expect_eq(h_finish(&during, &err), 0, "psql: %s", err);
	expect_all_right(out, 100, "during the abort");
	/* ...and new ones run after it. */
	expect_all_right(psql("-f", queries_file("after", 20)), 20, "after the abort");
	cr_expect(h_exists(segment), "the server's %s is gone while the server runs", segment);
	/* An operator's sweep of dead creators' files, while the server runs,
	 * leaves its segments alone, even the statistics area, whose creator
	 * (the startup process) has exited: live processes map it. */
	char *before = settled_names();
	cr_expect_eq(h_output(sweep_dead, NULL, &out, &err), 0, "%s%s", out, err);
	cr_expect(strstr(out, "removed 0 files") && strstr(out, "(postgres)"), "%s", out);
	cr_expect_str_eq(dev_shm_names("PostgreSQL.", true), before);

	kill(postmaster.pid, SIGINT); /* fast shutdown */
	pm_status = h_finish(&postmaster, &err);
	postmaster.pid = 0;
	cr_expect_eq(pm_status, 0, "%s", err);
	cr_expect(strstr(err, "database system is shut down"), "%s", err);
	cr_expect(!strstr(err, "ERROR") && !strstr(err, "FATAL") && !strstr(err, "WARNING"), "%s", err);
	/* Each process that tagged a segment (the postmaster, the backends that
	 * ran parallel queries) says so at exit, and none swept anything. */
	cr_expect_geq(h_occurrences(err, "] summary: tagged "), 3, "%s", err);
	cr_expect_eq(h_occurrences(err, ", swept 0 (0 bytes),"), h_occurrences(err, "] summary: tagged "), "%s", err);
	cr_expect_eq(h_finish(&bystander, &err), 0, "%s", err);
	cr_expect(strstr(err, "summary: tagged 1, swept 1 (4096 bytes)"), "%s", err);

	/* None of the server's segments is left.  A process that exited while
	 * a segment it made lived on (the startup process's, handed on to the
	 * server) left its journal: sweeps remove such journals once their
	 * files are gone.  Then nothing is left. */
	char *left = dev_shm_names(prefix, false);
	cr_expect_eq(h_occurrences(left, "\n"), h_occurrences(left, ".shmguard-journal-"), "left after the shutdown: %s",
		     left);
	cr_expect_eq(h_output(sweep_dead, NULL, &out, &err), 0, "%s%s", out, err);
	cr_expect_str_eq(dev_shm_names(prefix, false), "", "left after the shutdown and a sweep");
	h_cleanup(prefix);
	cr_expect_str_eq(dev_shm_names("", false), "");
}
