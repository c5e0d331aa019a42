/* Workloads from cgroup paths and the kubelet's pod and container log
 * directories (host/cgroups.c): what each known layout names, and nothing
 * from a path or name that is not exactly one of them. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroups.h"

#define UID "0b8e3f9a-1c2d-4e5f-8a9b-0c1d2e3f4a5b"
#define UID_ "0b8e3f9a_1c2d_4e5f_8a9b_0c1d2e3f4a5b"
#define CID "4f1ac0ffee0123456789abcdef0123456789abcdef0123456789abcdef012345"

static struct sg_cgroup_ids parsed(const char *path)
{
	struct sg_cgroup_ids ids;

	sg_cgroup_parse(path, &ids);
	return ids;
}

static void expect_ids(const char *path, const char *container, const char *pod)
{
	struct sg_cgroup_ids ids = parsed(path);

	cr_expect_str_eq(ids.container_id, container, "container of %s", path);
	cr_expect_str_eq(ids.pod_uid, pod, "pod of %s", path);
}

Test(cgroups, kubelet_systemd_layout)
{
	expect_ids("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_ ".slice/cri-containerd-" CID
		   ".scope", CID, UID);
	expect_ids("/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" UID_ ".slice/crio-" CID ".scope",
		   CID, UID);
	expect_ids("/kubepods.slice/kubepods-pod" UID_ ".slice/docker-" CID ".scope", CID, UID);
	/* A process in a child of the container's cgroup is still the container's. */
	expect_ids("/kubepods.slice/kubepods-pod" UID_ ".slice/cri-containerd-" CID ".scope/init.scope", CID, UID);
	/* The pod's own cgroup: a pod and no container. */
	expect_ids("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_ ".slice", "", UID);
	/* CRI-O's conmon is not the container. */
	expect_ids("/kubepods.slice/kubepods-pod" UID_ ".slice/crio-conmon-" CID ".scope", "", UID);
	/* A static pod's UID is 32 hex digits. */
	expect_ids("/kubepods.slice/kubepods-pod0123456789abcdef0123456789abcdef.slice", "",
		   "0123456789abcdef0123456789abcdef");
}

Test(cgroups, kubelet_cgroupfs_layout)
{
	expect_ids("/kubepods/burstable/pod" UID "/" CID, CID, UID);
	expect_ids("/kubepods/besteffort/pod" UID "/" CID, CID, UID);
	expect_ids("/kubepods/pod" UID "/" CID, CID, UID);
	expect_ids("/kubepods/pod" UID, "", UID);
}

Test(cgroups, podman)
{
	expect_ids("/machine.slice/libpod-" CID ".scope", CID, "");
	expect_ids("/libpod_parent/libpod-" CID, CID, "");
	expect_ids("/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" CID ".scope/container", CID,
		   "");
	expect_ids("/machine.slice/libpod-conmon-" CID ".scope", "", "");
}

Test(cgroups, hostile_paths_name_nothing)
{
	static const char *const paths[] = {
		NULL, "", "kubepods/pod" UID "/" CID, /* not from the root */
		"/", "//", "/kubepods.slice", "/kubepods.slice/kubepods-pod.slice",
		/* A pod slice where kubelet never puts one: a delegated user's tree. */
		"/user.slice/kubepods.slice/kubepods-pod" UID_ ".slice/cri-containerd-" CID ".scope",
		"/kubepods.slice/kubepods-burstable.slice/kubepods-besteffort-pod" UID_ ".slice",
		/* The UID with dashes where systemd has underscores, and back. */
		"/kubepods.slice/kubepods-pod" UID ".slice", "/kubepods/pod" UID_,
		/* Upper case, a digit short, one too many, a bad character. */
		"/kubepods/pod0B8E3F9A-1C2D-4E5F-8A9B-0C1D2E3F4A5B", "/kubepods/pod0b8e3f9a-1c2d-4e5f-8a9b-0c1d2e3f4a5",
		"/kubepods/pod" UID "0", "/kubepods/pod0b8e3f9a-1c2d-4e5f-8a9b-0c1d2e3f4a5g",
		"/kubepods/pod0b8e3f9a-1c2d-4e5f-8a9b-0c1d2e3f4a5\n", "/kubepods/pod" UID "\n/" CID,
		"/kubepods/pod../" CID, "/kubepods/../kubepods/pod" UID,
		"/kubepods/burstable/burstable/pod" UID,
	};

	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++)
		expect_ids(paths[i] ? paths[i] : "(null)", "", "");
	expect_ids(NULL, "", "");
}

Test(cgroups, hostile_container_ids_are_refused)
{
	static const char *const paths[] = {
		"/kubepods/pod" UID "/" CID "0",                          /* 65 digits */
		"/kubepods/pod" UID "/4f1ac0ffee0123456789abcdef0123456789abcdef0123456789abcdef01234", /* 63 */
		"/kubepods/pod" UID "/4F1AC0FFEE0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF012345",
		"/kubepods.slice/kubepods-pod" UID_ ".slice/cri-containerd-" CID ".scope.evil",
		"/kubepods.slice/kubepods-pod" UID_ ".slice/runc-" CID ".scope",
		"/machine.slice/libpod-" CID "\x1b[2J.scope", "/machine.slice/libpod-" CID "x",
	};

	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++)
		cr_expect_str_eq(parsed(paths[i]).container_id, "", "%zu", i);
}

