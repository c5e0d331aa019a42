/* Messages on stderr, prefixed "shmguard:", at or above SHMGUARD_LOG. */
#ifndef SHMGUARD_LOG_H
#define SHMGUARD_LOG_H

#include <stdbool.h>

#include "config.h"

extern enum sg_log_level sg_log_level;

__attribute__((format(printf, 2, 3))) void sg_log(enum sg_log_level level, const char *fmt, ...);

/* Logs only the first time *once is seen false (and sets it): a fault that
 * repeats on every call is said once. */
__attribute__((format(printf, 3, 4))) void sg_log_once(bool *once, enum sg_log_level level, const char *fmt, ...);

#endif
