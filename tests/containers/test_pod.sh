#!/usr/bin/env bash
# The example manifest (contrib/kubernetes/vllm-shmguard.yaml) with a real
# runtime: podman kube play, the images built here without a registry
# (images.sh), a server image with nothing of shmguard in it preloading the
# shim from the initContainer's volume.  Checks, on the files of the pod's
# /dev/shm (a tmpfs of the test's: podman 4.3 makes emptyDir Memory a
# directory on disk):
# 1. markers from the follower reading the server container's log (podman's
#    k8s-file, CRI format), a line split by the runtime into parts included,
#    sweep exactly the aborted requests' segments;
# 2. the server killed and restarted in place: the sidecar's sweep --dead
#    reclaims what the dead server held, and keeps the new server's files;
# 3. the sidecar follows the log directory as the kubelet lays it out
#    (N.log per start), moving on to the next file;
# 4. the pod deleted and recreated with its volume kept: sweep --dead --pod
#    on the node reclaims the old instance's files and keeps the new one's.
# 5. with 1: the node agent (system-wide `shmguard audit`, node mode),
#    started before the pod, finds the pod's /dev/shm as it appears and
#    gives the server container's figures: its aborts, 0 B left.
# 6. the node agent from its own manifest (the DaemonSet's pod, on this
#    node), under its Localhost seccomp profile (contrib/seccomp): it loads
#    its programs and serves /metrics; under podman's default profile
#    (RuntimeDefault) it is refused, and says that seccomp refused.
# 7. with 5: the node agent also records creators (--record-creators), and
#    sweep --dead reclaims, by its record alone, the file an unshimmed
#    program in a container left once the container is gone.
# The server's pod runs under the runtime's default seccomp profile, as
# its manifest asks.
#
#   test_pod.sh BUILD_DIR SOURCE_DIR      (root; exit 77: skipped)
set -uo pipefail
build=$(realpath "$1")
src=$(realpath "$2")
here=$src/tests/containers

. "$src/tests/tools/skip.sh"
[ "$(id -u)" -eq 0 ] || skip "needs root"
for p in podman runc catatonit; do
	command -v "$p" >/dev/null || [ -x "/usr/sbin/$p" ] || skip "no $p (scripts/deps.sh installs it)"
done

source "$here/podman-env.sh"
source "$here/images.sh"
name=sgc-$$
dshm=$PM_DIR/dshm
uroot=$PM_DIR/uroot
logs=$PM_DIR/logs
follower=
agent=
failures=0

fail() {
	echo "FAIL: $*" >&2
	failures=$((failures + 1))
}

# Removes what this test made before podman's own state (pm_cleanup).
cleanup() {
	[ -n "$follower" ] && kill "$follower" 2>/dev/null && wait "$follower"
	[ -n "$agent" ] && kill "$agent" 2>/dev/null && wait "$agent"
	pm kube down "$PM_DIR/pod.yaml" >/dev/null 2>&1
	umount "$PM_DIR/old-pidns" 2>/dev/null
	umount "$PM_DIR/node" 2>/dev/null
	umount "$dshm" 2>/dev/null
	umount "$uroot" 2>/dev/null
	pm_cleanup
}
trap cleanup EXIT

# Waits (up to $2 seconds) until the shell condition $1 holds.
wait_for() {
	local end=$((SECONDS + $2))
	until eval "$1"; do
		[ "$SECONDS" -lt "$end" ] || return 1
		sleep 0.1
	done
}

# The pod deleted, its volume kept.  podman's kube down has been seen to
# leave the pod behind (a second kube play then finds its name taken): what
# it said is shown, and the pod removed as kube down should have.
pod_down() {
	pm kube down "$PM_DIR/pod.yaml" >"$PM_DIR/down.out" 2>&1
	wait_for '[ -z "$(pm pod ps -q)" ]' 30 && return
	echo "note: podman kube down left the pod ($(tr '\n' ' ' <"$PM_DIR/down.out")); removing it with pod rm -f" >&2
	pm pod rm -f -a >/dev/null 2>&1
	wait_for '[ -z "$(pm pod ps -q)" ]' 30 || fail "the pod could not be removed: $(pm pod ps)"
}

count() { # GLOB under the pod's /dev/shm
	local n=0 f
	for f in "$dshm"/$1; do [ -e "$f" ] && n=$((n + 1)); done
	echo "$n"
}

