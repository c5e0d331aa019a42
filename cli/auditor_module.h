/* The auditor as a module of its own (shmguard-auditor.so, in the
 * package's private directory): `shmguard audit`, `watch` and doctor's BPF
 * checks load it when they run, so that the commands a serving host runs on
 * its hot path (abort, sweep, ls, the preflight) never load libbpf,
 * libmicrohttpd and their libraries.  The module takes the command line's
 * helpers (cli.h, doctor_line) from the program, which exports them. */
#ifndef SHMGUARD_AUDITOR_MODULE_H
#define SHMGUARD_AUDITOR_MODULE_H

#include "config.h"

#define SG_AUDITOR_MODULE_NAME "shmguard-auditor.so"
#define SG_AUDITOR_MODULE_SYMBOL "shmguard_auditor_module"

/* What the module exports, under SG_AUDITOR_MODULE_SYMBOL. */
struct sg_auditor_module {
	const char *version; /* SHMGUARD_VERSION: a module of another build is refused */
	int (*cmd_audit)(int argc, char **argv);
	int (*cmd_watch)(int argc, char **argv);
	int (*doctor_bpf)(const struct sg_roots *roots);
};

#endif
