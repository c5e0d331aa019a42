/* What `shmguard watch` learns of a file's creator when the kernel reports
 * the file created: the event's process, cgroup and comm, and from /proc
 * its start time, its parent and its pid namespace, taken only while they
 * are still that process's. */
#ifndef SHMGUARD_WATCH_RECORD_H
#define SHMGUARD_WATCH_RECORD_H

#include <stdint.h>

#include "creator_store.h"

/* Fills r's creator fields for process pid (watch's pid namespace, 0:
 * outside it), in cgroup_id, which created a file at ts_ns
 * (CLOCK_MONOTONIC).  What cannot be known for sure stays 0 or "". */
void sg_watch_creator(struct sg_creator_rec *r, uint32_t pid, uint64_t cgroup_id, const char *comm, uint64_t ts_ns);

#endif
