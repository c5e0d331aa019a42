/* The proof of an orphan (host/orphan_proof.c), the cgroup ids it asks the
 * kernel about (host/cgroup_ids.c) and the record store it reads
 * (host/creator_store.c), hostile contents included. */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "creator_store.h"
#include "journal_read.h"
#include "orphan_proof.h"
#include "procstat.h"
#include "sleeper.h"

static char dir[64];
static int dfd = -1;

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/sgt-%d-orphan-XXXXXX", (int)getpid());
	cr_assert_not_null(mkdtemp(dir));
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	cr_assert_geq(dfd, 0);
	setenv("SHMGUARD_STORE_DIR", dir, 1);
}

static void teardown(void)
{
	char cmd[128];

	close(dfd);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_expect_eq(system(cmd), 0);
}

TestSuite(orphan, .init = setup, .fini = teardown);

/* A record of an own cgroup, every fact that could be known known. */
static struct sg_creator_rec own_rec(void)
{
	struct sg_creator_rec r = {.ino = 7, .kdev = 1, .cgroup_id = 4242, .pid = 100, .start_ticks = 5, .pidns = 9,
				   .parent_pid = 99, .parent_start_ticks = 4};
	strcpy(r.cgroup, "/system.slice/app.service");
	strcpy(r.name, "psm_1");
	return r;
}

static const struct sg_orphan_facts gone = {.inode_same = true, .cgroup = SG_CGROUP_GONE, .creator = CREATOR_DEAD,
					    .parent = CREATOR_DEAD};

/* Its cgroup gone adds to the proof, never replaces a death: a creator
 * moved to another cgroup, a live parent or ancestor, a live attacher of
 * another cgroup each keep the file (issue #34). */
Test(orphan, own_cgroup_gone_is_no_proof_while_one_who_could_use_the_name_runs)
{
	struct sg_creator_rec r = own_rec();
	struct sg_orphan_facts f = gone;

	struct sg_orphan_verdict v = sg_orphan_judge(&r, &f, false);
	cr_assert(v.proven, "%s", v.missing);
	cr_assert_not(v.shared);
	cr_assert_null(v.missing);
	cr_assert_not_null(strstr(v.proof, "cgroup no longer exists"));
	f.creator = CREATOR_ALIVE; /* moved to another cgroup before its old one went */
	cr_assert_not_null(strstr(sg_orphan_judge(&r, &f, false).missing, "its creator runs, in another cgroup"));
	f.creator = CREATOR_UNKNOWN;
	cr_assert_not_null(strstr(sg_orphan_judge(&r, &f, false).missing, "cannot tell whether its creator runs"));
	f = gone;
	r.nancestors = 2;
	f.parent = CREATOR_ALIVE;
	cr_assert_not_null(strstr(sg_orphan_judge(&r, &f, false).missing, "started its creator runs"));
	f.parent = CREATOR_DEAD;
	f.ancestors_alive = 1;
	cr_assert_not_null(strstr(sg_orphan_judge(&r, &f, false).missing, "started its creator's parent runs"));
	f.ancestors_alive = 0;
	f.ancestors_unknown = 1;
	cr_assert_not(sg_orphan_judge(&r, &f, false).proven);
	f.ancestors_unknown = 0;
	r.flags = SG_REC_ANCESTORS_CUT;
	cr_assert_not_null(strstr(sg_orphan_judge(&r, &f, false).missing, "not all recorded"));
	r.flags = 0;
	f.attachers_alive = 1; /* a hand-off to a process of another cgroup */
	cr_assert_not_null(strstr(sg_orphan_judge(&r, &f, false).missing, "a process that opened it runs"));
	f.attachers_alive = 0;
	r.flags = SG_REC_ATTACHERS_LOST;
	cr_assert_not(sg_orphan_judge(&r, &f, false).proven);
	r.flags = SG_REC_ATTACHERS_UNSEEN;
	cr_assert_not(sg_orphan_judge(&r, &f, false).proven);
}

