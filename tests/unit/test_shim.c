/* The shim's tracking (track.c), its markers (markers.c) and its journal
 * writer (journal_writer.c), built from their sources with the shim's other
 * parts but its entry points (init.c, interpose.c): a temporary directory is
 * the shm root and another the abort directory, both this user's. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "journal.h"
#include "journal_read.h"
#include "journal_writer.h"
#include "log.h"
#include "marker.h"
#include "markers.h"
#include "real.h"
#include "registry.h"
#include "roots.h"
#include "state.h"
#include "sweep.h"
#include "track.h"

static char base[] = "/tmp/sg-unit-shim-XXXXXX";
static char root[128], abort_dir[128];
static const char *env_tag = "journal", *env_patterns = "";

/* What init.c does for the library: the configuration, from the test. */
bool sg_active(void)
{
	return true;
}

/* What signals.c keeps: no handler of the program's runs in these tests. */
SG_THREAD_LOCAL unsigned sg_handler_depth;

bool sg_in_handler_slow(void)
{
	return false;
}

static const char *get(const char *name, void *ctx)
{
	(void)ctx;
	if (!strcmp(name, "SHMGUARD_SHM_ROOTS"))
		return root;
	if (!strcmp(name, "SHMGUARD_ABORT_DIR"))
		return abort_dir;
	if (!strcmp(name, "SHMGUARD_TAG"))
		return env_tag;
	if (!strcmp(name, "SHMGUARD_PATTERNS"))
		return *env_patterns ? env_patterns : NULL;
	if (!strcmp(name, "SHMGUARD_LOG"))
		return "off";
	return NULL;
}

static void load_config(void)
{
	char err[256];

	cr_assert_eq(sg_config_from(&sg_cfg, get, NULL, err, sizeof(err)), 0, "%s", err);
	sg_log_level = sg_cfg.log_level;
}

static void configure(void)
{
	cr_assert(mkdtemp(base));
	snprintf(root, sizeof(root), "%s/shm", base);
	snprintf(abort_dir, sizeof(abort_dir), "%s/abort", base);
	cr_assert_eq(mkdir(root, 0755), 0);
	sg_real_ensure();
	load_config();
	sg_self_init();
}

static void remove_tree(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char path[PATH_MAX];

	if (!d)
		return;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
			snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
			unlink(path);
		}
	closedir(d);
	rmdir(dir);
}

static void cleanup(void)
{
	remove_tree(root);
	remove_tree(abort_dir);
	rmdir(base);
}

static const char *in_root(const char *name)
{
	static char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", root, name);
	return path;
}

/* The file name in the root, made for req: what a creation hands the
 * registry and the journal. */
static struct sg_new_file new_file(const char *name, dev_t dev, ino_t ino, const char *req)
{
	const char *path = in_root(name);
	size_t name_off = strlen(path) - strlen(name);

	return (struct sg_new_file){.path = path,
				    .name_off = name_off,
				    .name_len = strlen(name),
				    .root = sg_root_at(path, name_off),
				    .req = req,
				    .req_len = strlen(req),
				    .req_at = SG_JOURNAL_REQ_AT_UNKNOWN,
				    .dev = dev,
				    .ino = ino};
}

/* The journal writer is called under the registry's lock, as the registry
 * calls it. */
static uint32_t journal_record(const char *name, ino_t ino, const char *req)
{
	struct sg_new_file f = new_file(name, 0, ino, req);
	uint32_t slot;

	sg_registry_lock();
	slot = sg_jw_record(&f);
	sg_registry_unlock();
	return slot;
}

static void journal_release(uint32_t slot)
{
	sg_registry_lock();
	sg_jw_release(slot);
	sg_registry_unlock();
}

static bool exists(const char *name)
{
	return access(in_root(name), F_OK) == 0;
}

static void put_marker(const char *request)
{
	char path[PATH_MAX];
	int fd;

	if (access(abort_dir, F_OK) < 0)
		cr_assert_geq((fd = sg_abort_dir_open(abort_dir, true)), 0);
	else
		fd = -1;
	if (fd >= 0)
		close(fd);
	snprintf(path, sizeof(path), "%s/%s", abort_dir, request);
	cr_assert_geq((fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644)), 0);
	close(fd);
}

/* The program's open(2) of path, as the wrappers hand it to sg_create. */
static int call_open(const struct sg_call *call, int flags)
{
	return sg_real.openat(call->dirfd, call->path, flags, call->mode);
}

/* The program creates name in the root, as open() would (the root is not
 * shm_open's, which sg_create is told by a name offset). */
