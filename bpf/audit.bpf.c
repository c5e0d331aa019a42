// SPDX-License-Identifier: GPL-2.0
/* The auditor's kernel side: files created and renamed or linked on the shm
 * devices, the traced process tree (fork and exit) and the shim's tags
 * (USDT).  One object carries every way a kernel may offer to see a file
 * being created; userspace chooses one at start (autoload) and the others
 * are never loaded:
 *   ctime     the ctime tracepoints (Linux 6.13), BTF-typed (tp_btf): a
 *             new inode gets its first ctime before it has a name; nothing
 *             else costs more than a few reads.
 *   fentry    d_instantiate (a name given to an inode: creation or link)
 *   kprobe    and d_move (rename), where the kernel allows them.
 *   syscalls  the exit of every system call (raw tracepoint): works
 *             everywhere, but slows every system call of every process, so
 *             it leaves at the first test that fails.
 * The opens of followed files that did not create them (watch's attachers)
 * are seen where userspace asks, by a program of their own on vfs_open
 * (fentry or kprobe: opens alone pay), else by the syscalls' exit. */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/usdt.bpf.h>

#include "audit_event.h"
#include "audit_maps.bpf.h"

char LICENSE[] SEC("license") = "GPL";

/* Set by userspace between open and load. */
const volatile bool discover = false; /* report tmpfs devices not followed (SG_AUDIT_NEW_DEV) */
const volatile bool follow_tree = false; /* only count creations by the traced tree */
/* What the exit of an open reports: the files it created (the syscalls
 * probe), and the followed files it opened without creating them (where no
 * probe on vfs_open is allowed). */
const volatile bool syscall_creations = false;
const volatile bool attach_at_exit = false;
/* The auditor's pid namespace (its nsfs inode): every process id this side
 * uses or sends is the one that namespace gives, so that it matches what
 * the auditor forks and sees in its /proc; 0 for a process outside it. */
const volatile __u32 pidns_ino = 0;
/* That namespace is the initial one: its numbers are the kernel's own
 * (task->tgid), read without walking a task's pid levels. */
const volatile bool pidns_is_initial = false;
/* The system calls the syscalls probe follows, as this architecture numbers
 * them (-1: it has no such call). */
const volatile long nr_open = -1, nr_creat = -1, nr_openat = -1, nr_openat2 = -1;
const volatile long nr_rename = -1, nr_renameat = -1, nr_renameat2 = -1, nr_link = -1, nr_linkat = -1;

/* Processes of the traced tree (tgid -> 1), seeded by userspace. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, __u8);
} tree SEC(".maps");

/* The roots' directories (for the ctime probe), updated by userspace as
 * roots are found and forgotten, with the devices (audit_maps.bpf.h). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SG_AUDIT_MAX_ROOTS);
	__type(key, struct sg_audit_root_key);
	__type(value, __u8);
} root_dirs SEC(".maps");

/* tmpfs filesystems not followed that were reported (SG_AUDIT_NEW_DEV),
 * with when: each is reported again at most every RENOTIFY_NS, so that a
 * tmpfs elsewhere (/run, memfd's) costs userspace a look at the mounts that
 * rarely.  Keyed by device and superblock: a device number is used again by
 * the next tmpfs mounted once the last one is gone (a pod after a pod),
 * which is a new filesystem, reported at once unless its superblock took
 * the memory of the last one too.  LRU: they cannot fill it for good. */
#define RENOTIFY_NS (10 * 1000000000ull)
/* For this long after a tmpfs is first seen, its files' creations are sent
 * too: userspace keeps their creators for the catch-up of its root, found
 * a moment later (a pod's first files).  Only then: a tmpfs that is no
 * root (/run, /tmp) costs that much once. */
#define EARLY_NS (3 * 1000000000ull)
struct unknown_key {
	__u64 sb;
	__u32 dev;
	__u32 pad;
};

struct unknown_seen {
	__u64 first_ns, reported_ns;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, struct unknown_key);
	__type(value, struct unknown_seen);
} unknown_devs SEC(".maps");