Test(orphan, own_cgroup_alive_keeps_even_with_creator_and_parent_dead)
{
	struct sg_creator_rec r = own_rec();
	struct sg_orphan_facts f = gone;

	f.cgroup = SG_CGROUP_ALIVE; /* the hand-off: the instance may still open it */
	struct sg_orphan_verdict v = sg_orphan_judge(&r, &f, false);
	cr_assert_not(v.proven);
	cr_assert_not_null(strstr(v.missing, "instance runs"));
	/* A cgroup that cannot be checked: the creator and its parent must speak. */
	f.cgroup = SG_CGROUP_UNKNOWN;
	r.nancestors = 1;
	f.parent = CREATOR_ALIVE;
	struct sg_orphan_verdict u = sg_orphan_judge(&r, &f, false);
	cr_assert(u.shared);
	cr_assert_not(u.proven);
	cr_assert_not_null(strstr(u.missing, "handed the name"));
	f.parent = CREATOR_DEAD;
	cr_assert(sg_orphan_judge(&r, &f, false).proven);
}

Test(orphan, each_missing_fact_is_named)
{
	struct sg_creator_rec r = own_rec();
	struct sg_orphan_facts f = gone;

	f.inode_same = false;
	cr_assert_not_null(strstr(sg_orphan_judge(&r, &f, false).missing, "not the file recorded"));
	f = gone;
	f.holders = 1;
	cr_assert_not_null(strstr(sg_orphan_judge(&r, &f, true).missing, "open or mapped"));
	f = gone;
	f.unreadable = 3;
	cr_assert_not_null(strstr(sg_orphan_judge(&r, &f, false).missing, "cannot be read"));
	cr_assert(sg_orphan_judge(&r, &f, true).proven);
	/* A record without a cgroup id names no instance: its "gone" cgroup
	 * proves nothing, its creator and parent must be dead. */
	f = gone;
	r.cgroup_id = 0;
	f.creator = CREATOR_UNKNOWN;
	struct sg_orphan_verdict v = sg_orphan_judge(&r, &f, false);
	cr_assert_not(v.proven);
	cr_assert(v.shared);
	cr_assert_not_null(strstr(v.missing, "cannot tell whether its creator runs"));
}

Test(orphan, shared_cgroup_needs_creator_and_parent_dead)
{
	static const char *shared[] = {"/", "/init.scope", "/user.slice", "/user.slice/user-1000.slice",
				       "/user.slice/user-1000.slice/session-3.scope",
				       "/user.slice/user-1000.slice/user@1000.service",
				       "/user.slice/user-1000.slice/user@1000.service/init.scope"};
	struct sg_creator_rec r = own_rec();
	struct sg_orphan_facts f = gone;

	f.cgroup = SG_CGROUP_ALIVE;
	for (size_t i = 0; i < sizeof(shared) / sizeof(*shared); i++) {
		strcpy(r.cgroup, shared[i]);
		struct sg_orphan_verdict v = sg_orphan_judge(&r, &f, false);
		cr_assert(v.shared, "%s is shared", shared[i]);
		cr_assert(v.proven, "%s: %s", shared[i], v.missing);
		cr_assert_not_null(strstr(v.proof, "creator, the processes that started it"));
	}
	strcpy(r.cgroup, "/user.slice/user-1000.slice/session-3.scope");
	f.creator = CREATOR_ALIVE;
	cr_assert_not_null(strstr(sg_orphan_judge(&r, &f, false).missing, "its creator runs"));
	f.creator = CREATOR_UNKNOWN;
	cr_assert_not_null(strstr(sg_orphan_judge(&r, &f, false).missing, "cannot tell whether its creator runs"));
	f.creator = CREATOR_DEAD;
	r.nancestors = 1;
	f.parent = CREATOR_ALIVE; /* a worker's segment, handed to its parent */
	cr_assert_not_null(strstr(sg_orphan_judge(&r, &f, false).missing, "handed the name"));
	f.parent = CREATOR_UNKNOWN;
	cr_assert_not(sg_orphan_judge(&r, &f, false).proven);
	/* A parent outside its cgroup (its instance's start, or the host's
	 * init) is no ancestor asked about. */
	r.nancestors = 0;
	f.parent = CREATOR_NONE;
	cr_assert(sg_orphan_judge(&r, &f, false).proven);
	/* A shared cgroup that is gone (a session that ended) is no proof that
	 * its creator is dead. */
	f.creator = CREATOR_ALIVE;
	f.cgroup = SG_CGROUP_GONE;
	cr_assert_not(sg_orphan_judge(&r, &f, false).proven);
}

