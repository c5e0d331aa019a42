/* The oldest glibc the shim loads with: 2.31 (Debian 11, Ubuntu 20.04).
 * Built against a newer one, a call binds to the newest version of its
 * symbol, and the loader then refuses the shim in an older image (for a
 * preloaded library that stops the program: not failing open).  This
 * header, forced into every file of the shim and of the core it links
 * (meson: -include), makes those calls bind as they did in 2.31.
 * tests/tools/glibc_floor.sh checks the built shim needs nothing newer.
 *
 * - stat, fstat, lstat, fstatat and mknodat are functions of their own
 *   only since 2.33 (before, inline wrappers of __xstat and friends):
 *   made here as the system calls they are.  On 64-bit x86 and Arm the
 *   kernel's struct stat is glibc's.
 * - pthread_* and dlsym moved into libc in 2.34, with new versions there;
 *   their old versions are still exported (by libc, and in 2.31 by
 *   libpthread and libdl, which the shim therefore also names as needed:
 *   shim/meson.build).  A function the shim starts to call that
 *   glibc_floor.sh then names goes into the lists below.
 *
 * Errors: -1 with errno, as the system calls these stand for; the rest of
 * core/ returns a negative errno. */
#ifndef SHMGUARD_GLIBC_FLOOR_H
#define SHMGUARD_GLIBC_FLOOR_H

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__GLIBC__) && defined(SYS_newfstatat) && (defined(__x86_64__) || defined(__aarch64__))
static inline int sg_floor_fstatat(int dfd, const char *path, struct stat *st, int flags)
{
	return (int)syscall(SYS_newfstatat, dfd, path, st, flags);
}
#define fstatat(dfd, path, st, flags) sg_floor_fstatat(dfd, path, st, flags)
#define stat(path, st) sg_floor_fstatat(AT_FDCWD, path, st, 0)
#define lstat(path, st) sg_floor_fstatat(AT_FDCWD, path, st, AT_SYMLINK_NOFOLLOW)
#define fstat(fd, st) sg_floor_fstatat(fd, "", st, AT_EMPTY_PATH)
#define mknodat(dfd, path, mode, dev) ((int)syscall(SYS_mknodat, dfd, path, mode, (dev_t)(dev)))
#endif

#if defined(__GLIBC__) && defined(__x86_64__)
#define SG_FLOOR_BIND(fn, version) __asm__(".symver " #fn ", " #fn "@" version)
SG_FLOOR_BIND(pthread_create, "GLIBC_2.2.5");
SG_FLOOR_BIND(pthread_once, "GLIBC_2.2.5");
SG_FLOOR_BIND(pthread_sigmask, "GLIBC_2.2.5");
SG_FLOOR_BIND(pthread_attr_setstacksize, "GLIBC_2.2.5");
SG_FLOOR_BIND(pthread_mutex_timedlock, "GLIBC_2.2.5");
SG_FLOOR_BIND(pthread_mutex_trylock, "GLIBC_2.2.5");
SG_FLOOR_BIND(pthread_condattr_setclock, "GLIBC_2.3.3");
SG_FLOOR_BIND(dlsym, "GLIBC_2.2.5");
#elif defined(__GLIBC__) && defined(__aarch64__)
#define SG_FLOOR_BIND(fn, version) __asm__(".symver " #fn ", " #fn "@" version)
SG_FLOOR_BIND(pthread_create, "GLIBC_2.17");
SG_FLOOR_BIND(pthread_once, "GLIBC_2.17");
SG_FLOOR_BIND(pthread_sigmask, "GLIBC_2.17");
SG_FLOOR_BIND(pthread_attr_setstacksize, "GLIBC_2.17");
SG_FLOOR_BIND(pthread_mutex_timedlock, "GLIBC_2.17");
SG_FLOOR_BIND(pthread_mutex_trylock, "GLIBC_2.17");
SG_FLOOR_BIND(pthread_condattr_setclock, "GLIBC_2.17");
SG_FLOOR_BIND(dlsym, "GLIBC_2.17");
#endif

#endif
