// SPDX-License-Identifier: GPL-2.0
/* The auditor's kernel side.  It sees files created on the shm devices
 * through the ctime tracepoints (a new inode gets its first ctime), so it
 * costs nothing to system calls that change no ctime and next to nothing to
 * the others; syscall tracepoints would put every system call of every
 * process on the slow path.  The traced process
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

/* Waking the reader for every event would cost the traced program an
 * inter-processor interrupt per file operation; the reader polls every few
 * milliseconds instead, and is woken only when the buffer fills up. */
#define WAKEUP_BYTES (256 << 10)

static __always_inline void submit(void *e)
{
	long pending = bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA);

	bpf_ringbuf_submit(e, pending >= WAKEUP_BYTES ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP);
}

static __always_inline void *reserve(__u64 size)
{
	void *e = bpf_ringbuf_reserve(&events, size, 0);

	if (!e)
		__sync_fetch_and_add(&dropped, 1);
	return e;
}

/* Every ctime change comes here, on every filesystem: the common cases
 * leave after one or two reads.  tmpfs pins a dentry for every name, so a
 * linked inode without one is being created right now (its ctime is set
 * before its name). */
static __always_inline int on_ctime(struct inode *inode)
{
	struct sg_audit_create *e;
	__u32 dev, tgid = bpf_get_current_pid_tgid() >> 32;

	if (BPF_CORE_READ(inode, i_dentry.first) || !BPF_CORE_READ(inode, __i_nlink))
		return 0;
	dev = BPF_CORE_READ(inode, i_sb, s_dev);
	if (!on_shm_dev(dev) || (BPF_CORE_READ(inode, i_mode) & S_IFMT) != S_IFREG || !in_tree(tgid))
		return 0;
	e = reserve(sizeof(*e));
	if (!e)
		return 0;
	fill_header(&e->h, SG_AUDIT_CREATE);
	e->ino = BPF_CORE_READ(inode, i_ino);
	e->dev = dev;
	submit(e);
	return 0;
}

/* A new inode's first ctime: with multigrain timestamps (tmpfs since 6.13)
 * it is exchanged in, or skipped when the recycled inode memory already
 * holds the same coarse time; without, it is set plainly. */
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
	submit(e);
	return 0;
}
