#!/usr/bin/env bash
# The long randomized stress run (docs/performance.md, "Safety figures"): about 1,000,000
# segment lifecycles in 6 processes of 4 threads under the shim, colliding
# request IDs, late puts, forked children that exec, a worker killed with SIGKILL and reclaimed by
# `shmguard sweep --dead`, all checked against the driver's own log; then
# programs without the shim: rounds of NCCL-like jobs in cgroups of their
# own, with peers, attach-then-unlink and kills, swept by `sweep --dead` with
# `shmguard watch`'s records (the orphans test's randomized run, longer);
# then the unshimmed programs of tests/tools/stress.c (a creator that moves
# to another cgroup before its first one goes, a daemon creating through
# system(), hand-offs to live processes of other cgroups, lock holders),
# swept while they live and once they have ended, each live program
# opening all of its files again (orphans::unshimmed_programs_lose_no_live_file).
#   scripts/stress.sh [OPS_PER_THREAD [ORPHAN_ROUNDS [UNSHIMMED_ROUNDS]]]
#   (default 52000, 100, 70: 70 rounds of up to 200 files per program, about
#   115,000 operations)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh

ops=${1:-52000}
orphan_rounds=${2:-100}
unshimmed_rounds=${3:-70}
prefix="stress-$$-"
root="/dev/shm/${prefix}root" abort_dir="/dev/shm/${prefix}abort" logs="/tmp/${prefix}logs"
report="/tmp/${prefix}unshimmed"
trap 'rm -rf "$root" "$abort_dir" "$logs" "$report"' EXIT
mkdir -p "$root" "$abort_dir" "$logs"

start=$(date +%s)
coproc STRESS {
	LD_PRELOAD="$PWD/build/shim/libshmguard.so" SHMGUARD_SHM_ROOTS="$root" SHMGUARD_ABORT_DIR="$abort_dir" \
		SHMGUARD_LOG=warn build/tests/stress --root "$root" --abort-dir "$abort_dir" --logs "$logs" \
		--procs 4 --threads 4 --ops "$ops" --seed "$$" --kill
}
read -r ready <&"${STRESS[0]}" # the workers are done, and still alive
echo "workers done after $(($(date +%s) - start)) s; the killed worker's orphans:"
build/cli/shmguard sweep --root "$root" --ignore-unreadable --dead | tail -1
sleep 1
echo check >&"${STRESS[1]}"
read -r verdict <&"${STRESS[0]}"
echo "$verdict"
wait "$STRESS_PID"

echo "programs without the shim: $orphan_rounds rounds of jobs, peers and kills"
SG_ORPHAN_ROUNDS=$orphan_rounds meson test -C build orphans --test-args='--filter=*randomized*' --timeout-multiplier 10 |
	grep -E '^ *1/1 '

echo "unshimmed programs: $unshimmed_rounds rounds of movers, daemons, hand-offs and lock holders"
SG_UNSHIMMED_ROUNDS=$unshimmed_rounds SG_UNSHIMMED_FILES=200 SG_STRESS_REPORT="$report" \
	meson test -C build orphans --test-args='--filter=*unshimmed*' --timeout-multiplier 60 | grep -E '^ *1/1 '
cat "$report"
