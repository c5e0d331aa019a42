#!/usr/bin/env bash
# Configure (once) and compile shmguard in build/.  Extra arguments go to
# `meson setup` when the build directory is first made.  SHMGUARD_DEPS=demo
# installs only what the demonstration needs (scripts/deps.sh); the default
# is everything the tests need (bench: and the benchmarks' peers and counters).
set -euo pipefail
cd "$(dirname "$0")/.."
profile=${SHMGUARD_DEPS:-test}
scripts/deps.sh "$profile"
if [ ! -f build/build.ninja ]; then
	meson setup build "$@" >/dev/null
elif [ "$profile" != demo ] && ! grep -qi 'dependency criterion found: YES' build/meson-logs/meson-log.txt; then
	# Configured by the demonstration, before the test framework was
	# installed: the tests are built only once meson sees it.
	meson setup --reconfigure build >/dev/null
fi
meson compile -C build >/dev/null
