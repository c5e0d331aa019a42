/* shmguard doctor in a build without the auditor: no BPF checks, and a
 * line saying so (not a failure: the rest works without BPF). */
#include "doctor.h"

int doctor_bpf(const struct sg_roots *roots)
{
	(void)roots;
	return doctor_line("bpf", true, "not checked: this shmguard was built without the auditor "
					"(shmguard audit); the shim and the other commands do not need BPF");
}
