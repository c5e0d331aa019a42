#include "audit_trace.h"

#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "audit.skel.h"
#include "audit_event.h"
#include "audit_freed.skel.h"
#include "holders.h"

struct audit_tracer {
	struct audit_bpf *skel;
	struct audit_freed_bpf *freed; /* NULL: freed files are not seen */
	struct ring_buffer *rb; /* the links are the skeletons' own (skel->links) */
	bool usdt;
	const char *probe; /* the kind of programs that see files created */
	const char *attach_probe; /* and opens, or NULL */
	const char *freed_probe; /* and frees, or NULL (freed_why says why) */
	char freed_why[160];
	bool seccomp_refused; /* an EPERM from bpf() was a seccomp filter's */
	audit_trace_event_fn *on_event;
	void *ctx;
};

static bool verbose;

static int print_libbpf(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_DEBUG || !verbose)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

_Static_assert(AUDIT_EVENT_COMM_LEN == SG_AUDIT_COMM_LEN && AUDIT_EVENT_NAME_MAX == SG_AUDIT_NAME_MAX,
	       "the decoded event holds what the kernel side sends");

/* An event with a name ends with it, NUL included (the kernel side sends
 * only that much). */
#define NAMED_SIZE(type) (offsetof(type, name) + 1)

/* The string at s, room bytes at most: "" when it has no NUL there. */
static const char *string_in(const char *s, size_t room)
{
	return memchr(s, '\0', room) ? s : "";
}

/* The least each type of event takes: an event with a name ends with it,
 * NUL included (the kernel side sends only that much). */
static const size_t event_size[] = {
	[SG_AUDIT_CREATE] = NAMED_SIZE(struct sg_audit_create),
	[SG_AUDIT_TAG] = sizeof(struct sg_audit_tag),
	[SG_AUDIT_NAME] = NAMED_SIZE(struct sg_audit_name),
	[SG_AUDIT_NEW_DEV] = sizeof(struct sg_audit_new_dev),
	[SG_AUDIT_ATTACH] = sizeof(struct sg_audit_attach),
	[SG_AUDIT_FREED] = sizeof(struct sg_audit_freed),
};

bool audit_trace_decode(const void *data, size_t size, struct audit_event *e)
{
	const struct sg_audit_header *h = data;
	const struct sg_audit_create *c = data;
	const struct sg_audit_name *n = data;
	const struct sg_audit_tag *g = data;
	const struct sg_audit_attach *at = data;
	const struct sg_audit_freed *f = data;
	const struct sg_audit_new_dev *d = data;

	/* The size checked once, for the type: each case below reads only
	 * what its type's size covers. */
	if (size < sizeof(*h) || h->type >= sizeof(event_size) / sizeof(event_size[0]) || !event_size[h->type] ||
	    size < event_size[h->type])
		return false;
	*e = (struct audit_event){.type = h->type, .tgid = h->tgid, .ts_ns = h->ts_ns, .cgroup_id = h->cgroup_id};
	memcpy(e->comm, h->comm, sizeof(e->comm));
	e->comm[sizeof(e->comm) - 1] = '\0';
	switch (h->type) {
	case SG_AUDIT_CREATE:
		e->kdev = c->dev;
		e->ino = c->ino;
		e->dir_ino = c->dir_ino;
		e->start_ns = c->start_ns;
		e->parent_start_ns = c->parent_start_ns;
		e->parent_tgid = c->parent_tgid;
		_Static_assert(AUDIT_EVENT_ANCESTORS == SG_AUDIT_ANCESTORS, "every ancestor sent is decoded");
		e->ancestors_whole = c->whole && c->nancestors <= SG_AUDIT_ANCESTORS;
		e->nancestors = c->nancestors <= SG_AUDIT_ANCESTORS ? c->nancestors : 0;
		for (uint32_t i = 0; i < e->nancestors; i++) {
			e->ancestors[i].tgid = c->ancestors[i].tgid;
			e->ancestors[i].start_ns = c->ancestors[i].start_ns;
		}
		e->name = string_in(c->name, size - offsetof(struct sg_audit_create, name));
		break;
	case SG_AUDIT_NAME:
		e->kdev = n->dev;
		e->ino = n->ino;
		e->dir_ino = n->dir_ino;
		e->old_dir_ino = n->old_dir_ino;
		e->renamed = n->renamed;
		e->name = string_in(n->name, size - offsetof(struct sg_audit_name, name));
		break;
	case SG_AUDIT_TAG:
		e->kdev = sg_kdev(g->dev);
		e->ino = g->ino;
		e->name = string_in(g->request, sizeof(g->request));
		break;
	case SG_AUDIT_ATTACH:
		e->kdev = at->dev;
		e->ino = at->ino;
		e->dir_ino = at->dir_ino;
		e->start_ns = at->start_ns;
		break;
	case SG_AUDIT_FREED:
		e->kdev = f->dev;
		e->ino = f->ino;
		break;
	case SG_AUDIT_NEW_DEV:
		e->kdev = d->dev;
		break;
	}
	return true;
}

