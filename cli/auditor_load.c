/* shmguard audit, watch and doctor's BPF checks: each loads the auditor's
 * module (cli_module.h) and runs its own entry point there. */
#include <limits.h>

#include "cli.h"
#include "cli_module.h"
#include "doctor.h"

/* shmguard audit's own: 3, tracing is not possible here. */
#define AUDIT_NOT_LOADED 3

#define MODULE "shmguard-auditor.so"

int cmd_audit(int argc, char **argv)
{
	const struct sg_module_auditor *m;
	char err[PATH_MAX + 256];

	if (!(m = cli_module_load(MODULE, err, sizeof(err))))
		return cli_fail(AUDIT_NOT_LOADED, "audit", "%s", err);
	return m->cmd_audit(argc, argv);
}

int cmd_watch(int argc, char **argv)
{
	const struct sg_module_auditor *m;
	char err[PATH_MAX + 256];

	if (!(m = cli_module_load(MODULE, err, sizeof(err))))
		return cli_fail(EXIT_FAIL, "watch", "%s", err);
	return m->cmd_watch(argc, argv);
}

int doctor_bpf(const struct sg_roots *roots)
{
	const struct sg_module_auditor *m;
	char err[PATH_MAX + 256];

	if (!(m = cli_module_load(MODULE, err, sizeof(err))))
		return doctor_line("bpf", false, "%s", err);
	return m->doctor_bpf(roots);
}