static bool pod_dir(const char *name, char *ns, char *pod, char *uid)
{
	return sg_pod_log_dir_parse(name, ns, pod, uid);
}

Test(cgroups, pod_log_directories)
{
	char ns[SG_K8S_NAMESPACE_MAX + 1], pod[SG_K8S_NAME_MAX + 1], uid[SG_POD_UID_MAX + 1];
	char long_name[300];

	cr_assert(pod_dir("serving_vllm-7d9f8-abcde_" UID, ns, pod, uid));
	cr_expect_str_eq(ns, "serving");
	cr_expect_str_eq(pod, "vllm-7d9f8-abcde");
	cr_expect_str_eq(uid, UID);
	cr_assert(pod_dir("kube-system_etcd.node-1_0123456789abcdef0123456789abcdef", ns, pod, uid));
	cr_expect_str_eq(pod, "etcd.node-1");
	/* Neither a namespace nor a name has an underscore; each is a DNS name. */
	cr_expect_not(pod_dir("a_b_c_" UID, ns, pod, uid));
	cr_expect_not(pod_dir("serving_" UID, ns, pod, uid));
	cr_expect_not(pod_dir("_vllm_" UID, ns, pod, uid));
	cr_expect_not(pod_dir("serving__" UID, ns, pod, uid));
	cr_expect_not(pod_dir("Serving_vllm_" UID, ns, pod, uid));
	cr_expect_not(pod_dir("serving_vllm\n::error::x_" UID, ns, pod, uid));
	cr_expect_not(pod_dir("serving_vllm\x1b[2J_" UID, ns, pod, uid));
	cr_expect_not(pod_dir("serv.ing_vllm_" UID, ns, pod, uid), "a namespace is a label: no dot");
	cr_expect_not(pod_dir("serving_-vllm_" UID, ns, pod, uid));
	cr_expect_not(pod_dir("serving_vllm_" UID_, ns, pod, uid));
	cr_expect_not(pod_dir("serving_vllm_not-a-uid", ns, pod, uid));
	memset(long_name, 'a', sizeof(long_name));
	snprintf(long_name, sizeof(long_name), "%.*s_vllm_%s", 64, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", UID);
	cr_expect_not(pod_dir(long_name, ns, pod, uid), "a namespace of 64 bytes");
}

Test(cgroups, pod_names_are_found_by_uid)
{
	char dir[] = "/tmp/sgt-cgroups-XXXXXX", path[128], ns[SG_K8S_NAMESPACE_MAX + 1], pod[SG_K8S_NAME_MAX + 1];

	cr_assert(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/other_pod_" "11111111-2222-3333-4444-555555555555", dir);
	cr_assert(mkdir(path, 0755) == 0);
	snprintf(path, sizeof(path), "%s/bad_name\n_" UID, dir);
	cr_assert(mkdir(path, 0755) == 0);
	cr_expect_not(sg_pod_names_find(dir, UID, ns, pod), "only a hostile directory has that UID");
	snprintf(path, sizeof(path), "%s/serving_vllm-0_" UID, dir);
	cr_assert(mkdir(path, 0755) == 0);
	cr_assert(sg_pod_names_find(dir, UID, ns, pod));
	cr_expect_str_eq(ns, "serving");
	cr_expect_str_eq(pod, "vllm-0");
	cr_expect_not(sg_pod_names_find("/nonexistent-sgt", UID, ns, pod));
	snprintf(path, sizeof(path), "rm -rf '%s'", dir);
	cr_assert(system(path) == 0);
}

Test(cgroups, container_names_from_the_kubelets_log_links)
{
	char name[SG_K8S_NAMESPACE_MAX + 1];

	cr_assert(sg_container_log_parse("vllm-0_serving_server-" CID ".log", CID, "vllm-0", "serving", name));
	cr_expect_str_eq(name, "server");
	/* Another container, pod or namespace; not a link's name; a hostile name. */
	cr_expect_not(sg_container_log_parse("vllm-0_serving_server-" CID ".log",
					     "5f1ac0ffee0123456789abcdef0123456789abcdef0123456789abcdef012345", "vllm-0",
					     "serving", name));
	cr_expect_not(sg_container_log_parse("vllm-1_serving_server-" CID ".log", CID, "vllm-0", "serving", name));
	cr_expect_not(sg_container_log_parse("vllm-0_other_server-" CID ".log", CID, "vllm-0", "serving", name));
	cr_expect_not(sg_container_log_parse("vllm-0_serving_server-" CID, CID, "vllm-0", "serving", name));
	cr_expect_not(sg_container_log_parse("vllm-0_serving_-" CID ".log", CID, "vllm-0", "serving", name));
	cr_expect_not(sg_container_log_parse("vllm-0_serving_a_b-" CID ".log", CID, "vllm-0", "serving", name));
	cr_expect_not(sg_container_log_parse("vllm-0_serving_x\n::error::y-" CID ".log", CID, "vllm-0", "serving", name));
	cr_expect_not(sg_container_log_parse("vllm-0_serving_Server-" CID ".log", CID, "vllm-0", "serving", name));
	cr_expect_not(sg_container_log_parse("vllm-0_serving_server-" CID ".log", "short", "vllm-0", "serving", name));
	cr_expect_not(sg_container_log_parse(".log", CID, "vllm-0", "serving", name));
}
