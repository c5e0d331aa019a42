/* shmguard doctor's checks, each in the file of the library it needs. */
#ifndef SHMGUARD_DOCTOR_H
#define SHMGUARD_DOCTOR_H

#include <stdbool.h>

#include "config.h"

/* One line of the report: "what ok|FAIL message"; returns 0 if ok, else 1.
 * A line with what "" details the check above it.  With --json, the line
 * goes into the check's object instead (name, verdict, reason). */
__attribute__((format(printf, 3, 4))) int doctor_line(const char *what, bool ok, const char *fmt, ...);
/* A line that explains the check above it, with no verdict of its own
 * (its "notes" in JSON). */
__attribute__((format(printf, 1, 2))) void doctor_note(const char *fmt, ...);

/* The kernel's BTF, and whether the auditor's programs load and attach
 * here (doctor_bpf.c), or a line saying this build has no auditor. */
int doctor_bpf(const struct sg_roots *roots);

/* Whether the program at path can run under the shim (doctor_binary.c,
 * libelf), or a line saying this build cannot tell. */
int doctor_binary(const char *path);

#endif
