/* The review (audit_review.c) on a clock and a view of the holders the test
 * gives: its pacing, an abort's grace and the rule that forgets a file
 * never named only after two cycles missed it.  The root is a directory
 * of the test's own; no BPF, no root, no wall clock. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "audit_engine.h"
#include "audit_trace.h"
#include "audit_summary.h"
#include "holders.h"
#include "journal.h"
#include "sleeper.h"

#define S 1000000000ull

/* Time stands still unless the test moves it, or advances per_read on
 * each reading (time that a directory read takes). */
struct fake_clock {
	uint64_t now, per_read;
};

static uint64_t fake_now(void *ctx)
{
	struct fake_clock *c = ctx;

	c->now += c->per_read;
	return c->now;
}

/* No process holds anything. */
static int no_holders(void *ctx, struct sg_holders *hs, const uint32_t *kdevs, unsigned ndevs)
{
	(void)ctx, (void)kdevs, (void)ndevs;
	memset(hs, 0, sizeof(*hs));
	return 0;
}

static char root[64], abort_dir[80];
static struct audit_opts o;
static struct audit a;
static struct audit_root root0;
static struct fake_clock clk;

static void setup(void)
{
	struct stat st, dir;

	snprintf(root, sizeof(root), "/tmp/sgt-%d-review-XXXXXX", (int)getpid());
	cr_assert_not_null(mkdtemp(root));
	snprintf(abort_dir, sizeof(abort_dir), "%s/aborts", root);
	cr_assert_eq(mkdir(abort_dir, 0755), 0);
	cr_assert_eq(stat(root, &st), 0);
	o = (struct audit_opts){.grace = 2, .max_files = 1000};
	snprintf(o.abort_dir, sizeof(o.abort_dir), "%s", abort_dir);
	clk = (struct fake_clock){.now = 1 * S};
	a = (struct audit){.o = &o, .abort_set.aborts_tail = &a.abort_set.aborts, .run.cmd_status = -1, .start_ns = 1 * S,
			   .clock = {fake_now, &clk}, .holders = {no_holders, NULL},
			   .root_table = {.roots = &root0, .nroots = 1, .roots_cap = 1}};
	root0 = (struct audit_root){.in_use = true, .kdev = sg_kdev(st.st_dev), .dir_ino = st.st_ino, .id = 1,
				    .dfd = -1, .abort_dfd = -1, .abort_wd = -1};
	snprintf(root0.path, sizeof(root0.path), "%s", root);
	cr_assert_geq(a.abort_set.abort_dfd = open(abort_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), 0);
	cr_assert_eq(fstat(a.abort_set.abort_dfd, &dir), 0);
	a.abort_set.abort_kdev = sg_kdev(dir.st_dev);
	a.abort_set.abort_ino = dir.st_ino;
	cr_assert_not_null(a.files = audit_files_new(o.max_files));
	a.attribution = (struct audit_attribution){.patterns = &o.patterns, .files = a.files};
	cr_assert_not_null(a.review = audit_review_new());
}

static void teardown(void)
{
	char cmd[128];

	audit_review_free(a.review);
	audit_attribution_free(&a.attribution);
	audit_files_free(a.files);
	audit_aborts_free(&a);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	cr_assert_eq(system(cmd), 0);
}

TestSuite(review, .init = setup, .fini = teardown, .timeout = 30);

static void at(double s)
{
	clk.now = a.start_ns + (uint64_t)(s * S);
}

/* A file of bytes in the root, followed as the tracer would (created now,
 * under its name, of request), or only its inode when name is NULL. */
static struct audit_file *follow(const char *name, size_t bytes, const char *request, uint64_t *ino)
{
	struct audit_file *f;
	struct stat st;
	uint64_t n;

