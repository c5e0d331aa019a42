// SPDX-License-Identifier: GPL-2.0
/* The auditor's second kernel side: files on the followed devices as they
 * are freed, so that their records leave the table at once instead of at
 * the review's next look (auditor/audit_review.c).  tmpfs frees a file's
 * inode, and its pages with it, in shmem_evict_inode(), which runs only
 * once its last link, descriptor and mapping are gone: exact for files
 * unlinked but still mapped, whose bytes count until then.  No tracepoint
 * is there, so this needs fentry or kprobe; userspace loads this object
 * where the kernel allows one of them and otherwise leaves the freeing to
 * the review.  Its own object: a kernel that refuses it costs the other
 * programs nothing. */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "audit_event.h"
#include "audit_maps.bpf.h"

char LICENSE[] SEC("license") = "GPL";

/* A free not sent costs nothing but time: its record waits for the
 * review.  So a free is not sent while the buffer is half full (a pod's
 * tmpfs unmounted frees all its files at once), leaving the room to the
 * creations, whose loss would make a figure wrong; these are counted, as
 * are those the buffer had no room for (dropped), and neither fails a gate. */
__u64 skipped = 0;

static __always_inline int on_evict(struct inode *inode)
{
	__u32 dev = BPF_CORE_READ(inode, i_sb, s_dev);
	struct sg_audit_freed *e;

	if ((BPF_CORE_READ(inode, i_mode) & S_IFMT) != S_IFREG || !on_shm_dev(dev))
		return 0;
	if (bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) > bpf_ringbuf_query(&events, BPF_RB_RING_SIZE) / 2) {
		__sync_fetch_and_add(&skipped, 1);
		return 0;
	}
	if (!(e = reserve(sizeof(*e))))
		return 0;
	__builtin_memset(&e->h, 0, sizeof(e->h));
	e->h.type = SG_AUDIT_FREED;
	e->h.ts_ns = bpf_ktime_get_ns();
	e->ino = BPF_CORE_READ(inode, i_ino);
	e->dev = dev;
	e->pad = 0;
	submit(e);
	return 0;
}

SEC("fentry/shmem_evict_inode")
int BPF_PROG(fentry_shmem_evict_inode, struct inode *inode)
{
	return on_evict(inode);
}

SEC("kprobe/shmem_evict_inode")
int BPF_KPROBE(kprobe_shmem_evict_inode, struct inode *inode)
{
	return on_evict(inode);
}
