#!/usr/bin/env bash
# The shim's own work must not call the functions it exports (shim/real.h):
# such a call goes through the PLT to its own wrapper.  Fails when the
# library has a relocation against a symbol it defines and exports.
set -euo pipefail
lib=$1
exports=$(nm -D --defined-only "$lib" | awk '{print $3}' | sed 's/@.*//' | sort -u)
relocated=$(readelf --relocs --wide "$lib" | awk '$3 ~ /JUMP_SLOT|GLOB_DAT/ {print $5}' | sed 's/@.*//' | sort -u)
self=$(comm -12 <(echo "$exports") <(echo "$relocated"))
if [ -n "$self" ]; then
	echo "$lib calls its own wrappers: $self" >&2
	exit 1
fi
