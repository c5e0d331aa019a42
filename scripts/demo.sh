#!/usr/bin/env bash
# The demonstration: the two-stage pipeline in examples/ runs twice, once as
# it is and once under `shmguard run`, each time measured by `shmguard audit`
# with a budget of 0 KiB per abort (the CI gate).  Some requests are aborted
# half-way (their chunks are never read): the first run leaves their segments
# and lock files in /dev/shm and fails the gate, the second leaves nothing of
# them and passes.  Live requests still waiting to be read stay in both runs.
# Each run's timeline is drawn (--plot) into build/demo/demo-without-shim.svg
# and build/demo/demo-with-shim.svg.
#
#   scripts/demo.sh                    build (installing only what the demo
#                                      needs: scripts/deps.sh demo) and run
#   scripts/demo.sh --update-pictures  the same, drawing into docs/ instead:
#                                      the pictures the README shows
#   scripts/demo.sh --installed PREFIX run the installed shmguard (and the
#                                      example pipeline installed with it),
#                                      drawing nothing
set -euo pipefail
cd "$(dirname "$0")/.."
usage() { sed -n '/^#   scripts\/demo.sh/,/^#  *drawing nothing/s/^# \{0,1\}//p' "$0" >&2; exit 2; }
case ${1:-} in
--installed)
	[ $# -eq 2 ] || usage
	shmguard=$2/bin/shmguard
	shmpipe=$2/libexec/shmguard/shmpipe
	plots=
	;;
--update-pictures | '')
	[ $# -le 1 ] || usage
	SHMGUARD_DEPS=demo scripts/build.sh
	shmguard=build/cli/shmguard
	shmpipe=build/examples/shmpipe
	plots=build/demo
	[ "${1:-}" = --update-pictures ] && plots=docs
	mkdir -p "$plots"
	;;
*) usage ;;
esac

prefix="demo-$$-"
abort_dir="/dev/shm/${prefix}abort"
patterns='{req}_{int}_{int};shm_{req}_{int}_{int}_lockfile.lock'
requests=200 rate=40 chunks=2 chunk_size=45000 abort_every=10 hold=4

# Then the shim's journals of those files' creators, now orphans.
cleanup() {
	rm -rf /dev/shm/"$prefix"* /dev/shm/shm_"$prefix"*
	"$shmguard" sweep --ignore-unreadable --glob "${prefix}*" --older-than 0 >/dev/null || true
}
trap cleanup EXIT
"$shmguard" abort --init-dir "$abort_dir" >/dev/null

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
	printf 'ls /dev/shm: %d %s of aborted requests (%d KiB); %d of live requests still waiting\n' \
		"$aborted" "$([ "$aborted" -eq 1 ] && echo file || echo files)" $((aborted_bytes / 1024)) "$held"
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
"$shmguard" abort --init-dir "$abort_dir" >/dev/null
echo
echo "== 2. under shmguard: no change to the pipeline, LD_PRELOAD through 'shmguard run'"
run_pipeline demo-with-shim.svg "$shmguard" run --patterns "$patterns" --abort-dir "$abort_dir" --
report
