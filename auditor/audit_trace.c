#include "audit_trace.h"

#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "audit.skel.h"
#include "audit_event.h"

struct audit_tracer {
	struct audit_bpf *skel;
	struct ring_buffer *rb;
	struct bpf_link *links[8];
	unsigned nlinks;
	bool usdt;
	struct audit *a;
};

static bool verbose;

static int print_libbpf(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_DEBUG || !verbose)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

static int on_event(void *ctx, void *data, size_t size)
{
	audit_on_event(ctx, data, size);
	return 0;
}

/* Which of the ctime tracepoints this kernel has (it depends on its
 * version and on multigrain timestamps). */
static unsigned choose_tracepoints(struct audit_bpf *skel)
{
	const struct {
		const char *btf_name;
		struct bpf_program *prog;
	} tps[] = {
		{"btf_trace_ctime_ns_xchg", skel->progs.ctime_ns_xchg},
		{"btf_trace_ctime_xchg_skip", skel->progs.ctime_xchg_skip},
		{"btf_trace_inode_set_ctime_to_ts", skel->progs.inode_set_ctime_to_ts},
	};
	struct btf *btf = btf__load_vmlinux_btf();
	unsigned found = 0;

	for (size_t i = 0; i < sizeof(tps) / sizeof(tps[0]); i++) {
		bool have = btf && btf__find_by_name_kind(btf, tps[i].btf_name, BTF_KIND_TYPEDEF) >= 0;

		bpf_program__set_autoload(tps[i].prog, have);
		found += have;
	}
	btf__free(btf);
	return found;
}

static int attach(struct audit_tracer *t, struct bpf_program *prog, char *err, size_t errlen)
{
	struct bpf_link *link;

	if (!bpf_program__autoload(prog))
		return 0;
	link = bpf_program__attach(prog);
	if (!link) {
		snprintf(err, errlen, "cannot attach %s: %s", bpf_program__name(prog), strerror(errno));
		return -1;
	}
	t->links[t->nlinks++] = link;
	return 0;
}

struct audit_tracer *audit_trace_start(struct audit *a, bool follow_tree, const char *shim, char *err,
				       size_t errlen)
{
	struct audit_tracer *t = calloc(1, sizeof(*t));
	unsigned ndevs = 0;
	int ret;

	verbose = a->o->verbose;
	libbpf_set_print(print_libbpf);
	if (!t) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	t->a = a;
	if (access("/sys/kernel/btf/vmlinux", R_OK) != 0) {
		snprintf(err, errlen, "this kernel has no BTF (/sys/kernel/btf/vmlinux): it needs CONFIG_DEBUG_INFO_BTF");
		goto fail;
	}
	t->skel = audit_bpf__open();
	if (!t->skel) {
		snprintf(err, errlen, "cannot open the BPF object: %s", strerror(errno));
		goto fail;
	}
	for (unsigned i = 0; i < a->nroots; i++) {
		bool dup = false;
		for (unsigned k = 0; k < ndevs; k++)
			dup |= t->skel->rodata->shm_devs[k] == a->roots[i].kdev;
		if (!dup)
			t->skel->rodata->shm_devs[ndevs++] = a->roots[i].kdev;
	}
	t->skel->rodata->n_shm_devs = ndevs;
	if (a->o->ring_kib && bpf_map__set_max_entries(t->skel->maps.events, a->o->ring_kib * 1024) < 0) {
		snprintf(err, errlen, "cannot size the event buffer to %u KiB", a->o->ring_kib);
		goto fail;
	}
	t->skel->rodata->follow_tree = follow_tree;
	if (!choose_tracepoints(t->skel)) {
		snprintf(err, errlen,
			 "this kernel has none of the ctime tracepoints (ctime_ns_xchg, ctime_xchg_skip, "
			 "inode_set_ctime_to_ts) the auditor sees new files with");
		goto fail;
	}
	ret = audit_bpf__load(t->skel);
	if (ret) {
		if (errno == EPERM || ret == -EPERM)
			snprintf(err, errlen,
				 "not allowed to load BPF programs: run as root, or with CAP_BPF, CAP_PERFMON "
				 "and CAP_SYS_ADMIN (for /proc/PID/map_files)");
		else
			snprintf(err, errlen, "cannot load the BPF programs: %s (run with --verbose for libbpf's "
					      "account)", strerror(errno));
		goto fail;
	}
	if (attach(t, t->skel->progs.ctime_ns_xchg, err, errlen) ||
	    attach(t, t->skel->progs.ctime_xchg_skip, err, errlen) ||
	    attach(t, t->skel->progs.inode_set_ctime_to_ts, err, errlen) ||
	    attach(t, t->skel->progs.sched_process_fork, err, errlen) ||
	    attach(t, t->skel->progs.sched_process_exit, err, errlen))
		goto fail;
	if (shim) {
		struct bpf_link *link =
			bpf_program__attach_usdt(t->skel->progs.shim_tag, -1, shim, "shmguard", "tag", NULL);
		if (link) {
			t->links[t->nlinks++] = link;
			t->usdt = true;
		}
	}
	t->rb = ring_buffer__new(bpf_map__fd(t->skel->maps.events), on_event, a, NULL);
	if (!t->rb) {
		snprintf(err, errlen, "cannot open the ring buffer: %s", strerror(errno));
		goto fail;
	}
	return t;
fail:
	audit_trace_stop(t);
	return NULL;
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

void audit_trace_consume(struct audit_tracer *t)
{
	ring_buffer__consume(t->rb);
}

uint64_t audit_trace_dropped(struct audit_tracer *t)
{
	return __atomic_load_n(&t->skel->bss->dropped, __ATOMIC_RELAXED);
}

bool audit_trace_has_usdt(struct audit_tracer *t)
{
	return t->usdt;
}

void audit_trace_stop(struct audit_tracer *t)
{
	if (!t)
		return;
	ring_buffer__free(t->rb);
	for (unsigned i = 0; i < t->nlinks; i++)
		bpf_link__destroy(t->links[i]);
	audit_bpf__destroy(t->skel);
	free(t);
}