pm_build_images "$build" "$src" || { echo "FAIL: the images could not be built" >&2; exit 1; }
mkdir -p "$dshm" "$logs/$name"
mount -t tmpfs -o size=64m,mode=1777 "sgc-$$" "$dshm" || { echo "FAIL: no tmpfs" >&2; exit 1; }
: >"$logs/$name/0.log"

# The server, each start k: two requests held (created, never consumed,
# their creator alive until killed), and four of which 1 and 3 are
# aborted, which its log says once all are made: 1 in a line of 20 kB,
# longer than the runtime's buffer, so that the runtime writes it in parts
# (P) that only joined hold both "ABORT" and the ID.  The held requests'
# pipeline says nothing on stdout: a line of its own, written while the long
# one is, would land between that one's parts (as the runtime saw it once).
read -r -d '' server <<'SCRIPT'
k=$(( $(cat /dev/shm/starts 2>/dev/null || echo 0) + 1 ))
echo $k >/dev/shm/starts
p=sgc-s$k-
sleep 100000 | /usr/bin/shmpipe --prefix ${p}hold --requests 2 --hold 2 --wait-stdin >/dev/null &
sleep 100000 | /usr/bin/shmpipe --prefix ${p}ab --requests 4 --abort-every 2 --wait-stdin | while read -r l; do
	echo "$l"
	case $l in done*)
		{ printf 'ABORT '; head -c 20000 /dev/zero | tr '\0' .; echo " ${p}ab1"; }
		echo "ABORT . ${p}ab3";;
	esac
done &
wait
SCRIPT
match='ABORT\s\.+\s(\S+)'
python3 "$here/kube_local.py" "$src/contrib/kubernetes/vllm-shmguard.yaml" "$name" "$dshm" "$logs" "$server" \
	'{req}_{int}_{int};shm_{req}_{int}_{int}_lockfile.lock' "--match $match" >"$PM_DIR/pod.yaml" || exit 1

# 5. The node agent, before the pod exists.  The shim in the pod is the
# init container's copy, whose USDT tags the agent does not follow: the
# server's names say the requests (--patterns), as the manifest's do, once
# a review cycle has read them.
# reviewed_since T: the agent ended a review cycle after T (Unix time).
reviewed_since() {
	python3 - "$agent_port" "$1" <<-'PY'
		import sys, urllib.request
		text = urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/metrics", timeout=2).read().decode()
		last = [float(l.split()[1]) for l in text.splitlines() if l.startswith("shmguard_last_review_timestamp_seconds ")]
		sys.exit(0 if last and last[0] > float(sys.argv[2]) else 1)
	PY
}
# measured_for CID N: the agent's /metrics counts N aborts measured for the
# container CID.
measured_for() {
	python3 - "$agent_port" "$1" "$2" <<-'PY'
		import re, sys, urllib.request
		text = urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/metrics", timeout=2).read().decode()
		pat = re.compile(r'^shmguard_workload_aborts_measured_total\{[^}]*container_id="' + re.escape(sys.argv[2]) + r'"[^}]*\} (\S+)$')
		seen = [float(m.group(1)) for m in map(pat.match, text.splitlines()) if m]
		sys.exit(0 if seen == [float(sys.argv[3])] else 1)
	PY
}
# It records the creators too (--record-creators, into a store of this
# test's): one process measures, records and reclaims.  $uroot is a
# /dev/shm of its own for 7.
mkdir -p "$PM_DIR/agent-abort" "$uroot"
install -d -m 0700 "$PM_DIR/store"
export SHMGUARD_STORE_DIR=$PM_DIR/store
mount -t tmpfs -o size=8m,mode=1777 "sgc-u$$" "$uroot" || fail "no tmpfs for 7"
agent_port=$((20000 + $$ % 20000))
"$build/cli/shmguard" audit --abort-dir "$PM_DIR/agent-abort" --grace 0.3 --interval 0.2 --json "$PM_DIR/agent.json" \
	--patterns '{req}_{int}_{int};shm_{req}_{int}_{int}_lockfile.lock' --listen "127.0.0.1:$agent_port" \
	--record-creators --shm-root "$uroot" >"$PM_DIR/agent.out" 2>"$PM_DIR/agent.err" &
agent=$!
wait_for 'grep -q "aborts 0" "$PM_DIR/agent.err"' 60 || fail "the node agent did not start: $(cat "$PM_DIR/agent.err")"

