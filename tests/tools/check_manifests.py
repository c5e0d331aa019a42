#!/usr/bin/env python3
"""check_manifests.py CONTRIB_DIR: the Kubernetes manifests of contrib/kubernetes,
checked for what podman cannot run (a DaemonSet) and what it would not notice:
the node agent's privileges, mounts, port and tolerations as docs/kubernetes.md
says them, and in every manifest, mounts naming volumes that exist and the shim
preloaded from a volume that an initContainer fills; what clusters' policies
ask of every pod (a seccomp profile, no unused service-account token, probes
where a port is served, pinned images, resources, no privilege escalation);
and the node agent's Localhost seccomp profile (contrib/seccomp) as the
runtime's default plus bpf and perf_event_open.  (tests/containers/test_pod.sh
runs the manifests with `podman kube play`.)

check_manifests.py --schema CONTRIB_DIR KUBECTL SCHEMA_DIR: the kustomize
base (contrib/kubernetes) and each overlay of contrib/kubernetes-overlays
rendered with `KUBECTL kustomize`, and every object validated offline against
the Kubernetes API schema (SCHEMA_DIR/validate.js, kubernetes-models).  Exit
77 (skipped) without kubectl or the schema, except in CI."""
import glob
import json
import os
import re
import shutil
import subprocess
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


# The seccomp profile types a pod may run under here, and where a Localhost
# profile of contrib/ comes from.
SECCOMP_TYPES = ('RuntimeDefault', 'Localhost')


def seccomp_of(spec, c):
    return (c.get('securityContext') or {}).get('seccompProfile') or \
        (spec.get('securityContext') or {}).get('seccompProfile')


def check_policies(path, contrib):
    """What admission policies (Pod Security Standards, Kyverno's best
    practices) ask of every pod of the manifest."""
    text = open(path).read()
    check(not re.search(r'\bissue \d+', text), f"{path}: a comment points at an issue, not at the present")
    for doc in yaml.safe_load_all(text):
        if not doc or doc['kind'] not in ('Pod', 'Deployment', 'DaemonSet'):
            continue
        spec = pod_spec(doc)
        check(spec.get('automountServiceAccountToken') is False,
              f"{path}: {doc['kind']} mounts a service-account token it does not use")
        for c in containers(spec):
            where = f"{path}: {c['name']}"
            prof = seccomp_of(spec, c)
            check(prof and prof.get('type') in SECCOMP_TYPES, f"{where}: no seccomp profile ({prof})")
            if prof and prof.get('type') == 'Localhost':
                check(os.path.exists(f"{contrib}/seccomp/{prof.get('localhostProfile')}"),
                      f"{where}: its Localhost profile {prof.get('localhostProfile')} is not in contrib/seccomp")
            image = c['image']
            check(re.search(r'(:[\w][\w.-]*|@sha256:[0-9a-f]{64})$', image.rsplit('/', 1)[-1]) and
                  not image.endswith(':latest'), f"{where}: image {image} is not pinned")
            res = c.get('resources') or {}
            check((res.get('requests') or {}).get('memory') and (res.get('limits') or {}).get('memory'),
                  f"{where}: no memory request and limit")
            sc = c.get('securityContext') or {}
            check(sc.get('allowPrivilegeEscalation') is False, f"{where}: privilege escalation allowed")
            check(sc.get('privileged') is not True, f"{where}: privileged")
            if c in spec['containers'] and c.get('ports'):
                check(c.get('livenessProbe') and c.get('readinessProbe'),
                      f"{where}: serves a port without liveness and readiness probes")


def seccomp_profile(default, allowed):
    """The runtime's default profile with the calls allowed unconditionally."""
    rules = []
    for r in default['syscalls']:
        r = dict(r, names=[n for n in r['names'] if n not in allowed])
        if r['names']:
            rules.append(r)
    return rules


def check_seccomp(path, runtime_default='/usr/share/containers/seccomp.json'):
    prof = json.load(open(path))
    agent = ['bpf', 'perf_event_open']
    check(prof['defaultAction'] == 'SCMP_ACT_ERRNO', f"{path}: does not refuse by default")
    mine = [r for r in prof['syscalls'] if set(agent) & set(r['names'])]
    check(len(mine) == 1 and sorted(mine[0]['names']) == agent and mine[0]['action'] == 'SCMP_ACT_ALLOW' and
          not mine[0].get('includes') and not mine[0].get('excludes') and not mine[0].get('args'),
          f"{path}: bpf and perf_event_open are not allowed by one unconditional rule: {mine}")
    # The rest is the runtime's default (containers-common's, podman's and
    # CRI-O's, from Moby's) as this machine has it, where it has it.
    if os.path.exists(runtime_default):
        default = json.load(open(runtime_default))
        rest = [r for r in prof['syscalls'] if r not in mine]
        check(rest == seccomp_profile(default, agent) and
              {k: v for k, v in prof.items() if k != 'syscalls'} == {k: v for k, v in default.items() if k != 'syscalls'},
              f"{path}: not the runtime default of {runtime_default} plus bpf and perf_event_open")


def render(kubectl, directory):
    out = subprocess.run([kubectl, 'kustomize', directory], capture_output=True, text=True)
    check(out.returncode == 0, f"{directory}: kubectl kustomize failed: {out.stderr.strip()}")
    return [d for d in yaml.safe_load_all(out.stdout) if d] if out.returncode == 0 else []


def check_schema(contrib, kubectl, schema_dir):
    if not shutil.which(kubectl) or not os.path.isdir(f"{schema_dir}/node_modules/kubernetes-models"):
        why = f"no {kubectl}, or no kubernetes-models in {schema_dir} (scripts/deps.sh test installs both)"
        if os.environ.get('CI') == 'true':
            failures.append(f"CI must not skip: {why}")
            return
        print(f"SKIP: {why}")
        sys.exit(77)
    dirs = [f"{contrib}/kubernetes"] + sorted(glob.glob(f"{contrib}/kubernetes-overlays/*/"))
    for d in dirs:
        docs = render(kubectl, d)
        kinds = sorted(doc['kind'] for doc in docs)
        check(kinds == ['ConfigMap', 'DaemonSet', 'Deployment'],
              f"{d}: renders {kinds}, not the agent, its patterns and the server")
        out = subprocess.run(['node', f"{schema_dir}/validate.js"], input=json.dumps(docs), capture_output=True,
                             text=True)
        print(f"{d}: {out.stdout.strip()}")
        check(out.returncode == 0, f"{d}: {out.stdout.strip()} {out.stderr.strip()}")
        if d != f"{contrib}/kubernetes":
            continue
        # The base is the manifests as they are.
        plain = [x for f in ('shmguard-node.yaml', 'vllm-shmguard.yaml')
                 for x in yaml.safe_load_all(open(f"{contrib}/kubernetes/{f}")) if x]
        check(sorted(json.dumps(x, sort_keys=True) for x in docs) == sorted(json.dumps(x, sort_keys=True) for x in plain),
              f"{d}: the base renders other objects than its manifests")


if sys.argv[1] == '--schema':
    check_schema(*sys.argv[2:5])
else:
    contrib = sys.argv[1]
    check_node_agent(f"{contrib}/kubernetes/shmguard-node.yaml")
    check_server(f"{contrib}/kubernetes/vllm-shmguard.yaml")
    for m in ('shmguard-node.yaml', 'vllm-shmguard.yaml'):
        check_policies(f"{contrib}/kubernetes/{m}", contrib)
    check_seccomp(f"{contrib}/seccomp/shmguard-node.json")
for f in failures:
    print(f, file=sys.stderr)
sys.exit(1 if failures else 0)
