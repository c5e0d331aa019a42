#ifndef SHMGUARD_SWEEP_H
#define SHMGUARD_SWEEP_H

#include <stdbool.h>

#include "registry.h"

/* Marks request aborted and unlinks every still-existing segment this
 * process created for it, each only if its name still refers to the inode
 * recorded at creation. */
void sg_sweep(const char *request);

/* Whether seg's name is gone or now names another inode (false when its
 * root cannot be reached: not known to be gone). */
bool sg_segment_gone(const struct sg_segment *seg);

#endif
