/* The module's one export: its entry points (auditor_module.h).  It is
 * linked -Bsymbolic, so that these are its own and not the program's
 * loaders of the same names. */
#include "auditor_module.h"
#include "cli.h"
#include "doctor.h"

__attribute__((visibility("default"))) const struct sg_auditor_module shmguard_auditor_module = {
	.version = SHMGUARD_VERSION,
	.cmd_audit = cmd_audit,
	.cmd_watch = cmd_watch,
	.doctor_bpf = doctor_bpf,
};
