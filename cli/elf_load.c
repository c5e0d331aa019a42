/* shmguard doctor's checks that read ELF headers (the shim's glibc
 * versions, --binary's program): each loads their module (cli_module.h,
 * libelf) and checks there. */
#include <limits.h>

#include "cli_module.h"
#include "doctor.h"
#include "doctor_shim.h"

#define MODULE "shmguard-elf.so"

int doctor_shim(doctor_line_fn *line)
{
	const struct sg_module_elf *m;
	char err[PATH_MAX + 256];

	if (!(m = cli_module_load(MODULE, err, sizeof(err))))
		return line("preload", false, "%s", err);
	return m->doctor_shim(line);
}

int doctor_binary(const char *path)
{
	const struct sg_module_elf *m;
	char err[PATH_MAX + 256];

	if (!(m = cli_module_load(MODULE, err, sizeof(err))))
		return doctor_line("binary", false, "%s", err);
	return m->doctor_binary(path);
}