	if (name) {
		char path[128], buf[4096] = {1};
		int fd;
		snprintf(path, sizeof(path), "%s/%s", root, name);
		cr_assert_geq(fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600), 0);
		for (size_t done = 0; done < bytes; done += sizeof(buf))
			cr_assert_eq(write(fd, buf, sizeof(buf)), (ssize_t)sizeof(buf));
		close(fd);
		cr_assert_eq(lstat(path, &st), 0);
		n = st.st_ino;
	} else {
		n = *ino; /* an inode no entry names */
	}
	cr_assert_not_null(f = audit_files_add(a.files, a.root_table.roots[0].kdev, n, 1, "test", NULL));
	f->created_ns = clk.now;
	if (name)
		audit_file_named(&a.attribution, f, 0, name, false);
	if (request)
		audit_files_attribute(a.files, f, request, REQ_TAG, -1);
	if (ino)
		*ino = n;
	return f;
}

/* request's abort marker, appearing now. */
static struct audit_abort *mark(const char *request)
{
	int fd = openat(a.abort_set.abort_dfd, request, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);

	cr_assert_geq(fd, 0);
	close(fd);
	cr_assert(audit_abort_add(&a, 0, a.abort_set.abort_dfd, request, true));
	return audit_abort_of(&a, 0, request);
}

/* One step of the review at time s (it does what is due, if anything). */
static void step_at(double s)
{
	at(s);
	audit_review_step(&a);
}

/* Steps at s until the cycle under way (if one started) ends. */
static void cycle_at(double s)
{
	uint32_t before = a.reviewed.cycles;

	step_at(s);
	for (int i = 0; i < 100 && a.reviewed.cycles == before && audit_review_due_s(&a) <= s + 1; i++) {
		clk.per_read = 0;
		audit_review_step(&a);
	}
}

Test(review, a_cycle_comes_a_second_after_the_last_when_reading_is_cheap)
{
	follow("a", 4096, "r1", NULL);
	cycle_at(1.0);
	cr_assert_eq(a.reviewed.cycles, 1);
	cr_expect_eq(a.reviewed.files_left, 1);
	cycle_at(1.9);
	cr_expect_eq(a.reviewed.cycles, 1, "a cycle before REVIEW_S was over");
	cycle_at(2.1);
	cr_expect_eq(a.reviewed.cycles, 2);
}

/* The directory reads hold the root's lock: a cycle whose reads took 0.1 s
 * is followed by the next only after 0.1 s / 1.5% = 6.7 s, not 1 s. */
Test(review, directory_reads_are_paced_to_their_share_of_the_time)
{
	follow("a", 4096, "r1", NULL);
	at(1.0);
	clk.per_read = S / 10; /* each reading of the clock: 0.1 s later */
	audit_review_step(&a);
	clk.per_read = 0;
	cycle_at(audit_now_s(&a));
	cr_assert_eq(a.reviewed.cycles, 1);
	double ended = audit_now_s(&a);
	cycle_at(ended + 2);
	cr_expect_eq(a.reviewed.cycles, 1, "the next cycle came 2 s after a cycle that read for 0.1 s");
	cycle_at(ended + 5);
	cr_expect_eq(a.reviewed.cycles, 1, "the next cycle came 5 s after a cycle that read for 0.1 s");
	cycle_at(ended + 10);
	cr_expect_eq(a.reviewed.cycles, 2, "no cycle 10 s after");
}

/* An abort is measured only once its grace is over, by a cycle that began
 * after that: its files are what the request left behind. */
Test(review, an_abort_is_measured_when_its_grace_is_over)
{
	struct audit_abort *ab;
	struct stat st;
	char path[128];

	follow("r1-seg", 8192, "r1", NULL);
	follow("r2-seg", 4096, "r2", NULL);
	at(10.0);
	cr_assert_not_null(ab = mark("r1"));
	cycle_at(11.0);
	cr_expect_geq(a.reviewed.cycles, 1);
	cr_expect_eq(a.abort_set.unmeasured, ab, "measured within its grace");
	cr_expect_eq(ab->leaked_files, 0);
	cr_expect_float_eq(audit_review_due_s(&a), 12.0, 1e-9, "the review does not wait for the end of the grace");
	cycle_at(12.0);
	cr_expect_null(a.abort_set.unmeasured, "not measured at the end of its grace");
	cr_expect_eq(ab->leaked_files, 1, "only r1's file is r1's leftover");
	snprintf(path, sizeof(path), "%s/r1-seg", root);
	cr_assert_eq(lstat(path, &st), 0);
	cr_expect_eq(ab->leaked_bytes, (uint64_t)st.st_blocks * 512);
}

