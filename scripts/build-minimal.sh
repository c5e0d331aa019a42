#!/usr/bin/env bash
# Build the shim alone, as on a machine with a C compiler and libc only:
# -Dauditor=disabled -Dtests=disabled, with no pkg-config package visible.
# It must build and export exactly what the full build's shim exports.
set -euo pipefail
cd "$(dirname "$0")/.."
out=build-minimal
rm -rf "$out"
PKG_CONFIG_LIBDIR=/var/empty PKG_CONFIG_PATH= \
	meson setup "$out" -Dauditor=disabled -Dtests=disabled >/dev/null
meson compile -C "$out" >/dev/null
exports() { nm -D --defined-only "$1" | awk '{print $3}' | sort; }
if ! diff <(exports build/shim/libshmguard.so) <(exports "$out/shim/libshmguard.so"); then
	echo "build-minimal.sh: the minimal shim exports other symbols than the full one" >&2
	exit 1
fi
echo "minimal build: libshmguard.so alone, $(exports "$out/shim/libshmguard.so" | wc -l) symbols exported as in the full build"
