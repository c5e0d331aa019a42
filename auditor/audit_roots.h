/* The auditor's shm roots: the directories given (--shm-root, /dev/shm)
 * and, in node mode, every tmpfs mounted at /dev/shm in any mount
 * namespace (host/shm_mounts.c), found as pods appear and forgotten when
 * they go.  A root is a slot of a table that grows; a forgotten root's slot
 * is used again (a file's record names its slot, and is checked against its
 * device and inode before any use).
 *
 * Errors: a negative errno, and a sentence in err where a function takes
 * one; the front door (audit.h) turns them into an exit status. */
#ifndef SHMGUARD_AUDIT_ROOTS_H
#define SHMGUARD_AUDIT_ROOTS_H

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include <sys/types.h>

#include "cgroups.h"
#include "config.h"

struct audit;

/* At most this many roots at once (a file's record holds the slot in an
 * int16_t; the kernel side's maps hold more). */
#define AUDIT_MAX_ROOTS 16000

/* What a root held when a review cycle ended (audit_live.c), and what the
 * cycle under way has counted so far. */
struct audit_root_bytes {
	uint64_t tracked, unattributed;
};

/* The pod whose /dev/shm a discovered root is: the cgroup of the process
 * it was found through (host/cgroups.h), as a workload's; "" where not
 * known (a root given, the node's own, a process in no pod). */
struct audit_root_pod {
	uint64_t mntns; /* the mount namespace it was found in: the process read must still be in it */
	struct sg_cgroup_ids ids;
	char ns[SG_K8S_NAMESPACE_MAX + 1], name[SG_K8S_NAME_MAX + 1];
	char container[SG_K8S_NAMESPACE_MAX + 1];
	double next_s; /* when to look again for what is not known yet */
};

struct audit_root {
	bool in_use;
	bool discovered; /* found in a mount namespace's /dev/shm, not given */
	uint32_t kdev;
	uint64_t dir_ino;
	uint32_t id; /* numbers the roots of the run, never twice: an abort's scope */
	char path[SG_PATH_MAX + 1]; /* the directory given, or "/proc/self/fd/N" of dfd */
	char shown[SG_PATH_MAX + 40]; /* for people: the path given, or "/dev/shm of pid P (mnt:[NS])" */
	int dfd; /* discovered: its directory, held while followed (closed at once when it goes) */
	pid_t pid; /* discovered: the process it was reached through */
	uint32_t scan; /* the last scan of the mounts that found it */
	bool late; /* discovered after the run began: its files and markers predate its discovery */
	/* Its own abort directory (discovered roots), or -1. */
	int abort_dfd, abort_wd;
	uint32_t abort_kdev; /* its device and inode, while abort_dfd is open */
	uint64_t abort_ino;
	struct audit_root_bytes bytes, counting;
	struct audit_root_pod pod; /* discovered roots' */
};

/* What the run does as the table changes: audit.c wires them to the
 * markers' watch of a root's abort directory and to the events' catch-up
 * of a root found late, so that the table calls no part above it.  NULL:
 * nothing. */
struct audit_root_hooks {
	void (*found)(struct audit *a, int slot, bool late); /* late: found after the run began */
	void (*seen_again)(struct audit *a, int slot);         /* a discovered root found by a later scan */
	void (*forgetting)(struct audit *a, int slot);         /* before its slot is freed */
};

/* Node mode's scans of the mounts (audit_roots.c). */
struct audit_root_scans {
	uint32_t root_scans;
	bool scan_wanted; /* a new device was reported */
	bool full_wanted; /* one a scan of the new namespaces did not find */
	uint32_t reported[64]; /* the devices reported since the last scan */
	unsigned nreported;
	double next_scan_s, scanned_at_s, last_scan_s, last_new_scan_s;
	double full_scan_begun_s; /* when the last scan of every namespace began */
	uint64_t *known_ns; /* the mount namespaces read so far, sorted (host/shm_mounts.h) */
	size_t nknown_ns;
	uint64_t new_devs, scans_failed;
	unsigned namespaces, namespaces_unreadable; /* as of the last scan */
};

/* The roots followed (audit_roots.c). */
struct audit_root_table {
	struct audit_root *roots; /* slots, some unused (audit_roots.h) */
	unsigned nroots, roots_cap;
	uint32_t next_root_id;
	struct audit_root_hooks root_hooks;
	uint64_t roots_found, roots_late, roots_forgotten, roots_refused;
};

/* The roots given (o->roots), which must exist: 0, or a negative errno
 * with err (-ENOTDIR: one is no directory). */
int audit_roots_given(struct audit *a, char *err, size_t errlen);

/* Node mode: the mounts looked for again now (at the start, on a new
 * device's event, and every AUDIT_ROOTS_RESCAN_S): roots appearing are
 * followed (and, late, their files read), roots gone are forgotten. */
void audit_roots_scan(struct audit *a);
/* When the next scan is due (audit_now_s()'s clock), INFINITY without node mode. */
double audit_roots_due_s(const struct audit *a);
/* A new device's event: a scan as soon as the pacing allows. */
void audit_roots_new_dev(struct audit *a, uint32_t kdev);
/* Whether files made before since_s may be in a tmpfs the scans have not
 * found yet: one that was reported, that the scan of the new namespaces
 * did not find (mounted in a namespace read before), and that no scan of
 * every namespace begun since since_s has looked for.  An abort is not
 * measured while it is so (until the next such scan, a few seconds at
 * most): its files there would count as none. */
bool audit_roots_unsearched(const struct audit *a, double since_s);
/* Node mode, at the end of a run: every namespace read again if a
 * reported device is still not found, so that the last aborts are
 * measured with its files. */
void audit_roots_scan_before_end(struct audit *a);

/* The root of that directory, or -1. */
int audit_root_of_dir(const struct audit *a, uint32_t kdev, uint64_t dir_ino);
/* A root on that device, or -1. */
int audit_root_of_dev(const struct audit *a, uint32_t kdev);
/* The scope of the aborts a file of that device and root slot (-1
 * unknown) belongs to: its root's own abort directory's, else 0 (--abort-dir). */
uint32_t audit_root_scope(const struct audit *a, uint32_t kdev, int root);

/* A review cycle's bytes of each root: begun (all 0), counted (a file of
 * slot root, -1 none), ended (what the cycle counted is the roots' bytes). */
void audit_roots_count_begin(struct audit *a);
void audit_roots_count(struct audit *a, int root, uint64_t tracked, uint64_t unattributed);
void audit_roots_count_end(struct audit *a);

/* The run's clock starts after the first scan: that scan is at 0. */
void audit_roots_clock_started(struct audit *a);

/* The roots followed now. */
unsigned audit_roots_in_use(const struct audit *a);

/* Closes every root's descriptors. */
void audit_roots_free(struct audit *a);

#endif
