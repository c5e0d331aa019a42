#!/usr/bin/env bash
# The shmguard command, which a serving host runs on its hot path (abort,
# sweep, ls, the preflight), links libc and jansson alone: the auditor's
# libraries, PCRE2 and libelf are its modules' (cli/cli_module.h), loaded
# by the commands that use them.  Each module given must link one of those
# (or the check would pass on a module that lost its library).
#   cli_hot_path_libs.sh SHMGUARD [MODULE]...
set -euo pipefail
needed() { readelf -d "$1" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p'; }
heavy='^lib(bpf|microhttpd|gnutls|pcre2-8|elf)\.'
status=0
if needed "$1" | grep -E "$heavy"; then
	echo "cli_hot_path_libs: $1 links the libraries above, which only its modules should" >&2
	status=1
fi
for m in "${@:2}"; do
	if ! needed "$m" | grep -qE "$heavy"; then
		echo "cli_hot_path_libs: $m links none of the libraries a module is for" >&2
		status=1
	fi
done
[ $status -ne 0 ] || echo "cli_hot_path_libs: $1 links $(needed "$1" | tr '\n' ' ')"
exit $status