static int on_event(void *ctx, void *data, size_t size)
{
	struct audit_tracer *t = ctx;
	struct audit_event e;

	if (t->on_event && audit_trace_decode(data, size, &e))
		t->on_event(t->ctx, &e);
	return 0;
}

/* The ways to see files being created, best first (see audit.bpf.c). */
enum probe_kind { PROBE_CTIME, PROBE_FENTRY, PROBE_KPROBE, PROBE_SYSCALLS, NPROBES };

static const char *const probe_names[NPROBES] = {"ctime", "fentry", "kprobe", "syscalls"};

const char *const audit_probe_list = "ctime, fentry, kprobe, syscalls";

/* The ways to see opens (attachers), best first: vfs_open costs opens alone,
 * the system calls' exit costs every system call. */
enum attach_kind { ATTACH_NONE, ATTACH_FENTRY, ATTACH_KPROBE, ATTACH_EXIT };

static const char *const attach_names[] = {NULL, "fentry", "kprobe", "syscalls"};

/* Those to try with creation probe k, in order (*n of them): the kind the
 * creations use where it has one, else each. */
static const enum attach_kind *attach_kinds(enum probe_kind k, bool wanted, size_t *n)
{
	static const enum attach_kind none[] = {ATTACH_NONE}, fentry[] = {ATTACH_FENTRY}, kprobe[] = {ATTACH_KPROBE},
				      exit_[] = {ATTACH_EXIT}, any[] = {ATTACH_FENTRY, ATTACH_KPROBE, ATTACH_EXIT};

	*n = 1;
	if (!wanted)
		return none;
	if (k == PROBE_FENTRY || k == PROBE_KPROBE || k == PROBE_SYSCALLS)
		return k == PROBE_FENTRY ? fentry : k == PROBE_KPROBE ? kprobe : exit_;
	*n = sizeof(any) / sizeof(any[0]);
	return any;
}

int audit_probe_by_name(const char *name)
{
	for (int k = 0; k < NPROBES; k++)
		if (strcmp(name, probe_names[k]) == 0)
			return k;
	return -1;
}

/* Each program of a kind, and what the kernel's BTF must have for it: a
 * tracepoint's type, or the function an fentry program attaches to. */
struct kind_program {
	enum probe_kind kind;
	struct bpf_program *prog;
	struct bpf_link **link; /* its place in skel->links */
	const char *btf_name;
	int btf_kind;
};

/* The programs that see files, of every kind. */
#define NPROGRAMS 8

