#!/usr/bin/env bash
# The demonstration: the two-stage pipeline in examples/ runs twice, once as
# it is and once under `shmguard run`, each time measured by `shmguard audit`
# with a budget of 0 KiB per abort (the CI gate).  Some requests are aborted
# half-way (their chunks are never read): the first run leaves their segments
# and lock files in /dev/shm and fails the gate, the second leaves nothing of
# them and passes.  Live requests still waiting to be read stay in both runs.
# Each run's timeline is drawn (--plot) into docs/demo-without-shim.svg and
# docs/demo-with-shim.svg (not with --installed: the pictures in docs/ are
# those of the tree's build, which the README shows).
# `scripts/demo.sh --installed PREFIX` runs the installed shmguard (and the
# example pipeline installed with it) instead of building.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = --installed ]; then
	shmguard=$2/bin/shmguard
	shmpipe=$2/libexec/shmguard/shmpipe
	plots=
else
	scripts/build.sh
	shmguard=build/cli/shmguard
	shmpipe=build/examples/shmpipe
	plots=docs
fi

prefix="demo-$$-"
abort_dir="/dev/shm/${prefix}abort"
patterns='{req}_{int}_{int};shm_{req}_{int}_{int}_lockfile.lock'
requests=200 rate=40 chunks=2 chunk_size=45000 abort_every=10 hold=4

# Then the shim's journals of those files' creators, now orphans.
cleanup() {
	rm -rf /dev/shm/"$prefix"* /dev/shm/shm_"$prefix"*
	build/cli/shmguard sweep --ignore-unreadable --glob "${prefix}*" --older-than 0 >/dev/null || true
}
trap cleanup EXIT
mkdir -p "$abort_dir"

# The auditor needs root (eBPF); without it the demonstration only looks.
audit=("$shmguard" audit --patterns "$patterns" --abort-dir "$abort_dir" --grace 1 --max-kib-per-abort 0)
if [ "$(id -u)" -ne 0 ]; then
	echo "(not root: the auditor cannot load its eBPF programs; showing /dev/shm only)"
	audit=()
fi

# Files the pipeline left, by kind.
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
	printf 'ls /dev/shm: %d file(s) of aborted requests (%d KiB); %d of live requests still waiting\n' \
		"$aborted" $((aborted_bytes / 1024)) "$held"
}

# Requests arrive over five seconds (--rate), so that the pictures show the
# run; the pipeline stays up for two more after its work, as a server would.
# run_pipeline PICTURE [COMMAND ARGS... --]: the pipeline (under COMMAND).
run_pipeline() {
	local status=0 measured=()
	if [ ${#audit[@]} -gt 0 ] && [ -n "$plots" ]; then
		measured=("${audit[@]}" --plot "$plots/$1" --)
	elif [ ${#audit[@]} -gt 0 ]; then
		measured=("${audit[@]}" --)
	fi
	shift
	sleep $((requests / rate + 2)) | "${measured[@]}" "$@" "$shmpipe" --prefix "$prefix" --requests $requests \
		--rate $rate --chunks $chunks --chunk-size $chunk_size --abort-every $abort_every --hold $hold \
		--abort-dir "$abort_dir" --wait-stdin || status=$?
	echo "exit status $status"
}

echo "== $requests requests through a two-stage pipeline; every ${abort_every}th is aborted by its client"
echo
echo "== 1. as it is"
run_pipeline demo-without-shim.svg
report
cleanup
mkdir -p "$abort_dir"
echo
echo "== 2. under shmguard: no change to the pipeline, LD_PRELOAD through 'shmguard run'"
run_pipeline demo-with-shim.svg "$shmguard" run --patterns "$patterns" --abort-dir "$abort_dir" --
report
