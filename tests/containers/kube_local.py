#!/usr/bin/env python3
"""kube_local.py MANIFEST NAME DSHM LOGS WORKLOAD_SCRIPT PATTERNS FOLLOW_ARGS: the example
manifest (contrib/kubernetes/vllm-shmguard.yaml) as the real-runtime test
plays it with podman, on stdout.  Changed, and only that:
- its name, NAME (unique per run);
- the images, for those tests/containers/images.sh imports (no registry),
  never pulled; the server's command, for WORKLOAD_SCRIPT (a /bin/sh script)
  and its name patterns, for PATTERNS;
- /dev/shm: the emptyDir `medium: Memory` becomes a hostPath on DSHM, a
  tmpfs the test mounts, since podman 4.3 makes that emptyDir a directory on
  disk, not a tmpfs;
- /run/shmguard (the agent's creator records): WHERE/creators;
- /var/log/pods: LOGS, a directory of the test's, where it writes the CRI
  logs the sidecar follows (podman keeps its own elsewhere, one per
  container); the sidecar's reclaim interval: 1 s, its follower's matching
  options: FOLLOW_ARGS;
- the downward API's metadata.namespace, which podman 4.3 refuses ("not
  valid or not supported"): the value "default";
- podman's init containers kept after they ran (its annotation
  io.podman.annotations.init.container.type "always"): podman 4.3 removes a
  "once" one right after its exit, before its own cleanup has marked it
  stopped, and then fails the whole play ("cannot remove container ... as it
  is running");
- the seccomp profiles, the same, said the way podman 4.3 reads them: it
  ignores securityContext.seccompProfile and takes the annotations
  seccomp.security.alpha.kubernetes.io/pod and
  container.seccomp.security.alpha.kubernetes.io/NAME ("runtime/default",
  "localhost/FILE" under kube play's --seccomp-profile-root, "unconfined");
  without them it applies its default profile to every container;
- the probes, dropped: podman runs an httpGet probe as curl inside the
  container, which these images do not have; and the ports, which podman
  4.3 publishes on the host's (the pods here have no network).

kube_local.py --agent MANIFEST NAME DSHM LOGS DIR SECCOMP_DIR [SECCOMP]: the node
agent's DaemonSet (contrib/kubernetes/shmguard-node.yaml) as one node's pod,
each of its containers (init containers first) as the `podman run` arguments
that ask what its spec asks: podman 4.3's kube play ignores hostPID, which
the agent needs.  An argument a line, an empty line after each container's.  Its
pod's seccomp profile is SECCOMP_DIR/FILE for Localhost FILE, or SECCOMP
("default": podman's, as RuntimeDefault) when given.  The host paths the test
machine has no kubelet for (the kubelet's pods directory, its container
logs) are under DIR, the pods' logs are LOGS, the host's /dev/shm the test's
tmpfs DSHM, each ConfigMap volume (the node's patterns) a directory of its
files under DIR; --reclaim-dry-run is added to the agent's arguments, so that its
reclaim passes remove nothing of this machine's.

kube_local.py --agent-args MANIFEST DIR: the node agent's own arguments, an
argument a line, each ConfigMap volume's files under DIR and its mount path
in them made that directory: tests/integration/test_node.c runs the agent as
the DaemonSet does, on the machine."""
import os
import sys
import yaml


def seccomp_annotation(profile):
    return {'RuntimeDefault': 'runtime/default', 'Unconfined': 'unconfined'}.get(
        profile['type'], f"localhost/{profile.get('localhostProfile')}")


def podman_seccomp(metas, spec):
    """The seccomp profiles of spec as podman 4.3's annotations, on metas."""
    notes = {}
    if (spec.get('securityContext') or {}).get('seccompProfile'):
        notes['seccomp.security.alpha.kubernetes.io/pod'] = seccomp_annotation(spec['securityContext']['seccompProfile'])
    for c in spec.get('initContainers', []) + spec['containers']:
        prof = (c.get('securityContext') or {}).get('seccompProfile')
        if prof:
            notes[f"container.seccomp.security.alpha.kubernetes.io/{c['name']}"] = seccomp_annotation(prof)
    for meta in metas:
        meta.setdefault('annotations', {}).update(notes)
    return notes


def drop_probes(spec):
    for c in spec.get('initContainers', []) + spec['containers']:
        for key in ('livenessProbe', 'readinessProbe', 'startupProbe', 'ports'):
            c.pop(key, None)


def memory(q):
    return q.replace('Mi', 'm').replace('Gi', 'g')


def podman_run(spec, c, name, seccomp, hosts, detach):
    """The podman run arguments of container c of spec, named name."""
    sc = c.get('securityContext') or {}
    args = ['run', '--name', name, '--network', 'none', '--restart', 'no', '-d' if detach else '--rm']
    if spec.get('hostPID'):
        args += ['--pid', 'host']
    if seccomp:
        args += ['--security-opt', f"seccomp={seccomp}"]
    if sc.get('allowPrivilegeEscalation') is False:
        args += ['--security-opt', 'no-new-privileges']
    if sc.get('readOnlyRootFilesystem'):
        args += ['--read-only']
    if 'runAsUser' in sc:
        args += ['--user', str(sc['runAsUser'])]
    caps = sc.get('capabilities') or {}
    args += [f"--cap-drop={x}" for x in caps.get('drop', [])] + [f"--cap-add={x}" for x in caps.get('add', [])]
    if (c.get('resources') or {}).get('limits', {}).get('memory'):
        args += ['--memory', memory(c['resources']['limits']['memory'])]
    volumes = {v['name']: v for v in spec.get('volumes', [])}
    for m in c.get('volumeMounts', []):
        host = volumes[m['name']]['hostPath']['path']
        opts = ['ro'] if m.get('readOnly') else []
        if m.get('mountPropagation') == 'HostToContainer':
            opts.append('rslave')
        args += ['-v', f"{hosts.get(host, host)}:{m['mountPath']}" + (':' + ','.join(opts) if opts else '')]
    return args + ['localhost/shmguard:test'] + c.get('command', []) + c.get('args', [])


