#!/usr/bin/env bash
# The node agent's memory bench, short: scripts/bench-node-memory.sh with
# the sizes tests/meson.build gives, which must end under the manifest's
# limit and print each figure.  Root (a mount namespace, cgroups, BPF).
#   node_memory_short.sh BENCH_SCRIPT      (exit 77: skipped)
set -uo pipefail
here=$(dirname "$0")
. "$here/skip.sh"
[ "$(id -u)" = 0 ] || skip "needs root (BPF, cgroups, a private mount namespace)"
out=$("$1" 2>&1)
status=$?
printf '%s\n' "$out"
[ "$status" = 0 ] || { echo "FAIL: the bench ended with $status" >&2; exit 1; }
for figure in "peak RSS" "files followed" "store"; do
	grep -q "$figure" <<<"$out" || { echo "FAIL: no '$figure' line" >&2; exit 1; }
done
