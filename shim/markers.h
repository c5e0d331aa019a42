/* Abort markers: a file named after a request in the abort directory.  A
 * watcher thread (started on the first tagged creation, again in each fork
 * child) sweeps a request when its marker appears, and removes markers
 * older than SHMGUARD_ABORT_TTL in a directory shmguard made. */
#ifndef SHMGUARD_MARKERS_H
#define SHMGUARD_MARKERS_H

#include <stdbool.h>

/* Starts the watcher unless it already runs in this process, and waits
 * until its watch is placed: every marker from then on is an event.  The
 * markers already present are read by the watcher afterwards. */
void sg_markers_start(void);

/* Whether the watcher has read the markers that were present when its
 * watch was placed: from then on the registry knows every abort. */
bool sg_markers_first_look_done(void);

/* Whether an acceptable marker of request is in the abort directory that
 * was first watched.  A creation recorded before the first look was done
 * asks, so that a late put is known as one (and swept at once) even when
 * that look, meanwhile, found the record and swept it as an abort. */
bool sg_markers_aborted(const char *request);

/* Acts on every marker in the abort directory dfd changed at since_ns or
 * later (0: all): sweeps the request of each acceptable one.  Returns how
 * many entries were read. */
unsigned sg_markers_scan(int dfd, long long since_ns);

/* At exit: finishes a sweep under way and acts on the markers already
 * queued, so that an abort that came while the process lived is honoured
 * even when it exits right after.  (Exit itself never sweeps.) */
void sg_markers_drain(void);

/* In a fork child: the watcher did not survive; let it start again. */
void sg_markers_after_fork(void);

#endif
