/* The auditor's module: its one export (cli_module.h). */
#include "cli.h"
#include "cli_module.h"
#include "doctor.h"

__attribute__((visibility("default"))) const struct sg_module_auditor shmguard_module = {
	.version = SHMGUARD_VERSION,
	.cmd_audit = cmd_audit,
	.cmd_watch = cmd_watch,
	.doctor_bpf = doctor_bpf,
};
