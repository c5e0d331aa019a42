#!/usr/bin/env bash
# The auditor's performance figures (docs/performance.md), side by side in
# one run: each workload plain, under `shmguard audit`, while `shmguard
# watch` runs (the node service: creators and attachers; and, as `watch -A`,
# with --no-attachers), under an equivalent bpftrace script and under
# strace -f, with the workload's CPU and the BPF programs' run time per
# operation beside; then a burst of shm events (dropped events must be 0),
# the auditor's memory per tracked file (at 100,000 and 1,000,000 files),
# and the lifecycle and a burst with 1,000,000 followed files.  Needs root.
#   scripts/bench-audit.sh [--probes P1,P2,...] [ROUNDS]
#   scripts/bench-audit.sh [--probes P1,P2,...] --rows [ROUNDS]
#                                    only the side-by-side rows
#   scripts/bench-audit.sh --large   only the 1,000,000-file part (LIVE=N: N files;
#                                    PLAIN_S, AUDITED_S: seconds of lifecycle a side)
#   scripts/bench-audit.sh --node-memory
#                                    only the node agent's peak memory with its
#                                    tables full, against its DaemonSet's limit
#                                    (exit 1 above it; about 10 minutes)
# ROUNDS: runs a side (default 7; the rows about 3 minutes, all about 10).  --probes: one audited
# column per probe, forced with `shmguard audit --probe` (ctime, fentry,
# kprobe, syscalls; default: the one the auditor chooses here).
set -euo pipefail
cd "$(dirname "$0")/.."

probes=default
if [ "${1:-}" = --probes ]; then
	probes=${2:?--probes needs a list}
	shift 2
fi
IFS=, read -ra probes <<<"$probes"
SHMGUARD_DEPS=bench scripts/build.sh

large_only=false rows_only=false
if [ "${1:-}" = --node-memory ]; then
	exec scripts/bench-node-memory.sh
elif [ "${1:-}" = --large ]; then
	large_only=true
	shift
elif [ "${1:-}" = --rows ]; then
	rows_only=true
	shift
fi
rounds=${1:-7}
bench=build/bench/bench_shim
cli=build/cli/shmguard
prefix="benchaudit-$$-"
abort_dir="/dev/shm/${prefix}abort"
json="/tmp/${prefix}report.json"
tracer_pid=
mounted_tracefs=false
bpf_stats_was= # kernel.bpf_stats_enabled while bpf_cost has it on: put back at exit
# A glob, not find: find fails when other programs' files vanish meanwhile.
remove_files() { (shopt -s nullglob && cd /dev/shm && printf '%s\0' "$1"* | xargs -0r rm -rf); }
cleanup() {
	[ -n "$tracer_pid" ] && kill "$tracer_pid" 2>/dev/null || true
	remove_files "$prefix"
	# The shim's journals of those files' creators, now orphans.
	"$cli" sweep --ignore-unreadable --glob "${prefix}*" --older-than 0 >/dev/null || true
	rm -rf "$json" "/tmp/${prefix}bpftrace.out" "/tmp/${prefix}watch.err" "/tmp/${prefix}store" "/tmp/${prefix}bpf-"*
	[ -z "$bpf_stats_was" ] || sysctl -qw kernel.bpf_stats_enabled="$bpf_stats_was"
	! $mounted_tracefs || umount /sys/kernel/tracing || true
}
trap cleanup EXIT
mkdir -p "$abort_dir"
# bpftrace's syscall tracepoints are found through tracefs: mounted if it is
# not, and then unmounted at the end (cleanup).
if ! mountpoint -q /sys/kernel/tracing; then
	mount -t tracefs nodev /sys/kernel/tracing
	mounted_tracefs=true
fi

# audited [--probe NAME] COMMAND...
audited() {
	local force=()
	if [ "$1" = --probe ]; then
		[ "$2" = default ] || force=(--probe "$2")
		shift 2
	fi
	"$cli" audit --abort-dir "$abort_dir" --patterns '{req}_{int}_{int}' --json "$json" "${force[@]}" ${audit_opts:-} -- "$@"
}

