/* Included first by every file of the core: the code linked into the shim,
 * which runs inside other people's programs and wraps libc's file calls
 * (shim/real.h).  A core call to one of them would enter the shim's own
 * wrapper, so the core makes those calls as system calls (sys.h), and the
 * compiler refuses those libc names in core files, and stdio's openers,
 * which the core has no use for.  (fdopendir and readdir on a descriptor
 * the core opened stay allowed: they reach the kernel inside libc, never
 * through an exported wrapper.)  The system headers that declare the names
 * come first: a poisoned name may appear in a declaration read before the
 * pragma, never in code after it.
 *
 * Errors: nothing here can fail (core/ reports a failure as a negative errno). */
#ifndef SHMGUARD_CORE_H
#define SHMGUARD_CORE_H

#include <dirent.h>
#include <fcntl.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sys.h"

#pragma GCC poison open open64 openat openat64 creat creat64 close closefrom \
	fopen fopen64 fdopen freopen \
	unlink unlinkat rename renameat renameat2 link linkat \
	shm_open shm_unlink sem_open sem_unlink mmap mmap64 munmap _exit _Exit

#endif