if ! pm kube play --log-driver k8s-file "$PM_DIR/pod.yaml" >"$PM_DIR/play.out" 2>&1; then
	cat "$PM_DIR/play.out" >&2
	echo "FAIL: podman kube play refused the example manifest" >&2
	exit 1
fi
pod=$(pm pod ps --format '{{.Name}}' | head -n 1)
server_ctr=$pod-vllm
sidecar_ctr=$pod-shmguard

# Start 1: all its files (8 held, 8 of the aborted requests, lock files included).
if ! wait_for '[ "$(count "*sgc-s1-hold*")$(count "*sgc-s1-ab[13]_*")" = 88 ]' 30; then
	fail "the server's segments did not appear: $(ls "$dshm")"
	pm logs "$server_ctr" 2>&1 | cut -c1-100 >&2
	pm logs "$sidecar_ctr" 2>&1 | grep -v "^removed 0 " | head -20 >&2
	pm inspect --format "{{.HostConfig.PidMode}}" "$server_ctr" "$sidecar_ctr" >&2
	exit 1
fi
[ "$(count "*sgc-s1-ab[02]_*")" = 0 ] || fail "consumed requests' segments left"

# The agent has read the names of the files now there (a barrier for 5):
# a whole review cycle began after they were made, once the one under way
# (which may have read the pod's root before) has ended.
for _ in 1 2; do
	since=$(date +%s.%N)
	wait_for "reviewed_since $since 2>/dev/null" 30 || fail "the node agent ended no review cycle"
done

# 1. Markers from the container's log, read as the node agent would.
log=$(pm inspect --format '{{.HostConfig.LogConfig.Path}}' "$server_ctr")
grep -q '^[0-9T:.+Z-]* stdout P ABORT' "$log" ||
	fail "the runtime wrote the long line whole: the joining is not exercised ($(cut -c1-60 "$log"))"
SHMGUARD_SHM_ROOTS=$dshm "$build/cli/shmguard" abort --follow "$log" --from-start --format cri \
	--match "$match" -a "$dshm/shmguard-abort" 2>"$PM_DIR/follower.err" &
follower=$!
wait_for '[ "$(count "*sgc-s1-ab[13]_*")" = 0 ]' 20 ||
	fail "markers from the container's log did not sweep the aborted requests: $(ls "$dshm"; cat "$PM_DIR/follower.err")"
[ -e "$dshm/shmguard-abort/sgc-s1-ab1" ] || fail "no marker for the request of the split line"
[ "$(count "sgc-s1-hold*")" = 4 ] && [ "$(count "shm_sgc-s1-hold*")" = 4 ] ||
	fail "an abort swept more than its request: $(ls "$dshm")"
kill "$follower"
wait "$follower"
follower=

# 7. A program without the shim, in a container of its own, leaves a file
# in its /dev/shm and is gone: sweep --dead removes it by the record the
# node agent alone made (no shmguard watch runs).
pm run --rm --network none -v "$uroot:/dev/shm" localhost/sg-workload:test \
	-c 'head -c 65536 /dev/zero >/dev/shm/sgc-unshimmed' || fail "the unshimmed container did not run"
[ -e "$uroot/sgc-unshimmed" ] || fail "the unshimmed program left no file: no leak to reclaim"
"$build/cli/shmguard" sweep --dead --ignore-unreadable --root "$uroot" >"$PM_DIR/usweep.out" 2>&1 ||
	fail "sweep --dead failed: $(cat "$PM_DIR/usweep.out")"
[ ! -e "$uroot/sgc-unshimmed" ] && grep -q "removed  *$uroot/sgc-unshimmed" "$PM_DIR/usweep.out" ||
	fail "sweep --dead did not reclaim the unshimmed file by the agent's record: $(cat "$PM_DIR/usweep.out")"

# 5. The node agent's figures for the server container, from its cgroup.
# Its own count: suites beside this one may abort requests in pods of
# theirs, which this agent sees and counts too.
server_cid=$(pm inspect --format '{{.Id}}' "$server_ctr")
wait_for 'measured_for "$server_cid" 2' 30 ||
	fail "the node agent did not measure the server's 2 aborts: $(tail -n 2 "$PM_DIR/agent.err")"