# What the auditor follows, the bpftrace way: the shm system calls by path.
bpftrace_script='
BEGIN { printf("READY\n"); }
tracepoint:syscalls:sys_enter_openat /strncmp(str(args->filename), "/dev/shm/", 9) == 0/ { @open[comm] = count(); }
tracepoint:syscalls:sys_enter_unlink /strncmp(str(args->pathname), "/dev/shm/", 9) == 0/ { @unlink[comm] = count(); }
tracepoint:syscalls:sys_enter_ftruncate { @truncate[comm] = count(); }
tracepoint:syscalls:sys_enter_fallocate { @fallocate[comm] = count(); }
'
under_bpftrace() {
	local out="/tmp/${prefix}bpftrace.out" i
	rm -f "$out"
	bpftrace -e "$bpftrace_script" >"$out" 2>&1 &
	tracer_pid=$!
	# BEGIN runs once every probe is attached.
	until grep -q READY "$out" 2>/dev/null; do sleep 0.1; done
	"$@"
	kill -TERM "$tracer_pid" # a background job ignores SIGINT
	for ((i = 0; i < 50; i++)); do kill -0 "$tracer_pid" 2>/dev/null || break; sleep 0.1; done
	kill -KILL "$tracer_pid" 2>/dev/null || true
	wait "$tracer_pid" 2>/dev/null || true
	tracer_pid=
}

# [--no-attachers] COMMAND... while shmguard watch runs, with a store of its own.
under_watch() {
	local err="/tmp/${prefix}watch.err" opts=()
	[ "$1" != --no-attachers ] || { opts=(--no-attachers); shift; }
	[ -d "/tmp/${prefix}store" ] || mkdir -m 0700 "/tmp/${prefix}store"
	SHMGUARD_STORE_DIR="/tmp/${prefix}store" "$cli" watch "${opts[@]}" 2>"$err" &
	tracer_pid=$!
	until grep -q 'recording the creators' "$err" 2>/dev/null; do
		kill -0 "$tracer_pid" 2>/dev/null || { cat "$err" >&2; return 1; }
		sleep 0.1
	done
	"$@"
	kill -TERM "$tracer_pid"
	wait "$tracer_pid" 2>/dev/null || true
	tracer_pid=
}

. scripts/bench-common.sh # insn_method, insns, syscalls
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
mean() { awk '{ s += $1 } END { print s / NR }'; }
ns_of() { awk '$3 == "ns/op" { print $2 }'; }

# row NAME N WORKLOAD ARGS...: N iterations (strace gets N/100: it is that slow).
row() {
	local name=$1 n=$2 plain=() wat=() wna=() bpf=() str=() i k
	shift 2
	local w=$1
	shift
	declare -A aud
	for ((i = 0; i < rounds; i++)); do
		plain+=("$("$bench" "$w" "$n" "$@" | ns_of)")
		for k in "${probes[@]}"; do
			aud[$k]+="$(audited --probe "$k" "$bench" "$w" "$n" "$@" | ns_of) "
		done
		wat+=("$(under_watch "$bench" "$w" "$n" "$@" | ns_of)")
		wna+=("$(under_watch --no-attachers "$bench" "$w" "$n" "$@" | ns_of)")
		bpf+=("$(under_bpftrace "$bench" "$w" "$n" "$@" | ns_of)")
		str+=("$(strace -f -qq -o /dev/null "$bench" "$w" $((n / 100)) "$@" | ns_of)")
	done
	local p a b s
	p=$(printf '%s\n' "${plain[@]}" | median)
	printf '%-32s %9.0f ns' "$name" "$p"
	for k in "${probes[@]}"; do
		a=$(printf '%s\n' ${aud[$k]} | median)
		printf ' %9.0f ns %6.3f' "$a" "$(echo "$a / $p" | bc -l)"
	done
	for a in "$(printf '%s\n' "${wat[@]}" | median)" "$(printf '%s\n' "${wna[@]}" | median)"; do
		printf ' %9.0f ns %6.3f' "$a" "$(echo "$a / $p" | bc -l)"
	done
	b=$(printf '%s\n' "${bpf[@]}" | median)
	s=$(printf '%s\n' "${str[@]}" | median)
	printf ' %9.0f ns %6.3f %10.0f ns %7.1f\n' "$b" "$(echo "$b / $p" | bc -l)" "$s" "$(echo "$s / $p" | bc -l)"
	counts "$((n / 20))" "$w" "$@"
	cpu_ratio "$w" "$n" "$@"
	bpf_cost "$w" "$n" "$@"
}

