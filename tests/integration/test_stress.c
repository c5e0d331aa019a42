/* The short form of the randomized stress run (scripts/stress.sh runs the
 * long one): processes, threads, colliding request IDs, late puts, forks and
 * a killed worker, checked against the driver's own log. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"

static const char *prefix;

static void setup(void)
{
	prefix = h_prefix("stress");
}

static void teardown(void)
{
	h_cleanup(prefix);
	(void)!system(h_str("rm -rf /tmp/%slogs", prefix));
}

TestSuite(stress, .init = setup, .fini = teardown, .timeout = 120);

Test(stress, no_wrong_unlink_no_leftover_no_orphan)
{
	const char *root = h_str("/dev/shm/%sroot", prefix), *abort_dir = h_str("/dev/shm/%sabort", prefix);
	const char *logs = h_str("/tmp/%slogs", prefix);
	const char *argv[] = {h_bin("SG_STRESS"), "--root", root, "--abort-dir", abort_dir, "--logs", logs,
			      "--procs", "3", "--threads", "4", "--ops", "400", "--seed", h_str("%d", (int)getpid()),
			      "--kill", NULL};
	const char *sweep[] = {h_bin("SG_CLI"), "sweep", "--root", root, "--ignore-unreadable", "--dead", NULL};
	char *err, *verdict;
	long lifecycles, wrong, leftovers, orphans;

	cr_assert_eq(mkdir(root, 0755), 0);
	cr_assert_eq(mkdir(abort_dir, 0755), 0);
	cr_assert_eq(mkdir(logs, 0755), 0);
	struct h_proc p = h_start_ready(argv, h_shim_env(abort_dir, NULL, h_str("SHMGUARD_SHM_ROOTS=%s", root),
							 "SHMGUARD_LOG=warn", NULL));
	/* The killed worker's files are orphans: the sweep reclaims them. */
	char *out, *last;
	unsigned removed = 0;
	cr_assert_eq(h_output(sweep, NULL, &out, &err), 0, "%s", err);
	/* Its last line sums up. */
	last = out[0] ? strrchr(h_str("\n%.*s", (int)strlen(out) - 1, out), '\n') + 1 : "";
	cr_assert(sscanf(last, "removed %u file", &removed) == 1, "%s", out);
	cr_expect_gt(removed, 0, "the killed worker left no orphan to reclaim");
	usleep(300 * 1000); /* the last markers reach every watcher */
	cr_assert_eq(write(p.in, "check\n", 6), 6);
	verdict = h_read_line(&p, 60000);
	cr_assert_not_null(verdict);
	cr_assert_eq(sscanf(verdict, "lifecycles %ld wrong_unlinks %ld aborted_leftovers %ld orphans_left %ld",
			    &lifecycles, &wrong, &leftovers, &orphans), 4, "%s", verdict);
	cr_expect_gt(lifecycles, 5000);
	cr_expect_eq(wrong, 0, "%s", verdict);
	cr_expect_eq(leftovers, 0, "%s", verdict);
	cr_expect_eq(orphans, 0, "%s", verdict);
	cr_expect_eq(h_finish(&p, &err), 0, "%s", err);
}
