#!/usr/bin/env python3
"""check_manifests.py CONTRIB_DIR: the Kubernetes manifests of contrib/kubernetes,
checked for what podman cannot run (a DaemonSet) and what it would not notice:
the node agent's privileges, mounts, port and tolerations as docs/kubernetes.md
says them, and in every manifest, mounts naming volumes that exist and the shim
preloaded from a volume that an initContainer fills.  (tests/containers/test_pod.sh
runs the pod-level ones with `podman kube play`.)"""
import sys
import yaml

failures = []


def check(ok, what):
    if not ok:
        failures.append(what)


def pod_spec(doc):
    return doc['spec']['template']['spec'] if 'template' in doc.get('spec', {}) else doc['spec']


def containers(spec):
    return spec.get('initContainers', []) + spec['containers']


def check_volumes(name, spec):
    volumes = {v['name']: v for v in spec.get('volumes', [])}
    for c in containers(spec):
        for m in c.get('volumeMounts', []):
            check(m['name'] in volumes, f"{name}: {c['name']} mounts an undefined volume {m['name']}")
    return volumes


def env(c):
    return {e['name']: e.get('value') for e in c.get('env', [])}


def check_node_agent(path):
    docs = [d for d in yaml.safe_load_all(open(path)) if d]
    ds = [d for d in docs if d['kind'] == 'DaemonSet']
    check(len(ds) == 1, f"{path}: one DaemonSet expected")
    if not ds:
        return
    d = ds[0]
    check(d['apiVersion'] == 'apps/v1', f"{path}: apiVersion apps/v1")
    check(d['spec']['selector']['matchLabels'].items() <= d['spec']['template']['metadata']['labels'].items(),
          f"{path}: the selector does not match the template's labels")
    spec = pod_spec(d)
    check(spec.get('hostPID') is True, f"{path}: hostPID")
    check({'operator': 'Exists'} in spec.get('tolerations', []), f"{path}: does not tolerate every taint")
    volumes = check_volumes(path, spec)
    (agent,) = spec['containers']
    check(agent['args'][0] == 'audit', f"{path}: the agent runs `shmguard audit`")
    listen = agent['args'][agent['args'].index('--listen') + 1]
    check('--reclaim-dead' in agent['args'], f"{path}: the agent does not reclaim dead creators' files")
    ports = {p['name']: p['containerPort'] for p in agent.get('ports', [])}
    check(ports.get('metrics') == int(listen.rsplit(':', 1)[1]), f"{path}: the metrics port is not --listen's")
    sc = agent['securityContext']
    check(sc.get('privileged') is False, f"{path}: privileged")
    check(sc['capabilities']['drop'] == ['ALL'], f"{path}: capabilities not dropped first")
    caps = set(sc['capabilities']['add'])
    for cap in ('BPF', 'PERFMON', 'SYS_PTRACE', 'DAC_READ_SEARCH', 'FOWNER'):
        check(cap in caps, f"{path}: CAP_{cap} missing")
    check('SYS_ADMIN' not in caps, f"{path}: CAP_SYS_ADMIN, which kernels from 5.9 do not demand")
    mounts = {m['mountPath']: m for m in agent['volumeMounts']}
    for want, host in (('/sys/kernel/btf', '/sys/kernel/btf'), ('/var/lib/kubelet/pods', '/var/lib/kubelet/pods'),
                       ('/var/log/pods', '/var/log/pods'), ('/var/log/containers', '/var/log/containers'),
                       ('/sys/fs/cgroup', '/sys/fs/cgroup')):
        m = mounts.get(want)
        check(m is not None and volumes.get(m['name'], {}).get('hostPath', {}).get('path') == host,
              f"{path}: {want} is not the host's {host}")
    kubelet = mounts.get('/var/lib/kubelet/pods', {})
    check(kubelet.get('mountPropagation') == 'HostToContainer',
          f"{path}: the kubelet's pods directory without HostToContainer propagation")


def check_server(path):
    for doc in yaml.safe_load_all(open(path)):
        if not doc or doc['kind'] not in ('Pod', 'Deployment'):
            continue
        spec = pod_spec(doc)
        volumes = check_volumes(path, spec)
        filled = {m['name'] for c in spec.get('initContainers', []) for m in c.get('volumeMounts', [])}
        preloading = [c for c in spec['containers'] if 'LD_PRELOAD' in env(c)]
        check(preloading, f"{path}: no container preloads the shim")
        for c in preloading:
            lib = env(c)['LD_PRELOAD']
            mount = [m for m in c.get('volumeMounts', []) if lib.startswith(m['mountPath'].rstrip('/') + '/')]
            check(mount and mount[0]['name'] in filled and 'emptyDir' in volumes[mount[0]['name']],
                  f"{path}: {c['name']} preloads {lib}, which no initContainer puts into a shared volume")
            check(all(k in env(c) for k in ('SHMGUARD_PATTERNS', 'SHMGUARD_ABORT_DIR')),
                  f"{path}: {c['name']} without its SHMGUARD_* settings")
        dirs = {env(c).get('SHMGUARD_ABORT_DIR') for c in spec['containers'] if 'SHMGUARD_ABORT_DIR' in env(c)}
        check(len(dirs) == 1, f"{path}: the server and the follower use different abort directories: {dirs}")


contrib = sys.argv[1]
check_node_agent(f"{contrib}/kubernetes/shmguard-node.yaml")
check_server(f"{contrib}/kubernetes/vllm-shmguard.yaml")
for f in failures:
    print(f, file=sys.stderr)
sys.exit(1 if failures else 0)