static size_t kind_programs(struct audit_bpf *s, struct kind_program out[NPROGRAMS])
{
	const struct kind_program all[] = {
#define PROG(name) s->progs.name, &s->links.name
		{PROBE_CTIME, PROG(ctime_ns_xchg), "btf_trace_ctime_ns_xchg", BTF_KIND_TYPEDEF},
		{PROBE_CTIME, PROG(ctime_xchg_skip), "btf_trace_ctime_xchg_skip", BTF_KIND_TYPEDEF},
		{PROBE_CTIME, PROG(inode_set_ctime_to_ts), "btf_trace_inode_set_ctime_to_ts", BTF_KIND_TYPEDEF},
		{PROBE_FENTRY, PROG(fentry_d_instantiate), "d_instantiate", BTF_KIND_FUNC},
		{PROBE_FENTRY, PROG(fentry_d_move), "d_move", BTF_KIND_FUNC},
		{PROBE_KPROBE, PROG(kprobe_d_instantiate), NULL, 0},
		{PROBE_KPROBE, PROG(kprobe_d_move), NULL, 0},
		{PROBE_SYSCALLS, PROG(sys_exit), NULL, 0},
#undef PROG
	};

	_Static_assert(sizeof(all) / sizeof(all[0]) == NPROGRAMS, "NPROGRAMS counts them");
	memcpy(out, all, sizeof(all));
	return sizeof(all) / sizeof(all[0]);
}

/* Loads the programs of kind k only; false, with why, when the kernel has
 * none of its attachment points.  The ctime tracepoints depend on the
 * kernel's version and on multigrain timestamps: any of them will do. */
static bool choose_programs(struct audit_bpf *skel, enum probe_kind k, struct btf *btf, char *why, size_t len)
{
	struct kind_program kp[NPROGRAMS];
	size_t n = kind_programs(skel, kp);
	unsigned wanted = 0, found = 0;

	for (size_t i = 0; i < n; i++) {
		bool have = kp[i].kind == k &&
			    (!kp[i].btf_name || btf__find_by_name_kind(btf, kp[i].btf_name, kp[i].btf_kind) >= 0);
		wanted += kp[i].kind == k;
		found += have;
		bpf_program__set_autoload(kp[i].prog, have);
	}
	if (k == PROBE_CTIME && !found)
		snprintf(why, len, "this kernel has none of the ctime tracepoints (Linux 6.13 and later)");
	else if (k == PROBE_FENTRY && found < wanted)
		snprintf(why, len, "this kernel's BTF lacks d_instantiate or d_move");
	else
		return true;
	return false;
}

/* The system calls the syscalls probe follows, by this architecture's
 * numbers; a call it does not have stays -1. */
static void set_syscalls(struct audit_bpf *skel)
{
	struct audit_bpf__rodata *r = skel->rodata;

	r->nr_openat = SYS_openat;
	r->nr_renameat2 = SYS_renameat2;
	r->nr_linkat = SYS_linkat;
#ifdef SYS_openat2
	r->nr_openat2 = SYS_openat2;
#endif
#ifdef SYS_open
	r->nr_open = SYS_open;
	r->nr_creat = SYS_creat;
	r->nr_rename = SYS_rename;
	r->nr_link = SYS_link;
#endif
#ifdef SYS_renameat
	r->nr_renameat = SYS_renameat;
#endif
}

/* Attaches prog, if loaded, keeping its link in the skeleton's (at link),
 * which destroys it with the rest. */
static int attach(struct bpf_program *prog, struct bpf_link **link, char *why, size_t len)
{
	if (!bpf_program__autoload(prog))
		return 0;
	*link = bpf_program__attach(prog);
	if (!*link) {
		snprintf(why, len, "cannot attach %s: %s", bpf_program__name(prog), strerror(errno));
		return -1;
	}
	return 0;
}

/* The initial pid namespace's inode (include/linux/proc_ns.h). */
#define PROC_PID_INIT_INO 0xEFFFFFFCu

/* The pid namespace the auditor runs in: the kernel side numbers
 * processes as it does (audit.bpf.c's seen_tgid). */
static int own_pidns(uint32_t *ino, char *why, size_t len)
{
	struct stat st;

	if (stat("/proc/self/ns/pid", &st) < 0) {
		snprintf(why, len, "cannot read this process's pid namespace (/proc/self/ns/pid): %s", strerror(errno));
		return -1;
	}
	*ino = (uint32_t)st.st_ino;
	return 0;
}

static void detach_all(struct audit_tracer *t)
{
	audit_freed_bpf__destroy(t->freed);
	t->freed = NULL;
	audit_bpf__destroy(t->skel);
	t->skel = NULL;
}