/* Node mode: a tmpfs that was reported, and that the scan of the new
 * namespaces did not find (a pod's, mounted in a namespace read before),
 * holds the aborts back until a scan of every namespace has looked for it:
 * the pod's files, found then, are its aborts' leftovers, not none. */
Test(review, an_abort_waits_for_a_reported_tmpfs_to_be_looked_for)
{
	struct audit_abort *ab;

	o.node_mode = true;
	a.scans.full_wanted = true;
	a.scans.full_scan_begun_s = 5.0;
	at(10.0);
	cr_assert_not_null(ab = mark("r1"));
	cycle_at(12.5);
	cr_expect_eq(a.abort_set.unmeasured, ab, "measured while the reported tmpfs had not been looked for");
	/* The scan of every namespace finds the pod's tmpfs and its file. */
	a.scans.full_wanted = false;
	a.scans.full_scan_begun_s = 12.6;
	follow("r1-seg", 8192, "r1", NULL);
	cycle_at(13.7);
	cr_expect_null(a.abort_set.unmeasured, "not measured once the tmpfs was looked for");
	cr_expect_eq(ab->leaked_files, 1, "the pod's file is not the abort's leftover");
}

/* ... but a scan of every namespace begun since the grace ended is enough:
 * a device reported later (another pod's, a tmpfs at /run) holds no abort
 * whose files were made before. */
Test(review, a_device_reported_after_the_last_full_scan_holds_no_older_abort)
{
	struct audit_abort *ab;

	o.node_mode = true;
	follow("r1-seg", 8192, "r1", NULL);
	at(10.0);
	cr_assert_not_null(ab = mark("r1"));
	a.scans.full_scan_begun_s = 12.2;
	a.scans.full_wanted = true;
	cycle_at(12.5);
	cr_expect_null(a.abort_set.unmeasured, "held back by a device reported after the last full scan");
	cr_expect_eq(ab->leaked_files, 1);
}

/* Steps, as the event loop would, until the cycle under way ends. */
static void finish_cycle(void)
{
	uint32_t before = a.reviewed.cycles;

	for (int i = 0; i < 100000 && a.reviewed.cycles == before; i++) {
		if (audit_review_due_s(&a) > audit_now_s(&a))
			at(audit_review_due_s(&a) + 1e-6); /* past it: at() rounds down to the ns */
		audit_review_step(&a);
	}
}

/* A root found late: its files join the table while a cycle is under way,
 * born before the abort's grace ended.  That cycle does not look at them,
 * so it does not measure the abort; the next one does, with them. */
Test(review, files_caught_up_during_a_cycle_wait_for_the_next)
{
	struct audit_abort *ab;
	char err[128];

	cr_assert_eq(sg_patterns_parse(&o.patterns, "{req}-seg", err, sizeof(err)), 0, "%s", err);
	for (int i = 0; i < 200; i++) { /* enough for a cycle of several slices */
		char name[32];
		snprintf(name, sizeof(name), "other%d-seg", i);
		follow(name, 4096, NULL, NULL);
	}
	at(10.0);
	cr_assert_not_null(ab = mark("r1"));
	at(12.5);
	clk.per_read = S / 10; /* the slice ends at the first look at the clock */
	audit_review_step(&a);
	clk.per_read = 0;
	cr_assert_eq(a.reviewed.cycles, 0, "the cycle ended in its first slice");
	follow("r1-seg", 8192, NULL, NULL); /* caught up: named, its request not looked at yet */
	audit_review_caught_up(&a, a.start_ns + (uint64_t)(10.5 * S));
	finish_cycle();
	cr_assert_eq(a.reviewed.cycles, 1);
	cr_expect_eq(a.abort_set.unmeasured, ab, "measured by a cycle that did not look at the file caught up");
	finish_cycle();
	cr_expect_null(a.abort_set.unmeasured, "not measured by the next cycle");
	cr_expect_eq(ab->leaked_files, 1, "the file caught up is not the abort's leftover");
}

