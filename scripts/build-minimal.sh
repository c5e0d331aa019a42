#!/usr/bin/env bash
# Build the shim alone, as on a machine with a C compiler and libc only:
# -Dauditor=disabled -Dtests=disabled, with no pkg-config package visible.
# It must build, export exactly what the full build's shim exports, and do
# its job: the example pipeline of that same build (examples/shmpipe, a
# producer and a consumer) leaves its aborted requests' segments behind
# without it, and nothing under it.
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

# The pipeline, its every fourth request aborted by its client, chunks put
# after the abort too: the names it leaves in /dev/shm, with and without the
# minimal shim.  Only this run's names (prefix) are looked at and removed.
prefix=sgm-$$-
abort_dir=/dev/shm/${prefix}abort
left() { find /dev/shm -maxdepth 1 -name "${prefix}[0-9]*" -o -maxdepth 1 -name "shm_${prefix}[0-9]*" | wc -l; }
clean() { find /dev/shm -maxdepth 1 -name "${prefix}*" -o -maxdepth 1 -name "shm_${prefix}*" | xargs -r rm -rf; }
trap clean EXIT
pipeline() {
	"$@" "$out/examples/shmpipe" --prefix "$prefix" --requests 40 --abort-every 4 --late-puts \
		--abort-dir "$abort_dir" >/dev/null
}
pipeline env
without=$(left)
clean
pipeline env SHMGUARD_PATTERNS='{req}_{int}_{int};shm_{req}_{int}_{int}_lockfile.lock' \
	SHMGUARD_ABORT_DIR="$abort_dir" LD_PRELOAD="$PWD/$out/shim/libshmguard.so"
with=$(left)
if [ "$without" -eq 0 ] || [ "$with" -ne 0 ]; then
	echo "build-minimal.sh: the pipeline's aborted requests left $without names without the minimal shim" \
		"and $with under it (expected some, then none)" >&2
	exit 1
fi
echo "minimal build: the pipeline's aborts left $without names without the shim, none under it"