#ifndef CAP_SYS_ADMIN
#define CAP_SYS_ADMIN 21
#endif
#ifndef CAP_BPF
#define CAP_BPF 39
#endif

/* Whether an EPERM from bpf() is a seccomp filter's: one is on this
 * process (Seccomp: 2 in /proc/self/status) while a capability that lets
 * the kernel allow bpf() is effective (CapEff). */
static bool seccomp_refuses_bpf(void)
{
	FILE *f = fopen("/proc/self/status", "re");
	unsigned long long eff = 0;
	char line[256];
	int mode = 0;

	if (!f)
		return false;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Seccomp: %d", &mode) != 1)
			(void)sscanf(line, "CapEff: %llx", &eff);
	fclose(f);
	return mode == 2 && (eff & (1ull << CAP_BPF | 1ull << CAP_SYS_ADMIN));
}

#define SECCOMP_REFUSED                                                                                            \
	"this process's seccomp filter refuses bpf() (EPERM, with Seccomp: 2 in /proc/self/status and CAP_BPF "  \
	"effective): run it with a seccomp profile that allows bpf and perf_event_open (on Kubernetes, "         \
	"seccompProfile type Localhost with contrib/seccomp/shmguard-node.json installed on the node: "           \
	"docs/kubernetes.md), or Unconfined; a runtime's default profile allows them only with CAP_SYS_ADMIN"

/* Loads the program that sees opens the way a asks for; false, with why,
 * when this kernel's BTF has no vfs_open for fentry. */
static bool choose_attach(struct audit_bpf *skel, enum attach_kind a, struct btf *btf, char *why, size_t len)
{
	bpf_program__set_autoload(skel->progs.fentry_vfs_open, a == ATTACH_FENTRY);
	bpf_program__set_autoload(skel->progs.kprobe_vfs_open, a == ATTACH_KPROBE);
	skel->rodata->attach_at_exit = a == ATTACH_EXIT;
	if (a == ATTACH_EXIT)
		bpf_program__set_autoload(skel->progs.sys_exit, true);
	if (a == ATTACH_FENTRY && btf__find_by_name_kind(btf, "vfs_open", BTF_KIND_FUNC) < 0) {
		snprintf(why, len, "this kernel's BTF lacks vfs_open");
		return false;
	}
	return true;
}

/* Opens, loads and attaches everything with probe k, and opens seen the way
 * a asks for; on failure nothing is left and why says what went wrong. */