kill -INT "$agent"
wait "$agent" || fail "the node agent ended with $?: $(tail -n 3 "$PM_DIR/agent.err")"
agent=
python3 - "$PM_DIR/agent.json" "$(pm inspect --format '{{.Id}}' "$server_ctr")" <<'PY' || fail "the node agent's per-pod figures"
import json, sys
report, cid = json.load(open(sys.argv[1])), sys.argv[2]
mine = [w for w in report.get("workloads") or [] if w.get("container_id") == cid]
if len(mine) != 1 or mine[0]["aborts"] != 2 or mine[0]["leaked_bytes"] != 0:
    print(f"the server container {cid[:12]}: {mine} among {report.get('workloads')}", file=sys.stderr)
    sys.exit(1)
PY

# 2. The server killed (all its processes, as an OOM kill may) and restarted
# in place: its held files are a dead creator's, which the sidecar reclaims;
# the new start's are kept.
cid=$(pm inspect --format '{{.Id}}' "$server_ctr")
sweeps() { pm logs "$sidecar_ctr" 2>&1 | grep -c '^removed '; }
kill -9 $(grep -l "libpod-$cid" /proc/[0-9]*/cgroup 2>/dev/null | cut -d/ -f3) 2>/dev/null
wait_for '[ "$(count "*sgc-s2-hold*")" = 8 ]' 30 || fail "the server was not restarted in place: $(ls "$dshm")"
# Lock files are empty: sweep keeps those younger than 5 s.
wait_for '[ "$(count "*sgc-s1-hold*")" = 0 ]' 30 || fail "the killed server's files were not reclaimed: $(ls "$dshm")"
before=$(sweeps)
wait_for '[ "$(sweeps)" -ge $((before + 2)) ]' 20 || fail "the sidecar does not sweep"
[ "$(count "*sgc-s2-hold*")" = 8 ] || fail "the live server's files were swept: $(ls "$dshm")"
pm logs "$sidecar_ctr" 2>&1 | grep -q "sgc-s2-hold" && fail "the sidecar's sweep acted on live files"

# 3. The sidecar's follower, through the kubelet's layout: a start's new
# N.log is followed from its start.
echo "2026-12-01T20:00:00.000000001Z stdout F ABORT . sgc-s2-hold0" >>"$logs/$name/1.log"
wait_for '[ "$(count "*sgc-s2-hold0_*")" = 0 ]' 20 ||
	fail "the sidecar did not follow the next log file: $(pm logs "$sidecar_ctr" 2>&1 | grep -v "^removed 0 " | tail -8)"
[ "$(count "*sgc-s2-hold1_*")" = 4 ] || fail "the abort of hold0 swept hold1"

# 4. The pod deleted and recreated with its volume kept (the emptyDir of a
# recreated sandbox): new pid namespaces.  The kernel hands out the lowest
# free namespace inode, so the new pod's would mostly be the old one's, and
# the new pod would prove the old creators dead by pid and start time
# itself.  The old namespace is held (a bind mount of its nsfs file) so that
# the new one's number differs: inside the new pod, the old instance's
# creators are then another namespace's, which it cannot see whole, kept as
# unknown; from the node (the initial pid namespace), sweep --dead --pod
# proves them dead (a namespace without a process of that pid and start
# time) and keeps the new instance's files.
srv=$(pm inspect --format '{{.State.Pid}}' "$server_ctr")
: >"$PM_DIR/old-pidns"
mount --bind "/proc/$srv/ns/pid" "$PM_DIR/old-pidns" || fail "cannot hold the old pod's pid namespace"
pod_down
[ "$(count "*sgc-s2-hold1_*")" = 4 ] || fail "the volume did not keep the old instance's files: $(ls "$dshm")"
if ! pm kube play --log-driver k8s-file "$PM_DIR/pod.yaml" >"$PM_DIR/play2.out" 2>&1; then
	cat "$PM_DIR/play2.out" >&2
	fail "podman kube play refused the manifest the second time"
elif ! wait_for '[ "$(count "*sgc-s3-hold*")" = 8 ]' 30; then
	fail "the recreated pod's server did not start: $(ls "$dshm")"