# The BPF programs' runs and run time per operation, as the kernel counts
# them (kernel.bpf_stats_enabled, set for the measure only: bpftool's
# run_cnt and run_time_ns of the tracer's programs, those loaded since it
# started, before and after the workload, over N).  Less moved by the
# machine's noise than the wall ratios; each run also holds the counting's
# own two clock reads.
# bpf_programs TRACER... : the runs and ns per op under TRACER (audited,
# under_watch --no-attachers, under_bpftrace), WORKLOAD N ARGS... after it;
# then, in parentheses, each program that runs for every other operation at
# least: its runs per op and ns per run.
bpf_programs() {
	local pre="/tmp/${prefix}bpf-pre.json" before="/tmp/${prefix}bpf-before.json" after="/tmp/${prefix}bpf-after.json"
	local tracer=() n
	while [ "$1" != -- ]; do tracer+=("$1"); shift; done
	shift
	n=$2
	bpftool -j prog show >"$pre"
	"${tracer[@]}" sh -c 'before=$1 after=$2; shift 2; bpftool -j prog show >"$before"; "$@" >/dev/null
		bpftool -j prog show >"$after"' sh "$before" "$after" "$bench" "$@" >/dev/null 2>&1
	python3 - "$pre" "$before" "$after" "$n" <<'PY'
import json, sys
pre, before, after = ({p["id"]: p for p in json.load(open(f))} for f in sys.argv[1:4])
n = int(sys.argv[4])
runs = ns = 0
each = []
for i, p in after.items():
    if i in pre or i not in before:
        continue
    r = p.get("run_cnt", 0) - before[i].get("run_cnt", 0)
    t = p.get("run_time_ns", 0) - before[i].get("run_time_ns", 0)
    runs += r
    ns += t
    if r >= n / 2:  # the programs of every operation, not those of a fork now and then
        each.append(f"{p.get('name', i)} {r / n:.1f} x {t / r:.0f} ns")
print(f"{runs / n:.1f} runs, {ns / n:.0f} ns" + (f" ({', '.join(each)})" if each else ""))
PY
	rm -f "$pre" "$before" "$after"
}

bpf_cost() {
	local line=()
	bpf_stats_was=$(sysctl -n kernel.bpf_stats_enabled)
	sysctl -qw kernel.bpf_stats_enabled=1
	line+=("audited $(bpf_programs audited -- "$@")")
	line+=("watch -A $(bpf_programs under_watch --no-attachers -- "$@")")
	line+=("bpftrace $(bpf_programs under_bpftrace -- "$@")")
	sysctl -qw kernel.bpf_stats_enabled="$bpf_stats_was"
	bpf_stats_was=
	printf '  BPF programs per op (bpf_stats): %s; %s; %s\n' "${line[@]}"
}

# cpu_ratio WORKLOAD N ARGS...: the workload's own CPU time (user + system,
# what the kernel side adds to it; the wall ratios above also hold the
# machine's noise and the tracer's own work beside it), plain, audited and
# under bpftrace, medians of ROUNDS runs of 10 N operations (time counts in
# 10 ms ticks).
cpu_ratio() {
	local plain=() audited_cpu=() bpftrace_cpu=() i p a b w=$1 n=$(($2 * 10))
	shift 2
	cpu_of() { "$@" 2>&1 >/dev/null | awk 'NF == 2 && $1 ~ /^[0-9.]+$/ { print $1 + $2 }' | tail -n1; }
	for ((i = 0; i < rounds; i++)); do
		plain+=("$(cpu_of /usr/bin/time -f '%S %U' "$bench" "$w" "$n" "$@")")
		audited_cpu+=("$(cpu_of audited /usr/bin/time -f '%S %U' "$bench" "$w" "$n" "$@")")
		bpftrace_cpu+=("$(under_bpftrace cpu_of /usr/bin/time -f '%S %U' "$bench" "$w" "$n" "$@")")
	done
	p=$(printf '%s\n' "${plain[@]}" | median)
	a=$(printf '%s\n' "${audited_cpu[@]}" | median)
	b=$(printf '%s\n' "${bpftrace_cpu[@]}" | median)
	per_op() { echo "$1 * 1000000000 / $n" | bc -l; }
	printf '  workload CPU (user + system) per op: plain %.0f ns, audited %.0f ns (%.3f), bpftrace %.0f ns (%.3f)\n' \
		"$(per_op "$p")" "$(per_op "$a")" "$(echo "$a / $p" | bc -l)" "$(per_op "$b")" "$(echo "$b / $p" | bc -l)"
}