static int start_probe(struct audit_tracer *t, enum probe_kind k, enum attach_kind a,
		       const struct audit_trace_opts *o, struct btf *btf, char *why, size_t len)
{
	struct kind_program kp[NPROGRAMS];
	size_t n;
	int ret;

	t->skel = audit_bpf__open();
	if (!t->skel) {
		snprintf(why, len, "cannot open the BPF object: %s", strerror(errno));
		return -1;
	}
	t->skel->rodata->discover = o->discover;
	t->skel->rodata->follow_tree = o->follow_tree;
	if (own_pidns(&t->skel->rodata->pidns_ino, why, len) < 0)
		goto fail;
	t->skel->rodata->pidns_is_initial = t->skel->rodata->pidns_ino == PROC_PID_INIT_INO;
	set_syscalls(t->skel);
	if (o->ring_kib && bpf_map__set_max_entries(t->skel->maps.events, o->ring_kib * 1024) < 0) {
		snprintf(why, len, "cannot size the event buffer to %u KiB", o->ring_kib);
		goto fail;
	}
	if (!choose_programs(t->skel, k, btf, why, len) || !choose_attach(t->skel, a, btf, why, len))
		goto fail;
	t->skel->rodata->syscall_creations = k == PROBE_SYSCALLS;
	ret = audit_bpf__load(t->skel);
	if (ret) {
		if ((errno == EPERM || ret == -EPERM) && seccomp_refuses_bpf()) {
			snprintf(why, len, "seccomp refuses bpf() (EPERM)");
			t->seccomp_refused = true;
		} else if ((errno == EPERM || ret == -EPERM) && k == PROBE_SYSCALLS)
			snprintf(why, len, "not allowed to load BPF programs: run as root, or with CAP_BPF, CAP_PERFMON "
					   "and CAP_SYS_ADMIN (for /proc/PID/map_files)");
		else if ((errno == EPERM || ret == -EPERM) && (k == PROBE_FENTRY || a != ATTACH_FENTRY))
			snprintf(why, len, "the kernel refuses %s programs (EPERM)", probe_names[k]);
		else if (errno == EPERM || ret == -EPERM)
			snprintf(why, len, "the kernel refuses fentry programs (EPERM), for opens");
		else
			snprintf(why, len, "cannot load the BPF programs: %s (run with --verbose for libbpf's account)",
				 strerror(errno));
		goto fail;
	}
	for (unsigned i = 0; i < o->nroots; i++)
		if ((ret = audit_trace_add_root(t, &o->roots[i])) < 0) {
			snprintf(why, len, "cannot follow a root: %s", strerror(-ret));
			goto fail;
		}
	n = kind_programs(t->skel, kp);
	for (size_t i = 0; i < n; i++)
		if (attach(kp[i].prog, kp[i].link, why, len))
			goto fail;
	/* (sys_exit, where loaded for the opens, is among the kind programs.) */
	if (attach(t->skel->progs.fentry_vfs_open, &t->skel->links.fentry_vfs_open, why, len) ||
	    attach(t->skel->progs.kprobe_vfs_open, &t->skel->links.kprobe_vfs_open, why, len))
		goto fail;
	if (attach(t->skel->progs.sched_process_fork, &t->skel->links.sched_process_fork, why, len) ||
	    attach(t->skel->progs.sched_process_exit, &t->skel->links.sched_process_exit, why, len))
		goto fail;
	t->probe = probe_names[k];
	t->attach_probe = attach_names[a];
	return 0;
fail:
	detach_all(t);
	return -1;
}

/* The programs that see files freed, of kind a (fentry or kprobe), in an
 * object of their own that shares the loaded object's ring buffer and
 * devices; on failure nothing of it is left and why says what went wrong. */
static int start_freed_kind(struct audit_tracer *t, enum attach_kind a, struct btf *btf, char *why, size_t len)
{
	struct audit_freed_bpf *f = audit_freed_bpf__open();
	int ret;

	if (!f) {
		snprintf(why, len, "cannot open its BPF object: %s", strerror(errno));
		return -1;
	}
	if (a == ATTACH_FENTRY && btf__find_by_name_kind(btf, "shmem_evict_inode", BTF_KIND_FUNC) < 0) {
		snprintf(why, len, "this kernel's BTF lacks shmem_evict_inode");
		goto fail;
	}
	bpf_program__set_autoload(f->progs.fentry_shmem_evict_inode, a == ATTACH_FENTRY);
	bpf_program__set_autoload(f->progs.kprobe_shmem_evict_inode, a == ATTACH_KPROBE);
	if (bpf_map__reuse_fd(f->maps.events, bpf_map__fd(t->skel->maps.events)) < 0 ||
	    bpf_map__reuse_fd(f->maps.shm_devs, bpf_map__fd(t->skel->maps.shm_devs)) < 0 ||
	    bpf_map__reuse_fd(f->maps.anon_devs, bpf_map__fd(t->skel->maps.anon_devs)) < 0) {
		snprintf(why, len, "cannot share the event buffer: %s", strerror(errno));
		goto fail;
	}
	ret = audit_freed_bpf__load(f);
	if (ret) {
		snprintf(why, len, (errno == EPERM || ret == -EPERM) ? "the kernel refuses %s programs (EPERM)"
								     : "cannot load its %s program",
			 attach_names[a]);
		goto fail;
	}
	if (attach(f->progs.fentry_shmem_evict_inode, &f->links.fentry_shmem_evict_inode, why, len) ||
	    attach(f->progs.kprobe_shmem_evict_inode, &f->links.kprobe_shmem_evict_inode, why, len))
		goto fail;
	t->freed = f;
	t->freed_probe = attach_names[a];
	return 0;
fail:
	audit_freed_bpf__destroy(f);
	return -1;
}