static int create(const char *name)
{
	const char *path = in_root(name);
	struct sg_call call = {.open = call_open, .dirfd = AT_FDCWD, .path = path, .mode = 0600};
	int fd = sg_create(&call, O_RDWR | O_CREAT, AT_FDCWD, path, 0);

	cr_assert_geq(fd, 0, "create %s: %s", name, strerror(errno));
	close(fd);
	return fd;
}

/* The request the registry holds name for ("" for none), record taken. */
static const char *recorded_for(const char *name)
{
	static char req[SG_NAME_MAX + 1];
	struct sg_segment *seg = sg_registry_take(in_root(name), strlen(root) + 1);

	req[0] = 0;
	if (seg) {
		snprintf(req, sizeof(req), "%s", seg->request);
		free(seg);
	}
	return req;
}

static void scan(void)
{
	int dfd = open(abort_dir, O_RDONLY | O_DIRECTORY);

	cr_assert_geq(dfd, 0);
	sg_markers_scan(dfd, 0);
	close(dfd);
}

TestSuite(track, .init = configure, .fini = cleanup);

static void with_patterns(void)
{
	env_patterns = "job-{req};{req}-x";
	load_config();
}

Test(track, the_threads_request_is_recorded_at_creation)
{
	with_patterns();
	strcpy(sg_thread_request, "r1");
	create("job-other");
	cr_expect_str_eq(recorded_for("job-other"), "r1", "the thread's request beats the patterns");
	sg_thread_request[0] = 0;
	create("job-r2");
	cr_expect_str_eq(recorded_for("job-r2"), "r2", "else the one request the patterns give");
	create("plain");
	cr_expect_str_eq(recorded_for("plain"), "", "a name no pattern matches is nobody's");
}

Test(track, an_ambiguous_name_is_left_alone)
{
	with_patterns();
	/* "job-{req}" gives "a-x", "{req}-x" gives "job-a". */
	create("job-a-x");
	cr_expect_str_eq(recorded_for("job-a-x"), "", "an ambiguous name is recorded for neither");
	cr_expect_eq(sg_stats.ambiguous, 1);
	put_marker("a-x");
	put_marker("job-a");
	scan();
	cr_expect(exists("job-a-x"), "no abort sweeps an ambiguous name");
}

Test(track, a_name_that_existed_is_not_a_creation)
{
	int fd = open(in_root("old"), O_WRONLY | O_CREAT | O_EXCL, 0600);

	cr_assert_geq(fd, 0);
	close(fd);
	strcpy(sg_thread_request, "r1");
	create("old");
	cr_expect_str_eq(recorded_for("old"), "", "opening a file that was there records nothing");
}

Test(track, a_late_put_after_the_marker_is_unlinked)
{
	put_marker("r1");
	strcpy(sg_thread_request, "r1");
	create("late");
	/* Swept as a late put by the creating call, or by the watcher's first
	 * look at the markers if that took the record first: the call may then
	 * return while the watcher is still unlinking it (and counts it once
	 * its sweep is over).  Gone either way, within the bound. */
	for (int i = 0; i < 2000 && (exists("late") || !__atomic_load_n(&sg_stats.swept, __ATOMIC_ACQUIRE)); i++)
		usleep(1000);
	cr_expect_not(exists("late"), "created after its request's marker: swept");
	cr_expect_eq(sg_stats.swept, 1);
	strcpy(sg_thread_request, "r2");
	create("other");
	cr_expect(exists("other"), "another request's file stays");
}

Test(track, a_late_put_after_a_sweep_is_unlinked)
{
	strcpy(sg_thread_request, "r1");
	sg_sweep("r1"); /* the marker was read, and is gone since */
	create("late");
	cr_expect_not(exists("late"));
	cr_expect_eq(sg_stats.late_puts, 1);
}

/* The markers, read by the watcher's scan of the abort directory.  The
 * records are made directly, so that no watcher starts. */
TestSuite(markers, .init = configure, .fini = cleanup);

static void made_for(const char *name, const char *request)
{
	struct sg_new_file f;
	struct stat st;
	int fd = open(in_root(name), O_WRONLY | O_CREAT | O_EXCL, 0600);

	cr_assert_geq(fd, 0);
	cr_assert_eq(fstat(fd, &st), 0);
	close(fd);
	f = new_file(name, st.st_dev, st.st_ino, request);
	cr_assert_geq(sg_registry_add(&f), 0);
}