#define FMODE_CREATED 0x100000 /* the open created the file (4.19 and later) */
#define FMODE_PATH 0x4000       /* an O_PATH descriptor: no access to the contents */
#define O_PATH 010000000        /* in f_flags before vfs_open sets f_mode */

#define TMPFS_MAGIC 0x01021994

/* Pid namespaces nest at most this deep (the kernel's MAX_PID_NS_LEVEL). */
#define MAX_PIDNS_LEVEL 32

/* task's process id in the auditor's pid namespace, as task_tgid_nr_ns()
 * finds it: the number its thread group's pid has at the level of that
 * namespace; 0 when the task is not in it or a namespace below it. */
static __always_inline __u32 seen_tgid(struct task_struct *task)
{
	struct pid *pid;
	unsigned int level;

	if (pidns_is_initial)
		return BPF_CORE_READ(task, tgid);
	pid = BPF_CORE_READ(task, signal, pids[PIDTYPE_TGID]);
	if (!pid)
		return 0;
	level = BPF_CORE_READ(pid, level);
	for (unsigned int i = 0; i <= MAX_PIDNS_LEVEL && i <= level; i++)
		if (BPF_CORE_READ(pid, numbers[i].ns, ns.inum) == pidns_ino)
			return BPF_CORE_READ(pid, numbers[i].nr);
	return 0;
}

static __always_inline __u32 current_tgid(void)
{
	if (pidns_is_initial)
		return bpf_get_current_pid_tgid() >> 32;
	return seen_tgid((struct task_struct *)bpf_get_current_task());
}

static __always_inline bool in_tree(__u32 tgid)
{
	return !follow_tree || bpf_map_lookup_elem(&tree, &tgid);
}

/* A regular file on a shm device, touched by the traced tree. */
static __always_inline bool followed(struct inode *inode)
{
	return inode && on_shm_dev(BPF_CORE_READ(inode, i_sb, s_dev)) &&
	       (BPF_CORE_READ(inode, i_mode) & S_IFMT) == S_IFREG && in_tree(current_tgid());
}

static __always_inline void fill_header(struct sg_audit_header *h, __u32 type)
{
	h->type = type;
	h->tgid = current_tgid();
	h->ts_ns = bpf_ktime_get_ns();
	bpf_get_current_comm(h->comm, sizeof(h->comm));
	h->cgroup_id = bpf_get_current_cgroup_id();
}

static __always_inline void report_create(struct inode *inode, struct dentry *d);

/* inode is being created and is not followed: if it is a regular file on a
 * tmpfs, its device is reported (a pod's /dev/shm, mounted since userspace
 * last looked), again at most every RENOTIFY_NS, and in the device's first
 * EARLY_NS the creation itself. */
static __always_inline void note_unfollowed(struct inode *inode)
{
	struct unknown_seen *seen, fresh;
	struct sg_audit_new_dev *e;
	struct unknown_key key = {};
	__u64 now;
	__u32 dev;

	if (!discover || !inode || (BPF_CORE_READ(inode, i_mode) & S_IFMT) != S_IFREG ||
	    BPF_CORE_READ(inode, i_sb, s_magic) != TMPFS_MAGIC || !in_tree(current_tgid()))
		return;
	dev = BPF_CORE_READ(inode, i_sb, s_dev);
	if (on_shm_dev(dev))
		return;
	key.sb = (__u64)BPF_CORE_READ(inode, i_sb);
	key.dev = dev;
	now = bpf_ktime_get_ns();
	seen = bpf_map_lookup_elem(&unknown_devs, &key);
	if (!seen || now - seen->first_ns < EARLY_NS)
		report_create(inode, NULL);
	if (seen && now - seen->reported_ns < RENOTIFY_NS)
		return;
	fresh.first_ns = seen ? seen->first_ns : now;
	fresh.reported_ns = now;
	if (bpf_map_update_elem(&unknown_devs, &key, &fresh, BPF_ANY))
		return;
	if (!(e = reserve(sizeof(*e)))) {
		bpf_map_delete_elem(&unknown_devs, &key); /* the next file tries again */
		return;
	}
	fill_header(&e->h, SG_AUDIT_NEW_DEV);
	e->dev = dev;
	e->pad = 0;
	submit(e);
}

