// SPDX-License-Identifier: GPL-2.0
/* The auditor's kernel side.  It follows inodes on the shm devices through
 * the ctime tracepoints (every creation, resize, rename and unlink changes
 * ctime), so it costs nothing to system calls that change no ctime and to
 * files elsewhere beyond a device comparison; syscall tracepoints would put
 * every system call of every process on the slow path.  The traced process
 * tree is followed through fork and exit, and the shim's tags through USDT. */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/usdt.bpf.h>

#include "audit_event.h"

char LICENSE[] SEC("license") = "GPL";

/* Set by userspace between open and load. */
const volatile __u32 shm_devs[SG_AUDIT_MAX_DEVS] = {};
const volatile __u32 n_shm_devs = 0;
const volatile bool follow_tree = false; /* only count creations by the traced tree */

/* Events the ring buffer had no room for: never silently lost. */
__u64 dropped = 0;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 << 20);
} events SEC(".maps");

/* Processes of the traced tree (tgid -> 1), seeded by userspace. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, __u8);
} tree SEC(".maps");

#define S_IFMT 00170000
#define S_IFREG 0100000

static __always_inline bool on_shm_dev(__u32 dev)
{
	for (__u32 i = 0; i < SG_AUDIT_MAX_DEVS && i < n_shm_devs; i++)
		if (shm_devs[i] == dev)
			return true;
	return false;
}

static __always_inline bool in_tree(__u32 tgid)
{
	return !follow_tree || bpf_map_lookup_elem(&tree, &tgid);
}

static __always_inline void fill_header(struct sg_audit_header *h, __u32 type)
{
	h->type = type;
	h->tgid = bpf_get_current_pid_tgid() >> 32;
	h->ts_ns = bpf_ktime_get_ns();
	bpf_get_current_comm(h->comm, sizeof(h->comm));
}

static __always_inline void *reserve(__u64 size)
{
	void *e = bpf_ringbuf_reserve(&events, size, 0);

	if (!e)
		__sync_fetch_and_add(&dropped, 1);
	return e;
}

/* A new inode has no name yet: take the path its creating system call
 * was given (open, creat, openat, openat2). */
static __always_inline bool creating_path(struct sg_audit_inode *e)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(task);
	unsigned long nr = BPF_CORE_READ(regs, orig_ax), arg;

	switch (nr) {
	case 2:  /* open */
	case 85: /* creat */
		arg = BPF_CORE_READ(regs, di);
		break;
	case 257: /* openat */
	case 437: /* openat2 */
		arg = BPF_CORE_READ(regs, si);
		break;
	default:
		return false;
	}
	return bpf_probe_read_user_str(e->name, sizeof(e->name), (const void *)arg) > 0;
}

static __always_inline int on_ctime(struct inode *inode)
{
	__u32 dev = BPF_CORE_READ(inode, i_sb, s_dev);
	struct hlist_node *alias;
	struct sg_audit_inode *e;
	__u32 nlink;

	if (!on_shm_dev(dev) || (BPF_CORE_READ(inode, i_mode) & S_IFMT) != S_IFREG)
		return 0;
	nlink = BPF_CORE_READ(inode, __i_nlink);
	alias = BPF_CORE_READ(inode, i_dentry.first);
	/* tmpfs pins a dentry for every name: a linked inode without one is
	 * being created right now (its name comes after its ctime). */
	bool created = nlink > 0 && !alias;
	if (created && !in_tree(bpf_get_current_pid_tgid() >> 32))
		return 0;

	e = reserve(sizeof(*e));
	if (!e)
		return 0;
	fill_header(&e->h, SG_AUDIT_INODE);
	e->ino = BPF_CORE_READ(inode, i_ino);
	e->size = BPF_CORE_READ(inode, i_size);
	e->blocks = BPF_CORE_READ(inode, i_blocks);
	e->dev = dev;
	e->nlink = nlink;
	e->created = created;
	e->parent_ino = 0;
	e->name_kind = SG_AUDIT_NAME_NONE;
	e->name[0] = '\0';
	if (alias) {
		struct dentry *d = container_of(alias, struct dentry, d_u.d_alias);

		if (bpf_probe_read_kernel_str(e->name, sizeof(e->name), BPF_CORE_READ(d, d_name.name)) > 0) {
			e->name_kind = SG_AUDIT_NAME_DENTRY;
			e->parent_ino = BPF_CORE_READ(d, d_parent, d_inode, i_ino);
		}
	} else if (created && creating_path(e)) {
		e->name_kind = SG_AUDIT_NAME_PATH;
	}
	bpf_ringbuf_submit(e, 0);
	return 0;
}

/* Kernels with multigrain timestamps (tmpfs since 6.13) use the first two;
 * the last is the plain path. */
SEC("raw_tp/ctime_ns_xchg")
int BPF_PROG(ctime_ns_xchg, struct inode *inode)
{
	return on_ctime(inode);
}

SEC("raw_tp/ctime_xchg_skip")
int BPF_PROG(ctime_xchg_skip, struct inode *inode)
{
	return on_ctime(inode);
}

SEC("raw_tp/inode_set_ctime_to_ts")
int BPF_PROG(inode_set_ctime_to_ts, struct inode *inode)
{
	return on_ctime(inode);
}

/* The traced tree grows with its forks and shrinks with its exits. */
SEC("raw_tp/sched_process_fork")
int BPF_PROG(sched_process_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ptgid = BPF_CORE_READ(parent, tgid), ctgid = BPF_CORE_READ(child, tgid);
	__u8 one = 1;

	if (follow_tree && ptgid != ctgid && bpf_map_lookup_elem(&tree, &ptgid))
		bpf_map_update_elem(&tree, &ctgid, &one, BPF_ANY);
	return 0;
}

SEC("raw_tp/sched_process_exit")
int BPF_PROG(sched_process_exit, struct task_struct *task, bool group_dead)
{
	__u32 tgid = BPF_CORE_READ(task, tgid);

	if (follow_tree && group_dead)
		bpf_map_delete_elem(&tree, &tgid);
	return 0;
}

/* libshmguard.so: DTRACE_PROBE3(shmguard, tag, request, dev, ino). */
SEC("usdt")
int BPF_USDT(shim_tag, const char *request, __u64 dev, __u64 ino)
{
	struct sg_audit_tag *e = reserve(sizeof(*e));

	if (!e)
		return 0;
	fill_header(&e->h, SG_AUDIT_TAG);
	e->dev = dev;
	e->ino = ino;
	if (bpf_probe_read_user_str(e->request, sizeof(e->request), request) <= 0)
		e->request[0] = '\0';
	bpf_ringbuf_submit(e, 0);
	return 0;
}