# counts N WORKLOAD ARGS...: per operation (runs of N and 2N, the
# difference over N; bench-common.sh), the workload's system calls (strace
# -f -c: none of the tracers adds one to it) and, where perf has an
# instruction counter, the instructions (user and kernel) of the workload
# plain, of the audit command and its workload, and of the workload while
# bpftrace traces it.  (callgrind, which bench.sh falls back to, counts
# user space only: the auditor's cost is in the kernel and the auditor.)
counts() {
	local n=$1 w=$2 s1 s2 k
	shift 2
	s1=$(syscalls "$bench" "$w" "$n" "$@")
	s2=$(syscalls "$bench" "$w" $((2 * n)) "$@")
	printf '  per op: %.1f system calls' "$(echo "($s2 - $s1) / $n" | bc -l)"
	if [ "$insns_by" != perf ]; then
		echo "; instructions: no counter for perf on this machine"
		return
	fi
	per_insn() { # COMMAND-PREFIX...: instructions per op of PREFIX bench w N
		local a b
		a=$(insns "$@" "$bench" "$w" "$n" "${args[@]}")
		b=$(insns "$@" "$bench" "$w" $((2 * n)) "${args[@]}")
		echo $(((b - a) / n))
	}
	local args=("$@")
	printf '; instructions: plain %s' "$(per_insn env)"
	for k in "${probes[@]}"; do
		local force=()
		[ "$k" = default ] || force=(--probe "$k")
		printf ', audited (%s) %s' "$k" "$(per_insn "$cli" audit --abort-dir "$abort_dir" --patterns \
			'{req}_{int}_{int}' --json "$json" "${force[@]}" --)"
	done
	printf ', bpftrace %s\n' "$(under_bpftrace per_insn env)"
}

jq_get() { python3 -c "import json,sys; r=json.load(open('$json')); print(r['$1'])"; }

