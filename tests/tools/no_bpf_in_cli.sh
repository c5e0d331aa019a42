#!/usr/bin/env bash
# The command line parses, calls and prints: it reads the kernel side's
# events through the auditor's tracer (auditor/audit_trace.h), which decodes
# them once, and includes no header of bpf/ (nor libbpf's <bpf/...>).
# Fails naming each include that does.
set -euo pipefail
cli=$1 bpf=$2
names=$(find "$bpf" -name '*.h' -printf '%f\n' | sort -u)
[ -n "$names" ] || { echo "no headers found in $bpf" >&2; exit 1; }
pattern="#[[:space:]]*include[[:space:]]*[<\"](bpf/|.*skel\\.h|$(echo "$names" | sed 's/\./\\./g' | paste -sd'|'))"
if found=$(grep -En "$pattern" "$cli"/*.c "$cli"/*.h); then
	echo "cli/ includes the kernel side's headers:" >&2
	echo "$found" >&2
	exit 1
fi
