#!/usr/bin/env bash
# `shmguard abort` in a root of 100,000 files, without and with the root's
# journal directory (docs/journal.md, "A directory of their own"): N_FILES
# (default 100,000) empty files of an unshimmed program, and for each of
# ROUNDS (default 21) aborts a shimmed server with the request's 4
# segments, stopped (SIGSTOP) so that only abort can sweep them.  Prints
# each abort's line and time (start to exit, as the shell times it), then
# the medians.  Runs in a private tmpfs at /dev/shm in a mount namespace of
# its own (never the host's /dev/shm), so needs root; builds nothing
# (scripts/build.sh first).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" != --inside ]; then
	exec unshare -m --propagation private "$0" --inside
fi
mount -t tmpfs -o size=1g,mode=1777 tmpfs /dev/shm
n_files=${N_FILES:-100000} rounds=${ROUNDS:-21}
abort_dir=/dev/shm/abort
out=/dev/shm/bench-out log=/dev/shm/bench-log
mkdir "$abort_dir"
build/tests/shmtool fill /dev/shm "$n_files"
for dir in none trusted; do
	[ "$dir" = trusted ] && install -d -m 1777 -o root -g root /dev/shm/.shmguard
	for i in $(seq 1 "$rounds"); do
		req=r-$dir-$i
		rm -f "$out" # (its "ready" is the new server's)
		LD_PRELOAD=$PWD/build/shim/libshmguard.so SHMGUARD_PATTERNS='{req}_{int}_{int}' \
			SHMGUARD_ABORT_DIR=$abort_dir build/tests/shmtool shm "${req}_0_0" 4096 shm "${req}_0_1" 4096 \
			shm "${req}_0_2" 4096 shm "${req}_0_3" 4096 wait < <(sleep 5) >"$out" &
		server=$!
		until grep -qs ready "$out"; do sleep 0.01; done
		kill -STOP "$server"
		# every thread stopped (the shim's watcher too) before the marker
		until ! grep -qv '^T$' < <(for t in /proc/"$server"/task/*/stat; do
			sed 's/.*) \(.\).*/\1/' "$t"; done); do sleep 0.001; done
		start=$(date +%s%N)
		line=$(build/cli/shmguard abort -a "$abort_dir" "$req")
		end=$(date +%s%N)
		echo ".shmguard=$dir us=$(((end - start) / 1000)) left=$(ls /dev/shm/"${req}"_0_* 2>/dev/null | wc -l) $line" | tee -a "$log"
		kill -CONT "$server"
		kill "$server" 2>/dev/null || true
		wait "$server" 2>/dev/null || true
		rm -f /dev/shm/"${req}"_0_* /dev/shm/.shmguard-journal-* /dev/shm/.shmguard/.shmguard-journal-*
	done
done
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] + 0 }'; }
for dir in none trusted; do
	lines=$(grep "^\.shmguard=$dir " "$log")
	printf '.shmguard=%s: %d aborts, %d swept their 4 files, %d left them to the shims; start to exit, median %d us; ' \
		"$dir" "$(wc -l <<<"$lines")" "$(grep -c 'swept 4 files' <<<"$lines" || true)" \
		"$(grep -c 'left to the shims' <<<"$lines" || true)" "$(sed 's/.* us=\([0-9]*\) .*/\1/' <<<"$lines" | median)"
	printf 'the sweep (first marker to last unlink), median %d us\n' "$(sed 's/.* in \([0-9]*\) us.*/\1/' <<<"$lines" | median)"
done
