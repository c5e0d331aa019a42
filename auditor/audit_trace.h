/* The auditor's BPF side from userspace: load, attach, read events. */
#ifndef SHMGUARD_AUDIT_TRACE_H
#define SHMGUARD_AUDIT_TRACE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "audit.h"

struct audit_tracer;

/* The probes that can see files being created, best first, for messages. */
extern const char *const audit_probe_list;
/* The index of a probe's name, or -1. */
int audit_probe_by_name(const char *name);

/* Loads and attaches everything before any traced program runs, with the
 * best probe this kernel allows (a->o->probe forces one) and sets
 * a->probe.  NULL with a message in err naming what is missing
 * (privileges, BTF, each probe's reason). */
struct audit_tracer *audit_trace_start(struct audit *a, bool follow_tree, const char *shim, char *err,
				       size_t errlen);

/* Counts pid, and every process it starts from now on, as the traced tree. */
int audit_trace_follow(struct audit_tracer *t, pid_t pid);

/* Readable when events wait; audit_trace_consume() hands them to a. */
int audit_trace_fd(struct audit_tracer *t);
int audit_trace_consume(struct audit_tracer *t); /* -1 with errno on failure */

/* Events the kernel side could not queue, so far. */
uint64_t audit_trace_dropped(struct audit_tracer *t);

/* Whether the shim's tags are followed (its USDT probe attached). */
bool audit_trace_has_usdt(struct audit_tracer *t);

/* The probe chosen: ctime, fentry, kprobe or syscalls. */
const char *audit_trace_probe(struct audit_tracer *t);

void audit_trace_stop(struct audit_tracer *t);

#endif
