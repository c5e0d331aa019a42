/* The auditor's workloads (auditor/audit_workloads.c): one per cgroup id
 * (made-up ones here, ID(n), that no cgroup has),
 * kept while anything refers to it, forgotten --workload-expiry after, its
 * figures kept in the expired ones' totals; the set an abort counts for. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "audit_workloads.h"
#include "cgroup_ids.h"

#define ID(n) ((1ull << 62) + (n))

static struct audit_workloads ws;

static void setup(void)
{
	audit_workloads_init(&ws, NULL, NULL, 60, 0);
}

/* In a suite of its own: at most 10 with series of their own. */
static void setup_limited(void)
{
	audit_workloads_init(&ws, NULL, NULL, 60, 10);
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
	/* Released: idle from the last cycle that saw it held.  It has a
	 * figure to show, so it waits for its expiry although its cgroup
	 * is gone. */
	busy->aborts = 1;
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

/* Issue 29: cgroups churned by a pod or a local user (made, a file created
 * and removed, removed) leave no workload behind: one whose cgroup is gone
 * and that has nothing to show goes at the next cycle's end, whatever its
 * expiry. */
Test(workloads, gone_cgroups_with_nothing_to_show_leave_at_the_next_cycle)
{
	for (unsigned i = 0; i < 3000; i++) {
		struct audit_workload *w = audit_workload_of(&ws, ID(1000 + i), 0);

		cr_assert(w);
		audit_workload_hold(w); /* its file, followed */
		audit_workload_release(w); /* and freed */
	}
	cr_expect_eq(ws.count, 3000);
	audit_workloads_cycle_end(&ws, 1);
	cr_expect_eq(ws.count, 0, "%zu churned workloads stayed", ws.count);
	cr_expect_eq(ws.expired.workloads, 3000);
}

Test(workloads, a_live_cgroup_waits_for_its_expiry)
{
	uint64_t self = sg_cgroup_id_of("/");
	struct audit_workload *w;

	if (!self)
		cr_skip_test("no cgroup2 mount to ask");
	cr_assert(w = audit_workload_of(&ws, self, 0));
	audit_workloads_cycle_end(&ws, 1);
	cr_expect_eq(ws.count, 1, "a workload whose cgroup is there went before its expiry");
	audit_workloads_cycle_end(&ws, 61);
	cr_expect_eq(ws.count, 0);
}

TestSuite(workloads_limited, .init = setup_limited, .fini = teardown);

/* Past the limit, a workload is folded for its life into "other"; what a
 * folded one counted stays in "other"'s counters once it is gone, and a
 * workload shown that goes makes room for the next one made. */
Test(workloads_limited, workloads_past_the_limit_are_folded_for_their_life)
{
	struct audit_workload *w[25];
	unsigned shown = 0;

	for (unsigned i = 0; i < 25; i++) {
		cr_assert(w[i] = audit_workload_of(&ws, ID(i), 0));
		audit_workload_hold(w[i]);
		shown += !w[i]->folded;
	}
	cr_expect_eq(shown, 10);
	cr_expect_eq(ws.shown, 10);
	cr_expect(!w[9]->folded && w[10]->folded, "the first ten made are shown");
	w[20]->aborts = 2;
	w[20]->leaked_bytes = 8192;
	audit_workload_release(w[20]);
	audit_workload_release(w[0]);
	audit_workloads_cycle_end(&ws, 100);
	cr_expect_eq(ws.count, 23);
	cr_expect_eq(ws.folded_gone.aborts, 2);
	cr_expect_eq(ws.folded_gone.leaked_bytes, 8192);
	cr_expect_eq(ws.shown, 9);
	struct audit_workload *next = audit_workload_of(&ws, ID(100), 100);
	cr_assert(next);
	cr_expect(!next->folded, "a slot freed by a shown workload is taken by the next one made");
	cr_expect(w[11]->folded, "a folded workload stays folded");
}

/* Issue 29: a container restarted in place gets a new cgroup with the same
 * container ID.  Its workload is the first one's (one series per
 * container), which it holds while its cgroup lives, and it goes with its
 * cgroup.  Real cgroups, in kubelet's cgroupfs layout: root only. */
Test(workloads, a_container_restarted_in_place_is_one_workload)
{
	char base[128], dir[512];
	const char *cgroot = "/sys/fs/cgroup/unified";
	uint64_t first_id, again_id;
	struct audit_workload *first, *again;

	if (geteuid() != 0 || access(cgroot, W_OK) != 0) {
		cr_assert(!getenv("CI"), "needs root and a cgroup2 mount at %s in CI", cgroot);
		cr_skip_test("needs root and a cgroup2 mount");
	}
	/* The shared parents may hold another test's pods: removed only when empty. */
	snprintf(base, sizeof(base), "%s/kubepods/besteffort/pod%08x-0000-4000-8000-00000000beef", cgroot,
		 (unsigned)getpid());
	snprintf(dir, sizeof(dir), "%s/%056x%08x", base, 7, (unsigned)getpid());
	char cmd[1024];
	snprintf(cmd, sizeof(cmd), "mkdir -p '%s'", dir);
	cr_assert_eq(system(cmd), 0);
	first_id = sg_cgroup_id_of(dir + strlen(cgroot));
	cr_assert(first = audit_workload_of(&ws, first_id, 0));
	cr_assert(first->ids.container_id[0], "the container ID was not read from %s", first->path);
	cr_assert_eq(rmdir(dir), 0);
	cr_assert_eq(mkdir(dir, 0755), 0); /* the runtime starts it again */
	again_id = sg_cgroup_id_of(dir + strlen(cgroot));
	cr_assert_neq(again_id, first_id);
	again = audit_workload_of(&ws, again_id, 1);
	cr_expect_eq(again, first, "the restarted container is a second workload");
	cr_expect_eq(ws.count, 1);
	cr_expect_eq(audit_workload_of(&ws, again_id, 2), first, "asked again");
	audit_workloads_cycle_end(&ws, 100);
	cr_expect_eq(ws.count, 1, "the first incarnation went while the second's cgroup lives");
	cr_assert_eq(rmdir(dir), 0);
	audit_workloads_cycle_end(&ws, 101);
	audit_workloads_cycle_end(&ws, 102);
	cr_expect_eq(ws.count, 0, "both cgroups gone, nothing to show: the workload stayed");
	cr_expect_eq(rmdir(base), 0);
	snprintf(cmd, sizeof(cmd), "rmdir %s/kubepods/besteffort %s/kubepods 2>/dev/null", cgroot, cgroot);
	(void)!system(cmd);
}
