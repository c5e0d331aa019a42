#!/usr/bin/env bash
# Build shmguard without the auditor (-Dauditor=disabled), as a machine or
# a container image without the BPF toolchain builds it, and run the shim's
# and the command line's tests there: every suite but the auditor's, which
# this build leaves out, and the deployment's.  The command must link none of the auditor's
# libraries, and its audit must say it was built without it (exit 3).
set -euo pipefail
cd "$(dirname "$0")/.."
out=build-no-auditor
[ -f "$out/build.ninja" ] || meson setup "$out" -Dauditor=disabled -Dfuzz=disabled >/dev/null
meson compile -C "$out" >/dev/null
needed=$(readelf -d "$out/cli/shmguard" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p')
if grep -E '^lib(bpf|microhttpd)\.' <<<"$needed"; then
	echo "build-no-auditor.sh: shmguard links the auditor's libraries without it" >&2
	exit 1
fi
status=0
"$out/cli/shmguard" audit >/dev/null 2>&1 || status=$?
if [ "$status" -ne 3 ]; then
	echo "build-no-auditor.sh: shmguard audit exited $status, not 3, without the auditor" >&2
	exit 1
fi
# The deployment test (podman, a minute) is the first pass's: nothing of it
# depends on the auditor.
meson test -C "$out" --suite unit --suite integration --no-suite containers --print-errorlogs --logbase no-auditor
echo "no auditor: shmguard links $(tr '\n' ' ' <<<"$needed")and runs run, abort, ls, sweep, doctor; audit exits 3"