/* Frees seen the way the creations are, where that is fentry or kprobe;
 * else by fentry, else by kprobe; else freed_why says why neither. */
static void start_freed(struct audit_tracer *t, enum probe_kind k, struct btf *btf)
{
	const enum attach_kind any[] = {ATTACH_FENTRY, ATTACH_KPROBE};
	const enum attach_kind *kinds = k == PROBE_FENTRY ? &any[0] : k == PROBE_KPROBE ? &any[1] : any;
	size_t nkinds = k == PROBE_FENTRY || k == PROBE_KPROBE ? 1 : 2, used = 0;

	for (size_t i = 0; i < nkinds; i++) {
		char why[120];

		if (start_freed_kind(t, kinds[i], btf, why, sizeof(why)) == 0)
			return;
		if (used < sizeof(t->freed_why))
			used += (size_t)snprintf(t->freed_why + used, sizeof(t->freed_why) - used, "%s%s: %s",
						 used ? "; " : "", attach_names[kinds[i]], why);
	}
}

struct audit_tracer *audit_trace_start(const struct audit_trace_opts *o, char *err, size_t errlen)
{
	struct audit_tracer *t = calloc(1, sizeof(*t));
	int forced = o->probe ? audit_probe_by_name(o->probe) : -1;
	struct btf *btf = NULL;
	size_t used = 0;

	verbose = o->verbose;
	libbpf_set_print(print_libbpf);
	if (!t) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	t->on_event = o->on_event;
	t->ctx = o->ctx;
	if (o->probe && forced < 0) {
		snprintf(err, errlen, "no probe is called '%s' (%s)", o->probe, audit_probe_list);
		goto fail;
	}
	if (access("/sys/kernel/btf/vmlinux", R_OK) != 0 || !(btf = btf__load_vmlinux_btf())) {
		snprintf(err, errlen, "this kernel has no BTF (/sys/kernel/btf/vmlinux): it needs CONFIG_DEBUG_INFO_BTF");
		goto fail;
	}
	/* The first probe that works, or the one asked for; err says why
	 * each one tried did not. */
	for (int k = forced < 0 ? 0 : forced; k < (forced < 0 ? NPROBES : forced + 1); k++) {
		size_t na;
		const enum attach_kind *a = attach_kinds((enum probe_kind)k, o->attachers, &na);
		char why[200];

		/* The opens too, the best way this kernel allows with probe k. */
		for (size_t i = 0; i < na && start_probe(t, (enum probe_kind)k, a[i], o, btf, why, sizeof(why)) < 0; i++)
			;
		if (t->skel) {
			/* And the frees, the way probe k allows. */
			if (o->freed)
				start_freed(t, (enum probe_kind)k, btf);
			break;
		}
		if (forced >= 0)
			snprintf(err, errlen, "the probe '%s' is not available here: %s", probe_names[k], why);
		else if (used < errlen)
			used += (size_t)snprintf(err + used, errlen - used, "%s%s: %s", used ? "; " : "",
						 probe_names[k], why);
	}
	btf__free(btf);
	btf = NULL;
	if (!t->skel && t->seccomp_refused)
		snprintf(err, errlen, "%s", SECCOMP_REFUSED);
	if (!t->skel)
		goto fail;
	if (o->shim) {
		t->skel->links.shim_tag =
			bpf_program__attach_usdt(t->skel->progs.shim_tag, -1, o->shim, "shmguard", "tag", NULL);
		t->usdt = t->skel->links.shim_tag != NULL;
	}
	t->rb = ring_buffer__new(bpf_map__fd(t->skel->maps.events), on_event, t, NULL);
	if (!t->rb) {
		snprintf(err, errlen, "cannot open the ring buffer: %s", strerror(errno));
		goto fail;
	}
	return t;
fail:
	btf__free(btf);
	audit_trace_stop(t);
	return NULL;
}

/* Marks the device dev followed (on) or not in the kernel side's maps: a
 * bit of anon_devs for a filesystem without a block device, an entry of
 * shm_devs for others (audit_maps.bpf.h). */
