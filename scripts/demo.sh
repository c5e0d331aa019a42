#!/usr/bin/env bash
# The demonstration: the two-stage pipeline in examples/ runs twice, once as
# it is and once under `shmguard run`.  Some requests are aborted half-way
# (their chunks are never read); the first run leaves their segments and lock
# files in /dev/shm, the second leaves nothing of them.  Live requests that
# are still waiting to be read stay in both runs.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh

prefix="demo-$$-"
abort_dir="/dev/shm/${prefix}abort"
patterns='{req}_{int}_{int};shm_{req}_{int}_{int}_lockfile.lock'
requests=200 chunks=2 chunk_size=45000 abort_every=10 hold=4

cleanup() { rm -rf /dev/shm/"$prefix"* /dev/shm/shm_"$prefix"*; }
trap cleanup EXIT

# Files and allocated KiB the pipeline left, by kind.
report() {
	local aborted=0 aborted_bytes=0 held=0 f name id
	for f in /dev/shm/"$prefix"*_0_* /dev/shm/shm_"$prefix"*; do
		[ -e "$f" ] || continue
		name=${f##*/}; name=${name#shm_}; id=${name%%_*}; id=${id#"$prefix"}
		if [ $((id % abort_every)) -eq $((abort_every - 1)) ]; then
			aborted=$((aborted + 1))
			aborted_bytes=$((aborted_bytes + $(stat -c '%b * %B' "$f")))
		else
			held=$((held + 1))
		fi
	done
	printf '  left in /dev/shm: %d file(s) of aborted requests (%d KiB, %d KiB per abort); %d of live requests still waiting\n' \
		"$aborted" $((aborted_bytes / 1024)) $((aborted_bytes / 1024 / (requests / abort_every))) "$held"
}

# The pipeline stays up for a moment after its work, as a server would.
run_pipeline() {
	sleep 1 | "$@" build/examples/shmpipe --prefix "$prefix" --requests $requests --chunks $chunks \
		--chunk-size $chunk_size --abort-every $abort_every --hold $hold --abort-dir "$abort_dir" --wait-stdin
}

echo "== $requests requests, every ${abort_every}th aborted by its client; the last few are still waiting to be read"
echo
echo "== 1. as it is"
run_pipeline
report
cleanup
echo
echo "== 2. under shmguard (no change to the pipeline: LD_PRELOAD through 'shmguard run')"
echo "     shmguard run --patterns '$patterns' --abort-dir $abort_dir -- shmpipe ..."
SHMGUARD_LOG=${SHMGUARD_LOG:-warn} run_pipeline build/auditor/shmguard run --patterns "$patterns" --abort-dir "$abort_dir" --
report
