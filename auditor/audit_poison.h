/* Memory the auditor's tables hold but must not read (freed slots, the
 * rest of a block), marked so for AddressSanitizer; nothing without it. */
#ifndef SHMGUARD_AUDIT_POISON_H
#define SHMGUARD_AUDIT_POISON_H

#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/asan_interface.h>
#define POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

#endif
