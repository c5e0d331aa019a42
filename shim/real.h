/* The libc functions the shim wraps, resolved once with dlsym(RTLD_NEXT).
 * The shim's own file work never calls its wrappers: in shim/ it calls
 * these (sg_real.open, not open), and the core (core/) that the shim
 * shares with the command makes system calls instead (core/sys.h), since
 * its plain open() would bind to the wrapper the shim exports.  The
 * re-entry guard (sg_enter() in state.h) covers the rest: a signal handler,
 * or another library's code (a malloc, say), that calls a wrapper while the
 * shim works on the same thread. */
#ifndef SHMGUARD_REAL_H
#define SHMGUARD_REAL_H

#include <semaphore.h>
#include <stdbool.h>
#include <sys/types.h>

struct sg_real {
	int (*open)(const char *, int, ...);
	int (*open64)(const char *, int, ...);
	int (*openat)(int, const char *, int, ...);
	int (*openat64)(int, const char *, int, ...);
	int (*open_2)(const char *, int);
	int (*open64_2)(const char *, int);
	int (*openat_2)(int, const char *, int);
	int (*openat64_2)(int, const char *, int);
	int (*creat)(const char *, mode_t);
	int (*creat64)(const char *, mode_t);
	int (*shm_open)(const char *, int, mode_t);
	int (*shm_unlink)(const char *);
	sem_t *(*sem_open)(const char *, int, ...);
	int (*sem_unlink)(const char *);
	int (*unlink)(const char *);
	int (*unlinkat)(int, const char *, int);
	int (*rename)(const char *, const char *);
	int (*renameat)(int, const char *, int, const char *);
	int (*renameat2)(int, const char *, int, const char *, unsigned);
	int (*link)(const char *, const char *);
	int (*linkat)(int, const char *, int, const char *, int);
	void *(*mmap)(void *, size_t, int, int, int, off_t);
	void *(*mmap64)(void *, size_t, int, int, int, off64_t);
	int (*munmap)(void *, size_t);
	int (*close)(int);
	void (*exit_now)(int) __attribute__((noreturn)); /* _exit */
};

extern struct sg_real sg_real;
extern bool sg_real_ready;

void sg_real_resolve(void);

/* Every wrapper calls this first: it may run before the shim's constructor
 * (another library's constructor opening a file). */
static inline void sg_real_ensure(void)
{
	if (__builtin_expect(!__atomic_load_n(&sg_real_ready, __ATOMIC_ACQUIRE), 0))
		sg_real_resolve();
}

#endif
