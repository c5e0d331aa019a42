#!/usr/bin/env bash
# Build shmguard and run every test (meson test): unit, integration and a
# short fuzzing run; then the unit and integration tests again in a second
# build under AddressSanitizer and UndefinedBehaviorSanitizer; then the
# shim's threaded workloads under ThreadSanitizer (scripts/tsan.sh); then the
# shim alone, as a machine with a C compiler and libc only builds it; then
# the shim's and the command line's tests in a build without the auditor
# (scripts/build-no-auditor.sh: no BPF toolchain); then
# the install test (meson install into a fresh prefix, the Debian packages);
# then the kernel matrix (scripts/kernels.sh: Debian's 5.10, 6.1 and 6.12
# under QEMU, and this kernel).  arm64 (scripts/arm64.sh: its cross build,
# qemu-aarch64, Debian's arm64 kernels booted) is a command of its own,
# outside this one's time.
# Installs missing Debian packages first.  Extra arguments go to `meson test`
# in the first build (a suite name, say: scripts/test.sh --suite unit), and
# skip the sanitized passes.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
status=0
meson test -C build --print-errorlogs "$@" || status=$?
if [ $# -eq 0 ]; then
	[ -f build-asan/build.ninja ] || meson setup build-asan -Db_sanitize=address,undefined -Db_lundef=false >/dev/null
	meson compile -C build-asan >/dev/null
	# The sanitized shim is preloaded into programs that are not (python3,
	# sh), so ASan must not insist on being first; leaks are valgrind's job
	# (the tests' own strings live until each test ends).
	SG_SANITIZED=1 ASAN_OPTIONS=verify_asan_link_order=0:detect_leaks=0 \
		UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
		meson test -C build-asan --no-suite fuzz --print-errorlogs --logbase asan || status=$?
	scripts/tsan.sh || status=$?
	scripts/build-minimal.sh || status=$?
	scripts/build-no-auditor.sh || status=$?
	scripts/install-test.sh || status=$?
	# The kernel matrix: the same checks in Debian's 5.10, 6.1 and 6.12
	# under QEMU and on this kernel, against their expected results.
	if [ "$(id -u)" -eq 0 ] || [ -n "${CI:-}" ]; then
		scripts/kernels.sh || status=$?
	else
		echo "kernels: skipped (needs root)"
	fi
fi
# One closing line over the individual test cases of every Criterion binary.
logs=(build/meson-logs/testlog.txt)
[ -f build-asan/meson-logs/asan.txt ] && [ $# -eq 0 ] && logs+=(build-asan/meson-logs/asan.txt)
[ -f build-no-auditor/meson-logs/no-auditor.txt ] && [ $# -eq 0 ] && logs+=(build-no-auditor/meson-logs/no-auditor.txt)
# The failed cases are named there too, with their first lines of output and
# the log that holds the rest, since a CI page often shows only the last lines.
awk '/Synthesis: Tested:/ {
	for (i = 1; i <= NF; i++) {
		if ($i == "Passing:") passed += $(i + 1)
		if ($i == "Failing:") failed += $(i + 1)
	}
}
/^\[----\] +[^ ]/ { if (held < 6) said = said "    " $0 "\n"; held++ }
/^\[FAIL\] / {
	sub(/:$/, "", $2)
	names = names sprintf("  failed: %s (%s)\n%s", $2, FILENAME, said)
}
/^\[(FAIL|PASS|====)\]/ { said = ""; held = 0 }
END { printf "%d passed, %d failed\n%s", passed, failed, names }' "${logs[@]}"
exit "$status"
