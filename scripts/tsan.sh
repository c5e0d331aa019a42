#!/usr/bin/env bash
# The shim's threaded workloads under ThreadSanitizer: a TSan build of the
# shim and of shmtool (build-tsan/), with libtsan preloaded ahead of the shim
# so that it is initialised before any instrumented code runs.  (Criterion
# cannot start under TSan, so these run from here, not from meson test.)
# Any report fails the run.  scripts/test.sh runs this as its third pass.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh

[ -f build-tsan/build.ninja ] || meson setup build-tsan -Db_sanitize=thread -Db_lundef=false >/dev/null
meson compile -C build-tsan shmguard:shared_library shmtool >/dev/null
tsan=$(readlink -f "$(gcc -print-file-name=libtsan.so)")
prefix="tsan-$$-"
abort_dir="/dev/shm/${prefix}abort" root="/dev/shm/${prefix}root"
trap 'find /dev/shm -maxdepth 1 -name "${prefix}*" -exec rm -rf {} +' EXIT
mkdir -p "$abort_dir" "$root"

status=0
run() {
	local name=$1
	shift
	if ! SHMTOOL_ABORT_DIR="$abort_dir" SHMGUARD_ABORT_DIR="$abort_dir" SHMGUARD_SHM_ROOTS="$root" \
		SHMGUARD_PATTERNS='{any}_{req}' TSAN_OPTIONS="halt_on_error=1:exitcode=66:die_after_fork=0" \
		LD_PRELOAD="$tsan $PWD/build-tsan/shim/libshmguard.so" \
		timeout 120 build-tsan/tests/shmtool "$@" </dev/null >"/tmp/${prefix}out" 2>&1; then
		echo "tsan: $name: FAILED"
		grep -E "WARNING: ThreadSanitizer|^    #[0-9] |SUMMARY" "/tmp/${prefix}out" | head -30
		status=1
	else
		echo "tsan: $name: no report"
	fi
	rm -f "/tmp/${prefix}out"
}

# 8 threads, each its own request; half abort themselves mid-way and keep
# creating (sweeps and late puts racing with creations).
run "threads creating and sweeping" threads 8 60 "${prefix}t"
# The same around a fork: the child's watcher and records are its own.
# (TSan would refuse new threads after a multi-threaded fork: die_after_fork=0.)
run "threads around a fork" threads 4 30 "${prefix}u" , fork , threads 4 30 "${prefix}v"
exit "$status"
