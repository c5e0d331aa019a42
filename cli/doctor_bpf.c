/* shmguard doctor's BPF checks: the kernel's BTF, and whether the
 * auditor's programs load and attach here. */
#include "doctor.h"

#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "audit_trace.h"
#include "holders.h"

static int check_programs(const struct sg_roots *roots)
{
	struct audit_trace_root rs[SG_MAX_ROOTS];
	struct audit_trace_opts o = {.roots = rs, .freed = true};
	const char *freed, *why;
	struct audit_tracer *t;
	struct stat st;
	char err[512];

	for (unsigned i = 0; i < roots->n; i++)
		if (stat(roots->dir[i], &st) == 0)
			rs[o.nroots++] = (struct audit_trace_root){sg_kdev(st.st_dev), st.st_ino};
	t = audit_trace_start(&o, err, sizeof(err));
	if (!t)
		return doctor_line("bpf", false, "shmguard audit cannot trace here: %s", err);
	doctor_line("bpf", true, "the auditor's programs load and attach; it sees files created with the %s probe%s",
		    audit_trace_probe(t), strcmp(audit_trace_probe(t), "syscalls") == 0
						  ? " (every system call pays for it: this kernel allows no cheaper one)"
						  : "");
	if ((freed = audit_trace_freed_probe(t, &why)))
		doctor_line("frees", true, "freed files leave the auditor's table at once (%s on shmem_evict_inode)", freed);
	else
		doctor_line("frees", true, "freed files leave the auditor's table at its review's next look, not at once (%s)",
			    why);
	audit_trace_stop(t);
	return 0;
}

int doctor_bpf(const struct sg_roots *roots)
{
	int status = access("/sys/kernel/btf/vmlinux", R_OK) == 0
			     ? doctor_line("btf", true, "/sys/kernel/btf/vmlinux")
			     : doctor_line("btf", false, "no /sys/kernel/btf/vmlinux: the kernel needs "
							 "CONFIG_DEBUG_INFO_BTF for the auditor");

	return status | check_programs(roots);
}
