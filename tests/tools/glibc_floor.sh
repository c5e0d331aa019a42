#!/usr/bin/env bash
# glibc_floor.sh LIB [MAJOR.MINOR]: fails when LIB needs a glibc symbol
# version newer than MAJOR.MINOR (default 2.31: Debian 11, Ubuntu 20.04),
# or binds pthread_* or dl* functions without naming libpthread.so.0 and
# libdl.so.2, where glibc before 2.34 has them (core/glibc_floor.h).
set -euo pipefail
lib=$1
floor=${2:-2.31}
status=0
newer=$(readelf --version-info --wide "$lib" | grep -o 'Name: GLIBC_[0-9][0-9.]*' | sed 's/.*GLIBC_//' | sort -uV |
	awk -v floor="$floor" '{ split($0, v, "."); split(floor, f, ".");
		if (v[1] > f[1] || (v[1] == f[1] && v[2] > f[2])) print "GLIBC_" $0 }')
if [ -n "$newer" ]; then
	echo "$lib needs glibc newer than $floor: $(echo $newer)" >&2
	readelf --dyn-syms --wide "$lib" | grep -E "$(echo $newer | tr ' ' '|')" >&2 || true
	status=1
fi
needed=$(readelf --dynamic "$lib" | grep NEEDED)
undefined=$(readelf --dyn-syms --wide "$lib" | awk '$7 == "UND" {print $8}')
for pair in 'pthread_:libpthread.so.0' 'dl[a-z]*@:libdl.so.2'; do
	if echo "$undefined" | grep -q "^${pair%%:*}" && ! echo "$needed" | grep -qF "[${pair#*:}]"; then
		echo "$lib binds ${pair%%:*}* functions without needing ${pair#*:} (glibc $floor has them there)" >&2
		status=1
	fi
done
exit $status