Test(orphan, shared_cgroup_needs_every_attacher_dead)
{
	struct sg_creator_rec r = own_rec();
	struct sg_orphan_facts f = gone;

	strcpy(r.cgroup, "/user.slice/user-1000.slice/session-3.scope");
	f.cgroup = SG_CGROUP_ALIVE;
	cr_assert(sg_rec_attach(&r, 200, 7));
	f.attachers_alive = 1; /* a consumer that opened it and closed it, and may open it again */
	cr_assert_not_null(strstr(sg_orphan_judge(&r, &f, false).missing, "a process that opened it runs"));
	f.attachers_alive = 0;
	f.attachers_unknown = 1;
	cr_assert_not_null(strstr(sg_orphan_judge(&r, &f, false).missing, "cannot tell whether a process that opened"));
	f.attachers_unknown = 0;
	struct sg_orphan_verdict v = sg_orphan_judge(&r, &f, false);
	cr_assert(v.proven, "%s", v.missing);
	cr_assert_not_null(strstr(v.proof, "every process that opened it"));
	r.flags |= SG_REC_ATTACHERS_LOST;
	cr_assert_not_null(strstr(sg_orphan_judge(&r, &f, false).missing, "more processes opened it"));
	r.flags = SG_REC_ATTACHERS_UNSEEN; /* watch --no-attachers */
	r.nattachers = 0;
	cr_assert_not_null(strstr(sg_orphan_judge(&r, &f, false).missing, "did not follow who opened it"));
	/* Its own cgroup gone: they are asked about all the same. */
	strcpy(r.cgroup, "/system.slice/app.service");
	f.cgroup = SG_CGROUP_GONE;
	cr_assert_not(sg_orphan_judge(&r, &f, false).proven);
	r.flags = 0;
	f.attachers_alive = 1;
	cr_assert_not(sg_orphan_judge(&r, &f, false).proven);
	f.attachers_alive = 0;
	cr_assert(sg_orphan_judge(&r, &f, false).proven);
}

Test(orphan, attachers_are_bounded_and_never_the_creator)
{
	struct sg_creator_rec r = own_rec();

	cr_assert_not(sg_rec_attach(&r, r.pid, r.start_ticks), "the creator opening its own file is no attacher");
	cr_assert(sg_rec_attach(&r, r.pid, r.start_ticks + 1), "its pid reused is");
	cr_assert_not(sg_rec_attach(&r, r.pid, r.start_ticks + 1), "counted once");
	for (uint32_t i = 1; i < SG_REC_ATTACHERS; i++)
		cr_assert(sg_rec_attach(&r, 1000 + i, 3));
	cr_assert_eq(r.nattachers, SG_REC_ATTACHERS);
	cr_assert_eq(r.flags & SG_REC_ATTACHERS_LOST, 0);
	cr_assert(sg_rec_attach(&r, 5000, 3), "one past the bound is lost, and says so");
	cr_assert_eq(r.nattachers, SG_REC_ATTACHERS);
	cr_assert(r.flags & SG_REC_ATTACHERS_LOST);
	cr_assert_not(sg_rec_attach(&r, 5001, 3));
	struct sg_creator_rec u = own_rec();
	cr_assert(sg_rec_attach(&u, 0, 0), "one watch could not name");
	cr_assert(u.flags & SG_REC_ATTACHERS_LOST);
	cr_assert_eq(u.nattachers, 0);
}

