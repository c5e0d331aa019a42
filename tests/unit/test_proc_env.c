/* host/proc_env.c: a variable of another process's environment, read as
 * the node agent reads a pod's, whose root chooses every byte of it. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proc_env.h"
#include "sleeper.h"

Test(proc_env, the_variable_and_only_it)
{
	pid_t pid = sleeper_start((char *const[]){"SHMGUARD_PATTERNSX=no", "XSHMGUARD_PATTERNS=no", "SHMGUARD_PATTERNS",
						"SHMGUARD_PATTERNS={req}_{int}", "SHMGUARD_PATTERNS=second", NULL});
	char out[64];

	cr_expect_eq(sg_proc_env_get(pid, "SHMGUARD_PATTERNS", out, sizeof(out)), 11);
	cr_expect_str_eq(out, "{req}_{int}", "the first definition, whole");
	cr_expect_eq(sg_proc_env_get(pid, "SHMGUARD_ABORT_DIR", out, sizeof(out)), -ENOENT);
	sleeper_end(pid);
}

Test(proc_env, a_value_too_long_is_refused_and_a_far_one_not_seen)
{
	size_t big = 100 << 10;
	char *value = malloc(big + 32), *pad = malloc(SG_PROC_ENV_READ_MAX), out[8192];

	memcpy(value, "SHMGUARD_PATTERNS=", 18);
	memset(value + 18, 'x', big);
	value[18 + big] = '\0';
	/* Entries of 120 KiB (under the kernel's 128 KiB for one string) fill
	 * the read's bound before the variable. */
	memset(pad, 'p', 120 << 10);
	memcpy(pad, "PAD=", 4);
	pad[120 << 10] = '\0';
	pid_t pid = sleeper_start((char *const[]){value, NULL});
	cr_expect_eq(sg_proc_env_get(pid, "SHMGUARD_PATTERNS", out, sizeof(out)), -E2BIG);
	sleeper_end(pid);
	pid = sleeper_start((char *const[]){"FIRST=1", pad, pad, pad, "SHMGUARD_PATTERNS=late", NULL});
	cr_assert_eq(sg_proc_env_get(pid, "FIRST", out, sizeof(out)), 1, "the child runs with that environment");
	cr_expect_eq(sg_proc_env_get(pid, "SHMGUARD_PATTERNS", out, sizeof(out)), -ENOENT,
		     "past the bound: not seen");
	sleeper_end(pid);
	cr_expect_eq(sg_proc_env_get(pid, "SHMGUARD_PATTERNS", out, sizeof(out)), -ENOENT, "a process gone");
	free(value);
	free(pad);
}
