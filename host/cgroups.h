/* Which workload a cgroup v2 is, from its path (cgroup_ids.h gives the
 * path of an id): the container ID and pod UID the path shows (kubelet's
 * systemd and cgroupfs layouts, podman's), the pod's namespace and name
 * from the kubelet's log directories (/var/log/pods/NAMESPACE_NAME_UID) and
 * the container's name from its log links (/var/log/containers).
 * Every path and name read here may have been chosen by someone else (a
 * delegated cgroup is named by its user): parsed strictly, with bounds.
 *
 * Errors: nothing here can fail (host/ reports a failure as a negative errno). */
#ifndef SHMGUARD_CGROUPS_H
#define SHMGUARD_CGROUPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SG_CONTAINER_ID_LEN 64 /* hex digits of a container ID (containerd, CRI-O, docker, podman) */
#define SG_POD_UID_MAX 36      /* 8-4-4-4-12 hex digits; a static pod's is 32 without dashes */
#define SG_K8S_NAMESPACE_MAX 63 /* a DNS label */
#define SG_K8S_NAME_MAX 253     /* a DNS subdomain */
#define SG_CGROUP_PATH_MAX 4096

/* What a cgroup's path says: "" where it says nothing. */
struct sg_cgroup_ids {
	char container_id[SG_CONTAINER_ID_LEN + 1];
	char pod_uid[SG_POD_UID_MAX + 1]; /* with dashes, as the API server writes it */
};

/* Parses a cgroup v2 path ("/kubepods.slice/.../cri-containerd-ID.scope"):
 * the innermost container and pod it names.  Anything that is not exactly
 * one of the known shapes names nothing. */
void sg_cgroup_parse(const char *path, struct sg_cgroup_ids *ids);

/* "NAMESPACE_NAME_UID", a kubelet pod log directory's name: true with its
 * parts when each is what Kubernetes allows (a DNS label, a DNS subdomain,
 * a UID); false for anything else. */
bool sg_pod_log_dir_parse(const char *dirname, char ns[SG_K8S_NAMESPACE_MAX + 1], char name[SG_K8S_NAME_MAX + 1],
			  char uid[SG_POD_UID_MAX + 1]);

/* The pod of uid in logs_dir (the kubelet's /var/log/pods): its namespace
 * and name.  Reads at most a bounded number of entries; false if not found. */
bool sg_pod_names_find(const char *logs_dir, const char *uid, char ns[SG_K8S_NAMESPACE_MAX + 1],
		       char name[SG_K8S_NAME_MAX + 1]);

/* "POD_NAMESPACE_CONTAINER-ID.log", the name of a kubelet's container log
 * link (/var/log/containers): true with the container's name when the
 * name has that shape, each part as Kubernetes allows it, and its ID is
 * id, its pod pod and its namespace ns. */
bool sg_container_log_parse(const char *filename, const char *id, const char *pod, const char *ns,
			    char name[SG_K8S_NAMESPACE_MAX + 1]);

/* The name of the container id of pod ns/pod in logs_dir (the kubelet's
 * /var/log/containers), read with a bound; false if not found. */
bool sg_container_name_find(const char *logs_dir, const char *id, const char *pod, const char *ns,
			    char name[SG_K8S_NAMESPACE_MAX + 1]);

#endif
