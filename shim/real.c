#include "real.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <unistd.h>

struct sg_real sg_real;
bool sg_real_ready;

static void *must_resolve(const char *name)
{
	void *fn = dlsym(RTLD_NEXT, name);

	if (!fn) {
		/* Nothing to fall back to: without the real function no call can
		 * be served.  Say so plainly rather than crash somewhere later. */
		static const char msg[] = "shmguard: fatal: cannot resolve a libc function; is libshmguard.so preloaded "
					  "into a program that is not linked against glibc?\n";
		(void)!write(STDERR_FILENO, msg, sizeof(msg) - 1);
		abort();
	}
	return fn;
}

/* Fortified variants exist only in programs built with _FORTIFY_SOURCE;
 * glibc always has them, but a missing one must not stop the others (nor
 * a function newer than the glibc). */
static void *may_resolve(const char *name)
{
	return dlsym(RTLD_NEXT, name);
}

/* Idempotent and safe to race: every thread stores the same values. */
void sg_real_resolve(void)
{
	sg_real.open = must_resolve("open");
	sg_real.open64 = must_resolve("open64");
	sg_real.openat = must_resolve("openat");
	sg_real.openat64 = must_resolve("openat64");
	sg_real.open_2 = may_resolve("__open_2");
	sg_real.open64_2 = may_resolve("__open64_2");
	sg_real.openat_2 = may_resolve("__openat_2");
	sg_real.openat64_2 = may_resolve("__openat64_2");
	sg_real.creat = must_resolve("creat");
	sg_real.creat64 = must_resolve("creat64");
	sg_real.shm_open = must_resolve("shm_open");
	sg_real.shm_unlink = must_resolve("shm_unlink");
	sg_real.sem_open = must_resolve("sem_open");
	sg_real.sem_unlink = must_resolve("sem_unlink");
	sg_real.unlink = must_resolve("unlink");
	sg_real.unlinkat = must_resolve("unlinkat");
	sg_real.rename = must_resolve("rename");
	sg_real.renameat = must_resolve("renameat");
	sg_real.renameat2 = may_resolve("renameat2"); /* glibc 2.28 */
	sg_real.link = must_resolve("link");
	sg_real.linkat = must_resolve("linkat");
	sg_real.mmap = must_resolve("mmap");
	sg_real.mmap64 = must_resolve("mmap64");
	sg_real.munmap = must_resolve("munmap");
	sg_real.close = must_resolve("close");
	sg_real.exit_now = must_resolve("_exit");
	__atomic_store_n(&sg_real_ready, true, __ATOMIC_RELEASE);
}
