/* Messages on stderr, prefixed "shmguard:", at or above SHMGUARD_LOG. */
#ifndef SHMGUARD_LOG_H
#define SHMGUARD_LOG_H

#include <stdbool.h>

#include "config.h"

extern enum sg_log_level sg_log_level;

__attribute__((format(printf, 2, 3))) void sg_log_write(enum sg_log_level level, const char *fmt, ...);

/* The level is tested here, so that a message below it (a debug line on
 * every tagged creation, say) costs no call. */
#define sg_log(level, ...)                                                                                         \
	do {                                                                                                       \
		if ((level) <= sg_log_level)                                                                       \
			sg_log_write((level), __VA_ARGS__);                                                        \
	} while (0)

/* Logs only the first time *once is seen false (and sets it): a fault that
 * repeats on every call is said once. */
__attribute__((format(printf, 3, 4))) void sg_log_once(bool *once, enum sg_log_level level, const char *fmt, ...);

/* The calling thread has a descriptor table of its own (unshared): its
 * messages go to the program's stderr, reached through pidfd (of this process). */
void sg_log_from_own_table(int pidfd);

#endif
