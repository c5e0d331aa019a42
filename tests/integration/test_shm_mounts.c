/* host/shm_mounts.c: every /dev/shm of the machine, found in every mount
 * namespace, as a node agent finds the pods' (#19).  The "pods" are
 * processes in mount namespaces of their own, each with a tmpfs on
 * /dev/shm, made by the test. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "holders.h"
#include "shm_mounts.h"

TestSuite(shm_mounts, .timeout = 60);

static void need_root(void)
{
	if (geteuid() != 0)
		h_skip(NULL, "needs root (mount namespaces)");
}

struct pod {
	pid_t pid;
	int hold; /* closing it ends the pod */
	uint32_t kdev; /* its /dev/shm */
};

/* The write ends that hold the pods running: a pod must not hold another's. */
static int holds[8];
static unsigned nholds;

/* A process in a mount namespace of its own; with a tmpfs of its own on
 * /dev/shm when own_shm (else the host's, shared), holding a file called
 * marker there.  Returns once it is set up (a barrier, not a sleep). */
static struct pod pod_start(bool own_shm, const char *marker)
{
	int ready[2], hold[2];
	struct pod p = {0};
	struct stat st;

	cr_assert_eq(pipe(ready), 0);
	cr_assert_eq(pipe(hold), 0);
	p.pid = fork();
	cr_assert_geq(p.pid, 0);
	if (p.pid == 0) {
		char c = 0;
		close(ready[0]);
		close(hold[1]);
		for (unsigned i = 0; i < nholds; i++)
			close(holds[i]);
		if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
			_exit(1);
		if (own_shm && mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "size=1m") < 0)
			_exit(2);
		if (marker) {
			char path[256];
			snprintf(path, sizeof(path), "/dev/shm/%s", marker);
			int fd = open(path, O_CREAT | O_EXCL | O_WRONLY, 0600);
			if (fd < 0)
				_exit(3);
			close(fd);
		}
		if (stat("/dev/shm", &st) < 0)
			_exit(4);
		uint32_t kdev = sg_kdev(st.st_dev);
		if (write(ready[1], &kdev, sizeof(kdev)) != sizeof(kdev))
			_exit(5);
		while (read(hold[0], &c, 1) < 0 && errno == EINTR)
			;
		if (marker && !own_shm) {
			char path[256];
			snprintf(path, sizeof(path), "/dev/shm/%s", marker);
			unlink(path);
		}
		_exit(0);
	}
	close(ready[1]);
	close(hold[0]);
	cr_assert_eq(read(ready[0], &p.kdev, sizeof(p.kdev)), (ssize_t)sizeof(p.kdev), "the pod did not start");
	close(ready[0]);
	p.hold = hold[1];
	cr_assert_lt(nholds, sizeof(holds) / sizeof(*holds));
	holds[nholds++] = p.hold;
	return p;
}

static void pod_stop(struct pod *p)
{
	int status;

	close(p->hold);
	for (unsigned i = 0; i < nholds; i++)
		if (holds[i] == p->hold)
			holds[i] = holds[--nholds];
	cr_assert_eq(waitpid(p->pid, &status, 0), p->pid);
	cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "pod %d ended with %#x", (int)p->pid, status);
}

static size_t count_dev(const struct sg_shm_mounts *ms, uint32_t kdev, const struct sg_shm_mount **found)
{
	size_t n = 0;

	for (size_t i = 0; i < ms->n; i++)
		if (ms->m[i].kdev == kdev) {
			n++;
			*found = &ms->m[i];
		}
	return n;
}

static uint32_t host_shm_kdev(void)
{
	struct stat st;

	cr_assert_eq(stat("/dev/shm", &st), 0);
	return sg_kdev(st.st_dev);
}

Test(shm_mounts, every_pods_own_tmpfs_is_found_once_and_a_shared_one_as_the_hosts)
{
	const char *prefix = h_prefix("mnt");
	char *name[3];
	struct pod pods[3];
	struct sg_shm_mounts ms;
	const struct sg_shm_mount *m = NULL;

	need_root();
	for (int i = 0; i < 3; i++) {
		name[i] = h_str("%spod%d", prefix, i);
		pods[i] = pod_start(i < 2, name[i]);
	}
	cr_assert_eq(sg_shm_mounts_scan(&ms, NULL, 0), 0);
	/* Some machine's init may be out of reach; the pods never are. */
	for (int i = 0; i < 3; i++)
		cr_expect_neq(ms.first_unreadable, pods[i].pid, "pod %d unreadable", i);
	cr_expect_geq(ms.namespaces, 3);
	cr_assert_gt(ms.n, 0);
	cr_expect(ms.m[0].own_ns && ms.m[0].kdev == host_shm_kdev(), "this namespace's /dev/shm comes first");
	for (int i = 0; i < 2; i++) {
		cr_assert_eq(count_dev(&ms, pods[i].kdev, &m), 1, "pod %d's /dev/shm found once", i);
		cr_expect(!m->own_ns);
		cr_expect_str_eq(m->point, "/dev/shm");
		/* What is reached is the pod's own directory: its file is there,
		 * through the descriptor and through its path alike. */
		cr_expect_eq(faccessat(m->dfd, name[i], F_OK, AT_SYMLINK_NOFOLLOW), 0, "pod %d's file", i);
		cr_expect(h_exists(h_str("%s/%s", m->path, name[i])));
		cr_expect_neq(faccessat(m->dfd, name[1 - i], F_OK, AT_SYMLINK_NOFOLLOW), 0);
	}
	/* The third pod shares the host's tmpfs: one entry, this namespace's. */
	cr_expect_eq(pods[2].kdev, host_shm_kdev());
	cr_expect_eq(count_dev(&ms, pods[2].kdev, &m), 1);
	cr_expect(m->own_ns);
	sg_shm_mounts_free(&ms);
	for (int i = 0; i < 3; i++)
		pod_stop(&pods[i]);
}