Test(orphan, own_cgroups_and_hostile_paths)
{
	static const char *own[] = {"/system.slice/nginx.service", "/system.slice/docker-0123abcd.scope",
				    "/machine.slice/libpod-4567.scope",
				    "/user.slice/user-1000.slice/user@1000.service/app.slice/app-x.scope",
				    "/sgt-1-pool", "/kubepods.slice/kubepods-pod1.slice/cri-containerd-9.scope"};
	/* Unknown or odd paths are shared: the stricter proof. */
	static const char *odd[] = {"", "relative/x.service", "/a//b.service", "/a/../b.service", "/a/./b",
				    "/x/..", "/x/.", "/x/", "/user.slice/evil/session-1.scope"};

	for (size_t i = 0; i < sizeof(own) / sizeof(*own); i++)
		cr_assert_not(sg_cgroup_shared(own[i]), "%s is its own", own[i]);
	for (size_t i = 0; i < sizeof(odd) / sizeof(*odd); i++)
		cr_assert(sg_cgroup_shared(odd[i]), "%s counts as shared", odd[i]);
}

static void make_file(const char *name)
{
	int fd = openat(dfd, name, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);
	cr_assert_geq(fd, 0);
	close(fd);
}

static struct sg_creator_rec rec_of(const char *name)
{
	struct sg_creator_rec r = own_rec();
	struct stat st;

	cr_assert_eq(fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW), 0);
	r.kdev = sg_kdev(st.st_dev);
	r.ino = st.st_ino;
	r.birth_ns = sg_birth_ns(dfd, name, AT_SYMLINK_NOFOLLOW);
	r.pidns = sg_self_pidns();
	snprintf(r.name, sizeof(r.name), "%s", name);
	return r;
}