/* A file that was freed before the grace ended is no leftover. */
Test(review, a_file_removed_within_the_grace_is_not_a_leftover)
{
	struct audit_abort *ab;
	char path[128];

	follow("r1-seg", 8192, "r1", NULL);
	at(10.0);
	cr_assert_not_null(ab = mark("r1"));
	snprintf(path, sizeof(path), "%s/r1-seg", root);
	cr_assert_eq(unlink(path), 0);
	cycle_at(12.5);
	cr_expect_null(a.abort_set.unmeasured);
	cr_expect_eq(ab->leaked_files, 0);
	cr_expect_eq(ab->leaked_bytes, 0);
}

/* A file no entry ever named may have been passed over by a directory read
 * racing with other entries: one missed cycle keeps it, the second forgets
 * it.  A named file whose name is gone (and nobody holds) goes at once. */
Test(review, a_file_never_named_is_forgotten_after_two_missed_cycles)
{
	uint64_t unnamed = 0x7fffffff01ull, named;
	char path[128];

	follow(NULL, 0, "r1", &unnamed);
	follow("gone", 4096, "r2", &named);
	snprintf(path, sizeof(path), "%s/gone", root);
	cr_assert_eq(unlink(path), 0);
	cycle_at(1.0);
	cr_assert_eq(a.reviewed.cycles, 1);
	cr_expect_not_null(audit_files_find(a.files, a.root_table.roots[0].kdev, unnamed), "forgotten after one missed cycle");
	cr_expect_null(audit_files_find(a.files, a.root_table.roots[0].kdev, named), "a named file gone was kept");
	cycle_at(2.5);
	cr_assert_eq(a.reviewed.cycles, 2);
	cr_expect_null(audit_files_find(a.files, a.root_table.roots[0].kdev, unnamed), "kept after two missed cycles");
}

/* The holder the test's view shows: a process holding the file unlinked
 * from the root as name, reachable (as /proc/PID/fd/N would be) through
 * stat_path. */
static struct {
	uint64_t ino;
	char path[128], stat_path[128];
} held;

static int one_holder(void *ctx, struct sg_holders *hs, const uint32_t *kdevs, unsigned ndevs)
{
	(void)ctx, (void)ndevs;
	*hs = (struct sg_holders){.n = 1, .cap = 1};
	cr_assert_not_null(hs->h = calloc(1, sizeof(*hs->h)));
	hs->h[0] = (struct sg_holder){.kdev = kdevs[0], .ino = held.ino, .pid = 4242, .stat_path = strdup(held.stat_path),
				      .path = strdup(held.path)};
	hs->h[0].name = strrchr(hs->h[0].path, '/') + 1;
	return 0;
}

/* A file unlinked from the root but still held is still there (it uses
 * RAM): counted every cycle, never forgotten, with the name it had. */
Test(review, a_file_unlinked_but_held_is_counted_and_kept)
{
	struct audit_file *f;
	struct stat st;

	f = follow("held", 8192, "r1", &held.ino);
	audit_files_name(a.files, f, f->root, NULL); /* as for a creation event that carried no name */
	f->root = -1;
	snprintf(held.path, sizeof(held.path), "%s/held", root);
	snprintf(held.stat_path, sizeof(held.stat_path), "%s/held", abort_dir);
	cr_assert_eq(rename(held.path, held.stat_path), 0); /* gone from the root, still reachable */
	cr_assert_eq(lstat(held.stat_path, &st), 0);
	a.holders.scan = one_holder;
	for (int i = 0; i < 3; i++)
		cycle_at(1.0 + 1.5 * i);
	cr_assert_eq(a.reviewed.cycles, 3);
	cr_expect_not_null(audit_files_find(a.files, a.root_table.roots[0].kdev, held.ino));
	cr_expect_eq(a.reviewed.files_left, 1);
	cr_expect_eq(a.reviewed.tracked, (uint64_t)st.st_blocks * 512);
	cr_expect_str_eq(f->name, "held");
}

