/* Events from the auditor's BPF programs (audit.bpf.c) to userspace
 * (auditor/audit_*.c), through one ring buffer.  Plain fixed-size types only:
 * this header is compiled for both sides. */
#ifndef SHMGUARD_BPF_AUDIT_EVENT_H
#define SHMGUARD_BPF_AUDIT_EVENT_H

#define SG_AUDIT_MAX_DEVS 8
#define SG_AUDIT_NAME_MAX 256
#define SG_AUDIT_COMM_LEN 16

enum sg_audit_event_type {
	SG_AUDIT_INODE = 1, /* an inode on a shm device changed */
	SG_AUDIT_TAG = 2,   /* the shim tagged a file it created (USDT) */
};

/* What the name of an inode event holds. */
enum sg_audit_name_kind {
	SG_AUDIT_NAME_NONE = 0,
	SG_AUDIT_NAME_DENTRY = 1, /* the file's own name in its directory */
	SG_AUDIT_NAME_PATH = 2,   /* the path the creating system call was given */
};

struct sg_audit_header {
	__u32 type;
	__u32 tgid; /* process of the current task */
	__u64 ts_ns;
	char comm[SG_AUDIT_COMM_LEN];
};

/* Fired by the ctime tracepoints: creation (nlink > 0, no name yet),
 * resize, rename, unlink (nlink 0)... */
struct sg_audit_inode {
	struct sg_audit_header h;
	__u64 ino;
	__u64 parent_ino; /* directory holding the name, with NAME_DENTRY */
	__s64 size;
	__u64 blocks; /* 512-byte units */
	__u32 dev;    /* the kernel's encoding: major << 20 | minor */
	__u32 nlink;
	__u32 created; /* first event of a new inode */
	__u32 name_kind;
	char name[SG_AUDIT_NAME_MAX];
};

struct sg_audit_tag {
	struct sg_audit_header h;
	__u64 dev; /* st_dev as userspace sees it */
	__u64 ino;
	char request[SG_AUDIT_NAME_MAX];
};

#endif