/* A new inode: followed, or its device is noted. */
static __always_inline bool created_followed(struct inode *inode)
{
	if (followed(inode))
		return true;
	note_unfollowed(inode);
	return false;
}

/* Events with a name are built here and sent as long as their name is:
 * the ring buffer holds many more of them than at their full size. */
union named_event {
	struct sg_audit_create create;
	struct sg_audit_name name;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, union named_event);
} scratch SEC(".maps");

static __always_inline union named_event *build(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&scratch, &zero);
}

/* Sends the first offset + len bytes of e, len being what a string read
 * into e at offset returned: at least the terminating NUL. */
static __always_inline void send(void *e, __u64 offset, long len)
{
	long pending = bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA);
	__u64 n = len > 0 ? len : 1;

	if (n > SG_AUDIT_NAME_MAX)
		n = SG_AUDIT_NAME_MAX;
	if (len <= 0)
		((char *)e)[offset] = '\0';
	if (bpf_ringbuf_output(&events, e, offset + n,
			       pending >= WAKEUP_BYTES ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP))
		__sync_fetch_and_add(&dropped, 1);
}

static __always_inline long read_name(struct dentry *d, char *name)
{
	return bpf_probe_read_kernel_str(name, SG_AUDIT_NAME_MAX, BPF_CORE_READ(d, d_name.name));
}

static __always_inline __u64 cgroup_of(struct task_struct *task)
{
	return BPF_CORE_READ(task, cgroups, dfl_cgrp, kn, id);
}

/* The ancestors of the process whose group leader is leader, up to the
 * first process of its cgroup or a child of the host's PID 1 (which takes
 * no name handed over): the processes that started its instance. */
static __always_inline void fill_ancestors(struct sg_audit_create *e, struct task_struct *leader)
{
	struct task_struct *t = leader;

	e->whole = 0;
	e->nancestors = 0;
	for (__u32 i = 0; i <= SG_AUDIT_ANCESTORS; i++) {
		struct task_struct *p = BPF_CORE_READ(t, real_parent);
		__u32 global = p ? BPF_CORE_READ(p, tgid) : 0;

		if (!p || global <= 1 || cgroup_of(p) != cgroup_of(t)) {
			e->whole = 1;
			return;
		}
		if (i == SG_AUDIT_ANCESTORS)
			return;
		p = BPF_CORE_READ(p, group_leader);
		e->ancestors[i].tgid = seen_tgid(p);
		e->ancestors[i].start_ns = BPF_CORE_READ(p, start_boottime);
		if (!e->ancestors[i].tgid)
			return;
		e->nancestors = i + 1;
		t = p;
	}
}

/* The creating process's start and its parent's, as /proc shows them. */
static __always_inline void fill_creator(struct sg_audit_create *e)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	struct task_struct *leader = BPF_CORE_READ(task, group_leader);
	struct task_struct *parent = BPF_CORE_READ(leader, real_parent);

	/* start_boottime came with Linux 5.5: before, the start stays unknown. */
	if (!bpf_core_field_exists(leader->start_boottime)) {
		e->start_ns = e->parent_start_ns = 0;
		e->parent_tgid = 0;
		e->whole = e->nancestors = 0;
		return;
	}
	e->start_ns = BPF_CORE_READ(leader, start_boottime);
	e->parent_tgid = parent ? seen_tgid(parent) : 0;
	e->parent_start_ns = parent ? BPF_CORE_READ(parent, group_leader, start_boottime) : 0;
	fill_ancestors(e, leader);
}

