/* doctor's ELF checks' module (libelf): its one export (cli_module.h). */
#include "cli_module.h"
#include "doctor.h"

__attribute__((visibility("default"))) const struct sg_module_elf shmguard_module = {
	.version = SHMGUARD_VERSION,
	.doctor_shim = doctor_shim,
	.doctor_binary = doctor_binary,
};