Test(orphan, gather_checks_the_inode_and_the_processes)
{
	struct sg_creators creators = {0};
	struct sg_orphan_facts f;
	struct sg_creator_rec r;

	make_file("seg");
	r = rec_of("seg");
	r.pid = (uint32_t)getpid(); /* alive, with its true start time */
	cr_assert_eq(sg_proc_start_ticks(0, &r.start_ticks), 0);
	r.parent_pid = 0;
	r.nancestors = 1; /* a parent whose start nobody knew */
	r.ancestors[0] = (struct sg_rec_process){.pid = (uint32_t)getppid()};
	sg_orphan_gather(&r, &creators, dfd, "seg", 0, 0, &f);
	cr_assert(f.inode_same);
	cr_assert_eq(f.creator, CREATOR_ALIVE);
	cr_assert_eq(f.parent, CREATOR_UNKNOWN, "no start time is unknown, never dead");
	/* Ancestors: this process's parent, alive; one reaped, dead. */
	r.nancestors = 3;
	cr_assert_eq(sg_proc_start_ticks(getppid(), &r.ancestors[1].start_ticks), 0);
	r.ancestors[1].pid = (uint32_t)getppid();
	r.ancestors[2] = (struct sg_rec_process){.pid = (uint32_t)getppid(), .start_ticks = 1};
	sg_orphan_gather(&r, &creators, dfd, "seg", 0, 0, &f);
	cr_assert_eq(f.ancestors_alive, 1);
	cr_assert_eq(f.ancestors_unknown, 0);
	r.nancestors = 0;
	/* Attachers: a child running another program (alive), a child reaped
	 * (dead), one with a start time another namespace's (unknown); this
	 * process, the judge, and its parent, which runs this very program (as
	 * a second shmguard process would): their opening is no use of the
	 * name. */
	pid_t other = sleeper_start((char *const[]){NULL});
	uint64_t other_start = 0;
	cr_assert_eq(sg_proc_start_ticks(other, &other_start), 0);
	pid_t child = fork();
	if (child == 0)
		_exit(0);
	cr_assert_gt(child, 0);
	uint64_t child_start = 0;
	cr_assert_eq(sg_proc_start_ticks(child, &child_start), 0);
	cr_assert_eq(waitpid(child, NULL, 0), child);
	uint64_t parent_start = 0;
	cr_assert_eq(sg_proc_start_ticks(getppid(), &parent_start), 0);
	r.attachers[0] = (struct sg_rec_process){.pid = (uint32_t)other, .start_ticks = other_start};
	r.attachers[1] = (struct sg_rec_process){.pid = (uint32_t)child, .start_ticks = child_start};
	r.attachers[2] = (struct sg_rec_process){.pid = r.pid, .start_ticks = r.start_ticks};
	r.attachers[3] = (struct sg_rec_process){.pid = (uint32_t)getppid(), .start_ticks = parent_start};
	r.nattachers = 4;
	sg_orphan_gather(&r, &creators, dfd, "seg", 0, 0, &f);
	cr_assert_eq(f.attachers_alive, 1, "only the other program's process");
	cr_assert_eq(f.attachers_unknown, 0);
	sleeper_end(other);
	sg_orphan_gather(&r, &creators, dfd, "seg", 0, 0, &f);
	cr_assert_eq(f.attachers_alive, 0, "the other program's process is gone");
	r.attachers[1].start_ticks = 0;
	sg_orphan_gather(&r, &creators, dfd, "seg", 0, 0, &f);
	cr_assert_eq(f.attachers_unknown, 1, "a start time nobody knew names nobody");
	r.nattachers = 0;
	r.start_ticks += 1; /* a reused pid is not the creator */
	sg_orphan_gather(&r, &creators, dfd, "seg", 0, 0, &f);
	cr_assert_eq(f.creator, CREATOR_DEAD);
	r.start_ticks = 0; /* a start time nobody knew names nobody */
	sg_orphan_gather(&r, &creators, dfd, "seg", 0, 0, &f);
	cr_assert_eq(f.creator, CREATOR_UNKNOWN);
	r.pidns ^= 1; /* another namespace's pid */
	sg_orphan_gather(&r, &creators, dfd, "seg", 0, 0, &f);
	cr_assert_eq(f.creator, CREATOR_UNKNOWN);

	/* The name given to another file: not the one recorded. */
	cr_assert_eq(unlinkat(dfd, "seg", 0), 0);
	make_file("other");
	cr_assert_eq(renameat(dfd, "other", dfd, "seg"), 0);
	sg_orphan_gather(&r, &creators, dfd, "seg", 0, 0, &f);
	cr_assert_not(f.inode_same);
	/* A symlink to the recorded file is not the file. */
	r = rec_of("seg");
	cr_assert_eq(symlinkat("seg", dfd, "link"), 0);
	sg_orphan_gather(&r, &creators, dfd, "link", 0, 0, &f);
	cr_assert_not(f.inode_same);
	/* Same inode number, another birth: the number was reused. */
	if (r.birth_ns) {
		r.birth_ns += 1;
		sg_orphan_gather(&r, &creators, dfd, "seg", 0, 0, &f);
		cr_assert_not(f.inode_same);
	}
	sg_creators_free(&creators);
}