def config_maps(docs, spec, where):
    """Each configMap volume as a directory of its files under where."""
    maps = {d['metadata']['name']: d.get('data', {}) for d in docs if d['kind'] == 'ConfigMap'}
    for v in spec.get('volumes', []):
        if 'configMap' in v:
            path = f"{where}/configmap-{v['name']}"
            os.makedirs(path, exist_ok=True)
            for key, text in maps[v['configMap']['name']].items():
                with open(f"{path}/{key}", 'w') as f:
                    f.write(text)
            v['hostPath'] = {'path': path}


if sys.argv[1] == '--agent-args':
    manifest, where = sys.argv[2:4]
    docs = [d for d in yaml.safe_load_all(open(manifest)) if d]
    (ds,) = [d for d in docs if d['kind'] == 'DaemonSet']
    spec = ds['spec']['template']['spec']
    config_maps(docs, spec, where)
    (agent,) = spec['containers']
    mounts = {m['mountPath']: f"{where}/configmap-{m['name']}" for m in agent.get('volumeMounts', [])
              if 'configMap' in {v['name']: v for v in spec['volumes']}[m['name']]}
    for arg in agent['args']:
        for path, local in mounts.items():
            if arg.startswith(path + '/'):
                arg = local + arg[len(path):]
        print(arg)
    sys.exit(0)

if sys.argv[1] == '--agent':
    manifest, name, dshm, logs, where, profiles = sys.argv[2:8]
    docs = [d for d in yaml.safe_load_all(open(manifest)) if d]
    (ds,) = [d for d in docs if d['kind'] == 'DaemonSet']
    spec = ds['spec']['template']['spec']
    config_maps(docs, spec, where)
    prof = (spec.get('securityContext') or {}).get('seccompProfile') or {}
    seccomp = {'Localhost': f"{profiles}/{prof.get('localhostProfile')}", 'Unconfined': 'unconfined'}.get(prof.get('type'))
    if len(sys.argv) > 8:
        seccomp = None if sys.argv[8] == 'default' else sys.argv[8]
    hosts = {'/var/lib/kubelet/pods': f"{where}/kubelet-pods", '/var/log/containers': f"{where}/containers",
             '/var/log/pods': logs, '/dev/shm': dshm, '/run/shmguard': f"{where}/creators"}
    (agent,) = spec['containers']
    agent['args'] = agent['args'] + ['--reclaim-dry-run']
    for c in spec.get('initContainers', []) + spec['containers']:
        run = podman_run(spec, c, f"{name}-{c['name']}", seccomp, hosts, c is agent)
        sys.stdout.write(''.join(a + '\n' for a in run) + '\n')
    sys.exit(0)

manifest, name, dshm, logs, script, patterns, follow_args = sys.argv[1:]
docs = [d for d in yaml.safe_load_all(open(manifest)) if d]
(deploy,) = [d for d in docs if d['kind'] == 'Deployment']
deploy['metadata']['name'] = name
spec = deploy['spec']['template']['spec']
for meta in deploy['metadata'], deploy['spec']['template']['metadata']:
    meta.setdefault('annotations', {})['io.podman.annotations.init.container.type'] = 'always'
if 'seccomp.security.alpha.kubernetes.io/pod' not in podman_seccomp(
        [deploy['metadata'], deploy['spec']['template']['metadata']], spec):
    sys.exit(f"{manifest}: the pod has no seccomp profile")
drop_probes(spec)
images = {'shmguard-shim': 'localhost/shmguard-shim:test', 'shmguard': 'localhost/shmguard:test'}


def set_env(c, key, value):
    c['env'] = [e for e in c.get('env', []) if e['name'] != key] + [{'name': key, 'value': value}]


for c in spec['initContainers'] + spec['containers']:
    base = c['image'].rsplit('/', 1)[-1].split(':')[0]
    c['image'] = images.get(base, 'localhost/sg-workload:test')
    c['imagePullPolicy'] = 'Never'
    if c['image'] == 'localhost/sg-workload:test':
        c['command'] = ['/bin/sh', '-c', script]
        set_env(c, 'SHMGUARD_PATTERNS', patterns)
    for e in c.get('env', []):
        if e.get('valueFrom', {}).get('fieldRef', {}).get('fieldPath') == 'metadata.namespace':
            del e['valueFrom']
            e['value'] = 'default'
    if c['name'] == 'shmguard':
        set_env(c, 'SHMGUARD_RECLAIM_INTERVAL', '1')
        set_env(c, 'SHMGUARD_FOLLOW_DIR', '/var/log/pods/' + name)
        set_env(c, 'SHMGUARD_FOLLOW_ARGS', follow_args)
for v in spec['volumes']:
    if v['name'] == 'dshm':
        del v['emptyDir']
        v['hostPath'] = {'path': dshm, 'type': 'Directory'}
    elif v.get('hostPath', {}).get('path') == '/var/log/pods':
        v['hostPath']['path'] = logs
yaml.safe_dump(deploy, sys.stdout, sort_keys=False)
