/* sweep --markers: every request marked in an abort directory, whoever
 * wrote its marker (shmguard abort, the pipeline's own touch, a follower),
 * swept from the ownership journals exactly as abort sweeps it
 * (request_sweep.h).  The shims act on a marker only while one of the
 * request's creators lives; this is for the requests whose creators have
 * all exited. */
#ifndef SHMGUARD_MARKER_SWEEP_H
#define SHMGUARD_MARKER_SWEEP_H

#include "config.h"

/* Markers read from one directory at most: request_sweep_run compares
 * each journal claim with every ID. */
#define MARKER_SWEEP_MAX 4096

/* Reads the markers of abort_dir (checked as the shims check it and its
 * markers, for this euid) and sweeps their requests' files in roots.  Says
 * what it did in one line on stdout.  Returns an exit status: EXIT_OK, or
 * EXIT_FAIL (said) when the directory cannot be used or a file or root
 * could not be swept. */
int marker_sweep(const char *abort_dir, const struct sg_roots *roots);

#endif
