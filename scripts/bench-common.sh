# shellcheck shell=bash
# Sourced by scripts/bench.sh, bench-pgbench.sh and bench-audit.sh: the shim as every
# row of the figures configures it, and medians.  The caller sets shim (the
# library) and abort_dir.

# shimmed COMMAND...: COMMAND with libshmguard.so preloaded, in a tagging
# configuration (PATTERNS, ABORT_DIR and TAG override it).
shimmed() {
	LD_PRELOAD=$shim SHMGUARD_PATTERNS=${PATTERNS:-'{req}_{int}_{int}'} SHMGUARD_ABORT_DIR=${ABORT_DIR:-$abort_dir} \
		SHMGUARD_TAG=${TAG:-journal} "$@"
}

# The median of the numbers on stdin, one a line.
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# Figures the machine's noise does not move, beside the wall-clock ratios:
# instructions and system calls per operation of a workload, each the
# difference between a run of N and one of 2N operations over N (what the
# process's start and end cost cancels out).  Instructions: perf's counter
# (user and kernel) where the machine has one; else valgrind's callgrind,
# which counts the user-space ones only (a VM without a PMU: perf says
# "<not supported>").  System calls: strace -f -c, every thread's.
insn_method() {
	if perf stat -x, -e instructions true 2>&1 >/dev/null | grep -q '^[0-9]'; then
		echo perf
	elif command -v valgrind >/dev/null; then
		echo callgrind
	else
		echo none
	fi
}

# insns COMMAND...: the instructions COMMAND executes (by $insns_by).
insns() {
	case $insns_by in
	perf) perf stat -x, -e instructions "$@" 2>&1 >/dev/null | awk -F, '$3 ~ /^instructions/ { print $1 }' ;;
	callgrind) # a line per process: fork children count too
		valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" 2>&1 >/dev/null |
			awk '/Collected :/ { s += $NF } END { print s + 0 }' ;;
	*) echo 0 ;;
	esac
}

# syscalls COMMAND...: the system calls COMMAND and its threads and children make.
syscalls() {
	local out
	out=$(mktemp)
	strace -f -c -o "$out" "$@" >/dev/null
	awk '$NF == "total" { print $4 }' "$out"
	rm -f "$out"
}

# per_op N RUN WORKLOAD ARGS...: "INSNS SYSCALLS" per operation of
# `$bench WORKLOAD N ARGS...`, run by `RUN insns ...` (RUN: shimmed, or
# env for the workload alone).
per_op() {
	local n=$1 run=$2 w=$3 i1 i2 s1 s2
	shift 3
	i1=$($run insns "$bench" "$w" "$n" "$@")
	i2=$($run insns "$bench" "$w" $((2 * n)) "$@")
	s1=$($run syscalls "$bench" "$w" "$n" "$@")
	s2=$($run syscalls "$bench" "$w" $((2 * n)) "$@")
	echo "$(((i2 - i1) / n)) $(echo "($s2 - $s1) / $n" | bc -l)"
}
