#ifndef SHMGUARD_SWEEP_H
#define SHMGUARD_SWEEP_H

/* Marks request aborted and unlinks every still-existing segment this
 * process created for it, each only if its name still refers to the inode
 * recorded at creation. */
void sg_sweep(const char *request);

#endif
