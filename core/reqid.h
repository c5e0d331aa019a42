/* Request IDs double as marker file names, so they obey file-name rules. */
#ifndef SHMGUARD_REQID_H
#define SHMGUARD_REQID_H

#include <stddef.h>

/* NULL when id is a usable request ID; otherwise why it is not. */
const char *sg_reqid_invalid(const char *id);

#endif
