/* shmguard doctor: is the shim preloaded in this environment (the process
 * doctor runs as, started with the container's or the unit's LD_PRELOAD),
 * and if not, why; and can this libc load it at all. */
#ifndef SHMGUARD_DOCTOR_SHIM_H
#define SHMGUARD_DOCTOR_SHIM_H

#include <stdbool.h>

typedef int doctor_line_fn(const char *what, bool ok, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Prints its verdicts with line() ("preload"); 0 when all is well, else 1.
 * Not being preloaded is well (the command line does not need it) unless
 * LD_PRELOAD names the shim, or the shim found (preloaded, named or
 * installed) needs a newer glibc than this one. */
int doctor_shim(doctor_line_fn *line);

#endif
