/* Events from the auditor's BPF programs (audit.bpf.c) to userspace
 * (auditor/audit_*.c), through one ring buffer.  Plain fixed-size types only:
 * this header is compiled for both sides. */
#ifndef SHMGUARD_BPF_AUDIT_EVENT_H
#define SHMGUARD_BPF_AUDIT_EVENT_H

/* The devices and root directories the kernel side follows are maps
 * userspace updates as roots come and go; at most this many of each. */
#define SG_AUDIT_MAX_ROOTS 16384
/* The kernel's own device numbers (a superblock's s_dev): 12 bits of
 * major, 20 of minor.  Filesystems without a block device (tmpfs) have
 * major 0, and their minors go up to SG_AUDIT_ANON_MINORS. */
#define SG_AUDIT_KDEV_MAJOR(dev) ((dev) >> 20)
#define SG_AUDIT_KDEV_MINOR(dev) ((dev) & 0xfffffu)
#define SG_AUDIT_ANON_MINORS (1u << 20)
#define SG_AUDIT_NAME_MAX 256
#define SG_AUDIT_COMM_LEN 16
/* A creator's ancestors are sent up to this many. */
#define SG_AUDIT_ANCESTORS 8

enum sg_audit_event_type {
	SG_AUDIT_CREATE = 1, /* a file was created on a shm device */
	SG_AUDIT_TAG = 2,    /* the shim tagged a file it created (USDT) */
	SG_AUDIT_NAME = 3,   /* a file on a shm device has a name (rename, link) */
	SG_AUDIT_NEW_DEV = 4, /* a regular file was created on a tmpfs not followed */
	SG_AUDIT_ATTACH = 5,  /* a followed file was opened, not created (watch's attachers) */
	SG_AUDIT_FREED = 6,   /* a file on a shm device was freed (audit_freed.bpf.c) */
};

struct sg_audit_header {
	__u32 type;
	__u32 tgid; /* process of the current task */
	__u64 ts_ns;
	char comm[SG_AUDIT_COMM_LEN];
	__u64 cgroup_id;
};

/* A new regular file, with its first name where the probe sees one (not the
 * ctime tracepoints: they fire before the name exists).  Sizes and what is
 * left are read from the filesystem and /proc when the auditor measures. */
struct sg_audit_create {
	struct sg_audit_header h;
	__u64 ino;
	__u64 dir_ino; /* the name's directory, 0 with no name */
	__u32 dev;     /* the kernel's encoding: major << 20 | minor */
	__u32 pad;
	/* Who created it, read as it happened (a creator may be gone before
	 * userspace looks): its process's start and its parent's, in
	 * CLOCK_BOOTTIME ns (what /proc/PID/stat's field 22 counts in ticks). */
	__u64 start_ns;
	__u64 parent_start_ns;
	__u32 parent_tgid; /* 0: outside the auditor's pid namespace */
	/* The creator's ancestors, its parent first, up to the first process
	 * of its cgroup (whose parent is in another cgroup) or a child of the
	 * host's PID 1: whole is 1 when ancestors[0..nancestors) are all of
	 * them, 0 when there were more, or one outside the auditor's pid
	 * namespace, or no start times (before Linux 5.5). */
	__u32 whole;
	__u32 nancestors;
	__u32 pad2;
	struct {
		__u64 start_ns;
		__u32 tgid;
		__u32 pad;
	} ancestors[SG_AUDIT_ANCESTORS];
	char name[SG_AUDIT_NAME_MAX]; /* "" unknown; sent up to its NUL */
};

/* A name of a file, so that attribution follows renames and links whenever
 * they happen.  renamed: a rename or a link just gave it this name (fentry,
 * kprobe, syscalls); otherwise the name it has as it changes (the ctime
 * tracepoints fire before a rename or link takes effect).  The syscall
 * probe knows no inode: ino is 0 and name is the path as the process gave
 * it (userspace looks it up). */
struct sg_audit_name {
	struct sg_audit_header h;
	__u64 ino;
	__u64 dir_ino;     /* where the name is, 0 unknown */
	__u64 old_dir_ino; /* where the file was before, 0 unknown */
	__u32 dev;
	__u32 renamed;
	char name[SG_AUDIT_NAME_MAX]; /* sent up to its NUL */
};

/* An open of a file in a followed root that did not create it: who may
 * use the name again (watch records them as the file's attachers). */
struct sg_audit_attach {
	struct sg_audit_header h;
	__u64 ino;
	__u64 dir_ino;  /* the directory of the name it was opened by */
	__u64 start_ns; /* the opening process's start (CLOCK_BOOTTIME ns), 0 unknown */
	__u32 dev;
	__u32 pad;
};

/* A file on a followed device whose inode is being evicted: its last
 * name, descriptor and mapping are gone, and so are its bytes.  The header
 * has the type and the time only (who ends a file's last use says nothing
 * of the file). */
struct sg_audit_freed {
	struct sg_audit_header h;
	__u64 ino;
	__u32 dev;
	__u32 pad;
};

/* A followed root directory: the key of the kernel side's root map. */
struct sg_audit_root_key {
	__u32 dev;
	__u32 pad; /* 0 */
	__u64 ino;
};

/* Sent once per device (the kernel side remembers it until userspace
 * forgets it), so that userspace looks for new mounts at once. */
struct sg_audit_new_dev {
	struct sg_audit_header h;
	__u32 dev;
	__u32 pad;
};

struct sg_audit_tag {
	struct sg_audit_header h;
	__u64 dev; /* st_dev as userspace sees it */
	__u64 ino;
	char request[SG_AUDIT_NAME_MAX];
};

#endif
