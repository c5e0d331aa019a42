#!/usr/bin/env bash
# Configure (once) and compile shmguard in build/.  Extra arguments go to
# `meson setup` when the build directory is first made.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
if [ ! -f build/build.ninja ]; then
	meson setup build "$@" >/dev/null
fi
meson compile -C build >/dev/null