/* inode was created, and is called d where the probe knows (else NULL). */
static __always_inline void report_create(struct inode *inode, struct dentry *d)
{
	union named_event *u = build();
	struct sg_audit_create *e;
	long len = 0;

	if (!u)
		return;
	e = &u->create;
	fill_header(&e->h, SG_AUDIT_CREATE);
	e->ino = BPF_CORE_READ(inode, i_ino);
	e->dev = BPF_CORE_READ(inode, i_sb, s_dev);
	e->pad = 0;
	e->pad2 = 0;
	fill_creator(e);
	e->dir_ino = 0;
	if (d) {
		len = read_name(d, e->name);
		e->dir_ino = BPF_CORE_READ(d, d_parent, d_inode, i_ino);
	}
	send(e, __builtin_offsetof(struct sg_audit_create, name), len);
}

/* inode is called d (renamed: just now, by a rename or link); it was in the
 * directory old_dir before (0 unknown). */
static __always_inline void report_name(struct inode *inode, struct dentry *d, __u64 old_dir, bool renamed)
{
	union named_event *u = build();
	struct sg_audit_name *e;

	if (!u)
		return;
	e = &u->name;
	fill_header(&e->h, SG_AUDIT_NAME);
	e->ino = BPF_CORE_READ(inode, i_ino);
	e->dev = BPF_CORE_READ(inode, i_sb, s_dev);
	e->renamed = renamed;
	e->old_dir_ino = old_dir;
	e->dir_ino = BPF_CORE_READ(d, d_parent, d_inode, i_ino);
	send(e, __builtin_offsetof(struct sg_audit_name, name), read_name(d, e->name));
}

/* ---- ctime: every ctime change comes here, on every filesystem (tp_btf). ---- */

/* The root directory each CPU found last, and the roots' generation then:
 * nearly every ctime change is of a file in the root the last one was in,
 * and a per-CPU array's lookup is inlined where root_dirs' hash is a call.
 * Userspace bumps roots_gen after it forgets a root, which empties every
 * CPU's entry at once.  An entry is written whole before it is read again:
 * tracepoint programs run with preemption off, and the ctime programs
 * never run inside one another. */
struct last_root {
	__u32 dev;
	__u32 gen;
	__u64 ino;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct last_root);
} last_root SEC(".maps");

__u32 roots_gen = 0;

static __always_inline bool is_root_dir(__u32 dev, __u64 ino)
{
	struct sg_audit_root_key key = {.dev = dev, .pad = 0, .ino = ino};
	__u32 zero = 0, gen = *(volatile __u32 *)&roots_gen;
	struct last_root *last = bpf_map_lookup_elem(&last_root, &zero);

	if (last && last->ino == ino && last->dev == dev && last->gen == gen)
		return true;
	if (!bpf_map_lookup_elem(&root_dirs, &key))
		return false;
	if (last)
		*last = (struct last_root){.dev = dev, .gen = gen, .ino = ino};
	return true;
}

/* Names sent for one ctime change of a file with several (hard links). */
#define MAX_ALIASES 4

/* The names of inode, whose first dentry alias is alias. */
static __always_inline void report_aliases(struct inode *inode, struct hlist_node *alias)
{
	for (int i = 0; i < MAX_ALIASES && alias; i++) {
		struct dentry *d = (void *)alias - bpf_core_field_offset(struct dentry, d_u.d_alias);

		report_name(inode, d, 0, false);
		alias = BPF_CORE_READ(alias, next);
	}
}

/* obj as a read-only BTF pointer of the type btf_id (Linux 6.2; the ctime
 * tracepoints came later): pointer arithmetic on a BTF pointer itself is
 * refused. */
extern void *bpf_rdonly_cast(const void *obj, __u32 btf_id) __ksym __weak;

/* The creating process's start and its parent's, read directly (the ctime
 * tracepoints came after start_boottime and bpf_get_current_task_btf). */
static __always_inline void fill_creator_btf(struct sg_audit_create *e)
{
	struct task_struct *leader = bpf_get_current_task_btf()->group_leader;
	struct task_struct *parent = leader->real_parent;

	e->start_ns = leader->start_boottime;
	e->parent_tgid = !parent ? 0 : pidns_is_initial ? parent->tgid : seen_tgid(parent);
	e->parent_start_ns = parent ? parent->group_leader->start_boottime : 0;
	fill_ancestors(e, leader);
}