static int follow_dev(struct audit_tracer *t, __u32 dev, bool on)
{
	__u32 minor = SG_AUDIT_KDEV_MINOR(dev), word = minor / 64;
	__u64 bits, bit = 1ull << (minor % 64);
	__u8 one = 1;

	if (SG_AUDIT_KDEV_MAJOR(dev) != 0)
		return on ? bpf_map__update_elem(t->skel->maps.shm_devs, &dev, sizeof(dev), &one, sizeof(one), BPF_ANY)
			  : bpf_map__delete_elem(t->skel->maps.shm_devs, &dev, sizeof(dev), 0);
	int ret;

	if ((ret = bpf_map__lookup_elem(t->skel->maps.anon_devs, &word, sizeof(word), &bits, sizeof(bits), 0)) < 0)
		return ret;
	bits = on ? bits | bit : bits & ~bit;
	return bpf_map__update_elem(t->skel->maps.anon_devs, &word, sizeof(word), &bits, sizeof(bits), BPF_ANY);
}

int audit_trace_add_root(struct audit_tracer *t, const struct audit_trace_root *root)
{
	struct sg_audit_root_key key = {.dev = root->kdev, .ino = root->dir_ino};
	__u8 one = 1;
	int ret;

	if ((ret = bpf_map__update_elem(t->skel->maps.root_dirs, &key, sizeof(key), &one, sizeof(one), BPF_ANY)) < 0)
		return ret;
	if ((ret = follow_dev(t, root->kdev, true)) < 0)
		bpf_map__delete_elem(t->skel->maps.root_dirs, &key, sizeof(key), 0);
	return ret < 0 ? ret : 0;
}

void audit_trace_remove_root(struct audit_tracer *t, const struct audit_trace_root *root, bool dev_too)
{
	struct sg_audit_root_key key = {.dev = root->kdev, .ino = root->dir_ino};

	bpf_map__delete_elem(t->skel->maps.root_dirs, &key, sizeof(key), 0);
	/* After the delete: no CPU's last root is taken for this one again. */
	__atomic_add_fetch(&t->skel->bss->roots_gen, 1, __ATOMIC_SEQ_CST);
	if (dev_too)
		follow_dev(t, root->kdev, false);
}

int audit_trace_follow(struct audit_tracer *t, pid_t pid)
{
	__u32 key = (__u32)pid;
	__u8 one = 1;

	return bpf_map__update_elem(t->skel->maps.tree, &key, sizeof(key), &one, sizeof(one), BPF_ANY);
}

int audit_trace_fd(struct audit_tracer *t)
{
	return ring_buffer__epoll_fd(t->rb);
}

int audit_trace_consume(struct audit_tracer *t)
{
	int n = ring_buffer__consume(t->rb);

	return n < 0 ? n : 0;
}

uint64_t audit_trace_dropped(struct audit_tracer *t)
{
	return __atomic_load_n(&t->skel->bss->dropped, __ATOMIC_RELAXED);
}

uint64_t audit_trace_frees_unsent(struct audit_tracer *t)
{
	return t->freed ? __atomic_load_n(&t->freed->bss->dropped, __ATOMIC_RELAXED) +
				  __atomic_load_n(&t->freed->bss->skipped, __ATOMIC_RELAXED)
			: 0;
}

bool audit_trace_has_usdt(struct audit_tracer *t)
{
	return t->usdt;
}

const char *audit_trace_attach_probe(struct audit_tracer *t)
{
	return t->attach_probe;
}

const char *audit_trace_freed_probe(struct audit_tracer *t, const char **why)
{
	if (why)
		*why = t->freed_probe ? NULL : t->freed_why[0] ? t->freed_why : "not asked for";
	return t->freed_probe;
}

const char *audit_trace_probe(struct audit_tracer *t)
{
	return t->probe;
}

void audit_trace_stop(struct audit_tracer *t)
{
	if (!t)
		return;
	ring_buffer__free(t->rb);
	detach_all(t);
	free(t);
}
