#!/usr/bin/env bash
# The shim's threaded workloads under ThreadSanitizer: a TSan build of the
# shim, shmtool and the stress driver (build-tsan/), with libtsan preloaded ahead of the shim
# so that it is initialised before any instrumented code runs.  (Criterion
# cannot start under TSan, so these run from here, not from meson test.)
# Any report fails the run.  scripts/test.sh runs this as its third pass.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh test

[ -f build-tsan/build.ninja ] || meson setup build-tsan -Db_sanitize=thread -Db_lundef=false >/dev/null
meson compile -C build-tsan shmguard:shared_library shmguard:executable shmtool stress >/dev/null
tsan=$(readlink -f "$(gcc -print-file-name=libtsan.so)")
prefix="tsan-$$-"
abort_dir="/dev/shm/${prefix}abort" root="/dev/shm/${prefix}root"
# The files (a glob, not find: find fails when another process's entry
# vanishes mid-scan), then the shim's journals of their creators, now
# orphans (any sweep removes a dead creator's journal whose files are gone).
cleanup() {
	rm -rf /dev/shm/"${prefix}"* /tmp/"${prefix}"report.*
	build-tsan/cli/shmguard sweep --ignore-unreadable --glob "${prefix}*" --older-than 0 >/dev/null || true
}
trap cleanup EXIT
mkdir -p "$abort_dir" "$root"

# Reports go to files: the shim's marker watcher has a descriptor table of
# its own, without the program's stderr, so a report made on it would be lost.
reports="/tmp/${prefix}report"
tsan_options="halt_on_error=1:exitcode=66:die_after_fork=0:log_path=$reports"
show_reports() {
	cat "$@" "$reports".* 2>/dev/null | grep -E "WARNING: ThreadSanitizer|^    #[0-9] |SUMMARY" | head -30 || true
	rm -f "$reports".*
}

status=0
run() {
	local name=$1
	shift
	if ! SHMTOOL_ABORT_DIR="$abort_dir" SHMGUARD_ABORT_DIR="$abort_dir" SHMGUARD_SHM_ROOTS="$root" \
		SHMGUARD_PATTERNS='{any}_{req}' TSAN_OPTIONS="$tsan_options" \
		LD_PRELOAD="$tsan $PWD/build-tsan/shim/libshmguard.so" \
		timeout 120 build-tsan/tests/shmtool "$@" </dev/null >"/tmp/${prefix}out" 2>&1; then
		echo "tsan: $name: FAILED"
		show_reports "/tmp/${prefix}out"
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
# The stress driver: processes, threads, fork+exec, a killed worker.
logs="/tmp/${prefix}logs" sroot="/dev/shm/${prefix}sroot" sabort="/dev/shm/${prefix}sabort"
mkdir -p "$logs" "$sroot" "$sabort"
coproc STRESS {
	SHMGUARD_ABORT_DIR="$sabort" SHMGUARD_SHM_ROOTS="$sroot" TSAN_OPTIONS="$tsan_options" \
		LD_PRELOAD="$tsan $PWD/build-tsan/shim/libshmguard.so" timeout 300 build-tsan/tests/stress --root "$sroot" \
		--abort-dir "$sabort" --logs "$logs" --procs 2 --threads 3 --ops 150 --kill 2>"/tmp/${prefix}stress.err"
}
if read -r -t 120 ready <&"${STRESS[0]}"; then
	build-tsan/cli/shmguard sweep --root "$sroot" --ignore-unreadable --dead >/dev/null
	sleep 0.5
	echo check >&"${STRESS[1]}"
	read -r -t 60 verdict <&"${STRESS[0]}" || verdict="(no verdict)"
fi
stress_status=0
wait "$STRESS_PID" || stress_status=$?
if [ "$stress_status" -ne 0 ]; then
	echo "tsan: stress driver: FAILED (exit $stress_status): ${verdict:-no result}"
	show_reports "/tmp/${prefix}stress.err"
	status=1
else
	echo "tsan: stress driver: no report ($verdict)"
fi
rm -rf "$logs" "/tmp/${prefix}stress.err"
exit "$status"