# With 1,000,000 followed files: the lifecycle plain and audited, then two
# churning processes, all in one audited run.  The review of a large table
# comes every 40 s or so: each side runs the lifecycle for a while
# (PLAIN_S, AUDITED_S seconds; the audited side long enough to hold several
# reviews, the plain one half before and half after it) and counts its mean,
# rounds of all kinds included.
large() {
	local live=${LIVE:-1000000} plain_s=${PLAIN_S:-30} audited_s=${AUDITED_S:-180} out plain p a
	echo "large table: $live files kept (not followed plain, followed audited), lifecycle means over ${plain_s} s plain, ${audited_s} s audited:"
	lifecycle_for() { # SECONDS: 20,000-lifecycle rounds until then
		local end=$((SECONDS + $1))
		while ((SECONDS < end)); do "$bench" lifecycle 20000 "$prefix"; done
	}
	# Plain: half before the audited run and half after, against drift.
	plain_half() {
		"$bench" keep "$live" "${prefix}L-" >/dev/null
		lifecycle_for $((plain_s / 2))
		remove_files "${prefix}L-"
	}
	plain=$(plain_half)
	out=$(audit_opts="--max-files 4000000" audited bash -c "$(declare -f lifecycle_for); bench=$bench prefix=$prefix
		$bench keep $live ${prefix}L- >/dev/null && lifecycle_for $audited_s &&
		{ $bench churn 300000 ${prefix}a- & $bench churn 300000 ${prefix}b-; wait; }")
	remove_files "${prefix}L-"
	plain+=$'\n'$(plain_half)
	p=$(echo "$plain" | ns_of | mean)
	a=$(echo "$out" | grep '^lifecycle' | ns_of | mean)
	printf '  lifecycle %.0f ns plain, %.0f ns audited: ratio %.3f\n' "$p" "$a" "$(echo "$a / $p" | bc -l)"
	echo "$out" | grep 'churn.*files/s' | sed 's/^/  /'
	printf '  events %s (%s files followed at the peak), dropped events: %s, auditor peak RSS %s KiB\n' \
		"$(jq_get events)" "$live" "$(jq_get dropped_events)" "$(jq_get auditor_max_rss_kib)"
}

if $large_only; then
	large
	exit 0
fi

insns_by=$(insn_method)
echo "shmguard audit benchmarks: $rounds runs each, medians ($(nproc) CPUs, $(uname -r))"
printf '%-32s %12s' workload plain
for k in "${probes[@]}"; do
	[ "$k" = default ] && k="audited ($("$cli" doctor | sed -n 's/.* with the \([a-z]*\) probe.*/\1/p'))"
	printf ' %12s %6s' "$k" ratio
done
printf ' %12s %6s %12s %6s %12s %6s %13s %7s\n' watch ratio "watch -A" ratio bpftrace ratio "strace -f" ratio
row "open+close outside /dev/shm" 300000 open-close /etc/hostname
row "segment lifecycle" 20000 lifecycle "$prefix"
# The CPU watch itself spends per file created (its userspace: the wall
# ratios above are the kernel side's and the machine's).
# COMMAND... run by under_watch: prints the CPU ticks watch spent meanwhile.
watch_ticks() {
	local c0
	c0=$(awk '{ print $14 + $15 }' "/proc/$tracer_pid/stat")
	"$@" >/dev/null
	sleep 0.5 # the last events read
	echo $(($(awk '{ print $14 + $15 }' "/proc/$tracer_pid/stat") - c0))
}
watch_cpu() {
	local hz t
	hz=$(getconf CLK_TCK)
	t=$(under_watch watch_ticks "$bench" lifecycle 40000 "$prefix")
	printf "watch's own CPU while 40,000 files were created and unlinked: %.0f ms, %.2f us a file\n" \
		"$(echo "$t * 1000 / $hz" | bc -l)" "$(echo "$t * 1000000 / $hz / 40000" | bc -l)"
}
watch_cpu
! $rows_only || exit 0
echo
echo "burst: two processes each creating and unlinking 300,000 empty files as fast as they can:"
out=$(audited sh -c "$bench churn 300000 ${prefix}a- & $bench churn 300000 ${prefix}b-; wait")
echo "$out" | grep files/s | sed 's/^/  /'
events=$(jq_get events) duration=$(jq_get duration_s)
printf '  %s events in %.2f s = %.0f events/s, dropped events: %s\n' "$events" "$duration" \
	"$(echo "$events / $duration" | bc -l)" "$(jq_get dropped_events)"
echo
rss_with() { # PATTERNS WORKLOAD N: the auditor's peak RSS (KiB) following N files
	"$cli" audit --abort-dir "$abort_dir" --max-files 4000000 --patterns "$1" --json "$json" -- \
		"$bench" "$2" "$3" "${prefix}k-" >/dev/null
	remove_files "${prefix}k-"
	remove_files "vllm_offload_chatcmpl-${prefix:0:16}"
	jq_get auditor_max_rss_kib
}
echo "memory: the auditor's peak RSS following 0 and 100,000 files:"
rss0=$(rss_with '{req}_{int}_{int}' keep 1)
rss1=$(rss_with '{req}_{int}_{int}' keep 100000)
printf '  %s KiB and %s KiB: %.0f bytes per tracked file\n' "$rss0" "$rss1" "$(echo "($rss1 - $rss0) * 1024 / 100000" | bc -l)"
# The table alone (without the ring buffer, which 100,000 creations fill):
# files of no request, of a request each, of 4 and of 100 files a request,
# each named after it came, as the review names what the ctime probe saw made.
for reqs in 0 1000000 250000 10000; do build/auditor/bench_audit_files 1000000 $reqs | sed 's/^/  /'; done
# At 1,000,000 files, the issue's measure: the peak RSS following them less
# that following one, over 1,000,000, by how the patterns give their requests.
echo "memory at 1,000,000 files (peak RSS less that following one file, over 1,000,000):"
for case in "a request each:{req}_0_0:keep" "one request for all:{req}-k-{int}_0_0:keep" \
	"no request (each name ambiguous):{req}{int}_0_0:keep" \
	"vLLM's offload names, a request each:vllm_offload_{req}.mmap:keep-offload"; do
	IFS=: read -r label patterns workload <<<"$case"
	r0=$(rss_with "$patterns" "$workload" 1)
	r1=$(rss_with "$patterns" "$workload" 1000000)
	printf '  %s: %s KiB, %.0f bytes per file (dropped events: %s)\n' "$label" "$r1" \
		"$(echo "($r1 - $r0) * 1024 / 1000000" | bc -l)" "$(jq_get dropped_events)"
done
echo
large
