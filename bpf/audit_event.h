/* Events from the auditor's BPF programs (audit.bpf.c) to userspace
 * (auditor/audit_*.c), through one ring buffer.  Plain fixed-size types only:
 * this header is compiled for both sides. */
#ifndef SHMGUARD_BPF_AUDIT_EVENT_H
#define SHMGUARD_BPF_AUDIT_EVENT_H

#define SG_AUDIT_MAX_DEVS 8
#define SG_AUDIT_NAME_MAX 256
#define SG_AUDIT_COMM_LEN 16

enum sg_audit_event_type {
	SG_AUDIT_CREATE = 1, /* a file was created on a shm device */
	SG_AUDIT_TAG = 2,    /* the shim tagged a file it created (USDT) */
};

struct sg_audit_header {
	__u32 type;
	__u32 tgid; /* process of the current task */
	__u64 ts_ns;
	char comm[SG_AUDIT_COMM_LEN];
};

/* A new regular file, not yet named.  Nothing else about files is sent:
 * names and what is left are read from the filesystem and /proc when the
 * auditor measures. */
struct sg_audit_create {
	struct sg_audit_header h;
	__u64 ino;
	__u32 dev; /* the kernel's encoding: major << 20 | minor */
	__u32 pad;
};

struct sg_audit_tag {
	struct sg_audit_header h;
	__u64 dev; /* st_dev as userspace sees it */
	__u64 ino;
	char request[SG_AUDIT_NAME_MAX];
};

#endif
