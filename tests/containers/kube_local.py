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
  is running")."""
import sys
import yaml

manifest, name, dshm, logs, script, patterns, follow_args = sys.argv[1:]
docs = [d for d in yaml.safe_load_all(open(manifest)) if d]
(deploy,) = [d for d in docs if d['kind'] == 'Deployment']
deploy['metadata']['name'] = name
spec = deploy['spec']['template']['spec']
for meta in deploy['metadata'], deploy['spec']['template']['metadata']:
    meta.setdefault('annotations', {})['io.podman.annotations.init.container.type'] = 'always'
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
