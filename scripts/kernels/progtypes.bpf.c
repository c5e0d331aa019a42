// SPDX-License-Identifier: GPL-2.0
/* One empty BPF program of the kind named by -DKIND_<kind>, for the kernel
 * matrix's facts (scripts/kernels.sh builds one object per kind; the checks
 * load each with bpftool): which program types a kernel loads.  fentry,
 * tp_btf and lsm programs are checked against the kernel's BTF at load. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "GPL";

#if defined(KIND_tracepoint)
SEC("tracepoint/syscalls/sys_enter_unlinkat")
#elif defined(KIND_raw_tp)
SEC("raw_tp/sys_enter")
#elif defined(KIND_kprobe)
SEC("kprobe/vfs_unlink")
#elif defined(KIND_fentry)
SEC("fentry/vfs_unlink")
#elif defined(KIND_tp_btf)
SEC("tp_btf/sched_process_fork")
#elif defined(KIND_lsm)
SEC("lsm/inode_unlink")
#else
#error "define KIND_<kind>"
#endif
int probe(void *ctx)
{
	return 0;
}