/* The listed aborts and their total, as the report reads them. */
static size_t listed_measured(uint64_t *leaked)
{
	size_t n = 0;

	for (const struct audit_abort *ab = a.abort_set.aborts; ab && ab != a.abort_set.unmeasured; ab = ab->next, n++)
		*leaked += ab->leaked_bytes;
	return n;
}

/* Issue 19 §5: a run of months.  Thousands of aborts measured, one in three
 * leaving its file, their markers removed as a consumer removes them: the
 * records held stay within the window (--abort-detail of each kind), the
 * requests still known are those whose files remain, and every figure the
 * report gives is still exact (the totals, and the groups of leftovers). */
Test(review, measured_aborts_are_folded_and_the_records_held_stay_bounded)
{
	enum { ABORTS = 3000, WINDOW = 10, LEAKY_EVERY = 3, BATCH = 100 };
	uint64_t truth = 0, leaked;
	unsigned leaky = 0;
	char name[32], req[32], path[128];
	struct stat st;

	audit_files_free(a.files);
	cr_assert_not_null(a.files = audit_files_new(o.max_files = 10 * ABORTS));
	a.attribution.files = a.files;
	o.gate.abort_detail = WINDOW;
	for (int i = 0; i < ABORTS; i++) {
		double t = 10.0 + i * 0.01;
		snprintf(req, sizeof(req), "r%d", i);
		snprintf(name, sizeof(name), "r%d-seg", i);
		snprintf(path, sizeof(path), "%s/%s", root, name);
		at(t);
		follow(name, 4096, req, NULL);
		cr_assert_not_null(mark(req));
		audit_files_end_exclusions(a.files); /* as the loop does: the marker's inode may be reused */
		if (i % LEAKY_EVERY == 0) {
			cr_assert_eq(lstat(path, &st), 0);
			truth += (uint64_t)st.st_blocks * 512;
			leaky++;
		} else {
			cr_assert_eq(unlink(path), 0);
		}
		cr_assert_eq(unlinkat(a.abort_set.abort_dfd, req, 0), 0);
		if (i % BATCH == BATCH - 1) {
			cycle_at(t + 3); /* past the grace: the batch is measured */
			cycle_at(t + 4.5);
			leaked = 0;
			cr_assert_leq(listed_measured(&leaked), 2 * WINDOW, "after %d aborts", i + 1);
			cr_assert_leq(a.abort_set.nkept, leaky, "a request is known only while its marker or a file remains: %zu kept, %u leaky, %zu files, after %d", a.abort_set.nkept, leaky, audit_files_count(a.files), i + 1);
		}
	}
	audit_review_finish(&a);
	leaked = 0;
	size_t listed = listed_measured(&leaked);
	cr_expect_leq(listed, 2 * WINDOW);
	cr_expect_eq(a.abort_set.aborts_measured, ABORTS);
	cr_assert_not_null(a.abort_set.folded);
	cr_expect_eq(a.abort_set.folded->aborts + listed, ABORTS);
	cr_expect_eq(a.abort_set.folded->leaked_bytes + leaked, truth);
	cr_expect_eq(a.abort_set.leaked_measured, truth);
	/* The groups the report prints: every leftover, folded or listed. */
	struct groups by_proc = {0}, by_shape = {0};
	audit_group_leftovers(&a, &by_proc, &by_shape);
	cr_assert_eq(by_shape.n, 1);
	cr_expect_eq(by_shape.g[0].files, leaky);
	cr_expect_eq(by_shape.g[0].bytes, truth);
	cr_expect_eq(by_shape.g[0].requests_folded + WINDOW, leaky, "the listed requests and those folded");
	free(by_proc.g);
	free(by_shape.g);
	/* The leaked files are followed still: their requests stay known as aborted. */
	cr_expect_eq(a.reviewed.aborted_held, truth);
	cr_expect_leq(a.abort_set.nkept, leaky);
}

