/* What `shmguard watch` records of a file's creator when the kernel reports
 * the file created: the process, its start time and its parent's as the
 * kernel side read them at that moment (the creator may be gone before
 * userspace looks), its cgroup and comm; from /proc only its pid namespace,
 * taken while the pid is still that process's.  And who else opened it. */
#ifndef SHMGUARD_WATCH_RECORD_H
#define SHMGUARD_WATCH_RECORD_H

#include <stdbool.h>
#include <stdint.h>

#include "audit_trace.h"
#include "creator_store.h"

/* Fills r's creator fields from the creation event e. */
void sg_watch_creator(struct sg_creator_rec *r, const struct audit_event *e);

/* Counts the process that opened r's file (the event e) among its
 * attachers; whether r changed. */
bool sg_watch_attacher(struct sg_creator_rec *r, const struct audit_event *e);

#endif
