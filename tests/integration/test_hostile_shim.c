/* The host program and the local users around it against the shim and the
 * sweeps: a lock another user holds, a program that chroots, a signal
 * handler that creates files, an abort directory filled by another user.
 * Run as root, with a second, unprivileged user as the attacker
 * (tests/integration/harness.h).  docs/threat-model-shim.md says what each
 * shows. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"

static const char *prefix, *abort_dir;

static void setup(void)
{
	prefix = h_prefix("hsh");
	abort_dir = h_str("/dev/shm/%sabort", prefix);
}

static void teardown(void)
{
	h_cleanup(prefix);
}

TestSuite(hostile_shim, .init = setup, .fini = teardown, .timeout = 60);

/* Finding 13: anyone who can open a root can flock it.  A sweep gives up on
 * that root after a bounded wait, says why, exits 3; the preflight starts
 * the server all the same. */
Test(hostile_shim, a_root_locked_by_another_user_is_not_waited_on)
{
	const struct h_user *u = h_hostile_user();
	const char *root = h_str("/dev/shm/%sroot", prefix);
	char *out, *err;
	long t0;
	int status;

	cr_assert_eq(mkdir(root, 0755), 0);
	const char *hold[] = {"/usr/bin/flock", "--shared", root, "/bin/sh", "-c", "echo ready; exec sleep 60", NULL};
	struct h_proc holder = h_spawn_as(u, hold, NULL);
	char *ready = h_read_line(&holder, 10000);
	cr_assert(ready && strcmp(ready, "ready") == 0, "the attacker could not lock %s", root);

	const char *sweep[] = {h_bin("SG_CLI"), "sweep", "--dead", "--root", root, "--ignore-unreadable", NULL};
	t0 = h_now_ms();
	status = h_output(sweep, NULL, &out, &err);
	cr_expect_eq(status, 3, "sweep exited %d: %s", status, err);
	cr_expect_lt(h_now_ms() - t0, 10000, "sweep waited %ld ms on the attacker's lock", h_now_ms() - t0);
	cr_expect(strstr(err, "stayed locked by another process"), "%s", err);

	const char *preflight[] = {h_str("%s/shmguard-preflight", h_bin("SG_CONTRIB")), "/bin/echo", "started", NULL};
	const char *env[] = {h_str("SHMGUARD=%s", h_bin("SG_CLI")),
			     h_str("SHMGUARD_SWEEP_ARGS=--root %s --ignore-unreadable", root), NULL};
	t0 = h_now_ms();
	status = h_output(preflight, env, &out, &err);
	cr_expect_eq(status, 0, "preflight exited %d: %s", status, err);
	cr_expect(strstr(out, "\nstarted\n"), "the server did not start: '%s' %s", out, err);
	cr_expect(strstr(err, "status 3; starting anyway"), "%s", err);
	cr_expect_lt(h_now_ms() - t0, 10000, "the preflight waited %ld ms on the attacker's lock", h_now_ms() - t0);
}