/* inode, of the followed device dev, is being created: it has no name yet. */
static __always_inline void report_create_btf(struct inode *inode, __u32 dev)
{
	struct sg_audit_create *e = reserve(__builtin_offsetof(struct sg_audit_create, name) + 1);

	if (!e)
		return;
	fill_header(&e->h, SG_AUDIT_CREATE);
	e->ino = inode->i_ino;
	e->dir_ino = 0;
	e->dev = dev;
	e->pad = 0;
	fill_creator_btf(e);
	e->pad2 = 0;
	e->name[0] = '\0';
	submit(e);
}

/* tmpfs pins a dentry for every name, so a linked inode without one is
 * being created right now (its ctime is set before its name).  One with a
 * name is changing: written, truncated, or being renamed, linked or
 * unlinked (its names are still the old ones).  Most are single names in a
 * root, which the auditor's passes find: those cost nothing more.  The
 * others send their names: a file with several (a link, then the first
 * name removed, must not take away the name it was created with) and a file
 * outside the roots' directories (it may be on its way into one).
 * The inode's own fields, its dentry's and its creator's are read directly,
 * not through a helper call each: what needs nothing (an unlinked inode, a
 * file of a filesystem not followed that has a name, a directory on a shm
 * device, a single name in a root, a process not followed) ends after a
 * few loads and map lookups, the commonest first. */
static __always_inline int on_ctime_btf(struct inode *inode)
{
	unsigned int nlink = inode->__i_nlink;
	struct hlist_node *alias;
	struct dentry *d;
	__u32 dev;

	if (!nlink)
		return 0;
	dev = inode->i_sb->s_dev;
	if (!on_shm_dev(dev)) {
		if (discover && !inode->i_dentry.first)
			note_unfollowed(inode); /* being created */
		return 0;
	}
	if ((inode->i_mode & S_IFMT) != S_IFREG)
		return 0;
	alias = inode->i_dentry.first;
	if (alias && nlink < 2) { /* whoever changes it: the traced tree is not asked */
		d = bpf_rdonly_cast((void *)((__u64)alias - bpf_core_field_offset(struct dentry, d_u.d_alias)),
				    bpf_core_type_id_kernel(struct dentry));
		if (is_root_dir(dev, d->d_parent->d_inode->i_ino))
			return 0;
	}
	if (!in_tree(current_tgid()))
		return 0;
	if (alias)
		report_aliases(inode, alias);
	else
		report_create_btf(inode, dev);
	return 0;
}

/* With multigrain timestamps (tmpfs since 6.13) a new ctime is exchanged
 * in, or skipped when the recycled inode memory already holds the same
 * coarse time; without, it is set plainly. */
SEC("tp_btf/ctime_ns_xchg")
int BPF_PROG(ctime_ns_xchg, struct inode *inode)
{
	return on_ctime_btf(inode);
}

SEC("tp_btf/ctime_xchg_skip")
int BPF_PROG(ctime_xchg_skip, struct inode *inode)
{
	return on_ctime_btf(inode);
}

SEC("tp_btf/inode_set_ctime_to_ts")
int BPF_PROG(inode_set_ctime_to_ts, struct inode *inode)
{
	return on_ctime_btf(inode);
}

/* ---- fentry and kprobe: the dcache calls every filesystem makes. ---- */

/* A name given to an inode: a new inode has one link, a linked one more. */
static __always_inline int on_instantiate(struct dentry *d, struct inode *inode)
{
	if (inode && BPF_CORE_READ(inode, __i_nlink) <= 1 ? !created_followed(inode) : !followed(inode))
		return 0;
	if (BPF_CORE_READ(inode, __i_nlink) <= 1)
		report_create(inode, d);
	else
		report_name(inode, d, 0, true);
	return 0;
}

