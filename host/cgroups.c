/* Workloads from cgroups (cgroups.h). */
#include "cgroups.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A pods log directory is read this far at most (a node runs ~110 pods). */
#define POD_DIRS_MAX 100000

static bool is_hex(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

/* A pod UID of n bytes, its dashes written as sep ('-', or '_' in a systemd
 * unit's name), copied with dashes to uid; or a static pod's 32 hex digits. */
static bool take_uid(const char *s, size_t n, char sep, char uid[SG_POD_UID_MAX + 1])
{
	if (n == 32 && is_hex(s, n)) {
		memcpy(uid, s, n);
		uid[n] = '\0';
		return true;
	}
	if (n != 36)
		return false;
	for (size_t i = 0; i < n; i++) {
		bool dash = i == 8 || i == 13 || i == 18 || i == 23;
		if (dash ? s[i] != sep : !is_hex(s + i, 1))
			return false;
		uid[i] = dash ? '-' : s[i];
	}
	uid[n] = '\0';
	return true;
}

/* c (n bytes) is prefix, 64 hex digits, suffix: the ID copied to id. */
static bool take_container(const char *c, size_t n, const char *prefix, const char *suffix,
			   char id[SG_CONTAINER_ID_LEN + 1])
{
	size_t p = strlen(prefix), s = strlen(suffix);

	if (n != p + SG_CONTAINER_ID_LEN + s || memcmp(c, prefix, p) != 0 || memcmp(c + n - s, suffix, s) != 0 ||
	    !is_hex(c + p, SG_CONTAINER_ID_LEN))
		return false;
	memcpy(id, c + p, SG_CONTAINER_ID_LEN);
	id[SG_CONTAINER_ID_LEN] = '\0';
	return true;
}

static bool comp_is(const char *c, size_t n, const char *s)
{
	return strlen(s) == n && memcmp(c, s, n) == 0;
}

/* The next component of *p, in *c and *n; false at the end. */
static bool next_comp(const char **p, const char **c, size_t *n)
{
	while (**p == '/')
		(*p)++;
	if (!**p)
		return false;
	*c = *p;
	*n = strcspn(*p, "/");
	*p += *n;
	return true;
}

/* kubelet's systemd layout: /kubepods.slice[/kubepods-QOS.slice]/
 * kubepods[-QOS]-pod<UID with _>.slice/<runtime>-<ID>.scope[/...]. */
static bool parse_kube_systemd(const char *path, struct sg_cgroup_ids *ids)
{
	static const char *const runtimes[] = {"cri-containerd-", "crio-", "docker-"};
	const char *p = path, *c;
	char prefix[32] = "kubepods-";
	size_t n;

	if (!next_comp(&p, &c, &n) || !comp_is(c, n, "kubepods.slice") || !next_comp(&p, &c, &n))
		return false;
	if (comp_is(c, n, "kubepods-burstable.slice") || comp_is(c, n, "kubepods-besteffort.slice")) {
		snprintf(prefix, sizeof(prefix), "%.*s-", (int)(n - strlen(".slice")), c);
		if (!next_comp(&p, &c, &n))
			return false;
	}
	size_t pre = strlen(prefix);
	if (n < pre + 3 + 6 || memcmp(c, prefix, pre) != 0 || memcmp(c + pre, "pod", 3) != 0 ||
	    memcmp(c + n - 6, ".slice", 6) != 0 || !take_uid(c + pre + 3, n - pre - 3 - 6, '_', ids->pod_uid))
		return false;
	if (next_comp(&p, &c, &n))
		for (size_t r = 0; r < sizeof(runtimes) / sizeof(runtimes[0]); r++)
			if (take_container(c, n, runtimes[r], ".scope", ids->container_id))
				break;
	return true;
}

/* kubelet's cgroupfs layout: /kubepods[/QOS]/pod<UID>/<ID>[/...]. */
static bool parse_kube_cgroupfs(const char *path, struct sg_cgroup_ids *ids)
{
	const char *p = path, *c;
	size_t n;

	if (!next_comp(&p, &c, &n) || !comp_is(c, n, "kubepods") || !next_comp(&p, &c, &n))
		return false;
	if ((comp_is(c, n, "burstable") || comp_is(c, n, "besteffort")) && !next_comp(&p, &c, &n))
		return false;
	if (n < 3 || memcmp(c, "pod", 3) != 0 || !take_uid(c + 3, n - 3, '-', ids->pod_uid))
		return false;
	if (next_comp(&p, &c, &n))
		take_container(c, n, "", "", ids->container_id);
	return true;
}

/* podman: the innermost libpod-<ID>[.scope] (its conmon's is libpod-conmon-). */
static void parse_podman(const char *path, struct sg_cgroup_ids *ids)
{
	const char *p = path, *c;
	size_t n;

	while (next_comp(&p, &c, &n))
		if (!take_container(c, n, "libpod-", ".scope", ids->container_id))
			take_container(c, n, "libpod-", "", ids->container_id);
}

void sg_cgroup_parse(const char *path, struct sg_cgroup_ids *ids)
{
	*ids = (struct sg_cgroup_ids){0};
	if (!path || path[0] != '/')
		return;
	if (parse_kube_systemd(path, ids) || parse_kube_cgroupfs(path, ids))
		return;
	*ids = (struct sg_cgroup_ids){0}; /* a layout half matched names nothing */
	parse_podman(path, ids);
}

static bool dns_label(const char *s, size_t n, bool dots)
{
	if (n == 0)
		return false;
	for (size_t i = 0; i < n; i++) {
		char ch = s[i];
		bool alnum = (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9');
		if (!alnum && ((ch != '-' && !(dots && ch == '.')) || i == 0 || i == n - 1))
			return false;
	}
	return true;
}

bool sg_pod_log_dir_parse(const char *dirname, char ns[SG_K8S_NAMESPACE_MAX + 1], char name[SG_K8S_NAME_MAX + 1],
			  char uid[SG_POD_UID_MAX + 1])
{
	const char *first = strchr(dirname, '_'), *last = strrchr(dirname, '_');
	size_t nsl, namel;

	if (!first || first == last || memchr(first + 1, '_', (size_t)(last - first - 1)))
		return false;
	nsl = (size_t)(first - dirname);
	namel = (size_t)(last - first - 1);
	if (nsl > SG_K8S_NAMESPACE_MAX || namel > SG_K8S_NAME_MAX || !dns_label(dirname, nsl, false) ||
	    !dns_label(first + 1, namel, true) || !take_uid(last + 1, strlen(last + 1), '-', uid))
		return false;
	memcpy(ns, dirname, nsl);
	ns[nsl] = '\0';
	memcpy(name, first + 1, namel);
	name[namel] = '\0';
	return true;
}

bool sg_pod_names_find(const char *logs_dir, const char *uid, char ns[SG_K8S_NAMESPACE_MAX + 1],
		       char name[SG_K8S_NAME_MAX + 1])
{
	DIR *d = opendir(logs_dir);
	struct dirent *e;
	char found_uid[SG_POD_UID_MAX + 1];
	bool found = false;

	if (!d)
		return false;
	for (unsigned i = 0; !found && i < POD_DIRS_MAX && (e = readdir(d)); i++)
		found = (e->d_type == DT_DIR || e->d_type == DT_UNKNOWN) &&
			sg_pod_log_dir_parse(e->d_name, ns, name, found_uid) && strcmp(found_uid, uid) == 0;
	closedir(d);
	return found;
}

bool sg_container_log_parse(const char *filename, const char *id, const char *pod, const char *ns,
			    char name[SG_K8S_NAMESPACE_MAX + 1])
{
	size_t n = strlen(filename), podl = strlen(pod), nsl = strlen(ns), namel;
	const char *tail = filename + n - (1 + SG_CONTAINER_ID_LEN + 4);

	/* pod _ ns _ name - ID .log: the pod and namespace are the known ones,
	 * so only the container's name is left to check. */
	if (n < podl + 1 + nsl + 1 + 1 + 1 + SG_CONTAINER_ID_LEN + 4 || strcmp(filename + n - 4, ".log") != 0 ||
	    tail[0] != '-' || memcmp(tail + 1, id, SG_CONTAINER_ID_LEN) != 0 || strlen(id) != SG_CONTAINER_ID_LEN ||
	    memcmp(filename, pod, podl) != 0 || filename[podl] != '_' || memcmp(filename + podl + 1, ns, nsl) != 0 ||
	    filename[podl + 1 + nsl] != '_')
		return false;
	namel = (size_t)(tail - (filename + podl + 1 + nsl + 1));
	if (namel > SG_K8S_NAMESPACE_MAX || !dns_label(filename + podl + 1 + nsl + 1, namel, false))
		return false;
	memcpy(name, filename + podl + 1 + nsl + 1, namel);
	name[namel] = '\0';
	return true;
}

bool sg_container_name_find(const char *logs_dir, const char *id, const char *pod, const char *ns,
			    char name[SG_K8S_NAMESPACE_MAX + 1])
{
	DIR *d;
	struct dirent *e;
	bool found = false;

	if (!*pod || !*ns || strlen(id) != SG_CONTAINER_ID_LEN || !(d = opendir(logs_dir)))
		return false;
	for (unsigned i = 0; !found && i < POD_DIRS_MAX && (e = readdir(d)); i++)
		found = sg_container_log_parse(e->d_name, id, pod, ns, name);
	closedir(d);
	return found;
}
