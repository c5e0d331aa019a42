#!/usr/bin/env bash
# The node agent's peak memory with its bounded tables full, against the
# memory limit of its DaemonSet (scripts/bench-audit.sh --node-memory;
# docs/performance.md, Memory).  The agent runs with the arguments of the
# `shmguard` container of contrib/kubernetes/shmguard-node.yaml, read there
# (tests/containers/kube_local.py --agent-args), but for: its port, a
# loopback one the kernel picks; its patterns file, one holding {req}_{int}_{int}; its
# creator records, in a private directory (SHMGUARD_STORE_DIR); and
# --own-namespace.  The last keeps it to the private tmpfs mounted at
# /dev/shm in a mount namespace of its own.  (The agent refuses a pid
# namespace of its own; in the host's, node mode would follow, and
# --reclaim-dead reclaim in, every namespace's /dev/shm: the host's and
# other programs'.)
# Then, in that tmpfs:
#   - NM_CREATORS (default 17,000, more than the store's 16,384 records)
#     files, each made by a process of its own, spread over NM_CGROUPS
#     (default 1,100, more than --max-workload-series' 1,000) cgroups of
#     their own: the creator store and the workload series full;
#   - one process's files up to --max-files (default 1,000,000): the file
#     table full; made 10,000 at a time, each batch once the agent follows
#     the ones before (for NM_FILL_S, default 420, seconds at most): a
#     burst fills the kernel's ring buffer faster than the agent reads it;
#   - /metrics scraped every 10 s for NM_HOLD_S (default 75) seconds, over
#     review cycles and --reclaim-dead passes.
# It prints the agent's peak RSS (VmHWM) beside the limit and exits 1 when
# the peak is above it.  Needs root and cgroup v2 (the unified hierarchy).
# Called by scripts/bench-audit.sh, which builds first; SG_BUILD names
# another build directory (the test suite's short run: tests/meson.build).
set -euo pipefail
cd "$(dirname "$0")/.."

manifest=contrib/kubernetes/shmguard-node.yaml
build=${SG_BUILD:-$PWD/build}
cli=$build/cli/shmguard
bench=$build/bench/bench_shim
creators=${NM_CREATORS:-17000} ncgroups=${NM_CGROUPS:-1100} hold_s=${NM_HOLD_S:-75}
fill_s=${NM_FILL_S:-420} chunk=10000
tmp=$(mktemp -d /tmp/shmguard-nodemem.XXXXXX)
cg2=$(findmnt -n -t cgroup2 -o TARGET | head -n 1)
[ -n "$cg2" ] || { echo "bench-node-memory: no cgroup2 mount" >&2; exit 2; }
cgroups="$cg2/$(basename "$tmp")"

