/* A child process for the unit tests that read other processes through
 * /proc: /bin/sleep with exactly env as its environment, returned once it
 * has exec'd (its /proc/PID/environ and exe are then sleep's), until
 * sleeper_end.  Header-only: each unit test is a program of its own. */
#ifndef SHMGUARD_TESTS_SLEEPER_H
#define SHMGUARD_TESTS_SLEEPER_H

#include <criterion/criterion.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

static inline pid_t sleeper_start(char *const *env)
{
	int ready[2];
	char c;
	pid_t pid;

	cr_assert_eq(pipe2(ready, O_CLOEXEC), 0);
	cr_assert_geq(pid = fork(), 0);
	if (pid == 0) {
		execve("/bin/sleep", (char *const[]){"sleep", "30", NULL}, env);
		_exit(127);
	}
	close(ready[1]);
	cr_assert_eq(read(ready[0], &c, 1), 0, "the child did not exec"); /* its exec closed the pipe */
	close(ready[0]);
	return pid;
}

static inline void sleeper_end(pid_t pid)
{
	kill(pid, SIGKILL);
	cr_assert_eq(waitpid(pid, NULL, 0), pid);
}

#endif
