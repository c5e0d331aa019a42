#!/usr/bin/env bash
# The shim links the core alone: no function of the tools' library (host/)
# may end up in libshmguard.so, which runs inside other people's programs.
# Fails naming each host function the library defines.
set -euo pipefail
lib=$1 host=$2
host_syms=$(nm --defined-only "$host" | awk '$2 ~ /^[TDRB]$/ {print $3}' | sort -u)
[ -n "$host_syms" ] || { echo "no symbols read from $host" >&2; exit 1; }
shim_syms=$(nm --defined-only "$lib" | awk '{print $3}' | sort -u)
found=$(comm -12 <(echo "$host_syms") <(echo "$shim_syms"))
if [ -n "$found" ]; then
	echo "$lib holds host code: $found" >&2
	exit 1
fi
