/* Every shm filesystem of the machine: the tmpfs mounts at /dev/shm (or
 * other mount points) in every mount namespace, found through /proc, as a
 * node agent needs them to follow and sweep every container's shared memory
 * (docs/kubernetes.md).  Each is reached through a process of its namespace
 * (/proc/PID/root), opened without following any link the namespace's
 * owner could have planted, and checked to be that very mount.
 *
 * Errors: a negative errno (docs/architecture.md, "Reporting a failure"). */
#ifndef SHMGUARD_SHM_MOUNTS_H
#define SHMGUARD_SHM_MOUNTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "config.h"

/* One line of /proc/PID/mountinfo, as far as it matters here. */
struct sg_mountinfo_entry {
	int mnt_id;
	uint32_t kdev;                /* the kernel's encoding, major << 20 | minor */
	char root[SG_PATH_MAX + 1];   /* the part of its filesystem mounted there */
	char point[SG_PATH_MAX + 1];  /* where, unescaped */
	char fstype[32];
};

/* Parses one line (without its newline).  0, or -EINVAL for a line that
 * is not in the kernel's format or has a field too long for the entry. */
int sg_mountinfo_parse(const char *line, struct sg_mountinfo_entry *e);

struct sg_shm_mount {
	int dfd;          /* its directory (O_RDONLY|O_DIRECTORY), owned by the list */
	uint32_t kdev;
	uint64_t dir_ino;
	uint64_t mntns;   /* the mount namespace's nsfs inode */
	pid_t pid;        /* the process it was reached through */
	bool own_ns;      /* in this process's mount namespace */
	char point[SG_PATH_MAX + 1]; /* the mount point as its namespace sees it */
	char path[32];    /* "/proc/self/fd/N": dfd as a path, for path-based callers */
};

struct sg_shm_mounts {
	struct sg_shm_mount *m;
	size_t n, cap;
	unsigned namespaces;  /* mount namespaces read */
	unsigned unreadable;  /* namespaces whose mounts or root could not be read */
	pid_t first_unreadable; /* a process of one of them, to name */
	uint64_t *read_ns;    /* the namespaces read or skipped, sorted (nsfs inodes) */
	size_t nread_ns;
};

/* Finds every tmpfs mounted at one of points (absolute paths; NULL or
 * none: "/dev/shm") in every mount namespace whose processes /proc shows,
 * one entry per directory (a filesystem seen in several namespaces once,
 * this namespace's first).  A namespace that cannot be read is counted,
 * not skipped silently.  0, or a negative errno when /proc cannot be read. */
int sg_shm_mounts_scan(struct sg_shm_mounts *out, const char *const *points, size_t npoints);

/* The same, without reading the namespaces of skip (sorted, nskip of
 * them): the mounts of namespaces made since a scan (a new pod's), fast. */
int sg_shm_mounts_scan_new(struct sg_shm_mounts *out, const char *const *points, size_t npoints,
			   const uint64_t *skip, size_t nskip);

void sg_shm_mounts_free(struct sg_shm_mounts *ms);

/* The device and inode of the directory at point in pid's view (through
 * /proc/PID/root, no link of any kind followed): to pick that process's
 * among the mounts found.  0, or a negative errno. */
int sg_shm_dir_of(pid_t pid, const char *point, uint32_t *kdev, uint64_t *ino);

#endif
