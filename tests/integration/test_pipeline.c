/* The two-stage pipelines (C and Python) under the shim: aborted requests'
 * segments and lock files go, consumed and live ones are untouched. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

#define PATTERNS "{req}_{int}_{int};shm_{req}_{int}_{int}_lockfile.lock"
#define REQUESTS 13 /* aborted: 2 5 8 11; held: 10 12 */
#define CHUNKS 3
#define ABORT_EVERY 3
#define HOLD 3

static const char *prefix, *abort_dir;

static void setup(void)
{
	h_setup("pipe", &prefix, &abort_dir, NULL);
}

static void teardown(void)
{
	h_teardown(prefix, NULL);
}

TestSuite(pipeline, .init = setup, .fini = teardown, .timeout = 60);

enum fate { CONSUMED, ABORTED, HELD };

static enum fate fate_of(int i)
{
	if (i % ABORT_EVERY == ABORT_EVERY - 1)
		return ABORTED;
	return i >= REQUESTS - HOLD ? HELD : CONSUMED;
}

static const char *segment(int i, int c)
{
	return h_str("/dev/shm/%s%d_0_%d", prefix, i, c);
}

static const char *lock_file(int i, int c)
{
	return h_str("/dev/shm/shm_%s%d_0_%d_lockfile.lock", prefix, i, c);
}

/* The command line of a pipeline run, under `shmguard run` when shimmed. */
static const char **pipeline_argv(const char *program, bool shimmed, bool wait_stdin, const char *extra)
{
	const char **argv = calloc(40, sizeof(*argv));
	size_t n = 0;

	if (shimmed) {
		const char *run[] = {h_bin("SG_CLI"), "run", "--patterns", PATTERNS, "--abort-dir", abort_dir,
				     "--lib", h_bin("SG_SHIM"), "--"};
		for (size_t k = 0; k < sizeof(run) / sizeof(run[0]); k++)
			argv[n++] = run[k];
	}
	if (strstr(program, ".py")) {
		argv[n++] = "/usr/bin/env";
		argv[n++] = "python3";
	}
	const char *args[] = {program, "--prefix", prefix, "--requests", h_str("%d", REQUESTS), "--chunks",
			      h_str("%d", CHUNKS), "--abort-every", h_str("%d", ABORT_EVERY), "--hold",
			      h_str("%d", HOLD), "--abort-dir", abort_dir, wait_stdin ? "--wait-stdin" : extra, extra};
	for (size_t k = 0; k < sizeof(args) / sizeof(args[0]) && args[k]; k++)
		argv[n++] = args[k];
	return argv;
}

/* Starts a pipeline and waits for its "done" line; it then stays alive
 * (as a server would) until its stdin closes. */
static struct h_proc start(const char *program, bool shimmed, const char *extra)
{
	struct h_proc p = h_spawn(pipeline_argv(program, shimmed, true, extra), NULL);
	char *line = h_read_line(&p, 30000);
	int count[3] = {0};

	for (int i = 0; i < REQUESTS; i++)
		count[fate_of(i)]++;
	cr_assert_not_null(line, "pipeline %s printed no 'done' line", program);
	cr_assert_str_eq(line, h_str("done requests=%d consumed=%d aborted=%d held=%d chunks=%d", REQUESTS,
				     count[CONSUMED], count[ABORTED], count[HELD], CHUNKS));
	return p;
}

/* Every aborted request's files are gone within a second of the run's end
 * (their markers were written during the run); the rest are as the
 * pipeline left them. */