/* d takes target's name and place (a rename). */
static __always_inline int on_move(struct dentry *d, struct dentry *target)
{
	struct inode *inode = BPF_CORE_READ(d, d_inode);

	if (followed(inode))
		report_name(inode, target, BPF_CORE_READ(d, d_parent, d_inode, i_ino), true);
	return 0;
}

SEC("fentry/d_instantiate")
int BPF_PROG(fentry_d_instantiate, struct dentry *d, struct inode *inode)
{
	return on_instantiate(d, inode);
}

SEC("fentry/d_move")
int BPF_PROG(fentry_d_move, struct dentry *d, struct dentry *target)
{
	return on_move(d, target);
}

SEC("kprobe/d_instantiate")
int BPF_KPROBE(kprobe_d_instantiate, struct dentry *d, struct inode *inode)
{
	return on_instantiate(d, inode);
}

SEC("kprobe/d_move")
int BPF_KPROBE(kprobe_d_move, struct dentry *d, struct dentry *target)
{
	return on_move(d, target);
}

/* The opens reported lately, by process and file: a process opening the
 * same file again and again sends it once, so that a loop of opens cannot
 * fill the ring buffer and crowd out the creations.  A process is its pid
 * and start, a file its inode number and generation (random on tmpfs), so
 * that a reused pid or inode number is another pair.  LRU: a pair pushed
 * out is reported again, which costs an event, never a record missed. */
struct attach_key {
	__u64 ino;
	__u64 start_ns;
	__u32 dev;
	__u32 tgid;
	__u32 generation;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct attach_key);
	__type(value, __u8);
} attach_seen SEC(".maps");

/* An open of a file in a root that did not create it. */
static __always_inline void report_attached(struct inode *inode, struct dentry *d)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	struct sg_audit_attach *e;
	__u32 dev = BPF_CORE_READ(inode, i_sb, s_dev);
	__u64 dir = BPF_CORE_READ(d, d_parent, d_inode, i_ino);
	__u64 start = bpf_core_field_exists(task->start_boottime) ? BPF_CORE_READ(task, group_leader, start_boottime) : 0;
	struct attach_key key = {.ino = BPF_CORE_READ(inode, i_ino), .start_ns = start, .dev = dev,
				 .tgid = current_tgid(), .generation = BPF_CORE_READ(inode, i_generation), .pad = 0};
	__u8 one = 1;

	if (!is_root_dir(dev, dir) || bpf_map_lookup_elem(&attach_seen, &key))
		return;
	if (!(e = reserve(sizeof(*e))))
		return;
	fill_header(&e->h, SG_AUDIT_ATTACH);
	e->ino = key.ino;
	e->dir_ino = dir;
	e->dev = dev;
	e->pad = 0;
	e->start_ns = start;
	submit(e);
	/* Counted once it is sent: an event the buffer had no room for is tried again. */
	bpf_map_update_elem(&attach_seen, &key, &one, BPF_ANY);
}

/* ---- attachers: vfs_open, as a file is being opened (not O_PATH). ---- */

static __always_inline int on_vfs_open(const struct path *path, struct file *file)
{
	struct dentry *d = BPF_CORE_READ(path, dentry);
	struct inode *inode = BPF_CORE_READ(d, d_inode);

	/* A creation has FMODE_CREATED by now; its creator is recorded already. */
	if (!(BPF_CORE_READ(file, f_mode) & FMODE_CREATED) && !(BPF_CORE_READ(file, f_flags) & O_PATH) &&
	    followed(inode))
		report_attached(inode, d);
	return 0;
}

SEC("fentry/vfs_open")
int BPF_PROG(fentry_vfs_open, const struct path *path, struct file *file)
{
	return on_vfs_open(path, file);
}

SEC("kprobe/vfs_open")
int BPF_KPROBE(kprobe_vfs_open, const struct path *path, struct file *file)
{
	return on_vfs_open(path, file);
}

/* ---- syscalls: the exit of every system call of every process. ---- */

