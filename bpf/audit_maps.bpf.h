/* What both of the auditor's BPF objects use: the ring buffer of events,
 * the followed devices, and the file type bits.  audit.bpf.c's are the maps themselves;
 * audit_freed.bpf.c is given the same ones by userspace before it loads
 * (bpf_map__reuse_fd), so that its events come in the same order. */
#ifndef SHMGUARD_BPF_AUDIT_MAPS_H
#define SHMGUARD_BPF_AUDIT_MAPS_H

#define S_IFMT 00170000
#define S_IFREG 0100000

/* Events the ring buffer had no room for: never silently lost (one count
 * per object: userspace reads each). */
__u64 dropped = 0;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 << 20);
} events SEC(".maps");

/* The followed devices, updated by userspace as roots are found and
 * forgotten.  A filesystem without a block device (tmpfs: major 0) is
 * numbered by its minor alone, and those are a bit each in anon_devs,
 * looked at by an array's lookup, which the verifier inlines: every ctime
 * change of every filesystem asks.  Others (a root on a disk's
 * filesystem) are in shm_devs (dev -> 1). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SG_AUDIT_ANON_MINORS / 64);
	__type(key, __u32);
	__type(value, __u64);
} anon_devs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SG_AUDIT_MAX_ROOTS);
	__type(key, __u32);
	__type(value, __u8);
} shm_devs SEC(".maps");

static __always_inline bool on_shm_dev(__u32 dev)
{
	if (SG_AUDIT_KDEV_MAJOR(dev) == 0) {
		__u32 minor = SG_AUDIT_KDEV_MINOR(dev), word = minor / 64;
		__u64 *bits = bpf_map_lookup_elem(&anon_devs, &word);

		return bits && (*bits >> (minor % 64) & 1);
	}
	return bpf_map_lookup_elem(&shm_devs, &dev);
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

#endif