else
	before=$(sweeps)
	wait_for '[ "$(sweeps)" -ge $((before + 2)) ]' 20 || fail "the new pod's sidecar does not sweep"
	[ "$(count "*sgc-s2-hold1_*")" = 4 ] ||
		fail "the new pod judged the old instance's creators, whose namespace it cannot see: $(ls "$dshm")"
	srv=$(pm inspect --format '{{.State.Pid}}' "$server_ctr")
	[ "$(stat -L -c %i "/proc/$srv/ns/pid")" != "$(stat -L -c %i "$PM_DIR/old-pidns")" ] ||
		fail "the new pod has the old pod's pid namespace"
	"$build/cli/shmguard" sweep --dead --ignore-unreadable --pod "$srv" >"$PM_DIR/node-sweep.out" 2>&1 ||
		fail "the node's sweep failed: $(cat "$PM_DIR/node-sweep.out")"
	[ "$(count "*sgc-s2-hold*")" = 0 ] ||
		fail "the old instance's files were kept: $(ls "$dshm"; cat "$PM_DIR/node-sweep.out")"
	[ "$(count "*sgc-s3-hold*")" = 8 ] ||
		fail "the new instance's files were swept: $(ls "$dshm"; cat "$PM_DIR/node-sweep.out")"
fi
umount "$PM_DIR/old-pidns"

pm kube down "$PM_DIR/pod.yaml" >/dev/null 2>&1

# 6. The node agent's own manifest: its pod on this node, each container
# run as its spec asks (kube_local.py --agent: podman 4.3's kube play
# ignores hostPID), its Localhost seccomp profile installed where the
# kubelet's profiles are.
agent_pod() { # NAME [SECCOMP]: the init containers run, the agent started
	local line args=()
	python3 "$here/kube_local.py" --agent "$src/contrib/kubernetes/shmguard-node.yaml" "$1" "$dshm" "$logs" \
		"$PM_DIR/node" "$PM_DIR/seccomp" ${2:+"$2"} >"$PM_DIR/$1.run" || return 1
	while IFS= read -r line; do
		if [ -n "$line" ]; then
			args+=("$line")
			continue
		fi
		pm "${args[@]}" >>"$PM_DIR/$1.out" 2>&1 || return 1
		args=()
	done <"$PM_DIR/$1.run"
}
# Its /metrics, from inside its network namespace (it serves there).
agent_metrics() { # PID
	nsenter -t "$1" -n python3 -c 'import urllib.request; print(urllib.request.urlopen("http://127.0.0.1:9464/metrics", timeout=2).read().decode())'
}
mkdir -p "$PM_DIR/seccomp" "$PM_DIR/node/kubelet-pods" "$PM_DIR/node/containers"
install -d -m 0700 "$PM_DIR/node/creators"
cp "$src/contrib/seccomp/shmguard-node.json" "$PM_DIR/seccomp/"
# The kubelet's pods directory is a shared mount on a node (its volumes
# propagate to the agent: HostToContainer).
mount --bind "$PM_DIR/node" "$PM_DIR/node" && mount --make-shared "$PM_DIR/node"
actr=sgc-agent-$$-shmguard
if ! agent_pod sgc-agent-$$; then
	fail "the node agent's manifest could not be run: $(cat "$PM_DIR/sgc-agent-$$.out")"
else
	apid=$(pm inspect --format '{{.State.Pid}}' "$actr")
	wait_for 'agent_metrics "$apid" 2>/dev/null | grep -q "^shmguard_roots "' 60 ||
		fail "the node agent from its manifest serves no /metrics: $(pm logs "$actr" 2>&1 | tail -5)"
	grep -q '^Seccomp:[[:space:]]*2' "/proc/$apid/status" || fail "the node agent runs without a seccomp filter"
	[ -e "$dshm/shmguard-abort/.shmguard-abort-dir" ] || fail "the init container made no abort directory"
fi
pm rm -f "$actr" >/dev/null 2>&1
actr=sgc-agent-default-$$-shmguard
if ! agent_pod sgc-agent-default-$$ default; then
	fail "the node agent's manifest could not be run: $(cat "$PM_DIR/sgc-agent-default-$$.out")"
else
	wait_for '[ "$(pm inspect --format "{{.State.Status}}" "$actr")" = exited ]' 60 ||
		fail "the node agent ran under the runtime's default seccomp profile"
	pm logs "$actr" 2>&1 | grep -q "seccomp filter refuses bpf()" ||
		fail "the node agent refused by seccomp did not say so: $(pm logs "$actr" 2>&1 | tail -3)"
fi
pm rm -f "$actr" >/dev/null 2>&1
umount "$PM_DIR/node"
[ "$failures" = 0 ] && echo "ok: markers from the container's log, the node agent's figures for the server container, in-place restart reclaim, the sidecar's log following, a recreated pod's reclaim from the node, the node agent from its manifest under its seccomp profile"
exit $((failures > 0))