Test(markers, a_marker_sweeps_exactly_its_requests_records)
{
	made_for("x1", "x");
	made_for("x2", "x");
	made_for("xy", "xy");
	made_for("y1", "y");
	put_marker("x");
	scan();
	cr_expect_not(exists("x1"));
	cr_expect_not(exists("x2"));
	cr_expect(exists("xy"), "a request whose ID starts with x's is not x");
	cr_expect(exists("y1"));
	cr_expect_eq(sg_stats.swept, 2);
}

Test(markers, a_name_that_now_names_another_file_is_left)
{
	char x1[PATH_MAX];

	made_for("x1", "x");
	snprintf(x1, sizeof(x1), "%s", in_root("x1"));
	close(open(in_root("new"), O_WRONLY | O_CREAT | O_EXCL, 0600));
	cr_assert_eq(rename(in_root("new"), x1), 0); /* another inode: both names existed at once */
	put_marker("x");
	scan();
	cr_expect(exists("x1"), "not the inode recorded: someone else's");
	cr_expect_eq(sg_stats.replaced, 1);
}

Test(markers, a_marker_that_is_no_marker_sweeps_nothing)
{
	char path[PATH_MAX];

	made_for("x1", "x");
	put_marker("other");
	snprintf(path, sizeof(path), "%s/x", abort_dir);
	cr_assert_eq(link(in_root("x1"), path), 0); /* two links: anyone's file */
	scan();
	cr_expect(exists("x1"));
	cr_expect_eq(sg_stats.ignored_markers, 1);
}

Test(markers, only_markers_older_than_the_ttl_expire)
{
	struct timespec old[2] = {{.tv_sec = 1000}, {.tv_sec = 1000}};
	char path[PATH_MAX];
	int dfd;

	put_marker("fresh");
	put_marker("old");
	snprintf(path, sizeof(path), "%s/old", abort_dir);
	cr_assert_eq(utimensat(AT_FDCWD, path, old, 0), 0);
	cr_assert_geq((dfd = open(abort_dir, O_RDONLY | O_DIRECTORY)), 0);
	cr_expect_eq(sg_markers_expire(dfd, 60), 1);
	close(dfd);
	cr_expect_neq(access(path, F_OK), 0, "a marker older than the TTL goes");
	snprintf(path, sizeof(path), "%s/fresh", abort_dir);
	cr_expect_eq(access(path, F_OK), 0, "a younger one stays");
}

Test(markers, an_expired_abort_no_longer_sweeps_late_puts)
{
	char path[PATH_MAX];

	made_for("x1", "x");
	put_marker("x");
	scan();
	cr_assert_not(exists("x1"));
	snprintf(path, sizeof(path), "%s/x", abort_dir);
	cr_assert_eq(unlink(path), 0); /* expired, as sg_markers_expire removes it */
	sg_registry_expire_aborts(time(NULL) + 1); /* the abort is older than the TTL */
	strcpy(sg_thread_request, "x");
	create("x2");
	cr_expect(exists("x2"), "a file made after the abort expired is not a late put");
	cr_expect_eq(sg_stats.late_puts, 0);
}

/* The journal writer, read back by the host's reader. */
TestSuite(journal, .init = configure, .fini = cleanup);

static struct stat journal_stat(char *name, size_t len)
{
	DIR *d = opendir(root);
	struct dirent *e;
	struct stat st = {0};

	cr_assert(d);
	name[0] = 0;
	while ((e = readdir(d)))
		if (sg_journal_name(e->d_name))
			snprintf(name, len, "%s", e->d_name);
	closedir(d);
	cr_assert(name[0], "a journal in the root");
	cr_assert_eq(stat(in_root(name), &st), 0);
	return st;
}

static bool journal_says(uint64_t ino, const char *name, char *req)
{
	char journal[NAME_MAX + 1];
	struct sg_journals js = {0};
	struct sg_tag tag;
	bool found;
	int dfd = open(root, O_RDONLY | O_DIRECTORY);

	journal_stat(journal, sizeof(journal));
	cr_assert_eq(sg_journals_add(&js, dfd, journal), SG_JOURNAL_READ);
	sg_journals_index(&js);
	found = sg_journals_find(&js, ino, geteuid(), name, 0, &tag);
	if (found)
		strcpy(req, tag.req);
	sg_journals_free(&js);
	close(dfd);
	return found;
}

Test(journal, a_record_reads_back_with_its_request_until_released)
{
	char req[SG_NAME_MAX + 1];
	uint32_t slot = journal_record("seg", 4242, "req-7");

	cr_assert_neq(slot, 0);
	cr_assert(journal_says(4242, "seg", req));
	cr_expect_str_eq(req, "req-7");
	cr_expect_not(journal_says(4243, "seg", req), "another inode is not claimed");
	journal_release(slot);
	cr_expect_not(journal_says(4242, "seg", req), "a released record claims nothing");
}