/* The syscalls probe sends a creation at the open's return, after inotify
 * queued it: a marker's creation can come after the marker was read and
 * its exclusion ended.  Made in the abort directory, it is no file. */
Test(review, a_markers_creation_read_after_the_marker_takes_no_place)
{
	char marker[128];
	struct stat dir, st;
	int fd;

	cr_assert_eq(stat(abort_dir, &dir), 0);
	snprintf(marker, sizeof(marker), "%s/req", abort_dir);
	cr_assert_geq(fd = open(marker, O_CREAT | O_WRONLY | O_CLOEXEC, 0644), 0);
	cr_assert_eq(fstat(fd, &st), 0);
	close(fd);
	cr_assert(audit_abort_add(&a, 0, a.abort_set.abort_dfd, "req", true));
	audit_files_end_exclusions(a.files);

	struct audit_event e = {.type = AUDIT_EVENT_CREATE, .tgid = 1, .ts_ns = 2 * S, .ino = st.st_ino,
				.dir_ino = dir.st_ino, .kdev = sg_kdev(st.st_dev), .name = "req"};
	audit_on_event(&a, &e);
	cr_expect_eq(audit_files_count(a.files), 0, "the marker took a place in the table");
	audit_workloads_free(&a.workloads);
}

/* A root's own patterns, from its pod's environment, take precedence over
 * the run's for its files: a name only the run's patterns give a request
 * has none there, and one the pod's give is named by the pod's shape.  A
 * root forgotten has the run's again. */
Test(review, a_pods_own_patterns_take_precedence_in_its_root)
{
	char err[200], why[300] = "", buf[AUDIT_FILE_REQUEST_MAX];
	pid_t pod = sleeper_start((char *const[]){"SHMGUARD_PATTERNS=own_{req}.seg", NULL});
	struct audit_file *mine, *runs;

	cr_assert_eq(sg_patterns_parse(&o.patterns, "{req}_{int}_{int}", err, sizeof(err)), 0, "%s", err);
	cr_assert(audit_attribution_learning(&a.attribution, 0));
	cr_expect_eq(audit_attribution_learn(&a.attribution, 0, pod, why, sizeof(why)), 1, "%s", why);
	cr_expect_not(audit_attribution_learning(&a.attribution, 0), "read once");
	sleeper_end(pod);
	mine = follow("own_r1.seg", 4096, NULL, NULL);
	runs = follow("r2_1_2", 4096, NULL, NULL);
	audit_attribute_by_name(&a.attribution, mine); /* as a review's pass does */
	audit_attribute_by_name(&a.attribution, runs);
	cr_assert(mine->indexed, "the pod's pattern names its file");
	cr_expect_str_eq(audit_file_request(mine, buf), "r1");
	cr_expect_str_eq(audit_shape_text(&a, mine->shape), "own_{req}.seg");
	cr_expect_not(runs->indexed, "the run's patterns do not apply in the pod's root");
	audit_attribution_forget_root(&a.attribution, 0);
	cr_expect_eq(audit_attribution_abort_name(&a.attribution, 0), NULL);
	struct audit_file *again = follow("r3_1_2", 4096, NULL, NULL);
	audit_attribute_by_name(&a.attribution, again);
	cr_expect(again->indexed, "forgotten, the root has the run's patterns again");
}

/* A pod's value that does not parse is refused with the reason, once:
 * the root keeps the run's patterns and is not read again. */
