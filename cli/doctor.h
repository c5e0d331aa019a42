/* shmguard doctor's checks, each in the file of the library it needs. */
#ifndef SHMGUARD_DOCTOR_H
#define SHMGUARD_DOCTOR_H

#include <stdbool.h>

#include "config.h"
#include "doctor_report.h"

/* The kernel's BTF, and whether the auditor's programs load and attach
 * here (doctor_bpf.c), or a line saying this build has no auditor. */
int doctor_bpf(const struct sg_roots *roots);

/* Whether the program at path can run under the shim (doctor_binary.c,
 * libelf), or a line saying this build cannot tell. */
int doctor_binary(const char *path);

#endif
