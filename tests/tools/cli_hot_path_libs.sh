#!/usr/bin/env bash
# The shmguard command, which a serving host runs on its hot path (abort,
# sweep, ls, the preflight), links none of the auditor's libraries: those
# are its module's (shmguard-auditor.so), loaded by audit, watch and
# doctor's BPF checks alone.  With the module given, it must link them (or
# the check would pass on a module that lost its libraries).
#   cli_hot_path_libs.sh SHMGUARD [MODULE]
set -euo pipefail
needed() { readelf -d "$1" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p'; }
heavy='^lib(bpf|microhttpd|gnutls)\.'
if needed "$1" | grep -E "$heavy"; then
	echo "cli_hot_path_libs: $1 links the auditor's libraries (above)" >&2
	exit 1
fi
if [ $# -ge 2 ] && [ "$(needed "$2" | grep -cE '^lib(bpf|microhttpd)\.')" -ne 2 ]; then
	echo "cli_hot_path_libs: $2 does not link libbpf and libmicrohttpd: is it the auditor?" >&2
	exit 1
fi
echo "cli_hot_path_libs: $1 links $(needed "$1" | tr '\n' ' ')"
