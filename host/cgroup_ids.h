/* cgroup v2 ids, as bpf_get_current_cgroup_id() gives them: whether one
 * still exists and what its path is, asked of the kernel through a file
 * handle on the cgroup2 mount (open_by_handle_at: CAP_DAC_READ_SEARCH).
 * Since Linux 5.5 an id is a 64-bit number never given twice in a boot: a
 * cgroup made again under the same path has another id.
 *
 * Errors: a negative errno (docs/architecture.md, "Reporting a failure"). */
#ifndef SHMGUARD_CGROUP_IDS_H
#define SHMGUARD_CGROUP_IDS_H

#include <stddef.h>
#include <stdint.h>

enum sg_cgroup_state {
	SG_CGROUP_UNKNOWN, /* no cgroup2 mount, no privilege, id 0, or another error */
	SG_CGROUP_ALIVE,
	SG_CGROUP_GONE, /* the kernel says no cgroup has this id any more (ESTALE) */
};

/* The cgroup2 mount of this mount namespace, opened once (a plain
 * descriptor: open_by_handle_at refuses an O_PATH one); a negative
 * errno when there is none. */
int sg_cgroup2_fd(void);

enum sg_cgroup_state sg_cgroup_state(uint64_t id);

/* The path of cgroup id below the cgroup2 root ("/" for the root cgroup)
 * into buf: 0, or a negative errno (-ESTALE: gone, -ENAMETOOLONG: longer
 * than len). */
int sg_cgroup_path(uint64_t id, char *buf, size_t len);

/* The id of the cgroup at path (below the cgroup2 root); 0 on failure. */
uint64_t sg_cgroup_id_of(const char *path);

#endif