static void check_swept(void)
{
	long deadline = h_now_ms() + 1000;

	for (int i = 0; i < REQUESTS; i++) {
		for (int c = 0; c < CHUNKS; c++) {
			switch (fate_of(i)) {
			case ABORTED:
				cr_expect(h_wait_gone(segment(i, c), (int)(deadline - h_now_ms())), "%s survived its abort",
					  segment(i, c));
				cr_expect(h_wait_gone(lock_file(i, c), (int)(deadline - h_now_ms())),
					  "%s survived its abort", lock_file(i, c));
				break;
			case HELD:
				cr_expect(h_exists(segment(i, c)), "live unconsumed %s was removed", segment(i, c));
				cr_expect(h_exists(lock_file(i, c)), "live unconsumed %s was removed", lock_file(i, c));
				break;
			case CONSUMED:
				cr_expect(!h_exists(segment(i, c)), "consumed %s is still there", segment(i, c));
				break;
			}
		}
	}
}

/* An abort from outside (the CLI) of a live request: gone within 1 s,
 * the other live request untouched. */
static void check_cli_abort(void)
{
	int victim = 12, survivor = 10;
	const char *argv[] = {h_bin("SG_CLI"), "abort", "--abort-dir", abort_dir, h_str("%s%d", prefix, victim), NULL};
	char *err;

	cr_assert_eq(h_run(argv, NULL, &err), 0, "shmguard abort failed: %s", err);
	long start = h_now_ms();
	for (int c = 0; c < CHUNKS; c++) {
		cr_expect(h_wait_gone(segment(victim, c), 1000 - (int)(h_now_ms() - start)), "%s not swept within 1 s",
			  segment(victim, c));
		cr_expect(h_wait_gone(lock_file(victim, c), 1000 - (int)(h_now_ms() - start)),
			  "%s not swept within 1 s", lock_file(victim, c));
		cr_expect(h_exists(segment(survivor, c)), "%s was swept with another request", segment(survivor, c));
	}
}

static void run_shimmed(const char *program, const char *extra)
{
	struct h_proc p = start(program, true, extra);
	char *err;

	check_swept();
	check_cli_abort();
	cr_assert_eq(h_finish(&p, &err), 0, "pipeline failed: %s", err);
	cr_expect_eq(h_occurrences(err, "warning"), 0, "the shim warned: %s", err);
}

Test(pipeline, c_pipeline_under_the_shim)
{
	run_shimmed(h_bin("SG_SHMPIPE"), NULL);
}

Test(pipeline, python_pipeline_under_the_shim)
{
	run_shimmed(h_bin("SG_SHMPIPE_PY"), NULL);
}

/* The markers come after chunk 0: chunks 1 and 2 are late puts. */
Test(pipeline, late_puts_after_abort_do_not_survive)
{
	run_shimmed(h_bin("SG_SHMPIPE"), "--late-puts");
}

/* Without the shim the same run leaks: the assertions above are not vacuous. */
Test(pipeline, without_the_shim_aborted_segments_stay)
{
	struct h_proc p = start(h_bin("SG_SHMPIPE"), false, NULL);
	int leaked = 0;

	usleep(300 * 1000);
	for (int i = 0; i < REQUESTS; i++)
		for (int c = 0; c < CHUNKS; c++)
			leaked += fate_of(i) == ABORTED && h_exists(segment(i, c)) && h_exists(lock_file(i, c));
	cr_expect_eq(leaked, 4 * CHUNKS, "%d of the aborted requests' files stayed", leaked);
	cr_assert_eq(h_finish(&p, NULL), 0);
}

/* A pipeline that exits right after its last abort: the aborts came while
 * it lived, so they are honoured before it goes (exit itself sweeps nothing:
 * the held requests stay). */
Test(pipeline, aborts_just_before_exit_are_honoured)
{
	char *err;

	cr_assert_eq(h_run(pipeline_argv(h_bin("SG_SHMPIPE"), true, false, NULL), NULL, &err), 0, "%s", err);
	for (int i = 0; i < REQUESTS; i++)
		for (int c = 0; c < CHUNKS; c++)
			if (fate_of(i) == ABORTED)
				cr_expect(!h_exists(segment(i, c)), "%s outlived its abort", segment(i, c));
			else if (fate_of(i) == HELD)
				cr_expect(h_exists(segment(i, c)), "exit swept live %s", segment(i, c));
}
