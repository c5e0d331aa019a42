/* Abort markers: a file named after a request in the abort directory.  A
 * watcher thread (started on the first tagged creation, again in each fork
 * child) sweeps a request when its marker appears, and removes markers
 * older than SHMGUARD_ABORT_TTL in a directory shmguard made. */
#ifndef SHMGUARD_MARKERS_H
#define SHMGUARD_MARKERS_H

#include <stdbool.h>

/* Starts the watcher unless it already runs in this process; the markers
 * already present are acted on before it returns. */
void sg_markers_start(void);

/* At exit: finishes a sweep under way and acts on the markers already
 * queued, so that an abort that came while the process lived is honoured
 * even when it exits right after.  (Exit itself never sweeps.) */
void sg_markers_drain(void);

/* In a fork child: the watcher did not survive; let it start again. */
void sg_markers_after_fork(void);

#endif