/* A cgroup of this test under the cgroup2 mount: alive, then gone. */
Test(orphan, cgroup_ids_alive_then_gone)
{
	char path[4200], base[4096], link[64], got[256];
	int mnt = sg_cgroup2_fd();
	uint64_t id;

	if (mnt < 0 && getenv("CI") == NULL)
		cr_skip_test("no cgroup2 mount here");
	cr_assert_geq(mnt, 0, "no cgroup2 mount: %s", strerror(errno));
	cr_assert_eq(sg_cgroup_state(0), SG_CGROUP_UNKNOWN);
	cr_assert_eq(sg_cgroup_state(~0ull >> 1), SG_CGROUP_GONE, "an id never given is gone");
	if (geteuid() != 0 && getenv("CI") == NULL)
		cr_skip_test("making a cgroup takes root");
	snprintf(link, sizeof(link), "/proc/self/fd/%d", mnt);
	ssize_t n = readlink(link, base, sizeof(base) - 1);
	cr_assert_gt(n, 0);
	base[n] = '\0';
	snprintf(path, sizeof(path), "%s/sgt-%d-orphan", base, (int)getpid());
	cr_assert_eq(mkdir(path, 0755), 0, "%s: %s", path, strerror(errno));
	id = sg_cgroup_id_of(path + n);
	cr_assert_neq(id, 0);
	cr_assert_eq(sg_cgroup_state(id), SG_CGROUP_ALIVE);
	cr_assert_eq(sg_cgroup_path(id, got, sizeof(got)), 0);
	cr_assert_str_eq(got, path + n);
	cr_assert_eq(rmdir(path), 0);
	cr_assert_eq(sg_cgroup_state(id), SG_CGROUP_GONE);
	/* Made again under the same path: another id, the old one stays gone. */
	cr_assert_eq(mkdir(path, 0755), 0);
	cr_assert_neq(sg_cgroup_id_of(path + n), id);
	cr_assert_eq(sg_cgroup_state(id), SG_CGROUP_GONE);
	cr_assert_eq(rmdir(path), 0);
	cr_assert_eq(sg_cgroup_id_of("/"), sg_cgroup_id_of(""));
}

