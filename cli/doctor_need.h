/* shmguard doctor --need SIZE: is there room in a shm root, and if not,
 * what holds it and what `sweep --dead` would give back. */
#ifndef SHMGUARD_DOCTOR_NEED_H
#define SHMGUARD_DOCTOR_NEED_H

#include <stdint.h>

/* Prints the verdict for root; 0 when it has need bytes free, else 1. */
int doctor_need(const char *root, uint64_t need);

#endif