Test(review, a_pods_malformed_patterns_are_refused_once)
{
	char err[200], why[300] = "";
	pid_t pod = sleeper_start((char *const[]){"SHMGUARD_PATTERNS={req", "SHMGUARD_ABORT_DIR=/dev/shm/../etc", NULL});

	cr_assert_eq(sg_patterns_parse(&o.patterns, "{req}_{int}_{int}", err, sizeof(err)), 0, "%s", err);
	a.attribution.abort_dirs = true;
	cr_expect_lt(audit_attribution_learn(&a.attribution, 0, pod, why, sizeof(why)), 0);
	cr_expect(strstr(why, "does not parse"), "%s", why);
	cr_expect_eq(audit_attribution_learn(&a.attribution, 0, pod, why, sizeof(why)), 0, "said once");
	cr_expect_eq(audit_attribution_abort_name(&a.attribution, 0), NULL, "no directory outside its /dev/shm");
	sleeper_end(pod);
	struct audit_file *f = follow("r1_1_2", 4096, NULL, NULL);
	audit_attribute_by_name(&a.attribution, f);
	cr_expect(f->indexed, "the run's patterns");
	cr_expect_eq(a.attribution.pods_refused, 1);
}

/* A journal of this user's in dir saying that root's file name was made
 * for request. */
static void journal_in(const char *dir, const char *name, const char *request)
{
	char rec[SG_JOURNAL_MAX_SPAN * SG_JOURNAL_SLOT] = {0}, path[160];
	struct sg_journal_head head;
	struct timespec now;
	struct stat st;
	uint64_t created;
	int fd, span;

	/* The wall clock: a file born after its record is another file. */
	clock_gettime(CLOCK_REALTIME, &now);
	created = (uint64_t)now.tv_sec * S + (uint64_t)now.tv_nsec;
	snprintf(path, sizeof(path), "%s/%s", root, name);
	cr_assert_eq(lstat(path, &st), 0);
	sg_journal_head_init(&head, 4242, 1, sg_self_pidns(), created);
	cr_assert_gt(span = sg_journal_rec_commit(rec, st.st_ino, created, request, name), 0);
	snprintf(path, sizeof(path), "%s/" SG_JOURNAL_PREFIX "%s", dir, name);
	cr_assert_geq(fd = open(path, O_CREAT | O_EXCL | O_WRONLY, 0644), 0);
	cr_assert_eq(write(fd, &head, sizeof(head)), (ssize_t)sizeof(head));
	cr_assert_eq(write(fd, rec, (size_t)span * SG_JOURNAL_SLOT), (ssize_t)((size_t)span * SG_JOURNAL_SLOT));
	close(fd);
}

/* The review reads the journals of the root's .shmguard too, only when it
 * is a directory of root's with mode 1777. */
static void review_reads_a_journal_dir(mode_t mode, bool trusted)
{
	char dir[96], buf[AUDIT_FILE_REQUEST_MAX];
	struct audit_file *f;

	if (geteuid() != 0) {
		cr_assert(!getenv("CI"), "needs root in CI");
		cr_skip_test("a directory of root's needs root");
	}
	snprintf(dir, sizeof(dir), "%s/" SG_JOURNAL_DIR, root);
	cr_assert_eq(mkdir(dir, 0700), 0);
	cr_assert_eq(chmod(dir, mode), 0);
	f = follow("jr-seg", 4096, NULL, NULL);
	journal_in(dir, "jr-seg", "jreq");
	cycle_at(1.0);
	cr_assert_eq(a.reviewed.cycles, 1);
	if (trusted) {
		cr_assert(f->indexed, "the journal in %s was not read", dir);
		cr_expect_str_eq(audit_file_request(f, buf), "jreq");
	} else {
		cr_expect_not(f->indexed, "a journal in an untrusted %s was read", dir);
	}
}

Test(review, the_journals_of_a_trusted_journal_dir_are_read)
{
	review_reads_a_journal_dir(01777, true);
}

Test(review, the_journals_of_an_untrusted_journal_dir_are_not)
{
	review_reads_a_journal_dir(0777, false);
}