/* The pod's tmpfs holds a file no other pod has: a scan after the pod
 * ended must reach no directory holding it.  Device number and namespace
 * inode number are both handed out lowest-free, so a pod another test
 * starts meanwhile may well get this one's pair: neither tells them apart. */
Test(shm_mounts, a_pod_that_is_gone_is_gone_from_the_next_scan)
{
	const char *marker = h_prefix("gone");
	struct sg_shm_mounts ms;
	const struct sg_shm_mount *m = NULL;
	struct pod p;

	need_root();
	p = pod_start(true, marker);
	cr_assert_eq(sg_shm_mounts_scan(&ms, NULL, 0), 0);
	cr_assert_eq(count_dev(&ms, p.kdev, &m), 1);
	cr_assert_eq(faccessat(m->dfd, marker, F_OK, AT_SYMLINK_NOFOLLOW), 0, "the pod's file, while it runs");
	sg_shm_mounts_free(&ms);
	pod_stop(&p);
	cr_assert_eq(sg_shm_mounts_scan(&ms, NULL, 0), 0);
	for (size_t i = 0; i < ms.n; i++)
		cr_expect_neq(faccessat(ms.m[i].dfd, marker, F_OK, AT_SYMLINK_NOFOLLOW), 0,
			      "a pod's ended tmpfs still listed (at %s)", ms.m[i].path);
	sg_shm_mounts_free(&ms);
}

/* Only tmpfs at the mount points asked for: a plain directory bind-mounted
 * over a pod's /dev/shm hides its tmpfs, and neither is listed. */
Test(shm_mounts, only_a_visible_tmpfs_counts)
{
	struct sg_shm_mounts ms;
	const struct sg_shm_mount *m;
	const char *const other[] = {"/run/sg-nowhere"};
	struct pod p;

	need_root();
	p = pod_start(true, NULL);
	cr_assert_eq(sg_shm_mounts_scan(&ms, other, 1), 0);
	cr_expect_eq(count_dev(&ms, p.kdev, &m), 0, "a mount point not asked for");
	sg_shm_mounts_free(&ms);
	pod_stop(&p);
}

Test(shm_mounts, mountinfo_lines_are_parsed_with_bounds)
{
	struct sg_mountinfo_entry e;

	cr_assert_eq(sg_mountinfo_parse("36 35 0:23 / /dev/shm rw,nosuid,nodev shared:3 - tmpfs tmpfs rw,size=65536k",
					&e),
		     0);
	cr_expect_eq(e.mnt_id, 36);
	cr_expect_eq(e.kdev, 23u);
	cr_expect_str_eq(e.point, "/dev/shm");
	cr_expect_str_eq(e.root, "/");
	cr_expect_str_eq(e.fstype, "tmpfs");
	/* Escapes as the kernel writes them; no optional fields. */
	cr_assert_eq(sg_mountinfo_parse("7 1 259:3 /a\\040b /dev\\134shm\\012x rw - tmpfs none rw", &e), 0);
	cr_expect_eq(e.kdev, 259u << 20 | 3);
	cr_expect_str_eq(e.root, "/a b");
	cr_expect_str_eq(e.point, "/dev\\shm\nx");
	/* Malformed: no separator, bad escape, bad device, missing fields. */
	cr_expect_eq(sg_mountinfo_parse("7 1 0:3 / /dev/shm rw tmpfs none rw", &e), -EINVAL);
	cr_expect_eq(sg_mountinfo_parse("7 1 0:3 / /dev/\\9shm rw - tmpfs none rw", &e), -EINVAL);
	cr_expect_eq(sg_mountinfo_parse("7 1 x:3 / /dev/shm rw - tmpfs none rw", &e), -EINVAL);
	cr_expect_eq(sg_mountinfo_parse("7 1 0:3", &e), -EINVAL);
	cr_expect_eq(sg_mountinfo_parse("", &e), -EINVAL);
	/* A field longer than its room is refused, not cut. */
	char *longer = h_str("7 1 0:3 / /%0*d rw - tmpfs none rw", SG_PATH_MAX + 10, 0);
	cr_expect_eq(sg_mountinfo_parse(longer, &e), -EINVAL);
}