static __always_inline long syscall_nr(struct pt_regs *regs)
{
#if defined(__TARGET_ARCH_x86)
	return BPF_CORE_READ(regs, orig_ax);
#elif defined(__TARGET_ARCH_arm64)
	return BPF_CORE_READ(regs, syscallno);
#else
#error "syscall_nr: unknown architecture"
#endif
}

/* An open that returned fd: the file it created, if it created one and
 * creations are seen here; a followed file it opened, if attachers are
 * (an O_PATH open, as ls makes, only looks at it). */
static __always_inline void on_open(long fd)
{
	struct task_struct *task = (void *)bpf_get_current_task();
	struct file **fds = BPF_CORE_READ(task, files, fdt, fd), *file = NULL;
	struct inode *inode;
	fmode_t mode;

	if (bpf_probe_read_kernel(&file, sizeof(file), &fds[fd]) || !file)
		return;
	inode = BPF_CORE_READ(file, f_inode);
	mode = BPF_CORE_READ(file, f_mode);
	if (mode & FMODE_CREATED) {
		if (syscall_creations && created_followed(inode))
			report_create(inode, BPF_CORE_READ(file, f_path.dentry));
	} else if (attach_at_exit && !(mode & FMODE_PATH) && followed(inode)) {
		report_attached(inode, BPF_CORE_READ(file, f_path.dentry));
	}
}

/* A rename or link that succeeded: its new path as the process wrote it
 * (relative or not); the inode is found by userspace. */
static __always_inline void on_renamed(const char *path)
{
	union named_event *u;
	struct sg_audit_name *e;

	if (!in_tree(current_tgid()) || !(u = build()))
		return;
	e = &u->name;
	fill_header(&e->h, SG_AUDIT_NAME);
	e->ino = e->dir_ino = e->old_dir_ino = 0;
	e->dev = 0;
	e->renamed = 1;
	send(e, __builtin_offsetof(struct sg_audit_name, name),
	     bpf_probe_read_user_str(e->name, sizeof(e->name), path));
}

SEC("raw_tp/sys_exit")
int BPF_PROG(sys_exit, struct pt_regs *regs, long ret)
{
	long nr;

	if (ret < 0)
		return 0;
	nr = syscall_nr(regs);
	if (nr == nr_openat || nr == nr_open || nr == nr_creat || nr == nr_openat2)
		on_open(ret);
	else if (!syscall_creations)
		return 0;
	else if (ret == 0 && (nr == nr_rename || nr == nr_link))
		on_renamed((const char *)PT_REGS_PARM2_CORE_SYSCALL(regs));
	else if (ret == 0 && (nr == nr_renameat || nr == nr_renameat2 || nr == nr_linkat))
		on_renamed((const char *)PT_REGS_PARM4_CORE_SYSCALL(regs));
	return 0;
}

/* ---- The traced tree grows with its forks and shrinks with its exits. ---- */
SEC("raw_tp/sched_process_fork")
int BPF_PROG(sched_process_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ptgid, ctgid;
	__u8 one = 1;

	/* A new thread has its process's tgid: only new processes count. */
	if (!follow_tree || BPF_CORE_READ(parent, tgid) == BPF_CORE_READ(child, tgid))
		return 0;
	ptgid = seen_tgid(parent);
	ctgid = seen_tgid(child);
	if (ptgid && ctgid && bpf_map_lookup_elem(&tree, &ptgid))
		bpf_map_update_elem(&tree, &ctgid, &one, BPF_ANY);
	return 0;
}

/* The last thread of a process has left when its signal struct has no live
 * one (the tracepoint's group_dead argument only came with Linux 6.13, and a
 * raw tracepoint program may not read past the arguments its kernel has). */
SEC("raw_tp/sched_process_exit")
int BPF_PROG(sched_process_exit, struct task_struct *task)
{
	__u32 tgid;

	if (!follow_tree || BPF_CORE_READ(task, signal, live.counter) || !(tgid = seen_tgid(task)))
		return 0;
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
