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

/* Records, when SHMGUARD_TAG asks for the journal, that the file f is this
 * process's, for its request, as of now.  Returns the record's slot for
 * sg_jw_release(), or 0 when there is none (not asked, or it could not be
 * recorded: said once). */
uint32_t sg_jw_record(const struct sg_new_file *f);

/* The file is gone, or no longer this process's to speak for. */
void sg_jw_release(uint32_t slot);

/* At exit (the destructor, or _exit): removes each journal of this process
 * none of whose files remain.  Without may_wait it gives up rather than
 * wait for the lock (an _exit from a signal handler, say). */
void sg_jw_exit(bool may_wait);

void sg_jw_lock(void);
void sg_jw_unlock(void);
/* In a fork child, with the lock held: the parent's journals are not the
 * child's; it makes its own on its first creation. */
void sg_jw_after_fork_child(void);
/* The same in a copy no fork handler saw, whose lock may be held for a
 * thread it does not have: the lock is made anew. */
void sg_jw_after_unseen_fork(void);

#endif