Test(orphan, store_round_trip_and_replace)
{
	struct sg_creator_store s = {0}, back;
	struct sg_creator_rec r = own_rec();
	char err[256];
	int sd = sg_store_open_dir(false, err, sizeof(err));

	cr_assert_geq(sd, 0, "%s", err);
	cr_assert_eq(sg_store_load(&back, sd, err, sizeof(err)), 0, "no file: no records");
	cr_assert_eq(back.n, 0);
	for (int i = 0; i < 3; i++) {
		r.ino = 10 + (uint64_t)i;
		cr_assert_eq(sg_store_put(&s, &r), 0);
	}
	r.ino = 11;
	r.pid = 555; /* a new file where the inode number was: the newer record */
	cr_assert_eq(sg_store_put(&s, &r), 0);
	cr_assert_eq(s.n, 3);
	cr_assert_eq(sg_store_save(&s, sd, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(sg_store_load(&back, sd, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(back.n, 3);
	cr_assert_eq(sg_store_find(&back, r.kdev, 11)->pid, 555);
	cr_assert_null(sg_store_find(&back, r.kdev, 13));
	sg_store_free(&back);
	sg_store_free(&s);
	close(sd);
}

/* Writes len bytes as the store's file, with mode. */
static void plant(const void *data, size_t len, mode_t mode)
{
	unlinkat(dfd, SG_STORE_FILE, 0);
	int fd = openat(dfd, SG_STORE_FILE, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, mode);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, data, len), (ssize_t)len);
	fchmod(fd, mode);
	close(fd);
}

Test(orphan, store_refuses_hostile_files)
{
	struct sg_creator_store s = {0}, back;
	struct sg_creator_rec r = own_rec();
	char err[256], *buf;
	struct stat st;
	int fd;

	/* Strings without their NUL come back terminated. */
	memset(r.name, 'A', sizeof(r.name));
	memset(r.cgroup, 'B', sizeof(r.cgroup));
	memset(r.comm, 'C', sizeof(r.comm));
	memcpy((char *)&s, &(struct sg_creator_store){0}, sizeof(s));
	cr_assert_eq(sg_store_put(&s, &r), 0);
	cr_assert_eq(sg_store_save(&s, dfd, err, sizeof(err)), 0, "%s", err);
	fd = openat(dfd, SG_STORE_FILE, O_RDONLY | O_CLOEXEC);
	cr_assert_eq(fstat(fd, &st), 0);
	buf = malloc((size_t)st.st_size + 1);
	cr_assert_eq(read(fd, buf, (size_t)st.st_size), st.st_size);
	close(fd);
	/* The bytes of the record as saved: overwrite the terminators. */
	memset(buf + st.st_size - sizeof(r.cgroup) - sizeof(r.name) - sizeof(r.comm), 'Z',
	       sizeof(r.comm) + sizeof(r.name) + sizeof(r.cgroup));
	plant(buf, (size_t)st.st_size, 0600);
	cr_assert_eq(sg_store_load(&back, dfd, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(strlen(back.recs[0].name), sizeof(r.name) - 1);
	cr_assert_eq(strlen(back.recs[0].cgroup), sizeof(r.cgroup) - 1);
	cr_assert_eq(strlen(back.recs[0].comm), sizeof(r.comm) - 1);
	sg_store_free(&back);

	/* Cut short, one byte more, a count past the bound, another magic,
	 * writable by others, a symlink to a good file: refused whole. */
	plant(buf, (size_t)st.st_size - 1, 0600);
	cr_assert_lt(sg_store_load(&back, dfd, err, sizeof(err)), 0);
	char *longer = calloc(1, (size_t)st.st_size + 1);
	memcpy(longer, buf, (size_t)st.st_size);
	plant(longer, (size_t)st.st_size + 1, 0600);
	cr_assert_lt(sg_store_load(&back, dfd, err, sizeof(err)), 0);
	free(longer);
	uint32_t huge = SG_STORE_MAX + 1;
	memcpy(buf + 12, &huge, sizeof(huge));
	plant(buf, (size_t)st.st_size, 0600);
	cr_assert_lt(sg_store_load(&back, dfd, err, sizeof(err)), 0);
	memcpy(buf + 12, &(uint32_t){1}, sizeof(uint32_t));
	plant(buf, (size_t)st.st_size, 0666);
	cr_assert_lt(sg_store_load(&back, dfd, err, sizeof(err)), 0, "a file others may write is not believed");
	/* A count of attachers past the bound. */
	uint32_t many = SG_REC_ATTACHERS + 1;
	size_t at = 16 + offsetof(struct sg_creator_rec, nattachers);
	memcpy(buf + at, &many, sizeof(many));
	plant(buf, (size_t)st.st_size, 0600);
	cr_assert_lt(sg_store_load(&back, dfd, err, sizeof(err)), 0, "more attachers than a record holds");
	memcpy(buf + at, &(uint32_t){0}, sizeof(uint32_t));
	buf[0] = 'X';
	plant(buf, (size_t)st.st_size, 0600);
	cr_assert_lt(sg_store_load(&back, dfd, err, sizeof(err)), 0);
	buf[0] = 'S';
	cr_assert_eq(renameat(dfd, SG_STORE_FILE, dfd, "real"), 0);
	plant(buf, (size_t)st.st_size, 0600);
	cr_assert_eq(renameat(dfd, SG_STORE_FILE, dfd, "real"), 0);
	cr_assert_eq(symlinkat("real", dfd, SG_STORE_FILE), 0);
	cr_assert_lt(sg_store_load(&back, dfd, err, sizeof(err)), 0, "a symlink is never followed");
	free(buf);
	sg_store_free(&s);
}

Test(orphan, store_dir_must_be_private)
{
	char err[256];

	cr_assert_eq(chmod(dir, 0755), 0);
	cr_assert_lt(sg_store_open_dir(false, err, sizeof(err)), 0, "a directory others may enter is refused");
	cr_assert_not_null(strstr(err, "not safe"));
	cr_assert_eq(chmod(dir, 0700), 0);
	char link[96];
	snprintf(link, sizeof(link), "%s-link", dir);
	cr_assert_eq(symlink(dir, link), 0);
	setenv("SHMGUARD_STORE_DIR", link, 1);
	cr_assert_lt(sg_store_open_dir(false, err, sizeof(err)), 0, "a symlinked directory is refused");
	unlink(link);
	setenv("SHMGUARD_STORE_DIR", dir, 1);
	int fd = sg_store_open_dir(false, err, sizeof(err));
	cr_assert_geq(fd, 0, "%s", err);
	close(fd);
}
