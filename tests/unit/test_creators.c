/* host/creators.c: the clock a process reads start times with, as the
 * kernel says at the moment of asking.  A process reaped between the
 * reading of its stat and of its time namespace is gone, not one "of
 * another clock" (which would keep a dead creator's file as unknown); a
 * process whose group leader exited reads its other threads' clock. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "creators.h"
#include "procstat.h"

static pid_t child(bool stay)
{
	pid_t pid = fork();

	cr_assert_geq(pid, 0);
	if (pid == 0) {
		if (stay)
			pause();
		_exit(0);
	}
	return pid;
}

static int piddir(pid_t pid)
{
	char path[32];
	int fd;

	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	cr_assert_geq(fd, 0, "%s", path);
	return fd;
}

/* What sg_creators_clock_at says of the process fd names; fd closed. */
static enum sg_proc_clock clock_at(int fd)
{
	struct sg_creators c = {0};
	enum sg_proc_clock clock = sg_creators_clock_at(&c, fd);

	sg_creators_free(&c);
	close(fd);
	return clock;
}

Test(creators, a_running_process_reads_this_clock)
{
	pid_t pid = child(true);

	cr_expect_eq(clock_at(piddir(pid)), SG_CLOCK_SAME);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

Test(creators, a_zombie_has_released_its_namespaces)
{
	pid_t pid = child(false);
	int fd = piddir(pid);
	siginfo_t si;

	/* Exited, not reaped: WNOWAIT leaves the zombie. */
	cr_assert_eq(waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT), 0);
	cr_expect_eq(clock_at(fd), SG_CLOCK_RELEASED);
	waitpid(pid, NULL, 0);
}

Test(creators, a_process_reaped_after_its_directory_was_opened_is_gone)
{
	pid_t pid = child(false);
	int fd = piddir(pid);

	cr_assert_eq(waitpid(pid, NULL, 0), pid);
	cr_expect_eq(clock_at(fd), SG_CLOCK_GONE);
}

static void *pause_forever(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return NULL;
}

/* Its leader gone (pthread_exit: a zombie whose namespaces are released),
 * its other thread running: the process reads that thread's clock, this
 * one, not "no clock" (which judged it of another time namespace). */
Test(creators, a_process_whose_leader_exited_reads_its_threads_clock)
{
	struct sg_proc_stat ps = {0};
	pid_t pid = fork();

	cr_assert_geq(pid, 0);
	if (pid == 0) {
		pthread_t t;
		if (pthread_create(&t, NULL, pause_forever, NULL) != 0)
			_exit(1);
		pthread_exit(NULL);
	}
	/* The barrier: the leader's own entry says it exited. */
	for (int i = 0; i < 5000 && !(sg_proc_stat(pid, &ps) == 0 && ps.state == 'Z'); i++)
		usleep(1000);
	cr_assert_eq(ps.state, 'Z', "the leader did not exit");
	cr_assert_eq(ps.threads, 2);
	cr_expect_eq(clock_at(piddir(pid)), SG_CLOCK_SAME);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}