Test(journal, released_records_give_their_pages_back)
{
	enum { N = 4000 };
	static uint32_t slots[N];
	char name[NAME_MAX + 1], seg[32];
	struct stat full, after;

	for (unsigned i = 0; i < N; i++) {
		snprintf(seg, sizeof(seg), "seg-%u", i);
		cr_assert_neq((slots[i] = journal_record(seg, 1000 + i, "r")), 0);
	}
	full = journal_stat(name, sizeof(name));
	for (unsigned i = 0; i < N; i++)
		journal_release(slots[i]);
	after = journal_stat(name, sizeof(name));
	cr_expect_lt(after.st_blocks * 4, full.st_blocks, "blocks %lld of %lld kept", (long long)after.st_blocks,
		     (long long)full.st_blocks);
}

/* Slots freed are found again by records of another length: the search for
 * room passes over no block that has it, whichever lengths came before (a
 * long record first placed after every short one, then the short ones
 * released: the long ones that follow go where they were). */
enum { SHORT = 2000 };

/* SHORT short records, then a long one (req, 100 bytes) after them, then
 * the short ones released: the journal's size at its fullest. */
static struct stat fill_then_free_the_short(char *req, char *name, size_t size)
{
	static uint32_t slots[SHORT];
	struct stat full;
	char seg[32];

	memset(req, 'q', 100);
	req[100] = '\0';
	for (unsigned i = 0; i < SHORT; i++) {
		snprintf(seg, sizeof(seg), "seg-%u", i);
		cr_assert_neq((slots[i] = journal_record(seg, 1000 + i, "r")), 0);
	}
	cr_assert_neq(journal_record("long-first", 9999, req), 0);
	full = journal_stat(name, size);
	for (unsigned i = 0; i < SHORT; i++)
		journal_release(slots[i]);
	return full;
}

Test(journal, freed_slots_are_found_again_by_longer_records)
{
	enum { LONG = 600 };
	char name[NAME_MAX + 1], seg[32], req[101];
	struct stat full = fill_then_free_the_short(req, name, sizeof(name)), after;

	for (unsigned i = 0; i < LONG; i++) {
		snprintf(seg, sizeof(seg), "long-%u", i);
		cr_assert_neq(journal_record(seg, 20000 + i, req), 0);
	}
	after = journal_stat(name, sizeof(name));
	cr_expect_leq(after.st_size, full.st_size, "the journal grew from %lld to %lld bytes", (long long)full.st_size,
		      (long long)after.st_size);
}

/* And by records of every shorter length: a release makes room for all
 * of them, not only for the longest asked for so far. */
Test(journal, freed_slots_are_found_again_by_shorter_records)
{
	char name[NAME_MAX + 1], seg[32], req[101];
	struct stat full = fill_then_free_the_short(req, name, sizeof(name)), after;

	for (unsigned i = 0; i < SHORT; i++) {
		snprintf(seg, sizeof(seg), "again-%u", i);
		cr_assert_neq(journal_record(seg, 30000 + i, "r"), 0);
	}
	after = journal_stat(name, sizeof(name));
	cr_expect_leq(after.st_size, full.st_size, "the journal grew from %lld to %lld bytes", (long long)full.st_size,
		      (long long)after.st_size);
}

Test(journal, exit_removes_a_journal_with_no_live_file)
{
	char name[NAME_MAX + 1];

	cr_assert_neq(journal_record("seg", 4242, "r"), 0);
	journal_stat(name, sizeof(name));
	sg_registry_exit(true);
	cr_expect_neq(access(in_root(name), F_OK), 0, "its one file never existed: nothing to speak for");
}

Test(journal, nothing_is_recorded_unless_the_journal_is_asked_for)
{
	env_tag = "xattr";
	load_config();
	cr_expect_eq(journal_record("seg", 4242, "r"), 0);
}

Test(journal, exit_keeps_a_journal_that_speaks_for_a_live_file)
{
	char name[NAME_MAX + 1];
	struct stat st;
	int fd = open(in_root("seg"), O_WRONLY | O_CREAT | O_EXCL, 0600);

	cr_assert_geq(fd, 0);
	cr_assert_eq(fstat(fd, &st), 0);
	close(fd);
	cr_assert_neq(journal_record("seg", st.st_ino, "r"), 0);
	journal_stat(name, sizeof(name));
	sg_registry_exit(true);
	cr_expect_eq(access(in_root(name), F_OK), 0, "its file remains: the journal stays for sweep --dead");
}
