#!/usr/bin/env bash
# Node mode at scale (not run by the tests): a system-wide `shmguard audit`
# while PODS "pods" exist, each made of mount, pid and ipc namespaces with
# its own tmpfs on /dev/shm and one file in it (as a container runtime makes
# a pod's /dev/shm).  Reports:
#   - discovery latency: from a new pod's first file until the auditor holds
#     its /dev/shm, for SAMPLE pods made one at a time once PODS exist;
#   - the auditor's CPU while the pods are made, and idle with all of them
#     (its periodic scans of every namespace's mounts);
#   - its RSS, and the roots it followed (its JSON report);
#   - one node pass (ls --node, which lists as --reclaim-dead does) with
#     every pod there: its time and its walks of /proc.
# Then the pods end, and the roots must all be let go.
#
#   scripts/bench-node.sh [--build DIR] [--pods N] [--sample N] [--idle S]
#
# Needs root (namespaces, BPF).  docs/performance.md has its figures.
set -euo pipefail
cd "$(dirname "$0")/.."

build=build pods=500 sample=20 idle=30
while [ $# -gt 0 ]; do
	case $1 in
	--build) build=${2:?}; shift ;;
	--pods) pods=${2:?}; shift ;;
	--sample) sample=${2:?}; shift ;;
	--idle) idle=${2:?}; shift ;;
	*) sed -n '/^#   scripts/p' "$0" >&2; exit 2 ;;
	esac
	shift
done
shmguard=$build/cli/shmguard
[ -x "$shmguard" ] || { echo "bench-node: $shmguard is missing: build first" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "bench-node: needs root" >&2; exit 2; }

work=$(mktemp -d /tmp/sg-bench-node-XXXXXX)
pod_pids=()
auditor=
# unshare --fork ignores SIGTERM; its child goes with it (--kill-child).
end_pods() {
	local p
	for p in "${pod_pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
	wait "${pod_pids[@]}" 2>/dev/null || true
	pod_pids=()
}
cleanup() {
	end_pods
	[ -z "$auditor" ] || kill "$auditor" 2>/dev/null || true
	wait 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT
mkdir "$work/abort"

# cpu_ticks PID: user + system time so far, in clock ticks.
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
rss_kib() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }
now() { date +%s.%N; }

# pod N: a pod in the background; it writes when its first file was made
# and its /dev/shm's device into $work/pod-N.
pod() {
	# shellcheck disable=SC2016 # expanded by the pod's shell
	unshare --mount --pid --ipc --fork --kill-child --propagation private sh -c \
		'mount -t tmpfs -o size=1m tmpfs /dev/shm && : >/dev/shm/bench-file &&
		 echo "$(date +%s.%N) $(stat -c %d /dev/shm)" >"$1.tmp" && mv "$1.tmp" "$1" && exec sleep infinity' \
		pod "$work/pod-$1" </dev/null >/dev/null 2>&1 &
	pod_pids+=($!)
}

# held DEV: whether the auditor holds a descriptor on device DEV (one stat
# for them all: the polling must not be what is measured).
held() {
	stat -L -c %d /proc/"$auditor"/fd/* 2>/dev/null | grep -qx "$1"
}

"$shmguard" audit --abort-dir "$work/abort" --json "$work/report.json" --interval 1 \
	2>"$work/audit.err" >"$work/audit.out" &
auditor=$!
until grep -q 'aborts 0' "$work/audit.err" 2>/dev/null; do
	kill -0 "$auditor" || { cat "$work/audit.err" >&2; exit 1; }
	sleep 0.05
done

sleep 2
rss0=$(rss_kib "$auditor")
t0=$(now) c0=$(cpu_ticks "$auditor")
for ((i = 0; i < pods; i++)); do pod "$i"; done
for ((i = 0; i < pods; i++)); do until [ -e "$work/pod-$i" ]; do sleep 0.01; done; done
# Every pod's /dev/shm followed: the auditor holds a directory of each.
read -r _ last_dev <"$work/pod-$((pods - 1))"
until held "$last_dev"; do sleep 0.05; done
t1=$(now) c1=$(cpu_ticks "$auditor")
hz=$(getconf CLK_TCK)
make_s=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
make_cpu=$(awk -v c=$((c1 - c0)) -v hz="$hz" -v s="$make_s" 'BEGIN { printf "%.1f", 100 * c / hz / s }')

# Latency, one pod at a time, with the others there.
lat=()
for ((j = 0; j < sample; j++)); do
	i=$((pods + j))
	pod "$i"
	until [ -e "$work/pod-$i" ]; do sleep 0.002; done
	read -r born dev <"$work/pod-$i"
	until held "$dev"; do sleep 0.002; done
	lat+=("$(awk -v a="$born" -v b="$(now)" 'BEGIN { printf "%.0f", (b - a) * 1000 }')")
done
sorted=$(printf '%s\n' "${lat[@]}" | sort -n)
median=$(echo "$sorted" | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
worst=$(echo "$sorted" | tail -n1)

c2=$(cpu_ticks "$auditor")
sleep "$idle"
c3=$(cpu_ticks "$auditor")
idle_cpu=$(awk -v c=$((c3 - c2)) -v hz="$hz" -v s="$idle" 'BEGIN { printf "%.1f", 100 * c / hz / s }')
rss=$(rss_kib "$auditor")
followed=$(find /proc/"$auditor"/fd -mindepth 1 | wc -l)

# One node pass with every pod there (ls --node lists as --reclaim-dead
# does, and changes nothing): its time, and its walks of /proc's processes.
p0=$(now)
"$shmguard" ls --node --json="$work/pass.json" >/dev/null 2>&1 || true
pass_s=$(awk -v a="$p0" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }')
walks=$(grep -o '"proc_walks": [0-9]*' "$work/pass.json" | grep -o '[0-9]*$' || echo "?")

# The pods end: every root must be let go (the periodic scan).
end_pods
t2=$(now)
while held "$last_dev" || held "$dev"; do
	sleep 0.05
	[ "$(awk -v a="$t2" -v b="$(now)" 'BEGIN { print (b - a > 60) }')" = 0 ] || { echo "bench-node: roots still held after 60 s" >&2; exit 1; }
done
forget_s=$(awk -v a="$t2" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }')
kill -INT "$auditor"
wait "$auditor" || true
auditor=

grep -E '"(last_scan_s|last_new_scan_s|scans|new_devices)"' "$work/report.json" | tr -d ' ,' | tr '\n' ' '
echo
roots=$(grep -o '"found": [0-9]*' "$work/report.json" | grep -o '[0-9]*$')
forgotten=$(grep -o '"forgotten": [0-9]*' "$work/report.json" | grep -o '[0-9]*$')
echo "pods: $pods, then $sample one at a time ($(nproc) CPUs, $(uname -r))"
echo "made in ${make_s} s, the auditor at ${make_cpu}% of a CPU meanwhile"
echo "discovery latency (first file to root followed): median ${median} ms, worst ${worst} ms"
echo "idle with $((pods + sample)) pods: ${idle_cpu}% of a CPU over ${idle} s; RSS ${rss} KiB (${rss0} KiB before the pods); ${followed} descriptors"
echo "one node pass (ls --node) with $((pods + sample)) pods: ${pass_s} s, ${walks} walks of /proc"
echo "pods ended: every root let go within ${forget_s} s; report: ${roots} roots found, ${forgotten} forgotten"
