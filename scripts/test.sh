#!/usr/bin/env bash
# Build shmguard and run every test: unit and integration (meson test).
# Installs missing Debian packages first.  Extra arguments go to `meson test`
# (a suite name, say: scripts/test.sh --suite unit).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
status=0
meson test -C build --print-errorlogs "$@" || status=$?
# One closing line over the individual test cases of every Criterion binary.
awk '/Synthesis: Tested:/ {
	for (i = 1; i <= NF; i++) {
		if ($i == "Passing:") passed += $(i + 1)
		if ($i == "Failing:") failed += $(i + 1)
	}
} END { printf "%d passed, %d failed\n", passed, failed }' build/meson-logs/testlog.txt
exit "$status"