cleanup() {
	local pid
	# (none left once inner has reaped them all: no failure of the trap's)
	{ cat "$tmp"/*.pid 2>/dev/null || true; } | while read -r pid; do kill -KILL "$pid" 2>/dev/null || true; done
	# The creators' cgroups, once their processes are reaped.
	if [ -d "$cgroups" ]; then
		for _ in 1 2 3 4 5 6 7 8 9 10; do
			find "$cgroups" -mindepth 1 -maxdepth 1 -type d -exec rmdir {} + 2>/dev/null || true
			rmdir "$cgroups" 2>/dev/null && break
			sleep 0.5
		done
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT

# The agent's arguments and limit, as the manifest has them.
mapfile -t args < <(python3 tests/containers/kube_local.py --agent-args "$manifest" "$tmp/manifest")
limit=$(python3 - "$manifest" <<'PY'
import sys, yaml
units = {'Ki': 2**10, 'Mi': 2**20, 'Gi': 2**30, 'K': 10**3, 'M': 10**6, 'G': 10**9, '': 1}
(ds,) = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d and d['kind'] == 'DaemonSet']
(c,) = [c for c in ds['spec']['template']['spec']['containers'] if c['name'] == 'shmguard']
q = str(c['resources']['limits']['memory'])
num = q.rstrip('KMGik')
print(q, int(float(num) * units[q[len(num):]]))
PY
)
read -r limit_text limit_bytes <<<"$limit"
max_files=1000000 # the default of --max-files, unless the manifest gives one
for i in "${!args[@]}"; do
	case ${args[$i]} in
	--listen) args[i + 1]=127.0.0.1:0 ;;
	--max-files) max_files=${args[i + 1]} ;;
	--patterns-file) printf '{req}_{int}_{int}\n' >"${args[i + 1]}" ;;
	esac
done
[ "${args[0]}" = audit ] || { echo "bench-node-memory: $manifest: the agent's args are not audit's" >&2; exit 2; }
args+=(--own-namespace)
mkdir -m 700 "$tmp/store"
mkdir "$cgroups"
for ((i = 0; i < ncgroups; i++)); do mkdir "$cgroups/w$i"; done

# The creators: a process each, in cgroup i % NCGROUPS, each making one
# file; their parent stays until killed (nothing of theirs is an orphan
# while it runs), after saying how many it made in DONE.
cat >"$tmp/creators.py" <<'PY'
import os, signal, sys, time
cgroups, ncgroups, n, done = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
end, made = time.monotonic() + 300, 0
for i in range(n):
    if time.monotonic() > end:
        break
    pid = os.fork()
    if pid == 0:
        try:
            with open(f"{cgroups}/w{i % ncgroups}/cgroup.procs", "w") as f:
                f.write("0")
            os.close(os.open(f"/dev/shm/nmc{i}_0_0", os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
            os._exit(0)
        except OSError as e:
            print(f"creator {i}: {e}", file=sys.stderr)
            os._exit(1)
    if os.waitpid(pid, 0)[1] != 0:
        sys.exit(1)
    made += 1
with open(done, "w") as f:
    f.write(f"{made}\n")
signal.pause()
PY

# In the private mount namespace: the tmpfs, the agent, the files; the
# figures in $tmp/figures.  Every process started here is killed at its end.
inner() {
	local agent addr status hwm rss n t end
	metric() { awk -v m="$1" '$1 == m { print $2 }' "$tmp/metrics"; }
	scrape() { curl -sf "http://$addr/metrics" >"$tmp/metrics"; }
	trap 'cat "$tmp"/*.pid 2>/dev/null | xargs -r kill -TERM 2>/dev/null || true' EXIT
	mount -t tmpfs -o size=64m,nr_inodes=$((max_files + 100000)),mode=1777 shmguard-nodemem /dev/shm
	"$cli" abort --init-dir /dev/shm/shmguard-abort
	: >"$tmp/agent.err"
	SHMGUARD_STORE_DIR=$tmp/store SHMGUARD_PATTERNS='' SHMGUARD_ABORT_DIR='' "$cli" "${args[@]}" 2>"$tmp/agent.err" &
	agent=$!
	echo "$agent" >"$tmp/agent.pid"
	for ((t = 0; t < 300; t++)); do
		addr=$(sed -n 's|.*serving metrics on http://\(.*\)/metrics$|\1|p' "$tmp/agent.err")
		[ -n "$addr" ] && break
		kill -0 "$agent" 2>/dev/null || { cat "$tmp/agent.err" >&2; return 1; }
		sleep 0.1
	done
	[ -n "$addr" ] || { echo "bench-node-memory: the agent did not start" >&2; return 1; }
	# Its RSS every 0.5 s, with the phase under way.
	echo start >"$tmp/phase"
	while kill -0 "$agent" 2>/dev/null; do
		echo "$SECONDS $(cat "$tmp/phase") $(awk '$1 == "VmRSS:" { print $2 }' "/proc/$agent/status" 2>/dev/null)"
		sleep 0.5
	done >"$tmp/rss.log" &
	echo $! >"$tmp/sampler.pid"
	t=$SECONDS
	echo creators >"$tmp/phase"
	python3 "$tmp/creators.py" "$cgroups" "$ncgroups" "$creators" "$tmp/creators.done" &
	echo $! >"$tmp/creators.pid"
	until [ -s "$tmp/creators.done" ]; do
		kill -0 "$(cat "$tmp/creators.pid")" 2>/dev/null || { echo "bench-node-memory: the creators failed" >&2; return 1; }
		sleep 0.5
	done
	n=$(cat "$tmp/creators.done")
	echo "  $n creators in $ncgroups cgroups: $((SECONDS - t)) s"
	# The rest in chunks, each made once the agent follows the ones before
	# (or NM_FILL_S is over): a burst would fill the kernel's ring buffer
	# faster than the agent reads it, and lose the events.
	t=$SECONDS
	echo files >"$tmp/phase"
	end=$((SECONDS + fill_s))
	while scrape && ((n < max_files && SECONDS < end)); do
		if (($(metric shmguard_followed_files) + chunk / 2 >= n)); then
			"$bench" keep $((max_files - n < chunk ? max_files - n : chunk)) "nmk$n-" >/dev/null
			n=$((n + (max_files - n < chunk ? max_files - n : chunk)))
		else
			sleep 0.5
		fi
	done
	while scrape && (($(metric shmguard_followed_files) < n && SECONDS < end + 30)); do sleep 1; done
	echo "  $n files made, $(metric shmguard_followed_files) followed, in $((SECONDS - t)) s"
	# Held, /metrics scraped, over a review cycle and --reclaim-dead passes.
	echo hold >"$tmp/phase"
	end=$((SECONDS + hold_s))
	while ((SECONDS < end)); do
		scrape
		sleep 10
	done
	scrape
	status=$(cat "/proc/$agent/status")
	hwm=$(awk '$1 == "VmHWM:" { print $2 }' <<<"$status")
	rss=$(awk '$1 == "VmRSS:" { print $2 }' <<<"$status")
	cat >"$tmp/figures" <<-EOF
		hwm_kib $hwm
		rss_kib $rss
		followed $(metric shmguard_followed_files)
		over $(metric shmguard_files_over_limit_total)
		dropped $(metric shmguard_dropped_events_total)
		workloads $(grep -c '^shmguard_workload_tracked_bytes{' "$tmp/metrics" || true)
		folded $(metric shmguard_workloads_folded)
		metrics_bytes $(wc -c <"$tmp/metrics")
	EOF
	# Its end writes the creator records whole.
	kill -TERM "$(cat "$tmp/creators.pid")" "$agent"
	wait "$agent" "$(cat "$tmp/creators.pid")" "$(cat "$tmp/sampler.pid")" || true
	rm -f "$tmp"/*.pid # all reaped: no pid of theirs to kill at the end
}

echo "node agent's memory, tables full: shmguard ${args[*]}"
export -f inner
export tmp cli bench max_files creators ncgroups cgroups hold_s fill_s chunk
export args_text
args_text=$(printf '%q ' "${args[@]}")
# shellcheck disable=SC2016 # expanded by the inner shell
unshare --mount --propagation private bash -c 'eval "args=($args_text)"; set -euo pipefail; inner'
# The store as the agent left it (it writes it at its end): records, and
# whether it said it was full.
declare -A f
while read -r key value; do f[$key]=$value; done <"$tmp/figures"
records=$(python3 -c 'import struct, sys; print(struct.unpack("<8sII", open(sys.argv[1], "rb").read(16))[2])' "$tmp/store/creators")
full=no
grep -q 'record store is full' "$tmp/agent.err" && full=yes
read -r peak_s peak_phase peak_kib < <(sort -k3,3n "$tmp/rss.log" | tail -n 1)
hwm_mib=$(echo "scale=1; ${f[hwm_kib]} / 1024" | bc)
printf '  peak RSS (VmHWM) %s MiB, RSS %s MiB at the end; the manifest'"'"'s limit %s (%s MiB)\n' \
	"$hwm_mib" "$(echo "scale=1; ${f[rss_kib]} / 1024" | bc)" "$limit_text" "$((limit_bytes / 1048576))"
printf '  files followed %s of --max-files %s (over it: %s), dropped events: %s\n' "${f[followed]}" "$max_files" "${f[over]}" "${f[dropped]}"
printf '  creator store: %s records of 16384 (said full: %s)\n' "$records" "$full"
printf '  highest RSS sample (every 0.5 s): %s MiB at %s s, phase %s\n' "$(echo "scale=1; $peak_kib / 1024" | bc)" \
	"$peak_s" "$peak_phase"
printf '  workload series %s (folded into "other": %s), /metrics %s bytes\n' "${f[workloads]}" "${f[folded]}" "${f[metrics_bytes]}"
grep -e '--record-creators:' -e '^LOST' "$tmp/agent.err" | sed 's/^/  agent: /' || true
if ((f[hwm_kib] * 1024 > limit_bytes)); then
	echo "  FAIL: the peak is above the limit" >&2
	exit 1
fi
