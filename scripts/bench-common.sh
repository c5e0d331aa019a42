# shellcheck shell=bash
# Sourced by scripts/bench.sh and scripts/bench-pgbench.sh: the shim as every
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
