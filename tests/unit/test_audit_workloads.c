/* The auditor's workloads (auditor/audit_workloads.c): one per cgroup id
 * (made-up ones here, ID(n), that no cgroup has),
 * kept while anything refers to it, forgotten --workload-expiry after, its
 * figures kept in the expired ones' totals; the set an abort counts for. */
#include <criterion/criterion.h>

#include "audit_workloads.h"

#define ID(n) ((1ull << 62) + (n))

static struct audit_workloads ws;

static void setup(void)
{
	audit_workloads_init(&ws, NULL, NULL, 60);
}

static void teardown(void)
{
	audit_workloads_free(&ws);
}

TestSuite(workloads, .init = setup, .fini = teardown);

Test(workloads, one_record_per_cgroup)
{
	struct audit_workload *a = audit_workload_of(&ws, ID(11), 0), *b = audit_workload_of(&ws, ID(12), 0);

	cr_assert(a && b && a != b);
	cr_expect_eq(audit_workload_of(&ws, ID(11), 5), a);
	cr_expect_eq(ws.count, 2);
	cr_expect_null(a->path, "no such cgroup: its path is unknown, not guessed");
}

/* The series stay bounded: a workload nothing refers to goes expiry_s
 * after it was last seen referred to, and only then. */
Test(workloads, an_idle_workload_expires_and_its_figures_stay_in_the_totals)
{
	struct audit_workload *idle = audit_workload_of(&ws, ID(21), 0), *busy = audit_workload_of(&ws, ID(22), 0);

	audit_workload_hold(busy);
	idle->aborts = 3;
	idle->leaked_bytes = 4096;
	idle->leaked_files = 1;
	audit_workloads_cycle_end(&ws, 30);
	cr_expect_eq(ws.count, 2, "gone before its expiry");
	audit_workloads_cycle_end(&ws, 61);
	cr_expect_eq(ws.count, 1);
	cr_expect_eq(ws.oldest, busy, "a workload still referred to stays");
	cr_expect_eq(ws.expired.workloads, 1);
	cr_expect_eq(ws.expired.aborts, 3);
	cr_expect_eq(ws.expired.leaked_bytes, 4096);
	cr_expect_eq(ws.expired.leaked_files, 1);
	audit_workloads_cycle_end(&ws, 1000);
	cr_expect_eq(ws.count, 1, "held: never expires");
	/* Released: idle from the last cycle that saw it held. */
	audit_workload_release(busy);
	audit_workloads_cycle_end(&ws, 1030);
	cr_expect_eq(ws.count, 1);
	audit_workloads_cycle_end(&ws, 1061);
	cr_expect_eq(ws.count, 0);
	cr_expect_eq(ws.expired.workloads, 2);
	/* The same cgroup id again is a new workload. */
	cr_assert_not_null(audit_workload_of(&ws, ID(22), 2000));
	cr_expect_eq(ws.count, 1);
}

Test(workloads, an_abort_counts_once_for_each_workload_and_holds_it)
{
	struct audit_workload *a = audit_workload_of(&ws, ID(31), 0), *b = audit_workload_of(&ws, ID(32), 0);
	struct audit_workload_set s = {0};

	cr_assert(audit_workload_set_add(&s, a));
	cr_assert(audit_workload_set_add(&s, b));
	cr_assert(audit_workload_set_add(&s, a));
	cr_assert(audit_workload_set_add(&s, NULL));
	cr_expect_eq(s.n, 2);
	cr_expect_eq(a->refs, 1);
	audit_workloads_cycle_end(&ws, 100);
	cr_expect_eq(ws.count, 2, "an abort to be measured holds its workloads");
	audit_workload_set_free(&s);
	cr_expect_eq(a->refs, 0);
	cr_expect_eq(s.n, 0);
}
