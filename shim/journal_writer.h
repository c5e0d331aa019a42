/* This process's ownership journals (core/journal.h): one per shm root it
 * creates files in, made on the first such file, mapped, and written
 * without a system call but when it must grow. */
#ifndef SHMGUARD_JOURNAL_WRITER_H
#define SHMGUARD_JOURNAL_WRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "new_file.h"

/* Every call is made under the registry's lock (registry.h), which also
 * guards the entry a record belongs to: one lock a creation or an unlink. */

/* Records, when SHMGUARD_TAG asks for the journal, that the file f is this
 * process's, for its request, as of now.  Returns the record's slot for
 * sg_jw_release(), or 0 when there is none (not asked, or it could not be
 * recorded: said once). */
uint32_t sg_jw_record(const struct sg_new_file *f);

/* The file is gone, or no longer this process's to speak for. */
void sg_jw_release(uint32_t slot);

/* At exit (the destructor, or _exit): removes each journal of this process
 * none of whose files remain. */
void sg_jw_exit(void);

/* In a fork child (or a copy no fork handler saw, whose lock is made
 * anew): the parent's journals are not the child's; it makes its own on
 * its first creation. */
void sg_jw_after_fork_child(void);

#endif
