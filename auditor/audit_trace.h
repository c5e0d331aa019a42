/* The auditor's BPF side from userspace: load, attach, read events. */
#ifndef SHMGUARD_AUDIT_TRACE_H
#define SHMGUARD_AUDIT_TRACE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "audit.h"

struct audit_tracer;

/* Loads and attaches everything before any traced program runs.  NULL with
 * a message in err naming what is missing (privileges, BTF, tracepoints). */
struct audit_tracer *audit_trace_start(struct audit *a, bool follow_tree, const char *shim, char *err,
				       size_t errlen);

/* Counts pid, and every process it starts from now on, as the traced tree. */
int audit_trace_follow(struct audit_tracer *t, pid_t pid);

/* Readable when events wait; audit_trace_consume() hands them to a. */
int audit_trace_fd(struct audit_tracer *t);
void audit_trace_consume(struct audit_tracer *t);

/* Events the kernel side could not queue, so far. */
uint64_t audit_trace_dropped(struct audit_tracer *t);

/* Whether the shim's tags are followed (its USDT probe attached). */
bool audit_trace_has_usdt(struct audit_tracer *t);

void audit_trace_stop(struct audit_tracer *t);

#endif
