/* A file this process just made, as the call that made it learnt it: each
 * fact is found once, on the way, and handed down to the registry and the
 * ownership journal, which would otherwise find them again. */
#ifndef SHMGUARD_NEW_FILE_H
#define SHMGUARD_NEW_FILE_H

#include <stddef.h>
#include <sys/types.h>

/* shm_open's and sem_open's directory, SG_DEFAULT_ROOT: always the first
 * root (sg_config_from puts it there). */
#define SG_SHM_OPEN_ROOT 0u

struct sg_new_file {
	const char *path; /* root/name, the one spelling: name_off + name_len bytes, then a NUL */
	size_t name_off, name_len;
	unsigned root; /* the index of that root in sg_cfg.roots */
	const char *req;
	size_t req_len;
	size_t req_at; /* where req stands in the name, as the patterns found it, or SG_JOURNAL_REQ_AT_UNKNOWN */
	dev_t dev;
	ino_t ino;
};

#endif
